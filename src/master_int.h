/* master_int: what the files of a master share (master.c: the command
 * connection, its requests and reconnection; master_hs.c: its handshake;
 * mastersub.c: the pub/sub subscriber). Private to them: the rest of lockd sees master.h.
 * master.c calls the subscriber (sub_*), never the other way round: the
 * subscriber reads what masters_init hands it (sub_init) and shares only
 * the timing helpers below, which need nothing of master.c's. The same
 * holds for master_repl.c (mrepl_*): what it needs of master.c comes in
 * struct mrepl_ops, its requests from master_req.c (mreq_*); and for
 * master_hs.c (mhs_*, the handshake), through struct mhs_ops. */
#ifndef LOCKD_MASTER_INT_H
#define LOCKD_MASTER_INT_H

#include <stdint.h>
#include <stdlib.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "ilist.h"

#include "master.h"
#include "util.h"

/* One request on the wire. Freed only from its hiredis callback, which
 * hiredis runs exactly once (with NULL when the context goes away). */
struct mreq {
	struct ilink link; /* on master.inflight until answered or failed */
	struct master *m;
	master_reply_fn *fn;
	void *arg;
	int64_t sent_us;   /* written out (stamp_written), or 0 */
	int64_t queued_us; /* handed to hiredis */
	int script;        /* -1 or the script, for the NOSCRIPT fallback */
	int argc;
	const char **argv;
	const size_t *argvlen;
	int done; /* fn has run (the request failed); only the free is left */
	/* A batch: one script call carrying the calls of a loop turn. */
	struct mreq *items; /* the carrier's calls, in order (their own fn, arg) */
	int nitems;
	struct mreq *item_next; /* a call's next in its carrier */
	size_t nkeys;           /* a batchable call's number of keys (its argv[2]) */
	/* redis.wait_replicas: a write's WAIT, and the write's reply held
	 * until it answers (master.c, send_wait) */
	struct mreq *waiter;  /* a write: its WAIT, out after it; NULL: none (or answered) */
	struct mreq *wait_of; /* a WAIT: the write it is for; NULL: orphaned (nothing) */
	redisReply *held;     /* a write answered, its WAIT not yet: a copy of its reply */
	int held_set;         /* held is set (it may be NULL: the copy failed) */
	int is_wait;          /* this is a WAIT */
};

/* How long a connect, a handshake or a subscriber's PING may take: more
 * than a request's timeout_ms, as a false alarm here costs a reconnect. */
static inline int64_t master_slow_ms(const struct master_opts *o)
{
	return o->timeout_ms * 4 < 250 ? 250 : o->timeout_ms * 4;
}

static inline void master_timer_at(struct event *ev, int64_t at_us)
{
	int64_t d = at_us - now_us();
	if (d < 0)
		d = 0;
	struct timeval tv = {(time_t)(d / 1000000), (suseconds_t)(d % 1000000)};
	event_add(ev, &tv);
}

/* Arm ev after *backoff_ms with jitter (50-100 %), and double *backoff_ms
 * up to o->reconnect_max_ms for the next time. */
static inline void master_backoff_arm(const struct master_opts *o, struct event *ev,
                                      int64_t *backoff_ms)
{
	int64_t b = *backoff_ms;
	*backoff_ms = b * 2 > o->reconnect_max_ms ? o->reconnect_max_ms : b * 2;
	b = b / 2 + (int64_t)(random() % (b / 2 + 1));
	master_timer_at(ev, now_us() + b * 1000);
}

/* mastersub.c, for master.c */

/* Called once by masters_init with its loop, its own options (read when
 * used, so masters_set_opts reaches the subscriber), its shutdown flag
 * (set: a lost subscriber is not made again), the key prefix the
 * channels are named by and this lockd's instance (its connections'
 * name), both copied. */
void sub_init(struct event_base *b, const struct master_opts *o, const int *shutting_down,
              const char *prefix, const char *instance);
/* m went up: subscribe (SUB_CONNECTING). */
void sub_start(struct master *m);
/* Let go of m's subscriber, if any, and make none: SUB_OFF. free_ctx is 0
 * when hiredis is already tearing the context down. */
void sub_close(struct master *m, int free_ctx);
/* m->sub_timer's callback (masters_init makes the timer). */
void sub_timer_cb(evutil_socket_t fd, short what, void *arg);

/* master_req.c, for master.c and master_repl.c: requests from a slab. */

/* A zeroed request, or NULL. */
struct mreq *mreq_get(void);
void mreq_put(struct mreq *r);
/* Free them all (masters_shutdown). */
void mreq_destroy(void);

/* master_repl.c, for master.c */

/* What master_repl.c asks of master.c, handed down by masters_init (so
 * master_repl calls nothing of master.c's by name). */
struct mrepl_ops {
	/* Queue r on m's connection (use_eval: a script by its body); 0 or -1. */
	int (*send)(struct master *m, struct mreq *r, int use_eval);
	/* Give r its answer (NULL: failed); a batch hands each call its own. */
	void (*answer)(struct master *m, struct mreq *r, redisReply *rep);
	/* Send a command or script now, in a handshake or while up; 0 or -1. */
	int (*call)(struct master *m, int script, int argc, const char **argv,
	            const size_t *argvlen, master_reply_fn *fn, void *arg);
	/* Drop m's connection: fail what is in flight, reconnect later. */
	void (*drop)(struct master *m, const char *why, int free_ctx);
	/* A handshake step failed: drop m (if still in its handshake). */
	void (*hs_fail)(struct master *m, redisReply *r, const char *what);
};

/* Once, before anything else of master_repl.c's (ops is kept). */
void mrepl_init(const struct mrepl_ops *ops);

