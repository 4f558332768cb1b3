/* csl_router: calls routed by slot over one Redis Cluster (issue 31);
 * the connections and map refreshes are csl_router_conn.c's.
 *
 * A call is first dispatched from the router's FIFO of new calls, in the
 * order they were made (kick_cb), then from its own timer for a retry;
 * never inside csr_command, so its callback never runs inside the
 * caller's own call. Writes held for their WAIT are answered in the
 * order they ran. It goes to the
 * primary the map names for its slot (or to a redirection's target):
 * - MOVED: a refresh is asked for; when the map knows the target as a
 *   primary, the slot's owner in the map is set to it and the call is
 *   sent there at once;
 * - ASK: sent there once, behind ASKING, on the same connection (an
 *   importing primary, which CLUSTER SLOTS may not list yet);
 * - a MOVED to a node the map does not name as a primary (a promoted
 *   replica, a node it does not know): the call waits for a newer map,
 *   within its deadline and not counted as a redirection, so that what
 *   that node holds is judged (csr_event) before any of its replies
 *   counts;
 * - TRYAGAIN, CLUSTERDOWN, or a primary still connecting: sent again by
 *   the map after a doubling backoff while the deadline lasts;
 * - a primary whose connection is down: failed at once (as lockd's down
 *   masters are), and a refresh asked for, since it may have been
 *   replaced;
 * - no reply (connection lost, timed out): failed; the command may have
 *   run, so it is never sent again.
 * Redirections are bounded (CSR_MAX_REDIRECTS between two retries) and so
 * are retries (the deadline, and CSR_MAX_RETRIES); a call on the wire past its deadline
 * fails then, its reply dropped when it comes. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <hiredis/async.h>

#include "csl_router_int.h"
#include "rdup.h"
#include "util.h"

#define CSR_MAX_REDIRECTS 5    /* MOVED and ASK followed per call */
#define CSR_MAX_RETRIES   1000 /* TRYAGAIN, CLUSTERDOWN or connecting waits per call */
#define RETRY_BASE_MS     5
#define RETRY_MAX_MS      100
#define WAIT_LATE_MS      110 /* how late Redis may end a WAIT (its timer's granularity) */

/* A call's state. */
enum csr_qstate {
	QS_WAIT, /* new (on rt->fifo), or waiting for a retry (its timer) */
	QS_SENT, /* on the wire (q->send); its timer is the deadline */
	QS_HELD, /* a write answered, on held_on->held until its WAIT answers; timer: deadline */
};

struct csr_req {
	struct csr_router *rt;
	struct csr_req *prev, *next;
	csr_reply_fn *fn;
	void *arg;
	int64_t deadline_us;
	unsigned slot;
	enum csr_qstate state;
	struct event *timer;
	struct csr_send *send;
	int redirects, retries;
	uint64_t need_map;        /* dispatched by the map once rt->refreshes reaches it */
	int asking;               /* send ASKING before it */
	int write;                /* csr_write: counts once WAIT says enough replicas have it */
	redisReply *held;         /* QS_HELD: its reply (a copy) */
	struct csr_conn *held_on; /* QS_HELD: the connection whose WAIT it waits for */
	const redisAsyncContext *held_ac; /* QS_HELD: the context that answered it */
	struct csr_req *hprev, *hnext;    /* on held_on->held */
	char to_host[CSL_HOST_MAX + 1];   /* a redirection's target; to_port 0: by the map */
	int to_port;
	int argc;
	const char **argv;
	size_t *argvlen;
	int stamp_at;          /* csr_stamp's argument, 0: none */
	char stamp[48];        /* its value at the last send */
	struct csr_req *fnext; /* on rt->fifo: submitted, its first dispatch to come */
	int in_fifo;
};

/* ---- pure helpers ---- */

int64_t csr_backoff_us(int attempt, int base_ms, int max_ms, int64_t now_us, int64_t deadline_us)
{
	if (now_us >= deadline_us)
		return -1;
	int64_t d = base_ms;
	for (int i = 0; i < attempt && d < max_ms; i++)
		d *= 2;
	if (d > max_ms)
		d = max_ms;
	d *= 1000;
	return d > deadline_us - now_us ? deadline_us - now_us : d;
}

