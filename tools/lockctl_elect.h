/* lockctl_elect: `lockctl elect`, `lockctl leader`, `lockctl observe`
 * (lockctl_elect.c; leader election, protocol 1.3). */
#ifndef LOCKD_LOCKCTL_ELECT_H
#define LOCKD_LOCKCTL_ELECT_H

#include "lockctl_util.h"

/* Each takes its arguments from argv[0] (the subcommand) on and returns
 * lockctl's exit status. */
int lc_elect(const struct lc_conn *conn, int argc, char **argv);
int lc_leader(const struct lc_conn *conn, int argc, char **argv);
int lc_observe(const struct lc_conn *conn, int argc, char **argv);

#endif
