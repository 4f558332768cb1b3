/* soak_run: see soak_run.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "soak_run.h"

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* p-th percentile (nearest rank) of v[0..n), which gets sorted. */
double pct(double *v, int n, double p)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(v[0]), cmp_dbl);
	int k = (int)ceil(p / 100.0 * n) - 1;
	return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

void dv_add(struct dvec *d, double x)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 256;
		d->v = realloc(d->v, (size_t)d->cap * sizeof(double));
		ck_assert(d->v != NULL);
	}
	d->v[d->n++] = x;
}

/* Random integer in [lo, hi]. */
int rnd(unsigned *seed, int lo, int hi)
{
	return hi <= lo ? lo : lo + (int)(rand_r(seed) % (unsigned)(hi - lo + 1));
}

static void run_bad(struct run *r, int i, const char *fmt, const char *line)
{
	r->bad++;
	if (!r->first_bad[0])
		snprintf(r->first_bad, sizeof(r->first_bad),
		         "session %d (lockd %d, state %d): %s '%s'", i, r->s[i].inst, r->s[i].st,
		         fmt, line ? line : "");
}

void send_req(struct run *r, int i, const char *req)
{
	struct sess *s = &r->s[i];
	cl_send(s->c, req);
	s->t_sent = h_now_ms();
}

static void inside_enter(struct run *r, unsigned long long f)
{
	if (!r->rc)
		return;
	char *v = rc_cmd(r->rc, "INCR", "lockd-test-inside", NULL);
	ck_assert_msg(v != NULL, "INCR lockd-test-inside: no answer");
	if (strcmp(v, "1") != 0)
		r->inside_bad++;
	free(v);
	v = rc_cmd(r->rc, "INCR", "lockd-test-seq", NULL);
	ck_assert_msg(v != NULL, "INCR lockd-test-seq: no answer");
	long long seq = strtoll(v, NULL, 10);
	free(v);
	ck_assert_msg(seq == r->nseq + 1, "lockd-test-seq %lld after %ld grants", seq, r->nseq);
	if (r->nseq == r->capseq) {
		r->capseq = r->capseq ? r->capseq * 2 : 1024;
		r->seq_fence = realloc(r->seq_fence, (size_t)r->capseq * sizeof(r->seq_fence[0]));
		ck_assert(r->seq_fence != NULL);
	}
	r->seq_fence[r->nseq++] = f;
}

static void inside_leave(struct run *r)
{
	if (!r->rc)
		return;
	char *v = rc_cmd(r->rc, "DECR", "lockd-test-inside", NULL);
	ck_assert_msg(v != NULL, "DECR lockd-test-inside: no answer");
	if (strcmp(v, "0") != 0)
		r->inside_bad++;
	free(v);
}

static void stop_holding(struct run *r, int i)
{
	struct sess *s = &r->s[i];
	if (!s->holds)
		return;
	s->holds = 0;
	if (r->holder == i)
		r->holder = -1;
	inside_leave(r);
}

static void on_grant(struct run *r, int i, unsigned long long f, double now)
{
	struct sess *s = &r->s[i];
	r->grants++;
	s->grants++;
	s->last_wait = now - s->t_sent;
	if (r->stall_ms > 0 && r->last_grant_t > 0 && now - r->last_grant_t > r->stall_ms) {
		dv_add(&r->stall_at, r->last_grant_t);
		dv_add(&r->stall_len, now - r->last_grant_t);
	}
	r->last_grant_t = now;
	if (s->inst >= 0 && s->inst < 2)
		dv_add(&r->wait[s->inst], s->last_wait);
	int other_waits = 0;
	for (int j = 0; j < r->n; j++)
		other_waits |= r->s[j].inst != s->inst && r->s[j].st == S_LOCKING;
	if (other_waits && r->rel_state == 2 && r->rel_inst == s->inst && now - r->rel_t >= 4)
		r->regrant_over_remote++;
	if (other_waits && s->inst == r->run_inst) {
		r->run_len++;
	} else {
		r->run_inst = s->inst;
		r->run_len = other_waits;
	}
	r->max_run = r->run_len > r->max_run ? r->run_len : r->max_run;
	if (r->holder >= 0 && r->holder != i) {
		struct sess *h = &r->s[r->holder];
		r->overlaps++;
		if (!r->first_overlap[0])
			snprintf(
			    r->first_overlap, sizeof(r->first_overlap),
			    "session %d (lockd %d) got 'OK %llu' while session %d (lockd %d) "
			    "held fence %llu (granted %.0f ms before, no UNLOCK sent, no LOST)",
			    i, s->inst, f, r->holder, h->inst, h->fence,
			    now - (h->t_sent + h->last_wait));
	}
	if (f <= r->last_fence) {
		r->regressions++;
		if (!r->first_regression[0])
			snprintf(r->first_regression, sizeof(r->first_regression),
			         "session %d (lockd %d) got fence %llu after fence %llu had been "
			         "granted",
			         i, s->inst, f, r->last_fence);
	} else {
		r->last_fence = f;
	}
	if (r->rel_state == 1 || r->rel_state == 2) {
		double lat = 0;
		if (r->rel_state == 2)
			lat = now - r->rel_t;
		else
			r->grant_before_ok0++;
		dv_add(s->inst != r->rel_inst ? &r->xlat : &r->llat, lat);
	}
	r->rel_state = 0;
	s->fence = f;
	s->st = S_HOLDING;
	s->t_next = now + rnd(&r->seed, s->hold_min, s->hold_max);
	s->t_blip = s->sid[0] && rnd(&r->seed, 0, 2) == 0 ? now + (s->t_next - now) / 2 : 0;
	if (s->lost_fence == f) {
		s->holds = 0; /* its LOST came in the same round */
	} else {
		s->holds = 1;
		r->holder = i;
		inside_enter(r, f);
		if (f > r->counter_fence) {
			r->counter_fence = f;
			r->counter++;
		} else {
			r->refused++;
		}
	}
}

