/* lockd as a service: SIGHUP reloads, SIGTERM, the command line (-t,
 * --version), password files and a start without a majority. sd_notify
 * and the systemd unit are in test_service_systemd.c, the metrics
 * endpoint in test_service_metrics.c; all are the "service" group. */
#include "config.h"

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "test_service.h"

/* ------------------------------------------------------------------ helpers */

static char *cat2(const char *a, const char *b)
{
	char *r = malloc(strlen(a) + strlen(b) + 1);
	ck_assert(r != NULL);
	strcpy(r, a);
	strcat(r, b);
	return r;
}

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static const char *srcdir_path(const char *rel, char *out, size_t n)
{
	const char *sd = getenv("top_srcdir");
	snprintf(out, n, "%s/%s", sd && *sd ? sd : ".", rel);
	return out;
}

/* ------------------------------------------------------------------ SIGHUP */

/* Poll (bounded) on new sessions until req gets a reply that begins with
 * want (exact: that is the whole reply); an OK to a TRYLOCK on the way is
 * undone. */
static void wait_reply(int port, const char *req, const char *want, int exact, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	char last[400];
	for (;;) {
		struct cl *c = cl_tcp(port);
		const char *r = cl_cmd(c, req, H_TMO);
		ck_assert_msg(r != NULL, "'%s': no reply", req);
		snprintf(last, sizeof(last), "%s", r);
		if (strncmp(req, "TRYLOCK ", 8) == 0 && strncmp(r, "OK ", 3) == 0) {
			char un[400];
			snprintf(un, sizeof(un), "UNLOCK %s", req + 8);
			r = cl_cmd(c, un, H_TMO);
			/* a reload between the two may have made the key too long
			 * for UNLOCK (ERR KEY); closing the session releases it */
			ck_assert_msg(r &&
			                  (strcmp(r, "OK 0") == 0 || strncmp(r, "ERR KEY", 7) == 0),
			              "'%s': got '%s'", un, r ? r : "(nothing)");
		}
		cl_close(c);
		if (exact ? strcmp(last, want) == 0 : strncmp(last, want, strlen(want)) == 0)
			return;
		ck_assert_msg(h_now_ms() < end,
		              "'%s' still answers '%s' %d ms after SIGHUP, expected '%s%s'", req,
		              last, timeout_ms, want, exact ? "" : "...");
		h_sleep_ms(20);
	}
}

static void wait_trylock_reply(int port, const char *key, const char *want, int timeout_ms)
{
	char req[400];
	snprintf(req, sizeof(req), "TRYLOCK %s", key);
	wait_reply(port, req, want, 0, timeout_ms);
}

