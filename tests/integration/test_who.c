/* who: WHO key (protocol 1.4) end to end, on two lockd over three real
 * masters: lockd A with the default name (HOST:PORT), lockd B named
 * "lockd-b". Exact reply lines: a free key, an exclusive hold seen from
 * its own lockd (client, session, held_ms) and from the other (its
 * lockd's name, the key's latest fence), shared holders of both, permits
 * of different n, a leader, a resumable session attached, detached and
 * adopted elsewhere, holds the masters know no lockd for, a rename, a
 * master stopped (a majority still answers), two stopped (ERR QUORUM),
 * and the name written again on a master that restarted empty. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "sess_util.h"

#define LEASE   3000
#define MAXL    16
#define B_NAME  "lockd-b"
#define QUORUM  "ERR QUORUM no majority of masters answered"
#define UNSURE  "ERR QUORUM the masters that answered cannot tell a hold from a leftover"
#define KEYBAD  "ERR KEY key must be printable ASCII (0x21-0x7E)"
#define NOT_ANY 0 /* held_ms: no upper bound to check */

struct who_reply {
	int n;
	char line[MAXL][400];
};

/* WHO key on c: the HOLDER lines before END (the test fails on anything
 * else, or on a reply that does not end). */
static void who_at(const char *file, int line, struct cl *c, const char *key, struct who_reply *w)
{
	char req[300];
	snprintf(req, sizeof(req), "WHO %s", key);
	const char *l = cl_cmd_at(file, line, c, req, H_SLOW_LIMIT);
	w->n = 0;
	for (;;) {
		if (!l)
			h_fail_at(file, line, "%s: the reply ended before END", req);
		if (strcmp(l, "END") == 0)
			return;
		if (strncmp(l, "HOLDER ", 7) != 0 || w->n == MAXL ||
		    strlen(l) >= sizeof(w->line[0]))
			h_fail_at(file, line, "%s: unexpected line '%s'", req, l);
		snprintf(w->line[w->n++], sizeof(w->line[0]), "%s", l);
		l = cl_line_at(file, line, c, H_TMO);
	}
}
#define who(c, k, w) who_at(__FILE__, __LINE__, (c), (k), (w))

/* A line of a hold here: exactly prefix, then " held_ms=N" with N within
 * [0, max_ms] (max_ms 0: not checked). */
static void held_line_at(const char *file, int line, const char *got, const char *prefix,
                         long max_ms)
{
	size_t n = strlen(prefix);
	char *end;
	if (strncmp(got, prefix, n) != 0 || strncmp(got + n, " held_ms=", 9) != 0)
		h_fail_at(file, line, "got '%s', expected '%s held_ms=N'", got, prefix);
	long ms = strtol(got + n + 9, &end, 10);
	if (*end || end == got + n + 9 || ms < 0 || (max_ms && ms > max_ms))
		h_fail_at(file, line, "got '%s': held_ms out of [0, %ld]", got, max_ms);
}
#define held_line(got, prefix, max) held_line_at(__FILE__, __LINE__, (got), (prefix), (max))

/* "127.0.0.1:PORT", the address lockd sees for c. */
static void addr_of(struct cl *c, char *out, size_t len)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	ck_assert_int_eq(getsockname(c->fd, (struct sockaddr *)&a, &al), 0);
	snprintf(out, len, "127.0.0.1:%d", ntohs(a.sin_port));
}

/* The key's latest fence as WHO elsewhere tells it: the highest counter
 * of the masters given (a bit per master). */
static unsigned long long counter_of(const char *key, unsigned mask)
{
	char rk[300];
	unsigned long long best = 0;
	snprintf(rk, sizeof(rk), "lockd:%s fence", key);
	for (int i = 0; i < h_nmasters(); i++) {
		if (!(mask & (1u << i)))
			continue;
		char *v = h_redis(i, "GET", rk, NULL);
		ck_assert_ptr_nonnull(v);
		unsigned long long f = strtoull(v, NULL, 10);
		best = f > best ? f : best;
		free(v);
	}
	ck_assert_uint_gt(best, 0);
	return best;
}

/* A hold seen from another lockd: "HOLDER fence REST", its fence the
 * key's latest as the masters that answered hold it: no lower than the
 * hold's own (floor), no higher than the largest counter on the masters
 * of mask read afterwards (a write-back of the grant may still be on its
 * way to one of them when WHO reads). */
