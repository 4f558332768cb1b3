/* lockd under systemd: sd_notify (READY=1, STATUS=, RELOADING=1 on SIGHUP,
 * STOPPING=1 on SIGTERM; STATUS= when no majority of masters counts) and
 * the shipped unit file as systemd-analyze verify sees it. Part of the
 * "service" group (test_service.c). */
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

/* ------------------------------------------------------------------ sd_notify */

struct notes {
	int fd;
	int n;
	char all[8192]; /* every message received, for failure messages */
};

/* Next datagram (NUL-terminated, in buf) within timeout_ms, or NULL. */
static const char *note_next(struct notes *nt, char *buf, size_t len, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	for (;;) {
		int rem = (int)(end - h_now_ms());
		if (rem < 0)
			return NULL;
		struct pollfd pf = {nt->fd, POLLIN, 0};
		if (poll(&pf, 1, rem) <= 0)
			continue;
		ssize_t k = recv(nt->fd, buf, len - 1, MSG_DONTWAIT);
		if (k < 0)
			continue;
		buf[k] = '\0';
		nt->n++;
		size_t o = strlen(nt->all);
		if (o < sizeof(nt->all) - 2)
			snprintf(nt->all + o, sizeof(nt->all) - o, "[%s] ", buf);
		return buf;
	}
}

/* The value of NAME= in a message (pointer into msg, up to '\n'), or NULL. */
static const char *note_var(const char *msg, const char *name, char *out, size_t outlen)
{
	size_t n = strlen(name);
	for (const char *l = msg; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t ll = e ? (size_t)(e - l) : strlen(l);
		if (ll > n && strncmp(l, name, n) == 0 && l[n] == '=') {
			snprintf(out, outlen, "%.*s", (int)(ll - n - 1), l + n + 1);
			return out;
		}
		l = e ? e + 1 : NULL;
	}
	return NULL;
}

/* Wait for a message with NAME=value (value NULL: any); messages with only
 * STATUS= are skipped, any other message fails the test. */
static void note_want(struct notes *nt, const char *name, const char *value, int timeout_ms,
                      char *buf, size_t len)
{
	double end = h_now_ms() + timeout_ms;
	char v[512];
	for (;;) {
		int rem = (int)(end - h_now_ms());
		const char *m = rem > 0 ? note_next(nt, buf, len, rem) : NULL;
		ck_assert_msg(m != NULL, "no %s=%s within %d ms; messages so far: %s", name,
		              value ? value : "...", timeout_ms, nt->all);
		if (note_var(m, name, v, sizeof(v)) && (!value || strcmp(v, value) == 0))
			return;
		ck_assert_msg(strncmp(m, "STATUS=", 7) == 0 && !strchr(m, '\n'),
		              "unexpected message '%s' while waiting for %s; messages so far: %s",
		              m, name, nt->all);
	}
}

static unsigned long long mono_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

