/* sessions: sessions that outlive a connection (protocol 1.2, issue 21),
 * the daemon side, against real masters and two real lockd on them.
 *
 * PROTOCOL.md, "Extensions in version 1.2": SESSION makes a session
 * resumable; when its connection ends without QUIT it is detached and its
 * holds stay held and renewed for its grace; RESUME, on the same lockd or
 * on any other one on the same masters, attaches it to a new connection
 * with its holds, fences, hold counts, kinds and permits unchanged, and
 * reports what it lost while detached (LOST after the OK). The tests here
 * assert exact reply lines; "held throughout" is checked by a poller, a
 * process of its own with its own connection, that sends TRYLOCKs over and
 * over while the test blips, kills, stops and resumes, and fails on any
 * reply that would grant the key. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "sess_util.h"

#define LEASE     3000
#define MAX_GRACE 20000
/* the configuration of every lockd here: default grace 10000 (as shipped),
 * at most MAX_GRACE */
/* the same with log_level debug: the per-session lines (a detach, a
 * grace's end, a drop) are logged at debug only */
static const struct h_opts sess_debug_opts = {
    .lease_ms = LEASE,
    .log_debug = 1,
    .top_extra = "sessions:\n  grace_ms: 10000\n  max_grace_ms: 20000\n"};
static const struct h_opts sess_opts = {
    .lease_ms = LEASE, .top_extra = "sessions:\n  grace_ms: 10000\n  max_grace_ms: 20000\n"};

/* PROTOCOL.md "Service levels": a session's locks are released within 1 s
 * of its end; plus the headroom of a loaded machine */
#define RELEASE_LIMIT (1000 + H_LOADED)

/* ------------------------------------------------------------------ helpers */

/* The five session counters at once, "resumable detached resumes adoptions expired". */
static void sess_stats_at(const char *file, int line, struct cl *c, const char *want)
{
	static const char *names[] = {"sessions_resumable", "sessions_detached", "resumes",
	                              "adoptions", "sessions_expired"};
	char got[200] = "";
	for (int i = 0; i < 5; i++) {
		char *v = cl_stat_at(file, line, c, names[i]);
		if (!v)
			h_fail_at(file, line, "STATS has no %s", names[i]);
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? " " : "", v);
		free(v);
	}
	if (strcmp(got, want) != 0)
		h_fail_at(file, line,
		          "STATS sessions_resumable sessions_detached resumes adoptions "
		          "sessions_expired: got '%s', expected '%s'",
		          got, want);
}
#define sess_stats(c, w) sess_stats_at(__FILE__, __LINE__, (c), (w))

/* Poll STATS until the five session counters read want (bounded). */
static void wait_sess_stats_at(const char *file, int line, struct cl *c, const char *want,
                               int timeout_ms)
{
	static const char *names[] = {"sessions_resumable", "sessions_detached", "resumes",
	                              "adoptions", "sessions_expired"};
	double end = h_now_ms() + timeout_ms;
	char got[200] = "";
	for (int t = 0; t < 10000; t++) {
		got[0] = '\0';
		for (int i = 0; i < 5; i++) {
			char *v = cl_stat_at(file, line, c, names[i]);
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? " " : "",
			         v ? v : "?");
			free(v);
		}
		if (strcmp(got, want) == 0 || h_now_ms() > end)
			break;
		h_sleep_ms(20);
	}
	if (strcmp(got, want) != 0)
		h_fail_at(file, line,
		          "STATS sessions_resumable sessions_detached resumes adoptions "
		          "sessions_expired: '%s' after %d ms, expected '%s'",
		          got, timeout_ms, want);
}
#define wait_sess_stats(c, w, t) wait_sess_stats_at(__FILE__, __LINE__, (c), (w), (t))

/* ---- the poller: a process of its own, with its own connection to a
 * lockd, that sends each of its requests in turn, over and over, until it
 * is stopped. Every reply must be BUSY; ERR QUORUM (a master that missed
 * redis.timeout_ms on a loaded machine) costs liveness, not safety, and is
 * counted; anything else (OK: the key granted to a third session) is a
 * failure, reported with the time it came. */
struct poller {
	pid_t pid;
	int stop;   /* write end: closed to stop it */
	int report; /* read end: its one line of report */
	double t0;
};

static int read_line_fd(int fd, char *buf, size_t cap, int timeout_ms)
{
	size_t n = 0;
	double end = h_now_ms() + timeout_ms;
	while (n + 1 < cap) {
		int rem = (int)(end - h_now_ms());
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (rem <= 0 || poll(&p, 1, rem) <= 0)
			return -1;
		ssize_t k = read(fd, buf + n, 1);
		if (k <= 0)
			return -1;
		if (buf[n] == '\n') {
			buf[n] = '\0';
			if (n && buf[n - 1] == '\r')
				buf[n - 1] = '\0';
			return 0;
		}
		n++;
	}
	return -1;
}

