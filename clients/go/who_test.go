package lockd

import (
	"errors"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// WHO's reply parser on canned lines, DELAYED included (lockd does not
// send it yet); then Who against the real masters and two real lockd.

func TestParseWho(t *testing.T) {
	w, err := parseWho([]string{
		"HOLDER 12 exclusive lockd=h:7390 client=127.0.0.1:5555 session=s1 held_ms=0",
		"HOLDER 13 shared lockd=lockd-b",
		"HOLDER 14 permit=2/5 lockd=- client=- session=- held_ms=1500",
		"HOLDER 18446744073709551615 permit=0/- lockd=-",
		"DELAYED 250 16",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := WhoReply{
		Holders: []Holder{
			{Fence: 12, Kind: KindExclusive, Lockd: "h:7390", Client: "127.0.0.1:5555", Session: "s1", HasHeld: true},
			{Fence: 13, Kind: KindShared, Lockd: "lockd-b"},
			{Fence: 14, Kind: KindPermit, Permit: 2, Permits: 5, Lockd: "-", Client: "-", Session: "-", Held: 1500 * time.Millisecond, HasHeld: true},
			{Fence: 18446744073709551615, Kind: KindPermit, Lockd: "-"},
		},
		Delayed: &Delayed{Left: 250 * time.Millisecond, Fence: 16},
	}
	if !reflect.DeepEqual(w, want) {
		t.Fatalf("got %+v\nwant %+v", w, want)
	}
	if w.Free() {
		t.Error("Free() with holders")
	}
	if w, err := parseWho(nil); err != nil || !w.Free() {
		t.Errorf("no lines: %+v %v, want a free key", w, err)
	}
	w, err = parseWho([]string{"DELAYED 0 9"})
	if err != nil || w.Free() || len(w.Holders) != 0 || *w.Delayed != (Delayed{Fence: 9}) {
		t.Errorf("DELAYED 0 9: %+v %v", w, err)
	}
}

func TestParseWhoIgnoresUnknownTokens(t *testing.T) {
	w, err := parseWho([]string{"HOLDER 7 exclusive lockd=a future=1 client=x:1 later=a=b", "DELAYED 5 8 why=lapsed"})
	want := WhoReply{
		Holders: []Holder{{Fence: 7, Kind: KindExclusive, Lockd: "a", Client: "x:1"}},
		Delayed: &Delayed{Left: 5 * time.Millisecond, Fence: 8},
	}
	if err != nil || !reflect.DeepEqual(w, want) {
		t.Fatalf("got %+v %v, want %+v", w, err, want)
	}
}

func TestParseWhoRefusesWhatItDoesNotKnow(t *testing.T) {
	for _, lines := range [][]string{
		{"OWNER 7 exclusive lockd=a"},
		{"HOLDER"},
		{"HOLDER 7 exclusive"},
		{"HOLDER x exclusive lockd=a"},
		{"HOLDER -7 exclusive lockd=a"},
		{"HOLDER +7 exclusive lockd=a"},
		{"HOLDER 18446744073709551616 exclusive lockd=a"},
		{"HOLDER 7 sole lockd=a"},
		{"HOLDER 7 permit=2 lockd=a"},
		{"HOLDER 7 permit=/3 lockd=a"},
		{"HOLDER 7 exclusive lockd=a held_ms=1.5"},
		{"HOLDER 7 exclusive lockd=a stray"},
		{"DELAYED 5"},
		{"DELAYED x 5"},
		{"DELAYED 5 8", "DELAYED 4 8"},
		{"ERR QUORUM late"},
	} {
		_, err := parseWho(lines)
		var e *Error
		if !errors.Is(err, ErrProtocol) || !errors.As(err, &e) || e.Code != "PROTOCOL" {
			t.Errorf("%q: %v, want ErrProtocol", lines, err)
		}
	}
}

func need14(t *testing.T) {
	if strings.HasPrefix(probe(t, env["LOCKD_A"], "WHO probe"), "ERR PROTOCOL") {
		t.Skip("lockd does not speak 1.4 WHO yet (WHO answered ERR PROTOCOL)")
	}
}

// nameOf is lockd's default name: HOST:PORT of its first listen address.
func nameOf(t *testing.T, addr string) string {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return host + addr[strings.LastIndex(addr, ":"):]
}

// An exclusive hold seen from its lockd (client, session, held) and from
// the other (the name only), a free key, shared holders, permits.
func TestWho(t *testing.T) {
	need14(t)
	ca, cb := dial(t, env["LOCKD_A"]), dial(t, env["LOCKD_B"])
	ctx := tctx(t, 30*time.Second)
	nameA, nameB := nameOf(t, env["LOCKD_A"]), nameOf(t, env["LOCKD_B"])
	if w, err := ca.Who(ctx, "go-who"); err != nil || !w.Free() || w.Holders != nil {
		t.Fatalf("free key: %+v %v", w, err)
	}
	l, err := ca.Lock(ctx, "go-who", Wait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	w, err := ca.Who(ctx, "go-who")
	if err != nil || len(w.Holders) != 1 {
		t.Fatalf("here: %+v %v", w, err)
	}
	h := w.Holders[0]
	local := l.cn.nc.LocalAddr().String()
	if h.Fence != l.Fence() || h.Kind != KindExclusive || h.Lockd != nameA || h.Client != local ||
		h.Session == "" || !h.HasHeld || h.Held < 0 || h.Held > 10*time.Second {
		t.Errorf("here: %+v, want fence %d, %s, client %s, a session, held", h, l.Fence(), nameA, local)
	}
	w, err = cb.Who(ctx, "go-who")
	if err != nil || len(w.Holders) != 1 || w.Delayed != nil {
		t.Fatalf("there: %+v %v", w, err)
	}
	g := w.Holders[0]
	if g.Fence < l.Fence() || (g != Holder{Fence: g.Fence, Kind: KindExclusive, Lockd: nameA}) {
		t.Errorf("there: %+v, want fence >= %d, %s, nothing else", g, l.Fence(), nameA)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if w, err := cb.Who(ctx, "go-who"); err != nil || !w.Free() {
		t.Errorf("after Unlock: %+v %v", w, err)
	}

	sa, err := ca.Lock(ctx, "go-who-shared", Shared(), Wait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := cb.Lock(ctx, "go-who-shared", Shared(), Wait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	w, err = ca.Who(ctx, "go-who-shared")
	if err != nil || len(w.Holders) != 2 {
		t.Fatalf("shared: %+v %v", w, err)
	}
	names := []string{w.Holders[0].Lockd, w.Holders[1].Lockd}
	sort.Strings(names)
	want := []string{nameA, nameB}
	sort.Strings(want)
	if w.Holders[0].Kind != KindShared || w.Holders[1].Kind != KindShared || !reflect.DeepEqual(names, want) {
		t.Errorf("shared: %+v", w)
	}
	sa.Unlock(ctx)
	sb.Unlock(ctx)

	p0, err := ca.Lock(ctx, "go-who-permits", Permits(3), Wait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	p1, err := cb.Lock(ctx, "go-who-permits", Permits(3), Wait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	w, err = cb.Who(ctx, "go-who-permits")
	if err != nil || len(w.Holders) != 2 {
		t.Fatalf("permits: %+v %v", w, err)
	}
	got := []int{w.Holders[0].Permit, w.Holders[1].Permit}
	sort.Ints(got)
	for _, x := range w.Holders {
		if x.Kind != KindPermit || x.Permits != 3 {
			t.Errorf("permits: %+v", x)
		}
	}
	if !reflect.DeepEqual(got, []int{0, 1}) {
		t.Errorf("permits held: %v, want [0 1]", got)
	}
	p0.Unlock(ctx)
	p1.Unlock(ctx)
}
