/* membership: which masters count towards a majority.
 *
 * A master counts only while it holds every fence it took part in. At
 * startup nothing tells a master that restarted empty from a new one but
 * lockd's marker key on the others, so the masters are judged together
 * (judge). A master that restarted (new run_id) or lacks the marker the
 * majority has is excluded for redis.restart_exclusion_ms, so that every
 * lease it could have held runs out, then its fence counters are caught up
 * from the others (catchup.c, strict or degraded, see rejoin) before it
 * counts again. master.c reports the connection's ups and downs through
 * mb_up and mb_down; this module decides nothing about connections. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "catchup.h"
#include "cfg.h"
#include "log.h"
#include "master.h"
#include "membership.h"
#include "quorum.h"
#include "util.h"

enum mb_state {
	MB_JUDGING,     /* not judged yet: at startup it waits for the others' markers (judge),
	                   later it is judged on its own marker when first up; moves to
	                   MB_COUNTING (marker written) or MB_EXCLUDED */
	MB_EXCLUDED,    /* lost its data: out until redis.restart_exclusion_ms has passed; then
	                   the rejoin timer starts a catch-up (MB_CATCHING_UP), retrying while
	                   too few sources answer */
	MB_CATCHING_UP, /* exclusion over: its fence counters are being caught up (catchup.c);
	                   the done callback moves it to MB_COUNTING, or to MB_EXCLUDED to retry
	                   in 1 s. A restart meanwhile leaves it here until that catch-up fails */
	MB_COUNTING,    /* counts towards a majority while up; a restart moves it to MB_EXCLUDED */
};

struct member {
	enum mb_state state;
	int64_t until_us;     /* end of the last exclusion (0: never excluded) */
	int trusted;          /* holds every fence it took part in (never lost its data, or
	                         caught up from masters that kept theirs) */
	int degraded;         /* the last catch-up read masters that lost data too */
	int short_logged;     /* "too few masters to catch up" was logged */
	struct event *rejoin; /* end of an exclusion, or a retry of the catch-up */
};

static struct event_base *base;
static struct member *members;
static int nmembers;
static struct mb_opts opts;
static int startup_judging; /* markers not judged yet (see judge) */
static int64_t judge_deadline_us;
static struct event *judge_timer;
static int majority_loss_logged; /* once per episode of a majority losing its data */

static struct member *mb_of(const struct master *m)
{
	return &members[m->idx];
}

int mb_counts(const struct master *m)
{
	return m->idx < nmembers && m->state == MS_UP && mb_of(m)->state == MB_COUNTING;
}

int mb_counting(void)
{
	int n = 0;
	for (int i = 0; i < nmembers; i++)
		n += mb_counts(master_get(i));
	return n;
}

/* The largest lock-delay asked for since start (1.4): a key may carry it
 * on the masters for lease + delay after its last write. Kept, never
 * lowered: a hold may renew it for as long as it lasts, and one that
 * lapsed keeps it for lease + delay more; a high-water mark costs a
 * restarted master's time out, never a grant it must not make. */
static uint32_t max_delay_ms;

void mb_note_delay(uint32_t delay_ms)
{
	if (delay_ms > max_delay_ms)
		max_delay_ms = delay_ms;
}

/* How long a master that lost its data stays out: the lease and the
 * largest delay it may have kept (redis.restart_exclusion_ms when
 * given: the operator's word, as for the lease). */
static int64_t exclusion_ms(void)
{
	int64_t ms = opts.exclusion_ms;
	if (opts.exclusion_auto && opts.lease_ms + (int64_t)max_delay_ms > ms)
		ms = opts.lease_ms + (int64_t)max_delay_ms;
	return ms;
}

static void exclude(struct master *m, const char *why)
{
	struct member *b = mb_of(m);
	int64_t ex = exclusion_ms();
	b->until_us = now_us() + ex * 1000;
	/* A catch-up still running ends failed (its target reconnected) and
	 * moves it on from there. */
	if (b->state != MB_CATCHING_UP)
		b->state = MB_EXCLUDED;
	b->trusted = 0; /* it lost its fence counters too */
	b->short_logged = 0;
	log_warn("master %s %s: it does not count for %lld ms (redis.restart_exclusion_ms)",
	         m->name, why, (long long)ex);
	struct timeval tv = {(time_t)(ex / 1000), (suseconds_t)(ex % 1000) * 1000};
	event_add(b->rejoin, &tv);
}

