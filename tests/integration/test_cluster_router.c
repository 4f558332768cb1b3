/* test_cluster_router: the cluster router (src/csl_router.c) on its own
 * event_base in the test process, against a real Redis Cluster of 3
 * primaries and 3 replicas (harness_cluster.c): calls spread over every
 * primary, a slot resharded under a stream of calls (ASK, MOVED,
 * TRYAGAIN), a CLUSTER FAILOVER, a primary SIGKILLed until its replica
 * is promoted, calls detached or freed in flight, and writes counted
 * once a WAIT says a replica has them, a call's stamp read when it is
 * sent (issue 31; doc/cluster.md). Skipped without redis-cli. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ktag.h"
#include "router_fix.h"

/* The node's count of calls of cmd it refused (MOVED among them): INFO
 * commandstats' rejected_calls (Redis 7). */
static long long rejected_calls(int i, const char *cmd)
{
	char *info = h_redis(C.first + i, "INFO", "commandstats", NULL);
	ck_assert(info);
	char want[64];
	snprintf(want, sizeof(want), "cmdstat_%s:", cmd);
	const char *l = strstr(info, want), *rj = l ? strstr(l, "rejected_calls=") : NULL;
	long long n = rj ? atoll(rj + strlen("rejected_calls=")) : 0;
	free(info);
	return n;
}

/* SET then GET of 300 keys through the router, all pipelined: every reply
 * exact, and every primary holds some of them. Then with a password on
 * every node and CLUSTER SHARDS denied: a router with the password maps
 * the cluster from CLUSTER SLOTS, refreshes it every refresh_ms (200
 * here) and answers; one with a wrong password
 * has no map and fails its calls by their deadline. */
