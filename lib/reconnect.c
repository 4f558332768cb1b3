/* reconnect: the I/O of a liblockd client reaching lockd again (private;
 * see client_int.h). When a connection breaks (CS_BROKEN; client.c calls
 * in at its next safe point) it decides what follows: while connecting,
 * the next address with the same requests; for a resumable session, the
 * RESUMING event, rounds of attempts over the addresses with a growing
 * pause between them, each attempt's AUTH and RESUME put in front of the
 * queue, then on RESUME's OK the ERR DISCONNECTED answers for what the
 * break left unanswered, the requests held back in rz.later sent, and
 * RESUMED; on ERR NOSESSION or at the end of the grace, LOST for each key
 * the session held and LOCKD_ENOSESSION. SESSION's answer is read here
 * too. It is apart from resume.c so that resume.c stays pure (the
 * session's state: no I/O, no callbacks), and apart from client.c so
 * that the ordinary life of a connection reads without it. It sits below
 * client.c: it works on the buffers and queue through queue.c and hands
 * replies and events up through c->ops (struct cli_ops, filled by
 * client.c), the way lockd's own are handed. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_int.h"
#include "reply.h"

/* An event of the library's own making (resume), as if lockd sent it. */
static void hand_event(struct lockd_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void hand_event(struct lockd_client *c, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	c->ops->event(c, line, (size_t)n);
}

/* The session is gone: report each key it held LOST, then fail. */
static void give_up(struct lockd_client *c, const char *why)
{
	struct rz *rz = c->rz;
	char msg[sizeof(c->err)];
	snprintf(msg, sizeof(msg), "%s", why);
	rz->st = RZ_OVER;
	if (c->st == CS_BROKEN)
		c->st = CS_DOWN; /* so that cli_fail fails */
	struct holds *hs = c->holds;
	while (hs && hs->n > 0 && c->st != CS_FAILED) {
		/* one that its deadline reported already is not handed again */
		size_t before = hs->n;
		char key[LOCKD_MAX_KEY + 1];
		snprintf(key, sizeof(key), "%s", hs->h[0].key);
		hand_event(c, "LOST %s %llu", key, (unsigned long long)hs->h[0].fence);
		if (hs->n == before)
			rz_hold_del(hs, &hs->h[0]); /* a key too long for hand_event's line */
	}
	cli_fail(c, LOCKD_ENOSESSION, "%s", msg);
}

/* Close the broken connection and forget what was read or queued on it. */
static void conn_reset(struct lockd_client *c)
{
	ctls_free(c);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->in.len = c->in.off = 0;
	c->scan = 0;
	c->eof = 0;
	c->send_errno = 0;
	if (c->out.p)
		memset(c->out.p, 0, c->out.cap); /* may hold AUTH and RESUME */
	c->out.len = c->out.off = 0;
	c->in_list = 0;
	cli_rs_reset(&c->acc);
	c->wrote = 0;
	c->authed = 1;
	c->connect_deadline_us = 0;
}

/* Connect to address i of c->rz (the connect deadline starts now). */
void cli_connect_ep(struct lockd_client *c, int i)
{
	struct lockd_opts o;
	rz_ep_opts(c->rz, i, &o);
	c->naddr = 0;
	c->ai = 0;
	if (c->connect_timeout_ms > 0)
		c->connect_deadline_us = cli_now_us() + (int64_t)c->connect_timeout_ms * 1000;
	if (net_resolve(c, &o) == 0 && net_start_tls(c, &o, 0) == 0)
		net_connect_next(c);
}

/* Append a line to the output (an internal request: its entry is pushed
 * in front of the queue with push_internal). */
static int out_line(struct lockd_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int out_line(struct lockd_client *c, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line) - 1 || cli_buf_reserve(&c->out, (size_t)n + 1) != 0)
		return cli_fail(c, LOCKD_ENOMEM, "out of memory");
	line[n] = '\n';
	memcpy(c->out.p + c->out.len, line, (size_t)n + 1);
	c->out.len += (size_t)n + 1;
	memset(line, 0, sizeof(line));
	return 0;
}

/* Queue an internal request before all others. */
static int push_internal(struct lockd_client *c, enum who who, const char *cmd)
{
	struct pend *p = cli_q_push_front(c);
	if (!p)
		return cli_fail(c, LOCKD_ENOMEM, "out of memory");
	p->who = (unsigned char)who;
	p->sent_us = cli_now_us();
	p->timeout_ms = -1;
	snprintf(p->cmd, sizeof(p->cmd), "%s", cmd);
	c->nint++;
	return 0;
}

/* One attempt to resume: connect to the next address, AUTH, RESUME. */
static void attempt(struct lockd_client *c)
{
	struct rz *rz = c->rz;
	rz->st = RZ_TRYING;
	int i = (rz->ep + rz->tried) % rz->nep;
	/* in front of the requests that wait: AUTH, RESUME */
	if (push_internal(c, W_RESUME, "RESUME") != 0)
		return;
	if (rz->o.password) {
		if (push_internal(c, W_AUTH, "AUTH") != 0 ||
		    out_line(c, "AUTH %s", rz->o.password) != 0)
			return;
		c->authed = 0;
	}
	if (out_line(c, "RESUME %s %s", rz->id, rz->secret) != 0)
		return;
	cli_connect_ep(c, i);
	if (c->connect_deadline_us == 0 || c->connect_deadline_us > rz->deadline_us)
		c->connect_deadline_us = rz->deadline_us;
}

/* c->st is CS_DOWN: when the pause after a failed round is over, the next
 * attempt. */
