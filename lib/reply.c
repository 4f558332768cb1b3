/* reply: liblockd's pure protocol part (see reply.h). It owns the rules
 * of protocol version 1 as a client reads them: how a line is framed,
 * which line is an event, where a list reply ends, what kind a reply is,
 * and which keys and requests may be sent. Nothing here knows a socket
 * or a client, so the unit tests and the fuzzer call it on plain bytes. */
#include "reply.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

static int blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

static int parse_u64(const char *s, const char **end, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;
	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*out = v;
	*end = p;
	return 0;
}

/* Is line the word w, alone or followed by a space? */
static int starts(const char *line, const char *w)
{
	size_t n = strlen(w);
	return strncmp(line, w, n) == 0 && (line[n] == '\0' || line[n] == ' ');
}

/* ------------------------------------------------------------ lines from lockd */

enum rp_frame rp_frame(const char *p, size_t n, size_t max_line)
{
	if (n == 0 || p[n - 1] != '\r')
		return RP_FRAME_NO_CR;
	n--;
	if (n > max_line)
		return RP_FRAME_LONG;
	if (memchr(p, '\0', n))
		return RP_FRAME_NUL;
	return RP_FRAME_OK;
}

int rp_is_event(const char *line)
{
	return starts(line, "LOST") || starts(line, "ELECTED") || starts(line, "NOLEADER");
}

static enum lockd_event_kind event_kind(const char *name)
{
	static const struct {
		const char *name;
		enum lockd_event_kind kind;
	} kinds[] = {
	    {"LOST", LOCKD_E_LOST},         {"RESUMING", LOCKD_E_RESUMING},
	    {"RESUMED", LOCKD_E_RESUMED},   {"ELECTED", LOCKD_E_ELECTED},
	    {"NOLEADER", LOCKD_E_NOLEADER},
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(name, kinds[i].name) == 0)
			return kinds[i].kind;
	return LOCKD_E_OTHER;
}

void rp_event(struct lockd_event *ev, const char *line, char *words, int in_list)
{
	ev->line = line;
	ev->name = words;
	ev->key = "";
	ev->fence = 0;
	ev->in_list = in_list;
	ev->value = "";
	char *sp = strchr(words, ' ');
	if (sp)
		*sp = '\0';
	ev->kind = event_kind(words);
	if (!sp)
		return;
	ev->key = sp + 1;
	sp = strchr(sp + 1, ' ');
	if (!sp)
		return;
	const char *e;
	*sp = '\0';
	if (parse_u64(sp + 1, &e, &ev->fence) != 0) {
		ev->fence = 0;
		return;
	}
	/* "ELECTED name fence value": the value is the one word after the
	   fence (a value has no blanks) */
	if (ev->kind == LOCKD_E_ELECTED && *e == ' ')
		ev->value = e + 1;
}

int rp_more(const char *line, int list, int in_list)
{
	int end = strcmp(line, "END") == 0;
	if (list && !in_list)
		return !end && !starts(line, "ERR");
	return in_list && !end;
}

void rp_classify(struct lockd_reply *r, const char *l, int list)
{
	const char *e;
	r->kind = LOCKD_R_OTHER;
	r->has_num = 0;
	r->num = r->num2 = 0;
	r->code[0] = '\0';
	r->text = "";
	r->value = "";
	if (list && !starts(l, "ERR")) {
		r->kind = LOCKD_R_LIST;
		return;
	}
	if (starts(l, "OK")) {
		r->kind = LOCKD_R_OK;
		if (l[2] == ' ' && parse_u64(l + 3, &e, &r->num) == 0 && *e == '\0')
			r->has_num = 1;
	} else if (starts(l, "PONG")) {
		r->kind = LOCKD_R_PONG;
	} else if (strcmp(l, "FREE") == 0) {
		r->kind = LOCKD_R_FREE;
	} else if (strcmp(l, "BUSY") == 0) {
		r->kind = LOCKD_R_BUSY;
	} else if (strcmp(l, "TIMEOUT") == 0) {
		r->kind = LOCKD_R_TIMEOUT;
	} else if (starts(l, "ERR")) {
		r->kind = LOCKD_R_ERR;
		const char *p = l + 3;
		while (*p == ' ')
			p++;
		size_t k = 0;
		while (p[k] && p[k] != ' ' && k < sizeof(r->code) - 1) {
			r->code[k] = p[k];
			k++;
		}
		r->code[k] = '\0';
		p += k;
		while (*p == ' ')
			p++;
		r->text = p;
	} else if (strcmp(l, "NONE") == 0) {
		r->kind = LOCKD_R_NONE;
	} else if (strncmp(l, "LEADER ", 7) == 0 && parse_u64(l + 7, &e, &r->num) == 0 &&
	           (*e == '\0' || (*e == ' ' && e[1] != '\0' && !strchr(e + 1, ' ')))) {
		r->kind = LOCKD_R_LEADER;
		r->has_num = 1;
		r->value = *e ? e + 1 : "";
	} else if (strncmp(l, "HELD ", 5) == 0 && parse_u64(l + 5, &e, &r->num) == 0 && *e == ' ' &&
	           parse_u64(e + 1, &e, &r->num2) == 0 && *e == '\0') {
		r->kind = LOCKD_R_HELD;
		r->has_num = 1;
	}
}

/* ------------------------------------------------------------ lines to lockd */

