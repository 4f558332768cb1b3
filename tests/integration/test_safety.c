/* safety: the lease a session believes in never outlasts the lease on a
 * majority of the masters (issue 15, parts 1, 3, 4 and 5): EXTEND and TTL
 * values the drift allowance uses up, a failed EXTEND that shortened the
 * lease, reloads of locks.lease_ms (with and without a renewal in flight),
 * a session reset during EXTEND, and fence counters that expire. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "harness.h"

/* ------------------------------------------------------------------ helpers */

/* Rewrite lockd idx's config with locks.lease_ms changed from one value to
 * another, and send SIGHUP. Returns the log size before the signal (for
 * h_lockd_reloaded()). */
static long set_lease(int idx, int from, int to)
{
	char old[64], new[64];
	snprintf(old, sizeof(old), "\n  lease_ms: %d\n", from);
	snprintf(new, sizeof(new), "\n  lease_ms: %d\n", to);
	char *conf = h_slurp(h_lockd(idx)->conf);
	ck_assert_msg(conf != NULL, "%s: %s", h_lockd(idx)->conf, strerror(errno));
	char *out = h_replace1(conf, old, new);
	long off = h_lockd_reload(idx, out);
	free(conf);
	free(out);
	return off;
}

/* HELD: the ttl_ms of key (-1 when it is not listed); every line is
 * checked ("KEY key fence holds ttl_ms", then END). *fence gets the fence
 * of key when listed. */
static long long held_ttl(struct cl *c, const char *key, unsigned long long *fence)
{
	cl_send(c, "HELD\n");
	long long ttl = -1;
	const char *l = cl_reply(c, H_TMO);
	for (int n = 0;; n++) {
		ck_assert_msg(l != NULL, "HELD: reply ended (%s) before END",
		              c->eof ? "EOF" : "timeout");
		if (strcmp(l, "END") == 0)
			break;
		ck_assert_msg(n < 1000, "HELD: more than 1000 lines");
		char k[400], back[600], tail;
		unsigned long long f;
		long long h, t;
		int good = strlen(l) < 500 &&
		           sscanf(l, "KEY %399s %llu %lld %lld%c", k, &f, &h, &t, &tail) == 4;
		if (good) {
			snprintf(back, sizeof(back), "KEY %s %llu %lld %lld", k, f, h, t);
			good = strcmp(back, l) == 0 && f > 0 && h >= 1 && t >= 0;
		}
		ck_assert_msg(good, "HELD: bad line '%s'", l);
		if (strcmp(k, key) == 0) {
			ttl = t;
			if (fence)
				*fence = f;
		}
		l = cl_line(c, H_TMO); /* no event inside a multi-line reply */
	}
	return ttl;
}

/* PTTL of rkey on master i; -3 when the master does not answer. */
static long long pttl(int i, const char *rkey)
{
	char *r = h_redis(i, "PTTL", rkey, NULL);
	if (!r)
		return -3;
	char *end;
	long long v = strtoll(r, &end, 10);
	ck_assert_msg(*r && !*end, "master %d: PTTL %s answered '%s'", i, rkey, r);
	free(r);
	return v;
}

/* Take a lock (request req, the key at rkey on the masters) that lands on
 * all three masters: lockd writes only to masters it is connected to, and
 * a master that timed out a moment ago may still be reconnecting. Bounded;
 * returns the fence; *t_sent (if not NULL) gets when the granted request
 * was sent. */
static unsigned long long lock_on_all(struct cl *c, const char *req, const char *key,
                                      const char *rkey, double *t_sent)
{
	char un[400], last[400] = "";
	snprintf(un, sizeof(un), "UNLOCK %s", key);
	double end = h_now_ms() + 5000;
	for (int t = 0; t < 100 && h_now_ms() < end; t++) {
		double ts = h_now_ms();
		const char *r = cl_cmd(c, req, H_TMO);
		ck_assert_msg(r != NULL, "'%s': no reply (%s)", req, c->eof ? "EOF" : "timeout");
		snprintf(last, sizeof(last), "%s", r);
		if (strncmp(r, "OK ", 3) == 0) {
			unsigned long long f = h_fence(r);
			if (h_masters_with_pttl(3, rkey, NULL, NULL) == 3) {
				if (t_sent)
					*t_sent = ts;
				return f;
			}
			cl_expect(c, un, "OK 0");
		} else {
			/* masters still reconnecting */
			ck_assert_msg(strcmp(r, "BUSY") == 0 || strcmp(r, "TIMEOUT") == 0 ||
			                  strncmp(r, "ERR QUORUM", 10) == 0,
			              "'%s': got '%s'", req, r);
		}
		h_sleep_ms(100);
	}
	ck_abort_msg("'%s' never landed on all 3 masters within 5 s (last reply '%s')", req, last);
}

