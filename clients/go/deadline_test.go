package lockd

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The README's promise about the local deadline, word for word (blanks
// normalised); the tests below assert the bound it names: a loss is
// reported no later than the lease after the request that confirmed the
// validity was sent, hence no later than grant time + lease for a lock
// that got no later confirmation.
const readmeDeadline = "A lock is reported lost (`Done()` closed, `Err()` returning `ErrLost`, " +
	"`Held()` false) before the validity lockd last confirmed runs out, so no later than " +
	"the lease after the request that confirmed it was sent (the grant, a heartbeat, an " +
	"Extend), even when lockd is frozen, killed with no other lockd to resume on, or cut off."

func lease(t *testing.T) time.Duration {
	n, err := strconv.Atoi(env["LEASE_MS"])
	if err != nil {
		t.Fatalf("LEASE_MS %q: %v", env["LEASE_MS"], err)
	}
	return time.Duration(n) * time.Millisecond
}

// lossAt returns a channel that gets the time the hold's Done closed.
func lossAt(h *hold) <-chan time.Time {
	ch := make(chan time.Time, 1)
	go func() { <-h.Done(); ch <- time.Now() }()
	return ch
}

// wantLostBy waits for the loss notice and checks it came no later than
// bound, and that the hold reads lost as after a LOST event.
func wantLostBy(t *testing.T, l *Lock, at <-chan time.Time, bound time.Time) time.Time {
	t.Helper()
	var got time.Time
	select {
	case got = <-at:
	case <-time.After(time.Until(bound) + 2*time.Second):
		t.Fatalf("no loss notice 2 s after grant + lease (Held %v, Err %v)", l.Held(), l.Err())
	}
	if got.After(bound) {
		t.Errorf("loss reported %v after grant + lease", got.Sub(bound))
	}
	if l.Held() || !errors.Is(l.Err(), ErrLost) {
		t.Errorf("after the loss notice: Held %v, Err %v; want false, ErrLost", l.Held(), l.Err())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.Unlock(ctx); !errors.Is(err, ErrLost) {
		t.Errorf("Unlock after the loss: %v, want ErrLost", err)
	}
	return got
}

func TestReadmeDeadlineSentence(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ")
	if !strings.Contains(readme, readmeDeadline) {
		t.Errorf("README.md lacks the sentence on the local deadline:\n%s", readmeDeadline)
	}
	if !strings.Contains(readme, "(../../doc/protocol.md)") {
		t.Errorf("README.md does not link ../../doc/protocol.md")
	}
	if _, err := os.Stat("../../doc/protocol.md"); err != nil {
		t.Errorf("the README's protocol link: %v", err)
	}
	if regexp.MustCompile(`PROTOCOL\.md`).MatchString(readme) {
		t.Errorf("README.md still names PROTOCOL.md, which does not exist")
	}
}

// (a) lockd frozen (SIGSTOP, its connections open): the lock is reported
// lost no later than grant + lease, while lockd says nothing.
func TestDeadlineFrozenLockd(t *testing.T) {
	c := dial(t, env["LOCKD_A"])
	ctx := tctx(t, 20*time.Second)
	l, err := c.Lock(ctx, "go-frozen")
	if err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	at := lossAt(l.hold)
	t.Cleanup(func() {
		testenv("lockd-cont", envDir, "a")
		waitHealthy(t)
	})
	if err := testenv("lockd-stop", envDir, "a"); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	got := wantLostBy(t, l, at, granted.Add(lease(t)))
	t.Logf("frozen lockd: loss reported %v after the SIGSTOP, %v after the grant (grant + lease: %v)",
		got.Sub(stopped).Round(time.Millisecond), got.Sub(granted).Round(time.Millisecond), lease(t))
}

// (b) lockd killed, no other lockd known: the client tries to resume, and
// the deadline applies meanwhile (issue 29 item 2): the loss is reported
// no later than grant + lease, not at the end of the resume window.
func TestDeadlineKilledLockdWhileResuming(t *testing.T) {
	need12(t)
	c := dial(t, env["LOCKD_A"])
	ctx := tctx(t, 20*time.Second)
	l, err := c.Lock(ctx, "go-killed")
	if err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	at := lossAt(l.hold)
	t.Cleanup(func() {
		testenv("lockd-start", envDir, "a")
		waitHealthy(t)
	})
	before := time.Now()
	if err := testenv("lockd-kill", envDir, "a"); err != nil {
		t.Fatal(err)
	}
	got := wantLostBy(t, l, at, granted.Add(lease(t)))
	t.Logf("killed lockd: loss reported at most %v after the SIGKILL, %v after the grant (grant + lease: %v)",
		got.Sub(before).Round(time.Millisecond), got.Sub(granted).Round(time.Millisecond), lease(t))
}

// (c) the network between client and lockd cut (a proxy that stops
// forwarding, connections left open). A lock held past its first
// deadline shows the heartbeat at work (and its cost); a lock granted
// just before the cut is reported lost no later than grant + lease, and
// the older one no later than the cut + lease.
func TestDeadlineCutLink(t *testing.T) {
	p := newProxy(t, env["LOCKD_A"])
	c := dial(t, p.addr())
	ctx := tctx(t, 30*time.Second)
	old, err := c.Lock(ctx, "go-cut-old")
	if err != nil {
		t.Fatal(err)
	}
	held0, t0 := p.helds(), time.Now()
	time.Sleep(lease(t) + lease(t)/6)
	if !old.Held() {
		t.Fatalf("a healthy lock was reported lost after %v: %v", time.Since(t0), old.Err())
	}
	beats := p.helds() - held0
	per := float64(beats) / time.Since(t0).Seconds()
	t.Logf("heartbeat: %d HELD in %v for one held lock: %.2f requests/s per held lock (lease %v)",
		beats, time.Since(t0).Round(time.Millisecond), per, lease(t))
	// lockd renews every lease/3; the heartbeat follows it: about 3 per
	// lease, never many more.
	if max := 6 * float64(time.Second) / float64(lease(t)); per > max || beats < 2 {
		t.Errorf("%d HELD (%.2f/s) for one lock in %v: want 2 or more, at most %.1f/s", beats, per, time.Since(t0), max)
	}
	l, err := c.Lock(ctx, "go-cut")
	if err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	at, atOld := lossAt(l.hold), lossAt(old.hold)
	p.cut()
	cut := time.Now()
	got := wantLostBy(t, l, at, granted.Add(lease(t)))
	gotOld := wantLostBy(t, old, atOld, cut.Add(lease(t)))
	t.Logf("cut link: loss reported %v after the cut, %v after the grant (grant + lease: %v); the older lock %v after the cut",
		got.Sub(cut).Round(time.Millisecond), got.Sub(granted).Round(time.Millisecond), lease(t),
		gotOld.Sub(cut).Round(time.Millisecond))
}

// Issue 29 item 3: a ctx that ends as the grant arrives leaves nothing
// held: the grant reaches lockd, the ctx ends before the client reads it
// (the proxy holds the reply back), and the key is free again within a
// second of the cancel (lockd releases a session's locks within 1 s of
// its end; the client ends the session with RESUME + QUIT). Also when the
// ctx ends between the grant's reply and the HELD behind it.
func TestCancelRacingGrantLeavesNothing(t *testing.T) {
	need12(t)
	for _, at := range []string{"OK", "END"} {
		t.Run("cancel before "+at, func(t *testing.T) {
			key := "go-cancel-race-" + strings.ToLower(at)
			holder, other := dial(t, env["LOCKD_A"]), dial(t, env["LOCKD_B"])
			p := newProxy(t, env["LOCKD_A"])
			waiter := dial(t, p.addr())
			ctx := tctx(t, 20*time.Second)
			l, err := holder.Lock(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var cancelled atomic.Value
			p.holdReply(at, func() { cancel(); cancelled.Store(time.Now()) })
			done := make(chan error, 1)
			go func() {
				wl, err := waiter.Lock(wctx, key)
				if err == nil {
					err = errors.New("granted, fence " + strconv.FormatUint(wl.Fence(), 10))
				}
				done <- err
			}()
			waitFor(t, 5*time.Second, func() bool { s, _ := holder.Status(ctx, key); return s.Waiters == 1 })
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Lock whose ctx ended as it was granted: %v, want context.Canceled", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Lock did not return 5 s after the grant")
			}
			t0, _ := cancelled.Load().(time.Time)
			if t0.IsZero() {
				t.Fatal("the proxy saw no grant")
			}
			var free time.Duration
			waitFor(t, 3*time.Second, func() bool {
				ol, err := other.TryLock(ctx, key)
				if err != nil {
					return false
				}
				free = time.Since(t0)
				ol.Unlock(ctx)
				return true
			})
			if free > time.Second {
				t.Errorf("key free %v after the cancel, want within 1 s", free)
			}
			t.Logf("key free again %v after the cancel", free.Round(time.Millisecond))
		})
	}
}

