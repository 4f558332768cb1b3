/* stats: process-wide counters for STATS and /metrics. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "master.h"
#include "membership.h"
#include "quorum.h"
#include "stats.h"

struct stats stats;

#define NBUCKETS 24 /* 1 us .. 2^23 us (8 s) */
static uint64_t hist[HIST_COUNT][NBUCKETS + 1];
static uint64_t hist_sum[HIST_COUNT];
static uint64_t hist_count[HIST_COUNT];

void stats_observe(enum hist_id h, int64_t us)
{
	int b = 0;
	while (b < NBUCKETS && (1LL << b) < us)
		b++;
	hist[h][b]++;
	hist_sum[h] += (uint64_t)(us > 0 ? us : 0);
	hist_count[h]++;
}

struct field {
	const char *name;
	const char *help;
	const uint64_t *v;
};

static const struct field counters[] = {
    {"clients", "Connected clients", &stats.clients},
    {"clients_total", "Clients accepted since start", &stats.clients_total},
    {"rejected_clients", "Connections refused at max_clients", &stats.rejected_clients},
    {"rejected_per_ip", "Connections refused at max_clients_per_ip", &stats.rejected_per_ip},
    {"accept_pauses", "Pauses in accepting for lack of file descriptors", &stats.accept_pauses},
    {"line_timeouts", "Sessions closed with a line unfinished for line_timeout_ms",
     &stats.line_timeouts},
    {"idle_timeouts", "Sessions closed idle at idle_timeout_ms", &stats.idle_timeouts},
    {"write_timeouts", "Sessions closed for not reading their replies", &stats.write_timeouts},
    {"output_limit_closes",
     "Sessions closed for reading their output too slowly (max_output_bytes)",
     &stats.output_limit_closes},
    {"foreign_protocol", "Sessions closed on an HTTP or RESP first line", &stats.foreign_protocol},
    {"auth_failures", "AUTH attempts with a wrong password", &stats.auth_failures},
    {"auth_closes", "Sessions closed at max_auth_failures", &stats.auth_closes},
    {"tls_failures", "TLS handshakes or connections that failed", &stats.tls_failures},
    {"sessions_waiting", "Sessions waiting in a LOCK", &stats.sessions_waiting},
    {"locks_held", "Locks held by sessions of this lockd", &stats.locks_held},
    {"grants", "Locks granted", &stats.grants},
    {"handoffs", "Locks handed directly to the next waiter", &stats.handoffs},
    {"shared_grants", "Shared holds granted", &stats.shared_grants},
    {"permit_grants", "Permits granted", &stats.permit_grants},
    {"busy", "TRYLOCK answered BUSY", &stats.busy},
    {"timeouts", "LOCK answered TIMEOUT", &stats.timeouts},
    {"lost", "LOST events sent", &stats.lost},
    {"quorum_failures", "Quorum calls without a majority", &stats.quorum_failures},
    {"unsure_reads", "Election reads whose answers could not tell a hold from a leftover",
     &stats.unsure_reads},
    {"releases", "Release calls sent to the masters", &stats.releases},
    {"renewals", "Lock renewals that reached a majority", &stats.renewals},
    {"renewal_failures", "Lock renewals that did not", &stats.renewal_failures},
    {"renew_batches", "Renewal rounds (one script per master each)", &stats.renew_batches},
    {"fence_writebacks", "Grants whose fence had to be written back", &stats.fence_writebacks},
    {"protocol_errors", "Requests answered ERR PROTOCOL, ARG or KEY", &stats.protocol_errors},
    {"sessions_resumable", "Resumable sessions here", &stats.sessions_resumable},
    {"sessions_detached", "Resumable sessions without a connection", &stats.sessions_detached},
    {"resumes", "RESUME answered OK", &stats.resumes},
    {"adoptions", "Sessions resumed from another lockd", &stats.adoptions},
    {"sessions_expired", "Detached sessions whose grace ran out", &stats.sessions_expired},
    {"rejected_sessions", "SESSION or RESUME refused at max_sessions or max_sessions_per_ip",
     &stats.rejected_sessions},
    {"resume_failures", "RESUME answered ERR NOSESSION", &stats.resume_failures},
    {"resume_closes", "Connections closed at max_auth_failures failed RESUMEs",
     &stats.resume_closes},
    {"campaigns", "CAMPAIGN requests", &stats.campaigns},
    {"leaders", "Sessions here that lead an election", &stats.leaders},
    {"observers", "Observations of elections by connections here", &stats.observers},
    {"rejected_observations", "OBSERVE refused at max_observations", &stats.rejected_observations},
    {"elected_events", "ELECTED and NOLEADER events sent", &stats.elected_events},
    {"lockall_granted", "LOCKALL answered OK", &stats.lockall_granted},
    {"lockall_timeouts", "LOCKALL answered TIMEOUT", &stats.lockall_timeouts},
    {"delayed_grants_refused",
     "Requests that found a key in its lock-delay (TRYLOCK BUSY, LOCK or CAMPAIGN waited)",
     &stats.delayed_grants_refused},
};
#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

