/* locktab: shared holds and permits (1.1), in process against a fake
 * redlock, as test_locktab.c. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conflict.h"
#include "fake_redlock.h"
#include "locktab_fix.h"
#include "proto.h"
#include "units.h"
#include "util.h"

/* The oldest acquire, checked to be for key as a lock of permit p (or
 * shared, p < 0); answered by the test. */
static struct rl_call *acq_for(const char *key, int p)
{
	struct rl_call *c = fake_oldest(FK_ACQUIRE);
	ck_assert_msg(c != NULL, "no acquire for %s (permit %d)", key, p);
	ck_assert_str_eq(c->key, key);
	if (p < 0) {
		ck_assert_int_eq(c->hold, RH_SHARED);
	} else {
		ck_assert_int_eq(c->hold, RH_LOCK);
		ck_assert_int_eq(c->permit, p);
	}
	return c;
}

/* Shared waiters at the head are granted one after another, while the
 * first still holds: none waits for another's release. */
START_TEST(shared_granted_together)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2), *c = ltf_client(3);
	ltf_req(a, "LOCK k SHARED");
	ltf_req(b, "LOCK k SHARED");
	ltf_req(c, "LOCK k SHARED WAIT 1000");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 1); /* one in flight at a time */
	fake_acquire_done(acq_for("k", -1), RL_OK, 5, 10000, 0);
	ltf_want(a, "OK 5");
	fake_acquire_done(acq_for("k", -1), RL_OK, 6, 10000, 0);
	ltf_want(b, "OK 6");
	fake_acquire_done(acq_for("k", -1), RL_OK, 7, 10000, 0);
	ltf_want(c, "OK 7");
	ltf_req(a, "UNLOCK k");
	struct rl_call *r = fake_oldest(FK_RELEASE);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->hold, RH_SHARED);
	fake_release_done(r, RL_OK);
	ltf_want(a, "OK 0");
	ltf_leave(a);
	ltf_leave(b);
	ltf_leave(c);
}
END_TEST

/* An exclusive waiter holds back the shared requests behind it: it waits
 * (asking nothing) until the shared holders here are gone, and TRYLOCK
 * SHARED is BUSY meanwhile. Its release is no handoff to a shared waiter. */
START_TEST(exclusive_holds_back_shared)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2), *c = ltf_client(3),
	               *d = ltf_client(4);
	ltf_req(a, "LOCK k SHARED");
	fake_acquire_done(acq_for("k", -1), RL_OK, 5, 10000, 0);
	ltf_want(a, "OK 5");
	ltf_req(b, "LOCK k");
	ltf_req(c, "LOCK k SHARED");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ck_assert(lt_waiting(&b->lt) && lt_waiting(&c->lt));
	ltf_req(d, "TRYLOCK k SHARED");
	ltf_want(d, "BUSY");
	ltf_req(d, "LOCK k SHARED WAIT 0");
	ltf_want(d, "TIMEOUT");
	ltf_req(d, "TRYLOCK k");
	ltf_want(d, "BUSY");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ltf_req(a, "UNLOCK k");
	struct rl_call *r = fake_oldest(FK_RELEASE);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->hold, RH_SHARED);
	ck_assert_int_gt(r->wait_flag_ms, 0); /* ours wait: the flag goes up */
	struct rl_call *x = acq_for("k", 0);
	ck_assert_str_eq(x->old, ""); /* not a handoff: a shared hold is no lock */
	fake_release_done(r, RL_OK);
	ltf_want(a, "OK 0");
	fake_acquire_done(x, RL_OK, 6, 10000, 0);
	ltf_want(b, "OK 6");
	ck_assert(c->blocked);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0); /* c waits for b here */
	ltf_req(b, "UNLOCK k");
	r = fake_oldest(FK_RELEASE);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->hold, RH_LOCK);
	x = acq_for("k", -1);
	ck_assert_str_eq(x->old, "");
	fake_release_done(r, RL_OK);
	ltf_want(b, "OK 0");
	fake_acquire_done(x, RL_OK, 7, 10000, 0);
	ltf_want(c, "OK 7");
	ltf_leave(a);
	ltf_leave(b);
	ltf_leave(c);
	ltf_leave(d);
}
END_TEST

