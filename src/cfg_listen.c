/* cfg_listen: the mapping form of a listen entry, {address: "HOST:PORT",
 * tls: {cert: FILE, key: FILE, ca: FILE}}, for a listener that speaks TLS.
 * Every mistake is named at its node (FILE:LINE:COLUMN), as in cfg.c; the
 * address itself is checked by cfg.c as a plain entry's is. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_listen.h"
#include "cfg_yaml.h"

void cfg_tls_free(struct cfg_tls *t)
{
	free(t->cert);
	free(t->key);
	free(t->ca);
	memset(t, 0, sizeof(*t));
}

/* The value of a scalar key of a listen entry, or NULL (failed). */
static char *entry_str(struct cfgy *y, const char *what, yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;

	if (ev->type != YAML_SCALAR_EVENT) {
		cfgy_fail(y, ev->start_mark, "listen: %s: expected a string, got %s", what,
		          cfgy_type_name(ev->type));
		return NULL;
	}
	if (cfgy_is_null(ev)) {
		cfgy_fail(y, ev->start_mark, "listen: %s: expected a string, got null", what);
		return NULL;
	}
	if (len == 0 || len > 4096 || memchr(v, '\0', len)) {
		cfgy_fail(y, ev->start_mark, "listen: %s: must be 1 to 4096 bytes, without NUL",
		          what);
		return NULL;
	}
	return strdup(v);
}

/* The tls mapping of a listen entry (its start consumed). */
static int listen_tls(struct cfgy *y, struct cfg_tls *t, yaml_mark_t start)
{
	static const char *const names[] = {"cert", "key", "ca"};
	char **slots[] = {&t->cert, &t->key, &t->ca};
	yaml_event_t ev;
	int more;

	while ((more = cfgy_next_in(y, &ev, YAML_MAPPING_END_EVENT)) > 0) {
		int i = -1;
		for (int j = 0; ev.type == YAML_SCALAR_EVENT && j < 3; j++)
			if (strcmp((const char *)ev.data.scalar.value, names[j]) == 0)
				i = j;
		if (i < 0 || *slots[i]) {
			if (ev.type != YAML_SCALAR_EVENT)
				cfgy_fail(y, ev.start_mark, "listen: tls: expected a key, got %s",
				          cfgy_type_name(ev.type));
			else
				cfgy_fail(y, ev.start_mark,
				          i < 0 ? "listen: tls: unknown key \"%s\" "
				                  "(cert, key, ca)"
				                : "listen: tls: duplicate key \"%s\"",
				          (const char *)ev.data.scalar.value);
			yaml_event_delete(&ev);
			return -1;
		}
		yaml_event_delete(&ev);
		if (cfgy_next(y, &ev))
			return -1;
		char what[16];
		snprintf(what, sizeof(what), "tls.%s", names[i]);
		*slots[i] = entry_str(y, what, &ev);
		yaml_event_delete(&ev);
		if (!*slots[i])
			return -1;
	}
	if (more < 0)
		return -1;
	if (!t->cert || !t->key)
		return cfgy_fail(y, start, "listen: tls: needs both cert and key");
	return 0;
}

char *cfg_listen_entry(struct cfgy *y, struct cfg_tls *t, yaml_mark_t *m)
{
	yaml_mark_t start = *m;
	yaml_event_t ev;
	char *address = NULL;
	int has_tls = 0;

	int more;
	while ((more = cfgy_next_in(y, &ev, YAML_MAPPING_END_EVENT)) > 0) {
		const char *name =
		    ev.type == YAML_SCALAR_EVENT ? (const char *)ev.data.scalar.value : NULL;
		int is_addr = name && strcmp(name, "address") == 0;
		int is_tls = name && strcmp(name, "tls") == 0;
		if (!is_addr && !is_tls) {
			if (name)
				cfgy_fail(y, ev.start_mark,
				          "listen: unknown key \"%s\" in an entry (address, tls)",
				          name);
			else
				cfgy_fail(y, ev.start_mark, "listen: expected a key, got %s",
				          cfgy_type_name(ev.type));
			yaml_event_delete(&ev);
			goto bad;
		}
		if ((is_addr && address) || (is_tls && has_tls)) {
			cfgy_fail(y, ev.start_mark, "listen: duplicate key \"%s\" in an entry",
			          name);
			yaml_event_delete(&ev);
			goto bad;
		}
		yaml_event_delete(&ev);
		if (cfgy_next(y, &ev))
			goto bad;
		if (is_addr) {
			*m = ev.start_mark;
			address = entry_str(y, "address", &ev);
			yaml_event_delete(&ev);
			if (!address)
				goto bad;
		} else if (ev.type != YAML_MAPPING_START_EVENT) {
			cfgy_fail(y, ev.start_mark, "listen: tls: expected a mapping, got %s",
			          cfgy_type_name(ev.type));
			yaml_event_delete(&ev);
			goto bad;
		} else {
			yaml_mark_t tm = ev.start_mark;
			yaml_event_delete(&ev);
			has_tls = 1;
			if (listen_tls(y, t, tm))
				goto bad;
		}
	}
	if (more < 0)
		goto bad;
	if (!address) {
		cfgy_fail(y, start, "listen: an entry needs an address");
		goto bad;
	}
	return address;
bad:
	free(address);
	return NULL;
}
