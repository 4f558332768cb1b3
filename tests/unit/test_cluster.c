/* Unit tests of src/cluster.c, the pure core of the future Redis Cluster
 * router: key slots against the values a real Redis 7.0.15 gave
 * (CLUSTER KEYSLOT), slot maps from CLUSTER SHARDS and CLUSTER SLOTS
 * replies recorded from a real 3-primary, 3-replica cluster
 * (tests/unit/fixtures/README.md says how), and the cluster errors that
 * cluster sent. test_cluster_errors.c breaks those replies. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_fix.h"
#include "units.h"

static struct csl_map map_a, map_b; /* too big for the stack */
static char err[512];

/* ---- key slots ---- */

START_TEST(keyslots)
{
	static char k300[301], k302[303];
	/* Each slot as `CLUSTER KEYSLOT <key>` answered on Redis 7.0.15 */
	static const struct {
		const char *key;
		size_t len; /* 0: strlen */
		unsigned slot;
	} t[] = {
	    {"", 0, 0},
	    {"a", 0, 15495},
	    {"foo", 0, 12182},
	    {"{user1000}.following", 0, 3443},
	    {"{user1000}.followers", 0, 3443},
	    {"foo{}{bar}", 0, 8363},    /* "{}" is no tag: the whole key */
	    {"foo{{bar}}zap", 0, 4015}, /* the tag is "{bar" */
	    {"foo{bar}{zap}", 0, 5061}, /* the first tag: "bar" */
	    {"{}", 0, 15257},
	    {"bin\0\1\2\xfe\xff", 8, 13209},
	    {"a\0b\xff\x80{\0}z", 9, 0}, /* the tag is one NUL byte */
	    {"\0", 1, 0},
	    {"{", 0, 4092},
	    {"}", 0, 12090},
	    {"}{", 0, 12793},
	    {"{a", 0, 10276},
	    {"a}", 0, 5921},
	    {"{a}", 0, 15495},
	    {"x{a}y", 0, 15495},
	    {"123456789", 0, 12739}, /* CRC16/XMODEM's check value 0x31c3 */
	    {"{order-7}pay", 0, 516},
	    {"{order-7}ship", 0, 516},
	};
	for (size_t i = 0; i < N(t); i++) {
		size_t n = t[i].len ? t[i].len : strlen(t[i].key);

		ck_assert_msg(csl_keyslot(t[i].key, n) == t[i].slot, "case %zu: %u, expected %u", i,
		              csl_keyslot(t[i].key, n), t[i].slot);
	}
	/* "lockd-300/" 30 times: 4836; 299 "k" then "{t}": 15891 */
	for (int i = 0; i < 30; i++)
		memcpy(k300 + 10 * i, "lockd-300/", 10);
	ck_assert_uint_eq(csl_keyslot(k300, 300), 4836);
	memset(k302, 'k', 299);
	memcpy(k302 + 299, "{t}", 3);
	ck_assert_uint_eq(csl_keyslot(k302, 302), 15891);
	ck_assert_uint_eq(csl_keyslot(k302 + 299, 3), csl_keyslot("t", 1));
}
END_TEST

/* ---- maps from recorded replies ---- */

static void assert_node(const struct csl_map *m, int slot, int port, const char *id)
{
	const struct csl_node *n = cfx_at(m, slot);

	ck_assert_msg(n->port == port, "slot %d: port %d, expected %d", slot, n->port, port);
	ck_assert_str_eq(n->id, id);
	ck_assert_str_eq(n->host, "127.0.0.1");
	ck_assert_int_eq(n->role, CSL_PRIMARY);
	ck_assert_int_eq(n->primary, -1);
}

