package lockd;

/**
 * A request lockd refused or could not answer: a reply {@code ERR CODE text}
 * ({@link #code()} is CODE: PROTOCOL, ARG, KEY, NOTHELD, QUORUM, LIMIT,
 * NOAUTH, AUTH, SHUTDOWN, NOSESSION, NOTLEADER), a {@code TIMEOUT} or
 * {@code BUSY} where the API has no other way to say so (code TIMEOUT,
 * BUSY), or a broken connection (code IO). Unchecked.
 */
public class LockdException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String code;

    public LockdException(String code, String message) {
        super(message);
        this.code = code;
    }

    public LockdException(String code, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
    }

    /** The reply's error code (QUORUM, NOTHELD, ...), or TIMEOUT, BUSY, IO, LOST. */
    public String code() {
        return code;
    }

    static LockdException fromReply(String line) {
        if (line.startsWith("ERR")) {
            String rest = line.substring(3).trim();
            int sp = rest.indexOf(' ');
            String code = sp < 0 ? rest : rest.substring(0, sp);
            return new LockdException(code, "lockd: " + line);
        }
        if (line.equals("TIMEOUT") || line.equals("BUSY")) {
            return new LockdException(line, "lockd: " + line);
        }
        return new LockdException("PROTOCOL", "lockd: unexpected reply \"" + line + "\"");
    }
}
