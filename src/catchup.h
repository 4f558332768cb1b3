/* catchup: bring a master that lost its data up to date with the fence
 * counters of the others before it counts again. */
#ifndef LOCKD_CATCHUP_H
#define LOCKD_CATCHUP_H

struct master;

/* ok: every counter of N - majority + 1 counting masters is now on the
 * target (at least as high). Called once, never from catchup_start. */
typedef void catchup_done_fn(struct master *target, int ok);

/* Returns -1 (and done is not called) when too few masters count. */
int catchup_start(struct master *target, const char *prefix, catchup_done_fn *done);

#endif
