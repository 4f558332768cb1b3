/* master_int: what the files of a master share (master.c: the command
 * connection, its requests, handshake and reconnection; mastersub.c: the
 * pub/sub subscriber). Private to them: the rest of lockd sees master.h.
 * master.c calls the subscriber (sub_*), never the other way round: the
 * subscriber reads what masters_init hands it (sub_init) and shares only
 * the timing helpers below, which need nothing of master.c's. */
#ifndef LOCKD_MASTER_INT_H
#define LOCKD_MASTER_INT_H

#include <stdint.h>
#include <stdlib.h>

#include <event2/event.h>

#include "master.h"
#include "util.h"

/* How long a connect, a handshake or a subscriber's PING may take: more
 * than a request's timeout_ms, as a false alarm here costs a reconnect. */
static inline int64_t master_slow_ms(const struct master_opts *o)
{
	return o->timeout_ms * 4 < 250 ? 250 : o->timeout_ms * 4;
}

static inline void master_timer_at(struct event *ev, int64_t at_us)
{
	int64_t d = at_us - now_us();
	if (d < 0)
		d = 0;
	struct timeval tv = {(time_t)(d / 1000000), (suseconds_t)(d % 1000000)};
	event_add(ev, &tv);
}

/* Arm ev after *backoff_ms with jitter (50-100 %), and double *backoff_ms
 * up to o->reconnect_max_ms for the next time. */
static inline void master_backoff_arm(const struct master_opts *o, struct event *ev,
                                      int64_t *backoff_ms)
{
	int64_t b = *backoff_ms;
	*backoff_ms = b * 2 > o->reconnect_max_ms ? o->reconnect_max_ms : b * 2;
	b = b / 2 + (int64_t)(random() % (b / 2 + 1));
	master_timer_at(ev, now_us() + b * 1000);
}

/* mastersub.c, for master.c */

/* Called once by masters_init with its loop, its own options (read when
 * used, so masters_set_opts reaches the subscriber), its shutdown flag
 * (set: a lost subscriber is not made again) and the key prefix the
 * channels are named by (copied). */
void sub_init(struct event_base *b, const struct master_opts *o, const int *shutting_down,
              const char *prefix);
/* m went up: subscribe (SUB_CONNECTING). */
void sub_start(struct master *m);
/* Let go of m's subscriber, if any, and make none: SUB_OFF. free_ctx is 0
 * when hiredis is already tearing the context down. */
void sub_close(struct master *m, int free_ctx);
/* m->sub_timer's callback (masters_init makes the timer). */
void sub_timer_cb(evutil_socket_t fd, short what, void *arg);

#endif
