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
#include "membership.h"
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

/* Argument positions of each call: EVALSHA sha numkeys KEYS... ARGV...
 * (master.c puts EVALSHA and the SHA in the first two). */
enum acq_arg { /* SCR_ACQUIRE */
	AA_NKEYS = 2, AA_LOCK, AA_FENCE, AA_WAITING, AA_RESERVED, /* keys */
	AA_TOKEN, AA_LEASE, AA_OLD, AA_WAIT, AA_INSTANCE, AA_IDLE, AA_ARGC
};
enum rel_arg { /* SCR_RELEASE */
	RA_NKEYS = 2, RA_LOCK, RA_WAITING, RA_RESERVED, /* keys */
	RA_TOKEN, RA_CHANNEL, RA_KEY, RA_FLAG_MS, RA_INSTANCE, RA_RESERVE_MS, RA_ARGC
};
enum raise_arg { /* SCR_RAISE: the fence write-back */
	WA_NKEYS = 2, WA_FENCE, WA_VALUE, WA_IDLE, WA_ARGC
};
enum pttl_arg { PA_CMD, PA_KEY, PA_ARGC }; /* PTTL key */
#define FIXED_ARGC AA_ARGC /* the longest call of a fixed shape */

/* RK_ACQUIRE: the set round, then the fence write-back round. */
struct acq_part {
	int phase;                                  /* 1 set, 2 fence write-back */
	int64_t fence_of[CONFIG_MAX_MASTERS];       /* counter each granting master returned */
	unsigned char raise_st[CONFIG_MAX_MASTERS]; /* write-back answers (enum mr) */
	struct rl_grant grant;
	const char *wargv[WA_ARGC];
	size_t wargvlen[WA_ARGC];
	char fencebuf[24];
};

/* RK_STATUS: PTTL on every master. */
struct status_part {
	int ok, held;
	int64_t ttl;
	int64_t pttl[CONFIG_MAX_MASTERS];
};

/* RK_RENEW and RK_RELEASE_MANY: one script over many keys. */
struct batch_part {
	struct rl_renew_item *items; /* RK_RENEW; owned, freed with the call */
	int nitems;
	const char **argv;
	size_t *argvlen;
	char *buf;
};

