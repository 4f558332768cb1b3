/* lockctl's leader election commands (protocol 1.3):
 *
 *   lockctl elect [-w ms] [-E code] [-k grace_ms] [-v] NAME VALUE -- CMD
 *       campaign for NAME with VALUE, run CMD while leader: lockctl run's
 *       engine (lockctl_run.c, lc_hold_run()) with CAMPAIGN for LOCK and
 *       RESIGN for UNLOCK, so loss, exit status and resume follow run's
 *       rules exactly;
 *   lockctl leader NAME
 *       one LEADER request: "LEADER fence value", "LEADER fence" or "NONE";
 *   lockctl observe [-v] NAME
 *       OBSERVE NAME on a resumable session and print each change
 *       ("ELECTED fence value", "NOLEADER") until SIGINT or SIGTERM (exit
 *       0). liblockd resumes a broken session (on the -h list's lockds);
 *       an observation does not outlive its connection, so OBSERVE goes
 *       out again after every resume, and a session that cannot be
 *       resumed is replaced by a new one. The state lockd sends again then
 *       is printed only when it differs from the last line printed: a line
 *       is a change, never a repeat. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "lockctl_elect.h"
#include "lockctl_run.h"
#include "lockctl_util.h"

#define DEFAULT_REPLY_MS 10000 /* LEADER, OBSERVE: reply timeout without -T */
#define BACKOFF_MIN_MS   100   /* observe: first wait before a new session */
#define BACKOFF_MAX_MS   2000  /* observe: the longest wait between attempts */

static int sub_usage(const char *sub, const char *synopsis, const char *msg, const char *arg)
{
	fprintf(stderr, "%s: %s: ", lc_prog, sub);
	fprintf(stderr, msg, arg);
	fprintf(stderr, "\nusage: lockctl [options] %s %s\n", sub, synopsis);
	return LC_EXIT_USAGE;
}

/* NAME follows the rules of keys. */
static int bad_name(const char *name)
{
	return lockd_check_key(name) != LOCKD_OK;
}

static int connect_or_exit(struct lockd_opts *o, struct lockd_client **c)
{
	int rc = lockd_connect(o, c);
	if (rc == LOCKD_OK)
		return LC_EXIT_OK;
	lc_err("%s", *c ? lockd_error(*c) : lockd_strerror(rc));
	lockd_close(*c);
	*c = NULL;
	return rc == LOCKD_EAUTH ? LC_EXIT_REFUSED : lc_conn_exit(rc);
}

/* ------------------------------------------------------------ elect */

#define ELECT_SYNOPSIS "[-w ms] [-E code] [-k grace_ms] [-v] NAME VALUE -- CMD [ARGS...]"

int lc_elect(const struct lc_conn *conn, int argc, char **argv)
{
	struct lc_hold h = {
	    .wait_ms = -1,
	    .nolock_exit = LC_EXIT_NOLOCK,
	    .grace_us = (int64_t)LC_HOLD_DEFAULT_GRACE_MS * 1000,
	};
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt(argc, argv, "+:w:E:k:v")) != -1) {
		long long v;
		switch (opt) {
		case 'w':
			h.wait_ms = lc_number(optarg, 0, 0x7fffffff);
			if (h.wait_ms < 0)
				return sub_usage("elect", ELECT_SYNOPSIS,
				                 "-w %s: want milliseconds, 0 to 2147483647",
				                 optarg);
			break;
		case 'E':
			v = lc_number(optarg, 0, 255);
			if (v < 0)
				return sub_usage("elect", ELECT_SYNOPSIS,
				                 "-E %s: want an exit status, 0 to 255", optarg);
			h.nolock_exit = (int)v;
			break;
		case 'k':
			v = lc_number(optarg, 0, 0x7fffffff);
			if (v < 0)
				return sub_usage("elect", ELECT_SYNOPSIS,
				                 "-k %s: want milliseconds, 0 to 2147483647",
				                 optarg);
			h.grace_us = v * 1000;
			break;
		case 'v':
			h.verbose = 1;
			break;
		case ':':
			return sub_usage("elect", ELECT_SYNOPSIS, "option -%s needs a value",
			                 (char[]){(char)optopt, 0});
		default:
			return sub_usage("elect", ELECT_SYNOPSIS, "unknown option %s",
			                 argv[optind - 1]);
		}
	}
	if (optind + 1 >= argc)
		return sub_usage("elect", ELECT_SYNOPSIS, "want NAME and VALUE%s", "");
	h.key = argv[optind++];
	h.value = argv[optind++];
	if (bad_name(h.key))
		return sub_usage("elect", ELECT_SYNOPSIS,
		                 "NAME \"%s\": want printable ASCII without blanks", h.key);
	if (lockd_check_value(h.value) != LOCKD_OK)
		return sub_usage("elect", ELECT_SYNOPSIS,
		                 "VALUE \"%s\": want 1 to 256 bytes of printable ASCII without "
		                 "blanks",
		                 h.value);
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	if (optind >= argc)
		return sub_usage("elect", ELECT_SYNOPSIS, "no CMD to run%s", "");
	h.cmd = argv + optind;
	return lc_hold_run(conn, &h);
}

