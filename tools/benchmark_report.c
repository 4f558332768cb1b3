/*
 * benchmark_report: lockd-benchmark's report (see benchmark_report.h):
 * from what a scenario's run measured to its figures, and the figures
 * printed for people (a block per scenario) or for programs (CSV, JSON).
 * The percentiles come from benchmark_probe's histograms, the CPU and
 * memory figures from its snapshots of lockd and the masters.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>

#include "benchmark_opts.h"
#include "benchmark_probe.h"
#include "benchmark_report.h"

static const uint64_t pct_ppm[5] = {500000, 900000, 990000, 999000, 1000000};
static const char *const pct_names[5] = {"p50", "p90", "p99", "p99.9", "max"};
static const char *const pct_cols[5] = {"p50", "p90", "p99", "p999", "max"};

static double ratio(double a, double b)
{
	return b > 0 ? a / b : NAN;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

void bm_compute_result(struct bm_result *r, const struct bm_tally *m)
{
	struct rusage ru;
	struct bm_cmdcount c3;
	double wall;
	int cycling = m->sc != SC_HELD;

	bm_masters_snapshot(&c3);
	getrusage(RUSAGE_SELF, &ru);
	memset(r, 0, sizeof(*r));
	r->sc = m->sc;
	r->sessions = m->nsess;
	r->pipeline = m->depth;
	r->hold_ms = cycling ? options.hold_ms : 0;
	r->locks = cycling ? 0 : m->locks;
	r->keys = m->nkeys;
	r->seconds = (double)((cycling ? m->t_stop : m->t_granted) - m->t0) / 1e9;
	r->cycles = (double)m->grants_window;
	r->cps = ratio(r->cycles, r->seconds);
	for (int i = 0; i < 5; i++) {
		r->acq[i] = bm_hist_pct_ms(&m->acq, pct_ppm[i]);
		r->gap[i] = m->sc == SC_HANDOFF ? bm_hist_pct_ms(&m->gap, pct_ppm[i]) : NAN;
		r->hsend[i] = m->track_send ? bm_hist_pct_ms(&m->hsend, pct_ppm[i]) : NAN;
	}
	r->read_ratio = r->readers = r->writers = r->writer_grants = r->permits = NAN;
	r->peak_holders = m->sc == SC_SHARED || m->sc == SC_PERMITS ? m->max_holders : NAN;
	for (int i = 0; i < 5; i++)
		r->wacq[i] = m->sc == SC_SHARED ? bm_hist_pct_ms(&m->wacq, pct_ppm[i]) : NAN;
	if (m->sc == SC_SHARED) {
		r->read_ratio = options.read_ratio;
		r->writers = m->writers;
		r->readers = m->readers;
		r->writer_grants = (double)m->writer_grants;
	}
	if (m->sc == SC_PERMITS)
		r->permits = options.permits;
	r->handoffs = m->sc == SC_HANDOFF ? (double)m->handoffs : NAN;
	r->early = m->sc == SC_HANDOFF ? (double)m->early : NAN;
	/* Jain's index: 1 when every session got the same number of grants */
	r->jain =
	    m->sc == SC_HANDOFF ? ratio(m->grant_sum * m->grant_sum, m->nsess * m->grant_sq) : NAN;
	r->regressions = (double)m->regressions;
	r->overlaps = (double)m->overlaps;
	r->timeouts = (double)m->timeouts;
	r->lost = (double)m->lost;
	r->cmds_per_grant = r->scripts_per_grant = NAN;
	r->nodes = options.nmasters;
	for (int i = 0; i < r->nodes; i++)
		r->node_cmds[i] = r->node_scripts[i] = r->node_us[i] = NAN;
	if (m->c0.ok && c3.ok) {
		r->cmds_per_grant = ratio(c3.all - m->c0.all, (double)m->grants);
		r->scripts_per_grant = ratio(c3.scripts - m->c0.scripts, (double)m->grants);
		for (int i = 0; i < r->nodes; i++) {
			r->node_cmds[i] =
			    ratio(c3.node_all[i] - m->c0.node_all[i], (double)m->grants);
			r->node_scripts[i] =
			    ratio(c3.node_scripts[i] - m->c0.node_scripts[i], (double)m->grants);
		}
	}
	r->pid = m->pid;
	r->rss_kb = r->rss_idle_kb = r->hwm_kb = r->cpu_pct = NAN;
	r->renew_cmds_s = r->renew_scripts_s = NAN;
	if (!cycling) {
		double hold_s = r->hold_s = (double)(m->t_hold_end - m->t_granted) / 1e9;

		if (m->p0.ok && m->p2.ok) {
			r->rss_kb = m->p2.rss_kb;
			r->rss_idle_kb = m->p0.rss_kb;
			r->hwm_kb = m->p2.hwm_kb;
		}
		if (m->p1.ok && m->p2.ok)
			r->cpu_pct = ratio(100 * (m->p2.cpu_s - m->p1.cpu_s), hold_s);
		if (m->c1.ok && m->c2.ok) {
			r->renew_cmds_s = ratio(m->c2.all - m->c1.all, hold_s);
			r->renew_scripts_s = ratio(m->c2.scripts - m->c1.scripts, hold_s);
		}
	}
	r->lockd_us = r->masters_us = NAN;
	if (m->pa.ok && m->pw.ok)
		r->lockd_us = ratio(1e6 * (m->pw.cpu_s - m->pa.cpu_s), r->cycles);
	if (m->c0.cpu_ok && m->cw.cpu_ok) {
		r->masters_us = ratio(1e6 * (m->cw.cpu_s - m->c0.cpu_s), r->cycles);
		for (int i = 0; i < r->nodes; i++)
			r->node_us[i] =
			    ratio(1e6 * (m->cw.node_cpu_s[i] - m->c0.node_cpu_s[i]), r->cycles);
	}
	r->client_us = ratio(1e6 * (tv_s(m->ru_w.ru_utime) + tv_s(m->ru_w.ru_stime) -
	                            tv_s(m->ru0.ru_utime) - tv_s(m->ru0.ru_stime)),
	                     r->cycles);
	wall = (double)(m->t_end - m->t0) / 1e9;
	r->client_cpu_pct = ratio(100 * (tv_s(ru.ru_utime) + tv_s(ru.ru_stime) -
	                                 tv_s(m->ru0.ru_utime) - tv_s(m->ru0.ru_stime)),
	                          wall);
}

