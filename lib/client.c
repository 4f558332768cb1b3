/* liblockd: the public API of the client of lockd's text protocol (see
 * lockd/client.h; client_int.h draws the files beneath it).
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
 * Connecting and the bytes on the wire (plain or TLS) are net.c's. */
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

/* ------------------------------------------------------------ buffers */

static int buf_reserve(struct buf *b, size_t more)
{
	if (b->cap - b->len >= more)
		return 0;
	if (b->off > 0) {
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->cap - b->len >= more)
			return 0;
	}
	size_t cap = b->cap ? b->cap : 1024;
	while (cap - b->len < more)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

static int rs_add(struct rstore *r, const char *line, size_t n)
{
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 256;
		while (cap < r->len + n + 1)
			cap *= 2;
		char *p = realloc(r->text, cap);
		if (!p)
			return -1;
		r->text = p;
		r->cap = cap;
	}
	if (r->n == r->ncap) {
		size_t ncap = r->ncap ? r->ncap * 2 : 8;
		size_t *o = realloc(r->offs, ncap * sizeof(*o));
		if (!o)
			return -1;
		r->offs = o;
		const char **l = realloc(r->lines, ncap * sizeof(*l));
		if (!l)
			return -1;
		r->lines = l;
		r->ncap = ncap;
	}
	memcpy(r->text + r->len, line, n);
	r->text[r->len + n] = '\0';
	r->offs[r->n++] = r->len;
	r->len += n + 1;
	return 0;
}

static void rs_reset(struct rstore *r)
{
	r->len = 0;
	r->n = 0;
}

static void rs_free(struct rstore *r)
{
	free(r->text);
	free(r->offs);
	free(r->lines);
}

/* ------------------------------------------------------------ queue */

static struct pend *q_at(struct lockd_client *c, size_t i)
{
	return &c->q[(c->qhead + i) % c->qcap];
}

static struct pend *q_push(struct lockd_client *c)
{
	if (c->qlen == c->qcap) {
		size_t ncap = c->qcap ? c->qcap * 2 : 8;
		struct pend *nq = malloc(ncap * sizeof(*nq));
		if (!nq)
			return NULL;
		for (size_t i = 0; i < c->qlen; i++)
			nq[i] = *q_at(c, i);
		free(c->q);
		c->q = nq;
		c->qcap = ncap;
		c->qhead = 0;
	}
	struct pend *p = &c->q[(c->qhead + c->qlen++) % c->qcap];
	memset(p, 0, sizeof(*p));
	return p;
}

static void q_pop(struct lockd_client *c)
{
	c->qhead = (c->qhead + 1) % c->qcap;
	c->qlen--;
}

/* ------------------------------------------------------------ requests */

/* Queue req + LF with its pending entry. */
static int enqueue(struct lockd_client *c, const char *req, size_t n, int timeout_ms, void *tag,
                   enum who who)
{
	if (!c)
		return LOCKD_EARG;
	if (c->st == CS_FAILED)
		return c->status;
	if (rp_check_request(req, n) != LOCKD_OK)
		return LOCKD_EARG;
	if (buf_reserve(&c->out, n + 1) != 0)
		return LOCKD_ENOMEM;
	struct pend *p = q_push(c);
	if (!p)
		return LOCKD_ENOMEM;
	memcpy(c->out.p + c->out.len, req, n);
	c->out.p[c->out.len + n] = '\n';
	c->out.len += n + 1;
	p->tag = tag;
	p->who = (unsigned char)who;
	p->sent_us = cli_now_us();
	p->timeout_ms = timeout_ms;
	p->deadline_us = timeout_ms >= 0 ? p->sent_us + (int64_t)timeout_ms * 1000 : 0;
	p->list = (unsigned char)rp_is_list_request(req, n);
	rp_command(req, n, p->cmd, sizeof(p->cmd));
	if (who == W_AUTH)
		snprintf(p->cmd, sizeof(p->cmd), "AUTH");
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

/* The reply at the head of the queue is complete in acc. */
static void reply_done(struct lockd_client *c)
{
	struct pend p = *q_at(c, 0);
	int64_t lat = cli_now_us() - p.sent_us;
	q_pop(c);
	c->in_list = 0;
	if (p.who == W_AUTH) {
		handle_auth(c, c->acc.text);
		rs_reset(&c->acc);
		return;
	}
	if (p.who == W_CALL) {
		struct rstore t = c->res;
		c->res = c->acc;
		c->acc = t;
		rs_reset(&c->acc);
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
	rs_reset(&c->acc);
}

static int handle_event(struct lockd_client *c, const char *line, size_t n)
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
	c->depth++;
	c->handed++;
	c->on_event(c, &ev, c->arg);
	c->depth--;
	return 0;
}

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
	if (rs_add(&c->acc, line, n) != 0)
		return cli_fail(c, LOCKD_ENOMEM, "out of memory");
	int more = rp_more(line, q_at(c, 0)->list, c->in_list);
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
		    buf_reserve(&c->in, c->in.cap > READ_MIN ? c->in.cap / 2 : READ_MIN) != 0)
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
	if (c->connect_deadline_us && (c->st != CS_OPEN || !c->authed) &&
	    now >= c->connect_deadline_us)
		return cli_fail(c, LOCKD_ETIMEDOUT,
		                c->st == CS_CONNECTING ? "connect %s: no connection within %d ms"
		                : c->st == CS_HANDSHAKE
		                    ? "TLS handshake with %s: not done within %d ms"
		                    : "AUTH to %s: no reply within %d ms",
		                c->peer, c->connect_timeout_ms);
	for (size_t i = 0; i < c->qlen; i++) {
		struct pend *p = q_at(c, i);
		if (p->deadline_us && now >= p->deadline_us)
			return cli_fail(c, LOCKD_ETIMEDOUT, "no reply to %s from %s within %d ms",
			                p->cmd, c->peer, p->timeout_ms);
	}
	return 0;
}

