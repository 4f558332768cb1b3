/* catchup: bring a master that lost its data up to date with the fence
 * counters of the others before it counts again.
 *
 * A fence is stored on a majority before it is issued, so any N -
 * majority + 1 masters that kept their data hold every issued fence
 * between them. From each source the caller chose (see membership.c): SCAN
 * the fence counters, MGET them, and raise the target's counters to at
 * least those values (SCR_RAISE_MANY), one batch at a time. Only then
 * may the target count again.
 *
 * A source or the target that reconnects meanwhile (it may have restarted
 * and lost what we were reading) fails the catch-up: nothing it says
 * after that is fed to the target. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catchup.h"
#include "cfg.h"
#include "cluster.h"
#include "log.h"
#include "master.h"

struct catchup {
	struct master *target;
	int src[CONFIG_MAX_MASTERS];
	uint64_t gen[CONFIG_MAX_MASTERS]; /* each master's connection count at the start */
	int nsrc, isrc;
	int clock_floor; /* raise to at least the target's clock too */
	char idle[24];   /* fence idle ms */
	char cursor[32];
	char pattern[300];  /* "PREFIX* fence", glob-escaped */
	char cpattern[310]; /* a cluster source's: "{*}PREFIX* fence" (ckey.h's names) */
	uint64_t moves[CONFIG_MAX_MASTERS]; /* each cluster entry's slot moves at the start */
	/* a cluster source: one slot of each of its primaries, read one after
	 * the other (a SCAN is per node) */
	unsigned nodes[CSL_MAX_NODES];
	int nnodes, inode;
	/* and what each of its primaries says it serves (its own line of
	 * CLUSTER NODES), read before the walk and after it: a slot migrating
	 * then, or served elsewhere after, and a key may have been read on
	 * neither node. checking: 1 before the walk, 2 after it, 0 walking. */
	int checking, icheck;
	char *shape, *shape_before; /* the lines' id, epoch and slot fields, one primary after
	                               another */
	size_t shape_len;
	unsigned char covered[CSL_SLOTS / 8]; /* the slots the lines of a check serve */
	catchup_done_fn *done;
	long long raised;
	const char *scan_argv[6];
	size_t scan_len[6];
	/* the batch in flight; every array lives until its call answered */
	int nkeys;
	char **keys;       /* copies of the counter names from SCAN */
	char **vals;       /* copies of their values from MGET */
	const char **argv; /* MGET, then the raise script */
	size_t *argvlen;
	unsigned *slots;  /* a cluster target: each raised counter's lock name's slot */
	unsigned *kslots; /* a cluster source: each key's slot, for its MGET */
	size_t plen;      /* the prefix's length: a counter is "PREFIX<key> fence" */
	char nbuf[16];
};

static int scan_step(struct catchup *cu);

/* Every master involved still on the connection it had at the start, and
 * no slot of a cluster entry involved moved to another primary as far as
 * its router learned (a key moved between two of its SCANs may be read on
 * neither). */
static int same_run(const struct catchup *cu)
{
	for (int i = 0; i < masters_count(); i++)
		if (master_get(i)->reconnects != cu->gen[i])
			return 0;
	for (int k = 0; k <= cu->nsrc; k++) {
		struct master *m = k < cu->nsrc ? master_get(cu->src[k]) : cu->target;
		if (master_cluster_moves(m) != cu->moves[m->idx])
			return 0;
	}
	return 1;
}

static struct master *source(const struct catchup *cu)
{
	return master_get(cu->src[cu->isrc]);
}

static int check_step(struct catchup *cu);

/* The source now read starts: a cluster entry's primaries, as its map
 * names them now (same_run fails the walk if that changes), and what
 * they say they serve. 0, or -1 when its first call cannot be made. */
