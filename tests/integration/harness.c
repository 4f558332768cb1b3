/* harness: see harness.h. This file: the run, the fixture, the processes a
 * test starts, the redis masters and lockd. The lockd line client is in
 * harness_client.c, sockets and the RESP client in harness_net.c, files
 * and logs in harness_files.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "lockd/client.h"

#define READY_TRIES 200 /* x 25 ms */
#define PORT_TRIES  5

#define MAX_PROCS 64 /* processes of h_spawn() alive at once */
#define MAX_BUILT 4  /* programs h_built() knows */

static char run_dir[256];
static char redis_bin[PATH_MAX];
static pid_t main_pid;

static struct {
	pid_t owner; /* the process that runs the test */
	int active;
	char dir[320];
	int nm;
	struct h_master m[H_MAX_MASTERS];
	int nl;
	struct h_lockd l[H_MAX_LOCKDS];
	int used_ports[64];
	int nused;
	pid_t procs[MAX_PROCS]; /* h_spawn()'s, not reaped yet (0: a free slot) */
} H;

/* ------------------------------------------------------------------ time */

double h_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

void h_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

const char *h_esc(const void *p, size_t n)
{
	const char *s = p;
	static char bufs[4][512];
	static int k;
	char *b = bufs[k++ & 3];
	size_t o = 0;
	for (size_t i = 0; i < n && o < sizeof(bufs[0]) - 8; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '\\')
			o += (size_t)snprintf(b + o, 8, "\\\\");
		else if (ch == '\r')
			o += (size_t)snprintf(b + o, 8, "\\r");
		else if (ch == '\n')
			o += (size_t)snprintf(b + o, 8, "\\n");
		else if (ch == '\t')
			o += (size_t)snprintf(b + o, 8, "\\t");
		else if (ch < 0x20 || ch > 0x7e)
			o += (size_t)snprintf(b + o, 8, "\\x%02x", ch);
		else
			b[o++] = (char)ch;
	}
	if (o >= sizeof(bufs[0]) - 8)
		o += (size_t)snprintf(b + o, 8, "...");
	b[o] = '\0';
	return b;
}
#define ESC(s) h_esc((s), strlen(s))

/* ------------------------------------------------------------------ run */

