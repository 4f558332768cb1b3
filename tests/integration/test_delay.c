/* delay: lock-delay (protocol 1.4, DELAY ms and locks.lost_delay_ms) end
 * to end, on two lockd over three real masters. A hold that lapses (its
 * lockd frozen by SIGSTOP, or killed by SIGKILL) keeps the key from every
 * lockd until its lease's end + the delay, and a waiter is granted within
 * 1 s after; a release (UNLOCK, QUIT) lets it go at once. During the
 * delay STATUS answers HELD with the time left on it, WHO DELAYED, LEADER
 * NONE, TRYLOCK BUSY, a RESUME reports the hold LOST; HELD's ttl and
 * STATUS's while the hold lasts exclude the delay; STATS counts each
 * request that found a key in its delay once. Leases of 1 s keep the
 * file short. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "sess_util.h"

#define LEASE 1000
#define DELAY 1500
/* After a SIGSTOP or SIGKILL at t0, the hold's last write (its grant, or
 * a renewal, at most LEASE / 3 apart) ran out by t0 + LEASE, so its
 * delay has begun by then, and ends by t0 + LEASE + DELAY. */
#define IN_DELAY (LEASE + 200)

static int b_metrics; /* lockd B's metrics port */

/* Masters 0-2, lockd A (index 0) and B (index 1, its /metrics on
 * b_metrics), lease LEASE. */
static void two_lockd(const char *locks_extra)
{
	char top[80];
	b_metrics = h_free_port();
	snprintf(top, sizeof(top), "metrics:\n  listen: 127.0.0.1:%d\n", b_metrics);
	h_masters_start(3);
	h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .locks_extra = locks_extra});
	h_lockd_start(
	    &(struct h_opts){.lease_ms = LEASE, .locks_extra = locks_extra, .top_extra = top});
}

/* The line of /metrics on port that begins with "name " (malloc'd), or
 * NULL. HTTP/1.0: the response ends with the connection (3 s at most). */
static char *metric_line(int port, const char *name)
{
	int fd = h_connect_tcp(port);
	ck_assert_msg(fd >= 0, "connect to /metrics on %d", port);
	const char *req = "GET /metrics HTTP/1.0\r\n\r\n";
	ck_assert(send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req));
	size_t cap = 1 << 18, len = 0;
	char *b = malloc(cap);
	ck_assert_ptr_nonnull(b);
	double end = h_now_ms() + 3000;
	for (;;) {
		int rem = (int)(end - h_now_ms());
		ck_assert_msg(rem > 0, "/metrics: no complete response within 3 s");
		struct pollfd pf = {fd, POLLIN, 0};
		if (poll(&pf, 1, rem) <= 0)
			continue;
		ssize_t k = recv(fd, b + len, cap - len - 1, 0);
		if (k <= 0)
			break;
		len += (size_t)k;
		ck_assert_msg(len < cap - 1, "/metrics: response too long");
	}
	close(fd);
	b[len] = '\0';
	char want[128], *hit = NULL;
	snprintf(want, sizeof(want), "\n%s ", name);
	char *p = strstr(b, want);
	if (p) {
		p++;
		hit = strndup(p, strcspn(p, "\r\n"));
	}
	free(b);
	return hit;
}

static void sleep_until(double t)
{
	double now = h_now_ms();
	if (t > now)
		h_sleep_ms((int)(t - now) + 1);
}

/* "HELD ttl waiters": ttl within (0, max], waiters as given. */
static void status_at(const char *file, int line, struct cl *c, const char *key, long long max,
                      long long waiters)
{
	long long ttl = -1, w = -1;
	char req[300];
	snprintf(req, sizeof(req), "STATUS %s", key);
	const char *r = cl_cmd_at(file, line, c, req, H_SLOW_LIMIT);
	if (!r || sscanf(r, "HELD %lld %lld", &ttl, &w) != 2 || ttl <= 0 || ttl > max ||
	    w != waiters)
		h_fail_at(file, line, "%s: got '%s', want 'HELD <1..%lld> %lld'", req,
		          r ? r : "(none)", max, waiters);
}
#define status(c, k, max, w) status_at(__FILE__, __LINE__, (c), (k), (max), (w))

