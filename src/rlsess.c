/* rlsess: the session records of sessions that outlive a connection
 * (protocol 1.2), on the call machinery of redlock.c (redlock_int.h).
 * The records and what each script does with them: scripts.c. */
#include "config.h"

#include <errno.h>
#include <limits.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "ktag.h"
#include "log.h"
#include "master.h"
#include "quorum.h"
#include "redlock_int.h"
#include "stats.h"

/* A call about one record: EVALSHA sha 1 record instance ... */
static struct rl_call *one_record(enum rl_kind kind, const char *sid, int nargs, size_t bytes)
{
	struct rl_call *c = rl_call_new(kind, 0);
	if (!c)
		return NULL;
	if (rl_dyn_args(c, SA_KEYS + 1 + nargs, bytes + rl_prefix_len + 64)) {
		rl_call_free(c);
		return NULL;
	}
	c->rel_fired = kind != RK_SESS;  /* put and end answer through rel_done, */
	c->done_fired = kind == RK_SESS; /* the others through done */
	char *p = c->dbuf;
	c->dargv[SA_NKEYS] = "1";
	c->dargvlen[SA_NKEYS] = 1;
	c->dargv[SA_KEYS] = p;
	c->dargvlen[SA_KEYS] = rl_record_at(p, sid);
	c->keyp = NULL;
	c->klen = c->dargvlen[SA_KEYS] + 1; /* bytes used of dbuf */
	if (masters_any_cluster()) {        /* a cluster entry: the home record (doc/cluster.md) */
		c->homed = 1;
		c->home_slot = csl_keyslot(sid, strlen(sid));
	}
	return c;
}

/* Put a string argument (copied) at position at; returns where the next goes. */
static char *arg(struct rl_call *c, int at, char *p, const char *v)
{
	return rl_put_copy(c, at, p, v, strlen(v));
}

static void record_reply(struct master *m, redisReply *r, void *arg_)
{
	struct rl_call *c = arg_;
	c->pending--;
	if (!c->expired)
		c->st[m->idx] =
		    r && r->type == REDIS_REPLY_INTEGER && r->integer == 1 ? MR_YES : MR_FAIL;
	rl_check(c);
}

/* A put or an end: RL_OK once a majority of the counting masters wrote. */
static void check_record(struct rl_call *c)
{
	enum quorum_state v = quorum_verdict(rl_count_st(c, c->st, MR_YES), 0,
	                                     rl_count_st(c, c->st, MR_WAIT), c->maj);
	if (c->rel_fired)
		return;
	if (v == Q_WON || v == Q_LOST || (!c->pending || c->expired)) {
		c->rel_fired = 1;
		c->rel_result = v == Q_WON ? RL_OK : RL_QUORUM;
		if (c->rel_done && c->owner)
			c->rel_done(c, c->owner);
	}
}

/* One reply of a cluster entry's parts (struct refill_x): the entry
 * wrote the record once every part said 1. */
static void part_reply(struct master *m, redisReply *r, void *arg_)
{
	struct rl_call *c = arg_;
	struct refill_x *rx = c->u.sess.rx;
	int i = m->idx;
	c->pending--;
	if (!(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1))
		rx->fail[i] = 1;
	if (--rx->out[i] == 0 && !c->expired)
		c->st[i] = rx->fail[i] ? MR_FAIL : MR_YES;
	rl_check(c);
}

/* The part of slot s (made on first sight; the home part is made first). */
static struct refill_part *part_of(struct refill_x *rx, unsigned s)
{
	for (int k = 0; k < rx->nparts; k++)
		if (rx->p[k].slot == s)
			return &rx->p[k];
	struct refill_part *p = &rx->p[rx->nparts++];
	p->slot = s;
	snprintf(p->ifield, sizeof(p->ifield), "i %u", s);
	return p;
}

/* c's record with its n holds as a cluster entry keeps it (doc/
 * cluster.md, "Sessions on a cluster entry"): each slot's holds in the
 * record of that slot, listed in the home record's index. c's own
 * arguments (SA_KEYS + 5 + 2k: hold k's field and value; the count's
 * pair last when given) are the parts' strings. -1: out of memory. */
