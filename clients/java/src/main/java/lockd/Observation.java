package lockd;

import java.util.function.Consumer;

/**
 * An OBSERVE of one election on a connection of its own. Events are handed
 * to the listener on the client's event thread, in order. A broken
 * connection is dialled again and OBSERVE sent again (which reports the
 * current state at once). close() ends it.
 */
public final class Observation implements AutoCloseable, Owner {
    private final LockdClient client;
    private final String name;
    private final Consumer<Leader> listener;
    private volatile Conn conn;
    private volatile boolean closed;

    Observation(LockdClient client, String name, Consumer<Leader> listener) {
        this.client = client;
        this.name = name;
        this.listener = listener;
    }

    void start() {
        Conn c = client.newConn(false);
        c.owner = this;
        conn = c;
        Reply r = client.timed(c, c.send("OBSERVE " + name, false));
        if (!r.line().equals("OK")) {
            c.abandon();
            throw LockdException.fromReply(r.line());
        }
    }

    @Override
    public void event(String[] w) {
        Leader ld;
        if (w[0].equals("ELECTED") && w.length >= 3 && w[1].equals(name)) {
            ld = new Leader(name, Long.parseUnsignedLong(w[2]), w.length >= 4 ? w[3] : null);
        } else if (w[0].equals("NOLEADER") && w.length >= 2 && w[1].equals(name)) {
            ld = new Leader(name, 0, null);
        } else {
            return;
        }
        client.fire(() -> listener.accept(ld));
    }

    @Override
    public void ended() {
        if (closed || client.isClosed()) {
            return;
        }
        client.bg(() -> {
            for (long back = 100; !closed && !client.isClosed(); back = Math.min(2 * back, 2000)) {
                try {
                    start();
                    return;
                } catch (RuntimeException e) {
                    try {
                        Thread.sleep(back);
                    } catch (InterruptedException ie) {
                        return;
                    }
                }
            }
        });
    }

    @Override
    public void close() {
        closed = true;
        Conn c = conn;
        if (c != null) {
            c.abandon();
        }
    }
}
