/* locktab: the central table of keys.
 *
 * Each key this lockd cares about has one struct lkey: the holds of the
 * sessions here (struct hold: one exclusive holder of the key's lock, or
 * any number of shared holders, and holders of its permits), the FIFO of
 * local waiters, and at most one acquire in flight, for the waiter at the
 * head of the queue (or, in a handoff, the waiter that gets a released
 * permit). So waiters cost Redis nothing while they wait: only one asks,
 * and only when something was released (here, or on another lockd: a
 * notice on the masters' channel) or a lease on the masters can have run
 * out.
 *
 * The queue is one FIFO for every kind of request. The head asks when
 * nothing held here conflicts with it: an exclusive request waits for the
 * key's lock and every shared hold here to end, a shared one for the
 * key's lock, a permit request for a permit below its n that no session
 * here holds (the lowest first; when the masters find it busy, the next).
 * Shared waiters at the head are granted one after another, none waiting
 * for another's release; an exclusive waiter holds back everyone behind
 * it. What is held here is never asked for again: the masters take a
 * token of our own instance that we did not name for a stale one.
 *
 * A release with a waiter that can take what was released (the key's
 * lock, or permit i for the first permit waiter whose n is above i) is a
 * handoff: one ACQUIRE round swaps the holder's token for the waiter's on
 * every master, so no other client can slip in between. After
 * locks.handoff_limit handoffs in a row the key is released instead, so
 * waiters on other lockd instances get their turn.
 *
 * One watchdog renews every lease without TTL in batches (one script per
 * master per batch, any mix of kinds), a few batches at a time, so that a
 * renewal wave never queues the sessions' own requests behind it on the
 * masters. The holds of a session that ended are released the same way.
 * Each hold's end of validity is in one deadline heap, served by one
 * timer: when it comes, the session gets LOST. Every write that may shorten a lease on
 * some master (EXTEND, a renewal after a reload lowered locks.lease_ms)
 * shortens the validity when it is sent, whatever its verdict. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "dheap.h"
#include "keytab.h"
#include "locktab.h"
#include "log.h"
#include "memtrim.h"
#include "quorum.h"
#include "redlock.h"
#include "slab.h"
#include "stats.h"

enum lk_state {
	LK_IDLE,      /* no acquire in flight */
	LK_ACQUIRING, /* an acquire or handoff for one waiter is in flight */
};

/* One session's hold of a key. It lives from its grant until it ends
 * (UNLOCK to 0, LOST, the session's end) and, after that, until the
 * last renewal batch or EXTEND that points at it has answered. Laid out
 * by size, flags in bytes: a million of them are held at once. */
struct hold {
	struct lkey *lk;
	struct lt_client *holder; /* NULL once it ended */
	struct wq_link key_link;  /* on lk->holds, then lk->ended */
	struct wq_link hold_link; /* on holder->locks */
	struct wq_link wd_link;   /* on the watchdog list (no TTL) */
	struct wq_link due_link;  /* on wd_due while waiting for a renewal batch */
	uint64_t fence;
	int64_t lease_ms;     /* the lease last written on the masters */
	int64_t lease_end_us; /* when that lease runs out on the masters */
	int64_t renewed_us;
	struct lt_client *ext_for; /* an EXTEND waiting for its verdict */
	struct dh_node dl; /* dl.at: its validity, when LOST fires (in deadlines while held) */
	uint32_t permit; /* HK_LOCK: 0; HK_PERMIT: the permit it holds */
	uint32_t holds;
	int refs; /* renewal batches and an EXTEND that point here */
	enum hold_kind kind : 8;
	uint8_t due, has_ttl, renewing, renew_failed;
	char token[TOKEN_LEN + 1];
};

