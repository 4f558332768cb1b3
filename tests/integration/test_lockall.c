/* lockall: LOCKALL n key1 ... keyn (protocol 1.4) end to end, on two
 * lockd over three real masters. Exact reply lines: parse errors; all or
 * nothing (a key held on the other lockd or on this one, WAIT 0 and a
 * WAIT that runs out: TIMEOUT, no key held, counts of keys held before
 * unchanged); reentrant keys; fences in the order given and each key then
 * an ordinary hold; two LOCKALLs of k1 k2 and k2 k1 at once on two lockd,
 * granted in turn; a load of overlapping LOCKALLs in random order on both
 * lockd with a checker of the history; the client leaving mid-request;
 * the STATS fields. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "sess_util.h"

#define LEASE  3000
#define BAD_N  "ERR ARG n must be 1 to limits.max_keys"
#define KEYBAD "ERR KEY key must be printable ASCII (0x21-0x7E)"
#define SHARED "ERR ARG cannot upgrade a shared hold"

static void two_lockd(void)
{
	h_masters_start(3);
	h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .limits = "  max_line: 20000\n"});
	h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .limits = "  max_line: 20000\n"});
}

/* "OK f1 ... fn": the fences (n of them, each > 0), or the test fails. */
static void fences_at(const char *file, int line, const char *got, int n, unsigned long long *f)
{
	const char *p = got;
	int k = 0, used = 0;
	if (!got || strncmp(got, "OK", 2) != 0)
		h_fail_at(file, line, "expected OK and %d fences, got '%s'", n,
		          got ? got : "(none)");
	p += 2;
	while (k < n && sscanf(p, " %llu%n", &f[k], &used) == 1 && f[k] > 0) {
		p += used;
		k++;
	}
	if (k != n || *p)
		h_fail_at(file, line, "expected OK and %d fences, got '%s'", n, got);
}
#define fences(g, n, f) fences_at(__FILE__, __LINE__, (g), (n), (f))

/* The line HELD gives of key ("KEY key fence holds ttl"): fence and holds. */
static void held_of(struct cl *c, const char *key, unsigned long long *fence, long long *holds)
{
	const char *l = cl_cmd(c, "HELD", H_TMO);
	*fence = 0;
	*holds = 0;
	char k[300];
	unsigned long long f;
	long long h, t;
	/* "KEY key fence holds ttl_ms", with " SHARED" or " PERMIT i" after
	 * it for those: the first four words are the same */
	while (l && strcmp(l, "END") != 0) {
		if (sscanf(l, "KEY %299s %llu %lld %lld", k, &f, &h, &t) == 4 && !strcmp(k, key)) {
			*fence = f;
			*holds = h;
		}
		l = cl_line(c, H_TMO);
	}
	ck_assert_ptr_nonnull(l);
}

START_TEST(lockall_parse)
{
	h_masters_start(3);
	h_lockd_start(&(struct h_opts){.lease_ms = LEASE});
	struct cl *a = cl_open();
	char req[5000];

	cl_expect(a, "LOCKALL", "ERR PROTOCOL missing key count");
	cl_expect(a, "LOCKALL x k", BAD_N);
	cl_expect(a, "LOCKALL -1 k", BAD_N);
	cl_expect(a, "LOCKALL 0", BAD_N);
	cl_expect(a, "LOCKALL 0 WAIT 5", BAD_N);
	cl_expect(a, "LOCKALL 3 a b", "ERR PROTOCOL missing key");
	cl_expect(a, "LOCKALL 99999999999999999999999 a", "ERR PROTOCOL missing key");
	cl_expect(a, "LOCKALL 1 a b", "ERR PROTOCOL unknown option");
	cl_expect(a, "LOCKALL 1 a WAIT", "ERR PROTOCOL missing option value");
	cl_expect(a, "LOCKALL 1 a WAIT 1 WAIT 2", "ERR PROTOCOL option given twice");
	cl_expect(a, "LOCKALL 1 a SHARED", "ERR PROTOCOL unknown option");
	/* syntax before values: the count is fine digits above the limit */
	cl_expect(a, "LOCKALL 65 a", "ERR PROTOCOL missing key");
	cl_expect(a, "LOCKALL 2 a a", "ERR ARG key given twice");
	cl_expect(a, "LOCKALL 3 a b\x7f a", KEYBAD);
	cl_expect(a, "LOCKALL 2 b a WAIT x", "ERR ARG WAIT must be 0 to 2147483647 ms");
	cl_expect(a, "LOCKALL 1 a TTL 0", "ERR ARG TTL must be 1 to 2147483647 ms");
	cl_expect(a, "LOCKALL 1 a DELAY -1", "ERR ARG DELAY must be 0 to 2147483647 ms");
	cl_expect(a, "LOCKALL 1 a TTL 0 WAIT x", "ERR ARG TTL must be 1 to 2147483647 ms");
	/* 65 keys: over limits.max_keys (64) */
	int o = snprintf(req, sizeof(req), "LOCKALL 65");
	for (int i = 0; i < 65; i++)
		o += snprintf(req + o, sizeof(req) - (size_t)o, " k%d", i);
	cl_expect(a, req, BAD_N);
	/* a key too long */
	o = snprintf(req, sizeof(req), "LOCKALL 1 ");
	memset(req + o, 'k', 257);
	req[o + 257] = '\0';
	cl_expect(a, req, "ERR KEY key is too long");
	/* the n words after n are keys, whatever they spell */
	unsigned long long f[64];
	fences(cl_cmd(a, "lockall 2 WAIT 5 wait 0", H_TMO), 2, f);
	cl_expect_held(a, "5 WAIT");
	cl_expect(a, "UNLOCK WAIT", "OK 0");
	cl_expect(a, "UNLOCK 5", "OK 0");
	cl_close(a);
}
END_TEST

