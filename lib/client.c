/* liblockd: the client side of lockd's text protocol (see lockd/client.h).
 *
 * A client owns one non-blocking socket, an output buffer, an input
 * buffer, and the queue of requests sent and not answered yet (each knows
 * whether its reply is one line or a list closed by END). Complete input
 * lines are taken one by one (shown first to the line callback, which may
 * take them): a LOST line is an event wherever it comes; any other line
 * belongs to the request at the head of the queue. The
 * lines of the reply being read are copied into "acc"; a reply that a
 * lockd_call() waits for is handed over by swapping acc with "res", so it
 * outlives the step that read it without a copy. No allocation per
 * request once the buffers have grown to the traffic.
 *
 * TLS (when built with OpenSSL): the same buffers and loops, with
 * SSL_read/SSL_write in place of recv/send, over a BIO of our own that
 * uses recv and send(MSG_NOSIGNAL) on the client's fd. The handshake is
 * a state of connecting (CS_HANDSHAKE); what OpenSSL wants (to read or
 * to write) is what lockd_want() asks for, and bytes it has decrypted
 * and not handed over make lockd_timeout_ms() 0. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "lockd/client.h"

#ifdef HAVE_TLS
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#endif

#define MAX_ADDRS     8
#define READ_MIN      512
#define STEP_READ_MAX (1 << 20) /* bytes read per lockd_step before others get a turn */

enum conn_state {
	CS_CONNECTING, /* non-blocking connect in progress (addr[ai]) */
	CS_HANDSHAKE,  /* connected; the TLS handshake is under way */
	CS_OPEN,       /* connected; requests flow */
	CS_FAILED,     /* status and err say why; only lockd_close() is left */
};

enum who {
	W_USER, /* lockd_send(): reply to the reply callback */
	W_AUTH, /* the AUTH of connecting: handled here */
	W_CALL, /* lockd_call(): reply kept in res */
};

struct pend {
	void *tag;
	int64_t sent_us;
	int64_t deadline_us; /* 0: none */
	int timeout_ms;      /* for the message */
	unsigned char list;  /* HELD, STATS: lines up to END */
	unsigned char who;   /* enum who */
	char cmd[14];        /* the command word, for messages */
};

struct buf {
	char *p;
	size_t len, cap, off; /* off: bytes already consumed (input) or written (output) */
};

/* The lines of one reply, each NUL-terminated, one after the other. */
struct rstore {
	char *text;
	size_t len, cap;
	size_t *offs;
	const char **lines;
	size_t n, ncap;
};

struct lockd_client {
	int fd;
	enum conn_state st;
	int status;
	char err[384];
	char peer[320];
	struct sockaddr_storage addr[MAX_ADDRS];
	socklen_t alen[MAX_ADDRS];
	int naddr, ai;
	int connect_errno;
	int64_t connect_deadline_us; /* 0: none; also bounds AUTH */
	int connect_timeout_ms;
	int authed;
	size_t max_line;
	struct buf in, out;
	size_t scan; /* input bytes from in.off already known to hold no LF */
	int eof;
	int send_errno;
	struct pend *q;
	size_t qcap, qhead, qlen;
	struct rstore acc, res;
	int in_list; /* acc holds the first lines of a list reply */
	struct lockd_reply call_reply;
	int call_done;
	char *evbuf;
	size_t evcap;
	lockd_reply_cb *on_reply;
	lockd_event_cb *on_event;
	void *arg;
	lockd_line_cb *on_line;
	uint64_t handed; /* replies, events and lines handed to the caller so far */
	void *line_arg;
	int depth; /* > 0 while a callback runs */
	int close_pending;
#ifdef HAVE_TLS
	SSL_CTX *ctx;
	SSL *ssl; /* NULL: plain */
	BIO_METHOD *biom;
	int tls_ww;       /* OpenSSL wants to write before it can go on */
	int tls_has_cert; /* a client certificate was given */
	int bio_eof;      /* recv() returned 0 */
#endif
};

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Printable, bounded copy of bytes for messages. */
static void esc(char *out, size_t outlen, const char *s, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 8 < outlen; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (i >= 80) {
			o += (size_t)snprintf(out + o, outlen - o, "...");
			break;
		}
		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			out[o++] = (char)ch;
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
	}
	out[o] = '\0';
}

