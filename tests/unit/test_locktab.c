/* locktab: queueing, handoff, retry, LOST, batching and freeing key
 * entries, in process against a fake redlock (fake_redlock.c) and a real
 * libevent loop: no socket, no Redis (the fixture: locktab_fix.h; shared
 * holds and permits: test_locktab_shared.c). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_redlock.h"
#include "locktab_fix.h"
#include "proto.h"
#include "units.h"
#include "util.h"

START_TEST(lock_unlock)
{
	struct tclient *a = ltf_client(1);
	ltf_req(a, "LOCK k WAIT 1000");
	ck_assert(a->blocked);
	struct rl_call *c = fake_oldest(FK_ACQUIRE);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->lease_ms, 3000);
	ck_assert_int_eq(c->will_wait, 1);
	ck_assert_str_eq(c->old, ""); /* not a handoff */
	fake_acquire_done(c, RL_OK, 7, 2900, 0);
	ltf_want(a, "OK 7");
	ck_assert_uint_eq(locktab_keys(), 1);
	ltf_req(a, "LOCK k");
	ltf_want(a, "OK 7"); /* reentrant: no call */
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ltf_req(a, "UNLOCK k");
	ltf_want(a, "OK 1");
	ltf_req(a, "UNLOCK k");
	ck_assert(a->blocked);
	c = fake_oldest(FK_RELEASE);
	ck_assert_ptr_nonnull(c);
	fake_release_done(c, RL_OK);
	ltf_want(a, "OK 0");
	ck_assert_uint_eq(locktab_keys(), 0);
	ltf_req(a, "UNLOCK k");
	ltf_want(a, MSG_NOT_HELD);
	ltf_leave(a);
}
END_TEST

/* Only the head waiter asks the masters; a release hands the key over
 * with one call, and the UNLOCK is answered by that call's release side. */
START_TEST(fifo_handoff)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2), *c = ltf_client(3);
	ltf_grant(a, "LOCK k", 1);
	ltf_req(b, "LOCK k");
	ltf_req(c, "LOCK k");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ck_assert(lt_waiting(&b->lt) && lt_waiting(&c->lt));
	ltf_req(a, "UNLOCK k");
	struct rl_call *h = fake_oldest(FK_ACQUIRE);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 1);
	ck_assert_str_ne(h->old, ""); /* swaps a's token */
	fake_acquire_done(h, RL_OK, 2, 10000, 0);
	ltf_want(b, "OK 2");
	ck_assert(a->blocked); /* its release verdict is still out */
	fake_release_done(h, RL_OK);
	ltf_want(a, "OK 0");
	ck_assert(c->blocked);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ltf_leave(a);
	ltf_leave(b);
	ltf_leave(c);
}
END_TEST

/* de6c85d: the handoff's release verdict comes after the new holder let
 * go; it alone can free the entry. */
START_TEST(handoff_verdict_last_frees)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2);
	ltf_grant(a, "LOCK k", 1);
	ltf_req(b, "LOCK k");
	ltf_req(a, "UNLOCK k");
	struct rl_call *h = fake_oldest(FK_ACQUIRE);
	fake_acquire_done(h, RL_OK, 2, 10000, 0);
	ltf_want(b, "OK 2");
	ltf_req(b, "UNLOCK k");
	fake_release_done(fake_oldest(FK_RELEASE), RL_OK);
	ltf_want(b, "OK 0");
	ck_assert_uint_eq(locktab_keys(), 1); /* a still waits for its verdict */
	fake_release_done(h, RL_QUORUM);
	ltf_want(a, MSG_RELEASE_UNCONFIRMED);
	ck_assert_uint_eq(locktab_keys(), 0);
	ltf_leave(a);
	ltf_leave(b);
}
END_TEST

