/* Unit tests of liblockd's pure parser (lib/reply.c) on plain buffers:
 * line framing, events, where list replies end, reply kinds, request and
 * key checks, and typed request lines, which lockd's own parser
 * (src/proto.c) must read back as the same command, key and options. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "reply.h"
#include "units.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

START_TEST(frames)
{
	static const struct {
		const char *bytes; /* before the LF */
		size_t n;          /* 0: strlen */
		size_t max_line;
		enum rp_frame want;
	} t[] = {
	    {"OK\r", 0, 64, RP_FRAME_OK},
	    {"\r", 0, 64, RP_FRAME_OK}, /* an empty line, CR LF ended */
	    {"", 0, 64, RP_FRAME_NO_CR},
	    {"OK", 0, 64, RP_FRAME_NO_CR},
	    {"OK\r ", 0, 64, RP_FRAME_NO_CR},
	    {"12345\r", 0, 5, RP_FRAME_OK},
	    {"123456\r", 0, 5, RP_FRAME_LONG},
	    {"O\0K\r", 4, 64, RP_FRAME_NUL},
	    {"\0\r", 2, 64, RP_FRAME_NUL},
	    {"123456\0\r", 8, 5, RP_FRAME_LONG}, /* too long is said first */
	};
	for (size_t i = 0; i < N(t); i++) {
		size_t n = t[i].n ? t[i].n : strlen(t[i].bytes);
		ck_assert_msg(rp_frame(t[i].bytes, n, t[i].max_line) == t[i].want,
		              "case %zu: %d, expected %d", i,
		              rp_frame(t[i].bytes, n, t[i].max_line), t[i].want);
	}
}
END_TEST

START_TEST(events)
{
	static const struct {
		const char *line;
		int is_event;
		const char *key;
		uint64_t fence;
	} t[] = {
	    {"LOST k 42", 1, "k", 42},
	    {"LOST", 1, "", 0},
	    {"LOST k", 1, "k", 0},
	    {"LOST k x", 1, "k", 0},
	    {"LOST k 18446744073709551615", 1, "k", UINT64_MAX},
	    {"LOST k 18446744073709551616", 1, "k", 0}, /* does not fit: no fence */
	    {"LOST k 7 more", 1, "k", 7},
	    {"LOSTk 1", 0, NULL, 0},
	    {"lost k 1", 0, NULL, 0},
	    {"OK 1", 0, NULL, 0},
	    {"", 0, NULL, 0},
	};
	for (size_t i = 0; i < N(t); i++) {
		ck_assert_msg(rp_is_event(t[i].line) == t[i].is_event, "case %zu: %s", i,
		              t[i].line);
		if (!t[i].is_event)
			continue;
		char words[64];
		struct lockd_event ev;
		snprintf(words, sizeof(words), "%s", t[i].line);
		rp_event(&ev, t[i].line, words, 1);
		ck_assert_str_eq(ev.line, t[i].line);
		ck_assert_str_eq(ev.name, "LOST");
		ck_assert_int_eq(ev.kind, LOCKD_E_LOST);
		ck_assert_str_eq(ev.value, "");
		ck_assert_str_eq(ev.key, t[i].key);
		ck_assert_msg(ev.fence == t[i].fence, "case %zu: fence %llu", i,
		              (unsigned long long)ev.fence);
		ck_assert_int_eq(ev.in_list, 1);
	}
}
END_TEST

/* Protocol 1.3: ELECTED and NOLEADER are events, typed, with the name
 * in key, and the fence and value of ELECTED parsed. */
