/* layout_switch: the switch of a master to another layout (doc/design.md,
 * "Layout version and rolling upgrades"), with a lockd of this build
 * (layout 1, "A") beside tests/integration/lockd-layout2 ("B"): the
 * daemon built again with MASTER_LAYOUT "2" (Makefile.am). That test
 * build stores exactly what layout 1 stores; only its connections' name
 * (lockd-l2-*) and its handshake differ (it sets "<prefix> layout" to 2,
 * then waits until CLIENT LIST lists no connection of another layout).
 * That is enough to test the switch, which is all it is for: what a real
 * layout-2 build stores differently is not tested here. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define LAYOUT_KEY "lockd: layout"
#define LEASE      3000 /* the harness's default */
/* master_hs.c's LAYOUT_POLL_MS: a waiting master's CLIENT LIST period */
#define POLL_MS 100
/* From the moment the last connection of layout 1 is gone to a master
 * counting for B: the poll that sees none (at most POLL_MS away), its
 * answer and the marker's EXISTS (each a round trip within
 * redis.timeout_ms), on a loaded machine. */
#define SWITCH_BOUND (POLL_MS + 2 * H_REDIS_TMO + H_LOADED)
/* A refused master is tried again within redis.reconnect_max_ms (1000 by
 * default) after each try. */
#define RETRY_MS 1000

static const char *layout2(void)
{
	return h_built("tests/integration/lockd-layout2");
}

/* Start B (the layout-2 build); wait_quorum: return once it grants. */
static int start_b(int wait_quorum)
{
	struct h_opts o = {.bin = layout2(), .no_quorum_wait = !wait_quorum};
	return h_lockd_start(&o);
}

static void expect_stat_i(struct cl *c, int i, const char *field, const char *value)
{
	char name[64];
	snprintf(name, sizeof(name), "master.%d.%s", i, field);
	cl_expect_stat(c, name, value);
}

static void wait_stat_i(struct cl *c, int i, const char *field, const char *value, int ms)
{
	char name[64];
	snprintf(name, sizeof(name), "master.%d.%s", i, field);
	cl_wait_stat(c, name, value, ms);
}

static void expect_key(int i, const char *value)
{
	char *v = h_redis(i, "GET", LAYOUT_KEY, NULL);
	ck_assert_ptr_nonnull(v);
	ck_assert_msg(strcmp(v, value) == 0, "master %d: %s is \"%s\", not \"%s\"", i, LAYOUT_KEY,
	              v, value);
	free(v);
}

/* "master 127.0.0.1:PORT:", as lockd's log names master i */
static const char *node_of(int i, char *buf, size_t len)
{
	snprintf(buf, len, "master 127.0.0.1:%d:", h_master(i)->port);
	return buf;
}

/* A (layout 1) holds a lock when B (layout 2) starts on the same masters:
 * A's connections read the key before B set it, so they count on, and B
 * counts no master until they are gone. A goes on renewing and granting,
 * B grants nothing. Once A is stopped, B counts every master within
 * SWITCH_BOUND and grants; a layout-1 lockd started again refuses every
 * master, which now says 2. */
