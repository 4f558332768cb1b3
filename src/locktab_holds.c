/* locktab_holds: what locktab answers about the holds it keeps, and the
 * holds it takes over: STATUS and HELD, an election's holder (1.3), a
 * hold by its token (WHO, 1.4), a session's holds as its record lists
 * them, and a resumed session's holds (1.2). On the table of locktab.c (locktab_core.h), which
 * calls nothing here. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locktab.h"
#include "locktab_core.h"
#include "locktab_int.h"
#include "proto.h"
#include "redlock.h"
#include "renew.h"
#include "stats.h"

/* Sessions waiting here for the key (permits: for a permit or the key's lock). */
static size_t waiting_for(const char *key, size_t klen, int permits)
{
	struct lkey *lk = ltc_find(key, klen);
	size_t n = 0;
	if (!lk || !permits)
		return lk ? lk->waiters.len : 0;
	for (struct ilink *l = lk->waiters.head.next; l != &lk->waiters.head; l = l->next)
		n += ilist_entry(l, struct waiter, link)->kind != HK_SHARED;
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
		ltc_reply(s, "%s", MSG_NO_QUORUM);
	else if (v->npermits)
		ltc_reply(s, "PERMITS %u %u %zu", v->permits, v->npermits,
		          waiting_for(key, klen, 1));
	else if (v->held)
		ltc_reply(s, "HELD %lld %zu", (long long)v->ttl_ms, waiting_for(key, klen, 0));
	else if (v->holders > 0)
		ltc_reply(s, "SHARED %d %lld %zu", v->holders, (long long)v->shared_ttl_ms,
		          waiting_for(key, klen, 0));
	else
		ltc_reply(s, "FREE");
}

void lt_status(struct lt_client *s, const char *key, size_t klen, uint32_t permits)
{
	struct lkey *lk = ltc_find(key, klen);

	if (lk && lk->nlock && !permits) {
		/* Its lock is held here: our own lease says how long. */
		for (struct ilink *l = lk->holds.head.next; l != &lk->holds.head; l = l->next) {
			struct hold *h = ilist_entry(l, struct hold, key_link);
			if (h->kind == HK_SHARED || h->permit != 0)
				continue;
			int64_t left = (h->lease_end_us - now_us()) / 1000;
			ltc_reply(s, "HELD %lld %zu", (long long)(left > 0 ? left : 0),
			          lk->waiters.len);
			return;
		}
	}
	s->call = rl_status(key, klen, permits, status_done, s);
	if (!s->call)
		ltc_reply(s, "%s", MSG_OOM);
}

void lt_held(struct lt_client *s)
{
	int64_t now = now_us();
	for (struct ilink *l = s->locks.head.next; l != &s->locks.head; l = l->next) {
		struct hold *h = ilist_entry(l, struct hold, hold_link);
		long long left = (h->lease_end_us - now) / 1000;
		unsigned long long f = (unsigned long long)h->fence;
		if (left < 0)
			left = 0;
		if (h->kind == HK_SHARED)
			ltc_line(s, "KEY %s %llu %u %lld SHARED", h->lk->key, f, h->holds, left);
		else if (h->kind == HK_PERMIT)
			ltc_line(s, "KEY %s %llu %u %lld PERMIT %u", h->lk->key, f, h->holds, left,
			         h->permit);
		else
			ltc_line(s, "KEY %s %llu %u %lld", h->lk->key, f, h->holds, left);
	}
	ltc_reply(s, "END");
}

struct lt_client *lt_lock_holder(const char *key, size_t klen, uint64_t *fence, char *token)
{
	struct lkey *lk = ltc_find(key, klen);
	if (!lk || !lk->nlock)
		return NULL;
	for (struct ilink *l = lk->holds.head.next; l != &lk->holds.head; l = l->next) {
		struct hold *h = ilist_entry(l, struct hold, key_link);
		if (h->kind == HK_SHARED || h->permit != 0)
			continue;
		*fence = h->fence;
		memcpy(token, h->token, TOKEN_LEN + 1);
		return h->holder;
	}
	return NULL;
}

void lt_set_lead(struct lt_client *c, const char *key, size_t klen)
{
	struct lkey *lk = ltc_find(key, klen);
	struct hold *h = lk ? ltc_hold_of(lk, c) : NULL;
	if (h && h->kind == HK_LOCK && h->permit == 0)
		h->lead = 1;
}

int lt_holds(struct lt_client *c, const char *key, size_t klen)
{
	struct lkey *lk = ltc_find(key, klen);
	return lk && ltc_hold_of(lk, c) != NULL;
}

int lt_hold_by_token(const char *key, size_t klen, const char *token, struct lt_hold_view *out)
{
	struct lkey *lk = ltc_find(key, klen);
	if (!lk)
		return 0;
	for (struct ilink *l = lk->holds.head.next; l != &lk->holds.head; l = l->next) {
		const struct hold *h = ilist_entry(l, struct hold, key_link);
		if (memcmp(h->token, token, TOKEN_LEN) != 0)
			continue;
		out->holder = h->holder;
		out->fence = h->fence;
		out->since_us = h->since_us;
		return 1;
	}
	return 0;
}

/* --- sessions that outlive a connection (1.2) --- */

static char rec_kind(const struct hold *h)
{
	return hold_rec_kind(h->kind);
}