START_TEST(sd_notify)
{
	h_masters_start(3);
	const char *dir = h_dir();
	char nsock[PATH_MAX], conf[PATH_MAX], logp[PATH_MAX], env[PATH_MAX + 32];
	snprintf(nsock, sizeof(nsock), "%s/notify.sock", dir);
	snprintf(conf, sizeof(conf), "%s/lockd0.yml", dir);
	snprintf(logp, sizeof(logp), "%s/lockd0.log", dir); /* shown on failure */
	snprintf(env, sizeof(env), "NOTIFY_SOCKET=%s", nsock);

	struct notes nt = {0};
	nt.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert(nt.fd >= 0);
	struct sockaddr_un sa = {0};
	sa.sun_family = AF_UNIX;
	ck_assert_msg(strlen(nsock) < sizeof(sa.sun_path), "path too long: %s", nsock);
	strcpy(sa.sun_path, nsock);
	ck_assert_msg(bind(nt.fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind %s: %s", nsock,
	              strerror(errno));

	int port = h_free_port();
	char text[1024];
	snprintf(text, sizeof(text),
	         "listen: [\"127.0.0.1:%d\"]\nlog_level: info\nredis:\n"
	         "  masters: [\"127.0.0.1:%d\", \"127.0.0.1:%d\", \"127.0.0.1:%d\"]\n"
	         "  timeout_ms: 50\nlocks:\n  lease_ms: 3000\n",
	         port, h_master(0)->port, h_master(1)->port, h_master(2)->port);
	h_put_file(conf, text);
	char *argv[] = {(char *)h_built("lockd"), "-c", conf, NULL};
	const char *const envs[] = {env, NULL};
	pid_t pid = h_spawn(argv, &(struct h_spawn){.out = logp, .env = envs});
	char buf[4096];

	/* READY=1, and by then the listener answers */
	note_want(&nt, "READY", "1", 10000, buf, sizeof(buf));
	double t_ready = h_now_ms();
	int fd = h_connect_tcp(port);
	ck_assert_msg(fd >= 0, "READY=1 sent, but 127.0.0.1:%d refuses: %s", port, strerror(errno));
	close(fd);
	struct cl *c = cl_tcp(port);
	cl_expect(c, "PING", "PONG");

	/* STATUS= with the masters, soon */
	char v[512];
	for (;;) {
		int rem = (int)(t_ready + 3500 - h_now_ms());
		const char *m = rem > 0 ? note_next(&nt, buf, sizeof(buf), rem) : NULL;
		ck_assert_msg(m != NULL,
		              "no STATUS= with 'masters up 3/3' within 3.5 s of READY=1: %s",
		              nt.all);
		ck_assert_msg(note_var(m, "STATUS", v, sizeof(v)), "unexpected message '%s'", m);
		if (strstr(v, "masters up 3/3"))
			break;
	}
	int up, n, counting;
	unsigned long long clients, held;
	ck_assert_msg(sscanf(v, "masters up %d/%d, counting %d; clients %llu; locks held %llu", &up,
	                     &n, &counting, &clients, &held) == 5,
	              "STATUS '%s' is not as documented", v);
	/* the status follows what happens */
	cl_lock(c, "LOCK k1");
	cl_lock(c, "LOCK k2");
	double t0 = h_now_ms();
	for (;;) {
		int rem = (int)(t0 + 3000 - h_now_ms());
		const char *m = rem > 0 ? note_next(&nt, buf, sizeof(buf), rem) : NULL;
		ck_assert_msg(m != NULL, "no STATUS= with 'locks held 2' within 3 s: %s", nt.all);
		ck_assert_msg(note_var(m, "STATUS", v, sizeof(v)), "unexpected message '%s'", m);
		if (strstr(v, "locks held 2"))
			break;
	}

	/* SIGHUP: RELOADING=1 with MONOTONIC_USEC, then READY=1 */
	unsigned long long before = mono_usec();
	ck_assert(kill(pid, SIGHUP) == 0);
	note_want(&nt, "RELOADING", "1", 3000, buf, sizeof(buf));
	unsigned long long after = mono_usec();
	ck_assert_msg(note_var(buf, "MONOTONIC_USEC", v, sizeof(v)),
	              "RELOADING=1 without MONOTONIC_USEC: '%s'", buf);
	ck_assert_msg(v[0] && strspn(v, "0123456789") == strlen(v), "MONOTONIC_USEC=%s", v);
	unsigned long long mu = strtoull(v, NULL, 10);
	ck_assert_msg(mu >= before && mu <= after,
	              "MONOTONIC_USEC=%llu is not CLOCK_MONOTONIC at the reload (%llu..%llu)", mu,
	              before, after);
	note_want(&nt, "READY", "1", 3000, buf, sizeof(buf));
	cl_expect(c, "PING", "PONG");
	cl_expect_held(c, "k1 k2");

	/* SIGTERM: STOPPING=1, exit 0 */
	ck_assert(kill(pid, SIGTERM) == 0);
	note_want(&nt, "STOPPING", "1", 3000, buf, sizeof(buf));
	int st = h_reap(pid, 5000);
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "lockd after SIGTERM: %s",
	              h_status_str(st));
	/* nothing after STOPPING=1 but STATUS */
	for (const char *m; (m = note_next(&nt, buf, sizeof(buf), 0));)
		ck_assert_msg(strncmp(m, "STATUS=", 7) == 0, "'%s' after STOPPING=1", m);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(h_redis_int(i, "EXISTS", "lockd:k1", "lockd:k2", NULL), 0);
	cl_close(c);
	close(nt.fd);
}
END_TEST

/* sd_notify STATUS= says when no majority counts. */
START_TEST(sd_notify_no_majority)
{
	h_masters_start(3);
	h_master_kill(1);
	h_master_kill(2);
	const char *dir = h_dir();
	char nsock[PATH_MAX], conf[PATH_MAX], logp[PATH_MAX], env[PATH_MAX + 32];
	snprintf(nsock, sizeof(nsock), "%s/notify.sock", dir);
	snprintf(conf, sizeof(conf), "%s/lockd0.yml", dir);
	snprintf(logp, sizeof(logp), "%s/lockd0.log", dir);
	snprintf(env, sizeof(env), "NOTIFY_SOCKET=%s", nsock);
	struct notes nt = {0};
	nt.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert(nt.fd >= 0);
	struct sockaddr_un sa = {0};
	sa.sun_family = AF_UNIX;
	ck_assert(strlen(nsock) < sizeof(sa.sun_path));
	strcpy(sa.sun_path, nsock);
	ck_assert_msg(bind(nt.fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind: %s",
	              strerror(errno));
	int port = h_free_port();
	char text[1024];
	snprintf(text, sizeof(text),
	         "listen: [\"127.0.0.1:%d\"]\nredis:\n"
	         "  masters: [\"127.0.0.1:%d\", \"127.0.0.1:%d\", \"127.0.0.1:%d\"]\n",
	         port, h_master(0)->port, h_master(1)->port, h_master(2)->port);
	h_put_file(conf, text);
	char *argv[] = {(char *)h_built("lockd"), "-c", conf, NULL};
	const char *const envs[] = {env, NULL};
	pid_t pid = h_spawn(argv, &(struct h_spawn){.out = logp, .env = envs});
	char buf[4096], v[512];
	note_want(&nt, "READY", "1", 10000, buf, sizeof(buf));
	double t0 = h_now_ms();
	for (;;) {
		int rem = (int)(t0 + 4000 - h_now_ms());
		const char *m = rem > 0 ? note_next(&nt, buf, sizeof(buf), rem) : NULL;
		ck_assert_msg(m != NULL, "no STATUS= saying 'no majority' within 4 s: %s", nt.all);
		if (note_var(m, "STATUS", v, sizeof(v)) &&
		    strstr(v, "; no majority of masters: LOCK answers ERR QUORUM"))
			break;
	}
	ck_assert_msg(strncmp(v, "masters up 1/3, counting ", 25) == 0, "STATUS=%s", v);
	ck_assert(kill(pid, SIGTERM) == 0);
	int st = h_reap(pid, 5000);
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "lockd: %s",
	              h_status_str(st));
	close(nt.fd);
}
END_TEST

