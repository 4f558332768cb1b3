/* waitq: an intrusive FIFO (doubly linked, O(1) push, pop and removal).
 * Waiters for a key and a master's in-flight requests live on these. */
#ifndef LOCKD_WAITQ_H
#define LOCKD_WAITQ_H

#include <stddef.h>

struct wq_link {
	struct wq_link *prev, *next; /* both NULL when not queued */
};

struct waitq {
	struct wq_link head; /* sentinel */
	size_t len;
};

#define wq_entry(link, type, member) ((type *)((char *)(link) - offsetof(type, member)))

static inline void waitq_init(struct waitq *q)
{
	q->head.prev = q->head.next = &q->head;
	q->len = 0;
}

static inline int wq_linked(const struct wq_link *l) { return l->next != NULL; }

static inline void waitq_push(struct waitq *q, struct wq_link *l)
{
	l->prev = q->head.prev;
	l->next = &q->head;
	q->head.prev->next = l;
	q->head.prev = l;
	q->len++;
}

/* Removing a link that is not queued is a no-op, so callers need not track it. */
static inline void waitq_remove(struct waitq *q, struct wq_link *l)
{
	if (!wq_linked(l))
		return;
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = NULL;
	q->len--;
}

static inline struct wq_link *waitq_first(const struct waitq *q)
{
	return q->len ? q->head.next : NULL;
}

static inline struct wq_link *waitq_pop(struct waitq *q)
{
	struct wq_link *l = waitq_first(q);
	if (l)
		waitq_remove(q, l);
	return l;
}

#endif
