/* proto: the text protocol's request parser (pure: no I/O, no allocation).
 *
 * Two passes over the tokens: syntax first (command, arity, option names),
 * then keys and numbers left to right, so that a request with several
 * faults gets ERR PROTOCOL if it has one, else the leftmost fault. */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "proto.h"
#include "util.h"

#define MAX_TOKENS 10 /* the longest request, LOCK k PERMITS n WAIT n TTL n DELAY n, has 10 */

struct tok {
	const char *p;
	size_t n;
};

/* What follows the command name. */
enum shape {
	SH_NONE,     /* no argument */
	SH_OPTWORD,  /* one optional word */
	SH_WORD,     /* one required word */
	SH_KEY,      /* a key */
	SH_KEY_MS,   /* a key and a number */
	SH_KEY_OPTS, /* a key and options */
	SH_OPTS,     /* options only (SESSION) */
	SH_TWO,      /* two words, not checked as keys (RESUME id secret) */
	SH_KEY_VAL,  /* a key, a value, then options (CAMPAIGN, PROCLAIM) */
};

enum opt {
	OPT_WAIT = 1,
	OPT_TTL = 2,
	OPT_SHARED = 4, /* a flag, without a value */
	OPT_PERMITS = 8,
	OPT_GRACE = 16,
	OPT_DELAY = 32, /* lock-delay (1.4) */
};

static const struct {
	const char *name;
	enum shape shape;
	unsigned opts; /* OPT_* allowed for SH_KEY_OPTS */
} cmds[CMD_COUNT] = {
    [CMD_PING] = {"PING", SH_OPTWORD, 0},
    [CMD_LOCK] = {"LOCK", SH_KEY_OPTS, OPT_WAIT | OPT_TTL | OPT_SHARED | OPT_PERMITS | OPT_DELAY},
    [CMD_TRYLOCK] = {"TRYLOCK", SH_KEY_OPTS, OPT_TTL | OPT_SHARED | OPT_PERMITS | OPT_DELAY},
    [CMD_UNLOCK] = {"UNLOCK", SH_KEY, 0},
    [CMD_EXTEND] = {"EXTEND", SH_KEY_MS, 0},
    [CMD_STATUS] = {"STATUS", SH_KEY_OPTS, OPT_PERMITS},
    [CMD_HELD] = {"HELD", SH_NONE, 0},
    [CMD_STATS] = {"STATS", SH_NONE, 0},
    [CMD_AUTH] = {"AUTH", SH_WORD, 0},
    [CMD_QUIT] = {"QUIT", SH_NONE, 0},
    [CMD_SESSION] = {"SESSION", SH_OPTS, OPT_GRACE},
    [CMD_RESUME] = {"RESUME", SH_TWO, 0},
    [CMD_CAMPAIGN] = {"CAMPAIGN", SH_KEY_VAL, OPT_WAIT | OPT_DELAY},
    [CMD_PROCLAIM] = {"PROCLAIM", SH_KEY_VAL, 0},
    [CMD_RESIGN] = {"RESIGN", SH_KEY, 0},
    [CMD_LEADER] = {"LEADER", SH_KEY, 0},
    [CMD_OBSERVE] = {"OBSERVE", SH_KEY, 0},
    [CMD_UNOBSERVE] = {"UNOBSERVE", SH_KEY, 0},
    [CMD_WHO] = {"WHO", SH_KEY, 0},
    [CMD_LOCKALL] = {"LOCKALL", SH_NONE, 0}, /* its own parser: parse_lockall */
};

const char *proto_cmd_name(enum cmd c)
{
	return c < CMD_COUNT ? cmds[c].name : "?";
}

