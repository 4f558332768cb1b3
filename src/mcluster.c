/* mcluster: see mcluster.h.
 *
 * A request (struct mcl_req) is one master_call: one slot's call, or a
 * call over items of several slots split per slot (ck_split), each part a
 * struct mcl_sub on the router. A part is sent as EVALSHA when a master
 * has reported the script's SHA, else by its body; a NOSCRIPT answer (a
 * node that has not loaded it: a new primary, a flushed cache) sends it
 * once more by its body, which loads it there. A write (script_writes)
 * goes by csr_write when redis.wait_replicas asks for replicas. A reply
 * counts only if no node of the entry may have lost data since its part
 * was sent (gen): the router tells such a loss before that node's first
 * reply (csr_event), and the entry goes down at once, for its user to
 * exclude it as a master that restarted empty. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/event.h>

#include "ckey.h"
#include "csl_router.h"
#include "ilist.h"
#include "log.h"
#include "mcluster.h"
#include "rdup.h"
#include "scripts.h"
#include "sha1.h"
#include "util.h"

#define POLL_US 100000 /* how often the router's cover is looked at */

struct mcl_req;

/* One slot's call of a request. */
struct mcl_sub {
	struct mcl_req *q;
	int k; /* its part (0 for a call of one slot) */
	unsigned slot;
	struct csr_req *cr; /* on the router; NULL once answered */
	redisReply *r;      /* a split call: its reply, kept until every part answered */
	int evald;          /* sent again by its body after NOSCRIPT */
	uint64_t gen;       /* the entry's data generation when sent */
};

/* One master_call. */
struct mcl_req {
	struct ilink link; /* on mcl.reqs until fn has run */
	struct mcl *cl;
	master_reply_fn *fn;
	void *arg;
	int script;
	int argc;
	const char **argv; /* the caller's, valid until fn runs */
	const size_t *argvlen;
	int n;                 /* items of a split call; 0: one slot */
	struct ck_part *parts; /* a split call's */
	int nparts;
	struct mcl_sub *subs; /* nsubs: nparts, or 1 */
	int nsubs, pending;
};

/* Where the writing of the markers is (mcl_set_marker). */
enum mk_state {
	MK_NONE,    /* not written, or a write failed or lost data since: written when asked */
	MK_WRITING, /* SETs out, MARK_WINDOW at a time */
	MK_DONE,    /* every slot's written (ops.marked told) */
};

#define MCL_RESTARTS         16     /* restarted nodes judged at the next up; more: lost at once */
#define UNCOVERED_REFRESH_US 250000 /* map refreshes while a slot has no live primary, or down */

struct mcl {
	struct master *m;
	struct csr_router *rt;
	struct mcl_ops ops;
	struct event *poll;
	struct ilist reqs;
	int64_t timeout_ms;
	int wait_replicas;
	int up;      /* the master layer was told up (ops.up), and not down since */
	int ever_up; /* it was up once */
	int lost;    /* a node may have lost data since the entry was last up */
	/* nodes that restarted since the entry was last up: they lost data
	 * only if they serve slots once it may go up again (restart_judge) */
	struct {
		char host[CSL_HOST_MAX + 1];
		int port;
	} restarted[MCL_RESTARTS];
	int nrestarted;
	int64_t uncovered_refresh_us; /* the last refresh asked for while not covered or down */
	int closed;                   /* mcl_close: no new calls */
	uint64_t gen;                 /* raised at each possible loss of data */
	char marker[160];
	/* the markers' GETs before going up: how many are out, missing,
	 * failed, and the generation they were sent at */
	int marking, mark_missing, mark_failed;
	uint64_t mark_gen;
	/* their SETs (mcl_set_marker): asked for, where the write is, the
	 * next slot, SETs out, failed, the generation it started at */
	int mk_wanted;
	enum mk_state mk;
	unsigned mk_next;
	int mk_out, mk_failed;
	uint64_t mk_gen;
};

static void sub_cb(const redisReply *r, void *arg);

