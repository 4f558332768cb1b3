/* test_cluster_scripts: lockd's own scripts (src/scripts.c), unchanged,
 * in the form a cluster entry sends them (src/ckey.c), through the
 * router against a real Redis Cluster of 3 primaries and 3 replicas
 * (issue 31; doc/cluster.md, "The choice: slot by slot"): grants of names
 * spread over every primary, with braces of their own or a shared hash
 * tag, each lock and its fence counter in its name's slot; another
 * instance kept out; one renewal over every primary split per slot and
 * joined in item order; releases announcing the name without its tag.
 * The daemon does not send these yet. Skipped without redis-cli. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ckey.h"
#include "rdup.h"
#include "router_fix.h"
#include "scripts.h"

#define PFX     "lk:" /* redis.key_prefix */
#define CHANNEL "lk:released"
#define INST_A  "aaaaaaaaaaaaaaaa"
#define INST_B  "bbbbbbbbbbbbbbbb"
#define NAMES   24

/* A call's whole reply, kept. */
struct kept {
	int done;
	redisReply *r; /* NULL: the call failed */
};

static void keep_cb(const redisReply *r, void *arg)
{
	struct kept *k = arg;
	ck_assert_msg(!k->done, "a second callback for one call");
	k->done = 1;
	k->r = r ? rdup_reply(r) : NULL;
	ck_assert(!r || k->r);
}

/* Send script id's call (argv as a standalone master takes it) in its
 * cluster form for slot, by EVAL of its body; run it to its end. */
static redisReply *run_script(int id, unsigned slot, int argc, const char **argv,
                              const size_t *argvlen)
{
	const char *out[64];
	size_t outlen[64];
	ck_assert_int_le(argc, 64);
	int nkeys = atoi(argv[SA_NKEYS]);
	size_t cap = ck_call_size(argc, argvlen, nkeys);
	char *buf = malloc(cap);
	ck_assert(buf);
	ck_assert_int_eq(ck_call(id, slot, argc, argv, argvlen, out, outlen, buf, cap), 0);
	out[SA_CMD] = "EVAL";
	outlen[SA_CMD] = 4;
	out[SA_SHA] = script_body(id);
	outlen[SA_SHA] = strlen(out[SA_SHA]);
	struct kept k = {0};
	ck_assert(csr_command(rt, slot, deadline_in(3000), keep_cb, &k, argc, out, outlen));
	free(buf);
	ck_assert_msg(run_until(&k.done, 5000), "script %d: no callback", id);
	ck_assert_msg(k.r, "script %d on slot %u: the call failed", id, slot);
	return k.r;
}

static void lens(int argc, const char **argv, size_t *len)
{
	for (int i = 0; i < argc; i++)
		len[i] = strlen(argv[i]);
}

/* ACQUIRE of name (its lock) with token, lease 20 s; the reply. */
static redisReply *acquire(const char *name, const char *token, const char *wait)
{
	char key[64];
	snprintf(key, sizeof(key), PFX "%.40s", name);
	const char *argv[AA_ARGC] = {[SA_CMD] = "",        [SA_SHA] = "",
	                             [AA_NKEYS] = "3",     [AA_GEN] = PFX "gen " INST_A,
	                             [AA_KEY] = key,       [AA_SESSION] = "",
	                             [AA_INSTANCE] = "",   [AA_IDLE] = "60000",
	                             [AA_EPOCH] = "1",     [AA_TOKEN] = token,
	                             [AA_LEASE] = "20000", [AA_OLD] = "",
	                             [AA_WAIT] = wait,     [AA_KIND] = "x",
	                             [AA_PERMIT] = "",     [AA_RECORD] = "",
	                             [AA_DELAY] = "0"};
	char inst[17];
	snprintf(inst, sizeof(inst), "%.16s", token);
	argv[AA_INSTANCE] = inst;
	size_t len[AA_ARGC];
	lens(AA_ARGC, argv, len);
	return run_script(SCR_ACQUIRE, csl_keyslot(name, strlen(name)), AA_ARGC, argv, len);
}

static redisReply *release(const char *name, const char *token)
{
	char key[64];
	snprintf(key, sizeof(key), PFX "%.40s", name);
	const char *argv[RA_ARGC] = {[SA_CMD] = "",          [SA_SHA] = "",
	                             [RA_NKEYS] = "2",       [RA_KEY] = key,
	                             [RA_SESSION] = "",      [RA_INSTANCE] = INST_A,
	                             [RA_CHANNEL] = CHANNEL, [RA_RESERVE_MS] = "1000",
	                             [RA_PREFIX_LEN] = "3",  [RA_TOKEN] = token,
	                             [RA_FLAG_MS] = "0",     [RA_KIND] = "x",
	                             [RA_PERMIT] = "",       [RA_RECORD] = ""};
	size_t len[RA_ARGC];
	lens(RA_ARGC, argv, len);
	return run_script(SCR_RELEASE, csl_keyslot(name, strlen(name)), RA_ARGC, argv, len);
}

