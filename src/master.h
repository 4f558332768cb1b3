/* master: one Redis master: a hiredis async connection on the libevent
 * loop, its scripts, request timeouts, health, and reconnection. */
#ifndef LOCKD_MASTER_H
#define LOCKD_MASTER_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "scripts.h"
#include "util.h"
#include "waitq.h"

struct event_base;
struct master;

enum master_state {
	MS_DOWN,       /* no connection; a reconnect timer is armed */
	MS_CONNECTING, /* TCP connect in flight */
	MS_HANDSHAKE,  /* connected; AUTH, SCRIPT LOAD, INFO in flight: not used yet */
	MS_UP,         /* answering; calls go to it */
};

/* reply is NULL when the master failed, timed out or went away. It is
 * called exactly once for every master_call that returned 0, never
 * from inside master_call itself. */
typedef void master_reply_fn(struct master *m, redisReply *reply, void *arg);

/* Released-key notices from the master's pub/sub channel. */
typedef void master_notice_fn(const char *key, size_t klen);

struct master_opts {
	int64_t timeout_ms;
	int64_t reconnect_max_ms;
	int64_t exclusion_ms; /* a restarted master does not count for this long */
	int64_t fence_idle_ms; /* fence counters written by a catch-up expire after this */
	const char *password; /* "" for none */
	const char *prefix;   /* key prefix, for the marker and channel */
	master_notice_fn *on_notice;
};

struct master {
	int idx;
	char *name; /* "host:port" as configured */
	struct addr addr;
	enum master_state state;
	struct redisAsyncContext *ac;  /* commands */
	struct redisAsyncContext *sub; /* pub/sub subscriber */
	struct waitq inflight;         /* struct mreq, in send order */
	struct event *timer;           /* oldest request / connect deadline */
	struct event *retry;           /* reconnect after backoff */
	struct event *rejoin;          /* end of a restart exclusion */
	int64_t state_since_us;
	int64_t backoff_ms;
	int64_t exclude_until_us; /* 0: counts when up */
	int judged;               /* startup marker check done (counts if up) */
	int has_marker;
	int caught_up;   /* its fence counters are trusted (see catchup.c) */
	int catching_up; /* a catch-up is running */
	int trusted;     /* holds every fence it took part in (never lost its data, or
			    caught up from masters that kept theirs) */
	int catch_degraded; /* the running catch-up reads masters that lost data too */
	int short_logged;   /* "too few masters to catch up" was logged */
	char run_id[48];
	int64_t latency_us;    /* last round trip */
	int64_t last_reply_us; /* when it last answered */
	uint64_t reconnects;
	char last_error[128];
};

int masters_init(struct event_base *base, char **names, int n, const struct master_opts *o);
void masters_set_opts(const struct master_opts *o);
void masters_shutdown(void);
int masters_count(void);
struct master *master_get(int i);
/* Up, judged, and past any restart exclusion: may count towards a majority. */
int master_counts(const struct master *m);
int masters_counting(void);
int masters_up(void);
const char *master_state_name(enum master_state s);

/* Send a command. For a script, argv[0] and argv[1] are ignored and
 * replaced by EVALSHA and its SHA (EVAL and the body after NOSCRIPT).
 * argv and argvlen must stay valid until fn runs. Returns -1 (and fn will
 * not run) when the master is not up. */
int master_call(struct master *m, int script, int argc, const char **argv, const size_t *argvlen,
		master_reply_fn *fn, void *arg);

#endif