static int find_in_path(const char *name, char *out, size_t outlen)
{
	if (strchr(name, '/')) {
		if (access(name, X_OK) != 0)
			return -1;
		snprintf(out, outlen, "%s", name);
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	char *dup = strdup(path), *save = NULL;
	for (char *d = strtok_r(dup, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char cand[PATH_MAX];
		snprintf(cand, sizeof(cand), "%s/%s", *d ? d : ".", name);
		if (access(cand, X_OK) == 0) {
			snprintf(out, outlen, "%s", cand);
			free(dup);
			return 0;
		}
	}
	free(dup);
	return -1;
}

const char *h_redis_server(void)
{
	return redis_bin;
}

int h_run_init(void)
{
	main_pid = getpid();
	signal(SIGPIPE, SIG_IGN);
	const char *rs = getenv("REDIS_SERVER");
	if (!rs || !*rs)
		rs = "redis-server";
	if (find_in_path(rs, redis_bin, sizeof(redis_bin)) != 0)
		redis_bin[0] = '\0';

	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (strlen(tmp) > 40) {
		/* unix socket paths must stay short */
		tmp = "/tmp";
	}
	snprintf(run_dir, sizeof(run_dir), "%s/lockd-it.XXXXXX", tmp);
	if (!mkdtemp(run_dir)) {
		fprintf(stderr, "test_lockd: mkdtemp %s: %s\n", run_dir, strerror(errno));
		return -1;
	}
	return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	remove(p);
	return 0;
}

static void rm_rf(const char *dir)
{
	if (dir[0])
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void print_tail(const char *path, int lines)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	static char buf[1 << 16];
	fseek(f, 0, SEEK_END);
	long sz = ftell(f);
	long off = sz > (long)sizeof(buf) - 1 ? sz - (long)sizeof(buf) + 1 : 0;
	fseek(f, off, SEEK_SET);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = buf + n;
	int seen = 0;
	while (p > buf) {
		p--;
		if (*p == '\n' && p != buf + n - 1 && ++seen >= lines) {
			p++;
			break;
		}
	}
	fprintf(stderr, "---- tail of %s ----\n%s%s---- end ----\n", path, p,
	        n && buf[n - 1] != '\n' ? "\n" : "");
}

/* The tails of what the lockctl processes of the test in directory name
 * said (h_lockctl_spawn's lockctlK.err). */
static void print_errs(const char *name)
{
	char dir[PATH_MAX + 300];
	snprintf(dir, sizeof(dir), "%s/%s", run_dir, name);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (strncmp(e->d_name, "lockctl", 7) != 0 || n < 4 ||
		    strcmp(e->d_name + n - 4, ".err") != 0)
			continue;
		char p[2 * PATH_MAX + 600];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		print_tail(p, 15);
	}
	closedir(d);
}

void h_run_finish(int failed)
{
	if (!run_dir[0])
		return;
	DIR *d = opendir(run_dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			fprintf(stderr, "test_lockd: %s left its directory (failed or timed out)\n",
			        e->d_name);
			for (int i = 0; i < H_MAX_LOCKDS; i++) {
				char p[PATH_MAX + 300];
				snprintf(p, sizeof(p), "%s/%s/lockd%d.log", run_dir, e->d_name, i);
				print_tail(p, 25);
			}
			print_errs(e->d_name);
		}
		closedir(d);
	}
	const char *keep = getenv("LOCKD_TEST_KEEP");
	if (keep && *keep && strcmp(keep, "0") != 0)
		fprintf(stderr, "test_lockd: kept %s\n", run_dir);
	else
		rm_rf(run_dir);
}

int h_selected(const char *name)
{
	const char *sel = getenv("LOCKD_TEST");
	if (!sel || !*sel)
		return 1;
	size_t n = strlen(name);
	for (const char *p = sel; *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == n && strncmp(p, name, n) == 0)
			return 1;
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ processes */

static void close_fds_from(int lo)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)lo, ~0u, 0) == 0)
		return;
#endif
	long max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = lo; fd < max; fd++)
		close(fd);
}

/* fork/exec argv[0] as o says (see struct h_spawn); the child dies when
 * the test process dies. */
