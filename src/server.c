/* server: the listeners (TCP and Unix sockets) and accepting clients. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "log.h"
#include "server.h"
#include "session.h"
#include "stats.h"
#include "util.h"

struct listener {
	struct evconnlistener *l;
	char path[108]; /* unix socket to remove at exit, or "" */
	int tcp;
};

static struct listener listeners[CONFIG_MAX_LISTEN];
static int nlisteners;
static const struct config *cfg;
static struct event_base *base;

void server_set_cfg(const struct config *c) { cfg = c; }

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
		      void *arg)
{
	struct listener *li = arg;
	char peer[64] = "unix";

	if (stats.clients >= (uint64_t)cfg->max_clients) {
		static const char msg[] = "ERR LIMIT too many clients\r\n";
		ssize_t w = send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
		stats.rejected_clients++;
		evutil_closesocket(fd);
		return;
	}
	if (li->tcp) {
		int one = 1;
		/* Replies are single short lines: send them at once. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (sa->sa_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)sa;
			char ip[INET_ADDRSTRLEN];
			inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
			snprintf(peer, sizeof(peer), "%s:%d", ip, ntohs(in->sin_port));
		}
	}
	if (!session_new(base, fd, peer)) {
		log_warn("out of memory accepting a client");
		evutil_closesocket(fd);
	}
}

static void error_cb(struct evconnlistener *l, void *arg)
{
	int e = EVUTIL_SOCKET_ERROR();
	/* EMFILE and friends: log and keep listening; clients retry. */
	log_warn("accept: %s", evutil_socket_error_to_string(e));
}

/* A socket file nobody answers on is stale: remove it. One that answers
 * belongs to a running lockd: refuse to take it over. */
static int clear_stale(const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "unix:%s exists and is not a socket", path);
		return -1;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	int live = fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
	if (fd >= 0)
		close(fd);
	if (live) {
		snprintf(err, errlen, "unix:%s: another process is listening there", path);
		return -1;
	}
	log_info("removing stale socket %s", path);
	unlink(path);
	return 0;
}

static int listen_one(const char *spec, char *err, size_t errlen)
{
	struct addr a;
	struct listener *li = &listeners[nlisteners];
	const char *why = addr_parse(spec, 1, 1, &a);
	unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE;

	if (why) {
		snprintf(err, errlen, "listen %s: %s", spec, why);
		return -1;
	}
	memset(li, 0, sizeof(*li));
	if (a.kind == ADDR_UNIX) {
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		if (clear_stale(a.path, err, errlen))
			return -1;
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", a.path);
		mode_t old = umask(0177); /* no window with wider permissions */
		li->l = evconnlistener_new_bind(base, accept_cb, li, flags & ~LEV_OPT_REUSEABLE, 1024,
						(struct sockaddr *)&sun, sizeof(sun));
		umask(old);
		if (li->l && chmod(a.path, (mode_t)cfg_unix_mode(cfg)) != 0)
			log_warn("chmod %s: %s", a.path, strerror(errno));
		snprintf(li->path, sizeof(li->path), "%s", a.path);
	} else {
		struct sockaddr_storage ss;
		int sl = sizeof(ss);
		char buf[300];
		snprintf(buf, sizeof(buf), strchr(a.host, ':') ? "[%s]:%d" : "%s:%d", a.host, a.port);
		if (evutil_parse_sockaddr_port(buf, (struct sockaddr *)&ss, &sl) != 0) {
			snprintf(err, errlen, "listen %s: host must be a numeric IP address", spec);
			return -1;
		}
		li->tcp = 1;
		li->l = evconnlistener_new_bind(base, accept_cb, li, flags, 1024,
						(struct sockaddr *)&ss, sl);
	}
	if (!li->l) {
		snprintf(err, errlen, "listen %s: %s", spec, strerror(errno));
		li->path[0] = '\0';
		return -1;
	}
	evconnlistener_set_error_cb(li->l, error_cb);
	nlisteners++;
	log_info("listening on %s", spec);
	return 0;
}

int server_listen(struct event_base *b, const struct config *c, char *err, size_t errlen)
{
	base = b;
	cfg = c;
	for (int i = 0; i < c->nlisten; i++)
		if (listen_one(c->listen[i], err, errlen)) {
			server_close();
			return -1;
		}
	return 0;
}

void server_close(void)
{
	for (int i = 0; i < nlisteners; i++) {
		evconnlistener_free(listeners[i].l);
		if (listeners[i].path[0])
			unlink(listeners[i].path);
	}
	nlisteners = 0;
}
