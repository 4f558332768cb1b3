/* The harness itself, and lockd under master faults and signals. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* ------------------------------------------------------------------ harness */

START_TEST(harness_masters)
{
	h_masters_start(3);
	ck_assert_int_eq(h_nmasters(), 3);
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < i; j++)
			ck_assert_int_ne(h_master(i)->port, h_master(j)->port);
		char *r = h_redis(i, "PING", NULL);
		ck_assert_ptr_nonnull(r);
		ck_assert_str_eq(r, "PONG");
		free(r);
	}
	char *r = h_redis(0, "SET", "lockd-test-x", "a b\r\nc", NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	r = h_redis(0, "GET", "lockd-test-x", NULL);
	ck_assert_str_eq(r, "a b\r\nc");
	free(r);
	r = h_redis(0, "GET", "lockd-test-none", NULL);
	ck_assert_str_eq(r, "(nil)");
	free(r);
	r = h_redis(0, "NOSUCHCOMMAND", NULL);
	ck_assert_msg(r && r[0] == '-', "error reply expected, got %s", r ? r : "NULL");
	free(r);
	ck_assert_int_eq(h_redis_int(0, "EXISTS", "lockd-test-x", NULL), 1);
	ck_assert_int_eq(h_redis_int(0, "PTTL", "lockd-test-x", NULL), -1);
	r = h_redis(0, "INFO", "commandstats", NULL);
	ck_assert_ptr_nonnull(strstr(r, "cmdstat_set:calls=1"));
	free(r);
	r = h_redis(1, "KEYS", "*", NULL);
	ck_assert_str_eq(r, "");
	free(r);

	/* kill -9 and restart on the same port: empty again */
	int port = h_master(0)->port;
	pid_t old = h_master(0)->pid;
	h_master_kill(0);
	ck_assert_ptr_null(h_redis(0, "PING", NULL));
	ck_assert_int_eq(kill(old, 0), -1);
	h_master_restart(0);
	ck_assert_int_eq(h_master(0)->port, port);
	ck_assert_int_ne(h_master(0)->pid, old);
	ck_assert_int_eq(h_redis_int(0, "EXISTS", "lockd-test-x", NULL), 0);

	/* SIGSTOP: no answer (bounded); SIGCONT: answers again */
	h_master_stop(2);
	double t0 = h_now_ms();
	ck_assert_ptr_null(h_redis(2, "PING", NULL));
	ck_assert_double_lt(h_now_ms() - t0, 3000);
	h_master_cont(2);
	r = h_redis(2, "PING", NULL);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r, "PONG");
	free(r);
	/* restart of a stopped master */
	h_master_stop(1);
	h_master_restart(1);
	r = h_redis(1, "PING", NULL);
	ck_assert_str_eq(r, "PONG");
	free(r);
}
END_TEST

/* The processes of a test die with it, even when it dies by SIGKILL. */
START_TEST(harness_orphans)
{
	int pfd[2];
	h_dir(); /* the grandchild starts its masters in this test's directory */
	/* orphans come to us, so that we can reap them */
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	ck_assert_int_eq(pipe(pfd), 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(pfd[0]);
		h_masters_start(2);
		int pids[2] = {h_master(0)->pid, h_master(1)->pid};
		if (write(pfd[1], pids, sizeof(pids)) != sizeof(pids))
			_exit(2);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	int pids[2] = {0, 0};
	ssize_t n = read(pfd[0], pids, sizeof(pids));
	close(pfd[0]);
	ck_assert_int_eq((int)n, (int)sizeof(pids));
	ck_assert_int_eq(kill(pids[0], 0), 0);
	kill(child, SIGKILL);
	ck_assert_int_eq(waitpid(child, NULL, 0), child);
	int gone = 0;
	for (int t = 0; t < 200 && gone < 2; t++) {
		/* reparented to us (subreaper): reap them */
		for (int k = 0; k < 2; k++)
			if (pids[k] && waitpid(pids[k], NULL, WNOHANG) == pids[k]) {
				pids[k] = 0;
				gone++;
			}
		if (gone < 2)
			h_sleep_ms(10);
	}
	gone = gone == 2;
	ck_assert_msg(gone, "redis-server %d/%d outlived the test process", pids[0], pids[1]);
}
END_TEST

TCase *tc_harness(void)
{
	TCase *tc = tcase_create("harness");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 20);
	H_ADD(tc, harness_masters);
	H_ADD(tc, harness_orphans);
	return tc;
}

/* ------------------------------------------------------------------ faults */

/* lockd's marker on master i: the keys without expiry under the prefix
 * whose next byte is one that no lock key has (so not a per-key item such
 * as a fence counter). Sorted, one per line. */