static pid_t spawn(char *const argv[], const struct h_spawn *o)
{
	int pin[2] = {-1, -1};
	if (o->in)
		ck_assert_msg(pipe2(pin, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		if (o->dir && chdir(o->dir) != 0)
			_exit(127);
		if (o->tty) {
			setsid();
			int t = open(o->tty, O_RDWR); /* our controlling terminal */
			if (t < 0)
				_exit(127);
			dup2(t, 0);
			dup2(t, 1);
			dup2(t, 2);
		} else {
			int in = o->in ? pin[0] : open("/dev/null", O_RDONLY);
			int out = open(o->out ? o->out : "/dev/null", O_WRONLY | O_CREAT | O_APPEND,
			               0644);
			int err = !o->err || strcmp(o->err, o->out ? o->out : "") == 0
			              ? out
			              : open(o->err, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (in < 0 || out < 0 || err < 0)
				_exit(127);
			dup2(in, 0);
			dup2(out, 1);
			dup2(err, 2);
		}
		close_fds_from(3);
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		/* What the tests signal arrives as it would for a user, not as
		 * the suite was started (nohup ignores SIGHUP, and an ignored
		 * signal never reaches lockctl's signalfd) */
		static const int sigs[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,
		                           SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM};
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			signal(sigs[i], SIG_DFL);
		if (o->nofile > 0) {
			struct rlimit rl = {(rlim_t)o->nofile, (rlim_t)o->nofile};
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		for (int i = 0; o->env && o->env[i]; i++) {
			char name[128];
			const char *eq = strchr(o->env[i], '=');
			if (!eq || (size_t)(eq - o->env[i]) >= sizeof(name))
				_exit(127);
			snprintf(name, sizeof(name), "%.*s", (int)(eq - o->env[i]), o->env[i]);
			if (eq[1])
				setenv(name, eq + 1, 1);
			else
				unsetenv(name);
		}
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (o->in) {
		close(pin[0]);
		size_t n = strlen(o->in);
		ck_assert_msg(write(pin[1], o->in, n) == (ssize_t)n, "write to stdin: %s",
		              strerror(errno));
		close(pin[1]);
	}
	return pid;
}

/* waitpid bounded in time; returns status or -1 on timeout. */
static int reap(pid_t pid, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	for (;;) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return st;
		if (r < 0 && errno != EINTR)
			return 0; /* not our child any more */
		if (h_now_ms() >= end)
			return -1;
		h_sleep_ms(2);
	}
}

static void kill_reap(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	reap(pid, 5000);
}

static void forget(pid_t pid)
{
	for (int i = 0; i < MAX_PROCS; i++)
		if (H.procs[i] == pid)
			H.procs[i] = 0;
}

pid_t h_spawn(char *const argv[], const struct h_spawn *o)
{
	static const struct h_spawn none;
	int slot = -1;
	for (int i = 0; i < MAX_PROCS && slot < 0; i++)
		if (H.procs[i] <= 0)
			slot = i;
	ck_assert_msg(slot >= 0, "more than %d processes of h_spawn() at once", MAX_PROCS);
	pid_t pid = spawn(argv, o ? o : &none);
	H.procs[slot] = pid;
	return pid;
}

int h_reap(pid_t pid, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	for (;;) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid) {
			forget(pid);
			return st;
		}
		ck_assert_msg(r == 0 || errno == EINTR, "waitpid %d: %s", (int)pid,
		              strerror(errno));
		if (h_now_ms() >= end)
			return -1;
		h_sleep_ms(2);
	}
}

void h_kill(pid_t pid)
{
	kill_reap(pid);
	forget(pid);
}

const char *h_status_str(int st)
{
	static char b[64];
	if (st == -1)
		snprintf(b, sizeof(b), "still running");
	else if (WIFEXITED(st))
		snprintf(b, sizeof(b), "exit %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(b, sizeof(b), "killed by signal %d", WTERMSIG(st));
	else
		snprintf(b, sizeof(b), "status 0x%x", st);
	return b;
}

int h_run(char *const argv[], const struct h_spawn *o, int timeout_ms, char **out, char **err)
{
	static int n;
	struct h_spawn so = o ? *o : (struct h_spawn){0};
	char ob[PATH_MAX], eb[PATH_MAX];
	n++;
	snprintf(ob, sizeof(ob), "%s/run%d.out", h_dir(), n);
	snprintf(eb, sizeof(eb), "%s/run%d.err", h_dir(), n);
	so.out = ob;
	so.err = eb;
	so.tty = NULL;
	pid_t pid = h_spawn(argv, &so);
	int st = h_reap(pid, timeout_ms);
	if (st == -1)
		h_kill(pid);
	char *o_text = h_slurp(ob), *e_text = h_slurp(eb);
	ck_assert_msg(st != -1, "%s did not end within %d ms; stderr: %s", argv[0], timeout_ms,
	              e_text ? e_text : "(none)");
	ck_assert_msg(o_text && e_text, "%s: output files missing", argv[0]);
	if (out)
		*out = o_text;
	else
		free(o_text);
	if (err)
		*err = e_text;
	else
		free(e_text);
	return st;
}

const char *h_built(const char *name)
{
	static struct {
		char name[32];
		char path[PATH_MAX];
	} known[MAX_BUILT];
	int i = 0;
	for (; i < MAX_BUILT && known[i].name[0]; i++)
		if (strcmp(known[i].name, name) == 0)
			break;
	ck_assert_msg(i < MAX_BUILT, "more than %d programs for h_built()", MAX_BUILT);
	if (!known[i].name[0]) {
		const char *bd = getenv("top_builddir");
		char rel[PATH_MAX];
		snprintf(rel, sizeof(rel), "%s/%s", bd && *bd ? bd : ".", name);
		if (!realpath(rel, known[i].path))
			snprintf(known[i].path, sizeof(known[i].path), "%s", rel);
		snprintf(known[i].name, sizeof(known[i].name), "%s", name);
	}
	ck_assert_msg(access(known[i].path, X_OK) == 0, "%s is missing (build it first)",
	              known[i].path);
	return known[i].path;
}

static void cleanup(int remove_dir)
{
	if (!H.active || getpid() != H.owner)
		return;
	for (int i = 0; i < MAX_PROCS; i++)
		if (H.procs[i] > 0) {
			kill_reap(H.procs[i]);
			H.procs[i] = 0;
		}
	for (int i = 0; i < H.nm; i++)
		if (H.m[i].pid > 0 && H.m[i].stopped) {
			kill(H.m[i].pid, SIGCONT);
			H.m[i].stopped = 0;
		}
	for (int i = 0; i < H.nl; i++)
		if (H.l[i].pid > 0)
			kill(H.l[i].pid, SIGTERM);
	for (int i = 0; i < H.nl; i++)
		if (H.l[i].pid > 0) {
			if (reap(H.l[i].pid, 3000) == -1)
				kill_reap(H.l[i].pid);
			H.l[i].pid = 0;
		}
	for (int i = 0; i < H.nm; i++) {
		kill_reap(H.m[i].pid);
		H.m[i].pid = 0;
		for (int k = 0; k < H_MASTER_EXTRA; k++) {
			free(H.m[i].extra[k]);
			H.m[i].extra[k] = NULL;
		}
	}
	if (remove_dir && H.dir[0]) {
		rm_rf(H.dir);
		H.dir[0] = '\0';
	}
	H.active = 0;
}

static void at_exit_cleanup(void)
{
	cleanup(0);
}

void h_setup(void)
{
	static pid_t registered;
	memset(&H, 0, sizeof(H));
	H.owner = getpid();
	H.active = 1;
	if (H.owner != main_pid) {
		/* forked test: die with the runner */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);
	}
	if (registered != H.owner) {
		atexit(at_exit_cleanup);
		registered = H.owner;
	}
}

void h_teardown(void)
{
	cleanup(1);
}

const char *h_dir(void)
{
	if (H.dir[0])
		return H.dir;
	char name[48];
	const char *tn = tcase_name();
	size_t o = 0;
	for (const char *p = tn ? tn : "test"; *p && o < 32; p++)
		name[o++] = (isalnum((unsigned char)*p) || *p == '_') ? *p : '_';
	name[o] = '\0';
	snprintf(H.dir, sizeof(H.dir), "%s/%s.XXXXXX", run_dir[0] ? run_dir : "/tmp", name);
	ck_assert_msg(mkdtemp(H.dir) != NULL, "mkdtemp %s: %s", H.dir, strerror(errno));
	return H.dir;
}

int h_free_port(void)
{
	for (int tries = 0; tries < 50; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ck_assert_msg(fd >= 0, "socket: %s", strerror(errno));
		struct sockaddr_in a = {0};
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a.sin_port = 0;
		socklen_t l = sizeof(a);
		ck_assert_msg(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind: %s",
		              strerror(errno));
		ck_assert(getsockname(fd, (struct sockaddr *)&a, &l) == 0);
		close(fd);
		int port = ntohs(a.sin_port);
		int dup = 0;
		for (int i = 0; i < H.nused; i++)
			dup |= H.used_ports[i] == port;
		if (dup)
			continue;
		if (H.nused < (int)(sizeof(H.used_ports) / sizeof(H.used_ports[0])))
			H.used_ports[H.nused++] = port;
		return port;
	}
	ck_abort_msg("no free port");
}

/* ------------------------------------------------------------------ masters */

int h_nmasters(void)
{
	return H.nm;
}

struct h_master *h_master(int i)
{
	ck_assert_msg(i >= 0 && i < H.nm, "no master %d", i);
	return &H.m[i];
}

/* Launch master i on port; 0 when it answers as our process, -1 when it
 * exited (port taken) or another process answers on the port. */
static int master_launch(int i, int port)
{
	char portbuf[16], logp[PATH_MAX + 32];
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	snprintf(logp, sizeof(logp), "%s/redis%d.log", h_dir(), i);
	char *argv[15 + H_MASTER_EXTRA + 1] = {
	    redis_bin, "--port",       portbuf, "--bind", "127.0.0.1",   "--save",
	    "",        "--appendonly", "no",    "--dir",  (char *)H.dir, "--daemonize",
	    "no",      "--logfile",    ""};
	for (int k = 0; k < H_MASTER_EXTRA && H.m[i].extra[k]; k++)
		argv[15 + k] = H.m[i].extra[k];
	pid_t pid = spawn(argv, &(struct h_spawn){.out = logp});
	H.m[i].port = port;
	H.m[i].pid = pid;
	H.m[i].stopped = 0;
	for (int t = 0; t < READY_TRIES; t++) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			H.m[i].pid = 0;
			return -1;
		}
		struct rconn *r = rc_open(port, 200);
		if (r) {
			char *pong = rc_cmd(r, "PING", NULL);
			char *info = pong && strcmp(pong, "PONG") == 0
			                 ? rc_cmd(r, "INFO", "server", NULL)
			                 : NULL;
			rc_close(r);
			free(pong);
			if (info) {
				const char *p = strstr(info, "process_id:");
				long owner = p ? strtol(p + 11, NULL, 10) : -1;
				free(info);
				if (owner == pid)
					return 0;
				/* someone else's server holds the port */
				kill_reap(pid);
				H.m[i].pid = 0;
				return -1;
			}
		}
		h_sleep_ms(25);
	}
	print_tail(logp, 20);
	kill_reap(pid);
	H.m[i].pid = 0;
	ck_abort_msg("redis-server on port %d not ready after %d ms", port, READY_TRIES * 25);
}

