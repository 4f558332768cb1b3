/* liblockd: a client of lockd's text protocol (version 1), for tools,
 * tests and programs in any event loop.
 *
 * One struct lockd_client is one connection, so one session: the locks
 * it takes belong to it and are released when it is closed. Requests go
 * out in order and their replies come back in order (pipelining works);
 * events ("LOST key fence", and the election events of protocol 1.3,
 * "ELECTED name fence value" and "NOLEADER name") are told apart from
 * replies and given to the event callback, never taken for a reply. HELD, STATS and WHO
 * (1.4) replies are read up to their END line and handed over as one reply.
 *
 * Two ways to use it, which can be mixed on one client:
 *
 *  - blocking: lockd_connect(), then lockd_call() per request, each with
 *    a timeout;
 *  - non-blocking: lockd_connect_start(), lockd_send() to queue requests,
 *    and, whenever lockd_fd() is ready as lockd_want() says or
 *    lockd_timeout_ms() has passed, lockd_step(): it writes, reads, and
 *    calls the reply and event callbacks. The fd never blocks.
 *
 * Requests are lines (lockd_call(), lockd_send(), and their printf forms,
 * which refuse a line with CR, LF or NUL), or typed requests with a key
 * (lockd_lock(), ...), which also refuse a key lockd would refuse.
 *
 * Errors: functions return LOCKD_OK (0) or a negative enum lockd_status.
 * A failure of the connection (closed, I/O error, reply timeout, a reply
 * that is not protocol version 1) is final: the client keeps the first
 * error, lockd_error() says what happened, and only lockd_close() is left
 * to do, unless the session is resumable (lockd_opts.resume, protocol
 * 1.2): then a broken connection is resumed (see lockd_session_id()). Nothing in the library
 * prints, exits or raises signals (sends use MSG_NOSIGNAL). A client is not safe for use by two
 * threads at once. */
#ifndef LOCKD_CLIENT_H
#define LOCKD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOCKD_DEFAULT_HOST       "127.0.0.1"
#define LOCKD_DEFAULT_PORT       7390
#define LOCKD_CONNECT_TIMEOUT_MS 5000      /* when lockd_opts.connect_timeout_ms is 0 */
#define LOCKD_MAX_LINE           (1 << 20) /* when lockd_opts.max_line is 0 */
#define LOCKD_MAX_KEY            65536     /* the longest key any lockd accepts */
#define LOCKD_EXCLUSIVE          0         /* hold of lockd_lock(): exclusive */
#define LOCKD_SHARED             (-1)      /* hold of lockd_lock(): SHARED */
#define LOCKD_MAX_VALUE                                                                            \
	256 /* the longest election value the typed                                                \
	       requests send (lockd's default                                                      \
	       limits.max_value_len) */

enum lockd_status {
	LOCKD_OK = 0,
	LOCKD_EARG = -1,        /* a bad argument: empty request, CR, LF or NUL in it,
	                           a number out of range in a typed request, bad
	                           address or password, a struct lockd_opts without
	                           its size; a request leaves the client unchanged */
	LOCKD_ENOMEM = -2,      /* out of memory */
	LOCKD_ECONNECT = -3,    /* could not connect (every address refused) */
	LOCKD_ETIMEDOUT = -4,   /* connect, AUTH or a reply took longer than allowed */
	LOCKD_ECLOSED = -5,     /* lockd closed the connection */
	LOCKD_EIO = -6,         /* send or receive failed (the errno is in the message) */
	LOCKD_EPROTO = -7,      /* lockd sent something protocol version 1 does not allow:
	                           a line not ended by CR LF, a NUL byte, an over-long
	                           line, a reply without a request */
	LOCKD_EAUTH = -8,       /* lockd refused the password (or asks for one) */
	LOCKD_ESTATE = -9,      /* not allowed now: lockd_call() from a callback or
	                           with requests of lockd_send() unanswered */
	LOCKD_ETLS = -10,       /* TLS failed: lockd's certificate did not verify, lockd
	                           refused ours (or asked for one), a file of tls_ca,
	                           tls_cert or tls_key did not load, or liblockd was
	                           built without TLS (lockd_tls_available()) */
	LOCKD_EKEY = -11,       /* a typed request (lockd_lock(), ...) was given a key
	                           lockd would refuse: empty, longer than LOCKD_MAX_KEY,
	                           or a byte outside 0x21-0x7e (a blank, CR, LF, NUL,
	                           control or non-ASCII byte); nothing was sent and
	                           the client is unchanged */
	LOCKD_ENOSESSION = -12, /* lockd_opts.resume: lockd refused SESSION, or the
	                         session could not be resumed (ERR NOSESSION, or no
	                         lockd answered RESUME within its grace): every lock
	                         it held is lost, each reported by a LOST event first */
};

