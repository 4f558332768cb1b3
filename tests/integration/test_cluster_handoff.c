/* test_cluster_handoff: a handoff load on one key, from two lockd whose
 * only master is a Redis Cluster (issue 31), across a CLUSTER FAILOVER of
 * the key's primary with redis.wait_replicas 1, judged by soak_run.c's
 * checker: no two holders at once, every fence above the last. Skipped
 * without redis-cli. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_lockd_fix.h"
#include "harness.h"
#include "router_fix.h"
#include "soak_run.h"

#define FO_LEASE 3000

/* A handoff load on one key across a CLUSTER FAILOVER of its primary
 * (wait_replicas 1): 8 sessions on each lockd take turns on the key for
 * HANDOFF_S seconds, the failover at a third of it. The checker
 * (soak_run.c) finds no overlap of two holders and no fence that does
 * not grow; grants go on after the failover. */
#define HANDOFF_S 9

START_TEST(cluster_lockd_handoff_failover)
{
	enum { PER = 8, N = 2 * PER };
	if (start_two_with(FO_LEASE, "  wait_replicas: 1\n") < 0)
		return;
	struct run r;
	run_init(&r, N, "hot", 3131);
	for (int i = 0; i < N; i++) {
		struct sess *x = &r.s[i];
		x->inst = i < PER ? 0 : 1;
		x->c = cl_tcp(h_lockd(x->inst)->port);
		cl_expect(x->c, "PING", "PONG");
		x->lock_req = "LOCK hot WAIT 10000\n";
		x->st = S_IDLE;
		x->hold_min = 0;
		x->hold_max = 3;
		x->think_min = 0;
		x->think_max = 2;
	}
	int p = primary_of("hot"), rep = replica_of(p);
	double t0 = h_now_ms(), failed_over = 0;
	long before = 0;
	while (h_now_ms() - t0 < HANDOFF_S * 1000) {
		run_round(&r, 20);
		if (!failed_over && h_now_ms() - t0 > HANDOFF_S * 1000 / 3) {
			before = r.grants;
			char *rr = h_redis(C.first + rep, "CLUSTER", "FAILOVER", NULL);
			ck_assert_str_eq(rr, "OK");
			free(rr);
			failed_over = h_now_ms();
		}
	}
	run_drain(&r, 5000);
	long after = r.grants - before;
	printf("cluster_lockd_handoff_failover: %ld grants (%ld after the failover), overlaps %ld, "
	       "regressions %ld, lost %ld, quorum %ld, timeouts %ld\n",
	       r.grants, after, r.overlaps, r.regressions, r.lost, r.quorum, r.timeouts);
	print_lat("cluster_lockd_handoff_failover", "cross-instance handoff", &r.xlat);
	fflush(stdout);
	run_check(&r);
	ck_assert_int_eq(primary_of("hot"), rep);
	ck_assert_msg(before > 50 && after > 50, "grants: %ld before the failover, %ld after",
	              before, after);
	run_free(&r);
}
END_TEST

TCase *tc_cluster_handoff(void)
{
	TCase *tc = tcase_create("cluster_handoff");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 120);
	H_ADD(tc, cluster_lockd_handoff_failover);
	return tc;
}
