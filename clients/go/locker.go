package lockd

import (
	"context"
	"fmt"
	"sync"
)

// Locker is a sync.Locker of one key, as etcd's concurrency.NewLocker
// offers: code written for a sync.Mutex takes the key across processes.
// Each Lock takes a hold of its own (a session of its own, so goroutines
// exclude each other as processes do); Unlock releases the oldest hold
// taken and not released, from any goroutine, as sync.Mutex allows.
//
// Neither method can return an error, so both panic with it, wrapped
// (errors.Is works on the recovered value): Lock when it cannot take the
// key (ErrClosed, ErrTimeout with Wait, a broken connection), Unlock with
// ErrLost when the lock was lost while held (the critical section ran
// without it, which the caller must hear of), and with ErrNotHeld when
// nothing is held, as sync.Mutex panics on an unlock of an unlocked mutex.
// Use Client.Lock where the work should stop at a loss (its Context).
type Locker struct {
	c    *Client
	key  string
	opts []LockOption
	mu   sync.Mutex
	held []*Lock // oldest first
}

var _ sync.Locker = (*Locker)(nil)

// NewLocker returns a Locker of key; opts are those of Lock.
func (c *Client) NewLocker(key string, opts ...LockOption) *Locker {
	return &Locker{c: c, key: key, opts: opts}
}

// Lock waits for the key without a time limit (unless opts had Wait).
func (k *Locker) Lock() {
	l, err := k.c.Lock(context.Background(), k.key, k.opts...)
	if err != nil {
		panic(fmt.Errorf("lockd: Locker %q: Lock: %w", k.key, err))
	}
	k.mu.Lock()
	k.held = append(k.held, l)
	k.mu.Unlock()
}

// Unlock releases the oldest hold.
func (k *Locker) Unlock() {
	k.mu.Lock()
	if len(k.held) == 0 {
		k.mu.Unlock()
		panic(fmt.Errorf("lockd: Locker %q: Unlock of an unlocked Locker: %w", k.key, ErrNotHeld))
	}
	l := k.held[0]
	k.held = k.held[1:]
	k.mu.Unlock()
	if err := l.Unlock(context.Background()); err != nil {
		panic(fmt.Errorf("lockd: Locker %q: Unlock: %w", k.key, err))
	}
}

// Hold is the newest hold taken by Lock and not released yet (nil when
// none): its Context is cancelled when it is lost.
func (k *Locker) Hold() *Lock {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.held) == 0 {
		return nil
	}
	return k.held[len(k.held)-1]
}
