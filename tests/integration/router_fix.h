/* router_fix: what the tests of the cluster router share
 * (test_cluster_router.c, test_cluster_events.c): a live cluster of 3
 * primaries and 3 replicas, the router on the test's own event loop,
 * calls run to their end, and what the nodes say of themselves. */
#ifndef LOCKD_TESTS_ROUTER_FIX_H
#define LOCKD_TESTS_ROUTER_FIX_H

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <stdint.h>

#include "cluster.h"
#include "csl_router.h"
#include "harness.h"

extern struct h_cluster C;      /* the cluster (start) */
extern struct event_base *base; /* the test's loop */
extern struct csr_router *rt;   /* the router start made */

/* One call's outcome. */
struct call {
	int done; /* the callback came (more than once fails the test) */
	int null; /* r was NULL */
	int type; /* r->type */
	long long integer;
	char str[128];
	double at_ms;       /* when the callback came */
	long seq;           /* the how-manieth callback of the process it was */
	double deadline_ms; /* the call's deadline, h_now_ms() time */
};

void call_cb(const redisReply *r, void *arg);
/* base, with a timer that wakes it every 10 ms; and its end */
void loop_start(void);
void loop_end(void);
/* Run the loop for ms (it returns at least every 10 ms). */
void run_ms(int ms);
/* Run the loop until *flag or ms passed; 1 if *flag. */
int run_until(const int *flag, int ms);
int64_t deadline_in(int ms);
/* Send argv (NULL-terminated) for key's slot, deadline in ms, as a
 * command or as a write (csr_write: counted once its WAIT answers). */
struct csr_req *send_call(struct call *c, const char *key, int deadline_ms, const char *const *argv,
                          int write);
struct csr_req *send_cmd(struct call *c, const char *key, int deadline_ms, const char *const *argv);
struct csr_req *send_write(struct call *c, const char *key, int deadline_ms,
                           const char *const *argv);
/* One call, run to its end. */
void call_sync(struct call *c, const char *key, int deadline_ms, const char *const *argv);
struct csr_router *new_router(const char *password, int refresh_ms);
/* With redis.wait_replicas and an event callback (NULL: none). */
struct csr_router *new_router_w(const char *password, int refresh_ms, int wait_replicas,
                                csr_event_fn *on_event, void *event_arg);
void wait_covered(struct csr_router *r);
/* The cluster, the loop and rt, covering every slot; -1 (skip the test)
 * without redis-cli. */
int start(void);
void finish_rt(void);
/* The harness index (from C.first) of the node on port, or -1. */
int node_of_port(int port);
int port_of(int i);
/* The node the router's map names for key's slot. */
int owner_of(const char *key);
/* The router's counts for the node on port. */
struct csr_node_stats stats_of(int port);
int is_master(int i);
/* The replica (node index) of primary p. */
int replica_of(int p);

#endif
