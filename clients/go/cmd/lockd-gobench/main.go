// lockd-gobench measures the Go client against a running lockd:
// uncontended lock/unlock cycles per second on one goroutine, with the
// local deadline's heartbeat (the default) and without it; the cost of
// the heartbeat in HELD requests per second per held lock (counted by a
// proxy in front of lockd while -held locks are held for -d); and the
// handoff between two holders of one key (from UNLOCK sent by one to the
// grant seen by the other), as lockd-benchmark's "handoff" scenario does.
//
//	go run ./cmd/lockd-gobench -addr 127.0.0.1:7390 -d 5s
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"lockd.example/lockd"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7390", "lockd address")
	dur := flag.Duration("d", 5*time.Second, "duration of each scenario")
	nheld := flag.Int("held", 20, "locks held while the heartbeat is counted")
	flag.Parse()
	ctx := context.Background()
	c, err := lockd.Dial(ctx, *addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	plain, err := lockd.Dial(ctx, *addr, lockd.WithoutHeartbeat())
	if err != nil {
		log.Fatal(err)
	}
	defer plain.Close()

	uncontended := func(c *lockd.Client, what string) {
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
		el := time.Since(t0).Seconds()
		fmt.Printf("uncontended, %s: %d cycles in %.1f s = %.0f cycles/s\n", what, n, el, float64(n)/el)
	}
	uncontended(c, "heartbeat on (default)")
	uncontended(plain, "heartbeat off (WithoutHeartbeat)")

	// The heartbeat's cost: -held locks held for -d through a proxy that
	// counts the HELD requests (the one sent with each grant excluded).
	var helds int64
	paddr := countingProxy(*addr, &helds)
	pc, err := lockd.Dial(ctx, paddr)
	if err != nil {
		log.Fatal(err)
	}
	var locks []*lockd.Lock
	for i := 0; i < *nheld; i++ {
		l, err := pc.Lock(ctx, "gobench-held-"+strconv.Itoa(i))
		if err != nil {
			log.Fatal(err)
		}
		locks = append(locks, l)
	}
	h0, t0 := atomic.LoadInt64(&helds), time.Now()
	time.Sleep(*dur)
	h, el := atomic.LoadInt64(&helds)-h0, time.Since(t0).Seconds()
	for _, l := range locks {
		if err := l.Unlock(ctx); err != nil {
			log.Fatal(err)
		}
	}
	pc.Close()
	fmt.Printf("heartbeat: %d HELD for %d held locks in %.1f s = %.3f requests/s per held lock\n",
		h, *nheld, el, float64(h)/el/float64(*nheld))

	var mu sync.Mutex
	var sent time.Time // when the last UNLOCK was sent; zero when none pending
	var gaps []time.Duration
	var wg sync.WaitGroup
	end := time.Now().Add(*dur)
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

// countingProxy forwards connections to addr and counts the HELD requests
// that pass; it returns its address.
func countingProxy(addr string, helds *int64) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		for {
			cc, err := ln.Accept()
			if err != nil {
				return
			}
			sc, err := net.Dial("tcp", addr)
			if err != nil {
				cc.Close()
				continue
			}
			go func() {
				defer sc.Close()
				br := bufio.NewReader(cc)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(strings.ToUpper(line), "HELD") {
						atomic.AddInt64(helds, 1)
					}
					if _, err := io.WriteString(sc, line); err != nil {
						return
					}
				}
			}()
			go func() { defer cc.Close(); io.Copy(cc, sc) }()
		}
	}()
	return ln.Addr().String()
}