static int refill_parts(struct rl_call *c, const struct rl_sess_hold *holds, int n, int with_count)
{
	struct refill_x *rx = calloc(1, sizeof(*rx));
	if (!rx || !(rx->p = calloc((size_t)n + 1, sizeof(*rx->p)))) {
		free(rx);
		return -1;
	}
	c->u.sess.rx = rx;
	part_of(rx, c->home_slot);
	const int head = SA_KEYS + 5, tail = with_count ? 2 : 0; /* record .. expiry; "a" */
	int *cnt = calloc((size_t)n + 1, sizeof(*cnt));
	unsigned *slot = calloc((size_t)n + 1, sizeof(*slot));
	if (!cnt || !slot)
		goto fail;
	for (int k = 0; k < n; k++) {
		slot[k] = csl_keyslot(holds[k].key, holds[k].klen);
		cnt[part_of(rx, slot[k]) - rx->p]++;
	}
	for (int j = 0; j < rx->nparts; j++) {
		struct refill_part *p = &rx->p[j];
		int index = j == 0 ? rx->nparts - 1 : 0; /* the home record's "i SLOT" fields */
		p->argc = head + 2 * cnt[j] + 2 * index + tail;
		if (!(p->v = calloc((size_t)p->argc, sizeof(*p->v))) ||
		    !(p->l = calloc((size_t)p->argc, sizeof(*p->l))))
			goto fail;
		for (int a = SA_NKEYS; a < head; a++) {
			p->v[a] = c->dargv[a];
			p->l[a] = c->dargvlen[a];
		}
		int a = head;
		for (int k = 0; k < n; k++)
			for (int f = 0; slot[k] == p->slot && f < 2; f++, a++) {
				p->v[a] = c->dargv[head + 2 * k + f];
				p->l[a] = c->dargvlen[head + 2 * k + f];
			}
		for (int k = 1; k <= index; k++, a += 2) {
			p->v[a] = rx->p[k].ifield;
			p->l[a] = strlen(rx->p[k].ifield);
			p->v[a + 1] = "1";
			p->l[a + 1] = 1;
		}
		for (int f = 0; f < tail; f++, a++) {
			p->v[a] = c->dargv[head + 2 * n + f];
			p->l[a] = c->dargvlen[head + 2 * n + f];
		}
	}
	free(cnt);
	free(slot);
	return 0;
fail:
	free(cnt);
	free(slot);
	return -1;
}

/* Send the parts to every cluster entry (rl_fanout then leaves them). */
static void refill_send(struct rl_call *c)
{
	struct refill_x *rx = c->u.sess.rx;
	for (int i = 0; i < c->n; i++) {
		struct master *m = master_get(i);
		if (!m->cl)
			continue;
		for (int j = 0; j < rx->nparts; j++) {
			struct refill_part *p = &rx->p[j];
			int put = master_call_at(m, &p->slot, 1, SCR_SESS_PUT, p->argc, p->v, p->l,
			                         part_reply, c) == 0;
			rx->out[i] += put;
			c->pending += put;
			rx->fail[i] |= !put;
		}
		c->st[i] = rx->out[i] ? MR_WAIT : MR_FAIL;
	}
	c->skip_cl = 1;
}

/* With count > 0 the adoption count goes as a field, value pair after
 * the holds' ("a": SCR_SESS_PUT only raises it); else it is rl_sess_put. */
struct rl_call *rl_sess_refill(const char *sid, const char *secret, int64_t grace_ms,
                               int64_t expire_ms, const struct rl_sess_hold *holds, int n,
                               long long count, rl_done_fn *done, void *owner)
{
	size_t bytes = 160 + (secret ? strlen(secret) : 0);
	for (int k = 0; k < n; k++)
		bytes += 2 * holds[k].klen + TOKEN_LEN + 96;
	struct rl_call *c = one_record(RK_SESS, sid, 4 + 2 * n + (count > 0 ? 2 : 0), bytes);
	if (!c)
		return NULL;
	char *p = c->dbuf + c->klen, num[24];
	int a = SA_KEYS + 1;
	p = arg(c, a++, p, rl_instance);
	p = arg(c, a++, p, secret ? secret : "");
	snprintf(num, sizeof(num), "%lld", (long long)grace_ms);
	p = arg(c, a++, p, grace_ms >= 0 ? num : "");
	snprintf(num, sizeof(num), "%lld", (long long)(expire_ms > 0 ? expire_ms : 0));
	p = arg(c, a++, p, num);
	for (int k = 0; k < n; k++) {
		const struct rl_sess_hold *h = &holds[k];
		c->dargv[a] = p;
		c->dargvlen[a] = rl_field_at(p, h->kind, h->permit, h->key, h->klen);
		p += c->dargvlen[a++] + 1;
		c->dargv[a] = p;
		c->dargvlen[a] =
		    (size_t)sprintf(p, "%.*s %llu %u %d", TOKEN_LEN, h->token,
		                    (unsigned long long)h->fence, h->holds, h->ttl ? 1 : 0);
		p += c->dargvlen[a++] + 1;
	}
	if (count > 0) {
		p = arg(c, a++, p, "a");
		snprintf(num, sizeof(num), "%lld", count);
		arg(c, a++, p, num);
	}
	c->rel_done = done;
	c->owner = owner;
	c->check_fn = check_record;
	if (c->homed && n > 0) { /* a cluster entry keeps holds in their slots' records */
		if (refill_parts(c, holds, n, count > 0) != 0) {
			rl_call_free(c);
			return NULL;
		}
		refill_send(c);
	}
	rl_fanout(c, SCR_SESS_PUT, record_reply);
	return c;
}

struct rl_call *rl_sess_put(const char *sid, const char *secret, int64_t grace_ms,
                            int64_t expire_ms, const struct rl_sess_hold *holds, int n,
                            rl_done_fn *done, void *owner)
{
	return rl_sess_refill(sid, secret, grace_ms, expire_ms, holds, n, 0, done, owner);
}

