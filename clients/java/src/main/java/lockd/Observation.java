package lockd;

import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * An OBSERVE of one election on a connection of its own. Events are handed
 * to the listener on the client's event thread, in order. A broken
 * connection is dialled again and OBSERVE sent again (which reports the
 * current state at once), by one restart loop at a time. close() ends it.
 */
public final class Observation implements AutoCloseable {
    private final LockdClient client;
    private final String name;
    private final Consumer<Leader> listener;
    /**
     * The connection that observes, once its OBSERVE was answered; null
     * while a restart runs. Only its end starts a restart, once (whoever
     * takes it from here).
     */
    private final AtomicReference<Conn> conn = new AtomicReference<>();
    private volatile boolean closed;

    Observation(LockdClient client, String name, Consumer<Leader> listener) {
        this.client = client;
        this.name = name;
        this.listener = listener;
    }

    /** What a connection of this observation tells: its events, and its end. */
    private final class Watch implements Owner {
        private final Conn c;

        Watch(Conn c) {
            this.c = c;
        }

        @Override
        public void event(String[] w) {
            Observation.this.event(w);
        }

        @Override
        public void ended() {
            Observation.this.ended(c);
        }
    }

    void start() {
        Conn c = client.newConn(false);
        c.owner = new Watch(c);
        Reply r = client.timed(c, c.send("OBSERVE " + name, false));
        if (!r.line().equals("OK")) {
            c.abandon();
            throw LockdException.fromReply(r.line());
        }
        conn.set(c);
        if (closed) {
            c.abandon(); // close() came before c was in use
        } else if (c.state == Conn.State.DEAD) {
            ended(c); // it ended before it was in use, unheard
        }
    }

    private void event(String[] w) {
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

    /**
     * The session of c ended. Only the end of the connection in use starts
     * a restart: the connections a restart tries end too when they fail,
     * and the restart tries again by itself; one more loop for each of
     * them would multiply the loops with every failure.
     */
    private void ended(Conn c) {
        if (conn.compareAndSet(c, null) && !closed && !client.isClosed()) {
            client.bg(this::restart);
        }
    }

    /** Starts again, backing off, until it works or the observation or the client is closed. */
    private void restart() {
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
    }

    @Override
    public void close() {
        closed = true;
        Conn c = conn.get();
        if (c != null) {
            c.abandon();
        }
    }
}
