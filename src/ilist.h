/* ilist: the intrusive list of lockd (doubly linked, O(1) push, pop and
 * removal; FIFO order). A key's waiters and holds, a session's holds,
 * every session, a master's requests, slab blocks and the expiry queue of
 * quorum calls live on these; the owner embeds struct ilink. */
#ifndef LOCKD_ILIST_H
#define LOCKD_ILIST_H

#include <stddef.h>

struct ilink {
	struct ilink *prev, *next; /* both NULL when not queued */
};

struct ilist {
	struct ilink head; /* sentinel */
	size_t len;
};

#define ilist_entry(link, type, member) ((type *)((char *)(link)-offsetof(type, member)))

static inline void ilist_init(struct ilist *q)
{
	q->head.prev = q->head.next = &q->head;
	q->len = 0;
}

static inline int ilink_linked(const struct ilink *l)
{
	return l->next != NULL;
}

static inline void ilist_push(struct ilist *q, struct ilink *l)
{
	l->prev = q->head.prev;
	l->next = &q->head;
	q->head.prev->next = l;
	q->head.prev = l;
	q->len++;
}

/* Removing a link that is not queued is a no-op, so callers need not track it. */
static inline void ilist_remove(struct ilist *q, struct ilink *l)
{
	if (!ilink_linked(l))
		return;
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = NULL;
	q->len--;
}

static inline struct ilink *ilist_first(const struct ilist *q)
{
	return q->len ? q->head.next : NULL;
}

static inline struct ilink *ilist_pop(struct ilist *q)
{
	struct ilink *l = ilist_first(q);
	if (l)
		ilist_remove(q, l);
	return l;
}

#endif
