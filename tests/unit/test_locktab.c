/* locktab: queueing, handoff, retry, LOST, batching and freeing key
 * entries, in process against a fake redlock (fake_redlock.c) and a real
 * libevent loop: no socket, no Redis. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cfg.h"
#include "fake_redlock.h"
#include "conflict.h"
#include "locktab.h"
#include "proto.h"
#include "units.h"
#include "util.h"

/* A client that records what locktab says to it. */
struct tclient {
	struct lt_client lt;
	char out[1024][128];
	int nout, replies, wakes;
	int blocked; /* a request waits for its reply */
};

static struct event_base *base;
static struct config cfg;

static struct tclient *of(struct lt_client *c)
{
	return (struct tclient *)c;
}

static void add_out(struct tclient *t, const char *fmt, va_list ap)
{
	ck_assert_int_lt(t->nout, 1024);
	vsnprintf(t->out[t->nout++], sizeof(t->out[0]), fmt, ap);
}

static void t_reply(struct lt_client *c, const char *fmt, va_list ap)
{
	struct tclient *t = of(c);
	ck_assert_msg(t->blocked, "a reply with no request waiting: %s", fmt);
	add_out(t, fmt, ap);
	t->replies++;
	t->blocked = 0;
}

static void t_line(struct lt_client *c, const char *fmt, va_list ap)
{
	add_out(of(c), fmt, ap);
}
static void t_wake(struct lt_client *c)
{
	of(c)->wakes++;
}

static const struct lt_ops ops = {t_reply, t_line, t_wake, NULL, NULL, NULL};

static void setup(void)
{
	cfg_defaults(&cfg);
	cfg.lease_ms = 3000;
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	ck_assert_int_eq(locktab_init(base, &cfg, &ops), 0);
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

/* Run the loop for ms (deferred work, timers). */
static void run(int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

/* Send one request line, as a session would. */
static void req(struct tclient *t, const char *line)
{
	struct request r;
	const char *msg;
	ck_assert_msg(!t->blocked, "%s: the previous request is not answered", line);
	ck_assert_int_eq(proto_parse(line, strlen(line), 256, 1024, &r, &msg), PE_NONE);
	t->blocked = 1;
	t->lt.req_us = now_us();
	switch (r.cmd) {
	case CMD_LOCK:
	case CMD_TRYLOCK:
	case CMD_CAMPAIGN:
		lt_lock(&t->lt, &r);
		break;
	case CMD_UNLOCK:
		lt_unlock(&t->lt, r.key, r.klen);
		break;
	case CMD_EXTEND:
		lt_extend(&t->lt, r.key, r.klen, r.ttl_ms);
		break;
	case CMD_STATUS:
		lt_status(&t->lt, r.key, r.klen, r.permits);
		break;
	case CMD_HELD:
		lt_held(&t->lt);
		break;
	default:
		ck_abort_msg("not a locktab request: %s", line);
	}
}

static const char *last(const struct tclient *t)
{
	return t->nout ? t->out[t->nout - 1] : "";
}

#define want(t, s)                                                                                 \
	do {                                                                                       \
		ck_assert_msg(!(t)->blocked, "no reply yet, want '%s'", (s));                      \
		ck_assert_str_eq(last(t), (s));                                                    \
	} while (0)

/* LOCK granted by the fake with fence f (valid 10 s). */
static void grant(struct tclient *t, const char *line, uint64_t f)
{
	req(t, line);
	struct rl_call *c = fake_oldest(FK_ACQUIRE);
	ck_assert_ptr_nonnull(c);
	fake_acquire_done(c, RL_OK, f, 10000, 0);
	char exp[32];
	snprintf(exp, sizeof(exp), "OK %llu", (unsigned long long)f);
	want(t, exp);
}

START_TEST(lock_unlock)
{
	struct tclient *a = client(1);
	req(a, "LOCK k WAIT 1000");
	ck_assert(a->blocked);
	struct rl_call *c = fake_oldest(FK_ACQUIRE);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->lease_ms, 3000);
	ck_assert_int_eq(c->will_wait, 1);
	ck_assert_str_eq(c->old, ""); /* not a handoff */
	fake_acquire_done(c, RL_OK, 7, 2900, 0);
	want(a, "OK 7");
	ck_assert_uint_eq(locktab_keys(), 1);
	req(a, "LOCK k");
	want(a, "OK 7"); /* reentrant: no call */
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	req(a, "UNLOCK k");
	want(a, "OK 1");
	req(a, "UNLOCK k");
	ck_assert(a->blocked);
	c = fake_oldest(FK_RELEASE);
	ck_assert_ptr_nonnull(c);
	fake_release_done(c, RL_OK);
	want(a, "OK 0");
	ck_assert_uint_eq(locktab_keys(), 0);
	req(a, "UNLOCK k");
	want(a, MSG_NOT_HELD);
	leave(a);
}
END_TEST

/* Only the head waiter asks the masters; a release hands the key over
 * with one call, and the UNLOCK is answered by that call's release side. */
START_TEST(fifo_handoff)
{
	struct tclient *a = client(1), *b = client(2), *c = client(3);
	grant(a, "LOCK k", 1);
	req(b, "LOCK k");
	req(c, "LOCK k");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ck_assert(lt_waiting(&b->lt) && lt_waiting(&c->lt));
	req(a, "UNLOCK k");
	struct rl_call *h = fake_oldest(FK_ACQUIRE);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 1);
	ck_assert_str_ne(h->old, ""); /* swaps a's token */
	fake_acquire_done(h, RL_OK, 2, 10000, 0);
	want(b, "OK 2");
	ck_assert(a->blocked); /* its release verdict is still out */
	fake_release_done(h, RL_OK);
	want(a, "OK 0");
	ck_assert(c->blocked);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	leave(a);
	leave(b);
	leave(c);
}
END_TEST