struct rl_call {
	/* the fan-out, common to every kind */
	enum rl_kind kind;
	int n, maj;
	int pending; /* master replies still to come, plus one while deferred */
	unsigned char st[CONFIG_MAX_MASTERS];     /* each master's answer (enum mr) */
	unsigned char counts[CONFIG_MAX_MASTERS]; /* counted when the call started */
	int done_fired; /* done has run, or will never run */
	int rel_fired;  /* release_done has run, or will never run */
	int in_fanout;  /* verdicts are held back while still sending */
	int expired;    /* timeout_ms passed: masters still silent count as no */
	int pooled;     /* buf has POOL_EXTRA bytes: goes back to the pool */
	struct wq_link exp_link; /* on expq until decided or expired */
	struct rl_call *defer_next;
	rl_done_fn *done, *rel_done;
	void *owner;
	int64_t start_us; /* leases written by this call run from here */
	int64_t lease_ms;
	enum rl_result rel_result; /* a release, or a handoff's release side */
	int argc;
	const char **argv; /* fargv, or a batch's */
	const size_t *argvlen;
	const char *fargv[FIXED_ARGC];
	size_t fargvlen[FIXED_ARGC];
	char leasebuf[24];
	union {
		struct acq_part acq;
		struct status_part status;
		struct batch_part batch;
	} u;
	char buf[]; /* keys and tokens of a fixed-shape call */
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
	int64_t d = wq_entry(l, struct rl_call, exp_link)->start_us + timeout_us - now_us();
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
	c->start_us = now_us();
	c->argv = c->fargv;
	c->argvlen = c->fargvlen;
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
	if (c->kind == RK_RENEW || c->kind == RK_RELEASE_MANY) {
		free(c->u.batch.items);
		free(c->u.batch.argv);
		free(c->u.batch.argvlen);
		free(c->u.batch.buf);
	}
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
	int64_t left = quorum_validity_us(c->lease_ms, now - c->start_us, drift);
	for (int k = 0; k < c->u.batch.nitems; k++) {
		c->u.batch.items[k].ok = c->u.batch.items[k].yes >= c->maj && left > 0;
		c->u.batch.items[k].validity_us = c->u.batch.items[k].ok ? now + left : 0;
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
	c->u.acq.grant.result = r;
	if (r == RL_OK) {
		int64_t left = quorum_validity_us(c->lease_ms, now_us() - c->start_us, drift);
		if (left <= 0) {
			log_warn("grant for %s came too late (validity over): released",
				 c->buf + prefix_len);
			c->u.acq.grant.result = r = RL_QUORUM;
		} else {
			c->u.acq.grant.validity_us = now_us() + left;
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
	c->u.acq.raise_st[m->idx] = r && r->type == REDIS_REPLY_INTEGER &&
					      (uint64_t)r->integer >= c->u.acq.grant.fence
				      ? MR_YES
				      : MR_FAIL;
	check(c);
}

/* Phase 2: store the fence on enough masters that a majority holds it. */
static void start_writeback(struct rl_call *c)
{
	c->u.acq.phase = 2;
	if (c->expired)
		return; /* no time left for a second round: check_acquire fails it */
	snprintf(c->u.acq.fencebuf, sizeof(c->u.acq.fencebuf), "%llu", (unsigned long long)c->u.acq.grant.fence);
	c->u.acq.wargv[WA_VALUE] = c->u.acq.fencebuf;
	c->u.acq.wargvlen[WA_VALUE] = strlen(c->u.acq.fencebuf);
	c->u.acq.wargv[WA_IDLE] = fence_idle;
	c->u.acq.wargvlen[WA_IDLE] = strlen(fence_idle);
	c->in_fanout = 1;
	for (int i = 0; i < c->n; i++) {
		if (c->st[i] == MR_YES && (uint64_t)c->u.acq.fence_of[i] == c->u.acq.grant.fence) {
			c->u.acq.raise_st[i] = MR_YES; /* already holds it */
			continue;
		}
		c->u.acq.raise_st[i] = MR_FAIL;
		if (!c->counts[i])
			continue;
		if (master_call(master_get(i), SCR_RAISE, WA_ARGC, c->u.acq.wargv,
				c->u.acq.wargvlen, raise_reply, c) == 0) {
			c->u.acq.raise_st[i] = MR_WAIT;
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
	if (c->u.acq.phase == 1) {
		if (yes >= c->maj) {
			int64_t ctr[CONFIG_MAX_MASTERS];
			int k = 0, wb;
			for (int i = 0; i < c->n; i++)
				if (c->counts[i] && c->st[i] == MR_YES)
					ctr[k++] = c->u.acq.fence_of[i];
			c->u.acq.grant.fence = (uint64_t)quorum_fence(ctr, k, c->maj, &wb);
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
	int have = count_st(c, c->u.acq.raise_st, MR_YES), rwait = count_st(c, c->u.acq.raise_st, MR_WAIT);
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
		if (c->u.status.pttl[i] >= 0)
			have[k++] = c->u.status.pttl[i];
		else if (c->u.status.pttl[i] == -1) /* no expiry: not ours, but held */
			have[k++] = INT32_MAX;
	}
	c->u.status.ok = answered >= c->maj;
	c->u.status.held = k >= c->maj;
	if (c->u.status.held) {
		/* The key is held while a majority still has it: the maj-th
		 * longest remaining lease. */
		for (int i = 0; i < k; i++)
			for (int j = i + 1; j < k; j++)
				if (have[j] > have[i]) {
					int64_t t = have[i];
					have[i] = have[j];
					have[j] = t;
				}
		c->u.status.ttl = have[c->maj - 1];
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
		if (c->start_us + timeout_us > now)
			break;
		waitq_remove(&expq, l);
		c->expired = 1;
		for (int i = 0; i < c->n; i++) {
			if (c->st[i] == MR_WAIT)
				c->st[i] = MR_FAIL;
			if (c->u.acq.raise_st[i] == MR_WAIT)
				c->u.acq.raise_st[i] = MR_FAIL;
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
			c->u.acq.fence_of[i] = r->element[0]->integer;
			if (r->elements > 2 && r->element[2]->type == REDIS_REPLY_INTEGER &&
			    r->element[2]->integer > 0)
				c->u.acq.grant.remote_waiters = 1;
		} else {
			c->st[i] = MR_BUSY;
			if (r->element[1]->integer > c->u.acq.grant.pttl_ms)
				c->u.acq.grant.pttl_ms = r->element[1]->integer;
		}
	} else {
		if (r && r->type == REDIS_REPLY_ERROR)
			log_warn("master %s: acquire: %s", m->name, r->str);
		c->st[i] = MR_FAIL;
	}
	check(c);
}

/* Lay out in c->buf, NUL-terminated: "prefix key" at argv[at], then
 * "prefix key SUFFIX" for each suffix at the positions after it. Returns
 * the bytes used. */
static size_t put_keys(struct rl_call *c, int at, const char *key, size_t klen,
		       const char *const *sfx, int nsfx)
{
	char *p = c->buf;
	size_t used = 0;
	for (int i = -1; i < nsfx; i++) {
		const char *s = i < 0 ? "" : sfx[i];
		size_t sl = strlen(s);
		memcpy(p + used, prefix, prefix_len);
		memcpy(p + used + prefix_len, key, klen);
		memcpy(p + used + prefix_len + klen, s, sl + 1);
		c->fargv[at + 1 + i] = p + used;
		c->fargvlen[at + 1 + i] = prefix_len + klen + sl;
		used += prefix_len + klen + sl + 1;
	}
	return used;
}

/* Put a string argument at position at. */
static void put_arg(struct rl_call *c, int at, const char *v)
{
	c->fargv[at] = v;
	c->fargvlen[at] = strlen(v);
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
	size_t used = put_keys(c, AA_LOCK, key, klen, sfx_acquire, 3);
	char *tok = c->buf + used, *old = tok + TOKEN_LEN + 1;
	memcpy(tok, token, TOKEN_LEN + 1);
	if (old_token)
		memcpy(old, old_token, TOKEN_LEN + 1);
	else
		old[0] = '\0';
	c->u.acq.phase = 1;
	c->u.acq.grant.pttl_ms = -1;
	c->u.acq.grant.start_us = c->start_us;
	c->lease_ms = lease_ms;
	c->done = done;
	c->rel_done = release_done;
	c->rel_fired = release_done == NULL;
	c->owner = owner;
	snprintf(c->leasebuf, sizeof(c->leasebuf), "%lld", (long long)lease_ms);
	c->argc = AA_ARGC;
	put_arg(c, AA_NKEYS, "4");
	put_arg(c, AA_TOKEN, tok);
	put_arg(c, AA_LEASE, c->leasebuf);
	put_arg(c, AA_OLD, old);
	put_arg(c, AA_WAIT, will_wait ? "1" : "0");
	put_arg(c, AA_INSTANCE, instance);
	put_arg(c, AA_IDLE, fence_idle);
	/* the write-back, if the granting masters' fences disagree */
	c->u.acq.wargv[WA_NKEYS] = "1";
	c->u.acq.wargvlen[WA_NKEYS] = 1;
	c->u.acq.wargv[WA_FENCE] = c->fargv[AA_FENCE];
	c->u.acq.wargvlen[WA_FENCE] = c->fargvlen[AA_FENCE];
	fanout(c, SCR_ACQUIRE, acquire_reply);
	return c;
}

const struct rl_grant *rl_grant_of(const struct rl_call *c) { return &c->u.acq.grant; }

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
	size_t used = put_keys(c, RA_LOCK, key, klen, sfx_release, 2);
	char *tok = c->buf + used, *k = tok + TOKEN_LEN + 1;
	memcpy(tok, token, TOKEN_LEN + 1);
	memcpy(k, key, klen);
	k[klen] = '\0';
	c->rel_done = done;
	c->owner = owner;
	c->done_fired = 1;
	snprintf(c->leasebuf, sizeof(c->leasebuf), "%lld", (long long)wait_flag_ms);
	c->argc = RA_ARGC;
	put_arg(c, RA_NKEYS, "3");
	put_arg(c, RA_TOKEN, tok);
	put_arg(c, RA_CHANNEL, channel);
	put_arg(c, RA_KEY, k);
	put_arg(c, RA_FLAG_MS, c->leasebuf);
	put_arg(c, RA_INSTANCE, instance);
	put_arg(c, RA_RESERVE_MS, reserve_ms);
	stats.releases++;
	fanout(c, SCR_RELEASE, release_reply);
	return c;
}

enum rl_result rl_result_of(const struct rl_call *c) { return c->rel_result; }

static void release_everywhere(const struct rl_call *c)
{
	size_t klen = c->fargvlen[AA_LOCK] - prefix_len;
	rl_release(c->buf + prefix_len, klen, c->fargv[AA_TOKEN], 0, NULL, NULL);
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
	if (r && r->type == REDIS_REPLY_ARRAY && (int)r->elements == c->u.batch.nitems) {
		c->st[i] = MR_YES;
		if (c->counts[i])
			for (int k = 0; k < c->u.batch.nitems; k++)
				if (r->element[k]->type == REDIS_REPLY_INTEGER &&
				    r->element[k]->integer > 0)
					c->u.batch.items[k].yes++;
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
	c->u.batch.items = items;
	c->u.batch.nitems = n;
	c->done = done;
	c->owner = owner;
	c->rel_fired = 1;
	c->lease_ms = lease_ms;
	for (int k = 0; k < n; k++)
		total += prefix_len + items[k].klen + 1 + TOKEN_LEN + 1;
	/* EVALSHA sha n key... lease token... */
	int argc = 3 + 2 * n + 1;
	c->u.batch.argv = malloc(sizeof(*c->u.batch.argv) * (size_t)argc);
	c->u.batch.argvlen = malloc(sizeof(*c->u.batch.argvlen) * (size_t)argc);
	c->u.batch.buf = malloc(total + 32);
	if (!c->u.batch.argv || !c->u.batch.argvlen || !c->u.batch.buf) {
		c->u.batch.items = NULL;
		call_free(c);
		return NULL;
	}
	char *numk = c->u.batch.buf + total;
	snprintf(numk, 16, "%d", n);
	snprintf(c->leasebuf, sizeof(c->leasebuf), "%lld", (long long)lease_ms);
	c->u.batch.argv[0] = c->u.batch.argv[1] = "";
	c->u.batch.argvlen[0] = c->u.batch.argvlen[1] = 0;
	c->u.batch.argv[2] = numk;
	c->u.batch.argvlen[2] = strlen(numk);
	c->u.batch.argv[3 + n] = c->leasebuf;
	c->u.batch.argvlen[3 + n] = strlen(c->leasebuf);
	char *p = c->u.batch.buf;
	for (int k = 0; k < n; k++) {
		items[k].yes = 0;
		memcpy(p, prefix, prefix_len);
		memcpy(p + prefix_len, items[k].key, items[k].klen);
		c->u.batch.argv[3 + k] = p;
		c->u.batch.argvlen[3 + k] = prefix_len + items[k].klen;
		p += prefix_len + items[k].klen + 1;
		/* The token is copied: a resend after NOSCRIPT must carry the
		 * token of this call, whatever the key's entry holds by then. */
		memcpy(p, items[k].token, TOKEN_LEN);
		c->u.batch.argv[4 + n + k] = p;
		c->u.batch.argvlen[4 + n + k] = TOKEN_LEN;
		p += TOKEN_LEN + 1;
	}
	c->in_fanout = 1;
	for (int i = 0; i < c->n; i++) {
		if (master_call(master_get(i), SCR_RENEW, argc, c->u.batch.argv, c->u.batch.argvlen, renew_reply,
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
	*n = c->u.batch.nitems;
	return c->u.batch.items;
}

int64_t rl_start_us(const struct rl_call *c) { return c->start_us; }

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
	c->u.batch.argv = malloc(sizeof(*c->u.batch.argv) * (size_t)argc);
	c->u.batch.argvlen = malloc(sizeof(*c->u.batch.argvlen) * (size_t)argc);
	c->u.batch.buf = malloc(total);
	if (!c->u.batch.argv || !c->u.batch.argvlen || !c->u.batch.buf) {
		call_free(c);
		return NULL;
	}
	c->done = done;
	c->owner = owner;
	c->rel_fired = 1;
	char *p = c->u.batch.buf;
	int a = 0;
	c->u.batch.argv[a] = c->u.batch.argv[a + 1] = "";
	c->u.batch.argvlen[a] = c->u.batch.argvlen[a + 1] = 0;
	a += 2;
	c->u.batch.argv[a] = p;
	c->u.batch.argvlen[a++] = (size_t)sprintf(p, "%d", 3 * n);
	p += c->u.batch.argvlen[a - 1] + 1;
	for (int s = 0; s < 3; s++) {
		size_t sl = strlen(sfx[s]);
		for (int k = 0; k < n; k++) {
			memcpy(p, prefix, prefix_len);
			memcpy(p + prefix_len, items[k].key, items[k].klen);
			memcpy(p + prefix_len + items[k].klen, sfx[s], sl);
			c->u.batch.argv[a] = p;
			c->u.batch.argvlen[a++] = prefix_len + items[k].klen + sl;
			p += prefix_len + items[k].klen + sl;
		}
	}
	c->u.batch.argv[a] = channel;
	c->u.batch.argvlen[a++] = strlen(channel);
	c->u.batch.argv[a] = instance;
	c->u.batch.argvlen[a++] = strlen(instance);
	c->u.batch.argv[a] = reserve_ms;
	c->u.batch.argvlen[a++] = strlen(reserve_ms);
	/* Copies: a master may resend (NOSCRIPT) after the verdict. */
	for (int k = 0; k < n; k++) {
		memcpy(p, items[k].token, TOKEN_LEN);
		c->u.batch.argv[a] = p;
		c->u.batch.argvlen[a++] = TOKEN_LEN;
		p += TOKEN_LEN + 1;
	}
	for (int k = 0; k < n; k++) {
		memcpy(p, items[k].key, items[k].klen);
		c->u.batch.argv[a] = p;
		c->u.batch.argvlen[a++] = items[k].klen;
		p += items[k].klen + 1;
	}
	stats.releases += (uint64_t)n;
	c->argc = argc;
	c->in_fanout = 1;
	for (int i = 0; i < c->n; i++) {
		if (master_call(master_get(i), SCR_RELEASE_MANY, argc, c->u.batch.argv, c->u.batch.argvlen,
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
		c->u.status.pttl[m->idx] = r->integer;
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
	put_keys(c, PA_KEY, key, klen, NULL, 0);
	c->done = done;
	c->owner = owner;
	c->rel_fired = 1;
	c->argc = PA_ARGC;
	put_arg(c, PA_CMD, "PTTL");
	fanout(c, -1, status_reply);
	return c;
}

void rl_status_of(const struct rl_call *c, int *held, int64_t *ttl_ms)
{
	*held = c->u.status.ok ? c->u.status.held : -1;
	*ttl_ms = c->u.status.ttl;
}

const char *rl_key_of(const struct rl_call *c, size_t *klen)
{
	*klen = c->fargvlen[c->kind == RK_STATUS ? PA_KEY : c->kind == RK_ACQUIRE ? AA_LOCK : RA_LOCK] -
		prefix_len;
	return c->buf + prefix_len;
}

void rl_detach(struct rl_call *c, void *owner)
{
	if (c && c->owner == owner)
		c->owner = NULL;
}
