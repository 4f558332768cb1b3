/* Unit tests of the YAML configuration loader (src/cfg.c): defaults, every
 * key, and files (FILE:LINE:COLUMN names the path). The exact error of
 * every bad input is test_cfg_errors.c; password files and the open
 * listener test_cfg_secrets.c. All are the "cfg" suite. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg.h"
#include "units.h"
#include "test_cfg.h"

/* c holds exactly what cfg_defaults gives. */
void assert_defaults(const struct config *c)
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
	ck_assert_int_eq(c->max_output_bytes, d.max_output_bytes);
	ck_assert_str_eq(c->metrics_listen, d.metrics_listen);
	ck_assert_str_eq(c->name, d.name);
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
	ck_assert_int_eq(c.lost_delay_ms, 0);
	c.lost_delay_ms = 5000; /* the default covers lease + delay (1.4) */
	ck_assert_int_eq(cfg_exclusion_ms(&c), 35000);
	c.lost_delay_ms = 0;
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
	ck_assert_int_eq(c.max_output_bytes, 8388608);
	ck_assert_ptr_null(c.listen_tls[0].cert);
	ck_assert_str_eq(c.metrics_listen, "");
	ck_assert_str_eq(c.name, ""); /* lockd fills in cfg_default_name */
	cfg_free(&c);
}
END_TEST

