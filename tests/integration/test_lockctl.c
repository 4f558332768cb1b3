/* lockctl against a real lockd and real masters: one-shot commands and
 * their exit statuses, the prompt (on a pty), and `lockctl run`: mutual
 * exclusion, -n/-w/-E, CMD's status, and CMD's whole group stopped when the
 * lock is lost, lockd dies or goes silent, or lockctl itself is killed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define RUN_TMO 15000 /* bound on any one lockctl in these tests, ms */
#define LEASE   3000  /* h_opts default lease_ms */

/* ------------------------------------------------------------ processes */

struct proc {
	pid_t pid;
	char out[PATH_MAX], err[PATH_MAX];
	int status; /* exit status, 128 + signal; -1 while running */
};

/* lockctl's argv with args (NULL-terminated), and the environment changes
 * of env ("NAME=VALUE", "NAME=" to unset; NULL-terminated, may be NULL)
 * after unsetting every LOCKD_ variable it reads. */
struct lc_args {
	const char *argv[64];
	const char *env[24];
};

static void lc_args(struct lc_args *a, const char *const *env, const char *const *args)
{
	int argc = 0, n = 0;
	a->argv[argc++] = h_built("lockctl");
	for (; args[argc - 1] && argc < 63; argc++)
		a->argv[argc] = args[argc - 1];
	a->argv[argc] = NULL;
	static const char *const unset[] = {
	    "LOCKD_HOST=", "LOCKD_PORT=",   "LOCKD_SOCKET=", "LOCKD_PASSWORD=",
	    "LOCKD_TLS=",  "LOCKD_CACERT=", "LOCKD_CERT=",   "LOCKD_TLS_KEY="};
	for (size_t i = 0; i < 8; i++)
		a->env[n++] = unset[i];
	for (int i = 0; env && env[i]; i++) {
		ck_assert(n < 23);
		a->env[n++] = env[i];
	}
	a->env[n] = NULL;
}

/* Start lockctl with args and env (as lc_args() takes them). stdin is
 * /dev/null, or a pipe holding in; stdout and stderr go to files of the
 * test's directory. It dies with the test process. */
static void spawn_lc(struct proc *p, const char *in, const char *const *env,
                     const char *const *args)
{
	static int seq;
	int n = seq++;
	snprintf(p->out, sizeof(p->out), "%s/lc%d.out", h_dir(), n);
	snprintf(p->err, sizeof(p->err), "%s/lc%d.err", h_dir(), n);
	p->status = -1;
	struct lc_args a;
	lc_args(&a, env, args);
	struct h_spawn o = {.out = p->out, .err = p->err, .in = in, .env = a.env};
	p->pid = h_spawn((char *const *)a.argv, &o);
}

