/* Unit tests of liblockd's resumable sessions (lockd_opts.resume,
 * addresses): the test plays lockd on a Unix socket of its own, in the
 * same process, stepping the client (non-blocking) between its moves, so
 * every line each side sends is checked in order: SESSION after
 * connecting, RESUME after a break, nothing of the caller's before
 * RESUME's OK, ERR DISCONNECTED for what the break left unanswered, the
 * RESUMING and RESUMED events, LOST for each key held when the session
 * cannot be resumed, QUIT on close. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lockd/client.h"
#include "units.h"

#define SECRET "0123456789abcdef0123456789abcdef"

static char dir[64], path_a[128];

/* What the callbacks saw, one line each: "R<tag> <reply>" or "E <event>". */
static char seen[32][600];
static int nseen;

static void on_reply(struct lockd_client *c, const struct lockd_reply *r, void *tag, void *arg)
{
	if (nseen < 32)
		snprintf(seen[nseen++], sizeof(seen[0]), "R%d %s", (int)(intptr_t)tag, r->line);
}

static void on_event(struct lockd_client *c, const struct lockd_event *ev, void *arg)
{
	if (nseen < 32)
		snprintf(seen[nseen++], sizeof(seen[0]), "E %s", ev->line);
}

static int seen_index(const char *prefix)
{
	for (int i = 0; i < nseen; i++)
		if (strncmp(seen[i], prefix, strlen(prefix)) == 0)
			return i;
	return -1;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int listen_at(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	ck_assert(strlen(path) < sizeof(un.sun_path));
	memcpy(un.sun_path, path, strlen(path) + 1);
	unlink(path);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&un, sizeof(un)), 0);
	ck_assert_int_eq(listen(fd, 8), 0);
	return fd;
}

/* Step c (it may not fail) and wait a little on its socket. */
static void step(struct lockd_client *c)
{
	ck_assert_msg(lockd_step(c) == LOCKD_OK, "client failed: %s", lockd_error(c));
	struct pollfd pf = {lockd_fd(c), lockd_want(c), 0};
	int t = lockd_timeout_ms(c);
	poll(&pf, 1, t < 0 || t > 5 ? 5 : t);
}

/* Accept the client's next connection on lfd within 2 s. */
static int accept_one(struct lockd_client *c, int lfd)
{
	double end = now_ms() + 2000;
	while (now_ms() < end) {
		int s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (s >= 0)
			return s;
		step(c);
	}
	ck_abort_msg("the client did not connect within 2 s");
	return -1;
}

/* Read one line (through LF) from s within 2 s, stepping c; compare. */
static void expect_line(struct lockd_client *c, int s, const char *want)
{
	char buf[600];
	size_t len = 0;
	double end = now_ms() + 2000;
	while (now_ms() < end && (len == 0 || buf[len - 1] != '\n') && len < sizeof(buf) - 1) {
		struct pollfd pf = {s, POLLIN, 0};
		if (poll(&pf, 1, 0) > 0) {
			ssize_t k = read(s, buf + len, 1);
			ck_assert_int_eq(k, 1);
			len++;
			continue;
		}
		step(c);
	}
	buf[len] = '\0';
	ck_assert_msg(strcmp(buf, want) == 0, "lockd read '%s', want '%s'", buf, want);
}

/* Nothing arrives on s within 100 ms while c is stepped. */
static void expect_silence(struct lockd_client *c, int s)
{
	double end = now_ms() + 100;
	while (now_ms() < end) {
		step(c);
		struct pollfd pf = {s, POLLIN, 0};
		ck_assert_msg(poll(&pf, 1, 0) == 0, "the client wrote before it should");
	}
}

static void say(int s, const char *line)
{
	ck_assert_int_eq(write(s, line, strlen(line)), (ssize_t)strlen(line));
}