START_TEST(layout_switch_waits)
{
	h_masters_start(3);
	ck_assert_int_eq(h_lockd_start(NULL), 0);
	struct cl *a = cl_tcp(h_lockd(0)->port);
	double t_lock = h_now_ms();
	unsigned long long fa = cl_lock(a, "LOCK held");
	char inst[17];
	char *tok = h_redis(0, "GET", "lockd:held", NULL);
	ck_assert_msg(tok && strlen(tok) >= 16, "no token at lockd:held");
	snprintf(inst, sizeof(inst), "%.16s", tok);
	free(tok);

	ck_assert_int_eq(start_b(0), 1);
	struct cl *b = cl_tcp(h_lockd(1)->port);
	char why[160], node[48];
	snprintf(why, sizeof(why),
	         "layout 2: waiting for 1 connection of layout 1 (lockd-l1-%s) to close; not "
	         "counted",
	         inst);
	for (int i = 0; i < 3; i++) {
		wait_stat_i(b, i, "state", "layout_wait", 1000 + H_LOADED);
		expect_stat_i(b, i, "layout_wait", "1");
		expect_stat_i(b, i, "last_error", why);
		expect_stat_i(b, i, "layout", "2");
		expect_stat_i(b, i, "counts", "0");
		expect_key(i, "2");
		/* one warning when the wait starts, though it polls on */
		ck_assert_int_eq(h_file_count(h_lockd(1)->log, 0, node_of(i, node, sizeof(node)),
		                              "1 connection of layout 1 (lockd-l1-"),
		                 1);
	}
	cl_expect_stat(b, "masters_counting", "0");
	cl_expect_stat(b, "quorum_ok", "0");
	/* the start's warning says why, not "not reachable" */
	char *warned = h_log_wait(h_lockd(1)->log, 0,
	                          "no majority of masters counting: 0 of 3 up, 3 more reachable "
	                          "but waiting for the lockd of another layout",
	                          NULL, 3000 + H_LOADED);
	ck_assert_msg(warned != NULL, "no warning that the masters wait for the switch");
	free(warned);
	ck_assert_ptr_null(
	    h_log_find(h_lockd(1)->log, 0, "no majority of masters reachable", NULL));
	/* PROTOCOL.md: no majority: TRYLOCK answers ERR QUORUM at once, LOCK
	 * when its WAIT ends */
	cl_expect(b, "TRYLOCK k", "ERR QUORUM no majority of masters answered");
	cl_expect(b, "LOCK k WAIT 200", "ERR QUORUM no majority of masters answered");

	/* A counts on: it renews its hold past its first lease (without a
	 * renewal the key would be gone from every master at LEASE) and
	 * grants */
	double until = t_lock + LEASE + 300;
	for (int t = 0; t < 100 && h_now_ms() < until; t++)
		h_sleep_ms(50);
	ck_assert_int_eq(h_masters_with_pttl(3, "lockd:held", NULL, NULL), 3);
	cl_expect_stat(a, "masters_counting", "3");
	unsigned long long fa2 = cl_lock(a, "TRYLOCK other");
	ck_assert_uint_gt(fa2, 0);
	ck_assert_int_eq(a->nlost, 0);
	cl_expect_stat(b, "masters_counting", "0");
	for (int i = 0; i < 3; i++)
		expect_stat_i(b, i, "layout_wait", "1");

	/* stop A: its holds are released, its connections close */
	h_lockd_signal(0, SIGTERM);
	int st = h_lockd_wait(0, 5000);
	ck_assert_msg(st != -1, "lockd A still running 5 s after SIGTERM");
	double t_gone = h_now_ms();
	cl_close(a);
	cl_wait_stat(b, "masters_counting", "3", SWITCH_BOUND);
	fprintf(stderr, "layout_switch_waits: B counts every master %.0f ms after A is gone\n",
	        h_now_ms() - t_gone);
	for (int i = 0; i < 3; i++) {
		expect_stat_i(b, i, "state", "up");
		expect_stat_i(b, i, "layout_wait", "0");
		expect_stat_i(b, i, "last_error", "-");
		ck_assert_int_eq(h_file_count(h_lockd(1)->log, 0, node_of(i, node, sizeof(node)),
		                              "no connection of another layout is left"),
		                 1);
	}
	unsigned long long fb = cl_lock(b, "LOCK held WAIT 1000");
	ck_assert_msg(fb > fa, "fence %llu of B not above A's %llu", fb, fa);

	/* A again (this build, layout 1): every master says 2, none counts */
	ck_assert_int_eq(h_lockd_start(&(struct h_opts){.no_quorum_wait = 1}), 2);
	struct cl *a2 = cl_tcp(h_lockd(2)->port);
	for (int i = 0; i < 3; i++) {
		wait_stat_i(a2, i, "layout", "2", RETRY_MS + H_LOADED);
		expect_stat_i(a2, i, "last_error",
		              "layout 2 found, this lockd runs layout 1: not counted");
		expect_stat_i(a2, i, "counts", "0");
	}
	cl_expect_stat(a2, "masters_counting", "0");
	cl_expect(a2, "TRYLOCK k", "ERR QUORUM no majority of masters answered");
	cl_expect(a2, "TRYLOCK held", "ERR QUORUM no majority of masters answered");
	/* B is not disturbed by A's tries */
	cl_expect_stat(b, "masters_counting", "3");
	cl_expect(b, "UNLOCK held", "OK 0");
	cl_close(a2);
	cl_close(b);
}
END_TEST

