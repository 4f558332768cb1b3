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

#include "cluster.h"
#include "log.h"
#include "master.h"
#include "memtrim.h"
#include "membership.h"
#include "quorum.h"
#include "redlock.h"
#include "redlock_int.h"
#include "scripts.h"
#include "slab.h"
#include "stats.h"

static struct event *defer_ev;
static struct rl_call *defer_head;
char rl_channel[128];
char rl_elected[128];
char rl_gen_key[160];  /* "P gen INSTANCE": master_epoch's key (scripts.c) */
char rl_name_key[160]; /* "P name INSTANCE": this lockd's name, for WHO (1.4) */
double rl_drift;
char rl_fence_idle[24]; /* locks.fence_idle_ms, as the scripts take it */
/* A master that stops answering is dropped after timeout_ms (master.c);
 * one that answers, but slowly (a burst queued on it), may take this much
 * longer before a call gives up on it: the protocol's bound on any reply
 * is timeout_ms + 500 ms, and giving up sooner under load only turns
 * healthy masters into QUORUM errors and retries that add to the load. */
#define CALL_GRACE_MS 450
static int64_t timeout_us;       /* a call's verdict never waits longer than this */
char rl_instance[TOKEN_LEN + 1]; /* this lockd process: tokens, waiting flag */
char rl_reserve_ms[24];
static char prefix_len_s[12]; /* rl_prefix_len in decimal (RA_PREFIX_LEN) */
int rl_adopts;

int rl_adopting(void)
{
	return rl_adopts > 0;
} /* how long a release is kept for a waiter elsewhere */
/* Undecided calls in order of wait_us: all share timeout_us, so the first
 * is always the next to expire, and one timer serves them all (a call
 * whose wait_us moves goes to the back: rl_call_progress). */
static struct ilist expq;
static struct event *exp_timer;

/* Calls for keys of ordinary length come from a slab (slab.h): no malloc
 * per request on the hot path, and the calls of a burst (ten thousand
 * sessions asking at once) leave no holes between the locks granted
 * meanwhile: their blocks go back as they empty. */
#define POOL_EXTRA 2048 /* buf bytes of a slab call: keys up to ~300 bytes */
static struct slab call_slab;

static void defer_cb(evutil_socket_t fd, short what, void *arg);
static void expire_cb(evutil_socket_t fd, short what, void *arg);

/* A burst of calls (ten thousand sessions asking at once) leaves the
 * allocator holding buffers of hiredis and libevent it freed; once the
 * burst is over they are handed back (memtrim). */
#define BURST_CALLS 4096 /* calls in flight at once that make a burst */
static int burst_peak;   /* most calls in flight since the last trim */

void redlock_init(struct event_base *base, const char *p, double drift_factor, int64_t timeout_ms,
                  int64_t fence_idle_ms)
{
	if (!defer_ev) {
		defer_ev = event_new(base, -1, 0, defer_cb, NULL);
		exp_timer = evtimer_new(base, expire_cb, NULL);
		ilist_init(&expq);
	}
	timeout_us = (timeout_ms + CALL_GRACE_MS) * 1000;
	token_new(rl_instance);
	rl_instance[INSTANCE_LEN] = '\0';
	snprintf(rl_reserve_ms, sizeof(rl_reserve_ms), "%lld",
	         (long long)(timeout_ms * 2 > 100 ? timeout_ms * 2 : 100));
	rl_key_init(p);
	snprintf(prefix_len_s, sizeof(prefix_len_s), "%zu", rl_prefix_len);
	snprintf(rl_channel, sizeof(rl_channel), "%s released", p);
	snprintf(rl_elected, sizeof(rl_elected), "%s elected", p);
	snprintf(rl_gen_key, sizeof(rl_gen_key), "%s gen %s", p, rl_instance);
	rl_name_key_at(rl_name_key, sizeof(rl_name_key), rl_instance);
	redlock_set_opts(drift_factor, timeout_ms, fence_idle_ms);
}

void redlock_set_opts(double drift_factor, int64_t timeout_ms, int64_t fence_idle_ms)
{
	rl_drift = drift_factor;
	timeout_us = (timeout_ms + CALL_GRACE_MS) * 1000;
	snprintf(rl_fence_idle, sizeof(rl_fence_idle), "%lld", (long long)fence_idle_ms);
}

const char *rl_epoch_key(void)
{
	return rl_gen_key;
}

const char *rl_lockd_name_key(void)
{
	return rl_name_key;
}

const char *rl_instance_id(void)
{
	return rl_instance;
}

void rl_token_new(char *out)
{
	token_new(out);
	memcpy(out, rl_instance, INSTANCE_LEN);
	rl_token_set_permits(out, 0);
}

