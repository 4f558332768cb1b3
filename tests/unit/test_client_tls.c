/* Unit tests of liblockd's TLS layer (lib/tls.c, through lib/net.c and
 * lib/client.c): its arguments, then a child process that plays lockd
 * over OpenSSL on a socketpair, with certificates made by the openssl
 * command in a temporary directory: the handshake on the step API,
 * requests both ways, and each refusal named. Skipped, saying why,
 * when liblockd is built without TLS or there is no openssl command. */
#include "config.h"

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_TLS
#include <openssl/ssl.h>
#endif

#include "lockd/client.h"
#include "units.h"

#ifdef HAVE_TLS
/* What the callbacks saw, in order: "R<tag>:<line> " or "E:<key> ". */
struct seen {
	char log[1024];
	int nreplies;
};

static void on_reply(struct lockd_client *c, const struct lockd_reply *r, void *tag, void *arg)
{
	struct seen *s = arg;
	size_t o = strlen(s->log);
	snprintf(s->log + o, sizeof(s->log) - o, "R%d:%s ", (int)(intptr_t)tag, r->line);
	s->nreplies++;
}

static void on_event(struct lockd_client *c, const struct lockd_event *ev, void *arg)
{
	struct seen *s = arg;
	size_t o = strlen(s->log);
	snprintf(s->log + o, sizeof(s->log) - o, "E:%s ", ev->key);
}
#endif

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static void peer_write(int peer, const char *bytes)
{
	size_t n = strlen(bytes);
	ck_assert_int_eq(write(peer, bytes, n), (ssize_t)n);
}

START_TEST(tls_arguments)
{
	struct lockd_client *c = NULL;
	ck_assert_str_eq(lockd_status_name(LOCKD_ETLS), "LOCKD_ETLS");
	ck_assert_ptr_nonnull(strstr(lockd_strerror(LOCKD_ETLS), "TLS"));
	struct lockd_opts o = {.size = sizeof(struct lockd_opts),
	                       .tls = 1,
	                       .tls_ca = "/nonexistent/ca.pem",
	                       .port = 1};
	int rc = lockd_connect(&o, &c);
	ck_assert_int_eq(rc, LOCKD_ETLS);
	ck_assert_ptr_nonnull(
	    strstr(lockd_error(c), lockd_tls_available() ? "/nonexistent/ca.pem" : "without TLS"));
	lockd_close(c);
	if (!lockd_tls_available())
		return;
	struct lockd_opts k = {
	    .size = sizeof(struct lockd_opts), .tls = 1, .tls_key = "k.pem", .port = 1};
	ck_assert_int_eq(lockd_connect(&k, &c), LOCKD_EARG);
	lockd_close(c);
	/* a plain lockd on the other end: the handshake fails, and says so */
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct lockd_opts p = {.size = sizeof(struct lockd_opts), .tls = 1, .tls_no_verify = 1};
	ck_assert_int_eq(lockd_open_fd(sv[0], &p, &c), LOCKD_OK);
	ck_assert_int_eq(lockd_ready(c), 0);
	ck_assert(lockd_want(c) & POLLIN);
	peer_write(sv[1], "ERR PROTOCOL unknown command\r\n");
	double end = now_ms() + 2000;
	while (lockd_status(c) == LOCKD_OK && now_ms() < end) {
		struct pollfd pf = {lockd_fd(c), lockd_want(c), 0};
		poll(&pf, 1, 10);
		lockd_step(c);
	}
	ck_assert_int_eq(lockd_status(c), LOCKD_ETLS);
	ck_assert_ptr_nonnull(strstr(lockd_error(c), "TLS handshake with"));
	lockd_close(c);
	close(sv[1]);
}
END_TEST

#ifdef HAVE_TLS
static char tls_dir[64];

static void tls_sh(const char *cmd)
{
	char b[2048];
	snprintf(b, sizeof(b), "cd %s && { %s; } >/dev/null 2>&1", tls_dir, cmd);
	ck_assert_msg(system(b) == 0, "%s failed", b);
}

/* ca.pem, server.pem (CN lockd.test), client.pem (by ca), other.pem (a
 * CA of its own): 0, or -1 without an openssl command. */
