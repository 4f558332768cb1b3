/* rlwho: the redlock call of WHO (protocol 1.4), on the call machinery of
 * redlock.c (redlock_int.h): who holds a key, read from every master and
 * counted as STATUS and LEADER count, then the names of the lockd that
 * hold it. It only reads.
 *
 * Two rounds. The first is SCR_WHO on every master (WHO_CHUNK permits a
 * call: a large limits.max_permits takes several calls per master, each
 * sent once the one before answered, so that none blocks a master for
 * long); its verdict waits for every master or the call's expiry, as
 * LEADER's does: a hold counts when a majority of the counting masters
 * hold its token in its place. The second asks every
 * master that is up for the names of the other instances among the
 * holders ("P name INSTANCE", which each lockd writes once per connection:
 * master.c): the first answer that names an instance names it (each lockd
 * writes the same name on every master), and the verdict goes out once
 * every instance is named, every master answered, or the call expired
 * while the names were asked. A name read is never counted: it says who,
 * not whether. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "cluster.h"
#include "ktag.h"
#include "log.h"
#include "master.h"
#include "quorum.h"
#include "redlock_int.h"

int rl_token_ours(const char *token)
{
	return memcmp(token, rl_instance, INSTANCE_LEN) == 0;
}

const struct rl_who *rl_who_of(const struct rl_call *c)
{
	return &c->u.who.v;
}

static int add_seen(struct who_part *w, int m, int place, uint32_t permit, const redisReply *t)
{
	if (t->type != REDIS_REPLY_STRING || t->len != TOKEN_LEN)
		return 0; /* "" (free), or not a token of lockd's */
	if (w->nseen == w->cap) {
		int cap = w->cap ? 2 * w->cap : 16;
		struct who_seen *s = realloc(w->seen, sizeof(*s) * (size_t)cap);
		if (!s)
			return -1;
		w->seen = s;
		w->cap = cap;
	}
	struct who_seen *s = &w->seen[w->nseen++];
	memcpy(s->token, t->str, TOKEN_LEN);
	s->token[TOKEN_LEN] = '\0';
	s->place = (unsigned char)place;
	s->m = (unsigned char)m;
	s->permit = permit;
	return 0;
}

/* One SCR_WHO's answer: {lock token, counter, {shared tokens}, {i, token,
 * ...}, ms left on the lock's delay}; the first three and the last are
 * read by every call, taken from the first. */
static int take_read(struct rl_call *c, int i, const redisReply *r, int first)
{
	struct who_part *w = &c->u.who;
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 5 ||
	    r->element[4]->type != REDIS_REPLY_INTEGER ||
	    r->element[2]->type != REDIS_REPLY_ARRAY || r->element[3]->type != REDIS_REPLY_ARRAY ||
	    r->element[3]->elements % 2)
		return -1;
	if (first) {
		const redisReply *ctr = r->element[1];
		if (ctr->type == REDIS_REPLY_STRING)
			w->counter[i] = strtoull(ctr->str, NULL, 10);
		w->delay_left[i] = r->element[4]->integer > 0 ? r->element[4]->integer : 0;
		if (add_seen(w, i, 0, 0, r->element[0]))
			return -1;
		for (size_t k = 0; k < r->element[2]->elements; k++)
			if (add_seen(w, i, 2, 0, r->element[2]->element[k]))
				return -1;
	}
	const redisReply *p = r->element[3];
	for (size_t k = 0; k + 1 < p->elements; k += 2) {
		if (p->element[k]->type != REDIS_REPLY_INTEGER || p->element[k]->integer < 1)
			return -1;
		if (add_seen(w, i, 1, (uint32_t)p->element[k]->integer, p->element[k + 1]))
			return -1;
	}
	return 0;
}

static void read_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	struct who_part *w = &c->u.who;
	int i = m->idx, k = w->answered[i]++;
	c->pending--;
	if (c->expired || c->st[i] != MR_WAIT) {
		rl_check(c); /* the verdict was given without this master */
		return;
	}
	if (take_read(c, i, r, k == 0) != 0) {
		if (r && r->type == REDIS_REPLY_ERROR)
			log_warn("master %s: who: %s", m->name, r->str);
		c->st[i] = MR_FAIL;
	} else if (k + 1 == w->nchunks) {
		c->st[i] = MR_YES;
	} else if (master_call_at(m, &w->slot, 1, SCR_WHO, WHA_ARGC,
	                          w->cargv + (size_t)(k + 1) * WHA_ARGC,
	                          w->clen + (size_t)(k + 1) * WHA_ARGC, read_reply, c) == 0) {
		c->pending++; /* the next permits, now that these are read */
	} else {
		c->st[i] = MR_FAIL;
	}
	rl_check(c);
}