START_TEST(lockall_all_or_nothing)
{
	two_lockd();
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	struct cl *c = cl_tcp(h_lockd(0)->port);
	unsigned long long f1 = cl_lock(a, "LOCK k1"), fb = cl_lock(b, "LOCK k2"), fence;
	long long holds;

	/* k2 held on the other lockd: one attempt, TIMEOUT, nothing taken */
	cl_expect(a, "LOCKALL 3 k3 k2 k1 WAIT 0", "TIMEOUT");
	cl_expect_held(a, "k1");
	held_of(a, "k1", &fence, &holds);
	ck_assert_uint_eq(fence, f1);
	ck_assert_int_eq(holds, 1);
	/* a WAIT that runs out: TIMEOUT no sooner, nothing taken */
	double ms;
	char *r = cl_timed(a, "LOCKALL 3 k0 k2 k4 WAIT 400", &ms);
	ck_assert_str_eq(r, "TIMEOUT");
	free(r);
	ck_assert_msg(ms >= 390 && ms < 400 + H_SLOW_LIMIT, "TIMEOUT after %.0f ms", ms);
	cl_expect_held(a, "k1");
	/* the same with the key held on this lockd */
	cl_expect(b, "UNLOCK k2", "OK 0");
	cl_lock(c, "LOCK k2");
	cl_expect(a, "LOCKALL 2 k2 k1 WAIT 0", "TIMEOUT");
	r = cl_timed(a, "LOCKALL 2 k5 k2 WAIT 300", &ms);
	ck_assert_str_eq(r, "TIMEOUT");
	free(r);
	cl_expect_held(a, "k1");
	held_of(a, "k1", &fence, &holds);
	ck_assert_int_eq(holds, 1);
	/* the keys it took meanwhile went back: others may take them */
	cl_expect_prefix(b, "LOCK k0 WAIT 2000", "OK ");
	cl_expect_prefix(b, "LOCK k5 WAIT 2000", "OK ");
	/* once the holder lets go, it gets them all */
	cl_send(a, "LOCKALL 2 k2 k1 WAIT 5000\n");
	cl_silence(a, 200);
	cl_expect(c, "UNLOCK k2", "OK 0");
	unsigned long long f[2];
	fences(cl_reply(a, H_SLOW_LIMIT), 2, f);
	ck_assert_uint_gt(f[0], fb);
	ck_assert_uint_eq(f[1], f1);
	cl_expect(a, "UNLOCK k1", "OK 1");
	cl_expect(a, "UNLOCK k1", "OK 0");
	cl_expect(a, "UNLOCK k2", "OK 0");
	ck_assert_str_eq(r = cl_stat(a, "lockall_timeouts"), "4");
	free(r);
	ck_assert_str_eq(r = cl_stat(a, "lockall_granted"), "1");
	free(r);
	ck_assert_str_eq(r = cl_stat(a, "timeouts"), "0");
	free(r);
	cl_close(a);
	cl_close(b);
	cl_close(c);
}
END_TEST

