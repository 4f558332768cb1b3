"""The blocking client against real masters and two real lockd."""

import threading
import time
import uuid

import pytest

import lockd


def key(name):
    return f"py-{name}-{uuid.uuid4().hex[:8]}"


def try_until(fn, limit=5.0):
    """A trylock expected to succeed: right after a release or a contended
    phase, a master that answered an earlier attempt late may keep a key
    busy for up to that attempt's lease (doc/protocol.md: liveness, never
    safety), so poll, bounded, instead of asserting the first try."""
    end = time.monotonic() + limit
    while True:
        lk = fn()
        if lk is not None or time.monotonic() > end:
            return lk
        time.sleep(0.05)


def test_eight_threads_exclude_each_other(env, ca, cb):
    """8 threads, 4 sharing a client on lockd A and 4 on B: never two
    inside, fences strictly grow in grant order, no increment lost."""
    k = key("mutex")
    guard = threading.Lock()
    state = {"inside": 0, "overlaps": 0, "counter": 0}
    fences = []
    errors = []
    rounds = 5

    def worker(c):
        try:
            for _ in range(rounds):
                with c.lock(k, wait=60) as lk:
                    with guard:
                        state["inside"] += 1
                        if state["inside"] > 1:
                            state["overlaps"] += 1
                        fences.append(lk.fence)
                    v = state["counter"]
                    time.sleep(0.002)  # widen the window an overlap would need
                    state["counter"] = v + 1
                    with guard:
                        state["inside"] -= 1
        except Exception as e:  # reported below, not swallowed
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(ca if i < 4 else cb,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not errors
    assert state["overlaps"] == 0
    assert state["counter"] == 8 * rounds
    assert len(fences) == 8 * rounds
    assert all(a < b for a, b in zip(fences, fences[1:])), fences


def test_two_holders_in_one_thread_are_two_holders(ca):
    """One client, one key, two holders: the second waits (no reentrancy
    across holders), even in the same thread."""
    k = key("self")
    lk = ca.lock(k)
    assert lk.acquire() is True
    with pytest.raises(lockd.Timeout):
        with ca.lock(k, wait=0.2):
            pass
    assert ca.lock(k, wait=0.2).acquire() is False
    assert ca.trylock(k) is None
    lk.release()
    lk2 = try_until(lambda: ca.trylock(k))
    assert lk2 is not None and lk2.fence > lk.fence
    lk2.release()


def test_wait_timeout(ca, cb):
    k = key("timeout")
    with ca.lock(k, wait=5):
        t0 = time.monotonic()
        with pytest.raises(lockd.Timeout) as ei:
            with cb.lock(k, wait=0.3):
                pass
        took = time.monotonic() - t0
        assert ei.value.code == "TIMEOUT"
        assert 0.29 <= took < 0.3 + 2.0
    with cb.lock(k, wait=5) as lk:  # free again after the release
        assert lk.fence > 0


def test_trylock_busy(ca, cb):
    k = key("busy")
    lk = ca.trylock(k)
    assert lk is not None
    assert cb.trylock(k) is None
    st = cb.status(k)
    assert st.state == "HELD" and 0 < st.ttl_ms <= 3000
    lk.release()
    assert lk.released
    assert cb.status(k).state == "FREE"
    lk2 = try_until(lambda: cb.trylock(k))
    assert lk2.fence > lk.fence
    lk2.release()


def test_shared_holds(ca, cb):
    k = key("shared")
    readers = [ca.trylock(k, shared=True), ca.trylock(k, shared=True), cb.trylock(k, shared=True)]
    assert all(r is not None for r in readers)
    assert cb.trylock(k) is None  # no writer while readers hold
    st = ca.status(k)
    assert st.state == "SHARED" and st.holders == 3
    for r in readers:
        r.release()
    w = try_until(lambda: cb.trylock(k))
    assert w is not None
    assert ca.trylock(k, shared=True) is None  # no reader while a writer holds
    w.release()


def test_permits_at_most_n(ca, cb):
    k = key("permits")
    n = 2
    guard = threading.Lock()
    state = {"inside": 0, "max": 0}
    errors = []

    def worker(c):
        try:
            for _ in range(3):
                with c.lock(k, wait=60, permits=n):
                    with guard:
                        state["inside"] += 1
                        state["max"] = max(state["max"], state["inside"])
                    time.sleep(0.02)
                    with guard:
                        state["inside"] -= 1
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(ca if i % 2 else cb,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not errors
    assert state["max"] == n  # never more than n, and n were used
    p = [try_until(lambda: ca.trylock(k, permits=n)), try_until(lambda: cb.trylock(k, permits=n))]
    assert all(p)
    assert ca.trylock(k, permits=n) is None
    assert ca.status(k, permits=n).held == 2
    for x in p:
        x.release()


BAD_KEYS = ["k WAIT", "k\tx", "k\r", "k\nPING", "k\x00", "k\x7f", "kä", "", "x" * 257]


@pytest.mark.parametrize("bad", BAD_KEYS)
def test_refused_before_sending(bad):
    # nothing listens there: a ConnectionError would mean it tried to send
    c = lockd.Client("127.0.0.1:1")
    try:
        with pytest.raises(lockd.InvalidArgument):
            c.lock(bad, wait=1)
        with pytest.raises(lockd.InvalidArgument):
            c.trylock(bad)
        with pytest.raises(lockd.InvalidArgument):
            c.status(bad)
        with pytest.raises(lockd.InvalidArgument):
            c.campaign("ok", bad)
    finally:
        c.close()


def test_bad_numbers_refused():
    c = lockd.Client("127.0.0.1:1")
    try:
        for kw in ({"wait": -1}, {"wait": 3e9}, {"ttl": 0}, {"permits": 0}, {"shared": True, "permits": 2}):
            with pytest.raises(lockd.InvalidArgument):
                c.lock("k", **kw)
        with pytest.raises(lockd.InvalidArgument):
            lockd.Client("host:notaport")
        with pytest.raises(lockd.ConnectionError):
            c.ping()
    finally:
        c.close()


def test_unix_socket_and_failover(env):
    c = lockd.Client(env.a_sock)
    try:
        assert c.ping()
    finally:
        c.close()
    # the first address refuses: the client goes on to the next
    c = lockd.Client(f"127.0.0.1:1,{env.b}")
    try:
        with c.lock(key("failover"), wait=5) as lk:
            assert lk.fence > 0
    finally:
        c.close()


def test_lost_when_masters_stop(env, ca):
    """SIGSTOP two of three masters: LOST reaches the holder before the
    lease ends, as the event, the callback, check() and the with exit."""
    k = key("lost")
    called = threading.Event()
    try:
        with pytest.raises(lockd.LockLost):
            with ca.lock(k, wait=5, on_lost=lambda lk: called.set()) as lk:
                t0 = time.monotonic()
                env.run("master-stop", "0")
                env.run("master-stop", "1")
                assert lk.lost.wait(env.lease + 2.0), "no LOST"
                took = time.monotonic() - t0
                assert took <= env.lease + 0.5, took  # before the lease's end (+ slack)
                assert called.wait(1)
                with pytest.raises(lockd.LockLost):
                    lk.check()
    finally:
        env.run("master-cont", "0")
        env.run("master-cont", "1")
    env.wait_grants()


def test_plain_session_lost_on_lockd_kill(env):
    """A version-1 session (no resume) that loses its connection loses its
    holds, and says so."""
    c = lockd.Client(env.a, resume=False)
    try:
        lk = c.lock(key("kill"))
        assert lk.acquire()
        env.run("lockd-kill", "a")
        assert lk.lost.wait(5)
        with pytest.raises(lockd.LockLost):
            lk.check()
        with pytest.raises(lockd.LockLost):
            lk.release()  # a release after a loss says so
        lk.release()  # and then is a no-op
    finally:
        c.close()
        env.run("lockd-start", "a")
