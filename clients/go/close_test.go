package lockd

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// A resumable session that its own connection cannot end with QUIT must
// still end when the client is closed, on lockd, at once: closing that
// connection would only detach it (lockd keeps its holds for the grace,
// 10 s by default), or not even that when the link went silent. Close
// then resumes the session on a new connection (the session's lockd
// first, then the other addresses) and ends it there with QUIT, in the
// background; Close waits for that about the dial timeout.

// withDialTimeout bounds each connection attempt (and each try of a
// background end) as Python's connect_timeout does in its tests.
func withDialTimeout(d time.Duration) Option { return func(c *config) { c.dialTimeout = d } }

// grantedSoon asserts that other (a client of lockd B) is granted key
// within 3 s of closed, when Close returned: far below the 10 s grace a
// detached session would keep it for, with room for a loaded machine.
func grantedSoon(t *testing.T, other *Client, key string, closed time.Time) {
	t.Helper()
	ctx := tctx(t, 30*time.Second)
	l, err := other.Lock(ctx, key, Wait(20*time.Second)) // LOCK key WAIT 20000
	dt := time.Since(closed)
	if err != nil {
		t.Fatalf("%s not granted on lockd B (%v) %v after Close returned: the session was left to lockd",
			key, err, dt.Round(time.Millisecond))
	}
	defer l.Unlock(ctx)
	t.Logf("figure: %s granted on lockd B %v after Close returned", key, dt.Round(time.Millisecond))
	if dt > 3*time.Second {
		t.Errorf("%s granted %v after Close returned, want within 3 s (grace 10 s): the session was left to its grace",
			key, dt.Round(time.Millisecond))
	}
}

// Close while the session is being resumed: the link was reset (lockd
// detached the session and keeps its hold for the grace), and the
// resume's RESUME went to a connection that never answers, so the client
// is stuck resuming when it is closed. A new connection reaches lockd
// again by then.
func TestCloseWhileResumingEndsSession(t *testing.T) {
	need12(t)
	key := "go-close-resuming"
	p := newProxy(t, env["LOCKD_A"])
	c := dial(t, p.addr())
	other := dial(t, env["LOCKD_B"])
	ctx := tctx(t, 30*time.Second)
	l, err := c.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	p.reset()
	waitFor(t, 5*time.Second, func() bool { return p.swallowedBytes() > 0 }) // the RESUME went nowhere
	l.cn.mu.Lock()
	st := l.cn.state
	l.cn.mu.Unlock()
	if st != connResuming {
		t.Fatalf("the connection is in state %d, want resuming (%d)", st, connResuming)
	}
	p.heal()
	t0 := time.Now()
	c.Close()
	closed := time.Now()
	t.Logf("figure: Close took %v", closed.Sub(t0).Round(time.Millisecond))
	if l.Held() {
		t.Fatal("the lock reads held after Close returned")
	}
	grantedSoon(t, other, key, closed)
}

// Close whose QUIT goes unanswered: the link went silent without a reset
// (lockd keeps the session attached to a connection it has not seen die,
// and keeps renewing its hold). lockd B is the client's second address;
// a new connection through the proxy goes nowhere.
func TestCloseWhoseQuitGoesUnansweredEndsSession(t *testing.T) {
	need12(t)
	key := "go-close-unanswered"
	p := newProxy(t, env["LOCKD_A"])
	c := dial(t, p.addr(), WithAddresses(env["LOCKD_B"]), withDialTimeout(time.Second))
	other := dial(t, env["LOCKD_B"])
	ctx := tctx(t, 30*time.Second)
	l, err := c.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	p.cut()
	t0 := time.Now()
	c.Close()
	closed := time.Now()
	t.Logf("figure: Close took %v", closed.Sub(t0).Round(time.Millisecond))
	if l.Held() {
		t.Fatal("the lock reads held after Close returned")
	}
	grantedSoon(t, other, key, closed)
}

// Close while a LOCK waits on the session: lockd answers a QUIT only after
// the LOCK, so Close does not send one (it would wait the second it gives
// a QUIT for nothing); it closes the connection and ends the session on a
// new one, and the waiting LOCK is dropped by lockd.
func TestCloseWhileLockWaitsEndsSession(t *testing.T) {
	need12(t)
	key := "go-close-waiting"
	holder := dial(t, env["LOCKD_B"])
	c := dial(t, env["LOCKD_A"])
	watch := dial(t, env["LOCKD_A"])
	ctx := tctx(t, 30*time.Second)
	hl, err := holder.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		l, err := c.Lock(ctx, key)
		if err == nil {
			err = fmt.Errorf("granted, fence %d", l.Fence())
		}
		done <- err
	}()
	waitFor(t, 5*time.Second, func() bool { s, err := watch.Status(ctx, key); return err == nil && s.Waiters == 1 })
	t0 := time.Now()
	c.Close()
	took := time.Since(t0)
	t.Logf("figure: Close took %v", took.Round(time.Millisecond))
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Lock waiting when the client was closed: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Lock did not return 5 s after Close")
	}
	waitFor(t, 2*time.Second, func() bool { s, err := watch.Status(ctx, key); return err == nil && s.Waiters == 0 })
	if took > 900*time.Millisecond {
		t.Errorf("Close took %v with a LOCK waiting, want well below the second a QUIT is given", took.Round(time.Millisecond))
	}
	if err := hl.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Close while a Lock's connection is being made (its SESSION answered
// after Close returned): that connection was not among those Close ended,
// so nothing may be granted on it; Lock fails with ErrClosed.
func TestCloseWhileDialingGrantsNothing(t *testing.T) {
	need12(t)
	p := newProxy(t, env["LOCKD_A"])
	c := dial(t, p.addr())
	ctx := tctx(t, 20*time.Second)
	held, err := c.Lock(ctx, "go-close-dialing-1") // takes the pooled connection: the next Lock dials
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	p.holdReply("SESSION", func() {
		go func() { c.Close(); close(closed) }()
		for !c.isClosed() { // the reply goes on only once Close has begun
			time.Sleep(time.Millisecond)
		}
	})
	l, err := c.Lock(ctx, "go-close-dialing-2")
	<-closed
	if held.Held() {
		t.Error("the lock taken before Close reads held after Close returned")
	}
	if err == nil {
		t.Errorf("Lock whose connection was made while the client closed: granted (fence %d, held %v), want ErrClosed",
			l.Fence(), l.Held())
		l.Unlock(ctx)
	} else if !errors.Is(err, ErrClosed) {
		t.Errorf("Lock whose connection was made while the client closed: %v, want ErrClosed", err)
	}
}
