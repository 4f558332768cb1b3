/* cluster: the pure core of a Redis Cluster router (cluster.h says what
 * it is for). No I/O, no allocation: a key's slot, a slot table from a
 * CLUSTER SHARDS or CLUSTER SLOTS reply, and the reading of cluster
 * errors. Nothing in the daemon uses it yet; the router that will is
 * future work (issue 31).
 *
 * The replies come from a cluster whose nodes lockd does not control, so
 * every element is checked for its type and range before it is used: a
 * map that is not consistent is refused whole with the element named,
 * and the router keeps the map it had. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cluster.h"

/* CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0, no
 * reflection), the CRC Redis Cluster hashes keys with; its check value
 * (of "123456789") is 0x31c3. Entry i is the CRC of byte i. */
static const uint16_t crc16tab[256] = {
    0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7, 0x8108, 0x9129, 0xa14a, 0xb16b,
    0xc18c, 0xd1ad, 0xe1ce, 0xf1ef, 0x1231, 0x0210, 0x3273, 0x2252, 0x52b5, 0x4294, 0x72f7, 0x62d6,
    0x9339, 0x8318, 0xb37b, 0xa35a, 0xd3bd, 0xc39c, 0xf3ff, 0xe3de, 0x2462, 0x3443, 0x0420, 0x1401,
    0x64e6, 0x74c7, 0x44a4, 0x5485, 0xa56a, 0xb54b, 0x8528, 0x9509, 0xe5ee, 0xf5cf, 0xc5ac, 0xd58d,
    0x3653, 0x2672, 0x1611, 0x0630, 0x76d7, 0x66f6, 0x5695, 0x46b4, 0xb75b, 0xa77a, 0x9719, 0x8738,
    0xf7df, 0xe7fe, 0xd79d, 0xc7bc, 0x48c4, 0x58e5, 0x6886, 0x78a7, 0x0840, 0x1861, 0x2802, 0x3823,
    0xc9cc, 0xd9ed, 0xe98e, 0xf9af, 0x8948, 0x9969, 0xa90a, 0xb92b, 0x5af5, 0x4ad4, 0x7ab7, 0x6a96,
    0x1a71, 0x0a50, 0x3a33, 0x2a12, 0xdbfd, 0xcbdc, 0xfbbf, 0xeb9e, 0x9b79, 0x8b58, 0xbb3b, 0xab1a,
    0x6ca6, 0x7c87, 0x4ce4, 0x5cc5, 0x2c22, 0x3c03, 0x0c60, 0x1c41, 0xedae, 0xfd8f, 0xcdec, 0xddcd,
    0xad2a, 0xbd0b, 0x8d68, 0x9d49, 0x7e97, 0x6eb6, 0x5ed5, 0x4ef4, 0x3e13, 0x2e32, 0x1e51, 0x0e70,
    0xff9f, 0xefbe, 0xdfdd, 0xcffc, 0xbf1b, 0xaf3a, 0x9f59, 0x8f78, 0x9188, 0x81a9, 0xb1ca, 0xa1eb,
    0xd10c, 0xc12d, 0xf14e, 0xe16f, 0x1080, 0x00a1, 0x30c2, 0x20e3, 0x5004, 0x4025, 0x7046, 0x6067,
    0x83b9, 0x9398, 0xa3fb, 0xb3da, 0xc33d, 0xd31c, 0xe37f, 0xf35e, 0x02b1, 0x1290, 0x22f3, 0x32d2,
    0x4235, 0x5214, 0x6277, 0x7256, 0xb5ea, 0xa5cb, 0x95a8, 0x8589, 0xf56e, 0xe54f, 0xd52c, 0xc50d,
    0x34e2, 0x24c3, 0x14a0, 0x0481, 0x7466, 0x6447, 0x5424, 0x4405, 0xa7db, 0xb7fa, 0x8799, 0x97b8,
    0xe75f, 0xf77e, 0xc71d, 0xd73c, 0x26d3, 0x36f2, 0x0691, 0x16b0, 0x6657, 0x7676, 0x4615, 0x5634,
    0xd94c, 0xc96d, 0xf90e, 0xe92f, 0x99c8, 0x89e9, 0xb98a, 0xa9ab, 0x5844, 0x4865, 0x7806, 0x6827,
    0x18c0, 0x08e1, 0x3882, 0x28a3, 0xcb7d, 0xdb5c, 0xeb3f, 0xfb1e, 0x8bf9, 0x9bd8, 0xabbb, 0xbb9a,
    0x4a75, 0x5a54, 0x6a37, 0x7a16, 0x0af1, 0x1ad0, 0x2ab3, 0x3a92, 0xfd2e, 0xed0f, 0xdd6c, 0xcd4d,
    0xbdaa, 0xad8b, 0x9de8, 0x8dc9, 0x7c26, 0x6c07, 0x5c64, 0x4c45, 0x3ca2, 0x2c83, 0x1ce0, 0x0cc1,
    0xef1f, 0xff3e, 0xcf5d, 0xdf7c, 0xaf9b, 0xbfba, 0x8fd9, 0x9ff8, 0x6e17, 0x7e36, 0x4e55, 0x5e74,
    0x2e93, 0x3eb2, 0x0ed1, 0x1ef0,
};

