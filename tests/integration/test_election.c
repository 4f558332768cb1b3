/* Leader election (protocol 1.3) end to end: three candidates on two
 * lockd over three real masters; failover, PROCLAIM seen everywhere,
 * NOTLEADER, observers on both lockd in fence order, a leader whose
 * masters go away, a notice lost on purpose, events never inside a
 * multi-line reply.
 *
 * The connections here are raw sockets with a reader of their own: the
 * events ELECTED and NOLEADER (as LOST) may come at any time between
 * replies, and the test must see exactly where, so it pairs replies and
 * events itself rather than through liblockd. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define EC_MAX_EV 512

/* A raw connection: lines as lockd sent them, events kept aside. */
struct ec {
	int fd;
	char buf[65536];
	size_t len;
	char line[4096];
	int nev;    /* events kept */
	long total; /* events read */
	double ev_t[EC_MAX_EV];
	char ev[EC_MAX_EV][300];
};

static int is_event(const char *l)
{
	static const char *const w[] = {"LOST ", "ELECTED ", "NOLEADER "};
	for (int i = 0; i < 3; i++)
		if (strncmp(l, w[i], strlen(w[i])) == 0)
			return 1;
	return 0;
}

static struct ec *ec_open(int port)
{
	struct ec *e = calloc(1, sizeof(*e));
	ck_assert_ptr_nonnull(e);
	e->fd = h_connect_tcp(port);
	ck_assert_msg(e->fd >= 0, "connect to lockd on %d: %s", port, strerror(errno));
	return e;
}

static void ec_close(struct ec *e)
{
	close(e->fd);
	free(e);
}

static void ec_send(struct ec *e, const char *req)
{
	char b[4200];
	int n = snprintf(b, sizeof(b), "%s\n", req);
	ck_assert_int_eq(write(e->fd, b, (size_t)n), n);
}

/* The next line (without CR LF), or NULL after timeout_ms. */
static const char *ec_line(struct ec *e, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	for (;;) {
		char *nl = memchr(e->buf, '\n', e->len);
		if (nl) {
			size_t n = (size_t)(nl - e->buf);
			ck_assert_msg(n > 0 && e->buf[n - 1] == '\r', "a line without CR LF");
			ck_assert_uint_lt(n, sizeof(e->line));
			memcpy(e->line, e->buf, n - 1);
			e->line[n - 1] = '\0';
			memmove(e->buf, nl + 1, e->len - n - 1);
			e->len -= n + 1;
			return e->line;
		}
		double left = end - h_now_ms();
		if (left <= 0)
			return NULL;
		struct pollfd p = {e->fd, POLLIN, 0};
		if (poll(&p, 1, (int)left + 1) <= 0)
			continue;
		ssize_t r = read(e->fd, e->buf + e->len, sizeof(e->buf) - e->len);
		if (r <= 0)
			return NULL;
		e->len += (size_t)r;
	}
}

/* Keep an event (the last EC_MAX_EV of them; total counts all). */
static void keep_event(struct ec *e, const char *l)
{
	e->total++;
	if (e->nev == EC_MAX_EV) {
		memmove(e->ev_t, e->ev_t + 1, sizeof(e->ev_t[0]) * (EC_MAX_EV - 1));
		memmove(e->ev, e->ev + 1, sizeof(e->ev[0]) * (EC_MAX_EV - 1));
		e->nev--;
	}
	e->ev_t[e->nev] = h_now_ms();
	snprintf(e->ev[e->nev++], sizeof(e->ev[0]), "%s", l);
}

/* The next reply (events before it are kept). */
static const char *ec_reply(struct ec *e, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	const char *l;
	while ((l = ec_line(e, (int)(end - h_now_ms()) > 0 ? (int)(end - h_now_ms()) : 0))) {
		if (!is_event(l))
			return l;
		keep_event(e, l);
	}
	return NULL;
}

/* Events only, for ms: a reply now fails the test. */
static void ec_events(struct ec *e, int ms)
{
	double end = h_now_ms() + ms;
	const char *l;
	while ((l = ec_line(e, (int)(end - h_now_ms()) > 0 ? (int)(end - h_now_ms()) : 0))) {
		ck_assert_msg(is_event(l), "a line that is not an event: %s", l);
		keep_event(e, l);
	}
}

static const char *ec_cmd(struct ec *e, const char *req, int timeout_ms)
{
	ec_send(e, req);
	return ec_reply(e, timeout_ms);
}

static void ec_expect_at(const char *f, int ln, struct ec *e, const char *req, const char *want)
{
	const char *r = ec_cmd(e, req, H_SLOW_LIMIT + 1000);
	if (!r || strcmp(r, want) != 0)
		h_fail_at(f, ln, "%s: want '%s', got '%s'", req, want, r ? r : "(nothing)");
}
#define ec_expect(e, req, want) ec_expect_at(__FILE__, __LINE__, (e), (req), (want))

static void ec_expect_prefix_at(const char *f, int ln, struct ec *e, const char *req,
                                const char *want)
{
	const char *r = ec_cmd(e, req, H_SLOW_LIMIT + 1000);
	if (!r || strncmp(r, want, strlen(want)) != 0)
		h_fail_at(f, ln, "%s: want '%s...', got '%s'", req, want, r ? r : "(nothing)");
}
#define ec_expect_prefix(e, req, want) ec_expect_prefix_at(__FILE__, __LINE__, (e), (req), (want))

static unsigned long long ok_fence(const char *r)
{
	ck_assert_msg(r != NULL, "no reply");
	return h_fence(r);
}

/* The last event (or ""), and the fence of an ELECTED line (0 for others). */
static const char *last_ev(const struct ec *e)
{
	return e->nev ? e->ev[e->nev - 1] : "";
}