struct rl_call *rl_sess_end(const char *sid, int64_t keep_ms, rl_done_fn *done, void *owner)
{
	struct rl_call *c = one_record(RK_SESS, sid, 2, 96);
	if (!c)
		return NULL;
	char num[24];
	snprintf(num, sizeof(num), "%lld", (long long)keep_ms);
	char *p = arg(c, SA_KEYS + 1, c->dbuf + c->klen, rl_instance);
	arg(c, SA_KEYS + 2, p, num);
	c->rel_done = done;
	c->owner = owner;
	c->check_fn = check_record;
	rl_fanout(c, SCR_SESS_END, record_reply);
	return c;
}

/* --- the touch --- */

static void touch_reply(struct master *m, redisReply *r, void *arg_)
{
	struct rl_call *c = arg_;
	struct sess_part *sp = &c->u.sess;
	int i = m->idx;
	c->pending--;
	if (!c->expired && r && r->type == REDIS_REPLY_ARRAY &&
	    (int)r->elements == 2 * sp->nitems) {
		c->st[i] = MR_YES;
		for (int k = 0; k < sp->nitems; k++) {
			const redisReply *e = r->element[2 * k], *ea = r->element[2 * k + 1];
			long long v = e->type == REDIS_REPLY_INTEGER ? e->integer : -1;
			long long a = ea->type == REDIS_REPLY_INTEGER ? ea->integer : 0;
			struct rl_sess_item *it = &sp->items[k];
			it->missing |= v == 2;
			if (!c->counts[i])
				continue;
			if (a < 0)
				a = LLONG_MAX; /* a tombstone: the session ended, after any owner */
			it->yes += v == 1;
			it->other += v == 0;
			if (v == 0 && a > it->other_a)
				it->other_a = a;
		}
	} else if (!c->expired) {
		c->st[i] = MR_FAIL;
	}
	rl_check(c);
}

static void check_touch(struct rl_call *c)
{
	if (c->pending && !c->expired)
		return;
	for (int k = 0; k < c->u.sess.nitems; k++)
		c->u.sess.items[k].moved = quorum_reached(c->u.sess.items[k].other, c->maj);
	rl_fire_done(c);
}

struct rl_call *rl_sess_touch(struct rl_sess_item *items, int n, rl_done_fn *done, void *owner)
{
	struct rl_call *c = rl_call_new(RK_TOUCH, 0);
	if (!c)
		return NULL;
	c->u.sess.items = items;
	c->u.sess.nitems = n;
	if (rl_dyn_args(c, SA_KEYS + 2 * n + 1, (size_t)n * (rl_prefix_len + 64) + 64)) {
		rl_call_free(c);
		return NULL;
	}
	char *p = c->dbuf;
	int a = SA_NKEYS;
	c->dargv[a] = p;
	c->dargvlen[a++] = (size_t)sprintf(p, "%d", n);
	p += c->dargvlen[a - 1] + 1;
	for (int k = 0; k < n; k++) {
		snprintf(items[k].id, sizeof(items[k].id), "%s", items[k].sid);
		items[k].sid = items[k].id; /* the caller's may go away before the verdict */
		items[k].moved = items[k].missing = items[k].yes = items[k].other = 0;
		items[k].other_a = -1;
		c->dargv[a] = p;
		c->dargvlen[a] = rl_record_at(p, items[k].sid);
		p += c->dargvlen[a++] + 1;
	}
	p = arg(c, a++, p, rl_instance);
	for (int k = 0; k < n; k++) {
		c->dargv[a] = p;
		c->dargvlen[a] = (size_t)sprintf(p, "%lld", (long long)items[k].expire_ms);
		p += c->dargvlen[a++] + 1;
	}
	c->done = done;
	c->owner = owner;
	c->rel_fired = 1;
	c->check_fn = check_touch;
	rl_fanout(c, SCR_SESS_TOUCH, touch_reply);
	return c;
}

struct rl_sess_item *rl_sess_items(const struct rl_call *c, int *n)
{
	*n = c->u.sess.nitems;
	return c->u.sess.items;
}

/* --- the adoption --- */

/* The entry of a's holds for a record field (made on first sight). */
static struct rl_adopted *entry(struct rl_call *c, const char *f, size_t flen)
{
	struct sess_part *sp = &c->u.sess;
	const char *sp_ = memchr(f, ' ', flen);
	if (flen < 4 || !sp_ || (f[0] != 'x' && f[0] != 'p' && f[0] != 's'))
		return NULL;
	size_t klen = flen - (size_t)(sp_ + 1 - f);
	uint32_t permit = (uint32_t)strtoul(f + 1, NULL, 10);
	for (int i = 0; i < sp->a.n; i++) {
		struct rl_adopted *e = &sp->a.holds[i];
		if (e->kind == f[0] && e->permit == permit && e->klen == klen &&
		    memcmp(e->key, sp_ + 1, klen) == 0)
			return e;
	}
	if (sp->a.n == sp->cap) {
		int cap = sp->cap ? 2 * sp->cap : 8;
		struct rl_adopted *h = realloc(sp->a.holds, (size_t)cap * sizeof(*h));
		if (!h)
			return NULL;
		sp->a.holds = h;
		struct rl_seen *w = realloc(sp->seen, (size_t)cap * (size_t)c->n * sizeof(*w));
		if (!w)
			return NULL;
		sp->seen = w;
		memset(w + (size_t)sp->cap * (size_t)c->n, 0,
		       (size_t)(cap - sp->cap) * (size_t)c->n * sizeof(*w));
		sp->cap = cap;
	}
	struct rl_adopted *e = &sp->a.holds[sp->a.n];
	memset(e, 0, sizeof(*e));
	if (!(e->key = malloc(klen + 1)))
		return NULL;
	memcpy(e->key, sp_ + 1, klen);
	e->key[klen] = '\0';
	e->klen = klen;
	e->kind = f[0];
	e->permit = permit;
	e->lease_ms = -1;
	sp->a.n++;
	return e;
}

