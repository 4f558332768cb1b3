/* Unit tests of src/cluster.c on broken cluster maps: the CLUSTER SHARDS
 * and CLUSTER SLOTS replies recorded from a real cluster (fixtures/) with
 * one element changed, and replies built as RESP that no server sends
 * (too many nodes, wrong shapes). Each must be refused with its error
 * text, or read as documented (a TLS-only node, a shard of replicas). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_fix.h"
#include "units.h"

static struct csl_map map_a; /* too big for the stack */
static char err[512];

/* A RESP builder, for replies no server sends. */
static char rb[65536];
static size_t rbn;

static void rb_raw(const char *s)
{
	size_t n = strlen(s);

	ck_assert(n < sizeof(rb) - rbn);
	memcpy(rb + rbn, s, n);
	rbn += n;
}

static void rb_put(const char *fmt, long long v, const char *s)
{
	int n = snprintf(rb + rbn, sizeof(rb) - rbn, fmt, v, s ? s : "");

	ck_assert(n > 0 && (size_t)n < sizeof(rb) - rbn);
	rbn += (size_t)n;
}
#define rb_arr(n) rb_put("*%lld\r\n%s", (n), NULL)
#define rb_int(v) rb_put(":%lld\r\n%s", (v), NULL)
#define rb_str(s) rb_put("$%lld\r\n%s\r\n", (long long)strlen(s), (s))

/* One shard: slots lo-hi, a primary and `replicas` replicas at ports
 * from port, ids from id. */
static void rb_shard(long long lo, long long hi, int port, int id, int replicas)
{
	rb_arr(4);
	rb_str("slots");
	rb_arr(2);
	rb_int(lo);
	rb_int(hi);
	rb_str("nodes");
	rb_arr(1 + replicas);
	for (int k = 0; k <= replicas; k++) {
		char idbuf[48];

		snprintf(idbuf, sizeof(idbuf), "%040x", id + k);
		rb_arr(8);
		rb_str("id");
		rb_str(idbuf);
		rb_str("port");
		rb_int(port + k);
		rb_str("ip");
		rb_str("10.0.0.1");
		rb_str("role");
		rb_str(k ? "replica" : "master");
	}
}

/* ---- changing one element of a recorded reply ---- */

static redisReply *field(redisReply *kv, const char *name)
{
	for (size_t i = 0; i + 1 < kv->elements; i += 2)
		if (strcmp(kv->element[i]->str, name) == 0)
			return kv->element[i + 1];
	ck_abort_msg("no field %s", name);
	return NULL;
}

/* CLUSTER SHARDS' shard i, node j */
static redisReply *node(redisReply *r, size_t i, size_t j)
{
	return field(r->element[i], "nodes")->element[j];
}

/* Free what e holds, so that it can become another type. */
static void clear(redisReply *e)
{
	if (e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS ||
	    e->type == REDIS_REPLY_ERROR)
		free(e->str);
	if (e->type == REDIS_REPLY_ARRAY) {
		for (size_t i = 0; i < e->elements; i++)
			freeReplyObject(e->element[i]);
		free(e->element);
		e->element = NULL;
		e->elements = 0;
	}
	e->str = NULL;
	e->len = 0;
}

static void set_str(redisReply *e, const char *s, size_t len)
{
	clear(e);
	e->type = REDIS_REPLY_STRING;
	e->str = malloc(len + 1);
	memcpy(e->str, s, len);
	e->str[len] = '\0';
	e->len = len;
}

static void set_int(redisReply *e, long long v)
{
	clear(e);
	e->type = REDIS_REPLY_INTEGER;
	e->integer = v;
}

/* Rename a node's field (to take it away, or make it a duplicate). */
static void rename_field(redisReply *kv, const char *from, const char *to)
{
	for (size_t i = 0; i + 1 < kv->elements; i += 2)
		if (strcmp(kv->element[i]->str, from) == 0) {
			set_str(kv->element[i], to, strlen(to));
			return;
		}
	ck_abort_msg("no field %s", from);
}

static void expect_err(int (*fill)(const redisReply *, struct csl_map *, char *, size_t),
                       redisReply *r, const char *want)
{
	err[0] = '\0';
	ck_assert_int_eq(fill(r, &map_a, err, sizeof(err)), -1);
	ck_assert_str_eq(err, want);
	freeReplyObject(r);
}

/* ---- broken CLUSTER SHARDS replies ---- */

#define SHARDS csl_map_from_shards
#define SLOTS  csl_map_from_slots

