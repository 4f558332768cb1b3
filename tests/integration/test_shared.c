/* Shared holds and permits (protocol 1.1) end to end: the replies, the
 * keys on the masters, and three runs under master faults judged by a
 * checker in this process.
 *
 * As in test_soak.c, every session is driven from one poll loop and
 * safety is judged by when replies are received: a session holds from the
 * receipt of its "OK fence" until it sends UNLOCK (or receives LOST for
 * that fence). Each round reads every socket that has data, handles the
 * LOST events, then the replies: what arrived in one round counts as
 * simultaneous. The checker sees
 *   - a writer (exclusive) granted while anyone holds, or a reader
 *     (shared) granted while a writer holds: an overlap;
 *   - more permit holders than permits;
 *   - a grant whose fence is not above every fence answered before its
 *     request was sent: a regression;
 *   - on one lockd, a permit granted to a session while another one there
 *     has waited longer (sent its LOCK 5 ms or more before): not FIFO. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* ------------------------------------------------------------------ the engine */

enum { S_IDLE, S_LOCKING, S_HOLDING, S_UNLOCKING };
enum { K_READER, K_WRITER, K_PERMIT };

struct ss {
	struct cl *c;
	int inst, kind, st;
	char lock_req[96];
	int hold_min, hold_max, think_min, think_max;
	unsigned long long fence, lost_fence;
	int holds;       /* believes it holds: OK received, no UNLOCK sent, no LOST */
	double t_next;   /* IDLE: send LOCK at; HOLDING: send UNLOCK at */
	double t_sent;   /* when the pending request was sent */
	double max_wait; /* longest LOCK sent -> OK */
	long grants, timeouts, quorum;
	int granted_now; /* granted in this round */
	char *lines[16];
	int nlines;
};

struct eng {
	struct ss *s;
	int n, permits; /* permits: the n of PERMITS n, 0 for readers/writers */
	char key[32];
	unsigned seed;
	int stopping;
	int readers, writers, holders; /* holding now */
	int max_holders, max_readers;
	long grants, overlaps, over_permits, reader_overlaps, regressions, not_fifo, lost, bad;
	char first_bad[320], first_overlap[320], first_regression[240], first_fifo[240];
	/* every grant in order of receipt: when, and the largest fence so far */
	double *g_t;
	unsigned long long *g_max;
	long ng, capg;
};

static int rnd(unsigned *seed, int lo, int hi)
{
	return hi <= lo ? lo : lo + (int)(rand_r(seed) % (unsigned)(hi - lo + 1));
}

static void eng_bad(struct eng *e, int i, const char *what, const char *line)
{
	e->bad++;
	if (!e->first_bad[0])
		snprintf(e->first_bad, sizeof(e->first_bad),
		         "session %d (lockd %d, state %d): %s '%s'", i, e->s[i].inst, e->s[i].st,
		         what, line ? line : "");
}

static void eng_init(struct eng *e, int n, const char *key, int permits, unsigned seed)
{
	memset(e, 0, sizeof(*e));
	e->s = calloc((size_t)n, sizeof(e->s[0]));
	ck_assert(e->s != NULL);
	e->n = n;
	e->permits = permits;
	e->seed = seed;
	snprintf(e->key, sizeof(e->key), "%s", key);
}

static void eng_free(struct eng *e)
{
	for (int i = 0; i < e->n; i++)
		if (e->s[i].c)
			cl_close(e->s[i].c);
	free(e->s);
	free(e->g_t);
	free(e->g_max);
}

/* Session i: on lockd inst, of a kind, holding and thinking for so long. */
static void eng_add(struct eng *e, int i, int inst, int kind, int wait_ms, int hold_min,
                    int hold_max, int think_min, int think_max)
{
	struct ss *s = &e->s[i];
	s->c = cl_tcp(h_lockd(inst)->port);
	s->inst = inst;
	s->kind = kind;
	if (kind == K_READER)
		snprintf(s->lock_req, sizeof(s->lock_req), "LOCK %s SHARED WAIT %d\n", e->key,
		         wait_ms);
	else if (kind == K_WRITER)
		snprintf(s->lock_req, sizeof(s->lock_req), "LOCK %s WAIT %d\n", e->key, wait_ms);
	else
		snprintf(s->lock_req, sizeof(s->lock_req), "LOCK %s PERMITS %d WAIT %d\n", e->key,
		         e->permits, wait_ms);
	s->hold_min = hold_min;
	s->hold_max = hold_max;
	s->think_min = think_min;
	s->think_max = think_max;
	s->t_next = h_now_ms() + i;
}

static void stop_holding(struct eng *e, struct ss *s)
{
	if (!s->holds)
		return;
	s->holds = 0;
	e->holders--;
	if (s->kind == K_READER)
		e->readers--;
	else if (s->kind == K_WRITER)
		e->writers--;
}

