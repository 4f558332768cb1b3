/* `lockctl elect`, `lockctl leader` and `lockctl observe` (protocol 1.3)
 * against real masters and real lockds:
 *  - two contenders on two lockds: exactly one runs CMD at a time (CMD
 *    logs start and stop with its LOCKD_FENCE: no overlap, fences grow);
 *    the SIGKILL of the leader's lockd (no other address for it) stops
 *    its CMD (exit 70) and hands leadership to the other, whose CMD starts
 *    within the lease (plus headroom); `lockctl leader` before, during and
 *    after; CMD's exit status is lockctl's, and its end resigns;
 *  - `lockctl observe` as a child: NOLEADER, then ELECTED lines in fence
 *    order, its last line the current state after a burst of changes and
 *    after a restart of its lockd (resumed, observing again); SIGTERM ends
 *    it with exit 0. */
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

/* `lockctl -p port leader name`: its stdout (one line, without LF) into
 * out; returns its exit status. */
static int leader(int port, const char *name, char *out, size_t n)
{
	struct h_lockctl p;
	char ps[16];
	snprintf(ps, sizeof(ps), "%d", port);
	const char *args[] = {"-p", ps, "leader", name, NULL};
	h_lockctl_spawn(&p, args);
	int ex = h_lockctl_wait(&p, 15000);
	ck_assert_msg(ex != -1, "lockctl leader still runs after 15 s");
	char *s = h_slurp(p.out);
	snprintf(out, n, "%s", s ? s : "");
	free(s);
	char *nl = strchr(out, '\n');
	if (nl)
		*nl = '\0';
	return ex;
}

static char *path_of(const char *name)
{
	static char p[4][PATH_MAX];
	static int k;
	char *r = p[k++ % 4];
	snprintf(r, PATH_MAX, "%s/%s", h_dir(), name);
	return r;
}

/* The lines of the CMDs' log: "start fence value" and "stop fence". */
struct ev {
	int start;
	unsigned long long fence;
	char value[32];
};

static int read_log(struct ev *e, int max)
{
	char *s = h_slurp(path_of("log"));
	int n = 0;
	if (!s)
		return 0;
	for (char *l = strtok(s, "\n"); l && n < max; l = strtok(NULL, "\n")) {
		e[n].value[0] = '\0';
		if (sscanf(l, "start %llu %31s", &e[n].fence, e[n].value) == 2)
			e[n++].start = 1;
		else if (sscanf(l, "stop %llu", &e[n].fence) == 1)
			e[n++].start = 0;
		else
			ck_abort_msg("CMD's log has a line '%s'", l);
	}
	free(s);
	return n;
}

/* At most one CMD at a time: start, stop of the same fence, start of a
 * larger fence, ... */
static void assert_no_overlap(const struct ev *e, int n)
{
	unsigned long long last = 0;
	for (int i = 0; i < n; i++) {
		if (i % 2 == 0) {
			ck_assert_msg(e[i].start, "line %d: stop of %llu without its start", i + 1,
			              e[i].fence);
			ck_assert_msg(e[i].fence > last, "line %d: fence %llu after %llu", i + 1,
			              e[i].fence, last);
			last = e[i].fence;
		} else {
			ck_assert_msg(!e[i].start && e[i].fence == last,
			              "line %d: %s %llu while CMD of fence %llu runs", i + 1,
			              e[i].start ? "start" : "stop", e[i].fence, last);
		}
	}
}

/* Wait until the log has n lines; returns them in e. */
static void wait_log(struct ev *e, int n, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	int got;
	while ((got = read_log(e, 16)) < n) {
		ck_assert_msg(h_now_ms() < end, "CMD's log has %d lines, not %d, after %d ms", got,
		              n, timeout_ms);
		h_sleep_ms(5);
	}
}

/* CMD: logs "start $LOCKD_FENCE $LOCKD_VALUE" (with LOCKD_KEY checked),
 * then runs until the file done.$LOCKD_VALUE (exit 3) or SIGTERM (exit
 * 0), logging "stop $LOCKD_FENCE" either way. */
static const char *cmd_line(char *buf, size_t n)
{
	const char *d = h_dir();
	snprintf(buf, n,
	         "[ \"$LOCKD_KEY\" = ee ] || exit 9; "
	         "echo \"start $LOCKD_FENCE $LOCKD_VALUE\" >> %s/log; "
	         "trap 'echo \"stop $LOCKD_FENCE\" >> %s/log; exit 0' TERM; i=0; "
	         "while [ ! -e %s/done.$LOCKD_VALUE ] && [ $i -lt 1200 ]; do "
	         "sleep 0.05; i=$((i+1)); done; "
	         "echo \"stop $LOCKD_FENCE\" >> %s/log; exit 3",
	         d, d, d, d);
	return buf;
}

