/*
 * benchmark_probe: what lockd-benchmark measures besides its own sessions:
 * latency histograms, Redis INFO commandstats of the masters, and the
 * lockd process (/proc, and its pid from STATS).
 */
#ifndef LOCKD_BENCHMARK_PROBE_H
#define LOCKD_BENCHMARK_PROBE_H

#include <stdint.h>

#define BM_PROG        "lockd-benchmark"
#define BM_MAX_MASTERS 16

/*
 * Log-linear histogram of nanosecond values: exact below 128 ns, then 128
 * buckets per power of two, so any value is known to within 0.4 % in a
 * fixed 58 KiB whatever the number of samples.
 */
#define BM_H_SUB_BITS 8
#define BM_H_HALF     (1 << (BM_H_SUB_BITS - 1))
#define BM_H_BUCKETS  ((64 - BM_H_SUB_BITS + 2) * BM_H_HALF)

struct bm_hist {
	uint64_t n, min, max;
	uint64_t b[BM_H_BUCKETS];
};

void bm_hist_add(struct bm_hist *h, int64_t ns);
/* The ppm-th per-million percentile (nearest rank) in ms, NAN when empty. */
double bm_hist_pct_ms(const struct bm_hist *h, uint64_t ppm);

struct bm_hostport {
	char host[256];
	int port;
};

/* Redis commands of each master, from INFO commandstats, and their CPU
 * time, from INFO cpu; the sums are the sums of the nodes' figures. */
struct bm_cmdcount {
	int ok;         /* 0: no masters, or one did not answer */
	double all;     /* every lock command, also those run inside scripts */
	double scripts; /* EVALSHA, EVAL and the like */
	int cpu_ok;     /* 0: no masters, or one did not answer */
	double cpu_s;   /* used_cpu_sys + used_cpu_user (the server process) */
	/* the same of each master, in the order of --masters (valid when ok,
	 * cpu_ok) */
	double node_all[BM_MAX_MASTERS], node_scripts[BM_MAX_MASTERS];
	double node_cpu_s[BM_MAX_MASTERS];
};

/* Blocking hiredis connections, used only between measured phases. */
int bm_masters_connect(const struct bm_hostport *m, int n);
void bm_masters_snapshot(struct bm_cmdcount *cc);
void bm_masters_close(void);

/* A process as /proc shows it. */
struct bm_procsnap {
	int ok;
	double rss_kb, hwm_kb; /* VmRSS, VmHWM */
	double cpu_s;          /* utime + stime */
};

void bm_proc_snapshot(long pid, struct bm_procsnap *ps);
/* lockd's pid from its STATS reply, or -1 (a session of its own, blocking,
 * 5 s at most for the connection and 5 s for the reply). */
struct lockd_opts;
long bm_stats_pid(const struct lockd_opts *target);
/* Whether pid is a local process named lockd. */
int bm_is_local_lockd(long pid);

#endif
