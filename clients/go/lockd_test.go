package lockd

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPingAndUnixSocket(t *testing.T) {
	for _, a := range []string{env["LOCKD_A"], "unix:" + env["LOCKD_A_SOCK"]} {
		c := dial(t, a)
		if err := c.Ping(tctx(t, 5*time.Second)); err != nil {
			t.Fatalf("ping %s: %v", a, err)
		}
	}
}

// Eight goroutines (four per client, the clients on lockd A and B) take one
// key in turns: never two in the critical section, and the fences grow
// strictly in the order of the grants.
func TestEightHoldersExclude(t *testing.T) {
	ca, cb := dial(t, env["LOCKD_A"]), dial(t, env["LOCKD_B"])
	ctx := tctx(t, 60*time.Second)
	var mu sync.Mutex
	var inside, grants int32
	var fences []uint64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	fail := func(err error) { // never blocks: the first errors are kept
		select {
		case errs <- err:
		default:
		}
	}
	for g := 0; g < 8; g++ {
		c := ca
		if g%2 == 1 {
			c = cb
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 3; r++ {
				l, err := c.Lock(ctx, "go-eight")
				if err != nil {
					fail(err)
					return
				}
				if n := atomic.AddInt32(&inside, 1); n != 1 {
					fail(errors.New("two holders at once"))
				}
				mu.Lock()
				fences = append(fences, l.Fence())
				mu.Unlock()
				atomic.AddInt32(&grants, 1)
				time.Sleep(3 * time.Millisecond)
				atomic.AddInt32(&inside, -1)
				if err := l.Unlock(ctx); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if grants != 24 {
		t.Fatalf("%d grants, want 24", grants)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fence %d after %d (grant %d): fences must grow", fences[i], fences[i-1], i)
		}
	}
}

func TestWaitTimeoutAndBusy(t *testing.T) {
	c := dial(t, env["LOCKD_A"])
	ctx := tctx(t, 20*time.Second)
	l, err := c.Lock(ctx, "go-timeout")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryLock(ctx, "go-timeout"); !errors.Is(err, ErrBusy) {
		t.Fatalf("TryLock of a held key: %v, want ErrBusy", err)
	}
	t0 := time.Now()
	_, err = c.Lock(ctx, "go-timeout", Wait(300*time.Millisecond))
	el := time.Since(t0)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Lock Wait(300ms) of a held key: %v, want ErrTimeout", err)
	}
	if el < 280*time.Millisecond || el > 3*time.Second {
		t.Fatalf("timeout after %v, want about 300 ms", el)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second Unlock: %v, want ErrNotHeld", err)
	}
	l2, err := c.Lock(ctx, "go-timeout", Wait(0), TTL(5*time.Second))
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	if l2.Fence() <= l.Fence() {
		t.Fatalf("fence %d after %d", l2.Fence(), l.Fence())
	}
	if err := l2.Extend(ctx, 4*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	l2.Unlock(ctx)

	// A TTL that lapses is a loss: the context is cancelled.
	l3, err := c.Lock(ctx, "go-timeout", Wait(2*time.Second), TTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-l3.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("a lapsed TTL did not cancel the lock's context")
	}
	if !errors.Is(l3.Err(), ErrLost) {
		t.Fatalf("Err after the TTL lapsed: %v", l3.Err())
	}
}

// Cancelling ctx abandons the wait on lockd's side too: the waiter goes
// from STATUS, and the abandoned request is never granted.
func TestCancelAbandonsWait(t *testing.T) {
	c := dial(t, env["LOCKD_A"])
	ctx := tctx(t, 20*time.Second)
	l, err := c.Lock(ctx, "go-cancel")
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := c.Lock(wctx, "go-cancel"); done <- err }()
	waitFor(t, 5*time.Second, func() bool { s, _ := c.Status(ctx, "go-cancel"); return s.Waiters == 1 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Lock: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("cancelled Lock did not return")
	}
	waitFor(t, 2*time.Second, func() bool { s, _ := c.Status(ctx, "go-cancel"); return s.Waiters == 0 })
	l.Unlock(ctx)
	l3, err := c.Lock(ctx, "go-cancel", Wait(2*time.Second))
	if err != nil {
		t.Fatalf("lock after the abandoned wait: %v", err)
	}
	l3.Unlock(ctx)
}

func waitFor(t *testing.T, d time.Duration, f func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if f() {
			return
		}
	}
	t.Fatalf("condition not met within %v", d)
}

func TestSharedAndPermits(t *testing.T) {
	c := dial(t, env["LOCKD_A"])
	ctx := tctx(t, 30*time.Second)
	var readers []*Lock
	for i := 0; i < 3; i++ {
		l, err := c.TryLock(ctx, "go-rw", Shared())
		if err != nil {
			t.Fatalf("shared hold %d: %v", i, err)
		}
		readers = append(readers, l)
	}
	if s, err := c.Status(ctx, "go-rw"); err != nil || s.State != "SHARED" || s.Holders != 3 {
		t.Fatalf("status %+v %v, want SHARED with 3 holders", s, err)
	}
	if _, err := c.TryLock(ctx, "go-rw"); !errors.Is(err, ErrBusy) {
		t.Fatalf("exclusive TryLock while shared: %v", err)
	}
	for _, l := range readers {
		l.Unlock(ctx)
	}
	w, err := c.Lock(ctx, "go-rw", Wait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryLock(ctx, "go-rw", Shared()); !errors.Is(err, ErrBusy) {
		t.Fatalf("shared TryLock while exclusive: %v", err)
	}
	w.Unlock(ctx)

	// Permits: 6 goroutines, 2 permits: never more than 2 inside, 2 reached.
	var inside, most int32
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := c.Lock(ctx, "go-sem", Permits(2))
			if err != nil {
				errs <- err
				return
			}
			n := atomic.AddInt32(&inside, 1)
			for {
				m := atomic.LoadInt32(&most)
				if n <= m || atomic.CompareAndSwapInt32(&most, m, n) {
					break
				}
			}
			time.Sleep(50 * time.Millisecond)
			atomic.AddInt32(&inside, -1)
			errs <- l.Unlock(ctx)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if most != 2 {
		t.Fatalf("at most %d holders of 2 permits at once, want exactly 2", most)
	}
}

// The client refuses keys and values it cannot send as one word, before
// anything is sent: a recording listener sees nothing but the session set-up.
func TestRefusesBadKeys(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var got []string
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				br := bufio.NewReader(nc)
				for {
					s, err := br.ReadString('\n')
					if err != nil {
						return
					}
					mu.Lock()
					got = append(got, strings.TrimSpace(s))
					mu.Unlock()
					nc.Write([]byte("ERR PROTOCOL unknown command\r\n"))
				}
			}()
		}
	}()
	c := dial(t, ln.Addr().String())
	ctx := tctx(t, 5*time.Second)
	bad := []string{"k WAIT", "k\tx", "a\r", "a\n", "a\x00", "caf\xc3\xa9", "", strings.Repeat("k", 257), "\x7f"}
	for _, k := range bad {
		if _, err := c.Lock(ctx, k); !errors.Is(err, ErrInvalid) {
			t.Errorf("Lock(%q): %v, want ErrInvalid", k, err)
		}
		if _, err := c.TryLock(ctx, k); !errors.Is(err, ErrInvalid) {
			t.Errorf("TryLock(%q): %v, want ErrInvalid", k, err)
		}
		if _, err := c.Campaign(ctx, "e", k); !errors.Is(err, ErrInvalid) {
			t.Errorf("Campaign value %q: %v, want ErrInvalid", k, err)
		}
		if _, err := c.Who(ctx, k); !errors.Is(err, ErrInvalid) {
			t.Errorf("Who(%q): %v, want ErrInvalid", k, err)
		}
	}
	if _, err := c.Lock(ctx, "k", Wait(-time.Second)); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative Wait: %v", err)
	}
	if _, err := c.Lock(ctx, "k", Permits(0)); !errors.Is(err, ErrInvalid) {
		t.Errorf("Permits(0): %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "SESSION" {
		t.Fatalf("lines sent: %q, want only the SESSION of Dial", got)
	}
}

