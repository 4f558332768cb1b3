package lockd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// A conn is one connection to lockd, and so one lockd session. Requests
// are written in order and their replies matched in order (the protocol
// answers each request once, in request order); a reader goroutine per
// connection reads every line, hands events (LOST, ELECTED, NOLEADER: a
// line's first word tells them from replies) to the conn's owner and
// replies to the oldest pending request.
type conn struct {
	c  *Client
	mu sync.Mutex
	nc net.Conn
	// pending: requests written and not answered yet, oldest first.
	pending []*call
	// state of the connection, guarded by mu.
	state connState
	// sessID and secret of a resumable session (1.2); empty when the
	// session is a plain version-1 one. grace is the grace lockd answered
	// (SESSION's grace_ms).
	sessID, secret string
	grace          time.Duration
	// addr: the index in the client's addresses of the lockd the
	// connection reached (where a background end tries first).
	addr int
	// stopResume ends the resume under way (set while resuming).
	stopResume context.CancelFunc
	// owner gets the events and hears of the end of the session; nil for
	// a pooled conn that holds nothing.
	owner owner
	// retired: the hold of this session was given up by the client (its
	// local deadline passed): the conn is never pooled again, and the
	// session is ended (QUIT now, or once a resume gets it back).
	retired bool
}

type connState int

const (
	connOpen     connState = iota // reading and writing
	connResuming                  // broke; the reader is reconnecting to RESUME the session
	connDead                      // closed by us or broke for good; never used again
)

// owner is what a conn tells about its session: a Lock, a Leadership or
// an observer.
type owner interface {
	event(f []string) // an event line, split in words
	ended()           // the session ended for good (closed, broke, not resumed); may come twice
	resumed()         // the session is back on a new connection (RESUME answered OK)
}

type call struct {
	multi bool // reply is lines closed by END (HELD, STATS)
	waits bool // a request that may wait in lockd's queue (LOCK, LOCKALL, CAMPAIGN)
	ch    chan reply
}

// waits tells a request that lockd may keep waiting without limit; a QUIT
// behind it is answered only after it.
func waits(line string) bool {
	verb, _, _ := strings.Cut(line, " ")
	return verb == "LOCK" || verb == "LOCKALL" || verb == "CAMPAIGN"
}

type reply struct {
	line  string
	lines []string
	err   error
}

func isEvent(word string) bool {
	return word == "LOST" || word == "ELECTED" || word == "NOLEADER"
}

// dialConn opens a connection, authenticates and, when resumable, asks for
// a resumable session (falling back silently to version 1 on ERR PROTOCOL).
func (c *Client) dialConn(ctx context.Context, resumable bool) (*conn, error) {
	if c.isClosed() {
		return nil, ErrClosed
	}
	nc, br, at, err := c.dialRaw(ctx)
	if err != nil {
		return nil, err
	}
	cn := &conn{c: c, nc: nc, addr: at}
	if resumable && c.cfg.resume && !c.noSession.Load() {
		line, err := syncRequest(ctx, nc, br, "SESSION")
		if err != nil {
			nc.Close()
			return nil, err
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && f[0] == "SESSION":
			cn.sessID, cn.secret = f[1], f[2]
			cn.grace = ms(f[3])
		case strings.HasPrefix(line, "ERR PROTOCOL"):
			// lockd speaks 1.0/1.1 only: plain sessions from now on.
			c.noSession.Store(true)
		default:
			// ERR QUORUM and the like: this session stays a plain one.
		}
	}
	if !c.track(cn, true) {
		// Closed while the connection was made: Close did not end it, so
		// nothing may be granted on it (its session holds nothing yet).
		nc.Close()
		return nil, ErrClosed
	}
	go cn.read(br)
	return cn, nil
}

// dialRaw connects to the first address that answers, in order, and
// authenticates. It returns the index of the address it reached.
func (c *Client) dialRaw(ctx context.Context) (net.Conn, *bufio.Reader, int, error) {
	var last error
	for i := range c.cfg.addrs {
		nc, br, err := c.dialAddr(ctx, i)
		if err == nil {
			return nc, br, i, nil
		}
		var e *Error
		if errors.As(err, &e) {
			return nil, nil, 0, e // AUTH refused: the same on every lockd
		}
		last = err
	}
	if last == nil {
		last = errors.New("no address")
	}
	return nil, nil, 0, fmt.Errorf("lockd: dial: %w", last)
}

