/* resume_moves: a resumable session (protocol 1.2) that moves between
 * lockd and comes back, against real masters and two or three real lockd
 * (issue 28's review findings). PROTOCOL.md, "The latest state": what a
 * RESUME restores comes from the masters' records, never from a copy of
 * the session older than them; QUIT always ends a session; hold counts
 * survive exactly; two RESUMEs racing each answer OK or ERR NOSESSION. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "sess_util.h"

/* A long lease: lockd A's touch (every lease/3) must not come between a
 * move and the move back, or A would have forgotten the session and the
 * move back would be an ordinary adoption. */
#define LONG_LEASE 30000
static const struct h_opts long_opts = {
    .lease_ms = LONG_LEASE, .top_extra = "sessions:\n  grace_ms: 10000\n  max_grace_ms: 60000\n"};

#define LEASE 3000
static const struct h_opts opts = {
    .lease_ms = LEASE, .top_extra = "sessions:\n  grace_ms: 10000\n  max_grace_ms: 60000\n"};

/* PROTOCOL.md "Service levels": a session's locks are released within 1 s
 * of its end; plus the headroom of a loaded machine */
#define RELEASE_LIMIT (1000 + H_LOADED)

/* A -> B -> A -> C: on B the session releases k and takes it again (a
 * new grant, a larger fence); back on A, whose own copy of the session
 * still says the old fence, HELD and a reentrant LOCK must answer B's
 * fence, and the count written then must carry it, so that C too
 * restores B's fence with the count A gave it. */
START_TEST(resume_back_takes_latest)
{
	h_std(&long_opts);
	int b = h_lockd_start(&long_opts);
	int cc = h_lockd_start(&long_opts);
	struct cl *c = cl_open();
	struct sess s;
	session(c, "SESSION GRACE 20000", 20000, &s);
	unsigned long long f1 = cl_lock(c, "LOCK k");

	struct cl *c2 = cl_tcp(h_lockd(b)->port);
	resume(c2, &s, "OK 1");
	cl_expect(c2, "UNLOCK k", "OK 0");
	unsigned long long f2 = cl_lock(c2, "LOCK k");
	ck_assert_msg(f2 > f1, "B's new grant %llu, not above %llu", f2, f1);

	struct cl *c3 = cl_open(); /* back on A, where c is still attached */
	resume(c3, &s, "OK 1");
	expect_held(c3, "KEY k %llu 1 *", f2);
	unsigned long long again = cl_lock(c3, "LOCK k");
	ck_assert_msg(again == f2,
	              "reentrant LOCK on A answered fence %llu, B granted %llu (A's "
	              "old copy said %llu)",
	              again, f2, f1);
	expect_held(c3, "KEY k %llu 2 *", f2);

	struct cl *c4 = cl_tcp(h_lockd(cc)->port);
	resume(c4, &s, "OK 1");
	expect_held(c4, "KEY k %llu 2 *", f2);
	ck_assert_int_eq(c4->nlost, 0);
	/* on C (A and B may answer BUSY from their own copies until their
	 * touch: PROTOCOL 1.2 lets them) */
	struct cl *o = cl_tcp(h_lockd(cc)->port);
	cl_expect(o, "TRYLOCK k", "BUSY");
	cl_expect(c4, "UNLOCK k", "OK 1");
	cl_expect(c4, "UNLOCK k", "OK 0");
	double ms;
	double t0 = h_now_ms();
	const char *r = NULL;
	for (int t = 0; t < 1000 && h_now_ms() - t0 < RELEASE_LIMIT; t++) {
		r = cl_cmd(o, "TRYLOCK k", H_SLOW_LIMIT);
		if (r && strncmp(r, "OK ", 3) == 0)
			break;
		h_sleep_ms(10);
	}
	ms = h_now_ms() - t0;
	ck_assert_msg(r && strncmp(r, "OK ", 3) == 0,
	              "TRYLOCK k after the last UNLOCK: '%s' "
	              "after %.0f ms",
	              r ? r : "(nothing)", ms);
	ck_assert(h_fence(r) > f2);
	cl_close(o);
	cl_close(c4);
	cl_close(c3);
	cl_close(c2);
	cl_close(c);
}
END_TEST

