/* harness: the lockd line client (struct cl, see harness.h), on liblockd.
 *
 * Every session is a liblockd client (lockd/client.h). Its replies and
 * events come through liblockd's callbacks into one queue of lines, in
 * the order lockd sent them; the tests read the queue (cl_reply() skips
 * and records events: LOST, ELECTED, NOLEADER; cl_line() does not). liblockd checks every
 * line: ended by CR LF, no NUL byte, at most 4 MB, no event inside a
 * multi-line reply; a line that breaks one of these fails the test at the
 * caller's line.
 *
 * Lines that answer no request liblockd has out (a greeting such as ERR
 * LIMIT, the reply to bytes a test wrote to c->fd itself) are queued as
 * they come, through liblockd's line callback. Bytes that are not requests
 * as lockd_send() sends them (a CR, a NUL byte, an empty or unfinished
 * line) go out as they are, and make the session raw: from then on every
 * line is queued as it comes (still checked by liblockd), for the test to
 * pair with what it sent. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "lockd/client.h"

#define CL_MAX_LINE (4u << 20) /* longest line accepted from lockd */

#define ESC(s) h_esc((s), strlen(s))

struct cl_qline {
	char *text;
	int event; /* an event line: LOST, ELECTED, NOLEADER */
};

/* ------------------------------------------------------------------ the queue */

static void q_push(struct cl *c, const char *line, size_t n, int event)
{
	if (c->qhead + c->qlen == c->qcap) {
		if (c->qhead > 0) {
			memmove(c->q, c->q + c->qhead, c->qlen * sizeof(*c->q));
			c->qhead = 0;
		} else {
			c->qcap = c->qcap ? c->qcap * 2 : 64;
			c->q = realloc(c->q, c->qcap * sizeof(*c->q));
			ck_assert(c->q != NULL);
		}
	}
	char *t = malloc(n + 1);
	ck_assert(t != NULL);
	memcpy(t, line, n);
	t[n] = '\0';
	c->q[c->qhead + c->qlen++] = (struct cl_qline){t, event};
}

/* The next line of the queue (valid until the next take). */
static const char *q_take(struct cl *c, int *event)
{
	struct cl_qline e = c->q[c->qhead++];
	if (--c->qlen == 0)
		c->qhead = 0;
	free(c->line);
	c->line = e.text;
	*event = e.event;
	return c->line;
}

/* An event's first word (protocol 1.3 added ELECTED and NOLEADER). */
static int is_event_word(const char *l, const char *w)
{
	size_t n = strlen(w);
	return strncmp(l, w, n) == 0 && (l[n] == ' ' || l[n] == '\0');
}

static int is_event(const char *l)
{
	return is_event_word(l, "LOST") || is_event_word(l, "ELECTED") ||
	       is_event_word(l, "NOLEADER");
}

/* ------------------------------------------------------------------ liblockd's callbacks */

static void on_reply(struct lockd_client *lc, const struct lockd_reply *r, void *tag, void *arg)
{
	struct cl *c = arg;
	size_t n = r->kind == LOCKD_R_LIST ? r->nlines : 0; /* lines[nlines]: END */
	for (size_t i = 0; i <= n; i++)
		q_push(c, r->lines[i], strlen(r->lines[i]), 0);
}

static void on_event(struct lockd_client *lc, const struct lockd_event *ev, void *arg)
{
	struct cl *c = arg;
	if (ev->in_list && !c->fault[0])
		snprintf(c->fault, sizeof(c->fault), "'%s' between the lines of a multi-line reply",
		         ESC(ev->line));
	q_push(c, ev->line, strlen(ev->line), 1);
}

/* Every line before liblockd reads it as a reply or an event: a raw
 * session's lines, and lines that answer no request out, are queued here
 * as they come. */
static int on_line(struct lockd_client *lc, const char *line, size_t len, void *arg)
{
	struct cl *c = arg;
	if (!c->raw && (lockd_pending(lc) > 0 || is_event(line)))
		return 0;
	q_push(c, line, len, is_event(line));
	return 1;
}

/* After a liblockd call on c (rc its result): EOF or a reset ends the
 * session (c->eof); any other failure, or a fault a callback saw, fails
 * the test. */
