/* cfg: the YAML configuration, loaded through a table of key, type, offset.
 *
 * libyaml's event parser gives the mark (line, column) of every node, so
 * every message can name FILE:LINE:COLUMN, 1-based as editors count. The
 * events and the failure's wording are cfg_yaml's; the mapping forms of a
 * list's entries are cfg_listen's and cfg_sentinel's, which fill their
 * parts of struct config and know nothing of its table of keys. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "log.h"
#include "util.h"
#include "cfg.h"
#include "cfg_listen.h"
#include "cfg_sentinel.h"
#include "cfg_yaml.h"

#define CFG_NKEYS_MAX 64 /* the table of keys has at most this many */

struct loader {
	struct cfgy y; /* the text, the parser and the first failure */
	struct config *c;
	unsigned char seen[CFG_NKEYS_MAX];
	yaml_mark_t marks[CFG_NKEYS_MAX]; /* where each key was set, for cross-key checks */
	yaml_mark_t entry_marks[CONFIG_MAX_MASTERS]; /* where each redis.masters entry is */
	const char *dir; /* of the file, for relative paths; NULL: read no files */
};

enum ctype {
	CT_SECTION, /* a mapping of further keys */
	CT_INT,     /* integer within [min, max] */
	CT_DOUBLE,  /* number within [min, max] */
	CT_BOOL,    /* true or false */
	CT_STR,     /* string, checked by a validator */
	CT_LIST,    /* sequence of strings, each checked by a validator */
	CT_LISTEN,  /* CT_LIST whose entries may also be {address, tls} mappings */
};

typedef const char *(*validator)(const char *s);

struct ckey {
	const char *name; /* dotted path */
	enum ctype type;
	size_t off;      /* of the value (CT_LIST: of the array) */
	size_t countoff; /* CT_LIST: of the count */
	double min, max; /* CT_INT/CT_DOUBLE range; CT_LIST/CT_STR length range */
	validator check; /* CT_STR/CT_LIST: NULL or returns a message */
};

/* A numeric TCP address: IPv4 is kept as v4-mapped IPv6, so that one
 * comparison covers both families. */
struct ip {
	int v6;              /* written as IPv6 */
	unsigned char b[16]; /* the address, IPv4 as ::ffff:a.b.c.d */
	int port;
};

/* 0 when a is a numeric IP address (IPv6 may carry a %scope). */
static int ip_of(const struct addr *a, struct ip *ip)
{
	char host[sizeof(a->host)];
	unsigned char v4[4];

	memset(ip, 0, sizeof(*ip));
	ip->port = a->port;
	snprintf(host, sizeof(host), "%s", a->host);
	if (inet_pton(AF_INET, host, v4) == 1) {
		ip->b[10] = ip->b[11] = 0xff;
		memcpy(ip->b + 12, v4, 4);
		return 0;
	}
	char *scope = strchr(host, '%');
	if (scope && scope[1] != '\0')
		*scope = '\0';
	ip->v6 = 1;
	return inet_pton(AF_INET6, host, ip->b) == 1 ? 0 : -1;
}

static int ip_mapped(const struct ip *ip)
{
	static const unsigned char pre[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	return memcmp(ip->b, pre, 12) == 0;
}

/* 0.0.0.0, or :: (which on Linux also takes IPv4 unless bindv6only=1). */
static int ip_any(const struct ip *ip)
{
	static const unsigned char zero[16];
	return ip->v6 ? memcmp(ip->b, zero, 16) == 0
	              : ip_mapped(ip) && memcmp(ip->b + 12, zero, 4) == 0;
}

static int ip_loopback(const struct ip *ip)
{
	static const unsigned char one[16] = {[15] = 1};
	return ip_mapped(ip) ? ip->b[12] == 127 : memcmp(ip->b, one, 16) == 0;
}

/* Would binding both fail with EADDRINUSE? */
static int ip_clash(const struct ip *a, const struct ip *b)
{
	if (a->port != b->port)
		return 0;
	if (memcmp(a->b, b->b, 16) == 0)
		return 1;
	if (ip_any(a) && (a->v6 || b->v6 == a->v6))
		return 1;
	return ip_any(b) && (b->v6 || a->v6 == b->v6);
}

/* lockd binds the address as written: a name (localhost) would fail at start. */
static const char *v_listen(const char *s)
{
	struct addr a;
	struct ip ip;
	const char *why = addr_parse(s, 1, 0, &a);
	if (!why && a.kind == ADDR_TCP && ip_of(&a, &ip) != 0)
		why = "host must be a numeric IP address";
	return why;
}

static const char *v_master(const char *s)
{
	struct addr a;
	return addr_parse(s, 0, 0, &a);
}

static const char *v_mode(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 4)
		return "must be 1 to 4 octal digits, e.g. \"0660\"";
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '7')
			return "must be octal digits, e.g. \"0660\"";
	if (strtol(s, NULL, 8) > 0777)
		return "must be 0000 to 0777 (no setuid, setgid or sticky bits)";
	return NULL;
}