static void on_event(struct run *r, int i, const char *l)
{
	struct sess *s = &r->s[i];
	char k[64];
	unsigned long long f;
	char tail;
	if (sscanf(l, "LOST %63s %llu%c", k, &f, &tail) != 2 || strcmp(k, r->key) != 0 || f == 0) {
		run_bad(r, i, "bad event", l);
		return;
	}
	r->lost++;
	s->lost_fence = f;
	if (s->holds && s->fence == f)
		stop_holding(r, i);
	else if (!(s->st == S_UNLOCKING && s->fence == f) && !(s->st == S_LOCKING))
		r->lost_stale++;
}

static void on_reply(struct run *r, int i, const char *l, double now)
{
	struct sess *s = &r->s[i];
	s->replies++;
	if (s->st == S_LOCKING) {
		if (strncmp(l, "OK ", 3) == 0) {
			const char *p = l + 3;
			if (*p < '1' || *p > '9' || strspn(p, "0123456789") != strlen(p) ||
			    strlen(p) > 19) {
				run_bad(r, i, "bad grant", l);
				s->st = S_IDLE;
				return;
			}
			on_grant(r, i, strtoull(p, NULL, 10), now);
		} else if (strcmp(l, "TIMEOUT") == 0) {
			r->timeouts++;
			s->st = S_IDLE;
			s->t_next = now;
		} else if (strncmp(l, "ERR QUORUM", 10) == 0) {
			r->quorum++;
			s->st = S_IDLE;
			s->t_next = now + rnd(&r->seed, 10, 40);
		} else {
			run_bad(r, i, "reply to LOCK", l);
			s->st = S_IDLE;
			s->t_next = now + 10;
		}
		return;
	}
	if (s->st == S_UNLOCKING) {
		if (strcmp(l, "OK 0") == 0) {
			if (r->rel_state == 1 && r->rel_owner == i) {
				r->rel_state = 2;
				r->rel_t = now;
			}
		} else if (strncmp(l, "ERR QUORUM", 10) == 0) {
			r->quorum_unlock++;
			if (r->rel_owner == i)
				r->rel_state = 0; /* the key stays until its lease lapses */
		} else if (strncmp(l, "ERR NOTHELD", 11) == 0 && s->lost_fence == s->fence) {
			r->notheld_after_lost++;
		} else {
			run_bad(r, i, "reply to UNLOCK", l);
		}
		s->st = S_IDLE;
		s->t_next = now + rnd(&r->seed, s->think_min, s->think_max);
		if (s->max_grants && s->grants >= s->max_grants)
			s->st = S_DONE;
		return;
	}
	run_bad(r, i, "unexpected line", l);
}

/* A resumable session: SESSION GRACE 1000 on its connection, retried
 * while no majority answers (the soak faults the masters); 0 when it
 * stays a plain session (then it is never blipped). */
