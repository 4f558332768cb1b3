/* Unit tests of the Redlock arithmetic (src/quorum.c), as tables of
 * inputs and the verdicts expected: majority, the verdict on partial
 * answers, validity, the quorum-register fence rule and STATUS. */
#include "config.h"

#include <stdint.h>
#include <string.h>

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

/* quorum_verdict: the answers of the counting masters so far. The
 * majority m is that of n masters; yes + busy + waiting <= n, the rest
 * failed, timed out, were down or do not count. */
static const struct {
	int yes, busy, waiting, m;
	enum quorum_state want;
} verdicts[] = {
    /* one master (m 1) */
    {0, 0, 1, 1, Q_PENDING},
    {1, 0, 0, 1, Q_WON},
    {0, 1, 0, 1, Q_BUSY},
    {0, 0, 0, 1, Q_LOST}, /* it failed, or does not count */
    /* two masters: both needed (m 2) */
    {1, 0, 1, 2, Q_PENDING},
    {2, 0, 0, 2, Q_WON},
    {1, 1, 0, 2, Q_BUSY}, /* ours on one, another's on the other */
    {0, 2, 0, 2, Q_BUSY},
    {0, 1, 1, 2, Q_PENDING},
    {1, 0, 0, 2, Q_LOST},
    {0, 1, 0, 2, Q_LOST},
    /* three (m 2) */
    {0, 0, 3, 2, Q_PENDING},
    {1, 0, 2, 2, Q_PENDING},
    {1, 1, 1, 2, Q_PENDING}, /* the last one decides between won and busy */
    {0, 1, 2, 2, Q_PENDING},
    {0, 2, 1, 2, Q_BUSY}, /* the last one cannot make it won */
    {1, 2, 0, 2, Q_BUSY},
    {0, 3, 0, 2, Q_BUSY},
    {0, 1, 1, 2, Q_PENDING}, /* one failed: the last one decides busy or lost */
    {1, 0, 1, 2, Q_PENDING},
    {2, 0, 1, 2, Q_WON}, /* won before the last answer */
    {2, 1, 0, 2, Q_WON},
    {3, 0, 0, 2, Q_WON},
    {1, 0, 0, 2, Q_LOST},
    {0, 1, 0, 2, Q_LOST},
    {0, 0, 1, 2, Q_LOST}, /* two failed: the last one cannot decide */
    {0, 0, 0, 2, Q_LOST},
    /* three, one of them does not count: as two */
    {1, 1, 0, 2, Q_BUSY},
    {1, 0, 0, 2, Q_LOST},
    /* five (m 3) */
    {2, 0, 1, 3, Q_PENDING},
    {2, 2, 1, 3, Q_PENDING},
    {2, 1, 0, 3, Q_BUSY},
    {0, 3, 2, 3, Q_BUSY},
    {2, 0, 0, 3, Q_LOST},
    {1, 1, 1, 3, Q_PENDING},
    {1, 1, 0, 3, Q_LOST},
    {3, 2, 0, 3, Q_WON},
    {3, 0, 2, 3, Q_WON},
    {0, 2, 2, 3, Q_PENDING},
    {0, 2, 0, 3, Q_LOST},
    /* seven (m 4) */
    {3, 0, 1, 4, Q_PENDING},
    {3, 3, 1, 4, Q_PENDING},
    {3, 1, 0, 4, Q_BUSY},
    {3, 0, 0, 4, Q_LOST},
    {4, 3, 0, 4, Q_WON},
    /* a release or a fence write-back: no busy answer */
    {1, 0, 1, 2, Q_PENDING},
    {2, 0, 0, 2, Q_WON},
    {1, 0, 0, 2, Q_LOST},
    {1, 0, 2, 3, Q_PENDING},
    {0, 0, 2, 3, Q_LOST},
    {2, 0, 0, 3, Q_LOST},
};

START_TEST(verdict)
{
	enum quorum_state got = quorum_verdict(verdicts[_i].yes, verdicts[_i].busy,
	                                       verdicts[_i].waiting, verdicts[_i].m);
	ck_assert_msg(got == verdicts[_i].want,
	              "row %d: verdict(yes %d, busy %d, waiting %d, majority %d) = %d, expected %d",
	              _i, verdicts[_i].yes, verdicts[_i].busy, verdicts[_i].waiting, verdicts[_i].m,
	              (int)got, (int)verdicts[_i].want);
}
END_TEST

