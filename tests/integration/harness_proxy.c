/* harness_proxy: a TCP proxy in front of one master that can hold back
 * what a connection sends and deliver it later, after its client gave up
 * on it: the late arrival of bytes a partition kept on their way (the
 * kernel retransmits what a closed socket had sent once the path heals),
 * made exact. See harness.h.
 *
 * The proxy is a child process (it dies with the test: PR_SET_PDEATHSIG)
 * that the test drives over a socket pair, one command a line: "hold"
 * (the connections open now keep what their clients send; a client that
 * closes leaves its server side open), "release" (what was kept goes to
 * the server, in order; those connections pass bytes again, and the ones
 * whose client left close a second later). Each is answered "ok N" (N:
 * connections held, or bytes delivered) once done. New connections always
 * pass at once. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define PX_CONNS 16

struct h_proxy {
	pid_t pid;
	int ctl; /* our end of the socket pair */
	int port;
};

struct px_conn {
	int cfd, sfd; /* client (lockd) side, server (master) side; -1: closed */
	int held;
	char *buf; /* what the client sent while held */
	size_t len;
	double close_at; /* > 0: the client left and what it sent went: close then */
};

static struct px_conn conns[PX_CONNS];

static void px_close(struct px_conn *c)
{
	if (c->cfd >= 0)
		close(c->cfd);
	if (c->sfd >= 0)
		close(c->sfd);
	free(c->buf);
	memset(c, 0, sizeof(*c));
	c->cfd = c->sfd = -1;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void px_accept(int lfd, int target)
{
	int cfd = accept(lfd, NULL, NULL);
	if (cfd < 0)
		return;
	int sfd = h_connect_tcp(target);
	struct px_conn *c = NULL;
	for (int i = 0; i < PX_CONNS && !c; i++)
		if (conns[i].cfd < 0 && conns[i].sfd < 0)
			c = &conns[i];
	if (sfd < 0 || !c) {
		close(cfd);
		if (sfd >= 0)
			close(sfd);
		return;
	}
	c->cfd = cfd;
	c->sfd = sfd;
}

/* Bytes from the client: kept while held, else passed on. */
static void px_from_client(struct px_conn *c)
{
	char b[65536];
	ssize_t n = read(c->cfd, b, sizeof(b));
	if (n <= 0) {
		if (!c->held) {
			px_close(c);
			return;
		}
		close(c->cfd); /* its server side stays open, as a partition keeps it */
		c->cfd = -1;
		return;
	}
	if (c->held) {
		char *p = realloc(c->buf, c->len + (size_t)n);
		if (!p)
			_exit(3);
		memcpy(p + c->len, b, (size_t)n);
		c->buf = p;
		c->len += (size_t)n;
	} else if (write_all(c->sfd, b, (size_t)n) != 0) {
		px_close(c);
	}
}

/* Bytes from the server: to the client while it is there. */
static void px_from_server(struct px_conn *c)
{
	char b[65536];
	ssize_t n = read(c->sfd, b, sizeof(b));
	if (n <= 0) {
		px_close(c);
		return;
	}
	if (c->cfd >= 0 && write_all(c->cfd, b, (size_t)n) != 0) {
		close(c->cfd);
		c->cfd = -1;
	}
}

static void px_command(int ctl, const char *cmd)
{
	long n = 0;
	for (int i = 0; i < PX_CONNS; i++) {
		struct px_conn *c = &conns[i];
		if (c->sfd < 0)
			continue;
		if (strcmp(cmd, "hold") == 0 && c->cfd >= 0) {
			c->held = 1;
			n++;
		} else if (strcmp(cmd, "release") == 0 && c->held) {
			c->held = 0;
			if (c->len && write_all(c->sfd, c->buf, c->len) != 0)
				_exit(4);
			n += (long)c->len;
			free(c->buf);
			c->buf = NULL;
			c->len = 0;
			if (c->cfd < 0)
				c->close_at = h_now_ms() + 1000;
		}
	}
	char out[32];
	int k = snprintf(out, sizeof(out), "ok %ld\n", n);
	if (write_all(ctl, out, (size_t)k) != 0)
		_exit(0);
}

static void px_run(int lfd, int ctl, int target)
{
	char cmd[64];
	size_t clen = 0;
	for (int i = 0; i < PX_CONNS; i++)
		conns[i].cfd = conns[i].sfd = -1;
	for (;;) {
		struct pollfd pf[2 + 2 * PX_CONNS];
		struct px_conn *who[2 + 2 * PX_CONNS];
		int np = 0;
		pf[np++] = (struct pollfd){.fd = lfd, .events = POLLIN};
		pf[np++] = (struct pollfd){.fd = ctl, .events = POLLIN};
		for (int i = 0; i < PX_CONNS; i++) {
			struct px_conn *c = &conns[i];
			if (c->close_at > 0 && h_now_ms() >= c->close_at)
				px_close(c);
			if (c->cfd >= 0) {
				who[np] = c;
				pf[np++] = (struct pollfd){.fd = c->cfd, .events = POLLIN};
			}
			if (c->sfd >= 0) {
				who[np] = c;
				pf[np++] = (struct pollfd){.fd = c->sfd, .events = POLLIN};
			}
		}
		if (poll(pf, (nfds_t)np, 50) < 0 && errno != EINTR)
			_exit(2);
		if (pf[0].revents)
			px_accept(lfd, target);
		if (pf[1].revents) {
			ssize_t n = read(ctl, cmd + clen, sizeof(cmd) - 1 - clen);
			if (n <= 0)
				_exit(0); /* the test is gone */
			clen += (size_t)n;
			char *nl;
			cmd[clen] = '\0';
			while ((nl = strchr(cmd, '\n'))) {
				*nl = '\0';
				px_command(ctl, cmd);
				memmove(cmd, nl + 1, clen - (size_t)(nl + 1 - cmd) + 1);
				clen -= (size_t)(nl + 1 - cmd);
			}
		}
		for (int i = 2; i < np; i++) {
			struct px_conn *c = who[i];
			if (!pf[i].revents)
				continue;
			if (pf[i].fd == c->cfd)
				px_from_client(c);
			else if (pf[i].fd == c->sfd)
				px_from_server(c);
		}
	}
}

struct h_proxy *h_proxy_start(int target)
{
	struct h_proxy *p = calloc(1, sizeof(*p));
	int sv[2];
	ck_assert(p != NULL);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(lfd, 0);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	for (int tries = 0; tries < 20; tries++) {
		p->port = h_free_port();
		a.sin_port = htons((uint16_t)p->port);
		if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) == 0)
			break;
		p->port = 0;
	}
	ck_assert_msg(p->port > 0, "no free port for the proxy");
	ck_assert_int_eq(listen(lfd, 16), 0);
	pid_t parent = getpid();
	p->pid = fork();
	ck_assert_int_ge(p->pid, 0);
	if (p->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		close(sv[0]);
		signal(SIGPIPE, SIG_IGN);
		px_run(lfd, sv[1], target);
		_exit(0);
	}
	close(lfd);
	close(sv[1]);
	p->ctl = sv[0];
	return p;
}

int h_proxy_port(const struct h_proxy *p)
{
	return p->port;
}

static long proxy_cmd(struct h_proxy *p, const char *cmd)
{
	char line[32];
	snprintf(line, sizeof(line), "%s\n", cmd);
	ck_assert_int_eq(h_send_all(p->ctl, line, strlen(line), 1000), 0);
	struct pollfd pf = {.fd = p->ctl, .events = POLLIN};
	ck_assert_msg(poll(&pf, 1, 2000) == 1, "the proxy did not answer '%s'", cmd);
	char out[32] = "";
	ssize_t n = read(p->ctl, out, sizeof(out) - 1);
	long v = -1;
	ck_assert_msg(n > 0 && sscanf(out, "ok %ld", &v) == 1, "the proxy answered '%s': '%.*s'",
	              cmd, (int)(n > 0 ? n : 0), out);
	return v;
}

long h_proxy_hold(struct h_proxy *p)
{
	return proxy_cmd(p, "hold");
}

long h_proxy_release(struct h_proxy *p)
{
	return proxy_cmd(p, "release");
}

void h_proxy_stop(struct h_proxy *p)
{
	close(p->ctl);
	kill(p->pid, SIGKILL);
	waitpid(p->pid, NULL, 0);
	free(p);
}
