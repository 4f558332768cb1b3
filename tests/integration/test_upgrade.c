/* upgrade: a rolling upgrade, a lockd of this build (A, index 0) beside a
 * lockd of an older one (B, index 1: the binary LOCKD_OLD names) on the
 * same three real masters, as while the lockd of a deployment are
 * replaced one at a time. Each build must take the other's holds for
 * holds: one key is never held on both, fences grow across both, a
 * resumable session moves between them with its holds and fences, shared
 * holds and permits count across them, and a fence counter that lapses
 * (locks.fence_idle_ms) and starts again keeps fences growing whichever
 * build grants. Without LOCKD_OLD each test says so and is skipped;
 * .ci/run builds the commit .ci/upgrade-from names (scripts/build-old.sh)
 * and runs them with it (README "Upgrading"). doc/design.md, "Rolling
 * upgrades". */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "soak_run.h"

#define LEASE 3000 /* the harness's default */

/* The older lockd, or NULL (the test is skipped, saying so). A LOCKD_OLD
 * that names no program fails: CI set it, and a skip would hide that. */
static const char *old_lockd(const char *test)
{
	const char *old = getenv("LOCKD_OLD");
	if (!old || !*old) {
		fprintf(stderr, "%s: LOCKD_OLD is not set: skipped\n", test);
		return NULL;
	}
	ck_assert_msg(access(old, X_OK) == 0, "LOCKD_OLD=%s: not an executable file", old);
	return old;
}

/* Masters 0-2, lockd A (this build) and B (old), both with o's settings. */
static void two_builds(const char *old, struct h_opts o)
{
	h_masters_start(3);
	ck_assert_int_eq(h_lockd_start(&o), 0);
	o.bin = old;
	ck_assert_int_eq(h_lockd_start(&o), 1);
}

/* ------------------------------------------------------------------ handoffs */

#define NKEYS   3
#define PER     3    /* sessions per lockd per key */
#define RUN_MS  2500 /* of handing the keys round */
#define WAIT_MS 5000 /* each LOCK's WAIT */

/* Sessions with a LOCK or UNLOCK outstanding, or holding, over all runs. */
static int runs_busy(const struct run *r, int n)
{
	int b = 0;
	for (int k = 0; k < n; k++)
		for (int i = 0; i < r[k].n; i++)
			b += r[k].s[i].st == S_LOCKING || r[k].s[i].st == S_UNLOCKING ||
			     r[k].s[i].st == S_HOLDING;
	return b;
}

/* Several clients on each build hand NKEYS keys round with short holds.
 * The soak's checker (soak_run.c) judges each key: a hold lasts from the
 * receipt of its OK to the sending of its UNLOCK, a grant received while
 * another session of either build holds the key is an overlap, a fence
 * not above every fence granted before it (in the order the grants were
 * received, across both builds) a regression. Key 0's holders also
 * count themselves in and out on master 0 (the soak's fenced resource). */
