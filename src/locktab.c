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
 * A hold's life after its grant (its states, its validity, its renewals)
 * and the releases nobody waits for are renew.c's; the two share the
 * types of locktab_int.h, and renew.c answers here through rn_ops. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "keytab.h"
#include "locktab.h"
#include "conflict.h"
#include "locktab_core.h"
#include "locktab_int.h"
#include "log.h"
#include "quorum.h"
#include "redlock.h"
#include "renew.h"
#include "slab.h"
#include "stats.h"

static struct event_base *base;
static const struct config *cfg;
static const struct lt_ops *ops;
static struct keytab table;
static int shutting_down;

/* Holds and key entries live in slabs of their own (slab.h): dense, so a
 * million of them cost their size, and a burst's buffers freed between
 * them do not pin pages. Key entries with longer keys than LK_SLAB_BIG
 * holds come from malloc. */
#define LK_SLAB_SMALL 256 /* entry and key, bytes */
#define LK_SLAB_BIG   512
static struct slab hold_slab, lk_small, lk_big;
static struct lt_elect_hooks el_hooks; /* leader election (1.3), or zeroes */
struct lt_part_ops ltc_part_ops;       /* LOCKALL (1.4), or zeroes */

static void kick(struct lkey *lk);
static void retry_cb(evutil_socket_t fd, short what, void *arg);
void ltc_reply(struct lt_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ops->reply(c, fmt, ap);
	va_end(ap);
}

void ltc_line(struct lt_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ops->line(c, fmt, ap);
	va_end(ap);
}

struct lkey *ltc_find(const char *key, size_t klen)
{
	struct kt_node *n = keytab_find(&table, key, klen);
	return n ? ilist_entry(n, struct lkey, node) : NULL;
}

struct lkey *ltc_get(const char *key, size_t klen)
{
	struct lkey *lk = ltc_find(key, klen);
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
	ilist_init(&lk->waiters);
	ilist_init(&lk->holds);
	ilist_init(&lk->ended);
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
void ltc_maybe_free(struct lkey *lk)
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

/* The session record a hold of c's is written in (1.2), or none. */
static struct rl_rec rec_of(const struct lt_client *c, enum hold_kind k, int ttl)
{
	return (struct rl_rec){c ? c->sid : NULL, hold_rec_kind(k), ttl};
}

static enum rl_wait wait_of(const struct waiter *w)
{
	return w->mode != WM_WAIT ? RW_NO : w->xraised ? RW_RAISED : RW_YES;
}

/* The session's hold of the key, if any (searching the shorter list). */
struct hold *ltc_hold_of(const struct lkey *lk, const struct lt_client *s)
{
	if (s->nlocks < lk->holds.len) {
		for (struct ilink *l = s->locks.head.next; l != &s->locks.head; l = l->next) {
			struct hold *h = ilist_entry(l, struct hold, hold_link);
			if (h->lk == lk)
				return h;
		}
		return NULL;
	}
	for (struct ilink *l = lk->holds.head.next; l != &lk->holds.head; l = l->next) {
		struct hold *h = ilist_entry(l, struct hold, key_link);
		if (h->holder == s)
			return h;
	}
	return NULL;
}

/* --- waiters --- */

static void waiter_leave(struct waiter *w)
{
	struct lkey *lk = w->lk;
	if (!lk)
		return;
	ilist_remove(&lk->waiters, &w->link);
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
	ltc_waiter_leave(w);
	if (w->part)
		ltc_part_ops.failed(w, msg); /* a LOCKALL's: it answers */
	else
		ltc_reply(w->c, "%s", msg);
}

static void wait_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct waiter *w = arg;
	struct lkey *lk = w->lk;
	if (now_us() < w->deadline_us) { /* never answer before the WAIT is over */
		rn_timer_at(w->timer, w->deadline_us);
		return;
	}
	stats.timeouts += !w->quorum_failed;
	waiter_fail(w, w->quorum_failed ? MSG_NO_QUORUM : "TIMEOUT");
	kick(lk);
	ltc_maybe_free(lk);
}

/* --- holding --- */

/* A grant: the hold's lease is the lease its call wrote (rl_lease_of), never
 * the configured one, which a reload may have changed since. */
