"""lockd.aio: the asyncio client, and the engine under the sync client.

Model: one lockd session (one connection) per concurrent holder. A lock,
a shared hold, a permit or a leadership owns its session from grant to
release; idle sessions are pooled and reused, so an uncontended
lock/unlock costs two round trips and no connect. Why not one shared
connection: lockd answers requests in order and queues every request
behind a waiting LOCK, so two waiters on one connection would wait for
each other (and an UNLOCK would wait behind someone else's LOCK); and
lockd's reentrancy is per session, so two tasks sharing a session would
both be granted the same key. One session per holder makes two tasks of
one process exclude each other exactly as two processes do.

Each connection has one reader task. A line whose first word is LOST,
ELECTED or NOLEADER is an event; any other line answers the oldest
unanswered request. Sessions are resumable (protocol 1.2) when lockd
speaks it: a broken connection is re-established (the same lockd first,
then the others) and the session resumed within its grace, requests in
flight are sent again, and only a hold lockd reports lost is lost. A
lockd that does not know SESSION (ERR PROTOCOL) gets plain version-1
sessions, where a broken connection loses what it held.
"""

import asyncio
import collections
import ssl as _ssl

from . import _proto
from ._proto import Status, check_count, check_word, seconds_to_ms
from .errors import (
    ConnectionError,
    InvalidArgument,
    LockdError,
    LockLost,
    Timeout,
    from_reply,
)

__all__ = ["Client", "Lock", "Leadership", "Observer", "Status"]


# A request in flight when the connection broke is sent again after the
# resume; one that was in flight at this many breaks in a row fails instead
# (it may be what breaks the connection).
_MAX_REPLAYS = 2


class _Pending:
    """One request sent (or to send again after a resume) and not answered."""

    __slots__ = ("fut", "line", "multi", "lines", "kind", "key", "deadline", "replays")

    def __init__(self, fut, line, multi, kind, key, deadline):
        self.fut = fut
        self.line = line  # the request line without its ending
        self.multi = multi  # answered by lines closed by END (HELD, STATS)
        self.lines = []  # the lines of a multi-line reply so far
        self.kind = kind  # "LOCK" or "CAMPAIGN" (grants a hold), else None
        self.key = key  # the key of a LOCK/CAMPAIGN
        self.deadline = deadline  # loop time a LOCK's WAIT ends, or None
        self.replays = 0  # times sent again after a resume


