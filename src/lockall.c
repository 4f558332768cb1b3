/* lockall: LOCKALL n key1 ... keyn [WAIT ms] [TTL ms] [DELAY ms] (1.4).
 *
 * No deadlock: a request takes its keys in one global order, bytewise
 * order of the keys, and only ever waits for the smallest key it does not
 * hold while holding no key above it (of the keys it took). In a cycle of
 * requests each waiting for a key the next one holds, the keys waited
 * for would then grow all round the cycle: there is none, on one lockd
 * or across several (doc/design.md, LOCKALL). A LOCK takes one key.
 *
 * The first attempt asks every key the session does not hold in one loop
 * turn, so redlock batches them into one SCR_ACQUIRE_N script per master.
 * When some are busy, the request keeps the keys below the smallest busy
 * one, gives back those above it, and waits for it in its ordinary FIFO
 * queue (a waiter of its own, struct la_part, which locktab serves like
 * any other: lt_part_start); once it has it, the keys above it are asked
 * again in one batch, and so on. A
 * key lost meanwhile (LOST, sent to the client as always) is asked for
 * again the same way. Any end but OK gives back
 * every key the request took; the keys the session held before are
 * counted only when OK is sent.
 *
 * locktab answers a part through lt_part_ops: the hooks only note the
 * verdict, and step() decides from the loop, so nothing here runs inside
 * locktab's own handlers. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cfg.h"
#include "lockall.h"
#include "locktab_types.h"
#include "ltops.h"
#include "quorum.h"
#include "redlock.h"
#include "stats.h"
#include "util.h"

static struct event_base *base;
static const struct config *cfg;
static const struct lt_ops *ops;

/* Where one key of a request is. */
enum lp_state {
	LP_PRIOR,  /* the session held it exclusively before: reentrant, counted at OK */
	LP_TODO,   /* not held: to be asked for */
	LP_ASKING, /* its waiter asks the masters or waits in the key's queue */
	LP_BUSY,   /* its last attempt found it held (here or elsewhere) */
	LP_HELD,   /* granted to this request */
};

/* Where a request is. */
enum la_state {
	LA_ASKING,   /* one attempt at every key not held from the smallest not held
	                on, all at once (the first attempt, and after each wait) */
	LA_WAITING,  /* in the queue of its smallest key not held, holding none above it */
	LA_COUNTING, /* every key held: the reentrant counts go to the session's record (1.2) */
};

struct la_part {
	struct waiter w; /* first: a part's waiter leads to its part */
	const char *key; /* in the request's own copy */
	size_t klen;
	uint64_t fence;
	uint32_t given; /* its place in the request (the reply's order) */
	enum lp_state st;
};

struct la_req {
	struct lt_client *c;
	enum la_state state;
	uint32_t n;
	uint32_t asking;    /* parts whose verdict is awaited */
	int once;           /* WAIT 0: one attempt */
	int delay_counted;  /* in delayed_grants_refused already */
	int quorum;         /* an attempt found no majority */
	const char *err;    /* a verdict that ends the request (ERR LIMIT, ERR SHUTDOWN) */
	struct request one; /* what each key asks: a plain LOCK with TTL and DELAY */
	int64_t deadline_us;
	struct event *step_ev; /* step() from the loop */
	struct event *timer;   /* the end of WAIT */
	struct rl_call *call;  /* LA_COUNTING: the record's write */
	int counted;           /* the reentrant keys are counted already */
	struct la_part *p;     /* n parts, in bytewise order of their keys */
	uint32_t *by_given;    /* n: the part of each key as given */
	char *reply;           /* room for "OK" and n fences */
};

static struct la_part *part_of(struct waiter *w)
{
	return (struct la_part *)w; /* w is a part's first member */
}

static struct la_req *req_of(struct waiter *w)
{
	return w->c->la;
}

static void schedule(struct la_req *r)
{
	event_active(r->step_ev, EV_TIMEOUT, 0);
}