static void hold_start(struct lkey *lk, struct waiter *w, const struct rl_call *c)
{
	const struct rl_grant *g = rl_grant_of(c);
	int64_t lease_ms = rl_lease_of(c);
	struct lt_client *s = w->c;
	struct hold *h = slab_alloc(&hold_slab);

	if (h)
		memset(h, 0, sizeof(*h));
	if (!h) {
		rl_undo(c); /* give it back: it lapses on the masters otherwise */
		waiter_fail(w, MSG_OOM);
		return;
	}
	h->lk = lk;
	h->holder = s;
	h->kind = lk->acq_kind;
	h->permit = lk->acq_permit;
	h->holds = 1;
	h->fence = g->fence;
	h->lease_ms = lease_ms;
	h->lease_end_us = g->start_us + h->lease_ms * 1000;
	h->renewed_us = g->start_us;
	h->since_us = now_us();
	h->delay_ms = h->kind == HK_SHARED ? 0 : w->delay_ms;
	memcpy(h->token, lk->acq_token, sizeof(h->token));
	lk->remote_waiters = g->remote_waiters;
	rn_hold_state(h, w->has_ttl ? HS_TTL : HS_WATCHED);
	rn_deadline(h, g->validity_us);
	stats.grants++;
	stats.shared_grants += h->kind == HK_SHARED;
	stats.permit_grants += h->kind == HK_PERMIT;
	int64_t now = now_us();
	stats_observe(HIST_ACQUIRE, now - w->since_us);
	if (lk->was_handoff)
		stats_observe(HIST_HANDOFF, now - lk->handoff_from_us);
	int campaign = w->campaign && el_hooks.granted;
	waiter_leave(w);
	if (w->part)
		ltc_part_ops.granted(w, h->fence); /* a LOCKALL's: it answers */
	else if (campaign)
		el_hooks.granted(s, lk->key, lk->node.klen, h->fence, h->token);
	else
		ltc_reply(s, "OK %llu", (unsigned long long)h->fence);
}

/* Free an ended hold once nothing points at it. */
static void hold_put(struct hold *h)
{
	if (h->holder || h->refs || h->ext_for)
		return;
	ilist_remove(&h->lk->ended, &h->key_link);
	slab_free(&hold_slab, h);
}

/* The holder lets go (all holds): stop renewing and forget it. The hold
 * may be freed: callers copy what they need first. */
static void hold_end(struct hold *h)
{
	rn_hold_state(h, HS_ENDED);
	hold_put(h);
}

void ltc_hold_end(struct hold *h)
{
	hold_end(h);
}

/* A renewal batch let go of h (rn_ops.unref). */
static void hold_unref(struct hold *h)
{
	struct lkey *lk = h->lk;
	hold_put(h);
	ltc_maybe_free(lk);
}

/* Something held here ended: a waiter that may use it should ask now
 * rather than when its retry was due. */
static void freed_here(struct lkey *lk)
{
	struct ilink *l = ilist_first(&lk->waiters);
	if (!l || ilist_entry(l, struct waiter, link)->kind != HK_PERMIT)
		return;
	if (lk->state == LK_ACQUIRING)
		lk->noticed = 1;
	retry_disarm(lk);
}

void ltc_lost(struct hold *h)
{
	struct lkey *lk = h->lk;
	struct lt_client *s = h->holder;
	char token[TOKEN_LEN + 1];
	enum rl_hold rh = rl_hold_of(h->kind);
	uint32_t permit = h->permit;

	if (!s)
		return;
	/* A detached session's hold stays listed in its record: its RESUME,
	 * here or on another lockd, reports it LOST from there (1.2). */
	struct rl_rec rec = rec_of(s->ctx ? s : NULL, h->kind, 0);
	log_warn("session %llu (%s): lock %s (fence %llu) lost: %s", (unsigned long long)s->id,
	         s->peer, lk->key, (unsigned long long)h->fence,
	         h->state == HS_TTL ? "TTL lapsed" : "lease could not be renewed on a majority");
	stats.lost++;
	ltc_line(s, "LOST %s %llu", lk->key, (unsigned long long)h->fence);
	memcpy(token, h->token, sizeof(token));
	int lock = h->kind == HK_LOCK;
	uint32_t delay = h->delay_ms;
	hold_end(h);
	lk->handoffs = 0;
	/* It may still sit on some masters: clear it before the next try (a
	 * leader's with its value). Not a hold with a lock-delay (1.4): it
	 * lapsed, and its delay, on the masters, must hold whoever asks (a
	 * leader is forgotten here all the same). */
	int led = lock && el_hooks.releasing &&
	          el_hooks.releasing(s, lk->key, lk->node.klen, token, delay ? 2 : 1);
	if (!led && !delay)
		rl_release(lk->key, lk->node.klen, rh, permit, token, &rec, 0, NULL, NULL);
	freed_here(lk);
	kick(lk);
	ltc_maybe_free(lk);
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
		ltc_reply(s, "OK 0");
	} else {
		stats.quorum_failures++;
		ltc_reply(s, "%s", MSG_RELEASE_UNCONFIRMED);
	}
	/* The verdict may come after the grant's: then nothing else frees it. */
	ltc_maybe_free(lk);
}