static void poller_main(int port, const char *const *reqs, int stopfd, int out)
{
	char rep[400];
	int fd = h_connect_tcp(port), busy = 0, quorum = 0;
	double t0 = h_now_ms();
	if (fd < 0) {
		snprintf(rep, sizeof(rep), "FAIL connect: %s\n", strerror(errno));
		goto done;
	}
	for (int i = 0;; i++) {
		struct pollfd p = {.fd = stopfd, .events = POLLIN};
		if (poll(&p, 1, 10) != 0) {
			snprintf(rep, sizeof(rep), "DONE %d %d\n", busy, quorum);
			goto done;
		}
		const char *req = reqs[i % 8] ? reqs[i % 8] : reqs[0];
		if (!reqs[i % 8])
			i = 0;
		char line[300];
		snprintf(line, sizeof(line), "%s\n", req);
		if (h_send_all(fd, line, strlen(line), 2000) != 0) {
			snprintf(rep, sizeof(rep), "FAIL %.0f ms: '%s': send: %s\n",
			         h_now_ms() - t0, req, strerror(errno));
			goto done;
		}
		if (read_line_fd(fd, line, sizeof(line), 2000 + H_SLOW_LIMIT) != 0) {
			snprintf(rep, sizeof(rep), "FAIL %.0f ms: '%s': no reply\n",
			         h_now_ms() - t0, req);
			goto done;
		}
		if (strcmp(line, "BUSY") == 0)
			busy++;
		else if (strncmp(line, "ERR QUORUM", 10) == 0)
			quorum++;
		else {
			snprintf(rep, sizeof(rep), "FAIL %.0f ms: '%s' -> '%.200s'\n",
			         h_now_ms() - t0, req, line);
			goto done;
		}
	}
done:
	/* a pipe: write(), not send() */
	if (write(out, rep, strlen(rep)) != (ssize_t)strlen(rep))
		_exit(2);
	_exit(0);
}

/* Start polling lockd at port with reqs (NULL-terminated, at most 8). */
static struct poller poller_start(int port, const char *const *reqs)
{
	int sp[2], rp[2];
	ck_assert(pipe(sp) == 0 && pipe(rp) == 0);
	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* none of the test's sockets: a blip must close them */
		for (int fd = 3; fd < 1024; fd++)
			if (fd != sp[0] && fd != rp[1])
				close(fd);
		const char *r8[9] = {0};
		for (int i = 0; i < 8 && reqs[i]; i++)
			r8[i] = reqs[i];
		poller_main(port, r8, sp[0], rp[1]);
	}
	close(sp[0]);
	close(rp[1]);
	return (struct poller){.pid = pid, .stop = sp[1], .report = rp[0], .t0 = h_now_ms()};
}

/* Fail the test if the poller has failed already (it reports and exits then). */
static void poller_check_at(const char *file, int line, struct poller *p)
{
	struct pollfd pf = {.fd = p->report, .events = POLLIN};
	if (poll(&pf, 1, 0) > 0) {
		char rep[400] = "";
		read_line_fd(p->report, rep, sizeof(rep), 1000);
		h_fail_at(file, line, "poller: %s", rep);
	}
}
#define poller_check(p) poller_check_at(__FILE__, __LINE__, (p))

/* Stop it; every reply it got must have been BUSY (or ERR QUORUM), and at
 * least min_busy of them BUSY. */
static void poller_stop_at(const char *file, int line, struct poller *p, int min_busy)
{
	close(p->stop);
	char rep[400] = "";
	int rc = read_line_fd(p->report, rep, sizeof(rep), 5000 + H_SLOW_LIMIT);
	close(p->report);
	int st = h_reap(p->pid, 3000);
	if (rc != 0)
		h_fail_at(file, line, "poller: no report (%s)", h_status_str(st));
	int busy = 0, quorum = 0;
	if (sscanf(rep, "DONE %d %d", &busy, &quorum) != 2)
		h_fail_at(file, line, "poller: %s", rep);
	fprintf(stderr, "%s: poller: %d BUSY, %d ERR QUORUM over %.0f ms\n", tcase_name(), busy,
	        quorum, h_now_ms() - p->t0);
	if (busy < min_busy)
		h_fail_at(file, line,
		          "poller: only %d BUSY replies (%d ERR QUORUM), expected at least %d",
		          busy, quorum, min_busy);
}
#define poller_stop(p, m) poller_stop_at(__FILE__, __LINE__, (p), (m))

/* Wait ms, checking on the poller. */
static void poll_for(struct poller *p, int ms)
{
	double end = h_now_ms() + ms;
	while (h_now_ms() < end) {
		poller_check(p);
		h_sleep_ms(20);
	}
	poller_check(p);
}

