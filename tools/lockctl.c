/* lockctl: lockd from the command line, on liblockd.
 *
 *   lockctl [options] COMMAND [ARGS...]   one request, its reply, an exit status
 *   lockctl [options]                     a prompt (stdin a terminal), one session
 *                                         (lockctl_prompt.c)
 *   lockctl [options] run ... KEY -- CMD  CMD under a lock (lockctl_run.c)
 *   lockctl [options] elect ... NAME VALUE -- CMD, leader NAME, observe NAME
 *                                         leader election (lockctl_elect.c)
 *
 * This file owns the command line, the connection settings (options over
 * LOCKD_* environment variables), the password (never left in argv) and
 * the one-shot request; what the parts share is lockctl_util.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "config.h"

#include "lockctl_elect.h"
#include "lockctl_prompt.h"
#include "lockctl_run.h"
#include "lockctl_util.h"

#define DEFAULT_REPLY_MS 10000 /* one-shot reply timeout, on top of a WAIT */
#define PASSWORD_MAX     256

enum { OPT_TLS = 256, OPT_CACERT, OPT_CERT, OPT_KEY }; /* long options without a letter */

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: lockctl [-h host] [-p port] [-s socket] [-a password|-] [-T ms] COMMAND "
	    "[ARGS...]\n"
	    "       lockctl [options]          (a prompt, when stdin is a terminal)\n"
	    "       lockctl [options] run [-w ms | -n] [-t ttl_ms] [-E code] [-k grace_ms] "
	    "[-v]\n"
	    "               KEY -- CMD [ARGS...]\n"
	    "       lockctl [options] elect [-w ms] [-E code] [-k grace_ms] [-v]\n"
	    "               NAME VALUE -- CMD [ARGS...]\n"
	    "       lockctl [options] leader NAME\n"
	    "       lockctl [options] observe [-v] NAME\n"
	    "\n"
	    "  -h host      lockd's host (LOCKD_HOST, default %s); host,host,...: lockds\n"
	    "               on the same masters, tried in order (host:port takes its own port)\n"
	    "  -p port      lockd's port (LOCKD_PORT, default %d)\n"
	    "  -s socket    lockd's Unix socket instead (LOCKD_SOCKET)\n"
	    "  -a password  AUTH with it (LOCKD_PASSWORD); \"-a -\": read it from stdin.\n"
	    "               Given as an argument, it is briefly visible to ps: prefer the others\n"
	    "  -T ms        how long to wait for a reply (default %d, plus WAIT; LOCK without\n"
	    "               WAIT: no limit)\n"
	    "  --tls        speak TLS (LOCKD_TLS=1); lockd's certificate is verified\n"
	    "  --cacert F   the CAs of lockd's certificate, PEM (LOCKD_CACERT; default: the\n"
	    "               system's)\n"
	    "  --cert F     a client certificate, PEM (LOCKD_CERT), for a listener with a ca\n"
	    "  --key F      its key, PEM (LOCKD_TLS_KEY; default: in --cert's file)\n"
	    "               (--cacert, --cert and --key imply --tls)\n"
	    "  --help, --version\n"
	    "\n"
	    "COMMAND is a lockd request (PING, LOCK, TRYLOCK, UNLOCK, EXTEND, STATUS, HELD,\n"
	    "STATS, ...); it runs in a session of its own, which ends when lockctl exits.\n"
	    "Exit status: 0 OK/PONG/FREE/HELD/lists, 1 BUSY/TIMEOUT/ERR, 2 usage,\n"
	    "69 lockd cannot be reached, 77 TLS failed. See lockctl(1) for run, elect,\n"
	    "leader and observe.\n",
	    LOCKD_DEFAULT_HOST, LOCKD_DEFAULT_PORT, DEFAULT_REPLY_MS);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", lc_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'lockctl --help'.\n");
	return LC_EXIT_USAGE;
}

/* ------------------------------------------------------------ password */

/* One line from fd 0, read a byte at a time so that the rest of stdin is
 * left for CMD; echo off on a terminal. */
static char *password_from_stdin(void)
{
	struct termios old, quiet;
	int tty = isatty(0) && tcgetattr(0, &old) == 0;
	if (tty) {
		fprintf(stderr, "Password: ");
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(0, TCSAFLUSH, &quiet);
	}
	char *pw = calloc(1, PASSWORD_MAX + 2);
	size_t n = 0;
	int ok = pw != NULL;
	while (ok) {
		char ch;
		ssize_t k = read(0, &ch, 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || ch == '\n')
			break;
		if (n > PASSWORD_MAX)
			ok = 0;
		else
			pw[n++] = ch;
	}
	if (tty) {
		tcsetattr(0, TCSAFLUSH, &old);
		fputc('\n', stderr);
	}
	if (ok && n > 0 && pw[n - 1] == '\r')
		pw[--n] = '\0';
	if (!ok || n == 0) {
		if (pw)
			memset(pw, 0, PASSWORD_MAX + 2);
		free(pw);
		lc_err(ok ? "-a -: no password on stdin" : "-a -: password longer than %d bytes",
		       PASSWORD_MAX);
		return NULL;
	}
	return pw;
}