START_TEST(cluster_router_spread)
{
	if (start() < 0)
		return;
	enum { N = 300 };
	static struct call c[N];
	static char key[N][16], val[N][16];
	for (int i = 0; i < N; i++) {
		snprintf(key[i], sizeof(key[i]), "k%d", i);
		snprintf(val[i], sizeof(val[i]), "v%d", i * 7);
		send_cmd(&c[i], key[i], 3000, (const char *[]){"SET", key[i], val[i], NULL});
	}
	for (int i = 0; i < N; i++) {
		ck_assert_msg(run_until(&c[i].done, 5000), "SET %s: no callback", key[i]);
		ck_assert_msg(!c[i].null && c[i].type == REDIS_REPLY_STATUS, "SET %s: failed",
		              key[i]);
		ck_assert_str_eq(c[i].str, "OK");
	}
	for (int i = 0; i < N; i++)
		send_cmd(&c[i], key[i], 3000, (const char *[]){"GET", key[i], NULL});
	for (int i = 0; i < N; i++) {
		ck_assert_msg(run_until(&c[i].done, 5000), "GET %s: no callback", key[i]);
		ck_assert_msg(!c[i].null && c[i].type == REDIS_REPLY_STRING, "GET %s: failed",
		              key[i]);
		ck_assert_str_eq(c[i].str, val[i]);
	}
	long long total = 0;
	int primaries = 0;
	for (int i = 0; i < C.n; i++) {
		if (!is_master(i))
			continue;
		primaries++;
		long long n = h_redis_int(C.first + i, "DBSIZE", NULL);
		ck_assert_msg(n > 0, "primary %d holds none of the keys", i);
		total += n;
		struct csr_node_stats st = stats_of(port_of(i));
		ck_assert_int_eq(st.role, CSR_ROLE_PRIMARY);
		ck_assert(st.connected);
		ck_assert_msg(st.sent >= (uint64_t)n * 2, "primary %d: %llu sent for %lld keys", i,
		              (unsigned long long)st.sent, n);
		ck_assert_int_eq(st.moved + st.ask + st.tryagain + st.failed, 0);
	}
	ck_assert_int_eq(primaries, 3);
	ck_assert_int_eq(total, N);
	finish_rt();

	/* AUTH, and the map from CLUSTER SLOTS where CLUSTER SHARDS is
	 * refused: every node requires a password and denies its default
	 * user CLUSTER SHARDS (an ACL, as a managed service may have) */
	for (int i = 0; i < C.n; i++) {
		char *r =
		    h_redis(C.first + i, "ACL", "SETUSER", "default", "-cluster|shards", NULL);
		ck_assert_str_eq(r, "OK");
		free(r);
		r = h_redis(C.first + i, "CONFIG", "SET", "masterauth", "s3cret", NULL);
		ck_assert_str_eq(r, "OK");
		free(r);
	}
	for (int i = 0; i < C.n; i++) {
		char *r = h_redis(C.first + i, "CONFIG", "SET", "requirepass", "s3cret", NULL);
		ck_assert_str_eq(r, "OK");
		free(r);
	}
	redisContext *rc = redisConnectWithTimeout("127.0.0.1", port_of(0), (struct timeval){2, 0});
	ck_assert(rc && !rc->err);
	redisReply *rep = redisCommand(rc, "AUTH s3cret");
	ck_assert(rep && rep->type == REDIS_REPLY_STATUS);
	freeReplyObject(rep);
	rep = redisCommand(rc, "CLUSTER SHARDS");
	ck_assert(rep && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOPERM", 6) == 0);
	freeReplyObject(rep);
	redisFree(rc);
	loop_start();
	rt = new_router("s3cret", 200);
	wait_covered(rt);
	uint64_t refreshes, since;
	csr_stats(rt, NULL, 0, &since);
	for (double t0 = h_now_ms(); csr_stats(rt, NULL, 0, &refreshes), refreshes < since + 2;
	     run_ms(10))
		ck_assert_msg(h_now_ms() - t0 < 2 * 200 + H_LOADED,
		              "%llu refreshes in %.0f ms, refresh_ms 200",
		              (unsigned long long)(refreshes - since), h_now_ms() - t0);
	for (int i = 0; i < 30; i++)
		send_cmd(&c[i], key[i], 3000, (const char *[]){"GET", key[i], NULL});
	for (int i = 0; i < 30; i++) {
		ck_assert_msg(run_until(&c[i].done, 5000), "GET %s: no callback", key[i]);
		ck_assert_msg(!c[i].null && c[i].type == REDIS_REPLY_STRING, "GET %s: failed",
		              key[i]);
		ck_assert_str_eq(c[i].str, val[i]);
	}
	/* a wrong password: no map, calls fail by their deadline */
	struct csr_router *good = rt;
	rt = new_router("wrong", 5000);
	run_ms(300);
	ck_assert(!csr_covered(rt));
	ck_assert_msg(strstr(csr_refresh_error(rt), "AUTH: WRONGPASS"), "refresh error: \"%s\"",
	              csr_refresh_error(rt));
	call_sync(&c[0], key[0], 300, (const char *[]){"GET", key[0], NULL});
	ck_assert(c[0].null);
	ck_assert(c[0].at_ms <= c[0].deadline_ms + H_LOADED);
	csr_free(good);
	finish_rt();
}
END_TEST

/* The reshard test's stream: INCR of 20 counters of one slot, one call in
 * flight per counter, each answer the counter's exact next value. */
enum { NCTR = 20 };
static struct call ctr_call[NCTR];
static long long ctr_want[NCTR];
static char ctr_key[NCTR][16];
static int ctr_busy[NCTR], ctr_answers;
static double ctr_sent_ms[NCTR]; /* a counter's calls 5 ms apart at least: a stream, not a flood */

static void stream_step(void)
{
	for (int i = 0; i < NCTR; i++) {
		if (ctr_busy[i] && ctr_call[i].done) {
			ck_assert_msg(!ctr_call[i].null, "INCR %s: failed during the reshard",
			              ctr_key[i]);
			ck_assert_msg(ctr_call[i].type == REDIS_REPLY_INTEGER &&
			                  ctr_call[i].integer == ctr_want[i],
			              "INCR %s: %lld (type %d \"%s\"), not %lld", ctr_key[i],
			              ctr_call[i].integer, ctr_call[i].type, ctr_call[i].str,
			              ctr_want[i]);
			ctr_busy[i] = 0;
			ctr_answers++;
		}
		if (!ctr_busy[i] && h_now_ms() - ctr_sent_ms[i] >= 5) {
			ctr_sent_ms[i] = h_now_ms();
			ctr_want[i]++;
			send_cmd(&ctr_call[i], ctr_key[i], 3000,
			         (const char *[]){"INCR", ctr_key[i], NULL});
			ctr_busy[i] = 1;
		}
	}
}

static void stream_ms(int ms)
{
	for (double t0 = h_now_ms(); h_now_ms() - t0 < ms;) {
		event_base_loop(base, EVLOOP_ONCE);
		stream_step();
	}
}

static void migrate_keys(int o, int t, const char *const *keys)
{
	char port[16];
	snprintf(port, sizeof(port), "%d", port_of(t));
	for (int i = 0; keys[i]; i++) {
		char *r =
		    h_redis(C.first + o, "MIGRATE", "127.0.0.1", port, keys[i], "0", "5000", NULL);
		ck_assert_msg(r && strcmp(r, "OK") == 0, "MIGRATE %s: %s", keys[i], r ? r : "NULL");
		free(r);
	}
}

static char *node_id(int i)
{
	char *id = h_redis(C.first + i, "CLUSTER", "MYID", NULL);
	ck_assert(id && strlen(id) == CSL_ID_LEN);
	return id;
}

/* Slot {r} moved from its primary o to another primary t under a stream
 * of INCRs: none fails, each answers its counter's next value (ASK and
 * MOVED followed), and the router's map names t afterwards. An EVAL of
 * two keys, one moved and one not, gets TRYAGAIN: with a deadline shorter
 * than the split it fails (NULL); with a longer one it is answered once
 * the second key has moved, exactly. */
START_TEST(cluster_router_reshard)
{
	if (start() < 0)
		return;
	const unsigned slot = csl_keyslot("{r}", 3);
	int o = owner_of("{r}"), t = -1;
	for (int i = 0; i < C.n && t < 0; i++)
		if (i != o && is_master(i))
			t = i;
	ck_assert(o >= 0 && t >= 0);
	for (int i = 0; i < NCTR; i++)
		snprintf(ctr_key[i], sizeof(ctr_key[i]), "{r}%d", i);
	struct call e1, e2, x;
	call_sync(&x, "{r}", 2000, (const char *[]){"SET", "{r}ea", "5", NULL});
	ck_assert_str_eq(x.str, "OK");
	call_sync(&x, "{r}", 2000, (const char *[]){"SET", "{r}eb", "7", NULL});
	ck_assert_str_eq(x.str, "OK");
	stream_ms(100);

	char sslot[8];
	snprintf(sslot, sizeof(sslot), "%u", slot);
	char *oid = node_id(o), *tid = node_id(t);
	char *r = h_redis(C.first + t, "CLUSTER", "SETSLOT", sslot, "IMPORTING", oid, NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	r = h_redis(C.first + o, "CLUSTER", "SETSLOT", sslot, "MIGRATING", tid, NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	stream_ms(150);

	/* half the keys and {r}ea move: the EVAL of {r}ea and {r}eb is split */
	const char *first[] = {"{r}0", "{r}1", "{r}2", "{r}3", "{r}4",  "{r}5",
	                       "{r}6", "{r}7", "{r}8", "{r}9", "{r}ea", NULL};
	migrate_keys(o, t, first);
	const char *script = "return tonumber(redis.call('GET', KEYS[1])) + "
	                     "tonumber(redis.call('GET', KEYS[2]))";
	const char *eval[] = {"EVAL", script, "2", "{r}ea", "{r}eb", NULL};
	send_cmd(&e1, "{r}", 300, eval);
	for (double t0 = h_now_ms(); !e1.done && h_now_ms() - t0 < 300 + H_LOADED + 200;)
		stream_ms(10); /* the slot stays split past e1's deadline */
	ck_assert_msg(e1.done && e1.null, "EVAL over a split slot: %s (type %d), not failed",
	              e1.done ? e1.str : "no answer", e1.type);
	ck_assert_msg(e1.at_ms <= e1.deadline_ms + H_LOADED,
	              "EVAL failed %.0f ms past its deadline", e1.at_ms - e1.deadline_ms);
	ck_assert(stats_of(port_of(o)).tryagain > 0);
	send_cmd(&e2, "{r}", 5000, eval);
	stream_ms(100);
	ck_assert(!e2.done);

	/* the rest moves; every key is on t, the slot still migrating */
	char *rest = h_redis(C.first + o, "CLUSTER", "GETKEYSINSLOT", sslot, "100", NULL);
	ck_assert(rest);
	const char *keys[NCTR + 4];
	int n = 0;
	for (char *p = strtok(rest, "\n"); p && n < NCTR + 3; p = strtok(NULL, "\n"))
		keys[n++] = p;
	keys[n] = NULL;
	ck_assert_int_eq(n, NCTR / 2 + 1); /* {r}10-{r}19 and {r}eb */
	migrate_keys(o, t, keys);
	free(rest);
	ck_assert_int_eq(h_redis_int(C.first + o, "CLUSTER", "COUNTKEYSINSLOT", sslot, NULL), 0);
	stream_ms(300);
	ck_assert_msg(e2.done && !e2.null && e2.type == REDIS_REPLY_INTEGER && e2.integer == 12,
	              "EVAL once the keys moved: %s (null %d, type %d, %lld), not 12",
	              e2.done ? e2.str : "no answer", e2.null, e2.type, e2.integer);

	/* the slot is t's, as every primary is told */
	r = h_redis(C.first + t, "CLUSTER", "SETSLOT", sslot, "NODE", tid, NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	r = h_redis(C.first + o, "CLUSTER", "SETSLOT", sslot, "NODE", tid, NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	for (int i = 0; i < C.n; i++)
		if (i != o && i != t && is_master(i)) {
			r = h_redis(C.first + i, "CLUSTER", "SETSLOT", sslot, "NODE", tid, NULL);
			ck_assert_str_eq(r, "OK");
			free(r);
		}
	free(oid);
	free(tid);
	stream_ms(200);
	for (int i = 0; i < NCTR; i++) /* let the last ones end, checked */
		if (ctr_busy[i]) {
			ck_assert(run_until(&ctr_call[i].done, 4000));
			ck_assert_msg(!ctr_call[i].null && ctr_call[i].integer == ctr_want[i],
			              "INCR %s: %lld, not %lld", ctr_key[i], ctr_call[i].integer,
			              ctr_want[i]);
			ctr_busy[i] = 0;
		}
	ck_assert_int_eq(owner_of("{r}"), t);
	struct csr_node_stats so = stats_of(port_of(o));
	fprintf(stderr, "%s: %d INCRs answered; o: %llu ASK, %llu MOVED, %llu TRYAGAIN\n",
	        tcase_name(), ctr_answers, (unsigned long long)so.ask, (unsigned long long)so.moved,
	        (unsigned long long)so.tryagain);
	ck_assert(so.ask > 0 && so.moved > 0);
	ck_assert_int_eq(so.failed, 0);
	/* the counters are where the answers say, on t */
	for (int i = 0; i < NCTR; i++) {
		char *v = h_redis(C.first + t, "GET", ctr_key[i], NULL);
		char want[24];
		snprintf(want, sizeof(want), "%lld", ctr_want[i]);
		ck_assert_str_eq(v, want);
		free(v);
	}
	finish_rt();
}
END_TEST

/* CLUSTER FAILOVER on a replica: once it says master, calls for its slots
 * are answered there within 1 s (MOVED from the old primary, a refresh),
 * and the old primary, a replica now, is sent nothing more. */
START_TEST(cluster_router_failover)
{
	if (start() < 0)
		return;
	const char *key = "{f}k";
	int p = owner_of(key), rep = replica_of(p);
	struct call c;
	call_sync(&c, key, 2000, (const char *[]){"SET", key, "0", NULL});
	ck_assert_str_eq(c.str, "OK");
	char *r = h_redis(C.first + rep, "CLUSTER", "FAILOVER", NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	double done_ms = 0;
	for (double t0 = h_now_ms(); !done_ms; run_ms(20)) {
		if (h_now_ms() - t0 >= 10000) {
			char *pn = h_redis(C.first + p, "CLUSTER", "NODES", NULL);
			char *rn = h_redis(C.first + rep, "CLUSTER", "NODES", NULL);
			ck_abort_msg(
			    "the replica is not a master after 10 s; the primary's CLUSTER "
			    "NODES:\n%s\nthe replica's:\n%s",
			    pn ? pn : "(none)", rn ? rn : "(none)");
		}
		if (is_master(rep))
			done_ms = h_now_ms();
	}
	/* calls from now on: each answered, the first within the bound */
	double first_ok = 0;
	char val[16];
	for (int i = 1; i <= 30; i++) {
		snprintf(val, sizeof(val), "%d", i);
		call_sync(&c, key, 3000, (const char *[]){"SET", key, val, NULL});
		ck_assert_msg(!c.null && strcmp(c.str, "OK") == 0, "SET %d: %s", i,
		              c.null ? "failed" : c.str);
		if (!first_ok)
			first_ok = c.at_ms;
		run_ms(10);
	}
	ck_assert_msg(first_ok - done_ms <= 1000 + H_LOADED,
	              "the first SET after the failover answered after %.0f ms",
	              first_ok - done_ms);
	r = h_redis(C.first + rep, "GET", key, NULL);
	ck_assert_str_eq(r, "30");
	free(r);
	for (double t0 = h_now_ms(); owner_of(key) != rep; run_ms(20))
		ck_assert_msg(h_now_ms() - t0 < 1000 + H_LOADED,
		              "the map still names the old primary");
	/* the old primary is a replica of the map: its connection closed at
	 * the next refresh (at once if it was idle when the map changed),
	 * and nothing more sent there, as the node itself counts */
	csr_refresh(rt);
	for (double t0 = h_now_ms(); stats_of(port_of(p)).connected; run_ms(20))
		ck_assert_msg(h_now_ms() - t0 < 1000 + H_LOADED,
		              "the connection to the old primary is still open");
	long long rejected = rejected_calls(p, "incr");
	for (int i = 0; i < 50; i++) {
		call_sync(&c, key, 2000, (const char *[]){"INCR", key, NULL});
		ck_assert_int_eq(c.integer, 31 + i);
	}
	/* the map names the old primary a replica once the cluster does: the
	 * failover is complete when the old primary itself says so (ROLE),
	 * and a refresh reads it from the cluster's gossip within the bound
	 * (under load the node asked may still list it as a slotless
	 * primary for a moment) */
	for (double t0 = h_now_ms(); is_master(p); run_ms(20))
		ck_assert_msg(h_now_ms() - t0 < 10000,
		              "the old primary is not a replica after 10 s");
	for (double t0 = h_now_ms(); stats_of(port_of(p)).role != CSR_ROLE_REPLICA; run_ms(50)) {
		ck_assert_msg(h_now_ms() - t0 < 1000 + H_LOADED,
		              "the map still names the old primary a primary (role %d)",
		              (int)stats_of(port_of(p)).role);
		csr_refresh(rt);
	}
	struct csr_node_stats st = stats_of(port_of(p));
	ck_assert_int_eq(st.role, CSR_ROLE_REPLICA);
	ck_assert_int_eq(st.connected, 0);
	ck_assert_int_eq(st.sent, 0); /* no connection to it was made again */
	ck_assert_int_eq(rejected_calls(p, "incr"), rejected);
	ck_assert_int_eq(rejected_calls(rep, "incr"), 0);
	fprintf(stderr,
	        "%s: first SET answered %.0f ms after the failover; the old primary refused %lld "
	        "SETs (MOVED)\n",
	        tcase_name(), first_ok - done_ms, rejected_calls(p, "set"));
	finish_rt();
}
END_TEST

/* SIGKILL of a primary: calls for its slots fail (NULL) by their deadline
 * until its replica is promoted, then are answered within 1 s of the
 * promotion (a refresh on each failed reconnect, at most 500 ms apart);
 * calls for another primary's slots are answered throughout. The cluster
 * is told cluster-require-full-coverage no, as a lock deployment would
 * be: otherwise every slot answers CLUSTERDOWN from when the primary is
 * marked failed until the promotion. */
START_TEST(cluster_router_kill)
{
	if (start() < 0)
		return;
	for (int i = 0; i < C.n; i++) {
		char *r = h_redis(C.first + i, "CONFIG", "SET", "cluster-require-full-coverage",
		                  "no", NULL);
		ck_assert_str_eq(r, "OK");
		free(r);
	}
	const char *ka = "{a}k";
	int p = owner_of(ka), rep = replica_of(p);
	char kb[16] = "";
	for (int i = 0; i < 100 && !kb[0]; i++) { /* a key of another primary */
		char k[16];
		snprintf(k, sizeof(k), "{b%d}k", i);
		if (owner_of(k) != p)
			snprintf(kb, sizeof(kb), "%s", k);
	}
	ck_assert(kb[0]);
	struct call a, b;
	call_sync(&a, ka, 2000, (const char *[]){"SET", ka, "x", NULL});
	ck_assert_str_eq(a.str, "OK");

	h_master_kill(C.first + p);
	double kill_ms = h_now_ms(), promo_ms = 0, ok_ms = 0;
	int nulls = 0, b_ok = 0;
	char val[16];
	for (int i = 0; !ok_ms; i++) {
		ck_assert_msg(h_now_ms() - kill_ms < 15000,
		              "no answer for its slots 15 s after the kill");
		snprintf(val, sizeof(val), "%d", i);
		send_cmd(&a, ka, 300, (const char *[]){"SET", ka, val, NULL});
		send_cmd(&b, kb, 300, (const char *[]){"SET", kb, val, NULL});
		ck_assert(run_until(&a.done, 300 + 2000) && run_until(&b.done, 300 + 2000));
		ck_assert_msg(
		    a.at_ms <= a.deadline_ms + H_LOADED && b.at_ms <= b.deadline_ms + H_LOADED,
		    "a call answered %.0f ms past its deadline",
		    a.at_ms - a.deadline_ms > b.at_ms - b.deadline_ms ? a.at_ms - a.deadline_ms
		                                                      : b.at_ms - b.deadline_ms);
		ck_assert_msg(!b.null && strcmp(b.str, "OK") == 0, "SET %s at %.0f ms: %s", kb,
		              b.at_ms - kill_ms, b.null ? "failed" : b.str);
		b_ok++;
		if (a.null)
			nulls++;
		else
			ck_assert_str_eq(a.str, "OK");
		if (!promo_ms && is_master(rep))
			promo_ms = h_now_ms();
		if (!a.null) {
			ck_assert_msg(promo_ms, "a SET answered before the promotion");
			ok_ms = a.at_ms;
		}
		run_ms(20);
	}
	fprintf(stderr,
	        "%s: promoted %.0f ms after the kill, answered %.0f ms after that; "
	        "%d failed calls, %d answered on the other primary\n",
	        tcase_name(), promo_ms - kill_ms, ok_ms - promo_ms, nulls, b_ok);
	ck_assert(nulls > 0);
	ck_assert_msg(ok_ms - promo_ms <= 1000 + H_LOADED,
	              "the first SET on the promoted replica answered %.0f ms after the promotion",
	              ok_ms - promo_ms);
	char *r = h_redis(C.first + rep, "GET", ka, NULL);
	ck_assert_str_eq(r, val);
	free(r);
	finish_rt();
}
END_TEST

/* GET key on node i as a replica serves it (READONLY first); malloc'd,
 * "(nil)" when it lacks the key. */
static char *replica_get(int i, const char *key)
{
	struct timeval tv = {2, 0};
	redisContext *c = redisConnectWithTimeout("127.0.0.1", port_of(i), tv);
	ck_assert_msg(c && !c->err, "node %d: %s", i, c ? c->errstr : "no context");
	redisReply *r = redisCommand(c, "READONLY");
	ck_assert_msg(r && r->type == REDIS_REPLY_STATUS, "READONLY on node %d", i);
	freeReplyObject(r);
	r = redisCommand(c, "GET %s", key);
	ck_assert_msg(r != NULL, "GET %s on node %d: %s", key, i, c->errstr);
	char *v = strdup(r->type == REDIS_REPLY_STRING ? r->str
	                 : r->type == REDIS_REPLY_NIL  ? "(nil)"
	                                               : "(not a string)");
	freeReplyObject(r);
	redisFree(c);
	return v;
}

/* redis.wait_replicas on a cluster (csr_write, WAIT 1): a write is
 * answered once a WAIT behind it says a replica has it, so its primary's
 * replica has it when the callback runs; one WAIT goes behind all the
 * writes a loop turn sent to a primary, not one per key. With a
 * primary's replica stopped, that primary's writes fail (NULL) when WAIT
 * answers 0 at its timeout (they ran on the primary alone: writes that
 * count nowhere), the other primaries' are answered; a write held for its
 * WAIT and then detached, or freed with the router, never calls back. */
START_TEST(cluster_router_wait)
{
	enum { N = 60 };
	if (start() < 0)
		return;
	csr_free(rt);
	rt = new_router_w(NULL, 5000, 1, NULL, NULL);
	wait_covered(rt);
	static struct call c[N];
	static char key[N][16], val[N][16];
	for (int i = 0; i < N; i++) {
		snprintf(key[i], sizeof(key[i]), "w%d", i);
		snprintf(val[i], sizeof(val[i]), "v%d", i);
		const char *argv[] = {"SET", key[i], val[i], NULL};
		send_write(&c[i], key[i], 3000, argv);
	}
	for (int i = 0; i < N; i++) {
		ck_assert_msg(run_until(&c[i].done, 5000), "SET %s: no callback", key[i]);
		ck_assert_msg(
		    !c[i].null && c[i].type == REDIS_REPLY_STATUS && !strcmp(c[i].str, "OK"),
		    "SET %s: %s '%s'", key[i], c[i].null ? "failed" : "answered", c[i].str);
		char *v = replica_get(replica_of(owner_of(key[i])), key[i]);
		ck_assert_msg(strcmp(v, val[i]) == 0, "%s on its primary's replica: '%s', not '%s'",
		              key[i], v, val[i]);
		free(v);
	}
	/* the writes of one primary answered in the order they were made
	 * (a WAIT answers them all at once: callers hear them in order) */
	for (int i = 0; i < N; i++)
		for (int j = i + 1; j < N; j++)
			ck_assert_msg(owner_of(key[i]) != owner_of(key[j]) || c[i].seq < c[j].seq,
			              "SET %s answered after SET %s, on one primary", key[i],
			              key[j]);
	uint64_t waits = 0;
	for (int i = 0; i < C.n; i++)
		if (is_master(i))
			waits += stats_of(port_of(i)).waits;
	printf("%s: %d writes sent at once, %llu WAITs behind them\n", tcase_name(), N,
	       (unsigned long long)waits);
	ck_assert_msg(waits >= 3 && waits <= N / 4, "%llu WAITs for %d writes on 3 primaries",
	              (unsigned long long)waits, N);

	int p = owner_of("w0"), r = replica_of(p);
	const char *other = NULL;
	for (int i = 1; i < N && !other; i++)
		if (owner_of(key[i]) != p)
			other = key[i];
	ck_assert(other != NULL);
	h_master_stop(C.first + r);
	struct call a, b;
	double t0 = h_now_ms();
	send_write(&a, "w0", 3000, (const char *const[]){"SET", "w0", "alone", NULL});
	send_write(&b, other, 3000, (const char *const[]){"SET", other, "acked", NULL});
	ck_assert(run_until(&a.done, 5000) && run_until(&b.done, 5000));
	ck_assert_msg(!b.null && !strcmp(b.str, "OK"), "SET %s with its replica up: %s '%s'", other,
	              b.null ? "failed" : "answered", b.str);
	ck_assert_msg(a.null, "SET w0 with its replica stopped: answered '%s'", a.str);
	/* WAIT's timeout is half the command timeout (1000 ms): it failed then,
	 * not before, and within its deadline */
	ck_assert_msg(a.at_ms - t0 >= 450 && a.at_ms <= a.deadline_ms + 50,
	              "SET w0 failed %.0f ms after it was sent (deadline %.0f ms)", a.at_ms - t0,
	              a.deadline_ms - t0);
	char *v = h_redis(C.first + p, "GET", "w0", NULL);
	ck_assert_msg(v && strcmp(v, "alone") == 0, "w0 on its primary: '%s'", v ? v : "?");
	free(v);
	ck_assert_uint_ge(stats_of(port_of(p)).wait_short, 1);

	static struct call d, e; /* written by a callback that must never come */
	struct csr_req *q =
	    send_write(&d, "w0", 3000, (const char *const[]){"SET", "w0", "d", NULL});
	run_ms(150); /* answered by now, held for a WAIT that answers at 500 ms */
	csr_detach(q);
	run_ms(700);
	ck_assert_msg(!d.done, "a detached write called back");
	send_write(&e, "w0", 3000, (const char *const[]){"SET", "w0", "e", NULL});
	run_ms(150);
	csr_free(rt);
	rt = NULL;
	ck_assert_msg(!e.done, "a write freed with its router called back");
	h_master_cont(C.first + r);
	finish_rt();
}
END_TEST

static int cb_after; /* callbacks of calls detached or freed: must stay 0 */

static void forbidden_cb(const redisReply *r, void *arg)
{
	cb_after++;
}

/* Calls detached before they are sent and on the wire (their replies
 * come later and are dropped), a call on the wire past its deadline, a
 * connection that answers nothing for command_timeout_ms, and the router
 * freed with calls on the wire: no callback of theirs, nothing leaked
 * (ASan's run checks that), the other calls answered. */
START_TEST(cluster_router_detach_and_free)
{
	if (start() < 0)
		return;
	enum { N = 50 };
	static struct call ok[N];
	struct csr_req *q;
	char key[16];
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "d%d", i);
		q = csr_command(rt, csl_keyslot(key, strlen(key)), deadline_in(2000), forbidden_cb,
		                NULL, 3, (const char *[]){"SET", key, "x"}, NULL);
		ck_assert(q);
		csr_detach(q); /* not sent yet */
		send_cmd(&ok[i], key, 2000, (const char *[]){"SET", key, "y", NULL});
	}
	/* on the wire: BLPOPs that block 200 ms, detached at once */
	struct csr_req *wire[5];
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "{w%d}q", i);
		wire[i] =
		    csr_command(rt, csl_keyslot(key, strlen(key)), deadline_in(2000), forbidden_cb,
		                NULL, 3, (const char *[]){"BLPOP", key, "0.2"}, NULL);
		ck_assert(wire[i]);
	}
	run_ms(50);
	for (int i = 0; i < 5; i++)
		csr_detach(wire[i]);
	for (int i = 0; i < N; i++) {
		ck_assert(run_until(&ok[i].done, 3000));
		ck_assert_str_eq(ok[i].str, "OK");
	}
	run_ms(300); /* the BLPOPs' replies (nil) come, dropped */
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "d%d", i);
		char *v = h_redis(C.first + owner_of(key), "GET", key, NULL);
		ck_assert_str_eq(v, "y"); /* the detached SET ... x was never sent */
		free(v);
	}
	/* a call on the wire past its deadline (a BLPOP of 5 s, deadline
	 * 300 ms) fails then; the node answering nothing more on that
	 * connection for command_timeout_ms (1000), it is dropped and made
	 * again */
	const char *tk = "{t}q";
	int tp = port_of(owner_of(tk));
	struct csr_node_stats before = stats_of(tp);
	struct call w;
	double sent_ms = h_now_ms();
	send_cmd(&w, tk, 300, (const char *[]){"BLPOP", tk, "5", NULL});
	ck_assert(run_until(&w.done, 2000));
	ck_assert(w.null);
	ck_assert_msg(w.at_ms >= w.deadline_ms - 1 && w.at_ms <= w.deadline_ms + H_LOADED,
	              "the BLPOP failed %.0f ms after it was sent, its deadline 300",
	              w.at_ms - sent_ms);
	for (double t0 = h_now_ms(); stats_of(tp).lost == before.lost; run_ms(10))
		ck_assert_msg(h_now_ms() - t0 < 1000 + H_LOADED,
		              "the hung connection is not dropped");
	double lost_ms = h_now_ms() - sent_ms;
	struct csr_node_stats after = stats_of(tp);
	ck_assert_msg(lost_ms >= 1000, "dropped %.0f ms after the BLPOP was sent", lost_ms);
	ck_assert_str_eq(after.last_error, "command timed out");
	ck_assert_int_eq(after.failed, before.failed); /* the BLPOP had failed by its deadline */
	wait_covered(rt);
	struct call g;
	call_sync(&g, tk, 2000, (const char *[]){"RPUSH", tk, "v", NULL});
	ck_assert_int_eq(g.integer, 1);

	/* freed with calls on the wire (BLPOPs of 5 s) and calls not sent */
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "{z%d}q", i);
		ck_assert(csr_command(rt, csl_keyslot(key, strlen(key)), deadline_in(5000),
		                      forbidden_cb, NULL, 3, (const char *[]){"BLPOP", key, "5"},
		                      NULL));
	}
	run_ms(50);
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "{y%d}", i);
		ck_assert(csr_command(rt, csl_keyslot(key, strlen(key)), deadline_in(5000),
		                      forbidden_cb, NULL, 2, (const char *[]){"GET", key}, NULL));
	}
	csr_free(rt);
	rt = NULL;
	run_ms(300);
	ck_assert_int_eq(cb_after, 0);
	/* the BLPOPs' connections went with the router: the nodes see them gone */
	for (int i = 0; i < C.n; i++) {
		char *clients = h_redis(C.first + i, "CLIENT", "LIST", NULL);
		ck_assert(clients);
		ck_assert_msg(!strstr(clients, "cmd=blpop"), "node %d: a BLPOP still blocks", i);
		free(clients);
	}
	loop_end();
}
END_TEST

