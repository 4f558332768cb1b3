/* redlock_int: what the files of redlock share (redlock.c: a call's life,
 * acquire and release; rlbatch.c: renewals, batched releases, status;
 * rlsess.c: session records). Private to them: the rest of lockd sees
 * redlock.h. redlock.c calls neither of the others: a call's verdict of
 * theirs is decided by the check function they set (rl_call.check_fn). */
#ifndef LOCKD_REDLOCK_INT_H
#define LOCKD_REDLOCK_INT_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "cfg.h"
#include "master.h"
#include "redlock.h"
#include "scripts.h"
#include "ilist.h"

enum rl_kind {
	RK_ACQUIRE,      /* SCR_ACQUIRE, then SCR_RAISE where fences disagree */
	RK_RELEASE,      /* SCR_RELEASE */
	RK_RENEW,        /* SCR_RENEW over a batch */
	RK_RELEASE_MANY, /* SCR_RELEASE_MANY over a batch, nobody waits for it */
	RK_STATUS,       /* SCR_STATUS */
	RK_SESS,         /* SCR_SESS_PUT or SCR_SESS_END: one session record (rlsess.c) */
	RK_TOUCH,        /* SCR_SESS_TOUCH over many records (rlsess.c) */
	RK_ADOPT,        /* SCR_SESS_ADOPT: RESUME's (rlsess.c) */
	RK_EL_WRITE,     /* SCR_EL_PUT, SCR_EL_RESIGN or SCR_EL_EPOCH: one election (rlelect.c) */
	RK_EL_READ,      /* SCR_EL_READ: who leads (rlelect.c) */
	RK_WHO,          /* SCR_WHO, then the holders' names: who holds a key (rlwho.c) */
};

enum mr {
	MR_NONE, /* not asked (down) */
	MR_WAIT, /* asked, no answer yet */
	MR_YES,  /* acquire: set; others: answered */
	MR_BUSY, /* acquire: another token holds it */
	MR_FAIL, /* error reply, timeout or connection lost */
};

/* Argument positions of each call: scripts.h, beside the Lua. */
#define FIXED_ARGC AA_ARGC /* the longest call of a fixed shape */
/* Room for the longest suffix of a key beside a lock (" permit 4294967295"). */
#define SFX_MAX 20

/* Where an acquire is (RK_ACQUIRE). */
enum acq_phase {
	AP_SET,       /* SCR_ACQUIRE sent: st[] counts the grants */
	AP_WRITEBACK, /* won, but too few granting masters hold the fence:
	                 SCR_RAISE sent, raise_st[] counts who holds it now */
};

/* RK_ACQUIRE: the set round, then the fence write-back round. */
/* A resumable session's grant on a cluster entry (doc/cluster.md,
 * "Sessions on a cluster entry"): SCR_SESS_PUT of the session's record in
 * the lock's slot, sent ahead of the ACQUIRE on the same node, and
 * SCR_SESS_INDEX of that slot in its home record; the entry's grant
 * counts only once both said 1. Allocated only for such a grant. */
struct acq_x {
	const char *pv[SA_KEYS + 1 + 6], *iv[SA_KEYS + 1 + 2];
	size_t pl[SA_KEYS + 1 + 6], il[SA_KEYS + 1 + 2];
	char rec[200], digest[48], grace[24], expire[24], count[24], slot[8];
	unsigned lock_slot, home_slot;
	unsigned char sent[CONFIG_MAX_MASTERS];    /* both were sent there */
	unsigned char out[CONFIG_MAX_MASTERS];     /* their replies still to come */
	unsigned char fail[CONFIG_MAX_MASTERS];    /* one did not say 1 */
	unsigned char granted[CONFIG_MAX_MASTERS]; /* the ACQUIRE granted there */
	unsigned char put_out[CONFIG_MAX_MASTERS]; /* its SCR_SESS_PUT not answered yet */
	/* the ACQUIRE found no record of ours (-3) while the SESS_PUT ahead of
	 * it had not answered: it ran first (a retry of one of them, a
	 * reconnect), and goes again once the SESS_PUT says 1; once only */
	unsigned char again[CONFIG_MAX_MASTERS], retried[CONFIG_MAX_MASTERS];
};

