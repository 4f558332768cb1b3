/* Sentinel entries of redis.masters (issue 31, the Sentinel half): a
 * primary with one replica under 3 Sentinels (harness_sentinel.c) as
 * master 0 of two lockds, beside two standalone masters, with
 * wait_replicas 1. Locks and exclusion; a SENTINEL FAILOVER under held
 * locks (no LOST, new locks granted, the old primary no longer written);
 * the primary SIGKILLed under held locks (every hold kept or its holder
 * told LOST before another is granted it; the time to the first new grant
 * that needs the entry is printed); and lockd -t on malformed entries.
 * Without redis-sentinel (or redis-server, which runs as one with
 * --sentinel) the tests print SKIP and pass. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define SNAME "locks"

struct setup {
	struct h_sentinel s;
	int m2, m3;         /* the standalone masters */
	struct cl *ca, *cb; /* a session on each lockd */
};

/* Close the sessions and stop both lockd: each must exit 0 (a sanitizer
 * build exits otherwise on a leak or a fault in the Sentinel code). */
static void finish(struct setup *u)
{
	cl_close(u->ca);
	cl_close(u->cb);
	for (int i = 0; i < 2; i++) {
		h_lockd_signal(i, SIGTERM);
		int st = h_lockd_wait(i, 5000);
		ck_assert_msg(st == 0, "lockd %d: %s after SIGTERM", i, h_status_str(st));
	}
}

static int skip(void)
{
	if (h_sentinel_bin()[0])
		return 0;
	fprintf(stderr, "SKIP: neither redis-sentinel nor redis-server to run Sentinels\n");
	return 1;
}

/* The Sentinels' primary, two standalone masters, two lockds on them. */
static void start(struct setup *u, int lease_ms)
{
	char entry[256], masters[512], extra[64];
	h_sentinel_start(&u->s, SNAME);
	h_masters_start(2);
	u->m2 = h_nmasters() - 2;
	u->m3 = h_nmasters() - 1;
	h_sentinel_entry(&u->s, entry, sizeof(entry));
	snprintf(masters, sizeof(masters), "%s, \"127.0.0.1:%d\", \"127.0.0.1:%d\"", entry,
	         h_master(u->m2)->port, h_master(u->m3)->port);
	snprintf(extra, sizeof(extra), "  wait_replicas: 1\n");
	struct h_opts o = {.lease_ms = lease_ms, .masters = masters, .redis_extra = extra};
	h_lockd_start(&o);
	h_lockd_start(&o);
	u->ca = cl_tcp(h_lockd(0)->port);
	u->cb = cl_tcp(h_lockd(1)->port);
}

static long long pttl(int master, const char *key)
{
	char rkey[128];
	snprintf(rkey, sizeof(rkey), "lockd:%s", key);
	char *r = h_redis(master, "PTTL", rkey, NULL);
	long long v = r ? atoll(r) : -3;
	free(r);
	return v;
}

static void expect_node(struct cl *c, int port)
{
	char want[64];
	snprintf(want, sizeof(want), "127.0.0.1:%d", port);
	char *node = cl_stat(c, "master.0.node");
	ck_assert_str_eq(node, want);
	free(node);
	char *role = cl_stat(c, "master.0.role");
	ck_assert_str_eq(role, "master");
	free(role);
	char *addr = cl_stat(c, "master.0.addr");
	ck_assert_str_eq(addr, "sentinel:" SNAME);
	free(addr);
}

/* STATS shows the entry's replica (ROLE, at the handshake or since), and
 * none on a standalone master. */
static void expect_replicas(struct cl *c, int replica)
{
	char want[64];
	snprintf(want, sizeof(want), "127.0.0.1:%d", h_master(replica)->port);
	cl_expect_stat(c, "master.0.replicas", "1");
	cl_expect_stat(c, "master.0.replica_nodes", want);
	cl_expect_stat(c, "master.1.replicas", "0");
	cl_expect_stat(c, "master.1.replica_nodes", "-");
}

/* The Sentinels may fail over again on their own: on a loaded machine a
 * primary that does not answer their PING for down-after-milliseconds
 * (1000 here) is failed over, and CI's machine may starve a process that
 * long. That is the deployment's event, not lockd's; after it a test
 * asserts what lockd guarantees across any failover (holds_kept_or_lost)
 * instead of what it promises for the one the test made. 1 when the
 * Sentinels name a primary other than port. */