static int fail(struct lockd_client *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct lockd_client *c, int status, const char *fmt, ...)
{
	if (c->st == CS_FAILED)
		return c->status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	c->st = CS_FAILED;
	c->status = status;
	return status;
}

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

static int blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* The first word of a request, case-insensitively equal to w? */
static int word_is(const char *req, size_t n, const char *w)
{
	size_t i = 0, k = 0;
	while (i < n && blank(req[i]))
		i++;
	for (; w[k]; k++, i++) {
		if (i >= n)
			return 0;
		char ch = req[i];
		if (ch >= 'a' && ch <= 'z')
			ch = (char)(ch - 'a' + 'A');
		if (ch != w[k])
			return 0;
	}
	return i == n || blank(req[i]);
}

static int check_request(const char *req, size_t n)
{
	if (n == 0)
		return LOCKD_EARG;
	for (size_t i = 0; i < n; i++)
		if (req[i] == '\r' || req[i] == '\n' || req[i] == '\0')
			return LOCKD_EARG;
	return LOCKD_OK;
}

/* Queue req + LF with its pending entry. */
static int enqueue(struct lockd_client *c, const char *req, size_t n, int timeout_ms, void *tag,
                   enum who who)
{
	if (!c)
		return LOCKD_EARG;
	if (c->st == CS_FAILED)
		return c->status;
	if (check_request(req, n) != LOCKD_OK)
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
	p->sent_us = mono_us();
	p->timeout_ms = timeout_ms;
	p->deadline_us = timeout_ms >= 0 ? p->sent_us + (int64_t)timeout_ms * 1000 : 0;
	p->list = word_is(req, n, "HELD") || word_is(req, n, "STATS");
	size_t i = 0, k = 0;
	while (i < n && blank(req[i]))
		i++;
	while (i < n && !blank(req[i]) && k < sizeof(p->cmd) - 1)
		p->cmd[k++] = req[i++];
	p->cmd[k] = '\0';
	if (who == W_AUTH)
		snprintf(p->cmd, sizeof(p->cmd), "AUTH");
	return LOCKD_OK;
}

/* ------------------------------------------------------------ replies */

static int parse_u64(const char *s, const char **end, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;
	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*out = v;
	*end = p;
	return 0;
}

/* Is line the word w, alone or followed by a space? */
static int starts(const char *line, const char *w)
{
	size_t n = strlen(w);
	return strncmp(line, w, n) == 0 && (line[n] == '\0' || line[n] == ' ');
}

/* Fill r from the lines in rs (complete). */
static void build_reply(struct lockd_reply *r, struct rstore *rs, int list, int64_t latency)
{
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < rs->n; i++)
		rs->lines[i] = rs->text + rs->offs[i];
	const char *l = rs->lines[0];
	const char *e;
	r->line = l;
	r->text = "";
	r->latency_us = latency;
	r->lines = rs->lines;
	if (list && !starts(l, "ERR")) {
		r->kind = LOCKD_R_LIST;
		r->nlines = rs->n - 1; /* END is not counted */
		return;
	}
	r->nlines = 0;
	if (starts(l, "OK")) {
		r->kind = LOCKD_R_OK;
		if (l[2] == ' ' && parse_u64(l + 3, &e, &r->num) == 0 && *e == '\0')
			r->has_num = 1;
	} else if (starts(l, "PONG")) {
		r->kind = LOCKD_R_PONG;
	} else if (strcmp(l, "FREE") == 0) {
		r->kind = LOCKD_R_FREE;
	} else if (strcmp(l, "BUSY") == 0) {
		r->kind = LOCKD_R_BUSY;
	} else if (strcmp(l, "TIMEOUT") == 0) {
		r->kind = LOCKD_R_TIMEOUT;
	} else if (starts(l, "ERR")) {
		r->kind = LOCKD_R_ERR;
		const char *p = l + 3;
		while (*p == ' ')
			p++;
		size_t k = 0;
		while (p[k] && p[k] != ' ' && k < sizeof(r->code) - 1) {
			r->code[k] = p[k];
			k++;
		}
		r->code[k] = '\0';
		p += k;
		while (*p == ' ')
			p++;
		r->text = p;
	} else if (strncmp(l, "HELD ", 5) == 0 && parse_u64(l + 5, &e, &r->num) == 0 && *e == ' ' &&
	           parse_u64(e + 1, &e, &r->num2) == 0 && *e == '\0') {
		r->kind = LOCKD_R_HELD;
		r->has_num = 1;
	} else {
		r->kind = LOCKD_R_OTHER;
	}
}

