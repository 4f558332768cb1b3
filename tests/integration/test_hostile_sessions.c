/* hostile_sessions: a hostile client against resumable sessions (1.2),
 * on real masters and real lockd (issue 32): detached sessions count
 * against limits, a wrong secret costs a connection, the secret never
 * reaches the masters, a session is bound to its login, the touch goes in
 * bounded batches, and lockd's log does not grow per session at info. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "sess_util.h"

#define LEASE 3000

/* A STATS field as a number (the test fails when it is missing). */
static long long stat_of(struct cl *c, const char *name)
{
	char *v = cl_stat(c, name);
	ck_assert_msg(v != NULL, "STATS has no %s", name);
	long long n = atoll(v);
	free(v);
	return n;
}

/* limits.max_sessions and max_sessions_per_ip count detached sessions:
 * three sessions from 127.0.0.1, detached, leave no room for a fourth
 * from that address; a Unix client (not counted per address) takes the
 * last place, then none is left. A RESUME of a detached session moves it,
 * and needs no room. */
START_TEST(session_limits_count_detached)
{
	h_std(&(struct h_opts){.lease_ms = LEASE,
	                       .limits = "  max_sessions: 4\n  max_sessions_per_ip: 3\n"});
	struct sess s[3];
	for (int i = 0; i < 3; i++) {
		struct cl *c = cl_open();
		session(c, "SESSION", 10000, &s[i]);
		blip(c);
	}
	struct cl *t = cl_open();
	cl_expect(t, "SESSION", "ERR LIMIT too many resumable sessions from this address");
	struct cl *u = cl_unix(h_lockd(0)->sock);
	struct sess su;
	session(u, "SESSION", 10000, &su);
	struct cl *u2 = cl_unix(h_lockd(0)->sock);
	cl_expect(u2, "SESSION", "ERR LIMIT too many resumable sessions");
	/* the failed SESSION left the connection plain: it still locks */
	cl_lock(t, "LOCK plain");
	struct cl *r = cl_open();
	resume(r, &s[0], "OK 0");
	struct cl *o = cl_unix(h_lockd(0)->sock);
	ck_assert_int_eq(stat_of(o, "rejected_sessions"), 2);
	ck_assert_int_eq(stat_of(o, "sessions_resumable"), 4);
	cl_close(o);
	cl_close(r);
	cl_close(u2);
	cl_close(u);
	cl_close(t);
}
END_TEST

/* limits.max_auth_failures (5 by default) RESUMEs answered ERR NOSESSION
 * close the connection after the last reply, and are counted. */
START_TEST(wrong_secrets_close)
{
	h_std(&(struct h_opts){.lease_ms = LEASE});
	struct cl *c = cl_open();
	struct sess s;
	session(c, "SESSION", 10000, &s);
	unsigned long long f = cl_lock(c, "LOCK k");
	struct cl *x = cl_open();
	char req[128];
	snprintf(req, sizeof(req), "RESUME %s %s", s.id, "0123456789abcdef0123456789abcdef");
	for (int i = 0; i < 5; i++)
		cl_expect(x, req, NOSESSION);
	cl_want_eof(x, H_TMO);
	cl_close(x);
	struct cl *o = cl_open();
	ck_assert_int_eq(stat_of(o, "resume_failures"), 5);
	ck_assert_int_eq(stat_of(o, "resume_closes"), 1);
	cl_close(o);
	expect_held(c, "KEY k %llu 1 *", f); /* the guesses changed nothing */
	cl_close(c);
}
END_TEST

/* Every command the masters ran is logged (SLOWLOG at 0 us): SESSION,
 * LOCK, a blip and a RESUME on another lockd show no trace of the secret
 * on any master. */
