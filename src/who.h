/* who: WHO key (protocol 1.4), above locktab as elect is: who holds a
 * key, as a majority of the masters say (rl_who), each hold with its
 * fence, kind and lockd, and for the holds of this lockd's own sessions
 * their client, session and time held. Answers through the struct lt_ops
 * given to who_init. */
#ifndef LOCKD_WHO_H
#define LOCKD_WHO_H

#include <stddef.h>

#include "locktab.h"

struct config;

/* cfg stays valid (main's, which a reload changes in place). */
void who_init(const struct config *cfg, const struct lt_ops *ops);
/* WHO key: HOLDER lines, then END; or ERR QUORUM. Answered later, through
 * ops (c->call is the read while it runs). */
void who_ask(struct lt_client *c, const char *key, size_t klen);

#endif
