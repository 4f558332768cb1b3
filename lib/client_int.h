/* client_int: what liblockd's files share (private).
 *
 * The files, each using only those listed after it (nothing calls up:
 * what reconnect.c hands back to client.c goes through struct cli_ops):
 *
 *   typed.c      typed requests (lockd_lock(), ...) and status names,
 *                queued through client.c (cli_enqueue)
 *   client.c     the public API: lines to replies and events, callbacks,
 *                deadlines, the heartbeat of the hold deadlines; fills
 *                each client's struct cli_ops
 *   reconnect.c  the I/O of reaching lockd again after a break: the next
 *                address, and the resume of a resumable session (when to
 *                reconnect, what to hand). client.c calls it at its safe
 *                points and with SESSION's and RESUME's replies; it hands
 *                replies and events up through c->ops (cli_ops)
 *   queue.c      the buffers and the queue of requests (no I/O, no
 *                callbacks), used by client.c and reconnect.c
 *   resume.c     a session's state: its addresses, id and secret,
 *                backoff, and the keys it holds with their local
 *                deadlines (struct holds; no I/O, no callbacks)
 *   net.c        options, addresses, connecting (TCP, Unix socket), and
 *                the bytes in and out, plain or through tls.c
 *   tls.c        the TLS layer over OpenSSL (every #ifdef HAVE_TLS)
 *   reply.c      the pure parser (reply.h), used by client.c, reconnect.c
 *                and typed.c
 *
 * The state of one client, struct lockd_client, is defined here so that
 * net.c and tls.c can advance its connection state and fail it
 * (cli_fail) without calling up into client.c. Private names shared
 * between files carry their file's prefix (net_, rz_, ctls_, rp_), or
 * cli_ for the client's own (client.c's, queue.c's and reconnect.c's). */
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
	CS_BROKEN,     /* the connection broke and the session may be resumed, or
	                  the next address may be tried: reconnect.c takes over
	                  at client.c's next safe point (rz.why says what broke) */
	CS_DOWN,       /* no connection: the next attempt is due at rz.next_us */
	CS_FAILED,     /* status and err say why; only lockd_close() is left */
};

enum who {
	W_USER,    /* lockd_send(): reply to the reply callback */
	W_AUTH,    /* the AUTH of connecting: handled here */
	W_CALL,    /* lockd_call(): reply kept in res */
	W_SESSION, /* the SESSION of connecting (resume): handled here */
	W_RESUME,  /* the RESUME of a reconnection: handled here */
	W_HELD,    /* the library's HELD (a grant's check, a heartbeat): its
	              reply refreshes the hold deadlines (client.c) */
};

/* What a request does to the keys a resumable session holds. */
enum rz_op {
	RZ_OP_NONE,   /* nothing */
	RZ_OP_LOCK,   /* LOCK, TRYLOCK: "OK fence" grants key */
	RZ_OP_UNLOCK, /* UNLOCK: "OK 0" or ERR NOTHELD drops key */
	RZ_OP_RESIGN, /* RESIGN: "OK" or ERR NOTLEADER drops key (CAMPAIGN is a LOCK) */
	RZ_OP_EXTEND, /* EXTEND key ms: "OK" gives key a lease of ms from its sending */
};

