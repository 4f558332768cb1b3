"""lockd.Client: the blocking client, for threads.

It drives a lockd.aio.Client on an event loop in one daemon thread of its
own (the client's I/O thread), so the sync and async clients share one
protocol engine. Every method may be called from any thread; each call
blocks its caller only. Locks are held one session per holder (see
lockd.aio), so two threads locking one key exclude each other exactly as
two processes do. on_lost callbacks run on the I/O thread: keep them short.

A caller that gives up on a call (KeyboardInterrupt, an exception raised by
a signal handler such as an alarm's) cancels it on the I/O thread: a LOCK
still waiting is withdrawn, and one granted meanwhile is released, so
nothing stays held for a caller that is gone. At interpreter exit, every
client still open is closed, which ends its sessions.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import queue
import threading
import weakref
from typing import Any, Callable, Coroutine, Dict, Literal, Optional, Sequence, Tuple, TypeVar, Union

from . import aio
from ._proto import Status, Who
from .errors import ConnectionError, LockdError, LockLost

__all__ = ["Client", "Lock", "Leadership", "Observer"]

T = TypeVar("T")
OnLost = Optional[Callable[["Lock"], None]]


class Lock:
    """A lock, shared hold or permit of one key, as `c.lock(key)` returns
    it, acquired or not, as redis-py's Lock is used:

        lk = c.lock("k"); lk.acquire(); ...; lk.release()
        with c.lock("k", wait=5.0) as lk: ...

    acquire() returns True or False; entering `with` raises Timeout when
    the wait passes. Once held, fence is an int and lost a threading.Event,
    set as soon as the hold is lost (lockd sent LOST, or the local deadline
    passed). release() and leaving `with` raise LockLost after a loss."""

    def __init__(self, client: "Client", alock: aio.Lock, on_lost: OnLost) -> None:
        self._client = client
        self._a = alock
        self.key = alock.key
        self.lost = threading.Event()
        self._on_lost = on_lost
        # runs on the I/O thread, from what saw the loss
        alock._hooks.append(self._lost_hook)

    def _lost_hook(self, _alock: aio.Lock) -> None:
        self.lost.set()
        if self._on_lost is not None:
            self._on_lost(self)

    @property
    def fence(self) -> Optional[int]:
        return self._a.fence

    @property
    def lost_reason(self) -> Optional[str]:
        return self._a.lost_reason

    @property
    def released(self) -> bool:
        return self._a.released

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """True once the hold is granted; False when the key is busy
        (blocking=False: one attempt) or the wait passed (timeout seconds,
        else the wait given to lock(); None waits without limit)."""
        if self._a._conn is None:
            self.lost.clear()
        return self._client._run(self._a.acquire(blocking, timeout), self._orphan)

    def _orphan(self, granted: Any) -> None:
        # on the I/O thread: granted to a caller that gave up meanwhile
        if granted is True or isinstance(granted, aio.Lock):
            self._a._abandon()

    def owned(self) -> bool:
        """True while this Lock holds its key (acquired, not released, not
        lost, its local deadline not passed). No request is sent."""
        return self._a._owned()

    def locked(self) -> bool:
        """True when anyone holds the key (any kind of hold, any permit);
        asks lockd unless this Lock holds it."""
        return self._client._run(self._a.locked())

    def check(self) -> None:
        """Raise LockLost once the hold is lost."""
        self._a.check()

    def extend(self, ttl: float) -> None:
        """A new lease of ttl seconds for a lock taken with ttl=."""
        self._client._run(self._a.extend(ttl))

    def release(self) -> None:
        """Release the hold; again is a no-op. Raises LockLost when the hold
        was lost before (the key is no longer held by this Lock either
        way)."""
        self._client._run(self._a.release())

    def __enter__(self) -> "Lock":
        if self._a._conn is None:
            self.lost.clear()
        self._client._run(self._a._enter(), self._orphan)
        return self

    def __exit__(self, et: Any, ev: Any, tb: Any) -> Literal[False]:
        try:
            self.release()
        except LockdError:
            if et is None:
                raise
        return False

    def __repr__(self) -> str:
        return repr(self._a).replace("lockd.aio.", "lockd.")


class Leadership(Lock):
    """A campaign for an election, and once won its lock: fence, value,
    proclaim(value), resign(), lost."""

    _a: aio.Leadership

    @property
    def name(self) -> str:
        return self._a.name

    @property
    def value(self) -> str:
        return self._a.value

    def proclaim(self, value: str) -> None:
        self._client._run(self._a.proclaim(value))

    def resign(self) -> None:
        self.release()


class Observer:
    """An iterator of (fence, value) or None (no leader), current state
    first. close() (or leaving a `with`) stops observing."""

    def __init__(self, client: "Client", aobs: aio.Observer) -> None:
        self._client = client
        self._a = aobs
        self._q: "queue.Queue[Any]" = queue.Queue()
        client._run(self._attach())

    async def _attach(self) -> None:
        # on the I/O thread, so no event slips between queue and sink
        while not self._a._queue.empty():
            self._q.put(self._a._queue.get_nowait())
        self._a._sink = self._q.put

    def __iter__(self) -> "Observer":
        return self

    def __next__(self) -> Optional[Tuple[int, Optional[str]]]:
        return self.get()

    def get(self, timeout: Optional[float] = None) -> Optional[Tuple[int, Optional[str]]]:
        """The next event; raises queue.Empty after timeout seconds."""
        if self._a._closed and self._q.empty():
            raise StopIteration
        item = self._q.get(timeout=timeout)
        if isinstance(item, BaseException):
            raise item
        return item  # type: ignore[no-any-return]

    def close(self) -> None:
        self._client._run(self._a.aclose())

    def __enter__(self) -> "Observer":
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        self.close()
        return False


_open_clients: "weakref.WeakSet[Client]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """At exit, end the sessions of the clients still open: the I/O
    threads are daemons, and a resumable session whose socket the exit
    closes is only detached, its holds kept for the grace."""
    for c in list(_open_clients):
        try:
            c.close()
        except Exception:
            pass


class Client:
    """A blocking lockd client; the arguments are those of lockd.aio.Client.

    c.lock(key, wait=None, ttl=None, shared=False, permits=None, on_lost=None)
    gives a Lock: `with c.lock("k", wait=5.0) as lk:`, or lk.acquire() and
    lk.release(). wait and ttl are in seconds."""

    def __init__(self, addresses: Union[str, Sequence[str]] = "127.0.0.1:7390", **kw: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="lockd-io", daemon=True)
        self._thread.start()
        try:
            self._a: aio.Client = self._run(self._make(addresses, kw))
        except BaseException:
            self._stop()
            raise
        _open_clients.add(self)

    @staticmethod
    async def _make(addresses: Union[str, Sequence[str]], kw: Dict[str, Any]) -> aio.Client:
        c = aio.Client(addresses, **kw)
        c._loop = asyncio.get_running_loop()
        return c

    def _run(self, coro: Coroutine[Any, Any, T], orphan: Optional[Callable[[Any], None]] = None) -> T:
        """Run coro on the I/O thread and wait for it. When the caller
        gives up (any exception while it waits), the call is cancelled
        there; a result it can no longer take goes to orphan, on the I/O
        thread."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("lockd.Client called from its own I/O thread (an on_lost callback?)")
        if not self._thread.is_alive():
            coro.close()
            raise ConnectionError("client closed")
        loop = self._loop
        cf: "concurrent.futures.Future[T]" = concurrent.futures.Future()
        box: Dict[str, "asyncio.Task[T]"] = {}

        def done(t: "asyncio.Task[T]") -> None:
            if t.cancelled():
                cf.cancel()
                return
            exc = t.exception()
            try:
                if exc is not None:
                    cf.set_exception(exc)
                else:
                    cf.set_result(t.result())
            except concurrent.futures.InvalidStateError:  # the caller gave up
                if exc is None and orphan is not None:
                    orphan(t.result())

        def start() -> None:
            t = loop.create_task(coro)
            box["t"] = t
            t.add_done_callback(done)

        loop.call_soon_threadsafe(start)
        try:
            return cf.result()
        except BaseException:
            if cf.cancel():
                loop.call_soon_threadsafe(lambda: box["t"].cancel())
            elif orphan is not None and not cf.cancelled() and cf.exception() is None:
                result = cf.result()
                loop.call_soon_threadsafe(orphan, result)
            raise

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

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
        """A Lock of key, not yet acquired (the arguments are checked now)."""
        return Lock(self, self._a.lock(key, wait, ttl=ttl, shared=shared, permits=permits), on_lost)

    def trylock(
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
        return lk if lk.acquire(blocking=False) else None

    def status(self, key: str, permits: Optional[int] = None) -> Status:
        return self._run(self._a.status(key, permits))

    def ping(self) -> bool:
        return self._run(self._a.ping())

    def stats(self) -> Dict[str, str]:
        return self._run(self._a.stats())

    def who(self, key: str) -> Who:
        """Who holds key (protocol 1.4): see lockd.aio.Client.who."""
        return self._run(self._a.who(key))

    def campaign(self, name: str, value: str, wait: Optional[float] = None, *, on_lost: OnLost = None) -> Leadership:
        """A Leadership of the election name, not yet won: `with` it, or
        acquire() it."""
        return Leadership(self, self._a.campaign(name, value, wait), on_lost)

    def leader(self, name: str) -> Optional[Tuple[int, Optional[str]]]:
        return self._run(self._a.leader(name))

    def observe(self, name: str) -> Observer:
        return Observer(self, self._run(self._a.observe(name)))

    def close(self) -> None:
        """End every session (lockd releases their holds) and stop the I/O
        thread. Idempotent."""
        _open_clients.discard(self)
        if self._thread.is_alive():
            try:
                self._run(self._a.close())
            finally:
                self._stop()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        self.close()
        return False