/* A session detached on A, resumed on B, ended there with QUIT after a
 * new grant: A, which still has the session, must not bring it back at
 * its touch (the record is gone from the masters because the session
 * ended, not because a master lost its data). Over several of A's
 * touches, k stays free for others and the session stays ended on A. */
START_TEST(ended_elsewhere_stays_ended)
{
	h_std(&opts);
	int b = h_lockd_start(&opts);
	struct cl *c = cl_open();
	struct sess s;
	session(c, "SESSION GRACE 60000", 60000, &s);
	unsigned long long f1 = cl_lock(c, "LOCK k");
	blip(c); /* detached on A */

	struct cl *c2 = cl_tcp(h_lockd(b)->port);
	resume(c2, &s, "OK 1");
	cl_expect(c2, "UNLOCK k", "OK 0");
	unsigned long long f2 = cl_lock(c2, "LOCK k");
	ck_assert(f2 > f1);
	cl_expect(c2, "QUIT", "OK");
	cl_close(c2);
	double t0 = h_now_ms();

	/* A touches every lease/3: three touches and more */
	struct cl *o = cl_tcp(h_lockd(b)->port);
	int granted = 0;
	while (h_now_ms() - t0 < LEASE + 1000) {
		const char *r = cl_cmd(o, "TRYLOCK k", H_SLOW_LIMIT);
		ck_assert_msg(r != NULL, "TRYLOCK k: no reply");
		if (strncmp(r, "OK ", 3) == 0) {
			ck_assert(h_fence(r) > f2);
			granted++;
			cl_expect(o, "UNLOCK k", "OK 0");
		} else {
			ck_assert_msg(strcmp(r, "BUSY") == 0, "TRYLOCK k: '%s'", r);
			ck_assert_msg(h_now_ms() - t0 <= RELEASE_LIMIT,
			              "TRYLOCK k: BUSY %.0f ms after the session's QUIT on B (%d "
			              "grants before): the ended session holds k again",
			              h_now_ms() - t0, granted);
		}
		h_sleep_ms(50);
	}
	ck_assert_int_gt(granted, 0);
	struct cl *c3 = cl_open();
	resume(c3, &s, NOSESSION);
	cl_close(c3);
	cl_close(o);
}
END_TEST

/* LOCK k twice, then UNLOCK k while the link from A to master 2 is cut:
 * the count write (2 -> 1) reaches masters 0 and 1 only, and A answers
 * OK 1. A dies; B adopts from records that say 1, 1 and 2: the count a
 * majority holds is the one the client was answered. */
START_TEST(counts_survive_cut_link)
{
	h_masters_start(3);
	struct h_proxy *px = h_proxy_start(h_master(2)->port);
	int via[3] = {0, 0, h_proxy_port(px)};
	struct h_opts ao = opts;
	ao.via = via;
	int a = h_lockd_start(&ao);
	int b = h_lockd_start(&opts);
	struct cl *c = cl_tcp(h_lockd(a)->port);
	struct sess s;
	session(c, "SESSION GRACE 10000", 10000, &s);
	unsigned long long f = cl_lock(c, "LOCK k");
	ck_assert(cl_lock(c, "LOCK k") == f);
	ck_assert_int_ge(h_proxy_hold(px), 1);
	cl_expect(c, "UNLOCK k", "OK 1");
	h_lockd_signal(a, SIGKILL);
	ck_assert_int_ne(h_lockd_wait(a, 3000), -1);
	cl_want_eof(c, H_TMO);
	cl_close(c);

	struct cl *c2 = cl_tcp(h_lockd(b)->port);
	resume(c2, &s, "OK 1");
	expect_held(c2, "KEY k %llu 1 *", f);
	cl_expect(c2, "UNLOCK k", "OK 0");
	cl_close(c2);
	h_proxy_stop(px);
}
END_TEST

/* Two RESUMEs of one detached session sent at once to lockd B and C:
 * each answers OK or ERR NOSESSION, at least one OK, never ERR QUORUM
 * (every master answers). Then the session is where the last OK left it. */