// proxy forwards TCP connections to a lockd, line by line, and can cut
// them all (stop forwarding both ways, connections left open, new ones
// accepted and left unanswered), count the HELD requests, and hold back a
// reply line. A cut link carries no close either (as when a network path
// fails without a reset): a side that closes it is the only one to know.
// reset cuts and closes every connection open now, so that both sides see
// their link end; heal lets new connections through again (a link cut
// before stays cut).
type proxy struct {
	ln        net.Listener
	target    string
	mu        sync.Mutex
	conns     []net.Conn
	links     []*proxyLink
	isCut     bool
	swallowed int // bytes received on connections accepted while cut
	held      int
	hold      string // hold back the first reply line starting with this word...
	onHold    func() // ...calling this, then forwarding it 100 ms later
}

// proxyLink is one forwarded connection; cut under proxy.mu.
type proxyLink struct{ cut bool }

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: []net.Conn{}}
	t.Cleanup(p.close)
	go p.accept()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) cut() {
	p.mu.Lock()
	p.isCut = true
	for _, l := range p.links {
		l.cut = true
	}
	p.mu.Unlock()
}

// reset cuts, and closes every connection open now (both sides see it end).
func (p *proxy) reset() {
	p.cut()
	p.mu.Lock()
	conns := append([]net.Conn(nil), p.conns...)
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// heal lets new connections reach lockd again.
func (p *proxy) heal() {
	p.mu.Lock()
	p.isCut = false
	p.mu.Unlock()
}

// swallowedBytes: what was sent on connections accepted while cut.
func (p *proxy) swallowedBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.swallowed
}

