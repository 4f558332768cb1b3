/* test_cluster_live: the pure router core (src/cluster.c) against a real
 * Redis Cluster of 3 primaries and 3 replicas, where its unit tests
 * (tests/unit/test_cluster.c) use replies recorded from one: the slot
 * map from CLUSTER SHARDS and CLUSTER SLOTS of every node, the slot of
 * names against CLUSTER KEYSLOT, and the redirections a slot migration
 * makes (MOVED, ASK, TRYAGAIN, CROSSSLOT) parsed and classified as the
 * router will (issue 31). Skipped without redis-cli. */
#include "config.h"

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "harness.h"
#include "ktag.h"

static struct h_cluster C;

static int start(void)
{
	if (h_cluster_start(&C, 3, 1) < 0) {
		fprintf(stderr, "%s: no redis-cli: skipped\n", tcase_name());
		return -1;
	}
	return 0;
}

static redisContext *node(int i)
{
	struct timeval tv = {2, 0};
	redisContext *c = redisConnectWithTimeout("127.0.0.1", h_master(C.first + i)->port, tv);
	ck_assert_msg(c && !c->err, "node %d: %s", i, c ? c->errstr : "no context");
	redisSetTimeout(c, tv);
	return c;
}

static redisReply *cmd(redisContext *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	redisReply *r = redisvCommand(c, fmt, ap);
	va_end(ap);
	ck_assert_msg(r != NULL, "%s: no reply (%s)", fmt, c->errstr);
	return r;
}

/* The node (index from C.first) on port, or -1. */
static int node_of_port(int port)
{
	for (int i = 0; i < C.n; i++)
		if (h_master(C.first + i)->port == port)
			return i;
	return -1;
}

/* The map from every node's CLUSTER SHARDS and CLUSTER SLOTS: all slots
 * covered by 3 primaries, each started node in it with the role its ROLE
 * says, each replica following the primary its ROLE names, and both
 * replies giving every slot to the same primary. */
START_TEST(cluster_live_map)
{
	if (start() < 0)
		return;
	static struct csl_map shards, slots;
	char err[256];
	for (int i = 0; i < C.n; i++) {
		redisContext *c = node(i);
		redisReply *r = cmd(c, "CLUSTER SHARDS");
		ck_assert_msg(csl_map_from_shards(r, &shards, err, sizeof(err)) == 0,
		              "node %d: CLUSTER SHARDS: %s", i, err);
		freeReplyObject(r);
		r = cmd(c, "CLUSTER SLOTS");
		ck_assert_msg(csl_map_from_slots(r, &slots, err, sizeof(err)) == 0,
		              "node %d: CLUSTER SLOTS: %s", i, err);
		freeReplyObject(r);
		ck_assert_int_eq(csl_map_uncovered(&shards, NULL, 0), 0);
		ck_assert_int_eq(csl_map_uncovered(&slots, NULL, 0), 0);
		ck_assert_int_eq(shards.n_primaries, 3);
		ck_assert_int_eq(shards.n_nodes, C.n);
		for (int s = 0; s < CSL_SLOTS; s++)
			ck_assert_msg(
			    shards.nodes[shards.slot[s]].port == slots.nodes[slots.slot[s]].port,
			    "node %d: slot %d: CLUSTER SHARDS says port %d, CLUSTER SLOTS %d", i, s,
			    shards.nodes[shards.slot[s]].port, slots.nodes[slots.slot[s]].port);
		for (int k = 0; k < C.n; k++) {
			int port = h_master(C.first + k)->port;
			int x = csl_map_find(&shards, "127.0.0.1", port);
			ck_assert_msg(x >= 0, "node %d: port %d is not in the map", i, port);
			const struct csl_node *nd = &shards.nodes[x];
			/* a fresh replica is "loading" until its offset is gossiped */
			ck_assert_msg(
			    nd->health == CSL_HEALTH_ONLINE ||
			        (nd->role == CSL_REPLICA && nd->health == CSL_HEALTH_LOADING),
			    "node %d: port %d: health %d", i, port, nd->health);
			redisContext *kc = node(k);
			redisReply *role = cmd(kc, "ROLE");
			ck_assert(role->type == REDIS_REPLY_ARRAY && role->elements >= 3);
			if (strcmp(role->element[0]->str, "master") == 0) {
				ck_assert_int_eq(nd->role, CSL_PRIMARY);
			} else {
				ck_assert_int_eq(nd->role, CSL_REPLICA);
				ck_assert(nd->primary >= 0);
				ck_assert_int_eq(shards.nodes[nd->primary].port,
				                 (int)role->element[2]->integer);
			}
			freeReplyObject(role);
			redisFree(kc);
		}
		redisFree(c);
	}
}
END_TEST