/* Drop the strings of the last HSCAN on master am. */
static void pend_clear(struct adopt_m *am)
{
	for (int k = 0; k < am->npend; k++)
		free(am->pend[k]);
	am->npend = 0;
}

/* Keep one string of an HSCAN for the SCR_SESS_ADOPT_MORE round. */
static int pend_add(struct adopt_m *am, const redisReply *s)
{
	if (am->npend == am->cap) {
		int cap = am->cap ? 2 * am->cap : 64;
		char **p = realloc(am->pend, (size_t)cap * sizeof(*p));
		if (!p)
			return -1;
		am->pend = p;
		size_t *l = realloc(am->plen, (size_t)cap * sizeof(*l));
		if (!l)
			return -1;
		am->plen = l;
		am->cap = cap;
	}
	if (!(am->pend[am->npend] = malloc(s->len + 1)))
		return -1;
	memcpy(am->pend[am->npend], s->str, s->len);
	am->pend[am->npend][s->len] = '\0';
	am->plen[am->npend++] = s->len;
	return 0;
}

static int index_field(const struct rl_call *c, struct adopt_m *am, const char *f, size_t flen);

/* One master's {1, grace, count, field, value, ok, left, delay, ...}. A
 * field an HSCAN returned twice is counted once. */
static void adopt_holds(struct rl_call *c, int i, const redisReply *r)
{
	struct sess_part *sp = &c->u.sess;
	for (size_t k = 3; k + 4 < r->elements; k += 5) {
		const redisReply *f = r->element[k], *v = r->element[k + 1];
		const redisReply *ok = r->element[k + 2], *left = r->element[k + 3];
		const redisReply *dl = r->element[k + 4];
		if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
		    ok->type != REDIS_REPLY_INTEGER || left->type != REDIS_REPLY_INTEGER ||
		    dl->type != REDIS_REPLY_INTEGER)
			continue;
		if (c->homed && index_field(c, &sp->am[i], f->str, f->len))
			continue;
		struct rl_adopted *e = entry(c, f->str, f->len);
		char tok[TOKEN_LEN + 1];
		unsigned long long fence;
		unsigned holds;
		int ttl;
		if (!e || sscanf(v->str, "%32s %llu %u %d", tok, &fence, &holds, &ttl) != 4 ||
		    strlen(tok) != TOKEN_LEN || fence == 0 || !c->counts[i])
			continue;
		/* Each counting master's word; check_adopt takes the fence a
		 * majority of them hold (a master that did not count, or that
		 * answered the grant too late to be corrected, may hold its own). */
		struct rl_seen *w = &sp->seen[(e - sp->a.holds) * c->n + i];
		if (w->fence)
			continue;
		w->fence = fence;
		w->holds = holds;
		w->ttl = ttl;
		memcpy(w->token, tok, sizeof(w->token));
		if (ok->integer == 1) {
			e->yes++;
			if (e->lease_ms < 0 || left->integer < e->lease_ms)
				e->lease_ms = left->integer;
			if (dl->integer > (long long)e->delay_ms && dl->integer <= 2147483647)
				e->delay_ms = (uint32_t)dl->integer; /* 1.4: kept by its renewals */
		}
	}
}

static void adopt_reply(struct master *m, redisReply *r, void *arg_);
static void scan_reply(struct master *m, redisReply *r, void *arg_);

/* The slot of the record master i's rounds are about (nslots 1), for
 * master_call_at: the home record, or a listed slot's. */
static unsigned rec_slot(const struct rl_call *c, const struct adopt_m *am)
{
	return am->rec == 0 ? c->home_slot : am->slots[am->rec - 1];
}

/* A field "i SLOT" of a cluster entry's home record (SCR_SESS_INDEX):
 * the slot joins am's list (once; not the home record's own). 1 if the
 * field is one, whatever its slot. */
static int index_field(const struct rl_call *c, struct adopt_m *am, const char *f, size_t flen)
{
	if (flen < 3 || f[0] != 'i' || f[1] != ' ')
		return 0;
	char num[8];
	size_t n = flen - 2;
	if (n >= sizeof(num) || am->rec != 0)
		return 1;
	memcpy(num, f + 2, n);
	num[n] = '\0';
	char *end;
	unsigned long v = strtoul(num, &end, 10);
	if (*end || end == num || v >= CSL_SLOTS || v == c->home_slot)
		return 1;
	for (int k = 0; k < am->nslots; k++)
		if (am->slots[k] == v)
			return 1;
	unsigned *sl = realloc(am->slots, (size_t)(am->nslots + 1) * sizeof(*sl));
	if (!sl) { /* that slot's holds would not be adopted: the master does not count */
		am->stop = 1;
		return 1;
	}
	am->slots = sl;
	am->slots[am->nslots++] = (unsigned)v;
	return 1;
}

