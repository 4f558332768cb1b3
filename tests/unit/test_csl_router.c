/* Unit tests of src/csl_router.c without a network: the seeds csr_new
 * refuses (with the reason cfg gives for a master's address), a router
 * freed with calls it never sent (no callback), and the retry backoff's
 * arithmetic. The router's I/O is tested against a live cluster:
 * tests/integration/test_cluster_router.c. */
#include "config.h"

#include <event2/event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "csl_router.h"
#include "units.h"

static struct csr_router *router(struct event_base *base, const char *const *seeds, int n,
                                 char *err, size_t errlen)
{
	struct csr_cfg cfg = {.seeds = seeds, .n_seeds = n};
	return csr_new(base, &cfg, err, errlen);
}

START_TEST(router_seeds)
{
	struct event_base *base = event_base_new();
	char err[256];
	static const struct {
		const char *seed, *err;
	} bad[] = {
	    {"", "seed 1 (\"\"): expected HOST:PORT"},
	    {"h", "seed 1 (\"h\"): expected HOST:PORT"},
	    {":7000", "seed 1 (\":7000\"): bad host"},
	    {"h:", "seed 1 (\"h:\"): port must be a number from 1 to 65535"},
	    {"h:0", "seed 1 (\"h:0\"): port must be a number from 1 to 65535"},
	    {"h:65536", "seed 1 (\"h:65536\"): port must be a number from 1 to 65535"},
	    {"h:1x", "seed 1 (\"h:1x\"): port must be a number from 1 to 65535"},
	    {"::1:7000", "seed 1 (\"::1:7000\"): IPv6 addresses need brackets: [ADDR]:PORT"},
	    {"[::1]7000", "seed 1 (\"[::1]7000\"): expected [IPV6]:PORT"},
	    {"unix:/tmp/s", "seed 1 (\"unix:/tmp/s\"): a unix socket is not allowed here"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *seeds[] = {bad[i].seed};
		err[0] = '\0';
		ck_assert_msg(router(base, seeds, 1, err, sizeof(err)) == NULL, "\"%s\" accepted",
		              bad[i].seed);
		ck_assert_str_eq(err, bad[i].err);
	}
	/* the second of two is named */
	const char *two[] = {"127.0.0.1:7000", "h:0"};
	ck_assert(router(base, two, 2, err, sizeof(err)) == NULL);
	ck_assert_str_eq(err, "seed 2 (\"h:0\"): port must be a number from 1 to 65535");
	ck_assert(router(base, two, 0, err, sizeof(err)) == NULL);
	ck_assert_str_eq(err, "0 seeds: 1 to 16 needed");
	const char *many[17];
	for (int i = 0; i < 17; i++)
		many[i] = "127.0.0.1:7000";
	ck_assert(router(base, many, 17, err, sizeof(err)) == NULL);
	ck_assert_str_eq(err, "17 seeds: 1 to 16 needed");
	struct csr_router *rt = router(base, many, 16, err, sizeof(err));
	ck_assert_msg(rt != NULL, "%s", err);
	csr_free(rt);
	event_base_free(base);
}
END_TEST

static int called;

static void never_cb(const redisReply *r, void *arg)
{
	called++;
}

/* A router that never ran its loop: no map, nothing covered, calls
 * refused for a slot out of range or without a command; freed with its
 * calls (one detached), none of their callbacks runs. */
START_TEST(router_free_unsent)
{
	struct event_base *base = event_base_new();
	char err[256];
	const char *seeds[] = {"[::1]:7000", "redis-1.example:6379"};
	struct csr_router *rt = router(base, seeds, 2, err, sizeof(err));
	ck_assert_msg(rt != NULL, "%s", err);
	ck_assert_int_eq(csr_covered(rt), 0);
	char host[64];
	int port;
	ck_assert_int_eq(csr_slot_owner(rt, 0, host, sizeof(host), &port), -1);
	uint64_t refreshes = 1;
	ck_assert_int_eq(csr_stats(rt, NULL, 0, &refreshes), 0);
	ck_assert_uint_eq(refreshes, 0);
	ck_assert_str_eq(csr_refresh_error(rt), "");
	const char *argv[] = {"GET", "k"};
	ck_assert(csr_command(rt, CSL_SLOTS, INT64_MAX, never_cb, NULL, 2, argv, NULL) == NULL);
	ck_assert(csr_command(rt, 0, INT64_MAX, never_cb, NULL, 0, argv, NULL) == NULL);
	struct csr_req *q = csr_command(rt, 0, INT64_MAX, never_cb, NULL, 2, argv, NULL);
	ck_assert(q != NULL);
	csr_detach(q);
	for (unsigned s = 0; s < 10; s++)
		ck_assert(csr_command(rt, s * 1000, INT64_MAX, never_cb, NULL, 2, argv,
		                      (const size_t[]){3, 1}) != NULL);
	csr_free(rt);
	event_base_loop(base, EVLOOP_NONBLOCK); /* nothing of the router's is left to run */
	ck_assert_int_eq(called, 0);
	event_base_free(base);
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
	/* cut to end at the deadline; at or past it: fail now */
	ck_assert_int_eq(csr_backoff_us(5, 5, 100, now, now + 30000), 30000);
	ck_assert_int_eq(csr_backoff_us(0, 5, 100, now, now + 1), 1);
	ck_assert_int_eq(csr_backoff_us(0, 5, 100, now, now), -1);
	ck_assert_int_eq(csr_backoff_us(0, 5, 100, now, now - 1), -1);
}
END_TEST

Suite *csl_router_suite(void)
{
	Suite *s = suite_create("csl_router");
	TCase *tc = tcase_create("offline");
	tcase_add_test(tc, router_seeds);
	tcase_add_test(tc, router_free_unsent);
	tcase_add_test(tc, router_backoff);
	suite_add_tcase(s, tc);
	return s;
}
