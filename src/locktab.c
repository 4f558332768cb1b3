/* locktab: the central table of keys.
 *
 * Each key this lockd cares about has one struct lkey: the local holder
 * (at most one session), the FIFO of local waiters, and at most one
 * acquire in flight, always for the waiter at the head of the queue. So
 * waiters cost Redis nothing while they wait: only the head asks, and
 * only when the key was released (here, or on another lockd: a notice on
 * the masters' channel) or its lease on the masters can have run out.
 *
 * A release with waiters queued is a handoff: one ACQUIRE round swaps the
 * holder's token for the next waiter's on every master, so no other
 * client can slip in between. After locks.handoff_limit handoffs in a row
 * the key is released instead, so waiters on other lockd instances get
 * their turn.
 *
 * One watchdog renews every lease without TTL in batches (one script per
 * master per batch), a few batches at a time, so that a renewal wave
 * never queues the sessions' own requests behind it on the masters. The
 * locks of a session that ended are released the same way. Each held key
 * has a deadline event at the end of its validity: when it fires, the
 * session gets LOST. Every write that may shorten a lease on some master
 * (EXTEND, a renewal after a reload lowered locks.lease_ms) shortens the
 * validity when it is sent, whatever its verdict. */
#include "config.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "keytab.h"
#include "locktab.h"
#include "log.h"
#include "quorum.h"
#include "redlock.h"
#include "stats.h"

enum lk_state {
	LK_IDLE,      /* no local holder and nothing in flight */
	LK_ACQUIRING, /* an acquire or handoff for the head waiter is in flight */
	LK_HELD,      /* a local session holds the key */
};

struct lkey {
	struct kt_node node;
	enum lk_state state;
	/* LK_HELD */
	struct lt_client *holder;
	struct wq_link hold_link; /* on holder->locks */
	struct wq_link wd_link;   /* on the watchdog list (no TTL) */
	struct wq_link due_link;  /* on wd_due while waiting for a renewal batch */
	int due;
	uint32_t holds;
	uint64_t fence;
	uint64_t grant_id; /* bumps at every grant, to spot stale renewals */
	int has_ttl;
	int64_t lease_ms;     /* the lease last written on the masters */
	int64_t lease_end_us; /* when that lease runs out on the masters */
	int64_t validity_us;  /* deadline: LOST fires here */
	int64_t renewed_us;
	int renewing, renew_failed;
	struct event *deadline;
	char token[TOKEN_LEN + 1]; /* of the holder, or of the acquire in flight */
	/* LK_ACQUIRING */
	struct rl_call *call;
	struct waiter *acq_for;   /* the waiter it is for; NULL if it left */
	struct lt_client *rel_for;  /* a handoff's UNLOCK waiting for its verdict */
	struct lt_client *ext_for;  /* an EXTEND waiting for its verdict */
	int64_t handoff_from_us;  /* when the holder released, for the histogram */
	int was_handoff;
	/* waiting */
	struct waitq waiters;
	struct event *retry; /* busy elsewhere: try again at its lease end */
	int retry_armed;     /* retry is pending; only while waiters queue */
	uint32_t handoffs; /* consecutive local handoffs */
	int remote_waiters; /* the last grant saw a waiter on another lockd */
	int noticed;        /* a release notice came while our acquire was out */
	int refs;          /* renewal batches that point here */
	char key[];
};

static struct event_base *base;
static const struct config *cfg;
static const struct lt_ops *ops;
static struct keytab table;
static struct waitq watchdog; /* held locks without TTL */
static struct waitq wd_due;   /* of those, the ones a renewal batch will take */
static struct event *wd_timer;
static int64_t wd_next_us; /* when wd_timer fires */
static int wd_batches;     /* renewal batches in flight */
static int shutting_down;

/* Bulk work (renewals, the releases of sessions that ended) goes out in
 * batches of this many keys (one script per master, about a millisecond
 * of a master's time), this many batches at a time: the sessions' own
 * requests wait behind at most that much on each master. */
#define RENEW_BATCH 256
#define RENEW_INFLIGHT 2
#define RELEASE_BATCH 256
#define RELEASE_INFLIGHT 2