// dialAddr connects to address i and authenticates; an *Error when lockd
// refused the password.
func (c *Client) dialAddr(ctx context.Context, i int) (net.Conn, *bufio.Reader, error) {
	a := c.cfg.addrs[i]
	network, addr := "tcp", a
	if strings.HasPrefix(a, "unix:") {
		network, addr = "unix", a[5:]
	} else if strings.HasPrefix(a, "/") {
		network = "unix"
	}
	d := net.Dialer{Timeout: c.cfg.dialTimeout, KeepAlive: 15 * time.Second}
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, nil, err
	}
	if c.cfg.tls != nil {
		tc := tlsClient(nc, c.cfg.tls, addr)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, nil, err
		}
		nc = tc
	}
	br := bufio.NewReader(nc)
	if c.cfg.password != "" {
		line, err := syncRequest(ctx, nc, br, "AUTH "+c.cfg.password)
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		if e := parseErr(line); e != nil {
			nc.Close()
			return nil, nil, e
		}
	}
	return nc, br, nil
}

// syncRequest writes one request and reads its reply on a connection whose
// reader goroutine is not running yet (skipping events, which a fresh
// session cannot have anyway).
func syncRequest(ctx context.Context, nc net.Conn, br *bufio.Reader, line string) (string, error) {
	rs, err := syncRequests(ctx, nc, br, line+"\r\n", 1)
	if err != nil {
		return "", err
	}
	return rs[0], nil
}

// syncRequests writes requests (lines ended by CRLF, one write) and reads
// n replies, events left out, until ctx ends (its deadline, or 10 s
// without one): the replies read so far, with the error that stopped it.
func syncRequests(ctx context.Context, nc net.Conn, br *bufio.Reader, requests string, n int) ([]string, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(10 * time.Second)
	}
	nc.SetDeadline(dl)
	// A ctx cancelled (not only past its deadline) stops the exchange too.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
			nc.SetDeadline(time.Unix(1, 0))
		case <-stop:
		}
	}()
	defer func() {
		close(stop)
		<-stopped
		nc.SetDeadline(time.Time{})
	}()
	var rs []string
	if _, err := nc.Write([]byte(requests)); err != nil {
		return rs, err
	}
	for len(rs) < n {
		s, err := br.ReadString('\n')
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return rs, err
		}
		s = strings.TrimRight(s, "\r\n")
		if f := strings.Fields(s); len(f) > 0 && isEvent(f[0]) {
			continue
		}
		rs = append(rs, s)
	}
	return rs, nil
}

// do sends one request and waits for its reply. When ctx ends first, the
// connection is abandoned (see abandon): that is the only way to make
// lockd drop a waiting LOCK, since the protocol has no cancel command.
func (cn *conn) do(ctx context.Context, line string, multi bool) (reply, error) {
	rs, err := cn.doMany(ctx, []string{line}, []bool{multi})
	if err != nil {
		return reply{}, err
	}
	return rs[0], nil
}

// doMany pipelines requests (one write) and waits for all their replies,
// under the rules of do: when ctx ends before the last reply, the
// connection is abandoned.
func (cn *conn) doMany(ctx context.Context, lines []string, multi []bool) ([]reply, error) {
	calls := make([]*call, len(lines))
	var b strings.Builder
	for i, l := range lines {
		calls[i] = &call{multi: multi[i], waits: waits(l), ch: make(chan reply, 1)}
		b.WriteString(l)
		b.WriteString("\r\n")
	}
	cn.mu.Lock()
	if cn.state != connOpen {
		cn.mu.Unlock()
		return nil, errBroken
	}
	cn.pending = append(cn.pending, calls...)
	cn.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := cn.nc.Write([]byte(b.String()))
	cn.mu.Unlock()
	if err != nil {
		cn.nc.Close() // the reader sees the break and fails the calls
	}
	rs := make([]reply, len(calls))
	for i, cl := range calls {
		select {
		case rs[i] = <-cl.ch:
			if rs[i].err != nil {
				return nil, rs[i].err
			}
		case <-ctx.Done():
			cn.abandon()
			return nil, ctx.Err()
		}
	}
	return rs, nil
}

// abandon ends the session now: close the connection, so that lockd
// cancels a waiting LOCK and releases what the session holds. A resumable
// session that holds or waits for something would only be detached by a
// close (its holds kept for the grace); one being resumed is not even
// that (the resume stops here, and its RESUME may still reach lockd). So
// such a session is resumed on a new connection and ended there with
// QUIT, in the background (endSession). A pooled one holds nothing: the
// close is enough.
func (cn *conn) abandon() {
	cn.mu.Lock()
	if cn.state == connDead {
		cn.mu.Unlock()
		return
	}
	cn.state = connDead
	nc := cn.nc
	stop := cn.stopResume
	end := cn.sessID != "" && cn.owner != nil
	id, secret, at, grace := cn.sessID, cn.secret, cn.addr, cn.grace
	cn.mu.Unlock()
	nc.Close()
	if stop != nil {
		stop()
	}
	if end {
		cn.c.spawnEnd(id, secret, at, grace)
	}
}