/* Shared after exclusive: the key's lock held here keeps shared requests
 * here; TRYLOCK SHARED is BUSY without asking. */
START_TEST(shared_waits_for_lock)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2), *c = ltf_client(3);
	ltf_grant(a, "LOCK k", 3);
	ltf_req(c, "TRYLOCK k SHARED");
	ltf_want(c, "BUSY");
	ltf_req(b, "LOCK k SHARED");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ltf_req(a, "UNLOCK k");
	struct rl_call *x = acq_for("k", -1);
	fake_acquire_done(x, RL_OK, 4, 10000, 0);
	ltf_want(b, "OK 4");
	fake_release_done(fake_oldest(FK_RELEASE), RL_OK);
	ltf_want(a, "OK 0");
	ltf_leave(a);
	ltf_leave(b);
	ltf_leave(c);
}
END_TEST

/* Reentrancy answers OK only when what the session holds satisfies what
 * it asks (PROTOCOL.md 1.1): every pair of held kind and asked kind. */
START_TEST(reentry_table)
{
	static const struct {
		enum hold_kind held;
		uint32_t permit;
		enum hold_kind asked;
		uint32_t n;
		enum reentry want;
	} t[] = {
	    {HK_LOCK, 0, HK_LOCK, 1, RE_OK},          {HK_LOCK, 0, HK_SHARED, 0, RE_OK},
	    {HK_LOCK, 0, HK_PERMIT, 1, RE_OK},        {HK_LOCK, 0, HK_PERMIT, 5, RE_OK},
	    {HK_SHARED, 0, HK_SHARED, 0, RE_OK},      {HK_SHARED, 0, HK_LOCK, 1, RE_UPGRADE},
	    {HK_SHARED, 0, HK_PERMIT, 1, RE_UPGRADE}, {HK_SHARED, 0, HK_PERMIT, 3, RE_UPGRADE},
	    {HK_PERMIT, 0, HK_LOCK, 1, RE_OK},        {HK_PERMIT, 0, HK_SHARED, 0, RE_OK},
	    {HK_PERMIT, 0, HK_PERMIT, 1, RE_OK},      {HK_PERMIT, 0, HK_PERMIT, 2, RE_OK},
	    {HK_PERMIT, 1, HK_LOCK, 1, RE_OTHER},     {HK_PERMIT, 1, HK_SHARED, 0, RE_OTHER},
	    {HK_PERMIT, 1, HK_PERMIT, 1, RE_OTHER},   {HK_PERMIT, 1, HK_PERMIT, 2, RE_OK},
	    {HK_PERMIT, 1, HK_PERMIT, 9, RE_OK},      {HK_PERMIT, 7, HK_PERMIT, 7, RE_OTHER},
	    {HK_PERMIT, 7, HK_PERMIT, 8, RE_OK},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ck_assert_msg(cf_reentry(t[i].held, t[i].permit, t[i].asked, t[i].n) == t[i].want,
		              "row %zu: held %d/%u asked %d/%u", i, t[i].held, t[i].permit,
		              t[i].asked, t[i].n);
}
END_TEST

/* The review's repro: a session holding permit 1 is refused the key's
 * lock, a shared hold and PERMITS 1 (another session holds permit 0),
 * and nothing is asked of the masters or counted. */
START_TEST(permit_reentry_refused)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2);
	ltf_grant(b, "LOCK k", 746);
	ltf_req(a, "LOCK k PERMITS 2");
	fake_acquire_done(acq_for("k", 1), RL_OK, 747, 10000, 0); /* 0 is b's: not asked */
	ltf_want(a, "OK 747");
	ltf_req(a, "LOCK k SHARED");
	ltf_want(a, "ERR ARG holds permit 1 of k");
	ltf_req(a, "LOCK k");
	ltf_want(a, "ERR ARG holds permit 1 of k");
	ltf_req(a, "TRYLOCK k PERMITS 1");
	ltf_want(a, "ERR ARG holds permit 1 of k");
	ltf_req(a, "LOCK k PERMITS 3 WAIT 10");
	ltf_want(a, "OK 747");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ltf_req(a, "HELD");
	ck_assert_msg(strncmp(a->out[a->nout - 2], "KEY k 747 2 ", 12) == 0, "%s",
	              a->out[a->nout - 2]);
	ltf_want(a, "END");
	ltf_leave(a);
	ltf_leave(b);
}
END_TEST