static void elsewhere_at(const char *file, int line, const char *got, const char *rest,
                         unsigned long long floor, const char *key, unsigned mask)
{
	unsigned long long f = 0;
	int n = 0;
	if (sscanf(got, "HOLDER %llu %n", &f, &n) != 1 || strcmp(got + n, rest) != 0)
		h_fail_at(file, line, "WHO: '%s', want 'HOLDER <fence> %s'", got, rest);
	unsigned long long top = counter_of(key, mask);
	if (f < floor || f > top)
		h_fail_at(file, line, "WHO: '%s': fence not within %llu (the hold's) .. %llu", got,
		          floor, top);
}
#define elsewhere(g, r, fl, k, m) elsewhere_at(__FILE__, __LINE__, (g), (r), (fl), (k), (m))

/* SET on master i (the reply must be OK). */
static void set_on(int i, const char *key, const char *value)
{
	char *r = h_redis(i, "SET", key, value, "PX", "60000", NULL);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r, "OK");
	free(r);
}

static char a_name[300];

/* Masters 0-2, lockd A (index 0, default name) and B (index 1, B_NAME). */
static void two_lockd(void)
{
	char host[256] = "";
	h_masters_start(3);
	h_lockd_start(&(struct h_opts){.lease_ms = LEASE});
	h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .top_extra = "name: " B_NAME "\n"});
	ck_assert_int_eq(gethostname(host, sizeof(host) - 1), 0);
	snprintf(a_name, sizeof(a_name), "%s:%d", host, h_lockd(0)->port);
}

/* A free key; malformed requests; an exclusive hold on its own lockd and
 * on the other; a unix client; a rename by reload. */
START_TEST(who_exclusive)
{
	two_lockd();
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	struct who_reply w;
	char want[600], addr[64];

	cl_expect(a, "WHO free-key", "END");
	cl_expect(b, "who free-key", "END");
	cl_expect(a, "WHO", "ERR PROTOCOL missing key");
	cl_expect(a, "WHO k extra", "ERR PROTOCOL extra argument");
	cl_expect(a, "WHO k PERMITS 2", "ERR PROTOCOL extra argument");
	cl_expect(a, "WHO k\x7f", KEYBAD);

	struct cl *h = cl_tcp(h_lockd(0)->port);
	double t0 = h_now_ms();
	unsigned long long f = cl_lock(h, "LOCK job");
	addr_of(h, addr, sizeof(addr));
	who(a, "job", &w);
	ck_assert_int_eq(w.n, 1);
	snprintf(want, sizeof(want), "HOLDER %llu exclusive lockd=%s client=%s session=-", f,
	         a_name, addr);
	held_line(w.line[0], want, (long)(h_now_ms() - t0) + 1);

	/* from B: A's name, the key's latest fence (no lower than the hold's) */
	who(b, "job", &w);
	ck_assert_int_eq(w.n, 1);
	snprintf(want, sizeof(want), "exclusive lockd=%s", a_name);
	elsewhere(w.line[0], want, f, "job", 7);

	/* lockctl who KEY: the lines, without END, exit 0 */
	struct h_lockctl p;
	char port[16];
	snprintf(port, sizeof(port), "%d", h_lockd(1)->port);
	const char *args[] = {"-p", port, "who", "job", NULL};
	h_lockctl_spawn(&p, args);
	ck_assert_int_eq(h_lockctl_wait(&p, 15000), 0);
	char *out = h_slurp(p.out);
	ck_assert_ptr_nonnull(out);
	ck_assert_msg(strlen(out) > 0 && out[strlen(out) - 1] == '\n', "lockctl who: '%s'", out);
	out[strlen(out) - 1] = '\0';
	snprintf(want, sizeof(want), "exclusive lockd=%s", a_name);
	elsewhere(out, want, f, "job", 7);
	free(out);

	/* a hold of B's, over a Unix socket, seen from A and from B */
	struct cl *u = cl_unix(h_lockd(1)->sock);
	unsigned long long fu = cl_lock(u, "TRYLOCK unixjob TTL 60000");
	who(a, "unixjob", &w);
	ck_assert_int_eq(w.n, 1);
	elsewhere(w.line[0], "exclusive lockd=" B_NAME, fu, "unixjob", 7);
	who(b, "unixjob", &w);
	snprintf(want, sizeof(want), "HOLDER %llu exclusive lockd=" B_NAME " client=unix session=-",
	         fu);
	ck_assert_int_eq(w.n, 1);
	held_line(w.line[0], want, NOT_ANY);

	/* UNLOCK: the key is free again everywhere */
	cl_expect(h, "UNLOCK job", "OK 0");
	cl_expect(a, "WHO job", "END");
	cl_expect(b, "WHO job", "END");

	/* B renamed by a reload: written again on every master at once */
	char *conf = h_slurp(h_lockd(1)->conf);
	ck_assert_ptr_nonnull(conf);
	char *renamed = h_replace1(conf, "name: " B_NAME "\n", "name: lockd-b2\n");
	long off = h_lockd_reload(1, renamed);
	h_lockd_wait_reloaded(1, off, 5000);
	free(conf);
	free(renamed);
	for (int t = 0;; t++) { /* the reload's write and this read go on two connections */
		who(a, "unixjob", &w);
		ck_assert_int_eq(w.n, 1);
		if (strstr(w.line[0], " exclusive lockd=lockd-b2") &&
		    !strcmp(strstr(w.line[0], " exclusive lockd="), " exclusive lockd=lockd-b2")) {
			elsewhere(w.line[0], "exclusive lockd=lockd-b2", fu, "unixjob", 7);
			break;
		}
		ck_assert_msg(t < 50, "still '%s' after the reload", w.line[0]);
		h_sleep_ms(10);
	}
	cl_close(u);
	cl_close(h);
	cl_close(a);
	cl_close(b);
}
END_TEST

