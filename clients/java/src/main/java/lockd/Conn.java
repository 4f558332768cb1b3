package lockd;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One connection to lockd, and so one lockd session. Requests are written
 * in order and replies matched to them in order (each request gets one
 * reply, in request order); events (a line whose first word is LOST,
 * ELECTED or NOLEADER) go to the owner. Reading happens on the client's
 * I/O thread; writing on the caller's thread (non-blocking, the rest
 * finished by the I/O thread).
 */
final class Conn {
    enum State {
        /** reading and writing */
        OPEN,
        /** broke; a background task is reconnecting to RESUME the session */
        RESUMING,
        /** closed on purpose or broke for good; never used again */
        DEAD
    }

    static final class Broken extends IOException {
        private static final long serialVersionUID = 1L;

        Broken() {
            super("connection to lockd broke");
        }
    }

    private static final class Call {
        final boolean multi;
        /** A LOCK or CAMPAIGN: may wait, and every request behind it with it. */
        final boolean waits;
        final CompletableFuture<Reply> f = new CompletableFuture<>();

        Call(boolean multi, String line) {
            this.multi = multi;
            this.waits = line.startsWith("LOCK ") || line.startsWith("CAMPAIGN ");
        }
    }

    /** sessions.grace_ms's default, for a SESSION reply without a number. */
    static final long DEFAULT_GRACE_MS = 10000;

    final LockdClient client;
    private final ReentrantLock lock = new ReentrantLock();
    private SocketChannel ch; // guarded by lock
    private Tls tls; // ch's TLS, or null; guarded by lock
    private SocketChannel handled; // the channel shutdown already dealt with
    volatile SelectionKey key;
    private final ArrayDeque<Call> pending = new ArrayDeque<>();
    private final ArrayDeque<ByteBuffer> out = new ArrayDeque<>();
    volatile State state = State.OPEN;
    volatile String sessId, secret;
    /** How long lockd keeps the session's holds once its connection ends without QUIT. */
    volatile long graceMs = DEFAULT_GRACE_MS;
    volatile Owner owner;
    /** Guards toldEnded: the owner hears of the session's end once, and tellEnded returns only once it has. */
    private final Object endedLock = new Object();
    private boolean toldEnded;
    // I/O thread only:
    private final ByteBuffer in = ByteBuffer.allocate(16384);
    private final StringBuilder partial = new StringBuilder();
    private List<String> multi;

    Conn(LockdClient client, LockdClient.Link link) {
        this.client = client;
        this.ch = link.ch();
        this.tls = link.tls();
    }

    /** The connection's local address, as lockd sees the client (for the tests). */
    java.net.SocketAddress localAddress() throws java.io.IOException {
        lock.lock();
        try {
            return ch.getLocalAddress();
        } finally {
            lock.unlock();
        }
    }

    CompletableFuture<Reply> send(String line, boolean multiLine) {
        return send(line, multiLine, false);
    }

    CompletableFuture<Reply> send(String line, boolean multiLine, boolean duringResume) {
        return sendAll(duringResume, line, multiLine, null, false).get(0);
    }

    /**
     * line, and then HELD when withHeld (pipelined: one write, and lockd
     * answers the HELD right after line's reply, even when line waits).
     * Returns the future of each reply.
     */
    List<CompletableFuture<Reply>> sendWithHeld(String line, boolean withHeld, boolean duringResume) {
        return sendAll(duringResume, line, false, withHeld ? "HELD" : null, true);
    }

