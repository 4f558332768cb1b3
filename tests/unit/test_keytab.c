/* Unit tests of the key hash table (src/keytab.c). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keytab.h"
#include "units.h"

struct item {
	struct kt_node node;
	char key[32];
	int value;
};

static void item_set(struct item *it, const char *key, size_t klen, int value)
{
	memcpy(it->key, key, klen);
	it->node.key = it->key;
	it->node.klen = klen;
	it->value = value;
}

static struct item *find(const struct keytab *t, const char *key, size_t klen)
{
	struct kt_node *n = keytab_find(t, key, klen);
	return n ? (struct item *)((char *)n - offsetof(struct item, node)) : NULL;
}

START_TEST(init_sizes)
{
	struct keytab t;

	ck_assert_int_eq(keytab_init(&t, 0), 0);
	ck_assert_uint_eq(t.nslots, 16);
	ck_assert_uint_eq(t.count, 0);
	keytab_destroy(&t);
	ck_assert_int_eq(keytab_init(&t, 100), 0);
	ck_assert_uint_eq(t.nslots, 128);
	keytab_destroy(&t);
	ck_assert_int_eq(keytab_init(&t, 1024), 0);
	ck_assert_uint_eq(t.nslots, 1024);
	keytab_destroy(&t);
	ck_assert_ptr_null(t.slots);
	ck_assert_uint_eq(t.count, 0);
}
END_TEST

START_TEST(find_in_empty)
{
	struct keytab t;
	ck_assert_int_eq(keytab_init(&t, 0), 0);
	ck_assert_ptr_null(keytab_find(&t, "a", 1));
	ck_assert_ptr_null(keytab_find(&t, "", 0));
	keytab_destroy(&t);
}
END_TEST

START_TEST(hash_stable)
{
	ck_assert_uint_eq(keytab_hash("abc", 3), keytab_hash("abcdef", 3));
	ck_assert_uint_ne(keytab_hash("abc", 3), keytab_hash("abd", 3));
	ck_assert_uint_ne(keytab_hash("a\0b", 3), keytab_hash("a\0c", 3));
	ck_assert_uint_ne(keytab_hash("a", 1), keytab_hash("a\0", 2));
}
END_TEST

START_TEST(many_keys)
{
	enum { N = 10000 };
	struct keytab t;
	struct item *items = calloc(N, sizeof(*items));
	char buf[32];

	ck_assert_ptr_nonnull(items);
	ck_assert_int_eq(keytab_init(&t, 0), 0);
	for (int i = 0; i < N; i++) {
		int n = snprintf(buf, sizeof(buf), "key:%d", i);
		item_set(&items[i], buf, (size_t)n, i);
		ck_assert_ptr_null(keytab_find(&t, buf, (size_t)n));
		keytab_insert(&t, &items[i].node);
		ck_assert_uint_eq(t.count, (size_t)i + 1);
	}
	/* It grew, and stays a power of two with no more keys than slots. */
	ck_assert_uint_ge(t.nslots, N);
	ck_assert_uint_eq(t.nslots & (t.nslots - 1), 0);

	for (int i = 0; i < N; i++) {
		int n = snprintf(buf, sizeof(buf), "key:%d", i);
		struct item *it = find(&t, buf, (size_t)n);
		ck_assert_msg(it == &items[i], "key:%d not found after growth", i);
		ck_assert_int_eq(it->value, i);
	}
	ck_assert_ptr_null(keytab_find(&t, "key:10000", 9));
	ck_assert_ptr_null(keytab_find(&t, "key:-1", 6));
	ck_assert_ptr_null(keytab_find(&t, "key:", 4));

	/* Remove the even ones. */
	for (int i = 0; i < N; i += 2)
		keytab_remove(&t, &items[i].node);
	ck_assert_uint_eq(t.count, N / 2);
	for (int i = 0; i < N; i++) {
		int n = snprintf(buf, sizeof(buf), "key:%d", i);
		struct item *it = find(&t, buf, (size_t)n);
		if (i % 2)
			ck_assert_msg(it == &items[i], "key:%d lost", i);
		else
			ck_assert_msg(it == NULL, "key:%d still found after removal", i);
	}
	/* Put them back, then remove everything. */
	for (int i = 0; i < N; i += 2)
		keytab_insert(&t, &items[i].node);
	ck_assert_uint_eq(t.count, N);
	for (int i = N - 1; i >= 0; i--)
		keytab_remove(&t, &items[i].node);
	ck_assert_uint_eq(t.count, 0);
	for (size_t s = 0; s < t.nslots; s++)
		ck_assert_ptr_null(t.slots[s]);
	keytab_destroy(&t);
	free(items);
}
END_TEST