static char stamp_now[32];
static int lost_told;

static const char *stamp_cb(void *arg)
{
	return stamp_now;
}

static void lost_cb(void *arg)
{
	lost_told++;
}

/* A call's stamped argument (csr_stamp) is read when the call goes on
 * the wire, not when it is made: a call made, then the stamp changed
 * before the loop sends it, carries the new one; so does a call that
 * waited through a retry. And a lost connection is told (csr_lost_fn)
 * before its call fails, so what its caller sends next is newer. */
START_TEST(cluster_router_stamp)
{
	if (h_cluster_start(&C, 3, 1) < 0)
		return;
	loop_start();
	static char seed[32];
	snprintf(seed, sizeof(seed), "127.0.0.1:%d", h_master(C.first)->port);
	const char *seeds[] = {seed};
	struct csr_cfg cfg = {.seeds = seeds,
	                      .n_seeds = 1,
	                      .connect_timeout_ms = 500,
	                      .command_timeout_ms = 1000,
	                      .refresh_ms = 5000,
	                      .stamp = stamp_cb,
	                      .on_lost = lost_cb};
	char err[200];
	rt = csr_new(base, &cfg, err, sizeof(err));
	ck_assert_msg(rt, "csr_new: %s", err);
	wait_covered(rt);

	const char *eval[] = {"EVAL", "return ARGV[1]", "0", "unstamped"};
	snprintf(stamp_now, sizeof(stamp_now), "1");
	struct call a = {0};
	struct csr_req *q = csr_command(rt, 0, deadline_in(3000), call_cb, &a, 4, eval, NULL);
	ck_assert(q);
	csr_stamp(q, 3);
	snprintf(stamp_now, sizeof(stamp_now), "2"); /* before the loop sends it */
	ck_assert(run_until(&a.done, 5000) && !a.null);
	ck_assert_str_eq(a.str, "+2");

	/* the node of slot 0 loses its connection with a call on it */
	int p = -1;
	char host[CSL_HOST_MAX + 1];
	int port;
	ck_assert_int_eq(csr_slot_owner(rt, 0, host, sizeof(host), &port), 0);
	p = node_of_port(port);
	ck_assert(p >= 0);
	struct call b = {0};
	char never[16];
	ck_assert_int_eq(ktag_init(), 0);
	snprintf(never, sizeof(never), "{%s}never", ktag_of_slot(0)); /* a key of slot 0 */
	q = csr_command(rt, 0, deadline_in(3000), call_cb, &b, 3,
	                (const char *[]){"BLPOP", never, "5"}, NULL);
	ck_assert(q);
	run_ms(100);
	lost_told = 0;
	long long killed = h_redis_int(C.first + p, "CLIENT", "KILL", "TYPE", "normal", NULL);
	ck_assert_int_ge(killed, 1);
	ck_assert(run_until(&b.done, 5000));
	ck_assert(b.null);
	ck_assert_msg(lost_told >= 1, "a lost connection not told");
	finish_rt();
}
END_TEST

TCase *tc_cluster_router(void)
{
	TCase *tc = tcase_create("cluster_router");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 90);
	H_ADD(tc, cluster_router_spread);
	H_ADD(tc, cluster_router_reshard);
	H_ADD(tc, cluster_router_failover);
	H_ADD(tc, cluster_router_kill);
	H_ADD(tc, cluster_router_detach_and_free);
	H_ADD(tc, cluster_router_wait);
	H_ADD(tc, cluster_router_stamp);
	return tc;
}