/* "-" in the human output, empty in CSV, null in JSON */
static void fmt_num(char *buf, size_t len, double v, int decimals, const char *na)
{
	if (isnan(v))
		snprintf(buf, len, "%s", na);
	else
		snprintf(buf, len, "%.*f", decimals, v);
}

static void print_pcts(const char *label, const double *v)
{
	char b[32];

	printf("  %-22s", label);
	for (int i = 0; i < 5; i++) {
		fmt_num(b, sizeof(b), v[i], 3, "-");
		printf(" %s %s%s", pct_names[i], b, i < 4 ? " " : "\n");
	}
}

void bm_print_human(const struct bm_result *r, const char *target)
{
	char a[32], b[32], c[32];

	printf("====== %s ======\n", scenario_names[r->sc]);
	if (r->sc == SC_HELD) {
		printf("  %d sessions x %d locks (LOCK key WAIT %d, no TTL), held %.3f s\n",
		       r->sessions, r->locks, options.wait_ms, r->hold_s);
	} else {
		printf("  %d sessions, %u key%s, pipeline %d, hold %d ms: %s%s", r->sessions,
		       r->keys, r->keys == 1 ? "" : "s", r->pipeline, r->hold_ms,
		       options.trylock ? "TRYLOCK key" : "LOCK key",
		       r->sc == SC_SHARED ? " [SHARED]" : "");
		if (r->sc == SC_PERMITS)
			printf(" PERMITS %d", options.permits);
		if (!options.trylock)
			printf(" WAIT %d", options.wait_ms);
		if (options.ttl_ms)
			printf(" TTL %d", options.ttl_ms);
		printf(" / UNLOCK key\n");
	}
	if (options.nmasters)
		printf("  lockd %s, Redis INFO from %d master%s\n", target, options.nmasters,
		       options.nmasters == 1 ? "" : "s");
	else
		printf("  lockd %s (no --masters: no Redis figures)\n", target);
	printf("  %.0f %s in %.3f s: %.2f cycles/s\n", r->cycles,
	       r->sc == SC_HELD ? "grants" : "cycles", r->seconds, isnan(r->cps) ? 0 : r->cps);
	print_pcts("acquire latency (ms):", r->acq);
	if (r->sc == SC_SHARED) {
		print_pcts("writers' latency (ms):", r->wacq);
		printf(
		    "  %.0f readers, %.0f writers (--read-ratio %d): %.0f writer grants, at most "
		    "%.0f holders at once\n",
		    r->readers, r->writers, options.read_ratio, r->writer_grants, r->peak_holders);
	}
	if (r->sc == SC_PERMITS)
		printf("  at most %.0f holders at once (of %d permits)\n", r->peak_holders,
		       options.permits);
	if (r->sc == SC_CONTENDED || r->sc == SC_HANDOFF)
		print_pcts("UNLOCK sent->OK (ms):", r->hsend);
	if (r->sc == SC_HANDOFF) {
		print_pcts("handoff gap (ms):", r->gap);
		fmt_num(a, sizeof(a), r->jain, 3, "-");
		printf("  handoffs %.0f (%.0f before the release reply), fairness (Jain) %s\n",
		       r->handoffs, r->early, a);
	}
	fmt_num(a, sizeof(a), r->cmds_per_grant, 2, "-");
	fmt_num(b, sizeof(b), r->scripts_per_grant, 2, "-");
	printf("  Redis commands per grant: %s (EVALSHA/EVAL %s)\n", a, b);
	fmt_num(a, sizeof(a), r->lockd_us, 1, "-");
	fmt_num(b, sizeof(b), r->masters_us, 1, "-");
	fmt_num(c, sizeof(c), r->client_us, 1, "-");
	printf("  CPU per %s (us): lockd %s, masters %s",
	       r->sc == SC_HELD ? "grant while the locks were taken" : "cycle", a, b);
	if (options.nmasters)
		printf(" (sum of %d)", options.nmasters);
	printf(", client %s\n", c);
	for (int i = 0; i < r->nodes; i++) {
		fmt_num(a, sizeof(a), r->node_cmds[i], 2, "-");
		fmt_num(b, sizeof(b), r->node_scripts[i], 2, "-");
		fmt_num(c, sizeof(c), r->node_us[i], 1, "-");
		printf("    node%d %s:%d: Redis commands per grant %s (EVALSHA/EVAL %s), CPU per "
		       "%s %s us\n",
		       i, options.masters[i].host, options.masters[i].port, a, b,
		       r->sc == SC_HELD ? "grant" : "cycle", c);
	}
	if (r->sc == SC_HELD) {
		if (isnan(r->rss_kb)) {
			printf("  lockd process: unavailable (give --pid for a local lockd)\n");
		} else {
			fmt_num(a, sizeof(a), r->cpu_pct, 2, "-");
			fmt_num(b, sizeof(b),
			        ratio((r->rss_kb - r->rss_idle_kb) * 1024,
			              (double)r->sessions * r->locks),
			        0, "-");
			printf(
			    "  lockd pid %ld: RSS %.0f kB (%.0f kB before the sessions; %s bytes "
			    "per lock, sessions included), peak %.0f kB, CPU %s %% while holding\n",
			    r->pid, r->rss_kb, r->rss_idle_kb, b, r->hwm_kb, a);
		}
		fmt_num(a, sizeof(a), r->renew_cmds_s, 1, "-");
		fmt_num(b, sizeof(b), r->renew_scripts_s, 1, "-");
		printf("  renewals while holding: %s Redis commands/s (EVALSHA/EVAL %s/s)\n", a, b);
	}
	fmt_num(c, sizeof(c), r->client_cpu_pct, 0, "-");
	printf("  timeouts %.0f, LOST events %.0f, fence regressions %.0f, overlaps %.0f, "
	       "client CPU %s %%\n\n",
	       r->timeouts, r->lost, r->regressions, r->overlaps, c);
}