/* ---- calls ---- */

static void unlink_req(struct csr_req *q)
{
	struct csr_router *rt = q->rt;
	if (q->prev)
		q->prev->next = q->next;
	else if (rt->reqs == q)
		rt->reqs = q->next;
	if (q->next)
		q->next->prev = q->prev;
	q->prev = q->next = NULL;
}

static void unhold(struct csr_req *q)
{
	struct csr_conn *c = q->held_on;
	if (!c)
		return;
	if (q->hprev)
		q->hprev->hnext = q->hnext;
	else
		c->held = q->hnext;
	if (q->hnext)
		q->hnext->hprev = q->hprev;
	else
		c->held_tail = q->hprev;
	q->hprev = q->hnext = NULL;
	q->held_on = NULL;
	if (q->held)
		freeReplyObject(q->held);
	q->held = NULL;
}

/* Off rt->fifo (a call detached or freed before its first dispatch). */
static void fifo_remove(struct csr_req *q)
{
	struct csr_router *rt = q->rt;
	struct csr_req **pp = &rt->fifo, *prev = NULL;
	while (*pp && *pp != q) {
		prev = *pp;
		pp = &(*pp)->fnext;
	}
	if (*pp)
		*pp = q->fnext;
	if (rt->fifo_tail == q)
		rt->fifo_tail = prev;
	q->fnext = NULL;
	q->in_fifo = 0;
}

static void req_free(struct csr_req *q)
{
	if (q->in_fifo)
		fifo_remove(q);
	unhold(q);
	if (q->send)
		q->send->q = NULL; /* its reply is dropped when it comes */
	event_free(q->timer);
	free(q);
}

/* The call is over: r (NULL: failed) to its caller. */
static void finish(struct csr_req *q, const redisReply *r)
{
	unlink_req(q);
	csr_reply_fn *fn = q->fn;
	void *arg = q->arg;
	req_free(q);
	if (fn)
		fn(r, arg);
}

/* Dispatch again after a backoff, within the deadline. */
static void retry_later(struct csr_req *q)
{
	int64_t d =
	    csr_backoff_us(q->retries, RETRY_BASE_MS, RETRY_MAX_MS, now_us(), q->deadline_us);
	if (d < 0 || ++q->retries > CSR_MAX_RETRIES) {
		finish(q, NULL);
		return;
	}
	q->state = QS_WAIT;
	csr_timer_in(q->timer, d);
}

static void reply_cb(redisAsyncContext *ac, void *reply, void *priv);

/* ---- WAIT: a write counts once enough replicas acknowledged it ---- */

/* Send one WAIT behind the writes sent on c since the last one, unless
 * one is on the wire (its answer sends the next). */
static void wait_cb(evutil_socket_t fd, short what, void *arg)
{
	struct csr_conn *c = arg;
	struct csr_router *rt = c->rt;
	if (c->state != CS_UP || !c->ac || c->wait_out || !c->wait_due)
		return; /* lost meanwhile (its writes fail with it), or one is out */
	struct csr_send *s = calloc(1, sizeof(*s));
	const char *argv[3] = {"WAIT", rt->wait_n, rt->wait_ms};
	if (!s || redisAsyncCommandArgv(c->ac, reply_cb, s, 3, argv, NULL) != REDIS_OK) {
		free(s);
		/* no WAIT can follow those writes: none of them can count */
		csr_conn_lost(c, "WAIT could not be sent", 1);
		return;
	}
	s->c = c;
	s->is_wait = 1;
	csr_conn_sent(c, s, now_us());
	c->wait_out = 1;
	c->wait_due = 0;
	c->st.waits++;
}

/* A write was sent on c: a WAIT follows it, in this loop turn if none is
 * on the wire, else once that one answers. */
static void want_wait(struct csr_conn *c)
{
	if (!c->wait_ev && !(c->wait_ev = event_new(c->rt->base, -1, 0, wait_cb, c))) {
		csr_conn_lost(c, "out of memory", 1);
		return;
	}
	c->wait_due = 1;
	if (!c->wait_out && !event_pending(c->wait_ev, EV_TIMEOUT, NULL))
		event_active(c->wait_ev, EV_TIMEOUT, 0);
}

