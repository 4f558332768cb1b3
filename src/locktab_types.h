/* locktab_types: what a request asks for (enum hold_kind), how it waits
 * (enum wait_mode) and a client's place in a key's queue (struct waiter):
 * the types that the table (locktab.h, locktab_int.h) and the pure
 * conflict.c below it share. Types only. */
#ifndef LOCKD_LOCKTAB_TYPES_H
#define LOCKD_LOCKTAB_TYPES_H

#include <stdint.h>

#include "ilist.h"

struct event;
struct lkey;
struct lt_client;

enum wait_mode {
	WM_TRY,  /* TRYLOCK: one attempt, BUSY on failure */
	WM_ONCE, /* LOCK WAIT 0: one attempt, TIMEOUT on failure */
	WM_WAIT, /* LOCK: wait in the queue until granted or the deadline */
};

/* What a request asks for, and what a hold is. */
enum hold_kind {
	HK_LOCK,   /* LOCK key: the key's lock (its permit 0) */
	HK_SHARED, /* LOCK key SHARED: one of any number of shared holders */
	HK_PERMIT, /* LOCK key PERMITS n: one of the permits below n */
};

/* A client's place in a key's queue (a client waits for one key at most). */
struct waiter {
	struct ilink link; /* on lkey.waiters */
	struct lkey *lk;   /* NULL when not waiting */
	struct lt_client *c;
	enum wait_mode mode;
	enum hold_kind kind;
	uint32_t npermits;    /* HK_PERMIT: n (HK_LOCK: 1) */
	uint32_t next_permit; /* HK_PERMIT: the permit to try next in this round */
	int64_t round_pttl;   /* HK_PERMIT: the shortest lease seen busy this round */
	int xraised;          /* an attempt raised the exclusive-waiting flag */
	int campaign;         /* CAMPAIGN (1.3): its grant goes to lt_elect_hooks.granted */
	int part;             /* a LOCKALL's part (1.4): its verdicts go to lt_part_ops */
	int has_ttl;
	uint32_t ttl_ms;
	uint32_t delay_ms; /* its lock-delay (1.4): DELAY, or locks.lost_delay_ms */
	int delay_counted; /* it found the key in a lock-delay (STATS, counted once) */
	int quorum_failed; /* the last attempt found no majority */
	int64_t since_us;
	int64_t deadline_us; /* end of the WAIT */
	struct event *timer; /* fires at deadline_us */
};

#endif
