/*
 * benchmark_opts: lockd-benchmark's command line, parsed into options
 * (see benchmark_opts.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "benchmark_opts.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

const char *const scenario_names[SC_COUNT] = {"uncontended", "contended", "handoff",
                                              "held",        "shared",    "permits"};

struct bm_opts options;

static void usage(void)
{
	printf("Usage: " BM_PROG " [-h host] [-p port] [-s socket] [-a password] [-c sessions]\n"
	       "       [-n cycles] [-d duration] [-k keys] [--scenario list] [--hold ms]\n"
	       "       [--pipeline n] [--wait ms] [--ttl ms] [--trylock] [--resumable]\n"
	       "       [--locks-per-session n] [--pid pid] [--read-ratio pct] [--permits n]\n"
	       "       [--masters host:port,...]\n"
	       "       [--csv | --json]\n"
	       "Drive a running lockd with many sessions over its text protocol and report\n"
	       "cycles/s, acquire latency percentiles, Redis commands per grant and the CPU\n"
	       "time lockd, the masters and the benchmark spent per cycle.\n"
	       "\n"
	       "  -h host              lockd host (default 127.0.0.1)\n"
	       "  -p port              lockd TCP port (default %d)\n"
	       "  -s socket            lockd Unix socket path (instead of -h/-p)\n"
	       "  -a password          send AUTH password first on every session\n"
	       "  -c sessions          concurrent sessions (default %d)\n"
	       "  -n cycles            stop after this many grants (lock/unlock cycles)\n"
	       "  -d duration          run time: 10 or 10s = seconds, 500ms = milliseconds\n"
	       "                       (default 5 s; held: the hold time, default 30 s;\n"
	       "                       with -n alone, a limit of 600 s)\n"
	       "  -k keys              distinct keys (uncontended: default one per slot;\n"
	       "                       contended, handoff, shared, permits: default 1)\n"
	       "  --scenario list      comma-separated: uncontended, contended, handoff, held,\n"
	       "                       shared, permits (default uncontended,contended,handoff)\n"
	       "  --hold ms            hold each lock this long before UNLOCK (default 0)\n"
	       "  --pipeline n         uncontended: n keys per session, a LOCK/UNLOCK cycle in\n"
	       "                       flight on each; held: LOCKs in flight (default 1)\n"
	       "  --wait ms            LOCK key WAIT ms (default 10000)\n"
	       "  --ttl ms             add TTL ms to every LOCK (not with held)\n"
	       "  --trylock            TRYLOCK instead of LOCK ... WAIT (not with held)\n"
	       "  --resumable          resumable sessions: each sends SESSION first (1.2)\n"
	       "  --locks-per-session n  held: locks per session (default 10)\n"
	       "  --pid pid            lockd's pid, to read its CPU (and, held, its memory)\n"
	       "                       from /proc (default: from STATS, if a local lockd)\n"
	       "  --read-ratio pct     shared: percent of the sessions that read (LOCK key\n"
	       "                       SHARED); the others write (LOCK key) (default 90)\n"
	       "  --permits n          permits: LOCK key PERMITS n (default 4)\n"
	       "  --masters list       Redis masters host:port,... to read INFO commandstats\n"
	       "                       and INFO cpu from before and after each run (figures\n"
	       "                       for each node, and summed)\n"
	       "  --csv                one CSV header, then one row per scenario\n"
	       "  --json               one JSON object per line per scenario\n"
	       "  --help               this help\n"
	       "  --version            print the version\n",
	       DEFAULT_PORT, DEFAULT_SESSIONS);
}

void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, BM_PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '" BM_PROG " --help'.\n");
	exit(2);
}

static long long parse_int(const char *opt, const char *s, long long min, long long max)
{
	char *end;
	long long v;

	errno = 0;
	v = isdigit((unsigned char)s[0]) ? strtoll(s, &end, 10) : 0;
	if (!isdigit((unsigned char)s[0]) || *end != '\0' || errno == ERANGE || v < min || v > max)
		usage_error("%s: expected an integer from %lld to %lld, got '%s'", opt, min, max,
		            s);
	return v;
}

/* "10" and "10s" are seconds, "500ms" milliseconds. */
static int64_t parse_duration(const char *opt, const char *s)
{
	char *end;
	long long v;
	int64_t ms;

	errno = 0;
	v = isdigit((unsigned char)s[0]) ? strtoll(s, &end, 10) : -1;
	if (v < 0 || errno == ERANGE)
		goto bad;
	if (*end == '\0' || strcmp(end, "s") == 0)
		ms = v > 86400 ? -1 : (int64_t)v * 1000;
	else if (strcmp(end, "ms") == 0)
		ms = v > 86400000 ? -1 : v;
	else
		goto bad;
	if (ms >= 1)
		return ms;
bad:
	usage_error("%s: expected a duration from 1ms to 86400s such as 10 (seconds), 10s or "
	            "500ms, got '%s'",
	            opt, s);
}