/* Judged on its marker: counts (and gets the marker), or is excluded. */
static void judged(struct master *m, int lost, const char *why)
{
	if (lost) {
		exclude(m, why);
	} else {
		mb_of(m)->state = MB_COUNTING;
		master_set_marker(m);
	}
}

/* At startup nothing tells a master that restarted empty from a new one
 * but the marker on the others. Judge the doubtful ones together: a
 * majority with the marker means the others lost their data; more than
 * N - majority without it means a new deployment. */
static void judge(void)
{
	int maj = quorum_majority(nmembers), with = 0, without = 0;

	if (!startup_judging)
		return;
	/* Judge the masters together: wait until each has answered or
	 * failed once, or the grace period is over. */
	int tried = 0;
	for (int i = 0; i < nmembers; i++)
		tried += master_get(i)->state == MS_UP || master_get(i)->last_error[0];
	if (tried < nmembers && now_us() < judge_deadline_us)
		return;
	for (int i = 0; i < nmembers; i++) {
		struct master *m = master_get(i);
		if (m->state != MS_UP)
			continue;
		if (m->has_marker)
			with++;
		else
			without++;
	}
	if (with < maj && without <= nmembers - maj)
		return; /* not enough answers to tell yet */
	startup_judging = 0;
	if (with < maj)
		log_info("no majority of masters has lockd's marker: a new deployment");
	for (int i = 0; i < nmembers; i++) {
		struct master *m = master_get(i);
		if (m->state == MS_UP && members[i].state == MB_JUDGING)
			judged(m, with >= maj && !m->has_marker,
			       "lacks the marker the majority has (restarted empty?)");
	}
}

static void judge_cb(evutil_socket_t fd, short what, void *arg)
{
	judge();
}

/* Once every master counts again after a degraded catch-up, each holds
 * every fence issued since they all count, and its counters were raised
 * above the ones lost: the set is trusted again, and the next restart of
 * a single master is caught up strictly (N - majority + 1 sources) again,
 * rather than from whatever answers for the rest of the process. */
static void trust_all_if_counting(void)
{
	int untrusted = 0;
	for (int i = 0; i < nmembers; i++) {
		if (members[i].state != MB_COUNTING)
			return;
		untrusted += !members[i].trusted;
	}
	if (!untrusted)
		return;
	for (int i = 0; i < nmembers; i++) {
		members[i].trusted = 1;
		members[i].degraded = 0;
	}
	log_info("all masters count: trusted again (a later restart is caught up from masters "
	         "that kept their data)");
}

static void counts_again(struct master *m)
{
	int all = 1;
	struct member *b = mb_of(m);
	b->state = MB_COUNTING;
	b->trusted = !b->degraded;
	log_info("master %s counts again", m->name);
	master_set_marker(m);
	for (int i = 0; i < nmembers; i++)
		all &= members[i].state == MB_JUDGING || members[i].state == MB_COUNTING;
	if (all)
		majority_loss_logged = 0; /* the episode is over */
	trust_all_if_counting();
}

static void retry_in(struct member *b, long usec)
{
	struct timeval tv = {(time_t)(usec / 1000000), (suseconds_t)(usec % 1000000)};
	event_add(b->rejoin, &tv);
}

static void caught_up_cb(struct master *m, int ok)
{
	struct member *b = mb_of(m);
	/* Excluded again meanwhile (it restarted): that catch-up failed anyway. */
	if (ok && m->state == MS_UP && b->until_us <= now_us()) {
		counts_again(m);
	} else {
		b->state = MB_EXCLUDED;
		retry_in(b, 1000000);
	}
}