/* Both maps send every slot to the same node. */
static void same_routing(const struct csl_map *a, const struct csl_map *b)
{
	for (int s = 0; s < CSL_SLOTS; s++) {
		if (a->slot[s] == CSL_NO_NODE || b->slot[s] == CSL_NO_NODE) {
			ck_assert_uint_eq(a->slot[s], b->slot[s]);
			continue;
		}
		ck_assert_str_eq(cfx_at(a, s)->id, cfx_at(b, s)->id);
		ck_assert_str_eq(cfx_at(a, s)->host, cfx_at(b, s)->host);
		ck_assert_int_eq(cfx_at(a, s)->port, cfx_at(b, s)->port);
	}
}

/* The replica at port follows the primary at primary_port. */
static void assert_replica(const struct csl_map *m, int port, int primary_port)
{
	int i = csl_map_find(m, "127.0.0.1", port);

	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(m->nodes[i].role, CSL_REPLICA);
	ck_assert_int_ge(m->nodes[i].primary, 0);
	ck_assert_int_eq(m->nodes[m->nodes[i].primary].port, primary_port);
}

static void load(const char *name, struct csl_map *m)
{
	redisReply *r = cfx_fixture(name);
	int rc = strstr(name, "shards") ? csl_map_from_shards(r, m, err, sizeof(err))
	                                : csl_map_from_slots(r, m, err, sizeof(err));

	ck_assert_msg(rc == 0, "%s: %s", name, err);
	freeReplyObject(r);
}

START_TEST(stable_cluster)
{
	char gaps[64];

	load("cluster_shards.resp", &map_a);
	load("cluster_slots.resp", &map_b);
	for (int k = 0; k < 2; k++) {
		struct csl_map *m = k ? &map_b : &map_a;

		ck_assert_int_eq(m->n_primaries, 3);
		ck_assert_int_eq(m->n_nodes, 6);
		assert_node(m, 0, 37101, ID_37101);
		assert_node(m, 5460, 37101, ID_37101);
		assert_node(m, 5461, 37102, ID_37102);
		assert_node(m, 10922, 37102, ID_37102);
		assert_node(m, 10923, 37103, ID_37103);
		assert_node(m, 16383, 37103, ID_37103);
		assert_replica(m, 37104, 37102);
		assert_replica(m, 37105, 37103);
		assert_replica(m, 37106, 37101);
		ck_assert_int_eq(csl_map_uncovered(m, gaps, sizeof(gaps)), 0);
		ck_assert_str_eq(gaps, "");
		for (int i = 0; i < m->n_nodes; i++) {
			ck_assert_int_eq(m->nodes[i].health,
			                 k ? CSL_HEALTH_UNKNOWN : CSL_HEALTH_ONLINE);
			ck_assert_int_eq(m->nodes[i].tls_port, 0);
		}
	}
	same_routing(&map_a, &map_b);
	ck_assert_int_eq(csl_map_find(&map_a, "127.0.0.1", 37107), -1);
	ck_assert_int_eq(csl_map_find(&map_a, "127.0.0.2", 37101), -1);
	ck_assert_int_eq(csl_map_find(&map_a, "", 37101), -1);
}
END_TEST

/* Slot 12182 ("foo") MIGRATING on 37103, IMPORTING on 37101, one of its
 * two keys moved: CLUSTER SHARDS and SLOTS say nothing of it (the slot is
 * 37103's until SETSLOT NODE); only CLUSTER NODES of those two nodes does. */
START_TEST(migrating_slot)
{
	redisReply *imp = cfx_fixture("cluster_mig_nodes_importing.resp");
	redisReply *mig = cfx_fixture("cluster_mig_nodes_migrating.resp");

	load("cluster_shards.resp", &map_b);
	load("cluster_mig_shards.resp", &map_a);
	same_routing(&map_a, &map_b);
	assert_node(&map_a, 12182, 37103, ID_37103);
	load("cluster_mig_slots.resp", &map_a);
	same_routing(&map_a, &map_b);
	ck_assert_int_eq(imp->type, REDIS_REPLY_STRING);
	ck_assert_ptr_nonnull(strstr(imp->str, "myself,master - 0 1795916158000 1 connected 0-5460 "
	                                       "[12182-<-" ID_37103 "]\n"));
	ck_assert_ptr_nonnull(strstr(mig->str, "myself,master - 0 1795916158000 3 connected "
	                                       "10923-16383 [12182->-" ID_37101 "]\n"));
	freeReplyObject(imp);
	freeReplyObject(mig);
}
END_TEST

