/* master_hs: the handshake of a master's command connection, from its
 * connect to MS_UP. One pipeline, in this order:
 *
 *   AUTH (if redis.password), CLIENT SETNAME lockd-l<LAYOUT>-<INSTANCE>,
 *   GET "<prefix> layout", SCRIPT LOAD of each script, the connection
 *   epoch (master.c's, through mhs_ops.gen), INFO server (the run_id),
 *   ROLE (master_repl.c), EXISTS of the marker -> mhs_ops.up.
 *
 * Any step that fails drops the connection (mhs_fail), and master.c
 * reconnects it after its backoff. The layout key says which layout of
 * lockd's data a master carries (doc/design.md, "Layout version and
 * rolling upgrades"): a master whose key is missing or says this build's
 * layout (MASTER_LAYOUT) goes on; any other value fails the handshake, so
 * the master stays down for this lockd until the key is gone or says its
 * layout again. The name comes before the GET on the same connection, and
 * Redis runs a connection's commands in order: that is what lets a build
 * of the next layout exclude this one (SET the key, then CLIENT LIST).
 *
 * A build of a layout other than 1 (MASTER_LAYOUT; the test build
 * lockd-layout2) is that next build: in place of the GET it sends
 *
 *   EVAL of SWITCH_LUA (the key set to its layout unless it says a higher
 *   one; refused as above if it does), CLIENT LIST,
 *
 * and while that lists a connection of another layout (lockd-l<M>-*, M
 * not its own), the master does not count: after the handshake it waits
 * in MS_LAYOUT_WAIT and sends the EVAL and CLIENT LIST again every
 * LAYOUT_POLL_MS until none is listed (refused if the key now says a
 * higher layout), then reads the marker again and goes up. A
 * master whose CLIENT LIST is refused does not count at all: the wait
 * could not see what it waits for. Layout 1's build sends neither (it is
 * the first layout: nothing before it reads a key or names a connection).
 *
 * Below master.c, which calls it: it calls nothing of master.c's by name
 * but sends, drops and goes up through the struct mhs_ops given to
 * mhs_init (master_int.h). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "master.h"
#include "master_int.h"
#include "scripts.h"

static const struct mhs_ops *ops;      /* master.c's (mhs_init) */
static const struct master_opts *opts; /* master.c's, read when used */
static const char *marker_key;         /* master.c's */
static char layout_key[160];           /* "<prefix> layout" */
static char conn_name[64];             /* "lockd-l<LAYOUT>-<INSTANCE>" */
static unsigned long layout_n;         /* MASTER_LAYOUT as a number */
static int switching;                  /* not layout 1: switch each master to it */

#define LAYOUT_POLL_MS 100 /* CLIENT LIST again while another layout is listed */

/* struct master's hs_switch: the steps of the switch that answered at
 * this handshake; both, or the master does not go up */
#define HS_SWITCH_SET    1 /* (A): the key says this build's layout */
#define HS_SWITCH_LISTED 2 /* (B): CLIENT LIST read */

/* The switch's first step, (A) in doc/design.md: one script, so that no
 * write of another lockd comes between the read and the write (a layout
 * 3 build's SET must never be lowered to 2). Sent by its body: it runs
 * once per connection, and a NOSCRIPT fallback is not worth having for
 * it. The value found is returned (false: missing), and judged by
 * mhs_switch_judge by the same rule: up to 9 decimal digits is a layout
 * number; anything else, or a higher number, is left as it is. */
static const char SWITCH_LUA[] = "local v = redis.call('GET', KEYS[1])\n"
                                 "if v and (#v > 9 or not string.match(v, '^[0-9]+$') or "
                                 "tonumber(v) > tonumber(ARGV[1])) then return v end\n"
                                 "if v ~= ARGV[1] then redis.call('SET', KEYS[1], ARGV[1]) end\n"
                                 "return v\n";

