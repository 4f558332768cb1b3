/* rlbatch: the calls of redlock over many keys (a renewal batch, the
 * releases of sessions that ended) and STATUS, on the call machinery of
 * redlock.c (redlock_int.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "quorum.h"
#include "redlock_int.h"
#include "stats.h"

/* A renewal's verdict per item: a majority of the masters that count
 * hold it for us, and the lease it wrote is still valid. */
static void renew_verdicts(struct rl_call *c)
{
	if (c->pending && !c->expired)
		return;
	int64_t until = quorum_valid_until(c->lease_ms, c->start_us, now_us(), rl_drift);
	for (int k = 0; k < c->u.batch.nitems; k++) {
		struct rl_renew_item *it = &c->u.batch.items[k];
		it->ok = quorum_reached(it->yes, c->maj) && until > 0;
		it->validity_us = it->ok ? until : 0;
	}
	rl_fire_done(c);
}

/* Batched releases: nobody counts them; done once all answered. */
static void released_all(struct rl_call *c)
{
	if (!c->pending || c->expired)
		rl_fire_done(c);
}

static void check_status(struct rl_call *c)
{
	struct status_part *sp = &c->u.status;
	int64_t pttl[CONFIG_MAX_MASTERS], card[CONFIG_MAX_MASTERS], zttl[CONFIG_MAX_MASTERS];
	struct quorum_status_in in = {0,    c->n, pttl, card, zttl, sp->v.npermits, sp->permit_yes,
	                              NULL, 0};

	if (c->pending && !c->expired)
		return;
	for (int i = 0; i < c->n; i++) {
		if (!c->counts[i] || c->st[i] != MR_YES)
			continue;
		pttl[in.n] = sp->pttl[i];
		card[in.n] = sp->zcard[i];
		zttl[in.n] = sp->zttl[i];
		in.n++;
	}
	if (sp->nmembers >= 0) {
		in.members = (const char **)sp->members;
		in.nmembers = sp->nmembers;
	}
	struct quorum_status q = quorum_status(&in, c->maj);
	sp->v.ok = q.ok;
	sp->v.held = q.held;
	sp->v.ttl_ms = q.ttl_ms;
	sp->v.holders = q.holders;
	sp->v.shared_ttl_ms = q.shared_ttl_ms;
	sp->v.permits = q.permits;
	rl_fire_done(c);
}

/* A resumable session's record key at argument a (or "" without one);
 * returns where the next bytes go. */
static char *put_record(struct rl_call *c, int a, char *p, const char *sid)
{
	if (!sid) {
		c->dargv[a] = "";
		c->dargvlen[a] = 0;
		return p;
	}
	c->dargv[a] = p;
	c->dargvlen[a] = rl_record_at(p, sid);
	return p + c->dargvlen[a] + 1;
}

static void renew_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	if (c->expired) { /* the verdict was given without this master */
		c->pending--;
		rl_check(c);
		return;
	}
	int i = m->idx;

	c->pending--;
	if (r && r->type == REDIS_REPLY_ARRAY && (int)r->elements == c->u.batch.nitems) {
		c->st[i] = MR_YES;
		for (int k = 0; k < c->u.batch.nitems; k++) {
			const redisReply *e = r->element[k];
			if (e->type != REDIS_REPLY_INTEGER || e->integer <= 0)
				continue;
			c->u.batch.items[k].yes += c->counts[i];
			c->u.batch.items[k].rewrote |= e->integer == 3; /* counting or not */
			c->u.batch.items[k].unrecorded |=
			    e->integer == 2 && c->u.batch.items[k].sid;
		}
	} else {
		if (r && r->type == REDIS_REPLY_ERROR)
			log_warn("master %s: renew: %s", m->name, r->str);
		c->st[i] = MR_FAIL;
	}
	rl_check(c);
}