/* The highest fence counter of the key on the masters. */
static unsigned long long counter_of(const char *key)
{
	char rk[300];
	unsigned long long best = 0;
	snprintf(rk, sizeof(rk), "lockd:%s fence", key);
	for (int i = 0; i < 3; i++) {
		char *v = h_redis(i, "GET", rk, NULL);
		unsigned long long f = v ? strtoull(v, NULL, 10) : 0;
		best = f > best ? f : best;
		free(v);
	}
	return best;
}

/* WHO key during its delay: exactly "DELAYED ms fence" (ms within (0,
 * max]; fence the key's latest: no lower than the hold's, no higher than
 * the largest counter on the masters), then END. */
static void who_delayed_at(const char *file, int line, struct cl *c, const char *key, long max,
                           unsigned long long fence)
{
	char req[300];
	long ms = -1;
	unsigned long long f = 0;
	int n = 0;
	snprintf(req, sizeof(req), "WHO %s", key);
	const char *r = cl_cmd_at(file, line, c, req, H_SLOW_LIMIT);
	if (!r || sscanf(r, "DELAYED %ld %llu%n", &ms, &f, &n) != 2 || r[n] || ms <= 0 ||
	    ms > max || f < fence || f > counter_of(key))
		h_fail_at(file, line, "%s: got '%s', want 'DELAYED <1..%ld> <%llu..%llu>'", req,
		          r ? r : "(none)", max, fence, counter_of(key));
	r = cl_line_at(file, line, c, H_TMO);
	if (!r || strcmp(r, "END") != 0)
		h_fail_at(file, line, "%s: got '%s' after DELAYED, want END", req,
		          r ? r : "(none)");
}
#define who_delayed(c, k, max, f) who_delayed_at(__FILE__, __LINE__, (c), (k), (max), (f))

/* "KEY key fence 1 ttl" then END: ttl within (0, max]. */
static void held_ttl_at(const char *file, int line, struct cl *c, const char *key,
                        unsigned long long fence, long max)
{
	char want[300];
	long ttl = -1;
	int n = 0;
	const char *r = cl_cmd_at(file, line, c, "HELD", H_TMO);
	snprintf(want, sizeof(want), "KEY %s %llu 1 ", key, fence);
	if (!r || strncmp(r, want, strlen(want)) != 0 ||
	    sscanf(r + strlen(want), "%ld%n", &ttl, &n) != 1 || r[strlen(want) + n] || ttl <= 0 ||
	    ttl > max)
		h_fail_at(file, line, "HELD: got '%s', want '%s<1..%ld>'", r ? r : "(none)", want,
		          max);
	r = cl_line_at(file, line, c, H_TMO);
	if (!r || strcmp(r, "END") != 0)
		h_fail_at(file, line, "HELD: got '%s', want END", r ? r : "(none)");
}
#define held_ttl(c, k, f, max) held_ttl_at(__FILE__, __LINE__, (c), (k), (f), (max))

/* On each master: the key's value is a token with " delay" after it, and
 * it lives longer than the lease, no longer than lease + delay. */
static void on_masters(const char *key, long lease, long delay)
{
	char rkey[300], sfx[24];
	snprintf(rkey, sizeof(rkey), "lockd:%s", key);
	snprintf(sfx, sizeof(sfx), " %ld", delay);
	for (int i = 0; i < 3; i++) {
		char *v = h_redis(i, "GET", rkey, NULL);
		long long pttl = h_redis_int(i, "PTTL", rkey, NULL);
		ck_assert_msg(v && strlen(v) == 32 + strlen(sfx) && strcmp(v + 32, sfx) == 0,
		              "master %d: %s is '%s', want a token and '%s'", i, rkey,
		              v ? v : "(nil)", sfx);
		ck_assert_msg(pttl > lease - 300 && pttl <= lease + delay,
		              "master %d: PTTL %s %lld, want within (%ld, %ld]", i, rkey, pttl,
		              lease - 300, lease + delay);
		free(v);
	}
}

