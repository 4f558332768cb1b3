/* csl_router_int: what csl_router.c (calls, the public API) and
 * csl_router_conn.c (node connections, map refreshes) share. */
#ifndef LOCKD_CSL_ROUTER_INT_H
#define LOCKD_CSL_ROUTER_INT_H

#include <stdint.h>

#include <hiredis/async.h>

#include "cluster.h"
#include "csl_router.h"

#define CSR_MAX_SEEDS 16
#define CSR_MAX_CANDS 16 /* nodes one refresh asks, at most */

/* A node connection's state. */
enum csr_cstate {
	CS_DOWN,       /* no connection: reconnects after a backoff while a primary of the map */
	CS_CONNECTING, /* connect under way (AUTH queued): calls wait for it, within their time */
	CS_UP,         /* connected: calls are sent */
};

struct csr_send;

/* A connection to one node: a primary of the map, or the target of a
 * redirection that the map does not name (yet). */
struct csr_conn {
	struct csr_router *rt;
	struct csr_conn *next;
	char host[CSL_HOST_MAX + 1];
	int port;
	enum csr_cstate state;
	redisAsyncContext *ac; /* NULL when DOWN */
	struct event *timer;   /* connect deadline; oldest reply's deadline; reconnect */
	int64_t since_us;      /* state entered */
	int64_t last_reply_us;
	int64_t backoff_ms;           /* the next reconnect's wait */
	int in_map;                   /* a primary of the current map */
	struct csr_send *head, *tail; /* commands on the wire, in send order */
	/* WAIT (wait_replicas > 0): a write sent activates wait_ev, which
	 * sends one WAIT behind the writes sent on this connection since the
	 * last one, when none is on the wire; a write's reply waits on held
	 * for the next WAIT reply, which covers exactly the writes answered
	 * before it (replies come in send order). */
	struct event *wait_ev; /* made at the first write (csl_router.c); freed here */
	struct csr_req *held;  /* answered writes waiting for their WAIT, oldest first */
	struct csr_req *held_tail;
	int wait_out; /* a WAIT is on the wire: one at a time (a replica short
	                 makes each take its timeout: no queue of them) */
	int wait_due; /* writes were sent since the last WAIT was */
	struct csr_node_stats st;
};

/* One command on the wire: hiredis owns it until its callback, which
 * always comes (with NULL when the context goes). */
struct csr_send {
	struct csr_conn *c; /* NULL: the connection is gone (router freed) */
	struct csr_req *q;  /* NULL: the call is over or detached; the reply is dropped */
	int is_wait;        /* a WAIT behind writes: its reply releases c->held */
	int64_t sent_us;
	struct csr_send *prev, *next;
};

/* A map refresh's state. */
enum csr_rstate {
	RS_IDLE,      /* none under way: the periodic timer or a trigger starts one */
	RS_SCHEDULED, /* asked for within CSR_REFRESH_MIN_MS of the last: rtimer starts it */
	RS_ASKING,    /* rc asks cands[ri]: rtimer is its deadline */
};

struct csr_router {
	struct event_base *base;
	char seed_host[CSR_MAX_SEEDS][CSL_HOST_MAX + 1];
	int seed_port[CSR_MAX_SEEDS];
	int n_seeds;
	char *password;             /* NULL: no AUTH */
	const char *const *scripts; /* loaded on each node connection (csr_cfg.scripts) */
	int n_scripts;
	int connect_ms, command_ms, refresh_ms;
	int wait_replicas;            /* 0: writes are not followed by WAIT */
	char wait_n[16], wait_ms[16]; /* WAIT's arguments */
	csr_event_fn *on_event;
	void *event_arg;
	csr_stamp_fn *stamp;
	csr_lost_fn *on_lost;
	/* the run_id each node had when the router last connected to it, by
	 * node id (by host and port for a node no map named): a node that
	 * comes back empty at another address is still told as a restart */
	struct csr_runid {
		char id[CSL_ID_LEN + 1]; /* "" when no map named it */
		char host[CSL_HOST_MAX + 1];
		int port;
		char run_id[41];
	} * runids;
	int n_runids;
	struct csl_change *changes; /* CSL_DIFF_MAX of them, for each new map */
	/* the most replicas any map showed each primary (by node id): a map
	 * from CLUSTER SLOTS leaves a failed replica out, which may be the
	 * one a write reached */
	struct csr_maxrep {
		char id[CSL_ID_LEN + 1];
		int replicas;
	} * maxrep;
	int n_maxrep;
	struct csl_map *map, *scratch; /* the map in use, the one a refresh parses into */
	int have_map;
	struct csr_conn *node_conn[CSL_MAX_NODES]; /* per map node: its connection (primaries) */
	struct csr_conn *conns;
	struct csr_req *reqs; /* calls not over, detached ones not on the wire excepted */
	struct csr_req *fifo, *fifo_tail; /* their first dispatch to come, in order (kick) */
	struct event *kick;
	/* refresh */
	enum csr_rstate rstate;
	redisAsyncContext *rc;
	struct event *rtimer, *ptimer; /* the refresh's own; the periodic one */
	int64_t rstarted_us;
	int again; /* asked for while one ran: another follows */
	char cand_host[CSR_MAX_CANDS][CSL_HOST_MAX + 1];
	int cand_port[CSR_MAX_CANDS];
	int n_cands, ri;
	unsigned rot; /* where the next refresh starts among the primaries */
	uint64_t refreshes;
	uint64_t moves; /* slot groups whose primary changed: by a new map, or a MOVED */
	char rwhy[200]; /* the last refresh attempt's failure */
};

/* csl_router_conn.c */
void csr_timer_in(struct event *ev, int64_t us);
struct csr_conn *csr_conn_get(struct csr_router *rt, const char *host, int port);
void csr_conn_sent(struct csr_conn *c, struct csr_send *s, int64_t now);
void csr_conn_send_done(struct csr_conn *c, struct csr_send *s, int replied);
/* A command may reach its node late (its connection was lost, or the
 * call was given up on the wire at its deadline), or a slot changed
 * primaries: cfg.on_lost is told, before any caller hears of it. */
static inline void csr_late(struct csr_router *rt)
{
	if (rt->on_lost)
		rt->on_lost(rt->event_arg);
}
void csr_conn_lost(struct csr_conn *c, const char *why, int free_ctx);
void csr_conn_arm(struct csr_conn *c);
/* Only with nothing on c's wire and no write held (none can be held
 * without its WAIT on the wire): csr_free frees the calls first. */
void csr_conn_destroy(struct csr_conn *c);
void csr_refresh_start(struct csr_router *rt);
void csr_refresh_close(struct csr_router *rt);
void csr_refresh_timer(evutil_socket_t fd, short what, void *arg);

#endif