struct lkey {
	struct kt_node node;
	struct waitq holds; /* holds of sessions here */
	struct waitq ended; /* holds that ended, still pointed at */
	struct waitq waiters;
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

static struct event_base *base;
static const struct config *cfg;
static const struct lt_ops *ops;
static struct keytab table;
static struct waitq watchdog; /* holds without TTL */
static struct waitq wd_due;   /* of those, the ones a renewal batch will take */
static struct event *wd_timer;
static int64_t wd_next_us; /* when wd_timer fires */
static int wd_batches;     /* renewal batches in flight */
static int shutting_down;

/* Bulk work (renewals, the releases of sessions that ended) goes out in
 * batches of this many holds (one script per master, about a millisecond
 * of a master's time), this many batches at a time: the sessions' own
 * requests wait behind at most that much on each master. */
#define RENEW_BATCH 256
#define RENEW_INFLIGHT 2
/* ... unless renewals fall behind (a grant burst of a million locks keeps
 * the masters busy): once the oldest due lease has less than half of it
 * left, holders come before newcomers and more batches go at once. */
#define RENEW_INFLIGHT_BEHIND 16
#define RELEASE_BATCH 256
#define RELEASE_INFLIGHT 2

#define NO_PERMIT UINT32_MAX

/* Holds and key entries live in slabs of their own (slab.h): dense, so a
 * million of them cost their size, and a burst's buffers freed between
 * them do not pin pages. Key entries with longer keys than LK_SLAB_BIG
 * holds come from malloc. */
#define LK_SLAB_SMALL 256 /* entry and key, bytes */
#define LK_SLAB_BIG 512
static struct slab hold_slab, lk_small, lk_big;

/* A release nobody waits for (its session ended), until its batch goes out. */
struct relq {
	struct relq *next;
	size_t klen;
	enum rl_hold hold;
	uint32_t permit;
	char token[TOKEN_LEN + 1];
	char key[];
};
static struct relq *relq_head, **relq_tail = &relq_head;
static size_t relq_len;
static int rel_batches;        /* release batches in flight */
static struct event *rel_ev;   /* sends queued releases from the loop */

static void kick(struct lkey *lk);
static void deadline_cb(evutil_socket_t fd, short what, void *arg);
static void hold_lost(struct hold *h);

/* Every hold's end of validity, and the one timer for the earliest. It
 * is moved only earlier; when it fires for a deadline since moved later
 * or ended, it finds the next one and sleeps again. */
static struct dheap deadlines;
static struct event *dl_timer;
static int64_t dl_at; /* when dl_timer fires; 0: not armed */
static void retry_cb(evutil_socket_t fd, short what, void *arg);
static void wd_tick(evutil_socket_t fd, short what, void *arg);
static void wd_arm_at(int64_t at_us);
static void wd_pump(void);

static void add_timer(struct event *ev, int64_t at_us)
{
	int64_t d = at_us - now_us();
	if (d < 0)
		d = 0;
	struct timeval tv = {(time_t)(d / 1000000), (suseconds_t)(d % 1000000)};
	event_add(ev, &tv);
}

static void dl_arm(void)
{
	struct dh_node *t = dh_top(&deadlines);
	if (!t || (dl_at && dl_at <= t->at))
		return;
	add_timer(dl_timer, t->at);
	dl_at = t->at;
}

/* h's validity ends at `at` (LOST then). A hold that ended has none: it
 * never goes back in the heap, which would outlive it. */
static void dl_set(struct hold *h, int64_t at)
{
	if (!h->holder)
		return;
	if (dh_set(&deadlines, &h->dl, at) != 0)
		abort(); /* the heap's array could not grow: like any allocation here */
	dl_arm();
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dh_node *t;
	dl_at = 0;
	while ((t = dh_top(&deadlines)) && t->at <= now_us()) {
		dh_remove(&deadlines, t);
		hold_lost(wq_entry(t, struct hold, dl));
	}
	dl_arm();
}

static void reply(struct lt_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(struct lt_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ops->reply(c, fmt, ap);
	va_end(ap);
}

static void line(struct lt_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(struct lt_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ops->line(c, fmt, ap);
	va_end(ap);
}

static struct lkey *lk_find(const char *key, size_t klen)
{
	struct kt_node *n = keytab_find(&table, key, klen);
	return n ? wq_entry(n, struct lkey, node) : NULL;
}

static struct lkey *lk_get(const char *key, size_t klen)
{
	struct lkey *lk = lk_find(key, klen);
	if (lk)
		return lk;
	size_t size = sizeof(*lk) + klen + 1;
	int from = size <= LK_SLAB_SMALL ? 1 : size <= LK_SLAB_BIG ? 2 : 0;
	lk = from == 1 ? slab_alloc(&lk_small) : from == 2 ? slab_alloc(&lk_big) : malloc(size);
	if (!lk)
		return NULL;
	memset(lk, 0, size);
	lk->slab = (uint8_t)from;
	memcpy(lk->key, key, klen);
	lk->node.key = lk->key;
	lk->node.klen = klen;
	waitq_init(&lk->waiters);
	waitq_init(&lk->holds);
	waitq_init(&lk->ended);
	keytab_insert(&table, &lk->node);
	return lk;
}

static void lk_free(struct lkey *lk)
{
	if (lk->slab == 1)
		slab_free(&lk_small, lk);
	else if (lk->slab == 2)
		slab_free(&lk_big, lk);
	else
		free(lk);
}

/* Free the entry once nothing refers to it. */
static void lk_maybe_free(struct lkey *lk)
{
	if (lk->state != LK_IDLE || lk->holds.len || lk->ended.len || lk->waiters.len || lk->call ||
	    lk->rel_for)
		return;
	keytab_remove(&table, &lk->node);
	if (lk->retry)
		event_free(lk->retry);
	lk_free(lk);
}

static int64_t lease_for(const struct waiter *w)
{
	return w->has_ttl ? (int64_t)w->ttl_ms : cfg->lease_ms;
}

static enum rl_hold rl_hold_of(enum hold_kind k) { return k == HK_SHARED ? RH_SHARED : RH_LOCK; }

static enum rl_wait wait_of(const struct waiter *w)
{
	return w->mode != WM_WAIT ? RW_NO : w->xraised ? RW_RAISED : RW_YES;
}

/* The session's hold of the key, if any (searching the shorter list). */
static struct hold *hold_of(const struct lkey *lk, const struct lt_client *s)
{
	if (s->nlocks < lk->holds.len) {
		for (struct wq_link *l = s->locks.head.next; l != &s->locks.head; l = l->next) {
			struct hold *h = wq_entry(l, struct hold, hold_link);
			if (h->lk == lk)
				return h;
		}
		return NULL;
	}
	for (struct wq_link *l = lk->holds.head.next; l != &lk->holds.head; l = l->next) {
		struct hold *h = wq_entry(l, struct hold, key_link);
		if (h->holder == s)
			return h;
	}
	return NULL;
}

/* The lowest permit in [from, n) that no session here holds (nor, for
 * permit 0, keeps from being taken by holding the key shared), or
 * NO_PERMIT. */
static uint32_t free_permit(const struct lkey *lk, uint32_t n, uint32_t from)
{
	static uint64_t *bits;
	static size_t cap; /* words */
	size_t words = ((size_t)n + 63) / 64;

	if (from >= n)
		return NO_PERMIT;
	if (words > cap) {
		uint64_t *b = realloc(bits, words * sizeof(*b));
		if (!b)
			return NO_PERMIT; /* tried again at the next release */
		bits = b;
		cap = words;
	}
	memset(bits, 0, words * sizeof(*bits));
	if (lk->nshared || lk->nlock)
		bits[0] |= 1;
	for (struct wq_link *l = lk->holds.head.next; l != &lk->holds.head; l = l->next) {
		const struct hold *h = wq_entry(l, struct hold, key_link);
		if (h->kind != HK_SHARED && h->permit < n)
			bits[h->permit / 64] |= 1ULL << (h->permit % 64);
	}
	for (uint32_t i = from; i < n; i++)
		if (!(bits[i / 64] & (1ULL << (i % 64))))
			return i;
	return NO_PERMIT;
}

/* Nothing held here keeps a request of this kind from asking the masters. */
static int can_ask(const struct lkey *lk, const struct waiter *w)
{
	switch (w->kind) {
	case HK_LOCK:
		return !lk->nlock && !lk->nshared;
	case HK_SHARED:
		return !lk->nlock;
	case HK_PERMIT:
		return free_permit(lk, w->npermits, 0) != NO_PERMIT;
	}
	return 0;
}

/* --- waiters --- */

static void waiter_leave(struct waiter *w)
{
	struct lkey *lk = w->lk;
	if (!lk)
		return;
	waitq_remove(&lk->waiters, &w->link);
	if (lk->acq_for == w)
		lk->acq_for = NULL;
	if (w->timer)
		event_del(w->timer);
	if (w->mode == WM_WAIT)
		stats.sessions_waiting--;
	w->lk = NULL;
}

static void retry_disarm(struct lkey *lk)
{
	if (lk->retry_armed) {
		event_del(lk->retry);
		lk->retry_armed = 0;
	}
}

/* Answer a waiter that will not get the lock. The caller lets the next
 * waiter try (kick) and frees the entry if unused (lk_maybe_free). */
static void waiter_fail(struct waiter *w, const char *msg)
{
	struct lkey *lk = w->lk;
	waiter_leave(w);
	reply(w->c, "%s", msg);
	if (lk && lk->waiters.len == 0)
		retry_disarm(lk);
}

static void wait_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct waiter *w = arg;
	struct lkey *lk = w->lk;
	if (now_us() < w->deadline_us) { /* never answer before the WAIT is over */
		add_timer(w->timer, w->deadline_us);
		return;
	}
	stats.timeouts += !w->quorum_failed;
	waiter_fail(w, w->quorum_failed ? MSG_NO_QUORUM : "TIMEOUT");
	kick(lk);
	lk_maybe_free(lk);
}

/* --- holding --- */

/* A grant: the hold's lease is the lease its call wrote (lease_ms), never
 * the configured one, which a reload may have changed since. */
static void hold_start(struct lkey *lk, struct waiter *w, const struct rl_grant *g,
		       int64_t lease_ms)
{
	struct lt_client *s = w->c;
	struct hold *h = slab_alloc(&hold_slab);

	if (h)
		memset(h, 0, sizeof(*h));
	if (!h) {
		/* Give it back: it lapses on the masters otherwise. */
		rl_release(lk->key, lk->node.klen, rl_hold_of(lk->acq_kind), lk->acq_permit,
			   lk->acq_token, 0, NULL, NULL);
		waiter_fail(w, MSG_OOM);
		return;
	}
	h->lk = lk;
	h->holder = s;
	h->kind = lk->acq_kind;
	h->permit = lk->acq_permit;
	h->holds = 1;
	h->fence = g->fence;
	h->has_ttl = w->has_ttl;
	h->lease_ms = lease_ms;
	h->lease_end_us = g->start_us + h->lease_ms * 1000;
	h->renewed_us = g->start_us;
	memcpy(h->token, lk->acq_token, sizeof(h->token));
	waitq_push(&lk->holds, &h->key_link);
	if (h->kind == HK_SHARED)
		lk->nshared++;
	else if (h->permit == 0)
		lk->nlock++;
	lk->remote_waiters = g->remote_waiters;
	dl_set(h, g->validity_us);
	if (!h->has_ttl) {
		waitq_push(&watchdog, &h->wd_link);
		/* Its lease may be shorter than the one the watchdog's timer was
		 * set for (a reload raised locks.lease_ms during the call). */
		if (h->renewed_us + lease_ms * 1000 / 3 < wd_next_us)
			wd_arm_at(h->renewed_us + lease_ms * 1000 / 3);
	}
	waitq_push(&s->locks, &h->hold_link);
	s->nlocks++;
	stats.locks_held++;
	stats.grants++;
	stats.shared_grants += h->kind == HK_SHARED;
	stats.permit_grants += h->kind == HK_PERMIT;
	int64_t now = now_us();
	stats_observe(HIST_ACQUIRE, now - w->since_us);
	if (lk->was_handoff)
		stats_observe(HIST_HANDOFF, now - lk->handoff_from_us);
	waiter_leave(w);
	reply(s, "OK %llu", (unsigned long long)h->fence);
}

/* Free an ended hold once nothing points at it. */
static void hold_put(struct hold *h)
{
	if (h->holder || h->refs || h->ext_for)
		return;
	waitq_remove(&h->lk->ended, &h->key_link);
	slab_free(&hold_slab, h);
}

/* The holder lets go (all holds): stop renewing and forget it. The hold
 * may be freed: callers copy what they need first. */
static void hold_end(struct hold *h)
{
	struct lkey *lk = h->lk;
	struct lt_client *s = h->holder;
	waitq_remove(&s->locks, &h->hold_link);
	s->nlocks--;
	waitq_remove(&lk->holds, &h->key_link);
	waitq_push(&lk->ended, &h->key_link);
	if (h->kind == HK_SHARED)
		lk->nshared--;
	else if (h->permit == 0)
		lk->nlock--;
	waitq_remove(&watchdog, &h->wd_link);
	if (h->due) {
		waitq_remove(&wd_due, &h->due_link);
		h->due = 0;
	}
	dh_remove(&deadlines, &h->dl);
	h->holder = NULL;
	h->holds = 0;
	stats.locks_held--;
	hold_put(h);
}

/* Something held here ended: a waiter that may use it should ask now
 * rather than when its retry was due. */
static void freed_here(struct lkey *lk)
{
	struct wq_link *l = waitq_first(&lk->waiters);
	if (!l || wq_entry(l, struct waiter, link)->kind != HK_PERMIT)
		return;
	if (lk->state == LK_ACQUIRING)
		lk->noticed = 1;
	retry_disarm(lk);
}

static void hold_lost(struct hold *h)
{
	struct lkey *lk = h->lk;
	struct lt_client *s = h->holder;
	char token[TOKEN_LEN + 1];
	enum rl_hold rh = rl_hold_of(h->kind);
	uint32_t permit = h->permit;

	if (!s)
		return;
	log_warn("session %llu (%s): lock %s (fence %llu) lost: %s", (unsigned long long)s->id,
		 s->peer, lk->key, (unsigned long long)h->fence,
		 h->has_ttl ? "TTL lapsed" : "lease could not be renewed on a majority");
	stats.lost++;
	line(s, "LOST %s %llu", lk->key, (unsigned long long)h->fence);
	memcpy(token, h->token, sizeof(token));
	hold_end(h);
	lk->handoffs = 0;
	/* It may still sit on some masters: clear it before the next try. */
	rl_release(lk->key, lk->node.klen, rh, permit, token, 0, NULL, NULL);
	freed_here(lk);
	kick(lk);
	lk_maybe_free(lk);
}

/* --- acquiring --- */

static void handoff_released(struct rl_call *c, void *owner)
{
	struct lkey *lk = owner;
	struct lt_client *s = lk->rel_for;
	if (!s)
		return;
	lk->rel_for = NULL;
	s->verdict_lk = NULL;
	if (rl_result_of(c) == RL_OK) {
		reply(s, "OK 0");
	} else {
		stats.quorum_failures++;
		reply(s, "%s", MSG_RELEASE_UNCONFIRMED);
	}
	/* The verdict may come after the grant's: then nothing else frees it. */
	lk_maybe_free(lk);
}

/* A plain release's verdict, for the UNLOCK that asked. */
static void released(struct rl_call *c, void *owner)
{
	struct lt_client *s = owner;
	s->call = NULL;
	if (rl_result_of(c) == RL_OK) {
		reply(s, "OK 0");
	} else {
		stats.quorum_failures++;
		reply(s, "%s", MSG_RELEASE_UNCONFIRMED);
	}
}

static void schedule_retry(struct lkey *lk, int64_t ms)
{
	if (!lk->retry)
		lk->retry = evtimer_new(base, retry_cb, lk);
	lk->retry_armed = 1;
	add_timer(lk->retry, now_us() + ms * 1000);
}

static void acquired(struct rl_call *c, void *owner)
{
	struct lkey *lk = owner;
	const struct rl_grant *g = rl_grant_of(c);
	struct waiter *w = lk->acq_for;

	lk->call = NULL;
	lk->acq_for = NULL;
	lk->state = LK_IDLE;
	if (g->result == RL_OK) {
		if (w && !shutting_down) {
			if (lk->was_handoff) {
				lk->handoffs++;
				stats.handoffs++;
			} else {
				lk->handoffs = 0;
			}
			hold_start(lk, w, g, rl_lease_of(c));
			lk->was_handoff = 0;
			kick(lk); /* the next shared waiter, or permit */
			lk_maybe_free(lk);
			return;
		}
		/* The waiter left while we asked: give it back. */
		rl_release(lk->key, lk->node.klen, rl_hold_of(lk->acq_kind), lk->acq_permit,
			   lk->acq_token, 0, NULL, NULL);
	} else if (w && &w->link != waitq_first(&lk->waiters)) {
		/* A handoff to a permit waiter behind the head failed: it
		 * waits on, for its turn or another handoff. */
	} else if (w) {
		int quorum = g->result == RL_QUORUM;
		int64_t pttl = g->pttl_ms;
		w->xraised |= g->xwaiting;
		if (w->kind == HK_PERMIT && !quorum) {
			/* Busy on the masters: the next permit free here, if any. */
			if (pttl >= 0 && (w->round_pttl < 0 || pttl < w->round_pttl))
				w->round_pttl = pttl;
			if (free_permit(lk, w->npermits, lk->acq_permit + 1) != NO_PERMIT) {
				w->next_permit = lk->acq_permit + 1;
				lk->was_handoff = 0;
				kick(lk);
				lk_maybe_free(lk);
				return;
			}
			pttl = w->round_pttl;
		}
		w->next_permit = 0;
		if (w->mode == WM_TRY) {
			stats.busy += !quorum;
			waiter_fail(w, quorum ? MSG_NO_QUORUM : "BUSY");
		} else if (w->mode == WM_ONCE) {
			stats.timeouts += !quorum;
			waiter_fail(w, quorum ? MSG_NO_QUORUM : "TIMEOUT");
		} else {
			/* Held elsewhere: sleep until a release notice, or
			 * until its lease can have run out. No quorum: back
			 * off with jitter. */
			w->quorum_failed = quorum;
			if (w->c->eof)
				ops->wake(w->c); /* its peer left: cancel */
			int64_t ms = quorum ? 50 + random() % 100
				     : lk->noticed ? 0 /* released meanwhile: try again now */
				     : (pttl > 0 ? pttl + 5 : 10);
			schedule_retry(lk, ms);
		}
	}
	lk->was_handoff = 0;
	kick(lk);
	lk_maybe_free(lk);
}

/* Let the head waiter ask the masters, if nothing is in flight and
 * nothing held here is in its way. */
static void kick(struct lkey *lk)
{
	struct wq_link *l;
	uint32_t permit = 0;

	if (lk->state != LK_IDLE || lk->retry_armed || shutting_down)
		return;
	if (!(l = waitq_first(&lk->waiters)))
		return;
	struct waiter *w = wq_entry(l, struct waiter, link);
	if (!can_ask(lk, w))
		return; /* a release here wakes it */
	if (w->kind == HK_PERMIT) {
		permit = free_permit(lk, w->npermits, w->next_permit);
		if (permit == NO_PERMIT)
			permit = free_permit(lk, w->npermits, w->next_permit = 0);
		if (w->next_permit == 0) { /* a new round */
			w->round_pttl = -1;
			lk->noticed = 0;
		}
	} else {
		lk->noticed = 0;
	}
	rl_token_new(lk->acq_token);
	lk->state = LK_ACQUIRING;
	lk->acq_for = w;
	lk->acq_kind = w->kind;
	lk->acq_permit = permit;
	lk->was_handoff = 0;
	lk->call = rl_acquire(lk->key, lk->node.klen, rl_hold_of(w->kind), permit, lk->acq_token,
			      lease_for(w), NULL, wait_of(w), acquired, NULL, lk);
	if (!lk->call) {
		lk->state = LK_IDLE;
		lk->acq_for = NULL;
		waiter_fail(w, MSG_OOM);
	}
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lkey *lk = arg;
	lk->retry_armed = 0;
	kick(lk);
	lk_maybe_free(lk);
}

void lt_notice(const char *key, size_t klen)
{
	struct lkey *lk = lk_find(key, klen);
	if (lk && lk->state == LK_ACQUIRING)
		lk->noticed = 1; /* the answer may predate the release */
	if (!lk || !lk->retry_armed)
		return;
	retry_disarm(lk);
	kick(lk);
	lk_maybe_free(lk);
}

/* --- releases nobody waits for --- */

static void rel_done(struct rl_call *c, void *owner);

static void rel_pump(evutil_socket_t fd, short what, void *arg)
{
	struct rl_release_item items[RELEASE_BATCH];
	struct relq *batch[RELEASE_BATCH];

	while (relq_head && (rel_batches < RELEASE_INFLIGHT || shutting_down)) {
		int n = 0;
		while (relq_head && n < RELEASE_BATCH) {
			struct relq *r = relq_head;
			if (!(relq_head = r->next))
				relq_tail = &relq_head;
			items[n].key = r->key;
			items[n].klen = r->klen;
			items[n].hold = r->hold;
			items[n].permit = r->permit;
			items[n].token = r->token;
			batch[n++] = r;
		}
		relq_len -= (size_t)n;
		struct rl_call *c = rl_release_many(items, n, rel_done, &relq_head);
		for (int k = 0; k < n; k++) /* rl_release_many copied them */
			free(batch[k]);
		if (c)
			rel_batches++;
		else
			log_warn("out of memory releasing %d keys: their leases lapse on the masters",
				 n);
	}
}

static void rel_done(struct rl_call *c, void *owner)
{
	rel_batches--;
	rel_pump(-1, 0, NULL);
	if (!relq_head && !rel_batches && !shutting_down)
		memtrim_soon();
}

/* Released holds wait here, so that a session's many holds leave in few
 * scripts; the first batch goes out from the loop, once all are queued. */
static void rel_enqueue(const char *key, size_t klen, enum rl_hold hold, uint32_t permit,
			const char *token)
{
	struct relq *r = malloc(sizeof(*r) + klen + 1);
	if (!r) {
		log_warn("out of memory releasing %.*s: its lease lapses on the masters", (int)klen,
			 key);
		return;
	}
	r->next = NULL;
	r->klen = klen;
	r->hold = hold;
	r->permit = permit;
	memcpy(r->token, token, sizeof(r->token));
	memcpy(r->key, key, klen);
	r->key[klen] = '\0';
	*relq_tail = r;
	relq_tail = &r->next;
	relq_len++;
	event_active(rel_ev, EV_TIMEOUT, 0);
}


int locktab_busy(void) { return relq_head != NULL || rel_batches > 0; }

/* Who gets a released lock (the key's, or permit i) by a handoff: the
 * head waiter for the key's lock (unless it asks shared: it asks on its
 * own), the first permit waiter whose n is above i for permit i. */
static struct waiter *handoff_to(struct lkey *lk, uint32_t permit)
{
	for (struct wq_link *l = lk->waiters.head.next; l != &lk->waiters.head; l = l->next) {
		struct waiter *w = wq_entry(l, struct waiter, link);
		if (permit == 0)
			return w->kind != HK_SHARED ? w : NULL;
		if (w->kind == HK_PERMIT && w->npermits > permit)
			return w;
	}
	return NULL;
}

/* The holder is done with the key (UNLOCK to 0, QUIT, disconnect). rs is
 * the session that waits for the release verdict, or NULL. */
static void release_hold(struct hold *h, struct lt_client *rs)
{
	struct lkey *lk = h->lk;
	char old[TOKEN_LEN + 1];
	enum hold_kind kind = h->kind;
	uint32_t permit = h->permit;
	struct waiter *w = NULL;

	memcpy(old, h->token, sizeof(old));
	hold_end(h);
	/* Hand over directly, unless a waiter on another lockd has asked and
	 * this key went from hand to hand here handoff_limit times already. */
	if (!lk->remote_waiters)
		lk->handoffs = 0;
	if (kind != HK_SHARED && lk->state == LK_IDLE &&
	    lk->handoffs < (uint32_t)cfg->handoff_limit && !shutting_down)
		w = handoff_to(lk, permit);
	if (w) {
		if (&w->link == waitq_first(&lk->waiters))
			retry_disarm(lk);
		rl_token_new(lk->acq_token);
		lk->state = LK_ACQUIRING;
		lk->acq_for = w;
		lk->acq_kind = w->kind;
		lk->acq_permit = permit;
		lk->was_handoff = 1;
		lk->handoff_from_us = now_us();
		lk->rel_for = rs;
		if (rs)
			rs->verdict_lk = lk;
		lk->call = rl_acquire(lk->key, lk->node.klen, RH_LOCK, permit, lk->acq_token,
				      lease_for(w), old, wait_of(w), acquired, handoff_released, lk);
		if (lk->call)
			return;
		lk->state = LK_IDLE;
		lk->acq_for = NULL;
		lk->rel_for = NULL;
		if (rs)
			rs->verdict_lk = NULL;
	}
	/* A plain release: if a waiter on another lockd asked for the key,
	 * the masters announce the release and keep the key for that lockd
	 * a moment, so that ours, closer to their clients, do not win it
	 * back every time (see SCR_RELEASE). */
	lk->handoffs = 0;
	lk->remote_waiters = 0;
	/* Our waiters will ask again: whoever gets it meanwhile (another
	 * lockd) must know that someone here waits. */
	int64_t flag_ms = lk->waiters.len && !shutting_down ? cfg->lease_ms + 1000 : 0;
	if (!rs && !flag_ms) {
		/* Nobody waits for this verdict (a session's end): batched. */
		rel_enqueue(lk->key, lk->node.klen, rl_hold_of(kind), permit, old);
	} else {
		struct rl_call *c = rl_release(lk->key, lk->node.klen, rl_hold_of(kind), permit, old,
					       flag_ms, rs ? released : NULL, rs);
		if (rs) {
			if (c)
				rs->call = c;
			else
				reply(rs, "%s", MSG_OOM);
		}
	}
	freed_here(lk);
	kick(lk);
	lk_maybe_free(lk);
}

/* --- commands --- */

/* Whether a hold of a kind (and permit) satisfies a request of a kind (and
 * n): an exclusive hold (the key's lock, permit 0) satisfies every
 * request of the key, a shared hold a shared request, permit i a request
 * of PERMITS n with i < n. Anything else would tell a session it holds
 * what another session may hold (PROTOCOL.md 1.1, "Permits"). */
enum reentry lt_reentry(enum hold_kind held, uint32_t permit, enum hold_kind asked, uint32_t n)
{
	if (held != HK_SHARED && permit == 0)
		return RE_OK;
	if (held == HK_SHARED)
		return asked == HK_SHARED ? RE_OK : RE_UPGRADE;
	return asked == HK_PERMIT && permit < n ? RE_OK : RE_OTHER;
}

static struct hold *held_by(struct lt_client *s, const char *key, size_t klen)
{
	struct lkey *lk = lk_find(key, klen);
	return lk ? hold_of(lk, s) : NULL;
}

void lt_lock(struct lt_client *s, const struct request *r)
{
	struct lkey *lk = lk_find(r->key, r->klen);
	struct waiter *w = &s->w;
	int try = r->cmd == CMD_TRYLOCK || (r->has_wait && r->wait_ms == 0);
	enum hold_kind kind = r->shared ? HK_SHARED : r->permits ? HK_PERMIT : HK_LOCK;
	struct hold *h = lk ? hold_of(lk, s) : NULL;

	if (h) {
		enum reentry e = lt_reentry(h->kind, h->permit, kind, r->permits);
		if (e == RE_UPGRADE) /* two readers upgrading would wait for each other */
			reply(s, "ERR ARG cannot upgrade a shared hold");
		else if (e == RE_OTHER)
			reply(s, "ERR ARG holds permit %u of %s", h->permit, lk->key);
		if (e != RE_OK)
			return;
		h->holds++; /* reentrant: WAIT and TTL are ignored, the kind kept */
		reply(s, "OK %llu", (unsigned long long)h->fence);
		return;
	}
	if (r->has_ttl && quorum_validity_us(r->ttl_ms, 0, cfg->drift_factor) <= 0) {
		/* No grant could ever be valid: say so rather than QUORUM. */
		reply(s, "ERR ARG TTL is shorter than the clock drift margin (2 ms + "
			 "locks.drift_factor)");
		return;
	}
	if (s->nlocks >= (uint64_t)cfg->max_locks_per_session) {
		reply(s, "ERR LIMIT this session holds limits.max_locks_per_session locks");
		return;
	}
	w->kind = kind;
	w->npermits = kind == HK_PERMIT ? r->permits : 1;
	if (try && lk && (lk->state != LK_IDLE || lk->waiters.len || !can_ask(lk, w))) {
		/* Held here, or others queue for it: never jump the queue. */
		if (r->cmd == CMD_TRYLOCK) {
			stats.busy++;
			reply(s, "BUSY");
		} else {
			stats.timeouts++;
			reply(s, "TIMEOUT");
		}
		return;
	}
	if (!try && cfg->max_waiters && stats.sessions_waiting >= (uint64_t)cfg->max_waiters) {
		reply(s, "ERR LIMIT too many sessions wait (limits.max_waiters)");
		return;
	}
	if (!try && cfg->max_waiters_per_key && lk &&
	    lk->waiters.len >= (size_t)cfg->max_waiters_per_key) {
		reply(s, "ERR LIMIT too many sessions wait for this key (limits.max_waiters_per_key)");
		return;
	}
	if (!lk && !(lk = lk_get(r->key, r->klen))) {
		reply(s, "%s", MSG_OOM);
		return;
	}
	w->lk = lk;
	w->c = s;
	w->mode = r->cmd == CMD_TRYLOCK ? WM_TRY : try ? WM_ONCE : WM_WAIT;
	w->next_permit = 0;
	w->round_pttl = -1;
	w->xraised = 0;
	w->has_ttl = r->has_ttl;
	w->ttl_ms = r->ttl_ms;
	w->quorum_failed = 0;
	w->since_us = s->req_us;
	waitq_push(&lk->waiters, &w->link);
	if (w->mode == WM_WAIT) {
		stats.sessions_waiting++;
		if (r->has_wait) {
			if (!w->timer)
				w->timer = evtimer_new(base, wait_timeout_cb, w);
			w->deadline_us = s->req_us + (int64_t)r->wait_ms * 1000;
			add_timer(w->timer, w->deadline_us);
		}
	}
	kick(lk);
	lk_maybe_free(lk);
}

int lt_waiting(const struct lt_client *s)
{
	const struct waiter *w = &s->w;
	const struct lkey *lk = w->lk;
	return lk && w->mode == WM_WAIT && (lk->acq_for != w || lk->retry_armed);
}

void lt_unlock(struct lt_client *s, const char *key, size_t klen)
{
	struct hold *h = held_by(s, key, klen);
	if (!h) {
		reply(s, "%s", MSG_NOT_HELD);
		return;
	}
	if (--h->holds > 0) {
		reply(s, "OK %u", h->holds);
		return;
	}
	release_hold(h, s);
}

/* A write of a lease of lease_ms, sent at start, may land on some
 * masters whatever its verdict: where it ends the lease before the
 * validity we believe in, the validity ends with it (LOST is sent then). */
static void lease_written(struct hold *h, int64_t start, int64_t lease_ms)
{
	int64_t end = start + quorum_validity_us(lease_ms, 0, cfg->drift_factor);
	if (end < h->dl.at)
		dl_set(h, end);
	if (start + lease_ms * 1000 < h->lease_end_us)
		h->lease_end_us = start + lease_ms * 1000;
}

static void extended(struct rl_call *c, void *owner)
{
	struct hold *h = owner;
	struct lkey *lk = h->lk;
	struct lt_client *s = h->ext_for;
	int n;
	struct rl_renew_item *it = rl_renew_items(c, &n);
	int64_t start = rl_start_us(c), lease = rl_lease_of(c);

	h->refs--;
	h->ext_for = NULL;
	if (s)
		s->verdict_h = NULL;
	if (!s || h->holder != s) {
		if (s)
			reply(s, "ERR NOTHELD the lock was lost");
		hold_put(h);
		lk_maybe_free(lk);
		return;
	}
	if (now_us() >= h->dl.at) {
		/* The validity ended before the verdict came: lost, whatever it
		 * says (hold_lost frees what nothing uses any more). */
		hold_lost(h);
		reply(s, "ERR NOTHELD the lock was lost");
		return;
	}
	if (!it[0].ok) {
		/* lease_written already cut the validity if this one may end sooner */
		stats.quorum_failures++;
		reply(s, "ERR QUORUM no majority of masters extended the lease");
		return;
	}
	h->lease_ms = lease;
	h->lease_end_us = start + lease * 1000;
	dl_set(h, it[0].validity_us);
	reply(s, "OK");
}

static void fill_item(struct rl_renew_item *it, struct hold *h)
{
	it->key = h->lk->key;
	it->klen = h->lk->node.klen;
	it->hold = rl_hold_of(h->kind);
	it->permit = h->permit;
	it->token = h->token;
	it->owner = h;
}

void lt_extend(struct lt_client *s, const char *key, size_t klen, uint32_t ms)
{
	struct hold *h = held_by(s, key, klen);
	struct rl_renew_item *it;

	if (!h) {
		reply(s, "%s", MSG_NOT_HELD);
		return;
	}
	if (!h->has_ttl) {
		reply(s, "ERR ARG EXTEND is for TTL locks; this lock is renewed by lockd");
		return;
	}
	if (quorum_validity_us(ms, 0, cfg->drift_factor) <= 0) {
		reply(s, "ERR ARG EXTEND is shorter than the clock drift margin (2 ms + "
			 "locks.drift_factor)");
		return;
	}
	if (!(it = calloc(1, sizeof(*it)))) {
		reply(s, "%s", MSG_OOM);
		return;
	}
	fill_item(it, h);
	int64_t start = now_us();
	/* Owned by the hold, not the session: the verdict always comes back
	 * to drop the reference, even after the session left. */
	if (!rl_renew(it, 1, ms, extended, h)) {
		free(it);
		reply(s, "%s", MSG_OOM);
		return;
	}
	h->refs++;
	h->ext_for = s;
	s->verdict_h = h;
	lease_written(h, start, ms);
}

/* Sessions waiting here for the key (permits: for a permit or the key's lock). */
static size_t waiting_for(const char *key, size_t klen, int permits)
{
	struct lkey *lk = lk_find(key, klen);
	size_t n = 0;
	if (!lk || !permits)
		return lk ? lk->waiters.len : 0;
	for (struct wq_link *l = lk->waiters.head.next; l != &lk->waiters.head; l = l->next)
		n += wq_entry(l, struct waiter, link)->kind != HK_SHARED;
	return n;
}

static void status_done(struct rl_call *c, void *owner)
{
	struct lt_client *s = owner;
	const struct rl_status *v = rl_status_of(c);
	size_t klen;
	const char *key = rl_key_of(c, &klen);

	s->call = NULL;
	if (!v->ok)
		reply(s, "%s", MSG_NO_QUORUM);
	else if (v->npermits)
		reply(s, "PERMITS %u %u %zu", v->permits, v->npermits, waiting_for(key, klen, 1));
	else if (v->held)
		reply(s, "HELD %lld %zu", (long long)v->ttl_ms, waiting_for(key, klen, 0));
	else if (v->holders > 0)
		reply(s, "SHARED %d %lld %zu", v->holders, (long long)v->shared_ttl_ms,
		      waiting_for(key, klen, 0));
	else
		reply(s, "FREE");
}

void lt_status(struct lt_client *s, const char *key, size_t klen, uint32_t permits)
{
	struct lkey *lk = lk_find(key, klen);

	if (lk && lk->nlock && !permits) {
		/* Its lock is held here: our own lease says how long. */
		for (struct wq_link *l = lk->holds.head.next; l != &lk->holds.head; l = l->next) {
			struct hold *h = wq_entry(l, struct hold, key_link);
			if (h->kind == HK_SHARED || h->permit != 0)
				continue;
			int64_t left = (h->lease_end_us - now_us()) / 1000;
			reply(s, "HELD %lld %zu", (long long)(left > 0 ? left : 0), lk->waiters.len);
			return;
		}
	}
	s->call = rl_status(key, klen, permits, status_done, s);
	if (!s->call)
		reply(s, "%s", MSG_OOM);
}

void lt_held(struct lt_client *s)
{
	int64_t now = now_us();
	for (struct wq_link *l = s->locks.head.next; l != &s->locks.head; l = l->next) {
		struct hold *h = wq_entry(l, struct hold, hold_link);
		long long left = (h->lease_end_us - now) / 1000;
		unsigned long long f = (unsigned long long)h->fence;
		if (left < 0)
			left = 0;
		if (h->kind == HK_SHARED)
			line(s, "KEY %s %llu %u %lld SHARED", h->lk->key, f, h->holds, left);
		else if (h->kind == HK_PERMIT)
			line(s, "KEY %s %llu %u %lld PERMIT %u", h->lk->key, f, h->holds, left,
			     h->permit);
		else
			line(s, "KEY %s %llu %u %lld", h->lk->key, f, h->holds, left);
	}
	reply(s, "END");
}

void lt_client_init(struct lt_client *c)
{
	waitq_init(&c->locks);
	c->w.c = c;
}

void lt_client_end(struct lt_client *s)
{
	struct wq_link *l;

	if (s->w.lk) {
		struct lkey *lk = s->w.lk;
		waiter_leave(&s->w);
		if (lk->waiters.len == 0)
			retry_disarm(lk);
		kick(lk);
		lk_maybe_free(lk);
	}
	if (s->w.timer) {
		event_free(s->w.timer);
		s->w.timer = NULL;
	}
	if (s->call) {
		/* The call goes on without us (a release still completes). */
		struct rl_call *c = s->call;
		s->call = NULL;
		rl_detach(c, s);
	}
	if (s->verdict_lk) {
		if (s->verdict_lk->rel_for == s)
			s->verdict_lk->rel_for = NULL;
		s->verdict_lk = NULL;
	}
	if (s->verdict_h) {
		if (s->verdict_h->ext_for == s)
			s->verdict_h->ext_for = NULL;
		s->verdict_h = NULL;
	}
	while ((l = waitq_first(&s->locks)))
		release_hold(wq_entry(l, struct hold, hold_link), NULL);
}

/* --- the watchdog --- */

static void renewed(struct rl_call *c, void *owner)
{
	int n, failed = 0;
	struct rl_renew_item *it = rl_renew_items(c, &n);
	int64_t start = rl_start_us(c), now = now_us();
	int64_t lease = rl_lease_of(c); /* what this call wrote, whatever cfg says now */
	int64_t next = wd_next_us;

	wd_batches--;
	for (int i = 0; i < n; i++) {
		struct hold *h = it[i].owner;
		struct lkey *lk = h->lk;
		h->refs--;
		h->renewing = 0;
		if (h->holder && !h->has_ttl) {
			/* A verdict after the validity ended is a loss, whatever it
			 * says: the deadline timer, due already, sends LOST. */
			if (it[i].ok && now < h->dl.at) {
				h->lease_ms = lease;
				h->lease_end_us = start + lease * 1000;
				h->renewed_us = start;
				h->renew_failed = 0;
				dl_set(h, it[i].validity_us);
				stats.renewals++;
				if (start + lease * 1000 / 3 < next)
					next = start + lease * 1000 / 3;
			} else {
				h->renew_failed = 1;
				stats.renewal_failures++;
				log_debug("renewal of %s failed: %d masters hold it for us", lk->key,
					  it[i].yes);
				failed = 1;
			}
		}
		hold_put(h);
		lk_maybe_free(lk);
	}
	if (failed) {
		/* Try again soon, while the leases are still valid. */
		int64_t ms = cfg->timeout_ms * 2 < 100 ? 100 : cfg->timeout_ms * 2;
		if (ms > cfg->lease_ms / 6)
			ms = cfg->lease_ms / 6;
		if (now + ms * 1000 < next)
			next = now + ms * 1000;
	}
	if (next < wd_next_us)
		wd_arm_at(next);
	wd_pump();
}

static void wd_arm_at(int64_t at_us)
{
	wd_next_us = at_us;
	add_timer(wd_timer, at_us);
}

/* How many renewal batches may be in flight now. */
static int renew_window(void)
{
	struct wq_link *l = waitq_first(&wd_due);
	if (!l)
		return RENEW_INFLIGHT;
	struct hold *h = wq_entry(l, struct hold, due_link);
	return h->lease_end_us - now_us() < h->lease_ms * 1000 / 2 ? RENEW_INFLIGHT_BEHIND
								     : RENEW_INFLIGHT;
}

/* Send renewal batches of the due holds, renew_window() at most at once;
 * each verdict sends the next. A batch is made when it is sent, of the
 * holds still held then, so a release is never followed by a renewal
 * that would write the key back. */
static void wd_pump(void)
{
	int window = renew_window();
	while (wd_batches < window && wd_due.len) {
		int n = wd_due.len < RENEW_BATCH ? (int)wd_due.len : RENEW_BATCH;
		struct rl_renew_item *batch = malloc(sizeof(*batch) * (size_t)n);
		if (!batch)
			return; /* they stay due: the next verdict or tick tries again */
		int64_t lease = cfg->lease_ms, start = now_us();
		for (int i = 0; i < n; i++) {
			struct hold *h = wq_entry(waitq_pop(&wd_due), struct hold, due_link);
			h->due = 0;
			fill_item(&batch[i], h);
			h->refs++;
			h->renewing = 1;
		}
		if (!rl_renew(batch, n, lease, renewed, &watchdog)) {
			for (int i = 0; i < n; i++) {
				struct hold *h = batch[i].owner;
				h->refs--;
				h->renewing = 0;
				h->renew_failed = 1; /* the next tick takes it */
			}
			free(batch);
			return;
		}
		for (int i = 0; i < n; i++)
			lease_written(batch[i].owner, start, lease);
		wd_batches++;
		stats.renew_batches++;
	}
}

/* Mark the holds whose renewal is due and send the first batches. A hold
 * is due once half a renewal period (a third of the lease it holds) has
 * passed since its last renewal, after a failed one, or when its lease is
 * not the configured one (a reload changed it). The timer is set for the
 * earliest hold not due yet, at most a period of the configured lease. */
static void wd_tick(evutil_socket_t fd, short what, void *arg)
{
	int64_t now = now_us(), next = now + cfg->lease_ms * 1000 / 3;

	for (struct wq_link *l = watchdog.head.next; l != &watchdog.head; l = l->next) {
		struct hold *h = wq_entry(l, struct hold, wd_link);
		int64_t period = h->lease_ms * 1000 / 3;
		if (h->due || h->renewing)
			continue;
		if (h->renew_failed || h->lease_ms != cfg->lease_ms ||
		    now - h->renewed_us >= period / 2) {
			waitq_push(&wd_due, &h->due_link);
			h->due = 1;
		} else if (h->renewed_us + period < next) {
			next = h->renewed_us + period;
		}
	}
	wd_arm_at(next);
	wd_pump();
}

/* --- setup --- */

int locktab_init(struct event_base *b, const struct config *c, const struct lt_ops *o)
{
	base = b;
	cfg = c;
	ops = o;
	waitq_init(&watchdog);
	waitq_init(&wd_due);
	if (keytab_init(&table, 1024))
		return -1;
	wd_timer = evtimer_new(base, wd_tick, NULL);
	rel_ev = event_new(base, -1, 0, rel_pump, NULL);
	dl_timer = evtimer_new(base, deadline_cb, NULL);
	dh_init(&deadlines);
	dl_at = 0;
	slab_init(&hold_slab, sizeof(struct hold));
	slab_init(&lk_small, LK_SLAB_SMALL);
	slab_init(&lk_big, LK_SLAB_BIG);
	if (!wd_timer || !rel_ev || !dl_timer)
		return -1;
	wd_arm_at(now_us() + cfg->lease_ms * 1000 / 3);
	return 0;
}

void locktab_set_cfg(const struct config *c)
{
	cfg = c;
	/* A new lease applies to the next renewal of every hold: now. */
	wd_arm_at(now_us());
}

uint64_t locktab_keys(void) { return table.count; }

void lt_shutdown_all(void)
{
	/* Collect first: answering and releasing changes the table. */
	size_t n = 0, cap = table.count;
	struct lkey **all = malloc(sizeof(*all) * (cap ? cap : 1));
	if (!all)
		return;
	for (size_t i = 0; i < table.nslots; i++)
		for (struct kt_node *k = table.slots[i]; k; k = k->next)
			all[n++] = wq_entry(k, struct lkey, node);
	shutting_down = 1;
	/* Holders first: every hold a session had is LOST to it (it is
	 * released below), then waits are answered. */
	for (size_t i = 0; i < n; i++) {
		struct lkey *lk = all[i];
		for (struct wq_link *l = lk->holds.head.next; l != &lk->holds.head; l = l->next) {
			struct hold *h = wq_entry(l, struct hold, key_link);
			stats.lost++;
			line(h->holder, "LOST %s %llu", lk->key, (unsigned long long)h->fence);
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct lkey *lk = all[i];
		struct wq_link *l;
		retry_disarm(lk);
		while ((l = waitq_first(&lk->waiters))) {
			struct waiter *w = wq_entry(l, struct waiter, link);
			waiter_leave(w);
			reply(w->c, "ERR SHUTDOWN lockd is stopping");
		}
		/* The last release frees the entry: nothing of it is used after. */
		while (lk->holds.len > 1)
			release_hold(wq_entry(waitq_first(&lk->holds), struct hold, key_link), NULL);
		if (lk->holds.len)
			release_hold(wq_entry(waitq_first(&lk->holds), struct hold, key_link), NULL);
		else
			lk_maybe_free(lk);
	}
	free(all);
	rel_pump(-1, 0, NULL); /* all at once: lockd is leaving */
}

void locktab_shutdown(void)
{
	if (wd_timer)
		event_free(wd_timer);
	wd_timer = NULL;
	if (rel_ev)
		event_free(rel_ev);
	rel_ev = NULL;
	while (relq_head) {
		struct relq *r = relq_head;
		relq_head = r->next;
		free(r);
	}
	relq_tail = &relq_head;
	for (size_t i = 0; i < table.nslots; i++) {
		struct kt_node *k = table.slots[i], *nx;
		for (; k; k = nx) {
			struct lkey *lk = wq_entry(k, struct lkey, node);
			struct wq_link *l;
			nx = k->next;
			while ((l = waitq_pop(&lk->holds)) || (l = waitq_pop(&lk->ended))) {
				struct hold *h = wq_entry(l, struct hold, key_link);
				slab_free(&hold_slab, h);
			}
			if (lk->retry)
				event_free(lk->retry);
			lk_free(lk);
		}
	}
	keytab_destroy(&table);
	slab_destroy(&hold_slab);
	slab_destroy(&lk_small);
	slab_destroy(&lk_big);
	dh_free(&deadlines);
	if (dl_timer)
		event_free(dl_timer);
	dl_timer = NULL;
	dl_at = 0;
}