static void handle_auth(struct lockd_client *c, const char *line)
{
	char e[128];
	if (strcmp(line, "OK") == 0) {
		c->authed = 1;
		return;
	}
	esc(e, sizeof(e), line, strlen(line));
	fail(c, LOCKD_EAUTH, "AUTH refused by %s: %s", c->peer, e);
}

/* The reply at the head of the queue is complete in acc. */
static void reply_done(struct lockd_client *c)
{
	struct pend p = *q_at(c, 0);
	int64_t lat = mono_us() - p.sent_us;
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
			return fail(c, LOCKD_ENOMEM, "out of memory");
		c->evbuf = p;
		c->evcap = cap;
	}
	/* evbuf holds the line, then a copy split into words */
	char *w = c->evbuf + n + 1;
	memcpy(c->evbuf, line, n + 1);
	memcpy(w, line, n + 1);
	struct lockd_event ev = {
	    .line = c->evbuf, .name = w, .key = "", .fence = 0, .in_list = c->in_list};
	char *sp = strchr(w, ' ');
	if (sp) {
		*sp = '\0';
		ev.key = sp + 1;
		sp = strchr(sp + 1, ' ');
		if (sp) {
			const char *e;
			*sp = '\0';
			if (parse_u64(sp + 1, &e, &ev.fence) != 0)
				ev.fence = 0;
		}
	}
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
	if (strncmp(line, "LOST", 4) == 0 && (line[4] == ' ' || line[4] == '\0'))
		return handle_event(c, line, n);
	if (c->qlen == 0) {
		esc(e, sizeof(e), line, n);
		return fail(c, LOCKD_EPROTO, "%s sent a line without a request: \"%s\"", c->peer,
		            e);
	}
	if (rs_add(&c->acc, line, n) != 0)
		return fail(c, LOCKD_ENOMEM, "out of memory");
	struct pend *p = q_at(c, 0);
	if (p->list && !c->in_list && !starts(line, "ERR") && strcmp(line, "END") != 0) {
		c->in_list = 1;
		return 0;
	}
	if (c->in_list && strcmp(line, "END") != 0)
		return 0;
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
				return fail(c, LOCKD_EPROTO, "%s sent a line longer than %zu bytes",
				            c->peer, c->max_line);
			break;
		}
		size_t n = (size_t)(nl - start);
		c->in.off += n + 1;
		c->scan = 0;
		if (n == 0 || start[n - 1] != '\r') {
			esc(e, sizeof(e), start, n);
			return fail(c, LOCKD_EPROTO, "%s sent a line not ended by CR LF: \"%s\"",
			            c->peer, e);
		}
		n--;
		if (n > c->max_line)
			return fail(c, LOCKD_EPROTO, "%s sent a line longer than %zu bytes",
			            c->peer, c->max_line);
		if (memchr(start, '\0', n)) {
			esc(e, sizeof(e), start, n);
			return fail(c, LOCKD_EPROTO, "%s sent a NUL byte: \"%s\"", c->peer, e);
		}
		start[n] = '\0';
		int rc = handle_line(c, start, n);
		if (rc != 0)
			return rc;
	}
	if (c->in.off == c->in.len)
		c->in.off = c->in.len = 0;
	return c->st == CS_FAILED ? c->status : 0;
}

/* ------------------------------------------------------------ TLS */

#ifdef HAVE_TLS
static int nbio_write(BIO *b, const char *p, int n)
{
	struct lockd_client *c = BIO_get_data(b);
	ssize_t w;
	BIO_clear_retry_flags(b);
	do
		w = send(c->fd, p, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (w < 0 && errno == EINTR);
	if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		BIO_set_retry_write(b);
	return (int)w;
}

static int nbio_read(BIO *b, char *p, int n)
{
	struct lockd_client *c = BIO_get_data(b);
	ssize_t k;
	BIO_clear_retry_flags(b);
	do
		k = recv(c->fd, p, (size_t)n, MSG_DONTWAIT);
	while (k < 0 && errno == EINTR);
	if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		BIO_set_retry_read(b);
	if (k == 0)
		c->bio_eof = 1;
	return (int)k;
}

static long nbio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	struct lockd_client *c = BIO_get_data(b);
	if (cmd == BIO_CTRL_FLUSH)
		return 1;
	if (cmd == BIO_CTRL_EOF)
		return c && c->bio_eof;
	return 0;
}

