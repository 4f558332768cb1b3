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
	redisReply *c = mfmt_dup(r);
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

START_TEST(writes_wait)
{
	static const enum script_id writes[] = {SCR_ACQUIRE,    SCR_ACQUIRE_N,  SCR_RENEW,
	                                        SCR_RAISE,      SCR_RAISE_MANY, SCR_SESS_PUT,
	                                        SCR_SESS_TOUCH, SCR_SESS_ADOPT, SCR_SESS_ADOPT_MORE,
	                                        SCR_EL_PUT,     SCR_EL_EPOCH};
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
	tcase_add_test(tc, writes_wait);
	suite_add_tcase(s, tc);
	return s;
}
