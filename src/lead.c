/* lead: the leaders of this lockd (protocol 1.3), below elect.c.
 *
 * One struct lead per name at most (the lock is exclusive), by name,
 * keeping the leader's value and its version. elect.c makes one at a
 * CAMPAIGN's grant (LD_PUBLISHING, lead_new) and writes its values; a
 * leader adopted with its session from another lockd (1.2) is made here
 * from a majority read (lead_adopt) and first reserves an epoch for its
 * values (LD_RESERVING), above every one reserved before; until then it
 * writes nothing. Every lease/3 the write-back forgets leaders whose lock
 * left this lockd unseen and, for a lease and a third after a master
 * connected again or a renewal found a leader's lock without its value
 * on a master, writes their values back where a master lost them. Apart from
 * elect.c because none of this needs the commands: elect.c calls it, and
 * hears of a settled reservation through the lead_settled_fn given to
 * lead_init. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cfg.h"
#include "lead.h"
#include "ltops.h"
#include "proto.h"
#include "redlock.h"
#include "renew.h"
#include "stats.h"

#define RESERVE_TRIES 4 /* reservations in a row, each above the epoch the last one met */

static const struct config *cfg;
static const struct lt_ops *ops;
static lead_settled_fn *settled;

static struct keytab leads;
static struct ilist lead_list;
static struct event *wb_ev; /* the write-back of leaders' values */
static int stopping;

static int64_t third(void)
{
	return cfg->lease_ms / 3 > 0 ? cfg->lease_ms / 3 : 1;
}

/* The record expires with its lock: written with the lease (or the
 * lock's own expiry, the later), refreshed by the leader's renewals (its
 * hold is marked lt_set_lead: SCR_RENEW's kind 'l'), so a record that a
 * lockd leaves behind (a shutdown that keeps resumable sessions, a crash)
 * lapses with the lock, at no cost beyond the renewals that run anyway. */
int64_t lead_record_expiry(void)
{
	return cfg->lease_ms;
}

/* Until when the write-back runs: a master connected again may have
 * restarted empty (its lock comes back with the next renewal). */
static int64_t wb_until_us;

struct lead *lead_find(const char *key, size_t klen)
{
	struct kt_node *n = keytab_find(&leads, key, klen);
	return n ? ilist_entry(n, struct lead, node) : NULL;
}

void lead_free(struct lead *ld)
{
	if (ld->call)
		rl_detach(ld->call, ld);
	keytab_remove(&leads, &ld->node);
	ilist_remove(&lead_list, &ld->link);
	stats.leaders -= ld->state == LD_LEADING;
	free(ld->value);
	free(ld);
}

void lead_forget(struct lead *ld)
{
	if (ld->reply_to)
		lt_ops_reply(ops, ld->reply_to, "%s", MSG_NO_QUORUM);
	lead_free(ld);
}

struct lead *lead_by(struct lt_client *c, const char *key, size_t klen)
{
	struct lead *ld = lead_find(key, klen);
	uint64_t fence;
	char token[TOKEN_LEN + 1];
	if (!ld || lt_lock_holder(key, klen, &fence, token) != c || strcmp(token, ld->token) != 0)
		return NULL;
	return ld;
}

struct lead *lead_new(const char *key, size_t klen, const char *token, enum lead_state state)
{
	struct lead *ld = calloc(1, sizeof(*ld) + klen + 1);
	if (!ld)
		return NULL;
	memcpy(ld->key, key, klen);
	ld->node.key = ld->key;
	ld->node.klen = klen;
	keytab_insert(&leads, &ld->node);
	ilist_push(&lead_list, &ld->link);
	ld->state = state;
	memcpy(ld->token, token, sizeof(ld->token));
	return ld;
}

/* --- leaders adopted with their session (1.2) --- */

static void reserve_done(struct rl_call *call, void *owner);

int lead_reserve(struct lead *ld)
{
	ld->call = rl_el_epoch(ld->key, ld->node.klen, ld->token, ld->epoch, reserve_done, ld);
	return ld->call != NULL;
}

/* A majority reserved ld's epoch: it leads, and writes from now on. Else
 * a master had it reserved as high already (another lockd's adoption, or
 * an earlier try of ours whose answer came too late): once more, above
 * that; or no majority answered: a PROCLAIM gets ERR QUORUM, and the next
 * one (or the write-back tick) tries again. */
