/* ckey: see ckey.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckey.h"
#include "rdup.h"
#include "scripts.h"

/* Where a script takes the key prefix (ARGV[4] of each, as scripts.h's
 * enums say), and as what. */
enum ck_prefix {
	CKP_NONE, /* no argument carries it */
	CKP_LEN,  /* its length, in decimal (what a release announces is the key after it) */
	CKP_STR,  /* the prefix itself (an adoption names the record's holds with it) */
};
#define CK_PREFIX_ARG 4 /* ARGV[4] */

static enum ck_prefix prefix_of(int script)
{
	switch (script) {
	case SCR_RELEASE:
	case SCR_RELEASE_N:
		return CKP_LEN; /* RA_PREFIX_LEN, shared: ARGV[4] in the batch form too */
	case SCR_SESS_ADOPT:
	case SCR_SESS_ADOPT_MORE:
		return CKP_STR; /* SDA_PREFIX */
	default:
		return CKP_NONE;
	}
}

/* Where a script takes the connection epoch (ARGV[j], 0: nowhere): a
 * cluster entry's is "+E", raised by use in the slot (scripts.c,
 * LUA_GEN_BY_USE). AA_EPOCH is shared: ARGV[3] in the batch form too. */
static int epoch_arg_of(int script)
{
	switch (script) {
	case SCR_ACQUIRE:
	case SCR_ACQUIRE_N:
		return AA_EPOCH - AA_INSTANCE + 1;
	case SCR_RENEW:
		return 2; /* enum batch_arg: ARGV[2] the epoch */
	default:
		return 0;
	}
}

int ck_epoch_at(int script, int nkeys)
{
	int e = epoch_arg_of(script);
	return e > 0 ? SA_KEYS + nkeys + e - 1 : -1;
}

size_t ck_call_size(int argc, const size_t *argvlen, int nkeys)
{
	size_t n = 32 + CK_TAG_MAX; /* a prefix's length, or the prefix's tag */
	n += 2 + CK_EPOCH_MAX;      /* "+E" */
	for (int i = SA_KEYS; i < SA_KEYS + nkeys && i < argc; i++)
		n += CK_TAG_MAX + argvlen[i] + 1;
	if (SA_KEYS + nkeys + CK_PREFIX_ARG - 1 < argc)
		n += argvlen[SA_KEYS + nkeys + CK_PREFIX_ARG - 1] + 1;
	return n;
}

int ck_nkeys(int argc, const char **argv, const size_t *argvlen)
{
	if (argc <= SA_NKEYS || argvlen[SA_NKEYS] == 0 || argvlen[SA_NKEYS] > 9)
		return -1;
	int n = 0;
	for (size_t i = 0; i < argvlen[SA_NKEYS]; i++) {
		char ch = argv[SA_NKEYS][i];
		if (ch < '0' || ch > '9')
			return -1;
		n = n * 10 + (ch - '0');
	}
	return n <= argc - SA_KEYS ? n : -1;
}

/* "{T}" then s (len bytes) at *p (room left *left): where it starts, or
 * NULL when it does not fit. */
static char *put_tagged(char **p, size_t *left, const char *tag, size_t tlen, const char *s,
                        size_t len)
{
	if (*left < tlen + 2 + len + 1)
		return NULL;
	char *at = *p;
	at[0] = '{';
	memcpy(at + 1, tag, tlen);
	at[tlen + 1] = '}';
	memcpy(at + tlen + 2, s, len);
	at[tlen + 2 + len] = '\0';
	*p += tlen + 3 + len;
	*left -= tlen + 3 + len;
	return at;
}

/* The prefix argument (its length, or itself) at out[a], in its tagged
 * form: 0 or -1. */
static int put_prefix(enum ck_prefix kind, int a, const char **out, size_t *outlen, char **p,
                      size_t *left, const char *tag, size_t tlen)
{
	if (kind == CKP_STR) {
		const char *at = put_tagged(p, left, tag, tlen, out[a], outlen[a]);
		if (!at)
			return -1;
		out[a] = at;
		outlen[a] += tlen + 2;
		return 0;
	}
	char num[24];
	if (outlen[a] == 0 || outlen[a] >= sizeof(num))
		return -1;
	memcpy(num, out[a], outlen[a]);
	num[outlen[a]] = '\0';
	char *end;
	unsigned long long v = strtoull(num, &end, 10);
	if (*end != '\0' || num[0] == '-')
		return -1;
	int n = snprintf(*p, *left, "%llu", v + tlen + 2);
	if (n < 0 || (size_t)n >= *left)
		return -1;
	out[a] = *p;
	outlen[a] = (size_t)n;
	*p += n + 1;
	*left -= (size_t)n + 1;
	return 0;
}

