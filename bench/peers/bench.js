#!/usr/bin/env node
'use strict';
/*
 * bench/peers/bench.js: one measured run of one lock service, driven by C
 * async workers in this node process. bench/peers/run.sh starts the servers
 * and calls this once per peer and scenario; see bench/peers/README.md.
 *
 *   node bench.js --peer P --mode uncontended|handoff --c N [--hold MS]
 *     [--duration MS] [--warmup MS] [--redis P1,P2,P3] [--pids PID,...]
 *     [--lockd H:P] [--etcd H:P,...] [--zk H:P,...] [--clk-tck HZ]
 *     [--out FILE]
 *
 * P: redlock (node-redlock), semaphore (redis-semaphore RedlockMutex), etcd
 * (concurrency.Mutex's recipe over etcd3), zookeeper (Curator
 * InterProcessMutex's recipe over node-zookeeper-client), lockd (one plain
 * connection per worker), lockd-resumable (the same, each connection made
 * resumable with SESSION first).
 *
 * Modes:
 *   uncontended  worker w loops lock + unlock of its own key;
 *   handoff      every worker loops on one key: lock, hold MS, unlock; a
 *                worker that released waits until another one got the key
 *                (at most 1 s) before asking again, so that every handoff
 *                goes to a waiter. Handoff = the releaser's unlock call ->
 *                the next holder's lock call resolving.
 * Figures per cycle (lock + unlock) count the cycles completed between the
 * two snapshots (the window and its drain): the masters' CPU (INFO cpu,
 * used_cpu_sys + used_cpu_user summed over --redis), the masters' commands
 * (INFO commandstats, every command but INFO, PING and the like), and the
 * CPU of each --pids process (/proc/PID/stat utime + stime; the whole
 * thread group).
 *
 * Mutual exclusion, over the warm-up and the window alike: a lock call that
 * resolves while another worker of this process holds the key (it has not
 * called unlock yet) is a violation; so is a fence that does not grow
 * strictly from one holder of a key to the next (lockd's fence, etcd's
 * create revision of the holder's key, ZooKeeper's sequence number). Any
 * violation: the first 20 are printed, the result counts them all, and the
 * exit status is 1.
 *
 * Every loop is bounded: the window, the drain (15 s), a watchdog.
 */

const fs = require('fs');
const net = require('net');
const path = require('path');
const { randomUUID } = require('crypto');
const { performance } = require('perf_hooks');

const HOST = '127.0.0.1';
const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function parseArgs(argv) {
  const o = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const n = a.slice(2);
    if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) o[n] = argv[++i];
    else o[n] = 'true';
  }
  return o;
}
function int(o, name, dflt, min, max) {
  if (o[name] === undefined) return dflt;
  const v = Number(o[name]);
  if (!Number.isInteger(v) || v < min || v > max) throw new Error(`--${name} must be an integer in [${min}, ${max}]`);
  return v;
}
function addrs(s) {
  return String(s || '').split(',').filter(Boolean).map((a) => {
    const m = /^(127\.0\.0\.1|localhost):(\d+)$/.exec(a);
    if (!m) throw new Error(`not a loopback host:port: ${a}`);
    return { host: HOST, port: Number(m[2]) };
  });
}
function pct(sorted, p) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}
function summary(a) {
  const s = Float64Array.from(a).sort();
  const r = (x) => (x === null ? null : Math.round(x * 1000) / 1000);
  return { n: s.length, p50: r(pct(s, 0.5)), p99: r(pct(s, 0.99)), max: r(s.length ? s[s.length - 1] : null) };
}
function version(name) { // packages whose "exports" hide package.json too
  try {
    const j = JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', name, 'package.json'), 'utf8'));
    return String(j.version).replace(/^v/, '');
  } catch (e) {
    return 'unknown';
  }
}
function within(ms, p, what) {
  let t;
  return Promise.race([p, new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`${what}: no answer in ${ms} ms`)), ms); })])
    .finally(() => clearTimeout(t));
}

