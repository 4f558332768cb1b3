/* locktab: the central table of keys: who holds each key on this lockd
 * (exclusively, shared, or one of its permits), each hold's fence and
 * lease, the FIFO of clients waiting for it, and the one watchdog that
 * renews every lease.
 *
 * locktab knows its callers only as struct lt_client, a part of theirs
 * that they embed (a session does), and answers them through the
 * callbacks given to locktab_init. It asks the masters through redlock. */
#ifndef LOCKD_LOCKTAB_H
#define LOCKD_LOCKTAB_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "proto.h"
#include "ilist.h"
#include "locktab_types.h"

struct event_base;
struct event;
struct hold;
struct lkey;
struct lt_client;
struct rl_adopted;
struct rl_call;
struct rl_sess_hold;
struct el_client;
struct la_req;

/* What locktab keeps of one client. The owner fills id, peer, eof and
 * req_us, and zeroes the rest before lt_client_init; locktab owns the rest. */
struct lt_client {
	uint64_t id;        /* for log lines */
	const char *peer;   /* for log lines */
	void *ctx;          /* the owner's handle, for its lt_ops (NULL: nobody to answer) */
	const char *sid;    /* a resumable session's id (1.2), or NULL: its holds are
	                       kept in its record on the masters (redlock.h) */
	int eof;            /* the peer left: a wait that goes on must wake it */
	int64_t req_us;     /* when its current request arrived */
	struct ilist locks; /* its holds (struct hold.hold_link), one per key */
	uint32_t nlocks;
	struct waiter w;         /* its place in a key's queue, when in one */
	struct rl_call *call;    /* the quorum call that answers its current request */
	struct lkey *verdict_lk; /* a key whose handoff's release answers it */
	struct hold *verdict_h;  /* a hold whose EXTEND answers it */
	struct el_client *el;    /* elect.c's part (1.3): observations, a CAMPAIGN's
	                            value; NULL when none */
	struct la_req *la;       /* lockall.c's LOCKALL in progress (1.4), or NULL */
};

/* How locktab answers its clients. Each request gets exactly one reply;
 * lines (events, the lines of a multi-line reply) may come before it. */
struct lt_ops {
	void (*reply)(struct lt_client *c, const char *fmt, va_list ap); /* "\r\n" added */
	void (*line)(struct lt_client *c, const char *fmt, va_list ap);  /* "\r\n" added */
	/* Look at the client's state again from the loop (its peer left while
	 * its wait goes on: it may end the wait). */
	void (*wake)(struct lt_client *c);
	/* End c's connection now, answering nothing more there (its session
	 * moved to another connection or lockd: 1.2). Not used by locktab. */
	void (*close)(struct lt_client *c);
	/* A hold of c's resumable session reached its deadline late (lockd
	 * was stopped or stalled): check now whether the session moved to
	 * another lockd, which drops it without LOST (1.2). */
	void (*verify)(struct lt_client *c);
	/* End c's connection once what was answered is written (a limit of
	 * failed RESUMEs, 1.2). Not used by locktab. */
	void (*quit)(struct lt_client *c);
};

int locktab_init(struct event_base *base, const struct config *cfg, const struct lt_ops *ops);
void locktab_set_cfg(const struct config *cfg);
void locktab_shutdown(void);
uint64_t locktab_keys(void);

void lt_client_init(struct lt_client *c);

/* Commands: each answers the client now or later through ops->reply. */
void lt_lock(struct lt_client *c, const struct request *r);
void lt_unlock(struct lt_client *c, const char *key, size_t klen);
void lt_extend(struct lt_client *c, const char *key, size_t klen, uint32_t ms);
/* STATUS key (permits 0), or STATUS key PERMITS n. */
void lt_status(struct lt_client *c, const char *key, size_t klen, uint32_t permits);
void lt_held(struct lt_client *c);

/* The client's LOCK waits (queued, or asleep until the key is free
 * elsewhere) rather than being decided right now. */
int lt_waiting(const struct lt_client *c);
/* The client leaves: cancel its wait, detach it from calls, release its locks. */
void lt_client_end(struct lt_client *c);
/* The client's connection ended but its session lives on (1.2): cancel
 * its wait and detach it from calls, as lt_client_end, but keep its holds. */
void lt_client_detach(struct lt_client *c);
/* Its session moved to another lockd (1.2): forget its holds here with no
 * LOST and no release (the masters hold them for the other lockd now). */
void lt_client_forget(struct lt_client *c);
/* Its holds, as a session record lists them (1.2); out has room for
 * c->nlocks. */
void lt_holds_of(const struct lt_client *c, struct rl_sess_hold *out, int n);
/* Every hold of from is to's now (a session resumed on a new connection). */
void lt_client_move(struct lt_client *from, struct lt_client *to);
/* RESUME's verdict (rl_sess_adopt): c holds exactly the holds the masters
 * hold for its session now; a hold it had that they do not is LOST. */
void lt_resume(struct lt_client *c, const struct rl_adopted *a, int n);
/* SIGTERM: answer every waiter ERR SHUTDOWN and release every lock (but
 * those of resumable sessions, left on the masters for a resume). */
void lt_shutdown_all(void);
/* Releases are still queued or in flight (shutdown waits for them). */
int locktab_busy(void);
/* A released-key notice from a master's channel. */
void lt_notice(const char *key, size_t klen);
/* Release notices may have been missed: every sleeping waiter asks again. */
void lt_notice_all(void);

