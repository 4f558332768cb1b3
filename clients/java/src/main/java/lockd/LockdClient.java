package lockd;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A client of lockd (protocol 1.0-1.3, and WHO of 1.4). Thread-safe; one
 * per process is enough.
 *
 * <p>Concurrency model: every held lock, leadership and observation has a
 * connection (a lockd session) of its own; connections that hold nothing
 * are pooled. lockd's reentrancy is per session, so threads sharing a
 * session would all be granted the same key: with a session per holder,
 * threads of one JVM exclude each other exactly as two processes do, and
 * wait in lockd's one FIFO queue. All connections are served by one I/O
 * thread (a selector); listeners run on one event thread; a cached pool
 * runs the rare background jobs (resume, ending an abandoned session). No
 * thread per lock, and waiting threads block on futures (no monitors), so
 * virtual threads wait as well as platform threads.
 */
public final class LockdClient implements AutoCloseable {
    final List<String> addresses;
    final String password;
    final boolean resume;
    final Duration resumeWindow;
    final int maxKeyLength;
    final int connectTimeoutMs;
    final long requestTimeoutMs;
    final SSLContext tls;
    final boolean heartbeat;
    final IoLoop loop;
    final ExecutorService events;
    final ExecutorService background;
    /** Runs the holds' heartbeats and local deadlines (one thread, never blocked by I/O). */
    final ScheduledThreadPoolExecutor timer;
    /** HELD heartbeats sent (for the tests and the benchmark). */
    final java.util.concurrent.atomic.AtomicLong heartbeats = new java.util.concurrent.atomic.AtomicLong();
    private final AtomicBoolean noSession = new AtomicBoolean();
    private volatile boolean closed;
    private final ArrayDeque<Conn> idle = new ArrayDeque<>();
    private final Set<Conn> all = ConcurrentHashMap.newKeySet();
    /** The sessions being ended in the background (endInBackground). */
    private final Set<CompletableFuture<Void>> ends = ConcurrentHashMap.newKeySet();
    final ConcurrentHashMap<ThreadKey, ThreadHold> threadHolds = new ConcurrentHashMap<>();
    private static final int MAX_IDLE = 64;

    record ThreadKey(String name, Thread thread) {}

    /** A connected channel, and its TLS when the client speaks TLS. */
    record Link(SocketChannel ch, Tls tls) {}

    /** What one thread holds of one name: one session, with local counts. */
    static final class ThreadHold {
        final LockHandle handle;
        int writes, reads;

        ThreadHold(LockHandle handle) {
            this.handle = handle;
        }
    }

