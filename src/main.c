/* main: command line, startup, signals (as libevent events), reload and
 * an orderly shutdown that releases every lock on the masters. */
#include "config.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "cfg.h"
#include "dispatch.h"
#include "elect.h"
#include "elwatch.h"
#include "locktab.h"
#include "log.h"
#include "master.h"
#include "memtrim.h"
#include "membership.h"
#include "metrics.h"
#include "notify.h"
#include "proto.h"
#include "quorum.h"
#include "redlock.h"
#include "server.h"
#include "resume.h"
#include "session.h"
#include "stats.h"
#include "who.h"
#include "lockall.h"

#define SHUTDOWN_MAX_MS 5000 /* wait this long for releases to finish */

static struct config cfg;
static const char *cfg_path;
static const char *level_override;
static struct event_base *base;
static struct event *ev_term, *ev_int, *ev_hup, *ev_status, *ev_stop, *ev_majority;
static int64_t stop_started_us;
static int no_majority_warned; /* the startup warning was logged; majority not seen since */

static void usage(FILE *f)
{
	fprintf(f, "Usage: lockd [-c FILE] [-t] [-l LEVEL]\n"
	           "  -c, --config FILE   run on this YAML config (default: built-in defaults)\n"
	           "  -t, --test          check the config and exit (0 good, 1 bad)\n"
	           "  -l, --log-level L   error, warn, info or debug (overrides log_level)\n"
	           "  -h, --help          this help\n"
	           "  -v, --version       print the version\n"
	           "      --config-keys   print every config key\n"
	           "      --commands      print every protocol command\n"
	           "      --stats-fields  print every STATS field\n");
}

/* A master's subscriber is back: election notices may have been missed. */
/* A master's subscriber is subscribed (again): notices may have been
 * missed, so sleeping waiters ask now and observed elections are read. */
static void on_subscribed(struct master *m)
{
	(void)m;
	lt_notice_all();
	el_resync();
}

static void master_opts_from(const struct config *c, struct master_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->timeout_ms = c->timeout_ms;
	o->reconnect_max_ms = c->reconnect_max_ms;
	o->password = c->redis_password;
	o->prefix = c->key_prefix;
	o->on_notice = lt_notice;
	o->on_elected = ew_poke;
	o->on_subscribed = on_subscribed;
	o->on_up = mb_up;
	o->on_down = mb_down;
	o->name = c->name;
	o->wait_replicas = c->wait_replicas;
	o->sentinel_password = c->sentinel_password;
	o->sentinel = c->sentinel;
	/* a cluster entry's nodes are in the same struct; master.c asks
	 * cluster first (mcl_new copies them) */
	static struct master_cluster cl[CONFIG_MAX_MASTERS];
	int any = 0;
	for (int i = 0; i < c->nmasters; i++) {
		const struct cfg_sentinel *s = &c->sentinel[i];
		cl[i] = (struct master_cluster){(const char *const *)s->seeds,
		                                s->cluster ? s->nseeds : 0};
		any |= s->cluster;
	}
	o->cluster = any ? cl : NULL;
}

static void mb_opts_from(const struct config *c, struct mb_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->timeout_ms = c->timeout_ms;
	o->exclusion_ms = cfg_exclusion_ms(c);
	o->lease_ms = c->lease_ms;
	o->exclusion_auto = c->restart_exclusion_ms < 0;
	o->fence_idle_ms = c->fence_idle_ms;
	o->prefix = c->key_prefix;
}

static void apply_log(const struct config *c)
{
	enum log_level lvl;
	log_level_parse(level_override ? level_override : c->log_level, &lvl);
	log_init(lvl, strcmp(c->log_target, "syslog") == 0);
}

