/* lockall: LOCKALL's order, batching, waiting and all-or-nothing, in
 * process against the fake redlock (fake_redlock.c) and a real libevent
 * loop, as test_locktab.c does for the table below it. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cfg.h"
#include "fake_redlock.h"
#include "lockall.h"
#include "locktab.h"
#include "proto.h"
#include "units.h"
#include "util.h"

struct tclient {
	struct lt_client lt;
	char out[64][256];
	int nout, blocked;
};

static struct event_base *base;
static struct config cfg;

static void t_reply(struct lt_client *c, const char *fmt, va_list ap)
{
	struct tclient *t = (struct tclient *)c;
	ck_assert_msg(t->blocked, "a reply with no request waiting: %s", fmt);
	ck_assert_int_lt(t->nout, 64);
	vsnprintf(t->out[t->nout++], sizeof(t->out[0]), fmt, ap);
	t->blocked = 0;
}

static void t_line(struct lt_client *c, const char *fmt, va_list ap)
{
	struct tclient *t = (struct tclient *)c;
	ck_assert_int_lt(t->nout, 64);
	vsnprintf(t->out[t->nout++], sizeof(t->out[0]), fmt, ap);
}

static void t_wake(struct lt_client *c) {}

static const struct lt_ops ops = {t_reply, t_line, t_wake, NULL, NULL, NULL};

static void setup(void)
{
	cfg_defaults(&cfg);
	cfg.lease_ms = 3000;
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	ck_assert_int_eq(locktab_init(base, &cfg, &ops), 0);
	la_init(base, &cfg, &ops);
}

static void teardown(void)
{
	locktab_shutdown();
	event_base_free(base);
	cfg_free(&cfg);
	fake_reset();
}

static struct tclient *client(uint64_t id)
{
	struct tclient *t = calloc(1, sizeof(*t));
	ck_assert_ptr_nonnull(t);
	t->lt.id = id;
	t->lt.peer = "test";
	lt_client_init(&t->lt);
	return t;
}

static void leave(struct tclient *t)
{
	lt_client_end(&t->lt);
	free(t);
}

/* Run the loop once over what is ready (deferred steps, timers due). */
static void run(void)
{
	struct timeval tv = {0, 1000};
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static void req(struct tclient *t, const char *line)
{
	struct request r;
	const char *msg;
	ck_assert_int_eq(proto_parse(line, strlen(line), 256, 1024, &r, &msg), PE_NONE);
	t->blocked = 1;
	t->lt.req_us = now_us();
	if (r.cmd == CMD_LOCKALL)
		la_lockall(&t->lt, &r);
	else if (r.cmd == CMD_UNLOCK)
		lt_unlock(&t->lt, r.key, r.klen);
	else
		lt_lock(&t->lt, &r);
}

static const char *last(const struct tclient *t)
{
	return t->nout ? t->out[t->nout - 1] : "";
}

/* The oldest undecided acquire, which must be for key. */
static struct rl_call *acquire_of(const char *key)
{
	struct rl_call *c = fake_oldest(FK_ACQUIRE);
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(c->key, key);
	return c;
}

/* The first attempt asks every key in one turn, in bytewise order, and
 * the reply gives the fences in the order given. */
START_TEST(first_attempt_batched)
{
	struct tclient *a = client(1);
	req(a, "LOCKALL 4 d b c a");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 4); /* before the loop turns */
	const char *order[] = {"a", "b", "c", "d"};
	for (int i = 0; i < 4; i++)
		fake_acquire_done(acquire_of(order[i]), RL_OK, 10 + (uint64_t)i, 3000, 0);
	run();
	ck_assert_str_eq(last(a), "OK 13 11 12 10");
	leave(a);
}
END_TEST

/* A key busy elsewhere: the keys below it are kept, those above given
 * back, and the request waits for it; then the next. */
START_TEST(busy_keeps_below_waits)
{
	struct tclient *a = client(1);
	req(a, "LOCKALL 3 c b a");
	fake_acquire_done(acquire_of("a"), RL_OK, 1, 3000, 0);
	fake_acquire_done(acquire_of("b"), RL_BUSY, 0, 0, 500);
	fake_acquire_done(acquire_of("c"), RL_OK, 3, 3000, 0);
	run();
	ck_assert_int_eq(a->blocked, 1);
	ck_assert_int_eq(lt_waiting(&a->lt), 1);
	run(); /* c's release goes out in the next batch */
	ck_assert_int_eq(fake_released_keys(), 1);
	ck_assert_int_eq(lt_holds(&a->lt, "a", 1), 1);
	ck_assert_int_eq(lt_holds(&a->lt, "c", 1), 0);
	/* b again, as a waiter that will wait */
	struct rl_call *b = acquire_of("b");
	ck_assert_int_eq(b->will_wait != RW_NO, 1);
	fake_acquire_done(b, RL_OK, 4, 3000, 0);
	run();
	fake_acquire_done(acquire_of("c"), RL_OK, 5, 3000, 0);
	run();
	ck_assert_str_eq(last(a), "OK 5 4 1");
	leave(a);
}
END_TEST

/* WAIT 0: one attempt; TIMEOUT gives back what it took. A key held
 * before keeps its count. */
START_TEST(wait0_all_or_nothing)
{
	struct tclient *a = client(1);
	req(a, "LOCK b");
	fake_acquire_done(acquire_of("b"), RL_OK, 7, 3000, 0);
	run();
	ck_assert_str_eq(last(a), "OK 7");
	req(a, "LOCKALL 3 a b c WAIT 0");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 2); /* b is held: reentrant */
	fake_acquire_done(acquire_of("a"), RL_OK, 8, 3000, 0);
	fake_acquire_done(acquire_of("c"), RL_BUSY, 0, 0, 100);
	run();
	ck_assert_str_eq(last(a), "TIMEOUT");
	ck_assert_int_eq(lt_holds(&a->lt, "a", 1), 0);
	/* b's count is still 1: one more LOCK makes 2, one UNLOCK leaves 1 */
	req(a, "LOCK b");
	ck_assert_str_eq(last(a), "OK 7");
	req(a, "UNLOCK b");
	ck_assert_str_eq(last(a), "OK 1");
	leave(a);
}
END_TEST

