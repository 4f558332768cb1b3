/* lead: the leaders of this lockd (protocol 1.3), one struct lead per
 * name at most (the lock is exclusive), below elect.c: their table, the
 * reservation of an adopted leader's epoch (1.2), and every lease/3 the
 * write-back of their values. elect.c owns what a leader does (publish,
 * PROCLAIM, RESIGN) and hears of a settled reservation through the
 * lead_settled_fn given to lead_init; lead calls nothing of elect's. */
#ifndef LOCKD_LEAD_H
#define LOCKD_LEAD_H

#include <stddef.h>
#include <stdint.h>

#include "ilist.h"
#include "keytab.h"
#include "locktab.h"
#include "util.h"

struct config;
struct event_base;
struct rl_call;
struct rl_leader;

/* Where a leader of this lockd is. */
enum lead_state {
	LD_PUBLISHING, /* granted; its first value is being written (CAMPAIGN waits) */
	LD_RESERVING,  /* adopted with its session (1.2): the epoch of its values here is
	                  being reserved on the masters, or is to be (a try found no
	                  majority); PROCLAIM waits, nothing is written */
	LD_LEADING,    /* its value (adopted: its epoch) is on a majority: it leads */
};

struct lead {
	struct kt_node node; /* in the table, by name */
	struct ilink link;   /* on the list of the write-back */
	enum lead_state state;
	char token[TOKEN_LEN + 1];
	uint64_t fence;
	uint64_t epoch;   /* of this lockd's values: 0 for a CAMPAIGN here; above every
	                     epoch reserved before for an adopted leader (scripts.c) */
	uint64_t version; /* of value: 1 at the grant, +1 per PROCLAIM */
	char *value;
	size_t vlen;
	int tries;                  /* reservations refused in a row (a higher epoch seen) */
	struct rl_call *call;       /* a put of value in flight, answering reply_to; or
	                               (LD_RESERVING) the reservation of epoch */
	struct lt_client *reply_to; /* CAMPAIGN or PROCLAIM waiting for the put */
	int reply_fence;            /* answer "OK fence" (CAMPAIGN), else "OK" */
	char key[];
};

/* A reservation of key's epoch answered (taken, or given up for now),
 * and c holds key's lock with its leader's token: a request of c's that
 * waits for it can be answered. */
typedef void lead_settled_fn(struct lt_client *c, const char *key, size_t klen);

int lead_init(struct event_base *base, const struct config *cfg, const struct lt_ops *ops,
              lead_settled_fn *settled);
void lead_set_cfg(const struct config *cfg);
/* Every leader forgotten (nothing released), the write-back stopped. */
void lead_shutdown(void);

struct lead *lead_find(const char *key, size_t klen);
/* c leads key here: it holds the key's lock with the token of a leader. */
struct lead *lead_by(struct lt_client *c, const char *key, size_t klen);
/* A leader of key with its lock's token, in state, in the table (the
 * rest zero), or NULL (no memory). None of key may be there. */
struct lead *lead_new(const char *key, size_t klen, const char *token, enum lead_state state);
void lead_free(struct lead *ld);
/* A leader of an earlier life here (its lock left unseen, or its session
 * moved away and came back): forgotten, its CAMPAIGN or PROCLAIM answered. */
void lead_forget(struct lead *ld);

/* What a leader's record is written with: its expiry (ms). */
int64_t lead_record_expiry(void);

/* Reserve ld's epoch on the masters (LD_RESERVING): 1 on its way. */
int lead_reserve(struct lead *ld);
/* A majority read v of key, whose lock c holds with no leader known
 * here: c's leader, LD_RESERVING, or NULL when v shows none. */
struct lead *lead_adopt(struct lt_client *c, const char *key, size_t klen,
                        const struct rl_leader *v);

/* A master's subscriber is subscribed (again): for a lease, leaders'
 * values are written back where they are missing. */
void lead_resync(void);

#endif
