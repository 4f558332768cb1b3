/* router_fix: see router_fix.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router_fix.h"

struct h_cluster C;
struct event_base *base;
static struct event *tick;
struct csr_router *rt;

void call_cb(const redisReply *r, void *arg)
{
	struct call *c = arg;
	ck_assert_msg(!c->done, "a second callback for one call");
	static long seq;
	c->done = 1;
	c->seq = ++seq;
	c->at_ms = h_now_ms();
	c->null = r == NULL;
	if (r) {
		c->type = r->type;
		c->integer = r->integer;
		if (r->str)
			snprintf(c->str, sizeof(c->str), "%.*s", (int)r->len, r->str);
	}
}

static void tick_cb(evutil_socket_t fd, short what, void *arg) {}

void loop_start(void)
{
	base = event_base_new();
	ck_assert(base);
	tick = event_new(base, -1, EV_PERSIST, tick_cb, NULL);
	ck_assert(tick);
	event_add(tick, &(struct timeval){0, 10000});
}

void loop_end(void)
{
	event_free(tick);
	event_base_free(base);
	base = NULL;
}

/* Run the loop for ms (it returns at least every 10 ms). */
void run_ms(int ms)
{
	for (double t0 = h_now_ms(); h_now_ms() - t0 < ms;)
		event_base_loop(base, EVLOOP_ONCE);
}

/* Run the loop until *flag or ms passed; 1 if *flag. */
int run_until(const int *flag, int ms)
{
	for (double t0 = h_now_ms(); !*flag && h_now_ms() - t0 < ms;)
		event_base_loop(base, EVLOOP_ONCE);
	return *flag;
}

int64_t deadline_in(int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 + (int64_t)ms * 1000;
}

/* Send argv (NULL-terminated) for key's slot, deadline in ms, as a
 * command or as a write (csr_write: counted once its WAIT answers). */
struct csr_req *send_call(struct call *c, const char *key, int deadline_ms, const char *const *argv,
                          int write)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	memset(c, 0, sizeof(*c));
	c->deadline_ms = h_now_ms() + deadline_ms;
	struct csr_req *q = (write ? csr_write : csr_command)(rt, csl_keyslot(key, strlen(key)),
	                                                      deadline_in(deadline_ms), call_cb, c,
	                                                      argc, (const char **)argv, NULL);
	ck_assert(q != NULL);
	return q;
}

struct csr_req *send_cmd(struct call *c, const char *key, int deadline_ms, const char *const *argv)
{
	return send_call(c, key, deadline_ms, argv, 0);
}

struct csr_req *send_write(struct call *c, const char *key, int deadline_ms,
                           const char *const *argv)
{
	return send_call(c, key, deadline_ms, argv, 1);
}

/* One call, run to its end. */
void call_sync(struct call *c, const char *key, int deadline_ms, const char *const *argv)
{
	send_cmd(c, key, deadline_ms, argv);
	ck_assert_msg(run_until(&c->done, deadline_ms + 2000), "%s %s: no callback", argv[0], key);
}

struct csr_router *new_router(const char *password, int refresh_ms)
{
	return new_router_w(password, refresh_ms, 0, NULL, NULL);
}

struct csr_router *new_router_w(const char *password, int refresh_ms, int wait_replicas,
                                csr_event_fn *on_event, void *event_arg)
{
	static char seed[32];
	snprintf(seed, sizeof(seed), "127.0.0.1:%d", h_master(C.first)->port);
	const char *seeds[] = {seed};
	struct csr_cfg cfg = {.seeds = seeds,
	                      .n_seeds = 1,
	                      .password = password,
	                      .connect_timeout_ms = 500,
	                      .command_timeout_ms = 1000,
	                      .refresh_ms = refresh_ms,
	                      .wait_replicas = wait_replicas,
	                      .on_event = on_event,
	                      .event_arg = event_arg};
	char err[200];
	struct csr_router *r = csr_new(base, &cfg, err, sizeof(err));
	ck_assert_msg(r, "csr_new: %s", err);
	return r;
}

void wait_covered(struct csr_router *r)
{
	double t0 = h_now_ms();
	while (!csr_covered(r) && h_now_ms() - t0 < 3000)
		event_base_loop(base, EVLOOP_ONCE);
	ck_assert_msg(csr_covered(r), "the router does not cover every slot after 3 s (%s)",
	              csr_refresh_error(r));
}

int start(void)
{
	if (h_cluster_start(&C, 3, 1) < 0) {
		fprintf(stderr, "%s: no redis-cli: skipped\n", tcase_name());
		return -1;
	}
	loop_start();
	rt = new_router(NULL, 5000);
	wait_covered(rt);
	return 0;
}

void finish_rt(void)
{
	csr_free(rt);
	rt = NULL;
	loop_end();
}

/* The harness index (from C.first) of the node on port, or -1. */
int node_of_port(int port)
{
	for (int i = 0; i < C.n; i++)
		if (h_master(C.first + i)->port == port)
			return i;
	return -1;
}

int port_of(int i)
{
	return h_master(C.first + i)->port;
}

/* The node the router's map names for key's slot. */
int owner_of(const char *key)
{
	char host[CSL_HOST_MAX + 1];
	int port;
	ck_assert_int_eq(
	    csr_slot_owner(rt, csl_keyslot(key, strlen(key)), host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "127.0.0.1");
	return node_of_port(port);
}

/* The router's counts for the node on port. */
struct csr_node_stats stats_of(int port)
{
	struct csr_node_stats st[16];
	int n = csr_stats(rt, st, 16, NULL);
	for (int i = 0; i < n && i < 16; i++)
		if (st[i].port == port)
			return st[i];
	ck_abort_msg("port %d: not in the router's stats", port);
	return st[0];
}

int is_master(int i)
{
	char *role = h_redis(C.first + i, "ROLE", NULL);
	int m = role && strncmp(role, "master", 6) == 0;
	free(role);
	return m;
}

/* The replica (node index) of primary p. */
int replica_of(int p)
{
	char want[16];
	snprintf(want, sizeof(want), "\n%d\n", port_of(p));
	for (int i = 0; i < C.n; i++) {
		char *role = h_redis(C.first + i, "ROLE", NULL);
		int yes = role && strncmp(role, "slave", 5) == 0 && strstr(role, want);
		free(role);
		if (yes)
			return i;
	}
	ck_abort_msg("primary on port %d has no replica", port_of(p));
	return -1;
}
