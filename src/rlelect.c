/* rlelect: the redlock calls of leader election (protocol 1.3), on the
 * call machinery of redlock.c (redlock_int.h): a leader's value written
 * beside its lock, a leader's release with its value, and the majority
 * read of who leads. What each script does on a master: scripts.c. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "quorum.h"
#include "redlock_int.h"
#include "stats.h"

#define EL_SFX " leader" /* the leader's record beside the lock of its name */

/* A call with room for argc arguments and bytes of keys and values. */
static struct rl_call *el_call(enum rl_kind kind, const char *key, size_t klen, int argc,
                               size_t bytes)
{
	struct rl_call *c = rl_call_new(kind, 0);
	if (!c)
		return NULL;
	if (rl_dyn_args(c, argc, bytes + 6 * (rl_prefix_len + klen + 16) + 256)) {
		rl_call_free(c);
		return NULL;
	}
	return c;
}

/* Put the lock key of key (with suffix sfx) at position at. The first,
 * the name's lock, names the call's key (keyp): a cluster entry sends
 * the call to the name's slot, where all its keys are. */
static char *key_arg(struct rl_call *c, int at, char *p, const char *key, size_t klen,
                     const char *sfx)
{
	c->dargv[at] = p;
	c->dargvlen[at] = rl_key_at(p, key, klen, sfx);
	if (!c->keyp) {
		c->keyp = p + rl_prefix_len;
		c->klen = klen;
	}
	return p + c->dargvlen[at] + 1;
}

static char *str_arg(struct rl_call *c, int at, char *p, const char *v)
{
	return rl_put_copy(c, at, p, v, strlen(v));
}

static void write_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	c->pending--;
	if (!c->expired) {
		if (r && r->type == REDIS_REPLY_ERROR)
			log_warn("master %s: election script: %s", m->name, r->str);
		c->st[m->idx] =
		    r && r->type == REDIS_REPLY_INTEGER && r->integer == 1 ? MR_YES : MR_FAIL;
		if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 2)
			c->u.el.superseded = 1;
	}
	rl_check(c);
}

static uint64_t num_of(const redisReply *r);

/* SCR_EL_EPOCH's answer: {1} reserved, {0} not the lock's token, {2, r}
 * r reserved already. */
static void epoch_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	c->pending--;
	if (!c->expired) {
		int what = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
		                   r->element[0]->type == REDIS_REPLY_INTEGER
		               ? (int)r->element[0]->integer
		               : -1;
		if (r && r->type == REDIS_REPLY_ERROR)
			log_warn("master %s: election epoch: %s", m->name, r->str);
		c->st[m->idx] = what == 1 ? MR_YES : MR_FAIL;
		if (what == 2 && r->elements >= 2 && num_of(r->element[1]) > c->u.el.reserved)
			c->u.el.reserved = num_of(r->element[1]);
	}
	rl_check(c);
}

/* A put or a resign: RL_OK once a majority of the counting masters said
 * yes, RL_QUORUM once they cannot. */
static void check_write(struct rl_call *c)
{
	if (c->rel_fired)
		return;
	enum quorum_state v = quorum_verdict(rl_count_st(c, c->st, MR_YES), 0,
	                                     rl_count_st(c, c->st, MR_WAIT), c->maj);
	if (v == Q_WON || v == Q_LOST || !c->pending || c->expired) {
		c->rel_fired = 1;
		c->rel_result = v == Q_WON ? RL_OK : RL_QUORUM;
		if (c->rel_done && c->owner)
			c->rel_done(c, c->owner);
	}
}

struct rl_call *rl_el_put(const char *key, size_t klen, const char *token, uint64_t fence,
                          uint64_t epoch, uint64_t version, const char *value, size_t vlen,
                          int64_t expire_ms, rl_done_fn *done, void *owner)
{
	struct rl_call *c = el_call(RK_EL_WRITE, key, klen, EPA_ARGC, vlen + 2 * klen + 128);
	char num[24];
	if (!c)
		return NULL;
	char *p = c->dbuf;
	c->dargv[EPA_NKEYS] = "2";
	c->dargvlen[EPA_NKEYS] = 1;
	p = key_arg(c, EPA_LOCK, p, key, klen, "");
	p = key_arg(c, EPA_RECORD, p, key, klen, EL_SFX);
	p = str_arg(c, EPA_TOKEN, p, token);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)fence);
	p = str_arg(c, EPA_FENCE, p, num);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)version);
	p = str_arg(c, EPA_VERSION, p, num);
	p = rl_put_copy(c, EPA_VALUE, p, value, vlen);
	snprintf(num, sizeof(num), "%lld", (long long)expire_ms);
	p = str_arg(c, EPA_EXPIRE, p, num);
	p = str_arg(c, EPA_CHANNEL, p, rl_elected);
	p = rl_put_copy(c, EPA_NAME, p, key, klen);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)epoch);
	str_arg(c, EPA_EPOCH, p, num);
	c->done_fired = 1; /* it answers through rel_done */
	c->rel_done = done;
	c->owner = owner;
	c->check_fn = check_write;
	rl_fanout(c, SCR_EL_PUT, write_reply);
	return c;
}