/* A text field after a comma: quoted (RFC 4180) only when it must be, so
 * that an address stays plain. */
static void print_csv_text(const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		printf(",%s", s);
		return;
	}
	printf(",\"");
	for (; *s; s++)
		printf(*s == '"' ? "\"\"" : "%c", *s);
	printf("\"");
}

/* A JSON string: the command line's bytes, with what JSON must escape
 * escaped. */
static void print_json_text(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

/* One list of columns serves the CSV header, the CSV rows and the JSON. */
void bm_print_machine(const struct bm_result *r, int header)
{
	struct {
		char name[48];
		double v;
		int decimals;
		char str[300]; /* a text column (an address) when decimals is -1 */
	} col[64 + 4 * BM_MAX_MASTERS];
	int n = 0;
	char b[48], name[48];

#define COL(nm, val, dec)                                                                          \
	(snprintf(col[n].name, sizeof(col[n].name), "%s", nm), col[n].v = (val),                   \
	 col[n++].decimals = (dec))
	COL("sessions", r->sessions, 0);
	COL("keys", r->keys, 0);
	COL("pipeline", r->pipeline, 0);
	COL("hold_ms", r->sc == SC_HELD ? NAN : r->hold_ms, 0);
	COL("locks_per_session", r->sc == SC_HELD ? r->locks : NAN, 0);
	COL("seconds", r->seconds, 3);
	COL("cycles", r->cycles, 0);
	COL("cycles_per_s", r->cps, 2);
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "acq_%s_ms", pct_cols[i]);
		COL(name, r->acq[i], 3);
	}
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "handoff_%s_ms", pct_cols[i]);
		COL(name, r->gap[i], 3);
	}
	COL("handoffs", r->handoffs, 0);
	COL("handoffs_before_release", r->early, 0);
	COL("jain", r->jain, 4);
	COL("read_ratio", r->read_ratio, 0);
	COL("readers", r->readers, 0);
	COL("writers", r->writers, 0);
	COL("writer_grants", r->writer_grants, 0);
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "writer_acq_%s_ms", pct_cols[i]);
		COL(name, r->wacq[i], 3);
	}
	COL("permits", r->permits, 0);
	COL("peak_holders", r->peak_holders, 0);
	COL("fence_regressions", r->regressions, 0);
	COL("overlaps", r->overlaps, 0);
	COL("timeouts", r->timeouts, 0);
	COL("lost", r->lost, 0);
	COL("redis_cmds_per_grant", r->cmds_per_grant, 3);
	COL("redis_scripts_per_grant", r->scripts_per_grant, 3);
	COL("lockd_rss_kb", r->rss_kb, 0);
	COL("lockd_rss_before_kb", r->rss_idle_kb, 0);
	COL("lockd_cpu_pct", r->cpu_pct, 2);
	COL("renew_cmds_per_s", r->renew_cmds_s, 1);
	COL("renew_scripts_per_s", r->renew_scripts_s, 1);
	COL("client_cpu_pct", r->client_cpu_pct, 1);
	/* added later: at the end, so that CSV columns keep their places */
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "handoff_send_%s_ms", pct_cols[i]);
		COL(name, r->hsend[i], 3);
	}
	COL("lockd_cpu_us_per_cycle", r->lockd_us, 2);
	COL("masters_cpu_us_per_cycle", r->masters_us, 2);
	COL("client_cpu_us_per_cycle", r->client_us, 2);
	/* each master of --masters: as many as were given, so a CSV header
	 * holds for every run with the same --masters */
	for (int i = 0; i < r->nodes; i++) {
		snprintf(col[n].str, sizeof(col[n].str), "%s:%d", options.masters[i].host,
		         options.masters[i].port);
		snprintf(name, sizeof(name), "node%d_addr", i);
		COL(name, NAN, -1);
		snprintf(name, sizeof(name), "node%d_cmds_per_grant", i);
		COL(name, r->node_cmds[i], 3);
		snprintf(name, sizeof(name), "node%d_scripts_per_grant", i);
		COL(name, r->node_scripts[i], 3);
		snprintf(name, sizeof(name), "node%d_cpu_us_per_cycle", i);
		COL(name, r->node_us[i], 2);
	}
#undef COL

	if (options.out == OUT_CSV) {
		if (header) {
			printf("scenario");
			for (int i = 0; i < n; i++)
				printf(",%s", col[i].name);
			printf("\n");
		}
		printf("%s", scenario_names[r->sc]);
		for (int i = 0; i < n; i++) {
			if (col[i].decimals < 0) {
				print_csv_text(col[i].str);
				continue;
			}
			fmt_num(b, sizeof(b), col[i].v, col[i].decimals, "");
			printf(",%s", b);
		}
		printf("\n");
	} else {
		printf("{\"scenario\":\"%s\"", scenario_names[r->sc]);
		for (int i = 0; i < n; i++) {
			printf(",\"%s\":", col[i].name);
			if (col[i].decimals < 0) {
				print_json_text(col[i].str);
				continue;
			}
			fmt_num(b, sizeof(b), col[i].v, col[i].decimals, "null");
			printf("%s", b);
		}
		printf("}\n");
	}
}