/* TRYLOCK req on c every 10 ms until OK; returns the fence and in *ms the
 * time from t0 to the OK. Fails after limit_ms or on any reply but BUSY. */
static unsigned long long wait_grant(struct cl *c, const char *req, double t0, int limit_ms,
                                     double *ms)
{
	for (int t = 0; t < 100000; t++) {
		const char *r = cl_cmd(c, req, H_SLOW_LIMIT);
		double now = h_now_ms();
		ck_assert_msg(r != NULL, "'%s': no reply", req);
		if (strncmp(r, "OK ", 3) == 0) {
			*ms = now - t0;
			return h_fence(r);
		}
		ck_assert_msg(strcmp(r, "BUSY") == 0, "'%s': got '%s', expected BUSY or OK", req,
		              r);
		ck_assert_msg(now - t0 <= limit_ms, "'%s': still BUSY %.0f ms after (limit %d ms)",
		              req, now - t0, limit_ms);
		h_sleep_ms(10);
	}
	ck_abort_msg("'%s': no grant", req);
}

/* ------------------------------------------------------------------ tests */

/* SESSION's reply, GRACE bounds, SESSION again, and the STATS counters
 * through a detach, a resume, a QUIT and a grace that runs out. */
START_TEST(session_replies)
{
	h_std(&sess_debug_opts);
	struct cl *c = cl_open(), *o = cl_open();
	struct sess s, s2;
	sess_stats(o, "0 0 0 0 0");
	cl_expect(c, "SESSION GRACE 20001",
	          "ERR ARG GRACE must be at most sessions.max_grace_ms (20000)");
	cl_expect(c, "SESSION GRACE 0", "ERR ARG GRACE must be 1 to 2147483647 ms");
	cl_expect(c, "SESSION GRACE", "ERR PROTOCOL missing option value");
	cl_expect(c, "SESSION GRACE 10 GRACE 10", "ERR PROTOCOL option given twice");
	cl_expect(c, "SESSION k", "ERR PROTOCOL unknown option");
	sess_stats(o, "0 0 0 0 0"); /* refused: still a version-1 session */
	session(c, "SESSION", 10000, &s);
	sess_stats(o, "1 0 0 0 0");
	/* again: the same id and secret, the new grace */
	session(c, "session grace 20000", 20000, &s2);
	ck_assert_str_eq(s2.id, s.id);
	ck_assert_str_eq(s2.secret, s.secret);
	cl_expect(c, "SESSION GRACE 20001",
	          "ERR ARG GRACE must be at most sessions.max_grace_ms (20000)");
	session(c, "SESSION GRACE 1500", 1500, &s2);
	ck_assert_str_eq(s2.id, s.id);
	ck_assert_str_eq(s2.secret, s.secret);
	sess_stats(o, "1 0 0 0 0");
	/* the secret is never shown by STATS or HELD */
	unsigned long long f = cl_lock(c, "LOCK k");
	char *h = held_at(__FILE__, __LINE__, c);
	ck_assert_msg(!strstr(h, s.secret), "HELD shows the secret: %s", h);
	free(h);
	/* another session gets its own id and secret */
	struct cl *d = cl_open();
	struct sess t;
	session(d, "SESSION GRACE 1", 1, &t);
	ck_assert_str_ne(t.id, s.id);
	ck_assert_str_ne(t.secret, s.secret);
	sess_stats(o, "2 0 0 0 0");
	cl_expect(d, "QUIT", "OK"); /* QUIT ends it: no detach, no expiry */
	cl_want_eof(d, H_TMO);
	cl_close(d);
	wait_sess_stats(o, "1 0 0 0 0", RELEASE_LIMIT);

	/* detached, then resumed */
	blip(c);
	wait_sess_stats(o, "1 1 0 0 0", RELEASE_LIMIT);
	struct cl *c2 = cl_open();
	resume(c2, &s, "OK 1");
	sess_stats(o, "1 0 1 0 0");
	expect_held(c2, "KEY k %llu 1 *", f);
	/* SESSION on the resumed connection: the same id and secret */
	session(c2, "SESSION GRACE 300", 300, &s2);
	ck_assert_str_eq(s2.id, s.id);
	ck_assert_str_eq(s2.secret, s.secret);

	/* detached, and its grace of 300 ms runs out */
	double t0 = h_now_ms();
	blip(c2);
	wait_sess_stats(o, "0 0 1 0 1", 300 + RELEASE_LIMIT);
	fprintf(stderr, "session_replies: expired %.0f ms after the blip (grace 300)\n",
	        h_now_ms() - t0);
	char *gl = h_log_find(h_lockd(0)->log, 0, "its grace of 300 ms ran out", NULL);
	ck_assert_msg(gl && strstr(gl, s.id), "lockd logged no end of grace for %s", s.id);
	free(gl);
	char *log = h_slurp(h_lockd(0)->log);
	ck_assert(log != NULL);
	ck_assert_msg(!strstr(log, s.secret), "the log shows the secret");
	free(log);
	double ms;
	ck_assert_msg(wait_grant(o, "TRYLOCK k", h_now_ms(), RELEASE_LIMIT, &ms) > f,
	              "fence not above %llu", f);
	cl_close(o);
}
END_TEST