/* Room for a round's arguments (the last round was answered: master.c is
 * done with the old ones). */
static int round_args(struct adopt_m *am, size_t n)
{
	free(am->mv);
	free(am->ml);
	am->mv = malloc(n * sizeof(*am->mv));
	am->ml = malloc(n * sizeof(*am->ml));
	return am->mv && am->ml ? 0 : -1;
}

/* HSCAN record cursor COUNT ADOPT_SCAN. */
static int scan_next(struct rl_call *c, struct master *m)
{
	struct adopt_m *am = &c->u.sess.am[m->idx];
	const char *key = c->argv[SA_KEYS];
	size_t klen = c->argvlen[SA_KEYS];
	unsigned slot = c->homed ? rec_slot(c, am) : 0;
	if (m->cl) { /* a command goes as it is: its key named as the cluster's */
		int n = snprintf(am->tagged, sizeof(am->tagged), "{%s}%.*s", ktag_of_slot(slot),
		                 (int)klen, key);
		if (n < 0 || (size_t)n >= sizeof(am->tagged))
			return -1;
		key = am->tagged;
		klen = (size_t)n;
	}
	const char *v[] = {"HSCAN", key, am->cursor, "COUNT", ADOPT_SCAN_S};
	size_t l[] = {5, klen, strlen(am->cursor), 5, strlen(ADOPT_SCAN_S)};
	if (round_args(am, 5) != 0)
		return -1;
	memcpy(am->mv, v, sizeof(v));
	memcpy(am->ml, l, sizeof(l));
	am->rounds++;
	return master_call_at(m, &slot, c->homed, -1, 5, am->mv, am->ml, scan_reply, c);
}

/* SCR_SESS_ADOPT_MORE of the holds the last HSCAN returned, ADOPT_CHUNK a
 * script, sent at once (a wave): each is a bounded time on the master, and
 * the wave costs one round trip. 0 while some are on their way. */
#define MORE_HEAD 8 /* a script's arguments before its field, value pairs */
static int adopt_more(struct rl_call *c, struct master *m)
{
	struct adopt_m *am = &c->u.sess.am[m->idx];
	int pairs = am->npend / 2, k = (pairs + ADOPT_CHUNK - 1) / ADOPT_CHUNK;
	const char *v[MORE_HEAD] = {NULL,
	                            NULL,
	                            "1",
	                            c->argv[SA_KEYS],
	                            am->acount,
	                            c->argv[SDA_INSTANCE],
	                            c->argv[SDA_LEASE],
	                            c->argv[SDA_PREFIX]};
	size_t l[MORE_HEAD] = {0,
	                       0,
	                       1,
	                       c->argvlen[SA_KEYS],
	                       strlen(am->acount),
	                       c->argvlen[SDA_INSTANCE],
	                       c->argvlen[SDA_LEASE],
	                       c->argvlen[SDA_PREFIX]};
	if (round_args(am, (size_t)(k * MORE_HEAD + am->npend)) != 0)
		return -1;
	am->rounds++;
	for (int j = 0, off = 0, s = 0; j < k; j++) {
		int p =
		    pairs - j * ADOPT_CHUNK < ADOPT_CHUNK ? pairs - j * ADOPT_CHUNK : ADOPT_CHUNK;
		memcpy(am->mv + off, v, sizeof(v));
		memcpy(am->ml + off, l, sizeof(l));
		memcpy(am->mv + off + MORE_HEAD, am->pend + s, 2 * (size_t)p * sizeof(*am->mv));
		memcpy(am->ml + off + MORE_HEAD, am->plen + s, 2 * (size_t)p * sizeof(*am->ml));
		unsigned slot = c->homed ? rec_slot(c, am) : 0;
		if (master_call_at(m, &slot, c->homed, SCR_SESS_ADOPT_MORE, MORE_HEAD + 2 * p,
		                   am->mv + off, am->ml + off, adopt_reply, c) == 0)
			am->wave++;
		off += MORE_HEAD + 2 * p;
		s += 2 * p;
	}
	return am->wave ? 0 : -1;
}

/* The scan goes on, or this master is done (0: the call still waits for it). */
static int scan_on(struct rl_call *c, struct master *m)
{
	struct adopt_m *am = &c->u.sess.am[m->idx];
	return am->cursor[0] && strcmp(am->cursor, "0") != 0 && scan_next(c, m) == 0 ? 0 : -1;
}

/* This master is done with. One whose holds were not all taken over (a
 * round failed, or another adoption came between) does not count as
 * having the session for us, whatever its first rounds said: with too few
 * complete ones the RESUME answers ERR QUORUM and releases nothing, and
 * the session stays resumable (the next RESUME compares the count left). */
static void master_done(struct rl_call *c, struct master *m, int complete)
{
	struct sess_part *sp = &c->u.sess;
	struct adopt_m *am = &sp->am[m->idx];
	am->done = 1;
	if (!complete && am->counted) {
		sp->found -= c->counts[m->idx];
		sp->a.incomplete++;
		am->counted = 0;
		log_warn("master %s: adopt: not every hold was taken over there", m->name);
	}
	c->pending--;
	rl_check(c);
}