static void status_cb(evutil_socket_t fd, short what, void *arg)
{
	char buf[200];
	int ok = stats_quorum_ok();
	snprintf(buf, sizeof(buf), "masters up %d/%d, counting %d; clients %llu; locks held %llu%s",
	         masters_up(), masters_count(), mb_counting(), (unsigned long long)stats.clients,
	         (unsigned long long)stats.locks_held,
	         ok ? "" : "; no majority of masters: LOCK answers ERR QUORUM");
	notify_status(buf);
	if (ok && no_majority_warned) {
		no_majority_warned = 0;
		log_info("a majority of masters counts now: %d of %d", mb_counting(),
		         masters_count());
	}
}

/* Once, a moment after start (when the masters that answer have connected
 * and been judged): say so if LOCK cannot succeed. A master still being
 * connected to or in its handshake (a loaded machine, a slow Sentinel) is
 * not judged yet: the warning waits for it, MAJORITY_DEFERS times at most,
 * so that it does not call a master unreachable that is about to wait
 * for a layout switch or come up. */
#define MAJORITY_DEFERS   3
#define MAJORITY_DEFER_MS 500
static void majority_cb(evutil_socket_t fd, short what, void *arg)
{
	static int defers;
	int up = masters_up(), n = masters_count(), maj = quorum_majority(n);
	int lw = masters_in(MS_LAYOUT_WAIT);
	int judging =
	    masters_in(MS_RESOLVING) + masters_in(MS_CONNECTING) + masters_in(MS_HANDSHAKE);
	if (stats_quorum_ok())
		return;
	if (judging && up + lw < maj && defers++ < MAJORITY_DEFERS) {
		struct timeval later = {0, MAJORITY_DEFER_MS * 1000};
		evtimer_add(ev_majority, &later);
		return;
	}
	no_majority_warned = 1;
	if (up < maj && up + lw >= maj)
		log_warn("no majority of masters counting: %d of %d up, %d more reachable but "
		         "waiting for the lockd of another layout to leave them (STATS "
		         "master.<i>.layout_wait); LOCK will answer ERR QUORUM",
		         up, n, lw);
	else if (up < maj && lw)
		log_warn("no majority of masters reachable: %d of %d up, %d more waiting for the "
		         "lockd of another layout to leave them; LOCK will answer ERR QUORUM",
		         up, n, lw);
	else if (up < maj)
		log_warn(
		    "no majority of masters reachable: %d of %d up; LOCK will answer ERR QUORUM",
		    up, n);
	else
		log_warn("no majority of masters counting: %d of %d up, %d counting (restarted, "
		         "kept out for now); LOCK will answer ERR QUORUM",
		         up, n, mb_counting());
	status_cb(-1, 0, NULL);
}

/* systemd copies a credential (LoadCredential=) once, at start: a reload
 * reads that copy again, not the file it was made from. */
static void warn_credential_copy(void)
{
	const char *dir = getenv("CREDENTIALS_DIRECTORY");
	size_t n = dir ? strlen(dir) : 0;
	if (n && strncmp(cfg_path, dir, n) == 0 && cfg_path[n] == '/')
		log_warn("reload: %s is the copy systemd made at start (LoadCredential=); "
		         "edits to the original take effect at a restart",
		         cfg_path);
}

/* Defaults safe for a network: cfg refuses an open listener unless
 * allow_unauthenticated is set; then it is worth a warning. */
static void warn_open(const struct config *c, FILE *f)
{
	const char *open = cfg_open_listener(c);
	if (!open)
		return;
	if (f)
		fprintf(f, "warning: listen %s: clients need no password (allow_unauthenticated)\n",
		        open);
	else
		log_warn("listen %s: clients need no password (allow_unauthenticated)", open);
}

