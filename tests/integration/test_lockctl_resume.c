/* `lockctl run` on a resumable session (protocol 1.2), against real
 * masters and real lockds: CMD runs on across a systemctl-style restart
 * of lockd (SIGTERM, started again on the same port) with the lock held
 * by the same session and fence; across the SIGKILL of one lockd when
 * another on the same masters is listed (-h A,B), with the time from the
 * SIGKILL to the session resumed on B printed; and when the lockd dies
 * and never comes back, CMD is stopped before the lease it last confirmed
 * can end (exit 70). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define LEASE 3000 /* h_opts default lease_ms */

static int group_exists(pid_t pg)
{
	return kill(-pg, 0) == 0 || errno != ESRCH;
}

/* CMD: writes its LOCKD_FENCE and its pid (the group), then waits for the
 * file "go" (at most 60 s) and exits 0. */
static const char *cmd_line(char *buf, size_t n)
{
	snprintf(buf, n,
	         "echo $LOCKD_FENCE > %s/fence.tmp && mv %s/fence.tmp %s/fence; "
	         "echo $$ > %s/pg.tmp && mv %s/pg.tmp %s/pg; i=0; "
	         "while [ ! -e %s/go ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done",
	         h_dir(), h_dir(), h_dir(), h_dir(), h_dir(), h_dir(), h_dir());
	return buf;
}

static long wait_long(const char *name, int timeout_ms)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", h_dir(), name);
	double end = h_now_ms() + timeout_ms;
	while (h_file_size(path) <= 0) {
		ck_assert_msg(h_now_ms() < end, "%s not written within %d ms", path, timeout_ms);
		h_sleep_ms(5);
	}
	char *s = h_slurp(path);
	ck_assert(s != NULL);
	long v = strtol(s, NULL, 10);
	free(s);
	return v;
}

static void go(void)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/go", h_dir());
	h_put_file(path, "go\n");
}

/* The session id lockctl -v printed ("session ID on PEER"). */
static void session_id(const struct h_lockctl *p, char *id, size_t n)
{
	char *l = h_log_wait(p->err, 0, "session ", " on ", 5000);
	ck_assert_msg(l != NULL, "lockctl -v printed no session id");
	const char *s = strstr(l, "session ");
	ck_assert(sscanf(s, "session %63s on", id) == 1 && n >= 64);
	free(l);
}

/* The hold of key in the session's record on master i: its fence, or -1. */
static long long record_fence1(int i, const char *id, const char *key)
{
	char rkey[128], field[300];
	snprintf(rkey, sizeof(rkey), "lockd: session %s", id);
	snprintf(field, sizeof(field), "x0 %s", key);
	char *v = h_redis(i, "HGET", rkey, field, NULL);
	long long tok_fence = -1;
	char tok[128];
	if (v && sscanf(v, "%127s %lld", tok, &tok_fence) != 2)
		tok_fence = -1;
	free(v);
	return tok_fence;
}

/* How many masters list the hold of key in the session's record. (Each
 * master's record has that master's fence counter; the lock's fence is
 * lockd's to choose from them: lockctl compares it with HELD's.) */
static int record_holds(const char *id, const char *key)
{
	int n = 0;
	for (int i = 0; i < h_nmasters(); i++)
		n += record_fence1(i, id, key) > 0;
	return n;
}

/* Another session gets BUSY for key on lockd idx. */
static void assert_busy(int idx, const char *key)
{
	struct cl *c = cl_tcp(h_lockd(idx)->port);
	char req[300];
	snprintf(req, sizeof(req), "TRYLOCK %s", key);
	const char *r = cl_cmd(c, req, H_SLOW_LIMIT);
	ck_assert_msg(r && strcmp(r, "BUSY") == 0, "TRYLOCK %s on lockd %d: '%s'", key, idx,
	              r ? r : "(nothing)");
	cl_close(c);
}

/* systemctl restart lockd: SIGTERM, wait for the exit, start it again on
 * the same port. CMD runs on, the session keeps the lock with the same
 * fence on the masters past several leases, and CMD's normal end is
 * lockctl's (exit 0, UNLOCK answered). */
