/* Unit tests of the configuration's secrets: password_file and
 * redis.password_file (read, $CREDENTIALS_DIRECTORY, every error, never
 * from a string) and the listener allow_unauthenticated lets through.
 * Part of the "cfg" suite (test_cfg.c). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg.h"
#include "units.h"
#include "test_cfg.h"

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

TCase *cfg_secrets_tcase(void)
{
	TCase *tc = tcase_create("secrets");
	tcase_add_test(tc, password_file_read);
	tcase_add_test(tc, password_file_credentials_directory);
	tcase_add_loop_test(tc, password_file_errors, 0, (int)(sizeof(pw_bad) / sizeof(pw_bad[0])));
	tcase_add_test(tc, password_file_not_regular);
	tcase_add_test(tc, password_file_not_read_from_string);
	tcase_add_test(tc, open_listener);
	return tc;
}
