/* test_cluster_master: a cluster entry in lockd's master layer
 * (src/mcluster.c under src/master.c), driven through master.h in the
 * test process against a real Redis Cluster of 3 primaries and 3
 * replicas (issue 31): up once its router covers every slot; grants of
 * names over every primary by master_call_at, in their cluster form; a
 * renewal of all of them split per slot and joined; releases by EVALSHA
 * where a node lacks the script (NOSCRIPT, sent again by its body);
 * a call without slots refused; calls in flight failed once at shutdown;
 * and a primary SIGKILLed, its replica promoted without a WAIT that
 * counted: the entry goes down and comes up again as a master that
 * restarted (its user then excludes it). The daemon's configuration does
 * not take cluster entries yet (doc/cluster.md, the build plan). Skipped
 * without redis-cli. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catchup.h"
#include "cluster.h"
#include "ktag.h"
#include "master.h"
#include "router_fix.h"
#include "scripts.h"

#define PFX   "lk:"
#define INST  "aaaaaaaaaaaaaaaa"
#define NAMES 20

static int ups, downs, last_restarted, last_marker;

static void on_up(struct master *m, int restarted, int has_marker)
{
	ups++;
	last_restarted = restarted;
	last_marker = has_marker;
}

static void on_down(struct master *m)
{
	downs++;
}

/* One call's outcome through the master layer. */
struct got {
	int done;
	int null;
	int type;
	long long el[64]; /* an array's integers */
	int n;
	long long integer;
};

static void got_cb(struct master *m, redisReply *r, void *arg)
{
	struct got *g = arg;
	ck_assert_msg(!g->done, "a second callback for one call");
	g->done = 1;
	g->null = r == NULL;
	if (!r)
		return;
	g->type = r->type;
	g->integer = r->integer;
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements && i < 64; i++)
		g->el[g->n++] =
		    r->element[i]->type == REDIS_REPLY_INTEGER ? r->element[i]->integer : -100;
}

static struct master *entries_start(int standalone);

static struct master *entry_start(void)
{
	return entries_start(-1);
}

/* The cluster entry, after a standalone master (harness master
 * `standalone`, >= 0) if one is asked for: the cluster is the last. */
static struct master *entries_start(int standalone)
{
	static const char *seeds[1];
	static char seed[32];
	snprintf(seed, sizeof(seed), "127.0.0.1:%d", port_of(0));
	seeds[0] = seed;
	static struct master_cluster mc[2];
	static char sa[32];
	static char *names[2];
	int n = 0;
	if (standalone >= 0) {
		snprintf(sa, sizeof(sa), "127.0.0.1:%d", h_master(standalone)->port);
		mc[n] = (struct master_cluster){NULL, 0};
		names[n++] = sa;
	}
	mc[n] = (struct master_cluster){seeds, 1};
	names[n++] = "cluster:test";
	struct master_opts o = {.timeout_ms = 1000,
	                        .reconnect_max_ms = 1000,
	                        .password = "",
	                        .prefix = PFX,
	                        .on_up = on_up,
	                        .on_down = on_down,
	                        .gen_key = PFX "gen " INST,
	                        .name_key = PFX "name " INST,
	                        .name = "",
	                        .cluster = mc,
	                        .instance = INST};
	ups = downs = 0;
	ck_assert_int_eq(masters_init(base, names, n, &o), 0);
	struct master *m = master_get(n - 1);
	ck_assert(m->cl);
	for (double t0 = h_now_ms(); ups < n && h_now_ms() - t0 < 5000;)
		run_ms(10);
	ck_assert_msg(ups == n && m->state == MS_UP, "%d of %d masters up within 5 s", ups, n);
	ck_assert_int_eq(last_restarted, 0);
	return m;
}

struct acq {
	const char *argv[AA_ARGC];
	size_t len[AA_ARGC];
	char key[48], tok[33];
	unsigned slot;
};