struct acq_part {
	enum acq_phase phase;
	struct acq_x *x; /* a session's grant on a cluster entry; NULL otherwise */
	int64_t fence_of[CONFIG_MAX_MASTERS];       /* counter each granting master returned */
	unsigned char raise_st[CONFIG_MAX_MASTERS]; /* write-back answers (enum mr) */
	struct rl_grant grant;
	const char *wargv[WA_ARGC];
	size_t wargvlen[WA_ARGC];
	char fencebuf[24];
};

/* RK_STATUS: SCR_STATUS on every master. */
struct status_part {
	struct rl_status v;
	int64_t pttl[CONFIG_MAX_MASTERS];  /* the key's lock */
	int64_t zcard[CONFIG_MAX_MASTERS]; /* live shared holders */
	int64_t zttl[CONFIG_MAX_MASTERS];  /* the longest shared lease left, or -2 */
	int *permit_yes; /* per permit 1 .. npermits-1: counting masters that hold it */
	char **members;  /* the counting masters' shared holders, one list after another */
	int nmembers;    /* of them, or -1: a master had more than it lists (SCR_STATUS) */
};

/* RK_RENEW and RK_RELEASE_MANY: one script over many keys. */
struct batch_part {
	struct rl_renew_item *items; /* RK_RENEW; owned, freed with the call */
	int nitems;
};

/* RK_ADOPT: what one counting master's record says of one hold. */
struct rl_seen {
	uint64_t fence; /* 0: no record of the hold there */
	uint32_t holds;
	int ttl;
	char token[TOKEN_LEN + 1];
};

/* RK_TOUCH and RK_ADOPT (rlsess.c). */
struct sess_part {
	struct rl_sess_item *items; /* RK_TOUCH; owned, freed with the call */
	int nitems;
	struct rl_adoption a; /* RK_ADOPT; a.holds owned, freed with the call */
	struct rl_seen *seen; /* RK_ADOPT; per hold, c->n of them: each master's record */
	int cap;              /* room in a.holds and seen */
	int found, none;      /* counting masters that have the record, that do not */
	int peek_out;         /* RK_ADOPT: first rounds not answered yet */
	int npeeked;          /* RK_ADOPT: counting masters whose first round answered */
	long long next;       /* RK_ADOPT: one above every count read, until a.count is set */
	char count_s[24];     /* RK_ADOPT: a.count, as SDA_NEXT sends it */
	struct adopt_m *am;   /* RK_ADOPT; c->n of them: each master's second round */
	struct refill_x *rx;  /* RK_SESS with holds on a cluster entry (rlsess.c) */
};

/* A record written with holds (rl_sess_refill) on a cluster entry: a
 * SCR_SESS_PUT per slot of the holds, the slot's holds in its own record,
 * the home record's with its index of the other slots (written with the
 * record: no SCR_SESS_INDEX that could run before the record exists);
 * the entry wrote it once every one said 1. */
struct refill_part {
	unsigned slot; /* the home slot's part is the first */
	int argc;
	const char **v; /* SESS_PUT's arguments: the record's, the holds of the slot */
	size_t *l;
	char ifield[12]; /* "i SLOT": its field in the home record's index */
};
struct refill_x {
	int nparts;
	struct refill_part *p;
	int out[CONFIG_MAX_MASTERS]; /* parts not answered yet (one per slot: many) */
	unsigned char fail[CONFIG_MAX_MASTERS];
};
/* RK_ADOPT: one master's SCR_SESS_ADOPT, sent once its SCR_SESS_PEEK
 * answered: the call's arguments with that master's adoption count. */