static int is_noscript(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ERROR && r->len >= 8 &&
	       strncmp(r->str, "NOSCRIPT", 8) == 0;
}

/* Send part s of its request, in its cluster form: 0 or -1. */
static int send_sub(struct mcl_sub *s)
{
	struct mcl_req *q = s->q;
	struct mcl *cl = q->cl;
	int argc = q->parts ? q->parts[s->k].argc : q->argc;
	const char **argv = q->parts ? q->parts[s->k].argv : q->argv;
	const size_t *len = q->parts ? q->parts[s->k].argvlen : q->argvlen;
	if (q->script < 0) { /* a command, its keys the cluster's names already: as it is */
		s->gen = cl->gen;
		s->cr = csr_command(cl->rt, s->slot, now_us() + cl->timeout_ms * 1000, sub_cb, s,
		                    argc, argv, len);
		return s->cr ? 0 : -1;
	}
	int nkeys = ck_nkeys(argc, argv, len);
	if (nkeys < 0)
		return -1;
	/* the cluster form's arguments and their bytes, in one block (the
	 * router copies them: freed once sent) */
	size_t cap = ck_call_size(argc, len, nkeys);
	const char **out = malloc((sizeof(*out) + sizeof(size_t)) * (size_t)argc + cap);
	size_t *outlen = out ? (size_t *)(out + argc) : NULL;
	char *buf = out ? (char *)(outlen + argc) : NULL;
	int rc = -1;
	if (out && ck_call(q->script, s->slot, argc, argv, len, out, outlen, buf, cap) == 0) {
		const char *sha = s->evald ? NULL : script_sha((enum script_id)q->script);
		out[SA_CMD] = sha ? "EVALSHA" : "EVAL";
		out[SA_SHA] = sha ? sha : script_body((enum script_id)q->script);
		outlen[SA_CMD] = strlen(out[SA_CMD]);
		outlen[SA_SHA] = strlen(out[SA_SHA]);
		int64_t deadline = now_us() + cl->timeout_ms * 1000;
		int write = cl->wait_replicas > 0 && script_writes((enum script_id)q->script);
		s->gen = cl->gen;
		s->cr = (write ? csr_write : csr_command)(cl->rt, s->slot, deadline, sub_cb, s,
		                                          argc, out, outlen);
		/* the epoch is read when the part goes on the wire, on a live
		 * connection, not now: it may wait for a reconnect, and one
		 * written after a connection was lost must be newer than any
		 * written on it */
		int at = ck_epoch_at(q->script, nkeys);
		if (s->cr && at > 0)
			csr_stamp(s->cr, at);
		rc = s->cr ? 0 : -1;
	}
	free(out);
	return rc;
}

static void req_free(struct mcl_req *q)
{
	for (int i = 0; i < q->nsubs; i++)
		if (q->subs[i].r)
			freeReplyObject(q->subs[i].r);
	ck_parts_free(q->parts, q->nparts);
	free(q->subs);
	free(q);
}

/* The request's answer (NULL: it failed): off the list, fn once, freed. */
static void finish(struct mcl_req *q, const redisReply *r)
{
	struct mcl *cl = q->cl;
	ilist_remove(&cl->reqs, &q->link);
	q->fn(cl->m, (redisReply *)r, q->arg);
	req_free(q);
}

/* An MGET's reply from its parts': all of them, or nothing (a value
 * missing for want of a part would read as a key that does not exist). */
static redisReply *join_mget(const struct mcl_req *q)
{
	redisReply *r = calloc(1, sizeof(*r));
	if (!r || !(r->element = calloc((size_t)q->n, sizeof(*r->element)))) {
		free(r);
		return NULL;
	}
	r->type = REDIS_REPLY_ARRAY;
	r->elements = (size_t)q->n;
	for (int k = 0; k < q->nparts; k++) {
		const redisReply *e = q->subs[k].r;
		if (!e || e->type != REDIS_REPLY_ARRAY || e->elements != (size_t)q->parts[k].nitems)
			goto fail;
		for (int j = 0; j < q->parts[k].nitems; j++)
			if (!(r->element[q->parts[k].items[j]] = rdup_reply(e->element[j])))
				goto fail;
	}
	return r;
fail:
	freeReplyObject(r);
	return NULL;
}

