package lockd;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLEngineResult.HandshakeStatus;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;

/**
 * TLS on one non-blocking channel, with an SSLEngine: the handshake runs on
 * the connecting thread (bounded by the connect timeout) before the channel
 * joins the client's selector; after it, wrap() runs under the
 * connection's lock on the writing thread and read() on the I/O thread
 * (an SSLEngine allows one wrap and one unwrap at a time, concurrently).
 */
final class Tls {
    private static final ByteBuffer EMPTY = ByteBuffer.allocate(0);

    private final SSLEngine engine;
    /** Bytes read from the socket, not yet unwrapped (write mode). I/O thread after the handshake. */
    private ByteBuffer netIn;
    /** Plaintext unwrapped, not yet handed on (write mode). I/O thread after the handshake. */
    private ByteBuffer appIn;
    /** Records wrapped for the socket. Under the connection's lock after the handshake. */
    private ByteBuffer netOut;

    private Tls(SSLEngine engine) {
        this.engine = engine;
        int net = engine.getSession().getPacketBufferSize();
        netIn = ByteBuffer.allocate(net);
        netOut = ByteBuffer.allocate(net);
        appIn = ByteBuffer.allocate(engine.getSession().getApplicationBufferSize());
    }

    /**
     * Speaks TLS as a client on ch (connected, non-blocking) and verifies
     * the certificate of lockd against host (a name or an IP address, as
     * HTTPS does). Throws IOException (SSLException) when the handshake
     * fails or does not finish within timeoutMs.
     */
    static Tls handshake(SocketChannel ch, SSLContext ctx, String host, int port, long timeoutMs) throws IOException {
        SSLEngine e = ctx.createSSLEngine(host, port);
        e.setUseClientMode(true);
        SSLParameters p = e.getSSLParameters();
        p.setEndpointIdentificationAlgorithm("HTTPS");
        e.setSSLParameters(p);
        Tls t = new Tls(e);
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        try (Selector sel = Selector.open()) {
            SelectionKey k = ch.register(sel, 0);
            e.beginHandshake();
            HandshakeStatus hs = e.getHandshakeStatus();
            while (hs != HandshakeStatus.FINISHED && hs != HandshakeStatus.NOT_HANDSHAKING) {
                switch (hs) {
                    case NEED_WRAP: {
                        t.netOut.clear();
                        SSLEngineResult r = e.wrap(EMPTY, t.netOut);
                        t.netOut.flip();
                        while (t.netOut.hasRemaining()) {
                            if (ch.write(t.netOut) == 0) {
                                await(sel, k, SelectionKey.OP_WRITE, end);
                            }
                        }
                        if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
                            throw new SSLException("lockd closed the TLS handshake");
                        }
                        hs = r.getHandshakeStatus();
                        break;
                    }
                    case NEED_UNWRAP:
                    case NEED_UNWRAP_AGAIN: {
                        t.netIn.flip();
                        SSLEngineResult r = e.unwrap(t.netIn, t.appIn);
                        t.netIn.compact();
                        switch (r.getStatus()) {
                            case BUFFER_UNDERFLOW:
                                t.growNetIn();
                                await(sel, k, SelectionKey.OP_READ, end);
                                if (ch.read(t.netIn) < 0) {
                                    throw new SSLException("lockd closed the connection during the TLS handshake");
                                }
                                break;
                            case BUFFER_OVERFLOW:
                                t.appIn = grow(t.appIn, e.getSession().getApplicationBufferSize());
                                break;
                            case CLOSED:
                                throw new SSLException("lockd closed the TLS handshake");
                            default:
                                break;
                        }
                        hs = e.getHandshakeStatus();
                        break;
                    }
                    case NEED_TASK:
                        t.runTasks();
                        hs = e.getHandshakeStatus();
                        break;
                    default:
                        throw new SSLException("TLS handshake status " + hs);
                }
            }
            k.cancel();
        }
        t.netOut.clear();
        return t;
    }

    private static void await(Selector sel, SelectionKey k, int op, long end) throws IOException {
        long left = TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime());
        if (left <= 0) {
            throw new SSLException("TLS handshake with lockd timed out");
        }
        k.interestOps(op);
        sel.select(left);
        sel.selectedKeys().clear();
        k.interestOps(0);
    }

    private void growNetIn() {
        if (!netIn.hasRemaining()) {
            netIn = grow(netIn, engine.getSession().getPacketBufferSize());
        }
    }

    private static ByteBuffer grow(ByteBuffer b, int want) {
        ByteBuffer n = ByteBuffer.allocate(Math.max(want, b.capacity()) + b.capacity());
        b.flip();
        n.put(b);
        return n;
    }

    private void runTasks() {
        Runnable r;
        while ((r = engine.getDelegatedTask()) != null) {
            r.run();
        }
    }

    /**
     * The records carrying app (all of it), ready to write (read mode), in
     * a buffer reused by the next call. Called under the connection's lock.
     */
    ByteBuffer wrap(ByteBuffer app) throws IOException {
        netOut.clear();
        do {
            SSLEngineResult r = engine.wrap(app, netOut);
            switch (r.getStatus()) {
                case BUFFER_OVERFLOW:
                    netOut = grow(netOut, engine.getSession().getPacketBufferSize());
                    break;
                case CLOSED:
                    throw new SSLException("TLS session closed");
                default:
                    break;
            }
            if (r.getHandshakeStatus() == HandshakeStatus.NEED_TASK) {
                runTasks();
            }
        } while (app.hasRemaining());
        netOut.flip();
        return netOut;
    }

    /** What to do for the engine after a read: a record to send back (TLS 1.3 KeyUpdate), or none. */
    boolean needsWrap() {
        return engine.getHandshakeStatus() == HandshakeStatus.NEED_WRAP;
    }

    /**
     * Reads what the socket has and hands the plaintext to sink (I/O
     * thread). Returns false at the end of the stream (EOF or close_notify).
     */
    boolean read(SocketChannel ch, java.util.function.Consumer<ByteBuffer> sink) throws IOException {
        growNetIn();
        int n = ch.read(netIn);
        boolean open = n >= 0;
        while (true) {
            netIn.flip();
            SSLEngineResult r = engine.unwrap(netIn, appIn);
            netIn.compact();
            if (r.getHandshakeStatus() == HandshakeStatus.NEED_TASK) {
                runTasks();
            }
            if (appIn.position() > 0) {
                appIn.flip();
                sink.accept(appIn);
                appIn.clear();
            }
            switch (r.getStatus()) {
                case OK:
                    if (netIn.position() == 0 || (r.bytesConsumed() == 0 && r.bytesProduced() == 0)) {
                        return open;
                    }
                    break;
                case BUFFER_UNDERFLOW:
                    growNetIn();
                    return open;
                case BUFFER_OVERFLOW:
                    appIn = grow(appIn, engine.getSession().getApplicationBufferSize());
                    break;
                case CLOSED:
                default:
                    return false;
            }
        }
    }
}
