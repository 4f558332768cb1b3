/* session: one client connection.
 *
 * Requests are answered one at a time, in order. While one waits (in a
 * key's queue or on a quorum call) the session is SS_BLOCKED and later
 * lines simply stay in the input buffer, which is the request queue. A
 * session handles at most limits.reqs_per_event requests per turn and
 * then yields, so that one pipelining client cannot starve the others.
 *
 * Hostile and dead clients: a line must be finished within
 * limits.line_timeout_ms of its first byte (the first line, of the
 * connection); a client that reads none of its replies for as long is
 * closed (the write timeout: no write progress); a session that holds and waits
 * for nothing is closed after limits.idle_timeout_ms. A client that reads
 * too slowly is cut once the output lockd keeps for it passes
 * limits.max_output_bytes: lockd stops answering a client long before
 * (out_high), but events (LOST, ELECTED, NOLEADER) come whether it reads
 * or not. A first line that is HTTP or RESP closes the session
 * unanswered, and so does the limits.max_auth_failures-th wrong AUTH,
 * after its reply. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "elect.h"
#include "elwatch.h"
#include "log.h"
#include "memtrim.h"
#include "proto.h"
#include "resume.h"
#include "session.h"
#include "stats.h"
#include "tls.h"
#include "util.h"
#include "who.h"
#include "lockall.h"

static struct ilist all_sessions;
static const struct config *cfg;
static uint64_t next_id;

#define READ_HIGH_WATER   (256 * 1024)  /* stop reading a client this far ahead */
#define OUTPUT_HIGH_WATER (1024 * 1024) /* stop answering a client this far behind (out_high) */
#define CLOSE_FLUSH_SECS  5             /* give a closing client this long to read */
#define READ_CHUNK        16384         /* one read of a plain socket, at most */

static void process(struct session *s);
static void cut(struct session *s);
static void session_close(struct session *s);
static void session_arm(struct session *s);
static void on_error(struct session *s, int err);

/* Sessions with output to write at the end of this loop turn, and the
 * event that does it: activated by the first reply of a turn, it runs
 * after every callback already active (the masters' answers, the other
 * sessions' input), so one write carries all of a session's replies and
 * no write event is armed unless the kernel would block. */
static struct ilist flushq;
static struct event *flush_ev;

void sessions_set_cfg(const struct config *c)
{
	if (!cfg)
		ilist_init(&all_sessions);
	cfg = c;
}

static void session_free(struct session *s)
{
	ilist_remove(&all_sessions, &s->all);
	ilist_remove(&flushq, &s->flushq);
	if (s->bev) {
		bufferevent_free(s->bev);
	} else {
		event_free(s->rev);
		event_free(s->wev);
		evbuffer_free(s->in);
		evbuffer_free(s->out);
		close(s->fd);
	}
	event_free(s->resume);
	event_free(s->timer);
	if (s->on_free)
		s->on_free(s->on_free_arg);
	free(s->key);
	free(s);
}

/* Free a closing session whose replies have all been written. */
static void session_done(struct session *s)
{
	if (s->tls)
		tls_close_notify(s->bev);
	session_free(s);
}

/* How long a write may make no progress: a client that reads nothing
 * for line_timeout_ms is closed; a closing one gets CLOSE_FLUSH_SECS. */
static struct timeval write_tv(const struct session *s)
{
	if (s->state == SS_CLOSING)
		return (struct timeval){CLOSE_FLUSH_SECS, 0};
	return (struct timeval){(time_t)(cfg->line_timeout_ms / 1000),
	                        (suseconds_t)(cfg->line_timeout_ms % 1000 * 1000)};
}

/* How far behind a client may be before lockd stops answering it:
 * OUTPUT_HIGH_WATER, or half of limits.max_output_bytes when that is
 * less, so that replies alone do not reach the limit (one reply larger
 * than the rest of it, a HELD of very many locks, still can). */
static size_t out_high(void)
{
	size_t lim = (size_t)cfg->max_output_bytes;
	return lim > 0 && lim / 2 < OUTPUT_HIGH_WATER ? lim / 2 : OUTPUT_HIGH_WATER;
}

/* Over TLS the bufferevent writes by itself; a plain session goes on the
 * list written at the end of the turn. */
