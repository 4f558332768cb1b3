// lockd-client: a client for lockd, the Redlock lock broker.
//
// Model: one lockd session (one connection) per concurrent holder. A lock,
// shared hold, permit or leadership owns its session from grant to
// release; idle sessions are pooled and reused, so an uncontended
// acquire/release costs two round trips and no connect. Why not one shared
// connection: lockd answers a connection's requests in order and queues
// everything behind a waiting LOCK, so waiters sharing a connection would
// wait for each other (and a release would wait behind someone's LOCK);
// and lockd's reentrancy is per session, so two acquires sharing a session
// would both be granted one key. One session per holder makes two
// acquires in one process exclude each other exactly as two processes do.
//
// A line whose first word is LOST, ELECTED or NOLEADER is an event; any
// other line answers the oldest unanswered request. Sessions are
// resumable (protocol 1.2) when lockd speaks it; a lockd answering
// ERR PROTOCOL to SESSION gets plain version-1 sessions.
//
// Local deadline: lockd renews a hold and says LOST before it lapses, but a
// frozen lockd, a lockd that died with nowhere to resume, or a cut network
// says nothing. So each hold keeps the time before which it is surely
// held: the send time of the request that confirmed it (a HELD sent behind
// the LOCK, a heartbeat HELD, an EXTEND, the resume's HELD), on the
// monotonic clock, plus the lease left that lockd reported, less lockd's
// drift margin. A heartbeat HELD (one per session, which in this client is
// one per hold) moves it on; when it draws near unconfirmed, the hold is
// reported lost exactly as for LOST, and its session is ended with QUIT.

'use strict';
const net = require('node:net');
const tls = require('node:tls');
const {
  LockdError,
  LockTimeoutError,
  QuorumError,
  LockLostError,
  LockdConnectionError,
  InvalidArgumentError,
  fromReply,
} = require('./errors.cjs');
const { parseWho } = require('./who.cjs');

const MAX_MS = 2 ** 31 - 1;
const EVENTS = new Set(['LOST', 'ELECTED', 'NOLEADER']);
// A request in flight when the connection broke is sent again after the
// resume; one in flight at this many breaks in a row fails instead (it
// may be what breaks the connection).
const MAX_REPLAYS = 2;
// The local deadline is the confirmed lease's end less lockd's drift
// margin (1 % + 2 ms); the loss is reported min(LOSS_MARGIN_MS, lease/10)
// before it, so that a timer late on a busy event loop or a loaded machine
// (nearly 200 ms seen on 2 cores running 10 processes) still comes first.
const LOSS_MARGIN_MS = 250;
// Heartbeats go out at a third of the time left to the deadline, never
// more often than this.
const HEARTBEAT_MIN_MS = 20;
// Ending a session: how long a QUIT'ed connection may take to close.
const QUIT_LINGER_MS = 2000;

/** Monotonic milliseconds (never the wall clock). */
const now = () => performance.now();

/** A key, value or password: 1..maxLen bytes of printable ASCII without
 * blanks (0x21-0x7E). Anything else could split the request line or reach
 * lockd as another option ("k WAIT" must never be sent). */
function checkWord(s, what, maxLen) {
  if (typeof s !== 'string') throw new InvalidArgumentError(`${what} must be a string`);
  if (s.length === 0) throw new InvalidArgumentError(`${what} is empty`);
  if (s.length > maxLen) throw new InvalidArgumentError(`${what} is longer than ${maxLen} bytes`);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) {
      throw new InvalidArgumentError(
        `${what} ${JSON.stringify(s.slice(0, 40))} has a byte lockd does not accept ` +
          `(0x${c.toString(16)}: only printable ASCII without blanks)`,
      );
    }
  }
  return s;
}

function checkMs(v, what, min) {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > MAX_MS) {
    throw new InvalidArgumentError(`${what} must be an integer from ${min} to ${MAX_MS} (ms)`);
  }
  return v;
}

/** Edit distance, for "did you mean" in the unknown-option error. */
function distance(a, b) {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}

/** The options of a call: an object whose names are all known. A name
 * misspelled would otherwise be ignored (a `wiat` makes an acquire wait
 * without limit), so an unknown one is refused, naming the near one. */
function checkOpts(o, known, where, hints = {}) {
  if (o === undefined || o === null) return {};
  if (typeof o !== 'object' || Array.isArray(o)) throw new InvalidArgumentError(`${where}: options must be an object`);
  for (const name of Object.keys(o)) {
    if (known.includes(name)) continue;
    let why = hints[name];
    if (!why) {
      const near = known.find((k) => k.toLowerCase() === name.toLowerCase() || distance(k.toLowerCase(), name.toLowerCase()) <= 2);
      why = near ? `did you mean ${near}?` : `known: ${known.join(', ')}`;
    }
    throw new InvalidArgumentError(`${where}: unknown option ${JSON.stringify(name)} (${why})`);
  }
  return o;
}

function checkType(v, type, what) {
  if (v !== undefined && v !== null && typeof v !== type) throw new InvalidArgumentError(`${what} must be a ${type}`);
  return v;
}

function checkSignal(v) {
  if (v !== undefined && v !== null && !(typeof v === 'object' && 'aborted' in v && typeof v.addEventListener === 'function')) {
    throw new InvalidArgumentError('signal must be an AbortSignal');
  }
  return v;
}

const CLIENT_OPTS = ['addresses', 'password', 'tls', 'resume', 'heartbeat', 'graceMs', 'maxIdle', 'maxLen', 'connectTimeout'];
const ACQUIRE_OPTS = ['wait', 'ttl', 'shared', 'permits', 'signal', 'onLost'];
const TRY_OPTS = ['ttl', 'shared', 'permits', 'signal', 'onLost'];
const TRY_HINTS = { wait: 'tryAcquire makes one attempt; acquire(key, { wait }) waits' };
const CAMPAIGN_OPTS = ['wait', 'signal', 'onLost'];
const STATUS_OPTS = ['permits'];
const WHO_OPTS = ['signal'];

