/* ktag: a short hash tag for every slot of a Redis Cluster (issue 31).
 *
 * On a cluster entry, everything lockd stores for one lock name K must
 * live in one slot: K's, as Redis Cluster reads it (the slot of K's hash
 * tag if it has one, else of the whole name: csl_keyslot). A key name
 * "P {K} fence" would not do: K may hold braces of its own ("{a}b}",
 * "a}b"), and "{K}" then tags something else. So each key of K starts
 * with "{T}", T a short tag whose own slot is K's: Redis reads T as the
 * name's tag (the first '{' and the first '}' after it), whatever K holds.
 *
 * T is the first string of length 1 to 4 over KTAG_ALPHABET, shortest
 * first, in the alphabet's order, whose slot is K's slot. The table is
 * computed once; it is part of the names lockd writes on the masters, so
 * changing the alphabet or the order is a change of layout (doc/design.md,
 * "Layout version and rolling upgrades"). Pure: no I/O, no allocation. */
#ifndef LOCKD_KTAG_H
#define LOCKD_KTAG_H

#include <stddef.h>

#define KTAG_SLOTS    16384 /* Redis Cluster's hash slots */
#define KTAG_LEN_MAX  4     /* the longest tag */
#define KTAG_ALPHABET "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

/* Fill the table (once; later calls do nothing). 0, or -1 if some slot
 * had no tag of KTAG_LEN_MAX characters or fewer (it has: the unit tests
 * check every slot, so -1 means this code was changed wrongly). */
int ktag_init(void);
/* The tag of slot s (< KTAG_SLOTS), NUL-terminated, 1 to KTAG_LEN_MAX
 * characters; ktag_init must have returned 0. */
const char *ktag_of_slot(unsigned s);
/* Write "{T}" for the name key (len bytes) into out (cap bytes, at least
 * KTAG_LEN_MAX + 3): its length, without the NUL it adds. */
size_t ktag_brace(char *out, size_t cap, const char *key, size_t len);

#endif
