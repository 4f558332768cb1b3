/* mcluster: a redis.masters entry that is a Redis Cluster (issue 31;
 * doc/cluster.md, "The choice: slot by slot"), prefix mcl_. One master of
 * lockd's majority, as a standalone or a Sentinel entry is, whatever its
 * number of primaries: its own router (csl_router.c) over the cluster's
 * primaries, and the master layer's calls routed by the slot of the lock
 * they are about, in their cluster form (ckey.c): one call per slot, a
 * call over several slots split and its replies joined.
 *
 * Below master.c, which owns the struct master and its state and hands
 * down what it needs (struct mcl_ops): the entry is up while the router
 * has a live primary for every slot, and goes down and up again when the
 * router says a node may have lost data (a restart, a promotion without
 * every counted write, a node it did not know), so that the master
 * layer's user handles it as a master that restarted empty. Not
 * reachable from a configuration yet: cfg refuses cluster entries until
 * the sessions, elections, WHO and LOCKALL work on them (doc/cluster.md,
 * the build plan). */
#ifndef LOCKD_MCLUSTER_H
#define LOCKD_MCLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "master.h"

struct event_base;
struct mcl;

/* What master.c hands down. */
struct mcl_ops {
	/* m's router now covers every slot: m is up (restarted: a node of
	 * it may have lost data since it was last up; has_marker: every
	 * primary has lockd's marker, mcl_set_marker) */
	void (*up)(struct master *m, int restarted, int has_marker);
	/* m is down (why: what the router lacks) */
	void (*down)(struct master *m, const char *why);
	/* The connection epoch now (master_epoch), and the next one: a node
	 * connection of the entry was lost, so every command written after
	 * it must carry a newer epoch than any written on it (scripts.c). */
	const char *(*epoch)(void);
	void (*epoch_next)(void);
	/* every slot has lockd's marker now (mcl_set_marker) */
	void (*marked)(struct master *m);
};

struct mcl_cfg {
	const char *const *seeds; /* "HOST:PORT" of some of its nodes */
	const char *marker;       /* lockd's marker key, "P marker" (copied) */
	int nseeds;
	const char *password; /* "" or NULL: none */
	int64_t timeout_ms;   /* a call's deadline (redis.timeout_ms) */
	int wait_replicas;    /* redis.wait_replicas: WAIT behind each write */
};

/* The entry of m, its router's first map refresh started; NULL with err
 * filled when cfg is unusable (csr_new's reasons). */
struct mcl *mcl_new(struct master *m, struct event_base *base, const struct mcl_cfg *cfg,
                    const struct mcl_ops *ops, char *err, size_t errlen);
void mcl_set_opts(struct mcl *cl, int64_t timeout_ms);

/* master_call for a cluster entry: script's call (argv as a standalone
 * master takes it, valid until fn runs) for the lock of slot slots[0]
 * (nslots 1), or over nslots items, item i of slot slots[i] (a script
 * ckey.h's ck_cols_of takes). A command that is not a script (script -1)
 * goes as it is, its keys the cluster's names already: to the primary of
 * slots[0] (a SCAN of that primary, a GET), or, an MGET of nslots keys,
 * split per slot and joined (NULL unless every part answered). fn runs
 * once, on the loop, never inside mcl_call; -1 (fn never runs) when the
 * entry is not up, the call has no slot (a session's record: not yet on
 * cluster entries), or out of memory. */
int mcl_call(struct mcl *cl, const unsigned *slots, int nslots, int script, int argc,
             const char **argv, const size_t *argvlen, master_reply_fn *fn, void *arg);

/* One slot of each primary (csr_primaries), and how many times slots
 * changed primaries (csr_slot_moves): catch-up's walk over the nodes. */
int mcl_primaries(struct mcl *cl, unsigned *slots, int max);
uint64_t mcl_slot_moves(struct mcl *cl);
/* The router's nodes as master_cluster_stats gives them (master.h). */
int mcl_stats(struct mcl *cl, struct master_node *out, int max);
void mcl_refresh(struct mcl *cl); /* csr_refresh */

/* A primary's "HOST:PORT" for the subscriber (release notices: PUBLISH
 * reaches every node of a cluster), or NULL when none is known. */
const char *mcl_any_node(struct mcl *cl, char *buf, size_t len);

/* The marker (restart detection at startup, membership.c): "{T}" and
 * marker in every slot, so that it moves with its slot and goes with its
 * primary's data. Written now (the entry counts), or once the entry is up
 * again, and again after a write failed or a node may have lost data;
 * ops.marked once every slot has it. The entry reads it in one slot of
 * each primary each time before it goes up (has_marker: all have it). */
void mcl_set_marker(struct mcl *cl);

/* Fail every call in flight (each fn once, with NULL) and refuse new
 * ones: masters_shutdown, before mcl_free. */
void mcl_close(struct mcl *cl);
void mcl_free(struct mcl *cl);

#endif
