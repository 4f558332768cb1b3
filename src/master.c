/* master: one Redis master: a hiredis async connection on the libevent
 * loop, its scripts, request timeouts, health, and reconnection.
 *
 * hiredis 0.14 has no timeouts for async contexts, so each master keeps
 * its in-flight requests in send order and one timer for the oldest: when
 * it is older than timeout_ms the master is dropped, every pending
 * request fails (callback with NULL) and the master reconnects with
 * capped, jittered backoff. A hung master thus costs a call at most
 * timeout_ms, and a master that is down is skipped at once.
 *
 * The handshake (master_hs.c: AUTH, the connection's name, the layout
 * key, SCRIPT LOAD, the connection epoch, INFO for the run_id, ROLE,
 * EXISTS of the marker) ends in opts.on_up; every drop ends in
 * opts.on_down. What a restart or a missing marker means for the majority
 * is for the user of these callbacks (membership.c) to decide.
 *
 * While a master is up, a second connection subscribes to its notices:
 * that is mastersub.c's (sub_start when the master goes up, sub_close
 * when it goes down). What the two files share is in master_int.h.
 * A master's replicas (WAIT, ROLE) are master_repl.c's, which gets what
 * it needs of this file as struct mrepl_ops (masters_init). */
#include "config.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>

#include "cluster.h"
#include "ktag.h"
#include "log.h"
#include "master.h"
#include "master_int.h"
#include "mcluster.h"
#include "rdup.h"
#include "sentinel.h"

#define BATCH_MAX 128 /* calls per batch: a script blocks its master while it runs */

#define MAX_INFLIGHT 262144 /* requests queued to one master, at most */

static struct event_base *base;
static struct master *masters;
static int nmasters;
static struct master_opts opts;
static char marker_key[128];
/* Connection epochs (master_epoch): the key's expiry (SCR_GEN_EXPIRE_MS),
 * raised again on the next request after GEN_REFRESH_US. It must outlive
 * any request of an older connection still on its way (TCP gives up on
 * those long before). */
#define GEN_REFRESH_US (600 * 1000000LL)
static int any_cluster; /* some master is a cluster entry */
static uint64_t epoch;
static char epoch_str[MASTER_EPOCH_LEN + 1] = "00000000000000000000";
static char gen_key[160];
/* This lockd's name (1.4), where WHO on any lockd reads it by the instance
 * of a token: written at each handshake and again with the epoch (at most
 * GEN_REFRESH_US before any request that writes a token of ours), never
 * per grant. It outlives every lease such a request can write (2^31-1 ms,
 * a TTL or EXTEND) and then goes, with the tokens of a lockd long gone. */
#define NAME_EXPIRE_MS "2151083647" /* 2^31-1 + an hour */
static char name_key[160];
static char *lockd_name;
static int shutting_down; /* our own close: no "down" warnings, no on_down */

static void reconnect_cb(evutil_socket_t fd, short what, void *arg);
static void start_connect(struct master *m);
static int send_req(struct master *m, struct mreq *r, int use_eval);

/* Masters to write at the end of the loop turn, and the event that does
 * it (activated by the first call of a turn, so it runs after every
 * callback already active): the calls of a turn go out in one write per
 * master, and the write event the hiredis adapter armed for them is
 * disarmed in the same turn, which the epoll changelist turns into no
 * system call at all. */
static struct ilist dirtyq;
static struct event *flush_ev;

const char *master_state_name(enum master_state s)
{
	static const char *const names[] = {"down",      "resolving",   "connecting",
	                                    "handshake", "layout_wait", "up"};
	return names[s];
}

static void mark_dirty(struct master *m)
{
	if (ilink_linked(&m->dirty))
		return;
	ilist_push(&dirtyq, &m->dirty);
	if (dirtyq.len == 1)
		event_active(flush_ev, EV_TIMEOUT, 0);
}

static void set_state(struct master *m, enum master_state s)
{
	m->state = s;
	m->state_since_us = now_us();
}

/* A master is down when it answers nothing for timeout_ms while a request
 * waits: measured from the oldest request or the last answer, whichever
 * is later, so that a burst it is still working through is not a fault.
 * A request not written out yet counts from when it was queued: a master
 * that reads nothing (stopped, its socket full) never lets it out, and
 * must not hold every call's verdict and our memory for ever (mr_timer
 * checks that it is the socket, not our own loop, that holds it). */
static int64_t progress_us(const struct master *m, const struct ilink *oldest)
{
	const struct mreq *r = ilist_entry(oldest, struct mreq, link);
	int64_t sent = r->sent_us;
	if (!sent) /* a burst the master still reads is not a fault */
		sent = m->wrote_us > r->queued_us ? m->wrote_us : r->queued_us;
	return m->last_reply_us > sent ? m->last_reply_us : sent;
}

