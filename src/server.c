/* server: the listeners (TCP, TLS and Unix sockets) and accepting clients.
 *
 * It owns the count of sessions per client IP address (for
 * limits.max_clients_per_ip), the TLS contexts of the listeners (reloaded
 * on SIGHUP), and the pause in accepting when the process is out of file
 * descriptors: accept() would fail at once again, and a level-triggered
 * listener would spin on it, so every listener is disabled for
 * ACCEPT_PAUSE_MS while the sessions already connected go on. Pauses less
 * than ACCEPT_CALM_MS apart are one episode, logged once at its start and
 * once at its end. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "keytab.h"
#include "log.h"
#include "server.h"
#include "session.h"
#include "stats.h"
#include "tls.h"
#include "util.h"
#include "ilist.h"

#define ACCEPT_PAUSE_MS 250  /* out of descriptors: try accepting again after this */
#define ACCEPT_CALM_MS  2000 /* an episode of pauses ends after this long without one */

struct listener {
	struct evconnlistener *l;
	char path[108]; /* unix socket to remove at exit, or "" */
	int tcp;
	char spec[300];         /* the listen entry, for log lines */
	struct ssl_ctx_st *tls; /* NULL: plain */
	struct cfg_tls files;   /* the TLS files it was started with */
};

struct server_peer {
	struct kt_node node; /* key: the address bytes in ip */
	uint32_t sessions;
	unsigned char ip[16];
};

static struct listener listeners[CONFIG_MAX_LISTEN];
static int nlisteners;
static const struct config *cfg;
static struct event_base *base;
static struct keytab peers;
static struct event *ev_resume; /* re-enables accepting after a pause */
static struct event *ev_calm;   /* ends an episode of pauses */
static uint64_t episode_pauses; /* pauses in the current episode; 0: none */
static int64_t episode_us;      /* when it began */
static struct event *ev_hup, *ev_reload;

void server_set_cfg(const struct config *c)
{
	cfg = c;
}