/* A plain release's verdict, for the UNLOCK that asked. */
static void released(struct rl_call *c, void *owner)
{
	struct lt_client *s = owner;
	s->call = NULL;
	if (rl_result_of(c) == RL_OK) {
		ltc_reply(s, "OK 0");
	} else {
		stats.quorum_failures++;
		ltc_reply(s, "%s", MSG_RELEASE_UNCONFIRMED);
	}
}

static void schedule_retry(struct lkey *lk, int64_t ms)
{
	if (!lk->retry)
		lk->retry = evtimer_new(base, retry_cb, lk);
	lk->retry_armed = 1;
	rn_timer_at(lk->retry, now_us() + ms * 1000);
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
			hold_start(lk, w, c);
			lk->was_handoff = 0;
			kick(lk); /* the next shared waiter, or permit */
			ltc_maybe_free(lk);
			return;
		}
		rl_undo(c); /* the waiter left while we asked: give it back */
	} else if (w && &w->link != ilist_first(&lk->waiters)) {
		/* A handoff to a permit waiter behind the head failed: it
		 * waits on, for its turn or another handoff. */
	} else if (w) {
		int quorum = g->result == RL_QUORUM;
		int64_t pttl = g->pttl_ms;
		if (g->delayed && !quorum && w->part) {
			ltc_part_ops.delayed(w); /* a LOCKALL counts once, whatever its keys */
		} else if (g->delayed && !quorum && !w->delay_counted) {
			w->delay_counted = 1; /* a request counts once, however often it tries */
			stats.delayed_grants_refused++;
		}
		w->xraised |= g->xwaiting;
		if (w->kind == HK_PERMIT && !quorum) {
			/* Busy on the masters: the next permit free here, if any. */
			if (pttl >= 0 && (w->round_pttl < 0 || pttl < w->round_pttl))
				w->round_pttl = pttl;
			if (cf_free_permit(lk, w->npermits, lk->acq_permit + 1) != NO_PERMIT) {
				w->next_permit = lk->acq_permit + 1;
				lk->was_handoff = 0;
				kick(lk);
				ltc_maybe_free(lk);
				return;
			}
			pttl = w->round_pttl;
		}
		w->next_permit = 0;
		if (w->mode == WM_TRY) {
			stats.busy += !quorum;
			waiter_fail(w, quorum ? MSG_NO_QUORUM : "BUSY");
		} else if (w->mode == WM_ONCE) {
			stats.timeouts += !quorum && !w->part; /* a LOCKALL counts its own */
			waiter_fail(w, quorum ? MSG_NO_QUORUM : "TIMEOUT");
		} else {
			/* Held elsewhere: sleep until a release notice, or
			 * until its lease can have run out. No quorum: back
			 * off with jitter. */
			w->quorum_failed = quorum;
			if (w->c->eof)
				ops->wake(w->c); /* its peer left: cancel */
			int64_t ms = quorum        ? 50 + random() % 100
			             : lk->noticed ? 0 /* released meanwhile: try again now */
			                           : (pttl > 0 ? pttl + 5 : 10);
			schedule_retry(lk, ms);
		}
	}
	lk->was_handoff = 0;
	kick(lk);
	ltc_maybe_free(lk);
}

/* Let the head waiter ask the masters, if nothing is in flight and
 * nothing held here is in its way. */