static uint16_t crc16(const unsigned char *p, size_t len)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++)
		crc = (uint16_t)(crc << 8) ^ crc16tab[((crc >> 8) ^ p[i]) & 0xff];
	return crc;
}

unsigned csl_keyslot(const char *key, size_t len)
{
	const char *open = len ? memchr(key, '{', len) : NULL;

	if (open) {
		size_t rest = len - (size_t)(open - key) - 1;
		const char *close = rest ? memchr(open + 1, '}', rest) : NULL;

		/* "{}" is no tag: the whole key is hashed, as Redis does */
		if (close && close > open + 1)
			return crc16((const unsigned char *)open + 1, (size_t)(close - open - 1)) &
			       (CSL_SLOTS - 1);
	}
	return crc16((const unsigned char *)key, len) & (CSL_SLOTS - 1);
}

/* ---- errors ---- */

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* A reply's bytes for an error text: printable ASCII as it is, the rest
 * as \xNN, cut after max bytes with "...". */
static const char *quote_max(char *buf, size_t n, const char *s, size_t len, size_t max)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 8 < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i == max) {
			o += (size_t)snprintf(buf + o, n - o, "...");
			break;
		}
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
	}
	buf[o] = '\0';
	return buf;
}

static const char *quote(char *buf, size_t n, const char *s, size_t len)
{
	return quote_max(buf, n, s, len, 48);
}

static const char *type_name(int type)
{
	switch (type) {
	case REDIS_REPLY_STRING:
		return "a string";
	case REDIS_REPLY_ARRAY:
		return "an array";
	case REDIS_REPLY_INTEGER:
		return "an integer";
	case REDIS_REPLY_NIL:
		return "nil";
	case REDIS_REPLY_STATUS:
		return "a status";
	case REDIS_REPLY_ERROR:
		return "an error";
	}
	return "of an unknown type";
}

/* ---- the map ---- */

/* A node as read, before it has a place in the map. */
struct rd_node {
	char host[CSL_HOST_MAX + 1];
	int port, tls_port;
	char id[CSL_ID_LEN + 1];
	enum csl_role role;
	enum csl_health health;
};

static void map_clear(struct csl_map *m)
{
	for (int s = 0; s < CSL_SLOTS; s++)
		m->slot[s] = CSL_NO_NODE;
	m->n_nodes = 0;
	m->n_primaries = 0;
}

/* A host as Redis gives it: at most CSL_HOST_MAX bytes, none a space or a
 * control byte (an IPv6 address has colons, a hostname dots). */
static int host_ok(const char *s, size_t len)
{
	if (len > CSL_HOST_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] == 0x7f)
			return 0;
	return 1;
}

static int set_host(struct rd_node *n, const redisReply *v, const char *where, const char *field,
                    char *err, size_t errlen)
{
	char q[256];

	if (v->len > CSL_HOST_MAX)
		return fail(err, errlen, "%s: %s is %zu bytes long, more than %d", where, field,
		            v->len, CSL_HOST_MAX);
	if (!host_ok(v->str, v->len))
		return fail(err, errlen, "%s: %s \"%s\" has a space or a control byte", where,
		            field, quote(q, sizeof(q), v->str, v->len));
	memcpy(n->host, v->str, v->len);
	n->host[v->len] = '\0';
	return 0;
}

