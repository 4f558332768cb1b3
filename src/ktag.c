/* ktag: see ktag.h. */
#include "config.h"

#include <string.h>

#include "cluster.h"
#include "ktag.h"

static char tags[KTAG_SLOTS][KTAG_LEN_MAX + 1];
static int filled; /* 1 once every slot has its tag */

/* The n-character string number i over the alphabet (i < |A|^n), most
 * significant character first, so that numbers go in the alphabet's order. */
static void spell(char *out, unsigned long i, int n)
{
	static const char a[] = KTAG_ALPHABET;
	for (int k = n - 1; k >= 0; k--) {
		out[k] = a[i % (sizeof(a) - 1)];
		i /= sizeof(a) - 1;
	}
	out[n] = '\0';
}

int ktag_init(void)
{
	if (filled)
		return 0;
	unsigned left = KTAG_SLOTS;
	unsigned long base = sizeof(KTAG_ALPHABET) - 1, count = 1;
	memset(tags, 0, sizeof(tags));
	for (int n = 1; n <= KTAG_LEN_MAX && left; n++) {
		count *= base;
		for (unsigned long i = 0; i < count && left; i++) {
			char t[KTAG_LEN_MAX + 1];
			spell(t, i, n);
			unsigned s = csl_keyslot(t, (size_t)n);
			if (!tags[s][0]) {
				memcpy(tags[s], t, (size_t)n + 1);
				left--;
			}
		}
	}
	filled = left == 0;
	return filled ? 0 : -1;
}

const char *ktag_of_slot(unsigned s)
{
	return tags[s % KTAG_SLOTS];
}

size_t ktag_brace(char *out, size_t cap, const char *key, size_t len)
{
	const char *t = ktag_of_slot(csl_keyslot(key, len));
	size_t n = strlen(t);
	if (cap < n + 3) {
		if (cap)
			out[0] = '\0';
		return 0;
	}
	out[0] = '{';
	memcpy(out + 1, t, n);
	out[n + 1] = '}';
	out[n + 2] = '\0';
	return n + 2;
}
