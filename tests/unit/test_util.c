/* Unit tests of src/util.c: the number parser that proto.c and cfg.c rely
 * on, listen addresses, tokens and the monotonic clock. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "units.h"

START_TEST(u64_valid)
{
	uint64_t v = 99;
	ck_assert_int_eq(parse_u64("0", 1, 10, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(parse_u64("10", 2, 10, &v), 0);
	ck_assert_uint_eq(v, 10);
	ck_assert_int_eq(parse_u64("18446744073709551615", 20, UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(parse_u64("00000000000000000001", 20, UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 1);
	/* Only len bytes are read. */
	ck_assert_int_eq(parse_u64("123abc", 3, 1000, &v), 0);
	ck_assert_uint_eq(v, 123);
	ck_assert_int_eq(parse_u64("2147483647", 10, 2147483647u, &v), 0);
	ck_assert_uint_eq(v, 2147483647u);
}
END_TEST

/* Leading zeros are decimal digits too, however many. */
START_TEST(u64_leading_zeros)
{
	uint64_t v = 0;
	ck_assert_int_eq(parse_u64("000000000000000000001", 21, UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 1);
	ck_assert_int_eq(parse_u64("0000000000000000000000000", 25, UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(parse_u64("00000000000000000000002147483648", 32, 2147483647u, &v), -1);
}
END_TEST

START_TEST(u64_invalid)
{
	uint64_t v = 0;
	ck_assert_int_eq(parse_u64("", 0, UINT64_MAX, &v), -1);
	ck_assert_int_eq(parse_u64("11", 2, 10, &v), -1);
	ck_assert_int_eq(parse_u64("2147483648", 10, 2147483647u, &v), -1);
	ck_assert_int_eq(parse_u64("18446744073709551616", 20, UINT64_MAX, &v), -1);
	ck_assert_int_eq(parse_u64("99999999999999999999", 20, UINT64_MAX, &v), -1);
	ck_assert_int_eq(parse_u64("-1", 2, UINT64_MAX, &v), -1);
	ck_assert_int_eq(parse_u64("+1", 2, UINT64_MAX, &v), -1);
	ck_assert_int_eq(parse_u64(" 1", 2, UINT64_MAX, &v), -1);
	ck_assert_int_eq(parse_u64("1 ", 2, UINT64_MAX, &v), -1);
	ck_assert_int_eq(parse_u64("1.5", 3, UINT64_MAX, &v), -1);
	ck_assert_int_eq(parse_u64("0x1", 3, UINT64_MAX, &v), -1);
	ck_assert_int_eq(parse_u64("1\0", 2, UINT64_MAX, &v), -1);
	ck_assert_int_eq(parse_u64("1/", 2, UINT64_MAX, &v), -1); /* '/' is '0' - 1 */
	ck_assert_int_eq(parse_u64("1:", 2, UINT64_MAX, &v), -1); /* ':' is '9' + 1 */
}
END_TEST

START_TEST(addr_tcp)
{
	struct addr a;
	ck_assert_ptr_null(addr_parse("127.0.0.1:7390", 0, 0, &a));
	ck_assert_int_eq(a.kind, ADDR_TCP);
	ck_assert_str_eq(a.host, "127.0.0.1");
	ck_assert_int_eq(a.port, 7390);

	ck_assert_ptr_null(addr_parse("localhost:1", 1, 0, &a));
	ck_assert_int_eq(a.kind, ADDR_TCP);
	ck_assert_str_eq(a.host, "localhost");
	ck_assert_int_eq(a.port, 1);

	ck_assert_ptr_null(addr_parse("h:65535", 0, 0, &a));
	ck_assert_int_eq(a.port, 65535);

	ck_assert_ptr_null(addr_parse("[::1]:7390", 0, 0, &a));
	ck_assert_int_eq(a.kind, ADDR_TCP);
	ck_assert_str_eq(a.host, "::1");
	ck_assert_int_eq(a.port, 7390);

	ck_assert_ptr_null(addr_parse("[fe80::1:2]:6379", 1, 0, &a));
	ck_assert_str_eq(a.host, "fe80::1:2");
	ck_assert_int_eq(a.port, 6379);
}
END_TEST

START_TEST(addr_port0)
{
	struct addr a;
	ck_assert_ptr_nonnull(addr_parse("127.0.0.1:0", 1, 0, &a));
	ck_assert_ptr_nonnull(addr_parse("[::1]:0", 1, 0, &a));
	ck_assert_ptr_null(addr_parse("127.0.0.1:0", 0, 1, &a));
	ck_assert_int_eq(a.port, 0);
	ck_assert_str_eq(a.host, "127.0.0.1");
	ck_assert_ptr_null(addr_parse("[::1]:0", 0, 1, &a));
	ck_assert_int_eq(a.port, 0);
}
END_TEST

START_TEST(addr_unix)
{
	struct addr a;
	char s[5 + 120];

	ck_assert_ptr_null(addr_parse("unix:/run/lockd.sock", 1, 0, &a));
	ck_assert_int_eq(a.kind, ADDR_UNIX);
	ck_assert_str_eq(a.path, "/run/lockd.sock");
	ck_assert_ptr_null(addr_parse("unix:rel/x", 1, 0, &a));
	ck_assert_str_eq(a.path, "rel/x");

	ck_assert_str_eq(addr_parse("unix:/run/lockd.sock", 0, 0, &a),
	                 "a unix socket is not allowed here");
	ck_assert_str_eq(addr_parse("unix:", 1, 0, &a), "empty unix socket path");

	/* sun_path holds 107 bytes and the NUL. */
	memcpy(s, "unix:", 5);
	memset(s + 5, 'p', 107);
	s[5 + 107] = '\0';
	ck_assert_ptr_null(addr_parse(s, 1, 0, &a));
	ck_assert_uint_eq(strlen(a.path), 107);
	s[5 + 107] = 'p';
	s[5 + 108] = '\0';
	ck_assert_str_eq(addr_parse(s, 1, 0, &a), "unix socket path too long");
}
END_TEST

START_TEST(addr_invalid)
{
	static const struct {
		const char *s;
		const char *why;
	} bad[] = {
	    {"nohost", "expected HOST:PORT"},
	    {"", "expected HOST:PORT"},
	    {":80", "bad host"},
	    {"[]:80", "bad host"},
	    {"h:", "port must be a number from 1 to 65535"},
	    {"h:65536", "port must be a number from 1 to 65535"},
	    {"1.2.3.4:99999", "port must be a number from 1 to 65535"},
	    {"h:-1", "port must be a number from 1 to 65535"},
	    {"h:+80", "port must be a number from 1 to 65535"},
	    {"h:80 ", "port must be a number from 1 to 65535"},
	    {"h:http", "port must be a number from 1 to 65535"},
	    {"::1:7390", "IPv6 addresses need brackets: [ADDR]:PORT"},
	    {"[::1]", "expected [IPV6]:PORT"},
	    {"[::1]7390", "expected [IPV6]:PORT"},
	    {"[::1:7390", "expected [IPV6]:PORT"},
	    {"[::1]:", "port must be a number from 1 to 65535"},
	    {"[::1]:x", "port must be a number from 1 to 65535"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct addr a;
		const char *why = addr_parse(bad[i].s, 1, 1, &a);
		ck_assert_msg(why != NULL, "\"%s\" accepted", bad[i].s);
		ck_assert_msg(strcmp(why, bad[i].why) == 0, "\"%s\": \"%s\", expected \"%s\"",
		              bad[i].s, why, bad[i].why);
	}
}
END_TEST

START_TEST(addr_host_length)
{
	struct addr a;
	char s[300];

	memset(s, 'h', 255);
	strcpy(s + 255, ":1");
	ck_assert_ptr_null(addr_parse(s, 0, 0, &a));
	ck_assert_uint_eq(strlen(a.host), 255);
	memset(s, 'h', 256);
	strcpy(s + 256, ":1");
	ck_assert_str_eq(addr_parse(s, 0, 0, &a), "bad host");

	s[0] = '[';
	memset(s + 1, 'a', 256);
	strcpy(s + 257, "]:1");
	ck_assert_str_eq(addr_parse(s, 0, 0, &a), "bad host");
}
END_TEST

static int is_token(const char *t)
{
	for (int i = 0; i < TOKEN_LEN; i++)
		if (!((t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f')))
			return 0;
	return t[TOKEN_LEN] == '\0';
}

START_TEST(tokens)
{
	enum { N = 600 }; /* more than one pool of 256 */
	char(*t)[TOKEN_LEN + 1] = malloc(N * sizeof(*t));
	unsigned seen[16] = {0};

	ck_assert_ptr_nonnull(t);
	for (int i = 0; i < N; i++) {
		memset(t[i], 'X', sizeof(t[i]));
		token_new(t[i]);
		ck_assert_msg(is_token(t[i]), "token %d \"%.*s\" is not 32 lowercase hex", i,
		              TOKEN_LEN + 1, t[i]);
		for (int j = 0; j < TOKEN_LEN; j++)
			seen[t[i][j] <= '9' ? t[i][j] - '0' : t[i][j] - 'a' + 10]++;
	}
	for (int i = 0; i < N; i++)
		for (int j = i + 1; j < N; j++)
			ck_assert_msg(strcmp(t[i], t[j]) != 0, "tokens %d and %d are equal", i, j);
	/* 19200 hex digits: each of the 16 values comes up about 1200 times. */
	for (int d = 0; d < 16; d++)
		ck_assert_msg(seen[d] > 900 && seen[d] < 1500, "hex digit %x seen %u times", d,
		              seen[d]);
	free(t);
}
END_TEST

START_TEST(monotonic_clock)
{
	int64_t a = now_us(), b = now_us();
	ck_assert_int_gt(a, 0);
	ck_assert_int_ge(b, a);
}
END_TEST

Suite *util_suite(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("util");

	tcase_add_test(tc, u64_valid);
	tcase_add_test(tc, u64_invalid);
	tcase_add_test(tc, u64_leading_zeros);
	tcase_add_test(tc, addr_tcp);
	tcase_add_test(tc, addr_port0);
	tcase_add_test(tc, addr_unix);
	tcase_add_test(tc, addr_invalid);
	tcase_add_test(tc, addr_host_length);
	tcase_add_test(tc, tokens);
	tcase_add_test(tc, monotonic_clock);
	suite_add_tcase(s, tc);
	return s;
}