static int source_start(struct catchup *cu)
{
	cu->inode = 0;
	cu->nnodes = master_cluster_nodes(source(cu), cu->nodes, CSL_MAX_NODES);
	free(cu->shape);
	free(cu->shape_before);
	cu->shape = cu->shape_before = NULL;
	cu->shape_len = 0;
	memset(cu->covered, 0, sizeof(cu->covered));
	if (!source(cu)->cl)
		return scan_step(cu);
	cu->checking = 1;
	cu->icheck = 0;
	return check_step(cu);
}

static void batch_free(struct catchup *cu)
{
	for (int i = 0; i < cu->nkeys; i++) {
		free(cu->keys ? cu->keys[i] : NULL);
		free(cu->vals ? cu->vals[i] : NULL);
	}
	free(cu->keys);
	free(cu->vals);
	free(cu->argv);
	free(cu->argvlen);
	free(cu->slots);
	free(cu->kslots);
	cu->keys = cu->vals = NULL;
	cu->argv = NULL;
	cu->argvlen = NULL;
	cu->slots = cu->kslots = NULL;
	cu->nkeys = 0;
}

static void finish(struct catchup *cu, int ok)
{
	batch_free(cu);
	free(cu->shape);
	free(cu->shape_before);
	ok = ok && same_run(cu);
	if (ok)
		log_info("master %s: fence counters caught up from %d master(s), %lld raised",
		         cu->target->name, cu->nsrc, cu->raised);
	else
		log_warn("master %s: catching up fence counters failed; trying again",
		         cu->target->name);
	cu->done(cu->target, ok);
	free(cu);
}

/* The source is read (and, a cluster entry, checked after): the next. */
static void source_done(struct catchup *cu)
{
	if (++cu->isrc == cu->nsrc) {
		finish(cu, 1);
		return;
	}
	if (source_start(cu) != 0)
		finish(cu, 0);
}

static void next_batch(struct catchup *cu)
{
	batch_free(cu);
	if (strcmp(cu->cursor, "0") == 0 && ++cu->inode >= cu->nnodes) { /* the source is read */
		if (!source(cu)->cl) {
			source_done(cu);
			return;
		}
		cu->checking = 2; /* what its primaries serve now */
		cu->icheck = 0;
		if (check_step(cu) != 0)
			finish(cu, 0);
		return;
	}
	if (scan_step(cu) != 0)
		finish(cu, 0);
}

/* Append s (n bytes) and a separator to the shape: 0 or -1. */
static int shape_put(struct catchup *cu, const char *s, size_t n, char sep)
{
	char *b = realloc(cu->shape, cu->shape_len + n + 2);
	if (!b)
		return -1;
	cu->shape = b;
	memcpy(b + cu->shape_len, s, n);
	cu->shape_len += n;
	b[cu->shape_len++] = sep;
	b[cu->shape_len] = '\0';
	return 0;
}

/* One field of a primary's own line: the slots it serves ("A-B" or "A")
 * marked in the phase's bitmap; -1 for a slot migrating or importing
 * ("[A->-ID]", "[A-<-ID]") or a field that is not a slot. */
static int shape_slots(struct catchup *cu, const char *f)
{
	char *end;
	if (f[0] == '[')
		return -1;
	unsigned long a = strtoul(f, &end, 10), b = a;
	if (end == f || (*end && (*end != '-' || (b = strtoul(end + 1, &end, 10), *end))) ||
	    a > b || b >= CSL_SLOTS)
		return -1;
	for (unsigned long k = a; k <= b; k++)
		cu->covered[k / 8] |= (unsigned char)(1u << (k % 8));
	return 0;
}

/* A primary's own line of CLUSTER NODES ("ID ADDR FLAGS MASTER PING PONG
 * EPOCH LINK SLOT..."): its id, config epoch (a node that takes a slot
 * takes a new one: a slot that moved away and back shows) and slots
 * appended to the shape, its slots marked; -1 when its line is not there,
 * it is not a primary, or a slot of it is migrating or importing. */