static unsigned long long ev_fence(const char *ev, char *value, size_t vsz)
{
	char name[300], val[300];
	unsigned long long f;
	if (sscanf(ev, "ELECTED %299s %llu %299s", name, &f, val) != 3)
		return 0;
	if (value)
		snprintf(value, vsz, "%s", val);
	return f;
}

/* Wait (bounded) until e's last event is want; returns how long it took. */
static double wait_last_at(const char *f, int ln, struct ec *e, const char *want, int timeout_ms)
{
	double t0 = h_now_ms();
	while (strcmp(last_ev(e), want) != 0 && h_now_ms() - t0 < timeout_ms)
		ec_events(e, 20);
	if (strcmp(last_ev(e), want) != 0)
		h_fail_at(f, ln, "last event '%s', want '%s' within %d ms", last_ev(e), want,
		          timeout_ms);
	return h_now_ms() - t0;
}
#define wait_last(e, w, t) wait_last_at(__FILE__, __LINE__, (e), (w), (t))

/* Every ELECTED of e in (fence, version) order: a fence never goes back,
 * and after NOLEADER or a newer leader no older leader comes again. */
static void check_order(const struct ec *e, const char *who)
{
	unsigned long long top = 0;
	for (int i = 0; i < e->nev; i++) {
		unsigned long long f = ev_fence(e->ev[i], NULL, 0);
		if (!f)
			continue;
		ck_assert_msg(f >= top, "%s: '%s' after a leader with fence %llu", who, e->ev[i],
		              top);
		top = f;
	}
}

/* Master i holds value as the leader's value of name within 3000 ms (a
 * write-back after its restart: lease/3 plus headroom); what says so. */
static void wait_value_on(int i, const char *name, const char *value, const char *what)
{
	char rkey[300];
	snprintf(rkey, sizeof(rkey), "lockd:%s leader", name);
	double t0 = h_now_ms();
	char *v = NULL;
	while (h_now_ms() - t0 < 3000) {
		free(v);
		v = h_redis(i, "HGET", rkey, "val", NULL);
		if (v && strcmp(v, value) == 0)
			break;
		h_sleep_ms(20);
	}
	ck_assert_msg(v && strcmp(v, value) == 0, "%s: %s", what, v ? v : "(none)");
	free(v);
}

/* 3 masters, 2 lockd. */
static void two_lockds(void)
{
	h_std(NULL);
	h_lockd_start(NULL);
}

#define P0 (h_lockd(0)->port)
#define P1 (h_lockd(1)->port)

/* Three candidates on two lockd: the leader's connection closes and the
 * next candidate in line (FIFO, on the other lockd) leads with a larger
 * fence within the service level; then the third. */
START_TEST(election_failover)
{
	two_lockds();
	struct ec *a = ec_open(P0), *b = ec_open(P1), *c = ec_open(P0), *q = ec_open(P1);
	unsigned long long fa = ok_fence(ec_cmd(a, "CAMPAIGN job alpha", H_SLOW_LIMIT));
	ec_send(b, "CAMPAIGN job beta WAIT 20000");
	h_sleep_ms(200); /* b waits first */
	ec_send(c, "CAMPAIGN job gamma WAIT 20000");
	h_sleep_ms(200);
	char want[128];
	snprintf(want, sizeof(want), "LEADER %llu alpha", fa);
	ec_expect(q, "LEADER job", want);

	double t0 = h_now_ms();
	ec_close(a);
	unsigned long long fb = ok_fence(ec_reply(b, 500 + H_LOADED));
	double ms = h_now_ms() - t0;
	printf("election_failover: to the other lockd in %.1f ms\n", ms);
	ck_assert_uint_gt(fb, fa);
	ck_assert_ptr_null(ec_reply(c, 50)); /* gamma waits on */
	snprintf(want, sizeof(want), "LEADER %llu beta", fb);
	ec_expect(q, "LEADER job", want);

	t0 = h_now_ms();
	ec_close(b);
	unsigned long long fc = ok_fence(ec_reply(c, 500 + H_LOADED));
	printf("election_failover: back to the first lockd in %.1f ms\n", h_now_ms() - t0);
	ck_assert_uint_gt(fc, fb);
	snprintf(want, sizeof(want), "LEADER %llu gamma", fc);
	ec_expect(q, "LEADER job", want);
	ec_expect(c, "RESIGN job", "OK");
	ec_expect(q, "LEADER job", "NONE");
	ec_close(c);
	ec_close(q);
}
END_TEST

/* PROCLAIM by the leader is what LEADER answers on the other lockd at
 * once; anyone else's PROCLAIM and RESIGN are ERR NOTLEADER, a plain
 * holder's CAMPAIGN ERR ARG; UNLOCK by the leader drops every hold. */
