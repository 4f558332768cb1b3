package lockd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LockOption modifies Lock and TryLock.
type LockOption func(*lockOpts) error

type lockOpts struct {
	wait, ttl string // "" when not given
	shared    bool
	permits   int
}

// Wait bounds how long Lock waits in lockd's queue (LOCK ... WAIT ms);
// ErrTimeout when it passes. Without it Lock waits until granted or ctx ends.
func Wait(d time.Duration) LockOption {
	return func(o *lockOpts) (err error) { o.wait, err = msArg("Wait", d, true); return }
}

// TTL gives the lock a fixed lease (LOCK ... TTL ms) that nobody renews:
// it lapses after d unless Extended. Without it lockd renews the lease
// while the session lives.
func TTL(d time.Duration) LockOption {
	return func(o *lockOpts) (err error) { o.ttl, err = msArg("TTL", d, false); return }
}

// Shared asks for a shared (read) hold: any number of shared holders, never
// together with an exclusive one.
func Shared() LockOption { return func(o *lockOpts) error { o.shared = true; return nil } }

// Permits asks for one of the key's n permits (a counting semaphore).
func Permits(n int) LockOption {
	return func(o *lockOpts) error {
		if n < 1 || n > 1<<20 {
			return fmt.Errorf("%w: Permits(%d)", ErrInvalid, n)
		}
		o.permits = n
		return nil
	}
}

// holdState of a Lock or Leadership.
type holdState int

const (
	holdWaiting  holdState = iota // request sent, no grant yet
	holdHeld                      // granted, neither lost nor released
	holdLost                      // LOST event, or the session ended without resume
	holdReleased                  // Unlock/Resign answered (or the session was ended on purpose)
)

// hold is what a Lock and a Leadership share: a key held by a session of
// its own.
type hold struct {
	c      *Client
	cn     *conn
	key    string
	fence  uint64
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	state  holdState
	// fixed: a TTL lock, whose lease nobody renews: no heartbeat (only
	// Extend moves its deadline).
	fixed bool
	// The local deadline (see deadline.go), guarded by mu.
	deadline  time.Time     // end of the validity lockd last confirmed, on the monotonic clock
	confirmed time.Time     // when the request that confirmed it was sent
	leaseEst  time.Duration // the longest time left lockd reported: about its lease
	gen       uint64        // counts confirmations: a loss timer of an older one does nothing
	lossTimer *time.Timer   // fires expire a margin before deadline
	beatTimer *time.Timer   // sends the next HELD
}

func newHold(c *Client, cn *conn, key string) *hold {
	h := &hold{c: c, cn: cn, key: key}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h
}

func (h *hold) event(f []string) {
	if f[0] == "LOST" && len(f) >= 2 && f[1] == h.key {
		h.lose()
	}
}

func (h *hold) ended() { h.lose() }

// lose reports the hold lost: Err becomes ErrLost, Held false, the context
// is cancelled (Done closed). A LOST that comes before the grant is
// handled (holdWaiting) so that the grant does not mark the hold held.
func (h *hold) lose() {
	h.mu.Lock()
	if h.state == holdHeld || h.state == holdWaiting {
		h.state = holdLost
	}
	h.stopTimers()
	h.mu.Unlock()
	h.cancel()
}

// Lock is a lock held by this client. Its methods are safe for concurrent use.
type Lock struct{ *hold }

// Key is the locked key.
func (h *hold) Key() string { return h.key }

// Fence is the lock's fencing token: it grows strictly with every grant of
// the key. Pass it to the resource you protect.
func (h *hold) Fence() uint64 { return h.fence }

// Context is cancelled when the lock is lost (LOST, or its session ended
// and could not be resumed) or released. Run the protected work under it.
func (h *hold) Context() context.Context { return h.ctx }

// Done is closed when the lock is lost or released.
func (h *hold) Done() <-chan struct{} { return h.ctx.Done() }

// Err is nil while the lock is held or after it was released cleanly,
// ErrLost after it was lost.
func (h *hold) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == holdLost {
		return ErrLost
	}
	return nil
}

// Held reports whether the lock is held (neither lost nor released).
func (h *hold) Held() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state == holdHeld
}

// Lock takes key, waiting in lockd's FIFO queue. ctx bounds the wait:
// when it ends, the connection that carries the waiting LOCK is closed,
// which makes lockd drop the request (the protocol has no cancel
// command), and Lock returns ctx.Err(). With Wait(d), lockd answers
// TIMEOUT itself after d: ErrTimeout. ErrQuorum when no majority of the
// masters could be reached before the wait ended.
func (c *Client) Lock(ctx context.Context, key string, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, "LOCK", key, opts)
}

// TryLock takes key if it is free now; ErrBusy when it is held elsewhere
// (or others wait for it on this lockd).
func (c *Client) TryLock(ctx context.Context, key string, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, "TRYLOCK", key, opts)
}

func (c *Client) acquire(ctx context.Context, verb, key string, opts []LockOption) (*Lock, error) {
	if err := c.checkKey(key); err != nil {
		return nil, err
	}
	var o lockOpts
	for _, f := range opts {
		if err := f(&o); err != nil {
			return nil, err
		}
	}
	if o.shared && o.permits > 0 {
		return nil, fmt.Errorf("%w: Shared and Permits together", ErrInvalid)
	}
	if verb == "TRYLOCK" && o.wait != "" {
		return nil, fmt.Errorf("%w: Wait with TryLock", ErrInvalid)
	}
	var b strings.Builder
	b.WriteString(verb + " " + key)
	if o.shared {
		b.WriteString(" SHARED")
	}
	if o.permits > 0 {
		b.WriteString(" PERMITS " + strconv.Itoa(o.permits))
	}
	if o.wait != "" {
		b.WriteString(" WAIT " + o.wait)
	}
	if o.ttl != "" {
		b.WriteString(" TTL " + o.ttl)
	}
	h, err := c.grant(ctx, key, b.String(), o.ttl != "")
	if err != nil {
		return nil, err
	}
	return &Lock{h}, nil
}

