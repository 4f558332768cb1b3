/* liblockd: the public API of the client of lockd's text protocol (see
 * lockd/client.h; client_int.h draws liblockd's files).
 *
 * A client owns one non-blocking socket, an output buffer, an input
 * buffer, and the queue of requests sent and not answered yet (each knows
 * whether its reply is one line or a list closed by END). Complete input
 * lines are taken one by one (shown first to the line callback, which may
 * take them): a LOST line is an event wherever it comes; any other line
 * belongs to the request at the head of the queue. Which line is what is
 * reply.c's to say. The lines of the reply being read are copied into
 * "acc"; a reply that a lockd_call() waits for is handed over by swapping
 * acc with "res", so it outlives the step that read it without a copy.
 * No allocation per request once the buffers have grown to the traffic.
 * The buffers and the queue themselves are queue.c's. Connecting and the
 * bytes on the wire (plain or TLS) are net.c's; what follows a broken
 * connection (the next address, the resume of a session) is
 * reconnect.c's, called at the safe points of lockd_step() and
 * lockd_connect_start(); it hands its replies and events back up through
 * the struct cli_ops that client_new() puts in every client.
 *
 * The hold deadlines (lockd/client.h) are run here: the HELD queued
 * behind a request that may grant, the heartbeat, the replies of every
 * HELD read into the holds, and the LOST of a hold whose deadline nears,
 * all at lockd_step(); the holds and the arithmetic of their deadlines
 * are resume.c's (no I/O). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_int.h"
#include "reply.h"

#define READ_MIN      512
#define STEP_READ_MAX (1 << 20) /* bytes read per lockd_step before others get a turn */

/* A resumable session between connections: requests wait in rz.later. */
static int resuming(const struct lockd_client *c)
{
	return c->rz && (c->rz->st == RZ_WAIT || c->rz->st == RZ_TRYING);
}

/* ------------------------------------------------------------ requests */

/* Queue one of the library's HELDs (beat: the heartbeat, else a grant's
 * check) at the end of ob. */
static int push_held(struct lockd_client *c, struct buf *ob, int beat)
{
	if (cli_buf_reserve(ob, 5) != 0)
		return -1;
	struct pend *p = cli_q_push(c);
	if (!p)
		return -1;
	memcpy(ob->p + ob->len, "HELD\n", 5);
	ob->len += 5;
	p->who = W_HELD;
	p->beat = (unsigned char)beat;
	p->sent_us = cli_now_us();
	p->timeout_ms = -1;
	p->list = 1;
	snprintf(p->cmd, sizeof(p->cmd), "HELD");
	c->nheld++;
	return 0;
}

/* Queue req + LF with its pending entry. A request that may grant a key
 * not held yet gets a HELD right behind it (hold deadlines): its ttl_ms,
 * measured when lockd granted, gives the hold its first deadline. Each
 * has its own: one shared behind several requests would wait for all of
 * them, and leave the first grants unconfirmed meanwhile. */
int cli_enqueue(struct lockd_client *c, const char *req, size_t n, int timeout_ms, void *tag,
                enum who who)
{
	if (!c)
		return LOCKD_EARG;
	if (c->st == CS_FAILED)
		return c->status;
	if (rp_check_request(req, n) != LOCKD_OK)
		return LOCKD_EARG;
	struct buf *ob = resuming(c) ? &c->rz->later : &c->out;
	enum rz_op op = RZ_OP_NONE;
	char *key = NULL;
	int64_t num = 0;
	if (c->holds && rz_request(req, n, &op, &key, &num) != 0)
		return LOCKD_ENOMEM;
	int check = 0;
	if (op == RZ_OP_LOCK && c->holds->deadlines) {
		const struct hold *h = rz_hold_find(c->holds, key);
		check = !h || h->lost;
	}
	if (cli_buf_reserve(ob, n + 1 + (check ? 5 : 0)) != 0) {
		free(key);
		return LOCKD_ENOMEM;
	}
	struct pend *p = cli_q_push(c);
	if (!p) {
		free(key);
		return LOCKD_ENOMEM;
	}
	memcpy(ob->p + ob->len, req, n);
	ob->p[ob->len + n] = '\n';
	ob->len += n + 1;
	p->op = (unsigned char)op;
	p->key = key;
	p->num = num;
	if (cli_is_internal(who))
		c->nint++;
	p->tag = tag;
	p->who = (unsigned char)who;
	p->sent_us = cli_now_us();
	p->timeout_ms = timeout_ms;
	p->deadline_us = timeout_ms >= 0 ? p->sent_us + (int64_t)timeout_ms * 1000 : 0;
	p->list = (unsigned char)rp_is_list_request(req, n);
	rp_command(req, n, p->cmd, sizeof(p->cmd));
	if (who == W_AUTH)
		snprintf(p->cmd, sizeof(p->cmd), "AUTH");
	/* QUIT ends the session: a break after it is final */
	if (c->rz && c->rz->resume && (c->rz->st == RZ_LIVE || c->rz->st == RZ_NONE) &&
	    strcasecmp(p->cmd, "QUIT") == 0)
		c->rz->st = RZ_OVER;
	if (op == RZ_OP_EXTEND && c->holds->deadlines)
		rz_extend_sent(c->holds, key, num, p->sent_us);
	/* without memory for the check, the hold is reported lost early: safe */
	if (check)
		(void)push_held(c, ob, 0);
	return LOCKD_OK;
}

