/* hostile_output: connections that do not read their events (issue 32
 * item 4), on real masters and a real lockd. ELECTED and NOLEADER come
 * to an observer whether it reads them or not: lockd cuts a connection
 * whose pending output passes limits.max_output_bytes, as a write
 * timeout cuts one that reads nothing (a resumable session is detached),
 * and counts it; its memory stays bounded; a reader that keeps up and
 * the other clients are not disturbed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "sess_util.h"

#define LEASE 3000
#define VLEN  16000 /* a leader's value: each ELECTED is that long */
#define CHURN 15000 /* ms of CAMPAIGN/RESIGN at most */
#define AFTER 1000  /* ms of it after the cut */
/* A cycle at most this often: at full speed a master that waits for a
 * CPU falls behind, and lockd's requests queued for it (16 kB values)
 * take tens of MiB, which is not what this test measures. */
#define PACE_MS 2.5
/* limits.max_output_bytes by default */
#define LIMIT_KIB (8 * 1024)
/* What lockd's RSS may grow by beyond the limit: the churn's own working
 * memory (values on their way to three masters and back, the reader's
 * events), about 1.5 MiB without the observer that reads nothing.
 * Without the limit the unread events grow it by 4-5 MiB a second. */
#define CHURN_KIB (8 * 1024)

/* VmRSS of pid in KiB (-1: unknown). */
static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	fclose(f);
	return kb;
}

/* A STATS field as a number, -1 when STATS has no such field. */
static long long stat_num(struct cl *c, const char *name)
{
	char *v = cl_stat(c, name);
	long long n = v ? atoll(v) : -1;
	free(v);
	return n;
}

/* Take the lines c has received by now: every one an event of "churn".
 * Returns how many; *bytes grows by their length as sent (with CR LF),
 * *last gets the last one's first word. */
static int drain_events(struct cl *c, long *bytes, char *last, size_t lastsz)
{
	const char *l;
	int n = 0;
	cl_fill(c);
	while ((l = cl_take_line(c))) {
		ck_assert_msg(strncmp(l, "ELECTED churn ", 14) == 0 ||
		                  strcmp(l, "NOLEADER churn") == 0,
		              "the reader got '%.60s'", l);
		snprintf(last, lastsz, "%.8s", l);
		*bytes += (long)strlen(l) + 2;
		n++;
	}
	return n;
}

/* One cycle of the churn, not before due (ms): cand campaigns for
 * "churn" with a VLEN-byte value (req: room for the request) and
 * resigns; probe, an innocent client, gets each of its replies. */
static void churn(struct cl *cand, struct cl *probe, char *req, double due, int cycle)
{
	if (h_now_ms() < due)
		h_sleep_ms((int)(due - h_now_ms()) + 1);
	int n = snprintf(req, VLEN + 64, "CAMPAIGN churn %06d", cycle);
	memset(req + n, 'v', VLEN - 6);
	req[n + VLEN - 6] = '\0';
	cl_expect_prefix(cand, req, "OK ");
	cl_expect(cand, "RESIGN churn", "OK");
	char ping[32], pong[32];
	snprintf(ping, sizeof(ping), "PING p%d", cycle);
	snprintf(pong, sizeof(pong), "PONG p%d", cycle);
	cl_expect(probe, ping, pong);
}

/* A connection to lockd 0 that the kernel buffers little for: 4 kB of
 * receive buffer, set before connecting so that the window is that
 * small from the start. */