/* After SETSLOT 12182 NODE 37101: 37103 has two ranges, 37101 two. */
START_TEST(moved_slot)
{
	load("cluster_moved_shards.resp", &map_a);
	load("cluster_moved_slots.resp", &map_b);
	same_routing(&map_a, &map_b);
	for (int k = 0; k < 2; k++) {
		struct csl_map *m = k ? &map_b : &map_a;

		ck_assert_int_eq(m->n_primaries, 3);
		ck_assert_int_eq(m->n_nodes, 6); /* 37101 and 37106 in two ranges of SLOTS: once */
		assert_node(m, 12181, 37103, ID_37103);
		assert_node(m, 12182, 37101, ID_37101);
		assert_node(m, 12183, 37103, ID_37103);
		assert_node(m, 5460, 37101, ID_37101);
		assert_replica(m, 37106, 37101);
		ck_assert_int_eq(csl_map_uncovered(m, NULL, 0), 0);
	}
}
END_TEST

/* After CLUSTER FAILOVER on 37104: it serves 5461-10922, 37102 follows it. */
START_TEST(failover)
{
	load("cluster_failover_shards.resp", &map_a);
	load("cluster_failover_slots.resp", &map_b);
	same_routing(&map_a, &map_b);
	assert_node(&map_a, 5461, 37104, ID_37104);
	assert_replica(&map_a, 37102, 37104);
	assert_replica(&map_b, 37102, 37104);
}
END_TEST

/* 37104 and 37102 killed (cluster_state:fail): SHARDS says "fail" for
 * both, SLOTS drops the failed replica and keeps the failed primary. */
START_TEST(shard_down)
{
	int i;

	load("cluster_down_shards.resp", &map_a);
	load("cluster_down_slots.resp", &map_b);
	same_routing(&map_a, &map_b);
	assert_node(&map_a, 5461, 37104, ID_37104);
	ck_assert_int_eq(cfx_at(&map_a, 5461)->health, CSL_HEALTH_FAIL);
	ck_assert_int_eq(cfx_at(&map_a, 0)->health, CSL_HEALTH_ONLINE);
	i = csl_map_find(&map_a, "127.0.0.1", 37102);
	ck_assert_int_eq(map_a.nodes[i].health, CSL_HEALTH_FAIL);
	ck_assert_int_eq(map_a.n_nodes, 6);
	ck_assert_int_eq(map_b.n_nodes, 5);
	ck_assert_int_eq(csl_map_find(&map_b, "127.0.0.1", 37102), -1);
}
END_TEST

/* How slots came to their primary, between two recorded maps. */
static struct csl_map map_c;

static void expect_change(const struct csl_change *c, const struct csl_map *from_map,
                          const struct csl_map *to_map, enum csl_change_kind kind, int from_port,
                          int to_port, int slots, int replicas)
{
	ck_assert_int_eq(c->kind, kind);
	if (from_port)
		ck_assert_int_eq(from_map->nodes[c->from].port, from_port);
	else
		ck_assert_int_eq(c->from, -1);
	ck_assert_int_eq(to_map->nodes[c->to].port, to_port);
	ck_assert_int_eq(c->slots, slots);
	ck_assert_int_eq(c->replicas, replicas);
}

