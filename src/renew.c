/* renew: a hold's life after its grant.
 *
 * A hold moves through the states of enum hold_state (locktab_int.h) only
 * by rn_hold_state, which puts it on the lists of its new state and takes
 * it off the others: the key's holds (or ended ones), its session's
 * locks, the watch list (every lease without TTL), the due list (those a
 * renewal batch takes next) and the deadline heap.
 *
 * Each hold's end of validity is in one deadline heap, served by one
 * timer: when it comes, locktab sends LOST (rn_ops.lost). Every write
 * that may shorten a lease on some master (EXTEND, a renewal after a
 * reload lowered locks.lease_ms) shortens the validity when it is sent,
 * whatever its verdict (rn_lease_written), and a verdict that comes after
 * the validity ended is a loss whatever it says.
 *
 * One watchdog renews every lease without TTL in batches (one script per
 * master per batch, any mix of kinds), a few batches at a time, so that a
 * renewal wave never queues the sessions' own requests behind it on the
 * masters. The holds of a session that ended are released the same way
 * (doc/design.md, "Bulk pacing"). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cfg.h"
#include "locktab.h"
#include "log.h"
#include "memtrim.h"
#include "proto.h"
#include "quorum.h"
#include "renew.h"
#include "stats.h"

/* Bulk work (renewals, the releases of sessions that ended) goes out in
 * batches of this many holds (one script per master, about a millisecond
 * of a master's time), this many batches at a time: the sessions' own
 * requests wait behind at most that much on each master. */
#define RENEW_BATCH    256
#define RENEW_INFLIGHT 2
/* ... unless renewals fall behind (a grant burst of a million locks keeps
 * the masters busy): once the oldest due lease has less than half of it
 * left, holders come before newcomers and more batches go at once. */
#define RENEW_INFLIGHT_BEHIND 16
#define RELEASE_BATCH         256
#define RELEASE_INFLIGHT      2

static void (*lead_rewritten)(void);                /* rn_on_lead_rewritten */
static void (*sess_rewritten)(struct lt_client *c); /* rn_on_sess_rewritten */

static struct event_base *base;
static const struct config *cfg;
static const struct rn_ops *ops;

static struct ilist watch; /* holds without TTL (HS_WATCHED .. HS_RETRY) */
static struct ilist due;   /* of those, the ones the next renewal batch takes (HS_DUE) */
static struct event *wd_timer;
static int64_t wd_next_us; /* when wd_timer fires */
static int wd_batches;     /* renewal batches in flight */

/* Every hold's end of validity, and the one timer for the earliest. It
 * is moved only earlier; when it fires for a deadline since moved later
 * or ended, it finds the next one and sleeps again. */
static struct dheap deadlines;
static struct event *dl_timer;
static int64_t dl_at; /* when dl_timer fires; 0: not armed */

/* A release nobody waits for (its session ended), until its batch goes out. */
struct relq {
	struct relq *next;
	size_t klen;
	enum rl_hold hold;
	uint32_t permit;
	char rkind;   /* with sid: the record's kind of the hold */
	char sid[24]; /* a resumable session's id (its record), or "" */
	char token[TOKEN_LEN + 1];
	char key[];
};
static struct relq *relq_head, **relq_tail = &relq_head;
static int rel_batches;      /* release batches in flight */
static int rel_all;          /* shutdown: send every queued release at once */
static struct event *rel_ev; /* sends queued releases from the loop */

static void wd_arm_at(int64_t at_us);
static void wd_pump(void);

void rn_timer_at(struct event *ev, int64_t at_us)
{
	int64_t d = at_us - now_us();
	if (d < 0)
		d = 0;
	struct timeval tv = {(time_t)(d / 1000000), (suseconds_t)(d % 1000000)};
	event_add(ev, &tv);
}

/* --- states --- */

/* The moves of enum hold_state: from each state, the states it may go to. */
#define S(x) (1u << (x))
static const unsigned hold_moves[] = {
    [HS_NONE] = S(HS_TTL) | S(HS_WATCHED),
    [HS_TTL] = S(HS_ENDED),
    [HS_WATCHED] = S(HS_DUE) | S(HS_ENDED),
    [HS_DUE] = S(HS_RENEWING) | S(HS_ENDED),
    [HS_RENEWING] = S(HS_WATCHED) | S(HS_RETRY) | S(HS_ENDED),
    [HS_RETRY] = S(HS_DUE) | S(HS_ENDED),
    [HS_ENDED] = 0,
};
#undef S