START_TEST(lockall_reentrant_and_holds)
{
	two_lockd();
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	unsigned long long fx = cl_lock(a, "LOCK x"), fence, f[3];
	long long holds;
	char want[200];

	/* fences in the order given; x reentrant: same fence, one more hold */
	fences(cl_cmd(a, "LOCKALL 3 z x y TTL 60000", H_TMO), 3, f);
	ck_assert_uint_eq(f[1], fx);
	held_of(a, "x", &fence, &holds);
	ck_assert_int_eq(holds, 2);
	held_of(a, "z", &fence, &holds);
	ck_assert_uint_eq(fence, f[0]);
	ck_assert_int_eq(holds, 1);
	held_of(a, "y", &fence, &holds);
	ck_assert_uint_eq(fence, f[2]);
	/* each key is then an ordinary hold: STATUS, EXTEND, UNLOCK */
	long long ttl, w;
	ck_assert_int_eq(cl_status(b, "z", &ttl, &w), 1);
	cl_expect(a, "EXTEND y 30000", "OK");
	cl_expect(a, "EXTEND x 30000",
	          "ERR ARG EXTEND is for TTL locks; this lock is renewed by lockd");
	cl_expect(a, "UNLOCK x", "OK 1");
	cl_expect(a, "UNLOCK z", "OK 0");
	cl_expect_held(a, "x y");
	cl_expect(b, "TRYLOCK y", "BUSY");
	/* a key held shared or by a permit: ERR ARG, as LOCK, nothing taken */
	cl_lock(a, "LOCK s SHARED");
	cl_expect(a, "LOCKALL 2 t s", SHARED);
	cl_lock(a, "LOCK p PERMITS 3");
	cl_lock(b, "LOCK q PERMITS 3");
	cl_lock(a, "LOCK q PERMITS 3");
	snprintf(want, sizeof(want), "ERR ARG holds permit 1 of q");
	cl_expect(a, "LOCKALL 3 t q p", want);
	held_of(a, "t", &fence, &holds); /* HELD's shared and permit lines: see held_of */
	ck_assert_uint_eq(fence, 0);
	/* permit 0 is the key's lock: reentrant */
	fences(cl_cmd(a, "LOCKALL 2 t p", H_TMO), 2, f);
	held_of(a, "p", &fence, &holds);
	ck_assert_int_eq(holds, 2);
	/* a TTL the drift allowance would use up: ERR ARG, as LOCK */
	cl_expect(a, "LOCKALL 1 u TTL 1",
	          "ERR ARG TTL is shorter than the clock drift margin (2 ms + locks.drift_factor)");
	cl_close(a);
	cl_close(b);
}
END_TEST

/* LOCKALL k1 k2 on A and LOCKALL k2 k1 on B, sent at once: both granted
 * in turn, round after round. */
START_TEST(lockall_no_deadlock_two_lockd)
{
	two_lockd();
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	for (int round = 0; round < 8; round++) {
		unsigned long long fa[2], fb[2];
		cl_send(a, "LOCKALL 2 k1 k2 WAIT 10000\n");
		cl_send(b, "LOCKALL 2 k2 k1 WAIT 10000\n");
		/* whichever is first holds both while the other waits */
		struct cl *first = NULL, *second = NULL;
		double t0 = h_now_ms();
		while (!first && h_now_ms() - t0 < 5000) {
			if (cl_fill(a) > 0 || cl_queued(a))
				first = a, second = b;
			else if (cl_fill(b) > 0 || cl_queued(b))
				first = b, second = a;
			else
				h_sleep_ms(2);
		}
		ck_assert_msg(first != NULL, "round %d: neither LOCKALL was granted", round);
		fences(cl_reply(first, H_TMO), 2, first == a ? fa : fb);
		cl_silence(second, 50);
		ck_assert_int_eq((int)cl_queued(second), 0);
		cl_expect(first, "UNLOCK k1", "OK 0");
		cl_expect(first, "UNLOCK k2", "OK 0");
		fences(cl_reply(second, H_SLOW_LIMIT + 1000), 2, second == a ? fa : fb);
		/* fences grow with every grant of a key */
		unsigned long long k1_first = first == a ? fa[0] : fb[1];
		unsigned long long k1_second = first == a ? fb[1] : fa[0];
		ck_assert_uint_gt(k1_second, k1_first);
		cl_expect(second, "UNLOCK k1", "OK 0");
		cl_expect(second, "UNLOCK k2", "OK 0");
	}
	cl_close(a);
	cl_close(b);
}
END_TEST

