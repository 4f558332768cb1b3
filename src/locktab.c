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
 * One watchdog timer renews every lease without TTL in batches (one
 * script per master per batch). Each held key has a deadline event at
 * the end of its validity: when it fires, the session gets LOST. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "keytab.h"
#include "locktab.h"
#include "log.h"
#include "master.h"
#include "quorum.h"
#include "redlock.h"
#include "session.h"
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
	struct session *holder;
	struct wq_link hold_link; /* on holder->locks */
	struct wq_link wd_link;   /* on the watchdog list (no TTL) */
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
	struct session *rel_for;  /* a handoff's UNLOCK waiting for its verdict */
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
static struct keytab table;
static struct waitq watchdog;
static struct event *wd_timer;
static int wd_retry_soon;
static int shutting_down;

#define RENEW_BATCH 512    /* keys per renewal script */

static void kick(struct lkey *lk);
static void deadline_cb(evutil_socket_t fd, short what, void *arg);
static void retry_cb(evutil_socket_t fd, short what, void *arg);
static void wd_tick(evutil_socket_t fd, short what, void *arg);
static void arm_watchdog(int64_t ms);

static void add_timer(struct event *ev, int64_t at_us)
{
	int64_t d = at_us - now_us();
	if (d < 0)
		d = 0;
	struct timeval tv = {(time_t)(d / 1000000), (suseconds_t)(d % 1000000)};
	event_add(ev, &tv);
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
	    lk->rel_for)
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
static void waiter_fail(struct waiter *w, const char *reply)
{
	struct lkey *lk = w->lk;
	waiter_leave(w);
	session_reply(w->s, "%s", reply);
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
	waiter_fail(w, w->quorum_failed ? "ERR QUORUM no majority of masters answered"
					: "TIMEOUT");
	kick(lk);
	lk_maybe_free(lk);
}

/* --- holding --- */

static void hold_start(struct lkey *lk, struct waiter *w, const struct rl_grant *g)
{
	struct session *s = w->s;

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
	session_reply(s, "OK %llu", (unsigned long long)lk->fence);
}

/* The holder lets go (all holds): stop renewing and forget it. */
static void hold_end(struct lkey *lk)
{
	struct session *s = lk->holder;
	waitq_remove(&s->locks, &lk->hold_link);
	s->nlocks--;
	waitq_remove(&watchdog, &lk->wd_link);
	event_del(lk->deadline);
	lk->holder = NULL;
	lk->holds = 0;
	lk->state = LK_IDLE;
	stats.locks_held--;
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lkey *lk = arg;
	struct session *s = lk->holder;
	char token[TOKEN_LEN + 1];

	if (lk->state != LK_HELD || !s)
		return;
	log_warn("session %llu (%s): lock %s (fence %llu) lost: %s", (unsigned long long)s->id,
		 s->peer, lk->key, (unsigned long long)lk->fence,
		 lk->has_ttl ? "TTL lapsed" : "lease could not be renewed on a majority");
	stats.lost++;
	session_line(s, "LOST %s %llu", lk->key, (unsigned long long)lk->fence);
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
	struct session *s = lk->rel_for;
	if (!s)
		return;
	lk->rel_for = NULL;
	s->rel_lk = NULL;
	if (rl_result_of(c) == RL_OK) {
		session_reply(s, "OK 0");
	} else {
		stats.quorum_failures++;
		session_reply(s, "ERR QUORUM release not confirmed by a majority");
	}
	/* The verdict may come after the grant's: then nothing else frees it. */
	lk_maybe_free(lk);
}