int make_resumable(struct sess *s)
{
	const char *l = NULL;
	for (int t = 0; t < 20; t++) {
		l = cl_cmd(s->c, "SESSION GRACE 1000", H_TMO);
		if (!l || strncmp(l, "ERR QUORUM", 10) != 0)
			break;
		h_sleep_ms(50);
	}
	if (l && strncmp(l, "ERR QUORUM", 10) == 0) {
		s->sid[0] = '\0';
		return 0;
	}
	ck_assert_msg(l && sscanf(l, "SESSION %23s %39s", s->sid, s->secret) == 2, "SESSION: '%s'",
	              l ? l : "no reply");
	return 1;
}

/* A blip while it holds: its connection reset (its LOST events read
 * first), the session resumed on either lockd. It holds through the gap;
 * a RESUME that does not answer "OK 1" ends its hold (retried a few
 * times on ERR QUORUM: the soak faults the masters), and it starts a new
 * session. */
static void blip(struct run *r, int i)
{
	struct sess *s = &r->s[i];
	const char *l;
	char req[96];
	struct linger lg = {1, 0};
	cl_fill(s->c);
	while ((l = cl_take_line(s->c)))
		if (strncmp(l, "LOST ", 5) == 0)
			on_event(r, i, l);
		else
			run_bad(r, i, "a line while holding", l);
	if (!s->holds)
		return;
	setsockopt(s->c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	cl_close(s->c);
	s->inst = rnd(&r->seed, 0, 1);
	s->c = cl_tcp(h_lockd(s->inst)->port);
	snprintf(req, sizeof(req), "RESUME %s %s", s->sid, s->secret);
	for (int t = 0; t < 5; t++) {
		l = cl_cmd(s->c, req, H_TMO);
		if (!l || strncmp(l, "ERR QUORUM", 10) != 0)
			break;
		h_sleep_ms(100);
	}
	r->resumes++;
	if (l && strcmp(l, "OK 1") == 0)
		return;
	r->resumes_failed++;
	stop_holding(r, i);
	s->st = S_IDLE;
	s->t_next = h_now_ms();
	if (!l || strncmp(l, "OK", 2) != 0) {
		cl_close(s->c);
		s->c = cl_tcp(h_lockd(s->inst)->port);
		make_resumable(s);
	}
}

/* Send what is due. */
static void run_timers(struct run *r, double now)
{
	for (int i = 0; i < r->n; i++) {
		struct sess *s = &r->s[i];
		if (s->sid[0] && s->st == S_HOLDING && s->t_blip && now >= s->t_blip &&
		    now < s->t_next) {
			s->t_blip = 0;
			blip(r, i);
		}
		if (s->st == S_HOLDING && now >= s->t_next) {
			int had = s->holds;
			stop_holding(r, i);
			if (had) {
				r->rel_state = 1;
				r->rel_owner = i;
				r->rel_inst = s->inst;
			}
			send_req(r, i, r->unlock_req);
			s->st = S_UNLOCKING;
		} else if (s->st == S_IDLE && !s->manual && !r->stopping && now >= s->t_next &&
		           (!s->max_grants || s->grants < s->max_grants)) {
			send_req(r, i, s->lock_req);
			s->st = S_LOCKING;
		}
	}
}

/* One round: wait (at most max_ms, less when something is due), read
 * every socket that has data, handle the LOST events, then the replies,
 * then send what is due. */
void run_round(struct run *r, int max_ms)
{
	struct pollfd pf[64];
	int idx[64], np = 0;
	double now = h_now_ms(), due = now + max_ms;
	for (int i = 0; i < r->n; i++) {
		struct sess *s = &r->s[i];
		if (s->st == S_DONE && !s->c)
			continue;
		if ((s->st == S_HOLDING || (s->st == S_IDLE && !s->manual && !r->stopping)) &&
		    s->t_next < due)
			due = s->t_next;
		ck_assert(np < 64);
		pf[np].fd = s->c->fd;
		pf[np].events = POLLIN;
		pf[np].revents = 0;
		idx[np++] = i;
	}
	int wait = (int)(due - now);
	if (wait < 0)
		wait = 0;
	int pr = poll(pf, (nfds_t)np, wait);
	ck_assert_msg(pr >= 0 || errno == EINTR, "poll: %s", strerror(errno));
	for (int k = 0; k < np && pr > 0; k++)
		if (pf[k].revents)
			cl_fill(r->s[idx[k]].c);
	now = h_now_ms();
	/* this round's lines */
	for (int k = 0; k < np; k++) {
		struct sess *s = &r->s[idx[k]];
		const char *l;
		while (s->nlines < 16 && (l = cl_take_line(s->c)))
			s->lines[s->nlines++] = strdup(l);
	}
	/* events first */
	for (int k = 0; k < np; k++) {
		struct sess *s = &r->s[idx[k]];
		for (int j = 0; j < s->nlines; j++)
			if (strncmp(s->lines[j], "LOST", 4) == 0 &&
			    (s->lines[j][4] == ' ' || !s->lines[j][4]))
				on_event(r, idx[k], s->lines[j]);
	}
	for (int k = 0; k < np; k++) {
		struct sess *s = &r->s[idx[k]];
		for (int j = 0; j < s->nlines; j++) {
			if (!(strncmp(s->lines[j], "LOST", 4) == 0 &&
			      (s->lines[j][4] == ' ' || !s->lines[j][4])))
				on_reply(r, idx[k], s->lines[j], now);
			free(s->lines[j]);
		}
		s->nlines = 0;
		if (s->c->eof && !cl_queued(s->c)) {
			run_bad(r, idx[k], "connection closed by lockd", NULL);
			cl_close(s->c);
			s->c = NULL;
			s->st = S_DONE;
		}
	}
	run_timers(r, h_now_ms());
	/* sessions that are done leave (their connection closes) */
	for (int i = 0; i < r->n; i++)
		if (r->s[i].st == S_DONE && r->s[i].c) {
			cl_close(r->s[i].c);
			r->s[i].c = NULL;
		}
}

void run_init(struct run *r, int n, const char *key, unsigned seed)
{
	memset(r, 0, sizeof(*r));
	r->s = calloc((size_t)n, sizeof(r->s[0]));
	ck_assert(r->s != NULL);
	r->n = n;
	snprintf(r->key, sizeof(r->key), "%s", key);
	snprintf(r->unlock_req, sizeof(r->unlock_req), "UNLOCK %s\n", key);
	r->holder = -1;
	r->run_inst = -1;
	r->seed = seed;
}

void run_free(struct run *r)
{
	for (int i = 0; i < r->n; i++)
		if (r->s[i].c)
			cl_close(r->s[i].c);
	free(r->s);
	free(r->xlat.v);
	free(r->llat.v);
	free(r->seq_fence);
	free(r->stall_at.v);
	free(r->wait[0].v);
	free(r->wait[1].v);
	free(r->stall_len.v);
	if (r->rc)
		rc_close(r->rc);
}

/* Sessions with a LOCK or UNLOCK outstanding. */
static int run_busy(const struct run *r)
{
	int n = 0;
	for (int i = 0; i < r->n; i++)
		n +=
		    r->s[i].st == S_LOCKING || r->s[i].st == S_UNLOCKING || r->s[i].st == S_HOLDING;
	return n;
}

/* Stop locking; let the outstanding requests finish (bounded). */
void run_drain(struct run *r, int timeout_ms)
{
	r->stopping = 1;
	double end = h_now_ms() + timeout_ms;
	while (run_busy(r) && h_now_ms() < end)
		run_round(r, 20);
	ck_assert_msg(run_busy(r) == 0,
	              "%d sessions still have a request outstanding %d ms after "
	              "the last LOCK was sent",
	              run_busy(r), timeout_ms);
}

void print_lat(const char *test, const char *what, struct dvec *d)
{
	if (d->n == 0) {
		printf("%s: %s: no samples\n", test, what);
		return;
	}
	double mx = pct(d->v, d->n, 100), p99 = pct(d->v, d->n, 99), p50 = pct(d->v, d->n, 50);
	printf("%s: %s: n=%d p50=%.2f ms p99=%.2f ms max=%.2f ms\n", test, what, d->n, p50, p99,
	       mx);
}

/* Assert the safety figures of a run. */
void run_check(struct run *r)
{
	ck_assert_msg(r->overlaps == 0, "%ld overlaps; first: %s", r->overlaps, r->first_overlap);
	ck_assert_msg(r->regressions == 0, "%ld fence regressions; first: %s", r->regressions,
	              r->first_regression);
	ck_assert_msg(r->inside_bad == 0,
	              "the inside counter was not 1 on entry / 0 on exit %ld times", r->inside_bad);
	for (long k = 1; k < r->nseq; k++)
		ck_assert_msg(r->seq_fence[k] > r->seq_fence[k - 1],
		              "grant #%ld (by lockd-test-seq) has fence %llu after %llu", k + 1,
		              r->seq_fence[k], r->seq_fence[k - 1]);
	ck_assert_msg(r->bad == 0, "%ld unexpected lines; first: %s", r->bad, r->first_bad);
}