START_TEST(shards_errors)
{
	redisReply *r;
	char longhost[300];

	/* shard 0: 37102 (node 0) and 37104, slots 5461-10922; shard 1: 37103 */
	r = cfx_fixture("cluster_shards.resp");
	set_int(field(node(r, 0, 0), "port"), 70000);
	expect_err(SHARDS, r, "shard 0, node 0: port 70000 not in 1-65535");
	r = cfx_fixture("cluster_shards.resp");
	set_int(field(node(r, 0, 1), "port"), 0);
	expect_err(SHARDS, r, "shard 0, node 1: port 0 not in 1-65535");
	r = cfx_fixture("cluster_shards.resp");
	set_str(field(node(r, 1, 0), "port"), "7000", 4);
	expect_err(SHARDS, r, "shard 1, node 0: port is a string, not an integer");
	r = cfx_fixture("cluster_shards.resp");
	rename_field(node(r, 0, 0), "port", "xport");
	expect_err(SHARDS, r, "shard 0, node 0: neither port nor tls-port");
	r = cfx_fixture("cluster_shards.resp");
	rename_field(node(r, 0, 0), "ip", "port");
	expect_err(SHARDS, r, "shard 0, node 0: field \"port\" given twice");
	r = cfx_fixture("cluster_shards.resp");
	rename_field(node(r, 0, 0), "id", "name");
	expect_err(SHARDS, r, "shard 0, node 0: no id");
	r = cfx_fixture("cluster_shards.resp");
	set_str(field(node(r, 0, 0), "id"), "243D9872c1f0629d9a63c40ffa13fa10ffe30573", 40);
	expect_err(SHARDS, r,
	           "shard 0, node 0: node id \"243D9872c1f0629d9a63c40ffa13fa10ffe30573\" is not "
	           "40 lowercase hex digits");
	r = cfx_fixture("cluster_shards.resp");
	set_str(field(node(r, 0, 0), "id"), "ab\0\n", 4);
	expect_err(SHARDS, r,
	           "shard 0, node 0: node id \"ab\\x00\\x0a\" is not 40 lowercase hex digits");
	r = cfx_fixture("cluster_shards.resp");
	set_int(field(node(r, 0, 0), "id"), 1);
	expect_err(SHARDS, r, "shard 0, node 0: id is an integer, not a string");
	r = cfx_fixture("cluster_shards.resp");
	set_str(field(node(r, 0, 0), "role"), "leader", 6);
	expect_err(SHARDS, r, "shard 0, node 0: role \"leader\" is neither master nor replica");
	r = cfx_fixture("cluster_shards.resp");
	rename_field(node(r, 0, 1), "role", "rol");
	expect_err(SHARDS, r, "shard 0, node 1: no role");
	r = cfx_fixture("cluster_shards.resp");
	set_str(field(node(r, 2, 1), "health"), "sick", 4);
	expect_err(SHARDS, r, "shard 2, node 1: unknown health \"sick\"");
	r = cfx_fixture("cluster_shards.resp");
	set_str(field(node(r, 0, 1), "role"), "master", 6);
	expect_err(SHARDS, r, "shard 0: a second primary (nodes 0 and 1)");
	r = cfx_fixture("cluster_shards.resp");
	set_str(field(node(r, 0, 0), "role"), "replica", 7);
	expect_err(SHARDS, r, "shard 0: serves slots but has no primary");
	r = cfx_fixture("cluster_shards.resp");
	set_str(field(node(r, 1, 1), "id"), ID_37104, 40);
	expect_err(SHARDS, r, "shard 1, node 1: node " ID_37104 " is listed twice");
	r = cfx_fixture("cluster_shards.resp");
	memset(longhost, 'h', sizeof(longhost));
	set_str(field(node(r, 0, 0), "endpoint"), longhost, 256);
	expect_err(SHARDS, r, "shard 0, node 0: endpoint is 256 bytes long, more than 255");
	r = cfx_fixture("cluster_shards.resp");
	set_str(field(node(r, 0, 0), "endpoint"), "a b", 3);
	expect_err(SHARDS, r, "shard 0, node 0: endpoint \"a b\" has a space or a control byte");
	r = cfx_fixture("cluster_shards.resp");
	set_str(field(node(r, 0, 0), "endpoint"), "?", 1);
	rename_field(node(r, 0, 0), "ip", "ipv4");
	expect_err(SHARDS, r, "shard 0, node 0: no usable endpoint and no ip");
	r = cfx_fixture("cluster_shards.resp");
	set_str(field(node(r, 0, 0), "endpoint"), "?", 1);
	set_str(field(node(r, 0, 0), "ip"), "10.0.0.1\r", 9);
	expect_err(SHARDS, r,
	           "shard 0, node 0: ip \"10.0.0.1\\x0d\" has a space or a control byte");

	/* slot ranges */
	r = cfx_fixture("cluster_shards.resp");
	set_int(field(r->element[0], "slots")->element[1], 16384);
	expect_err(SHARDS, r, "shard 0: slot range 5461-16384 not in 0-16383");
	r = cfx_fixture("cluster_shards.resp");
	set_int(field(r->element[0], "slots")->element[0], -1);
	expect_err(SHARDS, r, "shard 0: slot range -1-10922 not in 0-16383");
	r = cfx_fixture("cluster_shards.resp");
	set_int(field(r->element[0], "slots")->element[0], 10923);
	expect_err(SHARDS, r, "shard 0: slot range 10923-10922 is reversed");
	r = cfx_fixture("cluster_shards.resp");
	set_int(field(r->element[1], "slots")->element[0], 10900);
	expect_err(SHARDS, r,
	           "shard 1: slot 10900 of 127.0.0.1:37103 is already served by 127.0.0.1:37102");
	r = cfx_fixture("cluster_shards.resp");
	set_str(field(r->element[2], "slots")->element[1], "5460", 4);
	expect_err(SHARDS, r, "shard 2: slots element 1 is a string, not an integer");
	r = cfx_fixture("cluster_shards.resp");
	set_int(field(r->element[2], "nodes"), 2);
	expect_err(SHARDS, r, "shard 2: nodes is an integer, not an array");
	r = cfx_fixture("cluster_shards.resp");
	rename_field(r->element[1], "slots", "slot");
	expect_err(SHARDS, r, "shard 1: no slots");
	r = cfx_fixture("cluster_shards.resp");
	rename_field(r->element[1], "nodes", "node");
	expect_err(SHARDS, r, "shard 1: no nodes");

	/* the reply's shape */
	expect_err(SHARDS, NULL, "CLUSTER SHARDS: no reply");
	rbn = 0;
	rb_raw("+OK\r\n");
	expect_err(SHARDS, cfx_resp(rb, rbn), "CLUSTER SHARDS: a status, not an array");
	/* Redis 6.2's answer */
	rbn = 0;
	rb_raw("-ERR Unknown subcommand or wrong number of arguments for 'SHARDS'. Try CLUSTER "
	       "HELP.\r\n");
	expect_err(SHARDS, cfx_resp(rb, rbn),
	           "CLUSTER SHARDS: error \"ERR Unknown subcommand or wrong number of arguments "
	           "for 'SHARDS'. Try CLUSTER HELP.\"");
	rbn = 0;
	rb_arr(1);
	rb_arr(3);
	rb_str("slots");
	rb_arr(0);
	rb_str("nodes");
	expect_err(SHARDS, cfx_resp(rb, rbn),
	           "shard 0: an odd number of elements (3), not name and value pairs");
	rbn = 0;
	rb_arr(1);
	rb_arr(2);
	rb_int(1);
	rb_arr(0);
	expect_err(SHARDS, cfx_resp(rb, rbn), "shard 0: field name 0 is an integer, not a string");
	rbn = 0;
	rb_arr(1);
	rb_str("slots");
	expect_err(SHARDS, cfx_resp(rb, rbn), "shard 0: a string, not an array");
	rbn = 0;
	rb_arr(1);
	rb_arr(4);
	rb_str("slots");
	rb_arr(1);
	rb_int(0);
	rb_str("nodes");
	rb_arr(0);
	expect_err(SHARDS, cfx_resp(rb, rbn),
	           "shard 0: slots is not an array of start and end pairs");
}
END_TEST