static void adopt_send_slot(struct rl_call *c, struct master *m);

/* The record master m's rounds were about is done with (complete: every
 * hold of it taken over): on a cluster entry, the next slot of the home
 * record's index is adopted next; the master is done once the last is,
 * or once one is not complete (its holds may be another lockd's). */
static void record_done(struct rl_call *c, struct master *m, int complete)
{
	struct adopt_m *am = &c->u.sess.am[m->idx];
	if (complete && !c->expired && !am->stop && am->rec < am->nslots) {
		am->rec++;
		am->rounds = 0;
		am->wave = 0;
		snprintf(am->cursor, sizeof(am->cursor), "%s", "");
		adopt_send_slot(c, m);
		return;
	}
	master_done(c, m, complete);
}

/* The scan of a large record is complete on this master. */
static int scan_complete(const struct adopt_m *am)
{
	return strcmp(am->cursor, "0") == 0;
}

static void scan_reply(struct master *m, redisReply *r, void *arg_)
{
	struct rl_call *c = arg_;
	struct adopt_m *am = &c->u.sess.am[m->idx];
	pend_clear(am);   /* the last wave was answered */
	if (c->expired) { /* the verdict was given: scan no further */
		master_done(c, m, 0);
		return;
	}
	rl_call_progress(c);
	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[0]->type == REDIS_REPLY_STRING && r->element[0]->len < sizeof(am->cursor) &&
	    r->element[1]->type == REDIS_REPLY_ARRAY) {
		const redisReply *kv = r->element[1];
		memcpy(am->cursor, r->element[0]->str, r->element[0]->len);
		am->cursor[r->element[0]->len] = '\0';
		for (size_t k = 0; k + 1 < kv->elements; k += 2) {
			const redisReply *f = kv->element[k], *v = kv->element[k + 1];
			if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
			    !memchr(f->str, ' ', f->len))
				continue; /* o, s, g, a: not a hold */
			if (c->homed && index_field(c, am, f->str, f->len))
				continue; /* a slot of the index: adopted after this record */
			if (pend_add(am, f) != 0 || pend_add(am, v) != 0) {
				log_warn("adopt: out of memory: holds not adopted on %s", m->name);
				pend_clear(am);
				break;
			}
		}
		if (am->npend ? adopt_more(c, m) == 0 : scan_on(c, m) == 0)
			return; /* the next round answers */
		record_done(c, m, !am->npend && scan_complete(am));
		return;
	}
	if (r && r->type == REDIS_REPLY_ERROR)
		log_warn("master %s: adopt: %s", m->name, r->str);
	master_done(c, m, 0);
}

static void adopt_reply(struct master *m, redisReply *r, void *arg_)
{
	struct rl_call *c = arg_;
	struct sess_part *sp = &c->u.sess;
	struct adopt_m *am = &sp->am[m->idx];
	int i = m->idx, more = am->rounds > 0, home = am->rec == 0;
	int answered = !c->expired && r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
	               r->element[0]->type == REDIS_REPLY_INTEGER;
	long long what = answered ? r->element[0]->integer : 0;
	if (!c->expired)
		rl_call_progress(c);
	if (answered && what == -2) {
		/* Adopted by another call between our rounds: no word (from
		 * this round on: the holds of earlier rounds count). */
		log_info("master %s: adopt: adopted elsewhere meanwhile", m->name);
		if (!more && home)
			c->st[i] = MR_FAIL;
		sp->a.raced++;
		am->stop = 1;
	} else if (answered && (what == 1 || what == 2) && r->elements >= 3 &&
	           r->element[1]->type == REDIS_REPLY_INTEGER &&
	           r->element[2]->type == REDIS_REPLY_INTEGER) {
		if (!more && home) {
			c->st[i] = MR_YES;
			sp->found += c->counts[i];
			am->counted = 1;
			if (r->element[1]->integer > sp->a.grace_ms)
				sp->a.grace_ms = r->element[1]->integer;
			memcpy(am->acount, sp->count_s, sizeof(am->acount)); /* what it set */
		}
		adopt_holds(c, i, r);
		if (what == 2 && !more) { /* a large record: scan it from the start */
			snprintf(am->cursor, sizeof(am->cursor), "0");
			if (scan_next(c, m) == 0)
				return;
			am->stop = 1;
		}
	} else if (answered && !more && home) {
		c->st[i] = MR_YES;
		sp->none += c->counts[i];
	} else if (!c->expired) { /* a slot's record: no session there (-1) is a fault */
		if (r && r->type == REDIS_REPLY_ERROR)
			log_warn("master %s: adopt: %s", m->name, r->str);
		if (!more && home)
			c->st[i] = MR_FAIL;
		am->stop = 1;
	}
	if (more && --am->wave > 0)
		return; /* the rest of the wave answers */
	if (more && !am->stop && scan_on(c, m) == 0)
		return; /* the next round answers */
	record_done(c, m, !am->stop && (!more || scan_complete(am)));
}

/* SCR_SESS_ADOPT's slot form (doc/cluster.md, "Sessions on a cluster
 * entry") of the record of am->rec's slot on master m: the secret, the
 * count this adoption writes (above the record's, or -2), and the grace
 * a record it creates gets. */