START_TEST(map_diff)
{
	struct csl_change ch[8];

	load("cluster_shards.resp", &map_a);
	ck_assert_int_eq(csl_map_diff(&map_a, &map_a, ch, 8), 0);
	load("cluster_slots.resp", &map_b); /* the same cluster, read the other way */
	ck_assert_int_eq(csl_map_diff(&map_a, &map_b, ch, 8), 0);
	/* CLUSTER FAILOVER on 37104 (recorded after slot 12182 moved to 37101):
	 * its primary's 5462 slots, to a replica of it; against the first map,
	 * slot 12182 too, in slot order */
	load("cluster_moved_shards.resp", &map_c);
	load("cluster_failover_shards.resp", &map_b);
	ck_assert_int_eq(csl_map_diff(&map_c, &map_b, ch, 8), 1);
	expect_change(&ch[0], &map_c, &map_b, CSL_CH_PROMOTED, 37102, 37104, 5462, 1);
	ck_assert_int_eq(csl_map_diff(&map_a, &map_b, ch, 8), 2);
	expect_change(&ch[0], &map_a, &map_b, CSL_CH_PROMOTED, 37102, 37104, 5462, 1);
	expect_change(&ch[1], &map_a, &map_b, CSL_CH_MOVED, 37103, 37101, 1, 1);
	load("cluster_failover_slots.resp", &map_b);
	ck_assert_int_eq(csl_map_diff(&map_c, &map_b, ch, 8), 1);
	expect_change(&ch[0], &map_c, &map_b, CSL_CH_PROMOTED, 37102, 37104, 5462, 1);
	/* and back: 37102 was 37104's replica in the failover's map */
	load("cluster_failover_shards.resp", &map_b);
	ck_assert_int_eq(csl_map_diff(&map_b, &map_c, ch, 8), 1);
	expect_change(&ch[0], &map_b, &map_c, CSL_CH_PROMOTED, 37104, 37102, 5462, 1);
	/* slot 12182 resharded from 37103 to 37101, and back */
	load("cluster_moved_shards.resp", &map_b);
	ck_assert_int_eq(csl_map_diff(&map_a, &map_b, ch, 8), 1);
	expect_change(&ch[0], &map_a, &map_b, CSL_CH_MOVED, 37103, 37101, 1, 1);
	ck_assert_int_eq(csl_map_diff(&map_b, &map_a, ch, 8), 1);
	expect_change(&ch[0], &map_b, &map_a, CSL_CH_MOVED, 37101, 37103, 1, 1);
	/* slot 5000 served again after DELSLOTS (recorded after the move too):
	 * nobody had it */
	load("cluster_unserved_shards.resp", &map_b);
	load("cluster_moved_shards.resp", &map_c);
	ck_assert_int_eq(csl_map_diff(&map_b, &map_c, ch, 8), 1);
	expect_change(&ch[0], &map_b, &map_c, CSL_CH_NEW, 0, 37101, 1, 0);
	ck_assert_int_eq(csl_map_diff(&map_c, &map_b, ch, 8), 0); /* unserved: not listed */
	/* a node is its id: the same id on another port is the same node, and
	 * a node the old map did not know is new, whatever its port */
	load("cluster_shards.resp", &map_b);
	int i = csl_map_find(&map_b, "127.0.0.1", 37101);
	map_b.nodes[i].port = 37199;
	ck_assert_int_eq(csl_map_diff(&map_a, &map_b, ch, 8), 0);
	load("cluster_failover_shards.resp", &map_b);
	load("cluster_moved_shards.resp", &map_c);
	i = csl_map_find(&map_b, "127.0.0.1", 37104);
	memset(map_b.nodes[i].id, 'f', CSL_ID_LEN);
	ck_assert_int_eq(csl_map_diff(&map_c, &map_b, ch, 8), 1);
	expect_change(&ch[0], &map_c, &map_b, CSL_CH_NEW, 37102, 37104, 5462, 1);
	/* without ids (CLUSTER SLOTS of an older Redis), host and port tell
	 * nodes apart */
	load("cluster_moved_shards.resp", &map_c);
	load("cluster_failover_shards.resp", &map_b);
	for (int k = 0; k < map_b.n_nodes; k++)
		map_b.nodes[k].id[0] = '\0';
	for (int k = 0; k < map_c.n_nodes; k++)
		map_c.nodes[k].id[0] = '\0';
	ck_assert_int_eq(csl_map_diff(&map_c, &map_b, ch, 8), 1);
	expect_change(&ch[0], &map_c, &map_b, CSL_CH_PROMOTED, 37102, 37104, 5462, 1);
	/* a replica of another primary taking slots holds nothing of theirs */
	load("cluster_failover_shards.resp", &map_b);
	i = csl_map_find(&map_c, "127.0.0.1", 37104);
	map_c.nodes[i].primary = csl_map_find(&map_c, "127.0.0.1", 37103);
	ck_assert_int_eq(csl_map_diff(&map_c, &map_b, ch, 8), 1);
	expect_change(&ch[0], &map_c, &map_b, CSL_CH_NEW, 37102, 37104, 5462, 0);
	/* slots taken from a primary the cluster marked failed, or that the
	 * new map no longer has, come without their keys */
	load("cluster_moved_shards.resp", &map_b);
	i = csl_map_find(&map_a, "127.0.0.1", 37103);
	map_a.nodes[i].health = CSL_HEALTH_FAIL;
	ck_assert_int_eq(csl_map_diff(&map_a, &map_b, ch, 8), 1);
	expect_change(&ch[0], &map_a, &map_b, CSL_CH_NEW, 37103, 37101, 1, 1);
	load("cluster_shards.resp", &map_a);
	i = csl_map_find(&map_b, "127.0.0.1", 37103);
	memset(map_b.nodes[i].id, 'e', CSL_ID_LEN); /* 37103 left; another node has its port */
	ck_assert_int_ge(csl_map_diff(&map_a, &map_b, ch, 8), 2);
	ck_assert_int_eq(ch[0].kind, CSL_CH_NEW); /* 12182: from 37103, gone */
	/* more groups than CSL_DIFF_MAX: -1 (every slot to be judged anew) */
	load("cluster_shards.resp", &map_b);
	for (int k = 0; k < CSL_SLOTS; k++)
		map_b.slot[k] = (uint16_t)(map_a.slot[k] == 0 ? 1 : 0);
	ck_assert_int_ge(csl_map_diff(&map_a, &map_b, ch, 8), 1); /* few groups: counted */
	load("cluster_shards.resp", &map_b);
	map_b.n_nodes = CSL_MAX_NODES;
	for (int k = 6; k < CSL_MAX_NODES; k++) {
		map_b.nodes[k] = map_b.nodes[0];
		snprintf(map_b.nodes[k].id, sizeof(map_b.nodes[k].id), "%040d", k);
		map_b.nodes[k].role = CSL_PRIMARY;
	}
	for (int k = 0; k < CSL_SLOTS; k++) /* 3 old primaries x 250 new ones */
		map_b.slot[k] = (uint16_t)(6 + k % (CSL_MAX_NODES - 6));
	ck_assert_int_eq(csl_map_diff(&map_a, &map_b, ch, 8), -1);
	/* fewer kept than there are: the count says so */
	load("cluster_failover_shards.resp", &map_b);
	map_b.slot[0] = map_b.slot[16383]; /* 37103 takes slot 0 from 37101 too */
	ck_assert_int_eq(csl_map_diff(&map_a, &map_b, ch, 1), 3);
	expect_change(&ch[0], &map_a, &map_b, CSL_CH_MOVED, 37101, 37103, 1, 1);
}
END_TEST

