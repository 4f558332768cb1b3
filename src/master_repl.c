/* master_repl: a master's replicas (master.c's requests, for
 * redis.wait_replicas and sentinel entries). Below master.c, which calls
 * it: it calls nothing of master.c's by name, but takes its requests
 * from master_req.c and sends, answers and drops through the struct
 * mrepl_ops given to mrepl_init.
 *
 * - WAIT: a write is followed by WAIT n on its connection, and its reply
 *   reaches its callers only once WAIT answered, as it came if n replicas
 *   acknowledged, else as no reply (a failed write on that master). While
 *   a recent ROLE of a sentinel entry lists too few replicas, no WAIT (it
 *   would block the connection for its timeout): the writes count
 *   nowhere; after an idle spell, or a short WAIT, one WAIT at a time.
 * - ROLE: at every handshake (a replica is never used as a master) and
 *   again every second while the master has traffic (every 100 ms while
 *   a sentinel entry is short of replicas): how many replicas
 *   it has (and where), which a sentinel entry's next failover is judged
 *   by and STATS shows for every entry.
 * - A sentinel entry's new primary with a new run_id: a promoted replica
 *   that has every counted write keeps counting; any other is a restart
 *   that lost data (doc/design.md, "Sentinel failover"). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "master.h"
#include "master_int.h"
#include "scripts.h"

static const struct master_opts *opts; /* master.c's, read when used */
static const struct mrepl_ops *mo;     /* master.c's requests (mrepl_init) */

#define ROLE_REFRESH_US 1000000LL /* a master's ROLE, while it has traffic */
/* While a sentinel entry is short of replicas, ROLE is asked this often
 * (while it has traffic), and a ROLE asked within ROLE_FRESH_US is taken
 * at its word: no WAIT is sent while it lists too few. */
#define ROLE_SHORT_REFRESH_US 100000LL
#define ROLE_FRESH_US         300000LL

static char wait_n[24], wait_ms[24]; /* WAIT's arguments (mrepl_set_opts) */

void mrepl_init(const struct mrepl_ops *ops)
{
	mo = ops;
}

void mrepl_set_opts(const struct master_opts *o)
{
	opts = o;
	int64_t t = opts->timeout_ms / 2; /* the reply of the WAIT within timeout_ms */
	snprintf(wait_n, sizeof(wait_n), "%lld", (long long)opts->wait_replicas);
	snprintf(wait_ms, sizeof(wait_ms), "%lld", (long long)(t < 1 ? 1 : t));
}

/* A WAIT blocks its connection for up to its timeout, and Redis notices
 * that timeout only when its event loop wakes up: every 1000/hz ms (100
 * ms at the default hz 10) when nothing else happens. */
#define WAIT_GRANULARITY_MS 110

int64_t mrepl_wait_allow_ms(void)
{
	return atoll(wait_ms) + WAIT_GRANULARITY_MS;
}

/* A batch of writes on m that counts nowhere for want of replicas (why:
 * a WAIT answered short, or none was sent while m is short): counted
 * (STATS master.<i>.wait_failures) and said once in the log until a WAIT
 * answers enough, so that a primary without its replicas is never a
 * silent "no" (the first write may go without a WAIT: ROLE at the
 * handshake already listed too few). */
static void counts_nowhere(struct master *m, const char *why)
{
	m->wait_short++;
	if (!m->wait_short_logged)
		log_warn("master %s (%s): %s: writes there do not count until enough replicas "
		         "acknowledge them (redis.wait_replicas %s)",
		         m->name, m->node, why, wait_n);
	m->wait_short_logged = 1;
}

/* r, a write just queued, is followed by WAIT wait_replicas on the same
 * connection: r's reply is held (reply_cb) until the WAIT answers, and
 * counts only if enough replicas have it (wait_answer). One WAIT per
 * script call, so one per batch of a loop turn, not per key. */