/* How long the oldest request may go unanswered: timeout_ms, and for a
 * WAIT also its own timeout and the server's granularity for it. */
static int64_t allow_us(const struct ilink *oldest)
{
	const struct mreq *r = ilist_entry(oldest, struct mreq, link);
	return (opts.timeout_ms + (r->is_wait ? mrepl_wait_allow_ms() : 0)) * 1000;
}

/* The oldest request waits in our output buffer while the socket takes
 * more: our loop was busy, not the master. Write now; 1 if it was so. */
static int flush_if_writable(struct master *m, const struct mreq *oldest)
{
	struct pollfd p = {.fd = m->ac->c.fd, .events = POLLOUT};
	if (oldest->sent_us || poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
		return 0;
	redisAsyncHandleWrite(m->ac);
	return 1;
}

/* Requests are stamped with the time hiredis has written them out (its
 * output buffer went empty), not when they were queued: a loop turn that
 * our own work made long (a burst of session ends) must not count
 * against the master. hiredis tells the event library to stop watching
 * for writability exactly then; we hook that call. */
static void (*lib_del_write)(void *privdata);

static void stamp_written(void *privdata)
{
	redisAsyncContext *ac = ((redisLibeventEvents *)privdata)->context;
	struct master *m = ac->data;
	if (m && m->ac == ac) {
		int64_t now = now_us();
		for (struct ilink *l = m->inflight.head.prev; l != &m->inflight.head; l = l->prev) {
			struct mreq *r = ilist_entry(l, struct mreq, link);
			if (r->sent_us)
				break;
			r->sent_us = now;
		}
	}
	lib_del_write(privdata);
}

/* The adapter's read event is not persistent: libevent deletes it when
 * it fires and hiredis adds it again, which costs an epoll_ctl on every
 * read of every master. A persistent one stays; hiredis' own adds and
 * deletes still work on it. */
static void persistent_reads(redisAsyncContext *ac)
{
	redisLibeventEvents *e = ac->ev.data;
	event_del(e->rev);
	event_assign(e->rev, base, ac->c.fd, EV_READ | EV_PERSIST, redisLibeventReadEvent, e);
	event_add(e->rev, NULL);
}

/* The socket took more of our bytes: the master reads (progress_us). */
static void write_event(evutil_socket_t fd, short what, void *arg)
{
	redisLibeventEvents *e = arg;
	struct master *m = e->context->data;
	if (m && m->ac == e->context)
		m->wrote_us = now_us();
	redisLibeventWriteEvent(fd, what, arg);
}

static void watch_writes(redisAsyncContext *ac)
{
	redisLibeventEvents *e = ac->ev.data;
	int pending = event_pending(e->wev, EV_WRITE, NULL);
	event_del(e->wev);
	event_assign(e->wev, base, ac->c.fd, EV_WRITE, write_event, e);
	if (pending)
		event_add(e->wev, NULL);
}

/* Arm the timer for the oldest request, or the connect/handshake deadline. */
static void arm_timer(struct master *m)
{
	int64_t deadline;
	struct ilink *l = ilist_first(&m->inflight);

	if (m->state == MS_CONNECTING || m->state == MS_HANDSHAKE) {
		deadline = m->state_since_us + master_slow_ms(&opts) * 1000;
	} else if (l) {
		deadline = progress_us(m, l) + allow_us(l);
	} else {
		event_del(m->timer);
		return;
	}
	master_timer_at(m->timer, deadline);
}

/* Give r its answer (NULL: it failed): a batch hands each of its calls
 * its own element of the reply (the whole reply if it is an error). */
static void req_answer(struct master *m, struct mreq *r, redisReply *rep)
{
	if (r->is_wait) {
		mrepl_wait_answer(m, r, rep);
		return;
	}
	if (r->waiter) { /* failed before its reply came: its WAIT answers nothing */
		r->waiter->wait_of = NULL;
		r->waiter = NULL;
	}
	if (!r->items) {
		r->fn(m, rep, r->arg);
		return;
	}
	int i = 0,
	    whole = rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == (size_t)r->nitems;
	struct mreq *it = r->items;
	r->items = NULL;
	while (it) {
		struct mreq *next = it->item_next;
		redisReply *e = whole                                   ? rep->element[i]
		                : rep && rep->type == REDIS_REPLY_ERROR ? rep
		                                                        : NULL;
		it->fn(m, e, it->arg);
		mreq_put(it);
		it = next;
		i++;
	}
}

/* Drop the connection: fail what is in flight, reconnect later.
 * free_ctx is 0 when hiredis is already tearing the context down. */
static void master_drop(struct master *m, const char *why, int free_ctx)
{
	struct redisAsyncContext *ac = m->ac;
	struct ilink *l;

	if (shutting_down)
		log_debug("master %s: closed", m->name);
	else if (m->state == MS_UP || (m->state != MS_DOWN && m->last_error[0] == '\0'))
		log_warn("master %s down: %s", m->name, why);
	else
		log_debug("master %s: %s", m->name, why);
	snprintf(m->last_error, sizeof(m->last_error), "%s", why);
	set_state(m, MS_DOWN);
	m->ac = NULL;
	if (ac)
		ac->data = NULL;
	sub_close(m, 1); /* made again when the master is up again */
	/* Fail requests in send order; their callbacks see the master down,
	 * so nothing new is sent to it from inside them. */
	while ((l = ilist_pop(&m->inflight))) {
		struct mreq *r = ilist_entry(l, struct mreq, link);
		r->done = 1;
		req_answer(m, r, NULL);
	}
	while ((l = ilist_pop(&m->pend))) { /* never handed to hiredis */
		struct mreq *r = ilist_entry(l, struct mreq, link);
		r->fn(m, NULL, r->arg);
		mreq_put(r);
	}
	ilist_remove(&dirtyq, &m->dirty);
	if (ac && free_ctx)
		redisAsyncFree(ac);
	event_del(m->timer);
	event_del(m->layout_timer); /* a wait's poll ends with its connection */

	if (opts.on_down && !shutting_down)
		opts.on_down(m);
	master_backoff_arm(&opts, m->retry, &m->backoff_ms);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct master *m = arg;
	struct ilink *l = ilist_first(&m->inflight);
	int64_t now = now_us();

	if (m->state == MS_CONNECTING || m->state == MS_HANDSHAKE) {
		if (now - m->state_since_us >= master_slow_ms(&opts) * 1000) {
			master_drop(m,
			            m->state == MS_CONNECTING ? "connect timed out"
			                                      : "handshake timed out",
			            1);
			return;
		}
	} else if (l && now - progress_us(m, l) >= allow_us(l)) {
		/* Our own loop may have been busy while the answer waited in
		 * the socket: read what has arrived before blaming the master. */
		redisAsyncHandleRead(m->ac);
		if (m->state != MS_UP && m->state != MS_LAYOUT_WAIT)
			return; /* the read found the connection gone */
		l = ilist_first(&m->inflight);
		if (l && now_us() - progress_us(m, l) >= allow_us(l) &&
		    !flush_if_writable(m, ilist_entry(l, struct mreq, link))) {
			char why[160];
			struct mreq *r = ilist_entry(l, struct mreq, link);
			snprintf(why, sizeof(why),
			         "request timed out (oldest %s %lld ms ago, %zu in flight, last "
			         "answer %lld ms ago)",
			         r->sent_us ? "sent" : "queued, never written,",
			         (long long)(now_us() - (r->sent_us ? r->sent_us : r->queued_us)) /
			             1000,
			         m->inflight.len, (long long)(now_us() - m->last_reply_us) / 1000);
			master_drop(m, why, 1);
			return;
		}
	}
	arm_timer(m);
}

static int is_noscript(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

static void reply_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct mreq *r = priv;
	struct master *m = r->m;
	redisReply *rep = reply;

	if (r->done) {
		mreq_put(r);
		return;
	}
	ilist_remove(&m->inflight, &r->link);
	if (!rep) {
		/* The context is going away under us: fail everything once. */
		r->done = 1;
		req_answer(m, r, NULL);
		mreq_put(r);
		if (ac->data == m)
			master_drop(m, ac->errstr[0] ? ac->errstr : "connection lost", 0);
		return;
	}
	m->last_reply_us = now_us();
	m->latency_us = m->last_reply_us - r->sent_us;
	if (is_noscript(rep) && r->script >= 0 && m->state == MS_UP) {
		/* Someone flushed the script cache: send the body, which also
		 * loads it again for the EVALSHAs that follow. */
		log_info("master %s: NOSCRIPT, sending script %d by EVAL", m->name, r->script);
		if (r->waiter) { /* its WAIT is for nothing now: a new one follows */
			r->waiter->wait_of = NULL;
			r->waiter = NULL;
		}
		if (send_req(m, r, 1) == 0) {
			mrepl_send_wait(m, r);
			mark_dirty(m);
			return;
		}
		r->done = 1;
		req_answer(m, r, NULL);
		mreq_put(r);
		return;
	}
	if (r->held_set < 0) { /* its WAIT could not be sent: it counts nowhere */
		req_answer(m, r, NULL);
		mreq_put(r);
		arm_timer(m);
		return;
	}
	if (r->waiter) { /* a write: answered once its WAIT is (wait_answer) */
		r->held = rdup_reply(rep);
		r->held_set = 1;
		arm_timer(m);
		return;
	}
	req_answer(m, r, rep);
	mreq_put(r);
	arm_timer(m);
}

/* Queue r on m's connection (use_eval: a script by its body); 0 or -1. */
static int send_req(struct master *m, struct mreq *r, int use_eval)
{
	size_t flen;
	const char *fbuf = mfmt_req(r, use_eval, &flen);
	if (redisAsyncFormattedCommand(m->ac, reply_cb, r, fbuf, flen) != REDIS_OK)
		return -1;
	r->sent_us = 0; /* stamp_written sets it once it is on the wire */
	r->queued_us = now_us();
	ilist_push(&m->inflight, &r->link);
	if (m->inflight.len == 1)
		arm_timer(m);
	return 0;
}

/* Send the calls queued on m this turn: those of one script together,
 * as its batch form (up to BATCH_MAX at a time), in the order each
 * script's first call came; a call whose shared arguments differ from
 * the batch's waits for the next one (none does today: they point at the
 * same buffers of redlock.c and master.c, read when the batch is
 * formatted; the check keeps a batch right if a caller ever passes its
 * own). Calls of different scripts are about
 * different holds or a hold and its own undo, whose order on a master
 * does not matter (a stale token of ours is overwritten, never trusted). */
static void send_gen(struct master *m, master_reply_fn *fn);
static void gen_cb(struct master *m, redisReply *r, void *arg);

static void flush_pend(struct master *m, int from_loop)
{
	if (m->state == MS_UP && now_us() - m->gen_at_us > GEN_REFRESH_US)
		send_gen(m, gen_cb);
	mrepl_refresh(m);
	while (m->pend.len) {
		struct mreq *first = ilist_entry(ilist_first(&m->pend), struct mreq, link);
		struct mreq *head = NULL, **tail = &head;
		int script = first->script, n = 0;
		struct ilink *l = &first->link;
		while (l != &m->pend.head && n < BATCH_MAX) {
			struct ilink *next = l->next;
			struct mreq *r = ilist_entry(l, struct mreq, link);
			if (r->script == script && mfmt_same_shared(first, r)) {
				ilist_remove(&m->pend, l);
				r->item_next = NULL;
				*tail = r;
				tail = &r->item_next;
				n++;
			}
			l = next;
		}
		struct mreq *c = head;
		if (n > 1 && (c = mreq_get())) {
			c->m = m;
			c->script = script_batch_of((enum script_id)script);
			c->items = head;
			c->nitems = n;
		}
		if (c && send_req(m, c, 0) == 0) {
			mrepl_send_wait(m, c);
		} else {
			if (c && c != head) {
				c->items = NULL;
				mreq_put(c);
			}
			if (!from_loop) {
				/* Inside master_call: back on the list, to fail
				 * from the loop (fn never runs inside master_call). */
				for (struct mreq *r = head; r; r = r->item_next) {
					r->link.prev = r->link.next = NULL;
					ilist_push(&m->pend, &r->link);
				}
				mark_dirty(m);
				return;
			}
			while (head) {
				struct mreq *next = head->item_next;
				head->fn(m, NULL, head->arg);
				mreq_put(head);
				head = next;
			}
		}
	}
}

static void flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ilink *l;
	while ((l = ilist_pop(&dirtyq))) {
		struct master *m = ilist_entry(l, struct master, dirty);
		if (m->ac)
			flush_pend(m, 1);
		/* Write now rather than when the write event fires next turn. */
		if (m->ac && (m->ac->c.flags & REDIS_CONNECTED))
			redisAsyncHandleWrite(m->ac);
	}
}

