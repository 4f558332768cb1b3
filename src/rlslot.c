/* rlslot: a resumable session's grant on a cluster entry (doc/cluster.md,
 * "Sessions on a cluster entry"): the session's record written in the
 * lock's slot ahead of the grant, and the slot listed in the session's
 * home record, on the call machinery of redlock.c (redlock_int.h). The
 * grant counts on the entry only once both said 1. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "log.h"
#include "master.h"
#include "redlock_int.h"
#include "scripts.h"

/* Master i granted a session's hold and both of its cluster entry's
 * extra writes answered (struct acq_x): the grant counts there only if
 * both said 1. */
void rl_x_granted(struct rl_call *c, int i)
{
	if (c->u.acq.x->fail[i]) {
		c->st[i] = MR_FAIL; /* released with the others if the call fails */
		return;
	}
	c->st[i] = MR_YES;
	rl_correct_late(c, i);
}

static void x_reply(struct master *m, redisReply *r, void *arg, int put)
{
	struct rl_call *c = arg;
	struct acq_x *x = c->u.acq.x;
	int i = m->idx, ok = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
	c->pending--;
	if (!ok) {
		if (r && r->type == REDIS_REPLY_ERROR)
			log_warn("master %s: a session's record: %s", m->name, r->str);
		x->fail[i] = 1;
	}
	x->out[i]--;
	if (put)
		x->put_out[i] = 0;
	if (put && x->again[i] && !c->expired) { /* the ACQUIRE ran ahead of it */
		x->again[i] = 0;
		x->retried[i] = 1;
		if (ok && master_call_at(m, &x->lock_slot, 1, SCR_ACQUIRE, c->argc, c->argv,
		                         c->argvlen, rl_acquire_reply, c) == 0)
			c->pending++;
		else
			c->st[i] = MR_FAIL;
	}
	if (x->out[i] == 0 && x->granted[i] && !c->expired)
		rl_x_granted(c, i);
	rl_check(c);
}

static void x_put_reply(struct master *m, redisReply *r, void *arg)
{
	x_reply(m, r, arg, 1);
}

static void x_index_reply(struct master *m, redisReply *r, void *arg)
{
	x_reply(m, r, arg, 0);
}

static rl_sess_info_fn *sess_info;

void rl_set_sess_info(rl_sess_info_fn *fn)
{
	sess_info = fn;
}

static void x_arg(const char **v, size_t *l, int at, const char *s)
{
	v[at] = s;
	l[at] = strlen(s);
}

/* The extra writes of session sid's grant of key on a cluster entry, or
 * NULL: a lock in the home record's own slot (the record SESSION wrote
 * there is the one ACQUIRE checks), or *none_ok 0: not a resumable
 * session here, out of memory (the grant must then not count on a
 * cluster entry: rl_acquire). */
struct acq_x *rl_x_new(const char *key, size_t klen, const char *sid, int *none_ok)
{
	struct rl_sess_info in;
	unsigned ls = csl_keyslot(key, klen), hs = csl_keyslot(sid, strlen(sid));
	struct acq_x *x;
	*none_ok = ls == hs;
	if (*none_ok || !sess_info || sess_info(sid, &in) != 0 || !(x = calloc(1, sizeof(*x))))
		return NULL;
	x->lock_slot = ls;
	x->home_slot = hs;
	if (rl_prefix_len + strlen(sid) + 16 > sizeof(x->rec) ||
	    strlen(in.digest) >= sizeof(x->digest)) {
		free(x);
		return NULL;
	}
	rl_record_at(x->rec, sid);
	snprintf(x->digest, sizeof(x->digest), "%s", in.digest);
	snprintf(x->grace, sizeof(x->grace), "%lld", (long long)in.grace_ms);
	snprintf(x->expire, sizeof(x->expire), "%lld", (long long)in.expire_ms);
	snprintf(x->count, sizeof(x->count), "%lld", in.count);
	snprintf(x->slot, sizeof(x->slot), "%u", ls);
	/* SESS_PUT record instance secret grace expiry "a" count */
	x_arg(x->pv, x->pl, SA_NKEYS, "1");
	x_arg(x->pv, x->pl, SA_KEYS, x->rec);
	const char *pa[] = {rl_instance, x->digest, x->grace, x->expire, "a", x->count};
	for (int k = 0; k < 6; k++)
		x_arg(x->pv, x->pl, SA_KEYS + 1 + k, pa[k]);
	/* SESS_INDEX record instance slot */
	x_arg(x->iv, x->il, SA_NKEYS, "1");
	x_arg(x->iv, x->il, SA_KEYS, x->rec);
	x_arg(x->iv, x->il, SA_KEYS + 1, rl_instance);
	x_arg(x->iv, x->il, SA_KEYS + 2, x->slot);
	return x;
}

/* Send script (SCR_SESS_PUT in the lock's slot, SCR_SESS_INDEX in the
 * home slot) to every cluster entry; one that cannot take it will not
 * count the grant. */
void rl_x_send(struct rl_call *c, struct acq_x *x, int script)
{
	int put = script == SCR_SESS_PUT;
	for (int i = 0; i < c->n; i++) {
		struct master *m = master_get(i);
		if (!m->cl)
			continue;
		x->sent[i] = 1;
		if (master_call_at(m, put ? &x->lock_slot : &x->home_slot, 1, script,
		                   put ? SA_KEYS + 7 : SA_KEYS + 3, put ? x->pv : x->iv,
		                   put ? x->pl : x->il, put ? x_put_reply : x_index_reply,
		                   c) == 0) {
			x->out[i]++;
			x->put_out[i] |= (unsigned char)put;
			c->pending++;
		} else {
			x->fail[i] = 1;
		}
	}
}