/* a92fd67: a failed attempt answers and frees the entry it used. */
START_TEST(busy_frees_entry)
{
	struct tclient *a = ltf_client(1);
	ltf_req(a, "TRYLOCK k");
	fake_acquire_done(fake_oldest(FK_ACQUIRE), RL_BUSY, 0, 0, 500);
	ltf_want(a, "BUSY");
	ck_assert_uint_eq(locktab_keys(), 0);
	ltf_req(a, "LOCK k WAIT 0");
	fake_acquire_done(fake_oldest(FK_ACQUIRE), RL_QUORUM, 0, 0, -1);
	ltf_want(a, MSG_NO_QUORUM);
	ck_assert_uint_eq(locktab_keys(), 0);
	ltf_leave(a);
}
END_TEST

START_TEST(trylock_never_jumps_queue)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2), *c = ltf_client(3);
	ltf_grant(a, "LOCK k", 1);
	ltf_req(b, "LOCK k");
	ltf_req(c, "TRYLOCK k");
	ltf_want(c, "BUSY");
	ltf_req(c, "LOCK k WAIT 0");
	ltf_want(c, "TIMEOUT");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ltf_leave(a);
	ltf_leave(b);
	ltf_leave(c);
}
END_TEST

/* Busy elsewhere: asleep until the lease it saw ends, or a release notice. */
START_TEST(retry_at_lease_end_or_notice)
{
	struct tclient *a = ltf_client(1);
	ltf_req(a, "LOCK k WAIT 5000");
	fake_acquire_done(fake_oldest(FK_ACQUIRE), RL_BUSY, 0, 0, 40);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ck_assert(lt_waiting(&a->lt));
	ltf_run(100);
	struct rl_call *c = fake_oldest(FK_ACQUIRE);
	ck_assert_msg(c != NULL, "no retry after the lease seen (40 ms) ended");
	fake_acquire_done(c, RL_BUSY, 0, 0, 60000);
	ltf_run(20);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	lt_notice("k", 1);
	c = fake_oldest(FK_ACQUIRE);
	ck_assert_msg(c != NULL, "a release notice did not wake the waiter");
	fake_acquire_done(c, RL_OK, 9, 10000, 0);
	ltf_want(a, "OK 9");
	ltf_leave(a);
}
END_TEST

/* No majority: back off and try again until WAIT ends, then ERR QUORUM. */
START_TEST(quorum_until_wait_ends)
{
	struct tclient *a = ltf_client(1);
	ltf_req(a, "LOCK k WAIT 400");
	int tries = 0;
	int64_t t0 = now_us();
	while (a->blocked && now_us() - t0 < 2000000) {
		struct rl_call *c = fake_oldest(FK_ACQUIRE);
		if (c) {
			tries++;
			fake_acquire_done(c, RL_QUORUM, 0, 0, -1);
		}
		ltf_run(10);
	}
	ltf_want(a, MSG_NO_QUORUM);
	ck_assert_int_ge((now_us() - t0) / 1000, 400); /* never before WAIT ends */
	ck_assert_int_ge(tries, 2);
	ck_assert_int_le(tries, 10); /* backed off (50-150 ms), not spinning */
	/* An attempt may still be out when WAIT ended: its verdict frees the
	 * entry, whatever it is. */
	struct rl_call *late = fake_oldest(FK_ACQUIRE);
	if (late) {
		ck_assert_uint_eq(locktab_keys(), 1);
		fake_acquire_done(late, RL_OK, 3, 10000, 0);
		ck_assert_int_eq(fake_pending(FK_RELEASE), 1); /* given back */
	}
	ck_assert_uint_eq(locktab_keys(), 0);
	ltf_leave(a);
}
END_TEST

START_TEST(lost_at_validity_end)
{
	struct tclient *a = ltf_client(1);
	ltf_req(a, "LOCK k TTL 5000");
	fake_acquire_done(fake_oldest(FK_ACQUIRE), RL_OK, 4, 60, 0);
	ltf_want(a, "OK 4");
	ltf_run(30);
	ck_assert_int_eq(a->nout, 1);
	ltf_run(60);
	ck_assert_str_eq(ltf_last(a), "LOST k 4");
	ck_assert_int_eq(a->replies, 1);           /* an event, not a reply */
	ck_assert_int_eq(fake_released_keys(), 1); /* cleared on the masters */
	ltf_req(a, "HELD");
	ltf_want(a, "END");
	ck_assert_uint_eq(locktab_keys(), 0);
	ltf_leave(a);
}
END_TEST

