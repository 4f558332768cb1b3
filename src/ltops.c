/* ltops: see ltops.h. */
#include "config.h"

#include <stdarg.h>

#include "ltops.h"

void lt_ops_reply(const struct lt_ops *o, struct lt_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	o->reply(c, fmt, ap);
	va_end(ap);
}

void lt_ops_line(const struct lt_ops *o, struct lt_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	o->line(c, fmt, ap);
	va_end(ap);
}
