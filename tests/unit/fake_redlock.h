/* fake_redlock: redlock.h's calls without masters, for locktab's unit
 * tests. Every call is recorded; the test gives its verdict, from the
 * test itself (never from inside the call, like the real redlock). */
#ifndef LOCKD_TESTS_FAKE_REDLOCK_H
#define LOCKD_TESTS_FAKE_REDLOCK_H

#include <stdint.h>

#include "redlock.h"

enum fake_kind { FK_ACQUIRE, FK_RELEASE, FK_RENEW, FK_STATUS, FK_RELEASE_MANY };

struct rl_call {
	enum fake_kind kind;
	char key[300];
	size_t klen;
	enum rl_hold hold; /* acquire, release */
	uint32_t permit;
	char token[TOKEN_LEN + 1], old[TOKEN_LEN + 1];
	int64_t lease_ms;
	enum rl_wait will_wait;
	int64_t wait_flag_ms;
	rl_done_fn *done, *rel_done;
	void *owner;
	struct rl_grant grant;
	enum rl_result rel_result;
	struct rl_renew_item *items;
	struct rl_release_item *rel_items; /* FK_RELEASE_MANY: copies, keys not kept */
	int nitems;
	struct rl_status status;
	int decided; /* done has run */
	struct rl_call *next;
};

/* Calls of a kind not decided yet, oldest first. */
int fake_pending(enum fake_kind k);
struct rl_call *fake_oldest(enum fake_kind k);
/* Keys released (single or batched) so far. */
int fake_released_keys(void);
/* Acquire verdict: RL_OK with fence (valid for valid_ms), RL_BUSY with
 * pttl, or RL_QUORUM. A handoff's release verdict comes apart. The
 * oldest undecided acquire, checked to be for key (with permit, or shared). */
void fake_acquire_done(struct rl_call *c, enum rl_result r, uint64_t fence, int64_t valid_ms,
                       int64_t pttl_ms);
void fake_release_done(struct rl_call *c, enum rl_result r); /* also a handoff's */
void fake_renew_done(struct rl_call *c, int ok, int64_t valid_ms);
/* A status verdict: the key's lock held (ttl_ms left), else shared holders. */
void fake_status_done(struct rl_call *c, int held, int64_t ttl_ms);
void fake_status_shared(struct rl_call *c, int holders, int64_t ttl_ms);
void fake_status_permits(struct rl_call *c, uint32_t held);
void fake_reset(void);

#endif