static long long stat_num(struct cl *c, const char *name)
{
	char *v = cl_stat(c, name);
	ck_assert_ptr_nonnull(v);
	long long n = atoll(v);
	free(v);
	return n;
}

/* A hold of A lapses by sig: B sees the key BUSY (and DELAYED, and HELD
 * with the delay's time left) until the lease's end + the delay, counts
 * each request that met the delay once, and a LOCK waiting on B is
 * granted within 1 s after the delay ends, measured from the signal's
 * return; never before the hold's first write + lease + delay. */
static void lapse(int sig)
{
	two_lockd(NULL);
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	struct cl *b2 = cl_tcp(h_lockd(1)->port);
	char req[64];
	snprintf(req, sizeof(req), "LOCK k DELAY %d", DELAY);
	double sent = h_now_ms();
	unsigned long long f = cl_lock(a, req);
	h_lockd_signal(0, sig);
	if (sig == SIGKILL)
		ck_assert_int_ne(h_lockd_wait(0, 3000), -1);
	double t0 = h_now_ms();

	/* the hold lasts on the masters: BUSY, not a delay */
	cl_expect(b, "TRYLOCK k", "BUSY");
	ck_assert_int_eq(stat_num(b, "delayed_grants_refused"), 0);

	sleep_until(t0 + IN_DELAY);
	status(b, "k", DELAY, 0);
	who_delayed(b, "k", DELAY, f);
	cl_expect(b, "LEADER k", "NONE");
	cl_expect(b, "TRYLOCK k", "BUSY");
	ck_assert_int_eq(stat_num(b, "delayed_grants_refused"), 1);
	cl_expect(b, "LOCK k WAIT 100", "TIMEOUT");
	ck_assert_int_eq(stat_num(b, "delayed_grants_refused"), 2);
	cl_send(b2, "LOCK k\n");
	unsigned long long f2 = cl_want_ok(b2, LEASE + DELAY + 1000 + H_LOADED);
	double granted = h_now_ms();
	ck_assert_uint_gt(f2, f);
	fprintf(stderr,
	        "delay_after_%s: granted on B %.0f ms after the signal (lease %d + delay %d)\n",
	        sig == SIGKILL ? "sigkill" : "lapse", granted - t0, LEASE, DELAY);
	ck_assert_msg(granted - sent >= LEASE + DELAY - 2,
	              "granted %.0f ms after the hold's LOCK was sent: before lease + delay (%d)",
	              granted - sent, LEASE + DELAY);
	ck_assert_msg(granted - t0 <= LEASE + DELAY + 1000 + H_LOADED,
	              "granted %.0f ms after the signal: the bound is lease + delay + 1 s (%d)",
	              granted - t0, LEASE + DELAY + 1000);
	/* the waiting LOCK counted once, however often it asked */
	ck_assert_int_eq(stat_num(b, "delayed_grants_refused"), 3);
	char *m = metric_line(b_metrics, "lockd_delayed_grants_refused_total");
	ck_assert_str_eq(m ? m : "(none)", "lockd_delayed_grants_refused_total 3");
	free(m);
	if (sig == SIGSTOP)
		h_lockd_signal(0, SIGCONT);
	cl_close(a);
	cl_close(b);
	cl_close(b2);
}

START_TEST(delay_after_lapse)
{
	lapse(SIGSTOP);
}
END_TEST

/* The delay lives on the masters: the holder's lockd gone, it holds. */
START_TEST(delay_survives_sigkill)
{
	lapse(SIGKILL);
}
END_TEST

/* A release ends the hold at once: UNLOCK, QUIT. The lease on the masters
 * is lease + delay, HELD's and STATUS's ttl the lease. */