/* Reset a fresh session (RST instead of FIN): lockd sees a connection error. */
static void reset_session(int port)
{
	struct cl *c = cl_tcp(port);
	cl_expect(c, "PING", "PONG");
	struct linger lg = {1, 0};
	ck_assert(setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
	cl_close(c);
}

START_TEST(sighup_good_config)
{
	h_std(NULL);
	struct h_lockd *l = h_lockd(0);
	char *orig = h_slurp(l->conf);
	ck_assert_ptr_nonnull(orig);

	struct cl *holder = cl_open();
	unsigned long long fence = cl_lock(holder, "LOCK k1");
	/* 9 bytes is fine under the default limits */
	wait_trylock_reply(l->port, "abcdefghi", "OK ", 0);
	/* at log_level info, a connection error is not logged */
	reset_session(l->port);
	h_sleep_ms(100);
	ck_assert_msg(h_log_find(l->log, 0, "connection error", NULL) == NULL,
	              "debug line logged at log_level info");

	char *a = h_replace1(orig, "log_level: info", "log_level: debug");
	ck_assert_msg(strstr(a, "limits:") == NULL, "unexpected limits section in %s", l->conf);
	char *b = cat2(a, "limits:\n  max_key_len: 8\n");
	long off = h_lockd_reload(0, b);
	wait_trylock_reply(l->port, "abcdefghi", "ERR KEY", 3000);
	h_lockd_wait_reloaded(0, off, 1000);
	/* 8 bytes is the new limit, still fine */
	wait_trylock_reply(l->port, "abcdefgh", "OK ", 0);
	/* log_level debug is in force */
	reset_session(l->port);
	char *ln = h_log_wait(l->log, off, "debug", "connection error", 2000);
	ck_assert_msg(ln != NULL, "log_level: debug not in force after the reload");
	free(ln);

	/* the session and its lock survived, and the lock is still renewed */
	cl_expect(holder, "PING", "PONG");
	cl_expect_held(holder, "k1");
	h_sleep_ms(3000 + 500); /* longer than the lease (3000 ms) */
	ck_assert_int_eq(holder->nlost, 0);
	cl_expect_held(holder, "k1");
	ck_assert_msg(h_masters_with_pttl(3, "lockd:k1", NULL, NULL) >= 2,
	              "lock k1 no longer on a majority of the masters after the reload");
	struct cl *other = cl_open();
	cl_expect(other, "TRYLOCK k1", "BUSY");
	char exp[64];
	snprintf(exp, sizeof(exp), "OK %llu", fence);
	cl_expect(holder, "LOCK k1", exp); /* reentrant: same fence */
	cl_expect(holder, "UNLOCK k1", "OK 1");
	cl_expect(holder, "UNLOCK k1", "OK 0");
	cl_lock(other, "TRYLOCK k1");
	cl_close(other);
	free(orig);
	free(a);
	free(b);
	cl_close(holder);
}
END_TEST

START_TEST(sighup_bad_config)
{
	struct h_opts o = {0};
	o.limits = "  max_key_len: 8\n";
	h_std(&o);
	struct h_lockd *l = h_lockd(0);
	char *orig = h_slurp(l->conf);
	ck_assert_ptr_nonnull(orig);
	struct cl *holder = cl_open();
	cl_lock(holder, "LOCK k1");
	wait_trylock_reply(l->port, "abcdefghi", "ERR KEY", 0);

	/* 1. a YAML syntax error (a key indented by one space) after a new limit */
	char *a = h_replace1(orig, "max_key_len: 8", "max_key_len: 100");
	int line = count_lines(a) + 1;
	char *bad = cat2(a, " max_line: 4096\n");
	long off = h_lockd_reload(0, bad);
	char where[PATH_MAX + 64];
	snprintf(where, sizeof(where), "%s:%d:2: ", l->conf, line);
	char *ln = h_log_wait(l->log, off, "reload failed", where, 3000);
	if (!ln)
		h_lockd_log_tail(0, 10);
	ck_assert_msg(ln != NULL, "no log line with 'reload failed' and '%s' within 3 s", where);
	free(ln);
	ck_assert_msg(h_lockd_alive(0), "lockd exited after a bad reload");
	struct cl *c = cl_open();
	cl_expect(c, "PING", "PONG");
	cl_close(c);
	wait_trylock_reply(l->port, "abcdefghi", "ERR KEY", 0); /* the old limit */
	wait_trylock_reply(l->port, "abcdefgh", "OK ", 0);

	/* 2. a value out of range: the line and column of the value */
	char *r = h_replace1(orig, "max_key_len: 8", "max_key_len: 0");
	const char *p = strstr(r, "max_key_len: 0");
	int vline = 1, vcol = 1;
	for (const char *q = r; q < p; q++)
		vline += *q == '\n';
	for (const char *q = p; q > r && q[-1] != '\n'; q--)
		vcol++;
	vcol += (int)strlen("max_key_len: ");
	off = h_lockd_reload(0, r);
	snprintf(where, sizeof(where), "%s:%d:%d: ", l->conf, vline, vcol);
	ln = h_log_wait(l->log, off, "reload failed", where, 3000);
	if (!ln)
		h_lockd_log_tail(0, 10);
	ck_assert_msg(ln != NULL, "no log line with 'reload failed' and '%s' within 3 s", where);
	ck_assert_msg(strstr(ln, "limits.max_key_len") != NULL,
	              "the error does not name the key: %s", ln);
	free(ln);
	wait_trylock_reply(l->port, "abcdefghi", "ERR KEY", 0);
	wait_trylock_reply(l->port, "a", "OK ", 0);

	/* the session and its lock are untouched */
	cl_expect(holder, "PING", "PONG");
	cl_expect_held(holder, "k1");

	/* 3. a good file again: it takes effect */
	h_lockd_reload(0, a);
	wait_trylock_reply(l->port, "abcdefghi", "OK ", 3000);
	cl_expect_held(holder, "k1");
	cl_close(holder);
	free(orig);
	free(a);
	free(bad);
	free(r);
}
END_TEST

START_TEST(sighup_fixed_keys)
{
	h_std(NULL);
	struct h_lockd *l = h_lockd(0);
	char *orig = h_slurp(l->conf);
	ck_assert_ptr_nonnull(orig);
	struct cl *holder = cl_open();
	cl_lock(holder, "LOCK k1");

	/* a new TCP port, only the first two masters, a new key prefix, and
	 * a limit that may change */
	int newport = h_free_port();
	char oldl[64], newl[64], m2[64];
	snprintf(oldl, sizeof(oldl), "\"127.0.0.1:%d\"", l->port);
	snprintf(newl, sizeof(newl), "\"127.0.0.1:%d\"", newport);
	snprintf(m2, sizeof(m2), ", \"127.0.0.1:%d\"]", h_master(2)->port);
	char *a = h_replace1(orig, oldl, newl);
	char *b = h_replace1(a, m2, "]");
	char tmo[64], tmo_prefix[96];
	snprintf(tmo, sizeof(tmo), "  timeout_ms: %d\n", H_REDIS_TMO);
	snprintf(tmo_prefix, sizeof(tmo_prefix), "%s  key_prefix: \"zz:\"\n", tmo);
	char *c2 = h_replace1(b, tmo, tmo_prefix);
	ck_assert_msg(strstr(c2, "limits:") == NULL, "unexpected limits section in %s", l->conf);
	char *d = cat2(c2, "limits:\n  max_key_len: 8\n");
	long off = h_lockd_reload(0, d);

	/* the changeable part takes effect */
	wait_trylock_reply(l->port, "abcdefghi", "ERR KEY", 3000);
	/* each fixed key is refused with a log line that names it */
	const char *fixed[] = {"listen", "redis.masters", "redis.key_prefix"};
	for (int i = 0; i < 3; i++) {
		char name[64];
		snprintf(name, sizeof(name), "%s ", fixed[i]);
		char *ln = h_log_wait(l->log, off, name, "cannot change", 2000);
		if (!ln)
			h_lockd_log_tail(0, 10);
		ck_assert_msg(ln != NULL, "no log line saying that %s cannot change at runtime",
		              fixed[i]);
		free(ln);
	}
	/* the old listener still serves, the new port is not opened */
	struct cl *c = cl_open();
	cl_expect(c, "PING", "PONG");
	ck_assert_msg(h_connect_tcp(newport) < 0, "lockd listens on the new port %d after SIGHUP",
	              newport);
	struct cl *u = cl_unix(l->sock);
	cl_expect(u, "PING", "PONG");
	cl_close(u);
	/* still the three masters, still the old prefix */
	char *v = cl_stat(c, "masters");
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(v, "3");
	free(v);
	cl_lock(c, "TRYLOCK k2");
	for (int i = 0; i < 3; i++) {
		ck_assert_msg(h_redis_int(i, "EXISTS", "lockd:k2", NULL) == 1,
		              "lock k2 not at lockd:k2 on master %d after the reload", i);
		ck_assert_msg(h_redis_int(i, "EXISTS", "zz:k2", NULL) == 0,
		              "lock k2 at the new prefix zz: on master %d", i);
	}
	cl_expect(c, "UNLOCK k2", "OK 0");
	cl_expect(holder, "PING", "PONG");
	cl_expect_held(holder, "k1");
	ck_assert_int_ge(h_masters_with_pttl(3, "lockd:k1", NULL, NULL), 3);
	cl_close(c);
	cl_close(holder);
	free(orig);
	free(a);
	free(b);
	free(c2);
	free(d);
}
END_TEST

/* ------------------------------------------------------------------ SIGTERM */

START_TEST(sigterm_releases)
{
	h_std(NULL);
	struct h_lockd *l = h_lockd(0);
	struct cl *a = cl_open(), *b = cl_open(), *c = cl_open(), *s = cl_open();
	cl_lock(a, "LOCK k1");
	cl_lock(a, "LOCK k1"); /* two holds */
	cl_lock(a, "LOCK k2 TTL 60000");
	cl_lock(a, "TRYLOCK k3");
	cl_send(b, "LOCK k1\n");
	cl_send(c, "LOCK k3 WAIT 30000\n");
	cl_wait_waiters(s, "k1", 1, 2000);
	cl_wait_waiters(s, "k3", 1, 2000);
	cl_close(s);
	for (int i = 0; i < 3; i++)
		ck_assert_msg(h_redis_int(i, "EXISTS", "lockd:k1", "lockd:k2", "lockd:k3", NULL) ==
		                  3,
		              "not every lock is on master %d before SIGTERM", i);

	double t0 = h_now_ms();
	h_lockd_signal(0, SIGTERM);
	cl_want_prefix(b, "ERR SHUTDOWN", 3000);
	cl_want_prefix(c, "ERR SHUTDOWN", 3000);
	int rem = (int)(t0 + 5000 + H_LOADED - h_now_ms());
	int st = h_lockd_wait(0, rem > 0 ? rem : 0);
	double took = h_now_ms() - t0;
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		h_lockd_log_tail(0, 15);
	ck_assert_msg(st != -1, "lockd still running %.0f ms after SIGTERM", took);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lockd after SIGTERM: %s",
	              h_status_str(st));
	/* every lock is gone from every master */
	const char *keys[] = {"lockd:k1", "lockd:k2", "lockd:k3"};
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 3; k++)
			ck_assert_msg(h_redis_int(i, "EXISTS", keys[k], NULL) == 0,
			              "%s left on master %d after SIGTERM", keys[k], i);
	/* the holder is told of each lock it loses (k1 with both holds: one
	 * LOST), then its session ends */
	int lost[3] = {0, 0, 0};
	for (int i = 0; i < 3; i++) {
		const char *ln = cl_line(a, 1000);
		ck_assert_msg(ln && strncmp(ln, "LOST k", 6) == 0 && ln[6] >= '1' && ln[6] <= '3' &&
		                  ln[7] == ' ',
		              "holder got '%s', expected LOST k1/k2/k3", ln ? ln : "(nothing)");
		lost[ln[6] - '1']++;
	}
	ck_assert_msg(lost[0] == 1 && lost[1] == 1 && lost[2] == 1,
	              "LOST lines: k1 %d, k2 %d, k3 %d", lost[0], lost[1], lost[2]);
	cl_want_eof(a, 1000);
	cl_want_eof(b, 1000);
	cl_want_eof(c, 1000);
	/* nothing listens any more; the Unix socket file is removed */
	ck_assert_msg(h_connect_tcp(l->port) < 0, "something still listens on port %d", l->port);
	ck_assert_msg(access(l->sock, F_OK) != 0, "unix socket %s left behind", l->sock);
	char *ln = h_log_find(l->log, 0, "stopped", NULL);
	ck_assert_msg(ln != NULL, "no 'stopped' log line");
	free(ln);
	cl_close(a);
	cl_close(b);
	cl_close(c);
}
END_TEST

