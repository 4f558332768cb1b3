/*
 * benchmark_report: lockd-benchmark's report. What one scenario's run
 * measured (struct bm_tally, filled in by benchmark.c as the run goes)
 * becomes its figures (struct bm_result: rates, percentiles, fairness,
 * CPU and memory), printed as a block of text, a CSV row or a JSON line
 * (see lockd-benchmark(1), OUTPUT). No I/O but stdout and the clocks of
 * this process.
 */
#ifndef LOCKD_BENCHMARK_REPORT_H
#define LOCKD_BENCHMARK_REPORT_H

#include <stdint.h>
#include <sys/resource.h>

#include "benchmark_opts.h"
#include "benchmark_probe.h"

/* What one scenario's run measured. Times are CLOCK_MONOTONIC ns. */
struct bm_tally {
	/* the run's shape, copied in when it ends */
	enum scenario sc;
	int nsess, depth;
	int locks; /* held: the locks each session takes */
	uint32_t nkeys;
	int track_send;             /* contended, handoff: handoffs timed from UNLOCK sent */
	double readers, writers;    /* shared: the sessions that read, that write */
	double grant_sum, grant_sq; /* the sessions' grants in the window, and their squares,
	                               summed (fairness) */
	/* counted while it ran */
	int max_holders; /* shared, permits: the most holders of a key at once */
	long long writer_grants;
	struct bm_hist wacq; /* shared: the writers' acquire latency */
	long long grants, grants_window, timeouts, lost, overlaps, regressions;
	long long handoffs, early;
	int64_t t0, t_stop, t_granted, t_hold_end, t_end;
	struct bm_hist acq, gap, hsend; /* hsend: UNLOCK written to the next OK */
	long pid;                       /* lockd's, for /proc; 0: none */
	struct bm_cmdcount c0, c1, c2;  /* before; all granted; hold ended (held) */
	struct bm_procsnap p0, p1, p2;  /* before connecting; all granted; hold ended */
	struct rusage ru0;
	/* CPU at the end of the measured window (held: all granted); its start
	 * is c0, pa and ru0 */
	struct bm_cmdcount cw;
	struct bm_procsnap pa, pw;
	struct rusage ru_w;
};

/* One scenario's figures; NAN where a figure does not apply or is unknown. */
struct bm_result {
	enum scenario sc;
	int sessions, pipeline, hold_ms, locks;
	uint32_t keys;
	double seconds, hold_s, cycles, cps;
	double acq[5], gap[5], hsend[5];
	double handoffs, early, jain;
	double regressions, overlaps, timeouts, lost;
	double cmds_per_grant, scripts_per_grant;
	double read_ratio, permits, readers, writers, writer_grants, peak_holders, wacq[5];
	long pid;
	double rss_kb, rss_idle_kb, hwm_kb, cpu_pct, renew_cmds_s, renew_scripts_s;
	double client_cpu_pct;
	/* CPU in microseconds per grant of the window: lockd (/proc), the
	 * masters summed (INFO cpu), this process (getrusage) */
	double lockd_us, masters_us, client_us;
	/* each master of --masters (nodes of them), in its order: Redis
	 * commands and EVALSHA/EVAL per grant, CPU per grant of the window;
	 * they add up to cmds_per_grant, scripts_per_grant and masters_us */
	int nodes;
	double node_cmds[BM_MAX_MASTERS], node_scripts[BM_MAX_MASTERS], node_us[BM_MAX_MASTERS];
};

/* The figures of the run that m describes; the masters' counters and this
 * process's CPU are read now, at its end. */
void bm_compute_result(struct bm_result *r, const struct bm_tally *m);
/* A block of text; target: lockd's address as given. */
void bm_print_human(const struct bm_result *r, const char *target);
/* A CSV row (after a header if header) or a JSON line, as options.out says. */
void bm_print_machine(const struct bm_result *r, int header);

#endif
