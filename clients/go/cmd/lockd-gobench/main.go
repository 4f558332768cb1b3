// lockd-gobench measures the Go client against a running lockd:
// uncontended lock/unlock cycles per second on one goroutine, and the
// handoff between two holders of one key (from UNLOCK sent by one to the
// grant seen by the other), as lockd-benchmark's "handoff" scenario does.
//
//	go run ./cmd/lockd-gobench -addr 127.0.0.1:7390 -d 5s
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"sort"
	"sync"
	"time"

	"lockd.example/lockd"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7390", "lockd address")
	dur := flag.Duration("d", 5*time.Second, "duration of each scenario")
	flag.Parse()
	ctx := context.Background()
	c, err := lockd.Dial(ctx, *addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	n := 0
	end := time.Now().Add(*dur)
	t0 := time.Now()
	for time.Now().Before(end) {
		l, err := c.Lock(ctx, "gobench-uncontended")
		if err != nil {
			log.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			log.Fatal(err)
		}
		n++
	}
	fmt.Printf("uncontended: %d cycles in %.1f s = %.0f cycles/s\n", n, time.Since(t0).Seconds(), float64(n)/time.Since(t0).Seconds())

	var mu sync.Mutex
	var sent time.Time // when the last UNLOCK was sent; zero when none pending
	var gaps []time.Duration
	var wg sync.WaitGroup
	end = time.Now().Add(*dur)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				l, err := c.Lock(ctx, "gobench-handoff")
				if err != nil {
					log.Fatal(err)
				}
				mu.Lock()
				if !sent.IsZero() {
					gaps = append(gaps, time.Since(sent))
				}
				sent = time.Time{}
				mu.Unlock()
				time.Sleep(time.Millisecond) // let the other one queue
				mu.Lock()
				sent = time.Now()
				mu.Unlock()
				if err := l.Unlock(ctx); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	pct := func(p float64) float64 {
		if len(gaps) == 0 {
			return 0
		}
		return float64(gaps[int(p*float64(len(gaps)-1))].Microseconds()) / 1000
	}
	fmt.Printf("handoff: %d handoffs, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", len(gaps), pct(0.5), pct(0.99), pct(1))
}