/* --- leader election (1.3): a campaign is the exclusive lock of its name
 * (LOCK name WAIT ms, with request cmd CMD_CAMPAIGN); elect.c, above
 * locktab, publishes the value and answers. --- */
struct lt_elect_hooks {
	/* A CAMPAIGN was granted: locktab sent no reply, the hook answers. */
	void (*granted)(struct lt_client *c, const char *key, size_t klen, uint64_t fence,
	                const char *token);
	/* c's hold of the key's lock ends (its last UNLOCK, its session's end,
	 * shutdown: lost 0; LOST: lost 1, the line sent already; LOST of a
	 * hold with a lock-delay, 1.4: lost 2, nothing may be released on the
	 * masters, the delay runs there). Returns 1 when the hook releases it
	 * on the masters itself (a leader's lock, with its value; lost 2: it
	 * forgets the leader and writes nothing), 0 to let locktab release it
	 * as usual (lost 2: locktab releases nothing either). */
	int (*releasing)(struct lt_client *c, const char *key, size_t klen, const char *token,
	                 int lost);
};
void lt_set_elect_hooks(const struct lt_elect_hooks *h);
/* Who holds the key's lock (exclusively, permit 0) here, or NULL; with
 * its fence and token. */
struct lt_client *lt_lock_holder(const char *key, size_t klen, uint64_t *fence, char *token);
/* c's hold of the key's lock is a leader's (1.3): its renewals refresh
 * the expiry of the leader's record beside the lock. */
void lt_set_lead(struct lt_client *c, const char *key, size_t klen);
/* c holds the key (in any way). */
int lt_holds(struct lt_client *c, const char *key, size_t klen);

/* --- WHO (1.4) --- */
/* A hold of key here, as WHO tells it. */
struct lt_hold_view {
	struct lt_client *holder;
	uint64_t fence;
	int64_t since_us; /* granted, or adopted by this lockd (monotonic) */
};
/* The hold of key here with token, or 0 when no session here holds it. */
int lt_hold_by_token(const char *key, size_t klen, const char *token, struct lt_hold_view *out);
/* c lets go of all its holds of the key here, with no release: the
 * caller released it on the masters (a leader's RESIGN). */
void lt_drop(struct lt_client *c, const char *key, size_t klen);

/* --- LOCKALL (1.4): lockall.c, above locktab, asks for each key of a
 * request with a waiter of its own (struct waiter, part set), which
 * queues in the key's FIFO like any other; its verdicts go to these
 * hooks instead of a reply. --- */
struct lt_part_ops {
	/* w's key is granted (w has left the queue): c holds it, with fence. */
	void (*granted)(struct waiter *w, uint64_t fence);
	/* w's key is not granted (w has left the queue): msg is what LOCK
	 * would have answered ("TIMEOUT" when busy, or "ERR ..."). */
	void (*failed)(struct waiter *w, const char *msg);
	/* c's connection ends (lt_client_detach): end its LOCKALL unanswered,
	 * releasing the keys it took; or (release 0) its session moved to
	 * another lockd (lt_client_forget), which adopted them from its record:
	 * they are forgotten here with the rest. */
	void (*cancel)(struct lt_client *c, int release);
	/* c's LOCKALL waits in a queue (see lt_waiting). */
	int (*waiting)(const struct lt_client *c);
	/* w's attempt found its key in a lock-delay (1.4): the request
	 * counts in delayed_grants_refused once, whatever its keys. */
	void (*delayed)(struct waiter *w);
};
void lt_set_part_ops(const struct lt_part_ops *o);
/* c's hold of key: -1 none, else its kind (with its fence and permit). */
int lt_part_held(struct lt_client *c, const char *key, size_t klen, uint64_t *fence,
                 uint32_t *permit);
/* Start w (w->c set) on r's key, as a LOCK of it would (r: a plain
 * LOCK with LOCKALL's TTL and DELAY): WM_ONCE, one attempt, or WM_WAIT,
 * in its queue until granted (no deadline: the caller keeps it). Returns 0 when started (its
 * verdict comes through lt_part_ops, possibly before this returns), 1 when the key is busy here
 * (held, asked for or queued for: never jump the queue; not started),
 * -1 when out of memory. */
int lt_part_start(struct waiter *w, const struct request *r, enum wait_mode mode);
/* Sessions queued for key here. */
size_t lt_part_waiters(const char *key, size_t klen);
/* w leaves its queue (an acquire in flight for it is given back). */
void lt_part_cancel(struct waiter *w);
/* c lets go of every hold of key, released as by an UNLOCK to 0 with
 * nobody waiting for the verdict. */
void lt_part_release(struct lt_client *c, const char *key, size_t klen);
/* c's exclusive hold of key counts delta more holds (reentrant: 1; -1
 * takes back a count that lt_part_count could not write). */
void lt_part_reenter(struct lt_client *c, const char *key, size_t klen, int delta);
/* A resumable session's counts live in its record too (1.2): count one
 * more hold of each of the n keys (held by c) now, and write the counts in
 * its record; done runs with the verdict (rl_result_of: RL_OK). NULL: out
 * of memory, nothing counted. */
struct rl_call *lt_part_count(struct lt_client *c, const char *const *keys, const size_t *klens,
                              int n, void (*done)(struct rl_call *, void *), void *owner);

#endif