/* Step c until the callbacks saw a line beginning with prefix (2 s). */
static void wait_seen(struct lockd_client *c, const char *prefix)
{
	double end = now_ms() + 2000;
	while (seen_index(prefix) < 0) {
		ck_assert_msg(now_ms() < end, "no '%s' within 2 s", prefix);
		step(c);
	}
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/lockd-unit-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path_a, sizeof(path_a), "%s/a.sock", dir);
	nseen = 0;
}

static void teardown(void)
{
	unlink(path_a);
	rmdir(dir);
}

/* Connect with resume, answer SESSION (grace), hold k (fence 7). */
static struct lockd_client *session(int lfd, int *s, int grace)
{
	struct lockd_opts o = LOCKD_OPTS_INIT;
	o.unix_path = path_a;
	o.resume = 1;
	o.connect_timeout_ms = 1000;
	struct lockd_client *c = NULL;
	ck_assert_int_eq(lockd_connect_start(&o, &c), LOCKD_OK);
	lockd_set_callbacks(c, on_reply, on_event, NULL);
	*s = accept_one(c, lfd);
	expect_line(c, *s, "SESSION\n");
	ck_assert(!lockd_ready(c));
	char line[128];
	snprintf(line, sizeof(line), "SESSION s1 %s %d\r\n", SECRET, grace);
	say(*s, line);
	for (int i = 0; i < 400 && !lockd_ready(c); i++)
		step(c);
	ck_assert(lockd_ready(c));
	ck_assert_str_eq(lockd_session_id(c), "s1");
	ck_assert_int_eq(lockd_send(c, "LOCK k", -1, (void *)1), LOCKD_OK);
	expect_line(c, *s, "LOCK k\n");
	say(*s, "OK 7\r\n");
	wait_seen(c, "R1 OK 7");
	return c;
}

/* A reset connection: RESUME on a new one; the HELD in flight is answered
 * ERR DISCONNECTED, a PING sent while resuming goes out only after
 * RESUME's OK, and lockd's LOST after the OK is an event. */
START_TEST(resume_after_break)
{
	int lfd = listen_at(path_a), s;
	struct lockd_client *c = session(lfd, &s, 5000);
	ck_assert_int_eq(lockd_send(c, "HELD", -1, (void *)2), LOCKD_OK);
	expect_line(c, s, "HELD\n");
	close(s);
	wait_seen(c, "E RESUMING unix:");
	ck_assert_int_eq(lockd_status(c), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "PING x", 5000, (void *)3), LOCKD_OK);
	s = accept_one(c, lfd);
	expect_line(c, s, "RESUME s1 " SECRET "\n");
	expect_silence(c, s);
	say(s, "OK 1\r\nLOST k 7\r\n");
	expect_line(c, s, "PING x\n");
	say(s, "PONG x\r\n");
	wait_seen(c, "R3 PONG x");
	int d = seen_index("R2 ERR DISCONNECTED"), r = seen_index("E RESUMED unix:"),
	    l = seen_index("E LOST k 7"), p = seen_index("R3 PONG x");
	ck_assert_msg(d >= 0 && r > d && l > r && p > l, "order: %d %d %d %d", d, r, l, p);
	ck_assert_int_eq(lockd_resumes(c), 1);
	ck_assert_int_eq(lockd_pending(c), 0);
	lockd_close(c);
	close(s);
	close(lfd);
}
END_TEST

/* ERR NOSESSION: each key granted and not released is reported LOST (j
 * was released: not), then the client fails with LOCKD_ENOSESSION. */
