/* Unit tests of the request parser (src/proto.c) against doc/protocol.md;
 * the helpers it relies on (src/util.c) are test_util.c's. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "util.h"
#include "units.h"

#define MAXKEY 256 /* limits.max_key_len default */

static enum proto_err parse_n(const char *line, size_t len, struct request *r, const char **msg)
{
	*msg = NULL;
	return proto_parse(line, len, MAXKEY, 1024, r, msg);
}

static enum proto_err parse(const char *line, struct request *r, const char **msg)
{
	return parse_n(line, strlen(line), r, msg);
}

/* Parse a line that must be accepted. */
static void parse_ok(const char *line, struct request *r)
{
	const char *msg;
	enum proto_err e = parse(line, r, &msg);
	ck_assert_msg(e == PE_NONE, "\"%s\": expected success, got ERR %s %s", line,
	              proto_err_name(e), msg ? msg : "(no message)");
}

#define ck_assert_key(r, line, off, str)                                                           \
	do {                                                                                       \
		ck_assert_ptr_eq((r)->key, (line) + (off));                                        \
		ck_assert_uint_eq((r)->klen, strlen(str));                                         \
		ck_assert_mem_eq((r)->key, (str), strlen(str));                                    \
	} while (0)

/* --- every command --- */

START_TEST(ping_without_word)
{
	struct request r;
	parse_ok("PING", &r);
	ck_assert_int_eq(r.cmd, CMD_PING);
	ck_assert_ptr_null(r.word);
	ck_assert_uint_eq(r.wlen, 0);
	ck_assert_ptr_null(r.key);
	ck_assert_uint_eq(r.klen, 0);
}
END_TEST

START_TEST(ping_with_word)
{
	struct request r;
	const char *line = "ping HeLLo-World";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_PING);
	ck_assert_ptr_eq(r.word, line + 5);
	ck_assert_uint_eq(r.wlen, 11);
	ck_assert_ptr_null(r.key);
}
END_TEST

START_TEST(lock_plain)
{
	struct request r;
	const char *line = "LOCK nightly-report";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_LOCK);
	ck_assert_key(&r, line, 5, "nightly-report");
	ck_assert_int_eq(r.has_wait, 0);
	ck_assert_int_eq(r.has_ttl, 0);
	ck_assert_uint_eq(r.wait_ms, 0);
	ck_assert_uint_eq(r.ttl_ms, 0);
	ck_assert_ptr_null(r.word);
}
END_TEST

START_TEST(lock_wait_and_ttl)
{
	struct request r;
	const char *line = "LOCK k WAIT 5000 TTL 300";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_LOCK);
	ck_assert_key(&r, line, 5, "k");
	ck_assert_int_eq(r.has_wait, 1);
	ck_assert_uint_eq(r.wait_ms, 5000);
	ck_assert_int_eq(r.has_ttl, 1);
	ck_assert_uint_eq(r.ttl_ms, 300);
}
END_TEST

START_TEST(lock_options_any_order_any_case)
{
	struct request r;
	const char *line = "lock Key ttl 300 Wait 5000";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_LOCK);
	ck_assert_key(&r, line, 5, "Key");
	ck_assert_int_eq(r.has_wait, 1);
	ck_assert_uint_eq(r.wait_ms, 5000);
	ck_assert_int_eq(r.has_ttl, 1);
	ck_assert_uint_eq(r.ttl_ms, 300);
}
END_TEST

START_TEST(lock_wait_only)
{
	struct request r;
	parse_ok("LOCK k WAIT 0", &r);
	ck_assert_int_eq(r.has_wait, 1);
	ck_assert_uint_eq(r.wait_ms, 0);
	ck_assert_int_eq(r.has_ttl, 0);
	ck_assert_uint_eq(r.ttl_ms, 0);
}
END_TEST

START_TEST(lock_ttl_only)
{
	struct request r;
	parse_ok("LOCK k TTL 1", &r);
	ck_assert_int_eq(r.has_wait, 0);
	ck_assert_uint_eq(r.wait_ms, 0);
	ck_assert_int_eq(r.has_ttl, 1);
	ck_assert_uint_eq(r.ttl_ms, 1);
}
END_TEST

START_TEST(trylock_plain_and_ttl)
{
	struct request r;
	const char *line = "TRYLOCK job:42";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_TRYLOCK);
	ck_assert_key(&r, line, 8, "job:42");
	ck_assert_int_eq(r.has_ttl, 0);
	ck_assert_int_eq(r.has_wait, 0);

	line = "TryLock job:42 tTl 7";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_TRYLOCK);
	ck_assert_key(&r, line, 8, "job:42");
	ck_assert_int_eq(r.has_ttl, 1);
	ck_assert_uint_eq(r.ttl_ms, 7);
	ck_assert_int_eq(r.has_wait, 0);
}
END_TEST

#define M_PERMITS "PERMITS must be 1 to limits.max_permits"
#define M_BOTH    "SHARED and PERMITS exclude each other"

/* SHARED is a flag, PERMITS n an option; both in any order. */
START_TEST(shared_and_permits)
{
	struct request r;
	const char *msg;
	parse_ok("LOCK k SHARED", &r);
	ck_assert_int_eq(r.shared, 1);
	ck_assert_uint_eq(r.permits, 0);
	parse_ok("lock k wait 5 shared ttl 7", &r);
	ck_assert_int_eq(r.shared, 1);
	ck_assert_int_eq(r.has_wait, 1);
	ck_assert_uint_eq(r.wait_ms, 5);
	ck_assert_uint_eq(r.ttl_ms, 7);
	parse_ok("TRYLOCK k Shared", &r);
	ck_assert_int_eq(r.cmd, CMD_TRYLOCK);
	ck_assert_int_eq(r.shared, 1);
	parse_ok("TRYLOCK k TTL 9 PERMITS 3", &r);
	ck_assert_int_eq(r.shared, 0);
	ck_assert_uint_eq(r.permits, 3);
	ck_assert_uint_eq(r.ttl_ms, 9);
	parse_ok("LOCK k PERMITS 1024 WAIT 0", &r);
	ck_assert_uint_eq(r.permits, 1024);
	ck_assert_int_eq(r.has_wait, 1);
	parse_ok("STATUS k permits 1", &r);
	ck_assert_int_eq(r.cmd, CMD_STATUS);
	ck_assert_uint_eq(r.permits, 1);
	parse_ok("LOCK k", &r);
	ck_assert_int_eq(r.shared, 0);
	ck_assert_uint_eq(r.permits, 0);
	/* the limit is the configured one */
	ck_assert_int_eq(proto_parse("LOCK k PERMITS 3", 16, 8, 3, &r, &msg), PE_NONE);
	ck_assert_int_eq(proto_parse("LOCK k PERMITS 4", 16, 8, 3, &r, &msg), PE_ARG);
	ck_assert_str_eq(msg, M_PERMITS);
}
END_TEST