static void acq_call(struct master *m, struct acq *q, const char *name, int i, struct got *g)
{
	snprintf(q->key, sizeof(q->key), PFX "%.30s", name);
	snprintf(q->tok, sizeof(q->tok), "%s%016d", INST, i);
	const char *argv[AA_ARGC] = {[SA_CMD] = "",
	                             [SA_SHA] = "",
	                             [AA_NKEYS] = "3",
	                             [AA_GEN] = PFX "gen " INST,
	                             [AA_KEY] = q->key,
	                             [AA_SESSION] = "",
	                             [AA_INSTANCE] = INST,
	                             [AA_IDLE] = "60000",
	                             [AA_EPOCH] = master_epoch(),
	                             [AA_TOKEN] = q->tok,
	                             [AA_LEASE] = "20000",
	                             [AA_OLD] = "",
	                             [AA_WAIT] = "0",
	                             [AA_KIND] = "x",
	                             [AA_PERMIT] = "",
	                             [AA_RECORD] = "",
	                             [AA_DELAY] = "0"};
	memcpy(q->argv, argv, sizeof(argv));
	for (int a = 0; a < AA_ARGC; a++)
		q->len[a] = strlen(q->argv[a]);
	q->slot = csl_keyslot(name, strlen(name));
	*g = (struct got){0};
	ck_assert_int_eq(
	    master_call_at(m, &q->slot, 1, SCR_ACQUIRE, AA_ARGC, q->argv, q->len, got_cb, g), 0);
}

static void wait_got(struct got *g, const char *what)
{
	ck_assert_msg(run_until(&g->done, 5000), "%s: no callback", what);
	ck_assert_msg(!g->null, "%s: failed", what);
}