START_TEST(election_events)
{
	static const struct {
		const char *line;
		int is_event;
		enum lockd_event_kind kind;
		const char *name, *key;
		uint64_t fence;
		const char *value;
	} t[] = {
	    {"ELECTED e 7 node-a", 1, LOCKD_E_ELECTED, "ELECTED", "e", 7, "node-a"},
	    {"ELECTED e 18446744073709551615 v", 1, LOCKD_E_ELECTED, "ELECTED", "e", UINT64_MAX,
	     "v"},
	    {"ELECTED e 7", 1, LOCKD_E_ELECTED, "ELECTED", "e", 7, ""},   /* no value */
	    {"ELECTED e x v", 1, LOCKD_E_ELECTED, "ELECTED", "e", 0, ""}, /* no fence */
	    {"ELECTED", 1, LOCKD_E_ELECTED, "ELECTED", "", 0, ""},
	    {"NOLEADER e", 1, LOCKD_E_NOLEADER, "NOLEADER", "e", 0, ""},
	    {"NOLEADER", 1, LOCKD_E_NOLEADER, "NOLEADER", "", 0, ""},
	    {"RESUMING 127.0.0.1:1 reset", 0, LOCKD_E_RESUMING, "RESUMING", "127.0.0.1:1", 0,
	     ""}, /* the library's own: handed over, never read as one */
	    {"ELECTEDX e 1 v", 0, LOCKD_E_OTHER, NULL, NULL, 0, NULL},
	    {"NOLEADERS e", 0, LOCKD_E_OTHER, NULL, NULL, 0, NULL},
	    {"elected e 1 v", 0, LOCKD_E_OTHER, NULL, NULL, 0, NULL},
	    {"LEADER 7 node-a", 0, LOCKD_E_OTHER, NULL, NULL, 0, NULL}, /* a reply */
	    {"NONE", 0, LOCKD_E_OTHER, NULL, NULL, 0, NULL},
	};
	for (size_t i = 0; i < N(t); i++) {
		ck_assert_msg(rp_is_event(t[i].line) == t[i].is_event, "case %zu: %s", i,
		              t[i].line);
		if (!t[i].name)
			continue;
		char words[64];
		struct lockd_event ev;
		memset(&ev, 0x5a, sizeof(ev)); /* every field must be set */
		snprintf(words, sizeof(words), "%s", t[i].line);
		rp_event(&ev, t[i].line, words, 0);
		ck_assert_str_eq(ev.line, t[i].line);
		ck_assert_msg(ev.kind == t[i].kind, "case %zu: kind %d", i, ev.kind);
		ck_assert_str_eq(ev.name, t[i].name);
		ck_assert_str_eq(ev.key, t[i].key);
		ck_assert_msg(ev.fence == t[i].fence, "case %zu: fence %llu", i,
		              (unsigned long long)ev.fence);
		ck_assert_str_eq(ev.value, t[i].value);
		ck_assert_int_eq(ev.in_list, 0);
	}
	char words[64] = "FUTURE x 1";
	struct lockd_event ev;
	rp_event(&ev, "FUTURE x 1", words, 0);
	ck_assert_int_eq(ev.kind, LOCKD_E_OTHER);
	/* never the end of a list, so never inside one: rp_more is not asked */
	ck_assert(!rp_is_list_request("LEADER e", 8));
}
END_TEST

START_TEST(list_ends)
{
	static const struct {
		const char *line;
		int list, in_list, more;
	} t[] = {
	    {"OK 1", 0, 0, 0},          {"END", 0, 0, 0},        /* not a list: one line */
	    {"KEY a 1 1 100", 1, 0, 1}, {"STAT pid 1", 1, 0, 1}, /* a list begins */
	    {"END", 1, 0, 0},                                    /* an empty list */
	    {"ERR LIMIT x", 1, 0, 0},                            /* an error instead of the list */
	    {"ERRX", 1, 0, 1},                                   /* only the word ERR ends it */
	    {"KEY b 2 1 100", 1, 1, 1}, {"ERR x", 1, 1, 1},      /* inside: only END ends */
	    {"END", 1, 1, 0},           {"END ", 1, 1, 1},
	};
	for (size_t i = 0; i < N(t); i++)
		ck_assert_msg(rp_more(t[i].line, t[i].list, t[i].in_list) == t[i].more,
		              "case %zu: %s", i, t[i].line);
}
END_TEST