/* The client leaves while its LOCKALL waits: the keys it took go back. */
START_TEST(lockall_client_leaves)
{
	two_lockd();
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	struct cl *c = cl_tcp(h_lockd(0)->port);
	cl_lock(b, "LOCK m2");
	cl_send(a, "LOCKALL 3 m1 m2 m3\n");
	cl_wait_waiters(c, "m2", 1, 2000);
	long long ttl, w;
	ck_assert_int_eq(cl_status(c, "m1", &ttl, &w), 1); /* held while it waits */
	/* m3, above the key it waits for, went back */
	cl_expect_prefix(c, "LOCK m3 WAIT 2000", "OK ");
	cl_close(a);
	/* m1 goes back within a second of the session's end */
	cl_expect_prefix(c, "LOCK m1 WAIT 1500", "OK ");
	cl_close(b);
	cl_close(c);
}
END_TEST

/* A resumable session's LOCKALL: the keys go in its record, a reentrant
 * key's count too; the session resumed on the other lockd has them all,
 * with their fences and counts. */
START_TEST(lockall_resume)
{
	two_lockd();
	struct cl *a = cl_tcp(h_lockd(0)->port);
	struct sess se;
	unsigned long long f[3];
	session(a, "SESSION GRACE 5000", 5000, &se);
	unsigned long long fr = cl_lock(a, "LOCK r2");
	fences(cl_cmd(a, "LOCKALL 3 r3 r2 r1", H_TMO), 3, f);
	ck_assert_uint_eq(f[1], fr);
	expect_held(a, "KEY r1 %llu 1 * | KEY r2 %llu 2 * | KEY r3 %llu 1 *", f[2], fr, f[0]);
	blip(a); /* closes a */
	struct cl *b = cl_tcp(h_lockd(1)->port);
	resume(b, &se, "OK 3");
	expect_held(b, "KEY r1 %llu 1 * | KEY r2 %llu 2 * | KEY r3 %llu 1 *", f[2], fr, f[0]);
	cl_expect(b, "UNLOCK r2", "OK 1");
	cl_expect(b, "UNLOCK r2", "OK 0");
	cl_expect(b, "UNLOCK r1", "OK 0");
	/* all or nothing for a resumable session too */
	struct cl *c = cl_tcp(h_lockd(0)->port);
	cl_lock(c, "LOCK r4");
	cl_expect(b, "LOCKALL 3 r3 r4 r5 WAIT 0", "TIMEOUT");
	expect_held(b, "KEY r3 %llu 1 *", f[0]);
	cl_close(b);
	cl_close(c);
}
END_TEST

/* A key the request took is lost while it waits for a later one (its TTL
 * lapses): LOST is sent, the key is taken again, and OK comes only with
 * every key held. */
START_TEST(lockall_lost_while_waiting)
{
	two_lockd();
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	unsigned long long f[2];
	cl_lock(b, "LOCK w2");
	cl_send(a, "LOCKALL 2 w2 w1 TTL 300 WAIT 5000\n");
	/* w1 is granted first (the smaller), then lapses while w2 is held */
	const char *l = cl_line(a, 1000);
	ck_assert_ptr_nonnull(l);
	ck_assert_msg(strncmp(l, "LOST w1 ", 8) == 0, "expected LOST w1, got '%s'", l);
	unsigned long long lost = strtoull(l + 8, NULL, 10);
	cl_expect(b, "UNLOCK w2", "OK 0");
	fences(cl_reply(a, H_SLOW_LIMIT), 2, f);
	ck_assert_uint_gt(f[1], lost);
	long long ttl, w;
	ck_assert_int_eq(cl_status(b, "w1", &ttl, &w), 1);
	ck_assert_int_eq(cl_status(b, "w2", &ttl, &w), 1);
	cl_close(a);
	cl_close(b);
}
END_TEST