START_TEST(same_prefix)
{
	static const char *const keys[] = {"a", "ab", "abc", "abcd", "abcde", "b", "ba"};
	enum { N = sizeof(keys) / sizeof(keys[0]) };
	struct keytab t;
	struct item items[N];

	ck_assert_int_eq(keytab_init(&t, 0), 0);
	for (int i = 0; i < N; i++) {
		item_set(&items[i], keys[i], strlen(keys[i]), i);
		keytab_insert(&t, &items[i].node);
	}
	for (int i = 0; i < N; i++)
		ck_assert_ptr_eq(find(&t, keys[i], strlen(keys[i])), &items[i]);
	/* "abcdef" with the length of "abc" is "abc" */
	ck_assert_ptr_eq(find(&t, "abcdef", 3), &items[2]);
	ck_assert_ptr_null(find(&t, "abcdef", 6));
	ck_assert_ptr_null(find(&t, "A", 1)); /* case-sensitive */

	keytab_remove(&t, &items[2].node); /* "abc" */
	ck_assert_ptr_null(find(&t, "abc", 3));
	ck_assert_ptr_eq(find(&t, "ab", 2), &items[1]);
	ck_assert_ptr_eq(find(&t, "abcd", 4), &items[3]);
	keytab_destroy(&t);
}
END_TEST

START_TEST(binary_keys)
{
	struct keytab t;
	struct item a, b, c, d;

	ck_assert_int_eq(keytab_init(&t, 0), 0);
	item_set(&a, "a\0b", 3, 1);
	item_set(&b, "a\0c", 3, 2);
	item_set(&c, "a", 1, 3);
	item_set(&d, "a\0", 2, 4);
	keytab_insert(&t, &a.node);
	keytab_insert(&t, &b.node);
	keytab_insert(&t, &c.node);
	keytab_insert(&t, &d.node);
	ck_assert_uint_eq(t.count, 4);
	ck_assert_ptr_eq(find(&t, "a\0b", 3), &a);
	ck_assert_ptr_eq(find(&t, "a\0c", 3), &b);
	ck_assert_ptr_eq(find(&t, "a", 1), &c);
	ck_assert_ptr_eq(find(&t, "a\0", 2), &d);
	ck_assert_ptr_null(find(&t, "a\0d", 3));
	ck_assert_ptr_null(find(&t, "a\0\0", 3));
	keytab_remove(&t, &d.node);
	ck_assert_ptr_null(find(&t, "a\0", 2));
	ck_assert_ptr_eq(find(&t, "a", 1), &c);
	keytab_destroy(&t);
}
END_TEST

/* Keys that all land in one slot: chains are walked and unlinked right. */
START_TEST(one_chain)
{
	enum { N = 16 };
	struct keytab t;
	struct item items[N];
	char buf[32];
	int n = 0;

	ck_assert_int_eq(keytab_init(&t, 16), 0); /* 16 slots hold 16 keys without growing */
	uint64_t want = 0;
	for (unsigned i = 0; n < N; i++) {
		int len = snprintf(buf, sizeof(buf), "c%u", i);
		uint64_t h = keytab_hash(buf, (size_t)len);
		if (n == 0)
			want = h & 15;
		if ((h & 15) != want)
			continue;
		item_set(&items[n], buf, (size_t)len, n);
		keytab_insert(&t, &items[n].node);
		n++;
	}
	ck_assert_uint_eq(t.nslots, 16);
	ck_assert_uint_eq(t.count, N);
	/* remove from the middle, the end and the start of the chain */
	keytab_remove(&t, &items[N / 2].node);
	keytab_remove(&t, &items[0].node);
	keytab_remove(&t, &items[N - 1].node);
	ck_assert_uint_eq(t.count, N - 3);
	for (int i = 0; i < N; i++) {
		struct item *it = find(&t, items[i].key, items[i].node.klen);
		if (i == N / 2 || i == 0 || i == N - 1)
			ck_assert_ptr_null(it);
		else
			ck_assert_ptr_eq(it, &items[i]);
	}
	/* removing a node that is not in the table changes nothing */
	keytab_remove(&t, &items[0].node);
	ck_assert_uint_eq(t.count, N - 3);
	keytab_destroy(&t);
}
END_TEST

Suite *keytab_suite(void)
{
	Suite *s = suite_create("keytab");
	TCase *tc = tcase_create("keytab");

	tcase_add_test(tc, init_sizes);
	tcase_add_test(tc, find_in_empty);
	tcase_add_test(tc, hash_stable);
	tcase_add_test(tc, many_keys);
	tcase_add_test(tc, same_prefix);
	tcase_add_test(tc, binary_keys);
	tcase_add_test(tc, one_chain);
	suite_add_tcase(s, tc);
	return s;
}