// ------------------------------------------------------------ server probes
// Harness and health-check traffic, not lock traffic: the list
// lockd-benchmark leaves out too (tools/benchmark_probe.c), so that the
// figures compare.
const ADMIN = /^(info|ping|client|hello|select|config|script|command|quit|auth|echo|time|dbsize|flushall|flushdb)(\||$)/;
// The masters: INFO cpu and commandstats, over connections of our own.
class Masters {
  constructor(ports) { this.ports = ports; this.conns = []; }
  async open() {
    const Redis = require('ioredis');
    this.conns = this.ports.map((p) => new Redis({ host: HOST, port: p.port, retryStrategy: () => null, maxRetriesPerRequest: 1 }));
    await Promise.all(this.conns.map((c) => c.ping()));
  }
  async snap() {
    let cpu = 0, cmds = 0, scripts = 0;
    const by = {};
    for (const c of this.conns) {
      const text = await c.info('all');
      for (const line of text.split(/\r?\n/)) {
        let m = /^used_cpu_(sys|user):([\d.]+)$/.exec(line);
        if (m) { cpu += Number(m[2]); continue; }
        m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
        if (m && !ADMIN.test(m[1])) {
          const n = Number(m[2]);
          cmds += n;
          by[m[1]] = (by[m[1]] || 0) + n;
          if (/^(evalsha|eval|evalsha_ro|eval_ro|fcall|fcall_ro)$/.test(m[1])) scripts += n;
        }
      }
    }
    return { cpu, cmds, scripts, by };
  }
  close() { for (const c of this.conns) c.disconnect(); }
}
// Processes: utime + stime of the whole thread group, in seconds.
function procCpu(pids, hz) {
  let s = 0;
  for (const pid of pids) {
    const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    s += (Number(f[11]) + Number(f[12])) / hz; // fields 14 and 15 of proc(5)
  }
  return s;
}

// ------------------------------------------------------------ adapters
// Each: open(C), acquire(key, w) -> handle {fence?} | null (gave up),
// release(handle, key, w), requests (client-side count, or null), close().
function redisClients(ports) {
  const Redis = require('ioredis');
  return ports.map((p) => new Redis({ host: HOST, port: p.port, retryStrategy: (n) => (n > 5 ? null : 100) }));
}

function redlockPeer(o) {
  const { default: Redlock, ExecutionError, ResourceLockedError } = require('redlock');
  const clients = redisClients(o.redis);
  const redlock = new Redlock(clients); // the library's defaults
  let errors = 0;
  // node-redlock emits "error" for every vote against; busy is expected
  redlock.on('error', (e) => { if (!(e instanceof ResourceLockedError)) errors++; });
  return {
    version: version('redlock'),
    settings: redlock.settings,
    async open() { await Promise.all(clients.map((c) => c.ping())); },
    async acquire(key) {
      try {
        return await redlock.acquire([key], o.ttl);
      } catch (e) {
        if (e instanceof ExecutionError) return null; // its retries ran out
        throw e;
      }
    },
    async release(lock) { await lock.release(); },
    errors: () => errors,
    requests: () => null,
    async close() { await Promise.allSettled(clients.map((c) => c.quit())); },
  };
}

function semaphorePeer(o) {
  const { RedlockMutex, defaultTimeoutOptions } = require('redis-semaphore');
  const clients = redisClients(o.redis);
  const options = { lockTimeout: o.ttl };
  return {
    version: version('redis-semaphore'),
    settings: { ...defaultTimeoutOptions, ...options, acquireAttemptsLimit: 'Infinity' },
    async open() { await Promise.all(clients.map((c) => c.ping())); },
    async acquire(key) {
      const m = new RedlockMutex(clients, key, options);
      try {
        await m.acquire();
      } catch (e) {
        if (e && e.name === 'TimeoutError') return null; // acquireTimeout
        throw e;
      }
      return m;
    },
    async release(m) { await m.release(); },
    errors: () => 0,
    requests: () => null,
    async close() { await Promise.allSettled(clients.map((c) => c.quit())); },
  };
}