/* ------------------------------------------------------------------ tests */

/* A TTL or EXTEND that the drift allowance (ms * 0.01 + 2 ms) uses up is
 * ERR ARG and changes nothing: not the lock, not the masters. */
START_TEST(extend_within_drift)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open();
	unsigned long long f = lock_on_all(a, "LOCK k TTL 10000", "k", "lockd:k", NULL);
	cl_expect_prefix(a, "EXTEND k 1", "ERR ARG");
	cl_expect_prefix(a, "EXTEND k 2", "ERR ARG");
	for (int i = 0; i < 3; i++) {
		long long p = pttl(i, "lockd:k");
		ck_assert_msg(p > 9000 && p <= 10000,
		              "PTTL lockd:k on master %d is %lld after EXTEND k 1 / k 2 (ERR ARG "
		              "changes nothing; was 10000)",
		              i, p);
	}
	unsigned long long hf = 0;
	long long t = held_ttl(a, "k", &hf);
	ck_assert_msg(t > 9000 && t <= 10000, "HELD ttl of k %lld after the refused EXTENDs", t);
	ck_assert_uint_eq(hf, f);
	cl_expect(b, "TRYLOCK k", "BUSY");

	cl_expect_prefix(a, "LOCK k2 TTL 2", "ERR ARG");
	cl_expect_prefix(a, "TRYLOCK k3 TTL 2", "ERR ARG");
	cl_expect_prefix(a, "LOCK k4 WAIT 0 TTL 1", "ERR ARG");
	cl_expect_held(a, "k");
	for (int i = 0; i < 3; i++)
		ck_assert_msg(h_redis_int(i, "EXISTS", "lockd:k2", "lockd:k3", "lockd:k4", NULL) ==
		                  0,
		              "a refused TTL lock was written on master %d", i);
	ck_assert_int_eq(a->nlost, 0);

	/* 3 ms is the smallest TTL the allowance leaves room for: not ERR ARG
	 * (whether the attempt fits in under 1 ms is another matter) */
	const char *r = cl_cmd(b, "TRYLOCK k5 TTL 3", H_TMO);
	ck_assert_msg(r != NULL, "TRYLOCK k5 TTL 3: no reply");
	ck_assert_msg(strncmp(r, "ERR ARG", 7) != 0, "TRYLOCK k5 TTL 3: got '%s'", r);
	cl_expect(a, "UNLOCK k", "OK 0");
	cl_close(a);
	cl_close(b);
}
END_TEST

/* Wait up to ms for A's next line, which must be want (its LOST): *t_lost
 * is when it was read, unless set already (then nothing is read). */
static void watch_lost(struct cl *a, const char *want, double *t_lost, int ms)
{
	if (*t_lost >= 0) {
		h_sleep_ms(ms);
		return;
	}
	const char *l = cl_line(a, ms);
	if (l) {
		ck_assert_msg(strcmp(l, want) == 0, "A got '%s', expected '%s'", l, want);
		*t_lost = h_now_ms();
	}
}

/* TRYLOCK k on b, A's LOST read as it comes while its reply is awaited:
 * B's round trip is not added to the LOST's time. The reply, or NULL
 * after H_TMO. */
static const char *trylock_watching(struct cl *b, struct cl *a, const char *want, double *t_lost)
{
	cl_send(b, "TRYLOCK k\n");
	double end = h_now_ms() + H_TMO;
	for (;;) {
		watch_lost(a, want, t_lost, 0);
		const char *r = cl_reply(b, 5);
		if (r || h_now_ms() >= end)
			return r;
	}
}

/* A failed EXTEND with a shorter lease: some masters took the new lease, so
 * the holder's validity ends with it, and the holder gets LOST before any
 * other lockd can be granted the key. */
