/* harness_sentinel: a primary, its replica and 3 Sentinels on loopback
 * ports, for the sentinel entries of redis.masters (test_sentinel.c). The
 * primary and the replica are masters of the harness (h_masters_start):
 * they die with the test like any master; the Sentinels are h_spawn'd
 * children, killed by the teardown. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* How long the Sentinels may take to find each other and the replica:
 * hello messages go out every 2 s. */
#define SN_READY_MS 15000

static char bin[PATH_MAX];
static int bin_found = -1;
static int bin_is_server; /* bin is redis-server: run with --sentinel */

int h_in_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char *copy = strdup(path && *path ? path : "/usr/bin:/bin");
	int found = 0;
	for (char *save = NULL, *d = strtok_r(copy, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", d, name);
		found = access(out, X_OK) == 0;
	}
	free(copy);
	return found;
}

const char *h_sentinel_bin(void)
{
	if (bin_found < 0) {
		bin_found = h_in_path("redis-sentinel", bin, sizeof(bin));
		if (!bin_found && h_redis_server()[0]) {
			snprintf(bin, sizeof(bin), "%s", h_redis_server());
			bin_found = bin_is_server = 1;
		}
	}
	return bin_found ? bin : "";
}

int h_master_at(int port)
{
	for (int i = 0; i < h_nmasters(); i++)
		if (h_master(i)->port == port)
			return i;
	return -1;
}

static char *sentinel_cmd(int port, const char *a, const char *b, const char *c)
{
	struct rconn *r = rc_open(port, 500);
	if (!r)
		return NULL;
	char *rep = rc_cmd(r, "SENTINEL", a, b, c, NULL);
	rc_close(r);
	return rep;
}

int h_sentinel_primary_port(const struct h_sentinel *s)
{
	for (int i = 0; i < 3; i++) {
		char *rep = sentinel_cmd(s->port[i], "get-master-addr-by-name", s->name, NULL);
		char *nl = rep ? strchr(rep, '\n') : NULL;
		int port = nl ? atoi(nl + 1) : 0;
		free(rep);
		if (port > 0)
			return port;
	}
	return 0;
}

/* Each Sentinel knows the 2 others and the replica. */
static int ready(const struct h_sentinel *s)
{
	for (int i = 0; i < 3; i++) {
		char *m = sentinel_cmd(s->port[i], "master", s->name, NULL);
		const char *p = m ? strstr(m, "num-other-sentinels\n") : NULL;
		const char *q = m ? strstr(m, "num-slaves\n") : NULL;
		int ok = p && q && atoi(p + 20) == 2 && atoi(q + 11) == 1;
		free(m);
		if (!ok)
			return 0;
	}
	return 1;
}

void h_sentinel_start(struct h_sentinel *s, const char *name)
{
	ck_assert_msg(h_sentinel_bin()[0], "no redis-sentinel");
	memset(s, 0, sizeof(*s));
	s->name = name;
	h_masters_start(2);
	s->primary = h_nmasters() - 2;
	s->replica = h_nmasters() - 1;
	/* Redis 7 waits 5 s before a diskless full sync by default, for
	 * more replicas to join it: one replica here, now and after a failover */
	for (int i = s->primary; i <= s->replica; i++) {
		char *ok = h_redis(i, "CONFIG", "SET", "repl-diskless-sync-delay", "0", NULL);
		ck_assert_msg(ok && strcmp(ok, "OK") == 0, "CONFIG SET: %s", ok ? ok : "no reply");
		free(ok);
	}
	/* the replica in sync before the Sentinels look */
	h_replicaof(s->replica, s->primary);
	char port[16];
	snprintf(port, sizeof(port), "%d", h_master(s->primary)->port);
	for (int i = 0; i < 3; i++) {
		char conf[PATH_MAX], log[PATH_MAX];
		s->port[i] = h_free_port();
		snprintf(conf, sizeof(conf), "%s/sentinel%d.conf", h_dir(), i);
		snprintf(log, sizeof(log), "%s/sentinel%d.log", h_dir(), i);
		char text[1024];
		snprintf(text, sizeof(text),
		         "port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\nlogfile \"\"\n"
		         "sentinel monitor %s 127.0.0.1 %s 2\n"
		         "sentinel down-after-milliseconds %s 1000\n"
		         "sentinel failover-timeout %s 2000\n"
		         "sentinel parallel-syncs %s 1\n",
		         s->port[i], h_dir(), name, port, name, name, name);
		h_put_file(conf, text);
		char *argv[] = {(char *)h_sentinel_bin(), conf, bin_is_server ? "--sentinel" : NULL,
		                NULL};
		s->pid[i] = h_spawn(argv, &(struct h_spawn){.out = log});
	}
	double end = h_now_ms() + SN_READY_MS;
	while (!ready(s)) {
		ck_assert_msg(h_now_ms() < end,
		              "the Sentinels did not find each other and the "
		              "replica in %d ms",
		              SN_READY_MS);
		h_sleep_ms(100);
	}
}

void h_sentinel_entry(const struct h_sentinel *s, char *out, size_t len)
{
	snprintf(out, len,
	         "{sentinel: [\"127.0.0.1:%d\", \"127.0.0.1:%d\", \"127.0.0.1:%d\"], name: %s}",
	         s->port[0], s->port[1], s->port[2], s->name);
}