START_TEST(cluster_master_calls)
{
	if (start() < 0)
		return;
	ck_assert_int_eq(ktag_init(), 0);
	struct master *m = entry_start();
	static char names[NAMES][16];
	static struct acq q[NAMES];
	static struct got g[NAMES];
	int owners[8] = {0};
	for (int i = 0; i < NAMES; i++) {
		snprintf(names[i], sizeof(names[i]), "m%d", i);
		acq_call(m, &q[i], names[i], i, &g[i]);
		owners[owner_of(names[i])] = 1;
	}
	ck_assert_int_eq(owners[0] + owners[1] + owners[2] + owners[3] + owners[4] + owners[5], 3);
	for (int i = 0; i < NAMES; i++) {
		wait_got(&g[i], names[i]);
		ck_assert_msg(g[i].type == REDIS_REPLY_ARRAY && g[i].n >= 2 && g[i].el[0] > 0,
		              "ACQUIRE %s: not granted", names[i]);
	}

	/* one renewal of every lock: split per slot, joined in item order */
	enum { N = NAMES, ARGC = SCRIPT_ARGC(N, RNA_KEYS, RNA_FIXED, RNA_ARGV) };
	static const char *argv[ARGC];
	static size_t len[ARGC];
	static char shared[N][48];
	static unsigned slots[N];
	int a = 0;
	argv[a++] = "";
	argv[a++] = "";
	argv[a++] = "61"; /* 3 N + 1 */
	for (int i = 0; i < N; i++)
		argv[a++] = q[i].key;
	for (int i = 0; i < N; i++) {
		snprintf(shared[i], sizeof(shared[i]), "%s shared", q[i].key);
		argv[a++] = shared[i];
	}
	for (int i = 0; i < N; i++)
		argv[a++] = "";
	argv[a++] = PFX "gen " INST;
	argv[a++] = "30000";
	argv[a++] = master_epoch();
	for (int i = 0; i < N; i++)
		argv[a++] = q[i].tok;
	for (int i = 0; i < N; i++)
		argv[a++] = "x";
	ck_assert_int_eq(a, ARGC);
	for (int i = 0; i < a; i++)
		len[i] = strlen(argv[i]);
	for (int i = 0; i < N; i++)
		slots[i] = q[i].slot;
	struct got r = {0};
	ck_assert_int_eq(master_call_at(m, slots, N, SCR_RENEW, a, argv, len, got_cb, &r), 0);
	wait_got(&r, "RENEW");
	ck_assert_int_eq(r.type, REDIS_REPLY_ARRAY);
	ck_assert_int_eq(r.n, N);
	for (int i = 0; i < N; i++)
		ck_assert_msg(r.el[i] == 1, "renewal of %s: %lld, not 1", names[i], r.el[i]);

	/* one primary answers nothing within the call's time (CLIENT PAUSE:
	 * no failover, its cluster bus goes on): its items read as a no, the
	 * others' as renewed */
	int paused = owner_of(names[0]);
	char *pr = h_redis(C.first + paused, "CLIENT", "PAUSE", "1800", "ALL", NULL);
	ck_assert_str_eq(pr, "OK");
	free(pr);
	r = (struct got){0};
	ck_assert_int_eq(master_call_at(m, slots, N, SCR_RENEW, a, argv, len, got_cb, &r), 0);
	wait_got(&r, "RENEW with a primary paused");
	ck_assert_int_eq(r.n, N);
	for (int i = 0; i < N; i++) {
		long long want = owner_of(names[i]) == paused ? -100 : 1; /* -100: nil */
		ck_assert_msg(r.el[i] == want, "renewal of %s (on %s primary): %lld, not %lld",
		              names[i], want == 1 ? "a live" : "the paused", r.el[i], want);
	}
	run_ms(1000); /* the pause ends */

	/* releases by EVALSHA: the SHA is known, but only one primary has
	 * the script; the others answer NOSCRIPT and get its body */
	char *sha = h_redis(C.first + 0, "SCRIPT", "LOAD", script_body(SCR_RELEASE), NULL);
	ck_assert(sha && strlen(sha) == 40);
	script_set_sha(SCR_RELEASE, sha, 40);
	free(sha);
	for (int i = 0; i < C.n; i++)
		if (i != 0 && is_master(i)) {
			char *f = h_redis(C.first + i, "SCRIPT", "FLUSH", NULL);
			free(f);
		}
	static const char *rargv[N][RA_ARGC];
	static size_t rlen[N][RA_ARGC];
	for (int i = 0; i < N; i++) {
		const char *v[RA_ARGC] = {[SA_CMD] = "",
		                          [SA_SHA] = "",
		                          [RA_NKEYS] = "2",
		                          [RA_KEY] = q[i].key,
		                          [RA_SESSION] = "",
		                          [RA_INSTANCE] = INST,
		                          [RA_CHANNEL] = PFX "released",
		                          [RA_RESERVE_MS] = "1000",
		                          [RA_PREFIX_LEN] = "3",
		                          [RA_TOKEN] = q[i].tok,
		                          [RA_FLAG_MS] = "0",
		                          [RA_KIND] = "x",
		                          [RA_PERMIT] = "",
		                          [RA_RECORD] = ""};
		memcpy(rargv[i], v, sizeof(v));
		for (int k = 0; k < RA_ARGC; k++)
			rlen[i][k] = strlen(v[k]);
		g[i] = (struct got){0};
		ck_assert_int_eq(master_call_at(m, &q[i].slot, 1, SCR_RELEASE, RA_ARGC, rargv[i],
		                                rlen[i], got_cb, &g[i]),
		                 0);
	}
	for (int i = 0; i < N; i++) {
		wait_got(&g[i], "RELEASE");
		ck_assert_msg(g[i].type == REDIS_REPLY_INTEGER && g[i].integer == 1,
		              "RELEASE %s: type %d, %lld", names[i], g[i].type, g[i].integer);
	}

	/* a call without the slots of its lock names cannot be routed */
	struct got x = {0};
	ck_assert_int_eq(master_call(m, SCR_RELEASE, RA_ARGC, rargv[0], rlen[0], got_cb, &x), -1);
	ck_assert_int_eq(
	    master_call_at(m, NULL, 0, SCR_RELEASE, RA_ARGC, rargv[0], rlen[0], got_cb, &x), -1);

	/* calls in flight at shutdown: each failed once, before it returns */
	for (int i = 0; i < 5; i++)
		acq_call(m, &q[i], names[i], 100 + i, &g[i]);
	masters_shutdown();
	for (int i = 0; i < 5; i++)
		ck_assert_msg(g[i].done && g[i].null, "call %d: done %d null %d after shutdown", i,
		              g[i].done, g[i].null);
	run_ms(200); /* and no callback after it */
	finish_rt();
}
END_TEST

