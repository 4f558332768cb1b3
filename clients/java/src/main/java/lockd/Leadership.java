package lockd;

import java.util.function.Consumer;

/**
 * This client's leadership of an election (protocol 1.3): the election's
 * name held as a lock, with a published value. Lost like a lock (LOST);
 * close() resigns.
 */
public final class Leadership implements AutoCloseable {
    private final LockHandle handle;

    Leadership(LockHandle handle) {
        this.handle = handle;
    }

    public String name() {
        return handle.key();
    }

    public long fence() {
        return handle.fence();
    }

    public boolean isLeader() {
        return handle.isHeld();
    }

    /** Throws LockLostException once the leadership was lost. */
    public void checkLeader() {
        handle.checkHeld();
    }

    public Leadership onLost(Consumer<LockHandle> listener) {
        handle.onLost(listener);
        return this;
    }

    /** PROCLAIM name value: publishes a new value (the fence stays). */
    public void proclaim(String value) {
        Words.check("value", value, 1 << 16);
        Reply r = handle.request("PROCLAIM " + handle.key() + " " + value);
        if (!r.line().equals("OK")) {
            LockdException e = LockdException.fromReply(r.line());
            if (e.code().equals("NOTLEADER")) {
                throw new LockLostException(handle.key());
            }
            throw e;
        }
    }

    /** RESIGN name. */
    public void resign() {
        handle.release();
    }

    @Override
    public void close() {
        handle.close();
    }
}
