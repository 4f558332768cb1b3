/* membership: which masters count towards a majority. Judges lockd's
 * marker at startup, keeps a master that lost its data out for
 * redis.restart_exclusion_ms, then has its fence counters caught up
 * (catchup.c) before it counts again. Sits above master.c, which reports
 * to it through master_opts.on_up and on_down. */
#ifndef LOCKD_MEMBERSHIP_H
#define LOCKD_MEMBERSHIP_H

#include <stdint.h>

struct event_base;
struct master;

struct mb_opts {
	int64_t timeout_ms;    /* redis.timeout_ms: the startup judge waits up to 4 times it
	                          (at least 500 ms) for every master's marker */
	int64_t exclusion_ms;  /* a master that lost its data does not count for this long */
	int64_t lease_ms;      /* exclusion_auto: locks.lease_ms */
	int exclusion_auto;    /* redis.restart_exclusion_ms not given: exclusion_ms is lease +
	                          locks.lost_delay_ms, and grows to lease + the largest DELAY
	                          written since start (mb_note_delay) */
	int64_t fence_idle_ms; /* fence counters written by a catch-up expire after this */
	const char *prefix;    /* key prefix, for the fence counters */
};

/* Before masters_init: nmasters is the count it will be given. */
int mb_init(struct event_base *base, int nmasters, const struct mb_opts *o);
/* prefix and timeout_ms stay as they were at mb_init. */
void mb_set_opts(const struct mb_opts *o);
/* A hold with a lock-delay of delay_ms is being asked for (1.4): a master
 * that loses its data from now on stays out long enough to cover it. */
void mb_note_delay(uint32_t delay_ms);
/* After masters_shutdown (a catch-up it fails still reports here). */
void mb_shutdown(void);

/* master_opts.on_up and on_down. */
void mb_up(struct master *m, int restarted, int has_marker);
void mb_down(struct master *m);

/* Up and counting (see enum mb_state): may count towards a majority. */
int mb_counts(const struct master *m);
int mb_counting(void);

#endif