/* CLUSTER DELSLOTS 5000 on 37101 (cluster-require-full-coverage no) */
START_TEST(uncovered)
{
	char gaps[64];

	for (int k = 0; k < 2; k++) {
		load(k ? "cluster_unserved_slots.resp" : "cluster_unserved_shards.resp", &map_a);
		ck_assert_uint_eq(map_a.slot[5000], CSL_NO_NODE);
		ck_assert_int_eq(csl_map_uncovered(&map_a, gaps, sizeof(gaps)), 1);
		ck_assert_str_eq(gaps, "5000");
	}
	/* ranges, and a buffer too short for them all */
	map_a.slot[0] = map_a.slot[1] = map_a.slot[16383] = CSL_NO_NODE;
	ck_assert_int_eq(csl_map_uncovered(&map_a, gaps, sizeof(gaps)), 4);
	ck_assert_str_eq(gaps, "0-1, 5000, 16383");
	ck_assert_int_eq(csl_map_uncovered(&map_a, gaps, 12), 4);
	ck_assert_str_eq(gaps, "0-1, ...");
	for (int s = 0; s < CSL_SLOTS; s += 2)
		map_a.slot[s] = CSL_NO_NODE;
	/* the even slots, 1 and 16383: 8194 */
	ck_assert_int_eq(csl_map_uncovered(&map_a, gaps, sizeof(gaps)), 8194);
	ck_assert_str_eq(gaps, "0-2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, ...");
	ck_assert_int_eq(csl_map_uncovered(&map_a, gaps, 4), 8194);
	ck_assert_str_eq(gaps, "...");
}
END_TEST