void mhs_init(const struct mhs_ops *o, const struct master_opts *mo, const char *marker,
              const char *prefix, const char *instance)
{
	ops = o;
	opts = mo;
	marker_key = marker;
	snprintf(layout_key, sizeof(layout_key), "%s layout", prefix);
	snprintf(conn_name, sizeof(conn_name), "lockd-l%s-%s", MASTER_LAYOUT,
	         instance ? instance : "");
	layout_n = strtoul(MASTER_LAYOUT, NULL, 10);
	switching = layout_n != 1;
}

void mhs_fail(struct master *m, redisReply *r, const char *what)
{
	char why[160];
	snprintf(why, sizeof(why), "%s: %s", what,
	         !r                             ? "no reply"
	         : r->type == REDIS_REPLY_ERROR ? r->str
	                                        : "unexpected reply");
	if (m->state == MS_HANDSHAKE || m->state == MS_LAYOUT_WAIT)
		ops->drop(m, why, 1);
}

static void hs_auth_cb(struct master *m, redisReply *r, void *arg)
{
	if (!r || r->type == REDIS_REPLY_ERROR)
		mhs_fail(m, r, "AUTH");
}

/* A connection left without its name (a proxy, or an ACL that refuses
 * CLIENT) works as before beside lockd of this layout: nothing of this
 * layout reads the name. It is not safe for a later change of layout
 * done as a rolling upgrade: the next layout's build does not see this
 * connection in CLIENT LIST, so if this handshake's GET of the layout key
 * ran before that build's SET, both would count this master and could
 * grant one key. Refusing the master here would turn deployments that
 * work today into an outage for the sake of an upgrade that may never
 * come, so the handshake goes on, with a warning (once per master) that
 * says what the operator must do instead: stop every lockd of this
 * layout before any lockd of another layout starts on these masters. A
 * build of the next layout must itself refuse to switch a master whose
 * CLIENT LIST it cannot read (the same proxy or ACL usually refuses that
 * too, which closes the gap where it is the same). */
static void hs_name_cb(struct master *m, redisReply *r, void *arg)
{
	if (!r || r->type != REDIS_REPLY_ERROR)
		return;
	if (!m->name_refused_logged)
		log_warn("master %s: CLIENT SETNAME %s: %s. This lockd works on, but a build of "
		         "another layout cannot see it on this master: to change layouts, stop "
		         "every lockd of this build before starting one of the new layout "
		         "(README, \"Upgrading\")",
		         m->name, conn_name, r->str);
	else
		log_debug("master %s: CLIENT SETNAME: %s", m->name, r->str);
	m->name_refused_logged = 1;
}

/* The value as one printable word (STATS, the log): no space, no
 * control byte; a long one cut, and marked so ("..."). */
static void show_value(const redisReply *r, char *shown, size_t len)
{
	size_t n = 0, max = len > 4 ? len - 4 : 0;
	for (size_t i = 0; i < r->len && n < max; i++) {
		unsigned char c = (unsigned char)r->str[i];
		shown[n++] = c > ' ' && c < 0x7f ? (char)c : '?';
	}
	if (len > 0)
		shown[n] = '\0';
	if (r->len > max && len > 4)
		snprintf(shown + n, len - n, "...");
	else if (r->len == 0 && len > 2)
		snprintf(shown, len, "\"\"");
}

int mhs_layout_judge(const redisReply *r, char *shown, size_t len)
{
	if (!r || (r->type != REDIS_REPLY_NIL && r->type != REDIS_REPLY_STRING))
		return -1;
	if (r->type == REDIS_REPLY_NIL) {
		snprintf(shown, len, "%s", MASTER_LAYOUT);
		return 1;
	}
	show_value(r, shown, len);
	return r->len == strlen(MASTER_LAYOUT) && memcmp(r->str, MASTER_LAYOUT, r->len) == 0;
}

/* A layout number as SWITCH_LUA reads one: 1 to 9 decimal digits and
 * nothing else; -1 otherwise. */
