/* Waiting for a lock: FIFO order, handoff, timeouts, waiters that leave,
 * and locks that end on the masters without a release. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

START_TEST(fifo_three)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open(), *c = cl_open(), *d = cl_open(), *s = cl_open();
	unsigned long long fa = cl_lock(a, "LOCK k");
	cl_send(b, "LOCK k\n");
	cl_wait_waiters(s, "k", 1, 2000);
	cl_send(c, "LOCK k\n");
	cl_wait_waiters(s, "k", 2, 2000);
	cl_send(d, "LOCK k\n");
	cl_wait_waiters(s, "k", 3, 2000);
	cl_expect(a, "UNLOCK k", "OK 0");
	unsigned long long fb = cl_want_ok(b, 1000);
	ck_assert_uint_gt(fb, fa);
	cl_silence(c, 200);
	cl_silence(d, 1);
	cl_wait_waiters(s, "k", 2, 1000);
	cl_expect(b, "UNLOCK k", "OK 0");
	unsigned long long fc = cl_want_ok(c, 1000);
	ck_assert_uint_gt(fc, fb);
	cl_silence(d, 200);
	cl_silence(b, 1);
	cl_expect(c, "UNLOCK k", "OK 0");
	unsigned long long fd = cl_want_ok(d, 1000);
	ck_assert_uint_gt(fd, fc);
	long long ttl, w;
	ck_assert_int_eq(cl_status(s, "k", &ttl, &w), 1);
	ck_assert_int_eq(w, 0);
	cl_expect(d, "UNLOCK k", "OK 0");
	cl_expect(s, "STATUS k", "FREE");
	cl_close(a);
	cl_close(b);
	cl_close(c);
	cl_close(d);
	cl_close(s);
}
END_TEST

START_TEST(fifo_ten)
{
	h_std(NULL);
	enum { N = 10 };
	struct cl *w[N], *s = cl_open(), *a = cl_open();
	unsigned long long last = cl_lock(a, "LOCK k");
	for (int i = 0; i < N; i++) {
		w[i] = cl_open();
		/* a mix of LOCK forms: all wait in one queue */
		cl_send(w[i], i % 3 == 0   ? "LOCK k\n"
		              : i % 3 == 1 ? "LOCK k WAIT 20000\n"
		                           : "LOCK k WAIT 20000 TTL 20000\n");
		cl_wait_waiters(s, "k", i + 1, 2000);
	}
	cl_expect(a, "UNLOCK k", "OK 0");
	for (int i = 0; i < N; i++) {
		unsigned long long f = cl_want_ok(w[i], 1000);
		ck_assert_msg(f > last, "waiter %d: fence %llu after %llu", i, f, last);
		last = f;
		if (i + 1 < N)
			cl_silence(w[i + 1], 20);
		cl_expect(w[i], "UNLOCK k", "OK 0");
	}
	for (int i = 0; i < N; i++)
		cl_close(w[i]);
	cl_close(s);
	cl_close(a);
}
END_TEST

static int cmp_d(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

START_TEST(handoff_latency)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open();
	enum { R = 20 };
	double lat[R];
	for (int i = 0; i < R; i++) {
		struct cl *h = i % 2 ? b : a, *nx = i % 2 ? a : b;
		if (i == 0)
			cl_lock(h, "LOCK k");
		cl_send(nx, "LOCK k WAIT 5000\n");
		cl_silence(nx, 30);
		double t0 = h_now_ms();
		cl_send(h, "UNLOCK k\n");
		cl_want_ok(nx, 2000);
		lat[i] = h_now_ms() - t0;
		cl_want(h, "OK 0", H_TMO);
	}
	qsort(lat, R, sizeof(lat[0]), cmp_d);
	fprintf(stderr, "handoff_latency: median %.1f ms, max %.1f ms\n", lat[R / 2], lat[R - 1]);
	/* every handoff within the service level (100 ms), loaded headroom;
	 * the lease (3 s) would be later. How fast they are (the median
	 * above) is a figure: lockd-benchmark measures it. */
	ck_assert_msg(lat[R - 1] < 100 + H_LOADED,
	              "slowest handoff %.1f ms (service level: 100 ms)", lat[R - 1]);
	cl_close(a);
	cl_close(b);
}
END_TEST

