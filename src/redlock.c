/* redlock: one quorum call across all masters.
 *
 * A call fans one command out to every master that is up, then counts
 * answers from the masters that count (up, judged, not excluded after a
 * restart). Non-counting masters still get every write, so they heal, but
 * never decide. Owners hear the verdict once, never from inside the
 * function that started the call; a call outlives its owner (rl_detach)
 * until the last master answered, so nothing is freed under a callback. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "log.h"
#include "master.h"
#include "quorum.h"
#include "redlock.h"
#include "stats.h"

enum rl_kind {
	RK_ACQUIRE, /* SCR_ACQUIRE, then SCR_RAISE where fences disagree */
	RK_RELEASE, /* SCR_RELEASE */
	RK_RENEW,   /* SCR_RENEW over a batch */
	RK_RELEASE_MANY, /* SCR_RELEASE_MANY over a batch, nobody waits for it */
	RK_STATUS,  /* PTTL */
};

enum mr {
	MR_NONE, /* not asked (down) */
	MR_WAIT, /* asked, no answer yet */
	MR_YES,  /* acquire: set; others: answered */
	MR_BUSY, /* acquire: another token holds it */
	MR_FAIL, /* error reply, timeout or connection lost */
};

struct rl_call {
	enum rl_kind kind;
	int n, maj;
	int pending; /* master replies still to come, plus one while deferred */
	unsigned char st[CONFIG_MAX_MASTERS];
	unsigned char counts[CONFIG_MAX_MASTERS]; /* counted when the call started */
	unsigned char raise_st[CONFIG_MAX_MASTERS];
	int64_t val[CONFIG_MAX_MASTERS];
	int phase;      /* acquire: 1 set, 2 fence write-back */
	int done_fired; /* done has run, or will never run */
	int rel_fired;  /* release_done has run, or will never run */
	int in_fanout;  /* verdicts are held back while still sending */
	int expired;    /* timeout_ms passed: masters still silent count as no */
	int pooled;     /* buf has POOL_EXTRA bytes: goes back to the pool */
	struct wq_link exp_link; /* on expq until decided or expired */
	struct rl_call *defer_next;
	rl_done_fn *done, *rel_done;
	void *owner;
	int64_t lease_ms;
	struct rl_grant grant;
	enum rl_result rel_result;
	int status_ok, status_held;
	int64_t status_ttl;

	int argc;
	const char *argv[13];
	size_t argvlen[13];
	const char *rargv[6]; /* fence write-back */
	size_t rargvlen[6];
	char leasebuf[24], fencebuf[24];

	struct rl_renew_item *items; /* RK_RENEW */
	int nitems;
	const char **bargv;
	size_t *bargvlen;
	char *bbuf;

	char buf[]; /* lock key, fence key, tokens, key */
};

static struct event *defer_ev;
static struct rl_call *defer_head;
static char prefix[80];
static size_t prefix_len;
static char channel[128];
static double drift;
static char fence_idle[24]; /* locks.fence_idle_ms, as the scripts take it */
/* A master that stops answering is dropped after timeout_ms (master.c);
 * one that answers, but slowly (a burst queued on it), may take this much
 * longer before a call gives up on it: the protocol's bound on any reply
 * is timeout_ms + 500 ms, and giving up sooner under load only turns
 * healthy masters into QUORUM errors and retries that add to the load. */
#define CALL_GRACE_MS 450
static int64_t timeout_us; /* a call's verdict never waits longer than this */
#define INSTANCE_LEN 16 /* hex characters: a token is instance + 16 random ones */
static char instance[TOKEN_LEN + 1]; /* this lockd process: tokens, waiting flag */
static char reserve_ms[24];          /* how long a release is kept for a waiter elsewhere */
/* Undecided calls in start order: all share timeout_us, so the first is
 * always the next to expire, and one timer serves them all. */
static struct waitq expq;
static struct event *exp_timer;

/* Calls for keys of ordinary length come from a free list: no malloc per
 * request on the hot path once the list is warm. */
#define POOL_EXTRA 1024 /* buf bytes of a pooled call: keys up to ~300 bytes */
#define POOL_MAX 1024   /* free calls kept (memory goes back after a burst) */