/* Shared holders of both lockd, permits of different n, a leader. */
START_TEST(who_shared_permits_leader)
{
	two_lockd();
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	struct cl *a2 = cl_tcp(h_lockd(0)->port), *b2 = cl_tcp(h_lockd(1)->port);
	struct who_reply w;
	char want[600], addr_a[64], addr_b[64], addr_a2[64];
	addr_of(a, addr_a, sizeof(addr_a));
	addr_of(b, addr_b, sizeof(addr_b));
	addr_of(a2, addr_a2, sizeof(addr_a2));

	/* shared: one holder on each lockd (lines in token order: either first) */
	unsigned long long fa = cl_lock(a, "LOCK cfg SHARED");
	unsigned long long fb = cl_lock(b, "LOCK cfg SHARED");
	who(a2, "cfg", &w);
	ck_assert_int_eq(w.n, 2);
	int mine = strstr(w.line[0], "lockd=" B_NAME) ? 1 : 0;
	snprintf(want, sizeof(want), "HOLDER %llu shared lockd=%s client=%s session=-", fa, a_name,
	         addr_a);
	held_line(w.line[mine], want, NOT_ANY);
	elsewhere(w.line[1 - mine], "shared lockd=" B_NAME, fb, "cfg", 7);
	who(b2, "cfg", &w);
	ck_assert_int_eq(w.n, 2);
	mine = strstr(w.line[0], "lockd=" B_NAME) ? 0 : 1;
	snprintf(want, sizeof(want), "HOLDER %llu shared lockd=" B_NAME " client=%s session=-", fb,
	         addr_b);
	held_line(w.line[mine], want, NOT_ANY);
	snprintf(want, sizeof(want), "shared lockd=%s", a_name);
	elsewhere(w.line[1 - mine], want, fa, "cfg", 7);

	/* permits: 0 of 3 on A, 1 of 3 on B, 2 of 5 on A (the lowest free) */
	unsigned long long p0 = cl_lock(a, "LOCK pool PERMITS 3");
	unsigned long long p1 = cl_lock(b, "LOCK pool PERMITS 3");
	unsigned long long p2 = cl_lock(a2, "LOCK pool PERMITS 5");
	who(a, "pool", &w);
	ck_assert_int_eq(w.n, 3);
	snprintf(want, sizeof(want), "HOLDER %llu permit=0/3 lockd=%s client=%s session=-", p0,
	         a_name, addr_a);
	held_line(w.line[0], want, NOT_ANY);
	elsewhere(w.line[1], "permit=1/3 lockd=" B_NAME, p1, "pool", 7);
	snprintf(want, sizeof(want), "HOLDER %llu permit=2/5 lockd=%s client=%s session=-", p2,
	         a_name, addr_a2);
	held_line(w.line[2], want, NOT_ANY);

	/* a leader is a HOLDER like any other */
	unsigned long long fe = cl_lock(b2, "CAMPAIGN sched node-b:8080");
	who(a, "sched", &w);
	ck_assert_int_eq(w.n, 1);
	elsewhere(w.line[0], "exclusive lockd=" B_NAME, fe, "sched", 7);
	char addr_b2[64];
	addr_of(b2, addr_b2, sizeof(addr_b2));
	who(b, "sched", &w);
	ck_assert_int_eq(w.n, 1);
	snprintf(want, sizeof(want), "HOLDER %llu exclusive lockd=" B_NAME " client=%s session=-",
	         fe, addr_b2);
	held_line(w.line[0], want, NOT_ANY);
	cl_close(a);
	cl_close(b);
	cl_close(a2);
	cl_close(b2);
}
END_TEST