struct adopt_m {
	const char *v[SDA_SLOT_ARGC];
	size_t l[SDA_SLOT_ARGC];
	char count[24];
	/* A cluster entry (doc/cluster.md, "Sessions on a cluster entry"):
	 * the home record's index lists the slots with a record of the
	 * session; each is adopted after the home record, one at a time
	 * (SCR_SESS_ADOPT's slot form), the rounds below then about it. */
	unsigned *slots; /* the listed slots but the home record's own */
	int nslots;
	int rec;          /* the record the rounds are about: 0 home, k slots[k - 1] */
	char tagged[200]; /* its key as the cluster names it (an HSCAN's) */
	char grace[24];   /* the slot form's SDA_GRACE */
	/* A record of more than ADOPT_CHUNK holds (SCR_SESS_ADOPT answered
	 * 2): its holds are taken over in rounds, one after the other, each a
	 * bounded time on the master: an HSCAN of the record, then
	 * SCR_SESS_ADOPT_MORE of the holds it returned, until the cursor is 0. */
	char acount[24]; /* the adoption count SCR_SESS_ADOPT left */
	char cursor[24]; /* the HSCAN cursor ("0" once the scan is complete) */
	char **pend;     /* field, value strings of the last HSCAN */
	size_t *plen;
	int npend, cap;  /* strings in pend; room */
	const char **mv; /* the arguments of the round (the wave) in flight */
	size_t *ml;
	int rounds;  /* rounds sent after SCR_SESS_ADOPT */
	int wave;    /* SCR_SESS_ADOPT_MORE scripts of the last HSCAN not answered yet */
	int stop;    /* a round found the record taken, or failed: scan no further */
	int counted; /* in sp->found */
	int peeked;  /* its first round answered; its second waits for a majority's */
	int done;    /* master_done ran: its rounds are over */
};

/* RK_EL_READ (rlelect.c): what each master said; RK_EL_WRITE uses
 * reserved and superseded only. */
struct el_part {
	struct rl_leader v;
	unsigned char kind[CONFIG_MAX_MASTERS]; /* enum rl_lead, where answered */
	uint64_t fence[CONFIG_MAX_MASTERS];     /* RLE_LEADER: the record's */
	uint64_t ver[CONFIG_MAX_MASTERS];
	uint64_t epoch[CONFIG_MAX_MASTERS];   /* RLE_LEADER: the record's */
	uint64_t counter[CONFIG_MAX_MASTERS]; /* the fence counter */
	uint64_t reserved;                    /* the highest epoch a record holds reserved */
	int superseded;                       /* a put found a later epoch reserved */
	size_t vlen[CONFIG_MAX_MASTERS];
	char *vals; /* in dbuf: vmax + 1 bytes per master */
	size_t vmax;
};

/* RK_WHO (rlwho.c): a token one master holds for a key. */
struct who_seen {
	char token[TOKEN_LEN + 1];
	unsigned char place; /* 0 the key's lock, 1 a permit, 2 shared: the order of lines */
	unsigned char m;     /* the master's index */
	uint32_t permit;
};
struct who_part {
	struct rl_who v;
	unsigned slot;         /* the key's: a cluster entry's later rounds go there */
	struct who_seen *seen; /* what every master answered (counted: once all of its
	                          calls answered, st[] MR_YES) */
	int nseen, cap;
	uint64_t counter[CONFIG_MAX_MASTERS];   /* each master's fence counter */
	int64_t delay_left[CONFIG_MAX_MASTERS]; /* ms left on the key's lock-delay there, or 0 */
	unsigned short answered[CONFIG_MAX_MASTERS]; /* its SCR_WHO calls answered so far */
	int nchunks;        /* SCR_WHO calls per master (WHO_CHUNK permits each), one at a time */
	const char **cargv; /* their arguments: WHA_ARGC per call */
	size_t *clen;
	char *cbuf;
	int naming;         /* the verdict is in: the names' round (MGET) started */
	int late;           /* it started after the call expired */
	int names_out;      /* MGETs of it not answered yet */
	int ninst;          /* instances to name */
	char *insts;        /* INSTANCE_LEN + 1 bytes each */
	char **names;       /* each one's name, or NULL */
	const char **nargv; /* the MGET's arguments */
	size_t *nlen;
	char *nbuf;
	/* the same MGET as a cluster entry names the keys: each "{T}" and
	 * the key, T the tag of the key's own slot (master.c writes them so) */
	const char **targv;
	size_t *tlen;
	char *tbuf;
	unsigned *tslots;
};