START_TEST(failed_extend_shortens)
{
	h_std(NULL);
	h_lockd_start(NULL);
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	unsigned long long f = lock_on_all(a, "LOCK k TTL 20000", "k", "lockd:k", NULL);
	cl_expect(b, "TRYLOCK k", "BUSY");
	char lost[64];
	snprintf(lost, sizeof(lost), "LOST k %llu", f);

	h_master_stop(1);
	h_master_stop(2);
	double t0 = h_now_ms();
	const char *r = cl_cmd(a, "EXTEND k 600", 5000);
	double t_reply = h_now_ms();
	ck_assert_msg(r != NULL, "EXTEND k 600: no reply within 5 s (%s)",
	              a->eof ? "EOF" : "timeout");
	ck_assert_msg(
	    strncmp(r, "ERR QUORUM", 10) == 0 || strncmp(r, "ERR NOTHELD", 11) == 0,
	    "EXTEND k 600 with 2 of 3 masters stopped: got '%s', expected 'ERR QUORUM...' "
	    "or 'ERR NOTHELD...'",
	    r);
	/* the reply bound with masters stopped: redis.timeout_ms + 500 ms */
	ck_assert_msg(t_reply - t0 <= H_SLOW_LIMIT, "EXTEND k 600 answered after %.0f ms",
	              t_reply - t0);
	/* master 0 took the new lease: it ends 600 ms after the EXTEND */
	long long p0 = pttl(0, "lockd:k");
	ck_assert_msg(p0 <= 600, "PTTL lockd:k on master 0 is %lld after EXTEND k 600", p0);
	double t_lost = -1;
	if (a->nlost) {
		/* LOST came before the reply */
		ck_assert_int_eq(a->nlost, 1);
		ck_assert_str_eq(a->lost[0], lost);
		t_lost = t_reply;
	}
	/* the stopped masters now apply the queued PEXPIRE 600 too */
	h_master_cont(1);
	h_master_cont(2);

	/* poll A for its LOST and B for the key, interleaved: B's OK must come
	 * after A's LOST, which is read as it comes (the test's own requests
	 * to B and its waits are not added to its time) */
	double t_ok = -1;
	unsigned long long g = 0;
	int tries = 0;
	for (; tries < 300 && h_now_ms() - t0 < 3000 && t_ok < 0; tries++) {
		r = trylock_watching(b, a, lost, &t_lost);
		ck_assert_msg(r != NULL, "TRYLOCK k on B: no reply");
		if (strncmp(r, "OK ", 3) == 0) {
			t_ok = h_now_ms();
			g = h_fence(r);
			break;
		}
		ck_assert_msg(strcmp(r, "BUSY") == 0 || strncmp(r, "ERR QUORUM", 10) == 0,
		              "TRYLOCK k on B: got '%s'", r);
		if (t_lost < 0 && h_now_ms() - t0 > 600 + H_JITTER)
			break; /* too late already: reported below */
		watch_lost(a, lost, &t_lost, 10);
	}
	if (t_ok >= 0 && t_lost < 0) {
		/* a LOST that crossed B's TRYLOCK on the wire still counts */
		const char *l = cl_line(a, 0);
		if (l && strcmp(l, lost) == 0)
			t_lost = h_now_ms();
		ck_assert_msg(
		    t_lost >= 0,
		    "B was granted k (fence %llu) %.0f ms after the EXTEND while A had no "
		    "'%s' (got '%s'): two holders",
		    g, t_ok - t0, lost, l ? l : "nothing");
	}
	if (t_lost < 0) {
		/* not yet: wait for it (bounded), to report when it came */
		const char *l = cl_line(a, 2000);
		if (l)
			ck_assert_msg(strcmp(l, lost) == 0, "A got '%s', expected '%s'", l, lost);
		ck_abort_msg("A got '%s' %.0f ms after EXTEND k 600 was sent, expected it within "
		             "%d ms (the new lease is 600 ms)",
		             l ? l : "no LOST", h_now_ms() - t0, 600 + H_JITTER);
	}
	ck_assert_msg(t_lost - t0 <= 600 + H_JITTER,
	              "'%s' came %.0f ms after EXTEND k 600 was sent (new lease 600 ms)", lost,
	              t_lost - t0);
	if (t_ok >= 0) {
		ck_assert_msg(g > f, "fence %llu on B after %llu on A", g, f);
		fprintf(stderr,
		        "failed_extend_shortens: LOST at %.0f ms, B granted at %.0f ms after the "
		        "EXTEND\n",
		        t_lost - t0, t_ok - t0);
	} else {
		fprintf(stderr,
		        "failed_extend_shortens: LOST at %.0f ms; B not granted within %.0f ms (%d "
		        "tries)\n",
		        t_lost - t0, h_now_ms() - t0, tries);
	}
	cl_expect(a, "HELD", "END");
	cl_expect_prefix(a, "EXTEND k 1000", "ERR NOTHELD");
	cl_close(a);
	cl_close(b);
}
END_TEST