/* A resumable session: its id (never its secret) while attached, client
 * "-" while detached, and on the lockd that adopted it, held_ms since the
 * adoption and the same fence. */
START_TEST(who_sessions)
{
	two_lockd();
	struct cl *s = cl_tcp(h_lockd(0)->port), *a = cl_tcp(h_lockd(0)->port);
	struct cl *b = cl_tcp(h_lockd(1)->port);
	struct who_reply w;
	struct sess ss;
	char want[600], addr[64];

	session(s, "SESSION GRACE 20000", 20000, &ss);
	unsigned long long f = cl_lock(s, "LOCK nightly");
	addr_of(s, addr, sizeof(addr));
	who(a, "nightly", &w);
	ck_assert_int_eq(w.n, 1);
	snprintf(want, sizeof(want), "HOLDER %llu exclusive lockd=%s client=%s session=%s", f,
	         a_name, addr, ss.id);
	held_line(w.line[0], want, NOT_ANY);
	ck_assert_ptr_null(strstr(w.line[0], ss.secret));

	/* detached: no client, the session still there */
	blip(s);
	snprintf(want, sizeof(want), "HOLDER %llu exclusive lockd=%s client=- session=%s", f,
	         a_name, ss.id);
	for (int t = 0;; t++) {
		who(a, "nightly", &w);
		ck_assert_int_eq(w.n, 1);
		if (strncmp(w.line[0], want, strlen(want)) == 0)
			break;
		ck_assert_msg(t < 100, "still '%s' 1 s after the connection ended", w.line[0]);
		h_sleep_ms(10);
	}
	held_line(w.line[0], want, NOT_ANY);

	/* resumed on B: B's now, since the adoption; A sees B's name */
	h_sleep_ms(300);
	struct cl *r = cl_tcp(h_lockd(1)->port);
	double t0 = h_now_ms();
	resume(r, &ss, "OK 1");
	addr_of(r, addr, sizeof(addr));
	who(b, "nightly", &w);
	ck_assert_int_eq(w.n, 1);
	snprintf(want, sizeof(want), "HOLDER %llu exclusive lockd=" B_NAME " client=%s session=%s",
	         f, addr, ss.id);
	held_line(w.line[0], want, (long)(h_now_ms() - t0) + 1);
	who(a, "nightly", &w);
	ck_assert_int_eq(w.n, 1);
	elsewhere(w.line[0], "exclusive lockd=" B_NAME, f, "nightly", 7);
	cl_expect(r, "QUIT", "OK");
	cl_close(r);
	cl_close(a);
	cl_close(b);
}
END_TEST

/* What only the masters hold: tokens of no lockd that wrote a name (on a
 * majority: shown, lockd=-; on a minority: not a hold). */
START_TEST(who_unknown_lockd)
{
	two_lockd();
	struct cl *a = cl_tcp(h_lockd(0)->port);
	struct who_reply w;
	char want[300];
	const char *tok = "00c0ffee00c0ffee0123456789a00003"; /* n = 3, but no name */
	const char *minor = "00baddad00baddad0123456789a00000";
	for (int i = 0; i < 2; i++) {
		set_on(i, "lockd:ghost", tok);
		set_on(i, "lockd:ghost permit 2", tok);
		set_on(i, "lockd:ghost fence", "77");
	}
	set_on(2, "lockd:ghost permit 1", minor);
	set_on(2, "lockd:ghost fence", "78");
	who(a, "ghost", &w);
	ck_assert_int_eq(w.n, 2);
	ck_assert_str_eq(w.line[0], "HOLDER 78 exclusive lockd=-");
	ck_assert_str_eq(w.line[1], "HOLDER 78 permit=2/- lockd=-");
	/* once the masters know its name, its n counts */
	set_on(1, "lockd: name 00c0ffee00c0ffee", "old-one");
	who(a, "ghost", &w);
	ck_assert_int_eq(w.n, 2);
	ck_assert_str_eq(w.line[0], "HOLDER 78 permit=0/3 lockd=old-one");
	snprintf(want, sizeof(want), "HOLDER 78 permit=2/3 lockd=old-one");
	ck_assert_str_eq(w.line[1], want);
	cl_close(a);
}
END_TEST

