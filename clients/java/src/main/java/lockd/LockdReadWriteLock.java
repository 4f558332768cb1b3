package lockd;

import java.util.concurrent.locks.ReadWriteLock;

/**
 * A read-write lock: the read lock takes SHARED holds (any number of
 * sessions at once), the write lock exclusive ones, both owned per thread.
 * A thread holding the write lock may take the read lock too (counted on
 * its one session, which stays exclusive until both are unlocked); a
 * thread holding only the read lock cannot take the write lock
 * (IllegalMonitorStateException: two readers upgrading would wait for each
 * other forever).
 */
public final class LockdReadWriteLock implements ReadWriteLock {
    private final DistributedLock read, write;

    LockdReadWriteLock(LockdClient client, String name) {
        read = new DistributedLock(client, name, true);
        write = new DistributedLock(client, name, false);
    }

    @Override
    public DistributedLock readLock() {
        return read;
    }

    @Override
    public DistributedLock writeLock() {
        return write;
    }
}