static const char *const master_fields[] = {
    "addr",        "state",         "counts",        "latency_us", "reconnects",    "last_error",
    "node",        "role",          "wait_failures", "replicas",   "replica_nodes", "layout",
    "layout_wait", "cluster_nodes", "redirects",     "tryagain"};

#define NODES_SHOWN 64 /* a cluster entry's nodes STATS and /metrics list */

/* A cluster entry's nodes as "HOST:PORT/role,...", "-" for none (any
 * other entry); a list too long for out ends in ",...". Its MOVED and
 * ASK, TRYAGAIN and CLUSTERDOWN summed into *redirects, *tryagain. */
static void cluster_nodes(struct master *m, char *out, size_t len, uint64_t *redirects,
                          uint64_t *tryagain)
{
	static struct master_node nodes[NODES_SHOWN];
	int n = master_cluster_stats(m, nodes, NODES_SHOWN);
	size_t at = 0;
	*redirects = *tryagain = 0;
	snprintf(out, len, "-");
	for (int k = 0; k < n && k < NODES_SHOWN; k++) {
		*redirects += nodes[k].redirects;
		*tryagain += nodes[k].tryagain;
		int w = snprintf(out + at, len - at, "%s%s/%s", k ? "," : "", nodes[k].addr,
		                 nodes[k].role);
		if (w < 0 || (size_t)w >= len - at - 4) { /* room left for ",..." */
			snprintf(out + at, len - at, ",...");
			for (k++; k < n && k < NODES_SHOWN; k++) {
				*redirects += nodes[k].redirects;
				*tryagain += nodes[k].tryagain;
			}
			break;
		}
		at += (size_t)w;
	}
}

/* What the node is, as far as lockd knows: its handshake's ROLE said
 * master, and it is still used as one while it is up. */
static const char *master_role(const struct master *m)
{
	return m->state == MS_UP ? "master" : "-";
}

/* lockd_master_layout: the layout the master's key says as a number, 0
 * before any handshake read it, -1 for a value that is no layout number
 * (STATS shows it as it is). */
static long layout_num(const struct master *m)
{
	const char *p = m->layout;
	if (strcmp(p, "-") == 0)
		return 0;
	if (!*p || strlen(p) > 9 || strspn(p, "0123456789") != strlen(p))
		return -1;
	return strtol(p, NULL, 10);
}

/* The replicas ROLE listed on the connection that is (was last) up, "-"
 * for none or before any connection was up. */
static const char *replica_nodes(const struct master *m)
{
	return m->replica_nodes[0] ? m->replica_nodes : "-";
}

void stats_print_fields(void)
{
	printf("pid\nversion\nuptime_ms\nkeys\n");
	for (size_t i = 0; i < NCOUNTERS; i++)
		printf("%s\n", counters[i].name);
	printf("masters\nmasters_up\nmasters_counting\nquorum_ok\n");
	for (size_t i = 0; i < sizeof(master_fields) / sizeof(master_fields[0]); i++)
		printf("master.<i>.%s\n", master_fields[i]);
}

