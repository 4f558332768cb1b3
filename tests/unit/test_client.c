/* Unit tests of liblockd (lib/client.c) on a socketpair: the test plays
 * lockd on the other end, byte by byte where it matters. TLS is
 * test_client_tls.c's, resumable sessions test_client_resume.c's. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lockd/client.h"
#include "units.h"

/* What the callbacks saw, in order: "R<tag>:<line>" or "E:<line>", with
 * a list's lines joined by '|'. */
struct seen {
	char log[4096];
	int nreplies, nevents;
	struct lockd_reply last;
	char last_line[256];
	char last_code[16];
	int close_in_cb;
	int nin_list;      /* events that came inside a list reply */
	char lines[1024];  /* what the line callback saw: "<line>|" each */
	int take;          /* the line callback takes lines (1) or passes them on (0) */
	int close_at_line; /* > 0: the line callback closes the client at that line */
	int nlines_seen;
	char evx[512]; /* each event's "<kind>:<value> " */
};

static void log_add(struct seen *s, const char *fmt, const char *a, const char *b)
{
	size_t o = strlen(s->log);
	snprintf(s->log + o, sizeof(s->log) - o, fmt, a, b);
}

static void on_reply(struct lockd_client *c, const struct lockd_reply *r, void *tag, void *arg)
{
	struct seen *s = arg;
	char t[16];
	snprintf(t, sizeof(t), "%d", (int)(intptr_t)tag);
	log_add(s, "R%s:%s", t, r->line);
	for (size_t i = 1; i < r->nlines; i++)
		log_add(s, "|%s%s", r->lines[i], "");
	log_add(s, "%s%s", r->kind == LOCKD_R_LIST && r->nlines ? "|END" : "", " ");
	s->nreplies++;
	s->last = *r;
	snprintf(s->last_line, sizeof(s->last_line), "%s", r->line);
	snprintf(s->last_code, sizeof(s->last_code), "%s", r->code);
	if (s->close_in_cb)
		lockd_close(c);
}

static void on_event(struct lockd_client *c, const struct lockd_event *ev, void *arg)
{
	struct seen *s = arg;
	char f[32];
	snprintf(f, sizeof(f), "%llu", (unsigned long long)ev->fence);
	log_add(s, "E:%s/%s", ev->key, f);
	log_add(s, "%s%s", "", " ");
	s->nevents++;
	s->nin_list += ev->in_list;
	size_t o = strlen(s->evx);
	snprintf(s->evx + o, sizeof(s->evx) - o, "%d:%s ", (int)ev->kind, ev->value);
}

static int on_line(struct lockd_client *c, const char *line, size_t len, void *arg)
{
	struct seen *s = arg;
	ck_assert_uint_eq(strlen(line), len);
	size_t o = strlen(s->lines);
	snprintf(s->lines + o, sizeof(s->lines) - o, "%s|", line);
	if (++s->nlines_seen == s->close_at_line)
		lockd_close(c);
	return s->take;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* A client on one end of a socketpair; *peer is the other end (lockd). */
static struct lockd_client *pair(int *peer, const char *password, struct seen *s)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct lockd_opts o = {
	    .size = sizeof(struct lockd_opts), .password = password, .max_line = 64};
	struct lockd_client *c = NULL;
	ck_assert_int_eq(lockd_open_fd(sv[0], &o, &c), LOCKD_OK);
	ck_assert_ptr_nonnull(c);
	if (s) {
		memset(s, 0, sizeof(*s));
		lockd_set_callbacks(c, on_reply, on_event, s);
	}
	*peer = sv[1];
	return c;
}

static void peer_write(int peer, const char *bytes)
{
	size_t n = strlen(bytes);
	ck_assert_int_eq(write(peer, bytes, n), (ssize_t)n);
}

/* What the client wrote, as far as it is there within timeout_ms. */
static void peer_expect(int peer, const char *want, int timeout_ms)
{
	char buf[1024];
	size_t len = 0, n = strlen(want);
	double end = now_ms() + timeout_ms;
	while (len < n && now_ms() < end) {
		struct pollfd pf = {peer, POLLIN, 0};
		if (poll(&pf, 1, 10) <= 0)
			continue;
		ssize_t k = read(peer, buf + len, n - len);
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	buf[len] = '\0';
	ck_assert_str_eq(buf, want);
}

static void step_ok(struct lockd_client *c)
{
	ck_assert_int_eq(lockd_step(c), LOCKD_OK);
}

START_TEST(request_bytes_and_pipelining)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	ck_assert(lockd_ready(c));
	ck_assert_int_eq(lockd_send(c, "LOCK a WAIT 5", -1, (void *)1), LOCKD_OK);
	ck_assert_int_eq(lockd_sendf(c, -1, (void *)2, "UNLOCK %s", "a"), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "PING", -1, (void *)3), LOCKD_OK);
	ck_assert_uint_eq(lockd_pending(c), 3);
	ck_assert(lockd_want(c) & POLLOUT);
	step_ok(c);
	ck_assert_int_eq(lockd_want(c), POLLIN);
	peer_expect(peer, "LOCK a WAIT 5\nUNLOCK a\nPING\n", 1000);
	peer_write(peer, "OK 41\r\nOK 0\r\nPONG\r\n");
	step_ok(c);
	ck_assert_str_eq(s.log, "R1:OK 41 R2:OK 0 R3:PONG ");
	ck_assert_uint_eq(lockd_pending(c), 0);
	lockd_close(c);
	close(peer);
}
END_TEST