static void finish_split(struct mcl_req *q)
{
	redisReply **replies = malloc(sizeof(*replies) * (size_t)q->nparts);
	redisReply *j = NULL;
	if (q->script < 0) {
		j = join_mget(q);
	} else if (replies) {
		for (int k = 0; k < q->nparts; k++)
			replies[k] = q->subs[k].r;
		j = ck_join(q->script, q->n, q->parts, q->nparts, replies);
	}
	free(replies);
	finish(q, j);
	if (j)
		freeReplyObject(j);
}

static void sub_cb(const redisReply *r, void *arg)
{
	struct mcl_sub *s = arg;
	struct mcl_req *q = s->q;
	s->cr = NULL;
	if (r && s->gen != q->cl->gen)
		r = NULL; /* a node of the entry may have lost data since: counts nowhere */
	if (is_noscript(r) && !s->evald) {
		s->evald = 1; /* its body loads it on that node for the next EVALSHAs */
		if (send_sub(s) == 0)
			return;
		r = NULL;
	}
	if (!q->parts) {
		finish(q, r);
		return;
	}
	s->r = r ? rdup_reply(r) : NULL;
	if (--q->pending == 0)
		finish_split(q);
}

/* An MGET over keys of several slots (key i of slots[i]): one MGET per
 * slot, keys in their order. The number of parts, or -1. */
static int split_mget(int n, const unsigned *slots, const char **argv, const size_t *argvlen,
                      struct ck_part **parts)
{
	int np = ck_group(n, slots, parts);
	for (int k = 0; k < np; k++) {
		struct ck_part *pt = &(*parts)[k];
		pt->argc = 1 + pt->nitems;
		pt->argv = malloc(sizeof(*pt->argv) * (size_t)pt->argc);
		pt->argvlen = malloc(sizeof(*pt->argvlen) * (size_t)pt->argc);
		if (!pt->argv || !pt->argvlen) {
			ck_parts_free(*parts, np);
			*parts = NULL;
			return -1;
		}
		pt->argv[0] = argv[0];
		pt->argvlen[0] = argvlen[0];
		for (int j = 0; j < pt->nitems; j++) {
			pt->argv[1 + j] = argv[1 + pt->items[j]];
			pt->argvlen[1 + j] = argvlen[1 + pt->items[j]];
		}
	}
	return np;
}

int mcl_call(struct mcl *cl, const unsigned *slots, int nslots, int script, int argc,
             const char **argv, const size_t *argvlen, master_reply_fn *fn, void *arg)
{
	if (!cl->up || cl->closed || nslots < 1)
		return -1;
	struct mcl_req *q = calloc(1, sizeof(*q));
	if (!q)
		return -1;
	*q = (struct mcl_req){.cl = cl,
	                      .fn = fn,
	                      .arg = arg,
	                      .script = script,
	                      .argc = argc,
	                      .argv = argv,
	                      .argvlen = argvlen};
	int mget = script < 0 && nslots > 1 && argc == nslots + 1 && argvlen[0] == 4 &&
	           strncasecmp(argv[0], "MGET", 4) == 0;
	if (mget) {
		q->n = nslots;
		if ((q->nparts = split_mget(nslots, slots, argv, argvlen, &q->parts)) < 1) {
			req_free(q);
			return -1;
		}
		q->nsubs = q->nparts;
	} else if (script >= 0 && ck_cols_of(script)) {
		q->n = nslots;
		q->nparts = ck_split(script, nslots, slots, argc, argv, argvlen, &q->parts);
		if (q->nparts < 1) {
			req_free(q);
			return -1;
		}
		q->nsubs = q->nparts;
	} else if (nslots == 1) {
		q->nsubs = 1;
	} else {
		req_free(q);
		return -1; /* one call cannot span slots (but those split above) */
	}
	if (!(q->subs = calloc((size_t)q->nsubs, sizeof(*q->subs)))) {
		req_free(q);
		return -1;
	}
	for (int k = 0; k < q->nsubs; k++) {
		q->subs[k] = (struct mcl_sub){
		    .q = q, .k = k, .slot = q->parts ? q->parts[k].slot : slots[0]};
		if (send_sub(&q->subs[k]) != 0) {
			/* none of it answers: the parts handed to the router are
			 * dropped there before they go out (csr_detach; the first send
			 * is on the loop) */
			for (int i = 0; i < k; i++)
				csr_detach(q->subs[i].cr);
			req_free(q);
			return -1;
		}
	}
	q->pending = q->nsubs;
	ilist_push(&cl->reqs, &q->link);
	return 0;
}

