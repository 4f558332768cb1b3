package lockd;

import static org.junit.jupiter.api.Assertions.*;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.stream.Collectors;
import lockd.WhoReply.Holder;
import lockd.WhoReply.Kind;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/** who(key) against the real masters and two real lockd. */
@ExtendWith(TestEnv.class)
@Timeout(60)
class WhoTest {
    LockdClient ca, cb;

    @BeforeEach
    void connect() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeFalse(TestEnv.probe(TestEnv.a(), "WHO probe").startsWith("ERR PROTOCOL"),
                "lockd does not speak 1.4 WHO yet (WHO answered ERR PROTOCOL)");
        ca = LockdClient.connect(TestEnv.a());
        cb = LockdClient.connect(TestEnv.b());
    }

    @AfterEach
    void close() {
        if (ca != null) {
            ca.close();
            cb.close();
        }
    }

    /** lockd's default name: HOST:PORT of its first listen address (HOST as gethostname(2) says). */
    static String nameOf(String addr) throws Exception {
        Path uts = Path.of("/proc/sys/kernel/hostname");
        String host = Files.exists(uts) ? Files.readString(uts).trim() : InetAddress.getLocalHost().getHostName();
        return host + addr.substring(addr.lastIndexOf(':'));
    }

    /** An exclusive hold seen from its lockd (client, session, held) and from the other (its name only); a free key. */
    @Test
    void exclusiveHereAndElsewhere() throws Exception {
        assertEquals(new WhoReply(List.of(), Optional.empty()), ca.who("java-who"));
        try (LockHandle l = ca.acquire("java-who", Duration.ofSeconds(5))) {
            WhoReply here = ca.who("java-who");
            assertEquals(1, here.holders().size(), here.toString());
            Holder h = here.holders().get(0);
            InetSocketAddress local = (InetSocketAddress) l.conn.localAddress();
            String client = local.getAddress().getHostAddress() + ":" + local.getPort();
            assertEquals(l.fence(), h.fence());
            assertEquals(Kind.EXCLUSIVE, h.kind());
            assertEquals(nameOf(TestEnv.a()), h.lockd());
            assertEquals(Optional.of(client), h.client());
            assertTrue(h.session().isPresent(), h.toString());
            assertTrue(h.heldMillis().isPresent() && h.heldMillis().getAsLong() < 10000, h.toString());

            WhoReply there = cb.who("java-who");
            assertEquals(1, there.holders().size(), there.toString());
            Holder g = there.holders().get(0);
            assertTrue(g.fence() >= l.fence(), g.toString());
            assertEquals(new Holder(g.fence(), Kind.EXCLUSIVE, OptionalInt.empty(), OptionalInt.empty(),
                    nameOf(TestEnv.a()), Optional.empty(), Optional.empty(), OptionalLong.empty()), g);
            assertTrue(there.delayed().isEmpty());
        }
        assertTrue(cb.who("java-who").free());
    }

    /** Shared holders on both lockd; permits of 3 on both. */
    @Test
    void sharedAndPermits() throws Exception {
        LockdReadWriteLock ra = ca.getReadWriteLock("java-who-rw"), rb = cb.getReadWriteLock("java-who-rw");
        ra.readLock().lock();
        rb.readLock().lock();
        try {
            WhoReply w = ca.who("java-who-rw");
            assertEquals(List.of(Kind.SHARED, Kind.SHARED),
                    w.holders().stream().map(Holder::kind).collect(Collectors.toList()));
            assertEquals(List.of(nameOf(TestEnv.a()), nameOf(TestEnv.b())).stream().sorted().collect(Collectors.toList()),
                    w.holders().stream().map(Holder::lockd).sorted().collect(Collectors.toList()));
        } finally {
            ra.readLock().unlock();
            rb.readLock().unlock();
        }
        try (LockHandle p0 = ca.getSemaphore("java-who-sem", 3).acquire();
                LockHandle p1 = cb.getSemaphore("java-who-sem", 3).acquire()) {
            WhoReply w = cb.who("java-who-sem");
            assertEquals(List.of("0/3", "1/3"), w.holders().stream()
                    .peek(x -> assertEquals(Kind.PERMIT, x.kind()))
                    .map(x -> x.permit().getAsInt() + "/" + x.permits().getAsInt())
                    .sorted().collect(Collectors.toList()));
        }
    }
}