static int decode(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Wait at most timeout_ms for p; its status, or -1 (then it is killed). */
static int wait_lc(struct proc *p, int timeout_ms)
{
	if (p->status < 0) {
		int st = h_reap(p->pid, timeout_ms);
		if (st == -1) {
			h_kill(p->pid);
			return -1;
		}
		p->status = decode(st);
	}
	return p->status;
}

/* The file (malloc'd); fails the test if it cannot be read. */
static char *slurp(const char *path)
{
	char *s = h_slurp(path);
	ck_assert_msg(s != NULL, "%s: %s", path, strerror(errno));
	return s;
}

/* Run lockctl to its end; returns the status, *out and *err (malloc'd,
 * may be NULL to skip). */
static int lc_sync(const char *in, const char *const *env, char **out, char **err,
                   const char *const *args)
{
	struct lc_args a;
	lc_args(&a, env, args);
	struct h_spawn o = {.in = in, .env = a.env};
	return decode(h_run((char *const *)a.argv, &o, RUN_TMO, out, err));
}

static char portbuf[16];
static const char *port(void)
{
	snprintf(portbuf, sizeof(portbuf), "%d", h_lockd(0)->port);
	return portbuf;
}

/* Assert a one-shot's status, stdout and stderr (NULL: not checked). */
#define ONE(st, o, e, ...)                                                                         \
	do {                                                                                       \
		const char *args_[] = {"-p", port(), __VA_ARGS__, NULL};                           \
		char *out_, *err_;                                                                 \
		int s_ = lc_sync(NULL, NULL, &out_, &err_, args_);                                 \
		ck_assert_msg(s_ == (st),                                                          \
		              "lockctl %s: status %d, want %d; stdout '%s' stderr '%s'", args_[2], \
		              s_, (st), out_, err_);                                               \
		if ((o) != NULL)                                                                   \
			ck_assert_str_eq(out_, (const char *)(o));                                 \
		if ((e) != NULL)                                                                   \
			ck_assert_str_eq(err_, (const char *)(e));                                 \
		free(out_);                                                                        \
		free(err_);                                                                        \
	} while (0)

/* Wait (bounded) until path exists and is not empty. */
static void wait_file(const char *path, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	while (h_file_size(path) <= 0) {
		ck_assert_msg(h_now_ms() < end, "%s not written within %d ms", path, timeout_ms);
		h_sleep_ms(2);
	}
	h_sleep_ms(20); /* the writer finishes its line */
}

static long read_long(const char *path)
{
	char *s = slurp(path);
	long v = strtol(s, NULL, 10);
	free(s);
	return v;
}

static int group_exists(pid_t pg)
{
	return kill(-pg, 0) == 0 || errno != ESRCH;
}

/* Wait (bounded) until process group pg has no process; returns when, in
 * ms on h_now_ms()'s clock, or -1. */
static double wait_group_gone(pid_t pg, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	for (;;) {
		double now = h_now_ms();
		if (!group_exists(pg))
			return now;
		if (now >= end)
			return -1;
		usleep(500);
	}
}

/* Processes of group pg that are not zombies (from /proc). Once lockctl
 * is dead, nobody near reaps the group's zombies: init does, in its own
 * time. */
static int group_live(pid_t pg)
{
	DIR *d = opendir("/proc");
	ck_assert(d != NULL);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[300], buf[512];
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t k = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (k <= 0)
			continue;
		buf[k] = '\0';
		char *rp = strrchr(buf, ')');
		char state;
		int ppid, pgrp;
		if (rp && sscanf(rp + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 && pgrp == pg &&
		    state != 'Z' && state != 'X')
			n++;
	}
	closedir(d);
	return n;
}

static double wait_group_dead(pid_t pg, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	for (;;) {
		double now = h_now_ms();
		if (group_live(pg) == 0)
			return now;
		if (now >= end)
			return -1;
		usleep(500);
	}
}

/* Start "lockctl run [-k grace] job -- sh -c SCRIPT", SCRIPT being extra
 * (when given), then: write its process group id (its pid) to a file, run
 * a sleep in the background and one in the foreground. Returns that
 * process group once both sleeps run. */
static pid_t run_two_sleeps(struct proc *p, const char *grace, const char *extra)
{
	char pgf[PATH_MAX], cmd[PATH_MAX + 64];
	snprintf(pgf, sizeof(pgf), "%s/pg", h_dir());
	snprintf(cmd, sizeof(cmd), "%secho $$ > %s; sleep 100 & sleep 100", extra ? extra : "",
	         pgf);
	const char *with_k[] = {"-p", port(), "run", "-k", grace, "job",
	                        "--", "sh",   "-c",  cmd,  NULL};
	const char *plain[] = {"-p", port(), "run", "job", "--", "sh", "-c", cmd, NULL};
	spawn_lc(p, NULL, NULL, grace ? with_k : plain);
	wait_file(pgf, 5000);
	pid_t pg = (pid_t)read_long(pgf);
	ck_assert(pg > 1 && group_exists(pg));
	h_sleep_ms(100); /* both sleeps started */
	return pg;
}

/* ------------------------------------------------------------ one-shot */

START_TEST(lockctl_oneshot)
{
	h_std(NULL);
	ONE(0, "PONG\n", "", "PING");
	ONE(0, "PONG hello\n", "", "ping", "hello");
	ONE(0, "FREE\n", "", "STATUS", "k");
	ONE(0, "", "", "HELD");
	/* a lock taken one-shot is released when lockctl exits */
	char *out;
	const char *a1[] = {"-p", port(), "LOCK", "k", "WAIT", "1000", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, &out, NULL, a1), 0);
	ck_assert_msg(strncmp(out, "OK ", 3) == 0, "got '%s'", out);
	free(out);
	struct cl *c = cl_open();
	cl_lock(c, "LOCK k WAIT 2000");
	/* held by c */
	ONE(1, "", "BUSY\n", "TRYLOCK", "k");
	ONE(1, "", "TIMEOUT\n", "LOCK", "k", "WAIT", "100");
	ONE(1, "", NULL, "UNLOCK", "k");
	ONE(1, "", "ERR PROTOCOL unknown command\n", "FROB");
	const char *a2[] = {"-p", port(), "STATUS", "k", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, &out, NULL, a2), 0);
	ck_assert_msg(strncmp(out, "HELD ", 5) == 0, "got '%s'", out);
	free(out);
	/* lists: entries only, no END */
	const char *a3[] = {"-p", port(), "STATS", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, &out, NULL, a3), 0);
	ck_assert_msg(strncmp(out, "STAT ", 5) == 0 && !strstr(out, "END"), "got '%s'", out);
	free(out);
	/* the Unix socket, and the environment */
	const char *a4[] = {"-s", h_lockd(0)->sock, "PING", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, &out, NULL, a4), 0);
	ck_assert_str_eq(out, "PONG\n");
	free(out);
	const char *e5[] = {"LOCKD_SOCKET=", NULL, NULL};
	char env[400];
	snprintf(env, sizeof(env), "LOCKD_SOCKET=%s", h_lockd(0)->sock);
	e5[0] = env;
	const char *a5[] = {"PING", NULL};
	ck_assert_int_eq(lc_sync(NULL, e5, &out, NULL, a5), 0);
	ck_assert_str_eq(out, "PONG\n");
	free(out);
	char penv[40];
	snprintf(penv, sizeof(penv), "LOCKD_PORT=%d", h_lockd(0)->port);
	const char *e6[] = {penv, "LOCKD_HOST=127.0.0.1", NULL};
	ck_assert_int_eq(lc_sync(NULL, e6, &out, NULL, a5), 0);
	ck_assert_str_eq(out, "PONG\n");
	free(out);
	/* -T: no reply in time is "lockd did not answer" */
	const char *a7[] = {"-p", port(), "-T", "300", "LOCK", "k", NULL};
	char *err;
	double t0 = h_now_ms();
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, &err, a7), 69);
	double took = h_now_ms() - t0;
	ck_assert_msg(took >= 290 && took < 300 + 1000, "-T 300 took %.0f ms", took);
	ck_assert_msg(strstr(err, "no reply to LOCK") != NULL, "stderr '%s'", err);
	free(err);
	cl_close(c);
}
END_TEST