START_TEST(resume_nosession)
{
	int lfd = listen_at(path_a), s;
	struct lockd_client *c = session(lfd, &s, 5000);
	ck_assert_int_eq(lockd_send(c, "LOCK j", -1, (void *)4), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "UNLOCK j", -1, (void *)5), LOCKD_OK);
	expect_line(c, s, "LOCK j\n");
	expect_line(c, s, "UNLOCK j\n");
	say(s, "OK 9\r\nOK 0\r\n");
	wait_seen(c, "R5 OK 0");
	close(s);
	s = accept_one(c, lfd);
	expect_line(c, s, "RESUME s1 " SECRET "\n");
	say(s, "ERR NOSESSION no such session\r\n");
	int rc = LOCKD_OK;
	for (int i = 0; i < 400 && rc == LOCKD_OK; i++) {
		rc = lockd_step(c);
		usleep(1000);
	}
	ck_assert_int_eq(rc, LOCKD_ENOSESSION);
	ck_assert_msg(strstr(lockd_error(c), "NOSESSION") != NULL, "%s", lockd_error(c));
	ck_assert_int_ge(seen_index("E LOST k 7"), 0);
	ck_assert_int_lt(seen_index("E LOST j"), 0);
	lockd_close(c);
	close(s);
	close(lfd);
}
END_TEST

/* A leader's hold is tracked like a lock's: ERR NOSESSION reports the
 * election e LOST (its CAMPAIGN's fence), not d, which resigned. */
START_TEST(resume_nosession_leader)
{
	int lfd = listen_at(path_a), s;
	struct lockd_client *c = session(lfd, &s, 5000);
	ck_assert_int_eq(lockd_send_campaign(c, "e", "me", -1, -1, (void *)4), LOCKD_OK);
	ck_assert_int_eq(lockd_send_campaign(c, "d", "me", 0, -1, (void *)5), LOCKD_OK);
	ck_assert_int_eq(lockd_send_resign(c, "d", -1, (void *)6), LOCKD_OK);
	expect_line(c, s, "CAMPAIGN e me\n");
	expect_line(c, s, "CAMPAIGN d me WAIT 0\n");
	expect_line(c, s, "RESIGN d\n");
	say(s, "OK 11\r\nOK 12\r\nOK\r\n");
	wait_seen(c, "R6 OK");
	close(s);
	s = accept_one(c, lfd);
	expect_line(c, s, "RESUME s1 " SECRET "\n");
	say(s, "ERR NOSESSION no such session\r\n");
	int rc = LOCKD_OK;
	for (int i = 0; i < 400 && rc == LOCKD_OK; i++) {
		rc = lockd_step(c);
		usleep(1000);
	}
	ck_assert_int_eq(rc, LOCKD_ENOSESSION);
	ck_assert_int_ge(seen_index("E LOST k 7"), 0);
	ck_assert_int_ge(seen_index("E LOST e 11"), 0);
	ck_assert_int_lt(seen_index("E LOST d"), 0);
	lockd_close(c);
	close(s);
	close(lfd);
}
END_TEST

/* No lockd to resume on within the grace (300 ms): LOST k, then
 * LOCKD_ENOSESSION, neither before the grace nor long after it. */
START_TEST(resume_grace_runs_out)
{
	int lfd = listen_at(path_a), s;
	struct lockd_client *c = session(lfd, &s, 300);
	close(lfd);
	unlink(path_a);
	double t0 = now_ms();
	close(s);
	int rc = LOCKD_OK;
	while (rc == LOCKD_OK && now_ms() < t0 + 3000) {
		rc = lockd_step(c);
		if (rc == LOCKD_OK) {
			struct pollfd pf = {lockd_fd(c), lockd_want(c), 0};
			poll(&pf, 1, lockd_timeout_ms(c) < 0 ? 10 : lockd_timeout_ms(c));
		}
	}
	double t = now_ms() - t0;
	ck_assert_int_eq(rc, LOCKD_ENOSESSION);
	ck_assert_msg(t >= 290 && t < 2000, "gave up after %.0f ms (grace 300)", t);
	ck_assert_int_ge(seen_index("E RESUMING"), 0);
	ck_assert_int_ge(seen_index("E LOST k 7"), 0);
	lockd_close(c);
}
END_TEST

