package lockd;

/**
 * The lock is no longer held: lockd sent {@code LOST} (its lease could not
 * be renewed on a majority of the masters in time, or a TTL lapsed), or its
 * session ended and could not be resumed. Work done under the lock since
 * then ran without it. Unchecked.
 */
public class LockLostException extends LockdException {
    private static final long serialVersionUID = 1L;

    public LockLostException(String key) {
        super("LOST", "lockd: lock " + key + " was lost");
    }
}