class _Conn:
    """One connection, one lockd session."""

    def __init__(self, client):
        self.client = client
        self.loop = client._loop
        self.reader = self.writer = None
        self.pending = collections.deque()
        self.backlog = []  # requests made while resuming, sent after it
        self.retry = []  # waits lockd answered ERR SHUTDOWN, sent after the resume
        self.sid = self.secret = None  # set when the session is resumable
        self.grace_ms = 0
        self.addr_index = 0
        self.holder = None  # the Lock or Leadership that owns this session
        self.held_key = None  # key granted here, before the holder exists
        self.early_lost = False  # LOST came before the holder existed
        self.observers = {}  # name -> Observer (observe connections only)
        # "open": requests are sent at once; "resuming": the connection
        # broke, requests wait in backlog; "reopening": a new connection is
        # being set up (only its own AUTH/RESUME/HELD/OBSERVE are sent);
        # "dead": the session is over, every request fails.
        self.state = "open"
        self.task = None

    @property
    def usable(self):
        return self.state == "open"

    async def open(self, resumable):
        await self._dial_any(self.client._prefer)
        if self.client._password is not None:
            self._check(await self.call("AUTH " + self.client._password))
        if resumable:
            grace = self.client._grace_ms
            r = await self.call("SESSION" + (f" GRACE {grace}" if grace else ""))
            if r.startswith("SESSION "):
                _, self.sid, self.secret, g = r.split(" ", 3)
                self.grace_ms = int(g)
            elif r.startswith("ERR PROTOCOL"):
                pass  # lockd 1.0/1.1: a plain session, not resumable
            else:
                self._check(r)
        return self

    async def _dial_any(self, start):
        addrs = self.client._addresses
        last = None
        for i in range(len(addrs)):
            idx = (start + i) % len(addrs)
            try:
                await self._dial(addrs[idx])
                self.addr_index = idx
                self.client._prefer = idx
                return
            except OSError as e:
                last = e
        raise ConnectionError(f"no lockd reachable ({last})")

    async def _dial(self, addr):
        kind, host, port = addr
        tls = self.client._tls
        timeout = self.client._connect_timeout
        if kind == "unix":
            coro = asyncio.open_unix_connection(host)
        else:
            ctx = None
            if tls is True:
                ctx = _ssl.create_default_context()
            elif tls:
                ctx = tls
            coro = asyncio.open_connection(host, port, ssl=ctx)
        try:
            self.reader, self.writer = await asyncio.wait_for(coro, timeout)
        except asyncio.TimeoutError:
            raise OSError(f"connect to {host}:{port} timed out") from None
        sock = self.writer.get_extra_info("socket")
        if sock is not None and kind == "tcp":
            import socket

            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        self.task = self.loop.create_task(self._read_loop(self.reader, self.writer))

    @staticmethod
    def _check(reply):
        if reply.startswith("ERR "):
            raise from_reply(reply)
        return reply

    def call(self, line, multi=False, kind=None, key=None, deadline=None, now=False):
        """Send one request; a future of its reply line (or lines). now:
        send it on a connection being reopened (the resume's own calls)."""
        fut = self.loop.create_future()
        if self.state == "dead":
            fut.set_exception(ConnectionError("session ended"))
            return fut
        p = _Pending(fut, line, multi, kind, key, deadline)
        if self.state == "resuming" or (self.state == "reopening" and not now):
            self.backlog.append(p)
        else:
            self._send(p)
        return fut

    def _send(self, p):
        self.pending.append(p)
        self.writer.write(p.line.encode("ascii") + b"\r\n")

    async def _read_loop(self, reader, writer):
        try:
            while True:
                raw = await reader.readline()
                if not raw or not raw.endswith(b"\n"):
                    break
                line = raw.decode("ascii", "replace").rstrip("\r\n")
                word = line.split(" ", 1)[0]
                if word in _proto.EVENTS:
                    self._event(word, line)
                    continue
                if not self.pending:
                    continue  # nothing asked: not ours to answer
                p = self.pending[0]
                if p.multi and not (line.startswith("ERR ") and not p.lines):
                    if line != "END":
                        p.lines.append(line)
                        continue
                    result = p.lines
                else:
                    result = line
                self.pending.popleft()
                if p.kind and self.sid is not None and line.startswith("ERR SHUTDOWN"):
                    # lockd stops and closes this connection next; the session
                    # resumes elsewhere, where this wait is sent again
                    self.retry.append(p)
                    continue
                if p.kind and line.startswith("OK "):
                    self.held_key = p.key  # LOST may follow before the holder exists
                    self.early_lost = False
                if not p.fut.done():
                    p.fut.set_result(result)
        except (OSError, ValueError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            return
        if writer is self.writer:
            self._broken()

    def _event(self, word, line):
        w = line.split(" ")
        if word == "LOST" and len(w) >= 3:
            h = self.holder
            if h is not None and h.key == w[1]:
                h._mark_lost(f"lockd sent {line}")
            elif self.held_key == w[1]:
                self.early_lost = True
        elif word in ("ELECTED", "NOLEADER") and len(w) >= 2:
            obs = self.observers.get(w[1])
            if obs is not None:
                if word == "ELECTED" and len(w) >= 3:
                    obs._push((int(w[2]), w[3] if len(w) > 3 else None))
                else:
                    obs._push(None)

    def _broken(self):
        if self.state == "reopening":
            # the new connection broke during the resume: fail its own
            # calls, the resume tries again
            self._close_transport()
            while self.pending:
                p = self.pending.popleft()
                if not p.fut.done():
                    p.fut.set_exception(ConnectionError("connection lost while resuming"))
            return
        if self.state != "open":
            return
        self._close_transport()
        if self.sid is not None and not self.client._closed:
            self.state = "resuming"
            self.backlog = self.retry + list(self.pending) + self.backlog
            self.retry = []
            self.pending = collections.deque()
            self.loop.create_task(self._resume())
        elif self.observers:
            self.state = "resuming"
            self.backlog = list(self.pending) + self.backlog
            self.pending = collections.deque()
            self.loop.create_task(self._reobserve())
        else:
            self._die("connection to lockd lost")

    def _close_transport(self):
        w = self.writer
        if w is not None:
            try:
                w.close()
            except Exception:
                pass

    def _die(self, why):
        """The session is over: fail what waits, lose what is held."""
        self.state = "dead"
        self._close_transport()
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()
        waiting = self.retry + list(self.pending) + self.backlog
        self.retry = []
        self.pending.clear()
        self.backlog = []
        for p in waiting:
            if not p.fut.done():
                p.fut.set_exception(ConnectionError(why))
        if self.holder is not None:
            self.holder._mark_lost(why)
        for obs in list(self.observers.values()):
            obs._fail(ConnectionError(why))
        self.client._forget(self)

    async def _resume(self):
        """Re-establish the connection and RESUME the session within its
        grace: the same lockd first, then the others."""
        deadline = self.loop.time() + max(self.grace_ms, 1000) / 1000.0
        delay = 0.05
        n = len(self.client._addresses)
        attempt = 0
        while not self.client._closed and self.state == "resuming":
            idx = (self.addr_index + attempt) % n
            attempt += 1
            try:
                self.state = "reopening"
                await self._dial(self.client._addresses[idx])
                if self.client._password is not None:
                    self._check(await self.call("AUTH " + self.client._password, now=True))
                r = await self.call(f"RESUME {self.sid} {self.secret}", now=True)
                if r.startswith("ERR NOSESSION"):
                    self._die(f"session not resumable: {r}")
                    return
                self._check(r)
                held = {}
                for ln in await self.call("HELD", multi=True, now=True):
                    w = ln.split(" ")
                    if len(w) >= 3 and w[0] == "KEY":
                        held[w[1]] = w[2]
                self.addr_index = idx
                self.state = "open"
                self._replay(held)
                return
            except (OSError, LockdError) as e:
                self.state = "resuming"
                self._close_transport()
                if self.task is not None:
                    self.task.cancel()
                # answered requests of the failed attempt are not replayed
                for p in self.pending:
                    if not p.fut.done():
                        p.fut.cancel()
                self.pending.clear()
                if self.loop.time() >= deadline:
                    self._die(f"could not resume the session: {e}")
                    return
                if attempt % n == 0:
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.5)
            except asyncio.CancelledError:
                raise
        if self.state in ("resuming", "reopening"):
            self._die("client closed")

    def _replay(self, held):
        """Send again what the broken connection left unanswered."""
        todo, self.backlog = self.backlog, []
        for p in todo:
            if p.fut.done():
                continue
            if p.kind == "LOCK" and p.key in held:
                # granted before the break, reply lost: answer from HELD
                self.held_key = p.key
                p.fut.set_result(f"OK {held[p.key]}")
                continue
            p.replays += 1
            if p.replays > _MAX_REPLAYS:
                p.fut.set_exception(ConnectionError(f"the connection broke {_MAX_REPLAYS + 1} times under {p.line.split(' ')[0]}"))
                continue
            if p.deadline is not None:
                left = max(0, int((p.deadline - self.loop.time()) * 1000))
                p.line = _replace_wait(p.line, left)
            self._send(p)

    async def _reobserve(self):
        """An observe connection has no session to resume: connect again
        and OBSERVE every name again."""
        deadline = self.loop.time() + 30
        delay = 0.05
        while not self.client._closed and self.state == "resuming":
            try:
                self.state = "reopening"
                await self._dial_any(self.addr_index)
                if self.client._password is not None:
                    self._check(await self.call("AUTH " + self.client._password, now=True))
                for name in list(self.observers):
                    self._check(await self.call("OBSERVE " + name, now=True))
                self.state = "open"
                todo, self.backlog = self.backlog, []
                for p in todo:
                    if not p.fut.done():
                        self._send(p)
                return
            except (OSError, LockdError) as e:
                self.state = "resuming"
                self._close_transport()
                if self.task is not None:
                    self.task.cancel()
                self.pending.clear()
                if self.loop.time() >= deadline:
                    self._die(f"could not observe again: {e}")
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)

    def close(self):
        """End the session at once (lockd releases what it held)."""
        if self.state == "dead":
            return
        self.sid = None  # a deliberate close is never resumed
        self._die("connection closed by the client")

    async def quit(self):
        """End the session politely (QUIT), then close."""
        if self.state == "open":
            try:
                self.sid = None
                await asyncio.wait_for(self.call("QUIT"), 1.0)
            except (LockdError, asyncio.TimeoutError, OSError):
                pass
        self.close()


