/* resume: sessions that outlive a connection (protocol 1.2).
 *
 * Every connection has a session (struct rsess) that owns its locktab
 * client: its holds and its wait. A version-1 session ends with its
 * connection. SESSION makes it resumable: its record (owner, the secret's
 * hash, grace, its holds) is written on the masters, it survives its
 * connection for its grace (detached, holds renewed), and RESUME, on this
 * lockd or another one on the same masters, attaches it to a new
 * connection. Below session.c; answers its connections through the
 * struct lt_ops given to rs_init (reply, line, close). */
#ifndef LOCKD_RESUME_H
#define LOCKD_RESUME_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "locktab.h"

struct config;
struct event_base;
struct rsess;

int rs_init(struct event_base *base, const struct config *cfg, const struct lt_ops *ops);
void rs_set_cfg(const struct config *cfg);
void rs_shutdown(void);

/* A new connection's session (a version-1 one); ctx is the connection,
 * handed to the lt_ops. NULL: out of memory. */
struct rsess *rs_new(void *ctx, uint64_t id, const char *peer);
/* The locktab client of a connection's session: its holds and wait. */
struct lt_client *rs_client(struct rsess *r);
/* The connection ended: a resumable session is detached (quit: 0) and
 * lives on for its grace; any other ends, its locks released. */
void rs_conn_end(struct rsess *r, int quit);
/* SESSION [GRACE ms]: answered through lt_ops.reply. */
void rs_session(struct rsess *r, int has_grace, uint32_t grace_ms);
/* RESUME id secret: answered through lt_ops.reply; on OK, r is that
 * session (its holds, fences, counts and LOST lines moved into r). */
void rs_resume(struct rsess *r, const char *id, size_t idlen, const char *secret, size_t seclen);
/* A line locktab sends a detached session's client (LOST): kept, and sent
 * after the OK of its RESUME. */
void rs_keep_line(struct lt_client *c, const char *fmt, va_list ap);
/* lt_ops.verify: check the record of c's session now (has it moved?). */
void rs_verify(struct lt_client *c);
/* SIGTERM: resumable sessions stay resumable on the masters for the
 * longer of their grace and the validity left on their holds. */
void rs_shutdown_all(void);
/* Session calls still in flight (shutdown waits for them). */
int rs_busy(void);

#endif