/* de6c85d: the handoff's release verdict comes after the new holder let
 * go; it alone can free the entry. */
START_TEST(handoff_verdict_last_frees)
{
	struct tclient *a = client(1), *b = client(2);
	grant(a, "LOCK k", 1);
	req(b, "LOCK k");
	req(a, "UNLOCK k");
	struct rl_call *h = fake_oldest(FK_ACQUIRE);
	fake_acquire_done(h, RL_OK, 2, 10000, 0);
	want(b, "OK 2");
	req(b, "UNLOCK k");
	fake_release_done(fake_oldest(FK_RELEASE), RL_OK);
	want(b, "OK 0");
	ck_assert_uint_eq(locktab_keys(), 1); /* a still waits for its verdict */
	fake_release_done(h, RL_QUORUM);
	want(a, MSG_RELEASE_UNCONFIRMED);
	ck_assert_uint_eq(locktab_keys(), 0);
	leave(a);
	leave(b);
}
END_TEST

/* a92fd67: a failed attempt answers and frees the entry it used. */
START_TEST(busy_frees_entry)
{
	struct tclient *a = client(1);
	req(a, "TRYLOCK k");
	fake_acquire_done(fake_oldest(FK_ACQUIRE), RL_BUSY, 0, 0, 500);
	want(a, "BUSY");
	ck_assert_uint_eq(locktab_keys(), 0);
	req(a, "LOCK k WAIT 0");
	fake_acquire_done(fake_oldest(FK_ACQUIRE), RL_QUORUM, 0, 0, -1);
	want(a, MSG_NO_QUORUM);
	ck_assert_uint_eq(locktab_keys(), 0);
	leave(a);
}
END_TEST

START_TEST(trylock_never_jumps_queue)
{
	struct tclient *a = client(1), *b = client(2), *c = client(3);
	grant(a, "LOCK k", 1);
	req(b, "LOCK k");
	req(c, "TRYLOCK k");
	want(c, "BUSY");
	req(c, "LOCK k WAIT 0");
	want(c, "TIMEOUT");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	leave(a);
	leave(b);
	leave(c);
}
END_TEST

/* Busy elsewhere: asleep until the lease it saw ends, or a release notice. */
START_TEST(retry_at_lease_end_or_notice)
{
	struct tclient *a = client(1);
	req(a, "LOCK k WAIT 5000");
	fake_acquire_done(fake_oldest(FK_ACQUIRE), RL_BUSY, 0, 0, 40);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ck_assert(lt_waiting(&a->lt));
	run(100);
	struct rl_call *c = fake_oldest(FK_ACQUIRE);
	ck_assert_msg(c != NULL, "no retry after the lease seen (40 ms) ended");
	fake_acquire_done(c, RL_BUSY, 0, 0, 60000);
	run(20);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	lt_notice("k", 1);
	c = fake_oldest(FK_ACQUIRE);
	ck_assert_msg(c != NULL, "a release notice did not wake the waiter");
	fake_acquire_done(c, RL_OK, 9, 10000, 0);
	want(a, "OK 9");
	leave(a);
}
END_TEST

/* No majority: back off and try again until WAIT ends, then ERR QUORUM. */
START_TEST(quorum_until_wait_ends)
{
	struct tclient *a = client(1);
	req(a, "LOCK k WAIT 400");
	int tries = 0;
	int64_t t0 = now_us();
	while (a->blocked && now_us() - t0 < 2000000) {
		struct rl_call *c = fake_oldest(FK_ACQUIRE);
		if (c) {
			tries++;
			fake_acquire_done(c, RL_QUORUM, 0, 0, -1);
		}
		run(10);
	}
	want(a, MSG_NO_QUORUM);
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
	leave(a);
}
END_TEST

