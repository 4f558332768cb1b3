/* redlock: one quorum call across all masters: fan out, count the
 * answers of the masters that count, decide, and undo on failure. */
#ifndef LOCKD_REDLOCK_H
#define LOCKD_REDLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "util.h"

enum rl_result {
	RL_OK,     /* a majority of counting masters said yes in time */
	RL_BUSY,   /* a majority answered, but another token holds the key */
	RL_QUORUM, /* no majority answered in time */
};

struct rl_call;
typedef void rl_done_fn(struct rl_call *c, void *owner);

/* What a hold is on the masters (the Redis keys are in scripts.c). */
enum rl_hold {
	RH_LOCK,   /* exclusive: the key's lock (permit 0), or permit i >= 1 */
	RH_SHARED, /* one of the key's shared holders */
};

/* How an acquire may wait (rl_acquire's will_wait). */
enum rl_wait {
	RW_NO,     /* the caller does not wait: raise no flag */
	RW_YES,    /* if busy, ask for the holder's release to be announced */
	RW_RAISED, /* the same, and an earlier attempt of this waiter raised the
	              exclusive-waiting flag (rl_grant.xwaiting): a grant clears it */
};

/* A hold of a resumable session (1.2), as its record on the masters
 * lists it: the session's id, and how the record names the hold's kind
 * ('x' the key's lock, 'p' a permit, 's' shared). */
struct rl_rec {
	const char *sid;
	char kind;
	int ttl; /* a TTL hold */
};

/* Per-key outcome of a renewal batch. */
struct rl_renew_item {
	const char *key; /* lock key without prefix */
	size_t klen;
	enum rl_hold hold;
	uint32_t permit; /* RH_LOCK: 0 for the key's lock */
	const char *token;
	const char *sid;     /* a resumable session's hold: renewed only where its
	                        record names this instance; NULL otherwise */
	void *owner;         /* caller's handle */
	int lead;            /* a leader's lock (1.3): its record's expiry is refreshed too */
	uint32_t delay_ms;   /* its lock-delay (1.4): written with its lease, in its value */
	int yes;             /* counting masters that hold it for us now */
	int rewrote;         /* a leader's lock: a master holds it without its value (3) */
	int unrecorded;      /* a resumable session's hold written back (2) on some master:
	                        its record there may lack the hold (a grant that missed it,
	                        a race with another lockd's try); renewals do not write it */
	int ok;              /* the verdict: a majority holds it for us, within validity */
	int64_t validity_us; /* ok: deadline (monotonic) before which it is ours */
};

/* What an acquire (and a handoff) reports. */
struct rl_grant {
	enum rl_result result;
	uint64_t fence;
	int64_t start_us;    /* when the call started: leases run from here */
	int64_t validity_us; /* deadline (monotonic) before which the lock is ours */
	int64_t pttl_ms;     /* RL_BUSY: the longest lease left on a master, or -1 */
	int remote_waiters;  /* RL_OK: a waiter on another lockd asked for the key */
	int delayed;         /* RL_BUSY: a master that counts has the key in its
	                        lock-delay (1.4) */
	int xwaiting;        /* RL_BUSY: live shared holders kept this exclusive
	                        acquire out, and it raised the exclusive-waiting
	                        flag (no new shared holders elsewhere for a while) */
};

struct event_base;
void redlock_init(struct event_base *base, const char *prefix, double drift_factor,
                  int64_t timeout_ms, int64_t fence_idle_ms);
void redlock_set_opts(double drift_factor, int64_t timeout_ms, int64_t fence_idle_ms);
void redlock_shutdown(void);
/* A new lock token: this process's instance id, then random hex, then
 * RL_TOKEN_N_LEN zeros (rl_token_set_permits). Masters may overwrite a
 * token of ours that no session of ours holds (a stale leftover of a late
 * write), never another process's. */
void rl_token_new(char *out);
/* A token's last RL_TOKEN_N_LEN hex digits say what its grant asked, so
 * that WHO on any lockd can tell (1.4) with no write of its own: 0 the
 * key's lock (LOCK, CAMPAIGN) or a shared hold, n for PERMITS n. They
 * survive a resume elsewhere, which keeps all but the instance. */
