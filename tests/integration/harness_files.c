/* harness_files: the files a test reads and writes (sizes, whole files,
 * atomic replacement) and the lines it looks for in logs, polled in
 * bounded time. See harness.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

/* ------------------------------------------------------------------ files */

long h_file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

int h_file_count(const char *path, long from, const char *a, const char *b)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	if (from > 0)
		fseek(f, from, SEEK_SET);
	char line[4096];
	int n = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, a) && (!b || strstr(line, b)))
			n++;
	fclose(f);
	return n;
}

char *h_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, len = 0;
	char *b = malloc(cap);
	ck_assert(b != NULL);
	for (;;) {
		if (cap - len < 2048) {
			cap *= 2;
			b = realloc(b, cap);
			ck_assert(b != NULL);
		}
		size_t n = fread(b + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
	}
	fclose(f);
	b[len] = '\0';
	return b;
}

void h_put_file(const char *path, const char *text)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	FILE *f = fopen(tmp, "w");
	ck_assert_msg(f != NULL, "%s: %s", tmp, strerror(errno));
	ck_assert(fputs(text, f) >= 0);
	ck_assert(fclose(f) == 0);
	ck_assert_msg(rename(tmp, path) == 0, "rename %s: %s", tmp, strerror(errno));
}

char *h_replace1(const char *s, const char *old, const char *new)
{
	const char *p = strstr(s, old);
	ck_assert_msg(p != NULL, "'%s' not found in:\n%s", old, s);
	size_t a = (size_t)(p - s), ol = strlen(old), nl = strlen(new);
	char *r = malloc(strlen(s) - ol + nl + 1);
	ck_assert(r != NULL);
	memcpy(r, s, a);
	memcpy(r + a, new, nl);
	strcpy(r + a + nl, p + ol);
	return r;
}

char *h_log_find(const char *path, long from, const char *a, const char *b)
{
	char *all = h_slurp(path);
	if (!all)
		return NULL;
	long len = (long)strlen(all);
	char *found = NULL;
	for (char *l = all + (from < len ? from : len); *l && !found;) {
		char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		char save = l[n];
		l[n] = '\0';
		if (strstr(l, a) && (!b || strstr(l, b)))
			found = strdup(l);
		l[n] = save;
		l += n + (e ? 1 : 0);
	}
	free(all);
	return found;
}

char *h_log_wait(const char *path, long from, const char *a, const char *b, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	for (;;) {
		char *l = h_log_find(path, from, a, b);
		if (l || h_now_ms() >= end)
			return l;
		h_sleep_ms(20);
	}
}