void cli_resume_due(struct lockd_client *c)
{
	if (c->rz->st != RZ_WAIT || cli_now_us() < c->rz->next_us)
		return;
	attempt(c);
	if (c->st == CS_BROKEN)
		cli_on_break(c);
}

/* c->st is CS_BROKEN: connect to the next address (connecting), or start
 * resuming (the session's connection broke), or go on with it. */
void cli_on_break(struct lockd_client *c)
{
	struct rz *rz = c->rz;
	char why[sizeof(rz->why) + 64];
	while (c->st == CS_BROKEN) {
		int64_t now = cli_now_us();
		if (rz->st == RZ_NONE) {
			/* connecting, nothing written: the next address, same requests */
			ctls_free(c);
			if (c->fd >= 0)
				close(c->fd);
			c->fd = -1;
			c->st = CS_CONNECTING;
			cli_connect_ep(c, ++rz->tried);
			continue;
		}
		if (rz->st == RZ_LIVE) {
			snprintf(rz->was, sizeof(rz->was), "%s", c->peer);
			conn_reset(c);
			for (size_t i = 0; i < c->qlen; i++)
				cli_q_at(c, i)->dead = 1;
			rz->broke_us = now;
			rz->deadline_us = now + (int64_t)rz->grace_ms * 1000;
			rz->tried = 0;
			rz->backoff_us = 100000;
			rz->st = RZ_WAIT;
			c->st = CS_DOWN;
			hand_event(c, "RESUMING %s %s", rz->was, rz->why);
			if (c->st == CS_FAILED || c->close_pending)
				return;
		} else {
			/* an attempt failed: its AUTH and RESUME go with it */
			conn_reset(c);
			while (c->qlen && cli_is_internal(cli_q_at(c, 0)->who)) {
				free(cli_q_at(c, 0)->key);
				cli_q_pop(c);
			}
			rz->tried++;
			c->st = CS_DOWN;
		}
		if (now >= rz->deadline_us) {
			snprintf(why, sizeof(why),
			         "no lockd resumed the session within its grace (%d ms); last: %s",
			         rz->grace_ms, rz->why);
			give_up(c, why);
			return;
		}
		if (rz->tried >= rz->nep) {
			/* a round of every address failed: pause, then again */
			rz->tried = 0;
			rz->next_us = now + rz->backoff_us;
			if (rz->next_us > rz->deadline_us)
				rz->next_us = rz->deadline_us;
			rz->backoff_us =
			    rz->backoff_us * 2 > 2000000 ? 2000000 : rz->backoff_us * 2;
			rz->st = RZ_WAIT;
			return;
		}
		attempt(c);
	}
}

void cli_handle_session(struct lockd_client *c, const char *line)
{
	char e[128];
	if (rz_session_reply(c->rz, line) == 0) {
		c->rz->st = RZ_LIVE;
		c->rz->tried = 0;
		return;
	}
	c->rz->st = RZ_OVER;
	rp_escape(e, sizeof(e), line, strlen(line));
	cli_fail(c, LOCKD_ENOSESSION, "SESSION refused by %s: \"%s\"", c->peer, e);
}

void cli_handle_resume(struct lockd_client *c, const char *line)
{
	struct rz *rz = c->rz;
	char e[128], msg[1024];
	rp_escape(e, sizeof(e), line, strlen(line));
	if (strncmp(line, "ERR NOSESSION", 13) == 0) {
		snprintf(msg, sizeof(msg), "RESUME on %s: \"%s\": every lock is lost", c->peer, e);
		give_up(c, msg);
		return;
	}
	if (!(strncmp(line, "OK", 2) == 0 && (line[2] == '\0' || line[2] == ' '))) {
		cli_fail(c, LOCKD_ECLOSED, "RESUME on %s: \"%s\"", c->peer, e);
		return; /* broken: the next address */
	}
	rz->st = RZ_LIVE;
	rz->ep = (rz->ep + rz->tried) % rz->nep;
	rz->tried = 0;
	rz->resumes++;
	c->connect_deadline_us = 0;
	/* what was sent on the broken connection is answered now, in order */
	int n = snprintf(msg, sizeof(msg),
	                 "ERR DISCONNECTED the connection to %s broke before the reply; "
	                 "the session was resumed on %s",
	                 rz->was, c->peer);
	if (n < 0 || (size_t)n >= sizeof(msg))
		n = (int)sizeof(msg) - 1;
	while (c->qlen && cli_q_at(c, 0)->dead && c->st != CS_FAILED && !c->close_pending) {
		cli_rs_reset(&c->acc);
		if (cli_rs_add(&c->acc, msg, (size_t)n) != 0) {
			cli_fail(c, LOCKD_ENOMEM, "out of memory");
			return;
		}
		c->ops->reply_done(c);
	}
	/* what was sent while resuming goes out now, with fresh deadlines */
	int64_t now = cli_now_us();
	for (size_t i = 0; i < c->qlen; i++) {
		struct pend *p = cli_q_at(c, i);
		if (p->timeout_ms >= 0)
			p->deadline_us = now + (int64_t)p->timeout_ms * 1000;
	}
	struct buf *l = &rz->later;
	if (l->len > l->off) {
		if (cli_buf_reserve(&c->out, l->len - l->off) != 0) {
			cli_fail(c, LOCKD_ENOMEM, "out of memory");
			return;
		}
		memcpy(c->out.p + c->out.len, l->p + l->off, l->len - l->off);
		c->out.len += l->len - l->off;
		memset(l->p, 0, l->len);
	}
	l->len = l->off = 0;
	/* the holds' deadlines kept running: confirm them at once */
	if (c->holds && c->holds->deadlines)
		c->holds->beat_us = now;
	hand_event(c, "RESUMED %s %s", c->peer, line[2] ? line + 3 : "0");
}
