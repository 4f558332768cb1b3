/* fake_redlock: see fake_redlock.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_redlock.h"
#include "util.h"

static struct rl_call *calls, **tail = &calls;
static int released_keys;
static unsigned token_seq;

static struct rl_call *add(enum fake_kind k, const char *key, size_t klen, rl_done_fn *done,
                           void *owner)
{
	struct rl_call *c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	c->kind = k;
	if (key) {
		memcpy(c->key, key, klen < sizeof(c->key) ? klen : sizeof(c->key) - 1);
		c->klen = klen;
	}
	c->done = done;
	c->owner = owner;
	c->grant.start_us = now_us();
	*tail = c;
	tail = &c->next;
	return c;
}

void rl_token_new(char *out)
{
	/* the sequence clear of the digits rl_token_set_permits writes */
	snprintf(out, TOKEN_LEN + 1, "%0*u%0*u", TOKEN_LEN - RL_TOKEN_N_LEN, ++token_seq,
	         RL_TOKEN_N_LEN, 0);
}

struct rl_call *rl_acquire(const char *key, size_t klen, enum rl_hold hold, uint32_t permit,
                           const char *token, int64_t lease_ms, uint32_t delay_ms,
                           const char *old_token, enum rl_wait will_wait, const struct rl_rec *rec,
                           rl_done_fn *done, rl_done_fn *release_done, void *owner)
{
	struct rl_call *c = add(FK_ACQUIRE, key, klen, done, owner);
	c->hold = hold;
	c->permit = permit;
	memcpy(c->token, token, TOKEN_LEN + 1);
	if (old_token)
		memcpy(c->old, old_token, TOKEN_LEN + 1);
	c->lease_ms = lease_ms;
	c->will_wait = will_wait;
	c->rel_done = release_done;
	return c;
}

const struct rl_grant *rl_grant_of(const struct rl_call *c)
{
	return &c->grant;
}

void rl_undo(const struct rl_call *c)
{
	rl_release(c->key, c->klen, c->hold, c->permit, c->token, NULL, 0, NULL, NULL);
}

struct rl_call *rl_release(const char *key, size_t klen, enum rl_hold hold, uint32_t permit,
                           const char *token, const struct rl_rec *rec, int64_t wait_flag_ms,
                           rl_done_fn *done, void *owner)
{
	struct rl_call *c = add(FK_RELEASE, key, klen, NULL, owner);
	c->hold = hold;
	c->permit = permit;
	memcpy(c->token, token, TOKEN_LEN + 1);
	c->wait_flag_ms = wait_flag_ms;
	c->rel_done = done;
	released_keys++;
	return c;
}

enum rl_result rl_result_of(const struct rl_call *c)
{
	return c->rel_result;
}

struct rl_call *rl_renew(struct rl_renew_item *items, int n, int64_t lease_ms, rl_done_fn *done,
                         void *owner)
{
	struct rl_call *c = add(FK_RENEW, NULL, 0, done, owner);
	c->items = items;
	c->nitems = n;
	c->lease_ms = lease_ms;
	return c;
}

struct rl_renew_item *rl_renew_items(const struct rl_call *c, int *n)
{
	*n = c->nitems;
	return c->items;
}

int64_t rl_start_us(const struct rl_call *c)
{
	return c->grant.start_us;
}
int64_t rl_lease_of(const struct rl_call *c)
{
	return c->lease_ms;
}

struct rl_call *rl_release_many(const struct rl_release_item *items, int n, rl_done_fn *done,
                                void *owner)
{
	struct rl_call *c = add(FK_RELEASE_MANY, NULL, 0, done, owner);
	c->nitems = n;
	c->rel_items = calloc((size_t)n, sizeof(*c->rel_items));
	if (!c->rel_items)
		abort();
	for (int i = 0; i < n; i++) {
		c->rel_items[i] = items[i];
		c->rel_items[i].key = NULL; /* the caller frees them */
		c->rel_items[i].token = NULL;
	}
	released_keys += n;
	return c;
}