/* ------------------------------------------------------------ replies */

/* Fill r from the lines in rs (complete). */
static void build_reply(struct lockd_reply *r, struct rstore *rs, int list, int64_t latency)
{
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < rs->n; i++)
		rs->lines[i] = rs->text + rs->offs[i];
	r->line = rs->lines[0];
	r->latency_us = latency;
	r->lines = rs->lines;
	rp_classify(r, r->line, list);
	r->nlines = r->kind == LOCKD_R_LIST ? rs->n - 1 : 0; /* END is not counted */
}

static void handle_auth(struct lockd_client *c, const char *line)
{
	char e[128];
	if (strcmp(line, "OK") == 0) {
		c->authed = 1;
		return;
	}
	rp_escape(e, sizeof(e), line, strlen(line));
	cli_fail(c, LOCKD_EAUTH, "AUTH refused by %s: %s", c->peer, e);
}

static int deliver_event(struct lockd_client *c, const char *line, size_t n, int by_deadline);

/* "LOST key fence" of the library's own making. */
static void report_lost(struct lockd_client *c, const char *key, uint64_t fence, int by_deadline)
{
	char sb[512];
	size_t need = strlen(key) + 32;
	char *line = need <= sizeof(sb) ? sb : malloc(need);
	if (!line) {
		cli_fail(c, LOCKD_ENOMEM, "out of memory");
		return;
	}
	int n = snprintf(line, need, "LOST %s %llu", key, (unsigned long long)fence);
	deliver_event(c, line, (size_t)n, by_deadline);
	if (line != sb)
		free(line);
}

/* A HELD reply (in acc), queued at sent_us: every hold it lists is
 * confirmed until sent_us + its ttl_ms; a hold it does not list, lockd
 * does not hold (its LOST, or the reply that released it, came first):
 * reported LOST now. */
static void held_reply(struct lockd_client *c, int64_t sent_us)
{
	struct holds *hs = c->holds;
	struct rstore *rs = &c->acc;
	if (!hs || !hs->deadlines || rs->n == 0 ||
	    strcmp(rs->text + rs->offs[rs->n - 1], "END") != 0)
		return; /* an ERR */
	int64_t now = cli_now_us();
	hs->seen++;
	for (size_t i = 0; i + 1 < rs->n; i++)
		rz_held_line(hs, rs->text + rs->offs[i], sent_us, now);
	for (size_t i = hs->n; i-- > 0 && c->st != CS_FAILED && !c->close_pending;) {
		struct hold *h = &hs->h[i];
		if (h->seen == hs->seen)
			continue;
		int lost = h->lost;
		if (!lost)
			report_lost(c, h->key, h->fence, 0);
		/* the callback changes no hold: h is still the same */
		rz_hold_del(hs, h);
	}
	rz_holds_plan(hs, sent_us);
}

