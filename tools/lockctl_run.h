/* lockctl_run: CMD under a hold (lockctl_run.c): `lockctl run` (a lock)
 * and, through lc_hold_run(), `lockctl elect` (a leader's hold:
 * lockctl_elect.c), with the same rules for loss, exit status and
 * resume. */
#ifndef LOCKD_LOCKCTL_RUN_H
#define LOCKD_LOCKCTL_RUN_H

#include <stdint.h>

#include "lockctl_util.h"

/* What to hold and run: the options of `lockctl run` or `lockctl elect`. */
struct lc_hold {
	const char *key;   /* the lock's key, or the election's name */
	char **cmd;        /* CMD and its arguments (NULL-terminated) */
	const char *value; /* set: CAMPAIGN key value (elect; LOCKD_VALUE for CMD,
	                      released with RESIGN); NULL: LOCK or TRYLOCK (run) */
	long long wait_ms; /* -w; -1: none */
	int nowait;        /* -n: TRYLOCK (run only) */
	long long ttl_ms;  /* -t; 0: none (run only) */
	int shared;        /* --shared (run only) */
	long long permits; /* --permits; 0: none (run only) */
	int nolock_exit;   /* -E: the exit status when not granted */
	int64_t grace_us;  /* -k */
	int verbose;       /* -v */
};

/* The defaults of -E and -k. */
#define LC_HOLD_DEFAULT_GRACE_MS 1000

/* lockctl run ARGS: returns the exit status. */
int lc_run(const struct lc_conn *conn, int argc, char **argv);
/* Take h's hold on a resumable session, run CMD while it is held, stop
 * CMD's group when it is lost, release it when CMD is done: returns the
 * exit status (CMD's own, LC_EXIT_LOST, h->nolock_exit, ...). */
int lc_hold_run(const struct lc_conn *conn, const struct lc_hold *h);

#endif
