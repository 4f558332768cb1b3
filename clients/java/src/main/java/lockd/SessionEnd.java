package lockd;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Ends a resumable session that its own connection cannot end with QUIT:
 * the connection broke and the session is being resumed, a LOCK waits on
 * it (lockd would answer a QUIT only after the LOCK), or its QUIT went
 * unanswered. Closing that connection only detaches the session, and lockd
 * would keep its holds for the grace; so the session is resumed on a
 * connection of its own and ended there (RESUME, then QUIT, in one
 * write), tried again until the grace is over.
 *
 * <p>A blocking exchange on a selector of its own, not on the client's
 * I/O thread: it also runs after close() has stopped that thread.
 */
final class SessionEnd implements Runnable {
    private final LockdClient client;
    private final String id, secret;
    private final long graceMs;

    SessionEnd(LockdClient client, String id, String secret, long graceMs) {
        this.client = client;
        this.id = id;
        this.secret = secret;
        this.graceMs = graceMs;
    }

    @Override
    public void run() {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(graceMs, 1000));
        long back = 50;
        for (int i = 0; System.nanoTime() - end < 0; i++) {
            try {
                long by = Math.min(end - System.nanoTime(), TimeUnit.MILLISECONDS.toNanos(client.connectTimeoutMs));
                if (ended(exchange(client.openChannel(i), System.nanoTime() + by))) {
                    return;
                }
            } catch (IOException e) {
                // lockd not reachable: try again (the next address first)
            }
            try {
                Thread.sleep(back);
            } catch (InterruptedException e) {
                return;
            }
            back = Math.min(2 * back, 500);
        }
    }

    /**
     * Whether the replies say the session is over: QUIT answered OK after
     * RESUME's OK, or RESUME refused for good (ERR NOSESSION: it ended or
     * expired already). Not over: no answer, ERR QUORUM, or a RESUME whose
     * QUIT got no answer (another RESUME took the session in between).
     */
    private boolean ended(List<String> replies) {
        int first = client.password != null ? 1 : 0; // AUTH's
        if (replies.size() <= first) {
            return false;
        }
        String resumed = replies.get(first);
        if (resumed.startsWith("OK")) {
            return replies.size() > first + 1 && replies.get(first + 1).equals("OK");
        }
        return !resumed.startsWith("ERR QUORUM");
    }

    /** Sends the requests on link and returns the replies (events left out), read to lockd's close or until by. */
    private List<String> exchange(LockdClient.Link link, long by) throws IOException {
        String text = "RESUME " + id + " " + secret + "\r\nQUIT\r\n";
        if (client.password != null) {
            text = "AUTH " + client.password + "\r\n" + text;
        }
        List<String> replies = new ArrayList<>();
        Consumer<ByteBuffer> sink = lines(replies);
        SocketChannel ch = link.ch();
        Tls tls = link.tls();
        try (ch; Selector sel = Selector.open()) {
            SelectionKey k = ch.register(sel, 0);
            ByteBuffer out = ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII));
            if (tls != null) {
                out = tls.wrap(out);
            }
            while (out.hasRemaining()) {
                if (ch.write(out) == 0 && !await(sel, k, SelectionKey.OP_WRITE, by)) {
                    return replies;
                }
            }
            ByteBuffer in = ByteBuffer.allocate(4096);
            while (await(sel, k, SelectionKey.OP_READ, by)) {
                boolean open;
                if (tls != null) {
                    open = tls.read(ch, sink);
                } else {
                    open = ch.read(in) >= 0;
                    in.flip();
                    sink.accept(in);
                    in.clear();
                }
                if (!open) {
                    break;
                }
            }
        }
        return replies;
    }

    /** A sink that splits bytes into lines and adds those that are not events to replies. */
    private static Consumer<ByteBuffer> lines(List<String> replies) {
        StringBuilder partial = new StringBuilder();
        return b -> {
            while (b.hasRemaining()) {
                byte c = b.get();
                if (c != '\n') {
                    partial.append((char) (c & 0xff));
                    continue;
                }
                String line = partial.toString().trim();
                partial.setLength(0);
                if (!line.isEmpty() && !Conn.isEvent(line.split("[ \t]+")[0])) {
                    replies.add(line);
                }
            }
        };
    }

    /** Waits until k is ready for op, or false once by has passed. */
    private static boolean await(Selector sel, SelectionKey k, int op, long by) throws IOException {
        long left = TimeUnit.NANOSECONDS.toMillis(by - System.nanoTime());
        if (left <= 0) {
            return false;
        }
        k.interestOps(op);
        sel.select(left);
        sel.selectedKeys().clear();
        return true;
    }
}