/* ------------------------------------------------------------------ command line */

/* lockd args... in the test directory; returns the exit code (fails on a
 * signal), *out and *err what it printed. */
static int lockd_run(char **out, char **err, const char *a1, const char *a2, const char *a3)
{
	char *argv[] = {(char *)h_built("lockd"), (char *)a1, (char *)a2, (char *)a3, NULL};
	int st = h_run(argv, &(struct h_spawn){.dir = h_dir()}, 10000, out, err);
	ck_assert_msg(WIFEXITED(st), "lockd %s %s %s: %s", a1 ? a1 : "", a2 ? a2 : "", a3 ? a3 : "",
	              h_status_str(st));
	return WEXITSTATUS(st);
}

struct bad_case {
	const char *what;
	const char *text;
	int line, col;
	const char *msg; /* a part of the message */
};

START_TEST(config_test_flag)
{
	char path[PATH_MAX];
	char *out, *err;
	const char *good =
	    "# a good configuration\n"
	    "listen: [\"127.0.0.1:7390\", \"unix:/tmp/lockd-none.sock\"]\n"
	    "log_level: warn\n"
	    "redis:\n"
	    "  masters: [\"127.0.0.1:7001\", \"127.0.0.1:7002\", \"127.0.0.1:7003\"]\n"
	    "  timeout_ms: 100\n"
	    "locks:\n"
	    "  lease_ms: 10000\n"
	    "limits:\n"
	    "  max_key_len: 64\n"
	    "metrics:\n"
	    "  listen: \"127.0.0.1:9390\"\n";
	snprintf(path, sizeof(path), "%s/good.yml", h_dir());
	h_put_file(path, good);
	int rc = lockd_run(&out, &err, "-t", "-c", "good.yml");
	ck_assert_msg(rc == 0, "lockd -t -c good.yml: exit %d\n%s%s", rc, out, err);
	ck_assert_str_eq(out, "good.yml: configuration OK\n");
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
	/* the shipped configurations (lockd.yml as make made it from lockd.yml.in) */
	const char *shipped[] = {"conf/lockd.yml", "conf/demo.yml"};
	for (int i = 0; i < 2; i++) {
		char sp[PATH_MAX];
		if (i == 0)
			builddir_path(shipped[i], sp, sizeof(sp));
		else
			srcdir_path(shipped[i], sp, sizeof(sp));
		char abs[PATH_MAX];
		ck_assert_msg(realpath(sp, abs) != NULL, "%s: %s", sp, strerror(errno));
		rc = lockd_run(&out, &err, "-t", "-c", abs);
		ck_assert_msg(rc == 0, "lockd -t -c %s: exit %d\n%s", abs, rc, err);
		free(out);
		free(err);
	}

	static const struct bad_case bad[] = {
	    {"unknown key",
	     "log_level: info\nredis:\n  masters: [\"127.0.0.1:7001\"]\n  bogus: 1\n", 4, 3,
	     "unknown key \"redis.bogus\""},
	    {"unknown top-level key",
	     "# comment\n\nlisten: [\"127.0.0.1:7390\"]\nlog_levle: info\n", 4, 1,
	     "unknown key \"log_levle\""},
	    {"duplicate key", "log_level: info\nlocks:\n  lease_ms: 5000\nlog_level: debug\n", 4, 1,
	     "duplicate key \"log_level\""},
	    {"duplicate nested key",
	     "locks:\n  lease_ms: 5000\n  drift_factor: 0.01\n  lease_ms: 6000\n", 4, 3,
	     "duplicate key \"locks.lease_ms\""},
	    {"duplicate section",
	     "locks:\n  lease_ms: 5000\nredis:\n  timeout_ms: 20\nlocks:\n  handoff_limit: 4\n", 5,
	     1, "duplicate key \"locks\""},
	    {"out of range", "log_level: info\nlocks:\n  lease_ms: 50\n", 3, 13, "locks.lease_ms"},
	    {"out of range (limits)", "limits:\n    max_clients: 0\n", 2, 18, "limits.max_clients"},
	    {"not a number", "redis:\n  timeout_ms: fast\n", 2, 15, "redis.timeout_ms"},
	    {"bad log level", "log_level: loud\n", 1, 12, "log_level"},
	    {"YAML syntax error",
	     "log_level: info\nredis:\n  masters: [\"127.0.0.1:1\"]\n  timeout_ms: 50: 3\n", 4, 17,
	     "YAML"},
	    {"YAML bad indentation", "redis:\n  masters: [\"127.0.0.1:1\"]\n timeout_ms: 50\n", 3,
	     2, "YAML"},
	    {"YAML unclosed list", "listen: [\"127.0.0.1:7390\"\nlog_level: info\n", 2, 1, "YAML"},
	};
	snprintf(path, sizeof(path), "%s/bad.yml", h_dir());
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h_put_file(path, bad[i].text);
		rc = lockd_run(&out, &err, "-t", "-c", "bad.yml");
		char want[64];
		snprintf(want, sizeof(want), "bad.yml:%d:%d: ", bad[i].line, bad[i].col);
		ck_assert_msg(rc == 1, "%s: lockd -t exit %d (stderr '%s')", bad[i].what, rc, err);
		ck_assert_msg(strncmp(err, want, strlen(want)) == 0 && strstr(err, bad[i].msg),
		              "%s: expected '%s...%s...', got '%s'", bad[i].what, want, bad[i].msg,
		              err);
		ck_assert_msg(count_lines(err) == 1 && ends_with(err, "\n"),
		              "%s: expected one line on stderr, got '%s'", bad[i].what, err);
		ck_assert_msg(strcmp(out, "") == 0, "%s: stdout '%s'", bad[i].what, out);
		free(out);
		free(err);
	}
	/* a file that cannot be read */
	rc = lockd_run(&out, &err, "-t", "-c", "missing.yml");
	ck_assert_msg(rc == 1 && strncmp(err, "missing.yml:1:1: ", 17) == 0,
	              "missing file: exit %d, '%s'", rc, err);
	free(out);
	free(err);
	/* the same errors stop a real start, before it listens */
	h_put_file(path, bad[0].text);
	rc = lockd_run(&out, &err, "-c", "bad.yml", NULL);
	ck_assert_msg(rc == 1 && strncmp(err, "bad.yml:4:3: ", 13) == 0,
	              "lockd -c bad.yml: exit %d, '%s'", rc, err);
	free(out);
	free(err);

	/* --version, usage errors */
	rc = lockd_run(&out, &err, "--version", NULL, NULL);
	ck_assert_int_eq(rc, 0);
	char ver[128];
	snprintf(ver, sizeof(ver), "lockd %s\n", PACKAGE_VERSION);
	ck_assert_str_eq(out, ver);
	free(out);
	free(err);
	rc = lockd_run(&out, &err, "-v", NULL, NULL);
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(out, ver);
	free(out);
	free(err);
	const char *usage_err[][3] = {
	    {"--bogus", NULL, NULL},
	    {"-c", NULL, NULL},
	    {"-l", "loud", NULL},
	    {"-t", "extra", NULL},
	};
	for (size_t i = 0; i < sizeof(usage_err) / sizeof(usage_err[0]); i++) {
		rc = lockd_run(&out, &err, usage_err[i][0], usage_err[i][1], usage_err[i][2]);
		ck_assert_msg(rc == 2, "lockd %s %s: exit %d, expected 2 (stderr '%s')",
		              usage_err[i][0], usage_err[i][1] ? usage_err[i][1] : "", rc, err);
		ck_assert_msg(err[0] != '\0', "lockd %s: nothing on stderr", usage_err[i][0]);
		free(out);
		free(err);
	}
}
END_TEST

