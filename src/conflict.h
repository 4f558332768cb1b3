/* conflict: what the holds of this lockd allow a request of a key (pure). */
#ifndef LOCKD_CONFLICT_H
#define LOCKD_CONFLICT_H

#include <stdint.h>

#include "locktab_types.h"

#define NO_PERMIT UINT32_MAX

/* The lowest permit in [from, n) that no session here holds, or NO_PERMIT. */
uint32_t cf_free_permit(const struct lkey *lk, uint32_t n, uint32_t from);
/* Nothing held here keeps a request of this kind from asking the masters. */
int cf_can_ask(const struct lkey *lk, const struct waiter *w);
/* The waiter that gets the key's lock (permit 0) or permit i by a handoff, or NULL. */
struct waiter *cf_handoff_to(struct lkey *lk, uint32_t permit);

/* Whether what a session holds satisfies what it asks again (cf_reentry). */
enum reentry {
	RE_OK,      /* it does: one more hold, the same fence */
	RE_UPGRADE, /* a shared hold asked for exclusively (the lock or a permit) */
	RE_OTHER,   /* a permit that does not satisfy it: ERR ARG naming the permit */
};
enum reentry cf_reentry(enum hold_kind held, uint32_t permit, enum hold_kind asked, uint32_t n);

#endif