START_TEST(lockctl_usage_and_unreachable)
{
	h_std(NULL);
	const char *bad[][10] = {
	    {"a b", NULL},
	    {"PING", "", NULL},
	    {"-p", "0", "PING", NULL},
	    {"-p", "x", "PING", NULL},
	    {"-s", "/x", "-h", "127.0.0.1", "PING", NULL},
	    {"-Z", "PING", NULL},
	    {"-T", NULL},
	    {"run", "k", NULL},
	    {"run", "-n", "-w", "5", "k", "--", "true", NULL},
	    {"run", "-E", "256", "k", "--", "true", NULL},
	    {"run", "bad key", "--", "true", NULL},
	    {"run", NULL},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *err;
		int st = lc_sync(NULL, NULL, NULL, &err, bad[i]);
		ck_assert_msg(st == 2, "case %zu: status %d, stderr '%s'", i, st, err);
		ck_assert_msg(strncmp(err, "lockctl: ", 9) == 0, "case %zu: stderr '%s'", i, err);
		free(err);
	}
	/* no command and no terminal */
	const char *none[] = {"-p", port(), NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, none), 2);
	/* nobody there: a port whose lockd is stopped (SIGTERM, bounded) */
	char p[16];
	snprintf(p, sizeof(p), "%d", h_lockd(0)->port);
	h_lockd_signal(0, SIGTERM);
	ck_assert_int_ne(h_lockd_wait(0, 5000), -1);
	char *err;
	const char *a[] = {"-p", p, "PING", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, &err, a), 69);
	ck_assert_msg(strstr(err, "Connection refused") != NULL, "stderr '%s'", err);
	free(err);
	const char *r[] = {"-p", p, "run", "k", "--", "true", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, r), 69);
	const char *s[] = {"-s", "/nonexistent/lockd.sock", "PING", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, s), 69);
}
END_TEST

/* /proc/PID/cmdline and environ do not hold the password. */
static void assert_no_secret(pid_t pid, const char *secret, const char *what)
{
	char path[64], buf[8192];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ck_assert(n > 0);
	ck_assert_msg(memmem(buf, (size_t)n, secret, strlen(secret)) == NULL,
	              "%s: the password is in %s", what, path);
}

START_TEST(lockctl_auth)
{
	struct h_opts o = {.password = "pw-42-secret"};
	h_std(&o);
	char *err, *out;
	/* no password: lockd's ERR NOAUTH, status 1 */
	const char *a1[] = {"-p", port(), "STATUS", "k", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, &err, a1), 1);
	ck_assert_msg(strncmp(err, "ERR NOAUTH", 10) == 0, "stderr '%s'", err);
	free(err);
	/* wrong: refused, status 1 */
	const char *a2[] = {"-p", port(), "-a", "nope", "PING", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, &err, a2), 1);
	ck_assert_msg(strstr(err, "AUTH refused") != NULL, "stderr '%s'", err);
	free(err);
	/* from the environment, from stdin, from the argument */
	const char *env[] = {"LOCKD_PASSWORD=pw-42-secret", NULL};
	ck_assert_int_eq(lc_sync(NULL, env, &out, NULL, a1), 0);
	ck_assert_str_eq(out, "FREE\n");
	free(out);
	const char *a3[] = {"-p", port(), "-a", "-", "STATUS", "k", NULL};
	ck_assert_int_eq(lc_sync("pw-42-secret\n", NULL, &out, NULL, a3), 0);
	ck_assert_str_eq(out, "FREE\n");
	free(out);
	const char *a4[] = {"-p", port(), "-a", "pw-42-secret", "STATUS", "k", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, &out, NULL, a4), 0);
	free(out);

	/* while run holds the lock, ps shows no password: environment, -a -
	 * (the rest of stdin is CMD's), and -a on the command line (wiped) */
	char mark[PATH_MAX], cmd[PATH_MAX + 64];
	snprintf(mark, sizeof(mark), "%s/started", h_dir());
	snprintf(cmd, sizeof(cmd), "cat > %s; sleep 100", mark);
	struct {
		const char *in;
		const char *const *env;
		const char *args[12];
	} ways[] = {
	    {"for CMD\n", env, {"-p", port(), "run", "k1", "--", "sh", "-c", cmd, NULL}},
	    {"pw-42-secret\nfor CMD\n",
	     NULL,
	     {"-p", port(), "-a", "-", "run", "k2", "--", "sh", "-c", cmd, NULL}},
	    {"for CMD\n",
	     NULL,
	     {"-p", port(), "-a", "pw-42-secret", "run", "k3", "--", "sh", "-c", cmd, NULL}},
	};
	for (size_t i = 0; i < 3; i++) {
		unlink(mark);
		struct proc p;
		spawn_lc(&p, ways[i].in, ways[i].env, ways[i].args);
		wait_file(mark, 5000);
		char *got = slurp(mark);
		ck_assert_str_eq(got, "for CMD\n");
		free(got);
		assert_no_secret(p.pid, "pw-42-secret", "lockctl run");
		kill(p.pid, SIGTERM);
		ck_assert_int_eq(wait_lc(&p, 5000), 128 + SIGTERM);
	}
}
END_TEST

/* ------------------------------------------------------------ run */

