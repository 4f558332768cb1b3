/* locktab_fix: the fixture of the locktab unit tests (test_locktab.c,
 * test_locktab_shared.c): a libevent loop, locktab on the fake redlock
 * (fake_redlock.c), and clients that record what locktab says to them. */
#ifndef LOCKD_TEST_LOCKTAB_FIX_H
#define LOCKD_TEST_LOCKTAB_FIX_H

#include <stdint.h>

#include "cfg.h"
#include "locktab.h"

/* A client that records what locktab says to it. */
struct tclient {
	struct lt_client lt;
	char out[1024][128];
	int nout, replies, wakes;
	int blocked; /* a request waits for its reply */
};

extern struct event_base *ltf_base;
extern struct config ltf_cfg; /* locktab's; a test may change a copy and set it */

/* The checked fixture: locktab on a fresh loop with lease_ms 3000. */
void ltf_setup(void);
void ltf_teardown(void);
/* A session with id; its end (lt_client_end) and free. */
struct tclient *ltf_client(uint64_t id);
void ltf_leave(struct tclient *t);
/* Run the loop for ms (deferred work, timers). */
void ltf_run(int ms);
/* Send one request line, as a session would. */
void ltf_req(struct tclient *t, const char *line);
/* The last line said to t, or "". */
const char *ltf_last(const struct tclient *t);
/* LOCK granted by the fake with fence f (valid 10 s). */
void ltf_grant(struct tclient *t, const char *line, uint64_t f);

#define ltf_want(t, s)                                                                             \
	do {                                                                                       \
		ck_assert_msg(!(t)->blocked, "no reply yet, want '%s'", (s));                      \
		ck_assert_str_eq(ltf_last(t), (s));                                                \
	} while (0)

#endif
