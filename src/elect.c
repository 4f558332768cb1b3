/* elect: leader election (protocol 1.3).
 *
 * A campaign is locktab's exclusive LOCK of the name (request cmd
 * CMD_CAMPAIGN): one FIFO with plain LOCKs of the name, renewals, LOST,
 * fences, master restarts. locktab hands its grant to el_granted instead
 * of answering; elect then writes the value beside the lock on every
 * master (rl_el_put: only where the lock holds the leader's token, a
 * compare-and-set the masters enforce) and answers "OK fence" once a
 * majority holds it. A leader's lock is released with its value
 * (rl_el_resign) whenever it ends: RESIGN, UNLOCK, its session's end, LOST
 * (locktab's releasing hook), so observers everywhere hear of it. A
 * request for a name whose leader was adopted with its session (1.2)
 * waits here until the masters have told whether it leads (pend_answer).
 *
 * Two modules below this file, which call nothing of it: lead.c keeps
 * the leaders of this lockd (struct lead, one per name at most: the lock
 * is exclusive; their value and its version, written back every lease/3
 * where a master lost it, the same compare-and-set, a no-op but for the
 * record's expiry where it is there; an adopted leader's epoch), and
 * tells of a settled reservation through the function el_init hands it.
 * Who leads a name as others ask it (LEADER, OBSERVE) is elwatch.c's:
 * elect tells it of each value it writes (ew_poke) and keeps each
 * connection's observations for it (struct ew_client). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cfg.h"
#include "elect.h"
#include "elwatch.h"
#include "keytab.h"
#include "lead.h"
#include "log.h"
#include "ltops.h"
#include "proto.h"
#include "redlock.h"
#include "renew.h"
#include "stats.h"
#include "util.h"
#include "ilist.h"

static struct event_base *base;
static const struct config *cfg;
static const struct lt_ops *ops;

/* What elect keeps of a client (lt_client.el). */
struct el_client {
	struct ew_client ew; /* its observations (elwatch.c's) */
	char *value;         /* the value of its CAMPAIGN waiting in locktab */
	size_t vlen;
	int unlocking; /* its resign is an UNLOCK: answered "OK 0" */
	/* A request of a resumable session for a name whose leadership is
	 * being adopted here (its session was resumed from another lockd,
	 * 1.2: struct el_adopt, then LD_RESERVING), answered once that is
	 * settled (pend_answer): the command, and "NAME" or "NAME VALUE". */
	enum cmd pend_cmd;
	char *pend_value;
	/* Its CAMPAIGN's WAIT (as LOCK's: a grant whose value reached no
	   majority is tried again until it ends, then ERR QUORUM). */
	int has_deadline;
	uint32_t wait_ms; /* the CAMPAIGN's WAIT, counted from its arrival (c->req_us) */
	int has_delay;    /* the CAMPAIGN's DELAY (1.4), for its retries */
	uint32_t delay_ms;
	struct ilist adopts; /* struct el_adopt: reads of holds adopted at RESUME */
	struct event *retry; /* the next try of a CAMPAIGN whose put failed */
	char *retry_key;     /* its name (value: value above) */
	size_t retry_klen;
	int64_t backoff_ms;
};

/* A majority read of a name whose lock a session resumed from another
 * lockd holds (1.2): is it that session's leadership? */
struct el_adopt {
	struct ilink link; /* on el_client.adopts */
	struct lt_client *c;
	struct rl_call *call;
	size_t klen;
	char key[];
};

#define RETRY_MIN_MS 50  /* first pause before a CAMPAIGN is tried again */
#define RETRY_MAX_MS 500 /* longest pause (doubling in between) */

static struct el_client *el_of(struct lt_client *c)
{
	if (!c->el && (c->el = calloc(1, sizeof(*c->el)))) {
		ilist_init(&c->el->ew.obs);
		ilist_init(&c->el->adopts);
	}
	return c->el;
}

static void retry_cb(evutil_socket_t fd, short what, void *arg);

/* When c's CAMPAIGN's WAIT ends, as locktab counts it (c->req_us stays the
 * CAMPAIGN's arrival until it is answered). */
static int64_t campaign_deadline(const struct lt_client *c)
{
	return c->req_us + (int64_t)c->el->wait_ms * 1000;
}

/* c's CAMPAIGN of key (value: e->value) is tried again after a pause,
 * while its WAIT lasts: 1, else 0 (the WAIT is over, or no memory). */