/* Connections B must not wait for: a subscriber (lockd-sub-*) of a
 * layout-1 lockd (left there as one may be for a moment after its
 * command connection closed), an unnamed client, one of its own layout
 * (lockd-l2-*), and names that are no lockd's command connection; then a
 * second B beside the first, whose own connections and subscribers are
 * listed. Each counts every master at once (h_lockd_start gives up after
 * 10 s of no grant). */
START_TEST(layout_switch_subscriber_ignored)
{
	h_masters_start(3);
	static const char *const names[] = {"lockd-sub-3f9a0c27d1b84e65",
	                                    "lockd-l2-0123456789abcdef",
	                                    "lockd-l1",
	                                    "lockd-lx-1",
	                                    "mylockd-l1-x",
	                                    NULL};
	struct rconn *rc[3][6];
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 6; j++) {
			rc[i][j] = rc_open(h_master(i)->port, 2000);
			ck_assert_ptr_nonnull(rc[i][j]);
			char *r = names[j] ? rc_cmd(rc[i][j], "CLIENT", "SETNAME", names[j], NULL)
			                   : rc_cmd(rc[i][j], "PING", NULL);
			ck_assert_str_eq(r, names[j] ? "OK" : "PONG");
			free(r);
		}
	}
	double t0 = h_now_ms();
	ck_assert_int_eq(start_b(1), 0);
	fprintf(stderr, "layout_switch_subscriber_ignored: B grants %.0f ms after its start\n",
	        h_now_ms() - t0);
	struct cl *b = cl_tcp(h_lockd(0)->port);
	/* B's own subscribers are up once its masters are */
	for (int i = 0; i < 3; i++) {
		int subs = 0;
		double ts = h_now_ms();
		for (int t = 0; t < 200 && subs < 2 && h_now_ms() - ts < 1000 + H_LOADED; t++) {
			char *list = h_redis(i, "CLIENT", "LIST", NULL);
			ck_assert_ptr_nonnull(list);
			subs = 0;
			for (char *p = list; (p = strstr(p, " name=lockd-sub-")); p++)
				subs++;
			free(list);
			if (subs < 2)
				h_sleep_ms(10);
		}
		ck_assert_msg(subs == 2, "master %d: %d subscribers listed", i, subs);
	}
	ck_assert_int_eq(start_b(1), 1);
	struct cl *b2 = cl_tcp(h_lockd(1)->port);
	struct cl *bs[2] = {b, b2};
	for (int k = 0; k < 2; k++) {
		cl_expect_stat(bs[k], "masters_counting", "3");
		for (int i = 0; i < 3; i++) {
			expect_stat_i(bs[k], i, "layout_wait", "0");
			expect_stat_i(bs[k], i, "layout", "2");
		}
		ck_assert_int_eq(h_file_count(h_lockd(k)->log, 0, "connection", "of layout"), 0);
	}
	cl_lock(b, "TRYLOCK k");
	cl_expect(b2, "TRYLOCK k", "BUSY");
	cl_expect(b, "UNLOCK k", "OK 0");
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 6; j++)
			rc_close(rc[i][j]);
	cl_close(b);
	cl_close(b2);
}
END_TEST

/* A master whose ACL refuses CLIENT (LIST and SETNAME) to lockd's user:
 * B cannot see whether a lockd of layout 1 uses it, so it does not count
 * it and says why (STATS, one warning in the log), and tries again with
 * the reconnect backoff; the others count. */
