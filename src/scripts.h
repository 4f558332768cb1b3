/* scripts: the Lua scripts lockd runs on every master, and their SHA1s. */
#ifndef LOCKD_SCRIPTS_H
#define LOCKD_SCRIPTS_H

#include <stddef.h>

enum script_id {
	SCR_ACQUIRE,         /* take a lock, a permit or a shared hold; bump the fence */
	SCR_RELEASE,         /* compare-and-delete, then announce the release */
	SCR_RENEW,           /* extend each key we hold, write back each we lost */
	SCR_RAISE,           /* raise a fence counter to at least a value */
	SCR_RAISE_MANY,      /* the same for many counters (catching up a master) */
	SCR_RELEASE_MANY,    /* SCR_RELEASE for many keys (a session's end) */
	SCR_STATUS,          /* what holds a key (and its permits) on one master */
	SCR_ACQUIRE_N,       /* SCR_ACQUIRE for each of n calls (one loop turn's) */
	SCR_RELEASE_N,       /* SCR_RELEASE for each of n calls */
	SCR_SESS_PUT,        /* write a session's record where it is ours (1.2) */
	SCR_SESS_TOUCH,      /* refresh records' expiry; who owns each */
	SCR_SESS_END,        /* delete a session's record where it is ours */
	SCR_SESS_ADOPT,      /* take a session's record and holds over (RESUME) */
	SCR_EL_PUT,          /* write a leader's value where its lock holds its token (1.3) */
	SCR_EL_READ,         /* who leads an election on one master, with what value */
	SCR_EL_RESIGN,       /* release a leader's lock and value, announce both */
	SCR_GEN,             /* raise this lockd's connection epoch on a master */
	SCR_SESS_PEEK,       /* a session record's adoption count, before SCR_SESS_ADOPT */
	SCR_SESS_ADOPT_MORE, /* the holds SCR_SESS_ADOPT left, ADOPT_CHUNK at a time */
	SCR_EL_EPOCH,        /* reserve an adopting lockd's version epoch of a leader (1.3) */
	SCR_WHO,             /* every hold of a key on one master, read only (1.4) */
	SCR_SESS_INDEX,      /* add a slot to a session's index, where it is ours (cluster) */
	SCR_COUNT
};

/* Where a call's arguments go: EVALSHA sha numkeys KEYS... ARGV... The
 * scripts (scripts.c) read KEYS[i] at position SA_NKEYS + i and ARGV[j]
 * at SA_NKEYS + numkeys + j; the positions below say which is which. */
enum script_arg {
	SA_CMD,   /* EVALSHA (EVAL after NOSCRIPT): master.c puts it */
	SA_SHA,   /* the SHA (the body after NOSCRIPT): master.c puts it */
	SA_NKEYS, /* numkeys */
	SA_KEYS,  /* KEYS[1] */
};

/* The batchable scripts (SCR_ACQUIRE, SCR_RELEASE) take a few keys and
 * arguments that are the same for every call this lockd makes on one
 * connection, the shared ones, first: ahead of its own keys, and ahead of
 * its own arguments. Their batch forms (SCR_ACQUIRE_N, SCR_RELEASE_N)
 * take the shared ones once, then each call's own in turn (master.c joins
 * only calls whose shared ones are equal): every string a master parses
 * costs it CPU, and most of a call's were the same in every call. The
 * keys beside a lock ("P K fence", "P K waiting", ...) are named by the
 * scripts from the key's own ("P K"), for the same reason. */
struct script_shared {
	int keys; /* shared keys: KEYS[1 .. keys] */
	int args; /* shared arguments: ARGV[1 .. args] */
};

