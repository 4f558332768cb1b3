/* elwatch: who leads a name, as this lockd's connections ask it (protocol
 * 1.3): LEADER, and the observations (OBSERVE, UNOBSERVE, the ELECTED and
 * NOLEADER lines). Apart from elect.c because reading a name's leader
 * needs nothing of the leaders this lockd keeps: elect.c calls it (a
 * change it made, ew_poke; a master subscribed again, ew_resync) and
 * hands it each connection's part (struct ew_client, inside elect's own
 * lt_client.el); it calls nothing of elect's.
 *
 * One struct watch per observed name on this lockd, shared by its
 * connections' observations (struct obs). A watch learns of changes
 * from the masters' "P elected" channel (ew_poke), from a master's
 * subscriber connection coming back (ew_resync), and every lease/3 while
 * a leader stands (a leader whose lockd died sends no notice), and then
 * reads a majority (rl_el_read), one read at a time (a notice during a
 * read asks for one more after it), so the last read always starts after
 * the last change it heard of. A notice is never believed, only read.
 * A watch keeps the last leader it reported (fence, version) and never
 * reports one that is not newer: leaders in fence order, and after
 * NOLEADER never the old one again. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cfg.h"
#include "elwatch.h"
#include "ilist.h"
#include "keytab.h"
#include "ltops.h"
#include "proto.h"
#include "redlock.h"
#include "renew.h"
#include "stats.h"
#include "util.h"

static struct event_base *base;
static const struct config *cfg;
static const struct lt_ops *ops;

/* One observed name on this lockd. */
struct watch {
	struct kt_node node;
	struct ilist obs;               /* struct obs.wlink */
	struct rl_call *call;           /* the read in flight */
	int again;                      /* a change was heard during the read: read once more */
	int known;                      /* a read has told the state */
	int leader;                     /* the last state reported is a leader (else NOLEADER) */
	uint64_t fence, epoch, version; /* the last leader reported (kept after NOLEADER) */
	char *value;
	size_t vlen;
	struct event *timer; /* the next read while a leader stands */
	char key[];
};

/* One connection's observation of a name. */
struct obs {
	struct kt_node node; /* in ew_client.by_name (its key: the watch's) */
	struct ilink wlink;  /* on watch->obs */
	struct ilink clink;  /* on ew_client.obs */
	struct watch *w;
	struct lt_client *c;
	struct ew_client *e; /* c's part, which holds it */
	int fresh; /* OBSERVEs that want the state now, each sent it at the next verdict */
};

static struct keytab watches;
static int stopping;

static int64_t third(void)
{
	return cfg->lease_ms / 3 > 0 ? cfg->lease_ms / 3 : 1;
}

/* --- LEADER --- */

static void leader_done(struct rl_call *call, void *owner)
{
	struct lt_client *c = owner;
	const struct rl_leader *v = rl_leader_of(call);
	c->call = NULL;
	if (v->unsure) {
		lt_ops_reply(ops, c, "%s", MSG_UNSURE_READ);
	} else if (!v->ok) {
		stats.quorum_failures++;
		lt_ops_reply(ops, c, "%s", MSG_NO_QUORUM);
	} else if (v->kind == RLE_LEADER) {
		lt_ops_reply(ops, c, "LEADER %llu %.*s", (unsigned long long)v->fence, (int)v->vlen,
		             v->value);
	} else if (v->kind == RLE_PLAIN) {
		lt_ops_reply(ops, c, "LEADER %llu", (unsigned long long)v->fence);
	} else {
		lt_ops_reply(ops, c, "NONE");
	}
}

void ew_leader(struct lt_client *c, const char *key, size_t klen)
{
	c->call = rl_el_read(key, klen, (size_t)cfg->max_value_len, leader_done, c);
	if (!c->call)
		lt_ops_reply(ops, c, "%s", MSG_OOM);
}

/* --- observers --- */