START_TEST(racing_resumes)
{
	h_std(&opts);
	int b = h_lockd_start(&opts);
	int cc = h_lockd_start(&opts);
	struct cl *c = cl_open();
	struct sess s;
	session(c, "SESSION GRACE 10000", 10000, &s);
	unsigned long long f = cl_lock(c, "LOCK k");
	blip(c);
	char req[128];
	snprintf(req, sizeof(req), "RESUME %s %s\n", s.id, s.secret);
	for (int round = 0; round < 4; round++) {
		struct cl *x = cl_tcp(h_lockd(b)->port);
		struct cl *y = cl_tcp(h_lockd(cc)->port);
		cl_send(x, req);
		cl_send(y, req);
		const char *rx = cl_reply(x, H_SLOW_LIMIT);
		char ax[128];
		snprintf(ax, sizeof(ax), "%s", rx ? rx : "(nothing)");
		const char *ry = cl_reply(y, H_SLOW_LIMIT);
		char ay[128];
		snprintf(ay, sizeof(ay), "%s", ry ? ry : "(nothing)");
		int okx = strcmp(ax, "OK 1") == 0, oky = strcmp(ay, "OK 1") == 0;
		ck_assert_msg(
		    (okx || strcmp(ax, NOSESSION) == 0) && (oky || strcmp(ay, NOSESSION) == 0),
		    "round %d: racing RESUMEs answered '%s' (B) and '%s' (C)", round, ax, ay);
		ck_assert_msg(okx || oky, "round %d: neither RESUME answered OK ('%s', '%s')",
		              round, ax, ay);
		/* the session is on one of them: a fresh RESUME there or elsewhere works */
		cl_close(x);
		cl_close(y);
	}
	struct cl *z = cl_tcp(h_lockd(b)->port);
	resume(z, &s, "OK 1");
	expect_held(z, "KEY k %llu 1 *", f);
	cl_close(z);
}
END_TEST

/* A session at limits.max_locks_per_session (10,000 holds, the default)
 * resumes on another lockd, and every hold comes back: the adoption takes
 * them 256 a script, each a few ms on a master, where one script for all
 * ran some 140 ms and outlived redis.timeout_ms (ERR QUORUM, the session
 * half adopted). A volume test: the reply may take a multiple of the
 * level, and the time is printed. */
#define MANY 10000
START_TEST(resume_at_the_limit)
{
	static const struct h_opts o = {.lease_ms = 15000}; /* no hold lapses before B adopts it */
	h_std(&o);
	int b = h_lockd_start(&o);
	struct cl *c = cl_open();
	struct sess s;
	session(c, "SESSION GRACE 10000", 10000, &s);
	char req[64];
	for (int done = 0; done < MANY;) {
		int n = MANY - done < 250 ? MANY - done : 250;
		for (int k = 0; k < n; k++) {
			snprintf(req, sizeof(req), "LOCK many-%d\n", done + k);
			cl_send(c, req);
		}
		for (int k = 0; k < n; k++) {
			const char *r = cl_reply(c, H_SLOW_LIMIT + 5000);
			ck_assert_msg(r && strncmp(r, "OK ", 3) == 0, "LOCK many-%d: '%s'",
			              done + k, r ? r : "(nothing)");
		}
		done += n;
	}
	h_lockd_signal(0, SIGKILL);
	ck_assert_int_ne(h_lockd_wait(0, 3000), -1);
	cl_want_eof(c, H_TMO);
	cl_close(c);

	struct cl *c2 = cl_tcp(h_lockd(b)->port);
	snprintf(req, sizeof(req), "RESUME %s %s", s.id, s.secret);
	double t0 = h_now_ms();
	const char *r = cl_cmd(c2, req, 5 * H_SLOW_LIMIT);
	double ms = h_now_ms() - t0;
	fprintf(stderr, "resume_at_the_limit: RESUME of %d holds took %.0f ms\n", MANY, ms);
	snprintf(req, sizeof(req), "OK %d", MANY);
	ck_assert_msg(r && strcmp(r, req) == 0, "RESUME of %d holds: '%s' after %.0f ms", MANY,
	              r ? r : "(nothing)", ms);
	ck_assert_int_eq(c2->nlost, 0);
	struct cl *x = cl_tcp(h_lockd(b)->port);
	char *held = cl_stat(x, "locks_held");
	ck_assert_msg(held && atoi(held) == MANY, "lockd B holds %s locks after the RESUME",
	              held ? held : "(no STATS)");
	free(held);
	cl_close(x);
	cl_close(c2);
}
END_TEST