/* --- the table's verdicts (lt_part_ops): noted, decided by step() --- */

static void part_granted(struct waiter *w, uint64_t fence)
{
	struct la_part *p = part_of(w);
	struct la_req *r = req_of(w);
	p->st = LP_HELD;
	p->fence = fence;
	r->asking--;
	schedule(r);
}

static void part_failed(struct waiter *w, const char *msg)
{
	struct la_part *p = part_of(w);
	struct la_req *r = req_of(w);
	p->st = LP_BUSY;
	r->asking--;
	if (strcmp(msg, MSG_NO_QUORUM) == 0)
		r->quorum = 1;
	else if (strcmp(msg, "TIMEOUT") != 0 && strcmp(msg, "BUSY") != 0)
		r->err = msg; /* a literal: ERR LIMIT out of memory, ERR SHUTDOWN */
	schedule(r);
}

static void part_delayed(struct waiter *w)
{
	struct la_req *r = req_of(w);
	if (!r->delay_counted) {
		r->delay_counted = 1;
		stats.delayed_grants_refused++;
	}
}

/* --- the end of a request --- */

static void req_free(struct la_req *r)
{
	r->c->la = NULL;
	if (r->step_ev)
		event_free(r->step_ev);
	if (r->timer)
		event_free(r->timer);
	free(r);
}

/* Leave every queue, and give back every key the request took (release
 * 0: leave them to the caller). */
static void give_back(struct la_req *r, int release)
{
	for (uint32_t i = 0; i < r->n; i++) {
		struct la_part *p = &r->p[i];
		if (p->w.lk)
			lt_part_cancel(&p->w);
		if (p->st == LP_HELD && release)
			lt_part_release(r->c, p->key, p->klen);
	}
}

static void uncount(struct la_req *r);

static void fail(struct la_req *r, const char *msg)
{
	struct lt_client *c = r->c;
	if (r->counted)
		uncount(r);
	give_back(r, 1);
	req_free(r);
	stats.lockall_timeouts += strcmp(msg, "TIMEOUT") == 0;
	lt_ops_reply(ops, c, "%s", msg);
}

/* The reentrant keys' counts go back (a count write failed, or the
 * client left while it was out). */
static void uncount(struct la_req *r)
{
	for (uint32_t i = 0; i < r->n; i++)
		if (r->p[i].st == LP_PRIOR)
			lt_part_reenter(r->c, r->p[i].key, r->p[i].klen, -1);
}

static void answer_ok(struct la_req *r)
{
	struct lt_client *c = r->c;
	char *o = r->reply;

	o += sprintf(o, "OK");
	for (uint32_t g = 0; g < r->n; g++)
		o += sprintf(o, " %llu", (unsigned long long)r->p[r->by_given[g]].fence);
	stats.lockall_granted++;
	/* The reply is copied out before the request is freed. */
	lt_ops_reply(ops, c, "%s", r->reply);
	req_free(r);
}

static void step(struct la_req *r);

static void counted(struct rl_call *call, void *owner)
{
	struct la_req *r = owner;
	r->call = NULL;
	r->counted = 1;
	r->state = LA_WAITING;
	if (rl_result_of(call) != RL_OK) {
		stats.quorum_failures++;
		fail(r, MSG_NO_QUORUM);
		return;
	}
	step(r); /* a key lost meanwhile is taken again before OK */
}

/* Every key is held: count the reentrant ones and answer, once a
 * resumable session's record has the counts. */
static void grant(struct la_req *r)
{
	const char *keys[r->n];
	size_t klens[r->n];
	int n = 0;

	for (uint32_t i = 0; i < r->n; i++)
		if (r->p[i].st == LP_PRIOR) {
			keys[n] = r->p[i].key;
			klens[n++] = r->p[i].klen;
		}
	if (r->counted || !n || !r->c->sid) {
		for (int i = 0; i < n && !r->counted; i++)
			lt_part_reenter(r->c, keys[i], klens[i], 1);
		answer_ok(r);
		return;
	}
	r->state = LA_COUNTING;
	if (!(r->call = lt_part_count(r->c, keys, klens, n, counted, r)))
		fail(r, MSG_OOM);
}