/* Raising and lowering locks.lease_ms by reload while a lock without TTL is
 * held: no LOST with healthy masters, and the renewals go on at the new
 * lease. */
START_TEST(reload_lease_no_lost)
{
	struct h_opts o = {.lease_ms = 3000};
	h_std(&o);
	struct cl *a = cl_open(), *b = cl_open();
	unsigned long long f = cl_lock(a, "LOCK r1"), hf = 0;
	cl_silence(a, 500);

	/* raise 3000 -> 30000 */
	double t0 = h_now_ms();
	long off = set_lease(0, 3000, 30000);
	h_lockd_wait_reloaded(0, off, 1000);
	/* the next renewal comes before the old lease's validity ends, and
	 * writes the new lease */
	long long t = -1;
	double el = 0;
	for (int k = 0; k < 200; k++) {
		t = held_ttl(a, "r1", &hf);
		el = h_now_ms() - t0;
		ck_assert_msg(t >= 0, "r1 no longer held %.0f ms after raising lease_ms (%s)", el,
		              a->nlost ? a->lost[0] : "no LOST");
		ck_assert_uint_eq(hf, f);
		/* by the end of the old lease's validity (3000 ms): a later
		 * renewal would be a LOST (safety: no headroom) */
		if (t > 20000 || el > 3000 + H_JITTER)
			break;
		h_sleep_ms(50);
	}
	ck_assert_msg(t > 20000, "HELD ttl of r1 is %lld %.0f ms after lease_ms 3000 -> 30000", t,
	              el);
	fprintf(stderr, "reload_lease_no_lost: renewed at the new lease %.0f ms after SIGHUP\n",
	        el);
	int big = 0;
	for (int i = 0; i < 3; i++)
		big += pttl(i, "lockd:r1") > 20000;
	ck_assert_msg(big >= 2, "PTTL lockd:r1 > 20000 on %d masters after the renewal", big);
	double rest = 5000 - (h_now_ms() - t0);
	if (rest > 0)
		cl_silence(a, (int)rest);
	ck_assert_int_eq(a->nlost, 0);
	cl_expect(b, "TRYLOCK r1", "BUSY");

	/* lower 30000 -> 3000 */
	t0 = h_now_ms();
	off = set_lease(0, 30000, 3000);
	h_lockd_wait_reloaded(0, off, 1000);
	for (int k = 0; k < 200; k++) {
		t = held_ttl(a, "r1", &hf);
		el = h_now_ms() - t0;
		ck_assert_msg(t >= 0, "r1 no longer held %.0f ms after lowering lease_ms (%s)", el,
		              a->nlost ? a->lost[0] : "no LOST");
		ck_assert_uint_eq(hf, f);
		/* renewed at the new lease by its first renewal: a third of
		 * it (1000 ms) after the reload, loaded headroom (the old
		 * rhythm would take 10 s) */
		if (t <= 3000 || el > 1000 + 2 * H_LOADED)
			break;
		h_sleep_ms(50);
	}
	ck_assert_msg(t <= 3000, "HELD ttl of r1 is %lld %.0f ms after lease_ms 30000 -> 3000", t,
	              el);
	fprintf(stderr, "reload_lease_no_lost: renewed at the lower lease %.0f ms after SIGHUP\n",
	        el);
	/* for the rest of 5 s: renewed at 3000, on a majority, no LOST */
	int samples = 0;
	for (int k = 0; k < 200 && h_now_ms() - t0 < 5000; k++) {
		t = held_ttl(a, "r1", &hf);
		el = h_now_ms() - t0;
		ck_assert_msg(t > 0 && t <= 3000,
		              "HELD ttl of r1 is %lld %.0f ms after lowering "
		              "lease_ms to 3000 (%s)",
		              t, el, a->nlost ? a->lost[0] : "no LOST");
		ck_assert_uint_eq(hf, f);
		int ok = 0;
		long long p[3];
		for (int i = 0; i < 3; i++) {
			p[i] = pttl(i, "lockd:r1");
			ok += p[i] > 0 && p[i] <= 3000 + 10;
		}
		ck_assert_msg(ok >= 2,
		              "%.0f ms after lowering lease_ms to 3000: PTTL lockd:r1 %lld "
		              "%lld %lld",
		              el, p[0], p[1], p[2]);
		samples++;
		h_sleep_ms(100);
	}
	ck_assert_int_ge(samples, 10);
	ck_assert_int_eq(a->nlost, 0);
	cl_expect(b, "TRYLOCK r1", "BUSY");
	cl_expect(a, "UNLOCK r1", "OK 0");
	cl_close(a);
	cl_close(b);
}
END_TEST