int ck_call(int script, unsigned slot, int argc, const char **argv, const size_t *argvlen,
            const char **out, size_t *outlen, char *buf, size_t cap)
{
	int nkeys = ck_nkeys(argc, argv, argvlen);
	if (nkeys < 0 || slot >= KTAG_SLOTS)
		return -1;
	const char *tag = ktag_of_slot(slot);
	size_t tlen = strlen(tag), left = cap;
	char *p = buf;

	memcpy(out, argv, sizeof(*out) * (size_t)argc);
	memcpy(outlen, argvlen, sizeof(*outlen) * (size_t)argc);
	for (int i = SA_KEYS; i < SA_KEYS + nkeys; i++) {
		/* "" (no record) becomes "{T}": Redis Cluster hashes "" to
		 * slot 0 like any name, and refuses a call whose keys are of
		 * two slots (CROSSSLOT) */
		if (!(out[i] = put_tagged(&p, &left, tag, tlen, argv[i], argvlen[i])))
			return -1;
		outlen[i] = argvlen[i] + tlen + 2;
	}
	enum ck_prefix kind = prefix_of(script);
	int a = SA_KEYS + nkeys + CK_PREFIX_ARG - 1;
	if (kind != CKP_NONE &&
	    (a >= argc || put_prefix(kind, a, out, outlen, &p, &left, tag, tlen) != 0))
		return -1;
	a = ck_epoch_at(script, nkeys);
	if (a > 0) { /* "E" becomes "+E" */
		if (a >= argc || argvlen[a] == 0 || argvlen[a] > CK_EPOCH_MAX ||
		    left < argvlen[a] + 2)
			return -1;
		p[0] = '+';
		memcpy(p + 1, argv[a], argvlen[a]);
		p[argvlen[a] + 1] = '\0';
		out[a] = p;
		outlen[a] = argvlen[a] + 1;
	}
	return 0;
}

static const struct ck_cols renew_cols = {RNA_KEYS, 1, 2, RNA_ARGV, 0, 0, 0, 1};
static const struct ck_cols release_many_cols = {RMA_KEYS, 0, RMA_FIXED, RMA_ARGV, 0, 1, 0, 1};
static const struct ck_cols raise_many_cols = {1, 0, 0, 1, 2, 1, 1, 1};
/* SESS_TOUCH: n records, the instance, n expiries; two numbers per record */
static const struct ck_cols touch_cols = {1, 0, 1, 1, 0, 0, 0, 2};

const struct ck_cols *ck_cols_of(int script)
{
	switch (script) {
	case SCR_RENEW:
		return &renew_cols;
	case SCR_RELEASE_MANY:
		return &release_many_cols;
	case SCR_RAISE_MANY:
		return &raise_many_cols;
	case SCR_SESS_TOUCH:
		return &touch_cols;
	default:
		return NULL;
	}
}

void ck_parts_free(struct ck_part *parts, int nparts)
{
	for (int k = 0; parts && k < nparts; k++) {
		free(parts[k].items);
		free(parts[k].argv);
		free(parts[k].argvlen);
	}
	free(parts);
}

/* Part k's arguments: the fixed ones as they are, each column's elements
 * of its items (item_of[j], j < m) in turn. */
static int fill_part(const struct ck_cols *cs, int n, struct ck_part *pt, const char **argv,
                     const size_t *argvlen)
{
	int m = pt->nitems, nk = cs->item_keys * m + cs->fixed_keys;
	pt->argc = SA_KEYS + nk + cs->args_before + cs->item_args * m + cs->args_after;
	pt->argv = malloc(sizeof(*pt->argv) * (size_t)pt->argc);
	pt->argvlen = malloc(sizeof(*pt->argvlen) * (size_t)pt->argc);
	if (!pt->argv || !pt->argvlen)
		return -1;
	int o = 0;
	for (; o < SA_KEYS; o++) {
		pt->argv[o] = argv[o];
		pt->argvlen[o] = argvlen[o];
	}
	pt->argvlen[SA_NKEYS] = (size_t)snprintf(pt->nkeys, sizeof(pt->nkeys), "%d", nk);
	pt->argv[SA_NKEYS] = pt->nkeys;
	int base = SA_KEYS; /* the whole call's column start */
	for (int c = 0; c < cs->item_keys; c++, base += n)
		for (int j = 0; j < m; j++, o++) {
			pt->argv[o] = argv[base + pt->items[j]];
			pt->argvlen[o] = argvlen[base + pt->items[j]];
		}
	for (int f = 0; f < cs->fixed_keys + cs->args_before; f++, o++, base++) {
		pt->argv[o] = argv[base];
		pt->argvlen[o] = argvlen[base];
	}
	for (int c = 0; c < cs->item_args; c++, base += n)
		for (int j = 0; j < m; j++, o++) {
			pt->argv[o] = argv[base + pt->items[j]];
			pt->argvlen[o] = argvlen[base + pt->items[j]];
		}
	for (int f = 0; f < cs->args_after; f++, o++, base++) {
		pt->argv[o] = argv[base];
		pt->argvlen[o] = argvlen[base];
	}
	return 0;
}