struct pooled {
	struct pooled *next;
};
static struct pooled *pool;
static int pool_len;

static void defer_cb(evutil_socket_t fd, short what, void *arg);
static void expire_cb(evutil_socket_t fd, short what, void *arg);

void redlock_init(struct event_base *base, const char *p, double drift_factor, int64_t timeout_ms,
		  int64_t fence_idle_ms)
{
	if (!defer_ev) {
		defer_ev = event_new(base, -1, 0, defer_cb, NULL);
		exp_timer = evtimer_new(base, expire_cb, NULL);
		waitq_init(&expq);
	}
	timeout_us = (timeout_ms + CALL_GRACE_MS) * 1000;
	token_new(instance);
	instance[INSTANCE_LEN] = '\0';
	snprintf(reserve_ms, sizeof(reserve_ms), "%lld",
		 (long long)(timeout_ms * 2 > 100 ? timeout_ms * 2 : 100));
	snprintf(prefix, sizeof(prefix), "%s", p);
	prefix_len = strlen(prefix);
	snprintf(channel, sizeof(channel), "%s released", p);
	redlock_set_opts(drift_factor, timeout_ms, fence_idle_ms);
}

void redlock_set_opts(double drift_factor, int64_t timeout_ms, int64_t fence_idle_ms)
{
	drift = drift_factor;
	timeout_us = (timeout_ms + CALL_GRACE_MS) * 1000;
	snprintf(fence_idle, sizeof(fence_idle), "%lld", (long long)fence_idle_ms);
}

void rl_token_new(char *out)
{
	token_new(out);
	memcpy(out, instance, INSTANCE_LEN);
}

void redlock_shutdown(void)
{
	while (pool) {
		struct pooled *p = pool;
		pool = p->next;
		free(p);
	}
	pool_len = 0;
	if (defer_ev) {
		event_free(defer_ev);
		event_free(exp_timer);
	}
	defer_ev = exp_timer = NULL;
}

static void arm_expiry(void)
{
	struct wq_link *l = waitq_first(&expq);
	if (!l)
		return;
	int64_t d = wq_entry(l, struct rl_call, exp_link)->grant.start_us + timeout_us - now_us();
	if (d < 0)
		d = 0;
	struct timeval tv = {(time_t)(d / 1000000), (suseconds_t)(d % 1000000)};
	event_add(exp_timer, &tv);
}

static int live_calls;

int rl_inflight(void) { return live_calls; }

static struct rl_call *call_new(enum rl_kind kind, size_t extra)
{
	struct rl_call *c;
	if (extra <= POOL_EXTRA && pool) {
		c = (struct rl_call *)pool;
		pool = pool->next;
		pool_len--;
		memset(c, 0, sizeof(*c));
	} else {
		c = calloc(1, sizeof(*c) + (extra <= POOL_EXTRA ? POOL_EXTRA : extra));
		if (!c)
			return NULL;
	}
	c->pooled = extra <= POOL_EXTRA;
	live_calls++;
	c->kind = kind;
	c->n = masters_count();
	c->maj = quorum_majority(c->n);
	c->grant.start_us = now_us();
	c->grant.pttl_ms = -1;
	for (int i = 0; i < c->n; i++)
		c->counts[i] = (unsigned char)master_counts(master_get(i));
	waitq_push(&expq, &c->exp_link);
	if (expq.len == 1)
		arm_expiry();
	return c;
}

static void call_free(struct rl_call *c)
{
	live_calls--;
	waitq_remove(&expq, &c->exp_link);
	free(c->items);
	free(c->bargv);
	free(c->bargvlen);
	free(c->bbuf);
	if (c->pooled && pool_len < POOL_MAX) {
		struct pooled *p = (struct pooled *)c;
		p->next = pool;
		pool = p;
		pool_len++;
		return;
	}
	free(c);
}

/* Counting masters in state s (of st[] or raise_st[]). */
static int count_st(const struct rl_call *c, const unsigned char *st, enum mr s)
{
	int k = 0;
	for (int i = 0; i < c->n; i++)
		k += c->counts[i] && st[i] == s;
	return k;
}