def _replace_wait(line, ms):
    w = line.split(" ")
    if "WAIT" in w:
        w[w.index("WAIT") + 1] = str(ms)
    return " ".join(w)


class Lock:
    """A granted lock, shared hold or permit. fence is an int; lost is an
    asyncio.Event set once lockd reports the hold lost (or the session
    ended). Use as `async with` or call release()."""

    def __init__(self, client, conn, key, fence, on_lost=None):
        self._client = client
        self._conn = conn
        self.key = key
        self.fence = fence
        self.lost = asyncio.Event()
        self.lost_reason = None
        self.released = False
        self._hooks = [on_lost] if on_lost else []
        conn.holder = self
        if conn.early_lost:
            self._mark_lost("lockd sent LOST right after the grant")

    def _mark_lost(self, why):
        if self.released or self.lost.is_set():
            return
        self.lost_reason = why
        self.lost.set()
        for h in self._hooks:
            try:
                h(self)
            except Exception:  # a callback's fault must not kill the reader
                import traceback

                traceback.print_exc()

    def check(self):
        """Raise LockLost once the hold is lost."""
        if self.lost.is_set():
            raise LockLost(f"{self.key} (fence {self.fence}): {self.lost_reason}")

    async def extend(self, ttl):
        """A new lease of ttl seconds for a lock taken with ttl=."""
        ms = seconds_to_ms(ttl, "ttl", 1)
        self.check()
        self._conn._check(await self._conn.call(f"EXTEND {self.key} {ms}"))

    async def release(self):
        """Release the hold. Idempotent. A release that no majority confirmed
        (ERR QUORUM) still ends the hold here; the key then lapses on the
        masters that did not confirm within one lease."""
        if self.released:
            return
        self.released = True
        conn = self._conn
        try:
            if not self.lost.is_set() and conn.state != "dead":
                r = await self._unlock(conn)
                if r.startswith("ERR ") and not r.startswith(("ERR NOTHELD", "ERR QUORUM", "ERR NOTLEADER")):
                    conn.close()  # state unknown: ending the session releases
                    raise from_reply(r)
        except asyncio.CancelledError:
            conn.close()
            raise
        except ConnectionError:
            pass  # the session ended, and with it the hold
        conn.holder = None
        conn.held_key = None
        self._client._checkin(conn)

    async def _unlock(self, conn):
        return await conn.call(f"UNLOCK {self.key}")

    async def __aenter__(self):
        return self

    async def __aexit__(self, et, ev, tb):
        await self.release()
        if et is None:
            self.check()
        return False

    def __repr__(self):
        state = "lost" if self.lost.is_set() else "released" if self.released else "held"
        return f"<lockd.aio.Lock {self.key} fence={self.fence} {state}>"