START_TEST(lost_at_validity_end)
{
	struct tclient *a = client(1);
	req(a, "LOCK k TTL 5000");
	fake_acquire_done(fake_oldest(FK_ACQUIRE), RL_OK, 4, 60, 0);
	want(a, "OK 4");
	run(30);
	ck_assert_int_eq(a->nout, 1);
	run(60);
	ck_assert_str_eq(last(a), "LOST k 4");
	ck_assert_int_eq(a->replies, 1);           /* an event, not a reply */
	ck_assert_int_eq(fake_released_keys(), 1); /* cleared on the masters */
	req(a, "HELD");
	want(a, "END");
	ck_assert_uint_eq(locktab_keys(), 0);
	leave(a);
}
END_TEST

/* A waiter that leaves while its attempt is out: the grant is given back. */
START_TEST(waiter_leaves_during_acquire)
{
	struct tclient *a = client(1);
	req(a, "LOCK k");
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
	struct tclient *a = client(1);
	grant(a, "LOCK k TTL 5000", 1);
	req(a, "EXTEND k 2");
	ck_assert_msg(strncmp(last(a), "ERR ARG ", 8) == 0, "%s", last(a));
	ck_assert_int_eq(fake_pending(FK_RENEW), 0);
	req(a, "TRYLOCK j TTL 2");
	ck_assert_msg(strncmp(last(a), "ERR ARG ", 8) == 0, "%s", last(a));
	req(a, "EXTEND j 1000");
	want(a, MSG_NOT_HELD);
	leave(a);
}
END_TEST

/* An EXTEND to a shorter lease may land on some masters whatever its
 * verdict: the validity ends with that lease, even before the verdict. */
START_TEST(failed_extend_shortens)
{
	struct tclient *a = client(1);
	grant(a, "LOCK k TTL 10000", 3);
	req(a, "EXTEND k 80");
	struct rl_call *c = fake_oldest(FK_RENEW);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->lease_ms, 80);
	run(120);
	ck_assert_str_eq(a->out[a->nout - 1], "LOST k 3");
	fake_renew_done(c, 0, 0);
	want(a, "ERR NOTHELD the lock was lost");
	ck_assert_uint_eq(locktab_keys(), 0);
	leave(a);
}
END_TEST

/* A verdict that comes after the validity ended is a loss, whatever it
 * says, even before the deadline timer ran (review finding 5): a
 * renewal's and an EXTEND's. */
START_TEST(late_verdicts_are_lost)
{
	struct tclient *a = client(1), *b = client(2);
	req(a, "LOCK k");
	fake_acquire_done(fake_oldest(FK_ACQUIRE), RL_OK, 1, 1200, 0);
	want(a, "OK 1");
	run(1100); /* the watchdog renews after a third of the lease */
	struct rl_call *c = fake_oldest(FK_RENEW);
	ck_assert_ptr_nonnull(c);
	usleep(150 * 1000); /* past the validity, the loop not run */
	fake_renew_done(c, 1, 10000);
	run(10);
	ck_assert_str_eq(last(a), "LOST k 1");
	grant(b, "LOCK j TTL 10000", 2);
	req(b, "EXTEND j 100");
	c = fake_oldest(FK_RENEW);
	usleep(120 * 1000); /* the 100 ms lease written may have lapsed */
	fake_renew_done(c, 1, 9000);
	want(b, "ERR NOTHELD the lock was lost");
	ck_assert_str_eq(b->out[b->nout - 2], "LOST j 2");
	run(10);
	ck_assert_uint_eq(locktab_keys(), 0);
	leave(a);
	leave(b);
}
END_TEST

/* A client reset while its EXTEND is out: the verdict still drops the
 * entry's reference, nothing is answered, nothing leaks. */
