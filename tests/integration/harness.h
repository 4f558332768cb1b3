/* harness: real redis-server masters and a real lockd on 127.0.0.1 for the
 * end-to-end tests, plus a line client for the lockd protocol, a tiny RESP
 * client for the masters, and the other processes and files a test uses.
 *
 * Every test runs in its own process (check's fork mode). The processes a
 * test starts (masters, lockds, h_spawn()) die with it (PR_SET_PDEATHSIG),
 * and the fixture teardown stops them in order when the test passes. Each
 * test gets its own directory under the run directory that main() creates
 * and removes. */
#ifndef LOCKD_TEST_HARNESS_H
#define LOCKD_TEST_HARNESS_H

#include <check.h>
#include <stddef.h>
#include <sys/types.h>

#define H_MAX_MASTERS 12
#define H_MAX_LOCKDS  3
#define H_TMO         2000 /* default reply timeout, ms */
/* Time bounds in tests. A test asserts the client contract, not a speed:
 * an upper bound on how long something takes is a service level of
 * PROTOCOL.md ("Service levels": handoff on one lockd 100 ms, to another
 * lockd 500 ms, a lapsed lease's waiter 1 s after it ran out, a session's
 * locks released 1 s after its end, no reply delayed by more than
 * redis.timeout_ms + 500 ms) or a documented setting, plus H_LOADED; a
 * speed that no contract promises is printed, and measured by
 * lockd-benchmark, never asserted. The tests run on 2-core machines busy
 * with other work (.ci/run, several builds at once), where lockd, the
 * masters and the test wait for a CPU: H_LOADED is that headroom. Volume
 * tests, whose work grows with that load, allow a multiple of the level.
 *
 * Lower bounds (nothing before X) and safety bounds (LOST before the
 * validity ends, a fence, no overlap) get no headroom: they hold on any
 * machine. H_JITTER is only the time to deliver a line lockd already
 * sent (a LOST at the validity's end), in those bounds. */
#define H_LOADED 500
#define H_JITTER 150
/* redis.timeout_ms unless h_opts.timeout_ms says otherwise: how long a
 * healthy master may take to answer before it does not count. On a loaded
 * machine a master can miss 50 ms: UNLOCK then answers ERR QUORUM, LOCKs
 * retry until their WAIT ends (a flaky test, not a lockd fault). Less
 * than a third of the shortest lease_ms of the tests (600), as lockd
 * requires. */
#define H_REDIS_TMO 150
/* the bound on any reply with healthy or failed masters (PROTOCOL.md,
 * "Service levels": redis.timeout_ms + 500 ms), at H_REDIS_TMO, loaded */
#define H_SLOW_LIMIT (H_REDIS_TMO + 500 + H_LOADED)

/* ---- time ---- */
double h_now_ms(void); /* monotonic clock, ms */
void h_sleep_ms(int ms);

/* ---- the run (main) ---- */
/* Set up the run directory; returns 0, or -1 with a message printed. */
int h_run_init(void);
/* Print the lockd log tails of the tests that left their directory
 * behind (failed ones), then remove the run directory. */
void h_run_finish(int failed);
/* Path of redis-server to use ("" when none was found). */
const char *h_redis_server(void);
/* Name filter from $LOCKD_TEST (comma separated test names; empty: all). */
int h_selected(const char *name);
#define H_ADD(tc, t)                                                                               \
	do {                                                                                       \
		if (h_selected((t)->name))                                                         \
			tcase_add_test((tc), (t));                                                 \
	} while (0)

/* ---- the fixture ---- */
void h_setup(void);
void h_teardown(void);
/* This test's directory (created on first use). */
const char *h_dir(void);