/* ------------------------------------------------------------ leader */

int lc_leader(const struct lc_conn *conn, int argc, char **argv)
{
	if (argc != 2)
		return sub_usage("leader", "NAME", "want one NAME%s", "");
	if (bad_name(argv[1]))
		return sub_usage("leader", "NAME",
		                 "NAME \"%s\": want printable ASCII without blanks", argv[1]);
	struct lockd_opts o = conn->o;
	struct lockd_client *c = NULL;
	int ex = connect_or_exit(&o, &c);
	if (ex != LC_EXIT_OK)
		return ex;
	const struct lockd_reply *r;
	int tmo = conn->reply_timeout_ms ? conn->reply_timeout_ms : DEFAULT_REPLY_MS;
	int rc = lockd_leader(c, argv[1], tmo, &r);
	if (rc != LOCKD_OK) {
		lc_err("%s", lockd_error(c));
		ex = lc_conn_exit(rc);
	} else if (r->kind == LOCKD_R_LEADER || r->kind == LOCKD_R_NONE) {
		printf("%s\n", r->line);
	} else if (r->kind == LOCKD_R_ERR) {
		fprintf(stderr, "%s\n", r->line);
		ex = LC_EXIT_REFUSED;
	} else {
		lc_err("LEADER %s: unexpected reply \"%s\"", argv[1], r->line);
		ex = LC_EXIT_PROTOCOL;
	}
	lockd_close(c);
	if (fflush(stdout) != 0 && ex == LC_EXIT_OK) {
		lc_err("stdout: %s", strerror(errno));
		ex = LC_EXIT_REFUSED;
	}
	return ex;
}

/* ------------------------------------------------------------ observe */

enum obs_tag {
	OT_OBSERVE = 1, /* the reply to OBSERVE */
};

static struct {
	const char *name;
	int verbose;
	int reply_tmo;
	char last[LOCKD_MAX_VALUE + 64]; /* the last line printed ("": none) */
	int failed;                      /* lockd refused OBSERVE, or stdout failed: exit with ex */
	int ex;
	int observing; /* OBSERVE answered OK on this connection */
} O;

static void obs_print(const char *line)
{
	if (strcmp(line, O.last) == 0)
		return; /* lockd's state again (a new OBSERVE): no change */
	snprintf(O.last, sizeof(O.last), "%s", line);
	if (printf("%s\n", line) < 0 || fflush(stdout) != 0) {
		lc_err("stdout: %s", strerror(errno));
		O.failed = 1;
		O.ex = LC_EXIT_REFUSED;
	}
}

static void obs_send(struct lockd_client *c)
{
	O.observing = 0;
	int rc = lockd_send_observe(c, O.name, O.reply_tmo, (void *)OT_OBSERVE);
	if (rc != LOCKD_OK && O.verbose)
		lc_err("OBSERVE %s: %s", O.name, lockd_strerror(rc));
}

static void obs_reply(struct lockd_client *c, const struct lockd_reply *r, void *tag, void *arg)
{
	if (r->kind == LOCKD_R_OK) {
		O.observing = 1;
		if (O.verbose)
			lc_err("observing %s on %s", O.name, lockd_peer(c));
		return;
	}
	if (r->kind == LOCKD_R_ERR && strcmp(r->code, "DISCONNECTED") == 0)
		return; /* sent again on RESUMED */
	fprintf(stderr, "%s\n", r->line);
	O.failed = 1;
	O.ex = r->kind == LOCKD_R_ERR ? LC_EXIT_REFUSED : LC_EXIT_PROTOCOL;
}