/* csl_keyslot against CLUSTER KEYSLOT, hash tags and their edge cases
 * among them; and each name tagged by ktag in the name's own slot. */
START_TEST(cluster_live_keyslot)
{
	if (start() < 0)
		return;
	ck_assert_int_eq(ktag_init(), 0);
	static const char *const fixed[] = {"",
	                                    "a",
	                                    "{",
	                                    "}",
	                                    "{}",
	                                    "}{",
	                                    "{a}",
	                                    "{a}b",
	                                    "b{a}",
	                                    "{a}{b}",
	                                    "{}a",
	                                    "a{}",
	                                    "{{a}}",
	                                    "{a{b}c}",
	                                    "a{b",
	                                    "a}b{c}",
	                                    "{ }",
	                                    "{\xff}",
	                                    "order-7",
	                                    "{order-7}pay",
	                                    "{order-7}ship",
	                                    "lockd: k",
	                                    "lockd: {k} fence"};
	redisContext *c = node(0);
	char name[64];
	for (int k = 0; k < (int)(sizeof(fixed) / sizeof(fixed[0])) + 200; k++) {
		const char *key = name;
		size_t len;
		if (k < (int)(sizeof(fixed) / sizeof(fixed[0]))) {
			key = fixed[k];
			len = strlen(key);
		} else {
			unsigned v = (unsigned)k * 2654435761u;
			len = (size_t)snprintf(name, sizeof(name), "%s%u%s", v % 3 == 0 ? "{" : "",
			                       v, v % 5 == 0 ? "}x" : "");
		}
		redisReply *r = cmd(c, "CLUSTER KEYSLOT %b", key, len);
		ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
		ck_assert_msg(csl_keyslot(key, len) == (unsigned)r->integer,
		              "slot of \"%.*s\": %u, CLUSTER KEYSLOT says %lld", (int)len, key,
		              csl_keyslot(key, len), r->integer);
		long long want = r->integer;
		freeReplyObject(r);
		/* the name as a cluster entry would store it: "{T}lockd: K fence" */
		char tagged[128];
		size_t n = ktag_brace(tagged, sizeof(tagged), key, len);
		n += (size_t)snprintf(tagged + n, sizeof(tagged) - n, "lockd: %.*s fence", (int)len,
		                      key);
		r = cmd(c, "CLUSTER KEYSLOT %b", tagged, n);
		ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
		ck_assert_msg(r->integer == want, "\"%.*s\" is of slot %lld, its name's %lld",
		              (int)n, tagged, r->integer, want);
		freeReplyObject(r);
	}
	redisFree(c);
}
END_TEST

/* A redirection as the router will meet it: its parse and what to do. */
static void expect_redirect(redisReply *r, enum csl_action act, enum csl_redirect_kind kind,
                            int slot, int port, const char *what)
{
	ck_assert_msg(r->type == REDIS_REPLY_ERROR, "%s: not an error (type %d)", what, r->type);
	ck_assert_msg(csl_classify(r) == act, "%s: \"%s\" classified %d, not %d", what, r->str,
	              csl_classify(r), act);
	struct csl_redirect rd;
	ck_assert_msg(csl_parse_redirect(r->str, r->len, &rd) == kind, "%s: \"%s\" parsed as %d",
	              what, r->str, rd.kind);
	if (kind == CSL_R_MOVED || kind == CSL_R_ASK) {
		ck_assert_int_eq(rd.slot, slot);
		ck_assert_str_eq(rd.host, "127.0.0.1");
		ck_assert_int_eq(rd.port, port);
	}
	freeReplyObject(r);
}

/* A slot in migration from its primary o to another primary t: MOVED on
 * t for a key o serves, ASK on o for a key not there, TRYAGAIN for a
 * multi-key request with one key there and one not, ASKING then the
 * command accepted on t; CROSSSLOT for keys of two slots, in a script
 * too (declared keys of two slots, both on one node). */