/* A primary SIGKILLed: its replica is promoted, and with no WAIT that
 * counted (wait_replicas 0) nothing says it had every write: the entry
 * goes down and comes up again as a master that restarted, and grants
 * on the promoted replica's slots then. */
START_TEST(cluster_master_promotion_restarts)
{
	if (start() < 0)
		return;
	ck_assert_int_eq(ktag_init(), 0);
	struct master *m = entry_start();
	const char *name = "victim";
	int p = owner_of(name);
	ck_assert(p >= 0);
	struct acq q;
	struct got g;
	acq_call(m, &q, name, 1, &g);
	wait_got(&g, "ACQUIRE");
	h_master_kill(C.first + p);
	double t0 = h_now_ms();
	while (!(downs >= 1 && ups >= 2) && h_now_ms() - t0 < 20000)
		run_ms(20);
	ck_assert_msg(downs >= 1 && ups >= 2, "after the SIGKILL: %d downs, %d ups in 20 s", downs,
	              ups);
	ck_assert_msg(last_restarted == 1,
	              "up again without a restart after a promotion without WAIT");
	fprintf(stderr, "%s: down and up again as restarted %.0f ms after the SIGKILL\n",
	        tcase_name(), h_now_ms() - t0);
	acq_call(m, &q, "after", 2, &g);
	wait_got(&g, "ACQUIRE after the promotion");
	ck_assert(g.type == REDIS_REPLY_ARRAY && g.el[0] > 0);
	masters_shutdown();
	finish_rt();
}
END_TEST

/* A late request (review of step 3): lockd gives a node's connection up
 * (the node kills it here), so every command written after it carries a
 * newer connection epoch than any written on it, read when the command
 * goes on the wire (csr_stamp), however long it waited for the new
 * connection. B's grant on the new connection then raises the slot's
 * epoch above A's, and A's ACQUIRE, written on the old connection and
 * arriving only now (sent here by hand, as the node would read it), takes
 * no token of ours for stale: B's live lock stays B's. */
START_TEST(cluster_master_epoch_after_reconnect)
{
	if (start() < 0)
		return;
	ck_assert_int_eq(ktag_init(), 0);
	struct master *m = entry_start();
	const char *name = "late";
	int p = owner_of(name);
	unsigned slot = csl_keyslot(name, strlen(name));
	const char *t = ktag_of_slot(slot);
	char e0[MASTER_EPOCH_LEN + 2], gen[64], key[64], rec[16], tok_a[33];
	snprintf(e0, sizeof(e0), "+%s", master_epoch()); /* as A was written */
	snprintf(gen, sizeof(gen), "{%s}" PFX "gen " INST, t);
	snprintf(key, sizeof(key), "{%s}" PFX "%s", t, name);
	snprintf(rec, sizeof(rec), "{%s}", t);
	snprintf(tok_a, sizeof(tok_a), "%s%016d", INST, 1);

	long long killed = h_redis_int(C.first + p, "CLIENT", "KILL", "TYPE", "normal", NULL);
	ck_assert_int_ge(killed, 1);
	struct acq qb;
	struct got gb = {0};
	int ok = 0;
	for (double t0 = h_now_ms(); !ok && h_now_ms() - t0 < 10000;) {
		run_ms(50);
		if (m->state != MS_UP)
			continue;
		acq_call(m, &qb, name, 2, &gb);
		ck_assert(run_until(&gb.done, 5000));
		ok = !gb.null && gb.type == REDIS_REPLY_ARRAY && gb.el[0] > 0;
	}
	ck_assert_msg(ok, "B not granted within 10 s of the node's reconnect");
	ck_assert_msg(strcmp(master_epoch(), e0 + 1) != 0,
	              "the connection epoch did not move when the node's connection was lost");

	char *r = h_redis(C.first + p, "EVAL", script_body(SCR_ACQUIRE), "3", gen, key, rec, INST,
	                  "60000", e0, tok_a, "20000", "", "0", "x", "", "", "0", NULL);
	ck_assert(r);
	free(r);
	char *v = h_redis(C.first + p, "GET", key, NULL);
	ck_assert_msg(v && strcmp(v, qb.tok) == 0,
	              "A's late ACQUIRE took B's live lock: it holds %s", v ? v : "-");
	free(v);
	masters_shutdown();
	finish_rt();
}
END_TEST