/* A blip (the connection reset) and RESUME on the same lockd: while a
 * session on the other lockd polls the three keys, none is ever granted;
 * after the resume HELD shows every hold as it was: fence, hold count
 * (two LOCKs of k), kind (s shared) and permit (p's permit 1, permit 0
 * being held elsewhere). */
START_TEST(blip_resume_same_lockd)
{
	h_std(&sess_opts);
	int b = h_lockd_start(&sess_opts);
	struct cl *c = cl_open(), *other = cl_tcp(h_lockd(b)->port);
	struct sess s;
	session(c, "SESSION", 10000, &s);
	unsigned long long p0 = cl_lock(other, "LOCK p PERMITS 3");
	unsigned long long fk = cl_lock(c, "LOCK k");
	cl_expect_prefix(c, "LOCK k", "OK ");
	unsigned long long fs = cl_lock(c, "TRYLOCK s SHARED");
	unsigned long long fp = cl_lock(c, "LOCK p PERMITS 3");
	ck_assert(fp > p0);
	expect_held(c, "KEY k %llu 2 * | KEY p %llu 1 * PERMIT 1 | KEY s %llu 1 * SHARED", fk, fp,
	            fs);
	const char *reqs[] = {"TRYLOCK k", "TRYLOCK s", "TRYLOCK p PERMITS 2", NULL};
	struct poller pl = poller_start(h_lockd(b)->port, reqs);
	poll_for(&pl, 200);
	blip(c);
	poll_for(&pl, 300); /* the blip */
	struct cl *o = cl_open();
	wait_sess_stats(o, "1 1 0 0 0", RELEASE_LIMIT); /* lockd saw it: detached */
	poller_check(&pl);
	struct cl *c2 = cl_open();
	resume(c2, &s, "OK 3");
	expect_held(c2, "KEY k %llu 2 * | KEY p %llu 1 * PERMIT 1 | KEY s %llu 1 * SHARED", fk, fp,
	            fs);
	poll_for(&pl, 300);
	poller_stop(&pl, 10);
	ck_assert_int_eq(c2->nlost, 0);
	sess_stats(o, "1 0 1 0 0");
	/* the counts hold: k needs two UNLOCKs */
	cl_expect(c2, "UNLOCK k", "OK 1");
	cl_expect(other, "TRYLOCK k", "BUSY");
	cl_expect(c2, "UNLOCK k", "OK 0");
	cl_expect(c2, "UNLOCK s", "OK 0");
	cl_expect(c2, "UNLOCK p", "OK 0");
	cl_expect(c2, "UNLOCK p", "ERR NOTHELD this session does not hold the key");
	expect_held(c2, "%s", "");
	double ms;
	ck_assert(wait_grant(other, "TRYLOCK k", h_now_ms(), 500 + H_LOADED, &ms) > fk);
	ck_assert(wait_grant(other, "TRYLOCK s", h_now_ms(), 500 + H_LOADED, &ms) > fs);
	cl_close(c2);
	cl_close(o);
	cl_close(other);
}
END_TEST

/* RESUME's refusals: an unknown id and a wrong secret get the same line,
 * on this lockd and another; malformed ids and secrets too; RESUME on a
 * connection that holds, waits, or is resumable itself is ERR ARG. None of
 * them disturbs the session. */