/* AUTH takes one token, so a password with blanks could never be sent. */
static const char *v_password(const char *s)
{
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
			return "must be printable ASCII without spaces";
	return NULL;
}

static const char *v_level(const char *s)
{
	enum log_level l;
	return log_level_parse(s, &l) == 0 ? NULL : "must be one of error, warn, info, debug";
}

static const char *v_target(const char *s)
{
	return strcmp(s, "stderr") == 0 || strcmp(s, "syslog") == 0 ? NULL
	                                                            : "must be stderr or syslog";
}

static const char *v_prefix(const char *s)
{
	for (const char *p = s; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			return "must be printable ASCII without spaces";
	return NULL;
}

/* A name is one word of a WHO reply line (1.4). */
static const char *v_name(const char *s)
{
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
			return "must be printable ASCII without blanks";
	return NULL;
}

static const char *v_optaddr(const char *s)
{
	struct addr a;
	return s[0] == '\0' ? NULL : addr_parse(s, 0, 1, &a);
}

#define OFF(f) offsetof(struct config, f)
static const struct ckey keys[] = {
    {"listen", CT_LISTEN, OFF(listen), OFF(nlisten), 1, CONFIG_MAX_LISTEN, v_listen},
    {"unix_socket_mode", CT_STR, OFF(unix_socket_mode), 0, 1, 4, v_mode},
    {"password", CT_STR, OFF(password), 0, 0, 256, v_password},
    {"password_file", CT_STR, OFF(password_file), 0, 0, 4096, NULL},
    {"allow_unauthenticated", CT_BOOL, OFF(allow_unauthenticated), 0, 0, 0, NULL},
    {"log_level", CT_STR, OFF(log_level), 0, 1, 16, v_level},
    {"log_target", CT_STR, OFF(log_target), 0, 1, 16, v_target},
    {"redis", CT_SECTION, 0, 0, 0, 0, NULL},
    {"redis.masters", CT_LIST, OFF(masters), OFF(nmasters), 1, CONFIG_MAX_MASTERS, v_master},
    {"redis.timeout_ms", CT_INT, OFF(timeout_ms), 0, 1, 60000, NULL},
    {"redis.key_prefix", CT_STR, OFF(key_prefix), 0, 1, 64, v_prefix},
    {"redis.password", CT_STR, OFF(redis_password), 0, 0, 256, NULL},
    {"redis.password_file", CT_STR, OFF(redis_password_file), 0, 0, 4096, NULL},
    {"redis.sentinel_password", CT_STR, OFF(sentinel_password), 0, 0, 256, v_password},
    {"redis.wait_replicas", CT_INT, OFF(wait_replicas), 0, 0, 16, NULL},
    {"redis.restart_exclusion_ms", CT_INT, OFF(restart_exclusion_ms), 0, 0, 2147483647, NULL},
    {"redis.reconnect_max_ms", CT_INT, OFF(reconnect_max_ms), 0, 10, 60000, NULL},
    {"locks", CT_SECTION, 0, 0, 0, 0, NULL},
    {"locks.lease_ms", CT_INT, OFF(lease_ms), 0, 100, 2147483647, NULL},
    {"locks.drift_factor", CT_DOUBLE, OFF(drift_factor), 0, 0, 0.5, NULL},
    {"locks.handoff_limit", CT_INT, OFF(handoff_limit), 0, 1, 1000000, NULL},
    {"locks.fence_idle_ms", CT_INT, OFF(fence_idle_ms), 0, 1000, 2147483647, NULL},
    {"locks.lost_delay_ms", CT_INT, OFF(lost_delay_ms), 0, 0, 2147483647, NULL},
    {"limits", CT_SECTION, 0, 0, 0, 0, NULL},
    {"limits.max_clients", CT_INT, OFF(max_clients), 0, 1, 1000000, NULL},
    {"limits.max_line", CT_INT, OFF(max_line), 0, 16, 1048576, NULL},
    {"limits.max_key_len", CT_INT, OFF(max_key_len), 0, 1, 65536, NULL},
    {"limits.max_locks_per_session", CT_INT, OFF(max_locks_per_session), 0, 1, 10000000, NULL},
    {"limits.reqs_per_event", CT_INT, OFF(reqs_per_event), 0, 1, 10000, NULL},
    {"limits.max_waiters", CT_INT, OFF(max_waiters), 0, 0, 10000000, NULL},
    {"limits.max_waiters_per_key", CT_INT, OFF(max_waiters_per_key), 0, 0, 10000000, NULL},
    {"limits.max_permits", CT_INT, OFF(max_permits), 0, 1, 65536, NULL},
    {"limits.max_value_len", CT_INT, OFF(max_value_len), 0, 1, 65536, NULL},
    {"limits.max_keys", CT_INT, OFF(max_keys), 0, 1, 4096, NULL},
    {"limits.max_observations", CT_INT, OFF(max_observations), 0, 1, 10000000, NULL},
    {"limits.line_timeout_ms", CT_INT, OFF(line_timeout_ms), 0, 100, 2147483647, NULL},
    {"limits.idle_timeout_ms", CT_INT, OFF(idle_timeout_ms), 0, 0, 2147483647, NULL},
    {"limits.max_clients_per_ip", CT_INT, OFF(max_clients_per_ip), 0, 0, 1000000, NULL},
    {"limits.max_auth_failures", CT_INT, OFF(max_auth_failures), 0, 0, 1000000, NULL},
    {"limits.max_sessions", CT_INT, OFF(max_sessions), 0, 1, 10000000, NULL},
    {"limits.max_sessions_per_ip", CT_INT, OFF(max_sessions_per_ip), 0, 0, 10000000, NULL},
    {"limits.max_output_bytes", CT_INT, OFF(max_output_bytes), 0, 0, 2147483647, NULL},
    {"sessions", CT_SECTION, 0, 0, 0, 0, NULL},
    {"sessions.grace_ms", CT_INT, OFF(grace_ms), 0, 1, 2147483647, NULL},
    {"sessions.max_grace_ms", CT_INT, OFF(max_grace_ms), 0, 1, 2147483647, NULL},
    {"metrics", CT_SECTION, 0, 0, 0, 0, NULL},
    {"metrics.listen", CT_STR, OFF(metrics_listen), 0, 0, 300, v_optaddr},
    {"name", CT_STR, OFF(name), 0, 1, CFG_NAME_MAX, v_name},
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))
_Static_assert(NKEYS <= CFG_NKEYS_MAX, "raise CFG_NKEYS_MAX");

