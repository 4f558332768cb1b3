/*
 * benchmark_probe: latency histograms, Redis INFO commandstats and the
 * lockd process, for lockd-benchmark (see benchmark_probe.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "benchmark_probe.h"
#include "lockd/client.h"

/* ------------------------------------------------------------------ histogram */

static int h_index(uint64_t v)
{
	int s;

	if (v < BM_H_HALF)
		return (int)v;
	s = 63 - __builtin_clzll(v) - (BM_H_SUB_BITS - 1);
	return (s + 1) * BM_H_HALF + (int)((v >> s) - BM_H_HALF);
}

/* The middle of bucket i: the value it stands for. */
static uint64_t h_mid(int i)
{
	int s;
	uint64_t m;

	if (i < BM_H_HALF)
		return (uint64_t)i;
	s = i / BM_H_HALF - 1;
	m = (uint64_t)(i % BM_H_HALF + BM_H_HALF);
	return (m << s) + ((1ULL << s) >> 1);
}

void bm_hist_add(struct bm_hist *h, int64_t ns)
{
	uint64_t u = ns > 0 ? (uint64_t)ns : 0;

	if (h->n == 0 || u < h->min)
		h->min = u;
	if (u > h->max)
		h->max = u;
	h->n++;
	h->b[h_index(u)]++;
}

double bm_hist_pct_ms(const struct bm_hist *h, uint64_t ppm)
{
	uint64_t rank, cum = 0, v;

	if (h->n == 0)
		return NAN;
	/* integer rank: 0.9 * 10 in floating point would round up to 10 */
	rank = (h->n * ppm + 999999) / 1000000;
	if (rank < 1)
		rank = 1;
	for (int i = 0; i < BM_H_BUCKETS; i++) {
		cum += h->b[i];
		if (cum >= rank) {
			v = h_mid(i);
			v = v < h->min ? h->min : v > h->max ? h->max : v;
			return (double)v / 1e6;
		}
	}
	return (double)h->max / 1e6;
}

/* ------------------------------------------------------------------ Redis INFO */

static redisContext *masters[BM_MAX_MASTERS];
static const struct bm_hostport *master_addr;
static int nmasters;

/* Harness and health-check traffic, not lock traffic (as bench/peers/bench.js
 * counts, so that the figures compare). */
static int is_admin(const char *name)
{
	static const char *const admin[] = {"info",   "ping",   "client",  "hello",    "select",
	                                    "config", "script", "command", "quit",     "auth",
	                                    "echo",   "time",   "dbsize",  "flushall", "flushdb"};

	for (size_t i = 0; i < sizeof(admin) / sizeof(admin[0]); i++)
		if (strcmp(name, admin[i]) == 0)
			return 1;
	return 0;
}

static int is_script(const char *name)
{
	return strcmp(name, "evalsha") == 0 || strcmp(name, "eval") == 0 ||
	       strcmp(name, "evalsha_ro") == 0 || strcmp(name, "eval_ro") == 0 ||
	       strcmp(name, "fcall") == 0 || strcmp(name, "fcall_ro") == 0;
}

int bm_masters_connect(const struct bm_hostport *m, int n)
{
	struct timeval connect_tv = {2, 0}, reply_tv = {5, 0};

	master_addr = m;
	for (int i = 0; i < n; i++) {
		redisContext *c = redisConnectWithTimeout(m[i].host, m[i].port, connect_tv);

		if (!c || c->err) {
			fprintf(stderr, BM_PROG ": --masters: cannot connect to %s:%d: %s\n",
			        m[i].host, m[i].port, c ? c->errstr : "out of memory");
			redisFree(c);
			return -1;
		}
		redisSetTimeout(c, reply_tv);
		masters[nmasters++] = c;
	}
	return 0;
}

