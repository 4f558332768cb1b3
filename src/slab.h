/* slab: fixed-size objects carved from 64 KiB blocks of their own.
 *
 * A million held locks are long-lived objects of two sizes, granted in
 * bursts among short-lived buffers (a request's input, a quorum call,
 * a reply); from the general heap they end up scattered between the holes
 * the short-lived ones leave, and those pages never go back. In blocks of
 * their own they stay dense, and a block that empties is unmapped (a few
 * are kept spare). Pure: no I/O. */
#ifndef LOCKD_SLAB_H
#define LOCKD_SLAB_H

#include <stddef.h>

#include "ilist.h"

#define SLAB_BLOCK (64 * 1024)
#define SLAB_SPARE 8 /* empty blocks kept (512 KiB) */

struct slab_block;

struct slab {
	size_t size;          /* object size (a multiple of 16) */
	size_t per_block;     /* objects a block holds */
	struct ilist partial; /* blocks with a free object */
	struct ilist all;     /* every block (all.len: blocks mapped, spares included) */
	struct ilist spare;   /* empty blocks kept, SLAB_SPARE at most */
	size_t nobjs;         /* objects in use */
};

/* size: the object size, at most SLAB_BLOCK / 8. */
void slab_init(struct slab *s, size_t size);
/* An object of s->size bytes (not zeroed), or NULL when out of memory. */
void *slab_alloc(struct slab *s);
/* Give back an object of s (from slab_alloc of the same s). */
void slab_free(struct slab *s, void *p);
/* Free every block, whether its objects were given back or not. */
void slab_destroy(struct slab *s);

#endif
