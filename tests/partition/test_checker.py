"""The checker's rules, each shown to catch a history that breaks it; and
the harness's reply parser (pt._parse) on replies Redis and Sentinel give.

Run: /usr/bin/python3 -m unittest discover -s tests/partition -p 'test_*.py'
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from history import check  # noqa: E402
from pt import _parse, _Short  # noqa: E402


class H:
    """A history written by hand: times in seconds from 0."""

    def __init__(self):
        self.recs = []
        self.n = 0

    def lock(self, proc, key, t_inv, t_ok, fence, mode="x", n=1, ttl=None, reply="ok"):
        self.n += 1
        self.recs.append(dict(t=t_inv, proc=proc, type="invoke", f="lock", id=self.n, key=key,
                              mode=mode, n=n, ttl=ttl))
        self.recs.append(dict(t=t_ok, proc=proc, type=reply, id=self.n, fence=fence))
        return self

    def unlock(self, proc, key, t):
        self.n += 1
        self.recs.append(dict(t=t, proc=proc, type="invoke", f="unlock", id=self.n, key=key))
        self.recs.append(dict(t=t + 0.001, proc=proc, type="ok", id=self.n))
        return self

    def held(self, proc, t, *items):
        self.n += 1
        self.recs.append(dict(t=t, proc=proc, type="invoke", f="held", id=self.n))
        self.recs.append(dict(t=t + 0.001, proc=proc, type="ok", id=self.n, held=[list(x) for x in items]))
        return self

    def lost(self, proc, key, fence, t):
        self.recs.append(dict(t=t, proc=proc, type="event", f="lost", key=key, fence=fence))
        return self

    def store(self, key, fence, by, t, accepted):
        self.recs.append(dict(t=t, proc="store", type="store", key=key, fence=fence, by=by,
                              accepted=accepted))
        return self

    def nemesis(self, f, target, t):
        self.recs.append(dict(t=t, proc="nemesis", type="nemesis", f=f, target=target, text=""))
        return self

    def rules(self):
        return sorted({v["rule"] for v in check(self.recs)})


class TestChecker(unittest.TestCase):
    def test_valid_history(self):
        h = (H().lock("a", "k", 0.0, 0.01, 10).store("k", 10, "a", 0.02, True)
             .unlock("a", "k", 0.5)
             .lock("b", "k", 0.1, 0.51, 11).store("k", 11, "b", 0.52, True)
             .lost("b", "k", 11, 0.9)
             .lock("a", "k", 0.95, 0.96, 12)
             .lock("c", "r", 0.0, 0.01, 1, mode="s").lock("d", "r", 0.0, 0.02, 2, mode="s")
             .lock("e", "p", 0.0, 0.01, 1, mode="p", n=2).lock("f", "p", 0.0, 0.01, 2, mode="p", n=2)
             .lock("g", "t", 0.0, 0.01, 5, ttl=300).lost("g", "t", 5, 0.29)
             .lock("h", "t", 0.1, 0.31, 6))
        self.assertEqual(h.rules(), [])

    def test_overlap_exclusive(self):
        h = H().lock("a", "k", 0.0, 0.01, 10).lock("b", "k", 0.0, 0.2, 11).unlock("a", "k", 0.5)
        self.assertEqual(h.rules(), ["overlap"])

    def test_overlap_lost_late_watchdog(self):
        # a's lock without TTL is confirmed until its LOST arrived: after b's grant
        h = H().lock("a", "k", 0.0, 0.01, 10).lock("b", "k", 0.0, 1.0, 11).lost("a", "k", 10, 1.1)
        self.assertEqual(h.rules(), ["overlap"])

    def test_overlap_shared_with_exclusive(self):
        h = H().lock("a", "k", 0.0, 0.01, 10, mode="s").lock("b", "k", 0.0, 0.2, 11)
        self.assertEqual(h.rules(), ["overlap"])

    def test_ttl_ends_the_hold(self):
        # a's TTL lock ends at invoke + TTL though no LOST came: no overlap, but the
        # LOST rule is not concerned (no LOST); b's grant after it is fine
        h = H().lock("a", "k", 0.0, 0.01, 10, ttl=500).lock("b", "k", 0.1, 0.6, 11)
        self.assertEqual(h.rules(), [])
        h = H().lock("a", "k", 0.0, 0.01, 10, ttl=500).lock("b", "k", 0.1, 0.4, 11)
        self.assertEqual(h.rules(), ["overlap"])

    def test_held_tells_a_waited_lease(self):
        # a LOCK that waited: its lease started at the grant (0.5), not at the
        # request (0.0); HELD at 0.6 says 400 ms are left, so it lasts to 1.0
        h = (H().lock("a", "k", 0.0, 0.5, 10, ttl=500).held("a", 0.6, ("k", 10, 400))
             .lock("b", "k", 0.1, 0.8, 11))
        self.assertEqual(h.rules(), ["overlap"])
        h = H().lock("a", "k", 0.0, 0.5, 10, ttl=500).lock("b", "k", 0.1, 0.8, 11)
        self.assertEqual(h.rules(), [])
        # the lease less the drift allowance (500 x 0.01 + 2 ms): b at 0.995 is fine
        h = (H().lock("a", "k", 0.0, 0.5, 10, ttl=500).held("a", 0.6, ("k", 10, 400))
             .lock("b", "k", 0.1, 0.995, 11))
        self.assertEqual(h.rules(), [])

    def test_permits(self):
        h = (H().lock("a", "p", 0.0, 0.01, 1, mode="p", n=2).lock("b", "p", 0.0, 0.02, 2, mode="p", n=2)
             .lock("c", "p", 0.0, 0.03, 3, mode="p", n=2))
        self.assertEqual(h.rules(), ["permits"])

    def test_fence_order(self):
        h = H().lock("a", "k", 0.0, 0.01, 10).unlock("a", "k", 0.1).lock("b", "k", 0.2, 0.21, 9)
        self.assertEqual(h.rules(), ["fence"])
        # concurrent requests may get fences in any order
        h = H().lock("a", "k", 0.0, 0.01, 10).unlock("a", "k", 0.1).lock("b", "k", 0.005, 0.21, 9)
        self.assertEqual(h.rules(), [])

    def test_lost_late(self):
        h = H().lock("a", "k", 0.0, 0.01, 10, ttl=500).lost("a", "k", 10, 0.6)
        self.assertEqual(h.rules(), ["lost"])
        # the lease of a LOCK that waited starts at most at its OK
        h = H().lock("a", "k", 0.0, 0.3, 10, ttl=500).lost("a", "k", 10, 0.79)
        self.assertEqual(h.rules(), [])

    def test_lost_late_while_paused_is_exempt(self):
        h = (H().lock("a", "k", 0.0, 0.01, 10, ttl=500).nemesis("pause", "a", 0.1)
             .nemesis("resume", "a", 1.0).lost("a", "k", 10, 1.01))
        self.assertEqual(h.rules(), [])

    def test_nofence_late_write(self):
        # a resource that checks no fence takes every write; a late one
        # of a lower fence after a higher one is the violation
        h = (H().lock("a", "nf-k", 0.0, 0.01, 10, ttl=300))
        h.recs.append(dict(t=0.02, proc="store", type="store", key="nf-k", fence=10, by="a",
                           accepted=True, nofence=True))
        h.lock("b", "nf-k", 0.1, 0.4, 11)
        h.recs.append(dict(t=0.41, proc="store", type="store", key="nf-k", fence=11, by="b",
                           accepted=True, nofence=True))
        self.assertEqual(h.rules(), [])
        h.recs.append(dict(t=0.5, proc="store", type="store", key="nf-k", fence=10, by="a",
                           accepted=True, nofence=True))
        self.assertEqual(h.rules(), ["store"])

    def test_store_stale_write(self):
        h = (H().lock("a", "k", 0.0, 0.01, 10, ttl=300).store("k", 10, "a", 0.02, True)
             .lock("b", "k", 0.1, 0.4, 11).store("k", 11, "b", 0.41, True)
             .store("k", 10, "a", 0.5, True))
        self.assertEqual(h.rules(), ["store"])
        h.recs[-1]["accepted"] = False
        self.assertEqual(h.rules(), [])


class RespTest(unittest.TestCase):
    def test_scalars(self):
        self.assertEqual(_parse(b"+PONG\r\n", 0), ("PONG", 7))
        self.assertEqual(_parse(b"-ERR no\r\n", 0)[0], "ERR no")
        self.assertEqual(_parse(b":12\r\n", 0)[0], "12")
        self.assertEqual(_parse(b"$5\r\nab\r\nc\r\n", 0), ("ab\r\nc", 11))
        self.assertEqual(_parse(b"$-1\r\n", 0), (None, 5))

    def test_arrays(self):
        # SENTINEL get-master-addr-by-name, then an unknown name
        self.assertEqual(_parse(b"*2\r\n$10\r\n10.213.0.2\r\n$4\r\n6379\r\n", 0)[0], ["10.213.0.2", "6379"])
        self.assertEqual(_parse(b"*-1\r\n", 0)[0], None)
        self.assertEqual(_parse(b"*2\r\n*1\r\n:1\r\n$-1\r\n", 0)[0], [["1"], None])

    def test_short(self):
        for part in (b"", b"+PON", b"$5\r\nab", b"*2\r\n$1\r\na\r\n"):
            with self.assertRaises(_Short):
                _parse(part, 0)


if __name__ == "__main__":
    unittest.main()