/* A release nobody waits for (its session ended), until its batch goes out. */
struct relq {
	struct relq *next;
	size_t klen;
	char token[TOKEN_LEN + 1];
	char key[];
};
static struct relq *relq_head, **relq_tail = &relq_head;
static size_t relq_len;
static int rel_batches;        /* release batches in flight */
static struct event *rel_ev;   /* sends queued releases from the loop */
static struct event *trim_ev;  /* gives memory back after a burst */

static void kick(struct lkey *lk);
static void deadline_cb(evutil_socket_t fd, short what, void *arg);
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
	lk = calloc(1, sizeof(*lk) + klen + 1);
	if (!lk)
		return NULL;
	memcpy(lk->key, key, klen);
	lk->node.key = lk->key;
	lk->node.klen = klen;
	waitq_init(&lk->waiters);
	keytab_insert(&table, &lk->node);
	return lk;
}

/* Free the entry once nothing refers to it. */
static void lk_maybe_free(struct lkey *lk)
{
	if (lk->state != LK_IDLE || lk->holder || lk->waiters.len || lk->call || lk->refs ||
	    lk->rel_for || lk->ext_for)
		return;
	keytab_remove(&table, &lk->node);
	if (lk->deadline)
		event_free(lk->deadline);
	if (lk->retry)
		event_free(lk->retry);
	free(lk);
}

static int64_t lease_for(const struct waiter *w)
{
	return w->has_ttl ? (int64_t)w->ttl_ms : cfg->lease_ms;
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

/* Answer a waiter that will not get the lock. The caller lets the next
 * waiter try (kick) and frees the entry if unused (lk_maybe_free). */
static void waiter_fail(struct waiter *w, const char *msg)
{
	struct lkey *lk = w->lk;
	waiter_leave(w);
	reply(w->c, "%s", msg);
	if (lk && lk->retry_armed && lk->waiters.len == 0) {
		event_del(lk->retry);
		lk->retry_armed = 0;
	}
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
	waiter_fail(w, w->quorum_failed ? MSG_NO_QUORUM
					: "TIMEOUT");
	kick(lk);
	lk_maybe_free(lk);
}

/* --- holding --- */

static void hold_start(struct lkey *lk, struct waiter *w, const struct rl_grant *g)
{
	struct lt_client *s = w->c;

	lk->state = LK_HELD;
	lk->holder = s;
	lk->holds = 1;
	lk->fence = g->fence;
	lk->grant_id++;
	lk->has_ttl = w->has_ttl;
	lk->lease_ms = lease_for(w);
	lk->lease_end_us = g->start_us + lk->lease_ms * 1000;
	lk->validity_us = g->validity_us;
	lk->renewed_us = g->start_us;
	lk->renew_failed = 0;
	lk->remote_waiters = g->remote_waiters;
	if (!lk->deadline)
		lk->deadline = evtimer_new(base, deadline_cb, lk);
	add_timer(lk->deadline, lk->validity_us);
	if (!lk->has_ttl)
		waitq_push(&watchdog, &lk->wd_link);
	waitq_push(&s->locks, &lk->hold_link);
	s->nlocks++;
	stats.locks_held++;
	stats.grants++;
	int64_t now = now_us();
	stats_observe(HIST_ACQUIRE, now - w->since_us);
	if (lk->was_handoff)
		stats_observe(HIST_HANDOFF, now - lk->handoff_from_us);
	waiter_leave(w);
	reply(s, "OK %llu", (unsigned long long)lk->fence);
}

/* The holder lets go (all holds): stop renewing and forget it. */
static void hold_end(struct lkey *lk)
{
	struct lt_client *s = lk->holder;
	waitq_remove(&s->locks, &lk->hold_link);
	s->nlocks--;
	waitq_remove(&watchdog, &lk->wd_link);
	if (lk->due) {
		waitq_remove(&wd_due, &lk->due_link);
		lk->due = 0;
	}
	event_del(lk->deadline);
	lk->holder = NULL;
	lk->holds = 0;
	lk->state = LK_IDLE;
	stats.locks_held--;
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lkey *lk = arg;
	struct lt_client *s = lk->holder;
	char token[TOKEN_LEN + 1];

	if (lk->state != LK_HELD || !s)
		return;
	log_warn("session %llu (%s): lock %s (fence %llu) lost: %s", (unsigned long long)s->id,
		 s->peer, lk->key, (unsigned long long)lk->fence,
		 lk->has_ttl ? "TTL lapsed" : "lease could not be renewed on a majority");
	stats.lost++;
	line(s, "LOST %s %llu", lk->key, (unsigned long long)lk->fence);
	memcpy(token, lk->token, sizeof(token));
	hold_end(lk);
	lk->handoffs = 0;
	/* It may still sit on some masters: clear it before the next try. */
	rl_release(lk->key, lk->node.klen, token, 0, NULL, NULL);
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
			hold_start(lk, w, g);
			lk->was_handoff = 0;
			return;
		}
		/* The waiter left while we asked: give it back. */
		rl_release(lk->key, lk->node.klen, lk->token, 0, NULL, NULL);
	} else if (w) {
		int quorum = g->result == RL_QUORUM;
		if (w->mode == WM_TRY) {
			stats.busy += !quorum;
			waiter_fail(w, quorum ? MSG_NO_QUORUM
					      : "BUSY");
		} else if (w->mode == WM_ONCE) {
			stats.timeouts += !quorum;
			waiter_fail(w, quorum ? MSG_NO_QUORUM
					      : "TIMEOUT");
		} else {
			/* Held elsewhere: sleep until a release notice, or
			 * until its lease can have run out. No quorum: back
			 * off with jitter. */
			w->quorum_failed = quorum;
			if (w->c->eof)
				ops->wake(w->c); /* its peer left: cancel */
			int64_t ms = quorum ? 50 + random() % 100
				     : lk->noticed ? 0 /* released meanwhile: try again now */
				     : (g->pttl_ms > 0 ? g->pttl_ms + 5 : 10);
			schedule_retry(lk, ms);
		}
	}
	lk->was_handoff = 0;
	kick(lk);
	lk_maybe_free(lk);
}

