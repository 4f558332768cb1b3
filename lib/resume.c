/* resume: what a liblockd client keeps of its session (private; see
 * client_int.h). It owns the list of addresses (lockd_opts.addresses),
 * a copy of the options that outlives the caller's strings, for a
 * resumable session (protocol 1.2) its id and secret, and the keys the
 * session was granted and has not released or lost (struct holds: to
 * report them LOST when the session cannot be resumed, and for the hold
 * deadlines), with the rule of which failure breaks a connection without
 * failing the client.
 *
 * A hold's local deadline (lockd_opts.hold_deadlines) is what lockd last
 * confirmed, measured from when the confirming request was queued (never
 * later than sent, so never later than lockd saw it): a HELD line's
 * ttl_ms, or an EXTEND's ms, less 1 % and 2 ms for the drift of the
 * clocks (as lockctl run). It is reported lost a margin before (50 ms and
 * 4 %), unless confirmed again; the heartbeat is due a third of the
 * ttl_ms after its confirmation was sent (lockd renews a third of a lease
 * after the last renewal, so a healthy lockd always confirms in time),
 * but not sooner than a tenth of the longest ttl_ms the hold had (a TTL
 * lease, which nobody renews, nears its end). An EXTEND sent limits what
 * a HELD queued before it may confirm (the masters may take its lease
 * whatever the reply).
 * No I/O and no callbacks: client.c sends the HELDs and the events. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

/* ------------------------------------------------------------ options */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void ep_free(struct rz_ep *e)
{
	free(e->host);
	free(e->unix_path);
}

/* One entry of addresses: "unix:/path", "[v6]:port", "host:port", "host". */
static int ep_parse(struct lockd_client *c, const char *s, size_t n, int port, struct rz_ep *e)
{
	char *w = strndup(s, n);
	memset(e, 0, sizeof(*e));
	if (!w)
		return cli_fail(c, LOCKD_ENOMEM, "out of memory");
	e->port = port ? port : LOCKD_DEFAULT_PORT;
	if (strncmp(w, "unix:", 5) == 0) {
		if (!w[5]) {
			free(w);
			return cli_fail(c, LOCKD_EARG, "addresses: \"unix:\" without a path");
		}
		e->unix_path = strdup(w + 5);
		free(w);
		return e->unix_path ? 0 : cli_fail(c, LOCKD_ENOMEM, "out of memory");
	}
	char *colon = NULL;
	if (w[0] == '[') {
		char *rb = strchr(w, ']');
		if (!rb || (rb[1] && rb[1] != ':')) {
			cli_fail(c, LOCKD_EARG, "addresses: \"%s\": want [v6]:port", w);
			free(w);
			return LOCKD_EARG;
		}
		colon = rb[1] ? rb + 1 : NULL;
	} else {
		colon = strrchr(w, ':');
		if (colon && strchr(w, ':') != colon)
			colon = NULL; /* a bare IPv6 literal: no port */
	}
	if (colon) {
		char *end;
		errno = 0;
		long p = strtol(colon + 1, &end, 10);
		if (!colon[1] || *end || p < 1 || p > 65535) {
			cli_fail(c, LOCKD_EARG, "addresses: \"%s\": the port is not 1-65535", w);
			free(w);
			return LOCKD_EARG;
		}
		e->port = (int)p;
		*colon = '\0';
	}
	if (!w[0]) {
		free(w);
		return cli_fail(c, LOCKD_EARG, "addresses: an entry without a host");
	}
	e->host = w;
	return 0;
}