struct rl_call *rl_status(const char *key, size_t klen, uint32_t permits, rl_done_fn *done,
                          void *owner)
{
	struct rl_call *c = add(FK_STATUS, key, klen, done, owner);
	c->status.npermits = permits;
	return c;
}

const struct rl_status *rl_status_of(const struct rl_call *c)
{
	return &c->status;
}

const char *rl_key_of(const struct rl_call *c, size_t *klen)
{
	*klen = c->klen;
	return c->key;
}

void rl_detach(struct rl_call *c, void *owner)
{
	if (c && c->owner == owner)
		c->owner = NULL;
}

int rl_inflight(void)
{
	return fake_pending(FK_ACQUIRE) + fake_pending(FK_RELEASE);
}

/* --- the test's side --- */

int fake_pending(enum fake_kind k)
{
	int n = 0;
	for (struct rl_call *c = calls; c; c = c->next)
		n += c->kind == k && !c->decided;
	return n;
}

struct rl_call *fake_oldest(enum fake_kind k)
{
	for (struct rl_call *c = calls; c; c = c->next)
		if (c->kind == k && !c->decided)
			return c;
	return NULL;
}

int fake_released_keys(void)
{
	return released_keys;
}

static void decide(struct rl_call *c)
{
	c->decided = 1;
	if (c->done && c->owner)
		c->done(c, c->owner);
}

void fake_acquire_done(struct rl_call *c, enum rl_result r, uint64_t fence, int64_t valid_ms,
                       int64_t pttl_ms)
{
	c->grant.result = r;
	c->grant.fence = fence;
	c->grant.validity_us = now_us() + valid_ms * 1000;
	c->grant.pttl_ms = pttl_ms;
	decide(c);
}

void fake_release_done(struct rl_call *c, enum rl_result r)
{
	c->rel_result = r;
	if (c->kind == FK_RELEASE)
		c->decided = 1;
	if (c->rel_done && c->owner)
		c->rel_done(c, c->owner);
}

void fake_renew_done(struct rl_call *c, int ok, int64_t valid_ms)
{
	for (int i = 0; i < c->nitems; i++) {
		c->items[i].ok = ok;
		c->items[i].yes = ok ? 2 : 0;
		c->items[i].validity_us = ok ? now_us() + valid_ms * 1000 : 0;
	}
	decide(c);
	free(c->items);
	c->items = NULL;
}

void fake_status_done(struct rl_call *c, int held, int64_t ttl_ms)
{
	c->status.ok = 1;
	c->status.held = held;
	c->status.ttl_ms = ttl_ms;
	decide(c);
}

void fake_status_shared(struct rl_call *c, int holders, int64_t ttl_ms)
{
	c->status.ok = 1;
	c->status.holders = holders;
	c->status.shared_ttl_ms = ttl_ms;
	decide(c);
}

void fake_status_permits(struct rl_call *c, uint32_t held)
{
	c->status.ok = 1;
	c->status.permits = held;
	decide(c);
}

void fake_reset(void)
{
	while (calls) {
		struct rl_call *c = calls;
		calls = c->next;
		free(c->items);
		free(c->rel_items);
		free(c);
	}
	tail = &calls;
	released_keys = 0;
}

/* Sessions that outlive a connection are tested end to end
 * (tests/integration): locktab's unit tests never make one resumable. */
struct rl_call *rl_sess_put(const char *sid, const char *secret, int64_t grace_ms,
                            int64_t expire_ms, const struct rl_sess_hold *holds, int n,
                            rl_done_fn *done, void *owner)
{
	ck_abort_msg("rl_sess_put without a resumable session");
	return NULL;
}

struct rl_call *rl_sess_refill(const char *sid, const char *secret, int64_t grace_ms,
                               int64_t expire_ms, const struct rl_sess_hold *holds, int n,
                               long long count, rl_done_fn *done, void *owner)
{
	ck_abort_msg("rl_sess_refill without a resumable session");
	return NULL;
}

int rl_adopting(void)
{
	return 0;
}
