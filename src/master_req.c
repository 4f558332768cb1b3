/* master_req: where a master's requests (struct mreq, master_int.h) come
 * from. Apart from master.c so that master_repl.c, which makes WAITs and
 * answers the writes they follow, takes them from below both instead of
 * calling back into master.c. Requests come from a slab: no malloc per
 * request, and a burst's leave no holes in the heap (slab.h). */
#include "config.h"

#include <string.h>

#include "master_int.h"
#include "slab.h"

static struct slab req_slab;

struct mreq *mreq_get(void)
{
	if (!req_slab.size)
		slab_init(&req_slab, sizeof(struct mreq));
	struct mreq *r = slab_alloc(&req_slab);
	if (r)
		memset(r, 0, sizeof(*r));
	return r;
}

void mreq_put(struct mreq *r)
{
	slab_free(&req_slab, r);
}

void mreq_destroy(void)
{
	slab_destroy(&req_slab);
}
