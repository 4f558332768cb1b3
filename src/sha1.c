/* sha1: SHA-1 (FIPS 180-4), one buffer at a time, in hex (sha1.h). A
 * digest of a secret that must not reach the masters' logs, not a
 * signature: SHA-1's collisions do not matter here, its preimages do, and
 * Redis' scripts (redis.sha1hex) compute the same function on the other
 * side. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "sha1.h"

static uint32_t rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

/* One 64-byte block into the state h. */
static void block(uint32_t h[5], const unsigned char *b)
{
	uint32_t w[80];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
		       (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4];
	for (int i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20) {
			f = (bb & c) | (~bb & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = bb ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (bb & c) | (bb & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = bb ^ c ^ d;
			k = 0xca62c1d6;
		}
		uint32_t t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(bb, 30);
		bb = a;
		a = t;
	}
	h[0] += a;
	h[1] += bb;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void sha1_hex(const void *p, size_t n, char out[SHA1_HEX_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint32_t h[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
	const unsigned char *s = p;
	size_t left = n;
	for (; left >= 64; left -= 64, s += 64)
		block(h, s);
	/* the tail, a 1 bit, zeros, and the length in bits: one or two blocks */
	unsigned char tail[128] = {0};
	memcpy(tail, s, left);
	tail[left] = 0x80;
	size_t len = left + 9 <= 64 ? 64 : 128;
	uint64_t bits = (uint64_t)n * 8;
	for (int i = 0; i < 8; i++)
		tail[len - 1 - i] = (unsigned char)(bits >> (8 * i));
	for (size_t off = 0; off < len; off += 64)
		block(h, tail + off);
	for (int i = 0; i < 20; i++) {
		unsigned char v = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
		out[2 * i] = hex[v >> 4];
		out[2 * i + 1] = hex[v & 15];
	}
	out[SHA1_HEX_LEN] = '\0';
}