START_TEST(reset_during_extend)
{
	struct tclient *a = client(1);
	grant(a, "LOCK k TTL 10000", 3);
	req(a, "EXTEND k 20000");
	struct rl_call *c = fake_oldest(FK_RENEW);
	int before = a->nout;
	lt_client_end(&a->lt);
	run(10);
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
	struct tclient *a = client(1);
	char line[64];
	for (int i = 0; i < 600; i++) {
		snprintf(line, sizeof(line), "LOCK k%d", i);
		grant(a, line, (uint64_t)i + 1);
	}
	ck_assert_uint_eq(locktab_keys(), 600);
	lt_client_end(&a->lt);
	ck_assert_uint_eq(locktab_keys(), 0);
	run(10);
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
	struct tclient *a = client(1);
	grant(a, "LOCK k", 1);
	run(10);
	ck_assert_int_eq(fake_pending(FK_RENEW), 0); /* granted just now */
	struct config n = cfg;
	n.lease_ms = 9000;
	locktab_set_cfg(&n);
	run(10);
	struct rl_call *c = fake_oldest(FK_RENEW);
	ck_assert_msg(c != NULL, "no renewal after the reload");
	ck_assert_int_eq(c->lease_ms, 9000);
	fake_renew_done(c, 1, 8900);
	req(a, "HELD");
	long long ttl = 0;
	ck_assert_int_eq(sscanf(a->out[a->nout - 2], "KEY k 1 1 %lld", &ttl), 1);
	ck_assert_int_gt(ttl, 8000);
	want(a, "END");
	locktab_set_cfg(&cfg); /* lowered back: renewed again, shorter */
	run(10);
	c = fake_oldest(FK_RENEW);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->lease_ms, 3000);
	fake_renew_done(c, 0, 0); /* failed: the validity is the shorter lease's */
	run(3100);
	ck_assert_str_eq(last(a), "LOST k 1");
	leave(a);
}
END_TEST

/* A reload during an acquire (review finding 2): the hold's lease is the
 * one its call wrote, HELD says so, and the watchdog renews it in time
 * (at the new lease), for a plain grant and for a handoff. */
START_TEST(reload_during_acquire)
{
	struct tclient *a = client(1), *b = client(2);
	struct config n = cfg;
	long long ttl = 0;
	req(a, "LOCK k");
	struct rl_call *c = fake_oldest(FK_ACQUIRE);
	ck_assert_int_eq(c->lease_ms, 3000);
	n.lease_ms = 30000;
	locktab_set_cfg(&n);
	run(10); /* the reload's tick: nothing is held yet */
	fake_acquire_done(c, RL_OK, 1, 2900, 0);
	want(a, "OK 1");
	req(a, "HELD");
	ck_assert_int_eq(sscanf(a->out[a->nout - 2], "KEY k 1 1 %lld", &ttl), 1);
	ck_assert_msg(ttl > 2000 && ttl <= 3000, "HELD says %lld ms of a 3000 ms lease", ttl);
	want(a, "END");
	run(1500); /* a third of the 3000 ms lease, and loaded headroom */
	c = fake_oldest(FK_RENEW);
	ck_assert_msg(c != NULL, "the hold of a 3000 ms lease was not renewed within 1.5 s");
	ck_assert_int_eq(c->lease_ms, 30000);
	fake_renew_done(c, 1, 29000);
	/* a handoff asked at the new lease, answered after a reload back */
	req(b, "LOCK k");
	req(a, "UNLOCK k");
	c = fake_oldest(FK_ACQUIRE);
	ck_assert_int_eq(c->lease_ms, 30000);
	locktab_set_cfg(&cfg);
	run(10);
	fake_acquire_done(c, RL_OK, 2, 29000, 0);
	fake_release_done(c, RL_OK);
	want(b, "OK 2");
	want(a, "OK 0");
	req(b, "HELD");
	ck_assert_int_eq(sscanf(b->out[b->nout - 2], "KEY k 2 1 %lld", &ttl), 1);
	ck_assert_msg(ttl > 20000, "HELD says %lld ms of a 30000 ms lease", ttl);
	want(b, "END");
	run(50);
	for (int i = 0; i < b->nout; i++)
		ck_assert_msg(strncmp(b->out[i], "LOST", 4) != 0, "%s", b->out[i]);
	leave(a);
	leave(b);
}
END_TEST

START_TEST(status_counts_waiters)
{
	struct tclient *a = client(1), *b = client(2), *s = client(3);
	grant(a, "LOCK k", 1);
	req(b, "LOCK k");
	req(s, "STATUS k");
	ck_assert_msg(strncmp(last(s), "HELD ", 5) == 0 &&
	                  strcmp(last(s) + strlen(last(s)) - 2, " 1") == 0,
	              "%s", last(s));
	req(s, "STATUS other");
	fake_status_done(fake_oldest(FK_STATUS), 0, 0);
	want(s, "FREE");
	ck_assert_uint_eq(locktab_keys(), 1);
	leave(b);
	leave(a);
	leave(s);
}
END_TEST

