/* locktab_int: what locktab.c (the table of keys, its queues and grants)
 * and renew.c (a hold's life after its grant) share: a hold, a key entry
 * and the states of a hold. Private to those two files and the pure
 * conflict.c; sessions and tests see only locktab.h. Types only: neither
 * file's functions, and nothing of locktab.h, so that conflict.c sits
 * below the table it serves. */
#ifndef LOCKD_LOCKTAB_INT_H
#define LOCKD_LOCKTAB_INT_H

#include <stdint.h>

#include "dheap.h"
#include "keytab.h"
#include "locktab_types.h"
#include "redlock.h"
#include "util.h"
#include "ilist.h"

enum lk_state {
	LK_IDLE,      /* no acquire in flight */
	LK_ACQUIRING, /* an acquire or handoff for one waiter is in flight */
};

/* Where a hold is in its life, and so on which lists (rn_hold_state is
 * the one function that moves it, and checks the move). Every state but
 * HS_NONE and HS_ENDED is held: on lk->holds, holder->locks and, with its
 * validity, in the deadline heap. */
enum hold_state {
	HS_NONE,     /* being set up by its grant: on no list yet */
	HS_TTL,      /* held with a fixed lease (TTL): lapses unless EXTENDed */
	HS_WATCHED,  /* held and renewed by the watchdog: on the watch list */
	HS_DUE,      /* its renewal is due: also on the due list, for the next batch */
	HS_RENEWING, /* in a renewal batch in flight (the batch holds a reference) */
	HS_RETRY,    /* its last renewal failed or was not sent: the next tick makes it due */
	HS_ENDED,    /* let go (UNLOCK to 0, LOST, the session's end): on lk->ended
	                until no batch or EXTEND points at it, then freed */
};

/* One session's hold of a key. Laid out by size, small fields in bytes:
 * a million of them are held at once. */
struct hold {
	struct lkey *lk;
	struct lt_client *holder; /* NULL once HS_ENDED */
	struct ilink key_link;    /* on lk->holds, then lk->ended */
	struct ilink hold_link;   /* on holder->locks */
	struct ilink wd_link;     /* on the watch list (HS_WATCHED .. HS_RETRY) */
	struct ilink due_link;    /* on the due list (HS_DUE) */
	uint64_t fence;
	int64_t lease_ms;     /* the lease last written on the masters */
	int64_t lease_end_us; /* when that lease runs out on the masters */
	int64_t renewed_us;
	int64_t since_us;          /* granted, or adopted by this lockd (WHO's held_ms) */
	struct lt_client *ext_for; /* an EXTEND (or a count write) waiting for its verdict */
	struct dh_node dl; /* dl.at: its validity, when LOST fires (in the heap while held) */
	uint32_t permit;   /* HK_LOCK: 0; HK_PERMIT: the permit it holds */
	uint32_t holds;
	int refs; /* renewal batches and an EXTEND that point here */
	enum hold_kind kind : 8;
	enum hold_state state : 8;
	int8_t counting;   /* a hold count write in flight (1.2): +1 LOCK, -1 UNLOCK */
	uint8_t verifying; /* its deadline came late: its session's move is being checked */
	uint8_t lead;      /* a leader's (1.3): its renewals refresh the leader record's expiry */
	uint32_t delay_ms; /* its lock-delay (1.4): on the masters after a lapse, not a release */
	char token[TOKEN_LEN + 1];
};

struct lkey {
	struct kt_node node;
	struct ilist holds; /* holds of sessions here */
	struct ilist ended; /* holds that ended, still pointed at */
	struct ilist waiters;
	/* LK_ACQUIRING */
	struct rl_call *call;
	struct waiter *acq_for;    /* the waiter it is for; NULL if it left */
	struct lt_client *rel_for; /* a handoff's UNLOCK waiting for its verdict */
	int64_t handoff_from_us;   /* when the holder released, for the histogram */
	struct event *retry;       /* busy elsewhere: try again at its lease end */
	uint32_t nshared;          /* holds that are shared */
	uint32_t nlock;            /* holds of the key's lock (permit 0): 0 or 1 */
	uint32_t acq_permit;
	uint32_t handoffs; /* consecutive local handoffs */
	enum lk_state state : 8;
	enum hold_kind acq_kind : 8;
	uint8_t was_handoff;
	uint8_t retry_armed;    /* retry is pending; only while waiters queue */
	uint8_t remote_waiters; /* the last grant saw a waiter on another lockd */
	uint8_t noticed;        /* a release (notice, or here) came while our acquire was out */
	uint8_t slab;           /* 1: from lk_small, 2: from lk_big, 0: malloc */
	char acq_token[TOKEN_LEN + 1];
	char key[];
};

/* How a resumable session's record names a hold of kind k (struct rl_rec). */
static inline char hold_rec_kind(enum hold_kind k)
{
	return k == HK_SHARED ? 's' : k == HK_PERMIT ? 'p' : 'x';
}

/* What a hold of kind k is on the masters. */
static inline enum rl_hold rl_hold_of(enum hold_kind k)
{
	return k == HK_SHARED ? RH_SHARED : RH_LOCK;
}

#endif
