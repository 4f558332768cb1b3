/* Unit tests of the pure parts of the Sentinel and replica code: a copy of
 * a reply held for its WAIT (master_fmt.c), the RESP of a batch of script
 * calls, ROLE's replica count and addresses (master_repl.c), a
 * +switch-master message
 * (sentinel.c), and which scripts wait for replicas (scripts.c); and the
 * handshake's judgement of a master's layout key (master_hs.c). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "master_int.h"
#include "rdup.h"
#include "scripts.h"
#include "sentinel.h"
#include "units.h"

static redisReply *mk(int type)
{
	redisReply *r = calloc(1, sizeof(*r));
	ck_assert_ptr_nonnull(r);
	r->type = type;
	return r;
}

static redisReply *mk_str(int type, const char *s)
{
	redisReply *r = mk(type);
	r->len = strlen(s);
	r->str = strdup(s);
	return r;
}

static redisReply *mk_int(long long v)
{
	redisReply *r = mk(REDIS_REPLY_INTEGER);
	r->integer = v;
	return r;
}

static redisReply *mk_arr(size_t n, redisReply **el)
{
	redisReply *r = mk(REDIS_REPLY_ARRAY);
	r->elements = n;
	r->element = calloc(n ? n : 1, sizeof(*r->element));
	for (size_t i = 0; i < n; i++)
		r->element[i] = el[i];
	return r;
}

START_TEST(reply_copy)
{
	redisReply *inner[] = {mk_int(7), mk(REDIS_REPLY_NIL)};
	redisReply *el[] = {mk_str(REDIS_REPLY_STRING, "a\0b"), mk_arr(2, inner),
	                    mk_str(REDIS_REPLY_ERROR, "ERR x"), mk_arr(0, NULL)};
	free(el[0]->str); /* a binary string */
	el[0]->str = malloc(4);
	memcpy(el[0]->str, "a\0b", 4);
	el[0]->len = 3;
	redisReply *r = mk_arr(4, el);
	redisReply *c = rdup_reply(r);
	ck_assert_ptr_nonnull(c);
	freeReplyObject(r); /* the copy shares nothing with it */
	ck_assert_int_eq(c->type, REDIS_REPLY_ARRAY);
	ck_assert_uint_eq(c->elements, 4);
	ck_assert_int_eq(c->element[0]->type, REDIS_REPLY_STRING);
	ck_assert_uint_eq(c->element[0]->len, 3);
	ck_assert_int_eq(memcmp(c->element[0]->str, "a\0b", 3), 0);
	ck_assert_int_eq(c->element[0]->str[3], '\0');
	ck_assert_int_eq(c->element[1]->type, REDIS_REPLY_ARRAY);
	ck_assert_int_eq(c->element[1]->element[0]->integer, 7);
	ck_assert_int_eq(c->element[1]->element[1]->type, REDIS_REPLY_NIL);
	ck_assert_str_eq(c->element[2]->str, "ERR x");
	ck_assert_uint_eq(c->element[3]->elements, 0);
	freeReplyObject(c);
}
END_TEST

/* Two calls of one script in one carrier: the shared keys once, each
 * call's own keys, the shared arguments once, each call's own arguments
 * (SCR_ACQUIRE: 1 shared key, 3 shared arguments). Calls join only when
 * their shared ones are equal. */
