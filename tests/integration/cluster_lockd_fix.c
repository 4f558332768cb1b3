/* cluster_lockd_fix: what the tests of lockd on a Redis Cluster share
 * (test_cluster_lockd.c, test_cluster_handoff.c): two lockd whose only
 * master is the cluster of router_fix.h's C, and where a lock's key is. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "cluster_lockd_fix.h"
#include "harness.h"
#include "ktag.h"
#include "router_fix.h"

/* Two lockd on the cluster C (started), with lease ms and redis_extra
 * lines; 0, or -1 (skip) without redis-cli. */
int start_two_with(int lease, const char *extra)
{
	if (h_cluster_start(&C, 3, 1) < 0) {
		fprintf(stderr, "%s: no redis-cli: skipped\n", tcase_name());
		return -1;
	}
	ck_assert_int_eq(ktag_init(), 0);
	char entry[128];
	snprintf(entry, sizeof(entry), "{cluster: [\"127.0.0.1:%d\", \"127.0.0.1:%d\"]}",
	         port_of(0), port_of(1));
	char redis[256];
	snprintf(redis, sizeof(redis), "%s", extra);
	struct h_opts o = {.lease_ms = lease, .masters = entry, .redis_extra = redis};
	h_lockd_start(&o);
	h_lockd_start(&o);
	return 0;
}

/* The cluster's name of lock name's key ("{T}lockd:NAME", doc/cluster.md). */
void key_of(const char *name, char *out, size_t len)
{
	snprintf(out, len, "{%s}lockd:%s", ktag_of_slot(csl_keyslot(name, strlen(name))), name);
}

/* The node (index from C.first) that serves name's key: the primary whose
 * GET is not a MOVED; -1 if none. */
int primary_of(const char *name)
{
	char key[160];
	key_of(name, key, sizeof(key));
	for (int i = 0; i < C.n; i++) {
		if (!is_master(i))
			continue;
		char *v = h_redis(C.first + i, "GET", key, NULL);
		int here = v && strncmp(v, "-MOVED", 6) != 0;
		free(v);
		if (here)
			return i;
	}
	return -1;
}

long long pttl_on(int i, const char *name)
{
	char key[160];
	key_of(name, key, sizeof(key));
	return h_redis_int(C.first + i, "PTTL", key, NULL);
}