static struct mreq *req_new(struct master *m, int script, int argc, const char **argv,
                            const size_t *argvlen, master_reply_fn *fn, void *arg)
{
	struct mreq *r = mreq_get();
	if (r) {
		r->m = m;
		r->fn = fn;
		r->arg = arg;
		r->script = script;
		r->argc = argc;
		r->argv = argv;
		r->argvlen = argvlen;
	}
	return r;
}

/* Send a command or script now, in a handshake or while up; 0 or -1. */
static int call_any(struct master *m, int script, int argc, const char **argv,
                    const size_t *argvlen, master_reply_fn *fn, void *arg)
{
	struct mreq *r;

	if (!m->ac || m->state == MS_DOWN || m->state == MS_CONNECTING)
		return -1;
	if (m->inflight.len >= MAX_INFLIGHT)
		return -1; /* a master this far behind counts as a no */
	if (!(r = req_new(m, script, argc, argv, argvlen, fn, arg)))
		return -1;
	if (send_req(m, r, 0) != 0) {
		mreq_put(r);
		return -1;
	}
	mrepl_send_wait(m, r);
	mark_dirty(m);
	return 0;
}

int master_call(struct master *m, int script, int argc, const char **argv, const size_t *argvlen,
                master_reply_fn *fn, void *arg)
{
	struct mreq *r;

	if (m->state != MS_UP || m->cl)
		return -1; /* a cluster entry's calls need their slots: master_call_at */
	if (script_batch_of((enum script_id)script) < 0) {
		flush_pend(m, 0); /* keep the order of everything else */
		return call_any(m, script, argc, argv, argvlen, fn, arg);
	}
	if (!m->ac || m->inflight.len + m->pend.len >= MAX_INFLIGHT ||
	    !(r = req_new(m, script, argc, argv, argvlen, fn, arg)))
		return -1;
	r->nkeys = strtoul(argv[2], NULL, 10);
	ilist_push(&m->pend, &r->link);
	mark_dirty(m);
	return 0;
}