static int parse_addresses(struct lockd_client *c, struct rz *rz, const char *list, int port)
{
	int n = 1;
	for (const char *p = list; *p; p++)
		n += *p == ',';
	rz->eps = calloc((size_t)n, sizeof(*rz->eps));
	if (!rz->eps)
		return cli_fail(c, LOCKD_ENOMEM, "out of memory");
	const char *p = list;
	for (;;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		while (len && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == 0)
			return cli_fail(c, LOCKD_EARG, "addresses \"%s\": an empty entry", list);
		int rc = ep_parse(c, p, len, port, &rz->eps[rz->nep]);
		if (rc != 0)
			return rc;
		rz->nep++;
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

int rz_new(struct lockd_client *c, const struct lockd_opts *o)
{
	if (!o->resume && !o->addresses)
		return 0;
	if (o->grace_ms < 0)
		return cli_fail(c, LOCKD_EARG, "grace_ms %d: not >= 0", o->grace_ms);
	struct rz *rz = calloc(1, sizeof(*rz));
	if (!rz)
		return cli_fail(c, LOCKD_ENOMEM, "out of memory");
	c->rz = rz;
	rz->resume = o->resume != 0;
	rz->o = *o;
	rz->o.host = rz->o.unix_path = rz->o.addresses = NULL;
	rz->o.password = dup_or_null(o->password);
	rz->o.tls_ca = dup_or_null(o->tls_ca);
	rz->o.tls_cert = dup_or_null(o->tls_cert);
	rz->o.tls_key = dup_or_null(o->tls_key);
	rz->o.tls_server_name = dup_or_null(o->tls_server_name);
	if ((o->password && !rz->o.password) || (o->tls_ca && !rz->o.tls_ca) ||
	    (o->tls_cert && !rz->o.tls_cert) || (o->tls_key && !rz->o.tls_key) ||
	    (o->tls_server_name && !rz->o.tls_server_name))
		return cli_fail(c, LOCKD_ENOMEM, "out of memory");
	if (o->addresses)
		return parse_addresses(c, rz, o->addresses, o->port);
	rz->eps = calloc(1, sizeof(*rz->eps));
	if (!rz->eps)
		return cli_fail(c, LOCKD_ENOMEM, "out of memory");
	rz->nep = 1;
	rz->eps[0].port = o->port;
	rz->eps[0].host = dup_or_null(o->host);
	rz->eps[0].unix_path = dup_or_null(o->unix_path);
	if ((o->host && !rz->eps[0].host) || (o->unix_path && !rz->eps[0].unix_path))
		return cli_fail(c, LOCKD_ENOMEM, "out of memory");
	return 0;
}

void rz_free(struct rz *rz)
{
	if (!rz)
		return;
	if (rz->o.password) {
		memset((char *)rz->o.password, 0, strlen(rz->o.password));
		free((char *)rz->o.password);
	}
	free((char *)rz->o.tls_ca);
	free((char *)rz->o.tls_cert);
	free((char *)rz->o.tls_key);
	free((char *)rz->o.tls_server_name);
	for (int i = 0; i < rz->nep; i++)
		ep_free(&rz->eps[i]);
	free(rz->eps);
	if (rz->later.p)
		memset(rz->later.p, 0, rz->later.cap);
	free(rz->later.p);
	memset(rz->secret, 0, sizeof(rz->secret));
	free(rz);
}

void rz_ep_opts(const struct rz *rz, int i, struct lockd_opts *out)
{
	*out = rz->o;
	out->host = rz->eps[i].host;
	out->port = rz->eps[i].port;
	out->unix_path = rz->eps[i].unix_path;
}

/* ------------------------------------------------------------ requests */

static int word_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && strncasecmp(s, w, n) == 0;
}

int rz_request(const char *req, size_t n, enum rz_op *op, char **key, int64_t *num)
{
	*op = RZ_OP_NONE;
	*key = NULL;
	*num = 0;
	size_t i = 0;
	while (i < n && (req[i] == ' ' || req[i] == '\t'))
		i++;
	size_t c0 = i;
	while (i < n && req[i] != ' ' && req[i] != '\t')
		i++;
	size_t cl = i - c0;
	enum rz_op o = word_is(req + c0, cl, "LOCK") || word_is(req + c0, cl, "TRYLOCK") ||
	                       word_is(req + c0, cl, "CAMPAIGN")
	                   ? RZ_OP_LOCK
	               : word_is(req + c0, cl, "UNLOCK") ? RZ_OP_UNLOCK
	               : word_is(req + c0, cl, "RESIGN") ? RZ_OP_RESIGN
	               : word_is(req + c0, cl, "EXTEND") ? RZ_OP_EXTEND
	                                                 : RZ_OP_NONE;
	if (o == RZ_OP_NONE)
		return 0;
	while (i < n && (req[i] == ' ' || req[i] == '\t'))
		i++;
	size_t k0 = i;
	while (i < n && req[i] != ' ' && req[i] != '\t')
		i++;
	if (i == k0)
		return 0;
	if (o == RZ_OP_EXTEND) {
		/* "EXTEND key ms": a time lockd takes (1 to 2^31-1), else no op */
		size_t k1 = i;
		while (i < n && (req[i] == ' ' || req[i] == '\t'))
			i++;
		int64_t ms = 0;
		size_t d0 = i;
		while (i < n && req[i] >= '0' && req[i] <= '9' && ms <= 0x7fffffff)
			ms = ms * 10 + (req[i++] - '0');
		size_t d1 = i;
		while (i < n && (req[i] == ' ' || req[i] == '\t'))
			i++;
		if (d1 == d0 || i != n || ms < 1 || ms > 0x7fffffff)
			return 0;
		*num = ms;
		i = k1;
	}
	*key = strndup(req + k0, i - k0);
	if (!*key)
		return -1;
	*op = o;
	return 0;
}

/* ------------------------------------------------------------ holds */

/* A grant whose HELD (right behind it) is not answered within this is
 * reported lost: lockd's shortest lease. */
#define GRANT_CHECK_US 100000
/* Heartbeats at most this often. */
#define BEAT_MIN_US 10000

/* The drift of the clocks over ttl_us (lockctl run's rule), and the margin
 * before the deadline at which a hold is reported lost. */
static int64_t drift_us(int64_t ttl_us)
{
	return ttl_us / 100 + 2000;
}

static int64_t margin_us(int64_t ttl_us)
{
	return 50000 + ttl_us / 25;
}

/* FNV-1a of the n bytes of key. */
static uint32_t key_hash(const char *key, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)key[i]) * 16777619u;
	return h;
}