void mrepl_send_wait(struct master *m, struct mreq *r)
{
	static const char *argv[3];
	static size_t len[3];
	/* a standalone entry has no replicas to wait for: written as without */
	if (opts->wait_replicas <= 0 || !m->sn || r->script < 0 ||
	    !script_writes((enum script_id)r->script))
		return;
	/* Short of replicas (a promoted replica before the old primary rejoins
	 * it, a primary whose replica died), every WAIT blocks the connection
	 * for its timeout, and the requests behind it: an acquire would wait
	 * for a master whose yes cannot count, and ROLE would not get through.
	 * So while a ROLE asked in the last ROLE_FRESH_US lists too few, no
	 * WAIT: the write goes without one and counts nowhere (it still lands,
	 * as a write whose WAIT failed does, so the holds stay on the entry and
	 * count again once a ROLE lists enough). When that ROLE is older (an
	 * idle lockd's first write), or the latest WAIT answered short though
	 * ROLE listed enough, one WAIT at a time: the WAIT that answers enough
	 * ends it. */
	int few = m->replicas < opts->wait_replicas;
	if ((few && now_us() - m->role_seen_us <= ROLE_FRESH_US) ||
	    ((m->wait_short_now || few) && m->waits_out > 0)) {
		counts_nowhere(m, few ? "ROLE lists fewer replicas" : "a WAIT answered short");
		goto fail;
	}
	argv[0] = "WAIT";
	argv[1] = wait_n;
	argv[2] = wait_ms;
	for (int i = 0; i < 3; i++)
		len[i] = strlen(argv[i]);
	struct mreq *w = mreq_get();
	if (!w)
		goto fail;
	w->m = m;
	w->script = -1;
	w->argc = 3;
	w->argv = argv;
	w->argvlen = len;
	w->is_wait = 1;
	w->wait_of = r;
	r->waiter = w;
	if (mo->send(m, w, 0) == 0) {
		m->waits_out++;
		return;
	}
	mreq_put(w);
fail:
	/* no WAIT can follow: the write counts on no replica, so not at all */
	r->waiter = NULL;
	r->held_set = -1;
}

/* The WAIT of a write answered (rep NULL: failed): the write's reply goes
 * to its callers now, as it came if enough replicas acknowledged it, else
 * as no reply at all (the write failed on this master). */
void mrepl_wait_answer(struct master *m, struct mreq *w, redisReply *rep)
{
	struct mreq *r = w->wait_of;
	if (m->waits_out > 0)
		m->waits_out--;
	if (!r)
		return; /* orphaned: its write was answered (failed) or sent again */
	w->wait_of = NULL;
	r->waiter = NULL;
	int ok = rep && rep->type == REDIS_REPLY_INTEGER && rep->integer >= opts->wait_replicas;
	if (ok) {
		m->wait_short_now = 0;
		if (rep->integer > m->replicas)
			m->replicas = (int)rep->integer;
	}
	if (rep && !ok) {
		m->wait_short_now = 1;
		counts_nowhere(m, rep->type == REDIS_REPLY_INTEGER ? "WAIT answered fewer replicas"
		                                                   : "WAIT answered an error");
	} else if (ok && m->wait_short_logged) {
		log_info("master %s (%s): WAIT: replicas acknowledge writes again", m->name,
		         m->node);
		m->wait_short_logged = 0;
	}
	redisReply *held = r->held;
	r->held = NULL;
	r->held_set = 0;
	mo->answer(m, r, ok ? held : NULL);
	if (held)
		freeReplyObject(held);
	mreq_put(r);
}

/* ROLE: the replicas a primary lists; -1 when r says it is not a master. */
int mrepl_role_replicas(const redisReply *r)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
	    r->element[0]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "master") != 0)
		return -1;
	return r->elements >= 3 && r->element[2]->type == REDIS_REPLY_ARRAY
	           ? (int)r->element[2]->elements
	           : 0;
}

/* A replica's address as ROLE gives it (its replica-announce-ip may be any
 * text) is shown only when it is printable ASCII without a space, comma,
 * quote or backslash: a STATS value and a /metrics label as they are. */
static int plain_addr(const char *s)
{
	for (; *s; s++)
		if (*s < 0x21 || *s > 0x7e || *s == ',' || *s == '"' || *s == '\\')
			return 0;
	return 1;
}

void mrepl_role_nodes(const redisReply *r, char *buf, size_t len)
{
	size_t used = 0;
	int n = mrepl_role_replicas(r);

	if (len == 0)
		return;
	snprintf(buf, len, "-");
	for (int i = 0; i < n; i++) {
		const redisReply *e = r->element[2]->element[i];
		char one[300];
		/* [ip, port, offset], all strings */
		if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
		    e->element[0]->type != REDIS_REPLY_STRING ||
		    e->element[1]->type != REDIS_REPLY_STRING || !plain_addr(e->element[0]->str) ||
		    !plain_addr(e->element[1]->str))
			continue;
		int w = snprintf(one, sizeof(one), "%s%s:%s", used ? "," : "", e->element[0]->str,
		                 e->element[1]->str);
		/* room for it and for a ",..." after it */
		if (w < 0 || (size_t)w >= sizeof(one) || used + (size_t)w + 4 >= len) {
			snprintf(buf + used, len - used, "%s...", used ? "," : "");
			return;
		}
		memcpy(buf + used, one, (size_t)w + 1);
		used += (size_t)w;
	}
}

