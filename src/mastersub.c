/* mastersub: a master's pub/sub subscriber, the second connection that
 * subscribes to the channels of released-key notices and of election
 * changes (enum sub_state) while its master is up.
 *
 * A master restarts its pub/sub connections on its own terms (CLIENT KILL
 * TYPE pubsub, an output buffer limit) and a network can cut one
 * silently: the subscriber is then made again with the same capped
 * backoff as the command connection (master.c), which answers fine and is
 * left alone with its calls. lockd writes nothing on the subscriber
 * otherwise, so a PING when it has been quiet for master_slow_ms() proves
 * it alive; one unanswered for as long is a cut connection. Each
 * subscribe calls opts->on_subscribed: notices sent before it may have
 * been missed, and waiters asleep on one must ask again.
 *
 * master.c starts it when its master goes up (sub_start) and ends it when
 * the master goes down (sub_close). Calls go that way only: the subscriber
 * calls nothing of master.c's; it reads what masters_init handed it
 * (sub_init) and uses the timing helpers of master_int.h. */
#include "config.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>

#include "log.h"
#include "master.h"
#include "master_int.h"

static struct event_base *base;
static const struct master_opts *opts; /* master.c's: masters_set_opts reaches it */
static const int *closing;             /* master.c's: masters_shutdown is under way */
static char channel[128];
static char elected[128]; /* election notices (1.3) */
/* The subscriber's name, "lockd-sub-<instance>": an operator's CLIENT LIST
 * tells whose it is. Not "lockd-l<LAYOUT>-...", the command connection's
 * (master_hs.c): a build of another layout waits until no connection of
 * that name is left on a master before it grants there, and must not
 * wait for a subscriber, which never grants and reads no layout: it only
 * wakes waiters, who then ask the masters that count. It exists only
 * while its master's command connection is up (sub_start from go_up,
 * sub_close from master_drop), so a master refused for its layout has
 * none. A refused name costs nothing here: its answer is not even read. */
static char sub_name[64];

void sub_init(struct event_base *b, const struct master_opts *o, const int *shutting_down,
              const char *prefix, const char *instance)
{
	snprintf(sub_name, sizeof(sub_name), "lockd-sub-%s", instance ? instance : "");
	base = b;
	opts = o;
	closing = shutting_down;
	snprintf(channel, sizeof(channel), "%s released", prefix);
	snprintf(elected, sizeof(elected), "%s elected", prefix);
}

static void sub_set_state(struct master *m, enum sub_state st)
{
	m->sub_state = st;
	m->sub_since_us = now_us();
}

/* Let go of the subscriber, if any, and make none: SUB_OFF. free_ctx is 0
 * when hiredis is already tearing the context down. */
void sub_close(struct master *m, int free_ctx)
{
	redisAsyncContext *s = m->sub;
	m->sub = NULL;
	sub_set_state(m, SUB_OFF);
	if (m->sub_timer)
		event_del(m->sub_timer);
	if (s) {
		s->data = NULL; /* its callbacks, run by the free, find no master */
		if (free_ctx)
			redisAsyncFree(s);
	}
}

/* The subscriber is gone (why): while the master is up, make another
 * after a backoff. The command connection and its calls stay as they are. */
static void sub_lost(struct master *m, const char *why, int free_ctx)
{
	enum sub_state was = m->sub_state;
	sub_close(m, free_ctx);
	if (*closing || m->state != MS_UP)
		return;
	if (was == SUB_UP)
		log_warn("master %s: subscriber lost (%s): subscribing again", m->name, why);
	else
		log_debug("master %s: subscriber: %s", m->name, why);
	sub_set_state(m, SUB_WAIT);
	master_backoff_arm(opts, m->sub_timer, &m->sub_backoff_ms);
}

/* Arm sub_timer for the subscriber's next deadline or PING. */
static void sub_arm(struct master *m)
{
	int64_t limit = master_slow_ms(opts) * 1000;
	if (m->sub_state == SUB_CONNECTING)
		master_timer_at(m->sub_timer, m->sub_since_us + limit);
	else if (m->sub_state == SUB_UP)
		master_timer_at(m->sub_timer,
		                (m->sub_ping_us ? m->sub_ping_us : m->sub_heard_us) + limit);
}

/* Every read of the subscriber is a sign of life: a notice, the answer to
 * SUBSCRIBE or to a PING. Hooked in front of the adapter's read event. */
static void sub_read_event(evutil_socket_t fd, short what, void *arg)
{
	redisLibeventEvents *e = arg;
	struct master *m = e->context->data;
	if (m)
		m->sub_heard_us = now_us();
	redisAsyncHandleRead(e->context);
}

/* Bytes (or the end) wait on the subscriber's socket: our own loop was
 * busy, not the connection cut. */
static int sub_readable(const struct master *m)
{
	struct pollfd p = {.fd = m->sub->c.fd, .events = POLLIN};
	return poll(&p, 1, 0) > 0;
}