/* name (1.4): host and the first listen address's port, or its path. */
START_TEST(default_name)
{
	struct config c;
	char err[ERRLEN], out[CFG_NAME_MAX + 1], big[400];

	cfg_defaults(&c);
	cfg_default_name(&c, "db7", out, sizeof(out));
	ck_assert_str_eq(out, "db7:7390");
	ck_assert_msg(load(&c, "listen: [\"[::1]:7400\", \"unix:/x\"]\n", err) == 0, "%s", err);
	cfg_default_name(&c, "db7.example.org", out, sizeof(out));
	ck_assert_str_eq(out, "db7.example.org:7400");
	ck_assert_msg(load(&c,
	                   "listen:\n  - unix:/run/lock d/l.sock\n"
	                   "  - {address: 127.0.0.1:7401, tls: {cert: c, key: k}}\n",
	                   err) == 0,
	              "%s", err);
	cfg_default_name(&c, "h", out, sizeof(out));
	ck_assert_str_eq(out, "h:/run/lock_d/l.sock"); /* no blanks in a name */
	ck_assert_msg(
	    load(&c, "listen:\n  - {address: 127.0.0.1:7401, tls: {cert: c, key: k}}\n", err) == 0,
	    "%s", err);
	cfg_default_name(&c, "", out, sizeof(out));
	ck_assert_str_eq(out, "localhost:7401");
	cfg_default_name(&c, "h\xc3\xa9", out, 6);
	ck_assert_str_eq(out, "h__:7");
	memset(big, 'h', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cfg_default_name(&c, big, out, sizeof(out));
	ck_assert_uint_eq(strlen(out), CFG_NAME_MAX);
	cfg_free(&c);
	/* sentinel entries and their options */
	cfg_defaults(&c);
	ck_assert_int_eq(c.wait_replicas, 0);
	ck_assert_str_eq(c.sentinel_password, "");
	ck_assert_msg(load(&c,
	                   "redis:\n  masters:\n    - \"127.0.0.1:6379\"\n"
	                   "    - sentinel: [\"10.0.0.5:26379\", \"[::1]:26380\"]\n"
	                   "      name: locks\n"
	                   "  wait_replicas: 1\n  sentinel_password: s3\n",
	                   err) == 0,
	              "%s", err);
	ck_assert_int_eq(c.nmasters, 2);
	ck_assert_str_eq(c.masters[0], "127.0.0.1:6379");
	ck_assert_int_eq(c.sentinel[0].nseeds, 0);
	ck_assert_str_eq(c.masters[1], "sentinel:locks");
	ck_assert_int_eq(c.sentinel[1].nseeds, 2);
	ck_assert_str_eq(c.sentinel[1].seeds[0], "10.0.0.5:26379");
	ck_assert_str_eq(c.sentinel[1].seeds[1], "[::1]:26380");
	ck_assert_str_eq(c.sentinel[1].name, "locks");
	ck_assert_int_eq(c.wait_replicas, 1);
	ck_assert_str_eq(c.sentinel_password, "s3");
	cfg_free(&c);
	/* a cluster entry beside a standalone master */
	cfg_defaults(&c);
	ck_assert_msg(
	    load(&c,
	         "redis:\n  masters:\n    - cluster: [\"10.0.0.1:7000\", \"10.0.0.2:7000\"]\n"
	         "    - \"127.0.0.1:6379\"\n",
	         err) == 0,
	    "%s", err);
	ck_assert_int_eq(c.nmasters, 2);
	ck_assert_str_eq(c.masters[0], "cluster:10.0.0.1:7000");
	ck_assert_int_eq(c.sentinel[0].cluster, 1);
	ck_assert_int_eq(c.sentinel[0].nseeds, 2);
	ck_assert_str_eq(c.sentinel[0].seeds[1], "10.0.0.2:7000");
	ck_assert_ptr_null(c.sentinel[0].name);
	ck_assert_int_eq(c.sentinel[1].cluster, 0);
	cfg_free(&c);
	/* a name given is kept as it is */
	cfg_defaults(&c);
	ck_assert_msg(load(&c, "name: lockd-a.eu/1\n", err) == 0, "%s", err);
	ck_assert_str_eq(c.name, "lockd-a.eu/1");
	cfg_free(&c);
}
END_TEST

const char full_yaml[] = "# every key, none at its default\n"
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
                         "  lost_delay_ms: 15000\n"
                         "limits: {max_clients: 500, max_line: 8192, max_key_len: 512,\n"
                         "         max_locks_per_session: 100, reqs_per_event: 5}\n"
                         "metrics:\n"
                         "  listen: 127.0.0.1:9100\n"
                         "name: lockd-eu-1\n";

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
	ck_assert_int_eq(c->lost_delay_ms, 15000);
	ck_assert_int_eq(cfg_exclusion_ms(c), 45000); /* given: taken as it is */
	ck_assert_int_eq(c->max_clients, 500);
	ck_assert_int_eq(c->max_line, 8192);
	ck_assert_int_eq(c->max_key_len, 512);
	ck_assert_int_eq(c->max_locks_per_session, 100);
	ck_assert_int_eq(c->reqs_per_event, 5);
	ck_assert_str_eq(c->metrics_listen, "127.0.0.1:9100");
	ck_assert_str_eq(c->name, "lockd-eu-1");
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
    {"limits: {max_keys: 1}", offsetof(struct config, max_keys), 1},
    {"limits: {max_keys: 4096}", offsetof(struct config, max_keys), 4096},
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
    {"limits: {max_output_bytes: 0}", offsetof(struct config, max_output_bytes), 0},
    {"limits: {max_output_bytes: 65536}", offsetof(struct config, max_output_bytes), 65536},
    {"limits: {max_line: 1048576, max_output_bytes: 4194304}",
     offsetof(struct config, max_output_bytes), 4194304},
    {"limits: {max_output_bytes: 2147483647}", offsetof(struct config, max_output_bytes),
     2147483647},
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

Suite *cfg_suite(void)
{
	Suite *s = suite_create("cfg");
	TCase *tc = tcase_create("load");

	tcase_add_test(tc, defaults);
	tcase_add_test(tc, default_name);
	tcase_add_test(tc, full_file);
	tcase_add_test(tc, load_over_loaded);
	tcase_add_test(tc, empty_inputs_give_defaults);
	tcase_add_test(tc, length_respected);
	tcase_add_loop_test(tc, good_values, 0, (int)(sizeof(good) / sizeof(good[0])));
	tcase_add_test(tc, string_values);
	tcase_add_test(tc, listen_mappings);
	suite_add_tcase(s, tc);

	suite_add_tcase(s, cfg_errors_tcase());

	tc = tcase_create("files");
	tcase_add_test(tc, file_valid);
	tcase_add_test(tc, file_error_names_the_path);
	tcase_add_test(tc, file_missing);
	tcase_add_test(tc, file_empty);
	tcase_add_test(tc, file_invalid_utf8_position);
	suite_add_tcase(s, tc);

	suite_add_tcase(s, cfg_secrets_tcase());
	return s;
}
