/* Unit tests of the YAML configuration loader (src/cfg.c): defaults, every
 * key, and every error with its exact FILE:LINE:COLUMN (1-based). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg.h"
#include "units.h"

#define ERRLEN 512

static int load(struct config *c, const char *text, char *err)
{
	err[0] = '\0';
	return cfg_load_string(c, "t.yml", text, strlen(text), err, ERRLEN);
}

/* c holds exactly what cfg_defaults gives. */
static void assert_defaults(const struct config *c)
{
	struct config d;

	cfg_defaults(&d);
	ck_assert_int_eq(c->nlisten, d.nlisten);
	for (int i = 0; i < d.nlisten; i++)
		ck_assert_str_eq(c->listen[i], d.listen[i]);
	for (int i = d.nlisten; i < CONFIG_MAX_LISTEN; i++)
		ck_assert_ptr_null(c->listen[i]);
	for (int i = 0; i < CONFIG_MAX_LISTEN; i++) {
		ck_assert_ptr_null(c->listen_tls[i].cert);
		ck_assert_ptr_null(c->listen_tls[i].key);
		ck_assert_ptr_null(c->listen_tls[i].ca);
	}
	ck_assert_str_eq(c->unix_socket_mode, d.unix_socket_mode);
	ck_assert_str_eq(c->password, d.password);
	ck_assert_str_eq(c->log_level, d.log_level);
	ck_assert_str_eq(c->log_target, d.log_target);
	ck_assert_int_eq(c->nmasters, d.nmasters);
	for (int i = 0; i < d.nmasters; i++)
		ck_assert_str_eq(c->masters[i], d.masters[i]);
	for (int i = d.nmasters; i < CONFIG_MAX_MASTERS; i++)
		ck_assert_ptr_null(c->masters[i]);
	ck_assert_int_eq(c->timeout_ms, d.timeout_ms);
	ck_assert_str_eq(c->key_prefix, d.key_prefix);
	ck_assert_str_eq(c->redis_password, d.redis_password);
	ck_assert_int_eq(c->restart_exclusion_ms, d.restart_exclusion_ms);
	ck_assert_int_eq(c->reconnect_max_ms, d.reconnect_max_ms);
	ck_assert_int_eq(c->lease_ms, d.lease_ms);
	ck_assert_double_eq(c->drift_factor, d.drift_factor);
	ck_assert_int_eq(c->handoff_limit, d.handoff_limit);
	ck_assert_int_eq(c->max_clients, d.max_clients);
	ck_assert_int_eq(c->max_line, d.max_line);
	ck_assert_int_eq(c->max_key_len, d.max_key_len);
	ck_assert_int_eq(c->max_locks_per_session, d.max_locks_per_session);
	ck_assert_int_eq(c->reqs_per_event, d.reqs_per_event);
	ck_assert_int_eq(c->line_timeout_ms, d.line_timeout_ms);
	ck_assert_int_eq(c->idle_timeout_ms, d.idle_timeout_ms);
	ck_assert_int_eq(c->max_clients_per_ip, d.max_clients_per_ip);
	ck_assert_int_eq(c->max_auth_failures, d.max_auth_failures);
	ck_assert_str_eq(c->metrics_listen, d.metrics_listen);
	cfg_free(&d);
}

START_TEST(defaults)
{
	struct config c;

	cfg_defaults(&c);
	ck_assert_int_eq(c.nlisten, 1);
	ck_assert_str_eq(c.listen[0], "127.0.0.1:7390");
	ck_assert_ptr_null(c.listen[1]);
	ck_assert_str_eq(c.unix_socket_mode, "0660");
	ck_assert_int_eq(cfg_unix_mode(&c), 0660);
	ck_assert_str_eq(c.password, "");
	ck_assert_str_eq(c.log_level, "info");
	ck_assert_str_eq(c.log_target, "stderr");
	ck_assert_int_eq(c.nmasters, 1);
	ck_assert_str_eq(c.masters[0], "127.0.0.1:6379");
	ck_assert_int_eq(c.timeout_ms, 50);
	ck_assert_str_eq(c.key_prefix, "lockd:");
	ck_assert_str_eq(c.redis_password, "");
	ck_assert_int_eq(c.restart_exclusion_ms, -1);
	ck_assert_int_eq(cfg_exclusion_ms(&c), 30000); /* default: locks.lease_ms */
	ck_assert_int_eq(c.reconnect_max_ms, 1000);
	ck_assert_int_eq(c.lease_ms, 30000);
	ck_assert_double_eq(c.drift_factor, 0.01);
	ck_assert_int_eq(c.handoff_limit, 16);
	ck_assert_int_eq(c.max_clients, 10000);
	ck_assert_int_eq(c.max_line, 4096);
	ck_assert_int_eq(c.max_key_len, 256);
	ck_assert_int_eq(c.max_locks_per_session, 10000);
	ck_assert_int_eq(c.reqs_per_event, 20);
	ck_assert_int_eq(c.line_timeout_ms, 60000);
	ck_assert_int_eq(c.idle_timeout_ms, 0);
	ck_assert_int_eq(c.max_clients_per_ip, 0);
	ck_assert_int_eq(c.max_auth_failures, 5);
	ck_assert_ptr_null(c.listen_tls[0].cert);
	ck_assert_str_eq(c.metrics_listen, "");
	cfg_free(&c);
}
END_TEST

static const char full_yaml[] = "# every key, none at its default\n"
                                "listen:\n"
                                "  - \"0.0.0.0:7391\"\n"
                                "  - \"[::1]:7392\"\n"
                                "  - unix:/run/lockd/lockd.sock\n"
                                "unix_socket_mode: \"0600\"\n"
                                "password: s3cret\n"
                                "log_level: debug\n"
                                "log_target: syslog\n"
                                "redis:\n"
                                "  masters:\n"
                                "    - 10.0.0.1:6379\n"
                                "    - \"10.0.0.2:6380\"\n"
                                "    - \"[fe80::1]:6381\"\n"
                                "  timeout_ms: 20\n"
                                "  key_prefix: 'app:'\n"
                                "  password: \"redis pass\"\n"
                                "  restart_exclusion_ms: 45000\n"
                                "  reconnect_max_ms: 2500\n"
                                "locks:\n"
                                "  lease_ms: 10000\n"
                                "  drift_factor: 0.02\n"
                                "  handoff_limit: 8\n"
                                "limits: {max_clients: 500, max_line: 8192, max_key_len: 512,\n"
                                "         max_locks_per_session: 100, reqs_per_event: 5}\n"
                                "metrics:\n"
                                "  listen: 127.0.0.1:9100\n";

