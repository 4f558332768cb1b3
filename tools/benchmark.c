/*
 * lockd-benchmark: a load generator for lockd, in the spirit of
 * redis-benchmark. See lockd-benchmark(1).
 *
 * One libevent loop drives every session. A session is one liblockd
 * client (lockd/client.h): the loop watches its socket as lockd_want() and
 * lockd_timeout_ms() ask and calls lockd_step(); requests go out with
 * lockd_send(), tagged with the slot they are for, and liblockd gives each
 * reply back with its tag, and each LOST event apart. The benchmark reads
 * no protocol of its own. A session is a small state machine over "slots":
 * a slot is one key that the session takes through LOCK -> hold -> UNLOCK.
 * LOST events are counted and marked on the slot they concern.
 *
 * All timestamps are CLOCK_MONOTONIC nanoseconds taken in this one process,
 * so release-to-grant gaps between two sessions are directly comparable.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "benchmark_opts.h"
#include "benchmark_probe.h"
#include "benchmark_report.h"
#include "lockd/client.h"

#define DEFAULT_MS        5000     /* run time without -d and -n */
#define HELD_DEFAULT_MS   30000    /* held: one default lease, so every lock is renewed */
#define N_ONLY_LIMIT_MS   600000   /* time limit of a -n run without -d */
#define DEADLINE_SLACK_MS 30000    /* hard deadline = time limit + this */
#define STALL_MS          30000    /* no reply for this long (plus WAIT) = lockd hangs */
#define CONNECT_MS        STALL_MS /* a session's connect and AUTH */
#define CONNECT_BURST     256      /* connects in progress at once (listen backlog) */
#define MAX_REPLY         65536    /* longer reply line: give up */
#define KEY_PREFIX        BM_PROG ":"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------------------------ target */

/* How the sessions connect, as liblockd takes it. A host name is resolved
 * here, once, to its first address: not once per session, and every
 * session goes to the same address. */
static struct target {
	struct lockd_opts lo;
	char host[NI_MAXHOST]; /* the numeric address */
	char name[300];        /* as given, for messages */
} target = {.lo = LOCKD_OPTS_INIT};

static void resolve_target(void)
{
	struct addrinfo hints = {0}, *res;
	char port[16];
	int rc;

	target.lo.password = options.password;
	target.lo.connect_timeout_ms = CONNECT_MS;
	target.lo.max_line = MAX_REPLY;
	if (options.sock) {
		target.lo.unix_path = options.sock; /* length checked in parse_args */
		snprintf(target.name, sizeof(target.name), "%s", options.sock);
		return;
	}
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%d", options.port);
	rc = getaddrinfo(options.host, port, &hints, &res);
	if (rc != 0)
		usage_error("-h: cannot resolve '%s': %s", options.host, gai_strerror(rc));
	rc = getnameinfo(res->ai_addr, res->ai_addrlen, target.host, sizeof(target.host), NULL, 0,
	                 NI_NUMERICHOST);
	freeaddrinfo(res);
	if (rc != 0)
		usage_error("-h: cannot resolve '%s': %s", options.host, gai_strerror(rc));
	target.lo.host = target.host;
	target.lo.port = options.port;
	snprintf(target.name, sizeof(target.name), "%s:%d", options.host, options.port);
}

/* 10,000 sessions need more descriptors than the usual soft limit of 1024.
 * lockd raises its own limit too (main.c), but warns and goes on: here a
 * run short of descriptors would measure fewer sessions than asked, so it
 * stops. liblockd, the one library the tools share, is a protocol client
 * and sets no process limits. */
