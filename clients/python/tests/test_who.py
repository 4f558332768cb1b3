"""who(key) (protocol 1.4): the reply parser on canned lines (DELAYED
included, which lockd does not send yet), then sync and asyncio against
real masters and two real lockd: an exclusive hold seen from its own
lockd (client, session, held_ms) and from the other (lockd's name only),
a free key, shared holders, permits, a key refused before sending."""

import asyncio
import socket
import uuid

import pytest

import lockd
from lockd import aio
from lockd._proto import parse_who


def key(name):
    return f"pyw-{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def need_14(env):
    if not env.speaks("WHO x"):
        pytest.skip("lockd does not speak 1.4 WHO yet")


def name_of(addr):
    """lockd's default name: HOST:PORT of its first listen address."""
    return f"{socket.gethostname()}:{addr.rsplit(':', 1)[1]}"


# -- the parser, on canned lines -------------------------------------------


def test_parse_holders_and_delayed():
    w = parse_who(
        [
            "HOLDER 12 exclusive lockd=h:7390 client=127.0.0.1:5555 session=s1 held_ms=0",
            "HOLDER 13 shared lockd=lockd-b",
            "HOLDER 14 permit=2/5 lockd=- client=- session=- held_ms=1500",
            "HOLDER 15 permit=0/- lockd=-",
            "DELAYED 250 16",
        ]
    )
    assert w.holders == (
        lockd.Holder(12, "exclusive", "h:7390", client="127.0.0.1:5555", session="s1", held_ms=0),
        lockd.Holder(13, "shared", "lockd-b"),
        lockd.Holder(14, "permit", "-", permit=2, permits=5, client="-", session="-", held_ms=1500),
        lockd.Holder(15, "permit", "-", permit=0),
    )
    assert w.holders[1].held_ms is None and w.holders[0].held_ms == 0  # absent is not 0
    assert w.delayed == lockd.Delayed(ms_left=250, fence=16)
    assert not w.free
    assert parse_who([]).free and parse_who([]) == lockd.Who()
    assert parse_who(["DELAYED 0 9"]) == lockd.Who((), lockd.Delayed(0, 9))
    with pytest.raises(AttributeError):
        w.holders[0].fence = 1  # immutable


def test_parse_ignores_unknown_tokens():
    w = parse_who(["HOLDER 7 exclusive lockd=a future=1 client=x:1 later=a=b", "DELAYED 5 8 why=lapsed"])
    assert w.holders == (lockd.Holder(7, "exclusive", "a", client="x:1"),)
    assert w.delayed == lockd.Delayed(5, 8)


@pytest.mark.parametrize(
    "line",
    [
        "OWNER 7 exclusive lockd=a",  # unknown line kind
        "HOLDER",
        "HOLDER 7 exclusive",  # no lockd=
        "HOLDER x exclusive lockd=a",
        "HOLDER -7 exclusive lockd=a",
        "HOLDER 7 sole lockd=a",  # unknown kind
        "HOLDER 7 permit=2 lockd=a",
        "HOLDER 7 permit=/3 lockd=a",
        "HOLDER 7 exclusive lockd=a held_ms=1.5",
        "HOLDER 7 exclusive lockd=a stray",
        "DELAYED 5",
        "DELAYED x 5",
        "ERR QUORUM late",
    ],
)
def test_parse_refuses_what_it_does_not_know(line):
    with pytest.raises(lockd.LockdError) as e:
        parse_who([line])
    assert e.value.code == "PROTOCOL"


def test_parse_refuses_two_delayed():
    with pytest.raises(lockd.LockdError):
        parse_who(["DELAYED 5 8", "DELAYED 4 8"])


# -- against real lockd ---------------------------------------------------


def test_who_exclusive_here_and_elsewhere(env, need_14, ca, cb):
    k = key("x")
    assert ca.who(k) == lockd.Who() and ca.who(k).free  # free key: END alone
    with ca.lock(k, wait=5) as lk:
        here = ca.who(k)
        assert len(here.holders) == 1
        h = here.holders[0]
        host, port = lk._a._conn.writer.get_extra_info("sockname")[:2]
        assert (h.fence, h.kind, h.lockd, h.client) == (lk.fence, "exclusive", name_of(env.a), f"{host}:{port}")
        assert h.session is not None and h.held_ms is not None and 0 <= h.held_ms < 10000
        there = cb.who(k)
        assert len(there.holders) == 1 and there.delayed is None
        g = there.holders[0]
        assert (g.kind, g.lockd, g.client, g.session, g.held_ms) == ("exclusive", name_of(env.a), None, None, None)
        assert g.fence >= lk.fence
    assert ca.who(k).free and cb.who(k).free


def test_who_shared_and_permits(env, need_14, ca, cb):
    k, p = key("s"), key("p")
    with ca.lock(k, shared=True, wait=5) as la, cb.lock(k, shared=True, wait=5) as lb:
        w = ca.who(k)
        assert sorted(h.kind for h in w.holders) == ["shared", "shared"]
        assert sorted(h.lockd for h in w.holders) == sorted([name_of(env.a), name_of(env.b)])
        assert {h.fence for h in w.holders if h.lockd == name_of(env.a)} == {la.fence}
        assert all(h.fence >= lb.fence for h in w.holders if h.lockd == name_of(env.b))
    with ca.lock(p, permits=3, wait=5), cb.lock(p, permits=3, wait=5):
        w = cb.who(p)
        assert sorted((h.kind, h.permit, h.permits) for h in w.holders) == [("permit", 0, 3), ("permit", 1, 3)]


def test_who_refuses_a_bad_key_before_sending():
    c = lockd.Client("127.0.0.1:1")  # nothing listens: a send would fail otherwise
    try:
        for bad in ("", "a b", "a\nWHO b", "k\x7f", "\u00e9", "k" * 257, None):
            with pytest.raises(lockd.InvalidArgument):
                c.who(bad)
    finally:
        c.close()


def test_aio_who(env, need_14):
    async def main():
        ca, cb = aio.Client(env.a), aio.Client(env.b)
        k = key("aio")
        try:
            assert (await ca.who(k)).free
            async with ca.lock(k, wait=5) as lk:
                (h,) = (await ca.who(k)).holders
                assert (h.fence, h.lockd) == (lk.fence, name_of(env.a)) and h.held_ms is not None
                (g,) = (await cb.who(k)).holders
                assert g.lockd == name_of(env.a) and g.client is None
            with pytest.raises(lockd.InvalidArgument):
                await ca.who("two words")
        finally:
            await ca.close()
            await cb.close()

    asyncio.run(asyncio.wait_for(main(), 60))