/* Reentrancy keeps the kind; no upgrade from shared; HELD says the kind. */
START_TEST(reentrant_kinds_and_upgrade)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2);
	ltf_req(a, "LOCK k SHARED TTL 5000");
	fake_acquire_done(acq_for("k", -1), RL_OK, 5, 10000, 0);
	ltf_want(a, "OK 5");
	ltf_req(a, "LOCK k SHARED");
	ltf_want(a, "OK 5");
	ltf_req(a, "LOCK k");
	ltf_want(a, "ERR ARG cannot upgrade a shared hold");
	ltf_req(a, "TRYLOCK k PERMITS 3");
	ltf_want(a, "ERR ARG cannot upgrade a shared hold");
	ltf_grant(b, "LOCK j", 9);
	ltf_req(b, "LOCK j SHARED");
	ltf_want(b, "OK 9");
	ltf_req(b, "LOCK j PERMITS 4");
	ltf_want(b, "OK 9");
	ltf_grant(b, "LOCK p PERMITS 2", 11);
	ltf_req(b, "LOCK p");
	ltf_want(b, "OK 11");
	ltf_req(b, "LOCK p SHARED");
	ltf_want(b, "OK 11");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ltf_req(a, "HELD");
	long long ttl = 0;
	ck_assert_int_eq(sscanf(a->out[a->nout - 2], "KEY k 5 2 %lld SHARED", &ttl), 1);
	ck_assert_int_le(ttl, 5000);
	ltf_want(a, "END");
	ltf_req(b, "HELD");
	ck_assert_msg(strncmp(b->out[b->nout - 3], "KEY j 9 3 ", 10) == 0 &&
	                  !strchr(b->out[b->nout - 3] + 10, ' '),
	              "%s", b->out[b->nout - 3]);
	ck_assert_msg(strncmp(b->out[b->nout - 2], "KEY p 11 3 ", 11) == 0 &&
	                  strstr(b->out[b->nout - 2], " PERMIT 0"),
	              "%s", b->out[b->nout - 2]);
	ltf_want(b, "END");
	ltf_req(a, "UNLOCK k");
	ltf_want(a, "OK 1");
	ltf_leave(a);
	ltf_leave(b);
}
END_TEST

/* A permit request tries the permits free here, lowest first, the next
 * one when the masters find one busy; all busy: it sleeps like a lock. */
START_TEST(permit_tries_next_free)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2), *c = ltf_client(3);
	ltf_req(a, "LOCK p PERMITS 3");
	fake_acquire_done(acq_for("p", 0), RL_BUSY, 0, 0, 900);
	fake_acquire_done(acq_for("p", 1), RL_OK, 4, 10000, 0);
	ltf_want(a, "OK 4");
	ltf_req(b, "LOCK p PERMITS 3");
	fake_acquire_done(acq_for("p", 0), RL_BUSY, 0, 0, 900);
	fake_acquire_done(acq_for("p", 2), RL_OK, 5, 10000, 0); /* 1 is ours: not asked */
	ltf_want(b, "OK 5");
	ltf_req(c, "TRYLOCK p PERMITS 2");
	fake_acquire_done(acq_for("p", 0), RL_BUSY, 0, 0, 900);
	ltf_want(c, "BUSY"); /* 1 is held here */
	ltf_req(c, "LOCK p PERMITS 3 WAIT 5000");
	struct rl_call *x = acq_for("p", 0);
	fake_acquire_done(x, RL_BUSY, 0, 0, 60);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ck_assert(lt_waiting(&c->lt));
	ltf_run(120); /* the shortest lease seen busy ended: a new round from 0 */
	fake_acquire_done(acq_for("p", 0), RL_OK, 6, 10000, 0);
	ltf_want(c, "OK 6");
	ltf_req(a, "HELD");
	ck_assert_msg(strstr(a->out[a->nout - 2], " PERMIT 1") != NULL, "%s", a->out[a->nout - 2]);
	ltf_want(a, "END");
	ltf_req(a, "LOCK p PERMITS 3");
	ltf_want(a, "OK 4"); /* at most one permit of a key per session */
	ltf_leave(a);
	ltf_leave(b);
	ltf_leave(c);
}
END_TEST

