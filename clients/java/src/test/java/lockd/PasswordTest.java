package lockd;

import static org.junit.jupiter.api.Assertions.*;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/** One more real lockd on the same masters, with a password: AUTH on every connection. */
@ExtendWith(TestEnv.class)
@Timeout(60)
class PasswordTest {
    @Test
    void passwordIsSentOnEveryConnection() throws Exception {
        Path dir = Files.createTempDirectory("lockd-java-pw-");
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String conf = String.format("listen: [\"127.0.0.1:%d\"]%npassword: \"s3cret\"%nredis:%n"
                + "  masters: [\"127.0.0.1:%s\", \"127.0.0.1:%s\", \"127.0.0.1:%s\"]%n  timeout_ms: 100%n"
                + "locks:%n  lease_ms: 3000%n", port, TestEnv.vars.get("MASTER0"), TestEnv.vars.get("MASTER1"),
                TestEnv.vars.get("MASTER2"));
        Files.writeString(dir.resolve("lockd.yml"), conf);
        String bin = System.getenv().getOrDefault("LOCKD_BIN", "../../lockd");
        Process p = new ProcessBuilder(bin, "-c", dir.resolve("lockd.yml").toString())
                .redirectErrorStream(true).redirectOutput(dir.resolve("log").toFile()).start();
        try {
            String addr = "127.0.0.1:" + port;
            LockdClient c = null;
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (c == null) {
                try {
                    c = LockdClient.builder().address(addr).password("s3cret").build();
                } catch (LockdException e) {
                    if (System.nanoTime() > end) {
                        throw new AssertionError("no lockd with a password: " + Files.readString(dir.resolve("log")), e);
                    }
                    Thread.sleep(50);
                }
            }
            try (LockdClient cc = c) {
                LockdClient fc = cc;
                TestEnv.waitFor(5000, () -> fc.tryAcquire("java-pw").map(h -> {
                    h.close();
                    return true;
                }).orElse(false));
                DistributedLock a = cc.getLock("java-pw"), b = cc.getLock("java-pw2");
                a.lock();
                b.lock(); // a second connection, authenticated as well
                b.unlock();
                a.unlock();
            }
            LockdException e = assertThrows(LockdException.class,
                    () -> LockdClient.builder().address(addr).password("wrong").build());
            assertEquals("AUTH", e.code());
        } finally {
            p.destroyForcibly();
            p.waitFor(5, TimeUnit.SECONDS);
            try (var paths = Files.walk(dir)) {
                paths.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }
}