/* cluster-preferred-endpoint-type unknown-endpoint: SHARDS' endpoint "",
 * SLOTS' nil: the host of the node asked. hostname (none announced):
 * "?", so the ip. */
START_TEST(endpoints)
{
	for (int k = 0; k < 2; k++) {
		load(k ? "cluster_slots_unknown_endpoint.resp"
		       : "cluster_shards_unknown_endpoint.resp",
		     &map_a);
		ck_assert_int_eq(map_a.n_nodes, 6);
		for (int i = 0; i < map_a.n_nodes; i++)
			ck_assert_str_eq(map_a.nodes[i].host, "");
		ck_assert_int_eq(cfx_at(&map_a, 0)->port, 37101);
		ck_assert_int_ge(csl_map_find(&map_a, "", 37103), 0);
		load(k ? "cluster_slots_hostname.resp" : "cluster_shards_hostname.resp", &map_b);
		for (int i = 0; i < map_b.n_nodes; i++)
			ck_assert_str_eq(map_b.nodes[i].host, "127.0.0.1");
		load("cluster_shards.resp", &map_a);
		same_routing(&map_a, &map_b);
	}
}
END_TEST

/* ---- redirections ---- */

START_TEST(redirects)
{
	static char h255[300], h256[300];
	static const struct {
		const char *text;
		size_t len; /* 0: strlen */
		enum csl_redirect_kind kind;
		int slot;
		const char *host;
		int port;
	} t[] = {
	    /* as Redis 7.0.15 sent them (cluster_errors.resp) */
	    {"MOVED 12182 127.0.0.1:37101", 0, CSL_R_MOVED, 12182, "127.0.0.1", 37101},
	    {"ASK 12182 127.0.0.1:37103", 0, CSL_R_ASK, 12182, "127.0.0.1", 37103},
	    {"MOVED 15495 :37103", 0, CSL_R_MOVED, 15495, "", 37103},
	    {"MOVED 15495 ?:37103", 0, CSL_R_MOVED, 15495, "?", 37103},
	    {"TRYAGAIN Multiple keys request during rehashing of slot", 0, CSL_R_TRYAGAIN, -1, "",
	     0},
	    {"CLUSTERDOWN Hash slot not served", 0, CSL_R_CLUSTERDOWN, -1, "", 0},
	    {"CLUSTERDOWN The cluster is down", 0, CSL_R_CLUSTERDOWN, -1, "", 0},
	    {"CROSSSLOT Keys in request don't hash to the same slot", 0, CSL_R_CROSSSLOT, -1, "",
	     0},
	    /* the edges */
	    {"MOVED 0 ::1:7000", 0, CSL_R_MOVED, 0, "::1", 7000},
	    {"ASK 16383 fe80::1%eth0:65535", 0, CSL_R_ASK, 16383, "fe80::1%eth0", 65535},
	    {"ASK 1 redis-0.redis.svc.cluster.local:1", 0, CSL_R_ASK, 1,
	     "redis-0.redis.svc.cluster.local", 1},
	    {"TRYAGAIN", 0, CSL_R_TRYAGAIN, -1, "", 0},
	    {"CLUSTERDOWN", 0, CSL_R_CLUSTERDOWN, -1, "", 0},
	    {"MOVED", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED ", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"ASK", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 16384 h:1", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 99999 h:1", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 123456 h:1", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED -1 h:1", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED +1 h:1", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 01 h:1", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED x h:1", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 ", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 h", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 h:", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 h:x", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 h:0", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 h:07000", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 h:65536", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 h:-1", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 h:1 ", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 h:1 x", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 h:1\r", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 h:1x", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED  1 h:1", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1  h:1", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 a b:1", 0, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 a\0b:1", 13, CSL_R_MALFORMED, -1, "", 0},
	    {"MOVED 1 h:1\0", 12, CSL_R_MALFORMED, -1, "", 0},
	    /* not redirections */
	    {"", 0, CSL_R_NONE, -1, "", 0},
	    {"ERR unknown command 'FOO'", 0, CSL_R_NONE, -1, "", 0},
	    {"MOVEDX 1 h:1", 0, CSL_R_NONE, -1, "", 0},
	    {"moved 1 h:1", 0, CSL_R_NONE, -1, "", 0},
	    {"ASKING", 0, CSL_R_NONE, -1, "", 0},
	    {"TRYAGAINX", 0, CSL_R_NONE, -1, "", 0},
	    {"NOSCRIPT No matching script. Please use EVAL.", 0, CSL_R_NONE, -1, "", 0},
	    {"READONLY You can't write against a read only replica.", 0, CSL_R_NONE, -1, "", 0},
	    {"LOADING Redis is loading the dataset in memory", 0, CSL_R_NONE, -1, "", 0},
	};
	struct csl_redirect rd;

	for (size_t i = 0; i < N(t); i++) {
		size_t n = t[i].len ? t[i].len : strlen(t[i].text);

		memset(&rd, 0x5a, sizeof(rd));
		ck_assert_msg(csl_parse_redirect(t[i].text, n, &rd) == t[i].kind,
		              "case %zu (%s): kind %d, expected %d", i, t[i].text, rd.kind,
		              t[i].kind);
		ck_assert_int_eq(rd.kind, t[i].kind);
		ck_assert_msg(rd.slot == t[i].slot, "case %zu: slot %d", i, rd.slot);
		ck_assert_str_eq(rd.host, t[i].host);
		ck_assert_int_eq(rd.port, t[i].port);
	}
	/* a host of 255 bytes, and one of 256 */
	memcpy(h255, "MOVED 1 ", 8);
	memset(h255 + 8, 'h', 255);
	memcpy(h255 + 8 + 255, ":1", 3);
	ck_assert_int_eq(csl_parse_redirect(h255, strlen(h255), &rd), CSL_R_MOVED);
	ck_assert_uint_eq(strlen(rd.host), 255);
	memcpy(h256, "MOVED 1 ", 8);
	memset(h256 + 8, 'h', 256);
	memcpy(h256 + 8 + 256, ":1", 3);
	ck_assert_int_eq(csl_parse_redirect(h256, strlen(h256), &rd), CSL_R_MALFORMED);
	ck_assert_str_eq(rd.host, "");
	ck_assert_int_eq(csl_parse_redirect(NULL, 0, &rd), CSL_R_NONE);
}
END_TEST

