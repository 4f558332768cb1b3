package lockd;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Measures the Java client against a running lockd: uncontended
 * lock/unlock cycles per second on one thread, and the handoff between two
 * threads holding one key in turns (from UNLOCK sent by one to the grant
 * seen by the other), as lockd-benchmark's "handoff" scenario does.
 *
 * <pre>java -cp CLASSES lockd.Bench 127.0.0.1:7390 5</pre>
 */
public final class Bench {
    private static final Object MU = new Object();
    private static long sent; // nanoTime of the last UNLOCK sent; 0 when none pending

    public static void main(String[] args) throws Exception {
        String addr = args.length > 0 ? args[0] : "127.0.0.1:7390";
        long secs = args.length > 1 ? Long.parseLong(args[1]) : 5;
        try (LockdClient c = LockdClient.connect(addr)) {
            DistributedLock l = c.getLock("javabench-uncontended");
            for (int i = 0; i < 2000; i++) { // warm up the JIT
                l.lock();
                l.unlock();
            }
            long n = 0, t0 = System.nanoTime(), end = t0 + secs * 1_000_000_000L;
            while (System.nanoTime() < end) {
                l.lock();
                l.unlock();
                n++;
            }
            double s = (System.nanoTime() - t0) / 1e9;
            System.out.printf("uncontended: %d cycles in %.1f s = %.0f cycles/s%n", n, s, n / s);

            List<Long> gaps = Collections.synchronizedList(new ArrayList<>());
            long hend = System.nanoTime() + secs * 1_000_000_000L;
            DistributedLock h = c.getLock("javabench-handoff");
            Runnable r = () -> {
                while (System.nanoTime() < hend) {
                    h.lock();
                    synchronized (MU) {
                        if (sent != 0) {
                            gaps.add(System.nanoTime() - sent);
                        }
                        sent = 0;
                    }
                    try {
                        Thread.sleep(1); // let the other one queue
                    } catch (InterruptedException e) {
                        return;
                    }
                    synchronized (MU) {
                        sent = System.nanoTime();
                    }
                    h.unlock();
                }
            };
            Thread a = new Thread(r), b = new Thread(r);
            a.start();
            b.start();
            a.join();
            b.join();
            List<Long> g = new ArrayList<>(gaps);
            Collections.sort(g);
            if (!g.isEmpty()) {
                System.out.printf("handoff: %d handoffs, p50 %.2f ms, p99 %.2f ms, max %.2f ms%n", g.size(),
                        g.get((int) (0.5 * (g.size() - 1))) / 1e6, g.get((int) (0.99 * (g.size() - 1))) / 1e6,
                        g.get(g.size() - 1) / 1e6);
            }
        }
    }
}
