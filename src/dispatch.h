/* dispatch: what a session's request lines ask, and who answers them;
 * above session.c, which hands it every line. */
#ifndef LOCKD_DISPATCH_H
#define LOCKD_DISPATCH_H

struct config;

/* Answer every session's requests from now on, by *cfg (its limits and
 * password: the configuration sessions_set_cfg was given). */
void dispatch_init(const struct config *cfg);

#endif