START_TEST(batch_format)
{
	static const char *a1[] = {"EVALSHA", "-", "2", "g", "k1", "i", "d", "e", "x1"};
	static const char *a2[] = {"EVALSHA", "-", "2", "g", "k2", "i", "d", "e", "x2"};
	static const char *a3[] = {"EVALSHA", "-", "2", "g", "k3", "i", "d", "f", "x3"};
	static const size_t l1[] = {7, 1, 1, 1, 2, 1, 1, 1, 2};
	struct mreq i1 = {.script = SCR_ACQUIRE, .argc = 9, .argv = a1, .argvlen = l1, .nkeys = 2};
	struct mreq i2 = {.script = SCR_ACQUIRE, .argc = 9, .argv = a2, .argvlen = l1, .nkeys = 2};
	struct mreq i3 = {.script = SCR_ACQUIRE, .argc = 9, .argv = a3, .argvlen = l1, .nkeys = 2};
	ck_assert_int_eq(mfmt_same_shared(&i1, &i2), 1);
	ck_assert_int_eq(mfmt_same_shared(&i1, &i3), 0); /* another epoch: another batch */
	i1.item_next = &i2;
	struct mreq c = {.script = SCR_ACQUIRE_N, .items = &i1, .nitems = 2};
	size_t len;
	const char *p = mfmt_req(&c, 1, &len);
	const char *body = script_body(SCR_ACQUIRE_N);
	char head[64];
	int hl = snprintf(head, sizeof(head), "*11\r\n$4\r\nEVAL\r\n$%zu\r\n", strlen(body));
	ck_assert_int_eq(memcmp(p, head, (size_t)hl), 0);
	const char *tail =
	    "\r\n$1\r\n3\r\n$1\r\ng\r\n$2\r\nk1\r\n$2\r\nk2\r\n$1\r\ni\r\n$1\r\nd\r\n$"
	    "1\r\ne\r\n$2\r\nx1\r\n$2\r\nx2\r\n";
	ck_assert_uint_eq(len, (size_t)hl + strlen(body) + strlen(tail));
	ck_assert_int_eq(memcmp(p + hl + strlen(body), tail, strlen(tail)), 0);
	/* a plain command */
	static const char *w[] = {"WAIT", "1", "25"};
	static const size_t wl[] = {4, 1, 2};
	struct mreq cmd = {.script = -1, .argc = 3, .argv = w, .argvlen = wl};
	p = mfmt_req(&cmd, 0, &len);
	ck_assert_uint_eq(len, strlen("*3\r\n$4\r\nWAIT\r\n$1\r\n1\r\n$2\r\n25\r\n"));
	ck_assert_int_eq(memcmp(p, "*3\r\n$4\r\nWAIT\r\n$1\r\n1\r\n$2\r\n25\r\n", len), 0);
	mfmt_free();
}
END_TEST

START_TEST(role_replicas)
{
	redisReply *rep1[] = {mk_str(REDIS_REPLY_STRING, "127.0.0.1"),
	                      mk_str(REDIS_REPLY_STRING, "6380"), mk_str(REDIS_REPLY_STRING, "99")};
	redisReply *reps[] = {mk_arr(3, rep1)};
	redisReply *m[] = {mk_str(REDIS_REPLY_STRING, "master"), mk_int(99), mk_arr(1, reps)};
	redisReply *r = mk_arr(3, m);
	ck_assert_int_eq(mrepl_role_replicas(r), 1);
	freeReplyObject(r);
	redisReply *m0[] = {mk_str(REDIS_REPLY_STRING, "master"), mk_int(0), mk_arr(0, NULL)};
	r = mk_arr(3, m0);
	ck_assert_int_eq(mrepl_role_replicas(r), 0);
	freeReplyObject(r);
	redisReply *s[] = {mk_str(REDIS_REPLY_STRING, "slave"), mk_str(REDIS_REPLY_STRING, "h"),
	                   mk_int(6379), mk_str(REDIS_REPLY_STRING, "connected"), mk_int(5)};
	r = mk_arr(5, s);
	ck_assert_int_eq(mrepl_role_replicas(r), -1);
	freeReplyObject(r);
	redisReply *sn[] = {mk_str(REDIS_REPLY_STRING, "sentinel"), mk_arr(0, NULL)};
	r = mk_arr(2, sn);
	ck_assert_int_eq(mrepl_role_replicas(r), -1);
	freeReplyObject(r);
	r = mk_str(REDIS_REPLY_ERROR, "ERR unknown command");
	ck_assert_int_eq(mrepl_role_replicas(r), -1);
	freeReplyObject(r);
	ck_assert_int_eq(mrepl_role_replicas(NULL), -1);
}
END_TEST

/* A ROLE master reply listing replicas on ports 6380, 6381, ... */
static redisReply *role_of(int n)
{
	redisReply *reps[8];
	for (int i = 0; i < n; i++) {
		char port[16];
		snprintf(port, sizeof(port), "%d", 6380 + i);
		redisReply *e[] = {mk_str(REDIS_REPLY_STRING, "10.0.0.1"),
		                   mk_str(REDIS_REPLY_STRING, port),
		                   mk_str(REDIS_REPLY_STRING, "99")};
		reps[i] = mk_arr(3, e);
	}
	redisReply *m[] = {mk_str(REDIS_REPLY_STRING, "master"), mk_int(99),
	                   mk_arr((size_t)n, reps)};
	return mk_arr(3, m);
}

