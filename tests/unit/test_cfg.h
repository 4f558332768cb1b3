/* test_cfg: what the files of the "cfg" suite share: test_cfg.c builds
 * the suite, test_cfg_errors.c and test_cfg_secrets.c give it a TCase
 * each. */
#ifndef LOCKD_TESTS_TEST_CFG_H
#define LOCKD_TESTS_TEST_CFG_H

#include <check.h>
#include <string.h>

#include "cfg.h"

#define ERRLEN 512

static inline int load(struct config *c, const char *text, char *err)
{
	err[0] = '\0';
	return cfg_load_string(c, "t.yml", text, strlen(text), err, ERRLEN);
}

/* test_cfg.c: c holds exactly what cfg_defaults gives; every key, none at
 * its default. */
void assert_defaults(const struct config *c);
extern const char full_yaml[];

TCase *cfg_errors_tcase(void);  /* test_cfg_errors.c */
TCase *cfg_secrets_tcase(void); /* test_cfg_secrets.c */

#endif
