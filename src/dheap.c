/* dheap: a binary min-heap of embedded deadline nodes (see dheap.h). */
#include "config.h"

#include <stdlib.h>

#include "dheap.h"

void dh_init(struct dheap *h)
{
	h->v = NULL;
	h->n = h->cap = 0;
}

void dh_free(struct dheap *h)
{
	for (size_t i = 0; i < h->n; i++)
		h->v[i]->pos = 0;
	free(h->v);
	dh_init(h);
}

static void place(struct dheap *h, size_t i, struct dh_node *n)
{
	h->v[i] = n;
	n->pos = i + 1;
}

static void sift_up(struct dheap *h, size_t i)
{
	struct dh_node *n = h->v[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (h->v[p]->at <= n->at)
			break;
		place(h, i, h->v[p]);
		i = p;
	}
	place(h, i, n);
}

static void sift_down(struct dheap *h, size_t i)
{
	struct dh_node *n = h->v[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1]->at < h->v[c]->at)
			c++;
		if (n->at <= h->v[c]->at)
			break;
		place(h, i, h->v[c]);
		i = c;
	}
	place(h, i, n);
}

int dh_set(struct dheap *h, struct dh_node *n, int64_t at)
{
	if (n->pos) {
		int64_t old = n->at;
		n->at = at;
		if (at < old)
			sift_up(h, n->pos - 1);
		else
			sift_down(h, n->pos - 1);
		return 0;
	}
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		struct dh_node **v = realloc(h->v, cap * sizeof(*v));
		if (!v)
			return -1;
		h->v = v;
		h->cap = cap;
	}
	n->at = at;
	place(h, h->n++, n);
	sift_up(h, h->n - 1);
	return 0;
}

void dh_remove(struct dheap *h, struct dh_node *n)
{
	if (!n->pos)
		return;
	size_t i = n->pos - 1;
	struct dh_node *last = h->v[--h->n];
	n->pos = 0;
	if (last != n) {
		place(h, i, last);
		if (i > 0 && h->v[(i - 1) / 2]->at > last->at)
			sift_up(h, i);
		else
			sift_down(h, i);
	}
	/* Memory back after a burst: halve when a quarter is used. */
	if (h->cap > 64 && h->n < h->cap / 4) {
		struct dh_node **v = realloc(h->v, h->cap / 2 * sizeof(*v));
		if (v) {
			h->v = v;
			h->cap /= 2;
		}
	}
}
