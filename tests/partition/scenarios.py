"""The partition scenarios (issue 25). Run by run.sh as root:

  python3 scenarios.py [N ...]

Each scenario starts three redis masters and two lockd (A on l1, B on l2)
in network namespaces of their own (9 and 10: m2 is a primary with a
replica r1 under three Sentinels in sn, and lockd's second entry is a
sentinel entry), runs clients from the namespace cl, injects its faults,
checks the history and prints its size and the checker's verdict. Exit
status 1 when any scenario failed.

Environment: LOCKD_BIN (default ../../lockd), PT_PREFIX (namespace prefix),
PT_OUT (where histories and logs go; kept when a scenario fails),
PT_SEED (scenario 7's schedule), PT_SECS (scenario 7's length, 60),
PT_DEBUG (lockd at log_level debug).
"""

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from history import History, check, excerpt, fmt, holds  # noqa: E402
from pt import (EXTRA_IP, LOCKD_IP, MASTER_IP, NOFENCE, REDIS_PORT, REPLICA_IP, Cluster, Conn,  # noqa: E402
                Net,
                Reactor, Store, StoreConn, lockd_stats, redis_cmd, sentinel_primary)
import client as clientmod  # noqa: E402

HEADROOM_MS = 1500  # on top of every contract bound: a loaded 2-core machine


class Skip(Exception):
    pass


class Ctx:
    """One scenario's cluster and history. wait_replicas: m2 is a primary
    that Sentinels manage, with a replica r1 (the master entries m1,
    sentinel, m3), and lockd runs with redis.wait_replicas set to it."""

    def __init__(self, net, tmp, lockd_bin, lease_ms=1500, timeout_ms=100, wait_replicas=None,
                 cluster=False):
        self.net, self.tmp = net, tmp
        self.lease_ms, self.tmo = lease_ms, timeout_ms
        self.wait_replicas = wait_replicas
        self.cluster = cluster
        self.hist = History()
        self.reactor = Reactor(self.hist)
        self.store = Store(self.hist)
        self.cl = Cluster(net, tmp, lockd_bin, self.hist)
        self.fails = []
        self.notes = []
        self.conns = []
        self.subs = []
        try:
            masters, extra = None, ""
            if cluster:  # 11: one Redis Cluster, lockd's only entry; 12: and m4, m5
                self.cl.start_redis_cluster()
                masters = [self.cl.cluster_entry()]
                if cluster == "mixed":
                    self.cl.start_extra_masters()
                    masters += ['"%s:%d"' % (ip, REDIS_PORT) for ip in EXTRA_IP]
                extra = "  wait_replicas: %d\n" % wait_replicas
            else:
                self.cl.start_masters(replica=wait_replicas is not None)
            if wait_replicas is not None and not cluster:
                self.cl.start_sentinels()
                masters = ['"%s:%d"' % (MASTER_IP[0], REDIS_PORT), self.cl.sentinel_entry(),
                           '"%s:%d"' % (MASTER_IP[2], REDIS_PORT)]
                extra = "  wait_replicas: %d\n" % wait_replicas
            self.A = self.cl.start_lockd(0, lease_ms, timeout_ms, masters=masters, redis_extra=extra)
            self.B = self.cl.start_lockd(1, lease_ms, timeout_ms, masters=masters, redis_extra=extra)
        except BaseException:
            self.reactor.stop()
            self.store.close()
            self.cl.stop()
            raise
        self.t0 = time.monotonic()
        self.bound_ms = timeout_ms + 500 + HEADROOM_MS

    def conn(self, name, addr):
        c = Conn(name, self.hist, self.reactor, addr, bound_ms=self.bound_ms)
        self.conns.append(c)
        return c

    def expect(self, cond, msg):
        if not cond:
            self.fails.append(msg)
        return cond

    def note(self, msg):
        self.notes.append(msg)

    def now(self):
        return time.monotonic() - self.t0

    def nemesis(self, f, target, text=""):
        self.hist.nemesis(f, target, text)

    def heal(self):
        self.net.heal()
        self.nemesis("heal", "all")

    def close(self):
        for c in self.conns:
            self.fails += ["slow reply: " + s for s in c.slow]
            c.close()
        for p in self.subs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait()
        self.net.heal()
        self.reactor.stop()
        self.store.close()
        self.cl.stop()

    def subscriber_port(self, lockd, master):
        """The local port of lockd's pub/sub connection to master (from the
        master's CLIENT LIST)."""
        ip = LOCKD_IP[lockd]
        for line in redis_cmd(MASTER_IP[master], "CLIENT", "LIST").splitlines():
            m = re.search(r"addr=%s:(\d+) " % re.escape(ip), line)
            if m and (" sub=1" in line or "cmd=subscribe" in line):
                return int(m.group(1))
        return None


def bg(fn, *a, **kw):
    """fn in a thread; .result holds its value (or the exception)."""
    box = {}

    def run():
        try:
            box["v"] = fn(*a, **kw)
        except Exception as e:  # noqa: BLE001 (reported by the scenario)
            box["v"] = e
    t = threading.Thread(target=run, daemon=True)
    t.box = box
    t.start()
    return t


def result(t, secs):
    t.join(secs)
    return t.box.get("v", "still running")


# ------------------------------------------------------------------ 1