static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *persistent_keys(int i)
{
	char *keys = h_redis(i, "KEYS", "lockd:*", NULL);
	ck_assert_ptr_nonnull(keys);
	char *v[512];
	int n = 0;
	size_t total = 1;
	for (char *save = NULL, *k = strtok_r(keys, "\n", &save); k && n < 512;
	     k = strtok_r(NULL, "\n", &save))
		if ((unsigned char)k[6] <= 0x20 && h_redis_int(i, "PTTL", k, NULL) == -1) {
			v[n++] = k;
			total += strlen(k) + 1;
		}
	qsort(v, (size_t)n, sizeof(v[0]), cmp_line);
	char *out = calloc(1, total);
	for (int j = 0; j < n; j++) {
		strcat(out, v[j]);
		strcat(out, "\n");
	}
	free(keys);
	return out;
}

/* Every line of want is a line of have. */
static int has_all(const char *have, const char *want)
{
	for (const char *p = want; *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) + 1 : strlen(p);
		int found = 0;
		for (const char *q = have; *q && !found;) {
			const char *f = strchr(q, '\n');
			size_t m = f ? (size_t)(f - q) + 1 : strlen(q);
			found = m == n && memcmp(p, q, n) == 0;
			q += m;
		}
		if (!found)
			return 0;
		p += n;
	}
	return 1;
}

/* The keys without expiry on the running masters other than m. */
static char *others_keys(int m)
{
	char *u = calloc(1, 1);
	for (int i = 0; i < h_nmasters(); i++) {
		if (i == m || h_master(i)->pid <= 0 || h_master(i)->stopped)
			continue;
		char *k = persistent_keys(i);
		u = realloc(u, strlen(u) + strlen(k) + 1);
		strcat(u, k);
		free(k);
	}
	return u;
}

/* After master m restarted: wait (bounded) until it has the marker that the
 * other running masters have (written only once it counts again). Returns
 * the ms waited. */
static double wait_counts_again(int m, int timeout_ms)
{
	double t0 = h_now_ms();
	char *have = NULL, *want = NULL;
	int ok = 0;
	while (!ok && h_now_ms() - t0 < timeout_ms) {
		free(have);
		free(want);
		want = others_keys(m);
		have = persistent_keys(m);
		ok = want[0] && has_all(have, want);
		if (!ok)
			h_sleep_ms(20);
	}
	double el = h_now_ms() - t0;
	ck_assert_msg(ok, "master %d %.0f ms after its restart has the keys\n%sexpected\n%s", m, el,
	              have, want);
	free(have);
	free(want);
	return el;
}

/* Wait (bounded) until every master counts: all hold the marker. Returns
 * the ms waited. */
static double wait_all_count(int timeout_ms)
{
	double t0 = h_now_ms();
	int ok = 0;
	char *k[H_MAX_MASTERS] = {0};
	while (!ok && h_now_ms() - t0 < timeout_ms) {
		ok = 1;
		for (int i = 0; i < h_nmasters(); i++) {
			free(k[i]);
			k[i] = persistent_keys(i);
			ok &= k[i][0] && (i == 0 || strcmp(k[i], k[0]) == 0);
		}
		if (!ok)
			h_sleep_ms(20);
	}
	double el = h_now_ms() - t0;
	for (int i = 0; i < h_nmasters(); i++) {
		if (!ok)
			fprintf(stderr, "master %d marker keys:\n%s", i, k[i]);
		free(k[i]);
	}
	ck_assert_msg(ok, "the masters do not all hold lockd's marker %.0f ms after start", el);
	return el;
}

START_TEST(one_master_down)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open();
	h_master_kill(2);
	double ms;
	char *r = cl_timed(a, "TRYLOCK k", &ms);
	h_fence(r);
	ck_assert_msg(ms < H_SLOW_LIMIT, "TRYLOCK took %.0f ms with one master down", ms);
	free(r);
	ck_assert_int_eq(h_masters_with_pttl(2, "lockd:k", NULL, NULL), 2);
	cl_expect(b, "TRYLOCK k", "BUSY");
	ck_assert_int_eq(cl_status(b, "k", NULL, NULL), 1);
	cl_send(b, "LOCK k WAIT 3000\n");
	cl_silence(b, 100);
	r = cl_timed(a, "UNLOCK k", &ms);
	ck_assert_str_eq(r, "OK 0");
	ck_assert_msg(ms < H_SLOW_LIMIT, "UNLOCK took %.0f ms with one master down", ms);
	free(r);
	cl_want_ok(b, 1000);
	cl_close(a);
	cl_close(b);
}
END_TEST

