/* master: one Redis master: a hiredis async connection on the libevent
 * loop, its scripts, request timeouts, health, reconnection, and restart
 * detection. It reports up and down to its user through master_opts;
 * whether a master counts towards a majority is membership's call. */
#ifndef LOCKD_MASTER_H
#define LOCKD_MASTER_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "scripts.h"
#include "util.h"
#include "ilist.h"

struct event_base;
struct master;
struct sn_entry;
struct cfg_sentinel;
struct mcl;

/* A redis.masters entry that is a Redis Cluster (mcluster.c): some of its
 * nodes' "HOST:PORT"; nseeds 0: the entry is not one. */
struct master_cluster {
	const char *const *seeds;
	int nseeds;
};

#define MASTER_EPOCH_LEN 20 /* master_epoch()'s length, always (zero-padded) */

/* The layout of what this build stores on the masters (the keys, their
 * types and what the scripts make of them), a decimal number. Each command
 * connection is named "lockd-l<LAYOUT>-<instance>" and reads "<prefix>
 * layout" at its handshake (master_hs.c): a master whose key says another
 * layout does not count (doc/design.md, "Layout version and rolling
 * upgrades"). A build of a layout other than 1 also switches the masters
 * to its own (the key set, then no connection of another layout left).
 * Overridable only for the test build of layout 2
 * (tests/integration/lockd-layout2), which compiles master_hs.c, the one
 * file that reads it, again with -DMASTER_LAYOUT. */
#ifndef MASTER_LAYOUT
#define MASTER_LAYOUT "1"
#endif

enum master_state {
	MS_DOWN,        /* no connection; a reconnect timer is armed */
	MS_RESOLVING,   /* a sentinel entry: asking its Sentinels where the primary is */
	MS_CONNECTING,  /* TCP connect in flight */
	MS_HANDSHAKE,   /* connected; AUTH, the name, the layout, SCRIPT LOAD, INFO, ROLE in
	                   flight (master_hs.c): not used yet */
	MS_LAYOUT_WAIT, /* a build of a layout other than 1 only: the handshake is done and
	                   the key says this build's layout, but CLIENT LIST still lists a
	                   connection of another layout (one that may still count there):
	                   not used, no handshake deadline; CLIENT LIST again every 100 ms
	                   (layout_timer) until none is listed, then MS_UP */
	MS_UP,          /* answering; calls go to it */
};

/* A master's pub/sub subscriber (mastersub.c), for released-key notices.
 * It exists only while its master is MS_UP and is lost and made again on
 * its own: the command connection and its calls never depend on it. */
enum sub_state {
	SUB_OFF,        /* none: the master is not up (made again when it comes up) */
	SUB_WAIT,       /* lost while the master is up: sub_timer reconnects after a backoff */
	SUB_CONNECTING, /* connect, AUTH, SUBSCRIBE in flight: notices may be missed meanwhile */
	SUB_UP,         /* subscribed: notices arrive; a PING when it is quiet proves it alive */
};

/* reply is NULL when the master failed, timed out or went away. It is
 * called exactly once for every master_call that returned 0, never
 * from inside master_call itself. */
typedef void master_reply_fn(struct master *m, redisReply *reply, void *arg);

/* Released-key notices from the master's pub/sub channel. */
typedef void master_notice_fn(const char *key, size_t klen);

/* A subscriber is subscribed (again): release notices sent before, while
 * it was not, may have been missed. */

/* The handshake finished: m is MS_UP. restarted: its run_id differs from
 * the one of an earlier connection (m->prev_run_id -> m->run_id), so it may
 * have lost keys; has_marker: lockd's marker key is on it. */
typedef void master_up_fn(struct master *m, int restarted, int has_marker);

/* m is MS_DOWN: a connection, connect attempt or handshake failed or was
 * lost; it reconnects by itself. Not called for masters_shutdown's close. */
typedef void master_down_fn(struct master *m);