function parseAddresses(spec) {
  const items = typeof spec === 'string' ? spec.split(',').map((x) => x.trim()) : [...spec];
  if (items.length === 0) throw new InvalidArgumentError('no address');
  return items.map((a) => {
    if (typeof a !== 'string' || !a) throw new InvalidArgumentError(`bad address ${a}`);
    if (a.startsWith('unix:')) return { path: a.slice(5) };
    let host = a;
    let port = '7390';
    const m = /^\[([^\]]+)\](?::(.*))?$/.exec(a);
    if (m) {
      host = m[1];
      if (m[2] !== undefined) port = m[2];
    } else if (a.includes(':')) {
      const i = a.lastIndexOf(':');
      host = a.slice(0, i);
      port = a.slice(i + 1);
    }
    const p = Number(port);
    if (!host || !/^\d+$/.test(port) || p < 1 || p > 65535) {
      throw new InvalidArgumentError(`bad address ${a}`);
    }
    return { host, port: p };
  });
}

/** A new socket to addr (TCP, TLS or a Unix socket), and the event that
 * says it is ready. */
function openSocket(client, addr) {
  const t = client.tls;
  if (addr.path) return { sock: net.connect({ path: addr.path }), ready: 'connect' };
  if (t) return { sock: tls.connect({ host: addr.host, port: addr.port, servername: addr.host, ...(t === true ? {} : t) }), ready: 'secureConnect' };
  return { sock: net.connect({ host: addr.host, port: addr.port }), ready: 'connect' };
}

function replyError(r) {
  if (r.startsWith('ERR ')) return fromReply(r);
  return new LockdError('PROTOCOL', `unexpected reply ${JSON.stringify(r)}`);
}

/** One connection, one lockd session. */
class Conn {
  constructor(client) {
    this.client = client;
    this.sock = null;
    this.buf = '';
    this.pending = []; // requests sent and not answered, oldest first
    this.backlog = []; // requests made while resuming, sent after it
    this.retry = []; // waits lockd answered ERR SHUTDOWN, sent after the resume
    this.sid = null; // set when the session is resumable
    this.secret = null;
    this.graceMs = 0;
    this.addrIndex = 0;
    this.holder = null; // the Lock or Leadership that owns this session
    this.heldKey = null; // key granted here, before the holder exists
    this.earlyLost = false; // LOST came before the holder existed
    this.observers = new Map(); // name -> Observer (observe connections)
    // 'open': requests go out at once; 'resuming': the connection broke,
    // requests wait in backlog; 'reopening': a new connection is being set
    // up (only its own AUTH/RESUME/HELD/OBSERVE go out); 'dead': over.
    this.state = 'open';
  }

  get usable() {
    return this.state === 'open';
  }

  async open(resumable) {
    await this.dialAny(this.client.prefer);
    if (this.client.password != null) check(await this.call(`AUTH ${this.client.password}`));
    if (resumable) {
      const g = this.client.graceMs;
      const r = await this.call(g ? `SESSION GRACE ${g}` : 'SESSION');
      if (r.startsWith('SESSION ')) {
        const w = r.split(' ');
        this.sid = w[1];
        this.secret = w[2];
        this.graceMs = Number(w[3]);
      } else if (!r.startsWith('ERR PROTOCOL')) {
        check(r); // lockd 1.0/1.1 answers ERR PROTOCOL: a plain session
      }
    }
    return this;
  }

  async dialAny(start) {
    const addrs = this.client.addresses;
    let last;
    for (let i = 0; i < addrs.length; i++) {
      const idx = (start + i) % addrs.length;
      try {
        await this.dial(addrs[idx]);
        this.addrIndex = idx;
        this.client.prefer = idx;
        return;
      } catch (e) {
        last = e;
      }
    }
    throw new LockdConnectionError(`no lockd reachable (${last && last.message})`);
  }

  dial(addr) {
    return new Promise((resolve, reject) => {
      const { sock, ready: ev } = openSocket(this.client, addr);
      const timer = setTimeout(() => {
        sock.destroy();
        reject(new Error(`connect to ${addr.path || `${addr.host}:${addr.port}`} timed out`));
      }, this.client.connectTimeout);
      const onErr = (e) => {
        clearTimeout(timer);
        reject(e);
      };
      sock.once('error', onErr);
      sock.once(ev, () => {
        clearTimeout(timer);
        sock.removeListener('error', onErr);
        if (this.state === 'dead') {
          sock.destroy(); // given up while connecting
          reject(new LockdConnectionError('session ended'));
          return;
        }
        if (!addr.path) sock.setNoDelay(true);
        this.attach(sock);
        resolve();
      });
    });
  }