/* All permits held here: TRYLOCK is BUSY without asking; a release
 * hands the permit to the head waiter whose n covers it. */
/* WHO (1.4): a token says what its grant asked (0, or the n of PERMITS
 * n, at an acquire and at a handoff), and a hold here is found by its
 * token, with its holder, fence and the time of its grant. */
START_TEST(tokens_say_permits_and_find_holds)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2), *c = ltf_client(3),
	               *d = ltf_client(4);
	struct lt_hold_view v;
	ltf_req(a, "LOCK k");
	struct rl_call *x = acq_for("k", 0);
	ck_assert_uint_eq(rl_token_permits(x->token), 0);
	char tok[TOKEN_LEN + 1];
	memcpy(tok, x->token, sizeof(tok));
	int64_t t0 = now_us();
	fake_acquire_done(x, RL_OK, 7, 10000, 0);
	ltf_want(a, "OK 7");
	ck_assert_int_eq(lt_hold_by_token("k", 1, tok, &v), 1);
	ck_assert_ptr_eq(v.holder, &a->lt);
	ck_assert_uint_eq(v.fence, 7);
	ck_assert(v.since_us >= t0 && v.since_us <= now_us());
	tok[0] = tok[0] == '0' ? '1' : '0';
	ck_assert_int_eq(lt_hold_by_token("k", 1, tok, &v), 0);
	ck_assert_int_eq(lt_hold_by_token("nokey", 5, tok, &v), 0);
	ltf_req(b, "LOCK s SHARED");
	x = acq_for("s", -1);
	ck_assert_uint_eq(rl_token_permits(x->token), 0);
	fake_acquire_done(x, RL_OK, 8, 10000, 0);
	ltf_want(b, "OK 8");
	ltf_req(c, "LOCK p PERMITS 1000");
	x = acq_for("p", 0);
	ck_assert_uint_eq(rl_token_permits(x->token), 1000);
	fake_acquire_done(x, RL_OK, 9, 10000, 0);
	ltf_want(c, "OK 9");
	ltf_req(d, "LOCK p PERMITS 1 WAIT 5000");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0); /* permit 0 is c's */
	ltf_req(c, "UNLOCK p");                        /* a handoff to d: d's token says d's n */
	x = acq_for("p", 0);
	ck_assert_str_ne(x->old, "");
	ck_assert_uint_eq(rl_token_permits(x->old), 1000);
	ck_assert_uint_eq(rl_token_permits(x->token), 1);
	fake_acquire_done(x, RL_OK, 10, 10000, 0);
	ltf_want(d, "OK 10");
	fake_release_done(x, RL_OK);
	ltf_want(c, "OK 0");
	ck_assert_int_eq(lt_hold_by_token("p", 1, x->token, &v), 1);
	ck_assert_ptr_eq(v.holder, &d->lt);
	ck_assert_uint_eq(v.fence, 10);
	/* rl_token_permits refuses digits that are not hex */
	memcpy(tok, x->token, sizeof(tok));
	tok[TOKEN_LEN - 1] = 'g';
	ck_assert_uint_eq(rl_token_permits(tok), UINT32_MAX);
	rl_token_set_permits(tok, 0xabcde);
	ck_assert_str_eq(tok + TOKEN_LEN - RL_TOKEN_N_LEN, "abcde");
	rl_token_set_permits(tok, 65536); /* limits.max_permits at most */
	ck_assert_str_eq(tok + TOKEN_LEN - RL_TOKEN_N_LEN, "10000");
	ck_assert_uint_eq(rl_token_permits(tok), 65536);
	ltf_leave(a);
	ltf_leave(b);
	ltf_leave(c);
	ltf_leave(d);
}
END_TEST

