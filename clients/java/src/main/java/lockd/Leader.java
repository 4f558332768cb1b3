package lockd;

/**
 * Who leads an election: its fence and published value. fence 0 and value
 * null when nobody leads (NOLEADER); value null for a name held by a plain
 * LOCK.
 */
public record Leader(String name, long fence, String value) {
    /** True when somebody leads. */
    public boolean elected() {
        return fence != 0;
    }
}