START_TEST(resume_refusals)
{
	/* more refusals a connection than limits.max_auth_failures allows
	 * (test_hostile_sessions.c tests that limit) */
	struct h_opts lax = sess_opts;
	lax.limits = "  max_auth_failures: 0\n";
	h_std(&lax);
	int b = h_lockd_start(&lax);
	struct cl *c = cl_open(), *x = cl_open(), *y = cl_tcp(h_lockd(b)->port);
	struct sess s;
	session(c, "SESSION", 10000, &s);
	unsigned long long f = cl_lock(c, "LOCK k");
	struct sess bad = s;
	bad.secret[0] = bad.secret[0] == '0' ? '1' : '0';
	struct sess unknown = s;
	unknown.id[0] = unknown.id[0] == '0' ? '1' : '0';
	for (int i = 0; i < 2; i++) {
		struct cl *z = i ? y : x;
		resume(z, &bad, NOSESSION);
		resume(z, &unknown, NOSESSION);
		cl_expect(z, "RESUME 0123456789abcdef 0123456789abcdef0123456789abcdef", NOSESSION);
		char req[200];
		/* malformed: short, long, upper case, not hex */
		snprintf(req, sizeof(req), "RESUME %.15s %s", s.id, s.secret);
		cl_expect(z, req, NOSESSION);
		snprintf(req, sizeof(req), "RESUME %s0 %s", s.id, s.secret);
		cl_expect(z, req, NOSESSION);
		snprintf(req, sizeof(req), "RESUME %s %.31s", s.id, s.secret);
		cl_expect(z, req, NOSESSION);
		snprintf(req, sizeof(req), "RESUME %s %sf", s.id, s.secret);
		cl_expect(z, req, NOSESSION);
		snprintf(req, sizeof(req), "RESUME %s %.31sG", s.id, s.secret);
		cl_expect(z, req, NOSESSION);
		snprintf(req, sizeof(req), "RESUME %.15sX %s", s.id, s.secret);
		cl_expect(z, req, NOSESSION);
		cl_expect(z, "RESUME x y", NOSESSION);
		cl_expect(z, "RESUME", "ERR PROTOCOL missing argument");
		cl_expect(z, "RESUME a", "ERR PROTOCOL missing argument");
		cl_expect(z, "RESUME a b c", "ERR PROTOCOL extra argument");
	}
	/* a connection that holds a lock, or waits for one */
	cl_lock(x, "LOCK held");
	resume(x, &s, "ERR ARG this session holds or waits for locks: RESUME on a new connection");
	cl_expect(x, "UNLOCK held", "OK 0");
	struct cl *hb = cl_open();
	cl_lock(hb, "LOCK busy");
	cl_send(x, "LOCK busy\n");
	cl_wait_waiters(hb, "busy", 1, H_SLOW_LIMIT);
	cl_send(x, "RESUME 0123456789abcdef 0123456789abcdef0123456789abcdef\n");
	cl_expect(hb, "UNLOCK busy", "OK 0");
	cl_close(hb);
	unsigned long long fb = cl_want_ok(x, 500 + H_LOADED);
	cl_want(x, "ERR ARG this session holds or waits for locks: RESUME on a new connection",
	        H_TMO);
	(void)fb;
	cl_expect(x, "UNLOCK busy", "OK 0");
	/* a resumable connection: RESUME on a new one */
	struct cl *w = cl_open();
	struct sess t;
	session(w, "SESSION", 10000, &t);
	resume(w, &s, "ERR ARG this session is resumable itself: RESUME on a new connection");
	/* none of it touched s: still attached to c, holding k */
	expect_held(c, "KEY k %llu 1 *", f);
	cl_expect(y, "TRYLOCK k", "BUSY");
	struct cl *o = cl_open();
	sess_stats(o, "2 0 0 0 0");
	cl_close(w);
	cl_close(o);
	cl_close(c);
	cl_close(x);
	cl_close(y);
}
END_TEST

/* The grace runs out: GRACE 500, the connection ends (FIN: a plain
 * close), and the key is granted to another session (on the other lockd)
 * no earlier than the grace and no later than grace + the release service
 * level; then RESUME finds no session, on either lockd. */
START_TEST(grace_expiry_releases)
{
	h_std(&sess_debug_opts);
	int b = h_lockd_start(&sess_opts);
	struct cl *c = cl_open(), *o = cl_tcp(h_lockd(b)->port);
	struct sess s;
	session(c, "SESSION GRACE 500", 500, &s);
	unsigned long long f = cl_lock(c, "LOCK k");
	double t0 = h_now_ms();
	cl_close(c);
	double ms;
	unsigned long long g = wait_grant(o, "TRYLOCK k", t0, 500 + RELEASE_LIMIT, &ms);
	fprintf(stderr,
	        "grace_expiry_releases: granted elsewhere %.0f ms after the close (grace 500)\n",
	        ms);
	ck_assert_msg(ms >= 500, "granted %.0f ms after the close, before the grace of 500 ms", ms);
	ck_assert(g > f);
	struct cl *a = cl_open();
	wait_sess_stats(a, "0 0 0 0 1", H_SLOW_LIMIT);
	resume(a, &s, NOSESSION);
	struct cl *d = cl_tcp(h_lockd(b)->port);
	resume(d, &s, NOSESSION);
	sess_stats(a, "0 0 0 0 1");
	char *gl = h_log_find(h_lockd(0)->log, 0, "its grace of 500 ms ran out", NULL);
	ck_assert_msg(gl && strstr(gl, s.id), "lockd logged no end of grace for %s", s.id);
	free(gl);
	cl_close(a);
	cl_close(d);
	cl_close(o);
}
END_TEST