  attach(sock) {
    this.sock = sock;
    this.buf = '';
    sock.setEncoding('latin1');
    sock.on('data', (d) => {
      if (sock !== this.sock) return;
      this.buf += d;
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        let line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        if (line.endsWith('\r')) line = line.slice(0, -1);
        this.line(line);
        if (sock !== this.sock) return;
      }
    });
    sock.on('error', () => {});
    sock.on('close', () => {
      if (sock === this.sock) this.broken();
    });
  }

  line(line) {
    const sp = line.indexOf(' ');
    const word = sp < 0 ? line : line.slice(0, sp);
    if (EVENTS.has(word)) {
      this.event(word, line);
      return;
    }
    const p = this.pending[0];
    if (!p) return; // nothing asked: not ours to answer
    let result = line;
    if (p.multi && !(line.startsWith('ERR ') && p.lines.length === 0)) {
      if (line !== 'END') {
        p.lines.push(line);
        return;
      }
      result = p.lines;
    }
    this.pending.shift();
    if (p.kind && this.sid !== null && line.startsWith('ERR SHUTDOWN')) {
      // lockd stops and closes this connection next; the session resumes
      // elsewhere, where this wait is sent again
      this.retry.push(p);
      return;
    }
    if (p.kind && line.startsWith('OK ')) {
      this.heldKey = p.key; // LOST may follow before the holder exists
      this.earlyLost = false;
    }
    p.resolve(p.timed ? { reply: result, sentAt: p.sentAt } : result);
  }

  event(word, line) {
    const w = line.split(' ');
    if (word === 'LOST' && w.length >= 3) {
      if (this.holder && this.holder.key === w[1]) this.holder._markLost(`lockd sent ${line}`);
      else if (this.heldKey === w[1]) this.earlyLost = true;
    } else if (w.length >= 2) {
      const obs = this.observers.get(w[1]);
      if (!obs) return;
      if (word === 'ELECTED' && w.length >= 3) obs._push({ fence: BigInt(w[2]), value: w.length > 3 ? w[3] : null });
      else obs._push(null);
    }
  }

  /** Send one request; a promise of its reply line (or lines). now: send
   * it on a connection being reopened (the resume's own calls). timed:
   * resolve with { reply, sentAt } (when the request last went out).
   * replay false: a break fails it instead of sending it again. */
  call(line, { multi = false, kind = null, key = null, deadline = null, now = false, timed = false, replay = true } = {}) {
    return new Promise((resolve, reject) => {
      if (this.state === 'dead') {
        reject(new LockdConnectionError('session ended'));
        return;
      }
      const p = { line, multi, lines: [], kind, key, deadline, timed, replay, sentAt: 0, resolve, reject, done: false };
      const wrap = (f) => (v) => {
        if (!p.done) {
          p.done = true;
          f(v);
        }
      };
      p.resolve = wrap(resolve);
      p.reject = wrap(reject);
      if (this.state === 'resuming' || (this.state === 'reopening' && !now)) {
        if (replay) this.backlog.push(p);
        else p.reject(new LockdConnectionError('the session is resuming'));
      } else this.send(p);
    });
  }

  send(p) {
    p.sentAt = now();
    this.pending.push(p);
    this.sock.write(`${p.line}\r\n`, 'latin1');
  }

  broken() {
    if (this.state === 'reopening') {
      // the new connection broke during the resume: fail its own calls
      const ps = this.pending;
      this.pending = [];
      for (const p of ps) p.reject(new LockdConnectionError('connection lost while resuming'));
      return;
    }
    if (this.state !== 'open') return;
    this.dropSock(false);
    if ((this.sid !== null || this.observers.size > 0) && !this.client.closed) {
      this.state = 'resuming';
      const again = [];
      for (const p of [...this.retry, ...this.pending, ...this.backlog]) {
        if (p.replay) again.push(p);
        else p.reject(new LockdConnectionError('connection lost'));
      }
      this.backlog = again;
      this.retry = [];
      this.pending = [];
      (this.sid !== null ? this.resume() : this.reobserve()).catch((e) => this.die(String(e)));
    } else {
      this.die('connection to lockd lost');
    }
  }

  /** Let go of the socket. polite: QUIT first, so that lockd ends the
   * session and releases what it holds; closing alone would only detach a
   * resumable session, which keeps its holds for its grace. The QUIT goes
   * out ahead of the connection's end, and a frozen lockd reads it once it
   * runs again. */
  dropSock(polite) {
    const s = this.sock;
    this.sock = null; // its close event is no longer a break of the session
    if (!s) return;
    if (polite && s.writable && !s.destroyed) {
      s.write('QUIT\r\n', 'latin1');
      s.end();
      s.unref();
      setTimeout(() => s.destroy(), QUIT_LINGER_MS).unref();
    } else {
      s.destroy();
    }
  }

  /** The session is over: fail what waits, lose what is held. polite:
   * end it with QUIT (see dropSock). */
  die(why, polite = false) {
    if (this.state === 'dead') return;
    this.state = 'dead';
    this.dropSock(polite);
    const waiting = [...this.retry, ...this.pending, ...this.backlog];
    this.retry = [];
    this.pending = [];
    this.backlog = [];
    for (const p of waiting) p.reject(new LockdConnectionError(why));
    if (this.holder) this.holder._markLost(why);
    for (const o of [...this.observers.values()]) o._fail(new LockdConnectionError(why));
    this.client._forget(this);
  }

  failAttempt() {
    if (this.state === 'dead') return;
    this.state = 'resuming';
    this.dropSock(false);
    const ps = this.pending;
    this.pending = [];
    for (const p of ps) p.reject(new LockdConnectionError('resume attempt failed'));
  }

  /** Connect again (the same lockd first, then the others) and RESUME the
   * session within its grace; then send again what was not answered. The
   * holder's local deadline runs on while this tries: a resume that takes
   * too long reports the hold lost at its deadline, not at the end of the
   * grace. A session given up meanwhile (close) is dead: this stops, and
   * the client ends the session on a connection of its own (close). */
  async resume() {
    const deadline = now() + Math.max(this.graceMs, 1000);
    const addrs = this.client.addresses;
    let delay = 50;
    for (let attempt = 0; !this.client.closed && this.state === 'resuming'; attempt++) {
      const idx = (this.addrIndex + attempt) % addrs.length;
      try {
        this.state = 'reopening';
        await this.dial(addrs[idx]);
        if (this.client.password != null) check(await this.call(`AUTH ${this.client.password}`, { now: true }));
        const r = await this.call(`RESUME ${this.sid} ${this.secret}`, { now: true });
        if (r.startsWith('ERR NOSESSION')) {
          this.die(`session not resumable: ${r}`);
          return;
        }
        check(r);
        this.addrIndex = idx;
        const { reply: lines, sentAt } = await this.call('HELD', { multi: true, now: true, timed: true });
        const held = new Map();
        for (const ln of lines) {
          const w = ln.split(' ');
          if (w[0] === 'KEY' && w.length >= 5) held.set(w[1], { fence: w[2], ttl: Number(w[4]) });
        }
        this.state = 'open';
        if (this.holder) this.holder._confirmHeld(held, sentAt);
        this.replay(held);
        return;
      } catch (e) {
        this.failAttempt();
        if (now() >= deadline) {
          this.die(`could not resume the session: ${e.message}`);
          return;
        }
        if ((attempt + 1) % addrs.length === 0) {
          await sleep(delay);
          delay = Math.min(delay * 2, 250); // short: the local deadline runs
        }
      }
    }
    if (this.state !== 'open') this.die('client closed');
  }

  replay(held) {
    const todo = this.backlog;
    this.backlog = [];
    for (const p of todo) {
      if (p.done) continue;
      if (p.kind === 'LOCK' && held.has(p.key)) {
        // granted before the break, reply lost: answer from HELD
        this.heldKey = p.key;
        p.resolve(`OK ${held.get(p.key).fence}`);
        continue;
      }
      p.replays = (p.replays ?? 0) + 1;
      if (p.replays > MAX_REPLAYS) {
        p.reject(new LockdConnectionError(`the connection broke ${MAX_REPLAYS + 1} times under ${p.line.split(' ')[0]}`));
        continue;
      }
      if (p.deadline !== null) {
        const left = Math.max(0, Math.round(p.deadline - now()));
        p.line = p.line.replace(/ WAIT \d+/, ` WAIT ${left}`);
      }
      this.send(p);
    }
  }

  /** An observe connection has no session to resume: connect again and
   * OBSERVE every name again. */
  async reobserve() {
    const deadline = now() + 30000;
    let delay = 50;
    while (!this.client.closed && this.state === 'resuming') {
      try {
        this.state = 'reopening';
        await this.dialAny(this.addrIndex);
        if (this.client.password != null) check(await this.call(`AUTH ${this.client.password}`, { now: true }));
        for (const name of this.observers.keys()) check(await this.call(`OBSERVE ${name}`, { now: true }));
        this.state = 'open';
        const todo = this.backlog;
        this.backlog = [];
        for (const p of todo) if (!p.done) this.send(p);
        return;
      } catch (e) {
        this.failAttempt();
        if (now() >= deadline) {
          this.die(`could not observe again: ${e.message}`);
          return;
        }
        await sleep(delay);
        delay = Math.min(delay * 2, 1000);
      }
    }
  }

  /** End the session (lockd releases what it held): QUIT, then close,
   * never a bare close, which only detaches a resumable session. Where
   * that QUIT cannot end it, the client also ends it on a new connection
   * (RESUME, then QUIT: Client._endSession), in the background, after the
   * holder was told: a session that is resuming (its QUIT goes nowhere, or
   * behind a RESUME that may never be answered), one where a LOCK waits
   * (lockd drops the QUIT queued behind it when the connection ends, so
   * the session is only detached), and, with elsewhere, one whose lockd
   * may not be answering (a hold's lease went unconfirmed). Either way
   * lockd releases the holds now, not when the grace runs out. Waiting
   * requests fail now. */
  close(why = 'connection closed by the client', elsewhere = false) {
    if (this.state === 'dead') return;
    const { sid, secret } = this;
    this.sid = null; // a deliberate close is never resumed
    const endThere = sid !== null && (elsewhere || this.state !== 'open' || this.pending.some((p) => p.kind));
    this.die(why, true);
    if (endThere) this.client._spawnEnd(sid, secret, this.addrIndex, this.graceMs);
  }

  /** End the session politely, waiting (a second at most) for QUIT's OK.
   * Without it (no answer in time, the connection broke first) lockd may
   * never have read the QUIT: the session may live on, attached to a
   * connection lockd has not seen die or detached, for its grace; so it
   * is ended on a new connection too (see close). A session whose QUIT
   * would wait behind a LOCK is closed at once. */
  async quit() {
    if (this.state === 'open' && !this.pending.some((p) => p.kind)) {
      const { sid, secret } = this;
      this.sid = null;
      this.sock?.ref(); // an idle session's socket is unref'd: wait for the OK
      let r = null;
      try {
        r = await Promise.race([this.call('QUIT'), sleep(1000, true)]);
      } catch {
        // closing anyway
      }
      const s = this.sock;
      this.sock = null; // QUIT was sent: no second one
      s?.destroy();
      this.close();
      if (r !== 'OK' && sid !== null) this.client._spawnEnd(sid, secret, this.addrIndex, this.graceMs);
      return;
    }
    this.close();
  }
}