/* Where and how to connect. Zeroed fields take the defaults.
 *
 * The library reads only the fields that lie wholly within size, which
 * the program sets to sizeof(struct lockd_opts) as it was compiled:
 * LOCKD_OPTS_INIT does it. Fields appended in later versions then take
 * their defaults for a program built before them, and the struct can grow
 * without breaking programs already built. A size of 0 (a struct zeroed
 * without LOCKD_OPTS_INIT) is refused with LOCKD_EARG; so is a larger
 * struct than this library knows whose extra bytes are not all zero (an
 * option this version cannot honour). The size field came with version 2
 * of the interface (libtool 2:0:0, soname liblockd.so.2): liblockd(3),
 * "ABI". */
struct lockd_opts {
	size_t size;            /* sizeof(struct lockd_opts): LOCKD_OPTS_INIT */
	const char *host;       /* NULL: LOCKD_DEFAULT_HOST; a name or an IPv4/IPv6 literal
	                           (names are resolved with getaddrinfo, which blocks) */
	int port;               /* 0: LOCKD_DEFAULT_PORT */
	const char *unix_path;  /* set: connect to this Unix socket instead */
	const char *password;   /* set: AUTH with it first (one token, no blanks) */
	int connect_timeout_ms; /* 0: LOCKD_CONNECT_TIMEOUT_MS; < 0: none. Covers AUTH. */
	size_t max_line;        /* 0: LOCKD_MAX_LINE; longest reply line accepted */
	/* TLS. The handshake is part of connecting: connect_timeout_ms covers it. */
	int tls;                     /* 1: speak TLS (a lockd listener with tls:) */
	const char *tls_ca;          /* PEM file of the CAs that sign lockd's certificate;
	                                NULL: the system's default CAs */
	const char *tls_cert;        /* PEM client certificate (chain), for a listener
	                                with a ca; NULL: none */
	const char *tls_key;         /* its private key (PEM); NULL: in tls_cert */
	const char *tls_server_name; /* the name lockd's certificate must carry (and the
	                                SNI); NULL: host (a name, or an IP address to be
	                                found in its subjectAltName). With unix_path or
	                                lockd_open_fd() and no name, only the chain is
	                                verified */
	int tls_no_verify;           /* 1: do not verify lockd's certificate (tests) */
	/* Sessions that outlive a connection (protocol 1.2; interface 3). */
	int resume;            /* 1: a resumable session: SESSION right after connecting,
	                          RESUME on a broken connection (see below) */
	int grace_ms;          /* resume: SESSION GRACE grace_ms; 0: lockd's default */
	const char *addresses; /* "host:port,[v6]:port,host,unix:/path": lockds on the
	                          same masters, tried in order to connect and to resume
	                          (a host without port takes port); set, it replaces
	                          host and unix_path. NULL: host/port or unix_path */
	/* Hold deadlines (interface 5; see "Hold deadlines" below). */
	int hold_deadlines; /* 0: the default: on for lockd_connect() and
	                       lockd_connect_start(), off for lockd_open_fd();
	                       1: on; -1: off (the behaviour of interface 4) */
	                    /* New fields go here, at the end, and mean "as before" when zero
	                       (hold_deadlines, on by default, is the one exception: see
	                       liblockd(3), "ABI"). */
};