static int tls_certs(void)
{
	if (system("openssl version >/dev/null 2>&1") != 0)
		return -1;
	snprintf(tls_dir, sizeof(tls_dir), "/tmp/lockd-unit-tls.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tls_dir));
	const char *ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
	         "openssl req -x509 %s -keyout ca.key -out ca.pem -days 2 "
	         "-subj /CN=unit-ca",
	         ec);
	tls_sh(cmd);
	snprintf(cmd, sizeof(cmd),
	         "openssl req -x509 %s -keyout other.key -out other.pem -days 2 "
	         "-subj /CN=other",
	         ec);
	tls_sh(cmd);
	const char *names[] = {"server", "lockd.test", "client", "client-1"};
	for (int i = 0; i < 4; i += 2) {
		snprintf(cmd, sizeof(cmd),
		         "openssl req %s -keyout %s.key -out %s.csr -subj /CN=%s && "
		         "openssl x509 -req -in %s.csr -CA ca.pem -CAkey ca.key -set_serial %d "
		         "-days 2 -out %s.pem",
		         ec, names[i], names[i], names[i + 1], names[i], i + 2, names[i]);
		tls_sh(cmd);
	}
	return 0;
}

static void tls_clean(void)
{
	char b[128];
	snprintf(b, sizeof(b), "rm -rf %s", tls_dir);
	ck_assert_int_eq(system(b), 0);
}

static const char *tls_file(const char *name)
{
	static char b[4][128];
	static int i;
	i = (i + 1) % 4;
	snprintf(b[i], sizeof(b[i]), "%s/%s", tls_dir, name);
	return b[i];
}

/* lockd over TLS on fd, in a child: PING w: PONG w; HELD: 3000 lines
 * and END; anything else: OK 7. Until EOF. */
static pid_t tls_lockd(int fd, int want_cert)
{
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid > 0) {
		close(fd);
		return pid;
	}
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx ||
	    SSL_CTX_use_certificate_file(ctx, tls_file("server.pem"), SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, tls_file("server.key"), SSL_FILETYPE_PEM) != 1)
		_exit(2);
	if (want_cert) {
		SSL_CTX_load_verify_locations(ctx, tls_file("ca.pem"), NULL);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	SSL *s = SSL_new(ctx);
	SSL_set_fd(s, fd);
	if (SSL_accept(s) != 1)
		_exit(1);
	char line[256], ch;
	size_t n = 0;
	while (SSL_read(s, &ch, 1) == 1) {
		if (ch != '\n') {
			if (n < sizeof(line) - 1)
				line[n++] = ch;
			continue;
		}
		line[n] = '\0';
		n = 0;
		char out[300];
		if (strncmp(line, "PING", 4) == 0) {
			snprintf(out, sizeof(out), "PONG%s\r\n", line + 4);
			SSL_write(s, out, (int)strlen(out));
		} else if (strcmp(line, "HELD") == 0) {
			for (int i = 0; i < 3000; i++) {
				snprintf(out, sizeof(out), "key%d 1 %d\r\n", i, i);
				SSL_write(s, out, (int)strlen(out));
			}
			SSL_write(s, "END\r\n", 5);
		} else {
			SSL_write(s, "OK 7\r\n", 6);
		}
	}
	_exit(0);
}

/* A client over TLS to a child lockd (on a socketpair) with o. The
 * handshake starts in lockd_open_fd: a refusal may come from it already
 * (*rc), or from a later step. */
static struct lockd_client *tls_pair(struct lockd_opts *o, int want_cert, pid_t *pid, int *rc)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	*pid = tls_lockd(sv[1], want_cert);
	struct lockd_client *c = NULL;
	o->tls = 1;
	*rc = lockd_open_fd(sv[0], o, &c);
	ck_assert_ptr_nonnull(c);
	return c;
}

/* Step c as lockd_want() and lockd_timeout_ms() ask until it fails or
 * done() says so, within timeout_ms. */
static void tls_steps(struct lockd_client *c, int (*done)(struct lockd_client *, void *), void *a,
                      int timeout_ms)
{
	double end = now_ms() + timeout_ms;
	while (lockd_status(c) == LOCKD_OK && !done(c, a) && now_ms() < end) {
		struct pollfd pf = {lockd_fd(c), lockd_want(c), 0};
		int t = lockd_timeout_ms(c);
		poll(&pf, 1, t < 0 || t > 50 ? 50 : t);
		lockd_step(c);
	}
}

static int tls_ready(struct lockd_client *c, void *a)
{
	return lockd_ready(c);
}

static int tls_nreplies(struct lockd_client *c, void *a)
{
	return ((struct seen *)a)->nreplies >= 2;
}

static int tls_never(struct lockd_client *c, void *a)
{
	return 0;
}

static void tls_reap(pid_t pid)
{
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
}
#endif

/* The handshake as part of connecting, on the step API (want, timeout,
 * step), then requests both ways: lockd_send and lockd_call, and a list
 * reply of 3000 lines through OpenSSL's buffers. */
