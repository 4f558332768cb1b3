/* Unit tests of src/csl_router.c's pure helpers: a seed's "host:port"
 * and the retry backoff's arithmetic (the router's I/O is tested against
 * a live cluster: tests/integration/test_cluster_router.c). */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "csl_router.h"
#include "units.h"

START_TEST(router_hostport)
{
	char host[CSL_HOST_MAX + 1];
	int port = 0;
	ck_assert_int_eq(csr_parse_hostport("127.0.0.1:7000", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "127.0.0.1");
	ck_assert_int_eq(port, 7000);
	ck_assert_int_eq(csr_parse_hostport("redis-1.example:1", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "redis-1.example");
	ck_assert_int_eq(port, 1);
	ck_assert_int_eq(csr_parse_hostport("[::1]:65535", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "::1");
	ck_assert_int_eq(port, 65535);
	static const char *const bad[] = {"",
	                                  ":7000",
	                                  "h",
	                                  "h:",
	                                  "h:0",
	                                  "h:65536",
	                                  "h:07000",
	                                  "h:-1",
	                                  "h:+1",
	                                  "h:70 00",
	                                  "h:1x",
	                                  "::1:7000",
	                                  "[::1]7000",
	                                  "[::1]:",
	                                  "[]:7000",
	                                  "[::1:7000",
	                                  "h:99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		strcpy(host, "untouched");
		ck_assert_msg(csr_parse_hostport(bad[i], host, sizeof(host), &port) == -1,
		              "\"%s\" accepted", bad[i]);
		ck_assert_str_eq(host, "untouched");
	}
	/* a host of CSL_HOST_MAX bytes fits, one more does not, nor a small buffer */
	static char longest[CSL_HOST_MAX + 16];
	memset(longest, 'a', CSL_HOST_MAX);
	strcpy(longest + CSL_HOST_MAX, ":6379");
	ck_assert_int_eq(csr_parse_hostport(longest, host, sizeof(host), &port), 0);
	ck_assert_uint_eq(strlen(host), CSL_HOST_MAX);
	memset(longest, 'a', CSL_HOST_MAX + 1);
	strcpy(longest + CSL_HOST_MAX + 1, ":6379");
	ck_assert_int_eq(csr_parse_hostport(longest, host, sizeof(host), &port), -1);
	char small[4];
	ck_assert_int_eq(csr_parse_hostport("abcd:1", small, sizeof(small), &port), -1);
	ck_assert_int_eq(csr_parse_hostport("abc:1", small, sizeof(small), &port), 0);
}
END_TEST

START_TEST(router_backoff)
{
	const int64_t now = 1000000000, far = now + 60000000;
	/* 5 ms doubled per attempt up to 100 ms */
	ck_assert_int_eq(csr_backoff_us(0, 5, 100, now, far), 5000);
	ck_assert_int_eq(csr_backoff_us(1, 5, 100, now, far), 10000);
	ck_assert_int_eq(csr_backoff_us(4, 5, 100, now, far), 80000);
	ck_assert_int_eq(csr_backoff_us(5, 5, 100, now, far), 100000);
	ck_assert_int_eq(csr_backoff_us(1000000, 5, 100, now, far), 100000); /* no overflow */
	/* never past the deadline; at or past it: fail now */
	ck_assert_int_eq(csr_backoff_us(5, 5, 100, now, now + 30000), 30000);
	ck_assert_int_eq(csr_backoff_us(0, 5, 100, now, now + 1), 1);
	ck_assert_int_eq(csr_backoff_us(0, 5, 100, now, now), -1);
	ck_assert_int_eq(csr_backoff_us(0, 5, 100, now, now - 1), -1);
}
END_TEST

Suite *csl_router_suite(void)
{
	Suite *s = suite_create("csl_router");
	TCase *tc = tcase_create("pure");
	tcase_add_test(tc, router_hostport);
	tcase_add_test(tc, router_backoff);
	suite_add_tcase(s, tc);
	return s;
}