START_TEST(layout_switch_client_list_refused)
{
	h_masters_start(3);
	char *r = h_redis(0, "ACL", "SETUSER", "default", "-client", NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	char *err = h_redis(0, "CLIENT", "LIST", NULL);
	ck_assert_msg(err && err[0] == '-', "CLIENT LIST was not refused: %s", err);
	char why[192];
	snprintf(why, sizeof(why), "CLIENT LIST: %.100s; not counted", err + 1);
	free(err);
	ck_assert_int_eq(start_b(1), 0);
	struct cl *b = cl_tcp(h_lockd(0)->port);
	wait_stat_i(b, 0, "last_error", why, RETRY_MS + H_LOADED);
	expect_stat_i(b, 0, "counts", "0");
	expect_stat_i(b, 0, "layout_wait", "0");
	for (int i = 1; i < 3; i++) {
		expect_stat_i(b, i, "counts", "1");
		expect_stat_i(b, i, "last_error", "-");
	}
	cl_expect_stat(b, "masters_counting", "2");
	/* tried again, warned about once */
	char *r0 = cl_stat(b, "master.0.reconnects"), want[32];
	snprintf(want, sizeof(want), "%llu", strtoull(r0, NULL, 10) + 2);
	free(r0);
	wait_stat_i(b, 0, "reconnects", want, 2 * RETRY_MS + H_LOADED);
	expect_stat_i(b, 0, "last_error", why);
	char node[48];
	ck_assert_int_eq(
	    h_file_count(h_lockd(0)->log, 0, node_of(0, node, sizeof(node)), "CLIENT LIST: NOPERM"),
	    1);
	cl_lock(b, "TRYLOCK k");
	cl_expect(b, "UNLOCK k", "OK 0");
	cl_close(b);
}
END_TEST

/* A master whose key says a higher layout (3): B refuses it, as this
 * build refuses 2, and its EVAL leaves the key as it is, also when it
 * tries again. A master whose key is raised to 3 while B waits there
 * (as a build of layout 3 that switched it would): B's next poll
 * refuses it too, so a lower layout never keeps waiting for a higher
 * one's connections (which may be waiting for B's). */
START_TEST(layout_switch_higher_refused)
{
	h_masters_start(3);
	char *r = h_redis(0, "SET", LAYOUT_KEY, "3", NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	/* A counts masters 1 and 2 (it refuses master 0: 3), so B waits there */
	ck_assert_int_eq(h_lockd_start(NULL), 0);
	ck_assert_int_eq(start_b(0), 1);
	struct cl *b = cl_tcp(h_lockd(1)->port);
	const char *why = "layout 3 found, this lockd runs layout 2: not counted";
	wait_stat_i(b, 0, "layout", "3", RETRY_MS + H_LOADED);
	expect_stat_i(b, 0, "last_error", why);
	expect_stat_i(b, 0, "counts", "0");
	for (int i = 1; i < 3; i++) {
		wait_stat_i(b, i, "state", "layout_wait", 1000 + H_LOADED);
		expect_stat_i(b, i, "layout_wait", "1");
	}
	char *r0 = cl_stat(b, "master.0.reconnects"), want[32];
	snprintf(want, sizeof(want), "%llu", strtoull(r0, NULL, 10) + 1);
	free(r0);
	wait_stat_i(b, 0, "reconnects", want, RETRY_MS + H_LOADED);
	expect_key(0, "3");
	/* raised during the wait: refused within a poll (and its round trip) */
	r = h_redis(1, "SET", LAYOUT_KEY, "3", NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	double t0 = h_now_ms();
	wait_stat_i(b, 1, "last_error", why, POLL_MS + H_REDIS_TMO + H_LOADED);
	fprintf(stderr, "layout_switch_higher_refused: refused %.0f ms after the key said 3\n",
	        h_now_ms() - t0);
	expect_stat_i(b, 1, "layout", "3");
	expect_stat_i(b, 2, "state", "layout_wait");
	cl_expect_stat(b, "masters_counting", "0");
	expect_key(0, "3");
	expect_key(1, "3");
	expect_key(2, "2");
	char node[48];
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(h_file_count(h_lockd(1)->log, 0, node_of(i, node, sizeof(node)),
		                              "says layout 3,"),
		                 i < 2);
	cl_close(b);
}
END_TEST

TCase *tc_layout_switch(void)
{
	TCase *tc = tcase_create("layout_switch");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 30);
	H_ADD(tc, layout_switch_waits);
	H_ADD(tc, layout_switch_subscriber_ignored);
	H_ADD(tc, layout_switch_client_list_refused);
	H_ADD(tc, layout_switch_higher_refused);
	return tc;
}
