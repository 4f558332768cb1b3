/* lockall: LOCKALL n key1 ... keyn (protocol 1.4), above locktab as
 * elect and who are: every key at once, all or nothing, exclusively,
 * without deadlock between overlapping requests. Answers through the
 * struct lt_ops given to la_init. */
#ifndef LOCKD_LOCKALL_H
#define LOCKD_LOCKALL_H

#include "locktab.h"
#include "proto.h"

struct config;
struct event_base;

/* cfg stays valid (main's, which a reload changes in place). */
void la_init(struct event_base *base, const struct config *cfg, const struct lt_ops *ops);
/* LOCKALL: OK fence1 ... fencen, TIMEOUT or ERR, now or later. r's keys
 * point into the request line, which need live only during the call. */
void la_lockall(struct lt_client *c, const struct request *r);

#endif