/* SCR_ACQUIRE (ACQUIRE_LUA reads KEYS[kb + i] and ARGV[ab + j]). */
enum acq_arg {
	AA_NKEYS = SA_NKEYS, /* "3" */
	AA_GEN,              /* KEYS[1] shared: this lockd's connection epoch (SCR_GEN) */
	AA_KEY,              /* KEYS[2] the key's own name "P K": the scripts name the rest */
	AA_SESSION,          /* KEYS[3] the session's record (1.2), or "" */
	AA_INSTANCE,         /* ARGV[1] shared: this lockd's instance */
	AA_IDLE,             /* ARGV[2] shared: fence idle ms */
	AA_EPOCH,            /* ARGV[3] shared: lockd's epoch when written (master_epoch) */
	AA_TOKEN,            /* ARGV[4] the token */
	AA_LEASE,            /* ARGV[5] lease ms */
	AA_OLD,              /* ARGV[6] the old token (a handoff), or "" */
	AA_WAIT,             /* ARGV[7] "0", "1" the caller waits, "2" and raised the flag */
	AA_KIND,             /* ARGV[8] "x", "p" or "s" */
	AA_PERMIT, /* ARGV[9] kind "p": the permit I >= 1 (its lock "P K permit I"); else "" */
	AA_RECORD, /* ARGV[10] "" or the TTL flag and the hold's record field ("0x0 k") */
	AA_DELAY,  /* ARGV[11] the hold's lock-delay ms (1.4), "0" for none */
	AA_ARGC
};
#define AA_SHARED_KEYS 1 /* AA_GEN */
#define AA_SHARED_ARGS 3 /* AA_INSTANCE .. AA_EPOCH */

/* SCR_RELEASE (RELEASE_LUA reads KEYS[kb + i] and ARGV[ab + j]). */
enum rel_arg {
	RA_NKEYS = SA_NKEYS, /* "2" */
	RA_KEY,              /* KEYS[1] the key's own name "P K": the scripts name the rest */
	RA_SESSION,          /* KEYS[2] the session's record (1.2), or "" */
	RA_INSTANCE,         /* ARGV[1] shared: this lockd's instance */
	RA_CHANNEL,          /* ARGV[2] shared: the channel releases are announced on */
	RA_RESERVE_MS,       /* ARGV[3] shared: how long a release is kept for a waiter elsewhere */
	RA_PREFIX_LEN,       /* ARGV[4] shared: the length of P, the key prefix (what is announced
	                        is the key without it) */
	RA_TOKEN,            /* ARGV[5] the token */
	RA_FLAG_MS,          /* ARGV[6] > 0: raise the waiting flag for this long */
	RA_KIND,             /* ARGV[7] "x", "p" or "s" */
	RA_PERMIT,           /* ARGV[8] kind "p": the permit I >= 1; else "" */
	RA_RECORD,           /* ARGV[9] "" or the hold's record field */
	RA_ARGC
};
#define RA_SHARED_KEYS 0
#define RA_SHARED_ARGS 4 /* RA_INSTANCE .. RA_PREFIX_LEN */

/* SCR_RAISE: the fence write-back of an acquire. */
enum raise_arg {
	WA_NKEYS = SA_NKEYS, /* "2" */
	WA_FENCE,            /* KEYS[1] the fence counter */
	WA_SESSION,          /* KEYS[2] the session's record (1.2), or "" */
	WA_VALUE,            /* ARGV[1] the value to raise it to (the fence granted) */
	WA_IDLE,             /* ARGV[2] fence idle ms */
	WA_FIELD,            /* ARGV[3] the hold's field in the record, or "" */
	WA_TOKEN,            /* ARGV[4] the hold's token */
	WA_ARGC
};

/* The expiry of a connection epoch's key (ms): SCR_GEN's on a standalone
 * master, and a cluster entry's per slot, raised by use (scripts.c). */
#define SCR_GEN_EXPIRE_MS "3600000"

/* SCR_GEN: a master's connection epoch (see master_epoch), raised only. */
enum gen_arg {
	GA_NKEYS = SA_NKEYS, /* "1" */
	GA_KEY,              /* KEYS[1] "P gen INSTANCE" */
	GA_EPOCH,            /* ARGV[1] the epoch of this connection */
	GA_EXPIRE,           /* ARGV[2] the key's expiry ms */
	GA_ARGC
};

/* Holds one adoption script takes over at most: 256 cost a master about
 * 4 ms, well within redis.timeout_ms, whatever the session's size (up to
 * limits.max_locks_per_session). */
