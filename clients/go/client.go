// Package lockd is a client for lockd, the Redlock lock broker, speaking
// its text protocol 1.0-1.3 (doc/protocol.md at the top of the
// repository) with the standard library only.
//
// Concurrency model: every lock, leadership and observation has a
// connection (a lockd session) of its own while it lives; connections that
// hold nothing are pooled and reused. lockd's reentrancy is per session, so
// two goroutines sharing one session would both be granted the same key;
// with a session per holder, goroutines of one process exclude each other
// exactly as two processes do, wait in lockd's one FIFO queue, and a
// LOST event names the one holder it concerns. A *Client is safe for
// concurrent use.
package lockd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client is a handle on one lockd service (one or several lockd instances
// on the same masters, tried in order). Safe for concurrent use.
type Client struct {
	cfg       config
	noSession atomic.Bool // lockd answered SESSION with ERR PROTOCOL (speaks 1.0/1.1)
	mu        sync.Mutex
	idle      []*conn
	all       map[*conn]struct{}
	closed    bool
	// ends: the background ends of sessions under way (endSession), each
	// closing its channel when done.
	ends map[chan struct{}]struct{}
}

type config struct {
	addrs        []string
	password     string
	tls          *tls.Config
	resume       bool
	resumeWindow time.Duration
	heartbeat    bool // local deadlines, HELD heartbeat (deadline.go)
	dialTimeout  time.Duration
	maxIdle      int
	maxKeyLen    int
}

// Option configures Dial.
type Option func(*config)

// WithAddresses adds more lockd addresses (on the same masters), tried in
// order on connect and on resume. "unix:/path" or "/path" is a Unix socket.
func WithAddresses(addrs ...string) Option {
	return func(c *config) { c.addrs = append(c.addrs, addrs...) }
}

// WithPassword sends AUTH password first on every connection.
func WithPassword(pw string) Option { return func(c *config) { c.password = pw } }

// WithTLS speaks TLS with this configuration (ServerName defaults to the
// address's host).
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// WithoutResume asks for plain version-1 sessions: a broken connection
// then loses its locks at once.
func WithoutResume() Option { return func(c *config) { c.resume = false } }

// WithoutHeartbeat turns the local deadline off: no HELD goes with a
// grant or as a heartbeat, and a lock is reported lost only by lockd's
// LOST or by the end of its session; a lockd that is frozen or cut off
// then goes unnoticed for as long as its connection stays open. For
// measurements; do not use it where the lock protects anything.
func WithoutHeartbeat() Option { return func(c *config) { c.heartbeat = false } }

// WithResumeWindow bounds how long a broken connection of a resumable
// session is retried (RESUME) before its locks count as lost. Default 10 s
// (lockd's default grace).
func WithResumeWindow(d time.Duration) Option { return func(c *config) { c.resumeWindow = d } }

// WithMaxKeyLen sets the longest key and value the client sends (lockd's
// limits.max_key_len and limits.max_value_len; default 256).
func WithMaxKeyLen(n int) Option { return func(c *config) { c.maxKeyLen = n } }

// Dial connects to lockd at addr (host:port, or unix:/path) and checks it
// with one connection, which is kept in the pool.
func Dial(ctx context.Context, addr string, opts ...Option) (*Client, error) {
	cfg := config{addrs: []string{addr}, resume: true, resumeWindow: 10 * time.Second, heartbeat: true,
		dialTimeout: 5 * time.Second, maxIdle: 64, maxKeyLen: 256}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.password != "" {
		if err := checkWord("password", cfg.password, 4096); err != nil {
			return nil, err
		}
	}
	c := &Client{cfg: cfg, all: map[*conn]struct{}{}, ends: map[chan struct{}]struct{}{}}
	cn, err := c.dialConn(ctx, true)
	if err != nil {
		return nil, err
	}
	c.put(cn)
	return c, nil
}

func tlsClient(nc net.Conn, cfg *tls.Config, addr string) *tls.Conn {
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		if h, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = h
		}
	}
	return tls.Client(nc, cfg)
}

// Resumable reports whether new sessions are resumable (lockd speaks 1.2
// and resume was not turned off).
func (c *Client) Resumable() bool { return c.cfg.resume && !c.noSession.Load() }

// Close ends every session of the client (QUIT, so resumable sessions end
// too and their locks are released) and closes every connection. Locks
// still held are then lost (their Context is cancelled) when Close
// returns. A resumable session that QUIT cannot end on its own connection
// (it is being resumed, a Lock waits on it, or its QUIT goes unanswered
// for a second: the link went silent) is resumed on a new connection and
// ended there with QUIT, in the background: the session's lockd first,
// then the other addresses, tried again until the session's grace has
// passed. Close waits for those ends at most the dial timeout (5 s).
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	all := make([]*conn, 0, len(c.all))
	for cn := range c.all {
		all = append(all, cn)
	}
	c.idle = nil
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, cn := range all {
		wg.Add(1)
		go func(cn *conn) { defer wg.Done(); cn.quit() }(cn)
	}
	wg.Wait()
	c.waitEnds(c.cfg.dialTimeout)
	return nil
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// track adds cn to the connections Close ends (false when the client was
// closed meanwhile: Close will not see it), or removes it.
func (c *Client) track(cn *conn, add bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !add {
		delete(c.all, cn)
		return true
	}
	if c.closed {
		return false
	}
	c.all[cn] = struct{}{}
	return true
}