static void free_files(struct cfg_tls *t)
{
	free(t->cert);
	free(t->key);
	free(t->ca);
	memset(t, 0, sizeof(*t));
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The session count of the address, made if new; NULL if out of memory. */
static struct server_peer *peer_get(const void *ip, size_t len)
{
	if (!peers.slots && keytab_init(&peers, 64) != 0)
		return NULL;
	struct kt_node *n = keytab_find(&peers, ip, len);
	if (n)
		return ilist_entry(n, struct server_peer, node);
	struct server_peer *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	memcpy(p->ip, ip, len);
	p->node.key = (const char *)p->ip;
	p->node.klen = len;
	keytab_insert(&peers, &p->node);
	return p;
}

void server_peer_put(struct server_peer *p)
{
	if (!p || --p->sessions > 0)
		return;
	keytab_remove(&peers, &p->node);
	free(p);
}

/* A session of that address ended (session_new's on_free). */
static void peer_put_cb(void *arg)
{
	server_peer_put(arg);
}

static void resume_accepting(evutil_socket_t fd, short what, void *arg)
{
	for (int i = 0; i < nlisteners; i++)
		evconnlistener_enable(listeners[i].l);
}

static void calm_cb(evutil_socket_t fd, short what, void *arg)
{
	log_info("accept: accepting again after %llu pause(s) in %lld ms",
	         (unsigned long long)episode_pauses, (long long)(now_us() - episode_us) / 1000);
	episode_pauses = 0;
}

/* accept() failed for another reason than a retriable one (most often
 * EMFILE or ENFILE): stop accepting for a moment. */
static void pause_accepting(int e)
{
	for (int i = 0; i < nlisteners; i++)
		evconnlistener_disable(listeners[i].l);
	stats.accept_pauses++;
	if (episode_pauses++ == 0) {
		episode_us = now_us();
		log_warn("accept: %s: not accepting for %d ms at a time until it succeeds (%llu "
		         "clients connected)",
		         evutil_socket_error_to_string(e), ACCEPT_PAUSE_MS,
		         (unsigned long long)stats.clients);
	}
	struct timeval tv = {0, ACCEPT_PAUSE_MS * 1000};
	evtimer_add(ev_resume, &tv);
	struct timeval calm = {ACCEPT_CALM_MS / 1000, ACCEPT_CALM_MS % 1000 * 1000};
	evtimer_add(ev_calm, &calm);
}

static void refuse(int fd, const char *msg, size_t len)
{
	ssize_t w = send(fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)w;
	evutil_closesocket(fd);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                      void *arg)
{
	struct listener *li = arg;
	struct server_peer *ip = NULL;
	char peer[64] = "unix";

	if (stats.clients >= (uint64_t)cfg->max_clients) {
		static const char msg[] = "ERR LIMIT too many clients\r\n";
		stats.rejected_clients++;
		refuse(fd, msg, sizeof(msg) - 1);
		return;
	}
	if (li->tcp) {
		int one = 1;
		char addr[INET6_ADDRSTRLEN] = "?";
		/* Replies are single short lines: send them at once. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (sa->sa_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)sa;
			inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
			snprintf(peer, sizeof(peer), "%s:%d", addr, ntohs(in->sin_port));
			ip = peer_get(&in->sin_addr, sizeof(in->sin_addr));
		} else if (sa->sa_family == AF_INET6) {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
			inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
			snprintf(peer, sizeof(peer), "[%s]:%d", addr, ntohs(in6->sin6_port));
			ip = peer_get(&in6->sin6_addr, sizeof(in6->sin6_addr));
		}
		if (!ip) {
			log_warn("out of memory accepting a client");
			evutil_closesocket(fd);
			return;
		}
		int64_t per_ip = cfg->max_clients_per_ip;
		if (per_ip > 0 && ip->sessions >= (uint64_t)per_ip) {
			static const char msg[] =
			    "ERR LIMIT too many clients from this address\r\n";
			stats.rejected_per_ip++;
			log_debug("refused %s: limits.max_clients_per_ip (%lld) reached", peer,
			          (long long)per_ip);
			refuse(fd, msg, sizeof(msg) - 1);
			return;
		}
		ip->sessions++;
	}
	if (!session_new(base, fd, peer, li->tls, ip ? peer_put_cb : NULL, ip)) {
		log_warn("out of memory accepting a client");
		server_peer_put(ip);
		evutil_closesocket(fd);
	}
}

static void error_cb(struct evconnlistener *l, void *arg)
{
	pause_accepting(EVUTIL_SOCKET_ERROR());
}

/* SIGHUP: reload the certificates once main has reloaded the config
 * (from the loop's next turn), and let sessions see new timeouts. */
static void hup_cb(evutil_socket_t fd, short what, void *arg)
{
	struct timeval now = {0, 0};
	evtimer_add(ev_reload, &now);
}

static int same_file(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void reload_cb(evutil_socket_t fd, short what, void *arg)
{
	sessions_rearm();
	for (int i = 0; i < nlisteners; i++) {
		struct listener *li = &listeners[i];
		if (!li->tls)
			continue;
		/* The files of a listener cannot change while it runs (as
		 * listen cannot): the same files are read again. */
		for (int j = 0; j < cfg->nlisten; j++) {
			const struct cfg_tls *t = &cfg->listen_tls[j];
			const struct cfg_tls *f = &li->files;
			if (strcmp(cfg->listen[j], li->spec) == 0 &&
			    (!same_file(t->cert, f->cert) || !same_file(t->key, f->key) ||
			     !same_file(t->ca, f->ca)))
				log_warn("reload: listen %s: tls cannot change at runtime; "
				         "reading the old files again",
				         li->spec);
		}
		char err[512];
		struct ssl_ctx_st *ctx = tls_ctx_new(&li->files, err, sizeof(err));
		if (!ctx) {
			log_error("reload: listen %s: %s; keeping the certificate in use", li->spec,
			          err);
			continue;
		}
		tls_ctx_free(li->tls); /* sessions accepted with it keep it */
		li->tls = ctx;
		log_info("reload: listen %s: certificates reloaded", li->spec);
	}
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

static int listen_one(const char *spec, const struct cfg_tls *tls, char *err, size_t errlen)
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
	snprintf(li->spec, sizeof(li->spec), "%s", spec);
	if (tls->cert) {
		char e[512];
		li->tls = tls_ctx_new(tls, e, sizeof(e));
		if (!li->tls) {
			snprintf(err, errlen, "listen %s: %s", spec, e);
			return -1;
		}
		li->files.cert = dup_or_null(tls->cert);
		li->files.key = dup_or_null(tls->key);
		li->files.ca = dup_or_null(tls->ca);
	}
	if (a.kind == ADDR_UNIX) {
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		if (clear_stale(a.path, err, errlen))
			goto fail;
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", a.path);
		mode_t old = umask(0177); /* no window with wider permissions */
		li->l = evconnlistener_new_bind(base, accept_cb, li, flags & ~LEV_OPT_REUSEABLE,
		                                1024, (struct sockaddr *)&sun, sizeof(sun));
		umask(old);
		if (li->l && chmod(a.path, (mode_t)cfg_unix_mode(cfg)) != 0)
			log_warn("chmod %s: %s", a.path, strerror(errno));
		snprintf(li->path, sizeof(li->path), "%s", a.path);
	} else {
		struct sockaddr_storage ss;
		int sl = sizeof(ss);
		char buf[300];
		snprintf(buf, sizeof(buf), strchr(a.host, ':') ? "[%s]:%d" : "%s:%d", a.host,
		         a.port);
		if (evutil_parse_sockaddr_port(buf, (struct sockaddr *)&ss, &sl) != 0) {
			snprintf(err, errlen, "listen %s: host must be a numeric IP address", spec);
			goto fail;
		}
		li->tcp = 1;
		li->l = evconnlistener_new_bind(base, accept_cb, li, flags, 1024,
		                                (struct sockaddr *)&ss, sl);
	}
	if (!li->l) {
		snprintf(err, errlen, "listen %s: %s", spec, strerror(errno));
		li->path[0] = '\0';
		goto fail;
	}
	evconnlistener_set_error_cb(li->l, error_cb);
	nlisteners++;
	log_info("listening on %s%s%s", spec, li->tls ? " (TLS" : "",
	         li->tls ? (li->files.ca ? ", client certificates required)" : ")") : "");
	return 0;
fail:
	tls_ctx_free(li->tls);
	li->tls = NULL;
	free_files(&li->files);
	return -1;
}

int server_check_tls(const struct config *c, char *err, size_t errlen)
{
	for (int i = 0; i < c->nlisten; i++) {
		char e[512];
		struct ssl_ctx_st *ctx;
		if (!c->listen_tls[i].cert)
			continue;
		if (!(ctx = tls_ctx_new(&c->listen_tls[i], e, sizeof(e)))) {
			snprintf(err, errlen, "listen %s: %s", c->listen[i], e);
			return -1;
		}
		tls_ctx_free(ctx);
	}
	return 0;
}

int server_listen(struct event_base *b, const struct config *c, char *err, size_t errlen)
{
	base = b;
	cfg = c;
	ev_resume = evtimer_new(base, resume_accepting, NULL);
	ev_calm = evtimer_new(base, calm_cb, NULL);
	ev_reload = evtimer_new(base, reload_cb, NULL);
	ev_hup = evsignal_new(base, SIGHUP, hup_cb, NULL);
	if (!ev_resume || !ev_calm || !ev_reload || !ev_hup || evsignal_add(ev_hup, NULL) != 0) {
		snprintf(err, errlen, "out of memory");
		server_close();
		return -1;
	}
	for (int i = 0; i < c->nlisten; i++)
		if (listen_one(c->listen[i], &c->listen_tls[i], err, errlen)) {
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
		tls_ctx_free(listeners[i].tls);
		listeners[i].tls = NULL;
		free_files(&listeners[i].files);
	}
	nlisteners = 0;
	if (ev_resume)
		event_free(ev_resume);
	if (ev_calm)
		event_free(ev_calm);
	if (ev_reload)
		event_free(ev_reload);
	if (ev_hup)
		event_free(ev_hup);
	ev_resume = ev_calm = ev_reload = ev_hup = NULL;
}
