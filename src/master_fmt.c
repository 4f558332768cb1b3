/* master_fmt: the wire side of a master's requests (master.c): the RESP of
 * a command, a script call or a batch of script calls. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "master_int.h"
#include "scripts.h"

/* The RESP of the command being sent: hiredis copies it into its own
 * buffer (redisAsyncFormattedCommand), so one buffer serves every call,
 * and a script call is never formatted by printf-like code. */
static char *fbuf;
static size_t fcap, flen;

static void f_room(size_t n)
{
	if (flen + n <= fcap)
		return;
	size_t cap = fcap ? fcap : 4096;
	while (cap < flen + n)
		cap *= 2;
	char *p = realloc(fbuf, cap);
	if (!p)
		abort();
	fbuf = p;
	fcap = cap;
}

/* Append c followed by the decimal n and CRLF ("*3\r\n", "$5\r\n"). */
static void f_num(char c, size_t n)
{
	char tmp[24];
	int i = (int)sizeof(tmp);
	tmp[--i] = '\n';
	tmp[--i] = '\r';
	do
		tmp[--i] = (char)('0' + n % 10);
	while ((n /= 10) && i > 1);
	tmp[--i] = c;
	memcpy(fbuf + flen, tmp + i, sizeof(tmp) - (size_t)i);
	flen += sizeof(tmp) - (size_t)i;
}

/* One bulk string; room for its header (at most 24 bytes) is made here. */
static void f_arg(const char *p, size_t n)
{
	f_room(n + 24 + 2);
	if (n < 10) { /* most arguments are short: no division */
		memcpy(fbuf + flen, "$0\r\n", 4);
		fbuf[flen + 1] = (char)('0' + n);
		flen += 4;
	} else {
		f_num('$', n);
	}
	memcpy(fbuf + flen, p, n);
	memcpy(fbuf + flen + n, "\r\n", 2);
	flen += n + 2;
}

/* Format r (a command, a script call, or a batch of script calls: their
 * keys one after another, then their arguments) into fbuf. */
static void format_req(const struct mreq *r, int use_eval)
{
	flen = 0;
	f_room(24);
	if (r->script < 0) {
		f_num('*', (size_t)r->argc);
		for (int i = 0; i < r->argc; i++)
			f_arg(r->argv[i], r->argvlen[i]);
		return;
	}
	const char *sha = script_sha((enum script_id)r->script);
	const char *body = script_body((enum script_id)r->script);
	if (!sha)
		use_eval = 1;
	const char *a0 = use_eval ? "EVAL" : "EVALSHA", *a1 = use_eval ? body : sha;
	if (!r->items) {
		f_num('*', (size_t)r->argc);
		f_arg(a0, strlen(a0));
		f_arg(a1, strlen(a1));
		for (int i = 2; i < r->argc; i++)
			f_arg(r->argv[i], r->argvlen[i]);
		return;
	}
	/* The shared keys and arguments (scripts.h) once, the first call's:
	 * master.c joins only calls whose shared ones are equal. */
	const struct mreq *first = r->items;
	struct script_shared sh = script_shared_of((enum script_id)first->script);
	size_t keys = (size_t)sh.keys, args = (size_t)sh.args;
	for (const struct mreq *it = first; it; it = it->item_next) {
		keys += it->nkeys - (size_t)sh.keys;
		args += (size_t)it->argc - 3 - it->nkeys - (size_t)sh.args;
	}
	char nk[24];
	int nkl = snprintf(nk, sizeof(nk), "%zu", keys);
	f_num('*', 3 + keys + args);
	f_arg(a0, strlen(a0));
	f_arg(a1, strlen(a1));
	f_arg(nk, (size_t)nkl);
	for (size_t i = 3; i < 3 + (size_t)sh.keys; i++)
		f_arg(first->argv[i], first->argvlen[i]);
	for (const struct mreq *it = first; it; it = it->item_next)
		for (size_t i = 3 + (size_t)sh.keys; i < 3 + it->nkeys; i++)
			f_arg(it->argv[i], it->argvlen[i]);
	for (size_t i = 3 + first->nkeys; i < 3 + first->nkeys + (size_t)sh.args; i++)
		f_arg(first->argv[i], first->argvlen[i]);
	for (const struct mreq *it = first; it; it = it->item_next)
		for (size_t i = 3 + it->nkeys + (size_t)sh.args; i < (size_t)it->argc; i++)
			f_arg(it->argv[i], it->argvlen[i]);
}

int mfmt_same_shared(const struct mreq *a, const struct mreq *b)
{
	struct script_shared sh = script_shared_of((enum script_id)a->script);
	if (a->script != b->script || a->nkeys != b->nkeys)
		return 0;
	for (size_t k = 0; k < 2; k++) {
		size_t from = 3 + (k ? a->nkeys : 0), n = (size_t)(k ? sh.args : sh.keys);
		for (size_t i = from; i < from + n; i++)
			if (a->argvlen[i] != b->argvlen[i] ||
			    (a->argv[i] != b->argv[i] &&
			     memcmp(a->argv[i], b->argv[i], a->argvlen[i]) != 0))
				return 0;
	}
	return 1;
}

const char *mfmt_req(const struct mreq *r, int use_eval, size_t *len)
{
	format_req(r, use_eval);
	*len = flen;
	return fbuf;
}

void mfmt_free(void)
{
	free(fbuf);
	fbuf = NULL;
	fcap = flen = 0;
}