START_TEST(unlock_and_status)
{
	struct request r;
	const char *line = "UNLOCK a.b/c:D";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_UNLOCK);
	ck_assert_key(&r, line, 7, "a.b/c:D");

	line = "status MixedCase";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_STATUS);
	ck_assert_key(&r, line, 7, "MixedCase");
}
END_TEST

START_TEST(extend_ms)
{
	struct request r;
	const char *line = "EXTEND k 1500";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_EXTEND);
	ck_assert_key(&r, line, 7, "k");
	ck_assert_uint_eq(r.ttl_ms, 1500);
	ck_assert_int_eq(r.has_wait, 0);
	parse_ok("extend k 2147483647", &r);
	ck_assert_uint_eq(r.ttl_ms, 2147483647u);
	parse_ok("Extend k 1", &r);
	ck_assert_uint_eq(r.ttl_ms, 1);
}
END_TEST

START_TEST(no_argument_commands)
{
	struct request r;
	parse_ok("HELD", &r);
	ck_assert_int_eq(r.cmd, CMD_HELD);
	ck_assert_ptr_null(r.key);
	parse_ok("stats", &r);
	ck_assert_int_eq(r.cmd, CMD_STATS);
	parse_ok("Quit", &r);
	ck_assert_int_eq(r.cmd, CMD_QUIT);
}
END_TEST

START_TEST(auth_word)
{
	struct request r;
	const char *line = "auth s3cr3T!x";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_AUTH);
	ck_assert_ptr_eq(r.word, line + 5);
	ck_assert_uint_eq(r.wlen, 8);
	ck_assert_mem_eq(r.word, "s3cr3T!x", 8);
	ck_assert_ptr_null(r.key);
}
END_TEST

/* Every command name in upper, lower and mixed case. */
START_TEST(command_names_case_insensitive)
{
	static const struct {
		const char *line;
		enum cmd cmd;
	} cases[] = {
	    {"PING", CMD_PING},         {"ping", CMD_PING},         {"pInG", CMD_PING},
	    {"LOCK k", CMD_LOCK},       {"lock k", CMD_LOCK},       {"LoCk k", CMD_LOCK},
	    {"TRYLOCK k", CMD_TRYLOCK}, {"trylock k", CMD_TRYLOCK}, {"tRyLoCk k", CMD_TRYLOCK},
	    {"UNLOCK k", CMD_UNLOCK},   {"unlock k", CMD_UNLOCK},   {"UnLock k", CMD_UNLOCK},
	    {"EXTEND k 1", CMD_EXTEND}, {"extend k 1", CMD_EXTEND}, {"eXtEnD k 1", CMD_EXTEND},
	    {"STATUS k", CMD_STATUS},   {"status k", CMD_STATUS},   {"Status k", CMD_STATUS},
	    {"HELD", CMD_HELD},         {"held", CMD_HELD},         {"HeLd", CMD_HELD},
	    {"STATS", CMD_STATS},       {"stats", CMD_STATS},       {"StAtS", CMD_STATS},
	    {"AUTH p", CMD_AUTH},       {"auth p", CMD_AUTH},       {"AuTh p", CMD_AUTH},
	    {"QUIT", CMD_QUIT},         {"quit", CMD_QUIT},         {"qUiT", CMD_QUIT},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct request r;
		parse_ok(cases[i].line, &r);
		ck_assert_msg(r.cmd == cases[i].cmd, "\"%s\": cmd %d, expected %d", cases[i].line,
		              (int)r.cmd, (int)cases[i].cmd);
	}
}
END_TEST

START_TEST(keys_are_case_sensitive)
{
	struct request r1, r2;
	const char *l1 = "LOCK Key", *l2 = "LOCK KEY";
	parse_ok(l1, &r1);
	parse_ok(l2, &r2);
	ck_assert_mem_eq(r1.key, "Key", 3);
	ck_assert_mem_eq(r2.key, "KEY", 3);
	/* An option name used as a key stays a key, as typed. */
	parse_ok("LOCK wait WAIT 1", &r1);
	ck_assert_uint_eq(r1.klen, 4);
	ck_assert_mem_eq(r1.key, "wait", 4);
	ck_assert_uint_eq(r1.wait_ms, 1);
	ck_assert_int_eq(r1.has_ttl, 0);
}
END_TEST

/* --- framing: blanks and \r --- */

START_TEST(blanks_and_tabs)
{
	struct request r;
	const char *line = " \t LOCK\t\tk-1   WAIT \t 5 \t TTL\t9\t ";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_LOCK);
	ck_assert_key(&r, line, 9, "k-1");
	ck_assert_int_eq(r.has_wait, 1);
	ck_assert_uint_eq(r.wait_ms, 5);
	ck_assert_int_eq(r.has_ttl, 1);
	ck_assert_uint_eq(r.ttl_ms, 9);

	line = "\tPING\tword\t";
	parse_ok(line, &r);
	ck_assert_ptr_eq(r.word, line + 6);
	ck_assert_uint_eq(r.wlen, 4);
}
END_TEST

START_TEST(cr_before_end_dropped)
{
	struct request r;
	const char *msg;

	parse_ok("PING\r", &r);
	ck_assert_int_eq(r.cmd, CMD_PING);
	ck_assert_ptr_null(r.word);

	parse_ok("PING x\r", &r);
	ck_assert_uint_eq(r.wlen, 1);
	ck_assert_mem_eq(r.word, "x", 1);

	/* The number before the \r is still a number. */
	parse_ok("LOCK k WAIT 5\r", &r);
	ck_assert_uint_eq(r.wait_ms, 5);
	parse_ok("EXTEND k 77\r", &r);
	ck_assert_uint_eq(r.ttl_ms, 77);

	/* The key before the \r does not include it. */
	parse_ok("UNLOCK k\r", &r);
	ck_assert_uint_eq(r.klen, 1);

	parse_ok("  STATS \t\r", &r);
	ck_assert_int_eq(r.cmd, CMD_STATS);

	/* "LOCK \r" is "LOCK " once the \r is dropped: a missing key. */
	ck_assert_int_eq(parse("LOCK \r", &r, &msg), PE_PROTOCOL);
	ck_assert_str_eq(msg, "missing key");
}
END_TEST

START_TEST(cr_inside_is_not_a_blank)
{
	struct request r;
	const char *msg;
	/* Only a \r right before the end is dropped; elsewhere it is a key byte. */
	ck_assert_int_eq(parse("LOCK k\r WAIT 5", &r, &msg), PE_KEY);
	ck_assert_int_eq(parse("UNLOCK k\r\r", &r, &msg), PE_KEY);
}
END_TEST

