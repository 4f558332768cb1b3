/* util: monotonic time, random tokens, strict number and address parsing,
 * a copy of bytes. */
#ifndef LOCKD_UTIL_H
#define LOCKD_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define TOKEN_LEN 32 /* hex characters of a lock token (128 random bits) */

/* Microseconds on CLOCK_MONOTONIC: all deadlines and validity use this. */
int64_t now_us(void);

/* Fill out[TOKEN_LEN] with random hex and NUL-terminate (out has TOKEN_LEN+1). */
void token_new(char *out);

/* A malloc'd copy of p's n bytes, NUL-terminated (p may hold NULs), or NULL. */
char *bytes_dup(const char *p, size_t n);

/* Decimal digits only, no sign, value <= max. 0 on success, -1 otherwise. */
int parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out);

enum addr_kind {
	ADDR_TCP,  /* host and port */
	ADDR_UNIX, /* filesystem path */
};

struct addr {
	enum addr_kind kind;
	char host[256]; /* IPv4/IPv6 literal or name, without brackets */
	int port;
	char path[108]; /* sun_path */
};

/* "HOST:PORT", "[V6]:PORT" or, when allow_unix, "unix:PATH". Port 0 is
 * allowed only when allow_port0. Returns NULL or a message saying why not. */
const char *addr_parse(const char *s, int allow_unix, int allow_port0, struct addr *out);

#endif
