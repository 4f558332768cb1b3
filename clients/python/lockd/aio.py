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

The local deadline. lockd tells a hold is lost with LOST, but a frozen
lockd, a dead one with nowhere to resume, or a cut network tells nothing.
So each hold keeps the time before which it is surely held: a HELD sent
with the LOCK (answered right after the grant) and then every third of the
lease (the heartbeat, one HELD per session) gives the lease left, ttl_ms,
which lockd counts from a moment after the request was sent; "sent +
ttl_ms", less lockd's drift margin, is never later than the end of the
lease on the masters. A timer reports the hold lost a little before that
moment if no later answer moved it, exactly as a LOST event would; then
the session is ended (QUIT, and RESUME + QUIT on a new connection), so
that lockd frees at once whatever the masters still hold.

Giving up on a request (a cancelled task, an exception in the sync
caller's thread) also ends its session that way: closing the socket alone
would only detach a resumable session, whose holds lockd keeps for the
grace.
"""

from __future__ import annotations

import asyncio
import collections
import socket
import ssl as _ssl
import traceback
from typing import (
    Any,
    Awaitable,
    Callable,
    Coroutine,
    Deque,
    Dict,
    Generator,
    List,
    Literal,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

from . import _proto
from ._proto import Status, Who, check_count, check_word, seconds_to_ms
from .errors import (
    ConnectionError,
    InvalidArgument,
    LockdError,
    LockLost,
    Timeout,
    from_reply,
)

__all__ = ["Client", "Lock", "Leadership", "Observer", "Status", "Who"]

Reply = Union[str, List[str]]
OnLost = Optional[Callable[[Any], None]]

# A request in flight when the connection broke is sent again after the
# resume; one that was in flight at this many breaks in a row fails instead
# (it may be what breaks the connection).
_MAX_REPLAYS = 2

# lockd's default locks.drift_factor and its 2 ms: how much sooner than
# their lease the masters may let a key go.
_DRIFT = 0.01
_DRIFT_S = 0.002

# What `except` must catch when a step may time out: asyncio.TimeoutError is
# builtins.TimeoutError (an OSError) from Python 3.11 only.
_STEP_ERRORS = (OSError, LockdError, asyncio.TimeoutError, EOFError)


def _surely_until(sent: float, ttl_ms: int) -> float:
    """The loop time before which a hold is surely held, from a figure of
    lockd (ttl_ms left) measured after `sent`."""
    return sent + ttl_ms * (1.0 - _DRIFT) / 1000.0 - _DRIFT_S


def _margin(lease_s: float) -> float:
    """How long before its local deadline a hold is reported lost: room for
    a timer that fires late and for the callbacks it runs."""
    return 0.010 + lease_s * 0.01


def _ttl_of(lines: Any, key: str, fence: Optional[int]) -> Optional[int]:
    """The ttl_ms of `key` with this fence in a HELD reply, or None."""
    if not isinstance(lines, list):
        return None
    for ln in lines:
        w = ln.split(" ")
        if len(w) >= 5 and w[0] == "KEY" and w[1] == key:
            try:
                if fence is not None and int(w[2]) != fence:
                    return None
                return int(w[4])
            except ValueError:
                return None
    return None


def _consume(fut: "asyncio.Future[Any]") -> None:
    """A done callback for replies nobody awaits: no "exception never
    retrieved" noise."""
    if not fut.cancelled():
        fut.exception()


class _Pending:
    """One request sent (or to send again after a resume) and not answered."""

    __slots__ = ("fut", "line", "multi", "lines", "kind", "key", "deadline", "replays", "sent_at")

    def __init__(
        self,
        fut: "asyncio.Future[Reply]",
        line: str,
        multi: bool,
        kind: Optional[str],
        key: Optional[str],
        deadline: Optional[float],
    ) -> None:
        self.fut = fut
        self.line = line  # the request line without its ending
        self.multi = multi  # answered by lines closed by END (HELD, STATS)
        self.lines: List[str] = []  # the lines of a multi-line reply so far
        self.kind = kind  # "LOCK" or "CAMPAIGN" (grants a hold), else None
        self.key = key  # the key of a LOCK/CAMPAIGN
        self.deadline = deadline  # loop time a LOCK's WAIT ends, or None
        self.replays = 0  # times sent again after a resume
        self.sent_at = 0.0  # loop time it was (last) written


class _Conn:
    """One connection, one lockd session."""

    def __init__(self, client: "Client") -> None:
        self.client = client
        self.loop: asyncio.AbstractEventLoop = client._loop  # type: ignore[assignment]
        self.reader: Optional[asyncio.StreamReader] = None
        self.writer: Optional[asyncio.StreamWriter] = None
        self.pending: Deque[_Pending] = collections.deque()
        self.backlog: List[_Pending] = []  # requests made while resuming, sent after it
        self.retry: List[_Pending] = []  # waits lockd answered ERR SHUTDOWN, sent after the resume
        self.sid: Optional[str] = None  # set when the session is resumable
        self.secret: Optional[str] = None
        self.grace_ms = 0
        self.addr_index = 0
        self.holder: Optional[Lock] = None  # the Lock or Leadership that owns this session
        self.held_key: Optional[str] = None  # key granted here, before the holder exists
        self.early_lost = False  # LOST came before the holder existed
        self.observers: Dict[str, Observer] = {}  # name -> Observer (observe connections only)
        # "open": requests are sent at once; "resuming": the connection
        # broke, requests wait in backlog; "reopening": a new connection is
        # being set up (only its own AUTH/RESUME/HELD/OBSERVE are sent);
        # "dead": the session is over, every request fails.
        self.state = "open"
        self.task: Optional["asyncio.Task[None]"] = None
        # The hold's local deadline (see the module's comment).
        self.surely_until: Optional[float] = None  # loop time; None: no hold watched
        self.lease_s = 0.0  # the longest ttl lockd reported for the hold
        self.renewed = True  # lockd renews the hold (no TTL): heartbeats move the deadline
        self.hold_gen = 0  # bumped when a hold starts or ends: stale replies see it
        self.hb_due: Optional[float] = None  # loop time of the next heartbeat (None: none planned)
        self.heartbeats = 0  # heartbeats sent (bench.py counts them)
        self._timer: Optional[asyncio.TimerHandle] = None  # the loss or the heartbeat, whichever is first
        self._timer_at = 0.0
        self._hb_out: Optional[int] = None  # hold_gen of the heartbeat in flight
        self._close_timer: Optional[asyncio.TimerHandle] = None

    @property
    def usable(self) -> bool:
        return self.state == "open"

    async def open(self, resumable: bool) -> "_Conn":
        await self._dial_any(self.client._prefer)
        if self.client._password is not None:
            self._check(await self.call("AUTH " + self.client._password))
        if resumable:
            grace = self.client._grace_ms
            r = await self.call("SESSION" + (f" GRACE {grace}" if grace else ""))
            assert isinstance(r, str)
            if r.startswith("SESSION "):
                _, self.sid, self.secret, g = r.split(" ", 3)
                self.grace_ms = int(g)
            elif r.startswith("ERR PROTOCOL"):
                pass  # lockd 1.0/1.1: a plain session, not resumable
            else:
                self._check(r)
        return self

    async def _dial_any(self, start: int) -> None:
        addrs = self.client._addresses
        last: Optional[BaseException] = None
        for i in range(len(addrs)):
            idx = (start + i) % len(addrs)
            try:
                await self._dial(addrs[idx])
                self.addr_index = idx
                self.client._prefer = idx
                return
            except OSError as e:
                if self.state == "dead":
                    raise
                last = e
        raise ConnectionError(f"no lockd reachable ({last})")

    async def _dial(self, addr: Tuple[str, str, Optional[int]]) -> None:
        reader, writer = await self.client._open_stream(addr)
        if self.state == "dead":  # ended while connecting (the client closed)
            writer.close()
            raise ConnectionError("session ended")
        self.reader, self.writer = reader, writer
        self.task = self.loop.create_task(self._read_loop(self.reader, self.writer))

    @staticmethod
    def _check(reply: Reply) -> Reply:
        if isinstance(reply, str) and reply.startswith("ERR "):
            raise from_reply(reply)
        return reply

    def request(
        self,
        line: str,
        multi: bool = False,
        kind: Optional[str] = None,
        key: Optional[str] = None,
        deadline: Optional[float] = None,
        now: bool = False,
    ) -> _Pending:
        """Send one request (or queue it while resuming). now: send it on a
        connection being reopened (the resume's own calls)."""
        fut: "asyncio.Future[Reply]" = self.loop.create_future()
        p = _Pending(fut, line, multi, kind, key, deadline)
        if self.state == "dead":
            fut.set_exception(ConnectionError("session ended"))
        elif self.state == "resuming" or (self.state == "reopening" and not now):
            self.backlog.append(p)
        else:
            self._send(p)
        return p

    def call(self, line: str, multi: bool = False, now: bool = False) -> "asyncio.Future[Reply]":
        """A future of the reply line (or lines) of one request."""
        return self.request(line, multi=multi, now=now).fut

    def lock_request(
        self, line: str, kind: str, key: str, deadline: Optional[float], held: bool
    ) -> Tuple[_Pending, Optional[_Pending]]:
        """A LOCK (TRYLOCK, CAMPAIGN) and, when held, a HELD right behind it,
        written at once: lockd answers the HELD just after the grant, with
        the lease the hold starts with, at no extra round trip."""
        if self.state != "open":
            lp = self.request(line, kind=kind, key=key, deadline=deadline)
            hp = self.request("HELD", multi=True) if held else None
        else:
            lp = _Pending(self.loop.create_future(), line, False, kind, key, deadline)
            hp = _Pending(self.loop.create_future(), "HELD", True, None, None, None) if held else None
            self._send(lp, hp)
        if hp is not None:
            hp.fut.add_done_callback(_consume)
        return lp, hp

    def _send(self, *ps: Optional[_Pending]) -> None:
        now = self.loop.time()
        data = b""
        for p in ps:
            if p is None:
                continue
            p.sent_at = now
            self.pending.append(p)
            data += p.line.encode("ascii") + b"\r\n"
        assert self.writer is not None
        self.writer.write(data)

    async def _read_loop(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
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
                result: Reply
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

    def _event(self, word: str, line: str) -> None:
        w = line.split(" ")
        if word == "LOST" and len(w) >= 3:
            h = self.holder
            if h is not None and h.key == w[1] and (h.fence is None or w[2] == str(h.fence)):
                h._mark_lost(f"lockd sent {line}")
            elif h is None and self.held_key == w[1]:
                self.early_lost = True
        elif word in ("ELECTED", "NOLEADER") and len(w) >= 2:
            obs = self.observers.get(w[1])
            if obs is not None:
                if word == "ELECTED" and len(w) >= 3:
                    obs._push((int(w[2]), w[3] if len(w) > 3 else None))
                else:
                    obs._push(None)

    def _broken(self) -> None:
        if self.state == "dead":
            self._close_transport()  # the end of a QUIT: lockd closed
            return
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
        self.hb_due = None  # the resume's HELD confirms the hold; the deadline stands meanwhile
        if self.sid is not None and not self.client._closed:
            self.state = "resuming"
            self.backlog = self.retry + list(self.pending) + self.backlog
            self.retry = []
            self.pending = collections.deque()
            self.client._background(self._resume())
        elif self.observers:
            self.state = "resuming"
            self.backlog = list(self.pending) + self.backlog
            self.pending = collections.deque()
            self.client._background(self._reobserve())
        else:
            self._die("connection to lockd lost")

    def _close_transport(self) -> None:
        self.client._draining.discard(self)
        if self._close_timer is not None:
            self._close_timer.cancel()
            self._close_timer = None
        w = self.writer
        if w is not None:
            try:
                w.close()
            except Exception:
                pass

    def _die(self, why: str, quit: bool = False) -> None:
        """The session is over: fail what waits, lose what is held. quit:
        send QUIT and the end of our side first, and let the reader read to
        lockd's close (bounded), so that lockd ends the session rather than
        detaching it."""
        self.state = "dead"
        self._stop_timers()
        w = self.writer
        if quit and w is not None and not w.is_closing():
            try:
                w.write(b"QUIT\r\n")
                if w.can_write_eof():
                    w.write_eof()
            except Exception:
                quit = False
        else:
            quit = False
        if quit:
            self._close_timer = self.loop.call_later(self.client._connect_timeout, self._close_transport)
            self.client._draining.add(self)
        else:
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

    def abandon(self, why: str, elsewhere: bool = False) -> None:
        """End the session now and leave nothing held: for a request its
        caller gave up on (its LOCK may be granted to nobody) and a hold
        the library gave up on. QUIT ends the session when nothing waits
        on it; otherwise (a waiting LOCK drops the QUIT queued behind it,
        and the session is only detached) and with `elsewhere`, the session
        is also resumed on a new connection and ended there with QUIT."""
        if self.state == "dead":
            return
        sid, secret = self.sid, self.secret
        self.sid = None
        if sid is not None and secret is not None:
            waiting = any(p.kind for p in self.pending)
            if elsewhere or waiting or self.state != "open":
                self.client._spawn_end(sid, secret, self.addr_index, self.grace_ms)
        self._die(why, quit=self.state == "open")

    # -- the local deadline -------------------------------------------

    def start_hold(self, sent: float, ttl_ms: int, renewed: bool) -> None:
        """Watch the hold just granted: ttl_ms is lockd's figure measured
        after `sent`."""
        self.hold_gen += 1
        self.renewed = renewed
        self.lease_s = ttl_ms / 1000.0
        self._confirm(sent, ttl_ms)

    def _confirm(self, sent: float, ttl_ms: int) -> None:
        self.lease_s = max(self.lease_s, ttl_ms / 1000.0)
        self.surely_until = _surely_until(sent, ttl_ms)
        self._plan_heartbeat()
        self._wake()

    def extended(self, sent: float, ms: int, ok: bool) -> None:
        """EXTEND sent at `sent` for ms: its OK makes that the validity; any
        other answer may have set the shorter lease on some masters."""
        if self.surely_until is None:
            return
        until = _surely_until(sent, ms)
        self.surely_until = until if ok else min(self.surely_until, until)
        self.lease_s = max(self.lease_s, ms / 1000.0)
        self._wake()

    def hold_over(self) -> None:
        """The hold ended (released or lost): stop watching it. The timer
        stays; it finds nothing to do and stops (a timer made and cancelled
        for every hold would cost a third of an uncontended lock/unlock)."""
        self.hold_gen += 1
        self.surely_until = None
        self.hb_due = None

    def _stop_timers(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.hb_due = None

    def _plan_heartbeat(self) -> None:
        """The next heartbeat: a third of the lease from now, and a third of
        the lease before the deadline at the latest."""
        if not self.renewed or self.surely_until is None:
            self.hb_due = None  # a TTL hold: nobody renews it, its deadline is its TTL
            return
        now = self.loop.time()
        third = self.lease_s / 3.0
        self.hb_due = max(min(now + third, self.surely_until - third), now + 0.01)

    def _wake(self) -> None:
        """Have the one timer fire by the next thing due: the loss (the
        deadline less the margin) or the heartbeat. It is moved earlier,
        never later."""
        if self.surely_until is None:
            return
        at = self.surely_until - _margin(self.lease_s)
        if self.hb_due is not None and self.hb_due < at:
            at = self.hb_due
        if self._timer is not None:
            if self._timer_at <= at:
                return
            self._timer.cancel()
        self._timer_at = at
        self._timer = self.loop.call_at(at, self._tick)

    def _tick(self) -> None:
        self._timer = None
        if self.surely_until is None or self.holder is None:
            return
        now = self.loop.time()
        if now >= self.surely_until - _margin(self.lease_s):
            self._deadline_passed()
            return
        if self.hb_due is not None and now >= self.hb_due:
            self.hb_due = None
            self._heartbeat()
        self._wake()

    def _heartbeat(self) -> None:
        gen = self.hold_gen
        if self.state != "open" or self._hb_out == gen:
            return
        self._hb_out = gen
        self.heartbeats += 1
        p = self.request("HELD", multi=True)
        p.fut.add_done_callback(lambda f: self._heartbeat_done(p, gen, f))

    def _heartbeat_done(self, p: _Pending, gen: int, f: "asyncio.Future[Reply]") -> None:
        if self._hb_out == gen:
            self._hb_out = None
        if f.cancelled() or f.exception() is not None or gen != self.hold_gen:
            return
        h = self.holder
        if h is None or self.surely_until is None:
            return
        lines = f.result()
        ttl = _ttl_of(lines, h.key, h.fence)
        if ttl is None:
            if isinstance(lines, list):
                h._mark_lost("lockd no longer lists it as held (HELD)")
            else:  # an ERR reply: try again; the deadline stands
                self._plan_heartbeat()
                self._wake()
            return
        self._confirm(p.sent_at, ttl)

    def _deadline_passed(self) -> None:
        h = self.holder
        if h is None:
            return
        h._mark_lost(
            "the lease lockd last confirmed ends now (lockd frozen, dead or cut off): "
            "reported lost by the local deadline"
        )
        # a TTL hold lapses on the masters at its TTL whatever lockd does:
        # QUIT is enough; a renewed one may be renewed by a lockd we cannot
        # reach, so end the session on any lockd that answers too
        self.abandon("the session was ended: its hold's lease could not be confirmed", elsewhere=self.renewed)

    # -- resume -------------------------------------------------------

    async def _resume(self) -> None:
        """Re-establish the connection and RESUME the session within its
        grace: the same lockd first, then the others."""
        deadline = self.loop.time() + max(self.grace_ms, 1000) / 1000.0
        delay = 0.05
        n = len(self.client._addresses)
        attempt = 0
        step = self.client._connect_timeout
        while not self.client._closed and self.state == "resuming":
            idx = (self.addr_index + attempt) % n
            attempt += 1
            try:
                self.state = "reopening"
                await self._dial(self.client._addresses[idx])
                if self.state == "dead":  # abandoned meanwhile
                    self._close_transport()
                    return
                if self.client._password is not None:
                    self._check(await asyncio.wait_for(self.call("AUTH " + self.client._password, now=True), step))
                r = await asyncio.wait_for(self.call(f"RESUME {self.sid} {self.secret}", now=True), step)
                if self.state == "dead":
                    return
                assert isinstance(r, str)
                if r.startswith("ERR NOSESSION"):
                    self._die(f"session not resumable: {r}")
                    return
                self._check(r)
                hp = self.request("HELD", multi=True, now=True)
                lines = await asyncio.wait_for(hp.fut, step)
                if self.state == "dead":
                    return
                held = {}
                for ln in lines:
                    w = ln.split(" ")
                    if len(w) >= 3 and w[0] == "KEY":
                        held[w[1]] = w[2]
                self.addr_index = idx
                self.state = "open"
                self._resumed(lines, hp.sent_at)
                self._replay(held)
                return
            except _STEP_ERRORS as e:
                if self.state == "dead":
                    return
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
                    self._die(f"could not resume the session: {e!r}")
                    return
                if attempt % n == 0:
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.5)
        if self.state in ("resuming", "reopening"):
            self._die("client closed")

    def _resumed(self, lines: Reply, sent: float) -> None:
        """The resume's HELD confirms the hold anew (LOST events for what
        was lost came before it)."""
        h = self.holder
        if h is None or self.surely_until is None:
            return
        ttl = _ttl_of(lines, h.key, h.fence)
        if ttl is not None:
            self._confirm(sent, ttl)

    def _replay(self, held: Dict[str, str]) -> None:
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

    async def _reobserve(self) -> None:
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
                if self.state == "dead":
                    return
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

    def close(self) -> None:
        """End a session that waits for nothing (QUIT, then close): lockd
        releases what it held."""
        if self.state == "dead":
            return
        self.sid = None
        self._die("connection closed by the client", quit=self.state == "open")

    async def quit(self) -> None:
        """End the session politely: QUIT and wait for its answer (at most a
        second), or abandon() when a LOCK waits, the session resumes or the
        connection is still being made. Either way the session is dead, and
        its holder and observers told, when quit returns (or raises). A
        QUIT left unanswered (no answer within the second, the connection
        broke first) may never have reached lockd, which then keeps the
        session, attached to a connection it has not seen die or detached,
        with its holds: it is ended on a new connection too (abandon's
        RESUME, then QUIT), in the background."""
        if self.state == "open" and self.writer is not None and not any(p.kind for p in self.pending):
            sid, secret = self.sid, self.secret
            self.sid = None
            answered = False
            try:
                await asyncio.wait_for(self.call("QUIT"), 1.0)
                answered = True
            except (LockdError, asyncio.TimeoutError, OSError):
                pass
            finally:
                self._die("client closed")
                if not answered and sid is not None and secret is not None:
                    self.client._spawn_end(sid, secret, self.addr_index, self.grace_ms)
        else:
            self.abandon("client closed")


def _replace_wait(line: str, ms: int) -> str:
    w = line.split(" ")
    if "WAIT" in w:
        w[w.index("WAIT") + 1] = str(ms)
    return " ".join(w)


class Lock:
    """A lock, shared hold or permit of one key, as `c.lock(key)` returns
    it, before or after it is acquired.

    `await c.lock(k)` and `async with c.lock(k) as lk` acquire it (raising
    Timeout when the wait passes); `await lk.acquire(blocking=True,
    timeout=None)` returns True or False as redis-py's does. Once held,
    fence is an int and lost an asyncio.Event, set when lockd reports the
    hold lost or the local deadline passes (the module's comment)."""

    _kind = "LOCK"

    def __init__(
        self,
        client: "Client",
        key: str,
        wait: Optional[float],
        ttl_ms: Optional[int],
        shared: bool,
        permits: Optional[int],
        on_lost: OnLost = None,
    ) -> None:
        self._client = client
        self.key = key
        self._wait = wait
        self._ttl_ms = ttl_ms
        self._shared = shared
        self._permits = permits
        self.fence: Optional[int] = None
        self.lost_reason: Optional[str] = None
        self.released = False
        self._conn: Optional[_Conn] = None
        self._is_lost = False  # readable from any thread
        self._lost_ev: Optional[asyncio.Event] = None  # made on first use, in the loop
        self._hooks: List[Callable[[Any], None]] = [on_lost] if on_lost else []

    @property
    def lost(self) -> asyncio.Event:
        """Set once the hold is lost."""
        if self._lost_ev is None:
            self._lost_ev = asyncio.Event()
            if self._is_lost:
                self._lost_ev.set()
        return self._lost_ev

    def _line(self, wait_s: Optional[float], trylock: bool) -> str:
        wait_ms = seconds_to_ms(wait_s, "wait", 0) if wait_s is not None and not trylock else None
        cmd = "TRYLOCK" if trylock else "LOCK"
        return _proto.lock_line(cmd, self.key, wait_ms, self._ttl_ms, self._shared, self._permits)

    async def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Take the hold: True once granted, False when the key is busy
        (blocking=False: one attempt) or the wait passed (timeout seconds,
        else the wait given to lock(); None waits without limit)."""
        if timeout is not None and timeout < 0:
            timeout = None  # threading's "no limit"
        if not blocking:
            if timeout is not None:
                raise InvalidArgument("a timeout needs blocking=True")
            return await self._take(None, trylock=True)
        if timeout is not None:
            seconds_to_ms(timeout, "timeout", 0)
        return await self._take(self._wait if timeout is None else timeout, trylock=False)

    async def _enter(self) -> "Lock":
        if self._conn is not None:
            return self  # held already (trylock's, say): `async with` releases it
        if not await self._take(self._wait, trylock=False):
            raise Timeout(f"{self.key}: wait passed")
        return self

    async def _take(self, wait_s: Optional[float], trylock: bool) -> bool:
        if self._conn is not None:
            raise LockdError("HELD", f"{self.key}: this Lock holds it already; release it first")
        line = self._line(wait_s, trylock)
        c = self._client
        conn = await c._checkout()
        loop = conn.loop
        self.fence = None
        self.lost_reason = None
        self.released = False
        self._is_lost = False
        if self._lost_ev is not None:
            self._lost_ev.clear()
        deadline = loop.time() + wait_s if wait_s is not None and not trylock else None
        watch = c._heartbeat
        ttl: Optional[int] = None
        sent = 0.0
        lost_why = ""
        try:
            lp, hp = conn.lock_request(line, self._kind, self.key, deadline, watch)
            r = await lp.fut
            assert isinstance(r, str)
            granted = r.startswith("OK ")
            fence = int(r.split(" ")[1]) if granted else 0
            if granted and watch and hp is not None:
                # lockd answers it right behind the OK; a lockd that froze
                # in between gets as long as a connect
                limit = max(c._connect_timeout, 1.0)
                try:
                    ttl, sent = _ttl_of(await asyncio.wait_for(hp.fut, limit), self.key, fence), hp.sent_at
                except asyncio.TimeoutError:
                    lost_why = "lockd did not confirm the grant in time"
                if ttl is not None and _surely_until(sent, ttl) - loop.time() < ttl / 2000.0:
                    ttl = None  # a long wait: that figure is too old to count on, ask again
                if ttl is None and not conn.early_lost and not lost_why:
                    p = conn.request("HELD", multi=True)
                    try:
                        lines = await asyncio.wait_for(p.fut, limit)
                    except asyncio.TimeoutError:
                        lines = []
                        lost_why = "lockd did not confirm the grant in time"
                    ttl, sent = _ttl_of(lines, self.key, fence), p.sent_at
        except BaseException:
            conn.abandon("the caller gave up on its request")
            raise
        if not granted:
            conn.held_key = None
            c._checkin(conn)
            if r == "TIMEOUT" or (r == "BUSY" and trylock):
                return False
            raise from_reply(r) if r.startswith("ERR ") else LockdError("PROTOCOL", f"unexpected reply {r!r}")
        self.fence = fence
        self._conn = conn
        conn.holder = self
        if conn.state == "dead":
            # the session ended (the client closed, the connection broke
            # for good) between the grant's reply and this task's turn:
            # _die found no holder to tell, and nothing is held any more
            lost_why = "the session ended right after the grant"
        if conn.state == "dead" or conn.early_lost or (watch and ttl is None):
            self._mark_lost("lockd sent LOST right after the grant" if conn.early_lost else lost_why or "lockd did not list it as held right after the grant")
            if not conn.early_lost:
                conn.holder = None
                conn.abandon("the grant could not be confirmed")
            self._finish(conn)
            raise LockLost(f"{self.key} (fence {fence}): {self.lost_reason}")
        if watch:
            assert ttl is not None
            conn.start_hold(sent, ttl, renewed=self._ttl_ms is None)
        return True

    def _mark_lost(self, why: str) -> None:
        conn = self._conn
        if conn is None or self._is_lost:
            return
        self._is_lost = True
        self.lost_reason = why
        if self._lost_ev is not None:
            self._lost_ev.set()
        conn.hold_over()
        for h in list(self._hooks):
            try:
                h(self)
            except Exception:  # a callback's fault must not kill the reader
                traceback.print_exc()

    def _owned(self) -> bool:
        conn = self._conn
        if conn is None or self._is_lost or conn.state == "dead":
            return False  # an ended session holds nothing
        until = conn.surely_until
        return until is None or conn.loop.time() < until

    async def owned(self) -> bool:
        """True while this Lock holds its key (acquired, not released, not
        lost, its local deadline not passed). No request is sent."""
        return self._owned()

    async def locked(self) -> bool:
        """True when anyone holds the key (any kind of hold, any permit);
        asks lockd unless this Lock holds it."""
        if self._owned():
            return True
        st = await self._client.status(self.key, self._permits)
        return not st.free

    def check(self) -> None:
        """Raise LockLost once the hold is lost."""
        if self._is_lost:
            raise LockLost(f"{self.key} (fence {self.fence}): {self.lost_reason}")

    def _held_conn(self) -> _Conn:
        self.check()
        if self._conn is None:
            raise LockdError("NOTHELD", f"{self.key}: not acquired")
        return self._conn

    async def extend(self, ttl: float) -> None:
        """A new lease of ttl seconds for a lock taken with ttl=."""
        ms = seconds_to_ms(ttl, "ttl", 1)
        conn = self._held_conn()
        p = conn.request(f"EXTEND {self.key} {ms}")
        r = await p.fut
        assert isinstance(r, str)
        if r == "OK" or r.startswith("ERR QUORUM"):  # the new lease may be on some masters
            conn.extended(p.sent_at, ms, r == "OK")
        conn._check(r)

    async def release(self) -> None:
        """Release the hold. Releasing again is a no-op. Raises LockLost
        when the hold was lost before it was released (the key is then no
        longer held by this Lock either way). A release that no majority
        confirmed (ERR QUORUM) still ends the hold here; the key then lapses
        on the masters that did not confirm within one lease."""
        conn = self._conn
        if conn is None:
            if self.released:
                return
            raise LockdError("NOTHELD", f"{self.key}: not acquired")
        try:
            if not self._is_lost and conn.state != "dead":
                r = await self._unlock(conn)
                assert isinstance(r, str)
                if r.startswith(("ERR NOTHELD", "ERR NOTLEADER")):
                    self._mark_lost(f"lockd answered {r!r} to the release")
                elif r.startswith("ERR ") and not r.startswith("ERR QUORUM"):
                    conn.holder = None
                    conn.abandon("state unknown after a refused release")
                    self._finish(conn)
                    raise from_reply(r)
        except asyncio.CancelledError:
            conn.holder = None
            conn.abandon("the release was cancelled")
            self._finish(conn)
            raise
        except ConnectionError:
            pass  # the session ended under the release (_die marked the hold lost)
        self._finish(conn)
        self.check()

    def _finish(self, conn: _Conn) -> None:
        if conn.holder is self:
            conn.holder = None
        conn.held_key = None
        conn.hold_over()
        self._conn = None
        self.released = True
        self._client._checkin(conn)

    def _abandon(self) -> None:
        """The hold was granted to a caller that is gone: release it."""
        conn = self._conn
        if conn is None:
            return
        conn.holder = None
        conn.abandon("the caller gave up on its request")
        self._finish(conn)

    async def _unlock(self, conn: _Conn) -> Reply:
        return await conn.call(f"UNLOCK {self.key}")

    def __await__(self) -> Generator[Any, None, "Lock"]:
        return self._enter().__await__()

    async def __aenter__(self) -> "Lock":
        return await self._enter()

    async def __aexit__(self, et: Any, ev: Any, tb: Any) -> Literal[False]:
        try:
            await self.release()
        except LockdError:
            if et is None:
                raise
        return False

    def __repr__(self) -> str:
        if self._is_lost:
            state = "lost"
        elif self._conn is not None:
            state = "held"
        else:
            state = "released" if self.released else "not acquired"
        return f"<lockd.aio.{type(self).__name__} {self.key} fence={self.fence} {state}>"


class Leadership(Lock):
    """A campaign for an election (protocol 1.3), and once won its lock,
    with a value."""

    _kind = "CAMPAIGN"

    def __init__(self, client: "Client", name: str, value: str, wait: Optional[float], on_lost: OnLost = None) -> None:
        super().__init__(client, name, wait, None, False, None, on_lost)
        self.name = name
        self.value = value

    def _line(self, wait_s: Optional[float], trylock: bool) -> str:
        line = f"CAMPAIGN {self.name} {self.value}"
        if trylock:
            wait_s = 0
        if wait_s is not None:
            line += f" WAIT {seconds_to_ms(wait_s, 'wait', 0)}"
        return line

    async def _enter(self) -> "Leadership":
        await super()._enter()
        return self

    async def proclaim(self, value: str) -> None:
        check_word(value, "value", self._client._max_len)
        conn = self._held_conn()
        conn._check(await conn.call(f"PROCLAIM {self.name} {value}"))
        self.value = value

    async def resign(self) -> None:
        await self.release()

    async def _unlock(self, conn: _Conn) -> Reply:
        return await conn.call(f"RESIGN {self.name}")


class Observer:
    """An async iterator of (fence, value) or None (no leader) for one
    election, on a connection of its own. Close it (or leave `async for`)
    to stop observing."""

    def __init__(self, client: "Client", name: str) -> None:
        self._client = client
        self.name = name
        self._queue: "asyncio.Queue[Any]" = asyncio.Queue()
        self._sink: Optional[Callable[[Any], None]] = None  # the sync client's replacement for the queue
        self._conn: Optional[_Conn] = None
        self._closed = False

    async def _start(self) -> "Observer":
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

    def _push(self, item: Any) -> None:
        if self._sink is not None:
            self._sink(item)
        else:
            self._queue.put_nowait(item)

    def _fail(self, exc: BaseException) -> None:
        if not self._closed:
            self._push(exc)

    def __aiter__(self) -> "Observer":
        return self

    async def __anext__(self) -> Optional[Tuple[int, Optional[str]]]:
        if self._closed:
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, BaseException):
            self._closed = True
            raise item
        return item  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._conn is not None:
            self._conn.observers.pop(self.name, None)
            await self._conn.quit()

    async def __aenter__(self) -> "Observer":
        return self

    async def __aexit__(self, *exc: Any) -> Literal[False]:
        await self.aclose()
        return False


class Client:
    """An asyncio lockd client.

    addresses: "host:port", "unix:/path", "h1:p,h2:p" (failover, in order)
    or a list. password: sent with AUTH on every connection. tls: True or
    an ssl.SSLContext for TCP. resume: ask for resumable sessions (1.2).
    grace: the resume grace in seconds (None: lockd's default).
    max_idle: idle sessions kept for reuse. max_len: longest key/value.
    heartbeat: keep each hold's local deadline (a HELD with each LOCK and
    every third of the lease); False turns it off, and with it the loss
    notice for a frozen lockd or a cut network.
    """

    def __init__(
        self,
        addresses: Union[str, Sequence[str]] = "127.0.0.1:7390",
        *,
        password: Optional[str] = None,
        tls: Union[None, bool, _ssl.SSLContext] = None,
        resume: bool = True,
        grace: Optional[float] = None,
        max_idle: int = 16,
        max_len: int = 256,
        connect_timeout: float = 5.0,
        heartbeat: bool = True,
    ) -> None:
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
        self._heartbeat = heartbeat
        self._prefer = 0
        self._idle: List[_Conn] = []
        self._all: Set[_Conn] = set()
        self._cleanups: Set["asyncio.Task[None]"] = set()  # sessions being ended
        self._tasks: Set["asyncio.Task[None]"] = set()  # every background task
        self._draining: Set[_Conn] = set()  # sessions ended with QUIT, read to lockd's close
        self._closed = False
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    # -- sessions -------------------------------------------------------

    async def _open_stream(self, addr: Tuple[str, str, Optional[int]]) -> Tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        kind, host, port = addr
        tls = self._tls
        coro: Awaitable[Tuple[asyncio.StreamReader, asyncio.StreamWriter]]
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
            reader, writer = await asyncio.wait_for(coro, self._connect_timeout)
        except asyncio.TimeoutError:
            raise OSError(f"connect to {host}:{port} timed out") from None
        sock = writer.get_extra_info("socket")
        if sock is not None and kind == "tcp":
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        return reader, writer

    async def _checkout(self) -> _Conn:
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

    def _checkin(self, conn: _Conn) -> None:
        if conn.usable and conn.holder is None and not self._closed and len(self._idle) < self._max_idle:
            self._idle.append(conn)
        elif conn.state != "dead":
            conn.close()

    def _forget(self, conn: _Conn) -> None:
        self._all.discard(conn)
        if conn in self._idle:
            self._idle.remove(conn)

    def _spawn_end(self, sid: str, secret: str, start: int, grace_ms: int) -> None:
        """End a session that may be detached, in the background: RESUME it
        on a new connection and QUIT it at once (close() waits for these)."""
        self._cleanups.add(self._background(self._end_session(sid, secret, start, grace_ms)))

    def _background(self, coro: Coroutine[Any, Any, None]) -> "asyncio.Task[None]":
        """A task of the client's own (resume, end of a session): close()
        waits for or cancels every one."""
        assert self._loop is not None
        t = self._loop.create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
        t.add_done_callback(self._cleanups.discard)
        return t

    async def _end_session(self, sid: str, secret: str, start: int, grace_ms: int) -> None:
        assert self._loop is not None
        data = f"RESUME {sid} {secret}\r\nQUIT\r\n"
        if self._password is not None:
            data = f"AUTH {self._password}\r\n" + data
        n = len(self._addresses)
        end = self._loop.time() + max(grace_ms, 1000) / 1000.0
        delay = 0.05
        i = 0
        while True:
            addr = self._addresses[(start + i) % n]
            i += 1
            try:
                reader, writer = await self._open_stream(addr)
                try:
                    writer.write(data.encode("ascii"))
                    if writer.can_write_eof():
                        writer.write_eof()
                    answer = await asyncio.wait_for(self._resume_answer(reader), self._connect_timeout)
                finally:
                    writer.close()
                if not answer.startswith("ERR QUORUM"):
                    return  # ended (OK then QUIT), or already gone (ERR NOSESSION)
            except _STEP_ERRORS:
                pass
            if self._loop.time() >= end:
                return
            if i % n == 0:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)

    async def _resume_answer(self, reader: asyncio.StreamReader) -> str:
        """The answer to RESUME (after AUTH's, if any); then read on to
        lockd's close after QUIT, so that our close sends no reset."""
        skip = 1 if self._password is not None else 0
        answer = ""
        while True:
            raw = await reader.readline()
            if not raw:
                if not answer:
                    raise EOFError("closed before RESUME was answered")
                return answer
            line = raw.decode("ascii", "replace").rstrip("\r\n")
            if line.split(" ", 1)[0] in _proto.EVENTS or answer:
                continue
            if skip:
                skip -= 1
                continue
            answer = line

    async def _simple(self, line: str, multi: bool = False) -> Reply:
        conn = await self._checkout()
        try:
            r = await conn.call(line, multi=multi)
        except asyncio.CancelledError:
            conn.abandon("the caller gave up on its request")
            raise
        self._checkin(conn)
        if isinstance(r, str) and r.startswith("ERR "):
            raise from_reply(r)
        return r

    # -- locks ----------------------------------------------------------

    def lock(
        self,
        key: str,
        wait: Optional[float] = None,
        *,
        ttl: Optional[float] = None,
        shared: bool = False,
        permits: Optional[int] = None,
        on_lost: OnLost = None,
    ) -> Lock:
        """A Lock of key, not yet acquired: await it (or `async with` it)
        to wait for it (wait seconds at most; None: without limit; Timeout
        when the wait passed), or `await lk.acquire(...)` for True/False."""
        check_word(key, "key", self._max_len)
        if wait is not None:
            seconds_to_ms(wait, "wait", 0)
        ttl_ms = seconds_to_ms(ttl, "ttl", 1) if ttl is not None else None
        if permits is not None:
            check_count(permits, "permits")
        if shared and permits is not None:
            raise InvalidArgument("shared and permits exclude each other")
        return Lock(self, key, wait, ttl_ms, bool(shared), permits, on_lost)

    async def trylock(
        self,
        key: str,
        *,
        ttl: Optional[float] = None,
        shared: bool = False,
        permits: Optional[int] = None,
        on_lost: OnLost = None,
    ) -> Optional[Lock]:
        """One attempt: a held Lock, or None when the key is busy."""
        lk = self.lock(key, ttl=ttl, shared=shared, permits=permits, on_lost=on_lost)
        return lk if await lk.acquire(blocking=False) else None

    async def status(self, key: str, permits: Optional[int] = None) -> Status:
        """The key's state: a Status (state FREE, HELD, SHARED or PERMITS)."""
        check_word(key, "key", self._max_len)
        line = f"STATUS {key}"
        if permits is not None:
            line += f" PERMITS {check_count(permits, 'permits')}"
        r = await self._simple(line)
        assert isinstance(r, str)
        return Status(r)

    async def ping(self) -> bool:
        """Round trip to lockd; raises when it cannot be reached."""
        r = await self._simple("PING")
        return r == "PONG"

    async def stats(self) -> Dict[str, str]:
        """lockd's STATS as a dict of name -> str."""
        lines = await self._simple("STATS", multi=True)
        return {w[1]: w[2] for w in (ln.split(" ", 2) for ln in lines) if len(w) == 3}

    async def who(self, key: str) -> Who:
        """Who holds key (protocol 1.4), as a majority of the masters and
        the lockd asked know it: a Who of Holder lines and an optional
        Delayed. QuorumError when no majority answered; LockdError with
        code PROTOCOL for a reply line this client does not know."""
        check_word(key, "key", self._max_len)
        lines = await self._simple(f"WHO {key}", multi=True)
        assert isinstance(lines, list)
        return _proto.parse_who(lines)

    # -- election (protocol 1.3) -----------------------------------------

    def campaign(self, name: str, value: str, wait: Optional[float] = None, *, on_lost: OnLost = None) -> Leadership:
        """A Leadership of the election `name` publishing value, not yet
        won: await it (or `async with`: resigns on exit), or acquire()."""
        check_word(name, "name", self._max_len)
        check_word(value, "value", self._max_len)
        if wait is not None:
            seconds_to_ms(wait, "wait", 0)
        return Leadership(self, name, value, wait, on_lost)

    async def leader(self, name: str) -> Optional[Tuple[int, Optional[str]]]:
        """(fence, value) of the current leader, (fence, None) when the
        name is held by a plain lock, or None when nobody leads."""
        check_word(name, "name", self._max_len)
        r = await self._simple(f"LEADER {name}")
        assert isinstance(r, str)
        if r == "NONE":
            return None
        w = r.split(" ")
        if w[0] != "LEADER" or len(w) < 2:
            raise LockdError("PROTOCOL", f"unexpected reply {r!r}")
        return (int(w[1]), w[2] if len(w) > 2 else None)

    async def observe(self, name: str) -> Observer:
        """An Observer: `async for e in await c.observe(name)`, e being
        (fence, value) or None; the current state comes first."""
        check_word(name, "name", self._max_len)
        if self._closed:
            raise ConnectionError("client closed")
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return await Observer(self, name)._start()

    # -- lifetime -------------------------------------------------------

    async def close(self) -> None:
        """End every session (their holds are released by lockd), and wait
        (bounded) for the sessions ended in the background."""
        self._closed = True
        conns = list(self._all)
        self._idle.clear()
        await asyncio.gather(*(c.quit() for c in conns), return_exceptions=True)
        if self._cleanups:
            await asyncio.wait(set(self._cleanups), timeout=self._connect_timeout)
        if self._draining:
            readers = {c.task for c in self._draining if c.task is not None}
            if readers:
                await asyncio.wait(readers, timeout=1.0)
            for c in list(self._draining):
                c._close_transport()
        left = set(self._tasks) | {c.task for c in self._all if c.task is not None and not c.task.done()}
        for t in left:
            t.cancel()
        if left:
            await asyncio.wait(left, timeout=1.0)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> Literal[False]:
        await self.close()
        return False