static void adopt_send_slot(struct rl_call *c, struct master *m)
{
	struct adopt_m *am = &c->u.sess.am[m->idx];
	for (int k = 0; k < SDA_ARGC; k++) {
		am->v[k] = c->argv[k];
		am->l[k] = c->argvlen[k];
	}
	snprintf(am->grace, sizeof(am->grace), "%lld", (long long)c->u.sess.a.grace_ms);
	am->v[SDA_COUNT] = "";
	am->l[SDA_COUNT] = 0;
	am->v[SDA_NEXT] = c->u.sess.count_s;
	am->l[SDA_NEXT] = strlen(c->u.sess.count_s);
	am->v[SDA_GRACE] = am->grace;
	am->l[SDA_GRACE] = strlen(am->grace);
	unsigned slot = rec_slot(c, am);
	if (master_call_at(m, &slot, 1, SCR_SESS_ADOPT, SDA_SLOT_ARGC, am->v, am->l, adopt_reply,
	                   c) != 0)
		master_done(c, m, 0);
}

/* The second round (SCR_SESS_ADOPT) to master i, comparing the count its
 * first round read; the call's pending count carries over to it. */
static void adopt_send(struct rl_call *c, int i)
{
	struct adopt_m *am = &c->u.sess.am[i];
	am->peeked = 0;
	for (int k = 0; k < SDA_ARGC; k++) {
		am->v[k] = c->argv[k];
		am->l[k] = c->argvlen[k];
	}
	am->v[SDA_COUNT] = am->count;
	am->l[SDA_COUNT] = strlen(am->count);
	am->v[SDA_NEXT] = c->u.sess.count_s;
	am->l[SDA_NEXT] = strlen(c->u.sess.count_s);
	if (master_call_at(master_get(i), &c->home_slot, c->homed, SCR_SESS_ADOPT, SDA_ARGC, am->v,
	                   am->l, adopt_reply, c) != 0) {
		c->pending--;
		c->st[i] = MR_FAIL;
	}
}

/* The first round's answer on one master: its adoption count. Nothing is
 * written anywhere until a majority of the counting masters answered it
 * (a RESUME that cannot reach a majority changes nothing: PROTOCOL 1.2,
 * the holds keep their fault tolerance); from then on each master that
 * answered gets the second round at once. */
static void peek_reply(struct master *m, redisReply *r, void *arg_)
{
	struct rl_call *c = arg_;
	struct sess_part *sp = &c->u.sess;
	struct adopt_m *am = &sp->am[m->idx];
	sp->peek_out--;
	long long a = -1;
	if (r && r->type == REDIS_REPLY_STRING && r->len < sizeof(am->count)) {
		char *end;
		errno = 0;
		a = strtoll(r->str, &end, 10);
		if (errno || end == r->str || *end || a < 0 || a >= LLONG_MAX / 2)
			a = -1; /* not a count lockd wrote: no adoption there */
	}
	if (c->expired || a < 0) {
		c->pending--;
		if (!c->expired) {
			if (r && r->type == REDIS_REPLY_ERROR)
				log_warn("master %s: adopt: %s", m->name, r->str);
			c->st[m->idx] = MR_FAIL;
		}
	} else {
		rl_call_progress(c);
		memcpy(am->count, r->str, r->len);
		am->count[r->len] = '\0';
		if (!sp->a.count && a >= sp->next) /* above every count the majority read */
			sp->next = a + 1;
		am->peeked = 1;
		sp->npeeked += c->counts[m->idx];
	}
	for (int i = 0; i < c->n; i++) {
		if (!sp->am[i].peeked)
			continue;
		if (quorum_reached(sp->npeeked, c->maj)) {
			if (!sp->a.count) { /* our rank: what every second round writes */
				sp->a.count = sp->next;
				snprintf(sp->count_s, sizeof(sp->count_s), "%lld", sp->a.count);
			}
			adopt_send(c, i);
		} else if (!sp->peek_out) { /* no majority answered: write nothing */
			sp->am[i].peeked = 0;
			c->st[i] = MR_FAIL;
			c->pending--;
		}
	}
	rl_check(c);
}

/* The hold's fence is the one a majority of the records hold: the grant
 * was answered only once a majority held it (redlock.c, check_acquire),
 * so the granted fence is the only one that can be. A record of another
 * fence is a master that wrote its own counter and was not corrected (its
 * answer came after the verdict, or never came). When too few answered
 * to tell, the hold is not adopted: e->seen lists each fence seen, so
 * that the LOST reaches the client whichever it was granted. */
