package lockd;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** The README's example: run with the address of a lockd. */
public final class Example {
    public static void main(String[] args) throws Exception {
        try (LockdClient c = LockdClient.connect(args.length > 0 ? args[0] : "127.0.0.1:7390")) {
            DistributedLock lock = c.getLock("nightly-report");
            lock.onLost(h -> System.err.println("lost " + h.key() + ": stop writing"));
            if (!lock.tryLock(5, TimeUnit.SECONDS)) {
                System.out.println("someone else is running it");
                return;
            }
            try {
                long fence = lock.fence(); // pass it to the storage you write
                lock.checkHeld(); // LockLostException if the lock was lost meanwhile
                System.out.println("report written under fence " + fence);
            } finally {
                lock.unlock();
            }
            try (LockHandle h = c.acquire("nightly-report", Duration.ofSeconds(5))) {
                System.out.println("again, handle fence " + h.fence());
            }
            // who holds the nightly job's lock, on which lockd, from where, since when (1.4)
            try (LockHandle h = c.acquire("nightly-job", Duration.ofSeconds(5))) {
                for (WhoReply.Holder w : c.who("nightly-job").holders()) {
                    System.out.println("fence " + w.fence() + " " + w.kind() + " on " + w.lockd() + " from "
                            + w.client().orElse("another lockd") + ", held " + w.heldMillis().orElse(-1) + " ms");
                }
            }
        }
    }
}