/* The reply at the head of the queue is complete in acc. */
static void reply_done(struct lockd_client *c)
{
	struct pend p = *cli_q_at(c, 0);
	int64_t lat = cli_now_us() - p.sent_us;
	cli_q_pop(c);
	c->in_list = 0;
	if (p.who == W_AUTH) {
		handle_auth(c, c->acc.text);
		cli_rs_reset(&c->acc);
		return;
	}
	if (p.who == W_SESSION || p.who == W_RESUME) {
		char line[512];
		snprintf(line, sizeof(line), "%s", c->acc.text);
		cli_rs_reset(&c->acc);
		if (p.who == W_SESSION)
			cli_handle_session(c, line);
		else
			cli_handle_resume(c, line);
		memset(line, 0, sizeof(line));
		return;
	}
	if (p.who == W_HELD) {
		if (p.beat)
			c->holds->beat_out = 0;
		held_reply(c, p.sent_us);
		cli_rs_reset(&c->acc);
		return;
	}
	if (p.key) {
		if (rz_track(c->holds, (enum rz_op)p.op, p.key, c->acc.text, p.sent_us, p.num,
		             cli_now_us()) != 0)
			cli_fail(c, LOCKD_ENOMEM, "out of memory");
		free(p.key);
	}
	if (p.list && strcasecmp(p.cmd, "HELD") == 0) {
		held_reply(c, p.sent_us); /* the caller's HELD counts too */
		if (c->close_pending) {
			cli_rs_reset(&c->acc);
			return; /* closed from the callback of a LOST it made */
		}
	}
	if (p.who == W_CALL) {
		struct rstore t = c->res;
		c->res = c->acc;
		c->acc = t;
		cli_rs_reset(&c->acc);
		build_reply(&c->call_reply, &c->res, p.list, lat);
		c->call_done = 1;
		return;
	}
	if (c->on_reply) {
		struct lockd_reply r;
		build_reply(&r, &c->acc, p.list, lat);
		c->depth++;
		c->handed++;
		c->on_reply(c, &r, p.tag, c->arg);
		c->depth--;
	}
	cli_rs_reset(&c->acc);
}

/* An event to the event callback. */
static int deliver_event(struct lockd_client *c, const char *line, size_t n, int by_deadline)
{
	if (!c->on_event)
		return 0;
	if (n + 1 > c->evcap) {
		size_t cap = c->evcap ? c->evcap : 128;
		while (cap < n + 1)
			cap *= 2;
		char *p = realloc(c->evbuf, cap * 2);
		if (!p)
			return cli_fail(c, LOCKD_ENOMEM, "out of memory");
		c->evbuf = p;
		c->evcap = cap;
	}
	/* evbuf holds the line, then a copy that rp_event splits into words */
	char *w = c->evbuf + n + 1;
	memcpy(c->evbuf, line, n + 1);
	memcpy(w, line, n + 1);
	struct lockd_event ev;
	rp_event(&ev, c->evbuf, w, c->in_list);
	ev.by_deadline = by_deadline;
	c->depth++;
	c->handed++;
	c->on_event(c, &ev, c->arg);
	c->depth--;
	return 0;
}

/* An event line, lockd's or reconnect.c's: a LOST ends the hold; one
 * that its deadline reported already is not handed again. */
static int handle_event(struct lockd_client *c, const char *line, size_t n)
{
	if (c->holds && c->holds->n && strncmp(line, "LOST ", 5) == 0) {
		char key[LOCKD_MAX_KEY + 1];
		unsigned long long fence = 0;
		struct hold *h;
		if (sscanf(line + 5, "%65536s %llu", key, &fence) >= 1 &&
		    (h = rz_hold_find(c->holds, key))) {
			int told = h->lost && (!fence || fence == h->fence);
			rz_hold_del(c->holds, h);
			if (told)
				return 0;
		}
	}
	return deliver_event(c, line, n, 0);
}

/* What reconnect.c hands up: the ERR DISCONNECTED answers and the
 * RESUMING, RESUMED and LOST events of a resume go the way lockd's own do. */
static const struct cli_ops up = {
    .reply_done = reply_done,
    .event = handle_event,
};

/* One complete input line (NUL-terminated, CR LF removed). */
static int handle_line(struct lockd_client *c, const char *line, size_t n)
{
	char e[128];
	if (c->on_line) {
		c->handed++;
		c->depth++;
		int took = c->on_line(c, line, n, c->line_arg);
		c->depth--;
		if (took || c->close_pending)
			return 0;
	}
	if (rp_is_event(line))
		return handle_event(c, line, n);
	if (c->qlen == 0) {
		rp_escape(e, sizeof(e), line, n);
		return cli_fail(c, LOCKD_EPROTO, "%s sent a line without a request: \"%s\"",
		                c->peer, e);
	}
	if (cli_rs_add(&c->acc, line, n) != 0)
		return cli_fail(c, LOCKD_ENOMEM, "out of memory");
	int more = rp_more(line, cli_q_at(c, 0)->list, c->in_list);
	if (more) {
		c->in_list = 1;
		return 0;
	}
	reply_done(c);
	return 0;
}

