package lockd

import (
	"errors"
	"strings"
)

// Sentinel errors. A reply "ERR CODE text" is returned as an *Error whose
// Is method matches the sentinel of its code, so errors.Is works on both.
var (
	// ErrBusy: TRYLOCK found the key held (reply BUSY).
	ErrBusy = errors.New("lockd: busy")
	// ErrTimeout: LOCK/CAMPAIGN with WAIT ended without a grant (reply TIMEOUT).
	ErrTimeout = errors.New("lockd: timeout")
	// ErrQuorum: no majority of the Redis masters answered in time (ERR QUORUM).
	ErrQuorum = errors.New("lockd: no quorum")
	// ErrLost: the lock (or leadership) was lost: a LOST event, its local
	// deadline passed unconfirmed, or its session ended without a resume.
	ErrLost = errors.New("lockd: lock lost")
	// ErrNotHeld: the lock is not held (ERR NOTHELD, or unlocked twice).
	ErrNotHeld = errors.New("lockd: not held")
	// ErrNotLeader: PROCLAIM/RESIGN by a session that does not lead (ERR NOTLEADER).
	ErrNotLeader = errors.New("lockd: not leader")
	// ErrNoLeader: LEADER answered NONE.
	ErrNoLeader = errors.New("lockd: no leader")
	// ErrNoSession: RESUME found no such session (ERR NOSESSION).
	ErrNoSession = errors.New("lockd: no such session")
	// ErrShutdown: lockd is stopping (ERR SHUTDOWN).
	ErrShutdown = errors.New("lockd: shutting down")
	// ErrAuth: the password was refused or is required (ERR AUTH, ERR NOAUTH).
	ErrAuth = errors.New("lockd: authentication failed")
	// ErrInvalid: the client refused an argument it cannot send safely
	// (a key or value with blanks, control bytes, non-ASCII, empty or too
	// long; a negative or too large duration). Nothing was sent.
	ErrInvalid = errors.New("lockd: invalid argument")
	// ErrProtocol: a reply the client does not understand (a WHO reply
	// line of an unknown kind, a malformed number), or lockd's own
	// ERR PROTOCOL (a request it does not understand).
	ErrProtocol = errors.New("lockd: protocol error")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("lockd: client closed")
	// errBroken: the connection broke while a request was in flight.
	errBroken = errors.New("lockd: connection broken")
)

// Error is a reply "ERR CODE text" from lockd.
type Error struct {
	Code string // PROTOCOL, ARG, KEY, NOTHELD, QUORUM, LIMIT, NOAUTH, AUTH, SHUTDOWN, NOSESSION, NOTLEADER
	Text string // the rest of the line
}

func (e *Error) Error() string {
	if e.Text == "" {
		return "lockd: ERR " + e.Code
	}
	return "lockd: ERR " + e.Code + " " + e.Text
}

// Is lets errors.Is(err, ErrQuorum) (and the other sentinels) match a reply.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrQuorum:
		return e.Code == "QUORUM"
	case ErrNotHeld:
		return e.Code == "NOTHELD"
	case ErrNotLeader:
		return e.Code == "NOTLEADER"
	case ErrNoSession:
		return e.Code == "NOSESSION"
	case ErrShutdown:
		return e.Code == "SHUTDOWN"
	case ErrAuth:
		return e.Code == "AUTH" || e.Code == "NOAUTH"
	case ErrProtocol:
		return e.Code == "PROTOCOL"
	}
	if t, ok := target.(*Error); ok {
		return t.Code == e.Code && (t.Text == "" || t.Text == e.Text)
	}
	return false
}

// parseErr turns "ERR CODE text" into an *Error; nil if line is no error.
func parseErr(line string) *Error {
	if !strings.HasPrefix(line, "ERR") {
		return nil
	}
	rest := strings.TrimSpace(line[3:])
	code, text, _ := strings.Cut(rest, " ")
	return &Error{Code: code, Text: strings.TrimSpace(text)}
}
