/* net: how a liblockd client reaches lockd. It owns the options a
 * program gives (read only within their size), the addresses (a Unix
 * socket, or a host resolved with getaddrinfo and tried in turn), the
 * non-blocking connect and its completion, the start of TLS, and the
 * bytes in and out of the socket, plain or through tls.c. Timeouts are
 * the client's (client.c checks connect_deadline_us); net.c only moves
 * the connection state forward or fails the client. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "client_int.h"

/* ------------------------------------------------------------ options */

/* Is field f of struct lockd_opts wholly within the caller's size? */
#define OPT_IN(size, f)                                                                            \
	(offsetof(struct lockd_opts, f) + sizeof(((struct lockd_opts *)0)->f) <= (size))
#define OPT_TAKE(dst, o, f)                                                                        \
	do {                                                                                       \
		if (OPT_IN((o)->size, f))                                                          \
			(dst)->f = (o)->f;                                                         \
	} while (0)

int net_opts(struct lockd_client *c, const struct lockd_opts *o, struct lockd_opts *dst)
{
	memset(dst, 0, sizeof(*dst));
	dst->size = sizeof(*dst);
	if (!o)
		return 0;
	if (o->size < sizeof(o->size))
		return cli_fail(c, LOCKD_EARG,
		                "struct lockd_opts: size is %zu, not sizeof(struct lockd_opts) "
		                "(initialize it with LOCKD_OPTS_INIT)",
		                o->size);
	if (o->size > sizeof(*dst)) {
		/* A newer program's struct: its options beyond ours must be unset. */
		const unsigned char *extra = (const unsigned char *)o + sizeof(*dst);
		for (size_t i = 0; i < o->size - sizeof(*dst); i++)
			if (extra[i])
				return cli_fail(
				    c, LOCKD_EARG,
				    "struct lockd_opts: %zu bytes set options that this "
				    "liblockd (%zu bytes) does not know",
				    o->size, sizeof(*dst));
	}
	OPT_TAKE(dst, o, host);
	OPT_TAKE(dst, o, port);
	OPT_TAKE(dst, o, unix_path);
	OPT_TAKE(dst, o, password);
	OPT_TAKE(dst, o, connect_timeout_ms);
	OPT_TAKE(dst, o, max_line);
	OPT_TAKE(dst, o, tls);
	OPT_TAKE(dst, o, tls_ca);
	OPT_TAKE(dst, o, tls_cert);
	OPT_TAKE(dst, o, tls_key);
	OPT_TAKE(dst, o, tls_server_name);
	OPT_TAKE(dst, o, tls_no_verify);
	OPT_TAKE(dst, o, resume);
	OPT_TAKE(dst, o, grace_ms);
	OPT_TAKE(dst, o, addresses);
	OPT_TAKE(dst, o, hold_deadlines);
	return 0;
}

/* ------------------------------------------------------------ addresses */