static int small_conn(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert(fd >= 0);
	int small = 4096;
	ck_assert(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) == 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(h_lockd(0)->port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_msg(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "connect: %s",
	              strerror(errno));
	return fd;
}

/* Send req on fd and read its reply lines (and events) until n lines
 * came, within H_TMO; they go to buf, as lockd sent them. */
static void raw_cmd(int fd, const char *req, int n, char *buf, size_t size)
{
	size_t len = 0;
	ck_assert(h_send_all(fd, req, strlen(req), H_TMO) == 0);
	double end = h_now_ms() + H_TMO;
	for (int got = 0; got < n;) {
		struct pollfd pf = {fd, POLLIN, 0};
		double rem = end - h_now_ms();
		ck_assert_msg(rem > 0, "'%s': %d of %d lines within %d ms: '%s'",
		              h_esc(req, strlen(req)), got, n, H_TMO, h_esc(buf, len));
		if (poll(&pf, 1, (int)rem + 1) <= 0)
			continue;
		ssize_t k = read(fd, buf + len, size - 1 - len);
		ck_assert_msg(k > 0, "'%s': the connection ended", h_esc(req, strlen(req)));
		for (ssize_t i = 0; i < k; i++)
			got += buf[len + (size_t)i] == '\n';
		len += (size_t)k;
		buf[len] = '\0';
	}
}

/* Read fd to its end within timeout_ms: 1 when it ended (EOF or a
 * reset), 0 when it is still open then; *total gets the bytes read. */
static int read_to_eof(int fd, int timeout_ms, long *total)
{
	static char buf[65536];
	double end = h_now_ms() + timeout_ms;
	*total = 0;
	for (;;) {
		double rem = end - h_now_ms();
		if (rem <= 0)
			return 0;
		struct pollfd pf = {fd, POLLIN, 0};
		if (poll(&pf, 1, (int)rem + 1) <= 0)
			continue;
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n > 0)
			*total += n;
		else if (n == 0 || (errno != EINTR && errno != EAGAIN))
			return 1;
	}
}

/* An observer that reads rate bytes a second at most (0: nothing) while
 * another client churns CAMPAIGN/RESIGN with 16 kB values, faster than
 * that: lockd cuts it once its pending output passes
 * limits.max_output_bytes (8 MiB by default; STATS output_limit_closes,
 * one log line), long before the write timeout (a minute), and not
 * before. Its resumable session is detached with its lock, not ended.
 * lockd's RSS stays within the limit and the churn's own working memory;
 * a reader of the same events keeps up and stays; an innocent client
 * gets every reply. name: the test's, for what it prints. */
