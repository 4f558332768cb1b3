/* lockd's /metrics endpoint: HTTP answers, and the Prometheus text format
 * parsed and checked (families, samples, histograms) against STATS. Part
 * of the "service" group (test_service.c). */
#include "config.h"

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "test_service.h"

/* ------------------------------------------------------------------ metrics */

/* GET path over a plain socket (HTTP/1.0: the server closes); returns the
 * status code, *hdrs and *body (malloc'd). */
static int http_get(int port, const char *path, char **hdrs, char **body)
{
	int fd = h_connect_tcp(port);
	ck_assert_msg(fd >= 0, "connect 127.0.0.1:%d: %s", port, strerror(errno));
	char req[512];
	int n =
	    snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n", path, port);
	ck_assert(send(fd, req, (size_t)n, MSG_NOSIGNAL) == n);
	size_t cap = 1 << 16, len = 0;
	char *b = malloc(cap);
	ck_assert(b != NULL);
	double end = h_now_ms() + 3000;
	for (;;) {
		int rem = (int)(end - h_now_ms());
		ck_assert_msg(rem > 0, "GET %s: no complete response within 3 s (%zu bytes)", path,
		              len);
		struct pollfd pf = {fd, POLLIN, 0};
		if (poll(&pf, 1, rem) <= 0)
			continue;
		if (cap - len < 4096) {
			cap *= 2;
			b = realloc(b, cap);
			ck_assert(b != NULL);
		}
		ssize_t k = recv(fd, b + len, cap - len - 1, 0);
		if (k == 0)
			break;
		ck_assert_msg(k > 0 || errno == EINTR, "GET %s: recv: %s", path, strerror(errno));
		if (k > 0)
			len += (size_t)k;
	}
	close(fd);
	b[len] = '\0';
	ck_assert_msg(strlen(b) == len, "GET %s: NUL byte in the response", path);
	char *sep = strstr(b, "\r\n\r\n");
	ck_assert_msg(sep != NULL, "GET %s: no end of headers in '%.200s'", path, b);
	int code = 0;
	ck_assert_msg(sscanf(b, "HTTP/1.%*1[01] %d ", &code) == 1,
	              "GET %s: bad status line '%.80s'", path, b);
	*hdrs = strndup(b, (size_t)(sep - b) + 2);
	*body = strdup(sep + 4);
	free(b);
	return code;
}

/* Value of header name (case-insensitive), malloc'd, or NULL. */
static char *http_header(const char *hdrs, const char *name)
{
	size_t n = strlen(name);
	for (const char *l = strstr(hdrs, "\r\n"); l && l[2];) {
		l += 2;
		const char *e = strstr(l, "\r\n");
		if (!e)
			break;
		if (strncasecmp(l, name, n) == 0 && l[n] == ':') {
			const char *v = l + n + 1;
			while (*v == ' ')
				v++;
			return strndup(v, (size_t)(e - v));
		}
		l = e;
	}
	return NULL;
}

#define MAXFAM  128 /* families in one exposition (lockd writes about 70) */
#define MAXSAMP 512
struct fam {
	char name[128];
	char type[16];
	int help, typed, samples, done;
};
struct sample {
	char name[96];
	char labels[160];
	double v;
	int fam;
};
struct exposition {
	struct fam f[MAXFAM];
	int nf;
	struct sample s[MAXSAMP];
	int ns;
};

static int fam_find(struct exposition *x, const char *name, int create)
{
	for (int i = 0; i < x->nf; i++)
		if (strcmp(x->f[i].name, name) == 0)
			return i;
	if (!create)
		return -1;
	ck_assert(x->nf < MAXFAM);
	snprintf(x->f[x->nf].name, sizeof(x->f[0].name), "%s", name);
	return x->nf++;
}