struct master_opts {
	int64_t timeout_ms;
	int64_t reconnect_max_ms;
	const char *password; /* "" for none */
	const char *prefix;   /* key prefix, for the marker and channel */
	master_notice_fn *on_notice;
	master_notice_fn *on_elected; /* an election's change notice (1.3), or NULL */
	/* The subscriber of a master is subscribed (again): release and
	 * election notices sent while it was not were missed. NULL: not told. */
	void (*on_subscribed)(struct master *m);
	master_up_fn *on_up;
	master_down_fn *on_down;
	const char *gen_key;           /* "P gen INSTANCE": this process's connection epoch on a
	                                  master (scripts.c), copied at masters_init */
	const char *name_key;          /* "P name INSTANCE": where this lockd's name is, for WHO on
	                                  every lockd (1.4), copied at masters_init */
	const char *name;              /* the name (config key name), copied at masters_init and
	                                  masters_set_opts; "" or NULL: none written */
	int64_t wait_replicas;         /* WAIT for this many replicas after each batch of writes */
	const char *sentinel_password; /* AUTH on Sentinels; "" or NULL: none (masters_init) */
	const struct cfg_sentinel *sentinel;  /* of each master (nseeds 0: standalone), or
	                                         NULL: all standalone (masters_init) */
	const struct master_cluster *cluster; /* of each master (nseeds 0: not a cluster),
	                                         or NULL: none is (masters_init) */
	const char *instance; /* this lockd's instance (as in its tokens), which names its
	                         connections on the masters; copied at masters_init */
};

struct master {
	int idx;
	char *name;            /* "host:port" or "sentinel:NAME" as configured */
	struct addr addr;      /* connected or being connected (a sentinel entry: as resolved) */
	char node[300];        /* addr as "host:port" ("-": not resolved yet) */
	struct sn_entry *sn;   /* a sentinel entry's Sentinels, or NULL */
	struct mcl *cl;        /* a cluster entry's router and calls (mcluster.c), or NULL */
	char up_node[300];     /* node of the last connection that went up */
	int replicas;          /* replicas ROLE listed on the connection that is (was last) up */
	int hs_replicas;       /* the same, at the handshake in progress */
	int64_t role_at_us;    /* ROLE last asked (refreshed while up) */
	int64_t role_seen_us;  /* when the ROLE that replicas comes from was asked */
	int roles_out;         /* ROLEs in flight (one at a time while up) */
	uint64_t wait_short;   /* batches of writes that WAIT found on too few replicas */
	int wait_short_logged; /* a shortfall was logged and no WAIT succeeded since */
	int wait_short_now;    /* the latest WAIT answered short: one WAIT at a time */
	int waits_out;         /* WAITs in flight on this connection */

	/* The replicas' "HOST:PORT,..." (mrepl_role_nodes; "": none yet), as
	 * replicas counts them, and at the handshake in progress. */
	char replica_nodes[256], hs_replica_nodes[256];

	enum master_state state;
	struct redisAsyncContext *ac;  /* commands */
	struct redisAsyncContext *sub; /* pub/sub subscriber (sub_state) */
	struct ilist inflight;         /* struct mreq, in send order */
	struct ilist pend;             /* batchable calls of this loop turn, not
	                                  sent yet: joined at its end */
	struct ilink dirty;            /* on the list of masters to write at the
	                                    end of the loop turn */
	struct event *timer;           /* oldest request / connect deadline */
	struct event *retry;           /* reconnect after backoff */
	int64_t state_since_us;
	int64_t backoff_ms;
	int has_marker;        /* lockd's marker key is on it (EXISTS at the handshake, or
	                          written since) */
	int restarted;         /* run_id changed; not reported through on_up yet */
	char run_id[48];       /* of the last handshake */
	char prev_run_id[48];  /* before the restart reported (or to be reported) */
	int64_t latency_us;    /* last round trip */
	int64_t last_reply_us; /* when it last answered */
	int64_t wrote_us;      /* when its socket last took our bytes */
	uint64_t reconnects;
	char last_error[128];
	/* The layout key's value at the last handshake that read it, as one
	 * printable word (mhs_layout_judge; MASTER_LAYOUT when it is missing),
	 * "-" before any; and the value refused last, "" once one was not. */
	char layout[36], layout_refused[36];
	int name_refused_logged; /* CLIENT SETNAME was refused, and that was logged */
	/* The switch to this build's layout (a build of a layout other than
	 * 1; master_hs.c): connections of another layout CLIENT LIST listed
	 * at the last handshake or poll (0 when none, or on a layout-1
	 * build); a wait is going on since layout_wait_since_us (from its
	 * first listing until one lists none, across reconnects: logged once
	 * at each end); CLIENT LIST was refused and that was logged; the
	 * poll's timer (MS_LAYOUT_WAIT). */
	int layout_wait;
	int layout_waiting;
	int64_t layout_wait_since_us;
	int list_refused_logged;
	struct event *layout_timer;
	int hs_switch; /* the steps of the switch answered at this handshake (master_hs.c) */
	/* the connection epoch (master_epoch) of this connection, as SCR_GEN
	 * takes it, and when it was last raised on the master */
	char gen[MASTER_EPOCH_LEN + 1];
	int64_t gen_at_us;
	const char *gen_argv[GA_ARGC];
	size_t gen_len[GA_ARGC];
	/* the subscriber */
	enum sub_state sub_state;
	struct event *sub_timer; /* SUB_WAIT: reconnect; SUB_CONNECTING: its deadline;
	                            SUB_UP: the next PING, or the deadline of the one out */
	int64_t sub_since_us;    /* sub_state entered */
	int64_t sub_backoff_ms;
	int64_t sub_heard_us; /* bytes last read from it */
	int64_t sub_ping_us;  /* a PING out since then and not answered yet; 0: none */
	uint64_t sub_reconnects;
	/* A cluster entry's: the node its subscriber goes to next, into addr
	 * and node (a live primary: the one it was on may have died while the
	 * entry stays up); NULL for any other entry (mastersub.c). */
	void (*sub_where)(struct master *m);
};