START_TEST(lockctl_run_exclusion)
{
	h_std(NULL);
	char log[PATH_MAX], script[2 * PATH_MAX + 100];
	snprintf(log, sizeof(log), "%s/runs.log", h_dir());
	snprintf(script, sizeof(script),
	         "echo \"start $LOCKD_FENCE\" >> %s; sleep 0.15; echo \"end $LOCKD_FENCE\" >> %s",
	         log, log);
	enum { N = 8 };
	struct proc p[N];
	const char *args[] = {"-p", port(), "run", "shared-job", "--", "sh", "-c", script, NULL};
	for (int i = 0; i < N; i++)
		spawn_lc(&p[i], NULL, NULL, args);
	for (int i = 0; i < N; i++) {
		int st = wait_lc(&p[i], RUN_TMO);
		char *e = slurp(p[i].err);
		ck_assert_msg(st == 0, "run %d: status %d, stderr '%s'", i, st, e);
		free(e);
	}
	/* 8 start/end pairs, never overlapping, fences growing in run order */
	FILE *f = fopen(log, "r");
	ck_assert(f != NULL);
	char line[128];
	unsigned long long last = 0, cur = 0;
	int n = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;
		if (n % 2 == 0) {
			ck_assert_msg(sscanf(line, "start %llu", &v) == 1, "line %d: '%s'", n + 1,
			              line);
			ck_assert_msg(v > last, "fence %llu after %llu: not growing", v, last);
			cur = v;
		} else {
			ck_assert_msg(sscanf(line, "end %llu", &v) == 1,
			              "line %d: '%s': runs overlap", n + 1, line);
			ck_assert_msg(v == cur, "end %llu inside the run of %llu", v, cur);
			last = v;
		}
		n++;
	}
	fclose(f);
	ck_assert_int_eq(n, 2 * N);
	struct cl *c = cl_open();
	cl_expect(c, "STATUS shared-job", "FREE");
	cl_close(c);
}
END_TEST

START_TEST(lockctl_run_not_acquired)
{
	h_std(NULL);
	struct cl *c = cl_open();
	cl_lock(c, "LOCK busy-job");
	char mark[PATH_MAX], cmd[PATH_MAX + 16];
	snprintf(mark, sizeof(mark), "%s/ran", h_dir());
	snprintf(cmd, sizeof(cmd), "touch %s", mark);
	char *err;
	/* -n: one attempt, 75, nothing run */
	const char *a1[] = {"-p", port(), "run", "-n", "busy-job", "--", "sh", "-c", cmd, NULL};
	double t0 = h_now_ms();
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, &err, a1), 75);
	/* one attempt, not a wait: a reply's bound, plus starting lockctl */
	ck_assert_msg(h_now_ms() - t0 < H_SLOW_LIMIT + H_LOADED, "-n took %.0f ms",
	              h_now_ms() - t0);
	ck_assert_str_eq(err, "");
	free(err);
	/* -w 300: about 300 ms */
	const char *a2[] = {"-p", port(), "run", "-w", "300", "busy-job",
	                    "--", "sh",   "-c",  cmd,  NULL};
	t0 = h_now_ms();
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, a2), 75);
	double took = h_now_ms() - t0;
	/* WAIT 300, then BUSY's reply: within the reply bound after it */
	ck_assert_msg(took >= 290 && took < 300 + H_SLOW_LIMIT, "-w 300 took %.0f ms", took);
	/* -E 3 */
	const char *a3[] = {"-p",       port(), "run", "-n", "-E", "3",
	                    "busy-job", "--",   "sh",  "-c", cmd,  NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, a3), 3);
	const char *a4[] = {"-p",       port(), "run", "-w", "0", "-E", "0",
	                    "busy-job", "--",   "sh",  "-c", cmd, NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, a4), 0);
	ck_assert_int_eq(access(mark, F_OK), -1);
	/* lockd refuses the key: status 1, the ERR on stderr */
	const char *a5[] = {"-p", port(), "run", "-t", "1", "busy-job", "--", "true", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, &err, a5), 1);
	ck_assert_msg(strstr(err, "ERR ARG") != NULL, "stderr '%s'", err);
	free(err);
	/* released: now it runs */
	cl_expect(c, "UNLOCK busy-job", "OK 0");
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, a1), 0);
	ck_assert_int_eq(access(mark, F_OK), 0);
	cl_close(c);
}
END_TEST

START_TEST(lockctl_run_status)
{
	h_std(NULL);
	char *out;
	const char *a1[] = {"-p", port(), "run", "job",
	                    "--", "sh",   "-c",  "echo \"$LOCKD_KEY $LOCKD_FENCE\"; exit 7",
	                    NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, &out, NULL, a1), 7);
	unsigned long long fence = 0;
	char key[16];
	ck_assert_msg(sscanf(out, "%15s %llu", key, &fence) == 2, "stdout '%s'", out);
	ck_assert_str_eq(key, "job");
	ck_assert(fence > 0);
	free(out);
	const char *a2[] = {"-p", port(), "run", "job", "--", "sh", "-c", "kill -KILL $$", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, a2), 137);
	const char *a3[] = {"-p", port(), "run", "job", "--", "true", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, a3), 0);
	const char *a4[] = {"-p", port(), "run", "job", "--", "/nonexistent/cmd", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, a4), 127);
	/* stdin and stdout pass through */
	const char *a5[] = {"-p", port(), "run", "job", "--", "tr", "a-z", "A-Z", NULL};
	ck_assert_int_eq(lc_sync("through\n", NULL, &out, NULL, a5), 0);
	ck_assert_str_eq(out, "THROUGH\n");
	free(out);
	/* a background process left behind is stopped before the release */
	char pgf[PATH_MAX], cmd[PATH_MAX + 64];
	snprintf(pgf, sizeof(pgf), "%s/pg", h_dir());
	snprintf(cmd, sizeof(cmd), "echo $$ > %s; sleep 100 & exit 4", pgf);
	const char *a6[] = {"-p", port(), "run", "-k", "5000", "job", "--", "sh", "-c", cmd, NULL};
	double t0 = h_now_ms();
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, a6), 4);
	ck_assert_msg(h_now_ms() - t0 < 2000, "took %.0f ms", h_now_ms() - t0);
	ck_assert(!group_exists((pid_t)read_long(pgf)));
	struct cl *c = cl_open();
	cl_expect(c, "STATUS job", "FREE");
	cl_close(c);
}
END_TEST