START_TEST(split_replies)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	ck_assert_int_eq(lockd_send(c, "LOCK k", -1, (void *)7), LOCKD_OK);
	step_ok(c);
	const char *pieces[] = {"O", "K", " 1763893200123457", "\r", "\n"};
	for (size_t i = 0; i < 5; i++) {
		ck_assert_int_eq(s.nreplies, 0);
		peer_write(peer, pieces[i]);
		step_ok(c);
	}
	ck_assert_int_eq(s.nreplies, 1);
	ck_assert_int_eq(s.last.kind, LOCKD_R_OK);
	ck_assert_int_eq(s.last.has_num, 1);
	ck_assert(s.last.num == 1763893200123457ULL);
	/* a reply and the start of the next in one piece */
	ck_assert_int_eq(lockd_send(c, "STATUS k", -1, (void *)8), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "TRYLOCK j", -1, (void *)9), LOCKD_OK);
	step_ok(c);
	peer_write(peer, "HELD 29997 2\r\nBU");
	step_ok(c);
	ck_assert_int_eq(s.nreplies, 2);
	ck_assert_int_eq(s.last.kind, LOCKD_R_HELD);
	ck_assert(s.last.num == 29997 && s.last.num2 == 2);
	peer_write(peer, "SY\r\n");
	step_ok(c);
	ck_assert_int_eq(s.last.kind, LOCKD_R_BUSY);
	ck_assert_str_eq(s.log, "R7:OK 1763893200123457 R8:HELD 29997 2 R9:BUSY ");
	lockd_close(c);
	close(peer);
}
END_TEST

START_TEST(events_between_replies)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	/* an event with nothing asked */
	peer_write(peer, "LOST a 7\r\n");
	step_ok(c);
	ck_assert_str_eq(s.log, "E:a/7 ");
	ck_assert_int_eq(lockd_send(c, "UNLOCK b", -1, (void *)1), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "PING x", -1, (void *)2), LOCKD_OK);
	step_ok(c);
	peer_write(peer,
	           "LOST b 8\r\nERR NOTHELD the lock was lost\r\nLOST c 9\r\nLOST\r\nPONG x\r\n");
	step_ok(c);
	ck_assert_str_eq(s.log,
	                 "E:a/7 E:b/8 R1:ERR NOTHELD the lock was lost E:c/9 E:/0 R2:PONG x ");
	ck_assert_int_eq(s.nevents, 4);
	ck_assert_int_eq(s.last.kind, LOCKD_R_PONG);
	ck_assert_uint_eq(lockd_pending(c), 0);
	/* the ERR was parsed */
	lockd_close(c);
	close(peer);
}
END_TEST

/* Protocol 1.3: ELECTED and NOLEADER are events (typed, with the name,
 * fence and value), between replies and inside lists alike, never a
 * reply; LEADER's replies are typed; the election requests check name
 * and value before anything is sent. */