/* When each master's copy of rkey ends, in ms of h_now_ms() (an upper
 * bound: read after the reply); -1e18 for none. Returns 0 when a master
 * did not answer. */
static int expiries(const char *rkey, double e[3])
{
	for (int i = 0; i < 3; i++) {
		long long p = pttl(i, rkey);
		double t = h_now_ms();
		if (p == -3)
			return 0;
		ck_assert_msg(p != -1, "%s has no expiry on master %d", rkey, i);
		e[i] = p > 0 ? t + (double)p : -1e18;
	}
	return 1;
}

/* The end of the lease on a majority (2 of 3): the second latest. */
static double majority_end(const double e[3])
{
	double a = e[0], b = e[1], c = e[2], t;
	if (a < b) {
		t = a;
		a = b;
		b = t;
	}
	if (b < c) {
		t = b;
		b = c;
		c = t;
	}
	if (a < b) {
		t = a;
		a = b;
		b = t;
	}
	return b;
}

/* A reload during an acquire (review finding 2): two masters stalled, a
 * LOCK sent, lease_ms raised 3000 -> 30000 by SIGHUP while the acquire
 * waits, the masters back: HELD never says more than the lease on the
 * masters (the one the call wrote), and the lock is renewed in time, at
 * the new lease, with every master healthy: no LOST. */
START_TEST(reload_during_acquire)
{
	struct h_opts o = {.lease_ms = 3000, .timeout_ms = 500};
	h_std(&o);
	struct cl *a = cl_open();
	unsigned long long f = 0;
	long long pmin = 0, pmax = 0;
	h_master_stop(1);
	h_master_stop(2);
	cl_send(a, "LOCK R3\n");
	h_sleep_ms(30);
	long off = set_lease(0, 3000, 30000);
	h_sleep_ms(70);
	h_master_cont(1);
	h_master_cont(2);
	cl_want_ok(a, 2000);
	h_lockd_wait_reloaded(0, off, 2000);
	long long ttl = held_ttl(a, "R3", &f);
	ck_assert_int_eq(h_masters_with_pttl(3, "lockd:R3", &pmin, &pmax), 3);
	ck_assert_msg(ttl > 0 && ttl <= pmax + 50,
	              "HELD says %lld ms while the masters' PTTL is %lld-%lld", ttl, pmin, pmax);
	/* past the 3000 ms lease it was granted with: renewed, never lost */
	cl_silence(a, 4000);
	ck_assert_msg(a->nlost == 0, "lost with healthy masters: %s", a->lost[0]);
	ttl = held_ttl(a, "R3", NULL);
	ck_assert_msg(ttl > 10000, "not renewed at the new lease: HELD says %lld ms", ttl);
	ck_assert_int_eq(h_masters_with_pttl(3, "lockd:R3", &pmin, &pmax), 3);
	ck_assert_msg(pmin > 10000, "PTTL %lld-%lld after the renewal", pmin, pmax);
	cl_close(a);
}
END_TEST

/* A reload that raises lease_ms while a renewal is in flight (every master
 * stalled): the validity lockd reports never exceeds the lease left on a
 * majority of the masters, and no other lockd is granted the key while the
 * session lists it. */