class Leadership(Lock):
    """A won election (protocol 1.3): the election's lock, with a value."""

    def __init__(self, client, conn, name, fence, value, on_lost=None):
        super().__init__(client, conn, name, fence, on_lost)
        self.name = name
        self.value = value

    async def proclaim(self, value):
        check_word(value, "value", self._client._max_len)
        self.check()
        self._conn._check(await self._conn.call(f"PROCLAIM {self.name} {value}"))
        self.value = value

    async def resign(self):
        await self.release()

    async def _unlock(self, conn):
        return await conn.call(f"RESIGN {self.name}")


class Observer:
    """An async iterator of (fence, value) or None (no leader) for one
    election, on a connection of its own. Close it (or leave `async for`)
    to stop observing."""

    def __init__(self, client, name):
        self._client = client
        self.name = name
        self._queue = asyncio.Queue()
        self._sink = None  # the sync client's replacement for the queue
        self._conn = None
        self._closed = False

    async def _start(self):
        conn = _Conn(self._client)
        self._client._all.add(conn)
        try:
            await conn.open(resumable=False)
        except BaseException:
            conn.close()
            raise
        conn.observers[self.name] = self
        self._conn = conn
        try:
            conn._check(await conn.call("OBSERVE " + self.name))
        except BaseException:
            conn.close()
            raise
        return self

    def _push(self, item):
        if self._sink is not None:
            self._sink(item)
        else:
            self._queue.put_nowait(item)

    def _fail(self, exc):
        if not self._closed:
            self._push(exc)

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self._closed:
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, BaseException):
            self._closed = True
            raise item
        return item

    async def aclose(self):
        if self._closed:
            return
        self._closed = True
        if self._conn is not None:
            self._conn.observers.pop(self.name, None)
            await self._conn.quit()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()
        return False