static void reserve_done(struct rl_call *call, void *owner)
{
	struct lead *ld = owner;
	uint64_t fence, top = rl_el_reserved(call);
	char token[TOKEN_LEN + 1];
	ld->call = NULL;
	if (rl_result_of(call) == RL_OK) {
		ld->state = LD_LEADING;
		ld->tries = 0;
		stats.leaders++;
	} else if (top >= ld->epoch && ++ld->tries < RESERVE_TRIES) {
		ld->epoch = top + 1;
		if (lead_reserve(ld))
			return;
	} else {
		if (top >= ld->epoch)
			ld->epoch = top + 1;
		ld->tries = 0;
		stats.quorum_failures++;
	}
	struct lt_client *c = lt_lock_holder(ld->key, ld->node.klen, &fence, token);
	if (c && strcmp(token, ld->token) == 0)
		settled(c, ld->key, ld->node.klen);
}

/* A majority read v of key, whose lock c holds with no leader known here
 * (its session was resumed from another lockd): when a majority holds
 * the lock with the leader's record and c holds the lock (on a majority,
 * for its validity), c leads, with the record's fence, value and version.
 * Its values here take an epoch above every one reserved before (the
 * first lockd's, and any adoption's since), reserved first: until then
 * it writes nothing. */
struct lead *lead_adopt(struct lt_client *c, const char *key, size_t klen,
                        const struct rl_leader *v)
{
	uint64_t fence;
	char token[TOKEN_LEN + 1];
	struct lead *ld;
	char *value;
	if (!v->ok || v->kind != RLE_LEADER || lt_lock_holder(key, klen, &fence, token) != c ||
	    lead_find(key, klen) || !(value = bytes_dup(v->value, v->vlen)))
		return NULL;
	if (!(ld = lead_new(key, klen, token, LD_RESERVING))) {
		free(value);
		return NULL;
	}
	ld->value = value;
	ld->fence = v->fence; /* the leader's, as published */
	ld->epoch = (v->reserved > v->epoch ? v->reserved : v->epoch) + 1;
	ld->version = v->version;
	ld->vlen = v->vlen;
	lt_set_lead(c, key, klen);
	lead_reserve(ld); /* else the write-back tick tries */
	return ld;
}

/* Every lease/3: forget leaders whose lock left this lockd unseen (their
 * session was resumed elsewhere). For a lease and a third after a master
 * connected again, or after a renewal found a leader's lock on a master
 * without its value (rn_on_lead_rewritten), also write each leader's
 * value back where it is missing: a master that restarted empty gets its
 * lock back from the renewals, and its value from here once the lock is
 * there. Nothing is sent otherwise: a value is lost only with a master's
 * data. */
static void wb_cb(evutil_socket_t fd, short what, void *arg)
{
	for (struct ilink *l = lead_list.head.next, *nx; l != &lead_list.head; l = nx) {
		struct lead *ld = ilist_entry(l, struct lead, link);
		uint64_t fence;
		char token[TOKEN_LEN + 1];
		nx = l->next;
		if (!lt_lock_holder(ld->key, ld->node.klen, &fence, token) ||
		    strcmp(token, ld->token) != 0) {
			if (ld->reply_to) /* its CAMPAIGN or PROCLAIM gets its one reply */
				lt_ops_reply(ops, ld->reply_to, "%s", MSG_NO_QUORUM);
			lead_free(ld);
			continue;
		}
		if (ld->state == LD_RESERVING && !ld->call)
			lead_reserve(ld); /* its last try found no majority */
		else if (ld->state == LD_LEADING && !ld->call && now_us() < wb_until_us)
			rl_el_put(ld->key, ld->node.klen, ld->token, ld->fence, ld->epoch,
			          ld->version, ld->value, ld->vlen, lead_record_expiry(), NULL,
			          NULL);
	}
	if (!stopping)
		rn_timer_at(wb_ev, now_us() + third() * 1000);
}

void lead_resync(void)
{
	int64_t until = now_us() + (cfg->lease_ms + third()) * 1000;
	if (until > wb_until_us)
		wb_until_us = until;
}

/* --- setup --- */

int lead_init(struct event_base *base, const struct config *c, const struct lt_ops *o,
              lead_settled_fn *s)
{
	cfg = c;
	ops = o;
	settled = s;
	stopping = 0;
	ilist_init(&lead_list);
	if (keytab_init(&leads, 64) || !(wb_ev = evtimer_new(base, wb_cb, NULL)))
		return -1;
	rn_timer_at(wb_ev, now_us() + third() * 1000);
	rn_on_lead_rewritten(lead_resync);
	return 0;
}

void lead_set_cfg(const struct config *c)
{
	cfg = c;
}

void lead_shutdown(void)
{
	struct ilink *l;
	stopping = 1;
	rn_on_lead_rewritten(NULL);
	while ((l = ilist_first(&lead_list)))
		lead_free(ilist_entry(l, struct lead, link));
	if (wb_ev) {
		event_free(wb_ev);
		wb_ev = NULL;
	}
	keytab_destroy(&leads);
}