START_TEST(reload_during_inflight_renewal)
{
	struct h_opts oa = {.lease_ms = 3000, .timeout_ms = 900};
	h_std(&oa);
	h_lockd_start(NULL);
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	unsigned long long f = lock_on_all(a, "LOCK ka", "ka", "lockd:ka", NULL), hf = 0;

	/* find the renewal rhythm: two consecutive renewals seen on master 0 */
	struct rconn *m0 = rc_open(h_master(0)->port, 500);
	ck_assert_ptr_nonnull(m0);
	double jump[2] = {-1, -1};
	long long prev = -1;
	double start = h_now_ms();
	for (int k = 0, nj = 0; nj < 2 && k < 2000 && h_now_ms() - start < 7000; k++) {
		char *r = rc_cmd(m0, "PTTL", "lockd:ka", NULL);
		double t = h_now_ms();
		ck_assert_msg(r != NULL, "master 0 did not answer PTTL");
		long long p = strtoll(r, NULL, 10);
		free(r);
		ck_assert_msg(p > 0, "lockd:ka gone from master 0 (PTTL %lld)", p);
		if (prev >= 0 && p > prev + 100)
			jump[nj++] = t;
		prev = p;
		h_sleep_ms(3);
	}
	rc_close(m0);
	ck_assert_msg(jump[1] > 0, "fewer than 2 renewals of ka seen on master 0 in %.0f ms",
	              h_now_ms() - start);
	double period = jump[1] - jump[0];
	ck_assert_msg(period >= 200 && period <= 3000, "renewals %.0f ms apart (lease 3000)",
	              period);
	fprintf(stderr, "reload_during_inflight_renewal: renewals every %.0f ms\n", period);

	/* stall every master (as DEBUG SLEEP 0.8 would) from 150 ms before the
	 * next renewal, for 800 ms: the renewal waits about 650 ms, less than
	 * timeout_ms 900, so it succeeds, late. Reload lease_ms 3000 -> 60000
	 * 300 ms into the stall, while that renewal is in flight. */
	double t_stop = jump[1] + period - 150;
	while (h_now_ms() < t_stop)
		h_sleep_ms(2);
	double e[3];
	ck_assert_msg(expiries("lockd:ka", e), "a master did not answer PTTL");
	for (int i = 0; i < 3; i++)
		h_master_stop(i);
	t_stop = h_now_ms();
	double t_hup = t_stop + 300, t_cont = t_stop + 800, t_end = t_stop + 6000;
	int stopped = 1, hup = 0, seen_reload = 0, samples = 0, b_tries = 0;
	long off = 0;
	long long max_ttl = 0;
	for (int k = 0; k < 1000 && h_now_ms() < t_end; k++) {
		double now = h_now_ms();
		if (!hup && now >= t_hup) {
			off = set_lease(0, 3000, 60000);
			hup = 1;
		}
		if (stopped && now >= t_cont) {
			for (int i = 0; i < 3; i++)
				h_master_cont(i);
			stopped = 0;
		}
		if (hup && !seen_reload)
			seen_reload = h_lockd_reloaded(0, off);

		/* what A believes, then what the masters have */
		double th = h_now_ms();
		long long t = held_ttl(a, "ka", &hf);
		ck_assert_msg(t >= 0, "ka no longer held by A %.0f ms after the stall began (%s)",
		              th - t_stop, a->nlost ? a->lost[0] : "no LOST");
		ck_assert_uint_eq(hf, f);
		if (t > max_ttl)
			max_ttl = t;
		if (!stopped && !expiries("lockd:ka", e)) {
			h_sleep_ms(50);
			continue; /* a master did not answer: no sample */
		}
		double me = majority_end(e);
		ck_assert_msg(th + (double)t <= me + 50,
		              "%.0f ms after the stall began (%s): A's HELD ttl of ka is %lld ms, "
		              "the lease left on a majority of the masters %.0f ms",
		              th - t_stop, stopped ? "masters stopped" : "masters running", t,
		              me - th);
		samples++;

		if (!stopped) {
			const char *r = cl_cmd(b, "TRYLOCK ka", H_TMO);
			ck_assert_msg(r != NULL, "TRYLOCK ka on B: no reply");
			b_tries++;
			if (strncmp(r, "OK ", 3) == 0) {
				unsigned long long g = h_fence(r);
				long long ta = held_ttl(a, "ka", NULL);
				ck_assert_msg(
				    ta < 0,
				    "%.0f ms after the stall began: B was granted ka (fence "
				    "%llu) while A still lists it (ttl %lld, fence %llu): "
				    "two holders",
				    h_now_ms() - t_stop, g, ta, f);
				ck_abort_msg("%.0f ms after the stall began: A lost ka (%s) and B "
				             "was granted it, with healthy masters",
				             h_now_ms() - t_stop,
				             a->nlost ? a->lost[0] : "no LOST");
			}
			ck_assert_msg(strcmp(r, "BUSY") == 0 || strncmp(r, "ERR QUORUM", 10) == 0,
			              "TRYLOCK ka on B: got '%s'", r);
		}
		h_sleep_ms(50);
	}
	if (stopped)
		for (int i = 0; i < 3; i++)
			h_master_cont(i);
	ck_assert_msg(hup && seen_reload, "lockd 0 logged no 'reloaded' after SIGHUP");
	ck_assert_msg(samples >= 40 && b_tries >= 30, "only %d samples, %d TRYLOCKs on B in 6 s",
	              samples, b_tries);
	/* a reload never causes a LOST with healthy masters, and the renewals
	 * after it write the new lease */
	ck_assert_int_eq(a->nlost, 0);
	ck_assert_msg(expiries("lockd:ka", e), "a master did not answer PTTL");
	double left = majority_end(e) - h_now_ms();
	ck_assert_msg(left > 3000,
	              "lease of ka left on a majority %.0f ms, 5 s after lease_ms 3000 -> 60000",
	              left);
	fprintf(stderr,
	        "reload_during_inflight_renewal: %d samples, %d TRYLOCKs on B, largest HELD ttl "
	        "%lld, lease left on a majority at the end %.0f ms\n",
	        samples, b_tries, max_ttl, left);
	cl_expect(b, "TRYLOCK ka", "BUSY");
	cl_expect(a, "UNLOCK ka", "OK 0");
	cl_close(a);
	cl_close(b);
}
END_TEST