START_TEST(election_events_and_requests)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	peer_write(peer, "ELECTED e 3 node-a\r\nNOLEADER e\r\n");
	step_ok(c);
	ck_assert_str_eq(s.log, "E:e/3 E:e/0 ");
	ck_assert_str_eq(s.evx, "4:node-a 5: ");
	ck_assert_int_eq(LOCKD_E_ELECTED, 4);
	ck_assert_int_eq(LOCKD_E_NOLEADER, 5);
	/* OBSERVE's OK comes after its first event here: still its reply */
	ck_assert_int_eq(lockd_send_observe(c, "e", -1, (void *)1), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "HELD", -1, (void *)2), LOCKD_OK);
	step_ok(c);
	peer_expect(peer, "OBSERVE e\nHELD\n", 1000);
	peer_write(peer, "ELECTED e 3 node-a\r\nOK\r\nKEY a 1 1 9\r\nELECTED e 4 node-b\r\n"
	                 "NOLEADER e\r\nEND\r\n");
	step_ok(c);
	ck_assert_str_eq(s.log, "E:e/3 E:e/0 E:e/3 R1:OK E:e/4 E:e/0 R2:KEY a 1 1 9|END ");
	ck_assert_int_eq(s.nin_list, 2);
	ck_assert_int_eq(s.nreplies, 2);
	/* blocking LEADER: events before its reply go to the callback */
	peer_write(peer, "ELECTED e 5 node-c\r\nLEADER 5 node-c\r\n");
	const struct lockd_reply *r = NULL;
	ck_assert_int_eq(lockd_leader(c, "e", 1000, &r), LOCKD_OK);
	ck_assert_int_eq(r->kind, LOCKD_R_LEADER);
	ck_assert_int_eq(r->has_num, 1);
	ck_assert_uint_eq(r->num, 5);
	ck_assert_str_eq(r->value, "node-c");
	peer_expect(peer, "LEADER e\n", 1000);
	peer_write(peer, "NONE\r\n");
	ck_assert_int_eq(lockd_leader(c, "e", 1000, &r), LOCKD_OK);
	ck_assert_int_eq(r->kind, LOCKD_R_NONE);
	ck_assert_str_eq(r->value, "");
	peer_expect(peer, "LEADER e\n", 1000);
	peer_write(peer, "OK 9\r\n");
	ck_assert_int_eq(lockd_campaign(c, "e", "me", 100, 1000, &r), LOCKD_OK);
	ck_assert_uint_eq(r->num, 9);
	peer_expect(peer, "CAMPAIGN e me WAIT 100\n", 1000);
	peer_write(peer, "ERR NOTLEADER this session does not lead that election\r\n");
	ck_assert_int_eq(lockd_proclaim(c, "e", "v2", 1000, &r), LOCKD_OK);
	ck_assert_str_eq(r->code, "NOTLEADER");
	peer_expect(peer, "PROCLAIM e v2\n", 1000);
	ck_assert_int_eq(lockd_send_resign(c, "e", -1, NULL), LOCKD_OK);
	ck_assert_int_eq(lockd_send_unobserve(c, "e", -1, NULL), LOCKD_OK);
	step_ok(c);
	peer_expect(peer, "RESIGN e\nUNOBSERVE e\n", 1000);
	peer_write(peer, "OK\r\nOK\r\n");
	step_ok(c);
	ck_assert_uint_eq(lockd_pending(c), 0);
	/* refused before anything is sent */
	ck_assert_int_eq(lockd_campaign(c, "e", "a b", -1, 1000, &r), LOCKD_EARG);
	ck_assert_int_eq(lockd_send_campaign(c, "e", "", -1, -1, NULL), LOCKD_EARG);
	ck_assert_int_eq(lockd_send_proclaim(c, "e", NULL, -1, NULL), LOCKD_EARG);
	ck_assert_int_eq(lockd_send_proclaim(c, "e", "v\r\nQUIT", -1, NULL), LOCKD_EARG);
	ck_assert_int_eq(lockd_send_observe(c, "e x", -1, NULL), LOCKD_EKEY);
	ck_assert_int_eq(lockd_send_leader(c, "", -1, NULL), LOCKD_EKEY);
	ck_assert_int_eq(lockd_resign(c, "e", 1000, NULL), LOCKD_EARG);
	ck_assert_int_eq(lockd_check_value("v"), LOCKD_OK);
	ck_assert_int_eq(lockd_check_value("v\x7f"), LOCKD_EARG);
	ck_assert_uint_eq(lockd_pending(c), 0);
	ck_assert_int_eq(lockd_status(c), LOCKD_OK);
	lockd_close(c);
	char b[8];
	ck_assert_int_eq(read(peer, b, sizeof(b)), 0); /* no byte of the refused ones */
	close(peer);
}
END_TEST

/* lockd_wait hands over what has already arrived without waiting out its
 * timeout; with nothing there, it waits once. */
START_TEST(wait_returns_with_what_arrived)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	peer_write(peer, "LOST a 7\r\n");
	double t0 = now_ms();
	ck_assert_int_eq(lockd_wait(c, 3000), LOCKD_OK);
	ck_assert_str_eq(s.log, "E:a/7 ");
	ck_assert_msg(now_ms() - t0 < 1000, "lockd_wait took %.0f ms with an event there",
	              now_ms() - t0);
	t0 = now_ms();
	ck_assert_int_eq(lockd_wait(c, 200), LOCKD_OK);
	ck_assert_msg(now_ms() - t0 >= 150, "lockd_wait returned after %.0f ms with nothing",
	              now_ms() - t0);
	ck_assert_int_eq(s.nevents, 1);
	lockd_close(c);
	close(peer);
}
END_TEST

START_TEST(error_replies_parsed)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	ck_assert_int_eq(lockd_send(c, "LOCK", -1, NULL), LOCKD_OK);
	step_ok(c);
	peer_write(peer, "ERR PROTOCOL missing key\r\n");
	step_ok(c);
	ck_assert_int_eq(s.last.kind, LOCKD_R_ERR);
	ck_assert_str_eq(s.last_code, "PROTOCOL");
	ck_assert_int_eq(lockd_send(c, "LOCK k WAIT 1", -1, NULL), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "STATUS k", -1, NULL), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "STATUS k", -1, NULL), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "AUTH x", -1, NULL), LOCKD_OK);
	step_ok(c);
	peer_write(peer, "TIMEOUT\r\n");
	step_ok(c);
	ck_assert_int_eq(s.last.kind, LOCKD_R_TIMEOUT);
	peer_write(peer, "FREE\r\n");
	step_ok(c);
	ck_assert_int_eq(s.last.kind, LOCKD_R_FREE);
	peer_write(peer, "SHARED 2 100 0\r\n");
	step_ok(c);
	ck_assert_int_eq(s.last.kind, LOCKD_R_OTHER);
	peer_write(peer, "OK\r\n");
	step_ok(c);
	ck_assert_int_eq(s.last.kind, LOCKD_R_OK);
	ck_assert_int_eq(s.last.has_num, 0);
	lockd_close(c);
	close(peer);
}
END_TEST