/* Session id's record key, in buf. */
static const char *rec_key(char *buf, size_t len, const char *id)
{
	snprintf(buf, len, "lockd: session %s", id);
	return buf;
}

/* The owner named by master i's record of session id (malloc'd). */
static char *record_owner(int i, const char *id)
{
	char rkey[128];
	return h_redis(i, "HGET", rec_key(rkey, sizeof(rkey), id), "o", NULL);
}

/* Master i's record of session id has adoption count want. */
static void count_is(int i, const char *id, const char *want)
{
	char rkey[128];
	char *a = h_redis(i, "HGET", rec_key(rkey, sizeof(rkey), id), "a", NULL);
	ck_assert_msg(a && strcmp(a, want) == 0, "master %d: session %s's count '%s', not %s", i,
	              id, a ? a : "(no answer)", want);
	free(a);
}

/* A RESUME on B that reaches only master 1 (B's links to masters 0 and 2
 * are cut) answers ERR QUORUM and changes nothing: master 1's record
 * still names A, so that A keeps renewing k on every master, and
 * stopping master 0 afterwards costs the session nothing, as before. */
#define SHORT_LEASE 1500
START_TEST(failed_resume_keeps_fault_tolerance)
{
	h_masters_start(3);
	struct h_proxy *p0 = h_proxy_start(h_master(0)->port);
	struct h_proxy *p2 = h_proxy_start(h_master(2)->port);
	int via[3] = {h_proxy_port(p0), 0, h_proxy_port(p2)};
	static const char *sx = "sessions:\n  grace_ms: 10000\n  max_grace_ms: 60000\n";
	int a = h_lockd_start(&(struct h_opts){.lease_ms = SHORT_LEASE, .top_extra = sx});
	int b =
	    h_lockd_start(&(struct h_opts){.lease_ms = SHORT_LEASE, .top_extra = sx, .via = via});
	struct cl *c = cl_tcp(h_lockd(a)->port);
	struct sess s;
	session(c, "SESSION GRACE 10000", 10000, &s);
	unsigned long long f = cl_lock(c, "LOCK k");
	char *owner = record_owner(1, s.id);
	ck_assert_msg(owner && strlen(owner) == 16, "master 1's record owner: '%s'",
	              owner ? owner : "(none)");

	ck_assert_int_ge(h_proxy_hold(p0), 1);
	ck_assert_int_ge(h_proxy_hold(p2), 1);
	struct cl *c2 = cl_tcp(h_lockd(b)->port);
	char req[128];
	snprintf(req, sizeof(req), "RESUME %s %s", s.id, s.secret);
	cl_expect_prefix(c2, req, "ERR QUORUM");
	cl_close(c2);
	for (int i = 0; i < 3; i++) {
		char *o = record_owner(i, s.id);
		ck_assert_msg(
		    o && strcmp(o, owner) == 0,
		    "master %d's record names '%s' after the failed RESUME on B, A is '%s'", i,
		    o ? o : "(none)", owner);
		free(o);
	}

	h_master_stop(0);
	double t0 = h_now_ms();
	while (h_now_ms() - t0 < 2 * SHORT_LEASE + 500)
		cl_silence(c, 100);
	ck_assert_msg(c->nlost == 0, "A's client got '%s' with masters 1 and 2 up", c->lost[0]);
	expect_held(c, "KEY k %llu 1 *", f);
	h_master_cont(0);
	free(owner);
	cl_close(c);
	h_proxy_stop(p0);
	h_proxy_stop(p2);
}
END_TEST

#define MOVE_LEASE 6000
#define TOUCH_MS   (MOVE_LEASE / 3)

/* Masters, lockd A (0) and B (*b), and a resumable session on A that
 * holds k: its fence. */
static unsigned long long move_start(struct cl **c, struct sess *s, int *b)
{
	static const char *sx = "sessions:\n  grace_ms: 10000\n  max_grace_ms: 60000\n";
	const struct h_opts o = {.lease_ms = MOVE_LEASE, .top_extra = sx};
	h_std(&o);
	*b = h_lockd_start(&o);
	*c = cl_open();
	session(*c, "SESSION GRACE 20000", 20000, s);
	return cl_lock(*c, "LOCK k");
}