/* c's WAIT, sent on ac, answered (r NULL: that connection went): every
 * write held on c and answered on ac was answered before it, so sent
 * before it, and counts if r says enough replicas have it; otherwise it
 * failed (it may have run). A write held from another connection (none
 * should be) fails: no WAIT of its own connection can answer now. */
static void wait_answered(struct csr_conn *c, const redisAsyncContext *ac, const redisReply *r)
{
	int ok = r && r->type == REDIS_REPLY_INTEGER && r->integer >= c->rt->wait_replicas;
	if (r && !ok)
		c->st.wait_short++;
	c->wait_out = 0;
	if (!r)
		c->wait_due = 0; /* the writes since went with the connection */
	while (c->held) {
		struct csr_req *q = c->held;
		redisReply *h = q->held;
		int mine = q->held_ac == ac;
		q->held = NULL; /* finish frees the call, not the reply it passes on */
		unhold(q);
		finish(q, ok && mine ? h : NULL);
		if (h)
			freeReplyObject(h);
	}
	if (c->wait_due && c->ac && c->wait_ev) /* writes sent since: their WAIT */
		event_active(c->wait_ev, EV_TIMEOUT, 0);
}

/* A write's answer waits on c for c's next WAIT (its deadline still
 * runs); 0, or -1 when it cannot (out of memory: it failed). */
static int hold(struct csr_req *q, struct csr_conn *c, const redisAsyncContext *ac,
                const redisReply *r)
{
	if (!(q->held = rdup_reply(r)))
		return -1;
	q->held_on = c;
	q->held_ac = ac;
	q->hnext = NULL; /* at the tail: their callers hear them in the order they ran */
	q->hprev = c->held_tail;
	if (c->held_tail)
		c->held_tail->hnext = q;
	else
		c->held = q;
	c->held_tail = q;
	q->state = QS_HELD;
	int64_t left = q->deadline_us - now_us();
	csr_timer_in(q->timer, left > 0 ? left : 0);
	return 0;
}

static void dispatch(struct csr_req *q)
{
	struct csr_router *rt = q->rt;
	int64_t now = now_us();
	if (now >= q->deadline_us) {
		finish(q, NULL);
		return;
	}
	struct csr_conn *c = NULL;
	if (q->to_port) {
		c = csr_conn_get(rt, q->to_host, q->to_port);
	} else if (!rt->have_map || rt->refreshes < q->need_map) {
		csr_refresh(rt); /* rate-limited: one at a time */
		retry_later(q);  /* the first refresh, or a newer map, has not come yet */
		return;
	} else {
		uint16_t n = rt->map->slot[q->slot];
		if (n != CSL_NO_NODE)
			c = rt->node_conn[n];
	}
	if (!c || c->state == CS_DOWN) { /* nobody serves it now: a refresh may find who */
		csr_refresh(rt);
		finish(q, NULL);
		return;
	}
	if (c->state == CS_CONNECTING) {
		retry_later(q);
		return;
	}
	struct csr_send *s = calloc(1, sizeof(*s));
	if (!s) {
		finish(q, NULL);
		return;
	}
	s->c = c;
	s->q = q;
	if (q->stamp_at > 0 && rt->stamp) { /* read now: the connection it goes on is live */
		const char *v = rt->stamp(rt->event_arg);
		int n = v ? snprintf(q->stamp, sizeof(q->stamp), "+%s", v) : -1;
		if (n <= 1 || (size_t)n >= sizeof(q->stamp)) {
			finish(q, NULL); /* never sent without its stamp */
			return;
		}
		q->argv[q->stamp_at] = q->stamp;
		q->argvlen[q->stamp_at] = (size_t)n;
	}
	if (q->asking)
		redisAsyncCommand(c->ac, NULL, NULL, "ASKING");
	if (redisAsyncCommandArgv(c->ac, reply_cb, s, q->argc, q->argv, q->argvlen) != REDIS_OK) {
		free(s);
		finish(q, NULL);
		return;
	}
	q->asking = 0;
	csr_conn_sent(c, s, now);
	c->st.sent++;
	q->send = s;
	q->state = QS_SENT;
	csr_timer_in(q->timer, q->deadline_us - now);
	if (q->write && rt->wait_replicas > 0)
		want_wait(c);
}