/* ---- processes the test starts itself ---- */
struct h_spawn {
	const char *dir;        /* run there (NULL: here) */
	const char *out;        /* stdout appended to this file (NULL: /dev/null) */
	const char *err;        /* stderr appended to this file (NULL: where stdout goes) */
	const char *in;         /* these bytes on stdin, through a pipe (NULL: /dev/null) */
	const char *tty;        /* a terminal: stdin, stdout and stderr, and the controlling
	                           terminal of a session of its own (out, err, in unused) */
	const char *const *env; /* "NAME=value" set, "NAME=" unset; NULL-terminated */
	int nofile;             /* > 0: RLIMIT_NOFILE (soft and hard) */
};
/* fork and exec argv[0] with argv as o says (NULL: all defaults). It dies
 * with the test process, and the teardown kills it unless h_reap() or
 * h_kill() saw it end. */
pid_t h_spawn(char *const argv[], const struct h_spawn *o);
/* waitpid, bounded: the wait status, or -1 while it still runs after
 * timeout_ms. Fails the test if pid is not a child. */
int h_reap(pid_t pid, int timeout_ms);
/* SIGKILL and reap. */
void h_kill(pid_t pid);
/* A wait status in words: "exit 3", "killed by signal 9", "still running" (-1). */
const char *h_status_str(int st);
/* Run argv to its end with o's dir, in and env (its output goes to files
 * of the test's directory); fails the test if it runs longer than
 * timeout_ms. Returns the wait status; *out and *err (malloc'd; either
 * may be NULL) what it printed. */
int h_run(char *const argv[], const struct h_spawn *o, int timeout_ms, char **out, char **err);
/* The absolute path of program name as built in $top_builddir ("lockd",
 * "lockctl"); fails the test if it is missing. */
const char *h_built(const char *name);
/* A TCP port of 127.0.0.1 free a moment ago, not handed out before in this test. */
int h_free_port(void);
/* A socket connected to 127.0.0.1:port, or -1 (errno set). */
int h_connect_tcp(int port);
/* A socket connected to the Unix socket path, or -1 (errno set). */
int h_connect_unix(const char *path);

/* ---- lockctl as a child ---- */
struct h_lockctl {
	pid_t pid;
	char out[352], err[352]; /* its stdout and stderr, files of the test's directory */
};
/* Start lockctl with args (NULL-terminated), its LOCKD_ variables unset. */
void h_lockctl_spawn(struct h_lockctl *p, const char *const *args);
/* Its exit status (128 + signal for a signal), or -1 while it runs after
 * timeout_ms. */
int h_lockctl_wait(struct h_lockctl *p, int timeout_ms);

/* ---- files ---- */
/* Size of a file (0 when missing). */
long h_file_size(const char *path);
/* Lines of path, from byte offset from on, that contain a (and b unless
 * NULL). */
int h_file_count(const char *path, long from, const char *a, const char *b);
/* The whole file as a string (malloc'd), NULL if it cannot be read. */
char *h_slurp(const char *path);
/* Replace the file at path in one step (write a sibling, rename). */
void h_put_file(const char *path, const char *text);
/* s with the first occurrence of old replaced by new (malloc'd); old must occur. */
char *h_replace1(const char *s, const char *old, const char *new);
/* The first line of path, from byte offset from on, that contains a (and
 * b unless NULL), malloc'd; NULL when there is none. */
char *h_log_find(const char *path, long from, const char *a, const char *b);
/* The same, polled until such a line comes or timeout_ms passed. */
char *h_log_wait(const char *path, long from, const char *a, const char *b, int timeout_ms);

/* ---- redis masters ---- */
#define H_MASTER_EXTRA 10 /* redis-server arguments of a master beyond the harness's own */
struct h_master {
	int port;
	pid_t pid; /* 0 when not running */
	int stopped;
	/* more redis-server arguments (a cluster node's), given again at each
	 * restart; NULL-terminated, malloc'd */
	char *extra[H_MASTER_EXTRA + 1];
};
int h_nmasters(void);
struct h_master *h_master(int i);
/* Start n masters on free ports (they count as masters 0..n-1). */
void h_masters_start(int n);
/* Start one more master (index returned); not yet listed in any config. */
int h_master_add(void);
/* The same with more redis-server arguments (NULL-terminated, at most
 * H_MASTER_EXTRA; copied), which a restart gives again. */
