"""lockd.aio.Client against real masters and two real lockd."""

import asyncio
import time
import uuid

import pytest

import lockd
from lockd import aio


def key(name):
    return f"pya-{name}-{uuid.uuid4().hex[:8]}"


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 90))


def test_eight_tasks_exclude_each_other(env):
    async def main():
        ca, cb = aio.Client(env.a), aio.Client(env.b)
        k = key("mutex")
        state = {"inside": 0, "overlaps": 0, "counter": 0}
        fences = []

        async def worker(c):
            for _ in range(5):
                async with c.lock(k, wait=60) as lk:
                    state["inside"] += 1
                    if state["inside"] > 1:
                        state["overlaps"] += 1
                    fences.append(lk.fence)
                    v = state["counter"]
                    await asyncio.sleep(0.002)  # others run meanwhile
                    state["counter"] = v + 1
                    state["inside"] -= 1

        try:
            await asyncio.gather(*(worker(ca if i < 4 else cb) for i in range(8)))
        finally:
            await ca.close()
            await cb.close()
        assert state["overlaps"] == 0
        assert state["counter"] == 40
        assert all(a < b for a, b in zip(fences, fences[1:])), fences

    run(main())


def test_timeout_trylock_shared_permits(env):
    async def main():
        async with aio.Client(env.a) as c:
            k = key("t")
            lk = await c.lock(k, wait=5)
            t0 = time.monotonic()
            with pytest.raises(lockd.Timeout):
                await c.lock(k, wait=0.3)
            assert 0.29 <= time.monotonic() - t0 < 2.3
            assert await c.trylock(k) is None
            await lk.release()
            s = [await c.trylock(k, shared=True) for _ in range(3)]
            assert all(s) and (await c.status(k)).holders == 3
            assert await c.trylock(k) is None
            for x in s:
                await x.release()
            p = [await c.trylock(k + "p", permits=2) for _ in range(3)]
            assert p[0] and p[1] and p[2] is None
            for x in p[:2]:
                await x.release()

    run(main())


def test_cancel_waiting_lock_releases_its_place(env):
    """Cancelling a task that waits ends its session: lockd drops the
    waiter, and the key goes to the next one without delay."""

    async def main():
        async with aio.Client(env.a) as c:
            k = key("cancel")
            lk = await c.lock(k)
            t = asyncio.ensure_future(_take(c, k))
            await asyncio.sleep(0.1)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            await lk.release()
            lk2 = await c.lock(k, wait=2)
            assert (await c.status(k)).waiters == 0
            await lk2.release()

    async def _take(c, k):
        return await c.lock(k)

    run(main())


def test_lost_sets_event(env):
    async def main():
        async with aio.Client(env.b) as c:
            got = []
            lk = await c.lock(key("lost"), on_lost=got.append)
            t0 = time.monotonic()
            try:
                env.run("master-stop", "1")
                env.run("master-stop", "2")
                await asyncio.wait_for(lk.lost.wait(), env.lease + 2.0)
                assert time.monotonic() - t0 <= env.lease + 0.5
                assert got == [lk]
                with pytest.raises(lockd.LockLost):
                    lk.check()
            finally:
                env.run("master-cont", "1")
                env.run("master-cont", "2")
            with pytest.raises(lockd.LockLost):
                async with lk:
                    pass

    run(main())
    env.wait_grants()