START_TEST(election_proclaim_notleader)
{
	two_lockds();
	struct ec *a = ec_open(P0), *b = ec_open(P1), *p = ec_open(P1);
	char want[128];
	unsigned long long f = ok_fence(ec_cmd(a, "CAMPAIGN svc host-a:1", H_SLOW_LIMIT));
	for (int i = 2; i <= 6; i++) {
		char req[64];
		snprintf(req, sizeof(req), "PROCLAIM svc host-a:%d", i);
		ec_expect(a, req, "OK");
		snprintf(want, sizeof(want), "LEADER %llu host-a:%d", f, i);
		ec_expect(b, "LEADER svc", want); /* every LEADER sent later */
	}
	ec_expect_prefix(b, "PROCLAIM svc x", "ERR NOTLEADER");
	ec_expect_prefix(b, "RESIGN svc", "ERR NOTLEADER");
	ec_expect_prefix(p, "RESIGN nothing", "ERR NOTLEADER");
	/* CAMPAIGN by the leader: PROCLAIM, same fence, one hold */
	snprintf(want, sizeof(want), "OK %llu", f);
	ec_expect(a, "CAMPAIGN svc host-a:7", want);
	snprintf(want, sizeof(want), "LEADER %llu host-a:7", f);
	ec_expect(b, "LEADER svc", want);
	/* a reentrant LOCK by the leader; UNLOCK drops both holds */
	snprintf(want, sizeof(want), "OK %llu", f);
	ec_expect(a, "LOCK svc", want);
	ec_expect(a, "UNLOCK svc", "OK 0");
	ec_expect(b, "LEADER svc", "NONE");
	ec_expect_prefix(a, "PROCLAIM svc y", "ERR NOTLEADER");
	/* a plain holder: LEADER fence without a value; no CAMPAIGN, PROCLAIM, RESIGN */
	unsigned long long pf = ok_fence(ec_cmd(p, "LOCK svc", H_SLOW_LIMIT));
	ck_assert_uint_gt(pf, f);
	const char *r = ec_cmd(b, "LEADER svc", H_SLOW_LIMIT);
	unsigned long long lf = 0;
	ck_assert_msg(r && sscanf(r, "LEADER %llu", &lf) == 1 && !strchr(r + 7, ' '),
	              "LEADER of a plain lock: '%s'", r ? r : "");
	ck_assert_uint_ge(lf, pf);
	ec_expect_prefix(p, "CAMPAIGN svc v", "ERR ARG");
	ec_expect_prefix(p, "PROCLAIM svc v", "ERR NOTLEADER");
	ec_expect_prefix(p, "RESIGN svc", "ERR NOTLEADER");
	ec_expect(b, "CAMPAIGN svc v WAIT 0", "TIMEOUT");
	ec_expect(p, "UNLOCK svc", "OK 0");
	/* values and names */
	char big[300];
	memset(big, 'v', 257);
	big[257] = '\0';
	char req[400];
	snprintf(req, sizeof(req), "CAMPAIGN svc %s", big);
	ec_expect_prefix(a, req, "ERR ARG");
	big[256] = '\0';
	snprintf(req, sizeof(req), "CAMPAIGN svc %s", big);
	ec_expect_prefix(a, req, "OK ");
	ec_expect_prefix(a, "PROCLAIM svc \x01", "ERR ARG");
	ec_expect_prefix(a, "PROCLAIM svc", "ERR PROTOCOL");
	ec_expect_prefix(a, "OBSERVE \x7f", "ERR KEY");
	ec_expect_prefix(a, "UNOBSERVE svc", "ERR ARG");
	ec_expect(a, "RESIGN svc", "OK");
	ec_close(a);
	ec_close(b);
	ec_close(p);
}
END_TEST

/* Observers on both lockd see the same leaders and values in fence
 * order, and NOLEADER last once the last leader resigned. */
START_TEST(election_observers)
{
	two_lockds();
	struct ec *o[2] = {ec_open(P0), ec_open(P1)};
	struct ec *cand[3] = {ec_open(P0), ec_open(P1), ec_open(P0)};
	for (int i = 0; i < 2; i++) {
		ec_expect(o[i], "OBSERVE ob", "OK");
		wait_last(o[i], "NOLEADER ob", H_SLOW_LIMIT);
	}
	char req[64];
	for (int k = 0; k < 3; k++) {
		snprintf(req, sizeof(req), "CAMPAIGN ob c%d-v1", k);
		ok_fence(ec_cmd(cand[k], req, H_SLOW_LIMIT));
		for (int i = 0; i < 2; i++)
			ec_events(o[i], 300);
		snprintf(req, sizeof(req), "PROCLAIM ob c%d-v2", k);
		ec_expect(cand[k], req, "OK");
		for (int i = 0; i < 2; i++)
			ec_events(o[i], 300);
		ec_expect(cand[k], "RESIGN ob", "OK");
	}
	for (int i = 0; i < 2; i++) {
		wait_last(o[i], "NOLEADER ob", 500 + H_LOADED);
		check_order(o[i], i ? "observer on lockd 1" : "observer on lockd 0");
	}
	/* the same leaders and values, in the same order */
	char seq[2][2048];
	for (int i = 0; i < 2; i++) {
		seq[i][0] = '\0';
		for (int k = 0; k < o[i]->nev; k++) {
			char v[300];
			if (ev_fence(o[i]->ev[k], v, sizeof(v))) {
				strcat(seq[i], v);
				strcat(seq[i], " ");
			}
		}
	}
	ck_assert_str_eq(seq[0], "c0-v1 c0-v2 c1-v1 c1-v2 c2-v1 c2-v2 ");
	ck_assert_str_eq(seq[1], seq[0]);
	/* nothing while nothing changes */
	int n0 = o[0]->nev;
	ec_events(o[0], 1200);
	ck_assert_int_eq(o[0]->nev, n0);
	ec_expect(o[0], "UNOBSERVE ob", "OK");
	ec_expect_prefix(o[0], "UNOBSERVE ob", "ERR ARG");
	for (int i = 0; i < 3; i++)
		ec_close(cand[i]);
	ec_close(o[0]);
	ec_close(o[1]);
}
END_TEST

/* A leader whose masters go away (two of three stopped) gets LOST before
 * its validity ends; observers then see NOLEADER or the next leader,
 * never the old one again. */