static long layout_number(const char *p, size_t n)
{
	if (n == 0 || n > 9)
		return -1;
	long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

int mhs_switch_judge(const redisReply *r, unsigned long layout, char *shown, size_t len)
{
	if (!r || (r->type != REDIS_REPLY_NIL && r->type != REDIS_REPLY_STRING))
		return -1;
	long v = r->type == REDIS_REPLY_NIL ? 0 : layout_number(r->str, r->len);
	if (v >= 0 && (unsigned long)v <= layout) {
		snprintf(shown, len, "%lu", layout);
		return 1;
	}
	show_value(r, shown, len);
	return 0;
}

int mhs_client_list_others(const char *list, size_t len, unsigned long layout, struct mhs_others *o)
{
	static const char pfx[] = "lockd-l";
	memset(o, 0, sizeof(*o));
	const char *p = list, *end = list + len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		/* the field "name=" (not "lib-name=": only at a field's start) */
		const char *f = p, *name = NULL;
		while (f < eol && !name) {
			const char *sp = memchr(f, ' ', (size_t)(eol - f));
			if (!sp)
				sp = eol;
			if (sp - f >= 5 && memcmp(f, "name=", 5) == 0)
				name = f + 5;
			f = sp + 1;
		}
		size_t nl = 0;
		if (name)
			while (name + nl < eol && name[nl] != ' ' && name[nl] != '\r')
				nl++;
		size_t d = sizeof(pfx) - 1;
		if (name && nl > d && memcmp(name, pfx, d) == 0) {
			while (d < nl && name[d] >= '0' && name[d] <= '9')
				d++;
			/* digits, then a dash: a lockd's command connection */
			if (d > sizeof(pfx) - 1 && d < nl && name[d] == '-') {
				long m =
				    layout_number(name + sizeof(pfx) - 1, d - (sizeof(pfx) - 1));
				if (m < 0 || (unsigned long)m != layout) {
					if (o->n == 0) {
						o->layout = m;
						snprintf(o->first, sizeof(o->first), "%.*s",
						         (int)nl, name);
					} else if (o->layout != m) {
						o->layout = -1;
					}
					o->n++;
				}
			}
		}
		p = eol + 1;
	}
	return o->n;
}

/* The layout key: missing or this build's layout goes on; anything else
 * keeps the master down for this lockd (it is retried with the normal
 * reconnect backoff, so it counts again once the key is gone). Logged
 * once per value found, and once when it is back. */
static void layout_verdict(struct master *m, int ok, const char *shown)
{
	snprintf(m->layout, sizeof(m->layout), "%s", shown);
	if (ok) {
		if (m->layout_refused[0])
			log_info("master %s: layout %s again (was %s): it counts again once up",
			         m->name, MASTER_LAYOUT, m->layout_refused);
		m->layout_refused[0] = '\0';
		return;
	}
	if (strcmp(m->layout_refused, shown) != 0)
		log_warn("master %s: its key \"%s\" says layout %s, and this lockd runs layout %s: "
		         "the master does not count for it. If a lockd of that layout took it "
		         "over, upgrade this lockd to a build of that layout (README, "
		         "\"Upgrading\"); if none runs any more and the leases they granted have "
		         "run out, or the key was set by mistake, DEL it",
		         m->name, layout_key, shown, MASTER_LAYOUT);
	snprintf(m->layout_refused, sizeof(m->layout_refused), "%s", shown);
	char why[128];
	snprintf(why, sizeof(why), "layout %s found, this lockd runs layout %s: not counted", shown,
	         MASTER_LAYOUT);
	if (m->state == MS_HANDSHAKE || m->state == MS_LAYOUT_WAIT)
		ops->drop(m, why, 1);
}

static void hs_layout_cb(struct master *m, redisReply *r, void *arg)
{
	char shown[sizeof(m->layout)];
	int ok = mhs_layout_judge(r, shown, sizeof(shown));
	if (ok < 0)
		mhs_fail(m, r, "GET layout");
	else
		layout_verdict(m, ok, shown);
}

/* (A): the key now says this build's layout (or it is refused, as a
 * layout-1 build refuses: a higher layout took the master over). */
