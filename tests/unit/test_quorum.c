/* Unit tests of the Redlock arithmetic (src/quorum.c): majority, the
 * decision on partial answers, validity and the quorum-register fence rule. */
#include "config.h"

#include <stdint.h>

#include "quorum.h"
#include "units.h"

START_TEST(majority)
{
	static const int want[] = {0, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8};
	for (int n = 1; n < (int)(sizeof(want) / sizeof(want[0])); n++)
		ck_assert_msg(quorum_majority(n) == want[n], "majority(%d) = %d, expected %d", n,
		              quorum_majority(n), want[n]);
}
END_TEST

static const struct {
	int yes, out, n;
	enum quorum_state want;
} decisions[] = {
    /* one master */
    {0, 0, 1, Q_PENDING},
    {1, 0, 1, Q_WON},
    {0, 1, 1, Q_LOST},
    /* two masters: both needed */
    {1, 0, 2, Q_PENDING},
    {2, 0, 2, Q_WON},
    {1, 1, 2, Q_LOST},
    {0, 1, 2, Q_LOST},
    /* three */
    {0, 0, 3, Q_PENDING},
    {1, 0, 3, Q_PENDING},
    {0, 1, 3, Q_PENDING},
    {1, 1, 3, Q_PENDING},
    {2, 0, 3, Q_WON},
    {2, 1, 3, Q_WON},
    {3, 0, 3, Q_WON},
    {1, 2, 3, Q_LOST},
    {0, 2, 3, Q_LOST},
    {0, 3, 3, Q_LOST},
    /* four: majority 3 */
    {2, 1, 4, Q_PENDING},
    {2, 2, 4, Q_LOST},
    {3, 1, 4, Q_WON},
    /* five: majority 3, two may be out */
    {2, 2, 5, Q_PENDING},
    {0, 2, 5, Q_PENDING},
    {2, 3, 5, Q_LOST},
    {3, 2, 5, Q_WON},
    {3, 0, 5, Q_WON},
    /* seven: majority 4 */
    {3, 3, 7, Q_PENDING},
    {3, 4, 7, Q_LOST},
    {4, 3, 7, Q_WON},
};

START_TEST(decide)
{
	enum quorum_state got =
	    quorum_decide(decisions[_i].yes, decisions[_i].out, decisions[_i].n);
	ck_assert_msg(got == decisions[_i].want, "decide(yes %d, out %d, n %d) = %d, expected %d",
	              decisions[_i].yes, decisions[_i].out, decisions[_i].n, (int)got,
	              (int)decisions[_i].want);
}
END_TEST

START_TEST(validity)
{
	/* lease 10 s, 5 ms spent, drift 1%: 10000000 - 5000 - (100000 + 2000) us */
	ck_assert_int_eq(quorum_validity_us(10000, 5000, 0.01), 10000000 - 5000 - 102000);
	ck_assert_int_eq(quorum_validity_us(10000, 5000, 0.01), 9893000);
	/* the default lease */
	ck_assert_int_eq(quorum_validity_us(30000, 0, 0.01), 30000000 - 302000);
	/* no drift still leaves the 2 ms */
	ck_assert_int_eq(quorum_validity_us(1000, 0, 0), 1000000 - 2000);
	ck_assert_int_eq(quorum_validity_us(1000, 123, 0.5), 1000000 - 123 - 500000 - 2000);
	/* the largest lease does not overflow */
	ck_assert_int_eq(quorum_validity_us(2147483647, 0, 0.01),
	                 INT64_C(2147483647000) - INT64_C(21474836470) - 2000);
}
END_TEST

START_TEST(validity_not_positive)
{
	/* elapsed beyond the lease */
	ck_assert_int_lt(quorum_validity_us(100, 200000, 0.01), 0);
	/* exactly used up: zero, which must not be answered OK */
	ck_assert_int_eq(quorum_validity_us(100, 100000 - 1000 - 2000, 0.01), 0);
	ck_assert_int_eq(quorum_validity_us(100, 100000 - 1000 - 2001, 0.01), 1);
	/* a lease shorter than the fixed 2 ms */
	ck_assert_int_lt(quorum_validity_us(1, 0, 0), 0);
}
END_TEST