int h_master_add_args(const char *const *extra);
void h_master_kill(int i); /* kill -9 and reap */
/* REPLICAOF: master `replica` follows master `primary`; returns once its
 * link is up and the primary lists it online (fails after 5 s). */
void h_replicaof(int replica, int primary);
void h_master_stop(int i);    /* SIGSTOP */
void h_master_cont(int i);    /* SIGCONT */
void h_master_restart(int i); /* kill -9 if running, start again on the same port */

/* RESP client. h_redis(i, "PTTL", "lockd:k", NULL) runs one command on
 * master i over a fresh connection and returns the reply as a malloc'd
 * string: status text, "-" + error text, integer digits, bulk content,
 * "(nil)", or array elements each followed by '\n'. NULL when the master
 * cannot be reached or does not answer within timeout. */
char *h_redis(int i, ...) __attribute__((sentinel));
/* Same, integer reply expected (fails the test otherwise). */
long long h_redis_int(int i, ...) __attribute__((sentinel));
/* Count the masters (of the first n) on which PTTL key > 0. */
int h_masters_with_pttl(int n, const char *rkey, long long *min_pttl, long long *max_pttl);

struct rconn;
struct rconn *rc_open(int port, int timeout_ms); /* NULL on failure */
/* NULL-terminated argument list; returns malloc'd reply or NULL. */
char *rc_cmd(struct rconn *r, ...) __attribute__((sentinel));
char *rc_cmdv(struct rconn *r, int argc, const char **argv);
void rc_close(struct rconn *r);

/* ---- lockd ---- */
struct h_opts {
	int lease_ms;            /* 0: 3000 */
	int timeout_ms;          /* 0: H_REDIS_TMO (redis.timeout_ms) */
	const char *password;    /* NULL: none */
	const char *redis_extra; /* lines added to the redis: section ("  key: v\n") */
	const char *locks_extra; /* lines added to the locks: section */
	const char *limits;      /* lines of a limits: section */
	const char *top_extra;   /* top-level lines */
	int nmasters;            /* masters listed: 0 = all started */
	int no_quorum_wait;      /* do not wait until a lock can be granted */
	int log_debug;           /* log_level: debug */
	const char *tls;         /* "cert: F, key: F[, ca: F]": one more listener, TLS */
	int nofile;              /* >0: lockd's RLIMIT_NOFILE (soft and hard) */
	const int *via;          /* NULL, or per master a port to reach it through
	                            (h_proxy_port), 0 for its own */
	const char *bin;         /* NULL: the lockd built here; else this binary (another
	                            build, for a rolling upgrade) */
	const char *masters;     /* NULL, or the items of redis.masters as YAML flow
	                            text (h_sentinel_entry), instead of the masters */
};
struct h_lockd {
	int port;
	pid_t pid;
	char sock[352];
	char conf[352];
	char log[352];
	int tls_port; /* the TLS listener of h_opts.tls, or 0 */
};
int h_nlockds(void);
struct h_lockd *h_lockd(int idx);
/* Start a lockd on the masters started so far; returns its index. */
int h_lockd_start(const struct h_opts *o);
/* 3 masters and one lockd (o may be NULL). */
void h_std(const struct h_opts *o);
/* Send sig to lockd idx. */
void h_lockd_signal(int idx, int sig);
/* Wait (bounded) for lockd idx to exit; returns its wait status, -1 on
 * timeout. */
int h_lockd_wait(int idx, int timeout_ms);
int h_lockd_alive(int idx);
/* Start lockd idx again, as systemctl restart does after its SIGTERM: the
 * same configuration, port and socket (it must have exited: h_lockd_wait).
 * Returns once it answers and grants (the ms that took). No password. */