int rp_check_request(const char *req, size_t n)
{
	if (n == 0)
		return LOCKD_EARG;
	for (size_t i = 0; i < n; i++)
		if (req[i] == '\r' || req[i] == '\n' || req[i] == '\0')
			return LOCKD_EARG;
	return LOCKD_OK;
}

int rp_check_key(const char *key, size_t max)
{
	if (!key || !*key)
		return LOCKD_EKEY;
	size_t i = 0;
	for (; key[i]; i++)
		if (i >= max || (unsigned char)key[i] < 0x21 || (unsigned char)key[i] > 0x7e)
			return LOCKD_EKEY;
	return LOCKD_OK;
}

/* The first word of a request, case-insensitively equal to w? */
static int word_is(const char *req, size_t n, const char *w)
{
	size_t i = 0, k = 0;
	while (i < n && blank(req[i]))
		i++;
	for (; w[k]; k++, i++) {
		if (i >= n)
			return 0;
		char ch = req[i];
		if (ch >= 'a' && ch <= 'z')
			ch = (char)(ch - 'a' + 'A');
		if (ch != w[k])
			return 0;
	}
	return i == n || blank(req[i]);
}

int rp_is_list_request(const char *req, size_t n)
{
	return word_is(req, n, "HELD") || word_is(req, n, "STATS") || word_is(req, n, "WHO");
}

void rp_command(const char *req, size_t n, char *out, size_t outlen)
{
	size_t i = 0, k = 0;
	if (outlen == 0)
		return;
	while (i < n && blank(req[i]))
		i++;
	while (i < n && !blank(req[i]) && k < outlen - 1)
		out[k++] = req[i++];
	out[k] = '\0';
}

long rp_format(char *out, size_t outlen, enum rp_cmd cmd, const char *key, size_t max_key, int hold,
               int wait_ms, int ttl_ms)
{
	static const char *const words[] = {
	    [RP_LOCK] = "LOCK",     [RP_TRYLOCK] = "TRYLOCK", [RP_UNLOCK] = "UNLOCK",
	    [RP_EXTEND] = "EXTEND", [RP_STATUS] = "STATUS",
	};
	char opt[64] = "";
	int rc = rp_check_key(key, max_key);
	if (rc != LOCKD_OK)
		return rc;
	switch (cmd) {
	case RP_LOCK:
	case RP_TRYLOCK: {
		size_t o = 0;
		if (hold < LOCKD_SHARED || ttl_ms < 0)
			return LOCKD_EARG;
		if (hold == LOCKD_SHARED)
			o += (size_t)snprintf(opt + o, sizeof(opt) - o, " SHARED");
		else if (hold > 0)
			o += (size_t)snprintf(opt + o, sizeof(opt) - o, " PERMITS %d", hold);
		if (cmd == RP_LOCK && wait_ms >= 0)
			o += (size_t)snprintf(opt + o, sizeof(opt) - o, " WAIT %d", wait_ms);
		if (ttl_ms > 0)
			snprintf(opt + o, sizeof(opt) - o, " TTL %d", ttl_ms);
		break;
	}
	case RP_UNLOCK:
		break;
	case RP_EXTEND:
		if (ttl_ms < 1)
			return LOCKD_EARG;
		snprintf(opt, sizeof(opt), " %d", ttl_ms);
		break;
	case RP_STATUS:
		if (hold < 0)
			return LOCKD_EARG;
		if (hold > 0)
			snprintf(opt, sizeof(opt), " PERMITS %d", hold);
		break;
	default:
		return LOCKD_EARG;
	}
	return snprintf(out, outlen, "%s %s%s", words[cmd], key, opt);
}

int rp_check_value(const char *value, size_t max)
{
	/* the rules of a key, with lockd's default limits.max_value_len */
	return rp_check_key(value, max) == LOCKD_OK ? LOCKD_OK : LOCKD_EARG;
}

long rp_format_elect(char *out, size_t outlen, enum rp_ecmd cmd, const char *name, size_t max_key,
                     const char *value, size_t max_value, int wait_ms)
{
	static const char *const words[] = {
	    [RP_CAMPAIGN] = "CAMPAIGN", [RP_PROCLAIM] = "PROCLAIM", [RP_RESIGN] = "RESIGN",
	    [RP_LEADER] = "LEADER",     [RP_OBSERVE] = "OBSERVE",   [RP_UNOBSERVE] = "UNOBSERVE",
	};
	if ((unsigned)cmd > RP_UNOBSERVE)
		return LOCKD_EARG;
	int rc = rp_check_key(name, max_key);
	if (rc != LOCKD_OK)
		return rc;
	if (cmd != RP_CAMPAIGN && cmd != RP_PROCLAIM)
		return snprintf(out, outlen, "%s %s", words[cmd], name);
	if (rp_check_value(value, max_value) != LOCKD_OK)
		return LOCKD_EARG;
	if (cmd == RP_CAMPAIGN && wait_ms >= 0)
		return snprintf(out, outlen, "%s %s %s WAIT %d", words[cmd], name, value, wait_ms);
	return snprintf(out, outlen, "%s %s %s", words[cmd], name, value);
}

/* ------------------------------------------------------------ messages */

void rp_escape(char *out, size_t outlen, const char *s, size_t n)
{
	size_t o = 0;
	if (outlen == 0)
		return;
	for (size_t i = 0; i < n && o + 8 < outlen; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (i >= 80) {
			o += (size_t)snprintf(out + o, outlen - o, "...");
			break;
		}
		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			out[o++] = (char)ch;
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
	}
	out[o] = '\0';
}