/* GET of a name's key on the cluster, as the cluster entry names it
 * ("{T}" PFX name suffix); NULL when missing. */
static char *get_tagged(const char *name, const char *suffix)
{
	unsigned slot = csl_keyslot(name, strlen(name));
	char key[128];
	snprintf(key, sizeof(key), "{%s}" PFX "%.40s%s", ktag_of_slot(slot), name, suffix);
	ck_assert_uint_eq(csl_keyslot(key, strlen(key)), slot);
	struct kept k = {0};
	ck_assert(csr_command(rt, slot, deadline_in(3000), keep_cb, &k, 2,
	                      (const char *[]){"GET", key}, NULL));
	ck_assert(run_until(&k.done, 5000) && k.r);
	char *v = k.r->type == REDIS_REPLY_STRING ? strdup(k.r->str) : NULL;
	freeReplyObject(k.r);
	return v;
}

/* Announcements read from a subscriber on node i, until n or 5 s. */
static int read_notices(redisContext *sub, char got[][32], int n)
{
	int k = 0;
	double t0 = h_now_ms();
	while (k < n && h_now_ms() - t0 < 5000) {
		void *rep = NULL;
		if (redisGetReply(sub, &rep) != REDIS_OK) {
			if (sub->err == REDIS_ERR_IO) { /* the read timed out: go on */
				sub->err = 0;
				continue;
			}
			break;
		}
		redisReply *r = rep;
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
		    strcmp(r->element[0]->str, "message") == 0)
			snprintf(got[k++], 32, "%s", r->element[2]->str);
		freeReplyObject(r);
	}
	return k;
}

