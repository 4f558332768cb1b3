"""History of a partition test and its checker.

A history is a list of records (dicts), each with a monotonic time "t"
(time.monotonic(), CLOCK_MONOTONIC, the same clock in every process of the
machine), a "proc" (a client name, "store" or "nemesis") and a "type":

  invoke   a request sent: f (lock, unlock, write, close), id, and the
           request's fields (key, mode x|s|p, n, ttl, wait, fence)
  ok       its success (same id): fence for a lock, nothing else needed
  fail     a definite failure (same id): text (TIMEOUT, BUSY, ERR ..., refused)
  info     unknown outcome (same id): no reply in time, connection lost
  event    an unsolicited line: f=lost with key and fence; f=closed when the
           connection ended under the client
  store    the fenced store's own record of a write: key, fence, by, accepted
  nemesis  a fault: f (pause, resume, cut, heal), target, text

The checker (check()) returns a list of violations, each a dict with
"rule" and "text" (and the records involved); an empty list is a valid
history. Its rules:

  overlap   no two confirmed holds of one key overlap in real time: an
            exclusive hold with any other hold, a shared hold with an
            exclusive one. A hold is confirmed from the time its OK arrived
            until the first of: LOST for it arrived, UNLOCK of the key was
            sent, the session was closed or found closed, or the validity
            the holder could assume ran out (invoke + TTL for a TTL lock;
            a lock without TTL is renewed by lockd and stays until one of
            the others).
  permits   at most n confirmed holds of a PERMITS n key at once.
  fence     fences grow in grant order: a grant whose OK arrived before
            another grant of the key was requested has the smaller fence.
  lost      every LOST arrives before the validity its holder was told
            (a TTL lock's lease ends at the latest TTL after its OK), unless
            the holder was paused by the nemesis between that validity and
            the arrival.
  store     the fenced store never accepted a write whose fence is not
            larger than the last one it accepted for that key. A key of
            the store that checks no fence (nofence: it accepts every
            write) must still see its writes in fence order: a write with
            a fence below one it took before is a stale holder's write
            that landed after the next holder's (what a lock-delay, 1.4,
            prevents for a holder that was paused).
"""

import json
import threading
import time

INF = float("inf")


class History:
    """A thread-safe append-only list of records with ids for operations."""

    def __init__(self):
        self.lock = threading.Lock()
        self.recs = []
        self.next_id = 1

    def add(self, rec):
        with self.lock:
            if "t" not in rec:
                rec["t"] = time.monotonic()
            self.recs.append(rec)
        return rec

    def invoke(self, proc, f, **kw):
        with self.lock:
            oid = self.next_id
            self.next_id += 1
            rec = dict(t=time.monotonic(), proc=proc, type="invoke", f=f, id=oid, **kw)
            self.recs.append(rec)
        return oid

    def complete(self, proc, oid, typ, t=None, **kw):
        return self.add(dict(t=time.monotonic() if t is None else t, proc=proc, type=typ, id=oid, **kw))

    def nemesis(self, f, target="", text=""):
        return self.add(dict(proc="nemesis", type="nemesis", f=f, target=target, text=text))

    def extend(self, recs, id_base):
        """Merge records of another process (their ids offset by id_base)."""
        with self.lock:
            for r in recs:
                r = dict(r)
                if "id" in r:
                    r["id"] += id_base
                self.recs.append(r)

    def sorted(self):
        with self.lock:
            return sorted(self.recs, key=lambda r: r["t"])

    def dump(self, path):
        with open(path, "w") as f:
            for r in self.sorted():
                f.write(json.dumps(r, sort_keys=True) + "\n")

    def __len__(self):
        return len(self.recs)


def fmt(r, t0=0.0):
    """One record as a short line for reports."""
    keys = [k for k in ("f", "key", "mode", "n", "ttl", "wait", "fence", "text", "by", "accepted", "target")
            if k in r and r[k] is not None]
    body = " ".join("%s=%s" % (k, r[k]) for k in keys)
    return "%9.3f %-8s %-7s %s" % (r["t"] - t0, r["proc"], r["type"], body)


def drift_s(ttl_ms, drift_factor):
    """The drift allowance lockd takes off a lease (PROTOCOL.md: ms x
    locks.drift_factor + 2 ms), in seconds."""
    return (ttl_ms * drift_factor + 2) / 1000.0


