package lockd;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * One grant of a key to a session of its own: a lock, a shared hold, a
 * permit or a leadership. Not bound to a thread: {@link #close()} unlocks
 * from any thread. Loss is reported by {@link #checkHeld()},
 * {@link #isHeld()}, the {@link #onLost} listeners and by
 * {@link #release()}.
 *
 * <p>The local deadline: each hold keeps the time until which lockd last
 * confirmed it valid, on this JVM's monotonic clock, counted from when the
 * request that confirmed it was sent (a HELD pipelined behind the grant or
 * the RESUME, then a HELD heartbeat about every third of the time left).
 * When it comes near unconfirmed (a frozen or dead lockd, a cut link, also
 * while the session is being resumed), the hold is reported lost as for
 * a LOST event, {@link #marginNanos} before the deadline, and its session
 * is ended.
 */
public final class LockHandle implements AutoCloseable, Owner {
    private enum State {
        /** request sent, no grant yet */
        WAITING,
        /** granted, neither lost nor released */
        HELD,
        /** LOST event, or the session ended without a resume */
        LOST,
        /** released (UNLOCK or RESIGN answered, or the session ended on purpose) */
        RELEASED
    }

    private final LockdClient client;
    final Conn conn;
    private final String key;
    private final String releaseLine;
    private volatile long fence;
    private final AtomicReference<State> state = new AtomicReference<>(State.WAITING);
    private final AtomicBoolean returned = new AtomicBoolean();
    private final CopyOnWriteArrayList<Consumer<LockHandle>> listeners = new CopyOnWriteArrayList<>();
    // The local deadline (client.heartbeat), guarded by this; times are System.nanoTime().
    /** The send time of the request whose answer set the deadline. */
    private long confirmedSent;
    private boolean confirmedOnce;
    /** Until when lockd confirmed the hold: confirmedSent + the ttl_ms of its HELD line. */
    private long deadline;
    /** The loss is reported this long before the deadline. */
    private long margin;
    /** When the next HELD heartbeat is due. */
    private long nextBeat;
    /** A heartbeat is on its way. */
    private boolean beating;
    private ScheduledFuture<?> tick;

    LockHandle(LockdClient client, Conn conn, String key, String releaseLine) {
        this.client = client;
        this.conn = conn;
        this.key = key;
        this.releaseLine = releaseLine;
    }

    public String key() {
        return key;
    }

    /** The fencing token: grows strictly with every grant of the key. Pass it to the resource you protect. */
    public long fence() {
        return fence;
    }

    /** True while held: neither lost nor released. */
    public boolean isHeld() {
        return state.get() == State.HELD;
    }

    /** True once lost (and until released after that, still true). */
    public boolean isLost() {
        return state.get() == State.LOST;
    }

    /** Throws LockLostException if the lock was lost, IllegalStateException if released. */
    public void checkHeld() {
        switch (state.get()) {
            case HELD:
                return;
            case LOST:
                throw new LockLostException(key);
            default:
                throw new IllegalStateException("lockd: " + key + " is not held");
        }
    }

    /**
     * Calls listener (on the client's event thread) when the lock is lost;
     * at once if it was lost already. Not called on release.
     */
    public LockHandle onLost(Consumer<LockHandle> listener) {
        AtomicBoolean once = new AtomicBoolean();
        Consumer<LockHandle> l = h -> {
            if (once.compareAndSet(false, true)) {
                listener.accept(h);
            }
        };
        listeners.add(l);
        if (state.get() == State.LOST) {
            client.fire(() -> l.accept(this));
        }
        return this;
    }

    void granted(long f) {
        fence = f;
        state.compareAndSet(State.WAITING, State.HELD);
    }

    void lose() {
        if (state.compareAndSet(State.HELD, State.LOST)) {
            stopKeeper();
            for (Consumer<LockHandle> l : listeners) {
                client.fire(() -> l.accept(this));
            }
        }
    }

    /**
     * How long before the deadline the loss is reported: a twentieth of the
     * time lockd confirmed (for clock drift between lockd and this JVM, at
     * most lockd's own drift factor of 1 %, and a late timer), plus 25 ms,
     * at most a quarter of it.
     */
    static long marginNanos(long ttlNanos) {
        return Math.min(ttlNanos / 4, ttlNanos / 20 + TimeUnit.MILLISECONDS.toNanos(25));
    }

    /**
     * After the grant: the HELD sent with the granting request gives the
     * first deadline. A grant that waited long (the deadline is counted from
     * when the request was sent) is confirmed again at once. Without a
     * confirmation the hold is reported lost.
     */
    void start(long sent, CompletableFuture<Reply> held) {
        Reply r = quick(held);
        if (r != null) {
            confirm(sent, r, false); // not armed yet: the deadline may have passed during the wait
            long now = System.nanoTime();
            boolean again;
            synchronized (this) {
                again = confirmedOnce && deadline - margin - now < (deadline - confirmedSent) / 2;
            }
            if (again && state.get() == State.HELD) {
                r = quick(conn.send("HELD", true));
                if (r != null) {
                    confirm(now, r, false);
                }
            }
        }
        synchronized (this) {
            if (r != null && confirmedOnce) {
                arm();
                return;
            }
        }
        expire();
    }

    /** A reply expected at once (a pipelined HELD): null when none came within the request timeout. */
    private Reply quick(CompletableFuture<Reply> f) {
        boolean interrupted = false;
        try {
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(client.requestTimeoutMs);
            while (true) {
                try {
                    return f.get(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException | TimeoutException e) {
                    return null;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** HELD answered: the new deadline is sent + the ttl_ms of this key's line. */
    @Override
    public void confirmed(long sent, Reply held) {
        confirm(sent, held, true);
    }

    private void confirm(long sent, Reply held, boolean arm) {
        if (!held.line().equals("END")) {
            return; // an error: no news
        }
        long ttl = -1;
        for (String l : held.lines()) {
            String[] w = l.split("[ \t]+");
            if (w.length >= 5 && w[0].equals("KEY") && w[1].equals(key)) {
                ttl = Long.parseLong(w[4]);
                break;
            }
        }
        if (ttl < 0) {
            lose(); // lockd no longer holds it (its LOST came first)
            return;
        }
        synchronized (this) {
            if (state.get() != State.HELD || (confirmedOnce && sent - confirmedSent < 0)) {
                return; // released or lost meanwhile, or an older answer
            }
            long t = TimeUnit.MILLISECONDS.toNanos(ttl);
            confirmedOnce = true;
            confirmedSent = sent;
            deadline = sent + t;
            margin = marginNanos(t);
            nextBeat = sent + Math.max(t / 3, TimeUnit.MILLISECONDS.toNanos(20));
            if (arm) {
                arm();
            }
        }
    }

    /** Schedules the next tick: the next heartbeat, or the report of the loss. Under this. */
    private void arm() {
        if (state.get() != State.HELD) {
            return;
        }
        long at = deadline - margin;
        if (!beating && conn.state == Conn.State.OPEN && nextBeat - at < 0) {
            at = nextBeat;
        }
        if (tick != null) {
            tick.cancel(false);
        }
        try {
            tick = client.timer.schedule(this::tick, Math.max(0, at - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            tick = null; // the client is closed
        }
    }

    private synchronized void stopKeeper() {
        if (tick != null) {
            tick.cancel(false);
            tick = null;
        }
    }

    /** On the timer thread: report the loss when the deadline is near, else send the heartbeat when due. */
    private void tick() {
        synchronized (this) {
            if (state.get() != State.HELD) {
                return;
            }
            long now = System.nanoTime();
            if (now - (deadline - margin) < 0) {
                if (!beating && now - nextBeat >= 0 && conn.state == Conn.State.OPEN) {
                    beating = true;
                    client.heartbeats.incrementAndGet();
                    conn.send("HELD", true).whenComplete((r, e) -> {
                        synchronized (this) {
                            beating = false;
                            if (r == null) {
                                arm(); // broke: the resume confirms, or the deadline comes
                            }
                        }
                        if (r != null) {
                            confirmed(now, r);
                        }
                    });
                }
                arm();
                return;
            }
        }
        expire();
    }

    /**
     * The deadline passed unconfirmed: reported lost as for LOST, and the
     * session ended (lockd may still hold the key for it: the connection is
     * never reused; a resumable session is resumed and ended with QUIT in
     * the background).
     */
    private void expire() {
        lose();
        conn.abandon();
    }

    /** The send time of the request whose answer set the deadline (for the tests). */
    synchronized long confirmedSentNanos() {
        return confirmedSent;
    }

    @Override
    public void event(String[] w) {
        if (w[0].equals("LOST") && w.length >= 2 && w[1].equals(key)) {
            lose();
        }
    }

    @Override
    public void ended() {
        lose();
    }

    private void giveBack() {
        if (returned.compareAndSet(false, true)) {
            client.put(conn);
        }
    }

    /**
     * Releases the lock (UNLOCK, or RESIGN for a leadership). Throws
     * LockLostException if it was lost before (nothing is sent),
     * IllegalStateException if released already, LockdException QUORUM if
     * lockd could not confirm the release on a majority (the lock is no
     * longer held all the same: the key stays on masters that did not
     * confirm until its lease there lapses).
     */
    public void release() {
        while (true) {
            State s = state.get();
            if (s == State.LOST) {
                state.set(State.RELEASED);
                giveBack();
                throw new LockLostException(key);
            }
            if (s != State.HELD) {
                throw new IllegalStateException("lockd: " + key + " is not held");
            }
            if (state.compareAndSet(State.HELD, State.RELEASED)) {
                stopKeeper();
                break;
            }
        }
        boolean retried = false;
        while (true) {
            Reply r;
            try {
                r = LockdClient.uninterruptibly(conn, conn.send(releaseLine, false));
            } catch (LockdException e) {
                // The connection broke: when the session is being resumed,
                // send the release again once it is back; a session that
                // ended released the lock anyway.
                long end = System.nanoTime() + client.resumeWindow.toNanos() + TimeUnit.SECONDS.toNanos(5);
                while (conn.state == Conn.State.RESUMING && System.nanoTime() < end) {
                    sleep(20);
                }
                if (conn.state == Conn.State.OPEN) {
                    retried = true;
                    continue;
                }
                return;
            }
            String line = r.line();
            if (retried && line.startsWith("ERR NOTHELD")) {
                line = "OK 0"; // the first try was done before the break
            }
            if (line.startsWith("OK")) {
                giveBack();
                return;
            }
            LockdException e = LockdException.fromReply(line);
            switch (e.code()) {
                case "QUORUM":
                    giveBack();
                    throw e;
                case "NOTHELD":
                case "NOTLEADER":
                    giveBack();
                    throw new LockLostException(key); // a LOST raced the release
                default:
                    conn.abandon();
                    throw e;
            }
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** release(), except that closing a released handle again does nothing. */
    @Override
    public void close() {
        if (state.get() == State.RELEASED) {
            return;
        }
        release();
    }

    /**
     * EXTEND key ms: a new lease for a TTL lock. The local deadline follows
     * (from a HELD sent with it), also when the EXTEND failed and shortened
     * the lease.
     */
    public void extend(java.time.Duration lease) {
        long ms = Words.ms("lease", lease, false);
        checkHeld();
        long sent = System.nanoTime();
        List<CompletableFuture<Reply>> fs = conn.sendWithHeld("EXTEND " + key + " " + ms, client.heartbeat, false);
        Reply r = client.timed(conn, fs.get(0));
        if (client.heartbeat) {
            Reply held = quick(fs.get(1));
            if (held != null) {
                confirmed(sent, held);
            }
        }
        if (!r.line().equals("OK")) {
            throw LockdException.fromReply(r.line());
        }
    }

    /** A request on this handle's session (PROCLAIM). */
    Reply request(String line) {
        checkHeld();
        return client.timed(conn, conn.send(line, false));
    }
}