static void cut_observer(const char *name, long rate)
{
	h_std(&(struct h_opts){.lease_ms = LEASE,
	                       .limits = "  max_value_len: 16384\n  max_line: 16500\n"});
	pid_t pid = h_lockd(0)->pid;
	struct cl *probe = cl_open();
	/* the observer: a resumable session that holds k */
	int hfd = small_conn();
	char buf[512];
	struct sess s;
	unsigned long long f = 0;
	raw_cmd(hfd, "SESSION\r\nLOCK k\r\nOBSERVE churn\r\n", 4, buf, sizeof(buf));
	ck_assert_msg(sscanf(buf, "SESSION %16s %32s 10000\r\nOK %llu\r\nOK\r\nNOLEADER churn\r\n",
	                     s.id, s.secret, &f) == 3,
	              "the observer got '%s'", h_esc(buf, strlen(buf)));
	/* from now on it reads at most rate bytes a second */
	struct cl *rd = cl_open();
	cl_expect(rd, "OBSERVE churn", "OK");
	struct cl *cand = cl_open();

	char *req = malloc(VLEN + 64);
	ck_assert(req != NULL);
	char last[16] = "";
	long rbytes = 0, rbytes_cut = 0; /* the reader's events, in all and by the cut */
	long rss0 = rss_kb(pid), rss_max = rss0;
	ck_assert(rss0 > 0);
	double start = h_now_ms(), cut_ms = -1, next_stat = start;
	int cycles = 0, events = 0;
	long hread = 0; /* what the observer read before the cut */
	while (h_now_ms() - start < (cut_ms < 0 ? CHURN : cut_ms + AFTER)) {
		churn(cand, probe, req, start + cycles * PACE_MS, cycles);
		events += drain_events(rd, &rbytes, last, sizeof(last));
		long room = (long)((h_now_ms() - start) / 1000 * (double)rate) - hread;
		char tmp[65536];
		while (cut_ms < 0 && room > 0) {
			ssize_t k =
			    recv(hfd, tmp, room < (long)sizeof(tmp) ? (size_t)room : sizeof(tmp),
			         MSG_DONTWAIT);
			if (k <= 0)
				break;
			hread += k;
			room -= k;
		}
		long r = rss_kb(pid);
		rss_max = r > rss_max ? r : rss_max;
		if (cut_ms < 0 && h_now_ms() >= next_stat) {
			if (stat_num(probe, "output_limit_closes") == 1) {
				cut_ms = h_now_ms() - start;
				rbytes_cut = rbytes;
			}
			next_stat = h_now_ms() + 100;
		}
		cycles++;
	}
	free(req);
	double took = h_now_ms() - start;
	long long elected = stat_num(probe, "elected_events");
	fprintf(stderr,
	        "%s: %d cycles in %.0f ms, %lld events sent, %d read by the reader (%ld bytes by "
	        "the cut), %ld bytes by the observer; cut after %.0f ms; lockd RSS %ld KiB at "
	        "start, %ld KiB at most (+%.1f MiB)\n",
	        name, cycles, took, elected, events, rbytes_cut, hread, cut_ms, rss0, rss_max,
	        (double)(rss_max - rss0) / 1024);
	ck_assert_msg(
	    cut_ms >= 0,
	    "the observer that reads %ld bytes a second is still connected after %d ms of "
	    "churn (%d leaders of %d-byte values; STATS output_limit_closes %lld, -1: "
	    "none); lockd's RSS grew by %ld KiB",
	    rate, CHURN, cycles, VLEN, stat_num(probe, "output_limit_closes"), rss_max - rss0);
	/* ASan keeps freed memory in quarantine: RSS says nothing there. */
	if (!getenv("LOCKD_TEST_SANITIZED"))
		ck_assert_msg(rss_max - rss0 < LIMIT_KIB + CHURN_KIB,
		              "lockd's RSS grew by %ld KiB (at most %d KiB: the limit and %d KiB)",
		              rss_max - rss0, LIMIT_KIB + CHURN_KIB, CHURN_KIB);
	/* the reader kept up: it stays, and its last event is the last state */
	double end = h_now_ms() + H_TMO;
	while (strcmp(last, "NOLEADER") != 0 && h_now_ms() < end) {
		h_sleep_ms(10);
		events += drain_events(rd, &rbytes, last, sizeof(last));
	}
	ck_assert_msg(strcmp(last, "NOLEADER") == 0, "the reader's last event: '%s'", last);
	cl_expect(rd, "PING", "PONG");
	/* cut once, counted as such; its connection ends after what the
	 * kernel had taken */
	ck_assert_int_eq(stat_num(probe, "output_limit_closes"), 1);
	ck_assert_int_eq(stat_num(probe, "write_timeouts"), 0);
	ck_assert_int_eq(stat_num(probe, "clients"), 3);
	ck_assert_int_eq(h_file_count(h_lockd(0)->log, 0, "limits.max_output_bytes", NULL), 1);
	long got;
	ck_assert_msg(read_to_eof(hfd, H_TMO, &got), "the cut observer's connection is still open");
	close(hfd);
	/* not before its output passed the limit: it was sent the reader's
	 * events (its first NOLEADER, 16 bytes, aside), and more than the
	 * limit of them were left when the kernel had taken what it got */
	got += hread;
	ck_assert_msg(
	    rbytes_cut + 16 > (long)LIMIT_KIB * 1024 + got,
	    "cut when the reader had %ld bytes of events, the cut observer %ld (limit %d)",
	    rbytes_cut, got, LIMIT_KIB * 1024);
	/* its session was detached with its lock, not ended */
	struct cl *r = cl_open();
	resume(r, &s, "OK 1");
	expect_held(r, "KEY k %llu 1 *", f);
	cl_close(r);
	fprintf(stderr, "%s: the cut observer was sent %ld bytes; lockd RSS %ld KiB at the end\n",
	        name, got, rss_kb(pid));
	cl_close(cand);
	cl_close(rd);
	cl_close(probe);
}

/* An observer that reads nothing. */
START_TEST(output_limit_cuts_observer)
{
	cut_observer("output_limit_cuts_observer", 0);
}
END_TEST