/* ------------------------------------------------------------ public */

static struct lockd_client *client_new(void)
{
	struct lockd_client *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = -1;
	c->st = CS_OPEN;
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
	int rc = enqueue(c, req, n + 5, -1, NULL, W_AUTH);
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
	rc = net_resolve(c, &o);
	if (rc == 0)
		rc = start_auth(c, o.password);
	if (rc == 0)
		rc = net_start_tls(c, &o, 0);
	if (rc == 0)
		rc = net_connect_next(c);
	return rc;
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
	if (c->st == CS_CONNECTING)
		net_connect_check(c);
	if (c->st == CS_HANDSHAKE)
		ctls_handshake(c);
	do_flush(c);
	do_read(c);
	if (c->close_pending && c->depth == 0) {
		c->close_pending = 0;
		lockd_close(c);
		return LOCKD_ECLOSED;
	}
	return check_deadlines(c);
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
	if (c->st == CS_CONNECTING || c->out.off < c->out.len || ctls_wants_write(c))
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
	if (c->connect_deadline_us && (c->st != CS_OPEN || !c->authed))
		d = c->connect_deadline_us;
	for (size_t i = 0; i < c->qlen; i++) {
		const struct pend *p = &c->q[(c->qhead + i) % c->qcap];
		if (p->deadline_us && (!d || p->deadline_us < d))
			d = p->deadline_us;
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
	return c ? c->qlen : 0;
}

int lockd_ready(const struct lockd_client *c)
{
	return c && c->st == CS_OPEN && c->authed;
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
	if (c->qlen > (c->authed ? 0u : 1u))
		return LOCKD_ESTATE;
	int rc = enqueue(c, request, strlen(request), timeout_ms, NULL, W_CALL);
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
	return enqueue(c, request, strlen(request), timeout_ms, tag, W_USER);
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

/* ------------------------------------------------------------ typed requests */

/* Build the request of cmd (reply.c checks the key and the numbers), then
 * lockd_call() it (reply set) or lockd_send() it. */
static int typed(struct lockd_client *c, enum rp_cmd cmd, const char *key, int hold, int wait_ms,
                 int ttl_ms, int timeout_ms, const struct lockd_reply **reply, void *tag)
{
	char sb[512];
	char *req = sb;
	if (!c)
		return LOCKD_EARG;
	long n = rp_format(sb, sizeof(sb), cmd, key, LOCKD_MAX_KEY, hold, wait_ms, ttl_ms);
	if (n < 0)
		return (int)n;
	if ((size_t)n >= sizeof(sb)) {
		req = malloc((size_t)n + 1);
		if (!req)
			return LOCKD_ENOMEM;
		rp_format(req, (size_t)n + 1, cmd, key, LOCKD_MAX_KEY, hold, wait_ms, ttl_ms);
	}
	int rc = reply ? lockd_call(c, req, timeout_ms, reply)
	               : enqueue(c, req, (size_t)n, timeout_ms, tag, W_USER);
	if (req != sb)
		free(req);
	return rc;
}

int lockd_check_key(const char *key)
{
	return rp_check_key(key, LOCKD_MAX_KEY);
}

int lockd_lock(struct lockd_client *c, const char *key, int hold, int wait_ms, int ttl_ms,
               int timeout_ms, const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return typed(c, RP_LOCK, key, hold, wait_ms, ttl_ms, timeout_ms, reply, NULL);
}

int lockd_trylock(struct lockd_client *c, const char *key, int hold, int ttl_ms, int timeout_ms,
                  const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return typed(c, RP_TRYLOCK, key, hold, -1, ttl_ms, timeout_ms, reply, NULL);
}

int lockd_unlock(struct lockd_client *c, const char *key, int timeout_ms,
                 const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return typed(c, RP_UNLOCK, key, 0, -1, 0, timeout_ms, reply, NULL);
}

int lockd_extend(struct lockd_client *c, const char *key, int ttl_ms, int timeout_ms,
                 const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return typed(c, RP_EXTEND, key, 0, -1, ttl_ms, timeout_ms, reply, NULL);
}

int lockd_key_status(struct lockd_client *c, const char *key, int permits, int timeout_ms,
                     const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return typed(c, RP_STATUS, key, permits, -1, 0, timeout_ms, reply, NULL);
}

int lockd_send_lock(struct lockd_client *c, const char *key, int hold, int wait_ms, int ttl_ms,
                    int timeout_ms, void *tag)
{
	return typed(c, RP_LOCK, key, hold, wait_ms, ttl_ms, timeout_ms, NULL, tag);
}

int lockd_send_trylock(struct lockd_client *c, const char *key, int hold, int ttl_ms,
                       int timeout_ms, void *tag)
{
	return typed(c, RP_TRYLOCK, key, hold, -1, ttl_ms, timeout_ms, NULL, tag);
}

int lockd_send_unlock(struct lockd_client *c, const char *key, int timeout_ms, void *tag)
{
	return typed(c, RP_UNLOCK, key, 0, -1, 0, timeout_ms, NULL, tag);
}

int lockd_send_extend(struct lockd_client *c, const char *key, int ttl_ms, int timeout_ms,
                      void *tag)
{
	return typed(c, RP_EXTEND, key, 0, -1, ttl_ms, timeout_ms, NULL, tag);
}

int lockd_send_key_status(struct lockd_client *c, const char *key, int permits, int timeout_ms,
                          void *tag)
{
	return typed(c, RP_STATUS, key, permits, -1, 0, timeout_ms, NULL, tag);
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
	ctls_free(c);
	if (c->fd >= 0)
		close(c->fd);
	if (c->out.p)
		memset(c->out.p, 0, c->out.cap); /* may hold AUTH password */
	free(c->out.p);
	free(c->in.p);
	free(c->q);
	rs_free(&c->acc);
	rs_free(&c->res);
	free(c->evbuf);
	free(c);
}

static const struct {
	int status;
	const char *name, *text;
} statuses[] = {
    {LOCKD_OK, "LOCKD_OK", "success"},
    {LOCKD_EARG, "LOCKD_EARG", "bad argument"},
    {LOCKD_ENOMEM, "LOCKD_ENOMEM", "out of memory"},
    {LOCKD_ECONNECT, "LOCKD_ECONNECT", "cannot connect to lockd"},
    {LOCKD_ETIMEDOUT, "LOCKD_ETIMEDOUT", "lockd did not answer in time"},
    {LOCKD_ECLOSED, "LOCKD_ECLOSED", "lockd closed the connection"},
    {LOCKD_EIO, "LOCKD_EIO", "input/output error on the connection"},
    {LOCKD_EPROTO, "LOCKD_EPROTO", "lockd broke the protocol"},
    {LOCKD_EAUTH, "LOCKD_EAUTH", "lockd refused the password"},
    {LOCKD_ESTATE, "LOCKD_ESTATE", "not allowed in this state"},
    {LOCKD_ETLS, "LOCKD_ETLS", "TLS failed (certificate, handshake, or no TLS built in)"},
    {LOCKD_EKEY, "LOCKD_EKEY", "a key lockd would refuse (nothing was sent)"},
};

const char *lockd_status_name(int status)
{
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		if (statuses[i].status == status)
			return statuses[i].name;
	return "LOCKD_E?";
}

const char *lockd_strerror(int status)
{
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		if (statuses[i].status == status)
			return statuses[i].text;
	return "unknown status";
}
