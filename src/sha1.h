/* sha1: SHA-1 (FIPS 180-4) of a buffer, in hex. Used for a session's
 * digest (resume.c): only a digest of a session's secret ever leaves
 * lockd, never the secret. Pure: no state, no I/O (tests/unit). */
#ifndef LOCKD_SHA1_H
#define LOCKD_SHA1_H

#include <stddef.h>

#define SHA1_HEX_LEN 40

/* The SHA-1 of the n bytes at p, as 40 lowercase hex characters and a NUL. */
void sha1_hex(const void *p, size_t n, char out[SHA1_HEX_LEN + 1]);

#endif
