/* test_client_deadline: liblockd's hold deadlines (issue 29, items 1 and
 * 2) against real redis-server masters and a real lockd: a program of
 * its own (its main is below), on the harness of test_lockd.
 *
 * liblockd(3), "Hold deadlines": a hold that lockd stops confirming is
 * reported lost ("LOST key fence" to the event callback) before its
 * local deadline, the ttl_ms lockd last confirmed counted from when the
 * confirming request was sent; so no later than the grant, or the last
 * renewal, plus the lease. Checked here for a lockd frozen by SIGSTOP
 * (its sockets stay open: no word, no EOF), a lockd killed by SIGKILL
 * with no other lockd to resume the session on (the loss comes while the
 * library still tries to resume, not at the end of the grace), and a
 * link cut between the client and lockd (a proxy that stops passing what
 * the client sends). Each bound is a safety bound (no headroom): it is
 * measured from the moment the fault is done (the signal sent, the
 * proxy holding), before which lockd's last renewal, or the grant,
 * began. The tests use only the interface of liblockd 4 (the events
 * lockd itself sends), so that they build against the library before the
 * deadlines, and fail there: no LOST until lockd wakes up, or the end of
 * the grace. They print the times, and the heartbeat's requests per
 * second per held lock.
 *
 * Environment: as test_lockd (top_builddir, REDIS_SERVER, LOCKD_TEST=name,
 * CK_RUN_CASE, CK_VERBOSITY). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lockd/client.h"

/* Short, so that each test waits a few seconds (lockd requires
 * redis.timeout_ms, H_REDIS_TMO, below a third of it). */
#define LEASE 2000

/* What a client's callbacks saw. */
struct watch {
	int nlost;
	double t_lost;      /* the first LOST */
	char lost[300];     /* its line */
	int status_at;      /* lockd_status() then (LOCKD_OK: not failed, e.g. resuming) */
	int resuming;       /* RESUMING came before it */
	unsigned long ends; /* END lines: the replies to the library's HELDs (the
	                       tests send none themselves) */
};

static void on_event(struct lockd_client *c, const struct lockd_event *ev, void *arg)
{
	struct watch *w = arg;
	if (ev->kind == LOCKD_E_RESUMING && !w->nlost)
		w->resuming = 1;
	if (ev->kind != LOCKD_E_LOST)
		return;
	if (!w->nlost++) {
		w->t_lost = h_now_ms();
		snprintf(w->lost, sizeof(w->lost), "%s", ev->line);
		w->status_at = lockd_status(c);
	}
}

static int on_line(struct lockd_client *c, const char *line, size_t len, void *arg)
{
	struct watch *w = arg;
	w->ends += strcmp(line, "END") == 0;
	return 0;
}

/* A client of lockd 0 (through port, when not 0), as a program builds
 * it: the defaults, resume as asked. */
static struct lockd_client *client(struct watch *w, int port, int resume)
{
	struct lockd_opts o = LOCKD_OPTS_INIT;
	o.port = port ? port : h_lockd(0)->port;
	o.resume = resume;
	struct lockd_client *c = NULL;
	int rc = lockd_connect(&o, &c);
	ck_assert_msg(rc == LOCKD_OK, "connect: %s", c ? lockd_error(c) : lockd_strerror(rc));
	memset(w, 0, sizeof(*w));
	lockd_set_callbacks(c, NULL, on_event, w);
	lockd_set_line_callback(c, on_line, w);
	return c;
}

/* LOCK key (blocking); returns its fence. */
static unsigned long long lock(struct lockd_client *c, const char *key)
{
	const struct lockd_reply *r;
	int rc = lockd_lock(c, key, LOCKD_EXCLUSIVE, -1, 0, H_SLOW_LIMIT, &r);
	ck_assert_msg(rc == LOCKD_OK, "LOCK %s: %s", key, lockd_error(c));
	ck_assert_msg(r->kind == LOCKD_R_OK && r->num > 0, "LOCK %s: %s", key, r->line);
	return (unsigned long long)r->num;
}

/* Let c work (heartbeats, deadlines) until the time until (h_now_ms()),
 * or its first LOST. */
static void run_until(struct lockd_client *c, struct watch *w, double until)
{
	double now;
	while (!w->nlost && (now = h_now_ms()) < until) {
		int rc = lockd_wait(c, (int)(until - now) + 1);
		ck_assert_msg(rc == LOCKD_OK, "liblockd: %s (%s)", lockd_error(c),
		              lockd_status_name(rc));
	}
}

static void assert_lost(const struct watch *w, const char *key, unsigned long long fence)
{
	char want[300];
	snprintf(want, sizeof(want), "LOST %s %llu", key, fence);
	ck_assert_str_eq(w->lost, want);
}

/* lockd frozen (SIGSTOP), its connection open. While it answered, three
 * leases passed without a LOST (the heartbeat kept the deadline ahead);
 * once stopped, LOST before the stop + the lease (its last renewal began
 * before the stop). When it wakes up, its own LOST for the key is not
 * handed again. */