static void sub_ping(struct master *m)
{
	redisAsyncContext *s = m->sub;
	/* Not redisAsyncCommand: in subscribed mode hiredis 0.14 files the
	 * callback of any other command under invalid commands, and routes
	 * the PONG (an array in RESP2) to the channel callbacks instead, so
	 * that callback would never run and they would pile up. The PONG's
	 * bytes are what counts (sub_read_event); hiredis drops the reply. */
	if (redisAppendCommand(&s->c, "PING") != REDIS_OK) {
		sub_lost(m, "PING: out of memory", 1);
		return;
	}
	m->sub_ping_us = now_us();
	s->ev.addWrite(s->ev.data); /* written from the loop, as hiredis does */
}

void sub_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct master *m = arg;
	int64_t now = now_us(), limit = master_slow_ms(opts) * 1000;

	switch (m->sub_state) {
	case SUB_OFF:
		return;
	case SUB_WAIT:
		m->sub_reconnects++;
		sub_start(m);
		return;
	case SUB_CONNECTING:
		if (now - m->sub_since_us >= limit) {
			sub_lost(m, "subscribe timed out", 1);
			return;
		}
		break;
	case SUB_UP:
		if (m->sub_ping_us && m->sub_heard_us > m->sub_ping_us) {
			m->sub_ping_us = 0; /* answered: it stays up, so the next loss is news */
			m->sub_backoff_ms = 10;
		}
		if (m->sub_ping_us && now - m->sub_ping_us >= limit) {
			if (!sub_readable(m)) {
				char why[80];
				snprintf(why, sizeof(why), "no answer to PING in %lld ms",
				         (long long)(now - m->sub_ping_us) / 1000);
				sub_lost(m, why, 1);
				return;
			}
			m->sub_heard_us = now; /* the loop reads it next */
			m->sub_ping_us = 0;
		}
		if (!m->sub_ping_us && now - m->sub_heard_us >= limit) {
			sub_ping(m);
			if (m->sub_state != SUB_UP)
				return;
		}
		break;
	}
	sub_arm(m);
}

static void sub_msg_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct master *m = ac->data;
	redisReply *r = reply;

	if (!m || m->sub != ac)
		return;
	if (!r) { /* hiredis tears the context down: it frees it */
		sub_lost(m, ac->errstr[0] ? ac->errstr : "connection lost", 0);
		return;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
	    r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
		return;
	int el = strcmp(r->element[1]->str, elected) == 0;
	/* ["message", channel, key]: a release, or an election's change (1.3) */
	if (strcmp(r->element[0]->str, "message") == 0) {
		if (r->element[2]->type != REDIS_REPLY_STRING)
			return;
		if (el && opts->on_elected)
			opts->on_elected(r->element[2]->str, r->element[2]->len);
		else if (!el && opts->on_notice)
			opts->on_notice(r->element[2]->str, r->element[2]->len);
		return;
	}
	/* ["subscribe", channel, count], for each channel in turn: notices
	 * flow from the last one (the elections') on */
	if (strcmp(r->element[0]->str, "subscribe") == 0 && el && m->sub_state == SUB_CONNECTING) {
		if (m->sub_reconnects)
			log_info("master %s: subscribed again", m->name);
		sub_set_state(m, SUB_UP);
		m->sub_ping_us = 0;
		sub_arm(m);
		if (opts->on_subscribed)
			opts->on_subscribed(m);
	}
}

static void sub_disconnect_cb(const redisAsyncContext *ac, int status)
{
	struct master *m = ac->data;
	if (m && m->sub == ac)
		sub_lost(m, ac->errstr[0] ? ac->errstr : "disconnected", 0);
}

static void sub_connect_cb(const redisAsyncContext *ac, int status)
{
	struct master *m = ac->data;
	if (status != REDIS_OK && m && m->sub == ac) /* hiredis frees it after this callback */
		sub_lost(m, ac->errstr[0] ? ac->errstr : "connect failed", 0);
}

void sub_start(struct master *m)
{
	if (m->sub_where)
		m->sub_where(m);
	redisAsyncContext *s = redisAsyncConnect(m->addr.host, m->addr.port);
	if (!s || s->err) {
		char why[160];
		snprintf(why, sizeof(why), "connect: %s", s ? s->errstr : "out of memory");
		if (s)
			redisAsyncFree(s);
		sub_lost(m, why, 0);
		return;
	}
	s->data = m;
	redisLibeventAttach(s, base);
	redisLibeventEvents *e = s->ev.data;
	event_del(e->rev);
	event_assign(e->rev, base, s->c.fd, EV_READ, sub_read_event, e);
	event_add(e->rev, NULL);
	redisAsyncSetConnectCallback(s, sub_connect_cb);
	redisAsyncSetDisconnectCallback(s, sub_disconnect_cb);
	m->sub = s;
	sub_set_state(m, SUB_CONNECTING);
	m->sub_ping_us = 0;
	m->sub_heard_us = now_us();
	if (opts->password[0])
		redisAsyncCommand(s, NULL, NULL, "AUTH %s", opts->password);
	redisAsyncCommand(s, NULL, NULL, "CLIENT SETNAME %s", sub_name);
	redisAsyncCommand(s, sub_msg_cb, NULL, "SUBSCRIBE %s %s", channel, elected);
	sub_arm(m);
}
