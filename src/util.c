/* util: monotonic time, random tokens, strict number and address parsing,
 * a copy of bytes. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Tokens come from a buffered getrandom() pool: one syscall per 256 tokens. */
void token_new(char *out)
{
	static unsigned char pool[16 * 256];
	static size_t used = sizeof(pool);
	static const char hex[] = "0123456789abcdef";

	if (used + 16 > sizeof(pool)) {
		size_t got = 0;
		while (got < sizeof(pool)) {
			ssize_t r = getrandom(pool + got, sizeof(pool) - got, 0);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				abort(); /* no entropy means no safe tokens */
			}
			got += (size_t)r;
		}
		used = 0;
	}
	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[pool[used + i] >> 4];
		out[2 * i + 1] = hex[pool[used + i] & 15];
	}
	used += 16;
	out[TOKEN_LEN] = '\0';
}

char *bytes_dup(const char *p, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, p, n);
		d[n] = '\0';
	}
	return d;
}

int parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0)
		return -1;
	while (len > 1 && *s == '0') { /* leading zeros are still decimal digits */
		s++;
		len--;
	}
	if (len > 20)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

const char *addr_parse(const char *s, int allow_unix, int allow_port0, struct addr *out)
{
	const char *colon;
	size_t hlen;
	uint64_t port;

	memset(out, 0, sizeof(*out));
	if (strncmp(s, "unix:", 5) == 0) {
		if (!allow_unix)
			return "a unix socket is not allowed here";
		if (s[5] == '\0')
			return "empty unix socket path";
		if (strlen(s + 5) >= sizeof(out->path))
			return "unix socket path too long";
		out->kind = ADDR_UNIX;
		strcpy(out->path, s + 5);
		return NULL;
	}
	out->kind = ADDR_TCP;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':')
			return "expected [IPV6]:PORT";
		hlen = (size_t)(close - s - 1);
		if (hlen == 0 || hlen >= sizeof(out->host))
			return "bad host";
		memcpy(out->host, s + 1, hlen);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return "expected HOST:PORT";
		hlen = (size_t)(colon - s);
		if (hlen == 0 || hlen >= sizeof(out->host))
			return "bad host";
		if (memchr(s, ':', hlen))
			return "IPv6 addresses need brackets: [ADDR]:PORT";
		memcpy(out->host, s, hlen);
	}
	if (parse_u64(colon + 1, strlen(colon + 1), 65535, &port) != 0)
		return "port must be a number from 1 to 65535";
	if (port == 0 && !allow_port0)
		return "port must be a number from 1 to 65535";
	out->port = (int)port;
	return NULL;
}