/* The verdicts redlock.c gave before they moved here (its check_acquire
 * and check_release, copied as they were), against quorum_verdict on
 * every count of up to nine masters. */
static enum quorum_state old_acquire(int yes, int busy, int wait, int maj)
{
	if (yes >= maj)
		return Q_WON;
	if (yes + wait < maj) {
		if (yes + busy >= maj)
			return Q_BUSY;
		else if (yes + busy + wait < maj)
			return Q_LOST;
	}
	return Q_PENDING;
}

static enum quorum_state old_release(int yes, int wait, int maj)
{
	if (yes >= maj)
		return Q_WON;
	if (yes + wait < maj)
		return Q_LOST;
	return Q_PENDING;
}

START_TEST(verdict_as_before)
{
	int rows = 0;
	for (int n = 1; n <= 9; n++) {
		int maj = quorum_majority(n);
		for (int yes = 0; yes <= n; yes++)
			for (int busy = 0; yes + busy <= n; busy++)
				for (int wait = 0; yes + busy + wait <= n; wait++) {
					ck_assert_msg(quorum_verdict(yes, busy, wait, maj) ==
					                  old_acquire(yes, busy, wait, maj),
					              "acquire n %d yes %d busy %d wait %d", n, yes,
					              busy, wait);
					/* a handoff's release side counts yes + busy */
					ck_assert_msg(quorum_verdict(yes + busy, 0, wait, maj) ==
					                  old_release(yes + busy, wait, maj),
					              "release n %d yes %d wait %d", n, yes + busy,
					              wait);
					rows++;
				}
	}
	ck_assert_int_eq(rows, 714); /* sum over n of (n+1)(n+2)(n+3)/6 */
}
END_TEST

static const struct {
	int yes, m, want;
} reached[] = {
    {0, 1, 0}, {1, 1, 1}, {1, 2, 0}, {2, 2, 1}, {3, 2, 1}, {2, 3, 0}, {3, 3, 1}, {5, 3, 1},
};

