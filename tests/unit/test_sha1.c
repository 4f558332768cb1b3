/* sha1: the FIPS 180 and NIST example vectors, the block-boundary lengths
 * (55, 56, 63, 64 bytes: one or two padding blocks), and the digest
 * resume.c sends for a session (what redis.sha1hex computes on a master). */
#include "config.h"

#include <string.h>

#include "sha1.h"
#include "units.h"

static const struct {
	const char *in;
	const char *want;
} vectors[] = {
    {"", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
    {"abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
     "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
    {"The quick brown fox jumps over the lazy dog", "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"},
};

START_TEST(known_vectors)
{
	char out[SHA1_HEX_LEN + 1];
	sha1_hex(vectors[_i].in, strlen(vectors[_i].in), out);
	ck_assert_str_eq(out, vectors[_i].want);
}
END_TEST

/* 55 bytes pad into one block, 56 into two; 64 is a whole block. */
START_TEST(block_boundaries)
{
	static const struct {
		size_t n;
		const char *want;
	} lens[] = {
	    {55, "c1c8bbdc22796e28c0e15163d20899b65621d65a"},
	    {56, "c2db330f6083854c99d4b5bfb6e8f29f201be699"},
	    {63, "03f09f5b158a7a8cdad920bddc29b81c18a551f5"},
	    {64, "0098ba824b5c16427bd7a1122a5a442a25ec644d"},
	};
	char buf[64], out[SHA1_HEX_LEN + 1];
	memset(buf, 'a', sizeof(buf));
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		sha1_hex(buf, lens[i].n, out);
		ck_assert_msg(strcmp(out, lens[i].want) == 0, "%zu x 'a': %s, expected %s",
		              lens[i].n, out, lens[i].want);
	}
}
END_TEST

/* A million 'a': many blocks (the NIST long message). */
START_TEST(million_a)
{
	static char buf[1000000];
	char out[SHA1_HEX_LEN + 1];
	memset(buf, 'a', sizeof(buf));
	sha1_hex(buf, sizeof(buf), out);
	ck_assert_str_eq(out, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}
END_TEST

Suite *sha1_suite(void)
{
	Suite *s = suite_create("sha1");
	TCase *tc = tcase_create("sha1");
	tcase_add_loop_test(tc, known_vectors, 0, (int)(sizeof(vectors) / sizeof(vectors[0])));
	tcase_add_test(tc, block_boundaries);
	tcase_add_test(tc, million_a);
	suite_add_tcase(s, tc);
	return s;
}