static int failed_over_again(const struct setup *u, int port, const char *test)
{
	int now = h_sentinel_primary_port(&u->s);
	if (now == 0 || now == port)
		return 0;
	fprintf(stderr,
	        "%s: the Sentinels failed over again on their own (to port %d): only what holds "
	        "across any failover is checked from here\n",
	        test, now);
	return 1;
}

/* Wait until master i has a replica online again (the old primary,
 * reconfigured by the Sentinels after a failover, resynchronised): 1; or
 * 0 at once when the Sentinels moved on from port (u NULL: not asked). */
static int wait_replica_or_moved(const struct setup *u, int i, int port, int timeout_ms,
                                 const char *test)
{
	double end = h_now_ms() + timeout_ms;
	for (;;) {
		char *info = h_redis(i, "INFO", "replication", NULL);
		int ok = info && strstr(info, "connected_slaves:1") && strstr(info, "state=online");
		free(info);
		if (ok)
			return 1;
		if (u && failed_over_again(u, port, test))
			return 0;
		ck_assert_msg(h_now_ms() < end, "the new primary has no replica after %d ms",
		              timeout_ms);
		h_sleep_ms(50);
	}
}

/* Each of the n keys that lockd 0's session held is either still held
 * (lockd 1's TRYLOCK answers BUSY) or its holder was told LOST before
 * lockd 1 is granted it. Returns how many were kept. */
static int holds_kept_or_lost(struct setup *u, const char *const *keys, int n)
{
	int kept = 0;
	char req[64], want[64];
	for (int i = 0; i < n; i++) {
		cl_silence(u->ca, 100); /* LOSTs sent so far are recorded */
		snprintf(req, sizeof(req), "TRYLOCK %s", keys[i]);
		const char *rep = cl_cmd(u->cb, req, 5000);
		ck_assert_msg(rep != NULL, "%s: no reply", req);
		if (strcmp(rep, "BUSY") == 0) {
			kept++;
			continue;
		}
		ck_assert_msg(strncmp(rep, "OK ", 3) == 0, "%s: '%s'", req, rep);
		snprintf(want, sizeof(want), "LOST %s ", keys[i]);
		int told = 0;
		for (int j = 0; j < u->ca->nlost && j < 32; j++)
			told |= strncmp(u->ca->lost[j], want, strlen(want)) == 0;
		ck_assert_msg(told, "%s granted to another session; its holder was not told LOST",
		              keys[i]);
	}
	return kept;
}

/* Wait until the Sentinels name port, and lockd l is up on it. */
static void wait_moved(const struct setup *u, int l, long off, int port, int timeout_ms)
{
	double end = h_now_ms() + timeout_ms;
	while (h_sentinel_primary_port(&u->s) != port) {
		ck_assert_msg(h_now_ms() < end, "the Sentinels did not promote the replica");
		h_sleep_ms(50);
	}
	char up[128];
	snprintf(up, sizeof(up), "master sentinel:" SNAME " up (127.0.0.1:%d)", port);
	char *line = h_log_wait(h_lockd(l)->log, off, up, NULL, (int)(end - h_now_ms()) + 1000);
	ck_assert_msg(line != NULL, "lockd %d did not connect to the new primary", l);
	free(line);
}