static void hs_switch_cb(struct master *m, redisReply *r, void *arg)
{
	char shown[sizeof(m->layout)];
	int ok = mhs_switch_judge(r, layout_n, shown, sizeof(shown));
	if (ok < 0) {
		mhs_fail(m, r, "EVAL layout");
		return;
	}
	if (ok)
		m->hs_switch |= HS_SWITCH_SET;
	if (ok && r->type == REDIS_REPLY_NIL)
		log_info("master %s: its key \"%s\" was missing: set to layout %s", m->name,
		         layout_key, MASTER_LAYOUT);
	else if (ok &&
	         !(r->len == strlen(MASTER_LAYOUT) && memcmp(r->str, MASTER_LAYOUT, r->len) == 0))
		log_info("master %s: its key \"%s\" said layout %.*s: set to layout %s", m->name,
		         layout_key, (int)r->len, r->str, MASTER_LAYOUT);
	layout_verdict(m, ok, shown);
}

/* CLIENT LIST refused (an ACL without CLIENT, a proxy): a connection of
 * another layout there cannot be seen, so the master never counts for
 * this build (doc/design.md: a rolling change of layout is not safe on
 * it). Tried again with the reconnect backoff; logged once until a
 * CLIENT LIST is read there again. */
static void list_refused(struct master *m, const redisReply *r)
{
	if (!m->list_refused_logged)
		log_warn("master %s: CLIENT LIST: %s. This lockd of layout %s cannot see whether a "
		         "lockd of another layout still uses this master, so it does not count "
		         "it: allow CLIENT LIST and CLIENT SETNAME to lockd's user there (README, "
		         "\"Upgrading\")",
		         m->name, r->str, MASTER_LAYOUT);
	m->list_refused_logged = 1;
	char why[128]; /* last_error's size: Redis' reason cut to fit */
	snprintf(why, sizeof(why), "CLIENT LIST: %.100s; not counted", r->str);
	ops->drop(m, why, 1);
}

/* (B)'s verdict: how many connections of another layout are listed. A
 * wait is logged when it starts and when it ends (not at each poll, nor
 * again when the master reconnects in between). */
static int note_others(struct master *m, const redisReply *r)
{
	struct mhs_others o;
	mhs_client_list_others(r->str, r->len, layout_n, &o);
	m->list_refused_logged = 0;
	m->layout_wait = o.n;
	if (o.n == 0) {
		if (m->layout_waiting)
			log_info(
			    "master %s: no connection of another layout is left after %lld ms: "
			    "layout %s counts it once up",
			    m->name, (long long)(now_us() - m->layout_wait_since_us) / 1000,
			    MASTER_LAYOUT);
		m->layout_waiting = 0;
		return 0;
	}
	char of[32];
	if (o.layout >= 0)
		snprintf(of, sizeof(of), "layout %ld", o.layout);
	else
		snprintf(of, sizeof(of), "other layouts");
	char why[200];
	snprintf(why, sizeof(why),
	         "layout %s: waiting for %d connection%s of %s (%s) to close; not counted",
	         MASTER_LAYOUT, o.n, o.n == 1 ? "" : "s", of, o.first);
	snprintf(m->last_error, sizeof(m->last_error), "%.127s", why); /* cut if need be */
	if (!m->layout_waiting) {
		log_warn("master %s: %d connection%s of %s (%s) listed there: this lockd of layout "
		         "%s does not count it until they close (a lockd of that layout still "
		         "running: stop it; README, \"Upgrading\")",
		         m->name, o.n, o.n == 1 ? "" : "s", of, o.first, MASTER_LAYOUT);
		m->layout_waiting = 1;
		m->layout_wait_since_us = now_us();
	}
	return o.n;
}

/* (B) in the handshake, after (A) on the same connection. */
static void hs_list_cb(struct master *m, redisReply *r, void *arg)
{
	if (m->state != MS_HANDSHAKE)
		return; /* dropped (the layout refused): nothing to judge */
	if (r && r->type == REDIS_REPLY_ERROR)
		list_refused(m, r);
	else if (!r || r->type != REDIS_REPLY_STRING)
		mhs_fail(m, r, "CLIENT LIST");
	else if (note_others(m, r) >= 0)
		m->hs_switch |= HS_SWITCH_LISTED;
}