    private List<CompletableFuture<Reply>> sendAll(boolean duringResume, String l1, boolean m1, String l2,
            boolean m2) {
        lock.lock();
        try {
            State st = state;
            if (st == State.DEAD || (st == State.RESUMING && !duringResume)) {
                return List.of(CompletableFuture.failedFuture(new Broken()),
                        CompletableFuture.failedFuture(new Broken()));
            }
            Call c1 = new Call(m1, l1);
            pending.add(c1);
            Call c2 = null;
            String text = l1 + "\r\n";
            if (l2 != null) {
                c2 = new Call(m2, l2);
                pending.add(c2);
                text += l2 + "\r\n";
            }
            List<CompletableFuture<Reply>> fs = List.of(c1.f, c2 == null ? c1.f : c2.f);
            write(ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII)));
            return fs;
        } finally {
            lock.unlock();
        }
    }

    /** Writes app bytes (TLS: their records), queueing what the socket does not take. Under lock. */
    private void write(ByteBuffer app) {
        ByteBuffer b = app;
        try {
            if (tls != null) {
                b = tls.wrap(app);
            }
            if (out.isEmpty()) {
                ch.write(b);
            }
        } catch (IOException e) {
            SocketChannel w = ch;
            client.loop.execute(() -> shutdown(w, true));
            return;
        }
        if (b.hasRemaining()) {
            if (tls != null) { // the buffer is reused by the next wrap
                ByteBuffer copy = ByteBuffer.allocate(b.remaining());
                copy.put(b).flip();
                b = copy;
            }
            out.add(b);
            SelectionKey k = key;
            client.loop.execute(() -> {
                if (k != null && k.isValid()) {
                    k.interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
                }
            });
        }
    }

    /** Whether a LOCK or CAMPAIGN waits for its reply. */
    private boolean waiting() {
        lock.lock();
        try {
            for (Call c : pending) {
                if (c.waits) {
                    return true;
                }
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    void onWritable(SelectionKey k) {
        SocketChannel c = (SocketChannel) k.channel();
        lock.lock();
        try {
            while (!out.isEmpty()) {
                ByteBuffer b = out.peek();
                c.write(b);
                if (b.hasRemaining()) {
                    return;
                }
                out.poll();
            }
            k.interestOps(SelectionKey.OP_READ);
        } catch (IOException e) {
            client.loop.execute(() -> shutdown(c, true));
        } finally {
            lock.unlock();
        }
    }

    void onReadable(SelectionKey k) {
        SocketChannel c = (SocketChannel) k.channel();
        Tls t;
        lock.lock();
        try {
            if (c != ch) { // a channel this connection no longer uses
                closeQuietly(c);
                return;
            }
            t = tls;
        } finally {
            lock.unlock();
        }
        boolean open;
        try {
            if (t != null) {
                open = t.read(c, this::bytes);
                if (open && t.needsWrap()) { // a TLS 1.3 KeyUpdate to answer
                    lock.lock();
                    try {
                        if (c == ch) {
                            write(ByteBuffer.allocate(0));
                        }
                    } finally {
                        lock.unlock();
                    }
                }
            } else {
                open = c.read(in) >= 0;
                in.flip();
                bytes(in);
                in.clear();
            }
        } catch (IOException e) {
            open = false;
        }
        if (!open) {
            shutdown(c, true);
        }
    }

    /** Splits what was read into lines (I/O thread). */
    private void bytes(ByteBuffer in) {
        while (in.hasRemaining()) {
            byte b = in.get();
            if (b == '\n') {
                int len = partial.length();
                if (len > 0 && partial.charAt(len - 1) == '\r') {
                    partial.setLength(len - 1);
                }
                String s = partial.toString();
                partial.setLength(0);
                line(s);
            } else {
                partial.append((char) (b & 0xff));
            }
        }
    }

    static boolean isEvent(String word) {
        return word.equals("LOST") || word.equals("ELECTED") || word.equals("NOLEADER");
    }

    private void line(String s) {
        String t = s.trim();
        String[] w = t.split("[ \t]+");
        if (multi == null && isEvent(w[0])) {
            Owner o = owner;
            if (o != null) {
                o.event(w);
            }
            return;
        }
        Call c;
        lock.lock();
        try {
            c = pending.peek();
            if (c == null) {
                return; // a reply nobody asked for
            }
            if (c.multi && !(multi == null && t.startsWith("ERR")) && !t.equals("END")) {
                if (multi == null) {
                    multi = new ArrayList<>();
                }
                multi.add(t);
                return;
            }
            pending.poll();
        } finally {
            lock.unlock();
        }
        Reply r = new Reply(t, multi == null ? List.of() : multi);
        multi = null;
        c.f.complete(r);
    }

    /**
     * The end of channel which (I/O thread). Calls in flight fail. A
     * resumable session that holds something is resumed in the background;
     * otherwise the session is over and the owner told.
     */
    void shutdown(SocketChannel which, boolean mayResume) {
        List<Call> calls;
        boolean resume;
        boolean wasResuming;
        lock.lock();
        try {
            if (which == null || which == handled || which != ch) {
                closeQuietly(which);
                return;
            }
            handled = which;
            calls = new ArrayList<>(pending);
            pending.clear();
            out.clear();
            State st = state;
            wasResuming = st == State.RESUMING;
            resume = mayResume && st == State.OPEN && sessId != null && owner != null && !client.isClosed();
            if (resume) {
                state = State.RESUMING;
            } else if (!wasResuming) {
                state = State.DEAD;
            }
            closeQuietly(which);
        } finally {
            lock.unlock();
        }
        partial.setLength(0);
        multi = null;
        for (Call c : calls) {
            c.f.completeExceptionally(new Broken());
        }
        if (wasResuming) {
            return; // the resume task tries again
        }
        if (resume) {
            client.bg(this::resume);
            return;
        }
        tellEnded();
        client.untrack(this);
    }

    /**
     * Tells the owner that the session ended for good, once per
     * connection, whoever ends it: quit, abandon (so LockdClient.close(),
     * which does not wait for the I/O thread to see the close), the end of
     * a read, a resume that failed. A second caller returns only once the
     * owner was told (the owner's ended() does not block). The connection
     * is untracked only after this, so once close() returns, nothing of the
     * client says it holds anything.
     */
    void tellEnded() {
        synchronized (endedLock) {
            if (toldEnded) {
                return;
            }
            toldEnded = true;
            Owner o = owner;
            if (o != null) {
                o.ended();
            }
        }
    }

    private static void closeQuietly(SocketChannel c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (IOException e) {
            // closed anyway
        }
    }

    /**
     * Background task: RESUME the session on a new connection, for up to
     * the resume window, with a HELD behind the RESUME: what lockd confirms
     * there, measured from when the RESUME was sent, is the holds' new
     * local deadline.
     */
    private void resume() {
        long deadline = System.nanoTime() + client.resumeWindow.toNanos();
        long back = 50;
        while (System.nanoTime() < deadline && state == State.RESUMING && !client.isClosed()) {
            SocketChannel nch = null;
            try {
                LockdClient.Link link = client.openChannel();
                nch = link.ch();
                lock.lock();
                try {
                    if (state != State.RESUMING) {
                        closeQuietly(nch);
                        break;
                    }
                    ch = nch;
                    tls = link.tls();
                } finally {
                    lock.unlock();
                }
                key = client.loop.register(nch, this).get(5, TimeUnit.SECONDS);
                if (client.password != null) {
                    Reply a = send("AUTH " + client.password, false, true).get(5, TimeUnit.SECONDS);
                    if (!a.line().equals("OK")) {
                        break;
                    }
                }
                long sent = System.nanoTime();
                List<CompletableFuture<Reply>> fs = sendWithHeld("RESUME " + sessId + " " + secret,
                        client.heartbeat, true);
                Reply r = fs.get(0).get(5, TimeUnit.SECONDS);
                if (r.line().startsWith("OK")) {
                    Reply held = client.heartbeat ? fs.get(1).get(5, TimeUnit.SECONDS) : null;
                    lock.lock();
                    try {
                        if (state == State.RESUMING) {
                            state = State.OPEN;
                        } else {
                            break;
                        }
                    } finally {
                        lock.unlock();
                    }
                    Owner o = owner;
                    if (o != null && held != null) {
                        o.confirmed(sent, held);
                    }
                    return;
                }
                if (!r.line().startsWith("ERR QUORUM")) {
                    break; // ERR NOSESSION: the session is gone
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            } catch (Exception e) {
                // not reachable yet: try again
            }
            if (nch != null) {
                SocketChannel c = nch;
                client.loop.execute(() -> shutdown(c, false));
            }
            try {
                Thread.sleep(back);
            } catch (InterruptedException e) {
                break;
            }
            back = Math.min(back * 2, 250); // lockd restarts fast; the lease left is short
        }
        SocketChannel c;
        lock.lock();
        try {
            state = State.DEAD;
            c = ch;
        } finally {
            lock.unlock();
        }
        client.loop.execute(() -> shutdown(c, false));
        tellEnded();
        client.untrack(this);
    }

    /**
     * End the session now: close the connection, so that lockd cancels a
     * waiting LOCK (the protocol has no cancel command) and releases what
     * the session holds. A resumable session would only be detached by a
     * close (or is detached already, while it is being resumed), so it is
     * resumed on a connection of its own and ended with QUIT in the
     * background (SessionEnd), also when the client is being closed. The
     * owner is told before abandon returns (also when the session had
     * ended already), not when the I/O thread sees the close.
     */
    void abandon() {
        String id, sec;
        SocketChannel c;
        boolean wasDead;
        lock.lock();
        try {
            wasDead = state == State.DEAD;
            state = State.DEAD;
            c = ch;
            id = sessId;
            sec = secret;
        } finally {
            lock.unlock();
        }
        if (!wasDead) {
            client.loop.execute(() -> shutdown(c, false));
            if (id != null) {
                client.endInBackground(id, sec, graceMs);
            }
        }
        tellEnded();
    }

    /**
     * End the session with QUIT (bounded), then close; the owner is told
     * before quit returns. A session that QUIT cannot end here (being
     * resumed; a LOCK waiting, which lockd answers before the QUIT; the
     * QUIT unanswered) is abandoned, and so ended in the background.
     */
    void quit() {
        if (state != State.OPEN || waiting()) {
            abandon();
            return;
        }
        try {
            send("QUIT", false).get(1, TimeUnit.SECONDS);
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            abandon();
            return;
        }
        SocketChannel c;
        lock.lock();
        try {
            state = State.DEAD;
            c = ch;
        } finally {
            lock.unlock();
        }
        client.loop.execute(() -> shutdown(c, false));
        tellEnded(); // now, not when the I/O thread runs that shutdown
    }
}
