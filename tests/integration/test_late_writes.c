/* Late writes: a request lockd wrote on a connection it then gave up on
 * can still reach the master, long after (a partition kept it on its way,
 * and the kernel delivers what a closed socket had sent once the path
 * heals). The masters take a token of lockd's own instance that it did not
 * name for a stale leftover and write over it; such a late request must
 * not, since lockd may have granted the key to another of its sessions
 * meanwhile, on a new connection. Here the late pair is an ACQUIRE and the
 * RELEASE of the same token: written over and deleted, the live hold
 * would be gone from that master, and a second lockd could take the key
 * while the first one's session holds it (partition scenario 7 found
 * this: "c0 x2 ... overlaps c4 x2"). Real masters, two real lockds, and a
 * proxy in front of master 2 that holds the bytes back (harness_proxy.c). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define LEASE 3000
/* a token of another lockd instance (the first 16 hex digits) */
#define FOREIGN "ffffffffffffffff0123456789abcdef"

/* Wait until lockd l has dropped master port and connected to it again,
 * after log offset off. */
static void wait_reconnected(int l, long off, int port)
{
	char down[64], up[64];
	snprintf(down, sizeof(down), "master 127.0.0.1:%d down", port);
	snprintf(up, sizeof(up), "master 127.0.0.1:%d up", port);
	char *d = h_log_wait(h_lockd(l)->log, off, down, NULL, H_SLOW_LIMIT + 1000);
	ck_assert_msg(d != NULL, "lockd %d never gave up on master 2 (%s)", l, down);
	free(d);
	/* the line after the drop: search from where the log is now */
	double end = h_now_ms() + 5000;
	while (h_file_count(h_lockd(l)->log, off, up, NULL) < 1 && h_now_ms() < end)
		h_sleep_ms(10);
	ck_assert_msg(h_file_count(h_lockd(l)->log, off, up, NULL) >= 1,
	              "lockd %d did not connect to master 2 again", l);
}

/* Master 2 has run everything the proxy delivered: the test's own commands
 * come after it on the master's loop (each reply means a turn of it). */
static void master_caught_up(int i)
{
	for (int k = 0; k < 2; k++) {
		char *r = h_redis(i, "PING", NULL);
		ck_assert_msg(r && strcmp(r, "PONG") == 0, "master %d: PING: '%s'", i,
		              r ? r : "(none)");
		free(r);
	}
}

/* Loop 0: the live hold is a lock; loop 1: a shared hold. */
START_TEST(late_write_keeps_live_hold)
{
	const char *kinds[] = {"LOCK k", "LOCK k SHARED"};
	const char *req = kinds[_i];
	h_masters_start(3);
	struct h_proxy *px = h_proxy_start(h_master(2)->port);
	int via[3] = {0, 0, h_proxy_port(px)};
	int a = h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .via = via});
	int b = h_lockd_start(&(struct h_opts){.lease_ms = LEASE});

	/* x's LOCK and UNLOCK reach masters 0 and 1 and are held on their way
	 * to master 2, which lockd A then gives up on (redis.timeout_ms) and
	 * connects to again, through the proxy, on a new connection. */
	struct cl *x = cl_tcp(h_lockd(a)->port);
	ck_assert_int_ge(h_proxy_hold(px), 1);
	long off = h_file_size(h_lockd(a)->log);
	cl_lock(x, "LOCK k");
	cl_expect(x, "UNLOCK k", "OK 0");
	wait_reconnected(a, off, via[2]);

	/* Another holder (another lockd's token) keeps master 0 from y: y's
	 * hold is on masters 1 and 2 only, a majority. */
	char *r = h_redis(0, "SET", "lockd:k", FOREIGN, "PX", "60000", NULL);
	ck_assert_msg(r && strcmp(r, "OK") == 0, "SET on master 0: '%s'", r ? r : "(none)");
	free(r);
	struct cl *y = cl_tcp(h_lockd(a)->port);
	cl_lock(y, req);
	char *on1 = h_redis(1, "GET", "lockd:k", NULL), *on2 = h_redis(2, "GET", "lockd:k", NULL);
	long long sh2 = h_redis_int(2, "ZCARD", "lockd:k shared", NULL);
	if (_i == 0)
		ck_assert_msg(on1 && on2 && strlen(on1) == 32 && strcmp(on1, on2) == 0,
		              "y's lock on masters 1 and 2: '%s', '%s'", on1 ? on1 : "(none)",
		              on2 ? on2 : "(none)");
	else
		ck_assert_msg(sh2 == 1, "y's shared hold on master 2: %lld members", sh2);

	/* Now x's ACQUIRE and RELEASE arrive at master 2, late. */
	ck_assert_int_gt(h_proxy_release(px), 0);
	master_caught_up(2);
	if (_i == 0) {
		char *now2 = h_redis(2, "GET", "lockd:k", NULL);
		ck_assert_msg(now2 && strcmp(now2, on2) == 0,
		              "master 2 holds '%s' after the late ACQUIRE and RELEASE of another "
		              "session of the same lockd, y's token was '%s'",
		              now2 ? now2 : "(none)", on2);
		free(now2);
	} else {
		long long now = h_redis_int(2, "ZCARD", "lockd:k shared", NULL);
		ck_assert_msg(now == 1,
		              "master 2 has %lld shared holders after the late ACQUIRE and RELEASE "
		              "of another session of the same lockd, y holds one",
		              now);
	}
	ck_assert_int_gt(h_redis_int(2, "PTTL", _i ? "lockd:k shared" : "lockd:k", NULL), 0);

	/* The other holder's lease ends on master 0: y's hold still has a
	 * majority, so lockd B must not grant k to anyone. */
	ck_assert_int_eq(h_redis_int(0, "DEL", "lockd:k", NULL), 1);
	struct cl *z = cl_tcp(h_lockd(b)->port);
	cl_expect(z, "TRYLOCK k", "BUSY");
	cl_expect(y, "UNLOCK k", "OK 0");
	free(on1);
	free(on2);
	cl_close(x);
	cl_close(y);
	cl_close(z);
	h_proxy_stop(px);
}
END_TEST

TCase *tc_late_writes(void)
{
	TCase *tc = tcase_create("late_writes");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	if (h_selected("late_write_keeps_live_hold"))
		tcase_add_loop_test(tc, late_write_keeps_live_hold, 0, 2);
	return tc;
}