START_TEST(reply_kinds)
{
	static const struct {
		const char *line;
		int list;
		enum lockd_kind kind;
		int has_num;
		uint64_t num, num2;
		const char *code, *text;
	} t[] = {
	    {"OK", 0, LOCKD_R_OK, 0, 0, 0, "", ""},
	    {"OK 41", 0, LOCKD_R_OK, 1, 41, 0, "", ""},
	    {"OK 0", 0, LOCKD_R_OK, 1, 0, 0, "", ""},
	    {"OK 18446744073709551615", 0, LOCKD_R_OK, 1, UINT64_MAX, 0, "", ""},
	    {"OK 18446744073709551616", 0, LOCKD_R_OK, 0, 0, 0, "", ""},
	    {"OK x", 0, LOCKD_R_OK, 0, 0, 0, "", ""},
	    {"OKAY", 0, LOCKD_R_OTHER, 0, 0, 0, "", ""},
	    {"PONG", 0, LOCKD_R_PONG, 0, 0, 0, "", ""},
	    {"PONG hello", 0, LOCKD_R_PONG, 0, 0, 0, "", ""},
	    {"FREE", 0, LOCKD_R_FREE, 0, 0, 0, "", ""},
	    {"FREE x", 0, LOCKD_R_OTHER, 0, 0, 0, "", ""},
	    {"BUSY", 0, LOCKD_R_BUSY, 0, 0, 0, "", ""},
	    {"TIMEOUT", 0, LOCKD_R_TIMEOUT, 0, 0, 0, "", ""},
	    {"HELD 29998 3", 0, LOCKD_R_HELD, 1, 29998, 3, "", ""},
	    {"HELD 29998", 0, LOCKD_R_OTHER, 0, 0, 0, "", ""},
	    {"SHARED 2 100 0", 0, LOCKD_R_OTHER, 0, 0, 0, "", ""},
	    {"ERR QUORUM no majority of masters answered", 0, LOCKD_R_ERR, 0, 0, 0, "QUORUM",
	     "no majority of masters answered"},
	    {"ERR", 0, LOCKD_R_ERR, 0, 0, 0, "", ""},
	    {"ERR  KEY   bad key", 0, LOCKD_R_ERR, 0, 0, 0, "KEY", "bad key"},
	    {"ERR ABCDEFGHIJKLMNOPQRST x", 0, LOCKD_R_ERR, 0, 0, 0, "ABCDEFGHIJKLMNO",
	     "PQRST x"}, /* the code is cut at 15 bytes */
	    {"ERRX", 0, LOCKD_R_OTHER, 0, 0, 0, "", ""},
	    {"KEY a 1 1 100", 1, LOCKD_R_LIST, 0, 0, 0, "", ""},
	    {"END", 1, LOCKD_R_LIST, 0, 0, 0, "", ""},
	    {"ERR LIMIT out of memory", 1, LOCKD_R_ERR, 0, 0, 0, "LIMIT", "out of memory"},
	    {"", 0, LOCKD_R_OTHER, 0, 0, 0, "", ""},
	    {"LEADER 7 node-a", 0, LOCKD_R_LEADER, 1, 7, 0, "", ""},
	    {"LEADER 7", 0, LOCKD_R_LEADER, 1, 7, 0, "", ""}, /* a plain LOCK's holder */
	    {"LEADER 7 a b", 0, LOCKD_R_OTHER, 0, 0, 0, "", ""},
	    {"LEADER x v", 0, LOCKD_R_OTHER, 0, 0, 0, "", ""},
	    {"LEADER 7 ", 0, LOCKD_R_OTHER, 0, 0, 0, "", ""},
	    {"LEADER", 0, LOCKD_R_OTHER, 0, 0, 0, "", ""},
	    {"NONE", 0, LOCKD_R_NONE, 0, 0, 0, "", ""},
	    {"NONE x", 0, LOCKD_R_OTHER, 0, 0, 0, "", ""},
	};
	for (size_t i = 0; i < N(t); i++) {
		struct lockd_reply r;
		memset(&r, 0x5a, sizeof(r)); /* every parsed field must be set */
		rp_classify(&r, t[i].line, t[i].list);
		ck_assert_msg(r.kind == t[i].kind, "case %zu (%s): kind %d", i, t[i].line, r.kind);
		ck_assert_msg(r.has_num == t[i].has_num, "case %zu (%s): has_num", i, t[i].line);
		if (t[i].has_num) {
			ck_assert_msg(r.num == t[i].num, "case %zu: num", i);
			ck_assert_msg(r.num2 == t[i].num2, "case %zu: num2", i);
		}
		ck_assert_str_eq(r.code, t[i].code);
		ck_assert_str_eq(r.text, t[i].text);
		const char *v = strncmp(t[i].line, "LEADER 7 node-a", 15) == 0 ? "node-a" : "";
		ck_assert_str_eq(r.value, v);
	}
}
END_TEST

