package lockd;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The local lease deadline (issue 29, items 1 and 2): a hold whose lockd
 * froze, died with nowhere to resume, or was cut off from the client is
 * reported lost as for a LOST event, no later than the grant plus the
 * lease, and before a client of the other lockd is granted the key.
 */
@ExtendWith(TestEnv.class)
@Timeout(60)
class DeadlineTest {
    /** The README's sentence on what the local deadline guarantees; these tests assert its bound. */
    static final String GUARANTEE = "A hold is reported lost (isHeld() false, the onLost listeners called, "
            + "LockLostException from checkHeld(), unlock() and release()) before the validity lockd last "
            + "confirmed for it ends, counted on the client's monotonic clock from when the confirming request "
            + "was sent: when lockd freezes, dies with no other lockd to resume on, or cannot be reached, no "
            + "later than the lease after the last request lockd answered was sent (the grant plus the lease "
            + "when the fault comes before the first heartbeat).";

    static long lease() {
        return Long.parseLong(TestEnv.vars.getOrDefault("LEASE_MS", "3000"));
    }

    static String dir() {
        return TestEnv.dir.toString();
    }

    /** When the loss reached an onLost listener. */
    static final class Watch {
        final CountDownLatch lost = new CountDownLatch(1);
        final AtomicLong at = new AtomicLong();

        void on(LockHandle h) {
            at.compareAndSet(0, System.nanoTime());
            lost.countDown();
        }
    }

