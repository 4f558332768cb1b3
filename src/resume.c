/* resume: sessions that outlive a connection (protocol 1.2).
 *
 * A connection's session (struct rsess) owns its locktab client. SESSION
 * writes the session's record on the masters (scripts.c: the instance
 * that owns it, the secret's hash, the grace, then one field per hold,
 * written by every grant and release of its holds within the calls they
 * make anyway) and makes it resumable. When its connection ends without
 * QUIT it is detached: its wait is cancelled, its holds are renewed for
 * its grace, then released. RESUME attaches a session to a connection by
 * adopting its record on a majority of the masters (rl_sess_adopt): the
 * record names this instance from then on, and every hold's token is
 * replaced by one of this instance's, so the lockd that had it (which may
 * come back) finds nothing of its own: its renewals, write-backs and
 * releases compare tokens and owners on the masters. It learns of the
 * move at its next touch of the record (every lease/3), and forgets the
 * session without LOST. doc/design.md, "Sessions that outlive a
 * connection", walks through the interleavings. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "cfg.h"
#include "cluster.h"
#include "elect.h"
#include "keytab.h"
#include "log.h"
#include "master.h"
#include "proto.h"
#include "redlock.h"
#include "renew.h"
#include "resume.h"
#include "sha1.h"
#include "stats.h"
#include "util.h"

#define RS_ID_LEN     16
#define RS_SECRET_LEN TOKEN_LEN /* 128 random bits, hex */
#define RS_MAX_HOLDS  100000    /* SESSION writes at most this many holds at once */
#define RS_RACE_TRIES 3         /* a RESUME that met another one tries again this often */

enum rs_state {
	RS_PLAIN,    /* version 1: ends with its connection */
	RS_ATTACHED, /* resumable, with its connection */
	RS_DETACHED, /* resumable, its connection gone: renewed until its grace ends */
};

/* The resumable sessions (detached ones too) whose last connection came
 * from one IP address: limits.max_sessions_per_ip. */
struct addr_sessions {
	struct kt_node node; /* key: addr */
	uint32_t n;
	char addr[64];
};

struct rsess {
	struct lt_client lt; /* its holds and wait; lt.ctx: the connection, NULL when
	                        detached; lt.sid: id, once resumable */
	enum rs_state state;
	struct kt_node node; /* in the table by id, while resumable */
	struct ilink link;   /* on the list of resumable sessions */
	char id[RS_ID_LEN + 1];
	char secret[RS_SECRET_LEN + 1];
	char digest[SHA1_HEX_LEN + 1]; /* what the masters see of the secret (digest_of) */
	int64_t grace_ms;
	long long count;        /* the adoption count our adoption wrote (0: none yet) */
	int64_t want_grace;     /* SESSION in flight: the grace asked */
	int64_t grace_end_us;   /* detached: when its grace ends */
	struct event *grace_ev; /* detached: its grace ends */
	struct rl_call *call;   /* SESSION or RESUME in flight */
	struct evbuffer *kept;  /* LOST lines while detached, for its RESUME */
	char *rid;              /* RESUME in flight: the id asked */
	int tries;              /* RESUME in flight: adoptions tried again after a race */
	char peer[64];
	struct addr_sessions *as; /* its address's count, while resumable (NULL: unix) */
	int failures;             /* RESUMEs answered ERR NOSESSION on this connection */
	int64_t rewritten_us;     /* its record last written again for a hold written back */
};

static struct event_base *base;
static const struct config *cfg;
static const struct lt_ops *ops;
static struct keytab table;   /* resumable sessions by id */
static struct keytab by_addr; /* struct addr_sessions by address */
static struct ilist all;      /* resumable sessions, for the touch */
static struct event *touch_ev;
static int calls;    /* session calls in flight nobody waits for */
static int stopping; /* SIGTERM: records stay as rs_shutdown_all left them */

