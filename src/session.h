/* session: one client connection: its input framing, the request being
 * answered, the locks it holds and the wait it is in. */
#ifndef LOCKD_SESSION_H
#define LOCKD_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "locktab.h"
#include "ilist.h"

struct bufferevent;
struct event_base;
struct ssl_ctx_st;

enum sess_state {
	SS_READING, /* answering requests as their lines arrive */
	SS_BLOCKED, /* the current request waits (key queue, quorum call);
	               later lines stay in the input buffer, in order */
	SS_CLOSING, /* leaving: locks released, output flushing, then freed */
};

struct session {
	uint64_t id;
	/* I/O. A plain socket is read and written by lockd itself: replies
	 * collect in out and are written once at the end of the loop turn
	 * (sessions_flush), and the write event is armed only while the
	 * kernel would block. Over TLS a bufferevent does it. */
	struct evbuffer *in, *out; /* input, output (over TLS: the bufferevent's) */
	struct bufferevent *bev;   /* TLS only */
	int fd;                    /* plain: the socket */
	struct event *rev, *wev;   /* plain: readable, writable */
	int reading;               /* plain: rev is added */
	int writing;               /* plain: wev is added (a write would block) */
	int out_full;              /* answering paused: output past out_high() (session.c) */
	int out_over;              /* output passed limits.max_output_bytes: cut from the loop */
	struct ilink flushq;       /* on the list of sessions to write out */
	enum sess_state state;
	int authed;            /* AUTH passed, or no password configured */
	struct rsess *rs;      /* its session (resume.h): its locks, its wait, its calls;
	                          NULL once closing (a resumable one lives on) */
	struct lt_client *lt;  /* locktab's part of it (rs_client), then &gone;
	                          lt->eof: the peer shut its sending side (finish,
	                          then close) */
	struct lt_client gone; /* an empty client, once closing */
	int quit;              /* QUIT: the session ends with the connection */
	char *key;             /* copy of the current request's key */
	size_t klen, keycap;
	struct event *resume; /* go on reading after a reply or a yield */
	struct ilink all;     /* on the list of all sessions */
	char peer[64];
	void (*on_free)(void *arg); /* its listener's accounting (the sessions of its
	                               address), told when it is freed; or NULL */
	void *on_free_arg;
	int tls;     /* over TLS */
	int replied; /* a line was written to it: no more first-line checks */
	int auth_failures;
	/* Deadlines (limits.line_timeout_ms and idle_timeout_ms), one timer. */
	struct event *timer;
	int64_t timer_us;  /* when timer fires; 0: not pending */
	int64_t line_us;   /* when its unfinished line began (at first, the
	                      connection); 0: every line read is finished */
	int64_t active_us; /* its last request or reply: idle since */
	int64_t paused_us; /* since when lockd does not read it; 0: it reads */
	size_t inlen;      /* input bytes already looked at for a line end */
};

/* The callbacks locktab answers sessions with (for locktab_init). */
extern const struct lt_ops session_lt_ops;

/* Start a session on an accepted socket, over TLS with tls unless NULL.
 * It takes fd, and calls on_free(on_free_arg) (if set) when it is freed;
 * on failure (NULL) fd stays the caller's and on_free is not called. */
struct session *session_new(struct event_base *base, int fd, const char *peer,
                            struct ssl_ctx_st *tls, void (*on_free)(void *arg), void *on_free_arg);
/* Answer the current request (one line; "\r\n" is added) and go on. */
void session_reply(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Write one line ("\r\n" is added) that does not end the request: an
 * event such as "LOST key fence", or a line of a multi-line reply. */
void session_line(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* End the session: cancel its wait, release its locks (a resumable one is
 * detached, its locks kept for its grace), then close once the output has
 * been written (or CLOSE_FLUSH_SECS passed). */
void session_close(struct session *s);
/* Let the session look at its state again from the loop. */
void session_poke(struct session *s);
/* Close every session (at exit). */
void sessions_close_all(void);
void sessions_set_cfg(const struct config *cfg);
/* What answers each request line (dispatch.c, above this module): it
 * leaves s SS_READING when it answered at once, SS_BLOCKED when the
 * answer comes later (session_reply). */
void sessions_set_handler(void (*handle)(struct session *s, const char *line, size_t len));
/* The timeouts may have changed (reload): look at every deadline again. */
void sessions_rearm(void);

#endif