static void obs_event(struct lockd_client *c, const struct lockd_event *ev, void *arg)
{
	char line[sizeof(O.last)];
	switch (ev->kind) {
	case LOCKD_E_ELECTED:
		if (strcmp(ev->key, O.name) != 0)
			return;
		snprintf(line, sizeof(line), "ELECTED %llu %s", (unsigned long long)ev->fence,
		         ev->value);
		obs_print(line);
		return;
	case LOCKD_E_NOLEADER:
		if (strcmp(ev->key, O.name) == 0)
			obs_print("NOLEADER");
		return;
	case LOCKD_E_RESUMING:
		if (O.verbose)
			lc_err("connection to lockd lost (%s): resuming",
			       ev->line + strlen("RESUMING "));
		return;
	case LOCKD_E_RESUMED:
		/* observations do not outlive a connection: observe again */
		if (O.verbose)
			lc_err("session resumed on %s", ev->key);
		obs_send(c);
		return;
	default:
		return;
	}
}

/* A new session observing O.name; NULL when it could not be had (the
 * reason is printed; *ex says how to exit if that is final). */
static struct lockd_client *obs_connect(const struct lc_conn *conn, int *ex)
{
	struct lockd_opts o = conn->o;
	struct lockd_client *c = NULL;
	o.resume = 1;
	*ex = connect_or_exit(&o, &c);
	if (!c)
		return NULL;
	lockd_set_callbacks(c, obs_reply, obs_event, NULL);
	obs_send(c);
	return c;
}

/* A failure that another connection cannot mend. */
static int final_failure(int status)
{
	return status == LOCKD_EAUTH || status == LOCKD_ETLS || status == LOCKD_EARG ||
	       status == LOCKD_ENOMEM;
}

int lc_observe(const struct lc_conn *conn, int argc, char **argv)
{
	int opt;
	optind = 1;
	opterr = 0;
	memset(&O, 0, sizeof(O));
	while ((opt = getopt(argc, argv, "+v")) != -1) {
		if (opt != 'v')
			return sub_usage("observe", "[-v] NAME", "unknown option %s",
			                 argv[optind - 1]);
		O.verbose = 1;
	}
	if (optind + 1 != argc)
		return sub_usage("observe", "[-v] NAME", "want one NAME%s", "");
	O.name = argv[optind];
	if (bad_name(O.name))
		return sub_usage("observe", "[-v] NAME",
		                 "NAME \"%s\": want printable ASCII without blanks", O.name);
	O.verbose |= conn->verbose;
	O.reply_tmo = conn->reply_timeout_ms ? conn->reply_timeout_ms : DEFAULT_REPLY_MS;

	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, &old) != 0) {
		lc_err("signals: %s", strerror(errno));
		return LC_EXIT_OSERR;
	}
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		lc_err("signalfd: %s", strerror(errno));
		return LC_EXIT_OSERR;
	}
	int ex = LC_EXIT_OK;
	struct lockd_client *c = obs_connect(conn, &ex);
	int backoff = BACKOFF_MIN_MS;
	int64_t retry_at = 0; /* no client: connect again then (lc_now_us) */
	int stop = c == NULL; /* the first connection must succeed */
	while (!stop && !O.failed) {
		int t = c ? lockd_timeout_ms(c) : -1;
		if (!c) {
			int64_t ms = (retry_at - lc_now_us() + 999) / 1000;
			t = ms > 0 ? (int)ms : 0;
		}
		struct pollfd pf[2] = {
		    {sfd, POLLIN, 0},
		    {c ? lockd_fd(c) : -1, c ? lockd_want(c) : 0, 0},
		};
		if (poll(pf, 2, t) < 0 && errno != EINTR) {
			lc_err("poll: %s", strerror(errno));
			ex = LC_EXIT_OSERR;
			break;
		}
		if (pf[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				stop = 1; /* SIGINT or SIGTERM: done, exit 0 */
			if (stop)
				break;
		}
		if (!c) {
			if (lc_now_us() < retry_at)
				continue;
			int cex;
			c = obs_connect(conn, &cex);
			if (!c) {
				retry_at = lc_now_us() + (int64_t)backoff * 1000;
				backoff =
				    backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
			}
			continue;
		}
		int rc = lockd_step(c);
		if (rc == LOCKD_OK) {
			if (O.observing)
				backoff = BACKOFF_MIN_MS;
			continue;
		}
		/* the session is gone for good (not resumed within its grace, or
		   lockd refused it): observing needs no session of old, so a new
		   one takes over after a backoff */
		lc_err("%s", lockd_error(c));
		int st = lockd_status(c);
		lockd_close(c);
		c = NULL;
		if (final_failure(st)) {
			ex = st == LOCKD_EAUTH ? LC_EXIT_REFUSED : lc_conn_exit(st);
			break;
		}
		retry_at = lc_now_us() + (int64_t)backoff * 1000;
	}
	if (O.failed)
		ex = O.ex;
	lockd_close(c);
	close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ex;
}
