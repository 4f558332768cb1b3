"""Parts of the partition harness: network namespaces and the cuts between
them (Net), redis masters, a replica, Sentinels and lockd inside them
(Cluster), the fenced store (Store), and clients speaking the lockd line
protocol (Conn, StoreConn).

Everything lives in namespaces named <prefix>-<role>; addresses are in
10.213.0.0/24, which exists only inside them. The harness process itself
moves into the clients' namespace (setns), so nothing it opens can reach
anything outside.
"""

import ctypes
import os
import queue
import selectors
import shutil
import signal
import socket
import socketserver
import subprocess
import threading
import time

NET = "10.213.0"
MASTER_IP = ["%s.%d" % (NET, i) for i in (1, 2, 3)]
LOCKD_IP = ["%s.%d" % (NET, i) for i in (11, 12)]
CLIENT_IP = "%s.100" % NET
REPLICA_IP = "%s.21" % NET  # r1: m2's replica when m2 is a Sentinel-managed primary
REPLICA_PORT = 6380  # a Redis Cluster's replicas of m1 and m3, in their namespaces
EXTRA_IP = ["%s.%d" % (NET, i) for i in (4, 5)]  # m4, m5: standalone masters beside a cluster
SENTINEL_IP = "%s.30" % NET  # sn: the three Sentinels, one port each
SENTINEL_PORTS = (26379, 26380, 26381)
SENTINEL_NAME = "pt"  # the name the Sentinels monitor
STORE_PORT = 7400
REDIS_PORT = 6379
LOCKD_PORT = 7390
CLONE_NEWNET = 0x40000000


def sh(*argv, check=True):
    """Run a command; its failure is the harness's failure."""
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), r.stdout.strip()))
    return r.stdout