static int retry_later(struct lt_client *c, const char *key, size_t klen)
{
	struct el_client *e = c->el;
	int64_t now = now_us();
	if (!e || !e->value || (e->has_deadline && now >= campaign_deadline(c)))
		return 0;
	if (!e->retry && !(e->retry = evtimer_new(base, retry_cb, c)))
		return 0;
	char *k = bytes_dup(key, klen);
	if (!k)
		return 0;
	free(e->retry_key);
	e->retry_key = k;
	e->retry_klen = klen;
	e->backoff_ms = e->backoff_ms ? e->backoff_ms * 2 : RETRY_MIN_MS;
	if (e->backoff_ms > RETRY_MAX_MS)
		e->backoff_ms = RETRY_MAX_MS;
	int64_t at = now + e->backoff_ms * 1000;
	if (e->has_deadline && at > campaign_deadline(c))
		at = campaign_deadline(c);
	rn_timer_at(e->retry, at);
	return 1;
}

/* The pause is over: LOCK the name again with what is left of the WAIT
 * (the grant comes to el_granted), or answer ERR QUORUM when nothing is. */
static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lt_client *c = arg;
	struct el_client *e = c->el;
	char *key = e->retry_key;
	e->retry_key = NULL;
	if (!key || !e->value || (e->has_deadline && campaign_deadline(c) - now_us() < 5000)) {
		/* no WAIT left to try in (5 ms at least) */
		free(key);
		lt_ops_reply(ops, c, "%s", MSG_NO_QUORUM);
		return;
	}
	struct request r = {.cmd = CMD_CAMPAIGN,
	                    .key = key,
	                    .klen = e->retry_klen,
	                    .word = e->value,
	                    .wlen = e->vlen,
	                    .has_wait = e->has_deadline,
	                    .wait_ms = e->wait_ms, /* locktab counts it from req_us too */
	                    .has_delay = e->has_delay,
	                    .delay_ms = e->delay_ms};
	lt_lock(c, &r);
	free(key);
}

/* Why a waiting request is answered now. */
enum pend_why {
	PA_SETTLED, /* the read (and the reservation) answered: led_by tells */
	PA_QUORUM,  /* the read found no majority */
	PA_UNSURE,  /* a majority answered it, and could not tell (rl_leader.unsure) */
	PA_GONE,    /* c's hold of the name ended meanwhile (LOST) */
};

static int pend(struct el_client *e, const struct request *r);
static void pend_clear(struct el_client *e);
static int adopt_start(struct lt_client *c, const char *key, size_t klen);
static void pend_answer(struct lt_client *c, const char *key, size_t klen, enum pend_why why);

/* ld's put found a later epoch reserved where its lock is, and no
 * majority: ld is an earlier life of this leadership here (its session
 * moved to another lockd and back, 1.2). c's PROCLAIM (or CAMPAIGN) is
 * answered after the adoption of what the masters hold: 1, else 0. */
static int readopt(struct lead *ld, struct lt_client *c)
{
	struct el_client *e = c->sid ? el_of(c) : NULL;
	struct request r = {.cmd = ld->reply_fence ? CMD_CAMPAIGN : CMD_PROCLAIM,
	                    .key = ld->key,
	                    .klen = ld->node.klen,
	                    .word = ld->value,
	                    .wlen = ld->vlen};
	if (!e || !pend(e, &r))
		return 0;
	size_t klen = ld->node.klen;
	lead_free(ld);
	if (adopt_start(c, e->pend_value, klen))
		return 1;
	pend_clear(e);
	return 0;
}

