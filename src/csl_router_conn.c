/* csl_router_conn: the router's node connections and its map refreshes
 * (issue 31; the calls themselves are csl_router.c's).
 *
 * hiredis 0.14 async contexts have no timeouts, so each connection keeps
 * its commands in send order and one timer: the connect deadline while
 * connecting, then the oldest command's (counted from it or the last
 * reply, whichever is later), then the reconnect's backoff. A lost or
 * timed-out connection fails what is on it (hiredis calls each command's
 * callback with NULL as it frees the context) and asks for a refresh: a
 * primary that went away may have been replaced. Each connection's first
 * command is INFO server: a run_id other than the last one seen there is
 * told as a restart (csr_event), before any reply behind it.
 *
 * A refresh asks one node at a time on a connection of its own (AUTH,
 * CLUSTER SHARDS, CLUSTER SLOTS if that is refused), parses into a scratch
 * map and keeps the old one on a bad reply or no reply; the candidates are
 * the connected primaries (starting at a rotating one), the seeds, then
 * the other nodes of the map. A new map opens connections to its new
 * primaries and closes idle ones to nodes it does not name as primaries
 * (a primary turned replica gets no more calls), and tells how its slots
 * changed primaries (csl_map_diff). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>

#include "csl_router_int.h"
#include "util.h"

/* Arm ev to fire us from now (at once for us <= 0): the one timer helper
 * of the router, here in its lower file so that the calls above use it
 * without a loop between the two. */
void csr_timer_in(struct event *ev, int64_t us)
{
	if (us < 0)
		us = 0;
	struct timeval tv = {(time_t)(us / 1000000), (suseconds_t)(us % 1000000)};
	event_add(ev, &tv);
}

#define RECONNECT_MIN_MS 10
#define RECONNECT_MAX_MS 500
#define REFRESH_MIN_MS   100 /* between two refreshes' starts, at least */

/* ---- connections ---- */

static void conn_connect(struct csr_conn *c);

void csr_conn_arm(struct csr_conn *c)
{
	int64_t at;
	if (c->state == CS_CONNECTING) {
		at = c->since_us + (int64_t)c->rt->connect_ms * 1000;
	} else if (c->state == CS_UP && c->head) {
		at = c->head->sent_us > c->last_reply_us ? c->head->sent_us : c->last_reply_us;
		at += (int64_t)c->rt->command_ms * 1000;
	} else {
		if (c->state == CS_UP)
			event_del(c->timer);
		return; /* DOWN: the reconnect's timer, armed by csr_conn_lost */
	}
	int64_t d = at - now_us();
	csr_timer_in(c->timer, d < 0 ? 0 : d);
}

/* The connection is gone: fail what is on it, reconnect later while the
 * map names it, and ask for a refresh. free_ctx is 0 when hiredis is
 * tearing the context down already (its callbacks then fail the rest). */
void csr_conn_lost(struct csr_conn *c, const char *why, int free_ctx)
{
	redisAsyncContext *ac = c->ac;
	if (ac) /* before its calls fail: what follows them is stamped anew */
		csr_late(c->rt);
	snprintf(c->st.last_error, sizeof(c->st.last_error), "%s", why);
	c->ac = NULL;
	if (ac)
		ac->data = NULL;
	c->state = CS_DOWN;
	c->since_us = now_us();
	c->st.connected = 0;
	c->st.lost++;
	event_del(c->timer);
	if (ac && free_ctx)
		redisAsyncFree(ac); /* each command's callback: NULL, its call fails */
	if (c->in_map) {
		int64_t b = c->backoff_ms;
		c->backoff_ms = b * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : b * 2;
		csr_timer_in(c->timer, (b / 2 + (int64_t)(random() % (b / 2 + 1))) * 1000);
	}
	csr_refresh(c->rt);
}

static void conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct csr_conn *c = arg;
	int64_t now = now_us();
	if (c->state == CS_DOWN) {
		if (c->in_map)
			conn_connect(c);
	} else if (c->state == CS_CONNECTING) {
		if (now - c->since_us >= (int64_t)c->rt->connect_ms * 1000)
			csr_conn_lost(c, "connect timed out", 1);
		else
			csr_conn_arm(c);
	} else if (c->head) {
		int64_t from =
		    c->head->sent_us > c->last_reply_us ? c->head->sent_us : c->last_reply_us;
		if (now - from >= (int64_t)c->rt->command_ms * 1000)
			csr_conn_lost(c, "command timed out", 1);
		else
			csr_conn_arm(c);
	}
}