START_TEST(request_checks)
{
	ck_assert_int_eq(rp_check_request("PING", 4), LOCKD_OK);
	ck_assert_int_eq(rp_check_request("LOCK k WAIT 5", 13), LOCKD_OK);
	ck_assert_int_eq(rp_check_request("", 0), LOCKD_EARG);
	ck_assert_int_eq(rp_check_request("PING\r", 5), LOCKD_EARG);
	ck_assert_int_eq(rp_check_request("PI\nNG", 5), LOCKD_EARG);
	ck_assert_int_eq(rp_check_request("PI\0NG", 5), LOCKD_EARG);

	ck_assert(rp_is_list_request("HELD", 4));
	ck_assert(rp_is_list_request("  stats", 7));
	ck_assert(rp_is_list_request("Held x", 6));
	ck_assert(!rp_is_list_request("HELDX", 5));
	ck_assert(!rp_is_list_request("STATUS k", 8));
	ck_assert(!rp_is_list_request("HEL", 3));
	ck_assert(rp_is_list_request("WHO k", 5)); /* 1.4 */
	ck_assert(rp_is_list_request("\twho\tk", 7));
	ck_assert(!rp_is_list_request("WHOM k", 6));

	char cmd[8];
	rp_command(" \tLOCK k", 8, cmd, sizeof(cmd));
	ck_assert_str_eq(cmd, "LOCK");
	rp_command("VERYLONGCOMMAND x", 17, cmd, sizeof(cmd));
	ck_assert_str_eq(cmd, "VERYLON");
	rp_command("", 0, cmd, sizeof(cmd));
	ck_assert_str_eq(cmd, "");

	char e[32];
	rp_escape(e, sizeof(e), "a\r\n\\", 4);
	ck_assert_str_eq(e, "a\\x0d\\x0a\\x5c");
	char big[200];
	memset(big, 'x', sizeof(big));
	char eb[128];
	rp_escape(eb, sizeof(eb), big, sizeof(big));
	ck_assert_uint_eq(strlen(eb), 83); /* 80 bytes, then "..." */
	ck_assert_str_eq(eb + 80, "...");
}
END_TEST

START_TEST(key_checks)
{
	static const struct {
		const char *key;
		size_t max;
		int want;
	} t[] = {
	    {"k", 16, LOCKD_OK},
	    {"nightly-report", 16, LOCKD_OK},
	    {"!~", 16, LOCKD_OK}, /* 0x21 and 0x7e */
	    {"", 16, LOCKD_EKEY},
	    {"k WAIT", 16, LOCKD_EKEY},
	    {"k\tx", 16, LOCKD_EKEY},
	    {"k\r", 16, LOCKD_EKEY},
	    {"k\nQUIT", 16, LOCKD_EKEY},
	    {"k\x7f", 16, LOCKD_EKEY},
	    {"k\x01", 16, LOCKD_EKEY},
	    {"caf\xc3\xa9", 16, LOCKD_EKEY},
	    {"0123456789abcdef", 16, LOCKD_OK},
	    {"0123456789abcdefg", 16, LOCKD_EKEY},
	};
	for (size_t i = 0; i < N(t); i++)
		ck_assert_msg(rp_check_key(t[i].key, t[i].max) == t[i].want, "case %zu", i);
	ck_assert_int_eq(rp_check_key(NULL, 16), LOCKD_EKEY);
}
END_TEST

