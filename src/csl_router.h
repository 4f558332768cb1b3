/* csl_router: an asynchronous router over one Redis Cluster (issue 31),
 * prefix csr_.
 *
 * hiredis 0.14 (Debian 12) has no cluster support, so this is lockd's
 * own: a connection per primary (hiredis async on the libevent loop),
 * the slot map (src/cluster.c parses it) refreshed on MOVED, on a lost
 * connection and every refresh_ms, and each call routed by its slot
 * (pipelined on its primary's connection), following MOVED and ASK and
 * retrying TRYAGAIN and CLUSTERDOWN while its deadline lasts; a write
 * (csr_write) counts once a WAIT behind it says enough replicas have it;
 * and it tells (csr_event) where each slot's data comes from: a node
 * restarted, a replica promoted, a slot resharded, before any reply of
 * that node.
 * doc/cluster.md says how it fits the
 * plan; tests/integration/test_cluster_router.c drives it against a live cluster (resharding,
 * failover, a killed primary).
 *
 * Its user is a cluster entry of lockd's master layer (src/mcluster.c),
 * which cfg does not take yet (doc/cluster.md, the build plan).
 *
 * A call's outcome: fn gets the node's reply (any reply but a
 * redirection or a retry, error replies included), or NULL when the call
 * failed: no live primary for its slot, its connection lost or timed out
 * (the command may or may not have run), too many redirections, or its
 * deadline passed while it waited to be retried. Callbacks run on the
 * loop, never inside csr_command. */
#ifndef LOCKD_CSL_ROUTER_H
#define LOCKD_CSL_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "cluster.h"

struct event_base;
struct csr_router;
struct csr_req;

/* What the router learned of where its slots' data comes from: told
 * before any reply of the node concerned reaches a call (a restarted
 * node's INFO is the first command on its new connection; a node the
 * map does not name as a primary gets no call, a redirection there waits
 * for the map that names it). */
enum csr_event_kind {
	CSR_EV_RESTARTED, /* a node's run_id changed: it restarted, and holds nothing it
	                     held before unless it persisted it (lockd assumes not) */
	CSR_EV_PROMOTED,  /* slots now served by a replica of their old primary: a failover */
	CSR_EV_MOVED,     /* slots now served by another primary of the last map: a
	                     resharding, their keys moved with them (not told when a
	                     MOVED taught the router first: it needs nothing done) */
	CSR_EV_NEW,       /* slots now served by a node the last map did not name, a
	                     replica of another primary, or slots nobody served */
};

struct csr_event {
	enum csr_event_kind kind;
	char host[CSL_HOST_MAX + 1]; /* the node that serves the slots now (RESTARTED: the node) */
	int port;
	char from_host[CSL_HOST_MAX + 1]; /* the primary before ("" and 0: none, or RESTARTED) */
	int from_port;
	int slots;    /* how many (RESTARTED: 0) */
	int replicas; /* PROMOTED, MOVED: the most replicas any map showed the old primary */
	/* 1 when every write a csr_write counted is on that node: MOVED, and
	 * PROMOTED when wait_replicas is at least the old primary's replicas
	 * (each counted write was on all of them). 0: handle it as a node
	 * that lost data (RESTARTED, NEW, any other PROMOTED). Redis'
	 * replication is asynchronous: what was written without a WAIT that
	 * counted may be lost either way. */
	int with_data;
	char run_id[41], old_run_id[41]; /* RESTARTED */
};

typedef void csr_event_fn(const struct csr_event *ev, void *arg);

/* A call's stamped argument (csr_stamp), read at each send of the call:
 * lockd's connection epoch, which must be newer in every command written
 * after a connection was lost than in any written on it (a command on
 * the lost connection may still arrive late). */
typedef const char *csr_stamp_fn(void *arg);
/* A command may still reach its node late: its connection was lost (or
 * given up), or a call was given up on the wire at its deadline; or slots
 * changed primaries (a late command of the old one may run after the
 * slot comes back to it). Told before any caller hears of it, so that
 * what the callers send next is stamped anew. */
typedef void csr_lost_fn(void *arg);

struct csr_cfg {
	const char *const *seeds; /* "host:port" ("[v6]:port"), n_seeds of them, at least one */
	int n_seeds;
	const char *password;   /* NULL or "": no AUTH */
	int connect_timeout_ms; /* a node's TCP connect; <= 0: 1000 */
	int command_timeout_ms; /* a node that answers nothing for so long is dropped; <= 0: 1000 */
	int refresh_ms;         /* periodic map refresh; <= 0: 5000 */
	/* csr_write's calls count once WAIT wait_replicas (<= 0: no WAIT)
	 * answers that many replicas have them; WAIT's own timeout
	 * wait_timeout_ms (<= 0, or above half command_timeout_ms: that half) */
	int wait_replicas;
	int wait_timeout_ms;
	csr_event_fn *on_event; /* NULL: none told; never calls csr_free */
	void *event_arg;        /* on_event's, stamp's and on_lost's */
	csr_stamp_fn *stamp;    /* NULL: csr_stamp does nothing */
	csr_lost_fn *on_lost;   /* NULL: none told; never calls csr_free */
	/* Lua scripts every node connection loads (SCRIPT LOAD) right after
	 * its INFO, before any call goes on it: an EVALSHA sent there then
	 * finds its script, so no NOSCRIPT sends one call's body again
	 * behind a later call of the same connection (lockd's calls of one
	 * slot rely on their order). Not copied: they must outlive the router. */
	const char *const *scripts;
	int n_scripts;
};

/* r NULL: the call failed (no node, lost connection, timeout, deadline).
 * r belongs to the router: valid during the call only. */