/* struct lockd_opts o = LOCKD_OPTS_INIT; then set fields. A designated
 * initializer may instead name .size = sizeof(struct lockd_opts) itself. */
#define LOCKD_OPTS_INIT                                                                            \
	{                                                                                          \
		.size = sizeof(struct lockd_opts)                                                  \
	}

enum lockd_kind {
	LOCKD_R_OK,      /* "OK" or "OK n" (n: the fence, or holds left after UNLOCK) */
	LOCKD_R_PONG,    /* "PONG" or "PONG word" */
	LOCKD_R_FREE,    /* "FREE" (STATUS) */
	LOCKD_R_HELD,    /* "HELD ttl_ms waiters" (STATUS) */
	LOCKD_R_BUSY,    /* "BUSY" (TRYLOCK) */
	LOCKD_R_TIMEOUT, /* "TIMEOUT" (LOCK with WAIT) */
	LOCKD_R_ERR,     /* "ERR CODE text" */
	LOCKD_R_LIST,    /* the lines of a HELD, STATS or WHO reply, then "END" */
	LOCKD_R_OTHER,   /* any other line, such as the replies of later versions
	                    ("SHARED ...", "PERMITS ..."): see line */
	/* interface 4 (protocol 1.3); an earlier library gave these LOCKD_R_OTHER */
	LOCKD_R_LEADER, /* "LEADER fence [value]" (LEADER): num is the fence, value the
	                   value ("" for a name held by a plain LOCK) */
	LOCKD_R_NONE,   /* "NONE" (LEADER: no leader) */
};

/* One reply. Its strings belong to the client: valid during the reply
 * callback, or until the next lockd_call() on the client. */
struct lockd_reply {
	enum lockd_kind kind;
	const char *line; /* the first line, without CR LF ("END" for an empty list) */
	int has_num;      /* "OK n", "HELD ttl_ms waiters": num is set */
	uint64_t num;     /* OK: n; HELD: ttl_ms */
	uint64_t num2;    /* HELD: waiters */
	char code[16];    /* ERR: "QUORUM", "NOTHELD", ... ("" otherwise) */
	const char *text; /* ERR: the text after the code ("" if none) */
	size_t nlines;    /* LIST: the lines before END (without CR LF) */
	const char *const *lines;
	int64_t latency_us; /* from the request's lockd_send() to the reply's last line */
	/* interface 4 */
	const char *value; /* LEADER: the leader's value ("" if none, or another kind) */
};

/* What an event is (struct lockd_event's kind; interface 4). */
enum lockd_event_kind {
	LOCKD_E_OTHER = 0, /* an event this version does not know: see name and line */
	LOCKD_E_LOST,      /* "LOST key fence": a hold of key is gone */
	LOCKD_E_RESUMING,  /* the library's "RESUMING peer why" (resume) */
	LOCKD_E_RESUMED,   /* the library's "RESUMED peer holds" (resume) */
	LOCKD_E_ELECTED,   /* "ELECTED name fence value": name's leader, or its new value
	                      (protocol 1.3, after OBSERVE name) */
	LOCKD_E_NOLEADER,  /* "NOLEADER name": name has no leader (OBSERVE name) */
};

/* An event: "LOST key fence", and with protocol 1.3 (after OBSERVE) the
 * election events "ELECTED name fence value" and "NOLEADER name" (key is
 * then the election's name). With lockd_opts.resume the library adds
 * events of its own (never sent by lockd), with the peer as key:
 *   "RESUMING peer why"  the connection to peer broke; resuming (fence 0)
 *   "RESUMED peer holds" RESUME answered "OK holds" on peer (fence: holds);
 *                        lockd's LOST events for holds lost meanwhile follow
 * and, when the session cannot be resumed, "LOST key fence" for each key
 * the library saw granted and not released or lost, before the client
 * fails with LOCKD_ENOSESSION. Observations do not outlive a connection:
 * after RESUMED, send OBSERVE again. */
