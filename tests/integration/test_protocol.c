/* Every command and reply of doc/protocol.md, the framing, and the errors. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

/* ------------------------------------------------------------------ commands */

START_TEST(ping)
{
	h_std(NULL);
	struct cl *a = cl_open();
	cl_expect(a, "PING", "PONG");
	cl_expect(a, "PING hello", "PONG hello");
	cl_expect(a, "PING Hello-World!~", "PONG Hello-World!~");
	cl_close(a);
	struct cl *u = cl_unix(h_lockd(0)->sock);
	cl_expect(u, "PING", "PONG");
	cl_expect(u, "PING over-unix", "PONG over-unix");
	cl_close(u);
}
END_TEST

START_TEST(lock_trylock_busy_timeout)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open();
	unsigned long long f1 = cl_lock(a, "TRYLOCK k");
	cl_expect(b, "TRYLOCK k", "BUSY");
	cl_expect(b, "TRYLOCK k TTL 5000", "BUSY");
	cl_expect(b, "LOCK k WAIT 0", "TIMEOUT");
	cl_expect(a, "UNLOCK k", "OK 0");
	unsigned long long f2 = cl_lock(b, "LOCK k");
	ck_assert_msg(f2 > f1, "fence %llu after %llu", f2, f1);
	cl_expect(a, "TRYLOCK k", "BUSY");
	cl_expect(a, "LOCK k WAIT 0 TTL 1000", "TIMEOUT");
	cl_expect(b, "UNLOCK k", "OK 0");
	/* WAIT 0 on a free key is one successful attempt */
	unsigned long long f3 = cl_lock(a, "LOCK k WAIT 0");
	ck_assert_msg(f3 > f2, "fence %llu after %llu", f3, f2);
	cl_lock(a, "LOCK other");
	cl_lock(a, "TRYLOCK third TTL 10000");
	cl_close(a);
	cl_close(b);
}
END_TEST

START_TEST(lock_wait_timeout)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open();
	cl_lock(a, "LOCK k");
	for (int i = 0; i < 2; i++) {
		double t0 = h_now_ms();
		cl_send(b, "LOCK k WAIT 200\n");
		cl_want(b, "TIMEOUT", 2000);
		double el = h_now_ms() - t0;
		/* no earlier than WAIT; no later than WAIT + the reply bound */
		ck_assert_msg(el >= 200 && el < 200 + H_SLOW_LIMIT,
		              "LOCK k WAIT 200 answered TIMEOUT after %.0f ms", el);
	}
	/* the session still works and does not wait any more */
	cl_expect(b, "PING", "PONG");
	long long ttl, w;
	ck_assert_int_eq(cl_status(b, "k", &ttl, &w), 1);
	ck_assert_int_eq(w, 0);
	cl_close(a);
	cl_close(b);
}
END_TEST

START_TEST(unlock_notheld)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open();
	cl_expect_prefix(a, "UNLOCK never", "ERR NOTHELD");
	cl_lock(a, "TRYLOCK k");
	cl_expect_prefix(b, "UNLOCK k", "ERR NOTHELD");
	/* B's attempt did not release A's lock */
	cl_expect(b, "TRYLOCK k", "BUSY");
	ck_assert_int_eq(cl_status(b, "k", NULL, NULL), 1);
	cl_expect(a, "UNLOCK k", "OK 0");
	cl_expect_prefix(a, "UNLOCK k", "ERR NOTHELD");
	cl_close(a);
	cl_close(b);
}
END_TEST

START_TEST(extend)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open();
	cl_lock(a, "LOCK k TTL 1000");
	long long ttl, w;
	ck_assert_int_eq(cl_status(a, "k", &ttl, &w), 1);
	ck_assert_msg(ttl > 0 && ttl <= 1000, "ttl %lld", ttl);
	cl_expect(a, "EXTEND k 5000", "OK");
	ck_assert_int_eq(cl_status(b, "k", &ttl, &w), 1);
	ck_assert_msg(ttl > 4000 && ttl <= 5000, "ttl after EXTEND k 5000: %lld", ttl);
	long long mn, mx;
	int n = h_masters_with_pttl(3, "lockd:k", &mn, &mx);
	ck_assert_msg(n >= 2, "lockd:k has a TTL on %d masters", n);
	ck_assert_msg(mn > 4000 && mx <= 5000, "PTTL lockd:k %lld..%lld after EXTEND 5000", mn, mx);
	/* a shorter new lease is a new lease too */
	cl_expect(a, "EXTEND k 2000", "OK");
	ck_assert_int_eq(cl_status(b, "k", &ttl, &w), 1);
	ck_assert_msg(ttl > 1000 && ttl <= 2000, "ttl after EXTEND k 2000: %lld", ttl);
	cl_expect_prefix(b, "EXTEND k 5000", "ERR NOTHELD");
	cl_expect_prefix(a, "EXTEND nothere 5000", "ERR NOTHELD");
	/* EXTEND is for TTL locks only */
	cl_lock(a, "LOCK wd");
	cl_expect_prefix(a, "EXTEND wd 5000", "ERR ");
	ck_assert_int_eq(cl_status(b, "wd", &ttl, &w), 1);
	cl_expect_held(a, "k wd");
	cl_close(a);
	cl_close(b);
}
END_TEST

