#!/usr/bin/env python3
"""bench.py ADDRESS [SECONDS]: uncontended lock/unlock cycles per second
(sync and asyncio client), with the local deadline's heartbeat (the
default: a HELD pipelined with each LOCK) and without it (heartbeat=False);
the heartbeat's requests per second per held lock; and handoff latency
between two holders of one key (release by one to grant to the other
waiting), p50/p99."""

import asyncio
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lockd  # noqa: E402
from lockd import aio  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def sync_cycles(addr, secs, heartbeat=True):
    c = lockd.Client(addr, heartbeat=heartbeat)
    c.trylock("bench-warm").release()
    n, end = 0, time.monotonic() + secs
    while time.monotonic() < end:
        lk = c.lock("bench-sync")
        lk.acquire()
        lk.release()
        n += 1
    c.close()
    return n / secs


def aio_cycles(addr, secs, heartbeat=True):
    async def main():
        async with aio.Client(addr, heartbeat=heartbeat) as c:
            await (await c.trylock("bench-warm")).release()
            n, end = 0, time.monotonic() + secs
            while time.monotonic() < end:
                lk = await c.lock("bench-aio")
                await lk.release()
                n += 1
            return n / secs

    return asyncio.run(main())


def heartbeat_rate(addr, secs):
    """HELD heartbeats per second sent for one lock held secs."""
    c = lockd.Client(addr)
    lk = c.lock("bench-held")
    lk.acquire()
    conn = lk._a._conn
    n0, t0 = conn.heartbeats, time.monotonic()
    time.sleep(secs)
    rate = (conn.heartbeats - n0) / (time.monotonic() - t0)
    lk.release()
    c.close()
    return rate


def handoff(addr, secs):
    """Two threads pass one key back and forth: the time from one's
    release() call to the other's grant."""
    c = lockd.Client(addr)
    released_at = [0.0]
    lat = []
    stop = time.monotonic() + secs
    turn = threading.Lock()

    def worker():
        while time.monotonic() < stop:
            lk = c.lock("bench-handoff", wait=10)
            lk.acquire()
            t = time.monotonic()
            with turn:
                if released_at[0]:
                    lat.append(t - released_at[0])
            time.sleep(0.001)  # let the other one queue behind us
            with turn:
                released_at[0] = time.monotonic()
            lk.release()

    ts = [threading.Thread(target=worker) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    c.close()
    return lat


def median(xs):
    return sorted(xs)[len(xs) // 2]


if __name__ == "__main__":
    addr = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:7390"
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    # on and off alternate in 5 slices each, so that a neighbour's load
    # falls on both; the median slice is printed
    slices = 5
    for name, fn in (("sync", sync_cycles), ("aio ", aio_cycles)):
        on, off = [], []
        for _ in range(slices):
            on.append(fn(addr, secs / slices, True))
            off.append(fn(addr, secs / slices, False))
        m_on, m_off = median(on), median(off)
        print(
            f"python {name} heartbeat on : {m_on:8.0f} lock/unlock cycles/s (uncontended)\n"
            f"python {name} heartbeat off: {m_off:8.0f} lock/unlock cycles/s (uncontended; on/off {m_on / m_off:.0%})"
        )
    print(f"python heartbeat: {heartbeat_rate(addr, max(secs, 6.0)):.2f} HELD requests/s per held lock")
    lat = handoff(addr, secs)
    print(f"python handoff: n={len(lat)} p50={pct(lat, .5) * 1e3:.2f} ms p99={pct(lat, .99) * 1e3:.2f} ms")