/* A waiter that leaves while its attempt is out: the grant is given back. */
START_TEST(waiter_leaves_during_acquire)
{
	struct tclient *a = ltf_client(1);
	ltf_req(a, "LOCK k");
	struct rl_call *c = fake_oldest(FK_ACQUIRE);
	lt_client_end(&a->lt);
	fake_acquire_done(c, RL_OK, 5, 10000, 0);
	ck_assert_int_eq(a->replies, 0);
	ck_assert_int_eq(fake_pending(FK_RELEASE), 1);
	ck_assert_uint_eq(locktab_keys(), 0);
	free(a);
}
END_TEST

START_TEST(extend_within_drift)
{
	struct tclient *a = ltf_client(1);
	ltf_grant(a, "LOCK k TTL 5000", 1);
	ltf_req(a, "EXTEND k 2");
	ck_assert_msg(strncmp(ltf_last(a), "ERR ARG ", 8) == 0, "%s", ltf_last(a));
	ck_assert_int_eq(fake_pending(FK_RENEW), 0);
	ltf_req(a, "TRYLOCK j TTL 2");
	ck_assert_msg(strncmp(ltf_last(a), "ERR ARG ", 8) == 0, "%s", ltf_last(a));
	ltf_req(a, "EXTEND j 1000");
	ltf_want(a, MSG_NOT_HELD);
	ltf_leave(a);
}
END_TEST

/* An EXTEND to a shorter lease may land on some masters whatever its
 * verdict: the validity ends with that lease, even before the verdict. */
START_TEST(failed_extend_shortens)
{
	struct tclient *a = ltf_client(1);
	ltf_grant(a, "LOCK k TTL 10000", 3);
	ltf_req(a, "EXTEND k 80");
	struct rl_call *c = fake_oldest(FK_RENEW);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->lease_ms, 80);
	ltf_run(120);
	ck_assert_str_eq(a->out[a->nout - 1], "LOST k 3");
	fake_renew_done(c, 0, 0);
	ltf_want(a, "ERR NOTHELD the lock was lost");
	ck_assert_uint_eq(locktab_keys(), 0);
	ltf_leave(a);
}
END_TEST

/* A verdict that comes after the validity ended is a loss, whatever it
 * says, even before the deadline timer ran (review finding 5): a
 * renewal's and an EXTEND's. */
START_TEST(late_verdicts_are_lost)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2);
	ltf_req(a, "LOCK k");
	fake_acquire_done(fake_oldest(FK_ACQUIRE), RL_OK, 1, 1200, 0);
	ltf_want(a, "OK 1");
	ltf_run(1100); /* the watchdog renews after a third of the lease */
	struct rl_call *c = fake_oldest(FK_RENEW);
	ck_assert_ptr_nonnull(c);
	usleep(150 * 1000); /* past the validity, the loop not run */
	fake_renew_done(c, 1, 10000);
	ltf_run(10);
	ck_assert_str_eq(ltf_last(a), "LOST k 1");
	ltf_grant(b, "LOCK j TTL 10000", 2);
	ltf_req(b, "EXTEND j 100");
	c = fake_oldest(FK_RENEW);
	usleep(120 * 1000); /* the 100 ms lease written may have lapsed */
	fake_renew_done(c, 1, 9000);
	ltf_want(b, "ERR NOTHELD the lock was lost");
	ck_assert_str_eq(b->out[b->nout - 2], "LOST j 2");
	ltf_run(10);
	ck_assert_uint_eq(locktab_keys(), 0);
	ltf_leave(a);
	ltf_leave(b);
}
END_TEST

/* A client reset while its EXTEND is out: the verdict still drops the
 * entry's reference, nothing is answered, nothing leaks. */
