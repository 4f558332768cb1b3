/* cfg_sentinel: the mapping form of a redis.masters entry, a primary that
 * Sentinels manage, and the type it fills (struct config holds one per
 * entry). Below cfg.c, on cfg_yaml. */
#ifndef LOCKD_CFG_SENTINEL_H
#define LOCKD_CFG_SENTINEL_H

#define CONFIG_MAX_SEEDS 8 /* Sentinels of one redis.masters entry */

/* A redis.masters entry that is a Sentinel-managed primary; nseeds 0: the
 * entry is a standalone master (its "HOST:PORT" in masters[i]). */
struct cfg_sentinel {
	char *seeds[CONFIG_MAX_SEEDS]; /* "HOST:PORT" of its Sentinels, asked in order, or
	                                  of a Redis Cluster's nodes (cluster) */
	int nseeds;
	char *name;  /* the primary's name the Sentinels monitor (NULL for a cluster) */
	int cluster; /* the entry is a Redis Cluster ({cluster: [...]}), its seeds the
	                nodes its map is first asked of */
};

struct cfgy;
struct yaml_mark_s; /* yaml_mark_t: the users of cfg.h need no yaml.h */

/* A redis.masters entry written as a mapping, {sentinel: ["HOST:PORT",
 * ...], name: NAME} or {cluster: ["HOST:PORT", ...]} (its start consumed,
 * its mark in *m). Fills s; returns the entry's display name
 * "sentinel:NAME" or "cluster:HOST:PORT" (its first seed), malloc'd, or
 * NULL (failed). */
char *cfg_master_entry(struct cfgy *y, struct cfg_sentinel *s, const struct yaml_mark_s *m);
/* Free what s holds and zero it. */
void cfg_sentinel_free(struct cfg_sentinel *s);

#endif