/* The masters of mask lose session id's record. */
static void lose_record(unsigned mask, const char *id)
{
	char rkey[128];
	rec_key(rkey, sizeof(rkey), id);
	for (int i = 0; i < 3; i++)
		if (mask & 1u << i)
			free(h_redis(i, "DEL", rkey, NULL));
}

/* For one touch period and its headroom (A's touch comes within it), no
 * master of mask gets session id's record back. */
static void stays_lost(unsigned mask, const char *id, const char *others)
{
	for (double t0 = h_now_ms(); h_now_ms() - t0 < TOUCH_MS + H_LOADED; h_sleep_ms(20))
		for (int i = 0; i < 3; i++) {
			if (!(mask & 1u << i))
				continue;
			char *w = record_owner(i, id);
			ck_assert_msg(
			    w && strcmp(w, "(nil)") == 0,
			    "master %d lost session %s's record (%s), and A wrote '%s' back "
			    "at its touch",
			    i, id, others, w ? w : "(no answer)");
			free(w);
		}
}

/* Within a touch period and its headroom, every master of mask names
 * owner in session id's record. */
static void comes_back(unsigned mask, const char *id, const char *owner)
{
	int named = 0;
	for (double t0 = h_now_ms(); !named && h_now_ms() - t0 < TOUCH_MS + H_LOADED;) {
		named = 1;
		for (int i = 0; i < 3; i++) {
			if (!(mask & 1u << i))
				continue;
			char *w = record_owner(i, id);
			named &= w && strcmp(w, owner) == 0;
			free(w);
		}
		if (!named)
			h_sleep_ms(20);
	}
	ck_assert_msg(named, "B (%s) did not write session %s's record back within %d ms", owner,
	              id, TOUCH_MS + H_LOADED);
}

/* Within a touch period and its headroom, A (lockd 0) drops its copy of
 * the session: it has no resumable session left. */
static void a_drops(void)
{
	struct cl *x = cl_tcp(h_lockd(0)->port);
	char *n = NULL;
	double t0 = h_now_ms();
	for (int t = 0; t < 1000 && h_now_ms() - t0 < TOUCH_MS + H_LOADED; t++) {
		free(n);
		n = cl_stat(x, "sessions_resumable");
		if (strcmp(n, "0") == 0)
			break;
		h_sleep_ms(20);
	}
	ck_assert_msg(strcmp(n, "0") == 0, "A still has %s resumable session(s)", n);
	free(n);
	cl_close(x);
}

/* B's client still holds k at fence f, and heard no LOST. */
static void b_keeps(struct cl *c2, unsigned long long f)
{
	expect_held(c2, "KEY k %llu 1 *", f);
	ck_assert_msg(!c2->eof && c2->nlost == 0, "B's client: eof %d, lost '%s'", c2->eof,
	              c2->nlost ? c2->lost[0] : "");
}

/* A (lockd 0) and master 2 are stopped while the session moves to B
 * (lockd b): B gives its requests to master 2 up (redis.timeout_ms)
 * before master 2 runs again, so its adoption never reaches master 2.
 * B's client. */
static struct cl *move_past_master2(const struct sess *s, int b)
{
	h_lockd_signal(0, SIGSTOP);
	h_master_stop(2);
	struct cl *c2 = cl_tcp(h_lockd(b)->port);
	resume(c2, s, "OK 1");
	h_sleep_ms(H_REDIS_TMO + 500);
	h_master_cont(2);
	return c2;
}

/* B stopped, the masters of mask lose session id's record; A (stopped
 * before) runs a touch and writes none of them back (others: what the
 * other masters hold); then B runs and writes them back, naming bname. */
static void a_then_b(unsigned mask, const char *id, int b, const char *bname, const char *others)
{
	h_lockd_signal(b, SIGSTOP);
	lose_record(mask, id);
	h_lockd_signal(0, SIGCONT);
	stays_lost(mask, id, others);
	h_lockd_signal(b, SIGCONT);
	comes_back(mask, id, bname);
}