/* lockctl lockall: the reply as lockd sends it, TIMEOUT on stderr (exit 1). */
START_TEST(lockall_lockctl)
{
	two_lockd();
	struct cl *b = cl_tcp(h_lockd(1)->port);
	char port[16];
	snprintf(port, sizeof(port), "%d", h_lockd(0)->port);
	const char *ok[] = {"-p", port, "lockall", "2", "WAIT", "lc", "WAIT", "3000", NULL};
	struct h_lockctl p;
	h_lockctl_spawn(&p, ok);
	ck_assert_int_eq(h_lockctl_wait(&p, 15000), 0);
	char *out = h_slurp(p.out);
	unsigned long long f[2];
	ck_assert_ptr_nonnull(out);
	ck_assert_msg(strlen(out) > 0 && out[strlen(out) - 1] == '\n', "lockctl: '%s'", out);
	out[strlen(out) - 1] = '\0';
	fences(out, 2, f);
	free(out);
	cl_lock(b, "LOCK lc");
	const char *busy[] = {"-p", port, "lockall", "2", "lc2", "lc", "WAIT", "300", NULL};
	h_lockctl_spawn(&p, busy);
	ck_assert_int_eq(h_lockctl_wait(&p, 15000), 1);
	char *err = h_slurp(p.err);
	ck_assert_ptr_nonnull(err);
	ck_assert_str_eq(err, "TIMEOUT\n");
	free(err);
	cl_close(b);
}
END_TEST

/* SIGTERM while a LOCKALL waits holding one of its keys: LOST for it,
 * then ERR SHUTDOWN, as a waiting LOCK; the masters keep none of it. */
START_TEST(lockall_sigterm)
{
	two_lockd();
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	struct cl *s = cl_tcp(h_lockd(0)->port);
	cl_lock(b, "LOCK z2");
	cl_send(a, "LOCKALL 2 z2 z1\n");
	cl_wait_waiters(s, "z2", 1, 2000);
	h_lockd_signal(0, SIGTERM);
	cl_want_prefix(a, "ERR SHUTDOWN", 3000);
	ck_assert_int_eq(a->nlost, 1);
	ck_assert_msg(strncmp(a->lost[0], "LOST z1 ", 8) == 0, "got '%s'", a->lost[0]);
	ck_assert_msg(h_lockd_wait(0, 5000) != -1, "lockd still running 5 s after SIGTERM");
	cl_expect(b, "STATUS z1", "FREE");
	cl_close(a);
	cl_close(b);
	cl_close(s);
}
END_TEST

/* 64 keys of 256 bytes: the request needs a limits.max_line of 16.5 KB
 * (the default 4096 answers ERR PROTOCOL line too long and closes). */
START_TEST(lockall_64_long_keys)
{
	h_masters_start(3);
	h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .limits = "  max_line: 16896\n"});
	h_lockd_start(&(struct h_opts){.lease_ms = LEASE});
	static char req[20000];
	int o = snprintf(req, sizeof(req), "LOCKALL 64");
	for (int i = 0; i < 64; i++) {
		o += snprintf(req + o, sizeof(req) - (size_t)o, " %02d", i);
		memset(req + o, 'k', 254);
		o += 254;
	}
	o += snprintf(req + o, sizeof(req) - (size_t)o, " WAIT 5000 TTL 60000 DELAY 0");
	ck_assert_int_le(o, 16896);
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	unsigned long long f[64];
	char *r = cl_stat(a, "grants"); /* the harness's own probe may count */
	long before = strtol(r, NULL, 10);
	free(r);
	fences(cl_cmd(a, req, H_SLOW_LIMIT), 64, f);
	/* each key's fence, in the order given (two keys may share a fence:
	 * each is its key's own) */
	for (int i = 0; i < 64; i++) {
		char fk[300];
		snprintf(fk, sizeof(fk), "lockd:%02d%.*s fence", i, 254,
		         "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
		         "kkkkkkkkkkkkkk"
		         "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
		         "kkkkkkkkkkkkkk"
		         "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
		         "kkkkkkkkkkkkkk");
		/* the fence a majority of the masters hold, none above it: a
		 * master whose clock read the key's first fence in the 100 ms
		 * before the others (scripts.c, FENCE_START_US) may lag until a
		 * write-back raises it */
		int same = 0;
		for (int m = 0; m < 3; m++) {
			long long v = h_redis_int(m, "GET", fk, NULL);
			ck_assert_msg(v <= (long long)f[i],
			              "key %d: master %d's counter %lld above %llu", i, m, v, f[i]);
			same += v == (long long)f[i];
		}
		ck_assert_msg(same >= 2, "key %d: fence %llu on %d master(s)", i, f[i], same);
	}
	r = cl_stat(a, "lockall_granted");
	ck_assert_str_eq(r, "1");
	free(r);
	r = cl_stat(a, "grants"); /* each key a grant */
	ck_assert_int_eq(strtol(r, NULL, 10) - before, 64);
	free(r);
	cl_expect(b, req, "ERR PROTOCOL line too long");
	cl_want_eof(b, H_TMO);
	cl_close(a);
	cl_close(b);
}
END_TEST