/* A renewal's verdict per item: a majority of the masters that count
 * hold it for us, and the lease it wrote is still valid. */
static void renew_verdicts(struct rl_call *c)
{
	int64_t now = now_us();
	int64_t left = quorum_validity_us(c->lease_ms, now - c->grant.start_us, drift);
	for (int k = 0; k < c->nitems; k++) {
		c->items[k].ok = c->items[k].yes >= c->maj && left > 0;
		c->items[k].validity_us = c->items[k].ok ? now + left : 0;
	}
}

static void fire_done(struct rl_call *c)
{
	if (c->done_fired)
		return;
	c->done_fired = 1;
	if (c->kind == RK_RENEW)
		renew_verdicts(c);
	if (c->done && c->owner)
		c->done(c, c->owner);
}

static void fire_rel(struct rl_call *c, enum rl_result r)
{
	if (c->rel_fired)
		return;
	c->rel_fired = 1;
	c->rel_result = r;
	if (c->rel_done && c->owner)
		c->rel_done(c, c->owner);
}

static void release_everywhere(const struct rl_call *c);
static void check(struct rl_call *c);

static void finish_acquire(struct rl_call *c, enum rl_result r)
{
	c->grant.result = r;
	if (r == RL_OK) {
		int64_t left = quorum_validity_us(c->lease_ms, now_us() - c->grant.start_us, drift);
		if (left <= 0) {
			log_warn("grant for %s came too late (validity over): released",
				 c->buf + prefix_len);
			c->grant.result = r = RL_QUORUM;
		} else {
			c->grant.validity_us = now_us() + left;
		}
	}
	if (r != RL_OK) {
		release_everywhere(c);
		stats.quorum_failures += r == RL_QUORUM;
	}
	fire_done(c);
}

static void raise_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	if (c->expired) { /* the verdict was given without this master */
		c->pending--;
		check(c);
		return;
	}
	c->pending--;
	c->raise_st[m->idx] = r && r->type == REDIS_REPLY_INTEGER &&
					      (uint64_t)r->integer >= c->grant.fence
				      ? MR_YES
				      : MR_FAIL;
	check(c);
}

/* Phase 2: store the fence on enough masters that a majority holds it. */
static void start_writeback(struct rl_call *c)
{
	c->phase = 2;
	if (c->expired)
		return; /* no time left for a second round: check_acquire fails it */
	snprintf(c->fencebuf, sizeof(c->fencebuf), "%llu", (unsigned long long)c->grant.fence);
	c->rargv[4] = c->fencebuf;
	c->rargvlen[4] = strlen(c->fencebuf);
	c->rargv[5] = fence_idle;
	c->rargvlen[5] = strlen(fence_idle);
	c->in_fanout = 1;
	for (int i = 0; i < c->n; i++) {
		if (c->st[i] == MR_YES && (uint64_t)c->val[i] == c->grant.fence) {
			c->raise_st[i] = MR_YES; /* already holds it */
			continue;
		}
		c->raise_st[i] = MR_FAIL;
		if (!c->counts[i])
			continue;
		if (master_call(master_get(i), SCR_RAISE, 6, c->rargv, c->rargvlen, raise_reply, c) ==
		    0) {
			c->raise_st[i] = MR_WAIT;
			c->pending++;
		}
	}
	c->in_fanout = 0;
	stats.fence_writebacks++;
}