/* SIGKILL of lockd A: the session resumes on B (same masters) with its
 * fence and hold count, and stays held there past two leases without LOST
 * while a third session polls BUSY; UNLOCK on B frees it. */
START_TEST(sigkill_resume_other)
{
	h_std(&sess_opts);
	int b = h_lockd_start(&sess_opts);
	struct cl *c = cl_open();
	struct sess s;
	session(c, "SESSION", 10000, &s);
	unsigned long long f = cl_lock(c, "LOCK k");
	cl_expect_prefix(c, "LOCK k", "OK ");
	const char *reqs[] = {"TRYLOCK k", NULL};
	struct poller pl = poller_start(h_lockd(b)->port, reqs);
	poll_for(&pl, 100);
	h_lockd_signal(0, SIGKILL);
	ck_assert_int_ne(h_lockd_wait(0, 3000), -1);
	cl_want_eof(c, H_TMO);
	cl_close(c);
	struct cl *c2 = cl_tcp(h_lockd(b)->port);
	resume(c2, &s, "OK 1");
	expect_held(c2, "KEY k %llu 2 *", f);
	struct cl *o = cl_tcp(h_lockd(b)->port);
	sess_stats(o, "1 0 1 1 0");
	/* past two leases of A's and B's: B renews it, nobody else gets it */
	double t0 = h_now_ms();
	while (h_now_ms() - t0 < 2 * LEASE + 1000) {
		cl_silence(c2, 250);
		poller_check(&pl);
	}
	ck_assert_int_eq(c2->nlost, 0);
	expect_held(c2, "KEY k %llu 2 *", f);
	poller_stop(&pl, 20);
	cl_expect(c2, "UNLOCK k", "OK 1");
	cl_expect(o, "TRYLOCK k", "BUSY");
	cl_expect(c2, "UNLOCK k", "OK 0");
	double ms;
	ck_assert(wait_grant(o, "TRYLOCK k", h_now_ms(), 500 + H_LOADED, &ms) > f);
	cl_close(c2);
	cl_close(o);
}
END_TEST

/* Adoption keeps every fence as the grant gave it: single grants (no
 * reentry, which writes the record again) of fresh keys, whose fence
 * counters start from each master's clock and disagree, so the grant's
 * fence is the largest of the granting majority's and the other masters'
 * record fields may hold other values. */
START_TEST(adopt_keeps_fences)
{
	h_std(&sess_opts);
	int b = h_lockd_start(&sess_opts);
	struct cl *c = cl_open();
	struct sess s;
	session(c, "SESSION", 10000, &s);
	unsigned long long fa = cl_lock(c, "LOCK a");
	unsigned long long fs = cl_lock(c, "LOCK s SHARED");
	unsigned long long fp = cl_lock(c, "LOCK p PERMITS 2");
	unsigned long long ft = cl_lock(c, "LOCK t TTL 20000");
	h_lockd_signal(0, SIGKILL);
	ck_assert_int_ne(h_lockd_wait(0, 3000), -1);
	cl_want_eof(c, H_TMO);
	cl_close(c);
	struct cl *c2 = cl_tcp(h_lockd(b)->port);
	resume(c2, &s, "OK 4");
	expect_held(
	    c2, "KEY a %llu 1 * | KEY p %llu 1 * PERMIT 0 | KEY s %llu 1 * SHARED | KEY t %llu 1 *",
	    fa, fp, fs, ft);
	cl_close(c2);
}
END_TEST

/* SIGSTOP of lockd A (cut off from its client, not from the masters): the
 * session resumes on B; A comes back (SIGCONT) after the grace it would
 * have given the session ran out, sees the connection reset and renews,
 * releases and expires what it can; the lock stays with the session on B,
 * no third session (on A or B) gets it, and A logs that it drops the
 * session. */