static void check(const char *file, int line, struct cl *c, int rc)
{
	if (c->fault[0])
		h_fail_at(file, line, "lockd sent %s", c->fault);
	int st = lockd_status(c->lc);
	if (st == LOCKD_ECLOSED) {
		c->eof = 1;
		/* lockd_error() says so (liblockd's unit tests hold it to it) */
		c->cut = strstr(lockd_error(c->lc), "in the middle of a line") != NULL;
		return;
	}
	if (st != LOCKD_OK)
		h_fail_at(file, line, "%s (%s)", lockd_error(c->lc), lockd_status_name(st));
	if (rc != LOCKD_OK)
		h_fail_at(file, line, "liblockd: %s", lockd_strerror(rc));
}

/* Make c raw (see the top of this file). Replies still owed by liblockd
 * could be half read: then the test must read them first. */
static void go_raw(const char *file, int line, struct cl *c)
{
	if (!c->raw && lockd_status(c->lc) == LOCKD_OK && lockd_pending(c->lc) > 0)
		h_fail_at(file, line,
		          "harness: raw bytes while %zu requests sent through liblockd are "
		          "unanswered; read their replies first",
		          lockd_pending(c->lc));
	c->raw = 1;
}

/* Wait until a line is queued, or deadline passed (then one last look
 * without waiting); 1 when a line is queued. lockd_wait() waits even when
 * its first step read what we wait for: step first. */
static int wait_line(const char *file, int line, struct cl *c, double deadline)
{
	for (;;) {
		if (!c->qlen && !c->eof)
			check(file, line, c, lockd_step(c->lc));
		if (c->qlen)
			return 1;
		double rem = deadline - h_now_ms();
		if (c->eof || rem <= 0)
			return 0;
		check(file, line, c, lockd_wait(c->lc, (int)rem + 1));
	}
}

/* ------------------------------------------------------------------ sessions */

/* A session on fd, a socket connected to lockd. The harness connects
 * itself (lockd_connect() reads while it connects, and lockd may greet a
 * client it turns away before any request: ERR LIMIT). */
static struct cl *cl_new(const char *file, int line, int fd, const char *where)
{
	if (fd < 0)
		h_fail_at(file, line, "connect %s: %s", where, strerror(errno));
	struct cl *c = calloc(1, sizeof(*c));
	ck_assert(c != NULL);
	struct lockd_opts o = {.size = sizeof(struct lockd_opts), .max_line = CL_MAX_LINE};
	if (lockd_open_fd(fd, &o, &c->lc) != LOCKD_OK)
		h_fail_at(file, line, "%s", c->lc ? lockd_error(c->lc) : "out of memory");
	c->fd = fd;
	lockd_set_callbacks(c->lc, on_reply, on_event, c);
	lockd_set_line_callback(c->lc, on_line, c);
	return c;
}

struct cl *cl_tcp_at(const char *file, int line, int port)
{
	char where[32];
	snprintf(where, sizeof(where), "127.0.0.1:%d", port);
	return cl_new(file, line, h_connect_tcp(port), where);
}

struct cl *cl_unix_at(const char *file, int line, const char *path)
{
	char where[PATH_MAX + 8];
	snprintf(where, sizeof(where), "unix:%s", path);
	return cl_new(file, line, h_connect_unix(path), where);
}

void cl_close(struct cl *c)
{
	if (!c)
		return;
	lockd_close(c->lc);
	while (c->qlen) {
		int ev;
		q_take(c, &ev);
	}
	free(c->q);
	free(c->line);
	free(c);
}

int cl_take_fd(struct cl *c)
{
	int fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 3);
	ck_assert_msg(fd >= 0, "dup: %s", strerror(errno));
	int fl = fcntl(fd, F_GETFL);
	ck_assert(fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0);
	cl_close(c);
	return fd;
}

const char *cl_error(const struct cl *c)
{
	return lockd_error(c->lc);
}

size_t cl_queued(const struct cl *c)
{
	return c->qlen;
}

void cl_shutdown_wr(struct cl *c)
{
	shutdown(c->fd, SHUT_WR);
}

/* Bytes that lockd_send() would send as they are: whole lines, each a
 * request it takes (not empty, no CR, no NUL byte). */
static int as_requests(const char *p, size_t n)
{
	if (n == 0 || p[n - 1] != '\n')
		return 0;
	for (size_t i = 0, start = 0; i < n; i++) {
		if (p[i] == '\r' || p[i] == '\0')
			return 0;
		if (p[i] == '\n') {
			if (i == start)
				return 0;
			start = i + 1;
		}
	}
	return 1;
}

