package lockd;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * TLS (issue 29, item 4): one more real lockd on the testenv masters with
 * two TLS listeners, one that asks for no client certificate and one whose
 * {@code ca} wants one, and a password. The certificates are made here
 * with the openssl command: a throwaway CA, lockd's certificate for
 * 127.0.0.1 signed by it, a client certificate, and a second CA that
 * signed nothing lockd shows.
 */
@ExtendWith(TestEnv.class)
@Timeout(60)
class TlsTest {
    static Path dir;
    static Process lockd;
    static String plainTls, clientCertTls;

    static void sh(String cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("sh", "-c", cmd).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(dir.resolve("openssl.log").toFile()).start();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("openssl hung: " + cmd);
        }
        assertEquals(0, p.exitValue(), cmd + ": " + Files.readString(dir.resolve("openssl.log")));
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @BeforeAll
    static void start() throws Exception {
        dir = Files.createTempDirectory("lockd-java-tls-");
        Assumptions.assumeTrue(new ProcessBuilder("openssl", "version").start().waitFor() == 0, "no openssl command");
        String ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
        sh("openssl req -x509 " + ec + " -keyout ca.key -out ca.pem -days 2 -subj /CN=java-ca"
                + " && openssl req -x509 " + ec + " -keyout other.key -out other.pem -days 2 -subj /CN=other"
                + " && echo subjectAltName=IP:127.0.0.1 > san.ext"
                + " && openssl req " + ec + " -keyout server.key -out server.csr -subj /CN=127.0.0.1"
                + " && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -set_serial 2 -days 2"
                + " -extfile san.ext -out server.pem"
                + " && openssl req " + ec + " -keyout client.key -out client.csr -subj /CN=client"
                + " && openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -set_serial 3 -days 2"
                + " -out client.pem");
        int p1 = freePort(), p2 = freePort();
        String tls = String.format("cert: \"%s/server.pem\", key: \"%s/server.key\"", dir, dir);
        String conf = String.format("listen:%n  - {address: \"127.0.0.1:%d\", tls: {%s}}%n"
                + "  - {address: \"127.0.0.1:%d\", tls: {%s, ca: \"%s/ca.pem\"}}%npassword: \"s3cret\"%n"
                + "redis:%n  masters: [\"127.0.0.1:%s\", \"127.0.0.1:%s\", \"127.0.0.1:%s\"]%n  timeout_ms: 100%n"
                + "locks:%n  lease_ms: 3000%n", p1, tls, p2, tls, dir, TestEnv.vars.get("MASTER0"),
                TestEnv.vars.get("MASTER1"), TestEnv.vars.get("MASTER2"));
        Files.writeString(dir.resolve("lockd.yml"), conf);
        startLockd();
        plainTls = "127.0.0.1:" + p1;
        clientCertTls = "127.0.0.1:" + p2;
        // Until the TLS lockd grants (it is up and its masters count).
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try (LockdClient c = client(plainTls, ctx(true, false))) {
                if (c.tryAcquire("java-tls-probe").map(h -> {
                    h.close();
                    return true;
                }).orElse(false)) {
                    return;
                }
            } catch (LockdException e) {
                // not yet
            }
            if (System.nanoTime() > end) {
                throw new AssertionError("no TLS lockd: " + Files.readString(dir.resolve("log")));
            }
            Thread.sleep(50);
        }
    }

    static void startLockd() throws IOException {
        String bin = System.getenv().getOrDefault("LOCKD_BIN", "../../lockd");
        lockd = new ProcessBuilder(bin, "-c", dir.resolve("lockd.yml").toString()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("log").toFile())).start();
    }

    @AfterAll
    static void stop() throws Exception {
        if (lockd != null) {
            lockd.destroyForcibly();
            lockd.waitFor(5, TimeUnit.SECONDS);
        }
        try (var paths = Files.walk(dir)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
    }

    static SSLContext ctx(boolean rightCa, boolean clientCert) {
        return LockdClient.tlsContext(dir.resolve(rightCa ? "ca.pem" : "other.pem"),
                clientCert ? dir.resolve("client.pem") : null, clientCert ? dir.resolve("client.key") : null);
    }

    static LockdClient client(String addr, SSLContext ctx) {
        return LockdClient.builder().address(addr).tls(ctx).password("s3cret").connectTimeout(Duration.ofSeconds(3))
                .requestTimeout(Duration.ofSeconds(3)).build();
    }

    /**
     * Locks over TLS as over TCP: the grant is seen on lockd A; the hold
     * outlives its 3 s lease (the heartbeat over TLS keeps its deadline);
     * a LOST event (a lapsed TTL) comes through; unlock frees the key.
     */
    @Test
    void locksOverTls() throws Exception {
        try (LockdClient c = client(plainTls, ctx(true, false));
                LockdClient a = LockdClient.connect(TestEnv.a())) {
            DistributedLock l = c.getLock("java-tls");
            l.lock();
            assertEquals("HELD", a.status("java-tls").state(), "a lock taken over TLS, seen on lockd A");
            long beats = c.heartbeats.get();
            Thread.sleep(3500); // longer than the lease: heartbeats over TLS keep the deadline ahead
            assertTrue(l.isHeld(), "held past its lease over TLS");
            assertTrue(c.heartbeats.get() - beats >= 2, "heartbeats over TLS: " + (c.heartbeats.get() - beats));
            l.unlock();
            assertEquals("FREE", a.status("java-tls").state());
            CountDownLatch lapsed = new CountDownLatch(1);
            LockHandle t = c.acquire("java-tls-ttl", Duration.ofSeconds(2), Duration.ofMillis(300));
            t.onLost(h -> lapsed.countDown());
            assertTrue(lapsed.await(3, TimeUnit.SECONDS), "a lapsed TTL reaches onLost over TLS");
            // a long line both ways (a TLS record of its own)
            String key = "k".repeat(250);
            try (LockHandle h = c.acquire(key, Duration.ofSeconds(2))) {
                assertEquals("HELD", c.status(key).state());
            }
        }
    }

    /**
     * A restart of the TLS lockd: the session is resumed on a new TLS
     * connection, with its fence, and its deadline confirmed there.
     */
    @Test
    void resumeOverTls() throws Exception {
        try (LockdClient c = client(plainTls, ctx(true, false))) {
            DistributedLock l = c.getLock("java-tls-resume");
            l.lock();
            long f = l.fence();
            long t = System.nanoTime();
            lockd.destroy(); // SIGTERM: a resumable session's holds stay on the masters
            assertTrue(lockd.waitFor(5, TimeUnit.SECONDS));
            startLockd();
            TestEnv.waitFor(5000, () -> l.handle().confirmedSentNanos() - t > 0);
            assertTrue(l.isHeld(), "held after the resume over TLS");
            assertEquals(f, l.fence());
            l.unlock();
        }
    }

    /**
     * A resumable session abandoned over TLS (with AUTH) is resumed on a
     * TLS connection of its own and ended there with QUIT: lockd frees its
     * key within 3 s, not at the end of the 10 s grace.
     */
    @Test
    void abandonedSessionEndsOverTls() throws Exception {
        try (LockdClient c = client(plainTls, ctx(true, false));
                LockdClient a = LockdClient.connect(TestEnv.a())) {
            LockHandle h = c.acquire("java-tls-end", Duration.ofSeconds(2));
            h.conn.abandon(); // the connection closed: lockd detaches the session
            assertFalse(h.isHeld());
            TestEnv.waitFor(3000, () -> a.status("java-tls-end").state().equals("FREE"));
        }
    }

    @Test
    void refusesWhatItMustRefuse() {
        LockdException e = assertThrows(LockdException.class, () -> client(plainTls, ctx(false, false)),
                "lockd's certificate signed by a CA the client does not trust");
        assertEquals("IO", e.code());
        e = assertThrows(LockdException.class,
                () -> client(plainTls.replace("127.0.0.1", "localhost"), ctx(true, false)),
                "lockd's certificate names 127.0.0.1, not localhost");
        assertEquals("IO", e.code());
        e = assertThrows(LockdException.class,
                () -> LockdClient.builder().address(plainTls).tls(ctx(true, false)).password("wrong").build());
        assertEquals("AUTH", e.code());
        assertThrows(LockdException.class, () -> LockdClient.builder().address(plainTls).build().ping(),
                "plain TCP to a TLS listener");
        assertThrows(IllegalArgumentException.class,
                () -> LockdClient.builder().address("unix:/tmp/x").tls(ctx(true, false)).build());
    }

    /** A listener with a ca: refused without a client certificate, served with one. */
    @Test
    void clientCertificate() throws Exception {
        assertThrows(LockdException.class, () -> {
            try (LockdClient c = client(clientCertTls, ctx(true, false))) {
                c.ping();
            }
        });
        try (LockdClient c = client(clientCertTls, ctx(true, true))) {
            try (LockHandle h = c.acquire("java-tls-cert", Duration.ofSeconds(2))) {
                assertTrue(h.isHeld());
            }
        }
    }
}