/* ---- the marker (membership.c's restart detection at startup) ----
 *
 * On a cluster entry lockd's marker key is in every slot ("{T}" and the
 * marker): it moves with its slot in a resharding, and goes with its
 * primary's data. Written once the entry counts (mcl_set_marker: every
 * slot, MARK_WINDOW SETs out at a time; the entry is marked once every
 * one succeeded with no loss of data meanwhile), and read in one slot of
 * each primary before the entry goes up: a primary that lost its data
 * lost every slot's marker; one that took slots in a resharding took
 * their markers. */
#define MARK_WINDOW 256

static void marker_at(const struct mcl *cl, unsigned s, char *out, size_t len)
{
	snprintf(out, len, "{%s}%s", ktag_of_slot(s), cl->marker);
}

/* A node that restarted empty lost what lockd counted there if it still
 * serves slots in the map the entry goes up with. One that serves none
 * was failed over meanwhile: whoever serves its slots now came with an
 * event of its own (a promotion with or without the data, a move, a new
 * node) that judged them; and nothing it said after its restart counted
 * (the entry went down at once). A map read before the failover still
 * names it: judged lost, as before. */
static void restart_judge(struct mcl *cl)
{
	for (int i = 0; i < cl->nrestarted; i++)
		if (csr_serves(cl->rt, cl->restarted[i].host, cl->restarted[i].port)) {
			log_info("master %s: %s:%d restarted and serves slots: data lost",
			         cl->m->name, cl->restarted[i].host, cl->restarted[i].port);
			cl->lost = 1;
		}
	cl->nrestarted = 0;
}

static void go_up(struct mcl *cl)
{
	restart_judge(cl);
	if (cl->mark_missing && cl->mk == MK_DONE)
		cl->mk = MK_NONE; /* gone since (deleted by hand?): written again when asked */
	int restarted = cl->lost;
	cl->lost = 0;
	cl->up = cl->ever_up = 1;
	cl->ops.up(cl->m, restarted, cl->mark_missing == 0);
}

static void mark_cb(const redisReply *r, void *arg)
{
	struct mcl *cl = arg;
	if (!r || r->type == REDIS_REPLY_ERROR)
		cl->mark_failed++;
	else if (r->type == REDIS_REPLY_NIL)
		cl->mark_missing++;
	if (--cl->marking > 0 || cl->closed)
		return;
	/* every primary answered: up, unless one failed, a node may have lost
	 * data since the reads were sent (what they said is stale), or a slot
	 * lost its primary meanwhile (the next poll reads again) */
	if (!cl->mark_failed && cl->mark_gen == cl->gen && !cl->up && csr_covered(cl->rt))
		go_up(cl);
}

/* Read the markers, then go up (mark_cb). */
static void check_markers(struct mcl *cl)
{
	unsigned slots[CSL_MAX_NODES];
	int n = csr_primaries(cl->rt, slots, CSL_MAX_NODES);
	cl->mark_missing = cl->mark_failed = 0;
	cl->mark_gen = cl->gen;
	for (int i = 0; i < n; i++) {
		char key[200];
		marker_at(cl, slots[i], key, sizeof(key));
		const char *argv[2] = {"GET", key};
		if (csr_command(cl->rt, slots[i], now_us() + cl->timeout_ms * 1000, mark_cb, cl, 2,
		                argv, NULL))
			cl->marking++;
		else
			cl->mark_failed++; /* never up on the markers of some primaries only */
	}
}

