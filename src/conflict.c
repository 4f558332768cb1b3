/* conflict: what the holds of this lockd allow a request of a key (pure:
 * no I/O, no allocation but free_permit's bitmap): which permit is free
 * here, whether the head waiter may ask the masters, who gets a released
 * lock or permit by a handoff, and whether a session's own hold satisfies
 * what it asks again. Over the types of locktab_types.h and locktab_int.h,
 * below locktab.h; locktab.c calls it. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "conflict.h"
#include "locktab_int.h"

/* The lowest permit in [from, n) that no session here holds (nor, for
 * permit 0, keeps from being taken by holding the key shared), or
 * NO_PERMIT. */
uint32_t cf_free_permit(const struct lkey *lk, uint32_t n, uint32_t from)
{
	static uint64_t *bits;
	static size_t cap; /* words */
	size_t words = ((size_t)n + 63) / 64;

	if (from >= n)
		return NO_PERMIT;
	if (words > cap) {
		uint64_t *b = realloc(bits, words * sizeof(*b));
		if (!b)
			return NO_PERMIT; /* tried again at the next release */
		bits = b;
		cap = words;
	}
	memset(bits, 0, words * sizeof(*bits));
	if (lk->nshared || lk->nlock)
		bits[0] |= 1;
	for (struct ilink *l = lk->holds.head.next; l != &lk->holds.head; l = l->next) {
		const struct hold *h = ilist_entry(l, struct hold, key_link);
		if (h->kind != HK_SHARED && h->permit < n)
			bits[h->permit / 64] |= 1ULL << (h->permit % 64);
	}
	for (uint32_t i = from; i < n; i++)
		if (!(bits[i / 64] & (1ULL << (i % 64))))
			return i;
	return NO_PERMIT;
}

/* Nothing held here keeps a request of this kind from asking the masters. */
int cf_can_ask(const struct lkey *lk, const struct waiter *w)
{
	switch (w->kind) {
	case HK_LOCK:
		return !lk->nlock && !lk->nshared;
	case HK_SHARED:
		return !lk->nlock;
	case HK_PERMIT:
		return cf_free_permit(lk, w->npermits, 0) != NO_PERMIT;
	}
	return 0;
}

/* Who gets a released lock (the key's, or permit i) by a handoff: the
 * head waiter for the key's lock (unless it asks shared: it asks on its
 * own), the first permit waiter whose n is above i for permit i. */
struct waiter *cf_handoff_to(struct lkey *lk, uint32_t permit)
{
	for (struct ilink *l = lk->waiters.head.next; l != &lk->waiters.head; l = l->next) {
		struct waiter *w = ilist_entry(l, struct waiter, link);
		if (permit == 0)
			return w->kind != HK_SHARED ? w : NULL;
		if (w->kind == HK_PERMIT && w->npermits > permit)
			return w;
	}
	return NULL;
}

/* Whether a hold of a kind (and permit) satisfies a request of a kind (and
 * n): an exclusive hold (the key's lock, permit 0) satisfies every
 * request of the key, a shared hold a shared request, permit i a request
 * of PERMITS n with i < n. Anything else would tell a session it holds
 * what another session may hold (PROTOCOL.md 1.1, "Permits"). */
enum reentry cf_reentry(enum hold_kind held, uint32_t permit, enum hold_kind asked, uint32_t n)
{
	if (held != HK_SHARED && permit == 0)
		return RE_OK;
	if (held == HK_SHARED)
		return asked == HK_SHARED ? RE_OK : RE_UPGRADE;
	return asked == HK_PERMIT && permit < n ? RE_OK : RE_OTHER;
}
