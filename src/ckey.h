/* ckey: lockd's script calls in the form a Redis Cluster entry takes
 * (issue 31; doc/cluster.md, "The choice: slot by slot"), prefix ck_.
 *
 * On a cluster entry everything lockd stores for a lock name K lives in
 * K's slot s (csl_keyslot): each key's name is its standalone name with
 * "{T}" in front, T = ktag_of_slot(s). lockd's own keys that a lock's
 * scripts read beside it (the connection epoch "P gen INST", a session's
 * record "P session SID") are kept once per slot the same way, so a slot
 * is a standalone master's namespace, prefix "{T}P", and every script
 * runs on it unchanged. What changes is the call:
 *
 * - a call whose keys are all of one lock (or one slot's records) gets
 *   "{T}" before each key it names, and the argument that carries the
 *   prefix (SCR_RELEASE's length of it, which says what a release
 *   announces; SCR_SESS_ADOPT's prefix, which names the holds its record
 *   lists) says "{T}P", and the connection epoch (SCR_ACQUIRE's, SCR_RENEW's)
 *   says "+E": the scripts then raise their slot's epoch key by use
 *   (scripts.c, LUA_GEN_BY_USE): ck_call;
 * - a call over items of several locks (SCR_RENEW, SCR_RELEASE_MANY,
 *   SCR_RAISE_MANY) is split into one call per slot, items in their
 *   order, and the replies are joined back in the items' order:
 *   ck_split, ck_join.
 *
 * Every key of a call is declared (KEYS), so that Redis can redirect it
 * (MOVED, ASK) and refuse it while its slot's keys are split by a
 * migration (TRYAGAIN); the names the scripts make from a declared key
 * ("P K fence", "P K leader", ...) keep its tag, and so its slot. Pure:
 * no I/O; ck_join allocates the reply it returns. */
#ifndef LOCKD_CKEY_H
#define LOCKD_CKEY_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "ktag.h"

#define CK_TAG_MAX   (KTAG_LEN_MAX + 2) /* "{T}": what a name grows by */
#define CK_EPOCH_MAX 24                 /* digits of a connection epoch ck_call takes */

/* numkeys of a call (argv[SA_NKEYS], at most argc - SA_KEYS), or -1. */
int ck_nkeys(int argc, const char **argv, const size_t *argvlen);

/* Bytes ck_call needs in its buffer for a call of argc arguments (their
 * lengths argvlen) with nkeys keys. */
size_t ck_call_size(int argc, const size_t *argvlen, int nkeys);

/* The cluster form of one call of script (enum script_id) whose keys are
 * all of slot: argv[SA_NKEYS] says how many keys follow; out and outlen
 * get argc entries (argv[SA_CMD] and argv[SA_SHA] passed as they are, as
 * every argument that is not a key or the prefix), pointing into argv or
 * into buf (cap bytes, ck_call_size). An empty key (a call without a
 * session record) becomes "{T}": Redis Cluster reads "" as a name of slot
 * 0, and the scripts read a name that ends with '}' as no record (no
 * record's name ends so; the scripts read a record only where the call
 * names a record field, except SCR_RENEW, which tests the name). 0, or -1
 * when numkeys is not a number of
 * argc's call or buf is too small. ktag_init must have returned 0. */
int ck_call(int script, unsigned slot, int argc, const char **argv, const size_t *argvlen,
            const char **out, size_t *outlen, char *buf, size_t cap);

/* Where a call of script with nkeys keys takes its connection epoch
 * (the argument ck_call writes as "+E"), or -1 for a script without. */
int ck_epoch_at(int script, int nkeys);

/* The scripts over items of several locks, and how their arguments go:
 * each kind of argument for every item in turn (all locks, then all
 * shared sets, ...), after or before a few that do not repeat. */
struct ck_cols {
	int item_keys;   /* keys per item */
	int fixed_keys;  /* keys that do not repeat, after the items' */
	int args_before; /* arguments that do not repeat, before the items' */
	int item_args;   /* arguments per item */
	int args_after;  /* arguments that do not repeat, after the items' */
	int sum;         /* the reply: 1 a count (summed), 0 an array, one per item */
	int all;         /* a count: NULL unless every part answered one (the catch-up acts
	                    on it); 0: summed over the parts that did (nobody counts it) */
	int per_item;    /* an array: its elements per item (0 counts as 1) */
};
/* Its shape, or NULL for a script ck_split does not take. */
const struct ck_cols *ck_cols_of(int script);

/* One slot's part of a split call: the items (indexes into the whole
 * call's, in their order) and the part's own call, with its keys named
 * as the whole call's are (ck_call then gives its cluster form). */
struct ck_part {
	unsigned slot;
	int nitems;
	int *items;
	int argc;
	const char **argv; /* into the whole call's, but argv[SA_NKEYS]: nkeys */
	size_t *argvlen;
	char nkeys[12];
};

/* Group n items, item i of slot slots[i], into one part per slot, in the
 * order of each slot's first item: slot, nitems and items set, no
 * arguments yet. The number of parts (*parts, freed with ck_parts_free),
 * or -1 (out of memory). */
int ck_group(int n, const unsigned *slots, struct ck_part **parts);

/* Split a call of script (ck_cols_of not NULL) over n items, item i of
 * slot slots[i], into one part per slot, in the order of each slot's
 * first item. Returns the number of parts (*parts, freed with
 * ck_parts_free; the parts point into argv, which must outlive them), or
 * -1: out of memory, or argv is not a call of n items of that shape. */
int ck_split(int script, int n, const unsigned *slots, int argc, const char **argv,
             const size_t *argvlen, struct ck_part **parts);
void ck_parts_free(struct ck_part *parts, int nparts);

/* The whole call's reply from its parts' (replies[k] part k's; NULL:
 * that part failed): a count, summed over the parts that answered one
 * (NULL unless all did, for a script whose ck_cols say all);
 * or an array with each item's elements (ck_cols.per_item) at the item's own
 * place, nil for
 * the items of a part that failed or answered other than its shape (an
 * error, a short array): those items are a "no" from this entry, the
 * others count. NULL when no part answered its shape, or out of memory.
 * Free it with freeReplyObject. */
redisReply *ck_join(int script, int n, const struct ck_part *parts, int nparts,
                    redisReply *const *replies);

#endif