/* s was just written on c at now: on the list, last. */
void csr_conn_sent(struct csr_conn *c, struct csr_send *s, int64_t now)
{
	s->sent_us = now;
	s->prev = c->tail;
	s->next = NULL;
	if (c->tail)
		c->tail->next = s;
	else
		c->head = s;
	c->tail = s;
	if (c->head == s)
		csr_conn_arm(c);
}

/* A command of c's is over (its callback came): off the list. */
void csr_conn_send_done(struct csr_conn *c, struct csr_send *s, int replied)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		c->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		c->tail = s->prev;
	if (replied) {
		c->last_reply_us = now_us();
		csr_conn_arm(c);
	}
}

static void connect_cb(const redisAsyncContext *ac, int status)
{
	struct csr_conn *c = ac->data;
	if (!c || c->ac != ac)
		return;
	if (status != REDIS_OK) {
		/* hiredis frees it after this callback */
		csr_conn_lost(c, ac->errstr[0] ? ac->errstr : "connect failed", 0);
		return;
	}
	c->state = CS_UP;
	c->since_us = now_us();
	c->backoff_ms = RECONNECT_MIN_MS;
	c->st.connected = 1;
	csr_conn_arm(c);
}

static void disconnect_cb(const redisAsyncContext *ac, int status)
{
	struct csr_conn *c = ac->data;
	if (!c || c->ac != ac)
		return;
	csr_conn_lost(c, ac->errstr[0] ? ac->errstr : "disconnected", 0);
}

/* AUTH refused: the commands behind it get NOAUTH; drop and retry later. */
static void auth_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct csr_conn *c = ac->data;
	redisReply *r = reply;
	if (!c || c->ac != ac || !r)
		return; /* a lost connection is disconnect_cb's */
	if (r->type == REDIS_REPLY_ERROR) {
		char why[96];
		snprintf(why, sizeof(why), "AUTH: %.80s", r->str);
		csr_conn_lost(c, why, 1); /* freed when this callback returns */
	}
}

static void tell(struct csr_router *rt, const struct csr_event *ev)
{
	if (rt->on_event)
		rt->on_event(ev, rt->event_arg);
}

/* The node's run_id in an INFO reply (40 hex digits), into out; -1 if none. */
static int info_run_id(const redisReply *r, char *out)
{
	if (!r || r->type != REDIS_REPLY_STRING)
		return -1;
	const char *p = strstr(r->str, "\nrun_id:");
	p = p ? p + 8 : strncmp(r->str, "run_id:", 7) == 0 ? r->str + 7 : NULL;
	if (!p || strspn(p, "0123456789abcdef") != 40)
		return -1;
	memcpy(out, p, 40);
	out[40] = '\0';
	return 0;
}

/* The entry of the node with that id (or, when either has none, that
 * host and port), or -1. */
static int runid_find(const struct csr_router *rt, const char *id, const char *host, int port)
{
	for (int i = 0; i < rt->n_runids; i++) {
		const struct csr_runid *e = &rt->runids[i];
		if (id[0] && e->id[0] ? strcmp(e->id, id) == 0
		                      : e->port == port && strcmp(e->host, host) == 0)
			return i;
	}
	return -1;
}

/* A free entry, or one of a node the map no longer names; -1 when every
 * entry is a node of the map (more nodes than a map holds: not kept). */
static int runid_slot(struct csr_router *rt)
{
	if (rt->n_runids < CSL_MAX_NODES)
		return rt->n_runids++;
	for (int i = 0; i < rt->n_runids; i++) {
		const struct csr_runid *e = &rt->runids[i];
		int k = 0;
		for (; rt->have_map && k < rt->map->n_nodes; k++) {
			const struct csl_node *nd = &rt->map->nodes[k];
			if (e->id[0] && nd->id[0]
			        ? strcmp(e->id, nd->id) == 0
			        : e->port == nd->port && strcmp(e->host, nd->host) == 0)
				break;
		}
		if (!rt->have_map || k == rt->map->n_nodes)
			return i;
	}
	return -1;
}

/* INFO server, the first command on a new connection: a run_id other
 * than the one the router saw there last is a restart, told before any
 * reply that follows it on this connection. A node that does not say
 * cannot be judged: dropped, so that its replies never count. */