START_TEST(election_leader_lost)
{
	two_lockds();
	struct ec *a = ec_open(P0), *b = ec_open(P1);
	struct ec *o[2] = {ec_open(P0), ec_open(P1)};
	unsigned long long fa = ok_fence(ec_cmd(a, "CAMPAIGN ll alpha", H_SLOW_LIMIT));
	char want[128];
	snprintf(want, sizeof(want), "ELECTED ll %llu alpha", fa);
	for (int i = 0; i < 2; i++) {
		ec_expect(o[i], "OBSERVE ll", "OK");
		wait_last(o[i], want, H_SLOW_LIMIT);
	}
	ec_send(b, "CAMPAIGN ll beta WAIT 30000");
	h_sleep_ms(100);
	double t0 = h_now_ms();
	h_master_stop(1);
	h_master_stop(2);
	/* validity: at most one lease (3000 ms) after the last renewal */
	ec_events(a, 3000 + H_JITTER);
	snprintf(want, sizeof(want), "LOST ll %llu", fa);
	ck_assert_msg(a->nev == 1 && strcmp(a->ev[0], want) == 0, "leader: %d events, first '%s'",
	              a->nev, a->nev ? a->ev[0] : "");
	printf("election_leader_lost: LOST %.0f ms after the masters stopped\n", a->ev_t[0] - t0);
	for (int i = 0; i < 2; i++)
		ec_events(o[i], 10);
	h_master_cont(1);
	h_master_cont(2);
	unsigned long long fb = ok_fence(ec_reply(b, 3000 + 1000 + H_LOADED));
	ck_assert_uint_gt(fb, fa);
	snprintf(want, sizeof(want), "ELECTED ll %llu beta", fb);
	for (int i = 0; i < 2; i++) {
		wait_last(o[i], want, 3000 / 3 + 500 + H_LOADED);
		int newer = 0;
		for (int k = 0; k < o[i]->nev; k++) {
			unsigned long long f = ev_fence(o[i]->ev[k], NULL, 0);
			if (f == fa)
				ck_assert_msg(!newer, "observer %d: the old leader again: %s", i,
				              o[i]->ev[k]);
			else
				newer = 1; /* NOLEADER or a newer leader */
		}
		check_order(o[i], "observer");
	}
	ec_expect(b, "RESIGN ll", "OK");
	for (int i = 0; i < 2; i++)
		wait_last(o[i], "NOLEADER ll", 500 + H_LOADED);
	ec_close(a);
	ec_close(b);
	ec_close(o[0]);
	ec_close(o[1]);
}
END_TEST

/* Notices dropped on purpose (every master's pub/sub connections killed
 * around a change): every observer still ends at the current state. */
START_TEST(election_notice_dropped)
{
	two_lockds();
	struct ec *a = ec_open(P0);
	struct ec *o[2] = {ec_open(P0), ec_open(P1)};
	unsigned long long f = ok_fence(ec_cmd(a, "CAMPAIGN nd v1", H_SLOW_LIMIT));
	char want[128];
	snprintf(want, sizeof(want), "ELECTED nd %llu v1", f);
	for (int i = 0; i < 2; i++) {
		ec_expect(o[i], "OBSERVE nd", "OK");
		wait_last(o[i], want, H_SLOW_LIMIT);
	}
	for (int round = 2; round <= 4; round++) {
		for (int m = 0; m < 3; m++) {
			char *r = h_redis(m, "CLIENT", "KILL", "TYPE", "pubsub", NULL);
			free(r);
		}
		char req[64];
		snprintf(req, sizeof(req), "PROCLAIM nd v%d", round);
		/* the masters' connections may be dropped with the subscribers:
		 * the PROCLAIM is sent again until it answers OK (bounded) */
		const char *r = NULL;
		for (int k = 0; k < 20; k++) {
			r = ec_cmd(a, req, H_SLOW_LIMIT);
			if (r && strcmp(r, "OK") == 0)
				break;
			h_sleep_ms(50);
		}
		ck_assert_str_eq(r ? r : "(nothing)", "OK");
		snprintf(want, sizeof(want), "ELECTED nd %llu v%d", f, round);
		for (int i = 0; i < 2; i++) {
			double ms = wait_last(o[i], want, 3000 / 3 + 500 + H_LOADED);
			printf("election_notice_dropped: observer %d current after %.0f ms\n", i,
			       ms);
		}
	}
	ec_expect(a, "RESIGN nd", "OK");
	for (int i = 0; i < 2; i++) {
		wait_last(o[i], "NOLEADER nd", 3000 / 3 + 500 + H_LOADED);
		check_order(o[i], "observer");
	}
	ec_close(a);
	ec_close(o[0]);
	ec_close(o[1]);
}
END_TEST

/* HELD and STATS from a connection that observes a name changing all the
 * time: an event may come before such a reply, never between its lines. */
START_TEST(election_events_not_in_lists)
{
	two_lockds();
	struct ec *a = ec_open(P1), *o = ec_open(P0);
	ok_fence(ec_cmd(a, "CAMPAIGN busy v0", H_SLOW_LIMIT));
	ec_expect(o, "OBSERVE busy", "OK");
	ok_fence(ec_cmd(o, "LOCK mine", H_SLOW_LIMIT));
	int lists = 0, during = 0;
	double end = h_now_ms() + 3000;
	for (int k = 1; h_now_ms() < end; k++) {
		char req[64];
		snprintf(req, sizeof(req), "PROCLAIM busy v%d", k);
		ec_send(a, req); /* answered below, while o reads */
		ec_send(o, k % 2 ? "HELD" : "STATS");
		const char *l = ec_reply(o, H_SLOW_LIMIT);
		ck_assert_ptr_nonnull(l);
		while (strcmp(l, "END") != 0) {
			ck_assert_msg(!is_event(l), "an event inside a %s reply: %s",
			              k % 2 ? "HELD" : "STATS", l);
			l = ec_line(o, H_SLOW_LIMIT);
			ck_assert_ptr_nonnull(l);
			if (is_event(l))
				during++;
			ck_assert_msg(!is_event(l), "an event inside a list: %s", l);
		}
		lists++;
		ck_assert_str_eq(ec_reply(a, H_SLOW_LIMIT), "OK");
	}
	ec_events(o, 300);
	printf("election_events_not_in_lists: %d lists, %ld events around them\n", lists, o->total);
	ck_assert_int_gt(o->total, 2); /* events did come, between the replies */
	ck_assert_int_eq(during, 0);
	ec_close(a);
	ec_close(o);
}
END_TEST

/* A leader that resumes (1.2) on another lockd keeps its fence and its
 * value, and may PROCLAIM and RESIGN there. */