/* limits.max_permits 3000: permits 1 .. 2999 are read in three calls per
 * master, one after the other (no master is dropped for them), and every
 * permit held is found, at the edges of the calls too. */
START_TEST(who_many_permits)
{
	h_masters_start(3);
	h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .limits = "  max_permits: 3000\n"});
	struct cl *a = cl_open();
	struct who_reply w;
	static const char *const at[] = {"1023", "1024", "1025", "2048", "2049", "2999", "3000"};
	const char *tok = "0badcafe0badcafe0123456789a00bb8"; /* PERMITS 3000 */
	char rk[64], want[200];
	for (int i = 0; i < 2; i++) {
		for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
			snprintf(rk, sizeof(rk), "lockd:sem permit %s", at[k]);
			set_on(i, rk, tok);
		}
		set_on(i, "lockd:sem fence", "5");
	}
	set_on(2, "lockd: name 0badcafe0badcafe", "lockd-z");
	long off = h_file_size(h_lockd(0)->log);
	who(a, "sem", &w);
	ck_assert_int_eq(w.n, 6); /* 3000 is not a permit of PERMITS 3000 */
	for (int k = 0; k < 6; k++) {
		snprintf(want, sizeof(want), "HOLDER 5 permit=%s/3000 lockd=lockd-z", at[k]);
		ck_assert_str_eq(w.line[k], want);
	}
	ck_assert_int_eq(h_file_count(h_lockd(0)->log, off, " down", NULL), 0);
	cl_close(a);
}
END_TEST

/* Masters stopped: one (a majority still answers, names included), two
 * (ERR QUORUM, within the service level); and a master that restarted
 * empty gets both names again. */
START_TEST(who_masters_down)
{
	two_lockd();
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	struct who_reply w;
	char want[600], addr[64];
	unsigned long long f = cl_lock(b, "LOCK batch");
	addr_of(b, addr, sizeof(addr));

	h_master_stop(2);
	double t0 = h_now_ms();
	who(a, "batch", &w);
	double ms = h_now_ms() - t0;
	ck_assert_msg(ms < H_SLOW_LIMIT, "WHO took %.0f ms with a master stopped", ms);
	ck_assert_int_eq(w.n, 1);
	elsewhere(w.line[0], "exclusive lockd=" B_NAME, f, "batch", 3);
	who(b, "batch", &w);
	ck_assert_int_eq(w.n, 1);
	snprintf(want, sizeof(want), "HOLDER %llu exclusive lockd=" B_NAME " client=%s session=-",
	         f, addr);
	held_line(w.line[0], want, NOT_ANY);

	h_master_stop(1);
	t0 = h_now_ms();
	cl_expect(a, "WHO batch", QUORUM);
	ms = h_now_ms() - t0;
	ck_assert_msg(ms < H_SLOW_LIMIT, "ERR QUORUM took %.0f ms", ms);
	cl_expect(a, "WHO free-key", QUORUM);
	h_master_cont(1);
	h_master_cont(2);

	/* master 0 restarts empty: each lockd writes its name there again */
	h_master_restart(0);
	char *names = NULL;
	for (int t = 0; t < 500; t++) {
		free(names);
		names =
		    h_redis(0, "EVAL",
		            "local r = {} for _, k in ipairs(redis.call('KEYS', 'lockd: name *')) "
		            "do r[#r + 1] = redis.call('GET', k) end table.sort(r) return r",
		            "0", NULL);
		if (names && strchr(names, '\n') && strchr(strchr(names, '\n') + 1, '\n'))
			break;
		h_sleep_ms(20);
	}
	char expect[700];
	snprintf(expect, sizeof(expect), "%s\n%s\n", strcmp(a_name, B_NAME) < 0 ? a_name : B_NAME,
	         strcmp(a_name, B_NAME) < 0 ? B_NAME : a_name);
	ck_assert_ptr_nonnull(names);
	ck_assert_str_eq(names, expect);
	free(names);
	cl_close(a);
	cl_close(b);
}
END_TEST

