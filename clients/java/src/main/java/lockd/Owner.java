package lockd;

/** What a connection tells about its session to whoever uses it. */
interface Owner {
    /** An event line (LOST, ELECTED, NOLEADER), split in words. Called on the I/O thread: must not block. */
    void event(String[] words);

    /** The session ended for good (closed, broke and not resumed). Must not block. */
    void ended();

    /**
     * lockd answered a HELD sent right behind a request sent at sentNanos
     * (System.nanoTime()): the session's holds and the time left on each.
     */
    default void confirmed(long sentNanos, Reply held) {}
}
