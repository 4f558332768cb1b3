#!/usr/bin/env bash
# Quick start: install what is missing (Debian 12, as root), build, start
# three local Redis masters (127.0.0.1:7001-7003) and lockd in the
# foreground on conf/demo.yml. Ctrl-C stops all of it.
set -euo pipefail
cd "$(dirname "$0")/.."

need="build-essential autoconf automake libtool pkg-config libevent-dev libhiredis-dev
      libyaml-dev libsystemd-dev libedit-dev libssl-dev check redis-server"
missing=$(for p in $need; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
	echo "demo: installing $(echo $missing)"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi
if [ ! -x ./lockd ]; then
	[ -x ./configure ] || autoreconf -fi
	[ -f Makefile ] || ./configure
	make -j2
fi

run=$(mktemp -d /tmp/lockd-demo.XXXXXX)
pids=()
lockd_pid=
# Ctrl-C reaches lockd, which answers waiters and releases its locks on
# the masters; the masters run in their own session, so they are stopped
# only after lockd is done.
cleanup() {
	trap - EXIT INT TERM
	if [ -n "$lockd_pid" ]; then
		for _ in $(seq 60); do kill -0 "$lockd_pid" 2>/dev/null || break; sleep 0.1; done
		kill "$lockd_pid" 2>/dev/null || true
	fi
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$run"
}
trap cleanup EXIT INT TERM

for port in 7001 7002 7003; do
	if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
		echo "demo: port $port is already in use; stop what runs there first" >&2
		exit 1
	fi
	setsid redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
		--dir "$run" --logfile "$run/redis-$port.log" &
	pids+=($!)
done
for port in 7001 7002 7003; do
	for _ in $(seq 100); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && break
		sleep 0.05
	done
done
echo "demo: Redis masters on 127.0.0.1:7001-7003; lockd on 127.0.0.1:7390"
echo "demo: try: nc 127.0.0.1 7390   then   LOCK demo   /   UNLOCK demo"
./lockd -c conf/demo.yml &
lockd_pid=$!
wait "$lockd_pid"
