/* sentinel: the Sentinels of a redis.masters entry that is a Sentinel-
 * managed primary. It tells its master where the primary is (SENTINEL
 * get-master-addr-by-name on the Sentinels in order, the first that
 * answers), and that the primary moved (a +switch-master message on one
 * Sentinel's pub/sub). What a move means for the connection is master.c's. */
#ifndef LOCKD_SENTINEL_H
#define LOCKD_SENTINEL_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"

struct event_base;
struct master;
struct sn_entry;

/* The primary is at host:port, or could not be learned (host NULL, why
 * says so). Called once per sn_resolve, never from inside it. */
typedef void sn_resolved_fn(struct master *m, const char *host, int port, const char *why);

/* The Sentinels announced that the primary moved to host:port. */
typedef void sn_switch_fn(struct master *m, const char *host, int port);

struct sn_opts {
	const char *password; /* AUTH on the Sentinels; "" for none (copied) */
	int64_t timeout_ms;   /* a Sentinel's answer, at most (per Sentinel) */
	int64_t reconnect_max_ms;
	sn_switch_fn *on_switch;
};

/* The Sentinels of c for m; NULL when out of memory. Subscribes at once. */
struct sn_entry *sn_new(struct event_base *base, struct master *m, const struct cfg_sentinel *c,
                        const struct sn_opts *o);
/* Ask where the primary is; cb runs once, later. A resolution in progress
 * is taken over (its callback will not run). */
void sn_resolve(struct sn_entry *e, sn_resolved_fn *cb);
/* Close everything; no callback runs after it. */
void sn_free(struct sn_entry *e);
/* A +switch-master message, "NAME OLDHOST OLDPORT NEWHOST NEWPORT": 0
 * and the new primary in host (hlen bytes) and *port when it is about
 * name, else -1 (another name, or malformed). */
int sn_parse_switch(const char *msg, const char *name, char *host, size_t hlen, int *port);
/* The Sentinel the watcher is subscribed on ("-" when none). */
const char *sn_watching(const struct sn_entry *e);

#endif