/* A grant: on the key's holds and its session's locks; a lease without
 * TTL on the watch list, with the watchdog's timer early enough for it
 * (a reload may have raised locks.lease_ms during its call). */
static void hold_enter(struct hold *h, enum hold_state to)
{
	struct lkey *lk = h->lk;
	ilist_push(&lk->holds, &h->key_link);
	ilist_push(&h->holder->locks, &h->hold_link);
	h->holder->nlocks++;
	if (h->kind == HK_SHARED)
		lk->nshared++;
	else if (h->permit == 0)
		lk->nlock++;
	stats.locks_held++;
	if (to == HS_WATCHED) {
		ilist_push(&watch, &h->wd_link);
		int64_t at = h->renewed_us + h->lease_ms * 1000 / 3;
		if (at < wd_next_us)
			wd_arm_at(at);
	}
}

/* Its holder lets go: off every list of a held hold, onto lk->ended. */
static void hold_leave(struct hold *h)
{
	struct lkey *lk = h->lk;
	ilist_remove(&h->holder->locks, &h->hold_link);
	h->holder->nlocks--;
	ilist_remove(&lk->holds, &h->key_link);
	ilist_push(&lk->ended, &h->key_link);
	if (h->kind == HK_SHARED)
		lk->nshared--;
	else if (h->permit == 0)
		lk->nlock--;
	ilist_remove(&watch, &h->wd_link);
	ilist_remove(&due, &h->due_link);
	dh_remove(&deadlines, &h->dl);
	h->holder = NULL;
	h->holds = 0;
	stats.locks_held--;
}

void rn_hold_state(struct hold *h, enum hold_state to)
{
	enum hold_state from = h->state;
	if (!(hold_moves[from] & (1u << to))) {
		log_error("lock %s: hold state %d -> %d is not a move of enum hold_state",
		          h->lk->key, (int)from, (int)to);
		abort(); /* an invariant broke: stop before a lock is granted twice */
	}
	h->state = to;
	if (from == HS_NONE)
		hold_enter(h, to);
	else if (to == HS_ENDED)
		hold_leave(h);
	else if (to == HS_DUE)
		ilist_push(&due, &h->due_link);
	else if (from == HS_DUE)
		ilist_remove(&due, &h->due_link);
}

/* --- deadlines --- */

static void dl_arm(void)
{
	struct dh_node *t = dh_top(&deadlines);
	if (!t || (dl_at && dl_at <= t->at))
		return;
	rn_timer_at(dl_timer, t->at);
	dl_at = t->at;
}

void rn_deadline(struct hold *h, int64_t at)
{
	if (h->state == HS_ENDED) /* it would outlive the hold in the heap */
		return;
	if (dh_set(&deadlines, &h->dl, at) != 0)
		abort(); /* the heap's array could not grow: like any allocation here */
	dl_arm();
}

/* A deadline this far past is late: lockd was stopped or stalled. */
#define LATE_US 100000

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dh_node *t;
	int64_t now = now_us();
	dl_at = 0;
	while ((t = dh_top(&deadlines)) && t->at <= now) {
		struct hold *h = ilist_entry(t, struct hold, dl);
		if (h->holder->sid && !h->verifying && now - t->at > LATE_US) {
			h->verifying = 1; /* rn_ops.late; LOST at the next deadline */
			dh_set(&deadlines, t, now + (cfg->timeout_ms + 500) * 1000);
			ops->late(h);
			continue;
		}
		dh_remove(&deadlines, t);
		ops->lost(h);
	}
	dl_arm();
}

void rn_lease_written(struct hold *h, int64_t start, int64_t lease_ms)
{
	int64_t end = start + quorum_validity_us(lease_ms, 0, cfg->drift_factor);
	if (end < h->dl.at)
		rn_deadline(h, end);
	if (start + lease_ms * 1000 < h->lease_end_us)
		h->lease_end_us = start + lease_ms * 1000;
}

void rn_fill_item(struct rl_renew_item *it, struct hold *h)
{
	it->key = h->lk->key;
	it->klen = h->lk->node.klen;
	it->hold = rl_hold_of(h->kind);
	it->permit = h->permit;
	it->token = h->token;
	it->sid = h->holder ? h->holder->sid : NULL;
	it->owner = h;
	it->lead = h->lead;
	it->delay_ms = h->delay_ms;
}

/* --- EXTEND --- */