static int shape_add(struct catchup *cu, const char *nodes)
{
	for (const char *l = nodes; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		char *line = strndup(l, n), *save = NULL;
		if (!line)
			return -1;
		char *f[8];
		int k = 0;
		while (k < 8 && (f[k] = strtok_r(k ? NULL : line, " \r", &save)))
			k++; /* the fields before the slots, and no more */
		int rc = 1;  /* not this line */
		if (k == 8 && strstr(f[2], "myself")) {
			rc = strstr(f[2], "master") &&
			             shape_put(cu, f[0], strlen(f[0]), ' ') == 0 &&
			             shape_put(cu, f[6], strlen(f[6]), ' ') == 0
			         ? 0
			         : -1;
			for (char *t; rc == 0 && (t = strtok_r(NULL, " \r", &save));)
				rc =
				    shape_slots(cu, t) == 0 && shape_put(cu, t, strlen(t), ' ') == 0
				        ? 0
				        : -1;
			if (rc == 0)
				rc = shape_put(cu, ";", 1, ' ');
		}
		free(line);
		if (rc <= 0)
			return rc;
		l = e ? e + 1 : NULL;
	}
	return -1;
}

/* Every slot marked in the phase's bitmap: the primaries read serve them
 * all (a primary the router's map did not name yet would leave some). */
static int shape_covers_all(const struct catchup *cu)
{
	for (size_t i = 0; i < sizeof(cu->covered); i++)
		if (cu->covered[i] != 0xff)
			return 0;
	return 1;
}

static void check_cb(struct master *m, redisReply *r, void *arg)
{
	struct catchup *cu = arg;
	if (!r || r->type != REDIS_REPLY_STRING || !same_run(cu) || shape_add(cu, r->str) != 0) {
		finish(cu, 0);
		return;
	}
	if (++cu->icheck < cu->nnodes) {
		if (check_step(cu) != 0)
			finish(cu, 0);
		return;
	}
	if (!shape_covers_all(cu)) {
		log_info("master %s: its primaries as read do not serve every slot (a map not "
		         "refreshed yet?): its fence counters are read again",
		         m->name);
		master_cluster_refresh(m);
		finish(cu, 0);
		return;
	}
	memset(cu->covered, 0, sizeof(cu->covered)); /* for the check after the walk */
	if (cu->checking == 1) {                     /* before the walk: keep it, walk */
		cu->shape_before = cu->shape;
		cu->shape = NULL;
		cu->shape_len = 0;
		cu->checking = 0;
		if (scan_step(cu) != 0)
			finish(cu, 0);
		return;
	}
	int same = cu->shape && cu->shape_before && strcmp(cu->shape, cu->shape_before) == 0;
	if (!same) {
		log_info("master %s: its slots moved while its fence counters were read: again",
		         m->name);
		finish(cu, 0);
		return;
	}
	source_done(cu);
}

static int check_step(struct catchup *cu)
{
	static const char *argv[2] = {"CLUSTER", "NODES"};
	static const size_t len[2] = {7, 5};
	if (cu->icheck >= cu->nnodes)
		return -1;
	return master_call_at(source(cu), &cu->nodes[cu->icheck], 1, -1, 2, argv, len, check_cb,
	                      cu);
}

static void raise_cb(struct master *m, redisReply *r, void *arg)
{
	struct catchup *cu = arg;
	if (!r || r->type != REDIS_REPLY_INTEGER || !same_run(cu)) {
		finish(cu, 0);
		return;
	}
	cu->raised += r->integer;
	next_batch(cu);
}

/* A cluster target raises each counter in its lock name's slot (the name
 * between the prefix and " fence", as the scripts name a counter after
 * its lock): the raise's keys, in order. NULL: out of memory, or a key
 * not of that shape (SCAN's pattern matched it). */
static unsigned *counter_slots(const struct catchup *cu, int n)
{
	static const size_t sfx = sizeof(" fence") - 1;
	unsigned *slots = malloc(sizeof(*slots) * (size_t)n);
	for (int k = 0; slots && k < n; k++) {
		size_t len = cu->argvlen[3 + k];
		if (len < cu->plen + sfx) {
			free(slots);
			return NULL;
		}
		slots[k] = csl_keyslot(cu->argv[3 + k] + cu->plen, len - cu->plen - sfx);
	}
	return slots;
}