/* The error replies Redis 7.0.15 sent, in order (fixtures/README.md lists
 * the commands), read from RESP and classified. */
START_TEST(classify_recorded)
{
	static const struct {
		const char *text;
		enum csl_action action;
	} t[] = {
	    {"ASK 12182 127.0.0.1:37103", CSL_ASK}, /* GET of a moved key on the MIGRATING node */
	    {"ASK 12182 127.0.0.1:37103", CSL_ASK}, /* a lock script's new key there */
	    {"TRYAGAIN Multiple keys request during rehashing of slot", CSL_RETRY}, /* MGET */
	    {"TRYAGAIN Multiple keys request during rehashing of slot", CSL_RETRY}, /* 2-key EVAL */
	    {"TRYAGAIN Multiple keys request during rehashing of slot",
	     CSL_RETRY},                                /* ASKING; MGET */
	    {"MOVED 12182 127.0.0.1:37101", CSL_MOVED}, /* the IMPORTING node without ASKING */
	    {"MOVED 15495 127.0.0.1:37103", CSL_MOVED}, /* a replica */
	    {"CROSSSLOT Keys in request don't hash to the same slot", CSL_FAIL}, /* one node */
	    {"CROSSSLOT Keys in request don't hash to the same slot", CSL_FAIL}, /* two nodes */
	    {"MOVED 15495 :37103", CSL_MOVED},  /* unknown-endpoint */
	    {"MOVED 15495 ?:37103", CSL_MOVED}, /* hostname, none announced */
	    {"CLUSTERDOWN Hash slot not served", CSL_RETRY},
	    {"CLUSTERDOWN The cluster is down", CSL_RETRY},
	};
	static char buf[4096];
	size_t n = cfx_slurp("cluster_errors.resp", buf, sizeof(buf));
	redisReader *rd = redisReaderCreate();
	void *reply;
	size_t i = 0;

	ck_assert_int_eq(redisReaderFeed(rd, buf, n), REDIS_OK);
	while (redisReaderGetReply(rd, &reply) == REDIS_OK && reply) {
		redisReply *r = reply;

		ck_assert_uint_lt(i, N(t));
		ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
		ck_assert_str_eq(r->str, t[i].text);
		ck_assert_int_eq(csl_classify(r), t[i].action);
		freeReplyObject(r);
		i++;
	}
	ck_assert_uint_eq(i, N(t));
	redisReaderFree(rd);
}
END_TEST

