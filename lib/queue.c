/* queue: a liblockd client's buffers and its queue of requests
 * (private; see client_int.h): growing a byte buffer, the lines of one
 * reply (struct rstore), and the ring of requests sent and not answered
 * yet. No I/O, no callbacks. It is apart from client.c because
 * reconnect.c works on these too: with them here, reconnect.c sits below
 * client.c and uses nothing of it. */
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

/* ------------------------------------------------------------ buffers */

int cli_buf_reserve(struct buf *b, size_t more)
{
	if (b->cap - b->len >= more)
		return 0;
	if (b->off > 0) {
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->cap - b->len >= more)
			return 0;
	}
	size_t cap = b->cap ? b->cap : 1024;
	while (cap - b->len < more)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

int cli_rs_add(struct rstore *r, const char *line, size_t n)
{
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 256;
		while (cap < r->len + n + 1)
			cap *= 2;
		char *p = realloc(r->text, cap);
		if (!p)
			return -1;
		r->text = p;
		r->cap = cap;
	}
	if (r->n == r->ncap) {
		size_t ncap = r->ncap ? r->ncap * 2 : 8;
		size_t *o = realloc(r->offs, ncap * sizeof(*o));
		if (!o)
			return -1;
		r->offs = o;
		const char **l = realloc(r->lines, ncap * sizeof(*l));
		if (!l)
			return -1;
		r->lines = l;
		r->ncap = ncap;
	}
	memcpy(r->text + r->len, line, n);
	r->text[r->len + n] = '\0';
	r->offs[r->n++] = r->len;
	r->len += n + 1;
	return 0;
}

void cli_rs_free(struct rstore *r)
{
	free(r->text);
	free(r->offs);
	free(r->lines);
}

/* ------------------------------------------------------------ queue */

struct pend *cli_q_push(struct lockd_client *c)
{
	if (c->qlen == c->qcap) {
		size_t ncap = c->qcap ? c->qcap * 2 : 8;
		struct pend *nq = malloc(ncap * sizeof(*nq));
		if (!nq)
			return NULL;
		for (size_t i = 0; i < c->qlen; i++)
			nq[i] = *cli_q_at(c, i);
		free(c->q);
		c->q = nq;
		c->qcap = ncap;
		c->qhead = 0;
	}
	struct pend *p = &c->q[(c->qhead + c->qlen++) % c->qcap];
	memset(p, 0, sizeof(*p));
	return p;
}

/* What the counts of the client say of entry p, which leaves the queue. */
static void uncount(struct lockd_client *c, const struct pend *p)
{
	if (cli_is_internal(p->who))
		c->nint--;
	if (p->who == W_HELD)
		c->nheld--;
}

/* Drop the head (its key is the caller's to free). */
void cli_q_pop(struct lockd_client *c)
{
	uncount(c, cli_q_at(c, 0));
	c->qhead = (c->qhead + 1) % c->qcap;
	c->qlen--;
}

/* A new entry before every other (the AUTH and RESUME of a reconnection). */
struct pend *cli_q_push_front(struct lockd_client *c)
{
	if (!cli_q_push(c))
		return NULL;
	c->qlen--; /* cli_q_push made room; take the slot before the head instead */
	c->qhead = (c->qhead + c->qcap - 1) % c->qcap;
	c->qlen++;
	struct pend *p = cli_q_at(c, 0);
	memset(p, 0, sizeof(*p));
	return p;
}