class _Acquire:
    """What lock()/campaign() return: await it for the hold, or use it with
    `async with` (released on exit, LockLost raised on exit after a loss)."""

    def __init__(self, coro_fn):
        self._coro_fn = coro_fn
        self._lock = None

    def __await__(self):
        return self._coro_fn().__await__()

    async def __aenter__(self):
        self._lock = await self._coro_fn()
        return self._lock

    async def __aexit__(self, et, ev, tb):
        return await self._lock.__aexit__(et, ev, tb)


class Client:
    """An asyncio lockd client.

    addresses: "host:port", "unix:/path", "h1:p,h2:p" (failover, in order)
    or a list. password: sent with AUTH on every connection. tls: True or
    an ssl.SSLContext for TCP. resume: ask for resumable sessions (1.2).
    grace: the resume grace in seconds (None: lockd's default).
    max_idle: idle sessions kept for reuse. max_len: longest key/value.
    """

    def __init__(
        self,
        addresses="127.0.0.1:7390",
        *,
        password=None,
        tls=None,
        resume=True,
        grace=None,
        max_idle=16,
        max_len=256,
        connect_timeout=5.0,
    ):
        self._addresses = _proto.parse_addresses(addresses)
        if password is not None:
            check_word(password, "password", 1024)
        self._password = password
        self._tls = tls
        self._resume = resume
        self._grace_ms = seconds_to_ms(grace, "grace", 1) if grace is not None else None
        self._max_idle = max_idle
        self._max_len = max_len
        self._connect_timeout = connect_timeout
        self._prefer = 0
        self._idle = []
        self._all = set()
        self._closed = False
        self._loop = None

    # -- sessions -------------------------------------------------------

    async def _checkout(self):
        if self._closed:
            raise ConnectionError("client closed")
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        while self._idle:
            c = self._idle.pop()
            if c.usable:
                return c
        c = _Conn(self)
        self._all.add(c)
        try:
            return await c.open(self._resume)
        except BaseException:
            c.close()
            raise

    def _checkin(self, conn):
        if conn.usable and conn.holder is None and not self._closed and len(self._idle) < self._max_idle:
            self._idle.append(conn)
        elif conn.state != "dead":
            conn.close()

    def _forget(self, conn):
        self._all.discard(conn)
        if conn in self._idle:
            self._idle.remove(conn)

    async def _simple(self, line, multi=False):
        conn = await self._checkout()
        try:
            r = await conn.call(line, multi=multi)
        except asyncio.CancelledError:
            conn.close()
            raise
        self._checkin(conn)
        if isinstance(r, str) and r.startswith("ERR "):
            raise from_reply(r)
        return r

    # -- locks ----------------------------------------------------------

    def lock(self, key, wait=None, *, ttl=None, shared=False, permits=None, on_lost=None):
        """Wait for the lock (wait seconds at most; None: without limit).
        Raises Timeout when the wait passed. Await it, or `async with`."""
        line, deadline_s = self._lock_line("LOCK", key, wait, ttl, shared, permits)
        return _Acquire(lambda: self._acquire(key, line, deadline_s, on_lost, busy_ok=False))

    async def trylock(self, key, *, ttl=None, shared=False, permits=None, on_lost=None):
        """One attempt: a Lock, or None when the key is busy."""
        line, _ = self._lock_line("TRYLOCK", key, None, ttl, shared, permits)
        return await self._acquire(key, line, None, on_lost, busy_ok=True)

    def _lock_line(self, cmd, key, wait, ttl, shared, permits):
        check_word(key, "key", self._max_len)
        wait_ms = seconds_to_ms(wait, "wait", 0) if wait is not None else None
        ttl_ms = seconds_to_ms(ttl, "ttl", 1) if ttl is not None else None
        if permits is not None:
            check_count(permits, "permits")
        if shared and permits is not None:
            raise InvalidArgument("shared and permits exclude each other")
        return _proto.lock_line(cmd, key, wait_ms, ttl_ms, bool(shared), permits), wait

    async def _acquire(self, key, line, wait_s, on_lost, busy_ok, kind="LOCK", make=None):
        conn = await self._checkout()
        deadline = self._loop.time() + wait_s if wait_s is not None else None
        try:
            r = await conn.call(line, kind=kind, key=key, deadline=deadline)
        except asyncio.CancelledError:
            conn.close()  # lockd cancels a waiting LOCK when its session ends
            raise
        if r.startswith("OK "):
            fence = int(r.split(" ")[1])
            if make is not None:
                return make(conn, fence)
            return Lock(self, conn, key, fence, on_lost)
        conn.held_key = None
        self._checkin(conn)
        if r == "TIMEOUT":
            raise Timeout(f"{key}: wait passed")
        if r == "BUSY" and busy_ok:
            return None
        raise from_reply(r) if r.startswith("ERR ") else LockdError("PROTOCOL", f"unexpected reply {r!r}")

    async def status(self, key, permits=None):
        """The key's state: a Status (state FREE, HELD, SHARED or PERMITS)."""
        check_word(key, "key", self._max_len)
        line = f"STATUS {key}"
        if permits is not None:
            line += f" PERMITS {check_count(permits, 'permits')}"
        return Status(await self._simple(line))

    async def ping(self):
        """Round trip to lockd; raises when it cannot be reached."""
        r = await self._simple("PING")
        return r == "PONG"

    async def stats(self):
        """lockd's STATS as a dict of name -> str."""
        lines = await self._simple("STATS", multi=True)
        return {w[1]: w[2] for w in (ln.split(" ", 2) for ln in lines) if len(w) == 3}

    # -- election (protocol 1.3) -----------------------------------------

    def campaign(self, name, value, wait=None, *, on_lost=None):
        """Wait to lead the election `name`, publishing value. Await it for
        a Leadership, or `async with` (resigns on exit)."""
        check_word(name, "name", self._max_len)
        check_word(value, "value", self._max_len)
        line = f"CAMPAIGN {name} {value}"
        if wait is not None:
            line += f" WAIT {seconds_to_ms(wait, 'wait', 0)}"

        def make(conn, fence):
            return Leadership(self, conn, name, fence, value, on_lost)

        return _Acquire(lambda: self._acquire(name, line, wait, on_lost, False, "CAMPAIGN", make))

    async def leader(self, name):
        """(fence, value) of the current leader, (fence, None) when the
        name is held by a plain lock, or None when nobody leads."""
        check_word(name, "name", self._max_len)
        r = await self._simple(f"LEADER {name}")
        if r == "NONE":
            return None
        w = r.split(" ")
        if w[0] != "LEADER" or len(w) < 2:
            raise LockdError("PROTOCOL", f"unexpected reply {r!r}")
        return (int(w[1]), w[2] if len(w) > 2 else None)

    async def observe(self, name):
        """An Observer: `async for e in await c.observe(name)`, e being
        (fence, value) or None; the current state comes first."""
        check_word(name, "name", self._max_len)
        if self._closed:
            raise ConnectionError("client closed")
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return await Observer(self, name)._start()

    # -- lifetime -------------------------------------------------------

    async def close(self):
        """End every session (their holds are released by lockd)."""
        self._closed = True
        conns = list(self._all)
        self._idle.clear()
        await asyncio.gather(*(c.quit() for c in conns), return_exceptions=True)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()
        return False