/* Follow a MOVED or an ASK from c to rd's node. */
static void redirect(struct csr_req *q, struct csr_conn *c, const struct csl_redirect *rd, int ask)
{
	struct csr_router *rt = q->rt;
	if (!ask)
		csr_refresh(rt);
	if (++q->redirects > CSR_MAX_REDIRECTS) {
		finish(q, NULL);
		return;
	}
	q->asking = ask;
	if (strcmp(rd->host, "?") == 0) { /* no address known: the refresh will say */
		q->to_port = 0;
		retry_later(q);
		return;
	}
	snprintf(q->to_host, sizeof(q->to_host), "%s", rd->host[0] ? rd->host : c->host);
	q->to_port = rd->port;
	int n = rt->have_map ? csl_map_find(rt->map, q->to_host, q->to_port) : -1;
	if (!ask && (n < 0 || rt->map->nodes[n].role != CSL_PRIMARY)) {
		/* MOVED to a node the map does not name as a primary (a replica
		 * promoted, a node it does not know): what it holds is judged
		 * when a map names it (csr_event), before any call of ours
		 * reaches it. The call goes by the first map newer than this
		 * one; that wait is not a redirection (its deadline bounds it). */
		q->redirects--;
		q->to_port = 0;
		q->need_map = rt->refreshes + 1;
		retry_later(q);
		return;
	}
	/* the next calls of the slot go there too */
	if (!ask && rt->node_conn[n] && rt->map->slot[rd->slot] != (uint16_t)n) {
		rt->map->slot[rd->slot] = (uint16_t)n;
		rt->moves++;
		csr_late(rt); /* before this call goes there, stamped */
	}
	dispatch(q);
}

static void reply_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct csr_send *s = priv;
	struct csr_conn *c = s->c;
	struct csr_req *q = s->q;
	redisReply *r = reply;
	int is_wait = s->is_wait;
	if (c)
		csr_conn_send_done(c, s, r != NULL);
	free(s);
	if (c && !r && c->ac == ac) /* the context is going: fail the rest once */
		csr_conn_lost(c, ac->errstr[0] ? ac->errstr : "connection lost", 0);
	if (is_wait) {
		if (c)
			wait_answered(c, ac, r);
		return;
	}
	if (!q)
		return;
	q->send = NULL;
	event_del(q->timer);
	if (!r) {
		if (c)
			c->st.failed++;
		finish(q, NULL);
		return;
	}
	if (r->type == REDIS_REPLY_ERROR && c) {
		struct csl_redirect rd;
		switch (csl_parse_redirect(r->str, r->len, &rd)) {
		case CSL_R_MOVED:
			c->st.moved++;
			redirect(q, c, &rd, 0);
			return;
		case CSL_R_ASK:
			c->st.ask++;
			redirect(q, c, &rd, 1);
			return;
		case CSL_R_TRYAGAIN:
		case CSL_R_CLUSTERDOWN:
			c->st.tryagain++;
			q->to_port = 0; /* by the map again: the migration may end meanwhile */
			q->asking = 0;
			/* The retry starts over from the map, after a backoff: its
			 * redirections are counted anew. A call whose keys are on
			 * neither node of a migrating slot goes ASK, TRYAGAIN, ASK,
			 * TRYAGAIN... until the slot has moved, and must last as
			 * long as its deadline lets it, not 5 rounds. */
			q->redirects = 0;
			retry_later(q);
			return;
		default:
			break; /* CROSSSLOT, a malformed redirection, any error: the node's answer
			        */
		}
	}
	/* A write (a script's error included: it may have written some) counts
	 * once the WAIT behind it answers. */
	if (q->write && q->rt->wait_replicas > 0) {
		/* no WAIT can answer for it on a connection that is going: failed */
		if (!c || c->ac != ac || hold(q, c, ac, r) != 0)
			finish(q, NULL);
		return;
	}
	finish(q, r);
}