def s1_minority(c):
    """lockd A loses two of three masters while B keeps all."""
    a1, a2, a3 = c.conn("a1", c.A), c.conn("a2", c.A), c.conn("a3", c.A)
    b1, b2 = c.conn("b1", c.B), c.conn("b2", c.B)
    f1, _ = a1.lock("k1")
    f2, _ = a2.lock("k2", ttl=2500)
    if not (c.expect(f1, "a1 LOCK k1 not granted") and c.expect(f2, "a2 LOCK k2 not granted")):
        return
    sa1, sa2, sb = StoreConn("a1", c.hist), StoreConn("a2", c.hist), StoreConn("b", c.hist)
    sa1.write("k1", f1)
    sa2.write("k2", f2)
    w1 = bg(b1.lock, "k1", wait=8000)
    w2 = bg(b2.lock, "k2", wait=8000)
    time.sleep(0.3)
    c.net.cut_peer("l1", "m2")
    c.net.cut_peer("l1", "m3")
    t_cut = time.monotonic()  # A's last renewal on a majority was before this
    c.nemesis("cut", "l1", "l1 x m2, m3 (silent, both ways)")
    for i in range(4):
        fence, text = a3.lock("q%d" % i, try_=True)
        c.expect(fence is None and text.startswith("ERR QUORUM"),
                 "A answered TRYLOCK q%d with %r, not ERR QUORUM" % (i, text))
    fence, text = a3.lock("q9", wait=1000)
    c.expect(fence is None and text.startswith("ERR QUORUM"), "A answered LOCK q9 WAIT 1000 with %r" % text)
    got = a1.wait_lost("k1", f1, c.lease_ms / 1000.0 + 2)
    c.expect(got, "a1 got no LOST k1 within lease + 2 s of the cut")
    lost = [r for r in c.hist.recs if r["type"] == "event" and r["proc"] == "a1" and r["f"] == "lost"]
    if lost:
        late = (lost[0]["t"] - t_cut) * 1000 - c.lease_ms
        c.note("a1's LOST came %.0f ms after the cut" % ((lost[0]["t"] - t_cut) * 1000))
        c.expect(late <= 20, "a1's LOST came %.0f ms after the lease (from its last renewal before the "
                 "cut) could have run out" % late)
    a2.wait_lost("k2", f2, 3)
    for name, w, key, prev, sconn in (("b1", w1, "k1", f1, sb), ("b2", w2, "k2", f2, sb)):
        v = result(w, 10)
        if c.expect(isinstance(v, tuple) and v[0], "%s LOCK %s: %r" % (name, key, v)):
            c.expect(v[0] > prev, "%s got fence %s, not above %s" % (name, v[0], prev))
            sconn.write(key, v[0])
    grant = [r for r in c.hist.recs if r["type"] == "ok" and r["proc"] == "b1" and r.get("fence")]
    if grant:
        took = (grant[0]["t"] - t_cut) * 1000
        c.note("B granted k1 %.0f ms after the cut" % took)
        c.expect(took <= c.lease_ms + 1000 + HEADROOM_MS, "B granted k1 only %.0f ms after the cut" % took)
    # A's late write with its old fence is refused
    c.expect(sa1.write("k1", f1) is False, "the store took a1's write with fence %s after b1's" % f1)
    c.heal()
    ok = False
    end = time.monotonic() + 5
    while time.monotonic() < end and not ok:
        fence, text = a3.lock("after", try_=True)
        ok = fence is not None
        if not ok:
            time.sleep(0.1)
    c.expect(ok, "A grants nothing 5 s after the heal")


# ------------------------------------------------------------------ 2

def handoff_worker(c, name, addr, keys, deadline, oks, stop=None):
    conn = c.conn(name, addr)
    st = StoreConn(name, c.hist)
    i = 0
    while time.monotonic() < deadline and not conn.dead and not (stop and stop.is_set()):
        key = keys[i % len(keys)]
        i += 1
        fence, text = conn.lock(key, wait=3000)
        if fence is None:
            time.sleep(0.02)
            continue
        oks.append(time.monotonic())
        st.write(key, fence)
        time.sleep(0.01)
        if (key, fence) not in conn.lost:
            st.write(key, fence)
        conn.unlock(key)
    st.close()


def count_in(ts, a, b):
    return sum(1 for t in ts if a <= t < b)


def s2_master_cut(c):
    """A master cut from every lockd, then healed, during a stream of handoffs."""
    oks = []
    t = time.monotonic()
    deadline = t + 10
    ws = [bg(handoff_worker, c, n, addr, ["h1", "h2"], deadline, oks)
          for n, addr in (("a1", c.A), ("a2", c.A), ("b1", c.B), ("b2", c.B))]
    time.sleep(1.5)
    p1 = time.monotonic()
    c.net.link("m2", False)
    c.nemesis("cut", "m2", "m2's link down (silent for everyone)")
    time.sleep(3)
    p2 = time.monotonic()
    c.heal()
    time.sleep(1.5)
    p3 = time.monotonic()
    for who in ("l1", "l2"):
        c.net.cut_peer("m3", who, how="reject")
    c.nemesis("cut", "m3", "m3 rejects both lockd (TCP reset)")
    time.sleep(2.5)
    p4 = time.monotonic()
    c.heal()
    for w in ws:
        v = result(w, 15)
        c.expect(v is None, "handoff worker: %r" % (v,))
    end = time.monotonic()
    for what, a, b in (("before", t, p1), ("m2 down", p1, p2), ("healed", p2, p3), ("m3 rejecting", p3, p4),
                       ("healed again", p4, end)):
        n = count_in(oks, a, b)
        c.note("%d grants %s" % (n, what))
        c.expect(n >= 3, "only %d grants %s (%.1f s)" % (n, what, b - a))


# ------------------------------------------------------------------ 3

def s3_pause(c):
    """A client paused with SIGSTOP past its TTL while holding, then resumed."""
    out = os.path.join(c.tmp, "victim.jsonl")
    spec = dict(kind="victim", name="v", addr=list(c.A), key="pk", ttl=1000, work_s=0.3)
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "client.py"), json.dumps(spec), out],
                         stdout=subprocess.PIPE, text=True)
    c.subs.append(p)
    line = p.stdout.readline().split()
    if not c.expect(line[:1] == ["HOLDING"], "victim: %r" % line):
        return
    os.kill(p.pid, signal.SIGSTOP)
    c.nemesis("pause", "v", "SIGSTOP pid %d" % p.pid)
    f1 = int(line[2])
    b = c.conn("b", c.B)
    sb = StoreConn("b", c.hist)
    f2, text = b.lock("pk", wait=5000)
    if c.expect(f2, "b LOCK pk: %s" % text):
        c.expect(f2 > f1, "b's fence %s not above the victim's %s" % (f2, f1))
        c.expect(sb.write("pk", f2), "the store refused b's write with fence %s" % f2)
    time.sleep(0.2)
    os.kill(p.pid, signal.SIGCONT)
    c.nemesis("resume", "v", "SIGCONT pid %d" % p.pid)
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        c.expect(False, "victim did not finish")
        return
    with open(out) as f:
        recs = [json.loads(x) for x in f]
    c.hist.extend(recs, 10 ** 6)
    writes = [r for r in recs if r["type"] in ("ok", "fail") and r.get("text") in ("OK",) or
              (r["type"] == "fail" and str(r.get("text", "")).startswith("REFUSED"))]
    c.expect(len(writes) == 2 and writes[0]["type"] == "ok" and writes[1]["type"] == "fail",
             "victim's writes: %s" % [fmt(r, c.t0) for r in writes])
    if len(writes) == 2:
        c.note("victim's late write with fence %d: %s" % (f1, writes[1].get("text")))
    b.unlock("pk")


# ------------------------------------------------------------------ 8