/* Let the head waiter ask the masters, if nothing is in flight. */
static void kick(struct lkey *lk)
{
	struct wq_link *l;

	if (lk->state != LK_IDLE || lk->retry_armed || shutting_down)
		return;
	if (!(l = waitq_first(&lk->waiters)))
		return;
	struct waiter *w = wq_entry(l, struct waiter, link);
	rl_token_new(lk->token);
	lk->state = LK_ACQUIRING;
	lk->acq_for = w;
	lk->was_handoff = 0;
	lk->noticed = 0;
	lk->call = rl_acquire(lk->key, lk->node.klen, lk->token, lease_for(w), NULL,
			      w->mode == WM_WAIT, acquired, NULL, lk);
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
	event_del(lk->retry);
	lk->retry_armed = 0;
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
	if (!relq_head && !rel_batches && !shutting_down) {
		struct timeval tv = {1, 0};
		event_add(trim_ev, &tv);
	}
}

/* Released keys wait here, so that a session's many locks leave in few
 * scripts; the first batch goes out from the loop, once all are queued. */
static void rel_enqueue(const char *key, size_t klen, const char *token)
{
	struct relq *r = malloc(sizeof(*r) + klen + 1);
	if (!r) {
		log_warn("out of memory releasing %.*s: its lease lapses on the masters", (int)klen,
			 key);
		return;
	}
	r->next = NULL;
	r->klen = klen;
	memcpy(r->token, token, sizeof(r->token));
	memcpy(r->key, key, klen);
	r->key[klen] = '\0';
	*relq_tail = r;
	relq_tail = &r->next;
	relq_len++;
	event_active(rel_ev, EV_TIMEOUT, 0);
}

/* After a burst the allocator keeps the freed pages: hand them back. */
static void trim_cb(evutil_socket_t fd, short what, void *arg) { malloc_trim(0); }

int locktab_busy(void) { return relq_head != NULL || rel_batches > 0; }

/* The holder is done with the key (UNLOCK to 0, QUIT, disconnect). rs is
 * the session that waits for the release verdict, or NULL. */