/* An observer that reads 1 MiB every 2.5 s (as in issue 32), in small
 * pieces: never a write timeout, and cut all the same. */
START_TEST(output_limit_cuts_slow_reader)
{
	cut_observer("output_limit_cuts_slow_reader", 1048576 * 2 / 5);
}
END_TEST

/* Line i of the replies to the pipelined PINGs below, with its CR LF:
 * "PONG <i, 6 digits><7994 w>" */
#define PIPE_N   700 /* 5.6 MB of replies: more than the kernel's buffers hold */
#define PONG_LEN 8007
static void pong_line(size_t i, char *out)
{
	int n = snprintf(out, PONG_LEN + 1, "PONG %06zu", i);
	memset(out + n, 'w', PONG_LEN - 2 - (size_t)n);
	memcpy(out + PONG_LEN - 2, "\r\n", 2);
}

/* With a low limit (65536) a client that pipelines and reads late is
 * paused, not cut: lockd stops answering it at half the limit, so
 * replies alone never reach it. 700 PINGs of 8000-byte words sent for a
 * second before anything is read, then read: every PONG comes, in
 * order. */
START_TEST(output_limit_spares_pipelining)
{
	h_std(&(struct h_opts){.lease_ms = LEASE,
	                       .limits = "  max_output_bytes: 65536\n  max_line: 8192\n"});
	int fd = h_connect_tcp(h_lockd(0)->port);
	ck_assert_msg(fd >= 0, "connect: %s", strerror(errno));
	size_t one = PONG_LEN - 1, total = (size_t)PIPE_N * one, sent = 0;
	size_t want = (size_t)PIPE_N * PONG_LEN, got = 0;
	char *req = malloc(total + 1), *line = malloc(PONG_LEN + 1), in[65536];
	ck_assert(req != NULL && line != NULL);
	for (size_t i = 0; i < PIPE_N; i++) {
		pong_line(i, line);
		memcpy(req + i * one, "PING", 4);
		memcpy(req + i * one + 4, line + 4, one - 5);
		req[i * one + one - 1] = '\n';
	}
	double start = h_now_ms(), end = start + 20000;
	int eof = 0;
	while (got < want && !eof && h_now_ms() < end) {
		int reading = h_now_ms() >= start + 1000;
		struct pollfd pf = {
		    fd, (short)((sent < total ? POLLOUT : 0) | (reading ? POLLIN : 0)), 0};
		if (poll(&pf, 1, 20) <= 0)
			continue;
		if (pf.revents & POLLOUT) {
			ssize_t w = send(fd, req + sent, total - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
			sent += w > 0 ? (size_t)w : 0;
		}
		if (reading && (pf.revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t k = recv(fd, in, sizeof(in), MSG_DONTWAIT);
			if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
				eof = 1;
			/* compared without an assertion per byte (check logs each) */
			for (ssize_t j = 0; j < k; j++, got++) {
				if (got % PONG_LEN == 0)
					pong_line(got / PONG_LEN, line);
				if (in[j] != line[got % PONG_LEN])
					ck_abort_msg("reply %zu differs at byte %zu",
					             got / PONG_LEN, got % PONG_LEN);
			}
		}
	}
	free(req);
	free(line);
	close(fd);
	ck_assert_msg(got == want, "got %zu of %zu bytes of replies (%s; sent %zu of %zu)", got,
	              want, eof ? "lockd closed the connection" : "no more within 20 s", sent,
	              total);
	struct cl *probe = cl_open();
	ck_assert_int_eq(stat_num(probe, "output_limit_closes"), 0);
	ck_assert_int_eq(stat_num(probe, "write_timeouts"), 0);
	cl_close(probe);
}
END_TEST

TCase *tc_hostile_output(void)
{
	TCase *tc = tcase_create("hostile_output");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	H_ADD(tc, output_limit_cuts_observer);
	H_ADD(tc, output_limit_cuts_slow_reader);
	H_ADD(tc, output_limit_spares_pipelining);
	return tc;
}