static int set_id(struct rd_node *n, const redisReply *v, const char *where, char *err,
                  size_t errlen)
{
	char q[256];
	int ok = v->len == CSL_ID_LEN;

	for (size_t i = 0; ok && i < v->len; i++)
		ok = (v->str[i] >= '0' && v->str[i] <= '9') ||
		     (v->str[i] >= 'a' && v->str[i] <= 'f');
	if (!ok)
		return fail(err, errlen, "%s: node id \"%s\" is not %d lowercase hex digits", where,
		            quote(q, sizeof(q), v->str, v->len), CSL_ID_LEN);
	memcpy(n->id, v->str, CSL_ID_LEN);
	n->id[CSL_ID_LEN] = '\0';
	return 0;
}

static int set_port(int *port, const redisReply *v, const char *where, const char *field, char *err,
                    size_t errlen)
{
	if (v->type != REDIS_REPLY_INTEGER)
		return fail(err, errlen, "%s: %s is %s, not an integer", where, field,
		            type_name(v->type));
	if (v->integer < 1 || v->integer > 65535)
		return fail(err, errlen, "%s: %s %lld not in 1-65535", where, field, v->integer);
	*port = (int)v->integer;
	return 0;
}

static int find_id(const struct csl_map *m, const char *id)
{
	for (int i = 0; i < m->n_nodes; i++)
		if (strcmp(m->nodes[i].id, id) == 0)
			return i;
	return -1;
}

/* "127.0.0.1:7000" ("[::1]:7000" would read better, but Redis writes
 * MOVED's address as host:port too) */
static const char *addr(char *buf, size_t n, const struct csl_node *x)
{
	snprintf(buf, n, "%s:%d", x->host, x->port ? x->port : x->tls_port);
	return buf;
}

/* Add a node read from the reply; -1 with err when the map is full. */
static int add_node(struct csl_map *m, const struct rd_node *r, int primary, char *err,
                    size_t errlen)
{
	struct csl_node *n;

	if (r->role == CSL_PRIMARY && m->n_primaries == CSL_MAX_PRIMARIES)
		return fail(err, errlen, "more than %d primaries", CSL_MAX_PRIMARIES);
	if (m->n_nodes == CSL_MAX_NODES)
		return fail(err, errlen, "more than %d nodes", CSL_MAX_NODES);
	n = &m->nodes[m->n_nodes];
	memcpy(n->host, r->host, sizeof(n->host));
	memcpy(n->id, r->id, sizeof(n->id));
	n->port = r->port;
	n->tls_port = r->tls_port;
	n->role = r->role;
	n->health = r->health;
	n->primary = r->role == CSL_PRIMARY ? -1 : primary;
	if (r->role == CSL_PRIMARY)
		m->n_primaries++;
	return m->n_nodes++;
}

/* Give slots start-end to primary p: both in range, start <= end, and no
 * slot already given. */
static int assign(struct csl_map *m, long long start, long long end, int p, const char *where,
                  char *err, size_t errlen)
{
	char a[300], b[300];

	if (start < 0 || start >= CSL_SLOTS || end < 0 || end >= CSL_SLOTS)
		return fail(err, errlen, "%s: slot range %lld-%lld not in 0-%d", where, start, end,
		            CSL_SLOTS - 1);
	if (start > end)
		return fail(err, errlen, "%s: slot range %lld-%lld is reversed", where, start, end);
	for (long long s = start; s <= end; s++)
		if (m->slot[s] != CSL_NO_NODE)
			return fail(err, errlen, "%s: slot %lld of %s is already served by %s",
			            where, s, addr(a, sizeof(a), &m->nodes[p]),
			            addr(b, sizeof(b), &m->nodes[m->slot[s]]));
	for (long long s = start; s <= end; s++)
		m->slot[s] = (uint16_t)p;
	return 0;
}

/* ---- CLUSTER SHARDS ---- */

/* A flat array of field names and values (RESP2's form of a map): an
 * array of even length whose names are strings. */
