/* locktab_part: the table's side of LOCKALL (1.4). A LOCKALL (lockall.c,
 * above the table) asks for each of its keys with a waiter of its own
 * (part set): it queues in the key's one FIFO like any LOCK, so the
 * queues' order holds for every kind of request, and its verdict goes to
 * lt_part_ops rather than to the client. On the table of locktab.c
 * (locktab_core.h), which calls nothing here. */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>

#include "conflict.h"
#include "locktab.h"
#include "locktab_core.h"
#include "locktab_int.h"
#include "redlock.h"
#include "stats.h"

void lt_set_part_ops(const struct lt_part_ops *o)
{
	ltc_part_ops = *o;
}

static struct hold *hold_of(struct lt_client *c, const char *key, size_t klen)
{
	struct lkey *lk = ltc_find(key, klen);
	return lk ? ltc_hold_of(lk, c) : NULL;
}

int lt_part_held(struct lt_client *c, const char *key, size_t klen, uint64_t *fence,
                 uint32_t *permit)
{
	struct hold *h = hold_of(c, key, klen);
	if (!h)
		return -1;
	*fence = h->fence;
	*permit = h->permit;
	return (int)h->kind;
}

int lt_part_start(struct waiter *w, const struct request *r, enum wait_mode mode)
{
	struct lkey *lk = ltc_find(r->key, r->klen);

	w->kind = HK_LOCK;
	w->npermits = 1;
	/* One attempt never jumps the queue, as LOCK ... WAIT 0. */
	if (mode != WM_WAIT && lk &&
	    (lk->state != LK_IDLE || lk->waiters.len || !cf_can_ask(lk, w)))
		return 1;
	if (!lk && !(lk = ltc_get(r->key, r->klen)))
		return -1;
	w->lk = lk;
	w->mode = mode;
	w->next_permit = 0;
	w->round_pttl = -1;
	w->xraised = 0;
	w->campaign = 0;
	w->part = 1;
	w->quorum_failed = 0;
	w->has_ttl = r->has_ttl; /* what the request asks of the grant, as lt_lock */
	w->ttl_ms = r->ttl_ms;
	w->delay_ms = r->has_delay ? r->delay_ms : 0; /* lockall.c gives the default */
	w->delay_counted = 0;
	w->since_us = now_us();
	ilist_push(&lk->waiters, &w->link);
	if (mode == WM_WAIT)
		stats.sessions_waiting++;
	ltc_kick(lk);
	ltc_maybe_free(lk);
	return 0;
}

size_t lt_part_waiters(const char *key, size_t klen)
{
	struct lkey *lk = ltc_find(key, klen);
	return lk ? lk->waiters.len : 0;
}

void lt_part_cancel(struct waiter *w)
{
	struct lkey *lk = w->lk;
	if (!lk)
		return;
	ltc_waiter_leave(w);
	ltc_kick(lk);
	ltc_maybe_free(lk);
}

void lt_part_release(struct lt_client *c, const char *key, size_t klen)
{
	struct hold *h = hold_of(c, key, klen);
	if (h)
		ltc_release(h);
}

void lt_part_reenter(struct lt_client *c, const char *key, size_t klen, int delta)
{
	struct hold *h = hold_of(c, key, klen);
	if (h)
		h->holds += (uint32_t)delta;
}

struct rl_call *lt_part_count(struct lt_client *c, const char *const *keys, const size_t *klens,
                              int n, void (*done)(struct rl_call *, void *), void *owner)
{
	struct rl_sess_hold *hs = calloc((size_t)n, sizeof(*hs));
	int k = 0;
	if (!hs)
		return NULL;
	for (int i = 0; i < n; i++) {
		struct hold *h = hold_of(c, keys[i], klens[i]);
		if (h)
			hs[k++] = (struct rl_sess_hold){
			    h->lk->key,   h->lk->node.klen,  hold_rec_kind(h->kind),
			    h->permit,    h->token,          h->fence,
			    h->holds + 1, h->state == HS_TTL};
	}
	/* As rn_count: counted here at once, so that a write of the record
	 * meanwhile carries the new count; taken back if it fails. */
	struct rl_call *call = rl_sess_put(c->sid, NULL, -1, 0, hs, k, done, owner);
	free(hs);
	if (call)
		for (int i = 0; i < n; i++)
			lt_part_reenter(c, keys[i], klens[i], 1);
	return call;
}