    /** Connects to lockd at "host:port" (or "unix:/path") with resumable sessions. */
    public static LockdClient connect(String address) {
        return builder().address(address).build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Options of a client. */
    public static final class Builder {
        private final List<String> addresses = new ArrayList<>();
        private String password;
        private boolean resume = true;
        private Duration resumeWindow = Duration.ofSeconds(10);
        private int maxKeyLength = 256;
        private Duration connectTimeout = Duration.ofSeconds(5);
        private Duration requestTimeout = Duration.ofSeconds(10);
        private SSLContext tls;
        private boolean heartbeat = true;

        /** A lockd address, "host:port" or "unix:/path"; several are tried in order (same masters). */
        public Builder address(String... a) {
            addresses.addAll(List.of(a));
            return this;
        }

        /** Sent with AUTH first on every connection. */
        public Builder password(String p) {
            password = Words.check("password", p, 4096);
            return this;
        }

        /** Ask for resumable sessions (protocol 1.2; default true; silently plain on an older lockd). */
        public Builder resume(boolean r) {
            resume = r;
            return this;
        }

        /** How long a broken connection of a resumable session is retried before its locks count as lost. */
        public Builder resumeWindow(Duration d) {
            resumeWindow = d;
            return this;
        }

        /** The longest key or value sent (lockd's limits.max_key_len; default 256). */
        public Builder maxKeyLength(int n) {
            maxKeyLength = n;
            return this;
        }

        public Builder connectTimeout(Duration d) {
            connectTimeout = d;
            return this;
        }

        /** Bound on requests that do not wait for a lock (UNLOCK, STATUS, ...). */
        public Builder requestTimeout(Duration d) {
            requestTimeout = d;
            return this;
        }

        /**
         * Speak TLS (1.2 or later) to lockd's {@code tls} listeners, with
         * the trust (and, for a listener with a {@code ca}, the client
         * certificate) of ctx. lockd's certificate must name the host of
         * the address (a DNS name, or an IP address in its subjectAltName).
         * See {@link LockdClient#tlsContext}.
         */
        public Builder tls(SSLContext ctx) {
            tls = ctx;
            return this;
        }

        /** TLS, trusting the JDK's CAs (SSLContext.getDefault()). */
        public Builder tls() {
            try {
                return tls(SSLContext.getDefault());
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("lockd: no default TLS context", e);
            }
        }

        /**
         * The local lease deadline of every hold, kept by a HELD heartbeat
         * (default true). false brings back the old behaviour: a hold is
         * reported lost only by lockd (LOST) or when its session ends.
         */
        public Builder heartbeat(boolean on) {
            heartbeat = on;
            return this;
        }

        /** Connects (one connection, kept in the pool) and returns the client. */
        public LockdClient build() {
            if (addresses.isEmpty()) {
                throw new IllegalArgumentException("lockd: no address");
            }
            if (tls != null) {
                for (String a : addresses) {
                    if (a.startsWith("unix:") || a.startsWith("/")) {
                        throw new IllegalArgumentException("lockd: TLS over a Unix socket (" + a + ")");
                    }
                }
            }
            LockdClient c;
            try {
                c = new LockdClient(this);
            } catch (IOException e) {
                throw new LockdException("IO", "lockd: " + e, e);
            }
            try {
                c.put(c.newConn(true));
            } catch (RuntimeException e) {
                c.close();
                throw e;
            }
            return c;
        }
    }

    private LockdClient(Builder b) throws IOException {
        addresses = List.copyOf(b.addresses);
        password = b.password;
        resume = b.resume;
        resumeWindow = b.resumeWindow;
        maxKeyLength = b.maxKeyLength;
        connectTimeoutMs = (int) Math.min(Integer.MAX_VALUE, b.connectTimeout.toMillis());
        requestTimeoutMs = b.requestTimeout.toMillis();
        tls = b.tls;
        heartbeat = b.heartbeat;
        loop = new IoLoop("lockd-io");
        events = Executors.newSingleThreadExecutor(r -> daemon(r, "lockd-events"));
        background = Executors.newCachedThreadPool(r -> daemon(r, "lockd-background"));
        timer = new ScheduledThreadPoolExecutor(1, r -> daemon(r, "lockd-timer"));
        timer.setRemoveOnCancelPolicy(true);
    }

    /**
     * A TLS context from PEM files: caPem, the CA certificates that signed
     * lockd's certificate (null: the JDK's CAs); certPem and keyPem, the
     * client certificate (then its chain) and its PKCS#8 private key
     * ("BEGIN PRIVATE KEY", as openssl 3 writes it), for a listener with a
     * {@code ca} (null: none).
     */
    public static SSLContext tlsContext(Path caPem, Path certPem, Path keyPem) {
        try {
            CertificateFactory cf = CertificateFactory.getInstance("X.509");
            TrustManagerFactory tmf = null;
            if (caPem != null) {
                KeyStore ts = KeyStore.getInstance("PKCS12");
                ts.load(null, null);
                int i = 0;
                for (Certificate c : certs(cf, caPem)) {
                    ts.setCertificateEntry("ca" + i++, c);
                }
                tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                tmf.init(ts);
            }
            KeyManagerFactory kmf = null;
            if (certPem != null) {
                Certificate[] chain = certs(cf, certPem).toArray(Certificate[]::new);
                KeyStore ks = KeyStore.getInstance("PKCS12");
                ks.load(null, null);
                char[] pw = new char[0];
                ks.setKeyEntry("client", privateKey(keyPem != null ? keyPem : certPem), pw, chain);
                kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                kmf.init(ks, pw);
            }
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(kmf == null ? null : kmf.getKeyManagers(), tmf == null ? null : tmf.getTrustManagers(), null);
            return ctx;
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException("lockd: TLS files: " + e, e);
        }
    }

    private static Collection<? extends Certificate> certs(CertificateFactory cf, Path pem)
            throws IOException, GeneralSecurityException {
        try (InputStream in = Files.newInputStream(pem)) {
            Collection<? extends Certificate> cs = cf.generateCertificates(in);
            if (cs.isEmpty()) {
                throw new GeneralSecurityException("no certificate in " + pem);
            }
            return cs;
        }
    }

    private static PrivateKey privateKey(Path pem) throws IOException, GeneralSecurityException {
        String s = Files.readString(pem, StandardCharsets.US_ASCII);
        int b = s.indexOf("-----BEGIN PRIVATE KEY-----"), e = s.indexOf("-----END PRIVATE KEY-----");
        if (b < 0 || e < b) {
            throw new GeneralSecurityException(pem + " has no PKCS#8 key (BEGIN PRIVATE KEY); convert it with "
                    + "openssl pkcs8 -topk8 -nocrypt");
        }
        byte[] der = Base64.getMimeDecoder().decode(s.substring(b + 27, e));
        GeneralSecurityException last = null;
        for (String alg : new String[] {"EC", "RSA", "Ed25519", "Ed448"}) {
            try {
                return KeyFactory.getInstance(alg).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException x) {
                last = x;
            }
        }
        throw last;
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    // ---- connections ----

    /** Connects to the first address that answers (TLS: and completes the handshake). */
    Link openChannel() throws IOException {
        return openChannel(0);
    }

    /**
     * As openChannel(), trying the addresses from the first-th on (modulo
     * their number), so that retries do not all go to one lockd that
     * accepts connections but does not answer.
     */
    Link openChannel(int first) throws IOException {
        IOException last = null;
        for (int i = 0; i < addresses.size(); i++) {
            String a = addresses.get((first + i) % addresses.size());
            SocketChannel ch = null;
            try {
                Tls t = null;
                if (a.startsWith("unix:") || a.startsWith("/")) {
                    ch = SocketChannel.open(StandardProtocolFamily.UNIX);
                    ch.connect(UnixDomainSocketAddress.of(a.startsWith("unix:") ? a.substring(5) : a));
                    ch.configureBlocking(false);
                } else {
                    int colon = a.lastIndexOf(':');
                    if (colon < 0) {
                        throw new IOException("lockd: address " + a + " is not host:port");
                    }
                    String host = a.substring(0, colon).replace("[", "").replace("]", "");
                    int port = Integer.parseInt(a.substring(colon + 1));
                    ch = SocketChannel.open();
                    ch.socket().connect(new InetSocketAddress(host, port), connectTimeoutMs);
                    ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                    ch.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
                    ch.configureBlocking(false);
                    if (tls != null) {
                        t = Tls.handshake(ch, tls, host, port, connectTimeoutMs);
                    }
                }
                return new Link(ch, t);
            } catch (IOException | RuntimeException e) {
                if (ch != null) {
                    ch.close();
                }
                last = e instanceof IOException ? (IOException) e : new IOException(e);
            }
        }
        throw last;
    }

    /** A new connection: AUTH when a password is set, SESSION when resumable (plain on ERR PROTOCOL). */
    Conn newConn(boolean resumable) {
        if (closed) {
            throw new IllegalStateException("lockd: client closed");
        }
        Link link;
        try {
            link = openChannel();
        } catch (IOException e) {
            throw new LockdException("IO", "lockd: cannot connect to " + addresses + ": " + e, e);
        }
        Conn c = new Conn(this, link);
        all.add(c);
        if (closed) { // close() may have gone through all before c was in it
            c.abandon();
            try {
                link.ch().close(); // the I/O thread may be gone: not left to it
            } catch (IOException e) {
                // closed anyway
            }
            throw new IllegalStateException("lockd: client closed");
        }
        try {
            c.key = loop.register(link.ch(), c).get(connectTimeoutMs, TimeUnit.MILLISECONDS);
            if (password != null) {
                Reply r = timed(c, c.send("AUTH " + password, false));
                if (!r.line().equals("OK")) {
                    throw LockdException.fromReply(r.line());
                }
            }
            if (resumable && resume && !noSession.get()) {
                Reply r = timed(c, c.send("SESSION", false));
                String[] w = r.words();
                if (w.length == 4 && w[0].equals("SESSION")) {
                    c.sessId = w[1];
                    c.secret = w[2];
                    c.graceMs = graceMs(w[3]);
                } else if (r.line().startsWith("ERR PROTOCOL")) {
                    noSession.set(true); // lockd speaks 1.0/1.1: plain sessions from now on
                }
            }
            return c;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            c.abandon();
            throw new LockdException("IO", "lockd: interrupted while connecting", e);
        } catch (ExecutionException | TimeoutException e) {
            c.abandon();
            throw new LockdException("IO", "lockd: cannot connect: " + e, e);
        } catch (RuntimeException e) {
            c.abandon();
            throw e;
        }
    }

    Conn get() {
        synchronized (idle) {
            Conn c;
            while ((c = idle.pollLast()) != null) {
                if (c.state == Conn.State.OPEN) {
                    return c;
                }
            }
        }
        return newConn(true);
    }

    void put(Conn c) {
        c.owner = null;
        if (c.state != Conn.State.OPEN) {
            return;
        }
        synchronized (idle) {
            if (!closed && idle.size() < MAX_IDLE) {
                idle.addLast(c);
                return;
            }
        }
        if (closed) {
            c.abandon();
        } else {
            bg(c::quit);
        }
    }

    /** Runs r on the background pool (nothing once the client is closed). */
    void bg(Runnable r) {
        try {
            background.execute(r);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closed
        }
    }

    /** Runs a listener on the event thread, in order; its exceptions are reported, not thrown. */
    void fire(Runnable r) {
        try {
            events.execute(() -> {
                try {
                    r.run();
                } catch (Throwable t) {
                    t.printStackTrace();
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closed
        }
    }

    void untrack(Conn c) {
        all.remove(c);
    }

    boolean isClosed() {
        return closed;
    }

    /** Whether new sessions are resumable (lockd speaks 1.2, resume not turned off). */
    public boolean isResumable() {
        return resume && !noSession.get();
    }

    /** The grace_ms of a SESSION reply; lockd's default when it is not a number. */
    private static long graceMs(String word) {
        try {
            return Long.parseLong(word);
        } catch (NumberFormatException e) {
            return Conn.DEFAULT_GRACE_MS;
        }
    }

    /**
     * Ends a resumable session in the background, on a connection of its
     * own (see SessionEnd). Also once the client is closed: close() itself
     * ends sessions this way, and waits for them (bounded).
     */
    void endInBackground(String id, String secret, long graceMs) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        ends.add(f);
        f.whenComplete((v, e) -> ends.remove(f));
        Runnable r = () -> {
            try {
                new SessionEnd(this, id, secret, graceMs).run();
            } finally {
                f.complete(null);
            }
        };
        try {
            background.execute(r);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            daemon(r, "lockd-end").start(); // after close(): ended all the same
        }
    }

    // ---- waiting for replies ----

    /** Waits for fs until end (System.nanoTime()), keeping an interrupt. */
    private static void awaitAll(List<CompletableFuture<Void>> fs, long end) {
        try {
            CompletableFuture.allOf(fs.toArray(CompletableFuture<?>[]::new))
                    .get(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** A reply within the request timeout; the connection is abandoned otherwise. */
    Reply timed(Conn c, CompletableFuture<Reply> f) {
        try {
            return f.get(requestTimeoutMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            c.abandon();
            Thread.currentThread().interrupt();
            throw new LockdException("IO", "lockd: interrupted", e);
        } catch (TimeoutException e) {
            c.abandon();
            throw new LockdException("IO", "lockd: no reply within " + requestTimeoutMs + " ms");
        } catch (ExecutionException e) {
            throw broken(e);
        }
    }

    static LockdException broken(ExecutionException e) {
        return new LockdException("IO", "lockd: connection broke", e.getCause());
    }

    /** Waits for a granting reply; an interrupt abandons the session (lockd drops the waiting LOCK). */
    Reply interruptibly(Conn c, CompletableFuture<Reply> f) throws InterruptedException {
        try {
            return f.get();
        } catch (InterruptedException e) {
            c.abandon();
            throw e;
        } catch (ExecutionException e) {
            c.abandon();
            throw broken(e);
        }
    }

    /** Waits for a granting reply ignoring interrupts (restored afterwards), as Lock.lock() must. */
    static Reply uninterruptibly(Conn c, CompletableFuture<Reply> f) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return f.get();
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    c.abandon();
                    throw broken(e);
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Sends a granting request (LOCK, TRYLOCK, CAMPAIGN) on a session of its
     * own. Returns the handle on "OK fence", null on TIMEOUT or BUSY.
     */
    LockHandle grant(String key, String line, String releaseLine, boolean interruptible) throws InterruptedException {
        Conn c;
        LockHandle h;
        Reply r;
        // A pooled connection may have been closed by lockd meanwhile (its
        // idle timeout): one more try on a new one then. A broken
        // connection may have carried a grant: its session is ended
        // (abandoned), never reused.
        long sent;
        List<CompletableFuture<Reply>> fs;
        for (int attempt = 0;; attempt++) {
            c = get();
            h = new LockHandle(this, c, key, releaseLine);
            c.owner = h;
            sent = System.nanoTime();
            fs = c.sendWithHeld(line, heartbeat, false);
            CompletableFuture<Reply> f = fs.get(0);
            try {
                r = interruptible ? interruptibly(c, f) : uninterruptibly(c, f);
                break;
            } catch (LockdException e) {
                if (attempt > 0 || !(e.getCause() instanceof Conn.Broken)) {
                    throw e;
                }
            }
        }
        String[] w = r.words();
        if (w.length == 2 && w[0].equals("OK")) {
            h.granted(Long.parseUnsignedLong(w[1]));
            if (c.state == Conn.State.DEAD) {
                h.lose();
            } else if (heartbeat) {
                h.start(sent, fs.get(1));
            }
            return h;
        }
        put(c);
        if (r.line().equals("TIMEOUT") || r.line().equals("BUSY")) {
            return null;
        }
        throw LockdException.fromReply(r.line());
    }

    Reply query(String line, boolean multi) {
        Conn c = get();
        Reply r = timed(c, c.send(line, multi));
        put(c);
        return r;
    }

    String key(String k) {
        return Words.check("key", k, maxKeyLength);
    }

    static String waitArg(Duration wait) {
        return " WAIT " + Words.ms("wait", wait, true);
    }

    // ---- API ----

    /** The lock of name: a java.util.concurrent.locks.Lock owned per thread, reentrant. */
    public DistributedLock getLock(String name) {
        return new DistributedLock(this, key(name), false);
    }

    /** A read-write lock: the read lock takes SHARED holds, the write lock exclusive ones. */
    public LockdReadWriteLock getReadWriteLock(String name) {
        return new LockdReadWriteLock(this, key(name));
    }

    /** A counting semaphore of n permits (LOCK name PERMITS n). */
    public LockdSemaphore getSemaphore(String name, int permits) {
        if (permits < 1 || permits > 1 << 20) {
            throw new IllegalArgumentException("lockd: permits " + permits + " out of range");
        }
        return new LockdSemaphore(this, key(name), permits);
    }

    /**
     * Takes key for a handle not bound to a thread (close it to unlock),
     * waiting at most wait; LockdException with code TIMEOUT when it passes.
     * An interrupt abandons the wait.
     */
    public LockHandle acquire(String key, Duration wait) throws InterruptedException {
        String k = key(key);
        LockHandle h = grant(k, "LOCK " + k + waitArg(wait), "UNLOCK " + k, true);
        if (h == null) {
            throw new LockdException("TIMEOUT", "lockd: " + k + " not granted within " + wait);
        }
        return h;
    }

    /**
     * As acquire(key, wait), with a fixed lease (TTL ms) that nobody renews:
     * it lapses after ttl (a LOST event) unless {@link LockHandle#extend}ed.
     */
    public LockHandle acquire(String key, Duration wait, Duration ttl) throws InterruptedException {
        String k = key(key);
        String line = "LOCK " + k + waitArg(wait) + " TTL " + Words.ms("ttl", ttl, false);
        LockHandle h = grant(k, line, "UNLOCK " + k, true);
        if (h == null) {
            throw new LockdException("TIMEOUT", "lockd: " + k + " not granted within " + wait);
        }
        return h;
    }

    /** Takes key now if it is free, as a handle not bound to a thread. */
    public Optional<LockHandle> tryAcquire(String key) {
        String k = key(key);
        try {
            return Optional.ofNullable(grant(k, "TRYLOCK " + k, "UNLOCK " + k, false));
        } catch (InterruptedException e) {
            throw new AssertionError(e); // not interruptible
        }
    }

    /** Checks that lockd answers. */
    public void ping() {
        Reply r = query("PING", false);
        if (!r.line().equals("PONG")) {
            throw LockdException.fromReply(r.line());
        }
    }

    /**
     * The answer of STATUS: state FREE, HELD, SHARED, or PERMITS (of a
     * semaphore: holders permits held of permits); ttlMillis, the lease
     * left (-1 for PERMITS, which does not report it); waiters on this
     * lockd; permits, the n asked for (0 but for PERMITS).
     */
    public record Status(String state, int holders, long ttlMillis, int waiters, int permits) {
        public Status(String state, int holders, long ttlMillis, int waiters) {
            this(state, holders, ttlMillis, waiters, 0);
        }
    }

    /**
     * STATUS key: state FREE, HELD or SHARED, with holders (1 for HELD).
     * Of a semaphore, this tells only about permit 0 (a plain LOCK of the
     * key): ask {@link #status(String, int)}.
     */
    public Status status(String key) {
        Reply r = query("STATUS " + key(key), false);
        String[] w = r.words();
        if (w.length == 1 && w[0].equals("FREE")) {
            return new Status("FREE", 0, 0, 0);
        }
        if (w.length == 3 && w[0].equals("HELD")) {
            return new Status("HELD", 1, Long.parseLong(w[1]), Integer.parseInt(w[2]));
        }
        if (w.length == 4 && w[0].equals("SHARED")) {
            return new Status("SHARED", Integer.parseInt(w[1]), Long.parseLong(w[2]), Integer.parseInt(w[3]));
        }
        throw LockdException.fromReply(r.line());
    }

    /**
     * STATUS key PERMITS n, the status of a semaphore of n permits: state
     * PERMITS, holders = the permits held (on the masters, by every
     * lockd), waiters on this lockd for a permit or the key's lock.
     */
    public Status status(String key, int permits) {
        Reply r = query("STATUS " + key(key) + " PERMITS " + permits, false);
        String[] w = r.words();
        if (w.length == 4 && w[0].equals("PERMITS")) {
            return new Status("PERMITS", Integer.parseInt(w[1]), -1, Integer.parseInt(w[3]), Integer.parseInt(w[2]));
        }
        throw LockdException.fromReply(r.line());
    }

    // ---- election (1.3) ----

    /** Campaigns for name, waiting without limit, and publishes value once leader. Interruptible. */
    public Leadership campaign(String name, String value) throws InterruptedException {
        return campaign0(name, value, "").orElseThrow();
    }

    /** Campaigns for name for at most wait; empty when it passes. */
    public Optional<Leadership> campaign(String name, String value, Duration wait) throws InterruptedException {
        return campaign0(name, value, waitArg(wait));
    }

    private Optional<Leadership> campaign0(String name, String value, String opt) throws InterruptedException {
        String n = key(name);
        String v = Words.check("value", value, maxKeyLength);
        LockHandle h = grant(n, "CAMPAIGN " + n + " " + v + opt, "RESIGN " + n, true);
        return Optional.ofNullable(h == null ? null : new Leadership(h));
    }

    /** Who leads name (LEADER name), empty when nobody does. */
    public Optional<Leader> leader(String name) {
        String n = key(name);
        Reply r = query("LEADER " + n, false);
        String[] w = r.words();
        if (w.length == 1 && w[0].equals("NONE")) {
            return Optional.empty();
        }
        if ((w.length == 2 || w.length == 3) && w[0].equals("LEADER")) {
            return Optional.of(new Leader(n, Long.parseUnsignedLong(w[1]), w.length == 3 ? w[2] : null));
        }
        throw LockdException.fromReply(r.line());
    }

    // ---- who holds a key (1.4) ----

    /**
     * WHO key (protocol 1.4): who holds key, as lockd reads it on a majority
     * of the masters. LockdException with code QUORUM when no majority
     * answered, PROTOCOL for a reply line this client does not know
     * (word=value tokens it does not know are ignored);
     * IllegalArgumentException, before anything is sent, for a key it
     * cannot send.
     */
    public WhoReply who(String key) {
        Reply r = query("WHO " + key(key), true);
        if (!r.line().equals("END")) {
            throw LockdException.fromReply(r.line());
        }
        return WhoReply.parse(r.lines());
    }

    /**
     * Watches name: listener gets the current leader at once (not elected
     * when nobody leads) and every change after, in order, on the client's
     * event thread, until the Observation is closed.
     */
    public Observation observe(String name, Consumer<Leader> listener) {
        Observation o = new Observation(this, key(name), listener);
        o.start();
        return o;
    }

    /**
     * Ends every session of the client (QUIT: their locks are released) and
     * stops its threads. When it returns, every LockHandle, DistributedLock,
     * read or write lock, permit and Leadership of the client reports not
     * held (lost), without waiting for the I/O thread to see the closes. A
     * resumable session that QUIT cannot end on its connection (being
     * resumed, a LOCK waiting, the QUIT unanswered) is resumed on a
     * connection of its own and ended there, within the same 3 s bound or,
     * past it, in the background.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        synchronized (idle) {
            idle.clear();
        }
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        List<CompletableFuture<Void>> fs = new ArrayList<>();
        for (Conn c : all) {
            fs.add(CompletableFuture.runAsync(c::quit, background));
        }
        awaitAll(fs, end);
        for (Conn c : all) {
            c.abandon(); // also tells the owner of a session that had ended already
        }
        // Every hold reports ended now. The sessions that QUIT could not end
        // are being ended on connections of their own: waited for within the
        // same bound, so that a process exiting after close() leaves lockd
        // no holds to keep for their grace; they go on after it if need be.
        awaitAll(new ArrayList<>(ends), end);
        loop.execute(loop::close);
        timer.shutdownNow();
        events.shutdown();
        background.shutdown();
    }
}