const char *proto_err_name(enum proto_err e)
{
	static const char *const names[] = {"", "PROTOCOL", "ARG", "KEY"};
	return names[e];
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int tok_is(const struct tok *t, const char *word)
{
	return t->n == strlen(word) && strncasecmp(t->p, word, t->n) == 0;
}

static enum proto_err check_key(const struct tok *t, size_t max_key_len, const char **msg)
{
	if (t->n > max_key_len) {
		*msg = "key is too long";
		return PE_KEY;
	}
	for (size_t i = 0; i < t->n; i++) {
		unsigned char c = (unsigned char)t->p[i];
		if (c < 0x21 || c > 0x7e) {
			*msg = "key must be printable ASCII (0x21-0x7E)";
			return PE_KEY;
		}
	}
	return PE_NONE;
}

static enum proto_err check_ms(const struct tok *t, uint32_t min, uint32_t *out, const char *what,
                               const char **msg)
{
	uint64_t v;
	if (parse_u64(t->p, t->n, PROTO_MS_MAX, &v) != 0 || v < min) {
		*msg = what;
		return PE_ARG;
	}
	*out = (uint32_t)v;
	return PE_NONE;
}

/* The next token of line[*i .. len), or 0 at the end. */
static int next_tok(const char *line, size_t len, size_t *i, struct tok *t)
{
	while (*i < len && is_blank(line[*i]))
		(*i)++;
	if (*i == len)
		return 0;
	t->p = line + *i;
	while (*i < len && !is_blank(line[*i]))
		(*i)++;
	t->n = (size_t)(line + *i - t->p);
	return 1;
}

int proto_next_key(const struct request *req, size_t *pos, const char **key, size_t *klen)
{
	struct tok t;
	if (!req->keys || !next_tok(req->keys, req->keys_len, pos, &t))
		return 0;
	*key = t.p;
	*klen = t.n;
	return 1;
}

static int tok_eq(const struct tok *a, const struct tok *b)
{
	return a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
}

/* LOCKALL n key1 ... keyn [WAIT ms] [TTL ms] [DELAY ms], after its name
 * (line[i..len)). n sets the shape: it must be digits before anything
 * else can be told; then syntax (n words, then options), then n, the
 * keys and the option values, left to right. Keys are walked in place:
 * the parser keeps no array of them. */
static enum proto_err parse_lockall(const char *line, size_t len, size_t i,
                                    const struct proto_limits *lim, struct request *req,
                                    const char **msg)
{
	struct tok cnt, t, opt[3] = {{NULL, 0}, {NULL, 0}, {NULL, 0}}; /* WAIT, TTL, DELAY */
	static const char *const names[3] = {"WAIT", "TTL", "DELAY"};
	uint64_t n = 0;
	enum proto_err e;

	if (!next_tok(line, len, &i, &cnt)) {
		*msg = "missing key count";
		return PE_PROTOCOL;
	}
	for (size_t k = 0; k < cnt.n; k++)
		if (cnt.p[k] < '0' || cnt.p[k] > '9') {
			*msg = "n must be 1 to limits.max_keys";
			return PE_ARG;
		}
	/* Digits: a count too large for a number is also too many words. */
	if (parse_u64(cnt.p, cnt.n, UINT32_MAX, &n) != 0)
		n = (uint64_t)UINT32_MAX + 1;
	/* Pass 1: syntax. */
	while (i < len && is_blank(line[i]))
		i++;
	size_t first = i, end = i;
	for (uint64_t k = 0; k < n; k++) {
		if (!next_tok(line, len, &i, &t)) {
			*msg = "missing key";
			return PE_PROTOCOL;
		}
		end = i;
	}
	while (next_tok(line, len, &i, &t)) {
		int o;
		for (o = 0; o < 3 && !tok_is(&t, names[o]); o++)
			;
		if (o == 3) {
			*msg = "unknown option";
			return PE_PROTOCOL;
		}
		if (opt[o].p) {
			*msg = "option given twice";
			return PE_PROTOCOL;
		}
		if (!next_tok(line, len, &i, &opt[o])) {
			*msg = "missing option value";
			return PE_PROTOCOL;
		}
	}
	/* Pass 2: n, the keys, the option values, left to right. */
	if (n < 1 || n > lim->max_keys) {
		*msg = "n must be 1 to limits.max_keys";
		return PE_ARG;
	}
	req->keys = line + first;
	req->keys_len = end - first;
	req->nkeys = (uint32_t)n;
	size_t pos = 0;
	while (next_tok(req->keys, req->keys_len, &pos, &t)) {
		if ((e = check_key(&t, lim->max_key_len, msg)) != PE_NONE)
			return e;
		struct tok u;
		size_t before = 0;
		/* A repeat of an earlier key (n is at most limits.max_keys). */
		while (before < (size_t)(t.p - req->keys) &&
		       next_tok(req->keys, (size_t)(t.p - req->keys), &before, &u))
			if (tok_eq(&u, &t)) {
				*msg = "key given twice";
				return PE_ARG;
			}
	}
	for (int k = 0; k < 3; k++) {
		const struct tok *o = NULL;
		int which = -1;
		for (int m = 0; m < 3; m++)
			if (opt[m].p && (!o || opt[m].p < o->p)) {
				o = &opt[m];
				which = m;
			}
		if (!o)
			break;
		if (which == 0) {
			if ((e = check_ms(o, 0, &req->wait_ms, "WAIT must be 0 to 2147483647 ms",
			                  msg)) != PE_NONE)
				return e;
			req->has_wait = 1;
		} else if (which == 1) {
			if ((e = check_ms(o, 1, &req->ttl_ms, "TTL must be 1 to 2147483647 ms",
			                  msg)) != PE_NONE)
				return e;
			req->has_ttl = 1;
		} else {
			if ((e = check_ms(o, 0, &req->delay_ms, "DELAY must be 0 to 2147483647 ms",
			                  msg)) != PE_NONE)
				return e;
			req->has_delay = 1;
		}
		opt[which].p = NULL;
	}
	return PE_NONE;
}

enum proto_err proto_parse(const char *line, size_t len, size_t max_key_len, uint32_t max_permits,
                           struct request *req, const char **msg)
{
	struct proto_limits lim = {max_key_len, max_permits, PROTO_MAX_KEYS_DEFAULT};
	return proto_parse_ex(line, len, &lim, req, msg);
}

enum proto_err proto_parse_ex(const char *line, size_t len, const struct proto_limits *lim,
                              struct request *req, const char **msg)
{
	struct tok t[MAX_TOKENS + 1];
	size_t nt = 0, i = 0;
	enum proto_err e;
	size_t max_key_len = lim->max_key_len;
	uint32_t max_permits = lim->max_permits;

	memset(req, 0, sizeof(*req));
	if (len > 0 && line[len - 1] == '\r')
		len--;
	/* LOCKALL has any number of words: parsed on its own. */
	if (next_tok(line, len, &i, &t[0]) && tok_is(&t[0], "LOCKALL")) {
		req->cmd = CMD_LOCKALL;
		return parse_lockall(line, len, i, lim, req, msg);
	}
	i = 0;
	while (i < len) {
		while (i < len && is_blank(line[i]))
			i++;
		if (i == len)
			break;
		size_t start = i;
		while (i < len && !is_blank(line[i]))
			i++;
		if (nt == MAX_TOKENS + 1) {
			*msg = "too many arguments";
			return PE_PROTOCOL;
		}
		t[nt].p = line + start;
		t[nt].n = i - start;
		nt++;
	}
	if (nt == 0) {
		*msg = "empty line";
		return PE_PROTOCOL;
	}

	int c;
	for (c = 0; c < CMD_COUNT; c++)
		if (tok_is(&t[0], cmds[c].name))
			break;
	if (c == CMD_COUNT) {
		*msg = "unknown command";
		return PE_PROTOCOL;
	}
	req->cmd = (enum cmd)c;

	/* Pass 1: syntax. */
	const struct tok *wait = NULL, *ttl = NULL, *permits = NULL, *shared = NULL, *ms = NULL;
	const struct tok *grace = NULL, *val = NULL, *delay = NULL;
	switch (cmds[c].shape) {
	case SH_NONE:
		if (nt > 1)
			goto extra;
		break;
	case SH_OPTWORD:
		if (nt > 2)
			goto extra;
		if (nt == 2) {
			req->word = t[1].p;
			req->wlen = t[1].n;
		}
		goto word;
	case SH_WORD:
		if (nt < 2) {
			*msg = "missing argument";
			return PE_PROTOCOL;
		}
		if (nt > 2)
			goto extra;
		req->word = t[1].p;
		req->wlen = t[1].n;
	word:
		/* A word is echoed (PONG) or compared (AUTH) as a C string
		 * would be: a NUL in it would cut it short. Keys and numbers
		 * reject a NUL as they reject any other bad byte. */
		if (req->word && memchr(req->word, '\0', req->wlen)) {
			*msg = "NUL byte in argument";
			return PE_PROTOCOL;
		}
		break;
	case SH_TWO:
		if (nt < 3) {
			*msg = "missing argument";
			return PE_PROTOCOL;
		}
		if (nt > 3)
			goto extra;
		req->key = t[1].p;
		req->klen = t[1].n;
		req->word = t[2].p;
		req->wlen = t[2].n;
		if (memchr(req->key, '\0', req->klen) || memchr(req->word, '\0', req->wlen)) {
			*msg = "NUL byte in argument";
			return PE_PROTOCOL;
		}
		break;
	case SH_OPTS:
	case SH_KEY:
	case SH_KEY_MS:
	case SH_KEY_OPTS:
	case SH_KEY_VAL:
		if (cmds[c].shape == SH_OPTS)
			goto opts;
		if (nt < 2) {
			*msg = "missing key";
			return PE_PROTOCOL;
		}
		if (cmds[c].shape == SH_KEY_VAL) {
			if (nt < 3) {
				*msg = "missing value";
				return PE_PROTOCOL;
			}
			val = &t[2];
			if (!cmds[c].opts && nt > 3)
				goto extra;
			goto opts;
		}
		if (cmds[c].shape == SH_KEY) {
			if (nt > 2)
				goto extra;
		} else if (cmds[c].shape == SH_KEY_MS) {
			if (nt < 3) {
				*msg = "missing milliseconds";
				return PE_PROTOCOL;
			}
			if (nt > 3)
				goto extra;
			ms = &t[2];
		} else {
		opts:
			for (size_t j = cmds[c].shape == SH_OPTS ? 1
			                : val                    ? 3
			                                         : 2;
			     j < nt; j += 2) {
				const struct tok **slot;
				if ((cmds[c].opts & OPT_SHARED) && tok_is(&t[j], "SHARED")) {
					if (shared) {
						*msg = "option given twice";
						return PE_PROTOCOL;
					}
					shared = &t[j--]; /* a flag: no value follows */
					continue;
				}
				if ((cmds[c].opts & OPT_WAIT) && tok_is(&t[j], "WAIT"))
					slot = &wait;
				else if ((cmds[c].opts & OPT_TTL) && tok_is(&t[j], "TTL"))
					slot = &ttl;
				else if ((cmds[c].opts & OPT_PERMITS) && tok_is(&t[j], "PERMITS"))
					slot = &permits;
				else if ((cmds[c].opts & OPT_GRACE) && tok_is(&t[j], "GRACE"))
					slot = &grace;
				else if ((cmds[c].opts & OPT_DELAY) && tok_is(&t[j], "DELAY"))
					slot = &delay;
				else if (cmds[c].opts == OPT_PERMITS)
					goto extra; /* STATUS key x: as in version 1 */
				else {
					*msg = "unknown option";
					return PE_PROTOCOL;
				}
				if (*slot) {
					*msg = "option given twice";
					return PE_PROTOCOL;
				}
				if (j + 1 >= nt) {
					*msg = "missing option value";
					return PE_PROTOCOL;
				}
				*slot = &t[j + 1];
			}
			if (shared && permits) {
				*msg = "SHARED and PERMITS exclude each other";
				return PE_PROTOCOL;
			}
			req->shared = shared != NULL;
		}
		break;
	}
	if (nt > MAX_TOKENS)
		goto extra;

	/* Pass 2: key and numbers, left to right (key always comes first). */
	if (grace) { /* SESSION's only option */
		if ((e = check_ms(grace, 1, &req->grace_ms, "GRACE must be 1 to 2147483647 ms",
		                  msg)) != PE_NONE)
			return e;
		req->has_grace = 1;
	}
	if ((cmds[c].shape >= SH_KEY && cmds[c].shape <= SH_KEY_OPTS) ||
	    cmds[c].shape == SH_KEY_VAL) {
		if ((e = check_key(&t[1], max_key_len, msg)) != PE_NONE)
			return e;
		req->key = t[1].p;
		req->klen = t[1].n;
	}
	if (val) { /* printable ASCII as a key; its length: limits.max_value_len */
		for (size_t k = 0; k < val->n; k++) {
			unsigned char ch = (unsigned char)val->p[k];
			if (ch < 0x21 || ch > 0x7e) {
				*msg = "value must be printable ASCII (0x21-0x7E)";
				return PE_ARG;
			}
		}
		req->word = val->p;
		req->wlen = val->n;
	}
	if (ms && (e = check_ms(ms, 1, &req->ttl_ms, "ms must be 1 to 2147483647", msg)) != PE_NONE)
		return e;
	/* The option values, left to right. */
	const struct tok *vals[4] = {wait, ttl, permits, delay};
	for (int k = 0; k < 4; k++) {
		const struct tok *o = NULL;
		for (int m = 0; m < 4; m++)
			if (vals[m] && (!o || vals[m] < o))
				o = vals[m];
		if (!o)
			break;
		for (int m = 0; m < 4; m++)
			if (vals[m] == o)
				vals[m] = NULL;
		if (o == wait) {
			if ((e = check_ms(o, 0, &req->wait_ms, "WAIT must be 0 to 2147483647 ms",
			                  msg)) != PE_NONE)
				return e;
			req->has_wait = 1;
		} else if (o == ttl) {
			if ((e = check_ms(o, 1, &req->ttl_ms, "TTL must be 1 to 2147483647 ms",
			                  msg)) != PE_NONE)
				return e;
			req->has_ttl = 1;
		} else if (o == delay) {
			if ((e = check_ms(o, 0, &req->delay_ms, "DELAY must be 0 to 2147483647 ms",
			                  msg)) != PE_NONE)
				return e;
			req->has_delay = 1;
		} else {
			uint64_t v;
			if (parse_u64(o->p, o->n, max_permits, &v) != 0 || v < 1) {
				*msg = "PERMITS must be 1 to limits.max_permits";
				return PE_ARG;
			}
			req->permits = (uint32_t)v;
		}
	}
	return PE_NONE;

extra:
	*msg = "extra argument";
	return PE_PROTOCOL;
}
