/* Unit tests of the intrusive FIFO (src/ilist.h). */
#include "config.h"

#include <string.h>

#include "ilist.h"
#include "units.h"

struct waiter {
	int id;
	struct ilink link;
};

static void init_waiters(struct waiter *w, int n)
{
	memset(w, 0, sizeof(*w) * (size_t)n);
	for (int i = 0; i < n; i++)
		w[i].id = i;
}

static int pop_id(struct ilist *q)
{
	struct ilink *l = ilist_pop(q);
	return l ? ilist_entry(l, struct waiter, link)->id : -1;
}

START_TEST(empty)
{
	struct ilist q;
	ilist_init(&q);
	ck_assert_uint_eq(q.len, 0);
	ck_assert_ptr_null(ilist_first(&q));
	ck_assert_ptr_null(ilist_pop(&q));
	ck_assert_uint_eq(q.len, 0);
}
END_TEST

START_TEST(fifo_order)
{
	struct ilist q;
	struct waiter w[5];

	ilist_init(&q);
	init_waiters(w, 5);
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(ilink_linked(&w[i].link), 0);
		ilist_push(&q, &w[i].link);
		ck_assert_int_eq(ilink_linked(&w[i].link), 1);
		ck_assert_uint_eq(q.len, (size_t)i + 1);
	}
	ck_assert_ptr_eq(ilist_first(&q), &w[0].link);
	ck_assert_ptr_eq(ilist_entry(ilist_first(&q), struct waiter, link), &w[0]);
	ck_assert_uint_eq(q.len, 5); /* first does not remove */
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(pop_id(&q), i);
		ck_assert_int_eq(ilink_linked(&w[i].link), 0);
		ck_assert_uint_eq(q.len, 4 - (size_t)i);
	}
	ck_assert_int_eq(pop_id(&q), -1);
}
END_TEST

START_TEST(remove_middle_head_tail)
{
	struct ilist q;
	struct waiter w[5];

	ilist_init(&q);
	init_waiters(w, 5);
	for (int i = 0; i < 5; i++)
		ilist_push(&q, &w[i].link);

	ilist_remove(&q, &w[2].link); /* middle */
	ck_assert_uint_eq(q.len, 4);
	ck_assert_int_eq(ilink_linked(&w[2].link), 0);
	ck_assert_ptr_null(w[2].link.prev);
	ck_assert_ptr_null(w[2].link.next);
	ilist_remove(&q, &w[0].link); /* head */
	ck_assert_uint_eq(q.len, 3);
	ck_assert_ptr_eq(ilist_first(&q), &w[1].link);
	ilist_remove(&q, &w[4].link); /* tail */
	ck_assert_uint_eq(q.len, 2);

	/* A push after removing the tail goes behind the new tail. */
	ilist_push(&q, &w[2].link);
	ck_assert_int_eq(pop_id(&q), 1);
	ck_assert_int_eq(pop_id(&q), 3);
	ck_assert_int_eq(pop_id(&q), 2);
	ck_assert_int_eq(pop_id(&q), -1);
	ck_assert_uint_eq(q.len, 0);
}
END_TEST

START_TEST(double_remove_is_noop)
{
	struct ilist q;
	struct waiter w[3];

	ilist_init(&q);
	init_waiters(w, 3);
	for (int i = 0; i < 3; i++)
		ilist_push(&q, &w[i].link);
	ilist_remove(&q, &w[1].link);
	ilist_remove(&q, &w[1].link);
	ck_assert_uint_eq(q.len, 2);
	/* removing a never queued link is a no-op too */
	struct waiter other = {.id = 9};
	ilist_remove(&q, &other.link);
	ck_assert_uint_eq(q.len, 2);
	/* removing a popped link is a no-op */
	ck_assert_int_eq(pop_id(&q), 0);
	ilist_remove(&q, &w[0].link);
	ck_assert_uint_eq(q.len, 1);
	ck_assert_int_eq(pop_id(&q), 2);
	ck_assert_int_eq(pop_id(&q), -1);
	ck_assert_uint_eq(q.len, 0);
}
END_TEST

START_TEST(remove_only_element)
{
	struct ilist q;
	struct waiter w[1];

	ilist_init(&q);
	init_waiters(w, 1);
	ilist_push(&q, &w[0].link);
	ilist_remove(&q, &w[0].link);
	ck_assert_uint_eq(q.len, 0);
	ck_assert_ptr_null(ilist_first(&q));
	/* the sentinel is sound again: push and pop still work */
	ilist_push(&q, &w[0].link);
	ck_assert_int_eq(pop_id(&q), 0);
	ck_assert_ptr_eq(q.head.next, &q.head);
	ck_assert_ptr_eq(q.head.prev, &q.head);
}
END_TEST

/* Many pushes and removals in a pattern, checked against an array model. */
START_TEST(against_model)
{
	enum { N = 200 };
	struct ilist q;
	struct waiter w[N];
	int model[N], mlen = 0;

	ilist_init(&q);
	init_waiters(w, N);
	for (int i = 0; i < N; i++) {
		ilist_push(&q, &w[i].link);
		model[mlen++] = i;
		if (i % 3 == 2) { /* remove the one pushed two steps ago */
			ilist_remove(&q, &w[i - 2].link);
			for (int j = 0; j < mlen; j++)
				if (model[j] == i - 2) {
					memmove(&model[j], &model[j + 1],
					        sizeof(int) * (size_t)(mlen - j - 1));
					mlen--;
					break;
				}
		}
		if (i % 7 == 6) { /* pop the head */
			ck_assert_int_eq(pop_id(&q), model[0]);
			memmove(&model[0], &model[1], sizeof(int) * (size_t)(mlen - 1));
			mlen--;
		}
		ck_assert_uint_eq(q.len, (size_t)mlen);
	}
	for (int j = 0; j < mlen; j++)
		ck_assert_int_eq(pop_id(&q), model[j]);
	ck_assert_int_eq(pop_id(&q), -1);
}
END_TEST

/* Two queues: a link moves from one to the other. */
START_TEST(move_between_queues)
{
	struct ilist a, b;
	struct waiter w[2];

	ilist_init(&a);
	ilist_init(&b);
	init_waiters(w, 2);
	ilist_push(&a, &w[0].link);
	ilist_push(&a, &w[1].link);
	ilist_remove(&a, &w[0].link);
	ilist_push(&b, &w[0].link);
	ck_assert_uint_eq(a.len, 1);
	ck_assert_uint_eq(b.len, 1);
	ck_assert_int_eq(pop_id(&a), 1);
	ck_assert_int_eq(pop_id(&b), 0);
}
END_TEST

Suite *ilist_suite(void)
{
	Suite *s = suite_create("ilist");
	TCase *tc = tcase_create("ilist");

	tcase_add_test(tc, empty);
	tcase_add_test(tc, fifo_order);
	tcase_add_test(tc, remove_middle_head_tail);
	tcase_add_test(tc, double_remove_is_noop);
	tcase_add_test(tc, remove_only_element);
	tcase_add_test(tc, against_model);
	tcase_add_test(tc, move_between_queues);
	suite_add_tcase(s, tc);
	return s;
}
