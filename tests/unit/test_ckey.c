/* Unit tests of src/ckey.c on argument vectors and replies built here:
 * the cluster form of one call (every key tagged with its slot's tag,
 * nothing else changed but the prefix argument), and a call over items of
 * several slots split per slot and its replies joined in item order. The
 * live cluster test (test_cluster_scripts.c) runs the same forms of the
 * real scripts on a Redis Cluster. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckey.h"
#include "cluster.h"
#include "scripts.h"
#include "units.h"

#define MAXA 64

struct vec {
	int argc;
	const char *argv[MAXA];
	size_t len[MAXA];
};

static void push(struct vec *v, const char *s)
{
	ck_assert_int_lt(v->argc, MAXA);
	v->argv[v->argc] = s;
	v->len[v->argc++] = strlen(s);
}

static void head(struct vec *v, const char *nkeys)
{
	v->argc = 0;
	push(v, "EVALSHA");
	push(v, "sha");
	push(v, nkeys);
}

/* out[i] as a C string (ck_call's strings are NUL-terminated, but check
 * the length it gives too). */
static const char *at(const char **out, const size_t *len, int i)
{
	ck_assert_uint_eq(strlen(out[i]), len[i]);
	return out[i];
}

START_TEST(ckey_acquire_tags_every_key)
{
	ck_assert_int_eq(ktag_init(), 0);
	struct vec v;
	head(&v, "3");
	push(&v, "P gen 0123456789abcdef");
	push(&v, "P {a}b}");
	push(&v, "P session S1");
	for (int i = 0; i < AA_ARGC - AA_INSTANCE; i++)
		push(&v, i == 2 ? "42" : "arg");
	unsigned slot = csl_keyslot("{a}b}", 5); /* the name's slot: "a" */
	const char *t = ktag_of_slot(slot);
	char want[64], buf[512];
	const char *out[MAXA];
	size_t len[MAXA];

	ck_assert_uint_le(ck_call_size(v.argc, v.len, 3), sizeof(buf));
	ck_assert_int_eq(ck_call(SCR_ACQUIRE, slot, v.argc, v.argv, v.len, out, len, buf,
	                         ck_call_size(v.argc, v.len, 3)),
	                 0);
	snprintf(want, sizeof(want), "{%s}P {a}b}", t);
	ck_assert_str_eq(at(out, len, AA_KEY), want);
	snprintf(want, sizeof(want), "{%s}P gen 0123456789abcdef", t);
	ck_assert_str_eq(at(out, len, AA_GEN), want);
	snprintf(want, sizeof(want), "{%s}P session S1", t);
	ck_assert_str_eq(at(out, len, AA_SESSION), want);
	/* every key is of the name's slot, whatever braces the name holds */
	for (int i = AA_GEN; i <= AA_SESSION; i++)
		ck_assert_uint_eq(csl_keyslot(out[i], len[i]), slot);
	/* the epoch "+E": raised by use in the slot */
	ck_assert_str_eq(at(out, len, AA_EPOCH), "+42");
	/* the rest is passed as it is, the same pointers */
	for (int i = 0; i < v.argc; i++)
		if ((i < AA_GEN || i > AA_SESSION) && i != AA_EPOCH)
			ck_assert_ptr_eq(out[i], v.argv[i]);
}
END_TEST

START_TEST(ckey_empty_record_tagged)
{
	ck_assert_int_eq(ktag_init(), 0);
	struct vec v;
	head(&v, "2");
	push(&v, "P k");
	push(&v, "");
	for (int i = 0; i < RA_ARGC - RA_INSTANCE; i++)
		push(&v, i == RA_PREFIX_LEN - RA_INSTANCE ? "2" : "x");
	char buf[256];
	const char *out[MAXA];
	size_t len[MAXA];
	unsigned slot = csl_keyslot("k", 1);
	ck_assert_int_eq(
	    ck_call(SCR_RELEASE, slot, v.argc, v.argv, v.len, out, len, buf, sizeof(buf)), 0);
	char tagged[16];
	snprintf(tagged, sizeof(tagged), "{%s}", ktag_of_slot(slot));
	ck_assert_str_eq(at(out, len, RA_SESSION), tagged); /* no record: of the key's slot */
	/* what a release announces is the key after the prefix: the tag
	 * counts as part of it ("{T}P " is 2 + |T| + 2 bytes) */
	char want[24];
	snprintf(want, sizeof(want), "%zu", 2 + strlen(ktag_of_slot(slot)) + 2);
	ck_assert_str_eq(at(out, len, RA_PREFIX_LEN), want);
	const char *k = out[RA_KEY];
	ck_assert_str_eq(k + atoi(out[RA_PREFIX_LEN]), "k");
}
END_TEST

