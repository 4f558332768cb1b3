/* proto: the text protocol's request parser (pure: no I/O, no allocation). */
#ifndef LOCKD_PROTO_H
#define LOCKD_PROTO_H

#include <stddef.h>
#include <stdint.h>

enum cmd {
	CMD_PING,      /* PING [word] */
	CMD_LOCK,      /* LOCK key [SHARED | PERMITS n] [WAIT ms] [TTL ms] [DELAY ms] */
	CMD_TRYLOCK,   /* TRYLOCK key [SHARED | PERMITS n] [TTL ms] [DELAY ms] */
	CMD_UNLOCK,    /* UNLOCK key */
	CMD_EXTEND,    /* EXTEND key ms */
	CMD_STATUS,    /* STATUS key [PERMITS n] */
	CMD_HELD,      /* HELD */
	CMD_STATS,     /* STATS */
	CMD_AUTH,      /* AUTH password */
	CMD_QUIT,      /* QUIT */
	CMD_SESSION,   /* SESSION [GRACE ms] (1.2) */
	CMD_RESUME,    /* RESUME id secret (1.2) */
	CMD_CAMPAIGN,  /* CAMPAIGN name value [WAIT ms] [DELAY ms] (1.3, DELAY 1.4) */
	CMD_PROCLAIM,  /* PROCLAIM name value (1.3) */
	CMD_RESIGN,    /* RESIGN name (1.3) */
	CMD_LEADER,    /* LEADER name (1.3) */
	CMD_OBSERVE,   /* OBSERVE name (1.3) */
	CMD_UNOBSERVE, /* UNOBSERVE name (1.3) */
	CMD_WHO,       /* WHO key (1.4) */
	CMD_LOCKALL,   /* LOCKALL n key1 ... keyn [WAIT ms] [TTL ms] [DELAY ms] (1.4) */
	CMD_COUNT
};

/* Reply error classes, as on the wire after "ERR ". */
enum proto_err {
	PE_NONE,
	PE_PROTOCOL,
	PE_ARG,
	PE_KEY,
};

#define PROTO_MS_MAX 2147483647u

struct request {
	enum cmd cmd;
	const char *key; /* points into the parsed line (RESUME: the session id) */
	size_t klen;
	const char *word; /* PING word, AUTH password, RESUME secret, CAMPAIGN and
	                     PROCLAIM value (printable ASCII; its length is the
	                     caller's to check: limits.max_value_len); NULL if none */
	size_t wlen;
	int has_wait, has_ttl;
	uint32_t wait_ms; /* LOCK WAIT */
	uint32_t ttl_ms;  /* LOCK/TRYLOCK TTL, EXTEND ms */
	int shared;       /* LOCK/TRYLOCK SHARED */
	uint32_t permits; /* LOCK/TRYLOCK/STATUS PERMITS n; 0 when not given */
	int has_grace;
	uint32_t grace_ms; /* SESSION GRACE */
	int has_delay;
	uint32_t delay_ms; /* LOCK/TRYLOCK/LOCKALL/CAMPAIGN DELAY (1.4) */
	/* LOCKALL (1.4): key and klen stay NULL and 0; its nkeys keys, all
	 * valid and distinct, lie in the keys_len bytes from keys (blanks
	 * between them): proto_next_key walks them. */
	const char *keys;
	size_t keys_len;
	uint32_t nkeys;
};

/* The limits a request is checked against (from the configuration). */
struct proto_limits {
	size_t max_key_len;   /* limits.max_key_len */
	uint32_t max_permits; /* limits.max_permits: PERMITS n */
	uint32_t max_keys;    /* limits.max_keys: LOCKALL n (1.4) */
};

#define PROTO_MAX_KEYS_DEFAULT 64

/* Parse one line (without its '\n'; a trailing '\r' is dropped here).
 * Keys may have max_key_len bytes, PERMITS 1 to max_permits.
 * On error returns the class and sets *msg to the text after "ERR CODE ". */
enum proto_err proto_parse(const char *line, size_t len, size_t max_key_len, uint32_t max_permits,
                           struct request *req, const char **msg);
/* The same, with every limit (proto_parse takes LOCKALL's limits.max_keys
 * at its default). */
enum proto_err proto_parse_ex(const char *line, size_t len, const struct proto_limits *lim,
                              struct request *req, const char **msg);
/* LOCKALL's keys, in the order given: *pos starts at 0. Returns 1 with the
 * next key, 0 after the last. */
int proto_next_key(const struct request *req, size_t *pos, const char **key, size_t *klen);

/* Replies that several places give, named once. */
#define MSG_OOM                 "ERR LIMIT out of memory"
#define MSG_NO_QUORUM           "ERR QUORUM no majority of masters answered"
#define MSG_UNSURE_READ         "ERR QUORUM the masters that answered cannot tell a hold from a leftover"
#define MSG_NOT_HELD            "ERR NOTHELD this session does not hold the key"
#define MSG_RELEASE_UNCONFIRMED "ERR QUORUM release not confirmed by a majority"
#define MSG_NOT_LEADER          "ERR NOTLEADER this session does not lead that election"

const char *proto_cmd_name(enum cmd c);
const char *proto_err_name(enum proto_err e);

#endif