/* The largest fence received before t (0: none). */
static unsigned long long fence_before(const struct eng *e, double t)
{
	long lo = 0, hi = e->ng; /* first index with g_t >= t */
	while (lo < hi) {
		long mid = (lo + hi) / 2;
		if (e->g_t[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? e->g_max[lo - 1] : 0;
}

static void on_grant(struct eng *e, int i, unsigned long long f, double now)
{
	struct ss *s = &e->s[i];
	double w = now - s->t_sent;
	e->grants++;
	s->grants++;
	s->granted_now = 1;
	s->max_wait = w > s->max_wait ? w : s->max_wait;
	unsigned long long before = fence_before(e, s->t_sent);
	if (f <= before) {
		e->regressions++;
		if (!e->first_regression[0])
			snprintf(e->first_regression, sizeof(e->first_regression),
			         "session %d (lockd %d) got fence %llu; fence %llu was answered "
			         "before its request",
			         i, s->inst, f, before);
	}
	if (e->ng == e->capg) {
		e->capg = e->capg ? e->capg * 2 : 1024;
		e->g_t = realloc(e->g_t, (size_t)e->capg * sizeof(e->g_t[0]));
		e->g_max = realloc(e->g_max, (size_t)e->capg * sizeof(e->g_max[0]));
		ck_assert(e->g_t && e->g_max);
	}
	e->g_t[e->ng] = now;
	e->g_max[e->ng] = e->ng && e->g_max[e->ng - 1] > f ? e->g_max[e->ng - 1] : f;
	e->ng++;
	s->fence = f;
	s->st = S_HOLDING;
	s->t_next = now + rnd(&e->seed, s->hold_min, s->hold_max);
	if (s->lost_fence == f)
		return; /* its LOST came in the same round */
	/* who else holds now */
	int clash = s->kind == K_WRITER ? e->holders > 0 : s->kind == K_READER ? e->writers > 0 : 0;
	if (clash) {
		e->overlaps++;
		if (!e->first_overlap[0])
			snprintf(e->first_overlap, sizeof(e->first_overlap),
			         "session %d (%s, lockd %d) got 'OK %llu' while %d reader(s) and "
			         "%d writer(s) held",
			         i, s->kind == K_WRITER ? "writer" : "reader", s->inst, f,
			         e->readers, e->writers);
	}
	if (s->kind == K_READER && e->readers > 0)
		e->reader_overlaps++;
	s->holds = 1;
	e->holders++;
	e->readers += s->kind == K_READER;
	e->writers += s->kind == K_WRITER;
	if (e->permits && e->holders > e->permits)
		e->over_permits++;
	e->max_holders = e->holders > e->max_holders ? e->holders : e->max_holders;
	e->max_readers = e->readers > e->max_readers ? e->readers : e->max_readers;
}

static void on_event(struct eng *e, int i, const char *l)
{
	struct ss *s = &e->s[i];
	char k[64];
	unsigned long long f;
	char tail;
	if (sscanf(l, "LOST %63s %llu%c", k, &f, &tail) != 2 || strcmp(k, e->key) != 0) {
		eng_bad(e, i, "bad event", l);
		return;
	}
	e->lost++;
	s->lost_fence = f;
	if (s->holds && s->fence == f)
		stop_holding(e, s);
}

static void on_reply(struct eng *e, int i, const char *l, double now)
{
	struct ss *s = &e->s[i];
	if (s->st == S_LOCKING) {
		if (strncmp(l, "OK ", 3) == 0 && l[3] >= '1' && l[3] <= '9') {
			on_grant(e, i, strtoull(l + 3, NULL, 10), now);
			return;
		}
		if (strcmp(l, "TIMEOUT") == 0)
			s->timeouts++;
		else if (strncmp(l, "ERR QUORUM", 10) == 0)
			s->quorum++;
		else
			eng_bad(e, i, "reply to LOCK", l);
		s->st = S_IDLE;
		s->t_next = now + rnd(&e->seed, 5, 20);
		return;
	}
	if (s->st == S_UNLOCKING) {
		if (strcmp(l, "OK 0") != 0 && strncmp(l, "ERR QUORUM", 10) != 0 &&
		    !(strncmp(l, "ERR NOTHELD", 11) == 0 && s->lost_fence == s->fence))
			eng_bad(e, i, "reply to UNLOCK", l);
		s->st = S_IDLE;
		s->t_next = now + rnd(&e->seed, s->think_min, s->think_max);
		return;
	}
	eng_bad(e, i, "unexpected line", l);
}

/* Permits on one lockd go first come, first served: nobody there still
 * waits who sent its LOCK 5 ms or more before one granted this round. */
static void check_fifo(struct eng *e)
{
	for (int i = 0; i < e->n; i++) {
		struct ss *b = &e->s[i];
		if (!b->granted_now)
			continue;
		b->granted_now = 0;
		if (b->kind != K_PERMIT)
			continue;
		for (int j = 0; j < e->n; j++) {
			struct ss *a = &e->s[j];
			if (a->inst != b->inst || a->st != S_LOCKING || a->t_sent > b->t_sent - 5)
				continue;
			e->not_fifo++;
			if (!e->first_fifo[0])
				snprintf(
				    e->first_fifo, sizeof(e->first_fifo),
				    "lockd %d granted session %d (LOCK sent %.0f ms before) while "
				    "session %d waited (LOCK sent %.0f ms before)",
				    b->inst, i, h_now_ms() - b->t_sent, j, h_now_ms() - a->t_sent);
		}
	}
}

static void eng_timers(struct eng *e, double now)
{
	for (int i = 0; i < e->n; i++) {
		struct ss *s = &e->s[i];
		if (s->st == S_HOLDING && now >= s->t_next) {
			stop_holding(e, s);
			char req[80];
			snprintf(req, sizeof(req), "UNLOCK %s\n", e->key);
			cl_send(s->c, req);
			s->t_sent = now;
			s->st = S_UNLOCKING;
		} else if (s->st == S_IDLE && !e->stopping && now >= s->t_next) {
			cl_send(s->c, s->lock_req);
			s->t_sent = h_now_ms();
			s->st = S_LOCKING;
		}
	}
}

static int is_event(const char *l)
{
	return strncmp(l, "LOST", 4) == 0 && (l[4] == ' ' || !l[4]);
}

static void eng_round(struct eng *e, int max_ms)
{
	struct pollfd pf[64];
	double now = h_now_ms(), due = now + max_ms;
	ck_assert(e->n <= 64);
	for (int i = 0; i < e->n; i++) {
		struct ss *s = &e->s[i];
		if ((s->st == S_HOLDING || (s->st == S_IDLE && !e->stopping)) && s->t_next < due)
			due = s->t_next;
		pf[i].fd = s->c->fd;
		pf[i].events = POLLIN;
		pf[i].revents = 0;
	}
	int wait = (int)(due - now);
	int pr = poll(pf, (nfds_t)e->n, wait < 0 ? 0 : wait);
	ck_assert_msg(pr >= 0 || errno == EINTR, "poll: %s", strerror(errno));
	for (int i = 0; i < e->n && pr > 0; i++)
		if (pf[i].revents)
			cl_fill(e->s[i].c);
	now = h_now_ms();
	for (int i = 0; i < e->n; i++) {
		struct ss *s = &e->s[i];
		const char *l;
		while (s->nlines < 16 && (l = cl_take_line(s->c)))
			s->lines[s->nlines++] = strdup(l);
		if (s->c->eof)
			eng_bad(e, i, "connection closed by lockd", NULL);
	}
	for (int i = 0; i < e->n; i++)
		for (int j = 0; j < e->s[i].nlines; j++)
			if (is_event(e->s[i].lines[j]))
				on_event(e, i, e->s[i].lines[j]);
	for (int i = 0; i < e->n; i++) {
		struct ss *s = &e->s[i];
		for (int j = 0; j < s->nlines; j++) {
			if (!is_event(s->lines[j]))
				on_reply(e, i, s->lines[j], now);
			free(s->lines[j]);
		}
		s->nlines = 0;
	}
	check_fifo(e);
	eng_timers(e, h_now_ms());
}

static int eng_busy(const struct eng *e)
{
	int n = 0;
	for (int i = 0; i < e->n; i++)
		n += e->s[i].st != S_IDLE;
	return n;
}

static void eng_drain(struct eng *e, int timeout_ms)
{
	e->stopping = 1;
	double end = h_now_ms() + timeout_ms;
	while (eng_busy(e) && h_now_ms() < end)
		eng_round(e, 20);
	ck_assert_msg(eng_busy(e) == 0, "%d sessions still busy %d ms after the last LOCK",
	              eng_busy(e), timeout_ms);
}

/* ------------------------------------------------------------------ faults */

/* One master at a time: kill -9 and restart, or SIGSTOP and SIGCONT;
 * then wait until both lockds count it again. */
enum { F_GAP, F_DOWN, F_RECOVER };

struct flt {
	int phase, m, kind, nm;
	double until, t_recover, worst_recover, next_poll;
	int n, kills, stops;
	struct cl *ctl[2];
	int nctl;
	unsigned seed;
	int stop_only; /* SIGSTOP only, alternating masters */
};

static int counts_on(struct cl *c, int m)
{
	char n1[48], n2[48];
	snprintf(n1, sizeof(n1), "master.%d.state", m);
	snprintf(n2, sizeof(n2), "master.%d.counts", m);
	char *st = cl_stat(c, n1), *ct = cl_stat(c, n2);
	int ok = st && ct && strcmp(st, "up") == 0 && strcmp(ct, "1") == 0;
	free(st);
	free(ct);
	return ok;
}

static void faults_tick(struct flt *f, double now, int stop_new)
{
	switch (f->phase) {
	case F_GAP:
		if (now < f->until || stop_new)
			return;
		f->m = f->n % f->nm;
		f->kind = f->stop_only ? 1 : (f->n / f->nm) % 2;
		f->n++;
		if (f->kind == 0) {
			h_master_kill(f->m);
			f->kills++;
		} else {
			h_master_stop(f->m);
			f->stops++;
		}
		f->phase = F_DOWN;
		f->until = h_now_ms() + rnd(&f->seed, 700, 1300);
		return;
	case F_DOWN:
		if (now < f->until)
			return;
		if (f->kind == 0)
			h_master_restart(f->m);
		else
			h_master_cont(f->m);
		f->t_recover = h_now_ms();
		f->phase = F_RECOVER;
		f->until = f->t_recover + 15000;
		return;
	case F_RECOVER:
		if (now < f->next_poll)
			return;
		f->next_poll = now + 50;
		int all = 1;
		for (int i = 0; i < f->nctl && all; i++)
			all = counts_on(f->ctl[i], f->m);
		if (all) {
			double el = h_now_ms() - f->t_recover;
			f->worst_recover = el > f->worst_recover ? el : f->worst_recover;
			f->phase = F_GAP;
			f->until = h_now_ms() + rnd(&f->seed, 300, 700);
			return;
		}
		ck_assert_msg(now < f->until, "master %d does not count again 15 s after its %s",
		              f->m, f->kind == 0 ? "restart" : "SIGCONT");
		return;
	}
}

/* Run e for secs under faults (until the last fault healed), then drain. */
static void run_with_faults(struct eng *e, struct flt *f, int secs)
{
	double t0 = h_now_ms(), end = t0 + secs * 1000.0;
	f->until = t0 + 1000; /* a quiet start */
	while (h_now_ms() < end || f->phase != F_GAP) {
		eng_round(e, 20);
		faults_tick(f, h_now_ms(), h_now_ms() >= end);
		if (e->overlaps || e->over_permits || e->regressions)
			break; /* report at once, with the logs as they are */
	}
	if (!e->overlaps && !e->over_permits && !e->regressions)
		eng_drain(e, 12000);
}

static void eng_check(struct eng *e)
{
	if (e->overlaps || e->over_permits || e->regressions) {
		h_lockd_log_tail(0, 40);
		h_lockd_log_tail(1, 40);
	}
	ck_assert_msg(e->overlaps == 0, "%ld overlaps; first: %s", e->overlaps, e->first_overlap);
	ck_assert_msg(e->over_permits == 0, "%ld grants above %d holders (at most %d at once)",
	              e->over_permits, e->permits, e->max_holders);
	ck_assert_msg(e->regressions == 0, "%ld fence regressions; first: %s", e->regressions,
	              e->first_regression);
	ck_assert_msg(e->bad == 0, "%ld unexpected lines; first: %s", e->bad, e->first_bad);
}

static const struct h_opts soak_opts = {
    .lease_ms = 2000, .redis_extra = "  restart_exclusion_ms: 2000\n  reconnect_max_ms: 200\n"};

/* ------------------------------------------------------------------ the runs */

/* 18 readers and 6 writers on 2 lockds, one key, one master at a time
 * killed or stopped. */
START_TEST(shared_soak)
{
	enum { N = 24, WRITERS = 6, SECS = 20, WAIT = 10000 };
	h_masters_start(3);
	h_lockd_start(&soak_opts);
	h_lockd_start(&soak_opts);
	struct eng e;
	eng_init(&e, N, "rw", 0, 1313);
	for (int i = 0; i < N; i++) {
		int writer = (i / 2) % (N / WRITERS) == 0; /* 3 on each lockd */
		if (writer)
			eng_add(&e, i, i % 2, K_WRITER, WAIT, 0, 5, 20, 80);
		else
			eng_add(&e, i, i % 2, K_READER, WAIT, 5, 30, 0, 10);
	}
	struct flt f = {.phase = F_GAP, .seed = 7, .nm = 3, .nctl = 2};
	f.ctl[0] = cl_tcp(h_lockd(0)->port);
	f.ctl[1] = cl_tcp(h_lockd(1)->port);
	run_with_faults(&e, &f, SECS);
	double worst = 0;
	long wgrants = 0, wtimeouts = 0, wquorum = 0, rtimeouts = 0, minw = -1;
	for (int i = 0; i < N; i++) {
		struct ss *s = &e.s[i];
		if (s->kind == K_WRITER) {
			worst = s->max_wait > worst ? s->max_wait : worst;
			wgrants += s->grants;
			wtimeouts += s->timeouts;
			wquorum += s->quorum;
			minw = minw < 0 || s->grants < minw ? s->grants : minw;
		} else {
			rtimeouts += s->timeouts;
		}
	}
	char *sg = cl_stat(f.ctl[0], "shared_grants"), *sg1 = cl_stat(f.ctl[1], "shared_grants");
	printf("shared_soak: %d sessions (%d writers) on 2 lockds, faults %d (%d kill -9, %d "
	       "SIGSTOP; slowest rejoin %.0f ms): grants %ld (writers %ld, fewest per writer "
	       "%ld), most readers at once %d, reader overlaps %ld, longest writer wait %.0f ms, "
	       "TIMEOUT writers %ld readers %ld, ERR QUORUM writers %ld, LOST %ld, shared_grants "
	       "%s + %s\n",
	       N, WRITERS, f.n, f.kills, f.stops, f.worst_recover, e.grants, wgrants, minw,
	       e.max_readers, e.reader_overlaps, worst, wtimeouts, rtimeouts, wquorum, e.lost,
	       sg ? sg : "?", sg1 ? sg1 : "?");
	fflush(stdout);
	free(sg);
	free(sg1);
	eng_check(&e);
	ck_assert_msg(e.reader_overlaps > 0, "readers never held together");
	ck_assert_msg(minw > 0, "a writer was never granted");
	ck_assert_msg(wtimeouts == 0, "%ld writer TIMEOUTs (WAIT %d ms): starved", wtimeouts, WAIT);
	ck_assert_msg(f.kills >= 1 && f.stops >= 1, "faults: %d kills, %d stops", f.kills, f.stops);
	cl_close(f.ctl[0]);
	cl_close(f.ctl[1]);
	eng_free(&e);
}
END_TEST

/* PERMITS 3: 16 sessions on 2 lockds, one master at a time killed or
 * stopped: never more than 3 holders, all 3 used, FIFO on each lockd. */
START_TEST(permits_soak)
{
	enum { N = 16, SECS = 15, WAIT = 10000 };
	h_masters_start(3);
	h_lockd_start(&soak_opts);
	h_lockd_start(&soak_opts);
	struct eng e;
	eng_init(&e, N, "pool", 3, 4711);
	for (int i = 0; i < N; i++)
		eng_add(&e, i, i % 2, K_PERMIT, WAIT, 5, 25, 0, 10);
	struct flt f = {.phase = F_GAP, .seed = 11, .nm = 3, .nctl = 2};
	f.ctl[0] = cl_tcp(h_lockd(0)->port);
	f.ctl[1] = cl_tcp(h_lockd(1)->port);
	run_with_faults(&e, &f, SECS);
	long timeouts = 0, quorum = 0;
	double worst = 0;
	for (int i = 0; i < N; i++) {
		timeouts += e.s[i].timeouts;
		quorum += e.s[i].quorum;
		worst = e.s[i].max_wait > worst ? e.s[i].max_wait : worst;
	}
	char *pg = cl_stat(f.ctl[0], "permit_grants"), *pg1 = cl_stat(f.ctl[1], "permit_grants");
	printf("permits_soak: %d sessions on 2 lockds, PERMITS 3, faults %d (%d kill -9, %d "
	       "SIGSTOP): grants %ld, most holders at once %d, above 3: %ld, not FIFO %ld, "
	       "longest wait %.0f ms, TIMEOUT %ld, ERR QUORUM %ld, LOST %ld, permit_grants %s + "
	       "%s\n",
	       N, f.n, f.kills, f.stops, e.grants, e.max_holders, e.over_permits, e.not_fifo, worst,
	       timeouts, quorum, e.lost, pg ? pg : "?", pg1 ? pg1 : "?");
	fflush(stdout);
	free(pg);
	free(pg1);
	eng_check(&e);
	ck_assert_msg(e.max_holders == 3, "at most %d holders at once: not all permits used",
	              e.max_holders);
	ck_assert_msg(e.not_fifo == 0, "%ld grants out of FIFO order; first: %s", e.not_fifo,
	              e.first_fifo);
	cl_close(f.ctl[0]);
	cl_close(f.ctl[1]);
	eng_free(&e);
}
END_TEST

/* The contract's example: 3 masters, PERMITS 2, sessions that hold long
 * while two masters are stopped in turn, so that grants land on {M1, M2},
 * {M2, M3} and {M1, M3}. Counting holders on each master would let three
 * sessions hold; permits as locks of their own never exceed 2. */
START_TEST(permits_three_masters)
{
	enum { N = 6, SECS = 12 };
	h_masters_start(3);
	h_lockd_start(&soak_opts);
	h_lockd_start(&soak_opts);
	struct eng e;
	eng_init(&e, N, "sem", 2, 99);
	for (int i = 0; i < N; i++)
		eng_add(&e, i, i % 2, K_PERMIT, 5000, 200, 700, 0, 50);
	struct flt f = {.phase = F_GAP, .seed = 3, .nm = 3, .nctl = 2, .stop_only = 1};
	f.ctl[0] = cl_tcp(h_lockd(0)->port);
	f.ctl[1] = cl_tcp(h_lockd(1)->port);
	run_with_faults(&e, &f, SECS);
	printf("permits_three_masters: PERMITS 2, %d stops in turn: grants %ld, most holders at "
	       "once %d, above 2: %ld, LOST %ld\n",
	       f.stops, e.grants, e.max_holders, e.over_permits, e.lost);
	fflush(stdout);
	eng_check(&e);
	ck_assert_msg(e.max_holders == 2, "at most %d holders at once", e.max_holders);
	ck_assert_msg(f.stops >= 6, "only %d stops", f.stops);
	cl_close(f.ctl[0]);
	cl_close(f.ctl[1]);
	eng_free(&e);
}
END_TEST

/* ------------------------------------------------------------------ replies */

/* HELD as lines (without END), checked to end with END. */
static int held_lines(struct cl *c, char out[][160], int max)
{
	int n = 0;
	cl_send(c, "HELD\n");
	for (;;) {
		const char *l = cl_reply(c, H_TMO);
		ck_assert_msg(l != NULL, "HELD: no END");
		if (strcmp(l, "END") == 0)
			return n;
		ck_assert_int_lt(n, max);
		snprintf(out[n++], 160, "%s", l);
	}
}

/* Poll a STATUS request until the last number of its reply (waiters) is n. */
static void wait_waiters(struct cl *c, const char *req, long long n)
{
	double end = h_now_ms() + 2000;
	const char *r = NULL;
	while (h_now_ms() < end) {
		r = cl_cmd(c, req, H_TMO);
		ck_assert_msg(r != NULL, "'%s': no reply", req);
		const char *sp = strrchr(r, ' ');
		if (sp && strtoll(sp + 1, NULL, 10) == n && strncmp(r, "FREE", 4) != 0)
			return;
		h_sleep_ms(5);
	}
	ck_abort_msg("'%s': waiters never became %lld (last reply '%s')", req, n, r ? r : "");
}

/* Reentrancy, the upgrade error, HELD and STATUS lines, the syntax. */
START_TEST(shared_replies)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open(), *c = cl_open();
	char lines[8][160];
	unsigned long long fa = cl_lock(a, "LOCK k SHARED");
	unsigned long long fb = cl_lock(b, "TRYLOCK k SHARED TTL 5000");
	ck_assert_uint_gt(fb, fa);
	char want[64];
	snprintf(want, sizeof(want), "OK %llu", fa);
	cl_expect(a, "LOCK k SHARED WAIT 0", want);
	cl_expect(a, "LOCK k", "ERR ARG cannot upgrade a shared hold");
	cl_expect(a, "TRYLOCK k PERMITS 2", "ERR ARG cannot upgrade a shared hold");
	ck_assert_int_eq(held_lines(a, lines, 8), 1);
	long long ttl;
	char kw[16];
	unsigned long long f;
	int holds;
	ck_assert_msg(sscanf(lines[0], "KEY k %llu %d %lld %15s", &f, &holds, &ttl, kw) == 4 &&
	                  f == fa && holds == 2 && ttl > 0 && ttl <= 3000 &&
	                  strcmp(kw, "SHARED") == 0,
	              "HELD line '%s'", lines[0]);
	const char *r = cl_cmd(c, "STATUS k", H_TMO);
	int holders;
	long long w;
	ck_assert_msg(r && sscanf(r, "SHARED %d %lld %lld", &holders, &ttl, &w) == 3 &&
	                  holders == 2 && ttl > 3000 && ttl <= 5000 && w == 0,
	              "STATUS k: '%s'", r ? r : "(none)");
	cl_expect(c, "TRYLOCK k", "BUSY");
	/* a writer waits: TRYLOCK SHARED is BUSY here, even while held shared */
	cl_send(c, "LOCK k WAIT 5000\n");
	wait_waiters(b, "STATUS k", 1);
	struct cl *d = cl_open();
	cl_expect(d, "TRYLOCK k SHARED", "BUSY");
	cl_expect(d, "LOCK k SHARED WAIT 0", "TIMEOUT");
	cl_expect(a, "UNLOCK k", "OK 1");
	cl_expect(a, "UNLOCK k", "OK 0");
	cl_silence(c, 100);
	cl_expect(b, "UNLOCK k", "OK 0");
	unsigned long long fc = cl_want_ok(c, 1000);
	ck_assert_uint_gt(fc, fb);
	ck_assert_int_eq(cl_status(d, "k", &ttl, &w), 1); /* HELD: the writer */
	/* the writer asks SHARED: one more hold of its lock */
	snprintf(want, sizeof(want), "OK %llu", fc);
	cl_expect(c, "LOCK k SHARED", want);
	ck_assert_int_eq(held_lines(c, lines, 8), 1);
	ck_assert_msg(sscanf(lines[0], "KEY k %llu %d %lld%15s", &f, &holds, &ttl, kw) == 3 &&
	                  holds == 2,
	              "HELD line '%s'", lines[0]);
	cl_expect(c, "UNLOCK k", "OK 1");
	cl_expect(c, "UNLOCK k", "OK 0");
	cl_expect(d, "STATUS k", "FREE");
	/* syntax */
	cl_expect(d, "LOCK k SHARED PERMITS 2",
	          "ERR PROTOCOL SHARED and PERMITS exclude each other");
	cl_expect_prefix(d, "TRYLOCK k PERMITS 2 SHARED", "ERR PROTOCOL ");
	cl_expect_prefix(d, "LOCK k PERMITS 0", "ERR ARG ");
	cl_expect_prefix(d, "LOCK k PERMITS 1025", "ERR ARG ");
	cl_expect_prefix(d, "STATUS k PERMITS 0", "ERR ARG ");
	cl_expect_prefix(d, "LOCK k PERMITS x WAIT 1", "ERR ARG PERMITS");
	unsigned long long fp = cl_lock(d, "LOCK k PERMITS 1024 WAIT 0");
	ck_assert_uint_gt(fp, fc);
	cl_expect(d, "UNLOCK k", "OK 0");
	cl_close(a);
	cl_close(b);
	cl_close(c);
	cl_close(d);
}
END_TEST

/* Permits: which one a session got (HELD), how many are held (STATUS),
 * one lock each on the masters, reentrancy, a handoff to the waiter. */
START_TEST(permits_replies)
{
	h_std(NULL);
	h_lockd_start(NULL);
	struct cl *a = cl_open(), *b = cl_open(), *c = cl_open(), *d = cl_open();
	struct cl *e = cl_tcp(h_lockd(1)->port);
	char lines[8][160], want[64];
	unsigned long long fa = cl_lock(a, "LOCK p PERMITS 2");
	unsigned long long fb = cl_lock(b, "TRYLOCK p PERMITS 2 TTL 4000");
	ck_assert_uint_gt(fb, fa);
	cl_expect(c, "TRYLOCK p PERMITS 2", "BUSY");
	cl_expect(e, "TRYLOCK p PERMITS 2", "BUSY");
	ck_assert_int_eq(held_lines(a, lines, 8), 1);
	unsigned long long f;
	int holds, permit;
	long long ttl;
	ck_assert_msg(sscanf(lines[0], "KEY p %llu %d %lld PERMIT %d", &f, &holds, &ttl, &permit) ==
	                      4 &&
	                  f == fa && holds == 1 && permit == 0,
	              "HELD line '%s'", lines[0]);
	ck_assert_int_eq(held_lines(b, lines, 8), 1);
	ck_assert_msg(sscanf(lines[0], "KEY p %llu %d %lld PERMIT %d", &f, &holds, &ttl, &permit) ==
	                      4 &&
	                  f == fb && permit == 1 && ttl > 3000 && ttl <= 4000,
	              "HELD line '%s'", lines[0]);
	/* one lock each on the masters */
	ck_assert_int_eq(h_masters_with_pttl(3, "lockd:p", NULL, NULL), 3);
	ck_assert_int_eq(h_masters_with_pttl(3, "lockd:p permit 1", NULL, NULL), 3);
	cl_expect(d, "STATUS p PERMITS 2", "PERMITS 2 2 0");
	cl_expect(d, "STATUS p PERMITS 1", "PERMITS 1 1 0");
	ck_assert_int_eq(cl_status(d, "p", &ttl, NULL), 1); /* permit 0 is the key's lock */
	/* a third session on the other lockd takes permit 2 of 3 */
	unsigned long long fe = cl_lock(e, "TRYLOCK p PERMITS 3");
	ck_assert_int_eq(held_lines(e, lines, 8), 1);
	ck_assert_msg(strstr(lines[0], " PERMIT 2") != NULL, "HELD line '%s'", lines[0]);
	cl_expect(d, "STATUS p PERMITS 5", "PERMITS 3 5 0");
	cl_expect(e, "UNLOCK p", "OK 0");
	ck_assert_uint_gt(fe, fb);
	/* a waiter, counted by STATUS; reentrancy; the release hands it over */
	cl_send(c, "LOCK p PERMITS 2 WAIT 5000\n");
	wait_waiters(d, "STATUS p PERMITS 2", 1);
	cl_expect(d, "STATUS p PERMITS 2", "PERMITS 2 2 1");
	snprintf(want, sizeof(want), "OK %llu", fa);
	cl_expect(a, "LOCK p PERMITS 2", want);
	cl_expect(a, "LOCK p", want);
	cl_expect(a, "UNLOCK p", "OK 2");
	cl_expect(a, "UNLOCK p", "OK 1");
	double t0 = h_now_ms();
	cl_expect(a, "UNLOCK p", "OK 0");
	unsigned long long fc = cl_want_ok(c, 1000);
	/* service level on one lockd: 100 ms; loaded headroom */
	ck_assert_msg(h_now_ms() - t0 < 100 + H_LOADED, "handed over after %.0f ms",
	              h_now_ms() - t0);
	ck_assert_uint_gt(fc, fe);
	ck_assert_int_eq(held_lines(c, lines, 8), 1);
	ck_assert_msg(strstr(lines[0], " PERMIT 0") != NULL, "HELD line '%s'", lines[0]);
	char *st = cl_stat(d, "permit_grants");
	ck_assert_str_eq(st, "3"); /* a, b, c on lockd 0; e on lockd 1 */
	free(st);
	cl_expect(c, "UNLOCK p", "OK 0");
	cl_expect(b, "UNLOCK p", "OK 0");
	cl_expect(d, "STATUS p PERMITS 2", "PERMITS 0 2 0");
	cl_close(a);
	cl_close(b);
	cl_close(c);
	cl_close(d);
	cl_close(e);
}
END_TEST

/* Reentrancy only where the hold satisfies the request (review finding
 * 1): a session holding permit 1 while another holds the key's lock is
 * refused the lock, a shared hold and PERMITS 1, and nothing changes on
 * the masters; PERMITS n with n above its permit is reentrant. */
START_TEST(permit_reentry_kinds)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open(), *c = cl_open();
	char want[64];
	unsigned long long fb = cl_lock(b, "LOCK K1");
	unsigned long long fa = cl_lock(a, "LOCK K1 PERMITS 2");
	ck_assert_uint_gt(fa, fb);
	cl_expect(a, "LOCK K1 SHARED", "ERR ARG holds permit 1 of K1");
	cl_expect(a, "LOCK K1", "ERR ARG holds permit 1 of K1");
	cl_expect(a, "TRYLOCK K1 PERMITS 1", "ERR ARG holds permit 1 of K1");
	snprintf(want, sizeof(want), "OK %llu", fa);
	cl_expect(a, "LOCK K1 PERMITS 3", want);
	cl_expect(a, "UNLOCK K1", "OK 1");
	/* the n+1 form: permits 0 and 1 of S, then PERMITS 1 from permit 1 */
	unsigned long long fc = cl_lock(c, "LOCK S PERMITS 2");
	cl_lock(b, "LOCK S PERMITS 2");
	cl_expect(b, "LOCK S PERMITS 1", "ERR ARG holds permit 1 of S");
	snprintf(want, sizeof(want), "OK %llu", fc);
	cl_expect(c, "LOCK S PERMITS 1", want); /* permit 0 satisfies it */
	cl_expect(b, "STATUS S PERMITS 1", "PERMITS 1 1 0");
	cl_close(a);
	cl_close(b);
	cl_close(c);
}
END_TEST

/* Two lockds: shared and exclusive never together; a writer waiting on
 * one lockd stops new readers on the other, and gets the key within the
 * service level once the readers are gone. */
START_TEST(shared_two_lockds)
{
	h_std(NULL);
	h_lockd_start(NULL);
	struct cl *r1 = cl_open(), *r2 = cl_open(), *x = cl_open();
	struct cl *w = cl_tcp(h_lockd(1)->port), *y = cl_tcp(h_lockd(1)->port);
	long long ttl, n;
	unsigned long long f1 = cl_lock(r1, "LOCK k SHARED");
	unsigned long long fy = cl_lock(y, "TRYLOCK k SHARED"); /* readers on both */
	ck_assert_uint_gt(fy, f1);
	cl_expect(w, "TRYLOCK k", "BUSY");
	long long card = h_redis_int(0, "ZCARD", "lockd:k shared", NULL);
	ck_assert_int_eq(card, 2);
	cl_expect(y, "UNLOCK k", "OK 0");
	/* a writer on lockd 1 waits for the reader on lockd 0 */
	cl_send(w, "LOCK k WAIT 5000\n");
	cl_silence(w, 200);
	cl_expect(r2, "TRYLOCK k SHARED", "BUSY"); /* lockd 0 admits no new reader */
	const char *st = cl_cmd(x, "STATUS k", H_TMO);
	ck_assert_msg(st && sscanf(st, "SHARED 1 %lld %lld", &ttl, &n) == 2 && n == 0,
	              "STATUS k: '%s'", st ? st : "(none)");
	double t0 = h_now_ms();
	cl_expect(r1, "UNLOCK k", "OK 0");
	unsigned long long fw = cl_want_ok(w, 2000);
	double el = h_now_ms() - t0;
	/* service level to another lockd: 500 ms; loaded headroom (the
	 * reader's lease, 3 s, would be later) */
	ck_assert_msg(el < 500 + H_LOADED,
	              "writer on the other lockd granted %.0f ms after the "
	              "last reader left",
	              el);
	ck_assert_uint_gt(fw, fy);
	cl_expect(r2, "TRYLOCK k SHARED", "BUSY");
	cl_expect(x, "LOCK k SHARED WAIT 0", "TIMEOUT");
	/* a reader waiting on lockd 0 gets it once the writer leaves */
	cl_send(r2, "LOCK k SHARED WAIT 5000\n");
	cl_silence(r2, 100);
	t0 = h_now_ms();
	cl_expect(w, "UNLOCK k", "OK 0");
	unsigned long long fr = cl_want_ok(r2, 2000);
	el = h_now_ms() - t0;
	ck_assert_msg(el < 500 + H_LOADED, "reader granted %.0f ms after the writer left", el);
	ck_assert_uint_gt(fr, fw);
	cl_close(r1);
	cl_close(r2);
	cl_close(x);
	cl_close(w);
	cl_close(y);
}
END_TEST

/* ------------------------------------------------------------------ lockctl run */

/* Start "lockctl -p PORT run ARGS... KEY -- sh -c 'log start; sleep; log
 * end'" with the log at log; returns its pid (it dies with the test). */
static pid_t spawn_run(const char *opt, const char *optval, const char *key, const char *log)
{
	char port[16], script[2 * PATH_MAX + 64];
	snprintf(port, sizeof(port), "%d", h_lockd(0)->port);
	snprintf(script, sizeof(script), "echo start >> %s; sleep 0.3; echo end >> %s", log, log);
	const char *argv[12];
	int n = 0;
	argv[n++] = h_built("lockctl");
	argv[n++] = "-p";
	argv[n++] = port;
	argv[n++] = "run";
	argv[n++] = opt;
	if (optval)
		argv[n++] = optval;
	argv[n++] = key;
	argv[n++] = "--";
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = script;
	argv[n] = NULL;
	return h_spawn((char *const *)argv, NULL);
}

/* The most runs between "start" and "end" at once, from the log. */
static int most_at_once(const char *log, int *lines)
{
	FILE *f = fopen(log, "r");
	ck_assert_msg(f != NULL, "%s: %s", log, strerror(errno));
	char l[64];
	int in = 0, most = 0;
	*lines = 0;
	while (fgets(l, sizeof(l), f)) {
		in += strncmp(l, "start", 5) == 0 ? 1 : -1;
		most = in > most ? in : most;
		(*lines)++;
	}
	fclose(f);
	return most;
}

/* N runs of one kind at once; returns the most that ran together. */
static int runs_together(const char *opt, const char *optval, const char *key, int n)
{
	char log[PATH_MAX];
	pid_t pids[8];
	snprintf(log, sizeof(log), "%s/%s.log", h_dir(), key);
	for (int i = 0; i < n; i++)
		pids[i] = spawn_run(opt, optval, key, log);
	for (int i = 0; i < n; i++) {
		int st = h_reap(pids[i], 15000);
		ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		              "lockctl run %s %s: %s", opt, key, h_status_str(st));
	}
	int lines, most = most_at_once(log, &lines);
	ck_assert_int_eq(lines, 2 * n);
	return most;
}