static void kick(struct lkey *lk)
{
	struct ilink *l;
	uint32_t permit = 0;

	if (lk->state != LK_IDLE || lk->retry_armed || shutting_down)
		return;
	if (!(l = ilist_first(&lk->waiters)))
		return;
	struct waiter *w = ilist_entry(l, struct waiter, link);
	if (!cf_can_ask(lk, w)) {
		if (w->mode == WM_WAIT)
			return; /* a release here wakes it */
		/* A TRYLOCK held back while an adoption was on its way (see
		 * rl_adopting) meets the hold it brought: answered as it would
		 * have been on arrival. */
		stats.busy += w->mode == WM_TRY;
		stats.timeouts += w->mode == WM_ONCE && !w->part;
		waiter_fail(w, w->mode == WM_TRY ? "BUSY" : "TIMEOUT");
		kick(lk);
		return;
	}
	if (w->kind == HK_PERMIT) {
		permit = cf_free_permit(lk, w->npermits, w->next_permit);
		if (permit == NO_PERMIT)
			permit = cf_free_permit(lk, w->npermits, w->next_permit = 0);
		if (w->next_permit == 0) { /* a new round */
			w->round_pttl = -1;
			lk->noticed = 0;
		}
	} else {
		lk->noticed = 0;
	}
	if (rl_adopting()) { /* see rl_adopting: ask a moment later */
		schedule_retry(lk, 2);
		return;
	}
	rl_token_new(lk->acq_token);
	rl_token_set_permits(lk->acq_token, w->kind == HK_PERMIT ? w->npermits : 0);
	lk->state = LK_ACQUIRING;
	lk->acq_for = w;
	lk->acq_kind = w->kind;
	lk->acq_permit = permit;
	lk->was_handoff = 0;
	struct rl_rec rec = rec_of(w->c, w->kind, w->has_ttl);
	lk->call =
	    rl_acquire(lk->key, lk->node.klen, rl_hold_of(w->kind), permit, lk->acq_token,
	               lease_for(w), w->delay_ms, NULL, wait_of(w), &rec, acquired, NULL, lk);
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
	ltc_maybe_free(lk);
}

void ltc_kick(struct lkey *lk)
{
	kick(lk);
}

void ltc_waiter_leave(struct waiter *w)
{
	struct lkey *lk = w->lk;
	waiter_leave(w);
	if (lk && lk->waiters.len == 0)
		retry_disarm(lk);
}

void lt_notice(const char *key, size_t klen)
{
	struct lkey *lk = ltc_find(key, klen);
	if (lk && lk->state == LK_ACQUIRING)
		lk->noticed = 1; /* the answer may predate the release */
	if (!lk || !lk->retry_armed)
		return;
	retry_disarm(lk);
	kick(lk);
	ltc_maybe_free(lk);
}

/* Notices may have been missed (a master's subscriber was lost and has
 * subscribed again): every key whose head waiter sleeps on its retry asks
 * again now, once, and an acquire in flight goes again after its answer,
 * as after a notice. The retries fire from the loop: nothing here changes
 * the table while it is walked. */
void lt_notice_all(void)
{
	int64_t now = now_us();
	for (size_t i = 0; i < table.nslots; i++)
		for (struct kt_node *k = table.slots[i]; k; k = k->next) {
			struct lkey *lk = ilist_entry(k, struct lkey, node);
			if (lk->state == LK_ACQUIRING)
				lk->noticed = 1;
			else if (lk->retry_armed)
				rn_timer_at(lk->retry, now);
		}
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
	struct rl_rec rec = rec_of(h->holder, kind, 0);

	memcpy(old, h->token, sizeof(old));
	struct lt_client *holder = h->holder;
	hold_end(h);
	if (kind == HK_LOCK && !rs && el_hooks.releasing &&
	    el_hooks.releasing(holder, lk->key, lk->node.klen, old, 0)) {
		freed_here(lk); /* a leader's: released with its value */
		kick(lk);
		ltc_maybe_free(lk);
		return;
	}
	/* Hand over directly, unless a waiter on another lockd has asked and
	 * this key went from hand to hand here handoff_limit times already. */
	if (!lk->remote_waiters)
		lk->handoffs = 0;
	/* A resumable session's hold is released plainly: the swap of a
	 * handoff would leave it in its session's record (1.2). */
	if (kind != HK_SHARED && lk->state == LK_IDLE && !rec.sid && !rl_adopting() &&
	    lk->handoffs < (uint32_t)cfg->handoff_limit && !shutting_down)
		w = cf_handoff_to(lk, permit);
	if (w) {
		if (&w->link == ilist_first(&lk->waiters))
			retry_disarm(lk);
		rl_token_new(lk->acq_token);
		rl_token_set_permits(lk->acq_token, w->kind == HK_PERMIT ? w->npermits : 0);
		lk->state = LK_ACQUIRING;
		lk->acq_for = w;
		lk->acq_kind = w->kind;
		lk->acq_permit = permit;
		lk->was_handoff = 1;
		lk->handoff_from_us = now_us();
		lk->rel_for = rs;
		if (rs)
			rs->verdict_lk = lk;
		struct rl_rec wrec = rec_of(w->c, w->kind, w->has_ttl);
		lk->call =
		    rl_acquire(lk->key, lk->node.klen, RH_LOCK, permit, lk->acq_token, lease_for(w),
		               w->delay_ms, old, wait_of(w), &wrec, acquired, handoff_released, lk);
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
		rn_release(lk->key, lk->node.klen, rl_hold_of(kind), permit, old, &rec);
	} else {
		struct rl_call *c = rl_release(lk->key, lk->node.klen, rl_hold_of(kind), permit,
		                               old, &rec, flag_ms, rs ? released : NULL, rs);
		if (rs) {
			if (c)
				rs->call = c;
			else
				ltc_reply(rs, "%s", MSG_OOM);
		}
	}
	freed_here(lk);
	kick(lk);
	ltc_maybe_free(lk);
}

