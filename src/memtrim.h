/* memtrim: give the allocator's free pages back to the system a moment
 * after a burst (the releases of many sessions that ended, thousands of
 * quorum calls at once). One timer serves every caller. */
#ifndef LOCKD_MEMTRIM_H
#define LOCKD_MEMTRIM_H

struct event_base;

int memtrim_init(struct event_base *base);
void memtrim_shutdown(void);
/* Trim a second from now (a later call before then changes nothing);
 * nothing before memtrim_init. */
void memtrim_soon(void);

#endif
