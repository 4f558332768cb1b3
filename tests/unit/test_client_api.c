/* Unit tests of liblockd's options rule (struct lockd_opts is read only
 * within its size) and of its typed requests (lockd_lock(), ...), on a
 * socketpair whose other end plays lockd. What a refused request must
 * never do is reach lockd: the peer checks that no byte came. */
#include "config.h"

#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lockd/client.h"
#include "units.h"

/* A client with o on one end of a socketpair; *peer is the other end. */
static int open_pair(const struct lockd_opts *o, struct lockd_client **c, int *peer)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	*peer = sv[1];
	*c = NULL;
	int rc = lockd_open_fd(sv[0], o, c);
	ck_assert_ptr_nonnull(*c);
	return rc;
}

static void peer_write(int peer, const char *bytes)
{
	size_t n = strlen(bytes);
	ck_assert_int_eq(write(peer, bytes, n), (ssize_t)n);
}

/* Read exactly strlen(want) bytes within 2 s (stepping c so that it
 * writes), and compare. */
static void peer_expect(struct lockd_client *c, int peer, const char *want)
{
	size_t n = strlen(want), len = 0;
	char *buf = malloc(n + 1);
	ck_assert_ptr_nonnull(buf);
	for (int i = 0; i < 200 && len < n; i++) {
		ck_assert_int_eq(lockd_flush(c), LOCKD_OK);
		struct pollfd pf = {peer, POLLIN, 0};
		if (poll(&pf, 1, 10) <= 0)
			continue;
		ssize_t k = read(peer, buf + len, n - len);
		ck_assert_int_gt(k, 0);
		len += (size_t)k;
	}
	buf[len] = '\0';
	ck_assert_msg(len == n && memcmp(buf, want, n) == 0, "peer read %zu of %zu bytes: %.80s",
	              len, n, buf);
	free(buf);
}

/* Nothing reached the peer within 100 ms, even with the client flushed. */
static void peer_silent(struct lockd_client *c, int peer)
{
	char b[64];
	ck_assert_int_eq(lockd_flush(c), LOCKD_OK);
	struct pollfd pf = {peer, POLLIN, 0};
	int r = poll(&pf, 1, 100);
	ssize_t k = r > 0 ? read(peer, b, sizeof(b) - 1) : 0;
	if (k > 0)
		b[k] = '\0';
	ck_assert_msg(r == 0, "lockd received \"%s\"", k > 0 ? b : "?");
}

/* ------------------------------------------------------------ options */

START_TEST(opts_without_size)
{
	struct lockd_opts o;
	memset(&o, 0, sizeof(o)); /* zeroed, as before LOCKD_OPTS_INIT */
	o.unix_path = "/nonexistent/lockd.sock";
	struct lockd_client *c;
	int peer;
	ck_assert_int_eq(open_pair(&o, &c, &peer), LOCKD_EARG);
	ck_assert_ptr_nonnull(strstr(lockd_error(c), "LOCKD_OPTS_INIT"));
	lockd_close(c);
	close(peer);
	c = NULL;
	ck_assert_int_eq(lockd_connect(&o, &c), LOCKD_EARG);
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(strstr(lockd_error(c), "size is 0"));
	lockd_close(c);
	/* with its size, the same options are taken: the path is tried */
	o.size = sizeof(o);
	ck_assert_int_eq(lockd_connect(&o, &c), LOCKD_ECONNECT);
	lockd_close(c);
	/* NULL still means every default */
	ck_assert_int_eq(open_pair(NULL, &c, &peer), LOCKD_OK);
	lockd_close(c);
	close(peer);
}
END_TEST

/* A program built when struct lockd_opts ended before tls: its struct is
 * shorter, and what lies after it in memory must not be read. */
