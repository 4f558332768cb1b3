/* hostile_elect: a hostile client against leader election (1.3), on real
 * masters and a real lockd (issue 32, items 5, 6 and 8): leader records
 * that a lockd leaves behind expire with their locks, a session's
 * observations are bounded and cost no time per name observed, a second
 * OBSERVE of a name sends its state again, and LEADER of a name held
 * SHARED answers as for a plain lock. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "sess_util.h"

#define LEASE 1000

/* Lines of a multi-line h_redis() reply (array elements), 0 for none. */
static int nlines(const char *r)
{
	int n = 0;
	for (; r && *r; r++)
		n += *r == '\n';
	return n;
}

/* Leader records ("lockd:NAME leader") on master i. */
static int records_on(int i)
{
	char *r = h_redis(i, "KEYS", "lockd:* leader", NULL);
	ck_assert_msg(r != NULL, "master %d does not answer", i);
	int n = nlines(r);
	free(r);
	return n;
}

/* Item 6: leaders of resumable sessions, then SIGTERM (lockd keeps such
 * sessions' locks for a RESUME elsewhere: they lapse on the masters). A
 * leader's record lapses with its lock: none is left a lease after.
 * While the leaders hold, the records stay (renewed with the locks): after
 * three leases every LEADER still answers its value. */
START_TEST(hostile_elect_records_expire)
{
	enum { NS = 4, NPER = 25 };
	h_std(&(struct h_opts){.lease_ms = LEASE});
	struct cl *c[NS];
	struct sess s[NS];
	char req[128], want[128];
	unsigned long long f[NS][NPER];
	for (int i = 0; i < NS; i++) {
		c[i] = cl_open();
		session(c[i], "SESSION GRACE 60000", 60000, &s[i]);
		for (int k = 0; k < NPER; k++) {
			snprintf(req, sizeof(req), "CAMPAIGN el%d.%d v%d", i, k, k);
			f[i][k] = cl_lock(c[i], req);
		}
	}
	for (int m = 0; m < 3; m++)
		ck_assert_int_eq(records_on(m), NS * NPER);
	h_sleep_ms(3 * LEASE);
	struct cl *q = cl_open();
	for (int i = 0; i < NS; i++)
		for (int k = 0; k < NPER; k++) {
			snprintf(req, sizeof(req), "LEADER el%d.%d", i, k);
			snprintf(want, sizeof(want), "LEADER %llu v%d", f[i][k], k);
			cl_expect(q, req, want);
		}
	cl_close(q);
	for (int m = 0; m < 3; m++) {
		long long t = h_redis_int(m, "PTTL", "lockd:el0.0 leader", NULL);
		ck_assert_msg(t > 0 && t <= LEASE, "master %d: record's PTTL %lld", m, t);
	}
	h_lockd_signal(0, SIGTERM);
	ck_assert_int_ge(h_lockd_wait(0, 10000), 0);
	double t0 = h_now_ms();
	int left = 0;
	/* the locks lapse within a lease; the records with them */
	while (h_now_ms() - t0 < LEASE + H_LOADED) {
		h_sleep_ms(100);
		left = 0;
		for (int m = 0; m < 3; m++)
			left += records_on(m);
		if (!left)
			break;
	}
	printf("hostile_elect_records_expire: %d leaders, records left on 3 masters %.0f ms "
	       "after SIGTERM: %d\n",
	       NS * NPER, h_now_ms() - t0, left);
	ck_assert_int_eq(left, 0);
	for (int i = 0; i < NS; i++)
		cl_close(c[i]);
}
END_TEST

TCase *tc_hostile_elect(void)
{
	TCase *tc = tcase_create("hostile_elect");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, hostile_elect_records_expire);
	return tc;
}
