"""The local lease deadline (issue 29, items 1 and 2): a hold is reported
lost, as for LOST, before the lease lockd last confirmed can end, even when
lockd tells nothing: frozen (SIGSTOP), killed with nowhere to resume, or
cut off by the network. The bound asserted is the README's sentence.

Each test takes the hold and makes the fault at once. When the fault was
complete within a quarter of the lease of the request, no heartbeat can
have moved the deadline (the first goes out a third of the lease after the
grant), and the bound is the time the LOCK was sent plus the lease; when
the harness was slower, the bound is the fault's completion plus the
lease (the last confirmation was sent before it). Times are taken on the
I/O thread, by on_lost, when the loss is reported."""

import asyncio
import os
import signal
import threading
import time
import uuid

import pytest
from proxy import Proxy

import lockd
from lockd import aio

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The README's promise, word for word (whitespace aside).
README_DEADLINE = (
    "A hold is reported lost, exactly as for a `LOST` event, before the lease "
    "lockd last confirmed for it can end: no later than the moment its `LOCK` "
    "was sent plus the lease, even when lockd is frozen, killed with no other "
    "lockd to resume on, or cut off by the network."
)


def key(name):
    return f"pyd-{name}-{uuid.uuid4().hex[:8]}"


def bound(t_req, t_fault, lease):
    """The latest moment the loss may be reported (see the module doc)."""
    if t_fault - t_req < lease / 4:
        return t_req + lease, "LOCK sent + lease"
    return t_fault + lease, "fault complete + lease (slow harness)"


def other_gets_it(env, k, out):
    """A client of lockd B waits for k; out gets the time it is granted."""
    c = lockd.Client(env.b)
    try:
        with c.lock(k, wait=env.lease * 4):
            out.append(time.monotonic())
    except lockd.LockdError as e:
        out.append(e)
    finally:
        c.close()


def test_readme_says_what_the_deadline_guarantees():
    text = " ".join(open(os.path.join(ROOT, "README.md")).read().split())
    assert README_DEADLINE in text


def test_lost_by_deadline_when_lockd_frozen(env):
    c = lockd.Client(env.a)
    k = key("frozen")
    seen = []
    lk = c.lock(k, on_lost=lambda _: seen.append(time.monotonic()))
    got = []
    b = None
    try:
        t_req = time.monotonic()
        assert lk.acquire()
        env.run("lockd-stop", "a")
        t_stop = time.monotonic()
        b = threading.Thread(target=other_gets_it, args=(env, k, got))
        b.start()
        assert lk.lost.wait(env.lease + 2.0), "no loss reported while lockd is frozen"
        limit, what = bound(t_req, t_stop, env.lease)
        print(
            f"FIGURE sigstop: loss {seen[0] - t_stop:.3f} s after SIGSTOP, "
            f"grant+{seen[0] - t_req:.3f} s (lease {env.lease:.3f} s)"
        )
        assert seen[0] <= limit, f"loss reported {seen[0] - limit:.3f} s after {what}"
        assert "local deadline" in lk.lost_reason
        assert not lk.owned()
        with pytest.raises(lockd.LockLost):
            lk.check()
        with pytest.raises(lockd.LockLost):
            lk.release()
    finally:
        env.run("lockd-cont", "a")
        if b is not None:
            b.join(env.lease * 5)
        c.close()
    # the other client got the key only after the loss was reported
    assert got and not isinstance(got[0], Exception), got
    assert seen[0] < got[0]
    env.wait_grants()


def test_lost_by_deadline_when_lockd_killed(env):
    """No other lockd to resume on: the loss comes at the deadline, not at
    the end of the resume window (the grace)."""
    c = lockd.Client(env.a)
    k = key("killed")
    seen = []
    lk = c.lock(k, on_lost=lambda _: seen.append(time.monotonic()))
    restarted = False
    try:
        t_req = time.monotonic()
        assert lk.acquire()
        # SIGKILL here, to know when it landed; testenv then does its
        # bookkeeping (waits for the exit, forgets the pid)
        with open(os.path.join(env.dir, "a", "pid")) as f:
            os.kill(int(f.read()), signal.SIGKILL)
        t_kill = time.monotonic()
        env.run("lockd-kill", "a")
        assert lk.lost.wait(env.lease + 2.0), "no loss reported while resuming"
        limit, what = bound(t_req, t_kill, env.lease)
        print(
            f"FIGURE sigkill: loss {seen[0] - t_kill:.3f} s after SIGKILL, "
            f"grant+{seen[0] - t_req:.3f} s (lease {env.lease:.3f} s)"
        )
        assert seen[0] <= limit, f"loss reported {seen[0] - limit:.3f} s after {what}"
        with pytest.raises(lockd.LockLost):
            lk.release()
        env.run("lockd-start", "a")
        restarted = True
    finally:
        if not restarted:
            env.run("lockd-start", "a")
        c.close()
    env.wait_grants()


def test_lost_by_deadline_when_link_cut(env):
    """asyncio client, through a proxy that stops forwarding (no reset)."""
    px = Proxy(env.a)

    async def main():
        c = aio.Client(px.addr, connect_timeout=1.0)
        seen = []
        lk = c.lock(key("cut"), on_lost=lambda _: seen.append(time.monotonic()))
        try:
            t_req = time.monotonic()
            await lk
            px.cut()
            t_cut = time.monotonic()
            await asyncio.wait_for(lk.lost.wait(), env.lease + 2.0)
            limit, what = bound(t_req, t_cut, env.lease)
            print(f"FIGURE cut: loss {seen[0] - t_cut:.3f} s after the cut, grant+{seen[0] - t_req:.3f} s")
            assert seen[0] <= limit, f"loss reported {seen[0] - limit:.3f} s after {what}"
            assert not await lk.owned()
            with pytest.raises(lockd.LockLost):
                await lk.release()
        finally:
            await c.close()

    try:
        asyncio.run(asyncio.wait_for(main(), 30))
    finally:
        px.stop()


def test_heartbeat_keeps_a_healthy_hold(env, ca, cb):
    """A healthy lockd never lets the deadline pass: held past one lease,
    confirmed by heartbeats, released without a loss."""
    k = key("healthy")
    lk = ca.lock(k)
    assert lk.acquire()
    time.sleep(env.lease * 1.4)
    assert not lk.lost.is_set(), lk.lost_reason
    assert lk.owned()
    assert lk._a._conn.heartbeats >= 2
    assert cb.trylock(k) is None
    lk.release()
    assert not lk.lost.is_set()
