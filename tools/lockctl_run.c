/* lockctl run: take a lock, run CMD in a process group of its own while
 * the session holds the lock, release it when CMD is done. `lockctl
 * elect` (lockctl_elect.c) runs here too, through lc_hold_run(): its hold
 * is a CAMPAIGN's (the leader's lock of the election's name, which HELD
 * lists and LOST ends like any lock's), released with RESIGN, and CMD
 * gets LOCKD_VALUE as well; every rule below holds for it unchanged.
 *
 * CMD never runs on without its lock. lockctl stops CMD's whole group
 * (SIGTERM, SIGCONT, then SIGKILL after the grace) when
 *  - lockd sends LOST for the key,
 *  - the connection to lockd breaks,
 *  - lockd no longer lists the lock in its HELD reply,
 *  - lockd is silent while the lease it last confirmed nears its end: a
 *    heartbeat (HELD) goes out every tenth of the lease (at most every
 *    second); each reply gives the lease left (ttl_ms), so "sent + ttl_ms,
 *    less 1 % and 2 ms" is a time before which the lock is surely held.
 *    At that time less the grace, with the last heartbeat unanswered,
 *    lockctl stops CMD, so that even the SIGKILL lands before the lease
 *    can lapse; at that time itself it stops CMD whatever lockd says.
 * A guard process (a child that keeps the session's socket) stops CMD's
 * group too if lockctl itself dies, before the session ends.
 *
 * The session is resumable (protocol 1.2): when the connection breaks
 * (a lockd restart, a lockd that died while another on the same masters
 * is listed in -h a,b), liblockd reconnects and resumes it, and CMD runs
 * on with the same fence. While no lockd has resumed the session, the
 * lease last confirmed counts as if lockd were silent: CMD is stopped
 * that grace before it ends. LOST (from lockd, or from liblockd when the
 * session cannot be resumed) stops CMD as before.
 *
 * One poll loop over the lockd socket and a signalfd (SIGCHLD, and the
 * signals forwarded to CMD's group); no work in signal handlers. lockctl
 * is a child subreaper, so it reaps CMD's orphans and can tell when the
 * group is gone. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lockctl_run.h"
#include "lockctl_util.h"

#define DEFAULT_GRACE_MS  LC_HOLD_DEFAULT_GRACE_MS
#define REPLY_SLACK_MS    5000 /* LOCK WAIT w: no reply within w + this is a dead lockd */
#define UNLOCK_TIMEOUT_MS 2000
#define GONE_WAIT_MS      5000 /* after SIGKILL, how long to wait for the group to vanish */
#define GROUP_POLL_MS     5    /* how often to look at a dying group */
#define HB_MIN_US         10000
#define HB_MAX_US         1000000
#define SILENT_MIN_US     200000

enum run_state {
	RS_LOCKING,   /* LOCK (or TRYLOCK) sent, no reply yet */
	RS_CHECKING,  /* granted; the first HELD tells the lease before CMD starts */
	RS_RUNNING,   /* CMD runs; heartbeats keep the lease's end known */
	RS_STOPPING,  /* the lock is in doubt or gone: CMD's group is being stopped */
	RS_DRAINING,  /* CMD exited; what is left of its group is being stopped */
	RS_RELEASING, /* the group is gone; UNLOCK sent */
	RS_DONE,      /* exit with R.exit */
};

enum tag {
	TAG_LOCK = 1,
	TAG_HELD,
	TAG_UNLOCK,
};

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

static struct {
	/* options (struct lc_hold) */
	const char *key;
	char **cmd;
	const char *value; /* elect: CAMPAIGN's value; NULL: run */
	long long wait_ms; /* -w; -1: none */
	int nowait;        /* -n */
	long long ttl_ms;  /* -t; 0: none */
	int nolock_exit;   /* -E */
	int64_t grace_us;  /* -k */
	int verbose;
	int shared;          /* --shared */
	long long permits;   /* --permits; 0: none */
	const char *release; /* "UNLOCK" (run) or "RESIGN" (elect) */

	enum run_state st;
	int exit;
	struct lockd_client *c;
	int conn_dead; /* the client failed: no more requests */
	int sfd;
	sigset_t oldmask;
	struct sigaction old_pipe, old_ttou, old_ttin;
	int fg; /* stdin is a terminal and we were its foreground group */

