/* test_cluster_events: what the cluster router tells of where its slots'
 * data comes from (csr_event, issue 31), against a live cluster of 3
 * primaries and 3 replicas: a CLUSTER FAILOVER is a promotion, with the
 * data for a router whose writes waited for the one replica
 * (wait_replicas 1) and without for one whose writes did not; a primary
 * killed and started again on its port (its replica kept from failing
 * over) is a restart. Each is told before any reply of the node
 * concerned reaches a call: lockd must judge a node before it counts
 * what the node says. Skipped without redis-cli. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router_fix.h"

/* What one router told. */
struct rec {
	int n;
	struct csr_event ev[16];
};

static void rec_cb(const struct csr_event *ev, void *arg)
{
	struct rec *r = arg;
	if (r->n < 16)
		r->ev[r->n] = *ev;
	r->n++;
}

/* A call that notes how many events its router had told when its reply
 * came. */
struct seen {
	struct call c;
	const struct rec *r;
	int told;
};

static void seen_cb(const redisReply *r, void *arg)
{
	struct seen *s = arg;
	call_cb(r, &s->c);
	s->told = s->r->n;
}

static void write_seen(struct csr_router *via, struct seen *s, const struct rec *r, const char *key,
                       const char *val, int deadline_ms)
{
	memset(s, 0, sizeof(*s));
	s->r = r;
	const char *argv[] = {"SET", key, val};
	ck_assert(csr_write(via, csl_keyslot(key, strlen(key)), deadline_in(deadline_ms), seen_cb,
	                    s, 3, argv, NULL) != NULL);
	ck_assert_msg(run_until(&s->c.done, deadline_ms + 2000), "SET %s: no callback", key);
	ck_assert_msg(!s->c.null && strcmp(s->c.str, "OK") == 0, "SET %s %s: %s '%s'", key, val,
	              s->c.null ? "failed" : "answered", s->c.str);
}

/* Run a SET of key through via until one is answered OK (each call
 * deadline_ms; at most within_ms in all). */
static void write_until_ok(struct csr_router *via, struct seen *s, const struct rec *r,
                           const char *key, const char *val, int deadline_ms, int within_ms)
{
	int ok = 0;
	for (double t0 = h_now_ms(); !ok && h_now_ms() - t0 < within_ms;) {
		memset(s, 0, sizeof(*s));
		s->r = r;
		const char *argv[] = {"SET", key, val};
		ck_assert(csr_write(via, csl_keyslot(key, strlen(key)), deadline_in(deadline_ms),
		                    seen_cb, s, 3, argv, NULL) != NULL);
		ck_assert_msg(run_until(&s->c.done, deadline_ms + 2000), "SET %s: no callback",
		              key);
		ok = !s->c.null && strcmp(s->c.str, "OK") == 0;
		if (!ok)
			run_ms(50);
	}
	ck_assert_msg(ok, "no SET %s answered OK within %d ms", key, within_ms);
}

/* Every node's default user may, or may not, ask CLUSTER SHARDS and
 * CLUSTER SLOTS: a router that cannot refresh its map keeps the old one. */
static void maps_allowed(int yes)
{
	for (int i = 0; i < C.n; i++) {
		char *r = h_redis(C.first + i, "ACL", "SETUSER", "default",
		                  yes ? "+cluster|shards" : "-cluster|shards",
		                  yes ? "+cluster|slots" : "-cluster|slots", NULL);
		ck_assert_str_eq(r, "OK");
		free(r);
	}
}

/* CLUSTER FAILOVER on the replica of key's primary. While no router can
 * read a new map, a write for the key gets MOVED to the promoted replica
 * and waits for a map that names it: it fails by its deadline, and
 * nothing is sent to that node. Once maps may be read again, both
 * routers tell PROMOTED before the first write is answered there, with
 * the data for the one whose writes waited for a replica. */
