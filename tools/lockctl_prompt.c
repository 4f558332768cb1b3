/* lockctl_prompt: the prompt of lockctl without a COMMAND, when stdin is
 * a terminal. One session; requests typed at the prompt go out one at a
 * time, each reply is printed before the prompt comes back, and LOST
 * events are shown as they arrive, above the line being typed. The line
 * editor is libedit when configure found it, else plain lines; one poll
 * loop over the terminal, the lockd socket and a signalfd. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "config.h"

#ifdef HAVE_LIBEDIT
#include <editline/readline.h>
#endif

#include "lockctl_prompt.h"

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

static void ed_drain(void) {}
#else
static struct {
	char buf[65536];
	size_t len;
} E;

static void ed_init(const char *hist) {}

static void ed_finish(const char *hist) {}

static void ed_history(const char *line) {}

static void ed_up(void)
{
	printf("%s", P.prompt);
	fflush(stdout);
}

static void ed_down(void) {}

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

static void prompt_reply(struct lockd_client *c, const struct lockd_reply *r, void *tag, void *arg)
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

/* "ID@PEER> ": the session and the lockd it is on now. */
static void set_prompt(void)
{
	const char *id = lockd_session_id(P.c);
	snprintf(P.prompt, sizeof(P.prompt), "%s%s%s> ", id, *id ? "@" : "", lockd_peer(P.c));
}

/* An event at the prompt goes above it (RESUMING and RESUMED too: the
 * session is resumed when its connection breaks). */
static void prompt_event(struct lockd_client *c, const struct lockd_event *ev, void *arg)
{
	if (strcmp(ev->name, "RESUMED") == 0)
		set_prompt();
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
int lc_prompt(const struct lc_conn *conn)
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
	struct lockd_opts o = conn->o;
	o.resume = 1;
	/* a console of the protocol: it shows lockd's own LOST events, not
	   liblockd's hold deadlines (a LOCK waiting at the prompt would hold
	   back their heartbeat) */
	o.hold_deadlines = -1;
	int rc = lockd_connect(&o, &P.c);
	if (rc != LOCKD_OK) {
		lc_err("%s", P.c ? lockd_error(P.c) : lockd_strerror(rc));
		lockd_close(P.c);
		close(sfd);
		return rc == LOCKD_EAUTH ? LC_EXIT_REFUSED : lc_conn_exit(rc);
	}
	lockd_set_callbacks(P.c, prompt_reply, prompt_event, NULL);
	set_prompt();

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