// get takes a pooled connection or dials a new one.
func (c *Client) get(ctx context.Context) (*conn, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if n := len(c.idle); n > 0 {
			cn := c.idle[n-1]
			c.idle = c.idle[:n-1]
			c.mu.Unlock()
			if cn.open() {
				return cn, nil
			}
			continue
		}
		c.mu.Unlock()
		return c.dialConn(ctx, true)
	}
}

// put returns a connection that holds nothing to the pool.
func (c *Client) put(cn *conn) {
	if !cn.poolable() {
		return // broken, ended, or being ended (retire)
	}
	cn.setOwner(nil)
	c.mu.Lock()
	if !c.closed && len(c.idle) < c.cfg.maxIdle {
		c.idle = append(c.idle, cn)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	cn.quit()
}

// query sends one request on a pooled connection.
func (c *Client) query(ctx context.Context, line string, multi bool) (reply, error) {
	cn, err := c.get(ctx)
	if err != nil {
		return reply{}, err
	}
	r, err := cn.do(ctx, line, multi)
	if err == nil {
		c.put(cn)
	}
	return r, err
}

// Ping checks that lockd answers.
func (c *Client) Ping(ctx context.Context) error {
	r, err := c.query(ctx, "PING", false)
	if err != nil {
		return err
	}
	if r.line != "PONG" {
		return unexpected(r.line)
	}
	return nil
}

// Status is the answer of STATUS key, or STATUS key PERMITS n.
type Status struct {
	State   string        // FREE, HELD, SHARED; PERMITS when asked with Permits(n)
	Holders int           // SHARED: shared holders; HELD: 1; PERMITS: permits held of the first n
	Permits int           // PERMITS: n, as asked
	TTL     time.Duration // lease left (HELD, SHARED)
	Waiters int           // sessions waiting on this lockd
}

// Status asks who holds key. With Permits(n), its only option, it asks
// about the key as a semaphore (STATUS key PERMITS n): State "PERMITS",
// Holders the number of its first n permits held (on any lockd), Permits
// n. Without it, a semaphore's key reads HELD while its permit 0 is held,
// whatever its other permits: ask a semaphore with Permits.
func (c *Client) Status(ctx context.Context, key string, opts ...LockOption) (Status, error) {
	if err := c.checkKey(key); err != nil {
		return Status{}, err
	}
	var o lockOpts
	for _, f := range opts {
		if err := f(&o); err != nil {
			return Status{}, err
		}
	}
	if o.shared || o.wait != "" || o.ttl != "" {
		return Status{}, fmt.Errorf("%w: Status takes Permits(n) only", ErrInvalid)
	}
	line := "STATUS " + key
	if o.permits > 0 {
		line += " PERMITS " + strconv.Itoa(o.permits)
	}
	r, err := c.query(ctx, line, false)
	if err != nil {
		return Status{}, err
	}
	f := strings.Fields(r.line)
	switch {
	case o.permits > 0 && len(f) == 4 && f[0] == "PERMITS":
		return Status{State: "PERMITS", Holders: atoi(f[1]), Permits: atoi(f[2]), Waiters: atoi(f[3])}, nil
	case o.permits > 0:
		// PERMITS asked: any other success line is not an answer to it
	case len(f) == 1 && f[0] == "FREE":
		return Status{State: "FREE"}, nil
	case len(f) == 3 && f[0] == "HELD":
		return Status{State: "HELD", Holders: 1, TTL: ms(f[1]), Waiters: atoi(f[2])}, nil
	case len(f) == 4 && f[0] == "SHARED":
		return Status{State: "SHARED", Holders: atoi(f[1]), TTL: ms(f[2]), Waiters: atoi(f[3])}, nil
	}
	return Status{}, replyErr(r.line)
}

func ms(s string) time.Duration { return time.Duration(atoi(s)) * time.Millisecond }

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func unexpected(line string) error {
	return fmt.Errorf("lockd: unexpected reply %q", line)
}

// replyErr maps a reply that is no success to its error.
func replyErr(line string) error {
	switch line {
	case "BUSY":
		return ErrBusy
	case "TIMEOUT":
		return ErrTimeout
	}
	if e := parseErr(line); e != nil {
		return e
	}
	return unexpected(line)
}

// checkWord refuses what cannot be sent safely as one protocol word:
// printable ASCII 0x21-0x7E only, 1 to max bytes. A key such as "k WAIT"
// would otherwise turn into options.
func checkWord(kind, s string, max int) error {
	if s == "" {
		return fmt.Errorf("%w: empty %s", ErrInvalid, kind)
	}
	if len(s) > max {
		return fmt.Errorf("%w: %s longer than %d bytes", ErrInvalid, kind, max)
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x21 || b > 0x7e {
			return fmt.Errorf("%w: %s %q has byte 0x%02x at %d (only printable ASCII without blanks)", ErrInvalid, kind, s, b, i)
		}
	}
	return nil
}

func (c *Client) checkKey(key string) error { return checkWord("key", key, c.cfg.maxKeyLen) }

// msArg renders a duration as whole milliseconds for WAIT/TTL/EXTEND,
// rounding up, refusing what lockd would refuse.
func msArg(what string, d time.Duration, zeroOK bool) (string, error) {
	n := (d + time.Millisecond - 1) / time.Millisecond
	if d < 0 || (n == 0 && !zeroOK) || n > 1<<31-1 {
		return "", fmt.Errorf("%w: %s %v out of range", ErrInvalid, what, d)
	}
	return strconv.FormatInt(int64(n), 10), nil
}

var errNoReply = errors.New("lockd: no reply")