START_TEST(two_masters_down)
{
	h_std(NULL);
	struct cl *a = cl_open();
	h_master_kill(1);
	h_master_kill(2);
	double ms;
	char *r = cl_timed(a, "TRYLOCK k", &ms);
	ck_assert_msg(strncmp(r, "ERR QUORUM", 10) == 0, "TRYLOCK without a majority: '%s'", r);
	ck_assert_msg(ms < H_SLOW_LIMIT, "TRYLOCK took %.0f ms", ms);
	free(r);
	r = cl_timed(a, "LOCK k WAIT 300", &ms);
	ck_assert_msg(strncmp(r, "ERR QUORUM", 10) == 0, "LOCK WAIT 300 without a majority: '%s'",
	              r);
	ck_assert_msg(ms >= 300 && ms < 300 + H_SLOW_LIMIT,
	              "LOCK k WAIT 300 answered after %.0f ms", ms);
	free(r);
	r = cl_timed(a, "STATUS k", &ms);
	ck_assert_msg(ms < H_SLOW_LIMIT, "STATUS took %.0f ms ('%s')", ms, r);
	free(r);
	r = cl_timed(a, "PING", &ms);
	ck_assert_str_eq(r, "PONG");
	free(r);
	cl_close(a);
}
END_TEST

START_TEST(stopped_masters)
{
	h_std(NULL);
	wait_all_count(5000);
	struct cl *a = cl_open(), *b = cl_open();
	cl_lock(a, "LOCK held");
	h_master_stop(0);
	double ms;
	char *r = cl_timed(a, "TRYLOCK k", &ms);
	h_fence(r);
	ck_assert_msg(ms < H_SLOW_LIMIT, "TRYLOCK took %.0f ms with one master stopped", ms);
	free(r);
	r = cl_timed(b, "TRYLOCK k", &ms);
	ck_assert_str_eq(r, "BUSY");
	ck_assert_msg(ms < H_SLOW_LIMIT, "TRYLOCK took %.0f ms with one master stopped", ms);
	free(r);
	r = cl_timed(a, "UNLOCK k", &ms);
	ck_assert_str_eq(r, "OK 0");
	ck_assert_msg(ms < H_SLOW_LIMIT, "UNLOCK took %.0f ms with one master stopped", ms);
	free(r);
	h_master_stop(1);
	r = cl_timed(b, "TRYLOCK k2", &ms);
	ck_assert_msg(strncmp(r, "ERR QUORUM", 10) == 0, "TRYLOCK with 2 of 3 stopped: '%s'", r);
	ck_assert_msg(ms < H_SLOW_LIMIT, "TRYLOCK took %.0f ms with two masters stopped", ms);
	free(r);
	r = cl_timed(b, "STATUS held", &ms);
	ck_assert_msg(ms < H_SLOW_LIMIT, "STATUS took %.0f ms with two masters stopped ('%s')", ms,
	              r);
	free(r);
	r = cl_timed(a, "UNLOCK held", &ms);
	ck_assert_msg(strncmp(r, "ERR QUORUM", 10) == 0, "UNLOCK with 2 of 3 stopped: '%s'", r);
	ck_assert_msg(ms < H_SLOW_LIMIT, "UNLOCK took %.0f ms with two masters stopped", ms);
	free(r);
	/* either way the session no longer holds it */
	cl_expect(a, "HELD", "END");
	r = cl_timed(b, "PING", &ms);
	ck_assert_str_eq(r, "PONG");
	free(r);
	h_master_cont(0);
	h_master_cont(1);
	/* back to normal (a late SET may keep k2 busy for its lease: use another key) */
	const char *l = NULL;
	for (int t = 0; t < 100; t++) {
		l = cl_cmd(b, "TRYLOCK k3", H_TMO);
		if (l && strncmp(l, "OK ", 3) == 0)
			break;
		h_sleep_ms(30);
	}
	ck_assert_msg(l && strncmp(l, "OK ", 3) == 0, "TRYLOCK after SIGCONT: '%s'", l ? l : "");
	cl_close(a);
	cl_close(b);
}
END_TEST

START_TEST(lost_when_majority_lost)
{
	struct h_opts o = {.lease_ms = 600};
	h_std(&o);
	struct cl *a = cl_open();
	unsigned long long f = cl_lock(a, "LOCK k");
	cl_lock(a, "LOCK t TTL 60000");
	cl_silence(a, 300);
	h_master_kill(1);
	h_master_kill(2);
	double t0 = h_now_ms();
	const char *l = cl_line(a, 3000);
	double el = h_now_ms() - t0;
	char want[64];
	snprintf(want, sizeof(want), "LOST k %llu", f);
	ck_assert_msg(l && strcmp(l, want) == 0, "got '%s', expected '%s'", l ? l : "nothing",
	              want);
	/* the lease was renewed at most 600 ms before the kill */
	ck_assert_msg(el <= 600 + H_JITTER, "LOST %.0f ms after losing the majority (lease 600)",
	              el);
	/* the TTL lock is not renewed: it stays (nobody can take it anyway) */
	cl_expect_held(a, "t");
	cl_expect_prefix(a, "UNLOCK k", "ERR NOTHELD");
	cl_close(a);
}
END_TEST