START_TEST(multi_line_replies)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	ck_assert_int_eq(lockd_send(c, "held", -1, (void *)1), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "  STATS", -1, (void *)2), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "HELD", -1, (void *)3), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "STATS", -1, (void *)4), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "HELDX", -1, (void *)5), LOCKD_OK);
	step_ok(c);
	/* a list in pieces, an event before it */
	peer_write(peer, "LOST z 1\r\nKEY a 11 1 500\r\nKEY b 1");
	step_ok(c);
	ck_assert_int_eq(s.nreplies, 0);
	peer_write(peer, "2 2 400\r\nEN");
	step_ok(c);
	ck_assert_int_eq(s.nreplies, 0);
	peer_write(peer, "D\r\n");
	step_ok(c);
	ck_assert_int_eq(s.nreplies, 1);
	ck_assert_int_eq(s.last.kind, LOCKD_R_LIST);
	ck_assert_uint_eq(s.last.nlines, 2);
	/* STATS, then an empty HELD, then an error instead of a list */
	peer_write(peer, "STAT pid 12\r\nSTAT uptime 3\r\nEND\r\nEND\r\nERR NOAUTH AUTH first\r\n");
	step_ok(c);
	/* a reply that is one line because its command is not HELD */
	peer_write(peer, "ERR PROTOCOL unknown command\r\n");
	step_ok(c);
	ck_assert_str_eq(s.log, "E:z/1 R1:KEY a 11 1 500|KEY b 12 2 400|END "
	                        "R2:STAT pid 12|STAT uptime 3|END R3:END "
	                        "R4:ERR NOAUTH AUTH first R5:ERR PROTOCOL unknown command ");
	lockd_close(c);
	close(peer);
}
END_TEST

/* A LOST between the lines of a list (protocol 1 never sends one there)
 * is still an event, marked in_list; one after the END is not. */
START_TEST(event_inside_list)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	ck_assert_int_eq(lockd_send(c, "HELD", -1, (void *)1), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "STATS", -1, (void *)2), LOCKD_OK);
	step_ok(c);
	peer_write(peer, "LOST y 3\r\nKEY a 11 1 500\r\nLOST a 11\r\nEND\r\nLOST b 2\r\n");
	step_ok(c);
	ck_assert_str_eq(s.log, "E:y/3 E:a/11 R1:KEY a 11 1 500|END E:b/2 ");
	ck_assert_int_eq(s.nevents, 3);
	ck_assert_int_eq(s.nin_list, 1);
	/* the first line of a list is not inside it yet */
	peer_write(peer, "LOST c 4\r\nSTAT pid 1\r\nEND\r\n");
	step_ok(c);
	ck_assert_int_eq(s.nin_list, 1);
	ck_assert_int_eq(s.nreplies, 2);
	lockd_close(c);
	close(peer);
}
END_TEST

/* The line callback sees every line in order before it is a reply or an
 * event; lines it takes are neither, and answer no request. */
START_TEST(line_callback)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	lockd_set_line_callback(c, on_line, &s);
	ck_assert_int_eq(lockd_send(c, "HELD", -1, (void *)1), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "PING", -1, (void *)2), LOCKD_OK);
	step_ok(c);
	peer_write(peer, "KEY a 1 1 5\r\nEND\r\nLOST a 1\r\nPONG\r\n");
	step_ok(c);
	ck_assert_str_eq(s.lines, "KEY a 1 1 5|END|LOST a 1|PONG|");
	ck_assert_str_eq(s.log, "R1:KEY a 1 1 5|END E:a/1 R2:PONG ");
	/* taken: a line without a request is no fault, an event no event,
	 * and a request stays unanswered */
	s.take = 1;
	s.lines[0] = '\0';
	ck_assert_int_eq(lockd_send(c, "PING x", -1, (void *)3), LOCKD_OK);
	step_ok(c);
	peer_write(peer, "ERR LIMIT too many clients\r\nLOST b 2\r\nPONG x\r\n");
	step_ok(c);
	ck_assert_str_eq(s.lines, "ERR LIMIT too many clients|LOST b 2|PONG x|");
	ck_assert_int_eq(s.nreplies, 2);
	ck_assert_int_eq(s.nevents, 1);
	ck_assert_uint_eq(lockd_pending(c), 1);
	/* framing is still checked before the callback */
	peer_write(peer, "PONG y\n");
	ck_assert_int_eq(lockd_step(c), LOCKD_EPROTO);
	ck_assert_str_eq(s.lines, "ERR LIMIT too many clients|LOST b 2|PONG x|");
	lockd_close(c);
	close(peer);
	/* closed from the line callback: no reply for that line, nor after */
	c = pair(&peer, NULL, &s);
	lockd_set_line_callback(c, on_line, &s);
	s.close_at_line = 2;
	ck_assert_int_eq(lockd_send(c, "PING 1", -1, (void *)1), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "PING 2", -1, (void *)2), LOCKD_OK);
	step_ok(c);
	peer_write(peer, "PONG 1\r\nPONG 2\r\nPONG 3\r\n");
	ck_assert_int_eq(lockd_step(c), LOCKD_ECLOSED);
	ck_assert_str_eq(s.lines, "PONG 1|PONG 2|");
	ck_assert_str_eq(s.log, "R1:PONG 1 ");
	close(peer);
}
END_TEST

/* A list much bigger than the input buffer's start, and a line of exactly
 * max_line bytes. */