static void check_acquire(struct rl_call *c)
{
	int yes = count_st(c, c->st, MR_YES), busy = count_st(c, c->st, MR_BUSY);
	int wait = count_st(c, c->st, MR_WAIT);

	/* The release side of a handoff: every answer from a counting master
	 * means our old token is gone there. */
	if (c->rel_done && !c->rel_fired) {
		if (yes + busy >= c->maj)
			fire_rel(c, RL_OK);
		else if (yes + busy + wait < c->maj)
			fire_rel(c, RL_QUORUM);
	}
	if (c->done_fired)
		return;
	if (c->phase == 1) {
		if (yes >= c->maj) {
			int64_t ctr[CONFIG_MAX_MASTERS];
			int k = 0, wb;
			for (int i = 0; i < c->n; i++)
				if (c->counts[i] && c->st[i] == MR_YES)
					ctr[k++] = c->val[i];
			c->grant.fence = (uint64_t)quorum_fence(ctr, k, c->maj, &wb);
			if (!wb) {
				finish_acquire(c, RL_OK);
				return;
			}
			start_writeback(c);
		} else if (yes + wait < c->maj) {
			if (yes + busy >= c->maj)
				finish_acquire(c, RL_BUSY);
			else if (yes + busy + wait < c->maj)
				finish_acquire(c, RL_QUORUM);
			return;
		} else {
			return;
		}
	}
	/* phase 2 */
	int have = count_st(c, c->raise_st, MR_YES), rwait = count_st(c, c->raise_st, MR_WAIT);
	if (have >= c->maj)
		finish_acquire(c, RL_OK);
	else if (have + rwait < c->maj)
		finish_acquire(c, RL_QUORUM);
}

static void check_release(struct rl_call *c)
{
	int yes = count_st(c, c->st, MR_YES), wait = count_st(c, c->st, MR_WAIT);
	if (yes >= c->maj)
		fire_rel(c, RL_OK);
	else if (yes + wait < c->maj)
		fire_rel(c, RL_QUORUM);
}

static void check_status(struct rl_call *c)
{
	int64_t have[CONFIG_MAX_MASTERS];
	int k = 0, answered = 0;

	if (c->pending && !c->expired)
		return;
	for (int i = 0; i < c->n; i++) {
		if (!c->counts[i] || c->st[i] != MR_YES)
			continue;
		answered++;
		if (c->val[i] >= 0)
			have[k++] = c->val[i];
		else if (c->val[i] == -1) /* no expiry: not ours, but held */
			have[k++] = INT32_MAX;
	}
	c->status_ok = answered >= c->maj;
	c->status_held = k >= c->maj;
	if (c->status_held) {
		/* The key is held while a majority still has it: the maj-th
		 * longest remaining lease. */
		for (int i = 0; i < k; i++)
			for (int j = i + 1; j < k; j++)
				if (have[j] > have[i]) {
					int64_t t = have[i];
					have[i] = have[j];
					have[j] = t;
				}
		c->status_ttl = have[c->maj - 1];
	}
	fire_done(c);
}

static void check(struct rl_call *c)
{
	if (c->in_fanout)
		return;
	switch (c->kind) {
	case RK_ACQUIRE:
		check_acquire(c);
		break;
	case RK_RELEASE:
		check_release(c);
		break;
	case RK_RENEW:
	case RK_RELEASE_MANY:
		if (!c->pending || c->expired)
			fire_done(c);
		break;
	case RK_STATUS:
		check_status(c);
		break;
	}
	if (c->pending == 0) {
		/* Every master answered: settle any verdict still open. */
		if (c->kind == RK_ACQUIRE && !c->done_fired)
			finish_acquire(c, RL_QUORUM);
		c->done_fired = 1;
		fire_rel(c, RL_QUORUM);
		call_free(c);
	}
}

/* timeout_us after a call started, masters that have not answered count
 * as no: no verdict waits longer than that for a slow or stopped master. */
static void expire_cb(evutil_socket_t fd, short what, void *arg)
{
	struct wq_link *l;
	int64_t now = now_us();

	while ((l = waitq_first(&expq))) {
		struct rl_call *c = wq_entry(l, struct rl_call, exp_link);
		if (c->grant.start_us + timeout_us > now)
			break;
		waitq_remove(&expq, l);
		c->expired = 1;
		for (int i = 0; i < c->n; i++) {
			if (c->st[i] == MR_WAIT)
				c->st[i] = MR_FAIL;
			if (c->raise_st[i] == MR_WAIT)
				c->raise_st[i] = MR_FAIL;
		}
		c->pending++; /* check() may free it; we still hold it here */
		check(c);
		c->pending--;
		if (c->pending == 0)
			check(c);
	}
	arm_expiry();
}