static void req_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct csr_req *q = arg;
	if (q->state == QS_WAIT) {
		dispatch(q);
		return;
	}
	/* libevent counts a timer from its loop's cached time, which may be
	 * older than ours: never fail a call before its deadline */
	int64_t left = q->deadline_us - now_us();
	if (left > 0) {
		csr_timer_in(q->timer, left);
		return;
	}
	/* on the wire or held past its deadline: its reply is dropped, but the
	 * command may still run, late: what the caller sends next is stamped
	 * anew (csr_lost_fn) */
	if (q->state == QS_SENT)
		csr_late(q->rt);
	finish(q, NULL);
}

/* The first dispatch of every call, in the order they were made: a
 * timer each would run in no set order (libevent's heap), and the calls
 * a caller makes for one slot must reach its node in its order (lockd's
 * record of a session ahead of the grant that checks it). */
static void kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct csr_router *rt = arg;
	struct csr_req *q, *last = rt->fifo_tail; /* calls made meanwhile: the next turn's */
	while ((q = rt->fifo)) { /* popped before dispatch: a finish may free others */
		rt->fifo = q->fnext;
		if (!rt->fifo)
			rt->fifo_tail = NULL;
		q->fnext = NULL;
		q->in_fifo = 0;
		int end = q == last;
		if (q->state == QS_WAIT)
			dispatch(q);
		if (end) {
			if (rt->fifo)
				event_active(rt->kick, EV_TIMEOUT, 0);
			break;
		}
	}
}

static struct csr_req *submit(struct csr_router *rt, unsigned slot, int64_t deadline_us,
                              csr_reply_fn *fn, void *arg, int argc, const char **argv,
                              const size_t *argvlen, int write)
{
	if (argc < 1 || slot >= CSL_SLOTS)
		return NULL;
	size_t bytes = sizeof(struct csr_req) + (size_t)argc * (sizeof(char *) + sizeof(size_t));
	for (int i = 0; i < argc; i++)
		bytes += (argvlen ? argvlen[i] : strlen(argv[i])) + 1;
	struct csr_req *q = calloc(1, bytes);
	if (!q)
		return NULL;
	q->timer = evtimer_new(rt->base, req_timer_cb, q);
	if (!q->timer) {
		free(q);
		return NULL;
	}
	q->argvlen = (size_t *)(q + 1);
	q->argv = (const char **)(q->argvlen + argc);
	char *p = (char *)(q->argv + argc);
	for (int i = 0; i < argc; i++) {
		size_t n = argvlen ? argvlen[i] : strlen(argv[i]);
		memcpy(p, argv[i], n);
		p[n] = '\0';
		q->argv[i] = p;
		q->argvlen[i] = n;
		p += n + 1;
	}
	q->argc = argc;
	q->write = write;
	q->rt = rt;
	q->fn = fn;
	q->arg = arg;
	q->slot = slot;
	q->deadline_us = deadline_us;
	q->state = QS_WAIT;
	q->next = rt->reqs;
	if (rt->reqs)
		rt->reqs->prev = q;
	rt->reqs = q;
	q->in_fifo = 1;
	if (rt->fifo_tail)
		rt->fifo_tail->fnext = q;
	else
		rt->fifo = q;
	rt->fifo_tail = q;
	event_active(rt->kick, EV_TIMEOUT, 0);
	return q;
}

struct csr_req *csr_command(struct csr_router *rt, unsigned slot, int64_t deadline_us,
                            csr_reply_fn *fn, void *arg, int argc, const char **argv,
                            const size_t *argvlen)
{
	return submit(rt, slot, deadline_us, fn, arg, argc, argv, argvlen, 0);
}

struct csr_req *csr_write(struct csr_router *rt, unsigned slot, int64_t deadline_us,
                          csr_reply_fn *fn, void *arg, int argc, const char **argv,
                          const size_t *argvlen)
{
	return submit(rt, slot, deadline_us, fn, arg, argc, argv, argvlen, 1);
}

void csr_detach(struct csr_req *q)
{
	unlink_req(q);
	req_free(q);
}

void csr_stamp(struct csr_req *q, int at)
{
	if (at > 0 && at < q->argc)
		q->stamp_at = at;
}

/* ---- the router ---- */