START_TEST(opts_of_an_older_program)
{
	size_t old = offsetof(struct lockd_opts, tls);
	/* in a full struct, the bytes past size ask for TLS with a CA that
	   does not exist: read, they would fail the connection */
	struct lockd_opts o = LOCKD_OPTS_INIT;
	o.max_line = 64;
	o.tls = 1;
	o.tls_ca = "/nonexistent/ca.pem";
	o.tls_key = "k.pem";
	for (size_t size = old; size < old + sizeof(o.tls); size++) {
		o.size = size; /* tls only partly within size: not taken either */
		struct lockd_client *c;
		int peer;
		ck_assert_int_eq(open_pair(&o, &c, &peer), LOCKD_OK);
		ck_assert(lockd_ready(c));
		ck_assert_int_eq(lockd_send(c, "PING", 1000, NULL), LOCKD_OK);
		peer_expect(c, peer, "PING\n"); /* plain, not a TLS hello */
		/* max_line (within size) was taken: a 65-byte line is too long */
		char line[80];
		memset(line, 'x', sizeof(line));
		memcpy(line + 65, "\r\n", 3); /* 65 bytes before CR LF */
		peer_write(peer, line);
		int rc = LOCKD_OK;
		for (int i = 0; i < 100 && rc == LOCKD_OK; i++)
			rc = lockd_wait(c, 20);
		ck_assert_int_eq(rc, LOCKD_EPROTO);
		lockd_close(c);
		close(peer);
	}
	/* exactly the old size on the heap: ASan sees any read past it */
	unsigned char *small = malloc(old);
	ck_assert_ptr_nonnull(small);
	o.size = old;
	memcpy(small, &o, old);
	struct lockd_client *c;
	int peer;
	ck_assert_int_eq(open_pair((const struct lockd_opts *)(void *)small, &c, &peer), LOCKD_OK);
	lockd_close(c);
	close(peer);
	free(small);
}
END_TEST

/* A program built against a later liblockd, whose struct has more. */
START_TEST(opts_of_a_newer_program)
{
	struct {
		struct lockd_opts o;
		int later_option;
	} big;
	memset(&big, 0, sizeof(big));
	big.o.size = sizeof(big);
	struct lockd_client *c;
	int peer;
	ck_assert_int_eq(open_pair(&big.o, &c, &peer), LOCKD_OK); /* unset: fine */
	lockd_close(c);
	close(peer);
	big.later_option = 1;
	ck_assert_int_eq(open_pair(&big.o, &c, &peer), LOCKD_EARG); /* set: refused */
	ck_assert_ptr_nonnull(strstr(lockd_error(c), "does not know"));
	lockd_close(c);
	close(peer);
}
END_TEST

/* ------------------------------------------------------------ typed requests */