static void assert_full(const struct config *c)
{
	ck_assert_int_eq(c->nlisten, 3);
	ck_assert_str_eq(c->listen[0], "0.0.0.0:7391");
	ck_assert_str_eq(c->listen[1], "[::1]:7392");
	ck_assert_str_eq(c->listen[2], "unix:/run/lockd/lockd.sock");
	ck_assert_ptr_null(c->listen[3]);
	ck_assert_str_eq(c->unix_socket_mode, "0600");
	ck_assert_int_eq(cfg_unix_mode(c), 0600);
	ck_assert_str_eq(c->password, "s3cret");
	ck_assert_str_eq(c->log_level, "debug");
	ck_assert_str_eq(c->log_target, "syslog");
	ck_assert_int_eq(c->nmasters, 3);
	ck_assert_str_eq(c->masters[0], "10.0.0.1:6379");
	ck_assert_str_eq(c->masters[1], "10.0.0.2:6380");
	ck_assert_str_eq(c->masters[2], "[fe80::1]:6381");
	ck_assert_ptr_null(c->masters[3]);
	ck_assert_int_eq(c->timeout_ms, 20);
	ck_assert_str_eq(c->key_prefix, "app:");
	ck_assert_str_eq(c->redis_password, "redis pass");
	ck_assert_int_eq(c->restart_exclusion_ms, 45000);
	ck_assert_int_eq(cfg_exclusion_ms(c), 45000);
	ck_assert_int_eq(c->reconnect_max_ms, 2500);
	ck_assert_int_eq(c->lease_ms, 10000);
	ck_assert_double_eq(c->drift_factor, 0.02);
	ck_assert_int_eq(c->handoff_limit, 8);
	ck_assert_int_eq(c->max_clients, 500);
	ck_assert_int_eq(c->max_line, 8192);
	ck_assert_int_eq(c->max_key_len, 512);
	ck_assert_int_eq(c->max_locks_per_session, 100);
	ck_assert_int_eq(c->reqs_per_event, 5);
	ck_assert_str_eq(c->metrics_listen, "127.0.0.1:9100");
}

START_TEST(full_file)
{
	struct config c;
	char err[ERRLEN];

	cfg_defaults(&c);
	ck_assert_msg(load(&c, full_yaml, err) == 0, "%s", err);
	ck_assert_str_eq(err, "");
	assert_full(&c);
	cfg_free(&c);
}
END_TEST

/* A second load starts from what the first left: lists are replaced, not
 * appended to, and keys it does not name keep their values. */
START_TEST(load_over_loaded)
{
	struct config c;
	char err[ERRLEN];

	cfg_defaults(&c);
	ck_assert_msg(load(&c, full_yaml, err) == 0, "%s", err);
	ck_assert_msg(load(&c, "listen: [\"1.1.1.1:1\"]\nlog_level: warn\n", err) == 0, "%s", err);
	ck_assert_int_eq(c.nlisten, 1);
	ck_assert_str_eq(c.listen[0], "1.1.1.1:1");
	ck_assert_ptr_null(c.listen[1]);
	ck_assert_str_eq(c.log_level, "warn");
	ck_assert_int_eq(c.nmasters, 3);
	ck_assert_int_eq(c.lease_ms, 10000);
	cfg_free(&c);
}
END_TEST

START_TEST(empty_inputs_give_defaults)
{
	static const char *const texts[] = {"", "\n\n", "# only a comment\n", "{}\n", "  # x\n\n"};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct config c;
		char err[ERRLEN];
		cfg_defaults(&c);
		ck_assert_msg(load(&c, texts[i], err) == 0, "text %zu: %s", i, err);
		assert_defaults(&c);
		cfg_free(&c);
	}
}
END_TEST

/* Only the given length is read. */
START_TEST(length_respected)
{
	struct config c;
	char err[ERRLEN];
	const char *text = "log_level: debug\nfoo: 1\n";

	cfg_defaults(&c);
	ck_assert_int_eq(cfg_load_string(&c, "t.yml", text, 17, err, sizeof(err)), 0);
	ck_assert_str_eq(c.log_level, "debug");
	cfg_free(&c);
}
END_TEST

/* Values at the edges of their ranges are accepted. */
static const struct {
	const char *yaml;
	size_t off; /* of an int64_t field to check, or (size_t)-1 */
	int64_t value;
} good[] = {
    {"redis: {timeout_ms: 1}", offsetof(struct config, timeout_ms), 1},
    {"redis: {timeout_ms: 60000}\nlocks: {lease_ms: 180001}", offsetof(struct config, timeout_ms),
     60000},
    {"redis: {timeout_ms: 9999}", offsetof(struct config, timeout_ms), 9999},
    {"locks: {lease_ms: 151}", offsetof(struct config, lease_ms), 151},
    {"locks: {lease_ms: 2147483647}", offsetof(struct config, lease_ms), 2147483647},
    {"redis: {timeout_ms: 33}\nlocks: {lease_ms: 100}", offsetof(struct config, lease_ms), 100},
    {"redis: {restart_exclusion_ms: 0}", offsetof(struct config, restart_exclusion_ms), 0},
    {"redis: {reconnect_max_ms: 10}", offsetof(struct config, reconnect_max_ms), 10},
    {"redis: {reconnect_max_ms: 60000}", offsetof(struct config, reconnect_max_ms), 60000},
    {"limits: {max_permits: 1}", offsetof(struct config, max_permits), 1},
    {"limits: {max_permits: 65536}", offsetof(struct config, max_permits), 65536},
    {"locks: {handoff_limit: 1}", offsetof(struct config, handoff_limit), 1},
    {"locks: {handoff_limit: 1000000}", offsetof(struct config, handoff_limit), 1000000},
    {"limits: {max_line: 256}", offsetof(struct config, max_line), 256},
    {"limits: {max_line: 16, max_key_len: 16}", offsetof(struct config, max_key_len), 16},
    {"limits: {max_line: 1048576, max_key_len: 65536}", offsetof(struct config, max_key_len),
     65536},
    {"limits: {max_key_len: 1}", offsetof(struct config, max_key_len), 1},
    {"limits: {max_clients: 1}", offsetof(struct config, max_clients), 1},
    {"limits: {max_locks_per_session: 10000000}", offsetof(struct config, max_locks_per_session),
     10000000},
    {"limits: {reqs_per_event: 10000}", offsetof(struct config, reqs_per_event), 10000},
    {"limits: {line_timeout_ms: 100}", offsetof(struct config, line_timeout_ms), 100},
    {"limits: {line_timeout_ms: 2147483647}", offsetof(struct config, line_timeout_ms), 2147483647},
    {"limits: {idle_timeout_ms: 0}", offsetof(struct config, idle_timeout_ms), 0},
    {"limits: {idle_timeout_ms: 2147483647}", offsetof(struct config, idle_timeout_ms), 2147483647},
    {"limits: {max_clients_per_ip: 1000000}", offsetof(struct config, max_clients_per_ip), 1000000},
    {"limits: {max_auth_failures: 0}", offsetof(struct config, max_auth_failures), 0},
    {"limits: {max_auth_failures: 1000000}", offsetof(struct config, max_auth_failures), 1000000},
    {"redis: {timeout_ms: +7}", offsetof(struct config, timeout_ms), 7},
    {"locks: {drift_factor: 0}", (size_t)-1, 0},
    {"locks: {drift_factor: 0.5}", (size_t)-1, 0},
    {"locks: {drift_factor: 1e-3}", (size_t)-1, 0},
    {"unix_socket_mode: \"0\"", (size_t)-1, 0},
    {"unix_socket_mode: 0777", (size_t)-1, 0},
    {"password: \"\"", (size_t)-1, 0},
    {"password: \"~!@#$%^&*()_+{}|:<>?\"", (size_t)-1, 0},
    {"log_level: error", (size_t)-1, 0},
    {"log_level: warn", (size_t)-1, 0},
    {"log_target: stderr", (size_t)-1, 0},
    {"metrics: {listen: \"\"}", (size_t)-1, 0},
    {"metrics: {listen: \"127.0.0.1:0\"}", (size_t)-1, 0},
    {"metrics: {listen: \"[::]:9100\"}", (size_t)-1, 0},
    {"listen: [\"127.0.0.1:7390\", \"unix:/tmp/l.sock\", \"[::1]:7390\"]", (size_t)-1, 0},
    {"listen: [\"127.0.0.1:7390\", \"127.0.0.1:7391\", \"127.0.0.2:7390\"]", (size_t)-1, 0},
    {"listen: [\"[::]:7390\"]\npassword: pw\n", (size_t)-1, 0},
    {"listen: [\"10.0.0.1:7390\", \"[fe80::1%eth0]:7390\"]\nallow_unauthenticated: true\n",
     (size_t)-1, 0},
    {"listen: [\"0.0.0.0:7390\"]\npassword_file: pw\n", (size_t)-1, 0},
    {"listen: [\"127.0.0.1:7390\"]\nmetrics: {listen: \"127.0.0.1:7391\"}", (size_t)-1, 0},
    {"listen: [\"127.0.0.1:7390\"]\nmetrics: {listen: \"localhost:7390\"}", (size_t)-1, 0},
    {"allow_unauthenticated: false", (size_t)-1, 0},
    {"password: \"\"\npassword_file: pw\n", (size_t)-1, 0},
    {"redis: {password_file: pw}", (size_t)-1, 0},
    {"redis: {key_prefix: \"x\"}", (size_t)-1, 0},
    {"redis: {password: \"with spaces are fine for redis\"}", (size_t)-1, 0},
    {"---\nlog_level: info\n...\n", (size_t)-1, 0},
};