static int raise_nofile(long need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 0;
	if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < need) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0 ||
		    (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < need)) {
			fprintf(stderr,
			        BM_PROG
			        ": %ld sessions need about %ld file descriptors, but the hard "
			        "limit is %ld (raise it: ulimit -Hn, limits.conf)\n",
			        (long)options.sessions, need, (long)rl.rlim_max);
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ run state */

enum phase {
	PH_CONNECT, /* sessions connect and answer PING */
	PH_RUN,     /* the measured window: sessions cycle */
	PH_DRAIN,   /* window closed: outstanding requests answered, locks released */
	PH_ACQUIRE, /* held: the locks are being taken (measured) */
	PH_HOLD,    /* held: all locks held, lockd and the masters watched */
	PH_RELEASE, /* held: the locks are released */
	PH_DONE     /* every session finished: the loop stops */
};

enum slot_state {
	SL_IDLE,     /* nothing outstanding, key not held */
	SL_LOCKING,  /* LOCK or TRYLOCK sent */
	SL_HELD,     /* granted; UNLOCK not sent yet (maybe a hold timer runs) */
	SL_UNLOCKING /* UNLOCK sent */
};

/* The tag of the PING that tells a session is ready; a LOCK's or an
 * UNLOCK's tag is its slot. (AUTH, with -a, is liblockd's.) */
static char ping_tag;

struct session;

struct slot {
	struct session *s;
	struct event *timer; /* hold timer; NULL without --hold */
	int64_t t_req;       /* when the LOCK went out */
	uint64_t fence;
	uint32_t key;
	uint8_t state;
	uint8_t lost;    /* LOST arrived for this grant: UNLOCK may answer ERR NOTHELD */
	uint8_t writer;  /* shared: this session writes (LOCK key), else it reads */
	uint8_t unl_new; /* UNLOCK queued, not written yet: its send time is due */
	uint64_t floor;  /* the highest fence answered before this LOCK went out */
};

struct session {
	int id, ready, done;
	struct lockd_client *c;
	struct event *ev; /* the socket as liblockd wants it watched */
	int fd;           /* what ev watches */
	short ev_flags;   /* and how; 0: ev not added */
	uint8_t timed;    /* ev was added with lockd_timeout_ms() */
	uint8_t dirty;    /* requests queued this turn: in run.dirty */
	struct slot *slots;
	int nslots, busy, locking; /* slots not idle; slots in LOCK */
	int unl_new;               /* slots with unl_new set */
	uint64_t grants;           /* in the window, for fairness */
};

/* What this process knows of one key, to check lockd's guarantees. */
struct keystate {
	uint64_t last_grant; /* highest fence granted so far */
	uint64_t rel_fence;  /* fence whose release (OK 0) came last */
	int64_t t_rel;       /* when that OK 0 arrived */
	int64_t t_early;     /* a grant that arrived before its predecessor's OK 0 */
	int64_t t_unl;       /* when the UNLOCK of grant last_grant was written */
	int unl_sess;        /* its session's id + 1; 0: none since the last grant */
	int holders;         /* sessions between OK fence and sending UNLOCK */
	int writers;         /* shared: of the holders, writers */
	uint8_t early_in_window;
};

static struct run {
	enum scenario sc;
	struct event_base *base;
	struct session *sess;
	int nsess, depth;
	struct keystate *ks;
	uint32_t nkeys;
	uint32_t key_stride; /* uncontended, K > slots: a slot walks its keys by this */
	int track_send;      /* contended, handoff: time handoffs from UNLOCK sent */
	const char *prefix;
	const char *lock_word; /* "LOCK" or "TRYLOCK" */
	char lock_tail[64];    /* after the key: " WAIT 10000" and the like */
	char write_tail[64];   /* shared: the writers' (without SHARED) */
	enum phase phase;
	int next_connect, connecting, nready, ndone, failed;
	long long issued;
	long outstanding;
	struct session **dirty; /* sessions with requests to write out this turn */
	int ndirty;
	int64_t t_read; /* arrival of the lines lockd_step() reads now; 0: not taken */
	int64_t limit_ms, t_begin, last_line;
	struct event *ev_stop, *ev_deadline, *ev_tick, *ev_flush;
	const struct timeval *tv_hold;
	struct bm_tally m; /* what the report reads (benchmark_report.h) */
} run;

static const char *const phase_names[] = {"connect", "run",     "drain", "acquire",
                                          "hold",    "release", "done"};

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	if (run.failed++)
		return; /* the first error is the one that matters */
	fprintf(stderr, BM_PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	event_base_loopbreak(run.base);
}

/* Queue a request; its reply comes to on_reply() with tag. It is written
 * out, with whatever else the session queued, by on_flush() at the end of
 * this turn of the loop. */
static void send_req(struct session *s, void *tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void send_req(struct session *s, void *tag, const char *fmt, ...)
{
	char req[512];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(req, sizeof(req), fmt, ap);
	va_end(ap);
	rc = lockd_send(s->c, req, -1, tag);
	if (rc != LOCKD_OK) {
		fail("session %d: %s", s->id,
		     lockd_status(s->c) != LOCKD_OK ? lockd_error(s->c) : lockd_strerror(rc));
		return;
	}
	run.outstanding++;
	if (!s->dirty) {
		s->dirty = 1;
		if (run.ndirty == 0)
			event_active(run.ev_flush, EV_TIMEOUT, 0);
		run.dirty[run.ndirty++] = s;
	}
}

static void send_lock(struct slot *sl)
{
	struct session *s = sl->s;

	sl->state = SL_LOCKING;
	sl->t_req = now_ns();
	sl->floor = run.ks[sl->key].last_grant;
	s->busy++;
	s->locking++;
	run.issued++;
	send_req(s, sl, "%s %s%u%s", run.lock_word, run.prefix, sl->key,
	         sl->writer ? run.write_tail : run.lock_tail);
}

/* The slot no longer holds its key (UNLOCK sent, or LOST). */
static void key_left(struct slot *sl)
{
	run.ks[sl->key].holders--;
	run.ks[sl->key].writers -= sl->writer;
}

static void send_unlock(struct slot *sl)
{
	if (!sl->lost) /* a lost lock stopped being held when LOST came */
		key_left(sl);
	sl->state = SL_UNLOCKING;
	send_req(sl->s, sl, "UNLOCK %s%u", run.prefix, sl->key);
	/* A lost lock was free before its UNLOCK: no handoff starts there. */
	if (run.track_send && !sl->lost && !run.failed) {
		sl->unl_new = 1;
		sl->s->unl_new++;
	}
}

/* The session's queued UNLOCKs are written now: that is when a handoff
 * starts (not when the UNLOCK was queued, earlier in this turn, while
 * other replies were still being read). */
static void stamp_unlocks(struct session *s)
{
	int64_t t = now_ns();

	for (int i = 0; i < s->nslots && s->unl_new; i++) {
		struct slot *sl = &s->slots[i];
		struct keystate *ks = &run.ks[sl->key];

		if (!sl->unl_new)
			continue;
		sl->unl_new = 0;
		s->unl_new--;
		if (!sl->lost && ks->last_grant == sl->fence) { /* the latest grant */
			ks->t_unl = t;
			ks->unl_sess = s->id + 1;
		}
	}
}

static void finish(void)
{
	run.m.t_end = now_ns();
	run.phase = PH_DONE;
	event_base_loopbreak(run.base);
}

/* Issue what the phase allows, and notice when the session has finished. */
static void pump(struct session *s)
{
	if (run.phase == PH_RUN || run.phase == PH_ACQUIRE) {
		for (int i = 0; i < s->nslots && s->locking < run.depth; i++) {
			if (s->slots[i].state != SL_IDLE)
				continue;
			if (run.phase == PH_RUN && options.cycles && run.issued >= options.cycles)
				break;
			send_lock(&s->slots[i]);
		}
	}
	if (!s->done && lockd_pending(s->c) == 0 && s->busy == 0 &&
	    (run.phase == PH_DRAIN || run.phase == PH_RELEASE)) {
		s->done = 1;
		if (++run.ndone == run.nsess)
			finish();
	}
}

/* The window closes: no new LOCK; outstanding ones are answered, and
 * granted locks are released at once, so the drain is short. */
/* The measured window ends: CPU of lockd, the masters and this process. */
static void window_end(void)
{
	bm_proc_snapshot(run.m.pid, &run.m.pw);
	getrusage(RUSAGE_SELF, &run.m.ru_w);
	bm_masters_snapshot(&run.m.cw);
}

static void stop_run(void)
{
	if (run.phase != PH_RUN)
		return;
	run.phase = PH_DRAIN;
	run.m.t_stop = now_ns();
	window_end();
	event_del(run.ev_stop);
	for (int i = 0; i < run.nsess; i++)
		pump(&run.sess[i]);
}

static void start_run(void)
{
	struct timeval tv = {run.limit_ms / 1000, (run.limit_ms % 1000) * 1000};

	bm_masters_snapshot(&run.m.c0);
	getrusage(RUSAGE_SELF, &run.m.ru0);
	bm_proc_snapshot(run.m.pid, &run.m.pa);
	/* the stop timer counts from now, not from the start of this loop pass */
	event_base_update_cache_time(run.base);
	run.m.t0 = run.last_line = now_ns();
	run.phase = run.sc == SC_HELD ? PH_ACQUIRE : PH_RUN;
	if (run.sc != SC_HELD)
		evtimer_add(run.ev_stop, &tv);
	for (int i = 0; i < run.nsess && !run.failed; i++)
		pump(&run.sess[i]);
}

/* held: every lock is granted; now hold them all for the duration. */
static void all_granted(void)
{
	struct timeval tv = {run.limit_ms / 1000, (run.limit_ms % 1000) * 1000};

	run.m.t_granted = now_ns();
	window_end();
	run.m.p1 = run.m.pw;
	run.m.c1 = run.m.cw;
	run.phase = PH_HOLD;
	event_base_update_cache_time(run.base);
	evtimer_add(run.ev_stop, &tv);
	/* the hard deadline covers the hold itself, not the time setup took */
	struct timeval dl = {(run.limit_ms + DEADLINE_SLACK_MS) / 1000,
	                     (run.limit_ms + DEADLINE_SLACK_MS) % 1000 * 1000};
	evtimer_add(run.ev_deadline, &dl);
}

static void end_hold(void)
{
	run.m.t_hold_end = now_ns();
	bm_proc_snapshot(run.m.pid, &run.m.p2);
	bm_masters_snapshot(&run.m.c2);
	run.phase = PH_RELEASE;
	for (int i = 0; i < run.nsess; i++) {
		struct session *s = &run.sess[i];

		for (int j = 0; j < s->nslots; j++)
			if (s->slots[j].state == SL_HELD)
				send_unlock(&s->slots[j]);
		pump(s);
	}
}

/* A release of the grant with this fence was seen (OK 0, or LOST). */
static void key_released(struct keystate *ks, uint64_t fence, int64_t t)
{
	if (ks->t_early && fence < ks->last_grant) {
		/* The next grant came before this OK 0 (a direct handoff can
		 * reach the waiter's socket first): the gap is 0, not negative. */
		if (ks->early_in_window) {
			bm_hist_add(&run.m.gap, 0);
			run.m.handoffs++;
			run.m.early++;
		}
		ks->t_early = 0;
	}
	ks->rel_fence = fence;
	ks->t_rel = t;
}

static void on_grant(struct slot *sl, uint64_t fence, int64_t t)
{
	struct session *s = sl->s;
	struct keystate *ks = &run.ks[sl->key];
	int in_window = run.phase == PH_RUN || run.phase == PH_ACQUIRE;
	/* who may hold with it: readers with readers, n permit holders */
	int clash = run.sc == SC_SHARED    ? (sl->writer ? ks->holders > 0 : ks->writers > 0)
	            : run.sc == SC_PERMITS ? ks->holders >= options.permits
	                                   : ks->holders > 0;

	if (clash && ++run.m.overlaps <= 5)
		fprintf(stderr,
		        BM_PROG ": OVERLAP: %s%u granted to session %d (fence %llu) while %d "
		                "session(s) held it (%d writing)\n",
		        run.prefix, sl->key, s->id, (unsigned long long)fence, ks->holders,
		        ks->writers);
	ks->holders++;
	ks->writers += sl->writer;
	run.m.max_holders = ks->holders > run.m.max_holders ? ks->holders : run.m.max_holders;
	if (run.sc == SC_SHARED || run.sc == SC_PERMITS) {
		/* Holders together get fences in any order; a grant is above
		 * every one answered before its request. */
		if (fence <= sl->floor && ++run.m.regressions <= 5)
			fprintf(stderr,
			        BM_PROG ": FENCE REGRESSION: %s%u granted with fence %llu, %llu "
			                "was granted before the request\n",
			        run.prefix, sl->key, (unsigned long long)fence,
			        (unsigned long long)sl->floor);
		if (fence > ks->last_grant)
			ks->last_grant = fence;
	} else if (fence <= ks->last_grant) {
		if (++run.m.regressions <= 5)
			fprintf(stderr,
			        BM_PROG ": FENCE REGRESSION: %s%u granted with fence %llu after "
			                "%llu\n",
			        run.prefix, sl->key, (unsigned long long)fence,
			        (unsigned long long)ks->last_grant);
	} else {
		/* from the UNLOCK written to the first grant to another session */
		if (ks->unl_sess) {
			if (ks->unl_sess != s->id + 1 && in_window)
				bm_hist_add(&run.m.hsend, t - ks->t_unl);
			ks->unl_sess = 0;
		}
		if (ks->last_grant && ks->rel_fence == ks->last_grant) {
			if (in_window) {
				bm_hist_add(&run.m.gap, t - ks->t_rel);
				run.m.handoffs++;
			}
		} else if (ks->last_grant) {
			ks->t_early = t;
			ks->early_in_window = (uint8_t)in_window;
		}
		ks->last_grant = fence;
	}
	sl->fence = fence;
	sl->state = SL_HELD;
	sl->lost = 0;
	run.m.grants++;
	if (in_window) {
		bm_hist_add(&run.m.acq, t - sl->t_req);
		s->grants++;
		run.m.grants_window++;
		if (sl->writer) {
			bm_hist_add(&run.m.wacq, t - sl->t_req);
			run.m.writer_grants++;
		}
	}
	if (run.sc == SC_HELD) {
		if (run.m.grants == (long long)run.nkeys)
			all_granted();
		else
			pump(s);
		return;
	}
	if (run.phase == PH_RUN && options.cycles && run.m.grants_window >= options.cycles)
		stop_run();
	if (run.phase == PH_RUN && sl->timer)
		evtimer_add(sl->timer, run.tv_hold);
	else
		send_unlock(sl);
}

static void on_hold_timer(evutil_socket_t fd, short what, void *arg)
{
	send_unlock(arg);
}

static void connect_more(void);

static void session_ready(struct session *s)
{
	s->ready = 1;
	run.connecting--;
	run.nready++;
	if (run.nready == run.nsess)
		start_run();
	else
		connect_more();
}

/* "LOST key fence": mark the slot, which no longer holds the key. */
static void on_lost(struct session *s, const struct lockd_event *ev, int64_t t)
{
	run.m.lost++;
	for (int i = 0; ev->key[0] && i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		char name[300];

		if ((sl->state != SL_HELD && sl->state != SL_UNLOCKING) || sl->lost)
			continue;
		snprintf(name, sizeof(name), "%s%u", run.prefix, sl->key);
		if (strcmp(name, ev->key) != 0 || (ev->fence && ev->fence != sl->fence))
			continue;
		sl->lost = 1;
		if (sl->state == SL_HELD)
			key_left(sl);
		key_released(&run.ks[sl->key], sl->fence, t);
		break;
	}
}

/* The lines one lockd_step() reads arrived together: they share the time
 * taken at the first of them. */
static int64_t arrival_ns(void)
{
	if (!run.t_read)
		run.t_read = now_ns();
	return run.t_read;
}

static void on_event(struct lockd_client *c, const struct lockd_event *ev, void *arg)
{
	int64_t t = arrival_ns();

	if (run.failed)
		return;
	run.last_line = t;
	on_lost(arg, ev, t);
}

static void on_reply(struct lockd_client *c, const struct lockd_reply *r, void *tag, void *arg)
{
	struct session *s = arg;
	struct slot *sl = tag;
	int64_t t = arrival_ns();

	if (run.failed)
		return;
	run.last_line = t;
	run.outstanding--;
	if (tag == &ping_tag) {
		if (options.resumable ? strncmp(r->line, "SESSION ", 8) != 0
		                      : r->kind != LOCKD_R_PONG)
			fail("session %d: unexpected reply to %s: \"%.300s\"", s->id,
			     options.resumable ? "SESSION" : "PING", r->line);
		else
			session_ready(s);
		return;
	}
	if (sl->state == SL_LOCKING) {
		s->locking--;
		if (r->kind == LOCKD_R_OK && r->has_num && r->num > 0) {
			on_grant(sl, r->num, t);
			return;
		}
		if (r->kind == LOCKD_R_TIMEOUT || r->kind == LOCKD_R_BUSY) {
			/* not granted: try again (the window allowing) */
			run.m.timeouts++;
			run.issued--;
			sl->state = SL_IDLE;
			s->busy--;
			pump(s);
			return;
		}
		fail("session %d: unexpected reply to %s %s%u: \"%.300s\"", s->id, run.lock_word,
		     run.prefix, sl->key, r->line);
		return;
	}
	/* SL_UNLOCKING. After LOST, lockd has dropped the lock: NOTHELD is due. */
	if (!(r->kind == LOCKD_R_OK && r->has_num && r->num == 0) &&
	    !(sl->lost && r->kind == LOCKD_R_ERR && strcmp(r->code, "NOTHELD") == 0)) {
		fail("session %d: unexpected reply to UNLOCK %s%u: \"%.300s\"", s->id, run.prefix,
		     sl->key, r->line);
		return;
	}
	if (!sl->lost)
		key_released(&run.ks[sl->key], sl->fence, t);
	if (run.key_stride) { /* uncontended: on to the slot's next key */
		sl->key += run.key_stride;
		if (sl->key >= run.nkeys)
			sl->key %= run.key_stride;
	}
	sl->state = SL_IDLE;
	sl->lost = 0;
	s->busy--;
	pump(s);
}

/* The connection failed (liblockd says how): the benchmark stops. */
static void session_failed(struct session *s)
{
	fail("session %d: %s (phase %s)", s->id, lockd_error(s->c), phase_names[run.phase]);
}

static void on_io(evutil_socket_t fd, short what, void *arg);

/* Have the loop watch the session's socket as liblockd asks: readable,
 * writable while output waits (and while connecting), with a timer while
 * a deadline runs (connect and AUTH). The event is left alone while none
 * of that changes, as it does not from one cycle to the next. */
static void watch(struct session *s)
{
	short want = lockd_want(s->c);
	short flags = EV_READ | EV_PERSIST | (want & POLLOUT ? EV_WRITE : 0);
	int fd = lockd_fd(s->c), ms = lockd_timeout_ms(s->c);
	struct timeval tv = {ms / 1000, ms % 1000 * 1000};

	if (!want) { /* failed */
		session_failed(s);
		return;
	}
	if (flags == s->ev_flags && fd == s->fd && ms < 0 && !s->timed)
		return;
	if (s->ev_flags)
		event_del(s->ev);
	if (flags != s->ev_flags || fd != s->fd)
		event_assign(s->ev, run.base, fd, flags, on_io, s);
	s->ev_flags = flags;
	s->fd = fd;
	s->timed = ms >= 0;
	if (event_add(s->ev, ms >= 0 ? &tv : NULL) != 0)
		fail("session %d: cannot watch its socket", s->id);
}

/* Write out the requests queued in this turn of the loop: one send()
 * per session, however many requests it queued. Activated by the first
 * send_req() of the turn, it runs after the sockets and timers that were
 * ready with it, so that the replies that came together are all read (and
 * timed) before any request goes out. */
static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	for (int i = 0; i < run.ndirty; i++) {
		struct session *s = run.dirty[i];

		s->dirty = 0;
		if (run.failed)
			continue;
		if (s->unl_new)
			stamp_unlocks(s);
		if (lockd_flush(s->c) != LOCKD_OK)
			session_failed(s);
		else
			watch(s);
	}
	run.ndirty = 0;
}

/* The socket is ready or a deadline passed: liblockd connects, writes,
 * reads and calls on_reply() and on_event() for each line. */
static void on_io(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	run.t_read = 0;
	if (lockd_step(s->c) != LOCKD_OK)
		session_failed(s);
	else if (!s->dirty) /* else on_flush() watches it */
		watch(s);
}

/* Connect sessions while fewer than CONNECT_BURST are in progress. */
static void connect_more(void)
{
	while (!run.failed && run.connecting < CONNECT_BURST && run.next_connect < run.nsess) {
		struct session *s = &run.sess[run.next_connect++];

		run.connecting++;
		if (lockd_connect_start(&target.lo, &s->c) != LOCKD_OK) {
			fail("session %d: %s", s->id, s->c ? lockd_error(s->c) : "out of memory");
			return;
		}
		if (!(s->ev = event_new(run.base, -1, 0, on_io, s))) {
			fail("out of memory");
			return;
		}
		lockd_set_callbacks(s->c, on_reply, on_event, s);
		/* sent once connected (after AUTH, with -a); PONG (or, with
		 * --resumable, the SESSION reply) means ready */
		send_req(s, &ping_tag, options.resumable ? "SESSION" : "PING");
	}
}

static void on_stop_timer(evutil_socket_t fd, short what, void *arg)
{
	if (run.sc == SC_HELD)
		end_hold();
	else
		stop_run();
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	fail("lockd stopped answering: hard deadline of %lld s reached (phase %s, %ld requests "
	     "unanswered, %d of %d sessions ready)",
	     (long long)((run.limit_ms + DEADLINE_SLACK_MS) / 1000), phase_names[run.phase],
	     run.outstanding, run.nready, run.nsess);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	int64_t quiet_ms = (now_ns() - run.last_line) / 1000000;

	if (run.outstanding > 0 && quiet_ms > STALL_MS + (int64_t)options.wait_ms)
		fail("lockd stopped answering: no reply for %lld s with %ld requests unanswered "
		     "(phase %s)",
		     (long long)quiet_ms / 1000, run.outstanding, phase_names[run.phase]);
}

/* ------------------------------------------------------------------ one scenario */

/* lockd's pid for /proc: --pid, else the one STATS gives when it is a local
 * lockd (a remote lockd's pid may name anything here). 0: none. */
static long lockd_pid;

static void find_lockd_pid(void)
{
	long pid;

	if ((lockd_pid = options.pid))
		return;
	pid = bm_stats_pid(&target.lo);
	if (pid > 0 && bm_is_local_lockd(pid))
		lockd_pid = pid;
	else if (has_scenario(SC_HELD)) /* the others just leave lockd's CPU out */
		fprintf(stderr,
		        BM_PROG ": warning: %s: lockd's RSS and CPU unavailable (give --pid for a "
		                "local lockd)\n",
		        pid > 0 ? "STATS pid is not a local lockd process" : "no pid from STATS");
}

/* The run's shape, and what the report needs of its sessions. */
static void tally_shape(void)
{
	run.m.sc = run.sc;
	run.m.nsess = run.nsess;
	run.m.depth = run.depth;
	run.m.locks = run.sess[0].nslots;
	run.m.nkeys = run.nkeys;
	run.m.track_send = run.track_send;
	if (run.sc == SC_SHARED) {
		run.m.writers = run.m.readers = 0;
		for (int i = 0; i < run.nsess; i++)
			*(run.sess[i].slots[0].writer ? &run.m.writers : &run.m.readers) += 1;
	}
	run.m.grant_sum = run.m.grant_sq = 0;
	for (int i = 0; i < run.nsess; i++) {
		run.m.grant_sum += (double)run.sess[i].grants;
		run.m.grant_sq += (double)run.sess[i].grants * (double)run.sess[i].grants;
	}
}

static void free_run(void)
{
	for (int i = 0; run.sess && i < run.nsess; i++) {
		struct session *s = &run.sess[i];

		if (s->ev)
			event_free(s->ev);
		lockd_close(s->c); /* the session ends: lockd releases what it held */
		for (int j = 0; s->slots && j < s->nslots; j++)
			if (s->slots[j].timer)
				event_free(s->slots[j].timer);
		free(s->slots);
	}
	free(run.sess);
	free(run.dirty);
	free(run.ks);
	if (run.ev_stop)
		event_free(run.ev_stop);
	if (run.ev_deadline)
		event_free(run.ev_deadline);
	if (run.ev_tick)
		event_free(run.ev_tick);
	if (run.ev_flush)
		event_free(run.ev_flush);
}

static int run_scenario(struct event_base *base, enum scenario sc, struct bm_result *res)
{
	static const char *const prefixes[SC_COUNT] = {
	    KEY_PREFIX "u:",    KEY_PREFIX "c:", KEY_PREFIX "h:",
	    KEY_PREFIX "held:", KEY_PREFIX "s:", KEY_PREFIX "p:"};
	int cycling = sc != SC_HELD;
	int nslots = sc == SC_UNCONTENDED ? options.pipeline : sc == SC_HELD ? options.locks : 1;
	int64_t deadline_ms;
	struct timeval tv_deadline,
	    tv_tick = {1, 0}, tv_hold = {options.hold_ms / 1000, (options.hold_ms % 1000) * 1000};

	memset(&run, 0, sizeof(run));
	run.sc = sc;
	run.base = base;
	run.nsess = options.sessions;
	run.prefix = prefixes[sc];
	/* contended sessions have one key: nothing to pipeline */
	run.depth = sc == SC_UNCONTENDED || sc == SC_HELD ? options.pipeline : 1;
	if (sc == SC_UNCONTENDED)
		run.nkeys = options.keys ? (uint32_t)options.keys
		                         : (uint32_t)(options.sessions * options.pipeline);
	else if (sc == SC_HELD)
		run.nkeys = (uint32_t)(options.sessions * options.locks);
	else
		run.nkeys = options.keys ? (uint32_t)options.keys : 1;
	if (options.duration_set)
		run.limit_ms = options.duration_ms;
	else
		run.limit_ms = !cycling         ? HELD_DEFAULT_MS
		               : options.cycles ? N_ONLY_LIMIT_MS
		                                : DEFAULT_MS;

	run.lock_word = cycling && options.trylock ? "TRYLOCK" : "LOCK";
	for (int w = 0; w < 2; w++) { /* readers' (and everyone else's), writers' */
		char *f = w ? run.write_tail : run.lock_tail;
		size_t sz = sizeof(run.lock_tail), n = 0;

		if (sc == SC_SHARED && !w)
			n += (size_t)snprintf(f + n, sz - n, " SHARED");
		else if (sc == SC_PERMITS)
			n += (size_t)snprintf(f + n, sz - n, " PERMITS %d", options.permits);
		if (!cycling || !options.trylock)
			n += (size_t)snprintf(f + n, sz - n, " WAIT %d", options.wait_ms);
		if (cycling && options.ttl_ms)
			snprintf(f + n, sz - n, " TTL %d", options.ttl_ms);
	}

	run.m.pid = lockd_pid;
	run.track_send = sc == SC_CONTENDED || sc == SC_HANDOFF;
	/* more keys than slots: each slot goes round keys of its own */
	if (sc == SC_UNCONTENDED && run.nkeys > (uint32_t)(options.sessions * nslots))
		run.key_stride = (uint32_t)(options.sessions * nslots);

	run.sess = calloc((size_t)run.nsess, sizeof(*run.sess));
	run.dirty = calloc((size_t)run.nsess, sizeof(*run.dirty));
	run.ks = calloc(run.nkeys, sizeof(*run.ks));
	if (!run.sess || !run.dirty || !run.ks)
		goto oom;
	if (cycling && options.hold_ms > 0)
		run.tv_hold = event_base_init_common_timeout(base, &tv_hold);
	for (int i = 0; i < run.nsess; i++) {
		struct session *s = &run.sess[i];

		s->id = i;
		s->nslots = nslots;
		s->fd = -1;
		s->slots = calloc((size_t)nslots, sizeof(*s->slots));
		if (!s->slots)
			goto oom;
		for (int j = 0; j < nslots; j++) {
			struct slot *sl = &s->slots[j];

			sl->s = s;
			/* shared: spread the writers among the readers */
			sl->writer = sc == SC_SHARED && (i + 1) * options.read_ratio / 100 ==
			                                    i * options.read_ratio / 100;
			/* uncontended: a session's slots have distinct keys (K >= pipeline) */
			if (sc == SC_UNCONTENDED || sc == SC_HELD)
				sl->key =
				    (uint32_t)(((uint64_t)i * (uint64_t)nslots + (uint64_t)j) %
				               run.nkeys);
			else
				sl->key = (uint32_t)i % run.nkeys;
			if (run.tv_hold && !(sl->timer = evtimer_new(base, on_hold_timer, sl)))
				goto oom;
		}
	}
	run.ev_stop = evtimer_new(base, on_stop_timer, NULL);
	run.ev_deadline = evtimer_new(base, on_deadline, NULL);
	run.ev_tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
	run.ev_flush = event_new(base, -1, 0, on_flush, NULL);
	if (!run.ev_stop || !run.ev_deadline || !run.ev_tick || !run.ev_flush)
		goto oom;
	/* held: taking a million locks may take longer than the hold; allow
	 * 1 ms a lock (the stall check still catches a lockd that hangs) */
	deadline_ms = run.limit_ms + DEADLINE_SLACK_MS + (cycling ? 0 : (int64_t)run.nkeys);
	tv_deadline.tv_sec = deadline_ms / 1000;
	tv_deadline.tv_usec = deadline_ms % 1000 * 1000;
	evtimer_add(run.ev_deadline, &tv_deadline);
	event_add(run.ev_tick, &tv_tick);
	run.t_begin = run.last_line = now_ns();
	bm_proc_snapshot(run.m.pid, &run.m.p0); /* lockd before our sessions exist */

	connect_more();
	/* a loopbreak before the loop runs would be forgotten: check first */
	if (!run.failed)
		event_base_dispatch(base);
	if (!run.failed && run.phase != PH_DONE)
		fail("event loop ended early (phase %s)", phase_names[run.phase]);
	if (!run.failed) {
		tally_shape();
		bm_compute_result(res, &run.m);
	}
	free_run();
	return run.failed ? -1 : 0;
oom:
	fprintf(stderr, BM_PROG ": out of memory for %d sessions\n", run.nsess);
	run.failed = 1;
	free_run();
	return -1;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	struct event_base *base = NULL;
	struct event_config *cfg;
	int rc = 0;

	parse_args(argc, argv);
	resolve_target();
	/* sessions, masters, the STATS probe, stdio and libevent's own */
	if (raise_nofile((long)options.sessions + options.nmasters + 32) < 0)
		return 1;
	find_lockd_pid();
	if (bm_masters_connect(options.masters, options.nmasters) < 0) {
		rc = 1;
		goto out;
	}
	/* Without PRECISE_TIMER libevent reads CLOCK_MONOTONIC_COARSE, whose
	 * tick (4 ms at HZ=250) would stretch every --hold 1 to 4 ms. */
	if ((cfg = event_config_new())) {
		event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
		base = event_base_new_with_config(cfg);
		event_config_free(cfg);
	}
	if (!base) {
		fprintf(stderr, BM_PROG ": cannot create an event base\n");
		rc = 1;
		goto out;
	}
	for (int i = 0; i < options.nscen; i++) {
		struct bm_result r;

		if (run_scenario(base, options.scen[i], &r) < 0) {
			fprintf(stderr, BM_PROG ": scenario %s failed\n",
			        scenario_names[options.scen[i]]);
			rc = 1;
			break;
		}
		if (options.out == OUT_HUMAN)
			bm_print_human(&r, target.name);
		else
			bm_print_machine(&r, i == 0);
		fflush(stdout);
		if (r.regressions > 0 || r.overlaps > 0) {
			fprintf(stderr,
			        BM_PROG
			        ": scenario %s: %.0f fence regressions, %.0f overlaps: lockd "
			        "broke its guarantees\n",
			        scenario_names[r.sc], r.regressions, r.overlaps);
			rc = 1;
		}
	}
	event_base_free(base);
out:
	bm_masters_close();
	libevent_global_shutdown();
	return rc;
}