static int seen_cmp(const void *a, const void *b)
{
	const struct who_seen *x = a, *y = b;
	if (x->place != y->place)
		return x->place < y->place ? -1 : 1;
	if (x->permit != y->permit)
		return x->permit < y->permit ? -1 : 1;
	int t = memcmp(x->token, y->token, TOKEN_LEN);
	return t ? t : (x->m > y->m) - (x->m < y->m);
}

/* The holds that need of the counting masters that answered hold (need:
 * quorum_read_threshold, a majority when all answered). */
static int count_holds(struct rl_call *c, int need)
{
	struct who_part *w = &c->u.who;
	int k = 0;
	for (int j = 0; j < w->nseen; j++) /* only the masters that count, whole */
		if (c->counts[w->seen[j].m] && c->st[w->seen[j].m] == MR_YES)
			w->seen[k++] = w->seen[j];
	w->nseen = k;
	if (w->nseen > 1) /* seen is NULL while nothing was seen */
		qsort(w->seen, (size_t)w->nseen, sizeof(*w->seen), seen_cmp);
	w->v.holds = calloc((size_t)w->nseen + 1, sizeof(*w->v.holds));
	if (!w->v.holds)
		return -1;
	for (int j = 0, run; j < w->nseen; j += run) {
		const struct who_seen *s = &w->seen[j];
		for (run = 1; j + run < w->nseen; run++) {
			const struct who_seen *t = &w->seen[j + run];
			if (t->place != s->place || t->permit != s->permit ||
			    memcmp(t->token, s->token, TOKEN_LEN) != 0)
				break;
		}
		if (run < need)
			continue;
		struct rl_who_hold *h = &w->v.holds[w->v.n++];
		memcpy(h->token, s->token, sizeof(h->token));
		h->place = s->place == 0 ? 'x' : s->place == 1 ? 'p' : 's';
		h->permit = s->permit;
	}
	return 0;
}

/* A name as the key name allows it (cfg.c): it becomes a word of a line. */
static int name_ok(const redisReply *e)
{
	if (e->type != REDIS_REPLY_STRING || e->len < 1 || e->len > CFG_NAME_MAX)
		return 0;
	for (size_t k = 0; k < e->len; k++)
		if ((unsigned char)e->str[k] < 0x21 || (unsigned char)e->str[k] > 0x7e)
			return 0;
	return 1;
}

static void name_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	struct who_part *w = &c->u.who;
	c->pending--;
	w->names_out--;
	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == (size_t)w->ninst) {
		for (int k = 0; k < w->ninst; k++) {
			if (!w->names[k] && name_ok(r->element[k]))
				w->names[k] = strdup(r->element[k]->str);
		}
	} else if (r && r->type == REDIS_REPLY_ERROR) {
		log_warn("master %s: who: the holders' names: %s", m->name, r->str);
	}
	rl_check(c);
}

/* The MGET's keys as a cluster entry keeps them (master.c, send_name):
 * each in its own slot, tagged. 0, or -1 (out of memory). */
static int tag_names(struct who_part *w, size_t klen)
{
	size_t tk = klen + KTAG_LEN_MAX + 3;
	w->targv = malloc(sizeof(*w->targv) * ((size_t)w->ninst + 1));
	w->tlen = malloc(sizeof(*w->tlen) * ((size_t)w->ninst + 1));
	w->tbuf = malloc((size_t)w->ninst * tk + 1);
	w->tslots = malloc(sizeof(*w->tslots) * (size_t)w->ninst);
	if (!w->targv || !w->tlen || !w->tbuf || !w->tslots)
		return -1;
	w->targv[0] = "MGET";
	w->tlen[0] = 4;
	for (int k = 0; k < w->ninst; k++) {
		unsigned s = csl_keyslot(w->nargv[k + 1], w->nlen[k + 1]);
		char *key = w->tbuf + (size_t)k * tk;
		int n = snprintf(key, tk, "{%s}%.*s", ktag_of_slot(s), (int)w->nlen[k + 1],
		                 w->nargv[k + 1]);
		if (n < 0 || (size_t)n >= tk)
			return -1;
		w->targv[k + 1] = key;
		w->tlen[k + 1] = (size_t)n;
		w->tslots[k] = s;
	}
	return 0;
}