int h_lockd_restart(int idx);
/* Print the tail of lockd idx's log to stderr. */
void h_lockd_log_tail(int idx, int lines);
/* Write text as lockd idx's configuration and send SIGHUP; returns the
 * size of its log before the signal (off for the two below). */
long h_lockd_reload(int idx, const char *text);
/* Has lockd idx logged "reloaded" since log offset off? A "reload failed"
 * fails the test. */
int h_lockd_reloaded(int idx, long off);
/* Wait (bounded) until it has. */
void h_lockd_wait_reloaded(int idx, long off, int timeout_ms);

/* ---- a Sentinel-managed primary (harness_sentinel.c) ----
 * A primary and one replica (masters of the harness, so they die with the
 * test and h_master_kill works on them) and 3 Sentinels (h_spawn'd) that
 * monitor it with quorum 2, down-after-milliseconds 1000 and a short
 * failover-timeout. */
struct h_sentinel {
	const char *name; /* the monitored name */
	int primary;      /* master index of the primary at the start */
	int replica;      /* master index of its replica */
	int port[3];      /* the Sentinels */
	pid_t pid[3];
};
/* The Sentinel program ("redis-sentinel", else "redis-server" run with
 * --sentinel); "" when there is none: the test skips. */
const char *h_sentinel_bin(void);
/* Start it all and wait until the Sentinels know each other and the
 * replica (bounded); fails the test otherwise. */
void h_sentinel_start(struct h_sentinel *s, const char *name);
/* "{sentinel: [...], name: NAME}", for h_opts.masters. */
void h_sentinel_entry(const struct h_sentinel *s, char *out, size_t len);
/* The port of the primary the Sentinels name now (asking the first that
 * answers), or 0. */
int h_sentinel_primary_port(const struct h_sentinel *s);
/* The master index listening on port, or -1. */
int h_master_at(int port);
/* name found as an executable in PATH: 1 with its path in out, else 0. */
int h_in_path(const char *name, char *out, size_t len);

/* ---- a Redis Cluster (harness_cluster.c) ----
 * Nodes are masters of the harness started with cluster mode on
 * (cluster-node-timeout 1000, the bus on a free port of its own, their
 * nodes.conf in the test's directory, repl-diskless-sync-delay 0, kept
 * across h_master_restart),
 * joined by `redis-cli --cluster create` with the replicas it assigns. */
struct h_cluster {
	int first; /* master index of the first node */
	int n;     /* nodes: masters first .. first + n - 1 */
	int primaries;
};
/* Start primaries * (1 + replicas) nodes and wait (bounded) until every
 * node says cluster_state:ok, knows all the others with their roles (a
 * primary that does not know its replica yet ignores its CLUSTER
 * FAILOVER) and every replica is synced; fails the test
 * otherwise. 0, or -1 (nothing started) when redis-cli is missing: the
 * test skips. */
int h_cluster_start(struct h_cluster *c, int primaries, int replicas);

/* ---- a proxy in front of a master (harness_proxy.c) ----
 * It can hold back what the connections open now send, and deliver it
 * later, after lockd gave up on them: the late arrival of what a
 * partition kept on its way, made exact. A child process that dies with
 * the test. */
struct h_proxy;
/* A proxy on a free port of 127.0.0.1 to 127.0.0.1:port. */
struct h_proxy *h_proxy_start(int port);
int h_proxy_port(const struct h_proxy *p);
/* The connections open now keep what their clients send from now on; a
 * client that closes leaves its server side open. Returns how many. */
long h_proxy_hold(struct h_proxy *p);
/* What they kept goes to the server, in order; they pass bytes again, and
 * those whose client left close a second later. Returns the bytes sent. */
long h_proxy_release(struct h_proxy *p);
void h_proxy_stop(struct h_proxy *p);