static void put_done(struct rl_call *call, void *owner)
{
	struct lead *ld = owner;
	struct lt_client *c = ld->reply_to;
	int ok = rl_result_of(call) == RL_OK;
	ld->call = NULL;
	ld->reply_to = NULL;
	if (!ok && c && ld->state == LD_LEADING && rl_el_superseded(call)) {
		if (!readopt(ld, c))
			lt_ops_reply(ops, c, "%s", MSG_NO_QUORUM);
		return;
	}
	if (ld->state == LD_PUBLISHING && !ok) {
		/* No majority holds the value: give the lock back, with
		 * whatever value reached a minority, and try again while the
		 * CAMPAIGN's WAIT lasts (as LOCK does on ERR QUORUM). */
		struct rl_rec rec = {c ? c->sid : NULL, 'x', 0};
		uint64_t fence;
		char token[TOKEN_LEN + 1];
		stats.quorum_failures++;
		rl_el_resign(ld->key, ld->node.klen, ld->token, &rec, NULL, NULL);
		if (c && lt_lock_holder(ld->key, ld->node.klen, &fence, token) == c &&
		    strcmp(token, ld->token) == 0)
			lt_drop(c, ld->key, ld->node.klen);
		if (c && c->el && !c->el->value) { /* the value goes back to the campaign */
			c->el->value = ld->value;
			c->el->vlen = ld->vlen;
			ld->value = NULL;
		}
		int again = c && retry_later(c, ld->key, ld->node.klen);
		lead_free(ld);
		if (c && !again)
			lt_ops_reply(ops, c, "%s", MSG_NO_QUORUM);
		return;
	}
	if (ld->state == LD_PUBLISHING) {
		ld->state = LD_LEADING;
		stats.leaders++;
	}
	if (c && !ok)
		lt_ops_reply(ops, c, "%s", MSG_NO_QUORUM);
	else if (c && ld->reply_fence)
		lt_ops_reply(ops, c, "OK %llu", (unsigned long long)ld->fence);
	else if (c)
		lt_ops_reply(ops, c, "OK");
	if (ok)
		ew_poke(ld->key, ld->node.klen);
}

/* Write ld's value (its version) on the masters; c waits for the verdict. */
static void put(struct lead *ld, struct lt_client *c, int reply_fence)
{
	if (ld->call) { /* a put of an older version: its verdict no longer answers */
		rl_detach(ld->call, ld);
		ld->call = NULL;
		if (ld->reply_to)
			lt_ops_reply(ops, ld->reply_to, "%s", MSG_NO_QUORUM);
	}
	ld->reply_to = c;
	ld->reply_fence = reply_fence;
	ld->call = rl_el_put(ld->key, ld->node.klen, ld->token, ld->fence, ld->epoch, ld->version,
	                     ld->value, ld->vlen, lead_record_expiry(), put_done, ld);
	if (!ld->call) {
		ld->reply_to = NULL;
		if (c)
			lt_ops_reply(ops, c, "%s", MSG_OOM);
	}
}

/* locktab granted c's CAMPAIGN: publish its value, then answer. */
static void el_granted(struct lt_client *c, const char *key, size_t klen, uint64_t fence,
                       const char *token)
{
	struct el_client *e = c->el;
	struct lead *ld = lead_find(key, klen);
	if (ld) /* a leader here that locktab forgot (its session moved away) */
		lead_free(ld);
	ld = e && e->value ? lead_new(key, klen, token, LD_PUBLISHING) : NULL;
	if (!ld) {
		uint64_t f;
		char t[TOKEN_LEN + 1];
		if (lt_lock_holder(key, klen, &f, t) == c) {
			struct rl_rec rec = {c->sid, 'x', 0};
			rl_release(key, klen, RH_LOCK, 0, t, &rec, 0, NULL, NULL);
			lt_drop(c, key, klen);
		}
		lt_ops_reply(ops, c, "%s", MSG_OOM);
		return;
	}
	ld->fence = fence;
	ld->version = 1;
	ld->value = e->value;
	ld->vlen = e->vlen;
	e->value = NULL;
	lt_set_lead(c, key, klen);
	put(ld, c, 1);
}

/* locktab lets go of a hold of a key's lock: a leader's is released here,
 * with its value, and announced. */
static int el_releasing(struct lt_client *c, const char *key, size_t klen, const char *token,
                        int lost)
{
	struct lead *ld = lead_find(key, klen);
	if (!ld || strcmp(ld->token, token) != 0)
		return 0;
	if (ld->reply_to) { /* a CAMPAIGN or PROCLAIM waits for its put */
		struct lt_client *r = ld->reply_to;
		ld->reply_to = NULL;
		lt_ops_reply(ops, r, "%s", MSG_NO_QUORUM);
	}
	if (lost)
		log_info("leader of %s (fence %llu) lost its lock", ld->key,
		         (unsigned long long)ld->fence);
	struct rl_rec rec = {c ? c->sid : NULL, 'x', 0};
	if (lost != 2) /* 2: it lapsed with a lock-delay, which runs on the masters (1.4) */
		rl_el_resign(key, klen, token, &rec, NULL, NULL);
	lead_free(ld);
	if (c) /* a request waiting for its epoch */
		pend_answer(c, key, klen, PA_GONE);
	return 1;
}