	uint64_t fence;
	pid_t pid;  /* CMD, leader of its group (0: not started) */
	int status; /* CMD's wait status, once reaped */
	int reaped;
	pid_t guard;  /* guard process (0: none) */
	int guard_fd; /* write end of the guard's pipe (-1: none) */

	int64_t t_lock;    /* LOCK sent */
	int64_t lease_end; /* the lock is surely held before this (0: unknown) */
	int64_t hb_every;  /* heartbeat interval */
	int64_t hb_sent;   /* the outstanding HELD went out then (0: none out) */
	int64_t hb_next;   /* next heartbeat due */
	int64_t t_lost;    /* LOST arrived (0: no LOST) */
	int64_t t_cause;   /* the reason to stop was seen */
	int64_t t_term;    /* SIGTERM sent to the group */
	int64_t t_kill;    /* SIGKILL due (STOPPING, DRAINING) */
	int64_t t_killed;  /* SIGKILL sent (0: not) */
	int64_t t_gone;    /* the group was seen gone */
	char why[512];     /* why CMD is being stopped */

	char *lockreq;   /* the LOCK or TRYLOCK request (sent again after a resume) */
	int lock_tmo;    /* its reply timeout */
	int64_t t_broke; /* the connection broke, no resume yet (0: none pending) */
	int guard_sock;  /* the socket the guard keeps (-1: none) */
	int tls;         /* the connection is TLS */
} R;

/* ------------------------------------------------------------ the group */

static int group_alive(void)
{
	if (R.pid <= 0)
		return 0;
	return kill(-R.pid, 0) == 0 || errno != ESRCH;
}

/* CMD's group has no process left (or never had one). */
static int group_gone(void)
{
	return R.pid <= 0 || !group_alive();
}

static void reap(void)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p <= 0)
			return;
		if (p == R.pid && !R.reaped) {
			R.status = st;
			R.reaped = 1;
		} else if (p == R.guard) {
			R.guard = 0;
		}
	}
}

static int cmd_exit_status(void)
{
	if (WIFEXITED(R.status))
		return WEXITSTATUS(R.status);
	if (WIFSIGNALED(R.status))
		return 128 + WTERMSIG(R.status);
	return LC_EXIT_OSERR;
}

/* Give the terminal back to our own group once CMD's is gone. */
static void take_terminal(void)
{
	if (R.fg) {
		tcsetpgrp(0, getpgrp());
		R.fg = 0;
	}
}

/* Start stopping CMD's group: SIGTERM (and SIGCONT, so that a stopped
 * process gets it), SIGKILL at t_kill. */
static void group_term(int64_t now)
{
	R.t_term = now;
	R.t_kill = now + R.grace_us;
	if (R.pid > 0) {
		kill(-R.pid, SIGTERM);
		kill(-R.pid, SIGCONT);
	}
}

static void stop_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void stop_cmd(const char *fmt, ...)
{
	if (R.st == RS_STOPPING || R.st == RS_DONE || R.st == RS_RELEASING)
		return;
	int64_t now = lc_now_us();
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(R.why, sizeof(R.why), fmt, ap);
	va_end(ap);
	R.t_cause = now;
	if (R.st == RS_DRAINING) {
		/* CMD is done; its leftovers ran on without the lock: no more grace */
		R.t_kill = now;
	} else {
		group_term(now);
	}
	R.st = RS_STOPPING;
}

/* ------------------------------------------------------------ the guard */

/* The guard: a child in lockctl's group, with the session's socket and
 * the read end of a pipe. It gets CMD's group id, then either "done"
 * (lockctl finished: exit) or EOF (lockctl died: stop the group first;
 * the session, and the lock, end when the guard exits). */
/* The session's socket as the guard has it: QUIT ends the session at
 * once (a resumable session would otherwise be kept for its grace). */