struct rl_call *rl_renew(struct rl_renew_item *items, int n, int64_t lease_ms, rl_done_fn *done,
                         void *owner)
{
	struct rl_call *c = rl_call_new(RK_RENEW, 0);
	size_t total = 64;
	if (!c)
		return NULL;
	c->u.batch.items = items;
	c->u.batch.nitems = n;
	c->done = done;
	c->owner = owner;
	c->rel_fired = 1;
	c->lease_ms = lease_ms;
	c->check_fn = renew_verdicts;
	for (int k = 0; k < n; k++)
		total += 3 * (rl_prefix_len + items[k].klen + SFX_MAX) + 2 * TOKEN_LEN + 32;
	/* EVALSHA sha 3n lock... shared... record... lease token... kind... */
	if (rl_dyn_args(c, SCRIPT_ARGC(n, RNA_KEYS, RNA_FIXED, RNA_ARGV), total)) {
		c->u.batch.items = NULL;
		rl_call_free(c);
		return NULL;
	}
	char *p = c->dbuf, sfx[SFX_MAX];
	int a = SA_NKEYS;
	c->dargv[a] = p;
	c->dargvlen[a++] = (size_t)sprintf(p, "%d", RNA_KEYS * n + 1);
	p += c->dargvlen[a - 1] + 1;
	for (int k = 0; k < n; k++) {
		items[k].yes = 0;
		items[k].rewrote = 0;
		items[k].unrecorded = 0;
		c->dargv[a] = p;
		c->dargvlen[a] =
		    rl_key_at(p, items[k].key, items[k].klen,
		              rl_lock_sfx(sfx, sizeof(sfx), items[k].hold, items[k].permit));
		p += c->dargvlen[a++] + 1;
	}
	for (int k = 0; k < n; k++) {
		c->dargv[a] = p;
		c->dargvlen[a] = rl_key_at(p, items[k].key, items[k].klen, " shared");
		p += c->dargvlen[a++] + 1;
	}
	for (int k = 0; k < n; k++) /* a resumable session's record: its owner is checked */
		p = put_record(c, a++, p, items[k].sid);
	c->dargv[a] = rl_gen_key;
	c->dargvlen[a++] = strlen(rl_gen_key);
	snprintf(c->leasebuf, sizeof(c->leasebuf), "%lld", (long long)lease_ms);
	c->dargv[a] = c->leasebuf;
	c->dargvlen[a++] = strlen(c->leasebuf);
	c->dargv[a] = master_epoch(); /* read when written: see master_epoch */
	c->dargvlen[a++] = MASTER_EPOCH_LEN;
	/* The token is copied: a resend after NOSCRIPT must carry the token
	 * of this call, whatever the key's entry holds by then: "TOKEN
	 * DELAY" for a hold with a lock-delay (1.4), the value SCR_RENEW
	 * writes back, and it extends such a hold by lease + delay. */
	for (int k = 0; k < n; k++) {
		char v[TOKEN_LEN + 12];
		size_t vl = TOKEN_LEN;
		memcpy(v, items[k].token, TOKEN_LEN);
		if (items[k].delay_ms && items[k].hold != RH_SHARED)
			vl += (size_t)sprintf(v + TOKEN_LEN, " %u", items[k].delay_ms);
		p = rl_put_copy(c, a++, p, v, vl);
	}
	for (int k = 0; k < n; k++) {
		c->dargv[a] = items[k].lead && items[k].hold == RH_LOCK && !items[k].permit
		                  ? "l"
		                  : rl_kind_arg(items[k].hold, items[k].permit);
		c->dargvlen[a++] = 1;
	}
	rl_fanout(c, SCR_RENEW, renew_reply);
	return c;
}

struct rl_renew_item *rl_renew_items(const struct rl_call *c, int *n)
{
	*n = c->u.batch.nitems;
	return c->u.batch.items;
}

int64_t rl_start_us(const struct rl_call *c)
{
	return c->start_us;
}

int64_t rl_lease_of(const struct rl_call *c)
{
	return c->lease_ms;
}