START_TEST(role_nodes)
{
	char buf[64];
	redisReply *r = role_of(2);
	mrepl_role_nodes(r, buf, sizeof(buf));
	ck_assert_str_eq(buf, "10.0.0.1:6380,10.0.0.1:6381");
	/* exactly enough room for the list and a ",..." after it: not cut */
	mrepl_role_nodes(r, buf, strlen("10.0.0.1:6380,10.0.0.1:6381") + 5);
	ck_assert_str_eq(buf, "10.0.0.1:6380,10.0.0.1:6381");
	/* one byte less: the second entry does not fit, nor does the first alone */
	mrepl_role_nodes(r, buf, strlen("10.0.0.1:6380,10.0.0.1:6381") + 4);
	ck_assert_str_eq(buf, "10.0.0.1:6380,...");
	mrepl_role_nodes(r, buf, 10);
	ck_assert_str_eq(buf, "...");
	freeReplyObject(r);
	r = role_of(5);
	mrepl_role_nodes(r, buf, sizeof(buf));
	ck_assert_str_eq(buf, "10.0.0.1:6380,10.0.0.1:6381,10.0.0.1:6382,10.0.0.1:6383,...");
	freeReplyObject(r);
	r = role_of(0);
	mrepl_role_nodes(r, buf, sizeof(buf));
	ck_assert_str_eq(buf, "-");
	freeReplyObject(r);
	/* a replica's ROLE, or none: no list */
	redisReply *s[] = {mk_str(REDIS_REPLY_STRING, "slave"), mk_str(REDIS_REPLY_STRING, "h"),
	                   mk_int(6379), mk_str(REDIS_REPLY_STRING, "connected"), mk_int(5)};
	r = mk_arr(5, s);
	mrepl_role_nodes(r, buf, sizeof(buf));
	ck_assert_str_eq(buf, "-");
	freeReplyObject(r);
	mrepl_role_nodes(NULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "-");
	/* an announced address that would break a STATS value or a label */
	r = role_of(2);
	free(r->element[2]->element[0]->element[0]->str);
	r->element[2]->element[0]->element[0]->str = strdup("a \"b\"");
	mrepl_role_nodes(r, buf, sizeof(buf));
	ck_assert_str_eq(buf, "10.0.0.1:6381");
	freeReplyObject(r);
}
END_TEST