START_TEST(reset_during_extend)
{
	struct tclient *a = ltf_client(1);
	ltf_grant(a, "LOCK k TTL 10000", 3);
	ltf_req(a, "EXTEND k 20000");
	struct rl_call *c = fake_oldest(FK_RENEW);
	int before = a->nout;
	lt_client_end(&a->lt);
	ltf_run(10);
	ck_assert_uint_eq(locktab_keys(), 1); /* the EXTEND still refers to it */
	fake_renew_done(c, 1, 19000);
	ck_assert_int_eq(a->nout, before);
	ck_assert_uint_eq(locktab_keys(), 0);
	ck_assert_int_eq(fake_released_keys(), 1);
	free(a);
}
END_TEST

/* A client's many locks leave in batches, two at a time. */
START_TEST(client_end_batches_releases)
{
	struct tclient *a = ltf_client(1);
	char line[64];
	for (int i = 0; i < 600; i++) {
		snprintf(line, sizeof(line), "LOCK k%d", i);
		ltf_grant(a, line, (uint64_t)i + 1);
	}
	ck_assert_uint_eq(locktab_keys(), 600);
	lt_client_end(&a->lt);
	ck_assert_uint_eq(locktab_keys(), 0);
	ltf_run(10);
	ck_assert_int_eq(fake_pending(FK_RELEASE_MANY), 2);
	ck_assert_int_eq(fake_pending(FK_RELEASE), 0);
	struct rl_call *c = fake_oldest(FK_RELEASE_MANY);
	ck_assert_int_eq(c->nitems, 256);
	ck_assert(locktab_busy());
	c->decided = 1;
	c->done(c, c->owner);
	ck_assert_int_eq(fake_pending(FK_RELEASE_MANY), 2);
	for (int i = 0; i < 2; i++) {
		c = fake_oldest(FK_RELEASE_MANY);
		c->decided = 1;
		c->done(c, c->owner);
	}
	ck_assert_int_eq(fake_released_keys(), 600);
	ck_assert(!locktab_busy());
	free(a);
}
END_TEST

/* A reload that raises the lease renews every lock at once with it; a
 * verdict counts the lease its call wrote. */
START_TEST(reload_renews_with_new_lease)
{
	struct tclient *a = ltf_client(1);
	ltf_grant(a, "LOCK k", 1);
	ltf_run(10);
	ck_assert_int_eq(fake_pending(FK_RENEW), 0); /* granted just now */
	struct config n = ltf_cfg;
	n.lease_ms = 9000;
	locktab_set_cfg(&n);
	ltf_run(10);
	struct rl_call *c = fake_oldest(FK_RENEW);
	ck_assert_msg(c != NULL, "no renewal after the reload");
	ck_assert_int_eq(c->lease_ms, 9000);
	fake_renew_done(c, 1, 8900);
	ltf_req(a, "HELD");
	long long ttl = 0;
	ck_assert_int_eq(sscanf(a->out[a->nout - 2], "KEY k 1 1 %lld", &ttl), 1);
	ck_assert_int_gt(ttl, 8000);
	ltf_want(a, "END");
	locktab_set_cfg(&ltf_cfg); /* lowered back: renewed again, shorter */
	ltf_run(10);
	c = fake_oldest(FK_RENEW);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->lease_ms, 3000);
	fake_renew_done(c, 0, 0); /* failed: the validity is the shorter lease's */
	ltf_run(3100);
	ck_assert_str_eq(ltf_last(a), "LOST k 1");
	ltf_leave(a);
}
END_TEST

/* A reload during an acquire (review finding 2): the hold's lease is the
 * one its call wrote, HELD says so, and the watchdog renews it in time
 * (at the new lease), for a plain grant and for a handoff. */
