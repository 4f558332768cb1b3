/* Unit tests of the slab allocator (src/slab.c). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "slab.h"
#include "units.h"

START_TEST(objects_are_distinct_and_aligned)
{
	struct slab s;
	enum { N = 2000 };
	static unsigned char *p[N];
	slab_init(&s, 200);
	ck_assert_uint_eq(s.size, 208);
	for (int i = 0; i < N; i++) {
		p[i] = slab_alloc(&s);
		ck_assert_ptr_nonnull(p[i]);
		ck_assert_uint_eq((uintptr_t)p[i] % 16, 0);
		memset(p[i], i & 0xff, 200); /* the whole object is usable */
	}
	for (int i = 0; i < N; i++)
		for (int k = 0; k < 200; k++)
			if (p[i][k] != (i & 0xff))
				ck_abort_msg("object %d overlaps another", i);
	ck_assert_uint_eq(s.nobjs, N);
	ck_assert_uint_eq(s.all.len, (N + s.per_block - 1) / s.per_block);
	slab_destroy(&s);
	ck_assert_uint_eq(s.all.len, 0);
}
END_TEST

/* After a burst, the blocks empty out and go back, all but SLAB_SPARE. */
START_TEST(empty_blocks_go_back)
{
	struct slab s;
	enum { N = 5000 };
	static void *p[N];
	slab_init(&s, 240);
	for (int i = 0; i < N; i++)
		p[i] = slab_alloc(&s);
	size_t full = s.all.len;
	ck_assert_uint_gt(full, 10);
	for (int i = 0; i < N; i += 2) /* every other one: no block empties */
		slab_free(&s, p[i]);
	ck_assert_uint_eq(s.all.len, full);
	for (int i = 1; i < N; i += 2)
		slab_free(&s, p[i]);
	ck_assert_uint_eq(s.nobjs, 0);
	ck_assert_uint_eq(s.all.len, SLAB_SPARE); /* the spares */
	ck_assert_uint_eq(s.spare.len, SLAB_SPARE);
	/* Freed objects are reused before a new block is taken. */
	void *a = slab_alloc(&s);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq(s.all.len, SLAB_SPARE);
	slab_free(&s, a);
	slab_destroy(&s);
}
END_TEST

/* Random allocations and frees: the count is right, and no object is
 * handed out twice while in use. */
START_TEST(against_model)
{
	struct slab s;
	enum { N = 3000, STEPS = 40000 };
	static unsigned *p[N];
	unsigned seed = 7;
	memset(p, 0, sizeof(p));
	slab_init(&s, 64);
	size_t live = 0;
	for (int step = 0; step < STEPS; step++) {
		int i = (int)(rand_r(&seed) % N);
		if (p[i]) {
			ck_assert_uint_eq(p[i][1], (unsigned)i); /* nobody wrote over it */
			slab_free(&s, p[i]);
			p[i] = NULL;
			live--;
		} else {
			p[i] = slab_alloc(&s);
			ck_assert_ptr_nonnull(p[i]);
			p[i][1] = (unsigned)i;
			live++;
		}
		ck_assert_uint_eq(s.nobjs, live);
	}
	for (int i = 0; i < N; i++)
		if (p[i])
			ck_assert_uint_eq(p[i][1], (unsigned)i);
	slab_destroy(&s);
}
END_TEST

Suite *slab_suite(void)
{
	Suite *s = suite_create("slab");
	TCase *tc = tcase_create("slab");

	tcase_add_test(tc, objects_are_distinct_and_aligned);
	tcase_add_test(tc, empty_blocks_go_back);
	tcase_add_test(tc, against_model);
	suite_add_tcase(s, tc);
	return s;
}
