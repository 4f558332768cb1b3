/* cfg: the YAML configuration, loaded through a table of key, type, offset. */
#ifndef LOCKD_CFG_H
#define LOCKD_CFG_H

#include <stddef.h>
#include <stdint.h>

#include "cfg_listen.h"
#include "cfg_sentinel.h"

#define CONFIG_MAX_MASTERS 15
#define CONFIG_MAX_LISTEN  16

struct config {
	char *listen[CONFIG_MAX_LISTEN]; /* "HOST:PORT" or "unix:PATH" */
	int nlisten;
	struct cfg_tls listen_tls[CONFIG_MAX_LISTEN]; /* of listen[i] */
	char *unix_socket_mode;                       /* octal string, e.g. "0660" */
	char *password;                               /* "" when AUTH is not required */
	char *password_file;                          /* "" or where password was read from */
	int allow_unauthenticated; /* may listen beyond loopback without a password */
	char *log_level;           /* error, warn, info, debug */
	char *log_target;          /* stderr or syslog */

	char *masters[CONFIG_MAX_MASTERS]; /* "HOST:PORT", or "sentinel:NAME" (sentinel[i]) */
	int nmasters;
	struct cfg_sentinel sentinel[CONFIG_MAX_MASTERS]; /* of masters[i] */
	char *sentinel_password;                          /* AUTH on every Sentinel; "" for none */
	int64_t wait_replicas; /* replicas that must acknowledge a batch of writes */
	int64_t timeout_ms;
	char *key_prefix;
	char *redis_password;
	char *redis_password_file;    /* "" or where redis_password was read from */
	int64_t restart_exclusion_ms; /* -1: lease_ms + lost_delay_ms (cfg_exclusion_ms) */
	int64_t reconnect_max_ms;

	int64_t lease_ms;
	double drift_factor;
	int64_t handoff_limit;
	int64_t fence_idle_ms; /* a fence counter expires this long after its last grant */
	int64_t lost_delay_ms; /* lock-delay of a hold without DELAY (1.4), 0: none */

	int64_t max_clients;
	int64_t max_line;
	int64_t max_key_len;
	int64_t max_locks_per_session;
	int64_t reqs_per_event;
	int64_t max_waiters;         /* sessions waiting in LOCK at once; 0: no limit */
	int64_t max_waiters_per_key; /* sessions waiting for one key; 0: no limit */
	int64_t max_permits;         /* the largest n of PERMITS n */
	int64_t max_value_len;       /* the longest CAMPAIGN or PROCLAIM value (1.3) */
	int64_t max_keys;            /* the largest n of LOCKALL n (1.4) */
	int64_t max_observations;    /* names one connection observes at once (1.3) */
	int64_t line_timeout_ms;     /* a line must be finished this long after it began */
	int64_t idle_timeout_ms;     /* close a session idle this long; 0: never */
	int64_t max_clients_per_ip;  /* connections from one address; 0: no limit */
	int64_t max_auth_failures;   /* failed AUTHs before a session is closed; 0: never */
	int64_t max_sessions;        /* resumable sessions here, detached ones too */
	int64_t max_sessions_per_ip; /* of those, last connected from one address; 0: no limit */
	int64_t max_output_bytes;    /* output pending for a connection that cuts it; 0: no limit */

	int64_t grace_ms;     /* a detached resumable session's default grace (1.2) */
	int64_t max_grace_ms; /* the longest grace SESSION GRACE may ask */

	char *metrics_listen; /* "" when off */

	char *name; /* how WHO names this lockd (1.4); "" until main sets the default
	               (cfg_default_name) */
};

/* Fill c with the built-in defaults. */
void cfg_defaults(struct config *c);
/* Load a YAML file over the defaults. On error returns -1 with
 * "FILE:LINE:COLUMN: message" in err and c left with defaults. */
int cfg_load_file(struct config *c, const char *path, char *err, size_t errlen);
/* The same for text in memory; name stands for the file in messages. */
int cfg_load_string(struct config *c, const char *name, const char *text, size_t len, char *err,
                    size_t errlen);
void cfg_free(struct config *c);
int cfg_unix_mode(const struct config *c);
int64_t cfg_exclusion_ms(const struct config *c);
/* A TCP listen entry beyond loopback on which clients need no password
 * (nor a client certificate), or NULL. */
const char *cfg_open_listener(const struct config *c);
/* The default of the key name: host, then ':' and the port of the first
 * listen address (or its path, for a Unix socket), into out (len > 1);
 * bytes a name may not have (blanks, control bytes, non-ASCII) become
 * '_', and it is cut at CFG_NAME_MAX bytes. */
#define CFG_NAME_MAX 256
void cfg_default_name(const struct config *c, const char *host, char *out, size_t len);
/* Print every dotted key, one per line (for the docs check). */
void cfg_print_keys(void);

#endif