#define ADOPT_CHUNK   256
#define SCR_STR_(x)   #x
#define SCR_STR(x)    SCR_STR_(x) /* a number's digits, for a script's text */
#define ADOPT_CHUNK_S SCR_STR(ADOPT_CHUNK)
/* Fields one HSCAN of a large record asks for: its holds then go in a
 * wave of ADOPT_CHUNK-hold scripts sent at once. */
#define ADOPT_SCAN   1024
#define ADOPT_SCAN_S SCR_STR(ADOPT_SCAN)
/* SCR_SESS_ADOPT (1.2): KEYS[1] the record; then these. */
enum adopt_arg {
	SDA_SECRET = SA_KEYS + 1, /* ARGV[1] the secret */
	SDA_INSTANCE,             /* ARGV[2] this lockd's instance */
	SDA_LEASE,                /* ARGV[3] lease ms */
	SDA_PREFIX,               /* ARGV[4] the key prefix */
	SDA_COUNT,                /* ARGV[5] the adoption count SCR_SESS_PEEK read there, or
	                             "": a slot's record on a cluster entry (doc/cluster.md,
	                             "Sessions on a cluster entry") */
	SDA_NEXT,                 /* ARGV[6] the new count: above every count read */
	SDA_ARGC,
	SDA_GRACE = SDA_ARGC, /* ARGV[7] a slot's record only: the grace of one it creates */
	SDA_SLOT_ARGC
};

/* SCR_EL_PUT (1.3): a leader's value, "P NAME leader" beside its lock. */
enum elput_arg {
	EPA_NKEYS = SA_NKEYS, /* "2" */
	EPA_LOCK,             /* KEYS[1] the lock of the name */
	EPA_RECORD,           /* KEYS[2] the leader's record */
	EPA_TOKEN,            /* ARGV[1] the leader's token */
	EPA_FENCE,            /* ARGV[2] its fence */
	EPA_VERSION,          /* ARGV[3] the value's version */
	EPA_VALUE,            /* ARGV[4] the value */
	EPA_EXPIRE,           /* ARGV[5] the record's expiry ms */
	EPA_CHANNEL,          /* ARGV[6] the channel changes are announced on */
	EPA_NAME,             /* ARGV[7] the name, as announced */
	EPA_EPOCH,            /* ARGV[8] the epoch of the value (its writer's, SCR_EL_EPOCH) */
	EPA_ARGC
};

/* SCR_EL_EPOCH (1.3): an adopted leader's epoch, reserved in its record. */
enum elepoch_arg {
	EEA_NKEYS = SA_NKEYS, /* "2" */
	EEA_LOCK,             /* KEYS[1] the lock of the name */
	EEA_RECORD,           /* KEYS[2] the leader's record */
	EEA_TOKEN,            /* ARGV[1] the leader's token (this lockd's) */
	EEA_EPOCH,            /* ARGV[2] the epoch to reserve */
	EEA_ARGC
};

/* SCR_EL_READ (1.3). */
enum elread_arg {
	ERA_NKEYS = SA_NKEYS, /* "4" */
	ERA_LOCK,             /* KEYS[1] the lock of the name */
	ERA_RECORD,           /* KEYS[2] the leader's record */
	ERA_FENCE,            /* KEYS[3] the fence counter */
	ERA_SHARED,           /* KEYS[4] the shared set */
	ERA_ARGC
};

/* SCR_EL_RESIGN (1.3): RELEASE_LUA for a leader, with its record. */
enum elres_arg {
	ESA_NKEYS = SA_NKEYS, /* "5" */
	ESA_LOCK,             /* KEYS[1] the lock of the name */
	ESA_WAITING,          /* KEYS[2] the waiting flag */
	ESA_RESERVED,         /* KEYS[3] the reservation */
	ESA_RECORD,           /* KEYS[4] the leader's record */
	ESA_SESSION,          /* KEYS[5] the session's record (1.2), or "" */
	ESA_TOKEN,            /* ARGV[1] the leader's token */
	ESA_CHANNEL,          /* ARGV[2] the channel releases are announced on */
	ESA_KEY,              /* ARGV[3] the name, as announced */
	ESA_INSTANCE,         /* ARGV[4] this lockd's instance */
	ESA_RESERVE_MS,       /* ARGV[5] how long a release is reserved for a waiter elsewhere */
	ESA_ELECTED,          /* ARGV[6] the channel election changes are announced on */
	ESA_FIELD,            /* ARGV[7] "" or the hold's field in the session's record */
	ESA_ARGC
};