/* A plain release's verdict, for the UNLOCK that asked. */
static void released(struct rl_call *c, void *owner)
{
	struct session *s = owner;
	s->call = NULL;
	if (rl_result_of(c) == RL_OK) {
		session_reply(s, "OK 0");
	} else {
		stats.quorum_failures++;
		session_reply(s, "ERR QUORUM release not confirmed by a majority");
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
			waiter_fail(w, quorum ? "ERR QUORUM no majority of masters answered"
					      : "BUSY");
		} else if (w->mode == WM_ONCE) {
			stats.timeouts += !quorum;
			waiter_fail(w, quorum ? "ERR QUORUM no majority of masters answered"
					      : "TIMEOUT");
		} else {
			/* Held elsewhere: sleep until a release notice, or
			 * until its lease can have run out. No quorum: back
			 * off with jitter. */
			w->quorum_failed = quorum;
			if (w->s->eof)
				session_poke(w->s); /* its peer left: cancel */
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
		waiter_fail(w, "ERR LIMIT out of memory");
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

/* The holder is done with the key (UNLOCK to 0, QUIT, disconnect). rs is
 * the session that waits for the release verdict, or NULL. */
static void release_key(struct lkey *lk, struct session *rs)
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
			rs->rel_lk = lk;
		lk->call = rl_acquire(lk->key, lk->node.klen, lk->token, lease_for(w), old,
				      w->mode == WM_WAIT, acquired, handoff_released, lk);
		if (lk->call)
			return;
		lk->state = LK_IDLE;
		lk->acq_for = NULL;
		lk->rel_for = NULL;
		if (rs)
			rs->rel_lk = NULL;
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
	struct rl_call *c =
		rl_release(lk->key, lk->node.klen, old, flag_ms, rs ? released : NULL, rs);
	if (rs) {
		if (c)
			rs->call = c;
		else
			session_reply(rs, "ERR LIMIT out of memory");
	}
	kick(lk);
	lk_maybe_free(lk);
}

/* --- commands --- */

static struct lkey *held_by(struct session *s, const char *key, size_t klen)
{
	struct lkey *lk = lk_find(key, klen);
	return lk && lk->state == LK_HELD && lk->holder == s ? lk : NULL;
}

void lt_lock(struct session *s, const struct request *r)
{
	struct lkey *lk = lk_find(r->key, r->klen);
	struct waiter *w = &s->w;
	int try = r->cmd == CMD_TRYLOCK || (r->has_wait && r->wait_ms == 0);

	if (lk && lk->state == LK_HELD && lk->holder == s) {
		lk->holds++; /* reentrant: WAIT and TTL are ignored */
		session_reply(s, "OK %llu", (unsigned long long)lk->fence);
		return;
	}
	if (r->has_ttl && quorum_validity_us(r->ttl_ms, 0, cfg->drift_factor) <= 0) {
		/* No grant could ever be valid: say so rather than QUORUM. */
		session_reply(s, "ERR ARG TTL is shorter than the clock drift margin (2 ms + "
				 "locks.drift_factor)");
		return;
	}
	if (s->nlocks >= (uint64_t)cfg->max_locks_per_session) {
		session_reply(s, "ERR LIMIT this session holds limits.max_locks_per_session locks");
		return;
	}
	if (try && lk && (lk->state != LK_IDLE || lk->waiters.len)) {
		/* Held here, or others queue for it: never jump the queue. */
		if (r->cmd == CMD_TRYLOCK) {
			stats.busy++;
			session_reply(s, "BUSY");
		} else {
			stats.timeouts++;
			session_reply(s, "TIMEOUT");
		}
		return;
	}
	if (!lk && !(lk = lk_get(r->key, r->klen))) {
		session_reply(s, "ERR LIMIT out of memory");
		return;
	}
	w->lk = lk;
	w->s = s;
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

int lt_waiting(const struct session *s)
{
	const struct waiter *w = &s->w;
	const struct lkey *lk = w->lk;
	return lk && w->mode == WM_WAIT && (lk->acq_for != w || lk->retry_armed);
}

void lt_unlock(struct session *s, const char *key, size_t klen)
{
	struct lkey *lk = held_by(s, key, klen);
	if (!lk) {
		session_reply(s, "ERR NOTHELD this session does not hold the key");
		return;
	}
	if (--lk->holds > 0) {
		session_reply(s, "OK %u", lk->holds);
		return;
	}
	release_key(lk, s);
}

static void extended(struct rl_call *c, void *owner)
{
	struct session *s = owner;
	int n;
	struct rl_renew_item *it = rl_renew_items(c, &n);
	struct lkey *lk = it[0].owner;
	int64_t start = rl_start_us(c);

	s->call = NULL;
	lk->refs--;
	if (lk->grant_id != it[0].grant_id || lk->state != LK_HELD || lk->holder != s) {
		session_reply(s, "ERR NOTHELD the lock was lost");
		lk_maybe_free(lk);
		return;
	}
	int64_t left = quorum_validity_us(s->arg_ms, now_us() - start, cfg->drift_factor);
	if (it[0].yes < quorum_majority(masters_count()) || left <= 0) {
		stats.quorum_failures++;
		session_reply(s, "ERR QUORUM no majority of masters extended the lease");
		return;
	}
	lk->lease_ms = s->arg_ms;
	lk->lease_end_us = start + lk->lease_ms * 1000;
	lk->validity_us = now_us() + left;
	add_timer(lk->deadline, lk->validity_us);
	session_reply(s, "OK");
}

void lt_extend(struct session *s, const char *key, size_t klen, uint32_t ms)
{
	struct lkey *lk = held_by(s, key, klen);
	struct rl_renew_item *it;

	if (!lk) {
		session_reply(s, "ERR NOTHELD this session does not hold the key");
		return;
	}
	if (!lk->has_ttl) {
		session_reply(s, "ERR ARG EXTEND is for TTL locks; this lock is renewed by lockd");
		return;
	}
	if (!(it = calloc(1, sizeof(*it)))) {
		session_reply(s, "ERR LIMIT out of memory");
		return;
	}
	it->key = lk->key;
	it->klen = lk->node.klen;
	it->token = lk->token;
	it->owner = lk;
	it->grant_id = lk->grant_id;
	s->arg_ms = ms;
	lk->refs++;
	s->call = rl_renew(it, 1, ms, extended, s);
	if (!s->call) {
		lk->refs--;
		session_reply(s, "ERR LIMIT out of memory");
	}
}

static size_t waiting_for(const char *key, size_t klen)
{
	struct lkey *lk = lk_find(key, klen);
	return lk ? lk->waiters.len : 0;
}

static void status_done(struct rl_call *c, void *owner)
{
	struct session *s = owner;
	int held;
	int64_t ttl;

	s->call = NULL;
	rl_status_of(c, &held, &ttl);
	if (held < 0)
		session_reply(s, "ERR QUORUM no majority of masters answered");
	else if (held)
		session_reply(s, "HELD %lld %zu", (long long)ttl, waiting_for(s->key, s->klen));
	else
		session_reply(s, "FREE");
}

void lt_status(struct session *s, const char *key, size_t klen)
{
	struct lkey *lk = lk_find(key, klen);

	if (lk && lk->state == LK_HELD) {
		int64_t left = (lk->lease_end_us - now_us()) / 1000;
		session_reply(s, "HELD %lld %zu", (long long)(left > 0 ? left : 0),
			      lk->waiters.len);
		return;
	}
	s->call = rl_status(key, klen, status_done, s);
	if (!s->call)
		session_reply(s, "ERR LIMIT out of memory");
}

void lt_held(struct session *s)
{
	int64_t now = now_us();
	for (struct wq_link *l = s->locks.head.next; l != &s->locks.head; l = l->next) {
		struct lkey *lk = wq_entry(l, struct lkey, hold_link);
		int64_t left = (lk->lease_end_us - now) / 1000;
		session_line(s, "KEY %s %llu %u %lld", lk->key, (unsigned long long)lk->fence,
			      lk->holds, (long long)(left > 0 ? left : 0));
	}
	session_reply(s, "END");
}

void lt_session_end(struct session *s)
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
	if (s->rel_lk) {
		s->rel_lk->rel_for = NULL;
		s->rel_lk = NULL;
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
	int maj = quorum_majority(masters_count());

	for (int i = 0; i < n; i++) {
		struct lkey *lk = it[i].owner;
		lk->refs--;
		lk->renewing = 0;
		if (lk->grant_id == it[i].grant_id && lk->state == LK_HELD && !lk->has_ttl) {
			int64_t left = quorum_validity_us(cfg->lease_ms, now - start,
							  cfg->drift_factor);
			if (it[i].yes >= maj && left > 0) {
				lk->lease_ms = cfg->lease_ms;
				lk->lease_end_us = start + lk->lease_ms * 1000;
				lk->validity_us = now + left;
				lk->renewed_us = start;
				lk->renew_failed = 0;
				add_timer(lk->deadline, lk->validity_us);
				stats.renewals++;
			} else {
				lk->renew_failed = 1;
				stats.renewal_failures++;
				log_debug("renewal of %s failed: %d of %d masters, %lld us left",
					  lk->key, it[i].yes, masters_count(), (long long)left);
				failed = 1;
			}
		}
		lk_maybe_free(lk);
	}
	if (failed && !wd_retry_soon) {
		/* Try again soon, while the leases are still valid. */
		wd_retry_soon = 1;
		int64_t ms = cfg->timeout_ms * 2 < 100 ? 100 : cfg->timeout_ms * 2;
		if (ms > cfg->lease_ms / 6)
			ms = cfg->lease_ms / 6;
		arm_watchdog(ms);
	}
}

static void arm_watchdog(int64_t ms)
{
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
	event_add(wd_timer, &tv);
}

static void wd_tick(evutil_socket_t fd, short what, void *arg)
{
	int64_t now = now_us(), period = cfg->lease_ms * 1000 / 3;
	struct rl_renew_item *batch = NULL;
	int n = 0;

	wd_retry_soon = 0;
	arm_watchdog(cfg->lease_ms / 3);
	for (struct wq_link *l = watchdog.head.next; l != &watchdog.head; l = l->next) {
		struct lkey *lk = wq_entry(l, struct lkey, wd_link);
		/* Renewed recently enough (e.g. granted just now): next time. */
		if (lk->renewing || (!lk->renew_failed && now - lk->renewed_us < period / 2))
			continue;
		if (!batch && !(batch = malloc(sizeof(*batch) * RENEW_BATCH)))
			break;
		batch[n].key = lk->key;
		batch[n].klen = lk->node.klen;
		batch[n].token = lk->token;
		batch[n].owner = lk;
		batch[n].grant_id = lk->grant_id;
		lk->refs++;
		lk->renewing = 1;
		if (++n == RENEW_BATCH) {
			stats.renew_batches++;
			if (!rl_renew(batch, n, cfg->lease_ms, renewed, &watchdog))
				break;
			batch = NULL;
			n = 0;
		}
	}
	if (n) {
		stats.renew_batches++;
		if (rl_renew(batch, n, cfg->lease_ms, renewed, &watchdog))
			batch = NULL;
	}
	if (batch) { /* out of memory: undo the marks, retry next tick */
		for (int i = 0; i < n; i++) {
			struct lkey *lk = batch[i].owner;
			lk->refs--;
			lk->renewing = 0;
		}
		free(batch);
	}
}

/* --- setup --- */

int locktab_init(struct event_base *b, const struct config *c)
{
	base = b;
	cfg = c;
	waitq_init(&watchdog);
	if (keytab_init(&table, 1024))
		return -1;
	wd_timer = evtimer_new(base, wd_tick, NULL);
	arm_watchdog(cfg->lease_ms / 3);
	return 0;
}

void locktab_set_cfg(const struct config *c)
{
	cfg = c;
	arm_watchdog(cfg->lease_ms / 3);
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
			session_reply(w->s, "ERR SHUTDOWN lockd is stopping");
		}
		if (lk->state == LK_HELD)
			release_key(lk, NULL);
		else
			lk_maybe_free(lk);
	}
	free(all);
}

void locktab_shutdown(void)
{
	if (wd_timer)
		event_free(wd_timer);
	wd_timer = NULL;
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
