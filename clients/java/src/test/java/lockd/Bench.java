package lockd;

import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Measures the Java client against a running lockd: uncontended
 * lock/unlock cycles per second on one thread, with the local deadline's
 * heartbeat (the default) and without it (two rounds each, interleaved);
 * the heartbeat's cost in requests per second per held lock; and the
 * handoff between two threads holding one key in turns (from UNLOCK sent
 * by one to the grant seen by the other), as lockd-benchmark's "handoff"
 * scenario does.
 *
 * <pre>java -cp CLASSES lockd.Bench 127.0.0.1:7390 5 [CA.pem]</pre>
 *
 * With CA.pem, it speaks TLS, trusting that CA.
 */
public final class Bench {
    private static final Object MU = new Object();
    private static long sent; // nanoTime of the last UNLOCK sent; 0 when none pending

    static LockdClient client(String addr, String ca, boolean heartbeat) {
        LockdClient.Builder b = LockdClient.builder().address(addr).heartbeat(heartbeat);
        if (ca != null) {
            b.tls(LockdClient.tlsContext(Paths.get(ca), null, null));
        }
        return b.build();
    }

    static double uncontended(LockdClient c, long secs) {
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
        return n / ((System.nanoTime() - t0) / 1e9);
    }

    public static void main(String[] args) throws Exception {
        String addr = args.length > 0 ? args[0] : "127.0.0.1:7390";
        long secs = args.length > 1 ? Long.parseLong(args[1]) : 5;
        String ca = args.length > 2 ? args[2] : null;
        try (LockdClient on = client(addr, ca, true); LockdClient off = client(addr, ca, false)) {
            double[] sum = new double[2];
            for (int round = 0; round < 2; round++) {
                sum[0] += uncontended(on, secs);
                sum[1] += uncontended(off, secs);
            }
            System.out.printf("uncontended: %.0f cycles/s with the heartbeat, %.0f without (%.0f %%)%n", sum[0] / 2,
                    sum[1] / 2, 100 * sum[0] / sum[1]);

            List<LockHandle> held = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                held.add(on.acquire("javabench-held-" + i, java.time.Duration.ofSeconds(5)));
            }
            long b0 = on.heartbeats.get(), t0 = System.nanoTime();
            Thread.sleep(2 * secs * 1000);
            double s = (System.nanoTime() - t0) / 1e9;
            System.out.printf("heartbeat: %.2f HELD requests/s per held lock (10 locks held %.0f s)%n",
                    (on.heartbeats.get() - b0) / s / held.size(), s);
            for (LockHandle h : held) {
                h.close();
            }

            List<Long> gaps = Collections.synchronizedList(new ArrayList<>());
            long hend = System.nanoTime() + secs * 1_000_000_000L;
            DistributedLock h = on.getLock("javabench-handoff");
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