/* A new deployment: every master counts at once. */
START_TEST(startup_all_masters_count)
{
	h_std(NULL);
	double el = wait_all_count(1000);
	fprintf(stderr, "startup_all_masters_count: all marked after %.0f ms\n", el);
	/* whichever two remain, they count */
	for (int m = 0; m < 3; m++) {
		struct cl *a = cl_open();
		h_master_stop(m);
		double ms;
		char *r = cl_timed(a, "TRYLOCK k", &ms);
		ck_assert_msg(strncmp(r, "OK ", 3) == 0, "TRYLOCK with master %d stopped: '%s'", m,
		              r);
		free(r);
		cl_expect(a, "UNLOCK k", "OK 0");
		h_master_cont(m);
		cl_close(a);
	}
}
END_TEST

/* The watchdog writes the lock back on a master that restarted empty,
 * and once that master counts again the lock survives losing another. */
START_TEST(restart_heals_lock)
{
	struct h_opts o = {.lease_ms = 900, .redis_extra = "  restart_exclusion_ms: 1000\n"};
	h_std(&o);
	struct cl *a = cl_open(), *b = cl_open();
	wait_all_count(5000);
	unsigned long long f = cl_lock(a, "LOCK k");
	h_master_restart(0);
	double t0 = h_now_ms();
	long long p = 0;
	while (h_now_ms() - t0 < 2000) {
		p = h_redis_int(0, "PTTL", "lockd:k", NULL);
		if (p > 0)
			break;
		h_sleep_ms(20);
	}
	ck_assert_msg(p > 0, "lockd:k not written back on the restarted master within 2 s");
	cl_expect(b, "TRYLOCK k", "BUSY");
	/* wait until it counts again, then lose another master */
	wait_counts_again(0, 5000);
	ck_assert_int_eq(a->nlost, 0);
	h_master_kill(1);
	cl_silence(a, 2000);
	cl_expect(b, "TRYLOCK k", "BUSY");
	ck_assert_int_eq(h_masters_with_pttl(3, "lockd:k", NULL, NULL), 2);
	char hl[64];
	snprintf(hl, sizeof(hl), "KEY k %llu 1 ", f);
	cl_send(a, "HELD\n");
	const char *l = cl_reply(a, H_TMO);
	ck_assert_msg(l && strncmp(l, hl, strlen(hl)) == 0, "HELD '%s'", l ? l : "");
	cl_want(a, "END", H_TMO);
	ck_assert_int_eq(a->nlost, 0);
	cl_close(a);
	cl_close(b);
}
END_TEST

/* A master that restarted empty does not count until restart_exclusion_ms
 * has passed: its marker comes back no earlier. */
START_TEST(restart_exclusion)
{
	struct h_opts o = {.redis_extra = "  restart_exclusion_ms: 1500\n"};
	h_std(&o);
	struct cl *a = cl_open();
	unsigned long long f = 0;
	for (int i = 0; i < 5; i++) {
		f = cl_lock(a, "TRYLOCK k");
		cl_expect(a, "UNLOCK k", "OK 0");
	}
	wait_all_count(5000);
	double t0 = h_now_ms(); /* lockd cannot see the new run_id before this */
	h_master_restart(0);
	/* grants go on with the two others meanwhile */
	unsigned long long g = cl_lock(a, "TRYLOCK k");
	ck_assert_uint_gt(g, f);
	cl_expect(a, "UNLOCK k", "OK 0");
	wait_counts_again(0, 6000);
	double el = h_now_ms() - t0;
	ck_assert_msg(el >= 1500,
	              "master 0 counted again %.0f ms after it restarted empty "
	              "(restart_exclusion_ms 1500)",
	              el);
	/* it counts: grants from masters 0 and 2 carry on the fences */
	h_master_kill(1);
	unsigned long long h = cl_lock(a, "TRYLOCK k");
	ck_assert_msg(h > g, "fence %llu after %llu", h, g);
	cl_close(a);
}
END_TEST

/* A master that restarted empty gets every fence counter back, also of
 * keys nobody locks while it is out, before it counts again. */