START_TEST(big_list)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	ck_assert_int_eq(lockd_send(c, "HELD", -1, NULL), LOCKD_OK);
	step_ok(c);
	char line[64];
	for (int i = 0; i < 3000; i++) {
		snprintf(line, sizeof(line), "KEY key-%05d %d 1 29000\r\n", i, i + 1);
		peer_write(peer, line);
		if (i % 50 == 0) /* small writes fill a socketpair quickly */
			step_ok(c);
	}
	char max[80];
	memset(max, 'x', 64);
	memcpy(max, "KEY ", 4);
	memcpy(max + 64, "\r\nEND\r\n", 8);
	max[72] = '\0';
	peer_write(peer, max);
	double end = now_ms() + 2000;
	while (s.nreplies == 0 && now_ms() < end)
		ck_assert_int_eq(lockd_wait(c, 100), LOCKD_OK);
	ck_assert_int_eq(s.nreplies, 1);
	ck_assert_int_eq(s.last.kind, LOCKD_R_LIST);
	ck_assert_uint_eq(s.last.nlines, 3001);
	lockd_close(c);
	close(peer);
}
END_TEST

START_TEST(blocking_call)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	/* the reply is written before the call: it is read by the call */
	peer_write(peer, "LOST q 3\r\nKEY q 4 1 99\r\nEND\r\nLOST r 5\r\n");
	const struct lockd_reply *r = NULL;
	ck_assert_int_eq(lockd_call(c, "HELD", 1000, &r), LOCKD_OK);
	ck_assert_int_eq(r->kind, LOCKD_R_LIST);
	ck_assert_uint_eq(r->nlines, 1);
	ck_assert_str_eq(r->lines[0], "KEY q 4 1 99");
	/* both events were given, the one after the reply too */
	ck_assert_str_eq(s.log, "E:q/3 E:r/5 ");
	peer_expect(peer, "HELD\n", 1000);
	/* the call's reply stays valid while events come */
	peer_write(peer, "LOST s 6\r\n");
	ck_assert_int_eq(lockd_wait(c, 1000), LOCKD_OK);
	ck_assert_str_eq(r->lines[0], "KEY q 4 1 99");
	ck_assert_int_eq(s.nevents, 3);
	/* lockd_call with a lockd_send request unanswered: refused, nothing sent */
	ck_assert_int_eq(lockd_send(c, "PING", -1, NULL), LOCKD_OK);
	ck_assert_int_eq(lockd_call(c, "PING", 100, &r), LOCKD_ESTATE);
	ck_assert_int_eq(lockd_status(c), LOCKD_OK);
	peer_write(peer, "PONG\r\n");
	ck_assert_int_eq(lockd_wait(c, 1000), LOCKD_OK);
	ck_assert_uint_eq(lockd_pending(c), 0);
	/* a long request */
	char key[700];
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	peer_write(peer, "FREE\r\n");
	ck_assert_int_eq(lockd_callf(c, 1000, &r, "STATUS %s", key), LOCKD_OK);
	ck_assert_int_eq(r->kind, LOCKD_R_FREE);
	ck_assert(r->latency_us >= 0);
	lockd_close(c);
	close(peer);
}
END_TEST

START_TEST(reply_timeout)
{
	int peer;
	struct lockd_client *c = pair(&peer, NULL, NULL);
	const struct lockd_reply *r = NULL;
	double t0 = now_ms();
	ck_assert_int_eq(lockd_call(c, "PING", 150, &r), LOCKD_ETIMEDOUT);
	double took = now_ms() - t0;
	ck_assert_msg(took >= 145 && took < 1000, "timed out after %.1f ms", took);
	ck_assert_int_eq(lockd_status(c), LOCKD_ETIMEDOUT);
	ck_assert_ptr_nonnull(strstr(lockd_error(c), "no reply to PING"));
	ck_assert_ptr_nonnull(strstr(lockd_error(c), "150 ms"));
	/* final: a late reply changes nothing, every call says the same */
	peer_write(peer, "PONG\r\n");
	ck_assert_int_eq(lockd_step(c), LOCKD_ETIMEDOUT);
	ck_assert_int_eq(lockd_send(c, "PING", -1, NULL), LOCKD_ETIMEDOUT);
	ck_assert_int_eq(lockd_want(c), 0);
	lockd_close(c);
	close(peer);

	/* non-blocking: lockd_timeout_ms counts down, then lockd_step fails */
	struct seen s;
	c = pair(&peer, NULL, &s);
	ck_assert_int_eq(lockd_timeout_ms(c), -1);
	ck_assert_int_eq(lockd_send(c, "LOCK k", -1, NULL), LOCKD_OK);
	ck_assert_int_eq(lockd_timeout_ms(c), -1);
	double t_sent = now_ms();
	ck_assert_int_eq(lockd_send(c, "PING", 100, NULL), LOCKD_OK);
	int t = lockd_timeout_ms(c);
	/* counts down from 100 ms: by what passed since (a loaded machine may
	 * take long between the two calls), never more */
	double passed = now_ms() - t_sent;
	ck_assert_msg(t <= 100 && t >= 100 - passed - 1, "timeout %d, %.1f ms after the send", t,
	              passed);
	double end = now_ms() + 2000;
	int rc = LOCKD_OK;
	while (rc == LOCKD_OK && now_ms() < end) {
		struct pollfd pf = {lockd_fd(c), lockd_want(c), 0};
		poll(&pf, 1, lockd_timeout_ms(c));
		rc = lockd_step(c);
	}
	ck_assert_int_eq(rc, LOCKD_ETIMEDOUT);
	ck_assert_msg(now_ms() - end + 2000 >= 95, "failed early");
	lockd_close(c);
	close(peer);
}
END_TEST