// lockd's text protocol (doc/protocol.md), one connection per worker.
class LineConn {
  constructor(port) {
    this.q = [];
    this.buf = '';
    this.lost = 0;
    this.sock = net.connect({ host: HOST, port });
    this.sock.setNoDelay(true);
    this.sock.setEncoding('latin1');
    this.ready = new Promise((res, rej) => { this.sock.once('connect', res); this.sock.once('error', rej); });
    this.sock.on('data', (d) => {
      this.buf += d;
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i).replace(/\r$/, '');
        this.buf = this.buf.slice(i + 1);
        if (line.startsWith('LOST ')) { this.lost++; continue; } // an event, not a reply
        const p = this.q.shift();
        if (p) p.res(line);
      }
    });
    const fail = (e) => { for (const p of this.q.splice(0)) p.rej(e); };
    this.sock.on('error', fail);
    this.sock.on('close', () => fail(new Error('lockd closed the connection')));
  }
  request(line) {
    return new Promise((res, rej) => { this.q.push({ res, rej }); this.sock.write(line + '\r\n'); });
  }
  close() { this.sock.destroy(); }
}

function lockdPeer(o, resumable) {
  const port = addrs(o.lockd)[0].port;
  let conns = [];
  let requests = 0;
  // WAIT 10000, no TTL: a watchdog lock, as lockd-benchmark and the
  // clients ask for it
  const tail = ` WAIT 10000${o.lockdTtl ? ` TTL ${o.lockdTtl}` : ''}`;
  return {
    version: 'lockd ' + (o.lockdVersion || ''),
    settings: { lock: `LOCK key${tail}`, session: resumable ? 'SESSION' : null },
    async open(c) {
      conns = Array.from({ length: c }, () => new LineConn(port));
      await within(10000, Promise.all(conns.map((s) => s.ready)), 'lockd connect');
      const replies = await within(10000, Promise.all(conns.map((s) => s.request(resumable ? 'SESSION' : 'PING'))), 'lockd');
      for (const r of replies) {
        if (!(resumable ? /^SESSION \S+ \S+ \d+$/ : /^PONG/).test(r)) throw new Error(`lockd: unexpected reply ${r}`);
      }
    },
    async acquire(key, w) {
      requests++;
      const r = await conns[w].request(`LOCK ${key}${tail}`);
      if (r.startsWith('OK ')) return { fence: BigInt(r.slice(3)) };
      if (r === 'TIMEOUT') return null;
      throw new Error(`lockd: LOCK: ${r}`);
    },
    async release(h, key, w) {
      requests++;
      const r = await conns[w].request(`UNLOCK ${key}`);
      if (!r.startsWith('OK')) throw new Error(`lockd: UNLOCK: ${r}`);
    },
    errors: () => conns.reduce((a, s) => a + s.lost, 0),
    requests: () => requests,
    async close() {
      // QUIT ends a resumable session at once (no grace left behind)
      await within(5000, Promise.allSettled(conns.map((s) => s.request('QUIT'))), 'lockd QUIT').catch(() => {});
      for (const s of conns) s.close();
    },
  };
}

