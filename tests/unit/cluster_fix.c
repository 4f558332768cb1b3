/* cluster_fix: what test_cluster.c and test_cluster_errors.c share:
 * recorded replies (tests/unit/fixtures/) read into redisReply trees
 * with hiredis' own reader, and a map's node for a slot. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_fix.h"

redisReply *cfx_resp(const char *buf, size_t n)
{
	redisReader *rd = redisReaderCreate();
	void *reply = NULL, *more = NULL;

	ck_assert_ptr_nonnull(rd);
	ck_assert_int_eq(redisReaderFeed(rd, buf, n), REDIS_OK);
	ck_assert_msg(redisReaderGetReply(rd, &reply) == REDIS_OK, "RESP: %s", rd->errstr);
	ck_assert_ptr_nonnull(reply);
	ck_assert_int_eq(redisReaderGetReply(rd, &more), REDIS_OK);
	ck_assert_ptr_null(more); /* exactly one reply */
	redisReaderFree(rd);
	return reply;
}

size_t cfx_slurp(const char *name, char *buf, size_t cap)
{
	const char *top = getenv("top_srcdir");
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/tests/unit/fixtures/%s", top ? top : ".", name);
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	n = fread(buf, 1, cap, f);
	ck_assert_msg(n < cap, "%s: too big", path);
	fclose(f);
	return n;
}

redisReply *cfx_fixture(const char *name)
{
	static char buf[8192];

	return cfx_resp(buf, cfx_slurp(name, buf, sizeof(buf)));
}

const struct csl_node *cfx_at(const struct csl_map *m, int slot)
{
	ck_assert_uint_ne(m->slot[slot], CSL_NO_NODE);
	return &m->nodes[m->slot[slot]];
}