START_TEST(sentinel_locks)
{
	if (skip())
		return;
	struct setup u;
	start(&u, 2000);
	expect_node(u.ca, h_master(u.s.primary)->port);
	expect_node(u.cb, h_master(u.s.primary)->port);
	cl_lock(u.ca, "LOCK k1 WAIT 2000");
	/* WAIT 1: by the grant the replica has it too */
	ck_assert_int_gt(pttl(u.s.primary, "k1"), 0);
	ck_assert_int_gt(pttl(u.s.replica, "k1"), 0);
	/* so it is online there: ROLE shows it within its refresh (1 s) */
	cl_wait_stat(u.ca, "master.0.replicas", "1", 1000 + H_LOADED);
	expect_replicas(u.ca, u.s.replica);
	cl_expect(u.cb, "TRYLOCK k1", "BUSY");
	/* without a standalone master, the entry is needed for a majority */
	h_master_kill(u.m3);
	cl_expect(u.cb, "TRYLOCK k1", "BUSY");
	cl_expect_prefix(u.ca, "UNLOCK k1", "OK");
	cl_lock(u.cb, "LOCK k1 WAIT 2000");
	cl_expect(u.ca, "TRYLOCK k1", "BUSY");
	cl_lock(u.ca, "LOCK k2 WAIT 2000");
	char *wf = cl_stat(u.ca, "master.0.wait_failures");
	ck_assert_str_eq(wf, "0");
	free(wf);
	/* a reload cannot change an entry's Sentinels */
	char *conf = h_slurp(h_lockd(0)->conf), first[64];
	ck_assert_ptr_nonnull(conf);
	snprintf(first, sizeof(first), "\"127.0.0.1:%d\", ", u.s.port[0]);
	char *changed = h_replace1(conf, first, "");
	long off = h_lockd_reload(0, changed);
	h_lockd_wait_reloaded(0, off, 3000);
	char *ln = h_log_find(h_lockd(0)->log, off, "redis.masters cannot change at runtime", NULL);
	ck_assert_msg(ln != NULL, "no log line saying that redis.masters cannot change");
	free(ln);
	cl_lock(u.ca, "LOCK k3 WAIT 2000");
	free(changed);
	free(conf);
	finish(&u);
}
END_TEST

#define FO_LEASE 1500

START_TEST(sentinel_failover)
{
	if (skip())
		return;
	struct setup u;
	start(&u, FO_LEASE);
	const char *keys[] = {"k1", "k2", "k3"};
	char req[64];
	for (int i = 0; i < 3; i++) {
		snprintf(req, sizeof(req), "LOCK %s WAIT 2000", keys[i]);
		cl_lock(u.ca, req);
	}
	long off0 = h_file_size(h_lockd(0)->log), off1 = h_file_size(h_lockd(1)->log);
	char *r = h_redis(u.s.primary, "PING", NULL);
	free(r);
	struct rconn *sc = rc_open(u.s.port[0], 2000);
	ck_assert(sc != NULL);
	char *ok = rc_cmd(sc, "SENTINEL", "FAILOVER", SNAME, NULL);
	rc_close(sc);
	ck_assert_msg(ok && strcmp(ok, "OK") == 0, "SENTINEL FAILOVER: %s", ok ? ok : "no reply");
	free(ok);
	int newport = h_master(u.s.replica)->port;
	wait_moved(&u, 0, off0, newport, 15000);
	wait_moved(&u, 1, off1, newport, 5000);
	/* a promoted replica that had every counted write (WAIT 1, 1 replica)
	 * and the marker keeps counting: not excluded as a restart */
	char *prom =
	    h_log_wait(h_lockd(0)->log, off0, "a promoted replica with lockd's marker", NULL, 1000);
	ck_assert_msg(prom != NULL, "lockd 0 did not take the new primary for a promoted replica");
	free(prom);
	/* two leases: every hold renewed on the new primary, no LOST */
	cl_silence(u.ca, 2 * FO_LEASE);
	ck_assert_msg(u.ca->nlost == 0, "LOST after the failover: %s", u.ca->lost[0]);
	for (int i = 0; i < 3; i++)
		ck_assert_msg(pttl(u.s.replica, keys[i]) > 0, "%s is not on the new primary",
		              keys[i]);
	expect_node(u.ca, newport);
	expect_node(u.cb, newport);
	/* the new primary went through the same handshake: each lockd's
	 * connection named there (before its layout key was read), and the
	 * layout read */
	char *list = h_redis(u.s.replica, "CLIENT", "LIST", NULL);
	ck_assert_ptr_nonnull(list);
	int named = 0;
	for (const char *p = list; (p = strstr(p, " name=lockd-l1-")); p++)
		named++;
	ck_assert_msg(named == 2, "%d connections named lockd-l1- on the new primary:\n%s", named,
	              list);
	free(list);
	cl_expect_stat(u.ca, "master.0.layout", "1");
	/* the other lockd cannot take a held key, even when the entry is
	 * needed for a majority */
	cl_expect(u.cb, "TRYLOCK k1", "BUSY");
	/* until the old primary is its replica, WAIT 1 fails on the new one:
	 * nothing written there counts (TRYLOCK would answer ERR QUORUM) */
	int again = !wait_replica_or_moved(&u, u.s.replica, newport, 15000, "sentinel_failover");
	h_master_kill(u.m3);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(h_lockd_alive(i), "lockd %d is gone", i);
	if (again || failed_over_again(&u, newport, "sentinel_failover")) {
		int kept = holds_kept_or_lost(&u, keys, 3);
		fprintf(stderr, "sentinel_failover: %d of 3 holds kept, %d LOST\n", kept,
		        u.ca->nlost);
		finish(&u);
		return;
	}
	/* say which went wrong if the next one fails: a hold lost (its holder
	 * told), or a held key granted to another */
	cl_silence(u.ca, 50);
	ck_assert_msg(u.ca->nlost == 0, "LOST once the entry was needed again: %s", u.ca->lost[0]);
	/* Never granted. ERR QUORUM until the entry counts again: lockd 1 had
	 * no traffic since its last WAIT there answered short, so its first
	 * write there is the one WAIT it may send, and on a loaded machine the
	 * replica may not acknowledge it within WAIT's timeout; then BUSY. */
	double tq = h_now_ms();
	for (int n = 0;; n++) {
		const char *rep = cl_cmd(u.cb, "TRYLOCK k2", 5000);
		ck_assert_msg(rep != NULL, "TRYLOCK k2: no reply");
		if (strcmp(rep, "BUSY") == 0)
			break;
		ck_assert_msg(strncmp(rep, "ERR QUORUM", 10) == 0, "TRYLOCK k2: '%s'", rep);
		ck_assert_msg(h_now_ms() - tq < 2000 + H_LOADED,
		              "TRYLOCK k2 still '%s' %.0f ms after the standalone master's kill "
		              "(%d tries)",
		              rep, h_now_ms() - tq, n + 1);
		h_sleep_ms(50);
	}
	/* new locks, which need the entry now */
	cl_lock(u.cb, "LOCK n1 WAIT 3000");
	ck_assert_int_gt(pttl(u.s.replica, "n1"), 0);
	/* the old primary is the new one's replica now, in STATS too */
	cl_wait_stat(u.cb, "master.0.replicas", "1", 1000 + H_LOADED);
	expect_replicas(u.cb, u.s.primary);
	cl_silence(u.ca, 200);
	ck_assert_int_eq(u.ca->nlost, 0);
	finish(&u);
}
END_TEST