function check(r) {
  if (typeof r === 'string' && r.startsWith('ERR ')) throw fromReply(r);
  return r;
}

function sleep(ms, unref = false) {
  return new Promise((r) => {
    const t = setTimeout(r, ms);
    if (unref) t.unref();
  });
}

/** The KEY line of key in a HELD reply: { fence (bigint), ttl (ms) }, or
 * null when the session does not hold key. */
function heldLine(lines, key) {
  for (const ln of lines) {
    const w = ln.split(' ');
    if (w[0] === 'KEY' && w[1] === key && w.length >= 5) return { fence: BigInt(w[2]), ttl: Number(w[4]) };
  }
  return null;
}

/** A timed HELD answer ({ reply, sentAt }) as the start of key's local
 * deadline: { sentAt, ttl }, or null when it does not list key (fence). */
function measured(res, key, fence) {
  if (!res || typeof res.reply === 'string') return null;
  const h = heldLine(res.reply, key);
  return h && h.fence === fence ? { sentAt: res.sentAt, ttl: h.ttl } : null;
}

/** A granted lock, shared hold or permit. fence is a bigint; signal is an
 * AbortSignal aborted with a LockLostError as soon as the hold is lost:
 * on lockd's LOST, on the end of its session, and before the lease that
 * lockd last confirmed runs out (the local deadline, see the top). */
class Lock {
  constructor(client, conn, key, fence, onLost) {
    this._client = client;
    this._conn = conn;
    this.key = key;
    this.fence = fence;
    this.released = false;
    this._releasing = null; // release()'s promise, once called
    this._ac = new AbortController();
    this._onLost = onLost;
    // The local deadline: monotonic ms before which the hold is surely
    // held (Infinity while the heartbeat is off or nothing confirmed it),
    // the send time of the request that set it, and how long before it
    // the loss is reported.
    this._deadline = Infinity;
    this._confirmedAt = -Infinity;
    this._lease = 0; // the longest ttl lockd reported: lockd's drift and our margin scale with the lease, not the time left
    this._lossTimer = null;
    this._beatTimer = null;
    this._beating = false; // a heartbeat HELD is in flight
    this._fixed = false; // a ttl lock: only EXTEND moves its lease's end, a heartbeat never
    conn.holder = this;
    if (conn.earlyLost) this._markLost('lockd sent LOST right after the grant');
  }

  /** Aborted (with a LockLostError as its reason) once the hold is lost. */
  get signal() {
    return this._ac.signal;
  }

  get lost() {
    return this._ac.signal.aborted;
  }