static void defer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct rl_call *list = defer_head;
	defer_head = NULL;
	while (list) {
		struct rl_call *c = list;
		list = c->defer_next;
		c->pending--;
		check(c);
	}
}

/* Verdicts reached while sending are delivered from the loop, so that
 * no owner is called back from inside the function that started it. One
 * shared event serves every call started in this loop iteration. */
static void after_fanout(struct rl_call *c)
{
	c->pending++;
	c->defer_next = defer_head;
	defer_head = c;
	event_active(defer_ev, EV_TIMEOUT, 0);
}

static void fanout(struct rl_call *c, int script, master_reply_fn *fn)
{
	c->in_fanout = 1;
	for (int i = 0; i < c->n; i++) {
		if (master_call(master_get(i), script, c->argc, c->argv, c->argvlen, fn, c) == 0) {
			c->st[i] = MR_WAIT;
			c->pending++;
		} else {
			c->st[i] = MR_FAIL;
		}
	}
	c->in_fanout = 0;
	after_fanout(c);
}

static void acquire_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	if (c->expired) { /* the verdict was given without this master */
		c->pending--;
		check(c);
		return;
	}
	int i = m->idx;

	c->pending--;
	if (r && r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
	    r->element[0]->type == REDIS_REPLY_INTEGER &&
	    r->element[1]->type == REDIS_REPLY_INTEGER) {
		if (r->element[0]->integer > 0) {
			c->st[i] = MR_YES;
			c->val[i] = r->element[0]->integer;
			if (r->elements > 2 && r->element[2]->type == REDIS_REPLY_INTEGER &&
			    r->element[2]->integer > 0)
				c->grant.remote_waiters = 1;
		} else {
			c->st[i] = MR_BUSY;
			if (r->element[1]->integer > c->grant.pttl_ms)
				c->grant.pttl_ms = r->element[1]->integer;
		}
	} else {
		if (r && r->type == REDIS_REPLY_ERROR)
			log_warn("master %s: acquire: %s", m->name, r->str);
		c->st[i] = MR_FAIL;
	}
	check(c);
}

/* Lay out "prefix key", then "prefix key SUFFIX" for each suffix, in c->buf. */
static size_t put_keys(struct rl_call *c, const char *key, size_t klen, const char *const *sfx,
		       int nsfx)
{
	char *p = c->buf;
	memcpy(p, prefix, prefix_len);
	memcpy(p + prefix_len, key, klen);
	p[prefix_len + klen] = '\0';
	size_t used = prefix_len + klen + 1;
	for (int i = 0; i < nsfx; i++) {
		char *f = p + used;
		size_t sl = strlen(sfx[i]);
		memcpy(f, p, prefix_len + klen);
		memcpy(f + prefix_len + klen, sfx[i], sl + 1);
		used += prefix_len + klen + sl + 1;
	}
	return used;
}

/* Keys beside a lock: they contain a space, which no lock key can. */
static const char *const sfx_acquire[] = {" fence", " waiting", " reserved"};
static const char *const sfx_release[] = {" waiting", " reserved"};

