/* metrics: an optional HTTP endpoint serving /metrics in Prometheus text. */
#ifndef LOCKD_METRICS_H
#define LOCKD_METRICS_H

#include <stddef.h>

struct event_base;

/* listen is "HOST:PORT" or "" (off). Returns -1 with a message in err. */
int metrics_start(struct event_base *base, const char *listen, char *err, size_t errlen);
void metrics_stop(void);

#endif