  /** lockd said, in answer to a request sent at sentAt (monotonic ms),
   * that ttl ms were left on the hold's lease: held surely until sentAt +
   * ttl less lockd's drift margin (1 % of the lease + 2 ms), since lockd
   * measured the ttl after that send. An answer to an older request
   * changes nothing. */
  _confirm(sentAt, ttl) {
    if (!this._client.heartbeat || this.released || this.lost || sentAt < this._confirmedAt) return;
    this._confirmedAt = sentAt;
    this._lease = Math.max(this._lease, ttl);
    this._deadline = sentAt + ttl - this._lease / 100 - 2;
    clearTimeout(this._lossTimer);
    this._lossTimer = setTimeout(() => this._expire(), Math.max(0, this._fireAt() - now()));
    this._lossTimer.unref();
    if (!this._beating && !this._releasing && !this._fixed) this._schedule();
  }

  /** The HELD of a resume (sent at sentAt): the hold is listed or gone. */
  _confirmHeld(held, sentAt) {
    const h = held.get(this.key);
    if (h && BigInt(h.fence) === this.fence) this._confirm(sentAt, h.ttl);
    else this._markLost(`lockd no longer lists ${this.key} as held by the resumed session`);
  }

  /** When the loss is reported: a margin before the deadline. */
  _fireAt() {
    return this._deadline - Math.min(LOSS_MARGIN_MS, this._lease / 10);
  }

  /** The next heartbeat: at a third of the time left, so that a healthy
   * lockd confirms the hold twice more before its deadline. */
  _schedule() {
    clearTimeout(this._beatTimer);
    const left = this._fireAt() - now();
    this._beatTimer = setTimeout(() => this._beat(), Math.max(HEARTBEAT_MIN_MS, left / 3));
    this._beatTimer.unref();
  }

  async _beat() {
    this._beatTimer = null;
    const conn = this._conn;
    if (this.released || this.lost || this._releasing || conn.state !== 'open') return; // a resume confirms
    this._beating = true;
    try {
      const { reply, sentAt } = await conn.call('HELD', { multi: true, timed: true, replay: false });
      if (this.released || this.lost || this._releasing || typeof reply === 'string') return; // ERR: the deadline stands
      const h = heldLine(reply, this.key);
      if (h && h.fence === this.fence) this._confirm(sentAt, h.ttl);
      else this._markLost(`lockd no longer lists ${this.key} as held by this session`);
    } catch {
      // the connection broke: the resume confirms, or the session dies
    } finally {
      this._beating = false;
    }
    if (!this.released && !this.lost && !this._releasing && !this._fixed && !this._beatTimer && conn.state === 'open') this._schedule();
  }

  _expire() {
    const early = this._fireAt() - now();
    if (early > 1) {
      this._lossTimer = setTimeout(() => this._expire(), early);
      this._lossTimer.unref();
      return;
    }
    const ago = Math.round(now() - this._confirmedAt);
    const left = Math.round(this._deadline - now());
    // lockd may still hold it (frozen, unreachable): end the session
    this._markLost(`the lease lockd last confirmed (to a request sent ${ago} ms ago) ends in ${left} ms`, true);
  }

  _stop() {
    clearTimeout(this._lossTimer);
    clearTimeout(this._beatTimer);
    this._lossTimer = null;
    this._beatTimer = null;
  }

  /** Report the loss: abort the signal, call onLost. endSession: the
   * session may still hold the key (only the local deadline passed), so
   * it is ended with QUIT and never used again. */
  _markLost(why, endSession = false) {
    if (this.released || this.lost) return;
    this._stop();
    const err = new LockLostError(`${this.key} (fence ${this.fence}): ${why}`);
    this._ac.abort(err);
    if (this._onLost) {
      try {
        this._onLost(err, this);
      } catch (e) {
        queueMicrotask(() => {
          throw e;
        });
      }
    }
    // a ttl hold lapses on the masters at its ttl whatever lockd does: QUIT
    // is enough; a renewed one may go on being renewed by a lockd that
    // no longer answers us, so the session is ended on any that answers
    if (endSession) this._conn.close(why, !this._fixed);
  }

  /** Throws the LockLostError once the hold is lost. */
  check() {
    if (this.lost) throw this.signal.reason;
  }

  /** A new lease of ms for a lock taken with ttl. */
  async extend(ms) {
    checkMs(ms, 'ttl', 1);
    this.check();
    const { reply, sentAt } = await this._conn.call(`EXTEND ${this.key} ${ms}`, { timed: true });
    check(reply);
    this._confirm(sentAt, ms);
  }

  _unlockLine() {
    return `UNLOCK ${this.key}`;
  }

  /** Release the hold. Resolves once lockd released it; rejects with the
   * LockLostError when the hold was lost before (a release in finally
   * learns of the loss), every time it is called. A release no majority
   * confirmed (ERR QUORUM) still ends the hold; the key lapses within one
   * lease on the masters that did not confirm. */
  release() {
    if (!this._releasing) this._releasing = this._release();
    return this._releasing;
  }

  async _release() {
    clearTimeout(this._beatTimer); // the local deadline still runs: a frozen lockd ends the wait
    const conn = this._conn;
    if (!this.lost && conn.state !== 'dead') {
      let r = null;
      try {
        r = await conn.call(this._unlockLine());
      } catch (e) {
        if (!(e instanceof LockdConnectionError)) throw e;
        // the session ended under the UNLOCK, and the hold with it (lost)
      }
      if (r !== null && /^ERR (NOTHELD|NOTLEADER)/.test(r)) {
        this._markLost(`lockd answered ${r} to the release`);
      } else if (r !== null && r.startsWith('ERR ') && !r.startsWith('ERR QUORUM')) {
        this._done();
        conn.close(); // state unknown: ending the session releases
        throw fromReply(r);
      }
    }
    this._done();
    this.check();
  }

  _done() {
    this.released = true;
    this._stop();
    const conn = this._conn;
    conn.holder = null;
    conn.heldKey = null;
    this._client._checkin(conn);
  }
}

/** A won election (protocol 1.3): the election's lock, with a value. */
class Leadership extends Lock {
  constructor(client, conn, name, fence, value, onLost) {
    super(client, conn, name, fence, onLost);
    this.name = name;
    this.value = value;
  }

  async proclaim(value) {
    checkWord(value, 'value', this._client.maxLen);
    this.check();
    check(await this._conn.call(`PROCLAIM ${this.name} ${value}`));
    this.value = value;
  }

  resign() {
    return this.release();
  }

