#!/usr/bin/env bash
# testenv.sh: the real parts every client test suite runs against: three
# redis-server masters and two lockd (A and B) on the same masters, on free
# 127.0.0.1 ports, each in a directory of its own under DIR. The client
# suites (python, node, go, java) call it from their fixtures; it kills
# exactly the processes it started (their pids are in DIR).
#
#   testenv.sh start DIR           start everything, wait until both lockd
#                                  grant a lock; writes DIR/env (below)
#   testenv.sh stop DIR            kill what start started (idempotent)
#   testenv.sh master-stop DIR I   SIGSTOP master I (0..2)
#   testenv.sh master-cont DIR I   SIGCONT master I
#   testenv.sh lockd-kill DIR X    SIGKILL lockd X (a or b)
#   testenv.sh lockd-term DIR X    SIGTERM lockd X and wait for its exit
#   testenv.sh lockd-start DIR X   start lockd X again on its old port
#   testenv.sh lockd-stop DIR X    SIGSTOP lockd X (frozen, its sockets open)
#   testenv.sh lockd-cont DIR X    SIGCONT lockd X
#
# DIR/env is shell syntax, one NAME=value a line:
#   LOCKD_A=127.0.0.1:PORT  LOCKD_B=127.0.0.1:PORT
#   LOCKD_A_SOCK=DIR/a/lockd.sock  LOCKD_B_SOCK=...
#   MASTER0=PORT MASTER1=PORT MASTER2=PORT  LEASE_MS=3000
# Environment: LOCKD_BIN (default: ../lockd from this script), REDIS_SERVER,
# TESTENV_LEASE_MS (default 3000), TESTENV_PASSWORD (none by default).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
lockd_bin=${LOCKD_BIN:-$here/../lockd}
redis_bin=${REDIS_SERVER:-$(command -v redis-server || echo /usr/bin/redis-server)}
lease=${TESTENV_LEASE_MS:-3000}

die() {
	echo "testenv: $*" >&2
	exit 1
}

free_port() {
	python3 - <<'EOF' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
}

# wait_for N CMD...: run CMD every 50 ms until it succeeds, at most N tries.
wait_for() {
	local n=$1
	shift
	for ((i = 0; i < n; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}

redis_ping() { [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ]; }

# lockd_grants PORT: a TRYLOCK of a probe key is granted (the masters count).
lockd_grants() {
	python3 - "$1" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
f = s.makefile("rwb")
f.write(b"TRYLOCK ~testenv\r\n"); f.flush()
ok = f.readline().startswith(b"OK ")
f.write(b"UNLOCK ~testenv\r\n"); f.flush(); f.readline()
sys.exit(0 if ok else 1)
EOF
}

start_master() {
	local dir=$1 i=$2 port=$3
	mkdir -p "$dir/m$i"
	"$redis_bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
		--dir "$dir/m$i" --daemonize no >"$dir/m$i/log" 2>&1 &
	echo $! >"$dir/m$i/pid"
	wait_for 200 redis_ping "$port" || die "master $i on $port did not start"
}

write_conf() {
	local dir=$1 x=$2 port=$3
	# shellcheck disable=SC1091
	. "$dir/env"
	mkdir -p "$dir/$x"
	{
		echo "listen: [\"127.0.0.1:$port\", \"unix:$dir/$x/lockd.sock\"]"
		echo "log_level: info"
		[ -n "${TESTENV_PASSWORD:-}" ] && echo "password: \"$TESTENV_PASSWORD\""
		echo "redis:"
		echo "  masters: [\"127.0.0.1:$MASTER0\", \"127.0.0.1:$MASTER1\", \"127.0.0.1:$MASTER2\"]"
		echo "  timeout_ms: 100"
		echo "locks:"
		echo "  lease_ms: $lease"
	} >"$dir/$x/lockd.yml"
}

start_lockd() {
	local dir=$1 x=$2 port=$3
	[ -x "$lockd_bin" ] || die "no lockd at $lockd_bin (build it first)"
	"$lockd_bin" -c "$dir/$x/lockd.yml" >>"$dir/$x/log" 2>&1 &
	echo $! >"$dir/$x/pid"
	wait_for 400 lockd_grants "$port" || {
		tail -20 "$dir/$x/log" >&2
		die "lockd $x on $port grants no lock"
	}
}

port_of() { # DIR X
	# shellcheck disable=SC1091
	. "$1/env"
	local v="LOCKD_$(echo "$2" | tr ab AB)"
	echo "${!v##*:}"
}

killpid() { # FILE SIGNAL
	[ -f "$1" ] || return 0
	local pid
	pid=$(cat "$1")
	kill -CONT "$pid" 2>/dev/null || true
	kill "-$2" "$pid" 2>/dev/null || true
	for ((i = 0; i < 200; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null || true
	rm -f "$1"
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: testenv.sh start|stop|master-stop|master-cont|lockd-kill|lockd-term|lockd-start|lockd-stop|lockd-cont DIR [ARG]"
case "$cmd" in
start)
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	: >"$dir/env"
	for i in 0 1 2; do
		p=$(free_port)
		start_master "$dir" "$i" "$p"
		echo "MASTER$i=$p" >>"$dir/env"
	done
	echo "LEASE_MS=$lease" >>"$dir/env"
	for x in a b; do
		p=$(free_port)
		X=$(echo $x | tr ab AB)
		echo "LOCKD_$X=127.0.0.1:$p" >>"$dir/env"
		echo "LOCKD_${X}_SOCK=$dir/$x/lockd.sock" >>"$dir/env"
		write_conf "$dir" "$x" "$p"
		start_lockd "$dir" "$x" "$p"
	done
	;;
stop)
	for x in a b; do killpid "$dir/$x/pid" KILL; done
	for i in 0 1 2; do killpid "$dir/m$i/pid" KILL; done
	;;
master-stop) kill -STOP "$(cat "$dir/m$3/pid")" ;;
master-cont) kill -CONT "$(cat "$dir/m$3/pid")" ;;
lockd-kill) killpid "$dir/$3/pid" KILL ;;
lockd-term) killpid "$dir/$3/pid" TERM ;;
lockd-start) start_lockd "$dir" "$3" "$(port_of "$dir" "$3")" ;;
lockd-stop) kill -STOP "$(cat "$dir/$3/pid")" ;;
lockd-cont) kill -CONT "$(cat "$dir/$3/pid")" ;;
*) die "unknown command $cmd" ;;
esac