START_TEST(restart_catches_up_counters)
{
	struct h_opts o = {.redis_extra = "  restart_exclusion_ms: 800\n"};
	h_std(&o);
	wait_all_count(5000);
	struct cl *a = cl_open();
	unsigned long long f = 0;
	for (int i = 0; i < 4; i++) {
		f = cl_lock(a, "TRYLOCK quiet");
		cl_expect(a, "UNLOCK quiet", "OK 0");
	}
	h_master_restart(2);
	char *gone = h_redis(2, "GET", "lockd:quiet fence", NULL);
	ck_assert_msg(gone && strcmp(gone, "(nil)") == 0, "restarted master still has %s", gone);
	free(gone);
	wait_counts_again(2, 6000);
	char *v = h_redis(2, "GET", "lockd:quiet fence", NULL);
	ck_assert_msg(v && strtoull(v, NULL, 10) >= f,
	              "counter on the caught-up master is %s, last fence %llu", v ? v : "NULL", f);
	free(v);
	/* and a grant from it and one other carries the fence on */
	h_master_kill(0);
	unsigned long long g = cl_lock(a, "TRYLOCK quiet");
	ck_assert_msg(g > f, "fence %llu after %llu", g, f);
	cl_close(a);
}
END_TEST

/* Every master restarts empty, one after the other: fences keep growing
 * because each one's counters are caught up before it counts again. */
START_TEST(fences_survive_restarts)
{
	struct h_opts o = {.lease_ms = 1000, .redis_extra = "  restart_exclusion_ms: 600\n"};
	h_std(&o);
	wait_all_count(5000);
	struct cl *a = cl_open();
	unsigned long long f = 0;
	for (int i = 0; i < 10; i++) {
		f = cl_lock(a, "TRYLOCK k");
		cl_expect(a, "UNLOCK k", "OK 0");
	}
	for (int m = 0; m < 3; m++) {
		h_master_restart(m);
		wait_counts_again(m, 5000);
		unsigned long long g = cl_lock(a, "TRYLOCK k");
		ck_assert_msg(g > f, "fence %llu after %llu (master %d restarted)", g, f, m);
		f = g;
		cl_expect(a, "UNLOCK k", "OK 0");
	}
	/* and now grants that involve no master holding an old counter */
	h_master_kill(0);
	unsigned long long g = cl_lock(a, "TRYLOCK k");
	ck_assert_msg(g > f, "fence %llu after %llu", g, f);
	cl_close(a);
}
END_TEST

START_TEST(sigterm_shutdown)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open(), *s = cl_open();
	cl_lock(a, "LOCK k");
	cl_lock(a, "LOCK t TTL 60000");
	cl_send(b, "LOCK k\n");
	cl_wait_waiters(s, "k", 1, 2000);
	ck_assert_int_ge(h_masters_with_pttl(3, "lockd:t", NULL, NULL), 2);
	h_lockd_signal(0, SIGTERM);
	cl_want_prefix(b, "ERR SHUTDOWN", 3000);
	/* the holder is told of each lock it loses before lockd closes it */
	const char *l1 = cl_line(a, 3000), *l2;
	ck_assert_msg(l1 && strncmp(l1, "LOST ", 5) == 0, "holder got '%s', not LOST", l1);
	int got_k = strncmp(l1, "LOST k ", 7) == 0, got_t = strncmp(l1, "LOST t ", 7) == 0;
	l2 = cl_line(a, 3000);
	ck_assert_msg(l2 && strncmp(l2, "LOST ", 5) == 0, "holder got '%s', not a second LOST", l2);
	got_k |= strncmp(l2, "LOST k ", 7) == 0;
	got_t |= strncmp(l2, "LOST t ", 7) == 0;
	ck_assert_msg(got_k && got_t, "LOST for k and t expected");
	int st = h_lockd_wait(0, 5000);
	ck_assert_msg(st != -1, "lockd still running 5 s after SIGTERM");
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lockd exit status %d (signal %d)",
	              WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	for (int i = 0; i < 3; i++)
		ck_assert_msg(h_redis_int(i, "EXISTS", "lockd:k", "lockd:t", NULL) == 0,
		              "locks left on master %d after SIGTERM", i);
	cl_close(a);
	cl_close(b);
	cl_close(s);
}
END_TEST

/* One handoff from a holder on lockd 0 to a waiter on lockd 1, timed from
 * the UNLOCK's reply; kill: restart every master's pub/sub connections
 * (CLIENT KILL TYPE pubsub) once the waiter sleeps, just before the UNLOCK. */