/* ---- lockd protocol client (harness_client.c) ----
 * A session is a liblockd client (lockd/client.h): requests go out through
 * lockd_send(), replies and events come back through its callbacks into a
 * queue of lines in the order lockd sent them (a HELD or STATS reply as
 * its lines, END last). liblockd checks every line: CR LF at its end, no
 * NUL byte, no event inside a multi-line reply; a fault fails the test.
 * A line that answers no request out (a greeting, the reply to bytes
 * written to fd) is queued as it comes. Bytes that are not requests as
 * liblockd sends them (malformed ones, unfinished lines) go out as they
 * are and make the session raw: all its lines are then queued as they
 * come (checked all the same), for the test to pair with what it sent. */
struct cl_qline;
struct lockd_client;
struct cl {
	int fd;    /* the socket: for poll() and socket options, not to read */
	int eof;   /* lockd closed the connection or reset it */
	int nlost; /* LOST events cl_reply() passed over; the first 32: */
	char lost[32][320];
	/* the harness's own */
	struct lockd_client *lc;
	int raw;            /* all lines are queued as they come */
	int cut;            /* lockd closed in the middle of a line */
	struct cl_qline *q; /* lines read, not taken yet */
	size_t qhead, qlen, qcap;
	char *line;      /* the line taken last */
	char fault[400]; /* what a callback found wrong */
};
struct cl *cl_tcp_at(const char *file, int line, int port);
struct cl *cl_unix_at(const char *file, int line, const char *path);
#define cl_tcp(port)  cl_tcp_at(__FILE__, __LINE__, (port))
#define cl_unix(path) cl_unix_at(__FILE__, __LINE__, (path))
/* Connect to lockd 0 over TCP. */
#define cl_open() cl_tcp(h_lockd(0)->port)
void cl_close(struct cl *c);
/* Close c but keep its socket: returns it, blocking again (the caller's). */
int cl_take_fd(struct cl *c);
void cl_shutdown_wr(struct cl *c);
/* Why c ended (liblockd's words), "" while it is open. */
const char *cl_error(const struct cl *c);
/* Lines read and not taken yet. */
size_t cl_queued(const struct cl *c);
/* Send bytes (all of them, bounded in time): requests through liblockd
 * when they are whole lines it would send as they are, else raw. */
void cl_sendn_at(const char *file, int line, struct cl *c, const void *p, size_t n);
#define cl_sendn(c, p, n) cl_sendn_at(__FILE__, __LINE__, (c), (p), (n))
#define cl_send(c, s)     cl_sendn_at(__FILE__, __LINE__, (c), (s), strlen(s))
/* Next line without its "\r\n" (a line without it fails the test); NULL
 * on timeout or EOF (then c->eof is set). The pointer stays valid until
 * the next read on c. */
const char *cl_line_at(const char *file, int line, struct cl *c, int timeout_ms);
#define cl_line(c, t) cl_line_at(__FILE__, __LINE__, (c), (t))
/* Next line that is not an event (LOST, ELECTED, NOLEADER: recorded in c->lost). */
const char *cl_reply_at(const char *file, int line, struct cl *c, int timeout_ms);
#define cl_reply(c, t) cl_reply_at(__FILE__, __LINE__, (c), (t))
/* Send request + "\n", return the reply (NULL: none within timeout). */
const char *cl_cmd_at(const char *file, int line, struct cl *c, const char *req, int timeout_ms);
#define cl_cmd(c, req, t) cl_cmd_at(__FILE__, __LINE__, (c), (req), (t))
/* Assert the exact reply to req. */
void cl_expect_at(const char *file, int line, struct cl *c, const char *req, const char *exp);
#define cl_expect(c, req, exp) cl_expect_at(__FILE__, __LINE__, (c), (req), (exp))
/* Assert the reply to req begins with prefix. */
void cl_expect_prefix_at(const char *file, int line, struct cl *c, const char *req,
                         const char *prefix);