void redlock_shutdown(void)
{
	slab_destroy(&call_slab);
	if (defer_ev) {
		event_free(defer_ev);
		event_free(exp_timer);
	}
	defer_ev = exp_timer = NULL;
	burst_peak = 0;
}

static void arm_expiry(void)
{
	struct ilink *l = ilist_first(&expq);
	if (!l)
		return;
	int64_t d = ilist_entry(l, struct rl_call, exp_link)->wait_us + timeout_us - now_us();
	if (d < 0)
		d = 0;
	struct timeval tv = {(time_t)(d / 1000000), (suseconds_t)(d % 1000000)};
	event_add(exp_timer, &tv);
}

static int live_calls;

int rl_inflight(void)
{
	return live_calls;
}

struct rl_call *rl_call_new(enum rl_kind kind, size_t extra)
{
	struct rl_call *c;
	if (extra <= POOL_EXTRA) {
		if (!call_slab.size)
			slab_init(&call_slab, sizeof(*c) + POOL_EXTRA);
		if (!(c = slab_alloc(&call_slab)))
			return NULL;
		memset(c, 0, sizeof(*c)); /* buf is laid out by the caller */
	} else if (!(c = calloc(1, sizeof(*c) + extra))) {
		return NULL;
	}
	c->pooled = extra <= POOL_EXTRA;
	if (++live_calls > burst_peak)
		burst_peak = live_calls;
	c->kind = kind;
	rl_adopts += kind == RK_ADOPT; /* until rl_call_free: see rl_adopting */
	c->n = masters_count();
	c->maj = quorum_majority(c->n);
	c->start_us = c->wait_us = now_us();
	c->argv = c->fargv;
	c->argvlen = c->fargvlen;
	for (int i = 0; i < c->n; i++)
		c->counts[i] = (unsigned char)mb_counts(master_get(i));
	ilist_push(&expq, &c->exp_link);
	if (expq.len == 1)
		arm_expiry();
	return c;
}

void rl_call_progress(struct rl_call *c)
{
	if (!ilink_linked(&c->exp_link))
		return; /* decided or expired already */
	int first = ilist_first(&expq) == &c->exp_link;
	ilist_remove(&expq, &c->exp_link);
	c->wait_us = now_us();
	ilist_push(&expq, &c->exp_link);
	if (first)
		arm_expiry();
}

void rl_call_free(struct rl_call *c)
{
	if (--live_calls <= burst_peak / 16 && burst_peak >= BURST_CALLS) {
		burst_peak = 0;
		memtrim_soon();
	}
	ilist_remove(&expq, &c->exp_link);
	if (c->kind == RK_RENEW || c->kind == RK_RELEASE_MANY)
		free(c->u.batch.items);
	if (c->kind == RK_STATUS) {
		free(c->u.status.permit_yes);
		for (int i = 0; i < c->u.status.nmembers; i++)
			free(c->u.status.members[i]);
		free(c->u.status.members);
	}
	if (c->kind == RK_TOUCH)
		free(c->u.sess.items);
	if (c->kind == RK_ACQUIRE)
		free(c->u.acq.x);
	if (c->kind == RK_SESS && c->u.sess.rx) {
		for (int k = 0; k < c->u.sess.rx->nparts; k++) {
			free(c->u.sess.rx->p[k].v);
			free(c->u.sess.rx->p[k].l);
		}
		free(c->u.sess.rx->p);
		free(c->u.sess.rx);
	}
	if (c->kind == RK_ADOPT) {
		rl_adopts--;
		for (int i = 0; i < c->u.sess.a.n; i++)
			free(c->u.sess.a.holds[i].key);
		free(c->u.sess.a.holds);
		free(c->u.sess.seen);
		for (int i = 0; c->u.sess.am && i < c->n; i++) {
			struct adopt_m *am = &c->u.sess.am[i];
			for (int k = 0; k < am->npend; k++)
				free(am->pend[k]);
			free(am->pend);
			free(am->plen);
			free(am->mv);
			free(am->ml);
			free(am->slots);
		}
		free(c->u.sess.am);
	}
	if (c->kind == RK_WHO) {
		struct who_part *w = &c->u.who;
		free(w->seen);
		free(w->cargv);
		free(w->clen);
		free(w->cbuf);
		free(w->v.holds);
		for (int i = 0; w->names && i < w->ninst; i++)
			free(w->names[i]);
		free(w->names);
		free(w->insts);
		free(w->nargv);
		free(w->nlen);
		free(w->nbuf);
		free(w->targv);
		free(w->tlen);
		free(w->tbuf);
		free(w->tslots);
	}
	free(c->dargv);
	free(c->dargvlen);
	free(c->dbuf);
	if (c->pooled)
		slab_free(&call_slab, c);
	else
		free(c);
}