static void want_flush(struct session *s)
{
	if (s->bev || ilink_linked(&s->flushq) || s->writing)
		return;
	ilist_push(&flushq, &s->flushq);
	if (flushq.len == 1)
		event_active(flush_ev, EV_TIMEOUT, 0);
}

static void set_reading(struct session *s, int on)
{
	if (s->bev) {
		if (on)
			bufferevent_enable(s->bev, EV_READ);
		else
			bufferevent_disable(s->bev, EV_READ);
		return;
	}
	if (on == s->reading)
		return;
	if (on)
		event_add(s->rev, NULL);
	else
		event_del(s->rev);
	s->reading = on;
}

/* Output went empty: a closing session is done; one that stopped
 * answering because its client did not read goes on. */
static void on_drained(struct session *s)
{
	if (s->state == SS_CLOSING) {
		session_done(s);
	} else if (s->state == SS_READING && s->out_full) {
		s->out_full = 0;
		process(s);
	}
}

/* Write what a plain session has; arm the write event only if the
 * kernel takes less than all of it. May free s. */
static void write_out(struct session *s)
{
	if (evbuffer_get_length(s->out) > 0 && evbuffer_write(s->out, s->fd) < 0 &&
	    errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
		on_error(s, errno);
		return;
	}
	if (evbuffer_get_length(s->out) > 0) {
		if (!s->writing) {
			struct timeval tv = write_tv(s);
			event_add(s->wev, &tv);
			s->writing = 1;
		}
		return;
	}
	if (s->writing) {
		event_del(s->wev);
		s->writing = 0;
	}
	on_drained(s);
}

static void flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ilink *l;
	/* Sessions queued while this runs (a drained one that answers
	 * more) are written in the same pass. */
	while ((l = ilist_pop(&flushq)))
		write_out(ilist_entry(l, struct session, flushq));
}

/* Append one line to s's output. It is formatted first and then copied:
 * evbuffer_add fills the output's last chain before it makes another,
 * where evbuffer_add_vprintf would start a chain of twice the line's
 * size for each long line (an ELECTED with a long value), so that the
 * memory behind limits.max_output_bytes is about the bytes counted.
 * Past that limit the connection is cut from the loop (resume_cb; the
 * caller may be walking a list s is on), and nothing more is kept for it
 * meanwhile. */
static void vline(struct session *s, const char *fmt, va_list ap)
{
	static char *buf;
	static size_t cap;
	va_list aq;

	if (s->out_over)
		return;
	va_copy(aq, ap);
	int n = vsnprintf(buf, cap, fmt, aq);
	va_end(aq);
	if (n < 0)
		return;
	if ((size_t)n + 2 > cap) {
		size_t c = cap ? cap : 512;
		while (c < (size_t)n + 2)
			c *= 2;
		char *b = realloc(buf, c);
		if (!b)
			abort();
		buf = b;
		cap = c;
		vsnprintf(buf, cap, fmt, ap);
	}
	memcpy(buf + n, "\r\n", 2);
	evbuffer_add(s->out, buf, (size_t)n + 2);
	s->replied = 1;
	if (cfg->max_output_bytes > 0 &&
	    evbuffer_get_length(s->out) > (size_t)cfg->max_output_bytes) {
		s->out_over = 1;
		event_active(s->resume, EV_TIMEOUT, 0);
		return;
	}
	want_flush(s);
}

void session_line(struct session *s, const char *fmt, ...)
{
	va_list ap;
	if (s->state == SS_CLOSING)
		return;
	va_start(ap, fmt);
	vline(s, fmt, ap);
	va_end(ap);
}

void session_reply(struct session *s, const char *fmt, ...)
{
	va_list ap;
	if (s->state != SS_BLOCKED)
		return; /* closing: nobody to answer */
	va_start(ap, fmt);
	vline(s, fmt, ap);
	va_end(ap);
	s->state = SS_READING;
	s->active_us = now_us();
	/* Go on from the loop, never from inside the caller's callback. */
	event_active(s->resume, EV_TIMEOUT, 0);
}

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	if (s->out_over) {
		cut(s);
		return;
	}
	if (s->state == SS_CLOSING) {
		if (evbuffer_get_length(s->out) == 0)
			session_done(s);
		return;
	}
	if (s->lt->eof && s->state == SS_BLOCKED && lt_waiting(s->lt)) {
		session_close(s); /* its LOCK started to wait after the peer left */
		return;
	}
	process(s);
}