START_TEST(protocol_faults)
{
	static const struct {
		const char *bytes;
		size_t n; /* 0: strlen */
		const char *want;
	} cases[] = {
	    {"OK\n", 0, "not ended by CR LF"},
	    {"PONG\r\nPONG\r\n", 0, "without a request"},
	    {"OK 12345678901234567890123456789012345678901234567890123456789012345\r\n", 0,
	     "longer than 64 bytes"},
	    {"OK 1234567890123456789012345678901234567890123456789012345678901234567", 0, "longer"},
	    {"OK\0x\r\n", 6, "NUL byte"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int peer;
		struct seen s;
		struct lockd_client *c = pair(&peer, NULL, &s);
		ck_assert_int_eq(lockd_send(c, "PING", -1, NULL), LOCKD_OK);
		step_ok(c);
		size_t n = cases[i].n ? cases[i].n : strlen(cases[i].bytes);
		ck_assert_int_eq(write(peer, cases[i].bytes, n), (ssize_t)n);
		ck_assert_int_eq(lockd_step(c), LOCKD_EPROTO);
		ck_assert_msg(strstr(lockd_error(c), cases[i].want), "case %zu: %s", i,
		              lockd_error(c));
		lockd_close(c);
		close(peer);
	}
}
END_TEST

START_TEST(closed_by_lockd)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	ck_assert_int_eq(lockd_send(c, "QUIT", -1, NULL), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "PING", -1, NULL), LOCKD_OK);
	step_ok(c);
	peer_expect(peer, "QUIT\nPING\n", 1000);
	peer_write(peer, "OK\r\n");
	close(peer);
	ck_assert_int_eq(lockd_step(c), LOCKD_ECLOSED);
	ck_assert_int_eq(s.nreplies, 1);
	ck_assert_msg(strstr(lockd_error(c), "closed the connection (1 request unanswered)"), "%s",
	              lockd_error(c));
	lockd_close(c);

	/* closed with our request unread: a reset, after the reply before it */
	c = pair(&peer, NULL, &s);
	ck_assert_int_eq(lockd_send(c, "PING", -1, NULL), LOCKD_OK);
	step_ok(c);
	peer_write(peer, "PONG\r\n");
	close(peer);
	ck_assert_int_eq(lockd_send(c, "PING", -1, NULL), LOCKD_OK);
	ck_assert_int_eq(lockd_step(c), LOCKD_ECLOSED);
	ck_assert_msg(strstr(lockd_error(c), "lockd"), "%s", lockd_error(c));
	lockd_close(c);

	/* in the middle of a line */
	c = pair(&peer, NULL, &s);
	ck_assert_int_eq(lockd_send(c, "PING", -1, NULL), LOCKD_OK);
	step_ok(c);
	peer_expect(peer, "PING\n", 1000);
	peer_write(peer, "PO");
	close(peer);
	ck_assert_int_eq(lockd_step(c), LOCKD_ECLOSED);
	ck_assert_ptr_nonnull(strstr(lockd_error(c), "middle of a line"));
	lockd_close(c);
}
END_TEST

START_TEST(bad_requests)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	ck_assert_int_eq(lockd_send(c, "", -1, NULL), LOCKD_EARG);
	ck_assert_int_eq(lockd_send(c, "PING\nPING", -1, NULL), LOCKD_EARG);
	ck_assert_int_eq(lockd_send(c, "PING\r", -1, NULL), LOCKD_EARG);
	ck_assert_int_eq(lockd_send(c, NULL, -1, NULL), LOCKD_EARG);
	const struct lockd_reply *r;
	ck_assert_int_eq(lockd_call(c, "A\nB", 10, &r), LOCKD_EARG);
	/* the client is unharmed, nothing was sent */
	ck_assert_int_eq(lockd_status(c), LOCKD_OK);
	ck_assert_uint_eq(lockd_pending(c), 0);
	ck_assert_int_eq(lockd_send(c, "PING", -1, NULL), LOCKD_OK);
	step_ok(c);
	peer_expect(peer, "PING\n", 1000);
	ck_assert_str_eq(lockd_status_name(LOCKD_ETIMEDOUT), "LOCKD_ETIMEDOUT");
	ck_assert_str_eq(lockd_strerror(LOCKD_ECLOSED), "lockd closed the connection");
	ck_assert_str_eq(lockd_status_name(42), "LOCKD_E?");
	lockd_close(c);
	close(peer);
	lockd_close(NULL);
}
END_TEST

/* The formatted requests (lockd_sendf, lockd_callf) are checked like the
 * others: a CR or an LF that a value brings in (a key "k\r\nUNLOCK x"
 * would be two requests on the wire) is LOCKD_EARG, on the short path and
 * on the long one (above the 512 bytes formatted on the stack); the
 * client is unchanged and nothing is written. */