static void reply(struct rsess *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(struct rsess *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ops->reply(&r->lt, fmt, ap);
	va_end(ap);
}

static void line(struct rsess *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(struct rsess *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ops->line(&r->lt, fmt, ap);
	va_end(ap);
}

static int64_t expire_attached(const struct rsess *r)
{
	return cfg->lease_ms + r->grace_ms;
}

struct lt_client *rs_client(struct rsess *r)
{
	return &r->lt;
}

struct rsess *rs_new(void *ctx, uint64_t id, const char *peer)
{
	struct rsess *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	snprintf(r->peer, sizeof(r->peer), "%s", peer);
	r->lt.id = id;
	r->lt.peer = r->peer;
	r->lt.ctx = ctx;
	lt_client_init(&r->lt);
	return r;
}

static void rs_free(struct rsess *r)
{
	if (r->call)
		rl_detach(r->call, r);
	if (r->grace_ev)
		event_free(r->grace_ev);
	if (r->kept)
		evbuffer_free(r->kept);
	if (r->lt.w.timer)
		event_free(r->lt.w.timer);
	free(r->rid);
	free(r);
}

/* Off the table and the list: no longer resumable here. */
static void unlist(struct rsess *r)
{
	if (r->state == RS_PLAIN)
		return;
	if (r->state == RS_DETACHED)
		stats.sessions_detached--;
	stats.sessions_resumable--;
	if (r->as && --r->as->n == 0) {
		keytab_remove(&by_addr, &r->as->node);
		free(r->as);
	}
	r->as = NULL;
	keytab_remove(&table, &r->node);
	ilist_remove(&all, &r->link);
	r->state = RS_PLAIN;
	r->lt.sid = NULL;
	if (r->grace_ev)
		event_del(r->grace_ev);
}

/* The address of a peer "ADDR:PORT" ("[V6]:PORT"), or 0 for a Unix client. */
static size_t addr_len(const char *peer)
{
	const char *colon = strrchr(peer, ':');
	return colon && strcmp(peer, "unix") != 0 ? (size_t)(colon - peer) : 0;
}

static struct addr_sessions *addr_find(const char *peer)
{
	struct kt_node *n = keytab_find(&by_addr, peer, addr_len(peer));
	return n ? ilist_entry(n, struct addr_sessions, node) : NULL;
}

/* May one more session of r's address become resumable here? Else it
 * answers ERR LIMIT. */
static int room_for(struct rsess *r)
{
	const char *why = NULL;
	struct addr_sessions *as = addr_len(r->peer) ? addr_find(r->peer) : NULL;
	if (stats.sessions_resumable >= (uint64_t)cfg->max_sessions)
		why = "too many resumable sessions";
	else if (as && cfg->max_sessions_per_ip > 0 && as->n >= (uint64_t)cfg->max_sessions_per_ip)
		why = "too many resumable sessions from this address";
	if (!why)
		return 1;
	stats.rejected_sessions++;
	log_debug("session %llu (%s): %s", (unsigned long long)r->lt.id, r->peer, why);
	reply(r, "ERR LIMIT %s", why);
	return 0;
}

/* Count r against its address (best effort: out of memory, uncounted). */
static void addr_count(struct rsess *r)
{
	size_t len = addr_len(r->peer);
	if (!len || len >= sizeof(r->as->addr))
		return;
	struct addr_sessions *as = addr_find(r->peer);
	if (!as && (as = calloc(1, sizeof(*as)))) {
		memcpy(as->addr, r->peer, len);
		as->node.key = as->addr;
		as->node.klen = len;
		keytab_insert(&by_addr, &as->node);
	}
	if (as)
		as->n++;
	r->as = as;
}

static void list(struct rsess *r)
{
	addr_count(r);
	r->node.key = r->id;
	r->node.klen = RS_ID_LEN;
	keytab_insert(&table, &r->node);
	ilist_push(&all, &r->link);
	r->state = RS_ATTACHED;
	r->lt.sid = r->id;
	stats.sessions_resumable++;
}

static struct rsess *find(const char *id, size_t len)
{
	struct kt_node *n = keytab_find(&table, id, len);
	return n ? ilist_entry(n, struct rsess, node) : NULL;
}

/* The session's digest, the only form of its secret that leaves lockd
 * (the masters keep SHA1 of it): the SHA1 of the login (lockd's password,
 * "" without one), a newline and the secret. A session made behind AUTH is
 * thus resumed only where the same password is required: on a lockd with
 * another password, or none, its digest differs, and RESUME answers
 * ERR NOSESSION. */
static void digest_of(struct rsess *r)
{
	size_t pl = strlen(cfg->password), n = pl + 1 + RS_SECRET_LEN;
	char *buf = malloc(n);
	if (!buf) { /* a digest of nothing that any secret could match */
		memset(r->digest, '-', SHA1_HEX_LEN);
		r->digest[SHA1_HEX_LEN] = '\0';
		return;
	}
	memcpy(buf, cfg->password, pl);
	buf[pl] = '\n';
	memcpy(buf + pl + 1, r->secret, RS_SECRET_LEN);
	sha1_hex(buf, n, r->digest);
	memset(buf, 0, n);
	free(buf);
}

static void fire_and_forget(struct rl_call *c, void *owner)
{
	calls--;
}
#define FORGET &calls /* the owner of calls nobody waits for */

/* The session ends for good: its record goes, its holds are released. */
static void end(struct rsess *r)
{
	if (r->state != RS_PLAIN && rl_sess_end(r->id, cfg->lease_ms, fire_and_forget, FORGET))
		calls++;
	unlist(r);
	lt_client_end(&r->lt);
	rs_free(r);
}

static void grace_cb(evutil_socket_t fd, short what, void *arg)
{
	struct rsess *r = arg;
	stats.sessions_expired++;
	log_debug("session %s: its grace of %lld ms ran out: releasing %u lock(s)", r->id,
	          (long long)r->grace_ms, r->lt.nlocks);
	end(r);
}

/* Refresh one record's expiry now (a detach), or every one (the touch). */
static void touch(struct rsess *only);

void rs_conn_end(struct rsess *r, int quit)
{
	if (r->call) {
		rl_detach(r->call, r);
		r->call = NULL;
	}
	if (stopping && r->state != RS_PLAIN) {
		unlist(r); /* its holds were left on the masters (lt_shutdown_all) */
		lt_client_end(&r->lt);
		rs_free(r);
		return;
	}
	if (r->state != RS_ATTACHED || quit) {
		end(r);
		return;
	}
	lt_client_detach(&r->lt);
	r->lt.ctx = NULL;
	r->state = RS_DETACHED;
	stats.sessions_detached++;
	if (!r->grace_ev && !(r->grace_ev = evtimer_new(base, grace_cb, r))) {
		end(r);
		return;
	}
	r->grace_end_us = now_us() + r->grace_ms * 1000;
	rn_timer_at(r->grace_ev, r->grace_end_us);
	log_debug("session %s (%s): connection ended: detached for %lld ms with %u lock(s)", r->id,
	          r->peer, (long long)r->grace_ms, r->lt.nlocks);
	touch(r);
}

void rs_keep_line(struct lt_client *c, const char *fmt, va_list ap)
{
	struct rsess *r = ilist_entry(c, struct rsess, lt);
	if (!r->kept && !(r->kept = evbuffer_new()))
		return;
	evbuffer_add_vprintf(r->kept, fmt, ap);
	evbuffer_add(r->kept, "\n", 1);
}

/* The session moved to another lockd: forget it here, without LOST. */
static void moved(struct rsess *r)
{
	log_debug("session %s: resumed on another lockd: dropping it here (%u lock(s))", r->id,
	          r->lt.nlocks);
	unlist(r);
	lt_client_forget(&r->lt);
	if (r->lt.ctx)
		ops->close(&r->lt); /* its connection ends: rs_conn_end frees it */
	else
		rs_free(r);
}

/* --- SESSION --- */

/* Write r's record (count > 0: a refill, with that adoption count). */
static int put_holds(struct rsess *r, const char *secret, int64_t grace, long long count,
                     rl_done_fn *done, void *owner, struct rl_call **out)
{
	int n = (int)r->lt.nlocks;
	struct rl_sess_hold *h = calloc(n ? (size_t)n : 1, sizeof(*h));
	if (!h)
		return -1;
	lt_holds_of(&r->lt, h, n);
	*out =
	    rl_sess_refill(r->id, secret, grace, cfg->lease_ms + grace, h, n, count, done, owner);
	free(h);
	return *out ? 0 : -1;
}

static void session_put(struct rl_call *c, void *owner)
{
	struct rsess *r = owner;
	r->call = NULL;
	if (rl_result_of(c) != RL_OK) {
		stats.quorum_failures++;
		reply(r, "%s", MSG_NO_QUORUM);
		return;
	}
	r->grace_ms = r->want_grace;
	if (r->state == RS_PLAIN) {
		list(r);
		log_debug("session %llu (%s): resumable as %s", (unsigned long long)r->lt.id,
		          r->peer, r->id);
	}
	reply(r, "SESSION %s %s %lld", r->id, r->secret, (long long)r->grace_ms);
}

void rs_session(struct rsess *r, int has_grace, uint32_t grace_ms)
{
	int64_t grace = has_grace ? (int64_t)grace_ms : cfg->grace_ms;
	if (grace > cfg->max_grace_ms) {
		reply(r, "ERR ARG GRACE must be at most sessions.max_grace_ms (%lld)",
		      (long long)cfg->max_grace_ms);
		return;
	}
	if (r->state == RS_PLAIN) {
		if (!room_for(r))
			return;
		char tok[TOKEN_LEN + 1];
		token_new(tok);
		memcpy(r->id, tok, RS_ID_LEN);
		r->id[RS_ID_LEN] = '\0';
		token_new(r->secret);
		digest_of(r);
		if (find(r->id, RS_ID_LEN)) { /* 64 random bits met again: ask again */
			reply(r, "%s", MSG_NO_QUORUM);
			return;
		}
	}
	r->want_grace = grace;
	/* A new session's record is written everywhere (the secret given); a
	 * resumable one's new grace only where the record is ours: a copy of
	 * a session that moved must not fill masters that lost the record
	 * with this lockd's name (doc/design.md, interleaving 15). */
	if (put_holds(r, r->state == RS_PLAIN ? r->digest : NULL, grace, 0, session_put, r,
	              &r->call) != 0)
		reply(r, "%s", MSG_OOM);
}

/* --- RESUME --- */

static int hexword(const char *s, size_t len, size_t want)
{
	if (len != want)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* ERR NOSESSION: counted, and like a wrong AUTH password, the
 * limits.max_auth_failures-th in one connection closes it (a wrong secret
 * costs the masters two reads; a guess costs the guesser a connection). */
static void no_session(struct rsess *r)
{
	int64_t max = cfg->max_auth_failures;
	int last = max > 0 && r->failures + 1 >= max;
	stats.resume_failures++;
	r->failures++;
	log_warn("session %llu (%s): RESUME of no such session (%d in this connection)%s",
	         (unsigned long long)r->lt.id, r->peer, r->failures,
	         last ? ": closing (limits.max_auth_failures)" : "");
	reply(r, "ERR NOSESSION no such session");
	if (last && r->lt.ctx) {
		stats.resume_closes++;
		ops->quit(&r->lt);
	}
}

/* Take over what a local session of that id had (its holds, its
 * connection closed), then forget it. Its kept LOST lines go with it: a
 * hold lost while detached stays listed in the record, and the adoption
 * reports it lost, as it would on another lockd. */
static void take_local(struct rsess *r, struct rsess *old)
{
	if (old->call) {
		rl_detach(old->call, old);
		old->call = NULL;
	}
	lt_client_detach(&old->lt);
	lt_client_move(&old->lt, &r->lt);
	unlist(old);
	if (old->lt.ctx)
		ops->close(&old->lt); /* one connection per session: rs_conn_end frees it */
	else
		rs_free(old);
}

static void adopted(struct rl_call *c, void *owner)
{
	struct rsess *r = owner;
	const struct rl_adoption *a = rl_adoption_of(c);
	char *id = r->rid;

	r->call = NULL;
	if (a->result != RL_OK && (a->raced || a->incomplete) && r->tries < RS_RACE_TRIES) {
		/* Another RESUME of the session (on another lockd) came between
		 * our rounds on some master: try again, and win (the later one
		 * wins, PROTOCOL 1.2); its lockd closes its connection at its
		 * touch. Or a master failed half way through a large session's
		 * rounds: the next try compares the count we left there. */
		r->tries++;
		if ((r->call = rl_sess_adopt(r->rid, r->digest, cfg->lease_ms, adopted, r)))
			return;
	}
	r->rid = NULL;
	r->tries = 0;
	if (a->result != RL_OK && a->raced && !a->incomplete) {
		no_session(r); /* it is another's now */
	} else if (a->result == RL_QUORUM) {
		stats.quorum_failures++;
		reply(r, "%s", MSG_NO_QUORUM);
	} else if (a->result != RL_OK || lt_waiting(&r->lt) || r->lt.nlocks) {
		no_session(r);
	} else {
		struct rsess *old = find(id, RS_ID_LEN);
		int local = old != NULL;
		if (old)
			take_local(r, old);
		memcpy(r->id, id, RS_ID_LEN);
		r->id[RS_ID_LEN] = '\0';
		r->grace_ms = a->grace_ms;
		r->count = a->count;
		list(r);
		/* Lines of holds lost meanwhile are kept, to follow the OK. */
		void *ctx = r->lt.ctx;
		r->lt.ctx = NULL;
		lt_resume(&r->lt, a->holds, a->n);
		r->lt.ctx = ctx;
		for (int i = 0; !local && i < a->n; i++)
			if (a->holds[i].ok && a->holds[i].kind == 'x' && a->holds[i].permit == 0)
				el_adopted(&r->lt, a->holds[i].key, a->holds[i].klen);
		stats.resumes++;
		stats.adoptions += !local;
		log_debug("session %s (%s): resumed%s with %u lock(s)", r->id, r->peer,
		          local ? "" : " from another lockd", r->lt.nlocks);
		reply(r, "OK %u", r->lt.nlocks);
		if (r->kept) {
			char *l;
			while ((l = evbuffer_readln(r->kept, NULL, EVBUFFER_EOL_LF))) {
				line(r, "%s", l);
				free(l);
			}
		}
	}
	free(id);
}

void rs_resume(struct rsess *r, const char *id, size_t idlen, const char *secret, size_t seclen)
{
	if (r->lt.nlocks || r->lt.w.lk) {
		reply(r,
		      "ERR ARG this session holds or waits for locks: RESUME on a new connection");
		return;
	}
	if (r->state != RS_PLAIN) {
		reply(r, "ERR ARG this session is resumable itself: RESUME on a new connection");
		return;
	}
	if (!hexword(id, idlen, RS_ID_LEN) || !hexword(secret, seclen, RS_SECRET_LEN)) {
		no_session(r);
		return;
	}
	if (!find(id, idlen) && !room_for(r))
		return;
	memcpy(r->secret, secret, RS_SECRET_LEN);
	r->secret[RS_SECRET_LEN] = '\0';
	digest_of(r);
	if (!(r->rid = strndup(id, idlen)) ||
	    !(r->call = rl_sess_adopt(r->rid, r->digest, cfg->lease_ms, adopted, r))) {
		free(r->rid);
		r->rid = NULL;
		reply(r, "%s", MSG_OOM);
	}
}

/* --- the touch: every lease/3, each record's expiry, and who owns it --- */

static void touched(struct rl_call *c, void *owner)
{
	int n;
	struct rl_sess_item *it = rl_sess_items(c, &n);
	calls--;
	for (int i = 0; i < n; i++) {
		struct rsess *r = it[i].of_slot ? NULL : find(it[i].sid, RS_ID_LEN);
		if (!r)
			continue; /* ended meanwhile, or a slot's record: only kept */
		if (it[i].moved) {
			moved(r);
		} else if (it[i].missing && !r->call &&
		           (!it[i].other || r->count > it[i].other_a)) {
			/* A master lost it (restarted empty): write it again,
			 * unless a master names another lockd whose record is
			 * as recent as ours (an adoption count as large). Then
			 * the session moved there and this copy is stale:
			 * writing would fill the lost masters with this lockd's
			 * name and make a majority that takes the session from
			 * the lockd serving it. That one writes it back at its
			 * touch (its count is the larger: each adoption writes
			 * one above every count it read on a majority). Ours is
			 * the count our adoption wrote on a majority, not the
			 * largest our records read (a late master's may be
			 * higher), and the record written back carries it
			 * (interleaving 16): with none, it would read 0, below
			 * a stale copy's. */
			struct rl_call *p;
			if (put_holds(r, r->digest, r->grace_ms, r->count, fire_and_forget, FORGET,
			              &p) == 0)
				calls++;
		}
	}
}

/* One touch script covers at most this many records: its time on a master
 * stays bounded (as a renewal batch's) whatever the number of sessions. */
#define TOUCH_BATCH 256

/* The records being gathered for one touch call, sent when full. */
struct touch_buf {
	struct rl_sess_item *it;
	int n;
};

static void touch_flush(struct touch_buf *b)
{
	if (b->it && b->n > 0 && rl_sess_touch(b->it, b->n, touched, &all))
		calls++;
	else
		free(b->it);
	b->it = NULL;
	b->n = 0;
}

/* One more record to touch; 0, or -1 (out of memory: touched next time). */
static int touch_add(struct touch_buf *b, const char *sid, int64_t expire_ms, int of_slot,
                     unsigned slot)
{
	if (!b->it && !(b->it = calloc(TOUCH_BATCH, sizeof(*b->it))))
		return -1;
	b->it[b->n++] = (struct rl_sess_item){
	    .sid = sid, .expire_ms = expire_ms, .of_slot = of_slot, .slot = slot};
	if (b->n == TOUCH_BATCH)
		touch_flush(b);
	return 0;
}

/* On a cluster entry a session has a record in each slot it holds in
 * (doc/cluster.md, "Sessions on a cluster entry"): those slots, but its
 * home record's, each once, are touched with the home record, or their
 * holds could not be renewed once the record lapsed. */
static void touch_slots(struct touch_buf *b, struct rsess *r, int64_t expire_ms)
{
	int n = (int)r->lt.nlocks;
	if (n == 0)
		return;
	struct rl_sess_hold *h = calloc((size_t)n, sizeof(*h));
	unsigned *seen = calloc((size_t)n, sizeof(*seen));
	if (h && seen) {
		lt_holds_of(&r->lt, h, n);
		unsigned home = csl_keyslot(r->id, strlen(r->id));
		int ns = 0;
		for (int k = 0; k < n; k++) {
			unsigned s = csl_keyslot(h[k].key, h[k].klen);
			int dup = s == home;
			for (int j = 0; j < ns && !dup; j++)
				dup = seen[j] == s;
			if (!dup && touch_add(b, r->id, expire_ms, 1, s) == 0)
				seen[ns++] = s;
		}
	}
	free(h);
	free(seen);
}

static void touch(struct rsess *only)
{
	size_t n = only ? 1 : all.len;
	struct ilink *l = all.head.next;
	struct touch_buf b = {NULL, 0};
	int64_t now = now_us();
	for (size_t k = 0; k < n; k++, l = l->next) {
		struct rsess *r = only ? only : ilist_entry(l, struct rsess, link);
		int64_t expire_ms;
		if (r->state == RS_DETACHED) /* the grace ends where lockd saw it end */
			expire_ms =
			    (r->grace_end_us - now) / 1000 > 1 ? (r->grace_end_us - now) / 1000 : 1;
		else
			expire_ms = expire_attached(r);
		if (touch_add(&b, r->id, expire_ms, 0, 0) == 0 && masters_any_cluster())
			touch_slots(&b, r, expire_ms);
	}
	touch_flush(&b);
}

void rs_verify(struct lt_client *c)
{
	struct rsess *r = ilist_entry(c, struct rsess, lt);
	if (r->state != RS_PLAIN)
		touch(r);
}

static void touch_cb(evutil_socket_t fd, short what, void *arg)
{
	log_debug("touching %zu session record(s)", all.len);
	touch(NULL);
	rn_timer_at(touch_ev, now_us() + cfg->lease_ms * 1000 / 3);
}

/* --- setup --- */

/* A renewal wrote a hold of c's session back on a master that lacked it
 * (renew.h, rn_on_sess_rewritten): that master may lack the hold in the
 * session's record too (its grant missed it: a master late, another
 * lockd's TRYLOCK there first), and an adoption elsewhere takes a hold
 * only where a majority of the records have it. The record is written
 * again with every hold, where it is ours, at most once a third of a
 * lease per session. */
static void sess_rewritten(struct lt_client *c)
{
	struct rsess *r = ilist_entry(c, struct rsess, lt);
	int64_t now = now_us();
	struct rl_call *p;
	if (r->state == RS_PLAIN || r->call || now - r->rewritten_us < cfg->lease_ms * 1000 / 3)
		return;
	r->rewritten_us = now;
	if (put_holds(r, r->digest, r->grace_ms, r->count, fire_and_forget, FORGET, &p) == 0)
		calls++;
}

/* For a cluster entry's grant (redlock.h, rl_sess_info): the record it
 * writes in the lock's slot is the one SESSION wrote, with the expiry
 * put_holds gives. */
static int sess_info_of(const char *sid, struct rl_sess_info *out)
{
	struct rsess *r = find(sid, strlen(sid));
	if (!r || r->state == RS_PLAIN || !r->digest[0])
		return -1;
	out->digest = r->digest;
	out->grace_ms = r->grace_ms;
	out->expire_ms = cfg->lease_ms + r->grace_ms;
	out->count = r->count;
	return 0;
}

int rs_init(struct event_base *b, const struct config *c, const struct lt_ops *o)
{
	rl_set_sess_info(sess_info_of);
	rn_on_sess_rewritten(sess_rewritten);
	base = b;
	cfg = c;
	ops = o;
	ilist_init(&all);
	if (keytab_init(&table, 64) != 0 || keytab_init(&by_addr, 64) != 0 ||
	    !(touch_ev = evtimer_new(base, touch_cb, NULL)))
		return -1;
	rn_timer_at(touch_ev, now_us() + cfg->lease_ms * 1000 / 3);
	return 0;
}

void rs_set_cfg(const struct config *c)
{
	cfg = c;
}

void rs_shutdown_all(void)
{
	/* Each record lives on for the longer of its grace and the lease its
	 * holds were last given (they are not renewed any more). */
	stopping = 1;
	for (struct ilink *l = all.head.next; l != &all.head; l = l->next) {
		struct rsess *r = ilist_entry(l, struct rsess, link);
		int64_t keep = r->grace_ms > cfg->lease_ms ? r->grace_ms : cfg->lease_ms;
		struct rl_sess_item *it = calloc(1, sizeof(*it));
		if (!it)
			continue;
		it->sid = r->id;
		it->expire_ms = keep;
		if (rl_sess_touch(it, 1, fire_and_forget, FORGET))
			calls++;
		else
			free(it);
	}
}

int rs_busy(void)
{
	return calls > 0;
}

void rs_shutdown(void)
{
	struct ilink *l;
	rn_on_sess_rewritten(NULL);
	while ((l = ilist_pop(&all))) {
		struct rsess *r = ilist_entry(l, struct rsess, link);
		keytab_remove(&table, &r->node);
		if (r->as && --r->as->n == 0) {
			keytab_remove(&by_addr, &r->as->node);
			free(r->as);
		}
		r->state = RS_PLAIN;
		rs_free(r);
	}
	keytab_destroy(&table);
	keytab_destroy(&by_addr);
	if (touch_ev)
		event_free(touch_ev);
	touch_ev = NULL;
}