/* A line given with an explicit length: nothing past it is read. */
START_TEST(explicit_length)
{
	struct request r;
	const char *msg;
	char *buf;

	ck_assert_int_eq(parse_n("PING abcdef", 4, &r, &msg), PE_NONE);
	ck_assert_ptr_null(r.word);

	ck_assert_int_eq(parse_n("LOCK k WAIT 123456", 15, &r, &msg), PE_NONE);
	ck_assert_uint_eq(r.wait_ms, 123);

	/* Not NUL-terminated, in an exactly sized heap block (valgrind sees overreads). */
	buf = malloc(6);
	ck_assert_ptr_nonnull(buf);
	memcpy(buf, "PING x", 6);
	ck_assert_int_eq(parse_n(buf, 6, &r, &msg), PE_NONE);
	ck_assert_ptr_eq(r.word, buf + 5);
	ck_assert_uint_eq(r.wlen, 1);
	free(buf);

	buf = malloc(10);
	ck_assert_ptr_nonnull(buf);
	memcpy(buf, "EXTEND k 9", 10);
	ck_assert_int_eq(parse_n(buf, 10, &r, &msg), PE_NONE);
	ck_assert_uint_eq(r.ttl_ms, 9);
	free(buf);
}
END_TEST

/* The request describes this line only: nothing is left from the last one. */
START_TEST(request_is_reset)
{
	struct request r;
	const char *msg;

	parse_ok("LOCK k WAIT 5 TTL 6", &r);
	parse_ok("UNLOCK k", &r);
	ck_assert_int_eq(r.has_wait, 0);
	ck_assert_int_eq(r.has_ttl, 0);
	ck_assert_uint_eq(r.wait_ms, 0);
	ck_assert_uint_eq(r.ttl_ms, 0);

	parse_ok("PING w", &r);
	parse_ok("LOCK k", &r);
	ck_assert_ptr_null(r.word);
	ck_assert_uint_eq(r.wlen, 0);

	parse_ok("LOCK k TTL 6", &r);
	ck_assert_int_eq(parse("PING", &r, &msg), PE_NONE);
	ck_assert_ptr_null(r.key);
	ck_assert_int_eq(r.has_ttl, 0);
}
END_TEST

/* --- keys --- */

/* Every byte value in the middle of a key. */
START_TEST(key_bytes)
{
	for (int c = 0; c < 256; c++) {
		char line[16];
		struct request r;
		const char *msg;
		enum proto_err want, got;

		memcpy(line, "UNLOCK a", 8);
		line[8] = (char)c;
		line[9] = 'b';
		if (c == ' ' || c == '\t')
			want = PE_PROTOCOL; /* a separator: "UNLOCK a b" has an extra argument */
		else if (c >= 0x21 && c <= 0x7e)
			want = PE_NONE;
		else
			want = PE_KEY;
		got = parse_n(line, 10, &r, &msg);
		ck_assert_msg(got == want, "byte 0x%02x in a key: got %s, expected %s", c,
		              proto_err_name(got), proto_err_name(want));
		if (want == PE_NONE) {
			ck_assert_uint_eq(r.klen, 3);
			ck_assert_ptr_eq(r.key, line + 7);
		}
		if (want == PE_KEY)
			ck_assert_str_eq(msg, "key must be printable ASCII (0x21-0x7E)");
	}
}
END_TEST

START_TEST(key_bad_bytes_other_commands)
{
	static const char *const lines[] = {
	    "LOCK \x01",   "LOCK k\x7f WAIT 1", "TRYLOCK \x80x",
	    "STATUS \xff", "EXTEND \x1b 5",     "UNLOCK \x7f",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct request r;
		const char *msg;
		ck_assert_msg(parse(lines[i], &r, &msg) == PE_KEY, "line %zu", i);
	}
}
END_TEST

START_TEST(key_with_nul)
{
	static const char line[] = "LOCK a\0b WAIT 1";
	struct request r;
	const char *msg;
	ck_assert_int_eq(parse_n(line, sizeof(line) - 1, &r, &msg), PE_KEY);
	ck_assert_int_eq(parse_n("UNLOCK \0", 8, &r, &msg), PE_KEY);
}
END_TEST

/* A word is echoed (PING) or compared (AUTH) whole: a NUL would cut it
 * short ("PING ab<NUL>cd" answered "PONG ab"), so it is a protocol error.
 * The line length is what counts, never a NUL. */
START_TEST(word_with_nul)
{
	static const char ping[] = "PING ab\0cd";
	static const char ping_end[] = "PING ab\0";
	static const char auth[] = "AUTH pw\0rest";
	static const char lone[] = "PING \0";
	struct request r;
	const char *msg;
	ck_assert_int_eq(parse_n(ping, sizeof(ping) - 1, &r, &msg), PE_PROTOCOL);
	ck_assert_str_eq(msg, "NUL byte in argument");
	ck_assert_int_eq(parse_n(ping_end, sizeof(ping_end) - 1, &r, &msg), PE_PROTOCOL);
	ck_assert_int_eq(parse_n(auth, sizeof(auth) - 1, &r, &msg), PE_PROTOCOL);
	ck_assert_str_eq(msg, "NUL byte in argument");
	ck_assert_int_eq(parse_n(lone, sizeof(lone) - 1, &r, &msg), PE_PROTOCOL);
	/* syntax first: an extra argument is named as such */
	ck_assert_int_eq(parse_n("PING a\0 b", 10, &r, &msg), PE_PROTOCOL);
	ck_assert_str_eq(msg, "extra argument");
	/* a NUL past the given length is not part of the line */
	ck_assert_int_eq(parse_n(ping, 7, &r, &msg), PE_NONE);
	ck_assert_uint_eq(r.wlen, 2);
	/* in the command name or an option: unknown, as before */
	ck_assert_int_eq(parse_n("PING\0", 5, &r, &msg), PE_PROTOCOL);
	ck_assert_str_eq(msg, "unknown command");
	ck_assert_int_eq(parse_n("LOCK k WA\0T 1", 13, &r, &msg), PE_PROTOCOL);
	ck_assert_str_eq(msg, "unknown option");
}
END_TEST

START_TEST(key_length_limit)
{
	char line[MAXKEY + 32];
	struct request r;
	const char *msg;

	memcpy(line, "LOCK ", 5);
	memset(line + 5, 'k', MAXKEY);
	line[5 + MAXKEY] = '\0';
	parse_ok(line, &r);
	ck_assert_uint_eq(r.klen, MAXKEY);
	ck_assert_ptr_eq(r.key, line + 5);

	line[5 + MAXKEY] = 'k';
	line[6 + MAXKEY] = '\0';
	ck_assert_int_eq(parse(line, &r, &msg), PE_KEY);
	ck_assert_str_eq(msg, "key is too long");

	/* A too long key and a bad number: the key is leftmost. */
	strcpy(line + 6 + MAXKEY, " WAIT x");
	ck_assert_int_eq(parse(line, &r, &msg), PE_KEY);
	/* A too long key and an unknown option: syntax first. */
	strcpy(line + 6 + MAXKEY, " FOO 1");
	ck_assert_int_eq(parse(line, &r, &msg), PE_PROTOCOL);
}
END_TEST