/* lockctl run --shared: the runs share the key; --permits 2: two at a time. */
START_TEST(lockctl_run_kinds)
{
	h_std(NULL);
	int shared = runs_together("--shared", NULL, "readers", 4);
	int permits = runs_together("--permits", "2", "pool", 5);
	printf("lockctl_run_kinds: --shared: %d of 4 runs at once; --permits 2: %d of 5\n", shared,
	       permits);
	fflush(stdout);
	ck_assert_msg(shared >= 2, "--shared runs never ran together (at most %d)", shared);
	ck_assert_msg(permits == 2, "--permits 2: %d runs at once", permits);
	struct cl *c = cl_open();
	cl_expect(c, "STATUS readers", "FREE");
	cl_expect(c, "STATUS pool PERMITS 2", "PERMITS 0 2 0");
	cl_close(c);
}
END_TEST

TCase *tc_shared(void)
{
	TCase *tc = tcase_create("shared");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, shared_replies);
	H_ADD(tc, permits_replies);
	H_ADD(tc, permit_reentry_kinds);
	H_ADD(tc, shared_two_lockds);
	H_ADD(tc, lockctl_run_kinds);
	H_ADD(tc, shared_soak);
	H_ADD(tc, permits_soak);
	H_ADD(tc, permits_three_masters);
	return tc;
}
