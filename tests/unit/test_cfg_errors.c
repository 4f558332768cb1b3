/* Unit tests of the configuration loader's errors: the exact message with
 * its FILE:LINE:COLUMN (1-based) for every bad input, list limits, and the
 * config back to its defaults after a failed load. Part of the "cfg"
 * suite (test_cfg.c). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg.h"
#include "units.h"
#include "test_cfg.h"

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
    {"locks:\n  lost_delay_ms: -1\n",
     "t.yml:2:18: locks.lost_delay_ms: -1 is out of range (0 to 2147483647)"},
    {"locks:\n  lost_delay_ms: 2147483648\n",
     "t.yml:2:18: locks.lost_delay_ms: 2147483648 is out of range (0 to 2147483647)"},
    {"locks:\n  lost_delay_ms: 5s\n",
     "t.yml:2:18: locks.lost_delay_ms: expected an integer, got \"5s\""},
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
    {"limits:\n  max_keys: 0\n", "t.yml:2:13: limits.max_keys: 0 is out of range (1 to 4096)"},
    {"limits:\n  max_keys: 4097\n",
     "t.yml:2:13: limits.max_keys: 4097 is out of range (1 to 4096)"},
    {"limits:\n  max_keys: x\n", "t.yml:2:13: limits.max_keys: expected an integer, got \"x\""},
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
     "t.yml:2:14: redis.masters: unknown key \"address\" in an entry (sentinel, name; cluster)"},
    {"redis:\n  masters: [[\"127.0.0.1:1\"]]\n",
     "t.yml:2:13: redis.masters: list items must be strings or mappings, got a list"},
    /* sentinel entries */
    {"redis:\n  masters:\n    - sentinel: []\n      name: locks\n",
     "t.yml:3:17: redis.masters: sentinel: needs at least one \"HOST:PORT\""},
    {"redis:\n  masters:\n    - sentinel: [\"127.0.0.1:26379\"]\n",
     "t.yml:3:7: redis.masters: a sentinel entry needs a name"},
    {"redis:\n  masters:\n    - name: locks\n",
     "t.yml:3:7: redis.masters: an entry needs sentinel, a list of \"HOST:PORT\""},
    {"redis:\n  masters:\n    - {sentinel: [\"a:1\", \"nohost\"], name: locks}\n",
     "t.yml:3:26: redis.masters: sentinel: \"nohost\": expected HOST:PORT"},
    {"redis:\n  masters:\n    - {sentinel: [\"a:0\"], name: locks}\n",
     "t.yml:3:19: redis.masters: sentinel: \"a:0\": port must be a number from 1 to 65535"},
    {"redis:\n  masters:\n    - {sentinel: [\"a:1\"], name: locks, db: 2}\n",
     "t.yml:3:40: redis.masters: unknown key \"db\" in an entry (sentinel, name; cluster)"},
    {"redis:\n  masters:\n    - {sentinel: [\"a:1\"], name: a, name: b}\n",
     "t.yml:3:36: redis.masters: duplicate key \"name\" in an entry"},
    {"redis:\n  masters:\n    - {sentinel: \"a:1\", name: locks}\n",
     "t.yml:3:18: redis.masters: sentinel: expected a list, got a scalar"},
    {"redis:\n  masters:\n    - {sentinel: [[a]], name: locks}\n",
     "t.yml:3:19: redis.masters: sentinel: list items must be strings, got a list"},
    {"redis:\n  masters:\n    - {sentinel: [\"a:1\"], name: \"my locks\"}\n",
     "t.yml:3:33: redis.masters: name: \"my locks\": must be printable ASCII without blanks"},
    {"redis:\n  masters:\n    - {sentinel: [\"a:1\"], name: [x]}\n",
     "t.yml:3:33: redis.masters: name: expected a string, got a list"},
    {"redis:\n  masters:\n    - {sentinel: [\"a:1\"], name: locks}\n"
     "    - {sentinel: [\"b:1\"], name: locks}\n",
     "t.yml:4:7: redis.masters: \"sentinel:locks\" is listed twice"},
    /* cluster entries: read and checked */
    {"redis:\n  masters:\n    - cluster: [\"a:1\", \"b:1\"]\n"
     "    - cluster: [\"b:1\"]\n",
     "t.yml:4:7: redis.masters: \"cluster:b:1\" names a node of entry 1 (\"cluster:a:1\"): "
     "one deployment would count as two masters"},
    {"redis:\n  masters:\n    - cluster: [\"a:1\", \"b:1\"]\n"
     "    - \"b:1\"\n",
     "t.yml:4:7: redis.masters: \"b:1\" names a node of entry 1 (\"cluster:a:1\"): one "
     "deployment would count as two masters"},
    {"redis:\n  masters:\n    - cluster: []\n",
     "t.yml:3:16: redis.masters: cluster: needs at least one \"HOST:PORT\""},
    {"redis:\n  masters:\n    - cluster: [\"a\"]\n",
     "t.yml:3:17: redis.masters: cluster: \"a\": expected HOST:PORT"},
    {"redis:\n  masters:\n    - cluster: \"a:1\"\n",
     "t.yml:3:16: redis.masters: cluster: expected a list, got a scalar"},
    {"redis:\n  masters:\n    - cluster: [\"a:1\"]\n      name: x\n",
     "t.yml:4:7: redis.masters: a cluster entry has no name (its nodes say their slots)"},
    {"redis:\n  masters:\n    - name: x\n      cluster: [\"a:1\"]\n",
     "t.yml:4:7: redis.masters: a cluster entry has no name (its nodes say their slots)"},
    {"redis:\n  masters:\n    - cluster: [\"a:1\"]\n      sentinel: [\"b:2\"]\n",
     "t.yml:4:7: redis.masters: \"sentinel\": an entry is a cluster or a sentinel one"},
    {"redis:\n  wait_replicas: 17\n",
     "t.yml:2:18: redis.wait_replicas: 17 is out of range (0 to 16)"},
    {"redis:\n  sentinel_password: \"a b\"\n",
     "t.yml:2:22: redis.sentinel_password: must be printable ASCII without spaces"},
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
    /* name (1.4): one word of a WHO line */
    {"name: \"lockd a\"\n", "t.yml:1:7: name: \"lockd a\": must be printable ASCII without blanks"},
    {"name: \"a\\tb\"\n", "t.yml:1:7: name: \"a\tb\": must be printable ASCII without blanks"},
    {"name: \"\xc3\xa9\"\n",
     "t.yml:1:7: name: \"\xc3\xa9\": must be printable ASCII without blanks"},
    {"name: \"\"\n", "t.yml:1:7: name: length must be 1 to 256 bytes"},
    {"name:\n", "t.yml:1:6: name: expected a string, got null"},
    {"\nname: [a]\n", "t.yml:2:7: name: expected a string, got a list"},
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
    {"limits:\n  max_output_bytes: 65535\n",
     "t.yml:2:3: limits.max_output_bytes (65535) must be 0 (no limit) or at least 65536 (65536, "
     "and 4 times limits.max_line)"},
    {"limits:\n  max_output_bytes: 100000\n  max_line: 65536\n",
     "t.yml:2:3: limits.max_output_bytes (100000) must be 0 (no limit) or at least 262144 "
     "(65536, and 4 times limits.max_line)"},
    {"limits:\n  max_output_bytes: -1\n",
     "t.yml:2:21: limits.max_output_bytes: -1 is out of range (0 to 2147483647)"},
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

TCase *cfg_errors_tcase(void)
{
	TCase *tc = tcase_create("errors");
	tcase_add_loop_test(tc, errors, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, list_limits);
	tcase_add_test(tc, error_after_load_resets);
	tcase_add_test(tc, scalar_top_level);
	tcase_add_test(tc, invalid_utf8_position);
	tcase_add_test(tc, small_error_buffer);
	return tc;
}