void cfg_print_keys(void)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].type != CT_SECTION)
			printf("%s\n", keys[i].name);
}

static char **str_at(struct config *c, size_t off)
{
	return (char **)((char *)c + off);
}

void cfg_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	c->listen[0] = strdup("127.0.0.1:7390");
	c->nlisten = 1;
	c->unix_socket_mode = strdup("0660");
	c->password = strdup("");
	c->password_file = strdup("");
	c->log_level = strdup("info");
	c->log_target = strdup("stderr");
	c->masters[0] = strdup("127.0.0.1:6379");
	c->nmasters = 1;
	c->timeout_ms = 50;
	c->key_prefix = strdup("lockd:");
	c->redis_password = strdup("");
	c->redis_password_file = strdup("");
	c->sentinel_password = strdup("");
	c->restart_exclusion_ms = -1;
	c->reconnect_max_ms = 1000;
	c->lease_ms = 30000;
	c->drift_factor = 0.01;
	c->handoff_limit = 16;
	c->fence_idle_ms = 7LL * 24 * 3600 * 1000;
	c->max_clients = 10000;
	c->max_line = 4096;
	c->max_key_len = 256;
	c->max_locks_per_session = 10000;
	c->reqs_per_event = 20;
	c->max_permits = 1024;
	c->max_value_len = 256;
	c->max_keys = 64;
	c->max_observations = 1000;
	c->line_timeout_ms = 60000;
	c->max_auth_failures = 5;
	c->max_sessions = 10000;
	c->max_output_bytes = 8388608;
	c->grace_ms = 10000;
	c->max_grace_ms = 60000;
	c->metrics_listen = strdup("");
	c->name = strdup("");
}

void cfg_default_name(const struct config *c, const char *host, char *out, size_t len)
{
	struct addr a;
	char where[sizeof(a.path) + 16] = "";
	if (c->nlisten > 0 && !addr_parse(c->listen[0], 1, 0, &a)) {
		if (a.kind == ADDR_UNIX)
			snprintf(where, sizeof(where), ":%s", a.path);
		else
			snprintf(where, sizeof(where), ":%d", a.port);
	}
	if (len > CFG_NAME_MAX + 1)
		len = CFG_NAME_MAX + 1;
	snprintf(out, len, "%s%s", host[0] ? host : "localhost", where);
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
			*p = '_';
}

