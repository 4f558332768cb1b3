/* Late writes: a request lockd wrote on a connection it then gave up on
 * can still reach the master, long after (a partition kept it on its way,
 * and the kernel delivers what a closed socket had sent once the path
 * heals). The masters take a token of lockd's own instance that it did not
 * name for a stale leftover and write over it; such a late request must
 * not, since lockd may have granted the key to another of its sessions
 * meanwhile, on a new connection. Here the late pair is an ACQUIRE and the
 * RELEASE of the same token: written over and deleted, the live hold
 * would be gone from that master, and a second lockd could take the key
 * while the first one's session holds it (partition scenario 7 found
 * this: "c0 x2 ... overlaps c4 x2"). An adoption (RESUME) that arrives
 * late must not take a session back from the lockd the client has moved
 * to since. Real masters, real lockds, and a proxy in front of master 2
 * that holds the bytes back (harness_proxy.c). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scripts.h" /* scripts run by hand: adopt_compares_count, release_record_field */
#include "sha1.h"    /* what lockd sends for a secret */

#define LEASE 3000
/* a token of another lockd instance (the first 16 hex digits) */
#define FOREIGN "ffffffffffffffff0123456789abcdef"

/* Wait until lockd l has dropped master port and connected to it again,
 * after log offset off. */
static void wait_reconnected(int l, long off, int port)
{
	char down[64], up[64];
	snprintf(down, sizeof(down), "master 127.0.0.1:%d down", port);
	snprintf(up, sizeof(up), "master 127.0.0.1:%d up", port);
	char *d = h_log_wait(h_lockd(l)->log, off, down, NULL, H_SLOW_LIMIT + 1000);
	ck_assert_msg(d != NULL, "lockd %d never gave up on the master (%s)", l, down);
	free(d);
	/* It was up before off, so an "up" line after off is the reconnection. */
	char *u = h_log_wait(h_lockd(l)->log, off, up, NULL, 5000);
	ck_assert_msg(u != NULL, "lockd %d did not connect to the master again (%s)", l, up);
	free(u);
}

/* Master 2 has run everything the proxy delivered: the test's own commands
 * come after it on the master's loop (each reply means a turn of it). */
static void master_caught_up(int i)
{
	for (int k = 0; k < 2; k++) {
		char *r = h_redis(i, "PING", NULL);
		ck_assert_msg(r && strcmp(r, "PONG") == 0, "master %d: PING: '%s'", i,
		              r ? r : "(none)");
		free(r);
	}
}

