/* cluster: the pure core of a Redis Cluster router (issue 31), prefix csl_.
 *
 * hiredis 0.14 (Debian 12) has no cluster support, so lockd will route to
 * the primaries of a Redis Cluster itself. This module is that router's
 * part without I/O: a key's hash slot, a slot table built from a CLUSTER
 * SHARDS (Redis 7) or CLUSTER SLOTS reply, the parse of MOVED, ASK,
 * TRYAGAIN, CLUSTERDOWN and CROSSSLOT errors, and what to do with a
 * reply. It neither allocates nor does I/O; it is unit-tested on replies
 * recorded from a real Redis 7.0 cluster (tests/unit/fixtures/), and
 * checked against a live one of 3 primaries and 3 replicas (maps of every
 * node, CLUSTER KEYSLOT, the redirections of a slot migration:
 * tests/integration/test_cluster_live.c).
 *
 * The router on it, which connects to the nodes, keeps the map fresh and
 * follows redirections, is src/csl_router.c (tested against a live
 * cluster: tests/integration/test_cluster_router.c). Nothing in the daemon
 * uses either yet: cfg still refuses `cluster:` master entries, and
 * lockd's master layer (src/master.c) does not call the router. */
#ifndef LOCKD_CLUSTER_H
#define LOCKD_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#define CSL_SLOTS         16384      /* hash slots of a Redis Cluster */
#define CSL_MAX_PRIMARIES 64         /* primaries one map holds; more is refused */
#define CSL_MAX_NODES     256        /* primaries and replicas one map holds */
#define CSL_HOST_MAX      255        /* longest host name (RFC 1035's 255) */
#define CSL_ID_LEN        40         /* a node id: 40 lowercase hex digits */
#define CSL_NO_NODE       UINT16_MAX /* csl_map.slot[s] of a slot nobody serves */

/* The slot of a key: CRC16 (XMODEM) mod 16384 of its hash tag, the bytes
 * between the first '{' and the first '}' after it when there are any,
 * else of the whole key. As CLUSTER KEYSLOT answers. */
unsigned csl_keyslot(const char *key, size_t len);

enum csl_role {
	CSL_PRIMARY, /* serves the slots of its shard (CLUSTER SHARDS' "master") */
	CSL_REPLICA, /* copies a primary (csl_node.primary) and serves no slot */
};

enum csl_health {
	CSL_HEALTH_UNKNOWN, /* not said: CLUSTER SLOTS lists live nodes only, without health */
	CSL_HEALTH_ONLINE,  /* "online": answering */
	CSL_HEALTH_LOADING, /* "loading": a replica still syncing, not to be read */
	CSL_HEALTH_FAIL, /* "fail" (7.0.15 says it so) or "failed": the cluster marked it failed */
};

struct csl_node {
	/* Where to connect: the node's preferred endpoint (CLUSTER SHARDS'
	 * "endpoint", CLUSTER SLOTS' first element), its "ip" when that is
	 * "?" (cluster-preferred-endpoint-type hostname and none announced).
	 * "": cluster-preferred-endpoint-type unknown-endpoint, the host of
	 * the node that gave the reply. */
	char host[CSL_HOST_MAX + 1];
	int port;     /* 1-65535; 0: none given (a TLS-only node: tls_port) */
	int tls_port; /* CLUSTER SHARDS' "tls-port"; 0: none given */
	char id[CSL_ID_LEN + 1];
	enum csl_role role;
	enum csl_health health;
	int primary; /* a replica's primary, an index into csl_map.nodes; a primary: -1 */
};

/* A cluster's slot table. About 112 kB: keep it static or on the heap. */
struct csl_map {
	uint16_t
	    slot[CSL_SLOTS]; /* the primary serving each slot (index into nodes), or CSL_NO_NODE */
	int n_nodes;
	int n_primaries;
	struct csl_node nodes[CSL_MAX_NODES];
};

/* Fill *out from a CLUSTER SHARDS reply (Redis 7, RESP2) or a CLUSTER
 * SLOTS reply. 0 on success. -1 when the reply is not a consistent
 * cluster map: err then names the faulty element and what is wrong
 * (e.g. "shard 2, node 0: port 70000 not in 1-65535"), and *out holds
 * nothing usable (parse into a scratch map and keep the old one).
 * Unknown fields are ignored; a shard with neither slots nor a primary
 * is skipped (its replicas follow nothing). */