/* Parse and check the Prometheus text format as lockd should write it. */
static void parse_exposition(const char *body, struct exposition *x)
{
	memset(x, 0, sizeof(*x));
	ck_assert_msg(*body && body[strlen(body) - 1] == '\n', "body does not end with a newline");
	int cur = -1, lineno = 0;
	for (const char *l = body; *l;) {
		const char *e = strchr(l, '\n');
		char line[512];
		snprintf(line, sizeof(line), "%.*s", (int)(e - l), l);
		l = e + 1;
		lineno++;
		if (!line[0])
			continue;
		char name[128], rest[384];
		if (strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0) {
			int help = line[2] == 'H';
			ck_assert_msg(sscanf(line + 7, "%127s %383[^\n]", name, rest) == 2,
			              "line %d: '%s'", lineno, line);
			ck_assert_msg(strncmp(name, "lockd_", 6) == 0, "line %d: metric %s", lineno,
			              name);
			int i = fam_find(x, name, 1);
			struct fam *f = &x->f[i];
			ck_assert_msg(!f->samples, "line %d: %s after the samples of %s", lineno,
			              help ? "HELP" : "TYPE", name);
			if (help) {
				ck_assert_msg(!f->help, "line %d: second HELP for %s", lineno,
				              name);
				f->help = 1;
			} else {
				ck_assert_msg(!f->typed, "line %d: second TYPE for %s", lineno,
				              name);
				ck_assert_msg(strcmp(rest, "counter") == 0 ||
				                  strcmp(rest, "gauge") == 0 ||
				                  strcmp(rest, "histogram") == 0 ||
				                  strcmp(rest, "summary") == 0 ||
				                  strcmp(rest, "untyped") == 0,
				              "line %d: type '%s'", lineno, rest);
				f->typed = 1;
				snprintf(f->type, sizeof(f->type), "%.15s", rest);
			}
			continue;
		}
		if (line[0] == '#')
			continue;
		/* a sample: name[{labels}] value */
		ck_assert(x->ns < MAXSAMP);
		struct sample *s = &x->s[x->ns];
		size_t nl = strcspn(line, "{ ");
		ck_assert_msg(nl > 0 && nl < sizeof(s->name), "line %d: '%s'", lineno, line);
		snprintf(s->name, sizeof(s->name), "%.*s", (int)nl, line);
		for (size_t k = 0; k < nl; k++)
			ck_assert_msg(isalnum((unsigned char)s->name[k]) || s->name[k] == '_' ||
			                  s->name[k] == ':',
			              "line %d: bad metric name '%s'", lineno, s->name);
		ck_assert_msg(strncmp(s->name, "lockd_", 6) == 0,
		              "line %d: metric '%s' does not start with lockd_", lineno, s->name);
		const char *p = line + nl;
		if (*p == '{') {
			const char *q = strchr(p, '}');
			ck_assert_msg(q != NULL, "line %d: '%s'", lineno, line);
			snprintf(s->labels, sizeof(s->labels), "%.*s", (int)(q - p + 1), p);
			p = q + 1;
		}
		ck_assert_msg(*p == ' ' && p[1], "line %d: no value: '%s'", lineno, line);
		p++;
		char *end;
		if (strcmp(p, "+Inf") == 0)
			s->v = INFINITY;
		else {
			s->v = strtod(p, &end);
			ck_assert_msg(*end == '\0' && end != p, "line %d: value '%s'", lineno, p);
		}
		/* its family: the name, or a histogram's _bucket/_sum/_count */
		int fi = fam_find(x, s->name, 0);
		if (fi < 0)
			for (int k = 0; k < 3 && fi < 0; k++) {
				static const char *const suf[] = {"_bucket", "_sum", "_count"};
				if (!ends_with(s->name, suf[k]))
					continue;
				char base[96];
				snprintf(base, sizeof(base), "%.*s",
				         (int)(strlen(s->name) - strlen(suf[k])), s->name);
				int b = fam_find(x, base, 0);
				if (b >= 0 && (strcmp(x->f[b].type, "histogram") == 0 ||
				               strcmp(x->f[b].type, "summary") == 0))
					fi = b;
			}
		ck_assert_msg(fi >= 0, "line %d: sample %s without HELP/TYPE before it", lineno,
		              s->name);
		struct fam *f = &x->f[fi];
		ck_assert_msg(f->help && f->typed, "line %d: %s lacks a %s line before its samples",
		              lineno, f->name, f->help ? "TYPE" : "HELP");
		ck_assert_msg(!f->done, "line %d: samples of %s are not in one group", lineno,
		              f->name);
		if (cur >= 0 && cur != fi)
			x->f[cur].done = 1;
		cur = fi;
		f->samples++;
		if (strcmp(f->type, "counter") == 0)
			ck_assert_msg(ends_with(s->name, "_total"),
			              "line %d: counter %s without _total", lineno, s->name);
		if (strcmp(f->type, "histogram") != 0)
			ck_assert_msg(strcmp(s->name, f->name) == 0, "line %d: %s in family %s",
			              lineno, s->name, f->name);
		s->fam = fi;
		/* no two samples alike */
		for (int k = 0; k < x->ns; k++)
			ck_assert_msg(strcmp(x->s[k].name, s->name) ||
			                  strcmp(x->s[k].labels, s->labels),
			              "line %d: %s%s twice", lineno, s->name, s->labels);
		x->ns++;
	}
	for (int i = 0; i < x->nf; i++)
		ck_assert_msg(x->f[i].help && x->f[i].typed, "%s lacks HELP or TYPE", x->f[i].name);
}