START_TEST(key_length_limit_configured)
{
	struct request r;
	const char *msg = NULL;
	ck_assert_int_eq(proto_parse("UNLOCK abc", 10, 3, 1024, &r, &msg), PE_NONE);
	ck_assert_uint_eq(r.klen, 3);
	ck_assert_int_eq(proto_parse("UNLOCK abcd", 11, 3, 1024, &r, &msg), PE_KEY);
	ck_assert_int_eq(proto_parse("UNLOCK a", 8, 1, 1024, &r, &msg), PE_NONE);
	ck_assert_int_eq(proto_parse("UNLOCK ab", 9, 1, 1024, &r, &msg), PE_KEY);
	/* max_key_len limits keys, not PING words or AUTH passwords. */
	ck_assert_int_eq(proto_parse("PING abcd", 9, 1, 1024, &r, &msg), PE_NONE);
	ck_assert_int_eq(proto_parse("AUTH abcd", 9, 1, 1024, &r, &msg), PE_NONE);
}
END_TEST

/* --- numbers --- */

START_TEST(numbers_in_range)
{
	struct request r;
	parse_ok("LOCK k WAIT 2147483647 TTL 2147483647", &r);
	ck_assert_uint_eq(r.wait_ms, 2147483647u);
	ck_assert_uint_eq(r.ttl_ms, 2147483647u);
	parse_ok("LOCK k WAIT 0 TTL 1", &r);
	ck_assert_uint_eq(r.wait_ms, 0);
	ck_assert_uint_eq(r.ttl_ms, 1);
	parse_ok("TRYLOCK k TTL 2147483647", &r);
	ck_assert_uint_eq(r.ttl_ms, 2147483647u);
	/* Decimal digits only: leading zeros are digits. */
	parse_ok("LOCK k WAIT 007", &r);
	ck_assert_uint_eq(r.wait_ms, 7);
	parse_ok("LOCK k WAIT 00", &r);
	ck_assert_uint_eq(r.wait_ms, 0);
	ck_assert_int_eq(r.has_wait, 1);
}
END_TEST

/* --- errors: (line, class, message or NULL not to check) --- */

#define M_WAIT "WAIT must be 0 to 2147483647 ms"
#define M_TTL  "TTL must be 1 to 2147483647 ms"
#define M_MS   "ms must be 1 to 2147483647"
#define M_KEYB "key must be printable ASCII (0x21-0x7E)"

