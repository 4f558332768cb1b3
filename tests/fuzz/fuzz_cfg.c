/* libFuzzer target: the config loader must never crash or leak, and every
 * error must name FILE:LINE:COLUMN. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c;
	char err[512];

	cfg_defaults(&c);
	err[0] = '\0';
	if (cfg_load_string(&c, "f.yml", (const char *)data, size, err, sizeof(err)) != 0) {
		unsigned line, col;
		if (sscanf(err, "f.yml:%u:%u: ", &line, &col) != 2 || line < 1 || col < 1)
			abort();
	}
	cfg_free(&c);
	return 0;
}
