package lockd

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Leadership is this client's leadership of an election (protocol 1.3):
// a lock of the election's name with a published value.
type Leadership struct{ *hold }

// Leader is who leads an election, as LEADER or an ELECTED event tells.
type Leader struct {
	Name  string
	Fence uint64 // 0 when nobody leads (NOLEADER)
	Value string // "" when nobody leads, or the name is held by a plain LOCK
}

// CampaignOption modifies Campaign.
type CampaignOption = LockOption

// Campaign waits to lead the election name and publishes value with the
// leader's fence (CAMPAIGN name value [WAIT ms]). Only Wait applies.
// ctx bounds the wait as for Lock.
func (c *Client) Campaign(ctx context.Context, name, value string, opts ...CampaignOption) (*Leadership, error) {
	if err := c.checkKey(name); err != nil {
		return nil, err
	}
	if err := checkWord("value", value, c.cfg.maxKeyLen); err != nil {
		return nil, err
	}
	var o lockOpts
	for _, f := range opts {
		if err := f(&o); err != nil {
			return nil, err
		}
	}
	line := "CAMPAIGN " + name + " " + value
	if o.wait != "" {
		line += " WAIT " + o.wait
	}
	h, err := c.grant(ctx, name, line, false)
	if err != nil {
		return nil, err
	}
	return &Leadership{h}, nil
}

// Proclaim publishes a new value (the fence stays).
func (l *Leadership) Proclaim(ctx context.Context, value string) error {
	if err := checkWord("value", value, l.c.cfg.maxKeyLen); err != nil {
		return err
	}
	if !l.Held() {
		return l.notHeld()
	}
	r, err := l.cn.do(ctx, "PROCLAIM "+l.key+" "+value, false)
	if err != nil {
		return err
	}
	if r.line == "OK" {
		return nil
	}
	return replyErr(r.line)
}

// Resign gives up the leadership (RESIGN name).
func (l *Leadership) Resign(ctx context.Context) error { return l.release(ctx, "RESIGN "+l.key) }

// Leader asks who leads name (LEADER name); ErrNoLeader when nobody does.
// A name held by a plain LOCK gives a Leader without Value.
func (c *Client) Leader(ctx context.Context, name string) (Leader, error) {
	if err := c.checkKey(name); err != nil {
		return Leader{}, err
	}
	r, err := c.query(ctx, "LEADER "+name, false)
	if err != nil {
		return Leader{}, err
	}
	f := strings.Fields(r.line)
	if len(f) == 1 && f[0] == "NONE" {
		return Leader{Name: name}, ErrNoLeader
	}
	if (len(f) == 2 || len(f) == 3) && f[0] == "LEADER" {
		fence, err := strconv.ParseUint(f[1], 10, 64)
		if err == nil {
			ld := Leader{Name: name, Fence: fence}
			if len(f) == 3 {
				ld.Value = f[2]
			}
			return ld, nil
		}
	}
	return Leader{}, replyErr(r.line)
}

// observer receives the events of one OBSERVE connection and keeps only
// the latest state for a slow reader (observers may miss an intermediate
// value, never the last one).
type observer struct {
	name   string
	latest chan Leader // capacity 1: holds the newest unread state
	broke  chan struct{}
	once   sync.Once // ended is told by the reader and by Close: broke closes once
}

func (o *observer) event(f []string) {
	var ld Leader
	switch {
	case f[0] == "ELECTED" && len(f) >= 3 && f[1] == o.name:
		fence, _ := strconv.ParseUint(f[2], 10, 64)
		ld = Leader{Name: o.name, Fence: fence}
		if len(f) >= 4 {
			ld.Value = f[3]
		}
	case f[0] == "NOLEADER" && len(f) >= 2 && f[1] == o.name:
		ld = Leader{Name: o.name}
	default:
		return
	}
	for {
		select {
		case o.latest <- ld:
			return
		default:
			select {
			case <-o.latest: // drop the older unread state
			default:
			}
		}
	}
}

func (o *observer) ended() { o.once.Do(func() { close(o.broke) }) }

func (o *observer) resumed() {} // observations are not resumed: OBSERVE goes on a plain session

// Observe watches the election name: the channel gets the current leader
// at once (Fence 0 when none) and every change after, until ctx ends, when
// it is closed. A reader that falls behind gets the newest state, never an
// older one after a newer. The observation has a connection of its own; a
// broken connection is dialled again and OBSERVE sent again.
func (c *Client) Observe(ctx context.Context, name string) (<-chan Leader, error) {
	if err := c.checkKey(name); err != nil {
		return nil, err
	}
	start := func() (*conn, *observer, error) {
		cn, err := c.dialConn(ctx, false)
		if err != nil {
			return nil, nil, err
		}
		o := &observer{name: name, latest: make(chan Leader, 1), broke: make(chan struct{})}
		cn.setOwner(o)
		r, err := cn.do(ctx, "OBSERVE "+name, false)
		if err != nil {
			cn.abandon()
			return nil, nil, err
		}
		if r.line != "OK" {
			cn.abandon()
			return nil, nil, replyErr(r.line)
		}
		return cn, o, nil
	}
	cn, o, err := start()
	if err != nil {
		return nil, err
	}
	out := make(chan Leader)
	go func() {
		defer close(out)
		var last *Leader
		for {
			var pending chan Leader
			if last != nil {
				pending = out
			}
			var v Leader
			if last != nil {
				v = *last
			}
			select {
			case <-ctx.Done():
				cn.abandon()
				return
			case ld := <-o.latest:
				last = &ld
			case pending <- v:
				last = nil
			case <-o.broke:
				for ctx.Err() == nil && !c.isClosed() {
					if cn, o, err = start(); err == nil {
						break
					}
					select {
					case <-ctx.Done():
					case <-time.After(200 * time.Millisecond):
					}
				}
				if ctx.Err() != nil || c.isClosed() {
					return
				}
			}
		}
	}()
	return out, nil
}