static void agree_on_fence(const struct rl_call *c, struct rl_adopted *e, const struct rl_seen *w)
{
	uint64_t v[CONFIG_MAX_MASTERS];
	for (int i = 0; i < c->n; i++)
		v[i] = w[i].fence;
	e->fence = quorum_agreed(v, c->n, c->maj);
	e->nseen = 0;
	for (int i = 0; i < c->n; i++) {
		if (!w[i].fence)
			continue;
		if (e->fence && w[i].fence == e->fence) {
			if (w[i].holds > e->holds || !e->token[0]) {
				e->holds = w[i].holds;
				e->ttl = w[i].ttl;
				memcpy(e->token, w[i].token, sizeof(e->token));
			}
			continue;
		}
		if (e->fence)
			continue;
		if (!e->token[0]) { /* to release it with */
			e->ttl = w[i].ttl;
			memcpy(e->token, w[i].token, sizeof(e->token));
		}
		int dup = 0;
		for (int j = 0; j < e->nseen; j++)
			dup |= e->seen[j] == w[i].fence;
		if (!dup && e->nseen < RL_ADOPT_SEEN)
			e->seen[e->nseen++] = w[i].fence;
	}
	/* The count is the one a majority of the records of that fence hold:
	 * a count write was answered OK only once a majority held it, so the
	 * latest answered count is on a majority; a master that missed it
	 * (its link was cut) holds an older one, larger or smaller. Only when
	 * too few agree does the largest stand (a hold kept too long, never
	 * one let go too soon). */
	uint64_t cnt[CONFIG_MAX_MASTERS];
	for (int i = 0; i < c->n; i++)
		cnt[i] = e->fence && w[i].fence == e->fence ? w[i].holds : 0;
	uint64_t agreed = e->fence ? quorum_agreed(cnt, c->n, c->maj) : 0;
	if (agreed)
		e->holds = (uint32_t)agreed;
	if (!e->fence && e->nseen)
		log_warn("adopt: the masters disagree on the fence of %.*s and too few answered to "
		         "tell which was granted (%d fences seen): reported LOST",
		         (int)e->klen, e->key, e->nseen);
}

/* No answer came for redis.timeout_ms (redlock.c, expire_cb): a master
 * whose rounds are not over stops here and, like one whose round failed,
 * does not count as having the session for us. Its late answers end its
 * rounds (master_done) without counting. */
static void abandon_rounds(struct rl_call *c)
{
	struct sess_part *sp = &c->u.sess;
	for (int i = 0; i < c->n; i++) {
		struct adopt_m *am = &sp->am[i];
		am->stop = 1;
		if (am->counted && !am->done) {
			sp->found -= c->counts[i];
			sp->a.incomplete++;
			am->counted = 0;
			log_warn("master %s: adopt: no answer in time: not every hold was taken "
			         "over there",
			         master_get(i)->name);
		}
	}
}

/* Every counting master answered (or the time is up): found on a
 * majority, each hold ours where a majority holds it for us in time. */
static void check_adopt(struct rl_call *c)
{
	struct sess_part *sp = &c->u.sess;
	if (c->pending && !c->expired)
		return;
	if (c->expired)
		abandon_rounds(c);
	switch (quorum_verdict(sp->found, sp->none, 0, c->maj)) {
	case Q_WON:
		sp->a.result = RL_OK;
		break;
	case Q_BUSY:
		sp->a.result = RL_BUSY;
		break;
	default:
		sp->a.result = RL_QUORUM;
		break;
	}
	int64_t now = now_us();
	for (int k = 0; sp->a.result == RL_OK && k < sp->a.n; k++) {
		struct rl_adopted *e = &sp->a.holds[k];
		agree_on_fence(c, e, &sp->seen[k * c->n]);
		int64_t until = e->lease_ms > 0
		                    ? quorum_valid_until(e->lease_ms, c->start_us, now, rl_drift)
		                    : 0;
		e->start_us = c->start_us;
		e->ok = quorum_reached(e->yes, c->maj) && until > 0 && e->fence;
		e->validity_us = e->ok ? until : 0;
	}
	rl_fire_done(c);
}

struct rl_call *rl_sess_adopt(const char *sid, const char *secret, int64_t lease_ms,
                              rl_done_fn *done, void *owner)
{
	struct rl_call *c = one_record(RK_ADOPT, sid, SDA_ARGC - SDA_SECRET, strlen(secret) + 64);
	if (!c)
		return NULL;
	if (!(c->u.sess.am = calloc((size_t)c->n, sizeof(*c->u.sess.am)))) {
		rl_call_free(c);
		return NULL;
	}
	char *p = c->dbuf + c->klen, num[24];
	snprintf(num, sizeof(num), "%lld", (long long)lease_ms);
	p = arg(c, SDA_SECRET, p, secret);
	p = arg(c, SDA_INSTANCE, p, rl_instance);
	p = arg(c, SDA_LEASE, p, num);
	p = arg(c, SDA_PREFIX, p, rl_prefix);
	p = arg(c, SDA_COUNT, p, ""); /* each master's, from its first round */
	arg(c, SDA_NEXT, p, "");      /* a.count, once a majority's first rounds answered */
	c->lease_ms = lease_ms;
	c->done = done;
	c->owner = owner;
	c->check_fn = check_adopt;
	/* Two rounds per master: the record's adoption count, then the
	 * adoption if the count is still that (peek_reply). SCR_SESS_PEEK
	 * reads only the record's key. */
	c->argc = SA_KEYS + 1;
	rl_fanout(c, SCR_SESS_PEEK, peek_reply);
	c->argc = SDA_ARGC;
	for (int i = 0; i < c->n; i++)
		c->u.sess.peek_out += c->st[i] == MR_WAIT;
	return c;
}

const struct rl_adoption *rl_adoption_of(const struct rl_call *c)
{
	return &c->u.sess.a;
}