START_TEST(lockctl_elect_failover)
{
	h_masters_start(3);
	int a = h_lockd_start(NULL), b = h_lockd_start(NULL);
	char pa[16], pb[16], cmd[4 * PATH_MAX + 600], out[512];
	snprintf(pa, sizeof(pa), "%d", h_lockd(a)->port);
	snprintf(pb, sizeof(pb), "%d", h_lockd(b)->port);
	cmd_line(cmd, sizeof(cmd));

	ck_assert_int_eq(leader(h_lockd(b)->port, "ee", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "NONE");

	struct h_lockctl p1, p2;
	const char *a1[] = {"-p", pa, "elect", "-v", "ee", "n1", "--", "sh", "-c", cmd, NULL};
	h_lockctl_spawn(&p1, a1);
	struct ev e[16];
	wait_log(e, 1, 5000);
	ck_assert_str_eq(e[0].value, "n1");
	unsigned long long f1 = e[0].fence;
	const char *a2[] = {"-p", pb, "elect", "-v", "ee", "n2", "--", "sh", "-c", cmd, NULL};
	h_lockctl_spawn(&p2, a2);
	/* the second contender waits: for several leases, one CMD only */
	h_sleep_ms(LEASE + 500);
	ck_assert_int_eq(read_log(e, 16), 1);
	char want[128];
	snprintf(want, sizeof(want), "LEADER %llu n1", f1);
	ck_assert_int_eq(leader(h_lockd(b)->port, "ee", out, sizeof(out)), 0);
	ck_assert_str_eq(out, want);

	/* the leader's lockd dies; its lockctl has no other address */
	double t0 = h_now_ms();
	h_lockd_signal(a, SIGKILL);
	wait_log(e, 3, LEASE + 2 * H_LOADED);
	double t_start = h_now_ms();
	fprintf(stderr,
	        "lockctl_elect_failover: SIGKILL of the leader's lockd -> the other CMD started "
	        "%.0f ms later (seen; lease %d ms)\n",
	        t_start - t0, LEASE);
	int n = read_log(e, 16);
	ck_assert_int_eq(n, 3);
	assert_no_overlap(e, n);
	ck_assert_str_eq(e[2].value, "n2");
	unsigned long long f2 = e[2].fence;
	ck_assert_int_eq(h_lockctl_wait(&p1, 5000), 70); /* lockctl run's rule for loss */
	h_lockd_wait(a, 5000);
	snprintf(want, sizeof(want), "LEADER %llu n2", f2);
	ck_assert_int_eq(leader(h_lockd(b)->port, "ee", out, sizeof(out)), 0);
	ck_assert_str_eq(out, want);

	/* CMD's end: its status is lockctl's, and the leader resigns */
	h_put_file(path_of("done.n2"), "x\n");
	ck_assert_int_eq(h_lockctl_wait(&p2, 10000), 3);
	n = read_log(e, 16);
	ck_assert_int_eq(n, 4);
	assert_no_overlap(e, n);
	ck_assert_int_eq(leader(h_lockd(b)->port, "ee", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "NONE");
	char *err = h_slurp(p2.err);
	ck_assert_msg(err && !strstr(err, "RESIGN"), "stderr '%s'", err ? err : "");
	free(err);
}
END_TEST

/* Two contenders on one lockd, -w: the second is not elected within its
 * wait (exit 75, CMD never started) while the first leads; the first's
 * CMD ends (exit status passed through), and a third is elected with a
 * larger fence. */
START_TEST(lockctl_elect_one_at_a_time)
{
	h_std(NULL);
	char port[16], cmd[4 * PATH_MAX + 600];
	snprintf(port, sizeof(port), "%d", h_lockd(0)->port);
	cmd_line(cmd, sizeof(cmd));
	struct h_lockctl p1, p2, p3;
	const char *a1[] = {"-p", port, "elect", "ee", "n1", "--", "sh", "-c", cmd, NULL};
	h_lockctl_spawn(&p1, a1);
	struct ev e[16];
	wait_log(e, 1, 5000);
	const char *a2[] = {"-p", port, "elect", "-w", "300", "ee",
	                    "n2", "--", "sh",    "-c", cmd,   NULL};
	h_lockctl_spawn(&p2, a2);
	ck_assert_int_eq(h_lockctl_wait(&p2, 5000), 75);
	ck_assert_int_eq(read_log(e, 16), 1);
	const char *a3[] = {"-p", port, "elect", "ee", "n3", "--", "sh", "-c", cmd, NULL};
	h_lockctl_spawn(&p3, a3);
	h_sleep_ms(300);
	ck_assert_int_eq(read_log(e, 16), 1);
	h_put_file(path_of("done.n1"), "x\n");
	ck_assert_int_eq(h_lockctl_wait(&p1, 10000), 3);
	wait_log(e, 3, H_SLOW_LIMIT);
	ck_assert_str_eq(e[2].value, "n3");
	h_put_file(path_of("done.n3"), "x\n");
	ck_assert_int_eq(h_lockctl_wait(&p3, 10000), 3);
	int n = read_log(e, 16);
	ck_assert_int_eq(n, 4);
	assert_no_overlap(e, n);
}
END_TEST

/* The lines lockctl observe printed so far (up to max), and how many. */
static int obs_lines(const struct h_lockctl *p, char lines[][128], int max)
{
	char *s = h_slurp(p->out);
	int n = 0;
	if (!s)
		return 0;
	for (char *l = strtok(s, "\n"); l && n < max; l = strtok(NULL, "\n"))
		snprintf(lines[n++], 128, "%s", l);
	free(s);
	return n;
}

/* Wait until observe's last line is want. */
static void wait_last(const struct h_lockctl *p, const char *want, int timeout_ms)
{
	char lines[64][128];
	double end = h_now_ms() + timeout_ms;
	for (;;) {
		int n = obs_lines(p, lines, 64);
		if (n > 0 && strcmp(lines[n - 1], want) == 0)
			return;
		ck_assert_msg(h_now_ms() < end,
		              "observe's last line is '%s', not '%s', after %d ms",
		              n ? lines[n - 1] : "(none)", want, timeout_ms);
		h_sleep_ms(5);
	}
}

/* Every ELECTED line in fence order, no line twice in a row. */
static void assert_fence_order(const struct h_lockctl *p)
{
	char lines[64][128];
	int n = obs_lines(p, lines, 64);
	unsigned long long last = 0;
	for (int i = 0; i < n; i++) {
		unsigned long long f;
		char v[64];
		if (i > 0)
			ck_assert_msg(strcmp(lines[i], lines[i - 1]) != 0, "line %d repeats '%s'",
			              i + 1, lines[i]);
		if (strcmp(lines[i], "NOLEADER") == 0)
			continue;
		ck_assert_msg(sscanf(lines[i], "ELECTED %llu %63s", &f, v) == 2, "line %d: '%s'",
		              i + 1, lines[i]);
		ck_assert_msg(f >= last, "line %d: fence %llu after %llu", i + 1, f, last);
		last = f;
	}
}

START_TEST(lockctl_observe_changes)
{
	h_masters_start(3);
	int a = h_lockd_start(NULL), b = h_lockd_start(NULL);
	char pb[16], want[128];
	snprintf(pb, sizeof(pb), "%d", h_lockd(b)->port);
	struct h_lockctl p;
	const char *args[] = {"-p", pb, "observe", "-v", "ob", NULL};
	h_lockctl_spawn(&p, args);
	wait_last(&p, "NOLEADER", 5000);

	struct cl *c1 = cl_tcp(h_lockd(a)->port), *c2 = cl_tcp(h_lockd(a)->port);
	unsigned long long f1 = cl_lock(c1, "CAMPAIGN ob v1");
	snprintf(want, sizeof(want), "ELECTED %llu v1", f1);
	wait_last(&p, want, 500 + H_LOADED);
	/* a burst: a new value, a resign, another leader, its new value */
	cl_expect(c1, "PROCLAIM ob v2", "OK");
	cl_send(c2, "CAMPAIGN ob w1\n");
	cl_expect(c1, "RESIGN ob", "OK");
	unsigned long long f2 = cl_want_ok(c2, H_SLOW_LIMIT);
	ck_assert(f2 > f1);
	cl_expect(c2, "PROCLAIM ob w2", "OK");
	snprintf(want, sizeof(want), "ELECTED %llu w2", f2);
	wait_last(&p, want, 500 + H_LOADED);
	assert_fence_order(&p);
	char lines[64][128];
	int n = obs_lines(&p, lines, 64);
	ck_assert_str_eq(lines[0], "NOLEADER");

	/* observe's lockd restarts: the session is resumed, OBSERVE sent again,
	   and a change made meanwhile is its last line */
	h_lockd_signal(b, SIGTERM);
	ck_assert_int_ne(h_lockd_wait(b, 5000), -1);
	cl_expect(c2, "RESIGN ob", "OK");
	h_lockd_restart(b);
	wait_last(&p, "NOLEADER", LEASE + H_SLOW_LIMIT);
	unsigned long long f3 = cl_lock(c1, "CAMPAIGN ob v3");
	snprintf(want, sizeof(want), "ELECTED %llu v3", f3);
	wait_last(&p, want, 500 + H_LOADED);
	assert_fence_order(&p);
	n = obs_lines(&p, lines, 64);
	ck_assert_msg(n >= 4, "%d lines", n);
	fprintf(stderr, "lockctl_observe_changes: observe printed");
	for (int i = 0; i < n; i++)
		fprintf(stderr, "%s'%s'", i ? ", " : " ", lines[i]);
	fprintf(stderr, "\n");

	/* SIGTERM: exit 0, promptly */
	kill(p.pid, SIGTERM);
	ck_assert_int_eq(h_lockctl_wait(&p, 2000), 0);
	char *err = h_slurp(p.err);
	ck_assert_msg(err && strstr(err, "resumed"), "stderr '%s'", err ? err : "");
	free(err);
	cl_close(c1);
	cl_close(c2);
}
END_TEST

TCase *tc_lockctl_elect(void)
{
	TCase *tc = tcase_create("lockctl_elect");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, lockctl_elect_failover);
	H_ADD(tc, lockctl_elect_one_at_a_time);
	H_ADD(tc, lockctl_observe_changes);
	return tc;
}