START_TEST(typed_lines)
{
	static const struct {
		enum rp_cmd cmd;
		const char *key;
		int hold, wait_ms, ttl_ms;
		const char *want; /* NULL: refused with status */
		int status;
	} t[] = {
	    {RP_LOCK, "k", 0, -1, 0, "LOCK k", 0},
	    {RP_LOCK, "k", 0, 0, 0, "LOCK k WAIT 0", 0},
	    {RP_LOCK, "k", 0, 5000, 30000, "LOCK k WAIT 5000 TTL 30000", 0},
	    {RP_LOCK, "k", LOCKD_SHARED, 10, 0, "LOCK k SHARED WAIT 10", 0},
	    {RP_LOCK, "k", 3, -1, 100, "LOCK k PERMITS 3 TTL 100", 0},
	    {RP_LOCK, "k", 0, 2147483647, 2147483647, "LOCK k WAIT 2147483647 TTL 2147483647", 0},
	    {RP_LOCK, "k", -2, -1, 0, NULL, LOCKD_EARG},
	    {RP_LOCK, "k", 0, -1, -1, NULL, LOCKD_EARG},
	    {RP_LOCK, "k WAIT", 0, -1, 0, NULL, LOCKD_EKEY},
	    {RP_LOCK, "", 0, -1, 0, NULL, LOCKD_EKEY},
	    {RP_TRYLOCK, "k", 0, 99, 0, "TRYLOCK k", 0}, /* no WAIT for TRYLOCK */
	    {RP_TRYLOCK, "k", LOCKD_SHARED, -1, 7, "TRYLOCK k SHARED TTL 7", 0},
	    {RP_TRYLOCK, "k\r\nUNLOCK k", 0, -1, 0, NULL, LOCKD_EKEY},
	    {RP_UNLOCK, "k", 0, -1, 0, "UNLOCK k", 0},
	    {RP_UNLOCK, "k x", 0, -1, 0, NULL, LOCKD_EKEY},
	    {RP_EXTEND, "k", 0, -1, 500, "EXTEND k 500", 0},
	    {RP_EXTEND, "k", 0, -1, 0, NULL, LOCKD_EARG},
	    {RP_STATUS, "k", 0, -1, 0, "STATUS k", 0},
	    {RP_STATUS, "k", 4, -1, 0, "STATUS k PERMITS 4", 0},
	    {RP_STATUS, "k", LOCKD_SHARED, -1, 0, NULL, LOCKD_EARG},
	};
	for (size_t i = 0; i < N(t); i++) {
		char out[128];
		long n = rp_format(out, sizeof(out), t[i].cmd, t[i].key, 64, t[i].hold,
		                   t[i].wait_ms, t[i].ttl_ms);
		if (!t[i].want) {
			ck_assert_msg(n == t[i].status, "case %zu: %ld, expected %d", i, n,
			              t[i].status);
			continue;
		}
		ck_assert_msg(n == (long)strlen(t[i].want), "case %zu: %ld", i, n);
		ck_assert_str_eq(out, t[i].want);
	}
	/* too small a buffer: the length needed, as snprintf */
	char small[8];
	ck_assert_int_eq(rp_format(small, sizeof(small), RP_LOCK, "abcdefgh", 64, 0, 5, 0), 20);
}
END_TEST

/* What lockd's parser makes of every typed request: the same command,
 * key and options, never anything else. */