START_TEST(sigstop_resume_other)
{
	struct h_opts ao = sess_opts;
	ao.log_debug = 1; /* A's log line of the drop (info has none per session) */
	h_std(&ao);
	int b = h_lockd_start(&sess_opts);
	struct cl *c = cl_open();
	struct sess s;
	session(c, "SESSION GRACE 1000", 1000, &s);
	unsigned long long f = cl_lock(c, "LOCK k");
	const char *reqs[] = {"TRYLOCK k", NULL};
	struct poller pl = poller_start(h_lockd(b)->port, reqs);
	long off = h_file_size(h_lockd(0)->log);
	h_lockd_signal(0, SIGSTOP);
	blip(c); /* A sees the reset when it runs again */
	struct cl *c2 = cl_tcp(h_lockd(b)->port);
	resume(c2, &s, "OK 1");
	cl_expect_held(c2, "k"); /* its fence: at the end */
	/* past A's grace (1000 ms) and its lease (the record's expiry) */
	double t0 = h_now_ms();
	while (h_now_ms() - t0 < LEASE + 1000 + 500) {
		cl_silence(c2, 250);
		poller_check(&pl);
	}
	h_lockd_signal(0, SIGCONT);
	struct cl *a = cl_open(); /* a third session on A */
	char *l = h_log_wait(h_lockd(0)->log, off, "session ", "dropping it here",
	                     LEASE / 3 + H_SLOW_LIMIT);
	ck_assert_msg(l != NULL, "lockd A logged no dropping of the session");
	ck_assert_msg(strstr(l, s.id) != NULL, "A's log: '%s'", l);
	free(l);
	/* A's grace would run out by now, and its renewals were refused */
	t0 = h_now_ms();
	while (h_now_ms() - t0 < 1000 + 500 + H_LOADED) {
		cl_expect(a, "TRYLOCK k", "BUSY");
		cl_silence(c2, 50);
		poller_check(&pl);
	}
	poller_stop(&pl, 20);
	ck_assert_int_eq(c2->nlost, 0);
	expect_held(c2, "KEY k %llu 1 *", f);
	long long ttl, w;
	ck_assert_int_eq(cl_status(a, "k", &ttl, &w), 1);
	ck_assert_msg(ttl > LEASE / 3, "k's lease on the masters: %lld ms left", ttl);
	sess_stats(a, "0 0 0 0 0");
	expect_held(c2, "KEY k %llu 1 *", f); /* the fence unchanged */
	cl_expect(c2, "UNLOCK k", "OK 0");
	double ms;
	ck_assert(wait_grant(a, "TRYLOCK k", h_now_ms(), 500 + H_LOADED, &ms) > f);
	cl_close(a);
	cl_close(c2);
}
END_TEST

/* The same with the client's first connection still open (the client lost
 * its way to A, A is stopped): when A runs again it closes that connection
 * without a LOST ("drops the session without LOST and closes any
 * connection still attached"), although its renewals were refused. */
START_TEST(sigstop_attached_no_lost)
{
	h_std(&sess_opts);
	int b = h_lockd_start(&sess_opts);
	struct cl *c = cl_open();
	struct sess s;
	session(c, "SESSION GRACE 1000", 1000, &s);
	unsigned long long f = cl_lock(c, "LOCK k");
	h_lockd_signal(0, SIGSTOP);
	struct cl *c2 = cl_tcp(h_lockd(b)->port);
	resume(c2, &s, "OK 1");
	h_sleep_ms(LEASE + 500); /* A's lease on k ran out while it was stopped */
	h_lockd_signal(0, SIGCONT);
	cl_want_eof(c, LEASE / 3 + H_SLOW_LIMIT);
	cl_close(c);
	cl_silence(c2, 300);
	ck_assert_int_eq(c2->nlost, 0);
	cl_expect_held(c2, "k");
	(void)f;
	cl_close(c2);
}
END_TEST

/* SIGTERM of lockd A with a resumable and a plain session: the plain lock
 * is released at once (granted on B within the release service level),
 * the resumable one stays held and resumes on B with its fence. */
START_TEST(sigterm_resumable_and_plain)
{
	h_std(&sess_opts);
	int b = h_lockd_start(&sess_opts);
	struct cl *r = cl_open(), *p = cl_open(), *o = cl_tcp(h_lockd(b)->port);
	struct sess s;
	session(r, "SESSION", 10000, &s);
	unsigned long long fr = cl_lock(r, "LOCK kr");
	unsigned long long fp = cl_lock(p, "LOCK kp");
	const char *reqs[] = {"TRYLOCK kr", NULL};
	struct poller pl = poller_start(h_lockd(b)->port, reqs);
	double t0 = h_now_ms();
	h_lockd_signal(0, SIGTERM);
	double ms;
	unsigned long long g = wait_grant(o, "TRYLOCK kp", t0, RELEASE_LIMIT, &ms);
	fprintf(stderr,
	        "sigterm_resumable_and_plain: the plain lock granted on B %.0f ms after "
	        "SIGTERM\n",
	        ms);
	ck_assert(g > fp);
	int st = h_lockd_wait(0, 3000);
	ck_assert_msg(st == 0, "lockd A: %s after SIGTERM", h_status_str(st));
	/* the plain session is told (version 1), the resumable one is not */
	char lost[64];
	snprintf(lost, sizeof(lost), "LOST kp %llu", fp);
	const char *l = cl_line(p, H_TMO);
	ck_assert_msg(l && strcmp(l, lost) == 0, "plain session: got '%s', expected '%s'",
	              l ? l : "nothing", lost);
	cl_want_eof(p, H_TMO);
	cl_want_eof(r, H_TMO);
	cl_close(r);
	cl_close(p);
	poll_for(&pl, 200);
	struct cl *r2 = cl_tcp(h_lockd(b)->port);
	resume(r2, &s, "OK 1");
	cl_expect_held(r2, "kr"); /* its fence: at the end */
	poll_for(&pl, 200);
	poller_stop(&pl, 5);
	sess_stats(o, "1 0 1 1 0");
	expect_held(r2, "KEY kr %llu 1 *", fr); /* the fence unchanged */
	cl_expect(r2, "UNLOCK kr", "OK 0");
	ck_assert(wait_grant(o, "TRYLOCK kr", h_now_ms(), 500 + H_LOADED, &ms) > fr);
	ck_assert_int_eq(r2->nlost, 0);
	cl_close(r2);
	cl_close(o);
}
END_TEST