START_TEST(status)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open(), *c = cl_open(), *d = cl_open();
	cl_expect(a, "STATUS k", "FREE");
	cl_lock(a, "TRYLOCK k");
	long long ttl, w;
	ck_assert_int_eq(cl_status(a, "k", &ttl, &w), 1);
	ck_assert_msg(ttl > 0 && ttl <= 3000, "ttl %lld with lease_ms 3000", ttl);
	ck_assert_int_eq(w, 0);
	ck_assert_int_eq(cl_status(b, "k", &ttl, &w), 1);
	ck_assert_int_eq(w, 0);
	cl_send(b, "LOCK k\n");
	cl_wait_waiters(d, "k", 1, 2000);
	cl_send(c, "LOCK k WAIT 10000\n");
	cl_wait_waiters(d, "k", 2, 2000);
	ck_assert_int_eq(cl_status(d, "k", &ttl, &w), 1);
	ck_assert_int_eq(w, 2);
	ck_assert_msg(ttl > 0 && ttl <= 3000, "ttl %lld", ttl);
	cl_expect(d, "STATUS other", "FREE");
	/* TTL lock: ttl is the time left on its lease */
	cl_lock(d, "LOCK t TTL 10000");
	ck_assert_int_eq(cl_status(a, "t", &ttl, &w), 1);
	ck_assert_msg(ttl > 8000 && ttl <= 10000, "ttl %lld for TTL 10000", ttl);
	cl_close(a);
	cl_close(b);
	cl_close(c);
	cl_close(d);
}
END_TEST

/* Read a HELD reply: fills keys/fences/holds/ttls, returns the count. */
static int read_held(struct cl *c, char keys[][64], unsigned long long *fences, int *holds,
                     long long *ttls, int max)
{
	cl_send(c, "HELD\n");
	const char *l = cl_reply(c, H_TMO);
	int n = 0;
	for (int i = 0; i < 1000; i++) {
		ck_assert_msg(l != NULL, "HELD: reply ended before END");
		if (strcmp(l, "END") == 0)
			return n;
		char k[64], tail;
		unsigned long long f;
		int h;
		long long t;
		ck_assert_msg(sscanf(l, "KEY %63s %llu %d %lld%c", k, &f, &h, &t, &tail) == 4,
		              "HELD: bad line '%s'", l);
		char back[200];
		snprintf(back, sizeof(back), "KEY %s %llu %d %lld", k, f, h, t);
		ck_assert_msg(strcmp(back, l) == 0, "HELD: bad line '%s'", l);
		ck_assert_int_lt(n, max);
		snprintf(keys[n], 64, "%s", k);
		fences[n] = f;
		holds[n] = h;
		ttls[n] = t;
		n++;
		l = cl_line(c, H_TMO); /* no event between the lines */
	}
	ck_abort_msg("HELD: no END");
}

START_TEST(held)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open();
	cl_expect(a, "HELD", "END");
	unsigned long long fa = cl_lock(a, "LOCK a");
	ck_assert_uint_eq(cl_lock(a, "LOCK a"), fa);
	unsigned long long fb = cl_lock(a, "TRYLOCK b TTL 5000");
	cl_lock(b, "TRYLOCK c");
	char keys[8][64];
	unsigned long long f[8];
	int h[8];
	long long t[8];
	int n = read_held(a, keys, f, h, t, 8);
	ck_assert_int_eq(n, 2);
	int ia = strcmp(keys[0], "a") == 0 ? 0 : 1, ib = 1 - ia;
	ck_assert_str_eq(keys[ia], "a");
	ck_assert_str_eq(keys[ib], "b");
	ck_assert_uint_eq(f[ia], fa);
	ck_assert_int_eq(h[ia], 2);
	ck_assert_msg(t[ia] > 0 && t[ia] <= 3000, "ttl %lld", t[ia]);
	ck_assert_uint_eq(f[ib], fb);
	ck_assert_int_eq(h[ib], 1);
	ck_assert_msg(t[ib] > 3000 && t[ib] <= 5000, "ttl %lld for TTL 5000", t[ib]);
	/* only this session's locks */
	n = read_held(b, keys, f, h, t, 8);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(keys[0], "c");
	cl_expect(a, "UNLOCK b", "OK 0");
	cl_expect(a, "UNLOCK a", "OK 1");
	n = read_held(a, keys, f, h, t, 8);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(h[0], 1);
	cl_expect(a, "UNLOCK a", "OK 0");
	cl_expect(a, "HELD", "END");
	cl_close(a);
	cl_close(b);
}
END_TEST

