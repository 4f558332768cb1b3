/* test_service: what the files of the "service" group share (test_service.c
 * builds the group; test_service_systemd.c, test_service_metrics.c and
 * test_service_bench.c add their tests to it), and the helpers more than
 * one of them uses. */
#ifndef LOCKD_TEST_SERVICE_H
#define LOCKD_TEST_SERVICE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rel under $top_builddir: what make made (from a .in file, a man page) */
static inline const char *builddir_path(const char *rel, char *out, size_t n)
{
	const char *bd = getenv("top_builddir");
	snprintf(out, n, "%s/%s", bd && *bd ? bd : ".", rel);
	return out;
}

static inline int ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

void tc_service_add_systemd(TCase *tc); /* test_service_systemd.c */
void tc_service_add_metrics(TCase *tc); /* test_service_metrics.c */
void tc_service_add_bench(TCase *tc);   /* test_service_bench.c: lockd-benchmark */

#endif