/* One connection per session: RESUME of a session still attached to
 * another connection moves it, and lockd closes the old connection without
 * answering anything more there (its waiting LOCK is cancelled). */
START_TEST(resume_takes_over_attached)
{
	h_std(&sess_opts);
	struct cl *c1 = cl_open(), *o = cl_open();
	struct sess s;
	session(c1, "SESSION", 10000, &s);
	unsigned long long f = cl_lock(c1, "LOCK k");
	cl_lock(o, "LOCK w");
	cl_send(c1, "LOCK w\n");
	cl_wait_waiters(o, "w", 1, H_SLOW_LIMIT);
	struct cl *c2 = cl_open();
	resume(c2, &s, "OK 1");
	cl_want_eof(c1, RELEASE_LIMIT);
	cl_close(c1);
	expect_held(c2, "KEY k %llu 1 *", f);
	cl_wait_waiters(o, "w", 0, H_SLOW_LIMIT);
	sess_stats(o, "1 0 1 0 0");
	cl_expect(o, "UNLOCK w", "OK 0");
	/* the cancelled LOCK w was not granted to anyone */
	long long ttl, wt;
	double t0 = h_now_ms();
	while (h_now_ms() - t0 < 300) {
		ck_assert_int_eq(cl_status(o, "w", &ttl, &wt), 0);
		h_sleep_ms(20);
	}
	cl_silence(c2, 100);
	expect_held(c2, "KEY k %llu 1 *", f);
	cl_expect(c2, "UNLOCK k", "OK 0");
	cl_close(c2);
	cl_close(o);
}
END_TEST

/* LOST while detached: a TTL hold whose lease lapses while the session is
 * detached is reported as "LOST key fence" right after RESUME's "OK n",
 * which does not count it. */
START_TEST(lost_while_detached)
{
	h_std(&sess_opts);
	struct cl *c = cl_open();
	struct sess s;
	session(c, "SESSION", 10000, &s);
	unsigned long long ft = cl_lock(c, "LOCK t TTL 800");
	unsigned long long fk = cl_lock(c, "LOCK k");
	double t0 = h_now_ms();
	blip(c);
	h_sleep_ms(800 + 400 - (int)(h_now_ms() - t0));
	struct cl *c2 = cl_open();
	char req[128];
	snprintf(req, sizeof(req), "RESUME %s %s\n", s.id, s.secret);
	cl_send(c2, req);
	const char *l = cl_line(c2, H_SLOW_LIMIT);
	ck_assert_msg(l && strcmp(l, "OK 1") == 0, "RESUME: got '%s', expected 'OK 1'",
	              l ? l : "nothing");
	char lost[64];
	snprintf(lost, sizeof(lost), "LOST t %llu", ft);
	l = cl_line(c2, H_TMO);
	ck_assert_msg(l && strcmp(l, lost) == 0, "after OK 1: got '%s', expected '%s'",
	              l ? l : "nothing", lost);
	cl_silence(c2, 300); /* once */
	ck_assert_int_eq(c2->nlost, 0);
	expect_held(c2, "KEY k %llu 1 *", fk);
	cl_expect(c2, "UNLOCK t", "ERR NOTHELD this session does not hold the key");
	struct cl *o = cl_open();
	cl_lock(o, "TRYLOCK t");
	cl_expect(o, "TRYLOCK k", "BUSY");
	cl_close(o);
	cl_close(c2);
}
END_TEST

TCase *tc_sessions(void)
{
	TCase *tc = tcase_create("sessions");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, session_replies);
	H_ADD(tc, blip_resume_same_lockd);
	H_ADD(tc, resume_refusals);
	H_ADD(tc, grace_expiry_releases);
	H_ADD(tc, sigkill_resume_other);
	H_ADD(tc, adopt_keeps_fences);
	H_ADD(tc, sigstop_resume_other);
	H_ADD(tc, sigstop_attached_no_lost);
	H_ADD(tc, sigterm_resumable_and_plain);
	H_ADD(tc, resume_takes_over_attached);
	H_ADD(tc, lost_while_detached);
	return tc;
}
