/* cfg_sentinel: the mapping form of a redis.masters entry, a primary that
 * Sentinels manage: {sentinel: ["HOST:PORT", ...], name: NAME}. Every
 * mistake is named at its node (FILE:LINE:COLUMN), as in cfg.c. A Redis
 * Cluster entry ({cluster: ["HOST:PORT", ...]}) is read and checked the
 * same way (doc/cluster.md). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cfg_sentinel.h"
#include "cfg_yaml.h"
#include "util.h"

#define WHAT "redis.masters"

void cfg_sentinel_free(struct cfg_sentinel *s)
{
	for (int i = 0; i < s->nseeds; i++)
		free(s->seeds[i]);
	free(s->name);
	memset(s, 0, sizeof(*s));
}

/* The list of seeds (its start consumed at lm): the Sentinels, or a
 * cluster's nodes (key says which). */
static int seeds(struct cfgy *y, struct cfg_sentinel *s, yaml_mark_t lm, const char *key)
{
	yaml_event_t ev;
	int more;
	while ((more = cfgy_next_in(y, &ev, YAML_SEQUENCE_END_EVENT)) > 0) {
		int rc = 0;
		const char *v = (const char *)ev.data.scalar.value;
		struct addr a;
		const char *why;
		if (ev.type != YAML_SCALAR_EVENT)
			rc = cfgy_fail(y, ev.start_mark,
			               WHAT ": %s: list items must be strings, got %s", key,
			               cfgy_type_name(ev.type));
		else if (s->nseeds >= CONFIG_MAX_SEEDS)
			rc = cfgy_fail(y, ev.start_mark, WHAT ": %s: at most %d entries", key,
			               CONFIG_MAX_SEEDS);
		else if (cfgy_is_null(&ev) || memchr(v, '\0', ev.data.scalar.length))
			rc =
			    cfgy_fail(y, ev.start_mark, WHAT ": %s: expected \"HOST:PORT\", got %s",
			              key, cfgy_is_null(&ev) ? "null" : "a NUL byte");
		else if ((why = addr_parse(v, 0, 0, &a)))
			rc = cfgy_fail(y, ev.start_mark, WHAT ": %s: \"%s\": %s", key, v, why);
		else if (!(s->seeds[s->nseeds] = strdup(v)))
			rc = cfgy_fail(y, ev.start_mark, "out of memory");
		else
			s->nseeds++;
		yaml_event_delete(&ev);
		if (rc)
			return -1;
	}
	if (more < 0)
		return -1;
	if (s->nseeds == 0)
		return cfgy_fail(y, lm, WHAT ": %s: needs at least one \"HOST:PORT\"", key);
	return 0;
}

/* The monitored name: one token of SENTINEL get-master-addr-by-name. */
static int name_of(struct cfgy *y, struct cfg_sentinel *s, yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	if (ev->type != YAML_SCALAR_EVENT)
		return cfgy_fail(y, ev->start_mark, WHAT ": name: expected a string, got %s",
		                 cfgy_type_name(ev->type));
	if (cfgy_is_null(ev))
		return cfgy_fail(y, ev->start_mark, WHAT ": name: expected a string, got null");
	if (n > 256)
		return cfgy_fail(y, ev->start_mark, WHAT ": name: length must be 1 to 256 bytes");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x21 || (unsigned char)v[i] > 0x7e)
			return cfgy_fail(
			    y, ev->start_mark,
			    WHAT ": name: \"%s\": must be printable ASCII without blanks", v);
	if (!(s->name = strdup(v)))
		return cfgy_fail(y, ev->start_mark, "out of memory");
	return 0;
}

char *cfg_master_entry(struct cfgy *y, struct cfg_sentinel *s, const yaml_mark_t *m)
{
	yaml_mark_t start = *m;
	yaml_event_t ev;
	int has_seeds = 0, cluster = 0;

	cfg_sentinel_free(s);
	int more;
	while ((more = cfgy_next_in(y, &ev, YAML_MAPPING_END_EVENT)) > 0) {
		const char *key =
		    ev.type == YAML_SCALAR_EVENT ? (const char *)ev.data.scalar.value : NULL;
		int is_cluster = key && strcmp(key, "cluster") == 0;
		int is_seeds = key && (strcmp(key, "sentinel") == 0 || is_cluster);
		int is_name = key && strcmp(key, "name") == 0;
		int rc = 0;
		if (!key)
			rc = cfgy_fail(y, ev.start_mark, WHAT ": expected a key, got %s",
			               cfgy_type_name(ev.type));
		else if (!is_seeds && !is_name)
			rc = cfgy_fail(
			    y, ev.start_mark,
			    WHAT ": unknown key \"%s\" in an entry (sentinel, name; cluster)", key);
		else if ((is_seeds && has_seeds) || (is_name && s->name))
			rc =
			    cfgy_fail(y, ev.start_mark,
			              has_seeds && is_seeds && cluster != is_cluster
			                  ? WHAT ": \"%s\": an entry is a cluster or a sentinel one"
			                  : WHAT ": duplicate key \"%s\" in an entry",
			              key);
		else if ((is_name && cluster) || (is_cluster && s->name))
			rc = cfgy_fail(y, ev.start_mark,
			               WHAT
			               ": a cluster entry has no name (its nodes say their slots)");
		yaml_event_delete(&ev);
		if (rc || cfgy_next(y, &ev))
			goto bad;
		if (is_name) {
			rc = name_of(y, s, &ev);
		} else if (ev.type != YAML_SEQUENCE_START_EVENT) {
			rc =
			    cfgy_fail(y, ev.start_mark, WHAT ": %s: expected a list, got %s",
			              is_cluster ? "cluster" : "sentinel", cfgy_type_name(ev.type));
		} else {
			has_seeds = 1;
			cluster = is_cluster;
			rc = seeds(y, s, ev.start_mark, is_cluster ? "cluster" : "sentinel");
		}
		yaml_event_delete(&ev);
		if (rc)
			goto bad;
	}
	if (more < 0)
		goto bad;
	if (!has_seeds) {
		cfgy_fail(y, start, WHAT ": an entry needs sentinel, a list of \"HOST:PORT\"");
		goto bad;
	}
	if (cluster) {
		char *v = malloc(strlen(s->seeds[0]) + 9);
		if (!v) {
			cfgy_fail(y, start, "out of memory");
			goto bad;
		}
		strcpy(v, "cluster:");
		strcat(v, s->seeds[0]);
		s->cluster = 1;
		return v;
	}
	if (!s->name) {
		cfgy_fail(y, start, WHAT ": a sentinel entry needs a name");
		goto bad;
	}
	char *v = malloc(strlen(s->name) + 10);
	if (!v) {
		cfgy_fail(y, start, "out of memory");
		goto bad;
	}
	strcpy(v, "sentinel:");
	strcat(v, s->name);
	return v;
bad:
	cfg_sentinel_free(s);
	return NULL;
}
