package lockd;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * A counting semaphore of n permits (LOCK name PERMITS n): at most n
 * sessions hold a permit at once, across every lockd on the same masters.
 * Each permit is held by a session of its own and returned as a
 * LockHandle; permits are not bound to threads.
 */
public final class LockdSemaphore {
    private final LockdClient client;
    private final String name;
    private final int permits;
    private final ConcurrentLinkedDeque<LockHandle> taken = new ConcurrentLinkedDeque<>();

    LockdSemaphore(LockdClient client, String name, int permits) {
        this.client = client;
        this.name = name;
        this.permits = permits;
    }

    private Optional<LockHandle> take(String line, boolean interruptible) throws InterruptedException {
        LockHandle h = client.grant(name, line, "UNLOCK " + name, interruptible);
        if (h != null) {
            taken.push(h);
        }
        return Optional.ofNullable(h);
    }

    /** Waits for a permit (interruptible). */
    public LockHandle acquire() throws InterruptedException {
        return take("LOCK " + name + " PERMITS " + permits, true).orElseThrow();
    }

    /** Waits at most wait for a permit. */
    public Optional<LockHandle> tryAcquire(Duration wait) throws InterruptedException {
        return take("LOCK " + name + " PERMITS " + permits + LockdClient.waitArg(wait), true);
    }

    /** A permit if one is free now. */
    public Optional<LockHandle> tryAcquire() {
        try {
            return take("TRYLOCK " + name + " PERMITS " + permits, false);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    /** Releases the permit taken last through this object (any thread), as Semaphore.release(). */
    public void release() {
        LockHandle h = taken.poll();
        if (h == null) {
            throw new IllegalStateException("lockd: no permit of " + name + " taken through this semaphore");
        }
        h.release();
    }

    /** Releases permit h (also h.close()). */
    public void release(LockHandle h) {
        taken.remove(h);
        h.release();
    }

    /** STATUS name PERMITS n: state PERMITS, holders = the permits held, waiters. */
    public LockdClient.Status status() {
        return client.status(name, permits);
    }

    /** Permits not held now, from STATUS name PERMITS n. */
    public int availablePermits() {
        Reply r = client.query("STATUS " + name + " PERMITS " + permits, false);
        String[] w = r.words();
        if (w.length == 4 && w[0].equals("PERMITS")) {
            return permits - Integer.parseInt(w[1]);
        }
        throw LockdException.fromReply(r.line());
    }
}