/* ------------------------------------------------------------------ systemd */

START_TEST(systemd_unit_verify)
{
	const char *sa = NULL;
	static const char *const cands[] = {"/usr/bin/systemd-analyze", "/bin/systemd-analyze",
	                                    "/usr/local/bin/systemd-analyze"};
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]) && !sa; i++)
		if (access(cands[i], X_OK) == 0)
			sa = cands[i];
	if (!sa) {
		fprintf(stderr, "systemd_unit_verify: skipped: systemd-analyze is not installed\n");
		return;
	}
	char src[PATH_MAX], unit[PATH_MAX];
	builddir_path("systemd/lockd.service", src, sizeof(src)); /* made from .in */
	char *text = h_slurp(src);
	ck_assert_msg(text != NULL, "%s: %s", src, strerror(errno));
	/* ExecStart= points at /bin/true: verify checks that it exists */
	const char *p = strstr(text, "\nExecStart=");
	ck_assert_msg(p != NULL, "%s has no ExecStart=", src);
	const char *e = strchr(p + 1, '\n');
	ck_assert(e != NULL);
	size_t a = (size_t)(p - text) + 1;
	char *copy = malloc(strlen(text) + 32);
	ck_assert(copy != NULL);
	sprintf(copy, "%.*sExecStart=/bin/true%s", (int)a, text, e);
	ck_assert_msg(strstr(e, "\nExecStart=") == NULL, "%s: more than one ExecStart=", src);
	snprintf(unit, sizeof(unit), "%s/lockd.service", h_dir());
	h_put_file(unit, copy);

	/* Documentation=man:... must resolve: a MANPATH with the built pages */
	static const char *const pages[][2] = {{"man/lockd.8", "man8"},
	                                       {"man/lockd.conf.5", "man5"},
	                                       {"man/lockd-protocol.7", "man7"}};
	char mandir[PATH_MAX];
	snprintf(mandir, sizeof(mandir), "%s/man", h_dir());
	ck_assert(mkdir(mandir, 0755) == 0);
	for (size_t i = 0; i < 3; i++) {
		char from[PATH_MAX], sect[PATH_MAX + 16], to[PATH_MAX + 64];
		builddir_path(pages[i][0], from, sizeof(from));
		char *page = h_slurp(from);
		ck_assert_msg(page != NULL, "%s is missing (build it first)", from);
		snprintf(sect, sizeof(sect), "%s/%s", mandir, pages[i][1]);
		mkdir(sect, 0755);
		snprintf(to, sizeof(to), "%s/%s", sect, strrchr(pages[i][0], '/') + 1);
		h_put_file(to, page);
		free(page);
	}
	char env[PATH_MAX + 16];
	snprintf(env, sizeof(env), "MANPATH=%s", mandir);
	char *argv[] = {(char *)sa, "verify", unit, NULL};
	char *out, *err;
	const char *const envs[] = {env, NULL};
	int st = h_run(argv, &(struct h_spawn){.dir = h_dir(), .env = envs}, 10000, &out, &err);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "systemd-analyze verify: %s\n%s%s",
	              h_status_str(st), out, err);
	/* warnings do not change the exit status: none may name the unit */
	ck_assert_msg(strstr(out, "lockd.service") == NULL && strstr(err, "lockd.service") == NULL,
	              "systemd-analyze verify warns about the unit:\n%s%s", out, err);
	free(out);
	free(err);
	free(copy);
	free(text);
}
END_TEST

/* Adds these tests to tc_service()'s group (its fixture and timeout). */
void tc_service_add_systemd(TCase *tc)
{
	H_ADD(tc, sd_notify);
	H_ADD(tc, systemd_unit_verify);
	H_ADD(tc, sd_notify_no_majority);
}