/* Counting masters in state s (of st[] or raise_st[]). */
int rl_count_st(const struct rl_call *c, const unsigned char *st, enum mr s)
{
	int k = 0;
	for (int i = 0; i < c->n; i++)
		k += c->counts[i] && st[i] == s;
	return k;
}

void rl_fire_done(struct rl_call *c)
{
	if (c->done_fired)
		return;
	c->done_fired = 1;
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

static void finish_acquire(struct rl_call *c, enum rl_result r)
{
	c->u.acq.grant.result = r;
	if (r == RL_OK) {
		int64_t until = quorum_valid_until(c->lease_ms, c->start_us, now_us(), rl_drift);
		if (until <= 0) {
			log_warn("grant for %.*s came too late (validity over): released",
			         (int)c->klen, c->keyp);
			c->u.acq.grant.result = r = RL_QUORUM;
		} else {
			c->u.acq.grant.validity_us = until;
		}
	}
	if (r != RL_OK) {
		rl_undo(c);
		stats.quorum_failures += r == RL_QUORUM;
	}
	rl_fire_done(c);
}

static void raise_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	if (c->expired) { /* the verdict was given without this master */
		c->pending--;
		rl_check(c);
		return;
	}
	c->pending--;
	c->u.acq.raise_st[m->idx] =
	    r && r->type == REDIS_REPLY_INTEGER && (uint64_t)r->integer >= c->u.acq.grant.fence
	        ? MR_YES
	        : MR_FAIL;
	rl_check(c);
}

/* SCR_RAISE of the granted fence to master i (raise_st[i] says how it went). */
static void send_raise(struct rl_call *c, int i)
{
	snprintf(c->u.acq.fencebuf, sizeof(c->u.acq.fencebuf), "%llu",
	         (unsigned long long)c->u.acq.grant.fence);
	c->u.acq.wargv[WA_VALUE] = c->u.acq.fencebuf;
	c->u.acq.wargvlen[WA_VALUE] = strlen(c->u.acq.fencebuf);
	c->u.acq.wargv[WA_IDLE] = rl_fence_idle;
	c->u.acq.wargvlen[WA_IDLE] = strlen(rl_fence_idle);
	c->u.acq.raise_st[i] = MR_FAIL;
	unsigned slot = masters_any_cluster() ? csl_keyslot(c->keyp, c->klen) : 0;
	if (master_call_at(master_get(i), &slot, 1, SCR_RAISE, WA_ARGC, c->u.acq.wargv,
	                   c->u.acq.wargvlen, raise_reply, c) == 0) {
		c->u.acq.raise_st[i] = MR_WAIT;
		c->pending++;
	}
}

/* Masters in state s of the write-back that make the fence the majority's:
 * counting ones whose counter holds it; for a resumable hold, only those
 * that granted, whose record holds it too (a second lockd adopting the
 * session takes the fence a majority of the records hold: rlsess.c). */
static int raised(const struct rl_call *c, enum mr s)
{
	int rec = c->fargvlen[AA_RECORD] != 0, k = 0;
	for (int i = 0; i < c->n; i++)
		k += c->counts[i] && c->u.acq.raise_st[i] == s && (!rec || c->st[i] == MR_YES);
	return k;
}

/* A master's grant came after the verdict, or after the write-back went
 * out: a resumable hold's record there holds that master's own counter.
 * Correct it (the record of a late master would otherwise tell a lockd
 * that adopts the session a fence other than the one granted). */
static void correct_late(struct rl_call *c, int i)
{
	if (!c->fargvlen[AA_RECORD] || c->st[i] != MR_YES || c->expired)
		return;
	/* done_fired: finish_acquire gave the verdict (grant.result) */
	if (c->done_fired && (c->u.acq.grant.result != RL_OK ||
	                      (uint64_t)c->u.acq.fence_of[i] == c->u.acq.grant.fence))
		return;
	if (!c->done_fired && c->u.acq.phase != AP_WRITEBACK)
		return; /* the verdict will see it */
	if (c->u.acq.raise_st[i] == MR_WAIT || c->u.acq.raise_st[i] == MR_YES)
		return;
	send_raise(c, i);
}