struct rl_call *rl_acquire(const char *key, size_t klen, const char *token, int64_t lease_ms,
			   const char *old_token, int will_wait, rl_done_fn *done,
			   rl_done_fn *release_done, void *owner)
{
	struct rl_call *c = call_new(RK_ACQUIRE, 4 * (prefix_len + klen) + 40 + 2 * (TOKEN_LEN + 1));
	if (!c)
		return NULL;
	size_t used = put_keys(c, key, klen, sfx_acquire, 3);
	char *tok = c->buf + used, *old = tok + TOKEN_LEN + 1;
	memcpy(tok, token, TOKEN_LEN + 1);
	if (old_token)
		memcpy(old, old_token, TOKEN_LEN + 1);
	else
		old[0] = '\0';
	c->phase = 1;
	c->lease_ms = lease_ms;
	c->done = done;
	c->rel_done = release_done;
	c->rel_fired = release_done == NULL;
	c->owner = owner;
	snprintf(c->leasebuf, sizeof(c->leasebuf), "%lld", (long long)lease_ms);
	/* EVALSHA sha 4 lock fence waiting reserved token lease old wait
	 * instance idle */
	c->argc = 13;
	c->argv[2] = "4";
	c->argv[3] = c->buf;
	c->argv[4] = c->argv[3] + prefix_len + klen + 1;
	c->argv[5] = c->argv[4] + prefix_len + klen + 7;
	c->argv[6] = c->argv[5] + prefix_len + klen + 9;
	c->argv[7] = tok;
	c->argv[8] = c->leasebuf;
	c->argv[9] = old;
	c->argv[10] = will_wait ? "1" : "0";
	c->argv[11] = instance;
	c->argv[12] = fence_idle;
	for (int i = 2; i < 13; i++)
		c->argvlen[i] = strlen(c->argv[i]);
	/* write-back: EVALSHA sha 1 fencekey value */
	c->rargv[2] = "1";
	c->rargvlen[2] = 1;
	c->rargv[3] = c->argv[4];
	c->rargvlen[3] = c->argvlen[4];
	fanout(c, SCR_ACQUIRE, acquire_reply);
	return c;
}

const struct rl_grant *rl_grant_of(const struct rl_call *c) { return &c->grant; }

static void release_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	if (c->expired) { /* the verdict was given without this master */
		c->pending--;
		check(c);
		return;
	}
	c->pending--;
	c->st[m->idx] = r && r->type == REDIS_REPLY_INTEGER ? MR_YES : MR_FAIL;
	check(c);
}

struct rl_call *rl_release(const char *key, size_t klen, const char *token, int64_t wait_flag_ms,
			   rl_done_fn *done, void *owner)
{
	struct rl_call *c = call_new(RK_RELEASE, 3 * prefix_len + 4 * klen + TOKEN_LEN + 40);
	if (!c)
		return NULL;
	size_t used = put_keys(c, key, klen, sfx_release, 2);
	char *tok = c->buf + used, *k = tok + TOKEN_LEN + 1;
	memcpy(tok, token, TOKEN_LEN + 1);
	memcpy(k, key, klen);
	k[klen] = '\0';
	c->rel_done = done;
	c->owner = owner;
	c->done_fired = 1;
	snprintf(c->leasebuf, sizeof(c->leasebuf), "%lld", (long long)wait_flag_ms);
	/* EVALSHA sha 3 lock waiting reserved token channel key flagms instance reservems */
	c->argc = 12;
	c->argv[2] = "3";
	c->argv[3] = c->buf;
	c->argv[4] = c->argv[3] + prefix_len + klen + 1;
	c->argv[5] = c->argv[4] + prefix_len + klen + 9;
	c->argv[6] = tok;
	c->argv[7] = channel;
	c->argv[8] = k;
	c->argv[9] = c->leasebuf;
	c->argv[10] = instance;
	c->argv[11] = reserve_ms;
	for (int i = 2; i < 12; i++)
		c->argvlen[i] = strlen(c->argv[i]);
	c->argvlen[8] = klen;
	stats.releases++;
	fanout(c, SCR_RELEASE, release_reply);
	return c;
}

enum rl_result rl_result_of(const struct rl_call *c) { return c->rel_result; }

static void release_everywhere(const struct rl_call *c)
{
	const char *tok = c->argv[7];
	size_t klen = c->argvlen[3] - prefix_len;
	rl_release(c->buf + prefix_len, klen, tok, 0, NULL, NULL);
}

static void renew_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	if (c->expired) { /* the verdict was given without this master */
		c->pending--;
		check(c);
		return;
	}
	int i = m->idx;

	c->pending--;
	if (r && r->type == REDIS_REPLY_ARRAY && (int)r->elements == c->nitems) {
		c->st[i] = MR_YES;
		if (c->counts[i])
			for (int k = 0; k < c->nitems; k++)
				if (r->element[k]->type == REDIS_REPLY_INTEGER &&
				    r->element[k]->integer > 0)
					c->items[k].yes++;
	} else {
		if (r && r->type == REDIS_REPLY_ERROR)
			log_warn("master %s: renew: %s", m->name, r->str);
		c->st[i] = MR_FAIL;
	}
	check(c);
}

