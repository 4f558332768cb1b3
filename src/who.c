/* who: WHO key (protocol 1.4). The masters say which tokens hold the key
 * and in which place (rlwho.c); a token's instance says which lockd, its
 * last digits what its grant asked (rl_token_permits); this lockd adds
 * what only it knows of its own sessions' holds (lt_hold_by_token). Every
 * line of the reply is written in one go, so no event falls between. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "cfg.h"
#include "ltops.h"
#include "proto.h"
#include "redlock.h"
#include "stats.h"
#include "util.h"
#include "who.h"

static const struct config *cfg;
static const struct lt_ops *ops;

void who_init(const struct config *c, const struct lt_ops *o)
{
	cfg = c;
	ops = o;
}

/* exclusive, shared, permit=i/n. n is read from the token only where its
 * lockd is known (this one, or one whose name the masters keep: lockd 1.4
 * or later, whose tokens carry it); else "-" (a permit), and a key's lock
 * is taken for a plain one. */
static const char *kind_of(const struct rl_who_hold *h, int known, char *buf, size_t len)
{
	uint32_t n = known ? rl_token_permits(h->token) : UINT32_MAX;
	int n_ok = n >= 1 && n <= 65536 && n > (h->place == 'p' ? h->permit : 0);
	if (h->place == 's')
		return "shared";
	if (h->place == 'x' && !n_ok)
		return "exclusive";
	if (n_ok)
		snprintf(buf, len, "permit=%u/%u", h->place == 'p' ? h->permit : 0, n);
	else
		snprintf(buf, len, "permit=%u/-", h->permit);
	return buf;
}

static void who_done(struct rl_call *call, void *owner)
{
	struct lt_client *c = owner;
	const struct rl_who *v = rl_who_of(call);
	size_t klen;
	const char *key = rl_key_of(call, &klen);
	int64_t now = now_us();

	c->call = NULL;
	if (!v->ok) {
		stats.quorum_failures++;
		lt_ops_reply(ops, c, "%s", MSG_NO_QUORUM);
		return;
	}
	for (int k = 0; k < v->n; k++) {
		const struct rl_who_hold *h = &v->holds[k];
		int own = rl_token_ours(h->token);
		struct lt_hold_view hv;
		char kbuf[48];
		const char *kind = kind_of(h, own || h->name, kbuf, sizeof(kbuf));
		const char *name = own ? cfg->name : h->name ? h->name : "-";
		if (!own || !lt_hold_by_token(key, klen, h->token, &hv) || !hv.holder) {
			/* elsewhere, or no session here holds it (any more) */
			lt_ops_line(ops, c, "HOLDER %llu %s lockd=%s", (unsigned long long)v->fence,
			            kind, name);
			continue;
		}
		long long held = (now - hv.since_us) / 1000;
		lt_ops_line(ops, c, "HOLDER %llu %s lockd=%s client=%s session=%s held_ms=%lld",
		            (unsigned long long)hv.fence, kind, name,
		            hv.holder->ctx && hv.holder->peer ? hv.holder->peer : "-",
		            hv.holder->sid ? hv.holder->sid : "-", held > 0 ? held : 0);
	}
	if (v->delayed_ms > 0)
		lt_ops_line(ops, c, "DELAYED %lld %llu", (long long)v->delayed_ms,
		            (unsigned long long)v->fence);
	lt_ops_reply(ops, c, "END");
}

void who_ask(struct lt_client *c, const char *key, size_t klen)
{
	c->call = rl_who(key, klen, (uint32_t)cfg->max_permits, who_done, c);
	if (!c->call)
		lt_ops_reply(ops, c, "%s", MSG_OOM);
}