static void release_many_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	c->pending--;
	if (!c->expired)
		c->st[m->idx] = r && r->type == REDIS_REPLY_INTEGER ? MR_YES : MR_FAIL;
	rl_check(c);
}

struct rl_call *rl_release_many(const struct rl_release_item *items, int n, rl_done_fn *done,
                                void *owner)
{
	static const char *const sfx[RMA_KEYS - 1] = {NULL, " waiting", " reserved", " shared"};
	struct rl_call *c = rl_call_new(RK_RELEASE_MANY, 0);
	size_t total = 64;
	if (!c)
		return NULL;
	for (int k = 0; k < n; k++)
		total += 5 * (rl_prefix_len + items[k].klen + SFX_MAX) + 2 * items[k].klen +
		         2 * TOKEN_LEN + 32;
	/* EVALSHA sha 5n lock... waiting... reserved... shared... record...
	 * channel instance reservems token... key... kind... field... */
	if (rl_dyn_args(c, SCRIPT_ARGC(n, RMA_KEYS, RMA_FIXED, RMA_ARGV), total)) {
		rl_call_free(c);
		return NULL;
	}
	c->done = done;
	c->owner = owner;
	c->rel_fired = 1;
	c->check_fn = released_all;
	char *p = c->dbuf, lsfx[SFX_MAX];
	int a = SA_NKEYS;
	c->dargv[a] = p;
	c->dargvlen[a++] = (size_t)sprintf(p, "%d", RMA_KEYS * n);
	p += c->dargvlen[a - 1] + 1;
	for (int s = 0; s < RMA_KEYS - 1; s++) {
		for (int k = 0; k < n; k++) {
			const char *x =
			    s ? sfx[s]
			      : rl_lock_sfx(lsfx, sizeof(lsfx), items[k].hold, items[k].permit);
			c->dargv[a] = p;
			c->dargvlen[a] = rl_key_at(p, items[k].key, items[k].klen, x);
			p += c->dargvlen[a++] + 1;
		}
	}
	for (int k = 0; k < n; k++)
		p = put_record(c, a++, p, items[k].sid);
	c->dargv[a] = rl_channel;
	c->dargvlen[a++] = strlen(rl_channel);
	c->dargv[a] = rl_instance;
	c->dargvlen[a++] = strlen(rl_instance);
	c->dargv[a] = rl_reserve_ms;
	c->dargvlen[a++] = strlen(rl_reserve_ms);
	/* Copies: a master may resend (NOSCRIPT) after the verdict. */
	for (int k = 0; k < n; k++)
		p = rl_put_copy(c, a++, p, items[k].token, TOKEN_LEN);
	for (int k = 0; k < n; k++)
		p = rl_put_copy(c, a++, p, items[k].key, items[k].klen);
	for (int k = 0; k < n; k++) {
		c->dargv[a] = rl_kind_arg(items[k].hold, items[k].permit);
		c->dargvlen[a++] = 1;
	}
	for (int k = 0; k < n; k++) { /* the hold's field in its record, or "" */
		c->dargv[a] = items[k].sid ? p : "";
		c->dargvlen[a] = items[k].sid ? rl_field_at(p, items[k].rkind, items[k].permit,
		                                            items[k].key, items[k].klen)
		                              : 0;
		p += items[k].sid ? c->dargvlen[a] + 1 : 0;
		a++;
	}
	stats.releases += (uint64_t)n;
	rl_fanout(c, SCR_RELEASE_MANY, release_many_reply);
	return c;
}

/* A counting master's shared holders, listed after the counts when it
 * has at most STA_MEMBERS_MAX: kept, for quorum_common; else (or out of
 * memory) the verdict counts holders by the masters' counts alone. */