static double pubsub_handoff(struct cl *a, struct cl *b, struct cl *s, const char *key, int kill)
{
	char req[64];
	snprintf(req, sizeof(req), "LOCK %s", key);
	cl_lock(a, req);
	snprintf(req, sizeof(req), "LOCK %s WAIT 20000\n", key);
	cl_send(b, req);
	cl_wait_waiters(s, key, 1, 2000);
	h_sleep_ms(200); /* its first try found the key busy: it sleeps on the lease */
	for (int i = 0; kill && i < 3; i++) {
		/* the subscribers of both lockd: the masters stay up */
		long long n = h_redis_int(i, "CLIENT", "KILL", "TYPE", "pubsub", NULL);
		ck_assert_msg(n == 2, "CLIENT KILL TYPE pubsub on master %d killed %lld, not 2", i,
		              n);
	}
	snprintf(req, sizeof(req), "UNLOCK %s", key);
	double ms;
	char *r = cl_timed(a, req, &ms);
	ck_assert_msg(strcmp(r, "OK 0") == 0,
	              "UNLOCK %s %s answered '%s' (masters healthy, the command connections "
	              "untouched)",
	              key, kill ? "right after CLIENT KILL TYPE pubsub" : "after the resubscribe",
	              r);
	free(r);
	double t0 = h_now_ms();
	cl_want_ok(b, 500 + H_LOADED + 500);
	double d = h_now_ms() - t0;
	/* the service level to a waiter on another lockd: 500 ms */
	ck_assert_msg(d <= 500 + H_LOADED,
	              "the waiter on lockd 1 got %s %.0f ms after the UNLOCK%s (service level "
	              "500 ms, lease 10 s)",
	              key, d, kill ? " across CLIENT KILL TYPE pubsub" : "");
	snprintf(req, sizeof(req), "UNLOCK %s", key);
	cl_expect(b, req, "OK 0");
	return d;
}

/* The masters restart their pub/sub connections (CLIENT KILL TYPE pubsub),
 * healthy otherwise: lockd resubscribes on its own without touching the
 * command connections, so an UNLOCK sent right then is confirmed, and a
 * waiter on the other lockd, whose release notice may have been missed
 * while it resubscribed, is granted within the service level (500 ms to
 * another lockd), not at the lease's end (10 s). Then notices flow again. */
START_TEST(pubsub_restarted)
{
	struct h_opts o = {.lease_ms = 10000};
	h_std(&o);
	h_lockd_start(&o);
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	struct cl *s = cl_tcp(h_lockd(1)->port);
	double d0 = pubsub_handoff(a, b, s, "ps0", 1);
	h_sleep_ms(500); /* resubscribed by now */
	double d1 = pubsub_handoff(a, b, s, "ps1", 0);
	double d2 = pubsub_handoff(a, b, s, "ps2", 1);
	fprintf(stderr,
	        "pubsub_restarted: handoffs %.0f ms (across a kill), %.0f ms, %.0f ms "
	        "(across a kill)\n",
	        d0, d1, d2);
	cl_close(a);
	cl_close(b);
	cl_close(s);
}
END_TEST

/* ------------------------------------------------------------------ layout */

/* doc/design.md, "Layout version and rolling upgrades": every command
 * connection is named lockd-l1-<instance> before it reads the layout key
 * "<prefix> layout", and a master whose key says another layout does not
 * count until the key is gone. */

#define LAYOUT_KEY "lockd: layout"

/* The names of master i's connections that begin with prefix, sorted,
 * each followed by '\n' (malloc'd); *n how many, *id (unless NULL) the
 * CLIENT LIST id of the last one. */
static char *names_on(int i, const char *prefix, int *n, long long *id)
{
	char *list = h_redis(i, "CLIENT", "LIST", NULL);
	ck_assert_ptr_nonnull(list);
	char *v[64];
	size_t total = 1;
	*n = 0;
	for (char *save = NULL, *l = strtok_r(list, "\n", &save); l && *n < 64;
	     l = strtok_r(NULL, "\n", &save)) {
		char *nm = strstr(l, " name=");
		if (!nm || strncmp(nm + 6, prefix, strlen(prefix)) != 0)
			continue;
		if (id)
			*id = strncmp(l, "id=", 3) == 0 ? strtoll(l + 3, NULL, 10) : -1;
		nm += 6;
		nm[strcspn(nm, " ")] = '\0';
		v[(*n)++] = nm;
		total += strlen(nm) + 1;
	}
	qsort(v, (size_t)*n, sizeof(v[0]), cmp_line);
	char *out = calloc(1, total);
	for (int j = 0; j < *n; j++) {
		strcat(out, v[j]);
		strcat(out, "\n");
	}
	free(list);
	return out;
}

/* The instance of the lockd that holds key: its token's first 16 hex, as
 * the first master that has the lock key stores it. */