static const struct sample *sample_get(const struct exposition *x, const char *name,
                                       const char *labels)
{
	for (int i = 0; i < x->ns; i++)
		if (strcmp(x->s[i].name, name) == 0 && strcmp(x->s[i].labels, labels) == 0)
			return &x->s[i];
	return NULL;
}

static double sample_val(const struct exposition *x, const char *name, const char *labels)
{
	const struct sample *s = sample_get(x, name, labels);
	ck_assert_msg(s != NULL, "no sample %s%s", name, labels);
	return s->v;
}

/* Buckets cumulative, le increasing, le="+Inf" last and equal to _count. */
static void check_histogram(const struct exposition *x, const char *fam)
{
	char bn[128], cn[128], sn[128];
	snprintf(bn, sizeof(bn), "%s_bucket", fam);
	snprintf(cn, sizeof(cn), "%s_count", fam);
	snprintf(sn, sizeof(sn), "%s_sum", fam);
	double prev_le = -INFINITY, prev_n = 0;
	int nb = 0, inf = 0;
	for (int i = 0; i < x->ns; i++) {
		const struct sample *s = &x->s[i];
		if (strcmp(s->name, bn) != 0)
			continue;
		ck_assert_msg(!inf, "%s: bucket after le=\"+Inf\"", fam);
		double le;
		ck_assert_msg(strncmp(s->labels, "{le=\"", 5) == 0 && ends_with(s->labels, "\"}"),
		              "%s: bucket labels %s", fam, s->labels);
		if (strcmp(s->labels, "{le=\"+Inf\"}") == 0) {
			le = INFINITY;
			inf = 1;
		} else {
			char *end;
			le = strtod(s->labels + 5, &end);
			ck_assert_msg(strcmp(end, "\"}") == 0, "%s: bucket labels %s", fam,
			              s->labels);
		}
		ck_assert_msg(le > prev_le, "%s: le %s not above the bucket before", fam,
		              s->labels);
		ck_assert_msg(s->v >= prev_n, "%s: bucket %s = %g below the one before (%g)", fam,
		              s->labels, s->v, prev_n);
		ck_assert_msg(s->v >= 0 && s->v == (double)(long long)s->v, "%s: bucket %s = %g",
		              fam, s->labels, s->v);
		prev_le = le;
		prev_n = s->v;
		nb++;
	}
	ck_assert_msg(nb >= 2 && inf, "%s: %d buckets, le=\"+Inf\" %s", fam, nb,
	              inf ? "present" : "missing");
	double cnt = sample_val(x, cn, "");
	ck_assert_msg(prev_n == cnt, "%s: le=\"+Inf\" bucket %g != _count %g", fam, prev_n, cnt);
	ck_assert_msg(sample_val(x, sn, "") >= 0, "%s: negative _sum", fam);
}

