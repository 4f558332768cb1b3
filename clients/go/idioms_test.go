package lockd

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 29 item 4: Status of a semaphore. A full semaphore of 2 reads as
// two permits held of 2 (STATUS key PERMITS 2), with the waiter counted,
// not as "HELD, 1 holder".
func TestStatusPermits(t *testing.T) {
	c := dial(t, env["LOCKD_A"])
	ctx := tctx(t, 10*time.Second)
	if s, err := c.Status(ctx, "go-sem-status", Permits(2)); err != nil || s != (Status{State: "PERMITS", Permits: 2}) {
		t.Fatalf("Status of a free semaphore: %+v %v", s, err)
	}
	var held []*Lock
	for i := 0; i < 2; i++ {
		l, err := c.TryLock(ctx, "go-sem-status", Permits(2))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	if s, err := c.Status(ctx, "go-sem-status", Permits(2)); err != nil || s != (Status{State: "PERMITS", Holders: 2, Permits: 2}) {
		t.Fatalf("Status of a full semaphore of 2: %+v %v, want 2 permits held of 2", s, err)
	}
	done := make(chan error, 1)
	go func() {
		l, err := c.Lock(ctx, "go-sem-status", Permits(2))
		if err == nil {
			err = l.Unlock(ctx)
		}
		done <- err
	}()
	waitFor(t, 5*time.Second, func() bool {
		s, err := c.Status(ctx, "go-sem-status", Permits(2))
		return err == nil && s.Holders == 2 && s.Waiters == 1
	})
	if _, err := c.Status(ctx, "go-sem-status", Shared()); !errors.Is(err, ErrInvalid) {
		t.Errorf("Status with Shared: %v, want ErrInvalid", err)
	}
	for _, l := range held {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Issue 29 item 4: a sync.Locker, as etcd's concurrency.NewLocker. Two
// clients (lockd A and B), two goroutines each, one Locker each: never two
// inside. An Unlock without a Lock panics with ErrNotHeld, one after a
// loss with ErrLost.
func TestLocker(t *testing.T) {
	ca, cb := dial(t, env["LOCKD_A"]), dial(t, env["LOCKD_B"])
	var mus = []sync.Locker{ca.NewLocker("go-locker"), cb.NewLocker("go-locker")}
	var inside, most, n int32
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(mu sync.Locker) {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				mu.Lock()
				if k := atomic.AddInt32(&inside, 1); k > atomic.LoadInt32(&most) {
					atomic.StoreInt32(&most, k)
				}
				atomic.AddInt32(&n, 1)
				time.Sleep(2 * time.Millisecond)
				atomic.AddInt32(&inside, -1)
				mu.Unlock()
			}
		}(mus[g%2])
	}
	wg.Wait()
	if most != 1 || n != 20 {
		t.Fatalf("%d critical sections, at most %d inside at once; want 20, 1", n, most)
	}
	panicWith := func(f func()) (err error) {
		defer func() { err, _ = recover().(error) }()
		f()
		return nil
	}
	if err := panicWith(mus[0].Unlock); !errors.Is(err, ErrNotHeld) {
		t.Errorf("Unlock of an unlocked Locker panicked with %v, want ErrNotHeld", err)
	}
	short := ca.NewLocker("go-locker-ttl", TTL(200*time.Millisecond))
	short.Lock()
	select {
	case <-short.Hold().Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the hold of a lapsed TTL was not reported lost")
	}
	if err := panicWith(short.Unlock); !errors.Is(err, ErrLost) {
		t.Errorf("Unlock after a loss panicked with %v, want ErrLost", err)
	}
}
