/* session: one client connection: its input framing, the request being
 * answered, the locks it holds and the wait it is in. */
#ifndef LOCKD_SESSION_H
#define LOCKD_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "locktab.h"
#include "waitq.h"

struct bufferevent;
struct event_base;
struct rl_call;

enum sess_state {
	SS_READING,  /* answering requests as their lines arrive */
	SS_BLOCKED,  /* the current request waits (key queue, quorum call);
			later lines stay in the input buffer, in order */
	SS_CLOSING,  /* leaving: locks released, output flushing, then freed */
};

struct session {
	uint64_t id;
	struct bufferevent *bev;
	enum sess_state state;
	int eof;    /* the peer shut its sending side: finish, then close */
	int authed; /* AUTH passed, or no password configured */
	struct waitq locks; /* lkey hold links of the keys this session holds */
	uint32_t nlocks;
	struct waiter w;       /* its place in a key's queue, when in one */
	struct rl_call *call;  /* the quorum call that answers the current request */
	struct lkey *verdict_lk; /* a key whose call answers the current request (a
				    handoff's release, an EXTEND) */
	int64_t req_us;        /* when the current request arrived */
	char *key;             /* copy of the current request's key */
	size_t klen, keycap;
	uint32_t arg_ms;
	struct event *resume;  /* go on reading after a reply or a yield */
	struct wq_link all;    /* on the list of all sessions */
	char peer[64];
};

/* Start a session on an accepted socket. */
struct session *session_new(struct event_base *base, int fd, const char *peer);
/* Answer the current request (one line; "\r\n" is added) and go on. */
void session_reply(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Write one line ("\r\n" is added) that does not end the request: an
 * event such as "LOST key fence", or a line of a multi-line reply. */
void session_line(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Let the session look at its state again from the loop. */
void session_poke(struct session *s);
/* Close every session (at exit). */
void sessions_close_all(void);
void sessions_set_cfg(const struct config *cfg);

#endif
