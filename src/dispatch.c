/* dispatch: what a session's request lines ask, and who answers them.
 *
 * session.c frames the lines (one at a time, in order) and hands each to
 * handle, which parses it (proto.c), checks AUTH, and passes it on to the
 * module that answers it (locktab, elect, who, lockall, resume) or
 * answers it here. It sits above session.c: it uses session.h, and
 * session.c reaches it only through the hook dispatch_init sets
 * (sessions_set_handler), so the calls run one way.
 *
 * Hostile clients: a first line that is HTTP or RESP closes the session
 * unanswered, and so does the limits.max_auth_failures-th wrong AUTH,
 * after its reply. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "elect.h"
#include "elwatch.h"
#include "lockall.h"
#include "log.h"
#include "proto.h"
#include "resume.h"
#include "session.h"
#include "stats.h"
#include "util.h"
#include "who.h"

static const struct config *cfg;

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

void dispatch_init(const struct config *c)
{
	cfg = c;
	sessions_set_handler(handle);
}