static const struct {
	const char *line;
	enum proto_err err;
	const char *msg;
} errs[] = {
    /* empty */
    {"", PE_PROTOCOL, "empty line"},
    {" ", PE_PROTOCOL, "empty line"},
    {" \t  \t", PE_PROTOCOL, "empty line"},
    {"\r", PE_PROTOCOL, "empty line"},
    {"  \t\r", PE_PROTOCOL, "empty line"},
    /* unknown command */
    {"FOO", PE_PROTOCOL, "unknown command"},
    {"LOCKS k", PE_PROTOCOL, "unknown command"},
    {"LOC k", PE_PROTOCOL, "unknown command"},
    {"PINGX", PE_PROTOCOL, "unknown command"},
    {"GET / HTTP/1.1", PE_PROTOCOL, "unknown command"},
    {"FOO \x01 WAIT x", PE_PROTOCOL, "unknown command"},
    /* missing key / argument */
    {"LOCK", PE_PROTOCOL, "missing key"},
    {"TRYLOCK", PE_PROTOCOL, "missing key"},
    {"UNLOCK", PE_PROTOCOL, "missing key"},
    {"STATUS \t", PE_PROTOCOL, "missing key"},
    {"EXTEND", PE_PROTOCOL, "missing key"},
    {"EXTEND k", PE_PROTOCOL, "missing milliseconds"},
    {"AUTH", PE_PROTOCOL, "missing argument"},
    {"AUTH ", PE_PROTOCOL, "missing argument"},
    /* unknown option */
    {"TRYLOCK k WAIT 5", PE_PROTOCOL, "unknown option"},
    {"TRYLOCK k TTL 5 WAIT 5", PE_PROTOCOL, "unknown option"},
    {"LOCK k FOO 5", PE_PROTOCOL, "unknown option"},
    {"LOCK k 5", PE_PROTOCOL, "unknown option"},
    {"LOCK k WAITS 5", PE_PROTOCOL, "unknown option"},
    {"LOCK k WAIT 1 TTL 2 x", PE_PROTOCOL, NULL},
    /* option twice */
    {"LOCK k WAIT 1 WAIT 2", PE_PROTOCOL, "option given twice"},
    {"LOCK k wait 1 WAIT 1", PE_PROTOCOL, "option given twice"},
    {"LOCK k TTL 1 WAIT 2 ttl 3", PE_PROTOCOL, "option given twice"},
    {"TRYLOCK k TTL 1 TTL 2", PE_PROTOCOL, "option given twice"},
    {"LOCK k WAIT 1 TTL 2 WAIT 3 TTL 4", PE_PROTOCOL, NULL},
    /* missing option value */
    {"LOCK k WAIT", PE_PROTOCOL, "missing option value"},
    {"LOCK k TTL", PE_PROTOCOL, "missing option value"},
    {"LOCK k WAIT 1 TTL", PE_PROTOCOL, "missing option value"},
    {"LOCK k WAIT \t\r", PE_PROTOCOL, "missing option value"},
    {"TRYLOCK k TTL", PE_PROTOCOL, "missing option value"},
    /* extra argument */
    {"UNLOCK a b", PE_PROTOCOL, "extra argument"},
    {"STATUS a b", PE_PROTOCOL, "extra argument"},
    {"EXTEND k 5 6", PE_PROTOCOL, "extra argument"},
    {"HELD x", PE_PROTOCOL, "extra argument"},
    {"STATS x", PE_PROTOCOL, "extra argument"},
    {"QUIT now", PE_PROTOCOL, "extra argument"},
    {"PING a b", PE_PROTOCOL, "extra argument"},
    {"AUTH a b", PE_PROTOCOL, "extra argument"},
    {"PING a b c d e f g h i j k l", PE_PROTOCOL, NULL},
    {"UNLOCK a b c d e f g h i j k l", PE_PROTOCOL, NULL},
    /* bad keys */
    {"UNLOCK \x01", PE_KEY, M_KEYB},
    {"UNLOCK \x7f", PE_KEY, M_KEYB},
    {"UNLOCK \x80", PE_KEY, M_KEYB},
    {"UNLOCK k\xc3\xa9", PE_KEY, M_KEYB},
    /* numbers */
    {"LOCK k WAIT -1", PE_ARG, M_WAIT},
    {"LOCK k WAIT +1", PE_ARG, M_WAIT},
    {"LOCK k WAIT 1.5", PE_ARG, M_WAIT},
    {"LOCK k WAIT 1e3", PE_ARG, M_WAIT},
    {"LOCK k WAIT 0x10", PE_ARG, M_WAIT},
    {"LOCK k WAIT abc", PE_ARG, M_WAIT},
    {"LOCK k WAIT 5ms", PE_ARG, M_WAIT},
    {"LOCK k WAIT 2147483648", PE_ARG, M_WAIT},
    {"LOCK k WAIT 4294967296", PE_ARG, M_WAIT},
    {"LOCK k WAIT 18446744073709551616", PE_ARG, M_WAIT},
    {"LOCK k WAIT 1234567890123456789012345", PE_ARG, M_WAIT},
    {"LOCK k TTL 0", PE_ARG, M_TTL},
    {"LOCK k TTL 000", PE_ARG, M_TTL},
    {"LOCK k TTL -5", PE_ARG, M_TTL},
    {"LOCK k TTL +5", PE_ARG, M_TTL},
    {"LOCK k TTL 2147483648", PE_ARG, M_TTL},
    {"LOCK k TTL 99999999999", PE_ARG, M_TTL},
    {"TRYLOCK k TTL 0", PE_ARG, M_TTL},
    {"TRYLOCK k TTL 1.0", PE_ARG, M_TTL},
    {"EXTEND k 0", PE_ARG, M_MS},
    {"EXTEND k -1", PE_ARG, M_MS},
    {"EXTEND k +1", PE_ARG, M_MS},
    {"EXTEND k 1.5", PE_ARG, M_MS},
    {"EXTEND k 2147483648", PE_ARG, M_MS},
    {"EXTEND k 1234567890123456789012345", PE_ARG, M_MS},
    {"EXTEND k x", PE_ARG, M_MS},
    /* several faults: PROTOCOL if any, else the leftmost */
    {"LOCK \x01 FOO 1", PE_PROTOCOL, "unknown option"},
    {"LOCK \x01 WAIT x", PE_KEY, M_KEYB},
    {"LOCK \x01 WAIT", PE_PROTOCOL, "missing option value"},
    {"LOCK \x01 WAIT 1 WAIT 2", PE_PROTOCOL, "option given twice"},
    {"LOCK \x01 WAIT x TTL 0", PE_KEY, M_KEYB},
    {"UNLOCK \x01 b", PE_PROTOCOL, "extra argument"},
    {"TRYLOCK \x01 WAIT 1", PE_PROTOCOL, "unknown option"},
    {"TRYLOCK \x01 TTL 0", PE_KEY, M_KEYB},
    {"EXTEND \x01 x", PE_KEY, M_KEYB},
    {"EXTEND \x01", PE_PROTOCOL, "missing milliseconds"},
    {"EXTEND \x01 1 2", PE_PROTOCOL, "extra argument"},
    {"EXTEND k x y", PE_PROTOCOL, "extra argument"},
    {"LOCK k TTL x WAIT y", PE_ARG, M_TTL},
    {"LOCK k WAIT y TTL x", PE_ARG, M_WAIT},
    {"LOCK k TTL 0 WAIT -1", PE_ARG, M_TTL},
    {"LOCK k WAIT -1 TTL 0", PE_ARG, M_WAIT},
    {"LOCK k WAIT 5 TTL 0", PE_ARG, M_TTL},
    {"LOCK k TTL 5 WAIT 2147483648", PE_ARG, M_WAIT},
    {"LOCK k TTL 0 BAD 1", PE_PROTOCOL, "unknown option"},
    {"LOCK k TTL x WAIT", PE_PROTOCOL, "missing option value"},
    {"LOCK k WAIT x TTL 1 TTL 2", PE_PROTOCOL, "option given twice"},
    {"TRYLOCK k TTL x WAIT 1", PE_PROTOCOL, "unknown option"},
    /* SHARED and PERMITS (protocol 1.1) */
    {"LOCK k SHARED PERMITS 2", PE_PROTOCOL, M_BOTH},
    {"TRYLOCK k PERMITS 2 shared", PE_PROTOCOL, M_BOTH},
    {"LOCK k PERMITS x SHARED", PE_PROTOCOL, M_BOTH},
    {"LOCK \x01 SHARED PERMITS 1", PE_PROTOCOL, M_BOTH},
    {"LOCK k SHARED SHARED", PE_PROTOCOL, "option given twice"},
    {"LOCK k PERMITS 2 PERMITS 3", PE_PROTOCOL, "option given twice"},
    {"LOCK k PERMITS", PE_PROTOCOL, "missing option value"},
    {"LOCK k SHARED 5", PE_PROTOCOL, "unknown option"},
    {"TRYLOCK k SHARED WAIT 1", PE_PROTOCOL, "unknown option"},
    {"LOCK k PERMITS 0", PE_ARG, M_PERMITS},
    {"LOCK k PERMITS 1025", PE_ARG, M_PERMITS},
    {"LOCK k PERMITS -1", PE_ARG, M_PERMITS},
    {"TRYLOCK k PERMITS 1.5", PE_ARG, M_PERMITS},
    {"LOCK k PERMITS x WAIT y", PE_ARG, M_PERMITS},
    {"LOCK k WAIT y PERMITS x", PE_ARG, M_WAIT},
    {"LOCK k TTL 1 PERMITS 0 WAIT x", PE_ARG, M_PERMITS},
    {"LOCK \x01 PERMITS 0", PE_KEY, M_KEYB},
    {"STATUS k SHARED", PE_PROTOCOL, "extra argument"},
    {"STATUS k PERMITS", PE_PROTOCOL, "missing option value"},
    {"STATUS k PERMITS 2 x", PE_PROTOCOL, "extra argument"},
    {"STATUS k PERMITS 0", PE_ARG, M_PERMITS},
    {"UNLOCK k SHARED", PE_PROTOCOL, "extra argument"},
    {"EXTEND k PERMITS 2", PE_PROTOCOL, "extra argument"},
    /* WHO key (1.4): a key and nothing else */
    {"WHO", PE_PROTOCOL, "missing key"},
    {"who \t ", PE_PROTOCOL, "missing key"},
    {"WHO\r", PE_PROTOCOL, "missing key"},
    {"WHO k x", PE_PROTOCOL, "extra argument"},
    {"WHO k PERMITS 2", PE_PROTOCOL, "extra argument"},
    {"WHO k SHARED", PE_PROTOCOL, "extra argument"},
    {"WHO \x01 x", PE_PROTOCOL, "extra argument"},
    {"WHO a b c d e f g h i j k l", PE_PROTOCOL, NULL},
    {"WHO \x01", PE_KEY, M_KEYB},
    {"WHO k\x7f", PE_KEY, M_KEYB},
    {"WHO k\xc3\xa9", PE_KEY, M_KEYB},
    {"WHOM k", PE_PROTOCOL, "unknown command"},
    {"WH k", PE_PROTOCOL, "unknown command"},
};