START_TEST(fence_agreeing)
{
	const int64_t c3[] = {5, 5, 5}, c2[] = {9, 9}, c1[] = {7};
	int wb = -1;

	ck_assert_int_eq(quorum_fence(c3, 3, 2, &wb), 5);
	ck_assert_int_eq(wb, 0);
	wb = -1;
	ck_assert_int_eq(quorum_fence(c2, 2, 2, &wb), 9);
	ck_assert_int_eq(wb, 0);
	wb = -1;
	ck_assert_int_eq(quorum_fence(c1, 1, 1, &wb), 7);
	ck_assert_int_eq(wb, 0);
}
END_TEST

/* REDLOCK-NOTES: grant from {A, B}, A returns 6 while B is at 4. */
START_TEST(fence_notes_example)
{
	const int64_t ab[] = {6, 4}, ba[] = {4, 6};
	int wb = -1;

	ck_assert_int_eq(quorum_fence(ab, 2, 2, &wb), 6);
	ck_assert_int_eq(wb, 1);
	wb = -1;
	ck_assert_int_eq(quorum_fence(ba, 2, 2, &wb), 6);
	ck_assert_int_eq(wb, 1);
}
END_TEST

START_TEST(fence_all_different)
{
	const int64_t a[] = {4, 5, 6}, b[] = {6, 5, 4}, c[] = {5, 6, 4};
	int wb = -1;

	ck_assert_int_eq(quorum_fence(a, 3, 2, &wb), 6);
	ck_assert_int_eq(wb, 1);
	wb = -1;
	ck_assert_int_eq(quorum_fence(b, 3, 2, &wb), 6);
	ck_assert_int_eq(wb, 1);
	wb = -1;
	ck_assert_int_eq(quorum_fence(c, 3, 2, &wb), 6);
	ck_assert_int_eq(wb, 1);
}
END_TEST

/* Enough masters already at the maximum, in any position: no writeback. */
START_TEST(fence_ties)
{
	const int64_t t1[] = {6, 6, 4}, t2[] = {6, 4, 6}, t3[] = {4, 6, 6};
	const int64_t low[] = {4, 4, 6}; /* the tie is below the maximum */
	int wb = -1;

	ck_assert_int_eq(quorum_fence(t1, 3, 2, &wb), 6);
	ck_assert_int_eq(wb, 0);
	wb = -1;
	ck_assert_int_eq(quorum_fence(t2, 3, 2, &wb), 6);
	ck_assert_int_eq(wb, 0);
	wb = -1;
	ck_assert_int_eq(quorum_fence(t3, 3, 2, &wb), 6);
	ck_assert_int_eq(wb, 0);
	wb = -1;
	ck_assert_int_eq(quorum_fence(low, 3, 2, &wb), 6);
	ck_assert_int_eq(wb, 1);
}
END_TEST

/* Five masters (majority 3): two at the maximum are not enough. */
START_TEST(fence_five_masters)
{
	const int64_t two[] = {9, 9, 8}, three[] = {9, 8, 9, 9}, all[] = {3, 3, 3, 3, 3};
	int wb = -1;

	ck_assert_int_eq(quorum_fence(two, 3, 3, &wb), 9);
	ck_assert_int_eq(wb, 1);
	wb = -1;
	ck_assert_int_eq(quorum_fence(three, 4, 3, &wb), 9);
	ck_assert_int_eq(wb, 0);
	wb = -1;
	ck_assert_int_eq(quorum_fence(all, 5, 3, &wb), 3);
	ck_assert_int_eq(wb, 0);
}
END_TEST

START_TEST(fence_large_values)
{
	const int64_t c[] = {INT64_C(1) << 40, (INT64_C(1) << 40) + 1};
	int wb = -1;
	ck_assert_int_eq(quorum_fence(c, 2, 2, &wb), (INT64_C(1) << 40) + 1);
	ck_assert_int_eq(wb, 1);
}
END_TEST

Suite *quorum_suite(void)
{
	Suite *s = suite_create("quorum");
	TCase *tc = tcase_create("quorum");

	tcase_add_test(tc, majority);
	tcase_add_loop_test(tc, decide, 0, (int)(sizeof(decisions) / sizeof(decisions[0])));
	tcase_add_test(tc, validity);
	tcase_add_test(tc, validity_not_positive);
	tcase_add_test(tc, fence_agreeing);
	tcase_add_test(tc, fence_notes_example);
	tcase_add_test(tc, fence_all_different);
	tcase_add_test(tc, fence_ties);
	tcase_add_test(tc, fence_five_masters);
	tcase_add_test(tc, fence_large_values);
	suite_add_tcase(s, tc);
	return s;
}