START_TEST(upgrade_mixed_handoff)
{
	const char *old = old_lockd("upgrade_mixed_handoff");
	if (!old)
		return;
	two_builds(old, (struct h_opts){0});
	struct run r[NKEYS];
	char req[NKEYS][64];
	for (int k = 0; k < NKEYS; k++) {
		char key[16];
		snprintf(key, sizeof(key), "up%d", k);
		snprintf(req[k], sizeof(req[k]), "LOCK %s WAIT %d\n", key, WAIT_MS);
		run_init(&r[k], 2 * PER, key, 4242u + (unsigned)k);
		for (int i = 0; i < 2 * PER; i++) {
			struct sess *s = &r[k].s[i];
			s->inst = i % 2;
			s->c = cl_tcp(h_lockd(s->inst)->port);
			cl_expect(s->c, "PING", "PONG");
			s->lock_req = req[k];
			s->hold_min = 1;
			s->hold_max = 5;
			s->think_min = 0;
			s->think_max = 3;
			s->st = S_IDLE;
		}
	}
	r[0].rc = rc_open(h_master(0)->port, 2000);
	ck_assert_ptr_nonnull(r[0].rc);

	double t0 = h_now_ms();
	for (long n = 0; n < 1000000 && h_now_ms() - t0 < RUN_MS; n++)
		for (int k = 0; k < NKEYS; k++)
			run_round(&r[k], 1);
	for (int k = 0; k < NKEYS; k++)
		r[k].stopping = 1;
	double td = h_now_ms();
	for (long n = 0; n < 1000000 && runs_busy(r, NKEYS) && h_now_ms() - td < WAIT_MS + 2000;
	     n++)
		for (int k = 0; k < NKEYS; k++)
			run_round(&r[k], 1);
	ck_assert_msg(runs_busy(r, NKEYS) == 0,
	              "%d sessions still locking, holding or unlocking %d ms after the last LOCK",
	              runs_busy(r, NKEYS), WAIT_MS + 2000);

	for (int k = 0; k < NKEYS; k++) {
		int g[2] = {0, 0};
		for (int i = 0; i < r[k].n; i++)
			g[r[k].s[i].inst] += r[k].s[i].grants;
		printf("upgrade_mixed_handoff: %s: %ld grants (%d by this build, %d by the old "
		       "one), overlaps %ld, regressions %ld, timeouts %ld, quorum %ld (UNLOCK "
		       "%ld), lost %ld\n",
		       r[k].key, r[k].grants, g[0], g[1], r[k].overlaps, r[k].regressions,
		       r[k].timeouts, r[k].quorum, r[k].quorum_unlock, r[k].lost);
		print_lat("upgrade_mixed_handoff", "handoff between the builds", &r[k].xlat);
		fflush(stdout);
		run_check(&r[k]);
		ck_assert_int_eq(r[k].nseq, k == 0 ? r[k].grants : 0);
		ck_assert_msg(r[k].timeouts == 0 && r[k].lost == 0,
		              "%s: %ld LOCK WAIT %d timed out, %ld LOST, with healthy masters",
		              r[k].key, r[k].timeouts, WAIT_MS, r[k].lost);
		/* not vacuous: both builds granted, and handed the key to each other */
		ck_assert_msg(g[0] >= 5 && g[1] >= 5,
		              "%s: %d grants by this build, %d by the old one", r[k].key, g[0],
		              g[1]);
		ck_assert_msg(r[k].xlat.n >= 3, "%s: %d handoffs between the builds in %ld grants",
		              r[k].key, r[k].xlat.n, r[k].grants);
		run_free(&r[k]);
	}
}
END_TEST

/* ------------------------------------------------------------------ sessions */

/* SESSION GRACE 10000 on c: its id and secret, the reply checked. */
static void new_session(struct cl *c, char *id, char *secret)
{
	const char *l = cl_cmd(c, "SESSION GRACE 10000", H_SLOW_LIMIT);
	char want[128];
	ck_assert_msg(l && sscanf(l, "SESSION %16s %32s", id, secret) == 2, "SESSION: '%s'",
	              l ? l : "(no reply)");
	snprintf(want, sizeof(want), "SESSION %s %s 10000", id, secret);
	ck_assert_str_eq(l, want);
}

/* RESUME id secret on c must answer exactly exp. */
static void resume_expect(struct cl *c, const char *id, const char *secret, const char *exp)
{
	char req[96];
	snprintf(req, sizeof(req), "RESUME %s %s", id, secret);
	cl_expect(c, req, exp);
}

/* HELD on c must be one line "KEY key fence holds ttl_ms" (the ttl a
 * number up to the lease) and END. */
