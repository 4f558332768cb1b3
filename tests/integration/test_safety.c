/* safety: see tc_safety below. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TCase *tc_safety(void)
{
	TCase *tc = tcase_create("safety");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 60);
	return tc;
}