static void info_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct csr_conn *c = ac->data;
	if (!c || c->ac != ac || !reply)
		return; /* a lost connection is disconnect_cb's */
	struct csr_router *rt = c->rt;
	struct csr_event ev = {.kind = CSR_EV_RESTARTED, .port = c->port};
	if (info_run_id(reply, ev.run_id) != 0) {
		const redisReply *r = reply;
		char why[96];
		snprintf(why, sizeof(why), "INFO: %.80s",
		         r->type == REDIS_REPLY_ERROR ? r->str : "no run_id");
		csr_conn_lost(c, why, 1);
		return;
	}
	int n = rt->have_map ? csl_map_find(rt->map, c->host, c->port) : -1;
	const char *id = n >= 0 ? rt->map->nodes[n].id : "";
	int i = runid_find(rt, id, c->host, c->port);
	if (i < 0) {
		i = runid_slot(rt);
		if (i >= 0) {
			snprintf(rt->runids[i].id, sizeof(rt->runids[i].id), "%s", id);
			snprintf(rt->runids[i].host, sizeof(rt->runids[i].host), "%s", c->host);
			rt->runids[i].port = c->port;
			memcpy(rt->runids[i].run_id, ev.run_id, sizeof(ev.run_id));
		}
		return; /* first sight: nothing to compare */
	}
	snprintf(rt->runids[i].host, sizeof(rt->runids[i].host), "%s", c->host);
	rt->runids[i].port = c->port;
	if (strcmp(rt->runids[i].run_id, ev.run_id) == 0)
		return;
	memcpy(ev.old_run_id, rt->runids[i].run_id, sizeof(ev.old_run_id));
	memcpy(rt->runids[i].run_id, ev.run_id, sizeof(ev.run_id));
	snprintf(ev.host, sizeof(ev.host), "%s", c->host);
	c->st.restarts++;
	tell(rt, &ev);
}

static void conn_connect(struct csr_conn *c)
{
	c->st.connects++;
	redisAsyncContext *ac = redisAsyncConnect(c->host, c->port);
	if (!ac || ac->err) {
		char why[96];
		snprintf(why, sizeof(why), "connect: %s", ac ? ac->errstr : "out of memory");
		if (ac)
			redisAsyncFree(ac);
		csr_conn_lost(c, why, 0);
		return;
	}
	ac->data = c;
	c->ac = ac;
	redisLibeventAttach(ac, c->rt->base);
	redisAsyncSetConnectCallback(ac, connect_cb);
	redisAsyncSetDisconnectCallback(ac, disconnect_cb);
	if (c->rt->password)
		redisAsyncCommand(ac, auth_cb, NULL, "AUTH %s", c->rt->password);
	redisAsyncCommand(ac, info_cb, NULL, "INFO server");
	for (int i = 0; i < c->rt->n_scripts; i++) /* ahead of every call: see csr_cfg */
		redisAsyncCommand(ac, NULL, NULL, "SCRIPT LOAD %b", c->rt->scripts[i],
		                  strlen(c->rt->scripts[i]));
	c->state = CS_CONNECTING;
	c->since_us = now_us();
	csr_conn_arm(c);
}

/* The connection to host:port, made (and connecting) if there is none. */
struct csr_conn *csr_conn_get(struct csr_router *rt, const char *host, int port)
{
	for (struct csr_conn *c = rt->conns; c; c = c->next)
		if (c->port == port && strcmp(c->host, host) == 0)
			return c;
	struct csr_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->timer = evtimer_new(rt->base, conn_timer_cb, c);
	if (!c->timer) {
		free(c);
		return NULL;
	}
	c->rt = rt;
	snprintf(c->host, sizeof(c->host), "%s", host);
	c->port = port;
	snprintf(c->st.host, sizeof(c->st.host), "%s", host);
	c->st.port = port;
	c->backoff_ms = RECONNECT_MIN_MS;
	c->next = rt->conns;
	rt->conns = c;
	conn_connect(c);
	return c;
}

/* Unlink c from the router and free it. What is still on its wire is
 * dropped without a callback to its calls (the caller saw to them). */
