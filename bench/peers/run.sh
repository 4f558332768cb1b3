#!/usr/bin/env bash
# shellcheck disable=SC2317 # cleanup and the probes run from trap and wait_for
# bench/peers/run.sh: lockd beside the lock services people use today, in
# one run on one machine (see bench/peers/README.md).
#
#   bench/peers/run.sh [DURATION_MS]      (from the top of a built tree)
#
# Starts, on free 127.0.0.1 ports, in a temporary directory of its own:
# three redis-server masters; an etcd cluster of three members (data on
# tmpfs); a ZooKeeper ensemble of three servers (Debian's jars, data on
# tmpfs); ./lockd on the three masters. Measures node-redlock and
# redis-semaphore (RedlockMutex) on the same masters, etcd (clientv3
# concurrency.Mutex's recipe through etcd3), ZooKeeper (Curator
# InterProcessMutex's recipe through node-zookeeper-client), and lockd
# plain and resumable (SESSION): uncontended at 16 and 64 workers, and
# handoff on one key (16 workers, hold 1 ms), each run DURATION_MS (default
# 5000) after a warm-up. Writes bench/out/peers.jsonl, prints a markdown
# table and the ratios of issue 30 (kept in bench/out/peers.md), and
# stops exactly what it started, on failure too. Exit status 1 when any run
# saw two holders of one key (or a fence that did not grow); 2 when a run
# failed otherwise.
#
# Needs node >= 18 and npm (npm ci fetches bench/peers/package-lock.json's
# packages on first use), redis-server, etcd 3.4 (Debian: etcd-server), and
# ZooKeeper's jars with java (Debian: zookeeper). Environment: ZK_JAR
# (default /usr/share/java/zookeeper.jar), ETCD (default etcd in PATH),
# PEERS ("redlock semaphore etcd zookeeper lockd lockd-resumable", a subset
# runs fewer), WARMUP_MS (default 1000; a peer's first run warms up 5x:
# a fresh etcd cluster is slow at first, and the JVM compiles meanwhile).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
top=$(pwd)
dur=${1:-5000}
case $dur in '' | *[!0-9]*) echo "usage: bench/peers/run.sh [DURATION_MS]" >&2; exit 2 ;; esac
warm=${WARMUP_MS:-1000}
peers=${PEERS:-redlock semaphore etcd zookeeper lockd lockd-resumable}
ZK_JAR=${ZK_JAR:-/usr/share/java/zookeeper.jar}
ETCD=${ETCD:-$(command -v etcd || true)}
need() { command -v "$1" >/dev/null || { echo "bench/peers: $1 is not installed${2:+ ($2)}" >&2; exit 2; }; }
need node
need npm
need redis-server
case " $peers " in *" lockd"*) [ -x ./lockd ] || { echo "bench/peers: no ./lockd: build the tree first" >&2; exit 2; } ;; esac
case " $peers " in *" etcd "*) [ -n "$ETCD" ] || { echo "bench/peers: etcd is not installed (Debian: etcd-server)" >&2; exit 2; } ;; esac
case " $peers " in *" zookeeper "*)
	need java "Debian: zookeeper"
	[ -r "$ZK_JAR" ] || { echo "bench/peers: $ZK_JAR not found (Debian: zookeeper)" >&2; exit 2; } ;;
esac

# the Node packages, exactly as package-lock.json pins them
if ! [ -f bench/peers/node_modules/.package-lock.json ] ||
	! [ bench/peers/node_modules/.package-lock.json -nt bench/peers/package-lock.json ]; then
	(cd bench/peers && npm ci --no-audit --no-fund --loglevel=error) >&2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/lockd-peers.XXXXXX")