START_TEST(no_delay_after_release)
{
	two_lockd(NULL);
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	unsigned long long f = cl_lock(a, "LOCK k DELAY 60000");
	on_masters("k", LEASE, 60000);
	held_ttl(a, "k", f, LEASE);
	status(b, "k", LEASE, 0);
	cl_expect(a, "UNLOCK k", "OK 0");
	cl_lock(b, "TRYLOCK k");
	cl_expect(b, "UNLOCK k", "OK 0");

	/* a shared hold has no delay: DELAY > 0 is refused, 0 taken */
	cl_expect(a, "LOCK s SHARED DELAY 5", "ERR ARG DELAY is not for shared holds");
	cl_lock(a, "TRYLOCK s SHARED DELAY 0");
	cl_lock(a, "LOCK q TTL 5000 DELAY 60000");
	cl_expect(a, "QUIT", "OK");
	cl_send(b, "LOCK q WAIT 1500\n");
	cl_want_ok(b, 1500 + H_LOADED);
	ck_assert_int_eq(stat_num(b, "delayed_grants_refused"), 0);
	cl_close(a);
	cl_close(b);
}
END_TEST

/* A TTL hold that reaches its TTL lapses: LOST, then the delay. Its HELD
 * ttl is the TTL's, the masters keep it TTL + delay. */
START_TEST(delay_after_ttl)
{
	two_lockd(NULL);
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	double sent = h_now_ms();
	unsigned long long f = cl_lock(a, "LOCK t TTL 800 DELAY 1200");
	on_masters("t", 800, 1200);
	held_ttl(a, "t", f, 800);
	char lost[80];
	snprintf(lost, sizeof(lost), "LOST t %llu", f);
	const char *l = cl_line(a, 800 + H_LOADED);
	ck_assert_str_eq(l ? l : "(none)", lost);
	/* in its delay now, on every lockd: this one too */
	cl_expect(a, "TRYLOCK t", "BUSY");
	cl_expect(b, "TRYLOCK t", "BUSY");
	cl_send(b, "LOCK t\n");
	cl_want_ok(b, 800 + 1200 + 1000 + H_LOADED);
	ck_assert_msg(h_now_ms() - sent >= 800 + 1200 - 2, "granted before TTL + delay");
	cl_close(a);
	cl_close(b);
}
END_TEST

/* LOCKALL (1.4) with DELAY: each key it took is a hold with that delay
 * (lease + delay on the masters, a lapse keeps it); a LOCKALL that finds
 * its keys in their delay counts in delayed_grants_refused once, whatever
 * its number of keys, takes none of them with WAIT 0, and is granted
 * within 1 s after the delay ends when it waits. */
START_TEST(delay_lockall)
{
	two_lockd(NULL);
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	double sent = h_now_ms();
	cl_send(a, "LOCKALL 2 u v TTL 800 DELAY 1200\n");
	unsigned long long fu = 0, fv = 0;
	const char *l = cl_line(a, H_TMO);
	ck_assert_msg(l && sscanf(l, "OK %llu %llu", &fu, &fv) == 2, "LOCKALL: got '%s'",
	              l ? l : "(none)");
	on_masters("u", 800, 1200);
	on_masters("v", 800, 1200);
	for (int i = 0; i < 2; i++) {
		l = cl_line(a, 800 + H_LOADED);
		ck_assert_msg(l && strncmp(l, "LOST ", 5) == 0, "want LOST, got '%s'",
		              l ? l : "(none)");
	}
	/* lockd's validity ends before the masters' TTL (the drift, the
	 * round trip): in the delay on every master once the TTL ran out */
	sleep_until(sent + 800 + 100);
	cl_expect(b, "LOCKALL 2 v u WAIT 0", "TIMEOUT");
	ck_assert_int_eq(stat_num(b, "delayed_grants_refused"), 1);
	expect_held(b, "%s", "");
	cl_send(b, "LOCKALL 2 v u WAIT 5000\n");
	l = cl_line(b, 800 + 1200 + 1000 + H_LOADED);
	unsigned long long gv = 0, gu = 0;
	ck_assert_msg(l && sscanf(l, "OK %llu %llu", &gv, &gu) == 2, "LOCKALL: got '%s'",
	              l ? l : "(none)");
	ck_assert_msg(h_now_ms() - sent >= 800 + 1200 - 2, "granted before TTL + delay");
	ck_assert_msg(gu > fu && gv > fv, "fences go on: %llu > %llu, %llu > %llu", gu, fu, gv, fv);
	ck_assert_int_eq(stat_num(b, "delayed_grants_refused"), 2);
	cl_close(a);
	cl_close(b);
}
END_TEST