#define RL_TOKEN_N_LEN 5 /* hex digits: n is at most 65536 (limits.max_permits) */
static inline void rl_token_set_permits(char *tok, uint32_t n)
{
	static const char hex[] = "0123456789abcdef";
	for (int i = TOKEN_LEN - 1; i >= TOKEN_LEN - RL_TOKEN_N_LEN; i--, n >>= 4)
		tok[i] = hex[n & 15];
}
/* The n of rl_token_set_permits, or UINT32_MAX for a token without one
 * (not hex there: not a token of lockd 1.4 or later). */
static inline uint32_t rl_token_permits(const char *tok)
{
	uint32_t n = 0;
	for (int i = TOKEN_LEN - RL_TOKEN_N_LEN; i < TOKEN_LEN; i++) {
		char ch = tok[i];
		int d = ch >= '0' && ch <= '9'   ? ch - '0'
		        : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
		                                 : -1;
		if (d < 0)
			return UINT32_MAX;
		n = n << 4 | (uint32_t)d;
	}
	return n;
}
/* "P gen INSTANCE", this process's connection-epoch key (master_epoch),
 * for master_opts.gen_key; valid after redlock_init. */
const char *rl_epoch_key(void);
/* "P name INSTANCE", where this lockd's name is kept on each master for
 * WHO on every lockd (1.4), for master_opts.name_key; after redlock_init. */
const char *rl_lockd_name_key(void);
/* This lockd process's instance (INSTANCE_LEN hex, the start of each of
 * its tokens), for master_opts.instance; valid after redlock_init. */
const char *rl_instance_id(void);

/* Acquire a hold of key (a lock: permit `permit`, 0 for the key's lock;
 * or a shared hold) with token for lease_ms. With old_token, swap our own
 * lock to the new token in the same round (a handoff): each master that
 * answers has then dropped old_token, which release_done learns. done
 * runs once with the grant; release_done (if set) once with the release
 * verdict: RL_OK when a majority answered, RL_QUORUM when it cannot.
 * will_wait: if the key is busy, ask its holder's release to be announced
 * (the masters then publish it; otherwise releases stay silent). */
/* rec: the hold's session record, written with the grant (NULL: none).
 * delay_ms (1.4): the hold's lock-delay, written on the masters with the
 * lease (the key lives lease + delay ms there, its value says the delay);
 * the grant's validity is still the lease's. A shared hold has none. */
struct rl_call *rl_acquire(const char *key, size_t klen, enum rl_hold hold, uint32_t permit,
                           const char *token, int64_t lease_ms, uint32_t delay_ms,
                           const char *old_token, enum rl_wait will_wait, const struct rl_rec *rec,
                           rl_done_fn *done, rl_done_fn *release_done, void *owner);
const struct rl_grant *rl_grant_of(const struct rl_call *c);
/* Release what an acquire granted (from its done callback, the grant
 * unused: its waiter left), with the record field it wrote. */
void rl_undo(const struct rl_call *c);

/* Compare-and-delete on every master. done (if set) runs once: RL_OK once
 * a majority of counting masters answered, RL_QUORUM once they cannot.
 * wait_flag_ms > 0: waiters of ours will ask again, so raise the waiting
 * flag for that long (a holder elsewhere then limits its handoffs). */
struct rl_call *rl_release(const char *key, size_t klen, enum rl_hold hold, uint32_t permit,
                           const char *token, const struct rl_rec *rec, int64_t wait_flag_ms,
                           rl_done_fn *done, void *owner);
enum rl_result rl_result_of(const struct rl_call *c);

/* Renew (and write back where missing) items for lease_ms, one script
 * per master for all of them (EXTEND is a renewal of one item). done runs
 * once after every master answered or failed, or the call expired;
 * items[i].ok and .validity_us then hold the verdict. The call owns items
 * (malloc'ed by the caller) and frees them after done. */
struct rl_call *rl_renew(struct rl_renew_item *items, int n, int64_t lease_ms, rl_done_fn *done,
                         void *owner);
struct rl_renew_item *rl_renew_items(const struct rl_call *c, int *n);
int64_t rl_start_us(const struct rl_call *c);
/* The lease a renewal wrote (what its verdict must count, whatever the
 * configuration says now). */
