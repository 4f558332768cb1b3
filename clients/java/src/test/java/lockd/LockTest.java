package lockd;

import static org.junit.jupiter.api.Assertions.*;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(TestEnv.class)
@Timeout(60)
class LockTest {
    LockdClient ca, cb;

    @BeforeEach
    void connect() {
        ca = LockdClient.connect(TestEnv.a());
        cb = LockdClient.connect(TestEnv.b());
    }

    @AfterEach
    void close() {
        ca.close();
        cb.close();
    }

    @Test
    void pingOverTcpAndUnixSocket() {
        ca.ping();
        try (LockdClient u = LockdClient.connect("unix:" + TestEnv.vars.get("LOCKD_A_SOCK"))) {
            u.ping();
        }
    }

    /** Eight threads (four per client, on lockd A and B) in turns: no overlap, fences grow in grant order. */
    @Test
    void eightHoldersExclude() throws Exception {
        AtomicInteger inside = new AtomicInteger();
        List<Long> fences = Collections.synchronizedList(new ArrayList<>());
        AtomicReference<Throwable> err = new AtomicReference<>();
        List<Thread> ts = new ArrayList<>();
        for (int g = 0; g < 8; g++) {
            DistributedLock l = (g % 2 == 0 ? ca : cb).getLock("java-eight");
            Thread t = new Thread(() -> {
                try {
                    for (int r = 0; r < 3; r++) {
                        l.lock();
                        try {
                            if (inside.incrementAndGet() != 1) {
                                err.compareAndSet(null, new AssertionError("two holders at once"));
                            }
                            fences.add(l.fence());
                            Thread.sleep(3);
                            inside.decrementAndGet();
                        } finally {
                            l.unlock();
                        }
                    }
                } catch (Throwable e) {
                    err.compareAndSet(null, e);
                }
            });
            ts.add(t);
            t.start();
        }
        for (Thread t : ts) {
            t.join(50000);
        }
        if (err.get() != null) {
            throw new AssertionError(err.get());
        }
        assertEquals(24, fences.size());
        for (int i = 1; i < fences.size(); i++) {
            assertTrue(fences.get(i) > fences.get(i - 1), "fences must grow: " + fences);
        }
    }