START_TEST(ckey_adopt_prefix)
{
	ck_assert_int_eq(ktag_init(), 0);
	struct vec v;
	head(&v, "1");
	push(&v, "P session S1");
	push(&v, "secret");
	push(&v, "inst");
	push(&v, "1000");
	push(&v, "P ");
	push(&v, "1");
	push(&v, "2");
	char buf[256], want[32];
	const char *out[MAXA];
	size_t len[MAXA];
	ck_assert_int_eq(
	    ck_call(SCR_SESS_ADOPT, 7, v.argc, v.argv, v.len, out, len, buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want), "{%s}P ", ktag_of_slot(7));
	ck_assert_str_eq(at(out, len, SDA_PREFIX), want);
	snprintf(want, sizeof(want), "{%s}P session S1", ktag_of_slot(7));
	ck_assert_str_eq(at(out, len, SA_KEYS), want);
}
END_TEST

START_TEST(ckey_call_refuses)
{
	ck_assert_int_eq(ktag_init(), 0);
	struct vec v;
	char buf[256];
	const char *out[MAXA];
	size_t len[MAXA];
	head(&v, "3"); /* three keys, two given */
	push(&v, "P a");
	push(&v, "P b");
	ck_assert_int_eq(ck_call(SCR_STATUS, 1, v.argc, v.argv, v.len, out, len, buf, sizeof(buf)),
	                 -1);
	head(&v, "x1");
	push(&v, "P a");
	ck_assert_int_eq(ck_call(SCR_STATUS, 1, v.argc, v.argv, v.len, out, len, buf, sizeof(buf)),
	                 -1);
	head(&v, "1");
	push(&v, "P a");
	ck_assert_int_eq(
	    ck_call(SCR_STATUS, KTAG_SLOTS, v.argc, v.argv, v.len, out, len, buf, sizeof(buf)), -1);
	ck_assert_int_eq(ck_call(SCR_STATUS, 1, v.argc, v.argv, v.len, out, len, buf, 5), -1);
	/* a release without its prefix argument */
	head(&v, "1");
	push(&v, "P a");
	push(&v, "i");
	ck_assert_int_eq(ck_call(SCR_RELEASE, 1, v.argc, v.argv, v.len, out, len, buf, sizeof(buf)),
	                 -1);
}
END_TEST

/* A renewal of 5 items over slots A B A C B: KEYS lock, shared, record
 * per item, then the epoch's key; ARGV lease, epoch, then token and kind
 * per item. */
static void renew_call(struct vec *v, char names[][16])
{
	head(v, "16");
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < 5; i++) {
			snprintf(names[c * 5 + i], 16, "%c%d", "lsr"[c], i);
			push(v, names[c * 5 + i]);
		}
	push(v, "gen");
	push(v, "lease");
	push(v, "epoch");
	for (int c = 0; c < 2; c++)
		for (int i = 0; i < 5; i++) {
			snprintf(names[15 + c * 5 + i], 16, "%c%d", "tk"[c], i);
			push(v, names[15 + c * 5 + i]);
		}
}