void cl_sendn_at(const char *file, int line, struct cl *c, const void *p, size_t n)
{
	const char *b = p;
	if (c->raw || lockd_status(c->lc) != LOCKD_OK || !as_requests(b, n)) {
		go_raw(file, line, c);
		if (h_send_all(c->fd, p, n, 5000) != 0)
			h_fail_at(file, line, "send '%s': %s", h_esc(p, n), strerror(errno));
		return;
	}
	for (const char *l = b, *e; l < b + n; l = e + 1) {
		e = memchr(l, '\n', (size_t)(b + n - l));
		char *req = strndup(l, (size_t)(e - l));
		ck_assert(req != NULL);
		int rc = lockd_send(c->lc, req, -1, NULL);
		free(req);
		check(file, line, c, rc);
	}
	/* all of it out, as one write as far as the socket takes it */
	double deadline = h_now_ms() + 5000;
	check(file, line, c, lockd_flush(c->lc));
	while (!c->eof && (lockd_want(c->lc) & POLLOUT)) {
		double rem = deadline - h_now_ms();
		if (rem <= 0)
			h_fail_at(file, line, "send '%s': not sent within 5 s", h_esc(p, n));
		check(file, line, c, lockd_wait(c->lc, (int)rem + 1));
	}
}

const char *cl_line_at(const char *file, int line, struct cl *c, int timeout_ms)
{
	double deadline = h_now_ms() + timeout_ms;
	if (!wait_line(file, line, c, deadline))
		return NULL;
	int ev;
	return q_take(c, &ev);
}

const char *cl_reply_at(const char *file, int line, struct cl *c, int timeout_ms)
{
	double deadline = h_now_ms() + timeout_ms;
	for (;;) {
		if (!wait_line(file, line, c, deadline))
			return NULL;
		int ev;
		const char *l = q_take(c, &ev);
		if (!ev)
			return l;
		if (c->nlost < 32)
			snprintf(c->lost[c->nlost], sizeof(c->lost[0]), "%s", l);
		c->nlost++;
	}
}

const char *cl_cmd_at(const char *file, int line, struct cl *c, const char *req, int timeout_ms)
{
	size_t n = strlen(req);
	char *b = malloc(n + 2);
	ck_assert(b != NULL);
	memcpy(b, req, n);
	b[n] = '\n';
	cl_sendn_at(file, line, c, b, n + 1);
	free(b);
	return cl_reply_at(file, line, c, timeout_ms);
}

void cl_want_eof_at(const char *file, int line, struct cl *c, int timeout_ms)
{
	const char *l = cl_line_at(file, line, c, timeout_ms);
	if (l)
		h_fail_at(file, line, "got '%s', expected the connection to close", ESC(l));
	if (!c->eof)
		h_fail_at(file, line, "connection still open after %d ms, expected it to close",
		          timeout_ms);
	if (c->cut)
		h_fail_at(file, line, "unterminated bytes before close (%s)", cl_error(c));
}

int cl_fill_at(const char *file, int line, struct cl *c)
{
	size_t before = c->qlen;
	if (!c->eof)
		check(file, line, c, lockd_step(c->lc));
	return (int)(c->qlen - before);
}

const char *cl_take_line_at(const char *file, int line, struct cl *c)
{
	if (c->fault[0])
		check(file, line, c, LOCKD_OK);
	if (!c->qlen)
		return NULL;
	int ev;
	return q_take(c, &ev);
}

void cl_expect_at(const char *file, int line, struct cl *c, const char *req, const char *exp)
{
	const char *r = cl_cmd_at(file, line, c, req, H_TMO);
	if (!r)
		h_fail_at(file, line, "'%s': no reply within %d ms (%s), expected '%s'", ESC(req),
		          H_TMO, c->eof ? "EOF" : "timeout", ESC(exp));
	if (strcmp(r, exp) != 0)
		h_fail_at(file, line, "'%s': got '%s', expected '%s'", ESC(req), ESC(r), ESC(exp));
}

void cl_expect_prefix_at(const char *file, int line, struct cl *c, const char *req,
                         const char *prefix)
{
	const char *r = cl_cmd_at(file, line, c, req, H_TMO);
	if (!r)
		h_fail_at(file, line, "'%s': no reply within %d ms (%s), expected '%s...'",
		          ESC(req), H_TMO, c->eof ? "EOF" : "timeout", ESC(prefix));
	if (strncmp(r, prefix, strlen(prefix)) != 0)
		h_fail_at(file, line, "'%s': got '%s', expected '%s...'", ESC(req), ESC(r),
		          ESC(prefix));
}