/* The instances (not this lockd's) of the holds, and an MGET of their
 * names to every master that is up; 0 when there is nothing to ask. */
static int ask_names(struct rl_call *c)
{
	struct who_part *w = &c->u.who;
	size_t klen = rl_prefix_len + 8 + INSTANCE_LEN + 1;
	int n = w->v.n;
	w->insts = malloc((size_t)n * (INSTANCE_LEN + 1) + 1);
	w->names = calloc((size_t)n + 1, sizeof(*w->names));
	w->nargv = malloc(sizeof(*w->nargv) * ((size_t)n + 1));
	w->nlen = malloc(sizeof(*w->nlen) * ((size_t)n + 1));
	w->nbuf = malloc((size_t)n * klen + 1);
	if (!w->insts || !w->names || !w->nargv || !w->nlen || !w->nbuf)
		return 0;
	for (int k = 0; k < n; k++) {
		const char *t = w->v.holds[k].token;
		int j;
		if (rl_token_ours(t))
			continue;
		for (j = 0; j < w->ninst; j++)
			if (memcmp(w->insts + (size_t)j * (INSTANCE_LEN + 1), t, INSTANCE_LEN) == 0)
				break;
		if (j < w->ninst)
			continue;
		char *dst = w->insts + (size_t)w->ninst * (INSTANCE_LEN + 1);
		memcpy(dst, t, INSTANCE_LEN);
		dst[INSTANCE_LEN] = '\0';
		char *key = w->nbuf + (size_t)w->ninst * klen;
		w->nargv[w->ninst + 1] = key;
		w->nlen[w->ninst + 1] = rl_name_key_at(key, klen, t);
		w->ninst++;
	}
	if (!w->ninst)
		return 0;
	w->nargv[0] = "MGET";
	w->nlen[0] = 4;
	w->late = c->expired;
	int tagged = masters_any_cluster() && tag_names(w, klen) == 0;
	for (int i = 0; i < c->n; i++) {
		struct master *m = master_get(i);
		int sent =
		    m->cl ? tagged && master_call_at(m, w->tslots, w->ninst, -1, w->ninst + 1,
		                                     w->targv, w->tlen, name_reply, c) == 0
		          : master_call(m, -1, w->ninst + 1, w->nargv, w->nlen, name_reply, c) == 0;
		if (sent) {
			w->names_out++;
			c->pending++;
		}
	}
	return w->names_out;
}

static void name_holds(struct who_part *w)
{
	for (int k = 0; k < w->v.n; k++) {
		struct rl_who_hold *h = &w->v.holds[k];
		for (int j = 0; !rl_token_ours(h->token) && j < w->ninst; j++)
			if (memcmp(w->insts + (size_t)j * (INSTANCE_LEN + 1), h->token,
			           INSTANCE_LEN) == 0)
				h->name = w->names[j];
	}
}

static int all_named(const struct who_part *w)
{
	for (int j = 0; j < w->ninst; j++)
		if (!w->names[j])
			return 0;
	return 1;
}

static void check_who(struct rl_call *c)
{
	struct who_part *w = &c->u.who;
	if (c->done_fired)
		return;
	if (w->naming) {
		/* the names: all of them, every master answered, or time is up
		   (unless the round began after it was) */
		if (w->names_out && !all_named(w) && !(c->expired && !w->late))
			return;
		name_holds(w);
		rl_fire_done(c);
		return;
	}
	if (c->pending && !c->expired)
		return;
	int answered = rl_count_st(c, c->st, MR_YES);
	int t = quorum_read_threshold(answered, c->n, c->maj);
	w->v.ok = quorum_reached(answered, c->maj);
	for (int i = 0; i < c->n; i++)
		if (c->counts[i] && c->st[i] == MR_YES && w->counter[i] > w->v.fence)
			w->v.fence = w->counter[i];
	if (w->v.ok && count_holds(c, t) != 0)
		w->v.ok = 0; /* out of memory: answered as no majority */
	/* In its lock-delay (1.4) where t of the counting masters that
	 * answered say so: the time that t of them keep it at least. */
	int64_t dl[CONFIG_MAX_MASTERS];
	int nd = 0;
	for (int i = 0; i < c->n; i++)
		if (c->counts[i] && c->st[i] == MR_YES && w->delay_left[i] > 0)
			dl[nd++] = w->delay_left[i];
	if (w->v.ok && nd >= t)
		w->v.delayed_ms = quorum_kth_largest(dl, nd, t);
	w->naming = 1;
	if (w->v.ok && ask_names(c))
		return;
	rl_fire_done(c);
}