/* WAITs the master i has run (INFO commandstats). */
static long long wait_calls(int i)
{
	char *r = h_redis(i, "INFO", "commandstats", NULL);
	const char *p = r ? strstr(r, "cmdstat_wait:calls=") : NULL;
	long long n = p ? atoll(p + strlen("cmdstat_wait:calls=")) : 0;
	free(r);
	return n;
}

/* 1 if a client of master i is blocked (a WAIT, here), with what it sent
 * after it waiting unread. */
static int any_blocked(int i)
{
	char *r = h_redis(i, "CLIENT", "LIST", NULL);
	ck_assert_msg(r != NULL, "master %d: CLIENT LIST did not answer", i);
	int b = 0;
	for (const char *p = r; (p = strstr(p, " flags=")) != NULL; p += 7)
		if (strcspn(p + 7, "b ") < strcspn(p + 7, " "))
			b = 1;
	free(r);
	return b;
}

/* A primary whose replica is gone cannot acknowledge a write (WAIT 1):
 * while a recent ROLE lists no replica, lockd sends no WAIT there (each
 * would block the connection for WAIT's timeout, with the requests
 * behind it, ROLE among them, and every acquire that waits for that
 * master's answer); the writes count nowhere, and STATS counts them.
 * Locks are granted on the two standalone masters meanwhile. */