START_TEST(lockctl_run_signals)
{
	h_std(NULL);
	char mark[PATH_MAX], cmd[PATH_MAX + 128];
	snprintf(mark, sizeof(mark), "%s/up", h_dir());
	/* CMD answers SIGHUP with status 5: the signal reached it, not a kill */
	snprintf(cmd, sizeof(cmd), "trap 'exit 5' HUP; echo up > %s; while :; do sleep 0.02; done",
	         mark);
	struct proc p;
	const char *a[] = {"-p", port(), "run", "job", "--", "sh", "-c", cmd, NULL};
	spawn_lc(&p, NULL, NULL, a);
	wait_file(mark, 5000);
	kill(p.pid, SIGHUP);
	ck_assert_int_eq(wait_lc(&p, 5000), 5);
	unlink(mark);
	spawn_lc(&p, NULL, NULL, a);
	wait_file(mark, 5000);
	kill(p.pid, SIGTERM);
	ck_assert_int_eq(wait_lc(&p, 5000), 128 + SIGTERM);
	/* before CMD starts: lockctl gives up, nothing runs */
	struct cl *c = cl_open();
	cl_lock(c, "LOCK job");
	unlink(mark);
	spawn_lc(&p, NULL, NULL, a);
	cl_wait_waiters(c, "job", 1, 5000);
	kill(p.pid, SIGINT);
	ck_assert_int_eq(wait_lc(&p, 5000), 128 + SIGINT);
	ck_assert_int_eq(access(mark, F_OK), -1);
	cl_close(c);
}
END_TEST

/* Two of three masters stopped while CMD runs: LOST, then the whole group
 * is gone before the lock's validity ends plus the grace. */
START_TEST(lockctl_run_lost)
{
	h_std(NULL);
	struct proc p;
	pid_t pg = run_two_sleeps(&p, NULL, NULL);
	double t_stop = h_now_ms();
	h_master_stop(0);
	h_master_stop(1);
	/* every renewal was before the stop: validity ends within a lease */
	double gone = wait_group_gone(pg, LEASE + 1000 + 2000);
	ck_assert_msg(gone > 0, "CMD's group %d still there %d ms after the masters stopped", pg,
	              LEASE + 3000);
	ck_assert_int_eq(wait_lc(&p, 5000), 70);
	char *err = slurp(p.err);
	ck_assert_msg(strstr(err, "lock lost (LOST job ") != NULL, "stderr '%s'", err);
	double after_lost = -1;
	const char *g = strstr(err, "gone ");
	ck_assert_msg(g && sscanf(g, "gone %lf ms after LOST", &after_lost) == 1, "stderr '%s'",
	              err);
	fprintf(stderr,
	        "lockctl_run_lost: masters stopped -> CMD's group gone: %.1f ms "
	        "(lease %d ms); LOST -> group gone (measured by lockctl): %.2f ms\n",
	        gone - t_stop, LEASE, after_lost);
	ck_assert_msg(gone - t_stop <= LEASE + 1000 + H_JITTER, "gone %.0f ms after the stop",
	              gone - t_stop);
	/* SIGTERM at once on LOST (the sleeps die of it), not at the end of
	 * the grace (1000 ms): the bound above is the safety one */
	ck_assert_msg(after_lost >= 0 && after_lost < H_LOADED, "%.2f ms from LOST to gone",
	              after_lost);
	free(err);
	h_master_cont(0);
	h_master_cont(1);
}
END_TEST

/* lockd stopped (SIGSTOP): no word, no EOF. CMD must be gone before the
 * lease lockd last confirmed can end. */
START_TEST(lockctl_run_lockd_silent)
{
	h_std(NULL);
	struct proc p;
	pid_t pg = run_two_sleeps(&p, "500", "trap '' TERM; ");
	double t0 = h_now_ms();
	h_lockd_signal(0, SIGSTOP);
	double gone = wait_group_gone(pg, LEASE + 2000);
	h_lockd_signal(0, SIGCONT);
	ck_assert_msg(gone > 0, "CMD's group still there %d ms after lockd stopped", LEASE + 2000);
	fprintf(stderr,
	        "lockctl_run_lockd_silent: lockd stopped -> CMD's group gone: %.1f ms "
	        "(lease %d ms, grace 500 ms, sh ignores SIGTERM)\n",
	        gone - t0, LEASE);
	/* the last renewal was less than a lease ago: the masters' lease ends
	 * before t0 + LEASE; SIGKILL had to land before that */
	ck_assert_msg(gone - t0 < LEASE, "%.0f ms", gone - t0);
	ck_assert_int_eq(wait_lc(&p, 5000), 70);
	char *err = slurp(p.err);
	ck_assert_msg(strstr(err, "lockd silent") != NULL, "stderr '%s'", err);
	ck_assert_msg(strstr(err, "SIGKILL") != NULL, "stderr '%s'", err);
	free(err);
}
END_TEST

/* lockctl killed with SIGKILL: the guard stops CMD's group, and the lock
 * is held until that group is gone. */
