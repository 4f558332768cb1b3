package lockd;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * One grant of a key to a session of its own: a lock, a shared hold, a
 * permit or a leadership. Not bound to a thread: {@link #close()} unlocks
 * from any thread. Loss is reported by {@link #checkHeld()},
 * {@link #isHeld()}, the {@link #onLost} listeners and by
 * {@link #release()}.
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
            for (Consumer<LockHandle> l : listeners) {
                client.fire(() -> l.accept(this));
            }
        }
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

    /** EXTEND key ms: a new lease for a TTL lock. */
    public void extend(java.time.Duration lease) {
        long ms = Words.ms("lease", lease, false);
        checkHeld();
        Reply r = client.timed(conn, conn.send("EXTEND " + key + " " + ms, false));
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
