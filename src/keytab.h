/* keytab: a hash table of byte-string keys to intrusive nodes (chained,
 * grows by doubling). The owner embeds struct kt_node and its key bytes. */
#ifndef LOCKD_KEYTAB_H
#define LOCKD_KEYTAB_H

#include <stddef.h>
#include <stdint.h>

struct kt_node {
	struct kt_node *next;
	uint64_t hash;
	const char *key;
	size_t klen;
};

struct keytab {
	struct kt_node **slots;
	size_t nslots; /* a power of two */
	size_t count;
};

int keytab_init(struct keytab *t, size_t nslots);
void keytab_destroy(struct keytab *t);
uint64_t keytab_hash(const char *key, size_t klen);
struct kt_node *keytab_find(const struct keytab *t, const char *key, size_t klen);
/* The node's key, klen must be set; the key must not be present. */
void keytab_insert(struct keytab *t, struct kt_node *n);
void keytab_remove(struct keytab *t, struct kt_node *n);

#endif