START_TEST(lockctl_run_killed)
{
	h_std(NULL);
	struct proc p;
	pid_t pg = run_two_sleeps(&p, "400", "trap '' TERM; ");
	struct cl *c = cl_open();
	double t0 = h_now_ms();
	kill(p.pid, SIGKILL);
	ck_assert_int_eq(wait_lc(&p, 2000), 128 + SIGKILL);
	long long ttl, waiters;
	ck_assert_msg(cl_status(c, "job", &ttl, &waiters) == 1,
	              "the lock was released while CMD still ran");
	ck_assert_int_ge(group_live(pg), 2);
	double gone = wait_group_dead(pg, 3000);
	ck_assert_msg(gone > 0, "CMD's group still runs 3 s after lockctl was killed");
	fprintf(stderr,
	        "lockctl_run_killed: lockctl killed -> CMD's group gone: %.1f ms "
	        "(grace 400 ms, sh ignores SIGTERM)\n",
	        gone - t0);
	/* SIGKILL at the end of the grace (400 ms), not before; loaded headroom after */
	ck_assert_msg(gone - t0 >= 350 && gone - t0 < 400 + H_LOADED, "%.0f ms", gone - t0);
	/* then the session ends: released within the service level (1 s) */
	double end = h_now_ms() + 1000 + H_LOADED;
	while (cl_status(c, "job", &ttl, &waiters) != 0) {
		ck_assert_msg(h_now_ms() < end, "not released 1 s after CMD's group was gone");
		h_sleep_ms(10);
	}
	cl_close(c);
}
END_TEST

/* A key with a blank or a line end would reach lockd as several words (a
 * key "k WAIT" as option WAIT, "k\r\nUNLOCK x" as a second request):
 * lockctl refuses it, one-shot and run, with status 2 and a message
 * naming it, and never connects: lockd counts no client, grants nothing
 * and sees no error. A good one-shot after them does connect (the counter
 * would have seen them). */
START_TEST(lockctl_refuses_blank_keys)
{
	h_std(NULL);
	static const char *const keys[] = {"k WAIT", "k\r\nUNLOCK x", "k\tTTL", "k\n"};
	struct cl *s = cl_open();
	char *clients0 = cl_stat(s, "clients_total"), *errs0 = cl_stat(s, "protocol_errors");
	char *grants0 = cl_stat(s, "grants");
	ck_assert(clients0 && errs0 && grants0);
	char mark[PATH_MAX], cmd[PATH_MAX + 16];
	snprintf(mark, sizeof(mark), "%s/ran", h_dir());
	snprintf(cmd, sizeof(cmd), "touch %s", mark);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *k = keys[i];
		char *out, *err;
		const char *one[] = {"-p", port(), "LOCK", k, NULL};
		int st = lc_sync(NULL, NULL, &out, &err, one);
		ck_assert_msg(
		    st == 2 && strcmp(out, "") == 0 && strstr(err, "argument 2 (") != NULL &&
		        strstr(err, "contains a blank or a line end") != NULL,
		    "lockctl LOCK '%s': status %d, stdout '%s', stderr '%s'", h_esc(k, strlen(k)),
		    st, h_esc(out, strlen(out)), h_esc(err, strlen(err)));
		free(out);
		free(err);
		const char *trylock[] = {"-p", port(), "TRYLOCK", k, "TTL", "5000", NULL};
		ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, trylock), 2);
		const char *run[] = {"-p", port(), "run", "-n", k, "--", "sh", "-c", cmd, NULL};
		st = lc_sync(NULL, NULL, &out, &err, run);
		ck_assert_msg(st == 2 && strcmp(out, "") == 0 &&
		                  strstr(err, "want printable ASCII without blanks") != NULL,
		              "lockctl run '%s': status %d, stdout '%s', stderr '%s'",
		              h_esc(k, strlen(k)), st, h_esc(out, strlen(out)),
		              h_esc(err, strlen(err)));
		free(out);
		free(err);
		ck_assert_msg(access(mark, F_OK) == -1, "lockctl run '%s' ran CMD",
		              h_esc(k, strlen(k)));
	}
	/* nothing reached lockd */
	char *clients1 = cl_stat(s, "clients_total"), *errs1 = cl_stat(s, "protocol_errors");
	ck_assert_msg(strcmp(clients1, clients0) == 0,
	              "clients_total %s after the refused keys, %s before: lockctl connected",
	              clients1, clients0);
	ck_assert_str_eq(errs1, errs0);
	char *grants1 = cl_stat(s, "grants");
	ck_assert_str_eq(grants1, grants0);
	cl_expect(s, "STATUS k", "FREE");
	cl_expect(s, "STATUS x", "FREE");
	ck_assert_int_eq(h_masters_with_pttl(3, "lockd:k", NULL, NULL), 0);
	/* the control: a good one-shot is counted */
	const char *ping[] = {"-p", port(), "PING", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, ping), 0);
	char *clients2 = cl_stat(s, "clients_total");
	ck_assert_msg(strtoll(clients2, NULL, 10) == strtoll(clients0, NULL, 10) + 1,
	              "clients_total %s after one good lockctl, %s before", clients2, clients0);
	free(clients0);
	free(clients1);
	free(clients2);
	free(errs0);
	free(errs1);
	free(grants0);
	free(grants1);
	cl_close(s);
}
END_TEST

/* ------------------------------------------------------------ the prompt */

struct pty {
	int fd;
	pid_t pid;
	char buf[16384];
	size_t len, pos; /* bytes read; where the next expectation looks from */
};

