/* server: the listeners (TCP, TLS and Unix sockets), accepting clients,
 * and what is counted per client address. */
#ifndef LOCKD_SERVER_H
#define LOCKD_SERVER_H

#include <stddef.h>

#include "cfg.h"

struct event_base;
struct server_peer; /* the sessions of one client IP address */

/* Open every listener of cfg; on failure returns -1 with a message in err. */
int server_listen(struct event_base *base, const struct config *cfg, char *err, size_t errlen);
void server_set_cfg(const struct config *cfg);
/* Load the TLS files of every listen entry of cfg, as server_listen would
 * (for lockd -t); -1 with "listen SPEC: tls.FILE ...: reason" in err. */
int server_check_tls(const struct config *cfg, char *err, size_t errlen);
/* Stop accepting (shutdown); unix socket files are removed. */
void server_close(void);
/* A session from this address ended (p may be NULL: a Unix client). */
void server_peer_put(struct server_peer *p);

#endif