static void mget_cb(struct master *m, redisReply *r, void *arg)
{
	struct catchup *cu = arg;
	int n = 0, k = 0;

	if (!r || r->type != REDIS_REPLY_ARRAY || (int)r->elements != cu->nkeys || !same_run(cu)) {
		finish(cu, 0);
		return;
	}
	for (int i = 0; i < cu->nkeys; i++)
		n += r->element[i]->type == REDIS_REPLY_STRING;
	if (n == 0) {
		next_batch(cu);
		return;
	}
	free(cu->argv); /* the MGET's, done with */
	free(cu->argvlen);
	cu->vals = calloc((size_t)cu->nkeys, sizeof(*cu->vals));
	cu->argv = malloc(sizeof(*cu->argv) * (size_t)(5 + 2 * n));
	cu->argvlen = malloc(sizeof(*cu->argvlen) * (size_t)(5 + 2 * n));
	if (!cu->vals || !cu->argv || !cu->argvlen) {
		finish(cu, 0);
		return;
	}
	/* EVALSHA sha n key... value... idle clock (counters gone meanwhile
	 * skipped) */
	for (int i = 0; i < cu->nkeys; i++) {
		if (r->element[i]->type != REDIS_REPLY_STRING)
			continue;
		if (!(cu->vals[i] = strdup(r->element[i]->str))) {
			finish(cu, 0);
			return;
		}
		/* a cluster source's names have its slot's tag in front: the
		 * raise takes the standalone names (a cluster target tags them
		 * again, by their own slots) */
		const char *key = cu->keys[i];
		if (source(cu)->cl && key[0] == '{' && strchr(key, '}'))
			key = strchr(key, '}') + 1;
		cu->argv[3 + k] = key;
		cu->argvlen[3 + k] = strlen(key);
		cu->argv[3 + n + k] = cu->vals[i];
		cu->argvlen[3 + n + k] = strlen(cu->vals[i]);
		k++;
	}
	snprintf(cu->nbuf, sizeof(cu->nbuf), "%d", n);
	cu->argv[0] = cu->argv[1] = "";
	cu->argvlen[0] = cu->argvlen[1] = 0;
	cu->argv[2] = cu->nbuf;
	cu->argvlen[2] = strlen(cu->nbuf);
	cu->argv[3 + 2 * n] = cu->idle;
	cu->argvlen[3 + 2 * n] = strlen(cu->idle);
	cu->argv[4 + 2 * n] = cu->clock_floor ? "1" : "0";
	cu->argvlen[4 + 2 * n] = 1;
	if (cu->target->cl && !(cu->slots = counter_slots(cu, n))) {
		finish(cu, 0);
		return;
	}
	if (master_call_at(cu->target, cu->slots, cu->slots ? n : 0, SCR_RAISE_MANY, 5 + 2 * n,
	                   cu->argv, cu->argvlen, raise_cb, cu) != 0)
		finish(cu, 0);
}