static void master_start_new(int i)
{
	for (int t = 0; t < PORT_TRIES; t++)
		if (master_launch(i, h_free_port()) == 0)
			return;
	char logp[PATH_MAX + 32];
	snprintf(logp, sizeof(logp), "%s/redis%d.log", h_dir(), i);
	print_tail(logp, 20);
	ck_abort_msg("redis-server %d did not start in %d tries", i, PORT_TRIES);
}

void h_masters_start(int n)
{
	ck_assert_msg(redis_bin[0], "no redis-server");
	ck_assert(H.nm + n <= H_MAX_MASTERS);
	for (int k = 0; k < n; k++) {
		int i = H.nm++;
		master_start_new(i);
	}
}

int h_master_add(void)
{
	h_masters_start(1);
	return H.nm - 1;
}

int h_master_add_args(const char *const *extra)
{
	ck_assert_msg(redis_bin[0], "no redis-server");
	ck_assert(H.nm < H_MAX_MASTERS);
	int i = H.nm++;
	for (int k = 0; extra[k]; k++) {
		ck_assert(k < H_MASTER_EXTRA);
		H.m[i].extra[k] = strdup(extra[k]);
	}
	master_start_new(i);
	return i;
}

void h_replicaof(int replica, int primary)
{
	/* Redis 7 waits 5 s before a diskless full sync by default, for more
	 * replicas to join it */
	char *ok = h_redis(primary, "CONFIG", "SET", "repl-diskless-sync-delay", "0", NULL);
	ck_assert_msg(ok && strcmp(ok, "OK") == 0, "CONFIG SET: %s", ok ? ok : "no reply");
	free(ok);
	char port[16];
	snprintf(port, sizeof(port), "%d", h_master(primary)->port);
	ok = h_redis(replica, "REPLICAOF", "127.0.0.1", port, NULL);
	ck_assert_msg(ok && strcmp(ok, "OK") == 0, "REPLICAOF: %s", ok ? ok : "no reply");
	free(ok);
	for (int t = 0;; t++) {
		char *ri = h_redis(replica, "INFO", "replication", NULL);
		char *pi = h_redis(primary, "INFO", "replication", NULL);
		int up =
		    ri && strstr(ri, "master_link_status:up") && pi && strstr(pi, "state=online");
		free(ri);
		free(pi);
		if (up)
			return;
		ck_assert_msg(t < 200, "master %d is not an online replica of master %d after 5 s",
		              replica, primary);
		h_sleep_ms(25);
	}
}

