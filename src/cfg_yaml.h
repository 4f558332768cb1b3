/* cfg_yaml: reading a YAML text event by event, below the configuration
 * loader (cfg.c) and the mapping forms of its list entries (cfg_listen.c,
 * cfg_sentinel.c). It owns the libyaml parser and the first failure,
 * worded "FILE:LINE:COLUMN: message" (1-based, as editors count); it
 * knows no key of the configuration. No I/O: the text is in memory. */
#ifndef LOCKD_CFG_YAML_H
#define LOCKD_CFG_YAML_H

#include <stddef.h>
#include <yaml.h>

struct cfgy {
	yaml_parser_t parser;
	const char *name; /* the file, as messages name it */
	char *err;        /* where the first failure is written */
	size_t errlen;
	int failed;       /* a failure was recorded: later ones are not */
	const char *text; /* the whole input, for reader error positions */
	size_t len;
};

/* Start reading text (len bytes, name for messages); failures go to err. */
void cfgy_open(struct cfgy *y, const char *name, const char *text, size_t len, char *err,
               size_t errlen);
/* Free the parser. */
void cfgy_close(struct cfgy *y);
/* Record "FILE:LINE:COLUMN: message" (the first failure only); returns -1. */
int cfgy_fail(struct cfgy *y, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The next event into *ev; -1 (and failed) on a syntax error. */
int cfgy_next(struct cfgy *y, yaml_event_t *ev);
/* The next event of a mapping or a list whose start was consumed, into
 * *ev: 1, or 0 at its end (the event of type end, deleted), or -1 (failed). */
int cfgy_next_in(struct cfgy *y, yaml_event_t *ev, yaml_event_type_t end);
/* "a mapping", "a list", ... for messages. */
const char *cfgy_type_name(yaml_event_type_t t);
/* A plain null scalar ("", "~" or "null" unquoted): what YAML reads as
 * no value, never as a string. */
int cfgy_is_null(const yaml_event_t *ev);

#endif
