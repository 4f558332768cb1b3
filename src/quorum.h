/* quorum: pure Redlock arithmetic. Every verdict a quorum call gives
 * (won, busy, lost, still waiting; a renewal held; what a STATUS sees),
 * the validity of a lease and the fence rule are decided here, from
 * counts and values that redlock.c gathers from the masters that count.
 * No I/O, no allocation, no clock: the caller passes the time. */
#ifndef LOCKD_QUORUM_H
#define LOCKD_QUORUM_H

#include <stdint.h>

enum quorum_state {
	Q_PENDING, /* not decided: the masters still silent can change it */
	Q_WON,     /* a majority said yes */
	Q_BUSY,    /* a majority can no longer say yes, but a majority said
	              yes or busy: another holder has it */
	Q_LOST,    /* neither a win nor busy can be reached any more */
};

/* N/2+1 of n masters. */
int quorum_majority(int n);

/* The verdict on the answers of the masters that count so far: yes said
 * yes, busy found another holder, waiting have not answered yet; the
 * others failed, timed out or were down (masters that do not count are
 * in none of them). A call without a busy answer (a release, the
 * write-back of a fence) passes busy 0 and never gets Q_BUSY. */
enum quorum_state quorum_verdict(int yes, int busy, int waiting, int majority);

/* Once every master answered (or the call expired): yes counting masters
 * are a majority (a renewal held, a STATUS answered, a permit held). */
int quorum_reached(int yes, int majority);

/* Redlock validity in microseconds: lease - elapsed - (lease*drift + 2 ms).
 * Non-positive means the grant must not be answered OK. */
int64_t quorum_validity_us(int64_t lease_ms, int64_t elapsed_us, double drift_factor);

/* The deadline (monotonic, us) before which a lease of lease_ms written
 * by a call that started at start_us is ours, seen at now_us; 0 when its
 * validity is over already (quorum_validity_us not positive). */
int64_t quorum_valid_until(int64_t lease_ms, int64_t start_us, int64_t now_us, double drift_factor);

/* The quorum-register fence rule over the counters that k granting masters
 * returned: the fence is their maximum; *writeback is set when fewer than
 * maj of them already hold it, so it must be stored on more masters before
 * the grant is answered. */
int64_t quorum_fence(const int64_t *counters, int k, int maj, int *writeback);

/* The value that at least maj of v[0..n) hold, 0 when none does (0s in v
 * are "nothing there"). A resumable hold's fence: a grant is answered only
 * once a majority of the masters' records hold the fence granted, and
 * two majorities meet, so no other value can have a majority; a master
 * that answered too late to be corrected may hold its own. */
uint64_t quorum_agreed(const uint64_t *v, int n, int maj);

/* Of the n counting masters that answered a read (STATUS, WHO) of the
 * total configured, how many must show a hold for the read to report it:
 * a granted hold is on a majority, which leaves out at most
 * total - majority masters, so it is on at least majority - (total - n)
 * of any n. With every master answering that is the majority; with fewer
 * it is fewer, never below 1 (a read needs a majority to answer at all).
 * Counting a majority of the answers instead would report a key held on
 * {M1, M2} FREE to a reader that heard M2 and M3 only. */
int quorum_read_threshold(int n, int total, int majority);

/* The k-th largest of v[0..n) (1 <= k <= n): the most that k of them
 * reach at least. v is reordered. */
int64_t quorum_kth_largest(int64_t *v, int n, int k);

/* The STATUS answers of the n counting masters that answered, of total
 * configured: one value of each array per master, as SCR_STATUS returns
 * them. The arrays are reordered (pttl overwritten). */
struct quorum_status_in {
	int n;
	int total;
	int64_t *pttl;         /* the key's lock: ms left, -1 held with no expiry, -2 not held */
	int64_t *zcard;        /* live shared holders */
	int64_t *zttl;         /* ms left on the longest shared lease, or -2 */
	uint32_t npermits;     /* the permits asked (0 or 1: the key's lock only) */
	const int *permit_yes; /* per permit 1 .. npermits-1: counting masters that hold it */
	const char **members;  /* with nmembers: every answer's shared holders, one list
	                          after another (each master lists a holder once), or
	                          NULL when one of them had too many to list */
	int nmembers;
};

/* What the masters that answered say a majority may hold: t below is
 * quorum_read_threshold (the majority when every master answered). All
 * 0 unless ok. */
struct quorum_status {
	int ok;                /* a majority answered: the rest means something */
	int held;              /* the key's lock is held on t of them */
	int64_t ttl_ms;        /* held: the lease t of them still have at least */
	int holders;           /* shared holders that t of them have at least */
	int64_t shared_ttl_ms; /* holders: the shared lease t of them keep at least */
	uint32_t permits;      /* of permits 0 .. npermits-1, how many t of them hold */
};
struct quorum_status quorum_status(const struct quorum_status_in *in, int majority);

/* An election read that `answered` of `total` masters answered (majority
 * maj): `locked` of them hold the name's lock, and fences[0 .. n-1] are
 * the leaders' fences the answers hold (one per answer with a leader's
 * record); `named` the fence a majority of all holds (0: none). 1 when a
 * fence above `named` (or, with none named, the lock) is held on as many
 * answers as a real grant must be on (quorum_read_threshold) and not on
 * a majority of all: a leader or a failed attempt's leftover, which the
 * answers cannot tell apart. 0 when every master answered. */
int quorum_leader_unsure(int answered, int total, int maj, int locked, const uint64_t *fences,
                         int n, uint64_t named);

/* How many distinct strings occur at least t times among v[0 .. n-1]
 * (v is sorted in place). With each master's list of holders in v, each
 * holder once per list: the holders that t masters hold. */
int quorum_common(const char **v, int n, int t);

#endif