START_TEST(good_values)
{
	struct config c;
	char err[ERRLEN];

	cfg_defaults(&c);
	ck_assert_msg(load(&c, good[_i].yaml, err) == 0, "\"%s\": %s", good[_i].yaml, err);
	if (good[_i].off != (size_t)-1)
		ck_assert_int_eq(*(int64_t *)((char *)&c + good[_i].off), good[_i].value);
	cfg_free(&c);
}
END_TEST

START_TEST(string_values)
{
	struct config c;
	char err[ERRLEN];

	cfg_defaults(&c);
	ck_assert_msg(load(&c,
	                   "locks: {drift_factor: 0.5}\nunix_socket_mode: 0777\n"
	                   "metrics: {listen: \"127.0.0.1:0\"}\nredis: {password: \"a b\"}\n",
	                   err) == 0,
	              "%s", err);
	ck_assert_double_eq(c.drift_factor, 0.5);
	ck_assert_str_eq(c.unix_socket_mode, "0777");
	ck_assert_int_eq(cfg_unix_mode(&c), 0777);
	ck_assert_str_eq(c.metrics_listen, "127.0.0.1:0");
	ck_assert_str_eq(c.redis_password, "a b");
	cfg_free(&c);
}
END_TEST

/* A listen entry may be a mapping with TLS files; strings stay plain. */
START_TEST(listen_mappings)
{
	struct config c;
	char err[ERRLEN];

	cfg_defaults(&c);
	ck_assert_msg(
	    load(&c,
	         "password: pw\n"
	         "listen:\n"
	         "  - \"127.0.0.1:7390\"\n"
	         "  - address: \"0.0.0.0:7391\"\n"
	         "    tls:\n"
	         "      cert: /etc/lockd/cert.pem\n"
	         "      key: /etc/lockd/key.pem\n"
	         "  - {address: \"[::]:7392\", tls: {ca: ca.pem, key: k.pem, cert: c.pem}}\n"
	         "  - {address: \"unix:/run/l.sock\"}\n",
	         err) == 0,
	    "%s", err);
	ck_assert_int_eq(c.nlisten, 4);
	ck_assert_str_eq(c.listen[0], "127.0.0.1:7390");
	ck_assert_ptr_null(c.listen_tls[0].cert);
	ck_assert_str_eq(c.listen[1], "0.0.0.0:7391");
	ck_assert_str_eq(c.listen_tls[1].cert, "/etc/lockd/cert.pem");
	ck_assert_str_eq(c.listen_tls[1].key, "/etc/lockd/key.pem");
	ck_assert_ptr_null(c.listen_tls[1].ca);
	ck_assert_str_eq(c.listen[2], "[::]:7392");
	ck_assert_str_eq(c.listen_tls[2].cert, "c.pem");
	ck_assert_str_eq(c.listen_tls[2].key, "k.pem");
	ck_assert_str_eq(c.listen_tls[2].ca, "ca.pem");
	ck_assert_str_eq(c.listen[3], "unix:/run/l.sock");
	ck_assert_ptr_null(c.listen_tls[3].cert);
	/* a second load replaces the entries and their files */
	ck_assert_msg(load(&c, "listen: [\"127.0.0.9:1\"]\n", err) == 0, "%s", err);
	ck_assert_int_eq(c.nlisten, 1);
	for (int i = 0; i < CONFIG_MAX_LISTEN; i++)
		ck_assert_ptr_null(c.listen_tls[i].cert);
	/* an error inside an entry: defaults, and nothing leaks (ASan) */
	ck_assert_int_eq(load(&c,
	                      "listen:\n  - {address: 127.0.0.1:1, tls: {cert: c, key: k}}\n"
	                      "  - {address: 127.0.0.2:2, tls: {cert: c}}\n",
	                      err),
	                 -1);
	ck_assert_str_eq(err, "t.yml:3:33: listen: tls: needs both cert and key");
	assert_defaults(&c);
	cfg_free(&c);
}
END_TEST

/* --- errors: the exact message, and the config back to defaults --- */