static void cancel_hook(struct lt_client *c, int release)
{
	struct la_req *r = c->la;
	if (r->call) { /* LA_COUNTING: no OK, so no count */
		rl_detach(r->call, r);
		r->call = NULL;
		r->counted = 1;
	}
	if (r->counted)
		uncount(r);
	give_back(r, release);
	req_free(r);
}

static int waiting_hook(const struct lt_client *c)
{
	return c->la->state == LA_WAITING;
}

/* --- deciding --- */

/* A hold of the key's lock (permit 0, however it was asked): reentrant,
 * as for LOCK. */
static int exclusive(int kind, uint32_t permit)
{
	return kind >= 0 && kind != HK_SHARED && permit == 0;
}

/* Keys the request counts as held that the session no longer holds (a
 * LOST) are to be taken again. */
static void recheck(struct la_req *r)
{
	for (uint32_t i = 0; i < r->n; i++) {
		struct la_part *p = &r->p[i];
		uint64_t fence = 0;
		uint32_t permit = 0;
		if (p->st != LP_HELD && p->st != LP_PRIOR)
			continue;
		if (!exclusive(lt_part_held(r->c, p->key, p->klen, &fence, &permit), permit) ||
		    fence != p->fence)
			p->st = LP_TODO;
	}
}

/* Ask for p's key, waiting in its queue. */
static int wait_for(struct la_req *r, struct la_part *p)
{
	r->one.key = p->key;
	r->one.klen = p->klen;
	p->st = LP_ASKING;
	r->asking++;
	r->state = LA_WAITING;
	if (lt_part_start(&p->w, &r->one, WM_WAIT) != 0) {
		r->asking--;
		p->st = LP_TODO;
		return -1;
	}
	if (r->c->eof)
		ops->wake(r->c); /* its peer left: a wait is cancelled */
	return 0;
}

/* One attempt (WM_ONCE) at every key from b on that the request does not
 * hold, all in this loop turn, so that redlock sends them as one script
 * per master; up to the first key busy here (held, asked for or queued
 * for on this lockd): the keys above it would be given back at once. */
static void ask_from(struct la_req *r, uint32_t b)
{
	r->state = LA_ASKING;
	for (uint32_t i = b; i < r->n; i++) {
		struct la_part *p = &r->p[i];
		if (p->st != LP_TODO && p->st != LP_BUSY)
			continue;
		r->one.key = p->key;
		r->one.klen = p->klen;
		p->st = LP_ASKING;
		r->asking++;
		int rc = lt_part_start(&p->w, &r->one, WM_ONCE);
		if (rc == 0)
			continue;
		r->asking--;
		p->st = LP_BUSY;
		if (rc < 0)
			r->err = MSG_OOM;
		break;
	}
	schedule(r);
}

static void step(struct la_req *r)
{
	if (r->err) {
		fail(r, r->err);
		return;
	}
	if (r->asking)
		return; /* a verdict is still out */
	recheck(r);
	uint32_t b;
	for (b = 0; b < r->n && r->p[b].st != LP_TODO && r->p[b].st != LP_BUSY; b++)
		;
	if (b == r->n) {
		grant(r);
		return;
	}
	if (r->once) {
		fail(r, r->quorum ? MSG_NO_QUORUM : "TIMEOUT");
		return;
	}
	if (r->p[b].st == LP_TODO) {
		/* Not asked since it was waited for or lost: one attempt at it
		 * and every key above it not held, in one batch. Such attempts
		 * never wait, so holding keys above b meanwhile is harmless. */
		ask_from(r, b);
		return;
	}
	r->quorum = 0; /* from now on, the waiter's last attempt tells (timer_cb) */
	/* Hold nothing above the key waited for. */
	for (uint32_t i = b + 1; i < r->n; i++) {
		if (r->p[i].st == LP_HELD)
			lt_part_release(r->c, r->p[i].key, r->p[i].klen);
		if (r->p[i].st == LP_HELD || r->p[i].st == LP_BUSY)
			r->p[i].st = LP_TODO; /* asked again, in one batch, once b is held */
	}
	if (wait_for(r, &r->p[b]) != 0)
		fail(r, MSG_OOM);
}