struct lockd_event {
	const char *line; /* the whole line, without CR LF */
	const char *name; /* "LOST", "ELECTED", ... (the first word) */
	const char *key;  /* "" when the line has none; the name of an election */
	uint64_t fence;   /* 0 when the line has none */
	int in_list;      /* 1: it came between the lines of a HELD, STATS or WHO reply,
	                     where protocol version 1 never sends one */
	/* interface 4: fields the library fills, appended (a program built
	   before them never reads them) */
	enum lockd_event_kind kind;
	const char *value; /* ELECTED: the leader's value; "" otherwise */
	/* interface 5 */
	int by_deadline; /* LOST: 1 when the library sends it because the hold's
	                    local deadline came before lockd confirmed the hold
	                    (see "Hold deadlines"; lockd may still hold it); 0 when
	                    lockd sent it, lockd's HELD no longer lists the hold,
	                    or the session is over (not resumed, the client failed) */
};

struct lockd_client;

/* tag: what lockd_send() was given with the request. */
typedef void lockd_reply_cb(struct lockd_client *c, const struct lockd_reply *r, void *tag,
                            void *arg);
typedef void lockd_event_cb(struct lockd_client *c, const struct lockd_event *ev, void *arg);
/* line: one line lockd sent, without CR LF (len bytes, NUL-terminated).
 * Returns 0 to let the library go on with it, 1 to take it. */
typedef int lockd_line_cb(struct lockd_client *c, const char *line, size_t len, void *arg);

/* ---- connecting ---- */

/* Connect (and AUTH), waiting at most connect_timeout_ms. *out is set
 * unless memory ran out (LOCKD_ENOMEM): on any other failure it is a
 * failed client whose lockd_error() says why; close it. */
int lockd_connect(const struct lockd_opts *o, struct lockd_client **out);
/* Start connecting without waiting; lockd_step() finishes. Requests can
 * be queued at once. Same return and *out rules as lockd_connect(). */
int lockd_connect_start(const struct lockd_opts *o, struct lockd_client **out);
/* Use a connected stream socket (made non-blocking; closed by
 * lockd_close()). o may be NULL; only password, max_line, the tls_
 * fields and host (the name to verify when tls_server_name is NULL) are
 * used; with tls the handshake starts at once and lockd_step() goes on
 * with it. */
int lockd_open_fd(int fd, const struct lockd_opts *o, struct lockd_client **out);
/* Close the connection (the session ends, its locks are released) and
 * free the client. From inside a callback, the client is freed when
 * lockd_step() returns (it then returns LOCKD_ECLOSED). NULL is ignored. */
void lockd_close(struct lockd_client *c);

/* ---- callbacks ---- */

/* Replies of lockd_send() requests go to on_reply (dropped when NULL),
 * events to on_event (dropped when NULL), in the order of their lines.
 * Callbacks may lockd_send() and lockd_close(); lockd_call(), lockd_wait()
 * and lockd_step() from a callback return LOCKD_ESTATE. */
void lockd_set_callbacks(struct lockd_client *c, lockd_reply_cb *on_reply, lockd_event_cb *on_event,
                         void *arg);
/* Every line lockd sends goes to on_line first (NULL: none), in order,
 * once its framing is checked (CR LF, no NUL byte, max_line), before it
 * is read as a reply or an event. A line that on_line takes (returns 1)
 * is no reply and no event: it answers no request. For traces, and for
 * programs that write requests to lockd_fd() themselves and pair their
 * replies on their own (tests of lockd with malformed input). on_line may
 * do what the other callbacks may. */
void lockd_set_line_callback(struct lockd_client *c, lockd_line_cb *on_line, void *arg);

/* ---- blocking ---- */

