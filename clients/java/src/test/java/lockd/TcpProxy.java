package lockd;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP relay between the client and one lockd, whose links the tests can
 * cut: after {@link #cut()} no byte goes through either way and new
 * connections are accepted but lead nowhere, with every socket left open,
 * as when a network path breaks without a reset. {@link #reset()} cuts
 * the same way but closes the links it had, so that both sides see them
 * end. {@link #heal()} lets new connections through again; a link that
 * was cut stays cut. {@link #close()} closes everything it opened.
 */
final class TcpProxy implements AutoCloseable {
    private final ServerSocket ss;
    private final String host;
    private final int port;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    /** The cut flag of every link made while not cut. */
    private final List<AtomicBoolean> links = new CopyOnWriteArrayList<>();
    private final AtomicInteger blackholed = new AtomicInteger();
    private final Thread acceptor;
    private volatile boolean cut;

    TcpProxy(String upstream) throws IOException {
        int colon = upstream.lastIndexOf(':');
        host = upstream.substring(0, colon);
        port = Integer.parseInt(upstream.substring(colon + 1));
        ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        acceptor = new Thread(this::accept, "proxy-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    String address() {
        return "127.0.0.1:" + ss.getLocalPort();
    }

    void cut() {
        cut = true;
        for (AtomicBoolean l : links) {
            l.set(true);
        }
    }

    /** Cuts, and closes every socket it had open: both sides see their link end. */
    void reset() {
        cut();
        for (Socket s : sockets) {
            close(s);
        }
    }

    /** New connections reach lockd again; the links cut before stay cut. */
    void heal() {
        cut = false;
    }

    /** How many connections were accepted while cut (they lead nowhere). */
    int blackholed() {
        return blackholed.get();
    }

    private void accept() {
        while (!ss.isClosed()) {
            try {
                Socket down = ss.accept();
                sockets.add(down);
                if (cut) {
                    blackholed.incrementAndGet();
                    pump(down, null, new AtomicBoolean(true)); // read and drop
                    continue;
                }
                Socket up = new Socket(host, port);
                sockets.add(up);
                AtomicBoolean linkCut = new AtomicBoolean();
                links.add(linkCut);
                pump(down, up, linkCut);
                pump(up, down, linkCut);
            } catch (IOException e) {
                // closed
            }
        }
    }

    /** Copies from a to b (b null: drops) until a closes; drops everything once the link is cut. */
    private void pump(Socket a, Socket b, AtomicBoolean linkCut) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[8192];
            try {
                InputStream in = a.getInputStream();
                OutputStream out = b == null ? null : b.getOutputStream();
                int n;
                while ((n = in.read(buf)) >= 0) {
                    if (!linkCut.get() && out != null) {
                        out.write(buf, 0, n);
                        out.flush();
                    }
                }
            } catch (IOException e) {
                // closed
            }
            if (!linkCut.get()) { // a close goes through, as long as the link works
                close(a);
                if (b != null) {
                    close(b);
                }
            }
        }, "proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private static void close(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closed anyway
        }
    }

    @Override
    public void close() throws IOException {
        ss.close();
        for (Socket s : sockets) {
            close(s);
        }
    }
}