/* Take every complete line of the input buffer. */
static int dispatch(struct lockd_client *c)
{
	char e[128];
	while (c->st != CS_FAILED && !c->close_pending) {
		char *start = c->in.p + c->in.off;
		size_t avail = c->in.len - c->in.off;
		char *nl = avail > c->scan ? memchr(start + c->scan, '\n', avail - c->scan) : NULL;
		if (!nl) {
			c->scan = avail;
			if (avail > c->max_line + 1)
				return cli_fail(c, LOCKD_EPROTO,
				                "%s sent a line longer than %zu bytes", c->peer,
				                c->max_line);
			break;
		}
		size_t n = (size_t)(nl - start);
		c->in.off += n + 1;
		c->scan = 0;
		switch (rp_frame(start, n, c->max_line)) {
		case RP_FRAME_OK:
			break;
		case RP_FRAME_NO_CR:
			rp_escape(e, sizeof(e), start, n);
			return cli_fail(c, LOCKD_EPROTO,
			                "%s sent a line not ended by CR LF: \"%s\"", c->peer, e);
		case RP_FRAME_LONG:
			return cli_fail(c, LOCKD_EPROTO, "%s sent a line longer than %zu bytes",
			                c->peer, c->max_line);
		case RP_FRAME_NUL:
			rp_escape(e, sizeof(e), start, n - 1);
			return cli_fail(c, LOCKD_EPROTO, "%s sent a NUL byte: \"%s\"", c->peer, e);
		}
		n--;
		start[n] = '\0';
		int rc = handle_line(c, start, n);
		if (rc != 0)
			return rc;
	}
	if (c->in.off == c->in.len)
		c->in.off = c->in.len = 0;
	return c->st == CS_FAILED ? c->status : 0;
}

/* ------------------------------------------------------------ I/O */