int master_call_at(struct master *m, const unsigned *slots, int nslots, int script, int argc,
                   const char **argv, const size_t *argvlen, master_reply_fn *fn, void *arg)
{
	if (!m->cl)
		return master_call(m, script, argc, argv, argvlen, fn, arg);
	if (m->state != MS_UP)
		return -1;
	return mcl_call(m->cl, slots, nslots, script, argc, argv, argvlen, fn, arg);
}

int masters_any_cluster(void)
{
	return any_cluster;
}

/* --- the name, the connection epoch, the marker, going up --- */

/* A name that did not reach the master: WHO elsewhere says "-" for this
 * lockd's holds there until the next handshake or epoch refresh. */
static void name_cb(struct master *m, redisReply *r, void *arg)
{
	if (r && r->type == REDIS_REPLY_ERROR)
		log_warn("master %s: writing this lockd's name: %s", m->name, r->str);
}

static void send_name(struct master *m)
{
	static const char *argv[5];
	static size_t len[5];
	static char tagged[sizeof(name_key) + KTAG_LEN_MAX + 3];
	if (!lockd_name || !lockd_name[0] || !name_key[0])
		return;
	argv[0] = "SET";
	argv[1] = name_key;
	argv[2] = lockd_name;
	argv[3] = "PX";
	argv[4] = NAME_EXPIRE_MS;
	unsigned slot = csl_keyslot(name_key, strlen(name_key));
	if (m->cl) { /* in the slot of the key itself, tagged: rlwho.c reads it there */
		snprintf(tagged, sizeof(tagged), "{%s}%s", ktag_of_slot(slot), name_key);
		argv[1] = tagged;
	}
	for (int i = 0; i < 5; i++)
		len[i] = strlen(argv[i]);
	if (m->cl) /* the router copies the command */
		master_call_at(m, &slot, 1, -1, 5, argv, len, name_cb, NULL);
	else
		call_any(m, -1, 5, argv, len, name_cb, NULL); /* hiredis copies the command */
}