void stats_write(struct evbuffer *out, uint64_t keys)
{
	evbuffer_add_printf(out, "STAT pid %ld\r\nSTAT version %s\r\nSTAT uptime_ms %lld\r\n",
	                    (long)getpid(), PACKAGE_VERSION,
	                    (long long)((now_us() - stats.started_us) / 1000));
	evbuffer_add_printf(out, "STAT keys %llu\r\n", (unsigned long long)keys);
	for (size_t i = 0; i < NCOUNTERS; i++)
		evbuffer_add_printf(out, "STAT %s %llu\r\n", counters[i].name,
		                    (unsigned long long)*counters[i].v);
	evbuffer_add_printf(out,
	                    "STAT masters %d\r\nSTAT masters_up %d\r\nSTAT masters_counting %d\r\n",
	                    masters_count(), masters_up(), mb_counting());
	evbuffer_add_printf(out, "STAT quorum_ok %d\r\n", stats_quorum_ok());
	for (int i = 0; i < masters_count(); i++) {
		struct master *m = master_get(i);
		evbuffer_add_printf(
		    out,
		    "STAT master.%d.addr %s\r\nSTAT master.%d.state %s\r\n"
		    "STAT master.%d.counts %d\r\nSTAT master.%d.latency_us %lld\r\n"
		    "STAT master.%d.reconnects %llu\r\nSTAT master.%d.last_error %s\r\n",
		    i, m->name, i, master_state_name(m->state), i, mb_counts(m), i,
		    (long long)m->latency_us, i, (unsigned long long)m->reconnects, i,
		    m->last_error[0] ? m->last_error : "-");
		evbuffer_add_printf(out,
		                    "STAT master.%d.node %s\r\nSTAT master.%d.role %s\r\n"
		                    "STAT master.%d.wait_failures %llu\r\n",
		                    i, m->node, i, master_role(m), i,
		                    (unsigned long long)m->wait_short);
		evbuffer_add_printf(
		    out, "STAT master.%d.replicas %d\r\nSTAT master.%d.replica_nodes %s\r\n", i,
		    m->replicas, i, replica_nodes(m));
		evbuffer_add_printf(out,
		                    "STAT master.%d.layout %s\r\nSTAT master.%d.layout_wait %d\r\n",
		                    i, m->layout, i, m->layout_wait);
		char nodes[1024];
		uint64_t redirects, tryagain;
		cluster_nodes(m, nodes, sizeof(nodes), &redirects, &tryagain);
		evbuffer_add_printf(
		    out,
		    "STAT master.%d.cluster_nodes %s\r\nSTAT master.%d.redirects %llu\r\n"
		    "STAT master.%d.tryagain %llu\r\n",
		    i, nodes, i, (unsigned long long)redirects, i, (unsigned long long)tryagain);
	}
}

int stats_quorum_ok(void)
{
	return mb_counting() >= quorum_majority(masters_count());
}

/* A bucket bound of us microseconds, in seconds, exactly ("0.000001",
 * "1.048576"; %g would round it). */
static void le_seconds(char *buf, size_t len, int64_t us)
{
	int n =
	    snprintf(buf, len, "%lld.%06lld", (long long)(us / 1000000), (long long)(us % 1000000));
	while (n > 2 && buf[n - 1] == '0' && buf[n - 2] != '.')
		buf[--n] = '\0';
}

/* Each cluster entry's nodes (lockd_master_cluster_node{master,node,role}
 * 1 while lockd's connection to it is up, lockd_master_cluster_commands_
 * total{master,node}) and redirections (MOVED, ASK; TRYAGAIN,
 * CLUSTERDOWN) per entry. Other entries have no such series. */
static void write_cluster(struct evbuffer *out)
{
	static struct master_node nodes[NODES_SHOWN];
	static const char *const head[] = {
	    "# HELP lockd_master_cluster_node A cluster entry's node and its role (primary, "
	    "replica, other: not in the map), 1 while lockd's connection to it is up\n"
	    "# TYPE lockd_master_cluster_node gauge\n",
	    "# HELP lockd_master_cluster_commands_total Commands lockd sent to a cluster entry's "
	    "node\n# TYPE lockd_master_cluster_commands_total counter\n",
	    "# HELP lockd_master_cluster_redirects_total MOVED and ASK a cluster entry's nodes "
	    "answered\n# TYPE lockd_master_cluster_redirects_total counter\n",
	    "# HELP lockd_master_cluster_tryagain_total TRYAGAIN and CLUSTERDOWN a cluster "
	    "entry's nodes answered\n# TYPE lockd_master_cluster_tryagain_total counter\n"};
	for (int what = 0; what < 4; what++) {
		evbuffer_add_printf(out, "%s", head[what]);
		for (int i = 0; i < masters_count(); i++) {
			struct master *m = master_get(i);
			int n = master_cluster_stats(m, nodes, NODES_SHOWN);
			uint64_t sum = 0;
			for (int k = 0; k < n && k < NODES_SHOWN; k++) {
				const struct master_node *d = &nodes[k];
				sum += what == 2 ? d->redirects : d->tryagain;
				if (what == 0)
					evbuffer_add_printf(
					    out,
					    "lockd_master_cluster_node{master=\"%s\",node=\"%s\","
					    "role=\"%s\"} %d\n",
					    m->name, d->addr, d->role, d->connected);
				else if (what == 1)
					evbuffer_add_printf(out,
					                    "lockd_master_cluster_commands_total{"
					                    "master=\"%s\",node=\"%s\"} %llu\n",
					                    m->name, d->addr,
					                    (unsigned long long)d->sent);
			}
			if (n > 0 && what >= 2)
				evbuffer_add_printf(
				    out, "lockd_master_cluster_%s_total{master=\"%s\"} %llu\n",
				    what == 2 ? "redirects" : "tryagain", m->name,
				    (unsigned long long)sum);
		}
	}
}

