/* soak_run: many lock sessions driven from one process in a poll loop, and
 * the checker that judges them (test_soak.c, its multi-session tests).
 *
 * The multi-session tests drive all their sessions from this one process
 * in a poll loop, and judge safety by when the replies are received: a
 * session holds the lock from the receipt of its "OK fence" until it
 * sends UNLOCK (or receives LOST for that fence). A grant received while
 * another session holds is an overlap; a fence not above every fence
 * granted before it is a regression. Each poll round first reads every
 * socket that has data, then handles the LOST events of that round, then
 * the replies: what arrived in the same round counts as simultaneous
 * (a round takes well under a millisecond; a correct lockd sends LOST at
 * least the clock drift allowance before any other grant can happen).
 */
#ifndef LOCKD_TEST_SOAK_RUN_H
#define LOCKD_TEST_SOAK_RUN_H

#include "harness.h"

/* samples (ms), for percentiles */
struct dvec {
	double *v;
	int n, cap;
};

/* ------------------------------------------------------------------ session engine */

enum { S_IDLE, S_LOCKING, S_HOLDING, S_UNLOCKING, S_DONE };

struct sess {
	struct cl *c;
	int inst;                      /* lockd index */
	int st;                        /* S_* */
	const char *lock_req;          /* e.g. "LOCK hot WAIT 10000\n" */
	int hold_min, hold_max;        /* ms between OK and UNLOCK */
	int think_min, think_max;      /* ms between the UNLOCK reply and the next LOCK */
	int max_grants;                /* 0: no limit */
	int manual;                    /* the test sends its LOCKs itself (t_next unused) */
	unsigned long long fence;      /* of the current grant */
	unsigned long long lost_fence; /* of the last LOST */
	int holds;        /* believes it holds (OK received, no UNLOCK sent, no LOST) */
	double t_next;    /* IDLE: send LOCK at; HOLDING: send UNLOCK at */
	double t_sent;    /* when the pending request was sent */
	double last_wait; /* ms from sending LOCK to its OK */
	int grants;
	int replies;     /* replies received (any) */
	char *lines[16]; /* this round's lines */
	int nlines;
	/* resumable (1.2): its session's id and secret; while it holds, its
	 * connection is reset at t_blip and the session resumed on either lockd */
	char sid[24], secret[40];
	double t_blip;
};

struct run {
	struct sess *s;
	int n;
	char key[64];
	char unlock_req[80];
	unsigned seed;
	int stopping; /* send no new LOCK */
	int holder;   /* the session that believes it holds, or -1 */
	unsigned long long last_fence;
	long grants, overlaps, regressions, lost, lost_stale, quorum, quorum_unlock, timeouts,
	    notheld_after_lost, bad, resumes, resumes_failed;
	char first_overlap[320], first_regression[200], first_bad[320];
	/* the last release, for handoff latency: 0 none, 1 UNLOCK sent, 2 its OK 0 received */
	int rel_state, rel_owner, rel_inst;
	double rel_t;
	long grant_before_ok0;
	/* the fenced counter: the holder increments it with its fence; a write
	 * whose fence is not above the last accepted one is refused */
	long counter, refused;
	unsigned long long counter_fence;
	/* stalls: no grant for more than stall_ms while a session waited */
	double last_grant_t, stall_ms;
	struct dvec stall_at, stall_len;
	/* runs of grants on one lockd while a session on another one waited */
	int run_inst, run_len, max_run;
	/* LOCK sent -> OK received, per lockd (index 0 or 1) */
	struct dvec wait[2];
	/* grants on the lockd that had released it, 4 ms or more after the
	 * release's OK 0 (not a direct handoff), while the other lockd had a
	 * waiter */
	long regrant_over_remote;
	struct dvec xlat, llat; /* cross-instance / same-instance handoff, ms */
	/* optional: the "inside" and "seq" counters on a master (INCR/DECR) */
	struct rconn *rc;
	long inside_bad;
	unsigned long long *seq_fence; /* fence by INCR seq, 1-based */
	long nseq, capseq;
};

/* p-th percentile (nearest rank) of v[0..n), which gets sorted. */
double pct(double *v, int n, double p);
void dv_add(struct dvec *d, double x);
/* Random integer in [lo, hi]. */
int rnd(unsigned *seed, int lo, int hi);

/* Session i sends req (t_sent: when). */
void send_req(struct run *r, int i, const char *req);
/* SESSION GRACE 1000 on s's connection (retried on ERR QUORUM); 0 when it
 * stays a plain session. */
int make_resumable(struct sess *s);
void run_init(struct run *r, int n, const char *key, unsigned seed);
/* One poll round of at most max_ms: read, then LOST events, then replies,
 * then the timers (LOCK, UNLOCK, blips) that are due. */
void run_round(struct run *r, int max_ms);
/* Stop locking; let the outstanding requests finish (bounded). */
void run_drain(struct run *r, int timeout_ms);
/* Assert the safety figures of a run. */
void run_check(struct run *r);
void run_free(struct run *r);
/* Print n, p50, p99 and max of d, in ms. */
void print_lat(const char *test, const char *what, struct dvec *d);

#endif