/* A replica is never used as a master: its writes would be refused, or
 * (replica-read-only no) kept on it alone. */
static void hs_role_cb(struct master *m, redisReply *r, void *arg)
{
	int n = mrepl_role_replicas(r);
	if (n < 0) {
		mo->hs_fail(m, r && r->type == REDIS_REPLY_ERROR ? r : NULL,
		            r && r->type == REDIS_REPLY_ARRAY ? "ROLE: not a master (a replica)"
		                                              : "ROLE");
		return;
	}
	m->hs_replicas = n;
	mrepl_role_nodes(r, m->hs_replica_nodes, sizeof(m->hs_replica_nodes));
}

/* ROLE again while up: the replica count the next failover is judged by,
 * and a primary demoted under us is dropped (its Sentinels moved on). */
static void role_cb(struct master *m, redisReply *r, void *arg)
{
	int n = mrepl_role_replicas(r);
	if (m->roles_out > 0)
		m->roles_out--;
	if (n >= 0) {
		m->replicas = n;
		m->role_seen_us = m->role_at_us; /* one ROLE out at a time: this one's */
		mrepl_role_nodes(r, m->replica_nodes, sizeof(m->replica_nodes));
	} else if (r && r->type == REDIS_REPLY_ARRAY && m->state == MS_UP)
		mo->drop(m, "ROLE: no longer a master", 1);
}

void mrepl_hs_role(struct master *m)
{
	static const char *argv[] = {"ROLE"};
	static const size_t len[] = {4};
	m->hs_replicas = 0;
	m->roles_out = 0;
	m->waits_out = 0; /* a new connection: the old one's were answered as failed */
	m->wait_short_now = 0;
	snprintf(m->hs_replica_nodes, sizeof(m->hs_replica_nodes), "-");
	mo->call(m, -1, 1, argv, len, hs_role_cb, NULL);
}

void mrepl_refresh(struct master *m)
{
	static const char *argv[] = {"ROLE"};
	static const size_t len[] = {4};
	int short_of = opts->wait_replicas > 0 && m->sn &&
	               (m->wait_short_now || m->replicas < opts->wait_replicas);
	if (m->state != MS_UP || m->roles_out > 0 ||
	    now_us() - m->role_at_us <= (short_of ? ROLE_SHORT_REFRESH_US : ROLE_REFRESH_US))
		return;
	m->role_at_us = now_us();
	m->roles_out++;
	mo->call(m, -1, 1, argv, len, role_cb, NULL);
}

/* A sentinel entry's new primary with a new run_id: a promoted replica,
 * or a restart. It has every write that counted on the old primary only
 * when each was acknowledged by every replica the old primary had
 * (redis.wait_replicas >= that number, seen by ROLE while it was up), and
 * it descends from it (lockd's marker, which replicates like any key, is
 * on it). Then it is not a restart that lost data and is not excluded;
 * else it is one (doc/design.md, "Sentinel failover"). */
static int promoted_with_data(const struct master *m)
{
	return m->sn && m->up_node[0] && strcmp(m->node, m->up_node) != 0 && m->has_marker &&
	       opts->wait_replicas > 0 && opts->wait_replicas >= m->replicas;
}

int mrepl_restart(struct master *m, int restarted)
{
	if (restarted && promoted_with_data(m)) {
		log_info(
		    "master %s: %s (run_id %.8s) replaced %s (run_id %.8s): a promoted replica "
		    "with lockd's marker, and every counted write was on all %d replica(s) "
		    "(redis.wait_replicas %lld): it keeps counting",
		    m->name, m->node, m->run_id, m->up_node, m->prev_run_id, m->replicas,
		    (long long)opts->wait_replicas);
		restarted = 0;
	} else if (restarted && m->sn && m->up_node[0] && strcmp(m->node, m->up_node) != 0) {
		log_warn("master %s: %s replaced %s: %s; handled as a restart that lost data",
		         m->name, m->node, m->up_node,
		         !m->has_marker ? "it lacks lockd's marker"
		         : opts->wait_replicas <= 0
		             ? "redis.wait_replicas is 0, so it may lack writes that counted"
		             : "the old primary had more replicas than redis.wait_replicas, so it "
		               "may lack writes that counted");
	}
	return restarted;
}
