package lockd;

import static org.junit.jupiter.api.Assertions.*;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An observation whose restarts keep failing: one restart loop at a time,
 * its tries backing off (100 ms, doubling to 2 s), however often they
 * fail. Against a fake lockd that knows only OBSERVE, so that the test
 * decides when OBSERVE fails.
 */
@Timeout(60)
class ObservationTest {
    static final String NAME = "java-observe-restart";

    /**
     * Answers OBSERVE with OK and an ELECTED event, or with ERR QUORUM
     * while refusing; counts the OBSERVEs and keeps the connections that
     * observe (until they close).
     */
    static final class FakeLockd implements AutoCloseable {
        final ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        final AtomicInteger observes = new AtomicInteger();
        final List<Socket> watching = new CopyOnWriteArrayList<>();
        volatile boolean refuse;

        FakeLockd() throws IOException {
            Thread t = new Thread(this::accept, "fake-lockd");
            t.setDaemon(true);
            t.start();
        }

        String address() {
            return "127.0.0.1:" + ss.getLocalPort();
        }

        private void accept() {
            while (!ss.isClosed()) {
                try {
                    Socket s = ss.accept();
                    Thread t = new Thread(() -> serve(s), "fake-lockd-conn");
                    t.setDaemon(true);
                    t.start();
                } catch (IOException e) {
                    // closed
                }
            }
        }

        private void serve(Socket s) {
            try (s) {
                BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII));
                OutputStream out = s.getOutputStream();
                String line;
                while ((line = in.readLine()) != null) {
                    out.write(reply(s, line).getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                }
            } catch (IOException e) {
                // closed
            } finally {
                watching.remove(s);
            }
        }

        private String reply(Socket s, String line) {
            if (!line.startsWith("OBSERVE ")) {
                return "ERR PROTOCOL unknown command\r\n";
            }
            observes.incrementAndGet();
            if (refuse) {
                return "ERR QUORUM no majority of the masters answered\r\n";
            }
            watching.add(s);
            return "OK\r\nELECTED " + NAME + " 7 v\r\n";
        }

        /** Closes the connections that observe, as a lockd that went away. */
        void drop() throws IOException {
            for (Socket s : watching) {
                s.close();
            }
        }

        @Override
        public void close() throws IOException {
            ss.close();
            drop();
        }
    }

    /**
     * One loop's tries come at about 0, 0.1, 0.3, 0.7, 1.5 and 3.1 s after
     * the drop: at most 6 in 3 s, fewer on a busy machine. Loops that
     * multiply (each failed try starting one more) make hundreds.
     */
    @Test
    void oneRestartLoopWhileRestartsFail() throws Exception {
        try (FakeLockd f = new FakeLockd();
                LockdClient c = LockdClient.builder().address(f.address()).resume(false).build()) {
            List<Leader> seen = Collections.synchronizedList(new ArrayList<>());
            Observation o = c.observe(NAME, seen::add);
            TestEnv.waitFor(3000, () -> seen.size() == 1);
            f.refuse = true;
            int before = f.observes.get();
            f.drop();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            int tries;
            do {
                tries = f.observes.get() - before;
                assertTrue(tries <= 10, tries + " restart tries within 3 s: restart loops multiply");
                Thread.sleep(10);
            } while (System.nanoTime() < end);
            System.out.printf("observation restarts: %d tries in 3 s%n", tries);
            assertTrue(tries >= 2, "the observation is restarted (" + tries + " tries in 3 s)");
            f.refuse = false;
            TestEnv.waitFor(6000, () -> seen.size() == 2); // the next try (at most 2 s later) works
            Thread.sleep(500);
            assertEquals(1, f.watching.size(), "connections observing after the restart");
            assertEquals(2, seen.size(), "events seen: " + seen);
            o.close();
            TestEnv.waitFor(3000, f.watching::isEmpty);
        }
    }
}