static void expect_held_one(struct cl *c, const char *key, unsigned long long fence, int holds)
{
	char want[128];
	snprintf(want, sizeof(want), "KEY %s %llu %d ", key, fence, holds);
	cl_send(c, "HELD\n");
	const char *l = cl_reply(c, H_TMO);
	ck_assert_msg(l && strncmp(l, want, strlen(want)) == 0, "HELD: '%s', want '%s<ttl>'",
	              l ? l : "(none)", want);
	const char *t = l + strlen(want);
	ck_assert_msg(*t && strspn(t, "0123456789") == strlen(t) && atoll(t) <= LEASE,
	              "HELD: '%s': ttl", l);
	cl_want(c, "END", H_TMO);
}

/* TRYLOCK key on c, every 20 ms, until it answers OK (each other answer
 * BUSY), within limit_ms; returns the fence. */
static unsigned long long trylock_until(struct cl *c, const char *key, int limit_ms)
{
	char req[64];
	snprintf(req, sizeof(req), "TRYLOCK %s", key);
	double t0 = h_now_ms();
	for (int n = 0; n < 10000; n++) {
		const char *l = cl_cmd(c, req, H_SLOW_LIMIT);
		ck_assert_msg(l != NULL, "%s: no reply", req);
		if (strncmp(l, "OK ", 3) == 0) {
			printf(
			    "upgrade_resume_across_builds: %s granted %.0f ms after the release\n",
			    req, h_now_ms() - t0);
			return h_fence(l);
		}
		ck_assert_msg(strcmp(l, "BUSY") == 0, "%s: '%s'", req, l);
		ck_assert_msg(h_now_ms() - t0 <= limit_ms, "%s: still BUSY after %.0f ms", req,
		              h_now_ms() - t0);
		h_sleep_ms(20);
	}
	ck_abort_msg("%s: 10000 BUSY", req);
	return 0;
}

/* One direction: a session takes key on lockd `from`, its connection is
 * reset (detached there), and it resumes on lockd `to`: the hold carries
 * over with its fence, and the old lockd's other clients find the key
 * BUSY. Released on `to`, the key is granted on `from` (once `from` has
 * learnt of the move: within lease/3, PROTOCOL.md 1.2 "On another
 * lockd"), with a larger fence. */
static void resume_across(int from, int to, const char *key)
{
	char id[17], secret[33], req[64];
	struct cl *c = cl_tcp(h_lockd(from)->port);
	new_session(c, id, secret);
	snprintf(req, sizeof(req), "LOCK %s", key);
	unsigned long long f = cl_lock(c, req);
	struct cl *o = cl_tcp(h_lockd(to)->port);
	snprintf(req, sizeof(req), "TRYLOCK %s", key);
	cl_expect(o, req, "BUSY");
	struct linger lg = {1, 0};
	ck_assert(setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
	cl_close(c); /* a reset: detached on `from` */

	struct cl *n = cl_tcp(h_lockd(to)->port);
	resume_expect(n, id, secret, "OK 1");
	expect_held_one(n, key, f, 1);
	ck_assert_int_eq(n->nlost, 0);
	cl_expect_stat(n, "adoptions", "1");
	/* reentrant on the new lockd: the same fence, one more hold */
	snprintf(req, sizeof(req), "LOCK %s", key);
	ck_assert_uint_eq(cl_lock(n, req), f);
	expect_held_one(n, key, f, 2);
	struct cl *p = cl_tcp(h_lockd(from)->port);
	snprintf(req, sizeof(req), "TRYLOCK %s", key);
	cl_expect(p, req, "BUSY");

	snprintf(req, sizeof(req), "UNLOCK %s", key);
	cl_expect(n, req, "OK 1");
	cl_expect(n, req, "OK 0");
	unsigned long long g = trylock_until(p, key, LEASE / 3 + H_LOADED);
	ck_assert_msg(g > f, "%s granted again with fence %llu, not above %llu", key, g, f);
	snprintf(req, sizeof(req), "UNLOCK %s", key);
	cl_expect(p, req, "OK 0");
	cl_close(p);
	cl_close(n);
	cl_close(o);
}

/* A resumable session (1.2) moves between the builds both ways with its
 * hold, its fence and its hold count; then one taken on the old build
 * that is stopped (SIGTERM: its resumable holds stay on the masters, as
 * when the upgrade replaces it) resumes on this one. */
START_TEST(upgrade_resume_across_builds)
{
	const char *old = old_lockd("upgrade_resume_across_builds");
	if (!old)
		return;
	two_builds(old, (struct h_opts){0});
	resume_across(1, 0, "old-to-new");
	resume_across(0, 1, "new-to-old");

	char id[17], secret[33];
	struct cl *c = cl_tcp(h_lockd(1)->port);
	new_session(c, id, secret);
	unsigned long long f = cl_lock(c, "LOCK stopped");
	h_lockd_signal(1, SIGTERM);
	int st = h_lockd_wait(1, 5000);
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	              "the old lockd after SIGTERM: %s", h_status_str(st));
	cl_close(c);
	struct cl *n = cl_tcp(h_lockd(0)->port);
	resume_expect(n, id, secret, "OK 1");
	expect_held_one(n, "stopped", f, 1);
	ck_assert_int_eq(n->nlost, 0);
	struct cl *o = cl_tcp(h_lockd(0)->port);
	cl_expect(o, "TRYLOCK stopped", "BUSY");
	cl_expect(n, "UNLOCK stopped", "OK 0");
	ck_assert_uint_gt(cl_lock(o, "TRYLOCK stopped"), f);
	cl_close(o);
	cl_close(n);
}
END_TEST

