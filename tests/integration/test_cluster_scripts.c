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

static void lens(int argc, const char **argv, size_t *len)
{
	for (int i = 0; i < argc; i++)
		len[i] = strlen(argv[i]);
}

/* Send script id's call (argv as a standalone master takes it) in its
 * cluster form for slot, by EVAL of its body; k gets the reply. */
static int standalone_epoch; /* send the epoch as a standalone master takes it, "E" */

static void send_script(struct kept *k, int deadline_ms, int id, unsigned slot, int argc,
                        const char **argv, const size_t *argvlen)
{
	const char *out[64];
	size_t outlen[64];
	ck_assert_int_le(argc, 64);
	int nkeys = atoi(argv[SA_NKEYS]);
	size_t cap = ck_call_size(argc, argvlen, nkeys);
	char *buf = malloc(cap);
	ck_assert(buf);
	ck_assert_int_eq(ck_call(id, slot, argc, argv, argvlen, out, outlen, buf, cap), 0);
	if (standalone_epoch && id == SCR_ACQUIRE) {
		out[AA_EPOCH] = argv[AA_EPOCH];
		outlen[AA_EPOCH] = argvlen[AA_EPOCH];
	}
	out[SA_CMD] = "EVAL";
	outlen[SA_CMD] = 4;
	out[SA_SHA] = script_body(id);
	outlen[SA_SHA] = strlen(out[SA_SHA]);
	*k = (struct kept){0};
	ck_assert(csr_command(rt, slot, deadline_in(deadline_ms), keep_cb, k, argc, out, outlen));
	free(buf); /* csr_command copied it */
}

/* The same, run to its end: the reply (the call failing fails the test). */
static redisReply *run_script(int id, unsigned slot, int argc, const char **argv,
                              const size_t *argvlen)
{
	struct kept k;
	send_script(&k, 3000, id, slot, argc, argv, argvlen);
	ck_assert_msg(run_until(&k.done, 5000), "script %d: no callback", id);
	ck_assert_msg(k.r, "script %d on slot %u: the call failed", id, slot);
	return k.r;
}

/* An ACQUIRE of name's lock with token, lease 20 s, as a standalone
 * master takes it. */
struct acq {
	const char *argv[AA_ARGC];
	size_t len[AA_ARGC];
	char key[64], inst[17];
	unsigned slot;
};

static void acq_fill_at(struct acq *q, const char *name, const char *token, const char *wait,
                        const char *epoch)
{
	snprintf(q->key, sizeof(q->key), PFX "%.40s", name);
	snprintf(q->inst, sizeof(q->inst), "%.16s", token);
	const char *argv[AA_ARGC] = {[SA_CMD] = "",           [SA_SHA] = "",
	                             [AA_NKEYS] = "3",        [AA_GEN] = PFX "gen " INST_A,
	                             [AA_KEY] = q->key,       [AA_SESSION] = "",
	                             [AA_INSTANCE] = q->inst, [AA_IDLE] = "60000",
	                             [AA_EPOCH] = epoch,      [AA_TOKEN] = token,
	                             [AA_LEASE] = "20000",    [AA_OLD] = "",
	                             [AA_WAIT] = wait,        [AA_KIND] = "x",
	                             [AA_PERMIT] = "",        [AA_RECORD] = "",
	                             [AA_DELAY] = "0"};
	memcpy(q->argv, argv, sizeof(argv));
	lens(AA_ARGC, q->argv, q->len);
	q->slot = csl_keyslot(name, strlen(name));
}

static void acq_fill(struct acq *q, const char *name, const char *token, const char *wait)
{
	acq_fill_at(q, name, token, wait, "1");
}

static redisReply *acquire_at(const char *name, const char *token, const char *epoch)
{
	struct acq q;
	acq_fill_at(&q, name, token, "0", epoch);
	return run_script(SCR_ACQUIRE, q.slot, AA_ARGC, q.argv, q.len);
}