int64_t rl_lease_of(const struct rl_call *c);

/* One hold of a batch release. */
struct rl_release_item {
	const char *key; /* without prefix */
	size_t klen;
	enum rl_hold hold;
	uint32_t permit;
	const char *token;
	const char *sid; /* a resumable session's hold: dropped from its record */
	char rkind;      /* with sid: the record's kind of the hold (struct rl_rec) */
};

/* Compare-and-delete many keys, one script per master (a session's end:
 * nobody waits for the verdict). Keys and tokens are copied. done (if
 * set) runs once every master answered or the call expired. */
struct rl_call *rl_release_many(const struct rl_release_item *items, int n, rl_done_fn *done,
                                void *owner);

/* What holds key on every master: its lock, its shared holders, and with
 * permits > 1 its permits 1 .. permits-1 too; done after all answered. */
struct rl_call *rl_status(const char *key, size_t klen, uint32_t permits, rl_done_fn *done,
                          void *owner);
/* A status verdict: what a majority of the counting masters see. */
struct rl_status {
	int ok;                /* a majority answered: the rest means something */
	int held;              /* the key's lock is held (on a majority) */
	int64_t ttl_ms;        /* held: its lease left there */
	int holders;           /* shared holders that a majority holds at least */
	int64_t shared_ttl_ms; /* holders: the longest shared lease left */
	uint32_t npermits;     /* the permits asked (rl_status) */
	uint32_t permits;      /* of permits 0 .. npermits-1, how many are held */
};
const struct rl_status *rl_status_of(const struct rl_call *c);
/* The key a call is about (without prefix; not for renewals). */
const char *rl_key_of(const struct rl_call *c, size_t *klen);

/* --- sessions that outlive a connection (1.2; rlsess.c) ---
 * A resumable session has a record on every master (scripts.c): the
 * instance that owns it, its secret's hash, its grace, one field per
 * hold. Its holds' grants, renewals and releases name it (rl_rec, sid),
 * so a lockd whose session was adopted elsewhere finds nothing of its
 * own on a majority. */
struct rl_sess_hold {
	const char *key;
	size_t klen;
	char kind; /* 'x', 'p' or 's' (struct rl_rec) */
	uint32_t permit;
	const char *token;
	uint64_t fence;
	uint32_t holds;
	int ttl;
};
/* Write the record where it is ours, or missing and secret is given:
 * secret (NULL: keep), grace (< 0: keep), the holds given, expiry
 * expire_ms (0: keep). rl_result_of: RL_OK once a majority of the
 * counting masters wrote it. */
struct rl_call *rl_sess_put(const char *sid, const char *secret, int64_t grace_ms,
                            int64_t expire_ms, const struct rl_sess_hold *holds, int n,
                            rl_done_fn *done, void *owner);
/* rl_sess_put of a record some master lost (the touch found it missing),
 * with this lockd's adoption count (> 0; else none: rl_sess_put), raised to it where
 * lower, never lowered: a record written back carries its owner's count,
 * so that a copy of the session left on another lockd, whose count is
 * smaller, never outranks it (doc/design.md, interleaving 16). */
struct rl_call *rl_sess_refill(const char *sid, const char *secret, int64_t grace_ms,
                               int64_t expire_ms, const struct rl_sess_hold *holds, int n,
                               long long count, rl_done_fn *done, void *owner);
/* What a cluster entry's grant of a resumable session's hold writes
 * beside it, in the lock's slot and in the session's home slot
 * (doc/cluster.md, "Sessions on a cluster entry"): the session's record
 * there as SESS_PUT writes one. */
struct rl_sess_info {
	const char *digest; /* the secret as the masters see it */
	int64_t grace_ms;
	int64_t expire_ms; /* the record's expiry */
	long long count;   /* this lockd's adoption count (0: none) */
};
/* Fills *out for session sid, or -1 (not a resumable session here). */
typedef int rl_sess_info_fn(const char *sid, struct rl_sess_info *out);
void rl_set_sess_info(rl_sess_info_fn *fn);

/* End the session where its record is ours: the record becomes a
 * tombstone (it names no instance) for keep_ms plus its grace, so that a
 * lockd that still has the session (it was here before it moved) learns
 * at its touch that it moved on, rather than finding the record missing,
 * which only a master that lost its data shows (done: once all answered). */