START_TEST(parse_errors)
{
	struct request r;
	const char *msg;
	enum proto_err got = parse(errs[_i].line, &r, &msg);

	ck_assert_msg(got == errs[_i].err, "\"%s\": got ERR %s %s, expected ERR %s", errs[_i].line,
	              proto_err_name(got), msg ? msg : "", proto_err_name(errs[_i].err));
	ck_assert_ptr_nonnull(msg);
	if (errs[_i].msg)
		ck_assert_msg(strcmp(msg, errs[_i].msg) == 0,
		              "\"%s\": message \"%s\", expected \"%s\"", errs[_i].line, msg,
		              errs[_i].msg);
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(proto_cmd_name(CMD_PING), "PING");
	ck_assert_str_eq(proto_cmd_name(CMD_LOCK), "LOCK");
	ck_assert_str_eq(proto_cmd_name(CMD_TRYLOCK), "TRYLOCK");
	ck_assert_str_eq(proto_cmd_name(CMD_UNLOCK), "UNLOCK");
	ck_assert_str_eq(proto_cmd_name(CMD_EXTEND), "EXTEND");
	ck_assert_str_eq(proto_cmd_name(CMD_STATUS), "STATUS");
	ck_assert_str_eq(proto_cmd_name(CMD_HELD), "HELD");
	ck_assert_str_eq(proto_cmd_name(CMD_STATS), "STATS");
	ck_assert_str_eq(proto_cmd_name(CMD_AUTH), "AUTH");
	ck_assert_str_eq(proto_cmd_name(CMD_QUIT), "QUIT");
	ck_assert_str_eq(proto_cmd_name(CMD_COUNT), "?");
	ck_assert_str_eq(proto_err_name(PE_NONE), "");
	ck_assert_str_eq(proto_err_name(PE_PROTOCOL), "PROTOCOL");
	ck_assert_str_eq(proto_err_name(PE_ARG), "ARG");
	ck_assert_str_eq(proto_err_name(PE_KEY), "KEY");
}
END_TEST

/* Leader election (1.3): CAMPAIGN name value [WAIT ms], PROCLAIM name
 * value, RESIGN, LEADER, OBSERVE, UNOBSERVE name. */
START_TEST(election_commands)
{
	struct request r;
	const char *msg;
	const char *line = "campaign jobs node-1:7000 wait 250";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_CAMPAIGN);
	ck_assert_key(&r, line, 9, "jobs");
	ck_assert_ptr_eq(r.word, line + 14);
	ck_assert_uint_eq(r.wlen, strlen("node-1:7000"));
	ck_assert_int_eq(r.has_wait, 1);
	ck_assert_uint_eq(r.wait_ms, 250);
	parse_ok("CAMPAIGN jobs v", &r);
	ck_assert_int_eq(r.has_wait, 0);
	parse_ok("PROCLAIM jobs v2", &r);
	ck_assert_int_eq(r.cmd, CMD_PROCLAIM);
	ck_assert_uint_eq(r.wlen, 2);
	const char *one[] = {"RESIGN", "LEADER", "OBSERVE", "UNOBSERVE"};
	const enum cmd cmd[] = {CMD_RESIGN, CMD_LEADER, CMD_OBSERVE, CMD_UNOBSERVE};
	for (int i = 0; i < 4; i++) {
		char buf[64];
		snprintf(buf, sizeof(buf), "%s jobs", one[i]);
		parse_ok(buf, &r);
		ck_assert_int_eq(r.cmd, cmd[i]);
		ck_assert_uint_eq(r.klen, 4);
		snprintf(buf, sizeof(buf), "%s jobs x", one[i]);
		ck_assert_int_eq(parse(buf, &r, &msg), PE_PROTOCOL);
		snprintf(buf, sizeof(buf), "%s", one[i]);
		ck_assert_int_eq(parse(buf, &r, &msg), PE_PROTOCOL);
	}
	/* syntax first, then key, value and WAIT from the left */
	ck_assert_int_eq(parse("CAMPAIGN jobs", &r, &msg), PE_PROTOCOL);
	ck_assert_str_eq(msg, "missing value");
	ck_assert_int_eq(parse("CAMPAIGN jobs v TTL 5", &r, &msg), PE_PROTOCOL);
	ck_assert_int_eq(parse("CAMPAIGN jobs v WAIT", &r, &msg), PE_PROTOCOL);
	ck_assert_int_eq(parse("PROCLAIM jobs v WAIT 5", &r, &msg), PE_PROTOCOL);
	ck_assert_int_eq(parse("CAMPAIGN jo\x01 v\x02 WAIT x", &r, &msg), PE_KEY);
	ck_assert_int_eq(parse("CAMPAIGN jobs v\x02 WAIT x", &r, &msg), PE_ARG);
	ck_assert_str_eq(msg, "value must be printable ASCII (0x21-0x7E)");
	ck_assert_int_eq(parse("CAMPAIGN jobs v\x7f", &r, &msg), PE_ARG);
	ck_assert_int_eq(parse("PROCLAIM jobs \xc3\xa9", &r, &msg), PE_ARG);
	ck_assert_int_eq(parse("CAMPAIGN jobs v WAIT x", &r, &msg), PE_ARG);
	ck_assert_str_eq(msg, "WAIT must be 0 to 2147483647 ms");
}
END_TEST

/* WHO key (1.4): the key as it was sent, case kept; the command in any
 * case, blanks and a CR as anywhere. */
START_TEST(who_command)
{
	struct request r;
	const char *msg;
	const char *line = "WHO nightly-Report";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_WHO);
	ck_assert_key(&r, line, 4, "nightly-Report");
	ck_assert_ptr_null(r.word);
	ck_assert_uint_eq(r.permits, 0);
	line = " \twho\t {jobs}:a \r";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_WHO);
	ck_assert_key(&r, line, 7, "{jobs}:a");
	parse_ok("Who k", &r);
	ck_assert_int_eq(r.cmd, CMD_WHO);
	ck_assert_str_eq(proto_cmd_name(CMD_WHO), "WHO");
	/* the longest key allowed, and one byte more */
	char buf[MAXKEY + 8];
	memcpy(buf, "WHO ", 4);
	memset(buf + 4, 'k', MAXKEY + 1);
	ck_assert_int_eq(parse_n(buf, 4 + MAXKEY, &r, &msg), PE_NONE);
	ck_assert_uint_eq(r.klen, MAXKEY);
	ck_assert_int_eq(parse_n(buf, 4 + MAXKEY + 1, &r, &msg), PE_KEY);
	ck_assert_str_eq(msg, "key is too long");
	/* a NUL is a bad key byte, not the end of the line */
	ck_assert_int_eq(parse_n("WHO k\0x", 7, &r, &msg), PE_KEY);
	ck_assert_str_eq(msg, M_KEYB);
}
END_TEST