    /** A client of lockd B waits for key from now; completes with the time it was granted. */
    static CompletableFuture<Long> waiterOnB(LockdClient cb, String key) {
        CompletableFuture<Long> f = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try (LockHandle h = cb.acquire(key, Duration.ofSeconds(8))) {
                f.complete(System.nanoTime());
            } catch (Throwable e) {
                f.completeExceptionally(e);
            }
        });
        t.setDaemon(true);
        t.start();
        return f;
    }

    /**
     * The loss reached the listener, and within the bound: the lease from
     * when the request that last confirmed the hold was sent (the grant,
     * unless a heartbeat was answered before the fault was complete), and
     * the hold says lost everywhere.
     */
    static long checkLost(String what, Watch w, long t0, long tf, LockHandle h) throws InterruptedException {
        assertTrue(w.lost.await(lease() + 2000, TimeUnit.MILLISECONDS),
                what + ": no loss notice " + (lease() + 2000) + " ms after the grant");
        long from = Math.max(t0, h.confirmedSentNanos());
        long ms = (w.at.get() - from) / 1_000_000;
        System.out.printf("%s: loss notice %d ms after the grant request, %d ms after the fault was complete "
                + "(bound: %d ms after the last confirmed request, here %d ms)%n", what, (w.at.get() - t0) / 1_000_000,
                (w.at.get() - tf) / 1_000_000, lease(), ms);
        assertTrue(ms <= lease(), what + ": loss noticed " + ms + " ms after the last confirmed request, want <= lease");
        assertFalse(h.isHeld());
        assertTrue(h.isLost());
        assertThrows(LockLostException.class, h::checkHeld);
        return w.at.get();
    }

    /** Item 1: lockd A SIGSTOPped with its sockets open (the client knows only A). */
    @Test
    void frozenLockd() throws Exception {
        String key = "java-deadline-frozen";
        LockdClient ca = LockdClient.connect(TestEnv.a());
        LockdClient cb = LockdClient.connect(TestEnv.b());
        try {
            DistributedLock l = ca.getLock(key);
            Watch w = new Watch();
            l.onLost(w::on);
            long t0 = System.nanoTime();
            l.lock();
            TestEnv.run("lockd-stop", dir(), "a");
            long tf = System.nanoTime();
            try {
                CompletableFuture<Long> b = waiterOnB(cb, key);
                long tn = checkLost("SIGSTOP", w, t0, tf, l.handle());
                assertFalse(l.isHeld());
                assertThrows(LockLostException.class, l::checkHeld);
                assertThrows(LockLostException.class, l::lock, "lock() again before unlocking a lost hold");
                assertThrows(LockLostException.class, l::unlock);
                long tb = b.get(10, TimeUnit.SECONDS);
                assertTrue(tb > tn, "lockd B granted the key " + (tn - tb) / 1_000_000 + " ms before the loss notice");
                System.out.printf("SIGSTOP: lockd B granted the key %d ms after the loss notice%n", (tb - tn) / 1_000_000);
            } finally {
                TestEnv.run("lockd-cont", dir(), "a");
            }
        } finally {
            ca.close();
            cb.close();
        }
        TestEnv.waitHealthy();
    }

    /**
     * Item 2: lockd A SIGKILLed, no other lockd known: the loss comes by the
     * deadline while the client tries to resume, not at the end of its
     * resume window.
     */
    @Test
    void killedLockdNowhereToResume() throws Exception {
        String key = "java-deadline-killed";
        LockdClient ca = LockdClient.connect(TestEnv.a());
        LockdClient cb = LockdClient.connect(TestEnv.b());
        try {
            Watch w = new Watch();
            long t0 = System.nanoTime();
            LockHandle h = ca.acquire(key, Duration.ofSeconds(5));
            h.onLost(w::on);
            TestEnv.run("lockd-kill", dir(), "a");
            long tf = System.nanoTime();
            try {
                CompletableFuture<Long> b = waiterOnB(cb, key);
                long tn = checkLost("SIGKILL", w, t0, tf, h);
                assertThrows(LockLostException.class, h::close);
                long tb = b.get(10, TimeUnit.SECONDS);
                assertTrue(tb > tn, "lockd B granted the key " + (tn - tb) / 1_000_000 + " ms before the loss notice");
                System.out.printf("SIGKILL: lockd B granted the key %d ms after the loss notice%n", (tb - tn) / 1_000_000);
            } finally {
                TestEnv.run("lockd-start", dir(), "a");
            }
        } finally {
            ca.close();
            cb.close();
        }
    }

    /** Item 1: the link between client and lockd cut (no reset): lockd A is healthy and keeps the session. */
    @Test
    void cutLink() throws Exception {
        try (TcpProxy p = new TcpProxy(TestEnv.a());
                LockdClient c = LockdClient.builder().address(p.address()).build()) {
            DistributedLock l = c.getLock("java-deadline-cut");
            Watch w = new Watch();
            l.onLost(w::on);
            long t0 = System.nanoTime();
            l.lock();
            p.cut();
            long tf = System.nanoTime();
            checkLost("cut link", w, t0, tf, l.handle());
            assertThrows(LockLostException.class, l::unlock);
        }
    }

    /**
     * A grant after a wait longer than the lease: the HELD sent with the
     * LOCK is counted from when the LOCK was sent, so the client confirms
     * the hold once more before it returns it, and it stays held.
     */
    @Test
    void grantAfterALongWaitIsHeld() throws Exception {
        String key = "java-deadline-wait";
        try (LockdClient ca = LockdClient.connect(TestEnv.a()); LockdClient cb = LockdClient.connect(TestEnv.b())) {
            LockHandle holder = cb.acquire(key, Duration.ofSeconds(5));
            CompletableFuture<LockHandle> got = CompletableFuture.supplyAsync(() -> {
                try {
                    return ca.acquire(key, Duration.ofSeconds(20));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            Thread.sleep(lease() + 300);
            holder.release();
            LockHandle h = got.get(5, TimeUnit.SECONDS);
            Thread.sleep(300); // a deadline already past would have been reported by now
            assertTrue(h.isHeld(), "a grant that waited longer than the lease was reported lost at once");
            h.release();
        }
    }

    /** The README says what the deadline guarantees (the sentence above), and links the protocol that exists. */
    @Test
    void readme() throws Exception {
        String readme = Files.readString(Paths.get("README.md")).replaceAll("[`*]", "").replaceAll("\\s+", " ");
        assertTrue(readme.contains(GUARANTEE), "README.md lacks the sentence: " + GUARANTEE);
        assertTrue(readme.contains("(../../doc/protocol.md)"), "README.md links doc/protocol.md");
        assertFalse(readme.contains("PROTOCOL.md"), "README.md names PROTOCOL.md, which the repository lacks");
    }
}