/* What start refuses, lockd -t refuses, with the same one-line message:
 * a host name where an address is bound, listeners that cannot all be
 * bound, an open network listener without a password, a password file
 * that cannot be read. */
START_TEST(config_test_matches_start)
{
	static const struct {
		const char *what;
		const char *text;
		const char *msg;
	} cases[] = {
	    {"host name", "listen: [\"localhost:22393\"]\n",
	     "bad.yml:1:10: listen: \"localhost:22393\": host must be a numeric IP address"},
	    {"bound twice", "listen: [\"127.0.0.1:22393\", \"[::]:22393\"]\npassword: pw\n",
	     "bad.yml:1:1: listen: \"127.0.0.1:22393\" and \"[::]:22393\" cannot both be bound"},
	    {"metrics on a listener",
	     "listen: [\"127.0.0.1:22393\"]\nmetrics: {listen: \"0.0.0.0:22393\"}\n",
	     "bad.yml:2:11: metrics.listen: \"0.0.0.0:22393\" and listen \"127.0.0.1:22393\" "
	     "cannot"},
	    {"open listener", "listen: [\"0.0.0.0:22393\"]\n",
	     "bad.yml:1:1: listen: \"0.0.0.0:22393\" is not a loopback address and clients need no "
	     "password"},
	    {"unreadable password file", "password_file: nothere\n",
	     "bad.yml:1:1: password_file: ./nothere: cannot open: No such file or directory"},
	    {"empty redis password file", "redis:\n  password_file: empty\n",
	     "bad.yml:2:3: redis.password_file: ./empty: the file is empty"},
	};
	char path[PATH_MAX], empty[PATH_MAX];
	snprintf(path, sizeof(path), "%s/bad.yml", h_dir());
	snprintf(empty, sizeof(empty), "%s/empty", h_dir());
	h_put_file(empty, "");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out, *err, *out2, *err2;
		h_put_file(path, cases[i].text);
		int rc = lockd_run(&out, &err, "-t", "-c", "bad.yml");
		ck_assert_msg(rc == 1, "%s: lockd -t exit %d (stderr '%s')", cases[i].what, rc,
		              err);
		ck_assert_msg(
		    strncmp(err, cases[i].msg, strlen(cases[i].msg)) == 0 && count_lines(err) == 1,
		    "%s: lockd -t said '%s', expected '%s...'", cases[i].what, err, cases[i].msg);
		rc = lockd_run(&out2, &err2, "-c", "bad.yml", NULL);
		ck_assert_msg(rc == 1, "%s: lockd -c exit %d (stderr '%s')", cases[i].what, rc,
		              err2);
		ck_assert_msg(strcmp(err, err2) == 0, "%s: -t said '%s', start said '%s'",
		              cases[i].what, err, err2);
		free(out);
		free(err);
		free(out2);
		free(err2);
	}
}
END_TEST