struct rl_call *rl_renew(struct rl_renew_item *items, int n, int64_t lease_ms, rl_done_fn *done,
			 void *owner)
{
	struct rl_call *c = call_new(RK_RENEW, 0);
	size_t total = 0;
	if (!c)
		return NULL;
	c->items = items;
	c->nitems = n;
	c->done = done;
	c->owner = owner;
	c->rel_fired = 1;
	c->lease_ms = lease_ms;
	for (int k = 0; k < n; k++)
		total += prefix_len + items[k].klen + 1 + TOKEN_LEN + 1;
	/* EVALSHA sha n key... lease token... */
	int argc = 3 + 2 * n + 1;
	c->bargv = malloc(sizeof(*c->bargv) * (size_t)argc);
	c->bargvlen = malloc(sizeof(*c->bargvlen) * (size_t)argc);
	c->bbuf = malloc(total + 32);
	if (!c->bargv || !c->bargvlen || !c->bbuf) {
		c->items = NULL;
		call_free(c);
		return NULL;
	}
	char *numk = c->bbuf + total;
	snprintf(numk, 16, "%d", n);
	snprintf(c->leasebuf, sizeof(c->leasebuf), "%lld", (long long)lease_ms);
	c->bargv[0] = c->bargv[1] = "";
	c->bargvlen[0] = c->bargvlen[1] = 0;
	c->bargv[2] = numk;
	c->bargvlen[2] = strlen(numk);
	c->bargv[3 + n] = c->leasebuf;
	c->bargvlen[3 + n] = strlen(c->leasebuf);
	char *p = c->bbuf;
	for (int k = 0; k < n; k++) {
		items[k].yes = 0;
		memcpy(p, prefix, prefix_len);
		memcpy(p + prefix_len, items[k].key, items[k].klen);
		c->bargv[3 + k] = p;
		c->bargvlen[3 + k] = prefix_len + items[k].klen;
		p += prefix_len + items[k].klen + 1;
		/* The token is copied: a resend after NOSCRIPT must carry the
		 * token of this call, whatever the key's entry holds by then. */
		memcpy(p, items[k].token, TOKEN_LEN);
		c->bargv[4 + n + k] = p;
		c->bargvlen[4 + n + k] = TOKEN_LEN;
		p += TOKEN_LEN + 1;
	}
	c->in_fanout = 1;
	for (int i = 0; i < c->n; i++) {
		if (master_call(master_get(i), SCR_RENEW, argc, c->bargv, c->bargvlen, renew_reply,
				c) == 0) {
			c->st[i] = MR_WAIT;
			c->pending++;
		} else {
			c->st[i] = MR_FAIL;
		}
	}
	c->in_fanout = 0;
	after_fanout(c);
	return c;
}

struct rl_renew_item *rl_renew_items(const struct rl_call *c, int *n)
{
	*n = c->nitems;
	return c->items;
}

int64_t rl_start_us(const struct rl_call *c) { return c->grant.start_us; }

int64_t rl_lease_of(const struct rl_call *c) { return c->lease_ms; }

static void release_many_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	c->pending--;
	if (!c->expired)
		c->st[m->idx] = r && r->type == REDIS_REPLY_INTEGER ? MR_YES : MR_FAIL;
	check(c);
}