typedef void csr_reply_fn(const redisReply *r, void *arg);

/* A router, its first map refresh started (csr_covered says when it is
 * ready). NULL with err filled when cfg is unusable: no seed, more than
 * 16, or a seed that is not HOST:PORT or [IPV6]:PORT (read as cfg reads a
 * master's address). */
struct csr_router *csr_new(struct event_base *base, const struct csr_cfg *cfg, char *err,
                           size_t errlen);

/* Send one command for a slot (argv copied; argvlen NULL: each argv is
 * a C string); fn is called exactly once, on the loop, unless the call is
 * detached. deadline_us is now_us() time (CLOCK_MONOTONIC): no retry
 * starts after it, and the call fails then wherever it is (on the wire,
 * its reply is dropped when it comes). The handle is valid until fn is
 * called. NULL (fn is not called): out of memory, argc < 1, or slot not
 * below CSL_SLOTS. */
struct csr_req *csr_command(struct csr_router *rt, unsigned slot, int64_t deadline_us,
                            csr_reply_fn *fn, void *arg, int argc, const char **argv,
                            const size_t *argvlen);

/* csr_command for a write (redis.wait_replicas): with wait_replicas > 0,
 * the node's reply reaches fn only once a WAIT sent behind it on the
 * same connection (one WAIT at a time there, behind all the writes sent
 * since the last) answers at least wait_replicas; a WAIT that answers fewer, an
 * error, or nothing makes the call fail (NULL: the write may have run,
 * on the primary alone). The deadline counts the WAIT too. */
struct csr_req *csr_write(struct csr_router *rt, unsigned slot, int64_t deadline_us,
                          csr_reply_fn *fn, void *arg, int argc, const char **argv,
                          const size_t *argvlen);

/* The caller is gone: fn is never called; the call's memory goes when its
 * reply comes back, or at once when it is not on the wire. */
void csr_detach(struct csr_req *q);

/* Argument `at` of the call (0 < at < argc) is written, at each send of
 * it (the first, and after a redirection or a retry), as "+" and what
 * cfg.stamp says then. Call it right after csr_command: the first send
 * is on the loop, never inside csr_command. */
void csr_stamp(struct csr_req *q, int at);

/* 1 when every slot has a primary with a live connection. */
int csr_covered(const struct csr_router *rt);
/* 1 when some slot has one. */
int csr_any_live(const struct csr_router *rt);

/* One slot of each primary that serves one in the map (the first it
 * serves), up to max: a command without a key (SCAN) sent for that slot
 * reaches that primary. Their number. */
int csr_primaries(const struct csr_router *rt, unsigned *slots, int max);

/* How many times a slot group's primary changed in the router's map (a
 * new map, or a MOVED it learned from): a walk over the primaries is
 * whole only if this did not change meanwhile. */
uint64_t csr_slot_moves(const struct csr_router *rt);

/* Ask for a map refresh now (rate-limited; one at a time). */
void csr_refresh(struct csr_router *rt);

/* Why the last node a refresh asked did not give a map ("" if none
 * failed yet): "host:port: reason". */
const char *csr_refresh_error(const struct csr_router *rt);

/* The primary the router's map names for slot: 0 and host, port; -1 when
 * the slot is not served. */
int csr_slot_owner(const struct csr_router *rt, unsigned slot, char *host, size_t hlen, int *port);
/* 1 if the map names host:port the primary of some slot (or there is no
 * map yet); 0 if it serves none. */
int csr_serves(const struct csr_router *rt, const char *host, int port);

/* What csr_stats reports of one node. */
enum csr_node_role {
	CSR_ROLE_PRIMARY, /* a primary in the router's map: it gets the calls of its slots */
	CSR_ROLE_REPLICA, /* a replica in the map: no connection, no calls */
	CSR_ROLE_UNKNOWN, /* not in the map: a redirection's target, or a primary that left it */
};

struct csr_node_stats {
	char host[CSL_HOST_MAX + 1];
	int port;
	enum csr_node_role role;
	int connected;           /* a connection is up (its AUTH sent) */
	uint64_t sent;           /* commands sent there */
	uint64_t moved, ask;     /* MOVED and ASK it answered */
	uint64_t tryagain;       /* TRYAGAIN and CLUSTERDOWN it answered */
	uint64_t failed;         /* calls that got no reply from it (lost, timed out) */
	uint64_t connects, lost; /* connections started; connections lost or refused */
	uint64_t waits;          /* WAITs sent behind writes */
	uint64_t restarts;       /* new run_ids seen on connecting (CSR_EV_RESTARTED) */
	uint64_t wait_short;     /* WAITs that answered fewer replicas than asked, or an error */
	char last_error[96];     /* why the last connection went ("" if none did) */
};

/* Per node, primaries of the map first: fills up to max, returns how
 * many there are. *refreshes: map refreshes that succeeded (may be NULL). */
int csr_stats(const struct csr_router *rt, struct csr_node_stats *out, int max,
              uint64_t *refreshes);

/* Free the router, calls in flight included: their fns are not called.
 * Not from inside a csr_reply_fn. */
void csr_free(struct csr_router *rt);

/* ---- pure helpers (unit-tested) ---- */

/* The wait before retry number attempt (0 first) of a TRYAGAIN,
 * CLUSTERDOWN or a connecting primary: base_ms doubled per attempt up
 * to max_ms, cut to end at the deadline; -1 when the deadline has come
 * (fail now). */
int64_t csr_backoff_us(int attempt, int base_ms, int max_ms, int64_t now_us, int64_t deadline_us);

#endif