static void write_markers(struct mcl *cl);

static void marked_cb(const redisReply *r, void *arg)
{
	struct mcl *cl = arg;
	cl->mk_out--;
	if (!r || r->type != REDIS_REPLY_STATUS)
		cl->mk_failed++;
	if (cl->closed)
		return;
	if (!cl->mk_failed && cl->mk_next < CSL_SLOTS) {
		write_markers(cl);
		return;
	}
	if (cl->mk_out > 0)
		return;
	/* all answered: marked, unless one failed or a node may have lost data
	 * meanwhile (written again by the poll while the entry is up) */
	if (cl->mk_failed || cl->mk_gen != cl->gen) {
		cl->mk = MK_NONE;
		return;
	}
	cl->mk = MK_DONE;
	cl->ops.marked(cl->m);
}

/* Send SETs until MARK_WINDOW are out or every slot has its own. */
static void write_markers(struct mcl *cl)
{
	while (cl->mk_out < MARK_WINDOW && cl->mk_next < CSL_SLOTS && !cl->mk_failed) {
		char key[200];
		unsigned s = cl->mk_next++;
		marker_at(cl, s, key, sizeof(key));
		const char *argv[3] = {"SET", key, "1"};
		if (csr_command(cl->rt, s, now_us() + cl->timeout_ms * 4000, marked_cb, cl, 3, argv,
		                NULL))
			cl->mk_out++;
		else
			cl->mk_failed++;
	}
	if (cl->mk_out == 0 && cl->mk_failed)
		cl->mk = MK_NONE; /* nothing out to answer: the poll tries again */
}

void mcl_set_marker(struct mcl *cl)
{
	cl->mk_wanted = 1;
	if (cl->mk != MK_NONE || !cl->up)
		return;
	cl->mk = MK_WRITING;
	cl->mk_next = 0;
	cl->mk_failed = 0;
	cl->mk_gen = cl->gen;
	write_markers(cl);
}

/* The router's cover, looked at: up when every slot has a live primary
 * (once the markers are read); down when none has, or on a loss of data
 * (event_cb). A primary lost while others live takes only its own slots
 * out: their calls fail at the router (no connection), the others' go
 * on (a hold in another slot keeps its renewals), until a map names a
 * new primary (a promotion is judged by its own event). */
static void poll_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mcl *cl = arg;
	int covered = csr_covered(cl->rt);
	if ((!covered || !cl->up) && !cl->closed &&
	    now_us() - cl->uncovered_refresh_us >= UNCOVERED_REFRESH_US) {
		/* a failover may have named a new primary, or a node that
		 * restarted may be a replica now: the entry counts again once a
		 * map says so, not at the next periodic refresh (nothing asks
		 * one while the entry is down: no calls; and a map read before
		 * the change still covers every slot, with the old primary) */
		cl->uncovered_refresh_us = now_us();
		csr_refresh(cl->rt);
	}
	if (cl->up && !covered && !csr_any_live(cl->rt)) {
		cl->up = 0;
		cl->ops.down(cl->m, "no slot has a live primary");
	} else if (!cl->up && covered && !cl->closed && !cl->marking) {
		check_markers(cl);
	} else if (cl->up && covered && cl->mk_wanted && cl->mk == MK_NONE) {
		mcl_set_marker(cl); /* a write that failed, or lost to a node's loss of data */
	}
}

static const char *stamp_cb(void *arg)
{
	struct mcl *cl = arg;
	return cl->ops.epoch();
}

static void lost_cb(void *arg)
{
	struct mcl *cl = arg;
	cl->ops.epoch_next();
}

/* Where the slots' data comes from changed: a node that may have lost
 * data takes the entry down now (no reply of it has reached a call yet),
 * and up again as one that restarted. */