func TestErrorReply(t *testing.T) {
	c := dial(t, env["LOCKD_A"])
	ctx := tctx(t, 5*time.Second)
	_, err := c.Lock(ctx, "go-err", Permits(100000))
	var e *Error
	if !errors.As(err, &e) || e.Code != "ARG" {
		t.Fatalf("PERMITS 100000: %v, want *Error ARG", err)
	}
}

// SIGSTOP of two of three masters: the LOST event cancels the lock's
// context before the lease (3 s) ends.
func TestLostCancelsContext(t *testing.T) {
	c := dial(t, env["LOCKD_A"])
	ctx := tctx(t, 30*time.Second)
	l, err := c.Lock(ctx, "go-lost")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		testenv("master-cont", envDir, "0")
		testenv("master-cont", envDir, "1")
		waitHealthy(t)
	})
	if err := testenv("master-stop", envDir, "0"); err != nil {
		t.Fatal(err)
	}
	// The majority is gone with the second stop: the lease written by the
	// last renewal before it ends at most 3 s after it.
	t0 := time.Now()
	if err := testenv("master-stop", envDir, "1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Context().Done():
	case <-time.After(6 * time.Second):
		t.Fatal("no loss 6 s after two of three masters stopped")
	}
	el := time.Since(t0)
	if el > 3500*time.Millisecond {
		t.Errorf("loss noticed after %v, want before the 3 s lease ends", el)
	}
	t.Logf("loss noticed %v after the second SIGSTOP", el)
	if !errors.Is(l.Err(), ErrLost) || l.Held() {
		t.Fatalf("Err %v Held %v after loss", l.Err(), l.Held())
	}
	<-l.Done()
	if err := l.Unlock(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("Unlock after loss: %v, want ErrLost", err)
	}
}