/* Loop 0: the live hold is a lock; loop 1: a shared hold. */
START_TEST(late_write_keeps_live_hold)
{
	const char *kinds[] = {"LOCK k", "LOCK k SHARED"};
	const char *req = kinds[_i];
	h_masters_start(3);
	struct h_proxy *px = h_proxy_start(h_master(2)->port);
	int via[3] = {0, 0, h_proxy_port(px)};
	int a = h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .via = via});
	int b = h_lockd_start(&(struct h_opts){.lease_ms = LEASE});

	/* x's LOCK and UNLOCK reach masters 0 and 1 and are held on their way
	 * to master 2, which lockd A then gives up on (redis.timeout_ms) and
	 * connects to again, through the proxy, on a new connection. */
	struct cl *x = cl_tcp(h_lockd(a)->port);
	ck_assert_int_ge(h_proxy_hold(px), 1);
	long off = h_file_size(h_lockd(a)->log);
	cl_lock(x, "LOCK k");
	cl_expect(x, "UNLOCK k", "OK 0");
	wait_reconnected(a, off, via[2]);

	/* Another holder (another lockd's token) keeps master 0 from y: y's
	 * hold is on masters 1 and 2 only, a majority. */
	char *r = h_redis(0, "SET", "lockd:k", FOREIGN, "PX", "60000", NULL);
	ck_assert_msg(r && strcmp(r, "OK") == 0, "SET on master 0: '%s'", r ? r : "(none)");
	free(r);
	struct cl *y = cl_tcp(h_lockd(a)->port);
	cl_lock(y, req);
	char *on1 = h_redis(1, "GET", "lockd:k", NULL), *on2 = h_redis(2, "GET", "lockd:k", NULL);
	long long sh2 = h_redis_int(2, "ZCARD", "lockd:k shared", NULL);
	if (_i == 0)
		ck_assert_msg(on1 && on2 && strlen(on1) == 32 && strcmp(on1, on2) == 0,
		              "y's lock on masters 1 and 2: '%s', '%s'", on1 ? on1 : "(none)",
		              on2 ? on2 : "(none)");
	else
		ck_assert_msg(sh2 == 1, "y's shared hold on master 2: %lld members", sh2);

	/* Now x's ACQUIRE and RELEASE arrive at master 2, late. */
	ck_assert_int_gt(h_proxy_release(px), 0);
	master_caught_up(2);
	if (_i == 0) {
		char *now2 = h_redis(2, "GET", "lockd:k", NULL);
		ck_assert_msg(now2 && strcmp(now2, on2) == 0,
		              "master 2 holds '%s' after the late ACQUIRE and RELEASE of another "
		              "session of the same lockd, y's token was '%s'",
		              now2 ? now2 : "(none)", on2);
		free(now2);
	} else {
		long long now = h_redis_int(2, "ZCARD", "lockd:k shared", NULL);
		ck_assert_msg(now == 1,
		              "master 2 has %lld shared holders after the late ACQUIRE and RELEASE "
		              "of another session of the same lockd, y holds one",
		              now);
	}
	ck_assert_int_gt(h_redis_int(2, "PTTL", _i ? "lockd:k shared" : "lockd:k", NULL), 0);

	/* The other holder's lease ends on master 0: y's hold still has a
	 * majority, so lockd B must not grant k to anyone. */
	ck_assert_int_eq(h_redis_int(0, "DEL", "lockd:k", NULL), 1);
	struct cl *z = cl_tcp(h_lockd(b)->port);
	cl_expect(z, "TRYLOCK k", "BUSY");
	cl_expect(y, "UNLOCK k", "OK 0");
	free(on1);
	free(on2);
	cl_close(x);
	cl_close(y);
	cl_close(z);
	h_proxy_stop(px);
}
END_TEST

/* A session on lockd 0 holding k (fence returned); "RESUME id secret"
 * written to resume. */
static unsigned long long session_with_k(struct cl *c, char *resume, size_t n, char *id, size_t idn)
{
	const char *r = cl_cmd(c, "SESSION", H_SLOW_LIMIT);
	char sid[20], sec[40];
	ck_assert_msg(r && sscanf(r, "SESSION %19s %39s", sid, sec) == 2, "SESSION: '%s'",
	              r ? r : "(nothing)");
	snprintf(resume, n, "RESUME %s %s", sid, sec);
	snprintf(id, idn, "%s", sid);
	return cl_lock(c, "LOCK k");
}

/* Field f of session id's record on master i (malloc'd; "(nil)" if none). */
static char *record_field(int i, const char *id, const char *f)
{
	char rkey[128];
	snprintf(rkey, sizeof(rkey), "lockd: session %s", id);
	char *v = h_redis(i, "HGET", rkey, f, NULL);
	ck_assert_msg(v != NULL, "master %d did not answer", i);
	return v;
}

/* An adoption is a compare-and-set on the record's adoption count, so one
 * that reaches a master late (lockd B gave up on that connection, and the
 * client has resumed on lockd C since) changes nothing there: the record
 * and the hold's token stay C's. Master 2 is behind a proxy for lockd B
 * only; what B sent it for the RESUME arrives after C's adoption. */