START_TEST(stats)
{
	h_std(NULL);
	struct cl *a = cl_open();
	char *pid = cl_stat(a, "pid");
	ck_assert_msg(pid != NULL, "no STAT pid");
	char want[32];
	snprintf(want, sizeof(want), "%d", (int)h_lockd(0)->pid);
	ck_assert_str_eq(pid, want);
	free(pid);
	char *clients = cl_stat(a, "clients");
	ck_assert_msg(clients != NULL, "no STAT clients");
	free(clients);
	/* the harness's probe connections may still be closing */
	cl_wait_stat(a, "clients", "1", 1000);
	struct cl *b = cl_open();
	cl_expect(b, "PING", "PONG");
	clients = cl_stat(a, "clients");
	ck_assert_str_eq(clients, "2");
	free(clients);
	char *g0 = cl_stat(a, "grants");
	ck_assert_msg(g0 != NULL, "no STAT grants");
	cl_lock(b, "TRYLOCK k");
	cl_lock(b, "LOCK k2");
	char *g1 = cl_stat(a, "grants");
	ck_assert_msg(strtoll(g1, NULL, 10) == strtoll(g0, NULL, 10) + 2,
	              "STAT grants %s after 2 grants from %s", g1, g0);
	free(g0);
	free(g1);
	/* STATS on a session that holds locks and has LOST events pending */
	cl_close(a);
	cl_close(b);
}
END_TEST

START_TEST(auth_without_password)
{
	h_std(NULL);
	struct cl *a = cl_open();
	cl_expect_prefix(a, "AUTH anything", "ERR AUTH");
	cl_lock(a, "TRYLOCK k");
	cl_close(a);
}
END_TEST

START_TEST(auth_password)
{
	struct h_opts o = {.password = "s3cret"};
	h_std(&o);
	struct cl *a = cl_open();
	cl_expect_prefix(a, "LOCK k", "ERR NOAUTH");
	cl_expect_prefix(a, "TRYLOCK k", "ERR NOAUTH");
	cl_expect_prefix(a, "AUTH wrong", "ERR AUTH");
	cl_expect_prefix(a, "AUTH S3CRET", "ERR AUTH");
	cl_expect_prefix(a, "LOCK k", "ERR NOAUTH");
	cl_expect(a, "AUTH s3cret", "OK");
	cl_lock(a, "LOCK k");
	cl_expect(a, "UNLOCK k", "OK 0");
	/* per session */
	struct cl *b = cl_open();
	cl_expect_prefix(b, "STATUS k", "ERR NOAUTH");
	cl_expect(b, "AUTH s3cret", "OK");
	cl_expect(b, "STATUS k", "FREE");
	cl_close(a);
	cl_close(b);
}
END_TEST

START_TEST(quit)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open();
	unsigned long long f = cl_lock(b, "LOCK k");
	cl_lock(b, "LOCK k");
	cl_lock(b, "TRYLOCK k2 TTL 60000");
	cl_expect(b, "QUIT", "OK");
	cl_want_eof(b, 2000);
	unsigned long long f2 = cl_lock(a, "TRYLOCK k");
	ck_assert_msg(f2 > f, "fence %llu after %llu", f2, f);
	cl_lock(a, "TRYLOCK k2");
	cl_close(a);
	cl_close(b);
}
END_TEST

START_TEST(case_insensitive)
{
	h_std(NULL);
	struct cl *a = cl_open();
	cl_expect(a, "ping", "PONG");
	cl_expect(a, "Ping MiXeD", "PONG MiXeD");
	unsigned long long f = cl_lock(a, "lock k1");
	ck_assert_uint_eq(cl_lock(a, "Trylock k1"), f);
	cl_lock(a, "tRyLoCk k2 ttl 5000");
	cl_lock(a, "LoCk k3 wait 100 Ttl 5000");
	cl_lock(a, "lock k4 TTL 5000 wAiT 0");
	/* keys are not */
	cl_lock(a, "TRYLOCK K1");
	cl_expect(a, "status k5", "FREE");
	cl_expect(a, "extend k2 6000", "OK");
	cl_expect(a, "unlock k1", "OK 1");
	cl_expect(a, "UnLock k1", "OK 0");
	cl_expect(a, "UNLOCK K1", "OK 0");
	cl_expect_prefix(a, "unlock k1", "ERR NOTHELD");
	cl_expect_held(a, "k2 k3 k4");
	cl_send(a, "Held\n");
	cl_want_prefix(a, "KEY ", H_TMO);
	cl_close(a);
}
END_TEST

