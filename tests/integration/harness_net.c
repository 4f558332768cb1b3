/* harness_net: connections to lockd and the masters (TCP on 127.0.0.1,
 * Unix sockets, sends bounded in time) and a tiny RESP client for the
 * redis masters (rc_*, h_redis*). See harness.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"

/* ------------------------------------------------------------------ RESP */

struct sb {
	char *p;
	size_t len, cap;
};

static void sb_add(struct sb *s, const char *p, size_t n)
{
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 256;
		while (cap < s->len + n + 1)
			cap *= 2;
		s->p = realloc(s->p, cap);
		ck_assert(s->p != NULL);
		s->cap = cap;
	}
	memcpy(s->p + s->len, p, n);
	s->len += n;
	s->p[s->len] = '\0';
}

struct rconn {
	int fd;
	int timeout_ms;
	char *buf;
	size_t len, cap;
};

int h_connect_tcp(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int h_connect_unix(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_un a = {0};
	a.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a.sun_path)) {
		close(fd);
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(a.sun_path, path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int h_send_all(int fd, const void *p, size_t n, int timeout_ms)
{
	double deadline = h_now_ms() + timeout_ms;
	const char *b = p;
	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			b += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		double rem = deadline - h_now_ms();
		if (rem <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		struct pollfd pf = {fd, POLLOUT, 0};
		poll(&pf, 1, (int)rem + 1);
	}
	return 0;
}

struct rconn *rc_open(int port, int timeout_ms)
{
	int fd = h_connect_tcp(port);
	if (fd < 0)
		return NULL;
	struct rconn *r = calloc(1, sizeof(*r));
	ck_assert(r != NULL);
	r->fd = fd;
	r->timeout_ms = timeout_ms;
	return r;
}

void rc_close(struct rconn *r)
{
	if (!r)
		return;
	close(r->fd);
	free(r->buf);
	free(r);
}

/* Parse one reply from b[0..n); returns bytes used, 0 if incomplete, -1 if
 * malformed. */
static long resp_parse(const char *b, size_t n, struct sb *out, int depth)
{
	const char *e = memmem(b, n, "\r\n", 2);
	if (!e || depth > 8)
		return e ? -1 : 0;
	size_t hl = (size_t)(e - b) + 2;
	switch (b[0]) {
	case '+':
	case ':':
		sb_add(out, b + 1, hl - 3);
		return (long)hl;
	case '-':
		sb_add(out, "-", 1);
		sb_add(out, b + 1, hl - 3);
		return (long)hl;
	case '$': {
		long long l = strtoll(b + 1, NULL, 10);
		if (l < 0) {
			sb_add(out, "(nil)", 5);
			return (long)hl;
		}
		if (n < hl + (size_t)l + 2)
			return 0;
		sb_add(out, b + hl, (size_t)l);
		return (long)(hl + (size_t)l + 2);
	}
	case '*': {
		long long cnt = strtoll(b + 1, NULL, 10);
		if (cnt < 0) {
			sb_add(out, "(nil)", 5);
			return (long)hl;
		}
		size_t used = hl;
		for (long long i = 0; i < cnt; i++) {
			long r = resp_parse(b + used, n - used, out, depth + 1);
			if (r <= 0)
				return r;
			used += (size_t)r;
			sb_add(out, "\n", 1);
		}
		return (long)used;
	}
	default:
		return -1;
	}
}

char *rc_cmdv(struct rconn *r, int argc, const char **argv)
{
	struct sb req = {0};
	char hdr[64];
	snprintf(hdr, sizeof(hdr), "*%d\r\n", argc);
	sb_add(&req, hdr, strlen(hdr));
	for (int i = 0; i < argc; i++) {
		snprintf(hdr, sizeof(hdr), "$%zu\r\n", strlen(argv[i]));
		sb_add(&req, hdr, strlen(hdr));
		sb_add(&req, argv[i], strlen(argv[i]));
		sb_add(&req, "\r\n", 2);
	}
	double deadline = h_now_ms() + r->timeout_ms;
	int rc = h_send_all(r->fd, req.p, req.len, r->timeout_ms);
	free(req.p);
	if (rc != 0)
		return NULL;
	for (;;) {
		if (r->len > 0) {
			struct sb out = {0};
			sb_add(&out, "", 0);
			long used = resp_parse(r->buf, r->len, &out, 0);
			if (used < 0) {
				free(out.p);
				return NULL;
			}
			if (used > 0) {
				memmove(r->buf, r->buf + used, r->len - (size_t)used);
				r->len -= (size_t)used;
				return out.p;
			}
			free(out.p);
		}
		double rem = deadline - h_now_ms();
		if (rem <= 0)
			return NULL;
		struct pollfd pf = {r->fd, POLLIN, 0};
		if (poll(&pf, 1, (int)rem + 1) <= 0)
			continue;
		if (r->cap - r->len < 65536) {
			r->cap = r->cap ? r->cap * 2 : 131072;
			r->buf = realloc(r->buf, r->cap);
			ck_assert(r->buf != NULL);
		}
		ssize_t k = recv(r->fd, r->buf + r->len, r->cap - r->len, MSG_DONTWAIT);
		if (k > 0)
			r->len += (size_t)k;
		else if (k == 0 || (errno != EAGAIN && errno != EINTR))
			return NULL;
	}
}

char *rc_cmd(struct rconn *r, ...)
{
	const char *argv[32];
	int argc = 0;
	va_list ap;
	va_start(ap, r);
	const char *a;
	while ((a = va_arg(ap, const char *)) && argc < 32)
		argv[argc++] = a;
	va_end(ap);
	return rc_cmdv(r, argc, argv);
}

static char *redis_v(int i, va_list ap)
{
	const char *argv[32];
	int argc = 0;
	const char *a;
	while ((a = va_arg(ap, const char *)) && argc < 32)
		argv[argc++] = a;
	struct rconn *r = rc_open(h_master(i)->port, 1500); /* fails on no master i */
	if (!r)
		return NULL;
	char *out = rc_cmdv(r, argc, argv);
	rc_close(r);
	return out;
}

char *h_redis(int i, ...)
{
	va_list ap;
	va_start(ap, i);
	char *out = redis_v(i, ap);
	va_end(ap);
	return out;
}

long long h_redis_int(int i, ...)
{
	va_list ap;
	va_start(ap, i);
	char *out = redis_v(i, ap);
	va_end(ap);
	ck_assert_msg(out != NULL, "master %d (port %d) did not answer", i, h_master(i)->port);
	char *end;
	errno = 0;
	long long v = strtoll(out, &end, 10);
	ck_assert_msg(*out && !*end && !errno, "master %d: expected an integer reply, got '%s'", i,
	              out);
	free(out);
	return v;
}

int h_masters_with_pttl(int n, const char *rkey, long long *min_pttl, long long *max_pttl)
{
	int cnt = 0;
	long long mn = -1, mx = -1;
	for (int i = 0; i < n && i < h_nmasters(); i++) {
		char *out = h_redis(i, "PTTL", rkey, NULL);
		if (!out)
			continue;
		long long v = strtoll(out, NULL, 10);
		free(out);
		if (v > 0) {
			cnt++;
			mn = mn < 0 || v < mn ? v : mn;
			mx = v > mx ? v : mx;
		}
	}
	if (min_pttl)
		*min_pttl = mn;
	if (max_pttl)
		*max_pttl = mx;
	return cnt;
}
