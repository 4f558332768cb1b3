package lockd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// HoldKind is the kind of a hold in a WHO reply.
type HoldKind string

const (
	KindExclusive HoldKind = "exclusive" // a lock (or an election's leader)
	KindShared    HoldKind = "shared"    // a shared hold
	KindPermit    HoldKind = "permit"    // a permit: Holder.Permit of Holder.Permits
)

// Holder is one HOLDER line of a WHO reply.
type Holder struct {
	// Fence is the hold's fence on the lockd that holds it; asked on
	// another lockd, the key's latest fence, no lower than the hold's.
	Fence uint64
	Kind  HoldKind
	// Permit is i and Permits n of permit=i/n (KindPermit only; else 0).
	// Permits is 0 when lockd does not know n (it wrote permit=i/-).
	Permit, Permits int
	// Lockd is the holding lockd's name, "-" when no master knows it.
	Lockd string
	// Client, Session and Held are known only when the hold's session is
	// on the lockd asked: then HasHeld is true, Client is the client's
	// address ("-" while its session is detached) and Session the id of a
	// resumable session ("-" for a plain one). Elsewhere Client and
	// Session are "" and HasHeld false.
	Client, Session string
	Held            time.Duration // since the grant, or since this lockd adopted the session
	HasHeld         bool
}

// Delayed is a WHO reply's DELAYED line: the key is in a lock-delay.
type Delayed struct {
	Left  time.Duration // what is left of the delay
	Fence uint64        // the key's latest fence
}

// WhoReply is the answer of WHO key: the holders in lockd's order, and
// Delayed while the key is in a lock-delay (else nil). A free key has
// neither.
type WhoReply struct {
	Holders []Holder
	Delayed *Delayed
}

// Free reports that nobody holds the key and it is in no lock-delay.
func (w WhoReply) Free() bool { return len(w.Holders) == 0 && w.Delayed == nil }

// Who asks who holds key (protocol 1.4): lockd reads a majority of the
// masters. errors.Is(err, ErrQuorum) when no majority answered;
// ErrProtocol for a reply line this client does not know (word=value
// tokens it does not know are ignored); ErrInvalid, before anything is
// sent, for a key it cannot send.
func (c *Client) Who(ctx context.Context, key string) (WhoReply, error) {
	if err := c.checkKey(key); err != nil {
		return WhoReply{}, err
	}
	r, err := c.query(ctx, "WHO "+key, true)
	if err != nil {
		return WhoReply{}, err
	}
	if r.line != "END" {
		return WhoReply{}, replyErr(r.line)
	}
	return parseWho(r.lines)
}

func whoErr(what, line string) error {
	return &Error{Code: "PROTOCOL", Text: fmt.Sprintf("%s in WHO reply line %q", what, line)}
}

// whoUint reads a number as lockd writes it: decimal digits only.
func whoUint(s, what, line string, bits int) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, whoErr("bad "+what+" "+strconv.Quote(s), line)
	}
	return n, nil
}

// whoTokens reads the word=value tokens of a line (the first of a name
// counts); a token without '=' is an error.
func whoTokens(words []string, line string) (map[string]string, error) {
	out := make(map[string]string, len(words))
	for _, w := range words {
		name, value, ok := strings.Cut(w, "=")
		if !ok || name == "" {
			return nil, whoErr("bad token "+strconv.Quote(w), line)
		}
		if _, seen := out[name]; !seen {
			out[name] = value
		}
	}
	return out, nil
}

func parseHolder(line string) (Holder, error) {
	w := strings.Split(line, " ")
	if len(w) < 4 || w[0] != "HOLDER" {
		return Holder{}, whoErr("bad line", line)
	}
	var h Holder
	var err error
	if h.Fence, err = whoUint(w[1], "fence", line, 64); err != nil {
		return Holder{}, err
	}
	switch kind := w[2]; {
	case kind == "exclusive" || kind == "shared":
		h.Kind = HoldKind(kind)
	case strings.HasPrefix(kind, "permit="):
		i, n, ok := strings.Cut(kind[len("permit="):], "/")
		if !ok {
			return Holder{}, whoErr("bad kind "+strconv.Quote(kind), line)
		}
		v, err := whoUint(i, "permit", line, 31)
		if err != nil {
			return Holder{}, err
		}
		h.Kind, h.Permit = KindPermit, int(v)
		if n != "-" {
			if v, err = whoUint(n, "permit count", line, 31); err != nil {
				return Holder{}, err
			}
			h.Permits = int(v)
		}
	default:
		return Holder{}, whoErr("unknown kind "+strconv.Quote(kind), line)
	}
	x, err := whoTokens(w[3:], line)
	if err != nil {
		return Holder{}, err
	}
	if h.Lockd = x["lockd"]; h.Lockd == "" {
		return Holder{}, whoErr("no lockd=", line)
	}
	h.Client, h.Session = x["client"], x["session"]
	if s, ok := x["held_ms"]; ok {
		v, err := whoUint(s, "held_ms", line, 43) // whole ms that fit a Duration
		if err != nil {
			return Holder{}, err
		}
		h.Held, h.HasHeld = time.Duration(v)*time.Millisecond, true
	}
	return h, nil
}

// parseWho reads the lines of a WHO reply before its END: HOLDER lines
// and at most one DELAYED line; anything else is an ErrProtocol.
func parseWho(lines []string) (WhoReply, error) {
	var out WhoReply
	for _, line := range lines {
		word, _, _ := strings.Cut(line, " ")
		switch word {
		case "HOLDER":
			h, err := parseHolder(line)
			if err != nil {
				return WhoReply{}, err
			}
			out.Holders = append(out.Holders, h)
		case "DELAYED":
			w := strings.Split(line, " ")
			if len(w) < 3 || out.Delayed != nil {
				return WhoReply{}, whoErr("bad line", line)
			}
			if _, err := whoTokens(w[3:], line); err != nil {
				return WhoReply{}, err
			}
			left, err := whoUint(w[1], "ms_left", line, 43)
			if err != nil {
				return WhoReply{}, err
			}
			fence, err := whoUint(w[2], "fence", line, 64)
			if err != nil {
				return WhoReply{}, err
			}
			out.Delayed = &Delayed{Left: time.Duration(left) * time.Millisecond, Fence: fence}
		default:
			return WhoReply{}, whoErr("unexpected line", line)
		}
	}
	return out, nil
}