START_TEST(switch_message)
{
	char host[64];
	int port = 0;
	ck_assert_int_eq(sn_parse_switch("locks 10.0.0.1 6379 10.0.0.2 6380", "locks", host,
	                                 sizeof(host), &port),
	                 0);
	ck_assert_str_eq(host, "10.0.0.2");
	ck_assert_int_eq(port, 6380);
	ck_assert_int_eq(
	    sn_parse_switch("locks ::1 6379 ::2 6381", "locks", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "::2");
	ck_assert_int_eq(port, 6381);
	/* another name, a name that only starts like ours, malformed */
	ck_assert_int_eq(sn_parse_switch("other 10.0.0.1 6379 10.0.0.2 6380", "locks", host,
	                                 sizeof(host), &port),
	                 -1);
	ck_assert_int_eq(sn_parse_switch("locks2 10.0.0.1 6379 10.0.0.2 6380", "locks", host,
	                                 sizeof(host), &port),
	                 -1);
	ck_assert_int_eq(
	    sn_parse_switch("locks 10.0.0.1 6379 10.0.0.2", "locks", host, sizeof(host), &port),
	    -1);
	ck_assert_int_eq(
	    sn_parse_switch("locks 10.0.0.1 6379 10.0.0.2 0", "locks", host, sizeof(host), &port),
	    -1);
	ck_assert_int_eq(sn_parse_switch("locks 10.0.0.1 6379 10.0.0.2 6380 x", "locks", host,
	                                 sizeof(host), &port),
	                 -1);
	ck_assert_int_eq(
	    sn_parse_switch("locks 10.0.0.1 6379 10.0.0.2 6380", "locks", host, 5, &port), -1);
}
END_TEST

/* The layout key as GET answers it: missing or this build's layout goes
 * on (1), any other value is refused (0), and no reply, an error or
 * another type fails the handshake (-1). What STATS shows is one word. */
START_TEST(layout_judge)
{
	char shown[36];
	redisReply *r = mk(REDIS_REPLY_NIL);
	ck_assert_int_eq(mhs_layout_judge(r, shown, sizeof(shown)), 1);
	ck_assert_str_eq(shown, MASTER_LAYOUT);
	freeReplyObject(r);
	static const struct {
		const char *val;
		int ok;
		const char *shown;
	} cases[] = {
	    {"1", 1, "1"},
	    {"2", 0, "2"},
	    {"x", 0, "x"},
	    {"01", 0, "01"},
	    {"1 ", 0, "1?"},
	    {"", 0, "\"\""},
	    {"a b\r\nc", 0, "a?b??c"},
	    {"0123456789abcdef0123456789abcdef", 0, "0123456789abcdef0123456789abcdef"},
	    {"0123456789abcdef0123456789abcdefX", 0, "0123456789abcdef0123456789abcdef..."},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = mk_str(REDIS_REPLY_STRING, cases[i].val);
		ck_assert_msg(mhs_layout_judge(r, shown, sizeof(shown)) == cases[i].ok,
		              "layout \"%s\" judged other than %d", cases[i].val, cases[i].ok);
		ck_assert_str_eq(shown, cases[i].shown);
		freeReplyObject(r);
	}
	/* a value with a NUL byte in it is not "1" */
	r = mk_str(REDIS_REPLY_STRING, "1");
	r->str[0] = '\0';
	ck_assert_int_eq(mhs_layout_judge(r, shown, sizeof(shown)), 0);
	ck_assert_str_eq(shown, "?");
	freeReplyObject(r);
	ck_assert_int_eq(mhs_layout_judge(NULL, shown, sizeof(shown)), -1);
	r = mk_str(REDIS_REPLY_ERROR, "WRONGTYPE Operation against a key holding the wrong kind");
	ck_assert_int_eq(mhs_layout_judge(r, shown, sizeof(shown)), -1);
	freeReplyObject(r);
	r = mk_int(1);
	ck_assert_int_eq(mhs_layout_judge(r, shown, sizeof(shown)), -1);
	freeReplyObject(r);
}
END_TEST

/* A build of layout 2 (or 3) judges what its switching EVAL found: a
 * missing key or a layout number not above its own goes on, and the key
 * now says its layout; a higher one, or anything that is no layout number
 * (as SWITCH_LUA reads one: up to 9 decimal digits), is refused and shown
 * as it is. */
START_TEST(switch_judge)
{
	char shown[36];
	redisReply *r = mk(REDIS_REPLY_NIL);
	ck_assert_int_eq(mhs_switch_judge(r, 2, shown, sizeof(shown)), 1);
	ck_assert_str_eq(shown, "2");
	freeReplyObject(r);
	static const struct {
		const char *val;
		unsigned long layout;
		int ok;
		const char *shown;
	} cases[] = {
	    {"1", 2, 1, "2"},
	    {"2", 2, 1, "2"},
	    {"0", 2, 1, "2"},
	    {"02", 2, 1, "2"},
	    {"3", 2, 0, "3"},
	    {"10", 2, 0, "10"},
	    {"2", 3, 1, "3"},
	    {"999999999", 2, 0, "999999999"},
	    {"0000000001", 2, 0, "0000000001"}, /* 10 digits: no layout number */
	    {"x", 2, 0, "x"},
	    {"1 ", 2, 0, "1?"},
	    {" 1", 2, 0, "?1"},
	    {"-1", 2, 0, "-1"},
	    {"1.5", 2, 0, "1.5"},
	    {"0x1", 2, 0, "0x1"},
	    {"", 2, 0, "\"\""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = mk_str(REDIS_REPLY_STRING, cases[i].val);
		ck_assert_msg(mhs_switch_judge(r, cases[i].layout, shown, sizeof(shown)) ==
		                  cases[i].ok,
		              "layout \"%s\" judged by layout %lu other than %d", cases[i].val,
		              cases[i].layout, cases[i].ok);
		ck_assert_str_eq(shown, cases[i].shown);
		freeReplyObject(r);
	}
	ck_assert_int_eq(mhs_switch_judge(NULL, 2, shown, sizeof(shown)), -1);
	r = mk_str(REDIS_REPLY_ERROR,
	           "NOPERM this user has no permissions to run the 'eval' command");
	ck_assert_int_eq(mhs_switch_judge(r, 2, shown, sizeof(shown)), -1);
	freeReplyObject(r);
	r = mk_int(1);
	ck_assert_int_eq(mhs_switch_judge(r, 2, shown, sizeof(shown)), -1);
	freeReplyObject(r);
}
END_TEST

/* CLIENT LIST as Redis 7.0.15 answered it (recorded, one connection per
 * line): a layout-1 lockd's command connection, its subscriber, a
 * layout-2 lockd's connection, an unnamed client, and the CLIENT LIST
 * itself. */
static const char client_list_7_0[] =
    "id=3 addr=127.0.0.1:58260 laddr=127.0.0.1:17391 fd=8 name=lockd-l1-3f9a0c27d1b84e65 age=0 "
    "idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=20474 argv-mem=0 "
    "multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=0 tot-mem=22272 events=r cmd=client|setname "
    "user=default redir=-1 resp=2\n"
    "id=4 addr=127.0.0.1:58266 laddr=127.0.0.1:17391 fd=9 name=lockd-sub-3f9a0c27d1b84e65 "
    "age=0 idle=0 flags=P db=0 sub=1 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=20474 argv-mem=0 "
    "multi-mem=0 rbs=1024 rbp=44 obl=0 oll=0 omem=0 tot-mem=22328 events=r cmd=subscribe "
    "user=default redir=-1 resp=2\n"
    "id=5 addr=127.0.0.1:58274 laddr=127.0.0.1:17391 fd=11 name=lockd-l2-0123456789abcdef "
    "age=0 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=20474 argv-mem=0 "
    "multi-mem=0 rbs=16384 rbp=0 obl=0 oll=0 omem=0 tot-mem=37632 events=r cmd=client|setname "
    "user=default redir=-1 resp=2\n"
    "id=6 addr=127.0.0.1:58282 laddr=127.0.0.1:17391 fd=12 name= age=0 idle=0 flags=N db=0 "
    "sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=20474 argv-mem=0 multi-mem=0 rbs=16384 "
    "rbp=16384 obl=0 oll=0 omem=0 tot-mem=37632 events=r cmd=ping user=default redir=-1 "
    "resp=2\n"
    "id=7 addr=127.0.0.1:58294 laddr=127.0.0.1:17391 fd=13 name= age=0 idle=0 flags=N db=0 "
    "sub=0 psub=0 ssub=0 multi=-1 qbuf=13 qbuf-free=20461 argv-mem=10 multi-mem=0 rbs=16384 "
    "rbp=16384 obl=0 oll=0 omem=0 tot-mem=37658 events=r cmd=client|list user=default "
    "redir=-1 resp=2\n";

static int others(const char *list, unsigned long layout, struct mhs_others *o)
{
	return mhs_client_list_others(list, strlen(list), layout, o);
}

START_TEST(client_list_names)
{
	struct mhs_others o;
	/* layout 2 waits for the layout-1 connection only: not for its
	 * subscriber, its own layout, the unnamed clients */
	ck_assert_int_eq(others(client_list_7_0, 2, &o), 1);
	ck_assert_int_eq(o.n, 1);
	ck_assert_int_eq(o.layout, 1);
	ck_assert_str_eq(o.first, "lockd-l1-3f9a0c27d1b84e65");
	/* layout 1 (as a layout-3 build would see both) */
	ck_assert_int_eq(others(client_list_7_0, 1, &o), 1);
	ck_assert_str_eq(o.first, "lockd-l2-0123456789abcdef");
	ck_assert_int_eq(others(client_list_7_0, 3, &o), 2);
	ck_assert_int_eq(o.layout, -1); /* 1 and 2: "other layouts" */
	ck_assert_str_eq(o.first, "lockd-l1-3f9a0c27d1b84e65");
	/* nothing, and a list of none */
	ck_assert_int_eq(others("", 2, &o), 0);
	ck_assert_int_eq(o.layout, 0);
	ck_assert_str_eq(o.first, "");
	ck_assert_int_eq(mhs_client_list_others(client_list_7_0, 0, 2, &o), 0);
	/* only the last line of a list cut short, and CR LF line ends */
	ck_assert_int_eq(others("id=1 name=lockd-l1-a age=0\r\nid=2 name=lockd-l1-b", 2, &o), 2);
	ck_assert_str_eq(o.first, "lockd-l1-a");
	ck_assert_int_eq(o.layout, 1);
	/* odd names: not a lockd's command connection */
	static const char *const odd[] = {
	    "id=1 name=lockd-l1 age=0\n",              /* no dash after the digits */
	    "id=1 name=lockd-l-1-x age=0\n",           /* no digits */
	    "id=1 name=lockd-lx-1 age=0\n",            /* no digits */
	    "id=1 name=lockd-sub-1 age=0\n",           /* a subscriber */
	    "id=1 name=xlockd-l1-ab age=0\n",          /* not at the name's start */
	    "id=1 name=LOCKD-L1-ab age=0\n",           /* names are case-sensitive */
	    "id=1 name=lockd age=0\n",                 /* cut */
	    "id=1 lib-name=lockd-l1-ab name= age=0\n", /* 7.2's lib-name is not the name */
	    "id=1 xname=lockd-l1-ab age=0\n",          /* nor is any field ending in name */
	    "id=1 age=0 cmd=client|setname|lockd-l1-x\n",
	};
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		ck_assert_msg(others(odd[i], 2, &o) == 0, "%s counted", odd[i]);
	/* names that are: the shortest, at a line's end, the field last, a
	 * layout with more digits or written with a leading zero */
	ck_assert_int_eq(others("id=1 name=lockd-l1-\n", 2, &o), 1);
	ck_assert_int_eq(others("id=1 addr=x name=lockd-l1-ab", 2, &o), 1);
	ck_assert_int_eq(others("id=1 name=lockd-l12-ab age=0\n", 2, &o), 1);
	ck_assert_int_eq(o.layout, 12);
	ck_assert_int_eq(others("id=1 name=lockd-l02-ab age=0\n", 2, &o), 0); /* layout 2 */
	ck_assert_int_eq(others("id=1 name=lockd-l1234567890-ab age=0\n", 2, &o), 1);
	ck_assert_int_eq(o.layout, -1); /* more than 9 digits: another layout */
	/* a long name is cut to fit */
	ck_assert_int_eq(others("id=1 name=lockd-l1-0123456789abcdef0123456789abcdef0123456789 "
	                        "age=0\nid=2 name=lockd-l3-x\n",
	                        2, &o),
	                 2);
	ck_assert_int_eq(o.layout, -1);
	ck_assert_uint_eq(strlen(o.first), sizeof(o.first) - 1);
	ck_assert(strncmp(o.first, "lockd-l1-0123456789abcdef", 25) == 0);
	/* bytes after a NUL or without an end: read within len only */
	char buf[] = "id=1 name=lockd-l1-ab age=0\nid=2 name=lockd-l1-cd";
	ck_assert_int_eq(mhs_client_list_others(buf, 18, 2, &o), 0); /* "...name=lockd-l1" */
	ck_assert_int_eq(mhs_client_list_others(buf, 19, 2, &o), 1);
	ck_assert_str_eq(o.first, "lockd-l1-");
}
END_TEST

START_TEST(writes_wait)
{
	static const enum script_id writes[] = {SCR_ACQUIRE,    SCR_ACQUIRE_N,  SCR_RENEW,
	                                        SCR_RAISE,      SCR_RAISE_MANY, SCR_SESS_PUT,
	                                        SCR_SESS_TOUCH, SCR_SESS_ADOPT, SCR_SESS_ADOPT_MORE,
	                                        SCR_EL_PUT,     SCR_EL_EPOCH,   SCR_SESS_INDEX};
	static const enum script_id others[] = {
	    SCR_RELEASE, SCR_RELEASE_N, SCR_RELEASE_MANY, SCR_STATUS,    SCR_SESS_END,
	    SCR_EL_READ, SCR_EL_RESIGN, SCR_GEN,          SCR_SESS_PEEK, SCR_WHO};
	for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++)
		ck_assert_msg(script_writes(writes[i]), "script %d must wait", writes[i]);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		ck_assert_msg(!script_writes(others[i]), "script %d must not wait", others[i]);
	ck_assert_int_eq(
	    (int)(sizeof(writes) / sizeof(writes[0]) + sizeof(others) / sizeof(others[0])),
	    SCR_COUNT);
}
END_TEST

Suite *master_repl_suite(void)
{
	Suite *s = suite_create("master_repl");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, reply_copy);
	tcase_add_test(tc, batch_format);
	tcase_add_test(tc, role_replicas);
	tcase_add_test(tc, role_nodes);
	tcase_add_test(tc, switch_message);
	tcase_add_test(tc, layout_judge);
	tcase_add_test(tc, switch_judge);
	tcase_add_test(tc, client_list_names);
	tcase_add_test(tc, writes_wait);
	suite_add_tcase(s, tc);
	return s;
}
