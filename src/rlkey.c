/* rlkey: how a call names what it is about: the keys of a lock name and
 * of a session's record (the key prefix), a call's arguments of variable
 * shape, and the slots of its lock names on a cluster entry. Pure layout
 * on struct rl_call (redlock_int.h), below redlock.c and its users. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "master.h"
#include "redlock_int.h"
#include "scripts.h"

char rl_prefix[80];
size_t rl_prefix_len;

void rl_key_init(const char *p)
{
	snprintf(rl_prefix, sizeof(rl_prefix), "%s", p);
	rl_prefix_len = strlen(rl_prefix);
}

size_t rl_name_key_at(char *p, size_t len, const char *inst)
{
	int n = snprintf(p, len, "%s name %.*s", rl_prefix, INSTANCE_LEN, inst);
	return n > 0 ? (size_t)n : 0;
}

/* Write "prefix key suffix" at p, NUL-terminated; returns its length. */
size_t rl_key_at(char *p, const char *key, size_t klen, const char *sfx)
{
	size_t sl = strlen(sfx);
	memcpy(p, rl_prefix, rl_prefix_len);
	memcpy(p + rl_prefix_len, key, klen);
	memcpy(p + rl_prefix_len + klen, sfx, sl + 1);
	return rl_prefix_len + klen + sl;
}

size_t rl_record_at(char *p, const char *sid)
{
	return (size_t)sprintf(p, "%s session %s", rl_prefix, sid);
}

size_t rl_field_at(char *p, char kind, uint32_t permit, const char *key, size_t klen)
{
	size_t n = (size_t)sprintf(p, "%c%u ", kind, kind == 's' ? 0 : permit);
	memcpy(p + n, key, klen);
	p[n + klen] = '\0';
	return n + klen;
}

/* The suffix of a hold's lock: "" for the key's own, " permit I" for
 * permit I >= 1 (a space: never a lock key of its own). */
const char *rl_lock_sfx(char *buf, size_t len, enum rl_hold hold, uint32_t permit)
{
	if (hold == RH_SHARED || permit == 0)
		return "";
	snprintf(buf, len, " permit %u", permit);
	return buf;
}

/* The kind argument of the scripts. */
const char *rl_kind_arg(enum rl_hold hold, uint32_t permit)
{
	return hold == RH_SHARED ? "s" : permit == 0 ? "x" : "p";
}

/* Allocate the arguments of a call of variable shape: argc of them and
 * bytes of text. EVALSHA and the SHA are master.c's (empty here). */
int rl_dyn_args(struct rl_call *c, int argc, size_t bytes)
{
	c->dargv = malloc(sizeof(*c->dargv) * (size_t)argc);
	c->dargvlen = malloc(sizeof(*c->dargvlen) * (size_t)argc);
	c->dbuf = malloc(bytes);
	if (!c->dargv || !c->dargvlen || !c->dbuf)
		return -1;
	c->argc = argc;
	c->argv = c->dargv;
	c->argvlen = c->dargvlen;
	c->dargv[SA_CMD] = c->dargv[SA_SHA] = "";
	c->dargvlen[SA_CMD] = c->dargvlen[SA_SHA] = 0;
	return 0;
}

/* Copy n bytes of v to p (NUL-terminated) as argument at of a batch call;
 * returns where the next copy goes. */
char *rl_put_copy(struct rl_call *c, int at, char *p, const char *v, size_t n)
{
	memcpy(p, v, n);
	p[n] = '\0';
	c->dargv[at] = p;
	c->dargvlen[at] = n;
	return p + n + 1;
}

/* The slots of c's lock names, for a cluster entry (master_call_at): its
 * key's, or each item's (a renewal; releases, whose keys are in the
 * call's arguments: enum batch_arg); 0 (a call a cluster entry refuses)
 * for a call without, or when no master is a cluster entry. many: NULL,
 * or a malloc'd array for the items. */
int rl_call_slots(const struct rl_call *c, unsigned *one, unsigned **many)
{
	*many = NULL;
	if (!masters_any_cluster())
		return 0;
	if (c->homed) { /* a session's record: its home slot */
		*one = c->home_slot;
		return 1;
	}
	int n = c->kind == RK_RENEW || c->kind == RK_RELEASE_MANY ? c->u.batch.nitems : 0;
	if (c->kind == RK_RELEASE_MANY) /* the item count, from numkeys */
		n = (int)(strtol(c->argv[SA_NKEYS], NULL, 10) / RMA_KEYS);
	if (c->kind == RK_TOUCH) { /* each record: a session's home, or one of its slots */
		n = c->u.sess.nitems;
		if (n > 0 && (*many = malloc(sizeof(**many) * (size_t)n)))
			for (int k = 0; k < n; k++) {
				const struct rl_sess_item *it = &c->u.sess.items[k];
				(*many)[k] =
				    it->of_slot ? it->slot : csl_keyslot(it->sid, strlen(it->sid));
			}
		return *many ? n : 0;
	}
	if (n > 0 && (*many = malloc(sizeof(**many) * (size_t)n))) {
		for (int k = 0; k < n; k++) {
			int a =
			    SA_KEYS + RMA_KEYS * n + RMA_FIXED + n + k; /* ARGV[3 + n + k + 1] */
			(*many)[k] = c->kind == RK_RENEW ? csl_keyslot(c->u.batch.items[k].key,
			                                               c->u.batch.items[k].klen)
			                                 : csl_keyslot(c->argv[a], c->argvlen[a]);
		}
		return n;
	}
	if (n == 0 && c->keyp) {
		*one = csl_keyslot(c->keyp, c->klen);
		return 1;
	}
	return 0;
}
