/* ltops: the answer callbacks of struct lt_ops (locktab.h) with a format,
 * for the modules above locktab that answer their clients through the
 * lt_ops they were given (elect, who, renew, lockall). */
#ifndef LOCKD_LTOPS_H
#define LOCKD_LTOPS_H

#include "locktab.h"

/* o->reply: the one reply of c's request ("\r\n" added). */
void lt_ops_reply(const struct lt_ops *o, struct lt_client *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* o->line: a line before it (an event, a line of a multi-line reply). */
void lt_ops_line(const struct lt_ops *o, struct lt_client *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