static int caught_up = -1;

static void caught_up_cb(struct master *target, int ok)
{
	caught_up = ok;
}

/* A cluster entry caught up from a standalone master (catchup.c, as
 * membership does for a master that restarted): every fence counter of
 * the source raised on the cluster in its lock name's slot (a name with
 * a hash tag of its own, one with a space), one already higher kept; then
 * a standalone master caught up from the cluster entry. */
START_TEST(cluster_master_catchup)
{
	if (start() < 0)
		return;
	ck_assert_int_eq(ktag_init(), 0);
	int sa = h_master_add();
	struct master *m = entries_start(sa);
	const char *names[] = {"a", "{x}b", "c d"};
	const char *vals[] = {"1000", "2000", "3000"};
	char key[64];
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), PFX "%s fence", names[i]);
		char *r = h_redis(sa, "SET", key, vals[i], NULL);
		ck_assert_str_eq(r, "OK");
		free(r);
	}
	char *r = h_redis(sa, "SET", PFX "a", "not a counter", NULL);
	free(r);
	/* "c d" is already higher on the cluster: kept */
	unsigned scd = csl_keyslot("c d", 3);
	snprintf(key, sizeof(key), "{%s}" PFX "c d fence", ktag_of_slot(scd));
	r = h_redis(C.first + owner_of("c d"), "SET", key, "5000", NULL);
	ck_assert_str_eq(r, "OK");
	free(r);

	int src[1] = {0};
	caught_up = -1;
	ck_assert_int_eq(catchup_start(m, PFX, 60000, src, 1, 0, caught_up_cb), 0);
	for (double t0 = h_now_ms(); caught_up < 0 && h_now_ms() - t0 < 5000;)
		run_ms(10);
	ck_assert_msg(caught_up == 1, "catch-up of the cluster entry: %d", caught_up);
	const char *want[] = {"1000", "2000", "5000"};
	for (int i = 0; i < 3; i++) {
		unsigned s = csl_keyslot(names[i], strlen(names[i]));
		snprintf(key, sizeof(key), "{%s}" PFX "%s fence", ktag_of_slot(s), names[i]);
		char *v = h_redis(C.first + owner_of(names[i]), "GET", key, NULL);
		ck_assert_msg(v && strcmp(v, want[i]) == 0, "%s: '%s', not %s", key, v ? v : "-",
		              want[i]);
		free(v);
	}

	/* and the other way: the cluster entry as the source of a standalone
	 * master's catch-up, read primary by primary (SCAN, several pages on
	 * each: 3000 more counters), its values by an MGET per slot, the names
	 * untagged on the standalone master */
	r = h_redis(sa, "FLUSHALL", NULL);
	free(r);
	/* while a slot is migrating, a walk could read a moved key on neither
	 * node: the catch-up fails, and is tried again later */
	unsigned sm = csl_keyslot("a", 1);
	int o = owner_of("a"), t = -1;
	for (int i = 0; i < C.n && t < 0; i++)
		if (i != o && is_master(i))
			t = i;
	char smig[8];
	snprintf(smig, sizeof(smig), "%u", sm);
	char *oid = h_redis(C.first + o, "CLUSTER", "MYID", NULL);
	char *tid = h_redis(C.first + t, "CLUSTER", "MYID", NULL);
	r = h_redis(C.first + t, "CLUSTER", "SETSLOT", smig, "IMPORTING", oid, NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	r = h_redis(C.first + o, "CLUSTER", "SETSLOT", smig, "MIGRATING", tid, NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	caught_up = -1;
	src[0] = 1;
	ck_assert_int_eq(catchup_start(master_get(0), PFX, 60000, src, 1, 0, caught_up_cb), 0);
	for (double t0 = h_now_ms(); caught_up < 0 && h_now_ms() - t0 < 5000;)
		run_ms(10);
	ck_assert_msg(caught_up == 0, "catch-up from a cluster with a slot migrating: %d",
	              caught_up);
	for (int i = 0; i < 2; i++) {
		r = h_redis(C.first + (i ? t : o), "CLUSTER", "SETSLOT", smig, "STABLE", NULL);
		ck_assert_str_eq(r, "OK");
		free(r);
	}
	free(oid);
	free(tid);
	enum { MANY = 3000 };
	static struct call set[MANY];
	static char mkey[MANY][48], mval[MANY][16];
	for (int i = 0; i < MANY; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%d", i);
		unsigned s = csl_keyslot(name, strlen(name));
		snprintf(mkey[i], sizeof(mkey[i]), "{%s}" PFX "%s fence", ktag_of_slot(s), name);
		snprintf(mval[i], sizeof(mval[i]), "%d", 7 * i + 1);
		send_cmd(&set[i], mkey[i], 5000, (const char *[]){"SET", mkey[i], mval[i], NULL});
	}
	for (int i = 0; i < MANY; i++)
		ck_assert(run_until(&set[i].done, 5000) && !set[i].null);
	for (int i = 0; i < C.n; i++)
		if (is_master(i))
			ck_assert_int_gt(h_redis_int(C.first + i, "DBSIZE", NULL), 600);
	caught_up = -1;
	src[0] = 1;
	ck_assert_int_eq(catchup_start(master_get(0), PFX, 60000, src, 1, 0, caught_up_cb), 0);
	for (double t0 = h_now_ms(); caught_up < 0 && h_now_ms() - t0 < 5000;)
		run_ms(10);
	ck_assert_msg(caught_up == 1, "catch-up from the cluster entry: %d", caught_up);
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), PFX "%s fence", names[i]);
		char *v = h_redis(sa, "GET", key, NULL);
		ck_assert_msg(v && strcmp(v, want[i]) == 0,
		              "%s on the standalone master: '%s', not %s", key, v ? v : "-",
		              want[i]);
		free(v);
	}
	ck_assert_int_eq(h_redis_int(sa, "DBSIZE", NULL), 3 + MANY);
	for (int i = 0; i < MANY; i += 499) {
		snprintf(key, sizeof(key), PFX "n%d fence", i);
		char *v = h_redis(sa, "GET", key, NULL);
		ck_assert_msg(v && strcmp(v, mval[i]) == 0, "%s: '%s', not %s", key, v ? v : "-",
		              mval[i]);
		free(v);
	}
	masters_shutdown();
	finish_rt();
}
END_TEST