/* A client that reads its output too slowly: closed like one that reads
 * none (a resumable session is detached), and freed now with whatever
 * output it has, which is given back to the system. */
static void cut(struct session *s)
{
	stats.output_limit_closes++;
	log_info("session %llu (%s): more than limits.max_output_bytes (%lld) of output not "
	         "read: closing",
	         (unsigned long long)s->id, s->peer, (long long)cfg->max_output_bytes);
	session_close(s);
	session_free(s);
	memtrim_soon();
}

void session_poke(struct session *s)
{
	event_active(s->resume, EV_TIMEOUT, 0);
}

/* locktab's way back to its clients: a client's ctx is its connection,
 * NULL while its session is detached (1.2). */
static struct session *of_lt(struct lt_client *c)
{
	return c->ctx;
}

static void lt_reply(struct lt_client *c, const char *fmt, va_list ap)
{
	struct session *s = of_lt(c);
	if (!s || s->state != SS_BLOCKED)
		return;
	vline(s, fmt, ap);
	s->state = SS_READING;
	s->active_us = now_us();
	event_active(s->resume, EV_TIMEOUT, 0);
}

static void lt_line(struct lt_client *c, const char *fmt, va_list ap)
{
	struct session *s = of_lt(c);
	if (!s) {
		rs_keep_line(c, fmt, ap); /* detached: sent after its RESUME */
		return;
	}
	if (s->state != SS_CLOSING) {
		vline(s, fmt, ap);
		/* A LOST may leave it holding nothing (once locktab has
		 * dropped the hold): look at its deadlines from the loop. */
		event_active(s->resume, EV_TIMEOUT, 0);
	}
}

static void lt_wake(struct lt_client *c)
{
	if (of_lt(c))
		session_poke(of_lt(c));
}

/* Its session moved to another connection or lockd: close, answer nothing more. */
static void lt_close(struct lt_client *c)
{
	struct session *s = of_lt(c);
	if (s) {
		evbuffer_drain(s->out, evbuffer_get_length(s->out));
		session_close(s);
	}
}

/* End the connection after its replies (too many failed RESUMEs). */
static void lt_quit(struct lt_client *c)
{
	struct session *s = of_lt(c);
	if (s)
		session_close(s);
}

const struct lt_ops session_lt_ops = {lt_reply, lt_line, lt_wake, lt_close, rs_verify, lt_quit};

/* End the session: cancel its wait, release its locks, then close once
 * the output has been written (or CLOSE_FLUSH_SECS passed). */
static void session_close(struct session *s)
{
	if (s->state == SS_CLOSING)
		return;
	s->state = SS_CLOSING;
	stats.clients--;
	log_debug("session %llu (%s): closing with %u lock(s)", (unsigned long long)s->id, s->peer,
	          s->lt->nlocks);
	/* A resumable session is detached (its locks kept for its grace),
	 * any other ends (its locks released). The connection keeps an empty
	 * client of its own from now on. */
	struct rsess *r = s->rs;
	el_conn_end(s->lt); /* observations end with the connection */
	s->rs = NULL;
	s->lt = &s->gone;
	rs_conn_end(r, s->quit);
	set_reading(s, 0);
	evtimer_del(s->timer);
	s->timer_us = 0;
	struct timeval tv = write_tv(s);
	if (s->bev)
		bufferevent_set_timeouts(s->bev, NULL, &tv);
	else if (s->writing)
		event_add(s->wev, &tv);
	event_active(s->resume, EV_TIMEOUT, 0);
}

/* --- deadlines --- */

enum deadline {
	DL_NONE, /* nothing to close it for */
	DL_LINE, /* its unfinished line (or first line) is due */
	DL_IDLE, /* it holds and waits for nothing, and sends nothing */
};

/* lockd does not read s (its replies are not read, or its input is full
 * while a LOCK waits): the time of its unfinished line does not run. */