/* A hold in its delay when its session resumes is LOST, never adopted. */
START_TEST(resume_in_delay_lost)
{
	two_lockd(NULL);
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	struct sess s;
	session(a, "SESSION GRACE 20000", 20000, &s);
	unsigned long long f = cl_lock(a, "LOCK r DELAY 3000");
	h_lockd_signal(0, SIGKILL);
	ck_assert_int_ne(h_lockd_wait(0, 3000), -1);
	double t0 = h_now_ms();
	sleep_until(t0 + IN_DELAY);
	resume(b, &s, "OK 0");
	char lost[80];
	snprintf(lost, sizeof(lost), "LOST r %llu", f);
	const char *l = cl_line(b, H_TMO);
	ck_assert_str_eq(l ? l : "(none)", lost);
	expect_held(b, "%s", "");
	cl_expect(b, "TRYLOCK r", "BUSY");
	cl_close(a);
	cl_close(b);
}
END_TEST

/* The renewals keep the delay: a key deleted on a master comes back with
 * it (a write-back), and an adopted hold (RESUME on the other lockd while
 * its lease lasts) is written with the new lockd's token and the same
 * delay, then renewed with it. */
START_TEST(renewals_keep_delay)
{
	two_lockd(NULL);
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	cl_lock(a, "LOCK w DELAY 7000");
	free(h_redis(2, "DEL", "lockd:w", NULL));
	h_sleep_ms(LEASE / 2 + 100); /* a renewal (every LEASE / 3) wrote it back */
	on_masters("w", LEASE, 7000);

	struct sess s;
	struct cl *r = cl_tcp(h_lockd(0)->port);
	session(r, "SESSION GRACE 20000", 20000, &s);
	unsigned long long f = cl_lock(r, "LOCK r DELAY 3000");
	char *v0 = h_redis(0, "GET", "lockd:r", NULL);
	h_lockd_signal(0, SIGKILL);
	ck_assert_int_ne(h_lockd_wait(0, 3000), -1);
	resume(b, &s, "OK 1");
	held_ttl(b, "r", f, LEASE);
	on_masters("r", LEASE, 3000);
	char *v1 = h_redis(0, "GET", "lockd:r", NULL);
	ck_assert_msg(v0 && v1 && strncmp(v0, v1, 16) != 0 && strcmp(v0 + 16, v1 + 16) == 0,
	              "adopted: '%s', was '%s': want B's instance, the rest kept", v1, v0);
	h_sleep_ms(LEASE); /* B's renewals */
	on_masters("r", LEASE, 3000);
	free(v0);
	free(v1);
	cl_close(a);
	cl_close(b);
	cl_close(r);
}
END_TEST

/* locks.lost_delay_ms is the delay of a hold without DELAY, a leader's
 * too; DELAY 0 asks for none. LEADER answers NONE during a leader's
 * delay. */