START_TEST(sentinel_no_replica_fails_fast)
{
	if (skip())
		return;
	struct setup u;
	start(&u, 3000);
	cl_lock(u.ca, "LOCK k0 WAIT 2000");
	cl_wait_stat(u.ca, "master.0.replicas", "1", 1000 + H_LOADED);
	h_master_kill(u.s.replica);
	/* traffic, so that ROLE is asked again (every second) */
	double t0 = h_now_ms();
	for (;;) {
		cl_expect_prefix(u.ca, "UNLOCK k0", "OK");
		cl_lock(u.ca, "LOCK k0 WAIT 2000");
		char *n = cl_stat(u.ca, "master.0.replicas");
		int zero = strcmp(n, "0") == 0;
		free(n);
		if (zero)
			break;
		ck_assert_msg(h_now_ms() - t0 < 1000 + 2 * H_LOADED,
		              "STATS still lists a replica %.0f ms after it was killed",
		              h_now_ms() - t0);
		h_sleep_ms(20);
	}
	/* Redis counts a WAIT when it runs it. WAITs lockd sent before ROLE
	 * listed too few (a WAIT per write, until the first answers short)
	 * wait at the primary behind a blocked one and run later, maybe in
	 * the window below: start it when no client there is blocked, so
	 * that every WAIT it counts was sent in it. */
	long long wc0;
	for (double tb = h_now_ms();;) {
		if (!any_blocked(u.s.primary)) {
			wc0 = wait_calls(u.s.primary);
			if (!any_blocked(u.s.primary))
				break; /* else one ran between the two: again */
		}
		ck_assert_msg(h_now_ms() - tb < 2000 + H_LOADED,
		              "a client of the primary still blocked %.0f ms after ROLE listed no "
		              "replica",
		              h_now_ms() - tb);
		cl_expect_prefix(u.ca, "UNLOCK k0", "OK"); /* traffic: ROLE stays fresh */
		cl_lock(u.ca, "LOCK k0 WAIT 2000");
		h_sleep_ms(20);
	}
	char *w = cl_stat(u.ca, "master.0.wait_failures");
	long long wf0 = atoll(w);
	free(w);
	double t1 = h_now_ms();
	char req[64];
	for (int i = 0; i < 40; i++) {
		snprintf(req, sizeof(req), "LOCK f%d WAIT 2000", i);
		cl_lock(u.ca, req);
		snprintf(req, sizeof(req), "UNLOCK f%d", i);
		cl_expect_prefix(u.ca, req, "OK");
	}
	double el = h_now_ms() - t1;
	long long wc1 = wait_calls(u.s.primary);
	w = cl_stat(u.ca, "master.0.wait_failures");
	long long wf1 = atoll(w);
	free(w);
	/* No WAIT while a ROLE asked in the last 300 ms lists too few (ROLE is
	 * asked every 100 ms meanwhile): one can go only after an idle spell
	 * that long, which 40 back-to-back grants have only on a loaded
	 * machine; never one per grant. */
	ck_assert_msg(wc1 - wc0 <= (long long)(el / 300),
	              "the primary ran %lld WAITs during 40 grants in %.0f ms", wc1 - wc0, el);
	/* each grant's write counted nowhere there; STATS and the log say so */
	char *ln = h_log_wait(h_lockd(0)->log, 0,
	                      "writes there do not count until enough replicas acknowledge them",
	                      NULL, 1000);
	ck_assert_msg(ln != NULL, "lockd 0 did not log why the entry counts nowhere");
	free(ln);
	ck_assert_msg(wf1 - wf0 >= 40, "master.0.wait_failures grew by %lld over 40 grants",
	              wf1 - wf0);
	fprintf(stderr,
	        "sentinel_no_replica_fails_fast: 40 grants in %.0f ms, %lld WAITs on the primary, "
	        "%lld writes counted nowhere\n",
	        el, wc1 - wc0, wf1 - wf0);
	finish(&u);
}
END_TEST

/* A promoted replica without lockd's marker never received lockd's data
 * (here: deleted on the replica by hand): the promotion is a restart that
 * lost data, and the entry does not count for redis.restart_exclusion_ms
 * (the lease); the holds live on the standalone masters meanwhile. */