void cl_want_at(const char *file, int line, struct cl *c, const char *exp, int timeout_ms)
{
	const char *r = cl_reply_at(file, line, c, timeout_ms);
	if (!r)
		h_fail_at(file, line, "no reply within %d ms (%s), expected '%s'", timeout_ms,
		          c->eof ? "EOF" : "timeout", ESC(exp));
	if (strcmp(r, exp) != 0)
		h_fail_at(file, line, "got '%s', expected '%s'", ESC(r), ESC(exp));
}

void cl_want_prefix_at(const char *file, int line, struct cl *c, const char *prefix, int timeout_ms)
{
	const char *r = cl_reply_at(file, line, c, timeout_ms);
	if (!r)
		h_fail_at(file, line, "no reply within %d ms (%s), expected '%s...'", timeout_ms,
		          c->eof ? "EOF" : "timeout", ESC(prefix));
	if (strncmp(r, prefix, strlen(prefix)) != 0)
		h_fail_at(file, line, "got '%s', expected '%s...'", ESC(r), ESC(prefix));
}

unsigned long long h_fence_at(const char *file, int line, const char *reply)
{
	if (!reply)
		h_fail_at(file, line, "no reply, expected 'OK <fence>'");
	const char *p = reply + 3;
	int good = strncmp(reply, "OK ", 3) == 0 && *p >= '1' && *p <= '9' &&
	           strspn(p, "0123456789") == strlen(p) && strlen(p) <= 19;
	if (!good)
		h_fail_at(file, line, "got '%s', expected 'OK <fence>' (a positive integer)",
		          ESC(reply));
	return strtoull(p, NULL, 10);
}

unsigned long long cl_lock_at(const char *file, int line, struct cl *c, const char *req)
{
	const char *r = cl_cmd_at(file, line, c, req, H_TMO);
	if (!r)
		h_fail_at(file, line, "'%s': no reply within %d ms (%s)", ESC(req), H_TMO,
		          c->eof ? "EOF" : "timeout");
	if (strncmp(r, "OK ", 3) != 0)
		h_fail_at(file, line, "'%s': got '%s', expected 'OK <fence>'", ESC(req), ESC(r));
	return h_fence_at(file, line, r);
}

unsigned long long cl_want_ok_at(const char *file, int line, struct cl *c, int timeout_ms)
{
	const char *r = cl_reply_at(file, line, c, timeout_ms);
	if (!r)
		h_fail_at(file, line, "no reply within %d ms (%s), expected 'OK <fence>'",
		          timeout_ms, c->eof ? "EOF" : "timeout");
	return h_fence_at(file, line, r);
}

char *cl_timed_at(const char *file, int line, struct cl *c, const char *req, double *ms)
{
	double t0 = h_now_ms();
	const char *r = cl_cmd_at(file, line, c, req, 5000);
	*ms = h_now_ms() - t0;
	if (!r)
		h_fail_at(file, line, "'%s': no reply after %.0f ms (%s)", ESC(req), *ms,
		          c->eof ? "connection closed" : "timeout");
	char *copy = strdup(r);
	ck_assert(copy != NULL);
	return copy;
}

void cl_silence_at(const char *file, int line, struct cl *c, int ms)
{
	double end = h_now_ms() + ms;
	for (;;) {
		double rem = end - h_now_ms();
		if (rem <= 0)
			return;
		const char *l = cl_reply_at(file, line, c, (int)rem);
		if (l)
			h_fail_at(file, line, "unexpected line '%s' (expected nothing for %d ms)",
			          ESC(l), ms);
		if (c->eof)
			h_fail_at(file, line, "connection closed (expected nothing for %d ms)", ms);
	}
}

static int parse_ll(const char *s, long long *v)
{
	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 18)
		return -1;
	*v = strtoll(s, NULL, 10);
	return 0;
}

int cl_status_at(const char *file, int line, struct cl *c, const char *key, long long *ttl,
                 long long *waiters)
{
	char req[1024];
	snprintf(req, sizeof(req), "STATUS %s", key);
	const char *r = cl_cmd_at(file, line, c, req, H_TMO);
	if (!r)
		h_fail_at(file, line, "'%s': no reply", ESC(req));
	if (strcmp(r, "FREE") == 0)
		return 0;
	char a[64], b[64], extra;
	if (strncmp(r, "HELD ", 5) == 0 && sscanf(r + 5, "%63s %63s%c", a, b, &extra) == 2) {
		long long t, w;
		char back[200];
		snprintf(back, sizeof(back), "HELD %s %s", a, b);
		if (strcmp(back, r) == 0 && parse_ll(a, &t) == 0 && parse_ll(b, &w) == 0) {
			if (ttl)
				*ttl = t;
			if (waiters)
				*waiters = w;
			return 1;
		}
	}
	h_fail_at(file, line, "'%s': got '%s', expected 'FREE' or 'HELD ttl waiters'", ESC(req),
	          ESC(r));
}

