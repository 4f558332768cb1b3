/* locktab: the central table of keys: who holds each key on this lockd,
 * its fence and lease, the FIFO of sessions waiting for it, and the one
 * watchdog that renews every lease. */
#ifndef LOCKD_LOCKTAB_H
#define LOCKD_LOCKTAB_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "proto.h"
#include "waitq.h"

struct event_base;
struct session;
struct lkey;

enum wait_mode {
	WM_TRY,  /* TRYLOCK: one attempt, BUSY on failure */
	WM_ONCE, /* LOCK WAIT 0: one attempt, TIMEOUT on failure */
	WM_WAIT, /* LOCK: wait in the queue until granted or the deadline */
};

/* A session's place in a key's queue (a session waits for one key at most). */
struct waiter {
	struct wq_link link; /* on lkey.waiters */
	struct lkey *lk;     /* NULL when not waiting */
	struct session *s;
	enum wait_mode mode;
	int has_ttl;
	uint32_t ttl_ms;
	int quorum_failed; /* the last attempt found no majority */
	int64_t since_us;
	int64_t deadline_us; /* end of the WAIT */
	struct event *timer; /* fires at deadline_us */
};

int locktab_init(struct event_base *base, const struct config *cfg);
void locktab_set_cfg(const struct config *cfg);
void locktab_shutdown(void);
uint64_t locktab_keys(void);

/* Commands: each answers the session now or later with session_reply. */
void lt_lock(struct session *s, const struct request *r);
void lt_unlock(struct session *s, const char *key, size_t klen);
void lt_extend(struct session *s, const char *key, size_t klen, uint32_t ms);
void lt_status(struct session *s, const char *key, size_t klen);
void lt_held(struct session *s);

/* The session's LOCK waits (queued, or asleep until the key is free
 * elsewhere) rather than being decided right now. */
int lt_waiting(const struct session *s);
/* The session ends: cancel its wait, detach it from calls, release its locks. */
void lt_session_end(struct session *s);
/* SIGTERM: answer every waiter ERR SHUTDOWN and release every lock. */
void lt_shutdown_all(void);
/* Releases are still queued or in flight (shutdown waits for them). */
int locktab_busy(void);
/* A released-key notice from a master's channel. */
void lt_notice(const char *key, size_t klen);

#endif