static void valid_lead_value(struct lt_client *c, const struct request *r, int *ok)
{
	*ok = r->wlen >= 1 && r->wlen <= (size_t)cfg->max_value_len;
	if (!*ok)
		lt_ops_reply(ops, c, "ERR ARG value is longer than limits.max_value_len (%lld)",
		             (long long)cfg->max_value_len);
}

/* A new value for a leader (PROCLAIM, or CAMPAIGN by the leader). */
static void proclaim(struct lead *ld, struct lt_client *c, const struct request *r, int fence)
{
	char *v = bytes_dup(r->word, r->wlen);
	if (!v) {
		lt_ops_reply(ops, c, "%s", MSG_OOM);
		return;
	}
	free(ld->value);
	ld->value = v;
	ld->vlen = r->wlen;
	ld->version++;
	put(ld, c, fence);
}

static void resign(struct lead *ld, struct lt_client *c, int unlock);

/* --- leaders adopted with their session (1.2) --- */

/* c's request r waits for the adoption of its name here (pend_answer
 * answers it): 1, else 0 (no memory). */
static int pend(struct el_client *e, const struct request *r)
{
	char *p = malloc(r->klen + r->wlen + 2);
	if (!p)
		return 0;
	memcpy(p, r->key, r->klen);
	p[r->klen] = ' ';
	memcpy(p + r->klen + 1, r->word ? r->word : "", r->wlen);
	p[r->klen + 1 + r->wlen] = '\0';
	if (!r->wlen)
		p[r->klen] = '\0';
	free(e->pend_value);
	e->pend_value = p;
	e->pend_cmd = r->cmd;
	return 1;
}

static void pend_clear(struct el_client *e)
{
	free(e->pend_value);
	e->pend_value = NULL;
}

/* Answer c's request waiting for the adoption of key, if there is one,
 * unless a PROCLAIM still waits for its epoch. */
static void pend_answer(struct lt_client *c, const char *key, size_t klen, enum pend_why why)
{
	struct el_client *e = c->el;
	if (!e || !e->pend_value)
		return;
	size_t n = strcspn(e->pend_value, " ");
	if (n != klen || memcmp(e->pend_value, key, klen) != 0)
		return;
	struct lead *ld = why == PA_GONE ? NULL : lead_by(c, key, klen);
	enum cmd cmd = e->pend_cmd;
	if (ld && ld->state == LD_RESERVING && ld->call && cmd != CMD_RESIGN && cmd != CMD_UNLOCK)
		return; /* its epoch is on its way */
	char *hold = e->pend_value;
	e->pend_value = NULL;
	const char *val = hold[n] ? hold + n + 1 : "";
	struct request r = {.cmd = cmd, .key = hold, .klen = n, .word = val, .wlen = strlen(val)};
	if (cmd == CMD_UNLOCK && ld)
		resign(ld, c, 1);
	else if (cmd == CMD_UNLOCK && why == PA_GONE)
		lt_ops_reply(ops, c, "%s", MSG_NOT_HELD);
	else if (cmd == CMD_UNLOCK)
		lt_unlock(c, hold, n); /* a plain hold (or nobody could tell) */
	else if (cmd == CMD_RESIGN && ld)
		resign(ld, c, 0);
	else if (ld && ld->state == LD_LEADING)
		proclaim(ld, c, &r, cmd == CMD_CAMPAIGN);
	else if (why == PA_UNSURE && !ld)
		lt_ops_reply(ops, c, "%s", MSG_UNSURE_READ); /* the next request reads again */
	else if (ld || why == PA_QUORUM || (why == PA_GONE && cmd == CMD_CAMPAIGN))
		lt_ops_reply(ops, c, "%s",
		             MSG_NO_QUORUM); /* no epoch reserved, or no word from a majority */
	else if (cmd == CMD_CAMPAIGN)
		lt_ops_reply(ops, c, "ERR ARG this session holds %.*s without leading it", (int)n,
		             hold);
	else
		lt_ops_reply(ops, c, "%s", MSG_NOT_LEADER);
	free(hold);
}

static void adopted_done(struct rl_call *call, void *owner)
{
	struct el_adopt *a = owner;
	const struct rl_leader *v = rl_leader_of(call);
	lead_adopt(a->c, a->key, a->klen, v);
	ilist_remove(&a->c->el->adopts, &a->link);
	pend_answer(a->c, a->key, a->klen, v->ok ? PA_SETTLED : v->unsure ? PA_UNSURE : PA_QUORUM);
	free(a);
}