struct rl_call *rl_sess_end(const char *sid, int64_t keep_ms, rl_done_fn *done, void *owner);
struct rl_sess_item {
	const char *sid;   /* copied */
	int64_t expire_ms; /* the record's expiry, where it is ours */
	/* 1: the session's record of slot `slot` on a cluster entry, kept
	 * beside its home record (doc/cluster.md, "Sessions on a cluster
	 * entry"); the verdict is the home record's item only */
	int of_slot;
	unsigned slot;
	int moved;      /* a majority of the counting masters name another owner */
	int missing;    /* some master lacks the record */
	int yes, other; /* counting masters: ours, another's */
	/* the largest adoption count of the records of counting masters that
	 * name another lockd (LLONG_MAX: a tombstone); -1 when none. Our own
	 * side is the count our adoption wrote (struct rl_adoption), not
	 * what our records read: a late master's may be higher. */
	long long other_a;
	char id[24];
};
/* Refresh many records' expiry; the call owns items (malloc'ed). */
struct rl_call *rl_sess_touch(struct rl_sess_item *items, int n, rl_done_fn *done, void *owner);
struct rl_sess_item *rl_sess_items(const struct rl_call *c, int *n);
/* One hold of an adopted record. */
#define RL_ADOPT_SEEN 15 /* CONFIG_MAX_MASTERS: one fence per master at most */
struct rl_adopted {
	char *key;
	size_t klen;
	char kind;
	uint32_t permit;
	char token[TOKEN_LEN + 1]; /* this instance's now */
	uint64_t fence;            /* the fence a majority of the records hold (0: none does) */
	uint32_t holds;
	int ttl;
	/* fence 0: the fences the records hold (the masters disagree and too
	   few answered to tell which was granted: LOST for each) */
	uint64_t seen[RL_ADOPT_SEEN];
	int nseen;
	int yes;             /* counting masters that hold it for this instance now */
	int ok;              /* on a majority, within its validity */
	int64_t lease_ms;    /* the shortest lease left where it is held */
	uint32_t delay_ms;   /* its lock-delay (1.4), as the masters that hold it keep it */
	int64_t start_us;    /* when the adoption was sent */
	int64_t validity_us; /* ok: until when it is ours */
};
struct rl_adoption {
	enum rl_result result; /* RL_OK: found on a majority, ours now; RL_BUSY: no such
	                          session (or another secret); RL_QUORUM */
	int64_t grace_ms;
	struct rl_adopted *holds;
	int n;
	long long count; /* the adoption count written on every master: one above
	                    every count a majority's first rounds read (this lockd's
	                    rank as the session's owner) */
	int raced;       /* masters where another adoption came between our rounds */
	int incomplete;  /* masters whose holds were not all taken over (a round failed) */
};
/* RESUME: take the session's record over (it names this instance from
 * now on) with every hold still held for it, each given a token of this
 * instance and a lease of lease_ms (a TTL hold keeps its expiry). The
 * verdict waits for every counting master (or the timeout). */
struct rl_call *rl_sess_adopt(const char *sid, const char *secret, int64_t lease_ms,
                              rl_done_fn *done, void *owner);
const struct rl_adoption *rl_adoption_of(const struct rl_call *c);
/* An adoption is on its way to a master: until it is done, this lockd
 * asks for no key. Its tokens become this instance's, which an acquire of
 * ours would take for stale leftovers of its own and overwrite (the
 * scripts' rule: lockd never asks for what its sessions hold), before
 * locktab knows that a session here holds them. */
int rl_adopting(void);

/* --- leader election (1.3; rlelect.c) ---
 * A leader's value is kept beside the lock of its name (scripts.c, "P
 * NAME leader"), written only where that lock holds the leader's token. */
/* Write (epoch, version) of a leader's value where the lock of key holds
 * token (a write-back: also where it is missing). done runs once;
 * rl_result_of: RL_OK once a majority of the counting masters hold that
 * version; rl_el_superseded: some master holds the lock for token but a
 * later epoch is reserved there. */
