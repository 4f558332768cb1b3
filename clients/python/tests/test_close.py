"""Once close() returns, nothing of the client says it holds anything.

The Go client had the flaw (commit ac7726a): after Client.Close returned,
a leadership could still report held until its reader noticed the closed
connection ('old leadership still held after Close' under a busy core).
Here close() ends every session itself (aio _Conn.quit: QUIT, then _die,
which marks the holder lost; abandon() for a waiting LOCK or a resuming
session), so every Lock, shared hold, permit and Leadership is lost, and a
waiting acquire fails, before close() returns; and lockd released them."""

import asyncio
import threading
import time
import uuid

import pytest

import lockd
from lockd import aio
from proxy import Proxy


def key(name):
    return f"pyq-{name}-{uuid.uuid4().hex[:8]}"


def free_within(c, k, limit=3.0, **kw):
    """Poll with trylock until c gets k (lockd released it): True, or False
    after limit seconds."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        lk = c.trylock(k, **kw)
        if lk is not None:
            lk.release()
            return True
        time.sleep(0.02)
    return False


def test_sync_close_ends_every_hold(env, need_13):
    c = lockd.Client(env.a)
    other = lockd.Client(env.b)
    try:
        k, ks, kp, name, kw = key("lock"), key("shared"), key("permit"), key("lead"), key("wait")
        lk = c.lock(k, wait=5)
        sh = c.lock(ks, wait=5, shared=True)
        pm = c.lock(kp, wait=5, permits=2)
        ld = c.campaign(name, "v1", wait=5)
        for h in (lk, sh, pm, ld):
            assert h.acquire()
            assert h.owned()
        # a LOCK waiting at close (the abandon path): it fails, holds nothing
        blocker = other.lock(kw)
        assert blocker.acquire()
        waiter = c.lock(kw)
        got = []

        def wait():
            try:
                got.append(waiter.acquire())
            except Exception as e:  # expected: the session ended
                got.append(e)

        t = threading.Thread(target=wait)
        t.start()
        time.sleep(0.3)  # its LOCK waits at lockd A
        c.close()
        # at once, no polling: close() has returned
        for h in (lk, sh, pm, ld):
            assert not h.owned(), h
            assert h.lost.is_set(), h
            with pytest.raises(lockd.LockLost):
                h.check()
        t.join(5)
        assert not t.is_alive()
        assert len(got) == 1 and isinstance(got[0], lockd.ConnectionError), got
        assert not waiter.owned()
        # and lockd released them (QUIT), not a detached session's grace
        blocker.release()
        assert free_within(other, k)
        assert free_within(other, ks)
        assert other.status(kp, permits=2).free
        assert other.leader(name) is None
        assert free_within(other, kw)
    finally:
        c.close()
        other.close()


def test_aio_close_ends_every_hold(env, need_13):
    async def main():
        c = aio.Client(env.a)
        other = aio.Client(env.b)
        try:
            k, ks, name = key("alock"), key("ashared"), key("alead")
            lk = await c.lock(k, wait=5)
            sh = await c.lock(ks, wait=5, shared=True)
            pm = await c.lock(key("apermit"), wait=5, permits=2)
            ld = await c.campaign(name, "v1", wait=5)
            for h in (lk, sh, pm, ld):
                assert await h.owned()
            await c.close()
            for h in (lk, sh, pm, ld):
                assert not await h.owned(), h
                assert h.lost.is_set(), h
            assert await other.leader(name) is None
        finally:
            await c.close()
            await other.close()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_aio_session_ended_between_grant_and_acquire_return(env, monkeypatch):
    """The session ends (as close() ends it) after lockd's OK reached the
    reader but before the acquiring task runs again: _die found no holder
    to tell, so the acquire itself must not hand out a held Lock."""
    real = aio._Conn.lock_request

    def lock_request(self, *a, **kw):
        lp, hp = real(self, *a, **kw)
        # runs before the acquiring task resumes (added before it awaits)
        lp.fut.add_done_callback(lambda f: self.abandon("client closed"))
        return lp, hp

    async def main():
        # heartbeat off: nothing between the OK and the hand-out
        c = aio.Client(env.a, heartbeat=False)
        try:
            monkeypatch.setattr(aio._Conn, "lock_request", lock_request)
            lk = c.lock(key("race"), wait=5)
            with pytest.raises(lockd.LockLost):
                await lk.acquire()
            assert not await lk.owned()
            assert lk.lost.is_set()
        finally:
            monkeypatch.setattr(aio._Conn, "lock_request", real)
            await c.close()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_aio_close_while_a_connection_is_made(env):
    """close() while an acquire's connection is still being made: that
    session ends too (it has no socket yet to send QUIT on), and the
    acquire fails instead of going on to take the key after close()."""

    async def main():
        c = aio.Client(env.a)
        k = key("connecting")
        t = asyncio.ensure_future(c.lock(k, wait=5))
        await asyncio.sleep(0)  # t runs up to its connect, and waits there
        assert c._all and all(conn.writer is None for conn in c._all)
        await c.close()
        with pytest.raises(lockd.ConnectionError):
            await t
        async with aio.Client(env.b) as other:
            assert (await other.status(k)).free

    asyncio.run(asyncio.wait_for(main(), 30))


def test_aio_close_whose_quit_goes_unanswered(env):
    """close() whose QUIT gets no answer (the link went silent, no reset):
    lockd may keep the session, attached to a connection it has not seen
    die, with its holds. close() ends it on a new connection (RESUME on the
    other lockd, QUIT), so another client gets the key at once, not when
    the session's grace (10 s) or the link's end would free it."""
    px = Proxy(env.a)

    async def main():
        c = aio.Client([px.addr, env.b], connect_timeout=1.0, grace=10)
        k = key("quit-unanswered")
        await c.lock(k)
        px.cut()
        await c.close()
        t_closed = time.monotonic()
        async with aio.Client(env.b) as other:
            got = await other.lock(k, wait=20)
            dt = time.monotonic() - t_closed
            await got.release()
        print(f"FIGURE quit-unanswered: granted {dt:.3f} s after close() returned")
        assert dt < 3.0, f"granted {dt:.3f} s after close(): the session was left to lockd"

    try:
        asyncio.run(asyncio.wait_for(main(), 40))
    finally:
        px.stop()