void lt_holds_of(const struct lt_client *s, struct rl_sess_hold *out, int n)
{
	int i = 0;
	for (struct ilink *l = s->locks.head.next; l != &s->locks.head && i < n; l = l->next) {
		const struct hold *h = ilist_entry(l, struct hold, hold_link);
		out[i].key = h->lk->key;
		out[i].klen = h->lk->node.klen;
		out[i].kind = rec_kind(h);
		out[i].permit = h->permit;
		out[i].token = h->token;
		out[i].fence = h->fence;
		out[i].holds = h->holds;
		out[i++].ttl = h->state == HS_TTL;
	}
}

void lt_client_move(struct lt_client *from, struct lt_client *to)
{
	struct ilink *l;
	while ((l = ilist_pop(&from->locks))) {
		struct hold *h = ilist_entry(l, struct hold, hold_link);
		h->holder = to;
		ilist_push(&to->locks, &h->hold_link);
	}
	to->nlocks += from->nlocks;
	from->nlocks = 0;
}

/* What the masters' records say of a hold, over whatever h said: its
 * token, fence, count and lease. A hold this lockd kept may be older than
 * the records (1.2, "The latest state": the session moved away, took the
 * key again there, and came back). */
static void take_adopted(struct hold *h, const struct rl_adopted *a)
{
	if (a->fence != h->fence)
		h->since_us = a->start_us; /* granted again elsewhere: adopted now */
	h->holds = a->holds ? a->holds : 1;
	h->fence = a->fence;
	h->delay_ms = a->delay_ms;
	memcpy(h->token, a->token, sizeof(h->token));
	if (h->state != HS_TTL) {
		h->lease_ms = a->lease_ms;
		h->lease_end_us = a->start_us + a->lease_ms * 1000;
		h->renewed_us = a->start_us;
	}
}

/* A hold the masters hold for the session, and this lockd did not. */
static void adopt(struct lt_client *s, const struct rl_adopted *a)
{
	struct lkey *lk = ltc_get(a->key, a->klen);
	struct hold *h = lk ? ltc_hold_new() : NULL;
	if (!h) {
		ltc_line(s, "LOST %.*s %llu", (int)a->klen, a->key, (unsigned long long)a->fence);
		if (lk)
			ltc_maybe_free(lk);
		return;
	}
	h->lk = lk;
	h->holder = s;
	h->kind = a->kind == 's' ? HK_SHARED : a->kind == 'p' ? HK_PERMIT : HK_LOCK;
	h->permit = a->kind == 's' ? 0 : a->permit;
	h->lease_ms = a->lease_ms;
	h->lease_end_us = a->start_us + a->lease_ms * 1000;
	h->since_us = a->start_us;
	take_adopted(h, a);
	rn_hold_state(h, a->ttl ? HS_TTL : HS_WATCHED);
	rn_deadline(h, a->validity_us);
}

static const struct rl_adopted *listed(const struct rl_adopted *a, int n, const struct hold *h)
{
	for (int i = 0; i < n; i++)
		if (a[i].klen == h->lk->node.klen && memcmp(a[i].key, h->lk->key, a[i].klen) == 0 &&
		    a[i].kind == rec_kind(h) && a[i].permit == h->permit)
			return &a[i];
	return NULL;
}

void lt_resume(struct lt_client *s, const struct rl_adopted *a, int n)
{
	/* Holds this lockd kept for the session (it was here before): the
	 * records are the truth; a local copy only ever shortens a deadline. */
	for (struct ilink *l = s->locks.head.next, *nx; l != &s->locks.head; l = nx) {
		struct hold *h = ilist_entry(l, struct hold, hold_link);
		const struct rl_adopted *e = listed(a, n, h);
		nx = l->next;
		if (!e || !e->ok) {
			ltc_lost(h);
			continue;
		}
		if ((h->state == HS_TTL) != (e->ttl != 0)) {
			/* taken again elsewhere, of the other sort: adopted below */
			ltc_hold_end(h);
			continue;
		}
		take_adopted(h, e);
		if (e->validity_us < h->dl.at)
			rn_deadline(h, e->validity_us);
	}
	for (int i = 0; i < n; i++) {
		struct lkey *lk = ltc_find(a[i].key, a[i].klen);
		if (lk && ltc_hold_of(lk, s))
			continue;
		if (a[i].ok) {
			adopt(s, &a[i]);
			continue;
		}
		/* Not held on a majority (or no fence on a majority of its
		   records: a LOST for each fence seen, the granted one among
		   them): lost; clear what the adoption wrote. */
		if (a[i].fence || !a[i].nseen)
			ltc_line(s, "LOST %.*s %llu", (int)a[i].klen, a[i].key,
			         (unsigned long long)a[i].fence);
		for (int k = 0; !a[i].fence && k < a[i].nseen; k++)
			ltc_line(s, "LOST %.*s %llu", (int)a[i].klen, a[i].key,
			         (unsigned long long)a[i].seen[k]);
		stats.lost++;
		struct rl_rec rec = {s->sid, a[i].kind, 0};
		rl_release(a[i].key, a[i].klen, a[i].kind == 's' ? RH_SHARED : RH_LOCK, a[i].permit,
		           a[i].token, &rec, 0, NULL, NULL);
	}
}