static void parse_masters(const char *list)
{
	const char *p = list;

	while (1) {
		const char *end = strchr(p, ','), *colon;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[300];
		struct bm_hostport *m;

		if (len == 0 || len >= sizeof(item))
			usage_error("--masters: expected host:port,host:port,..., got '%s'", list);
		if (options.nmasters == BM_MAX_MASTERS)
			usage_error("--masters: at most %d masters", BM_MAX_MASTERS);
		memcpy(item, p, len);
		item[len] = '\0';
		colon = strrchr(item, ':');
		if (!colon || colon == item || colon[1] == '\0')
			usage_error("--masters: '%s' is not host:port", item);
		m = &options.masters[options.nmasters++];
		m->port = (int)parse_int("--masters port", colon + 1, 1, 65535);
		len = (size_t)(colon - item);
		if (len >= 2 && item[0] == '[' && item[len - 1] == ']') { /* [::1]:6379 */
			memcpy(m->host, item + 1, len - 2);
			m->host[len - 2] = '\0';
		} else {
			memcpy(m->host, item, len);
			m->host[len] = '\0';
		}
		if (!end)
			break;
		p = end + 1;
	}
}

static void parse_scenarios(const char *list)
{
	const char *p = list;

	options.nscen = 0;
	while (1) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int sc;

		for (sc = 0; sc < SC_COUNT; sc++)
			if (strlen(scenario_names[sc]) == len &&
			    strncmp(p, scenario_names[sc], len) == 0)
				break;
		if (sc == SC_COUNT)
			usage_error("--scenario: unknown scenario '%.*s' (expected uncontended, "
			            "contended, handoff, held, shared or permits)",
			            (int)len, p);
		for (int i = 0; i < options.nscen; i++)
			if (options.scen[i] == (enum scenario)sc)
				usage_error("--scenario: '%s' is listed twice", scenario_names[sc]);
		options.scen[options.nscen++] = (enum scenario)sc;
		if (!end)
			break;
		p = end + 1;
	}
}

int has_scenario(enum scenario sc)
{
	for (int i = 0; i < options.nscen; i++)
		if (options.scen[i] == sc)
			return 1;
	return 0;
}