class Net:
    """The namespaces: br (a bridge), m1..m3 (masters), l1, l2 (lockd), cl
    (clients, the store and this harness), r1 (a replica of m2) and sn (the
    Sentinels) when m2 is a Sentinel-managed primary; each but br has eth0,
    a veth to the bridge, and an nftables table inet pt with an input and
    an output chain where the cuts go."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.roles = ["m1", "m2", "m3", "l1", "l2", "cl", "r1", "sn", "m4", "m5"]
        self.ip = dict(zip(self.roles, MASTER_IP + LOCKD_IP + [CLIENT_IP, REPLICA_IP, SENTINEL_IP] +
                           EXTRA_IP))
        self.made = []

    def ns(self, role):
        return "%s-%s" % (self.prefix, role)

    def create(self):
        br = self.ns("br")
        sh("ip", "netns", "add", br)
        self.made.append(br)
        sh("ip", "-n", br, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", br, "link", "set", "br0", "up")
        for role in self.roles:
            ns = self.ns(role)
            sh("ip", "netns", "add", ns)
            self.made.append(ns)
            sh("ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", role, "netns", br)
            sh("ip", "-n", br, "link", "set", "dev", role, "master", "br0")
            sh("ip", "-n", br, "link", "set", "dev", role, "up")
            sh("ip", "-n", ns, "addr", "add", self.ip[role] + "/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "netns", "exec", ns, "nft",
               "add table inet pt; "
               "add chain inet pt in { type filter hook input priority 0; }; "
               "add chain inet pt out { type filter hook output priority 0; }")

    def enter(self, role):
        """Move this process's calling thread (call it before starting
        threads: they inherit it) into a namespace."""
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open("/run/netns/" + self.ns(role), os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns " + self.ns(role))
        finally:
            os.close(fd)

    def destroy(self):
        for ns in reversed(self.made):
            sh("ip", "netns", "del", ns, check=False)
        self.made = []

    # ---- cuts
    def nft(self, role, cmd):
        sh("ip", "netns", "exec", self.ns(role), "nft", cmd)

    def cut_peer(self, role, peer, direction="both", how="drop"):
        """Drop (silently) or reject (TCP reset, ICMP otherwise) packets of
        role's namespace to and/or from peer's address."""
        pip = self.ip[peer]
        act = "drop"
        for chain, sel in (("in", "saddr"), ("out", "daddr")):
            if direction not in ("both", chain):
                continue
            if how == "reject":
                self.nft(role, "add rule inet pt %s ip %s %s meta l4proto tcp reject with tcp reset" %
                         (chain, sel, pip))
                act = "reject"
            self.nft(role, "add rule inet pt %s ip %s %s %s" % (chain, sel, pip, act))

    def cut_conn(self, role, peer, peer_port, local_port):
        """Drop, silently and both ways, one TCP connection of role's
        namespace: the one between local_port here and peer:peer_port."""
        pip = self.ip[peer]
        self.nft(role, "add rule inet pt in ip saddr %s tcp sport %d tcp dport %d drop" %
                 (pip, peer_port, local_port))
        self.nft(role, "add rule inet pt out ip daddr %s tcp dport %d tcp sport %d drop" %
                 (pip, peer_port, local_port))

    def link(self, role, up):
        sh("ip", "-n", self.ns(role), "link", "set", "eth0", "up" if up else "down")

    def heal(self):
        for role in self.roles:
            self.nft(role, "flush chain inet pt in; flush chain inet pt out")
            self.link(role, True)


# ------------------------------------------------------------------ redis

class _Short(Exception):
    """A reply not read whole yet."""


def _parse(buf, i):
    """One RESP value at buf[i:]: (value, where the next begins). Simple
    strings, errors (their text) and integers as str, nil as None, bulk
    strings as str, arrays as lists."""
    nl = buf.find(b"\r\n", i)
    if nl < 0:
        raise _Short()
    kind, line = buf[i:i + 1], buf[i + 1:nl]
    if kind in (b"+", b"-", b":"):
        return line.decode(), nl + 2
    n = int(line)
    if n < 0:
        return None, nl + 2
    if kind == b"$":
        if len(buf) < nl + 4 + n:
            raise _Short()
        return buf[nl + 2:nl + 2 + n].decode(), nl + 4 + n
    if kind == b"*":
        items, j = [], nl + 2
        for _ in range(n):
            v, j = _parse(buf, j)
            items.append(v)
        return items, j
    raise ValueError("unexpected RESP %r" % buf[i:nl])


def resp(sock, *args, timeout=2.0):
    """One Redis command over a fresh or given socket; the reply decoded
    roughly (_parse)."""
    msg = "*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a.encode()), a) for a in args)
    sock.settimeout(timeout)
    sock.sendall(msg.encode())
    buf = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("redis closed")
        buf += chunk
        try:
            return _parse(buf, 0)[0]
        except _Short:
            continue


def redis_cmd(ip, *args, timeout=2.0, port=REDIS_PORT):
    with socket.create_connection((ip, port), timeout=timeout) as s:
        return resp(s, *args, timeout=timeout)


def sentinel_primary(timeout=0.5):
    """The primary the Sentinels name ("IP:PORT", the first that answers),
    or None."""
    for port in SENTINEL_PORTS:
        try:
            r = redis_cmd(SENTINEL_IP, "SENTINEL", "get-master-addr-by-name", SENTINEL_NAME,
                          timeout=timeout, port=port)
        except (OSError, ConnectionError):
            continue
        if isinstance(r, list) and len(r) == 2:
            return "%s:%s" % tuple(r)
    return None


def lockd_stats(addr, timeout=2.0):
    """lockd's STATS as a dict (a connection of its own, outside the
    history)."""
    with socket.create_connection(addr, timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(b"STATS\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("lockd closed")
            buf += chunk
    out = {}
    for line in buf.decode().splitlines():
        w = line.split(" ", 2)
        if len(w) == 3 and w[0] == "STAT":
            out[w[1]] = w[2]
    return out


class Cluster:
    """Three redis masters and two lockd, each in its namespace; every
    process started here is killed here, by pid."""

    def __init__(self, net, tmp, lockd_bin, hist=None):
        self.net = net
        self.tmp = tmp
        self.bin = lockd_bin
        self.procs = {}
        self.hist = hist

    def _spawn(self, name, role, argv, log):
        f = open(log, "ab")
        p = subprocess.Popen(["ip", "netns", "exec", self.net.ns(role)] + argv,
                             stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        f.close()
        self.procs[name] = p
        return p

    def _redis(self, name, ip, extra=()):
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        self._spawn(name, name,
                    ["redis-server", "--port", str(REDIS_PORT), "--bind", ip, "--save", "",
                     "--appendonly", "no", "--dir", d, "--protected-mode", "no",
                     "--daemonize", "no"] + list(extra), os.path.join(d, "redis.log"))

    def start_masters(self, replica=False):
        """m1..m3; with replica, r1 too, a replica of m2 (in sync when this
        returns). Redis 7 waits 5 s before a diskless full sync by default,
        for more replicas to join: none will here, before or after a
        failover."""
        fast = ["--repl-diskless-sync-delay", "0"] if replica else []
        for i, ip in enumerate(MASTER_IP):
            self._redis("m%d" % (i + 1), ip, fast)
        if replica:
            self._redis("r1", REPLICA_IP, fast + ["--replicaof", MASTER_IP[1], str(REDIS_PORT)])
        for ip in MASTER_IP + ([REPLICA_IP] if replica else []):
            self._until(lambda ip=ip: redis_cmd(ip, "PING", timeout=0.5) == "PONG", 10, "redis " + ip)
        if replica:
            self._until(lambda: "master_link_status:up" in redis_cmd(REPLICA_IP, "INFO", "replication"),
                        10, "r1 in sync with m2")

    def start_sentinels(self):
        """Three Sentinels in sn, monitoring m2 as SENTINEL_NAME (quorum 2,
        down after 1 s); ready when each knows the two others and r1.
        redis-sentinel, else redis-server --sentinel (the same binary)."""
        sbin = shutil.which("redis-sentinel")
        argv_tail = [] if sbin else ["--sentinel"]
        sbin = sbin or "redis-server"
        for k, port in enumerate(SENTINEL_PORTS):
            name = "sn%d" % k
            d = os.path.join(self.tmp, name)
            os.makedirs(d, exist_ok=True)
            conf = os.path.join(d, "sentinel.conf")
            with open(conf, "w") as f:
                f.write("port %d\nbind %s\nprotected-mode no\ndaemonize no\ndir %s\n"
                        "sentinel monitor %s %s %d 2\n"
                        "sentinel down-after-milliseconds %s 1000\n"
                        "sentinel failover-timeout %s 2000\n"
                        "sentinel parallel-syncs %s 1\n" %
                        (port, SENTINEL_IP, d, SENTINEL_NAME, MASTER_IP[1], REDIS_PORT, SENTINEL_NAME,
                         SENTINEL_NAME, SENTINEL_NAME))
            self._spawn(name, "sn", [sbin, conf] + argv_tail, os.path.join(d, "redis.log"))

        def ready():
            for port in SENTINEL_PORTS:
                r = redis_cmd(SENTINEL_IP, "SENTINEL", "master", SENTINEL_NAME, timeout=0.5, port=port)
                f = dict(zip(r[::2], r[1::2])) if isinstance(r, list) else {}
                if f.get("num-other-sentinels") != "2" or f.get("num-slaves") != "1":
                    return False
            return True
        # hello messages go out every 2 s
        self._until(ready, 15, "the Sentinels knowing each other and r1")

    def start_redis_cluster(self):
        """A Redis Cluster (issue 31): m1..m3 primaries (cluster-enabled,
        node timeout 1000 ms, the bus on REDIS_PORT + 10000), r1 the
        replica of m2, and a replica of m1 and of m3 in their own
        namespaces on REPLICA_PORT (every primary has one: with
        redis.wait_replicas 1 a primary without counts for no write).
        Ready when every node says cluster_state:ok and every replica is
        in sync."""
        opts = ["--cluster-enabled", "yes", "--cluster-node-timeout", "1000",
                "--cluster-config-file", "nodes.conf", "--repl-diskless-sync-delay", "0"]
        nodes = [("m1", "m1", MASTER_IP[0], REDIS_PORT), ("m2", "m2", MASTER_IP[1], REDIS_PORT),
                 ("m3", "m3", MASTER_IP[2], REDIS_PORT), ("r1", "r1", REPLICA_IP, REDIS_PORT),
                 ("m1r", "m1", MASTER_IP[0], REPLICA_PORT), ("m3r", "m3", MASTER_IP[2], REPLICA_PORT)]
        for name, role, ip, port in nodes:
            d = os.path.join(self.tmp, name)
            os.makedirs(d, exist_ok=True)
            if os.path.exists(os.path.join(d, "nodes.conf")):  # an earlier run's (same PT_OUT)
                os.remove(os.path.join(d, "nodes.conf"))
            self._spawn(name, role,
                        ["redis-server", "--port", str(port), "--bind", ip, "--save", "",
                         "--appendonly", "no", "--dir", d, "--protected-mode", "no",
                         "--daemonize", "no"] + opts, os.path.join(d, "redis.log"))
        for _, _, ip, port in nodes:
            self._until(lambda ip=ip, port=port: redis_cmd(ip, "PING", timeout=0.5, port=port) == "PONG",
                        10, "redis %s:%d" % (ip, port))
        sh("redis-cli", "--cluster", "create", *["%s:%d" % (ip, REDIS_PORT) for ip in MASTER_IP],
           "--cluster-yes")
        ids = {ip: redis_cmd(ip, "CLUSTER", "MYID") for ip in MASTER_IP}
        for (ip, port), primary in (((REPLICA_IP, REDIS_PORT), MASTER_IP[1]),
                                    ((MASTER_IP[0], REPLICA_PORT), MASTER_IP[0]),
                                    ((MASTER_IP[2], REPLICA_PORT), MASTER_IP[2])):
            redis_cmd(ip, "CLUSTER", "MEET", MASTER_IP[0], str(REDIS_PORT), port=port)
            self._until(lambda ip=ip, port=port, primary=primary: ids[primary] in str(
                redis_cmd(ip, "CLUSTER", "NODES", port=port)), 10, "%s:%d meeting the cluster" % (ip, port))
            self._until(lambda ip=ip, port=port, primary=primary: redis_cmd(
                ip, "CLUSTER", "REPLICATE", ids[primary], port=port) == "OK", 10,
                "%s:%d replicating %s" % (ip, port, primary))

        def ready():
            for _, _, ip, port in nodes:
                if "cluster_state:ok" not in str(redis_cmd(ip, "CLUSTER", "INFO", timeout=0.5, port=port)):
                    return False
            for ip, port in ((REPLICA_IP, REDIS_PORT), (MASTER_IP[0], REPLICA_PORT),
                             (MASTER_IP[2], REPLICA_PORT)):
                if "master_link_status:up" not in str(redis_cmd(ip, "INFO", "replication", port=port)):
                    return False
            return True
        self._until(ready, 20, "the cluster ok and its replicas in sync")
        for ip in MASTER_IP:  # a primary that does not list its replica yet ignores a failover
            self._until(lambda ip=ip: "connected_slaves:1" in str(redis_cmd(ip, "INFO", "replication")),
                        10, "%s listing its replica" % ip)

    def start_extra_masters(self):
        """m4 and m5: standalone masters, entries beside a cluster's."""
        for k, ip in enumerate(EXTRA_IP):
            self._redis("m%d" % (k + 4), ip)
        for ip in EXTRA_IP:
            self._until(lambda ip=ip: redis_cmd(ip, "PING", timeout=0.5) == "PONG", 10, "redis " + ip)

    def cluster_entry(self):
        return '{cluster: ["%s:%d", "%s:%d"]}' % (MASTER_IP[0], REDIS_PORT, MASTER_IP[2], REDIS_PORT)

    def sentinel_entry(self):
        return '{sentinel: [%s], name: %s}' % (
            ", ".join('"%s:%d"' % (SENTINEL_IP, p) for p in SENTINEL_PORTS), SENTINEL_NAME)

    def start_lockd(self, j, lease_ms=1500, timeout_ms=100, extra="", masters=None, redis_extra=""):
        """lockd j on l1 or l2; masters: the entries of redis.masters as
        YAML (default the three masters), redis_extra: more lines under
        redis:."""
        name = "l%d" % (j + 1)
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        conf = os.path.join(d, "lockd.yml")
        with open(conf, "w") as f:
            f.write("# written by tests/partition\n")
            f.write('listen: ["%s:%d", "unix:%s/lockd.sock"]\n' % (LOCKD_IP[j], LOCKD_PORT, d))
            f.write("allow_unauthenticated: true\nlog_level: %s\n" %
                    ("debug" if os.environ.get("PT_DEBUG") else "info"))
            if masters is None:
                masters = ['"%s:%d"' % (ip, REDIS_PORT) for ip in MASTER_IP]
            f.write("redis:\n  masters: [%s]\n  timeout_ms: %d\n%s" % (", ".join(masters), timeout_ms,
                                                                         redis_extra))
            f.write("locks:\n  lease_ms: %d\n" % lease_ms)
            f.write(extra)
        self._spawn(name, name, [self.bin, "-c", conf], os.path.join(d, "lockd.log"))
        addr = (LOCKD_IP[j], LOCKD_PORT)

        def granted():
            if self.procs[name].poll() is not None:
                raise RuntimeError("%s exited: %s" % (name, self.log_tail(name)))
            with socket.create_connection(addr, timeout=1) as s:
                s.settimeout(2)
                s.sendall(b"TRYLOCK ~\r\n")
                r = s.recv(256)
                if r.startswith(b"OK"):
                    s.sendall(b"UNLOCK ~\r\n")
                    s.recv(256)
                    return True
            return False
        self._until(granted, 15, "%s granting" % name)
        return addr

    def _until(self, fn, secs, what):
        end = time.monotonic() + secs
        err = None
        while time.monotonic() < end:
            try:
                if fn():
                    return
            except (OSError, ConnectionError) as e:
                err = e
            time.sleep(0.05)
        raise RuntimeError("%s: not ready in %d s (%s)" % (what, secs, err))

    def log_path(self, name):
        return os.path.join(self.tmp, name, "lockd.log" if name.startswith("l") else "redis.log")

    def log_tail(self, name, n=30):
        try:
            with open(self.log_path(name), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(3)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = {}


# ------------------------------------------------------------------ store

NOFENCE = "nf-"  # keys of the store that check no fence (scenario 8)


class Store:
    """The fenced store: accepts "W key fence by" only with a fence larger
    than the last one it accepted for key; every write is recorded in the
    history (type store), accepted or not. A key that begins with NOFENCE
    is a resource that checks no fence: every write is accepted (recorded
    with nofence=True), as a resource without fencing takes them."""

    def __init__(self, hist, addr=(CLIENT_IP, STORE_PORT)):
        self.hist = hist
        self.last = {}
        self.lock = threading.Lock()
        store = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                for line in self.rfile:
                    w = line.decode().split()
                    if len(w) != 4 or w[0] != "W":
                        self.wfile.write(b"ERR\n")
                        continue
                    key, fence, by = w[1], int(w[2]), w[3]
                    with store.lock:
                        nofence = key.startswith(NOFENCE)
                        ok = nofence or key not in store.last or fence > store.last[key]
                        if ok and (key not in store.last or fence > store.last[key]):
                            store.last[key] = fence
                        rec = dict(proc="store", type="store", key=key, fence=fence, by=by, accepted=ok)
                        if nofence:
                            rec["nofence"] = True
                        store.hist.add(rec)
                        last = store.last[key]
                    self.wfile.write(b"OK\n" if ok else ("REFUSED %d\n" % last).encode())

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        socketserver.ThreadingTCPServer.daemon_threads = True
        self.srv = socketserver.ThreadingTCPServer(addr, Handler)
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class StoreConn:
    def __init__(self, name, hist, addr=(CLIENT_IP, STORE_PORT)):
        self.name, self.hist = name, hist
        self.s = socket.create_connection(addr, timeout=5)
        self.f = self.s.makefile("rb")

    def write(self, key, fence):
        oid = self.hist.invoke(self.name, "write", key=key, fence=fence)
        try:
            self.s.sendall(("W %s %d %s\n" % (key, fence, self.name)).encode())
            r = self.f.readline().decode().strip()
        except OSError as e:
            self.hist.complete(self.name, oid, "info", text=str(e))
            return None
        self.hist.complete(self.name, oid, "ok" if r == "OK" else "fail", text=r)
        return r == "OK"

    def close(self):
        self.s.close()


# ------------------------------------------------------------------ clients

class Reactor:
    """One thread reads every client connection of this process, so replies
    and events of all clients are timestamped in arrival order: every line
    read after one wake-up gets the time of that wake-up."""

    def __init__(self, hist):
        self.hist = hist
        self.sel = selectors.DefaultSelector()
        self.rd, self.wr = os.pipe()
        self.sel.register(self.rd, selectors.EVENT_READ, None)
        self.lock = threading.Lock()
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def add(self, conn):
        with self.lock:
            self.sel.register(conn.sock, selectors.EVENT_READ, conn)

    def remove(self, conn):
        with self.lock:
            try:
                self.sel.unregister(conn.sock)
            except (KeyError, ValueError):
                pass

    def run(self):
        while not self.stopping:
            ready = self.sel.select(0.2)
            t = time.monotonic()
            for key, _ in ready:
                conn = key.data
                if conn is None:
                    os.read(self.rd, 4096)
                    continue
                try:
                    data = conn.sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    self.remove(conn)
                    conn.on_eof(t)
                    continue
                conn.on_data(data, t)

    def stop(self):
        self.stopping = True
        os.write(self.wr, b"x")
        self.thread.join(2)


class Dead(Exception):
    """The connection is gone, or a reply did not come in time."""


class Conn:
    """A lockd client session: one TCP connection. Requests are sent from
    the caller's thread and their replies taken from a queue the reactor
    fills; LOST lines are events, recorded when they arrive."""

    def __init__(self, name, hist, reactor, addr, bound_ms=2000):
        self.name, self.hist, self.reactor, self.addr = name, hist, reactor, addr
        self.bound_ms = bound_ms  # what a reply may take beyond its WAIT
        # blocking with a timeout: the reactor reads only when readable,
        # and a request goes out whole or the session is given up
        self.sock = socket.create_connection(addr, timeout=5)
        self.buf = b""
        self.replies = queue.Queue()
        self.lost = set()
        self.dead = False
        self.slow = []  # requests answered later than WAIT + bound
        reactor.add(self)

    def on_data(self, data, t):
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            line = line.decode(errors="replace").rstrip("\r")
            w = line.split()
            if w and w[0] == "LOST":
                fence = int(w[2]) if len(w) > 2 else None
                self.lost.add((w[1], fence))
                self.hist.add(dict(t=t, proc=self.name, type="event", f="lost", key=w[1], fence=fence))
            else:
                self.replies.put((t, line))

    def on_eof(self, t):
        if not self.dead:
            self.dead = True
            self.hist.add(dict(t=t, proc=self.name, type="event", f="closed"))
        self.replies.put((t, None))

    def call(self, line, f, wait_ms=0, **fields):
        """Send one request; its reply (t, text). No reply within wait_ms +
        bound_ms: the outcome is unknown (info) and the session is closed."""
        if self.dead:
            raise Dead("connection closed")
        oid = self.hist.invoke(self.name, f, **fields)
        t0 = time.monotonic()
        try:
            self.sock.sendall((line + "\r\n").encode())
        except OSError as e:
            self.hist.complete(self.name, oid, "info", text=str(e))
            self.close()
            raise Dead(str(e))
        try:
            t, text = self.replies.get(timeout=(wait_ms + self.bound_ms) / 1000.0)
        except queue.Empty:
            self.hist.complete(self.name, oid, "info", text="no reply in %d ms" % (wait_ms + self.bound_ms))
            self.slow.append("%s: no reply in %d ms" % (line, wait_ms + self.bound_ms))
            self.close()
            raise Dead("no reply")
        if text is None:
            self.hist.complete(self.name, oid, "info", t=t, text="connection closed")
            raise Dead("connection closed")
        took = (t - t0) * 1000
        if took > wait_ms + self.bound_ms:
            self.slow.append("%s: answered %s after %.0f ms" % (line, text, took))
        return oid, t, text

    def lock(self, key, mode="x", n=1, wait=None, ttl=None, try_=False, delay=None):
        """LOCK or TRYLOCK (DELAY: the lock-delay, 1.4); the fence, or None
        with the reply text."""
        words = ["TRYLOCK" if try_ else "LOCK", key]
        if mode == "s":
            words.append("SHARED")
        elif mode == "p":
            words += ["PERMITS", str(n)]
        if wait is not None and not try_:
            words += ["WAIT", str(wait)]
        if ttl is not None:
            words += ["TTL", str(ttl)]
        if delay is not None:
            words += ["DELAY", str(delay)]
        line = " ".join(words)
        oid, t, text = self.call(line, "lock", wait_ms=0 if try_ else (wait or 0), key=key, mode=mode, n=n,
                                 ttl=ttl, wait=(0 if try_ else wait), cmd=line)
        w = text.split()
        if len(w) == 2 and w[0] == "OK":
            self.hist.complete(self.name, oid, "ok", t=t, fence=int(w[1]))
            return int(w[1]), text
        self.hist.complete(self.name, oid, "fail", t=t, text=text)
        return None, text

    def unlock(self, key):
        oid, t, text = self.call("UNLOCK " + key, "unlock", key=key)
        self.hist.complete(self.name, oid, "ok" if text.startswith("OK") else "fail", t=t, text=text)
        return text

    def held(self):
        """HELD: [(key, fence, ttl_ms)] of the holds this session has."""
        oid, t, text = self.call("HELD", "held")
        items = []
        while text != "END":
            w = text.split()
            if len(w) < 5 or w[0] != "KEY":
                self.hist.complete(self.name, oid, "fail", t=t, text=text)
                return None
            items.append((w[1], int(w[2]), int(w[4])))
            try:
                t, text = self.replies.get(timeout=self.bound_ms / 1000.0)
            except queue.Empty:
                text = None
            if text is None:
                self.hist.complete(self.name, oid, "info", t=t, text="HELD unfinished")
                self.close()
                raise Dead("HELD unfinished")
        self.hist.complete(self.name, oid, "ok", t=t, held=items)
        return items

    def plain(self, line, f):
        oid, t, text = self.call(line, f, cmd=line)
        self.hist.complete(self.name, oid, "fail" if text.startswith("ERR") else "ok", t=t, text=text)
        return text

    def wait_lost(self, key, fence, secs):
        """Wait up to secs for LOST key fence; whether it came."""
        end = time.monotonic() + secs
        while time.monotonic() < end:
            if (key, fence) in self.lost:
                return True
            time.sleep(0.005)
        return (key, fence) in self.lost

    def close(self):
        if not self.dead:
            self.hist.invoke(self.name, "close")
            self.dead = True
        self.reactor.remove(self)
        try:
            self.sock.close()
        except OSError:
            pass