/* ------------------------------------------------------------ one-shot */

static int print_reply(const struct lockd_reply *r)
{
	switch (r->kind) {
	case LOCKD_R_LIST:
		for (size_t i = 0; i < r->nlines; i++)
			printf("%s\n", r->lines[i]);
		return LC_EXIT_OK;
	case LOCKD_R_BUSY:
	case LOCKD_R_TIMEOUT:
	case LOCKD_R_ERR:
		fprintf(stderr, "%s\n", r->line);
		return LC_EXIT_REFUSED;
	default:
		printf("%s\n", r->line);
		return LC_EXIT_OK;
	}
}

static void print_event(struct lockd_client *c, const struct lockd_event *ev, void *arg)
{
	fprintf(stderr, "%s\n", ev->line);
}

/* The default reply timeout of a request: DEFAULT_REPLY_MS plus its WAIT;
 * LOCK or LOCKALL without WAIT: none. LOCKALL's options come after its n
 * keys (a key may spell WAIT). */
static int reply_timeout(int argc, char **argv)
{
	long long wait = -1;
	int all = strcasecmp(argv[0], "LOCKALL") == 0, first = 1;
	if (all) {
		long long n = argc > 1 ? lc_number(argv[1], 0, argc) : -1;
		first = n < 0 ? argc : 2 + (int)n; /* a bad n: lockd answers ERR at once */
	}
	for (int i = first; i + 1 < argc; i++)
		if (strcasecmp(argv[i], "WAIT") == 0)
			wait = lc_number(argv[i + 1], 0, 0x7fffffff);
	if ((strcasecmp(argv[0], "LOCK") == 0 || all) && wait < 0)
		return -1;
	return DEFAULT_REPLY_MS + (int)(wait > 0 ? wait : 0);
}

static int one_shot(const struct lc_conn *conn, int argc, char **argv)
{
	size_t len = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!*a)
			return usage_error("argument %d is empty: lockd cannot read an empty word",
			                   i + 1);
		for (const char *p = a; *p; p++)
			if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
				return usage_error(
				    "argument %d (\"%s\") contains a blank or a line "
				    "end: lockd would read it as several words",
				    i + 1, a);
		len += strlen(a) + 1;
	}
	char *req = malloc(len);
	if (!req) {
		lc_err("out of memory");
		return LC_EXIT_OSERR;
	}
	req[0] = '\0';
	for (int i = 0; i < argc; i++) {
		if (i)
			strcat(req, " ");
		strcat(req, argv[i]);
	}
	struct lockd_client *c;
	int rc = lockd_connect(&conn->o, &c);
	if (rc != LOCKD_OK) {
		lc_err("%s", c ? lockd_error(c) : lockd_strerror(rc));
		lockd_close(c);
		free(req);
		return rc == LOCKD_EAUTH ? LC_EXIT_REFUSED : lc_conn_exit(rc);
	}
	lockd_set_callbacks(c, NULL, print_event, NULL);
	const struct lockd_reply *r;
	int tmo = conn->reply_timeout_ms ? conn->reply_timeout_ms : reply_timeout(argc, argv);
	rc = lockd_call(c, req, tmo, &r);
	free(req);
	int ex;
	if (rc != LOCKD_OK) {
		lc_err("%s", lockd_error(c));
		ex = lc_conn_exit(rc);
	} else {
		ex = print_reply(r);
	}
	lockd_close(c);
	if (fflush(stdout) != 0 && ex == LC_EXIT_OK) {
		lc_err("stdout: %s", strerror(errno));
		ex = LC_EXIT_REFUSED;
	}
	return ex;
}

/* ------------------------------------------------------------ main */

/* Remove an argument's text from the process's command line (ps reads
 * it from there). */
