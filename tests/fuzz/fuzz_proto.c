/* libFuzzer target: the request parser must never crash, read out of
 * bounds, or accept a request that breaks the protocol's rules.
 * Build: see tests/fuzz/run.sh (not part of make check: needs clang). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct request r;
	const char *msg = NULL;
	/* A copy of exactly size bytes, so ASan sees any read past the end. */
	char *line = malloc(size ? size : 1);
	if (!line)
		return 0;
	memcpy(line, data, size);
	enum proto_err e = proto_parse(line, size, 16, 1024, &r, &msg);
	if (e != PE_NONE) {
		if (!msg || !*msg)
			abort(); /* every error has a message */
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
