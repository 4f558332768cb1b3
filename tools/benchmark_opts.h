/*
 * benchmark_opts: lockd-benchmark's command line (see lockd-benchmark(1)):
 * the scenarios, the output formats and the options every part reads.
 */
#ifndef LOCKD_BENCHMARK_OPTS_H
#define LOCKD_BENCHMARK_OPTS_H

#include <stdint.h>

#include "benchmark_probe.h"

#define DEFAULT_PORT     7390
#define DEFAULT_SESSIONS 16

enum scenario {
	SC_UNCONTENDED, /* every session cycles on keys of its own */
	SC_CONTENDED,   /* sessions take turns on -k keys (default 1) */
	SC_HANDOFF,     /* contended, plus release-to-grant gaps and fairness */
	SC_HELD,        /* many watchdog locks held for -d: lockd's cost at rest */
	SC_SHARED,      /* contended, readers (SHARED) and writers mixed (--read-ratio) */
	SC_PERMITS,     /* contended, each LOCK takes one of --permits permits */
	SC_COUNT
};
extern const char *const scenario_names[SC_COUNT];

enum output {
	OUT_HUMAN, /* a block of text per scenario */
	OUT_CSV,   /* a header, then a row per scenario */
	OUT_JSON   /* an object per line per scenario */
};

struct bm_opts {
	const char *host, *sock, *password;
	int port, sessions, keys, hold_ms, pipeline, wait_ms, ttl_ms, trylock, locks;
	int resumable;           /* --resumable: every session sends SESSION first (protocol 1.2) */
	int read_ratio, permits; /* shared: % of sessions that read; permits: n */
	long long cycles;
	int64_t duration_ms;
	int duration_set;
	long pid;
	enum output out;
	struct bm_hostport masters[BM_MAX_MASTERS];
	int nmasters;
	enum scenario scen[SC_COUNT];
	int nscen;
};
extern struct bm_opts options;

/* Fills options from the command line; a bad one exits with status 2. */
void parse_args(int argc, char **argv);
/* A message about the command line on stderr, then exit(2). */
void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
int has_scenario(enum scenario sc);

#endif
