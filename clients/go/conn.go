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
	// session is a plain version-1 one.
	sessID, secret string
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
	ch    chan reply
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
	nc, br, err := c.dialRaw(ctx)
	if err != nil {
		return nil, err
	}
	cn := &conn{c: c, nc: nc}
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
		case strings.HasPrefix(line, "ERR PROTOCOL"):
			// lockd speaks 1.0/1.1 only: plain sessions from now on.
			c.noSession.Store(true)
		default:
			// ERR QUORUM and the like: this session stays a plain one.
		}
	}
	c.track(cn, true)
	go cn.read(br)
	return cn, nil
}

// dialRaw connects to the first address that answers, in order, and
// authenticates.
func (c *Client) dialRaw(ctx context.Context) (net.Conn, *bufio.Reader, error) {
	var last error
	for _, a := range c.cfg.addrs {
		network, addr := "tcp", a
		if strings.HasPrefix(a, "unix:") {
			network, addr = "unix", a[5:]
		} else if strings.HasPrefix(a, "/") {
			network = "unix"
		}
		d := net.Dialer{Timeout: c.cfg.dialTimeout, KeepAlive: 15 * time.Second}
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			last = err
			continue
		}
		if c.cfg.tls != nil {
			tc := tlsClient(nc, c.cfg.tls, addr)
			if err := tc.HandshakeContext(ctx); err != nil {
				nc.Close()
				last = err
				continue
			}
			nc = tc
		}
		br := bufio.NewReader(nc)
		if c.cfg.password != "" {
			line, err := syncRequest(ctx, nc, br, "AUTH "+c.cfg.password)
			if err != nil {
				nc.Close()
				last = err
				continue
			}
			if e := parseErr(line); e != nil {
				nc.Close()
				return nil, nil, e
			}
		}
		return nc, br, nil
	}
	if last == nil {
		last = errors.New("no address")
	}
	return nil, nil, fmt.Errorf("lockd: dial: %w", last)
}

// syncRequest writes one request and reads its reply on a connection whose
// reader goroutine is not running yet (skipping events, which a fresh
// session cannot have anyway).
func syncRequest(ctx context.Context, nc net.Conn, br *bufio.Reader, line string) (string, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(10 * time.Second)
	}
	nc.SetDeadline(dl)
	defer nc.SetDeadline(time.Time{})
	if _, err := nc.Write([]byte(line + "\r\n")); err != nil {
		return "", err
	}
	for {
		s, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		s = strings.TrimRight(s, "\r\n")
		if f := strings.Fields(s); len(f) > 0 && isEvent(f[0]) {
			continue
		}
		return s, nil
	}
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
		calls[i] = &call{multi: multi[i], ch: make(chan reply, 1)}
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
// session would only be detached by a close (its holds kept for the
// grace), so it is resumed on a fresh connection and ended with QUIT, in
// the background; while the reader is resuming it already, the reader
// does that when it gets the session back (see resume).
func (cn *conn) abandon() {
	cn.mu.Lock()
	if cn.state == connDead {
		cn.mu.Unlock()
		return
	}
	resuming := cn.state == connResuming
	cn.state = connDead
	nc := cn.nc
	id, secret := cn.sessID, cn.secret
	cn.mu.Unlock()
	nc.Close()
	if id != "" && !resuming {
		go cn.c.endDetached(id, secret)
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

// endDetached resumes a detached session and ends it with QUIT.
func (c *Client) endDetached(id, secret string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := 0; i < 3 && ctx.Err() == nil; i++ {
		nc, br, err := c.dialRaw(ctx)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		line, err := syncRequest(ctx, nc, br, "RESUME "+id+" "+secret)
		if err == nil && strings.HasPrefix(line, "OK") {
			syncRequest(ctx, nc, br, "QUIT")
		}
		nc.Close()
		if err == nil {
			return
		}
	}
}

// quit ends the session with QUIT (best effort, bounded) and closes. Its
// owner is told before quit returns, not only when the reader sees the
// close: once Client.Close returns, nothing of that client says it holds
// anything (the reader may tell it again: ended is idempotent).
func (cn *conn) quit() {
	defer cn.tellEnded()
	cn.mu.Lock()
	if cn.state != connOpen {
		cn.mu.Unlock()
		cn.abandon()
		return
	}
	cn.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := cn.do(ctx, "QUIT", false); err != nil {
		return // do abandoned it
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

func (cn *conn) resume() *bufio.Reader {
	deadline := time.Now().Add(cn.c.cfg.resumeWindow)
	for back := 50 * time.Millisecond; time.Now().Before(deadline); back = minDur(2*back, 250*time.Millisecond) {
		if cn.c.isClosed() {
			return nil
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		nc, br, err := cn.c.dialRaw(ctx)
		if err == nil {
			var line string
			line, err = syncRequest(ctx, nc, br, "RESUME "+cn.sessID+" "+cn.secret)
			if err == nil && strings.HasPrefix(line, "OK") {
				cn.mu.Lock()
				if cn.state != connResuming || cn.retired {
					// Abandoned or given up meanwhile: end the session
					// rather than leave it detached with its holds.
					cn.mu.Unlock()
					syncRequest(ctx, nc, br, "QUIT")
					cancel()
					nc.Close()
					return nil
				}
				cancel()
				cn.nc = nc
				cn.state = connOpen
				cn.mu.Unlock()
				return br
			}
			nc.Close()
			if err == nil && !strings.HasPrefix(line, "ERR QUORUM") {
				cancel()
				return nil // ERR NOSESSION: the session is gone
			}
		}
		cancel()
		time.Sleep(back)
	}
	return nil
}

func minDur(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}