/* A key busy here stops the first attempt there (never jump the queue):
 * the keys above it are not asked. The request then waits in that key's
 * queue behind the LOCK that came first. */
START_TEST(busy_here_fifo)
{
	struct tclient *h = client(1), *x = client(2), *a = client(3);
	req(h, "LOCK b");
	fake_acquire_done(acquire_of("b"), RL_OK, 1, 3000, 0);
	run();
	req(x, "LOCK b");
	req(a, "LOCKALL 3 a b c");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 1); /* a only */
	fake_acquire_done(acquire_of("a"), RL_OK, 2, 3000, 0);
	run();
	ck_assert_int_eq(lt_waiting(&a->lt), 1);
	/* h lets go: x first (it came first), then the LOCKALL */
	req(h, "UNLOCK b");
	struct rl_call *hx = acquire_of("b");
	fake_acquire_done(hx, RL_OK, 3, 3000, 0);
	fake_release_done(hx, RL_OK);
	run();
	ck_assert_str_eq(last(x), "OK 3");
	ck_assert_int_eq(a->blocked, 1);
	req(x, "UNLOCK b");
	struct rl_call *xa = acquire_of("b");
	fake_acquire_done(xa, RL_OK, 4, 3000, 0);
	fake_release_done(xa, RL_OK);
	run();
	fake_acquire_done(acquire_of("c"), RL_OK, 5, 3000, 0);
	run();
	ck_assert_str_eq(last(a), "OK 2 4 5");
	leave(h);
	leave(x);
	leave(a);
}
END_TEST

/* The client leaves while its request waits: its keys go back, its
 * waiter leaves the queue, an acquire in flight is undone. */
START_TEST(client_leaves)
{
	struct tclient *a = client(1);
	req(a, "LOCKALL 2 a b");
	fake_acquire_done(acquire_of("a"), RL_OK, 1, 3000, 0);
	fake_acquire_done(acquire_of("b"), RL_BUSY, 0, 0, 50);
	run();
	ck_assert_int_eq(lt_waiting(&a->lt), 1);
	struct rl_call *b = acquire_of("b"); /* in flight */
	leave(a);
	fake_acquire_done(b, RL_OK, 2, 3000, 0); /* undone: nobody wants it */
	run();
	run();
	ck_assert_int_eq(fake_released_keys(), 2);
}
END_TEST

/* The limits on waiting sessions apply as to a LOCK: checked on arrival,
 * for each key; WAIT 0 never waits, so is not refused. */
START_TEST(waiter_limits)
{
	struct tclient *h = client(1), *x = client(2), *a = client(3);
	cfg.max_waiters_per_key = 1;
	req(h, "LOCK b");
	fake_acquire_done(acquire_of("b"), RL_OK, 1, 3000, 0);
	run();
	req(x, "LOCK b");
	req(a, "LOCKALL 2 a b");
	ck_assert_str_eq(
	    last(a), "ERR LIMIT too many sessions wait for this key (limits.max_waiters_per_key)");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	req(a, "LOCKALL 2 a b WAIT 0");
	fake_acquire_done(acquire_of("a"), RL_OK, 2, 3000, 0);
	run();
	ck_assert_str_eq(last(a), "TIMEOUT");
	cfg.max_waiters_per_key = 0;
	cfg.max_waiters = 1;
	req(a, "LOCKALL 1 c");
	ck_assert_str_eq(last(a), "ERR LIMIT too many sessions wait (limits.max_waiters)");
	leave(h);
	leave(x);
	leave(a);
}
END_TEST

/* Once the key it waited for is granted, the keys above it are asked
 * again in one batch (one attempt each), not one at a time. */
START_TEST(batch_after_wait)
{
	struct tclient *a = client(1);
	req(a, "LOCKALL 4 d c b a WAIT 5000");
	fake_acquire_done(acquire_of("a"), RL_OK, 1, 3000, 0);
	fake_acquire_done(acquire_of("b"), RL_BUSY, 0, 0, 500);
	fake_acquire_done(acquire_of("c"), RL_OK, 3, 3000, 0);
	fake_acquire_done(acquire_of("d"), RL_BUSY, 0, 0, 500);
	run();
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 1); /* b, waiting */
	fake_acquire_done(acquire_of("b"), RL_OK, 4, 3000, 0);
	run();
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 2); /* c and d at once */
	struct rl_call *c = acquire_of("c");
	ck_assert_int_eq(c->will_wait, RW_NO);
	fake_acquire_done(c, RL_OK, 5, 3000, 0);
	fake_acquire_done(acquire_of("d"), RL_OK, 6, 3000, 0);
	run();
	ck_assert_str_eq(last(a), "OK 6 5 4 1");
	leave(a);
}
END_TEST

Suite *lockall_suite(void)
{
	Suite *s = suite_create("lockall");
	TCase *tc = tcase_create("lockall");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, first_attempt_batched);
	tcase_add_test(tc, busy_keeps_below_waits);
	tcase_add_test(tc, wait0_all_or_nothing);
	tcase_add_test(tc, busy_here_fifo);
	tcase_add_test(tc, client_leaves);
	tcase_add_test(tc, waiter_limits);
	tcase_add_test(tc, batch_after_wait);
	suite_add_tcase(s, tc);
	return s;
}