/* The read of key under way for c, if any. */
static struct el_adopt *adopt_of(struct el_client *e, const char *key, size_t klen)
{
	for (struct ilink *l = e->adopts.head.next; l != &e->adopts.head; l = l->next) {
		struct el_adopt *a = ilist_entry(l, struct el_adopt, link);
		if (a->klen == klen && memcmp(a->key, key, klen) == 0)
			return a;
	}
	return NULL;
}

/* Read whether c, which holds key's lock, leads it: 1 on its way. */
static int adopt_start(struct lt_client *c, const char *key, size_t klen)
{
	struct el_client *e = el_of(c);
	struct el_adopt *a;
	if (!e || !(a = calloc(1, sizeof(*a) + klen + 1)))
		return 0;
	memcpy(a->key, key, klen);
	a->klen = klen;
	a->c = c;
	a->call = rl_el_read(key, klen, (size_t)cfg->max_value_len, adopted_done, a);
	if (!a->call) {
		free(a);
		return 0;
	}
	ilist_push(&e->adopts, &a->link);
	return 1;
}

void el_adopted(struct lt_client *c, const char *key, size_t klen)
{
	struct lead *ld = lead_find(key, klen);
	if (!c->sid)
		return;
	if (ld) /* an earlier life of it here: what the masters hold counts */
		lead_forget(ld);
	adopt_start(c, key, klen); /* else a request reads it (adopt_wait) */
}

/* c holds the name's lock but does not lead it here, or not yet (its
 * session was resumed from another lockd, with the RESUME's read or the
 * reservation under way, or lost with a connection): r waits for them,
 * started if need be. 1 when r is taken. */
static int adopt_wait(struct lt_client *c, const struct request *r)
{
	uint64_t fence;
	char token[TOKEN_LEN + 1];
	struct el_client *e;
	if (!c->sid || lt_lock_holder(r->key, r->klen, &fence, token) != c || !(e = el_of(c)))
		return 0;
	struct lead *ld = lead_find(r->key, r->klen);
	if (ld && strcmp(ld->token, token) != 0) {
		lead_forget(ld); /* of another hold: its lock left unseen */
		ld = NULL;
	}
	if ((ld && ld->state != LD_RESERVING) || !pend(e, r))
		return 0;
	if (ld ? ld->call || lead_reserve(ld)
	       : adopt_of(e, r->key, r->klen) || adopt_start(c, r->key, r->klen))
		return 1;
	pend_clear(e);
	return 0;
}

void el_campaign(struct lt_client *c, const struct request *r)
{
	int ok;
	stats.campaigns++;
	valid_lead_value(c, r, &ok);
	if (!ok)
		return;
	struct lead *ld = lead_by(c, r->key, r->klen);
	if (ld && ld->state == LD_LEADING) {
		proclaim(ld, c, r, 1); /* the leader campaigns again: one hold */
		return;
	}
	if ((!ld || ld->state == LD_RESERVING) && adopt_wait(c, r))
		return;
	if (lt_holds(c, r->key, r->klen)) {
		lt_ops_reply(ops, c, "ERR ARG this session holds %.*s without leading it",
		             (int)r->klen, r->key);
		return;
	}
	struct el_client *e = el_of(c);
	char *v = e ? bytes_dup(r->word, r->wlen) : NULL;
	if (!v) {
		lt_ops_reply(ops, c, "%s", MSG_OOM);
		return;
	}
	free(e->value);
	e->value = v;
	e->vlen = r->wlen;
	e->has_deadline = r->has_wait;
	e->wait_ms = r->wait_ms;
	e->has_delay = r->has_delay;
	e->delay_ms = r->delay_ms;
	e->backoff_ms = 0;
	lt_lock(c, r); /* LOCK name [WAIT ms]: the grant comes to el_granted */
}

void el_proclaim(struct lt_client *c, const struct request *r)
{
	int ok;
	valid_lead_value(c, r, &ok);
	if (!ok)
		return;
	struct lead *ld = lead_by(c, r->key, r->klen);
	if (ld && ld->state == LD_LEADING) {
		proclaim(ld, c, r, 0);
		return;
	}
	if ((!ld || ld->state == LD_RESERVING) && adopt_wait(c, r))
		return;
	lt_ops_reply(ops, c, "%s", ld && ld->state == LD_RESERVING ? MSG_OOM : MSG_NOT_LEADER);
}