static char *take_secret(char *arg)
{
	char *copy = strdup(arg);
	memset(arg, 0, strlen(arg));
	return copy;
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
	    {"help", no_argument, NULL, 'H'},
	    {"version", no_argument, NULL, 'V'},
	    {"tls", no_argument, NULL, OPT_TLS},
	    {"cacert", required_argument, NULL, OPT_CACERT},
	    {"cert", required_argument, NULL, OPT_CERT},
	    {"key", required_argument, NULL, OPT_KEY},
	    {NULL, 0, NULL, 0},
	};
	const char *cacert = NULL, *cert = NULL, *key = NULL;
	int tls = 0;
	struct lc_conn conn = {.o = LOCKD_OPTS_INIT};
	const char *host = NULL, *port = NULL, *sock = NULL;
	char *password = NULL;
	int from_stdin = 0, opt, ex;

	signal(SIGPIPE, SIG_IGN);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:h:p:s:a:T:", longs, NULL)) != -1) {
		switch (opt) {
		case 'h':
			host = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 's':
			sock = optarg;
			break;
		case 'a':
			free(password);
			password = NULL;
			from_stdin = strcmp(optarg, "-") == 0;
			if (!from_stdin)
				password = take_secret(optarg);
			break;
		case 'T':
			conn.reply_timeout_ms = (int)lc_number(optarg, 1, 0x7fffffff);
			if (conn.reply_timeout_ms < 0)
				return usage_error("-T %s: want milliseconds, 1 to 2147483647",
				                   optarg);
			break;
		case OPT_TLS:
			tls = 1;
			break;
		case OPT_CACERT:
			cacert = optarg;
			break;
		case OPT_CERT:
			cert = optarg;
			break;
		case OPT_KEY:
			key = optarg;
			break;
		case 'H':
			usage(stdout);
			return LC_EXIT_OK;
		case 'V':
			printf("lockctl %s (lockd protocol 1)\n", PACKAGE_VERSION);
			return LC_EXIT_OK;
		case ':':
			if (optopt >= OPT_TLS)
				return usage_error("option %s needs a value", argv[optind - 1]);
			return usage_error("option -%c needs a value", optopt);
		default:
			if (optopt)
				return usage_error("unknown option -%c", optopt);
			return usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (sock && (host || port))
		return usage_error("-s and -h/-p exclude each other");
	if (!sock && !host && !port) {
		const char *e = getenv("LOCKD_SOCKET");
		if (e && *e)
			sock = e;
	}
	if (!sock) {
		if (!host)
			host = getenv("LOCKD_HOST");
		if (!port) {
			port = getenv("LOCKD_PORT");
			if (port && !*port)
				port = NULL;
		}
	}
	conn.o.unix_path = sock;
	conn.o.host = host && *host ? host : NULL;
	if (conn.o.host && strchr(conn.o.host, ',')) {
		/* several lockds on the same masters: tried in turn (liblockd's
		   addresses); run and the prompt resume their session on them */
		conn.o.addresses = conn.o.host;
		conn.o.host = NULL;
	}
	if (port) {
		conn.o.port = (int)lc_number(port, 1, 65535);
		if (conn.o.port < 0)
			return usage_error("port \"%s\": want a number, 1 to 65535", port);
	}
	if (from_stdin) {
		password = password_from_stdin();
		if (!password)
			return LC_EXIT_USAGE;
	} else if (!password) {
		const char *e = getenv("LOCKD_PASSWORD");
		if (e && *e)
			password = strdup(e);
	}
	if (password && strpbrk(password, " \t\r\n")) {
		ex = usage_error("the password must be one word (lockd's AUTH takes one)");
		goto out;
	}
	conn.o.password = password;
	/* TLS: options over LOCKD_TLS, LOCKD_CACERT, LOCKD_CERT, LOCKD_TLS_KEY */
	if (!tls) {
		const char *e = getenv("LOCKD_TLS");
		if (e && *e && strcmp(e, "0") != 0) {
			if (strcmp(e, "1") != 0) {
				ex = usage_error("LOCKD_TLS=%s: want 1 (TLS) or 0", e);
				goto out;
			}
			tls = 1;
		}
	}
	if (!cacert)
		cacert = getenv("LOCKD_CACERT");
	if (!cert)
		cert = getenv("LOCKD_CERT");
	if (!key)
		key = getenv("LOCKD_TLS_KEY"); /* LOCKD_KEY is the lock's key, for run's CMD */
	conn.o.tls_ca = cacert && *cacert ? cacert : NULL;
	conn.o.tls_cert = cert && *cert ? cert : NULL;
	conn.o.tls_key = key && *key ? key : NULL;
	conn.o.tls = tls || conn.o.tls_ca || conn.o.tls_cert || conn.o.tls_key;
	if (conn.o.tls_key && !conn.o.tls_cert) {
		ex = usage_error("--key (LOCKD_TLS_KEY) without --cert (LOCKD_CERT)");
		goto out;
	}
	if (conn.o.tls && !lockd_tls_available()) {
		lc_err("TLS: lockctl was built without TLS (configure --with-tls)");
		ex = LC_EXIT_TLS;
		goto out;
	}

	argc -= optind;
	argv += optind;
	if (argc == 0) {
		if (!isatty(0)) {
			ex = usage_error("no COMMAND, and stdin is not a terminal for a prompt");
			goto out;
		}
		ex = lc_prompt(&conn);
	} else if (strcmp(argv[0], "run") == 0) {
		ex = lc_run(&conn, argc, argv);
	} else if (strcmp(argv[0], "elect") == 0) {
		ex = lc_elect(&conn, argc, argv);
	} else if (strcmp(argv[0], "leader") == 0) {
		ex = lc_leader(&conn, argc, argv);
	} else if (strcmp(argv[0], "observe") == 0) {
		ex = lc_observe(&conn, argc, argv);
	} else {
		ex = one_shot(&conn, argc, argv);
	}
out:
	if (password) {
		memset(password, 0, strlen(password));
		free(password);
	}
	return ex;
}