func (p *proxy) helds() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

func (p *proxy) holdReply(word string, f func()) {
	p.mu.Lock()
	p.hold, p.onHold = word, f
	p.mu.Unlock()
}

func (p *proxy) cutNow() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.isCut
}

func (p *proxy) linkCut(l *proxyLink) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return l.cut
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false // closed
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

type swallowCounter struct{ p *proxy }

func (w swallowCounter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	w.p.swallowed += len(b)
	w.p.mu.Unlock()
	return len(b), nil
}

func (p *proxy) accept() {
	for {
		cc, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(cc) {
			cc.Close()
			return
		}
		if p.cutNow() {
			go io.Copy(swallowCounter{p}, cc) // accepted, never answered
			continue
		}
		sc, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil || !p.track(sc) {
			cc.Close()
			continue
		}
		l := &proxyLink{}
		p.mu.Lock()
		p.links = append(p.links, l)
		p.mu.Unlock()
		go p.pipe(l, cc, sc, true)
		go p.pipe(l, sc, cc, false)
	}
}

// pipe copies lines from src to dst until either closes; after the cut it
// reads and drops them, and a close of src is not passed on to dst.
func (p *proxy) pipe(l *proxyLink, src, dst net.Conn, requests bool) {
	defer func() {
		src.Close()
		if !p.linkCut(l) {
			dst.Close()
		}
	}()
	br := bufio.NewReader(src)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		if p.linkCut(l) {
			continue
		}
		word, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		p.mu.Lock()
		if requests && word == "HELD" {
			p.held++
		}
		var f func()
		if !requests && p.hold != "" && word == p.hold {
			f, p.hold = p.onHold, ""
		}
		p.mu.Unlock()
		if f != nil {
			f()
			time.Sleep(100 * time.Millisecond)
		}
		if _, err := dst.Write([]byte(line)); err != nil {
			return
		}
	}
}
