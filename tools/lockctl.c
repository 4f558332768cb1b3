/* lockctl: lockd from the command line, on liblockd.
 *
 *   lockctl [options] COMMAND [ARGS...]   one request, its reply, an exit status
 *   lockctl [options]                     a prompt (stdin a terminal), one session
 *   lockctl [options] run ... KEY -- CMD  CMD under a lock (lockctl_run.c)
 *
 * This file owns the command line, the connection settings (options over
 * LOCKD_* environment variables), the password (never left in argv), the
 * one-shot request and the prompt (libedit, with LOST events shown as they
 * arrive). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "config.h"

#ifdef HAVE_LIBEDIT
#include <editline/readline.h>
#endif

#include "lockctl.h"

#define DEFAULT_REPLY_MS 10000 /* one-shot reply timeout, on top of a WAIT */
#define PASSWORD_MAX     256

enum { OPT_TLS = 256, OPT_CACERT, OPT_CERT, OPT_KEY }; /* long options without a letter */

const char *lc_prog = "lockctl";

void lc_err(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", lc_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

long long lc_number(const char *s, long long min, long long max)
{
	long long v = 0;
	if (!s || !*s)
		return -1;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9' || v > max)
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v < min || v > max ? -1 : v;
}

int lc_conn_exit(int status)
{
	return status == LOCKD_EPROTO ? LC_EXIT_PROTOCOL
	       : status == LOCKD_ETLS ? LC_EXIT_TLS
	                              : LC_EXIT_UNAVAILABLE;
}

int64_t lc_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

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
	    "\n"
	    "  -h host      lockd's host (LOCKD_HOST, default %s)\n"
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
	    "69 lockd cannot be reached, 77 TLS failed. See lockctl(1) for run.\n",
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
 * LOCK without WAIT: none. */
static int reply_timeout(int argc, char **argv)
{
	long long wait = -1;
	for (int i = 1; i + 1 < argc; i++)
		if (strcasecmp(argv[i], "WAIT") == 0)
			wait = lc_number(argv[i + 1], 0, 0x7fffffff);
	if (strcasecmp(argv[0], "LOCK") == 0 && wait < 0)
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

/* ------------------------------------------------------------ the prompt */

static struct {
	struct lockd_client *c;
	int waiting;   /* a request is out; the prompt is down */
	int prompt_up; /* the line editor owns the terminal */
	int quit;      /* EOF at the prompt, or QUIT answered */
	int quit_sent;
	char prompt[360];
} P;

static void prompt_line(char *line);

/* The line editor: libedit when configure found it, else plain lines
 * (the terminal's own editing, no history). */
#ifdef HAVE_LIBEDIT
static void ed_init(const char *hist)
{
	rl_catch_signals = 0; /* signals come through the signalfd */
	rl_readline_name = "lockctl";
	using_history();
	stifle_history(1000);
	if (hist)
		read_history(hist);
}

static void ed_finish(const char *hist)
{
	if (hist)
		write_history(hist);
}

static void ed_history(const char *line)
{
	add_history(line);
}

static void ed_up(void)
{
	rl_callback_handler_install(P.prompt, prompt_line);
}

static void ed_down(void)
{
	rl_callback_handler_remove();
}

static void ed_input(void)
{
	rl_callback_read_char();
}

/* Print line above the prompt; the line being typed stays. */
static void ed_above(const char *line)
{
	/* not rl_copy_text(): libedit's drops the last character */
	char *saved = rl_line_buffer ? strndup(rl_line_buffer, (size_t)rl_end) : NULL;
	int point = rl_point;
	printf("\r\033[K%s\n", line);
	fflush(stdout);
	rl_replace_line(saved ? saved : "", 0);
	rl_point = point;
	rl_forced_update_display();
	free(saved);
}

static void ed_drop_line(void)
{
	rl_replace_line("", 0);
	printf("^C\n");
	rl_forced_update_display();
}

static void ed_drain(void)
{
}
#else
static struct {
	char buf[65536];
	size_t len;
} E;

static void ed_init(const char *hist)
{
}

static void ed_finish(const char *hist)
{
}

static void ed_history(const char *line)
{
}

static void ed_up(void)
{
	printf("%s", P.prompt);
	fflush(stdout);
}

static void ed_down(void)
{
}

/* Lines typed ahead wait here while a reply is awaited. */
static void ed_drain(void)
{
	char *nl;
	while (!P.waiting && !P.quit && (nl = memchr(E.buf, '\n', E.len))) {
		size_t n = (size_t)(nl - E.buf);
		char *line = strndup(E.buf, n);
		memmove(E.buf, nl + 1, E.len - n - 1);
		E.len -= n + 1;
		if (line)
			prompt_line(line);
	}
}

static void ed_input(void)
{
	ssize_t k = read(0, E.buf + E.len, sizeof(E.buf) - 1 - E.len);
	if (k < 0 && errno == EINTR)
		return;
	if (k <= 0) {
		prompt_line(NULL);
		return;
	}
	E.len += (size_t)k;
	ed_drain();
	if (E.len == sizeof(E.buf) - 1) {
		lc_err("line longer than %zu bytes: dropped", E.len);
		E.len = 0;
	}
}

static void ed_above(const char *line)
{
	printf("\n%s\n%s", line, P.prompt);
	fflush(stdout);
}

static void ed_drop_line(void)
{
	printf("\n%s", P.prompt);
	fflush(stdout);
}
#endif

static void prompt_line(char *line)
{
	if (!line) {
		P.quit = 1;
		printf("\n");
		return;
	}
	char *s = line, *e = line + strlen(line);
	while (*s == ' ' || *s == '\t')
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	*e = '\0';
	if (*s) {
		ed_history(s);
		if (lockd_send(P.c, s, -1, NULL) == LOCKD_OK) {
			P.waiting = 1;
			P.quit_sent = strcasecmp(s, "QUIT") == 0;
		}
	}
	free(line);
}

static void prompt_up(void)
{
	if (P.prompt_up || P.waiting || P.quit)
		return;
	ed_up();
	P.prompt_up = 1;
}

static void prompt_down(void)
{
	if (!P.prompt_up)
		return;
	ed_down();
	P.prompt_up = 0;
}

static void prompt_reply(struct lockd_client *c, const struct lockd_reply *r, void *tag,
			 void *arg)
{
	printf("%s\n", r->line);
	for (size_t i = 1; i < r->nlines; i++)
		printf("%s\n", r->lines[i]);
	if (r->kind == LOCKD_R_LIST && r->nlines > 0)
		printf("END\n");
	fflush(stdout);
	P.waiting = 0;
	if (P.quit_sent && r->kind == LOCKD_R_OK)
		P.quit = 1;
}

/* An event at the prompt goes above it. */
static void prompt_event(struct lockd_client *c, const struct lockd_event *ev, void *arg)
{
	if (P.prompt_up) {
		ed_above(ev->line);
		return;
	}
	printf("%s\n", ev->line);
	fflush(stdout);
}

static const char *history_file(char *buf, size_t n)
{
	const char *f = getenv("LOCKCTL_HISTFILE");
	if (f)
		return *f ? f : NULL;
	const char *home = getenv("HOME");
	if (!home || !*home)
		return NULL;
	snprintf(buf, n, "%s/.lockctl_history", home);
	return buf;
}

static int prompt_loop(const struct lc_conn *conn)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGWINCH);
	sigprocmask(SIG_BLOCK, &set, &old);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		lc_err("signalfd: %s", strerror(errno));
		return LC_EXIT_OSERR;
	}
	int rc = lockd_connect(&conn->o, &P.c);
	if (rc != LOCKD_OK) {
		lc_err("%s", P.c ? lockd_error(P.c) : lockd_strerror(rc));
		lockd_close(P.c);
		close(sfd);
		return rc == LOCKD_EAUTH ? LC_EXIT_REFUSED : lc_conn_exit(rc);
	}
	lockd_set_callbacks(P.c, prompt_reply, prompt_event, NULL);
	snprintf(P.prompt, sizeof(P.prompt), "%s> ", lockd_peer(P.c));

	char hbuf[4096];
	const char *hist = history_file(hbuf, sizeof(hbuf));
	ed_init(hist);

	int ex = LC_EXIT_OK;
	while (!P.quit) {
		ed_drain();
		prompt_up();
		struct pollfd pf[3] = {
			{P.waiting ? -1 : 0, POLLIN, 0},
			{lockd_fd(P.c), lockd_want(P.c), 0},
			{sfd, POLLIN, 0},
		};
		if (poll(pf, 3, lockd_timeout_ms(P.c)) < 0 && errno != EINTR) {
			lc_err("poll: %s", strerror(errno));
			ex = LC_EXIT_OSERR;
			break;
		}
		if (pf[2].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGWINCH) {
					/* the line editor reads the size again */
				} else if (si.ssi_signo == SIGINT && P.prompt_up) {
					/* Ctrl-C at the prompt: drop the line, as a shell does */
					ed_drop_line();
				} else {
					prompt_down();
					if (P.waiting)
						lc_err("interrupted while waiting for a reply: the "
						       "session ends and its locks are released");
					ex = 128 + (int)si.ssi_signo;
					break;
				}
			}
		}
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			ed_input();
			if (P.waiting || P.quit)
				prompt_down();
		}
		rc = lockd_step(P.c);
		if (rc != LOCKD_OK) {
			prompt_down();
			if (!P.quit) {
				lc_err("%s", lockd_error(P.c));
				ex = lc_conn_exit(rc);
			}
			break;
		}
	}
	prompt_down();
	ed_finish(hist);
	lockd_close(P.c);
	close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
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
		ex = prompt_loop(&conn);
	} else if (strcmp(argv[0], "run") == 0) {
		ex = lc_run(&conn, argc, argv);
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