START_TEST(permit_handoff_to_covering_waiter)
{
	struct tclient *h[3], *c = ltf_client(10), *d = ltf_client(11), *e = ltf_client(12);
	for (int i = 0; i < 3; i++) {
		h[i] = ltf_client((uint64_t)i + 1);
		ltf_req(h[i], "LOCK p PERMITS 3");
		fake_acquire_done(acq_for("p", i), RL_OK, (uint64_t)i + 1, 10000, 0);
	}
	ltf_req(e, "TRYLOCK p PERMITS 3");
	ltf_want(e, "BUSY");
	ltf_req(c, "LOCK p PERMITS 2");
	ltf_req(d, "LOCK p PERMITS 3");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ltf_req(h[2], "UNLOCK p"); /* permit 2: c's n does not cover it, d's does */
	struct rl_call *x = acq_for("p", 2);
	ck_assert_str_ne(x->old, "");
	fake_acquire_done(x, RL_OK, 20, 10000, 0);
	ltf_want(d, "OK 20");
	ck_assert(c->blocked);
	fake_release_done(x, RL_OK);
	ltf_want(h[2], "OK 0");
	ltf_req(h[0], "UNLOCK p"); /* permit 0: c, the head */
	x = acq_for("p", 0);
	ck_assert_str_ne(x->old, "");
	fake_acquire_done(x, RL_OK, 21, 10000, 0);
	ltf_want(c, "OK 21");
	fake_release_done(x, RL_OK);
	ltf_want(h[0], "OK 0");
	ltf_req(c, "HELD");
	ck_assert_msg(strstr(c->out[c->nout - 2], " PERMIT 0") != NULL, "%s", c->out[c->nout - 2]);
	ltf_want(c, "END");
	for (int i = 0; i < 3; i++)
		ltf_leave(h[i]);
	ltf_leave(c);
	ltf_leave(d);
	ltf_leave(e);
}
END_TEST

/* A permit waiter asleep (busy elsewhere) asks at once when a permit
 * held here ends without a handoff (LOST). */
START_TEST(permit_freed_here_wakes_waiter)
{
	struct tclient *a = ltf_client(1), *c = ltf_client(2);
	ltf_req(a, "LOCK p PERMITS 2 TTL 5000");
	fake_acquire_done(acq_for("p", 0), RL_OK, 4, 80, 0);
	ltf_want(a, "OK 4");
	ltf_req(c, "LOCK p PERMITS 2");
	fake_acquire_done(acq_for("p", 1), RL_BUSY, 0, 0, 60000);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ltf_run(150); /* a's validity ends */
	ck_assert_str_eq(ltf_last(a), "LOST p 4");
	struct rl_call *r = fake_oldest(FK_RELEASE);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->permit, 0);
	fake_acquire_done(acq_for("p", 0), RL_OK, 5, 10000, 0);
	ltf_want(c, "OK 5");
	ltf_leave(a);
	ltf_leave(c);
}
END_TEST

/* Live shared holders elsewhere kept an exclusive acquire out and it
 * raised the exclusive-waiting flag: its next attempts say so. */
START_TEST(exclusive_waiting_flag)
{
	struct tclient *a = ltf_client(1);
	ltf_req(a, "LOCK k WAIT 5000");
	struct rl_call *x = acq_for("k", 0);
	ck_assert_int_eq(x->will_wait, RW_YES);
	x->grant.xwaiting = 1;
	fake_acquire_done(x, RL_BUSY, 0, 0, 30);
	ltf_run(80);
	x = acq_for("k", 0);
	ck_assert_int_eq(x->will_wait, RW_RAISED);
	fake_acquire_done(x, RL_OK, 8, 10000, 0);
	ltf_want(a, "OK 8");
	ltf_req(a, "TRYLOCK j SHARED");
	ck_assert_int_eq(acq_for("j", -1)->will_wait, RW_NO);
	fake_acquire_done(acq_for("j", -1), RL_OK, 9, 10000, 0);
	ltf_want(a, "OK 9");
	ltf_leave(a);
}
END_TEST