START_TEST(secret_not_on_masters)
{
	h_std(&(struct h_opts){.lease_ms = LEASE});
	int b = h_lockd_start(&(struct h_opts){.lease_ms = LEASE});
	for (int i = 0; i < 3; i++) {
		free(h_redis(i, "CONFIG", "SET", "slowlog-max-len", "100000", NULL));
		free(h_redis(i, "CONFIG", "SET", "slowlog-log-slower-than", "0", NULL));
	}
	struct cl *c = cl_open();
	struct sess s;
	session(c, "SESSION", 10000, &s);
	cl_lock(c, "LOCK k");
	blip(c);
	struct cl *c2 = cl_tcp(h_lockd(b)->port);
	resume(c2, &s, "OK 1");
	for (int i = 0; i < 3; i++) {
		char *log = h_redis(i, "SLOWLOG", "GET", "100000", NULL);
		ck_assert_msg(log != NULL, "master %d: no SLOWLOG", i);
		ck_assert_msg(strstr(log, "session ") != NULL,
		              "master %d's SLOWLOG shows no session record at all", i);
		ck_assert_msg(strstr(log, s.secret) == NULL,
		              "master %d's SLOWLOG shows the session's secret", i);
		free(log);
	}
	cl_close(c2);
}
END_TEST

/* A session made behind AUTH on A resumes on C (the same password), not
 * on B (no password). */
START_TEST(session_bound_to_login)
{
	h_masters_start(3);
	int a = h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .password = "pw-one"});
	int b = h_lockd_start(&(struct h_opts){.lease_ms = LEASE});
	int cc = h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .password = "pw-one"});
	struct cl *c = cl_tcp(h_lockd(a)->port);
	cl_expect(c, "AUTH pw-one", "OK");
	struct sess s;
	session(c, "SESSION", 10000, &s);
	unsigned long long f = cl_lock(c, "LOCK k");
	blip(c);
	struct cl *x = cl_tcp(h_lockd(b)->port);
	resume(x, &s, NOSESSION);
	cl_close(x);
	struct cl *y = cl_tcp(h_lockd(cc)->port);
	cl_expect(y, "AUTH pw-one", "OK");
	resume(y, &s, "OK 1");
	expect_held(y, "KEY k %llu 1 *", f);
	cl_close(y);
}
END_TEST

/* 600 detached sessions: every touch script covers at most 256 records
 * (SLOWLOG shows each, with its number of keys), and lockd's log at info
 * gains no line per session. */
#define NSESS 600
START_TEST(touch_batches_quiet_log)
{
	h_std(&(struct h_opts){.lease_ms = LEASE});
	long off = h_file_size(h_lockd(0)->log);
	for (int k = 0; k < NSESS; k++) {
		struct cl *c = cl_open();
		struct sess s;
		session(c, "SESSION", 10000, &s);
		blip(c);
	}
	for (int i = 0; i < 3; i++) {
		free(h_redis(i, "SLOWLOG", "RESET", NULL));
		free(h_redis(i, "CONFIG", "SET", "slowlog-max-len", "100000", NULL));
		free(h_redis(i, "CONFIG", "SET", "slowlog-log-slower-than", "0", NULL));
	}
	h_sleep_ms(LEASE / 3 + 500); /* a touch of all of them */
	char *log = h_redis(0, "SLOWLOG", "GET", "100000", NULL);
	ck_assert(log != NULL);
	/* each entry's arguments, one a line: EVALSHA, the SHA, numkeys, KEYS[1] */
	int touches = 0, most = 0;
	for (char *p = strstr(log, "EVALSHA\n"); p; p = strstr(p + 1, "EVALSHA\n")) {
		char sha[64], nkeys[32], key1[128];
		if (sscanf(p, "EVALSHA\n%63[^\n]\n%31[^\n]\n%127[^\n]", sha, nkeys, key1) != 3)
			continue;
		int n = atoi(nkeys);
		if (n > 1 && strncmp(key1, "lockd: session ", 15) == 0) {
			touches++;
			most = n > most ? n : most;
		}
	}
	free(log);
	ck_assert_msg(touches >= 3 && most <= 256,
	              "%d touch scripts on master 0, the largest with %d records (at most 256)",
	              touches, most);
	int lines = h_file_count(h_lockd(0)->log, off, "session", NULL);
	ck_assert_msg(lines < 10, "lockd logged %d lines about sessions for %d sessions", lines,
	              NSESS);
}
END_TEST

TCase *tc_hostile_sessions(void)
{
	TCase *tc = tcase_create("hostile_sessions");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, session_limits_count_detached);
	H_ADD(tc, wrong_secrets_close);
	H_ADD(tc, secret_not_on_masters);
	H_ADD(tc, session_bound_to_login);
	H_ADD(tc, touch_batches_quiet_log);
	return tc;
}