/* The exclusion is over: catch its counters up, then let it count. */
static void rejoin(struct master *m)
{
	struct member *b = mb_of(m);

	if (m->state != MS_UP || b->state == MB_JUDGING || b->state == MB_CATCHING_UP)
		return;
	if (b->state == MB_COUNTING) {
		master_set_marker(m);
		return;
	}
	/* Every issued fence is on a majority, so N - majority + 1 masters
	 * that kept their data hold them all: read those (strict). When so
	 * many no longer exist (a majority lost its data at once), nothing
	 * can recover every fence: read every other master that answers and
	 * raise the counters to the clock too, so that lockd comes back by
	 * itself (degraded). */
	int need = nmembers - quorum_majority(nmembers) + 1, trusted = 0, nsrc = 0;
	int src[CONFIG_MAX_MASTERS];
	for (int i = 0; i < nmembers; i++)
		trusted += members[i].trusted;
	int degraded = trusted < need;
	for (int i = 0; i < nmembers && (degraded || nsrc < need); i++) {
		struct master *o = master_get(i);
		if (o != m && (degraded ? o->state == MS_UP && members[i].state != MB_JUDGING
		                        : mb_counts(o) && members[i].trusted))
			src[nsrc++] = i;
	}
	if ((degraded ? nsrc + 1 : nsrc) < need) {
		if (!b->short_logged)
			log_warn(
			    "master %s: fewer than %d masters %s to catch its fence counters up; "
			    "waiting for more",
			    m->name, need, degraded ? "answer" : "that kept their data count");
		b->short_logged = 1;
		retry_in(b, 200000);
		return;
	}
	if (degraded && !majority_loss_logged) {
		majority_loss_logged = 1;
		log_warn("a majority of the masters lost their data at once: locks held then may "
		         "have been granted again and fences issued then may repeat (they keep "
		         "growing for new grants); restarted masters count again after "
		         "redis.restart_exclusion_ms, caught up from the masters that answer");
	}
	b->degraded = degraded;
	int rc =
	    catchup_start(m, opts.prefix, opts.fence_idle_ms, src, nsrc, degraded, caught_up_cb);
	if (rc == 0)
		b->state = MB_CATCHING_UP;
	else if (rc == 1)
		counts_again(m);
	else
		retry_in(b, 1000000);
}

static void rejoin_cb(evutil_socket_t fd, short what, void *arg)
{
	struct member *b = arg;
	if (b->until_us > now_us()) {
		retry_in(b, 10000);
		return;
	}
	rejoin(master_get((int)(b - members)));
}

void mb_up(struct master *m, int restarted, int has_marker)
{
	struct member *b = mb_of(m);

	/* It may have lost keys: it must not count until every lease it could
	 * have held ran out. */
	if (restarted) {
		char why[128];
		snprintf(why, sizeof(why), "restarted (run_id %.8s -> %.8s)", m->prev_run_id,
		         m->run_id);
		exclude(m, why);
	}
	if (startup_judging)
		judge();
	else if (b->state == MB_JUDGING) /* first met after startup: judged on its marker now */
		judged(m, !has_marker, "lacks lockd's marker (restarted empty?)");
	else if (b->until_us <= now_us())
		rejoin(m);
}

void mb_down(struct master *m)
{
	if (startup_judging)
		judge();
}

int mb_init(struct event_base *b, int n, const struct mb_opts *o)
{
	base = b;
	opts = *o;
	opts.prefix = strdup(o->prefix); /* the config's copy goes away on reload */
	members = calloc((size_t)n, sizeof(*members));
	if (!opts.prefix || !members)
		return -1;
	nmembers = n;
	for (int i = 0; i < n; i++) {
		members[i].state = MB_JUDGING;
		members[i].trusted = 1;
		if (!(members[i].rejoin = evtimer_new(base, rejoin_cb, &members[i])))
			return -1;
	}
	startup_judging = 1;
	judge_deadline_us = now_us() + (o->timeout_ms * 4 < 500 ? 500 : o->timeout_ms * 4) * 1000;
	judge_timer = evtimer_new(base, judge_cb, NULL);
	if (!judge_timer)
		return -1;
	struct timeval tv = {0, (suseconds_t)(judge_deadline_us - now_us()) + 1000};
	if (tv.tv_usec >= 1000000) {
		tv.tv_sec = tv.tv_usec / 1000000;
		tv.tv_usec %= 1000000;
	}
	event_add(judge_timer, &tv);
	return 0;
}

void mb_set_opts(const struct mb_opts *o)
{
	opts.exclusion_ms = o->exclusion_ms;
	opts.lease_ms = o->lease_ms;
	opts.exclusion_auto = o->exclusion_auto;
	opts.fence_idle_ms = o->fence_idle_ms;
}

void mb_shutdown(void)
{
	startup_judging = 0;
	if (judge_timer)
		event_free(judge_timer);
	judge_timer = NULL;
	for (int i = 0; i < nmembers; i++)
		if (members[i].rejoin)
			event_free(members[i].rejoin);
	free(members);
	members = NULL;
	nmembers = 0;
	free((char *)opts.prefix);
	opts.prefix = NULL;
}