static void pty_start(struct pty *t)
{
	t->fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	ck_assert(t->fd >= 0);
	ck_assert(grantpt(t->fd) == 0 && unlockpt(t->fd) == 0);
	char *name = ptsname(t->fd);
	ck_assert(name != NULL);
	char hist[PATH_MAX + 32], p[16];
	snprintf(hist, sizeof(hist), "LOCKCTL_HISTFILE=%s/history", h_dir());
	snprintf(p, sizeof(p), "%d", h_lockd(0)->port);
	t->len = t->pos = 0;
	const char *env[] = {"TERM=xterm", hist, NULL};
	char *argv[] = {(char *)h_built("lockctl"), "-p", p, NULL};
	t->pid = h_spawn(argv, &(struct h_spawn){.tty = name, .env = env});
}

/* Read from the pty until want appears (after what was seen so far). */
static void pty_expect(struct pty *t, const char *want, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	for (;;) {
		t->buf[t->len] = '\0';
		char *at = strstr(t->buf + t->pos, want);
		if (at) {
			t->pos = (size_t)(at - t->buf) + strlen(want);
			return;
		}
		double rem = end - h_now_ms();
		ck_assert_msg(rem > 0, "prompt: no '%s' within %d ms; screen: '%s'", want,
		              timeout_ms, t->buf);
		struct pollfd pf = {t->fd, POLLIN, 0};
		if (poll(&pf, 1, (int)rem + 1) <= 0)
			continue;
		ck_assert_msg(t->len < sizeof(t->buf) - 1, "prompt: screen full");
		ssize_t k = read(t->fd, t->buf + t->len, sizeof(t->buf) - 1 - t->len);
		ck_assert_msg(k > 0, "prompt: the terminal closed; screen: '%s'", t->buf);
		t->len += (size_t)k;
	}
}

static void pty_type(struct pty *t, const char *s)
{
	ck_assert(write(t->fd, s, strlen(s)) == (ssize_t)strlen(s));
}

START_TEST(lockctl_prompt)
{
	h_std(NULL);
	struct pty t;
	pty_start(&t);
	char prompt[64];
	snprintf(prompt, sizeof(prompt), "127.0.0.1:%d> ", h_lockd(0)->port);
	pty_expect(&t, prompt, 5000);
	pty_type(&t, "PING\r");
	pty_expect(&t, "PONG\r\n", 2000);
	pty_expect(&t, prompt, 2000);
	/* one session: the lock stays held between lines */
	pty_type(&t, "LOCK p TTL 400\r");
	pty_expect(&t, "OK ", 2000);
	pty_expect(&t, prompt, 2000);
	pty_type(&t, "HELD\r");
	pty_expect(&t, "KEY p ", 2000);
	pty_expect(&t, "END\r\n", 2000);
	pty_expect(&t, prompt, 2000);
	/* LOST arrives while a line is being typed: shown, the line kept */
	pty_type(&t, "STAT");
	pty_expect(&t, "LOST p ", 400 + 1000);
	pty_type(&t, "US p\r");
	pty_expect(&t, "FREE\r\n", 2000);
	/* Ctrl-C drops the line; QUIT leaves */
	pty_type(&t, "garbage\003");
	pty_expect(&t, prompt, 2000);
	pty_type(&t, "QUIT\r");
	pty_expect(&t, "OK\r\n", 2000);
	struct proc p = {.pid = t.pid, .status = -1};
	ck_assert_int_eq(wait_lc(&p, 3000), 0);
	close(t.fd);
	char hist[PATH_MAX];
	snprintf(hist, sizeof(hist), "%s/history", h_dir());
	char *h = slurp(hist);
	ck_assert_msg(strstr(h, "PING") && !strstr(h, "garbage"), "history '%s'", h);
	free(h);
}
END_TEST

/* ------------------------------------------------------------ TLS */

#ifdef HAVE_TLS
static void tls_sh(const char *cmd)
{
	char b[2048];
	snprintf(b, sizeof(b), "cd %s && { %s; } >/dev/null 2>&1", h_dir(), cmd);
	ck_assert_msg(system(b) == 0, "%s failed", b);
}

/* ca.pem; server.pem for 127.0.0.1 (CN and subjectAltName) and
 * client.pem, both signed by ca; other.pem, a CA of its own. */
static void tls_certs(void)
{
	const char *ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
	         "openssl req -x509 %s -keyout ca.key -out ca.pem -days 2 -subj /CN=lctl-ca && "
	         "openssl req -x509 %s -keyout other.key -out other.pem -days 2 -subj /CN=other && "
	         "echo subjectAltName=IP:127.0.0.1 > san.ext",
	         ec, ec);
	tls_sh(cmd);
	const char *names[] = {"server", "127.0.0.1", "san.ext", "client", "client-1", "/dev/null"};
	for (int i = 0; i < 6; i += 3) {
		snprintf(
		    cmd, sizeof(cmd),
		    "openssl req %s -keyout %s.key -out %s.csr -subj /CN=%s && openssl x509 -req "
		    "-in %s.csr -CA ca.pem -CAkey ca.key -set_serial %d -days 2 -extfile %s "
		    "-out %s.pem",
		    ec, names[i], names[i], names[i + 1], names[i], i + 2, names[i + 2], names[i]);
		tls_sh(cmd);
	}
}

static const char *tls_path(char *b, size_t n, const char *name)
{
	snprintf(b, n, "%s/%s", h_dir(), name);
	return b;
}
#endif

/* lockctl over TLS to a listener that wants client certificates: with
 * one (options, and the environment), without one (refused: 77), with a
 * CA that did not sign lockd's certificate (77), and `lockctl run`
 * holding its lock over TLS while CMD runs. */