// retire gives the session up for good without waiting for anything: the
// conn is never pooled again; an open one is ended with QUIT (abandoned
// if lockd does not answer within a second), one being resumed is ended
// once the resume gets it back.
func (cn *conn) retire() {
	cn.mu.Lock()
	cn.retired = true
	open := cn.state == connOpen
	cn.mu.Unlock()
	if open {
		go cn.quit()
	}
}

// spawnEnd runs endSession in a goroutine of its own, which Close waits
// for (a bounded time).
func (c *Client) spawnEnd(id, secret string, at int, grace time.Duration) {
	done := make(chan struct{})
	c.mu.Lock()
	c.ends[done] = struct{}{}
	c.mu.Unlock()
	go func() {
		defer func() {
			c.mu.Lock()
			delete(c.ends, done)
			c.mu.Unlock()
			close(done)
		}()
		c.endSession(id, secret, at, grace)
	}()
}

// waitEnds waits for the background ends under way, at most d.
func (c *Client) waitEnds(d time.Duration) {
	c.mu.Lock()
	var ends []chan struct{}
	for e := range c.ends {
		ends = append(ends, e)
	}
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	for _, e := range ends {
		select {
		case <-e:
		case <-t.C:
			return
		}
	}
}

// endSession ends a resumable session that its own connection cannot end:
// on a new connection, RESUME id secret then QUIT, on the address the
// session was on first (at), then on the others in order. It tries again,
// after a pause once every address was tried, while lockd answers nothing
// or ERR QUORUM, until the grace has passed (from now: a session lockd
// detached before has ended by then without us); ERR NOSESSION means the
// session ended already. Each try is bounded by the dial timeout.
func (c *Client) endSession(id, secret string, at int, grace time.Duration) {
	if grace <= 0 {
		grace = c.cfg.resumeWindow
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	n := len(c.cfg.addrs)
	back := 50 * time.Millisecond
	for i := 0; ctx.Err() == nil; i++ {
		tctx, tcancel := context.WithTimeout(ctx, c.cfg.dialTimeout)
		err := c.endOn(tctx, (at+i)%n, id, secret)
		tcancel()
		if !retryEnd(err) {
			return
		}
		if (i+1)%n == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(back):
			}
			back = minDur(2*back, 500*time.Millisecond)
		}
	}
}

// retryEnd: the try did not end the session and another may. Ended: no
// error, or lockd refused the RESUME for good (ERR NOSESSION: gone
// already; any other ERR but QUORUM would be refused again, as a refused
// password).
func retryEnd(err error) bool {
	var e *Error
	return err != nil && (!errors.As(err, &e) || errors.Is(err, ErrQuorum))
}

// endOn is one try of endSession, on address i: RESUME and QUIT in one
// write. nil when QUIT was answered OK.
func (c *Client) endOn(ctx context.Context, i int, id, secret string) error {
	nc, br, err := c.dialAddr(ctx, i)
	if err != nil {
		return err
	}
	defer nc.Close()
	rs, err := syncRequests(ctx, nc, br, "RESUME "+id+" "+secret+"\r\nQUIT\r\n", 2)
	if len(rs) > 0 && !strings.HasPrefix(rs[0], "OK") {
		return replyErr(rs[0]) // ERR NOSESSION, ERR QUORUM...
	}
	if err != nil {
		return err // no answer; or RESUME's OK and no QUIT's (another RESUME took the session)
	}
	if rs[1] != "OK" {
		return unexpected(rs[1])
	}
	return nil
}

// quit ends the session with QUIT (best effort, bounded) and closes. Its
// owner is told before quit returns, not only when the reader sees the
// close: once Client.Close returns, nothing of that client says it holds
// anything (the reader may tell it again: ended is idempotent). A session
// that QUIT cannot end is abandoned (ended on a new connection): one
// being resumed, one with a LOCK waiting (lockd would answer the QUIT
// only after it), one whose QUIT goes unanswered within a second (the
// link may have gone silent: lockd then keeps the session attached, with
// its holds) or whose connection broke before the answer.
func (cn *conn) quit() {
	defer cn.tellEnded()
	cn.mu.Lock()
	waiting := false
	for _, cl := range cn.pending {
		waiting = waiting || cl.waits
	}
	if cn.state != connOpen || waiting {
		cn.mu.Unlock()
		cn.abandon()
		return
	}
	cn.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := cn.do(ctx, "QUIT", false); err != nil {
		cn.abandon() // done already when ctx ended (do abandons then)
		return
	}
	cn.mu.Lock()
	cn.state = connDead
	cn.mu.Unlock()
	cn.nc.Close()
}

// tellEnded tells the conn's owner that its session has ended.
func (cn *conn) tellEnded() {
	cn.mu.Lock()
	o := cn.owner
	cn.mu.Unlock()
	if o != nil {
		o.ended()
	}
}

