package lockd_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"lockd.example/lockd"
)

// A job that must run on one machine at a time. The lock's context is
// cancelled if the lock is lost, so the work stops with it.
func Example() {
	ctx := context.Background()
	c, err := lockd.Dial(ctx, os.Getenv("LOCKD_ADDR")) // e.g. 127.0.0.1:7390
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	l, err := c.Lock(ctx, "nightly-report", lockd.Wait(5*time.Second))
	if errors.Is(err, lockd.ErrTimeout) {
		fmt.Println("someone else is running it")
		return
	} else if err != nil {
		log.Fatal(err)
	}
	defer l.Unlock(context.Background())

	work := func(ctx context.Context, fence uint64) error {
		// pass fence to the storage you write, so a stale holder is refused
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
			return nil
		}
	}
	if err := work(l.Context(), l.Fence()); err != nil {
		fmt.Println("stopped:", err, l.Err())
		return
	}
	_, err = c.TryLock(ctx, "nightly-report")
	fmt.Println("report written; TryLock meanwhile:", err)
	// Output: report written; TryLock meanwhile: lockd: busy
}

// Who holds the nightly job's lock, on which lockd, from where, since when.
func ExampleClient_Who() {
	ctx := context.Background()
	c, err := lockd.Dial(ctx, os.Getenv("LOCKD_ADDR"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	l, err := c.Lock(ctx, "nightly-job", lockd.Wait(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Unlock(context.Background())

	w, err := c.Who(ctx, "nightly-job")
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range w.Holders {
		// e.g. 42 exclusive myhost:7390 127.0.0.1:50412 2ms
		fmt.Println(h.Fence == l.Fence(), h.Kind, h.Lockd != "", h.Client != "", h.HasHeld)
	}
	// Output: true exclusive true true true
}