void h_master_kill(int i)
{
	struct h_master *m = h_master(i);
	kill_reap(m->pid);
	m->pid = 0;
	m->stopped = 0;
}

void h_master_stop(int i)
{
	struct h_master *m = h_master(i);
	ck_assert(m->pid > 0);
	kill(m->pid, SIGSTOP);
	m->stopped = 1;
}

void h_master_cont(int i)
{
	struct h_master *m = h_master(i);
	ck_assert(m->pid > 0);
	kill(m->pid, SIGCONT);
	m->stopped = 0;
}

void h_master_restart(int i)
{
	struct h_master *m = h_master(i);
	if (m->pid > 0)
		h_master_kill(i);
	/* the port was ours a moment ago: retry a little while it is freed */
	for (int t = 0; t < 40; t++) {
		if (master_launch(i, m->port) == 0)
			return;
		h_sleep_ms(50);
	}
	ck_abort_msg("could not restart master %d on port %d", i, m->port);
}

/* ------------------------------------------------------------------ lockd */

int h_nlockds(void)
{
	return H.nl;
}

struct h_lockd *h_lockd(int idx)
{
	ck_assert_msg(idx >= 0 && idx < H.nl, "no lockd %d", idx);
	return &H.l[idx];
}

int h_lockd_alive(int idx)
{
	struct h_lockd *l = h_lockd(idx);
	if (l->pid <= 0)
		return 0;
	int st;
	if (waitpid(l->pid, &st, WNOHANG) == l->pid) {
		l->pid = -st - 1; /* keep the status: exited */
		return 0;
	}
	return 1;
}