void cfg_free(struct config *c)
{
	for (size_t i = 0; i < NKEYS; i++) {
		if (keys[i].type == CT_STR) {
			free(*str_at(c, keys[i].off));
		} else if (keys[i].type == CT_LIST || keys[i].type == CT_LISTEN) {
			char **arr = str_at(c, keys[i].off);
			int n = *(int *)((char *)c + keys[i].countoff);
			for (int j = 0; j < n; j++)
				free(arr[j]);
		}
	}
	for (int j = 0; j < CONFIG_MAX_MASTERS; j++)
		cfg_sentinel_free(&c->sentinel[j]);
	for (int j = 0; j < CONFIG_MAX_LISTEN; j++)
		cfg_tls_free(&c->listen_tls[j]);
	memset(c, 0, sizeof(*c));
}

int cfg_unix_mode(const struct config *c)
{
	return (int)strtol(c->unix_socket_mode, NULL, 8);
}

int64_t cfg_exclusion_ms(const struct config *c)
{
	/* lease + delay: what a master keeps for a hold (1.4); a larger
	 * DELAY asked for raises it (membership.c, mb_note_delay) */
	return c->restart_exclusion_ms < 0 ? c->lease_ms + c->lost_delay_ms
	                                   : c->restart_exclusion_ms;
}

/* --- the loader --- */