START_TEST(lockctl_run_lockd_restart)
{
	h_std(NULL);
	char cmd[2 * PATH_MAX + 600], id[64];
	const char *args[] = {
	    "-p", NULL, "run", "-v", "job", "--", "sh", "-c", cmd_line(cmd, sizeof(cmd)), NULL};
	char port[16];
	snprintf(port, sizeof(port), "%d", h_lockd(0)->port);
	args[1] = port;
	struct h_lockctl p;
	h_lockctl_spawn(&p, args);
	wait_long("fence", 5000);
	pid_t pg = (pid_t)wait_long("pg", 5000);
	session_id(&p, id, sizeof(id));
	ck_assert_int_ge(record_holds(id, "job"), 2);

	double t0 = h_now_ms();
	h_lockd_signal(0, SIGTERM);
	int st = h_lockd_wait(0, 5000);
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "lockd: %s",
	              h_status_str(st));
	double t_down = h_now_ms();
	int up_ms = h_lockd_restart(0);
	char *l = h_log_wait(p.err, 0, "resumed on", NULL, LEASE);
	double t_res = h_now_ms();
	ck_assert_msg(l != NULL, "lockctl did not resume within %d ms of lockd's restart", LEASE);
	fprintf(stderr,
	        "lockctl_run_lockd_restart: SIGTERM -> lockd exited %.0f ms, started again in %d "
	        "ms; SIGTERM -> lockctl resumed (seen) %.0f ms; lockctl: %s\n",
	        t_down - t0, up_ms, t_res - t0, strstr(l, "session "));
	ck_assert_msg(strstr(l, "(1 held)") != NULL, "%s", l);
	free(l);
	ck_assert_msg(group_exists(pg), "CMD was stopped across the restart");
	/* held by the same session with the same fence (lockctl stops CMD when
	   HELD shows another fence), through several leases on the
	   restarted lockd */
	for (int i = 0; i < 3; i++) {
		h_sleep_ms(LEASE / 2);
		ck_assert_msg(group_exists(pg), "CMD stopped %d ms after the resume",
		              (i + 1) * LEASE / 2);
		ck_assert_int_ge(record_holds(id, "job"), 2);
		assert_busy(0, "job");
	}
	go();
	ck_assert_int_eq(h_lockctl_wait(&p, 10000), 0);
	char *err = h_slurp(p.err);
	ck_assert_msg(err && !strstr(err, "UNLOCK") && !strstr(err, "stopped"), "stderr '%s'",
	              err ? err : "");
	free(err);
	struct cl *c = cl_open();
	const char *r = cl_cmd(c, "STATUS job", H_SLOW_LIMIT);
	ck_assert_msg(r && strcmp(r, "FREE") == 0, "after CMD's end: STATUS job '%s'", r ? r : "");
	cl_close(c);
}
END_TEST

/* The only lockd is killed and never comes back: lockctl tries to resume
 * and, failing, stops CMD (SIGTERM, SIGKILL after the grace) before the
 * lease it last confirmed can end: exit 70. */
START_TEST(lockctl_run_lockd_gone)
{
	h_std(NULL);
	char cmd[2 * PATH_MAX + 600];
	char port[16];
	snprintf(port, sizeof(port), "%d", h_lockd(0)->port);
	const char *args[] = {"-p",
	                      port,
	                      "run",
	                      "-v",
	                      "-k",
	                      "500",
	                      "job",
	                      "--",
	                      "sh",
	                      "-c",
	                      cmd_line(cmd, sizeof(cmd)),
	                      NULL};
	struct h_lockctl p;
	h_lockctl_spawn(&p, args);
	wait_long("fence", 5000);
	pid_t pg = (pid_t)wait_long("pg", 5000);
	h_sleep_ms(200);
	double t0 = h_now_ms();
	h_lockd_signal(0, SIGKILL);
	double gone = -1, end = t0 + LEASE + 2000;
	while (h_now_ms() < end) {
		if (!group_exists(pg)) {
			gone = h_now_ms();
			break;
		}
		usleep(500);
	}
	ck_assert_msg(gone > 0, "CMD still runs %d ms after lockd was killed", LEASE + 2000);
	fprintf(stderr,
	        "lockctl_run_lockd_gone: lockd killed -> CMD's group gone: %.1f ms "
	        "(lease %d ms, grace 500 ms)\n",
	        gone - t0, LEASE);
	/* the last renewal was before the kill: the masters' lease ends before
	   t0 + LEASE, and CMD had to be gone before that (no headroom: safety) */
	ck_assert_msg(gone - t0 < LEASE, "%.0f ms", gone - t0);
	/* not at once: lockctl tried to resume while the lease allowed it */
	ck_assert_msg(gone - t0 > 500,
	              "CMD stopped %.0f ms after the kill, before trying to "
	              "resume",
	              gone - t0);
	ck_assert_int_eq(h_lockctl_wait(&p, 5000), 70);
	char *err = h_slurp(p.err);
	ck_assert_msg(err && strstr(err, "resuming session") && strstr(err, "no lockd resumed"),
	              "stderr '%s'", err ? err : "");
	free(err);
	h_lockd_wait(0, 5000);
}
END_TEST

