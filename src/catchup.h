/* catchup: bring a master that lost its data up to date with the fence
 * counters of the others before it counts again. Started by membership.c,
 * which it answers only through the done callback. */
#ifndef LOCKD_CATCHUP_H
#define LOCKD_CATCHUP_H

struct master;

#include <stdint.h>

/* ok: every counter of the sources is now on the target (at least as
 * high), and no master involved reconnected meanwhile. Called once, never
 * from catchup_start. */
typedef void catchup_done_fn(struct master *target, int ok);

/* Read the fence counters of the masters src[0..nsrc) into target; with
 * clock_floor, raise each to at least target's clock in microseconds too.
 * Returns 0 when started, 1 when there was nothing to read (done is not
 * called: the target is caught up), -1 on failure (done is not called). */
int catchup_start(struct master *target, const char *prefix, int64_t fence_idle_ms, const int *src,
                  int nsrc, int clock_floor, catchup_done_fn *done);

#endif