START_TEST(cluster_scripts_locks)
{
	if (start() < 0)
		return;
	ck_assert_int_eq(ktag_init(), 0);
	static char names[NAMES][32];
	const char *odd[] = {"{a}b}", "a}b", "{order-7}pay", "{order-7}ship", "x y {z"};
	for (int i = 0; i < NAMES; i++)
		if (i < 5)
			snprintf(names[i], sizeof(names[i]), "%s", odd[i]);
		else
			snprintf(names[i], sizeof(names[i]), "lock-%d", i);
	static char tok_a[NAMES][33], tok_b[33];
	snprintf(tok_b, sizeof(tok_b), "%s%016d", INST_B, 1);

	/* a subscriber on one primary hears every node's announcements */
	int p0 = -1;
	for (int i = 0; i < C.n && p0 < 0; i++)
		if (is_master(i))
			p0 = i;
	redisContext *sub =
	    redisConnectWithTimeout("127.0.0.1", port_of(p0), (struct timeval){2, 0});
	ck_assert(sub && !sub->err);
	redisSetTimeout(sub, (struct timeval){0, 200000});
	redisReply *s = redisCommand(sub, "SUBSCRIBE %s", CHANNEL);
	ck_assert(s);
	freeReplyObject(s);

	uint64_t primaries_used[8] = {0};
	for (int i = 0; i < NAMES; i++) {
		snprintf(tok_a[i], sizeof(tok_a[i]), "%s%016d", INST_A, i);
		redisReply *r = acquire(names[i], tok_a[i], "0");
		ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
		                  r->element[0]->integer > 0 && r->element[1]->integer == 0,
		              "ACQUIRE %s: not granted (type %d: '%s')", names[i], r->type,
		              r->str ? r->str : "");
		freeReplyObject(r);
		/* the lock and its fence counter, tagged, in the name's slot */
		char *v = get_tagged(names[i], "");
		ck_assert_msg(v && strcmp(v, tok_a[i]) == 0, "%s: lock '%s'", names[i],
		              v ? v : "-");
		free(v);
		v = get_tagged(names[i], " fence");
		ck_assert_msg(v && atoll(v) > 0, "%s: no fence counter in its slot", names[i]);
		free(v);
		int o = owner_of(names[i]);
		ck_assert(o >= 0 && o < 8);
		primaries_used[o]++;
	}
	int used = 0;
	for (int i = 0; i < 8; i++)
		used += primaries_used[i] > 0;
	ck_assert_msg(used == 3, "names on %d primaries, not 3", used);
	/* one hash tag, one slot: the two names are on one primary */
	ck_assert_int_eq(owner_of(names[2]), owner_of(names[3]));

	/* another instance is kept out, and asks for the release */
	for (int i = 0; i < NAMES; i++) {
		redisReply *r = acquire(names[i], tok_b, "1");
		ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->element[0]->integer == 0,
		              "ACQUIRE %s by another instance: granted", names[i]);
		freeReplyObject(r);
	}

	/* one renewal of every lock: split per slot, joined in item order */
	enum { N = NAMES };
	static const char *argv[SCRIPT_ARGC(N, RNA_KEYS, RNA_FIXED, RNA_ARGV)];
	static size_t len[SCRIPT_ARGC(N, RNA_KEYS, RNA_FIXED, RNA_ARGV)];
	static char keys[N][48], shared[N][56];
	static unsigned slots[N];
	int a = 0;
	argv[a++] = "";
	argv[a++] = "";
	argv[a++] = "73"; /* 3 N + 1 */
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), PFX "%.31s", names[i]);
		argv[a++] = keys[i];
		slots[i] = csl_keyslot(names[i], strlen(names[i]));
	}
	for (int i = 0; i < N; i++) {
		snprintf(shared[i], sizeof(shared[i]), PFX "%.31s shared", names[i]);
		argv[a++] = shared[i];
	}
	for (int i = 0; i < N; i++)
		argv[a++] = "";
	argv[a++] = PFX "gen " INST_A;
	argv[a++] = "30000";
	argv[a++] = "1";
	for (int i = 0; i < N; i++)
		argv[a++] = tok_a[i];
	for (int i = 0; i < N; i++)
		argv[a++] = "x";
	ck_assert_int_eq(a, (int)(sizeof(argv) / sizeof(argv[0])));
	lens(a, argv, len);
	struct ck_part *parts;
	int np = ck_split(SCR_RENEW, N, slots, a, argv, len, &parts);
	ck_assert_int_gt(np, 3);
	redisReply **replies = calloc((size_t)np, sizeof(*replies));
	ck_assert(replies);
	for (int k = 0; k < np; k++)
		replies[k] = run_script(SCR_RENEW, parts[k].slot, parts[k].argc, parts[k].argv,
		                        parts[k].argvlen);
	redisReply *j = ck_join(SCR_RENEW, N, parts, np, replies);
	ck_assert(j && j->type == REDIS_REPLY_ARRAY && j->elements == N);
	for (int i = 0; i < N; i++)
		ck_assert_msg(j->element[i]->type == REDIS_REPLY_INTEGER &&
		                  j->element[i]->integer == 1,
		              "renewal of %s: not extended", names[i]);
	freeReplyObject(j);
	for (int k = 0; k < np; k++)
		freeReplyObject(replies[k]);
	free(replies);
	ck_parts_free(parts, np);
	for (int i = 0; i < N; i++) {
		long long pttl = 0;
		unsigned slot = slots[i];
		char key[96];
		snprintf(key, sizeof(key), "{%s}" PFX "%.31s", ktag_of_slot(slot), names[i]);
		struct kept k = {0};
		ck_assert(csr_command(rt, slot, deadline_in(3000), keep_cb, &k, 2,
		                      (const char *[]){"PTTL", key}, NULL));
		ck_assert(run_until(&k.done, 5000) && k.r);
		pttl = k.r->integer;
		freeReplyObject(k.r);
		ck_assert_msg(pttl > 20000, "%s: PTTL %lld after the 30 s renewal", names[i], pttl);
	}

	/* the releases: each announced by its name, without the tag */
	for (int i = 0; i < N; i++) {
		redisReply *r = release(names[i], tok_a[i]);
		ck_assert_msg(r->type == REDIS_REPLY_INTEGER && r->integer == 1,
		              "RELEASE %s: not released", names[i]);
		freeReplyObject(r);
		char *v = get_tagged(names[i], "");
		ck_assert_msg(!v, "%s: still held after its release", names[i]);
	}
	static char got[N][32];
	int n = read_notices(sub, got, N);
	ck_assert_msg(n == N, "%d announcements, not %d", n, N);
	for (int i = 0; i < N; i++) {
		int found = 0;
		for (int k = 0; k < n && !found; k++)
			found = strcmp(got[k], names[i]) == 0;
		ck_assert_msg(found, "the release of '%s' was not announced by its name", names[i]);
	}
	redisFree(sub);
	finish_rt();
}
END_TEST

TCase *tc_cluster_scripts(void)
{
	TCase *tc = tcase_create("cluster_scripts");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 90);
	H_ADD(tc, cluster_scripts_locks);
	return tc;
}