// etcd: clientv3 concurrency.Mutex (etcd 3.4) on etcd3's KV, Watch and
// Lease clients. Worker w: its own lease (its "session"), on endpoint
// w mod n. Lock(pfx): myKey = pfx + lease id in hex;
//   Txn If(CreateRevision(myKey) == 0) Then(Put(myKey, lease), Get(pfx,
//   first created)) Else(Get(myKey), Get(pfx, first created));
//   myRev = the put's revision, or myKey's create revision; held when the
//   first created key under pfx has myRev; else waitDeletes: Get(pfx, last
//   created, max create revision myRev - 1); none left -> held; else watch
//   that key from the Get's revision until its DELETE, and again.
// Unlock: Delete(myKey).
function etcdPeer(o) {
  const { Etcd3, SortTarget, SortOrder, CompareTarget, CompareResult } = require('etcd3');
  const eps = addrs(o.etcd);
  const clients = eps.map((e) => new Etcd3({ hosts: `http://${e.host}:${e.port}`, dialTimeout: 5000 }));
  let leases = [], leaseIds = [];
  let requests = 0, lost = 0;
  const enc = (s) => Buffer.from(s);
  const prefixEnd = (b) => { // etcd's GetPrefixRangeEnd
    const e = Buffer.from(b);
    for (let i = e.length - 1; i >= 0; i--) if (e[i] < 0xff) { e[i]++; return e.subarray(0, i + 1); }
    return Buffer.from([0]);
  };
  return {
    version: version('etcd3'),
    settings: { lease_ttl_s: Math.ceil(o.ttl / 1000), endpoints: eps.length },
    async open(c) {
      leases = Array.from({ length: c }, (_, w) => {
        const l = clients[w % clients.length].lease(Math.ceil(o.ttl / 1000));
        l.on('lost', () => { lost++; });
        return l;
      });
      leaseIds = await within(15000, Promise.all(leases.map((l) => l.grant())), 'etcd lease grant');
    },
    async acquire(key, w) {
      const kv = clients[w % clients.length].kv;
      const pfx = `/locks/${key}/`;
      const myKey = enc(pfx + BigInt(leaseIds[w]).toString(16));
      const pk = enc(pfx), pe = prefixEnd(pk);
      const first = { key: pk, range_end: pe, sort_target: SortTarget.Create, sort_order: SortOrder.Ascend, limit: 1 };
      requests++;
      const t = await kv.txn({
        compare: [{ key: myKey, target: CompareTarget.Create, result: CompareResult.Equal, create_revision: 0 }],
        success: [{ request_put: { key: myKey, value: Buffer.alloc(0), lease: leaseIds[w] } }, { request_range: first }],
        failure: [{ request_range: { key: myKey } }, { request_range: first }],
      });
      const myRev = t.succeeded ? BigInt(t.header.revision) : BigInt(t.responses[0].response_range.kvs[0].create_revision);
      const owner = t.responses[1].response_range.kvs;
      if (!owner.length || BigInt(owner[0].create_revision) === myRev) return { fence: myRev, key: myKey, kv };
      try {
        for (;;) { // waitDeletes
          requests++;
          const r = await kv.range({ key: pk, range_end: pe, sort_target: SortTarget.Create, sort_order: SortOrder.Descend, limit: 1,
            max_create_revision: String(myRev - 1n) });
          if (!r.kvs.length) return { fence: myRev, key: myKey, kv };
          const prev = r.kvs[0].key;
          requests++;
          // watcher(), not create(): its listeners are on before any event
          // can come (create() resolves on "connected", and a DELETE that
          // came in the same read would be emitted before the await ends)
          const watcher = clients[w % clients.length].watch().key(prev)
            .startRevision(String(BigInt(r.header.revision))).watcher();
          try {
            await new Promise((res, rej) => {
              watcher.on('delete', () => res());
              watcher.on('error', rej);
            });
          } finally {
            await watcher.cancel();
          }
        }
      } catch (e) {
        await kv.deleteRange({ key: myKey }).catch(() => {}); // as Mutex.Lock does on error
        throw e;
      }
    },
    async release(h) { requests++; await h.kv.deleteRange({ key: h.key }); },
    errors: () => lost,
    requests: () => requests,
    async close() {
      await within(5000, Promise.allSettled(leases.map((l) => l.revoke())), 'etcd revoke').catch(() => {});
      for (const c of clients) c.close();
    },
  };
}