void csr_conn_destroy(struct csr_conn *c)
{
	struct csr_router *rt = c->rt;
	for (struct csr_conn **p = &rt->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	for (struct csr_send *s = c->head, *n; s; s = n) {
		n = s->next;
		s->c = NULL;
		s->prev = s->next = NULL;
	}
	c->head = c->tail = NULL;
	if (c->ac) {
		redisAsyncContext *ac = c->ac;
		c->ac = NULL;
		ac->data = NULL;
		redisAsyncFree(ac);
	}
	if (c->wait_ev)
		event_free(c->wait_ev);
	event_free(c->timer);
	free(c);
}

/* ---- map refreshes ---- */

static void r_next(struct csr_router *rt, const char *why);

void csr_refresh_close(struct csr_router *rt)
{
	redisAsyncContext *ac = rt->rc;
	if (!ac)
		return;
	rt->rc = NULL;
	ac->data = NULL;
	redisAsyncFree(ac); /* safe in its own callbacks: hiredis frees it after them */
}

static void r_finish(struct csr_router *rt)
{
	csr_refresh_close(rt);
	event_del(rt->rtimer);
	rt->rstate = RS_IDLE;
	if (rt->again) {
		rt->again = 0;
		csr_refresh(rt);
	}
}

/* The most replicas a map showed primary id, counting replicas now: the
 * number a promotion's with_data is judged by. */
static int maxrep_note(struct csr_router *rt, const char *id, int replicas)
{
	if (!id[0])
		return replicas;
	int i = 0;
	while (i < rt->n_maxrep && strcmp(rt->maxrep[i].id, id) != 0)
		i++;
	if (i == rt->n_maxrep) {
		if (i == CSL_MAX_NODES)
			return replicas; /* full: this one is judged by the maps alone */
		rt->n_maxrep++;
		snprintf(rt->maxrep[i].id, sizeof(rt->maxrep[i].id), "%s", id);
		rt->maxrep[i].replicas = 0;
	}
	if (replicas > rt->maxrep[i].replicas)
		rt->maxrep[i].replicas = replicas;
	return rt->maxrep[i].replicas;
}

static void maxrep_map(struct csr_router *rt, const struct csl_map *m)
{
	for (int p = 0; p < m->n_nodes; p++) {
		if (m->nodes[p].role != CSL_PRIMARY)
			continue;
		int k = 0;
		for (int i = 0; i < m->n_nodes; i++)
			k += m->nodes[i].role == CSL_REPLICA && m->nodes[i].primary == p;
		maxrep_note(rt, m->nodes[p].id, k);
	}
}

/* Too many changes to tell apart: every primary's slots, judged anew. */
static void tell_all_new(struct csr_router *rt, const struct csl_map *m)
{
	for (int p = 0; p < m->n_nodes; p++) {
		struct csr_event ev = {.kind = CSR_EV_NEW};
		for (int s = 0; s < CSL_SLOTS; s++)
			ev.slots += m->slot[s] == p;
		if (!ev.slots)
			continue;
		snprintf(ev.host, sizeof(ev.host), "%s", m->nodes[p].host);
		ev.port = m->nodes[p].port;
		tell(rt, &ev);
	}
}

/* What a new map changed against the last one, told slot group by slot
 * group (before any call is sent by the new map: calls go from their
 * timers, after this). */
static void tell_changes(struct csr_router *rt, const struct csl_map *old, const struct csl_map *m)
{
	int n = csl_map_diff(old, m, rt->changes, CSL_DIFF_MAX);
	rt->moves += n < 0 ? 1 : (uint64_t)n;
	if (n != 0)
		csr_late(rt); /* slots changed primaries: before a call goes by the new map */
	if (n < 0) {
		tell_all_new(rt, m);
		return;
	}
	for (int k = 0; k < n; k++) {
		const struct csl_change *ch = &rt->changes[k];
		struct csr_event ev = {.slots = ch->slots, .replicas = ch->replicas};
		if (ch->from >= 0)
			ev.replicas = maxrep_note(rt, old->nodes[ch->from].id, ch->replicas);
		ev.kind = ch->kind == CSL_CH_PROMOTED ? CSR_EV_PROMOTED
		          : ch->kind == CSL_CH_MOVED  ? CSR_EV_MOVED
		                                      : CSR_EV_NEW;
		ev.with_data = ch->kind == CSL_CH_MOVED ||
		               (ch->kind == CSL_CH_PROMOTED && rt->wait_replicas > 0 &&
		                rt->wait_replicas >= ev.replicas);
		snprintf(ev.host, sizeof(ev.host), "%s", m->nodes[ch->to].host);
		ev.port = m->nodes[ch->to].port;
		if (ch->from >= 0) {
			snprintf(ev.from_host, sizeof(ev.from_host), "%s",
			         old->nodes[ch->from].host);
			ev.from_port = old->nodes[ch->from].port;
		}
		tell(rt, &ev);
	}
}

/* The new map (in rt->scratch, from cand ri): in use from now on. */
static void apply_map(struct csr_router *rt)
{
	int had = rt->have_map;
	struct csl_map *m = rt->scratch;
	rt->scratch = rt->map;
	rt->map = m;
	rt->have_map = 1;
	rt->refreshes++;
	for (int i = 0; i < m->n_nodes; i++) /* unknown-endpoint: the answering node's host */
		if (!m->nodes[i].host[0])
			snprintf(m->nodes[i].host, sizeof(m->nodes[i].host), "%s",
			         rt->cand_host[rt->ri]);
	for (struct csr_conn *c = rt->conns; c; c = c->next)
		c->in_map = 0;
	memset(rt->node_conn, 0, sizeof(rt->node_conn));
	for (int i = 0; i < m->n_nodes; i++) {
		struct csl_node *n = &m->nodes[i];
		if (n->role != CSL_PRIMARY || n->port <= 0)
			continue;
		struct csr_conn *c = csr_conn_get(rt, n->host, n->port);
		if (!c)
			continue;
		c->in_map = 1;
		rt->node_conn[i] = c;
		/* down and not in the last map: no reconnect was armed */
		if (c->state == CS_DOWN && !evtimer_pending(c->timer, NULL))
			csr_timer_in(c->timer, 0);
	}
	for (struct csr_conn *c = rt->conns, *n; c; c = n) {
		n = c->next;
		if (!c->in_map && !c->head && !c->held)
			csr_conn_destroy(c);
	}
	if (had)
		tell_changes(rt, rt->scratch, m);
	maxrep_map(rt, m);
}

static void r_shards_cb(redisAsyncContext *ac, void *reply, void *priv);

static void r_parsed(struct csr_router *rt, const redisReply *r, int slots)
{
	char err[160];
	int rc = slots ? csl_map_from_slots(r, rt->scratch, err, sizeof(err))
	               : csl_map_from_shards(r, rt->scratch, err, sizeof(err));
	if (rc != 0) {
		char why[200];
		snprintf(why, sizeof(why), "CLUSTER %s: %s", slots ? "SLOTS" : "SHARDS", err);
		r_next(rt, why);
		return;
	}
	apply_map(rt);
	r_finish(rt);
}

static void r_slots_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct csr_router *rt = ac->data;
	redisReply *r = reply;
	if (!rt || rt->rc != ac)
		return;
	if (!r) {
		rt->rc = NULL; /* hiredis is freeing it */
		ac->data = NULL;
		r_next(rt, "connection lost");
		return;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		r_next(rt, r->str);
		return;
	}
	r_parsed(rt, r, 1);
}