/* ------------------------------------------------------------------ shared holds, permits */

/* Shared holds (1.1) keep an exclusive lock out across the builds and an
 * exclusive lock keeps them out; readers of both builds hold together;
 * PERMITS 2 admits two holders over both builds, a third on either is
 * BUSY, and STATUS counts the permits of both. */
START_TEST(upgrade_shared_and_permits)
{
	const char *old = old_lockd("upgrade_shared_and_permits");
	if (!old)
		return;
	two_builds(old, (struct h_opts){0});
	struct cl *a = cl_tcp(h_lockd(0)->port), *a2 = cl_tcp(h_lockd(0)->port);
	struct cl *b = cl_tcp(h_lockd(1)->port), *b2 = cl_tcp(h_lockd(1)->port);
	long long ttl, w;

	/* a reader on each build, a writer on each kept out */
	unsigned long long fa = cl_lock(a, "LOCK s SHARED");
	cl_expect(b2, "TRYLOCK s", "BUSY");
	cl_expect(b2, "LOCK s WAIT 0", "TIMEOUT");
	unsigned long long fb = cl_lock(b, "TRYLOCK s SHARED");
	ck_assert_uint_gt(fb, fa);
	cl_expect(a2, "TRYLOCK s", "BUSY");
	for (int i = 0; i < 2; i++) {
		struct cl *x = i ? b2 : a2;
		const char *l = cl_cmd(x, "STATUS s", H_SLOW_LIMIT);
		char want[64] = "";
		if (l && sscanf(l, "SHARED 2 %lld %lld", &ttl, &w) == 2)
			snprintf(want, sizeof(want), "SHARED 2 %lld %lld", ttl, w);
		ck_assert_msg(l && strcmp(l, want) == 0 && ttl > 0 && ttl <= LEASE && w == 0,
		              "STATUS s on lockd %d: '%s', want 'SHARED 2 <ttl> 0'", i,
		              l ? l : "(none)");
	}
	/* the old build's reader alone keeps this build's writer out */
	cl_expect(a, "UNLOCK s", "OK 0");
	cl_expect(a2, "TRYLOCK s", "BUSY");
	cl_expect(b, "UNLOCK s", "OK 0");
	unsigned long long fx = cl_lock(a2, "TRYLOCK s");
	ck_assert_uint_gt(fx, fb);
	/* this build's writer keeps the old build's readers and writers out */
	cl_expect(b, "TRYLOCK s SHARED", "BUSY");
	cl_expect(b2, "TRYLOCK s", "BUSY");
	cl_expect(a2, "UNLOCK s", "OK 0");
	/* and the old build's writer this build's readers */
	unsigned long long fy = cl_lock(b2, "TRYLOCK s");
	ck_assert_uint_gt(fy, fx);
	cl_expect(a, "TRYLOCK s SHARED", "BUSY");
	cl_expect(b2, "UNLOCK s", "OK 0");
	ck_assert_uint_gt(cl_lock(a, "TRYLOCK s SHARED"), fy);
	cl_expect(a, "UNLOCK s", "OK 0");

	/* PERMITS 2: one holder on each build, a third on either is BUSY */
	unsigned long long pa = cl_lock(a, "LOCK p PERMITS 2");
	unsigned long long pb = cl_lock(b, "TRYLOCK p PERMITS 2");
	ck_assert_uint_gt(pb, pa);
	cl_expect(a2, "TRYLOCK p PERMITS 2", "BUSY");
	cl_expect(b2, "TRYLOCK p PERMITS 2", "BUSY");
	cl_expect(b2, "LOCK p PERMITS 2 WAIT 0", "TIMEOUT");
	cl_expect(a2, "STATUS p PERMITS 2", "PERMITS 2 2 0");
	cl_expect(b2, "STATUS p PERMITS 2", "PERMITS 2 2 0");
	cl_expect(a2, "STATUS p PERMITS 3", "PERMITS 2 3 0");
	/* a third permit, on the old build, then none left below 3 */
	unsigned long long pc = cl_lock(b2, "TRYLOCK p PERMITS 3");
	ck_assert_uint_gt(pc, pb);
	cl_expect(a2, "TRYLOCK p PERMITS 3", "BUSY");
	cl_expect(a2, "STATUS p PERMITS 3", "PERMITS 3 3 0");
	cl_expect(b2, "UNLOCK p", "OK 0");
	/* the old build's permit released: this build takes one, the old one
	   none; this build's released: the old one takes it */
	cl_expect(b, "UNLOCK p", "OK 0");
	unsigned long long pd = cl_lock(a2, "TRYLOCK p PERMITS 2");
	ck_assert_uint_gt(pd, pc);
	cl_expect(b, "TRYLOCK p PERMITS 2", "BUSY");
	cl_expect(a, "UNLOCK p", "OK 0");
	ck_assert_uint_gt(cl_lock(b, "TRYLOCK p PERMITS 2"), pd);
	cl_expect(b2, "STATUS p PERMITS 2", "PERMITS 2 2 0");
	cl_expect(a2, "UNLOCK p", "OK 0");
	cl_expect(b, "UNLOCK p", "OK 0");
	cl_expect(a2, "STATUS p PERMITS 2", "PERMITS 0 2 0");
	cl_close(a);
	cl_close(a2);
	cl_close(b);
	cl_close(b2);
}
END_TEST