void ltc_release(struct hold *h)
{
	release_hold(h, NULL);
}

/* --- commands --- */

static struct hold *held_by(struct lt_client *s, const char *key, size_t klen)
{
	struct lkey *lk = ltc_find(key, klen);
	return lk ? ltc_hold_of(lk, s) : NULL;
}

void lt_lock(struct lt_client *s, const struct request *r)
{
	struct lkey *lk = ltc_find(r->key, r->klen);
	struct waiter *w = &s->w;
	int try = r->cmd == CMD_TRYLOCK || (r->has_wait && r->wait_ms == 0);
	enum hold_kind kind = r->shared ? HK_SHARED : r->permits ? HK_PERMIT : HK_LOCK;
	struct hold *h = lk ? ltc_hold_of(lk, s) : NULL;

	if (h && r->cmd == CMD_CAMPAIGN) { /* elect.c answers a holder's CAMPAIGN itself */
		ltc_reply(s, "ERR ARG this session holds %s", lk->key);
		return;
	}
	if (h) {
		enum reentry e = cf_reentry(h->kind, h->permit, kind, r->permits);
		if (e == RE_UPGRADE) /* two readers upgrading would wait for each other */
			ltc_reply(s, "ERR ARG cannot upgrade a shared hold");
		else if (e == RE_OTHER)
			ltc_reply(s, "ERR ARG holds permit %u of %s", h->permit, lk->key);
		if (e != RE_OK)
			return;
		if (s->sid) { /* its count is in its record too (1.2) */
			rn_count(s, h, 1);
			return;
		}
		h->holds++; /* reentrant: WAIT and TTL are ignored, the kind kept */
		ltc_reply(s, "OK %llu", (unsigned long long)h->fence);
		return;
	}
	if (kind == HK_SHARED && r->has_delay && r->delay_ms > 0) {
		/* A shared member carries no value to say a delay in (1.4):
		 * refused rather than ignored. locks.lost_delay_ms skips them. */
		ltc_reply(s, "ERR ARG DELAY is not for shared holds");
		return;
	}
	if (r->has_ttl && quorum_validity_us(r->ttl_ms, 0, cfg->drift_factor) <= 0) {
		/* No grant could ever be valid: say so rather than QUORUM. */
		ltc_reply(s, "ERR ARG TTL is shorter than the clock drift margin (2 ms + "
		             "locks.drift_factor)");
		return;
	}
	if (s->nlocks >= (uint64_t)cfg->max_locks_per_session) {
		ltc_reply(s, "ERR LIMIT this session holds limits.max_locks_per_session locks");
		return;
	}
	w->kind = kind;
	w->npermits = kind == HK_PERMIT ? r->permits : 1;
	if (try && lk && (lk->state != LK_IDLE || lk->waiters.len || !cf_can_ask(lk, w))) {
		/* Held here, or others queue for it: never jump the queue. */
		if (r->cmd == CMD_TRYLOCK) {
			stats.busy++;
			ltc_reply(s, "BUSY");
		} else {
			stats.timeouts++;
			ltc_reply(s, "TIMEOUT");
		}
		return;
	}
	if (!try && cfg->max_waiters && stats.sessions_waiting >= (uint64_t)cfg->max_waiters) {
		ltc_reply(s, "ERR LIMIT too many sessions wait (limits.max_waiters)");
		return;
	}
	if (!try && cfg->max_waiters_per_key && lk &&
	    lk->waiters.len >= (size_t)cfg->max_waiters_per_key) {
		ltc_reply(
		    s,
		    "ERR LIMIT too many sessions wait for this key (limits.max_waiters_per_key)");
		return;
	}
	if (!lk && !(lk = ltc_get(r->key, r->klen))) {
		ltc_reply(s, "%s", MSG_OOM);
		return;
	}
	w->lk = lk;
	w->c = s;
	w->mode = r->cmd == CMD_TRYLOCK ? WM_TRY : try ? WM_ONCE : WM_WAIT;
	w->next_permit = 0;
	w->round_pttl = -1;
	w->xraised = 0;
	w->campaign = r->cmd == CMD_CAMPAIGN;
	w->has_ttl = r->has_ttl;
	w->ttl_ms = r->ttl_ms;
	w->delay_ms = r->has_delay ? r->delay_ms : (uint32_t)cfg->lost_delay_ms;
	w->delay_counted = 0;
	w->quorum_failed = 0;
	w->since_us = s->req_us;
	ilist_push(&lk->waiters, &w->link);
	if (w->mode == WM_WAIT) {
		stats.sessions_waiting++;
		if (r->has_wait) {
			if (!w->timer)
				w->timer = evtimer_new(base, wait_timeout_cb, w);
			w->deadline_us = s->req_us + (int64_t)r->wait_ms * 1000;
			rn_timer_at(w->timer, w->deadline_us);
		}
	}
	kick(lk);
	ltc_maybe_free(lk);
}