/* AP_WRITEBACK: store the fence on enough masters that a majority holds it. */
static void start_writeback(struct rl_call *c)
{
	c->u.acq.phase = AP_WRITEBACK;
	if (c->expired)
		return; /* no time left for a second round: check_acquire fails it */
	c->in_fanout = 1;
	for (int i = 0; i < c->n; i++) {
		if (c->st[i] == MR_YES && (uint64_t)c->u.acq.fence_of[i] == c->u.acq.grant.fence) {
			c->u.acq.raise_st[i] = MR_YES; /* already holds it */
			continue;
		}
		c->u.acq.raise_st[i] = MR_FAIL;
		/* a resumable hold's record is corrected where it was written */
		if (!c->counts[i] && !(c->fargvlen[AA_RECORD] && c->st[i] == MR_YES))
			continue;
		send_raise(c, i);
	}
	c->in_fanout = 0;
	stats.fence_writebacks++;
}

static void check_acquire(struct rl_call *c)
{
	int yes = rl_count_st(c, c->st, MR_YES), busy = rl_count_st(c, c->st, MR_BUSY);
	int wait = rl_count_st(c, c->st, MR_WAIT);
	enum quorum_state v;

	/* The release side of a handoff: every answer from a counting master
	 * means our old token is gone there. */
	if (c->rel_done && !c->rel_fired) {
		v = quorum_verdict(yes + busy, 0, wait, c->maj);
		if (v == Q_WON)
			fire_rel(c, RL_OK);
		else if (v == Q_LOST)
			fire_rel(c, RL_QUORUM);
	}
	if (c->done_fired)
		return;
	if (c->u.acq.phase == AP_SET) {
		switch (quorum_verdict(yes, busy, wait, c->maj)) {
		case Q_PENDING:
			return;
		case Q_BUSY:
			finish_acquire(c, RL_BUSY);
			return;
		case Q_LOST:
			finish_acquire(c, RL_QUORUM);
			return;
		case Q_WON:
			break;
		}
		int64_t ctr[CONFIG_MAX_MASTERS];
		int k = 0, wb;
		for (int i = 0; i < c->n; i++)
			if (c->counts[i] && c->st[i] == MR_YES)
				ctr[k++] = c->u.acq.fence_of[i];
		c->u.acq.grant.fence = (uint64_t)quorum_fence(ctr, k, c->maj, &wb);
		/* A resumable hold's record must hold the granted fence on every
		 * master that wrote it (its own counter, maybe another). */
		for (int i = 0; c->fargvlen[AA_RECORD] && i < c->n; i++)
			wb |= c->st[i] == MR_YES &&
			      (uint64_t)c->u.acq.fence_of[i] != c->u.acq.grant.fence;
		if (!wb) {
			finish_acquire(c, RL_OK);
			return;
		}
		start_writeback(c);
	}
	/* AP_WRITEBACK */
	v = quorum_verdict(raised(c, MR_YES), 0, raised(c, MR_WAIT), c->maj);
	if (v == Q_WON)
		finish_acquire(c, RL_OK);
	else if (v == Q_LOST)
		finish_acquire(c, RL_QUORUM);
}

static void check_release(struct rl_call *c)
{
	enum quorum_state v = quorum_verdict(rl_count_st(c, c->st, MR_YES), 0,
	                                     rl_count_st(c, c->st, MR_WAIT), c->maj);
	if (v == Q_WON)
		fire_rel(c, RL_OK);
	else if (v == Q_LOST)
		fire_rel(c, RL_QUORUM);
}

void rl_check(struct rl_call *c)
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
	default: /* rlbatch.c, rlsess.c */
		c->check_fn(c);
		break;
	}
	if (c->pending == 0) {
		/* Every master answered: settle any verdict still open. */
		if (c->kind == RK_ACQUIRE && !c->done_fired)
			finish_acquire(c, RL_QUORUM);
		c->done_fired = 1;
		fire_rel(c, RL_QUORUM);
		rl_call_free(c);
	}
}

/* timeout_us after a call started (an adoption: after its latest answer),
 * masters that have not answered count as no: no verdict waits longer
 * than that for a slow or stopped master, even one whose socket is full
 * so that the request was never written (master.c's own timeout counts
 * from the write). */
