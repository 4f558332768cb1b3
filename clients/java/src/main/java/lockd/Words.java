package lockd;

import java.time.Duration;

/** Checks of what goes into one protocol word, before anything is sent. */
final class Words {
    private Words() {}

    /**
     * A key, value or password must be 1 to max bytes of printable ASCII
     * 0x21-0x7E: a blank would split it into options ("k WAIT"), a CR or LF
     * would end the request early.
     */
    static String check(String kind, String s, int max) {
        if (s == null || s.isEmpty()) {
            throw new IllegalArgumentException("lockd: empty " + kind);
        }
        if (s.length() > max) {
            throw new IllegalArgumentException("lockd: " + kind + " longer than " + max + " bytes");
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x21 || c > 0x7e) {
                throw new IllegalArgumentException(String.format(
                        "lockd: %s has character U+%04X at %d (only printable ASCII without blanks)", kind, (int) c, i));
            }
        }
        return s;
    }

    /** Whole milliseconds, rounded up, 0 (when allowed) or 1 to 2^31-1. */
    static long ms(String what, Duration d, boolean zeroOk) {
        if (d == null || d.isNegative()) {
            throw new IllegalArgumentException("lockd: " + what + " " + d + " out of range");
        }
        long ms;
        try {
            ms = d.toMillis();
            if (d.minusMillis(ms).toNanos() > 0) {
                ms++;
            }
        } catch (ArithmeticException e) {
            ms = Long.MAX_VALUE;
        }
        if ((ms == 0 && !zeroOk) || ms > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("lockd: " + what + " " + d + " out of range");
        }
        return ms;
    }
}