START_TEST(election_resume_elsewhere)
{
	two_lockds();
	struct ec *a = ec_open(P0), *q = ec_open(P1);
	char id[64], secret[64], req[160], want[160];
	const char *r = ec_cmd(a, "SESSION", H_SLOW_LIMIT);
	ck_assert_msg(r && sscanf(r, "SESSION %63s %63s", id, secret) == 2, "SESSION: %s",
	              r ? r : "");
	unsigned long long f = ok_fence(ec_cmd(a, "CAMPAIGN rs one", H_SLOW_LIMIT));
	ec_close(a); /* detached: the lead is kept for the grace */
	struct ec *b = ec_open(P1);
	snprintf(req, sizeof(req), "RESUME %s %s", id, secret);
	ec_expect(b, req, "OK 1");
	ec_send(b, "HELD");
	printf("election_resume_elsewhere: granted fence %llu, HELD after RESUME: %s\n", f,
	       ec_reply(b, H_SLOW_LIMIT));
	ck_assert_str_eq(ec_line(b, H_SLOW_LIMIT), "END");
	snprintf(want, sizeof(want), "LEADER %llu one", f);
	ec_expect(q, "LEADER rs", want);
	ec_expect(b, "PROCLAIM rs two", "OK");
	snprintf(want, sizeof(want), "LEADER %llu two", f);
	ec_expect(q, "LEADER rs", want);
	snprintf(want, sizeof(want), "OK %llu", f);
	ec_expect(b, "CAMPAIGN rs three", want);
	ec_expect(b, "RESIGN rs", "OK");
	ec_expect(q, "LEADER rs", "NONE");
	ec_expect_prefix(b, "PROCLAIM rs four", "ERR NOTLEADER");
	ec_expect(b, "QUIT", "OK");
	ec_close(b);
	ec_close(q);
}
END_TEST

/* A leader's value outlives a master restart as its lock does: written
 * back on the restarted master, it still answers LEADER once another
 * master is gone. */
START_TEST(election_value_survives_restart)
{
	struct h_opts o = {.lease_ms = 900, .redis_extra = "  restart_exclusion_ms: 1000\n"};
	h_std(&o);
	struct ec *a = ec_open(P0), *q = ec_open(P0);
	unsigned long long f = ok_fence(ec_cmd(a, "CAMPAIGN vr v1", H_SLOW_LIMIT));
	ec_expect(a, "PROCLAIM vr v2", "OK");
	h_master_restart(0);
	double t0 = h_now_ms();
	wait_value_on(0, "vr", "v2", "value on the restarted master");
	printf("election_value_survives_restart: written back after %.0f ms\n", h_now_ms() - t0);
	h_sleep_ms(1500); /* restart_exclusion_ms: master 0 counts again */
	h_master_kill(1);
	char want[128];
	snprintf(want, sizeof(want), "LEADER %llu v2", f);
	const char *r = NULL;
	for (t0 = h_now_ms(); h_now_ms() - t0 < 5000; h_sleep_ms(100)) {
		r = ec_cmd(q, "LEADER vr", H_SLOW_LIMIT);
		if (r && strcmp(r, want) == 0)
			break;
	}
	ck_assert_str_eq(r ? r : "(nothing)", want);
	ck_assert_int_eq(a->nev, 0); /* no LOST */
	ec_expect(a, "RESIGN vr", "OK");
	ec_close(a);
	ec_close(q);
}
END_TEST

/* A master that lost a leader's value, or its lock and value, without
 * restarting (deleted there): the renewal finds the lock without its
 * value (or writes the lock back), and the value goes back beside it
 * (PROTOCOL 1.3), not only after a reconnect. */
START_TEST(election_renewal_writes_value_back)
{
	struct h_opts o = {.lease_ms = 900};
	h_std(&o);
	struct ec *a = ec_open(P0);
	ok_fence(ec_cmd(a, "CAMPAIGN vw v1", H_SLOW_LIMIT));
	wait_value_on(0, "vw", "v1", "the value on master 0");
	/* well past the write-back that follows each master's subscriber
	 * connecting (a lease and a third), so that only the renewal's counts */
	h_sleep_ms(3000);
	ck_assert_int_eq(h_redis_int(0, "DEL", "lockd:vw leader", NULL), 1);
	double t0 = h_now_ms();
	wait_value_on(0, "vw", "v1", "the value written back on master 0");
	printf("election_renewal_writes_value_back: the value after %.0f ms\n", h_now_ms() - t0);
	ck_assert_int_eq(h_redis_int(0, "DEL", "lockd:vw", "lockd:vw leader", NULL), 2);
	t0 = h_now_ms();
	wait_value_on(0, "vw", "v1", "the lock and value written back on master 0");
	printf("election_renewal_writes_value_back: the lock and value after %.0f ms\n",
	       h_now_ms() - t0);
	ck_assert_int_eq(a->nev, 0); /* no LOST */
	ec_expect(a, "RESIGN vw", "OK");
	ec_close(a);
}
END_TEST

/* A leader resumed on another lockd (its first lockd killed) is that
 * lockd's leader from the RESUME on, before any election command: its
 * value is written back on a restarted master from there, and its UNLOCK
 * there announces NOLEADER to observers on both lockds. */