static void expire_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ilink *l;
	int64_t now = now_us();

	while ((l = ilist_first(&expq))) {
		struct rl_call *c = ilist_entry(l, struct rl_call, exp_link);
		if (c->wait_us + timeout_us > now)
			break;
		ilist_remove(&expq, l);
		c->expired = 1;
		for (int i = 0; i < c->n; i++) {
			if (c->st[i] == MR_WAIT)
				c->st[i] = MR_FAIL;
			/* only an acquire has a write-back round (u is a union) */
			if (c->kind == RK_ACQUIRE && c->u.acq.raise_st[i] == MR_WAIT)
				c->u.acq.raise_st[i] = MR_FAIL;
		}
		c->pending++; /* rl_check() may free it; we still hold it here */
		rl_check(c);
		c->pending--;
		if (c->pending == 0)
			rl_check(c);
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
		rl_check(c);
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

void rl_fanout(struct rl_call *c, int script, master_reply_fn *fn)
{
	unsigned one, *many;
	int nslots = rl_call_slots(c, &one, &many);
	const unsigned *slots = many ? many : &one;
	c->in_fanout = 1;
	for (int i = 0; i < c->n; i++) {
		if (c->skip_cl && master_get(i)->cl)
			continue; /* its own calls were sent (st says how) */
		if (master_call_at(master_get(i), slots, nslots, script, c->argc, c->argv,
		                   c->argvlen, fn, c) == 0) {
			c->st[i] = MR_WAIT;
			c->pending++;
		} else {
			c->st[i] = MR_FAIL;
		}
	}
	c->in_fanout = 0;
	free(many);
	after_fanout(c);
}

static void acquire_reply(struct master *m, redisReply *r, void *arg);

/* Master i granted a session's hold and both of its cluster entry's
 * extra writes answered (struct acq_x): the grant counts there only if
 * both said 1. */
static void x_granted(struct rl_call *c, int i)
{
	if (c->u.acq.x->fail[i]) {
		c->st[i] = MR_FAIL; /* released with the others if the call fails */
		return;
	}
	c->st[i] = MR_YES;
	correct_late(c, i);
}

static void x_reply(struct master *m, redisReply *r, void *arg, int put)
{
	struct rl_call *c = arg;
	struct acq_x *x = c->u.acq.x;
	int i = m->idx, ok = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
	c->pending--;
	if (!ok) {
		if (r && r->type == REDIS_REPLY_ERROR)
			log_warn("master %s: a session's record: %s", m->name, r->str);
		x->fail[i] = 1;
	}
	x->out[i]--;
	if (put)
		x->put_out[i] = 0;
	if (put && x->again[i]) { /* the ACQUIRE ran ahead of the PUT */
		x->again[i] = 0;
		x->retried[i] = 1;
		/* again only before the verdict: after one that failed, the
		 * release (rl_undo) went ahead of it and would not undo it */
		if (ok && !c->expired && !c->done_fired &&
		    master_call_at(m, &x->lock_slot, 1, SCR_ACQUIRE, c->argc, c->argv, c->argvlen,
		                   acquire_reply, c) == 0)
			c->pending++;
		else
			c->st[i] = MR_FAIL;
	}
	if (x->out[i] == 0 && x->granted[i] && !c->expired)
		x_granted(c, i);
	rl_check(c);
}

static void x_put_reply(struct master *m, redisReply *r, void *arg)
{
	x_reply(m, r, arg, 1);
}

static void x_index_reply(struct master *m, redisReply *r, void *arg)
{
	x_reply(m, r, arg, 0);
}

static void acquire_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	if (c->expired) { /* the verdict was given without this master */
		c->pending--;
		rl_check(c);
		return;
	}
	int i = m->idx;

	c->pending--;
	if (r && r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
	    r->element[0]->type == REDIS_REPLY_INTEGER &&
	    r->element[1]->type == REDIS_REPLY_INTEGER) {
		if (r->element[0]->integer > 0) {
			c->u.acq.fence_of[i] = r->element[0]->integer;
			if (r->elements > 2 && r->element[2]->type == REDIS_REPLY_INTEGER &&
			    r->element[2]->integer > 0)
				c->u.acq.grant.remote_waiters = 1;
			struct acq_x *x = c->u.acq.x;
			if (x && x->sent[i]) {
				x->granted[i] = 1;
				if (x->out[i] == 0)
					x_granted(c, i);
			} else {
				c->st[i] = MR_YES;
				correct_late(c, i);
			}
		} else if (r->element[1]->integer == -3 && c->u.acq.x && c->u.acq.x->put_out[i] &&
		           !c->u.acq.x->retried[i]) {
			c->u.acq.x->again[i] = 1; /* ahead of its record's SESS_PUT: x_reply */
		} else if (r->element[1]->integer == -3) {
			c->st[i] = MR_FAIL; /* the session's record names another lockd (1.2) */
		} else {
			c->st[i] = MR_BUSY;
			if (r->element[1]->integer > c->u.acq.grant.pttl_ms)
				c->u.acq.grant.pttl_ms = r->element[1]->integer;
			if (r->elements > 3 && r->element[3]->type == REDIS_REPLY_INTEGER &&
			    r->element[3]->integer > 0)
				c->u.acq.grant.xwaiting = 1;
			if (r->elements > 4 && r->element[4]->type == REDIS_REPLY_INTEGER &&
			    r->element[4]->integer > 0 && c->counts[i])
				c->u.acq.grant.delayed = 1;
		}
	} else {
		if (r && r->type == REDIS_REPLY_ERROR)
			log_warn("master %s: acquire: %s", m->name, r->str);
		c->st[i] = MR_FAIL;
	}
	rl_check(c);
}