// 1.2: a lockd restart costs a resumable session nothing.
func TestResumeAcrossRestart(t *testing.T) {
	need12(t)
	c := dial(t, env["LOCKD_A"])
	if !c.Resumable() {
		t.Fatal("lockd speaks 1.2 but the client's sessions are not resumable")
	}
	ctx := tctx(t, 30*time.Second)
	l, err := c.Lock(ctx, "go-resume")
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv("lockd-term", envDir, "a"); err != nil {
		t.Fatal(err)
	}
	if err := testenv("lockd-start", envDir, "a"); err != nil {
		t.Fatal(err)
	}
	other := dial(t, env["LOCKD_B"])
	waitFor(t, 5*time.Second, func() bool {
		s, _ := other.Status(ctx, "go-resume")
		return s.State == "HELD"
	})
	time.Sleep(4 * time.Second) // more than a lease: the resumed session renews it
	if !l.Held() {
		t.Fatalf("lock lost across the restart: %v", l.Err())
	}
	if _, err := other.TryLock(ctx, "go-resume"); !errors.Is(err, ErrBusy) {
		t.Fatalf("TryLock elsewhere after the restart: %v, want ErrBusy", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// 1.3: election, failover and observation across both lockd.
func TestElection(t *testing.T) {
	need13(t)
	ca, cb, co := dial(t, env["LOCKD_A"]), dial(t, env["LOCKD_B"]), dial(t, env["LOCKD_B"])
	ctx := tctx(t, 30*time.Second)
	obs, err := co.Observe(ctx, "go-elect")
	if err != nil {
		t.Fatal(err)
	}
	next := func(want string) Leader {
		t.Helper()
		for {
			select {
			case ld := <-obs:
				if ld.Value == want {
					return ld
				}
			case <-time.After(3 * time.Second):
				t.Fatalf("observer did not see %q", want)
			}
		}
	}
	next("")
	la, err := ca.Campaign(ctx, "go-elect", "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if ld := next("alpha"); ld.Fence != la.Fence() {
		t.Fatalf("observed fence %d, leader's %d", ld.Fence, la.Fence())
	}
	if ld, err := cb.Leader(ctx, "go-elect"); err != nil || ld.Value != "alpha" {
		t.Fatalf("Leader: %+v %v", ld, err)
	}
	if err := la.Proclaim(ctx, "alpha2"); err != nil {
		t.Fatal(err)
	}
	next("alpha2")
	got := make(chan *Leadership, 1)
	go func() {
		lb, err := cb.Campaign(ctx, "go-elect", "beta")
		if err != nil {
			t.Error(err)
		}
		got <- lb
	}()
	time.Sleep(200 * time.Millisecond)
	ca.Close() // failover: the leader's session ends
	var lb *Leadership
	select {
	case lb = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("no failover within 5 s")
	}
	if lb == nil {
		t.FailNow()
	}
	if lb.Fence() <= la.Fence() {
		t.Fatalf("new leader's fence %d <= old %d", lb.Fence(), la.Fence())
	}
	if !errors.Is(la.Err(), ErrLost) && la.Held() {
		t.Fatal("old leadership still held after Close")
	}
	next("beta")
	if err := lb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	next("")
	if _, err := cb.Leader(ctx, "go-elect"); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("Leader after resign: %v", err)
	}
}