int rl_el_superseded(const struct rl_call *c)
{
	return c->u.el.superseded;
}

struct rl_call *rl_el_epoch(const char *key, size_t klen, const char *token, uint64_t epoch,
                            rl_done_fn *done, void *owner)
{
	struct rl_call *c = el_call(RK_EL_WRITE, key, klen, EEA_ARGC, 2 * klen + 128);
	char num[24];
	if (!c)
		return NULL;
	char *p = c->dbuf;
	c->dargv[EEA_NKEYS] = "2";
	c->dargvlen[EEA_NKEYS] = 1;
	p = key_arg(c, EEA_LOCK, p, key, klen, "");
	p = key_arg(c, EEA_RECORD, p, key, klen, EL_SFX);
	p = str_arg(c, EEA_TOKEN, p, token);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)epoch);
	str_arg(c, EEA_EPOCH, p, num);
	c->done_fired = 1; /* it answers through rel_done */
	c->rel_done = done;
	c->owner = owner;
	c->check_fn = check_write;
	rl_fanout(c, SCR_EL_EPOCH, epoch_reply);
	return c;
}

uint64_t rl_el_reserved(const struct rl_call *c)
{
	return c->u.el.reserved;
}

struct rl_call *rl_el_resign(const char *key, size_t klen, const char *token,
                             const struct rl_rec *rec, rl_done_fn *done, void *owner)
{
	struct rl_call *c = el_call(RK_EL_WRITE, key, klen, ESA_ARGC, 3 * klen + 256);
	if (!c)
		return NULL;
	char *p = c->dbuf;
	c->dargv[ESA_NKEYS] = "5";
	c->dargvlen[ESA_NKEYS] = 1;
	p = key_arg(c, ESA_LOCK, p, key, klen, "");
	p = key_arg(c, ESA_WAITING, p, key, klen, " waiting");
	p = key_arg(c, ESA_RESERVED, p, key, klen, " reserved");
	p = key_arg(c, ESA_RECORD, p, key, klen, EL_SFX);
	c->dargv[ESA_SESSION] = p;
	*p = '\0'; /* "": a version-1 session's hold */
	c->dargvlen[ESA_SESSION] = rec && rec->sid ? rl_record_at(p, rec->sid) : 0;
	p += c->dargvlen[ESA_SESSION] + 1;
	p = str_arg(c, ESA_TOKEN, p, token);
	p = str_arg(c, ESA_CHANNEL, p, rl_channel);
	p = rl_put_copy(c, ESA_KEY, p, key, klen);
	p = str_arg(c, ESA_INSTANCE, p, rl_instance);
	p = str_arg(c, ESA_RESERVE_MS, p, rl_reserve_ms);
	p = str_arg(c, ESA_ELECTED, p, rl_elected);
	c->dargv[ESA_FIELD] = p;
	*p = '\0';
	c->dargvlen[ESA_FIELD] = rec && rec->sid ? rl_field_at(p, 'x', 0, key, klen) : 0;
	c->done_fired = 1;
	c->rel_done = done;
	c->owner = owner;
	c->check_fn = check_write;
	rl_fanout(c, SCR_EL_RESIGN, write_reply);
	return c;
}

/* --- the read --- */

static uint64_t num_of(const redisReply *r)
{
	if (r->type == REDIS_REPLY_INTEGER)
		return r->integer > 0 ? (uint64_t)r->integer : 0;
	if (r->type == REDIS_REPLY_STRING)
		return strtoull(r->str, NULL, 10);
	return 0;
}

static void read_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	struct el_part *e = &c->u.el;
	int i = m->idx;
	c->pending--;
	if (c->expired) {
		rl_check(c);
		return;
	}
	c->st[i] = MR_FAIL;
	if (r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
	    r->element[0]->type == REDIS_REPLY_INTEGER) {
		long long k = r->element[0]->integer;
		if (k == 0) {
			e->kind[i] = RLE_NONE;
			c->st[i] = MR_YES;
		} else if (k == 1 && (r->elements == 2 || r->elements == 3)) {
			e->kind[i] = RLE_PLAIN;
			e->counter[i] = num_of(r->element[1]);
			if (r->elements == 3 && num_of(r->element[2]) > e->reserved)
				e->reserved = num_of(r->element[2]);
			c->st[i] = MR_YES;
		} else if (k == 2 && r->elements == 7 &&
		           r->element[3]->type == REDIS_REPLY_STRING) {
			size_t n = r->element[3]->len;
			e->kind[i] = n >= 1 && n <= e->vmax ? RLE_LEADER : RLE_PLAIN;
			e->fence[i] = num_of(r->element[1]);
			e->ver[i] = num_of(r->element[2]);
			e->counter[i] = num_of(r->element[4]);
			e->epoch[i] = num_of(r->element[5]);
			if (num_of(r->element[6]) > e->reserved)
				e->reserved = num_of(r->element[6]);
			if (e->kind[i] == RLE_LEADER) {
				memcpy(e->vals + (size_t)i * (e->vmax + 1), r->element[3]->str, n);
				e->vlen[i] = n;
			}
			c->st[i] = MR_YES;
		}
	}
	if (c->st[i] != MR_YES && r && r->type == REDIS_REPLY_ERROR)
		log_warn("master %s: election read: %s", m->name, r->str);
	rl_check(c);
}