static void instance_of(const char *key, char inst[17])
{
	char rk[64];
	snprintf(rk, sizeof(rk), "lockd:%s", key);
	inst[0] = '\0';
	for (int i = 0; i < h_nmasters() && !inst[0]; i++) {
		char *v = h_redis(i, "GET", rk, NULL);
		if (v && strlen(v) >= 16 && strspn(v, "0123456789abcdef") >= 16)
			snprintf(inst, 17, "%.16s", v);
		free(v);
	}
	ck_assert_msg(inst[0], "no master has a token at %s", rk);
}

/* Two lockd on the same masters: on each master, one command connection
 * named lockd-l1-<instance> per lockd (the instance of its tokens), and a
 * subscriber named lockd-sub-<instance>, which a build of another layout
 * does not wait for. */
START_TEST(layout_names)
{
	h_std(NULL);
	h_lockd_start(NULL);
	struct cl *c[2] = {cl_open(), cl_tcp(h_lockd(1)->port)};
	char inst[2][17];
	for (int j = 0; j < 2; j++) {
		char req[32], key[16];
		snprintf(key, sizeof(key), "ln%d", j);
		snprintf(req, sizeof(req), "TRYLOCK %s", key);
		cl_lock(c[j], req);
		instance_of(key, inst[j]);
	}
	ck_assert_str_ne(inst[0], inst[1]);
	int lo = strcmp(inst[0], inst[1]) < 0 ? 0 : 1;
	char want[128], want_sub[128];
	snprintf(want, sizeof(want), "lockd-l1-%s\nlockd-l1-%s\n", inst[lo], inst[!lo]);
	snprintf(want_sub, sizeof(want_sub), "lockd-sub-%s\nlockd-sub-%s\n", inst[lo], inst[!lo]);
	for (int i = 0; i < 3; i++) {
		int n;
		char *have = names_on(i, "lockd-l1-", &n, NULL);
		ck_assert_msg(strcmp(have, want) == 0,
		              "master %d: named connections\n%sexpected\n%s", i, have, want);
		/* a subscriber subscribes once its master is up: soon after */
		double t0 = h_now_ms();
		for (int t = 0; t < 200; t++) {
			free(have);
			have = names_on(i, "lockd-sub-", &n, NULL);
			if (strcmp(have, want_sub) == 0 || h_now_ms() - t0 > 1000 + H_LOADED)
				break;
			h_sleep_ms(10);
		}
		ck_assert_msg(strcmp(have, want_sub) == 0, "master %d: subscribers\n%sexpected\n%s",
		              i, have, want_sub);
		free(have);
	}
	cl_close(c[0]);
	cl_close(c[1]);
}
END_TEST

/* Masters whose ACL refuses CLIENT SETNAME (as a proxy may): lockd works
 * on, unnamed, and warns once per master (not again when it reconnects)
 * that a change of layout cannot be rolling there. */
START_TEST(layout_name_refused)
{
	h_masters_start(3);
	for (int i = 0; i < 3; i++) {
		char *r = h_redis(i, "ACL", "SETUSER", "default", "-client|setname", NULL);
		ck_assert_str_eq(r, "OK");
		free(r);
	}
	h_lockd_start(NULL);
	struct cl *a = cl_open();
	cl_lock(a, "TRYLOCK k");
	cl_expect(a, "UNLOCK k", "OK 0");
	cl_expect_stat(a, "masters_counting", "3");
	cl_expect_stat(a, "master.0.layout", "1");
	/* the unnamed command connection (not the caller, not the subscriber) */
	ck_assert_int_eq(h_redis_int(0, "CLIENT", "KILL", "TYPE", "normal", NULL), 1);
	cl_wait_stat(a, "master.0.reconnects", "1", 1000 + H_LOADED);
	cl_wait_stat(a, "masters_counting", "3", 1000 + H_LOADED);
	for (int i = 0; i < 3; i++) {
		int n;
		free(names_on(i, "lockd-", &n, NULL));
		ck_assert_int_eq(n, 0);
		char node[32];
		snprintf(node, sizeof(node), "master 127.0.0.1:%d:", h_master(i)->port);
		ck_assert_int_eq(h_file_count(h_lockd(0)->log, 0, node, "CLIENT SETNAME lockd-l1-"),
		                 1);
	}
	cl_close(a);
}
END_TEST

/* SET the layout key to val on masters 0 and 1, and to 1 on master 2, and
 * kill lockd's command connections there (CLIENT KILL ID: 7.0 has no name
 * filter): lockd reconnects, counts master 2 (layout 1 said so) but not
 * the others (STATS says why; the log warns once per master, though it
 * retries), so LOCK finds no majority. Once the key is gone, they count
 * again within redis.reconnect_max_ms (1000 ms) and LOCK is granted. */