START_TEST(typed_lines_parse_back)
{
	static const char *const keys[] = {"k",
	                                   "nightly-report",
	                                   "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
	                                   "WAIT",
	                                   "TTL",
	                                   "SHARED",
	                                   "PERMITS",
	                                   "0"};
	static const struct {
		enum rp_cmd cmd;
		enum cmd want;
		int hold, wait_ms, ttl_ms;
	} forms[] = {
	    {RP_LOCK, CMD_LOCK, 0, -1, 0},       {RP_LOCK, CMD_LOCK, LOCKD_SHARED, 0, 9},
	    {RP_LOCK, CMD_LOCK, 5, 1000, 0},     {RP_TRYLOCK, CMD_TRYLOCK, 0, -1, 30000},
	    {RP_TRYLOCK, CMD_TRYLOCK, 2, -1, 0}, {RP_UNLOCK, CMD_UNLOCK, 0, -1, 0},
	    {RP_EXTEND, CMD_EXTEND, 0, -1, 1},   {RP_STATUS, CMD_STATUS, 0, -1, 0},
	    {RP_STATUS, CMD_STATUS, 8, -1, 0},
	};
	for (size_t k = 0; k < N(keys); k++) {
		for (size_t f = 0; f < N(forms); f++) {
			char line[256];
			struct request r;
			const char *msg = NULL;
			long n = rp_format(line, sizeof(line), forms[f].cmd, keys[k], 256,
			                   forms[f].hold, forms[f].wait_ms, forms[f].ttl_ms);
			ck_assert_msg(n > 0 && n < (long)sizeof(line), "%s form %zu", keys[k], f);
			enum proto_err e = proto_parse(line, (size_t)n, 256, 1024, &r, &msg);
			ck_assert_msg(e == PE_NONE, "\"%s\": %s", line, msg ? msg : "?");
			ck_assert_int_eq(r.cmd, forms[f].want);
			ck_assert_uint_eq(r.klen, strlen(keys[k]));
			ck_assert(memcmp(r.key, keys[k], r.klen) == 0);
			int lockish = forms[f].cmd == RP_LOCK || forms[f].cmd == RP_TRYLOCK;
			ck_assert_int_eq(r.shared, lockish && forms[f].hold == LOCKD_SHARED);
			ck_assert_uint_eq(r.permits,
			                  forms[f].hold > 0 ? (unsigned)forms[f].hold : 0);
			ck_assert_int_eq(r.has_wait,
			                 forms[f].cmd == RP_LOCK && forms[f].wait_ms >= 0);
			if (r.has_wait)
				ck_assert_uint_eq(r.wait_ms, (unsigned)forms[f].wait_ms);
			if (forms[f].cmd == RP_EXTEND || (lockish && forms[f].ttl_ms > 0))
				ck_assert_uint_eq(r.ttl_ms, (unsigned)forms[f].ttl_ms);
		}
	}
}
END_TEST