static void keep_members(struct status_part *sp, const redisReply *r, size_t from)
{
	size_t n = r->elements - from;
	if (sp->nmembers < 0)
		return;
	if (r->element[1]->integer > STA_MEMBERS_MAX || n != (size_t)r->element[1]->integer)
		goto unlisted;
	if (n == 0)
		return;
	char **m = realloc(sp->members, (size_t)(sp->nmembers + (int)n) * sizeof(*m));
	if (!m)
		goto unlisted;
	sp->members = m;
	for (size_t k = from; k < r->elements; k++) {
		/* a holder by its token less the instance, which an adoption
		   (RESUME elsewhere) changes where it reaches */
		const char *tok = r->element[k]->str;
		if (!(m[sp->nmembers] =
		          strdup(r->element[k]->len > INSTANCE_LEN ? tok + INSTANCE_LEN : tok)))
			goto unlisted;
		sp->nmembers++;
	}
	return;
unlisted:
	for (int k = 0; k < sp->nmembers; k++)
		free(sp->members[k]);
	sp->nmembers = -1;
}

static void status_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	struct status_part *sp = &c->u.status;
	if (c->expired) { /* the verdict was given without this master */
		c->pending--;
		rl_check(c);
		return;
	}
	size_t counts = 3 + (sp->v.npermits > 1 ? sp->v.npermits - 1 : 0);
	int i = m->idx, ok = r && r->type == REDIS_REPLY_ARRAY && r->elements >= counts;
	for (size_t k = 0; ok && k < r->elements; k++)
		ok = r->element[k]->type == (k < counts ? REDIS_REPLY_INTEGER : REDIS_REPLY_STRING);
	c->pending--;
	if (ok) {
		c->st[i] = MR_YES;
		sp->pttl[i] = r->element[0]->integer;
		sp->zcard[i] = r->element[1]->integer;
		sp->zttl[i] = r->element[2]->integer;
		if (c->counts[i])
			for (uint32_t p = 1; p < sp->v.npermits; p++) {
				long long t = r->element[2 + p]->integer;
				sp->permit_yes[p - 1] += t >= 0 || t == -1;
			}
		if (c->counts[i])
			keep_members(sp, r, counts);
	} else {
		if (r && r->type == REDIS_REPLY_ERROR)
			log_warn("master %s: status: %s", m->name, r->str);
		c->st[i] = MR_FAIL;
	}
	rl_check(c);
}

struct rl_call *rl_status(const char *key, size_t klen, uint32_t permits, rl_done_fn *done,
                          void *owner)
{
	struct rl_call *c = rl_call_new(RK_STATUS, 0);
	uint32_t extra = permits > 1 ? permits - 1 : 0;
	if (!c)
		return NULL;
	c->u.status.v.npermits = permits;
	c->check_fn = check_status;
	if (rl_dyn_args(c, SCRIPT_ARGC((int)extra, 1, STA_KEYS, 0),
	                (STA_KEYS + extra) * (rl_prefix_len + klen + SFX_MAX) + 64) ||
	    (extra && !(c->u.status.permit_yes = calloc(extra, sizeof(int))))) {
		rl_call_free(c);
		return NULL;
	}
	c->done = done;
	c->owner = owner;
	c->rel_fired = 1;
	char *p = c->dbuf, sfx[SFX_MAX];
	int a = SA_NKEYS;
	c->dargv[a] = p;
	c->dargvlen[a++] = (size_t)sprintf(p, "%u", STA_KEYS + extra);
	p += c->dargvlen[a - 1] + 1;
	for (uint32_t k = 0; k < STA_KEYS + extra; k++) {
		const char *x = k == 0   ? ""
		                : k == 1 ? " shared"
		                         : rl_lock_sfx(sfx, sizeof(sfx), RH_LOCK, k - 1);
		c->dargv[a] = p;
		c->dargvlen[a] = rl_key_at(p, key, klen, x);
		if (k == 0) {
			c->keyp = p + rl_prefix_len;
			c->klen = klen;
		}
		p += c->dargvlen[a++] + 1;
	}
	rl_fanout(c, SCR_STATUS, status_reply);
	return c;
}

const struct rl_status *rl_status_of(const struct rl_call *c)
{
	return &c->u.status.v;
}
