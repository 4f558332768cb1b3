package lockd;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.function.Consumer;

/**
 * A lock of lockd as a {@link java.util.concurrent.locks.Lock}, owned per
 * thread like Redisson's RLock: another thread's {@code lock()} waits (in
 * lockd's FIFO queue, on a session of its own), {@code unlock()} from a
 * thread that does not hold it throws {@link IllegalMonitorStateException},
 * and a thread may lock again what it holds (a local hold count; one
 * session, one grant, one fence). The ownership lives in the client, so
 * every DistributedLock of the same name and client agrees on it.
 *
 * <p>Loss: {@link #checkHeld()} and {@code unlock()} throw
 * {@link LockLostException} after the lock was lost; {@link #onLost}
 * listeners hear of it at once. A thread whose hold was lost must still
 * unlock it (each unlock then throws LockLostException) before it can lock
 * the name again.
 */
public class DistributedLock implements Lock {
    private final LockdClient client;
    private final String name;
    private final boolean shared;
    private final CopyOnWriteArrayList<Consumer<LockHandle>> listeners = new CopyOnWriteArrayList<>();

    DistributedLock(LockdClient client, String name, boolean shared) {
        this.client = client;
        this.name = name;
        this.shared = shared;
    }

    public String getName() {
        return name;
    }

    private LockdClient.ThreadKey me() {
        return new LockdClient.ThreadKey(name, Thread.currentThread());
    }

    private LockdClient.ThreadHold mine() {
        return client.threadHolds.get(me());
    }

    /** True when the current thread's hold covers the request (counted). */
    private boolean reenter() {
        LockdClient.ThreadHold th = mine();
        if (th == null) {
            return false;
        }
        if (th.handle.isLost()) {
            throw new LockLostException(name);
        }
        if (!shared && th.writes == 0) {
            throw new IllegalMonitorStateException(
                    "lockd: cannot upgrade a read hold of " + name + " to a write hold; unlock the read hold first");
        }
        if (shared) {
            th.reads++;
        } else {
            th.writes++;
        }
        return true;
    }

    private boolean granted(LockHandle h) {
        if (h == null) {
            return false;
        }
        for (Consumer<LockHandle> l : listeners) {
            h.onLost(l);
        }
        LockdClient.ThreadHold th = new LockdClient.ThreadHold(h);
        if (shared) {
            th.reads = 1;
        } else {
            th.writes = 1;
        }
        client.threadHolds.put(me(), th);
        return true;
    }

    private String request(String verb, String opt) {
        return verb + " " + name + (shared ? " SHARED" : "") + opt;
    }

    @Override
    public void lock() {
        if (reenter()) {
            return;
        }
        try {
            granted(client.grant(name, request("LOCK", ""), "UNLOCK " + name, false));
        } catch (InterruptedException e) {
            throw new AssertionError(e); // not interruptible
        }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        if (reenter()) {
            return;
        }
        granted(client.grant(name, request("LOCK", ""), "UNLOCK " + name, true));
    }

    /** TRYLOCK: true when granted now; false when held elsewhere (or others wait for it). */
    @Override
    public boolean tryLock() {
        if (reenter()) {
            return true;
        }
        try {
            return granted(client.grant(name, request("TRYLOCK", ""), "UNLOCK " + name, false));
        } catch (InterruptedException e) {
            throw new AssertionError(e); // not interruptible
        }
    }

    /** LOCK name WAIT ms: lockd itself ends the wait; an interrupt abandons it. */
    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        if (reenter()) {
            return true;
        }
        long ms = Math.min(Integer.MAX_VALUE, Math.max(0, unit.toMillis(time)));
        return granted(client.grant(name, request("LOCK", " WAIT " + ms), "UNLOCK " + name, true));
    }

    /**
     * Lowers the current thread's hold count; at 0 releases the lock.
     * IllegalMonitorStateException if the thread does not hold it,
     * LockLostException if the lock was lost, LockdException QUORUM when
     * the release was not confirmed by a majority (it is released all the
     * same).
     */
    @Override
    public void unlock() {
        LockdClient.ThreadKey k = me();
        LockdClient.ThreadHold th = client.threadHolds.get(k);
        if (th == null || (shared ? th.reads : th.writes) == 0) {
            throw new IllegalMonitorStateException(
                    "lockd: " + name + (shared ? " (read)" : "") + " is not held by " + Thread.currentThread());
        }
        if (shared) {
            th.reads--;
        } else {
            th.writes--;
        }
        if (th.reads + th.writes > 0) {
            if (th.handle.isLost()) {
                throw new LockLostException(name);
            }
            return;
        }
        client.threadHolds.remove(k);
        th.handle.release();
    }

    /** Conditions are not supported: lockd has no wait/notify. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("lockd: no conditions on a distributed lock");
    }

    private LockdClient.ThreadHold held() {
        LockdClient.ThreadHold th = mine();
        if (th == null) {
            throw new IllegalMonitorStateException("lockd: " + name + " is not held by " + Thread.currentThread());
        }
        return th;
    }

    /** The fence of the current thread's hold. IllegalMonitorStateException if it holds none. */
    public long fence() {
        return held().handle.fence();
    }

    /** Throws LockLostException if the current thread's hold was lost; IllegalMonitorStateException if none. */
    public void checkHeld() {
        held().handle.checkHeld();
    }

    /** True when the current thread holds the lock and it was not lost. */
    public boolean isHeld() {
        LockdClient.ThreadHold th = mine();
        return th != null && th.handle.isHeld();
    }

    /** The current thread's hold count (0 when it holds none). */
    public int getHoldCount() {
        LockdClient.ThreadHold th = mine();
        return th == null ? 0 : (shared ? th.reads : th.writes);
    }

    /** The current thread's handle (for listeners and the fence). */
    public LockHandle handle() {
        return held().handle;
    }

    /**
     * Calls listener (on the client's event thread) when a hold of this
     * lock is lost: holds granted through this object from now on, and the
     * current thread's hold if it has one.
     */
    public DistributedLock onLost(Consumer<LockHandle> listener) {
        listeners.add(listener);
        LockdClient.ThreadHold th = mine();
        if (th != null) {
            th.handle.onLost(listener);
        }
        return this;
    }
}