static void note_pause(struct session *s)
{
	int p = evbuffer_get_length(s->out) > out_high() ||
	        evbuffer_get_length(s->in) >= READ_HIGH_WATER + (size_t)cfg->max_line;
	if (p && !s->paused_us) {
		s->paused_us = now_us();
	} else if (!p && s->paused_us) {
		if (s->line_us)
			s->line_us += now_us() - s->paused_us;
		s->paused_us = 0;
	}
}

static int idle(struct session *s)
{
	return s->state == SS_READING && s->lt->nlocks == 0 && !s->lt->w.lk && !s->lt->call &&
	       evbuffer_get_length(s->in) == 0;
}

/* When s is to be closed unless something changes, and why; 0: never. */
static int64_t deadline(struct session *s, enum deadline *why)
{
	int64_t at = 0;
	*why = DL_NONE;
	if (s->state == SS_CLOSING)
		return 0;
	if (s->line_us && !s->paused_us) {
		at = s->line_us + cfg->line_timeout_ms * 1000;
		*why = DL_LINE;
	}
	if (cfg->idle_timeout_ms > 0 && idle(s)) {
		int64_t i = s->active_us + cfg->idle_timeout_ms * 1000;
		if (!at || i < at) {
			at = i;
			*why = DL_IDLE;
		}
	}
	return at;
}

/* Make the timer fire by s's deadline. It is only ever moved earlier: a
 * deadline that moved later is found when it fires, and set again. */
static void session_arm(struct session *s)
{
	enum deadline why;
	int64_t at = deadline(s, &why);
	if (!at || (s->timer_us && s->timer_us <= at))
		return;
	int64_t d = at - now_us();
	if (d < 0)
		d = 0;
	struct timeval tv = {(time_t)(d / 1000000), (suseconds_t)(d % 1000000)};
	evtimer_add(s->timer, &tv);
	s->timer_us = at;
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	enum deadline why;

	s->timer_us = 0;
	int64_t at = deadline(s, &why);
	if (!at)
		return;
	if (at > now_us()) {
		session_arm(s);
		return;
	}
	if (why == DL_LINE) {
		stats.line_timeouts++;
		log_info("session %llu (%s): no line finished within limits.line_timeout_ms "
		         "(%lld ms): closing",
		         (unsigned long long)s->id, s->peer, (long long)cfg->line_timeout_ms);
	} else {
		stats.idle_timeouts++;
		log_info("session %llu (%s): idle for limits.idle_timeout_ms (%lld ms): closing",
		         (unsigned long long)s->id, s->peer, (long long)cfg->idle_timeout_ms);
	}
	session_close(s);
}

/* Bytes arrived. A line end among the new bytes finishes the line that
 * was open; bytes after the last line end begin a new one. */
static void note_input(struct session *s)
{
	struct evbuffer *in = s->in;
	size_t len = evbuffer_get_length(in);
	int64_t now = now_us();

	s->active_us = now;
	if (s->inlen > len)
		s->inlen = 0;
	if (len > s->inlen) {
		struct evbuffer_ptr p;
		unsigned char last = 0;
		evbuffer_ptr_set(in, &p, len - 1, EVBUFFER_PTR_SET);
		evbuffer_copyout_from(in, &p, &last, 1);
		if (last == '\n') {
			s->line_us = 0;
		} else if (!s->line_us) {
			s->line_us = now;
		} else {
			evbuffer_ptr_set(in, &p, s->inlen, EVBUFFER_PTR_SET);
			if (evbuffer_search_range(in, "\n", 1, &p, NULL).pos >= 0)
				s->line_us = now;
		}
	}
	s->inlen = len;
	note_pause(s);
	session_arm(s);
}

void sessions_rearm(void)
{
	struct timeval wt = {(time_t)(cfg->line_timeout_ms / 1000),
	                     (suseconds_t)(cfg->line_timeout_ms % 1000 * 1000)};
	for (struct ilink *l = ilist_first(&all_sessions); l && l != &all_sessions.head;
	     l = l->next) {
		struct session *s = ilist_entry(l, struct session, all);
		if (s->state == SS_CLOSING)
			continue;
		if (s->bev)
			bufferevent_set_timeouts(s->bev, NULL, &wt);
		else if (s->writing)
			event_add(s->wev, &wt);
		session_arm(s);
	}
}