func (cn *conn) setOwner(o owner) {
	cn.mu.Lock()
	cn.owner = o
	cn.mu.Unlock()
}

func (cn *conn) open() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.state == connOpen
}

// poolable: open, and not given up by its hold.
func (cn *conn) poolable() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.state == connOpen && !cn.retired
}

func (cn *conn) alive() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.state != connDead
}

// read is the connection's reader goroutine.
func (cn *conn) read(br *bufio.Reader) {
	for {
		err := cn.readLoop(br)
		nbr := cn.broken(err)
		if nbr == nil {
			return
		}
		br = nbr
	}
}

func (cn *conn) readLoop(br *bufio.Reader) error {
	var multi []string
	for {
		s, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		s = strings.TrimRight(s, "\r\n")
		f := strings.Fields(s)
		if len(f) > 0 && isEvent(f[0]) && multi == nil {
			cn.mu.Lock()
			o := cn.owner
			cn.mu.Unlock()
			if o != nil {
				o.event(f)
			}
			continue
		}
		cn.mu.Lock()
		if len(cn.pending) == 0 {
			cn.mu.Unlock()
			continue // a reply nobody asked for: ignore it
		}
		cl := cn.pending[0]
		if cl.multi && !(multi == nil && strings.HasPrefix(s, "ERR")) {
			if s != "END" {
				multi = append(multi, s)
				cn.mu.Unlock()
				continue
			}
		}
		cn.pending = cn.pending[1:]
		cn.mu.Unlock()
		cl.ch <- reply{line: s, lines: multi}
		multi = nil
	}
}

// broken handles the end of a connection. Calls in flight fail with
// errBroken. A resumable session that holds something is resumed on a new
// connection (RESUME id secret) for up to the resume window; the reader
// then goes on with the new connection's reader. Otherwise the session
// has ended and the owner is told.
func (cn *conn) broken(err error) *bufio.Reader {
	cn.mu.Lock()
	calls := cn.pending
	cn.pending = nil
	dead := cn.state == connDead
	resume := !dead && cn.sessID != "" && cn.owner != nil
	if resume {
		cn.state = connResuming
	} else {
		cn.state = connDead
	}
	o := cn.owner
	cn.mu.Unlock()
	cn.nc.Close()
	for _, cl := range calls {
		cl.ch <- reply{err: errBroken}
	}
	if resume {
		if br := cn.resume(); br != nil {
			// o was read under mu when the break was seen; it stays the
			// owner while the session is resumed (nobody pools a conn
			// that is not open).
			o.resumed()
			return br
		}
		cn.mu.Lock()
		cn.state = connDead
		cn.mu.Unlock()
	}
	cn.c.track(cn, false)
	if o != nil {
		o.ended()
	}
	return nil
}

// resume sends RESUME on new connections until one answers OK, for up to
// the resume window; abandon stops it (stopResume). It returns the new
// connection's reader, or nil when the session is not back.
func (cn *conn) resume() *bufio.Reader {
	rctx, stop := context.WithTimeout(context.Background(), cn.c.cfg.resumeWindow)
	defer stop()
	cn.mu.Lock()
	if cn.state != connResuming {
		cn.mu.Unlock()
		return nil // abandoned since the break (it ends the session elsewhere)
	}
	cn.stopResume = stop
	cn.mu.Unlock()
	defer func() {
		cn.mu.Lock()
		cn.stopResume = nil
		cn.mu.Unlock()
	}()
	for back := 50 * time.Millisecond; rctx.Err() == nil; back = minDur(2*back, 250*time.Millisecond) {
		if cn.c.isClosed() {
			return nil
		}
		nc, br, at, err := cn.c.dialRaw(rctx)
		if err == nil {
			var line string
			line, err = syncRequest(rctx, nc, br, "RESUME "+cn.sessID+" "+cn.secret)
			if err == nil && strings.HasPrefix(line, "OK") {
				cn.mu.Lock()
				if cn.state != connResuming || cn.retired {
					// Abandoned or given up meanwhile: end the session
					// rather than leave it detached with its holds (an
					// abandon also ends it on a connection of its own).
					cn.mu.Unlock()
					qctx, qcancel := context.WithTimeout(context.Background(), cn.c.cfg.dialTimeout)
					syncRequest(qctx, nc, br, "QUIT")
					qcancel()
					nc.Close()
					return nil
				}
				cn.nc = nc
				cn.addr = at
				cn.state = connOpen
				cn.mu.Unlock()
				return br
			}
			nc.Close()
			if err == nil && !strings.HasPrefix(line, "ERR QUORUM") {
				return nil // ERR NOSESSION: the session is gone
			}
		}
		select {
		case <-rctx.Done():
		case <-time.After(back):
		}
	}
	return nil
}

func minDur(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}