struct rl_call {
	/* the fan-out, common to every kind */
	enum rl_kind kind;
	int n, maj;
	int pending; /* master replies still to come, plus one while deferred */
	unsigned char st[CONFIG_MAX_MASTERS];     /* each master's answer (enum mr) */
	unsigned char counts[CONFIG_MAX_MASTERS]; /* counted when the call started */
	int done_fired;                           /* done has run, or will never run */
	int rel_fired;                            /* release_done has run, or will never run */
	int in_fanout;                            /* verdicts are held back while still sending */
	int expired;           /* timeout_ms of silence: masters still silent count as no */
	int pooled;            /* from call_slab (buf has POOL_EXTRA bytes) */
	struct ilink exp_link; /* on expq until decided or expired */
	struct rl_call *defer_next;
	rl_done_fn *done, *rel_done;
	void (*check_fn)(struct rl_call *c); /* RK_STATUS and later kinds: their verdict */
	void *owner;
	int64_t start_us; /* leases written by this call run from here */
	int64_t wait_us;  /* masters' silence counts from here: start_us, or an
	                     adoption's latest answer (rl_call_progress) */
	int64_t lease_ms;
	int homed;          /* a session record's call: a cluster entry sends it to home_slot */
	int skip_cl;        /* rl_fanout leaves cluster entries alone: sent calls of their own */
	unsigned home_slot; /* the slot of the session's id, its home record's (doc/cluster.md) */
	enum rl_result rel_result; /* a release, or a handoff's release side */
	const char *keyp;          /* the key it is about, without prefix (not for batches) */
	size_t klen;
	enum rl_hold hold; /* acquire, release: what it takes or lets go */
	uint32_t permit;
	int argc;
	const char **argv; /* fargv, or dargv */
	const size_t *argvlen;
	const char **dargv; /* the arguments of a call of variable shape (batches, status) */
	size_t *dargvlen;
	char *dbuf;
	const char *fargv[FIXED_ARGC];
	size_t fargvlen[FIXED_ARGC];
	char leasebuf[24];
	char delaybuf[12]; /* RK_ACQUIRE: the hold's lock-delay ms (AA_DELAY) */
	union {
		struct acq_part acq;
		struct status_part status;
		struct batch_part batch;
		struct sess_part sess;
		struct el_part el;
		struct who_part who;
	} u;
	char buf[]; /* keys and tokens of a fixed-shape call */
};

#define INSTANCE_LEN 16 /* hex characters: a token is instance + 16 random ones */

extern char rl_prefix[80];
extern size_t rl_prefix_len;
extern char rl_channel[128];
extern char rl_gen_key[160];
extern char rl_name_key[160];
extern char rl_elected[128]; /* election changes are announced here (1.3) */
extern double rl_drift;
extern char rl_fence_idle[24];
extern char rl_instance[TOKEN_LEN + 1];
extern char rl_reserve_ms[24];
extern int rl_adopts; /* RK_ADOPT calls not freed yet (rl_adopting) */

/* rlkey.c: the key prefix (set once, redlock_init), and the slots of a
 * call's lock names for a cluster entry (master_call_at): its key's, or
 * each item's (a renewal; releases; a touch's records); 0 (a call a
 * cluster entry refuses) for a call without, or when no master is one.
 * *many: NULL, or a malloc'd array for the items. */
void rl_key_init(const char *prefix);
int rl_call_slots(const struct rl_call *c, unsigned *one, unsigned **many);
struct rl_call *rl_call_new(enum rl_kind kind, size_t extra);
void rl_call_free(struct rl_call *c);
/* A master answered one of c's rounds (an adoption's): the masters'
 * silence counts from now. An adoption goes on while it progresses, so a
 * session of any size within the limits resumes, and no longer than
 * timeout_ms after its last answer, even where a request was never
 * written (a stopped master's full socket). */
void rl_call_progress(struct rl_call *c);
int rl_count_st(const struct rl_call *c, const unsigned char *st, enum mr s);
void rl_fire_done(struct rl_call *c);
void rl_fanout(struct rl_call *c, int script, master_reply_fn *fn);
void rl_check(struct rl_call *c);
size_t rl_key_at(char *p, const char *key, size_t klen, const char *sfx);
const char *rl_lock_sfx(char *buf, size_t len, enum rl_hold hold, uint32_t permit);
const char *rl_kind_arg(enum rl_hold hold, uint32_t permit);
int rl_dyn_args(struct rl_call *c, int argc, size_t bytes);
char *rl_put_copy(struct rl_call *c, int at, char *p, const char *v, size_t n);
/* "prefix session ID" at p; returns its length. */
size_t rl_record_at(char *p, const char *sid);
/* "prefix name INSTANCE" (the instance: the first INSTANCE_LEN bytes of
 * inst, a token's) at p, room len; returns its length. */
size_t rl_name_key_at(char *p, size_t len, const char *inst);
/* A hold's field in its record ("x0 key") at p; returns its length. */
size_t rl_field_at(char *p, char kind, uint32_t permit, const char *key, size_t klen);

#endif