static int nbio_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

/* Fail with LOCKD_ETLS: what, then OpenSSL's reason (or the certificate
 * verification's). */
static int tls_fail(struct lockd_client *c, const char *what)
{
	char reason[256] = "";
	unsigned long e = ERR_peek_last_error();
	long v = c->ssl ? SSL_get_verify_result(c->ssl) : X509_V_OK;
	if (v != X509_V_OK)
		snprintf(reason, sizeof(reason), "lockd's certificate did not verify: %s",
		         X509_verify_cert_error_string(v));
	else if (e)
		snprintf(reason, sizeof(reason), "%s", ERR_reason_error_string(e));
	else
		snprintf(reason, sizeof(reason), "%s", errno ? strerror(errno) : "failed");
	ERR_clear_error();
	const char *hint = "";
	if (!c->tls_has_cert && strstr(reason, "alert") && strstr(reason, "certificate"))
		hint = " (lockd asks for a client certificate: tls_cert)";
	return fail(c, LOCKD_ETLS, "%s: %s%s", what, reason, hint);
}

/* Make the context and the SSL of the client; name: what lockd's
 * certificate must carry (NULL: only the chain is verified). */
static int tls_setup(struct lockd_client *c, const struct lockd_opts *o, const char *name)
{
	char what[512];
	ERR_clear_error();
	if (o->tls_key && !o->tls_cert)
		return fail(c, LOCKD_EARG, "TLS: a key (tls_key) without a certificate (tls_cert)");
	c->ctx = SSL_CTX_new(TLS_client_method());
	if (!c->ctx)
		return tls_fail(c, "TLS: no context");
	SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(c->ctx,
	                 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
	SSL_CTX_set_options(c->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
	if (!o->tls_no_verify) {
		SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
		int ok = o->tls_ca ? SSL_CTX_load_verify_locations(c->ctx, o->tls_ca, NULL)
		                   : SSL_CTX_set_default_verify_paths(c->ctx);
		if (ok != 1) {
			snprintf(what, sizeof(what), "TLS: CA file %s",
			         o->tls_ca ? o->tls_ca : "(the system's)");
			return tls_fail(c, what);
		}
	}
	if (o->tls_cert) {
		const char *key = o->tls_key ? o->tls_key : o->tls_cert;
		if (SSL_CTX_use_certificate_chain_file(c->ctx, o->tls_cert) != 1) {
			snprintf(what, sizeof(what), "TLS: certificate %s", o->tls_cert);
			return tls_fail(c, what);
		}
		if (SSL_CTX_use_PrivateKey_file(c->ctx, key, SSL_FILETYPE_PEM) != 1 ||
		    SSL_CTX_check_private_key(c->ctx) != 1) {
			snprintf(what, sizeof(what), "TLS: key %s", key);
			return tls_fail(c, what);
		}
		c->tls_has_cert = 1;
	}
	c->ssl = SSL_new(c->ctx);
	c->biom = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "lockd socket");
	BIO *b = NULL;
	if (c->ssl && c->biom && BIO_meth_set_write(c->biom, nbio_write) == 1 &&
	    BIO_meth_set_read(c->biom, nbio_read) == 1 &&
	    BIO_meth_set_ctrl(c->biom, nbio_ctrl) == 1 &&
	    BIO_meth_set_create(c->biom, nbio_create) == 1)
		b = BIO_new(c->biom);
	if (!b) {
		SSL_free(c->ssl);
		c->ssl = NULL;
		return tls_fail(c, "TLS: no memory for the connection");
	}
	BIO_set_data(b, c);
	SSL_set_bio(c->ssl, b, b);
	if (name && *name) {
		unsigned char ip[16];
		int is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
		if (!is_ip)
			SSL_set_tlsext_host_name(c->ssl, name);
		if (!o->tls_no_verify &&
		    (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), name)
		           : SSL_set1_host(c->ssl, name)) != 1) {
			snprintf(what, sizeof(what), "TLS: server name \"%s\"", name);
			return tls_fail(c, what);
		}
	}
	SSL_set_connect_state(c->ssl);
	return 0;
}