/* --- shared holds and permits --- */

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
	struct tclient *a = client(1), *b = client(2), *c = client(3);
	req(a, "LOCK k SHARED");
	req(b, "LOCK k SHARED");
	req(c, "LOCK k SHARED WAIT 1000");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 1); /* one in flight at a time */
	fake_acquire_done(acq_for("k", -1), RL_OK, 5, 10000, 0);
	want(a, "OK 5");
	fake_acquire_done(acq_for("k", -1), RL_OK, 6, 10000, 0);
	want(b, "OK 6");
	fake_acquire_done(acq_for("k", -1), RL_OK, 7, 10000, 0);
	want(c, "OK 7");
	req(a, "UNLOCK k");
	struct rl_call *r = fake_oldest(FK_RELEASE);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->hold, RH_SHARED);
	fake_release_done(r, RL_OK);
	want(a, "OK 0");
	leave(a);
	leave(b);
	leave(c);
}
END_TEST

/* An exclusive waiter holds back the shared requests behind it: it waits
 * (asking nothing) until the shared holders here are gone, and TRYLOCK
 * SHARED is BUSY meanwhile. Its release is no handoff to a shared waiter. */
START_TEST(exclusive_holds_back_shared)
{
	struct tclient *a = client(1), *b = client(2), *c = client(3), *d = client(4);
	req(a, "LOCK k SHARED");
	fake_acquire_done(acq_for("k", -1), RL_OK, 5, 10000, 0);
	want(a, "OK 5");
	req(b, "LOCK k");
	req(c, "LOCK k SHARED");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ck_assert(lt_waiting(&b->lt) && lt_waiting(&c->lt));
	req(d, "TRYLOCK k SHARED");
	want(d, "BUSY");
	req(d, "LOCK k SHARED WAIT 0");
	want(d, "TIMEOUT");
	req(d, "TRYLOCK k");
	want(d, "BUSY");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	req(a, "UNLOCK k");
	struct rl_call *r = fake_oldest(FK_RELEASE);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->hold, RH_SHARED);
	ck_assert_int_gt(r->wait_flag_ms, 0); /* ours wait: the flag goes up */
	struct rl_call *x = acq_for("k", 0);
	ck_assert_str_eq(x->old, ""); /* not a handoff: a shared hold is no lock */
	fake_release_done(r, RL_OK);
	want(a, "OK 0");
	fake_acquire_done(x, RL_OK, 6, 10000, 0);
	want(b, "OK 6");
	ck_assert(c->blocked);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0); /* c waits for b here */
	req(b, "UNLOCK k");
	r = fake_oldest(FK_RELEASE);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->hold, RH_LOCK);
	x = acq_for("k", -1);
	ck_assert_str_eq(x->old, "");
	fake_release_done(r, RL_OK);
	want(b, "OK 0");
	fake_acquire_done(x, RL_OK, 7, 10000, 0);
	want(c, "OK 7");
	leave(a);
	leave(b);
	leave(c);
	leave(d);
}
END_TEST

/* Shared after exclusive: the key's lock held here keeps shared requests
 * here; TRYLOCK SHARED is BUSY without asking. */
START_TEST(shared_waits_for_lock)
{
	struct tclient *a = client(1), *b = client(2), *c = client(3);
	grant(a, "LOCK k", 3);
	req(c, "TRYLOCK k SHARED");
	want(c, "BUSY");
	req(b, "LOCK k SHARED");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	req(a, "UNLOCK k");
	struct rl_call *x = acq_for("k", -1);
	fake_acquire_done(x, RL_OK, 4, 10000, 0);
	want(b, "OK 4");
	fake_release_done(fake_oldest(FK_RELEASE), RL_OK);
	want(a, "OK 0");
	leave(a);
	leave(b);
	leave(c);
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
	struct tclient *a = client(1), *b = client(2);
	grant(b, "LOCK k", 746);
	req(a, "LOCK k PERMITS 2");
	fake_acquire_done(acq_for("k", 1), RL_OK, 747, 10000, 0); /* 0 is b's: not asked */
	want(a, "OK 747");
	req(a, "LOCK k SHARED");
	want(a, "ERR ARG holds permit 1 of k");
	req(a, "LOCK k");
	want(a, "ERR ARG holds permit 1 of k");
	req(a, "TRYLOCK k PERMITS 1");
	want(a, "ERR ARG holds permit 1 of k");
	req(a, "LOCK k PERMITS 3 WAIT 10");
	want(a, "OK 747");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	req(a, "HELD");
	ck_assert_msg(strncmp(a->out[a->nout - 2], "KEY k 747 2 ", 12) == 0, "%s",
	              a->out[a->nout - 2]);
	want(a, "END");
	leave(a);
	leave(b);
}
END_TEST