/* addresses: the first refuses (no socket), the second is connected. */
START_TEST(addresses_next_on_refusal)
{
	char list[300], none[128];
	snprintf(none, sizeof(none), "%s/none.sock", dir);
	snprintf(list, sizeof(list), "unix:%s, unix:%s", none, path_a);
	int lfd = listen_at(path_a);
	struct lockd_opts o = LOCKD_OPTS_INIT;
	o.addresses = list;
	struct lockd_client *c = NULL;
	ck_assert_int_eq(lockd_connect_start(&o, &c), LOCKD_OK);
	int s = accept_one(c, lfd);
	ck_assert_int_eq(lockd_send(c, "PING", -1, (void *)1), LOCKD_OK);
	lockd_set_callbacks(c, on_reply, on_event, NULL);
	expect_line(c, s, "PING\n");
	say(s, "PONG\r\n");
	wait_seen(c, "R1 PONG");
	char want[140];
	snprintf(want, sizeof(want), "unix:%s", path_a);
	ck_assert_str_eq(lockd_peer(c), want);
	ck_assert_str_eq(lockd_session_id(c), "");
	lockd_close(c);
	close(s);
	close(lfd);
}
END_TEST

START_TEST(addresses_refused)
{
	static const char *const bad[] = {"", "h:0", "h:70000", "unix:", "a,,b", "[::1", "h:x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct lockd_opts o = LOCKD_OPTS_INIT;
		o.addresses = bad[i];
		struct lockd_client *c = NULL;
		ck_assert_msg(lockd_connect_start(&o, &c) == LOCKD_EARG, "addresses \"%s\"",
		              bad[i]);
		lockd_close(c);
	}
	struct lockd_opts o = LOCKD_OPTS_INIT;
	o.resume = 1;
	o.grace_ms = -1;
	struct lockd_client *c = NULL;
	ck_assert_int_eq(lockd_connect_start(&o, &c), LOCKD_EARG);
	lockd_close(c);
}
END_TEST

/* SESSION refused (an older lockd): LOCKD_ENOSESSION, with the reply. */
START_TEST(session_refused)
{
	int lfd = listen_at(path_a);
	struct lockd_opts o = LOCKD_OPTS_INIT;
	o.unix_path = path_a;
	o.resume = 1;
	o.grace_ms = 2000;
	struct lockd_client *c = NULL;
	ck_assert_int_eq(lockd_connect_start(&o, &c), LOCKD_OK);
	int s = accept_one(c, lfd);
	expect_line(c, s, "SESSION GRACE 2000\n");
	say(s, "ERR PROTOCOL unknown command\r\n");
	int rc = LOCKD_OK;
	for (int i = 0; i < 400 && rc == LOCKD_OK; i++) {
		rc = lockd_step(c);
		usleep(1000);
	}
	ck_assert_int_eq(rc, LOCKD_ENOSESSION);
	ck_assert_msg(strstr(lockd_error(c), "ERR PROTOCOL") != NULL, "%s", lockd_error(c));
	lockd_close(c);
	close(s);
	close(lfd);
}
END_TEST

/* lockd_close() of a resumable session sends QUIT: the session ends now,
 * not at the end of its grace. */
START_TEST(close_sends_quit)
{
	int lfd = listen_at(path_a), s;
	struct lockd_client *c = session(lfd, &s, 5000);
	lockd_close(c);
	char buf[16] = "";
	struct pollfd pf = {s, POLLIN, 0};
	ck_assert_int_eq(poll(&pf, 1, 1000), 1);
	ck_assert_int_eq(read(s, buf, sizeof(buf) - 1), 5);
	ck_assert_str_eq(buf, "QUIT\n");
	close(s);
	close(lfd);
}
END_TEST

Suite *client_resume_suite(void)
{
	Suite *su = suite_create("client_resume");
	TCase *tc = tcase_create("resume");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, resume_after_break);
	tcase_add_test(tc, resume_nosession);
	tcase_add_test(tc, resume_nosession_leader);
	tcase_add_test(tc, resume_grace_runs_out);
	tcase_add_test(tc, addresses_next_on_refusal);
	tcase_add_test(tc, addresses_refused);
	tcase_add_test(tc, session_refused);
	tcase_add_test(tc, close_sends_quit);
	suite_add_tcase(su, tc);
	return su;
}
