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

void mhs_init(const struct mhs_ops *o, const struct master_opts *mo, const char *marker,
              const char *prefix, const char *instance)
{
	ops = o;
	opts = mo;
	marker_key = marker;
	snprintf(layout_key, sizeof(layout_key), "%s layout", prefix);
	snprintf(conn_name, sizeof(conn_name), "lockd-l%s-%s", MASTER_LAYOUT,
	         instance ? instance : "");
}

void mhs_fail(struct master *m, redisReply *r, const char *what)
{
	char why[160];
	snprintf(why, sizeof(why), "%s: %s", what,
	         !r                             ? "no reply"
	         : r->type == REDIS_REPLY_ERROR ? r->str
	                                        : "unexpected reply");
	if (m->state == MS_HANDSHAKE)
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

int mhs_layout_judge(const redisReply *r, char *shown, size_t len)
{
	if (!r || (r->type != REDIS_REPLY_NIL && r->type != REDIS_REPLY_STRING))
		return -1;
	if (r->type == REDIS_REPLY_NIL) {
		snprintf(shown, len, "%s", MASTER_LAYOUT);
		return 1;
	}
	/* The value as one printable word (STATS, the log): no space, no
	 * control byte; a long one cut, and marked so ("..."). */
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
	return r->len == strlen(MASTER_LAYOUT) && memcmp(r->str, MASTER_LAYOUT, r->len) == 0;
}

/* The layout key: missing or this build's layout goes on; anything else
 * keeps the master down for this lockd (it is retried with the normal
 * reconnect backoff, so it counts again once the key is gone). Logged
 * once per value found, and once when it is back. */
static void hs_layout_cb(struct master *m, redisReply *r, void *arg)
{
	char shown[sizeof(m->layout)];
	int ok = mhs_layout_judge(r, shown, sizeof(shown));
	if (ok < 0) {
		mhs_fail(m, r, "GET layout");
		return;
	}
	memcpy(m->layout, shown, sizeof(m->layout));
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
	memcpy(m->layout_refused, shown, sizeof(m->layout_refused));
	char why[128];
	snprintf(why, sizeof(why), "layout %s found, this lockd runs layout %s: not counted", shown,
	         MASTER_LAYOUT);
	if (m->state == MS_HANDSHAKE)
		ops->drop(m, why, 1);
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

static void hs_marker_cb(struct master *m, redisReply *r, void *arg)
{
	if (!r || r->type != REDIS_REPLY_INTEGER) {
		mhs_fail(m, r, "EXISTS marker");
		return;
	}
	m->has_marker = r->integer > 0;
	if (m->state == MS_HANDSHAKE)
		ops->up(m);
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
	argv[0] = "GET";
	argv[1] = layout_key;
	for (int i = 0; i < 2; i++)
		len[i] = strlen(argv[i]);
	ops->call(m, -1, 2, argv, len, hs_layout_cb, NULL);
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
	argv[0] = "EXISTS";
	argv[1] = marker_key;
	for (int i = 0; i < 2; i++)
		len[i] = strlen(argv[i]);
	ops->call(m, -1, 2, argv, len, hs_marker_cb, NULL);
}