/* Reentrancy keeps the kind; no upgrade from shared; HELD says the kind. */
START_TEST(reentrant_kinds_and_upgrade)
{
	struct tclient *a = client(1), *b = client(2);
	req(a, "LOCK k SHARED TTL 5000");
	fake_acquire_done(acq_for("k", -1), RL_OK, 5, 10000, 0);
	want(a, "OK 5");
	req(a, "LOCK k SHARED");
	want(a, "OK 5");
	req(a, "LOCK k");
	want(a, "ERR ARG cannot upgrade a shared hold");
	req(a, "TRYLOCK k PERMITS 3");
	want(a, "ERR ARG cannot upgrade a shared hold");
	grant(b, "LOCK j", 9);
	req(b, "LOCK j SHARED");
	want(b, "OK 9");
	req(b, "LOCK j PERMITS 4");
	want(b, "OK 9");
	grant(b, "LOCK p PERMITS 2", 11);
	req(b, "LOCK p");
	want(b, "OK 11");
	req(b, "LOCK p SHARED");
	want(b, "OK 11");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	req(a, "HELD");
	long long ttl = 0;
	ck_assert_int_eq(sscanf(a->out[a->nout - 2], "KEY k 5 2 %lld SHARED", &ttl), 1);
	ck_assert_int_le(ttl, 5000);
	want(a, "END");
	req(b, "HELD");
	ck_assert_msg(strncmp(b->out[b->nout - 3], "KEY j 9 3 ", 10) == 0 &&
	                  !strchr(b->out[b->nout - 3] + 10, ' '),
	              "%s", b->out[b->nout - 3]);
	ck_assert_msg(strncmp(b->out[b->nout - 2], "KEY p 11 3 ", 11) == 0 &&
	                  strstr(b->out[b->nout - 2], " PERMIT 0"),
	              "%s", b->out[b->nout - 2]);
	want(b, "END");
	req(a, "UNLOCK k");
	want(a, "OK 1");
	leave(a);
	leave(b);
}
END_TEST

/* A permit request tries the permits free here, lowest first, the next
 * one when the masters find one busy; all busy: it sleeps like a lock. */
START_TEST(permit_tries_next_free)
{
	struct tclient *a = client(1), *b = client(2), *c = client(3);
	req(a, "LOCK p PERMITS 3");
	fake_acquire_done(acq_for("p", 0), RL_BUSY, 0, 0, 900);
	fake_acquire_done(acq_for("p", 1), RL_OK, 4, 10000, 0);
	want(a, "OK 4");
	req(b, "LOCK p PERMITS 3");
	fake_acquire_done(acq_for("p", 0), RL_BUSY, 0, 0, 900);
	fake_acquire_done(acq_for("p", 2), RL_OK, 5, 10000, 0); /* 1 is ours: not asked */
	want(b, "OK 5");
	req(c, "TRYLOCK p PERMITS 2");
	fake_acquire_done(acq_for("p", 0), RL_BUSY, 0, 0, 900);
	want(c, "BUSY"); /* 1 is held here */
	req(c, "LOCK p PERMITS 3 WAIT 5000");
	struct rl_call *x = acq_for("p", 0);
	fake_acquire_done(x, RL_BUSY, 0, 0, 60);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	ck_assert(lt_waiting(&c->lt));
	run(120); /* the shortest lease seen busy ended: a new round from 0 */
	fake_acquire_done(acq_for("p", 0), RL_OK, 6, 10000, 0);
	want(c, "OK 6");
	req(a, "HELD");
	ck_assert_msg(strstr(a->out[a->nout - 2], " PERMIT 1") != NULL, "%s", a->out[a->nout - 2]);
	want(a, "END");
	req(a, "LOCK p PERMITS 3");
	want(a, "OK 4"); /* at most one permit of a key per session */
	leave(a);
	leave(b);
	leave(c);
}
END_TEST

/* All permits held here: TRYLOCK is BUSY without asking; a release
 * hands the permit to the head waiter whose n covers it. */
/* WHO (1.4): a token says what its grant asked (0, or the n of PERMITS
 * n, at an acquire and at a handoff), and a hold here is found by its
 * token, with its holder, fence and the time of its grant. */