START_TEST(lost_delay_default)
{
	two_lockd("  lost_delay_ms: 1500\n");
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	struct cl *e = cl_tcp(h_lockd(0)->port);
	cl_lock(a, "LOCK d");
	on_masters("d", LEASE, 1500);
	unsigned long long f = cl_lock(e, "CAMPAIGN el node-a");
	on_masters("el", LEASE, 1500);
	cl_lock(a, "LOCK z DELAY 0");
	char *v = h_redis(0, "GET", "lockd:z", NULL);
	ck_assert_msg(v && strlen(v) == 32, "DELAY 0: the value is '%s', want a token", v);
	free(v);
	unsigned long long fl = cl_lock(a, "LOCK long DELAY 8000");
	h_lockd_signal(0, SIGSTOP);
	double t0 = h_now_ms();
	sleep_until(t0 + IN_DELAY);
	cl_expect(b, "LEADER el", "NONE");
	cl_expect(b, "TRYLOCK d", "BUSY");
	who_delayed(b, "el", 1500, f);
	/* no delay: free once its lease ran out */
	cl_lock(b, "TRYLOCK z");

	/* A wakes: LOST for each, and no delete: the delays run on */
	h_lockd_signal(0, SIGCONT);
	char want[80];
	snprintf(want, sizeof(want), "LOST el %llu", f);
	const char *l = cl_line(e, H_SLOW_LIMIT);
	ck_assert_str_eq(l ? l : "(none)", want);
	int seen = 0;
	for (int i = 0; i < 3; i++) {
		l = cl_line(a, H_SLOW_LIMIT);
		ck_assert_msg(l && strncmp(l, "LOST ", 5) == 0, "a: '%s', want LOST",
		              l ? l : "(none)");
		snprintf(want, sizeof(want), "LOST long %llu", fl);
		seen |= strcmp(l, want) == 0;
	}
	ck_assert_msg(seen, "no LOST long %llu", fl);
	cl_expect(b, "TRYLOCK long", "BUSY");
	cl_expect(a, "TRYLOCK long", "BUSY");
	cl_expect(e, "LEADER el", "NONE");
	ck_assert_int_eq(stat_num(e, "leaders"), 0);
	/* a new CAMPAIGN there, once the delay (and any renewal sent at the
	   wake-up, lease + delay more) ran out */
	cl_send(e, "CAMPAIGN el node-a2 WAIT 6000\n");
	ck_assert_uint_gt(cl_want_ok(e, 6000 + H_LOADED), f);
	cl_close(a);
	cl_close(b);
	cl_close(e);
}
END_TEST

/* A rolling upgrade, with LOCKD_OLD a lockd of an older build (without
 * it: skipped; .ci/run builds the commit .ci/upgrade-from names, and
 * test_upgrade.c has the other checks across builds). Whether or not
 * that build has lock-delay, the old lockd B grants no key the new lockd
 * A holds, or keeps in its delay once A is killed (a build before 1.4
 * takes "TOKEN D" for a token it does not know, busy for its whole PTTL:
 * doc/design.md, "Lock-delay", 7; one with it reads the delay as A
 * does); A grants no key B holds; each takes what the other released. */
START_TEST(delay_rolling_upgrade)
{
	const char *old = getenv("LOCKD_OLD");
	if (!old || !*old) {
		fprintf(stderr, "delay_rolling_upgrade: LOCKD_OLD is not set: skipped\n");
		return;
	}
	h_masters_start(3);
	h_lockd_start(&(struct h_opts){.lease_ms = LEASE});
	h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .bin = old});
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	unsigned long long fo = cl_lock(b, "LOCK o");
	cl_expect(a, "TRYLOCK o", "BUSY");
	cl_expect(b, "UNLOCK o", "OK 0");
	ck_assert_uint_gt(cl_lock(a, "TRYLOCK o DELAY 5000"), fo);
	cl_expect(b, "TRYLOCK o", "BUSY");
	cl_expect(a, "UNLOCK o", "OK 0");
	cl_lock(b, "TRYLOCK o");

	double sent = h_now_ms();
	unsigned long long f = cl_lock(a, "LOCK k DELAY 1500");
	cl_expect(b, "TRYLOCK k", "BUSY");
	h_lockd_signal(0, SIGKILL);
	ck_assert_int_ne(h_lockd_wait(0, 3000), -1);
	double t0 = h_now_ms();
	sleep_until(t0 + IN_DELAY);
	cl_expect(b, "TRYLOCK k", "BUSY");
	cl_send(b, "LOCK k\n");
	ck_assert_uint_gt(cl_want_ok(b, LEASE + 1500 + 1000 + H_LOADED), f);
	ck_assert_msg(h_now_ms() - sent >= LEASE + 1500 - 2,
	              "the old lockd granted k in its delay");
	cl_close(a);
	cl_close(b);
}
END_TEST

TCase *tc_delay(void)
{
	TCase *tc = tcase_create("delay");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, delay_after_lapse);
	H_ADD(tc, delay_survives_sigkill);
	H_ADD(tc, no_delay_after_release);
	H_ADD(tc, delay_after_ttl);
	H_ADD(tc, delay_lockall);
	H_ADD(tc, resume_in_delay_lost);
	H_ADD(tc, renewals_keep_delay);
	H_ADD(tc, lost_delay_default);
	H_ADD(tc, delay_rolling_upgrade);
	return tc;
}
