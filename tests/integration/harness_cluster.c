/* harness_cluster: a real Redis Cluster on loopback ports (issue 31). The
 * nodes are masters of the harness (h_master_add_args), so they die with
 * the test, and h_master_kill and h_master_restart work on them; the
 * cluster is formed by redis-cli --cluster create, as an operator does. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"

#define CREATE_MS 30000 /* redis-cli --cluster create, at most */
#define READY_MS  20000 /* then every node ok and knowing all the others */

/* Run argv to its end within ms; its exit status, or -1 (killed). */
static int run_bounded(char *const argv[], const char *out, int ms)
{
	pid_t pid = h_spawn(argv, &(struct h_spawn){.out = out});
	for (double t0 = h_now_ms(); h_now_ms() - t0 < ms; h_sleep_ms(20)) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* Primaries (flags "master") in a CLUSTER NODES reply; -1 when a replica
 * (flags "slave") follows no one ("-"). */
static int nodes_primaries(const char *nodes)
{
	int primaries = 0;
	for (const char *l = nodes; *l;) {
		const char *eol = strchr(l, '\n');
		size_t len = eol ? (size_t)(eol - l) : strlen(l);
		char line[1024], *save = NULL;
		snprintf(line, sizeof(line), "%.*s",
		         (int)(len < sizeof(line) ? len : sizeof(line) - 1), l);
		strtok_r(line, " ", &save); /* id */
		strtok_r(NULL, " ", &save); /* address */
		const char *flags = strtok_r(NULL, " ", &save);
		const char *master = strtok_r(NULL, " ", &save);
		if (flags && strstr(flags, "master"))
			primaries++;
		else if (flags && strstr(flags, "slave") && (!master || strcmp(master, "-") == 0))
			return -1;
		l += len + (eol != NULL);
	}
	return primaries;
}

/* A write on primary i (a key of its slots set and deleted) is
 * acknowledged by n replicas within 300 ms (WAIT on the connection that
 * wrote it). Right after the cluster forms, a replica that says it is
 * connected may not acknowledge yet: a test's first WAIT then answered
 * short at its timeout (cluster_router_wait in a CI rehearsal, and 1 run
 * in 20 here with a core busy: every write of one primary failed). */
static int acked(int i, int n)
{
	struct rconn *r = rc_open(h_master(i)->port, H_TMO);
	if (!r)
		return 0;
	char num[16], key[32];
	snprintf(num, sizeof(num), "%d", n);
	char *w = NULL;
	for (int k = 0; k < 256 && (!w || w[0] == '-'); k++) { /* a key of its slots */
		free(w);
		snprintf(key, sizeof(key), "lockd-test-ready-%d", k);
		w = rc_cmdv(r, 3, (const char *[]){"SET", key, "1"});
		if (!w)
			break;
	}
	int ok = 0;
	if (w && w[0] != '-') { /* the DEL leaves nothing, and propagates too */
		free(w);
		w = rc_cmdv(r, 2, (const char *[]){"DEL", key});
		char *a = w ? rc_cmdv(r, 3, (const char *[]){"WAIT", num, "300"}) : NULL;
		ok = a && atoi(a) >= n;
		free(a);
	}
	free(w);
	rc_close(r);
	return ok;
}

/* Every node says cluster_state:ok and lists n nodes, none of them in a
 * handshake or failed, with c->primaries primaries and each replica
 * following one, every replica is synced, and each primary's replicas
 * acknowledge a write. */
static int ready(const struct h_cluster *c)
{
	for (int i = c->first; i < c->first + c->n; i++) {
		char *info = h_redis(i, "CLUSTER", "INFO", NULL);
		int ok = info && strstr(info, "cluster_state:ok");
		free(info);
		if (!ok)
			return 0;
		char *nodes = h_redis(i, "CLUSTER", "NODES", NULL);
		int lines = 0, bad = !nodes;
		for (const char *p = nodes; p && *p; p++)
			lines += *p == '\n';
		if (nodes && (strstr(nodes, "handshake") || strstr(nodes, "fail") ||
		              strstr(nodes, "noaddr") || nodes_primaries(nodes) != c->primaries))
			bad = 1;
		free(nodes);
		if (bad || lines != c->n)
			return 0;
		/* a replica synced (its primary's CLUSTER SHARDS says "loading"
		 * until then) */
		char *role = h_redis(i, "ROLE", NULL);
		int primary = role && strncmp(role, "master", 6) == 0;
		int synced = primary || (role && strstr(role, "\nconnected\n"));
		free(role);
		if (!synced || (primary && !acked(i, c->n / c->primaries - 1)))
			return 0;
	}
	return 1;
}

int h_cluster_start(struct h_cluster *c, int primaries, int replicas)
{
	char cli[PATH_MAX];
	if (!h_in_path("redis-cli", cli, sizeof(cli)))
		return -1;
	c->n = primaries * (1 + replicas);
	c->primaries = primaries;
	c->first = h_nmasters();
	char *argv[8 + 2 * H_MAX_MASTERS];
	int a = 0;
	argv[a++] = cli;
	argv[a++] = "--cluster";
	argv[a++] = "create";
	static char addr[H_MAX_MASTERS][32];
	for (int k = 0; k < c->n; k++) {
		char conf[32], bus[16];
		snprintf(conf, sizeof(conf), "nodes-%d.conf", c->first + k);
		snprintf(bus, sizeof(bus), "%d", h_free_port());
		const char *extra[] = {"--cluster-enabled", "yes", "--cluster-config-file", conf,
		                       "--cluster-node-timeout", "1000", "--cluster-port", bus,
		                       /* Redis 7 waits 5 s before a diskless full
		                        * sync by default, for more replicas to join
		                        * it: the cluster was not ready for 6 s */
		                       "--repl-diskless-sync-delay", "0", NULL};
		int i = h_master_add_args(extra);
		ck_assert_int_eq(i, c->first + k);
		snprintf(addr[k], sizeof(addr[k]), "127.0.0.1:%d", h_master(i)->port);
		argv[a++] = addr[k];
	}
	char rep[16];
	snprintf(rep, sizeof(rep), "%d", replicas);
	argv[a++] = "--cluster-replicas";
	argv[a++] = rep;
	argv[a++] = "--cluster-yes";
	argv[a] = NULL;
	char out[PATH_MAX + 32];
	snprintf(out, sizeof(out), "%s/cluster-create.log", h_dir());
	int st = run_bounded(argv, out, CREATE_MS);
	ck_assert_msg(st == 0, "redis-cli --cluster create: %s (its output: %s)",
	              st < 0 ? "did not end in time" : "failed", out);
	for (double t0 = h_now_ms(); !ready(c); h_sleep_ms(50))
		ck_assert_msg(h_now_ms() - t0 < READY_MS,
		              "the cluster of %d nodes is not ready after %d ms", c->n, READY_MS);
	return 0;
}