/* What a first line that is not lockd's protocol is, or NULL. Browsers
 * (a page can make one POST anywhere) and Redis clients pointed at the
 * wrong port are closed unanswered, as Redis closes HTTP. */
static const char *foreign(const char *line, size_t len)
{
	static const struct {
		const char *start, *what;
	} kinds[] = {
	    {"GET ", "HTTP"},  {"POST ", "HTTP"},     {"HEAD ", "HTTP"},     {"PUT ", "HTTP"},
	    {"Host:", "HTTP"}, {"*", "RESP (Redis)"}, {"$", "RESP (Redis)"},
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t n = strlen(kinds[i].start);
		if (len >= n && memcmp(line, kinds[i].start, n) == 0)
			return kinds[i].what;
	}
	return NULL;
}

static void close_foreign(struct session *s, const char *what, const char *line, size_t len)
{
	char shown[48];
	size_t n = 0;
	/* Printable bytes only: the line is the peer's, the log is ours. */
	for (size_t i = 0; i < len && n < sizeof(shown) - 1; i++)
		shown[n++] = line[i] >= 0x20 && line[i] < 0x7f ? line[i] : '?';
	shown[n] = '\0';
	stats.foreign_protocol++;
	log_warn("session %llu (%s): first line looks like %s, not lockd's protocol (\"%s%s\"): "
	         "closing",
	         (unsigned long long)s->id, s->peer, what, shown, len > n ? "..." : "");
	session_close(s);
}

static void auth_failed(struct session *s)
{
	int64_t max = cfg->max_auth_failures;
	int last = max > 0 && s->auth_failures + 1 >= max;

	stats.auth_failures++;
	s->auth_failures++;
	log_warn("session %llu (%s): AUTH with a wrong password (%d in this session)%s",
	         (unsigned long long)s->id, s->peer, s->auth_failures,
	         last ? ": closing (limits.max_auth_failures)" : "");
	session_reply(s, "ERR AUTH wrong password");
	if (last) {
		stats.auth_closes++;
		session_close(s);
	}
}

static void copy_key(struct session *s, const struct request *r)
{
	if (r->klen + 1 > s->keycap) {
		char *k = realloc(s->key, r->klen + 1);
		if (!k)
			abort();
		s->key = k;
		s->keycap = r->klen + 1;
	}
	memcpy(s->key, r->key, r->klen);
	s->key[r->klen] = '\0';
	s->klen = r->klen;
}

static int auth_ok(const char *pw, size_t len)
{
	size_t n = strlen(cfg->password);
	unsigned char d = (unsigned char)(n != len);
	/* Compare in time independent of where the first difference is. */
	for (size_t i = 0; i < len; i++)
		d |= (unsigned char)(pw[i] ^ cfg->password[i < n ? i : 0]);
	return d == 0 && n > 0;
}

/* Handle one request line. Leaves s SS_READING when answered at once,
 * SS_BLOCKED when the answer comes later. */