/* SCR_WHO (1.4): read only. */
enum who_arg {
	WHA_NKEYS = SA_NKEYS, /* "3" */
	WHA_LOCK,             /* KEYS[1] the key's lock (permit i: KEYS[1] .. " permit " .. i) */
	WHA_SHARED,           /* KEYS[2] its shared set */
	WHA_FENCE,            /* KEYS[3] its fence counter */
	WHA_FROM,             /* ARGV[1] the first permit read (>= 1) */
	WHA_TO,               /* ARGV[2] and the one after the last */
	WHA_ARGC
};
/* Permits one SCR_WHO reads at most: under a ms of a master's time
 * (limits.max_permits 65536 takes 64 calls, one after the other: sent at
 * once, a master would run them all before it answers any). */
#define WHO_CHUNK 1024

/* The scripts over n items take each kind of argument for every item in
 * turn (all the locks, then all the shared sets, ...), after a few fixed
 * ones; these are the counts, the order is in scripts.c. */
enum batch_arg {
	/* SCR_RENEW: KEYS[i] lock, KEYS[n + i] shared set, KEYS[2n + i]
	 * session record, KEYS[3n + 1] the connection epoch's key; ARGV[1]
	 * lease ms, ARGV[2] the epoch, ARGV[2 + i] token, ARGV[2 + n + i]
	 * kind */
	RNA_KEYS = 3,  /* keys per item */
	RNA_FIXED = 3, /* keys and arguments that do not repeat */
	RNA_ARGV = 2,  /* arguments per item */
	/* SCR_RELEASE_MANY: KEYS[i] lock, KEYS[n + i] waiting flag,
	 * KEYS[2n + i] reservation, KEYS[3n + i] shared set, KEYS[4n + i]
	 * session record; ARGV[1] channel, ARGV[2] instance, ARGV[3] reserve
	 * ms, ARGV[3 + i] token, ARGV[3 + n + i] key, ARGV[3 + 2n + i] kind,
	 * ARGV[3 + 3n + i] record field */
	RMA_KEYS = 5,
	RMA_FIXED = 3,
	RMA_ARGV = 4,
	/* SCR_STATUS: KEYS[1] the key's lock, KEYS[2] its shared set,
	 * KEYS[2 + i] permit i (1 .. permits-1); no ARGV */
	STA_KEYS = 2, /* keys before the permits' */
};
/* SCR_STATUS lists a master's live shared holders when there are at most
 * this many (counted one by one across masters: quorum_common), else
 * only counts them. */
#define STA_MEMBERS_MAX   128
#define STA_MEMBERS_MAX_S SCR_STR(STA_MEMBERS_MAX)
/* The argc of a script call over n items with nk keys and na arguments
 * each, and fixed keys and arguments that do not repeat. */
#define SCRIPT_ARGC(n, nk, fixed, na) (SA_KEYS + (nk) * (n) + (fixed) + (na) * (n))

/* The batch form of a script (SCR_ACQUIRE_N of SCR_ACQUIRE), or -1. Each
 * call's KEYS then follow the shared ones (struct script_shared) once,
 * one call's after another, and then each call's ARGV likewise; the
 * reply is the array of the calls' replies. */
int script_batch_of(enum script_id id);
/* The shared keys and arguments of a batchable script (both 0 for any
 * other). */
struct script_shared script_shared_of(enum script_id id);
/* 1 when a script writes what must be on a master's replicas before it
 * counts (a grant, a renewal, a write-back, a session record, an election
 * value or epoch): redis.wait_replicas WAITs for it. 0 for read-only
 * scripts, releases (a release lost in a failover leaves a lease that
 * runs out: safe) and SCR_GEN (raised again at every handshake). */
int script_writes(enum script_id id);

const char *script_body(enum script_id id);
/* The SHA1 as the masters report it, or NULL until one has loaded it. */
const char *script_sha(enum script_id id);
void script_set_sha(enum script_id id, const char *sha, size_t len);

#endif