int ck_group(int n, const unsigned *slots, struct ck_part **parts)
{
	struct ck_part *pt = calloc((size_t)n, sizeof(*pt));
	int np = 0;
	*parts = NULL;
	if (!pt)
		return -1;
	for (int i = 0; i < n; i++) { /* parts in the order of their first items */
		int k = 0;
		while (k < np && pt[k].slot != slots[i])
			k++;
		if (k == np) {
			if (!(pt[k].items = malloc(sizeof(int) * (size_t)n))) {
				ck_parts_free(pt, np);
				return -1;
			}
			pt[k].slot = slots[i];
			np++;
		}
		pt[k].items[pt[k].nitems++] = i;
	}
	*parts = pt;
	return np;
}

int ck_split(int script, int n, const unsigned *slots, int argc, const char **argv,
             const size_t *argvlen, struct ck_part **parts)
{
	const struct ck_cols *cs = ck_cols_of(script);
	*parts = NULL;
	if (!cs || n <= 0 ||
	    argc != SA_KEYS + (cs->item_keys + cs->item_args) * n + cs->fixed_keys +
	                cs->args_before + cs->args_after ||
	    ck_nkeys(argc, argv, argvlen) != cs->item_keys * n + cs->fixed_keys)
		return -1;
	struct ck_part *pt;
	int np = ck_group(n, slots, &pt);
	if (np < 0)
		return -1;
	for (int k = 0; k < np; k++)
		if (fill_part(cs, n, &pt[k], argv, argvlen) != 0) {
			ck_parts_free(pt, np);
			return -1;
		}
	*parts = pt;
	return np;
}

static redisReply *new_reply(int type)
{
	redisReply *r = calloc(1, sizeof(*r));
	if (r)
		r->type = type;
	return r;
}

static redisReply *join_sum(int nparts, redisReply *const *replies, int all)
{
	long long sum = 0;
	int answered = 0;
	for (int k = 0; k < nparts; k++)
		if (replies[k] && replies[k]->type == REDIS_REPLY_INTEGER) {
			sum += replies[k]->integer;
			answered++;
		}
	redisReply *r =
	    answered && (!all || answered == nparts) ? new_reply(REDIS_REPLY_INTEGER) : NULL;
	if (r)
		r->integer = sum;
	return r;
}

redisReply *ck_join(int script, int n, const struct ck_part *parts, int nparts,
                    redisReply *const *replies)
{
	const struct ck_cols *cs = ck_cols_of(script);
	if (!cs || n <= 0)
		return NULL;
	if (cs->sum)
		return join_sum(nparts, replies, cs->all);
	redisReply *r = new_reply(REDIS_REPLY_ARRAY);
	int answered = 0, per = cs->per_item > 0 ? cs->per_item : 1;
	size_t total = (size_t)n * (size_t)per;
	if (!r || !(r->element = calloc(total, sizeof(*r->element)))) {
		free(r);
		return NULL;
	}
	r->elements = total;
	for (int k = 0; k < nparts; k++) {
		const redisReply *e = replies[k];
		int whole = e && e->type == REDIS_REPLY_ARRAY &&
		            e->elements == (size_t)parts[k].nitems * (size_t)per;
		answered += whole;
		for (int j = 0; whole && j < parts[k].nitems; j++) {
			int i = parts[k].items[j];
			for (int q = 0; q < per; q++) {
				size_t at = (size_t)i * (size_t)per + (size_t)q;
				if (i < 0 || i >= n || r->element[at] ||
				    !(r->element[at] = rdup_reply(e->element[(size_t)j * per + q])))
					goto fail;
			}
		}
	}
	for (size_t i = 0; i < total; i++)
		if (!r->element[i] && !(r->element[i] = new_reply(REDIS_REPLY_NIL)))
			goto fail;
	if (answered)
		return r;
fail:
	freeReplyObject(r);
	return NULL;
}