static redisReply *acquire(const char *name, const char *token, const char *wait)
{
	struct acq q;
	acq_fill(&q, name, token, wait);
	return run_script(SCR_ACQUIRE, q.slot, AA_ARGC, q.argv, q.len);
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
/* GET of key (of slot) through the router; NULL when missing. */
static char *get_at(unsigned slot, const char *key)
{
	ck_assert_uint_eq(csl_keyslot(key, strlen(key)), slot);
	struct kept k = {0};
	ck_assert(csr_command(rt, slot, deadline_in(3000), keep_cb, &k, 2,
	                      (const char *[]){"GET", key}, NULL));
	ck_assert(run_until(&k.done, 5000) && k.r);
	char *v = k.r->type == REDIS_REPLY_STRING ? strdup(k.r->str) : NULL;
	freeReplyObject(k.r);
	return v;
}

static char *get_tagged(const char *name, const char *suffix)
{
	unsigned slot = csl_keyslot(name, strlen(name));
	char key[128];
	snprintf(key, sizeof(key), "{%s}" PFX "%.40s%s", ktag_of_slot(slot), name, suffix);
	return get_at(slot, key);
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

static void setslot(int i, const char *slot, const char *what, const char *id)
{
	char *r = h_redis(C.first + i, "CLUSTER", "SETSLOT", slot, what, id, NULL);
	ck_assert_msg(r && strcmp(r, "OK") == 0, "SETSLOT %s %s on node %d: %s", slot, what, i,
	              r ? r : "NULL");
	free(r);
}

/* A renewal of name's lock with token (one item, lease 20 s), written at
 * epoch. */
static void renew_one_at(struct kept *k, int deadline_ms, const char *name, const char *token,
                         const char *epoch)
{
	char key[64], shared[72];
	snprintf(key, sizeof(key), PFX "%.40s", name);
	snprintf(shared, sizeof(shared), PFX "%.40s shared", name);
	const char *argv[] = {"",      "",    "4",   key, shared, "", PFX "gen " INST_A,
	                      "20000", epoch, token, "x"};
	size_t len[11];
	lens(11, argv, len);
	send_script(k, deadline_ms, SCR_RENEW, csl_keyslot(name, strlen(name)), 11, argv, len);
}

static void renew_one(struct kept *k, int deadline_ms, const char *name, const char *token)
{
	renew_one_at(k, deadline_ms, name, token, "1");
}

/* The slot of "{mig}" moved from its primary o to t the way
 * redis-cli --cluster reshard moves it (IMPORTING on t, MIGRATING on o,
 * MIGRATE of its keys, SETSLOT NODE everywhere), with a lock of it held
 * by A. While the slot is split, nothing runs: every call (A's renewal,
 * B's ACQUIRE of A's lock, C's of a new lock of the slot) declares a key
 * that is on neither node ("{T}", or the new lock's), so Redis answers
 * TRYAGAIN on both (retried by the router within each call's time), and
 * no script reads half a lock. Once the slot is t's, within the calls'
 * time: A's renewal extends its lock, B is refused, C is granted; and
 * the keys are on t with those values. */
START_TEST(cluster_scripts_migration)
{
	if (start() < 0)
		return;
	ck_assert_int_eq(ktag_init(), 0);
	const unsigned slot = csl_keyslot("{mig}", 5);
	int o = owner_of("{mig}"), t = -1;
	for (int i = 0; i < C.n && t < 0; i++)
		if (i != o && is_master(i))
			t = i;
	ck_assert(o >= 0 && t >= 0);
	char tok_a[33], tok_b[33], tok_c[33];
	snprintf(tok_a, sizeof(tok_a), "%s%016d", INST_A, 1);
	snprintf(tok_b, sizeof(tok_b), "%s%016d", INST_B, 2);
	snprintf(tok_c, sizeof(tok_c), "%s%016d", "cccccccccccccccc", 3);
	redisReply *r = acquire("{mig}a", tok_a, "0");
	ck_assert(r->type == REDIS_REPLY_ARRAY && r->element[0]->integer > 0);
	long long fence_a = r->element[0]->integer;
	freeReplyObject(r);

	char sslot[8];
	snprintf(sslot, sizeof(sslot), "%u", slot);
	char *oid = h_redis(C.first + o, "CLUSTER", "MYID", NULL);
	char *tid = h_redis(C.first + t, "CLUSTER", "MYID", NULL);
	ck_assert(oid && tid);
	setslot(t, sslot, "IMPORTING", oid);
	setslot(o, sslot, "MIGRATING", tid);
	char *keys = h_redis(C.first + o, "CLUSTER", "GETKEYSINSLOT", sslot, "100", NULL);
	ck_assert(keys);
	int nkeys = 0;
	char port[16];
	snprintf(port, sizeof(port), "%d", port_of(t));
	for (char *p = strtok(keys, "\n"); p; p = strtok(NULL, "\n"), nkeys++) {
		char *m = h_redis(C.first + o, "MIGRATE", "127.0.0.1", port, p, "0", "5000", NULL);
		ck_assert_msg(m && strcmp(m, "OK") == 0, "MIGRATE %s: %s", p, m ? m : "NULL");
		free(m);
	}
	free(keys);
	ck_assert_int_eq(nkeys, 3); /* A's lock, its fence counter, the slot's epoch */

	struct kept ka, kb, kc;
	struct acq qb, qc;
	acq_fill(&qb, "{mig}a", tok_b, "0");
	acq_fill(&qc, "{mig}b", tok_c, "0");
	renew_one(&ka, 6000, "{mig}a", tok_a);
	send_script(&kb, 6000, SCR_ACQUIRE, qb.slot, AA_ARGC, qb.argv, qb.len);
	send_script(&kc, 6000, SCR_ACQUIRE, qc.slot, AA_ARGC, qc.argv, qc.len);
	run_ms(500);
	const struct kept *ks[] = {&ka, &kb, &kc};
	for (int i = 0; i < 3; i++)
		if (ks[i]->done)
			fprintf(stderr, "call %d: %s type %d str '%s' el0 %lld\n", i,
			        ks[i]->r ? "reply" : "NULL", ks[i]->r ? ks[i]->r->type : -1,
			        ks[i]->r && ks[i]->r->str ? ks[i]->r->str : "",
			        ks[i]->r && ks[i]->r->elements ? ks[i]->r->element[0]->integer
			                                       : -9);
	ck_assert_msg(!ka.done && !kb.done && !kc.done,
	              "a call answered while its slot was split (renewal %d, B %d, C %d)", ka.done,
	              kb.done, kc.done);
	ck_assert(stats_of(port_of(t)).tryagain + stats_of(port_of(o)).tryagain > 0);

	double moved_ms = h_now_ms();
	for (int i = 0; i < C.n; i++)
		if (is_master(i))
			setslot(i, sslot, "NODE", tid);
	free(oid);
	free(tid);
	ck_assert(run_until(&ka.done, 5000) && run_until(&kb.done, 5000) &&
	          run_until(&kc.done, 5000));
	ck_assert_msg(ka.r && ka.r->type == REDIS_REPLY_ARRAY && ka.r->elements == 1 &&
	                  ka.r->element[0]->integer == 1,
	              "A's renewal after the move: not extended");
	ck_assert_msg(kb.r && kb.r->type == REDIS_REPLY_ARRAY && kb.r->element[0]->integer == 0,
	              "B granted A's lock after the move");
	ck_assert_msg(kc.r && kc.r->type == REDIS_REPLY_ARRAY && kc.r->element[0]->integer > 0,
	              "C's new lock in the moved slot: not granted");
	fprintf(stderr, "%s: the calls answered within %.0f ms of the slot's move\n", tcase_name(),
	        h_now_ms() - moved_ms);
	freeReplyObject(ka.r);
	freeReplyObject(kb.r);
	freeReplyObject(kc.r);
	char *v = get_tagged("{mig}a", "");
	ck_assert_msg(v && strcmp(v, tok_a) == 0, "A's lock after the move: '%s'", v ? v : "-");
	free(v);
	v = get_tagged("{mig}a", " fence");
	ck_assert_msg(v && atoll(v) == fence_a, "A's fence after the move: %s, not %lld",
	              v ? v : "-", fence_a);
	free(v);
	ck_assert_int_eq(owner_of("{mig}"), t);
	finish_rt();
}
END_TEST

/* The connection epoch's key of name's slot ("{T}" PFX "gen " INST_A). */
static char *get_gen(const char *name)
{
	unsigned slot = csl_keyslot(name, strlen(name));
	char key[128];
	snprintf(key, sizeof(key), "{%s}" PFX "gen " INST_A, ktag_of_slot(slot));
	return get_at(slot, key);
}

/* A SET of name's key (suffix "") in its slot's tagged form. */
static void set_tagged(const char *name, const char *suffix, const char *value)
{
	unsigned slot = csl_keyslot(name, strlen(name));
	char key[128];
	snprintf(key, sizeof(key), "{%s}" PFX "%.40s%s", ktag_of_slot(slot), name, suffix);
	struct kept k = {0};
	ck_assert(csr_command(rt, slot, deadline_in(3000), keep_cb, &k, 5,
	                      (const char *[]){"SET", key, value, "PX", "20000"}, NULL));
	ck_assert(run_until(&k.done, 5000) && k.r && k.r->type == REDIS_REPLY_STATUS);
	freeReplyObject(k.r);
}

static int granted(redisReply *r)
{
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements >= 2 && r->element[0]->integer > 0;
	freeReplyObject(r);
	return ok;
}

/* The connection epoch per slot, raised by use (scripts.c,
 * LUA_GEN_BY_USE): a cluster entry's grant ("+E", ck_call's form of the
 * epoch) raises its slot's key to E; a late request (an older epoch) then takes no stale token of
 * ours there, a current one does; a slot whose key is missing makes no
 * request current; and a standalone master's form ("E") writes no key. */
START_TEST(cluster_scripts_epoch)
{
	if (start() < 0)
		return;
	ck_assert_int_eq(ktag_init(), 0);
	char t1[33], t2[33], t3[33], stale[33];
	snprintf(t1, sizeof(t1), "%s%016d", INST_A, 1);
	snprintf(t2, sizeof(t2), "%s%016d", INST_A, 2);
	snprintf(t3, sizeof(t3), "%s%016d", INST_A, 3);
	snprintf(stale, sizeof(stale), "%s%016d", INST_A, 99);

	ck_assert(granted(acquire_at("{ep}a", t1, "00000000000000000005")));
	char *g = get_gen("{ep}");
	ck_assert_msg(g && atoll(g) == 5, "the slot's epoch after a grant at +5: '%s'",
	              g ? g : "-");
	free(g);
	ck_assert(granted(acquire_at("{ep}b", t2, "00000000000000000007")));
	g = get_gen("{ep}");
	ck_assert_msg(g && atoll(g) == 7, "the slot's epoch after a grant at +7: '%s'",
	              g ? g : "-");
	free(g);

	/* a stale token of ours: a late request (epoch 6) leaves it, a
	 * current one (7) takes it */
	set_tagged("{ep}c", "", stale);
	ck_assert_msg(!granted(acquire_at("{ep}c", t3, "00000000000000000006")),
	              "a request of epoch 6 took a token of ours after one of 7 wrote in the slot");
	char *v = get_tagged("{ep}c", "");
	ck_assert_msg(v && strcmp(v, stale) == 0, "{ep}c: '%s'", v ? v : "-");
	free(v);
	ck_assert_msg(granted(acquire_at("{ep}c", t3, "00000000000000000007")),
	              "a current request did not take a stale token of ours");
	g = get_gen("{ep}");
	ck_assert(g && atoll(g) == 7); /* raised only, never lowered */
	free(g);

	/* a renewal raises it where it writes a token back, not where it
	 * extends one */
	struct kept k;
	renew_one_at(&k, 3000, "{ep}a", t1, "00000000000000000008");
	ck_assert(run_until(&k.done, 5000) && k.r && k.r->element[0]->integer == 1);
	freeReplyObject(k.r);
	g = get_gen("{ep}");
	ck_assert_msg(g && atoll(g) == 7, "an extension at +8 raised the epoch to '%s'",
	              g ? g : "-");
	free(g);
	renew_one_at(&k, 3000, "{ep}d", t1, "00000000000000000008");
	ck_assert(run_until(&k.done, 5000) && k.r && k.r->element[0]->integer == 2);
	freeReplyObject(k.r);
	g = get_gen("{ep}");
	ck_assert_msg(g && atoll(g) == 8, "a write-back at +8: the epoch '%s'", g ? g : "-");
	free(g);

	/* a slot with no epoch key: no request is current there */
	set_tagged("{ep2}c", "", stale);
	ck_assert(!granted(acquire_at("{ep2}c", t3, "00000000000000000009")));
	ck_assert_ptr_null(get_gen("{ep2}"));
	/* a standalone master's form writes no epoch key */
	standalone_epoch = 1;
	ck_assert(granted(acquire_at("{ep3}x", t1, "00000000000000000009")));
	standalone_epoch = 0;
	ck_assert_ptr_null(get_gen("{ep3}"));
	finish_rt();
}
END_TEST

/* Sessions on a cluster entry (doc/cluster.md, "Sessions on a cluster
 * entry"): session "s1" has a home record in its own slot and a record
 * per slot it holds in, each "{T}lk:session s1". */
#define SID    "s1"
#define SECRET "0123456789abcdef0123456789abcdef"

static unsigned home_slot(void)
{
	return csl_keyslot(SID, strlen(SID));
}

/* The record of SID in slot, in its cluster form: ck_call tags it. */
static const char *rec_key = PFX "session " SID;

/* Run script id on slot with argv[0 ..] after SA_NKEYS ("1" key). */
static redisReply *run_rec(int id, unsigned slot, int n, const char **args)
{
	const char *argv[16] = {"", "", "1", rec_key};
	size_t len[16];
	ck_assert_int_le(n + 4, 16);
	for (int i = 0; i < n; i++)
		argv[4 + i] = args[i];
	lens(4 + n, argv, len);
	return run_script(id, slot, 4 + n, argv, len);
}

static long long int_reply(redisReply *r)
{
	ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
	long long v = r->integer;
	freeReplyObject(r);
	return v;
}

/* SESS_PUT of SID's record in slot for inst (the secret given: it may
 * create the record), with adoption count a. */
static long long put_rec(unsigned slot, const char *inst, const char *a)
{
	return int_reply(run_rec(SCR_SESS_PUT, slot, 6,
	                         (const char *[]){inst, SECRET, "5000", "30000", "a", a}));
}

static long long add_index(const char *inst, unsigned slot)
{
	char s[8];
	snprintf(s, sizeof(s), "%u", slot);
	return int_reply(run_rec(SCR_SESS_INDEX, home_slot(), 2, (const char *[]){inst, s}));
}

/* SESS_ADOPT of SID's record in slot by inst: count "" for a slot's
 * record (the cluster form), else the count read; the reply. */
static redisReply *adopt(unsigned slot, const char *inst, const char *secret, const char *count,
                         const char *next)
{
	return run_rec(SCR_SESS_ADOPT, slot, 7,
	               (const char *[]){secret, inst, "20000", PFX, count, next, "5000"});
}

/* The first element of an adoption's reply (1, 2: adopted; -1, -2 not). */
static long long adopt_verdict(redisReply *r)
{
	ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
	ck_assert_int_ge(r->elements, 1);
	long long v = r->element[0]->integer;
	freeReplyObject(r);
	return v;
}

/* An ACQUIRE of name for SID's hold, by inst (its record in name's slot). */
static redisReply *acquire_rec(const char *name, const char *token)
{
	struct acq q;
	acq_fill(&q, name, token, "0");
	char field[80];
	snprintf(field, sizeof(field), "0x0 %s", name);
	q.argv[AA_SESSION] = rec_key;
	q.argv[AA_RECORD] = field;
	lens(AA_ARGC, q.argv, q.len);
	return run_script(SCR_ACQUIRE, q.slot, AA_ARGC, q.argv, q.len);
}

/* Whether the reply of a home adoption lists slot in its index. */
static int lists_slot(const redisReply *r, unsigned slot)
{
	char f[16];
	snprintf(f, sizeof(f), "i %u", slot);
	for (size_t i = 3; i < r->elements; i += 5)
		if (r->element[i]->type == REDIS_REPLY_STRING && strcmp(r->element[i]->str, f) == 0)
			return 1;
	return 0;
}

/* The orders of doc/cluster.md, "Sessions on a cluster entry", on a live
 * cluster: A (the lockd the session leaves) and B (adopting). */
START_TEST(cluster_scripts_sessions)
{
	if (start() < 0)
		return;
	ck_assert_int_eq(ktag_init(), 0);
	const char *k1 = "{sa}k1", *k2 = "{sb}k2", *k3 = "{sc}k3";
	unsigned sa = csl_keyslot(k1, strlen(k1)), sb = csl_keyslot(k2, strlen(k2)),
	         sc = csl_keyslot(k3, strlen(k3)), h = home_slot();
	ck_assert(sa != h && sb != h && sc != h && sa != sb && sb != sc && sa != sc);
	char ta[33], tb[33];
	snprintf(ta, sizeof(ta), "%s%016d", INST_A, 1);
	snprintf(tb, sizeof(tb), "%s%016d", INST_A, 2);

	/* SESSION on A: the home record; a grant in sa: its slot's record
	 * (pipelined before the grant), the index */
	ck_assert_int_eq(put_rec(h, INST_A, "0"), 1);
	ck_assert_int_eq(put_rec(sa, INST_A, "0"), 1);
	ck_assert_int_eq(add_index(INST_A, sa), 1);
	ck_assert(granted(acquire_rec(k1, ta)));
	/* a grant in sb half done: its slot in the index, the grant not there yet */
	ck_assert_int_eq(add_index(INST_A, sb), 1);

	/* B adopts the home record: the index lists sa and sb */
	redisReply *r = adopt(h, INST_B, SECRET, "0", "1");
	ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
	ck_assert_int_eq(r->element[0]->integer, 1);
	ck_assert_msg(lists_slot(r, sa) && lists_slot(r, sb), "the index of the home record");
	ck_assert(!lists_slot(r, sc));
	freeReplyObject(r);
	/* A adds no slot once B has the home record (order 2) */
	ck_assert_int_eq(add_index(INST_A, sc), 0);

	/* each listed slot's record: sa's hold taken over for B */
	r = adopt(sa, INST_B, SECRET, "", "1");
	ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
	ck_assert_int_eq(r->element[0]->integer, 1);
	ck_assert_int_eq(r->elements, 8); /* {1, grace, count, one hold's 5} */
	ck_assert_str_eq(r->element[3]->str, "x0 {sa}k1");
	ck_assert_int_eq(r->element[5]->integer, 1); /* held for B now */
	freeReplyObject(r);
	char *v = get_tagged(k1, "");
	ck_assert_msg(v && strncmp(v, INST_B, 16) == 0, "{sa}k1 after the adoption: '%s'",
	              v ? v : "-");
	free(v);
	/* sb's record did not exist: created for B, so A's grant on its way
	 * there (order 1) finds another's record */
	ck_assert_int_eq(adopt_verdict(adopt(sb, INST_B, SECRET, "", "1")), 1);
	ck_assert_int_eq(put_rec(sb, INST_A, "0"), 0);
	r = acquire_rec(k2, tb);
	ck_assert_int_eq(r->element[0]->integer, 0);
	ck_assert_int_eq(r->element[1]->integer, -3);
	freeReplyObject(r);
	ck_assert_ptr_null(get_tagged(k2, ""));

	/* late or repeated slot adoptions change nothing: the same count, a
	 * lower one, a wrong secret */
	ck_assert_int_eq(adopt_verdict(adopt(sa, INST_A, SECRET, "", "1")), -2);
	/* a count of 0, or a slot adoption without a grace, is refused
	 * before anything is written (no record left without an owner) */
	r = adopt(sa, INST_A, SECRET, "", "0");
	ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
	freeReplyObject(r);
	const char *nograce[] = {SECRET, INST_A, "20000", PFX, "", "9"};
	r = run_rec(SCR_SESS_ADOPT, sc, 6, nograce);
	ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
	freeReplyObject(r);
	char rk[96];
	snprintf(rk, sizeof(rk), "{%s}" PFX "session " SID, ktag_of_slot(sc));
	struct kept ke = {0};
	ck_assert(csr_command(rt, sc, deadline_in(3000), keep_cb, &ke, 2,
	                      (const char *[]){"EXISTS", rk}, NULL));
	ck_assert(run_until(&ke.done, 5000) && ke.r && ke.r->type == REDIS_REPLY_INTEGER);
	ck_assert_int_eq(ke.r->integer, 0);
	freeReplyObject(ke.r);
	ck_assert_int_eq(adopt_verdict(adopt(sa, INST_A, "wrong", "", "5")), -1);
	v = get_tagged(k1, "");
	ck_assert(v && strncmp(v, INST_B, 16) == 0);
	free(v);
	/* a later adoption (count 2) wins wherever it lands first */
	ck_assert_int_eq(adopt_verdict(adopt(sa, INST_A, SECRET, "", "2")), 1);
	ck_assert_int_eq(adopt_verdict(adopt(sa, INST_B, SECRET, "", "1")), -2);
	v = get_tagged(k1, "");
	ck_assert_msg(v && strncmp(v, INST_A, 16) == 0, "{sa}k1: '%s'", v ? v : "-");
	free(v);
	finish_rt();
}
END_TEST

TCase *tc_cluster_scripts(void)
{
	TCase *tc = tcase_create("cluster_scripts");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 90);
	H_ADD(tc, cluster_scripts_locks);
	H_ADD(tc, cluster_scripts_migration);
	H_ADD(tc, cluster_scripts_epoch);
	H_ADD(tc, cluster_scripts_sessions);
	return tc;
}
