/* Unit tests of the deadline heap (src/dheap.c). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "dheap.h"
#include "units.h"

/* Every parent is due no later than its children, and every node knows
 * where it is. */
static void check_heap(const struct dheap *h)
{
	for (size_t i = 0; i < h->n; i++) {
		ck_assert_uint_eq(h->v[i]->pos, i + 1);
		if (i > 0)
			ck_assert_int_le(h->v[(i - 1) / 2]->at, h->v[i]->at);
	}
}

START_TEST(empty_heap)
{
	struct dheap h;
	struct dh_node n;
	memset(&n, 0, sizeof(n));
	dh_init(&h);
	ck_assert_ptr_null(dh_top(&h));
	dh_remove(&h, &n); /* not in it: nothing happens */
	ck_assert_uint_eq(h.n, 0);
	ck_assert_int_eq(dh_linked(&n), 0);
	dh_free(&h);
}
END_TEST

START_TEST(pops_in_deadline_order)
{
	static const int64_t at[] = {50, 10, 40, 10, 30, 20, 60, 0};
	struct dh_node n[8];
	struct dheap h;
	memset(n, 0, sizeof(n));
	dh_init(&h);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(dh_set(&h, &n[i], at[i]), 0);
	check_heap(&h);
	int64_t last = -1;
	for (int i = 0; i < 8; i++) {
		struct dh_node *t = dh_top(&h);
		ck_assert_ptr_nonnull(t);
		ck_assert_int_ge(t->at, last);
		last = t->at;
		dh_remove(&h, t);
		ck_assert_int_eq(dh_linked(t), 0);
		check_heap(&h);
	}
	ck_assert_ptr_null(dh_top(&h));
	dh_free(&h);
}
END_TEST

START_TEST(move_earlier_and_later)
{
	struct dh_node a, b, c;
	struct dheap h;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&c, 0, sizeof(c));
	dh_init(&h);
	dh_set(&h, &a, 100);
	dh_set(&h, &b, 200);
	dh_set(&h, &c, 300);
	ck_assert_ptr_eq(dh_top(&h), &a);
	dh_set(&h, &c, 50); /* a lease shortened: due first now */
	ck_assert_ptr_eq(dh_top(&h), &c);
	dh_set(&h, &c, 400); /* renewed: due last */
	ck_assert_ptr_eq(dh_top(&h), &a);
	dh_set(&h, &a, 250);
	ck_assert_ptr_eq(dh_top(&h), &b);
	ck_assert_uint_eq(h.n, 3);
	check_heap(&h);
	dh_free(&h);
	ck_assert_int_eq(dh_linked(&a), 0);
}
END_TEST

/* Random sets, moves and removals against a plain array: the top is
 * always the earliest of the nodes in, and the heap holds exactly them. */
START_TEST(against_model)
{
	enum { N = 200, STEPS = 5000 };
	static struct dh_node n[N];
	static int in[N];
	struct dheap h;
	unsigned seed = 12345;
	memset(n, 0, sizeof(n));
	memset(in, 0, sizeof(in));
	dh_init(&h);
	for (int s = 0; s < STEPS; s++) {
		int i = (int)(rand_r(&seed) % N);
		if (rand_r(&seed) % 3 == 0) {
			dh_remove(&h, &n[i]);
			in[i] = 0;
		} else {
			ck_assert_int_eq(dh_set(&h, &n[i], (int64_t)(rand_r(&seed) % 1000)), 0);
			in[i] = 1;
		}
		size_t count = 0, wrong = 0;
		int64_t min = INT64_MAX;
		for (int k = 0; k < N; k++) {
			wrong += dh_linked(&n[k]) != in[k];
			if (in[k]) {
				count++;
				if (n[k].at < min)
					min = n[k].at;
			}
		}
		ck_assert_uint_eq(wrong, 0);
		ck_assert_uint_eq(h.n, count);
		if (count)
			ck_assert_int_eq(dh_top(&h)->at, min);
		if (s % 1000 == 0)
			check_heap(&h);
	}
	check_heap(&h);
	dh_free(&h);
}
END_TEST

Suite *dheap_suite(void)
{
	Suite *s = suite_create("dheap");
	TCase *tc = tcase_create("dheap");

	tcase_add_test(tc, empty_heap);
	tcase_add_test(tc, pops_in_deadline_order);
	tcase_add_test(tc, move_earlier_and_later);
	tcase_add_test(tc, against_model);
	suite_add_tcase(s, tc);
	return s;
}