START_TEST(reached_majority)
{
	ck_assert_msg(quorum_reached(reached[_i].yes, reached[_i].m) == reached[_i].want,
	              "reached(%d, %d) != %d", reached[_i].yes, reached[_i].m, reached[_i].want);
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

/* quorum_valid_until: a lease written at start, seen at now. */
static const struct {
	int64_t lease_ms, start, now;
	double drift;
	int64_t want;
} untils[] = {
    /* 10 s, 5 ms later, 1%: 10000000 - 5000 - 102000 us left */
    {10000, 1000000, 1005000, 0.01, 1005000 + 9893000},
    /* right away: the lease less the drift */
    {30000, 7, 7, 0.01, 7 + 30000000 - 302000},
    {1000, 0, 0, 0, 1000000 - 2000},
    /* exactly used up, and one us before */
    {100, 50, 50 + 100000 - 1000 - 2000, 0.01, 0},
    {100, 50, 50 + 100000 - 1000 - 2001, 0.01, 50 + 100000 - 1000 - 2001 + 1},
    /* long past */
    {100, 0, 200000, 0.01, 0},
    /* shorter than the fixed 2 ms */
    {1, 0, 0, 0, 0},
};

START_TEST(valid_until)
{
	int64_t got = quorum_valid_until(untils[_i].lease_ms, untils[_i].start, untils[_i].now,
	                                 untils[_i].drift);
	ck_assert_msg(got == untils[_i].want, "row %d: valid_until = %lld, expected %lld", _i,
	              (long long)got, (long long)untils[_i].want);
}
END_TEST

/* quorum_kth_largest: at most 5 values. */
static const struct {
	int n, k;
	int64_t v[5], want;
} kths[] = {
    {1, 1, {7}, 7},
    {3, 1, {5, 1, 3}, 5},
    {3, 2, {5, 1, 3}, 3},
    {3, 3, {5, 1, 3}, 1},
    {3, 2, {1, 3, 5}, 3},
    {3, 2, {4, 4, 4}, 4},
    {3, 2, {4, 9, 4}, 4},
    {3, 2, {9, 4, 9}, 9},
    {3, 2, {-2, -1, -2}, -2},
    {3, 1, {-2, -1, -2}, -1},
    {5, 3, {100, 500, 300, 200, 400}, 300},
    {5, 3, {0, 0, 0, 2, 1}, 0},
    {2, 2, {INT64_C(1) << 40, 3}, 3},
};

START_TEST(kth_largest)
{
	int64_t v[5];
	memcpy(v, kths[_i].v, sizeof(v));
	int64_t got = quorum_kth_largest(v, kths[_i].n, kths[_i].k);
	ck_assert_msg(got == kths[_i].want, "row %d: kth_largest(k %d of %d) = %lld, expected %lld",
	              _i, kths[_i].k, kths[_i].n, (long long)got, (long long)kths[_i].want);
}
END_TEST

/* quorum_read_threshold: of n answering out of total, how many must show a
 * hold that a majority (m) may hold; never below 1. */
static const struct {
	int n, total, m, want;
} thresholds[] = {
    {3, 3, 2, 2}, {2, 3, 2, 1}, {1, 3, 2, 1}, {0, 3, 2, 1}, {5, 5, 3, 3}, {4, 5, 3, 2},
    {3, 5, 3, 1}, {4, 4, 3, 3}, {3, 4, 3, 2}, {1, 1, 1, 1}, {7, 7, 4, 4}, {5, 7, 4, 2},
};

START_TEST(read_threshold)
{
	int got = quorum_read_threshold(thresholds[_i].n, thresholds[_i].total, thresholds[_i].m);
	ck_assert_msg(got == thresholds[_i].want, "%d of %d answered, majority %d: got %d, want %d",
	              thresholds[_i].n, thresholds[_i].total, thresholds[_i].m, got,
	              thresholds[_i].want);
}
END_TEST

/* quorum_status: what the counting masters that answered a STATUS said
 * (n of them, of total configured, majority m), and the verdict. */
/* clang-format off */
#define NO -2      /* PTTL of a key that does not exist, and "no shared lease" */
#define FOREVER -1 /* PTTL of a key without expiry */
/* what; n, total, m, pttl, zcard, zttl, npermits, permit_yes;
 * want: ok, held, ttl_ms, holders, shared_ttl_ms, permits */
static const struct {
	const char *what;
	int n, total, m;
	int64_t pttl[5], zcard[5], zttl[5];
	uint32_t npermits;
	int permit_yes[3];
	struct quorum_status want;
} statuses[] = {
	{"nothing held",
	    3, 3, 2, {NO, NO, NO}, {0, 0, 0}, {NO, NO, NO}, 0, {0},
	    {1, 0, 0, 0, 0, 0}},
	{"held on all: the second longest lease",
	    3, 3, 2, {500, 300, 400}, {0}, {NO, NO, NO}, 0, {0},
	    {1, 1, 400, 0, 0, 0}},
	{"held on two",
	    3, 3, 2, {500, NO, 300}, {0}, {NO, NO, NO}, 0, {0},
	    {1, 1, 300, 0, 0, 0}},
	{"held on one only",
	    3, 3, 2, {NO, 900, NO}, {0}, {NO, NO, NO}, 0, {0},
	    {1, 0, 0, 0, 0, 0}},
	{"two of three answered, held on both: the longest (one may miss it)",
	    2, 3, 2, {200, 250}, {0}, {NO, NO}, 0, {0},
	    {1, 1, 250, 0, 0, 0}},
	{"two of three answered, held on one: a majority may hold it",
	    2, 3, 2, {NO, 400}, {0}, {NO, NO}, 0, {0},
	    {1, 1, 400, 0, 0, 0}},
	{"two of three answered, shared on one",
	    2, 3, 2, {NO, NO}, {0, 3}, {NO, 900}, 0, {0},
	    {1, 0, 0, 3, 900, 0}},
	{"two of three answered, permit 1 on one",
	    2, 3, 2, {NO, NO}, {0}, {NO, NO}, 3, {1, 0},
	    {1, 0, 0, 0, 0, 1}},
	{"two of two answered: held on one is not held",
	    2, 2, 2, {NO, 400}, {0}, {NO, NO}, 0, {0},
	    {1, 0, 0, 0, 0, 0}},
	{"four of five answered, held on two",
	    4, 5, 3, {100, NO, 300, NO}, {0}, {NO, NO, NO, NO}, 0, {0},
	    {1, 1, 100, 0, 0, 0}},
	{"three of five answered, held on one",
	    3, 5, 3, {NO, 700, NO}, {0}, {NO, NO, NO}, 0, {0},
	    {1, 1, 700, 0, 0, 0}},
	{"too few answered: nothing counts",
	    1, 3, 2, {900}, {3}, {900}, 3, {2, 2},
	    {0, 0, 0, 0, 0, 0}},
	{"none answered",
	    0, 3, 2, {0}, {0}, {0}, 0, {0},
	    {0, 0, 0, 0, 0, 0}},
	{"no expiry on a majority",
	    3, 3, 2, {FOREVER, FOREVER, NO}, {0}, {NO, NO, NO}, 0, {0},
	    {1, 1, INT32_MAX, 0, 0, 0}},
	{"no expiry on one",
	    3, 3, 2, {FOREVER, 700, NO}, {0}, {NO, NO, NO}, 0, {0},
	    {1, 1, 700, 0, 0, 0}},
	{"zero ms left still holds",
	    3, 3, 2, {0, 0, NO}, {0}, {NO, NO, NO}, 0, {0},
	    {1, 1, 0, 0, 0, 0}},
	{"five masters: the third longest",
	    5, 5, 3, {100, 200, 300, 400, NO}, {0}, {NO, NO, NO, NO, NO}, 0, {0},
	    {1, 1, 200, 0, 0, 0}},
	{"five masters, held on two",
	    5, 5, 3, {100, NO, 300, NO, NO}, {0}, {NO, NO, NO, NO, NO}, 0, {0},
	    {1, 0, 0, 0, 0, 0}},
	{"shared: as many as a majority has",
	    3, 3, 2, {NO, NO, NO}, {2, 1, 0}, {900, 500, NO}, 0, {0},
	    {1, 0, 0, 1, 500, 0}},
	{"shared on one only",
	    3, 3, 2, {NO, NO, NO}, {0, 0, 3}, {NO, NO, 800}, 0, {0},
	    {1, 0, 0, 0, 0, 0}},
	{"shared, no lease left on a majority",
	    3, 3, 2, {NO, NO, NO}, {1, 1, 1}, {NO, NO, 100}, 0, {0},
	    {1, 0, 0, 1, 0, 0}},
	{"shared and a lock (another instance's)",
	    3, 3, 2, {400, 450, NO}, {2, 2, 2}, {600, 700, 650}, 0, {0},
	    {1, 1, 400, 2, 650, 0}},
	{"permit 0 only: the key's lock",
	    3, 3, 2, {300, 300, NO}, {0}, {NO, NO, NO}, 1, {0},
	    {1, 1, 300, 0, 0, 1}},
	{"permit 0 asked, not held",
	    3, 3, 2, {NO, 300, NO}, {0}, {NO, NO, NO}, 1, {0},
	    {1, 0, 0, 0, 0, 0}},
	{"no permits asked: none counted",
	    3, 3, 2, {300, 300, NO}, {0}, {NO, NO, NO}, 0, {0},
	    {1, 1, 300, 0, 0, 0}},
	{"permits 0..3: 0 and 1 held, 2 on one, 3 on all",
	    3, 3, 2, {300, 300, 300}, {0}, {NO, NO, NO}, 4, {2, 1, 3},
	    {1, 1, 300, 0, 0, 3}},
	{"permits held, not permit 0",
	    3, 3, 2, {NO, NO, 300}, {0}, {NO, NO, NO}, 3, {3, 2},
	    {1, 0, 0, 0, 0, 2}},
};
/* clang-format on */

START_TEST(status)
{
	int64_t pttl[5], zcard[5], zttl[5];
	memcpy(pttl, statuses[_i].pttl, sizeof(pttl));
	memcpy(zcard, statuses[_i].zcard, sizeof(zcard));
	memcpy(zttl, statuses[_i].zttl, sizeof(zttl));
	struct quorum_status_in in = {
	    statuses[_i].n,        statuses[_i].total,      pttl, zcard, zttl,
	    statuses[_i].npermits, statuses[_i].permit_yes, NULL, 0};
	struct quorum_status got = quorum_status(&in, statuses[_i].m);
	const struct quorum_status *w = &statuses[_i].want;

	ck_assert_msg(got.ok == w->ok && got.held == w->held && got.ttl_ms == w->ttl_ms &&
	                  got.holders == w->holders && got.shared_ttl_ms == w->shared_ttl_ms &&
	                  got.permits == w->permits,
	              "%s: got ok %d held %d ttl %lld holders %d shared_ttl %lld permits %u, "
	              "expected ok %d held %d ttl %lld holders %d shared_ttl %lld permits %u",
	              statuses[_i].what, got.ok, got.held, (long long)got.ttl_ms, got.holders,
	              (long long)got.shared_ttl_ms, got.permits, w->ok, w->held,
	              (long long)w->ttl_ms, w->holders, (long long)w->shared_ttl_ms, w->permits);
}
END_TEST

/* quorum_leader_unsure: answered of total (majority maj), locked of them
 * hold the lock, the leaders' fences the answers hold, the fence a
 * majority names (0: none). */
static const struct {
	const char *what;
	int answered, total, maj, locked;
	uint64_t fences[5];
	int n;
	uint64_t named;
	int want;
} unsures[] = {
    {"all answered: never unsure", 3, 3, 2, 1, {7}, 1, 0, 0},
    {"all answered, nothing", 3, 3, 2, 0, {0}, 0, 0, 0},
    {"2 of 3, leader on 1: leader or leftover", 2, 3, 2, 1, {7}, 1, 0, 1},
    {"2 of 3, leader on both: named", 2, 3, 2, 2, {7, 7}, 2, 7, 0},
    {"2 of 3, plain lock on 1", 2, 3, 2, 1, {0}, 0, 0, 1},
    {"2 of 3, nothing", 2, 3, 2, 0, {0}, 0, 0, 0},
    {"2 of 3, plain lock on both: a plain hold", 2, 3, 2, 2, {0}, 0, 0, 0},
    {"2 of 3, named 7, a newer 9 on 1", 2, 3, 2, 2, {7, 9}, 2, 7, 1},
    {"2 of 3, named 9, an older 7 on 1", 2, 3, 2, 2, {9, 7}, 2, 9, 0},
    {"4 of 5 (t 2), leader on 1", 4, 5, 3, 1, {7}, 1, 0, 0},
    {"4 of 5 (t 2), leader on 2", 4, 5, 3, 2, {7, 7}, 2, 0, 1},
    {"4 of 5 (t 2), two leaders on 1 each", 4, 5, 3, 2, {7, 8}, 2, 0, 1},
    {"3 of 5 (t 1), plain lock on 1", 3, 5, 3, 1, {0}, 0, 0, 1},
    {"4 of 5, lock on 3: a plain hold, no leader", 4, 5, 3, 3, {0}, 0, 0, 0},
};

START_TEST(leader_unsure)
{
	int got = quorum_leader_unsure(unsures[_i].answered, unsures[_i].total, unsures[_i].maj,
	                               unsures[_i].locked, unsures[_i].fences, unsures[_i].n,
	                               unsures[_i].named);
	ck_assert_msg(got == unsures[_i].want, "%s: got %d, want %d", unsures[_i].what, got,
	              unsures[_i].want);
}
END_TEST

/* quorum_common: the holders that t masters list, each master's list one
 * after another ("|" parts them here only for the reader). */
static const struct {
	const char *what;
	const char *v[9];
	int n, t;
	int want;
} commons[] = {
    {"granted on different majorities: a on 0|0 1, b on 1|1 2", {"a", "a", "b", "b"}, 4, 2, 2},
    {"one on a single master is no holder", {"a", "b", "c"}, 3, 2, 0},
    {"threshold 1 (two of three answered)", {"b", "a", "a"}, 3, 1, 2},
    {"all three on all three", {"c", "b", "a", "a", "b", "c", "c", "a", "b"}, 9, 2, 3},
    {"five masters, threshold 3", {"a", "a", "b", "a", "b"}, 5, 3, 1},
    {"nothing listed", {NULL}, 0, 2, 0},
};

START_TEST(common)
{
	const char *v[9];
	memcpy(v, commons[_i].v, sizeof(v));
	int got = quorum_common(v, commons[_i].n, commons[_i].t);
	ck_assert_msg(got == commons[_i].want, "%s: got %d, want %d", commons[_i].what, got,
	              commons[_i].want);
}
END_TEST

/* STATUS of a key whose two readers a different majority granted: the
 * counts (1, 2, 1) say one holder, the lists say two. */
START_TEST(status_members)
{
	int64_t pttl[3] = {NO, NO, NO}, zcard[3] = {1, 2, 1}, zttl[3] = {900, 950, 800};
	const char *m[4] = {"tok-a", "tok-a", "tok-b", "tok-b"};
	struct quorum_status_in in = {3, 3, pttl, zcard, zttl, 0, NULL, NULL, 0};
	ck_assert_int_eq(quorum_status(&in, 2).holders, 1); /* unlisted: counts alone */
	memcpy(pttl, (int64_t[3]){NO, NO, NO}, sizeof(pttl));
	in.members = m;
	in.nmembers = 4;
	struct quorum_status got = quorum_status(&in, 2);
	ck_assert_int_eq(got.holders, 2);
	ck_assert_int_eq(got.shared_ttl_ms, 900);
}
END_TEST

/* quorum_agreed: the fence a majority of a resumable hold's records hold,
 * whatever the others say (a master that answered a grant too late to be
 * corrected, or nothing there). */
static const struct {
	const char *what;
	uint64_t v[5];
	int n, maj;
	uint64_t want;
} agreed[] = {
    {"all agree", {7, 7, 7}, 3, 2, 7},
    {"a late master ahead", {7, 7, 9}, 3, 2, 7},
    {"a late master ahead, listed first", {9, 7, 7}, 3, 2, 7},
    {"a late master behind", {7, 5, 7}, 3, 2, 7},
    {"one missing", {7, 0, 7}, 3, 2, 7},
    {"two read, they disagree", {7, 9, 0}, 3, 2, 0},
    {"all differ", {5, 7, 9}, 3, 2, 0},
    {"one of one", {7}, 1, 1, 7},
    {"nothing anywhere", {0, 0, 0}, 3, 2, 0},
    {"zeros never agree", {0, 0, 7}, 3, 2, 0},
    {"five: three agree", {9, 7, 7, 8, 7}, 5, 3, 7},
    {"five: two and two", {9, 7, 7, 9, 0}, 5, 3, 0},
    {"large values", {UINT64_MAX - 1, UINT64_MAX - 1, UINT64_MAX}, 3, 2, UINT64_MAX - 1},
};

START_TEST(fence_agreed_table)
{
	for (size_t i = 0; i < sizeof(agreed) / sizeof(agreed[0]); i++) {
		uint64_t got = quorum_agreed(agreed[i].v, agreed[i].n, agreed[i].maj);
		ck_assert_msg(got == agreed[i].want, "%s: got %llu, expected %llu", agreed[i].what,
		              (unsigned long long)got, (unsigned long long)agreed[i].want);
	}
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
	tcase_add_loop_test(tc, verdict, 0, (int)(sizeof(verdicts) / sizeof(verdicts[0])));
	tcase_add_test(tc, verdict_as_before);
	tcase_add_loop_test(tc, reached_majority, 0, (int)(sizeof(reached) / sizeof(reached[0])));
	tcase_add_test(tc, validity);
	tcase_add_test(tc, validity_not_positive);
	tcase_add_loop_test(tc, valid_until, 0, (int)(sizeof(untils) / sizeof(untils[0])));
	tcase_add_loop_test(tc, kth_largest, 0, (int)(sizeof(kths) / sizeof(kths[0])));
	tcase_add_loop_test(tc, status, 0, (int)(sizeof(statuses) / sizeof(statuses[0])));
	tcase_add_loop_test(tc, common, 0, (int)(sizeof(commons) / sizeof(commons[0])));
	tcase_add_test(tc, status_members);
	tcase_add_loop_test(tc, leader_unsure, 0, (int)(sizeof(unsures) / sizeof(unsures[0])));
	tcase_add_loop_test(tc, read_threshold, 0,
	                    (int)(sizeof(thresholds) / sizeof(thresholds[0])));
	tcase_add_test(tc, fence_agreeing);
	tcase_add_test(tc, fence_notes_example);
	tcase_add_test(tc, fence_agreed_table);
	tcase_add_test(tc, fence_all_different);
	tcase_add_test(tc, fence_ties);
	tcase_add_test(tc, fence_five_masters);
	tcase_add_test(tc, fence_large_values);
	suite_add_tcase(s, tc);
	return s;
}