static int kv_check(const redisReply *a, const char *where, char *err, size_t errlen)
{
	if (a->type != REDIS_REPLY_ARRAY)
		return fail(err, errlen, "%s: %s, not an array", where, type_name(a->type));
	if (a->elements % 2)
		return fail(err, errlen,
		            "%s: an odd number of elements (%zu), not name and value pairs", where,
		            a->elements);
	for (size_t i = 0; i < a->elements; i += 2)
		if (a->element[i]->type != REDIS_REPLY_STRING)
			return fail(err, errlen, "%s: field name %zu is %s, not a string", where,
			            i / 2, type_name(a->element[i]->type));
	return 0;
}

/* The value of field name, NULL if there is none; -1 if it is twice. */
static int kv_get(const redisReply *a, const char *name, const redisReply **val, const char *where,
                  char *err, size_t errlen)
{
	size_t n = strlen(name);

	*val = NULL;
	for (size_t i = 0; i < a->elements; i += 2) {
		const redisReply *k = a->element[i];

		if (k->len != n || memcmp(k->str, name, n) != 0)
			continue;
		if (*val)
			return fail(err, errlen, "%s: field \"%s\" given twice", where, name);
		*val = a->element[i + 1];
	}
	return 0;
}

/* A field that must be a string (when present). */
static int kv_str(const redisReply *a, const char *name, const redisReply **val, const char *where,
                  char *err, size_t errlen)
{
	if (kv_get(a, name, val, where, err, errlen) < 0)
		return -1;
	if (*val && (*val)->type != REDIS_REPLY_STRING)
		return fail(err, errlen, "%s: %s is %s, not a string", where, name,
		            type_name((*val)->type));
	return 0;
}

static int is(const redisReply *v, const char *s)
{
	return v->len == strlen(s) && memcmp(v->str, s, v->len) == 0;
}

static int shard_node(const redisReply *a, struct rd_node *n, const char *where, char *err,
                      size_t errlen)
{
	const redisReply *id, *port, *tls, *ip, *endpoint, *role, *health;
	char q[256];

	memset(n, 0, sizeof(*n));
	if (kv_check(a, where, err, errlen) < 0 || kv_str(a, "id", &id, where, err, errlen) < 0 ||
	    kv_get(a, "port", &port, where, err, errlen) < 0 ||
	    kv_get(a, "tls-port", &tls, where, err, errlen) < 0 ||
	    kv_str(a, "ip", &ip, where, err, errlen) < 0 ||
	    kv_str(a, "endpoint", &endpoint, where, err, errlen) < 0 ||
	    kv_str(a, "role", &role, where, err, errlen) < 0 ||
	    kv_str(a, "health", &health, where, err, errlen) < 0)
		return -1;
	if (!id)
		return fail(err, errlen, "%s: no id", where);
	if (set_id(n, id, where, err, errlen) < 0)
		return -1;
	if (!port && !tls)
		return fail(err, errlen, "%s: neither port nor tls-port", where);
	if (port && set_port(&n->port, port, where, "port", err, errlen) < 0)
		return -1;
	if (tls && set_port(&n->tls_port, tls, where, "tls-port", err, errlen) < 0)
		return -1;
	/* the endpoint clients are to use; "?" is a hostname nobody announced */
	if (endpoint && !is(endpoint, "?")) {
		if (set_host(n, endpoint, where, "endpoint", err, errlen) < 0)
			return -1;
	} else if (ip) {
		if (set_host(n, ip, where, "ip", err, errlen) < 0)
			return -1;
	} else {
		return fail(err, errlen, "%s: no usable endpoint and no ip", where);
	}
	if (!role)
		return fail(err, errlen, "%s: no role", where);
	if (is(role, "master"))
		n->role = CSL_PRIMARY;
	else if (is(role, "replica"))
		n->role = CSL_REPLICA;
	else
		return fail(err, errlen, "%s: role \"%s\" is neither master nor replica", where,
		            quote(q, sizeof(q), role->str, role->len));
	if (!health)
		n->health = CSL_HEALTH_UNKNOWN;
	else if (is(health, "online"))
		n->health = CSL_HEALTH_ONLINE;
	else if (is(health, "loading"))
		n->health = CSL_HEALTH_LOADING;
	else if (is(health, "fail") || is(health, "failed"))
		n->health = CSL_HEALTH_FAIL;
	else
		return fail(err, errlen, "%s: unknown health \"%s\"", where,
		            quote(q, sizeof(q), health->str, health->len));
	return 0;
}