/* Raise the master's epoch key to this connection's epoch (m->gen), and
 * write this lockd's name with it. */
static void send_gen(struct master *m, master_reply_fn *fn)
{
	m->gen_argv[GA_NKEYS] = "1";
	m->gen_argv[GA_KEY] = gen_key;
	m->gen_argv[GA_EPOCH] = m->gen;
	m->gen_argv[GA_EXPIRE] = SCR_GEN_EXPIRE_MS;
	for (int i = GA_NKEYS; i < GA_ARGC; i++)
		m->gen_len[i] = strlen(m->gen_argv[i]);
	m->gen_at_us = now_us();
	call_any(m, SCR_GEN, GA_ARGC, m->gen_argv, m->gen_len, fn, NULL);
	send_name(m);
}

/* A refresh that failed is tried again with the next request; until the
 * key is back, the master takes no token of ours for stale (safe). */
static void gen_cb(struct master *m, redisReply *r, void *arg)
{
	if (r && r->type != REDIS_REPLY_INTEGER) {
		log_warn("master %s: the connection epoch: %s", m->name,
		         r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
		m->gen_at_us = 0;
	}
}

/* The handshake's epoch: the next one, taken before any request on this
 * connection (see master_epoch). */
/* The next connection epoch: at each handshake, and when a cluster
 * entry's router loses a node connection (mcluster.c). */
static void epoch_next(void)
{
	snprintf(epoch_str, sizeof(epoch_str), "%0*llu", MASTER_EPOCH_LEN,
	         (unsigned long long)++epoch);
}

static void hs_gen(struct master *m, master_reply_fn *fn)
{
	epoch_next();
	memcpy(m->gen, epoch_str, sizeof(epoch_str));
	send_gen(m, fn);
}

const char *master_epoch(void)
{
	return epoch_str;
}

static void marker_cb(struct master *m, redisReply *r, void *arg)
{
	if (r && r->type != REDIS_REPLY_ERROR)
		m->has_marker = 1;
}

/* The marker says "this master has counted, so it holds lockd's data"; its
 * user writes it only once a master counts, never before. */
void master_set_marker(struct master *m)
{
	static const char *argv[3];
	static size_t len[3];
	argv[0] = "SET";
	len[0] = 3;
	argv[1] = marker_key;
	len[1] = strlen(marker_key);
	argv[2] = "1";
	len[2] = 1;
	if (m->cl && !m->has_marker) {
		mcl_set_marker(m->cl); /* has_marker once every slot has it: cl_marked */
	} else if (!m->has_marker) {
		call_any(m, -1, 3, argv, len, marker_cb, NULL);
	}
}

static void go_up(struct master *m)
{
	set_state(m, MS_UP);
	m->backoff_ms = 10;
	m->last_error[0] = '\0';
	if (m->sn)
		log_info("master %s up (%s)", m->name, m->node);
	else
		log_info("master %s up", m->name);
	m->sub_backoff_ms = 10;
	sub_start(m);
	int restarted = m->restarted;
	m->restarted = 0;
	restarted = mrepl_restart(m, restarted);
	snprintf(m->up_node, sizeof(m->up_node), "%s", m->node);
	m->replicas = m->hs_replicas;
	memcpy(m->replica_nodes, m->hs_replica_nodes, sizeof(m->replica_nodes));
	m->role_at_us = m->role_seen_us = now_us(); /* the handshake's ROLE, just answered */
	if (opts.on_up)
		opts.on_up(m, restarted, m->has_marker);
	arm_timer(m);
}

/* The handshake is done, but connections of another layout are still
 * listed (master_hs.c polls): not up, not used, and no handshake deadline
 * (the wait may last as long as they do); a poll that goes unanswered
 * drops it, as a request of an up master would. */
static void go_wait(struct master *m)
{
	set_state(m, MS_LAYOUT_WAIT);
	arm_timer(m);
}

static void connect_cb(const redisAsyncContext *cac, int status)
{
	struct master *m = cac->data;
	redisAsyncContext *ac = (redisAsyncContext *)cac;

	if (!m)
		return;
	if (status != REDIS_OK) {
		m->ac = NULL; /* hiredis frees it after this callback */
		ac->data = NULL;
		master_drop(m, ac->errstr[0] ? ac->errstr : "connect failed", 0);
		return;
	}
	set_state(m, MS_HANDSHAKE);
	mhs_start(m);
	arm_timer(m);
}

static void disconnect_cb(const redisAsyncContext *ac, int status)
{
	struct master *m = ac->data;
	if (!m || m->ac != ac)
		return;
	m->ac = NULL;
	master_drop(m, ac->errstr[0] ? ac->errstr : "disconnected", 0);
}

static void start_connect(struct master *m)
{
	snprintf(m->node, sizeof(m->node), strchr(m->addr.host, ':') ? "[%s]:%d" : "%s:%d",
	         m->addr.host, m->addr.port);
	redisAsyncContext *ac = redisAsyncConnect(m->addr.host, m->addr.port);

	if (!ac || ac->err) {
		char why[160];
		snprintf(why, sizeof(why), "connect: %s", ac ? ac->errstr : "out of memory");
		if (ac)
			redisAsyncFree(ac);
		master_drop(m, why, 0);
		return;
	}
	ac->data = m;
	m->ac = ac;
	redisLibeventAttach(ac, base);
	persistent_reads(ac);
	watch_writes(ac);
	lib_del_write = ac->ev.delWrite;
	ac->ev.delWrite = stamp_written;
	redisAsyncSetConnectCallback(ac, connect_cb);
	redisAsyncSetDisconnectCallback(ac, disconnect_cb);
	m->reconnects++;
	set_state(m, MS_CONNECTING);
	arm_timer(m);
}

/* A cluster entry's router covers every slot (mcluster.c) and its
 * markers were read: up. Its restarts while lockd runs are the router's
 * (a node's run_id, a promotion without every counted write); at startup,
 * the markers' (one in every slot, mcluster.c). */
/* A cluster entry's subscriber goes to a live primary (master.h,
 * sub_where): PUBLISH reaches every node of a cluster. */
static void cl_sub_where(struct master *m)
{
	char node[sizeof(m->node)];
	if (mcl_any_node(m->cl, node, sizeof(node)) && addr_parse(node, 0, 0, &m->addr) == 0)
		snprintf(m->node, sizeof(m->node), "%s", node);
}

static void cl_up(struct master *m, int restarted, int has_marker)
{
	cl_sub_where(m); /* the subscriber's node, before it starts below */
	set_state(m, MS_UP);
	m->last_error[0] = '\0';
	m->has_marker = has_marker;
	send_name(m); /* WHO on every lockd names this one's holds (1.4) */
	log_info("master %s up (cluster, subscribed through %s)%s%s", m->name, m->node,
	         restarted ? ": a node may have lost data" : "",
	         has_marker ? "" : ": a primary lacks lockd's marker");
	snprintf(m->prev_run_id, sizeof(m->prev_run_id), "%s", m->run_id);
	if (restarted) /* a run_id of the entry as a whole, in the 8 characters logs show */
		snprintf(m->run_id, sizeof(m->run_id), "cl%06llu",
		         (unsigned long long)++m->reconnects % 1000000);
	m->sub_backoff_ms = 10;
	sub_start(m);
	if (opts.on_up)
		opts.on_up(m, restarted, has_marker);
}

static void cl_marked(struct master *m)
{
	m->has_marker = 1;
}

static void cl_down(struct master *m, const char *why)
{
	if (m->state == MS_UP)
		log_warn("master %s down: %s", m->name, why);
	snprintf(m->last_error, sizeof(m->last_error), "%s", why);
	set_state(m, MS_DOWN);
	sub_close(m, 1);
	if (opts.on_down && !shutting_down)
		opts.on_down(m);
}

static const struct mcl_ops cl_ops = {cl_up, cl_down, master_epoch, epoch_next, cl_marked};

/* A sentinel entry: the Sentinels named its primary (or none did). */
static void resolved_cb(struct master *m, const char *host, int port, const char *why)
{
	if (m->state != MS_RESOLVING)
		return;
	if (!host) {
		master_drop(m, why, 0);
		return;
	}
	if (!(strcmp(m->addr.host, host) == 0 && m->addr.port == port))
		log_info("master %s: the Sentinels name %s:%d as the primary", m->name, host, port);
	snprintf(m->addr.host, sizeof(m->addr.host), "%s", host);
	m->addr.port = port;
	start_connect(m);
}

/* The Sentinels announced a failover: a connection to another node is
 * dropped at once (the old primary may accept writes for seconds), and
 * the primary resolved again. */
static void switch_cb(struct master *m, const char *host, int port)
{
	if (m->state == MS_DOWN || m->state == MS_RESOLVING)
		return; /* resolves by itself when it reconnects */
	if (strcmp(m->addr.host, host) == 0 && m->addr.port == port)
		return;
	m->backoff_ms = 10;
	master_drop(m, "+switch-master: the Sentinels moved the primary", 1);
}

static void reconnect_cb(evutil_socket_t fd, short what, void *arg)
{
	struct master *m = arg;
	if (!m->sn) {
		start_connect(m);
		return;
	}
	set_state(m, MS_RESOLVING);
	sn_resolve(m->sn, resolved_cb);
}

/* What master_repl.c does with the requests it makes (WAIT, ROLE) and
 * the answers it judges: master.c's own, handed down. */
static const struct mrepl_ops repl_ops = {send_req, req_answer, call_any, master_drop, mhs_fail};
/* And what the handshake does with them. */
static const struct mhs_ops hs_ops = {call_any, master_drop, hs_gen, go_up, go_wait};

int masters_init(struct event_base *b, char **names, int n, const struct master_opts *o)
{
	base = b;
	opts = *o;
	opts.password = strdup(o->password);
	opts.prefix = NULL; /* the config's copy goes away on reload; used only here */
	opts.sentinel = NULL;
	opts.cluster = NULL;           /* mcl_new copies them */
	opts.sentinel_password = NULL; /* sn_new copies them */
	mrepl_init(&repl_ops);
	mrepl_set_opts(&opts);
	nmasters = n;
	masters = calloc((size_t)n, sizeof(*masters));
	ilist_init(&dirtyq);
	flush_ev = event_new(base, -1, 0, flush_cb, NULL);
	if (!masters || !flush_ev)
		return -1;
	snprintf(marker_key, sizeof(marker_key), "%s marker", o->prefix);
	snprintf(gen_key, sizeof(gen_key), "%s", o->gen_key ? o->gen_key : "");
	opts.gen_key = NULL;
	snprintf(name_key, sizeof(name_key), "%s", o->name_key ? o->name_key : "");
	opts.name_key = NULL;
	free(lockd_name);
	lockd_name = strdup(o->name ? o->name : "");
	opts.name = NULL;
	mhs_init(&hs_ops, &opts, marker_key, o->prefix, o->instance);
	sub_init(base, &opts, &shutting_down, o->prefix, o->instance);
	opts.instance = NULL;
	for (int i = 0; i < n; i++) {
		struct master *m = &masters[i];
		m->idx = i;
		m->name = strdup(names[i]);
		ilist_init(&m->inflight);
		ilist_init(&m->pend);
		m->timer = evtimer_new(base, timer_cb, m);
		m->retry = evtimer_new(base, reconnect_cb, m);
		m->sub_timer = evtimer_new(base, sub_timer_cb, m);
		m->layout_timer = evtimer_new(base, mhs_poll_cb, m);
		m->backoff_ms = 10;
		snprintf(m->node, sizeof(m->node), "-");
		snprintf(m->layout, sizeof(m->layout), "-");
		const struct cfg_sentinel *c = o->sentinel ? &o->sentinel[i] : NULL;
		const struct master_cluster *k = o->cluster ? &o->cluster[i] : NULL;
		if (k && k->nseeds > 0) {
			char err[256];
			struct mcl_cfg cc = {k->seeds,      marker_key,    k->nseeds,
			                     opts.password, o->timeout_ms, (int)o->wait_replicas};
			m->sub_where = cl_sub_where;
			if (!(m->cl = mcl_new(m, base, &cc, &cl_ops, err, sizeof(err)))) {
				log_error("master %s: %s", m->name, err);
				return -1;
			}
			any_cluster = 1;
			set_state(m, MS_CONNECTING);
		} else if (c && c->nseeds > 0) {
			struct sn_opts so = {o->sentinel_password ? o->sentinel_password : "",
			                     o->timeout_ms, o->reconnect_max_ms, switch_cb};
			if (!(m->sn = sn_new(base, m, c, &so)))
				return -1;
			reconnect_cb(-1, 0, m);
		} else {
			if (addr_parse(names[i], 0, 0, &m->addr))
				return -1;
			start_connect(m);
		}
		m->reconnects = 0;
	}
	return 0;
}

void masters_set_opts(const struct master_opts *o)
{
	if (any_cluster && o->wait_replicas != opts.wait_replicas)
		log_warn(
		    "redis.wait_replicas: cluster entries keep %lld until lockd restarts (their "
		    "routers judge a failover by the value their writes were counted under)",
		    (long long)opts.wait_replicas);
	opts.timeout_ms = o->timeout_ms;
	opts.reconnect_max_ms = o->reconnect_max_ms;
	opts.wait_replicas = o->wait_replicas;
	mrepl_set_opts(&opts);
	for (int i = 0; i < nmasters; i++)
		if (masters[i].cl)
			mcl_set_opts(masters[i].cl, o->timeout_ms);
	if (o->name && (!lockd_name || strcmp(o->name, lockd_name) != 0)) {
		char *n = strdup(o->name);
		if (!n)
			return;
		free(lockd_name);
		lockd_name = n;
		for (int i = 0; i < nmasters; i++)
			if (masters[i].state == MS_UP)
				send_name(&masters[i]);
	}
}

void masters_shutdown(void)
{
	shutting_down = 1;
	/* Every master is closed before any is freed: a call failed by one
	 * master's close (a catch-up reading from it) may still name another
	 * master in its callback. */
	for (int i = 0; i < nmasters; i++) {
		struct master *m = &masters[i];
		event_del(m->retry);
		if (m->ac || m->sub)
			master_drop(m, "shutting down", 1);
		if (m->cl)
			mcl_close(m->cl); /* its calls fail now, as a connection's do */
	}
	for (int i = 0; i < nmasters; i++) {
		struct master *m = &masters[i];
		event_del(m->retry);
		sn_free(m->sn);
		m->sn = NULL;
		mcl_free(m->cl);
		m->cl = NULL;
		event_free(m->retry);
		event_free(m->timer);
		event_free(m->sub_timer);
		event_free(m->layout_timer);
		free(m->name);
	}
	free((char *)opts.password);
	free(lockd_name);
	lockd_name = NULL;
	free(masters);
	if (flush_ev)
		event_free(flush_ev);
	flush_ev = NULL;
	mfmt_free();
	masters = NULL;
	nmasters = 0;
	any_cluster = 0;
	mreq_destroy();
}

int masters_count(void)
{
	return nmasters;
}

struct master *master_get(int i)
{
	return &masters[i];
}

int masters_up(void)
{
	return masters_in(MS_UP);
}

int masters_in(enum master_state s)
{
	int n = 0;
	for (int i = 0; i < nmasters; i++)
		n += masters[i].state == s;
	return n;
}
