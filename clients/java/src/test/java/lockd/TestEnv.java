package lockd;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The real parts every test runs against, started once per JVM:
 * clients/testenv.sh's three redis-server masters and two lockd (A, B).
 * Stopped when the whole run ends (a resource in JUnit's root store), and
 * by a shutdown hook if the JVM ends otherwise.
 */
public final class TestEnv implements BeforeAllCallback, ExtensionContext.Store.CloseableResource {
    private static TestEnv env;
    private static Thread hook;
    static Map<String, String> vars = new HashMap<>();
    static Path dir;
    private static final Path SCRIPT = Paths.get(System.getProperty("lockd.testenv", "../testenv.sh"));

    static void run(String... args) {
        String[] cmd = new String[args.length + 2];
        cmd[0] = "bash";
        cmd[1] = SCRIPT.toString();
        System.arraycopy(args, 0, cmd, 2, args.length);
        try {
            Process p = new ProcessBuilder(cmd).inheritIO().start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("testenv " + args[0] + " hung");
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException("testenv " + String.join(" ", args) + " failed: " + p.exitValue());
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public synchronized void beforeAll(ExtensionContext ctx) throws Exception {
        synchronized (TestEnv.class) {
            if (env != null) {
                return;
            }
            String given = System.getProperty("lockd.testenv.dir");
            if (given != null) {
                // run-tests.sh started it and stops it from a trap, even if this JVM dies.
                dir = Paths.get(given);
            } else {
                dir = Files.createTempDirectory("lockd-java-test-");
                hook = new Thread(() -> run("stop", dir.toString()));
                Runtime.getRuntime().addShutdownHook(hook);
                try {
                    run("start", dir.toString());
                } catch (RuntimeException e) {
                    run("stop", dir.toString());
                    throw e;
                }
                ctx.getRoot().getStore(ExtensionContext.Namespace.GLOBAL).put("lockd-testenv", this);
            }
            for (String l : Files.readAllLines(dir.resolve("env"))) {
                int eq = l.indexOf('=');
                if (eq > 0) {
                    vars.put(l.substring(0, eq), l.substring(eq + 1));
                }
            }
            env = this;
        }
    }

    @Override
    public void close() throws IOException {
        run("stop", dir.toString());
        Runtime.getRuntime().removeShutdownHook(hook);
        try (var paths = Files.walk(dir)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    static String a() {
        return vars.get("LOCKD_A");
    }

    static String b() {
        return vars.get("LOCKD_B");
    }

    /** One line on a fresh raw connection, its reply. */
    static String probe(String addr, String line) throws IOException {
        int colon = addr.lastIndexOf(':');
        try (Socket s = new Socket(addr.substring(0, colon), Integer.parseInt(addr.substring(colon + 1)))) {
            s.setSoTimeout(5000);
            PrintWriter w = new PrintWriter(s.getOutputStream(), true, StandardCharsets.US_ASCII);
            w.print(line + "\r\n");
            w.flush();
            return new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII))
                    .readLine();
        }
    }

    static void need12() throws IOException {
        Assumptions.assumeFalse(probe(a(), "SESSION").startsWith("ERR PROTOCOL"),
                "lockd does not speak 1.2/1.3 yet (SESSION answered ERR PROTOCOL)");
    }

    static void need13() throws IOException {
        Assumptions.assumeFalse(probe(a(), "LEADER probe").startsWith("ERR PROTOCOL"),
                "lockd does not speak 1.2/1.3 yet (LEADER answered ERR PROTOCOL)");
    }

    /**
     * Polls until lockd A and B grant again (after masters came back: each
     * lockd reconnects on its own schedule), at most 15 s.
     */
    static void waitHealthy() throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        for (String addr : new String[] {a(), b()}) {
            while (!probe(addr, "TRYLOCK ~healthy TTL 100").startsWith("OK")) {
                if (System.nanoTime() > end) {
                    throw new AssertionError("lockd " + addr + " grants nothing 15 s after the masters came back");
                }
                Thread.sleep(100);
            }
        }
    }

    /** Polls cond every 20 ms for at most ms. */
    static void waitFor(long ms, java.util.function.BooleanSupplier cond) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (System.nanoTime() < end) {
            if (cond.getAsBoolean()) {
                return;
            }
            Thread.sleep(20);
        }
        throw new AssertionError("condition not met within " + ms + " ms");
    }
}