struct holds *rz_holds_new(int deadlines)
{
	struct holds *hs = calloc(1, sizeof(*hs));
	if (!hs)
		return NULL;
	hs->deadlines = deadlines;
	return hs;
}

void rz_holds_free(struct holds *hs)
{
	if (!hs)
		return;
	for (size_t i = 0; i < hs->n; i++)
		free(hs->h[i].key);
	free(hs->h);
	free(hs->bucket);
	free(hs);
}

static uint32_t *chain_of(struct holds *hs, const char *key, size_t n)
{
	return &hs->bucket[key_hash(key, n) & (hs->nbucket - 1)];
}

/* The hold of the n bytes of key (not NUL-terminated: a word of a line). */
static struct hold *find_n(struct holds *hs, const char *key, size_t n)
{
	if (!hs->nbucket)
		return NULL;
	for (uint32_t i = *chain_of(hs, key, n); i; i = hs->h[i - 1].next) {
		const char *k = hs->h[i - 1].key;
		if (strncmp(k, key, n) == 0 && k[n] == '\0')
			return &hs->h[i - 1];
	}
	return NULL;
}

struct hold *rz_hold_find(struct holds *hs, const char *key)
{
	return find_n(hs, key, strlen(key));
}

/* Rebuild the chains over nb buckets. */
static int rehash(struct holds *hs, size_t nb)
{
	uint32_t *b = calloc(nb, sizeof(*b));
	if (!b)
		return -1;
	free(hs->bucket);
	hs->bucket = b;
	hs->nbucket = nb;
	for (size_t i = 0; i < hs->n; i++) {
		uint32_t *ch = chain_of(hs, hs->h[i].key, strlen(hs->h[i].key));
		hs->h[i].next = *ch;
		*ch = (uint32_t)i + 1;
	}
	return 0;
}