static void layout_refused_run(const char *val)
{
	h_std(NULL);
	struct cl *a = cl_open();
	cl_lock(a, "TRYLOCK before");
	cl_expect(a, "UNLOCK before", "OK 0");
	char name[64], why[128], want[64];
	snprintf(why, sizeof(why), "layout %s found, this lockd runs layout 1: not counted", val);
	for (int i = 0; i < 3; i++) {
		char *r = h_redis(i, "SET", LAYOUT_KEY, i < 2 ? val : "1", NULL);
		ck_assert_str_eq(r, "OK");
		free(r);
		int n;
		long long id = -1;
		free(names_on(i, "lockd-l1-", &n, &id));
		ck_assert_msg(n == 1 && id > 0, "master %d: %d named connections (id %lld)", i, n,
		              id);
		char ids[32];
		snprintf(ids, sizeof(ids), "%lld", id);
		ck_assert_int_eq(h_redis_int(i, "CLIENT", "KILL", "ID", ids, NULL), 1);
	}
	for (int i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "master.%d.layout", i);
		cl_wait_stat(a, name, val, 1000 + H_LOADED);
		snprintf(name, sizeof(name), "master.%d.last_error", i);
		cl_expect_stat(a, name, why);
		snprintf(name, sizeof(name), "master.%d.counts", i);
		cl_expect_stat(a, name, "0");
	}
	cl_wait_stat(a, "master.2.reconnects", "1", 1000 + H_LOADED);
	cl_wait_stat(a, "masters_counting", "1", 1000 + H_LOADED);
	cl_expect_stat(a, "master.2.layout", "1");
	cl_expect_stat(a, "master.2.last_error", "-");
	cl_expect_stat(a, "quorum_ok", "0");
	cl_expect(a, "TRYLOCK k", "ERR QUORUM no majority of masters answered");
	cl_expect(a, "LOCK k WAIT 100", "ERR QUORUM no majority of masters answered");
	/* retried with the backoff (at most reconnect_max_ms apart), and
	 * warned about once per master */
	char *r0 = cl_stat(a, "master.0.reconnects");
	snprintf(want, sizeof(want), "%llu", strtoull(r0, NULL, 10) + 2);
	free(r0);
	cl_wait_stat(a, "master.0.reconnects", want, 2 * 1000 + H_LOADED);
	snprintf(want, sizeof(want), "says layout %s,", val);
	for (int i = 0; i < 3; i++) {
		char node[32];
		snprintf(node, sizeof(node), "master 127.0.0.1:%d:", h_master(i)->port);
		ck_assert_int_eq(h_file_count(h_lockd(0)->log, 0, node, want), i < 2);
	}
	cl_expect(a, "TRYLOCK k", "ERR QUORUM no majority of masters answered");
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(h_redis_int(i, "DEL", LAYOUT_KEY, NULL), 1);
	double t0 = h_now_ms();
	cl_wait_stat(a, "masters_counting", "3", 1000 + H_LOADED);
	fprintf(stderr, "layout %s: the masters count %.0f ms after the DEL\n", val,
	        h_now_ms() - t0);
	cl_lock(a, "LOCK k WAIT 1000");
	cl_expect_stat(a, "master.0.layout", "1");
	cl_expect_stat(a, "master.0.last_error", "-");
	snprintf(want, sizeof(want), "layout 1 again (was %s)", val);
	ck_assert_int_eq(h_file_count(h_lockd(0)->log, 0, want, NULL), 2);
	cl_close(a);
}

START_TEST(layout_refused)
{
	layout_refused_run("2");
}
END_TEST

/* A value that is no layout at all is refused the same way. */
START_TEST(layout_garbage)
{
	layout_refused_run("x");
}
END_TEST

TCase *tc_faults(void)
{
	TCase *tc = tcase_create("faults");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 30);
	H_ADD(tc, startup_all_masters_count);
	H_ADD(tc, one_master_down);
	H_ADD(tc, two_masters_down);
	H_ADD(tc, stopped_masters);
	H_ADD(tc, lost_when_majority_lost);
	H_ADD(tc, restart_heals_lock);
	H_ADD(tc, restart_exclusion);
	H_ADD(tc, restart_catches_up_counters);
	H_ADD(tc, fences_survive_restarts);
	H_ADD(tc, sigterm_shutdown);
	H_ADD(tc, pubsub_restarted);
	H_ADD(tc, layout_names);
	H_ADD(tc, layout_refused);
	H_ADD(tc, layout_garbage);
	H_ADD(tc, layout_name_refused);
	return tc;
}