/* --- LOCKALL (1.4) --- */

#define M_NKEYS "n must be 1 to limits.max_keys"

static enum proto_err parse_keys(const char *line, uint32_t max_keys, struct request *r,
                                 const char **msg)
{
	struct proto_limits lim = {MAXKEY, 1024, max_keys};
	*msg = NULL;
	return proto_parse_ex(line, strlen(line), &lim, r, msg);
}

/* line gets ERR err msg (PE_NONE: is accepted). */
static void parse_err(const char *line, enum proto_err err, const char *want)
{
	struct request r;
	const char *msg;
	enum proto_err got = parse(line, &r, &msg);
	ck_assert_msg(got == err, "\"%s\": got ERR %s %s, expected ERR %s", line,
	              proto_err_name(got), msg ? msg : "", proto_err_name(err));
	if (want)
		ck_assert_msg(msg && strcmp(msg, want) == 0,
		              "\"%s\": message \"%s\", expected \"%s\"", line, msg ? msg : "",
		              want);
}

/* The keys of r, joined by '|'. */
static void keys_of(const struct request *r, char *out, size_t len)
{
	size_t pos = 0, o = 0, kl;
	const char *k;
	out[0] = '\0';
	while (proto_next_key(r, &pos, &k, &kl))
		o += (size_t)snprintf(out + o, len - o, "%s%.*s", o ? "|" : "", (int)kl, k);
}

START_TEST(lockall_ok)
{
	struct request r;
	char keys[200];
	const char *line = "LOCKALL 3 c a b";
	parse_ok(line, &r);
	ck_assert_int_eq(r.cmd, CMD_LOCKALL);
	ck_assert_uint_eq(r.nkeys, 3);
	ck_assert_ptr_null(r.key);
	ck_assert_ptr_eq(r.keys, line + 10);
	keys_of(&r, keys, sizeof(keys));
	ck_assert_str_eq(keys, "c|a|b");
	ck_assert_int_eq(r.has_wait + r.has_ttl + r.has_delay, 0);
	/* options in any order, any case; the n words after n are keys */
	parse_ok(" lockall\t2  WAIT  ttl DELAY 7 wait 0 TTL 9\r", &r);
	keys_of(&r, keys, sizeof(keys));
	ck_assert_str_eq(keys, "WAIT|ttl");
	ck_assert_int_eq(r.has_delay, 1);
	ck_assert_uint_eq(r.delay_ms, 7);
	ck_assert_int_eq(r.has_wait, 1);
	ck_assert_uint_eq(r.wait_ms, 0);
	ck_assert_int_eq(r.has_ttl, 1);
	ck_assert_uint_eq(r.ttl_ms, 9);
	parse_ok("LOCKALL 1 k DELAY 0 WAIT 2147483647", &r);
	ck_assert_uint_eq(r.nkeys, 1);
	ck_assert_uint_eq(r.wait_ms, 2147483647u);
	parse_ok("LOCKALL 01 k", &r);
	ck_assert_uint_eq(r.nkeys, 1);
	/* the limit is the configured one; proto_parse takes the default (64) */
	const char *msg;
	ck_assert_int_eq(parse_keys("LOCKALL 2 a b", 2, &r, &msg), PE_NONE);
	ck_assert_int_eq(parse_keys("LOCKALL 3 a b c", 2, &r, &msg), PE_ARG);
	ck_assert_str_eq(msg, M_NKEYS);
	char big[1000];
	int o = snprintf(big, sizeof(big), "LOCKALL 64");
	for (int i = 0; i < 64; i++)
		o += snprintf(big + o, sizeof(big) - (size_t)o, " k%d", i);
	parse_ok(big, &r);
	ck_assert_uint_eq(r.nkeys, 64);
	o = snprintf(big, sizeof(big), "LOCKALL 65");
	for (int i = 0; i < 65; i++)
		o += snprintf(big + o, sizeof(big) - (size_t)o, " k%d", i);
	parse_err(big, PE_ARG, M_NKEYS);
}
END_TEST

START_TEST(lockall_errors)
{
	parse_err("LOCKALL", PE_PROTOCOL, "missing key count");
	parse_err("LOCKALL  \t", PE_PROTOCOL, "missing key count");
	parse_err("LOCKALL x a", PE_ARG, M_NKEYS);
	parse_err("LOCKALL +1 a", PE_ARG, M_NKEYS);
	parse_err("LOCKALL 1x", PE_ARG, M_NKEYS);
	parse_err("LOCKALL 0", PE_ARG, M_NKEYS);
	parse_err("LOCKALL 0 WAIT 1", PE_ARG, M_NKEYS);
	parse_err("LOCKALL 0 a", PE_PROTOCOL, "unknown option");
	parse_err("LOCKALL 2 a", PE_PROTOCOL, "missing key");
	parse_err("LOCKALL 99999999999999999999999 a", PE_PROTOCOL, "missing key");
	parse_err("LOCKALL 65 a", PE_PROTOCOL, "missing key"); /* syntax first */
	parse_err("LOCKALL 1 a b", PE_PROTOCOL, "unknown option");
	parse_err("LOCKALL 1 a SHARED", PE_PROTOCOL, "unknown option");
	parse_err("LOCKALL 1 a PERMITS 2", PE_PROTOCOL, "unknown option");
	parse_err("LOCKALL 1 a WAIT", PE_PROTOCOL, "missing option value");
	parse_err("LOCKALL 1 a WAIT 1 wait 2", PE_PROTOCOL, "option given twice");
	parse_err("LOCKALL 1 a\x01 WAIT 1 WAIT 2", PE_PROTOCOL, "option given twice");
	parse_err("LOCKALL 2 a a", PE_ARG, "key given twice");
	parse_err("LOCKALL 3 a b a", PE_ARG, "key given twice");
	parse_err("LOCKALL 3 ab a b", PE_NONE, NULL);
	parse_err("LOCKALL 3 a b\x7f a", PE_KEY, "key must be printable ASCII (0x21-0x7E)");
	parse_err("LOCKALL 2 a a WAIT x", PE_ARG, "key given twice");
	parse_err("LOCKALL 1 a WAIT -1", PE_ARG, "WAIT must be 0 to 2147483647 ms");
	parse_err("LOCKALL 1 a WAIT 2147483648", PE_ARG, "WAIT must be 0 to 2147483647 ms");
	parse_err("LOCKALL 1 a TTL 0", PE_ARG, "TTL must be 1 to 2147483647 ms");
	parse_err("LOCKALL 1 a DELAY x", PE_ARG, "DELAY must be 0 to 2147483647 ms");
	parse_err("LOCKALL 1 a DELAY x TTL 0", PE_ARG, "DELAY must be 0 to 2147483647 ms");
	parse_err("LOCKALL 1 a TTL 0 DELAY x", PE_ARG, "TTL must be 1 to 2147483647 ms");
	char big[400];
	int o = snprintf(big, sizeof(big), "LOCKALL 2 k ");
	memset(big + o, 'x', MAXKEY + 1);
	big[o + MAXKEY + 1] = '\0';
	parse_err(big, PE_KEY, "key is too long");
}
END_TEST

