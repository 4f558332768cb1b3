/* renew: a hold's life after its grant. Its state and the lists that go
 * with it (rn_hold_state), its end of validity (one deadline heap, one
 * timer: LOST), the watchdog that renews every lease without TTL in
 * batches, and the queue of releases nobody waits for (a session's end).
 * Below locktab.c, which it answers through struct rn_ops; it asks the
 * masters through redlock. */
#ifndef LOCKD_RENEW_H
#define LOCKD_RENEW_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "locktab_int.h"
#include "redlock.h"

struct config;
struct event;
struct event_base;

struct rn_ops {
	/* h's validity ended (it is out of the deadline heap): LOST. */
	void (*lost)(struct hold *h);
	/* A renewal batch let go of h (h->refs dropped): free it if it ended. */
	void (*unref)(struct hold *h);
	/* Answer an EXTEND (lt_ops.reply). */
	void (*reply)(struct lt_client *c, const char *fmt, va_list ap);
	/* h of a resumable session reached its deadline late (lockd was
	 * stopped or stalled): check whether the session moved to another
	 * lockd, which drops it without LOST (1.2). LOST waits for that, at
	 * most a call's time. */
	void (*late)(struct hold *h);
};

int rn_init(struct event_base *base, const struct config *cfg, const struct rn_ops *ops);
/* fn runs when a renewal found a leader's lock, or wrote it back, on a
 * master that lacks its value (lead.c writes the leaders' values back
 * then: the renewal carries the lock's value only). NULL: nothing runs. */
void rn_on_lead_rewritten(void (*fn)(void));
/* fn(session) when a renewal wrote a resumable session's hold back on a
 * master (it lacked it): the session's record there may lack the hold
 * too, which an adoption elsewhere needs on a majority (resume.c writes
 * the record again). */
void rn_on_sess_rewritten(void (*fn)(struct lt_client *c));
/* A reload: the next renewal of every hold writes the new lease, now. */
void rn_set_cfg(const struct config *cfg);
void rn_shutdown(void);

/* Move h to state `to` and onto the lists that go with it; aborts on a
 * move the state machine does not have (doc/design.md, "States"). */
void rn_hold_state(struct hold *h, enum hold_state to);
/* h's validity ends at `at` (LOST then); nothing for a hold that ended. */
void rn_deadline(struct hold *h, int64_t at);
/* A write of a lease of lease_ms, sent at start, may land on some
 * masters whatever its verdict: the validity ends no later than it. */
void rn_lease_written(struct hold *h, int64_t start, int64_t lease_ms);
/* One renewal item for h (EXTEND's, or a batch's). */
void rn_fill_item(struct rl_renew_item *it, struct hold *h);

/* Arm a libevent timer for a monotonic time (us). */
void rn_timer_at(struct event *ev, int64_t at_us);

/* EXTEND of s's TTL hold h by a new lease of ms: answered through
 * rn_ops.reply once its verdict is in. */
void rn_extend(struct lt_client *s, struct hold *h, uint32_t ms);

/* A reentrant LOCK (delta 1) or UNLOCK (-1) of a resumable session's
 * hold: its count written in its record first (1.2), then answered. */
void rn_count(struct lt_client *s, struct hold *h, int delta);

/* Release a hold nobody waits for, batched with others of the loop turn
 * (key and token are copied). */
void rn_release(const char *key, size_t klen, enum rl_hold hold, uint32_t permit, const char *token,
                const struct rl_rec *rec);
/* Send every queued release now, whatever is in flight (shutdown). */
void rn_release_all(void);
/* Releases are still queued or in flight. */
int rn_busy(void);

#endif