  _unlockLine() {
    return `RESIGN ${this.name}`;
  }
}

/** An async iterable of {fence, value} or null (no leader) for one
 * election, on a connection of its own; the current state comes first. */
class Observer {
  constructor(client, name) {
    this._client = client;
    this.name = name;
    this._items = [];
    this._waiters = [];
    this._conn = null;
    this.closed = false;
  }

  async _start() {
    const conn = new Conn(this._client);
    this._client._all.add(conn);
    try {
      await conn.open(false);
      conn.observers.set(this.name, this);
      this._conn = conn;
      check(await conn.call(`OBSERVE ${this.name}`));
    } catch (e) {
      conn.close();
      throw e;
    }
    return this;
  }

  _push(item) {
    const w = this._waiters.shift();
    if (w) w(item);
    else this._items.push(item);
  }

  _fail(err) {
    if (!this.closed) this._push(err);
  }

  /** The next event: {fence, value} or null. */
  async next() {
    if (this.closed && this._items.length === 0) return { done: true, value: undefined };
    const item = this._items.length ? this._items.shift() : await new Promise((r) => this._waiters.push(r));
    if (item instanceof Error) {
      this.closed = true;
      throw item;
    }
    if (item === Observer.END) return { done: true, value: undefined };
    return { done: false, value: item };
  }

  async return() {
    await this.close();
    return { done: true, value: undefined };
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    for (const w of this._waiters.splice(0)) w(Observer.END);
    if (this._conn) {
      this._conn.observers.delete(this.name);
      await this._conn.quit();
    }
  }
}
Observer.END = Symbol('end');

/** A lockd client. Create it with Client.connect(). */
class Client {
  /**
   * @param {string|string[]|object} addresses "host:port", "unix:/path",
   *   "h1:p,h2:p" (failover), an array, or { addresses, password, tls, ... }
   * @param {object} [opts] password, tls (true or tls.connect options),
   *   resume (default true), heartbeat (default true), graceMs, maxIdle
   *   (16), maxLen (256), connectTimeout (ms, 5000); any other name is
   *   refused
   */
  constructor(addresses = '127.0.0.1:7390', opts = {}) {
    if (addresses && typeof addresses === 'object' && !Array.isArray(addresses)) {
      if (opts && Object.keys(opts).length) throw new InvalidArgumentError('options given twice (in the first argument and the second)');
      opts = addresses;
      addresses = opts.addresses ?? '127.0.0.1:7390';
    } else if (opts && opts.addresses !== undefined) {
      throw new InvalidArgumentError('addresses given twice (as the first argument and as an option)');
    }
    opts = checkOpts(opts, CLIENT_OPTS, 'Client');
    this.addresses = parseAddresses(addresses);
    this.password = opts.password ?? null;
    if (this.password !== null) checkWord(this.password, 'password', 1024);
    this.tls = opts.tls ?? null;
    if (this.tls !== null && this.tls !== true && this.tls !== false && typeof this.tls !== 'object') {
      throw new InvalidArgumentError('tls must be true or an object of tls.connect options');
    }
    if (this.tls === false) this.tls = null;
    this.resume = checkType(opts.resume, 'boolean', 'resume') ?? true;
    // the local deadline and its heartbeat (off: only LOST and a lost
    // session report a loss, as in versions before it; for measurements)
    this.heartbeat = checkType(opts.heartbeat, 'boolean', 'heartbeat') ?? true;
    this.graceMs = opts.graceMs != null ? checkMs(opts.graceMs, 'graceMs', 1) : null;
    this.maxIdle = opts.maxIdle != null ? checkMs(opts.maxIdle, 'maxIdle', 0) : 16;
    this.maxLen = opts.maxLen != null ? checkMs(opts.maxLen, 'maxLen', 1) : 256;
    this.connectTimeout = opts.connectTimeout != null ? checkMs(opts.connectTimeout, 'connectTimeout', 1) : 5000;
    this.prefer = 0;
    this.closed = false;
    this._idle = [];
    this._all = new Set();
    this._ending = new Set(); // _endSession()s under way
  }

  /** A client whose first session is open (so a wrong address fails here). */
  static async connect(addresses, opts) {
    const c = new Client(addresses, opts);
    c._checkin(await c._checkout());
    return c;
  }

  async _checkout() {
    if (this.closed) throw new LockdConnectionError('client closed');
    while (this._idle.length) {
      const c = this._idle.pop();
      if (c.usable) {
        c.sock?.ref();
        return c;
      }
    }
    const c = new Conn(this);
    this._all.add(c);
    try {
      return await c.open(this.resume);
    } catch (e) {
      c.close();
      throw e;
    }
  }

  _checkin(conn) {
    if (conn.usable && !conn.holder && !this.closed && this._idle.length < this.maxIdle) {
      conn.sock?.unref(); // an idle session does not keep the process alive
      this._idle.push(conn);
    } else if (conn.state !== 'dead') conn.close();
  }

  _forget(conn) {
    this._all.delete(conn);
    const i = this._idle.indexOf(conn);
    if (i >= 0) this._idle.splice(i, 1);
  }

  /** End a session that its own connection could not end (Conn.close),
   * in the background: close() waits for it, a while. */
  _spawnEnd(sid, secret, start, graceMs) {
    const p = this._endSession(sid, secret, start, graceMs)
      .catch(() => {}) // best effort: at worst lockd ends it at the grace's end
      .finally(() => this._ending.delete(p));
    this._ending.add(p);
  }

  /** RESUME the session on a new connection and QUIT it there at once, so
   * that lockd releases its holds now rather than at the end of its grace.
   * The session's lockd first, then the others; again while lockd answers
   * ERR QUORUM or nothing, until the grace has passed (after it no lockd
   * keeps the session: nothing is left to end). A RESUME wins over the
   * session's old connection (lockd closes it); ERR NOSESSION means it
   * already ended. */
  async _endSession(sid, secret, start, graceMs) {
    let data = `RESUME ${sid} ${secret}\r\nQUIT\r\n`;
    if (this.password != null) data = `AUTH ${this.password}\r\n${data}`;
    const n = this.addresses.length;
    const end = now() + Math.max(graceMs, 1000);
    let delay = 50;
    for (let i = 1; ; i++) {
      const left = end - now();
      const answer = await this._endOn(this.addresses[(start + i - 1) % n], data, Math.max(1, Math.min(this.connectTimeout, left)));
      if (answer !== null && !answer.startsWith('ERR QUORUM')) return; // ended, or gone
      if (now() >= end) return;
      if (i % n === 0) {
        await sleep(delay, true);
        delay = Math.min(delay * 2, 500);
      }
    }
  }

