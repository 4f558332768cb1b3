#!/usr/bin/env python3
"""bench/scriptcost: the masters' CPU per lock cycle (acquire + release) of
lockd's own scripts against two references, on one redis-server, driven
the way lockd drives a master: batches of N items per script call.

  micro.py PORT ACQUIRE_N.lua RELEASE_N.lua [N] [CYCLES] [ROUNDS]

Variants, run in turn ROUNDS times (the medians are printed):
  lockd      lockd's SCR_ACQUIRE_N / SCR_RELEASE_N, a plain session
  lockd-r    the same for a resumable session (owner check, record field)
  h1         one hash per lock (h1_*.lua: doc/cluster.md's layout, exclusive
             locks only), plain
  h1-r       the same, resumable
  h2         one hash per lock with the session's entry in it (h2_*.lua:
             the owner check per key, the session's index written at its
             first grant of a key only), plain
  h2-r       the same, resumable
  s1         today's string keys with a resumable hold kept in the lock's
             value (s1_*.lua: the owner read in the grant's MGET, no record
             write per grant or release), plain
  s1-r       the same, resumable (s1 cannot keep PROTOCOL 1.2's LOST after
             RESUME for a hold that lapsed: doc/cluster.md)
  floor      node-redlock's own commands (SET NX PX; GET and DEL), batched
  single     the floor with one key per script call, as node-redlock sends
             them (one request per acquire and per release)
For each: us of the master's CPU per cycle (INFO cpu, user + sys), us in
scripts per cycle (commandstats of EVALSHA) and Redis commands per cycle
run inside them. ONLY=lockd,lockd-r (say) runs just those."""
import os, re, socket, statistics, sys

here = os.path.dirname(os.path.abspath(__file__))
port = int(sys.argv[1])
lockd_acq, lockd_rel = open(sys.argv[2], 'rb').read(), open(sys.argv[3], 'rb').read()
N = int(sys.argv[4]) if len(sys.argv) > 4 else 13
CYCLES = int(sys.argv[5]) if len(sys.argv) > 5 else 8000
ROUNDS = int(sys.argv[6]) if len(sys.argv) > 6 else 5

sock = socket.create_connection(('127.0.0.1', port))
rf = sock.makefile('rb')