/* Two lockds on the same masters, lockctl run -h A,B: SIGKILL of A. The
 * session is resumed on B, CMD runs on through several leases, another
 * session on B gets BUSY, and CMD's normal end releases the lock. The
 * time from the SIGKILL to the resume on B is printed. */
START_TEST(lockctl_run_failover)
{
	h_masters_start(3);
	/* debug: B's log line of the resume (info has none per session) */
	int a = h_lockd_start(NULL), b = h_lockd_start(&(struct h_opts){.log_debug = 1});
	char hosts[64], cmd[2 * PATH_MAX + 600], id[64], onb[64];
	snprintf(hosts, sizeof(hosts), "127.0.0.1:%d,127.0.0.1:%d", h_lockd(a)->port,
	         h_lockd(b)->port);
	snprintf(onb, sizeof(onb), "resumed on 127.0.0.1:%d", h_lockd(b)->port);
	const char *args[] = {
	    "-h", hosts, "run", "-v", "job", "--", "sh", "-c", cmd_line(cmd, sizeof(cmd)), NULL};
	struct h_lockctl p;
	h_lockctl_spawn(&p, args);
	wait_long("fence", 5000);
	pid_t pg = (pid_t)wait_long("pg", 5000);
	session_id(&p, id, sizeof(id));
	h_sleep_ms(200);
	long boff = h_file_size(h_lockd(b)->log);
	double t0 = h_now_ms();
	h_lockd_signal(a, SIGKILL);
	char *l = h_log_wait(p.err, 0, onb, NULL, LEASE);
	double t_seen = h_now_ms();
	ck_assert_msg(l != NULL, "lockctl did not resume on B within %d ms of A's SIGKILL", LEASE);
	char *lb = h_log_wait(h_lockd(b)->log, boff, "resumed from another lockd", NULL, 1000);
	ck_assert_msg(lb != NULL, "lockd B logged no resume from another lockd");
	double by_lockctl = -1;
	const char *m = strstr(l, "(1 held) ");
	ck_assert_msg(m && sscanf(m, "(1 held) %lf ms", &by_lockctl) == 1, "%s", l);
	fprintf(stderr,
	        "lockctl_run_failover: SIGKILL of lockd A -> session resumed on lockd B: %.1f ms "
	        "(seen in lockctl's log; lockctl measured %.1f ms from the connection's end to "
	        "RESUME's OK)\n",
	        t_seen - t0, by_lockctl);
	free(l);
	free(lb);
	h_lockd_wait(a, 5000);
	for (int i = 0; i < 3; i++) {
		h_sleep_ms(LEASE / 2);
		ck_assert_msg(group_exists(pg), "CMD stopped %d ms after the resume on B",
		              (i + 1) * LEASE / 2);
		ck_assert_int_ge(record_holds(id, "job"), 2);
		assert_busy(b, "job");
	}
	go();
	ck_assert_int_eq(h_lockctl_wait(&p, 10000), 0);
	struct cl *c = cl_tcp(h_lockd(b)->port);
	const char *r = cl_cmd(c, "STATUS job", H_SLOW_LIMIT);
	ck_assert_msg(r && strcmp(r, "FREE") == 0, "after CMD's end: STATUS job '%s'", r ? r : "");
	cl_close(c);
}
END_TEST

TCase *tc_lockctl_resume(void)
{
	TCase *tc = tcase_create("lockctl_resume");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, lockctl_run_lockd_restart);
	H_ADD(tc, lockctl_run_lockd_gone);
	H_ADD(tc, lockctl_run_failover);
	return tc;
}