/* Three masters, and two lockd that each lost a different one: A (its
 * proxy to master 2 cut) and B (its proxy to master 0 cut). Returns once
 * each says so. */
static void split_views(int *la, int *lb)
{
	h_masters_start(3);
	struct h_proxy *pa = h_proxy_start(h_master(2)->port);
	struct h_proxy *pb = h_proxy_start(h_master(0)->port);
	int via_a[3] = {0, 0, h_proxy_port(pa)}, via_b[3] = {h_proxy_port(pb), 0, 0};
	*la = h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .via = via_a});
	*lb = h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .via = via_b});
	struct cl *a = cl_tcp(h_lockd(*la)->port), *b = cl_tcp(h_lockd(*lb)->port);
	h_proxy_stop(pa);
	h_proxy_stop(pb);
	cl_wait_stat(a, "master.2.state", "down", H_SLOW_LIMIT);
	cl_wait_stat(b, "master.0.state", "down", H_SLOW_LIMIT);
	cl_close(a);
	cl_close(b);
}

/* Two lockd that each lost a different master: A (via a proxy to master
 * 2) holds keys on masters 0 and 1, B (via a proxy to master 0) reads
 * masters 1 and 2. A hold on a majority is on at least one master of any
 * majority, so B must report what A holds: STATUS HELD, SHARED with both
 * readers, PERMITS 2, and WHO the holder, not FREE and END (Java's
 * sharedAndPermits found this after two masters came back at different
 * times for its two lockd). */
START_TEST(reads_partial_view)
{
	int la, lb;
	split_views(&la, &lb);
	struct cl *a = cl_tcp(h_lockd(la)->port), *a2 = cl_tcp(h_lockd(la)->port);
	struct cl *b = cl_tcp(h_lockd(lb)->port);

	unsigned long long f = cl_lock(a, "LOCK x");
	cl_lock(a, "LOCK s SHARED");
	cl_lock(a2, "LOCK s SHARED");
	cl_lock(a, "LOCK p PERMITS 3");
	cl_lock(a2, "LOCK p PERMITS 3");
	ck_assert_int_eq(h_masters_with_pttl(3, "lockd:x", NULL, NULL), 2);
	long long absent = h_redis_int(2, "EXISTS", "lockd:x", NULL);
	ck_assert_int_eq(absent, 0); /* B hears one master that has it */

	long long ttl = 0, waiters = -1;
	const char *got = cl_cmd(b, "STATUS x", H_SLOW_LIMIT);
	ck_assert_msg(got && strncmp(got, "HELD ", 5) == 0, "STATUS x on B: '%s'", got ? got : "");
	ck_assert_msg(sscanf(got + 5, "%lld %lld", &ttl, &waiters) == 2 && ttl > 0 &&
	                  ttl <= LEASE && waiters == 0,
	              "STATUS x on B: '%s'", got);
	got = cl_cmd(b, "STATUS s", H_SLOW_LIMIT);
	ck_assert_msg(got && strncmp(got, "SHARED 2 ", 9) == 0, "STATUS s on B: '%s'",
	              got ? got : "");
	cl_expect(b, "STATUS p PERMITS 3", "PERMITS 2 3 0");
	struct who_reply w;
	who(b, "x", &w);
	ck_assert_int_eq(w.n, 1);
	char want[64];
	snprintf(want, sizeof(want), "HOLDER %llu exclusive ", f);
	ck_assert_msg(strncmp(w.line[0], want, strlen(want)) == 0, "WHO x on B: '%s'", w.line[0]);

	/* Once A has released it, B reads it free again. */
	cl_expect(a, "UNLOCK x", "OK 0");
	cl_expect(b, "STATUS x", "FREE");
	who(b, "x", &w);
	ck_assert_int_eq(w.n, 0);
	cl_close(a);
	cl_close(a2);
	cl_close(b);
}
END_TEST

/* The same two lockd, for LEADER and OBSERVE. A's leader is on masters 0
 * and 1; B reads it on master 1 only, which a failed campaign's leftover
 * could be too: B must not name it (a leftover is never a leader) and
 * must not say NONE either (PROTOCOL 1.3: after PROCLAIM answered OK,
 * every later LEADER answers the new value). It cannot tell, and says
 * so; once A resigned, it can again. */