static void event_cb(const struct csr_event *ev, void *arg)
{
	struct mcl *cl = arg;
	static const char *const kinds[] = {"restarted", "promoted", "resharded", "new"};
	log_info("master %s: %s:%d %s (%d slots, %s)", cl->m->name, ev->host, ev->port,
	         kinds[ev->kind], ev->slots, ev->with_data ? "with the data" : "data may be lost");
	if (ev->with_data)
		return;
	cl->gen++;
	/* its markers may be gone: written again once it counts again, when
	 * membership asks (mcl_set_marker), not as soon as it is up: a
	 * lockd started meanwhile must not take it for one that kept its data */
	cl->mk_wanted = 0;
	if (cl->mk == MK_DONE)
		cl->mk = MK_NONE;
	if (!cl->ever_up)
		return; /* nothing counted there yet */
	if (ev->kind == CSR_EV_RESTARTED && cl->nrestarted < MCL_RESTARTS) {
		/* judged when the entry may go up (restart_judge) */
		snprintf(cl->restarted[cl->nrestarted].host, sizeof(cl->restarted[0].host), "%s",
		         ev->host);
		cl->restarted[cl->nrestarted++].port = ev->port;
	} else {
		cl->lost = 1;
	}
	if (cl->up) {
		cl->up = 0;
		cl->ops.down(cl->m, "a node may have lost data");
	}
}

/* The scripts' SHAs, where no master reported them yet (a configuration
 * of cluster entries only): Redis names a script by the SHA-1 of its
 * body, so each part goes by EVALSHA. Each node connection loads every
 * script first (csr_cfg.scripts): a NOSCRIPT (the scripts flushed by
 * hand) is answered by sending the body, which runs that call after the
 * ones behind it on its connection: a session's grant that ran ahead of
 * its record's write (-3) goes again once the write said 1 (redlock.c). */
static const char *bodies[SCR_COUNT]; /* the scripts every node connection loads */

static void know_shas(void)
{
	for (int id = 0; id < SCR_COUNT; id++)
		bodies[id] = script_body((enum script_id)id);
	for (int id = 0; id < SCR_COUNT; id++)
		if (!script_sha((enum script_id)id)) {
			char hex[SHA1_HEX_LEN + 1];
			const char *body = script_body((enum script_id)id);
			sha1_hex(body, strlen(body), hex);
			script_set_sha((enum script_id)id, hex, SHA1_HEX_LEN);
		}
}

struct mcl *mcl_new(struct master *m, struct event_base *base, const struct mcl_cfg *cfg,
                    const struct mcl_ops *ops, char *err, size_t errlen)
{
	struct mcl *cl = calloc(1, sizeof(*cl));
	if (!cl || ktag_init() != 0) {
		snprintf(err, errlen, "out of memory");
		free(cl);
		return NULL;
	}
	know_shas();
	cl->m = m;
	cl->ops = *ops;
	snprintf(cl->marker, sizeof(cl->marker), "%s", cfg->marker ? cfg->marker : "marker");
	cl->timeout_ms = cfg->timeout_ms;
	cl->wait_replicas = cfg->wait_replicas;
	ilist_init(&cl->reqs);
	int to = (int)(cfg->timeout_ms < 100 ? 100 : cfg->timeout_ms);
	struct csr_cfg rc = {.seeds = cfg->seeds,
	                     .n_seeds = cfg->nseeds,
	                     .password = cfg->password,
	                     .connect_timeout_ms = to * 4,
	                     .command_timeout_ms = to * 4,
	                     .refresh_ms = 5000,
	                     .wait_replicas = cfg->wait_replicas,
	                     .wait_timeout_ms = to / 2,
	                     .on_event = event_cb,
	                     .event_arg = cl,
	                     .stamp = stamp_cb,
	                     .on_lost = lost_cb,
	                     .scripts = bodies,
	                     .n_scripts = SCR_COUNT};
	cl->poll = event_new(base, -1, EV_PERSIST, poll_cb, cl);
	if (!cl->poll || !(cl->rt = csr_new(base, &rc, err, errlen))) {
		if (cl->poll)
			event_free(cl->poll);
		free(cl);
		return NULL;
	}
	event_add(cl->poll, &(struct timeval){0, POLL_US});
	return cl;
}