def s8_pause_delay(c):
    """Scenario 3 with a lock-delay (1.4) and a resource that checks no
    fence: the victim, paused (SIGSTOP) past its TTL, wakes within the
    delay and writes late; b's LOCK, waiting meanwhile on the other lockd,
    is granted only after TTL + delay, so the late write lands before b's
    grant, never after it."""
    ttl, delay = 1000, 4000
    key = NOFENCE + "pk"
    out = os.path.join(c.tmp, "victim.jsonl")
    spec = dict(kind="victim", name="v", addr=list(c.A), key=key, ttl=ttl, work_s=0.3, delay=delay)
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "client.py"), json.dumps(spec), out],
                         stdout=subprocess.PIPE, text=True)
    c.subs.append(p)
    line = p.stdout.readline().split()
    if not c.expect(line[:1] == ["HOLDING"], "victim: %r" % line):
        return
    os.kill(p.pid, signal.SIGSTOP)
    t_stop = time.monotonic()
    c.nemesis("pause", "v", "SIGSTOP pid %d" % p.pid)
    f1 = int(line[2])
    b = c.conn("b", c.B)
    sb = StoreConn("b", c.hist)
    waiter = bg(b.lock, key, wait=ttl + delay + 1000 + HEADROOM_MS)
    # past the TTL, well within the delay: the victim wakes and writes
    time.sleep(max(0.0, t_stop + (ttl + 1000) / 1000.0 - time.monotonic()))
    os.kill(p.pid, signal.SIGCONT)
    c.nemesis("resume", "v", "SIGCONT pid %d" % p.pid)
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        c.expect(False, "victim did not finish")
        return
    r = result(waiter, (ttl + delay + 1000 + HEADROOM_MS) / 1000.0 + 5)
    if not c.expect(isinstance(r, tuple) and r[0], "b LOCK %s: %r" % (key, r)):
        return
    f2 = r[0]
    t_b = max(x["t"] for x in c.hist.recs if x["proc"] == "b" and x["type"] == "ok" and x.get("fence") == f2)
    c.expect(f2 > f1, "b's fence %s not above the victim's %s" % (f2, f1))
    sb.write(key, f2)
    with open(out) as f:
        recs = [json.loads(x) for x in f]
    c.hist.extend(recs, 10 ** 6)
    t_grant = max(x["t"] for x in recs if x["type"] == "ok" and x.get("fence") == f1)
    # its lease + delay on the masters began after its LOCK was sent
    t_asked = min(x["t"] for x in recs if x["type"] == "invoke" and x.get("f") == "lock")
    writes = [x for x in recs if x["type"] in ("ok", "fail", "info") and x.get("text") == "OK"]
    if not c.expect(len(writes) == 2, "victim's writes: %s" % [fmt(x, c.t0) for x in writes]):
        return
    late = writes[1]["t"]
    c.expect(late < t_b, "the victim's late write (%.3f) landed after b's grant (%.3f)" % (
        late - c.t0, t_b - c.t0))
    c.expect(t_b - t_asked >= (ttl + delay) / 1000.0,
             "b granted %.0f ms after the victim's LOCK: before TTL + delay (%d ms)" % (
                 (t_b - t_asked) * 1000, ttl + delay))
    c.expect(t_b - t_grant <= (ttl + delay + 1000 + HEADROOM_MS) / 1000.0,
             "b granted %.0f ms after the victim's grant: the bound is TTL + delay + 1 s" % (
                 (t_b - t_grant) * 1000))
    c.note("victim's late write at +%.0f ms, b granted at +%.0f ms after the victim's grant (TTL %d + "
           "delay %d)" % ((late - t_grant) * 1000, (t_b - t_grant) * 1000, ttl, delay))
    b.unlock(key)


# ------------------------------------------------------------------ 4

def last_reply(c, proc):
    """When proc's last reply arrived."""
    return max(r["t"] for r in c.hist.recs if r["proc"] == proc and r["type"] in ("ok", "fail", "info"))


def last_ok(c, proc, fence):
    return max(r["t"] for r in c.hist.recs if r["proc"] == proc and r["type"] == "ok" and r.get("fence") == fence)


def s4_pubsub(c):
    """The pub/sub connections of masters cut while requests pass: waiters
    on the other lockd are still granted."""
    stop = threading.Event()

    def load(name, addr):
        conn = c.conn(name, addr)
        i = 0
        while not stop.is_set() and not conn.dead:
            fence, _ = conn.lock("load%d" % (i % 3), try_=True)
            if fence:
                conn.unlock("load%d" % (i % 3))
            i += 1
            time.sleep(0.02)
    loads = [bg(load, "la", c.A), bg(load, "lb", c.B)]
    h, w = c.conn("h", c.A), c.conn("w", c.B)

    def handoff(key):
        fence, text = h.lock(key)
        if not c.expect(fence, "h LOCK %s: %s" % (key, text)):
            return None
        wt = bg(w.lock, key, wait=15000)
        time.sleep(0.3)
        h.unlock(key)
        t_u = last_reply(c, "h")
        v = result(wt, 16)
        if not c.expect(isinstance(v, tuple) and v[0], "w LOCK %s: %r" % (key, v)):
            return None
        t_w = last_ok(c, "w", v[0])
        w.unlock(key)
        return (t_w - t_u) * 1000

    ports = [c.subscriber_port(1, i) for i in range(3)]
    if not c.expect(all(ports), "B's subscriber ports: %s" % ports):
        stop.set()
        return
    sl = 500 + HEADROOM_MS
    c.net.cut_conn("l2", "m1", REDIS_PORT, ports[0])
    c.nemesis("cut", "l2", "B's pub/sub connection to m1 (port %d) dropped" % ports[0])
    for i in range(3):
        d = handoff("ps%d" % i)
        if d is not None:
            c.note("handoff A to B, m1's notices lost: %.0f ms" % d)
            c.expect(d <= sl, "handoff took %.0f ms with m1's pub/sub cut (service level 500 ms)" % d)
    for i in (1, 2):
        c.net.cut_conn("l2", "m%d" % (i + 1), REDIS_PORT, ports[i])
    c.nemesis("cut", "l2", "B's pub/sub connections to every master dropped")
    for i in range(2):
        d = handoff("pa%d" % i)
        if d is not None:
            c.note("handoff A to B, every notice lost: %.0f ms (lease %d ms)" % (d, c.lease_ms))
            c.expect(d <= c.lease_ms + 1000 + HEADROOM_MS,
                     "handoff took %.0f ms with every pub/sub cut (lease %d + 1 s)" % (d, c.lease_ms))
    c.heal()
    # TCP backs off on the connections that were cut: give them time to
    # end (the masters see them again), then check notices flow again
    time.sleep(1.5)
    for i in range(2):
        d = handoff("ph%d" % i)
        if d is not None:
            c.note("handoff after the heal: %.0f ms" % d)
            c.expect(d <= c.lease_ms + 1000 + HEADROOM_MS, "handoff took %.0f ms after the heal" % d)
    # pub/sub restarted by the masters: lockd must resubscribe
    fence, _ = h.lock("pk0")
    wt = bg(w.lock, "pk0", wait=15000)
    time.sleep(0.3)
    for ip in MASTER_IP:
        redis_cmd(ip, "CLIENT", "KILL", "TYPE", "pubsub")
    c.nemesis("cut", "masters", "CLIENT KILL TYPE pubsub on every master")
    text = h.unlock("pk0")
    t_u = last_reply(c, "h")
    v = result(wt, 16)
    if c.expect(isinstance(v, tuple) and v[0], "w LOCK pk0: %r" % (v,)):
        d = (last_ok(c, "w", v[0]) - t_u) * 1000
        c.note("handoff across CLIENT KILL TYPE pubsub: %.0f ms (UNLOCK answered %s)" % (d, text))
        c.expect(d <= c.lease_ms + 1000 + HEADROOM_MS, "handoff across CLIENT KILL took %.0f ms" % d)
        # The masters answer all along; only their pub/sub connections were
        # restarted: the UNLOCK is confirmed and the waiter on the other
        # lockd is granted within the service level (a lost subscriber once
        # cost lockd the whole master: test_faults.c pubsub_restarted).
        c.expect(text == "OK 0", "UNLOCK after CLIENT KILL TYPE pubsub answered %s" % text)
        c.expect(d <= sl, "handoff across CLIENT KILL took %.0f ms (service level 500 ms)" % d)
        w.unlock("pk0")
    time.sleep(1.0)
    for i in range(2):
        d = handoff("pr%d" % i)
        if d is not None:
            c.note("handoff after resubscribing: %.0f ms" % d)
            c.expect(d <= sl, "handoff took %.0f ms after pub/sub came back (service level 500 ms)" % d)
    stop.set()
    for t in loads:
        c.expect(result(t, 10) is None, "load: %r" % t.box.get("v"))