/* A lockd left with a stale copy of a session must not write its record
 * back where a master lost it, once a master that kept it names the
 * lockd the session moved to (the CI failure of safety_soak: A refilled
 * two restarted masters with its own name, and B, reading a majority
 * naming A at its touch, dropped the session it served and closed its
 * client). A is stopped while the session moves to B; then B is stopped
 * and masters 0 and 1 lose the record; A runs a touch, and its client
 * asks a new grace (SESSION): A writes nothing, and answers ERR QUORUM.
 * B runs again: it writes the record back everywhere, keeps its client
 * and its hold, and A drops its copy at its next touch. */
START_TEST(stale_copy_does_not_refill)
{
	struct cl *c;
	struct sess s;
	int b;
	unsigned long long f = move_start(&c, &s, &b);
	h_lockd_signal(0, SIGSTOP);
	struct cl *c2 = cl_tcp(h_lockd(b)->port);
	resume(c2, &s, "OK 1");
	h_lockd_signal(b, SIGSTOP);
	char *bname = record_owner(2, s.id);
	ck_assert_msg(bname && strlen(bname) == 16, "master 2's record owner: '%s'",
	              bname ? bname : "(none)");
	lose_record(3, s.id);

	h_lockd_signal(0, SIGCONT);
	/* nor does a new grace asked on A's stale copy (where c is attached) */
	cl_expect_prefix(c, "SESSION GRACE 15000", "ERR QUORUM");
	stays_lost(3, s.id, "master 2 names B");
	h_lockd_signal(b, SIGCONT);
	comes_back(7, s.id, bname);
	a_drops();
	b_keeps(c2, f);
	free(bname);
	cl_close(c2);
	cl_close(c);
}
END_TEST

/* The other side of the same rule: the lockd the session moved to writes
 * the record back even while a master still names the old one, since its
 * own record is the later (interleaving 15: the adoption count orders
 * them). A is stopped and master 2 too while the session moves to B, so
 * B's adoption lands on masters 0 and 1 only and master 2 still names A.
 * Master 0 then loses the record. A (running again) reads missing, B's,
 * its own: it writes nothing. B reads missing, its own, A's: it writes
 * master 0 back and keeps its client's hold. Before the counts were
 * compared, neither wrote and B's holds lapsed (found by a review of the
 * first version of this rule). */
START_TEST(moved_split_refill)
{
	struct cl *c;
	struct sess s;
	int b;
	unsigned long long f = move_start(&c, &s, &b);
	char *aname = record_owner(2, s.id);
	ck_assert_msg(aname && strlen(aname) == 16, "master 2's record owner: '%s'",
	              aname ? aname : "(none)");

	struct cl *c2 = move_past_master2(&s, b);
	char *bname = record_owner(1, s.id);
	ck_assert_msg(bname && strlen(bname) == 16 && strcmp(bname, aname) != 0,
	              "master 1's record owner after the RESUME on B: '%s' (A is %s)",
	              bname ? bname : "(none)", aname);
	char *w = record_owner(2, s.id);
	ck_assert_msg(w && strcmp(w, aname) == 0, "master 2 (stopped during the RESUME) names '%s'",
	              w ? w : "(none)");
	free(w);
	a_then_b(1, s.id, b, bname, "master 1 names B, master 2 A");
	b_keeps(c2, f);
	free(aname);
	free(bname);
	cl_close(c2);
	cl_close(c);
}
END_TEST

/* Interleaving 16: a record written back carries its owner's adoption
 * count. The session is adopted once on A (count 1), then moves to B
 * while master 2 is stopped (masters 0 and 1 name B with count 2, master
 * 2 still A with 1). Master 1 loses the record and B writes it back;
 * then master 0 loses it while B is stopped. A reads missing, B's, its
 * own: B's record on master 1 outranks A's, so A writes nothing. B
 * writes master 0 back and keeps its client's hold. Before a record
 * written back carried the count, B's on master 1 read 0, A wrote
 * master 0 with its own name (with master 2, a majority), and B dropped
 * the session it served and closed its client (safety_soak, ASan build,
 * in a CI rehearsal). */