START_TEST(tokens_say_permits_and_find_holds)
{
	struct tclient *a = client(1), *b = client(2), *c = client(3), *d = client(4);
	struct lt_hold_view v;
	req(a, "LOCK k");
	struct rl_call *x = acq_for("k", 0);
	ck_assert_uint_eq(rl_token_permits(x->token), 0);
	char tok[TOKEN_LEN + 1];
	memcpy(tok, x->token, sizeof(tok));
	int64_t t0 = now_us();
	fake_acquire_done(x, RL_OK, 7, 10000, 0);
	want(a, "OK 7");
	ck_assert_int_eq(lt_hold_by_token("k", 1, tok, &v), 1);
	ck_assert_ptr_eq(v.holder, &a->lt);
	ck_assert_uint_eq(v.fence, 7);
	ck_assert(v.since_us >= t0 && v.since_us <= now_us());
	tok[0] = tok[0] == '0' ? '1' : '0';
	ck_assert_int_eq(lt_hold_by_token("k", 1, tok, &v), 0);
	ck_assert_int_eq(lt_hold_by_token("nokey", 5, tok, &v), 0);
	req(b, "LOCK s SHARED");
	x = acq_for("s", -1);
	ck_assert_uint_eq(rl_token_permits(x->token), 0);
	fake_acquire_done(x, RL_OK, 8, 10000, 0);
	want(b, "OK 8");
	req(c, "LOCK p PERMITS 1000");
	x = acq_for("p", 0);
	ck_assert_uint_eq(rl_token_permits(x->token), 1000);
	fake_acquire_done(x, RL_OK, 9, 10000, 0);
	want(c, "OK 9");
	req(d, "LOCK p PERMITS 1 WAIT 5000");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0); /* permit 0 is c's */
	req(c, "UNLOCK p");                            /* a handoff to d: d's token says d's n */
	x = acq_for("p", 0);
	ck_assert_str_ne(x->old, "");
	ck_assert_uint_eq(rl_token_permits(x->old), 1000);
	ck_assert_uint_eq(rl_token_permits(x->token), 1);
	fake_acquire_done(x, RL_OK, 10, 10000, 0);
	want(d, "OK 10");
	fake_release_done(x, RL_OK);
	want(c, "OK 0");
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
	leave(a);
	leave(b);
	leave(c);
	leave(d);
}
END_TEST

START_TEST(permit_handoff_to_covering_waiter)
{
	struct tclient *h[3], *c = client(10), *d = client(11), *e = client(12);
	for (int i = 0; i < 3; i++) {
		h[i] = client((uint64_t)i + 1);
		req(h[i], "LOCK p PERMITS 3");
		fake_acquire_done(acq_for("p", i), RL_OK, (uint64_t)i + 1, 10000, 0);
	}
	req(e, "TRYLOCK p PERMITS 3");
	want(e, "BUSY");
	req(c, "LOCK p PERMITS 2");
	req(d, "LOCK p PERMITS 3");
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	req(h[2], "UNLOCK p"); /* permit 2: c's n does not cover it, d's does */
	struct rl_call *x = acq_for("p", 2);
	ck_assert_str_ne(x->old, "");
	fake_acquire_done(x, RL_OK, 20, 10000, 0);
	want(d, "OK 20");
	ck_assert(c->blocked);
	fake_release_done(x, RL_OK);
	want(h[2], "OK 0");
	req(h[0], "UNLOCK p"); /* permit 0: c, the head */
	x = acq_for("p", 0);
	ck_assert_str_ne(x->old, "");
	fake_acquire_done(x, RL_OK, 21, 10000, 0);
	want(c, "OK 21");
	fake_release_done(x, RL_OK);
	want(h[0], "OK 0");
	req(c, "HELD");
	ck_assert_msg(strstr(c->out[c->nout - 2], " PERMIT 0") != NULL, "%s", c->out[c->nout - 2]);
	want(c, "END");
	for (int i = 0; i < 3; i++)
		leave(h[i]);
	leave(c);
	leave(d);
	leave(e);
}
END_TEST

/* A permit waiter asleep (busy elsewhere) asks at once when a permit
 * held here ends without a handoff (LOST). */
START_TEST(permit_freed_here_wakes_waiter)
{
	struct tclient *a = client(1), *c = client(2);
	req(a, "LOCK p PERMITS 2 TTL 5000");
	fake_acquire_done(acq_for("p", 0), RL_OK, 4, 80, 0);
	want(a, "OK 4");
	req(c, "LOCK p PERMITS 2");
	fake_acquire_done(acq_for("p", 1), RL_BUSY, 0, 0, 60000);
	ck_assert_int_eq(fake_pending(FK_ACQUIRE), 0);
	run(150); /* a's validity ends */
	ck_assert_str_eq(last(a), "LOST p 4");
	struct rl_call *r = fake_oldest(FK_RELEASE);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->permit, 0);
	fake_acquire_done(acq_for("p", 0), RL_OK, 5, 10000, 0);
	want(c, "OK 5");
	leave(a);
	leave(c);
}
END_TEST

/* Live shared holders elsewhere kept an exclusive acquire out and it
 * raised the exclusive-waiting flag: its next attempts say so. */