START_TEST(ckey_split_renew)
{
	struct vec v;
	char names[25][16];
	renew_call(&v, names);
	unsigned slots[5] = {10, 20, 10, 30, 20};
	struct ck_part *p;
	int np = ck_split(SCR_RENEW, 5, slots, v.argc, v.argv, v.len, &p);
	ck_assert_int_eq(np, 3);
	/* parts in the order of their first items; items in their order */
	ck_assert_uint_eq(p[0].slot, 10);
	ck_assert_int_eq(p[0].nitems, 2);
	ck_assert_int_eq(p[0].items[0], 0);
	ck_assert_int_eq(p[0].items[1], 2);
	ck_assert_uint_eq(p[1].slot, 20);
	ck_assert_uint_eq(p[2].slot, 30);
	ck_assert_int_eq(p[2].nitems, 1);
	const char *want0[] = {"7",   "l0",    "l2",    "s0", "s2", "r0", "r2",
	                       "gen", "lease", "epoch", "t0", "t2", "k0", "k2"};
	ck_assert_int_eq(p[0].argc, SA_NKEYS + 14);
	for (int i = 0; i < 14; i++) {
		ck_assert_str_eq(p[0].argv[SA_NKEYS + i], want0[i]);
		ck_assert_uint_eq(p[0].argvlen[SA_NKEYS + i], strlen(want0[i]));
	}
	const char *want2[] = {"4", "l3", "s3", "r3", "gen", "lease", "epoch", "t3", "k3"};
	ck_assert_int_eq(p[2].argc, SA_NKEYS + 9);
	for (int i = 0; i < 9; i++)
		ck_assert_str_eq(p[2].argv[SA_NKEYS + i], want2[i]);

	/* replies joined in item order; part 1 (items 1 and 4) failed */
	redisReply e[4] = {{.type = REDIS_REPLY_INTEGER, .integer = 1},
	                   {.type = REDIS_REPLY_INTEGER, .integer = 2},
	                   {.type = REDIS_REPLY_INTEGER, .integer = 3}};
	redisReply *el0[] = {&e[0], &e[1]}, *el2[] = {&e[2]};
	redisReply r0 = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = el0};
	redisReply r2 = {.type = REDIS_REPLY_ARRAY, .elements = 1, .element = el2};
	redisReply *replies[3] = {&r0, NULL, &r2};
	redisReply *j = ck_join(SCR_RENEW, 5, p, np, replies);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(j->type, REDIS_REPLY_ARRAY);
	ck_assert_uint_eq(j->elements, 5);
	long long want[5] = {1, -1, 2, 3, -1}; /* -1: nil, a "no" */
	for (int i = 0; i < 5; i++) {
		if (want[i] < 0) {
			ck_assert_int_eq(j->element[i]->type, REDIS_REPLY_NIL);
			continue;
		}
		ck_assert_int_eq(j->element[i]->type, REDIS_REPLY_INTEGER);
		ck_assert_int_eq(j->element[i]->integer, want[i]);
	}
	freeReplyObject(j);

	/* a part that answers the wrong shape counts as failed; none left */
	redisReply err = {.type = REDIS_REPLY_ERROR, .str = "TRYAGAIN", .len = 8};
	redisReply *bad[3] = {&err, NULL, &r0}; /* r0 has 2 elements, part 2 one item */
	ck_assert_ptr_null(ck_join(SCR_RENEW, 5, p, np, bad));
	ck_parts_free(p, np);
}
END_TEST

/* SESS_TOUCH over 3 records, two of one slot: split per slot (the
 * instance in each part), and its two numbers per record joined in
 * record order, nil for a part that failed or answered a short array. */
START_TEST(ckey_split_touch)
{
	struct vec v;
	head(&v, "3");
	push(&v, "r0");
	push(&v, "r1");
	push(&v, "r2");
	push(&v, "inst");
	push(&v, "e0");
	push(&v, "e1");
	push(&v, "e2");
	unsigned slots[3] = {7, 9, 7};
	struct ck_part *p;
	int np = ck_split(SCR_SESS_TOUCH, 3, slots, v.argc, v.argv, v.len, &p);
	ck_assert_int_eq(np, 2);
	const char *want0[] = {"2", "r0", "r2", "inst", "e0", "e2"};
	ck_assert_int_eq(p[0].argc, SA_NKEYS + 6);
	for (int i = 0; i < 6; i++)
		ck_assert_str_eq(p[0].argv[SA_NKEYS + i], want0[i]);
	const char *want1[] = {"1", "r1", "inst", "e1"};
	ck_assert_int_eq(p[1].argc, SA_NKEYS + 4);
	for (int i = 0; i < 4; i++)
		ck_assert_str_eq(p[1].argv[SA_NKEYS + i], want1[i]);
	redisReply e[6];
	for (int i = 0; i < 6; i++)
		e[i] = (redisReply){.type = REDIS_REPLY_INTEGER, .integer = 10 + i};
	redisReply *el0[] = {&e[0], &e[1], &e[2], &e[3]}, *el1[] = {&e[4], &e[5]};
	redisReply r0 = {.type = REDIS_REPLY_ARRAY, .elements = 4, .element = el0};
	redisReply r1 = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = el1};
	redisReply *replies[2] = {&r0, &r1};
	redisReply *j = ck_join(SCR_SESS_TOUCH, 3, p, np, replies);
	ck_assert_ptr_nonnull(j);
	ck_assert_uint_eq(j->elements, 6);
	long long want[6] = {10, 11, 14, 15, 12, 13}; /* r0's pair, r1's, r2's */
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(j->element[i]->integer, want[i]);
	freeReplyObject(j);
	/* part 1 failed: r1's pair is nil; a part of one number per record
	 * is the wrong shape */
	redisReply *part[2] = {&r0, NULL};
	j = ck_join(SCR_SESS_TOUCH, 3, p, np, part);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(j->element[2]->type, REDIS_REPLY_NIL);
	ck_assert_int_eq(j->element[3]->type, REDIS_REPLY_NIL);
	ck_assert_int_eq(j->element[4]->integer, 12);
	freeReplyObject(j);
	redisReply shortr = {.type = REDIS_REPLY_ARRAY, .elements = 1, .element = el1};
	redisReply *bad[2] = {NULL, &shortr};
	ck_assert_ptr_null(ck_join(SCR_SESS_TOUCH, 3, p, np, bad));
	ck_parts_free(p, np);
}
END_TEST

