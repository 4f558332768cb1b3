/* Unit tests of src/ktag.c: every slot has a tag whose slot it is, and a
 * name tagged with its tag lands in the name's own slot whatever braces
 * the name holds. The slots themselves are csl_keyslot's, which
 * test_cluster.c and the live cluster test check against CLUSTER KEYSLOT. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "ktag.h"
#include "units.h"

START_TEST(ktag_every_slot)
{
	ck_assert_int_eq(ktag_init(), 0);
	ck_assert_int_eq(ktag_init(), 0); /* once is enough; again changes nothing */
	int longest = 0;
	for (unsigned s = 0; s < KTAG_SLOTS; s++) {
		const char *t = ktag_of_slot(s);
		size_t n = strlen(t);
		ck_assert_msg(n >= 1 && n <= KTAG_LEN_MAX, "slot %u: tag '%s'", s, t);
		ck_assert_msg(strspn(t, KTAG_ALPHABET) == n,
		              "slot %u: tag '%s' outside the alphabet", s, t);
		ck_assert_msg(csl_keyslot(t, n) == s, "slot %u: tag '%s' is of slot %u", s, t,
		              csl_keyslot(t, n));
		if ((int)n > longest)
			longest = (int)n;
	}
	/* 62^3 strings cover the 16384 slots: no tag needs 4 characters */
	ck_assert_int_eq(longest, 3);
}
END_TEST

/* The names are written on the masters: these tags are part of the
 * layout, and a change here is a change of layout (ktag.h). */
START_TEST(ktag_pinned)
{
	ck_assert_int_eq(ktag_init(), 0);
	ck_assert_str_eq(ktag_of_slot(csl_keyslot("0", 1)), "0"); /* shortest first */
	ck_assert_str_eq(ktag_of_slot(csl_keyslot("Z", 1)), "Z");
	ck_assert_str_eq(ktag_of_slot(0), "06S");
	ck_assert_str_eq(ktag_of_slot(1), "Qi");
	ck_assert_str_eq(ktag_of_slot(12182), "9Le"); /* CLUSTER KEYSLOT foo */
	ck_assert_str_eq(ktag_of_slot(16383), "6ZJ");
}
END_TEST

/* "{T}" before any name puts it in the slot the name has alone, hash tags
 * of its own and broken braces included. */
START_TEST(ktag_names_keep_their_slot)
{
	static const char *const fixed[] = {
	    "",     "a",      "{",   "}",     "{}",      "}{",           "{a}",          "{a}b",
	    "b{a}", "{a}{b}", "{}a", "a{}",   "{{a}}",   "{a{b}c}",      "a{b",          "a}b{c}",
	    "{ }",  "{\xff}", "a}b", "{a}b}", "order-7", "{order-7}pay", "{order-7}ship"};
	static const char *const suffix[] = {"", " fence", " permit 3", " shared"};
	ck_assert_int_eq(ktag_init(), 0);
	char name[64], key[160];
	int nfixed = (int)(sizeof(fixed) / sizeof(fixed[0]));
	for (int k = 0; k < nfixed + 2000; k++) {
		const char *nm = name;
		size_t len;
		if (k < nfixed) {
			nm = fixed[k];
			len = strlen(nm);
		} else {
			unsigned v = (unsigned)k * 2654435761u;
			len =
			    (size_t)snprintf(name, sizeof(name), "%s%u%s", v % 3 == 0 ? "{" : "", v,
			                     v % 5 == 0   ? "}x"
			                     : v % 7 == 0 ? "{"
			                                  : "");
		}
		unsigned want = csl_keyslot(nm, len);
		for (int x = 0; x < 4; x++) {
			size_t n = ktag_brace(key, sizeof(key), nm, len);
			ck_assert_int_ge(n, 3);
			n += (size_t)snprintf(key + n, sizeof(key) - n, "lockd: ");
			memcpy(key + n, nm, len);
			n += len;
			n += (size_t)snprintf(key + n, sizeof(key) - n, "%s", suffix[x]);
			ck_assert_msg(csl_keyslot(key, n) == want,
			              "\"%.*s\": slot %u, its name's %u", (int)n, key,
			              csl_keyslot(key, n), want);
		}
	}
}
END_TEST

START_TEST(ktag_brace_small_buffer)
{
	ck_assert_int_eq(ktag_init(), 0);
	char out[8];
	memset(out, 'x', sizeof(out));
	const char *t = ktag_of_slot(csl_keyslot("k", 1));
	size_t need = strlen(t) + 3;
	ck_assert_uint_eq(ktag_brace(out, need - 1, "k", 1), 0);
	ck_assert_str_eq(out, "");
	ck_assert_uint_eq(ktag_brace(out, 0, "k", 1), 0);
	ck_assert_uint_eq(ktag_brace(out, need, "k", 1), need - 1);
	ck_assert_int_eq(out[0], '{');
	ck_assert_int_eq(out[need - 2], '}');
	ck_assert_int_eq(out[need - 1], '\0');
}
END_TEST

Suite *ktag_suite(void)
{
	Suite *s = suite_create("ktag");
	TCase *tc = tcase_create("ktag");
	tcase_add_test(tc, ktag_every_slot);
	tcase_add_test(tc, ktag_pinned);
	tcase_add_test(tc, ktag_names_keep_their_slot);
	tcase_add_test(tc, ktag_brace_small_buffer);
	suite_add_tcase(s, tc);
	return s;
}