// ZooKeeper: Curator InterProcessMutex's recipe (LockInternals). Worker w:
// its own session, on server w mod n. Lock(path): create EPHEMERAL_SEQUENTIAL
// path/_c_<uuid>-lock- (creating the parent if missing: Curator makes it a container,
// this client knows no containers, so the run removes the parents at the
// end); loop: getChildren(path), sorted by sequence; ours first -> held;
// else getData(the next lower one, watch): NONODE -> look again at once,
// else wait for the watch. Unlock: delete our node.
function zookeeperPeer(o) {
  const zk = require('node-zookeeper-client');
  const hosts = addrs(o.zk).map((a) => `${a.host}:${a.port}`);
  let sessions = [];
  let requests = 0, trouble = 0;
  const parents = new Set();
  const code = (e) => (e && typeof e.getCode === 'function' ? e.getCode() : null);
  const call = (f) => { requests++; return new Promise((res, rej) => f((err, v) => (err ? rej(err) : res(v)))); };
  const seq = (name) => Number(name.slice(name.lastIndexOf('-') + 1));
  const ROOT = '/lockd-peers';
  return {
    version: version('node-zookeeper-client'),
    settings: { session_timeout_ms: o.ttl, servers: hosts.length },
    async open(c) {
      sessions = Array.from({ length: c }, (_, w) => zk.createClient(hosts[w % hosts.length], { sessionTimeout: o.ttl, spinDelay: 200, retries: 0 }));
      await within(20000, Promise.all(sessions.map((cl) => new Promise((res) => {
        cl.once('connected', res);
        cl.on('state', (s) => { if (s === zk.State.EXPIRED || s === zk.State.DISCONNECTED) trouble++; });
        cl.connect();
      }))), 'zookeeper connect');
      await call((cb) => sessions[0].mkdirp(ROOT, cb));
    },
    async acquire(key, w) {
      const cl = sessions[w];
      const base = `${ROOT}/${key}`;
      // Curator's protected name (_c_<uuid>-): its way to find its own
      // node again after a lost connection
      const create = () => call((cb) => cl.create(`${base}/_c_${randomUUID()}-lock-`, zk.CreateMode.EPHEMERAL_SEQUENTIAL, cb));
      let ours;
      try {
        ours = await create();
      } catch (e) {
        if (code(e) !== zk.Exception.NO_NODE) throw e;
        try {
          await call((cb) => cl.create(base, zk.CreateMode.PERSISTENT, cb));
        } catch (e2) {
          if (code(e2) !== zk.Exception.NODE_EXISTS) throw e2;
        }
        parents.add(base);
        ours = await create();
      }
      const name = ours.slice(base.length + 1);
      try {
        for (;;) {
          const kids = (await call((cb) => cl.getChildren(base, cb))).sort((a, b) => seq(a) - seq(b));
          const i = kids.indexOf(name);
          if (i < 0) throw new Error(`zookeeper: our node ${ours} is gone`);
          if (i === 0) return { fence: BigInt(seq(name)), path: ours };
          await new Promise((res, rej) => {
            requests++;
            cl.getData(`${base}/${kids[i - 1]}`, () => res(), (err) => {
              if (!err) return; // the watch is set: wait for it
              if (code(err) === zk.Exception.NO_NODE) res(); else rej(err);
            });
          });
        }
      } catch (e) {
        await call((cb) => cl.remove(ours, -1, cb)).catch(() => {});
        throw e;
      }
    },
    async release(h, key, w) { await call((cb) => sessions[w].remove(h.path, -1, cb)); },
    errors: () => trouble,
    requests: () => requests,
    async close() {
      if (sessions.length) {
        await within(5000, Promise.allSettled([...parents].map((p) => new Promise((res) => sessions[0].remove(p, -1, res)))),
          'zookeeper cleanup').catch(() => {});
      }
      for (const cl of sessions) cl.close();
    },
  };
}

