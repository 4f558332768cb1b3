/* cluster_lockd_fix: what the tests of lockd on a Redis Cluster share
 * (test_cluster_lockd.c, test_cluster_handoff.c). */
#ifndef LOCKD_TEST_CLUSTER_LOCKD_FIX_H
#define LOCKD_TEST_CLUSTER_LOCKD_FIX_H

#include <stddef.h>

/* A cluster of 3 primaries and 3 replicas (router_fix.h's C) and two
 * lockd whose only master it is, with lease ms and redis_extra lines;
 * 0, or -1 (skip the test) without redis-cli. */
int start_two_with(int lease, const char *extra);
/* The cluster's name of lock name's key ("{T}lockd:NAME", doc/cluster.md). */
void key_of(const char *name, char *out, size_t len);
/* The node (index from C.first) that serves name's key: the primary whose
 * GET is not a MOVED; -1 if none. */
int primary_of(const char *name);
/* PTTL of name's key on node i. */
long long pttl_on(int i, const char *name);

#endif