START_TEST(formatted_requests_refuse_line_ends)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	const struct lockd_reply *r = NULL;
	static const char *const keys[] = {"k\r\nUNLOCK x", "k\nUNLOCK x", "k\r", "\n"};
	char long_key[700];
	memset(long_key, 'a', sizeof(long_key));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		ck_assert_int_eq(lockd_sendf(c, -1, NULL, "LOCK %s WAIT 0", keys[i]), LOCKD_EARG);
		ck_assert_int_eq(lockd_callf(c, 10, &r, "TRYLOCK %s", keys[i]), LOCKD_EARG);
		/* the long path: the same bytes at the end of a 700-byte key */
		size_t n = strlen(keys[i]);
		memcpy(long_key + sizeof(long_key) - 1 - n, keys[i], n);
		long_key[sizeof(long_key) - 1] = '\0';
		ck_assert_int_eq(lockd_sendf(c, -1, NULL, "LOCK %s", long_key), LOCKD_EARG);
		ck_assert_int_eq(lockd_callf(c, 10, &r, "LOCK %s", long_key), LOCKD_EARG);
		memset(long_key, 'a', sizeof(long_key));
	}
	/* the client is unharmed, and nothing was sent before this PING */
	ck_assert_int_eq(lockd_status(c), LOCKD_OK);
	ck_assert_uint_eq(lockd_pending(c), 0);
	ck_assert_int_eq(lockd_sendf(c, -1, NULL, "PING %s", "x"), LOCKD_OK);
	step_ok(c);
	peer_expect(peer, "PING x\n", 1000);
	struct pollfd pf = {peer, POLLIN, 0};
	ck_assert_int_eq(poll(&pf, 1, 50), 0); /* and nothing after it */
	lockd_close(c);
	close(peer);
}
END_TEST

/* A NUL byte that a formatted value brings in (%c) is LOCKD_EARG too:
 * today lockd_sendf() and lockd_callf() send the request cut short at it
 * ("LOCK k" for "LOCK k\0WAIT 0"). Nothing is written. */
START_TEST(formatted_requests_refuse_nul)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	const struct lockd_reply *r = NULL;
	char long_key[700];
	memset(long_key, 'a', sizeof(long_key) - 1);
	long_key[sizeof(long_key) - 1] = '\0';
	ck_assert_int_eq(lockd_sendf(c, -1, NULL, "LOCK k%cWAIT 0", '\0'), LOCKD_EARG);
	ck_assert_int_eq(lockd_callf(c, 10, &r, "UNLOCK k%cx", '\0'), LOCKD_EARG);
	ck_assert_int_eq(lockd_sendf(c, -1, NULL, "LOCK %s%c", long_key, '\0'), LOCKD_EARG);
	ck_assert_int_eq(lockd_status(c), LOCKD_OK);
	ck_assert_uint_eq(lockd_pending(c), 0);
	ck_assert_int_eq(lockd_sendf(c, -1, NULL, "PING %s", "x"), LOCKD_OK);
	step_ok(c);
	peer_expect(peer, "PING x\n", 1000);
	struct pollfd pf = {peer, POLLIN, 0};
	ck_assert_int_eq(poll(&pf, 1, 50), 0);
	lockd_close(c);
	close(peer);
}
END_TEST

START_TEST(auth_first)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, "s3cret", &s);
	ck_assert(!lockd_ready(c));
	ck_assert_int_eq(lockd_send(c, "LOCK a", -1, (void *)1), LOCKD_OK);
	ck_assert_uint_eq(lockd_pending(c), 2);
	step_ok(c);
	peer_expect(peer, "AUTH s3cret\nLOCK a\n", 1000);
	peer_write(peer, "OK\r\nOK 5\r\n");
	step_ok(c);
	ck_assert(lockd_ready(c));
	ck_assert_str_eq(s.log, "R1:OK 5 ");
	lockd_close(c);
	close(peer);

	c = pair(&peer, "wrong", &s);
	step_ok(c);
	peer_write(peer, "ERR AUTH wrong password\r\n");
	ck_assert_int_eq(lockd_step(c), LOCKD_EAUTH);
	ck_assert_ptr_nonnull(strstr(lockd_error(c), "ERR AUTH wrong password"));
	lockd_close(c);
	close(peer);

	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct lockd_opts o = {.size = sizeof(struct lockd_opts), .password = "two words"};
	ck_assert_int_eq(lockd_open_fd(sv[0], &o, &c), LOCKD_EARG);
	lockd_close(c);
	close(sv[1]);
}
END_TEST

START_TEST(close_from_callback)
{
	int peer;
	struct seen s;
	struct lockd_client *c = pair(&peer, NULL, &s);
	s.close_in_cb = 1;
	ck_assert_int_eq(lockd_send(c, "PING", -1, NULL), LOCKD_OK);
	ck_assert_int_eq(lockd_send(c, "PING", -1, NULL), LOCKD_OK);
	step_ok(c);
	peer_expect(peer, "PING\nPING\n", 1000);
	peer_write(peer, "PONG\r\nPONG\r\n");
	/* the first reply's callback closes: the second is not delivered */
	ck_assert_int_eq(lockd_step(c), LOCKD_ECLOSED);
	ck_assert_int_eq(s.nreplies, 1);
	/* the session's end is seen by lockd */
	char b[8];
	struct pollfd pf = {peer, POLLIN, 0};
	ck_assert_int_eq(poll(&pf, 1, 1000), 1);
	ck_assert_int_eq(read(peer, b, sizeof(b)), 0);
	close(peer);
}
END_TEST