// ------------------------------------------------------------ the run
async function main() {
  const o = parseArgs(process.argv.slice(2));
  const peers = { redlock: redlockPeer, semaphore: semaphorePeer, etcd: etcdPeer, zookeeper: zookeeperPeer,
    lockd: (x) => lockdPeer(x, false), 'lockd-resumable': (x) => lockdPeer(x, true) };
  if (!peers[o.peer]) throw new Error(`--peer must be one of ${Object.keys(peers).join(', ')}`);
  const mode = o.mode || 'uncontended';
  if (!['uncontended', 'handoff'].includes(mode)) throw new Error('--mode must be uncontended or handoff');
  const C = int(o, 'c', 16, 2, 1024);
  const hold = int(o, 'hold', mode === 'handoff' ? 1 : 0, 0, 1000);
  const duration = int(o, 'duration', 5000, 100, 600000);
  const warmup = int(o, 'warmup', 500, 0, 600000);
  const hz = int(o, 'clk-tck', 100, 1, 1000000);
  const opt = { redis: addrs(o.redis), lockd: o.lockd, etcd: o.etcd, zk: o.zk, ttl: int(o, 'ttl', 10000, 1000, 600000),
    lockdTtl: o['lockd-ttl'] ? int(o, 'lockd-ttl', 0, 1, 600000) : 0, lockdVersion: o['lockd-version'] };
  const pids = String(o.pids || '').split(',').filter(Boolean).map(Number);
  const watchdog = setTimeout(() => { console.error('bench.js: watchdog: giving up'); process.exit(3); },
    warmup + duration + 90000);

  const peer = peers[o.peer](opt);
  await within(30000, peer.open(C), `${o.peer} open`);
  const masters = new Masters(opt.redis);
  await masters.open();

  const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  const st = { violations: 0, fenceViolations: 0, errors: 0, lastError: null, failed: 0, cycles: 0, spanCycles: 0,
    handoff: [], acq: [] };
  const holder = new Map(); // key -> the worker that holds it, as this process saw it
  const lastFence = new Map(); // key -> the fence of its latest holder
  const lastRelease = new Map(); // key -> { w, t } of the latest unlock call
  const polite = new Map(); // key -> wake-ups of workers waiting for another's grant

  // One phase: C workers on keyOf(w) until `until` (ms, performance.now()).
  async function phase(keyOf, until, measure, handoff) {
    const inWindow = () => now() < until;
    const worker = async (w) => {
      const key = keyOf(w);
      while (inWindow() && st.errors < 100) {
        const ta = now();
        let h;
        try {
          h = await peer.acquire(key, w);
        } catch (e) {
          st.errors++;
          st.lastError = String((e && e.message) || e);
          await sleep(5);
          continue;
        }
        const tb = now();
        if (h === null) { st.failed++; continue; }
        if (holder.has(key)) {
          st.violations++;
          if (st.violations + st.fenceViolations <= 20) console.error(`MUTUAL EXCLUSION VIOLATED: ${o.peer} granted ${key} to worker ${w} while worker ${holder.get(key)} holds it`);
        }
        holder.set(key, w);
        if (h.fence !== undefined) {
          const f = lastFence.get(key);
          if (f !== undefined && h.fence <= f) {
            st.fenceViolations++;
            if (st.violations + st.fenceViolations <= 20) console.error(`MUTUAL EXCLUSION VIOLATED: ${o.peer} fence of ${key} went from ${f} to ${h.fence}`);
          }
          lastFence.set(key, h.fence);
        }
        const lr = lastRelease.get(key);
        if (handoff) {
          for (const wake of [...(polite.get(key) || [])]) wake(w);
          if (measure && lr && lr.w !== w && tb < until) st.handoff.push(tb - lr.t);
        }
        if (measure) {
          if (tb < until) { st.cycles++; st.acq.push(tb - ta); }
          st.spanCycles++;
        }
        if (hold) await sleep(hold);
        holder.delete(key);
        const tr = now();
        lastRelease.set(key, { w, t: tr });
        try {
          await peer.release(h, key, w);
        } catch (e) {
          st.errors++;
          st.lastError = String((e && e.message) || e);
        }
        if (handoff && inWindow()) { // wait (1 s at most) for another worker's grant
          await new Promise((res) => {
            const l = polite.get(key) || [];
            const t = setTimeout(done, 1000);
            function done(by) {
              if (by === w) return;
              clearTimeout(t);
              const i = l.indexOf(done);
              if (i >= 0) l.splice(i, 1);
              res();
            }
            l.push(done);
            polite.set(key, l);
          });
        }
      }
    };
    // at the window's end nobody waits for another's grant any more
    const endTimer = setTimeout(() => {
      for (const l of polite.values()) for (const wake of [...l]) wake(-1);
    }, Math.max(0, until - now()));
    await Promise.all(Array.from({ length: C }, (_, w) => worker(w)));
    clearTimeout(endTimer);
  }
  const keyOf = (tag) => (mode === 'handoff' ? () => `peers-${run}-${tag}` : (w) => `peers-${run}-${tag}-${w}`);

  // warm-up: the same scenario, unmeasured (scripts loaded, JIT, a fresh
  // cluster's first requests)
  if (warmup) await within(warmup + 30000, phase(keyOf('warm'), now() + warmup, false, mode === 'handoff'), 'warm-up');

  const m0 = await masters.snap();
  const p0 = procCpu(pids, hz);
  const c0 = process.cpuUsage();
  const r0 = peer.requests();
  const t0 = now();
  let drainTimedOut = false;
  await Promise.race([phase(keyOf('run'), t0 + duration, true, mode === 'handoff'),
    sleep(duration + 15000).then(() => { drainTimedOut = true; })]);
  const t1 = now();
  const c1 = process.cpuUsage(c0);
  const p1 = procCpu(pids, hz);
  const m1 = await masters.snap();
  const r1 = peer.requests();

  const n = st.spanCycles || NaN;
  const r2 = (x) => (Number.isFinite(x) ? Math.round(x * 100) / 100 : null);
  const us = (s) => r2(s * 1e6 / n);
  const byCmd = {};
  for (const [k, v] of Object.entries(m1.by)) if (v - (m0.by[k] || 0) > 0) byCmd[k] = r2((v - (m0.by[k] || 0)) / n);
  const res = {
    date: new Date().toISOString(),
    peer: o.peer, version: peer.version, settings: peer.settings, node: process.version,
    mode, c: C, hold_ms: hold, window_ms: duration, warmup_ms: warmup, span_ms: Math.round(t1 - t0), drain_timed_out: drainTimedOut,
    cycles: st.cycles, cycles_per_s: Math.round(st.cycles * 1000 / duration), span_cycles: st.spanCycles,
    acquire_ms: summary(st.acq), handoff_ms: summary(st.handoff),
    masters: opt.redis.length ? {
      n: opt.redis.length,
      cpu_us_per_cycle: us(m1.cpu - m0.cpu),
      commands_per_cycle: r2((m1.cmds - m0.cmds) / n),
      scripts_per_cycle: r2((m1.scripts - m0.scripts) / n),
      by_command_per_cycle: byCmd,
    } : null,
    servers: pids.length ? { pids, cpu_us_per_cycle: us(p1 - p0) } : null,
    client: { cpu_us_per_cycle: us((c1.user + c1.system) / 1e6), requests_per_cycle: r0 === null ? null : r2((r1 - r0) / n) },
    failed_acquires: st.failed, errors: st.errors, last_error: st.lastError, lib_errors: peer.errors(),
    violations: st.violations, fence_violations: st.fenceViolations,
  };
  const line = JSON.stringify(res);
  process.stdout.write(line + '\n');
  if (o.out) fs.appendFileSync(o.out, line + '\n');
  await within(10000, peer.close(), 'close').catch(() => {});
  masters.close();
  clearTimeout(watchdog);
  const bad = st.violations + st.fenceViolations;
  if (bad) console.error(`MUTUAL EXCLUSION VIOLATED: ${o.peer} ${mode} c=${C}: ${bad} violation(s)`);
  process.exit(bad ? 1 : st.errors || drainTimedOut || !st.cycles ? 2 : 0);
}

main().catch((e) => {
  console.error('bench.js:', (e && e.stack) || e);
  process.exit(2);
});