def enc(args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


def read():
    line = rf.readline()
    t = line[:1]
    if t in b'+:':
        return line[1:-2]
    if t == b'-':
        raise RuntimeError(line.decode().strip())
    if t == b'$':
        n = int(line[1:-2])
        return None if n < 0 else rf.read(n + 2)[:-2]
    if t == b'*':
        return [read() for _ in range(max(int(line[1:-2]), 0))]
    raise RuntimeError('bad reply %r' % line)


def cmd(*a):
    sock.sendall(enc(a))
    return read()


def load(body):
    return cmd('SCRIPT', 'LOAD', body)


def own(name):
    return open(os.path.join(here, name), 'rb').read()


INST = 'aaaaaaaaaaaaaaaa'
P = 'lockd:'
GEN = P + ' gen ' + INST
SESS = P + ' session s1'
EPOCH = '00000000000000000001'
cmd('SET', GEN, EPOCH)
cmd('HSET', SESS, 'o', INST)
OWNER = P + ' session s1 owner'
cmd('SET', OWNER, INST)
sha = {'lockd': (load(lockd_acq), load(lockd_rel)),
       'h1': (load(own('h1_acquire.lua')), load(own('h1_release.lua'))),
       'h2': (load(own('h2_acquire.lua')), load(own('h2_release.lua'))),
       's1': (load(own('s1_acquire.lua')), load(own('s1_release.lua'))),
       'floor': (load(own('floor_acquire.lua')), load(own('floor_release.lua')))}


def tok(r, i):
    return INST + '%011x' % (r * 4096 + i % 4096) + '00000'


def lockd_batch(r, n, res):
    # enum acq_arg, enum rel_arg: the shared keys and arguments once, then
    # each item's own (as master.c joins a loop turn's calls)
    ka, aa = [GEN], [INST, '604800000', EPOCH]
    kr, ar = [], [INST, P + ' released', '2000', str(len(P))]
    for i in range(n):
        k = P + 'key-%d' % i
        rk = SESS if res else ''
        ka += [k, rk]
        aa += [tok(r, i), '3000', '', '0', 'x', '', ('x0 key-%d' % i) if res else '', '0']
        kr += [k, rk]
        ar += [tok(r, i), '0', 'x', '', ('x0 key-%d' % i) if res else '']
    return ka, aa, kr, ar


def h1_batch(r, n, res):
    ka, aa, kr, ar = [], [INST, '604800000', EPOCH], [], [INST, P + ' released']
    for i in range(n):
        ka.append(P + 'hkey-%d' % i)
        aa += [tok(r, i), '3000', '', '0', 'h:s1' if res else '', SESS if res else '', '0']
        kr.append(P + 'hkey-%d' % i)
        ar += [tok(r, i), 'hkey-%d' % i, 'h:s1' if res else '']
    return ka, aa, kr, ar


def h2_batch(r, n, res):
    ka, aa, kr, ar = [], [INST, '604800000', EPOCH], [], [INST, P + ' released']
    for i in range(n):
        ka += [P + 'h2key-%d' % i, SESS if res else '']
        aa += [tok(r, i), '3000', '', '0', 's1' if res else '', '1', '1' if r == 0 else '0', '0']
        kr.append(P + 'h2key-%d' % i)
        ar += [tok(r, i), 'h2key-%d' % i]
    return ka, aa, kr, ar


def s1_batch(r, n, res):
    ka, aa, kr, ar = [GEN], [INST, '604800000', EPOCH], [], [INST, P + ' released']
    for i in range(n):
        ka += [P + 's1key-%d' % i, OWNER if res else '']
        aa += [tok(r, i), '3000', '', '0', 's1' if res else '', '1' if r == 0 else '0', '0']
        kr.append(P + 's1key-%d' % i)
        ar += [tok(r, i), 's1key-%d' % i]
    return ka, aa, kr, ar


def floor_batch(r, n, res):
    ks = [P + 'fkey-%d' % i for i in range(n)]
    ts = [tok(r, i) for i in range(n)]
    return ks, ts, ks, ts


VARIANTS = [('lockd', 'lockd', lockd_batch, N, False), ('lockd-r', 'lockd', lockd_batch, N, True),
            ('h1', 'h1', h1_batch, N, False), ('h1-r', 'h1', h1_batch, N, True),
            ('h2', 'h2', h2_batch, N, False), ('h2-r', 'h2', h2_batch, N, True),
            ('s1', 's1', s1_batch, N, False), ('s1-r', 's1', s1_batch, N, True),
            ('floor', 'floor', floor_batch, N, False), ('single', 'floor', floor_batch, 1, False)]


def cpu_us():
    info = cmd('INFO', 'cpu').decode()
    return 1e6 * sum(float(re.search(r'%s:([\d.]+)' % f, info).group(1))
                     for f in ('used_cpu_user', 'used_cpu_sys'))


def stats():
    out = {}
    for m in re.finditer(r'cmdstat_(\w+):calls=(\d+),usec=(\d+)', cmd('INFO', 'commandstats').decode()):
        out[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return out


def run(script, batch, n, res):
    acq, rel = sha[script]
    cycles = CYCLES - CYCLES % n
    cmd('CONFIG', 'RESETSTAT')
    c0 = cpu_us()
    for r in range(cycles // n):
        ka, aa, kr, ar = batch(r, n, res)
        rep = cmd('EVALSHA', acq, len(ka), *ka, *aa)
        if not all(x != b'0' and not (isinstance(x, list) and x[0] == 0) for x in rep):
            raise RuntimeError('%s: not granted: %r' % (script, rep[:2]))
        rep = cmd('EVALSHA', rel, len(kr), *kr, *ar)
        if not all(x == 1 or x == b'1' for x in rep):
            raise RuntimeError('%s: not released: %r' % (script, rep[:2]))
    c1 = cpu_us()
    st = stats()
    inner = sum(c for name, (c, _) in st.items() if name not in ('evalsha', 'info', 'config'))
    return ((c1 - c0) / cycles, st.get('evalsha', (0, 0))[1] / cycles, inner / cycles)


if os.environ.get('ONLY'):  # e.g. ONLY=lockd,lockd-r
    VARIANTS = [v for v in VARIANTS if v[0] in os.environ['ONLY'].split(',')]
res = {v[0]: [] for v in VARIANTS}
for _ in range(ROUNDS):
    for name, script, batch, n, r in VARIANTS:
        res[name].append(run(script, batch, n, r))
print('%-8s %14s %14s %14s   (N=%d items per call, %d cycles, median of %d rounds)'
      % ('variant', 'cpu us/cycle', 'script us', 'commands', N, CYCLES, ROUNDS))
for name, *_ in VARIANTS:
    med = [statistics.median(x[i] for x in res[name]) for i in range(3)]
    print('%-8s %14.2f %14.2f %14.2f' % (name, *med))
