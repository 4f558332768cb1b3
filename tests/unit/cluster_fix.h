/* cluster_fix: helpers of the cluster tests (test_cluster.c,
 * test_cluster_errors.c): replies from RESP, and the recorded cluster. */
#ifndef LOCKD_TESTS_CLUSTER_FIX_H
#define LOCKD_TESTS_CLUSTER_FIX_H

#include <stddef.h>

#include <check.h>
#include <hiredis/hiredis.h>

#include "cluster.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The node ids of the recorded cluster (fixtures/README.md) */
#define ID_37101 "264f370be113ca5f4424065f60f7f06011794ec4"
#define ID_37102 "243d9872c1f0629d9a63c40ffa13fa10ffe30573"
#define ID_37103 "ed1d6c5602933f914dd1411c343306a51b6fd64c"
#define ID_37104 "dd2fcd0a67b439c28d611c20e9727779b76573c1"
#define ID_37106 "483f81d862fa79d8020f1eaf6fa07e07eaa1ed7f"

/* The one RESP reply in buf, parsed by hiredis' redisReader. */
redisReply *cfx_resp(const char *buf, size_t n);
/* Read tests/unit/fixtures/<name> (under $top_srcdir, else .) into buf. */
size_t cfx_slurp(const char *name, char *buf, size_t cap);
/* The reply recorded in fixtures/<name>. */
redisReply *cfx_fixture(const char *name);
/* The primary serving slot (which must have one). */
const struct csl_node *cfx_at(const struct csl_map *m, int slot);

#endif
