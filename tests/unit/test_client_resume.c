/* Unit tests of liblockd's resumable sessions (lockd_opts.resume,
 * addresses) and hold deadlines (lockd_opts.hold_deadlines): the test
 * plays lockd on a Unix socket of its own, in the same process, stepping
 * the client (non-blocking) between its moves, so every line each side
 * sends is checked in order: SESSION after connecting, RESUME after a
 * break, nothing of the caller's before RESUME's OK, ERR DISCONNECTED for
 * what the break left unanswered, the RESUMING and RESUMED events, LOST
 * for each key held when the session cannot be resumed, QUIT on close;
 * and, with deadlines, the HELD behind a grant, the heartbeat, and LOST
 * before the deadline of a hold lockd stops confirming (a lockd that
 * stops answering, or is gone while the session is being resumed).
 * tests/integration/test_client_deadline.c runs the same against real
 * lockd and masters. */
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

static double now_ms(void);

/* What the callbacks saw, one line each: "R<tag> <reply>" or "E <event>"
 * (" [deadline]" after a LOST of a hold deadline), and when. */
static char seen[64][600];
static double seen_ms[64];
static int nseen;

static void on_reply(struct lockd_client *c, const struct lockd_reply *r, void *tag, void *arg)
{
	if (nseen < 64) {
		seen_ms[nseen] = now_ms();
		snprintf(seen[nseen++], sizeof(seen[0]), "R%d %s", (int)(intptr_t)tag, r->line);
	}
}

static void on_event(struct lockd_client *c, const struct lockd_event *ev, void *arg)
{
	if (nseen < 64) {
		seen_ms[nseen] = now_ms();
		snprintf(seen[nseen++], sizeof(seen[0]), "E %s%s", ev->line,
		         ev->by_deadline ? " [deadline]" : "");
	}
}

static int seen_index(const char *prefix)
{
	for (int i = 0; i < nseen; i++)
		if (strncmp(seen[i], prefix, strlen(prefix)) == 0)
			return i;
	return -1;
}

