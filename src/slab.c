/* slab: fixed-size objects in 64 KiB blocks of their own (see slab.h). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "slab.h"

/* A block starts with this header; its objects follow. Blocks are
 * SLAB_BLOCK-aligned, so an object finds its block by masking. */
struct slab_block {
	struct slab_block *prev, *next; /* on s->partial while it has a free object */
	struct slab_block *all_prev, *all_next; /* on s->all, always */
	void *free;                     /* its free objects, linked through their first word */
	size_t used;                    /* objects handed out */
	size_t fresh;                   /* objects never handed out, from the end of the header */
	int on_partial;
};

#define HEADER (((sizeof(struct slab_block)) + 15) & ~(size_t)15)

/* A block is a mapping of its own, SLAB_BLOCK-aligned: map twice the
 * size and unmap the rest. (aligned_alloc from the heap leaves a hole
 * before every block, which doubled the heap.) */
static struct slab_block *block_new(void)
{
	char *p = mmap(NULL, 2 * SLAB_BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);
	if (p == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)p + SLAB_BLOCK - 1) & ~(uintptr_t)(SLAB_BLOCK - 1);
	size_t head = a - (uintptr_t)p;
	if (head)
		munmap(p, head);
	munmap((char *)a + SLAB_BLOCK, SLAB_BLOCK - head);
	return (struct slab_block *)a;
}

static void block_free(struct slab_block *b) { munmap(b, SLAB_BLOCK); }

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
	s->partial = s->spare = s->all = NULL;
	s->nblocks = s->nobjs = 0;
}

static void all_remove(struct slab *s, struct slab_block *b)
{
	if (b->all_prev)
		b->all_prev->all_next = b->all_next;
	else
		s->all = b->all_next;
	if (b->all_next)
		b->all_next->all_prev = b->all_prev;
}

static void partial_push(struct slab *s, struct slab_block *b)
{
	b->prev = NULL;
	b->next = s->partial;
	if (s->partial)
		s->partial->prev = b;
	s->partial = b;
	b->on_partial = 1;
}

static void partial_remove(struct slab *s, struct slab_block *b)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		s->partial = b->next;
	if (b->next)
		b->next->prev = b->prev;
	b->prev = b->next = NULL;
	b->on_partial = 0;
}

void *slab_alloc(struct slab *s)
{
	struct slab_block *b = s->partial;
	if (!b) {
		if (s->spare) {
			b = s->spare;
			s->spare = NULL;
		} else {
			if (!(b = block_new()))
				return NULL;
			s->nblocks++;
			b->all_prev = NULL;
			b->all_next = s->all;
			if (s->all)
				s->all->all_prev = b;
			s->all = b;
		}
		b->free = NULL;
		b->used = 0;
		b->fresh = s->per_block;
		partial_push(s, b);
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
		partial_remove(s, b);
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
		/* Empty: keep one for the next burst, give the rest back. */
		if (b->on_partial)
			partial_remove(s, b);
		if (!s->spare) {
			s->spare = b;
		} else {
			all_remove(s, b);
			block_free(b);
			s->nblocks--;
		}
		return;
	}
	if (!b->on_partial)
		partial_push(s, b);
}

void slab_destroy(struct slab *s)
{
	while (s->all) {
		struct slab_block *b = s->all;
		s->all = b->all_next;
		block_free(b);
	}
	slab_init(s, s->size);
}
