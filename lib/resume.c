/* resume: what a liblockd client keeps to reach lockd again (private; see
 * client_int.h). It owns the list of addresses (lockd_opts.addresses),
 * a copy of the options that outlives the caller's strings, and, for a
 * resumable session (protocol 1.2), its id and secret, the keys the
 * session was granted and has not released or lost (to report them LOST
 * when the session cannot be resumed), and the rule of which failure
 * breaks a connection without failing the client. No I/O and no
 * callbacks: reconnect.c reconnects and resumes, client.c hands replies
 * and events. */
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
	for (size_t i = 0; i < rz->nkeys; i++)
		free(rz->keys[i].key);
	free(rz->keys);
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

/* ------------------------------------------------------------ keys */

static int word_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && strncasecmp(s, w, n) == 0;
}

int rz_request(const char *req, size_t n, enum rz_op *op, char **key)
{
	*op = RZ_OP_NONE;
	*key = NULL;
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
	*key = strndup(req + k0, i - k0);
	if (!*key)
		return -1;
	*op = o;
	return 0;
}

static struct rz_key *key_find(struct rz *rz, const char *key)
{
	for (size_t i = 0; i < rz->nkeys; i++)
		if (strcmp(rz->keys[i].key, key) == 0)
			return &rz->keys[i];
	return NULL;
}

void rz_lost(struct rz *rz, const char *key)
{
	struct rz_key *k = key_find(rz, key);
	if (!k)
		return;
	free(k->key);
	*k = rz->keys[--rz->nkeys];
}

int rz_track(struct rz *rz, enum rz_op op, const char *key, const char *line)
{
	if (op == RZ_OP_LOCK && strncmp(line, "OK ", 3) == 0) {
		uint64_t fence = strtoull(line + 3, NULL, 10);
		struct rz_key *k = key_find(rz, key);
		if (k) {
			k->fence = fence;
			return 0;
		}
		if (rz->nkeys == rz->kcap) {
			size_t cap = rz->kcap ? rz->kcap * 2 : 8;
			struct rz_key *nk = realloc(rz->keys, cap * sizeof(*nk));
			if (!nk)
				return -1;
			rz->keys = nk;
			rz->kcap = cap;
		}
		char *dup = strdup(key);
		if (!dup)
			return -1;
		rz->keys[rz->nkeys].key = dup;
		rz->keys[rz->nkeys++].fence = fence;
		return 0;
	}
	if (op == RZ_OP_UNLOCK &&
	    (strcmp(line, "OK 0") == 0 || strncmp(line, "ERR NOTHELD", 11) == 0))
		rz_lost(rz, key);
	if (op == RZ_OP_RESIGN &&
	    (strcmp(line, "OK") == 0 || strncmp(line, "ERR NOTLEADER", 13) == 0))
		rz_lost(rz, key);
	return 0;
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