static void addr_name(const struct sockaddr *sa, char *out, size_t outlen)
{
	char host[NI_MAXHOST], serv[NI_MAXSERV];
	if (sa->sa_family == AF_UNIX) {
		snprintf(out, outlen, "unix:%s", ((const struct sockaddr_un *)sa)->sun_path);
		return;
	}
	socklen_t l =
	    sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	if (getnameinfo(sa, l, host, sizeof(host), serv, sizeof(serv),
	                NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(out, outlen, "?");
		return;
	}
	snprintf(out, outlen, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

int net_resolve(struct lockd_client *c, const struct lockd_opts *o)
{
	if (o->unix_path) {
		struct sockaddr_un *un = (struct sockaddr_un *)&c->addr[0];
		snprintf(c->peer, sizeof(c->peer), "unix:%s", o->unix_path);
		if (!o->unix_path[0] || strlen(o->unix_path) >= sizeof(un->sun_path))
			return cli_fail(c, LOCKD_EARG, "unix socket path \"%s\": %s", o->unix_path,
			                o->unix_path[0] ? "longer than 107 bytes" : "empty");
		un->sun_family = AF_UNIX;
		strcpy(un->sun_path, o->unix_path);
		c->alen[0] = sizeof(*un);
		c->naddr = 1;
		return 0;
	}
	const char *host = o->host && o->host[0] ? o->host : LOCKD_DEFAULT_HOST;
	int port = o->port ? o->port : LOCKD_DEFAULT_PORT;
	char h[256], serv[16];
	size_t hl = strlen(host);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		host++;
		hl -= 2;
	}
	snprintf(c->peer, sizeof(c->peer), "%s:%d", o->host ? o->host : host, port);
	if (port < 1 || port > 65535)
		return cli_fail(c, LOCKD_EARG, "port %d: not in 1-65535", port);
	if (hl >= sizeof(h))
		return cli_fail(c, LOCKD_EARG, "host name longer than 255 bytes");
	memcpy(h, host, hl);
	h[hl] = '\0';
	snprintf(serv, sizeof(serv), "%d", port);
	struct addrinfo hints = {0}, *res = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	int r = getaddrinfo(h, serv, &hints, &res);
	if (r != 0)
		return cli_fail(c, LOCKD_ECONNECT, "%s: %s", c->peer,
		                r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
	for (struct addrinfo *a = res; a && c->naddr < CLI_MAX_ADDRS; a = a->ai_next) {
		if (a->ai_addrlen > sizeof(c->addr[0]))
			continue;
		memcpy(&c->addr[c->naddr], a->ai_addr, a->ai_addrlen);
		c->alen[c->naddr++] = a->ai_addrlen;
	}
	freeaddrinfo(res);
	if (c->naddr == 0)
		return cli_fail(c, LOCKD_ECONNECT, "%s: no address", c->peer);
	return 0;
}

/* ------------------------------------------------------------ connecting */

int net_connected(struct lockd_client *c)
{
	if (c->tls) {
		c->st = CS_HANDSHAKE;
		return ctls_handshake(c);
	}
	c->st = CS_OPEN;
	return 0;
}

int net_connect_next(struct lockd_client *c)
{
	for (; c->ai < c->naddr; c->ai++) {
		const struct sockaddr *sa = (const struct sockaddr *)&c->addr[c->ai];
		if (c->fd >= 0)
			close(c->fd);
		c->fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c->fd < 0) {
			c->connect_errno = errno;
			continue;
		}
		addr_name(sa, c->peer, sizeof(c->peer));
		if (sa->sa_family != AF_UNIX) {
			int one = 1;
			setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		int r;
		do
			r = connect(c->fd, sa, c->alen[c->ai]);
		while (r != 0 && errno == EINTR);
		if (r == 0)
			return net_connected(c);
		if (errno == EINPROGRESS) {
			c->st = CS_CONNECTING;
			return 0;
		}
		c->connect_errno = errno;
	}
	return cli_fail(c, LOCKD_ECONNECT, "connect %s: %s", c->peer, strerror(c->connect_errno));
}

int net_connect_check(struct lockd_client *c)
{
	struct pollfd pf = {c->fd, POLLOUT, 0};
	int r = poll(&pf, 1, 0);
	if (r <= 0)
		return 0;
	int err = 0;
	socklen_t l = sizeof(err);
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l) != 0)
		err = errno;
	if (err == 0)
		return net_connected(c);
	c->connect_errno = err;
	c->ai++;
	return net_connect_next(c);
}

int net_adopt_fd(struct lockd_client *c, int fd)
{
	c->fd = fd;
	snprintf(c->peer, sizeof(c->peer), "lockd");
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	if (fd >= 0 && getpeername(fd, (struct sockaddr *)&ss, &l) == 0 &&
	    (ss.ss_family == AF_INET || ss.ss_family == AF_INET6))
		addr_name((struct sockaddr *)&ss, c->peer, sizeof(c->peer));
	int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return cli_fail(c, LOCKD_EARG, "fd %d: %s", fd, strerror(errno));
	return 0;
}

/* The name lockd's certificate must carry: tls_server_name, else host
 * (without the brackets of an IPv6 literal), else none (Unix sockets). */
static const char *server_name(const struct lockd_opts *o, int open_fd, char *buf, size_t n)
{
	if (o->tls_server_name && *o->tls_server_name)
		return o->tls_server_name;
	if (o->unix_path || (open_fd && !(o->host && *o->host)))
		return NULL;
	const char *host = o->host && *o->host ? o->host : LOCKD_DEFAULT_HOST;
	size_t hl = strlen(host);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		host++;
		hl -= 2;
	}
	if (hl >= n)
		return NULL;
	memcpy(buf, host, hl);
	buf[hl] = '\0';
	return buf;
}

int net_start_tls(struct lockd_client *c, const struct lockd_opts *o, int open_fd)
{
	char name[256];
	if (!o->tls)
		return 0;
	return ctls_setup(c, o, server_name(o, open_fd, name, sizeof(name)));
}

/* ------------------------------------------------------------ bytes */

ssize_t net_send(struct lockd_client *c, const char *p, size_t n)
{
	if (c->tls)
		return ctls_io(c, (char *)p, n, 1);
	return send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

ssize_t net_recv(struct lockd_client *c, char *p, size_t n)
{
	if (c->tls)
		return ctls_io(c, p, n, 0);
	return recv(c->fd, p, n, MSG_DONTWAIT);
}
