"""Client workloads, run as threads of the harness or as processes of their
own (a process can be paused with SIGSTOP). As a process:

  python3 client.py SPEC_JSON HISTORY_FILE

runs the workload SPEC_JSON names and writes its history, one JSON record
a line, to HISTORY_FILE; it prints "HOLDING key fence" when the victim
workload holds its lock (the harness pauses it then).
"""

import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from history import History  # noqa: E402
from pt import Conn, Dead, Reactor, StoreConn  # noqa: E402


def random_worker(name, hist, reactor, addr, keys, seed, deadline, bound_ms, stats):
    """Until deadline: take a random key of keys ((key, kind, n) with kind
    x, s (readers and writers) or p (permits)) with or without TTL, write
    to the fenced store under exclusive holds, hold a while, release."""
    rng = random.Random(seed)
    conn = store = None
    try:
        store = StoreConn(name, hist)
        while time.monotonic() < deadline:
            if conn is None or conn.dead:
                if conn is not None:
                    stats["slow"] += conn.slow
                try:
                    conn = Conn(name, hist, reactor, addr, bound_ms=bound_ms)
                except OSError as e:
                    stats["errors"].append("%s connect: %s" % (name, e))
                    time.sleep(0.2)
                    continue
            key, kind, n = rng.choice(keys)
            mode = kind
            if kind == "s":
                mode = "s" if rng.random() < 0.7 else "x"
            ttl = rng.choice([None, None, rng.randint(300, 1500)])
            wait = rng.choice([0, 300, 1000, 2000])
            try:
                fence, text = conn.lock(key, mode=mode, n=n, wait=wait, ttl=ttl, try_=(wait == 0 and rng.random() < 0.5))
                if fence is None:
                    stats["fail"] += 1
                    if text.startswith("ERR"):
                        time.sleep(0.05)
                    continue
                stats["ok"] += 1
                t_ok = time.monotonic()
                if ttl is not None:
                    conn.held()  # what is left of the lease (a waited LOCK's started at the grant)
                if mode == "x":
                    store.write(key, fence)
                hold = rng.choice([0.0, 0.05, 0.2, 0.5, rng.uniform(0, 2.5)])
                time.sleep(hold)
                still = (key, fence) not in conn.lost and (ttl is None or time.monotonic() - t_ok < ttl / 1000.0)
                if mode == "x" and still:
                    store.write(key, fence)
                conn.unlock(key)
            except Dead:
                continue
    finally:
        if conn is not None:
            stats["slow"] += conn.slow
            conn.close()
        if store is not None:
            store.close()


def victim(name, hist, reactor, addr, key, ttl, work_s, delay=None):
    """Take key with a TTL (and a lock-delay, 1.4), write under it, say
    HOLDING, "work" work_s (the harness pauses us meanwhile), then write
    again with the same fence."""
    store = StoreConn(name, hist)
    conn = Conn(name, hist, reactor, addr, bound_ms=3000)
    fence, text = conn.lock(key, wait=3000, ttl=ttl, delay=delay)
    if fence is None:
        print("FAILED %s" % text, flush=True)
        return
    store.write(key, fence)
    print("HOLDING %s %d" % (key, fence), flush=True)
    time.sleep(work_s)
    store.write(key, fence)
    time.sleep(0.2)  # read the LOST that waited while we were stopped
    conn.close()
    store.close()


def main():
    spec = json.loads(sys.argv[1])
    out = sys.argv[2]
    hist = History()
    reactor = Reactor(hist)
    addr = tuple(spec["addr"])
    stats = dict(ok=0, fail=0, slow=[], errors=[])
    try:
        if spec["kind"] == "victim":
            victim(spec["name"], hist, reactor, addr, spec["key"], spec["ttl"], spec["work_s"],
                   spec.get("delay"))
        else:
            random_worker(spec["name"], hist, reactor, addr, [tuple(k) for k in spec["keys"]], spec["seed"],
                          time.monotonic() + spec["secs"], spec["bound_ms"], stats)
    finally:
        reactor.stop()
        hist.dump(out)
        with open(out + ".stats", "w") as f:
            json.dump(stats, f)


if __name__ == "__main__":
    main()
