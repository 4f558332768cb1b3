/* sentinel: where a Sentinel-managed primary is, and when it moved.
 *
 * A resolution asks the Sentinels of the entry one after another (a
 * connection each, AUTH, SENTINEL get-master-addr-by-name NAME, closed
 * after the answer) until one names the primary; each may take
 * master_slow_ms-like time (4 x redis.timeout_ms, at least 250 ms). A
 * Sentinel that does not know the name, refuses AUTH or does not answer
 * in time is skipped.
 *
 * The watcher is one more connection, to one Sentinel at a time,
 * subscribed to +switch-master: a failover's announcement reaches the
 * master at once (sn_opts.on_switch), rather than when the old primary's
 * connection fails. It is not needed for safety (an old primary that
 * still accepts writes is caught by WAIT answering fewer replicas than
 * redis.wait_replicas), only for speed, so a lost watcher moves to the
 * next Sentinel after a backoff and nothing else waits for it. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>

#include "log.h"
#include "master.h"
#include "sentinel.h"
#include "util.h"

/* A resolution's progress. */
enum sn_qstate {
	Q_IDLE,   /* none asked for */
	Q_START,  /* asked for: qtimer starts it from the loop (no callback inside sn_resolve) */
	Q_ASKING, /* a Sentinel (seeds[qi]) is asked: qtimer is its deadline */
};

struct sn_entry {
	struct event_base *base;
	struct master *m;
	char *seeds[CONFIG_MAX_SEEDS];
	int nseeds;
	char *name;
	struct sn_opts o;
	/* resolution */
	enum sn_qstate qstate;
	redisAsyncContext *qc; /* the Sentinel asked, or NULL */
	int qi;                /* which seed */
	struct event *qtimer;
	sn_resolved_fn *cb;
	char why[240]; /* the last Sentinel's failure */
	/* watcher */
	redisAsyncContext *wc; /* subscribed (or subscribing) to +switch-master, or NULL */
	int wi;                /* which seed */
	int wup;               /* the subscription was confirmed */
	struct event *wtimer;  /* reconnect after a backoff */
	int64_t wbackoff_ms;
};

static int64_t slow_ms(const struct sn_entry *e)
{
	return e->o.timeout_ms * 4 < 250 ? 250 : e->o.timeout_ms * 4;
}

static void timer_in(struct event *ev, int64_t ms)
{
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
	event_add(ev, &tv);
}

static int split_addr(const char *s, char *host, size_t hlen, int *port)
{
	struct addr a;
	if (addr_parse(s, 0, 0, &a))
		return -1;
	snprintf(host, hlen, "%s", a.host);
	*port = a.port;
	return 0;
}

/* A context of ours, let go: no callback of it reaches e again. Safe
 * inside its own callbacks (hiredis frees it when they return). */
static void ctx_close(redisAsyncContext **pc)
{
	redisAsyncContext *ac = *pc;
	if (!ac)
		return;
	*pc = NULL;
	ac->data = NULL;
	redisAsyncFree(ac);
}

static redisAsyncContext *ctx_open(struct sn_entry *e, const char *seed, char *why, size_t wlen)
{
	char host[256];
	int port;
	if (split_addr(seed, host, sizeof(host), &port)) {
		snprintf(why, wlen, "%s: not HOST:PORT", seed);
		return NULL;
	}
	redisAsyncContext *ac = redisAsyncConnect(host, port);
	if (!ac || ac->err) {
		snprintf(why, wlen, "%s: connect: %s", seed, ac ? ac->errstr : "out of memory");
		if (ac)
			redisAsyncFree(ac);
		return NULL;
	}
	ac->data = e;
	redisLibeventAttach(ac, e->base);
	return ac;
}

/* --- resolution --- */

static void q_start(struct sn_entry *e);

static void q_finish(struct sn_entry *e, const char *host, int port)
{
	ctx_close(&e->qc);
	event_del(e->qtimer);
	e->qstate = Q_IDLE;
	e->qi = 0;
	sn_resolved_fn *cb = e->cb;
	e->cb = NULL;
	if (cb)
		cb(e->m, host, port, host ? NULL : e->why);
}

/* seeds[qi] failed: the next one, or the resolution failed. */
static void q_fail(struct sn_entry *e, const char *why)
{
	snprintf(e->why, sizeof(e->why), "Sentinel %s: %s", e->seeds[e->qi], why);
	log_debug("master %s: %s", e->m->name, e->why);
	ctx_close(&e->qc);
	if (++e->qi < e->nseeds) {
		q_start(e);
		return;
	}
	char all[300];
	snprintf(all, sizeof(all), "no Sentinel named the primary (last: %.200s)", e->why);
	snprintf(e->why, sizeof(e->why), "%.239s", all);
	q_finish(e, NULL, 0);
}