/* (A): SWITCH_LUA, answered by hs_switch_cb; 0 or -1 (not sent). */
static int send_switch(struct master *m)
{
	static char nstr[24];
	static const char *argv[5];
	static size_t len[5];
	snprintf(nstr, sizeof(nstr), "%lu", layout_n);
	argv[0] = "EVAL";
	argv[1] = SWITCH_LUA;
	argv[2] = "1";
	argv[3] = layout_key;
	argv[4] = nstr;
	for (int i = 0; i < 5; i++)
		len[i] = strlen(argv[i]);
	return ops->call(m, -1, 5, argv, len, hs_switch_cb, NULL);
}

/* (B); 0 or -1 (not sent). */
static int send_list(struct master *m, master_reply_fn *fn)
{
	static const char *argv[] = {"CLIENT", "LIST"};
	static const size_t len[] = {6, 4};
	return ops->call(m, -1, 2, argv, len, fn, NULL);
}

static void marker_cb(struct master *m, redisReply *r, void *arg);

/* EXISTS of the marker, answered by marker_cb; 0 or -1 (not sent). */
static int send_marker(struct master *m)
{
	static const char *argv[2];
	static size_t len[2];
	argv[0] = "EXISTS";
	argv[1] = marker_key;
	len[0] = 6;
	len[1] = strlen(marker_key);
	return ops->call(m, -1, 2, argv, len, marker_cb, NULL);
}

/* A poll's answer: wait on, or read the marker again (it may have been
 * written while this master waited) and go up. */
static void poll_list_cb(struct master *m, redisReply *r, void *arg)
{
	if (m->state != MS_LAYOUT_WAIT)
		return;
	if (r && r->type == REDIS_REPLY_ERROR) {
		list_refused(m, r);
		return;
	}
	if (!r || r->type != REDIS_REPLY_STRING) {
		mhs_fail(m, r, "CLIENT LIST");
		return;
	}
	if (note_others(m, r) > 0) {
		master_timer_at(m->layout_timer, now_us() + LAYOUT_POLL_MS * 1000);
		return;
	}
	if (send_marker(m) != 0)
		ops->drop(m, "EXISTS marker: not sent", 1);
}

/* Each poll is (A) and (B) again, not (B) alone: two builds of layouts
 * above 1 that switch one master at once (one's EVAL before the other's,
 * each one's CLIENT LIST after both names) would otherwise each wait for
 * the other's connection for ever. With (A) first, the lower one finds
 * the higher layout in the key and is refused (its connection closes),
 * and the higher one's next poll finds none. The key cannot change
 * otherwise during a wait but by hand: a DEL is undone at once. */
void mhs_poll_cb(evutil_socket_t fd, short what, void *arg)
{
	struct master *m = arg;
	if (m->state == MS_LAYOUT_WAIT && (send_switch(m) != 0 || send_list(m, poll_list_cb) != 0))
		ops->drop(m, "the layout's poll: not sent", 1);
}

static void hs_load_cb(struct master *m, redisReply *r, void *arg)
{
	if (!r || r->type != REDIS_REPLY_STRING) {
		mhs_fail(m, r, "SCRIPT LOAD");
		return;
	}
	script_set_sha((enum script_id)(intptr_t)arg, r->str, r->len);
}

static void hs_gen_cb(struct master *m, redisReply *r, void *arg)
{
	if (!r || r->type != REDIS_REPLY_INTEGER)
		mhs_fail(m, r, "the connection epoch");
}

static void hs_info_cb(struct master *m, redisReply *r, void *arg)
{
	if (!r || r->type != REDIS_REPLY_STRING) {
		mhs_fail(m, r, "INFO");
		return;
	}
	const char *p = strstr(r->str, "run_id:");
	char id[48] = "";
	if (p) {
		size_t n = strcspn(p + 7, "\r\n");
		if (n >= sizeof(id))
			n = sizeof(id) - 1;
		memcpy(id, p + 7, n);
		id[n] = '\0';
	}
	/* A new run_id means the master restarted and may have lost keys.
	 * Reported with the next on_up, even if this handshake fails. */
	if (m->run_id[0] && strcmp(m->run_id, id) != 0 && !m->restarted) {
		memcpy(m->prev_run_id, m->run_id, sizeof(m->prev_run_id));
		m->restarted = 1;
	}
	snprintf(m->run_id, sizeof(m->run_id), "%s", id);
}