/* Send request (one line, without its line ending) and wait for its
 * reply at most timeout_ms (< 0: no limit). Events that arrive meanwhile
 * go to the event callback. On LOCKD_OK, *reply is valid until the next
 * lockd_call() on c. No lockd_send() request may be unanswered. */
int lockd_call(struct lockd_client *c, const char *request, int timeout_ms,
               const struct lockd_reply **reply);
int lockd_callf(struct lockd_client *c, int timeout_ms, const struct lockd_reply **reply,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Wait at most timeout_ms (< 0: no limit) for input and handle it as
 * lockd_step() does: returns LOCKD_OK after one wait, or the error. */
int lockd_wait(struct lockd_client *c, int timeout_ms);

/* ---- non-blocking ---- */

/* Queue a request; its reply goes to the reply callback with tag. With
 * timeout_ms >= 0, a reply that has not come within timeout_ms fails the
 * connection (LOCKD_ETIMEDOUT): replies come in order, so a request
 * behind a waiting LOCK waits too. Nothing is written before
 * lockd_flush() or lockd_step(). */
int lockd_send(struct lockd_client *c, const char *request, int timeout_ms, void *tag);
int lockd_sendf(struct lockd_client *c, int timeout_ms, void *tag, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Write what is queued, as far as the socket takes it now. */
int lockd_flush(struct lockd_client *c);
/* Finish connecting, write, read what is there, call the callbacks for
 * every complete line, check the timeouts, and the hold deadlines (a
 * heartbeat due goes out, a hold whose deadline nears is reported LOST).
 * Never blocks. */
int lockd_step(struct lockd_client *c);
/* The socket (valid until lockd_close()), and the poll(2) events to wait
 * for on it: POLLIN, with POLLOUT while connecting or while output is
 * queued; 0 once the client failed. */
int lockd_fd(const struct lockd_client *c);
short lockd_want(const struct lockd_client *c);
/* Milliseconds until the next connect or reply deadline, heartbeat or
 * hold deadline (0: now), -1: none. Give it to poll() as its timeout,
 * then call lockd_step(). */
int lockd_timeout_ms(const struct lockd_client *c);
/* Requests sent and not answered yet (AUTH included; the HELDs of the
 * hold deadlines not). */
size_t lockd_pending(const struct lockd_client *c);
/* 1 once connected (and AUTH accepted, when a password was given). */
int lockd_ready(const struct lockd_client *c);

/* ---- typed requests ----
 *
 * Requests with a key, built from arguments: the key is checked first
 * (lockd_check_key()), so a key such as "k WAIT" or "k\r\nQUIT" is
 * refused with LOCKD_EKEY and never reaches lockd; a bad number gives
 * LOCKD_EARG. Either way nothing is queued and the client is unchanged.
 * The blocking forms wait like lockd_call() (reply, timeout_ms, and the
 * same rules); the lockd_send_ forms queue like lockd_send() (timeout_ms,
 * tag).
 *
 * hold: LOCKD_EXCLUSIVE (0) a plain lock, LOCKD_SHARED a shared hold
 *       (SHARED), n > 0 one of the key's n permits (PERMITS n);
 * wait_ms: < 0 wait without limit (no WAIT), else WAIT wait_ms (0: one
 *       attempt, answered TIMEOUT rather than BUSY);
 * ttl_ms: 0 a lease lockd renews while the session lives (no TTL), > 0
 *       TTL ttl_ms; for lockd_extend() the new lease (> 0);
 * permits: 0 plain STATUS, n > 0 STATUS key PERMITS n. */
int lockd_check_key(const char *key); /* LOCKD_OK or LOCKD_EKEY */
int lockd_lock(struct lockd_client *c, const char *key, int hold, int wait_ms, int ttl_ms,
               int timeout_ms, const struct lockd_reply **reply);
int lockd_trylock(struct lockd_client *c, const char *key, int hold, int ttl_ms, int timeout_ms,
                  const struct lockd_reply **reply);
int lockd_unlock(struct lockd_client *c, const char *key, int timeout_ms,
                 const struct lockd_reply **reply);
int lockd_extend(struct lockd_client *c, const char *key, int ttl_ms, int timeout_ms,
                 const struct lockd_reply **reply);
int lockd_key_status(struct lockd_client *c, const char *key, int permits, int timeout_ms,
                     const struct lockd_reply **reply);
int lockd_send_lock(struct lockd_client *c, const char *key, int hold, int wait_ms, int ttl_ms,
                    int timeout_ms, void *tag);
int lockd_send_trylock(struct lockd_client *c, const char *key, int hold, int ttl_ms,
                       int timeout_ms, void *tag);
int lockd_send_unlock(struct lockd_client *c, const char *key, int timeout_ms, void *tag);
int lockd_send_extend(struct lockd_client *c, const char *key, int ttl_ms, int timeout_ms,
                      void *tag);
int lockd_send_key_status(struct lockd_client *c, const char *key, int permits, int timeout_ms,
                          void *tag);

/* ---- leader election (protocol 1.3; interface 4) ----
 *
 * Typed like the requests above: name is checked as a key (LOCKD_EKEY),
 * value with lockd_check_value() (LOCKD_EARG), nothing is queued on
 * either. wait_ms as for lockd_lock(). Replies: CAMPAIGN "OK fence" or
 * TIMEOUT; PROCLAIM, RESIGN, OBSERVE and UNOBSERVE "OK"; LEADER
 * LOCKD_R_LEADER or LOCKD_R_NONE; any of them ERR (NOTLEADER, QUORUM,
 * ARG, ...). After OBSERVE, ELECTED and NOLEADER events go to the event
 * callback (LOCKD_E_ELECTED, LOCKD_E_NOLEADER). A value longer than
 * LOCKD_MAX_VALUE (for a lockd with a larger limits.max_value_len) can
 * still be sent with lockd_callf(). */
int lockd_check_value(const char *value); /* LOCKD_OK, or LOCKD_EARG: empty, longer than
                                             LOCKD_MAX_VALUE, a byte outside 0x21-0x7e */
int lockd_campaign(struct lockd_client *c, const char *name, const char *value, int wait_ms,
                   int timeout_ms, const struct lockd_reply **reply);
int lockd_proclaim(struct lockd_client *c, const char *name, const char *value, int timeout_ms,
                   const struct lockd_reply **reply);
int lockd_resign(struct lockd_client *c, const char *name, int timeout_ms,
                 const struct lockd_reply **reply);
int lockd_leader(struct lockd_client *c, const char *name, int timeout_ms,
                 const struct lockd_reply **reply);
int lockd_observe(struct lockd_client *c, const char *name, int timeout_ms,
                  const struct lockd_reply **reply);
int lockd_unobserve(struct lockd_client *c, const char *name, int timeout_ms,
                    const struct lockd_reply **reply);
int lockd_send_campaign(struct lockd_client *c, const char *name, const char *value, int wait_ms,
                        int timeout_ms, void *tag);
int lockd_send_proclaim(struct lockd_client *c, const char *name, const char *value, int timeout_ms,
                        void *tag);
int lockd_send_resign(struct lockd_client *c, const char *name, int timeout_ms, void *tag);
int lockd_send_leader(struct lockd_client *c, const char *name, int timeout_ms, void *tag);
int lockd_send_observe(struct lockd_client *c, const char *name, int timeout_ms, void *tag);
int lockd_send_unobserve(struct lockd_client *c, const char *name, int timeout_ms, void *tag);

/* ---- errors ---- */

/* LOCKD_OK, or the error that failed the connection. */
int lockd_status(const struct lockd_client *c);
/* What went wrong, in words ("connect 127.0.0.1:7390: Connection
 * refused", "no reply to LOCK within 2000 ms"); "" while all is well.
 * Valid until the client is closed. */
const char *lockd_error(const struct lockd_client *c);
/* The name of a status ("LOCKD_ETIMEDOUT") and a short description. */
const char *lockd_status_name(int status);
const char *lockd_strerror(int status);
/* 1 when liblockd was built with TLS (OpenSSL), else 0: then connecting
 * with lockd_opts.tls fails with LOCKD_ETLS. */
int lockd_tls_available(void);
/* "127.0.0.1:7390", "[::1]:7390" or "unix:PATH": the peer, for messages.
 * With resume it changes when the session is resumed on another lockd. */
const char *lockd_peer(const struct lockd_client *c);

/* ---- resumable sessions (lockd_opts.resume) ----
 *
 * lockd_connect() returns once SESSION is answered too. When the
 * connection breaks (closed, reset, an I/O error, a reply timeout), the
 * client does not fail: lockd_step() (and lockd_call(), lockd_wait())
 * reconnect, to the same lockd first, then to the other addresses in
 * order, each round after a backoff (100 ms doubling to 2 s), each attempt
 * bounded by connect_timeout_ms, all within the grace lockd gave the
 * session, and send AUTH and "RESUME id secret". Meanwhile lockd_fd() is
 * -1 (wait lockd_timeout_ms()) or a new socket: read it again after every
 * lockd_step(). Requests sent meanwhile are queued and go out after RESUME
 * is answered. Requests that were sent and not answered when the
 * connection broke are answered "ERR DISCONNECTED ..." (kind LOCKD_R_ERR,
 * code "DISCONNECTED") once the session is resumed: a LOCK that was
 * waiting waits no more (send it again), and a LOCK, TRYLOCK or UNLOCK so
 * answered may or may not have been done (HELD tells). lockd_close() sends
 * QUIT first, so that the session ends at once. */
/* The session's id ("" before SESSION is answered, or without resume). */
const char *lockd_session_id(const struct lockd_client *c);
/* How many times the session was resumed so far. */
unsigned lockd_resumes(const struct lockd_client *c);

/* ---- hold deadlines (lockd_opts.hold_deadlines; interface 5) ----
 *
 * On by default (lockd_connect(), lockd_connect_start()): the library
 * keeps, for each key it saw granted ("OK fence" to LOCK, TRYLOCK or
 * CAMPAIGN) and not released or lost, a local deadline on its monotonic
 * clock: the time a HELD that listed the hold was sent, plus the ttl_ms
 * lockd gave it there, less 1 % and 2 ms for clock drift. A HELD goes
 * out right behind every request that may grant, and as a heartbeat,
 * one per client for all its holds, a third of the shortest ttl_ms
 * after the last one was sent (the user's own HELD replies count too).
 * The guarantee: a hold whose deadline comes before lockd confirmed it
 * again is reported lost before that deadline, so before its lease can
 * have lapsed on the masters: the event callback gets "LOST key fence"
 * (kind LOCKD_E_LOST, by_deadline 1) as for lockd's own LOST, whether
 * lockd is frozen, dead, cut off, or being resumed; a LOST that lockd
 * sends for it later is not handed again. The deadline runs in
 * lockd_step() (lockd_call(), lockd_wait()): a program that holds locks
 * calls one of them as lockd_timeout_ms() says. A LOCK that waits holds
 * back the heartbeat (lockd answers in order): a hold whose deadline
 * comes meanwhile is reported lost. lockd may still hold a key reported
 * so: UNLOCK it (OK or ERR NOTHELD), or close the client; a later HELD
 * that lists it with time left makes the library track it again (no
 * event). When the client fails (no resume left), each hold not
 * reported yet gets LOST too (by_deadline 0). A line callback that
 * takes lines (lockd_set_line_callback()) could take the replies to
 * those HELDs: with one, set hold_deadlines -1. No function of its own:
 * the events and lockd_timeout_ms() carry it. */

#ifdef __cplusplus
}
#endif

#endif