# ------------------------------------------------------------------ 5

def s5_one_way(c):
    """One direction of a lockd-master link dropped silently."""
    stats = dict(ok=0, fail=0, slow=[], errors=[])
    deadline = time.monotonic() + 10
    keys = [("x1", "x", 1), ("x2", "x", 1)]
    ws = [bg(clientmod.random_worker, n, c.hist, c.reactor, addr, keys, 50 + i, deadline, c.bound_ms, stats)
          for i, (n, addr) in enumerate((("a1", c.A), ("a2", c.A), ("b1", c.B), ("b2", c.B)))]
    phases = []
    time.sleep(1.0)
    for what, cuts in (("A gets no replies from m1", [("l1", "m1", "in")]),
                       ("B's requests do not reach m3", [("l2", "m3", "out")]),
                       ("A gets no replies from m2, B's requests do not reach m2",
                        [("l1", "m2", "in"), ("l2", "m2", "out")])):
        a = time.monotonic()
        for role, peer, d in cuts:
            c.net.cut_peer(role, peer, direction=d)
        c.nemesis("cut", "+".join(x[0] for x in cuts), what)
        time.sleep(2.5)
        c.heal()
        phases.append((what, a, time.monotonic()))
        time.sleep(0.3)
    for w in ws:
        c.expect(result(w, 15) is None, "worker: %r" % w.box.get("v"))
    oks = [r["t"] for r in c.hist.recs if r["type"] == "ok" and r.get("fence")]
    for what, a, b in phases:
        n = count_in(oks, a, b)
        c.note("%d grants while %s" % (n, what))
        c.expect(n >= 3, "only %d grants while %s" % (n, what))
    c.fails += ["slow reply: " + s for s in stats["slow"]] + stats["errors"]


# ------------------------------------------------------------------ 6

def s6_sessions(c):
    """Sessions (1.2) that outlive a connection: lockd A cut from its
    clients but not from the masters while its sessions resume on B."""
    c1 = c.conn("c1", c.A)
    r = c1.plain("SESSION GRACE 10000", "session")
    if r.startswith("ERR PROTOCOL"):
        raise Skip("lockd does not speak 1.2 yet")
    w = r.split()
    if not c.expect(len(w) == 4 and w[0] == "SESSION", "SESSION: %r" % r):
        return
    sid, secret = w[1], w[2]
    f1, text = c1.lock("s6")
    if not c.expect(f1, "c1 LOCK s6: %s" % text):
        return
    # The store takes one write per fence (a larger one each time): the
    # holder writes once, after its session moved, with the fence it had.
    st = StoreConn("c1", c.hist)
    c.net.cut_peer("l1", "cl")
    c.nemesis("cut", "l1", "A cut from its clients (masters still reachable)")
    # the session moves to B: the same logical client, a new connection
    c.conns.remove(c1)
    c1.reactor.remove(c1)
    c1b = c.conn("c1", c.B)
    r = c1b.plain("RESUME %s %s" % (sid, secret), "resume")
    c.expect(r == "OK 1", "RESUME on B: %r" % r)
    held = c1b.held()
    c.expect(held is not None and [(k, f) for k, f, _ in held] == [("s6", f1)], "HELD after RESUME: %r" % held)
    other = c.conn("c2", c.B)
    f2, text = other.lock("s6", wait=c.lease_ms)
    c.expect(f2 is None, "c2 got s6 (%s) while the resumed session holds it" % text)
    c.expect(st.write("s6", f1), "the resumed holder's write was refused")
    c.heal()
    time.sleep(c.lease_ms / 1000.0)  # A learns of the move and drops the session
    f2, text = other.lock("s6", wait=500)
    c.expect(f2 is None, "c2 got s6 after A saw its clients again: %s" % text)
    c.expect(c1b.unlock("s6") == "OK 0", "UNLOCK s6 on B")
    f2, text = other.lock("s6", wait=3000)
    c.expect(f2 and f2 > f1, "c2 LOCK s6 after the release: %s" % text)
    try:
        c1.sock.close()
    except OSError:
        pass


# ------------------------------------------------------------------ 7