static void release_key(struct lkey *lk, struct lt_client *rs)
{
	char old[TOKEN_LEN + 1];
	struct wq_link *l = waitq_first(&lk->waiters);

	memcpy(old, lk->token, sizeof(old));
	hold_end(lk);
	/* Hand over directly, unless a waiter on another lockd has asked and
	 * this key went from hand to hand here handoff_limit times already. */
	if (!lk->remote_waiters)
		lk->handoffs = 0;
	if (l && !lk->retry_armed && lk->handoffs < (uint32_t)cfg->handoff_limit &&
	    !shutting_down) {
		struct waiter *w = wq_entry(l, struct waiter, link);
		rl_token_new(lk->token);
		lk->state = LK_ACQUIRING;
		lk->acq_for = w;
		lk->was_handoff = 1;
		lk->handoff_from_us = now_us();
		lk->rel_for = rs;
		if (rs)
			rs->verdict_lk = lk;
		lk->call = rl_acquire(lk->key, lk->node.klen, lk->token, lease_for(w), old,
				      w->mode == WM_WAIT, acquired, handoff_released, lk);
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
	int64_t flag_ms = l && !shutting_down ? cfg->lease_ms + 1000 : 0;
	if (!rs && !flag_ms) {
		/* Nobody waits for this verdict (a session's end): batched. */
		rel_enqueue(lk->key, lk->node.klen, old);
	} else {
		struct rl_call *c = rl_release(lk->key, lk->node.klen, old, flag_ms,
					       rs ? released : NULL, rs);
		if (rs) {
			if (c)
				rs->call = c;
			else
				reply(rs, "%s", MSG_OOM);
		}
	}
	kick(lk);
	lk_maybe_free(lk);
}

/* --- commands --- */

static struct lkey *held_by(struct lt_client *s, const char *key, size_t klen)
{
	struct lkey *lk = lk_find(key, klen);
	return lk && lk->state == LK_HELD && lk->holder == s ? lk : NULL;
}

void lt_lock(struct lt_client *s, const struct request *r)
{
	struct lkey *lk = lk_find(r->key, r->klen);
	struct waiter *w = &s->w;
	int try = r->cmd == CMD_TRYLOCK || (r->has_wait && r->wait_ms == 0);

	if (lk && lk->state == LK_HELD && lk->holder == s) {
		lk->holds++; /* reentrant: WAIT and TTL are ignored */
		reply(s, "OK %llu", (unsigned long long)lk->fence);
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
	if (try && lk && (lk->state != LK_IDLE || lk->waiters.len)) {
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
	struct lkey *lk = held_by(s, key, klen);
	if (!lk) {
		reply(s, "%s", MSG_NOT_HELD);
		return;
	}
	if (--lk->holds > 0) {
		reply(s, "OK %u", lk->holds);
		return;
	}
	release_key(lk, s);
}

/* A write of a lease of lease_ms, sent at start, may land on some
 * masters whatever its verdict: where it ends the lease before the
 * validity we believe in, the validity ends with it (LOST is sent then). */
static void lease_written(struct lkey *lk, int64_t start, int64_t lease_ms)
{
	int64_t end = start + quorum_validity_us(lease_ms, 0, cfg->drift_factor);
	if (end < lk->validity_us) {
		lk->validity_us = end;
		add_timer(lk->deadline, end);
	}
	if (start + lease_ms * 1000 < lk->lease_end_us)
		lk->lease_end_us = start + lease_ms * 1000;
}

static void extended(struct rl_call *c, void *owner)
{
	struct lkey *lk = owner;
	struct lt_client *s = lk->ext_for;
	int n;
	struct rl_renew_item *it = rl_renew_items(c, &n);
	int64_t start = rl_start_us(c), lease = rl_lease_of(c);

	lk->refs--;
	lk->ext_for = NULL;
	if (!s) { /* the session left meanwhile */
		lk_maybe_free(lk);
		return;
	}
	s->verdict_lk = NULL;
	if (lk->grant_id != it[0].grant_id || lk->state != LK_HELD || lk->holder != s) {
		reply(s, "ERR NOTHELD the lock was lost");
		lk_maybe_free(lk);
		return;
	}
	if (!it[0].ok) {
		/* lease_written already cut the validity if this one may end sooner */
		stats.quorum_failures++;
		reply(s, "ERR QUORUM no majority of masters extended the lease");
		return;
	}
	lk->lease_ms = lease;
	lk->lease_end_us = start + lease * 1000;
	lk->validity_us = it[0].validity_us;
	add_timer(lk->deadline, lk->validity_us);
	reply(s, "OK");
}

void lt_extend(struct lt_client *s, const char *key, size_t klen, uint32_t ms)
{
	struct lkey *lk = held_by(s, key, klen);
	struct rl_renew_item *it;

	if (!lk) {
		reply(s, "%s", MSG_NOT_HELD);
		return;
	}
	if (!lk->has_ttl) {
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
	it->key = lk->key;
	it->klen = lk->node.klen;
	it->token = lk->token;
	it->owner = lk;
	it->grant_id = lk->grant_id;
	int64_t start = now_us();
	/* Owned by the key, not the session: the verdict always comes back
	 * to drop the reference, even after the session left. */
	if (!rl_renew(it, 1, ms, extended, lk)) {
		free(it);
		reply(s, "%s", MSG_OOM);
		return;
	}
	lk->refs++;
	lk->ext_for = s;
	s->verdict_lk = lk;
	lease_written(lk, start, ms);
}

static size_t waiting_for(const char *key, size_t klen)
{
	struct lkey *lk = lk_find(key, klen);
	return lk ? lk->waiters.len : 0;
}

static void status_done(struct rl_call *c, void *owner)
{
	struct lt_client *s = owner;
	int held;
	int64_t ttl;

	s->call = NULL;
	rl_status_of(c, &held, &ttl);
	if (held < 0)
		reply(s, "%s", MSG_NO_QUORUM);
	else if (held) {
		size_t klen;
		const char *key = rl_key_of(c, &klen);
		reply(s, "HELD %lld %zu", (long long)ttl, waiting_for(key, klen));
	} else {
		reply(s, "FREE");
	}
}

void lt_status(struct lt_client *s, const char *key, size_t klen)
{
	struct lkey *lk = lk_find(key, klen);

	if (lk && lk->state == LK_HELD) {
		int64_t left = (lk->lease_end_us - now_us()) / 1000;
		reply(s, "HELD %lld %zu", (long long)(left > 0 ? left : 0),
			      lk->waiters.len);
		return;
	}
	s->call = rl_status(key, klen, status_done, s);
	if (!s->call)
		reply(s, "%s", MSG_OOM);
}

void lt_held(struct lt_client *s)
{
	int64_t now = now_us();
	for (struct wq_link *l = s->locks.head.next; l != &s->locks.head; l = l->next) {
		struct lkey *lk = wq_entry(l, struct lkey, hold_link);
		int64_t left = (lk->lease_end_us - now) / 1000;
		line(s, "KEY %s %llu %u %lld", lk->key, (unsigned long long)lk->fence,
			      lk->holds, (long long)(left > 0 ? left : 0));
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
		if (lk->retry_armed && lk->waiters.len == 0) {
			event_del(lk->retry);
			lk->retry_armed = 0;
		}
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
		struct lkey *vk = s->verdict_lk;
		if (vk->rel_for == s)
			vk->rel_for = NULL;
		if (vk->ext_for == s)
			vk->ext_for = NULL;
		s->verdict_lk = NULL;
	}
	while ((l = waitq_first(&s->locks)))
		release_key(wq_entry(l, struct lkey, hold_link), NULL);
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
		struct lkey *lk = it[i].owner;
		lk->refs--;
		lk->renewing = 0;
		if (lk->grant_id == it[i].grant_id && lk->state == LK_HELD && !lk->has_ttl) {
			if (it[i].ok) {
				lk->lease_ms = lease;
				lk->lease_end_us = start + lease * 1000;
				lk->validity_us = it[i].validity_us;
				lk->renewed_us = start;
				lk->renew_failed = 0;
				add_timer(lk->deadline, lk->validity_us);
				stats.renewals++;
				if (start + lease * 1000 / 3 < next)
					next = start + lease * 1000 / 3;
			} else {
				lk->renew_failed = 1;
				stats.renewal_failures++;
				log_debug("renewal of %s failed: %d masters hold it for us", lk->key,
					  it[i].yes);
				failed = 1;
			}
		}
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

/* Send renewal batches of the due locks, RENEW_INFLIGHT at most at once;
 * each verdict sends the next. A batch is made when it is sent, of the
 * locks still held then, so a release is never followed by a renewal
 * that would write the key back. */
static void wd_pump(void)
{
	while (wd_batches < RENEW_INFLIGHT && wd_due.len) {
		int n = wd_due.len < RENEW_BATCH ? (int)wd_due.len : RENEW_BATCH;
		struct rl_renew_item *batch = malloc(sizeof(*batch) * (size_t)n);
		if (!batch)
			return; /* they stay due: the next verdict or tick tries again */
		int64_t lease = cfg->lease_ms, start = now_us();
		for (int i = 0; i < n; i++) {
			struct lkey *lk = wq_entry(waitq_pop(&wd_due), struct lkey, due_link);
			lk->due = 0;
			batch[i].key = lk->key;
			batch[i].klen = lk->node.klen;
			batch[i].token = lk->token;
			batch[i].owner = lk;
			batch[i].grant_id = lk->grant_id;
			lk->refs++;
			lk->renewing = 1;
		}
		if (!rl_renew(batch, n, lease, renewed, &watchdog)) {
			for (int i = 0; i < n; i++) {
				struct lkey *lk = batch[i].owner;
				lk->refs--;
				lk->renewing = 0;
				lk->renew_failed = 1; /* the next tick takes it */
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

/* Mark the locks whose renewal is due and send the first batches. A lock
 * is due once half a renewal period (a third of the lease it holds) has
 * passed since its last renewal, after a failed one, or when its lease is
 * not the configured one (a reload changed it). The timer is set for the
 * earliest lock not due yet, at most a period of the configured lease. */
static void wd_tick(evutil_socket_t fd, short what, void *arg)
{
	int64_t now = now_us(), next = now + cfg->lease_ms * 1000 / 3;

	for (struct wq_link *l = watchdog.head.next; l != &watchdog.head; l = l->next) {
		struct lkey *lk = wq_entry(l, struct lkey, wd_link);
		int64_t period = lk->lease_ms * 1000 / 3;
		if (lk->due || lk->renewing)
			continue;
		if (lk->renew_failed || lk->lease_ms != cfg->lease_ms ||
		    now - lk->renewed_us >= period / 2) {
			waitq_push(&wd_due, &lk->due_link);
			lk->due = 1;
		} else if (lk->renewed_us + period < next) {
			next = lk->renewed_us + period;
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
	trim_ev = evtimer_new(base, trim_cb, NULL);
	if (!wd_timer || !rel_ev || !trim_ev)
		return -1;
	wd_arm_at(now_us() + cfg->lease_ms * 1000 / 3);
	return 0;
}

void locktab_set_cfg(const struct config *c)
{
	cfg = c;
	/* A new lease applies to the next renewal of every lock: now. */
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
	/* Holders first: every lock a session held is LOST to it (it is
	 * released below), then waits are answered. */
	for (size_t i = 0; i < n; i++) {
		struct lkey *lk = all[i];
		if (lk->state == LK_HELD && lk->holder) {
			stats.lost++;
			line(lk->holder, "LOST %s %llu", lk->key, (unsigned long long)lk->fence);
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct lkey *lk = all[i];
		struct wq_link *l;
		if (lk->retry_armed) {
			event_del(lk->retry);
			lk->retry_armed = 0;
		}
		while ((l = waitq_first(&lk->waiters))) {
			struct waiter *w = wq_entry(l, struct waiter, link);
			waiter_leave(w);
			reply(w->c, "ERR SHUTDOWN lockd is stopping");
		}
		if (lk->state == LK_HELD)
			release_key(lk, NULL);
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
	if (trim_ev)
		event_free(trim_ev);
	rel_ev = trim_ev = NULL;
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
			nx = k->next;
			if (lk->deadline)
				event_free(lk->deadline);
			if (lk->retry)
				event_free(lk->retry);
			free(lk);
		}
	}
	keytab_destroy(&table);
}
