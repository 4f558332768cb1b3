package lockd;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * The answer of WHO key (protocol 1.4), as {@link LockdClient#who} returns
 * it: the key's holders in lockd's order, and {@link #delayed()} while the
 * key is in a lock-delay. A free key has neither. Immutable.
 */
public record WhoReply(List<Holder> holders, Optional<Delayed> delayed) {
    public WhoReply {
        holders = List.copyOf(holders);
        Objects.requireNonNull(delayed, "delayed");
    }

    /** True when nobody holds the key and it is in no lock-delay. */
    public boolean free() {
        return holders.isEmpty() && delayed.isEmpty();
    }

    /** The kind of a hold. */
    public enum Kind {
        /** A lock, or an election's leader. */
        EXCLUSIVE,
        /** A shared hold. */
        SHARED,
        /** A permit of a semaphore: {@link Holder#permit()} of {@link Holder#permits()}. */
        PERMIT
    }

    /**
     * One {@code HOLDER fence kind lockd=NAME [client=ADDR] [session=ID]
     * [held_ms=N]} line.
     *
     * @param fence the hold's fence on the lockd that holds it; asked on
     *     another lockd, the key's latest fence, no lower than the hold's
     * @param permit i of {@code permit=i/n}; empty unless kind is PERMIT
     * @param permits n of {@code permit=i/n}; empty unless kind is PERMIT,
     *     or when lockd does not know n ({@code permit=i/-})
     * @param lockd the holding lockd's name, "-" when no master knows it
     * @param client the client's address ("-" while its session is
     *     detached); empty when the hold is on another lockd than the one asked
     * @param session the resumable session's id ("-" for a plain session);
     *     empty as client
     * @param heldMillis the time since the grant (or since the lockd asked
     *     adopted the session); empty as client
     */
    public record Holder(
            long fence,
            Kind kind,
            OptionalInt permit,
            OptionalInt permits,
            String lockd,
            Optional<String> client,
            Optional<String> session,
            OptionalLong heldMillis) {
        public Holder {
            Objects.requireNonNull(kind, "kind");
            Objects.requireNonNull(permit, "permit");
            Objects.requireNonNull(permits, "permits");
            Objects.requireNonNull(lockd, "lockd");
            Objects.requireNonNull(client, "client");
            Objects.requireNonNull(session, "session");
            Objects.requireNonNull(heldMillis, "heldMillis");
        }
    }

    /** A {@code DELAYED ms_left fence} line: the key is in a lock-delay for millisLeft more ms. */
    public record Delayed(long millisLeft, long fence) {}

    private static LockdException bad(String what, String line) {
        return new LockdException("PROTOCOL", "lockd: " + what + " in WHO reply line \"" + line + "\"");
    }

    /** A number as lockd writes it: decimal digits only, within max (unsigned for a fence). */
    private static long number(String s, String what, String line, boolean fence) {
        if (s.isEmpty() || s.length() > 20 || !s.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw bad("bad " + what + " \"" + s + "\"", line);
        }
        try {
            return fence ? Long.parseUnsignedLong(s) : Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw bad(what + " " + s + " out of range", line);
        }
    }

    private static int small(String s, String what, String line) {
        long n = number(s, what, line, false);
        if (n > Integer.MAX_VALUE) {
            throw bad(what + " " + s + " out of range", line);
        }
        return (int) n;
    }

    /** The word=value tokens of a line (the first of a name counts); a later version may add names. */
    private static Map<String, String> tokens(String[] w, int from, String line) {
        Map<String, String> out = new HashMap<>();
        for (int i = from; i < w.length; i++) {
            int eq = w[i].indexOf('=');
            if (eq <= 0) {
                throw bad("bad token \"" + w[i] + "\"", line);
            }
            out.putIfAbsent(w[i].substring(0, eq), w[i].substring(eq + 1));
        }
        return out;
    }

    static Holder parseHolder(String line) {
        String[] w = line.split(" ", -1);
        if (w.length < 4 || !w[0].equals("HOLDER")) {
            throw bad("bad line", line);
        }
        long fence = number(w[1], "fence", line, true);
        Kind kind;
        OptionalInt permit = OptionalInt.empty(), permits = OptionalInt.empty();
        if (w[2].equals("exclusive")) {
            kind = Kind.EXCLUSIVE;
        } else if (w[2].equals("shared")) {
            kind = Kind.SHARED;
        } else if (w[2].startsWith("permit=")) {
            String in = w[2].substring("permit=".length());
            int slash = in.indexOf('/');
            if (slash < 0) {
                throw bad("bad kind \"" + w[2] + "\"", line);
            }
            kind = Kind.PERMIT;
            permit = OptionalInt.of(small(in.substring(0, slash), "permit", line));
            String n = in.substring(slash + 1);
            if (!n.equals("-")) {
                permits = OptionalInt.of(small(n, "permit count", line));
            }
        } else {
            throw bad("unknown kind \"" + w[2] + "\"", line);
        }
        Map<String, String> x = tokens(w, 3, line);
        String lockd = x.get("lockd");
        if (lockd == null || lockd.isEmpty()) {
            throw bad("no lockd=", line);
        }
        String held = x.get("held_ms");
        return new Holder(fence, kind, permit, permits, lockd, Optional.ofNullable(x.get("client")),
                Optional.ofNullable(x.get("session")),
                held == null ? OptionalLong.empty() : OptionalLong.of(number(held, "held_ms", line, false)));
    }

    /**
     * The lines of a WHO reply before its END: HOLDER lines and at most one
     * DELAYED line. Anything else is a LockdException with code PROTOCOL.
     */
    static WhoReply parse(List<String> lines) {
        List<Holder> holders = new ArrayList<>();
        Delayed delayed = null;
        for (String line : lines) {
            int sp = line.indexOf(' ');
            String word = sp < 0 ? line : line.substring(0, sp);
            if (word.equals("HOLDER")) {
                holders.add(parseHolder(line));
            } else if (word.equals("DELAYED")) {
                String[] w = line.split(" ", -1);
                if (w.length < 3 || delayed != null) {
                    throw bad("bad line", line);
                }
                tokens(w, 3, line);
                delayed = new Delayed(number(w[1], "ms_left", line, false), number(w[2], "fence", line, true));
            } else {
                throw bad("unexpected line", line);
            }
        }
        return new WhoReply(holders, Optional.ofNullable(delayed));
    }
}