  /** One try of _endSession on addr, within ms: resolves (never rejects)
   * with RESUME's answer once lockd closed the connection after the QUIT
   * (so that lockd has ended the session when close() returns), or null
   * (no answer, refused, broken). Nothing of it keeps the process alive:
   * close() does, for as long as it waits. */
  _endOn(addr, data, ms) {
    return new Promise((resolve) => {
      let answer = null;
      let skip = this.password != null ? 1 : 0; // AUTH's answer
      let buf = '';
      let sock;
      let ready;
      try {
        ({ sock, ready } = openSocket(this, addr));
      } catch {
        resolve(null); // tls options it refuses, say: the next try fails alike, within the bound
        return;
      }
      const timer = setTimeout(() => sock.destroy(), ms);
      timer.unref();
      sock.unref();
      sock.setEncoding('latin1');
      sock.on('error', () => {});
      sock.once(ready, () => sock.write(data, 'latin1'));
      sock.on('data', (d) => {
        buf += d;
        let j;
        while (answer === null && (j = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, j).replace(/\r$/, '');
          buf = buf.slice(j + 1);
          if (EVENTS.has(line.split(' ', 1)[0])) continue;
          if (skip > 0) skip--;
          else answer = line;
        }
      });
      sock.on('close', () => {
        clearTimeout(timer);
        resolve(answer);
      });
    });
  }

  async _simple(line, multi = false) {
    const conn = await this._checkout();
    const r = await conn.call(line, { multi });
    this._checkin(conn);
    return check(r);
  }

  _lockLine(cmd, key, o) {
    checkWord(key, 'key', this.maxLen);
    checkType(o.shared, 'boolean', 'shared');
    checkType(o.onLost, 'function', 'onLost');
    checkSignal(o.signal);
    const parts = [cmd, key];
    if (o.shared && o.permits != null) throw new InvalidArgumentError('shared and permits exclude each other');
    if (o.shared) parts.push('SHARED');
    if (o.permits != null) parts.push('PERMITS', String(checkMs(o.permits, 'permits', 1)));
    if (o.wait != null) parts.push('WAIT', String(checkMs(o.wait, 'wait', 0)));
    if (o.ttl != null) parts.push('TTL', String(checkMs(o.ttl, 'ttl', 1)));
    return parts.join(' ');
  }

  /**
   * Wait for the lock: { wait (ms; default without limit), ttl (ms),
   * shared, permits, signal (abort the wait), onLost(err, lock) }.
   * Rejects with LockTimeoutError when the wait passed.
   */
  async acquire(key, opts = {}) {
    opts = checkOpts(opts, ACQUIRE_OPTS, 'acquire');
    const line = this._lockLine('LOCK', key, opts);
    return this._acquire(key, line, opts, false);
  }

  /** One attempt: a Lock, or null when the key is busy. */
  async tryAcquire(key, opts = {}) {
    opts = checkOpts(opts, TRY_OPTS, 'tryAcquire', TRY_HINTS);
    const line = this._lockLine('TRYLOCK', key, opts);
    return this._acquire(key, line, opts, true);
  }