START_TEST(waiter_disconnect)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open(), *c = cl_open(), *s = cl_open();
	cl_lock(a, "LOCK k");
	cl_send(b, "LOCK k\n");
	cl_wait_waiters(s, "k", 1, 2000);
	cl_send(c, "LOCK k WAIT 10000\n");
	cl_wait_waiters(s, "k", 2, 2000);
	cl_close(b);
	cl_wait_waiters(s, "k", 1, 1000);
	cl_expect(a, "UNLOCK k", "OK 0");
	cl_want_ok(c, 1000);
	long long ttl, w;
	ck_assert_int_eq(cl_status(s, "k", &ttl, &w), 1);
	ck_assert_int_eq(w, 0);
	/* the first waiter leaves after the release but before its grant is seen:
	 * the lock must not stay with the closed session */
	struct cl *d = cl_open(), *e = cl_open();
	cl_send(d, "LOCK k\n");
	cl_wait_waiters(s, "k", 1, 2000);
	cl_send(e, "LOCK k\n");
	cl_wait_waiters(s, "k", 2, 2000);
	cl_send(c, "UNLOCK k\n");
	cl_close(d);
	cl_want(c, "OK 0", H_TMO);
	cl_want_ok(e, 1000 + H_LOADED); /* d's session ended: 1 s, loaded headroom */
	cl_close(a);
	cl_close(c);
	cl_close(e);
	cl_close(s);
}
END_TEST

START_TEST(waiter_timeout_leaves_queue)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open(), *c = cl_open(), *s = cl_open();
	cl_lock(a, "LOCK k");
	cl_send(b, "LOCK k WAIT 300\n");
	cl_wait_waiters(s, "k", 1, 2000);
	cl_send(c, "LOCK k WAIT 10000\n");
	cl_wait_waiters(s, "k", 2, 2000);
	cl_want(b, "TIMEOUT", 2000);
	cl_wait_waiters(s, "k", 1, 1000);
	cl_expect(a, "UNLOCK k", "OK 0");
	cl_want_ok(c, 1000);
	cl_silence(b, 100);
	cl_expect(b, "TRYLOCK k", "BUSY");
	cl_close(a);
	cl_close(b);
	cl_close(c);
	cl_close(s);
}
END_TEST

START_TEST(trylock_does_not_jump_queue)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open(), *c = cl_open();
	cl_lock(a, "LOCK k");
	cl_send(b, "LOCK k\n");
	cl_wait_waiters(c, "k", 1, 2000);
	for (int i = 0; i < 3; i++) {
		cl_expect(c, "TRYLOCK k", "BUSY");
		cl_expect(c, "LOCK k WAIT 0", "TIMEOUT");
	}
	/* release and try at once, many times: the waiter always wins */
	cl_send(a, "UNLOCK k\nTRYLOCK k\n");
	cl_send(c, "TRYLOCK k\n");
	cl_want(a, "OK 0", H_TMO);
	unsigned long long f = cl_want_ok(b, 1000);
	const char *ra = cl_reply(a, H_TMO), *rc;
	ck_assert_msg(ra && strcmp(ra, "BUSY") == 0, "TRYLOCK after own UNLOCK with a waiter: '%s'",
	              ra ? ra : "no reply");
	rc = cl_reply(c, H_TMO);
	ck_assert_msg(rc && strcmp(rc, "BUSY") == 0, "TRYLOCK with a waiter: '%s'",
	              rc ? rc : "no reply");
	ck_assert_uint_gt(f, 0);
	cl_close(a);
	cl_close(b);
	cl_close(c);
}
END_TEST

START_TEST(granted_while_waiting)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open();
	cl_lock(a, "LOCK k");
	double t0 = h_now_ms();
	cl_send(b, "LOCK k WAIT 3000\n");
	cl_silence(b, 300);
	cl_expect(a, "UNLOCK k", "OK 0");
	cl_want_ok(b, 1000);
	double el = h_now_ms() - t0;
	/* not before the UNLOCK (300 ms); the handoff within 100 ms of it,
	 * loaded headroom (the lease, 3 s, would be later) */
	ck_assert_msg(el >= 300 && el < 300 + 100 + H_LOADED, "granted after %.0f ms", el);
	/* keys are independent: within the reply bound, not behind k's queue */
	double t1 = h_now_ms();
	cl_lock(a, "LOCK k2");
	ck_assert_msg(h_now_ms() - t1 < H_SLOW_LIMIT, "LOCK of a free key took %.0f ms",
	              h_now_ms() - t1);
	cl_close(a);
	cl_close(b);
}
END_TEST