/* The caps, a TLS-only node, and a shard of replicas only. */
START_TEST(shards_limits)
{
	redisReply *r;
	int i;

	rbn = 0;
	rb_arr(CSL_MAX_PRIMARIES);
	for (int k = 0; k < CSL_MAX_PRIMARIES; k++)
		rb_shard(k, k, 7000 + k, k, 0);
	r = cfx_resp(rb, rbn);
	ck_assert_int_eq(SHARDS(r, &map_a, err, sizeof(err)), 0);
	freeReplyObject(r);
	ck_assert_int_eq(map_a.n_primaries, CSL_MAX_PRIMARIES);
	ck_assert_int_eq(csl_map_uncovered(&map_a, NULL, 0), CSL_SLOTS - CSL_MAX_PRIMARIES);
	ck_assert_int_eq(cfx_at(&map_a, 63)->port, 7063);
	ck_assert_str_eq(cfx_at(&map_a, 63)->host, "10.0.0.1");
	ck_assert_int_eq(cfx_at(&map_a, 63)->health, CSL_HEALTH_UNKNOWN);

	rbn = 0;
	rb_arr(CSL_MAX_PRIMARIES + 1);
	for (int k = 0; k <= CSL_MAX_PRIMARIES; k++)
		rb_shard(k, k, 7000 + k, k, 0);
	expect_err(SHARDS, cfx_resp(rb, rbn), "more than 64 primaries");

	rbn = 0; /* 60 shards of a primary and 4 replicas: 300 nodes */
	rb_arr(60);
	for (int k = 0; k < 60; k++)
		rb_shard(k, k, 10000 + 5 * k, 5 * k, 4);
	expect_err(SHARDS, cfx_resp(rb, rbn), "more than 256 nodes");

	rbn = 0;
	rb_arr(1);
	rb_shard(0, 16383, 7000, 1, CSL_MAX_NODES);
	expect_err(SHARDS, cfx_resp(rb, rbn), "shard 0: 257 nodes, more than 256");

	/* TLS only: "tls-port" and no "port" */
	r = cfx_fixture("cluster_shards.resp");
	rename_field(node(r, 2, 0), "port", "tls-port");
	ck_assert_int_eq(SHARDS(r, &map_a, err, sizeof(err)), 0);
	ck_assert_int_eq(cfx_at(&map_a, 0)->port, 0);
	ck_assert_int_eq(cfx_at(&map_a, 0)->tls_port, 37101);
	ck_assert_int_eq(csl_map_find(&map_a, "127.0.0.1", 37101), map_a.slot[0]);
	freeReplyObject(r);
	r = cfx_fixture("cluster_shards.resp");
	rename_field(node(r, 2, 0), "ip", "tls-port");
	set_int(field(node(r, 2, 0), "tls-port"), 65536);
	expect_err(SHARDS, r, "shard 2, node 0: tls-port 65536 not in 1-65535");

	/* a shard with no slots and no primary: skipped */
	r = cfx_fixture("cluster_shards.resp");
	clear(field(r->element[0], "slots")); /* an empty array */
	set_str(field(node(r, 0, 0), "role"), "replica", 7);
	ck_assert_int_eq(SHARDS(r, &map_a, err, sizeof(err)), 0);
	freeReplyObject(r);
	ck_assert_int_eq(map_a.n_nodes, 4);
	ck_assert_int_eq(map_a.n_primaries, 2);
	i = csl_map_uncovered(&map_a, err, sizeof(err));
	ck_assert_int_eq(i, 5462);
	ck_assert_str_eq(err, "5461-10922");
}
END_TEST