struct pend {
	void *tag;
	int64_t sent_us;
	int64_t deadline_us; /* 0: none */
	int timeout_ms;      /* for the message */
	unsigned char list;  /* HELD, STATS: lines up to END */
	unsigned char who;   /* enum who */
	unsigned char op;    /* enum rz_op (c->holds only) */
	unsigned char beat;  /* W_HELD: the heartbeat (not a grant's check) */
	unsigned char dead;  /* sent on a connection that broke: answered
	                        ERR DISCONNECTED once the session is resumed */
	char cmd[14];        /* the command word, for messages */
	char *key;           /* op's key (malloc'd; c->holds only) */
	int64_t num;         /* RZ_OP_EXTEND: its ms (rz_request) */
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
struct lockd_client;

/* What reconnect.c hands up to client.c (filled by client.c, once, in
 * every client): it answers and tells the way lockd's own lines do. */
struct cli_ops {
	/* The reply at the head of the queue is complete in acc: hand it. */
	void (*reply_done)(struct lockd_client *c);
	/* An event line (NUL-terminated, n bytes): track LOST, hand it. */
	int (*event)(struct lockd_client *c, const char *line, size_t n);
};

/* A lockd to connect to (lockd_opts.addresses). */
struct rz_ep {
	char *host; /* NULL with unix_path */
	int port;
	char *unix_path;
};

enum rz_state {
	RZ_NONE,   /* no session yet: connecting, SESSION unanswered (or not asked) */
	RZ_LIVE,   /* the session is resumable and its connection is up */
	RZ_WAIT,   /* the connection broke: the next attempt is due at next_us */
	RZ_TRYING, /* an attempt is under way: connecting, AUTH and RESUME sent */
	RZ_OVER,   /* QUIT sent, or no resume possible: a break is final */
};

/* A client's addresses and, with resume, its session (resume.c). */
struct rz {
	enum rz_state st;
	int resume;          /* lockd_opts.resume */
	struct lockd_opts o; /* the options, their strings copied (o.password too) */
	struct rz_ep *eps;
	int nep;
	int ep;              /* the address in use (or tried first when resuming) */
	int tried;           /* addresses tried in this round (or at connect) */
	int64_t backoff_us;  /* the pause after the next failed round */
	int64_t next_us;     /* RZ_WAIT: the next attempt */
	int64_t deadline_us; /* resuming: give up then (the grace) */
	int64_t broke_us;    /* when the connection broke */
	char id[64];
	char secret[96];
	int grace_ms; /* as SESSION answered */
	unsigned resumes;
	struct buf later; /* requests sent while resuming: out after RESUME */
	char why[384];    /* what broke the connection */
	char was[320];    /* the peer it broke with */
};

/* A key the session holds, as the library saw it granted (resume.c). */
struct hold {
	char *key;
	uint64_t fence;
	int64_t asked_us;    /* the request that granted it was queued then */
	int64_t granted_us;  /* its "OK fence" came then */
	int64_t ttl_us;      /* the lease left that its last confirmation gave */
	int64_t ttl_max_us;  /* the longest it gave (about the lease) */
	int64_t beat_us;     /* a heartbeat is due then for it (0: none) */
	int64_t deadline_us; /* surely held before this; 0: not confirmed yet */
	int64_t report_us;   /* reported LOST then unless confirmed again */
	int64_t limit_us;    /* an EXTEND queued at limit_from may end the lease then:
	                        no confirmation queued before it goes past (0: none) */
	int64_t limit_from;
	uint32_t next;      /* the next hold of its hash chain: index + 1 (0: none) */
	uint32_t seen;      /* the HELD reply (holds.seen) that last listed it */
	unsigned char lost; /* reported LOST by its deadline; kept until lockd says */
};

/* The keys a session holds (with resume, or hold deadlines). */
struct holds {
	struct hold *h;
	size_t n, cap;
	uint32_t *bucket; /* the first hold of each chain: index + 1 (0: none) */
	size_t nbucket;   /* a power of two */
	int deadlines;    /* lockd_opts.hold_deadlines is on */
	int beat_out;     /* a heartbeat is unanswered */
	int64_t beat_us;  /* the next heartbeat is due then (0: none due) */
	int64_t check_us; /* no hold is to be reported before then (0: none) */
	uint32_t seen;    /* HELD replies read */
};

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
	struct ctls *tls;          /* NULL: plain */
	size_t wrote;              /* bytes written on this connection */
	size_t nint;               /* internal requests (AUTH, SESSION, RESUME) in the queue */
	size_t nheld;              /* the library's HELDs (W_HELD) in the queue */
	struct rz *rz;             /* addresses and resume (NULL: neither asked) */
	struct holds *holds;       /* NULL: neither resume nor hold deadlines */
	const struct cli_ops *ops; /* client.c's, for reconnect.c */
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
/* 1: a failure with status breaks the connection without failing the
 * client: a resumable session reconnects, or another address is left. */
static inline int rz_breaks(const struct lockd_client *c, int status)
{
	const struct rz *rz = c->rz;
	if (status != LOCKD_ECLOSED && status != LOCKD_EIO && status != LOCKD_ETIMEDOUT &&
	    status != LOCKD_ECONNECT)
		return 0;
	switch (rz->st) {
	case RZ_LIVE:
	case RZ_TRYING:
		return rz->resume;
	case RZ_NONE:
		/* connecting: nothing written yet, and another address left */
		return c->wrote == 0 && rz->tried + 1 < rz->nep;
	default:
		return 0;
	}
}

static inline int cli_fail(struct lockd_client *c, int status, const char *fmt, ...)
{
	if (c->st == CS_FAILED)
		return c->status;
	if (c->st == CS_BROKEN)
		return status; /* the first break is the one to report */
	va_list ap;
	if (c->rz && rz_breaks(c, status)) {
		/* a resumable session, or another address to try: not final */
		va_start(ap, fmt);
		vsnprintf(c->rz->why, sizeof(c->rz->why), fmt, ap);
		va_end(ap);
		c->st = CS_BROKEN;
		return status;
	}
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

/* ---- resume.c: addresses and the resumable session's state ---- */

/* Make c->rz when o asks for resume or addresses (copying what it needs). */
int rz_new(struct lockd_client *c, const struct lockd_opts *o);
void rz_free(struct rz *rz);
/* The options to connect to address i (o's, with its host, port or path). */
void rz_ep_opts(const struct rz *rz, int i, struct lockd_opts *out);
/* The op and key of a request line (key malloc'd, NULL for RZ_OP_NONE);
 * *num: EXTEND's ms. */
int rz_request(const char *req, size_t n, enum rz_op *op, char **key, int64_t *num);

/* The holds (deadlines: lockd_opts.hold_deadlines on); NULL: no memory. */
struct holds *rz_holds_new(int deadlines);
void rz_holds_free(struct holds *hs);
struct hold *rz_hold_find(struct holds *hs, const char *key);
/* Forget h (the last hold moves into its place). */
void rz_hold_del(struct holds *hs, struct hold *h);
/* A reply line to a request of op on key, queued at asked_us (num: its
 * EXTEND ms), came at now: the keys held change. 0, or -1 out of memory. */
int rz_track(struct holds *hs, enum rz_op op, const char *key, const char *line, int64_t asked_us,
             int64_t num, int64_t now);
/* An EXTEND key ms queued at now: the new lease may be shorter. */
void rz_extend_sent(struct holds *hs, const char *key, int64_t ms, int64_t now);
/* One line "KEY key fence holds ttl_ms ..." of a HELD reply number
 * hs->seen, queued at sent_us, read at now: the hold is confirmed. */
void rz_held_line(struct holds *hs, const char *line, int64_t sent_us, int64_t now);
/* After a HELD reply queued at sent_us (0 after reports): the next
 * heartbeat and check (hs->beat_us, hs->check_us). */
void rz_holds_plan(struct holds *hs, int64_t sent_us);
/* "SESSION id secret grace_ms": 0 when line is that (kept), else -1. */
int rz_session_reply(struct rz *rz, const char *line);

/* ---- client.c, for typed.c ---- */

/* Queue a request (as lockd_send() with who). */
int cli_enqueue(struct lockd_client *c, const char *req, size_t n, int timeout_ms, void *tag,
                enum who who);

/* ---- queue.c: buffers and the request queue, for client.c and reconnect.c ---- */

/* Room for more bytes at the end of b (0, or -1 out of memory). */
int cli_buf_reserve(struct buf *b, size_t more);
/* Append a line to r (0, or -1 out of memory). */
int cli_rs_add(struct rstore *r, const char *line, size_t n);
/* Free r's memory (r itself is the caller's). */
void cli_rs_free(struct rstore *r);

static inline void cli_rs_reset(struct rstore *r)
{
	r->len = 0;
	r->n = 0;
}

/* The i-th request of the queue, from its head. */
static inline struct pend *cli_q_at(struct lockd_client *c, size_t i)
{
	return &c->q[(c->qhead + i) % c->qcap];
}

/* 1: a request of the library's own (counted in nint), not the caller's. */
static inline int cli_is_internal(unsigned who)
{
	return who == W_AUTH || who == W_SESSION || who == W_RESUME;
}

/* A new, zeroed entry after every other (NULL: out of memory). */
struct pend *cli_q_push(struct lockd_client *c);
/* Drop the head of the queue (its key is the caller's to free). */
void cli_q_pop(struct lockd_client *c);
/* A new, zeroed entry before every other (NULL: out of memory). */
struct pend *cli_q_push_front(struct lockd_client *c);

/* ---- reconnect.c: reaching lockd again, for client.c ---- */

/* Connect to address i of c->rz (the connect deadline starts now). */
void cli_connect_ep(struct lockd_client *c, int i);
/* c->st is CS_BROKEN: the next address, or resume, or fail. */
void cli_on_break(struct lockd_client *c);
/* c->st is CS_DOWN: the next attempt once its pause is over. */
void cli_resume_due(struct lockd_client *c);
/* The replies to SESSION and to RESUME. */
void cli_handle_session(struct lockd_client *c, const char *line);
void cli_handle_resume(struct lockd_client *c, const char *line);

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