void h_lockd_log_tail(int idx, int lines)
{
	print_tail(h_lockd(idx)->log, lines);
}

void h_lockd_signal(int idx, int sig)
{
	struct h_lockd *l = h_lockd(idx);
	ck_assert_msg(l->pid > 0, "lockd %d is not running", idx);
	kill(l->pid, sig);
}

int h_lockd_wait(int idx, int timeout_ms)
{
	struct h_lockd *l = h_lockd(idx);
	if (l->pid < 0)
		return -l->pid - 1;
	if (l->pid == 0)
		return -1;
	int st = reap(l->pid, timeout_ms);
	if (st != -1)
		l->pid = 0;
	return st;
}

long h_lockd_reload(int idx, const char *text)
{
	struct h_lockd *l = h_lockd(idx);
	h_put_file(l->conf, text);
	long off = h_file_size(l->log);
	h_lockd_signal(idx, SIGHUP);
	return off;
}

int h_lockd_reloaded(int idx, long off)
{
	struct h_lockd *l = h_lockd(idx);
	ck_assert_msg(h_file_count(l->log, off, "reload failed", NULL) == 0,
	              "lockd %d refused the new configuration (see %s)", idx, l->log);
	return h_file_count(l->log, off, "reloaded", NULL) > 0;
}

void h_lockd_wait_reloaded(int idx, long off, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	for (int t = 0; t < 1000; t++) {
		if (h_lockd_reloaded(idx, off))
			return;
		if (h_now_ms() >= end)
			break;
		h_sleep_ms(10);
	}
	ck_abort_msg("lockd %d logged no 'reloaded' within %d ms of SIGHUP", idx, timeout_ms);
}

