/* dheap: a binary min-heap of deadlines, its nodes embedded in their
 * owners. One timer serves every lock's end of validity (locktab), where
 * an event per lock cost a libevent timer, its memory and a clock read
 * per grant. Pure: no I/O, no clock. */
#ifndef LOCKD_DHEAP_H
#define LOCKD_DHEAP_H

#include <stddef.h>
#include <stdint.h>

struct dh_node {
	int64_t at; /* the deadline (any unit; locktab: monotonic us) */
	size_t pos; /* 1 + its index in the heap; 0: not in it (a zeroed node) */
};

struct dheap {
	struct dh_node **v;
	size_t n, cap;
};

void dh_init(struct dheap *h);
void dh_free(struct dheap *h);
/* Put n in the heap at `at`, or move it there. -1: out of memory (n is
 * then not in the heap). */
int dh_set(struct dheap *h, struct dh_node *n, int64_t at);
/* Take n out (nothing if it is not in). */
void dh_remove(struct dheap *h, struct dh_node *n);
/* The earliest deadline, or NULL when empty. */
static inline struct dh_node *dh_top(const struct dheap *h)
{
	return h->n ? h->v[0] : NULL;
}
static inline int dh_linked(const struct dh_node *n)
{
	return n->pos != 0;
}

#endif
