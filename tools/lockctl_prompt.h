/* lockctl_prompt: lockctl's interactive prompt (lockctl_prompt.c). */
#ifndef LOCKD_LOCKCTL_PROMPT_H
#define LOCKD_LOCKCTL_PROMPT_H

#include "lockctl_util.h"

/* One session at a prompt on the terminal (stdin) until EOF, QUIT or a
 * signal: returns the exit status. */
int lc_prompt(const struct lc_conn *conn);

#endif