START_TEST(election_resumed_leader_written_back)
{
	struct h_opts o = {.lease_ms = 900, .redis_extra = "  restart_exclusion_ms: 1000\n"};
	h_std(&o);
	h_lockd_start(&o);
	struct ec *a = ec_open(P0);
	char id[64], secret[64], req[160];
	const char *r = ec_cmd(a, "SESSION", H_SLOW_LIMIT);
	ck_assert_msg(r && sscanf(r, "SESSION %63s %63s", id, secret) == 2, "SESSION: %s",
	              r ? r : "");
	unsigned long long f = ok_fence(ec_cmd(a, "CAMPAIGN rw v1", H_SLOW_LIMIT));
	h_lockd_signal(0, SIGKILL);
	ck_assert_int_ne(h_lockd_wait(0, 3000), -1);
	ec_close(a);
	struct ec *b = ec_open(P1), *q = ec_open(P1);
	snprintf(req, sizeof(req), "RESUME %s %s", id, secret);
	ec_expect(b, req, "OK 1");
	h_master_restart(0);
	double t0 = h_now_ms();
	wait_value_on(0, "rw", "v1", "the resumed leader's value on the restarted master");
	printf("election_resumed_leader_written_back: written back by lockd 1 after %.0f ms\n",
	       h_now_ms() - t0);
	char want[128];
	snprintf(want, sizeof(want), "ELECTED rw %llu v1", f);
	ec_send(q, "OBSERVE rw");
	ck_assert_str_eq(ec_reply(q, H_SLOW_LIMIT), "OK");
	wait_last(q, want, 500 + H_LOADED);
	ec_expect(b, "UNLOCK rw", "OK 0");
	wait_last(q, "NOLEADER rw", 500 + H_LOADED);
	ec_close(b);
	ec_close(q);
}
END_TEST

/* A grant whose value reaches no majority (PROTOCOL.md 1.3: "every rule
 * of locks ... quorum errors" holds for a leader's hold; LOCK keeps trying
 * until its WAIT ends): the record of the name on two masters is made a
 * string, so that the value cannot be written there. CAMPAIGN WAIT keeps
 * trying (the lock given back between tries) and leads once the records
 * can be written again; with them broken for good it answers ERR QUORUM
 * when its WAIT ends, not before; the name is free after it. */
START_TEST(election_campaign_retries_quorum)
{
	h_std(NULL);
	struct ec *a = ec_open(P0), *q = ec_open(P0);
	for (int i = 0; i < 2; i++)
		free(h_redis(i, "SET", "lockd:rq leader", "not-a-hash", NULL));
	double t0 = h_now_ms();
	ec_send(a, "CAMPAIGN rq alpha WAIT 5000");
	ck_assert_ptr_null(ec_reply(a, 600)); /* trying, not failed */
	for (int i = 0; i < 2; i++)
		free(h_redis(i, "DEL", "lockd:rq leader", NULL));
	unsigned long long f = ok_fence(ec_reply(a, 1500 + H_LOADED));
	printf("election_campaign_retries_quorum: led %.0f ms after the CAMPAIGN\n",
	       h_now_ms() - t0);
	char want[128];
	snprintf(want, sizeof(want), "LEADER %llu alpha", f);
	ec_expect(q, "LEADER rq", want);
	ec_expect(a, "RESIGN rq", "OK");

	for (int i = 0; i < 2; i++)
		free(h_redis(i, "SET", "lockd:rq leader", "not-a-hash", NULL));
	t0 = h_now_ms();
	ec_send(a, "CAMPAIGN rq beta WAIT 1000");
	const char *r = ec_reply(a, 1000 + 1500 + H_LOADED);
	double ms = h_now_ms() - t0;
	ck_assert_msg(r && strncmp(r, "ERR QUORUM ", 11) == 0, "CAMPAIGN WAIT 1000: '%s'",
	              r ? r : "(nothing)");
	ck_assert_msg(ms >= 1000 - H_JITTER, "ERR QUORUM after %.0f ms, before the WAIT ended", ms);
	for (int i = 0; i < 2; i++)
		free(h_redis(i, "DEL", "lockd:rq leader", NULL));
	/* the lock was given back each time (or lapses): a plain session gets it */
	struct ec *o = ec_open(P0);
	ck_assert_uint_gt(ok_fence(ec_cmd(o, "LOCK rq WAIT 5000", 5000 + H_LOADED)), f);
	ck_assert_int_eq(a->nev, 0);
	ec_close(o);
	ec_close(a);
	ec_close(q);
}
END_TEST

/* A session on lockd port (GRACE grace_ms) that campaigns for name with
 * value and lets its connection go (detached); its id and secret. */
static unsigned long long lead_detached(int port, int grace_ms, const char *name, const char *value,
                                        char *id, char *secret)
{
	struct ec *a = ec_open(port);
	char req[200];
	snprintf(req, sizeof(req), "SESSION GRACE %d", grace_ms);
	const char *r = ec_cmd(a, req, H_SLOW_LIMIT);
	ck_assert_msg(r && sscanf(r, "SESSION %63s %63s", id, secret) == 2, "SESSION: %s",
	              r ? r : "");
	snprintf(req, sizeof(req), "CAMPAIGN %s %s", name, value);
	unsigned long long f = ok_fence(ec_cmd(a, req, H_SLOW_LIMIT));
	ec_close(a);
	return f;
}

/* PROCLAIM, RESIGN or UNLOCK pipelined right behind the RESUME that moves
 * a leader to another lockd sees the resumed leadership (PROTOCOL 1.2:
 * RESUME restores the session as it was; 1.3: a leader that resumes keeps
 * its fence and value). Observers on both lockd hear of the RESIGN and
 * the UNLOCK within the service level (a lease of 6000 ms: a timed read
 * every lease/3 would come too late). */