struct rl_call *rl_el_put(const char *key, size_t klen, const char *token, uint64_t fence,
                          uint64_t epoch, uint64_t version, const char *value, size_t vlen,
                          int64_t expire_ms, rl_done_fn *done, void *owner);
int rl_el_superseded(const struct rl_call *c);
/* Reserve epoch for the values of the leader whose lock of key holds
 * token (an adopted one), where no epoch as high is reserved. done runs
 * once; rl_result_of: RL_OK once a majority of the counting masters
 * reserved it; else rl_el_reserved: the highest epoch a master had
 * reserved already (0: none refused it so). */
struct rl_call *rl_el_epoch(const char *key, size_t klen, const char *token, uint64_t epoch,
                            rl_done_fn *done, void *owner);
uint64_t rl_el_reserved(const struct rl_call *c);
/* Release a leader's lock and its value where the lock holds token, and
 * announce both (RESIGN, UNLOCK, the leader's end, LOST). rec: its
 * session's record (1.2), or NULL. done (if set) runs once; rl_result_of:
 * RL_OK once a majority of the counting masters answered. */
struct rl_call *rl_el_resign(const char *key, size_t klen, const char *token,
                             const struct rl_rec *rec, rl_done_fn *done, void *owner);
/* Who leads key: read every master (values of up to vmax bytes). done
 * runs once every master answered or the call expired. */
struct rl_call *rl_el_read(const char *key, size_t klen, size_t vmax, rl_done_fn *done,
                           void *owner);
enum rl_lead {
	RLE_NONE,   /* the lock of the name is free */
	RLE_PLAIN,  /* held without a value (a plain LOCK, or a leader not yet published) */
	RLE_LEADER, /* held by a leader with a value */
};
/* What a majority of the counting masters say of an election. */
struct rl_leader {
	int ok;     /* a majority of the counting masters answered, and they can tell */
	int unsure; /* !ok only: a majority answered, but a hold on fewer than a
	               majority of those may be a leader's or a leftover's */
	enum rl_lead kind;
	uint64_t fence;    /* RLE_LEADER: the leader's; RLE_PLAIN: the key's latest */
	uint64_t epoch;    /* RLE_LEADER: of its value's writer (values order by epoch, version) */
	uint64_t version;  /* RLE_LEADER: of its value */
	const char *value; /* RLE_LEADER: valid until done returns */
	size_t vlen;
	uint64_t reserved; /* the highest epoch reserved in any record read (for an adoption) */
};
const struct rl_leader *rl_leader_of(const struct rl_call *c);

/* --- WHO (1.4; rlwho.c) --- */
/* One hold of a key that a majority of the counting masters hold. */
struct rl_who_hold {
	char token[TOKEN_LEN + 1];
	char place;       /* 'x' the key's lock, 'p' permit `permit` (>= 1), 's' shared */
	uint32_t permit;  /* 'p' */
	const char *name; /* its lockd's name, as the masters keep it under the
	                     token's instance; NULL: none does, or the token is
	                     this lockd's (rl_token_ours: the caller knows its name) */
};
struct rl_who {
	int ok;             /* a majority of the counting masters answered */
	uint64_t fence;     /* the key's latest fence: the highest counter they hold */
	int64_t delayed_ms; /* > 0: the key's lock is in its lock-delay (1.4) on a
	                       majority, for at least this long there */
	/* in order: the key's lock, the permits by number, the shared holders
	 * by token; valid until done returns */
	struct rl_who_hold *holds;
	int n;
};
/* Who holds key: every master is read (reads only: its lock, shared
 * holders, fence counter, and permits 1 .. permits-1), then the names of
 * the other lockd that hold it (a second read, where an instance is
 * named: "P name INSTANCE", master.c). done runs once. */
struct rl_call *rl_who(const char *key, size_t klen, uint32_t permits, rl_done_fn *done,
                       void *owner);
const struct rl_who *rl_who_of(const struct rl_call *c);
/* A token of this lockd process (its instance). */
int rl_token_ours(const char *token);

/* The owner goes away: its callbacks will not run; the call finishes
 * (and undoes a failed acquire) on its own. */
void rl_detach(struct rl_call *c, void *owner);
/* Calls not finished yet (shutdown waits for the releases). */
int rl_inflight(void);

#endif