static void periodic_cb(evutil_socket_t fd, short what, void *arg)
{
	struct csr_router *rt = arg;
	csr_refresh(rt);
	csr_timer_in(rt->ptimer, (int64_t)rt->refresh_ms * 1000);
}

struct csr_router *csr_new(struct event_base *base, const struct csr_cfg *cfg, char *err,
                           size_t errlen)
{
	if (cfg->n_seeds < 1 || cfg->n_seeds > CSR_MAX_SEEDS) {
		snprintf(err, errlen, "%d seeds: 1 to %d needed", cfg->n_seeds, CSR_MAX_SEEDS);
		return NULL;
	}
	struct csr_router *rt = calloc(1, sizeof(*rt));
	if (!rt) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (int i = 0; i < cfg->n_seeds; i++) {
		/* as cfg reads a master's address */
		struct addr a;
		const char *why = addr_parse(cfg->seeds[i], 0, 0, &a);
		if (why) {
			snprintf(err, errlen, "seed %d (\"%.100s\"): %s", i + 1, cfg->seeds[i],
			         why);
			free(rt);
			return NULL;
		}
		snprintf(rt->seed_host[i], sizeof(rt->seed_host[i]), "%s", a.host);
		rt->seed_port[i] = a.port;
	}
	rt->n_seeds = cfg->n_seeds;
	rt->base = base;
	rt->connect_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 1000;
	rt->command_ms = cfg->command_timeout_ms > 0 ? cfg->command_timeout_ms : 1000;
	rt->refresh_ms = cfg->refresh_ms > 0 ? cfg->refresh_ms : 5000;
	rt->wait_replicas = cfg->wait_replicas > 0 ? cfg->wait_replicas : 0;
	/* a WAIT holds its connection for up to its timeout, and the command
	 * timeout drops a connection that answers nothing for longer */
	int wms = cfg->wait_timeout_ms > 0 ? cfg->wait_timeout_ms : rt->command_ms / 2;
	if (wms > rt->command_ms / 2)
		wms = rt->command_ms / 2;
	if (wms > rt->command_ms - WAIT_LATE_MS) /* Redis ends a WAIT up to ~100 ms late */
		wms = rt->command_ms - WAIT_LATE_MS;
	snprintf(rt->wait_n, sizeof(rt->wait_n), "%d", rt->wait_replicas);
	snprintf(rt->wait_ms, sizeof(rt->wait_ms), "%d", wms > 0 ? wms : 1);
	rt->password = cfg->password && cfg->password[0] ? strdup(cfg->password) : NULL;
	rt->scripts = cfg->scripts;
	rt->n_scripts = cfg->scripts ? cfg->n_scripts : 0;
	rt->on_event = cfg->on_event;
	rt->event_arg = cfg->event_arg;
	rt->stamp = cfg->stamp;
	rt->on_lost = cfg->on_lost;
	rt->map = malloc(sizeof(*rt->map));
	rt->scratch = malloc(sizeof(*rt->scratch));
	rt->runids = calloc(CSL_MAX_NODES, sizeof(*rt->runids));
	rt->changes = calloc(CSL_DIFF_MAX, sizeof(*rt->changes));
	rt->maxrep = calloc(CSL_MAX_NODES, sizeof(*rt->maxrep));
	rt->rtimer = evtimer_new(base, csr_refresh_timer, rt);
	rt->ptimer = evtimer_new(base, periodic_cb, rt);
	rt->kick = event_new(base, -1, 0, kick_cb, rt);
	if (!rt->map || !rt->scratch || !rt->runids || !rt->changes || !rt->maxrep || !rt->rtimer ||
	    !rt->ptimer || !rt->kick || (cfg->password && cfg->password[0] && !rt->password)) {
		snprintf(err, errlen, "out of memory");
		csr_free(rt);
		return NULL;
	}
	rt->rstarted_us = now_us() - 1000000000LL; /* the first refresh is not held back */
	csr_refresh(rt);
	csr_timer_in(rt->ptimer, (int64_t)rt->refresh_ms * 1000);
	return rt;
}

