/* The unit tests: pure modules (parser, config, quorum arithmetic, queues,
 * hash table, utilities, the Redis Cluster router's core on recorded
 * replies) and locktab against a fake redlock: no network, no Redis.
 *
 * CK_VERBOSITY, CK_FORK, CK_RUN_SUITE, CK_RUN_CASE, CK_TAP_LOG_FILE_NAME
 * work as check documents them. */
#include "config.h"

#include <stdlib.h>

#include "units.h"

int main(void)
{
	SRunner *sr = srunner_create(proto_suite());
	int failed;

	srunner_add_suite(sr, util_suite());
	srunner_add_suite(sr, cfg_suite());
	srunner_add_suite(sr, quorum_suite());
	srunner_add_suite(sr, ilist_suite());
	srunner_add_suite(sr, dheap_suite());
	srunner_add_suite(sr, slab_suite());
	srunner_add_suite(sr, keytab_suite());
	srunner_add_suite(sr, locktab_suite());
	srunner_add_suite(sr, locktab_shared_suite());
	srunner_add_suite(sr, lockall_suite());
	srunner_add_suite(sr, client_suite());
	srunner_add_suite(sr, client_api_suite());
	srunner_add_suite(sr, client_resume_suite());
	srunner_add_suite(sr, client_tls_suite());
	srunner_add_suite(sr, reply_suite());
	srunner_add_suite(sr, master_repl_suite());
	srunner_add_suite(sr, sha1_suite());
	srunner_add_suite(sr, cluster_suite());
	srunner_add_suite(sr, cluster_errors_suite());
	srunner_add_suite(sr, ktag_suite());
	srunner_add_suite(sr, ckey_suite());
	srunner_add_suite(sr, csl_router_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