def s7_random(c):
    """A random schedule of the faults above for 60 s, 8 clients on 2 lockd
    over exclusive, shared and permit locks."""
    seed = int(os.environ.get("PT_SEED", str(int(time.time()))))
    secs = float(os.environ.get("PT_SECS", "60"))
    rng = random.Random(seed)
    c.note("seed %d (PT_SEED=%d gives the same faults and workloads)" % (seed, seed))
    keys = [("x1", "x", 1), ("x2", "x", 1), ("rw", "s", 1), ("sem", "p", 2)]
    stats = dict(ok=0, fail=0, slow=[], errors=[])
    deadline = time.monotonic() + secs
    ws = [bg(clientmod.random_worker, "c%d" % i, c.hist, c.reactor, c.A if i < 3 else c.B, keys,
             seed * 10 + i, deadline, c.bound_ms, stats) for i in range(6)]
    procs = []
    for i, addr in ((6, c.A), (7, c.B)):
        out = os.path.join(c.tmp, "c%d.jsonl" % i)
        spec = dict(kind="random", name="c%d" % i, addr=list(addr), keys=keys, seed=seed * 10 + i,
                    secs=secs, bound_ms=c.bound_ms)
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "client.py"), json.dumps(spec), out])
        c.subs.append(p)
        procs.append(("c%d" % i, p, out))
    masters = ["m1", "m2", "m3"]
    faults = 0
    while time.monotonic() < deadline - 3:
        time.sleep(rng.uniform(0.5, 2.0))
        kind = rng.choice(["master-down", "lockd-minority", "reject-one", "pubsub", "one-way-in",
                           "one-way-out", "pubsub-kill", "pause", "isolated-master"])
        lk = rng.choice(["l1", "l2"])
        m = rng.choice(masters)
        paused = None
        if kind == "master-down":
            c.net.link(m, False)
            text = "%s's link down" % m
        elif kind == "lockd-minority":
            two = rng.sample(masters, 2)
            for x in two:
                c.net.cut_peer(lk, x)
            text = "%s x %s (silent)" % (lk, ",".join(two))
        elif kind == "reject-one":
            c.net.cut_peer(lk, m, how="reject")
            text = "%s rejects %s" % (lk, m)
        elif kind == "pubsub":
            j = int(lk[1]) - 1
            for i in range(3):
                port = c.subscriber_port(j, i)
                if port:
                    c.net.cut_conn(lk, "m%d" % (i + 1), REDIS_PORT, port)
            text = "%s's pub/sub connections dropped" % lk
        elif kind == "one-way-in":
            c.net.cut_peer(lk, m, direction="in")
            text = "%s gets nothing from %s" % (lk, m)
        elif kind == "one-way-out":
            c.net.cut_peer(lk, m, direction="out")
            text = "%s sends nothing to %s" % (lk, m)
        elif kind == "pubsub-kill":
            redis_cmd(c.net.ip[m], "CLIENT", "KILL", "TYPE", "pubsub")
            text = "CLIENT KILL TYPE pubsub on %s" % m
        elif kind == "isolated-master":
            for x in ("l1", "l2"):
                c.net.cut_peer(m, x, how=rng.choice(["drop", "reject"]))
            text = "%s cut from both lockd" % m
        else:
            name, p, _ = rng.choice(procs)
            if p.poll() is None:
                os.kill(p.pid, signal.SIGSTOP)
                paused = (name, p)
            text = "SIGSTOP %s" % name
        faults += 1
        c.nemesis("cut" if kind != "pause" else "pause", paused[0] if paused else kind, text)
        time.sleep(rng.uniform(0.5, 3.0))
        if paused:
            os.kill(paused[1].pid, signal.SIGCONT)
            c.nemesis("resume", paused[0], "SIGCONT")
        c.heal()
    for w in ws:
        c.expect(result(w, 20) is None, "worker: %r" % w.box.get("v"))
    for i, (name, p, out) in enumerate(procs):
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            c.expect(False, "%s did not finish" % name)
            continue
        c.expect(p.returncode == 0, "%s exited %s" % (name, p.returncode))
        with open(out) as f:
            c.hist.extend([json.loads(x) for x in f], (i + 1) * 10 ** 6)
        with open(out + ".stats") as f:
            st = json.load(f)
        stats["ok"] += st["ok"]
        stats["fail"] += st["fail"]
        stats["errors"] += st["errors"]  # slow replies of a paused client are its own pause
    c.note("%d faults, %d grants, %d refusals" % (faults, stats["ok"], stats["fail"]))
    kinds = {}
    for h in holds(c.hist.recs):
        kinds[h["mode"]] = kinds.get(h["mode"], 0) + 1
    c.note("holds: %d exclusive, %d shared, %d permits" % (kinds.get("x", 0), kinds.get("s", 0), kinds.get("p", 0)))
    c.expect(all(kinds.get(k) for k in "xsp"), "some kind of hold never happened: %s" % kinds)
    c.expect(stats["ok"] >= 100, "only %d grants in %.0f s" % (stats["ok"], secs))
    c.fails += ["slow reply: " + s for s in stats["slow"]] + stats["errors"]


# ------------------------------------------------------------------ 9, 10

SN_LONG = (("L1", 0, "la1"), ("L2", 0, "la2"), ("L3", 1, "lb3"))  # key, lockd (A 0, B 1), holder
SN_HANDOFF = ("h1", "h2")


def take_long_holds(c, longs):
    """Each (key, lockd 0/1, holder name) LOCKed: {key: (conn, fence,
    lockd)}, or None (a failure recorded)."""
    holders = {}
    for key, j, name in longs:
        h = c.conn(name, (c.A, c.B)[j])
        f, text = h.lock(key, wait=3000)
        if not c.expect(f, "%s LOCK %s: %s" % (name, key, text)):
            return None
        holders[key] = (h, f, j)
    return holders


def start_handoffs(c, keys, oks, stop):
    """Four clients (two per lockd) handing off keys until stop."""
    return [bg(handoff_worker, c, n, addr, list(keys), time.monotonic() + 120, oks, stop)
            for n, addr in (("a1", c.A), ("a2", c.A), ("b1", c.B), ("b2", c.B))]


def heal_and_stop(c, ws, stop):
    """Heal everything, let the handoffs go on 3 s, stop them; the time
    of the heal."""
    c.heal()
    t = time.monotonic()
    time.sleep(3.0)
    stop.set()
    for wt in ws:
        c.expect(result(wt, 15) is None, "handoff worker: %r" % (wt.box.get("v"),))
    return t


def probe_long_holds(c, holders):
    """Each long hold kept (the other lockd is refused it) or its holder
    told LOST (the checker: before anyone else had it); then released.
    The keys kept and the keys lost."""
    kept, lost = [], []
    for key, (h, f, j) in holders.items():
        probe = c.conn("p" + key, (c.B, c.A)[j])
        pf, text = probe.lock(key, try_=True)
        if (key, f) in h.lost:
            lost.append(key)
        elif c.expect(pf is None and text == "BUSY", "%s: TRYLOCK from the other lockd: %s, and its "
                      "holder was told no LOST" % (key, text)):
            kept.append(key)
        if pf:
            probe.unlock(key)
        if not h.dead and (key, f) not in h.lost:
            h.unlock(key)
    return kept, lost