/* The options (kept, read when used) and WAIT's arguments from them;
 * again after every change. */
void mrepl_set_opts(const struct master_opts *o);
/* How much longer than redis.timeout_ms a WAIT may take to answer. */
int64_t mrepl_wait_allow_ms(void);
/* r (a write just queued on m) is followed by its WAIT, if it needs one. */
void mrepl_send_wait(struct master *m, struct mreq *r);
/* A WAIT's answer (rep NULL: failed): its write's callers get theirs. */
void mrepl_wait_answer(struct master *m, struct mreq *w, redisReply *rep);
/* ROLE's reply: the replicas a master lists, or -1 when it is not a
 * master (or the reply is not ROLE's). */
int mrepl_role_replicas(const redisReply *r);
/* The replicas of a ROLE reply that mrepl_role_replicas counts, as
 * "HOST:PORT,HOST:PORT" in ROLE's order, "-" when none: an entry that
 * does not fit in len is left out and the list ends in ",..." (or is
 * "..."); one whose address is not plain printable ASCII (a space, a
 * comma, a quote, a backslash) is left out. */
void mrepl_role_nodes(const redisReply *r, char *buf, size_t len);
/* The handshake's ROLE: fails the handshake unless m is a master. */
void mrepl_hs_role(struct master *m);
/* ROLE again on an up master, at most once a second (every entry: STATS
 * shows its replicas). */
void mrepl_refresh(struct master *m);
/* m goes up: whether a run_id change (restarted) is reported as a restart
 * (1) or was a promoted replica that has every counted write (0). */
int mrepl_restart(struct master *m, int restarted);

/* master_hs.c, for master.c: the handshake of a command connection. */

/* What master_hs.c asks of master.c, handed down by masters_init. */
struct mhs_ops {
	/* Send a command or script now, in a handshake or while up; 0 or -1. */
	int (*call)(struct master *m, int script, int argc, const char **argv,
	            const size_t *argvlen, master_reply_fn *fn, void *arg);
	/* Drop m's connection: fail what is in flight, reconnect later. */
	void (*drop)(struct master *m, const char *why, int free_ctx);
	/* Give m's connection the next connection epoch and raise the
	 * master's epoch key to it (master_epoch); fn gets the answer. */
	void (*gen)(struct master *m, master_reply_fn *fn);
	/* The handshake succeeded: m goes up. */
	void (*up)(struct master *m);
	/* The handshake succeeded but connections of another layout are
	 * listed: m goes to MS_LAYOUT_WAIT (master_hs.c polls, then up). */
	void (*wait)(struct master *m);
};

/* Once, before any connection: ops and o are kept (o read when used),
 * marker is the marker key (kept); the prefix names the layout key and
 * the instance (INSTANCE_LEN hex, as in tokens) the connection. */
void mhs_init(const struct mhs_ops *ops, const struct master_opts *o, const char *marker,
              const char *prefix, const char *instance);
/* m (MS_HANDSHAKE) is connected: send its handshake. */
void mhs_start(struct master *m);
/* A handshake step failed: drop m (if still in its handshake or its
 * layout wait). */
void mhs_fail(struct master *m, redisReply *r, const char *what);
/* m->layout_timer's callback (masters_init makes the timer): CLIENT LIST
 * again while m is in MS_LAYOUT_WAIT. */
void mhs_poll_cb(evutil_socket_t fd, short what, void *arg);
/* GET of the layout key: 1 when it is this build's layout (nil: the key
 * is missing, or MASTER_LAYOUT), 0 for any other value, -1 for no reply,
 * an error or another type. Unless -1, shown (len > 4) gets the layout in
 * one printable word: MASTER_LAYOUT for a missing key, else the value with
 * '?' for each space or control byte, cut at len - 4 bytes and then ended
 * by "...", or two double quotes when it is empty. Pure. */
int mhs_layout_judge(const redisReply *r, char *shown, size_t len);
/* The same for a build of layout `layout` (not 1) and the reply of its
 * switching EVAL, which returns the key's value as it found it and set
 * the key to `layout` unless that value is a higher layout or no number:
 * 1 when it was missing or a number (up to 9 decimal digits, nothing
 * else) not above `layout` (shown: `layout`, what the key says now), 0
 * for any other value (shown as mhs_layout_judge shows it), -1 for no
 * reply, an error or another type. Pure. */
int mhs_switch_judge(const redisReply *r, unsigned long layout, char *shown, size_t len);

/* The connections of CLIENT LIST's text (list, len bytes) that belong to
 * a lockd of a layout other than `layout`: those named
 * "lockd-l<M>-<anything>", M decimal digits, M != layout (more than 9
 * digits: another layout). Subscribers (lockd-sub-*), unnamed clients
 * and other names are not. */
struct mhs_others {
	int n;          /* such connections */
	long layout;    /* their layout when they all have one, -1 when they differ
	                   (or one has more than 9 digits), 0 when n is 0 */
	char first[44]; /* the first one's name (cut to fit, "" when n is 0) */
};
/* Fills *o and returns o->n. Pure. */
int mhs_client_list_others(const char *list, size_t len, unsigned long layout,
                           struct mhs_others *o);

/* master_fmt.c, for master.c */

/* r as RESP (a command, a script call, or a batch of script calls: their
 * keys one after another, then their arguments), EVAL with the body when
 * use_eval; valid until the next call. */
const char *mfmt_req(const struct mreq *r, int use_eval, size_t *len);
/* 1 when calls a and b of one batchable script have the same shared keys
 * and arguments (scripts.h, struct script_shared), so that one batch can
 * carry both. */
int mfmt_same_shared(const struct mreq *a, const struct mreq *b);
void mfmt_free(void);

#endif