static void resigned(struct rl_call *call, void *owner)
{
	struct lt_client *c = owner;
	int unlock = c->el && c->el->unlocking;
	c->call = NULL;
	if (c->el)
		c->el->unlocking = 0;
	if (rl_result_of(call) != RL_OK) {
		stats.quorum_failures++;
		lt_ops_reply(ops, c, "%s", MSG_RELEASE_UNCONFIRMED);
	} else {
		lt_ops_reply(ops, c, "%s", unlock ? "OK 0" : "OK");
	}
}

/* c leads key: release its lock and value, answer once a majority has. */
static void resign(struct lead *ld, struct lt_client *c, int unlock)
{
	struct rl_rec rec = {c->sid, 'x', 0};
	struct el_client *e = el_of(c);
	ld->reply_to = NULL; /* only c could wait for a put, and c asks this now */
	struct rl_call *call = rl_el_resign(ld->key, ld->node.klen, ld->token, &rec, resigned, c);
	lt_drop(c, ld->key, ld->node.klen); /* all its holds of the name */
	lead_free(ld);
	if (!call) {
		lt_ops_reply(ops, c, "%s", MSG_OOM);
		return;
	}
	if (e)
		e->unlocking = unlock;
	c->call = call;
}

void el_resign(struct lt_client *c, const char *key, size_t klen)
{
	struct lead *ld = lead_by(c, key, klen);
	struct request r = {.cmd = CMD_RESIGN, .key = key, .klen = klen};
	if (ld && ld->state != LD_PUBLISHING) {
		resign(ld, c, 0);
		return;
	}
	if (!ld && adopt_wait(c, &r))
		return;
	lt_ops_reply(ops, c, "%s", MSG_NOT_LEADER);
}

int el_unlock(struct lt_client *c, const char *key, size_t klen)
{
	struct lead *ld = lead_by(c, key, klen);
	struct request r = {.cmd = CMD_UNLOCK, .key = key, .klen = klen};
	if (ld && ld->state != LD_PUBLISHING) {
		resign(ld, c, 1);
		return 1;
	}
	/* right behind a RESUME: whether it leads is being read (a plain
	 * hold's UNLOCK costs no read otherwise) */
	return !ld && c->el && adopt_of(c->el, key, klen) && pend(c->el, &r);
}

/* --- the reads, elwatch.c's --- */

void el_observe(struct lt_client *c, const char *key, size_t klen)
{
	struct el_client *e = el_of(c);
	ew_observe(e ? &e->ew : NULL, c, key, klen);
}

void el_unobserve(struct lt_client *c, const char *key, size_t klen)
{
	ew_unobserve(c->el ? &c->el->ew : NULL, c, key, klen);
}

void el_resync(void)
{
	lead_resync();
	ew_resync();
}

void el_conn_end(struct lt_client *c)
{
	struct el_client *e = c->el;
	struct ilink *l;
	if (!e)
		return;
	ew_client_end(&e->ew);
	while ((l = ilist_first(&e->adopts))) {
		struct el_adopt *a = ilist_entry(l, struct el_adopt, link);
		ilist_remove(&e->adopts, l);
		rl_detach(a->call, a); /* a request later reads it (adopt_wait) */
		free(a);
	}
	if (e->retry)
		event_free(e->retry); /* a CAMPAIGN tried again is cancelled with it */
	free(e->retry_key);
	free(e->value);
	free(e->pend_value);
	free(e);
	c->el = NULL;
}

/* --- setup --- */

static const struct lt_elect_hooks hooks = {el_granted, el_releasing};

/* A reservation of key's epoch answered: c's request waiting for it. */
static void settled(struct lt_client *c, const char *key, size_t klen)
{
	pend_answer(c, key, klen, PA_SETTLED);
}

int el_init(struct event_base *b, const struct config *c, const struct lt_ops *o)
{
	base = b;
	cfg = c;
	ops = o;
	if (lead_init(base, c, o, settled) || ew_init(base, c, o))
		return -1;
	lt_set_elect_hooks(&hooks);
	return 0;
}

void el_set_cfg(const struct config *c)
{
	cfg = c;
	lead_set_cfg(c);
	ew_set_cfg(c);
}

void el_shutdown(void)
{
	lead_shutdown();
	ew_shutdown();
}