void mcl_set_opts(struct mcl *cl, int64_t timeout_ms)
{
	cl->timeout_ms = timeout_ms;
}

int mcl_primaries(struct mcl *cl, unsigned *slots, int max)
{
	return csr_primaries(cl->rt, slots, max);
}

int mcl_stats(struct mcl *cl, struct master_node *out, int max)
{
	struct csr_node_stats st[CSL_MAX_NODES];
	int n = csr_stats(cl->rt, st, CSL_MAX_NODES, NULL);
	static const char *const roles[] = {"primary", "replica", "other"};
	for (int k = 0; k < n && k < max && k < CSL_MAX_NODES; k++) {
		struct master_node *o = &out[k];
		int v6 = strchr(st[k].host, ':') != NULL;
		snprintf(o->addr, sizeof(o->addr), v6 ? "[%s]:%d" : "%s:%d", st[k].host,
		         st[k].port);
		o->role = roles[st[k].role <= CSR_ROLE_UNKNOWN ? st[k].role : CSR_ROLE_UNKNOWN];
		o->connected = st[k].connected;
		o->sent = st[k].sent;
		o->redirects = st[k].moved + st[k].ask;
		o->tryagain = st[k].tryagain;
	}
	return n;
}

uint64_t mcl_slot_moves(struct mcl *cl)
{
	return csr_slot_moves(cl->rt);
}

void mcl_refresh(struct mcl *cl)
{
	csr_refresh(cl->rt);
}

const char *mcl_any_node(struct mcl *cl, char *buf, size_t len)
{
	char host[CSL_HOST_MAX + 1];
	int port;
	static struct csr_node_stats st[CSL_MAX_NODES];
	int n = csr_stats(cl->rt, st, CSL_MAX_NODES, NULL);
	for (int k = 0; k < n && k < CSL_MAX_NODES; k++) /* a live primary first */
		if (st[k].role == CSR_ROLE_PRIMARY && st[k].connected) {
			snprintf(buf, len, strchr(st[k].host, ':') ? "[%s]:%d" : "%s:%d",
			         st[k].host, st[k].port);
			return buf;
		}
	for (unsigned s = 0; s < CSL_SLOTS; s += 1024)
		if (csr_slot_owner(cl->rt, s, host, sizeof(host), &port) == 0) {
			snprintf(buf, len, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
			return buf;
		}
	return NULL;
}

void mcl_close(struct mcl *cl)
{
	struct ilink *l;
	cl->closed = 1;
	cl->up = 0;
	while ((l = ilist_first(&cl->reqs))) {
		struct mcl_req *q = ilist_entry(l, struct mcl_req, link);
		for (int k = 0; k < q->nsubs; k++)
			if (q->subs[k].cr) {
				csr_detach(q->subs[k].cr);
				q->subs[k].cr = NULL;
			}
		finish(q, NULL);
	}
}

void mcl_free(struct mcl *cl)
{
	if (!cl)
		return;
	mcl_close(cl);
	event_free(cl->poll);
	csr_free(cl->rt);
	free(cl);
}

/* master.h's view of a cluster entry (0 or nothing for any other). */
int master_cluster_nodes(struct master *m, unsigned *slots, int max)
{
	return m->cl ? mcl_primaries(m->cl, slots, max) : 0;
}

int master_cluster_stats(struct master *m, struct master_node *out, int max)
{
	return m->cl ? mcl_stats(m->cl, out, max) : 0;
}

uint64_t master_cluster_moves(struct master *m)
{
	return m->cl ? mcl_slot_moves(m->cl) : 0;
}

void master_cluster_refresh(struct master *m)
{
	if (m->cl)
		mcl_refresh(m->cl);
}