static struct watch *watch_find(const char *key, size_t klen)
{
	struct kt_node *n = keytab_find(&watches, key, klen);
	return n ? ilist_entry(n, struct watch, node) : NULL;
}

static void watch_free(struct watch *w)
{
	if (w->call)
		rl_detach(w->call, w);
	keytab_remove(&watches, &w->node);
	if (w->timer)
		event_free(w->timer);
	free(w->value);
	free(w);
}

/* The state w reports now, to one observer. */
static void tell(struct watch *w, struct obs *o)
{
	stats.elected_events++;
	if (w->leader)
		lt_ops_line(ops, o->c, "ELECTED %s %llu %.*s", w->key, (unsigned long long)w->fence,
		            (int)w->vlen, w->value);
	else
		lt_ops_line(ops, o->c, "NOLEADER %s", w->key);
}

static void watch_read(struct watch *w);

static void read_done(struct rl_call *call, void *owner)
{
	struct watch *w = owner;
	const struct rl_leader *v = rl_leader_of(call);
	int changed = 0;
	w->call = NULL;
	if (v->ok && v->kind == RLE_LEADER &&
	    (!w->known || v->fence > w->fence ||
	     (v->fence == w->fence &&
	      (v->epoch > w->epoch || (v->epoch == w->epoch && v->version > w->version))))) {
		char *val = bytes_dup(v->value, v->vlen);
		if (val) {
			free(w->value);
			w->value = val;
			w->vlen = v->vlen;
			w->fence = v->fence;
			w->epoch = v->epoch;
			w->version = v->version;
			changed = 1;
			w->leader = 1;
			w->known = 1;
		}
	} else if (v->ok && v->kind != RLE_LEADER && (w->leader || !w->known)) {
		/* No leader now (a plain lock counts as none). */
		changed = w->known;
		w->leader = 0;
		w->known = 1;
	}
	for (struct ilink *l = w->obs.head.next; l != &w->obs.head; l = l->next) {
		struct obs *o = ilist_entry(l, struct obs, wlink);
		if (!w->known)
			continue;
		/* a change once, and the state once per OBSERVE waiting for it */
		for (int n = o->fresh > changed ? o->fresh : changed; n > 0; n--)
			tell(w, o);
		o->fresh = 0;
	}
	if (!w->obs.len) {
		watch_free(w);
		return;
	}
	if (w->again) {
		w->again = 0;
		watch_read(w);
		return;
	}
	/* A leader whose lockd dies sends no notice: look again in lease/3.
	 * A read that found no majority is tried again then too. */
	if (w->leader || !v->ok)
		rn_timer_at(w->timer, now_us() + third() * 1000);
}

static void watch_read(struct watch *w)
{
	if (w->call) {
		w->again = 1;
		return;
	}
	evtimer_del(w->timer);
	w->call = rl_el_read(w->key, w->node.klen, (size_t)cfg->max_value_len, read_done, w);
	if (!w->call)
		rn_timer_at(w->timer, now_us() + third() * 1000);
}

static void watch_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	watch_read(arg);
}

void ew_poke(const char *key, size_t klen)
{
	struct watch *w = watch_find(key, klen);
	if (w && !stopping)
		watch_read(w);
}

void ew_resync(void)
{
	for (size_t i = 0; i < watches.nslots; i++)
		for (struct kt_node *k = watches.slots[i]; k; k = k->next)
			watch_read(ilist_entry(k, struct watch, node));
}

static struct obs *obs_of(struct ew_client *e, const char *key, size_t klen)
{
	struct kt_node *n = e->by_name.slots ? keytab_find(&e->by_name, key, klen) : NULL;
	return n ? ilist_entry(n, struct obs, node) : NULL;
}