/* With fewer than all masters answering, a hold granted on a majority is
 * on quorum_read_threshold of the answers, and so is a failed attempt's
 * leftover: a leader (fence) or lock held on that many but not on a
 * majority, above what a majority names, may be either. 1 then: the read
 * cannot answer (design.md, "Reads from fewer than all masters"). */
static int read_unsure(struct rl_call *c, int answered, int locked, int best)
{
	struct el_part *e = &c->u.el;
	uint64_t fences[CONFIG_MAX_MASTERS];
	int n = 0;
	for (int i = 0; i < c->n; i++)
		if (c->counts[i] && c->st[i] == MR_YES && e->kind[i] == RLE_LEADER)
			fences[n++] = e->fence[i];
	return quorum_leader_unsure(answered, c->n, c->maj, locked, fences, n,
	                            best >= 0 ? e->fence[best] : 0);
}

/* Every master answered (or the time is up): a leader counts when a
 * majority of the counting masters hold its lock with its value (the
 * highest such fence wins; of its values, the highest (epoch, version));
 * else a lock held on a majority is a plain hold; else nobody leads,
 * unless the answers cannot tell (read_unsure): no verdict then. */
static void check_read(struct rl_call *c)
{
	struct el_part *e = &c->u.el;
	struct rl_leader *v = &e->v;
	int answered = 0, locked = 0, best = -1;
	if (c->pending && !c->expired)
		return;
	for (int i = 0; i < c->n; i++) {
		if (!c->counts[i] || c->st[i] != MR_YES)
			continue;
		answered++;
		locked += e->kind[i] != RLE_NONE;
		if (e->kind[i] != RLE_LEADER)
			continue;
		int same = 0;
		for (int j = 0; j < c->n; j++)
			same += c->counts[j] && c->st[j] == MR_YES && e->kind[j] == RLE_LEADER &&
			        e->fence[j] == e->fence[i];
		if (!quorum_reached(same, c->maj))
			continue;
		if (best < 0 || e->fence[i] > e->fence[best] ||
		    (e->fence[i] == e->fence[best] &&
		     (e->epoch[i] > e->epoch[best] ||
		      (e->epoch[i] == e->epoch[best] && e->ver[i] > e->ver[best]))))
			best = i;
	}
	memset(v, 0, sizeof(*v));
	v->ok = quorum_reached(answered, c->maj);
	if (v->ok && read_unsure(c, answered, locked, best)) {
		v->ok = 0;
		v->unsure = 1;
		stats.unsure_reads++; /* LEADER's, an observer's or an adoption's */
	}
	v->reserved = e->reserved;
	if (v->ok && best >= 0) {
		v->kind = RLE_LEADER;
		v->fence = e->fence[best];
		v->epoch = e->epoch[best];
		v->version = e->ver[best];
		v->value = e->vals + (size_t)best * (e->vmax + 1);
		v->vlen = e->vlen[best];
	} else if (v->ok && quorum_reached(locked, c->maj)) {
		v->kind = RLE_PLAIN;
		for (int i = 0; i < c->n; i++)
			if (c->counts[i] && c->st[i] == MR_YES && e->counter[i] > v->fence)
				v->fence = e->counter[i];
	}
	rl_fire_done(c);
}

struct rl_call *rl_el_read(const char *key, size_t klen, size_t vmax, rl_done_fn *done, void *owner)
{
	size_t vals = (size_t)CONFIG_MAX_MASTERS * (vmax + 1);
	struct rl_call *c = el_call(RK_EL_READ, key, klen, ERA_ARGC, vals + 3 * klen);
	if (!c)
		return NULL;
	struct el_part *e = &c->u.el;
	char *p = c->dbuf;
	c->dargv[ERA_NKEYS] = "4";
	c->dargvlen[ERA_NKEYS] = 1;
	p = key_arg(c, ERA_LOCK, p, key, klen, "");
	p = key_arg(c, ERA_RECORD, p, key, klen, EL_SFX);
	p = key_arg(c, ERA_FENCE, p, key, klen, " fence");
	p = key_arg(c, ERA_SHARED, p, key, klen, " shared");
	e->vals = p;
	e->vmax = vmax;
	c->rel_fired = 1; /* it answers through done */
	c->done = done;
	c->owner = owner;
	c->check_fn = check_read;
	rl_fanout(c, SCR_EL_READ, read_reply);
	return c;
}

const struct rl_leader *rl_leader_of(const struct rl_call *c)
{
	return &c->u.el.v;
}