/* allow_unauthenticated lets an open listener through, with a warning from
 * -t and at start; then lockd serves on it. */
START_TEST(allow_unauthenticated)
{
	h_masters_start(1);
	int port = h_free_port();
	char conf[PATH_MAX], logp[PATH_MAX], text[512];
	snprintf(conf, sizeof(conf), "%s/open.yml", h_dir());
	snprintf(logp, sizeof(logp), "%s/open.log", h_dir());
	snprintf(text, sizeof(text),
	         "listen: [\"0.0.0.0:%d\"]\nallow_unauthenticated: true\n"
	         "redis:\n  masters: [\"127.0.0.1:%d\"]\n",
	         port, h_master(0)->port);
	h_put_file(conf, text);
	char *out, *err;
	int rc = lockd_run(&out, &err, "-t", "-c", "open.yml");
	ck_assert_msg(rc == 0, "lockd -t: exit %d, '%s'", rc, err);
	char want[128];
	snprintf(want, sizeof(want),
	         "warning: listen 0.0.0.0:%d: clients need no password (allow_unauthenticated)\n",
	         port);
	ck_assert_str_eq(err, want);
	ck_assert_str_eq(out, "open.yml: configuration OK\n");
	free(out);
	free(err);

	char *argv[] = {(char *)h_built("lockd"), "-c", conf, NULL};
	pid_t pid = h_spawn(argv, &(struct h_spawn){.out = logp});
	char *l =
	    h_log_wait(logp, 0, "clients need no password (allow_unauthenticated)", NULL, 5000);
	ck_assert_msg(l != NULL, "no warning at start in %s", logp);
	free(l);
	l = h_log_wait(logp, 0, "ready", NULL, 5000);
	ck_assert_msg(l != NULL, "lockd did not start");
	free(l);
	struct cl *c = cl_tcp(port);
	cl_expect(c, "PING", "PONG");
	cl_close(c);
	ck_assert(kill(pid, SIGTERM) == 0);
	int st = h_reap(pid, 5000);
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "lockd: %s",
	              h_status_str(st));
}
END_TEST