static struct hold *hold_add(struct holds *hs, const char *key)
{
	if (hs->n == hs->cap) {
		size_t cap = hs->cap ? hs->cap * 2 : 8;
		struct hold *nh = realloc(hs->h, cap * sizeof(*nh));
		if (!nh)
			return NULL;
		hs->h = nh;
		hs->cap = cap;
	}
	if (hs->n + 1 > hs->nbucket && rehash(hs, hs->nbucket ? hs->nbucket * 2 : 16) != 0)
		return NULL;
	char *dup = strdup(key);
	if (!dup)
		return NULL;
	struct hold *h = &hs->h[hs->n];
	memset(h, 0, sizeof(*h));
	h->key = dup;
	uint32_t *ch = chain_of(hs, key, strlen(key));
	h->next = *ch;
	*ch = (uint32_t)++hs->n;
	return h;
}

/* The link (a bucket or a hold's next) that holds index + 1 of i. */
static uint32_t *link_to(struct holds *hs, size_t i)
{
	uint32_t *l = chain_of(hs, hs->h[i].key, strlen(hs->h[i].key));
	while (*l != i + 1)
		l = &hs->h[*l - 1].next;
	return l;
}

void rz_hold_del(struct holds *hs, struct hold *h)
{
	size_t i = (size_t)(h - hs->h), last = hs->n - 1;
	*link_to(hs, i) = h->next;
	free(h->key);
	if (i != last) {
		*link_to(hs, last) = (uint32_t)i + 1;
		hs->h[i] = hs->h[last];
	}
	if (--hs->n == 0)
		hs->check_us = hs->beat_us = 0; /* nothing to time (lockd_timeout_ms -1) */
}

static void check_by(struct holds *hs, int64_t t)
{
	if (!hs->check_us || t < hs->check_us)
		hs->check_us = t;
}

/* h is confirmed for ttl_us from `from`, by a request queued at conf. */
static void confirm(struct holds *hs, struct hold *h, int64_t from, int64_t ttl_us, int64_t conf,
                    int64_t now)
{
	h->ttl_us = ttl_us;
	if (ttl_us > h->ttl_max_us)
		h->ttl_max_us = ttl_us;
	/* a third of what is left; a lease nobody renews (TTL) is not asked
	   about more often than a tenth of it as its end nears */
	h->beat_us = conf + (ttl_us / 3 > h->ttl_max_us / 10 ? ttl_us / 3 : h->ttl_max_us / 10);
	h->deadline_us = from + ttl_us - drift_us(ttl_us);
	if (h->limit_us && conf >= h->limit_from)
		h->limit_us = 0; /* lockd saw the EXTEND first: ttl_ms counts it */
	if (h->limit_us && h->deadline_us > h->limit_us)
		h->deadline_us = h->limit_us;
	h->report_us = h->deadline_us - margin_us(ttl_us);
	if (h->lost && h->report_us > now)
		h->lost = 0; /* lockd still holds it, with time left: tracked again */
	if (!h->lost)
		check_by(hs, h->report_us);
}

int rz_track(struct holds *hs, enum rz_op op, const char *key, const char *line, int64_t asked_us,
             int64_t num, int64_t now)
{
	struct hold *h = rz_hold_find(hs, key);
	if (op == RZ_OP_LOCK && strncmp(line, "OK ", 3) == 0) {
		uint64_t fence = strtoull(line + 3, NULL, 10);
		if (h && !h->lost && h->fence == fence)
			return 0; /* a reentrant grant: the hold as it was */
		if (!h && !(h = hold_add(hs, key)))
			return -1;
		h->fence = fence;
		h->lost = 0;
		h->asked_us = asked_us;
		h->granted_us = now;
		h->beat_us = h->ttl_us = h->ttl_max_us = h->deadline_us = h->limit_us = 0;
		/* until the HELD behind its request confirms it */
		h->report_us = now + GRANT_CHECK_US;
		if (hs->deadlines)
			check_by(hs, h->report_us);
		return 0;
	}
	if (!h)
		return 0;
	if ((op == RZ_OP_UNLOCK &&
	     (strcmp(line, "OK 0") == 0 || strncmp(line, "ERR NOTHELD", 11) == 0)) ||
	    (op == RZ_OP_RESIGN &&
	     (strcmp(line, "OK") == 0 || strncmp(line, "ERR NOTLEADER", 13) == 0)))
		rz_hold_del(hs, h);
	else if (op == RZ_OP_EXTEND && strcmp(line, "OK") == 0 && hs->deadlines)
		confirm(hs, h, asked_us, num * 1000, asked_us, now);
	return 0;
}

