/* client_int: what liblockd's I/O files share (private).
 *
 * The layers, each using only those below it (no two files use each
 * other's names):
 *
 *   client.c  the public API: buffers, the request queue, lines to
 *             replies and events, callbacks, deadlines, typed requests
 *   net.c     options, addresses, connecting (TCP, Unix socket), and the
 *             bytes in and out, plain or through tls.c
 *   tls.c     the TLS layer over OpenSSL (every #ifdef HAVE_TLS)
 *   reply.c   the pure parser (reply.h), used by client.c
 *
 * The state of one client, struct lockd_client, is defined here so that
 * net.c and tls.c can advance its connection state and fail it
 * (cli_fail) without calling up into client.c. */
#ifndef LOCKD_LIB_CLIENT_INT_H
#define LOCKD_LIB_CLIENT_INT_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include "lockd/client.h"

#define CLI_MAX_ADDRS 8

enum conn_state {
	CS_CONNECTING, /* non-blocking connect in progress (addr[ai]) */
	CS_HANDSHAKE,  /* connected; the TLS handshake is under way */
	CS_OPEN,       /* connected; requests flow */
	CS_FAILED,     /* status and err say why; only lockd_close() is left */
};

enum who {
	W_USER, /* lockd_send(): reply to the reply callback */
	W_AUTH, /* the AUTH of connecting: handled here */
	W_CALL, /* lockd_call(): reply kept in res */
};

struct pend {
	void *tag;
	int64_t sent_us;
	int64_t deadline_us; /* 0: none */
	int timeout_ms;      /* for the message */
	unsigned char list;  /* HELD, STATS: lines up to END */
	unsigned char who;   /* enum who */
	char cmd[14];        /* the command word, for messages */
};

struct buf {
	char *p;
	size_t len, cap, off; /* off: bytes already consumed (input) or written (output) */
};

/* The lines of one reply, each NUL-terminated, one after the other. */
struct rstore {
	char *text;
	size_t len, cap;
	size_t *offs;
	const char **lines;
	size_t n, ncap;
};

struct ctls; /* tls.c: the TLS state of one connection */

struct lockd_client {
	int fd;
	enum conn_state st;
	int status;
	char err[384];
	char peer[320];
	struct sockaddr_storage addr[CLI_MAX_ADDRS];
	socklen_t alen[CLI_MAX_ADDRS];
	int naddr, ai;
	int connect_errno;
	int64_t connect_deadline_us; /* 0: none; also bounds AUTH */
	int connect_timeout_ms;
	int authed;
	size_t max_line;
	struct buf in, out;
	size_t scan; /* input bytes from in.off already known to hold no LF */
	int eof;
	int send_errno;
	struct pend *q;
	size_t qcap, qhead, qlen;
	struct rstore acc, res;
	int in_list; /* acc holds the first lines of a list reply */
	struct lockd_reply call_reply;
	int call_done;
	char *evbuf;
	size_t evcap;
	lockd_reply_cb *on_reply;
	lockd_event_cb *on_event;
	void *arg;
	lockd_line_cb *on_line;
	uint64_t handed; /* replies, events and lines handed to the caller so far */
	void *line_arg;
	int depth; /* > 0 while a callback runs */
	int close_pending;
	struct ctls *tls; /* NULL: plain */
};

static inline int64_t cli_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Fail the client (the first failure stays): status and a message for
 * lockd_error(). Returns the client's status. */
static inline int cli_fail(struct lockd_client *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline int cli_fail(struct lockd_client *c, int status, const char *fmt, ...)
{
	if (c->st == CS_FAILED)
		return c->status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	c->st = CS_FAILED;
	c->status = status;
	return status;
}

/* ---- net.c: options and connecting ---- */

/* Copy the fields of *o that lie within o->size into *dst (the others
 * take their defaults, zero); o NULL: all defaults. Fails c with
 * LOCKD_EARG for a size it cannot take. */
int net_opts(struct lockd_client *c, const struct lockd_opts *o, struct lockd_opts *dst);
/* Addresses of o (unix_path, or host and port resolved) into c->addr. */
int net_resolve(struct lockd_client *c, const struct lockd_opts *o);
/* Connect to c->addr[ai], then the next ones, until one is under way or
 * connected (then TLS, or CS_OPEN). */
int net_connect_next(struct lockd_client *c);
/* While CS_CONNECTING: has the connect finished? */
int net_connect_check(struct lockd_client *c);
/* The connection is up: TLS handshake, or CS_OPEN. */
int net_connected(struct lockd_client *c);
/* Take a connected socket: non-blocking, its peer's name. */
int net_adopt_fd(struct lockd_client *c, int fd);
/* Make the TLS state when o asks for TLS; open_fd: for lockd_open_fd(). */
int net_start_tls(struct lockd_client *c, const struct lockd_opts *o, int open_fd);
/* As send(2) and recv(2) on the connection, plain or TLS; never block,
 * never raise SIGPIPE. */
ssize_t net_send(struct lockd_client *c, const char *p, size_t n);
ssize_t net_recv(struct lockd_client *c, char *p, size_t n);

/* ---- tls.c: the TLS layer ---- */

/* Make c->tls for o; name: what lockd's certificate must carry (NULL:
 * only the chain is verified). Fails c (LOCKD_ETLS, LOCKD_EARG) when it
 * cannot, and always when liblockd was built without TLS. */
int ctls_setup(struct lockd_client *c, const struct lockd_opts *o, const char *name);
/* Go on with the handshake; CS_OPEN once it is done. */
int ctls_handshake(struct lockd_client *c);
/* As recv() and send() (-1 with errno EAGAIN: OpenSSL waits for the
 * socket); a TLS error fails the client (-1, errno EPROTO). */
ssize_t ctls_io(struct lockd_client *c, char *p, size_t n, int writing);
/* 1: OpenSSL must write before it can go on (lockd_want() adds POLLOUT). */
int ctls_wants_write(const struct lockd_client *c);
/* 1: OpenSSL holds decrypted bytes not handed over yet. */
int ctls_pending(const struct lockd_client *c);
/* Send close_notify (as far as the socket takes it) and free c->tls. */
void ctls_free(struct lockd_client *c);

#endif