int csr_covered(const struct csr_router *rt)
{
	if (!rt->have_map)
		return 0;
	for (int s = 0; s < CSL_SLOTS; s++) {
		uint16_t n = rt->map->slot[s];
		if (n == CSL_NO_NODE || !rt->node_conn[n] || rt->node_conn[n]->state != CS_UP)
			return 0;
	}
	return 1;
}

int csr_any_live(const struct csr_router *rt)
{
	for (int n = 0; rt->have_map && n < rt->map->n_nodes; n++)
		if (rt->map->nodes[n].role == CSL_PRIMARY && rt->node_conn[n] &&
		    rt->node_conn[n]->state == CS_UP)
			return 1;
	return 0;
}

int csr_primaries(const struct csr_router *rt, unsigned *slots, int max)
{
	int k = 0;
	for (int i = 0; rt->have_map && i < rt->map->n_nodes && k < max; i++) {
		if (rt->map->nodes[i].role != CSL_PRIMARY)
			continue;
		for (unsigned s = 0; s < CSL_SLOTS; s++)
			if (rt->map->slot[s] == i) {
				slots[k++] = s;
				break;
			}
	}
	return k;
}

int csr_serves(const struct csr_router *rt, const char *host, int port)
{
	if (!rt->have_map)
		return 1; /* no map to say otherwise */
	int n = csl_map_find(rt->map, host, port);
	if (n < 0)
		return 0;
	for (unsigned s = 0; s < CSL_SLOTS; s++)
		if (rt->map->slot[s] == n)
			return 1;
	return 0;
}

uint64_t csr_slot_moves(const struct csr_router *rt)
{
	return rt->moves;
}

int csr_slot_owner(const struct csr_router *rt, unsigned slot, char *host, size_t hlen, int *port)
{
	if (!rt->have_map || slot >= CSL_SLOTS || rt->map->slot[slot] == CSL_NO_NODE)
		return -1;
	const struct csl_node *n = &rt->map->nodes[rt->map->slot[slot]];
	snprintf(host, hlen, "%s", n->host);
	*port = n->port;
	return 0;
}

int csr_stats(const struct csr_router *rt, struct csr_node_stats *out, int max, uint64_t *refreshes)
{
	int k = 0;
	if (refreshes)
		*refreshes = rt->refreshes;
	/* the map's nodes, primaries first, each with its connection's counts */
	for (int pass = 0; pass < 2 && rt->have_map; pass++)
		for (int i = 0; i < rt->map->n_nodes; i++) {
			const struct csl_node *n = &rt->map->nodes[i];
			if ((n->role == CSL_PRIMARY) != (pass == 0))
				continue;
			if (k < max) {
				struct csr_node_stats *o = &out[k];
				const struct csr_conn *c = NULL;
				for (c = rt->conns; c; c = c->next)
					if (c->port == n->port && strcmp(c->host, n->host) == 0)
						break;
				if (c) {
					*o = c->st;
				} else {
					memset(o, 0, sizeof(*o));
					snprintf(o->host, sizeof(o->host), "%s", n->host);
					o->port = n->port;
				}
				o->role = pass == 0 ? CSR_ROLE_PRIMARY : CSR_ROLE_REPLICA;
			}
			k++;
		}
	for (const struct csr_conn *c = rt->conns; c; c = c->next) {
		if (rt->have_map && csl_map_find(rt->map, c->host, c->port) >= 0)
			continue;
		if (k < max) {
			out[k] = c->st;
			out[k].role = CSR_ROLE_UNKNOWN;
		}
		k++;
	}
	return k;
}

void csr_free(struct csr_router *rt)
{
	if (!rt)
		return;
	while (rt->reqs) {
		struct csr_req *q = rt->reqs;
		unlink_req(q);
		req_free(q);
	}
	while (rt->conns)
		csr_conn_destroy(rt->conns); /* its commands' callbacks: NULL, nobody's */
	csr_refresh_close(rt);
	if (rt->rtimer)
		event_free(rt->rtimer);
	if (rt->ptimer)
		event_free(rt->ptimer);
	if (rt->kick)
		event_free(rt->kick);
	free(rt->map);
	free(rt->scratch);
	free(rt->runids);
	free(rt->changes);
	free(rt->maxrep);
	free(rt->password);
	free(rt);
}