static void handle(struct session *s, const char *line, size_t len)
{
	struct request r;
	const char *msg;
	const char *what = s->replied ? NULL : foreign(line, len);

	if (what) {
		close_foreign(s, what, line, len);
		return;
	}
	struct proto_limits lim = {(size_t)cfg->max_key_len, (uint32_t)cfg->max_permits,
	                           (uint32_t)cfg->max_keys};
	enum proto_err e = proto_parse_ex(line, len, &lim, &r, &msg);

	s->state = SS_BLOCKED;
	s->lt->req_us = now_us();
	if (e != PE_NONE) {
		stats.protocol_errors++;
		session_reply(s, "ERR %s %s", proto_err_name(e), msg);
		return;
	}
	if (!s->authed && r.cmd != CMD_AUTH && r.cmd != CMD_PING && r.cmd != CMD_QUIT) {
		session_reply(s, "ERR NOAUTH authenticate with AUTH first");
		return;
	}
	if (r.key) {
		copy_key(s, &r);
		r.key = s->key;
	}
	switch (r.cmd) {
	case CMD_PING:
		if (r.word) {
			session_reply(s, "PONG %.*s", (int)r.wlen, r.word);
		} else {
			session_reply(s, "PONG");
		}
		break;
	case CMD_LOCK:
	case CMD_TRYLOCK:
		lt_lock(s->lt, &r);
		break;
	case CMD_UNLOCK:
		if (!el_unlock(s->lt, r.key, r.klen)) /* a leader's: with its value */
			lt_unlock(s->lt, r.key, r.klen);
		break;
	case CMD_EXTEND:
		lt_extend(s->lt, r.key, r.klen, r.ttl_ms);
		break;
	case CMD_STATUS:
		lt_status(s->lt, r.key, r.klen, r.permits);
		break;
	case CMD_HELD:
		lt_held(s->lt);
		break;
	case CMD_STATS:
		stats_write(s->out, locktab_keys());
		session_reply(s, "END");
		break;
	case CMD_AUTH:
		if (!cfg->password[0]) {
			session_reply(s, "ERR AUTH no password is configured");
		} else if (auth_ok(r.word, r.wlen)) {
			s->authed = 1;
			session_reply(s, "OK");
		} else {
			auth_failed(s);
		}
		break;
	case CMD_QUIT:
		session_reply(s, "OK");
		s->quit = 1;
		session_close(s);
		break;
	case CMD_SESSION:
		rs_session(s->rs, r.has_grace, r.grace_ms);
		break;
	case CMD_RESUME:
		rs_resume(s->rs, r.key, r.klen, r.word, r.wlen);
		break;
	case CMD_CAMPAIGN:
		el_campaign(s->lt, &r);
		break;
	case CMD_PROCLAIM:
		el_proclaim(s->lt, &r);
		break;
	case CMD_RESIGN:
		el_resign(s->lt, r.key, r.klen);
		break;
	case CMD_LEADER:
		ew_leader(s->lt, r.key, r.klen);
		break;
	case CMD_OBSERVE:
		el_observe(s->lt, r.key, r.klen);
		break;
	case CMD_UNOBSERVE:
		el_unobserve(s->lt, r.key, r.klen);
		break;
	case CMD_WHO:
		who_ask(s->lt, r.key, r.klen);
		break;
	case CMD_LOCKALL:
		la_lockall(s->lt, &r);
		break;
	case CMD_COUNT:
		break;
	}
}

static void too_long(struct session *s)
{
	stats.protocol_errors++;
	s->state = SS_BLOCKED;
	session_reply(s, "ERR PROTOCOL line too long");
	session_close(s);
}

static void process_lines(struct session *s)
{
	struct evbuffer *in = s->in;
	size_t max = (size_t)cfg->max_line;
	int64_t n = 0;

	while (s->state == SS_READING) {
		size_t len = evbuffer_get_length(in);
		if (len == 0)
			break;
		/* A client that sends but does not read: answer no more until
		 * it has read what it was sent (write_cb resumes). */
		if (evbuffer_get_length(s->out) > out_high()) {
			s->out_full = 1;
			return;
		}
		if (n++ >= cfg->reqs_per_event) {
			event_active(s->resume, EV_TIMEOUT, 0); /* yield to others */
			return;
		}
		/* Look for the end of the line only as far as a legal line goes. */
		struct evbuffer_ptr end;
		size_t span = len < max + 2 ? len : max + 2;
		if (evbuffer_ptr_set(in, &end, span, EVBUFFER_PTR_SET) != 0)
			break;
		struct evbuffer_ptr p = evbuffer_search_range(in, "\n", 1, NULL, &end);
		if (p.pos < 0) {
			unsigned char last = 0;
			if (len == max + 1) {
				struct evbuffer_ptr lp;
				evbuffer_ptr_set(in, &lp, len - 1, EVBUFFER_PTR_SET);
				evbuffer_copyout_from(in, &lp, &last, 1);
			}
			/* More than max bytes of content with no line end yet
			 * (one '\r' may still be the start of "\r\n"). */
			if (len > max + 1 || (len == max + 1 && last != '\r')) {
				too_long(s);
				return;
			}
			break;
		}
		size_t ll = (size_t)p.pos, content = ll;
		unsigned char *line = evbuffer_pullup(in, (ssize_t)ll + 1);
		if (content > 0 && line[content - 1] == '\r')
			content--;
		if (content > max) {
			too_long(s);
			return;
		}
		handle(s, (const char *)line, ll);
		evbuffer_drain(in, ll + 1);
		if (s->lt->eof && s->state == SS_BLOCKED && lt_waiting(s->lt)) {
			session_close(s);
			return;
		}
	}
	if (s->lt->eof && s->state == SS_READING && evbuffer_search(in, "\n", 1, NULL).pos < 0)
		session_close(s); /* everything read has been answered */
}