#define cl_expect_prefix(c, req, p) cl_expect_prefix_at(__FILE__, __LINE__, (c), (req), (p))
/* Assert the next reply (already requested) exactly / by prefix. */
void cl_want_at(const char *file, int line, struct cl *c, const char *exp, int timeout_ms);
#define cl_want(c, exp, t) cl_want_at(__FILE__, __LINE__, (c), (exp), (t))
void cl_want_prefix_at(const char *file, int line, struct cl *c, const char *prefix,
                       int timeout_ms);
#define cl_want_prefix(c, p, t) cl_want_prefix_at(__FILE__, __LINE__, (c), (p), (t))
/* Parse "OK <fence>" (fence a positive integer) or fail. */
unsigned long long h_fence_at(const char *file, int line, const char *reply);
#define h_fence(r) h_fence_at(__FILE__, __LINE__, (r))
/* Send a LOCK/TRYLOCK request and assert an "OK fence" reply; returns it. */
unsigned long long cl_lock_at(const char *file, int line, struct cl *c, const char *req);
#define cl_lock(c, req) cl_lock_at(__FILE__, __LINE__, (c), (req))
/* Next reply must be "OK fence"; returns it. */
unsigned long long cl_want_ok_at(const char *file, int line, struct cl *c, int timeout_ms);
#define cl_want_ok(c, t) cl_want_ok_at(__FILE__, __LINE__, (c), (t))
/* Send req; returns its reply (malloc'd) and in *ms how long it took.
 * Fails the test without a reply within 5 s. */
char *cl_timed_at(const char *file, int line, struct cl *c, const char *req, double *ms);
#define cl_timed(c, req, ms) cl_timed_at(__FILE__, __LINE__, (c), (req), (ms))
/* Assert that no line arrives for ms (events are recorded, other lines fail). */
void cl_silence_at(const char *file, int line, struct cl *c, int ms);
#define cl_silence(c, ms) cl_silence_at(__FILE__, __LINE__, (c), (ms))
/* Assert EOF (or a reset) within timeout, with no line before it. */
void cl_want_eof_at(const char *file, int line, struct cl *c, int timeout_ms);
#define cl_want_eof(c, t) cl_want_eof_at(__FILE__, __LINE__, (c), (t))
/* STATUS key -> parsed: returns 0 for FREE, 1 for HELD (ttl, waiters set). */
int cl_status_at(const char *file, int line, struct cl *c, const char *key, long long *ttl,
                 long long *waiters);
#define cl_status(c, k, ttl, w) cl_status_at(__FILE__, __LINE__, (c), (k), (ttl), (w))
/* Poll STATUS key (bounded by timeout) until its waiters count is n. */
void cl_wait_waiters_at(const char *file, int line, struct cl *c, const char *key, long long n,
                        int timeout_ms);
#define cl_wait_waiters(c, k, n, t) cl_wait_waiters_at(__FILE__, __LINE__, (c), (k), (n), (t))
/* STATS as name/value pairs: returns the value of name, or NULL. The
 * whole reply is checked (STAT lines then END). */
char *cl_stat_at(const char *file, int line, struct cl *c, const char *name);
#define cl_stat(c, n) cl_stat_at(__FILE__, __LINE__, (c), (n))
/* STATS now: name must have value. */
void cl_expect_stat_at(const char *file, int line, struct cl *c, const char *name,
                       const char *value);
#define cl_expect_stat(c, n, v) cl_expect_stat_at(__FILE__, __LINE__, (c), (n), (v))

/* Poll STATS (bounded) until name has value. */
void cl_wait_stat_at(const char *file, int line, struct cl *c, const char *name, const char *value,
                     int timeout_ms);
#define cl_wait_stat(c, n, v, t) cl_wait_stat_at(__FILE__, __LINE__, (c), (n), (v), (t))
/* HELD -> the keys, sorted, joined by one space (malloc'd; "" for none).
 * Every line is checked: "KEY key fence holds ttl_ms", then END. */