START_TEST(typed_refuse_bad_keys)
{
	static const char *const bad[] = {"k WAIT", "",      "k\r\nQUIT",  "k\n",
	                                  "k\tx",   "a\x01", "caf\xc3\xa9"};
	struct lockd_opts o = LOCKD_OPTS_INIT;
	struct lockd_client *c;
	int peer;
	const struct lockd_reply *r = NULL;
	ck_assert_int_eq(open_pair(&o, &c, &peer), LOCKD_OK);
	char *longkey = malloc(LOCKD_MAX_KEY + 2);
	ck_assert_ptr_nonnull(longkey);
	memset(longkey, 'x', LOCKD_MAX_KEY + 1);
	longkey[LOCKD_MAX_KEY + 1] = '\0';
	for (size_t i = 0; i <= sizeof(bad) / sizeof(bad[0]); i++) {
		const char *k = i < sizeof(bad) / sizeof(bad[0]) ? bad[i] : longkey;
		ck_assert_int_eq(lockd_check_key(k), LOCKD_EKEY);
		ck_assert_int_eq(lockd_lock(c, k, 0, 10, 0, 1000, &r), LOCKD_EKEY);
		ck_assert_int_eq(lockd_trylock(c, k, LOCKD_SHARED, 0, 1000, &r), LOCKD_EKEY);
		ck_assert_int_eq(lockd_unlock(c, k, 1000, &r), LOCKD_EKEY);
		ck_assert_int_eq(lockd_extend(c, k, 100, 1000, &r), LOCKD_EKEY);
		ck_assert_int_eq(lockd_key_status(c, k, 0, 1000, &r), LOCKD_EKEY);
		ck_assert_int_eq(lockd_send_lock(c, k, 2, -1, 0, 1000, NULL), LOCKD_EKEY);
		ck_assert_int_eq(lockd_send_trylock(c, k, 0, 0, 1000, NULL), LOCKD_EKEY);
		ck_assert_int_eq(lockd_send_unlock(c, k, 1000, NULL), LOCKD_EKEY);
		ck_assert_int_eq(lockd_send_extend(c, k, 100, 1000, NULL), LOCKD_EKEY);
		ck_assert_int_eq(lockd_send_key_status(c, k, 3, 1000, NULL), LOCKD_EKEY);
	}
	ck_assert_int_eq(lockd_lock(c, NULL, 0, 10, 0, 1000, &r), LOCKD_EKEY);
	ck_assert_ptr_null(r);
	/* bad numbers */
	ck_assert_int_eq(lockd_lock(c, "k", -2, 10, 0, 1000, &r), LOCKD_EARG);
	ck_assert_int_eq(lockd_send_lock(c, "k", 0, 10, -5, 1000, NULL), LOCKD_EARG);
	ck_assert_int_eq(lockd_extend(c, "k", 0, 1000, &r), LOCKD_EARG);
	ck_assert_int_eq(lockd_send_key_status(c, "k", LOCKD_SHARED, 1000, NULL), LOCKD_EARG);
	ck_assert_int_eq(lockd_lock(c, "k", 0, 10, 0, 1000, NULL), LOCKD_EARG);
	/* the client is unchanged and lockd got nothing */
	ck_assert_int_eq(lockd_status(c), LOCKD_OK);
	ck_assert_str_eq(lockd_error(c), "");
	ck_assert_uint_eq(lockd_pending(c), 0);
	peer_silent(c, peer);
	ck_assert_str_eq(lockd_status_name(LOCKD_EKEY), "LOCKD_EKEY");
	ck_assert_ptr_nonnull(strstr(lockd_strerror(LOCKD_EKEY), "key"));

	/* the longest key any lockd takes is sent whole */
	longkey[LOCKD_MAX_KEY] = '\0';
	ck_assert_int_eq(lockd_check_key(longkey), LOCKD_OK);
	ck_assert_int_eq(lockd_send_unlock(c, longkey, 1000, NULL), LOCKD_OK);
	char *want = malloc(LOCKD_MAX_KEY + 16);
	ck_assert_ptr_nonnull(want);
	snprintf(want, LOCKD_MAX_KEY + 16, "UNLOCK %s\n", longkey);
	peer_expect(c, peer, want);
	free(want);
	free(longkey);
	lockd_close(c);
	close(peer);
}
END_TEST

