/* lockctl_util: what the parts of lockctl share: the exit statuses, the
 * connection settings (struct lc_conn), the program's name and messages,
 * number parsing and the clock. lockctl.c (the command line and the
 * one-shot request), lockctl_prompt.c (the prompt) and lockctl_run.c
 * (`lockctl run`) use it; it uses none of them. */
#ifndef LOCKD_LOCKCTL_UTIL_H
#define LOCKD_LOCKCTL_UTIL_H

#include <stdint.h>

#include "lockd/client.h"

/* Exit statuses (lockctl(1), EXIT STATUS). CMD's own status passes
 * through `lockctl run` unchanged. */
enum lc_exit {
	LC_EXIT_OK = 0,
	LC_EXIT_REFUSED = 1,       /* BUSY, TIMEOUT or ERR (reply on stderr) */
	LC_EXIT_USAGE = 2,         /* bad command line */
	LC_EXIT_UNAVAILABLE = 69,  /* lockd cannot be reached, or stopped answering */
	LC_EXIT_LOST = 70,         /* run: CMD was stopped because its lock was lost */
	LC_EXIT_OSERR = 71,        /* run: fork, signals or pipes failed */
	LC_EXIT_NOLOCK = 75,       /* run: the lock could not be had (the default of -E) */
	LC_EXIT_PROTOCOL = 76,     /* lockd sent what protocol version 1 does not allow */
	LC_EXIT_TLS = 77,          /* TLS failed: a certificate refused (lockd's or ours) */
	LC_EXIT_CANNOT_EXEC = 126, /* run: CMD is not executable */
	LC_EXIT_NOT_FOUND = 127,   /* run: CMD was not found */
};

struct lc_conn {
	struct lockd_opts o;
	int reply_timeout_ms; /* -T; 0: not given */
	int verbose;
};

extern const char *lc_prog;

void lc_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Parse a decimal number in [min, max]; -1 if s is not one. */
long long lc_number(const char *s, long long min, long long max);
/* The exit status that a failed connection gets (UNAVAILABLE, PROTOCOL or TLS). */
int lc_conn_exit(int status);
/* Monotonic microseconds. */
int64_t lc_now_us(void);

#endif