/* Lay out in c->buf the key of a call about one hold, "prefix key", at
 * argv[at] (the scripts name its lock, counter and flags after it), and
 * the permit (AA_PERMIT, RA_PERMIT: "" or its number) at argv[pat].
 * Returns the bytes used. */
static size_t put_key(struct rl_call *c, int at, int pat, const char *key, size_t klen)
{
	size_t used = rl_key_at(c->buf, key, klen, "");
	c->fargv[at] = c->buf;
	c->fargvlen[at] = used++;
	c->keyp = c->buf + rl_prefix_len;
	c->klen = klen;
	char *p = c->buf + used;
	int n = c->hold == RH_SHARED || c->permit == 0 ? 0 : sprintf(p, "%u", c->permit);
	p[n] = '\0';
	c->fargv[pat] = p;
	c->fargvlen[pat] = (size_t)n;
	return used + (size_t)n + 1;
}
#define PERMIT_MAX 11 /* a uint32_t in decimal, and its NUL */

/* Put a string argument at position at. */
static void put_arg(struct rl_call *c, int at, const char *v)
{
	c->fargv[at] = v;
	c->fargvlen[at] = strlen(v);
}

/* The session record of a hold (KEYS at key_at, ARGV at arg_at) laid out
 * at p: the record's key and the hold's field (acquire: after its TTL
 * flag), or "" for both without one. Returns where the next bytes go. */
static char *put_rec(struct rl_call *c, char *p, int key_at, int arg_at, const struct rl_rec *rec,
                     int with_ttl)
{
	if (!rec || !rec->sid) {
		put_arg(c, key_at, "");
		put_arg(c, arg_at, "");
		return p;
	}
	c->fargv[key_at] = p;
	c->fargvlen[key_at] = rl_record_at(p, rec->sid);
	p += c->fargvlen[key_at] + 1;
	char *f = p;
	if (with_ttl)
		*p++ = rec->ttl ? '1' : '0';
	p += rl_field_at(p, rec->kind, c->permit, c->keyp, c->klen) + 1;
	c->fargv[arg_at] = f;
	c->fargvlen[arg_at] = strlen(f);
	return p;
}
#define REC_MAX(klen) (rl_prefix_len + 48 + (klen) + 16) /* a record key and a field */
_Static_assert(WA_VALUE - WA_FENCE == 2, "enum raise_arg: 2 keys");

static rl_sess_info_fn *sess_info;

void rl_set_sess_info(rl_sess_info_fn *fn)
{
	sess_info = fn;
}

static void x_arg(const char **v, size_t *l, int at, const char *s)
{
	v[at] = s;
	l[at] = strlen(s);
}

/* The extra writes of session sid's grant of key on a cluster entry, or
 * NULL: a lock in the home record's own slot (the record SESSION wrote
 * there is the one ACQUIRE checks), or *none_ok 0: not a resumable
 * session here, out of memory (the grant must then not count on a
 * cluster entry: rl_acquire). */
static struct acq_x *x_new(const char *key, size_t klen, const char *sid, int *none_ok)
{
	struct rl_sess_info in;
	unsigned ls = csl_keyslot(key, klen), hs = csl_keyslot(sid, strlen(sid));
	struct acq_x *x;
	*none_ok = ls == hs;
	if (*none_ok || !sess_info || sess_info(sid, &in) != 0 || !(x = calloc(1, sizeof(*x))))
		return NULL;
	x->lock_slot = ls;
	x->home_slot = hs;
	if (rl_prefix_len + strlen(sid) + 16 > sizeof(x->rec) ||
	    strlen(in.digest) >= sizeof(x->digest)) {
		free(x);
		return NULL;
	}
	rl_record_at(x->rec, sid);
	snprintf(x->digest, sizeof(x->digest), "%s", in.digest);
	snprintf(x->grace, sizeof(x->grace), "%lld", (long long)in.grace_ms);
	snprintf(x->expire, sizeof(x->expire), "%lld", (long long)in.expire_ms);
	snprintf(x->count, sizeof(x->count), "%lld", in.count);
	snprintf(x->slot, sizeof(x->slot), "%u", ls);
	/* SESS_PUT record instance secret grace expiry "a" count */
	x_arg(x->pv, x->pl, SA_NKEYS, "1");
	x_arg(x->pv, x->pl, SA_KEYS, x->rec);
	const char *pa[] = {rl_instance, x->digest, x->grace, x->expire, "a", x->count};
	for (int k = 0; k < 6; k++)
		x_arg(x->pv, x->pl, SA_KEYS + 1 + k, pa[k]);
	/* SESS_INDEX record instance slot */
	x_arg(x->iv, x->il, SA_NKEYS, "1");
	x_arg(x->iv, x->il, SA_KEYS, x->rec);
	x_arg(x->iv, x->il, SA_KEYS + 1, rl_instance);
	x_arg(x->iv, x->il, SA_KEYS + 2, x->slot);
	return x;
}