void cl_wait_waiters_at(const char *file, int line, struct cl *c, const char *key, long long n,
                        int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	long long w = -1;
	int held = 0;
	for (int t = 0; t < 10000; t++) {
		long long ttl;
		held = cl_status_at(file, line, c, key, &ttl, &w);
		if (held && w == n)
			return;
		if (h_now_ms() >= end)
			break;
		h_sleep_ms(5);
	}
	h_fail_at(file, line, "STATUS %s: waiters never became %lld within %d ms (last: %s %lld)",
	          key, n, timeout_ms, held ? "HELD" : "FREE", w);
}

char *cl_stat_at(const char *file, int line, struct cl *c, const char *name)
{
	cl_sendn_at(file, line, c, "STATS\n", 6);
	char *val = NULL;
	const char *l = cl_reply_at(file, line, c, H_TMO);
	for (int n = 0;; n++) {
		if (!l)
			h_fail_at(file, line, "STATS: reply ended (%s) before END",
			          c->eof ? "EOF" : "timeout");
		if (strcmp(l, "END") == 0)
			break;
		if (n > 10000)
			h_fail_at(file, line, "STATS: more than 10000 lines");
		const char *sp = strncmp(l, "STAT ", 5) == 0 ? strchr(l + 5, ' ') : NULL;
		if (!sp || sp == l + 5 || !sp[1])
			h_fail_at(file, line, "STATS: bad line '%s' (expected 'STAT name value')",
			          ESC(l));
		if ((size_t)(sp - (l + 5)) == strlen(name) &&
		    strncmp(l + 5, name, strlen(name)) == 0) {
			free(val);
			val = strdup(sp + 1);
		}
		l = cl_line_at(file, line, c, H_TMO); /* no event inside a multi-line reply */
	}
	return val;
}

void cl_expect_stat_at(const char *file, int line, struct cl *c, const char *name,
                       const char *value)
{
	char *v = cl_stat_at(file, line, c, name);
	if (!v || strcmp(v, value) != 0)
		h_fail_at(file, line, "STATS %s is '%s', expected '%s'", name,
		          v ? ESC(v) : "(none)", ESC(value));
	free(v);
}

void cl_wait_stat_at(const char *file, int line, struct cl *c, const char *name, const char *value,
                     int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	char *v = NULL;
	for (int t = 0; t < 10000; t++) {
		free(v);
		v = cl_stat_at(file, line, c, name);
		if (v && strcmp(v, value) == 0) {
			free(v);
			return;
		}
		if (h_now_ms() >= end)
			break;
		h_sleep_ms(10);
	}
	h_fail_at(file, line, "STAT %s is %s after %d ms, expected %s", name, v ? v : "(missing)",
	          timeout_ms, value);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *cl_held_keys_at(const char *file, int line, struct cl *c)
{
	cl_sendn_at(file, line, c, "HELD\n", 5);
	char *keys[1024];
	int n = 0;
	const char *l = cl_reply_at(file, line, c, H_TMO);
	for (;;) {
		if (!l)
			h_fail_at(file, line, "HELD: reply ended (%s) before END",
			          c->eof ? "EOF" : "timeout");
		if (strcmp(l, "END") == 0)
			break;
		char k[1024], back[1200], tail;
		unsigned long long f;
		long long h, t;
		if (n >= 1024 || strlen(l) > 1100 ||
		    sscanf(l, "KEY %1023s %llu %lld %lld%c", k, &f, &h, &t, &tail) != 4)
			h_fail_at(file, line, "HELD: bad line '%s'", ESC(l));
		snprintf(back, sizeof(back), "KEY %s %llu %lld %lld", k, f, h, t);
		if (strcmp(back, l) != 0 || f == 0 || h < 1 || t < 0)
			h_fail_at(file, line, "HELD: bad line '%s'", ESC(l));
		keys[n++] = strdup(k);
		l = cl_line_at(file, line, c, H_TMO);
	}
	qsort(keys, (size_t)n, sizeof(keys[0]), cmp_str);
	size_t len = 1;
	for (int i = 0; i < n; i++)
		len += strlen(keys[i]) + 1;
	char *out = malloc(len);
	ck_assert(out != NULL);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (i)
			strcat(out, " ");
		strcat(out, keys[i]);
		free(keys[i]);
	}
	return out;
}