/* Read no further ahead of the requests than the high-water mark (over
 * TLS the bufferevent's watermark does it); never again after EOF. */
static size_t read_room(const struct session *s)
{
	size_t wm = READ_HIGH_WATER + (size_t)cfg->max_line, len = evbuffer_get_length(s->in);
	return len < wm ? wm - len : 0;
}

static void process(struct session *s)
{
	process_lines(s);
	if (s->state != SS_CLOSING) {
		s->inlen = evbuffer_get_length(s->in);
		note_pause(s);
		session_arm(s);
		if (!s->bev && !s->lt->eof)
			set_reading(s, read_room(s) > 0);
	}
}

static void on_input(struct session *s)
{
	if (s->state == SS_CLOSING)
		return;
	note_input(s);
	if (s->state == SS_READING)
		process(s);
}

static void on_eof(struct session *s)
{
	s->lt->eof = 1;
	/* A waiting LOCK is cancelled without a reply, with every request
	 * behind it; anything else in progress is answered. */
	if (s->state == SS_BLOCKED && lt_waiting(s->lt)) {
		session_close(s);
		return;
	}
	if (s->state == SS_READING)
		process(s);
}

static void on_write_timeout(struct session *s)
{
	if (s->state == SS_CLOSING) {
		session_free(s); /* the flush timed out */
		return;
	}
	/* Nothing could be written for line_timeout_ms: it does not read. */
	stats.write_timeouts++;
	log_info("session %llu (%s): read none of its replies for limits.line_timeout_ms "
	         "(%lld ms): closing",
	         (unsigned long long)s->id, s->peer, (long long)cfg->line_timeout_ms);
	session_close(s);
	session_free(s); /* nothing more would go out */
}

/* A read or write failed (err: errno, or 0 for TLS's own reasons). The
 * connection is gone: nothing in the output can ever be written, so the
 * session ends and is freed now, whatever its output holds (waiting for
 * it to drain would wait forever: no write event is armed). */
static void on_error(struct session *s, int err)
{
	if (s->state == SS_CLOSING) {
		session_free(s); /* a write error while flushing */
		return;
	}
	char buf[256];
	const char *why = s->bev ? tls_error(s->bev, buf, sizeof(buf)) : NULL;
	if (why) {
		stats.tls_failures++;
		log_info("session %llu (%s): TLS: %s", (unsigned long long)s->id, s->peer, why);
	} else {
		log_debug("session %llu (%s): connection error: %s", (unsigned long long)s->id,
		          s->peer, err ? evutil_socket_error_to_string(err) : "unknown");
	}
	session_close(s);
	session_free(s);
}

/* A plain socket is readable: one read (no FIONREAD first, as
 * evbuffer_read would do), into one buffer shared by every session, then
 * only what came is copied to the session's input: a request of a few
 * dozen bytes costs a small buffer chain, not a 16 KiB one. */
static void rd_cb(evutil_socket_t fd, short what, void *arg)
{
	static char buf[READ_CHUNK];
	struct session *s = arg;
	size_t room = read_room(s);

	if (room == 0) {
		set_reading(s, 0); /* process() turns it on again */
		return;
	}
	ssize_t n = recv(fd, buf, room < sizeof(buf) ? room : sizeof(buf), 0);
	if (n > 0) {
		if (evbuffer_add(s->in, buf, (size_t)n) != 0) {
			on_error(s, ENOMEM);
			return;
		}
		on_input(s);
	} else if (n == 0) {
		set_reading(s, 0);
		on_eof(s);
	} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
		set_reading(s, 0);
		on_error(s, errno);
	}
}

/* A plain socket that would block became writable, or stayed blocked
 * for the write timeout. */
static void wr_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	if (what & EV_TIMEOUT)
		on_write_timeout(s);
	else
		write_out(s);
}

/* The bufferevent's callbacks (TLS sessions). */
static void read_cb(struct bufferevent *bev, void *arg)
{
	on_input(arg);
}