static void scan_cb(struct master *m, redisReply *r, void *arg)
{
	struct catchup *cu = arg;

	if (!r || !same_run(cu) || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
		finish(cu, 0);
		return;
	}
	snprintf(cu->cursor, sizeof(cu->cursor), "%s", r->element[0]->str);
	redisReply *ks = r->element[1];
	if (ks->elements == 0) {
		next_batch(cu);
		return;
	}
	cu->nkeys = (int)ks->elements;
	cu->keys = calloc(ks->elements, sizeof(*cu->keys));
	cu->argv = malloc(sizeof(*cu->argv) * (ks->elements + 1));
	cu->argvlen = malloc(sizeof(*cu->argvlen) * (ks->elements + 1));
	if (!cu->keys || !cu->argv || !cu->argvlen) {
		finish(cu, 0);
		return;
	}
	cu->argv[0] = "MGET";
	cu->argvlen[0] = 4;
	for (size_t i = 0; i < ks->elements; i++) {
		redisReply *e = ks->element[i];
		if (e->type != REDIS_REPLY_STRING || !(cu->keys[i] = strdup(e->str))) {
			finish(cu, 0);
			return;
		}
		cu->argv[1 + i] = cu->keys[i];
		cu->argvlen[1 + i] = strlen(e->str);
	}
	if (m->cl) { /* an MGET per slot, joined (mcluster.c) */
		if (!(cu->kslots = malloc(sizeof(*cu->kslots) * (size_t)cu->nkeys))) {
			finish(cu, 0);
			return;
		}
		for (int i = 0; i < cu->nkeys; i++)
			cu->kslots[i] = csl_keyslot(cu->keys[i], cu->argvlen[1 + i]);
	}
	if (master_call_at(m, cu->kslots, cu->kslots ? cu->nkeys : 0, -1, 1 + cu->nkeys, cu->argv,
	                   cu->argvlen, mget_cb, cu) != 0)
		finish(cu, 0);
}

static int scan_step(struct catchup *cu)
{
	struct master *m = source(cu);
	cu->scan_argv[1] = cu->cursor;
	cu->scan_len[1] = strlen(cu->cursor);
	cu->scan_argv[3] = m->cl ? cu->cpattern : cu->pattern;
	cu->scan_len[3] = strlen(cu->scan_argv[3]);
	if (m->cl) /* its primaries one after the other, by a slot of each */
		return cu->inode < cu->nnodes
		           ? master_call_at(m, &cu->nodes[cu->inode], 1, -1, 6, cu->scan_argv,
		                            cu->scan_len, scan_cb, cu)
		           : -1;
	return master_call(m, -1, 6, cu->scan_argv, cu->scan_len, scan_cb, cu);
}

int catchup_start(struct master *target, const char *prefix, int64_t fence_idle_ms, const int *src,
                  int nsrc, int clock_floor, catchup_done_fn *done)
{
	static const char *const fixed[6] = {"SCAN", "0", "MATCH", "", "COUNT", "500"};
	struct catchup *cu = calloc(1, sizeof(*cu));

	if (!cu)
		return -1;
	for (int i = 0; i < nsrc && i < CONFIG_MAX_MASTERS; i++)
		cu->src[cu->nsrc++] = src[i];
	for (int i = 0; i < masters_count(); i++) {
		cu->gen[i] = master_get(i)->reconnects;
		cu->moves[i] = master_cluster_moves(master_get(i));
	}
	cu->clock_floor = clock_floor;
	snprintf(cu->idle, sizeof(cu->idle), "%lld", (long long)fence_idle_ms);
	cu->target = target;
	cu->done = done;
	cu->plen = strlen(prefix);
	/* Counters are "PREFIX<key> fence": glob-escape the prefix. */
	char *p = cu->pattern;
	for (const char *s = prefix; *s && p < cu->pattern + sizeof(cu->pattern) - 12; s++) {
		if (strchr("*?[]\\", *s))
			*p++ = '\\';
		*p++ = *s;
	}
	strcpy(p, "* fence");
	snprintf(cu->cpattern, sizeof(cu->cpattern), "{*}%s", cu->pattern);
	strcpy(cu->cursor, "0");
	for (int i = 0; i < 6; i++) {
		cu->scan_argv[i] = i == 3 ? cu->pattern : fixed[i];
		cu->scan_len[i] = strlen(cu->scan_argv[i]);
	}
	if (cu->nsrc == 0) {
		/* Nothing to read (the others lost their data too): the clock
		 * floor alone, applied as counters are first used, does. */
		free(cu);
		return 1;
	}
	if (source_start(cu) != 0) {
		free(cu->shape);
		free(cu);
		return -1;
	}
	return 0;
}