START_TEST(leader_partial_view)
{
	int la, lb;
	split_views(&la, &lb);
	struct cl *a = cl_tcp(h_lockd(la)->port), *b = cl_tcp(h_lockd(lb)->port);
	struct cl *ob = cl_tcp(h_lockd(lb)->port);

	unsigned long long f = cl_lock(a, "CAMPAIGN e node-a");
	char want[64];
	snprintf(want, sizeof(want), "LEADER %llu node-a", f);
	cl_expect(a, "LEADER e", want);
	ck_assert_int_eq(h_masters_with_pttl(3, "lockd:e", NULL, NULL), 2);
	cl_expect(b, "LEADER e", UNSURE);
	cl_expect(ob, "OBSERVE e", "OK");
	cl_expect(a, "PROCLAIM e node-a2", "OK");
	cl_expect(b, "LEADER e", UNSURE);
	/* no event on B's observer: NOLEADER would be false, ELECTED a guess */
	cl_send(ob, "LEADER e\n");
	const char *got = cl_line(ob, H_SLOW_LIMIT);
	ck_assert_msg(got && strcmp(got, UNSURE) == 0, "B's observer: '%s'", got ? got : "");
	/* nor from the observer's read again, lease/3 later */
	cl_silence(ob, LEASE / 3 + 500);
	ck_assert_msg(ob->nlost == 0, "B's observer got '%s'", ob->lost[0]);
	char *n = cl_stat(b, "unsure_reads");
	ck_assert_msg(n && atoll(n) >= 4, "unsure_reads on B: %s", n ? n : "-");
	free(n);

	cl_expect(a, "RESIGN e", "OK");
	cl_expect(b, "LEADER e", "NONE");
	/* the observer's read, tried again every lease/3, now can tell */
	got = cl_line(ob, LEASE / 3 + H_SLOW_LIMIT);
	ck_assert_msg(got && strcmp(got, "NOLEADER e") == 0, "B's observer: '%s'", got ? got : "");
	cl_close(a);
	cl_close(b);
	cl_close(ob);
}
END_TEST

/* Two readers of one key, granted on different majorities: A's (masters
 * 0 and 1, its proxy to master 2 cut) and B's (1 and 2, its proxy to
 * master 0 cut). C hears all three masters; their counts are 1, 2 and
 * 1, a majority has one at least, but two sessions hold it: STATUS
 * counts the holders that a majority lists, SHARED 2. */
START_TEST(status_shared_spread)
{
	int la, lb;
	split_views(&la, &lb);
	int lc = h_lockd_start(&(struct h_opts){.lease_ms = LEASE});
	struct cl *a = cl_tcp(h_lockd(la)->port), *b = cl_tcp(h_lockd(lb)->port);
	struct cl *c = cl_tcp(h_lockd(lc)->port);

	cl_lock(a, "LOCK s SHARED");
	cl_lock(b, "LOCK s SHARED");
	ck_assert_int_eq(h_redis_int(0, "ZCARD", "lockd:s shared", NULL), 1);
	ck_assert_int_eq(h_redis_int(1, "ZCARD", "lockd:s shared", NULL), 2);
	ck_assert_int_eq(h_redis_int(2, "ZCARD", "lockd:s shared", NULL), 1);
	const char *got = cl_cmd(c, "STATUS s", H_SLOW_LIMIT);
	ck_assert_msg(got && strncmp(got, "SHARED 2 ", 9) == 0, "STATUS s on C: '%s'",
	              got ? got : "");
	/* one of them gone: one left, on a majority */
	cl_expect(a, "UNLOCK s", "OK 0");
	got = cl_cmd(c, "STATUS s", H_SLOW_LIMIT);
	ck_assert_msg(got && strncmp(got, "SHARED 1 ", 9) == 0, "STATUS s on C: '%s'",
	              got ? got : "");
	cl_close(a);
	cl_close(b);
	cl_close(c);
}
END_TEST

TCase *tc_who(void)
{
	TCase *tc = tcase_create("who");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, who_exclusive);
	H_ADD(tc, who_shared_permits_leader);
	H_ADD(tc, who_sessions);
	H_ADD(tc, who_unknown_lockd);
	H_ADD(tc, who_many_permits);
	H_ADD(tc, who_masters_down);
	H_ADD(tc, reads_partial_view);
	H_ADD(tc, leader_partial_view);
	H_ADD(tc, status_shared_spread);
	return tc;
}