START_TEST(line_endings_and_blanks)
{
	h_std(NULL);
	struct cl *a = cl_open();
	cl_send(a, "PING a\r\n");
	cl_want(a, "PONG a", H_TMO);
	cl_send(a, "PING b\n");
	cl_want(a, "PONG b", H_TMO);
	cl_send(a, "PING c\r\nPING d\nPING e\r\n");
	cl_want(a, "PONG c", H_TMO);
	cl_want(a, "PONG d", H_TMO);
	cl_want(a, "PONG e", H_TMO);
	cl_send(a, "  \t PING \t f \t \r\n");
	cl_want(a, "PONG f", H_TMO);
	cl_send(a, "TRYLOCK\tk\t\tTTL  5000\n");
	unsigned long long f = cl_want_ok(a, H_TMO);
	cl_send(a, "\tSTATUS    k   \r\n");
	cl_want_prefix(a, "HELD ", H_TMO);
	cl_send(a, "LOCK k \n");
	ck_assert_uint_eq(cl_want_ok(a, H_TMO), f);
	cl_send(a, "UNLOCK k\r\n");
	cl_want(a, "OK 1", H_TMO);
	cl_close(a);
}
END_TEST

START_TEST(request_in_pieces)
{
	h_std(NULL);
	struct cl *a = cl_open();
	const char *req = "TRYLOCK piece-key TTL 5000\r\nPING x\nUNLOCK piece-key\r\n";
	for (const char *p = req; *p; p++) {
		cl_sendn(a, p, 1);
		h_sleep_ms(2);
	}
	cl_want_ok(a, H_TMO);
	cl_want(a, "PONG x", H_TMO);
	cl_want(a, "OK 0", H_TMO);
	/* a pause between \r and \n, and between two requests' bytes */
	cl_send(a, "PING y\r");
	cl_silence(a, 100);
	cl_send(a, "\nPI");
	cl_want(a, "PONG y", H_TMO);
	cl_silence(a, 100);
	cl_send(a, "NG\n");
	cl_want(a, "PONG", H_TMO);
	cl_close(a);
}
END_TEST

START_TEST(pipelining)
{
	h_std(NULL);
	struct cl *a = cl_open();
	cl_send(a, "PING 1\nSTATUS k\nTRYLOCK k\nSTATUS k\nPING 5\n");
	cl_want(a, "PONG 1", H_TMO);
	cl_want(a, "FREE", H_TMO);
	unsigned long long f = cl_want_ok(a, H_TMO);
	cl_want_prefix(a, "HELD ", H_TMO);
	cl_want(a, "PONG 5", H_TMO);
	/* a longer batch with several lock operations */
	char batch[8192] = "";
	for (int i = 0; i < 50; i++) {
		char l[64];
		snprintf(l, sizeof(l), "LOCK k\nUNLOCK k\nPING %d\n", i);
		strcat(batch, l);
	}
	cl_send(a, batch);
	for (int i = 0; i < 50; i++) {
		ck_assert_uint_eq(cl_want_ok(a, H_TMO), f);
		cl_want(a, "OK 1", H_TMO);
		char p[32];
		snprintf(p, sizeof(p), "PONG %d", i);
		cl_want(a, p, H_TMO);
	}
	cl_close(a);
}
END_TEST

START_TEST(queued_behind_waiting_lock)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open();
	cl_lock(a, "LOCK k");
	cl_send(b, "LOCK k\nPING x\nSTATUS k\nTRYLOCK other\nHELD\n");
	cl_silence(b, 300);
	cl_expect(a, "UNLOCK k", "OK 0");
	unsigned long long f = cl_want_ok(b, 1000);
	cl_want(b, "PONG x", H_TMO);
	cl_want_prefix(b, "HELD ", H_TMO);
	cl_want_ok(b, H_TMO);
	const char *l = cl_reply(b, H_TMO);
	ck_assert_ptr_nonnull(l);
	char want[64];
	snprintf(want, sizeof(want), "KEY k %llu 1 ", f);
	ck_assert_msg(strncmp(l, want, strlen(want)) == 0 || strncmp(l, "KEY other ", 10) == 0,
	              "HELD line '%s'", l);
	l = cl_line(b, H_TMO);
	ck_assert_ptr_nonnull(l);
	ck_assert_msg(strncmp(l, "KEY ", 4) == 0, "HELD line '%s'", l);
	cl_want(b, "END", H_TMO);
	/* and a waiting LOCK that times out also answers the queue after it */
	cl_send(a, "LOCK k WAIT 200\nPING after\n");
	cl_want(a, "TIMEOUT", 2000);
	cl_want(a, "PONG after", H_TMO);
	cl_close(a);
	cl_close(b);
}
END_TEST