static int seen_count(const char *prefix)
{
	int n = 0;
	for (int i = 0; i < nseen; i++)
		n += strncmp(seen[i], prefix, strlen(prefix)) == 0;
	return n;
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

/* Connect with resume, answer SESSION (grace), hold k (fence 7). The
 * hold deadlines are off (-1): these tests follow the lines of a resume
 * (the "deadline" tests below have them on). */
static struct lockd_client *session(int lfd, int *s, int grace)
{
	struct lockd_opts o = LOCKD_OPTS_INIT;
	o.unix_path = path_a;
	o.resume = 1;
	o.connect_timeout_ms = 1000;
	o.hold_deadlines = -1;
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

/* ------------------------------------------------------------ hold deadlines */

/* The next line lockd reads from s within ms, stepping c: into buf (with
 * its LF); 0 when none came. */
static int next_line(struct lockd_client *c, int s, char *buf, size_t cap, int ms)
{
	size_t len = 0;
	double end = now_ms() + ms;
	while (len + 1 < cap) {
		struct pollfd pf = {s, POLLIN, 0};
		if (poll(&pf, 1, 0) > 0) {
			if (read(s, buf + len, 1) != 1)
				break;
			if (buf[len++] == '\n') {
				buf[len] = '\0';
				return 1;
			}
			continue;
		}
		if (now_ms() >= end)
			break;
		step(c);
	}
	buf[len] = '\0';
	return 0;
}

/* A client with the defaults (hold deadlines on), no resume. */
static struct lockd_client *plain(int lfd, int *s, int deadlines)
{
	struct lockd_opts o = LOCKD_OPTS_INIT;
	o.unix_path = path_a;
	o.connect_timeout_ms = 1000;
	o.hold_deadlines = deadlines;
	struct lockd_client *c = NULL;
	ck_assert_int_eq(lockd_connect_start(&o, &c), LOCKD_OK);
	lockd_set_callbacks(c, on_reply, on_event, NULL);
	*s = accept_one(c, lfd);
	return c;
}

/* Step c until an event beginning with prefix is seen, at most ms: its
 * index, or -1. */
static int wait_event(struct lockd_client *c, const char *prefix, int ms)
{
	double end = now_ms() + ms;
	while (seen_index(prefix) < 0 && now_ms() < end)
		step(c);
	return seen_index(prefix);
}

/* LOCK k is granted with the HELD right behind it (ttl_ms 2000). While
 * lockd answers the heartbeats, nothing is lost; once lockd stops
 * answering (frozen), LOST k comes, marked by_deadline, before the last
 * answered heartbeat's sending + ttl_ms; lockd's own LOST for it, late,
 * is not handed again. */
START_TEST(deadline_frozen)
{
	int lfd = listen_at(path_a), s;
	struct lockd_client *c = plain(lfd, &s, 0);
	ck_assert_int_eq(lockd_send(c, "LOCK k", -1, (void *)1), LOCKD_OK);
	expect_line(c, s, "LOCK k\n");
	expect_line(c, s, "HELD\n");
	say(s, "OK 7\r\nKEY k 7 1 2000\r\nEND\r\n");
	wait_seen(c, "R1 OK 7");
	char line[600];
	int beats = 0;
	double end = now_ms() + 2500, t_answered = 0;
	while (now_ms() < end) {
		if (!next_line(c, s, line, sizeof(line), (int)(end - now_ms()) + 1))
			continue;
		t_answered = now_ms();
		ck_assert_str_eq(line, "HELD\n");
		beats++;
		say(s, "KEY k 7 1 2000\r\nEND\r\n");
	}
	/* a third of ttl_ms apart: 3 in 2.5 s, fewer when the machine is slow */
	ck_assert_msg(beats >= 2 && beats <= 5, "%d heartbeats in 2.5 s (ttl_ms 2000)", beats);
	ck_assert_int_lt(seen_index("E LOST"), 0);
	ck_assert_msg(next_line(c, s, line, sizeof(line), 1000), "no heartbeat");
	ck_assert_str_eq(line, "HELD\n");
	int i = wait_event(c, "E LOST", 2000);
	ck_assert_msg(i >= 0, "no LOST within 2 s of an unanswered heartbeat");
	ck_assert_str_eq(seen[i], "E LOST k 7 [deadline]");
	/* the last answered HELD was sent before lockd read it: the hold's
	   deadline is within ttl_ms of t_answered */
	double after = seen_ms[i] - t_answered;
	ck_assert_msg(after < 2000, "LOST %.0f ms after the last confirmation (ttl_ms 2000)",
	              after);
	ck_assert_msg(after > 1600, "LOST %.0f ms after the last confirmation: early", after);
	ck_assert_int_eq(lockd_status(c), LOCKD_OK);
	/* lockd wakes up: its LOST, then the heartbeat's reply */
	say(s, "LOST k 7\r\nEND\r\n");
	ck_assert_int_eq(lockd_send(c, "PING", -1, (void *)2), LOCKD_OK);
	expect_line(c, s, "PING\n");
	say(s, "PONG\r\n");
	wait_seen(c, "R2 PONG");
	ck_assert_int_eq(seen_count("E LOST"), 1);
	ck_assert_int_eq(lockd_pending(c), 0);
	lockd_close(c);
	close(s);
	close(lfd);
}
END_TEST

/* A resumable session whose lockd is gone, none to resume on: LOST k
 * comes by its deadline while the library still tries to resume (not at
 * the end of the grace, 4 s), and not again when it gives up. */
START_TEST(deadline_while_resuming)
{
	int lfd = listen_at(path_a), s;
	struct lockd_opts o = LOCKD_OPTS_INIT;
	o.unix_path = path_a;
	o.resume = 1;
	o.connect_timeout_ms = 1000;
	struct lockd_client *c = NULL;
	ck_assert_int_eq(lockd_connect_start(&o, &c), LOCKD_OK);
	lockd_set_callbacks(c, on_reply, on_event, NULL);
	s = accept_one(c, lfd);
	expect_line(c, s, "SESSION\n");
	say(s, "SESSION s1 " SECRET " 4000\r\n");
	ck_assert_int_eq(lockd_send(c, "LOCK k", -1, (void *)1), LOCKD_OK);
	expect_line(c, s, "LOCK k\n");
	expect_line(c, s, "HELD\n");
	double t_held = now_ms();
	say(s, "OK 7\r\nKEY k 7 1 2000\r\nEND\r\n");
	wait_seen(c, "R1 OK 7");
	close(lfd);
	unlink(path_a);
	close(s);
	int i = wait_event(c, "E LOST", 3000);
	ck_assert_msg(i >= 0, "no LOST within 3 s");
	ck_assert_str_eq(seen[i], "E LOST k 7 [deadline]");
	ck_assert_int_ge(seen_index("E RESUMING"), 0);
	ck_assert_int_lt(seen_index("E RESUMING"), i);
	ck_assert_msg(seen_ms[i] - t_held < 2000, "LOST %.0f ms after the HELD (ttl_ms 2000)",
	              seen_ms[i] - t_held);
	ck_assert_int_eq(lockd_status(c), LOCKD_OK); /* still resuming */
	int rc = LOCKD_OK;
	double end = now_ms() + 5000;
	while (rc == LOCKD_OK && now_ms() < end) {
		rc = lockd_step(c);
		struct pollfd pf = {lockd_fd(c), lockd_want(c), 0};
		int t = lockd_timeout_ms(c);
		poll(&pf, 1, t < 0 || t > 10 ? 10 : t);
	}
	ck_assert_int_eq(rc, LOCKD_ENOSESSION);
	ck_assert_int_eq(seen_count("E LOST"), 1);
	lockd_close(c);
}
END_TEST

/* A LOCK that waited (800 ms): the HELD behind it measured ttl_ms at the
 * grant, so the deadline counts from the grant's arrival (not from the
 * HELD's sending, 800 ms earlier), and a heartbeat goes out at once to
 * confirm it. Unanswered, the hold is lost within ttl_ms of the grant. */
START_TEST(deadline_waited_grant)
{
	int lfd = listen_at(path_a), s;
	struct lockd_client *c = plain(lfd, &s, 0);
	ck_assert_int_eq(lockd_send(c, "LOCK k", -1, (void *)1), LOCKD_OK);
	expect_line(c, s, "LOCK k\n");
	expect_line(c, s, "HELD\n");
	double end = now_ms() + 800;
	while (now_ms() < end)
		step(c);
	double t_grant = now_ms();
	say(s, "OK 7\r\nKEY k 7 1 2000\r\nEND\r\n");
	char line[600];
	ck_assert_msg(next_line(c, s, line, sizeof(line), 300), "no heartbeat after the grant");
	ck_assert_str_eq(line, "HELD\n");
	int i = wait_event(c, "E LOST", 3000);
	ck_assert_msg(i >= 0, "no LOST within 3 s");
	ck_assert_str_eq(seen[i], "E LOST k 7 [deadline]");
	double after = seen_ms[i] - t_grant;
	ck_assert_msg(after < 2000 && after > 1600, "LOST %.0f ms after the grant (ttl_ms 2000)",
	              after);
	lockd_close(c);
	close(s);
	close(lfd);
}
END_TEST

/* A grant whose HELD, right behind it, is never answered (lockd stopped
 * just after its OK): reported lost at once (100 ms), not never. */
START_TEST(deadline_grant_unconfirmed)
{
	int lfd = listen_at(path_a), s;
	struct lockd_client *c = plain(lfd, &s, 0);
	ck_assert_int_eq(lockd_send(c, "TRYLOCK k", -1, (void *)1), LOCKD_OK);
	expect_line(c, s, "TRYLOCK k\n");
	expect_line(c, s, "HELD\n");
	double t_grant = now_ms();
	say(s, "OK 7\r\n");
	int i = wait_event(c, "E LOST", 2000);
	ck_assert_msg(i >= 0, "no LOST within 2 s");
	ck_assert_str_eq(seen[i], "E LOST k 7 [deadline]");
	ck_assert_msg(seen_ms[i] - t_grant < 500, "%.0f ms", seen_ms[i] - t_grant);
	lockd_close(c);
	close(s);
	close(lfd);
}
END_TEST

/* The client fails (lockd closed the connection of a session that is not
 * resumable): each hold is LOST before the error is returned, as when a
 * session cannot be resumed. */
START_TEST(deadline_client_fails)
{
	int lfd = listen_at(path_a), s;
	struct lockd_client *c = plain(lfd, &s, 0);
	ck_assert_int_eq(lockd_send(c, "LOCK k", -1, (void *)1), LOCKD_OK);
	expect_line(c, s, "LOCK k\n");
	expect_line(c, s, "HELD\n");
	say(s, "OK 7\r\nKEY k 7 1 5000\r\nEND\r\n");
	wait_seen(c, "R1 OK 7");
	close(s);
	int rc = LOCKD_OK;
	double end = now_ms() + 2000;
	while (rc == LOCKD_OK && now_ms() < end) {
		rc = lockd_step(c);
		usleep(1000);
	}
	ck_assert_int_eq(rc, LOCKD_ECLOSED);
	ck_assert_int_ge(seen_index("E LOST k 7"), 0);
	ck_assert_str_eq(seen[seen_index("E LOST k 7")], "E LOST k 7");
	ck_assert_int_eq(seen_count("E LOST"), 1);
	lockd_close(c);
	close(lfd);
}
END_TEST

/* Which requests get a HELD behind them: each that may grant (TRYLOCK,
 * LOCK) its own, a LOCK of a key held (reentrant) none, and none at all
 * with hold_deadlines -1. A HELD reply that no longer lists a key held is
 * a LOST (lockd does not hold it), not a deadline's. An EXTEND to a
 * shorter lease shortens the deadline from its sending, whatever its
 * reply, and whatever a HELD queued before it says. */
START_TEST(deadline_requests)
{
	int lfd = listen_at(path_a), s;
	struct lockd_client *c = plain(lfd, &s, 1);
	ck_assert_int_eq(lockd_send_trylock(c, "a", 0, 0, -1, (void *)1), LOCKD_OK);
	ck_assert_int_eq(lockd_send_trylock(c, "b", 0, 0, -1, (void *)2), LOCKD_OK);
	ck_assert_int_eq(lockd_send_lock(c, "c", 0, -1, 0, -1, (void *)3), LOCKD_OK);
	expect_line(c, s, "TRYLOCK a\n");
	expect_line(c, s, "HELD\n");
	expect_line(c, s, "TRYLOCK b\n");
	expect_line(c, s, "HELD\n");
	expect_line(c, s, "LOCK c\n");
	expect_line(c, s, "HELD\n");
	say(s, "OK 1\r\nKEY a 1 1 5000\r\nEND\r\nOK 2\r\nKEY a 1 1 5000\r\nKEY b 2 1 5000\r\n"
	       "END\r\nOK 3\r\nKEY a 1 1 5000\r\nKEY c 3 1 5000\r\nEND\r\n");
	int i = wait_event(c, "E LOST", 1000);
	ck_assert_msg(i >= 0, "no LOST b");
	ck_assert_str_eq(seen[i], "E LOST b 2");
	ck_assert_int_ge(seen_index("R3 OK 3"), 0);
	ck_assert_int_eq(lockd_send_lock(c, "a", 0, 0, 0, -1, (void *)4), LOCKD_OK);
	expect_line(c, s, "LOCK a WAIT 0\n");
	say(s, "OK 1\r\n");
	wait_seen(c, "R4 OK 1");
	expect_silence(c, s);
	/* a HELD queued before the EXTEND, answered with the old lease, does
	   not undo it */
	ck_assert_int_eq(lockd_send(c, "HELD", -1, (void *)7), LOCKD_OK);
	double t_ext = now_ms();
	ck_assert_int_eq(lockd_send_extend(c, "c", 1000, -1, (void *)5), LOCKD_OK);
	expect_line(c, s, "HELD\n");
	expect_line(c, s, "EXTEND c 1000\n");
	say(s, "KEY a 1 2 5000\r\nKEY c 3 1 5000\r\nEND\r\n");
	wait_seen(c, "R7 ");
	i = wait_event(c, "E LOST c", 2000);
	ck_assert_msg(i >= 0, "no LOST c within 2 s of EXTEND c 1000");
	ck_assert_str_eq(seen[i], "E LOST c 3 [deadline]");
	ck_assert_msg(seen_ms[i] - t_ext < 1000, "%.0f ms", seen_ms[i] - t_ext);
	lockd_close(c);
	close(s);
	/* off: the lines of interface 4 */
	c = plain(lfd, &s, -1);
	ck_assert_int_eq(lockd_send(c, "LOCK k", -1, (void *)6), LOCKD_OK);
	expect_line(c, s, "LOCK k\n");
	say(s, "OK 9\r\n");
	wait_seen(c, "R6 OK 9");
	expect_silence(c, s);
	lockd_close(c);
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
	tc = tcase_create("deadline");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20); /* each waits for deadlines of 2 s */
	tcase_add_test(tc, deadline_frozen);
	tcase_add_test(tc, deadline_while_resuming);
	tcase_add_test(tc, deadline_waited_grant);
	tcase_add_test(tc, deadline_grant_unconfirmed);
	tcase_add_test(tc, deadline_requests);
	tcase_add_test(tc, deadline_client_fails);
	suite_add_tcase(su, tc);
	return su;
}
