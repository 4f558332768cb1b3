/* sess_util: the session helpers the tests of protocol 1.2 share:
 * SESSION and RESUME with their exact replies, HELD as a sorted line, a
 * network blip. On the line client of harness.h. */
#ifndef LOCKD_TEST_SESS_UTIL_H
#define LOCKD_TEST_SESS_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NOSESSION "ERR NOSESSION no such session"

struct sess {
	char id[17];
	char secret[33];
};

/* Send req (SESSION ...) and assert the reply is exactly
 * "SESSION <16 hex> <32 hex> grace"; the id and secret go to *s. */
void session_at(const char *file, int line, struct cl *c, const char *req, int grace,
                struct sess *s);
#define session(c, req, g, s) session_at(__FILE__, __LINE__, (c), (req), (g), (s))
/* Assert the reply to RESUME s is exactly exp. */
void resume_at(const char *file, int line, struct cl *c, const struct sess *s, const char *exp);
#define resume(c, s, exp) resume_at(__FILE__, __LINE__, (c), (s), (exp))
/* A network blip: the connection is reset (SO_LINGER 0: an RST, no FIN). */
void blip(struct cl *c);
/* HELD, each line checked ("KEY key fence holds ttl_ms" and an optional
 * "SHARED" or "PERMIT i") with its ttl_ms replaced by "*", sorted, joined
 * by " | " (malloc'd). */
char *held_at(const char *file, int line, struct cl *c);
#define expect_held(c, ...)                                                                        \
	do {                                                                                       \
		char want_[600];                                                                   \
		snprintf(want_, sizeof(want_), __VA_ARGS__);                                       \
		char *got_ = held_at(__FILE__, __LINE__, (c));                                     \
		ck_assert_msg(strcmp(got_, want_) == 0, "HELD: got '%s', expected '%s'", got_,     \
		              want_);                                                              \
		free(got_);                                                                        \
	} while (0)

#endif