START_TEST(connect_failures)
{
	/* a port nobody listens on: bind one, learn it, close it */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
	close(fd);
	struct lockd_opts o = {.size = sizeof(struct lockd_opts),
	                       .host = "127.0.0.1",
	                       .port = ntohs(a.sin_port),
	                       .connect_timeout_ms = 1000};
	struct lockd_client *c = NULL;
	ck_assert_int_eq(lockd_connect(&o, &c), LOCKD_ECONNECT);
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(strstr(lockd_error(c), "Connection refused"));
	ck_assert_ptr_nonnull(strstr(lockd_error(c), "127.0.0.1:"));
	lockd_close(c);

	struct lockd_opts u = {.size = sizeof(struct lockd_opts),
	                       .unix_path = "/nonexistent/lockd.sock"};
	ck_assert_int_eq(lockd_connect(&u, &c), LOCKD_ECONNECT);
	ck_assert_str_eq(lockd_error(c), "connect unix:/nonexistent/lockd.sock: No such file or "
	                                 "directory");
	lockd_close(c);

	struct lockd_opts bad = {.size = sizeof(struct lockd_opts), .port = 70000};
	ck_assert_int_eq(lockd_connect(&bad, &c), LOCKD_EARG);
	lockd_close(c);
}
END_TEST

/* A reply callback that queues the next request, as a program with many
 * clients on one loop does (lockd-benchmark): UNLOCK after the grant. */
static void unlock_on_grant(struct lockd_client *c, const struct lockd_reply *r, void *tag,
                            void *arg)
{
	int *n = arg;
	(*n)++;
	if ((intptr_t)tag == 1)
		ck_assert_int_eq(lockd_send(c, "UNLOCK a", -1, (void *)2), LOCKD_OK);
}

/* lockd_step() writes before it reads: what its callbacks queue waits,
 * lockd_want() asks for POLLOUT, and lockd_flush() writes it (liblockd(3)). */
START_TEST(send_from_callback)
{
	int peer, n = 0;
	struct lockd_client *c = pair(&peer, NULL, NULL);
	lockd_set_callbacks(c, unlock_on_grant, NULL, &n);
	ck_assert_int_eq(lockd_send(c, "LOCK a", -1, (void *)1), LOCKD_OK);
	step_ok(c);
	peer_expect(peer, "LOCK a\n", 1000);
	peer_write(peer, "OK 7\r\n");
	step_ok(c);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(lockd_pending(c), 1);
	ck_assert_int_eq(lockd_want(c), POLLIN | POLLOUT);
	struct pollfd pf = {peer, POLLIN, 0};
	ck_assert_int_eq(poll(&pf, 1, 20), 0);
	ck_assert_int_eq(lockd_flush(c), LOCKD_OK);
	ck_assert_int_eq(lockd_want(c), POLLIN);
	peer_expect(peer, "UNLOCK a\n", 1000);
	peer_write(peer, "OK 0\r\n");
	step_ok(c);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(lockd_pending(c), 0);
	lockd_close(c);
	close(peer);
}
END_TEST

/* A listening socket that never accepts: connect succeeds (backlog), AUTH
 * gets no answer, and the connect timeout covers it. */
START_TEST(auth_timeout)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
	struct lockd_opts o = {.size = sizeof(struct lockd_opts),
	                       .port = ntohs(a.sin_port),
	                       .password = "pw",
	                       .connect_timeout_ms = 120};
	struct lockd_client *c = NULL;
	double t0 = now_ms();
	ck_assert_int_eq(lockd_connect(&o, &c), LOCKD_ETIMEDOUT);
	double took = now_ms() - t0;
	ck_assert_msg(took >= 115 && took < 1000, "%.1f ms", took);
	ck_assert_ptr_nonnull(strstr(lockd_error(c), "AUTH"));
	lockd_close(c);
	close(fd);
}
END_TEST

Suite *client_suite(void)
{
	Suite *s = suite_create("client");
	TCase *tc = tcase_create("client");
	tcase_add_test(tc, request_bytes_and_pipelining);
	tcase_add_test(tc, split_replies);
	tcase_add_test(tc, events_between_replies);
	tcase_add_test(tc, election_events_and_requests);
	tcase_add_test(tc, wait_returns_with_what_arrived);
	tcase_add_test(tc, error_replies_parsed);
	tcase_add_test(tc, multi_line_replies);
	tcase_add_test(tc, event_inside_list);
	tcase_add_test(tc, line_callback);
	tcase_add_test(tc, big_list);
	tcase_add_test(tc, blocking_call);
	tcase_add_test(tc, reply_timeout);
	tcase_add_test(tc, protocol_faults);
	tcase_add_test(tc, closed_by_lockd);
	tcase_add_test(tc, bad_requests);
	tcase_add_test(tc, formatted_requests_refuse_line_ends);
	tcase_add_test(tc, formatted_requests_refuse_nul);
	tcase_add_test(tc, auth_first);
	tcase_add_test(tc, close_from_callback);
	tcase_add_test(tc, connect_failures);
	tcase_add_test(tc, auth_timeout);
	tcase_add_test(tc, send_from_callback);
	suite_add_tcase(s, tc);
	return s;
}