def holds(recs, drift_factor=0.01):
    """The confirmed holds of a history: dicts with proc, key, mode, n, fence,
    invoke, start, end, ttl, valid_until (the validity the hold certainly
    reaches, or None), told (the latest its lease can end, or None), why (why
    it ended), rec (the ok record)."""
    recs = sorted(recs, key=lambda r: r["t"])
    inv = {}
    out = []
    open_ = {}  # (proc, key) -> list of holds still confirmed
    for r in recs:
        typ = r["type"]
        p = r.get("proc")
        if typ == "invoke":
            inv[r["id"]] = r
            if r["f"] == "unlock":
                for h in open_.pop((p, r["key"]), []):
                    h["end"], h["why"] = r["t"], "unlock"
            elif r["f"] == "close":
                for k in [k for k in open_ if k[0] == p]:
                    for h in open_.pop(k):
                        h["end"], h["why"] = r["t"], "close"
        elif typ == "ok" and inv.get(r["id"], {}).get("f") == "lock":
            i = inv[r["id"]]
            ttl = i.get("ttl")
            h = dict(proc=p, key=i["key"], mode=i.get("mode", "x"), n=i.get("n", 1),
                     fence=r.get("fence"), invoke=i["t"], start=r["t"], end=INF, why="open",
                     ttl=ttl, valid_until=(i["t"] + ttl / 1000.0 - drift_s(ttl, drift_factor)) if ttl else None,
                     told=(r["t"] + ttl / 1000.0) if ttl else None, rec=r)
            lst = open_.setdefault((p, i["key"]), [])
            if any(o["fence"] == h["fence"] for o in lst):
                continue  # reentrant: the same hold
            lst.append(h)
            out.append(h)
        elif typ == "ok" and inv.get(r["id"], {}).get("f") == "held":
            # HELD's ttl_ms is what is left of the lease; counted from when
            # HELD was sent, less the drift allowance, it is a validity the
            # hold certainly reaches (a waited LOCK's lease starts at the
            # grant, after the request)
            for key, fence, ttl_ms in r.get("held", []):
                for h in open_.get((p, key), []):
                    if h["fence"] == fence and h["ttl"]:
                        h["valid_until"] = max(h["valid_until"], inv[r["id"]]["t"] + ttl_ms / 1000.0 -
                                               drift_s(h["ttl"], drift_factor))
        elif typ == "event" and r["f"] == "lost":
            lst = open_.get((p, r["key"]), [])
            for h in [h for h in lst if h["fence"] == r.get("fence")]:
                h["end"], h["why"], h["lost"] = r["t"], "lost", r
                lst.remove(h)
        elif typ == "event" and r["f"] == "closed":
            for k in [k for k in open_ if k[0] == p]:
                for h in open_.pop(k):
                    h["end"], h["why"] = r["t"], "closed"
    for h in out:
        if h["valid_until"] is not None and h["valid_until"] < h["end"]:
            h["end"], h["why"] = h["valid_until"], "validity"
    return out


def _hold_text(h, t0):
    end = "open" if h["end"] == INF else "%.3f" % (h["end"] - t0)
    return "%s %s fence=%s mode=%s%s confirmed %.3f..%s (%s)" % (
        h["proc"], h["key"], h["fence"], h["mode"], (" n=%d" % h["n"]) if h["mode"] == "p" else "",
        h["start"] - t0, end, h["why"])


def check_overlap(hs, t0):
    bad = []
    bykey = {}
    for h in hs:
        if h["end"] > h["start"]:
            bykey.setdefault(h["key"], []).append(h)
    for key, lst in bykey.items():
        # sweep: ends before starts at the same time (touching is no overlap)
        ev = sorted([(h["start"], 1, i) for i, h in enumerate(lst)] + [(h["end"], 0, i) for i, h in enumerate(lst)])
        cur = set()
        for t, kind, i in ev:
            if kind == 0:
                cur.discard(i)
                continue
            h = lst[i]
            others = [lst[j] for j in cur]
            cur.add(i)
            if h["mode"] == "p" or any(o["mode"] == "p" for o in others):
                held = [lst[j] for j in cur]
                if len(held) > min(x["n"] if x["mode"] == "p" else 1 for x in held):
                    bad.append(dict(rule="permits", text="%d holds of %s at %.3f: %s" % (
                        len(held), key, t - t0, "; ".join(_hold_text(x, t0) for x in held)), holds=held))
                continue
            for o in others:
                if h["mode"] == "x" or o["mode"] == "x":
                    bad.append(dict(rule="overlap", text="%s overlaps %s" % (
                        _hold_text(o, t0), _hold_text(h, t0)), holds=[o, h]))
    return bad


