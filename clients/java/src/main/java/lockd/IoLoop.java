package lockd;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The one I/O thread of a client: a selector over every connection of the
 * client, so that no thread is needed per lock or per connection. It reads
 * every line (and so sees LOST at once on idle connections) and finishes
 * writes that did not fit the socket buffer.
 */
final class IoLoop implements Runnable {
    private final Selector sel;
    private final Thread thread;
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private volatile boolean open = true;

    IoLoop(String name) throws IOException {
        sel = Selector.open();
        thread = new Thread(this, name);
        thread.setDaemon(true);
        thread.start();
    }

    void execute(Runnable r) {
        tasks.add(r);
        sel.wakeup();
    }

    boolean inLoop() {
        return Thread.currentThread() == thread;
    }

    CompletableFuture<SelectionKey> register(SocketChannel ch, Conn conn) {
        CompletableFuture<SelectionKey> f = new CompletableFuture<>();
        execute(() -> {
            try {
                f.complete(ch.register(sel, SelectionKey.OP_READ, conn));
            } catch (ClosedChannelException e) {
                f.completeExceptionally(e);
            }
        });
        return f;
    }

    void close() {
        open = false;
        sel.wakeup();
    }

    @Override
    public void run() {
        try {
            while (open) {
                sel.select(1000);
                Runnable r;
                while ((r = tasks.poll()) != null) {
                    try {
                        r.run();
                    } catch (RuntimeException e) {
                        e.printStackTrace();
                    }
                }
                for (SelectionKey k : sel.selectedKeys()) {
                    Conn c = (Conn) k.attachment();
                    try {
                        if (k.isValid() && k.isWritable()) {
                            c.onWritable(k);
                        }
                        if (k.isValid() && k.isReadable()) {
                            c.onReadable(k);
                        }
                    } catch (java.nio.channels.CancelledKeyException e) {
                        // closed meanwhile
                    }
                }
                sel.selectedKeys().clear();
            }
        } catch (IOException e) {
            e.printStackTrace();
        } finally {
            try {
                sel.close();
            } catch (IOException e) {
                // nothing left to do
            }
        }
    }
}
