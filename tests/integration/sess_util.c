/* sess_util: the session helpers of protocol 1.2's tests (sess_util.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sess_util.h"

static int is_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* Send req (SESSION ...) and assert the reply is exactly
 * "SESSION <16 hex> <32 hex> grace"; the id and secret go to *s. */
void session_at(const char *file, int line, struct cl *c, const char *req, int grace,
                struct sess *s)
{
	const char *r = cl_cmd_at(file, line, c, req, H_SLOW_LIMIT);
	if (!r)
		h_fail_at(file, line, "'%s': no reply (%s)", req, c->eof ? "EOF" : "timeout");
	char id[64] = "", sec[64] = "", want[200];
	int g = -1;
	if (sscanf(r, "SESSION %63s %63s %d", id, sec, &g) != 3 || !is_hex(id, 16) ||
	    !is_hex(sec, 32))
		h_fail_at(file, line, "'%s': got '%s', expected 'SESSION <16 hex> <32 hex> %d'",
		          req, r, grace);
	snprintf(want, sizeof(want), "SESSION %s %s %d", id, sec, grace);
	if (strcmp(r, want) != 0)
		h_fail_at(file, line, "'%s': got '%s', expected '%s'", req, r, want);
	memcpy(s->id, id, sizeof(s->id)); /* 16 and 32 characters: is_hex said so */
	memcpy(s->secret, sec, sizeof(s->secret));
}

/* Assert the reply to RESUME s is exactly exp. */
void resume_at(const char *file, int line, struct cl *c, const struct sess *s, const char *exp)
{
	char req[128];
	snprintf(req, sizeof(req), "RESUME %s %s", s->id, s->secret);
	const char *r = cl_cmd_at(file, line, c, req, H_SLOW_LIMIT);
	if (!r)
		h_fail_at(file, line, "'%s': no reply (%s)", req, c->eof ? "EOF" : "timeout");
	if (strcmp(r, exp) != 0)
		h_fail_at(file, line, "'%s': got '%s', expected '%s'", req, r, exp);
}

/* A network blip: the connection is reset (SO_LINGER 0: an RST, no FIN). */
void blip(struct cl *c)
{
	int fd = cl_take_fd(c);
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	ck_assert_msg(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0, "SO_LINGER: %s",
	              strerror(errno));
	close(fd);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* HELD, each line checked ("KEY key fence holds ttl_ms" and an optional
 * "SHARED" or "PERMIT i") with its ttl_ms replaced by "*", sorted, joined
 * by " | " (malloc'd). */
char *held_at(const char *file, int line, struct cl *c)
{
	cl_sendn_at(file, line, c, "HELD\n", 5);
	char *ls[64];
	int n = 0;
	const char *l = cl_reply_at(file, line, c, H_TMO);
	for (;;) {
		if (!l)
			h_fail_at(file, line, "HELD: reply ended (%s) before END",
			          c->eof ? "EOF" : "timeout");
		if (strcmp(l, "END") == 0)
			break;
		char key[300], extra[40] = "";
		unsigned long long fence, holds, ttl;
		int end = 0,
		    k = sscanf(l, "KEY %299s %llu %llu %llu %n", key, &fence, &holds, &ttl, &end);
		if (k != 4 || n >= 64)
			h_fail_at(file, line, "HELD: bad line '%s'", l);
		if (l[end]) {
			unsigned p;
			int e2 = 0;
			if (strcmp(l + end, "SHARED") == 0)
				snprintf(extra, sizeof(extra), " SHARED");
			else if (sscanf(l + end, "PERMIT %u%n", &p, &e2) == 1 && !l[end + e2])
				snprintf(extra, sizeof(extra), " PERMIT %u", p);
			else
				h_fail_at(file, line, "HELD: bad line '%s'", l);
		}
		if (asprintf(&ls[n++], "KEY %s %llu %llu *%s", key, fence, holds, extra) < 0)
			ck_abort();
		l = cl_line_at(file, line, c, H_TMO); /* no event inside a multi-line reply */
	}
	qsort(ls, (size_t)n, sizeof(ls[0]), cmp_str);
	size_t len = 1;
	for (int i = 0; i < n; i++)
		len += strlen(ls[i]) + 3;
	char *out = calloc(1, len);
	ck_assert(out != NULL);
	for (int i = 0; i < n; i++) {
		if (i)
			strcat(out, " | ");
		strcat(out, ls[i]);
		free(ls[i]);
	}
	return out;
}
