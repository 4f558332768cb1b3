/* lockctl_run: `lockctl run`, CMD under a lock (lockctl_run.c). */
#ifndef LOCKD_LOCKCTL_RUN_H
#define LOCKD_LOCKCTL_RUN_H

#include "lockctl_util.h"

/* lockctl run ARGS: returns the exit status. */
int lc_run(const struct lc_conn *conn, int argc, char **argv);

#endif