START_TEST(cluster_router_promotion)
{
	if (start() < 0)
		return;
	static struct rec r1, r0;
	memset(&r1, 0, sizeof(r1));
	memset(&r0, 0, sizeof(r0));
	csr_free(rt);
	rt = new_router_w(NULL, 60000, 1, rec_cb, &r1);
	wait_covered(rt);
	struct csr_router *rt0 = new_router_w(NULL, 60000, 0, rec_cb, &r0);
	wait_covered(rt0);
	const char *key = "{e}k";
	int p = owner_of(key), rep = replica_of(p);
	struct seen s;
	write_seen(rt, &s, &r1, key, "1", 3000);
	write_seen(rt0, &s, &r0, key, "2", 3000);
	ck_assert_msg(r1.n == 0 && r0.n == 0,
	              "events before any change: %d and %d (a first map and first "
	              "connections tell nothing)",
	              r1.n, r0.n);
	maps_allowed(0);
	char *r = h_redis(C.first + rep, "CLUSTER", "FAILOVER", NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	for (double t0 = h_now_ms(); !is_master(rep); run_ms(20))
		ck_assert_msg(h_now_ms() - t0 < 10000, "the replica is not a master after 10 s");
	memset(&s, 0, sizeof(s));
	s.r = &r1;
	const char *argv[] = {"SET", key, "blocked"};
	ck_assert(csr_write(rt, csl_keyslot(key, strlen(key)), deadline_in(1000), seen_cb, &s, 3,
	                    argv, NULL) != NULL);
	ck_assert(run_until(&s.c.done, 3000));
	ck_assert_msg(s.c.null, "a write answered by a node no map named: '%s'", s.c.str);
	ck_assert_int_eq(r1.n, 0);
	ck_assert_uint_eq(stats_of(port_of(rep)).sent, 0);
	maps_allowed(1);
	for (int k = 0; k < 2; k++) {
		struct rec *rc = k ? &r0 : &r1;
		/* with wait_replicas 1, a write counts once the old primary has
		 * followed the new one as its replica */
		write_until_ok(k ? rt0 : rt, &s, rc, key, "3", 2000, 10000);
		ck_assert_msg(s.told >= 1,
		              "router %d: the new primary answered before the promotion "
		              "was told",
		              k);
		ck_assert_int_eq(rc->n, 1);
		const struct csr_event *e = &rc->ev[0];
		ck_assert_int_eq(e->kind, CSR_EV_PROMOTED);
		ck_assert_int_eq(e->port, port_of(rep));
		ck_assert_int_eq(e->from_port, port_of(p));
		ck_assert_str_eq(e->host, "127.0.0.1");
		ck_assert_int_ge(e->slots, 5461); /* a third of 16384, the shard's */
		ck_assert_int_le(e->slots, 5462);
		ck_assert_int_eq(e->replicas, 1);
		ck_assert_msg(e->with_data == !k, "router %d (wait_replicas %d): with_data %d", k,
		              !k, e->with_data);
	}
	csr_free(rt0);
	finish_rt();
}
END_TEST

/* A primary killed and started again on its port, before its replica can
 * take over (cluster-replica-no-failover): its new run_id is told as a
 * restart before the write that follows is answered by it. */
START_TEST(cluster_router_restart)
{
	if (start() < 0)
		return;
	static struct rec r1;
	memset(&r1, 0, sizeof(r1));
	csr_free(rt);
	rt = new_router_w(NULL, 5000, 1, rec_cb, &r1);
	wait_covered(rt);
	const char *key = "{r}k";
	int q = owner_of(key), qr = replica_of(q);
	struct seen s;
	write_seen(rt, &s, &r1, key, "1", 3000);
	char *r =
	    h_redis(C.first + qr, "CONFIG", "SET", "cluster-replica-no-failover", "yes", NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	h_master_restart(C.first + q);
	/* A call for a primary whose connection is down fails at once, and
	 * the cluster answers CLUSTERDOWN until it sees q again (the router
	 * retries that within the call's time): the first write it answers */
	write_until_ok(rt, &s, &r1, key, "2", 2000, 10000);
	ck_assert_msg(s.told >= 1, "the restarted primary answered before its restart was told");
	ck_assert_int_eq(r1.n, 1);
	const struct csr_event *e = &r1.ev[0];
	ck_assert_int_eq(e->kind, CSR_EV_RESTARTED);
	ck_assert_int_eq(e->port, port_of(q));
	ck_assert_int_eq(strlen(e->run_id), 40);
	ck_assert_int_eq(strlen(e->old_run_id), 40);
	ck_assert_str_ne(e->run_id, e->old_run_id);
	ck_assert_int_eq(e->with_data, 0);
	ck_assert_uint_eq(stats_of(port_of(q)).restarts, 1);
	finish_rt();
}
END_TEST

TCase *tc_cluster_events(void)
{
	TCase *tc = tcase_create("cluster_events");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 90);
	H_ADD(tc, cluster_router_promotion);
	H_ADD(tc, cluster_router_restart);
	return tc;
}