static void write_config(const struct h_opts *o, struct h_lockd *l)
{
	FILE *f = fopen(l->conf, "w");
	ck_assert_msg(f != NULL, "%s: %s", l->conf, strerror(errno));
	fprintf(f, "# written by test_lockd\n");
	fprintf(f, "listen: [\"127.0.0.1:%d\", \"unix:%s\"", l->port, l->sock);
	if (o->tls)
		fprintf(f, ", {address: \"127.0.0.1:%d\", tls: {%s}}", l->tls_port, o->tls);
	fprintf(f, "]\n");
	fprintf(f, "log_level: %s\n",
	        o->log_debug || getenv("LOCKD_TEST_DEBUG") ? "debug" : "info");
	if (o->password)
		fprintf(f, "password: \"%s\"\n", o->password);
	if (o->top_extra)
		fputs(o->top_extra, f);
	fprintf(f, "redis:\n  masters: [");
	int n = o->masters ? 0 : o->nmasters > 0 ? o->nmasters : H.nm;
	if (o->masters)
		fputs(o->masters, f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s\"127.0.0.1:%d\"", i ? ", " : "",
		        o->via && o->via[i] ? o->via[i] : H.m[i].port);
	fprintf(f, "]\n  timeout_ms: %d\n", o->timeout_ms > 0 ? o->timeout_ms : H_REDIS_TMO);
	if (o->redis_extra)
		fputs(o->redis_extra, f);
	fprintf(f, "locks:\n  lease_ms: %d\n", o->lease_ms > 0 ? o->lease_ms : 3000);
	if (o->locks_extra)
		fputs(o->locks_extra, f);
	if (o->limits)
		fprintf(f, "limits:\n%s", o->limits);
	fclose(f);
}

/* lockd answers PING at o's address (any reply will do). */
static int answers_ping(const struct lockd_opts *o)
{
	struct lockd_opts oo = *o;
	oo.connect_timeout_ms = 200;
	struct lockd_client *lc = NULL;
	const struct lockd_reply *r;
	int ok = lockd_connect(&oo, &lc) == LOCKD_OK && lockd_call(lc, "PING", 300, &r) == LOCKD_OK;
	lockd_close(lc);
	return ok;
}

/* Wait until lockd grants a lock (its masters are connected and count). */
static int wait_quorum(struct h_lockd *l, const struct h_opts *o)
{
	for (int t = 0; t < 400; t++) {
		struct lockd_opts lo = {.size = sizeof(struct lockd_opts),
		                        .unix_path = l->sock,
		                        .password = o->password,
		                        .connect_timeout_ms = 500};
		struct lockd_client *lc = NULL;
		const struct lockd_reply *r;
		int ok = lockd_connect(&lo, &lc) == LOCKD_OK &&
		         lockd_call(lc, "TRYLOCK ~", 1000, &r) == LOCKD_OK && r->kind == LOCKD_R_OK;
		if (ok)
			lockd_call(lc, "UNLOCK ~", 1000, &r);
		lockd_close(lc);
		if (ok)
			return 0;
		if (!h_lockd_alive((int)(l - H.l)))
			return -1;
		h_sleep_ms(25);
	}
	return -1;
}