START_TEST(lockctl_tls)
{
#ifndef HAVE_TLS
	fprintf(stderr, "lockctl_tls: lockd was built without TLS: skipped\n");
#else
	if (system("openssl version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "lockctl_tls: no openssl command: skipped\n");
		return;
	}
	tls_certs();
	char tls[1200], ca[PATH_MAX], other[PATH_MAX], cert[PATH_MAX], key[PATH_MAX];
	snprintf(tls, sizeof(tls), "cert: %s/server.pem, key: %s/server.key, ca: %s/ca.pem",
	         h_dir(), h_dir(), h_dir());
	struct h_opts o = {.tls = tls};
	h_std(&o);
	tls_path(ca, sizeof(ca), "ca.pem");
	tls_path(other, sizeof(other), "other.pem");
	tls_path(cert, sizeof(cert), "client.pem");
	tls_path(key, sizeof(key), "client.key");
	char tp[16];
	snprintf(tp, sizeof(tp), "%d", h_lockd(0)->tls_port);
	char *out, *err;

	/* a client certificate: a session like any other */
	const char *a1[] = {"-p",    tp,  "--cacert", ca,    "--cert", cert,
	                    "--key", key, "PING",     "tls", NULL};
	int st = lc_sync(NULL, NULL, &out, &err, a1);
	ck_assert_msg(st == 0, "status %d, stderr '%s'", st, err);
	ck_assert_str_eq(out, "PONG tls\n");
	free(out);
	free(err);
	/* the same from the environment */
	char e_ca[PATH_MAX + 20], e_cert[PATH_MAX + 20], e_key[PATH_MAX + 20], e_port[40];
	snprintf(e_ca, sizeof(e_ca), "LOCKD_CACERT=%s", ca);
	snprintf(e_cert, sizeof(e_cert), "LOCKD_CERT=%s", cert);
	snprintf(e_key, sizeof(e_key), "LOCKD_TLS_KEY=%s", key);
	snprintf(e_port, sizeof(e_port), "LOCKD_PORT=%s", tp);
	const char *env[] = {"LOCKD_TLS=1", e_ca, e_cert, e_key, e_port, NULL};
	const char *a2[] = {"LOCK", "tk", "WAIT", "1000", NULL};
	st = lc_sync(NULL, env, &out, &err, a2);
	ck_assert_msg(st == 0 && strncmp(out, "OK ", 3) == 0, "status %d, stdout '%s' stderr '%s'",
	              st, out, err);
	free(out);
	free(err);

	/* no client certificate: lockd refuses the session */
	const char *a3[] = {"-p", tp, "--tls", "--cacert", ca, "PING", NULL};
	st = lc_sync(NULL, NULL, &out, &err, a3);
	ck_assert_msg(st == 77 && strstr(err, "client certificate") && !strstr(out, "PONG"),
	              "no certificate: status %d, stdout '%s' stderr '%s'", st, out, err);
	free(out);
	free(err);
	/* lockd's certificate is not signed by the CA given */
	const char *a4[] = {"-p", tp,      "--cacert", other,  "--cert",
	                    cert, "--key", key,        "PING", NULL};
	st = lc_sync(NULL, NULL, &out, &err, a4);
	ck_assert_msg(st == 77 && strstr(err, "did not verify"),
	              "another CA: status %d, stdout '%s' stderr '%s'", st, out, err);
	free(out);
	free(err);
	/* a key without its certificate is a usage error */
	const char *a5[] = {"-p", tp, "--key", key, "PING", NULL};
	ck_assert_int_eq(lc_sync(NULL, NULL, NULL, NULL, a5), 2);

	/* run, settings from the environment: the lock is held over TLS while
	 * CMD runs (a lockctl in CMD, with run's LOCKD_KEY set, asks lockd
	 * over TLS too), and released after */
	char mark[PATH_MAX], cmd[3 * PATH_MAX + 64];
	snprintf(mark, sizeof(mark), "%s/tls-run", h_dir());
	snprintf(cmd, sizeof(cmd),
	         "%s STATUS \"$LOCKD_KEY\" > %s.tmp 2>&1; mv %s.tmp %s; sleep 0.2",
	         h_built("lockctl"), mark, mark, mark);
	const char *a6[] = {"run", "tjob", "--", "sh", "-c", cmd, NULL};
	struct proc p;
	spawn_lc(&p, NULL, env, a6);
	wait_file(mark, 5000);
	out = slurp(mark);
	ck_assert_msg(strncmp(out, "HELD ", 5) == 0, "STATUS over TLS while CMD runs: '%s'", out);
	free(out);
	const char *a7[] = {"-p", port(), "STATUS", "tjob", NULL};
	st = wait_lc(&p, RUN_TMO);
	err = slurp(p.err);
	ck_assert_msg(st == 0, "run: status %d, stderr '%s'", st, err);
	free(err);
	ck_assert_int_eq(lc_sync(NULL, NULL, &out, NULL, a7), 0);
	ck_assert_str_eq(out, "FREE\n");
	free(out);
#endif
}
END_TEST

TCase *tc_lockctl(void)
{
	TCase *tc = tcase_create("lockctl");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, lockctl_oneshot);
	H_ADD(tc, lockctl_usage_and_unreachable);
	H_ADD(tc, lockctl_auth);
	H_ADD(tc, lockctl_run_exclusion);
	H_ADD(tc, lockctl_run_not_acquired);
	H_ADD(tc, lockctl_run_status);
	H_ADD(tc, lockctl_run_signals);
	H_ADD(tc, lockctl_run_lost);
	H_ADD(tc, lockctl_run_lockd_silent);
	H_ADD(tc, lockctl_run_killed);
	H_ADD(tc, lockctl_refuses_blank_keys);
	H_ADD(tc, lockctl_prompt);
	H_ADD(tc, lockctl_tls);
	return tc;
}