int csl_map_from_shards(const redisReply *r, struct csl_map *out, char *err, size_t errlen);
int csl_map_from_slots(const redisReply *r, struct csl_map *out, char *err, size_t errlen);

/* The number of slots no primary serves. When buf is not NULL, their
 * ranges ("5000, 12182-12190") go there, cut with "..." if too long. */
int csl_map_uncovered(const struct csl_map *m, char *buf, size_t len);

/* The node with that host and port ("" matches ""), or -1. */
int csl_map_find(const struct csl_map *m, const char *host, int port);

/* How the slots a node serves in a new map came to it, against the map
 * before (csl_map_diff). */
enum csl_change_kind {
	CSL_CH_PROMOTED, /* a replica of their old primary serves them: a failover */
	CSL_CH_MOVED,    /* another primary of the old map serves them, taken from a live
	                    one still in the cluster: a resharding (keys moved with them) */
	CSL_CH_NEW,      /* a node the old map did not know, or a replica of another
	                    primary, or the slots had no primary: what it holds is unknown */
};

struct csl_change {
	enum csl_change_kind kind;
	int from;     /* the old primary (index into the old map's nodes); -1: none */
	int to;       /* the new primary (index into the new map's nodes) */
	int slots;    /* how many slots went from -> to */
	int replicas; /* from's replicas in the old map (0 when from is -1) */
};

/* The slots whose primary changed from old to new, grouped by (from, to)
 * in slot order of their first slot: fills up to max, returns how many
 * groups there are. A node is the same in both maps when both name the
 * same id, or (when either has none: CLUSTER SLOTS before 7.0) the same
 * host and port. Slots that no primary serves in new are not listed.
 * MOVED needs the old primary alive (not "fail") and still in the new
 * map: slots taken from a failed or forgotten primary are NEW. -1 when
 * there are more than CSL_DIFF_MAX groups (judge every slot anew). */
#define CSL_DIFF_MAX 512
int csl_map_diff(const struct csl_map *old, const struct csl_map *new_map, struct csl_change *out,
                 int max);

enum csl_redirect_kind {
	CSL_R_NONE,        /* not a cluster error: some other answer */
	CSL_R_MOVED,       /* "MOVED <slot> <host>:<port>": the slot lives there now */
	CSL_R_ASK,         /* "ASK <slot> <host>:<port>": this key is being imported there */
	CSL_R_TRYAGAIN,    /* "TRYAGAIN ...": a multi-key request in a migrating slot */
	CSL_R_CLUSTERDOWN, /* "CLUSTERDOWN ...": the cluster or this slot is not served */
	CSL_R_CROSSSLOT,   /* "CROSSSLOT ...": the keys are in several slots (a bug of ours) */
	CSL_R_MALFORMED,   /* "MOVED " or "ASK " not followed by a valid slot and address */
};

struct csl_redirect {
	enum csl_redirect_kind kind;
	int slot; /* MOVED, ASK: 0-16383; else -1 */
	/* MOVED, ASK: the text before the last ':', an IPv6 address included
	 * ("::1"); "" is the host of the node that answered (unknown-endpoint);
	 * "?" is a node whose hostname is unknown (refresh the map instead). */
	char host[CSL_HOST_MAX + 1];
	int port; /* MOVED, ASK: 1-65535; else 0 */
};

/* Parse an error reply's text (redisReply's str and len, without "-" and
 * CR LF). Strict: a slot out of 0-16383, a port missing, non-numeric, 0
 * or above 65535, a leading zero or sign, a host with a space or control
 * byte or longer than CSL_HOST_MAX, and anything after the port make
 * CSL_R_MALFORMED. Returns out->kind. */
enum csl_redirect_kind csl_parse_redirect(const char *err, size_t len, struct csl_redirect *out);

/* What the router does with a node's reply to one command. */
enum csl_action {
	CSL_OK,    /* not an error reply: the node ran the command; use its reply */
	CSL_MOVED, /* the slot has moved for good: refresh the map, retry at the new node */
	CSL_ASK,   /* the key is being imported: retry once at that node after ASKING; map unchanged
	            */
	CSL_RETRY, /* TRYAGAIN, CLUSTERDOWN: retry the same way while the request's time lasts */
	CSL_FAIL,  /* anything else (CROSSSLOT, a malformed redirection, no reply): the master said
	              no */
};

/* Classify a reply (NULL, a lost connection, is CSL_FAIL). Only the top
 * level is looked at: a pipeline's replies are classified one by one. */
enum csl_action csl_classify(const redisReply *r);

#endif
