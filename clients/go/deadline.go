package lockd

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// The local deadline of a hold (issue 29). lockd renews a lease while the
// session lives and sends LOST before the validity ends when it cannot;
// but a lockd that is frozen, killed with nowhere to resume, or cut off
// sends nothing, and the holder would believe it holds the key after
// another holder got it. So every hold keeps the end of the validity
// lockd last confirmed, on this client's monotonic clock, counted from
// when the confirming request was sent (never from when its reply came:
// that can only understate it), and is reported lost a margin before it
// passes unconfirmed, exactly as for LOST, whatever the connection is
// doing (open, frozen, being resumed).
//
// The confirmation is HELD, whose KEY line says the time left on the
// lease (ttl_ms): one in the same write as the grant request, then a
// heartbeat on the hold's connection (a lock has a session and a
// connection of its own, so one HELD covers it), timed to come just after
// lockd's renewal (lockd renews when a third of the lease is gone), so
// that the deadline lags lockd's knowledge by a round trip, not by a
// renewal period: about 3 HELD per lease per held lock. A TTL lock is not
// renewed: it gets no heartbeat (Extend moves its deadline).

// validity is the part of a reported ttl the client counts on: less
// lockd's default drift allowance (1 % + 2 ms), which also covers the
// rate difference of the two clocks.
func validity(ttl time.Duration) time.Duration {
	return ttl - ttl/100 - 2*time.Millisecond
}

// lossMargin: the loss is reported this much before the deadline, so that
// a timer that fires late on a loaded machine still fires before it.
func lossMargin(v time.Duration) time.Duration {
	if m := v / 4; m < 50*time.Millisecond {
		return m
	}
	return 50 * time.Millisecond
}

// heldTTL finds key's line in a HELD reply (KEY key fence holds ttl_ms
// ...): ok false when the session does not hold key.
func heldTTL(r reply, key string) (ttl time.Duration, ok bool) {
	for _, l := range r.lines {
		f := strings.Fields(l)
		if len(f) >= 5 && f[0] == "KEY" && f[1] == key {
			n, err := strconv.ParseInt(f[4], 10, 64)
			if err != nil {
				return 0, false
			}
			return time.Duration(n) * time.Millisecond, true
		}
	}
	return 0, false
}

// firstDeadline sets the deadline of a hold just granted from the HELD
// sent with its grant request. When the request waited in lockd's queue,
// that figure counted from its sending is mostly spent: one more HELD
// then (ctx ending meanwhile ends the session, as for the wait).
func (h *hold) firstDeadline(ctx context.Context, sent time.Time, r reply) error {
	ttl, ok := heldTTL(r, h.key)
	if !ok {
		h.lose() // a LOST came before the figure
		return nil
	}
	if time.Since(sent) > validity(ttl)/2 {
		sent2 := time.Now()
		r2, err := h.cn.do(ctx, "HELD", true)
		if err == errBroken {
			h.confirm(sent, ttl) // a resume takes over; this figure stands meanwhile
			return nil
		}
		if err != nil {
			return err
		}
		sent = sent2
		if ttl, ok = heldTTL(r2, h.key); !ok {
			h.lose()
			return nil
		}
	}
	h.confirm(sent, ttl)
	return nil
}

// confirm records that lockd, asked at sent, reported ttl left on the
// hold's lease. The latest confirmation wins, even when it is shorter (a
// failed EXTEND may shorten the validity). It arms the loss timer and,
// for a renewed lease, the next heartbeat.
func (h *hold) confirm(sent time.Time, ttl time.Duration) {
	v := validity(ttl)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != holdHeld || sent.Before(h.confirmed) {
		return
	}
	h.confirmed, h.deadline = sent, sent.Add(v)
	if ttl > h.leaseEst {
		h.leaseEst = ttl
	}
	h.gen++
	gen := h.gen
	if h.lossTimer != nil {
		h.lossTimer.Stop()
	}
	h.lossTimer = time.AfterFunc(time.Until(h.deadline.Add(-lossMargin(v))), func() { h.expire(gen) })
	if h.fixed {
		return
	}
	if h.beatTimer != nil {
		h.beatTimer.Stop()
	}
	h.beatTimer = time.AfterFunc(h.beatDelay(sent, ttl), h.beat)
}

// beatDelay: lockd renews the lease when two thirds of it are left; the
// next HELD goes a little after that, so that it sees the new lease. When
// that renewal is late (or the lease estimate is off), a twelfth of the
// lease later; never later than half the time left, so that a HELD always
// has time to come back before the deadline.
func (h *hold) beatDelay(sent time.Time, ttl time.Duration) time.Duration {
	l := h.leaseEst
	now := time.Now()
	at := sent.Add(ttl - 2*l/3 + l/50 + 20*time.Millisecond)
	if min := now.Add(l / 12); at.Before(min) {
		at = min
	}
	if max := sent.Add(ttl / 2); at.After(max) {
		at = max
	}
	if d := at.Sub(now); d > 10*time.Millisecond {
		return d
	}
	return 10 * time.Millisecond
}

// stopTimers: the hold is no longer held. Called with mu held.
func (h *hold) stopTimers() {
	h.gen++
	if h.lossTimer != nil {
		h.lossTimer.Stop()
	}
	if h.beatTimer != nil {
		h.beatTimer.Stop()
	}
}

// expire: the deadline of confirmation gen is about to pass unconfirmed.
// The hold is reported lost (as for LOST) and its session given up: the
// conn is never pooled, and the session is ended with QUIT (after a
// resume when it is being resumed), so that nothing stays held by no one.
func (h *hold) expire(gen uint64) {
	h.mu.Lock()
	if h.gen != gen || h.state != holdHeld {
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	h.cn.retire() // first: an Unlock that follows the loss must not pool the conn
	h.lose()
}

// beat sends one HELD on the hold's connection and confirms its answer. A
// frozen or cut lockd never answers: the loss timer ends the session then,
// which fails the request.
func (h *hold) beat() {
	if !h.Held() {
		return
	}
	sent := time.Now()
	r, err := h.cn.do(context.Background(), "HELD", true)
	if err != nil {
		return // broken: a resume (then resumed) or the end of the session follows
	}
	if ttl, ok := heldTTL(r, h.key); ok {
		h.confirm(sent, ttl)
	} else {
		h.lose() // not held by the session: a LOST came first, or a release raced it
	}
}

// resumed: the session is back. A hold still held gets a heartbeat at
// once (its deadline so far is the one confirmed before the break); one
// reported lost meanwhile has its session ended.
func (h *hold) resumed() {
	h.mu.Lock()
	st := h.state
	h.mu.Unlock()
	switch st {
	case holdHeld:
		go h.beat()
	case holdLost:
		h.cn.retire()
	}
}