def lock_values(ip, keys):
    """The value of each key's lock on one node (None: no live lock)."""
    return {k: redis_cmd(ip, "GET", "lockd:" + k, timeout=1.0) for k in keys}


def s9_sentinel(c):
    """The Sentinel entry's primary (m2) cut from its replica, then from
    lockd and the Sentinels, while its vote is needed (m3 is cut from both
    lockd); the Sentinels promote r1; then everything heals. Three long
    holds and four clients handing off two keys meanwhile. Run with
    redis.wait_replicas 1 (scenario 9, asserted) and 0 (scenario 10, a
    measurement: only the checker's verdict, each long hold kept or told
    LOST, and an uncontended LOCK after the heal are asserted; the figures
    are reported, doc/design.md compares them).

    Phases: all up; m3 out (every grant needs m1 and the entry, whose
    WAIT works); m2 cut from r1 too (WAIT answers 0: with wait_replicas 1
    the entry does not count, no majority; with 0 it counts writes r1
    lacks); m2 isolated as m3 comes back (the nodes are read then); r1
    promoted; heal."""
    w = c.wait_replicas
    P, R = MASTER_IP[1], REPLICA_IP
    keys = [k for k, _, _ in SN_LONG] + list(SN_HANDOFF)
    holders = take_long_holds(c, SN_LONG)
    if holders is None:
        return
    oks = []
    stop = threading.Event()
    ws = start_handoffs(c, SN_HANDOFF, oks, stop)
    t0 = time.monotonic()
    time.sleep(1.5)
    p1 = time.monotonic()
    for lk in ("l1", "l2"):
        c.net.cut_peer("m3", lk)
    c.nemesis("cut", "m3", "m3 x l1, l2 (silent): every grant needs m1 and the Sentinel entry")
    time.sleep(1.5)
    p2 = time.monotonic()
    c.net.cut_peer("m2", "r1")
    c.nemesis("cut", "m2", "m2 x r1 (silent): the replica falls behind")
    # longer than a lease: with wait_replicas 1 the holds lose their majority
    time.sleep(c.lease_ms / 1000.0 + 1.0)
    p3 = time.monotonic()
    for x in ("l1", "l2", "sn"):
        c.net.cut_peer("m2", x)
    c.nemesis("cut", "m2", "m2 x l1, l2, sn (silent): the primary isolated")
    t_snap = time.monotonic()
    snap = {ip: lock_values(ip, keys) for ip in (MASTER_IP[0], P, R, MASTER_IP[2])}
    c.net.nft("m3", "flush chain inet pt in; flush chain inet pt out")
    c.nemesis("heal", "m3", "m3 reachable again")
    want = "%s:%d" % (R, REDIS_PORT)
    t_prom = t_follow = None
    end = time.monotonic() + 15
    while time.monotonic() < end and t_prom is None:
        if sentinel_primary() == want:
            t_prom = time.monotonic()
        else:
            time.sleep(0.05)
    if not c.expect(t_prom, "the Sentinels did not promote r1 within 15 s of the cut"):
        stop.set()
        return
    c.nemesis("info", "sn", "the Sentinels name r1")
    end = time.monotonic() + 10
    while time.monotonic() < end and t_follow is None:
        try:
            st = [lockd_stats(a) for a in (c.A, c.B)]
        except (OSError, ConnectionError):
            st = []
        if st and all(s.get("master.1.node") == want and s.get("master.1.state") == "up" for s in st):
            t_follow = time.monotonic()
        else:
            time.sleep(0.05)
    c.expect(t_follow, "lockd not up on the promoted r1 within 10 s of its promotion")
    p4 = heal_and_stop(c, ws, stop)
    p5 = time.monotonic()
    # each long hold: kept (another session is refused it) or its holder
    # told LOST (the checker: before anyone else had it)
    kept_keys, lost_keys = probe_long_holds(c, holders)
    kept, lost = len(kept_keys), len(lost_keys)
    # an uncontended lock on each lockd, now that m1 and m3 are back (the
    # entry counts for no write until r1 has a replica, or, with 0, until
    # its restart exclusion ends)
    fresh = []
    for j, addr in enumerate((c.A, c.B)):
        conn = c.conn("f%d" % j, addr)
        t = time.monotonic()
        f, text = conn.lock("fresh%d" % j, wait=c.lease_ms + 1000 + HEADROOM_MS)
        if c.expect(f, "LOCK fresh%d on %s after the heal: %s" % (j, "AB"[j], text)):
            fresh.append((time.monotonic() - t) * 1000)
            conn.unlock("fresh%d" % j)
    stats = [lockd_stats(a) for a in (c.A, c.B)]
    # the figures
    recs = c.hist.sorted()
    hs = holds(recs)
    doubled = sum(1 for v in check(recs) if v["rule"] in ("overlap", "fence"))
    open_at = [h for h in hs if h["start"] <= t_snap < h["end"]]
    m1, m3 = snap[MASTER_IP[0]], snap[MASTER_IP[2]]
    counted = [h for h in open_at if snap[P][h["key"]] is not None and snap[P][h["key"]] == m1[h["key"]]]
    missing = [h for h in counted if snap[R][h["key"]] != snap[P][h["key"]]]
    at_risk = [h for h in missing if m3[h["key"]] != m1[h["key"]]]
    judged = []
    for name in ("l1", "l2"):
        with open(c.cl.log_path(name), errors="replace") as f:
            text = f.read()
        judged.append("kept counting" if "a promoted replica with lockd's marker" in text else
                      "excluded as a restart" if "handled as a restart that lost data" in text else "not judged")
    phases = (("all up", t0, p1), ("m3 out", p1, p2), ("m3 out, m2 cut from r1", p2, p3),
              ("m2 isolated, m3 back", p3, p4), ("healed", p4, p5))
    c.note("wait_replicas %d: r1 promoted %.1f s after m2's isolation, both lockd on it %.1f s after; "
           "lockd judged it: %s" % (w, t_prom - p3, (t_follow or p5) - p3, ", ".join(judged)))
    c.note("grants: " + ", ".join("%d %s" % (count_in(oks, a, b), what) for what, a, b in phases))
    c.note("long holds: %d kept, %d told LOST, %d overlaps or fence regressions in the history" %
           (kept, lost, doubled))
    c.note("holds confirmed at m2's isolation: %d; on m1 and m2 (counted there): %d; of these, missing on "
           "the promoted r1: %d; on m1 alone of m1, r1, m3 (a lockd counting r1 at once could grant them "
           "again): %d" % (len(open_at), len(counted), len(missing), len(at_risk)))
    c.note("write batches that counted nowhere for want of replicas (master.1.wait_failures): A %s, B %s" %
           (stats[0].get("master.1.wait_failures"), stats[1].get("master.1.wait_failures")))
    c.note("an uncontended LOCK on each lockd after the handoffs: granted in %s ms" %
           ", ".join("%.0f" % x for x in fresh))
    c.expect(kept + lost == len(SN_LONG), "long holds: %d kept + %d lost of %d" % (kept, lost, len(SN_LONG)))
    if w == 0:
        return  # a measurement: the checker's verdict is its only assertion
    c.expect(judged == ["kept counting"] * 2, "lockd's judgement of the promotion: %s" % judged)
    c.expect(not missing, "holds that counted on m2 are missing on the promoted r1: %s" %
             ["%s %s" % (h["key"], h["fence"]) for h in missing])
    c.expect(count_in(oks, p1 + 0.5, p2) >= 3, "fewer than 3 grants while m3 was out (the entry with its "
             "replica counts)")
    late = count_in(oks, p2 + 0.5, p3)
    c.expect(late == 0, "%d grants while m3 was out and m2 cut from its replica (WAIT 1 answers 0 there)" % late)