void parse_args(int argc, char **argv)
{
	enum {
		O_HOLD = 256,
		O_PIPELINE,
		O_CSV,
		O_JSON,
		O_MASTERS,
		O_SCENARIO,
		O_HELP,
		O_VERSION,
		O_LOCKS,
		O_PID,
		O_WAIT,
		O_TTL,
		O_TRYLOCK,
		O_RESUMABLE,
		O_READ_RATIO,
		O_PERMITS
	};
	static const struct option longs[] = {
	    {"hold", required_argument, NULL, O_HOLD},
	    {"pipeline", required_argument, NULL, O_PIPELINE},
	    {"csv", no_argument, NULL, O_CSV},
	    {"json", no_argument, NULL, O_JSON},
	    {"masters", required_argument, NULL, O_MASTERS},
	    {"scenario", required_argument, NULL, O_SCENARIO},
	    {"help", no_argument, NULL, O_HELP},
	    {"version", no_argument, NULL, O_VERSION},
	    {"locks-per-session", required_argument, NULL, O_LOCKS},
	    {"pid", required_argument, NULL, O_PID},
	    {"wait", required_argument, NULL, O_WAIT},
	    {"ttl", required_argument, NULL, O_TTL},
	    {"trylock", no_argument, NULL, O_TRYLOCK},
	    {"resumable", no_argument, NULL, O_RESUMABLE},
	    {"read-ratio", required_argument, NULL, O_READ_RATIO},
	    {"permits", required_argument, NULL, O_PERMITS},
	    {NULL, 0, NULL, 0},
	};
	int c, keys_set = 0, hold_set = 0, pipeline_set = 0, locks_set = 0, ratio_set = 0,
	       permits_set = 0;

	options.host = "127.0.0.1";
	options.port = DEFAULT_PORT;
	options.sessions = DEFAULT_SESSIONS;
	options.pipeline = 1;
	options.wait_ms = 10000;
	options.locks = 10;
	options.read_ratio = 90;
	options.permits = 4;
	options.scen[0] = SC_UNCONTENDED;
	options.scen[1] = SC_CONTENDED;
	options.scen[2] = SC_HANDOFF;
	options.nscen = 3;
	opterr = 0; /* our own messages, with exit status 2 */
	while ((c = getopt_long(argc, argv, ":h:p:s:a:c:n:d:k:", longs, NULL)) != -1) {
		switch (c) {
		case 'h':
			options.host = optarg;
			break;
		case 'p':
			options.port = (int)parse_int("-p", optarg, 1, 65535);
			break;
		case 's':
			options.sock = optarg;
			break;
		case 'a':
			options.password = optarg;
			break;
		case 'c':
			options.sessions = (int)parse_int("-c", optarg, 1, 100000);
			break;
		case 'n':
			options.cycles = parse_int("-n", optarg, 1, 1000000000000LL);
			break;
		case 'd':
			options.duration_ms = parse_duration("-d", optarg),
			options.duration_set = 1;
			break;
		case 'k':
			options.keys = (int)parse_int("-k", optarg, 1, 10000000), keys_set = 1;
			break;
		case O_HOLD:
			options.hold_ms = (int)parse_int("--hold", optarg, 0, 3600000),
			hold_set = 1;
			break;
		case O_PIPELINE:
			options.pipeline = (int)parse_int("--pipeline", optarg, 1, 1000),
			pipeline_set = 1;
			break;
		case O_CSV:
			options.out = OUT_CSV;
			break;
		case O_JSON:
			options.out = OUT_JSON;
			break;
		case O_MASTERS:
			parse_masters(optarg);
			break;
		case O_SCENARIO:
			parse_scenarios(optarg);
			break;
		case O_HELP:
			usage();
			exit(0);
		case O_VERSION:
			printf(BM_PROG " %s\n", PACKAGE_VERSION);
			exit(0);
		case O_LOCKS:
			options.locks = (int)parse_int("--locks-per-session", optarg, 1, 10000),
			locks_set = 1;
			break;
		case O_PID:
			options.pid = (long)parse_int("--pid", optarg, 1, 4194304);
			break;
		case O_WAIT:
			options.wait_ms = (int)parse_int("--wait", optarg, 0, 2147483647);
			break;
		case O_TTL:
			options.ttl_ms = (int)parse_int("--ttl", optarg, 1, 2147483647);
			break;
		case O_TRYLOCK:
			options.trylock = 1;
			break;
		case O_RESUMABLE:
			options.resumable = 1;
			break;
		case O_READ_RATIO:
			options.read_ratio = (int)parse_int("--read-ratio", optarg, 0, 100),
			ratio_set = 1;
			break;
		case O_PERMITS:
			options.permits = (int)parse_int("--permits", optarg, 1, 65536),
			permits_set = 1;
			break;
		case ':':
			usage_error("option %s needs a value", argv[optind - 1]);
		default:
			if (optopt)
				usage_error("unknown option -%c", optopt);
			usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (options.password && (!options.password[0] || strpbrk(options.password, " \t\r\n")))
		usage_error("-a: the password must be one word (no blanks)");
	if (options.sock && strlen(options.sock) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		usage_error("-s: socket path is longer than %zu bytes",
		            sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
	/* A session must never lock a key it holds (that would be a reentrant
	 * hold, same fence): its pipeline slots need distinct keys. */
	if (keys_set && has_scenario(SC_UNCONTENDED) && options.keys < options.pipeline)
		usage_error("-k %d is less than --pipeline %d: an uncontended session needs a key "
		            "per pipeline slot",
		            options.keys, options.pipeline);
	if (has_scenario(SC_HELD) && (options.ttl_ms || options.trylock))
		usage_error("--%s does not apply to the held scenario (its locks have no TTL)",
		            options.ttl_ms ? "ttl" : "trylock");
	if (has_scenario(SC_HELD) && options.nscen == 1 && (options.cycles || keys_set || hold_set))
		usage_error("%s does not apply to the held scenario (use -c, "
		            "--locks-per-session and -d)",
		            options.cycles ? "-n"
		            : keys_set     ? "-k"
		                           : "--hold");
	if (locks_set && !has_scenario(SC_HELD))
		usage_error("--locks-per-session applies only to the held scenario");
	if (pipeline_set && !has_scenario(SC_UNCONTENDED) && !has_scenario(SC_HELD))
		usage_error("--pipeline applies only to the uncontended and held scenarios");
	if (ratio_set && !has_scenario(SC_SHARED))
		usage_error("--read-ratio applies only to the shared scenario");
	if (permits_set && !has_scenario(SC_PERMITS))
		usage_error("--permits applies only to the permits scenario");
}