/* Move slot sl from primary o to primary t as redis-cli reshard does. */
static void move_slot(unsigned sl, int o, int t)
{
	char ss[8], port[16];
	snprintf(ss, sizeof(ss), "%u", sl);
	snprintf(port, sizeof(port), "%d", port_of(t));
	char *oid = h_redis(C.first + o, "CLUSTER", "MYID", NULL);
	char *tid = h_redis(C.first + t, "CLUSTER", "MYID", NULL);
	ck_assert(oid && tid);
	char *r = h_redis(C.first + t, "CLUSTER", "SETSLOT", ss, "IMPORTING", oid, NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	r = h_redis(C.first + o, "CLUSTER", "SETSLOT", ss, "MIGRATING", tid, NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	char *keys = h_redis(C.first + o, "CLUSTER", "GETKEYSINSLOT", ss, "100", NULL);
	ck_assert(keys);
	for (char *p = strtok(keys, "\n"); p; p = strtok(NULL, "\n")) {
		r = h_redis(C.first + o, "MIGRATE", "127.0.0.1", port, p, "0", "5000", NULL);
		ck_assert_msg(r && strcmp(r, "OK") == 0, "MIGRATE %s: %s", p, r ? r : "-");
		free(r);
	}
	free(keys);
	for (int i = 0; i < C.n; i++)
		if (is_master(i)) {
			r = h_redis(C.first + i, "CLUSTER", "SETSLOT", ss, "NODE", tid, NULL);
			ck_assert_str_eq(r, "OK");
			free(r);
		}
	free(oid);
	free(tid);
}

/* Until the entry says it has the marker (every slot written), or 10 s. */
static void wait_marked(struct master *m)
{
	for (double t0 = h_now_ms(); !m->has_marker && h_now_ms() - t0 < 10000;)
		run_ms(20);
	ck_assert_msg(m->has_marker, "the markers not written within 10 s");
}

/* The marker, in every slot: a fresh cluster lacks it (at startup that
 * is a master that may have restarted empty, while the others have it:
 * membership.c); written once the entry counts (master_set_marker, every
 * slot), it is read before the entry goes up again; a primary's first
 * slot moved to another primary takes its marker with it (still marked);
 * a primary that lost its data (FLUSHALL) makes the entry lack it, and
 * it is written again. */
START_TEST(cluster_master_marker)
{
	if (start() < 0)
		return;
	ck_assert_int_eq(ktag_init(), 0);
	struct master *m = entry_start();
	ck_assert_int_eq(last_marker, 0);
	ck_assert_int_eq(m->has_marker, 0);
	master_set_marker(m);
	wait_marked(m);
	long long keys = 0;
	for (int i = 0; i < C.n; i++)
		if (is_master(i))
			keys += h_redis_int(C.first + i, "DBSIZE", NULL);
	ck_assert_int_eq(keys, CSL_SLOTS); /* one marker a slot, nothing else */
	masters_shutdown();

	/* a resharding: the first slot of a primary moves to another */
	unsigned slots[8];
	m = entry_start();
	ck_assert_msg(last_marker == 1, "the markers written were not read at the next start");
	int n = master_cluster_nodes(m, slots, 8);
	ck_assert_int_eq(n, 3);
	char host[CSL_HOST_MAX + 1];
	int port;
	ck_assert_int_eq(csr_slot_owner(rt, slots[1], host, sizeof(host), &port), 0);
	int o = node_of_port(port), t = -1;
	for (int i = 0; i < C.n && t < 0; i++)
		if (i != o && is_master(i))
			t = i;
	masters_shutdown();
	move_slot(slots[1], o, t);
	run_ms(300);
	m = entry_start();
	ck_assert_msg(last_marker == 1, "a resharding made the entry lack its marker");
	masters_shutdown();

	/* a primary that lost its data */
	char *r = h_redis(C.first + o, "FLUSHALL", NULL);
	free(r);
	m = entry_start();
	ck_assert_msg(last_marker == 0, "a primary that lost its data still reads as marked");
	master_set_marker(m);
	wait_marked(m);
	masters_shutdown();
	m = entry_start();
	ck_assert_int_eq(last_marker, 1);
	masters_shutdown();
	finish_rt();
}
END_TEST

TCase *tc_cluster_master(void)
{
	TCase *tc = tcase_create("cluster_master");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 90);
	H_ADD(tc, cluster_master_calls);
	H_ADD(tc, cluster_master_promotion_restarts);
	H_ADD(tc, cluster_master_epoch_after_reconnect);
	H_ADD(tc, cluster_master_catchup);
	H_ADD(tc, cluster_master_marker);
	return tc;
}