START_TEST(sentinel_promotion_without_marker)
{
	if (skip())
		return;
	struct setup u;
	start(&u, FO_LEASE);
	cl_lock(u.ca, "LOCK k1 WAIT 2000");
	char *r = h_redis(u.s.replica, "CONFIG", "SET", "replica-read-only", "no", NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	ck_assert_int_eq(h_redis_int(u.s.replica, "DEL", "lockd: marker", NULL), 1);
	long off0 = h_file_size(h_lockd(0)->log);
	struct rconn *sc = rc_open(u.s.port[0], 2000);
	ck_assert(sc != NULL);
	char *ok = rc_cmd(sc, "SENTINEL", "FAILOVER", SNAME, NULL);
	rc_close(sc);
	ck_assert_msg(ok && strcmp(ok, "OK") == 0, "SENTINEL FAILOVER: %s", ok ? ok : "no reply");
	free(ok);
	wait_moved(&u, 0, off0, h_master(u.s.replica)->port, 15000);
	char *ln =
	    h_log_wait(h_lockd(0)->log, off0,
	               "it lacks lockd's marker; handled as a restart that lost data", NULL, 1000);
	ck_assert_msg(ln != NULL, "lockd 0 did not take the promotion for a restart");
	free(ln);
	ln = h_log_wait(h_lockd(0)->log, off0, "master sentinel:" SNAME " restarted", NULL, 1000);
	ck_assert_msg(ln != NULL, "lockd 0 did not exclude the entry");
	free(ln);
	char *counts = cl_stat(u.ca, "master.0.counts");
	ck_assert_str_eq(counts, "0");
	free(counts);
	/* It counts again after the exclusion (the lease), once caught up;
	 * the catch-up's writes need WAIT 1 too, so a replica: the old
	 * primary, made one here at once rather than when the Sentinels get
	 * to it (their INFO to a master comes every 10 s). */
	char port[16];
	snprintf(port, sizeof(port), "%d", h_master(u.s.replica)->port);
	r = h_redis(u.s.primary, "REPLICAOF", "127.0.0.1", port, NULL);
	ck_assert_str_eq(r, "OK");
	free(r);
	wait_replica_or_moved(NULL, u.s.replica, 0, 10000, NULL);
	cl_wait_stat(u.ca, "master.0.counts", "1", FO_LEASE + 3000);
	cl_silence(u.ca, 200);
	ck_assert_msg(u.ca->nlost == 0, "LOST: %s", u.ca->lost[0]);
	cl_expect(u.cb, "TRYLOCK k1", "BUSY");
	finish(&u);
}
END_TEST

#define KILL_LEASE 6000

START_TEST(sentinel_kill)
{
	if (skip())
		return;
	struct setup u;
	start(&u, KILL_LEASE);
	const char *keys[] = {"k1", "k2", "k3"};
	char req[64];
	for (int i = 0; i < 3; i++) {
		snprintf(req, sizeof(req), "LOCK %s WAIT 2000", keys[i]);
		cl_lock(u.ca, req);
	}
	/* every grant from now needs the entry */
	h_master_kill(u.m3);
	long off0 = h_file_size(h_lockd(0)->log);
	h_master_kill(u.s.primary);
	double t0 = h_now_ms();
	int newport = h_master(u.s.replica)->port;
	char want[64];
	snprintf(want, sizeof(want), "127.0.0.1:%d", newport);
	cl_wait_stat(u.cb, "master.0.node", want, 15000);
	double tp = h_now_ms();
	/* The promoted replica has no replica of its own now, so WAIT 1 fails
	 * there and nothing written there counts, until the killed node is
	 * back: its supervisor restarts it (empty) as the new primary's
	 * replica (the Sentinels would make it one too, some seconds later). */
	h_master_restart(u.s.primary);
	char port[16];
	snprintf(port, sizeof(port), "%d", newport);
	char *ok = h_redis(u.s.primary, "REPLICAOF", "127.0.0.1", port, NULL);
	ck_assert_msg(ok && strcmp(ok, "OK") == 0, "REPLICAOF: %s", ok ? ok : "no reply");
	free(ok);
	int again = !wait_replica_or_moved(&u, u.s.replica, newport, 15000, "sentinel_kill");
	double tr = h_now_ms();
	double tg = 0;
	int tries = 0;
	for (; tries < 400 && h_now_ms() < t0 + 20000; tries++) {
		const char *rep = cl_cmd(u.cb, "TRYLOCK n1", 5000);
		ck_assert_msg(rep != NULL, "TRYLOCK n1: no reply");
		if (strncmp(rep, "OK ", 3) == 0) {
			tg = h_now_ms();
			break;
		}
		ck_assert_msg(strncmp(rep, "ERR QUORUM", 10) == 0, "TRYLOCK n1: '%s'", rep);
		h_sleep_ms(50);
	}
	ck_assert_msg(tg > 0, "no new grant within 20 s of the primary's SIGKILL");
	fprintf(stderr,
	        "sentinel_kill: after the primary's SIGKILL: lockd on the promoted replica at "
	        "%.0f ms, the killed node back as its replica at %.0f ms, first new grant "
	        "needing the entry at %.0f ms (%d ERR QUORUM before it)\n",
	        tp - t0, tr - t0, tg - t0, tries);
	/* every hold is kept, or its holder was told LOST before another
	 * session is granted it */
	again = again || failed_over_again(&u, newport, "sentinel_kill");
	int kept = holds_kept_or_lost(&u, keys, 3);
	fprintf(stderr, "sentinel_kill: %d of 3 holds kept across the SIGKILL, %d LOST\n", kept,
	        u.ca->nlost);
	/* lockd 0 follows the switch on its own time (the grants above went
	 * through lockd 1): its judgement, once it is on the new primary */
	if (again) {
		finish(&u);
		return;
	}
	cl_wait_stat(u.ca, "master.0.node", want, 15000);
	char *prom =
	    h_log_wait(h_lockd(0)->log, off0, "a promoted replica with lockd's marker", NULL, 1000);
	ck_assert_msg(prom != NULL, "lockd 0 did not take the new primary for a promoted replica");
	free(prom);
	ck_assert_int_eq(kept + u.ca->nlost, 3);
	finish(&u);
}
END_TEST

/* lockd -t names a malformed entry at its node. */
START_TEST(sentinel_config_errors)
{
	static const struct {
		const char *yaml, *err;
	} cases[] = {
	    {"redis:\n  masters:\n    - sentinel: []\n      name: locks\n",
	     ":3:17: redis.masters: sentinel: needs at least one \"HOST:PORT\""},
	    {"redis:\n  masters:\n    - sentinel: [\"127.0.0.1:26379\"]\n",
	     ":3:7: redis.masters: a sentinel entry needs a name"},
	    {"redis:\n  masters:\n    - {sentinel: [\"127.0.0.1\"], name: locks}\n",
	     ":3:19: redis.masters: sentinel: \"127.0.0.1\": expected HOST:PORT"},
	    {"redis:\n  masters:\n    - {sentinel: [\"a:1\"], name: locks, port: 1}\n",
	     ":3:40: redis.masters: unknown key \"port\" in an entry (sentinel, name; cluster)"},
	    {"redis:\n  masters:\n    - cluster: [\"a\"]\n",
	     ":3:17: redis.masters: cluster: \"a\": expected HOST:PORT"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[512], want[1100];
		snprintf(path, sizeof(path), "%s/bad%zu.yml", h_dir(), i);
		h_put_file(path, cases[i].yaml);
		char *argv[] = {(char *)h_built("lockd"), "-t", "-c", path, NULL};
		char *out = NULL, *err = NULL;
		int st = h_run(argv, NULL, 5000, &out, &err);
		snprintf(want, sizeof(want), "%s%s\n", path, cases[i].err);
		ck_assert_msg(st != 0, "lockd -t accepted %s", path);
		ck_assert_msg(err && strstr(err, want), "lockd -t %s: '%s', not '%s'", path,
		              err ? err : "", want);
		free(out);
		free(err);
	}
}
END_TEST

TCase *tc_sentinel(void)
{
	TCase *tc = tcase_create("sentinel");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 90);
	H_ADD(tc, sentinel_locks);
	H_ADD(tc, sentinel_failover);
	H_ADD(tc, sentinel_no_replica_fails_fast);
	H_ADD(tc, sentinel_promotion_without_marker);
	H_ADD(tc, sentinel_kill);
	H_ADD(tc, sentinel_config_errors);
	return tc;
}