static const struct {
	const char *yaml;
	const char *err;
} bad[] = {
    /* unknown keys */
    {"foo: 1\n", "t.yml:1:1: unknown key \"foo\""},
    {"log_level: info\n\nFoo: 1\n", "t.yml:3:1: unknown key \"Foo\""},
    {"Log_level: info\n", "t.yml:1:1: unknown key \"Log_level\""},
    {"redis: {foo: 1}\n", "t.yml:1:9: unknown key \"redis.foo\""},
    {"redis:\n  timeout_ms: 20\n  foo: 1\n", "t.yml:3:3: unknown key \"redis.foo\""},
    {"locks:\n  timeout_ms: 20\n", "t.yml:2:3: unknown key \"locks.timeout_ms\""},
    {"redis:\n  redis: {}\n", "t.yml:2:3: unknown key \"redis.redis\""},
    /* duplicates, at the second occurrence */
    {"log_level: info\nlog_level: debug\n",
     "t.yml:2:1: duplicate key \"log_level\" (first set at line 1)"},
    {"redis:\n  timeout_ms: 5\n  timeout_ms: 6\n",
     "t.yml:3:3: duplicate key \"redis.timeout_ms\" (first set at line 2)"},
    {"redis: {}\nlocks: {}\nredis: {}\n",
     "t.yml:3:1: duplicate key \"redis\" (first set at line 1)"},
    {"redis: {timeout_ms: 5, timeout_ms: 6}\n",
     "t.yml:1:24: duplicate key \"redis.timeout_ms\" (first set at line 1)"},
    {"listen: [\"127.0.0.1:1\"]\nlisten: [\"127.0.0.1:2\"]\n",
     "t.yml:2:1: duplicate key \"listen\" (first set at line 1)"},
    /* wrong types */
    {"redis:\n  timeout_ms: abc\n",
     "t.yml:2:15: redis.timeout_ms: expected an integer, got \"abc\""},
    {"redis:\n  timeout_ms: \"50\"\n",
     "t.yml:2:15: redis.timeout_ms: expected an integer, got \"50\""},
    {"redis:\n  timeout_ms: 1.5\n",
     "t.yml:2:15: redis.timeout_ms: expected an integer, got \"1.5\""},
    {"redis:\n  timeout_ms: 0x10\n",
     "t.yml:2:15: redis.timeout_ms: expected an integer, got \"0x10\""},
    {"redis:\n  timeout_ms: +\n", "t.yml:2:15: redis.timeout_ms: expected an integer, got \"+\""},
    {"redis:\n  timeout_ms:\n", "t.yml:2:14: redis.timeout_ms: expected an integer, got \"\""},
    {"redis:\n  timeout_ms: [1]\n", "t.yml:2:15: redis.timeout_ms: expected a number, got a list"},
    {"redis:\n  timeout_ms: {a: 1}\n",
     "t.yml:2:15: redis.timeout_ms: expected a number, got a mapping"},
    {"log_level: [a]\n", "t.yml:1:12: log_level: expected a string, got a list"},
    {"log_level:\n  x: 1\n", "t.yml:2:3: log_level: expected a string, got a mapping"},
    {"log_level:\n", "t.yml:1:11: log_level: expected a string, got null"},
    {"log_level: ~\n", "t.yml:1:12: log_level: expected a string, got null"},
    {"log_level: null\n", "t.yml:1:12: log_level: expected a string, got null"},
    {"log_level: *x\n", "t.yml:1:12: log_level: expected a string, got an alias"},
    {"listen: {a: b}\n", "t.yml:1:9: listen: expected a list, got a mapping"},
    {"listen: \"127.0.0.1:1\"\n", "t.yml:1:9: listen: expected a list, got a scalar"},
    {"listen:\n  - [a]\n", "t.yml:2:5: listen: list items must be strings or mappings, got a list"},
    {"listen:\n  - {a: 1}\n", "t.yml:2:6: listen: unknown key \"a\" in an entry (address, tls)"},
    {"redis: 5\n", "t.yml:1:8: redis: expected a mapping, got a scalar"},
    {"redis: [a]\n", "t.yml:1:8: redis: expected a mapping, got a list"},
    {"redis:\n", "t.yml:1:7: redis: expected a mapping, got a scalar"},
    {"locks:\n  drift_factor: abc\n",
     "t.yml:2:17: locks.drift_factor: expected a number, got \"abc\""},
    {"locks:\n  drift_factor: \"0.1\"\n",
     "t.yml:2:17: locks.drift_factor: expected a number, got \"0.1\""},
    {"locks:\n  drift_factor: .nan\n",
     "t.yml:2:17: locks.drift_factor: expected a number, got \".nan\""},
    {"locks:\n  drift_factor: inf\n",
     "t.yml:2:17: locks.drift_factor: expected a number, got \"inf\""},
    {"locks:\n  drift_factor: 0.1x\n",
     "t.yml:2:17: locks.drift_factor: expected a number, got \"0.1x\""},
    {"locks:\n  drift_factor: [0.1]\n",
     "t.yml:2:17: locks.drift_factor: expected a number, got a list"},
    {"? [a]\n: b\n", "t.yml:1:3: expected a key, got a list"},
    /* out of range */
    {"redis:\n  timeout_ms: 0\n", "t.yml:2:15: redis.timeout_ms: 0 is out of range (1 to 60000)"},
    {"redis:\n  timeout_ms: 60001\n",
     "t.yml:2:15: redis.timeout_ms: 60001 is out of range (1 to 60000)"},
    {"redis:\n  timeout_ms: -5\n", "t.yml:2:15: redis.timeout_ms: -5 is out of range (1 to 60000)"},
    {"redis:\n  timeout_ms: 99999999999999999999999\n",
     "t.yml:2:15: redis.timeout_ms: 99999999999999999999999 is out of range (1 to 60000)"},
    {"redis:\n  restart_exclusion_ms: -1\n",
     "t.yml:2:25: redis.restart_exclusion_ms: -1 is out of range (0 to 2147483647)"},
    {"redis:\n  reconnect_max_ms: 9\n",
     "t.yml:2:21: redis.reconnect_max_ms: 9 is out of range (10 to 60000)"},
    {"locks:\n  lease_ms: 99\n",
     "t.yml:2:13: locks.lease_ms: 99 is out of range (100 to 2147483647)"},
    {"locks:\n  lease_ms: 2147483648\n",
     "t.yml:2:13: locks.lease_ms: 2147483648 is out of range (100 to 2147483647)"},
    {"locks:\n  handoff_limit: 0\n",
     "t.yml:2:18: locks.handoff_limit: 0 is out of range (1 to 1000000)"},
    {"limits:\n  max_clients: 1000001\n",
     "t.yml:2:16: limits.max_clients: 1000001 is out of range (1 to 1000000)"},
    {"limits:\n  max_line: 15\n",
     "t.yml:2:13: limits.max_line: 15 is out of range (16 to 1048576)"},
    {"limits:\n  max_key_len: 0\n",
     "t.yml:2:16: limits.max_key_len: 0 is out of range (1 to 65536)"},
    {"limits:\n  max_permits: 0\n",
     "t.yml:2:16: limits.max_permits: 0 is out of range (1 to 65536)"},
    {"limits:\n  max_locks_per_session: 0\n",
     "t.yml:2:26: limits.max_locks_per_session: 0 is out of range (1 to 10000000)"},
    {"limits:\n  reqs_per_event: 10001\n",
     "t.yml:2:19: limits.reqs_per_event: 10001 is out of range (1 to 10000)"},
    {"limits:\n  line_timeout_ms: 99\n",
     "t.yml:2:20: limits.line_timeout_ms: 99 is out of range (100 to 2147483647)"},
    {"limits:\n  idle_timeout_ms: -1\n",
     "t.yml:2:20: limits.idle_timeout_ms: -1 is out of range (0 to 2147483647)"},
    {"limits:\n  max_clients_per_ip: 1000001\n",
     "t.yml:2:23: limits.max_clients_per_ip: 1000001 is out of range (0 to 1000000)"},
    {"limits:\n  max_auth_failures: \"5\"\n",
     "t.yml:2:22: limits.max_auth_failures: expected an integer, got \"5\""},
    {"locks:\n  drift_factor: 0.6\n",
     "t.yml:2:17: locks.drift_factor: 0.6 is out of range (0 to 0.5)"},
    {"locks:\n  drift_factor: -0.1\n",
     "t.yml:2:17: locks.drift_factor: -0.1 is out of range (0 to 0.5)"},
    /* addresses */
    {"listen:\n  - \"nohost\"\n", "t.yml:2:5: listen: \"nohost\": expected HOST:PORT"},
    {"listen:\n  - 1.2.3.4:99999\n",
     "t.yml:2:5: listen: \"1.2.3.4:99999\": port must be a number from 1 to 65535"},
    {"listen: [\"unix:\"]\n", "t.yml:1:10: listen: \"unix:\": empty unix socket path"},
    {"listen: [\"127.0.0.1:0\"]\n",
     "t.yml:1:10: listen: \"127.0.0.1:0\": port must be a number from 1 to 65535"},
    {"listen: [\"::1:7390\"]\n",
     "t.yml:1:10: listen: \"::1:7390\": IPv6 addresses need brackets: [ADDR]:PORT"},
    {"listen: [\"\"]\n", "t.yml:1:10: listen: \"\": expected HOST:PORT"},
    {"listen: []\n", "t.yml:1:9: listen: needs at least 1 entry"},
    {"listen: [\"127.0.0.1:1\", \"127.0.0.1:1\"]\n",
     "t.yml:1:25: listen: \"127.0.0.1:1\" is listed twice"},
    /* listen entries written as mappings */
    {"listen: [\"127.0.0.1:1\", {address: \"127.0.0.1:1\"}]\n",
     "t.yml:1:35: listen: \"127.0.0.1:1\" is listed twice"},
    {"listen:\n  - address: 127.0.0.2:2\n    tls: {cert: c.pem}\n",
     "t.yml:3:10: listen: tls: needs both cert and key"},
    {"listen:\n  - tls: {cert: c.pem, key: k.pem}\n",
     "t.yml:2:5: listen: an entry needs an address"},
    {"listen:\n  - {address: \"unix:/x\", tls: {cert: c, key: k}}\n",
     "t.yml:2:15: listen: \"unix:/x\": tls is for TCP listeners only"},
    {"listen:\n  - {address: \"127.0.0.2:0\"}\n",
     "t.yml:2:15: listen: \"127.0.0.2:0\": port must be a number from 1 to 65535"},
    {"listen:\n  - {address: 127.0.0.2:2, port: 3}\n",
     "t.yml:2:28: listen: unknown key \"port\" in an entry (address, tls)"},
    {"listen:\n  - {address: 127.0.0.2:2, address: 127.0.0.3:3}\n",
     "t.yml:2:28: listen: duplicate key \"address\" in an entry"},
    {"listen:\n  - {address: ~}\n", "t.yml:2:15: listen: address: expected a string, got null"},
    {"listen:\n  - {address: [127.0.0.2:2]}\n",
     "t.yml:2:15: listen: address: expected a string, got a list"},
    {"listen:\n  - {address: 127.0.0.2:2, tls: yes}\n",
     "t.yml:2:33: listen: tls: expected a mapping, got a scalar"},
    {"listen:\n  - {address: 127.0.0.2:2, tls: {cert: c, key: k, crl: x}}\n",
     "t.yml:2:51: listen: tls: unknown key \"crl\" (cert, key, ca)"},
    {"listen:\n  - {address: 127.0.0.2:2, tls: {cert: c, key: k, cert: d}}\n",
     "t.yml:2:51: listen: tls: duplicate key \"cert\""},
    {"listen:\n  - {address: 127.0.0.2:2, tls: {cert: c, key: k, ca: \"\"}}\n",
     "t.yml:2:55: listen: tls.ca: must be 1 to 4096 bytes, without NUL"},
    {"listen:\n  - {address: 127.0.0.2:2, tls: {cert: c, key: {k: 1}}}\n",
     "t.yml:2:48: listen: tls.key: expected a string, got a mapping"},
    {"listen: [[\"127.0.0.1:1\"]]\n",
     "t.yml:1:10: listen: list items must be strings or mappings, got a list"},
    {"redis:\n  masters: [{address: \"127.0.0.1:1\"}]\n",
     "t.yml:2:13: redis.masters: list items must be strings, got a mapping"},
    {"redis:\n  masters: [\"unix:/tmp/r.sock\"]\n",
     "t.yml:2:13: redis.masters: \"unix:/tmp/r.sock\": a unix socket is not allowed here"},
    {"redis:\n  masters: [\"h:0\"]\n",
     "t.yml:2:13: redis.masters: \"h:0\": port must be a number from 1 to 65535"},
    {"redis:\n  masters:\n    - a:1\n    - nohost\n",
     "t.yml:4:7: redis.masters: \"nohost\": expected HOST:PORT"},
    {"redis:\n  masters: []\n", "t.yml:2:12: redis.masters: needs at least 1 entry"},
    {"metrics:\n  listen: \"unix:/x\"\n",
     "t.yml:2:11: metrics.listen: \"unix:/x\": a unix socket is not allowed here"},
    {"metrics:\n  listen: nohost\n", "t.yml:2:11: metrics.listen: \"nohost\": expected HOST:PORT"},
    /* strings */
    {"unix_socket_mode: \"0980\"\n",
     "t.yml:1:19: unix_socket_mode: \"0980\": must be octal digits, e.g. \"0660\""},
    {"unix_socket_mode: rw\n",
     "t.yml:1:19: unix_socket_mode: \"rw\": must be octal digits, e.g. \"0660\""},
    {"unix_socket_mode: \"1777\"\n",
     "t.yml:1:19: unix_socket_mode: \"1777\": must be 0000 to 0777 (no setuid, setgid or sticky "
     "bits)"},
    {"unix_socket_mode: \"07777\"\n", "t.yml:1:19: unix_socket_mode: length must be 1 to 4 bytes"},
    {"unix_socket_mode: \"\"\n", "t.yml:1:19: unix_socket_mode: length must be 1 to 4 bytes"},
    {"log_level: verbose\n",
     "t.yml:1:12: log_level: \"verbose\": must be one of error, warn, info, debug"},
    {"log_level: \"in\\0fo\"\n", "t.yml:1:12: log_level: NUL byte in string"},
    {"log_target: file\n", "t.yml:1:13: log_target: \"file\": must be stderr or syslog"},
    /* a password is never quoted in a message */
    {"password: \"a b\"\n", "t.yml:1:11: password: must be printable ASCII without spaces"},
    {"password: \"\\t\"\n", "t.yml:1:11: password: must be printable ASCII without spaces"},
    {"password: a\npassword_file: f\n",
     "t.yml:2:1: password and password_file are both set; keep one"},
    {"redis:\n  password_file: f\n  password: a\n",
     "t.yml:2:3: redis.password and redis.password_file are both set; keep one"},
    {"allow_unauthenticated: yes\n",
     "t.yml:1:24: allow_unauthenticated: expected true or false, got \"yes\""},
    {"allow_unauthenticated: \"true\"\n",
     "t.yml:1:24: allow_unauthenticated: expected true or false, got \"true\""},
    {"allow_unauthenticated: [true]\n",
     "t.yml:1:24: allow_unauthenticated: expected a boolean, got a list"},
    /* what start would refuse, lockd -t refuses too */
    {"listen: [\"localhost:22393\"]\n",
     "t.yml:1:10: listen: \"localhost:22393\": host must be a numeric IP address"},
    {"listen: [\"127.0.0.1:7390\", \"0.0.0.0:7390\"]\nallow_unauthenticated: true\n",
     "t.yml:1:1: listen: \"127.0.0.1:7390\" and \"0.0.0.0:7390\" cannot both be bound (the "
     "same port on overlapping addresses)"},
    {"password: pw\nlisten: [\"[::]:7390\", \"127.0.0.1:7390\"]\n",
     "t.yml:2:1: listen: \"[::]:7390\" and \"127.0.0.1:7390\" cannot both be bound (the same "
     "port on overlapping addresses)"},
    {"listen: [\"[::1]:7390\", \"[::]:7390\"]\nallow_unauthenticated: true\n",
     "t.yml:1:1: listen: \"[::1]:7390\" and \"[::]:7390\" cannot both be bound (the same port "
     "on overlapping addresses)"},
    {"listen: [\"127.0.0.1:7390\", \"127.000.0.1:7391\"]\n",
     "t.yml:1:28: listen: \"127.000.0.1:7391\": host must be a numeric IP address"},
    {"listen: [\"127.0.0.1:7390\"]\nmetrics:\n  listen: \"0.0.0.0:7390\"\n",
     "t.yml:3:3: metrics.listen: \"0.0.0.0:7390\" and listen \"127.0.0.1:7390\" cannot both be "
     "bound"},
    /* defaults safe for a network */
    {"listen: [\"0.0.0.0:7390\"]\n",
     "t.yml:1:1: listen: \"0.0.0.0:7390\" is not a loopback address and clients need no "
     "password: set password or password_file, or allow_unauthenticated: true"},
    {"log_level: info\nlisten: [\"127.0.0.1:7390\", \"[::]:7391\"]\n",
     "t.yml:2:1: listen: \"[::]:7391\" is not a loopback address and clients need no "
     "password: set password or password_file, or allow_unauthenticated: true"},
    {"listen: [\"192.168.1.5:7390\"]\nallow_unauthenticated: false\n",
     "t.yml:1:1: listen: \"192.168.1.5:7390\" is not a loopback address and clients need no "
     "password: set password or password_file, or allow_unauthenticated: true"},
    {"redis:\n  key_prefix: \"a b\"\n",
     "t.yml:2:15: redis.key_prefix: \"a b\": must be printable ASCII without spaces"},
    {"redis:\n  key_prefix: \"\"\n", "t.yml:2:15: redis.key_prefix: length must be 1 to 64 bytes"},
    /* YAML syntax, at the problem's position */
    {"log_level: \"info\n", "t.yml:2:1: YAML syntax error: found unexpected end of stream while "
                            "scanning a quoted scalar"},
    {"redis:\n  timeout_ms: 5\n lease_ms: 3\n",
     "t.yml:3:2: YAML syntax error: did not find expected key while parsing a block mapping"},
    {"\tlog_level: info\n", "t.yml:1:1: YAML syntax error: found character that cannot start any "
                            "token while scanning for the next token"},
    {"log_level: info\nlisten: [\"127.0.0.1:1\"\nfoo: [\n",
     "t.yml:3:1: YAML syntax error: did not find expected ',' or ']' while parsing a flow "
     "sequence"},
    /* document shape */
    {"- a\n- b\n", "t.yml:1:1: the top level must be a mapping of keys"},
    {"# lockd\n[a, b]\n", "t.yml:2:1: the top level must be a mapping of keys"},
    {"log_level: info\n---\nlog_level: warn\n", "t.yml:3:1: only one YAML document is allowed"},
    /* cross-key checks, at the key that was set */
    {"limits:\n  max_line: 100\n  max_key_len: 200\n",
     "t.yml:3:3: limits.max_key_len (200) must not exceed limits.max_line (100)"},
    {"limits:\n  max_key_len: 200\n  max_line: 100\n",
     "t.yml:2:3: limits.max_key_len (200) must not exceed limits.max_line (100)"},
    {"limits:\n  max_line: 100\n",
     "t.yml:2:3: limits.max_key_len (256) must not exceed limits.max_line (100)"},
    {"redis:\n  timeout_ms: 10000\n",
     "t.yml:2:3: redis.timeout_ms (10000) must be less than a third of locks.lease_ms (30000)"},
    {"locks:\n  lease_ms: 150\n",
     "t.yml:2:3: redis.timeout_ms (50) must be less than a third of locks.lease_ms (150)"},
    {"locks: {lease_ms: 300}\nredis: {timeout_ms: 100}\n",
     "t.yml:2:9: redis.timeout_ms (100) must be less than a third of locks.lease_ms (300)"},
    /* an error after valid keys: everything back to defaults */
    {"log_level: debug\nlisten: [\"0.0.0.0:1\"]\nredis:\n  masters: [\"a:1\", \"b:1\"]\n  "
     "timeout_ms: 7\nlocks: {lease_ms: 1000}\nfoo: 1\n",
     "t.yml:7:1: unknown key \"foo\""},
};