START_TEST(ckey_split_counts)
{
	/* RAISE_MANY: KEYS counters; ARGV values, then idle ms and a flag */
	struct vec v;
	head(&v, "3");
	push(&v, "f0");
	push(&v, "f1");
	push(&v, "f2");
	push(&v, "v0");
	push(&v, "v1");
	push(&v, "v2");
	push(&v, "idle");
	push(&v, "flag");
	unsigned slots[3] = {5, 6, 5};
	struct ck_part *p;
	int np = ck_split(SCR_RAISE_MANY, 3, slots, v.argc, v.argv, v.len, &p);
	ck_assert_int_eq(np, 2);
	const char *want0[] = {"2", "f0", "f2", "v0", "v2", "idle", "flag"};
	ck_assert_int_eq(p[0].argc, SA_NKEYS + 7);
	for (int i = 0; i < 7; i++)
		ck_assert_str_eq(p[0].argv[SA_NKEYS + i], want0[i]);
	redisReply a = {.type = REDIS_REPLY_INTEGER, .integer = 2};
	redisReply b = {.type = REDIS_REPLY_INTEGER, .integer = 1};
	redisReply *replies[2] = {&a, &b};
	redisReply *j = ck_join(SCR_RAISE_MANY, 3, p, np, replies);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(j->integer, 3);
	freeReplyObject(j);
	/* a raise is all or nothing: the catch-up counts it done */
	replies[0] = NULL;
	ck_assert_ptr_null(ck_join(SCR_RAISE_MANY, 3, p, np, replies));
	replies[0] = &a;
	redisReply e = {.type = REDIS_REPLY_ERROR, .str = "TRYAGAIN", .len = 8};
	replies[1] = &e;
	ck_assert_ptr_null(ck_join(SCR_RAISE_MANY, 3, p, np, replies));
	/* releases are counted by nobody: the parts that answered */
	replies[1] = NULL;
	j = ck_join(SCR_RELEASE_MANY, 3, p, np, replies);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(j->integer, 2);
	freeReplyObject(j);
	ck_parts_free(p, np);

	/* a call whose argc is not n items of the shape, and a script
	 * ck_split does not take */
	ck_assert_int_eq(ck_split(SCR_RAISE_MANY, 2, slots, v.argc, v.argv, v.len, &p), -1);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(ck_split(SCR_ACQUIRE, 3, slots, v.argc, v.argv, v.len, &p), -1);
}
END_TEST

START_TEST(ckey_split_release_many)
{
	/* KEYS 5 per item; ARGV channel, instance, reserve ms, then 4 per item */
	struct vec v;
	char names[16][32];
	head(&v, "10");
	for (int c = 0; c < 5; c++)
		for (int i = 0; i < 2; i++) {
			snprintf(names[c * 2 + i], sizeof(names[0]), "K%d%d", c, i);
			push(&v, names[c * 2 + i]);
		}
	push(&v, "ch");
	push(&v, "in");
	push(&v, "ms");
	static const char *cols[4][2] = {{"t0", "t1"}, {"k0", "k1"}, {"x0", "x1"}, {"f0", "f1"}};
	for (int c = 0; c < 4; c++) /* tokens, keys, kinds, fields: each its own */
		for (int i = 0; i < 2; i++)
			push(&v, cols[c][i]);
	unsigned slots[2] = {9, 8};
	struct ck_part *p;
	int np = ck_split(SCR_RELEASE_MANY, 2, slots, v.argc, v.argv, v.len, &p);
	ck_assert_int_eq(np, 2);
	const char *want1[] = {"5",  "K01", "K11", "K21", "K31", "K41", "ch",
	                       "in", "ms",  "t1",  "k1",  "x1",  "f1"};
	ck_assert_int_eq(p[1].argc, SA_NKEYS + 13);
	for (int i = 0; i < 13; i++)
		ck_assert_str_eq(p[1].argv[SA_NKEYS + i], want1[i]);
	ck_parts_free(p, np);
}
END_TEST

Suite *ckey_suite(void)
{
	Suite *s = suite_create("ckey");
	TCase *tc = tcase_create("ckey");
	tcase_add_test(tc, ckey_acquire_tags_every_key);
	tcase_add_test(tc, ckey_empty_record_tagged);
	tcase_add_test(tc, ckey_adopt_prefix);
	tcase_add_test(tc, ckey_call_refuses);
	tcase_add_test(tc, ckey_split_renew);
	tcase_add_test(tc, ckey_split_counts);
	tcase_add_test(tc, ckey_split_touch);
	tcase_add_test(tc, ckey_split_release_many);
	suite_add_tcase(s, tc);
	return s;
}