START_TEST(refill_keeps_count)
{
	struct cl *c;
	struct sess s;
	int b;
	unsigned long long f = move_start(&c, &s, &b);
	cl_close(c);
	c = cl_open(); /* A again: adopted there, count 1 */
	resume(c, &s, "OK 1");
	for (int i = 0; i < 3; i++)
		count_is(i, s.id, "1");
	char *aname = record_owner(2, s.id);
	ck_assert_msg(aname && strlen(aname) == 16, "master 2's record owner: '%s'",
	              aname ? aname : "(none)");

	struct cl *c2 = move_past_master2(&s, b);
	char *bname = record_owner(1, s.id), *w = record_owner(2, s.id);
	ck_assert_msg(bname && strlen(bname) == 16 && strcmp(bname, aname) != 0 && w &&
	                  strcmp(w, aname) == 0,
	              "after the RESUME on B: master 1 names '%s', master 2 '%s' (A is %s)",
	              bname ? bname : "(none)", w ? w : "(none)", aname);
	free(w);
	count_is(0, s.id, "2");
	count_is(2, s.id, "1");
	lose_record(2, s.id);
	comes_back(2, s.id, bname); /* B writes master 1 back, with its count */
	count_is(1, s.id, "2");

	a_then_b(1, s.id, b, bname, "master 1 names B (written back), master 2 A");
	b_keeps(c2, f);
	free(aname);
	free(bname);
	cl_close(c2);
	cl_close(c);
}
END_TEST

/* An owner's rank is one count, written on every master its adoption
 * reaches, even where a master's first round came after the majority's
 * and read a higher count (what an adoption that reached a minority
 * leaves; here 5, put on A's record by hand on master 2): no record of
 * the owner outranks it, so that it is the owner's rank a stale copy's
 * is compared with (interleaving 16). Master 2 is stopped while B's
 * RESUME reads masters 0 and 1 (0 and 0: B's rank is 1), then runs again
 * within redis.timeout_ms. Before, master 2 got 6, and B compared its
 * records' largest count (found by a review). */
START_TEST(late_master_count)
{
	static const char *sx = "sessions:\n  grace_ms: 10000\n";
	const struct h_opts o = {.lease_ms = MOVE_LEASE, .timeout_ms = 1500, .top_extra = sx};
	h_std(&o);
	int b = h_lockd_start(&o);
	struct cl *c = cl_open();
	struct sess s;
	session(c, "SESSION GRACE 10000", 10000, &s);
	unsigned long long f = cl_lock(c, "LOCK k");
	char rkey[128];
	free(h_redis(2, "HSET", rec_key(rkey, sizeof(rkey), s.id), "a", "5", NULL));

	h_master_stop(2);
	struct cl *c2 = cl_tcp(h_lockd(b)->port);
	char req[96];
	snprintf(req, sizeof(req), "RESUME %s %s\n", s.id, s.secret);
	cl_send(c2, req);
	h_sleep_ms(300); /* masters 0 and 1 answer both rounds meanwhile */
	h_master_cont(2);
	const char *l = cl_reply(c2, H_TMO);
	ck_assert_msg(l && strcmp(l, "OK 1") == 0, "RESUME on B: '%s'", l ? l : "(none)");
	char *bname = record_owner(0, s.id);
	for (int i = 0; i < 3; i++) {
		char *w = record_owner(i, s.id);
		ck_assert_msg(w && bname && strcmp(w, bname) == 0,
		              "master %d names '%s', not B (%s)", i, w ? w : "(none)",
		              bname ? bname : "(none)");
		free(w);
		count_is(i, s.id, "1");
	}
	/* B's the session: A drops its copy, B keeps the hold */
	a_drops();
	b_keeps(c2, f);
	free(bname);
	cl_close(c2);
	cl_close(c);
}
END_TEST

TCase *tc_resume_moves(void)
{
	TCase *tc = tcase_create("resume_moves");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, resume_back_takes_latest);
	H_ADD(tc, ended_elsewhere_stays_ended);
	H_ADD(tc, counts_survive_cut_link);
	H_ADD(tc, racing_resumes);
	H_ADD(tc, resume_at_the_limit);
	H_ADD(tc, failed_resume_keeps_fault_tolerance);
	H_ADD(tc, stale_copy_does_not_refill);
	H_ADD(tc, moved_split_refill);
	H_ADD(tc, refill_keeps_count);
	H_ADD(tc, late_master_count);
	return tc;
}