/* Send script (SCR_SESS_PUT in the lock's slot, SCR_SESS_INDEX in the
 * home slot) to every cluster entry; one that cannot take it will not
 * count the grant. */
static void x_send(struct rl_call *c, struct acq_x *x, int script)
{
	int put = script == SCR_SESS_PUT;
	for (int i = 0; i < c->n; i++) {
		struct master *m = master_get(i);
		if (!m->cl)
			continue;
		x->sent[i] = 1;
		if (master_call_at(m, put ? &x->lock_slot : &x->home_slot, 1, script,
		                   put ? SA_KEYS + 7 : SA_KEYS + 3, put ? x->pv : x->iv,
		                   put ? x->pl : x->il, put ? x_put_reply : x_index_reply,
		                   c) == 0) {
			x->out[i]++;
			x->put_out[i] |= (unsigned char)put;
			c->pending++;
		} else {
			x->fail[i] = 1;
		}
	}
}

struct rl_call *rl_acquire(const char *key, size_t klen, enum rl_hold hold, uint32_t permit,
                           const char *token, int64_t lease_ms, uint32_t delay_ms,
                           const char *old_token, enum rl_wait will_wait, const struct rl_rec *rec,
                           rl_done_fn *done, rl_done_fn *release_done, void *owner)
{
	struct rl_call *c =
	    rl_call_new(RK_ACQUIRE, 2 * (rl_prefix_len + klen + SFX_MAX) + PERMIT_MAX +
	                                2 * (TOKEN_LEN + 1) + REC_MAX(klen));
	if (!c)
		return NULL;
	c->hold = hold;
	c->permit = permit;
	size_t used = put_key(c, AA_KEY, AA_PERMIT, key, klen);
	char *fence = c->buf + used; /* for the write-back only: ACQUIRE names it itself */
	size_t flen = rl_key_at(fence, key, klen, " fence");
	used += flen + 1;
	char *tok = c->buf + used, *old = tok + TOKEN_LEN + 1;
	memcpy(tok, token, TOKEN_LEN + 1);
	if (old_token)
		memcpy(old, old_token, TOKEN_LEN + 1);
	else
		old[0] = '\0';
	put_rec(c, old + TOKEN_LEN + 1, AA_SESSION, AA_RECORD, rec, 1);
	put_arg(c, AA_GEN, rl_gen_key);
	put_arg(c, AA_EPOCH, master_epoch()); /* read when written: see master_epoch */
	c->u.acq.phase = AP_SET;
	c->u.acq.grant.pttl_ms = -1;
	c->u.acq.grant.start_us = c->start_us;
	c->lease_ms = lease_ms;
	c->done = done;
	c->rel_done = release_done;
	c->rel_fired = release_done == NULL;
	c->owner = owner;
	snprintf(c->leasebuf, sizeof(c->leasebuf), "%lld", (long long)lease_ms);
	c->argc = AA_ARGC;
	put_arg(c, AA_NKEYS, "3"); /* the shared AA_GEN and the call's own 2 */
	put_arg(c, AA_TOKEN, tok);
	put_arg(c, AA_LEASE, c->leasebuf);
	put_arg(c, AA_OLD, old);
	put_arg(c, AA_WAIT, will_wait == RW_RAISED ? "2" : will_wait == RW_YES ? "1" : "0");
	put_arg(c, AA_INSTANCE, rl_instance);
	put_arg(c, AA_IDLE, rl_fence_idle);
	put_arg(c, AA_KIND, rl_kind_arg(hold, permit));
	snprintf(c->delaybuf, sizeof(c->delaybuf), "%u", hold == RH_SHARED ? 0 : delay_ms);
	if (delay_ms && hold != RH_SHARED)
		mb_note_delay(delay_ms); /* before any master can keep it: the restart exclusion */
	put_arg(c, AA_DELAY, c->delaybuf);
	/* the write-back, if the granting masters' fences disagree */
	c->u.acq.wargv[WA_NKEYS] = "2";
	c->u.acq.wargvlen[WA_NKEYS] = 1;
	c->u.acq.wargv[WA_FENCE] = fence;
	c->u.acq.wargvlen[WA_FENCE] = flen;
	c->u.acq.wargv[WA_SESSION] = c->fargv[AA_SESSION];
	c->u.acq.wargvlen[WA_SESSION] = c->fargvlen[AA_SESSION];
	c->u.acq.wargv[WA_FIELD] = c->fargvlen[AA_RECORD] ? c->fargv[AA_RECORD] + 1 : "";
	c->u.acq.wargvlen[WA_FIELD] = c->fargvlen[AA_RECORD] ? c->fargvlen[AA_RECORD] - 1 : 0;
	c->u.acq.wargv[WA_TOKEN] = c->fargv[AA_TOKEN];
	c->u.acq.wargvlen[WA_TOKEN] = c->fargvlen[AA_TOKEN];
	int none_ok = 1;
	struct acq_x *x =
	    rec && rec->sid && masters_any_cluster() ? x_new(key, klen, rec->sid, &none_ok) : NULL;
	c->u.acq.x = x;
	if (x)
		x_send(c, x, SCR_SESS_PUT); /* ahead of the ACQUIRE on the same node */
	if (!x && !none_ok) /* no record of the session's in the lock's slot: no count there */
		for (int i = 0; i < c->n; i++)
			if (master_get(i)->cl) {
				c->st[i] = MR_FAIL;
				c->skip_cl = 1;
			}
	rl_fanout(c, SCR_ACQUIRE, acquire_reply);
	if (x)
		x_send(c, x, SCR_SESS_INDEX);
	return c;
}

