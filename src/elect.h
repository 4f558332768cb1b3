/* elect: leader election (protocol 1.3), above locktab.
 *
 * A campaign is the exclusive lock of the election's name (locktab's
 * LOCK path: its FIFO, renewal, LOST, fences); on the grant elect writes
 * the leader's value beside the lock on the masters and only then answers
 * OK. The leaders of this lockd (their value and its version, written
 * back every lease/3 where a master lost it) are lead.c's, below it; it
 * keeps each connection's observations for elwatch.c (LEADER, the
 * observations), below it too. Answers through the struct lt_ops given
 * to el_init. */
#ifndef LOCKD_ELECT_H
#define LOCKD_ELECT_H

#include <stddef.h>

#include "locktab.h"

struct config;
struct event_base;
struct request;

int el_init(struct event_base *base, const struct config *cfg, const struct lt_ops *ops);
void el_set_cfg(const struct config *cfg);
void el_shutdown(void);

/* The commands (the name in r->key, the value in r->word), each answered
 * through lt_ops.reply, now or later. */
void el_campaign(struct lt_client *c, const struct request *r);
void el_proclaim(struct lt_client *c, const struct request *r);
void el_resign(struct lt_client *c, const char *key, size_t klen);
/* OBSERVE and UNOBSERVE: elwatch.c's, with c's observations kept here. */
void el_observe(struct lt_client *c, const char *key, size_t klen);
void el_unobserve(struct lt_client *c, const char *key, size_t klen);
/* UNLOCK of a name c leads: answered here (all its holds dropped, OK 0),
 * returns 1; else 0 (locktab answers it). */
int el_unlock(struct lt_client *c, const char *key, size_t klen);
/* RESUME adopted c's exclusive hold of key from another lockd (1.2): a
 * majority read tells whether c leads that name, so that its value is
 * written back and its release announced from here. (Until the read
 * answers, a CAMPAIGN, PROCLAIM or RESIGN of the name reads first.) */
void el_adopted(struct lt_client *c, const char *key, size_t klen);
/* c's connection ends: its observations end with it (never resumed). */
void el_conn_end(struct lt_client *c);

/* A master's subscriber connection is (again) subscribed: notices may
 * have been missed, so every observed name is read again (ew_resync), and
 * for a lease leaders' values are written back where they are missing (a
 * master may have restarted empty). */
void el_resync(void);

#endif
