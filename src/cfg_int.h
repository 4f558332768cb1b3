/* cfg_int: what the files of the configuration loader share (cfg.c: the
 * table of keys and the loader; cfg_sentinel.c: the mapping form of a
 * redis.masters entry). Private to them: the rest of lockd sees cfg.h. */
#ifndef LOCKD_CFG_INT_H
#define LOCKD_CFG_INT_H

#include <stddef.h>
#include <yaml.h>

#include "cfg.h"

#define CFG_NKEYS_MAX 64 /* the table of keys has at most this many */

struct loader {
	yaml_parser_t parser;
	const char *name;
	struct config *c;
	char *err;
	size_t errlen;
	int failed;
	const char *text; /* the whole input, for reader error positions */
	size_t len;
	unsigned char seen[CFG_NKEYS_MAX];
	yaml_mark_t marks[CFG_NKEYS_MAX]; /* where each key was set, for cross-key checks */
	const char *dir;                  /* of the file, for relative paths; NULL: read no files */
};

/* Record "FILE:LINE:COLUMN: message" (the first failure only); returns -1. */
int cfg_fail(struct loader *l, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The next event into *ev; -1 (and failed) on a syntax error. */
int cfg_next(struct loader *l, yaml_event_t *ev);
/* "a mapping", "a list", ... for messages. */
const char *cfg_type_name(yaml_event_type_t t);

/* cfg_sentinel.c */

/* A redis.masters entry written as a mapping, {sentinel: ["HOST:PORT",
 * ...], name: NAME} (its start consumed, its mark in *m). Fills s; returns
 * the entry's display name "sentinel:NAME" (malloc'd), or NULL (failed). */
char *cfg_master_entry(struct loader *l, struct cfg_sentinel *s, yaml_mark_t *m);
/* Free what s holds and zero it. */
void cfg_sentinel_free(struct cfg_sentinel *s);

#endif