START_TEST(waiter_with_ttl)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open();
	cl_lock(a, "LOCK k");
	cl_send(b, "LOCK k WAIT 5000 TTL 400\n");
	cl_silence(b, 200);
	cl_expect(a, "UNLOCK k", "OK 0");
	unsigned long long f = cl_want_ok(b, 1000);
	double t0 = h_now_ms();
	long long ttl, w;
	ck_assert_int_eq(cl_status(a, "k", &ttl, &w), 1);
	ck_assert_msg(ttl > 0 && ttl <= 400, "ttl %lld of a TTL 400 lock", ttl);
	const char *l = cl_line(b, 2000);
	char want[64];
	snprintf(want, sizeof(want), "LOST k %llu", f);
	ck_assert_msg(l && strcmp(l, want) == 0, "got '%s', expected '%s'", l ? l : "nothing",
	              want);
	double el = h_now_ms() - t0;
	ck_assert_msg(el >= 250 && el <= 1400, "LOST %.0f ms after the grant of a TTL 400 lock",
	              el);
	cl_close(a);
	cl_close(b);
}
END_TEST

/* Another lockd's lease of px ms on rkey, on the 3 masters, over
 * connections opened first: returns when the first SET was sent (no lease
 * ends before it + px); *done: when the last was answered (every lease
 * ends by *done + px). The harness's connects fall in neither. */
static double set_foreign(const char *rkey, const char *px, double *done)
{
	struct rconn *m[3];
	for (int i = 0; i < 3; i++) {
		m[i] = rc_open(h_master(i)->port, 3000);
		ck_assert_msg(m[i] != NULL, "master %d: cannot connect", i);
	}
	double first = h_now_ms();
	for (int i = 0; i < 3; i++) {
		char *r = rc_cmd(m[i], "SET", rkey, "someone-else", "PX", px, NULL);
		ck_assert_msg(r && strcmp(r, "OK") == 0, "SET on master %d: %s", i, r ? r : "NULL");
		free(r);
	}
	*done = h_now_ms();
	for (int i = 0; i < 3; i++)
		rc_close(m[i]);
	return first;
}

/* Held elsewhere and lapsed: granted at the latest 1 s after the lease it
 * saw ran out (no release message ever comes). */
START_TEST(foreign_lease_lapses)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open();
	double t0;
	double t_first = set_foreign("lockd:k", "1000", &t0);
	long long ttl, w;
	ck_assert_int_eq(cl_status(b, "k", &ttl, &w), 1);
	ck_assert_msg(ttl > 0 && ttl <= 1000, "ttl %lld", ttl);
	cl_expect(a, "TRYLOCK k", "BUSY");
	cl_send(a, "LOCK k WAIT 5000\n");
	cl_want_ok(a, 4000);
	double tg = h_now_ms(), el = tg - t0;
	/* not before the lease ends (it began after t_first); within 1 s after
	 * (service level), loaded (it was set on all by t0) */
	ck_assert_msg(tg - t_first >= 900 && el <= 1000 + 1000 + H_LOADED,
	              "granted %.0f ms after a foreign lease of 1000 ms was set (%.0f ms after "
	              "the first SET)",
	              el, tg - t_first);
	cl_close(a);
	cl_close(b);
}
END_TEST

/* Deleted elsewhere without a release message: granted at the latest 1 s
 * after the lease it saw would have run out. */
START_TEST(foreign_key_deleted)
{
	h_std(NULL);
	struct cl *a = cl_open();
	double t0;
	set_foreign("lockd:k", "1500", &t0);
	cl_send(a, "LOCK k WAIT 10000\n");
	cl_silence(a, 300);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(h_redis_int(i, "DEL", "lockd:k", NULL), 1);
	cl_want_ok(a, 5000);
	double el = h_now_ms() - t0;
	/* the lease seen (1500) + 1 s (service level), loaded headroom */
	ck_assert_msg(
	    el <= 1500 + 1000 + H_LOADED,
	    "granted %.0f ms after a foreign lease of 1500 ms was set (deleted at 300 ms)", el);
	cl_close(a);
}
END_TEST

TCase *tc_waiters(void)
{
	TCase *tc = tcase_create("waiters");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 20);
	H_ADD(tc, fifo_three);
	H_ADD(tc, fifo_ten);
	H_ADD(tc, handoff_latency);
	H_ADD(tc, waiter_disconnect);
	H_ADD(tc, waiter_timeout_leaves_queue);
	H_ADD(tc, trylock_does_not_jump_queue);
	H_ADD(tc, granted_while_waiting);
	H_ADD(tc, waiter_with_ttl);
	H_ADD(tc, foreign_lease_lapses);
	H_ADD(tc, foreign_key_deleted);
	return tc;
}