void rz_extend_sent(struct holds *hs, const char *key, int64_t ms, int64_t now)
{
	/* the masters may take the new lease whatever the reply: from now on
	   the hold is sure only until the earlier of the two ends, whatever a
	   HELD queued before says */
	struct hold *h = rz_hold_find(hs, key);
	int64_t ttl_us = ms * 1000, d = now + ttl_us - drift_us(ttl_us);
	if (!h)
		return;
	if (!h->limit_us || d < h->limit_us)
		h->limit_us = d;
	h->limit_from = now;
	if (!h->deadline_us || d >= h->deadline_us)
		return;
	h->deadline_us = d;
	h->report_us = d - margin_us(ttl_us);
	if (!h->lost)
		check_by(hs, h->report_us);
}

/* The next word of *p (NUL-terminated in place is not allowed: the
 * line is the reply's): its start and length. */
static const char *word(const char **p, size_t *len)
{
	const char *s = *p;
	while (*s == ' ')
		s++;
	const char *e = s;
	while (*e && *e != ' ')
		e++;
	*len = (size_t)(e - s);
	*p = e;
	return s;
}

void rz_held_line(struct holds *hs, const char *line, int64_t sent_us, int64_t now)
{
	const char *p = line;
	size_t n;
	const char *w = word(&p, &n);
	if (n != 3 || strncmp(w, "KEY", 3) != 0)
		return;
	w = word(&p, &n);
	struct hold *h = n ? find_n(hs, w, n) : NULL;
	if (!h)
		return;
	h->seen = hs->seen;
	word(&p, &n); /* fence */
	word(&p, &n); /* holds */
	w = word(&p, &n);
	char *end;
	long long ttl = strtoll(w, &end, 10);
	if (!hs->deadlines || n == 0 || end != w + n || ttl < 0)
		return;
	int64_t ttl_us = (int64_t)ttl * 1000;
	if (!h->deadline_us && sent_us < h->granted_us &&
	    h->granted_us - h->asked_us > ttl_us / 4) {
		/* The HELD went out with a LOCK that waited: lockd measured
		   ttl_ms when it granted, long after the HELD was sent. Count
		   from the grant's arrival (the margin covers its way here)
		   until the next heartbeat, due at once, confirms it. */
		confirm(hs, h, h->granted_us, ttl_us, sent_us, now);
		h->beat_us = now;
		return;
	}
	confirm(hs, h, sent_us, ttl_us, sent_us, now);
}

void rz_holds_plan(struct holds *hs, int64_t sent_us)
{
	int64_t beat = 0, check = 0, floor_us = sent_us + BEAT_MIN_US;
	for (size_t i = 0; i < hs->n; i++) {
		const struct hold *h = &hs->h[i];
		if (h->lost)
			continue;
		if (!check || h->report_us < check)
			check = h->report_us;
		if (h->beat_us && (!beat || h->beat_us < beat))
			beat = h->beat_us;
	}
	hs->check_us = check;
	hs->beat_us = beat && beat < floor_us ? floor_us : beat;
}

/* ------------------------------------------------------------ SESSION */

int rz_session_reply(struct rz *rz, const char *line)
{
	char id[sizeof(rz->id)], secret[sizeof(rz->secret)];
	int grace;
	char extra;
	if (sscanf(line, "SESSION %63s %95s %d %c", id, secret, &grace, &extra) != 3 || grace < 0)
		return -1;
	memcpy(rz->id, id, sizeof(id));
	memcpy(rz->secret, secret, sizeof(secret));
	memset(secret, 0, sizeof(secret));
	rz->grace_ms = grace;
	return 0;
}
