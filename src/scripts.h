/* scripts: the Lua scripts lockd runs on every master, and their SHA1s. */
#ifndef LOCKD_SCRIPTS_H
#define LOCKD_SCRIPTS_H

enum script_id {
	SCR_ACQUIRE, /* take a lock, a permit or a shared hold; bump the fence */
	SCR_RELEASE, /* compare-and-delete, then announce the release */
	SCR_RENEW,   /* extend each key we hold, write back each we lost */
	SCR_RAISE,   /* raise a fence counter to at least a value */
	SCR_RAISE_MANY, /* the same for many counters (catching up a master) */
	SCR_RELEASE_MANY, /* SCR_RELEASE for many keys (a session's end) */
	SCR_STATUS,  /* what holds a key (and its permits) on one master */
	SCR_ACQUIRE_N, /* SCR_ACQUIRE for each of n calls (one loop turn's) */
	SCR_RELEASE_N, /* SCR_RELEASE for each of n calls */
	SCR_COUNT
};

/* The batch form of a script (SCR_ACQUIRE_N of SCR_ACQUIRE), or -1. Each
 * call's KEYS then follow one another, and then each call's ARGV; the
 * reply is the array of the calls' replies. */
int script_batch_of(enum script_id id);

const char *script_body(enum script_id id);
/* The SHA1 as the masters report it, or NULL until one has loaded it. */
const char *script_sha(enum script_id id);
void script_set_sha(enum script_id id, const char *sha, size_t len);

#endif