/* ---- broken CLUSTER SLOTS replies ---- */

/* CLUSTER SLOTS' range i, element k (0 start, 1 end, 2 primary, 3... replicas) */
static redisReply *rng(redisReply *r, size_t i, size_t k)
{
	return r->element[i]->element[k];
}

START_TEST(slots_errors)
{
	redisReply *r;

	/* range 0: 0-5460 37101 (replica 37106); 1: 37102 (37104); 2: 37103 */
	r = cfx_fixture("cluster_slots.resp");
	set_str(rng(r, 0, 0), "0", 1);
	expect_err(SLOTS, r, "range 0: start is a string, not an integer");
	r = cfx_fixture("cluster_slots.resp");
	set_int(rng(r, 2, 1), 16384);
	expect_err(SLOTS, r, "range 2: slot range 10923-16384 not in 0-16383");
	r = cfx_fixture("cluster_slots.resp");
	set_int(rng(r, 1, 0), 10923);
	expect_err(SLOTS, r, "range 1: slot range 10923-10922 is reversed");
	r = cfx_fixture("cluster_slots.resp");
	set_int(rng(r, 1, 0), 5460);
	expect_err(SLOTS, r,
	           "range 1: slot 5460 of 127.0.0.1:37102 is already served by 127.0.0.1:37101");
	r = cfx_fixture("cluster_slots.resp");
	set_int(rng(r, 1, 2)->element[1], 65536);
	expect_err(SLOTS, r, "range 1, primary: port 65536 not in 1-65535");
	r = cfx_fixture("cluster_slots.resp");
	set_int(rng(r, 1, 3)->element[1], -1);
	expect_err(SLOTS, r, "range 1, replica 0: port -1 not in 1-65535");
	r = cfx_fixture("cluster_slots.resp");
	set_int(rng(r, 0, 2)->element[0], 1);
	expect_err(SLOTS, r, "range 0, primary: endpoint is an integer, not a string or nil");
	r = cfx_fixture("cluster_slots.resp");
	set_int(rng(r, 0, 2)->element[2], 1);
	expect_err(SLOTS, r, "range 0, primary: id is an integer, not a string");
	r = cfx_fixture("cluster_slots.resp");
	set_str(rng(r, 0, 2)->element[2], "264f", 4);
	expect_err(SLOTS, r, "range 0, primary: node id \"264f\" is not 40 lowercase hex digits");
	r = cfx_fixture("cluster_slots.resp");
	set_str(rng(r, 0, 2)->element[0], "?", 1);
	expect_err(SLOTS, r, "range 0, primary: endpoint \"?\" and no ip");
	r = cfx_fixture("cluster_slots.resp");
	set_str(rng(r, 0, 2)->element[0], "host\x7f", 5);
	expect_err(SLOTS, r,
	           "range 0, primary: endpoint \"host\\x7f\" has a space or a control byte");
	/* one id, two nodes */
	r = cfx_fixture("cluster_slots.resp");
	set_str(rng(r, 1, 2)->element[2], ID_37101, 40);
	expect_err(SLOTS, r,
	           "range 1, primary: node " ID_37101
	           " is at 127.0.0.1:37102 here, at 127.0.0.1:37101 before");
	r = cfx_fixture("cluster_slots.resp");
	set_str(rng(r, 1, 3)->element[2], ID_37101, 40);
	set_int(rng(r, 1, 3)->element[1], 37101);
	expect_err(SLOTS, r,
	           "range 1, replica 0: node " ID_37101 " is a replica here, a primary before");
	r = cfx_fixture("cluster_slots.resp");
	set_str(rng(r, 1, 3)->element[2], ID_37106, 40);
	set_int(rng(r, 1, 3)->element[1], 37106);
	expect_err(SLOTS, r,
	           "range 1, replica 0: replica " ID_37106 " follows " ID_37102 " here, " ID_37101
	           " before");

	/* the reply's shape */
	expect_err(SLOTS, NULL, "CLUSTER SLOTS: no reply");
	rbn = 0;
	rb_int(3);
	expect_err(SLOTS, cfx_resp(rb, rbn), "CLUSTER SLOTS: an integer, not an array");
	rbn = 0;
	rb_arr(1);
	rb_arr(2);
	rb_int(0);
	rb_int(16383);
	expect_err(SLOTS, cfx_resp(rb, rbn), "range 0: 2 elements, not start, end and a primary");
	rbn = 0;
	rb_arr(1);
	rb_str("0-16383");
	expect_err(SLOTS, cfx_resp(rb, rbn), "range 0: a string, not an array");
	rbn = 0;
	rb_arr(1);
	rb_arr(3);
	rb_int(0);
	rb_int(16383);
	rb_arr(2);
	rb_str("10.0.0.1");
	rb_int(7000);
	expect_err(SLOTS, cfx_resp(rb, rbn),
	           "range 0, primary: 2 elements, not endpoint, port and id");
	rbn = 0;
	rb_arr(1);
	rb_arr(3);
	rb_int(0);
	rb_int(16383);
	rb_arr(4);
	rb_str("10.0.0.1");
	rb_int(7000);
	rb_str(ID_37101);
	rb_arr(1);
	rb_str("ip");
	expect_err(SLOTS, cfx_resp(rb, rbn),
	           "range 0, primary: an odd number of elements (1), not name and value pairs");

	/* an empty reply (a node in no cluster yet): a map of nothing */
	rbn = 0;
	rb_arr(0);
	r = cfx_resp(rb, rbn);
	ck_assert_int_eq(SLOTS(r, &map_a, err, sizeof(err)), 0);
	freeReplyObject(r);
	ck_assert_int_eq(map_a.n_nodes, 0);
	ck_assert_int_eq(csl_map_uncovered(&map_a, err, sizeof(err)), CSL_SLOTS);
	ck_assert_str_eq(err, "0-16383");
}
END_TEST

Suite *cluster_errors_suite(void)
{
	Suite *s = suite_create("cluster_errors");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, shards_errors);
	tcase_add_test(tc, shards_limits);
	tcase_add_test(tc, slots_errors);
	suite_add_tcase(s, tc);
	return s;
}