START_TEST(late_adopt_changes_nothing)
{
	h_masters_start(3);
	struct h_proxy *px = h_proxy_start(h_master(2)->port);
	int via[3] = {0, 0, h_proxy_port(px)};
	int a = h_lockd_start(&(struct h_opts){.lease_ms = LEASE});
	int b = h_lockd_start(&(struct h_opts){.lease_ms = LEASE, .via = via});
	int cc = h_lockd_start(&(struct h_opts){.lease_ms = LEASE});
	char resume[96], id[20];
	struct cl *c = cl_tcp(h_lockd(a)->port);
	unsigned long long f = session_with_k(c, resume, sizeof(resume), id, sizeof(id));
	cl_close(c); /* detached: its holds stay */

	ck_assert_int_ge(h_proxy_hold(px), 1);
	long off = h_file_size(h_lockd(b)->log);
	c = cl_tcp(h_lockd(b)->port);
	cl_expect(c, resume, "OK 1"); /* masters 0 and 1: a majority */
	wait_reconnected(b, off, via[2]);
	cl_close(c);

	c = cl_tcp(h_lockd(cc)->port);
	cl_expect(c, resume, "OK 1");
	char want[64];
	snprintf(want, sizeof(want), "KEY k %llu 1 ", f);
	cl_expect_prefix(c, "HELD", want);
	cl_want(c, "END", H_TMO);
	char *tok = h_redis(2, "GET", "lockd:k", NULL), *own = record_field(2, id, "o");
	ck_assert_msg(tok && strlen(tok) == 32 && strncmp(tok, own, 16) == 0,
	              "after C's adoption master 2 holds '%s', its record names '%s'",
	              tok ? tok : "(none)", own);

	/* What B sent master 2 for its RESUME arrives now. */
	ck_assert_int_gt(h_proxy_release(px), 0);
	master_caught_up(2);
	char *tok2 = h_redis(2, "GET", "lockd:k", NULL), *own2 = record_field(2, id, "o");
	ck_assert_msg(
	    tok2 && strcmp(tok2, tok) == 0 && strcmp(own2, own) == 0,
	    "after lockd B's late adoption master 2 holds '%s' and its record names '%s'; "
	    "lockd C's adoption left '%s' and '%s'",
	    tok2 ? tok2 : "(none)", own2, tok, own);
	cl_expect(c, "UNLOCK k", "OK 0");
	free(tok);
	free(own);
	free(tok2);
	free(own2);
	cl_close(c);
	h_proxy_stop(px);
}
END_TEST

/* The compare-and-set itself, on a real master: SCR_SESS_ADOPT with the
 * count read before another adoption changes nothing ({-2}); with the
 * count as it is, it adopts and sets the new count it was given (lockd
 * gives one above every count it read on a majority). */
START_TEST(adopt_compares_count)
{
	h_std(&(struct h_opts){.lease_ms = LEASE});
	h_lockd_start(&(struct h_opts){.lease_ms = LEASE});
	char resume[96], id[20];
	struct cl *c = cl_open();
	session_with_k(c, resume, sizeof(resume), id, sizeof(id));
	char *n0 = record_field(0, id, "a");
	ck_assert_msg(strcmp(n0, "(nil)") == 0, "a record never adopted counts '%s'", n0);
	free(n0);
	cl_close(c);
	c = cl_tcp(h_lockd(1)->port);
	cl_expect(c, resume, "OK 1");
	char *n1 = record_field(0, id, "a"), *own = record_field(0, id, "o");
	char *tok = h_redis(0, "GET", "lockd:k", NULL);
	ck_assert_msg(strcmp(n1, "1") == 0, "after one adoption the count is '%s'", n1);

	char rkey[128], sid[20], sec[40];
	snprintf(rkey, sizeof(rkey), "lockd: session %s", id);
	ck_assert_int_eq(sscanf(resume, "RESUME %19s %39s", sid, sec), 2);
	/* what lockd sends for the secret: the digest of the login (no
	 * password here) and the secret (resume.c) */
	char login[48], digest[SHA1_HEX_LEN + 1];
	snprintf(login, sizeof(login), "\n%s", sec);
	sha1_hex(login, strlen(login), digest);
	const char *late[] = {"EVAL", script_body(SCR_SESS_ADOPT),
	                      "1",    rkey,
	                      digest, "eeeeeeeeeeeeeeee",
	                      "3000", "lockd:",
	                      "0",    "5"};
	struct rconn *r = rc_open(h_master(0)->port, H_TMO);
	ck_assert(r != NULL);
	char *rep = rc_cmdv(r, 10, late);
	ck_assert_msg(rep && strcmp(rep, "-2\n") == 0, "an adoption with the old count: '%s'",
	              rep ? rep : "(none)");
	free(rep);
	char *own2 = record_field(0, id, "o"), *tok2 = h_redis(0, "GET", "lockd:k", NULL);
	ck_assert_msg(strcmp(own2, own) == 0 && tok2 && strcmp(tok2, tok) == 0,
	              "after a refused adoption: owner '%s' (was '%s'), token '%s' (was '%s')",
	              own2, own, tok2 ? tok2 : "(none)", tok);
	late[8] = "1";
	rep = rc_cmdv(r, 10, late);
	ck_assert_msg(rep && strncmp(rep, "1\n", 2) == 0, "an adoption with the count: '%s'",
	              rep ? rep : "(none)");
	/* {1, grace, the count it set, ...}: lockd compares later rounds with it */
	const char *third = strchr(rep + 2, '\n');
	ck_assert_msg(third && strncmp(third + 1, "5\n", 2) == 0,
	              "an adoption with the count answered '%s', not the count 5 it set", rep);
	free(rep);
	char *own3 = record_field(0, id, "o"), *n2 = record_field(0, id, "a");
	ck_assert_msg(strcmp(own3, "eeeeeeeeeeeeeeee") == 0 && strcmp(n2, "5") == 0,
	              "after an adoption with the count: owner '%s', count '%s'", own3, n2);
	rc_close(r);
	free(n1);
	free(own);
	free(tok);
	free(own2);
	free(tok2);
	free(own3);
	free(n2);
	cl_close(c);
}
END_TEST

