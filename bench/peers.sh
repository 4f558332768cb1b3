#!/usr/bin/env bash
# Side-by-side: node-redlock, redis-semaphore and lockd in one harness
# (../shared/peers/bench.js), against the same three local masters, in one
# run. Needs node and npm (the npm registry), redis-benchmark and a built
# ./lockd.
# Usage: bench/peers.sh [DURATION_MS]   (from the top of the tree)
# Writes bench/out/peers.jsonl and prints a markdown table; then the
# masters' limit, redis-benchmark of an acquire-like EVALSHA (SET NX PX in
# a script) on one of the masters (-n 100000 -c 64 -r 100000), and the
# ratios: lockd / node-redlock uncontended cycles/s (C 64), node-redlock /
# lockd handoff p99 (contended, polite, C 16, hold 1 ms), lockd's
# uncontended cycles/s against that EVALSHA rate of one master, and the
# busiest master's CPU meanwhile (lockd batches locks into its scripts).
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-5000}
peers=${PEERS:-../shared/peers}
work=$(mktemp -d /tmp/lockd-peers.XXXXXX)
out=bench/out/peers.jsonl
mkdir -p bench/out
: >"$out"
lockd_pid=
cleanup() {
	[ -n "$lockd_pid" ] && kill "$lockd_pid" 2>/dev/null && wait "$lockd_pid" 2>/dev/null
	[ -x "$work/peers/stop-masters.sh" ] && "$work/peers/stop-masters.sh" "$work/m3" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

cp -r "$peers" "$work/peers"
chmod -R u+w "$work/peers"
(cd "$work/peers" && npm install --no-audit --no-fund >/dev/null 2>&1)
base=$((17000 + RANDOM % 2000))
"$work/peers/start-masters.sh" 3 "$base" "$work/m3" >/dev/null
ports="$base,$((base + 1)),$((base + 2))"
lport=$((base + 100))
cat >"$work/lockd.yml" <<YML
listen: ["127.0.0.1:$lport"]
redis:
  masters: ["127.0.0.1:$base", "127.0.0.1:$((base + 1))", "127.0.0.1:$((base + 2))"]
locks:
  lease_ms: 10000
YML
./lockd -c "$work/lockd.yml" 2>"$work/lockd.log" &
lockd_pid=$!
for _ in $(seq 100); do
	[ "$(printf 'PING\r\n' | timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$lport; cat >&3; head -c 6 <&3" 2>/dev/null)" = $'PONG\r\n' ] && break
	sleep 0.05
done

run() { # lib mode c extra...
	local lib=$1 mode=$2 c=$3
	shift 3
	timeout 120 node "$work/peers/bench.js" --lib "$lib" --ports "$ports" --lockd "127.0.0.1:$lport" \
		--mode "$mode" --c "$c" --duration "$dur" --quiet --out "$out" "$@" >/dev/null
}
for lib in redlock semaphore lockd; do
	run "$lib" uncontended 64
	run "$lib" contended 16 --hold 1 --polite
done
node "$work/peers/report.js" "$out" 2>/dev/null || cat "$out"

# The masters' limit: what one master does with an acquire-like script
# alone. Its keys have their own prefix and expire; the masters are not
# flushed (lockd keeps its fence counters there).
acquire="return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])"
sha=$(redis-cli -h 127.0.0.1 -p "$base" SCRIPT LOAD "$acquire")
rb=$(timeout 120 redis-benchmark -h 127.0.0.1 -p "$base" -n 100000 -c 64 -r 100000 -q \
	evalsha "$sha" 1 "peers-rb:__rand_int__" v 10000 2>&1 | tr '\r' '\n' |
	grep 'requests per second' | tail -n 1 || true)
evalsha_rps=$(printf '%s' "$rb" | sed -nE 's/.*: ([0-9.]+) requests per second.*/\1/p')
printf '\n## Ratios\n\n'
printf 'redis-benchmark EVALSHA (SET NX PX script) on one master, -n 100000 -c 64 -r 100000: %s requests/s\n\n' \
	"${evalsha_rps:-?}"
# shellcheck disable=SC2016 # JavaScript, not shell
EVALSHA_RPS=${evalsha_rps:-} node -e '
const fs = require("fs");
const rows = fs.readFileSync(process.argv[1], "utf8").split("\n").filter((l) => l.trim())
  .map((l) => JSON.parse(l));
const pick = (lib, mode, polite) => rows.find((r) => r.lib === lib && r.mode === mode &&
  (mode === "uncontended" || !!r.polite === polite));
const num = (x) => (typeof x === "number" && isFinite(x) ? x : null);
const div = (a, b) => (num(a) !== null && num(b) ? a / b : null);
const fmt = (x, d) => (x === null ? "-" : x.toFixed(d));
const lu = pick("lockd", "uncontended"), ru = pick("redlock", "uncontended");
const lc = pick("lockd", "contended", true), rc = pick("redlock", "contended", true);
const rps = num(Number(process.env.EVALSHA_RPS) || null);
const lcps = lu ? lu.cycles_per_s : null;
// EVALSHA each master runs per lockd cycle (acquire and release)
const spc = lu && lu.redis && num(lu.redis.scripts_per_acq) !== null && lu.n_masters
  ? lu.redis.scripts_per_acq / lu.n_masters : null;
const lines = [
  ["lockd / node-redlock, uncontended cycles/s (C " + (lu ? lu.c : "-") + ")",
    fmt(div(lcps, ru && ru.cycles_per_s), 2),
    (lcps ?? "-") + " / " + (ru ? ru.cycles_per_s : "-")],
  ["node-redlock / lockd, handoff p99 ms (contended, polite, C " + (lc ? lc.c : "-") + ")",
    fmt(div(rc && rc.handoff_ms.p99, lc && lc.handoff_ms.p99), 1),
    fmt(rc ? num(rc.handoff_ms.p99) : null, 3) + " / " + fmt(lc ? num(lc.handoff_ms.p99) : null, 3)],
  ["lockd uncontended cycles/s / EVALSHA/s of one master", fmt(div(lcps, rps), 3),
    (lcps ?? "-") + " / " + (rps === null ? "-" : Math.round(rps))],
  // lockd batches many locks into one script: its EVALSHA count says little
  // of the masters\x27 work, their CPU does
  ["the busiest master\x27s CPU % during lockd uncontended (INFO cpu)",
    lu && lu.redis ? String(lu.redis.cpu_pct_max) : "-",
    fmt(spc, 2) + " EVALSHA a cycle a master, " + (lu && lu.redis ? lu.redis.cmds_per_acq : "-") +
    " commands a cycle in all"],
];
console.log("| ratio | value | from |");
console.log("|---|---:|---|");
for (const [what, v, from] of lines) console.log(`| ${what} | ${v} | ${from} |`);
' "$out"