static int same_list(char *const *a, int na, char *const *b, int nb)
{
	if (na != nb)
		return 0;
	for (int i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return 0;
	return 1;
}

/* The key name unset: this host's name and the first listen address
 * (1.4: what WHO on any lockd calls this one). */
static void default_name(struct config *c)
{
	char host[256] = "", buf[CFG_NAME_MAX + 1];
	if (c->name[0])
		return;
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	cfg_default_name(c, host, buf, sizeof(buf));
	free(c->name);
	c->name = strdup(buf);
}

/* Keep what cannot change while running; say so for each. */
static void keep_fixed(struct config *n, const struct config *o)
{
	if (!same_list(n->listen, n->nlisten, o->listen, o->nlisten)) {
		log_warn("reload: listen cannot change at runtime; keeping the old value");
		for (int i = 0; i < n->nlisten; i++)
			free(n->listen[i]);
		for (int i = 0; i < o->nlisten; i++)
			n->listen[i] = strdup(o->listen[i]);
		n->nlisten = o->nlisten;
	}
	int same = same_list(n->masters, n->nmasters, o->masters, o->nmasters);
	for (int i = 0; same && i < o->nmasters; i++) /* a sentinel entry's Sentinels too */
		same = same_list(n->sentinel[i].seeds, n->sentinel[i].nseeds, o->sentinel[i].seeds,
		                 o->sentinel[i].nseeds);
	if (!same) {
		log_warn("reload: redis.masters cannot change at runtime; keeping the old value");
		for (int i = 0; i < CONFIG_MAX_MASTERS; i++) {
			struct cfg_sentinel *ns = &n->sentinel[i];
			const struct cfg_sentinel *os = &o->sentinel[i];
			for (int j = 0; j < ns->nseeds; j++)
				free(ns->seeds[j]);
			free(ns->name);
			ns->name = os->name ? strdup(os->name) : NULL;
			ns->cluster = os->cluster;
			for (int j = 0; j < os->nseeds; j++)
				ns->seeds[j] = strdup(os->seeds[j]);
			ns->nseeds = os->nseeds;
		}
		for (int i = 0; i < n->nmasters; i++)
			free(n->masters[i]);
		for (int i = 0; i < o->nmasters; i++)
			n->masters[i] = strdup(o->masters[i]);
		n->nmasters = o->nmasters;
	}
	struct {
		const char *name;
		char **nv;
		char *ov;
	} strs[] = {
	    {"unix_socket_mode", &n->unix_socket_mode, o->unix_socket_mode},
	    {"redis.key_prefix", &n->key_prefix, o->key_prefix},
	    {"redis.password", &n->redis_password, o->redis_password},
	    {"redis.sentinel_password", &n->sentinel_password, o->sentinel_password},
	    {"metrics.listen", &n->metrics_listen, o->metrics_listen},
	};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (strcmp(*strs[i].nv, strs[i].ov) != 0) {
			log_warn("reload: %s cannot change at runtime; keeping the old value",
			         strs[i].name);
			free(*strs[i].nv);
			*strs[i].nv = strdup(strs[i].ov);
		}
}

static void hup_cb(evutil_socket_t fd, short what, void *arg)
{
	struct config n;
	char err[512];

	if (!cfg_path) {
		log_info("SIGHUP: no config file to reload");
		return;
	}
	notify_reloading();
	cfg_defaults(&n);
	if (cfg_load_file(&n, cfg_path, err, sizeof(err)) != 0) {
		log_error("reload failed, keeping the running config: %s", err);
		cfg_free(&n);
	} else {
		keep_fixed(&n, &cfg);
		default_name(&n);
		cfg_free(&cfg);
		cfg = n; /* modules point at cfg: they see the new values */
		struct master_opts o;
		struct mb_opts mbo;
		master_opts_from(&cfg, &o);
		masters_set_opts(&o);
		mb_opts_from(&cfg, &mbo);
		mb_set_opts(&mbo);
		redlock_set_opts(cfg.drift_factor, cfg.timeout_ms, cfg.fence_idle_ms);
		locktab_set_cfg(&cfg);
		rs_set_cfg(&cfg);
		el_set_cfg(&cfg);
		apply_log(&cfg);
		log_info("reloaded %s", cfg_path);
		warn_credential_copy();
	}
	notify_ready();
	status_cb(-1, 0, NULL);
}

static void stop_wait_cb(evutil_socket_t fd, short what, void *arg)
{
	int64_t waited = (now_us() - stop_started_us) / 1000;
	if ((rl_inflight() == 0 && !locktab_busy() && !rs_busy()) || waited >= SHUTDOWN_MAX_MS) {
		if (rl_inflight())
			log_warn("exiting with %d quorum calls unfinished", rl_inflight());
		event_base_loopbreak(base);
		return;
	}
	struct timeval tv = {0, 10000};
	evtimer_add(ev_stop, &tv);
}

static void term_cb(evutil_socket_t fd, short what, void *arg)
{
	if (stop_started_us) {
		log_warn("second signal: exiting now");
		event_base_loopbreak(base);
		return;
	}
	log_info("shutting down: answering waiters, releasing locks");
	notify_stopping();
	stop_started_us = now_us();
	server_close();
	metrics_stop();
	rs_shutdown_all(); /* resumable sessions stay resumable on the masters */
	lt_shutdown_all();
	/* Check from the loop, so that the replies just written go out. */
	ev_stop = evtimer_new(base, stop_wait_cb, NULL);
	struct timeval tv = {0, 10000};
	evtimer_add(ev_stop, &tv);
}

static void raise_nofile(int64_t want)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	rlim_t need = (rlim_t)want + 64;
	if (rl.rlim_cur >= need)
		return;
	rl.rlim_cur = need < rl.rlim_max ? need : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < need)
		log_warn("open files limit is %llu; limits.max_clients %lld needs more",
		         (unsigned long long)rl.rlim_cur, (long long)want);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"test", no_argument, NULL, 't'},
	    {"log-level", required_argument, NULL, 'l'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'v'},
	    {"config-keys", no_argument, NULL, 'K'},
	    {"commands", no_argument, NULL, 'C'},
	    {"stats-fields", no_argument, NULL, 'S'},
	    {NULL, 0, NULL, 0},
	};
	int test_only = 0, ch;
	char err[512];
	enum log_level lvl;

	while ((ch = getopt_long(argc, argv, "c:tl:hv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			cfg_path = optarg;
			break;
		case 't':
			test_only = 1;
			break;
		case 'l':
			if (log_level_parse(optarg, &lvl) != 0) {
				fprintf(stderr,
				        "lockd: -l %s: must be error, warn, info or debug\n",
				        optarg);
				return 2;
			}
			level_override = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'v':
			printf("lockd %s\n", PACKAGE_VERSION);
			return 0;
		case 'K':
			cfg_print_keys();
			return 0;
		case 'C':
			for (int i = 0; i < CMD_COUNT; i++)
				printf("%s\n", proto_cmd_name((enum cmd)i));
			return 0;
		case 'S':
			stats_print_fields();
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "lockd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	cfg_defaults(&cfg);
	if (cfg_path && cfg_load_file(&cfg, cfg_path, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		cfg_free(&cfg);
		return 1;
	}
	if (test_only) {
		/* What start would refuse beyond the config itself: the TLS
		 * certificates and keys must load. */
		if (server_check_tls(&cfg, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s: %s\n", cfg_path ? cfg_path : "(built-in defaults)",
			        err);
			cfg_free(&cfg);
			return 1;
		}
		warn_open(&cfg, stderr);
		printf("%s: configuration OK\n", cfg_path ? cfg_path : "(built-in defaults)");
		cfg_free(&cfg);
		return 0;
	}
	apply_log(&cfg);
	warn_open(&cfg, NULL);
	default_name(&cfg);
	signal(SIGPIPE, SIG_IGN);
	raise_nofile(cfg.max_clients);
	stats.started_us = now_us();

	/* Deadlines are computed from CLOCK_MONOTONIC now; libevent must not
	 * add them to a time cached at the start of a busy loop turn, nor
	 * round them to the coarse clock's 4 ms tick (a LOST must not be
	 * late). The changelist folds a write event armed and disarmed in
	 * one turn (hiredis' on a master written at the turn's end) into no
	 * epoll_ctl at all. */
	struct event_config *ec = event_config_new();
	if (ec)
		event_config_set_flag(ec, EVENT_BASE_FLAG_NO_CACHE_TIME |
		                              EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST |
		                              EVENT_BASE_FLAG_PRECISE_TIMER);
	base = ec ? event_base_new_with_config(ec) : NULL;
	if (ec)
		event_config_free(ec);
	if (!base) {
		log_error("cannot create the event loop");
		return 1;
	}
	log_info("lockd %s starting (libevent %s, hiredis %d.%d.%d), %d master(s), majority %d",
	         PACKAGE_VERSION, event_get_version(), HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH,
	         cfg.nmasters, quorum_majority(cfg.nmasters));

	struct master_opts mo;
	struct mb_opts mbo;
	master_opts_from(&cfg, &mo);
	mb_opts_from(&cfg, &mbo);
	redlock_init(base, cfg.key_prefix, cfg.drift_factor, cfg.timeout_ms, cfg.fence_idle_ms);
	mo.gen_key = rl_epoch_key();
	mo.name_key = rl_lockd_name_key();
	mo.instance = rl_instance_id();
	sessions_set_cfg(&cfg);
	dispatch_init(&cfg);
	who_init(&cfg, &session_lt_ops);
	la_init(base, &cfg, &session_lt_ops);
	if (memtrim_init(base) != 0 || locktab_init(base, &cfg, &session_lt_ops) != 0 ||
	    rs_init(base, &cfg, &session_lt_ops) != 0 ||
	    el_init(base, &cfg, &session_lt_ops) != 0 || mb_init(base, cfg.nmasters, &mbo) != 0 ||
	    masters_init(base, cfg.masters, cfg.nmasters, &mo)) {
		log_error("out of memory at startup");
		return 1;
	}
	if (server_listen(base, &cfg, err, sizeof(err)) != 0 ||
	    metrics_start(base, cfg.metrics_listen, err, sizeof(err)) != 0) {
		log_error("%s", err);
		server_close();
		sessions_close_all();
		locktab_shutdown();
		masters_shutdown();
		mb_shutdown();
		redlock_shutdown();
		memtrim_shutdown();
		event_base_free(base);
		cfg_free(&cfg);
		return 1;
	}
	ev_term = evsignal_new(base, SIGTERM, term_cb, NULL);
	ev_int = evsignal_new(base, SIGINT, term_cb, NULL);
	ev_hup = evsignal_new(base, SIGHUP, hup_cb, NULL);
	ev_status = event_new(base, -1, EV_PERSIST, status_cb, NULL);
	evsignal_add(ev_term, NULL);
	evsignal_add(ev_int, NULL);
	evsignal_add(ev_hup, NULL);
	struct timeval every = {2, 0};
	event_add(ev_status, &every);
	/* membership judges the masters within max(4 timeouts, 500 ms) */
	int64_t judge_ms = cfg.timeout_ms * 4 > 500 ? cfg.timeout_ms * 4 : 500;
	int64_t soon_ms = judge_ms + 500;
	struct timeval soon = {(time_t)(soon_ms / 1000), (suseconds_t)(soon_ms % 1000) * 1000};
	ev_majority = evtimer_new(base, majority_cb, NULL);
	evtimer_add(ev_majority, &soon);
	notify_ready();
	log_info("ready");

	event_base_dispatch(base);

	server_close();
	metrics_stop();
	sessions_close_all();
	rs_shutdown();
	el_shutdown();
	masters_shutdown();
	mb_shutdown();
	locktab_shutdown();
	redlock_shutdown();
	memtrim_shutdown();
	event_free(ev_term);
	event_free(ev_int);
	event_free(ev_hup);
	event_free(ev_status);
	event_free(ev_majority);
	if (ev_stop)
		event_free(ev_stop);
	event_base_free(base);
	log_info("stopped");
	cfg_free(&cfg);
	return 0;
}
