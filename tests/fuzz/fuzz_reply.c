/* libFuzzer target: liblockd's pure parser (lib/reply.c) must never
 * crash or read out of bounds on whatever lockd might send, and its
 * verdicts must keep their promises: a parsed reply's fields lie inside
 * its line, an event's words inside its copy, and a key that
 * rp_check_key() accepts makes typed request lines that lockd's own
 * parser (src/proto.c) reads back as that key.
 * Build: see tests/fuzz/run.sh (not part of make check: needs clang). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "reply.h"

#define MAX_LINE 64
#define MAX_KEY  32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(const char *p, const char *base, size_t n)
{
	return p >= base && p <= base + n;
}

/* One received line that rp_frame() passed: n bytes, NUL-terminated. */
static void one_line(const char *line, size_t n, int list, int in_list)
{
	if (strlen(line) != n)
		abort(); /* RP_FRAME_OK promised no NUL byte */
	if (rp_is_event(line)) {
		char *words = malloc(n + 1);
		if (!words)
			return;
		memcpy(words, line, n + 1);
		struct lockd_event ev;
		rp_event(&ev, line, words, in_list);
		int known = strcmp(ev.name, "LOST") == 0 || strcmp(ev.name, "ELECTED") == 0 ||
		            strcmp(ev.name, "NOLEADER") == 0;
		if (ev.line != line || !known || (*ev.key && !inside(ev.key, words, n)) ||
		    !ev.value || (*ev.value && !inside(ev.value, words, n)))
			abort();
		free(words);
		return;
	}
	(void)rp_more(line, list, in_list);
	struct lockd_reply r;
	rp_classify(&r, line, list);
	if (r.kind < LOCKD_R_OK || r.kind > LOCKD_R_NONE)
		abort();
	if (memchr(r.code, '\0', sizeof(r.code)) == NULL)
		abort();
	if (*r.text && !inside(r.text, line, n))
		abort();
	if (r.has_num && r.kind != LOCKD_R_OK && r.kind != LOCKD_R_HELD && r.kind != LOCKD_R_LEADER)
		abort();
	if (list && r.kind != LOCKD_R_LIST && r.kind != LOCKD_R_ERR)
		abort();
}

/* The input as a key: if accepted, every typed line is lockd's request
 * for exactly that key. */
static void as_key(const uint8_t *data, size_t size)
{
	char *key = malloc(size + 1);
	if (!key)
		return;
	memcpy(key, data, size);
	key[size] = '\0';
	if (rp_check_key(key, MAX_KEY) == LOCKD_OK) {
		size_t klen = strlen(key);
		if (klen < 1 || klen > MAX_KEY)
			abort();
		for (size_t i = 0; i < klen; i++)
			if ((unsigned char)key[i] < 0x21 || (unsigned char)key[i] > 0x7e)
				abort();
		static const enum rp_cmd cmds[] = {RP_LOCK, RP_TRYLOCK, RP_UNLOCK, RP_EXTEND,
		                                   RP_STATUS};
		static const enum cmd want[] = {CMD_LOCK, CMD_TRYLOCK, CMD_UNLOCK, CMD_EXTEND,
		                                CMD_STATUS};
		for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
			char line[128];
			long n = rp_format(line, sizeof(line), cmds[c], key, MAX_KEY,
			                   size % 2 ? LOCKD_SHARED : (int)(size % 5), (int)size - 3,
			                   (int)size + 1);
			if (n == LOCKD_EARG)
				continue; /* SHARED for STATUS */
			if (n <= 0 || (size_t)n >= sizeof(line) ||
			    rp_check_request(line, (size_t)n) != LOCKD_OK)
				abort();
			struct request rq;
			const char *msg = NULL;
			if (proto_parse(line, (size_t)n, MAX_KEY, 1024, &rq, &msg) != PE_NONE ||
			    rq.cmd != want[c] || rq.klen != klen || memcmp(rq.key, key, klen) != 0)
				abort();
		}
	} else if (size > 0 && size <= MAX_KEY && !memchr(data, '\0', size)) {
		/* refused: then some byte is outside 0x21-0x7e */
		size_t i = 0;
		while (i < size && data[i] >= 0x21 && data[i] <= 0x7e)
			i++;
		if (i == size)
			abort();
	}
	free(key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The input as what lockd sent: lines up to LF. The first byte (when
	   there is one) says whether the request's reply is a list. */
	int list = size > 0 && (data[0] & 1);
	int in_list = 0;
	size_t off = 0;
	while (off < size) {
		const uint8_t *nl = memchr(data + off, '\n', size - off);
		size_t n = nl ? (size_t)(nl - (data + off)) : size - off;
		/* a copy of exactly the line, so ASan sees any read past it */
		char *p = malloc(n ? n : 1);
		if (!p)
			return 0;
		memcpy(p, data + off, n);
		if (nl && rp_frame(p, n, MAX_LINE) == RP_FRAME_OK) {
			char *line = malloc(n); /* n - 1 bytes and the NUL */
			if (line) {
				memcpy(line, p, n - 1);
				line[n - 1] = '\0';
				int more = rp_more(line, list, in_list);
				one_line(line, n - 1, list, in_list);
				if (!rp_is_event(line))
					in_list = more;
				free(line);
			}
		}
		free(p);
		off += n + 1;
	}
	(void)rp_check_request((const char *)data, size);
	as_key(data, size);
	return 0;
}