static void step_cb(evutil_socket_t fd, short what, void *arg)
{
	step(arg);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct la_req *r = arg;
	int64_t now = now_us();
	/* Never answer before the WAIT is over; while the counts are written
	 * every key is held, and counted() decides (soon). */
	if (now < r->deadline_us || r->state == LA_COUNTING) {
		int64_t us = now < r->deadline_us ? r->deadline_us - now : 5000;
		struct timeval tv = {0, (suseconds_t)us};
		tv.tv_sec = tv.tv_usec / 1000000;
		tv.tv_usec %= 1000000;
		evtimer_add(r->timer, &tv);
		return;
	}
	int quorum = r->quorum;
	for (uint32_t i = 0; i < r->n; i++)
		if (r->p[i].st == LP_ASKING && r->p[i].w.quorum_failed)
			quorum = 1;
	fail(r, quorum ? MSG_NO_QUORUM : "TIMEOUT");
}

/* --- the request --- */

static int key_cmp(const void *a, const void *b)
{
	const struct la_part *x = a, *y = b;
	size_t n = x->klen < y->klen ? x->klen : y->klen;
	int d = memcmp(x->key, y->key, n);
	return d ? d : x->klen < y->klen ? -1 : x->klen > y->klen;
}

/* The request, its keys copied and sorted; NULL: out of memory. */
static struct la_req *req_new(struct lt_client *c, const struct request *q)
{
	size_t n = q->nkeys;
	size_t size = sizeof(struct la_req) + n * sizeof(struct la_part) + n * sizeof(uint32_t) +
	              q->keys_len + 1 + 3 + n * 21 + 1;
	struct la_req *r = calloc(1, size);
	if (!r)
		return NULL;
	r->p = (struct la_part *)(r + 1);
	r->by_given = (uint32_t *)(r->p + n);
	char *keys = (char *)(r->by_given + n);
	r->reply = keys + q->keys_len + 1;
	memcpy(keys, q->keys, q->keys_len);
	r->c = c;
	r->n = (uint32_t)n;
	size_t pos = 0;
	const char *k;
	size_t kl;
	for (uint32_t i = 0; i < n && proto_next_key(q, &pos, &k, &kl); i++) {
		r->p[i].key = keys + (k - q->keys);
		r->p[i].klen = kl;
		r->p[i].given = i;
		r->p[i].w.c = c;
		r->p[i].st = LP_TODO;
	}
	qsort(r->p, n, sizeof(r->p[0]), key_cmp);
	for (uint32_t i = 0; i < n; i++)
		r->by_given[r->p[i].given] = i;
	r->one.cmd = CMD_LOCK;
	r->one.has_ttl = q->has_ttl;
	r->one.ttl_ms = q->ttl_ms;
	r->one.has_delay = 1; /* locks.lost_delay_ms when not given, as LOCK's */
	r->one.delay_ms = q->has_delay ? q->delay_ms : (uint32_t)cfg->lost_delay_ms;
	r->once = q->has_wait && q->wait_ms == 0;
	r->step_ev = event_new(base, -1, 0, step_cb, r);
	r->timer = q->has_wait && !r->once ? evtimer_new(base, timer_cb, r) : NULL;
	if (!r->step_ev || (q->has_wait && !r->once && !r->timer)) {
		req_free(r);
		return NULL;
	}
	return r;
}

