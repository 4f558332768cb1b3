/* keytab: a hash table of byte-string keys to intrusive nodes. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "keytab.h"

#define KEYTAB_MIN_SLOTS 1024 /* never shrink below this */

/* FNV-1a: keys are short protocol tokens, so a simple hash serves. A
 * per-process seed keeps clients from choosing colliding keys. */
static uint64_t seed = 1469598103934665603ULL;

uint64_t keytab_hash(const char *key, size_t klen)
{
	uint64_t h = seed;
	for (size_t i = 0; i < klen; i++) {
		h ^= (unsigned char)key[i];
		h *= 1099511628211ULL;
	}
	return h ^ (h >> 29);
}

int keytab_init(struct keytab *t, size_t nslots)
{
	size_t n = 16;
	while (n < nslots)
		n <<= 1;
	t->slots = calloc(n, sizeof(*t->slots));
	t->nslots = n;
	t->count = 0;
	if (seed == 1469598103934665603ULL)
		seed ^= (uint64_t)(uintptr_t)t * 0x9e3779b97f4a7c15ULL;
	return t->slots ? 0 : -1;
}

void keytab_destroy(struct keytab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->nslots = t->count = 0;
}

struct kt_node *keytab_find(const struct keytab *t, const char *key, size_t klen)
{
	uint64_t h = keytab_hash(key, klen);
	for (struct kt_node *n = t->slots[h & (t->nslots - 1)]; n; n = n->next)
		if (n->hash == h && n->klen == klen && memcmp(n->key, key, klen) == 0)
			return n;
	return NULL;
}

/* Rehash into nn slots (a power of two). */
static void resize(struct keytab *t, size_t nn)
{
	struct kt_node **ns = calloc(nn, sizeof(*ns));
	if (!ns)
		return; /* keep the old size; still correct */
	for (size_t i = 0; i < t->nslots; i++) {
		struct kt_node *n = t->slots[i], *nx;
		for (; n; n = nx) {
			nx = n->next;
			n->next = ns[n->hash & (nn - 1)];
			ns[n->hash & (nn - 1)] = n;
		}
	}
	free(t->slots);
	t->slots = ns;
	t->nslots = nn;
}

void keytab_insert(struct keytab *t, struct kt_node *n)
{
	n->hash = keytab_hash(n->key, n->klen);
	struct kt_node **s = &t->slots[n->hash & (t->nslots - 1)];
	n->next = *s;
	*s = n;
	if (++t->count > t->nslots)
		resize(t, t->nslots * 2);
}

void keytab_remove(struct keytab *t, struct kt_node *n)
{
	struct kt_node **p = &t->slots[n->hash & (t->nslots - 1)];
	for (; *p; p = &(*p)->next)
		if (*p == n) {
			*p = n->next;
			t->count--;
			/* Give the memory of a burst back: shrink when 1/8 full. */
			if (t->nslots > KEYTAB_MIN_SLOTS && t->count * 8 < t->nslots)
				resize(t, t->nslots / 2);
			return;
		}
}