static void r_shards_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct csr_router *rt = ac->data;
	redisReply *r = reply;
	if (!rt || rt->rc != ac)
		return;
	if (!r) {
		rt->rc = NULL;
		ac->data = NULL;
		r_next(rt, "connection lost");
		return;
	}
	if (r->type == REDIS_REPLY_ERROR) { /* before Redis 7: no CLUSTER SHARDS */
		redisAsyncCommand(ac, r_slots_cb, NULL, "CLUSTER SLOTS");
		return;
	}
	r_parsed(rt, r, 0);
}

static void r_auth_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct csr_router *rt = ac->data;
	redisReply *r = reply;
	if (!rt || rt->rc != ac || !r || r->type != REDIS_REPLY_ERROR)
		return; /* a lost connection is r_shards_cb's */
	char why[120];
	snprintf(why, sizeof(why), "AUTH: %.100s", r->str);
	r_next(rt, why); /* closes rc: hiredis frees it when this callback returns */
}

static void r_connect_cb(const redisAsyncContext *ac, int status)
{
	struct csr_router *rt = ac->data;
	if (!rt || rt->rc != ac || status == REDIS_OK)
		return;
	rt->rc = NULL; /* hiredis frees it after this callback */
	((redisAsyncContext *)ac)->data = NULL;
	r_next(rt, ac->errstr[0] ? ac->errstr : "connect failed");
}

static void r_disconnect_cb(const redisAsyncContext *ac, int status)
{
	struct csr_router *rt = ac->data;
	if (!rt || rt->rc != ac)
		return;
	rt->rc = NULL;
	r_next(rt, ac->errstr[0] ? ac->errstr : "disconnected");
}