/* Renewal batches and a session's end take every kind of hold together. */
START_TEST(batches_mix_kinds)
{
	struct tclient *a = ltf_client(1);
	ltf_grant(a, "LOCK k", 1);
	ltf_req(a, "LOCK s SHARED");
	fake_acquire_done(acq_for("s", -1), RL_OK, 2, 10000, 0);
	ltf_want(a, "OK 2");
	ltf_req(a, "LOCK p PERMITS 4");
	fake_acquire_done(acq_for("p", 0), RL_BUSY, 0, 0, 500);
	fake_acquire_done(acq_for("p", 1), RL_OK, 3, 10000, 0);
	ltf_want(a, "OK 3");
	struct config n = ltf_cfg;
	n.lease_ms = 4000;
	locktab_set_cfg(&n); /* every hold is renewed now, in one batch */
	ltf_run(10);
	struct rl_call *c = fake_oldest(FK_RENEW);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->nitems, 3);
	int kinds = 0;
	for (int i = 0; i < 3; i++) {
		const struct rl_renew_item *it = &c->items[i];
		if (it->hold == RH_LOCK && it->permit == 0 && it->klen == 1 && it->key[0] == 'k')
			kinds |= 1;
		if (it->hold == RH_SHARED && it->key[0] == 's')
			kinds |= 2;
		if (it->hold == RH_LOCK && it->permit == 1 && it->key[0] == 'p')
			kinds |= 4;
	}
	ck_assert_int_eq(kinds, 7);
	fake_renew_done(c, 1, 3900);
	locktab_set_cfg(&ltf_cfg);
	lt_client_end(&a->lt);
	ltf_run(10);
	c = fake_oldest(FK_RELEASE_MANY);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->nitems, 3);
	kinds = 0;
	for (int i = 0; i < 3; i++)
		kinds |= c->rel_items[i].hold == RH_SHARED ? 2
		         : c->rel_items[i].permit == 1     ? 4
		                                           : 1;
	ck_assert_int_eq(kinds, 7);
	c->decided = 1;
	c->done(c, c->owner);
	ltf_run(10);
	free(a);
}
END_TEST

START_TEST(status_shared_and_permits)
{
	struct tclient *a = ltf_client(1), *b = ltf_client(2), *s = ltf_client(3);
	ltf_req(a, "LOCK k SHARED");
	fake_acquire_done(acq_for("k", -1), RL_OK, 5, 10000, 0);
	ltf_want(a, "OK 5");
	ltf_req(b, "LOCK k");
	ltf_req(s, "STATUS k"); /* held shared: the masters count the holders */
	struct rl_call *c = fake_oldest(FK_STATUS);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->status.npermits, 0);
	fake_status_shared(c, 3, 2500);
	ltf_want(s, "SHARED 3 2500 1");
	ltf_req(s, "STATUS p PERMITS 3");
	c = fake_oldest(FK_STATUS);
	ck_assert_int_eq(c->status.npermits, 3);
	fake_status_permits(c, 2);
	ltf_want(s, "PERMITS 2 3 0");
	ltf_req(s, "STATUS p");
	fake_status_done(fake_oldest(FK_STATUS), 0, 0);
	ltf_want(s, "FREE");
	ltf_leave(b);
	ltf_leave(a);
	ltf_leave(s);
}
END_TEST

/* Leader election's hooks (1.3): a CAMPAIGN's grant goes to the hook,
 * not to the client; the end of a hold of a key's lock is offered to the
 * hook, which may release it itself; lt_drop lets go with no release. */
static struct {
	struct lt_client *c;
	uint64_t fence;
	char token[TOKEN_LEN + 1];
	int granted, releasing, lost, taken;
} hk;

static void hk_granted(struct lt_client *c, const char *key, size_t klen, uint64_t fence,
                       const char *token)
{
	hk.c = c;
	hk.fence = fence;
	memcpy(hk.token, token, sizeof(hk.token));
	hk.granted++;
}

static int hk_releasing(struct lt_client *c, const char *key, size_t klen, const char *token,
                        int lost)
{
	hk.releasing++;
	hk.lost += lost;
	int mine = hk.granted && strcmp(token, hk.token) == 0;
	hk.taken += mine;
	return mine;
}