/* The session moves to the other lockd (RESUME there) while its LOCKALL
 * waits here: the key it took is in its record, adopted there, and this
 * lockd forgets it without releasing it. */
START_TEST(lockall_session_moves)
{
	two_lockd();
	struct cl *a = cl_tcp(h_lockd(0)->port), *b = cl_tcp(h_lockd(1)->port);
	struct cl *s = cl_tcp(h_lockd(0)->port);
	struct sess se;
	cl_lock(b, "LOCK n2");
	session(a, "SESSION GRACE 5000", 5000, &se);
	cl_send(a, "LOCKALL 2 n2 n1\n");
	cl_wait_waiters(s, "n2", 1, 2000);
	struct cl *c = cl_tcp(h_lockd(1)->port);
	resume(c, &se, "OK 1");
	cl_want_eof(a, LEASE / 3 + H_SLOW_LIMIT);
	/* lockd 0 dropped the session: n1 stays the adopted hold's */
	cl_wait_waiters(s, "n2", 0, 2000);
	cl_expect(b, "TRYLOCK n1", "BUSY");
	h_sleep_ms(300);
	cl_expect(b, "TRYLOCK n1", "BUSY");
	cl_expect(c, "UNLOCK n1", "OK 0");
	cl_expect_prefix(b, "LOCK n1 WAIT 2000", "OK ");
	cl_close(a);
	cl_close(b);
	cl_close(c);
	cl_close(s);
}
END_TEST

/* --- a load of overlapping LOCKALLs in random order on both lockd --- */

#define NKIDS     6 /* the last NLOCKERS take one key at a time with LOCK */
#define NLOCKERS  2
#define NKEYS     5
#define LOAD_MS   3000
#define LOAD_WAIT 10000
#define MAXGRANTS 20000

struct grant {
	double ok_ms, unlock_ms; /* OK read, UNLOCK sent: within the hold */
	unsigned long long fence;
	int kid, key;
};

/* One client: LOCKALLs of 2-4 of the keys in random order (or, for the
 * last NLOCKERS, a LOCK of one key), each held a few ms, for LOAD_MS; its
 * grants, one line each, to out. */
static int load_kid(int id, int port, const char *out)
{
	FILE *f = fopen(out, "w");
	struct cl *c = cl_tcp(port);
	srandom((unsigned)(id * 7919 + getpid()));
	double end = h_now_ms() + LOAD_MS;
	while (h_now_ms() < end) {
		int lock = id >= NKIDS - NLOCKERS;
		int keys[NKEYS], n = lock ? 1 : 2 + (int)(random() % 3);
		for (int i = 0; i < NKEYS; i++)
			keys[i] = i;
		for (int i = NKEYS - 1; i > 0; i--) {
			int j = (int)(random() % (i + 1)), t = keys[i];
			keys[i] = keys[j];
			keys[j] = t;
		}
		char req[200];
		int o = lock ? snprintf(req, sizeof(req), "LOCK")
		             : snprintf(req, sizeof(req), "LOCKALL %d", n);
		for (int i = 0; i < n; i++)
			o += snprintf(req + o, sizeof(req) - (size_t)o, " key%d", keys[i]);
		snprintf(req + o, sizeof(req) - (size_t)o, " WAIT %d", LOAD_WAIT);
		double t0 = h_now_ms();
		const char *l = cl_cmd(c, req, LOAD_WAIT + 2000);
		double ok = h_now_ms();
		if (!l || strncmp(l, "OK ", 3) != 0) {
			fprintf(stderr, "kid %d: '%s' -> '%s' after %.0f ms\n", id, req,
			        l ? l : "(none)", ok - t0);
			return 1;
		}
		unsigned long long fs[NKEYS];
		const char *p = l + 2;
		int used;
		for (int i = 0; i < n; i++) {
			if (sscanf(p, " %llu%n", &fs[i], &used) != 1)
				return 2;
			p += used;
		}
		h_sleep_ms(1 + (int)(random() % 5));
		double un = h_now_ms();
		for (int i = 0; i < n; i++) {
			snprintf(req, sizeof(req), "UNLOCK key%d", keys[i]);
			l = cl_cmd(c, req, H_TMO);
			if (!l || strcmp(l, "OK 0") != 0)
				return 3;
			fprintf(f, "%d %d %llu %.3f %.3f\n", id, keys[i], fs[i], ok, un);
		}
	}
	if (c->nlost)
		return 4;
	fclose(f);
	cl_close(c);
	return 0;
}