START_TEST(reload_during_acquire)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2);
	struct config n = ltf_cfg;
	long long ttl = 0;
	ltf_req(a, "LOCK k");
	struct rl_call *c = fake_oldest(FK_ACQUIRE);
	ck_assert_int_eq(c->lease_ms, 3000);
	n.lease_ms = 30000;
	locktab_set_cfg(&n);
	ltf_run(10); /* the reload's tick: nothing is held yet */
	fake_acquire_done(c, RL_OK, 1, 2900, 0);
	ltf_want(a, "OK 1");
	ltf_req(a, "HELD");
	ck_assert_int_eq(sscanf(a->out[a->nout - 2], "KEY k 1 1 %lld", &ttl), 1);
	ck_assert_msg(ttl > 2000 && ttl <= 3000, "HELD says %lld ms of a 3000 ms lease", ttl);
	ltf_want(a, "END");
	ltf_run(1500); /* a third of the 3000 ms lease, and loaded headroom */
	c = fake_oldest(FK_RENEW);
	ck_assert_msg(c != NULL, "the hold of a 3000 ms lease was not renewed within 1.5 s");
	ck_assert_int_eq(c->lease_ms, 30000);
	fake_renew_done(c, 1, 29000);
	/* a handoff asked at the new lease, answered after a reload back */
	ltf_req(b, "LOCK k");
	ltf_req(a, "UNLOCK k");
	c = fake_oldest(FK_ACQUIRE);
	ck_assert_int_eq(c->lease_ms, 30000);
	locktab_set_cfg(&ltf_cfg);
	ltf_run(10);
	fake_acquire_done(c, RL_OK, 2, 29000, 0);
	fake_release_done(c, RL_OK);
	ltf_want(b, "OK 2");
	ltf_want(a, "OK 0");
	ltf_req(b, "HELD");
	ck_assert_int_eq(sscanf(b->out[b->nout - 2], "KEY k 2 1 %lld", &ttl), 1);
	ck_assert_msg(ttl > 20000, "HELD says %lld ms of a 30000 ms lease", ttl);
	ltf_want(b, "END");
	ltf_run(50);
	for (int i = 0; i < b->nout; i++)
		ck_assert_msg(strncmp(b->out[i], "LOST", 4) != 0, "%s", b->out[i]);
	ltf_leave(a);
	ltf_leave(b);
}
END_TEST

START_TEST(status_counts_waiters)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2), *s = ltf_client(3);
	ltf_grant(a, "LOCK k", 1);
	ltf_req(b, "LOCK k");
	ltf_req(s, "STATUS k");
	ck_assert_msg(strncmp(ltf_last(s), "HELD ", 5) == 0 &&
	                  strcmp(ltf_last(s) + strlen(ltf_last(s)) - 2, " 1") == 0,
	              "%s", ltf_last(s));
	ltf_req(s, "STATUS other");
	fake_status_done(fake_oldest(FK_STATUS), 0, 0);
	ltf_want(s, "FREE");
	ck_assert_uint_eq(locktab_keys(), 1);
	ltf_leave(b);
	ltf_leave(a);
	ltf_leave(s);
}
END_TEST

Suite *locktab_suite(void)
{
	Suite *s = suite_create("locktab");
	TCase *tc = tcase_create("locktab");
	tcase_add_checked_fixture(tc, ltf_setup, ltf_teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, lock_unlock);
	tcase_add_test(tc, fifo_handoff);
	tcase_add_test(tc, handoff_verdict_last_frees);
	tcase_add_test(tc, busy_frees_entry);
	tcase_add_test(tc, trylock_never_jumps_queue);
	tcase_add_test(tc, retry_at_lease_end_or_notice);
	tcase_add_test(tc, quorum_until_wait_ends);
	tcase_add_test(tc, lost_at_validity_end);
	tcase_add_test(tc, waiter_leaves_during_acquire);
	tcase_add_test(tc, extend_within_drift);
	tcase_add_test(tc, failed_extend_shortens);
	tcase_add_test(tc, reset_during_extend);
	tcase_add_test(tc, late_verdicts_are_lost);
	tcase_add_test(tc, client_end_batches_releases);
	tcase_add_test(tc, reload_renews_with_new_lease);
	tcase_add_test(tc, reload_during_acquire);
	tcase_add_test(tc, status_counts_waiters);
	suite_add_tcase(s, tc);
	return s;
}