const struct rl_grant *rl_grant_of(const struct rl_call *c)
{
	return &c->u.acq.grant;
}

static void release_reply(struct master *m, redisReply *r, void *arg)
{
	struct rl_call *c = arg;
	if (c->expired) { /* the verdict was given without this master */
		c->pending--;
		rl_check(c);
		return;
	}
	c->pending--;
	c->st[m->idx] = r && r->type == REDIS_REPLY_INTEGER ? MR_YES : MR_FAIL;
	rl_check(c);
}

struct rl_call *rl_release(const char *key, size_t klen, enum rl_hold hold, uint32_t permit,
                           const char *token, const struct rl_rec *rec, int64_t wait_flag_ms,
                           rl_done_fn *done, void *owner)
{
	struct rl_call *c = rl_call_new(RK_RELEASE, rl_prefix_len + klen + 1 + PERMIT_MAX +
	                                                TOKEN_LEN + 1 + REC_MAX(klen));
	if (!c)
		return NULL;
	c->hold = hold;
	c->permit = permit;
	size_t used = put_key(c, RA_KEY, RA_PERMIT, key, klen);
	char *tok = c->buf + used;
	memcpy(tok, token, TOKEN_LEN + 1);
	put_rec(c, tok + TOKEN_LEN + 1, RA_SESSION, RA_RECORD, rec, 0);
	c->rel_done = done;
	c->owner = owner;
	c->done_fired = 1;
	snprintf(c->leasebuf, sizeof(c->leasebuf), "%lld", (long long)wait_flag_ms);
	c->argc = RA_ARGC;
	put_arg(c, RA_NKEYS, "2");
	put_arg(c, RA_TOKEN, tok);
	put_arg(c, RA_CHANNEL, rl_channel);
	put_arg(c, RA_PREFIX_LEN, prefix_len_s);
	put_arg(c, RA_FLAG_MS, c->leasebuf);
	put_arg(c, RA_INSTANCE, rl_instance);
	put_arg(c, RA_RESERVE_MS, rl_reserve_ms);
	put_arg(c, RA_KIND, rl_kind_arg(hold, permit));
	stats.releases++;
	rl_fanout(c, SCR_RELEASE, release_reply);
	return c;
}

enum rl_result rl_result_of(const struct rl_call *c)
{
	return c->rel_result;
}

void rl_undo(const struct rl_call *c)
{
	struct rl_rec rec = {NULL, 0, 0};
	char sid[32];
	if (c->fargvlen[AA_SESSION]) { /* "prefix session ID": drop the field it wrote */
		const char *id = strrchr(c->fargv[AA_SESSION], ' ') + 1;
		snprintf(sid, sizeof(sid), "%s", id);
		rec.sid = sid;
		rec.kind = c->fargv[AA_RECORD][1];
	}
	rl_release(c->keyp, c->klen, c->hold, c->permit, c->fargv[AA_TOKEN], &rec, 0, NULL, NULL);
}

const char *rl_key_of(const struct rl_call *c, size_t *klen)
{
	*klen = c->klen;
	return c->keyp;
}

void rl_detach(struct rl_call *c, void *owner)
{
	if (c && c->owner == owner)
		c->owner = NULL;
}