char *cl_held_keys_at(const char *file, int line, struct cl *c);
#define cl_held_keys(c) cl_held_keys_at(__FILE__, __LINE__, (c))
#define cl_expect_held(c, keys)                                                                    \
	do {                                                                                       \
		char *hk_ = cl_held_keys(c);                                                       \
		ck_assert_str_eq(hk_, (keys));                                                     \
		free(hk_);                                                                         \
	} while (0)

/* Fail the test at a caller's location. */
#define h_fail_at(file, line, ...) _ck_assert_failed((file), (line), "Failed", __VA_ARGS__)
/* Bytes in printable form, for failure messages ("\\r", "\\xNN"; four
 * rotating static buffers). */
const char *h_esc(const void *p, size_t n);
/* Send all n bytes within timeout_ms; 0, or -1 (errno set). */
int h_send_all(int fd, const void *p, size_t n, int timeout_ms);

/* ---- many sessions in one poll loop (soak_run.c, test_shared.c) ---- */
/* Read what c's socket has now, without waiting; returns the lines read
 * (sets c->eof at EOF or a reset). */
int cl_fill_at(const char *file, int line, struct cl *c);
#define cl_fill(c) cl_fill_at(__FILE__, __LINE__, (c))
/* The next line already read (as cl_line() gives it), or NULL: no I/O. */
const char *cl_take_line_at(const char *file, int line, struct cl *c);
#define cl_take_line(c) cl_take_line_at(__FILE__, __LINE__, (c))

/* Test case builders (one per file). */
TCase *tc_harness(void);  /* test_faults.c */
TCase *tc_protocol(void); /* test_protocol.c */
TCase *tc_errors(void);   /* test_protocol.c */
TCase *tc_locks(void);    /* test_locks.c */
TCase *tc_waiters(void);  /* test_waiters.c */
TCase *tc_faults(void);   /* test_faults.c */
TCase *tc_service(void);  /* test_service.c */
TCase *tc_soak(void);     /* test_soak.c */
TCase *tc_safety(void);   /* test_safety.c */
TCase *tc_restarts(void); /* test_restarts.c */
TCase *tc_hostile(void);  /* test_hostile.c */
TCase *tc_election(void); /* test_election.c */
TCase *tc_shared(void);   /* test_shared.c */
TCase *tc_lockctl(void);  /* test_lockctl.c */
TCase *tc_sessions(void); /* test_sessions.c */
TCase *tc_adopt_fence(void);
TCase *tc_resume_moves(void);     /* test_resume_moves.c */
TCase *tc_hostile_sessions(void); /* test_hostile_sessions.c */
TCase *tc_hostile_output(void);   /* test_hostile_output.c */
TCase *tc_late_writes(void);      /* test_late_writes.c */
TCase *tc_lockctl_resume(void);   /* test_lockctl_resume.c */
TCase *tc_sentinel(void);         /* test_sentinel.c */
TCase *tc_lockctl_elect(void);    /* test_lockctl_elect.c */
TCase *tc_hostile_elect(void);    /* test_hostile_elect.c */
TCase *tc_who(void);              /* test_who.c */
TCase *tc_lockall(void);          /* test_lockall.c */
TCase *tc_delay(void);            /* test_delay.c */
TCase *tc_cluster_live(void);     /* test_cluster_live.c */
TCase *tc_cluster_router(void);   /* test_cluster_router.c */
TCase *tc_cluster_events(void);   /* test_cluster_events.c */
TCase *tc_cluster_scripts(void);  /* test_cluster_scripts.c */
TCase *tc_cluster_master(void);   /* test_cluster_master.c */
TCase *tc_cluster_lockd(void);    /* test_cluster_lockd.c */
TCase *tc_cluster_handoff(void);  /* test_cluster_handoff.c */
TCase *tc_upgrade(void);          /* test_upgrade.c */
TCase *tc_layout_switch(void);    /* test_layout_switch.c */

#endif
