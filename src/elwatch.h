/* elwatch: who leads a name, as this lockd's connections ask it (protocol
 * 1.3): LEADER, and the observations (OBSERVE, UNOBSERVE, ELECTED and
 * NOLEADER), kept current by majority reads on every notice of a change.
 * Below elect.c: it calls nothing of elect's, and answers through the
 * struct lt_ops given to ew_init. */
#ifndef LOCKD_ELWATCH_H
#define LOCKD_ELWATCH_H

#include <stddef.h>

#include "ilist.h"
#include "keytab.h"
#include "locktab.h"

struct config;
struct event_base;

/* A connection's observations (elect keeps it in lt_client.el; zeroed
 * when made). */
struct ew_client {
	struct ilist obs;      /* struct obs.clink, in elwatch.c */
	struct keytab by_name; /* the same, by name: OBSERVE costs no time per name
	                          observed (slots allocated at the first) */
};

int ew_init(struct event_base *base, const struct config *cfg, const struct lt_ops *ops);
void ew_set_cfg(const struct config *cfg);
void ew_shutdown(void);

/* LEADER name: a majority read, answered through lt_ops.reply. */
void ew_leader(struct lt_client *c, const char *key, size_t klen);
/* OBSERVE and UNOBSERVE of c, whose observations e holds (NULL: none
 * could be made, OBSERVE answers ERR OOM; UNOBSERVE: c observes nothing). */
void ew_observe(struct ew_client *e, struct lt_client *c, const char *key, size_t klen);
void ew_unobserve(struct ew_client *e, struct lt_client *c, const char *key, size_t klen);
/* c's connection ends: its observations end with it. */
void ew_client_end(struct ew_client *e);

/* Something may have changed about key (a notice from a master's "P
 * elected" channel, or a leader's value written here): read it again, if
 * it is observed. */
void ew_poke(const char *key, size_t klen);
/* A master's subscriber connection is (again) subscribed: notices may
 * have been missed, so every observed name is read again. */
void ew_resync(void);

#endif