START_TEST(cluster_live_redirects)
{
	if (start() < 0)
		return;
	static struct csl_map map;
	char err[256];
	redisContext *c0 = node(0);
	redisReply *r = cmd(c0, "CLUSTER SHARDS");
	ck_assert_msg(csl_map_from_shards(r, &map, err, sizeof(err)) == 0, "%s", err);
	freeReplyObject(r);
	redisFree(c0);
	int slot = (int)csl_keyslot("x", 1);
	int po = map.nodes[map.slot[slot]].port, o = node_of_port(po), t = -1;
	for (int k = 0; k < map.n_nodes && t < 0; k++)
		if (map.nodes[k].role == CSL_PRIMARY && map.nodes[k].port != po)
			t = node_of_port(map.nodes[k].port);
	ck_assert(o >= 0 && t >= 0);
	int pt = h_master(C.first + t)->port;
	redisContext *co = node(o), *ct = node(t);
	freeReplyObject(cmd(co, "SET {x}here 1"));
	expect_redirect(cmd(ct, "GET {x}here"), CSL_MOVED, CSL_R_MOVED, slot, po, "GET on t");

	char oid[64], tid[64];
	r = cmd(co, "CLUSTER MYID");
	snprintf(oid, sizeof(oid), "%s", r->str);
	freeReplyObject(r);
	r = cmd(ct, "CLUSTER MYID");
	snprintf(tid, sizeof(tid), "%s", r->str);
	freeReplyObject(r);
	r = cmd(ct, "CLUSTER SETSLOT %d IMPORTING %s", slot, oid);
	ck_assert_str_eq(r->str, "OK");
	freeReplyObject(r);
	r = cmd(co, "CLUSTER SETSLOT %d MIGRATING %s", slot, tid);
	ck_assert_str_eq(r->str, "OK");
	freeReplyObject(r);

	r = cmd(co, "GET {x}here");
	ck_assert_str_eq(r->str, "1"); /* still there: served by o */
	freeReplyObject(r);
	expect_redirect(cmd(co, "GET {x}gone"), CSL_ASK, CSL_R_ASK, slot, pt, "GET on o, missing");
	expect_redirect(cmd(co, "MGET {x}here {x}gone"), CSL_RETRY, CSL_R_TRYAGAIN, -1, 0,
	                "MGET on o, one missing");
	expect_redirect(cmd(ct, "GET {x}gone"), CSL_MOVED, CSL_R_MOVED, slot, po,
	                "GET on t without ASKING");
	freeReplyObject(cmd(ct, "ASKING"));
	r = cmd(ct, "GET {x}gone");
	ck_assert_int_eq(r->type, REDIS_REPLY_NIL);
	freeReplyObject(r);

	freeReplyObject(cmd(co, "CLUSTER SETSLOT %d STABLE", slot));
	freeReplyObject(cmd(ct, "CLUSTER SETSLOT %d STABLE", slot));

	/* Two slots of o's: refused, for a script's declared keys too (so a
	 * script call is one lock's, doc/cluster.md); one slot: run. */
	char other[32] = "";
	for (int k = 0; k < 1000 && !other[0]; k++) {
		char tag[16];
		int n = snprintf(tag, sizeof(tag), "y%d", k);
		unsigned s = csl_keyslot(tag, (size_t)n);
		if ((int)s != slot && map.nodes[map.slot[s]].port == po)
			snprintf(other, sizeof(other), "{%s}b", tag);
	}
	ck_assert(other[0]);
	expect_redirect(cmd(co, "MGET {x}a %s", other), CSL_FAIL, CSL_R_CROSSSLOT, -1, 0,
	                "MGET of two slots");
	expect_redirect(cmd(co, "EVAL %s 2 {x}a %s", "return 1", other), CSL_FAIL, CSL_R_CROSSSLOT,
	                -1, 0, "EVAL with keys of two slots");
	r = cmd(co, "EVAL %s 2 {x}a {x}b", "return 1");
	ck_assert_int_eq(csl_classify(r), CSL_OK);
	ck_assert_int_eq(r->integer, 1);
	freeReplyObject(r);
	redisFree(co);
	redisFree(ct);
}
END_TEST

TCase *tc_cluster_live(void)
{
	TCase *tc = tcase_create("cluster_live");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 90);
	H_ADD(tc, cluster_live_map);
	H_ADD(tc, cluster_live_keyslot);
	H_ADD(tc, cluster_live_redirects);
	return tc;
}