static int by_ok(const void *a, const void *b)
{
	const struct grant *x = a, *y = b;
	return x->ok_ms < y->ok_ms ? -1 : x->ok_ms > y->ok_ms;
}

START_TEST(lockall_load_history)
{
	two_lockd();
	pid_t me = getpid(), kids[NKIDS];
	char out[NKIDS][400];
	for (int i = 0; i < NKIDS; i++) {
		snprintf(out[i], sizeof(out[i]), "%s/load%d", h_dir(), i);
		fflush(NULL);
		kids[i] = fork();
		ck_assert_int_ge(kids[i], 0);
		if (kids[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != me)
				_exit(1);
			_exit(load_kid(i, h_lockd(i % 2)->port, out[i]));
		}
	}
	int bad = 0;
	double t0 = h_now_ms();
	for (int i = 0; i < NKIDS; i++) {
		int st = -1;
		pid_t r;
		while ((r = waitpid(kids[i], &st, WNOHANG)) == 0 &&
		       h_now_ms() < t0 + LOAD_MS + LOAD_WAIT + 5000)
			h_sleep_ms(5);
		if (r != kids[i]) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], &st, 0);
			fprintf(stderr, "load kid %d did not finish\n", i);
			bad++;
		} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "load kid %d: exit %d\n", i,
			        WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
			bad++;
		}
	}
	ck_assert_msg(bad == 0, "%d load clients failed (see stderr)", bad);
	/* The history: per key, grants in the order their OK came. */
	static struct grant g[MAXGRANTS];
	int n = 0;
	for (int i = 0; i < NKIDS; i++) {
		FILE *f = fopen(out[i], "r");
		ck_assert_ptr_nonnull(f);
		while (n < MAXGRANTS && fscanf(f, "%d %d %llu %lf %lf", &g[n].kid, &g[n].key,
		                               &g[n].fence, &g[n].ok_ms, &g[n].unlock_ms) == 5)
			n++;
		fclose(f);
	}
	ck_assert_msg(n < MAXGRANTS, "more than %d grants: raise MAXGRANTS", MAXGRANTS - 1);
	qsort(g, (size_t)n, sizeof(g[0]), by_ok);
	int per_kid[NKIDS] = {0};
	for (int k = 0; k < NKEYS; k++) {
		const struct grant *last = NULL;
		for (int i = 0; i < n; i++) {
			if (g[i].key != k)
				continue;
			if (last) {
				ck_assert_msg(g[i].ok_ms >= last->unlock_ms,
				              "key%d: granted to %d at %.3f while %d held it until "
				              "%.3f",
				              k, g[i].kid, g[i].ok_ms, last->kid, last->unlock_ms);
				ck_assert_msg(g[i].fence > last->fence,
				              "key%d: fence %llu after %llu", k, g[i].fence,
				              last->fence);
			}
			last = &g[i];
		}
	}
	for (int i = 0; i < n; i++)
		per_kid[g[i].kid]++;
	for (int i = 0; i < NKIDS; i++)
		ck_assert_msg(per_kid[i] > 0, "client %d was never granted", i);
	fprintf(stderr,
	        "lockall_load_history: %d key grants to %d LOCKALL and %d LOCK clients on 2 "
	        "lockd\n",
	        n, NKIDS - NLOCKERS, NLOCKERS);
}
END_TEST

TCase *tc_lockall(void)
{
	TCase *tc = tcase_create("lockall");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, lockall_parse);
	H_ADD(tc, lockall_all_or_nothing);
	H_ADD(tc, lockall_reentrant_and_holds);
	H_ADD(tc, lockall_no_deadlock_two_lockd);
	H_ADD(tc, lockall_client_leaves);
	H_ADD(tc, lockall_resume);
	H_ADD(tc, lockall_session_moves);
	H_ADD(tc, lockall_lockctl);
	H_ADD(tc, lockall_sigterm);
	H_ADD(tc, lockall_64_long_keys);
	H_ADD(tc, lockall_lost_while_waiting);
	H_ADD(tc, lockall_load_history);
	return tc;
}