START_TEST(metrics_endpoint)
{
	int mport = h_free_port();
	char top[128];
	snprintf(top, sizeof(top), "metrics:\n  listen: \"127.0.0.1:%d\"\n", mport);
	struct h_opts o = {0};
	o.top_extra = top;
	h_std(&o);

	/* a replica of master 0 (not a master of lockd's), online there */
	h_masters_start(1);
	int rep = h_nmasters() - 1;
	h_replicaof(rep, 0);

	/* some grants, a handoff, and one lock left held */
	struct cl *a = cl_open(), *b = cl_open(), *s = cl_open();
	int mine = 0;
	for (int i = 0; i < 5; i++) {
		char req[64];
		snprintf(req, sizeof(req), "TRYLOCK m%d", i);
		cl_lock(a, req);
		mine++;
		snprintf(req, sizeof(req), "UNLOCK m%d", i);
		cl_expect(a, req, "OK 0");
	}
	cl_lock(a, "LOCK h");
	mine++;
	cl_send(b, "LOCK h\n");
	cl_wait_waiters(s, "h", 1, 2000);
	cl_expect(a, "UNLOCK h", "OK 0");
	cl_want_ok(b, 1000);
	mine++;

	/* lockd reads ROLE again every second while a master has traffic:
	 * master 0's replica shows within that (and the load's headroom) */
	double end = h_now_ms() + 1000 + H_LOADED;
	for (;;) {
		cl_lock(s, "TRYLOCK r");
		cl_expect(s, "UNLOCK r", "OK 0");
		char *n = cl_stat(s, "master.0.replicas");
		int seen = strcmp(n, "1") == 0;
		free(n);
		if (seen)
			break;
		ck_assert_msg(h_now_ms() < end, "STATS master.0.replicas is not 1 after %d ms",
		              1000 + H_LOADED);
		h_sleep_ms(20);
	}
	char want_node[64];
	snprintf(want_node, sizeof(want_node), "127.0.0.1:%d", h_master(rep)->port);
	cl_expect_stat(s, "master.0.replica_nodes", want_node);
	cl_expect_stat(s, "master.1.replica_nodes", "-");

	char *g0 = cl_stat(s, "grants");
	char *hdrs, *body;
	int code = http_get(mport, "/metrics", &hdrs, &body);
	char *g1 = cl_stat(s, "grants");
	ck_assert_msg(code == 200, "GET /metrics: status %d\n%s", code, hdrs);
	char *ct = http_header(hdrs, "Content-Type");
	ck_assert_msg(ct && strncmp(ct, "text/plain", 10) == 0, "Content-Type: %s",
	              ct ? ct : "(none)");
	char *cl = http_header(hdrs, "Content-Length");
	if (cl)
		ck_assert_msg(strtoul(cl, NULL, 10) == strlen(body),
		              "Content-Length %s, body %zu bytes", cl, strlen(body));

	static struct exposition x;
	parse_exposition(body, &x);
	/* counters agree with STATS and with what this test did */
	ck_assert_str_eq(g0, g1);
	double grants = sample_val(&x, "lockd_grants_total", "");
	ck_assert_msg(grants >= mine, "lockd_grants_total %g < %d grants made", grants, mine);
	ck_assert_msg(grants == strtod(g0, NULL), "lockd_grants_total %g, STATS grants %s", grants,
	              g0);
	ck_assert_msg(sample_val(&x, "lockd_handoffs_total", "") >= 1, "no handoff counted");
	ck_assert_msg(sample_val(&x, "lockd_locks_held", "") == 1, "lockd_locks_held %g, not 1",
	              sample_val(&x, "lockd_locks_held", ""));
	for (int i = 0; i < 3; i++) {
		char lab[64];
		snprintf(lab, sizeof(lab), "{master=\"127.0.0.1:%d\"}", h_master(i)->port);
		ck_assert_msg(sample_val(&x, "lockd_master_up", lab) == 1, "lockd_master_up%s != 1",
		              lab);
		ck_assert_msg(sample_val(&x, "lockd_master_counts", lab) == 1,
		              "lockd_master_counts%s != 1", lab);
		ck_assert_msg(sample_val(&x, "lockd_master_replicas", lab) == (i == 0),
		              "lockd_master_replicas%s != %d", lab, i == 0);
		ck_assert_msg(sample_val(&x, "lockd_master_layout", lab) == 1,
		              "lockd_master_layout%s != 1", lab);
		/* a layout-1 build never waits for another layout */
		ck_assert_msg(sample_val(&x, "lockd_master_layout_wait", lab) == 0,
		              "lockd_master_layout_wait%s != 0", lab);
	}
	/* master 0's replica, by its address; no other */
	char rlab[128];
	snprintf(rlab, sizeof(rlab), "{master=\"127.0.0.1:%d\",node=\"%s\"}", h_master(0)->port,
	         want_node);
	ck_assert_msg(sample_val(&x, "lockd_master_replica", rlab) == 1,
	              "lockd_master_replica%s != 1", rlab);
	int nrep = 0;
	for (int i = 0; i < x.ns; i++)
		nrep += strcmp(x.s[i].name, "lockd_master_replica") == 0;
	ck_assert_int_eq(nrep, 1);
	check_histogram(&x, "lockd_acquire_seconds");
	check_histogram(&x, "lockd_handoff_seconds");
	ck_assert_msg(sample_val(&x, "lockd_acquire_seconds_count", "") >= mine,
	              "lockd_acquire_seconds_count %g < %d grants",
	              sample_val(&x, "lockd_acquire_seconds_count", ""), mine);
	ck_assert_msg(sample_val(&x, "lockd_handoff_seconds_count", "") >= 1,
	              "no handoff observed");
	/* every histogram family checks out */
	for (int i = 0; i < x.nf; i++)
		if (strcmp(x.f[i].type, "histogram") == 0)
			check_histogram(&x, x.f[i].name);
	/* names: _total once; the version; the masters that count */
	for (int i = 0; i < x.nf; i++)
		ck_assert_msg(!strstr(x.f[i].name, "_total_total"), "metric %s", x.f[i].name);
	ck_assert_msg(sample_get(&x, "lockd_clients_total", "") != NULL, "no lockd_clients_total");
	ck_assert_msg(sample_val(&x, "lockd_clients_total", "") >= 3, "lockd_clients_total %g < 3",
	              sample_val(&x, "lockd_clients_total", ""));
	char bl[64];
	snprintf(bl, sizeof(bl), "{version=\"%s\"}", PACKAGE_VERSION);
	ck_assert_msg(sample_val(&x, "lockd_build_info", bl) == 1, "lockd_build_info%s", bl);
	ck_assert_msg(sample_val(&x, "lockd_masters_counting", "") == 3,
	              "lockd_masters_counting %g, not 3",
	              sample_val(&x, "lockd_masters_counting", ""));
	ck_assert_msg(sample_val(&x, "lockd_quorum_ok", "") == 1, "lockd_quorum_ok %g, not 1",
	              sample_val(&x, "lockd_quorum_ok", ""));
	/* bucket bounds are powers of two microseconds, written exactly */
	for (int k = 0; k < 24; k++) {
		char want[96];
		long long us = 1LL << k;
		snprintf(want, sizeof(want), "lockd_acquire_seconds_bucket{le=\"%lld.%06lld\"} ",
		         us / 1000000, us % 1000000);
		ck_assert_msg(strstr(body, want) != NULL, "no '%s' in /metrics", want);
	}
	free(hdrs);
	free(body);
	free(ct);
	free(cl);

	/* anything else is 404 */
	code = http_get(mport, "/other", &hdrs, &body);
	ck_assert_msg(code == 404, "GET /other: status %d", code);
	free(hdrs);
	free(body);
	code = http_get(mport, "/", &hdrs, &body);
	ck_assert_msg(code == 404, "GET /: status %d", code);
	free(hdrs);
	free(body);
	/* and lockd is unharmed */
	cl_expect(s, "PING", "PONG");
	free(g0);
	free(g1);
	cl_close(a);
	cl_close(b);
	cl_close(s);
}
END_TEST

/* Adds these tests to tc_service()'s group (its fixture and timeout). */
void tc_service_add_metrics(TCase *tc)
{
	H_ADD(tc, metrics_endpoint);
}
