/* rdup: a deep copy of a hiredis reply, for a reply held past the
 * callback that hiredis frees it after: a write's reply waits there for
 * the WAIT that follows it (master_repl.c for a master, csl_router.c for
 * a cluster node). Free the copy with freeReplyObject. */
#ifndef LOCKD_RDUP_H
#define LOCKD_RDUP_H

#include <hiredis/hiredis.h>

/* A copy of r and everything under it; NULL when out of memory. */
redisReply *rdup_reply(const redisReply *r);

#endif