/* A session reset while its EXTEND waits for the masters: once the locks
 * are gone, the lock table is empty (no key entry leaks). */
START_TEST(reset_during_extend)
{
	struct h_opts o = {.lease_ms = 3000, .timeout_ms = 500};
	h_std(&o);
	struct cl *s = cl_open();
	char *v = cl_stat(s, "keys");
	ck_assert_msg(v && strcmp(v, "0") == 0, "STAT keys %s before any lock", v ? v : "missing");
	free(v);
	for (int round = 0; round < 3; round++) {
		char key[16], rkey[32], req[64], ext[64];
		snprintf(key, sizeof(key), "rs%d", round);
		snprintf(rkey, sizeof(rkey), "lockd:%s", key);
		snprintf(req, sizeof(req), "LOCK %s WAIT 1000 TTL 20000", key);
		snprintf(ext, sizeof(ext), "EXTEND %s 30000\n", key);
		struct cl *c = cl_open();
		lock_on_all(c, req, key, rkey, NULL);
		h_master_stop(1);
		h_master_stop(2);
		cl_send(c, ext);
		/* lockd has read it and waits for the masters (timeout_ms 500) */
		h_sleep_ms(50);
		const char *l = cl_line(c, 0);
		ck_assert_msg(l == NULL, "round %d: '%s' answered '%s' before the reset", round,
		              ext, l);
		struct linger lg = {1, 0};
		ck_assert(setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
		cl_close(c);
		h_sleep_ms(20);
		h_master_cont(1);
		h_master_cont(2);
	}
	cl_wait_stat(s, "keys", "0", 3000);
	cl_wait_stat(s, "locks_held", "0", 1000);
	cl_close(s);
}
END_TEST

/* With locks.fence_idle_ms 2000, a key's fence counter lapses 2 s after
 * its last grant, and the next grant's fence is still larger. */
START_TEST(fence_idle_expires)
{
	struct h_opts o = {.locks_extra = "  fence_idle_ms: 2000\n"};
	h_std(&o);
	struct cl *a = cl_open();
	double t0 = 0; /* when the last grant was asked for */
	unsigned long long f1 = lock_on_all(a, "TRYLOCK f", "f", "lockd:f", &t0);
	cl_expect(a, "UNLOCK f", "OK 0");
	for (int i = 0; i < 3; i++) {
		long long p = pttl(i, "lockd:f fence");
		ck_assert_msg(p > 0 && p <= 2000,
		              "PTTL of 'lockd:f fence' on master %d is %lld right after the grant "
		              "(fence_idle_ms 2000)",
		              i, p);
	}
	double el = 0;
	int gone = 0;
	for (int k = 0; k < 500 && !gone; k++) {
		el = h_now_ms() - t0;
		if (el > 4000)
			break;
		gone = 1;
		for (int i = 0; i < 3; i++)
			gone &= h_redis_int(i, "EXISTS", "lockd:f fence", NULL) == 0;
		if (!gone)
			h_sleep_ms(20);
	}
	ck_assert_msg(gone, "'lockd:f fence' still on a master %.0f ms after the grant", el);
	/* fence_idle_ms (2000) after the grant; no service level covers a
	 * master's expiry: a second more, and loaded headroom */
	ck_assert_msg(el <= 2000 + 1000 + H_LOADED,
	              "'lockd:f fence' gone only %.0f ms after the grant", el);
	fprintf(stderr, "fence_idle_expires: counter gone %.0f ms after the grant\n", el);
	unsigned long long f2 = cl_lock(a, "TRYLOCK f");
	ck_assert_msg(f2 > f1, "fence %llu after the counter lapsed, %llu before", f2, f1);
	cl_close(a);
}
END_TEST

/* A grant does not push its fence counter's expiry back (one write less
 * per grant): a busy key's counter lapses fence_idle_ms after it started
 * and starts again at the master's clock, and the fences its grants hand
 * out still grow across that restart. */
START_TEST(fence_busy_key_restarts)
{
	struct h_opts o = {.locks_extra = "  fence_idle_ms: 1000\n"};
	h_std(&o);
	struct cl *a = cl_open();
	double t0 = h_now_ms();
	unsigned long long prev = cl_lock(a, "TRYLOCK f"), first = prev;
	double t1 = h_now_ms(); /* the counter started before this */
	cl_expect(a, "UNLOCK f", "OK 0");
	int grants = 1, jumps = 0, checked = 0;
	while (h_now_ms() - t0 < 2500 && grants < 100000) {
		unsigned long long f = cl_lock(a, "TRYLOCK f");
		cl_expect(a, "UNLOCK f", "OK 0");
		ck_assert_msg(f > prev, "grant %d: fence %llu after %llu", grants, f, prev);
		/* A restarted counter starts at the clock in microseconds, at
		 * least fence_idle_ms less 100 ms of rounding above the last
		 * start; grants alone add one each. */
		if (f - prev > 500000)
			jumps++;
		prev = f;
		grants++;
		double since = h_now_ms() - t1;
		if (!checked && !jumps && since > 400 && since < 800) {
			/* the counter of the first grant, not pushed back by the
			 * grants since (20 ms: the masters' and our clock reading) */
			for (int i = 0; i < 3; i++) {
				long long p = pttl(i, "lockd:f fence");
				ck_assert_msg(p <= 1000 - since + 20,
				              "master %d: PTTL of 'lockd:f fence' %lld ms, %.0f ms "
				              "after its first grant (fence_idle_ms 1000)",
				              i, p, since);
			}
			checked = 1;
		}
	}
	ck_assert_msg(jumps >= 1,
	              "no restart of the counter in %d grants over %.0f ms (fences %llu .. %llu)",
	              grants, h_now_ms() - t0, first, prev);
	fprintf(stderr, "fence_busy_key_restarts: %d grants, %d restarts, PTTL checked: %d\n",
	        grants, jumps, checked);
	cl_close(a);
}
END_TEST

/* limits.max_waiters_per_key and limits.max_waiters cap the queues. */
START_TEST(waiter_caps)
{
	struct h_opts o = {.limits = "  max_waiters_per_key: 2\n  max_waiters: 3\n"};
	h_std(&o);
	struct cl *h = cl_open(), *w[4], *s = cl_open();
	cl_lock(h, "LOCK a");
	cl_lock(h, "LOCK b");
	for (int i = 0; i < 4; i++)
		w[i] = cl_open();
	cl_send(w[0], "LOCK a\n");
	cl_wait_waiters(s, "a", 1, 2000);
	cl_send(w[1], "LOCK a\n");
	cl_wait_waiters(s, "a", 2, 2000);
	cl_expect_prefix(w[2], "LOCK a WAIT 5000", "ERR LIMIT ");
	cl_expect(w[2], "TRYLOCK a", "BUSY"); /* a TRYLOCK does not wait */
	cl_send(w[2], "LOCK b\n");
	cl_wait_waiters(s, "b", 1, 2000);
	cl_expect_prefix(w[3], "LOCK b", "ERR LIMIT "); /* 3 wait in all */
	cl_expect(h, "UNLOCK a", "OK 0");
	cl_want_ok(w[0], 2000);
	cl_expect(w[3], "LOCK b WAIT 500", "TIMEOUT"); /* room again */
	for (int i = 0; i < 4; i++)
		cl_close(w[i]);
	cl_close(h);
	cl_close(s);
}
END_TEST

TCase *tc_safety(void)
{
	TCase *tc = tcase_create("safety");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 30);
	H_ADD(tc, extend_within_drift);
	H_ADD(tc, failed_extend_shortens);
	H_ADD(tc, reload_lease_no_lost);
	H_ADD(tc, reload_during_inflight_renewal);
	H_ADD(tc, reload_during_acquire);
	H_ADD(tc, reset_during_extend);
	H_ADD(tc, fence_idle_expires);
	H_ADD(tc, fence_busy_key_restarts);
	H_ADD(tc, waiter_caps);
	return tc;
}