static int lookup(const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int check_str(struct loader *l, const struct ckey *k, const char *v, size_t len,
                     yaml_mark_t m)
{
	if (memchr(v, '\0', len))
		return cfgy_fail(&l->y, m, "%s: NUL byte in string", k->name);
	if (k->type == CT_STR && ((double)len < k->min || (double)len > k->max))
		return cfgy_fail(&l->y, m, "%s: length must be %g to %g bytes", k->name, k->min,
		                 k->max);
	if (k->check) {
		const char *why = k->check(v);
		/* a password never goes into a message, which may be logged */
		if (why && strstr(k->name, "password"))
			return cfgy_fail(&l->y, m, "%s: %s", k->name, why);
		if (why)
			return cfgy_fail(&l->y, m, "%s: \"%s\": %s", k->name, v, why);
	}
	return 0;
}

/* A scalar that YAML would read as a string, not a number or null. */
static int is_plain_int(const char *v)
{
	const char *p = v;
	if (*p == '-' || *p == '+')
		p++;
	if (!*p)
		return 0;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return 1;
}

static int set_scalar(struct loader *l, const struct ckey *k, yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	yaml_mark_t m = ev->start_mark;
	int quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;

	switch (k->type) {
	case CT_INT: {
		if (quoted || !is_plain_int(v))
			return cfgy_fail(&l->y, m, "%s: expected an integer, got \"%s\"", k->name,
			                 v);
		errno = 0;
		long long x = strtoll(v, NULL, 10);
		if (errno || x < (long long)k->min || x > (long long)k->max)
			return cfgy_fail(&l->y, m, "%s: %s is out of range (%.0f to %.0f)", k->name,
			                 v, k->min, k->max);
		*(int64_t *)((char *)l->c + k->off) = x;
		return 0;
	}
	case CT_DOUBLE: {
		char *end;
		if (quoted || len == 0 || strspn(v, "0123456789.eE+-") != len)
			return cfgy_fail(&l->y, m, "%s: expected a number, got \"%s\"", k->name, v);
		errno = 0;
		double x = strtod(v, &end);
		if (*end || errno || !isfinite(x))
			return cfgy_fail(&l->y, m, "%s: expected a number, got \"%s\"", k->name, v);
		if (x < k->min || x > k->max)
			return cfgy_fail(&l->y, m, "%s: %s is out of range (%g to %g)", k->name, v,
			                 k->min, k->max);
		*(double *)((char *)l->c + k->off) = x;
		return 0;
	}
	case CT_BOOL: {
		int t = !quoted && strcmp(v, "true") == 0, f = !quoted && strcmp(v, "false") == 0;
		if (!t && !f)
			return cfgy_fail(&l->y, m, "%s: expected true or false, got \"%s\"",
			                 k->name, v);
		*(int *)((char *)l->c + k->off) = t;
		return 0;
	}
	case CT_STR: {
		if (cfgy_is_null(ev))
			return cfgy_fail(&l->y, m, "%s: expected a string, got null", k->name);
		if (check_str(l, k, v, len, m))
			return -1;
		char **slot = str_at(l->c, k->off);
		free(*slot);
		*slot = strdup(v);
		return 0;
	}
	default:
		return cfgy_fail(&l->y, m, "%s: expected a list, got a scalar", k->name);
	}
}

static int set_list(struct loader *l, const struct ckey *k, yaml_mark_t start)
{
	char **arr = str_at(l->c, k->off);
	int *count = (int *)((char *)l->c + k->countoff);
	yaml_event_t ev;
	int n = 0;

	for (int j = 0; j < *count; j++) {
		free(arr[j]);
		arr[j] = NULL;
	}
	*count = 0;
	int masters = k->off == OFF(masters); /* entries may be sentinel mappings */
	if (masters)
		for (int j = 0; j < CONFIG_MAX_MASTERS; j++)
			cfg_sentinel_free(&l->c->sentinel[j]);
	if (k->type == CT_LISTEN)
		for (int j = 0; j < CONFIG_MAX_LISTEN; j++)
			cfg_tls_free(&l->c->listen_tls[j]);
	int more;
	while ((more = cfgy_next_in(&l->y, &ev, YAML_SEQUENCE_END_EVENT)) > 0) {
		int entry =
		    (k->type == CT_LISTEN || masters) && ev.type == YAML_MAPPING_START_EVENT;
		if (ev.type != YAML_SCALAR_EVENT && !entry) {
			cfgy_fail(
			    &l->y, ev.start_mark, "%s: list items must be %s, got %s", k->name,
			    k->type == CT_LISTEN || masters ? "strings or mappings" : "strings",
			    cfgy_type_name(ev.type));
			yaml_event_delete(&ev);
			return -1;
		}
		if (n >= (int)k->max) {
			cfgy_fail(&l->y, ev.start_mark, "%s: at most %.0f entries", k->name,
			          k->max);
			yaml_event_delete(&ev);
			return -1;
		}
		yaml_mark_t vm = ev.start_mark;
		char *v = entry && masters ? cfg_master_entry(&l->y, &l->c->sentinel[n], &vm)
		          : entry          ? cfg_listen_entry(&l->y, &l->c->listen_tls[n], &vm)
		                           : strdup((const char *)ev.data.scalar.value);
		size_t vlen = entry ? (v ? strlen(v) : 0) : ev.data.scalar.length;
		yaml_event_delete(&ev);
		/* a sentinel entry's name was checked by cfg_master_entry */
		if (!v || (!(entry && masters) && check_str(l, k, v, vlen, vm)) ||
		    (v[0] == '\0' && cfgy_fail(&l->y, vm, "%s: empty entry", k->name))) {
			free(v);
			return -1;
		}
		for (int j = 0; j < n; j++)
			if (strcmp(arr[j], v) == 0) {
				cfgy_fail(&l->y, vm, "%s: \"%s\" is listed twice", k->name, v);
				free(v);
				return -1;
			}
		if (k->type == CT_LISTEN && l->c->listen_tls[n].cert &&
		    strncmp(v, "unix:", 5) == 0) {
			cfgy_fail(&l->y, vm, "%s: \"%s\": tls is for TCP listeners only", k->name,
			          v);
			free(v);
			return -1;
		}
		if (masters)
			l->entry_marks[n] = vm;
		arr[n++] = v;
		*count = n;
	}
	if (more < 0)
		return -1;
	if (n < (int)k->min)
		return cfgy_fail(&l->y, start, "%s: needs at least %.0f entry", k->name, k->min);
	return 0;
}

/* Parse the body of a mapping whose start event was consumed. */
static int parse_mapping(struct loader *l, const char *prefix)
{
	yaml_event_t ev;
	int more;

	while ((more = cfgy_next_in(&l->y, &ev, YAML_MAPPING_END_EVENT)) > 0) {
		if (ev.type != YAML_SCALAR_EVENT) {
			cfgy_fail(&l->y, ev.start_mark, "expected a key, got %s",
			          cfgy_type_name(ev.type));
			yaml_event_delete(&ev);
			return -1;
		}
		char name[128];
		snprintf(name, sizeof(name), "%s%s%s", prefix, prefix[0] ? "." : "",
		         (const char *)ev.data.scalar.value);
		yaml_mark_t km = ev.start_mark;
		/* "redis.timeout_ms:" at the top is not "redis: {timeout_ms:}". */
		int dotted = strchr((const char *)ev.data.scalar.value, '.') != NULL;
		yaml_event_delete(&ev);
		int i = dotted ? -1 : lookup(name);
		if (i < 0)
			return cfgy_fail(&l->y, km, "unknown key \"%s\"", name);
		if (l->seen[i])
			return cfgy_fail(&l->y, km, "duplicate key \"%s\" (first set at line %zu)",
			                 name, l->marks[i].line + 1);
		l->seen[i] = 1;
		l->marks[i] = km;

		const struct ckey *k = &keys[i];
		if (cfgy_next(&l->y, &ev))
			return -1;
		int rc;
		if (k->type == CT_SECTION) {
			if (ev.type != YAML_MAPPING_START_EVENT)
				rc = cfgy_fail(&l->y, ev.start_mark,
				               "%s: expected a mapping, got %s", name,
				               cfgy_type_name(ev.type));
			else
				rc = parse_mapping(l, name);
		} else if (k->type == CT_LIST || k->type == CT_LISTEN) {
			if (ev.type != YAML_SEQUENCE_START_EVENT)
				rc = cfgy_fail(&l->y, ev.start_mark, "%s: expected a list, got %s",
				               name, cfgy_type_name(ev.type));
			else
				rc = set_list(l, k, ev.start_mark);
		} else if (ev.type != YAML_SCALAR_EVENT) {
			rc = cfgy_fail(&l->y, ev.start_mark, "%s: expected a %s, got %s", name,
			               k->type == CT_STR    ? "string"
			               : k->type == CT_BOOL ? "boolean"
			                                    : "number",
			               cfgy_type_name(ev.type));
		} else {
			rc = set_scalar(l, k, &ev);
		}
		yaml_event_delete(&ev);
		if (rc)
			return -1;
	}
	return more; /* 0: the mapping ended */
}

static int parse_document(struct loader *l)
{
	yaml_event_t ev;
	int rc = 0;

	for (;;) {
		if (cfgy_next(&l->y, &ev))
			return -1;
		yaml_event_type_t t = ev.type;
		yaml_mark_t m = ev.start_mark;
		int empty_scalar = cfgy_is_null(&ev);
		yaml_event_delete(&ev);
		switch (t) {
		case YAML_STREAM_START_EVENT:
		case YAML_DOCUMENT_START_EVENT:
		case YAML_DOCUMENT_END_EVENT:
			continue;
		case YAML_STREAM_END_EVENT:
			return rc;
		case YAML_MAPPING_START_EVENT:
			if (rc == 1)
				return cfgy_fail(&l->y, m, "only one YAML document is allowed");
			if (parse_mapping(l, ""))
				return -1;
			rc = 1;
			continue;
		case YAML_SCALAR_EVENT:
			/* A document that is only "~" or empty: take the defaults. */
			if (rc == 0 && empty_scalar)
				continue;
			/* fallthrough */
		default:
			return cfgy_fail(&l->y, m, "the top level must be a mapping of keys");
		}
	}
}

/* The numeric TCP address of a listen entry, or -1 (unix, or not valid). */
static int listen_ip(const char *spec, struct ip *ip)
{
	struct addr a;
	if (addr_parse(spec, 1, 0, &a) || a.kind != ADDR_TCP)
		return -1;
	return ip_of(&a, ip);
}

const char *cfg_open_listener(const struct config *c)
{
	struct ip ip;
	if (c->password[0] || c->password_file[0])
		return NULL;
	for (int i = 0; i < c->nlisten; i++)
		/* with a ca, TLS asks every client for a certificate */
		if (listen_ip(c->listen[i], &ip) == 0 && !ip_loopback(&ip) && !c->listen_tls[i].ca)
			return c->listen[i];
	return NULL;
}

/* What start would refuse, found here so that lockd -t refuses it too:
 * listeners that cannot all be bound, a password given twice, and an open
 * network listener nobody has to authenticate on. */
static int listen_checks(struct loader *l)
{
	const struct config *c = l->c;
	yaml_mark_t lm = l->marks[lookup("listen")];
	struct ip ips[CONFIG_MAX_LISTEN], mip;
	struct addr a;

	for (int i = 0; i < c->nlisten; i++) {
		if (listen_ip(c->listen[i], &ips[i]) != 0)
			continue;
		for (int j = 0; j < i; j++)
			if (listen_ip(c->listen[j], &ips[j]) == 0 && ip_clash(&ips[j], &ips[i]))
				return cfgy_fail(
				    &l->y, lm,
				    "listen: \"%s\" and \"%s\" cannot both be bound (the "
				    "same port on overlapping addresses)",
				    c->listen[j], c->listen[i]);
		if (c->metrics_listen[0] && !addr_parse(c->metrics_listen, 0, 1, &a) &&
		    !ip_of(&a, &mip) && ip_clash(&mip, &ips[i]))
			return cfgy_fail(
			    &l->y, l->marks[lookup("metrics.listen")],
			    "metrics.listen: \"%s\" and listen \"%s\" cannot both be bound",
			    c->metrics_listen, c->listen[i]);
	}
	static const char *const pw[][2] = {{"password", "password_file"},
	                                    {"redis.password", "redis.password_file"}};
	for (int i = 0; i < 2; i++) {
		int p = lookup(pw[i][0]), f = lookup(pw[i][1]);
		const char *pv = *str_at(l->c, keys[p].off), *fv = *str_at(l->c, keys[f].off);
		if (l->seen[p] && pv[0] && fv[0])
			return cfgy_fail(&l->y, l->marks[f], "%s and %s are both set; keep one",
			                 pw[i][0], pw[i][1]);
	}
	const char *open = cfg_open_listener(c);
	if (open && !c->allow_unauthenticated)
		return cfgy_fail(
		    &l->y, lm,
		    "listen: \"%s\" is not a loopback address and clients need no "
		    "password: set password or password_file, or allow_unauthenticated: "
		    "true",
		    open);
	return 0;
}

/* The least limits.max_output_bytes but 0, and the least in lines of
 * limits.max_line: an event is about as long as the longest request
 * (a CAMPAIGN's key and value), and a reader that keeps up must never
 * reach the limit with the events of one moment. */
#define CFG_MIN_OUTPUT       65536
#define CFG_MIN_OUTPUT_LINES 4

/* The nodes entry j names: a standalone master's address, or a
 * cluster's seeds (a Sentinel entry names Sentinels: none). */
static int entry_nodes(const struct config *c, int j, const char *const **v)
{
	if (c->sentinel[j].cluster) {
		*v = (const char *const *)c->sentinel[j].seeds;
		return c->sentinel[j].nseeds;
	}
	*v = (const char *const *)&c->masters[j];
	return c->sentinel[j].nseeds ? 0 : 1;
}

/* An earlier entry that names a node entry j names too (a cluster listed
 * twice by different seeds, or one of its nodes listed as a standalone
 * master), or -1. */
static int shared_node(const struct config *c, int j)
{
	const char *const *a, *const *b;
	int na = entry_nodes(c, j, &a);
	for (int i = 0; i < j; i++) {
		int nb = entry_nodes(c, i, &b);
		for (int x = 0; x < na; x++)
			for (int y = 0; y < nb; y++)
				if (strcmp(a[x], b[y]) == 0)
					return i;
	}
	return -1;
}

static int cross_checks(struct loader *l)
{
	struct config *c = l->c;
	int i = lookup("limits.max_key_len");
	if (c->max_key_len > c->max_line)
		return cfgy_fail(&l->y, l->marks[l->seen[i] ? i : lookup("limits.max_line")],
		                 "limits.max_key_len (%lld) must not exceed limits.max_line (%lld)",
		                 (long long)c->max_key_len, (long long)c->max_line);
	i = lookup("redis.timeout_ms");
	if (c->timeout_ms * 3 >= c->lease_ms)
		return cfgy_fail(
		    &l->y, l->marks[l->seen[i] ? i : lookup("locks.lease_ms")],
		    "redis.timeout_ms (%lld) must be less than a third of locks.lease_ms "
		    "(%lld)",
		    (long long)c->timeout_ms, (long long)c->lease_ms);
	i = lookup("limits.max_output_bytes");
	int64_t least = c->max_line * CFG_MIN_OUTPUT_LINES;
	least = least > CFG_MIN_OUTPUT ? least : CFG_MIN_OUTPUT;
	if (c->max_output_bytes > 0 && c->max_output_bytes < least)
		return cfgy_fail(
		    &l->y, l->marks[l->seen[i] ? i : lookup("limits.max_line")],
		    "limits.max_output_bytes (%lld) must be 0 (no limit) or at least %lld "
		    "(65536, and %d times limits.max_line)",
		    (long long)c->max_output_bytes, (long long)least, CFG_MIN_OUTPUT_LINES);
	for (int j = 0; j < c->nmasters; j++)
		if (shared_node(c, j) >= 0)
			return cfgy_fail(
			    &l->y, l->entry_marks[j],
			    "redis.masters: \"%s\" names a node of entry %d (\"%s\"): one "
			    "deployment would count as two masters",
			    c->masters[j], shared_node(c, j) + 1, c->masters[shared_node(c, j)]);
	i = lookup("sessions.grace_ms");
	if (c->grace_ms > c->max_grace_ms)
		return cfgy_fail(
		    &l->y, l->marks[l->seen[i] ? i : lookup("sessions.max_grace_ms")],
		    "sessions.grace_ms (%lld) must not exceed sessions.max_grace_ms (%lld)",
		    (long long)c->grace_ms, (long long)c->max_grace_ms);
	return listen_checks(l);
}

#define SECRET_MAX 256

/* The password of pkey from the file named by fkey: the file's bytes
 * without the line ending at its end. A relative name is looked up in
 * $CREDENTIALS_DIRECTORY, where systemd's LoadCredential= puts the files
 * it hands over, or else next to the configuration file. */
static int read_secret(struct loader *l, const char *fkey, const char *pkey, int token)
{
	int fi = lookup(fkey), pi = lookup(pkey);
	const char *name = *str_at(l->c, keys[fi].off);
	const char *creds = getenv("CREDENTIALS_DIRECTORY");
	char path[4200], buf[SECRET_MAX + 3];
	yaml_mark_t m = l->marks[fi];
	struct stat st;
	size_t n = 0;
	ssize_t r = 0;

	if (!name[0])
		return 0;
	if (name[0] == '/')
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "%s/%s", creds && creds[0] ? creds : l->dir, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return cfgy_fail(&l->y, m, "%s: %s: cannot open: %s", fkey, path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return cfgy_fail(&l->y, m, "%s: %s: not a regular file", fkey, path);
	}
	while (n < sizeof(buf) && (r = read(fd, buf + n, sizeof(buf) - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
	}
	int e = errno;
	close(fd);
	const char *why = NULL;
	if (r < 0)
		why = strerror(e);
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	if (!why && n == 0)
		why = "the file is empty";
	else if (!why && n > SECRET_MAX)
		why = "longer than 256 bytes";
	else if (!why && (memchr(buf, '\0', n) || memchr(buf, '\n', n)))
		why = "must be one line, without NUL bytes";
	if (!why) {
		buf[n] = '\0';
		if (token)
			why = v_password(buf);
	}
	if (!why) {
		char **slot = str_at(l->c, keys[pi].off);
		free(*slot);
		*slot = strdup(buf);
	}
	explicit_bzero(buf, sizeof(buf));
	return why ? cfgy_fail(&l->y, m, "%s: %s: %s", fkey, path, why) : 0;
}

static int load(struct config *c, struct loader *l)
{
	int rc = parse_document(l);
	if (rc >= 0)
		rc = cross_checks(l);
	if (rc >= 0 && l->dir)
		rc = read_secret(l, "password_file", "password", 1) ||
		             read_secret(l, "redis.password_file", "redis.password", 0)
		         ? -1
		         : 0;
	cfgy_close(&l->y);
	if (rc < 0) {
		cfg_free(c);
		cfg_defaults(c);
		return -1;
	}
	return 0;
}

static int load_text(struct config *c, const char *name, const char *dir, const char *text,
                     size_t len, char *err, size_t errlen)
{
	struct loader l;

	memset(&l, 0, sizeof(l));
	l.dir = dir;
	l.c = c;
	cfgy_open(&l.y, name, text, len, err, errlen);
	return load(c, &l);
}

int cfg_load_string(struct config *c, const char *name, const char *text, size_t len, char *err,
                    size_t errlen)
{
	return load_text(c, name, NULL, text, len, err, errlen);
}

#define CFG_MAX_FILE (1 << 20) /* a config file larger than this is a mistake */

int cfg_load_file(struct config *c, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (!f) {
		snprintf(err, errlen, "%s:1:1: cannot open: %s", path, strerror(errno));
		return -1;
	}
	buf = malloc(CFG_MAX_FILE + 1);
	n = buf ? fread(buf, 1, CFG_MAX_FILE + 1, f) : 0;
	int bad = !buf || ferror(f) || n > CFG_MAX_FILE;
	fclose(f);
	if (bad) {
		snprintf(err, errlen, "%s:1:1: cannot read: %s", path,
		         n > CFG_MAX_FILE ? "larger than 1 MiB" : "read error");
		free(buf);
		return -1;
	}
	char *dir = strdup(path);
	int rc = dir ? load_text(c, path, dirname(dir), buf, n, err, errlen) : -1;
	if (!dir)
		snprintf(err, errlen, "%s:1:1: out of memory", path);
	free(dir);
	free(buf);
	return rc;
}