START_TEST(tls_steps_and_calls)
{
#ifndef HAVE_TLS
	fprintf(stderr, "tls_steps_and_calls: built without TLS: skipped\n");
#else
	if (tls_certs() != 0) {
		fprintf(stderr, "tls_steps_and_calls: no openssl command: skipped\n");
		return;
	}
	struct lockd_opts o = {.size = sizeof(struct lockd_opts),
	                       .tls_ca = tls_file("ca.pem"),
	                       .tls_cert = tls_file("client.pem"),
	                       .tls_key = tls_file("client.key"),
	                       .tls_server_name = "lockd.test"};
	pid_t pid;
	int rc;
	struct lockd_client *c = tls_pair(&o, 1, &pid, &rc);
	ck_assert_msg(rc == LOCKD_OK, "%s", lockd_error(c));
	struct seen s;
	memset(&s, 0, sizeof(s));
	lockd_set_callbacks(c, on_reply, on_event, &s);
	/* the connect timeout covers the handshake, unless it is done already */
	ck_assert(lockd_ready(c) || lockd_timeout_ms(c) >= 0);
	ck_assert_int_eq(lockd_send(c, "PING a", 2000, (void *)1), LOCKD_OK);
	tls_steps(c, tls_ready, NULL, 3000);
	ck_assert_msg(lockd_ready(c), "%s", lockd_error(c));
	ck_assert_int_eq(lockd_send(c, "LOCK k", 2000, (void *)2), LOCKD_OK);
	tls_steps(c, tls_nreplies, &s, 3000);
	ck_assert_msg(s.nreplies == 2, "%s", lockd_error(c));
	ck_assert_str_eq(s.log, "R1:PONG a R2:OK 7 ");
	const struct lockd_reply *r;
	ck_assert_int_eq(lockd_call(c, "PING b", 2000, &r), LOCKD_OK);
	ck_assert_str_eq(r->line, "PONG b");
	ck_assert_int_eq(lockd_call(c, "HELD", 2000, &r), LOCKD_OK);
	ck_assert_int_eq(r->kind, LOCKD_R_LIST);
	ck_assert_uint_eq(r->nlines, 3000);
	ck_assert_str_eq(r->lines[2999], "key2999 1 2999");
	lockd_close(c);
	tls_reap(pid);
	tls_clean();
#endif
}
END_TEST

/* Each way TLS can fail is LOCKD_ETLS with its reason: lockd's
 * certificate signed by another CA, or for another name; no client
 * certificate for a lockd that wants one. */
START_TEST(tls_refusals)
{
#ifndef HAVE_TLS
	fprintf(stderr, "tls_refusals: built without TLS: skipped\n");
#else
	if (tls_certs() != 0) {
		fprintf(stderr, "tls_refusals: no openssl command: skipped\n");
		return;
	}
	const struct {
		const char *ca, *name;
		int cert;
		const char *want;
	} cases[] = {
	    {"other.pem", "lockd.test", 1, "certificate did not verify"},
	    {"ca.pem", "other.test", 1, "hostname mismatch"},
	    {"ca.pem", "lockd.test", 0, "lockd asks for a client certificate"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lockd_opts o = {.size = sizeof(struct lockd_opts),
		                       .tls_ca = tls_file(cases[i].ca),
		                       .tls_server_name = cases[i].name};
		if (cases[i].cert) {
			o.tls_cert = tls_file("client.pem");
			o.tls_key = tls_file("client.key");
		}
		pid_t pid;
		int rc;
		struct lockd_client *c = tls_pair(&o, 1, &pid, &rc);
		ck_assert_msg(rc == LOCKD_OK || rc == LOCKD_ETLS, "case %zu: %s", i,
		              lockd_status_name(rc));
		/* TLS 1.3: lockd judges the client's certificate after the
		 * client's handshake is done, so the refusal may come on a reply */
		if (rc == LOCKD_OK) {
			lockd_send(c, "PING", 2000, NULL);
			tls_steps(c, tls_never, NULL, 3000);
		}
		ck_assert_msg(lockd_status(c) == LOCKD_ETLS, "case %zu: %s: %s", i,
		              lockd_status_name(lockd_status(c)), lockd_error(c));
		ck_assert_msg(strstr(lockd_error(c), cases[i].want), "case %zu: %s", i,
		              lockd_error(c));
		ck_assert_int_eq(lockd_want(c), 0);
		lockd_close(c);
		tls_reap(pid);
	}
	tls_clean();
#endif
}
END_TEST

Suite *client_tls_suite(void)
{
	Suite *s = suite_create("client_tls");
	TCase *tc = tcase_create("client_tls");
	tcase_add_test(tc, tls_arguments);
	tcase_add_test(tc, tls_steps_and_calls);
	tcase_add_test(tc, tls_refusals);
	suite_add_tcase(s, tc);
	return s;
}