int lt_waiting(const struct lt_client *s)
{
	const struct waiter *w = &s->w;
	const struct lkey *lk = w->lk;
	if (s->la && ltc_part_ops.waiting)
		return ltc_part_ops.waiting(s);
	return lk && w->mode == WM_WAIT && (lk->acq_for != w || lk->retry_armed);
}

void lt_unlock(struct lt_client *s, const char *key, size_t klen)
{
	struct hold *h = held_by(s, key, klen);
	if (!h) {
		ltc_reply(s, "%s", MSG_NOT_HELD);
		return;
	}
	if (h->holds > 1 && s->sid) {
		rn_count(s, h, -1);
		return;
	}
	if (--h->holds > 0) {
		ltc_reply(s, "OK %u", h->holds);
		return;
	}
	release_hold(h, s);
}

void lt_extend(struct lt_client *s, const char *key, size_t klen, uint32_t ms)
{
	struct hold *h = held_by(s, key, klen);
	if (h)
		rn_extend(s, h, ms);
	else
		ltc_reply(s, "%s", MSG_NOT_HELD);
}

void lt_client_init(struct lt_client *c)
{
	ilist_init(&c->locks);
	c->w.c = c;
}

void lt_client_detach(struct lt_client *s)
{
	if (s->la && ltc_part_ops.cancel)
		ltc_part_ops.cancel(s, 1); /* its LOCKALL ends unanswered, giving back its keys */
	if (s->w.lk) {
		struct lkey *lk = s->w.lk;
		waiter_leave(&s->w);
		if (lk->waiters.len == 0)
			retry_disarm(lk);
		kick(lk);
		ltc_maybe_free(lk);
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
}

void lt_client_end(struct lt_client *s)
{
	struct ilink *l;
	lt_client_detach(s);
	while ((l = ilist_first(&s->locks)))
		release_hold(ilist_entry(l, struct hold, hold_link), NULL);
}

void lt_client_forget(struct lt_client *s)
{
	struct ilink *l;
	if (s->la && ltc_part_ops.cancel)
		ltc_part_ops.cancel(s, 0); /* its keys are forgotten below, not released */
	lt_client_detach(s);
	while ((l = ilist_first(&s->locks))) {
		struct hold *h = ilist_entry(l, struct hold, hold_link);
		struct lkey *lk = h->lk;
		hold_end(h);
		freed_here(lk);
		kick(lk);
		ltc_maybe_free(lk);
	}
}

/* --- leader election (1.3) --- */

void lt_set_elect_hooks(const struct lt_elect_hooks *h)
{
	el_hooks = *h;
}

void lt_drop(struct lt_client *c, const char *key, size_t klen)
{
	struct hold *h = held_by(c, key, klen);
	if (!h)
		return;
	struct lkey *lk = h->lk;
	hold_end(h);
	freed_here(lk);
	kick(lk);
	ltc_maybe_free(lk);
}

struct hold *ltc_hold_new(void)
{
	struct hold *h = slab_alloc(&hold_slab);
	if (h)
		memset(h, 0, sizeof(*h));
	return h;
}

/* --- setup --- */

/* A resumable session's hold reached its deadline late (rn_ops.late):
 * has the session moved to another lockd meanwhile? (lt_ops.verify) */
static void hold_late(struct hold *h)
{
	if (ops->verify)
		ops->verify(h->holder);
}

static struct rn_ops renew_ops = {ltc_lost, hold_unref, NULL, hold_late};

int locktab_init(struct event_base *b, const struct config *c, const struct lt_ops *o)
{
	base = b;
	cfg = c;
	ops = o;
	renew_ops.reply = o->reply;
	shutting_down = 0;
	if (keytab_init(&table, 1024))
		return -1;
	slab_init(&hold_slab, sizeof(struct hold));
	slab_init(&lk_small, LK_SLAB_SMALL);
	slab_init(&lk_big, LK_SLAB_BIG);
	return rn_init(base, cfg, &renew_ops);
}

void locktab_set_cfg(const struct config *c)
{
	cfg = c;
	rn_set_cfg(c); /* a new lease applies to the next renewal of every hold: now */
}

int locktab_busy(void)
{
	return rn_busy();
}

uint64_t locktab_keys(void)
{
	return table.count;
}

void lt_shutdown_all(void)
{
	/* Collect first: answering and releasing changes the table. */
	size_t n = 0, cap = table.count;
	struct lkey **all = malloc(sizeof(*all) * (cap ? cap : 1));
	if (!all)
		return;
	for (size_t i = 0; i < table.nslots; i++)
		for (struct kt_node *k = table.slots[i]; k; k = k->next)
			all[n++] = ilist_entry(k, struct lkey, node);
	shutting_down = 1;
	/* Holders first: every hold a session had is LOST to it (it is
	 * released below), then waits are answered. */
	for (size_t i = 0; i < n; i++) {
		struct lkey *lk = all[i];
		for (struct ilink *l = lk->holds.head.next; l != &lk->holds.head; l = l->next) {
			struct hold *h = ilist_entry(l, struct hold, key_link);
			if (h->holder->sid)
				continue; /* resumable: left on the masters */
			stats.lost++;
			ltc_line(h->holder, "LOST %s %llu", lk->key, (unsigned long long)h->fence);
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct lkey *lk = all[i];
		struct ilink *l;
		retry_disarm(lk);
		while ((l = ilist_first(&lk->waiters))) {
			struct waiter *w = ilist_entry(l, struct waiter, link);
			waiter_fail(w, "ERR SHUTDOWN lockd is stopping"); /* a LOCKALL's too */
		}
		/* Resumable sessions' holds stay on the masters, unrenewed, for
		 * a resume (here once restarted, or on another lockd). */
		for (struct ilink *k = lk->holds.head.next, *nx; k != &lk->holds.head; k = nx) {
			struct hold *h = ilist_entry(k, struct hold, key_link);
			nx = k->next;
			if (h->holder->sid)
				hold_end(h);
		}
		/* The last release frees the entry: nothing of it is used after. */
		while (lk->holds.len > 1)
			release_hold(ilist_entry(ilist_first(&lk->holds), struct hold, key_link),
			             NULL);
		if (lk->holds.len)
			release_hold(ilist_entry(ilist_first(&lk->holds), struct hold, key_link),
			             NULL);
		else
			ltc_maybe_free(lk);
	}
	free(all);
	rn_release_all(); /* all at once: lockd is leaving */
}

void locktab_shutdown(void)
{
	rn_shutdown();
	for (size_t i = 0; i < table.nslots; i++) {
		struct kt_node *k = table.slots[i], *nx;
		for (; k; k = nx) {
			struct lkey *lk = ilist_entry(k, struct lkey, node);
			struct ilink *l;
			nx = k->next;
			while ((l = ilist_pop(&lk->holds)) || (l = ilist_pop(&lk->ended))) {
				struct hold *h = ilist_entry(l, struct hold, key_link);
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
}