int h_lockd_start(const struct h_opts *o)
{
	static const struct h_opts defaults;
	if (!o)
		o = &defaults;
	ck_assert(H.nl < H_MAX_LOCKDS);
	const char *bin = o->bin ? o->bin : h_built("lockd");
	int idx = H.nl++;
	struct h_lockd *l = &H.l[idx];
	snprintf(l->sock, sizeof(l->sock), "%s/l%d.sock", h_dir(), idx);
	snprintf(l->conf, sizeof(l->conf), "%s/lockd%d.yml", h_dir(), idx);
	snprintf(l->log, sizeof(l->log), "%s/lockd%d.log", h_dir(), idx);
	ck_assert_msg(strlen(l->sock) < 100, "socket path too long: %s", l->sock);
	for (int t = 0; t < PORT_TRIES; t++) {
		l->port = h_free_port();
		l->tls_port = o->tls ? h_free_port() : 0;
		unlink(l->sock);
		write_config(o, l);
		FILE *lf = fopen(l->log, "a");
		if (lf) {
			fprintf(lf, "==== test_lockd: start %d on port %d\n", t + 1, l->port);
			fclose(lf);
		}
		char *argv[] = {(char *)bin, "-c", l->conf, NULL};
		l->pid = spawn(argv, &(struct h_spawn){.out = l->log, .nofile = o->nofile});
		int up = 0;
		for (int k = 0; k < READY_TRIES; k++) {
			if (!h_lockd_alive(idx))
				break;
			if (answers_ping(&(struct lockd_opts){.size = sizeof(struct lockd_opts),
			                                      .unix_path = l->sock})) {
				up = 1;
				break;
			}
			h_sleep_ms(25);
		}
		if (up &&
		    answers_ping(&(struct lockd_opts){
		        .size = sizeof(struct lockd_opts), .host = "127.0.0.1", .port = l->port}) &&
		    h_lockd_alive(idx)) {
			if (!o->no_quorum_wait && wait_quorum(l, o) != 0) {
				h_lockd_log_tail(idx, 30);
				ck_abort_msg("lockd %d: no lock could be granted within 10 s", idx);
			}
			return idx;
		}
		if (h_lockd_alive(idx)) {
			h_lockd_log_tail(idx, 30);
			kill_reap(l->pid);
			l->pid = 0;
			ck_abort_msg("lockd %d (port %d) did not answer PING in time", idx,
			             l->port);
		}
		l->pid = 0;
	}
	h_lockd_log_tail(idx, 30);
	ck_abort_msg("lockd %d did not start (%d tries); config %s", idx, PORT_TRIES, l->conf);
}

int h_lockd_restart(int idx)
{
	struct h_lockd *l = h_lockd(idx);
	ck_assert_msg(!h_lockd_alive(idx), "lockd %d still runs: stop it first", idx);
	char *argv[] = {(char *)h_built("lockd"), "-c", l->conf, NULL};
	FILE *lf = fopen(l->log, "a");
	if (lf) {
		fprintf(lf, "==== test_lockd: restart on port %d\n", l->port);
		fclose(lf);
	}
	double t0 = h_now_ms();
	l->pid = spawn(argv, &(struct h_spawn){.out = l->log});
	for (int k = 0; k < READY_TRIES; k++) {
		if (!h_lockd_alive(idx))
			break;
		if (answers_ping(&(struct lockd_opts){
		        .size = sizeof(struct lockd_opts), .host = "127.0.0.1", .port = l->port})) {
			static const struct h_opts defaults;
			ck_assert_msg(wait_quorum(l, &defaults) == 0,
			              "lockd %d: no lock granted within 10 s of its restart", idx);
			return (int)(h_now_ms() - t0);
		}
		h_sleep_ms(10);
	}
	h_lockd_log_tail(idx, 30);
	ck_abort_msg("lockd %d did not answer on port %d after its restart", idx, l->port);
}

void h_std(const struct h_opts *o)
{
	h_masters_start(3);
	h_lockd_start(o);
}

/* ------------------------------------------------------------------ lockctl */

void h_lockctl_spawn(struct h_lockctl *p, const char *const *args)
{
	static int seq;
	static const char *const env[] = {"LOCKD_HOST=",     "LOCKD_PORT=",    "LOCKD_SOCKET=",
	                                  "LOCKD_PASSWORD=", "LOCKD_TLS=",     "LOCKD_CACERT=",
	                                  "LOCKD_CERT=",     "LOCKD_TLS_KEY=", NULL};
	const char *argv[32];
	int n = 0;
	argv[n++] = h_built("lockctl");
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	int k = seq++;
	snprintf(p->out, sizeof(p->out), "%s/lockctl%d.out", h_dir(), k);
	snprintf(p->err, sizeof(p->err), "%s/lockctl%d.err", h_dir(), k);
	struct h_spawn o = {.out = p->out, .err = p->err, .env = env};
	p->pid = h_spawn((char *const *)argv, &o);
}

int h_lockctl_wait(struct h_lockctl *p, int timeout_ms)
{
	int st = h_reap(p->pid, timeout_ms);
	if (st == -1)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