static int do_flush(struct lockd_client *c)
{
	while (c->st == CS_OPEN && c->out.off < c->out.len && !c->send_errno) {
		ssize_t w = net_send(c, c->out.p + c->out.off, c->out.len - c->out.off);
		if (c->st == CS_FAILED)
			break;
		if (w > 0) {
			c->out.off += (size_t)w;
			c->wrote += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		/* lockd may have closed after a last reply: read it first */
		c->send_errno = w < 0 ? errno : EPIPE;
	}
	if (c->out.off == c->out.len)
		c->out.off = c->out.len = 0;
	return 0;
}

static int do_read(struct lockd_client *c)
{
	size_t total = 0;
	while (c->st == CS_OPEN && !c->eof && !c->close_pending && total < STEP_READ_MAX) {
		/* small to start (thousands of clients in one process); it
		   doubles only while unread bytes fill it (a long list) */
		if (c->in.cap - c->in.len < READ_MIN &&
		    cli_buf_reserve(&c->in, c->in.cap > READ_MIN ? c->in.cap / 2 : READ_MIN) != 0)
			return cli_fail(c, LOCKD_ENOMEM, "out of memory");
		ssize_t k = net_recv(c, c->in.p + c->in.len, c->in.cap - c->in.len);
		if (c->st == CS_FAILED)
			return c->status;
		if (k > 0) {
			c->in.len += (size_t)k;
			total += (size_t)k;
			int rc = dispatch(c);
			if (rc != 0)
				return rc;
			continue;
		}
		if (k == 0) {
			c->eof = 1;
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		if (errno == ECONNRESET)
			return cli_fail(c, LOCKD_ECLOSED,
			                "%s reset the connection (%zu request%s unanswered)",
			                c->peer, c->qlen, c->qlen == 1 ? "" : "s");
		return cli_fail(c, LOCKD_EIO, "receive from %s: %s", c->peer, strerror(errno));
	}
	if (c->eof && c->st == CS_OPEN) {
		if (c->in.len > c->in.off)
			return cli_fail(c, LOCKD_ECLOSED,
			                "%s closed the connection in the middle of a line",
			                c->peer);
		return cli_fail(c, LOCKD_ECLOSED,
		                "%s closed the connection (%zu request%s unanswered)", c->peer,
		                c->qlen, c->qlen == 1 ? "" : "s");
	}
	if (c->send_errno && c->st == CS_OPEN)
		return cli_fail(c, LOCKD_EIO, "send to %s: %s", c->peer, strerror(c->send_errno));
	return c->st == CS_FAILED ? c->status : 0;
}

static int check_deadlines(struct lockd_client *c)
{
	if (c->st == CS_FAILED)
		return c->status;
	int64_t now = cli_now_us();
	if (c->st == CS_DOWN || c->st == CS_BROKEN)
		return 0;
	if (c->connect_deadline_us && (c->st != CS_OPEN || c->nint > 0) &&
	    now >= c->connect_deadline_us) {
		if (c->st == CS_OPEN)
			return cli_fail(c, LOCKD_ETIMEDOUT, "%s to %s: no reply within %d ms",
			                c->qlen ? cli_q_at(c, 0)->cmd : "AUTH", c->peer,
			                c->connect_timeout_ms);
		return cli_fail(c, LOCKD_ETIMEDOUT,
		                c->st == CS_CONNECTING
		                    ? "connect %s: no connection within %d ms"
		                    : "TLS handshake with %s: not done within %d ms",
		                c->peer, c->connect_timeout_ms);
	}
	if (resuming(c))
		return 0; /* the requests wait for the session's new connection */
	for (size_t i = 0; i < c->qlen; i++) {
		struct pend *p = cli_q_at(c, i);
		if (p->deadline_us && now >= p->deadline_us)
			return cli_fail(c, LOCKD_ETIMEDOUT, "no reply to %s from %s within %d ms",
			                p->cmd, c->peer, p->timeout_ms);
	}
	return 0;
}

/* Hold deadlines: report each hold whose deadline nears unconfirmed
 * (while resuming too), and send the heartbeat when it is due. */
static void holds_tick(struct lockd_client *c)
{
	struct holds *hs = c->holds;
	if (!hs || !hs->deadlines || c->st == CS_FAILED || c->close_pending)
		return;
	int64_t now = cli_now_us();
	if (hs->check_us && now >= hs->check_us) {
		for (size_t i = hs->n; i-- > 0 && c->st != CS_FAILED && !c->close_pending;) {
			struct hold *h = &hs->h[i];
			if (h->lost || h->report_us > now)
				continue;
			/* kept (lost), so that lockd's own LOST for it is not handed
			   again; the callback changes no hold */
			h->lost = 1;
			report_lost(c, h->key, h->fence, 1);
		}
		rz_holds_plan(hs, 0);
	}
	if (hs->beat_us && now >= hs->beat_us && !hs->beat_out && hs->n && lockd_ready(c) &&
	    !c->close_pending && push_held(c, &c->out, 1) == 0) {
		hs->beat_out = 1;
		hs->beat_us = 0;
		do_flush(c);
	}
}

/* The client failed (and no resume is left): its session is over, or its
 * connection of no more use; each hold not reported yet is LOST now, as
 * when a session cannot be resumed. */
static void holds_failed(struct lockd_client *c)
{
	struct holds *hs = c->holds;
	if (!hs || !hs->deadlines)
		return;
	while (hs->n && !c->close_pending) {
		struct hold *h = &hs->h[hs->n - 1];
		if (!h->lost)
			report_lost(c, h->key, h->fence, 0);
		rz_hold_del(hs, &hs->h[hs->n - 1]); /* the callback changes no hold */
	}
}

/* ------------------------------------------------------------ public */

static struct lockd_client *client_new(void)
{
	struct lockd_client *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = -1;
	c->st = CS_OPEN;
	c->ops = &up;
	c->authed = 1;
	c->max_line = LOCKD_MAX_LINE;
	c->connect_timeout_ms = LOCKD_CONNECT_TIMEOUT_MS;
	return c;
}

/* Take the options (net_opts) and those of them the client keeps. */
static int client_opts(struct lockd_client *c, const struct lockd_opts *uo, struct lockd_opts *o)
{
	int rc = net_opts(c, uo, o);
	if (rc != 0)
		return rc;
	if (o->max_line)
		c->max_line = o->max_line;
	if (o->connect_timeout_ms)
		c->connect_timeout_ms = o->connect_timeout_ms;
	return 0;
}

/* The holds, kept with hold deadlines or resume (LOST for each when the
 * session cannot be resumed). */
static int holds_new(struct lockd_client *c, int deadlines, int resume)
{
	if (!deadlines && !resume)
		return 0;
	c->holds = rz_holds_new(deadlines);
	return c->holds ? 0 : cli_fail(c, LOCKD_ENOMEM, "out of memory");
}

static int start_auth(struct lockd_client *c, const char *password)
{
	if (!password)
		return 0;
	size_t n = strlen(password);
	if (n == 0 || strpbrk(password, " \t\r\n"))
		return cli_fail(c, LOCKD_EARG, "the password must be one word (no blanks)");
	char *req = malloc(n + 6);
	if (!req)
		return cli_fail(c, LOCKD_ENOMEM, "out of memory");
	memcpy(req, "AUTH ", 5);
	memcpy(req + 5, password, n + 1);
	int rc = cli_enqueue(c, req, n + 5, -1, NULL, W_AUTH);
	memset(req, 0, n + 5);
	free(req);
	if (rc != 0)
		return cli_fail(c, rc, "out of memory");
	c->authed = 0;
	return 0;
}

int lockd_connect_start(const struct lockd_opts *uo, struct lockd_client **out)
{
	struct lockd_opts o;
	if (!out)
		return LOCKD_EARG;
	struct lockd_client *c = client_new();
	*out = c;
	if (!c)
		return LOCKD_ENOMEM;
	int rc = client_opts(c, uo, &o);
	if (rc != 0)
		return rc;
	if (c->connect_timeout_ms > 0)
		c->connect_deadline_us = cli_now_us() + (int64_t)c->connect_timeout_ms * 1000;
	rc = rz_new(c, &o);
	if (rc == 0)
		rc = holds_new(c, o.hold_deadlines >= 0, o.resume);
	if (rc != 0)
		return rc;
	if (!c->rz) {
		rc = net_resolve(c, &o);
		if (rc == 0)
			rc = start_auth(c, o.password);
		if (rc == 0)
			rc = net_start_tls(c, &o, 0);
		if (rc == 0)
			rc = net_connect_next(c);
		return rc;
	}
	/* addresses, resume: tried in turn (on_break) */
	rc = start_auth(c, o.password);
	if (rc == 0 && o.resume) {
		char req[40];
		int n = o.grace_ms > 0 ? snprintf(req, sizeof(req), "SESSION GRACE %d", o.grace_ms)
		                       : snprintf(req, sizeof(req), "SESSION");
		rc = cli_enqueue(c, req, (size_t)n, -1, NULL, W_SESSION);
		if (rc == 0)
			snprintf(cli_q_at(c, c->qlen - 1)->cmd, sizeof(cli_q_at(c, 0)->cmd),
			         "SESSION");
		else
			cli_fail(c, rc, "out of memory");
	}
	if (rc == 0)
		cli_connect_ep(c, 0);
	if (c->st == CS_BROKEN)
		cli_on_break(c);
	return c->st == CS_FAILED ? c->status : 0;
}

int lockd_open_fd(int fd, const struct lockd_opts *uo, struct lockd_client **out)
{
	struct lockd_opts o;
	if (!out)
		return LOCKD_EARG;
	struct lockd_client *c = client_new();
	*out = c;
	if (!c)
		return LOCKD_ENOMEM;
	c->fd = fd;
	int rc = client_opts(c, uo, &o);
	if (rc == 0)
		rc = holds_new(c, o.hold_deadlines > 0, 0);
	if (rc == 0)
		rc = net_adopt_fd(c, fd);
	if (rc == 0)
		rc = start_auth(c, o.password);
	if (rc == 0 && o.tls) {
		if (c->connect_timeout_ms > 0)
			c->connect_deadline_us =
			    cli_now_us() + (int64_t)c->connect_timeout_ms * 1000;
		rc = net_start_tls(c, &o, 1);
		if (rc == 0)
			rc = net_connected(c);
	}
	return rc;
}

int lockd_step(struct lockd_client *c)
{
	if (!c)
		return LOCKD_EARG;
	if (c->depth)
		return LOCKD_ESTATE;
	if (c->st == CS_BROKEN)
		cli_on_break(c);
	if (c->st == CS_DOWN)
		cli_resume_due(c);
	if (c->st == CS_CONNECTING)
		net_connect_check(c);
	if (c->st == CS_HANDSHAKE)
		ctls_handshake(c);
	do_flush(c);
	do_read(c);
	if (c->st == CS_BROKEN)
		cli_on_break(c);
	if (!c->close_pending) {
		check_deadlines(c);
		if (c->st == CS_BROKEN)
			cli_on_break(c);
	}
	holds_tick(c);
	if (c->st == CS_FAILED)
		holds_failed(c);
	if (c->close_pending && c->depth == 0) {
		c->close_pending = 0;
		lockd_close(c);
		return LOCKD_ECLOSED;
	}
	return c->st == CS_FAILED ? c->status : 0;
}

int lockd_flush(struct lockd_client *c)
{
	if (!c)
		return LOCKD_EARG;
	if (c->st == CS_FAILED)
		return c->status;
	do_flush(c);
	return 0;
}

int lockd_fd(const struct lockd_client *c)
{
	return c ? c->fd : -1;
}

short lockd_want(const struct lockd_client *c)
{
	if (!c || c->st == CS_FAILED)
		return 0;
	if (c->st == CS_DOWN)
		return POLLIN; /* fd -1: poll() waits lockd_timeout_ms() */
	if (c->st == CS_CONNECTING || c->st == CS_BROKEN || c->out.off < c->out.len ||
	    ctls_wants_write(c))
		return POLLIN | POLLOUT;
	return POLLIN;
}

int lockd_timeout_ms(const struct lockd_client *c)
{
	if (!c || c->st == CS_FAILED)
		return -1;
	int64_t d = 0;
	if (c->st == CS_OPEN && ctls_pending(c))
		return 0; /* decrypted bytes wait in OpenSSL, not in the socket */
	if (c->st == CS_BROKEN)
		return 0;
	if (c->st == CS_DOWN)
		d = c->rz->next_us;
	if (c->connect_deadline_us && (c->st != CS_OPEN || c->nint > 0))
		d = c->connect_deadline_us;
	for (size_t i = 0; i < c->qlen && !resuming(c); i++) {
		const struct pend *p = &c->q[(c->qhead + i) % c->qcap];
		if (p->deadline_us && (!d || p->deadline_us < d))
			d = p->deadline_us;
	}
	const struct holds *hs = c->holds;
	if (hs && hs->deadlines) {
		if (hs->check_us && (!d || hs->check_us < d))
			d = hs->check_us;
		if (hs->beat_us && !hs->beat_out && hs->n && lockd_ready(c) &&
		    (!d || hs->beat_us < d))
			d = hs->beat_us;
	}
	if (!d)
		return -1;
	int64_t left = d - cli_now_us();
	if (left <= 0)
		return 0;
	int64_t ms = (left + 999) / 1000;
	return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

size_t lockd_pending(const struct lockd_client *c)
{
	return c ? c->qlen - c->nheld : 0;
}

int lockd_ready(const struct lockd_client *c)
{
	return c && c->st == CS_OPEN && c->authed &&
	       (!c->rz || !c->rz->resume || c->rz->st == RZ_LIVE || c->rz->st == RZ_OVER);
}

const char *lockd_session_id(const struct lockd_client *c)
{
	return c && c->rz && c->rz->resume ? c->rz->id : "";
}

unsigned lockd_resumes(const struct lockd_client *c)
{
	return c && c->rz ? c->rz->resumes : 0;
}

int lockd_status(const struct lockd_client *c)
{
	return !c ? LOCKD_EARG : c->st == CS_FAILED ? c->status : LOCKD_OK;
}

const char *lockd_error(const struct lockd_client *c)
{
	return !c ? "no client" : c->st == CS_FAILED ? c->err : "";
}

const char *lockd_peer(const struct lockd_client *c)
{
	return c ? c->peer : "";
}

void lockd_set_callbacks(struct lockd_client *c, lockd_reply_cb *on_reply, lockd_event_cb *on_event,
                         void *arg)
{
	if (!c)
		return;
	c->on_reply = on_reply;
	c->on_event = on_event;
	c->arg = arg;
}

void lockd_set_line_callback(struct lockd_client *c, lockd_line_cb *on_line, void *arg)
{
	if (!c)
		return;
	c->on_line = on_line;
	c->line_arg = arg;
}

/* One poll for the client's fd, bounded by timeout_ms and its deadlines. */
static void poll_once(struct lockd_client *c, int timeout_ms)
{
	int t = lockd_timeout_ms(c);
	if (t < 0 || (timeout_ms >= 0 && timeout_ms < t))
		t = timeout_ms;
	struct pollfd pf = {c->fd, lockd_want(c), 0};
	if (pf.events)
		poll(&pf, 1, t);
}

int lockd_wait(struct lockd_client *c, int timeout_ms)
{
	if (!c)
		return LOCKD_EARG;
	if (c->depth)
		return LOCKD_ESTATE;
	uint64_t before = c->handed;
	int rc = lockd_step(c);
	if (rc != 0)
		return rc;
	if (c->handed != before)
		return 0; /* what was already read was handed over: no need to wait */
	poll_once(c, timeout_ms);
	return lockd_step(c);
}

int lockd_connect(const struct lockd_opts *o, struct lockd_client **out)
{
	int rc = lockd_connect_start(o, out);
	struct lockd_client *c = *out;
	while (rc == 0 && !lockd_ready(c)) {
		poll_once(c, -1);
		rc = lockd_step(c);
	}
	return rc;
}

int lockd_call(struct lockd_client *c, const char *request, int timeout_ms,
               const struct lockd_reply **reply)
{
	if (!c || !request || !reply)
		return LOCKD_EARG;
	if (c->depth)
		return LOCKD_ESTATE;
	if (c->st == CS_FAILED)
		return c->status;
	if (c->qlen > c->nint + c->nheld)
		return LOCKD_ESTATE;
	int rc = cli_enqueue(c, request, strlen(request), timeout_ms, NULL, W_CALL);
	if (rc != 0)
		return rc;
	c->call_done = 0;
	for (;;) {
		rc = lockd_step(c);
		if (rc != 0)
			return rc;
		if (c->call_done) {
			*reply = &c->call_reply;
			return LOCKD_OK;
		}
		poll_once(c, -1);
	}
}

/* vsnprintf into a stack buffer, or the heap for long requests; *len:
 * the bytes written, which a %c of 0 makes more than strlen() sees. */
static char *vformat(char *stackbuf, size_t n, size_t *len, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int l = vsnprintf(stackbuf, n, fmt, ap);
	if (l < 0) {
		va_end(ap2);
		return NULL;
	}
	*len = (size_t)l;
	if ((size_t)l < n) {
		va_end(ap2);
		return stackbuf;
	}
	char *p = malloc((size_t)l + 1);
	if (p)
		vsnprintf(p, (size_t)l + 1, fmt, ap2);
	va_end(ap2);
	return p;
}

int lockd_callf(struct lockd_client *c, int timeout_ms, const struct lockd_reply **reply,
                const char *fmt, ...)
{
	char sb[512];
	size_t len = 0;
	va_list ap;
	va_start(ap, fmt);
	char *req = vformat(sb, sizeof(sb), &len, fmt, ap);
	va_end(ap);
	if (!req)
		return LOCKD_ENOMEM;
	/* a NUL from the arguments would cut the request short: refuse it */
	int rc = strlen(req) != len ? LOCKD_EARG : lockd_call(c, req, timeout_ms, reply);
	if (req != sb)
		free(req);
	return rc;
}

int lockd_send(struct lockd_client *c, const char *request, int timeout_ms, void *tag)
{
	if (!request)
		return LOCKD_EARG;
	return cli_enqueue(c, request, strlen(request), timeout_ms, tag, W_USER);
}

int lockd_sendf(struct lockd_client *c, int timeout_ms, void *tag, const char *fmt, ...)
{
	char sb[512];
	size_t len = 0;
	va_list ap;
	va_start(ap, fmt);
	char *req = vformat(sb, sizeof(sb), &len, fmt, ap);
	va_end(ap);
	if (!req)
		return LOCKD_ENOMEM;
	int rc = strlen(req) != len ? LOCKD_EARG : lockd_send(c, req, timeout_ms, tag);
	if (req != sb)
		free(req);
	return rc;
}

/* ------------------------------------------------------------ closing, statuses */

void lockd_close(struct lockd_client *c)
{
	if (!c)
		return;
	if (c->depth) {
		c->close_pending = 1;
		return;
	}
	if (c->rz && c->rz->resume && c->rz->st == RZ_LIVE && c->st == CS_OPEN) {
		/* end the session now, not at the end of its grace (best effort:
		   lockd reads it unless a LOCK waits ahead of it) */
		c->rz->st = RZ_OVER;
		if (cli_buf_reserve(&c->out, 5) == 0) {
			memcpy(c->out.p + c->out.len, "QUIT\n", 5);
			c->out.len += 5;
			do_flush(c);
		}
	}
	ctls_free(c);
	if (c->fd >= 0)
		close(c->fd);
	for (size_t i = 0; i < c->qlen; i++)
		free(cli_q_at(c, i)->key);
	rz_free(c->rz);
	rz_holds_free(c->holds);
	if (c->out.p)
		memset(c->out.p, 0, c->out.cap); /* may hold AUTH password */
	free(c->out.p);
	free(c->in.p);
	free(c->q);
	cli_rs_free(&c->acc);
	cli_rs_free(&c->res);
	free(c->evbuf);
	free(c);
}