/* Go on with the handshake; CS_OPEN once it is done. */
static int tls_handshake(struct lockd_client *c)
{
	ERR_clear_error();
	errno = 0;
	int r = SSL_do_handshake(c->ssl);
	if (r == 1) {
		c->tls_ww = 0;
		c->st = CS_OPEN;
		return 0;
	}
	int e = SSL_get_error(c->ssl, r);
	c->tls_ww = e == SSL_ERROR_WANT_WRITE;
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return 0;
	char what[400];
	snprintf(what, sizeof(what), "TLS handshake with %s", c->peer);
	if (e == SSL_ERROR_SYSCALL && (errno == 0 || errno == ECONNRESET || errno == EPIPE) &&
	    ERR_peek_last_error() == 0) {
		errno = 0;
		return fail(c, LOCKD_ETLS, "%s: lockd closed the connection (not a TLS listener?)",
		            what);
	}
	return tls_fail(c, what);
}

/* As recv() and send() (-1 with errno EAGAIN: OpenSSL waits for the
 * socket); a TLS error fails the client (-1, errno EPROTO). */
static ssize_t tls_io(struct lockd_client *c, char *p, size_t n, int writing)
{
	int len = n > 0x40000000 ? 0x40000000 : (int)n;
	ERR_clear_error();
	errno = 0;
	int r = writing ? SSL_write(c->ssl, p, len) : SSL_read(c->ssl, p, len);
	if (r > 0) {
		c->tls_ww = 0;
		return r;
	}
	int e = SSL_get_error(c->ssl, r);
	c->tls_ww = e == SSL_ERROR_WANT_WRITE;
	switch (e) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		if (writing) {
			errno = EPIPE;
			return -1;
		}
		return 0;
	case SSL_ERROR_SYSCALL:
		if (ERR_peek_last_error() == 0) {
			if (errno == 0 && !writing)
				return 0; /* EOF */
			if (errno == 0)
				errno = EPIPE;
			return -1;
		}
		/* fall through */
	default: {
		char what[400];
		snprintf(what, sizeof(what), "TLS with %s", c->peer);
		tls_fail(c, what);
		errno = EPROTO;
		return -1;
	}
	}
}
#endif

/* The TCP (or Unix) connection is up: TLS handshake, or open. */
static int connected(struct lockd_client *c)
{
#ifdef HAVE_TLS
	if (c->ssl) {
		c->st = CS_HANDSHAKE;
		return tls_handshake(c);
	}
#endif
	c->st = CS_OPEN;
	return 0;
}