START_TEST(election_pipelined_after_resume)
{
	struct h_opts o = {.lease_ms = 6000};
	h_std(&o);
	h_lockd_start(&o);
	static const char *const cmds[] = {"PROCLAIM %s two", "RESIGN %s", "UNLOCK %s"};
	static const char *const oks[] = {"OK", "OK", "OK 0"};
	struct ec *q = ec_open(P1);
	for (int k = 0; k < 3; k++) {
		char name[32], id[64], secret[64], req[300], cmd[64], want[160];
		snprintf(name, sizeof(name), "pl%d", k);
		unsigned long long f = lead_detached(P0, 20000, name, "one", id, secret);
		struct ec *w[2] = {ec_open(P0), ec_open(P1)};
		snprintf(want, sizeof(want), "ELECTED %s %llu one", name, f);
		for (int i = 0; i < 2; i++) {
			snprintf(req, sizeof(req), "OBSERVE %s", name);
			ec_expect(w[i], req, "OK");
			wait_last(w[i], want, H_SLOW_LIMIT);
		}
		struct ec *b = ec_open(P1);
		snprintf(cmd, sizeof(cmd), cmds[k], name);
		snprintf(req, sizeof(req), "RESUME %s %s\n%s", id, secret, cmd);
		ec_send(b, req); /* one write: the command right behind the RESUME */
		const char *r = ec_reply(b, H_SLOW_LIMIT);
		ck_assert_str_eq(r ? r : "(nothing)", "OK 1");
		r = ec_reply(b, H_SLOW_LIMIT);
		if (!r || strcmp(r, oks[k]) != 0)
			ck_abort_msg("%s pipelined behind RESUME: want '%s', got '%s'", cmd, oks[k],
			             r ? r : "(nothing)");
		double t0 = h_now_ms();
		snprintf(req, sizeof(req), "LEADER %s", name);
		if (k == 0)
			snprintf(want, sizeof(want), "LEADER %llu two", f);
		else
			snprintf(want, sizeof(want), "NONE");
		ec_expect(q, req, want);
		if (k == 0)
			snprintf(want, sizeof(want), "ELECTED %s %llu two", name, f);
		else
			snprintf(want, sizeof(want), "NOLEADER %s", name);
		for (int i = 0; i < 2; i++) {
			wait_last(w[i], want, (int)(500 + H_LOADED - (h_now_ms() - t0)));
			ec_close(w[i]);
		}
		ec_expect(b, "QUIT", "OK");
		ec_close(b);
	}
	ec_close(q);
}
END_TEST

/* The first lockd's grace running out after the leader resumed on another
 * lockd changes nothing of the value (PROTOCOL 1.3: nothing the first
 * lockd does afterwards removes or changes it). A lease of 30000 ms: the
 * first lockd's touch (every lease/3) comes after its grace of 300 ms
 * (which the test checks in its log: else it tries again). */
START_TEST(election_grace_end_keeps_moved_value)
{
	struct h_opts o = {.lease_ms = 30000, .log_debug = 1}; /* per-session lines: debug */
	h_std(&o);
	h_lockd_start(&o);
	for (int tries = 0;; tries++) {
		/* an observer of this try's name only: the session of an earlier
		 * try ends at its grace, and its NOLEADER must not land here */
		struct ec *q = ec_open(P1);
		char name[32], id[64], secret[64], req[300], want[160];
		snprintf(name, sizeof(name), "gv%d", tries);
		long off = h_file_size(h_lockd(0)->log);
		unsigned long long f = lead_detached(P0, 300, name, "v1", id, secret);
		struct ec *b = ec_open(P1);
		snprintf(req, sizeof(req), "RESUME %s %s", id, secret);
		ec_expect(b, req, "OK 1");
		snprintf(req, sizeof(req), "OBSERVE %s", name);
		ec_expect(q, req, "OK");
		snprintf(want, sizeof(want), "ELECTED %s %llu v1", name, f);
		wait_last(q, want, H_SLOW_LIMIT);
		/* lockd 0's grace runs out (or its touch saw the move first) */
		char grace[120], moved[120];
		snprintf(grace, sizeof(grace), "session %s: its grace of 300 ms ran out", id);
		snprintf(moved, sizeof(moved), "session %s: resumed on another lockd", id);
		char *g = NULL, *m = NULL;
		for (double t0 = h_now_ms(); !g && !m && h_now_ms() - t0 < 300 + H_SLOW_LIMIT;
		     h_sleep_ms(20)) {
			g = h_log_find(h_lockd(0)->log, off, grace, NULL);
			m = h_log_find(h_lockd(0)->log, off, moved, NULL);
		}
		ck_assert_msg(g || m, "lockd 0 neither ended session %s nor saw it move", id);
		int ran_out = g && !m;
		free(g);
		free(m);
		if (ran_out) {
			/* what lockd 0 sent at the grace's end has reached the masters */
			ec_events(q, 200);
			snprintf(req, sizeof(req), "LEADER %s", name);
			snprintf(want, sizeof(want), "LEADER %llu v1", f);
			ec_expect(q, req, want);
			snprintf(want, sizeof(want), "ELECTED %s %llu v1", name, f);
			ck_assert_str_eq(last_ev(q), want);
			snprintf(req, sizeof(req), "PROCLAIM %s v2", name);
			ec_expect(b, req, "OK");
			snprintf(req, sizeof(req), "LEADER %s", name);
			snprintf(want, sizeof(want), "LEADER %llu v2", f);
			ec_expect(q, req, want);
			ec_close(b);
			ec_close(q);
			break;
		}
		ck_assert_msg(tries < 3, "lockd 0's touch came before its grace ended 4 times");
		ec_close(b);
		ec_close(q);
	}
}
END_TEST

/* STATS masters_counting of the lockd e is connected to. */
static int masters_counting(struct ec *e)
{
	int n = -1;
	ec_send(e, "STATS");
	const char *l = ec_reply(e, H_SLOW_LIMIT);
	while (l && strcmp(l, "END") != 0) {
		sscanf(l, "STAT masters_counting %d", &n);
		l = ec_line(e, H_SLOW_LIMIT);
	}
	ck_assert_msg(l != NULL, "STATS: no END");
	return n;
}

/* A PROCLAIM that reached one master of three (ERR QUORUM) on the first
 * lockd, then the session resumed on another lockd while that master was
 * stopped, and a PROCLAIM there (OK): once the master is back (and counts
 * again), LEADER answers the value of the later PROCLAIM, not the one of
 * the same version number (PROTOCOL 1.3: a version is never used twice
 * for two values of one leader, across lockd). Lockd 0 reaches masters 1
 * and 2 through proxies, which hold its PROCLAIM and are then killed with
 * it. A lease of 15000 ms: lockd 0's hold on master 0 (and "b" with it)
 * lasts the whole test. */