static void q_connect_cb(const redisAsyncContext *ac, int status)
{
	struct sn_entry *e = ac->data;
	if (!e || e->qc != ac || status == REDIS_OK)
		return;
	e->qc = NULL; /* hiredis frees it after this callback */
	((redisAsyncContext *)ac)->data = NULL;
	q_fail(e, ac->errstr[0] ? ac->errstr : "connect failed");
}

static void q_disconnect_cb(const redisAsyncContext *ac, int status)
{
	struct sn_entry *e = ac->data;
	if (!e || e->qc != ac)
		return;
	e->qc = NULL;
	q_fail(e, ac->errstr[0] ? ac->errstr : "disconnected");
}

static void q_auth_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct sn_entry *e = ac->data;
	redisReply *r = reply;
	if (!e || e->qc != ac || !r)
		return; /* a lost connection is the next callback's */
	if (r->type == REDIS_REPLY_ERROR) {
		char why[160];
		snprintf(why, sizeof(why), "AUTH: %s", r->str);
		q_fail(e, why);
	}
}

static void q_reply_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct sn_entry *e = ac->data;
	redisReply *r = reply;
	if (!e || e->qc != ac)
		return;
	if (!r) {
		e->qc = NULL; /* hiredis is freeing it */
		ac->data = NULL;
		q_fail(e, "connection lost");
		return;
	}
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[0]->type == REDIS_REPLY_STRING &&
	    r->element[1]->type == REDIS_REPLY_STRING) {
		char host[256];
		uint64_t port = 0;
		snprintf(host, sizeof(host), "%s", r->element[0]->str);
		if (parse_u64(r->element[1]->str, r->element[1]->len, 65535, &port) == 0 &&
		    port > 0 && host[0]) {
			q_finish(e, host, (int)port);
			return;
		}
	}
	char why[200];
	snprintf(why, sizeof(why), "SENTINEL get-master-addr-by-name %s: %s", e->name,
	         r->type == REDIS_REPLY_NIL     ? "no such name"
	         : r->type == REDIS_REPLY_ERROR ? r->str
	                                        : "unexpected reply");
	q_fail(e, why);
}

static void q_start(struct sn_entry *e)
{
	char why[160];
	e->qstate = Q_ASKING;
	e->qc = ctx_open(e, e->seeds[e->qi], why, sizeof(why));
	if (!e->qc) {
		q_fail(e, why);
		return;
	}
	redisAsyncSetConnectCallback(e->qc, q_connect_cb);
	redisAsyncSetDisconnectCallback(e->qc, q_disconnect_cb);
	if (e->o.password[0])
		redisAsyncCommand(e->qc, q_auth_cb, NULL, "AUTH %s", e->o.password);
	redisAsyncCommand(e->qc, q_reply_cb, NULL, "SENTINEL get-master-addr-by-name %s", e->name);
	timer_in(e->qtimer, slow_ms(e));
}

static void q_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sn_entry *e = arg;
	if (e->qstate == Q_START) {
		e->qi = 0;
		q_start(e);
	} else if (e->qstate == Q_ASKING) {
		q_fail(e, "no answer in time");
	}
}

void sn_resolve(struct sn_entry *e, sn_resolved_fn *cb)
{
	ctx_close(&e->qc);
	e->cb = cb;
	e->qstate = Q_START;
	timer_in(e->qtimer, 0);
}

/* --- watcher --- */

static void w_start(struct sn_entry *e);

static void w_lost(struct sn_entry *e, const char *why)
{
	if (e->wup)
		log_warn("master %s: Sentinel %s: +switch-master subscription lost: %s", e->m->name,
		         e->seeds[e->wi], why);
	e->wup = 0;
	ctx_close(&e->wc);
	e->wi = (e->wi + 1) % e->nseeds;
	int64_t b = e->wbackoff_ms;
	e->wbackoff_ms = b * 2 > e->o.reconnect_max_ms ? e->o.reconnect_max_ms : b * 2;
	timer_in(e->wtimer, b / 2 + (int64_t)(random() % (b / 2 + 1)));
}

static void w_connect_cb(const redisAsyncContext *ac, int status)
{
	struct sn_entry *e = ac->data;
	if (!e || e->wc != ac || status == REDIS_OK)
		return;
	e->wc = NULL;
	((redisAsyncContext *)ac)->data = NULL;
	w_lost(e, ac->errstr[0] ? ac->errstr : "connect failed");
}

static void w_disconnect_cb(const redisAsyncContext *ac, int status)
{
	struct sn_entry *e = ac->data;
	if (!e || e->wc != ac)
		return;
	e->wc = NULL;
	w_lost(e, ac->errstr[0] ? ac->errstr : "disconnected");
}

