/* Adoption takes the fence a majority of the masters' records hold (1.2),
 * against real masters and two real lockds: a master whose grant answer
 * never reached lockd A (stopped through the call, A dropped it, then it
 * ran the queued script on SIGCONT) holds its own fence counter in the
 * session's record, where no write-back corrected it. lockd B adopts
 * the session after A's SIGKILL and must tell the fence A granted, not
 * that master's (larger) one; when too few masters answer to tell which
 * fence was granted, the hold is reported LOST with every fence seen,
 * the granted one among them, and is not adopted. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define LEASE 3000
static const struct h_opts opts = {.lease_ms = LEASE};

/* The fence in the record of session id for the lock of key k on master
 * i, or 0. */
static unsigned long long record_fence(int i, const char *id)
{
	char rkey[128];
	snprintf(rkey, sizeof(rkey), "lockd: session %s", id);
	char *v = h_redis(i, "HGET", rkey, "x0 k", NULL);
	char tok[128];
	unsigned long long f = 0;
	if (!v || sscanf(v, "%127s %llu", tok, &f) != 2)
		f = 0;
	free(v);
	return f;
}

/* Two lockds on three masters; a resumable session on lockd 0 holds k
 * with fence *granted; then master 2's record of the hold is made to say
 * *other, larger, as the record of a master whose grant answer never
 * reached lockd 0 says (the script ran there, with that master's own
 * fence counter, after lockd 0 had given up on it: it stopped through the
 * call and went on later). Writing it by hand makes the state exact: a
 * real stop leaves lockd 0 a race to correct it on reconnection, which it
 * does, and the test would test the race. Then lockd 0 is killed.
 * Writes the session's "RESUME id secret" to resume_req. */
static void late_master_setup(char *resume_req, size_t n, unsigned long long *granted,
                              unsigned long long *other)
{
	h_std(&opts);
	h_lockd_start(&opts);
	struct cl *c = cl_open();
	const char *r = cl_cmd(c, "SESSION", H_SLOW_LIMIT);
	char id[20], sec[40];
	ck_assert_msg(r && sscanf(r, "SESSION %19s %39s", id, sec) == 2, "SESSION: '%s'",
	              r ? r : "(nothing)");
	snprintf(resume_req, n, "RESUME %s %s", id, sec);
	*granted = cl_lock(c, "LOCK k");
	char rkey[128];
	snprintf(rkey, sizeof(rkey), "lockd: session %s", id);
	double end = h_now_ms() + 2000;
	while (record_fence(2, id) != *granted && h_now_ms() < end)
		h_sleep_ms(10);
	for (int i = 0; i < 3; i++)
		ck_assert_msg(record_fence(i, id) == *granted,
		              "master %d's record of k holds %llu, the grant said %llu", i,
		              record_fence(i, id), *granted);
	char *v = h_redis(2, "HGET", rkey, "x0 k", NULL);
	char tok[64];
	unsigned long long f;
	int holds, ttl;
	ck_assert_msg(v && sscanf(v, "%63s %llu %d %d", tok, &f, &holds, &ttl) == 4,
	              "master 2's record of k: '%s'", v ? v : "(none)");
	free(v);
	*other = *granted + 1000000;
	char nv[160];
	snprintf(nv, sizeof(nv), "%s %llu %d %d", tok, *other, holds, ttl);
	free(h_redis(2, "HSET", rkey, "x0 k", nv, NULL));
	ck_assert_int_eq(record_fence(2, id), *other);
	h_lockd_signal(0, SIGKILL);
	ck_assert_int_ne(h_lockd_wait(0, 3000), -1);
	cl_want_eof(c, H_TMO);
	cl_close(c);
}

/* Every master answers B: two records agree on the granted fence. */
START_TEST(adopt_fence_of_majority)
{
	char req[128];
	unsigned long long granted, other;
	late_master_setup(req, sizeof(req), &granted, &other);
	struct cl *c2 = cl_tcp(h_lockd(1)->port);
	cl_expect(c2, req, "OK 1");
	char want[128];
	snprintf(want, sizeof(want), "KEY k %llu 1 ", granted);
	const char *r = cl_cmd(c2, "HELD", H_SLOW_LIMIT);
	ck_assert_msg(r && strncmp(r, want, strlen(want)) == 0,
	              "HELD on lockd 1 after the resume: '%s', expected '%s...' (master 2's "
	              "record says %llu)",
	              r ? r : "(nothing)", want, other);
	r = cl_line(c2, H_TMO);
	ck_assert_msg(r && strcmp(r, "END") == 0, "HELD: '%s', expected END", r ? r : "(nothing)");
	ck_assert_int_eq(c2->nlost, 0);
	struct cl *o = cl_tcp(h_lockd(1)->port);
	cl_expect(o, "TRYLOCK k", "BUSY");
	cl_close(o);
	cl_close(c2);
}
END_TEST

/* Master 0 stopped when B adopts: B reads master 1 (the granted fence)
 * and master 2 (its own): it cannot tell which was granted, so the hold
 * is not adopted and LOST names both fences; the client's fence is
 * among them. */
START_TEST(adopt_fence_undecided_is_lost)
{
	char req[128];
	unsigned long long granted, other;
	late_master_setup(req, sizeof(req), &granted, &other);
	h_master_stop(0);
	struct cl *c2 = cl_tcp(h_lockd(1)->port);
	cl_expect(c2, req, "OK 0");
	char lost[2][96];
	int seen = 0;
	snprintf(lost[0], sizeof(lost[0]), "LOST k %llu", granted);
	snprintf(lost[1], sizeof(lost[1]), "LOST k %llu", other);
	for (int i = 0; i < 2; i++) {
		const char *l = cl_line(c2, H_TMO);
		ck_assert_msg(l != NULL, "after OK 0: LOST line %d missing", i + 1);
		if (strcmp(l, lost[0]) == 0)
			seen |= 1;
		else if (strcmp(l, lost[1]) == 0)
			seen |= 2;
		else
			ck_abort_msg("after OK 0: '%s', expected '%s' and '%s'", l, lost[0],
			             lost[1]);
	}
	ck_assert_int_eq(seen, 3);
	cl_expect(c2, "HELD", "END");
	h_master_cont(0);
	cl_close(c2);
}
END_TEST

TCase *tc_adopt_fence(void)
{
	TCase *tc = tcase_create("adopt_fence");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, adopt_fence_of_majority);
	H_ADD(tc, adopt_fence_undecided_is_lost);
	return tc;
}