static void write_cb(struct bufferevent *bev, void *arg)
{
	on_drained(arg);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct session *s = arg;

	if (s->state == SS_CLOSING) {
		session_free(s); /* write error or flush timeout */
	} else if (what & BEV_EVENT_CONNECTED) {
		log_debug("session %llu (%s): TLS handshake done", (unsigned long long)s->id,
		          s->peer);
	} else if (what & BEV_EVENT_EOF) {
		on_eof(s);
	} else if (what & BEV_EVENT_TIMEOUT) {
		on_write_timeout(s);
	} else {
		on_error(s, EVUTIL_SOCKET_ERROR());
	}
}

/* The I/O of a new session: a bufferevent over TLS, else our own events.
 * On success it owns fd. */
static int io_new(struct session *s, struct event_base *base, int fd, struct ssl_ctx_st *tls)
{
	struct timeval wt = write_tv(s);
	if (tls) {
		if (!(s->bev = tls_bufferevent(base, fd, tls)))
			return -1;
		s->in = bufferevent_get_input(s->bev);
		s->out = bufferevent_get_output(s->bev);
		bufferevent_setcb(s->bev, read_cb, write_cb, event_cb, s);
		bufferevent_setwatermark(s->bev, EV_READ, 0,
		                         READ_HIGH_WATER + (size_t)cfg->max_line);
		bufferevent_set_timeouts(s->bev, NULL, &wt);
		bufferevent_enable(s->bev, EV_READ | EV_WRITE);
		return 0;
	}
	s->in = evbuffer_new();
	s->out = evbuffer_new();
	s->rev = event_new(base, fd, EV_READ | EV_PERSIST, rd_cb, s);
	s->wev = event_new(base, fd, EV_WRITE | EV_PERSIST, wr_cb, s);
	if (!s->in || !s->out || !s->rev || !s->wev) {
		if (s->in)
			evbuffer_free(s->in);
		if (s->out)
			evbuffer_free(s->out);
		if (s->rev)
			event_free(s->rev);
		if (s->wev)
			event_free(s->wev);
		return -1;
	}
	s->fd = fd;
	set_reading(s, 1);
	return 0;
}

struct session *session_new(struct event_base *base, int fd, const char *peer,
                            struct ssl_ctx_st *tls, void (*on_free)(void *arg), void *on_free_arg)
{
	if (!flush_ev) {
		ilist_init(&flushq);
		if (!(flush_ev = event_new(base, -1, 0, flush_cb, NULL)))
			return NULL;
	}
	struct session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->id = ++next_id;
	snprintf(s->peer, sizeof(s->peer), "%s", peer);
	s->resume = event_new(base, -1, 0, resume_cb, s);
	s->timer = evtimer_new(base, timer_cb, s);
	s->rs = rs_new(s, s->id, s->peer);
	/* The I/O last: once made, it owns fd. */
	if (!s->resume || !s->timer || !s->rs || io_new(s, base, fd, tls) != 0) {
		if (s->resume)
			event_free(s->resume);
		if (s->timer)
			event_free(s->timer);
		if (s->rs)
			rs_conn_end(s->rs, 1);
		free(s);
		return NULL;
	}
	s->tls = tls != NULL;
	s->on_free = on_free;
	s->on_free_arg = on_free_arg;
	s->line_us = s->active_us = now_us();
	s->authed = cfg->password[0] == '\0';
	lt_client_init(&s->gone);
	s->lt = rs_client(s->rs);
	ilist_push(&all_sessions, &s->all);
	log_debug("session %llu (%s): connected", (unsigned long long)s->id, s->peer);
	stats.clients++;
	stats.clients_total++;
	session_arm(s);
	return s;
}

void sessions_close_all(void)
{
	struct ilink *l;
	while ((l = ilist_first(&all_sessions))) {
		struct session *s = ilist_entry(l, struct session, all);
		if (s->state != SS_CLOSING) {
			s->state = SS_CLOSING;
			stats.clients--;
			struct rsess *r = s->rs;
			el_conn_end(s->lt);
			s->rs = NULL;
			s->lt = &s->gone;
			rs_conn_end(r, 0);
		}
		session_free(s);
	}
	if (flush_ev) {
		event_free(flush_ev);
		flush_ev = NULL;
	}
}