START_TEST(errors)
{
	struct config c;
	char err[ERRLEN];

	cfg_defaults(&c);
	int rc = load(&c, bad[_i].yaml, err);
	ck_assert_msg(rc == -1, "\"%s\": accepted", bad[_i].yaml);
	ck_assert_msg(strcmp(err, bad[_i].err) == 0,
	              "\"%s\":\n  got      \"%s\"\n  expected \"%s\"", bad[_i].yaml, err,
	              bad[_i].err);
	assert_defaults(&c);
	cfg_free(&c);
}
END_TEST

static void list_entries(char *buf, size_t size, const char *head, const char *indent, int n)
{
	size_t len = (size_t)snprintf(buf, size, "%s", head);
	/* listen entries must be numeric: 127.0.0.i:i */
	int ip = strcmp(head, "listen:\n") == 0;
	for (int i = 1; i <= n; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s- %s%d:%d\n", indent,
		                        ip ? "127.0.0." : "h", i, i);
	ck_assert_uint_lt(len, size);
}

START_TEST(list_limits)
{
	struct config c;
	char text[2048], err[ERRLEN];

	cfg_defaults(&c);
	list_entries(text, sizeof(text), "redis:\n  masters:\n", "    ", CONFIG_MAX_MASTERS);
	ck_assert_msg(load(&c, text, err) == 0, "%s", err);
	ck_assert_int_eq(c.nmasters, CONFIG_MAX_MASTERS);
	ck_assert_str_eq(c.masters[CONFIG_MAX_MASTERS - 1], "h15:15");

	list_entries(text, sizeof(text), "redis:\n  masters:\n", "    ", CONFIG_MAX_MASTERS + 1);
	ck_assert_int_eq(load(&c, text, err), -1);
	ck_assert_str_eq(err, "t.yml:18:7: redis.masters: at most 15 entries");
	assert_defaults(&c);

	list_entries(text, sizeof(text), "listen:\n", "  ", CONFIG_MAX_LISTEN);
	ck_assert_msg(load(&c, text, err) == 0, "%s", err);
	ck_assert_int_eq(c.nlisten, CONFIG_MAX_LISTEN);
	ck_assert_str_eq(c.listen[CONFIG_MAX_LISTEN - 1], "127.0.0.16:16");

	list_entries(text, sizeof(text), "listen:\n", "  ", CONFIG_MAX_LISTEN + 1);
	ck_assert_int_eq(load(&c, text, err), -1);
	ck_assert_str_eq(err, "t.yml:18:5: listen: at most 16 entries");
	assert_defaults(&c);
	cfg_free(&c);
}
END_TEST