START_TEST(election_lines)
{
	static const struct {
		enum rp_ecmd cmd;
		const char *name, *value;
		int wait_ms;
		const char *want; /* NULL: refused with status */
		int status;
	} t[] = {
	    {RP_CAMPAIGN, "e", "node-a", -1, "CAMPAIGN e node-a", 0},
	    {RP_CAMPAIGN, "e", "node-a", 0, "CAMPAIGN e node-a WAIT 0", 0},
	    {RP_CAMPAIGN, "e", "!~", 5000, "CAMPAIGN e !~ WAIT 5000", 0},
	    {RP_CAMPAIGN, "e", "a b", -1, NULL, LOCKD_EARG},
	    {RP_CAMPAIGN, "e", "", -1, NULL, LOCKD_EARG},
	    {RP_CAMPAIGN, "e", NULL, -1, NULL, LOCKD_EARG},
	    {RP_CAMPAIGN, "e", "v\r\nQUIT", -1, NULL, LOCKD_EARG},
	    {RP_CAMPAIGN, "e", "caf\xc3\xa9", -1, NULL, LOCKD_EARG},
	    {RP_CAMPAIGN, "e x", "v", -1, NULL, LOCKD_EKEY},
	    {RP_CAMPAIGN, "", "v", -1, NULL, LOCKD_EKEY},
	    {RP_PROCLAIM, "e", "v2", 99, "PROCLAIM e v2", 0}, /* no WAIT */
	    {RP_PROCLAIM, "e", "v 2", -1, NULL, LOCKD_EARG},
	    {RP_RESIGN, "e", NULL, -1, "RESIGN e", 0},
	    {RP_RESIGN, "e", "ignored x", -1, "RESIGN e", 0},
	    {RP_LEADER, "e", NULL, -1, "LEADER e", 0},
	    {RP_LEADER, "e\n", NULL, -1, NULL, LOCKD_EKEY},
	    {RP_OBSERVE, "e", NULL, -1, "OBSERVE e", 0},
	    {RP_UNOBSERVE, "e", NULL, -1, "UNOBSERVE e", 0},
	    {(enum rp_ecmd)99, "e", NULL, -1, NULL, LOCKD_EARG},
	};
	for (size_t i = 0; i < N(t); i++) {
		char out[128];
		long n = rp_format_elect(out, sizeof(out), t[i].cmd, t[i].name, 64, t[i].value, 16,
		                         t[i].wait_ms);
		if (!t[i].want) {
			ck_assert_msg(n == t[i].status, "case %zu: %ld, expected %d", i, n,
			              t[i].status);
			continue;
		}
		ck_assert_msg(n == (long)strlen(t[i].want), "case %zu: %ld", i, n);
		ck_assert_str_eq(out, t[i].want);
	}
	/* the value's length: 1 to max */
	char v[300];
	memset(v, 'v', sizeof(v));
	v[256] = '\0';
	ck_assert_int_eq(rp_check_value(v, 256), LOCKD_OK);
	v[256] = 'v';
	v[257] = '\0';
	ck_assert_int_eq(rp_check_value(v, 256), LOCKD_EARG);
	/* lockd's parser reads each back as the same command, name and value */
	static const struct {
		enum rp_ecmd cmd;
		enum cmd want;
		int wait_ms;
	} forms[] = {
	    {RP_CAMPAIGN, CMD_CAMPAIGN, -1},   {RP_CAMPAIGN, CMD_CAMPAIGN, 250},
	    {RP_PROCLAIM, CMD_PROCLAIM, -1},   {RP_RESIGN, CMD_RESIGN, -1},
	    {RP_LEADER, CMD_LEADER, -1},       {RP_OBSERVE, CMD_OBSERVE, -1},
	    {RP_UNOBSERVE, CMD_UNOBSERVE, -1},
	};
	static const char *const names[] = {"e", "WAIT", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"};
	for (size_t k = 0; k < N(names); k++) {
		for (size_t f = 0; f < N(forms); f++) {
			char line[256];
			struct request r;
			const char *msg = NULL;
			long n = rp_format_elect(line, sizeof(line), forms[f].cmd, names[k], 256,
			                         "WAIT", 256, forms[f].wait_ms);
			ck_assert_msg(n > 0 && n < (long)sizeof(line), "%s form %zu", names[k], f);
			enum proto_err e = proto_parse(line, (size_t)n, 256, 1024, &r, &msg);
			ck_assert_msg(e == PE_NONE, "\"%s\": %s", line, msg ? msg : "?");
			ck_assert_int_eq(r.cmd, forms[f].want);
			ck_assert_uint_eq(r.klen, strlen(names[k]));
			ck_assert(memcmp(r.key, names[k], r.klen) == 0);
			int valued = forms[f].cmd == RP_CAMPAIGN || forms[f].cmd == RP_PROCLAIM;
			if (valued) {
				ck_assert(r.word != NULL);
				ck_assert_uint_eq(r.wlen, 4);
				ck_assert(memcmp(r.word, "WAIT", 4) == 0);
			}
			ck_assert_int_eq(r.has_wait, forms[f].wait_ms >= 0);
			if (r.has_wait)
				ck_assert_uint_eq(r.wait_ms, (unsigned)forms[f].wait_ms);
		}
	}
}
END_TEST

Suite *reply_suite(void)
{
	Suite *s = suite_create("reply");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, frames);
	tcase_add_test(tc, events);
	tcase_add_test(tc, election_events);
	tcase_add_test(tc, list_ends);
	tcase_add_test(tc, reply_kinds);
	tcase_add_test(tc, request_checks);
	tcase_add_test(tc, key_checks);
	tcase_add_test(tc, typed_lines);
	tcase_add_test(tc, typed_lines_parse_back);
	tcase_add_test(tc, election_lines);
	suite_add_tcase(s, tc);
	return s;
}
