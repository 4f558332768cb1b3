/* libFuzzer target: the request parser must never crash, read out of
 * bounds, or accept a request that breaks the protocol's rules.
 * Build: see tests/fuzz/run.sh (not part of make check: needs clang). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* p[0..n) is a non-empty part of line[0..size). */
static int in_line(const char *line, size_t size, const char *p, size_t n)
{
	return n >= 1 && p >= line && p + n <= line + size;
}

/* A word: no blank (the tokens' separators), no NUL (refused). */
static int blank_free(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == ' ' || p[i] == '\t' || p[i] == '\0')
			return 0;
	return 1;
}

/* LOCKALL n key1 ... keyn (1.4): 1..4 keys, each a valid key inside the
 * keys' span of the line, all different; options within their ranges. */
static void check_lockall(const char *line, size_t size, const struct request *r)
{
	const char *k[5], *p;
	size_t kl[5], pos = 0, n = 0, pl;
	if (r->key || r->nkeys < 1 || r->nkeys > 4 || !in_line(line, size, r->keys, r->keys_len))
		abort();
	while (proto_next_key(r, &pos, &p, &pl)) {
		if (n == 4 || pl > 16 || !in_line(r->keys, r->keys_len, p, pl))
			abort();
		for (size_t i = 0; i < pl; i++)
			if ((unsigned char)p[i] < 0x21 || (unsigned char)p[i] > 0x7e)
				abort();
		for (size_t j = 0; j < n; j++)
			if (kl[j] == pl && memcmp(k[j], p, pl) == 0)
				abort(); /* a repeat was accepted */
		k[n] = p;
		kl[n++] = pl;
	}
	if (n != r->nkeys || r->permits || r->shared || r->word)
		abort();
	if ((r->has_ttl && (r->ttl_ms < 1 || r->ttl_ms > PROTO_MS_MAX)) ||
	    r->wait_ms > PROTO_MS_MAX || r->delay_ms > PROTO_MS_MAX)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct request r;
	const char *msg = NULL;
	/* A copy of exactly size bytes, so ASan sees any read past the end. */
	char *line = malloc(size ? size : 1);
	if (!line)
		return 0;
	memcpy(line, data, size);
	struct proto_limits lim = {16, 1024, 4}; /* a small limits.max_keys, within reach */
	enum proto_err e = proto_parse_ex(line, size, &lim, &r, &msg);
	/* DELAY ms (1.4): LOCK, TRYLOCK, LOCKALL and CAMPAIGN only, 0 to
	 * 2^31-1, and nothing without it */
	if (e == PE_NONE && (r.has_delay ? (r.cmd != CMD_LOCK && r.cmd != CMD_TRYLOCK &&
	                                    r.cmd != CMD_LOCKALL && r.cmd != CMD_CAMPAIGN) ||
	                                       r.delay_ms > PROTO_MS_MAX
	                                 : r.delay_ms != 0))
		abort();
	if (e != PE_NONE) {
		if (!msg || !*msg)
			abort(); /* every error has a message */
	} else if (r.cmd == CMD_LOCKALL) {
		check_lockall(line, size, &r);
	} else if (r.cmd == CMD_RESUME) {
		/* RESUME id secret: two words of the line, not checked as keys
		 * (resume.c refuses a malformed one as it refuses an unknown one) */
		if (!r.key || !r.word || !in_line(line, size, r.key, r.klen) ||
		    !in_line(line, size, r.word, r.wlen) || r.key + r.klen > r.word)
			abort();
		if (!blank_free(r.key, r.klen) || !blank_free(r.word, r.wlen))
			abort();
	} else if (r.cmd == CMD_SESSION) {
		if (r.key || (r.has_grace && r.grace_ms < 1) || r.grace_ms > PROTO_MS_MAX)
			abort();
	} else if (r.cmd == CMD_WHO && (!r.key || r.word || r.has_wait || r.has_ttl || r.shared ||
	                                r.permits || r.has_grace)) {
		abort(); /* WHO key (1.4): a key and nothing else */
	} else if (r.key) {
		/* A parsed key is 1..16 printable bytes inside the line. */
		if (r.klen < 1 || r.klen > 16 || r.key < line || r.key + r.klen > line + size)
			abort();
		for (size_t i = 0; i < r.klen; i++)
			if ((unsigned char)r.key[i] < 0x21 || (unsigned char)r.key[i] > 0x7e)
				abort();
		if (r.has_ttl && (r.ttl_ms < 1 || r.ttl_ms > PROTO_MS_MAX))
			abort();
		if (r.has_wait && r.wait_ms > PROTO_MS_MAX)
			abort();
	}
	free(line);
	return 0;
}