static void warn_reply(int i, const char *what, const redisReply *r)
{
	fprintf(stderr, BM_PROG ": warning: %s from %s:%d failed: %s\n", what, master_addr[i].host,
	        master_addr[i].port,
	        r ? (r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply")
	          : masters[i]->errstr);
}

/* The number after "\nname:" in an INFO reply (INFO starts with a "# Section"
 * line, so a field is never the first line). */
static int info_field(const char *info, const char *name, double *v)
{
	char pat[64];
	const char *p;
	char *end;

	snprintf(pat, sizeof(pat), "\n%s:", name);
	if (!(p = strstr(info, pat)))
		return -1;
	*v = strtod(p + strlen(pat), &end);
	return end == p + strlen(pat) ? -1 : 0;
}

/* The CPU time of every master so far. The server's own (RUSAGE_SELF:
 * every thread of it), without its children (RDB and AOF rewrites). */
static void masters_cpu(struct bm_cmdcount *cc)
{
	for (int i = 0; i < nmasters; i++) {
		redisReply *r = redisCommand(masters[i], "INFO cpu");
		double sys, user;

		if (!r || r->type != REDIS_REPLY_STRING ||
		    info_field(r->str, "used_cpu_sys", &sys) ||
		    info_field(r->str, "used_cpu_user", &user)) {
			warn_reply(i, "INFO cpu", r);
			if (r)
				freeReplyObject(r);
			return;
		}
		cc->node_cpu_s[i] = sys + user;
		cc->cpu_s += sys + user;
		freeReplyObject(r);
	}
	cc->cpu_ok = 1;
}

/* A failure makes the Redis figures of this run unavailable; it does not
 * end the benchmark. */
void bm_masters_snapshot(struct bm_cmdcount *cc)
{
	memset(cc, 0, sizeof(*cc));
	if (nmasters == 0)
		return;
	masters_cpu(cc);
	for (int i = 0; i < nmasters; i++) {
		redisReply *r = redisCommand(masters[i], "INFO commandstats");
		const char *p;

		if (!r || r->type != REDIS_REPLY_STRING) {
			warn_reply(i, "INFO commandstats", r);
			if (r)
				freeReplyObject(r);
			return;
		}
		/* lines "cmdstat_client|setname:calls=3,usec=..." */
		for (p = r->str; (p = strstr(p, "cmdstat_")) != NULL; p++) {
			char name[64];
			size_t n = strcspn(p + 8, ":|\r\n");
			const char *calls = strstr(p, ":calls=");

			if (n == 0 || n >= sizeof(name) || !calls)
				continue;
			memcpy(name, p + 8, n);
			name[n] = '\0';
			if (is_admin(name))
				continue;
			cc->node_all[i] += strtod(calls + 7, NULL);
			if (is_script(name))
				cc->node_scripts[i] += strtod(calls + 7, NULL);
		}
		freeReplyObject(r);
		cc->all += cc->node_all[i];
		cc->scripts += cc->node_scripts[i];
	}
	cc->ok = 1;
}

void bm_masters_close(void)
{
	for (int i = 0; i < nmasters; i++)
		redisFree(masters[i]);
	nmasters = 0;
}

/* ------------------------------------------------------------------ lockd process */

void bm_proc_snapshot(long pid, struct bm_procsnap *ps)
{
	char path[64], buf[4096], *p;
	unsigned long ut, st;
	FILE *f;
	size_t n;

	memset(ps, 0, sizeof(*ps));
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	if (!(f = fopen(path, "r")))
		return;
	while (fgets(buf, sizeof(buf), f)) {
		if (strncmp(buf, "VmRSS:", 6) == 0)
			ps->rss_kb = strtod(buf + 6, NULL);
		else if (strncmp(buf, "VmHWM:", 6) == 0)
			ps->hwm_kb = strtod(buf + 6, NULL);
	}
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!(f = fopen(path, "r")))
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command name in field 2 may contain spaces: start after its ')' */
	if (!(p = strrchr(buf, ')')) ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return;
	ps->cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	ps->ok = 1;
}

long bm_stats_pid(const struct lockd_opts *target)
{
	struct lockd_opts o = *target;
	struct lockd_client *c = NULL;
	const struct lockd_reply *r;
	long pid = -1;

	o.connect_timeout_ms = 5000;
	if (lockd_connect(&o, &c) == LOCKD_OK && lockd_call(c, "STATS", 5000, &r) == LOCKD_OK &&
	    r->kind == LOCKD_R_LIST)
		for (size_t i = 0; i < r->nlines; i++)
			if (strncmp(r->lines[i], "STAT pid ", 9) == 0)
				pid = strtol(r->lines[i] + 9, NULL, 10);
	lockd_close(c);
	return pid;
}

/* A pid from STATS is used only when it is a local lockd, not some process
 * that happens to have that pid on this machine. */
int bm_is_local_lockd(long pid)
{
	char path[64], comm[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	return strcmp(comm, "lockd\n") == 0 || strcmp(comm, "lockd") == 0;
}