/* lockd_master_replica{master,node} 1 for each node of m's replica list
 * (a list cut short at "..." gives the ones it has). */
static void write_replicas(struct evbuffer *out, const struct master *m)
{
	const char *p = m->replica_nodes;

	while (*p && strcmp(p, "-") != 0) {
		size_t n = strcspn(p, ",");
		if (n > 0 && strncmp(p, "...", n) != 0)
			evbuffer_add_printf(out,
			                    "lockd_master_replica{master=\"%s\",node=\"%.*s\"} 1\n",
			                    m->name, (int)n, p);
		p += n;
		if (*p == ',')
			p++;
	}
}

void stats_write_prometheus(struct evbuffer *out, uint64_t keys)
{
	static const char *const hnames[HIST_COUNT] = {"acquire", "handoff"};

	evbuffer_add_printf(out,
	                    "# HELP lockd_build_info The running version\n"
	                    "# TYPE lockd_build_info gauge\nlockd_build_info{version=\"%s\"} 1\n",
	                    PACKAGE_VERSION);
	evbuffer_add_printf(out,
	                    "# HELP lockd_uptime_seconds Seconds since start\n"
	                    "# TYPE lockd_uptime_seconds gauge\nlockd_uptime_seconds %.3f\n",
	                    (double)(now_us() - stats.started_us) / 1e6);
	evbuffer_add_printf(out,
	                    "# HELP lockd_keys Keys in the lock table\n# TYPE lockd_keys gauge\n"
	                    "lockd_keys %llu\n",
	                    (unsigned long long)keys);
	for (size_t i = 0; i < NCOUNTERS; i++) {
		const char *name = counters[i].name;
		int gauge = counters[i].v == &stats.clients || counters[i].v == &stats.locks_held ||
		            counters[i].v == &stats.sessions_waiting ||
		            counters[i].v == &stats.sessions_resumable ||
		            counters[i].v == &stats.sessions_detached ||
		            counters[i].v == &stats.leaders || counters[i].v == &stats.observers;
		size_t nl = strlen(name);
		/* a counter ends in _total, once (clients_total) */
		int has_total = nl > 6 && strcmp(name + nl - 6, "_total") == 0;
		const char *sfx = gauge || has_total ? "" : "_total";
		evbuffer_add_printf(
		    out, "# HELP lockd_%s%s %s\n# TYPE lockd_%s%s %s\nlockd_%s%s %llu\n", name, sfx,
		    counters[i].help, name, sfx, gauge ? "gauge" : "counter", name, sfx,
		    (unsigned long long)*counters[i].v);
	}
	evbuffer_add_printf(out,
	                    "# HELP lockd_masters_counting Masters that count towards a majority\n"
	                    "# TYPE lockd_masters_counting gauge\nlockd_masters_counting %d\n"
	                    "# HELP lockd_quorum_ok 1 if a majority of the masters count\n"
	                    "# TYPE lockd_quorum_ok gauge\nlockd_quorum_ok %d\n",
	                    mb_counting(), stats_quorum_ok());
	evbuffer_add_printf(out, "# HELP lockd_master_up 1 if the master answers\n"
	                         "# TYPE lockd_master_up gauge\n");
	for (int i = 0; i < masters_count(); i++)
		evbuffer_add_printf(out, "lockd_master_up{master=\"%s\"} %d\n", master_get(i)->name,
		                    master_get(i)->state == MS_UP);
	evbuffer_add_printf(out, "# HELP lockd_master_node The node a master entry uses now "
	                         "(a sentinel entry: its primary), and its role\n"
	                         "# TYPE lockd_master_node gauge\n");
	for (int i = 0; i < masters_count(); i++)
		evbuffer_add_printf(
		    out, "lockd_master_node{master=\"%s\",node=\"%s\",role=\"%s\"} 1\n",
		    master_get(i)->name, master_get(i)->node, master_role(master_get(i)));
	write_cluster(out);
	evbuffer_add_printf(out, "# HELP lockd_master_replicas The replicas ROLE listed on the "
	                         "master's connection that is (was last) up\n"
	                         "# TYPE lockd_master_replicas gauge\n");
	for (int i = 0; i < masters_count(); i++)
		evbuffer_add_printf(out, "lockd_master_replicas{master=\"%s\"} %d\n",
		                    master_get(i)->name, master_get(i)->replicas);
	evbuffer_add_printf(out, "# HELP lockd_master_replica Each of those replicas (node: "
	                         "HOST:PORT as ROLE gives it)\n"
	                         "# TYPE lockd_master_replica gauge\n");
	for (int i = 0; i < masters_count(); i++)
		write_replicas(out, master_get(i));
	evbuffer_add_printf(out, "# HELP lockd_master_wait_failures_total Batches of writes "
	                         "that did not count for want of replicas (redis.wait_replicas)\n"
	                         "# TYPE lockd_master_wait_failures_total counter\n");
	for (int i = 0; i < masters_count(); i++)
		evbuffer_add_printf(out, "lockd_master_wait_failures_total{master=\"%s\"} %llu\n",
		                    master_get(i)->name,
		                    (unsigned long long)master_get(i)->wait_short);
	evbuffer_add_printf(out, "# HELP lockd_master_counts 1 if the master counts towards a "
	                         "majority\n# TYPE lockd_master_counts gauge\n");
	for (int i = 0; i < masters_count(); i++)
		evbuffer_add_printf(out, "lockd_master_counts{master=\"%s\"} %d\n",
		                    master_get(i)->name, mb_counts(master_get(i)));
	evbuffer_add_printf(out, "# HELP lockd_master_layout The layout the master's layout key "
	                         "says (1: missing), as last read; 0: none read yet, -1: not a "
	                         "number. Another than this build's: the master does not count\n"
	                         "# TYPE lockd_master_layout gauge\n");
	for (int i = 0; i < masters_count(); i++)
		evbuffer_add_printf(out, "lockd_master_layout{master=\"%s\"} %ld\n",
		                    master_get(i)->name, layout_num(master_get(i)));
	evbuffer_add_printf(out, "# HELP lockd_master_layout_wait Connections of another layout "
	                         "the master listed at the last look (a build of a layout "
	                         "other than 1): while above 0, the master does not count\n"
	                         "# TYPE lockd_master_layout_wait gauge\n");
	for (int i = 0; i < masters_count(); i++)
		evbuffer_add_printf(out, "lockd_master_layout_wait{master=\"%s\"} %d\n",
		                    master_get(i)->name, master_get(i)->layout_wait);
	evbuffer_add_printf(out, "# HELP lockd_master_latency_seconds Last round trip\n"
	                         "# TYPE lockd_master_latency_seconds gauge\n");
	for (int i = 0; i < masters_count(); i++)
		evbuffer_add_printf(out, "lockd_master_latency_seconds{master=\"%s\"} %.6f\n",
		                    master_get(i)->name, (double)master_get(i)->latency_us / 1e6);
	evbuffer_add_printf(out, "# HELP lockd_master_reconnects_total Reconnects\n"
	                         "# TYPE lockd_master_reconnects_total counter\n");
	for (int i = 0; i < masters_count(); i++)
		evbuffer_add_printf(out, "lockd_master_reconnects_total{master=\"%s\"} %llu\n",
		                    master_get(i)->name,
		                    (unsigned long long)master_get(i)->reconnects);
	for (int h = 0; h < HIST_COUNT; h++) {
		uint64_t cum = 0;
		evbuffer_add_printf(out,
		                    "# HELP lockd_%s_seconds Latency of %s\n"
		                    "# TYPE lockd_%s_seconds histogram\n",
		                    hnames[h],
		                    h == HIST_ACQUIRE ? "grants (request to OK)"
		                                      : "handoffs (release to next OK)",
		                    hnames[h]);
		for (int b = 0; b < NBUCKETS; b++) {
			char le[32];
			cum += hist[h][b];
			le_seconds(le, sizeof(le), 1LL << b);
			evbuffer_add_printf(out, "lockd_%s_seconds_bucket{le=\"%s\"} %llu\n",
			                    hnames[h], le, (unsigned long long)cum);
		}
		evbuffer_add_printf(out,
		                    "lockd_%s_seconds_bucket{le=\"+Inf\"} %llu\n"
		                    "lockd_%s_seconds_sum %.6f\nlockd_%s_seconds_count %llu\n",
		                    hnames[h], (unsigned long long)hist_count[h], hnames[h],
		                    (double)hist_sum[h] / 1e6, hnames[h],
		                    (unsigned long long)hist_count[h]);
	}
}