# ------------------------------------------------------------------ 11, 12

def slot_owner(name):
    """The address of the primary serving name's slot (lockd keeps every
    key of a lock name in the name's slot), by CLUSTER SLOTS on m1."""
    slot = int(redis_cmd(MASTER_IP[0], "CLUSTER", "KEYSLOT", name))
    for rng in redis_cmd(MASTER_IP[0], "CLUSTER", "SLOTS"):
        if int(rng[0]) <= slot <= int(rng[1]):
            return rng[2][0]
    return None


def names_on(ip, n, prefix):
    out, i = [], 0
    while len(out) < n and i < 10000:
        name = "%s%d" % (prefix, i)
        if slot_owner(name) == ip:
            out.append(name)
        i += 1
    return out


def s11_cluster(c):
    """lockd's only master a Redis Cluster; its primary m2 cut from its
    replica r1, then from lockd and the other primaries, so that the
    cluster promotes r1; then everything heals. Two long holds in m2's
    slots and two in m1's, four clients handing off two keys of m2's
    slots. Run with redis.wait_replicas 1 (scenario 11, asserted) and 0
    (12, a measurement).

    Phases: all up; m2 cut from r1 (WAIT on m2 answers 0: with
    wait_replicas 1 nothing written on m2 counts); m2 isolated, r1
    promoted (with 1, r1 had every write that counted: lockd keeps
    counting the entry; with 0, lockd cannot know: a master that lost
    its data); heal (m2 follows r1).

    12 runs it with wait_replicas 0 and two standalone masters (m4, m5)
    beside the cluster: the lossy promotion is one entry of three losing
    its data, which PROTOCOL's guarantees cover: every hold is kept by
    the other two, and fences keep growing (the cluster's counters are
    caught up from them). With the cluster alone and wait_replicas 0, the
    same faults are its only entry losing data, a majority: a run showed
    no overlap, and 207 fences that did not grow (doc/cluster.md)."""
    w = c.wait_replicas
    P, R = MASTER_IP[1], REPLICA_IP
    on_p, on_1 = names_on(P, 4, "cp"), names_on(MASTER_IP[0], 2, "c1")
    if not c.expect(len(on_p) == 4 and len(on_1) == 2, "names on m2: %s, on m1: %s" % (on_p, on_1)):
        return
    longs = [(on_p[0], 0, "la1"), (on_p[1], 1, "lb2"), (on_1[0], 0, "la3"), (on_1[1], 1, "lb4")]
    handoff = on_p[2:4]
    holders = take_long_holds(c, longs)
    if holders is None:
        return
    oks = []
    stop = threading.Event()
    ws = start_handoffs(c, handoff, oks, stop)
    t0 = time.monotonic()
    time.sleep(1.5)
    p1 = time.monotonic()
    c.net.cut_peer("m2", "r1")
    c.nemesis("cut", "m2", "m2 x r1 (silent): the replica falls behind; WAIT on m2 answers 0")
    time.sleep(c.lease_ms / 1000.0 + 1.0)
    p2 = time.monotonic()
    for x in ("l1", "l2", "m1", "m3"):
        c.net.cut_peer("m2", x)
    c.nemesis("cut", "m2", "m2 x l1, l2, m1, m3 (silent): the primary isolated")
    t_prom = t_follow = None
    end = time.monotonic() + 20
    while time.monotonic() < end and t_prom is None:
        role = redis_cmd(R, "ROLE", timeout=0.5)
        if isinstance(role, list) and role and role[0] == "master":
            t_prom = time.monotonic()
        else:
            time.sleep(0.05)
    if not c.expect(t_prom, "the cluster did not promote r1 within 20 s of m2's isolation"):
        stop.set()
        return
    c.nemesis("info", "r1", "r1 is a primary")
    want = "%s:%d/primary" % (R, REDIS_PORT)
    end = time.monotonic() + 10
    while time.monotonic() < end and t_follow is None:
        try:
            st = [lockd_stats(a) for a in (c.A, c.B)]
        except (OSError, ConnectionError):
            st = []
        if st and all(want in s.get("master.0.cluster_nodes", "") for s in st):
            t_follow = time.monotonic()
        else:
            time.sleep(0.05)
    c.expect(t_follow, "lockd's map without r1 as a primary 10 s after its promotion")
    p3 = heal_and_stop(c, ws, stop)
    p4 = time.monotonic()
    kept_keys, lost_keys = probe_long_holds(c, holders)
    kept, lost = len(kept_keys), len(lost_keys)
    kept_p = sum(1 for k in kept_keys if k in on_p)
    lost_1 = sum(1 for k in lost_keys if k in on_1)
    fresh = []
    for j, addr in enumerate((c.A, c.B)):
        conn = c.conn("f%d" % j, addr)
        t = time.monotonic()
        f, text = conn.lock(on_p[0], wait=10000)
        if c.expect(f, "LOCK %s (m2's slots) on %s after the heal: %s" % (on_p[0], "AB"[j], text)):
            fresh.append((time.monotonic() - t) * 1000)
            conn.unlock(on_p[0])
    recs = c.hist.sorted()
    doubled = sum(1 for v in check(recs) if v["rule"] in ("overlap", "fence"))
    judged = []
    for name in ("l1", "l2"):
        with open(c.cl.log_path(name), errors="replace") as f:
            text = f.read()
        judged.append("with the data" if re.search(r"%s:%d promoted \(\d+ slots, with the data\)" %
                                                   (re.escape(R), REDIS_PORT), text) else
                      "data may be lost" if "promoted" in text else "not judged")
    phases = (("all up", t0, p1), ("m2 cut from r1", p1, p2), ("m2 isolated, r1 promoted", p2, p3),
              ("healed", p3, p4))
    c.note("wait_replicas %d: r1 promoted %.1f s after m2's isolation, both lockd's maps %.1f s after; "
           "lockd judged it: %s" % (w, t_prom - p2, (t_follow or p4) - p2, ", ".join(judged)))
    c.note("grants of m2's keys: " + ", ".join("%d %s" % (count_in(oks, a, b), what)
                                               for what, a, b in phases))
    c.note("long holds: %d kept (%d in m2's slots), %d told LOST (%d in m1's slots), %d overlaps or "
           "fence regressions in the history" % (kept, kept_p, lost, lost_1, doubled))
    c.note("a LOCK in m2's slots on each lockd after the heal: granted in %s ms" %
           ", ".join("%.0f" % x for x in fresh))
    c.expect(kept + lost == len(longs), "long holds: %d kept + %d lost of %d" % (kept, lost, len(longs)))
    if w == 0:
        c.expect(judged == ["data may be lost"] * 2, "lockd's judgement of the promotion: %s" % judged)
        c.expect(lost == 0, "%d long holds lost: the cluster is one entry of three" % lost)
        return
    c.expect(judged == ["with the data"] * 2, "lockd's judgement of the promotion: %s" % judged)
    c.expect(lost_1 == 0, "%d long holds in m1's slots lost (m1 never failed)" % lost_1)
    c.expect(count_in(oks, t0, p1) >= 3, "fewer than 3 grants before the cut")
    late = count_in(oks, p1 + 0.5, p2)
    c.expect(late == 0, "%d grants of m2's keys while m2 was cut from r1 (WAIT 1 answers 0 there)" %
             late)