static void w_auth_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct sn_entry *e = ac->data;
	redisReply *r = reply;
	if (e && e->wc == ac && r && r->type == REDIS_REPLY_ERROR) {
		char why[160];
		snprintf(why, sizeof(why), "AUTH: %s", r->str);
		w_lost(e, why);
	}
}

int sn_parse_switch(const char *msg, const char *name, char *host, size_t hlen, int *port)
{
	char n[257], oldh[256], newh[256], extra[2];
	int oldp, newp;
	if (sscanf(msg, "%256s %255s %d %255s %d %1s", n, oldh, &oldp, newh, &newp, extra) != 5 ||
	    strcmp(n, name) != 0 || newp <= 0 || newp > 65535 || strlen(newh) >= hlen)
		return -1;
	snprintf(host, hlen, "%s", newh);
	*port = newp;
	return 0;
}

static void w_message(struct sn_entry *e, const char *s)
{
	char host[256];
	int port;
	if (sn_parse_switch(s, e->name, host, sizeof(host), &port))
		return;
	log_info("master %s: Sentinel %s: +switch-master %s -> %s:%d", e->m->name, e->seeds[e->wi],
	         s, host, port);
	if (e->o.on_switch)
		e->o.on_switch(e->m, host, port);
}

static void w_msg_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct sn_entry *e = ac->data;
	redisReply *r = reply;
	if (!e || e->wc != ac)
		return;
	if (!r) {
		e->wc = NULL; /* hiredis is freeing it */
		ac->data = NULL;
		w_lost(e, "connection lost");
		return;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		char why[160];
		snprintf(why, sizeof(why), "SUBSCRIBE: %s", r->str);
		w_lost(e, why);
		return;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
	    r->element[0]->type != REDIS_REPLY_STRING)
		return;
	if (strcmp(r->element[0]->str, "subscribe") == 0) {
		e->wup = 1;
		e->wbackoff_ms = 100;
		log_info("master %s: watching Sentinel %s for +switch-master", e->m->name,
		         e->seeds[e->wi]);
	} else if (strcmp(r->element[0]->str, "message") == 0 &&
	           r->element[2]->type == REDIS_REPLY_STRING) {
		w_message(e, r->element[2]->str);
	}
}

static void w_start(struct sn_entry *e)
{
	char why[160];
	e->wc = ctx_open(e, e->seeds[e->wi], why, sizeof(why));
	if (!e->wc) {
		w_lost(e, why);
		return;
	}
	redisEnableKeepAlive(&e->wc->c);
	redisAsyncSetConnectCallback(e->wc, w_connect_cb);
	redisAsyncSetDisconnectCallback(e->wc, w_disconnect_cb);
	if (e->o.password[0])
		redisAsyncCommand(e->wc, w_auth_cb, NULL, "AUTH %s", e->o.password);
	redisAsyncCommand(e->wc, w_msg_cb, NULL, "SUBSCRIBE +switch-master");
}

static void w_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sn_entry *e = arg;
	if (!e->wc)
		w_start(e);
}

const char *sn_watching(const struct sn_entry *e)
{
	return e->wup ? e->seeds[e->wi] : "-";
}

struct sn_entry *sn_new(struct event_base *base, struct master *m, const struct cfg_sentinel *c,
                        const struct sn_opts *o)
{
	struct sn_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->base = base;
	e->m = m;
	e->o = *o;
	e->o.password = strdup(o->password ? o->password : "");
	e->name = strdup(c->name);
	for (int i = 0; i < c->nseeds && i < CONFIG_MAX_SEEDS; i++)
		if ((e->seeds[i] = strdup(c->seeds[i])))
			e->nseeds++;
	e->qtimer = evtimer_new(base, q_timer_cb, e);
	e->wtimer = evtimer_new(base, w_timer_cb, e);
	e->wbackoff_ms = 100;
	if (!e->o.password || !e->name || e->nseeds != c->nseeds || e->nseeds == 0 || !e->qtimer ||
	    !e->wtimer) {
		sn_free(e);
		return NULL;
	}
	timer_in(e->wtimer, 0);
	return e;
}

void sn_free(struct sn_entry *e)
{
	if (!e)
		return;
	e->cb = NULL;
	ctx_close(&e->qc);
	ctx_close(&e->wc);
	if (e->qtimer)
		event_free(e->qtimer);
	if (e->wtimer)
		event_free(e->wtimer);
	for (int i = 0; i < e->nseeds; i++)
		free(e->seeds[i]);
	free(e->name);
	free((char *)e->o.password);
	free(e);
}