shm=$(mktemp -d /dev/shm/lockd-peers.XXXXXX) # etcd's and ZooKeeper's data
pids=() names=() bench_pid=''
cleanup() {
	local rc=$? p
	[ -z "$bench_pid" ] || kill -TERM "$bench_pid" 2>/dev/null || true
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	if [ "$rc" != 0 ] && [ -d "$work" ]; then # keep the servers' logs
		rm -rf bench/out/peers-logs
		mkdir -p bench/out/peers-logs
		cp "$work"/*.log bench/out/peers-logs/ 2>/dev/null || true
		echo "bench/peers: the servers' logs are in bench/out/peers-logs" >&2
	fi
	rm -rf "$work" "$shm"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 19 free loopback ports at once (held together, so all differ)
read -r -a port <<<"$(node -e '
const net = require("net");
const ss = Array.from({ length: 19 }, () => net.createServer().listen(0, "127.0.0.1"));
Promise.all(ss.map((s) => new Promise((r) => s.on("listening", r)))).then(() => {
  console.log(ss.map((s) => s.address().port).join(" "));
  ss.forEach((s) => s.close());
});')"
rport=("${port[@]:0:3}") eport=("${port[@]:3:3}") epeer=("${port[@]:6:3}")
zport=("${port[@]:9:3}") zquorum=("${port[@]:12:3}") zelect=("${port[@]:15:3}") lport=${port[18]}
redis_list=$(IFS=,; echo "${rport[*]/#/127.0.0.1:}")
etcd_list=$(IFS=,; echo "${eport[*]/#/127.0.0.1:}")
zk_list=$(IFS=,; echo "${zport[*]/#/127.0.0.1:}")

# wait_for WHAT TRIES CMD...: CMD until it succeeds, every 0.1 s
wait_for() {
	local what=$1 n=$2 i p l
	shift 2
	for i in $(seq "$n"); do
		"$@" >/dev/null 2>&1 && return 0
		for p in "${!pids[@]}"; do
			kill -0 "${pids[p]}" 2>/dev/null && continue
			echo "bench/peers: ${names[p]} exited; its log:" >&2
			l=${names[p]##* (}
			tail -n 20 "${l%)}" >&2 || true
			exit 2
		done
		sleep 0.1
	done
	echo "bench/peers: $what did not come up (logs in $work):" >&2
	tail -n 5 "$work"/*.log >&2 || true
	exit 2
}
# ask PORT REQUEST: send REQUEST, print what comes back (2 s at most)
# shellcheck disable=SC2016 # $1 and $2 are the inner shell's
ask() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf "%b" "$2" >&3 && cat <&3' _ "$1" "$2"; }

echo "bench/peers: starting the servers for: $peers (work dir $work)" >&2
for i in 0 1 2; do
	redis-server --port "${rport[i]}" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$work" --logfile "$work/redis$i.log" &
	pids+=($!) names+=("redis-server $i ($work/redis$i.log)")
done
case " $peers " in *" etcd "*)
	cluster=m0=http://127.0.0.1:${epeer[0]},m1=http://127.0.0.1:${epeer[1]},m2=http://127.0.0.1:${epeer[2]}
	for i in 0 1 2; do
		"$ETCD" --name "m$i" --data-dir "$shm/etcd$i" \
			--listen-client-urls "http://127.0.0.1:${eport[i]}" --advertise-client-urls "http://127.0.0.1:${eport[i]}" \
			--listen-peer-urls "http://127.0.0.1:${epeer[i]}" --initial-advertise-peer-urls "http://127.0.0.1:${epeer[i]}" \
			--initial-cluster "$cluster" --initial-cluster-token "peers-${shm##*.}" --initial-cluster-state new \
			--log-level warn --logger zap --log-outputs stderr 2>"$work/etcd$i.log" &
		pids+=($!) names+=("etcd $i ($work/etcd$i.log)")
	done ;;
esac
case " $peers " in *" zookeeper "*)
	for i in 0 1 2; do
		mkdir -p "$shm/zk$i"
		echo $((i + 1)) >"$shm/zk$i/myid"
		{
			echo "tickTime=2000"
			echo "initLimit=10"
			echo "syncLimit=5"
			echo "dataDir=$shm/zk$i"
			echo "clientPort=${zport[i]}"
			echo "clientPortAddress=127.0.0.1"
			echo "maxClientCnxns=0"
			echo "admin.enableServer=false"
			echo "4lw.commands.whitelist=srvr"
			echo "autopurge.purgeInterval=0"
			for j in 0 1 2; do echo "server.$((j + 1))=127.0.0.1:${zquorum[j]}:${zelect[j]}"; done
		} >"$work/zoo$i.cfg"
		cp=$ZK_JAR
		[ -r /usr/share/java/slf4j-simple.jar ] && cp=$cp:/usr/share/java/slf4j-simple.jar
		java -Xmx256m -Xms32m -XX:+UseSerialGC -Dzookeeper.jmx.log4j.disable=true \
			-Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
			-cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$work/zoo$i.cfg" \
			>"$work/zk$i.log" 2>&1 &
		pids+=($!) names+=("ZooKeeper $i ($work/zk$i.log)")
	done ;;
esac
etcd_pids=() zk_pids=()
case " $peers " in *" etcd "*) etcd_pids=("${pids[@]:3:3}") ;; esac
case " $peers " in *" zookeeper "*) zk_pids=("${pids[@]: -3}") ;; esac

for i in 0 1 2; do wait_for "redis on ${rport[i]}" 100 redis-cli -p "${rport[i]}" ping; done
etcd_ok() { local p; for p in "${eport[@]}"; do ask "$p" 'GET /health HTTP/1.0\r\n\r\n' | grep -q '"health":"true"' || return 1; done; }
zk_ok() {
	local p modes=
	for p in "${zport[@]}"; do modes="$modes $(ask "$p" srvr | sed -nE 's/^Mode: *([a-z]+).*/\1/p')"; done
	[ "$(echo "$modes" | grep -o leader | wc -l)" = 1 ] && [ "$(echo "$modes" | grep -o follower | wc -l)" = 2 ]
}
[ ${#etcd_pids[@]} = 0 ] || wait_for "etcd" 300 etcd_ok
[ ${#zk_pids[@]} = 0 ] || wait_for "ZooKeeper" 600 zk_ok

lockd_pid=
case " $peers " in *" lockd"*)
	cat >"$work/lockd.yml" <<Y
listen: ["127.0.0.1:$lport"]
log_level: warn
redis:
  masters: ["127.0.0.1:${rport[0]}", "127.0.0.1:${rport[1]}", "127.0.0.1:${rport[2]}"]
Y
	./lockd -c "$work/lockd.yml" 2>"$work/lockd.log" &
	lockd_pid=$!
	pids+=("$lockd_pid") names+=("lockd ($work/lockd.log)")
	lockd_ok() { [ "$(ask "$lport" 'PING\r\nQUIT\r\n' | head -c 4)" = PONG ]; }
	wait_for "lockd" 100 lockd_ok
	;;
esac

mkdir -p bench/out
out=bench/out/peers.jsonl
lockd_version=$(./lockd --version 2>/dev/null | head -n 1 || true)
redis_version=$(redis-server --version | sed -nE 's/.*v=([^ ]+).*/\1/p')
etcd_version=
[ -z "$ETCD" ] || etcd_version=$("$ETCD" --version 2>/dev/null | sed -nE 's/^etcd Version: //p')
zk_version=$(unzip -p "$ZK_JAR" META-INF/maven/org.apache.zookeeper/zookeeper/pom.properties 2>/dev/null |
	sed -nE 's/^version=([^ \r]+).*/\1/p' || true)
META_NPROC=$(nproc) META_CPU=$(sed -nE 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1) \
	META_KERNEL=$(uname -r) META_REDIS=$redis_version META_ETCD=$etcd_version META_ZK=$zk_version \
	META_JAVA=$(! command -v java >/dev/null || java -version 2>&1 | head -n 1) META_LOCKD=$lockd_version META_DURATION=$dur \
	META_COMMIT=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown) \
	node -e '
const e = process.env;
console.log(JSON.stringify({ kind: "meta", date: new Date().toISOString(), nproc: Number(e.META_NPROC),
  cpu: e.META_CPU, kernel: e.META_KERNEL, node: process.version, redis_server: e.META_REDIS, etcd: e.META_ETCD,
  zookeeper: e.META_ZK, java: e.META_JAVA, lockd: e.META_LOCKD, commit: e.META_COMMIT,
  duration_ms: Number(e.META_DURATION), loadavg_start: require("os").loadavg().map((x) => x.toFixed(2)).join(" ") }));' >"$out"

status=0
run() { # peer mode c warmup_ms
	local peer=$1 mode=$2 c=$3 w=$4 rc=0 target
	case $peer in
	redlock | semaphore) target=() ;;
	etcd) target=(--etcd "$etcd_list" --pids "$(IFS=,; echo "${etcd_pids[*]}")") ;;
	zookeeper) target=(--zk "$zk_list" --pids "$(IFS=,; echo "${zk_pids[*]}")") ;;
	lockd*) target=(--lockd "127.0.0.1:$lport" --pids "$lockd_pid" --lockd-version "$lockd_version") ;;
	esac
	echo "bench/peers: $peer $mode c=$c (warm-up $w ms, $dur ms)" >&2
	# in the background, so that a signal reaches the trap at once
	timeout -k 5 $(((w + dur) / 1000 + 120)) node bench/peers/bench.js --peer "$peer" --mode "$mode" --c "$c" \
		--duration "$dur" --warmup "$w" --redis "$redis_list" --clk-tck "$(getconf CLK_TCK)" \
		--out "$out" "${target[@]}" >/dev/null &
	bench_pid=$!
	wait "$bench_pid" || rc=$?
	bench_pid=
	if [ $rc = 1 ]; then
		echo "bench/peers: MUTUAL EXCLUSION VIOLATED in $peer $mode c=$c" >&2
		status=1
	elif [ $rc != 0 ]; then
		echo "bench/peers: $peer $mode c=$c failed (status $rc)" >&2
		[ $status = 1 ] || status=2
	fi
}
for peer in $peers; do
	first=$((5 * warm))
	for c in 16 64; do
		run "$peer" uncontended "$c" "$first"
		first=$warm
	done
	run "$peer" handoff 16 "$warm"
done
node bench/peers/report.js "$out" | tee bench/out/peers.md
echo "bench/peers: wrote $out and bench/out/peers.md" >&2
exit $status
