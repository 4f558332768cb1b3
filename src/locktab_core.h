/* locktab_core: the functions of locktab.c (the table of keys) that its
 * sibling locktab_holds.c uses. Private to the two; locktab.c calls
 * nothing of locktab_holds.c. */
#ifndef LOCKD_LOCKTAB_CORE_H
#define LOCKD_LOCKTAB_CORE_H

#include <stddef.h>

#include "locktab.h"
#include "locktab_int.h"

/* The key's entry, or NULL; ltc_get makes it (NULL: out of memory). */
struct lkey *ltc_find(const char *key, size_t klen);
struct lkey *ltc_get(const char *key, size_t klen);
/* Free the entry once nothing refers to it (called last). */
void ltc_maybe_free(struct lkey *lk);
/* The session's hold of the key, if any. */
struct hold *ltc_hold_of(const struct lkey *lk, const struct lt_client *s);
/* The hold is lost: LOST to its session, released where it may sit. */
void ltc_lost(struct hold *h);
/* h ends here, without LOST and without a word to the masters or waiters. */
void ltc_hold_end(struct hold *h);
/* A zeroed hold (NULL: out of memory). */
struct hold *ltc_hold_new(void);
/* Let the key's head waiter ask, if it may. */
void ltc_kick(struct lkey *lk);
/* w leaves its key's queue (the caller kicks and frees the entry). */
void ltc_waiter_leave(struct waiter *w);
/* The holder is done with h (all its holds): released, handed off. */
void ltc_release(struct hold *h);
/* LOCKALL's hooks (1.4). */
extern struct lt_part_ops ltc_part_ops;
/* Answer a client (lt_ops.reply), or send it a line (lt_ops.line). */
void ltc_reply(struct lt_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ltc_line(struct lt_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