START_TEST(half_close)
{
	h_std(NULL);
	struct cl *a = cl_open(), *b = cl_open(), *c = cl_open();
	/* requests already received are answered, then the connection closes */
	cl_send(b, "PING\nPING x\nTRYLOCK k\n");
	cl_shutdown_wr(b);
	cl_want(b, "PONG", H_TMO);
	cl_want(b, "PONG x", H_TMO);
	cl_want_ok(b, H_TMO);
	cl_want_eof(b, 2000);
	/* and its locks are released (service level: 1 s; loaded headroom;
	 * the lease, 3 s, would be later) */
	double t0 = h_now_ms();
	cl_send(a, "LOCK k WAIT 3000\n");
	cl_want_ok(a, 3000);
	ck_assert_msg(h_now_ms() - t0 < 1000 + H_LOADED, "released after %.0f ms", h_now_ms() - t0);
	/* a waiting LOCK is cancelled without a reply, with the requests behind it */
	cl_send(c, "LOCK k\nPING y\n");
	cl_wait_waiters(a, "k", 1, 2000);
	cl_shutdown_wr(c);
	cl_want_eof(c, 2000);
	cl_wait_waiters(a, "k", 0, 2000);
	cl_expect(a, "UNLOCK k", "OK 0");
	cl_close(a);
	cl_close(b);
	cl_close(c);
}
END_TEST

START_TEST(unix_and_tcp_share_locks)
{
	h_std(NULL);
	struct cl *u = cl_unix(h_lockd(0)->sock), *t = cl_open();
	cl_lock(u, "TRYLOCK k");
	cl_expect(t, "TRYLOCK k", "BUSY");
	long long ttl, w;
	ck_assert_int_eq(cl_status(t, "k", &ttl, &w), 1);
	cl_send(t, "LOCK k\n");
	cl_wait_waiters(u, "k", 1, 2000);
	cl_expect(u, "UNLOCK k", "OK 0");
	cl_want_ok(t, 1000);
	cl_close(u);
	cl_close(t);
}
END_TEST

/* PONG echoes the word whole */
START_TEST(ping_long_word)
{
	h_std(NULL);
	struct cl *a = cl_open();
	char req[1100], want[1100];
	strcpy(req, "PING ");
	for (int i = 0; i < 1000; i++)
		req[5 + i] = (char)('a' + i % 26);
	req[1005] = '\0';
	snprintf(want, sizeof(want), "PONG %s", req + 5);
	const char *r = cl_cmd(a, req, H_TMO);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(
	    strcmp(r, want) == 0,
	    "PING with a 1000 byte word: reply of %zu bytes '%.40s...', expected %zu bytes",
	    strlen(r), r, strlen(want));
	cl_close(a);
}
END_TEST

/* and its bytes as they are (only space and tab separate tokens) */
START_TEST(ping_word_bytes)
{
	h_std(NULL);
	struct cl *a = cl_open();
	cl_expect(a, "PING h\xc3\xa9llo-\xe2\x82\xac", "PONG h\xc3\xa9llo-\xe2\x82\xac");
	cl_expect(a,
	          "PING a\x0b"
	          "b",
	          "PONG a\x0b"
	          "b");
	cl_close(a);
}
END_TEST

TCase *tc_protocol(void)
{
	TCase *tc = tcase_create("protocol");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 20);
	H_ADD(tc, ping);
	H_ADD(tc, ping_long_word);
	H_ADD(tc, ping_word_bytes);
	H_ADD(tc, lock_trylock_busy_timeout);
	H_ADD(tc, lock_wait_timeout);
	H_ADD(tc, unlock_notheld);
	H_ADD(tc, extend);
	H_ADD(tc, status);
	H_ADD(tc, held);
	H_ADD(tc, stats);
	H_ADD(tc, auth_without_password);
	H_ADD(tc, auth_password);
	H_ADD(tc, quit);
	H_ADD(tc, case_insensitive);
	H_ADD(tc, line_endings_and_blanks);
	H_ADD(tc, request_in_pieces);
	H_ADD(tc, pipelining);
	H_ADD(tc, queued_behind_waiting_lock);
	H_ADD(tc, half_close);
	H_ADD(tc, unix_and_tcp_share_locks);
	return tc;
}

/* ------------------------------------------------------------------ errors */

START_TEST(err_empty_line)
{
	h_std(NULL);
	struct cl *a = cl_open();
	cl_send(a, "\n");
	cl_want_prefix(a, "ERR PROTOCOL", H_TMO);
	cl_send(a, "\r\n");
	cl_want_prefix(a, "ERR PROTOCOL", H_TMO);
	cl_send(a, "  \t  \n");
	cl_want_prefix(a, "ERR PROTOCOL", H_TMO);
	cl_expect(a, "PING", "PONG");
	cl_close(a);
}
END_TEST