/* A failed load resets to the defaults, not to what an earlier load set. */
START_TEST(error_after_load_resets)
{
	struct config c;
	char err[ERRLEN];

	cfg_defaults(&c);
	ck_assert_msg(load(&c, full_yaml, err) == 0, "%s", err);
	ck_assert_int_eq(load(&c, "log_level: loud\n", err), -1);
	ck_assert_str_eq(
	    err, "t.yml:1:12: log_level: \"loud\": must be one of error, warn, info, debug");
	assert_defaults(&c);
	cfg_free(&c);
}
END_TEST

/* A top level that is a scalar is not a mapping of keys either: only an
 * empty file means "all defaults". A file reading "listen 0.0.0.0:7390"
 * (colon forgotten) must not start lockd on the defaults. */
START_TEST(scalar_top_level)
{
	static const char *const texts[] = {"listen 0.0.0.0:7390\n", "hello\n", "\"quoted\"\n",
	                                    "42\n"};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct config c;
		char err[ERRLEN];
		cfg_defaults(&c);
		int rc = load(&c, texts[i], err);
		cfg_free(&c);
		ck_assert_msg(rc == -1, "\"%s\" accepted as an empty file", texts[i]);
		ck_assert_str_eq(err, "t.yml:1:1: the top level must be a mapping of keys");
	}
}
END_TEST