/* What the session holds of the request's keys: the reentrant ones, and
 * the first key it holds in another way (ERR ARG, as LOCK). Returns the
 * number of keys it does not hold, or -1 when answered. */
static int64_t check_holds(struct la_req *r)
{
	int64_t fresh = 0;
	for (uint32_t g = 0; g < r->n; g++) {
		struct la_part *p = &r->p[r->by_given[g]];
		uint64_t fence = 0;
		uint32_t permit = 0;
		int kind = lt_part_held(r->c, p->key, p->klen, &fence, &permit);
		if (exclusive(kind, permit)) {
			p->st = LP_PRIOR;
			p->fence = fence;
		} else if (kind == HK_SHARED) {
			lt_ops_reply(ops, r->c, "ERR ARG cannot upgrade a shared hold");
			return -1;
		} else if (kind == HK_PERMIT) {
			lt_ops_reply(ops, r->c, "ERR ARG holds permit %u of %.*s", permit,
			             (int)p->klen, p->key);
			return -1;
		} else {
			fresh++;
		}
	}
	return fresh;
}

/* The limits on waiting sessions, as LOCK checks them on arrival: a
 * request that may wait counts as one waiting session, and as a waiter of
 * each of its keys. Returns 1 when answered ERR LIMIT. */
static int waiters_limit(struct la_req *r)
{
	if (r->once)
		return 0;
	if (cfg->max_waiters && stats.sessions_waiting >= (uint64_t)cfg->max_waiters) {
		lt_ops_reply(ops, r->c, "ERR LIMIT too many sessions wait (limits.max_waiters)");
		return 1;
	}
	for (uint32_t i = 0; cfg->max_waiters_per_key && i < r->n; i++)
		if (r->p[i].st != LP_PRIOR && lt_part_waiters(r->p[i].key, r->p[i].klen) >=
		                                  (size_t)cfg->max_waiters_per_key) {
			lt_ops_reply(ops, r->c,
			             "ERR LIMIT too many sessions wait for this key "
			             "(limits.max_waiters_per_key)");
			return 1;
		}
	return 0;
}

void la_lockall(struct lt_client *c, const struct request *q)
{
	struct la_req *r;

	if (c->la || !(r = req_new(c, q))) {
		lt_ops_reply(ops, c, "%s", MSG_OOM);
		return;
	}
	c->la = r;
	int64_t fresh = check_holds(r);
	if (fresh < 0) {
		req_free(r);
		return;
	}
	if (fresh && q->has_ttl && quorum_validity_us(q->ttl_ms, 0, cfg->drift_factor) <= 0) {
		req_free(r);
		lt_ops_reply(ops, c,
		             "ERR ARG TTL is shorter than the clock drift margin (2 ms + "
		             "locks.drift_factor)");
		return;
	}
	if (c->nlocks + (uint64_t)fresh > (uint64_t)cfg->max_locks_per_session) {
		req_free(r);
		lt_ops_reply(ops, c,
		             "ERR LIMIT this session holds limits.max_locks_per_session locks");
		return;
	}
	if (waiters_limit(r)) {
		req_free(r);
		return;
	}
	if (r->timer) {
		r->deadline_us = c->req_us + (int64_t)q->wait_ms * 1000;
		struct timeval tv = {(time_t)(q->wait_ms / 1000),
		                     (suseconds_t)(q->wait_ms % 1000) * 1000};
		evtimer_add(r->timer, &tv);
	}
	ask_from(r, 0); /* the first attempt */
}

void la_init(struct event_base *b, const struct config *c, const struct lt_ops *o)
{
	static const struct lt_part_ops hooks = {part_granted, part_failed, cancel_hook,
	                                         waiting_hook, part_delayed};
	base = b;
	cfg = c;
	ops = o;
	lt_set_part_ops(&hooks);
}