START_TEST(election_hooks)
{
	static const struct lt_elect_hooks h = {hk_granted, hk_releasing};
	lt_set_elect_hooks(&h);
	struct tclient *a = ltf_client(1), *b = ltf_client(2), *c = ltf_client(3);
	ltf_req(a, "CAMPAIGN k v");
	fake_acquire_done(fake_oldest(FK_ACQUIRE), RL_OK, 5, 10000, 0);
	ck_assert_int_eq(hk.granted, 1);
	ck_assert_ptr_eq(hk.c, &a->lt);
	ck_assert_uint_eq(hk.fence, 5);
	ck_assert_int_eq(a->replies, 0); /* the hook answers */
	a->blocked = 0;
	uint64_t f = 0;
	char tok[TOKEN_LEN + 1];
	ck_assert_ptr_eq(lt_lock_holder("k", 1, &f, tok), &a->lt);
	ck_assert_uint_eq(f, 5);
	ck_assert_str_eq(tok, hk.token);
	ck_assert_int_eq(lt_holds(&a->lt, "k", 1), 1);
	ltf_req(c, "CAMPAIGN k w WAIT 0");
	ltf_want(c, "TIMEOUT"); /* held here: never jumps the queue */
	/* the hook takes the leader's release: locktab sends none */
	int rel = fake_pending(FK_RELEASE) + fake_pending(FK_RELEASE_MANY);
	ltf_leave(a);
	ltf_run(10);
	ck_assert_int_eq(hk.releasing, 1);
	ck_assert_int_eq(hk.taken, 1);
	ck_assert_int_eq(fake_pending(FK_RELEASE) + fake_pending(FK_RELEASE_MANY), rel);
	ck_assert_ptr_null(lt_lock_holder("k", 1, &f, tok));
	/* a plain LOCK: offered, not taken, released by locktab */
	ltf_grant(b, "LOCK j", 7);
	ltf_want(b, "OK 7");
	ltf_leave(b);
	ltf_run(10);
	ck_assert_int_eq(hk.releasing, 2);
	ck_assert_int_eq(hk.taken, 1);
	ck_assert_int_gt(fake_pending(FK_RELEASE) + fake_pending(FK_RELEASE_MANY), rel);
	/* lt_drop: all holds let go, nothing sent */
	ltf_grant(c, "LOCK m", 9);
	ltf_req(c, "LOCK m");
	ltf_want(c, "OK 9");
	rel = fake_pending(FK_RELEASE) + fake_pending(FK_RELEASE_MANY);
	lt_drop(&c->lt, "m", 1);
	ck_assert_int_eq(lt_holds(&c->lt, "m", 1), 0);
	ck_assert_int_eq(fake_pending(FK_RELEASE) + fake_pending(FK_RELEASE_MANY), rel);
	ltf_leave(c);
	static const struct lt_elect_hooks none = {NULL, NULL};
	lt_set_elect_hooks(&none);
}
END_TEST

Suite *locktab_shared_suite(void)
{
	Suite *s = suite_create("locktab_shared");
	TCase *tc = tcase_create("locktab_shared");
	tcase_add_checked_fixture(tc, ltf_setup, ltf_teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, election_hooks);
	tcase_add_test(tc, shared_granted_together);
	tcase_add_test(tc, exclusive_holds_back_shared);
	tcase_add_test(tc, shared_waits_for_lock);
	tcase_add_test(tc, reentrant_kinds_and_upgrade);
	tcase_add_test(tc, reentry_table);
	tcase_add_test(tc, permit_reentry_refused);
	tcase_add_test(tc, permit_tries_next_free);
	tcase_add_test(tc, permit_handoff_to_covering_waiter);
	tcase_add_test(tc, tokens_say_permits_and_find_holds);
	tcase_add_test(tc, permit_freed_here_wakes_waiter);
	tcase_add_test(tc, exclusive_waiting_flag);
	tcase_add_test(tc, batches_mix_kinds);
	tcase_add_test(tc, status_shared_and_permits);
	suite_add_tcase(s, tc);
	return s;
}