/* DELAY ms (1.4) on LOCK, TRYLOCK and CAMPAIGN: 0 to 2^31-1, in any order
 * among the options, at most once; nowhere else. */
START_TEST(delay_option)
{
	struct request r;
	const char *msg;
	parse_ok("LOCK k DELAY 5000", &r);
	ck_assert_int_eq(r.has_delay, 1);
	ck_assert_uint_eq(r.delay_ms, 5000);
	parse_ok("LOCK k", &r);
	ck_assert_int_eq(r.has_delay, 0);
	ck_assert_uint_eq(r.delay_ms, 0);
	parse_ok("lock k delay 0", &r);
	ck_assert_int_eq(r.has_delay, 1);
	ck_assert_uint_eq(r.delay_ms, 0);
	parse_ok("TRYLOCK k TTL 9 DELAY 2147483647", &r);
	ck_assert_int_eq(r.cmd, CMD_TRYLOCK);
	ck_assert_uint_eq(r.delay_ms, 2147483647u);
	ck_assert_uint_eq(r.ttl_ms, 9);
	/* the longest request: ten words */
	parse_ok("LOCK k PERMITS 3 WAIT 1 TTL 2 DELAY 4", &r);
	ck_assert_uint_eq(r.permits, 3);
	ck_assert_uint_eq(r.wait_ms, 1);
	ck_assert_uint_eq(r.ttl_ms, 2);
	ck_assert_uint_eq(r.delay_ms, 4);
	parse_ok("CAMPAIGN jobs v DELAY 7 WAIT 3", &r);
	ck_assert_int_eq(r.cmd, CMD_CAMPAIGN);
	ck_assert_uint_eq(r.delay_ms, 7);
	ck_assert_uint_eq(r.wait_ms, 3);
	ck_assert_uint_eq(r.wlen, 1);
	/* syntax first, then values from the left */
	ck_assert_int_eq(parse("LOCK k DELAY", &r, &msg), PE_PROTOCOL);
	ck_assert_str_eq(msg, "missing option value");
	ck_assert_int_eq(parse("LOCK k DELAY 1 DELAY 2", &r, &msg), PE_PROTOCOL);
	ck_assert_str_eq(msg, "option given twice");
	ck_assert_int_eq(parse("LOCK k PERMITS 3 WAIT 1 TTL 2 DELAY 4 X", &r, &msg), PE_PROTOCOL);
	ck_assert_int_eq(parse("STATUS k DELAY 1", &r, &msg), PE_PROTOCOL);
	ck_assert_int_eq(parse("PROCLAIM jobs v DELAY 1", &r, &msg), PE_PROTOCOL);
	ck_assert_int_eq(parse("SESSION DELAY 1", &r, &msg), PE_PROTOCOL);
	ck_assert_int_eq(parse("EXTEND k 5 DELAY 1", &r, &msg), PE_PROTOCOL);
	ck_assert_int_eq(parse("LOCK k DELAY 2147483648", &r, &msg), PE_ARG);
	ck_assert_str_eq(msg, "DELAY must be 0 to 2147483647 ms");
	ck_assert_int_eq(parse("LOCK k DELAY -1", &r, &msg), PE_ARG);
	ck_assert_int_eq(parse("TRYLOCK k DELAY 1x", &r, &msg), PE_ARG);
	ck_assert_int_eq(parse("LOCK k DELAY x WAIT y", &r, &msg), PE_ARG);
	ck_assert_str_eq(msg, "DELAY must be 0 to 2147483647 ms");
	ck_assert_int_eq(parse("LOCK k WAIT y DELAY x", &r, &msg), PE_ARG);
	ck_assert_str_eq(msg, "WAIT must be 0 to 2147483647 ms");
	ck_assert_int_eq(parse("LOCK \x01 DELAY x", &r, &msg), PE_KEY);
	ck_assert_int_eq(parse("CAMPAIGN jobs v DELAY x", &r, &msg), PE_ARG);
}
END_TEST

Suite *proto_suite(void)
{
	Suite *s = suite_create("proto");
	TCase *tc = tcase_create("commands");

	tcase_add_test(tc, ping_without_word);
	tcase_add_test(tc, ping_with_word);
	tcase_add_test(tc, lock_plain);
	tcase_add_test(tc, lock_wait_and_ttl);
	tcase_add_test(tc, lock_options_any_order_any_case);
	tcase_add_test(tc, lock_wait_only);
	tcase_add_test(tc, lock_ttl_only);
	tcase_add_test(tc, trylock_plain_and_ttl);
	tcase_add_test(tc, unlock_and_status);
	tcase_add_test(tc, lockall_ok);
	tcase_add_test(tc, lockall_errors);
	tcase_add_test(tc, extend_ms);
	tcase_add_test(tc, no_argument_commands);
	tcase_add_test(tc, auth_word);
	tcase_add_test(tc, shared_and_permits);
	tcase_add_test(tc, delay_option);
	tcase_add_test(tc, command_names_case_insensitive);
	tcase_add_test(tc, keys_are_case_sensitive);
	tcase_add_test(tc, names);
	tcase_add_test(tc, election_commands);
	tcase_add_test(tc, who_command);
	suite_add_tcase(s, tc);

	tc = tcase_create("framing");
	tcase_add_test(tc, blanks_and_tabs);
	tcase_add_test(tc, cr_before_end_dropped);
	tcase_add_test(tc, cr_inside_is_not_a_blank);
	tcase_add_test(tc, explicit_length);
	tcase_add_test(tc, request_is_reset);
	suite_add_tcase(s, tc);

	tc = tcase_create("keys");
	tcase_add_test(tc, key_bytes);
	tcase_add_test(tc, key_bad_bytes_other_commands);
	tcase_add_test(tc, key_with_nul);
	tcase_add_test(tc, word_with_nul);
	tcase_add_test(tc, key_length_limit);
	tcase_add_test(tc, key_length_limit_configured);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, numbers_in_range);
	tcase_add_loop_test(tc, parse_errors, 0, (int)(sizeof(errs) / sizeof(errs[0])));
	suite_add_tcase(s, tc);
	return s;
}
