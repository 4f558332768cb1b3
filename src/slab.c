/* slab: fixed-size objects in 64 KiB blocks of their own (see slab.h). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "slab.h"

/* A block starts with this header; its objects follow. Blocks are
 * SLAB_BLOCK-aligned, so an object finds its block by masking. */
struct slab_block {
	struct ilink partial_link; /* on s->partial while it has a free object
	                                and some in use; on s->spare when empty */
	struct ilink all_link;     /* on s->all, always */
	void *free;                /* its free objects, linked through their first word */
	size_t used;               /* objects handed out */
	size_t fresh;              /* objects never handed out, at its end */
};

#define HEADER (((sizeof(struct slab_block)) + 15) & ~(size_t)15)

/* A block is a mapping of its own, SLAB_BLOCK-aligned: map twice the
 * size and unmap the rest. (aligned_alloc from the heap leaves a hole
 * before every block, which doubled the heap.) */
static struct slab_block *block_new(void)
{
	char *p =
	    mmap(NULL, 2 * SLAB_BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)p + SLAB_BLOCK - 1) & ~(uintptr_t)(SLAB_BLOCK - 1);
	size_t head = a - (uintptr_t)p;
	if (head)
		munmap(p, head);
	munmap((char *)a + SLAB_BLOCK, SLAB_BLOCK - head);
	return (struct slab_block *)a;
}

static struct slab_block *block_of(void *p)
{
	return (struct slab_block *)((uintptr_t)p & ~(uintptr_t)(SLAB_BLOCK - 1));
}

void slab_init(struct slab *s, size_t size)
{
	s->size = (size + 15) & ~(size_t)15;
	if (s->size < sizeof(void *))
		s->size = 16;
	s->per_block = (SLAB_BLOCK - HEADER) / s->size;
	ilist_init(&s->partial);
	ilist_init(&s->all);
	ilist_init(&s->spare);
	s->nobjs = 0;
}

void *slab_alloc(struct slab *s)
{
	struct ilink *l = ilist_first(&s->partial);
	struct slab_block *b;
	if (l) {
		b = ilist_entry(l, struct slab_block, partial_link);
	} else {
		if ((l = ilist_pop(&s->spare))) {
			b = ilist_entry(l, struct slab_block, partial_link);
		} else {
			if (!(b = block_new()))
				return NULL;
			b->all_link.prev = b->all_link.next = NULL;
			ilist_push(&s->all, &b->all_link);
		}
		b->free = NULL;
		b->used = 0;
		b->fresh = s->per_block;
		b->partial_link.prev = b->partial_link.next = NULL;
		ilist_push(&s->partial, &b->partial_link);
	}
	void *p;
	if (b->free) {
		p = b->free;
		b->free = *(void **)p;
	} else {
		p = (char *)b + HEADER + (s->per_block - b->fresh) * s->size;
		b->fresh--;
	}
	b->used++;
	s->nobjs++;
	if (!b->free && b->fresh == 0)
		ilist_remove(&s->partial, &b->partial_link);
	return p;
}

void slab_free(struct slab *s, void *p)
{
	struct slab_block *b = block_of(p);
	*(void **)p = b->free;
	b->free = p;
	b->used--;
	s->nobjs--;
	if (b->used == 0) {
		/* Empty: keep a few for the next calls (a steady load
		 * empties and fills blocks all the time: no mapping and page
		 * faults for each), give the rest back. */
		ilist_remove(&s->partial, &b->partial_link);
		if (s->spare.len < SLAB_SPARE) {
			ilist_push(&s->spare, &b->partial_link);
		} else {
			ilist_remove(&s->all, &b->all_link);
			munmap(b, SLAB_BLOCK);
		}
		return;
	}
	if (!ilink_linked(&b->partial_link))
		ilist_push(&s->partial, &b->partial_link);
}

void slab_destroy(struct slab *s)
{
	struct ilink *l;
	while ((l = ilist_pop(&s->all)))
		munmap(ilist_entry(l, struct slab_block, all_link), SLAB_BLOCK);
	slab_init(s, s->size);
}