def check_fences(hs, t0):
    bad = []
    bykey = {}
    for h in hs:
        bykey.setdefault(h["key"], []).append(h)
    for key, lst in bykey.items():
        by_ok = sorted(lst, key=lambda h: h["start"])
        by_inv = sorted(lst, key=lambda h: h["invoke"])
        j = 0
        best = None  # the grant with the largest fence among those answered so far
        for h in by_inv:
            while j < len(by_ok) and by_ok[j]["start"] < h["invoke"]:
                g = by_ok[j]
                if best is None or g["fence"] > best["fence"]:
                    best = g
                j += 1
            if best is not None and best is not h and best["fence"] >= h["fence"] and \
                    not (best["proc"] == h["proc"] and best["fence"] == h["fence"]):
                bad.append(dict(rule="fence", text="%s was requested at %.3f after %s was granted, "
                                "with a fence not larger" % (_hold_text(h, t0), h["invoke"] - t0,
                                                             _hold_text(best, t0)), holds=[best, h]))
    return bad


def check_lost(hs, recs, t0):
    bad = []
    pauses = {}
    paused_at = {}
    for r in recs:
        if r["type"] == "nemesis" and r["f"] == "pause":
            paused_at[r["target"]] = r["t"]
        elif r["type"] == "nemesis" and r["f"] == "resume" and r["target"] in paused_at:
            pauses.setdefault(r["target"], []).append((paused_at.pop(r["target"]), r["t"]))
    for p, t in paused_at.items():
        pauses.setdefault(p, []).append((t, INF))
    for h in hs:
        lost = h.get("lost")
        if not lost or h["told"] is None or lost["t"] <= h["told"]:
            continue
        if any(a < lost["t"] and b > h["told"] for a, b in pauses.get(h["proc"], [])):
            continue  # the holder was stopped; it read the LOST when it resumed
        bad.append(dict(rule="lost", text="LOST %s %s arrived at %.3f, %.0f ms after the validity "
                        "%s was told (%.3f)" % (h["key"], h["fence"], lost["t"] - t0,
                                                (lost["t"] - h["told"]) * 1000, h["proc"],
                                                h["told"] - t0), holds=[h]))
    return bad


def check_store(recs, t0):
    bad = []
    last = {}
    for r in recs:
        if r["type"] != "store":
            continue
        k = r["key"]
        if r.get("nofence"):
            if k in last and r["fence"] < last[k]["fence"]:
                bad.append(dict(rule="store", text="%s fence %s from %s landed at %.3f after fence %s "
                                "from %s at %.3f (a resource that checks no fence)" % (
                                    k, r["fence"], r["by"], r["t"] - t0, last[k]["fence"], last[k]["by"],
                                    last[k]["t"] - t0), recs=[last[k], r]))
            if k not in last or r["fence"] > last[k]["fence"]:
                last[k] = r
            continue
        if r["accepted"]:
            if k in last and r["fence"] <= last[k]["fence"]:
                bad.append(dict(rule="store", text="store accepted %s fence %s from %s at %.3f after "
                                "fence %s from %s at %.3f" % (k, r["fence"], r["by"], r["t"] - t0,
                                                              last[k]["fence"], last[k]["by"],
                                                              last[k]["t"] - t0), recs=[last[k], r]))
            if k not in last or r["fence"] > last[k]["fence"]:
                last[k] = r
    return bad


def check(recs, drift_factor=0.01):
    """All violations of a history (a list of records); drift_factor is
    lockd's locks.drift_factor."""
    recs = sorted(recs, key=lambda r: r["t"])
    t0 = recs[0]["t"] if recs else 0.0
    hs = holds(recs, drift_factor)
    return (check_overlap(hs, t0) + check_fences(hs, t0) + check_lost(hs, recs, t0) +
            check_store(recs, t0))


def excerpt(recs, v, before=0.5, after=0.2, limit=40):
    """The records around a violation, as lines."""
    recs = sorted(recs, key=lambda r: r["t"])
    t0 = recs[0]["t"] if recs else 0.0
    ts = [h["start"] for h in v.get("holds", [])] + [r["t"] for r in v.get("recs", [])]
    ends = [h["end"] for h in v.get("holds", []) if h["end"] != INF] + ts
    lo, hi = min(ts) - before, max(ends) + after
    keys = {h["key"] for h in v.get("holds", [])} | {r["key"] for r in v.get("recs", [])}
    key_of = {r["id"]: r.get("key") for r in recs if r["type"] == "invoke"}
    out = [fmt(r, t0) for r in recs if lo <= r["t"] <= hi and
           (r.get("key", key_of.get(r.get("id"))) in keys or r["type"] == "nemesis")]
    return out[-limit:]