struct rl_call *rl_release_many(const struct rl_release_item *items, int n, rl_done_fn *done,
				void *owner)
{
	static const char *const sfx[3] = {"", " waiting", " reserved"};
	struct rl_call *c = call_new(RK_RELEASE_MANY, 0);
	size_t total = 32;
	if (!c)
		return NULL;
	for (int k = 0; k < n; k++)
		total += 3 * (prefix_len + items[k].klen) + 20 + items[k].klen + TOKEN_LEN + 2;
	/* EVALSHA sha 3n lock... waiting... reserved... channel instance
	 * reservems token... key... */
	int argc = 3 + 3 * n + 3 + 2 * n;
	c->bargv = malloc(sizeof(*c->bargv) * (size_t)argc);
	c->bargvlen = malloc(sizeof(*c->bargvlen) * (size_t)argc);
	c->bbuf = malloc(total);
	if (!c->bargv || !c->bargvlen || !c->bbuf) {
		call_free(c);
		return NULL;
	}
	c->done = done;
	c->owner = owner;
	c->rel_fired = 1;
	char *p = c->bbuf;
	int a = 0;
	c->bargv[a] = c->bargv[a + 1] = "";
	c->bargvlen[a] = c->bargvlen[a + 1] = 0;
	a += 2;
	c->bargv[a] = p;
	c->bargvlen[a++] = (size_t)sprintf(p, "%d", 3 * n);
	p += c->bargvlen[a - 1] + 1;
	for (int s = 0; s < 3; s++) {
		size_t sl = strlen(sfx[s]);
		for (int k = 0; k < n; k++) {
			memcpy(p, prefix, prefix_len);
			memcpy(p + prefix_len, items[k].key, items[k].klen);
			memcpy(p + prefix_len + items[k].klen, sfx[s], sl);
			c->bargv[a] = p;
			c->bargvlen[a++] = prefix_len + items[k].klen + sl;
			p += prefix_len + items[k].klen + sl;
		}
	}
	c->bargv[a] = channel;
	c->bargvlen[a++] = strlen(channel);
	c->bargv[a] = instance;
	c->bargvlen[a++] = strlen(instance);
	c->bargv[a] = reserve_ms;
	c->bargvlen[a++] = strlen(reserve_ms);
	/* Copies: a master may resend (NOSCRIPT) after the verdict. */
	for (int k = 0; k < n; k++) {
		memcpy(p, items[k].token, TOKEN_LEN);
		c->bargv[a] = p;
		c->bargvlen[a++] = TOKEN_LEN;
		p += TOKEN_LEN + 1;
	}
	for (int k = 0; k < n; k++) {
		memcpy(p, items[k].key, items[k].klen);
		c->bargv[a] = p;
		c->bargvlen[a++] = items[k].klen;
		p += items[k].klen + 1;
	}
	stats.releases += (uint64_t)n;
	c->argc = argc;
	c->in_fanout = 1;
	for (int i = 0; i < c->n; i++) {
		if (master_call(master_get(i), SCR_RELEASE_MANY, argc, c->bargv, c->bargvlen,
				release_many_reply, c) == 0) {
			c->st[i] = MR_WAIT;
			c->pending++;
		} else {
			c->st[i] = MR_FAIL;
		}
	}
	c->in_fanout = 0;
	after_fanout(c);
	return c;
}

static void status_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	if (c->expired) { /* the verdict was given without this master */
		c->pending--;
		check(c);
		return;
	}
	c->pending--;
	if (r && r->type == REDIS_REPLY_INTEGER) {
		c->st[m->idx] = MR_YES;
		c->val[m->idx] = r->integer;
	} else {
		c->st[m->idx] = MR_FAIL;
	}
	check(c);
}

struct rl_call *rl_status(const char *key, size_t klen, rl_done_fn *done, void *owner)
{
	struct rl_call *c = call_new(RK_STATUS, prefix_len + klen + 1);
	if (!c)
		return NULL;
	put_keys(c, key, klen, NULL, 0);
	c->done = done;
	c->owner = owner;
	c->rel_fired = 1;
	c->argc = 2;
	c->argv[0] = "PTTL";
	c->argvlen[0] = 4;
	c->argv[1] = c->buf;
	c->argvlen[1] = prefix_len + klen;
	fanout(c, -1, status_reply);
	return c;
}

void rl_status_of(const struct rl_call *c, int *held, int64_t *ttl_ms)
{
	*held = c->status_ok ? c->status_held : -1;
	*ttl_ms = c->status_ttl;
}

const char *rl_key_of(const struct rl_call *c, size_t *klen)
{
	*klen = c->argvlen[c->kind == RK_STATUS ? 1 : 3] - prefix_len;
	return c->buf + prefix_len;
}

void rl_detach(struct rl_call *c, void *owner)
{
	if (c && c->owner == owner)
		c->owner = NULL;
}