int masters_init(struct event_base *base, char **names, int n, const struct master_opts *o);
void masters_set_opts(const struct master_opts *o);
void masters_shutdown(void);
int masters_count(void);
struct master *master_get(int i);
int masters_up(void);
/* Masters in state s (MS_LAYOUT_WAIT: reachable, not counted until the
 * lockd of another layout have left them). */
int masters_in(enum master_state s);
const char *master_state_name(enum master_state s);

/* Send a command. For a script, argv[0] and argv[1] are ignored and
 * replaced by EVALSHA and its SHA (EVAL and the body after NOSCRIPT).
 * argv and argvlen must stay valid until fn runs. Returns -1 (and fn will
 * not run) when the master is not up. Everything is written at the end
 * of the loop turn; the calls of a script with a batch form
 * (script_batch_of) made in one turn go out as one script call. */
int master_call(struct master *m, int script, int argc, const char **argv, const size_t *argvlen,
                master_reply_fn *fn, void *arg);
/* master_call for the lock of slot slots[0] (nslots 1), or over nslots
 * items, item i of slot slots[i] (a renewal, releases, fence raises: the
 * slot of each item's lock name, csl_keyslot). A cluster entry routes it
 * by them (mcluster.c) and refuses a call without them (-1: it counts as
 * a no); any other master ignores them. */
int master_call_at(struct master *m, const unsigned *slots, int nslots, int script, int argc,
                   const char **argv, const size_t *argvlen, master_reply_fn *fn, void *arg);
/* 1 when some master is a cluster entry (its calls need their slots). */
int masters_any_cluster(void);
/* A cluster entry: one slot of each of its primaries (a command without
 * a key sent for it reaches that primary: a SCAN), and how many times its
 * slots changed primaries (a walk over them is whole only if this did
 * not change). 0 for any other master. */
int master_cluster_nodes(struct master *m, unsigned *slots, int max);
uint64_t master_cluster_moves(struct master *m);
/* A cluster entry: ask its router for a new map now (rate-limited). */
void master_cluster_refresh(struct master *m);

/* One node of a cluster entry as STATS and /metrics show it. */
struct master_node {
	char addr[64];                /* HOST:PORT */
	const char *role;             /* "primary", "replica", or "other" (not in the map) */
	int connected;                /* lockd's connection to it is up (primaries only) */
	uint64_t sent;                /* commands lockd sent it */
	uint64_t redirects, tryagain; /* MOVED and ASK; TRYAGAIN and CLUSTERDOWN */
};
/* A cluster entry's nodes, primaries first: fills up to max, returns how
 * many there are (0 for any other master). */
int master_cluster_stats(struct master *m, struct master_node *out, int max);

/* The connection epoch now, in decimal: every command connection takes the
 * next one at its connect, and its handshake raises master_opts.gen_key on
 * its master to it before any request goes out on it. A script argument
 * that points here carries the epoch of the moment it is written to a
 * connection (or written again after NOSCRIPT), so a request written on a
 * connection lockd gave up on carries less than that master's key says
 * once lockd has connected again: a late arrival of it is stale. */
const char *master_epoch(void);

/* Write lockd's marker key on m unless it has it: "this master has counted,
 * so it holds lockd's data". */
void master_set_marker(struct master *m);

#endif