/* ------------------------------------------------------------------ fence counters */

#define FC_IDLE   1000 /* locks.fence_idle_ms */
#define FC_RUN_MS 2500 /* of grants alternating */
/* A pause after which no master has the counter: its last write (a
 * grant's, or a write-back's SCR_RAISE, which may arrive as late as
 * redis.timeout_ms after lockd gave up on it) set FC_IDLE ms of expiry. */
#define FC_PAUSE_MS (FC_IDLE + H_REDIS_TMO + 200)
/* A counter that starts again starts at the master's clock in us, rounded
 * down to 100 ms (scripts.c): at least FC_IDLE - 100 ms of clock above
 * where it started before, less one per grant since. A jump of more than
 * this is a restart; any other grant adds 1. */
#define FC_RESTART_JUMP 100000ULL

/* One grant of fc on c (lockd i): above last, a restart when it jumps.
 * Returns its fence. */
static unsigned long long fc_grant(struct cl *c, int i, unsigned long long last, double t0,
                                   int *restarts)
{
	unsigned long long f = cl_lock(c, "LOCK fc WAIT 2000");
	ck_assert_msg(f > last, "lockd %d (%s) granted fence %llu after %llu, %.0f ms in", i,
	              i ? "old build" : "this build", f, last, h_now_ms() - t0);
	if (last && f - last > FC_RESTART_JUMP) {
		(*restarts)++;
		printf("upgrade_fence_counter_restarts: the counter started again at %.0f ms (by "
		       "%s): %llu -> %llu\n",
		       h_now_ms() - t0, i ? "the old build" : "this build", last, f);
	}
	cl_expect(c, "UNLOCK fc", "OK 0");
	return f;
}