START_TEST(election_version_across_lockd)
{
	h_masters_start(3);
	struct h_proxy *px[2] = {h_proxy_start(h_master(1)->port),
	                         h_proxy_start(h_master(2)->port)};
	int via[3] = {0, h_proxy_port(px[0]), h_proxy_port(px[1])};
	h_lockd_start(&(struct h_opts){.lease_ms = 15000, .via = via});
	h_lockd_start(&(struct h_opts){.lease_ms = 15000});
	char id[64], secret[64], req[300], want[160];
	struct ec *a = ec_open(P0), *q = ec_open(P1);
	const char *r = ec_cmd(a, "SESSION GRACE 20000", H_SLOW_LIMIT);
	ck_assert_msg(r && sscanf(r, "SESSION %63s %63s", id, secret) == 2, "SESSION: %s",
	              r ? r : "");
	unsigned long long f = ok_fence(ec_cmd(a, "CAMPAIGN va a", H_SLOW_LIMIT));
	/* every master has the session's record with the hold, and "a" (a
	 * loaded machine may have answered from two of them): the RESUME
	 * below has only masters 1 and 2 */
	char rkey[100];
	snprintf(rkey, sizeof(rkey), "lockd: session %s", id);
	for (int i = 0; i < 3; i++) {
		wait_value_on(i, "va", "a", "the leader's value");
		char *h = NULL;
		for (double t0 = h_now_ms(); h_now_ms() - t0 < 3000; h_sleep_ms(20)) {
			free(h);
			h = h_redis(i, "HGET", rkey, "x0 va", NULL);
			if (h && strcmp(h, "(nil)") != 0)
				break;
		}
		ck_assert_msg(h && strcmp(h, "(nil)") != 0, "master %d: no hold in %s", i, rkey);
		free(h);
	}
	/* "b" reaches master 0 only */
	for (int i = 0; i < 2; i++)
		ck_assert_int_ge(h_proxy_hold(px[i]), 1);
	ec_expect_prefix(a, "PROCLAIM va b", "ERR QUORUM");
	for (int i = 0; i < 2; i++)
		h_proxy_stop(px[i]); /* what they held never arrives */
	char *v = h_redis(0, "HGET", "lockd:va leader", "val", NULL);
	ck_assert_str_eq(v ? v : "(none)", "b");
	free(v);
	/* master 0 stopped: the session resumes on lockd 1 from masters 1 and 2 */
	h_master_stop(0);
	ec_close(a);
	struct ec *b = ec_open(P1);
	snprintf(req, sizeof(req), "RESUME %s %s", id, secret);
	ec_expect(b, req, "OK 1");
	ec_expect(b, "PROCLAIM va c", "OK");
	snprintf(want, sizeof(want), "LEADER %llu c", f);
	ec_expect(q, "LEADER va", want);
	/* master 0 is back, with "b", and counts again on lockd 1 */
	h_master_cont(0);
	double t0 = h_now_ms();
	while (masters_counting(q) != 3 && h_now_ms() - t0 < 10000)
		h_sleep_ms(50);
	ck_assert_int_eq(masters_counting(q), 3);
	for (int k = 0; k < 5; k++)
		ec_expect(q, "LEADER va", want);
	v = h_redis(0, "HGET", "lockd:va leader", "val", NULL);
	ck_assert_str_eq(v ? v : "(none)", "b"); /* still there: LEADER read it */
	free(v);
	ec_expect(b, "RESIGN va", "OK");
	ec_close(b);
	ec_close(q);
}
END_TEST

/* A leader that moves A -> B -> A (PROTOCOL 1.2, "the latest state";
 * 1.3: versions across lockd): B reserved an epoch above A's and
 * proclaimed; back on A, which may still keep its leader of before (a
 * lease of 30000 ms: A's touch, every lease/3, most likely comes later),
 * a PROCLAIM is written above B's values and LEADER answers it. */
START_TEST(election_move_back_proclaim)
{
	struct h_opts o = {.lease_ms = 30000};
	h_std(&o);
	h_lockd_start(&o);
	char id[64], secret[64], req[300], want[160];
	struct ec *q = ec_open(P1);
	unsigned long long f = lead_detached(P0, 20000, "mb", "one", id, secret);
	snprintf(req, sizeof(req), "RESUME %s %s", id, secret);
	struct ec *b = ec_open(P1);
	ec_expect(b, req, "OK 1");
	ec_expect(b, "PROCLAIM mb two", "OK");
	ec_close(b);
	struct ec *a = ec_open(P0);
	ec_expect(a, req, "OK 1");
	ec_expect(a, "PROCLAIM mb three", "OK");
	snprintf(want, sizeof(want), "LEADER %llu three", f);
	ec_expect(q, "LEADER mb", want);
	ec_expect(a, "RESIGN mb", "OK");
	ec_expect(q, "LEADER mb", "NONE");
	ec_close(a);
	ec_close(q);
}
END_TEST

TCase *tc_election(void)
{
	TCase *tc = tcase_create("election");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, election_failover);
	H_ADD(tc, election_proclaim_notleader);
	H_ADD(tc, election_observers);
	H_ADD(tc, election_leader_lost);
	H_ADD(tc, election_notice_dropped);
	H_ADD(tc, election_events_not_in_lists);
	H_ADD(tc, election_resume_elsewhere);
	H_ADD(tc, election_value_survives_restart);
	H_ADD(tc, election_campaign_retries_quorum);
	H_ADD(tc, election_resumed_leader_written_back);
	H_ADD(tc, election_renewal_writes_value_back);
	H_ADD(tc, election_pipelined_after_resume);
	H_ADD(tc, election_grace_end_keeps_moved_value);
	H_ADD(tc, election_version_across_lockd);
	H_ADD(tc, election_move_back_proclaim);
	return tc;
}