/* Add a shard's node j, which must be new to the map. */
static int shard_add(struct csl_map *m, const redisReply *nodes, size_t j, int primary,
                     const char *where, char *err, size_t errlen)
{
	struct rd_node rd;
	char w[96];

	snprintf(w, sizeof(w), "%s, node %zu", where, j);
	if (shard_node(nodes->element[j], &rd, w, err, errlen) < 0)
		return -1;
	if (find_id(m, rd.id) >= 0)
		return fail(err, errlen, "%s: node %s is listed twice", w, rd.id);
	return add_node(m, &rd, primary, err, errlen);
}

static int shard(struct csl_map *m, const redisReply *sh, size_t i, char *err, size_t errlen)
{
	const redisReply *slots, *nodes;
	struct rd_node rd;
	char where[32];
	size_t primary = SIZE_MAX;
	int p;

	snprintf(where, sizeof(where), "shard %zu", i);
	if (kv_check(sh, where, err, errlen) < 0 ||
	    kv_get(sh, "slots", &slots, where, err, errlen) < 0 ||
	    kv_get(sh, "nodes", &nodes, where, err, errlen) < 0)
		return -1;
	if (!slots)
		return fail(err, errlen, "%s: no slots", where);
	if (!nodes)
		return fail(err, errlen, "%s: no nodes", where);
	if (slots->type != REDIS_REPLY_ARRAY || slots->elements % 2)
		return fail(err, errlen, "%s: slots is not an array of start and end pairs", where);
	for (size_t k = 0; k < slots->elements; k++)
		if (slots->element[k]->type != REDIS_REPLY_INTEGER)
			return fail(err, errlen, "%s: slots element %zu is %s, not an integer",
			            where, k, type_name(slots->element[k]->type));
	if (nodes->type != REDIS_REPLY_ARRAY)
		return fail(err, errlen, "%s: nodes is %s, not an array", where,
		            type_name(nodes->type));
	if (nodes->elements > CSL_MAX_NODES)
		return fail(err, errlen, "%s: %zu nodes, more than %d", where, nodes->elements,
		            CSL_MAX_NODES);
	/* every node read once to find the primary, which goes in first:
	 * its replicas name it by index */
	for (size_t j = 0; j < nodes->elements; j++) {
		char w[96];

		snprintf(w, sizeof(w), "%s, node %zu", where, j);
		if (shard_node(nodes->element[j], &rd, w, err, errlen) < 0)
			return -1;
		if (rd.role != CSL_PRIMARY)
			continue;
		if (primary != SIZE_MAX)
			return fail(err, errlen, "%s: a second primary (nodes %zu and %zu)", where,
			            primary, j);
		primary = j;
	}
	if (primary == SIZE_MAX) {
		if (slots->elements)
			return fail(err, errlen, "%s: serves slots but has no primary", where);
		return 0; /* replicas of nothing: no slot to route to them */
	}
	p = shard_add(m, nodes, primary, -1, where, err, errlen);
	if (p < 0)
		return -1;
	for (size_t j = 0; j < nodes->elements; j++)
		if (j != primary && shard_add(m, nodes, j, p, where, err, errlen) < 0)
			return -1;
	for (size_t k = 0; k < slots->elements; k += 2)
		if (assign(m, slots->element[k]->integer, slots->element[k + 1]->integer, p, where,
		           err, errlen) < 0)
			return -1;
	return 0;
}

static int top_array(const redisReply *r, const char *cmd, char *err, size_t errlen)
{
	char q[256];

	if (!r)
		return fail(err, errlen, "%s: no reply", cmd);
	if (r->type == REDIS_REPLY_ERROR) /* Redis 6 has no CLUSTER SHARDS: say what it said */
		return fail(err, errlen, "%s: error \"%s\"", cmd,
		            quote_max(q, sizeof(q), r->str, r->len, 160));
	if (r->type != REDIS_REPLY_ARRAY)
		return fail(err, errlen, "%s: %s, not an array", cmd, type_name(r->type));
	return 0;
}