static void reply(struct lt_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(struct lt_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ops->reply(c, fmt, ap);
	va_end(ap);
}

/* The verdict of an EXTEND or a count write for h: the session that
 * waits for it, or NULL when the hold ended meanwhile (answered NOTHELD,
 * if anyone waits; h let go of, and maybe freed). */
static struct lt_client *verdict_for(struct hold *h)
{
	struct lt_client *s = h->ext_for;
	h->refs--;
	h->ext_for = NULL;
	if (s)
		s->verdict_h = NULL;
	if (s && h->holder == s)
		return s;
	if (s)
		reply(s, "ERR NOTHELD the lock was lost");
	ops->unref(h);
	return NULL;
}

static void extended(struct rl_call *c, void *owner)
{
	struct hold *h = owner;
	int n;
	struct rl_renew_item *it = rl_renew_items(c, &n);
	int64_t start = rl_start_us(c), lease = rl_lease_of(c);
	struct lt_client *s = verdict_for(h);

	if (!s)
		return;
	if (now_us() >= h->dl.at) {
		/* The validity ended before the verdict came: lost, whatever it
		 * says (lost frees what nothing uses any more). */
		dh_remove(&deadlines, &h->dl);
		ops->lost(h);
		reply(s, "ERR NOTHELD the lock was lost");
		return;
	}
	if (!it[0].ok) {
		/* rn_lease_written already cut the validity if this one may end sooner */
		stats.quorum_failures++;
		reply(s, "ERR QUORUM no majority of masters extended the lease");
		return;
	}
	h->lease_ms = lease;
	h->lease_end_us = start + lease * 1000;
	rn_deadline(h, it[0].validity_us);
	reply(s, "OK");
}

void rn_extend(struct lt_client *s, struct hold *h, uint32_t ms)
{
	struct rl_renew_item *it;

	if (h->state != HS_TTL) {
		reply(s, "ERR ARG EXTEND is for TTL locks; this lock is renewed by lockd");
		return;
	}
	if (quorum_validity_us(ms, 0, cfg->drift_factor) <= 0) {
		reply(s, "ERR ARG EXTEND is shorter than the clock drift margin (2 ms + "
		         "locks.drift_factor)");
		return;
	}
	if (!(it = calloc(1, sizeof(*it)))) {
		reply(s, "%s", MSG_OOM);
		return;
	}
	rn_fill_item(it, h);
	int64_t start = now_us();
	/* Owned by the hold, not the session: the verdict always comes back
	 * to drop the reference, even after the session left. */
	if (!rl_renew(it, 1, ms, extended, h)) {
		free(it);
		reply(s, "%s", MSG_OOM);
		return;
	}
	h->refs++;
	h->ext_for = s;
	s->verdict_h = h;
	rn_lease_written(h, start, ms);
}

/* --- hold counts of resumable sessions (1.2) --- */

static void counted(struct rl_call *c, void *owner)
{
	struct hold *h = owner;
	int delta = h->counting;
	struct lt_client *s;

	h->counting = 0;
	if (!(s = verdict_for(h)))
		return;
	if (rl_result_of(c) != RL_OK) { /* the count stays as the record may have it */
		h->holds -= (uint32_t)delta;
		stats.quorum_failures++;
		reply(s, "%s", MSG_NO_QUORUM);
	} else if (delta > 0) {
		reply(s, "OK %llu", (unsigned long long)h->fence);
	} else {
		reply(s, "OK %u", h->holds);
	}
}

void rn_count(struct lt_client *s, struct hold *h, int delta)
{
	struct rl_sess_hold one = {
	    h->lk->key, h->lk->node.klen, hold_rec_kind(h->kind),     h->permit,
	    h->token,   h->fence,         h->holds + (uint32_t)delta, h->state == HS_TTL};
	struct rl_call *c = rl_sess_put(s->sid, NULL, -1, 0, &one, 1, counted, h);
	if (!c) {
		reply(s, "%s", MSG_OOM);
		return;
	}
	h->holds += (uint32_t)delta;
	h->counting = (int8_t)delta;
	h->refs++;
	h->ext_for = s;
	s->verdict_h = h;
}

/* --- the watchdog --- */

static void renewed(struct rl_call *c, void *owner)
{
	int n, failed = 0;
	struct rl_renew_item *it = rl_renew_items(c, &n);
	int64_t start = rl_start_us(c), now = now_us();
	int64_t lease = rl_lease_of(c); /* what this call wrote, whatever cfg says now */
	int64_t next = wd_next_us;

	wd_batches--;
	for (int i = 0; i < n; i++) {
		struct hold *h = it[i].owner;
		if (it[i].lead && it[i].rewrote && lead_rewritten)
			lead_rewritten(); /* its value goes back beside it (PROTOCOL 1.3) */
		if (it[i].unrecorded && sess_rewritten && h->holder)
			sess_rewritten(h->holder); /* and the hold into its session's record */
		h->refs--;
		if (h->state == HS_RENEWING) {
			/* A verdict after the validity ended is a loss, whatever it
			 * says: the deadline timer, due already, sends LOST. */
			if (it[i].ok && now < h->dl.at) {
				rn_hold_state(h, HS_WATCHED);
				h->lease_ms = lease;
				h->lease_end_us = start + lease * 1000;
				h->renewed_us = start;
				rn_deadline(h, it[i].validity_us);
				stats.renewals++;
				if (start + lease * 1000 / 3 < next)
					next = start + lease * 1000 / 3;
			} else {
				rn_hold_state(h, HS_RETRY);
				stats.renewal_failures++;
				log_debug("renewal of %s failed: %d masters hold it for us",
				          h->lk->key, it[i].yes);
				failed = 1;
			}
		}
		ops->unref(h);
	}
	if (failed) {
		/* Try again soon, while the leases are still valid. */
		int64_t ms = cfg->timeout_ms * 2 < 100 ? 100 : cfg->timeout_ms * 2;
		if (ms > cfg->lease_ms / 6)
			ms = cfg->lease_ms / 6;
		if (now + ms * 1000 < next)
			next = now + ms * 1000;
	}
	if (next < wd_next_us)
		wd_arm_at(next);
	wd_pump();
}

static void wd_arm_at(int64_t at_us)
{
	wd_next_us = at_us;
	rn_timer_at(wd_timer, at_us);
}

/* How many renewal batches may be in flight now. */
static int renew_window(void)
{
	struct ilink *l = ilist_first(&due);
	if (!l)
		return RENEW_INFLIGHT;
	struct hold *h = ilist_entry(l, struct hold, due_link);
	return h->lease_end_us - now_us() < h->lease_ms * 1000 / 2 ? RENEW_INFLIGHT_BEHIND
	                                                           : RENEW_INFLIGHT;
}

/* Send renewal batches of the due holds, renew_window() at most at once;
 * each verdict sends the next. A batch is made when it is sent, of the
 * holds still held then, so a release is never followed by a renewal
 * that would write the key back. */
static void wd_pump(void)
{
	int window = renew_window();
	while (wd_batches < window && due.len) {
		int n = due.len < RENEW_BATCH ? (int)due.len : RENEW_BATCH;
		struct rl_renew_item *batch = malloc(sizeof(*batch) * (size_t)n);
		if (!batch)
			return; /* they stay due: the next verdict or tick tries again */
		int64_t lease = cfg->lease_ms, start = now_us();
		for (int i = 0; i < n; i++) {
			struct hold *h = ilist_entry(ilist_first(&due), struct hold, due_link);
			rn_hold_state(h, HS_RENEWING);
			rn_fill_item(&batch[i], h);
			h->refs++;
		}
		if (!rl_renew(batch, n, lease, renewed, &watch)) {
			for (int i = 0; i < n; i++) {
				struct hold *h = batch[i].owner;
				h->refs--;
				rn_hold_state(h, HS_RETRY); /* the next tick takes it */
			}
			free(batch);
			return;
		}
		for (int i = 0; i < n; i++)
			rn_lease_written(batch[i].owner, start, lease);
		wd_batches++;
		stats.renew_batches++;
	}
}

/* Mark the holds whose renewal is due and send the first batches. A hold
 * is due once half a renewal period (a third of the lease it holds) has
 * passed since its last renewal, after a failed one, or when its lease is
 * not the configured one (a reload changed it). The timer is set for the
 * earliest hold not due yet, at most a period of the configured lease. */
static void wd_tick(evutil_socket_t fd, short what, void *arg)
{
	int64_t now = now_us(), next = now + cfg->lease_ms * 1000 / 3;

	for (struct ilink *l = watch.head.next; l != &watch.head; l = l->next) {
		struct hold *h = ilist_entry(l, struct hold, wd_link);
		int64_t period = h->lease_ms * 1000 / 3;
		if (h->state != HS_WATCHED && h->state != HS_RETRY)
			continue;
		/* A plain session's hold past its validity (lockd was stopped):
		 * its LOST is due, a renewal's verdict could not save it, and
		 * the renewal would keep its key on the masters longer (a lapsed
		 * hold's with a lock-delay, 1.4, nobody then deletes). A
		 * resumable one is checked first (deadline_cb, rn_ops.late). */
		if (!h->holder->sid && now >= h->dl.at)
			continue;
		if (h->state == HS_RETRY || h->lease_ms != cfg->lease_ms ||
		    now - h->renewed_us >= period / 2)
			rn_hold_state(h, HS_DUE);
		else if (h->renewed_us + period < next)
			next = h->renewed_us + period;
	}
	wd_arm_at(next);
	wd_pump();
}

/* --- releases nobody waits for --- */

static void rel_done(struct rl_call *c, void *owner);

static void rel_pump(evutil_socket_t fd, short what, void *arg)
{
	struct rl_release_item items[RELEASE_BATCH];
	struct relq *batch[RELEASE_BATCH];

	while (relq_head && (rel_batches < RELEASE_INFLIGHT || rel_all)) {
		int n = 0;
		while (relq_head && n < RELEASE_BATCH) {
			struct relq *r = relq_head;
			if (!(relq_head = r->next))
				relq_tail = &relq_head;
			items[n].key = r->key;
			items[n].klen = r->klen;
			items[n].hold = r->hold;
			items[n].permit = r->permit;
			items[n].token = r->token;
			items[n].sid = r->sid[0] ? r->sid : NULL;
			items[n].rkind = r->rkind;
			batch[n++] = r;
		}
		struct rl_call *c = rl_release_many(items, n, rel_done, &relq_head);
		for (int k = 0; k < n; k++) /* rl_release_many copied them */
			free(batch[k]);
		if (c)
			rel_batches++;
		else
			log_warn(
			    "out of memory releasing %d keys: their leases lapse on the masters",
			    n);
	}
}

static void rel_done(struct rl_call *c, void *owner)
{
	rel_batches--;
	rel_pump(-1, 0, NULL);
	if (!relq_head && !rel_batches && !rel_all)
		memtrim_soon();
}

/* Released holds wait here, so that a session's many holds leave in few
 * scripts; the first batch goes out from the loop, once all are queued. */
void rn_release(const char *key, size_t klen, enum rl_hold hold, uint32_t permit, const char *token,
                const struct rl_rec *rec)
{
	struct relq *r = malloc(sizeof(*r) + klen + 1);
	if (!r) {
		log_warn("out of memory releasing %.*s: its lease lapses on the masters", (int)klen,
		         key);
		return;
	}
	r->next = NULL;
	r->klen = klen;
	r->hold = hold;
	r->permit = permit;
	r->rkind = rec ? rec->kind : 0;
	snprintf(r->sid, sizeof(r->sid), "%s", rec && rec->sid ? rec->sid : "");
	memcpy(r->token, token, sizeof(r->token));
	memcpy(r->key, key, klen);
	r->key[klen] = '\0';
	*relq_tail = r;
	relq_tail = &r->next;
	event_active(rel_ev, EV_TIMEOUT, 0);
}

void rn_release_all(void)
{
	rel_all = 1; /* lockd is leaving */
	rel_pump(-1, 0, NULL);
}

int rn_busy(void)
{
	return relq_head != NULL || rel_batches > 0;
}

/* --- setup --- */

int rn_init(struct event_base *b, const struct config *c, const struct rn_ops *o)
{
	base = b;
	cfg = c;
	ops = o;
	ilist_init(&watch);
	ilist_init(&due);
	dh_init(&deadlines);
	dl_at = 0;
	wd_batches = rel_batches = rel_all = 0;
	wd_timer = evtimer_new(base, wd_tick, NULL);
	rel_ev = event_new(base, -1, 0, rel_pump, NULL);
	dl_timer = evtimer_new(base, deadline_cb, NULL);
	if (!wd_timer || !rel_ev || !dl_timer)
		return -1;
	wd_arm_at(now_us() + cfg->lease_ms * 1000 / 3);
	return 0;
}

void rn_set_cfg(const struct config *c)
{
	cfg = c;
	wd_arm_at(now_us());
}

void rn_shutdown(void)
{
	if (wd_timer)
		event_free(wd_timer);
	wd_timer = NULL;
	if (rel_ev)
		event_free(rel_ev);
	rel_ev = NULL;
	while (relq_head) {
		struct relq *r = relq_head;
		relq_head = r->next;
		free(r);
	}
	relq_tail = &relq_head;
	dh_free(&deadlines);
	if (dl_timer)
		event_free(dl_timer);
	dl_timer = NULL;
	dl_at = 0;
}

void rn_on_lead_rewritten(void (*fn)(void))
{
	lead_rewritten = fn;
}

void rn_on_sess_rewritten(void (*fn)(struct lt_client *c))
{
	sess_rewritten = fn;
}