void ew_observe(struct ew_client *e, struct lt_client *c, const char *key, size_t klen)
{
	struct obs *o = e ? obs_of(e, key, klen) : NULL;
	struct watch *w = watch_find(key, klen);
	int fresh_watch = 0;
	if (!e) {
		lt_ops_reply(ops, c, "%s", MSG_OOM);
		return;
	}
	if (!o && (int64_t)e->obs.len >= cfg->max_observations) {
		stats.rejected_observations++;
		lt_ops_reply(ops, c,
		             "ERR LIMIT this session observes limits.max_observations names");
		return;
	}
	if (!o && !e->by_name.slots && keytab_init(&e->by_name, 16)) {
		lt_ops_reply(ops, c, "%s", MSG_OOM);
		return;
	}
	if (!w) {
		w = calloc(1, sizeof(*w) + klen + 1);
		if (!w || !(w->timer = evtimer_new(base, watch_timer_cb, w))) {
			free(w);
			lt_ops_reply(ops, c, "%s", MSG_OOM);
			return;
		}
		memcpy(w->key, key, klen);
		w->node.key = w->key;
		w->node.klen = klen;
		ilist_init(&w->obs);
		keytab_insert(&watches, &w->node);
		fresh_watch = 1;
	}
	if (!o) {
		if (!(o = calloc(1, sizeof(*o)))) {
			if (fresh_watch)
				watch_free(w);
			lt_ops_reply(ops, c, "%s", MSG_OOM);
			return;
		}
		o->w = w;
		o->c = c;
		o->e = e;
		o->node.key = w->key;
		o->node.klen = klen;
		keytab_insert(&e->by_name, &o->node);
		ilist_push(&w->obs, &o->wlink);
		ilist_push(&e->obs, &o->clink);
		stats.observers++;
	}
	lt_ops_reply(ops, c, "OK");
	if (w->known && !w->call) {
		tell(w, o); /* the state it knows: every change since was read */
		return;
	}
	o->fresh++; /* told at the verdict of the read under way, once per OBSERVE */
	if (!w->call)
		watch_read(w);
}

static void obs_end(struct obs *o)
{
	struct ew_client *e = o->e;
	struct watch *w = o->w;
	keytab_remove(&e->by_name, &o->node);
	ilist_remove(&w->obs, &o->wlink);
	ilist_remove(&e->obs, &o->clink);
	stats.observers--;
	free(o);
	if (!w->obs.len && !w->call)
		watch_free(w); /* else freed at its read's verdict */
}

void ew_unobserve(struct ew_client *e, struct lt_client *c, const char *key, size_t klen)
{
	struct obs *o = e ? obs_of(e, key, klen) : NULL;
	if (!o) {
		lt_ops_reply(ops, c, "ERR ARG this session does not observe %.*s", (int)klen, key);
		return;
	}
	obs_end(o);
	lt_ops_reply(ops, c, "OK");
}

void ew_client_end(struct ew_client *e)
{
	struct ilink *l;
	while ((l = ilist_first(&e->obs)))
		obs_end(ilist_entry(l, struct obs, clink));
	keytab_destroy(&e->by_name);
}

/* --- setup --- */

int ew_init(struct event_base *b, const struct config *c, const struct lt_ops *o)
{
	base = b;
	cfg = c;
	ops = o;
	stopping = 0;
	return keytab_init(&watches, 64);
}

void ew_set_cfg(const struct config *c)
{
	cfg = c;
}

void ew_shutdown(void)
{
	struct ilink *l;
	stopping = 1;
	for (size_t i = 0; i < watches.nslots; i++) {
		struct kt_node *k = watches.slots[i], *nx;
		for (; k; k = nx) {
			struct watch *w = ilist_entry(k, struct watch, node);
			nx = k->next;
			while ((l = ilist_pop(&w->obs))) {
				struct obs *ob = ilist_entry(l, struct obs, wlink);
				keytab_remove(&ob->e->by_name, &ob->node);
				ilist_remove(&ob->e->obs, &ob->clink);
				free(ob);
			}
			watch_free(w);
		}
	}
	keytab_destroy(&watches);
}
