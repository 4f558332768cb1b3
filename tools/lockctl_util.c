/* lockctl_util: the helpers every part of lockctl shares (see
 * lockctl_util.h): messages on stderr under the program's name, decimal
 * numbers in a range, the exit status of a failed connection, the
 * monotonic clock. No state but the program's name. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "lockctl_util.h"

const char *lc_prog = "lockctl";

void lc_err(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", lc_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

long long lc_number(const char *s, long long min, long long max)
{
	long long v = 0;
	if (!s || !*s)
		return -1;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9' || v > max)
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v < min || v > max ? -1 : v;
}

int lc_conn_exit(int status)
{
	return status == LOCKD_EPROTO ? LC_EXIT_PROTOCOL
	       : status == LOCKD_ETLS ? LC_EXIT_TLS
	                              : LC_EXIT_UNAVAILABLE;
}

int64_t lc_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