/* STATS as one string (every line up to END); fails on a bad reply. */
static char *stats_text(struct cl *c)
{
	size_t cap = 65536, len = 0;
	char *all = malloc(cap);
	ck_assert(all != NULL);
	all[0] = '\0';
	cl_send(c, "STATS\n");
	for (;;) {
		const char *r = cl_reply(c, H_TMO);
		ck_assert_msg(r != NULL, "STATS: no END");
		if (strcmp(r, "END") == 0)
			return all;
		ck_assert_msg(strncmp(r, "STAT ", 5) == 0, "STATS: '%s'", r);
		len += (size_t)snprintf(all + len, cap - len, "%s\n", r);
		ck_assert(len < cap);
	}
}

static void wait_auth(int port, const char *pw, const char *want, int timeout_ms)
{
	char req[128];
	snprintf(req, sizeof(req), "AUTH %s", pw);
	wait_reply(port, req, want, 1, timeout_ms);
}

/* password_file and redis.password_file: read at start and at each
 * reload, relative to the config file; the passwords are never logged
 * (even at debug level) nor shown in STATS. */
START_TEST(password_files)
{
	h_masters_start(3);
	for (int i = 0; i < 3; i++) {
		char *r = h_redis(i, "CONFIG", "SET", "requirepass", "r3dis-secret", NULL);
		ck_assert_msg(r && strcmp(r, "OK") == 0, "CONFIG SET requirepass: %s",
		              r ? r : "(nothing)");
		free(r);
	}
	char pw[PATH_MAX], rpw[PATH_MAX];
	snprintf(pw, sizeof(pw), "%s/lockd-password", h_dir());
	snprintf(rpw, sizeof(rpw), "%s/lockd-redis-password", h_dir());
	h_put_file(pw, "first-s3cret\n");
	h_put_file(rpw, "r3dis-secret\n");
	ck_assert(chmod(pw, 0600) == 0 && chmod(rpw, 0600) == 0);
	struct h_opts o = {0};
	o.top_extra = "password_file: lockd-password\n";
	o.redis_extra = "  password_file: lockd-redis-password\n";
	o.no_quorum_wait = 1;
	o.log_debug = 1;
	h_lockd_start(&o);
	int port = h_lockd(0)->port;

	struct cl *a = cl_open();
	cl_expect(a, "TRYLOCK k", "ERR NOAUTH authenticate with AUTH first");
	cl_expect(a, "AUTH second-s3cret", "ERR AUTH wrong password");
	cl_expect(a, "AUTH first-s3cret", "OK");
	/* the masters took redis.password_file's password */
	double end = h_now_ms() + 10000;
	for (;;) {
		const char *r = cl_cmd(a, "TRYLOCK k", H_TMO);
		ck_assert_msg(r != NULL, "TRYLOCK k: no reply");
		if (strncmp(r, "OK ", 3) == 0)
			break;
		ck_assert_msg(h_now_ms() < end, "TRYLOCK k still '%s' after 10 s", r);
		h_sleep_ms(50);
	}
	char *st = stats_text(a);
	ck_assert_msg(!strstr(st, "s3cret") && !strstr(st, "r3dis-secret"),
	              "a password in STATS:\n%s", st);
	free(st);

	/* a new password at the next reload */
	h_put_file(pw, "second-s3cret\n");
	long from = h_file_size(h_lockd(0)->log);
	h_lockd_signal(0, SIGHUP);
	h_lockd_wait_reloaded(0, from, 5000);
	wait_auth(port, "second-s3cret", "OK", 3000);
	wait_auth(port, "first-s3cret", "ERR AUTH wrong password", 3000);
	cl_expect(a, "UNLOCK k", "OK 0"); /* the session stays authenticated */

	/* a reload that cannot read the file keeps the running config */
	ck_assert(unlink(pw) == 0);
	from = h_file_size(h_lockd(0)->log);
	h_lockd_signal(0, SIGHUP);
	char *l = h_log_wait(h_lockd(0)->log, from, "reload failed", "password_file", 5000);
	ck_assert_msg(l != NULL, "no 'reload failed' naming password_file after SIGHUP");
	free(l);
	wait_auth(port, "second-s3cret", "OK", 3000);
	cl_close(a);

	char *log = h_slurp(h_lockd(0)->log);
	ck_assert(log != NULL);
	ck_assert_msg(!strstr(log, "s3cret") && !strstr(log, "r3dis-secret"),
	              "a password in the log %s", h_lockd(0)->log);
	free(log);
}
END_TEST