int csl_map_from_shards(const redisReply *r, struct csl_map *out, char *err, size_t errlen)
{
	map_clear(out);
	if (top_array(r, "CLUSTER SHARDS", err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < r->elements; i++)
		if (shard(out, r->element[i], i, err, errlen) < 0)
			return -1;
	return 0;
}

/* ---- CLUSTER SLOTS ---- */

/* [endpoint, port, id, {metadata}]: endpoint nil is unknown-endpoint
 * (""), "?" an unannounced hostname (metadata's "ip" then). */
static int slots_node(const redisReply *a, struct rd_node *n, enum csl_role role, const char *where,
                      char *err, size_t errlen)
{
	const redisReply *ip = NULL;

	memset(n, 0, sizeof(*n));
	n->role = role;
	n->health = CSL_HEALTH_UNKNOWN;
	if (a->type != REDIS_REPLY_ARRAY)
		return fail(err, errlen, "%s: %s, not an array", where, type_name(a->type));
	if (a->elements < 3)
		return fail(err, errlen, "%s: %zu elements, not endpoint, port and id", where,
		            a->elements);
	if (a->elements > 3) {
		if (kv_check(a->element[3], where, err, errlen) < 0 ||
		    kv_str(a->element[3], "ip", &ip, where, err, errlen) < 0)
			return -1;
	}
	if (a->element[0]->type == REDIS_REPLY_STRING && !is(a->element[0], "?")) {
		if (set_host(n, a->element[0], where, "endpoint", err, errlen) < 0)
			return -1;
	} else if (a->element[0]->type == REDIS_REPLY_STRING) {
		if (!ip)
			return fail(err, errlen, "%s: endpoint \"?\" and no ip", where);
		if (set_host(n, ip, where, "ip", err, errlen) < 0)
			return -1;
	} else if (a->element[0]->type != REDIS_REPLY_NIL) {
		return fail(err, errlen, "%s: endpoint is %s, not a string or nil", where,
		            type_name(a->element[0]->type));
	}
	if (set_port(&n->port, a->element[1], where, "port", err, errlen) < 0)
		return -1;
	if (a->element[2]->type != REDIS_REPLY_STRING)
		return fail(err, errlen, "%s: id is %s, not a string", where,
		            type_name(a->element[2]->type));
	return set_id(n, a->element[2], where, err, errlen);
}

/* The index of a node of a range: the one already in the map if the id
 * is known (it must be the same node, in the same role, following the
 * same primary), else a new one. */
static int range_node(struct csl_map *m, const struct rd_node *rd, int primary, const char *where,
                      char *err, size_t errlen)
{
	int i = find_id(m, rd->id);
	const struct csl_node *x;
	char a[300];

	if (i < 0)
		return add_node(m, rd, primary, err, errlen);
	x = &m->nodes[i];
	if (strcmp(x->host, rd->host) != 0 || x->port != rd->port)
		return fail(err, errlen, "%s: node %s is at %s:%d here, at %s before", where,
		            rd->id, rd->host, rd->port, addr(a, sizeof(a), x));
	if (x->role != rd->role)
		return fail(err, errlen, "%s: node %s is a %s here, a %s before", where, rd->id,
		            rd->role == CSL_PRIMARY ? "primary" : "replica",
		            x->role == CSL_PRIMARY ? "primary" : "replica");
	if (rd->role == CSL_REPLICA && x->primary != primary)
		return fail(err, errlen, "%s: replica %s follows %s here, %s before", where, rd->id,
		            m->nodes[primary].id, m->nodes[x->primary].id);
	return i;
}

int csl_map_from_slots(const redisReply *r, struct csl_map *out, char *err, size_t errlen)
{
	map_clear(out);
	if (top_array(r, "CLUSTER SLOTS", err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *e = r->element[i];
		struct rd_node rd;
		char where[32], w[96];
		int p;

		snprintf(where, sizeof(where), "range %zu", i);
		if (e->type != REDIS_REPLY_ARRAY)
			return fail(err, errlen, "%s: %s, not an array", where, type_name(e->type));
		if (e->elements < 3)
			return fail(err, errlen, "%s: %zu elements, not start, end and a primary",
			            where, e->elements);
		for (size_t k = 0; k < 2; k++)
			if (e->element[k]->type != REDIS_REPLY_INTEGER)
				return fail(err, errlen, "%s: %s is %s, not an integer", where,
				            k ? "end" : "start", type_name(e->element[k]->type));
		snprintf(w, sizeof(w), "%s, primary", where);
		if (slots_node(e->element[2], &rd, CSL_PRIMARY, w, err, errlen) < 0)
			return -1;
		p = range_node(out, &rd, -1, w, err, errlen);
		if (p < 0)
			return -1;
		for (size_t k = 3; k < e->elements; k++) {
			snprintf(w, sizeof(w), "%s, replica %zu", where, k - 3);
			if (slots_node(e->element[k], &rd, CSL_REPLICA, w, err, errlen) < 0 ||
			    range_node(out, &rd, p, w, err, errlen) < 0)
				return -1;
		}
		if (assign(out, e->element[0]->integer, e->element[1]->integer, p, where, err,
		           errlen) < 0)
			return -1;
	}
	return 0;
}

/* ---- questions to a map ---- */

int csl_map_uncovered(const struct csl_map *m, char *buf, size_t len)
{
	size_t o = 0;
	int count = 0, cut = !buf || len < 4;

	if (buf && len)
		buf[0] = '\0';
	for (int s = 0; s < CSL_SLOTS; s++) {
		int e = s;
		char r[32];
		int n;

		if (m->slot[s] != CSL_NO_NODE)
			continue;
		while (e + 1 < CSL_SLOTS && m->slot[e + 1] == CSL_NO_NODE)
			e++;
		count += e - s + 1;
		if (!cut) {
			n = e > s ? snprintf(r, sizeof(r), "%s%d-%d", o ? ", " : "", s, e)
			          : snprintf(r, sizeof(r), "%s%d", o ? ", " : "", s);
			/* room left for ", ..." and the NUL after it */
			if (o + (size_t)n + 6 <= len) {
				memcpy(buf + o, r, (size_t)n + 1);
				o += (size_t)n;
			} else {
				snprintf(buf + o, len - o, "%s...", o ? ", " : "");
				cut = 1;
			}
		}
		s = e;
	}
	return count;
}

int csl_map_find(const struct csl_map *m, const char *host, int port)
{
	for (int i = 0; i < m->n_nodes; i++)
		if (strcmp(m->nodes[i].host, host) == 0 &&
		    (m->nodes[i].port == port || m->nodes[i].tls_port == port))
			return i;
	return -1;
}

/* The index in m of node n of another map, or -1. */
static int same_node(const struct csl_map *m, const struct csl_node *n)
{
	for (int i = 0; i < m->n_nodes; i++) {
		const struct csl_node *o = &m->nodes[i];
		if (o->id[0] && n->id[0] ? strcmp(o->id, n->id) == 0
		                         : strcmp(o->host, n->host) == 0 && o->port == n->port)
			return i;
	}
	return -1;
}

static int replicas_of(const struct csl_map *m, int p)
{
	int k = 0;
	for (int i = 0; i < m->n_nodes; i++)
		k += m->nodes[i].role == CSL_REPLICA && m->nodes[i].primary == p;
	return k;
}

int csl_map_diff(const struct csl_map *old, const struct csl_map *new_map, struct csl_change *out,
                 int max)
{
	struct csl_change g[CSL_DIFF_MAX]; /* about 10 kB */
	int was[CSL_MAX_NODES];            /* each new node's index in old, or -1 */
	for (int k = 0; k < new_map->n_nodes; k++)
		was[k] = same_node(old, &new_map->nodes[k]);
	int n = 0;
	for (int s = 0; s < CSL_SLOTS; s++) {
		uint16_t t = new_map->slot[s];
		if (t == CSL_NO_NODE)
			continue;
		int from = old->slot[s] == CSL_NO_NODE ? -1 : old->slot[s];
		if (from >= 0 && was[t] == from)
			continue; /* the same primary */
		int k = 0;
		while (k < n && !(g[k].from == from && g[k].to == t))
			k++;
		if (k == n) {
			if (n == CSL_DIFF_MAX)
				return -1; /* hundreds of primaries all reshuffled at once */
			const struct csl_node *w = was[t] >= 0 ? &old->nodes[was[t]] : NULL;
			/* keys moved with the slot only from a primary that is alive
			 * and still in the cluster: slots taken from a failed or
			 * forgotten one (ADDSLOTS, SETSLOT NODE) come with nothing */
			int from_alive = from >= 0 && old->nodes[from].health != CSL_HEALTH_FAIL &&
			                 same_node(new_map, &old->nodes[from]) >= 0;
			g[k].from = from;
			g[k].to = t;
			g[k].slots = 0;
			g[k].replicas = from >= 0 ? replicas_of(old, from) : 0;
			if (w && w->role == CSL_REPLICA && w->primary == from)
				g[k].kind = CSL_CH_PROMOTED;
			else if (w && w->role == CSL_PRIMARY && from_alive)
				g[k].kind = CSL_CH_MOVED;
			else
				g[k].kind = CSL_CH_NEW;
			n++;
		}
		g[k].slots++;
	}
	for (int k = 0; k < n && k < max; k++)
		out[k] = g[k];
	return n;
}

/* ---- redirections ---- */

/* err begins with the word w, alone or followed by a space. */
static int word(const char *err, size_t len, const char *w)
{
	size_t n = strlen(w);

	return len >= n && memcmp(err, w, n) == 0 && (len == n || err[n] == ' ');
}

/* A decimal number of s..e, as Redis prints one (%d): digits only, no
 * sign, no leading zero; -1 if it is not one or is above max. */
static long number(const char *s, const char *e, long max)
{
	long v = 0;

	if (s == e || e - s > 5 || (*s == '0' && e - s > 1))
		return -1;
	for (; s < e; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v <= max ? v : -1;
}

enum csl_redirect_kind csl_parse_redirect(const char *err, size_t len, struct csl_redirect *out)
{
	const char *p, *end, *sp, *colon = NULL;
	long slot, port;
	size_t skip;

	out->kind = CSL_R_NONE;
	out->slot = -1;
	out->host[0] = '\0';
	out->port = 0;
	if (!err)
		return CSL_R_NONE;
	if (word(err, len, "TRYAGAIN"))
		return out->kind = CSL_R_TRYAGAIN;
	if (word(err, len, "CLUSTERDOWN"))
		return out->kind = CSL_R_CLUSTERDOWN;
	if (word(err, len, "CROSSSLOT"))
		return out->kind = CSL_R_CROSSSLOT;
	if (word(err, len, "MOVED"))
		skip = sizeof("MOVED");
	else if (word(err, len, "ASK"))
		skip = sizeof("ASK");
	else
		return CSL_R_NONE;
	out->kind = CSL_R_MALFORMED;
	if (len < skip)
		return CSL_R_MALFORMED; /* "MOVED" alone */
	p = err + skip;
	end = err + len;
	sp = memchr(p, ' ', (size_t)(end - p));
	if (!sp || (slot = number(p, sp, CSL_SLOTS - 1)) < 0)
		return CSL_R_MALFORMED;
	for (const char *c = sp + 1; c < end; c++)
		if (*c == ':')
			colon = c; /* the last: an IPv6 host has colons of its own */
	if (!colon || (port = number(colon + 1, end, 65535)) < 1)
		return CSL_R_MALFORMED;
	if (!host_ok(sp + 1, (size_t)(colon - sp - 1)))
		return CSL_R_MALFORMED;
	memcpy(out->host, sp + 1, (size_t)(colon - sp - 1));
	out->host[colon - sp - 1] = '\0';
	out->slot = (int)slot;
	out->port = (int)port;
	return out->kind = err[0] == 'M' ? CSL_R_MOVED : CSL_R_ASK;
}

enum csl_action csl_classify(const redisReply *r)
{
	struct csl_redirect rd;

	if (!r)
		return CSL_FAIL;
	if (r->type != REDIS_REPLY_ERROR)
		return CSL_OK;
	switch (csl_parse_redirect(r->str, r->len, &rd)) {
	case CSL_R_MOVED:
		return CSL_MOVED;
	case CSL_R_ASK:
		return CSL_ASK;
	case CSL_R_TRYAGAIN:
	case CSL_R_CLUSTERDOWN:
		return CSL_RETRY;
	case CSL_R_NONE:
	case CSL_R_CROSSSLOT:
	case CSL_R_MALFORMED:
		break;
	}
	return CSL_FAIL;
}