START_TEST(typed_requests_on_the_wire)
{
	struct lockd_opts o = LOCKD_OPTS_INIT;
	struct lockd_client *c;
	int peer;
	const struct lockd_reply *r;
	ck_assert_int_eq(open_pair(&o, &c, &peer), LOCKD_OK);
	/* blocking: each answer waits in the socket before its request goes */
	peer_write(peer, "OK 7\r\n");
	ck_assert_int_eq(lockd_lock(c, "k", LOCKD_EXCLUSIVE, 5000, 0, 1000, &r), LOCKD_OK);
	ck_assert_int_eq(r->kind, LOCKD_R_OK);
	ck_assert_uint_eq(r->num, 7);
	peer_write(peer, "BUSY\r\n");
	ck_assert_int_eq(lockd_trylock(c, "j", LOCKD_SHARED, 100, 1000, &r), LOCKD_OK);
	ck_assert_int_eq(r->kind, LOCKD_R_BUSY);
	peer_write(peer, "HELD 900 2\r\n");
	ck_assert_int_eq(lockd_key_status(c, "k", 0, 1000, &r), LOCKD_OK);
	ck_assert_int_eq(r->kind, LOCKD_R_HELD);
	ck_assert_uint_eq(r->num2, 2);
	peer_write(peer, "OK\r\n");
	ck_assert_int_eq(lockd_extend(c, "k", 3000, 1000, &r), LOCKD_OK);
	ck_assert_int_eq(r->kind, LOCKD_R_OK);
	peer_write(peer, "OK 0\r\n");
	ck_assert_int_eq(lockd_unlock(c, "k", 1000, &r), LOCKD_OK);
	ck_assert_uint_eq(r->num, 0);
	peer_expect(c, peer,
	            "LOCK k WAIT 5000\nTRYLOCK j SHARED TTL 100\nSTATUS k\nEXTEND k 3000\n"
	            "UNLOCK k\n");
	/* non-blocking: queued in order */
	ck_assert_int_eq(lockd_send_lock(c, "a", 3, -1, 2000, -1, (void *)1), LOCKD_OK);
	ck_assert_int_eq(lockd_send_trylock(c, "b", 0, 0, -1, (void *)2), LOCKD_OK);
	ck_assert_int_eq(lockd_send_key_status(c, "a", 3, -1, (void *)3), LOCKD_OK);
	ck_assert_int_eq(lockd_send_extend(c, "a", 10, -1, (void *)4), LOCKD_OK);
	ck_assert_int_eq(lockd_send_unlock(c, "a", -1, (void *)5), LOCKD_OK);
	ck_assert_uint_eq(lockd_pending(c), 5);
	peer_expect(c, peer,
	            "LOCK a PERMITS 3 TTL 2000\nTRYLOCK b\nSTATUS a PERMITS 3\nEXTEND a 10\n"
	            "UNLOCK a\n");
	lockd_close(c);
	close(peer);
}
END_TEST

START_TEST(printf_forms_refuse_line_breaks)
{
	struct lockd_opts o = LOCKD_OPTS_INIT;
	struct lockd_client *c;
	int peer;
	const struct lockd_reply *r;
	ck_assert_int_eq(open_pair(&o, &c, &peer), LOCKD_OK);
	ck_assert_int_eq(lockd_sendf(c, -1, NULL, "LOCK %s", "k\r\nQUIT"), LOCKD_EARG);
	ck_assert_int_eq(lockd_sendf(c, -1, NULL, "LOCK %s", "k\n"), LOCKD_EARG);
	/* a NUL from an argument would cut the line short: refused, not cut */
	ck_assert_int_eq(lockd_sendf(c, -1, NULL, "LOCK k%cWAIT 5", 0), LOCKD_EARG);
	ck_assert_int_eq(lockd_callf(c, 100, &r, "UNLOCK k%c", 0), LOCKD_EARG);
	ck_assert_int_eq(lockd_callf(c, 100, &r, "UNLOCK %s", "k\r"), LOCKD_EARG);
	ck_assert_uint_eq(lockd_pending(c), 0);
	peer_silent(c, peer);
	ck_assert_int_eq(lockd_sendf(c, -1, NULL, "LOCK %s WAIT %d", "k", 5), LOCKD_OK);
	peer_expect(c, peer, "LOCK k WAIT 5\n");
	lockd_close(c);
	close(peer);
}
END_TEST

Suite *client_api_suite(void)
{
	Suite *s = suite_create("client_api");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, opts_without_size);
	tcase_add_test(tc, opts_of_an_older_program);
	tcase_add_test(tc, opts_of_a_newer_program);
	tcase_add_test(tc, typed_refuse_bad_keys);
	tcase_add_test(tc, typed_requests_on_the_wire);
	tcase_add_test(tc, printf_forms_refuse_line_breaks);
	suite_add_tcase(s, tc);
	return s;
}
