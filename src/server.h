/* server: the listeners (TCP and Unix sockets) and accepting clients. */
#ifndef LOCKD_SERVER_H
#define LOCKD_SERVER_H

#include "cfg.h"

struct event_base;

/* Open every listener of cfg; on failure returns -1 with a message in err. */
int server_listen(struct event_base *base, const struct config *cfg, char *err, size_t errlen);
void server_set_cfg(const struct config *cfg);
/* Stop accepting (shutdown); unix socket files are removed. */
void server_close(void);

#endif