static const char *const syntax_errors[] = {
    "FOO",
    "LOCKS k",
    "LOC k",
    "LOCK",
    "TRYLOCK",
    "UNLOCK",
    "STATUS",
    "EXTEND",
    "EXTEND k",
    "AUTH",
    "LOCK k FOO 1",
    "LOCK k TIMEOUT 1",
    "LOCK k WAIT 1 WAIT 2",
    "LOCK k wait 1 WAIT 1",
    "LOCK k TTL 5000 TTL 5000",
    "LOCK k WAIT",
    "LOCK k TTL",
    "LOCK k WAIT 10 TTL",
    "LOCK k 100",
    "TRYLOCK k WAIT 10",
    "TRYLOCK k TTL",
    "TRYLOCK k TTL 100 TTL 100",
    "UNLOCK k extra",
    "STATUS k extra",
    "EXTEND k 100 extra",
    "EXTEND k 100 TTL 100",
    "HELD x",
    "STATS x",
    "QUIT x",
    "PING a b",
    "AUTH a b",
    "LOCK k TTL 100 BOGUS",
};

START_TEST(err_protocol_syntax)
{
	h_std(NULL);
	struct cl *a = cl_open();
	cl_lock(a, "LOCK k TTL 60000");
	for (size_t i = 0; i < sizeof(syntax_errors) / sizeof(syntax_errors[0]); i++)
		cl_expect_prefix(a, syntax_errors[i], "ERR PROTOCOL");
	/* errors do not close the session or touch its locks */
	cl_expect(a, "PING", "PONG");
	cl_expect_held(a, "k");
	cl_close(a);
}
END_TEST

