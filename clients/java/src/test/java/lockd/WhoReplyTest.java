package lockd;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import lockd.WhoReply.Delayed;
import lockd.WhoReply.Holder;
import lockd.WhoReply.Kind;
import org.junit.jupiter.api.Test;

/** WHO's reply parser on canned lines, DELAYED included (lockd does not send it yet). */
class WhoReplyTest {
    static Holder elsewhere(long fence, Kind kind, String lockd) {
        return new Holder(fence, kind, OptionalInt.empty(), OptionalInt.empty(), lockd, Optional.empty(),
                Optional.empty(), OptionalLong.empty());
    }

    @Test
    void holdersOfEveryKindAndDelayed() {
        WhoReply w = WhoReply.parse(List.of(
                "HOLDER 12 exclusive lockd=h:7390 client=127.0.0.1:5555 session=s1 held_ms=0",
                "HOLDER 13 shared lockd=lockd-b",
                "HOLDER 14 permit=2/5 lockd=- client=- session=- held_ms=1500",
                "HOLDER 18446744073709551615 permit=0/- lockd=-",
                "DELAYED 250 16"));
        assertEquals(List.of(
                new Holder(12, Kind.EXCLUSIVE, OptionalInt.empty(), OptionalInt.empty(), "h:7390",
                        Optional.of("127.0.0.1:5555"), Optional.of("s1"), OptionalLong.of(0)),
                elsewhere(13, Kind.SHARED, "lockd-b"),
                new Holder(14, Kind.PERMIT, OptionalInt.of(2), OptionalInt.of(5), "-", Optional.of("-"),
                        Optional.of("-"), OptionalLong.of(1500)),
                new Holder(-1, Kind.PERMIT, OptionalInt.of(0), OptionalInt.empty(), "-", Optional.empty(),
                        Optional.empty(), OptionalLong.empty())),
                w.holders());
        assertEquals("18446744073709551615", Long.toUnsignedString(w.holders().get(3).fence()));
        assertEquals(Optional.of(new Delayed(250, 16)), w.delayed());
        assertFalse(w.free());
        assertThrows(UnsupportedOperationException.class, () -> w.holders().clear());
        assertTrue(WhoReply.parse(List.of()).free());
        WhoReply d = WhoReply.parse(List.of("DELAYED 0 9"));
        assertEquals(new WhoReply(List.of(), Optional.of(new Delayed(0, 9))), d);
        assertFalse(d.free());
    }

    @Test
    void ignoresTokensItDoesNotKnow() {
        WhoReply w = WhoReply.parse(List.of("HOLDER 7 exclusive lockd=a future=1 client=x:1 later=a=b",
                "DELAYED 5 8 why=lapsed"));
        assertEquals(List.of(new Holder(7, Kind.EXCLUSIVE, OptionalInt.empty(), OptionalInt.empty(), "a",
                Optional.of("x:1"), Optional.empty(), OptionalLong.empty())), w.holders());
        assertEquals(Optional.of(new Delayed(5, 8)), w.delayed());
    }

    @Test
    void refusesWhatItDoesNotKnow() {
        List<List<String>> bad = List.of(
                List.of("OWNER 7 exclusive lockd=a"),
                List.of("HOLDER"),
                List.of("HOLDER 7 exclusive"),
                List.of("HOLDER x exclusive lockd=a"),
                List.of("HOLDER -7 exclusive lockd=a"),
                List.of("HOLDER +7 exclusive lockd=a"),
                List.of("HOLDER 18446744073709551616 exclusive lockd=a"),
                List.of("HOLDER 7 sole lockd=a"),
                List.of("HOLDER 7 permit=2 lockd=a"),
                List.of("HOLDER 7 permit=/3 lockd=a"),
                List.of("HOLDER 7 exclusive lockd=a held_ms=1.5"),
                List.of("HOLDER 7 exclusive lockd=a stray"),
                List.of("DELAYED 5"),
                List.of("DELAYED x 5"),
                List.of("DELAYED 5 8", "DELAYED 4 8"),
                List.of("ERR QUORUM late"));
        for (List<String> lines : bad) {
            LockdException e = assertThrows(LockdException.class, () -> WhoReply.parse(lines), lines.toString());
            assertEquals("PROTOCOL", e.code(), lines.toString());
        }
    }
}