/* Bytes that are not UTF-8 are reported where they are. */
START_TEST(invalid_utf8_position)
{
	struct config c;
	char err[ERRLEN];

	cfg_defaults(&c);
	int rc = load(&c, "log_level: info\npassword: \"\xff\"\n", err);
	cfg_free(&c);
	ck_assert_int_eq(rc, -1);
	ck_assert_msg(strstr(err, "invalid leading UTF-8 octet") != NULL, "%s", err);
	ck_assert_str_eq(err, "t.yml:2:12: YAML syntax error: invalid leading UTF-8 octet");
}
END_TEST

START_TEST(small_error_buffer)
{
	struct config c;
	char err[16];

	memset(err, 'Z', sizeof(err));
	cfg_defaults(&c);
	ck_assert_int_eq(cfg_load_string(&c, "t.yml", "foo: 1\n", 7, err, 10), -1);
	ck_assert_str_eq(err, "t.yml:1:1");
	ck_assert_int_eq(err[10], 'Z');
	ck_assert_int_eq(cfg_load_string(&c, "t.yml", "foo: 1\n", 7, err, 14), -1);
	ck_assert_str_eq(err, "t.yml:1:1: un");
	cfg_free(&c);
}
END_TEST

/* --- files --- */

static char *write_temp(const char *text)
{
	char *path = strdup("/tmp/lockd-unit-XXXXXX.yml");
	int fd;

	ck_assert_ptr_nonnull(path);
	fd = mkstemps(path, 4);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

START_TEST(file_valid)
{
	struct config c;
	char err[ERRLEN] = "";
	char *path = write_temp(full_yaml);

	cfg_defaults(&c);
	int rc = cfg_load_file(&c, path, err, sizeof(err));
	unlink(path);
	ck_assert_msg(rc == 0, "%s", err);
	assert_full(&c);
	cfg_free(&c);
	free(path);
}
END_TEST

START_TEST(file_error_names_the_path)
{
	struct config c;
	char err[ERRLEN] = "", want[ERRLEN];
	char *path = write_temp("log_level: debug\nredis:\n  timeout_ms: 20\n  bogus: 1\n");

	cfg_defaults(&c);
	int rc = cfg_load_file(&c, path, err, sizeof(err));
	unlink(path);
	ck_assert_int_eq(rc, -1);
	snprintf(want, sizeof(want), "%s:4:3: unknown key \"redis.bogus\"", path);
	ck_assert_str_eq(err, want);
	assert_defaults(&c);
	cfg_free(&c);
	free(path);
}
END_TEST

START_TEST(file_missing)
{
	struct config c;
	char err[ERRLEN] = "";

	cfg_defaults(&c);
	ck_assert_int_eq(cfg_load_file(&c, "/nonexistent/lockd.yml", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "/nonexistent/lockd.yml:1:1: cannot open: No such file or directory");
	assert_defaults(&c);
	cfg_free(&c);
}
END_TEST

START_TEST(file_empty)
{
	struct config c;
	char err[ERRLEN] = "";
	char *path = write_temp("");

	cfg_defaults(&c);
	int rc = cfg_load_file(&c, path, err, sizeof(err));
	unlink(path);
	ck_assert_msg(rc == 0, "%s", err);
	assert_defaults(&c);
	cfg_free(&c);
	free(path);
}
END_TEST

/* The same through a file: the position is that of the bad byte. */
START_TEST(file_invalid_utf8_position)
{
	struct config c;
	char err[ERRLEN] = "", want[ERRLEN];
	char *path = write_temp("log_level: info\npassword: \"\xff\"\n");

	cfg_defaults(&c);
	int rc = cfg_load_file(&c, path, err, sizeof(err));
	unlink(path);
	cfg_free(&c);
	snprintf(want, sizeof(want), "%s:2:12: YAML syntax error: invalid leading UTF-8 octet",
	         path);
	free(path);
	ck_assert_int_eq(rc, -1);
	ck_assert_str_eq(err, want);
}
END_TEST

/* --- password files --- */

/* A directory with a config file and a password file in it. */
struct pwdir {
	char dir[64];
	char conf[128];
};

static void put(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

static void pwdir_make(struct pwdir *d, const char *conf)
{
	snprintf(d->dir, sizeof(d->dir), "/tmp/lockd-unit-pw-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(d->dir));
	snprintf(d->conf, sizeof(d->conf), "%s/lockd.yml", d->dir);
	put(d->conf, conf, strlen(conf));
}

static void pwdir_put(struct pwdir *d, const char *name, const char *text, size_t len)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", d->dir, name);
	put(p, text, len);
}

static void pwdir_remove(struct pwdir *d)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Relative names are next to the config file; absolute ones are as
 * given; the line ending goes, and a reload (another load) reads the
 * file again. */
START_TEST(password_file_read)
{
	struct config c;
	struct pwdir d;
	char err[ERRLEN] = "", abs[256];

	unsetenv("CREDENTIALS_DIRECTORY");
	pwdir_make(&d, "password_file: pw\nredis:\n  password_file: rpw\n"
	               "listen: [\"0.0.0.0:7390\"]\n");
	pwdir_put(&d, "pw", "s3cret\n", 7);
	pwdir_put(&d, "rpw", "with spaces\r\n", 13);
	cfg_defaults(&c);
	ck_assert_msg(cfg_load_file(&c, d.conf, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(c.password, "s3cret");
	ck_assert_str_eq(c.password_file, "pw");
	ck_assert_str_eq(c.redis_password, "with spaces");
	ck_assert_ptr_null(cfg_open_listener(&c)); /* a password is set */

	/* a new password at the next load; no line ending at all is fine */
	pwdir_put(&d, "pw", "n3w", 3);
	ck_assert_msg(cfg_load_file(&c, d.conf, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(c.password, "n3w");

	/* absolute */
	snprintf(abs, sizeof(abs), "password_file: %s/rpw\n", d.dir);
	put(d.conf, abs, strlen(abs));
	pwdir_put(&d, "rpw", "abs\n", 4);
	ck_assert_msg(cfg_load_file(&c, d.conf, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(c.password, "abs");

	/* 256 bytes is the most */
	char big[300];
	memset(big, 'x', sizeof(big));
	put(d.conf, "password_file: pw\n", 18);
	pwdir_put(&d, "pw", big, 256);
	ck_assert_msg(cfg_load_file(&c, d.conf, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(strlen(c.password), 256);
	cfg_free(&c);
	pwdir_remove(&d);
}
END_TEST

/* Under systemd, a relative name is a credential: $CREDENTIALS_DIRECTORY. */
START_TEST(password_file_credentials_directory)
{
	struct config c;
	struct pwdir d, creds;
	char err[ERRLEN] = "";

	pwdir_make(&d, "password_file: lockd-password\n");
	pwdir_put(&d, "lockd-password", "beside\n", 7);
	pwdir_make(&creds, "");
	pwdir_put(&creds, "lockd-password", "credential\n", 11);
	ck_assert_int_eq(setenv("CREDENTIALS_DIRECTORY", creds.dir, 1), 0);
	cfg_defaults(&c);
	ck_assert_msg(cfg_load_file(&c, d.conf, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(c.password, "credential");
	/* empty: as if unset */
	ck_assert_int_eq(setenv("CREDENTIALS_DIRECTORY", "", 1), 0);
	ck_assert_msg(cfg_load_file(&c, d.conf, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(c.password, "beside");
	unsetenv("CREDENTIALS_DIRECTORY");
	cfg_free(&c);
	pwdir_remove(&d);
	pwdir_remove(&creds);
}
END_TEST

static const struct {
	const char *content; /* of the password file "pw"; NULL: no such file */
	size_t len;
	const char *conf;
	const char *why; /* after "DIR/lockd.yml:1:1: KEY: DIR/pw: " */
} pw_bad[] = {
    {NULL, 0, "password_file: pw\n", "cannot open: No such file or directory"},
    {"", 0, "password_file: pw\n", "the file is empty"},
    {"\n", 1, "password_file: pw\n", "the file is empty"},
    {"a\nb\n", 4, "password_file: pw\n", "must be one line, without NUL bytes"},
    {"a\0b", 3, "password_file: pw\n", "must be one line, without NUL bytes"},
    {"two words\n", 10, "password_file: pw\n", "must be printable ASCII without spaces"},
    {"x", 257, "password_file: pw\n", "longer than 256 bytes"},
    {"x", 4096, "redis: {password_file: pw}\n", "longer than 256 bytes"},
    {"", 0, "redis: {password_file: pw}\n", "the file is empty"},
};

/* Every fault names FILE:LINE:COLUMN of the key and the file; the content
 * of the file never appears; the config is left at its defaults. */
START_TEST(password_file_errors)
{
	struct config c;
	struct pwdir d;
	char err[ERRLEN] = "", want[ERRLEN];
	char content[4096];

	unsetenv("CREDENTIALS_DIRECTORY");
	pwdir_make(&d, pw_bad[_i].conf);
	if (pw_bad[_i].content) {
		if (pw_bad[_i].len > strlen(pw_bad[_i].content) && pw_bad[_i].content[0] == 'x') {
			memset(content, 'x', sizeof(content));
		} else {
			memcpy(content, pw_bad[_i].content, pw_bad[_i].len);
		}
		pwdir_put(&d, "pw", content, pw_bad[_i].len);
	}
	int redis = strncmp(pw_bad[_i].conf, "redis", 5) == 0;
	cfg_defaults(&c);
	ck_assert_int_eq(cfg_load_file(&c, d.conf, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s:%s: %s: %s/pw: %s", d.conf, redis ? "1:9" : "1:1",
	         redis ? "redis.password_file" : "password_file", d.dir, pw_bad[_i].why);
	ck_assert_str_eq(err, want);
	ck_assert_ptr_null(strstr(err, "words"));
	assert_defaults(&c);
	cfg_free(&c);
	pwdir_remove(&d);
}
END_TEST

/* A directory is not a password file (and a FIFO would block: not opened
 * for reading as one). */
START_TEST(password_file_not_regular)
{
	struct config c;
	struct pwdir d;
	char err[ERRLEN] = "", want[ERRLEN], sub[128];

	unsetenv("CREDENTIALS_DIRECTORY");
	pwdir_make(&d, "password_file: sub\n");
	snprintf(sub, sizeof(sub), "%s/sub", d.dir);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	cfg_defaults(&c);
	ck_assert_int_eq(cfg_load_file(&c, d.conf, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s:1:1: password_file: %s: not a regular file", d.conf, sub);
	ck_assert_str_eq(err, want);
	cfg_free(&c);
	pwdir_remove(&d);
}
END_TEST

/* From a string nothing is read: the keys only have to parse. */
START_TEST(password_file_not_read_from_string)
{
	struct config c;
	char err[ERRLEN];

	cfg_defaults(&c);
	ck_assert_msg(load(&c, "password_file: /nonexistent\n", err) == 0, "%s", err);
	ck_assert_str_eq(c.password, "");
	ck_assert_str_eq(c.password_file, "/nonexistent");
	cfg_free(&c);
}
END_TEST

/* The listener allow_unauthenticated lets through, for the warning. */
START_TEST(open_listener)
{
	struct config c;
	char err[ERRLEN];

	cfg_defaults(&c);
	ck_assert_ptr_null(cfg_open_listener(&c));
	ck_assert_msg(
	    load(&c,
	         "allow_unauthenticated: true\n"
	         "listen: [\"127.0.0.1:1\", \"unix:/tmp/x\", \"[::1]:2\", \"10.0.0.1:3\"]\n",
	         err) == 0,
	    "%s", err);
	ck_assert_int_eq(c.allow_unauthenticated, 1);
	ck_assert_str_eq(cfg_open_listener(&c), "10.0.0.1:3");
	cfg_free(&c);
	cfg_defaults(&c);
	ck_assert_msg(load(&c, "listen: [\"127.8.9.10:1\", \"[::ffff:127.0.0.1]:2\"]\n", err) == 0,
	              "%s", err);
	ck_assert_ptr_null(cfg_open_listener(&c));
	ck_assert_int_eq(c.allow_unauthenticated, 0);
	/* TLS with a ca asks every client for a certificate: authenticated */
	ck_assert_msg(load(&c,
	                   "listen: [{address: \"0.0.0.0:7391\", tls: {cert: c, key: k, ca: a}}]\n",
	                   err) == 0,
	              "%s", err);
	ck_assert_ptr_null(cfg_open_listener(&c));
	ck_assert_int_eq(
	    load(&c, "listen: [{address: \"0.0.0.0:7391\", tls: {cert: c, key: k}}]\n", err), -1);
	ck_assert_str_eq(err, "t.yml:1:1: listen: \"0.0.0.0:7391\" is not a loopback address and "
	                      "clients need no password: set password or password_file, or "
	                      "allow_unauthenticated: true");
	cfg_free(&c);
}
END_TEST

Suite *cfg_suite(void)
{
	Suite *s = suite_create("cfg");
	TCase *tc = tcase_create("load");

	tcase_add_test(tc, defaults);
	tcase_add_test(tc, full_file);
	tcase_add_test(tc, load_over_loaded);
	tcase_add_test(tc, empty_inputs_give_defaults);
	tcase_add_test(tc, length_respected);
	tcase_add_loop_test(tc, good_values, 0, (int)(sizeof(good) / sizeof(good[0])));
	tcase_add_test(tc, string_values);
	tcase_add_test(tc, listen_mappings);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_loop_test(tc, errors, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, list_limits);
	tcase_add_test(tc, error_after_load_resets);
	tcase_add_test(tc, scalar_top_level);
	tcase_add_test(tc, invalid_utf8_position);
	tcase_add_test(tc, small_error_buffer);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_test(tc, file_valid);
	tcase_add_test(tc, file_error_names_the_path);
	tcase_add_test(tc, file_missing);
	tcase_add_test(tc, file_empty);
	tcase_add_test(tc, file_invalid_utf8_position);
	suite_add_tcase(s, tc);

	tc = tcase_create("secrets");
	tcase_add_test(tc, password_file_read);
	tcase_add_test(tc, password_file_credentials_directory);
	tcase_add_loop_test(tc, password_file_errors, 0, (int)(sizeof(pw_bad) / sizeof(pw_bad[0])));
	tcase_add_test(tc, password_file_not_regular);
	tcase_add_test(tc, password_file_not_read_from_string);
	tcase_add_test(tc, open_listener);
	suite_add_tcase(s, tc);
	return s;
}