/* The handshake's last answer, or a wait's last (its poll listed no
 * connection of another layout, and the marker may have been written
 * meanwhile): up, or (the handshake's) the wait. */
static void marker_cb(struct master *m, redisReply *r, void *arg)
{
	if (!r || r->type != REDIS_REPLY_INTEGER) {
		mhs_fail(m, r, "EXISTS marker");
		return;
	}
	m->has_marker = r->integer > 0;
	if (m->state == MS_LAYOUT_WAIT) {
		ops->up(m);
		return;
	}
	if (m->state != MS_HANDSHAKE)
		return;
	if (switching && m->hs_switch != (HS_SWITCH_SET | HS_SWITCH_LISTED)) {
		/* (A) or (B) could not be sent (their callbacks never ran):
		 * never up without both */
		mhs_fail(m, NULL, "the layout's switch");
		return;
	}
	if (m->layout_wait > 0) {
		ops->wait(m);
		master_timer_at(m->layout_timer, now_us() + LAYOUT_POLL_MS * 1000);
	} else {
		ops->up(m);
	}
}

/* The handshake's commands are sent at once (hiredis copies each), and
 * their answers come in this order. The steps after the GET still run on
 * a master whose layout is refused: they load scripts and write only this
 * lockd's own epoch and name keys, which expire, never a lock. */
void mhs_start(struct master *m)
{
	static const char *const load_argv[] = {"SCRIPT", "LOAD"};
	static size_t load_len[SCR_COUNT][3];
	static const char *load_args[SCR_COUNT][3];
	static const char *argv[3];
	static size_t len[3];
	if (opts->password[0]) {
		argv[0] = "AUTH";
		argv[1] = opts->password;
		for (int i = 0; i < 2; i++)
			len[i] = strlen(argv[i]);
		ops->call(m, -1, 2, argv, len, hs_auth_cb, NULL);
	}
	/* Before the GET: see the top of this file. */
	argv[0] = "CLIENT";
	argv[1] = "SETNAME";
	argv[2] = conn_name;
	for (int i = 0; i < 3; i++)
		len[i] = strlen(argv[i]);
	ops->call(m, -1, 3, argv, len, hs_name_cb, NULL);
	if (switching) {
		/* (A), then (B) on the same connection (doc/design.md). A
		 * connection that is not up yet has no WAIT (no replica
		 * needs the key: a new primary is switched by its own
		 * handshake). */
		/* Not sent (never, but for want of memory): marker_cb
		 * sees it in hs_switch. Nothing is dropped from inside the
		 * connect callback, whose context hiredis still uses. */
		m->layout_wait = 0;
		m->hs_switch = 0;
		send_switch(m);
		send_list(m, hs_list_cb);
	} else {
		argv[0] = "GET";
		argv[1] = layout_key;
		for (int i = 0; i < 2; i++)
			len[i] = strlen(argv[i]);
		ops->call(m, -1, 2, argv, len, hs_layout_cb, NULL);
	}
	for (int i = 0; i < SCR_COUNT; i++) {
		load_args[i][0] = load_argv[0];
		load_args[i][1] = load_argv[1];
		load_args[i][2] = script_body((enum script_id)i);
		for (int j = 0; j < 3; j++)
			load_len[i][j] = strlen(load_args[i][j]);
		ops->call(m, -1, 3, load_args[i], load_len[i], hs_load_cb, (void *)(intptr_t)i);
	}
	ops->gen(m, hs_gen_cb);
	static const char *info_argv[] = {"INFO", "server"};
	static const size_t info_len[] = {4, 6};
	ops->call(m, -1, 2, info_argv, info_len, hs_info_cb, NULL);
	mrepl_hs_role(m);
	send_marker(m);
}
