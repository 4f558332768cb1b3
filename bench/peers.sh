#!/usr/bin/env bash
# Side-by-side: node-redlock, redis-semaphore and lockd in one harness
# (../shared/peers/bench.js), against the same three local masters, in one
# run. Needs node and npm (the npm registry) and a built ./lockd.
# Usage: bench/peers.sh [DURATION_MS]   (from the top of the tree)
# Writes bench/out/peers.jsonl and prints a markdown table.
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