/* The arguments of every SCR_WHO call: the keys once (in dbuf), then per
 * call its range of permits. */
static int lay_out(struct rl_call *c, const char *key, size_t klen, uint32_t permits)
{
	struct who_part *w = &c->u.who;
	uint32_t last = permits > 1 ? permits - 1 : 0; /* permits 1 .. last */
	w->nchunks = last ? (int)((last + WHO_CHUNK - 1) / WHO_CHUNK) : 1;
	if (rl_dyn_args(c, WHA_ARGC, 3 * (rl_prefix_len + klen + 8) + 16))
		return -1;
	w->cargv = malloc(sizeof(*w->cargv) * WHA_ARGC * (size_t)w->nchunks);
	w->clen = malloc(sizeof(*w->clen) * WHA_ARGC * (size_t)w->nchunks);
	w->cbuf = malloc((size_t)w->nchunks * 24);
	if (!w->cargv || !w->clen || !w->cbuf)
		return -1;
	char *p = c->dbuf;
	static const char *const sfx[] = {"", " shared", " fence"};
	c->dargv[WHA_NKEYS] = "3";
	c->dargvlen[WHA_NKEYS] = 1;
	for (int k = 0; k < 3; k++) {
		c->dargv[WHA_LOCK + k] = p;
		c->dargvlen[WHA_LOCK + k] = rl_key_at(p, key, klen, sfx[k]);
		p += c->dargvlen[WHA_LOCK + k] + 1;
	}
	c->keyp = c->dargv[WHA_LOCK] + rl_prefix_len;
	c->klen = klen;
	c->u.who.slot = csl_keyslot(c->keyp, c->klen); /* a cluster entry's (master_call_at) */
	for (int k = 0; k < w->nchunks; k++) {
		const char **a = w->cargv + (size_t)k * WHA_ARGC;
		size_t *l = w->clen + (size_t)k * WHA_ARGC;
		char *num = w->cbuf + (size_t)k * 24;
		uint32_t from = 1 + (uint32_t)k * WHO_CHUNK, to = from + WHO_CHUNK;
		if (to > last + 1)
			to = last + 1;
		if (from > to)
			from = to;
		memcpy(a, c->dargv, sizeof(*a) * WHA_FROM);
		memcpy(l, c->dargvlen, sizeof(*l) * WHA_FROM);
		l[WHA_FROM] = (size_t)sprintf(num, "%u", from);
		a[WHA_FROM] = num;
		a[WHA_TO] = num + l[WHA_FROM] + 1;
		l[WHA_TO] = (size_t)sprintf(num + l[WHA_FROM] + 1, "%u", to);
	}
	c->dargv[WHA_FROM] = w->cargv[WHA_FROM];
	c->dargvlen[WHA_FROM] = w->clen[WHA_FROM];
	c->dargv[WHA_TO] = w->cargv[WHA_TO];
	c->dargvlen[WHA_TO] = w->clen[WHA_TO];
	return 0;
}

struct rl_call *rl_who(const char *key, size_t klen, uint32_t permits, rl_done_fn *done,
                       void *owner)
{
	struct rl_call *c = rl_call_new(RK_WHO, 0);
	if (!c)
		return NULL;
	if (lay_out(c, key, klen, permits)) {
		rl_call_free(c);
		return NULL;
	}
	c->rel_fired = 1; /* it answers through done */
	c->done = done;
	c->owner = owner;
	c->check_fn = check_who;
	rl_fanout(c, SCR_WHO, read_reply); /* the first call; read_reply sends the next */
	return c;
}
