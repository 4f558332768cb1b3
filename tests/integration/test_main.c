/* test_lockd: end-to-end tests of lockd against real redis-server masters.
 *
 * Environment: top_builddir (where lockd is built), REDIS_SERVER (path to
 * redis-server; empty: redis-server from PATH; none found: exit 77, skip).
 * LOCKD_TEST=name1,name2 runs only those tests; LOCKD_TEST_KEEP=1 keeps
 * the directories; LOCKD_TEST_TAP=FILE also writes TAP output;
 * CK_VERBOSITY, CK_FORK, CK_TIMEOUT_MULTIPLIER work as check documents. */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

int main(void)
{
	if (h_run_init() != 0)
		return 99;
	if (!h_redis_server()[0]) {
		const char *rs = getenv("REDIS_SERVER");
		fprintf(stderr, "test_lockd: redis-server not found (REDIS_SERVER=%s): skipped\n",
		        rs ? rs : "");
		h_run_finish(0);
		return 77;
	}
	Suite *s = suite_create("lockd");
	suite_add_tcase(s, tc_harness());
	suite_add_tcase(s, tc_protocol());
	suite_add_tcase(s, tc_errors());
	suite_add_tcase(s, tc_locks());
	suite_add_tcase(s, tc_waiters());
	suite_add_tcase(s, tc_faults());
	suite_add_tcase(s, tc_service());
	suite_add_tcase(s, tc_safety());
	suite_add_tcase(s, tc_restarts());
	suite_add_tcase(s, tc_hostile());
	suite_add_tcase(s, tc_lockctl());
	suite_add_tcase(s, tc_lockctl_resume());
	suite_add_tcase(s, tc_shared());
	suite_add_tcase(s, tc_sessions());
	suite_add_tcase(s, tc_adopt_fence());
	suite_add_tcase(s, tc_resume_moves());
	suite_add_tcase(s, tc_hostile_sessions());
	suite_add_tcase(s, tc_sentinel());
	suite_add_tcase(s, tc_hostile_output());
	suite_add_tcase(s, tc_late_writes());
	suite_add_tcase(s, tc_soak());
	suite_add_tcase(s, tc_election());
	suite_add_tcase(s, tc_lockctl_elect());
	suite_add_tcase(s, tc_hostile_elect());
	suite_add_tcase(s, tc_who());
	suite_add_tcase(s, tc_lockall());
	suite_add_tcase(s, tc_delay());
	suite_add_tcase(s, tc_cluster_live());
	suite_add_tcase(s, tc_cluster_router());
	suite_add_tcase(s, tc_cluster_events());
	suite_add_tcase(s, tc_cluster_scripts());
	suite_add_tcase(s, tc_cluster_master());
	suite_add_tcase(s, tc_cluster_lockd());
	suite_add_tcase(s, tc_cluster_handoff());
	suite_add_tcase(s, tc_upgrade());
	suite_add_tcase(s, tc_layout_switch());

	SRunner *sr = srunner_create(s);
	const char *tap = getenv("LOCKD_TEST_TAP");
	if (tap && *tap)
		srunner_set_tap(sr, tap);
	srunner_run_all(sr, getenv("CK_VERBOSITY") ? CK_ENV : CK_VERBOSE);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	h_run_finish(failed);
	return failed ? 1 : 0;
}