START_TEST(frozen_lockd)
{
	struct h_opts ho = {.lease_ms = LEASE};
	h_std(&ho);
	struct watch w;
	struct lockd_client *c = client(&w, 0, 0);
	unsigned long long fence = lock(c, "k");
	double t0 = h_now_ms();
	unsigned long ends0 = w.ends;
	run_until(c, &w, t0 + 3 * LEASE);
	double healthy = h_now_ms() - t0;
	ck_assert_msg(!w.nlost, "%s while lockd answers", w.lost);
	double per_s = (w.ends - ends0) * 1000.0 / healthy;
	h_lockd_signal(0, SIGSTOP);
	double t_stop = h_now_ms();
	run_until(c, &w, t_stop + LEASE + 2000);
	h_lockd_signal(0, SIGCONT);
	ck_assert_msg(w.nlost, "no LOST within %d ms of lockd's SIGSTOP (lease %d ms)",
	              LEASE + 2000, LEASE);
	assert_lost(&w, "k", fence);
	fprintf(stderr,
	        "frozen_lockd: SIGSTOP -> LOST %.1f ms (bound: the lease, %d ms); heartbeat "
	        "%.2f HELD/s for 1 held lock\n",
	        w.t_lost - t_stop, LEASE, per_s);
	ck_assert_msg(w.t_lost - t_stop < LEASE, "LOST %.1f ms after the SIGSTOP (lease %d ms)",
	              w.t_lost - t_stop, LEASE);
	/* lockd's own LOST for k, once awake, is the same loss */
	w.nlost = 0;
	run_until(c, &w, h_now_ms() + LEASE);
	ck_assert_msg(!w.nlost, "%s handed again after SIGCONT", w.lost);
	ck_assert_int_eq(lockd_status(c), LOCKD_OK);
	lockd_close(c);
}
END_TEST

/* lockd killed right after the grant, no other lockd listed: a resumable
 * session. LOST comes before the grant + the lease, while the library
 * still tries to resume (RESUMING came first, the client has not failed),
 * not at the end of the session's grace (lockd's default, 10 s). */
START_TEST(killed_lockd_no_resume)
{
	struct h_opts ho = {.lease_ms = LEASE};
	h_std(&ho);
	struct watch w;
	struct lockd_client *c = client(&w, 0, 1);
	double t_ask = h_now_ms();
	unsigned long long fence = lock(c, "k");
	double t_grant = h_now_ms();
	h_lockd_signal(0, SIGKILL);
	double t_kill = h_now_ms();
	run_until(c, &w, t_kill + LEASE + 2000);
	ck_assert_msg(w.nlost, "no LOST within %d ms of lockd's SIGKILL (lease %d ms)",
	              LEASE + 2000, LEASE);
	assert_lost(&w, "k", fence);
	fprintf(stderr,
	        "killed_lockd_no_resume: SIGKILL -> LOST %.1f ms; grant -> LOST %.1f ms (bound: "
	        "the lease, %d ms; LOCK took %.1f ms)\n",
	        w.t_lost - t_kill, w.t_lost - t_grant, LEASE, t_grant - t_ask);
	ck_assert_msg(w.t_lost - t_grant < LEASE, "LOST %.1f ms after the grant (lease %d ms)",
	              w.t_lost - t_grant, LEASE);
	ck_assert_msg(w.resuming, "no RESUMING before the LOST");
	ck_assert_msg(w.status_at == LOCKD_OK, "the client had failed at the LOST: %s",
	              lockd_status_name(w.status_at));
	lockd_close(c);
	h_lockd_wait(0, 5000);
}
END_TEST

/* The link cut: a proxy between the client and lockd stops passing what
 * the client sends (the heartbeats never reach lockd; lockd, healthy,
 * keeps the lock). LOST before the cut + the lease. */
START_TEST(cut_link)
{
	struct h_opts ho = {.lease_ms = LEASE};
	h_std(&ho);
	struct h_proxy *px = h_proxy_start(h_lockd(0)->port);
	struct watch w;
	struct lockd_client *c = client(&w, h_proxy_port(px), 0);
	unsigned long long fence = lock(c, "k");
	run_until(c, &w, h_now_ms() + LEASE);
	ck_assert_msg(!w.nlost, "%s while the link passes", w.lost);
	ck_assert_int_eq(h_proxy_hold(px), 1);
	double t_cut = h_now_ms();
	run_until(c, &w, t_cut + LEASE + 2000);
	ck_assert_msg(w.nlost, "no LOST within %d ms of the cut (lease %d ms)", LEASE + 2000,
	              LEASE);
	assert_lost(&w, "k", fence);
	fprintf(stderr, "cut_link: cut -> LOST %.1f ms (bound: the lease, %d ms)\n",
	        w.t_lost - t_cut, LEASE);
	ck_assert_msg(w.t_lost - t_cut < LEASE, "LOST %.1f ms after the cut (lease %d ms)",
	              w.t_lost - t_cut, LEASE);
	lockd_close(c);
	h_proxy_stop(px);
}
END_TEST

int main(void)
{
	if (h_run_init() != 0)
		return 99;
	if (!h_redis_server()[0]) {
		const char *rs = getenv("REDIS_SERVER");
		fprintf(stderr,
		        "test_client_deadline: redis-server not found (REDIS_SERVER=%s): skipped\n",
		        rs ? rs : "");
		h_run_finish(0);
		return 77;
	}
	Suite *s = suite_create("client_deadline");
	TCase *tc = tcase_create("deadline");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, frozen_lockd);
	H_ADD(tc, killed_lockd_no_resume);
	H_ADD(tc, cut_link);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	const char *tap = getenv("LOCKD_TEST_TAP");
	if (tap && *tap)
		srunner_set_tap(sr, tap);
	srunner_run_all(sr, getenv("CK_VERBOSITY") ? CK_ENV : CK_VERBOSE);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	h_run_finish(failed);
	return failed ? 1 : 0;
}