    @Test
    void timeoutsAndBusy() throws Exception {
        try (LockHandle h = ca.acquire("java-timeout", Duration.ofSeconds(2))) {
            assertTrue(h.isHeld());
            assertTrue(ca.tryAcquire("java-timeout").isEmpty(), "TRYLOCK of a held key");
            assertFalse(cb.getLock("java-timeout").tryLock(), "tryLock() of a held key");
            long t0 = System.nanoTime();
            assertFalse(cb.getLock("java-timeout").tryLock(300, TimeUnit.MILLISECONDS));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms >= 280 && ms < 3000, "tryLock(300 ms) returned after " + ms + " ms");
            LockdException e = assertThrows(LockdException.class,
                    () -> ca.acquire("java-timeout", Duration.ofMillis(100)));
            assertEquals("TIMEOUT", e.code());
        }
        try (LockHandle h = ca.acquire("java-timeout", Duration.ofSeconds(2), Duration.ofMillis(700))) {
            h.extend(Duration.ofSeconds(5));
            Thread.sleep(1000); // past the first lease: the extended one holds
            h.checkHeld();
            assertEquals("HELD", cb.status("java-timeout").state());
        }
        assertEquals("FREE", cb.status("java-timeout").state());
        CountDownLatch lapsed = new CountDownLatch(1);
        LockHandle t = ca.acquire("java-timeout", Duration.ofSeconds(2), Duration.ofMillis(300));
        t.onLost(h -> lapsed.countDown());
        assertTrue(lapsed.await(3, TimeUnit.SECONDS), "a lapsed TTL reaches onLost");
        assertThrows(LockLostException.class, t::close);
    }

    @Test
    void sharedAndPermits() throws Exception {
        LockdReadWriteLock rw = ca.getReadWriteLock("java-rw");
        CountDownLatch in = new CountDownLatch(3), out = new CountDownLatch(1);
        List<Thread> readers = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Thread t = new Thread(() -> {
                rw.readLock().lock();
                try {
                    in.countDown();
                    out.await();
                } catch (InterruptedException e) {
                    // ends the test thread
                } finally {
                    rw.readLock().unlock();
                }
            });
            readers.add(t);
            t.start();
        }
        assertTrue(in.await(10, TimeUnit.SECONDS), "three readers at once");
        LockdClient.Status s = cb.status("java-rw");
        assertEquals("SHARED", s.state());
        assertEquals(3, s.holders());
        assertFalse(cb.getReadWriteLock("java-rw").writeLock().tryLock(), "writer while readers hold");
        out.countDown();
        for (Thread t : readers) {
            t.join(5000);
        }
        LockdReadWriteLock rwb = cb.getReadWriteLock("java-rw");
        DistributedLock w = rwb.writeLock();
        assertTrue(w.tryLock(2, TimeUnit.SECONDS));
        assertFalse(ca.getReadWriteLock("java-rw").readLock().tryLock(), "reader while a writer holds");
        rwb.readLock().lock(); // downgrade: the same session, counted locally
        w.unlock();
        assertTrue(rwb.readLock().isHeld());
        assertFalse(ca.getLock("java-rw").tryLock(), "writer while the downgraded reader holds");
        assertThrows(IllegalMonitorStateException.class, w::lock, "upgrade of a read hold");
        rwb.readLock().unlock();
        assertEquals("FREE", ca.status("java-rw").state());

        LockdSemaphore sem = ca.getSemaphore("java-sem", 2);
        AtomicInteger inside = new AtomicInteger(), most = new AtomicInteger();
        AtomicReference<Throwable> err = new AtomicReference<>();
        List<Thread> ts = new ArrayList<>();
        for (int g = 0; g < 6; g++) {
            Thread t = new Thread(() -> {
                try (LockHandle h = sem.acquire()) {
                    most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                    Thread.sleep(50);
                    inside.decrementAndGet();
                } catch (Throwable e) {
                    err.compareAndSet(null, e);
                }
            });
            ts.add(t);
            t.start();
        }
        for (Thread t : ts) {
            t.join(20000);
        }
        assertNull(err.get());
        assertEquals(2, most.get(), "at most 2 holders of 2 permits, and 2 reached");
        Optional<LockHandle> p1 = sem.tryAcquire(), p2 = sem.tryAcquire();
        assertTrue(p1.isPresent() && p2.isPresent());
        assertTrue(sem.tryAcquire().isEmpty(), "a third permit of 2");
        assertEquals(0, sem.availablePermits());
        sem.release();
        sem.release();
        assertEquals(2, sem.availablePermits());
    }

    /**
     * STATUS of a semaphore (issue 29): a full semaphore of 2 with one
     * waiter reads as 2 of 2 permits held and 1 waiting (STATUS key PERMITS
     * n), not as "HELD, 1 holder" (STATUS key sees only permit 0).
     */
    @Test
    void semaphoreStatus() throws Exception {
        LockdSemaphore sem = ca.getSemaphore("java-sem-status", 2);
        AtomicReference<Object> waited = new AtomicReference<>();
        Thread waiter;
        try (LockHandle p1 = sem.acquire(); LockHandle p2 = sem.acquire()) {
            waiter = new Thread(() -> {
                try {
                    Optional<LockHandle> p = sem.tryAcquire(Duration.ofSeconds(10));
                    waited.set(p.isPresent());
                    p.ifPresent(LockHandle::close);
                } catch (Throwable e) {
                    waited.set(e);
                }
            });
            waiter.start();
            TestEnv.waitFor(5000, () -> sem.status().waiters() == 1);
            LockdClient.Status s = sem.status();
            assertEquals(new LockdClient.Status("PERMITS", 2, -1, 1, 2), s);
            LockdClient.Status sb = cb.status("java-sem-status", 2); // from the masters, through lockd B
            assertEquals("PERMITS", sb.state());
            assertEquals(2, sb.holders());
            assertEquals(2, sb.permits());
            assertEquals(0, sb.waiters(), "waiters on lockd B");
            assertEquals(0, sem.availablePermits());
        }
        waiter.join(5000);
        assertEquals(Boolean.TRUE, waited.get(), "the waiter got a permit once two were released");
        assertEquals(new LockdClient.Status("PERMITS", 0, -1, 0, 2), sem.status());
    }

    /** Keys and values that cannot be sent as one word are refused before anything is sent. */
    @Test
    void refusesBadKeys() throws Exception {
        List<String> got = Collections.synchronizedList(new ArrayList<>());
        try (ServerSocket ss = new ServerSocket(0)) {
            Thread srv = new Thread(() -> {
                try (Socket s = ss.accept()) {
                    BufferedReader r = new BufferedReader(
                            new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII));
                    String line;
                    while ((line = r.readLine()) != null) {
                        got.add(line.trim());
                        s.getOutputStream().write("ERR PROTOCOL unknown command\r\n".getBytes(StandardCharsets.US_ASCII));
                    }
                } catch (Exception e) {
                    // the client closed
                }
            });
            srv.start();
            try (LockdClient c = LockdClient.connect("127.0.0.1:" + ss.getLocalPort())) {
                String[] bad = {"k WAIT", "k\tx", "a\r", "a\n", "a\0", "café", "", "k".repeat(257), "\u007f"};
                for (String k : bad) {
                    assertThrows(IllegalArgumentException.class, () -> c.getLock(k), k);
                    assertThrows(IllegalArgumentException.class, () -> c.acquire(k, Duration.ZERO), k);
                    assertThrows(IllegalArgumentException.class, () -> c.campaign("e", k), k);
                    assertThrows(IllegalArgumentException.class, () -> c.getSemaphore(k, 2), k);
                    assertThrows(IllegalArgumentException.class, () -> c.who(k), k);
                }
                assertThrows(IllegalArgumentException.class, () -> c.acquire("k", Duration.ofMillis(-1)));
                assertThrows(IllegalArgumentException.class, () -> c.getSemaphore("k", 0));
            }
            srv.join(5000);
        }
        assertEquals(List.of("SESSION"), got.subList(0, 1));
        assertTrue(got.size() == 1 || (got.size() == 2 && got.get(1).equals("QUIT")), "lines sent: " + got);
    }

    @Test
    void errorReply() {
        LockdException e = assertThrows(LockdException.class, () -> ca.getSemaphore("java-err", 100000).tryAcquire());
        assertEquals("ARG", e.code());
    }

    /** SIGSTOP of two of three masters: LOST reaches listener, checkHeld and unlock before the 3 s lease ends. */
    @Test
    void lostReachesListenerAndException() throws Exception {
        DistributedLock l = ca.getLock("java-lost");
        CountDownLatch lost = new CountDownLatch(1);
        AtomicLong at = new AtomicLong();
        l.onLost(h -> {
            at.set(System.nanoTime());
            lost.countDown();
        });
        l.lock();
        TestEnv.run("master-stop", TestEnv.dir.toString(), "0");
        // The majority is gone with the second stop: the lease written by
        // the last renewal before it ends at most 3 s after it.
        long t0 = System.nanoTime();
        TestEnv.run("master-stop", TestEnv.dir.toString(), "1");
        try {
            assertTrue(lost.await(6, TimeUnit.SECONDS), "no loss 6 s after two of three masters stopped");
            long ms = (at.get() - t0) / 1_000_000;
            System.out.println("loss reached the listener " + ms + " ms after the second SIGSTOP");
            assertTrue(ms < 3500, "loss noticed after " + ms + " ms, want before the 3 s lease ends");
            assertFalse(l.isHeld());
            assertThrows(LockLostException.class, l::checkHeld);
            assertThrows(LockLostException.class, l::lock, "lock() again before unlocking a lost hold");
            assertThrows(LockLostException.class, l::unlock);
            assertThrows(IllegalMonitorStateException.class, l::unlock);
        } finally {
            TestEnv.run("master-cont", TestEnv.dir.toString(), "0");
            TestEnv.run("master-cont", TestEnv.dir.toString(), "1");
            TestEnv.waitHealthy();
        }
    }

    /** 1.2: a lockd restart costs a resumable session nothing. */
    @Test
    void resumeAcrossRestart() throws Exception {
        TestEnv.need12();
        assertTrue(ca.isResumable());
        DistributedLock l = ca.getLock("java-resume");
        l.lock();
        TestEnv.run("lockd-term", TestEnv.dir.toString(), "a");
        TestEnv.run("lockd-start", TestEnv.dir.toString(), "a");
        TestEnv.waitFor(5000, () -> cb.status("java-resume").state().equals("HELD"));
        Thread.sleep(4000); // more than a lease: the resumed session renews it
        assertTrue(l.isHeld(), "lock lost across the restart");
        assertTrue(cb.tryAcquire("java-resume").isEmpty());
        l.unlock();
    }

    /**
     * 1.2: closing the client while a resumable session is being resumed
     * (its connection ended, and the RESUME on the new one is not answered
     * yet) ends the session at once: it is resumed on a connection of its
     * own and ended there with QUIT. Otherwise lockd keeps the hold for the
     * session's grace (10 s here), which the bound below would miss.
     */
    @Test
    void closeWhileResumingEndsTheSession() throws Exception {
        TestEnv.need12();
        String key = "java-close-resuming";
        try (TcpProxy p = new TcpProxy(TestEnv.a())) {
            LockdClient c = LockdClient.builder().address(p.address()).build();
            LockHandle h;
            try {
                h = c.acquire(key, Duration.ofSeconds(5));
                p.reset(); // lockd detaches the session (its grace starts), the client resumes it
                TestEnv.waitFor(5000, () -> p.blackholed() >= 1); // the resume's RESUME goes nowhere
                p.heal();
                assertEquals(Conn.State.RESUMING, h.conn.state);
            } finally {
                c.close();
            }
            assertFalse(h.isHeld());
            assertGrantedSoon(key, System.nanoTime());
        }
    }

    /**
     * A QUIT that goes unanswered (a link cut without a reset, which
     * neither side sees end) ends no session either: close() then resumes
     * it on a connection of its own and ends it there, instead of leaving
     * it to lockd as long as its old connection looks alive.
     */
    @Test
    void closeAfterAnUnansweredQuitEndsTheSession() throws Exception {
        TestEnv.need12();
        String key = "java-close-unanswered";
        try (TcpProxy p = new TcpProxy(TestEnv.a())) {
            LockdClient c = LockdClient.builder().address(p.address()).build();
            LockHandle h;
            try {
                h = c.acquire(key, Duration.ofSeconds(5));
                p.cut(); // close()'s QUIT goes nowhere
                p.heal(); // a new connection reaches lockd
            } finally {
                c.close();
            }
            assertFalse(h.isHeld());
            assertGrantedSoon(key, System.nanoTime());
        }
    }

    /**
     * A client of lockd B is granted key within 3 s of since: far less
     * than the 10 s grace of a session that was only detached.
     */
    void assertGrantedSoon(String key, long since) throws InterruptedException {
        LockHandle w;
        try {
            w = cb.acquire(key, Duration.ofSeconds(12));
        } catch (LockdException e) {
            throw new AssertionError(key + " still held 12 s after close returned", e);
        }
        long ms = (System.nanoTime() - since) / 1_000_000;
        w.release();
        System.out.printf("%s: granted on lockd B %d ms after close returned%n", key, ms);
        assertTrue(ms < 3000, key + " granted " + ms + " ms after close returned, want < 3000 (grace 10000)");
    }

    /**
     * Once close() returns, nothing of the client says it holds anything
     * (the Go client's "old leadership still held after Close", commit
     * ac7726a): a handle, a thread's lock, a read lock, a permit, a
     * leadership. The client's I/O thread is held up here (as a busy core
     * may hold it), so that no reply and no end of a connection is read
     * before close() returns: close() itself must end the holds. Heartbeat
     * off, so that no local deadline ends them during the wait instead.
     */
    @Test
    void closeEndsEveryHoldBeforeReturning() throws Exception {
        TestEnv.need13();
        LockdClient c = LockdClient.builder().address(TestEnv.a()).heartbeat(false).build();
        CountDownLatch stall = new CountDownLatch(1);
        AtomicReference<Throwable> waited = new AtomicReference<>();
        Thread waiter = null;
        LockHandle blocker = cb.acquire("java-close-wait", Duration.ofSeconds(5));
        try {
            LockHandle h = c.acquire("java-close-h", Duration.ofSeconds(5));
            DistributedLock dl = c.getLock("java-close-dl");
            dl.lock();
            LockdReadWriteLock rw = c.getReadWriteLock("java-close-rw");
            rw.readLock().lock();
            LockHandle permit = c.getSemaphore("java-close-sem", 2).acquire();
            Leadership lead = c.campaign("java-close-lead", "v1");
            assertTrue(h.isHeld() && dl.isHeld() && rw.readLock().isHeld() && permit.isHeld() && lead.isLeader());
            waiter = new Thread(() -> {
                try {
                    c.acquire("java-close-wait", Duration.ofSeconds(30));
                    waited.set(new AssertionError("granted after close"));
                } catch (Throwable e) {
                    waited.set(e);
                }
            });
            waiter.start();
            TestEnv.waitFor(3000, () -> ca.status("java-close-wait").waiters() == 1); // its LOCK waits at A
            CountDownLatch stalled = new CountDownLatch(1);
            c.loop.execute(() -> {
                stalled.countDown();
                try {
                    stall.await(20, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            assertTrue(stalled.await(5, TimeUnit.SECONDS));
            c.close();
            // at once: no waiting for the I/O thread
            assertFalse(h.isHeld(), "handle held after close");
            assertTrue(h.isLost());
            assertFalse(dl.isHeld(), "DistributedLock held after close");
            assertThrows(LockLostException.class, dl::checkHeld);
            assertFalse(rw.readLock().isHeld(), "read lock held after close");
            assertFalse(permit.isHeld(), "permit held after close");
            assertFalse(lead.isLeader(), "leadership held after close");
            assertThrows(LockLostException.class, lead::checkLeader);
        } finally {
            stall.countDown();
            c.close();
        }
        waiter.join(10000);
        assertFalse(waiter.isAlive());
        // the waiting acquire failed (connection broke, then "client closed" on its retry): nothing granted
        assertInstanceOf(RuntimeException.class, waited.get());
        // and lockd ended the sessions (QUIT), releasing what they held
        for (String k : List.of("java-close-h", "java-close-dl", "java-close-rw")) {
            TestEnv.waitFor(3000, () -> cb.status(k).state().equals("FREE"));
        }
        TestEnv.waitFor(3000, () -> cb.status("java-close-sem", 2).holders() == 0);
        TestEnv.waitFor(3000, () -> cb.leader("java-close-lead").isEmpty());
        blocker.release();
        TestEnv.waitFor(3000, () -> cb.status("java-close-wait").state().equals("FREE"));
    }

    /** 1.3: election, failover and observation across both lockd. */
    @Test
    void electionFailoverAndObserve() throws Exception {
        TestEnv.need13();
        List<Leader> seen = Collections.synchronizedList(new ArrayList<>());
        try (Observation o = cb.observe("java-elect", seen::add)) {
            TestEnv.waitFor(3000, () -> seen.size() >= 1 && !seen.get(seen.size() - 1).elected());
            Leadership la = ca.campaign("java-elect", "alpha");
            TestEnv.waitFor(3000, () -> !seen.isEmpty() && "alpha".equals(seen.get(seen.size() - 1).value()));
            assertEquals(la.fence(), seen.get(seen.size() - 1).fence());
            assertEquals("alpha", cb.leader("java-elect").orElseThrow().value());
            la.proclaim("alpha2");
            TestEnv.waitFor(3000, () -> "alpha2".equals(seen.get(seen.size() - 1).value()));
            AtomicReference<Leadership> lb = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    lb.set(cb.campaign("java-elect", "beta"));
                } catch (InterruptedException e) {
                    // test ends
                }
            });
            t.start();
            Thread.sleep(200);
            ca.close(); // failover: the leader's session ends
            t.join(5000);
            assertNotNull(lb.get(), "no failover within 5 s");
            assertTrue(lb.get().fence() > la.fence());
            TestEnv.waitFor(3000, () -> "beta".equals(seen.get(seen.size() - 1).value()));
            lb.get().resign();
            TestEnv.waitFor(3000, () -> !seen.get(seen.size() - 1).elected());
            assertTrue(cb.leader("java-elect").isEmpty());
            for (int i = 1; i < seen.size(); i++) {
                Leader p = seen.get(i - 1), q = seen.get(i);
                assertTrue(!p.elected() || !q.elected() || q.fence() >= p.fence(), "observed in fence order: " + seen);
            }
        }
    }
}