/* Started with 1 of 3 masters: a warning once, a moment after start;
 * STATS says quorum_ok 0 until a majority counts. A lockd started with
 * every master up says nothing of the kind. */
START_TEST(no_majority_at_start)
{
	h_masters_start(3);
	h_master_kill(1);
	h_master_kill(2);
	struct h_opts o = {0};
	o.no_quorum_wait = 1;
	h_lockd_start(&o);
	const char *logp = h_lockd(0)->log;
	double t0 = h_now_ms();
	char *l = h_log_wait(
	    logp, 0, "no majority of masters reachable: 1 of 3 up; LOCK will answer ERR QUORUM",
	    NULL, 5000);
	ck_assert_msg(l != NULL, "no warning within 5 s of start");
	free(l);
	ck_assert_msg(h_now_ms() - t0 < 4000, "the warning took %.0f ms", h_now_ms() - t0);
	struct cl *c = cl_open();
	char *v = cl_stat(c, "quorum_ok");
	ck_assert_str_eq(v, "0");
	free(v);
	cl_expect_prefix(c, "TRYLOCK k", "ERR QUORUM");
	/* once */
	h_sleep_ms(2500);
	ck_assert_int_eq(h_file_count(logp, 0, "no majority of masters", NULL), 1);
	/* back */
	h_master_restart(1);
	h_master_restart(2);
	cl_wait_stat(c, "quorum_ok", "1", 15000);
	l = h_log_wait(logp, 0, "a majority of masters counts now", NULL, 5000);
	ck_assert_msg(l != NULL, "no log line when the majority came back");
	free(l);
	cl_close(c);

	int j = h_lockd_start(NULL);
	h_sleep_ms(1500);
	ck_assert_int_eq(h_file_count(h_lockd(j)->log, 0, "no majority", NULL), 0);
	struct cl *d = cl_tcp(h_lockd(j)->port);
	v = cl_stat(d, "quorum_ok");
	ck_assert_str_eq(v, "1");
	free(v);
	cl_close(d);
}
END_TEST

TCase *tc_service(void)
{
	TCase *tc = tcase_create("service");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 30);
	H_ADD(tc, sighup_good_config);
	H_ADD(tc, sighup_bad_config);
	H_ADD(tc, sighup_fixed_keys);
	H_ADD(tc, sigterm_releases);
	H_ADD(tc, config_test_flag);
	H_ADD(tc, config_test_matches_start);
	H_ADD(tc, allow_unauthenticated);
	H_ADD(tc, password_files);
	H_ADD(tc, no_majority_at_start);
	tc_service_add_systemd(tc);
	tc_service_add_metrics(tc);
	tc_service_add_bench(tc);
	return tc;
}