static void guard_quit(void)
{
	if (R.guard_sock >= 0 && !R.tls)
		(void)!send(R.guard_sock, "QUIT\n", 5, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void guard_main(int rfd, int64_t grace_us)
{
	pid_t pg = 0;
	char b[sizeof(pid_t)];
	for (int i = 0; i < (int)(sizeof(forwarded) / sizeof(forwarded[0])); i++)
		signal(forwarded[i], SIG_IGN);
	for (;;) {
		ssize_t k = read(rfd, b, sizeof(b));
		if (k < 0 && errno == EINTR)
			continue;
		if (k == (ssize_t)sizeof(pid_t)) {
			memcpy(&pg, b, sizeof(pg));
			if (pg == 0)
				_exit(0); /* done */
			continue;
		}
		break; /* EOF: lockctl is gone */
	}
	if (pg <= 0 || kill(-pg, 0) != 0) {
		guard_quit();
		_exit(0);
	}
	fprintf(stderr, "%s: lockctl died; stopping CMD's process group %d\n", lc_prog, (int)pg);
	kill(-pg, SIGTERM);
	kill(-pg, SIGCONT);
	int64_t end = lc_now_us() + grace_us;
	while (lc_now_us() < end && kill(-pg, 0) == 0)
		usleep(GROUP_POLL_MS * 1000);
	kill(-pg, SIGKILL);
	guard_quit();
	_exit(0);
}

static void guard_send(pid_t v)
{
	if (R.guard_fd < 0)
		return;
	ssize_t k;
	do
		k = write(R.guard_fd, &v, sizeof(v));
	while (k < 0 && errno == EINTR);
}

static int guard_start(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	fflush(NULL);
	pid_t g = fork();
	if (g < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (g == 0) {
		close(p[1]);
		close(R.sfd);
		R.guard_sock = lockd_fd(R.c);
		sigprocmask(SIG_SETMASK, &R.oldmask, NULL);
		guard_main(p[0], R.grace_us);
	}
	close(p[0]);
	R.guard = g;
	R.guard_fd = p[1];
	return 0;
}

static void guard_finish(void)
{
	if (R.guard_fd < 0)
		return;
	guard_send(0);
	close(R.guard_fd);
	R.guard_fd = -1;
	for (int i = 0; i < 200 && R.guard; i++) {
		reap();
		if (R.guard)
			usleep(1000);
	}
}

/* ------------------------------------------------------------ CMD */

static int start_cmd(void)
{
	char fence[24];
	snprintf(fence, sizeof(fence), "%llu", (unsigned long long)R.fence);
	R.fg = isatty(0) && tcgetpgrp(0) == getpgrp();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		lc_err("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		if (R.fg)
			tcsetpgrp(0, getpid()); /* SIGTTOU is ignored here */
		sigaction(SIGPIPE, &R.old_pipe, NULL);
		sigaction(SIGTTOU, &R.old_ttou, NULL);
		sigaction(SIGTTIN, &R.old_ttin, NULL);
		sigprocmask(SIG_SETMASK, &R.oldmask, NULL);
		setenv("LOCKD_KEY", R.key, 1);
		setenv("LOCKD_FENCE", fence, 1);
		if (R.value)
			setenv("LOCKD_VALUE", R.value, 1);
		execvp(R.cmd[0], R.cmd);
		int e = errno;
		fprintf(stderr, "%s: %s: %s\n", lc_prog, R.cmd[0], strerror(e));
		_exit(e == ENOENT ? LC_EXIT_NOT_FOUND : LC_EXIT_CANNOT_EXEC);
	}
	setpgid(pid, pid); /* also here: no race with the child */
	if (R.fg)
		tcsetpgrp(0, pid);
	R.pid = pid;
	guard_send(pid);
	return 0;
}

/* ------------------------------------------------------------ lockd */

static void send_or_dead(const char *what, int rc)
{
	if (rc == LOCKD_OK || R.conn_dead)
		return;
	R.conn_dead = 1;
	if (R.st == RS_LOCKING || R.st == RS_CHECKING) {
		lc_err("%s: %s", what, lockd_error(R.c));
		R.exit = lc_conn_exit(rc);
		R.st = RS_DONE;
		return;
	}
	stop_cmd("%s: %s", what, lockd_error(R.c));
}

static void heartbeat(int64_t now)
{
	if (R.conn_dead || R.hb_sent || now < R.hb_next)
		return;
	R.hb_sent = now;
	R.hb_next = now + R.hb_every;
	send_or_dead("heartbeat", lockd_send(R.c, "HELD", -1, (void *)TAG_HELD));
}

/* Our line in a HELD reply: "KEY key fence holds ttl_ms ...". */
static int find_ttl(const struct lockd_reply *r, long long *ttl)
{
	size_t kl = strlen(R.key);
	for (size_t i = 0; i < r->nlines; i++) {
		const char *l = r->lines[i];
		if (strncmp(l, "KEY ", 4) != 0 || strncmp(l + 4, R.key, kl) != 0 ||
		    l[4 + kl] != ' ')
			continue;
		unsigned long long fence, holds;
		long long t;
		if (sscanf(l + 5 + kl, "%llu %llu %lld", &fence, &holds, &t) != 3)
			continue;
		if (fence != R.fence)
			return -1;
		*ttl = t;
		return 0;
	}
	return -1;
}

static void on_held(const struct lockd_reply *r, int64_t now)
{
	int64_t sent = R.hb_sent;
	long long ttl;
	R.hb_sent = 0;
	if (r->kind != LOCKD_R_LIST || find_ttl(r, &ttl) != 0) {
		if (R.st == RS_CHECKING) {
			lc_err("%s: granted, then no longer held (\"%s\"): CMD not started", R.key,
			       r->line);
			R.exit = R.nolock_exit;
			R.st = RS_DONE;
			return;
		}
		stop_cmd("lockd no longer lists %s as held by this session (\"%s\")", R.key,
		         r->line);
		return;
	}
	int64_t ttl_us = (int64_t)ttl * 1000;
	R.lease_end = sent + ttl_us - ttl_us / 100 - 2000;
	if (R.st == RS_CHECKING) {
		R.hb_every = ttl_us / 10;
		if (R.hb_every < HB_MIN_US)
			R.hb_every = HB_MIN_US;
		if (R.hb_every > HB_MAX_US)
			R.hb_every = HB_MAX_US;
		R.hb_next = now + R.hb_every;
		if (R.grace_us >= ttl_us)
			lc_err("warning: the grace (-k %lld) is not shorter than the lease left "
			       "(%lld ms): CMD is stopped as soon as lockd is silent",
			       (long long)(R.grace_us / 1000), ttl);
		if (R.verbose)
			lc_err("%s: locked, fence %llu, lease left %lld ms: running %s", R.key,
			       (unsigned long long)R.fence, ttl, R.cmd[0]);
		if (guard_start() != 0)
			lc_err("warning: no guard process (%s): if lockctl is killed, CMD runs "
			       "on",
			       strerror(errno));
		if (start_cmd() != 0) {
			R.exit = LC_EXIT_OSERR;
			R.st = RS_DONE;
			return;
		}
		R.st = RS_RUNNING;
	}
}

static void on_lock(const struct lockd_reply *r, int64_t now)
{
	if (r->kind == LOCKD_R_OK && r->has_num) {
		R.fence = r->num;
		R.st = RS_CHECKING;
		R.hb_sent = now;
		send_or_dead("HELD", lockd_send(R.c, "HELD", -1, (void *)TAG_HELD));
		return;
	}
	R.st = RS_DONE;
	if (r->kind == LOCKD_R_BUSY || r->kind == LOCKD_R_TIMEOUT) {
		if (R.verbose)
			lc_err("%s: not locked (%s) after %lld ms", R.key, r->line,
			       (long long)((now - R.t_lock) / 1000));
		R.exit = R.nolock_exit;
		return;
	}
	lc_err("%s: %s", R.key, r->line);
	if (r->kind == LOCKD_R_ERR &&
	    (strcmp(r->code, "QUORUM") == 0 || strcmp(r->code, "SHUTDOWN") == 0 ||
	     strcmp(r->code, "LIMIT") == 0))
		R.exit = R.nolock_exit;
	else
		R.exit = r->kind == LOCKD_R_ERR ? LC_EXIT_REFUSED : LC_EXIT_PROTOCOL;
}

/* The reply liblockd gives a request whose connection broke before its
 * reply came (the session was resumed since). */
static int disconnected(const struct lockd_reply *r)
{
	return r->kind == LOCKD_R_ERR && strcmp(r->code, "DISCONNECTED") == 0;
}

static void on_reply(struct lockd_client *c, const struct lockd_reply *r, void *tag, void *arg)
{
	int64_t now = lc_now_us();
	if (disconnected(r)) {
		switch ((enum tag)(intptr_t)tag) {
		case TAG_LOCK:
			/* a waiting LOCK is not resumed: ask again (granted already,
			   it answers the same fence, one hold more: UNLOCK and the
			   QUIT at the end release it all) */
			send_or_dead("LOCK",
			             lockd_send(c, R.lockreq, R.lock_tmo, (void *)TAG_LOCK));
			return;
		case TAG_HELD:
			R.hb_sent = 0;
			R.hb_next = now;
			if (R.st == RS_CHECKING) {
				R.hb_sent = now;
				send_or_dead("HELD", lockd_send(c, "HELD", -1, (void *)TAG_HELD));
			}
			return;
		case TAG_UNLOCK:
			R.st = RS_DONE; /* the QUIT of lockd_close() ends the session */
			return;
		}
	}
	switch ((enum tag)(intptr_t)tag) {
	case TAG_LOCK:
		on_lock(r, now);
		break;
	case TAG_HELD:
		if (R.st == RS_CHECKING || R.st == RS_RUNNING || R.st == RS_DRAINING)
			on_held(r, now);
		else
			R.hb_sent = 0;
		break;
	case TAG_UNLOCK:
		if (!(r->kind == LOCKD_R_OK) && !R.t_lost)
			lc_err("%s: %s: %s", R.key, R.release, r->line);
		R.st = RS_DONE;
		break;
	}
}

static void on_event(struct lockd_client *c, const struct lockd_event *ev, void *arg)
{
	int64_t now = lc_now_us();
	if (strcmp(ev->name, "RESUMING") == 0) {
		R.t_broke = now;
		if (R.verbose)
			lc_err("connection to lockd lost (%s): resuming session %s",
			       ev->line + strlen("RESUMING "), lockd_session_id(c));
		return;
	}
	if (strcmp(ev->name, "RESUMED") == 0) {
		if (R.verbose)
			lc_err("session %s resumed on %s (%llu held) %.1f ms after the connection "
			       "broke",
			       lockd_session_id(c), ev->key, (unsigned long long)ev->fence,
			       R.t_broke ? (now - R.t_broke) / 1000.0 : 0.0);
		R.t_broke = 0;
		if (!R.hb_sent)
			R.hb_next = now; /* confirm the lease at once */
		return;
	}
	if (strcmp(ev->name, "LOST") != 0 || strcmp(ev->key, R.key) != 0 ||
	    (ev->fence && R.fence && ev->fence != R.fence))
		return;
	if (!R.t_lost)
		R.t_lost = now;
	switch (R.st) {
	case RS_LOCKING:
		break; /* a lock of an earlier grant: not ours */
	case RS_CHECKING:
		lc_err("%s: granted, then lost (%s): CMD not started", R.key, ev->line);
		R.exit = R.nolock_exit;
		R.st = RS_DONE;
		break;
	default:
		stop_cmd("lock lost (%s)", ev->line);
	}
}

/* ------------------------------------------------------------ the loop */

static int64_t silent_us(void)
{
	return 2 * R.hb_every > SILENT_MIN_US ? 2 * R.hb_every : SILENT_MIN_US;
}

/* d lowered to t when t is still to come (0: nothing due). */
static int64_t due_at(int64_t d, int64_t t, int64_t now)
{
	if (t <= now)
		return d;
	return !d || t < d ? t : d;
}

/* Time checks: heartbeats, lease deadlines, SIGKILL, the group's end. */
static void tick(int64_t now)
{
	reap();
	if (R.st == RS_RUNNING || R.st == RS_DRAINING) {
		heartbeat(now);
		int silent = R.hb_sent && now - R.hb_sent > silent_us();
		if (now >= R.lease_end)
			stop_cmd("the lease lockd last confirmed ended without a word from it");
		else if (R.t_broke && now >= R.lease_end - R.grace_us)
			stop_cmd("no lockd resumed the session within %lld ms of the connection's "
			         "end (%s), and the lease it confirmed ends in %lld ms",
			         (long long)((now - R.t_broke) / 1000),
			         lockd_error(R.c)[0] ? lockd_error(R.c) : "still trying",
			         (long long)((R.lease_end - now) / 1000));
		else if (silent && now >= R.lease_end - R.grace_us)
			stop_cmd("lockd silent for %lld ms, the lease it confirmed ends in %lld ms",
			         (long long)((now - R.hb_sent) / 1000),
			         (long long)((R.lease_end - now) / 1000));
	}
	if (R.st == RS_RUNNING && R.reaped) {
		if (!group_gone()) {
			R.st = RS_DRAINING;
			if (R.verbose)
				lc_err("%s exited; stopping what is left of its process group",
				       R.cmd[0]);
			group_term(now);
		} else {
			R.t_gone = now;
		}
	}
	if (R.st == RS_STOPPING || R.st == RS_DRAINING) {
		if (!R.t_killed && now >= R.t_kill && !group_gone()) {
			kill(-R.pid, SIGKILL);
			R.t_killed = now;
		}
		if (group_gone()) {
			reap(); /* the leader's status, if it came with the group's end */
			R.t_gone = now;
		} else if (R.t_killed && now - R.t_killed > (int64_t)GONE_WAIT_MS * 1000 &&
		           !R.t_gone) {
			lc_err("CMD's process group %d is still there %d ms after SIGKILL",
			       (int)R.pid, GONE_WAIT_MS);
			R.t_gone = now;
		}
	}
	if (!R.t_gone)
		return;
	if (R.st == RS_STOPPING) {
		take_terminal();
		double after = (R.t_gone - (R.t_lost ? R.t_lost : R.t_cause)) / 1000.0;
		lc_err("%s: %s: CMD's process group %d stopped (%s), gone %.1f ms after %s", R.key,
		       R.why, (int)R.pid, R.t_killed ? "SIGTERM, then SIGKILL" : "SIGTERM", after,
		       R.t_lost ? "LOST" : "that");
		R.exit = LC_EXIT_LOST;
		R.st = RS_DONE;
	} else if (R.st == RS_RUNNING || R.st == RS_DRAINING) {
		take_terminal();
		R.exit = cmd_exit_status();
		if (R.conn_dead) {
			R.st = RS_DONE;
		} else {
			R.st = RS_RELEASING;
			int rc = lockd_sendf(R.c, UNLOCK_TIMEOUT_MS, (void *)TAG_UNLOCK, "%s %s",
			                     R.release, R.key);
			if (rc != LOCKD_OK)
				R.st = RS_DONE;
		}
	}
}

/* When tick() has something to do next (0: nothing). */
static int64_t next_due(int64_t now)
{
	int64_t d = 0;
	if (R.st == RS_RUNNING || R.st == RS_DRAINING) {
		if (!R.hb_sent)
			d = due_at(d, R.hb_next, now);
		d = due_at(d, R.lease_end - R.grace_us, now);
		d = due_at(d, R.lease_end, now);
		if (R.hb_sent)
			d = due_at(d, R.hb_sent + silent_us() + 1000, now);
	}
	if (R.st == RS_STOPPING || R.st == RS_DRAINING || (R.st == RS_RUNNING && R.reaped))
		d = due_at(d, now + GROUP_POLL_MS * 1000, now);
	if ((R.st == RS_STOPPING || R.st == RS_DRAINING) && !R.t_killed)
		d = due_at(d, R.t_kill, now);
	return d;
}

static void on_signal(const struct signalfd_siginfo *si)
{
	int sig = (int)si->ssi_signo;
	if (sig == SIGCHLD) {
		reap();
		return;
	}
	if (R.st == RS_LOCKING || R.st == RS_CHECKING) {
		if (R.verbose)
			lc_err("%s: signal %d before CMD started: giving up", R.key, sig);
		R.exit = 128 + sig;
		R.st = RS_DONE;
		return;
	}
	if (R.pid > 0 && group_alive())
		kill(-R.pid, sig);
}

static int loop(void)
{
	while (R.st != RS_DONE) {
		int64_t now = lc_now_us();
		tick(now);
		if (R.st == RS_DONE)
			break;
		int64_t due = next_due(now);
		int t = R.conn_dead ? -1 : lockd_timeout_ms(R.c);
		if (due) {
			int64_t ms = (due - now + 999) / 1000;
			if (ms < 0)
				ms = 0;
			if (t < 0 || ms < t)
				t = (int)ms;
		}
		struct pollfd pf[2] = {
		    {R.sfd, POLLIN, 0},
		    {R.conn_dead ? -1 : lockd_fd(R.c), R.conn_dead ? 0 : lockd_want(R.c), 0},
		};
		if (poll(pf, 2, t) < 0 && errno != EINTR) {
			lc_err("poll: %s", strerror(errno));
			stop_cmd("poll failed");
		}
		if (pf[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(R.sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				on_signal(&si);
		}
		if (!R.conn_dead) {
			int rc = lockd_step(R.c);
			if (rc != LOCKD_OK) {
				R.conn_dead = 1;
				switch (R.st) {
				case RS_LOCKING:
				case RS_CHECKING:
					lc_err("%s", lockd_error(R.c));
					R.exit = lc_conn_exit(rc);
					R.st = RS_DONE;
					break;
				case RS_RELEASING:
					lc_err("%s %s: %s", R.release, R.key, lockd_error(R.c));
					R.st = RS_DONE;
					break;
				default:
					stop_cmd("connection to lockd lost: %s", lockd_error(R.c));
				}
			}
		}
	}
	return R.exit;
}

/* ------------------------------------------------------------ setup */

static int run_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: run: ", lc_prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nusage: lockctl [options] run [-w ms | -n] [-t ttl_ms] [--shared | "
	                "--permits n] [-E code] [-k grace_ms] [-v] KEY -- CMD [ARGS...]\n");
	return LC_EXIT_USAGE;
}

static int parse(int argc, char **argv, struct lc_hold *h)
{
	/* The kind of hold (protocol 1.1): LOCK KEY SHARED, LOCK KEY PERMITS n. */
	static const struct option longs[] = {
	    {"shared", no_argument, NULL, 'S'},
	    {"permits", required_argument, NULL, 'P'},
	    {NULL, 0, NULL, 0},
	};
	int opt;
	memset(h, 0, sizeof(*h));
	h->wait_ms = -1;
	h->nolock_exit = LC_EXIT_NOLOCK;
	h->grace_us = (int64_t)DEFAULT_GRACE_MS * 1000;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:w:nt:E:k:v", longs, NULL)) != -1) {
		long long v;
		switch (opt) {
		case 'w':
			h->wait_ms = lc_number(optarg, 0, 0x7fffffff);
			if (h->wait_ms < 0)
				return run_usage("-w %s: want milliseconds, 0 to 2147483647",
				                 optarg);
			break;
		case 'n':
			h->nowait = 1;
			break;
		case 't':
			h->ttl_ms = lc_number(optarg, 1, 0x7fffffff);
			if (h->ttl_ms < 0)
				return run_usage("-t %s: want milliseconds, 1 to 2147483647",
				                 optarg);
			break;
		case 'E':
			v = lc_number(optarg, 0, 255);
			if (v < 0)
				return run_usage("-E %s: want an exit status, 0 to 255", optarg);
			h->nolock_exit = (int)v;
			break;
		case 'k':
			v = lc_number(optarg, 0, 0x7fffffff);
			if (v < 0)
				return run_usage("-k %s: want milliseconds, 0 to 2147483647",
				                 optarg);
			h->grace_us = v * 1000;
			break;
		case 'v':
			h->verbose = 1;
			break;
		case 'S':
			h->shared = 1;
			break;
		case 'P':
			h->permits = lc_number(optarg, 1, 65536);
			if (h->permits < 0)
				return run_usage("--permits %s: want a number, 1 to 65536", optarg);
			break;
		case ':':
			return run_usage("option -%c needs a value", (char[]){(char)optopt, 0});
		default:
			return run_usage("unknown option %s", argv[optind - 1]);
		}
	}
	if (h->nowait && h->wait_ms >= 0)
		return run_usage("-n and -w exclude each other%s", "");
	if (h->shared && h->permits)
		return run_usage("--shared and --permits exclude each other%s", "");
	if (optind >= argc)
		return run_usage("no KEY%s", "");
	h->key = argv[optind++];
	if (!*h->key)
		return run_usage("the KEY is empty%s", "");
	for (const char *p = h->key; *p; p++)
		if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
			return run_usage("KEY \"%s\": want printable ASCII without blanks", h->key);
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	if (optind >= argc)
		return run_usage("no CMD to run%s", "");
	h->cmd = argv + optind;
	return 0;
}

static int setup_signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&set, forwarded[i]);
	if (sigprocmask(SIG_BLOCK, &set, &R.oldmask) != 0)
		return -1;
	R.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (R.sfd < 0)
		return -1;
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &R.old_pipe);
	sigaction(SIGTTOU, &ign, &R.old_ttou);
	sigaction(SIGTTIN, &ign, &R.old_ttin);
	/* orphans of CMD's group come to us: we reap them and see the group end */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		return -1;
	return 0;
}