START_TEST(classify_other)
{
	static const struct {
		const char *resp;
		enum csl_action action;
	} t[] = {
	    {"+OK\r\n", CSL_OK},
	    {":1\r\n", CSL_OK},
	    {"$-1\r\n", CSL_OK},
	    {"*1\r\n-MOVED 1 h:1\r\n", CSL_OK}, /* the top level only */
	    {"$11\r\nMOVED 1 h:1\r\n", CSL_OK}, /* a string, not an error */
	    {"-ERR value is not an integer or out of range\r\n", CSL_FAIL},
	    {"-MOVED 1 h\r\n", CSL_FAIL},
	    {"-ASK 16384 h:1\r\n", CSL_FAIL},
	    {"-TRYAGAIN\r\n", CSL_RETRY},
	};
	for (size_t i = 0; i < N(t); i++) {
		redisReply *r = cfx_resp(t[i].resp, strlen(t[i].resp));

		ck_assert_msg(csl_classify(r) == t[i].action, "case %zu: %d", i, csl_classify(r));
		freeReplyObject(r);
	}
	ck_assert_int_eq(csl_classify(NULL), CSL_FAIL);
}
END_TEST

Suite *cluster_suite(void)
{
	Suite *s = suite_create("cluster");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, keyslots);
	tcase_add_test(tc, stable_cluster);
	tcase_add_test(tc, migrating_slot);
	tcase_add_test(tc, moved_slot);
	tcase_add_test(tc, failover);
	tcase_add_test(tc, map_diff);
	tcase_add_test(tc, shard_down);
	tcase_add_test(tc, uncovered);
	tcase_add_test(tc, endpoints);
	tcase_add_test(tc, redirects);
	tcase_add_test(tc, classify_recorded);
	tcase_add_test(tc, classify_other);
	suite_add_tcase(s, tc);
	return s;
}