START_TEST(exclusive_waiting_flag)
{
	struct tclient *a = client(1);
	req(a, "LOCK k WAIT 5000");
	struct rl_call *x = acq_for("k", 0);
	ck_assert_int_eq(x->will_wait, RW_YES);
	x->grant.xwaiting = 1;
	fake_acquire_done(x, RL_BUSY, 0, 0, 30);
	run(80);
	x = acq_for("k", 0);
	ck_assert_int_eq(x->will_wait, RW_RAISED);
	fake_acquire_done(x, RL_OK, 8, 10000, 0);
	want(a, "OK 8");
	req(a, "TRYLOCK j SHARED");
	ck_assert_int_eq(acq_for("j", -1)->will_wait, RW_NO);
	fake_acquire_done(acq_for("j", -1), RL_OK, 9, 10000, 0);
	want(a, "OK 9");
	leave(a);
}
END_TEST

/* Renewal batches and a session's end take every kind of hold together. */
START_TEST(batches_mix_kinds)
{
	struct tclient *a = client(1);
	grant(a, "LOCK k", 1);
	req(a, "LOCK s SHARED");
	fake_acquire_done(acq_for("s", -1), RL_OK, 2, 10000, 0);
	want(a, "OK 2");
	req(a, "LOCK p PERMITS 4");
	fake_acquire_done(acq_for("p", 0), RL_BUSY, 0, 0, 500);
	fake_acquire_done(acq_for("p", 1), RL_OK, 3, 10000, 0);
	want(a, "OK 3");
	struct config n = cfg;
	n.lease_ms = 4000;
	locktab_set_cfg(&n); /* every hold is renewed now, in one batch */
	run(10);
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
	locktab_set_cfg(&cfg);
	lt_client_end(&a->lt);
	run(10);
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
	run(10);
	free(a);
}
END_TEST

START_TEST(status_shared_and_permits)
{
	struct tclient *a = client(1), *b = client(2), *s = client(3);
	req(a, "LOCK k SHARED");
	fake_acquire_done(acq_for("k", -1), RL_OK, 5, 10000, 0);
	want(a, "OK 5");
	req(b, "LOCK k");
	req(s, "STATUS k"); /* held shared: the masters count the holders */
	struct rl_call *c = fake_oldest(FK_STATUS);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->status.npermits, 0);
	fake_status_shared(c, 3, 2500);
	want(s, "SHARED 3 2500 1");
	req(s, "STATUS p PERMITS 3");
	c = fake_oldest(FK_STATUS);
	ck_assert_int_eq(c->status.npermits, 3);
	fake_status_permits(c, 2);
	want(s, "PERMITS 2 3 0");
	req(s, "STATUS p");
	fake_status_done(fake_oldest(FK_STATUS), 0, 0);
	want(s, "FREE");
	leave(b);
	leave(a);
	leave(s);
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
	struct tclient *a = client(1), *b = client(2), *c = client(3);
	req(a, "CAMPAIGN k v");
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
	req(c, "CAMPAIGN k w WAIT 0");
	want(c, "TIMEOUT"); /* held here: never jumps the queue */
	/* the hook takes the leader's release: locktab sends none */
	int rel = fake_pending(FK_RELEASE) + fake_pending(FK_RELEASE_MANY);
	leave(a);
	run(10);
	ck_assert_int_eq(hk.releasing, 1);
	ck_assert_int_eq(hk.taken, 1);
	ck_assert_int_eq(fake_pending(FK_RELEASE) + fake_pending(FK_RELEASE_MANY), rel);
	ck_assert_ptr_null(lt_lock_holder("k", 1, &f, tok));
	/* a plain LOCK: offered, not taken, released by locktab */
	grant(b, "LOCK j", 7);
	want(b, "OK 7");
	leave(b);
	run(10);
	ck_assert_int_eq(hk.releasing, 2);
	ck_assert_int_eq(hk.taken, 1);
	ck_assert_int_gt(fake_pending(FK_RELEASE) + fake_pending(FK_RELEASE_MANY), rel);
	/* lt_drop: all holds let go, nothing sent */
	grant(c, "LOCK m", 9);
	req(c, "LOCK m");
	want(c, "OK 9");
	rel = fake_pending(FK_RELEASE) + fake_pending(FK_RELEASE_MANY);
	lt_drop(&c->lt, "m", 1);
	ck_assert_int_eq(lt_holds(&c->lt, "m", 1), 0);
	ck_assert_int_eq(fake_pending(FK_RELEASE) + fake_pending(FK_RELEASE_MANY), rel);
	leave(c);
	static const struct lt_elect_hooks none = {NULL, NULL};
	lt_set_elect_hooks(&none);
}
END_TEST

Suite *locktab_suite(void)
{
	Suite *s = suite_create("locktab");
	TCase *tc = tcase_create("locktab");
	tcase_add_checked_fixture(tc, setup, teardown);
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
	tcase_add_test(tc, election_hooks);
	tcase_add_test(tc, reload_renews_with_new_lease);
	tcase_add_test(tc, reload_during_acquire);
	tcase_add_test(tc, status_counts_waiters);
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