/* SCR_RELEASE of a resumable session's hold, run by hand on a real
 * master: it deletes the hold's record field without reading the
 * record's owner when it let the hold go (the token on the lock is the
 * field's), keeps it when the token is not there (an adoption re-tokened
 * the hold) unless the record names the releasing instance (a lapsed hold
 * of its own). "A" and "B": two lockd instances, B the record's owner. */
static char *release_by_hand(struct rconn *r, const char *tok, const char *inst)
{
	const char *rel[] = {"EVAL",
	                     script_body(SCR_RELEASE),
	                     "2",
	                     "lockd:k",
	                     "lockd: session s1",
	                     inst,
	                     "lockd: released",
	                     "2000",
	                     "6",
	                     tok,
	                     "0",
	                     "x",
	                     "",
	                     "x0 k"};
	return rc_cmdv(r, 14, rel);
}

START_TEST(release_record_field)
{
	h_masters_start(1);
	const char *A = "aaaaaaaaaaaaaaaa", *B = "bbbbbbbbbbbbbbbb";
	const char *ta = "aaaaaaaaaaaaaaaa0123456789a00000",
	           *tb = "bbbbbbbbbbbbbbbb0123456789a00000";
	struct rconn *r = rc_open(h_master(0)->port, H_TMO);
	ck_assert(r != NULL);
	struct {
		const char *lock, *inst, *reply, *field; /* lock's token, who releases, after */
	} cases[] = {
	    {ta, A, "1", "(nil)"},     /* A lets go; the record is B's: field gone, no owner read */
	    {tb, A, "0", "present"},   /* B re-tokened it: A's release keeps B's field */
	    {NULL, B, "0", "(nil)"},   /* lapsed, the record is B's: B's release drops it */
	    {NULL, A, "0", "present"}, /* lapsed, the record is B's: A's keeps it */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		h_redis_int(0, "HSET", "lockd: session s1", "o", B, "x0 k",
		            cases[i].lock == tb ? "bbbbbbbbbbbbbbbb0123456789a00000 7 1 0"
		                                : "aaaaaaaaaaaaaaaa0123456789a00000 7 1 0",
		            NULL);
		if (cases[i].lock)
			free(h_redis(0, "SET", "lockd:k", cases[i].lock, "PX", "5000", NULL));
		else
			h_redis_int(0, "DEL", "lockd:k", NULL);
		const char *tok = cases[i].inst == A ? ta : tb;
		char *rep = release_by_hand(r, tok, cases[i].inst);
		char *f = h_redis(0, "HGET", "lockd: session s1", "x0 k", NULL);
		ck_assert_msg(rep && strncmp(rep, cases[i].reply, 1) == 0,
		              "case %zu: RELEASE answered '%s', want %s", i, rep ? rep : "(none)",
		              cases[i].reply);
		int gone = f && strcmp(f, "(nil)") == 0;
		ck_assert_msg(gone == (strcmp(cases[i].field, "(nil)") == 0),
		              "case %zu: the record field is '%s' after the release, want %s", i,
		              f ? f : "(none)", cases[i].field);
		free(rep);
		free(f);
	}
	rc_close(r);
}
END_TEST

TCase *tc_late_writes(void)
{
	TCase *tc = tcase_create("late_writes");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	if (h_selected("late_write_keeps_live_hold"))
		tcase_add_loop_test(tc, late_write_keeps_live_hold, 0, 2);
	H_ADD(tc, late_adopt_changes_nothing);
	H_ADD(tc, adopt_compares_count);
	H_ADD(tc, release_record_field);
	return tc;
}
