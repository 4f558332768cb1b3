/* memtrim: one timer that calls malloc_trim after a burst (memtrim.h). */
#include "config.h"

#include <malloc.h>

#include <event2/event.h>

#include "memtrim.h"

static struct event *trim_ev;

/* malloc_trim also releases whole free pages inside the heap, not only
 * at its top. */
static void trim_cb(evutil_socket_t fd, short what, void *arg)
{
	malloc_trim(0);
}

int memtrim_init(struct event_base *base)
{
	if (!trim_ev)
		trim_ev = evtimer_new(base, trim_cb, NULL);
	return trim_ev ? 0 : -1;
}

void memtrim_shutdown(void)
{
	if (trim_ev)
		event_free(trim_ev);
	trim_ev = NULL;
}

void memtrim_soon(void)
{
	struct timeval tv = {1, 0};
	if (trim_ev && !evtimer_pending(trim_ev, NULL))
		evtimer_add(trim_ev, &tv);
}
