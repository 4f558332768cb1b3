"""lockd.Client: the blocking client, for threads.

It drives a lockd.aio.Client on an event loop in one daemon thread of its
own (the client's I/O thread), so the sync and async clients share one
protocol engine. Every method may be called from any thread; each call
blocks its caller only. Locks are held one session per holder (see
lockd.aio), so two threads locking one key exclude each other exactly as
two processes do. on_lost callbacks run on the I/O thread: keep them short.
"""

import asyncio
import queue
import threading

from . import aio

__all__ = ["Client", "Lock", "Leadership", "Observer"]


class Lock:
    """A granted lock, shared hold or permit. fence is an int; lost is a
    threading.Event set as soon as lockd reports the hold lost. `with`
    releases it, and raises LockLost on exit when it was lost."""

    def __init__(self, client, alock, on_lost):
        self._client = client
        self._a = alock
        self.key = alock.key
        self.fence = alock.fence
        self.lost = threading.Event()
        self._on_lost = on_lost
        # runs on the I/O thread, from the reader that saw LOST
        alock._hooks.append(self._lost_hook)
        if alock.lost.is_set():
            self.lost.set()

    def _lost_hook(self, _alock):
        self.lost.set()
        if self._on_lost is not None:
            self._on_lost(self)

    @property
    def lost_reason(self):
        return self._a.lost_reason

    @property
    def released(self):
        return self._a.released

    def check(self):
        """Raise LockLost once the hold is lost."""
        self._a.check()

    def extend(self, ttl):
        """A new lease of ttl seconds for a lock taken with ttl=."""
        self._client._run(self._a.extend(ttl))

    def release(self):
        """Release the hold (idempotent)."""
        self._client._run(self._a.release())

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        self.release()
        if et is None:
            self.check()
        return False

    def __repr__(self):
        return repr(self._a).replace("lockd.aio.", "lockd.")


class Leadership(Lock):
    """A won election: fence, value, proclaim(value), resign(), lost."""

    @property
    def name(self):
        return self._a.name

    @property
    def value(self):
        return self._a.value

    def proclaim(self, value):
        self._client._run(self._a.proclaim(value))

    def resign(self):
        self.release()


class Observer:
    """An iterator of (fence, value) or None (no leader), current state
    first. close() (or leaving a `with`) stops observing."""

    def __init__(self, client, aobs):
        self._client = client
        self._a = aobs
        self._q = queue.Queue()
        client._run(self._attach())

    async def _attach(self):
        # on the I/O thread, so no event slips between queue and sink
        while not self._a._queue.empty():
            self._q.put(self._a._queue.get_nowait())
        self._a._sink = self._q.put

    def __iter__(self):
        return self

    def __next__(self):
        return self.get()

    def get(self, timeout=None):
        """The next event; raises queue.Empty after timeout seconds."""
        if self._a._closed and self._q.empty():
            raise StopIteration
        item = self._q.get(timeout=timeout)
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self):
        self._client._run(self._a.aclose())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class _LockCall:
    """What lock() returns: a context manager; lock(...).acquire() or
    entering it gives the Lock."""

    def __init__(self, client, fn):
        self._client = client
        self._fn = fn
        self._lock = None

    def acquire(self):
        return self._fn()

    def __enter__(self):
        self._lock = self._fn()
        return self._lock

    def __exit__(self, et, ev, tb):
        return self._lock.__exit__(et, ev, tb)


class Client:
    """A blocking lockd client; the arguments are those of lockd.aio.Client.

    c.lock(key, wait=None, ttl=None, shared=False, permits=None, on_lost=None)
    is a context manager (`with c.lock("k", wait=5.0) as lk:`); call
    .acquire() on it for a Lock to release yourself. wait and ttl are in
    seconds."""

    def __init__(self, addresses="127.0.0.1:7390", **kw):
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="lockd-io", daemon=True)
        self._thread.start()
        try:
            self._a = self._run(self._make(addresses, kw))
        except BaseException:
            self._stop()
            raise

    @staticmethod
    async def _make(addresses, kw):
        c = aio.Client(addresses, **kw)
        c._loop = asyncio.get_running_loop()
        return c

    def _run(self, coro):
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("lockd.Client called from its own I/O thread (an on_lost callback?)")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def _stop(self):
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def lock(self, key, wait=None, *, ttl=None, shared=False, permits=None, on_lost=None):
        call = self._a.lock(key, wait, ttl=ttl, shared=shared, permits=permits)  # validates now

        def fn():
            return Lock(self, self._run(_await(call)), on_lost)

        return _LockCall(self, fn)

    def trylock(self, key, *, ttl=None, shared=False, permits=None, on_lost=None):
        """One attempt: a Lock, or None when the key is busy."""
        a = self._run(self._a.trylock(key, ttl=ttl, shared=shared, permits=permits))
        return None if a is None else Lock(self, a, on_lost)

    def status(self, key, permits=None):
        return self._run(self._a.status(key, permits))

    def ping(self):
        return self._run(self._a.ping())

    def stats(self):
        return self._run(self._a.stats())

    def campaign(self, name, value, wait=None, *, on_lost=None):
        call = self._a.campaign(name, value, wait)

        def fn():
            return Leadership(self, self._run(_await(call)), on_lost)

        return _LockCall(self, fn)

    def leader(self, name):
        return self._run(self._a.leader(name))

    def observe(self, name):
        return Observer(self, self._run(self._a.observe(name)))

    def close(self):
        """End every session (lockd releases their holds) and stop the I/O
        thread. Idempotent."""
        if self._thread.is_alive():
            try:
                self._run(self._a.close())
            finally:
                self._stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


async def _await(awaitable):
    return await awaitable