  /** Send the LOCK (TRYLOCK, CAMPAIGN) with a HELD pipelined behind it:
   * lockd answers the HELD right after the grant, and its ttl starts the
   * hold's local deadline at no extra round trip. A grant that waited
   * (that HELD went out long before lockd measured it) is confirmed by one
   * more HELD before it is handed out. An abort, at any moment until the
   * Lock is returned, ends the session with QUIT: lockd drops a waiter
   * whose session ends, and releases a grant it made before the QUIT, so
   * nothing stays held (a bare close would only detach the session). */
  async _acquire(key, line, opts, busyOk, kind = 'LOCK', make = null) {
    const { signal } = opts;
    signal?.throwIfAborted();
    const conn = await this._checkout();
    if (signal?.aborted) {
      this._checkin(conn);
      throw signal.reason;
    }
    const deadline = opts.wait != null ? now() + opts.wait : null;
    const onAbort = () => conn.close('acquire aborted');
    signal?.addEventListener('abort', onAbort, { once: true });
    let r;
    let m = null; // { sentAt, ttl } that starts the local deadline
    let unconfirmed = null; // why the grant could not be confirmed
    try {
      const sock = conn.sock;
      sock?.cork(); // one write (one segment) for both
      const granted = conn.call(line, { kind, key, deadline });
      const heldP = this.heartbeat ? conn.call('HELD', { multi: true, timed: true }) : null;
      sock?.uncork();
      heldP?.catch(() => {});
      r = await granted;
      const first = heldP ? await heldP.catch(() => null) : null;
      if (r.startsWith('OK ') && heldP) {
        const fence = BigInt(r.split(' ')[1]);
        m = measured(first, key, fence);
        if (!m || m.sentAt + m.ttl * 0.99 - 2 - now() < m.ttl / 2) {
          // the grant waited, or lockd answered that HELD before it (ERR
          // SHUTDOWN, then a resume): ask again, now
          const again = conn.call('HELD', { multi: true, timed: true });
          again.catch(() => {});
          const bound = m ? m.ttl : this.connectTimeout;
          const res = await Promise.race([again, sleep(bound, true).then(() => 'late')]);
          if (res === 'late') {
            m = null;
            unconfirmed = `lockd did not confirm the grant within ${bound} ms`;
          } else {
            m = measured(res, key, fence);
            if (!m) unconfirmed = `lockd does not list ${key} right after granting it`;
          }
        }
      }
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      throw e;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    if (signal?.aborted) throw signal.reason; // aborted as it was granted: the QUIT releases it
    if (r.startsWith('OK ')) {
      const fence = BigInt(r.split(' ')[1]);
      const lock = make ? make(conn, fence) : new Lock(this, conn, key, fence, opts.onLost);
      lock._fixed = opts.ttl != null;
      if (conn.state === 'dead') lock._markLost('the session ended right after the grant');
      else if (m) lock._confirm(m.sentAt, m.ttl);
      else if (unconfirmed) lock._markLost(unconfirmed, true);
      return lock;
    }
    conn.heldKey = null;
    this._checkin(conn);
    if (r === 'TIMEOUT') throw new LockTimeoutError(`${key}: wait passed`);
    if (r === 'BUSY' && busyOk) return null;
    throw replyError(r);
  }

  /**
   * Hold the lock while fn(signal, lock) runs; release it in every case.
   * signal is aborted with a LockLostError as soon as the lock is lost;
   * using() then rejects with it even when fn resolved.
   */
  async using(key, opts, fn) {
    if (typeof opts === 'function') {
      fn = opts;
      opts = {};
    }
    if (typeof fn !== 'function') throw new InvalidArgumentError('using(key, opts, fn): fn must be a function');
    const lock = await this.acquire(key, opts);
    let result;
    try {
      result = await fn(lock.signal, lock);
    } catch (e) {
      await lock.release().catch(() => {});
      throw e;
    }
    await lock.release(); // rejects with the LockLostError when it was lost
    return result;
  }

  /** The key's state: { state: 'FREE'|'HELD'|'SHARED'|'PERMITS', ttlMs,
   * waiters, holders, held, permits } (the fields its reply carries). */
  async status(key, opts = {}) {
    const { permits } = checkOpts(opts, STATUS_OPTS, 'status');
    checkWord(key, 'key', this.maxLen);
    let line = `STATUS ${key}`;
    if (permits != null) line += ` PERMITS ${checkMs(permits, 'permits', 1)}`;
    const w = (await this._simple(line)).split(' ');
    const n = (i) => Number(w[i]);
    switch (w[0]) {
      case 'FREE':
        return { state: 'FREE' };
      case 'HELD':
        return { state: 'HELD', ttlMs: n(1), waiters: n(2) };
      case 'SHARED':
        return { state: 'SHARED', holders: n(1), ttlMs: n(2), waiters: n(3) };
      case 'PERMITS':
        return { state: 'PERMITS', held: n(1), permits: n(2), waiters: n(3) };
      default:
        throw replyError(w.join(' '));
    }
  }

  async ping() {
    return (await this._simple('PING')) === 'PONG';
  }

  /** lockd's STATS as an object of name -> string. */
  async stats() {
    const out = {};
    for (const ln of await this._simple('STATS', true)) {
      const w = ln.split(' ');
      if (w.length >= 3) out[w[1]] = w.slice(2).join(' ');
    }
    return out;
  }

  /** Who holds key (1.4): { holders, delayed } (who.cjs says the fields).
   * Rejects with QuorumError when no majority of the masters answered.
   * { signal }: an abort rejects at once with its reason; the session is
   * kept, and pooled again once lockd's reply has been read. */
  async who(key, opts = {}) {
    const { signal } = checkOpts(opts, WHO_OPTS, 'who');
    checkSignal(signal);
    checkWord(key, 'key', this.maxLen);
    signal?.throwIfAborted();
    const asked = this._simple(`WHO ${key}`, true);
    if (!signal) return parseWho(await asked);
    asked.catch(() => {}); // an abort leaves it to finish alone
    let onAbort;
    const aborted = new Promise((_, reject) => {
      onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return parseWho(await Promise.race([asked, aborted]));
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** Wait to lead the election (1.3): { wait (ms), signal, onLost }. */
  async campaign(name, value, opts = {}) {
    opts = checkOpts(opts, CAMPAIGN_OPTS, 'campaign');
    checkType(opts.onLost, 'function', 'onLost');
    checkSignal(opts.signal);
    checkWord(name, 'name', this.maxLen);
    checkWord(value, 'value', this.maxLen);
    let line = `CAMPAIGN ${name} ${value}`;
    if (opts.wait != null) line += ` WAIT ${checkMs(opts.wait, 'wait', 0)}`;
    return this._acquire(name, line, opts, false, 'CAMPAIGN', (conn, fence) => new Leadership(this, conn, name, fence, value, opts.onLost));
  }

  /** { fence, value } of the leader (value null when a plain lock holds
   * the name), or null when nobody leads. */
  async leader(name) {
    checkWord(name, 'name', this.maxLen);
    const r = await this._simple(`LEADER ${name}`);
    if (r === 'NONE') return null;
    const w = r.split(' ');
    if (w[0] !== 'LEADER' || w.length < 2) throw replyError(r);
    return { fence: BigInt(w[1]), value: w.length > 2 ? w[2] : null };
  }

  /** An Observer: for await (const e of c.observe(name)), e being
   * { fence, value } or null (no leader). */
  observe(name) {
    checkWord(name, 'name', this.maxLen);
    if (this.closed) throw new LockdConnectionError('client closed');
    const obs = new Observer(this, name);
    const started = obs._start();
    // usable both as `await c.observe(n)` and directly in `for await`
    const it = {
      [Symbol.asyncIterator]: () => ({
        next: async () => {
          await started;
          return obs.next();
        },
        return: () => obs.return(),
      }),
      then: (res, rej) => started.then(res, rej),
      close: async () => {
        await started.catch(() => {});
        return obs.close();
      },
    };
    return it;
  }

  /** End every session (lockd releases their holds). Every hold is
   * reported ended before the sessions that their connection could not
   * end are ended on new ones (Conn.close); close() waits for those, at
   * most connectTimeout: its timer keeps the process alive meanwhile (an
   * exit would leave them to the grace), and after it they go on only
   * while the process lives, never past the grace. */
  async close() {
    this.closed = true;
    this._idle = [];
    await Promise.allSettled([...this._all].map((c) => c.quit()));
    if (this._ending.size === 0) return;
    let timer;
    await Promise.race([Promise.allSettled([...this._ending]), new Promise((r) => (timer = setTimeout(r, this.connectTimeout)))]);
    clearTimeout(timer);
  }
}

module.exports = {
  Client,
  Lock,
  Leadership,
  Observer,
  LockdError,
  LockTimeoutError,
  QuorumError,
  LockLostError,
  LockdConnectionError,
  InvalidArgumentError,
  default: Client,
};