SCENARIOS = [
    (1, "lockd A loses two of three masters, B keeps all", s1_minority, {}),
    (2, "a master cut from every lockd, then healed, during handoffs", s2_master_cut, {}),
    (3, "a client paused past its TTL, then resumed", s3_pause, {}),
    (4, "pub/sub connections cut while requests pass", s4_pubsub, dict(lease_ms=4000)),
    (5, "one direction of a lockd-master link dropped", s5_one_way, {}),
    (6, "sessions resume on the other lockd while A is cut from clients", s6_sessions, {}),
    (7, "a random schedule of faults, 8 clients, 2 lockd", s7_random, {}),
    (8, "3 with a lock-delay: the paused client's late write, a resource without fences", s8_pause_delay,
     {}),
    (9, "a Sentinel primary cut from its replica, lockd and Sentinels while its vote is needed; "
     "wait_replicas 1", s9_sentinel, dict(lease_ms=2000, wait_replicas=1)),
    (10, "9 with wait_replicas 0: a measurement of what WAIT buys", s9_sentinel,
     dict(lease_ms=2000, wait_replicas=0)),
    (11, "a cluster primary cut from its replica, then isolated while the cluster promotes it; "
     "wait_replicas 1", s11_cluster, dict(lease_ms=2000, wait_replicas=1, cluster=True)),
    (12, "11 with wait_replicas 0 and two standalone masters beside the cluster: the lossy "
     "promotion is one entry of three losing its data", s11_cluster,
     dict(lease_ms=2000, wait_replicas=0, cluster="mixed")),
]


def run_one(net, out, lockd_bin, num, title, fn, opts):
    tmp = os.path.join(out, "s%d" % num)
    os.makedirs(tmp, exist_ok=True)
    t = time.monotonic()
    c = None
    status = "FAIL"
    try:
        c = Ctx(net, tmp, lockd_bin, **opts)
        fn(c)
        status = "ok"
    except Skip as e:
        print("scenario %d (%s): SKIP: %s" % (num, title, e), flush=True)
        status = "skip"
    except Exception:  # noqa: BLE001 (any harness error fails the scenario)
        traceback.print_exc()
        status = "FAIL"
    finally:
        if c:
            try:
                c.close()
            except Exception:  # noqa: BLE001
                traceback.print_exc()
                status = "FAIL"
    if status == "skip":
        return "skip"
    if c is None:
        print("scenario %d (%s): FAIL: could not start the cluster" % (num, title), flush=True)
        return "fail"
    recs = c.hist.sorted()
    c.hist.dump(os.path.join(tmp, "history.jsonl"))
    vs = check(recs)
    nh = len(holds(recs))
    verdict = "valid" if not vs else "%d violations (%s)" % (
        len(vs), ", ".join(sorted({v["rule"] for v in vs})))
    ok = status == "ok" and not vs and not c.fails
    print("scenario %d (%s): history %d records, %d holds; checker: %s; %s in %.1f s" % (
        num, title, len(recs), nh, verdict, "PASS" if ok else "FAIL", time.monotonic() - t), flush=True)
    for n in c.notes:
        print("    " + n)
    for f in c.fails:
        print("    FAILED: " + f)
    for v in vs[:3]:
        print("    VIOLATION %s: %s" % (v["rule"], v["text"]))
        for line in excerpt(recs, v):
            print("      " + line)
    if not ok:
        print("    history: %s; logs: %s/l1/lockd.log, %s/l2/lockd.log" % (
            os.path.join(tmp, "history.jsonl"), tmp, tmp))
    return "pass" if ok else "fail"


def main():
    want = [int(a) for a in sys.argv[1:]] or [s[0] for s in SCENARIOS]
    lockd_bin = os.path.abspath(os.environ.get("LOCKD_BIN", os.path.join(HERE, "..", "..", "lockd")))
    if not os.access(lockd_bin, os.X_OK):
        print("partition: no lockd at %s (build it, or set LOCKD_BIN)" % lockd_bin)
        return 1
    if not shutil.which("redis-server"):
        print("partition: no redis-server in PATH")
        return 1
    prefix = os.environ.get("PT_PREFIX", "ldpt%d" % os.getpid())
    out = os.environ.get("PT_OUT") or tempfile.mkdtemp(prefix="lockd-partition.")
    os.makedirs(out, exist_ok=True)
    net = Net(prefix)
    res = {}
    try:
        net.create()
        net.enter("cl")
        print("partition: lockd %s, namespaces %s-*, results in %s" % (lockd_bin, prefix, out), flush=True)
        for num, title, fn, opts in SCENARIOS:
            if num in want:
                res[num] = run_one(net, out, lockd_bin, num, title, fn, opts)
    finally:
        net.destroy()
    failed = [n for n, r in res.items() if r == "fail"]
    print("partition: %d passed, %d failed, %d skipped" % (
        sum(r == "pass" for r in res.values()), len(failed), sum(r == "skip" for r in res.values())))
    if failed:
        print("partition: kept %s" % out)
        return 1
    if not os.environ.get("PT_OUT"):
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