/* Ask cand ri. */
static void r_ask(struct csr_router *rt)
{
	rt->rstate = RS_ASKING;
	redisAsyncContext *ac = redisAsyncConnect(rt->cand_host[rt->ri], rt->cand_port[rt->ri]);
	if (!ac || ac->err) {
		char why[96];
		snprintf(why, sizeof(why), "connect: %s", ac ? ac->errstr : "out of memory");
		if (ac)
			redisAsyncFree(ac);
		r_next(rt, why);
		return;
	}
	ac->data = rt;
	rt->rc = ac;
	redisLibeventAttach(ac, rt->base);
	redisAsyncSetConnectCallback(ac, r_connect_cb);
	redisAsyncSetDisconnectCallback(ac, r_disconnect_cb);
	if (rt->password)
		redisAsyncCommand(ac, r_auth_cb, NULL, "AUTH %s", rt->password);
	redisAsyncCommand(ac, r_shards_cb, NULL, "CLUSTER SHARDS");
	csr_timer_in(rt->rtimer, (int64_t)(rt->connect_ms + rt->command_ms) * 1000);
}

/* cand ri failed (why): the next one, or this refresh is over (the old
 * map stays; a lost connection or the periodic timer asks again). Never
 * recursive: a failure found while starting is handled from the timer. */
static void r_next(struct csr_router *rt, const char *why)
{
	snprintf(rt->rwhy, sizeof(rt->rwhy), "%s:%d: %s", rt->cand_host[rt->ri],
	         rt->cand_port[rt->ri], why);
	csr_refresh_close(rt);
	if (++rt->ri >= rt->n_cands) {
		r_finish(rt);
		return;
	}
	rt->rstate = RS_SCHEDULED;
	csr_timer_in(rt->rtimer, 0);
}

static void add_cand(struct csr_router *rt, const char *host, int port)
{
	if (rt->n_cands >= CSR_MAX_CANDS || port <= 0 || !host[0])
		return;
	for (int i = 0; i < rt->n_cands; i++)
		if (rt->cand_port[i] == port && strcmp(rt->cand_host[i], host) == 0)
			return;
	snprintf(rt->cand_host[rt->n_cands], sizeof(rt->cand_host[0]), "%s", host);
	rt->cand_port[rt->n_cands++] = port;
}

/* A refresh begins: the candidates, in order. */
void csr_refresh_start(struct csr_router *rt)
{
	const struct csl_map *m = rt->map;
	rt->n_cands = 0;
	rt->ri = 0;
	rt->rstarted_us = now_us();
	if (rt->have_map) {
		int n = m->n_nodes, k0 = (int)(rt->rot++ % (unsigned)(n ? n : 1));
		for (int k = 0; k < n; k++) {
			int i = (k0 + k) % n;
			const struct csr_conn *c = rt->node_conn[i];
			if (c && c->state == CS_UP)
				add_cand(rt, m->nodes[i].host, m->nodes[i].port);
		}
	}
	for (int i = 0; i < rt->n_seeds; i++)
		add_cand(rt, rt->seed_host[i], rt->seed_port[i]);
	if (rt->have_map)
		for (int i = 0; i < m->n_nodes; i++)
			if (m->nodes[i].health != CSL_HEALTH_FAIL)
				add_cand(rt, m->nodes[i].host, m->nodes[i].port);
	r_ask(rt);
}

void csr_refresh_timer(evutil_socket_t fd, short what, void *arg)
{
	struct csr_router *rt = arg;
	if (rt->rstate == RS_SCHEDULED) {
		if (rt->n_cands == 0)
			csr_refresh_start(rt); /* a rate-limited start */
		else
			r_ask(rt); /* the next candidate */
	} else if (rt->rstate == RS_ASKING) {
		r_next(rt, "no answer in time");
	}
}

void csr_refresh(struct csr_router *rt)
{
	if (rt->rstate != RS_IDLE) {
		if (rt->n_cands > 0) /* one is asking already: its node may not know yet */
			rt->again = 1;
		return;
	}
	int64_t since = now_us() - rt->rstarted_us;
	rt->rstate = RS_SCHEDULED;
	rt->n_cands = 0; /* a start, not a next candidate */
	rt->ri = 0;
	csr_timer_in(rt->rtimer,
	             since >= REFRESH_MIN_MS * 1000 ? 0 : REFRESH_MIN_MS * 1000 - since);
}

const char *csr_refresh_error(const struct csr_router *rt)
{
	return rt->rwhy;
}