/* With locks.fence_idle_ms 1000, grants of one key alternate between the
 * builds for 2.5 s: every fence is above the one before, whichever build
 * granted it and whichever started the counter again. This build never
 * pushes a counter's expiry back at a grant (scripts.c, ACQUIRE), and
 * neither does the build .ci/upgrade-from names: a busy key's counter lapses about a second after
 * it started and starts again at the master's clock, twice in the run on
 * an idle machine. A fence write-back (SCR_RAISE) sets the expiry of the
 * counters it raises, though, and on a loaded machine, where masters
 * answer late and write-backs come many a second, they can keep every
 * master's counter alive for seconds (seen: one restart in 6 s); and a
 * build that pushes it back at each grant keeps it alive here. So the
 * busy restarts are counted, not required; then the old build grants,
 * the key rests FC_PAUSE_MS, after which no master has the counter, and
 * this build's grant must start it again above every fence the old one
 * gave, and the old build's next grant go on from there. */
START_TEST(upgrade_fence_counter_restarts)
{
	const char *old = old_lockd("upgrade_fence_counter_restarts");
	if (!old)
		return;
	two_builds(old, (struct h_opts){.locks_extra = "  fence_idle_ms: 1000\n"});
	struct cl *c[2] = {cl_tcp(h_lockd(0)->port), cl_tcp(h_lockd(1)->port)};
	unsigned long long last = 0;
	int grants[2] = {0, 0}, restarts = 0, n;
	double t0 = h_now_ms();
	for (n = 0; n < 50000 && h_now_ms() - t0 < FC_RUN_MS; n++) {
		last = fc_grant(c[n % 2], n % 2, last, t0, &restarts);
		grants[n % 2]++;
	}
	int busy = restarts;
	char *wb[2] = {cl_stat(c[0], "fence_writebacks"), cl_stat(c[1], "fence_writebacks")};
	printf("upgrade_fence_counter_restarts: %d grants (%d by this build, %d by the old "
	       "one) in %.0f ms, the counter started again %d times; fence write-backs %s and "
	       "%s\n",
	       n, grants[0], grants[1], h_now_ms() - t0, busy, wb[0] ? wb[0] : "?",
	       wb[1] ? wb[1] : "?");
	fflush(stdout);
	free(wb[0]);
	free(wb[1]);

	/* the old build's counter, left to lapse; this build starts it again */
	last = fc_grant(c[1], 1, last, t0, &restarts);
	h_sleep_ms(FC_PAUSE_MS);
	last = fc_grant(c[0], 0, last, t0, &restarts);
	ck_assert_msg(restarts == busy + 1,
	              "no restart of the counter after it rested %d ms (fence_idle_ms %d): "
	              "fence %llu",
	              FC_PAUSE_MS, FC_IDLE, last);
	fc_grant(c[1], 1, last, t0, &restarts);
	ck_assert_int_eq(restarts, busy + 1);
	cl_close(c[0]);
	cl_close(c[1]);
}
END_TEST

TCase *tc_upgrade(void)
{
	TCase *tc = tcase_create("upgrade");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, upgrade_mixed_handoff);
	H_ADD(tc, upgrade_resume_across_builds);
	H_ADD(tc, upgrade_shared_and_permits);
	H_ADD(tc, upgrade_fence_counter_restarts);
	return tc;
}