// grant sends a granting request (LOCK, TRYLOCK, CAMPAIGN) on a session of
// its own and returns the hold on "OK fence". With the heartbeat on, a HELD
// goes in the same write: its reply, read right behind the grant, says
// the validity left, measured by lockd after the grant; counted from when
// both were sent it can only understate the deadline.
func (c *Client) grant(ctx context.Context, key, line string, fixed bool) (*hold, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var h *hold
	var cn *conn
	var rs []reply
	var sent time.Time
	lines, multi := []string{line}, []bool{false}
	if c.cfg.heartbeat {
		lines, multi = []string{line, "HELD"}, []bool{false, true}
	}
	// A pooled connection may have been closed by lockd meanwhile (its
	// idle timeout): one more try on a new one then. A broken connection
	// may have carried a grant: its session is ended (abandon), never
	// reused.
	for try := 0; ; try++ {
		var err error
		if cn, err = c.get(ctx); err != nil {
			return nil, err
		}
		h = newHold(c, cn, key)
		h.fixed = fixed
		cn.setOwner(h)
		sent = time.Now()
		rs, err = cn.doMany(ctx, lines, multi)
		if err == nil {
			break
		}
		if err != errBroken {
			return nil, err
		}
		cn.abandon()
		if try > 0 || ctx.Err() != nil {
			return nil, err
		}
	}
	f := strings.Fields(rs[0].line)
	if len(f) == 2 && f[0] == "OK" {
		fence, perr := strconv.ParseUint(f[1], 10, 64)
		if perr == nil {
			h.mu.Lock()
			h.fence = fence
			if h.state == holdWaiting {
				h.state = holdHeld
			}
			h.mu.Unlock()
			if c.cfg.heartbeat {
				if err := h.firstDeadline(ctx, sent, rs[1]); err != nil {
					return nil, err // ctx ended: the session was ended (do abandoned it)
				}
			}
			if !cn.alive() { // broke between reply and here, not resumed
				h.lose()
			}
			return h, nil
		}
	}
	c.put(cn)
	return nil, replyErr(rs[0].line)
}

// Unlock releases the lock (UNLOCK) and returns its connection to the
// pool. ErrLost if it was lost before (nothing is sent then), ErrNotHeld
// if already released. An ERR QUORUM reply (*Error, errors.Is ErrQuorum)
// still means the lock is no longer held here: the key stays on masters
// that did not confirm until its lease there lapses. When ctx ends first,
// the session is ended (its locks released by lockd).
func (l *Lock) Unlock(ctx context.Context) error { return l.release(ctx, "UNLOCK "+l.key) }

func (h *hold) release(ctx context.Context, line string) error {
	h.mu.Lock()
	st := h.state
	if st == holdHeld {
		h.state = holdReleased
		h.stopTimers()
	}
	h.mu.Unlock()
	switch st {
	case holdLost:
		h.c.put(h.cn)
		return ErrLost
	case holdReleased:
		return ErrNotHeld
	}
	defer h.cancel()
	for retried := false; ; retried = true {
		r, err := h.cn.do(ctx, line, false)
		if err == errBroken {
			// The connection broke: if the session is being resumed, send
			// the release again once it is back; a lost session released
			// the lock anyway.
			for h.cn.alive() && !h.cn.open() && ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond)
			}
			if h.cn.open() {
				continue
			}
			if ctx.Err() != nil {
				h.cn.abandon()
				return ctx.Err()
			}
			return nil // session ended: lockd released the lock
		}
		if err != nil {
			return err // ctx ended: the session was ended (do abandoned it)
		}
		if retried && strings.HasPrefix(r.line, "ERR NOTHELD") {
			r.line = "OK 0" // the first try was done before the break
		}
		if strings.HasPrefix(r.line, "OK") {
			h.c.put(h.cn)
			return nil
		}
		e := replyErr(r.line)
		if perr, ok := e.(*Error); ok && perr.Code == "QUORUM" {
			h.c.put(h.cn) // no longer held by the session
		} else if ok && perr.Code == "NOTHELD" {
			h.c.put(h.cn)
			return ErrLost // a LOST raced the UNLOCK
		} else {
			h.cn.abandon()
		}
		return e
	}
}

// Extend gives a TTL lock a new lease of d from now (EXTEND key ms).
func (l *Lock) Extend(ctx context.Context, d time.Duration) error {
	arg, err := msArg("Extend", d, false)
	if err != nil {
		return err
	}
	if !l.Held() {
		return l.notHeld()
	}
	line := "EXTEND " + l.key + " " + arg
	if !l.c.cfg.heartbeat {
		r, err := l.cn.do(ctx, line, false)
		if err != nil {
			return err
		}
		return okOrErr(r.line)
	}
	// HELD behind it says the new validity (or the shorter one a failed
	// EXTEND may leave): the deadline follows it either way.
	sent := time.Now()
	rs, err := l.cn.doMany(ctx, []string{line, "HELD"}, []bool{false, true})
	if err != nil {
		return err
	}
	if ttl, ok := heldTTL(rs[1], l.key); ok {
		l.confirm(sent, ttl)
	} else {
		l.lose()
	}
	return okOrErr(rs[0].line)
}

func okOrErr(line string) error {
	if line == "OK" {
		return nil
	}
	return replyErr(line)
}

func (h *hold) notHeld() error {
	if h.Err() != nil {
		return ErrLost
	}
	return ErrNotHeld
}