int lc_run(const struct lc_conn *conn, int argc, char **argv)
{
	struct lc_hold h;
	int rc = parse(argc, argv, &h);
	if (rc != 0)
		return rc;
	return lc_hold_run(conn, &h);
}

int lc_hold_run(const struct lc_conn *conn, const struct lc_hold *h)
{
	int rc;
	R.key = h->key;
	R.cmd = h->cmd;
	R.value = h->value;
	R.wait_ms = h->wait_ms;
	R.nowait = h->nowait;
	R.ttl_ms = h->ttl_ms;
	R.nolock_exit = h->nolock_exit;
	R.grace_us = h->grace_us;
	R.verbose = h->verbose | conn->verbose;
	R.shared = h->shared;
	R.permits = h->permits;
	R.release = h->value ? "RESIGN" : "UNLOCK";
	R.guard_fd = -1;
	R.sfd = -1;
	if (setup_signals() != 0) {
		lc_err("signals: %s", strerror(errno));
		return LC_EXIT_OSERR;
	}
	struct lockd_opts o = conn->o;
	o.resume = 1;
	R.tls = o.tls;
	R.guard_sock = -1;
	rc = lockd_connect(&o, &R.c);
	if (rc != LOCKD_OK) {
		lc_err("%s", R.c ? lockd_error(R.c) : lockd_strerror(rc));
		lockd_close(R.c);
		close(R.sfd);
		return rc == LOCKD_EAUTH ? LC_EXIT_REFUSED : lc_conn_exit(rc);
	}
	lockd_set_callbacks(R.c, on_reply, on_event, NULL);

	char ttl[64] = "";
	if (R.shared)
		snprintf(ttl, sizeof(ttl), " SHARED");
	else if (R.permits)
		snprintf(ttl, sizeof(ttl), " PERMITS %lld", R.permits);
	if (R.ttl_ms)
		snprintf(ttl + strlen(ttl), sizeof(ttl) - strlen(ttl), " TTL %lld", R.ttl_ms);
	R.t_lock = lc_now_us();
	if (R.verbose)
		lc_err("session %s on %s", lockd_session_id(R.c), lockd_peer(R.c));
	int n;
	if (R.value) {
		/* a leader's hold: CAMPAIGN waits in the election's FIFO as LOCK
		   does; sent again after a resume, a leader's CAMPAIGN answers
		   its own fence (one hold) */
		R.lock_tmo = R.wait_ms >= 0 ? (int)(R.wait_ms + REPLY_SLACK_MS) : -1;
		if (R.wait_ms >= 0)
			n = asprintf(&R.lockreq, "CAMPAIGN %s %s WAIT %lld", R.key, R.value,
			             R.wait_ms);
		else
			n = asprintf(&R.lockreq, "CAMPAIGN %s %s", R.key, R.value);
	} else if (R.nowait) {
		R.lock_tmo = REPLY_SLACK_MS;
		n = asprintf(&R.lockreq, "TRYLOCK %s%s", R.key, ttl);
	} else if (R.wait_ms >= 0) {
		R.lock_tmo = (int)(R.wait_ms + REPLY_SLACK_MS);
		n = asprintf(&R.lockreq, "LOCK %s WAIT %lld%s", R.key, R.wait_ms, ttl);
	} else {
		R.lock_tmo = -1;
		n = asprintf(&R.lockreq, "LOCK %s%s", R.key, ttl);
	}
	rc = n < 0 ? LOCKD_ENOMEM : lockd_send(R.c, R.lockreq, R.lock_tmo, (void *)TAG_LOCK);
	int ex = rc == LOCKD_OK ? loop() : LC_EXIT_OSERR;
	guard_finish();
	take_terminal();
	lockd_close(R.c);
	close(R.sfd);
	free(R.lockreq);
	return ex;
}