static ssize_t io_send(struct lockd_client *c, const char *p, size_t n)
{
#ifdef HAVE_TLS
	if (c->ssl)
		return tls_io(c, (char *)p, n, 1);
#endif
	return send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static ssize_t io_recv(struct lockd_client *c, char *p, size_t n)
{
#ifdef HAVE_TLS
	if (c->ssl)
		return tls_io(c, p, n, 0);
#endif
	return recv(c->fd, p, n, MSG_DONTWAIT);
}

/* ------------------------------------------------------------ I/O */

static int do_flush(struct lockd_client *c)
{
	while (c->st == CS_OPEN && c->out.off < c->out.len && !c->send_errno) {
		ssize_t w = io_send(c, c->out.p + c->out.off, c->out.len - c->out.off);
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
			return fail(c, LOCKD_ENOMEM, "out of memory");
		ssize_t k = io_recv(c, c->in.p + c->in.len, c->in.cap - c->in.len);
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
			return fail(c, LOCKD_ECLOSED,
			            "%s reset the connection (%zu request%s unanswered)", c->peer,
			            c->qlen, c->qlen == 1 ? "" : "s");
		return fail(c, LOCKD_EIO, "receive from %s: %s", c->peer, strerror(errno));
	}
	if (c->eof && c->st == CS_OPEN) {
		if (c->in.len > c->in.off)
			return fail(c, LOCKD_ECLOSED,
			            "%s closed the connection in the middle of a line", c->peer);
		return fail(c, LOCKD_ECLOSED, "%s closed the connection (%zu request%s unanswered)",
		            c->peer, c->qlen, c->qlen == 1 ? "" : "s");
	}
	if (c->send_errno && c->st == CS_OPEN)
		return fail(c, LOCKD_EIO, "send to %s: %s", c->peer, strerror(c->send_errno));
	return c->st == CS_FAILED ? c->status : 0;
}

static void addr_name(const struct sockaddr *sa, char *out, size_t outlen)
{
	char host[NI_MAXHOST], serv[NI_MAXSERV];
	if (sa->sa_family == AF_UNIX) {
		snprintf(out, outlen, "unix:%s", ((const struct sockaddr_un *)sa)->sun_path);
		return;
	}
	socklen_t l =
	    sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	if (getnameinfo(sa, l, host, sizeof(host), serv, sizeof(serv),
	                NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(out, outlen, "?");
		return;
	}
	snprintf(out, outlen, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

/* Start connecting to addr[ai], then the next ones until one is under
 * way or connected. */
static int connect_next(struct lockd_client *c)
{
	for (; c->ai < c->naddr; c->ai++) {
		const struct sockaddr *sa = (const struct sockaddr *)&c->addr[c->ai];
		if (c->fd >= 0)
			close(c->fd);
		c->fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c->fd < 0) {
			c->connect_errno = errno;
			continue;
		}
		addr_name(sa, c->peer, sizeof(c->peer));
		if (sa->sa_family != AF_UNIX) {
			int one = 1;
			setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		int r;
		do
			r = connect(c->fd, sa, c->alen[c->ai]);
		while (r != 0 && errno == EINTR);
		if (r == 0)
			return connected(c);
		if (errno == EINPROGRESS) {
			c->st = CS_CONNECTING;
			return 0;
		}
		c->connect_errno = errno;
	}
	return fail(c, LOCKD_ECONNECT, "connect %s: %s", c->peer, strerror(c->connect_errno));
}

/* While connecting: has the connect finished? */
static int connect_check(struct lockd_client *c)
{
	struct pollfd pf = {c->fd, POLLOUT, 0};
	int r = poll(&pf, 1, 0);
	if (r <= 0)
		return 0;
	int err = 0;
	socklen_t l = sizeof(err);
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l) != 0)
		err = errno;
	if (err == 0)
		return connected(c);
	c->connect_errno = err;
	c->ai++;
	return connect_next(c);
}

static int check_deadlines(struct lockd_client *c)
{
	if (c->st == CS_FAILED)
		return c->status;
	int64_t now = mono_us();
	if (c->connect_deadline_us && (c->st != CS_OPEN || !c->authed) &&
	    now >= c->connect_deadline_us)
		return fail(c, LOCKD_ETIMEDOUT,
		            c->st == CS_CONNECTING  ? "connect %s: no connection within %d ms"
		            : c->st == CS_HANDSHAKE ? "TLS handshake with %s: not done within %d ms"
		                                    : "AUTH to %s: no reply within %d ms",
		            c->peer, c->connect_timeout_ms);
	for (size_t i = 0; i < c->qlen; i++) {
		struct pend *p = q_at(c, i);
		if (p->deadline_us && now >= p->deadline_us)
			return fail(c, LOCKD_ETIMEDOUT, "no reply to %s from %s within %d ms",
			            p->cmd, c->peer, p->timeout_ms);
	}
	return 0;
}

/* ------------------------------------------------------------ public */

static struct lockd_client *client_new(const struct lockd_opts *o)
{
	struct lockd_client *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = -1;
	c->st = CS_OPEN;
	c->authed = 1;
	c->max_line = o && o->max_line ? o->max_line : LOCKD_MAX_LINE;
	c->connect_timeout_ms =
	    o && o->connect_timeout_ms ? o->connect_timeout_ms : LOCKD_CONNECT_TIMEOUT_MS;
	return c;
}

static int start_auth(struct lockd_client *c, const char *password)
{
	if (!password)
		return 0;
	size_t n = strlen(password);
	if (n == 0 || strpbrk(password, " \t\r\n"))
		return fail(c, LOCKD_EARG, "the password must be one word (no blanks)");
	char *req = malloc(n + 6);
	if (!req)
		return fail(c, LOCKD_ENOMEM, "out of memory");
	memcpy(req, "AUTH ", 5);
	memcpy(req + 5, password, n + 1);
	int rc = enqueue(c, req, n + 5, -1, NULL, W_AUTH);
	memset(req, 0, n + 5);
	free(req);
	if (rc != 0)
		return fail(c, rc, "out of memory");
	c->authed = 0;
	return 0;
}

static int resolve(struct lockd_client *c, const struct lockd_opts *o)
{
	if (o->unix_path) {
		struct sockaddr_un *un = (struct sockaddr_un *)&c->addr[0];
		snprintf(c->peer, sizeof(c->peer), "unix:%s", o->unix_path);
		if (!o->unix_path[0] || strlen(o->unix_path) >= sizeof(un->sun_path))
			return fail(c, LOCKD_EARG, "unix socket path \"%s\": %s", o->unix_path,
			            o->unix_path[0] ? "longer than 107 bytes" : "empty");
		un->sun_family = AF_UNIX;
		strcpy(un->sun_path, o->unix_path);
		c->alen[0] = sizeof(*un);
		c->naddr = 1;
		return 0;
	}
	const char *host = o->host && o->host[0] ? o->host : LOCKD_DEFAULT_HOST;
	int port = o->port ? o->port : LOCKD_DEFAULT_PORT;
	char h[256], serv[16];
	size_t hl = strlen(host);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		host++;
		hl -= 2;
	}
	snprintf(c->peer, sizeof(c->peer), "%s:%d", o->host ? o->host : host, port);
	if (port < 1 || port > 65535)
		return fail(c, LOCKD_EARG, "port %d: not in 1-65535", port);
	if (hl >= sizeof(h))
		return fail(c, LOCKD_EARG, "host name longer than 255 bytes");
	memcpy(h, host, hl);
	h[hl] = '\0';
	snprintf(serv, sizeof(serv), "%d", port);
	struct addrinfo hints = {0}, *res = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	int r = getaddrinfo(h, serv, &hints, &res);
	if (r != 0)
		return fail(c, LOCKD_ECONNECT, "%s: %s", c->peer,
		            r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
	for (struct addrinfo *a = res; a && c->naddr < MAX_ADDRS; a = a->ai_next) {
		if (a->ai_addrlen > sizeof(c->addr[0]))
			continue;
		memcpy(&c->addr[c->naddr], a->ai_addr, a->ai_addrlen);
		c->alen[c->naddr++] = a->ai_addrlen;
	}
	freeaddrinfo(res);
	if (c->naddr == 0)
		return fail(c, LOCKD_ECONNECT, "%s: no address", c->peer);
	return 0;
}

/* The name lockd's certificate must carry: tls_server_name, else host
 * (without the brackets of an IPv6 literal), else none (Unix sockets). */
static const char *server_name(const struct lockd_opts *o, int open_fd, char *buf, size_t n)
{
	if (o->tls_server_name && *o->tls_server_name)
		return o->tls_server_name;
	if (o->unix_path || (open_fd && !(o->host && *o->host)))
		return NULL;
	const char *host = o->host && *o->host ? o->host : LOCKD_DEFAULT_HOST;
	size_t hl = strlen(host);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		host++;
		hl -= 2;
	}
	if (hl >= n)
		return NULL;
	memcpy(buf, host, hl);
	buf[hl] = '\0';
	return buf;
}

static int start_tls(struct lockd_client *c, const struct lockd_opts *o, const char *name)
{
#ifdef HAVE_TLS
	return tls_setup(c, o, name);
#else
	(void)o;
	(void)name;
	return fail(c, LOCKD_ETLS, "TLS to %s: liblockd was built without TLS", c->peer);
#endif
}

int lockd_connect_start(const struct lockd_opts *o, struct lockd_client **out)
{
	static const struct lockd_opts defaults;
	if (!out)
		return LOCKD_EARG;
	if (!o)
		o = &defaults;
	struct lockd_client *c = client_new(o);
	*out = c;
	if (!c)
		return LOCKD_ENOMEM;
	if (c->connect_timeout_ms > 0)
		c->connect_deadline_us = mono_us() + (int64_t)c->connect_timeout_ms * 1000;
	int rc = resolve(c, o);
	if (rc == 0)
		rc = start_auth(c, o->password);
	if (rc == 0 && o->tls) {
		char name[256];
		rc = start_tls(c, o, server_name(o, 0, name, sizeof(name)));
	}
	if (rc == 0)
		rc = connect_next(c);
	return rc;
}

int lockd_open_fd(int fd, const struct lockd_opts *o, struct lockd_client **out)
{
	if (!out)
		return LOCKD_EARG;
	struct lockd_client *c = client_new(o);
	*out = c;
	if (!c)
		return LOCKD_ENOMEM;
	c->fd = fd;
	snprintf(c->peer, sizeof(c->peer), "lockd");
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	if (fd >= 0 && getpeername(fd, (struct sockaddr *)&ss, &l) == 0 &&
	    (ss.ss_family == AF_INET || ss.ss_family == AF_INET6))
		addr_name((struct sockaddr *)&ss, c->peer, sizeof(c->peer));
	int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return fail(c, LOCKD_EARG, "fd %d: %s", fd, strerror(errno));
	int rc = start_auth(c, o ? o->password : NULL);
	if (rc == 0 && o && o->tls) {
		char name[256];
		if (c->connect_timeout_ms > 0)
			c->connect_deadline_us = mono_us() + (int64_t)c->connect_timeout_ms * 1000;
		rc = start_tls(c, o, server_name(o, 1, name, sizeof(name)));
		if (rc == 0)
			rc = connected(c);
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
		connect_check(c);
#ifdef HAVE_TLS
	if (c->st == CS_HANDSHAKE)
		tls_handshake(c);
#endif
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
	if (c->st == CS_CONNECTING || c->out.off < c->out.len)
		return POLLIN | POLLOUT;
#ifdef HAVE_TLS
	if (c->tls_ww)
		return POLLIN | POLLOUT;
#endif
	return POLLIN;
}

int lockd_timeout_ms(const struct lockd_client *c)
{
	if (!c || c->st == CS_FAILED)
		return -1;
	int64_t d = 0;
#ifdef HAVE_TLS
	if (c->ssl && c->st == CS_OPEN && SSL_has_pending(c->ssl))
		return 0; /* decrypted bytes wait in OpenSSL, not in the socket */
#endif
	if (c->connect_deadline_us && (c->st != CS_OPEN || !c->authed))
		d = c->connect_deadline_us;
	for (size_t i = 0; i < c->qlen; i++) {
		const struct pend *p = &c->q[(c->qhead + i) % c->qcap];
		if (p->deadline_us && (!d || p->deadline_us < d))
			d = p->deadline_us;
	}
	if (!d)
		return -1;
	int64_t left = d - mono_us();
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

/* vsnprintf into a stack buffer, or the heap for long requests. */
static char *vformat(char *stackbuf, size_t n, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int len = vsnprintf(stackbuf, n, fmt, ap);
	if (len < 0) {
		va_end(ap2);
		return NULL;
	}
	if ((size_t)len < n) {
		va_end(ap2);
		return stackbuf;
	}
	char *p = malloc((size_t)len + 1);
	if (p)
		vsnprintf(p, (size_t)len + 1, fmt, ap2);
	va_end(ap2);
	return p;
}

int lockd_callf(struct lockd_client *c, int timeout_ms, const struct lockd_reply **reply,
                const char *fmt, ...)
{
	char sb[512];
	va_list ap;
	va_start(ap, fmt);
	char *req = vformat(sb, sizeof(sb), fmt, ap);
	va_end(ap);
	if (!req)
		return LOCKD_ENOMEM;
	int rc = lockd_call(c, req, timeout_ms, reply);
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
	va_list ap;
	va_start(ap, fmt);
	char *req = vformat(sb, sizeof(sb), fmt, ap);
	va_end(ap);
	if (!req)
		return LOCKD_ENOMEM;
	int rc = lockd_send(c, req, timeout_ms, tag);
	if (req != sb)
		free(req);
	return rc;
}

void lockd_close(struct lockd_client *c)
{
	if (!c)
		return;
	if (c->depth) {
		c->close_pending = 1;
		return;
	}
#ifdef HAVE_TLS
	if (c->ssl) {
		ERR_clear_error();
		if (c->fd >= 0 && c->st == CS_OPEN && SSL_is_init_finished(c->ssl))
			SSL_shutdown(c->ssl); /* close_notify, as far as the socket takes it */
		SSL_free(c->ssl);
		ERR_clear_error();
	}
	SSL_CTX_free(c->ctx);
	BIO_meth_free(c->biom);
#endif
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
};

int lockd_tls_available(void)
{
#ifdef HAVE_TLS
	return 1;
#else
	return 0;
#endif
}

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