START_TEST(err_key)
{
	h_std(NULL);
	struct cl *a = cl_open();
	static const char *const bad[] = {
	    "LOCK a\x01"
	    "b",
	    "TRYLOCK caf\xc3\xa9",
	    "STATUS \x7f",
	    "UNLOCK k\x80",
	    "EXTEND a\x02 100",
	    "LOCK a\x0b"
	    "b",
	    "LOCK a\x0c"
	    "b",
	    "LOCK a\rb",
	    "TRYLOCK \xff",
	    "STATUS k\x1b[0m",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cl_expect_prefix(a, bad[i], "ERR KEY");
	/* 256 bytes is the default limit */
	char req[600];
	strcpy(req, "LOCK ");
	memset(req + 5, 'x', 257);
	req[5 + 257] = '\0';
	cl_expect_prefix(a, req, "ERR KEY");
	req[5 + 256] = '\0';
	cl_lock(a, req);
	/* every printable byte is fine in a key */
	char all[128];
	size_t n = 0;
	for (int ch = 0x21; ch <= 0x7e; ch++)
		all[n++] = (char)ch;
	all[n] = '\0';
	snprintf(req, sizeof(req), "TRYLOCK %s", all);
	cl_lock(a, req);
	snprintf(req, sizeof(req), "STATUS %s", all);
	cl_expect_prefix(a, req, "HELD ");
	char rk[200];
	snprintf(rk, sizeof(rk), "lockd:%s", all);
	ck_assert_int_eq(h_redis_int(0, "EXISTS", rk, NULL), 1);
	cl_expect(a, "PING", "PONG");
	cl_close(a);
}
END_TEST

START_TEST(err_arg)
{
	h_std(NULL);
	struct cl *a = cl_open();
	static const char *const bad[] = {
	    "LOCK k WAIT -1",
	    "LOCK k WAIT 1.5",
	    "LOCK k TTL 0",
	    "LOCK k TTL 2147483648",
	    "LOCK k WAIT 99999999999999999999",
	    "LOCK k WAIT 2147483648",
	    "LOCK k WAIT +5",
	    "LOCK k WAIT 0x10",
	    "LOCK k WAIT 1e3",
	    "LOCK k WAIT abc",
	    "LOCK k TTL -5",
	    "LOCK k TTL 18446744073709551617",
	    "TRYLOCK k TTL 0",
	    "TRYLOCK k TTL 1.0",
	    "EXTEND k 0",
	    "EXTEND k -1",
	    "EXTEND k 2147483648",
	    "LOCK k WAIT 10ms",
	};
	cl_lock(a, "LOCK k TTL 60000");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cl_expect_prefix(a, bad[i], "ERR ARG");
	/* the bounds themselves are fine */
	cl_lock(a, "LOCK b1 TTL 2147483647");
	cl_lock(a, "LOCK b2 WAIT 2147483647");
	cl_lock(a, "TRYLOCK b3 TTL 2147483647");
	cl_expect(a, "EXTEND k 2147483647", "OK");
	cl_lock(a, "LOCK b4 WAIT 0 TTL 60000");
	cl_close(a);
}
END_TEST

START_TEST(err_precedence)
{
	h_std(NULL);
	struct cl *a = cl_open();
	cl_expect_prefix(a, "LOCK a\x01 FOO 5", "ERR PROTOCOL");
	cl_expect_prefix(a, "LOCK a\x01 WAIT 1 WAIT 2", "ERR PROTOCOL");
	cl_expect_prefix(a, "LOCK a\x01 WAIT", "ERR PROTOCOL");
	cl_expect_prefix(a, "LOCK a\x01 WAIT -1 extra", "ERR PROTOCOL");
	cl_expect_prefix(a, "UNLOCK a\x01 extra", "ERR PROTOCOL");
	cl_expect_prefix(a, "EXTEND a\x01 0 extra", "ERR PROTOCOL");
	cl_expect_prefix(a, "LOCK k TTL 0 BOGUS 1", "ERR PROTOCOL");
	cl_expect_prefix(a, "TRYLOCK k TTL 0 WAIT 5", "ERR PROTOCOL");
	cl_expect_prefix(a, "LOCK a\x01 WAIT x", "ERR KEY");
	cl_expect_prefix(a, "LOCK a\x01 TTL 0", "ERR KEY");
	cl_expect_prefix(a, "LOCK a\x01 WAIT 1.5 TTL 0", "ERR KEY");
	cl_expect_prefix(a, "EXTEND a\x01 0", "ERR KEY");
	cl_expect_prefix(a, "LOCK k WAIT -1 TTL 0", "ERR ARG");
	cl_expect_prefix(a, "LOCK k TTL 0 WAIT 5", "ERR ARG");
	cl_expect(a, "PING", "PONG");
	cl_close(a);
}
END_TEST

START_TEST(err_line_too_long)
{
	h_std(NULL);
	struct cl *a = cl_open();
	/* exactly max_line (4096) bytes: fine */
	char *req = malloc(8200);
	ck_assert_ptr_nonnull(req);
	memcpy(req, "PING", 4);
	memset(req + 4, ' ', 4092);
	req[4096] = '\0';
	cl_expect(a, req, "PONG");
	memcpy(req, "STATUS ", 7);
	memset(req + 7, 'x', 4089);
	cl_expect_prefix(a, req, "ERR KEY");
	memcpy(req, "PING ", 5);
	memset(req + 5, 'x', 4091);
	/* 4097 bytes and a newline */
	req[4096] = 'x';
	req[4097] = '\n';
	cl_sendn(a, req, 4098);
	cl_want(a, "ERR PROTOCOL line too long", H_TMO);
	cl_want_eof(a, 2000);
	cl_close(a);
	/* 4097 bytes without a newline: the error comes without waiting for it */
	struct cl *b = cl_open();
	cl_sendn(b, req, 4097);
	cl_want(b, "ERR PROTOCOL line too long", H_TMO);
	cl_want_eof(b, 2000);
	cl_close(b);
	/* the same after a few good requests, in the same write */
	struct cl *c = cl_open();
	memcpy(req, "PING 1\nPING 2\n", 14);
	memset(req + 14, 'y', 5000);
	cl_sendn(c, req, 14 + 5000);
	cl_want(c, "PONG 1", H_TMO);
	cl_want(c, "PONG 2", H_TMO);
	cl_want(c, "ERR PROTOCOL line too long", H_TMO);
	cl_want_eof(c, 2000);
	cl_close(c);
	free(req);
	struct cl *d = cl_open();
	cl_expect(d, "PING", "PONG");
	cl_close(d);
}
END_TEST

START_TEST(err_configured_limits)
{
	struct h_opts o = {.limits = "  max_line: 64\n  max_key_len: 8\n"};
	h_std(&o);
	struct cl *a = cl_open();
	cl_lock(a, "LOCK 12345678");
	cl_expect_prefix(a, "LOCK 123456789", "ERR KEY");
	char req[128];
	strcpy(req, "PING ");
	memset(req + 5, 'z', 59);
	req[64] = '\0';
	const char *r = cl_cmd(a, req, H_TMO);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(strncmp(r, "PONG zz", 7) == 0 && strlen(r) == 64, "64 byte PING: '%s'", r);
	req[64] = 'z';
	req[65] = '\0';
	cl_expect(a, req, "ERR PROTOCOL line too long");
	cl_want_eof(a, 2000);
	cl_close(a);
}
END_TEST

START_TEST(err_nul_and_garbage)
{
	h_std(NULL);
	struct cl *a = cl_open();
	cl_sendn(a, "PING\0\n", 6);
	cl_want_prefix(a, "ERR ", H_TMO);
	cl_sendn(a, "LOCK a\0b\n", 9);
	cl_want_prefix(a, "ERR KEY", H_TMO);
	/* a NUL would cut the echoed word short: never "PONG ab" */
	cl_sendn(a, "PING ab\0cd\n", 11);
	cl_want(a, "ERR PROTOCOL NUL byte in argument", H_TMO);
	cl_sendn(a, "\0\0\0\n", 4);
	cl_want_prefix(a, "ERR ", H_TMO);
	cl_sendn(a, "\0PING\n", 6);
	cl_want_prefix(a, "ERR ", H_TMO);
	cl_expect(a, "PING", "PONG");
	/* 300 lines of random bytes: one error each, and no desync */
	unsigned seed = 12345;
	char *g = malloc(300 * 101);
	size_t n = 0;
	for (int line = 0; line < 300; line++) {
		int len = (int)(rand_r(&seed) % 100);
		for (int i = 0; i < len; i++) {
			char ch;
			do
				ch = (char)(rand_r(&seed) & 0xff);
			while (ch == '\n');
			g[n++] = ch;
		}
		g[n++] = '\n';
	}
	cl_sendn(a, g, n);
	free(g);
	for (int line = 0; line < 300; line++) {
		const char *r = cl_reply(a, H_TMO);
		ck_assert_msg(r != NULL, "garbage line %d: no reply", line);
		ck_assert_msg(strncmp(r, "ERR ", 4) == 0, "garbage line %d: '%s'", line, r);
	}
	cl_expect(a, "PING z", "PONG z");
	struct cl *b = cl_open();
	cl_expect(b, "PING", "PONG");
	ck_assert(h_lockd_alive(0));
	cl_close(a);
	cl_close(b);
}
END_TEST

/* Send 1 MB without a newline while reading: the error, then EOF. */
static void one_mb(struct cl *c)
{
	size_t total = 1 << 20, sent = 0;
	char chunk[16384];
	memset(chunk, 'A', sizeof(chunk));
	double end = h_now_ms() + 5000;
	int got = 0;
	while (h_now_ms() < end && !c->eof) {
		struct pollfd pf = {c->fd, POLLIN | (sent < total ? POLLOUT : 0), 0};
		if (poll(&pf, 1, 50) <= 0)
			continue;
		if (pf.revents & POLLIN) {
			const char *l = cl_line(c, 0);
			if (l) {
				ck_assert_str_eq(l, "ERR PROTOCOL line too long");
				got = 1;
				break;
			}
			continue;
		}
		if (pf.revents & POLLOUT) {
			ssize_t w =
			    send(c->fd, chunk,
			         sizeof(chunk) < total - sent ? sizeof(chunk) : total - sent,
			         MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w > 0)
				sent += (size_t)w;
			else if (w < 0 && errno != EAGAIN && errno != EINTR)
				sent = total; /* closed by lockd: keep reading */
		} else if (pf.revents & (POLLERR | POLLHUP)) {
			const char *l = cl_line(c, 0);
			if (l) {
				ck_assert_str_eq(l, "ERR PROTOCOL line too long");
				got = 1;
			}
			break;
		}
	}
	ck_assert_msg(got, "no 'ERR PROTOCOL line too long' (sent %zu bytes, %s)", sent,
	              c->eof ? cl_error(c) : "timeout");
	const char *l = cl_line(c, 2000);
	ck_assert_msg(l == NULL && c->eof, "connection not closed after a too long line");
}

START_TEST(err_one_megabyte)
{
	h_std(NULL);
	struct cl *a = cl_open();
	one_mb(a);
	cl_close(a);
	struct cl *u = cl_unix(h_lockd(0)->sock);
	one_mb(u);
	cl_close(u);
	struct cl *b = cl_open();
	cl_expect(b, "PING", "PONG");
	cl_close(b);
}
END_TEST

START_TEST(err_many_connections)
{
	h_std(NULL);
	int fds[100];
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 100; i++) {
			fds[i] = cl_take_fd(cl_open());
			if (i % 3 == 1)
				send(fds[i], "PING\n", 5, MSG_NOSIGNAL);
			else if (i % 3 == 2)
				send(fds[i], "LOC", 3, MSG_NOSIGNAL);
		}
		for (int i = 0; i < 100; i++)
			close(fds[i]);
	}
	struct cl *a = cl_open();
	cl_expect(a, "PING", "PONG");
	cl_wait_stat(a, "clients", "1", 2000);
	cl_lock(a, "TRYLOCK k");
	cl_close(a);
}
END_TEST

TCase *tc_errors(void)
{
	TCase *tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 20);
	H_ADD(tc, err_empty_line);
	H_ADD(tc, err_protocol_syntax);
	H_ADD(tc, err_key);
	H_ADD(tc, err_arg);
	H_ADD(tc, err_precedence);
	H_ADD(tc, err_line_too_long);
	H_ADD(tc, err_configured_limits);
	H_ADD(tc, err_nul_and_garbage);
	H_ADD(tc, err_one_megabyte);
	H_ADD(tc, err_many_connections);
	return tc;
}
