/* lockd-benchmark's per-node figures (issue 31): with --masters, its JSON
 * and CSV carry node<i>_addr, node<i>_cmds_per_grant,
 * node<i>_scripts_per_grant and node<i>_cpu_us_per_cycle for each master
 * given, and they add up to the summed fields within the rounding of the
 * printed decimals. What the figures are is measured, never asserted: a
 * short run on the harness's masters and lockd. Part of the "service"
 * group (test_service.c). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_service.h"

#define BENCH_TMO 30000 /* a hang guard for a run of 300 cycles, not a speed */

/* The number after "\"name\":" in a JSON line; fails the test when the
 * field is missing or not a number (null). */
static double json_num(const char *json, const char *name)
{
	char pat[96];
	snprintf(pat, sizeof(pat), "\"%s\":", name);
	const char *p = strstr(json, pat);
	ck_assert_msg(p != NULL, "no field %s in %s", name, json);
	char *end;
	double v = strtod(p + strlen(pat), &end);
	ck_assert_msg(end != p + strlen(pat), "field %s is not a number in %s", name, json);
	return v;
}

/* lockd-benchmark with the harness's lockd and its 3 masters, and args;
 * its stdout (malloc'd). It must exit 0. */
static char *bench(const char *masters, const char *fmt)
{
	char port[16];
	snprintf(port, sizeof(port), "%d", h_lockd(0)->port);
	char *argv[] = {(char *)h_built("lockd-benchmark"),
	                "-p",
	                port,
	                "-c",
	                "4",
	                "-n",
	                "300",
	                "--scenario",
	                "uncontended",
	                "--masters",
	                (char *)masters,
	                (char *)fmt,
	                NULL};
	char *out = NULL, *err = NULL;
	int st = h_run(argv, NULL, BENCH_TMO, &out, &err);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lockd-benchmark %s: %s\n%s", fmt,
	              h_status_str(st), err ? err : "");
	ck_assert_ptr_nonnull(out);
	free(err);
	return out;
}

START_TEST(benchmark_per_node)
{
	h_std(NULL);
	char masters[128], addr[3][32];
	for (int i = 0; i < 3; i++)
		snprintf(addr[i], sizeof(addr[i]), "127.0.0.1:%d", h_master(i)->port);
	snprintf(masters, sizeof(masters), "%s,%s,%s", addr[0], addr[1], addr[2]);

	/* JSON: each node's fields, in --masters' order, adding up to the sums */
	char *json = bench(masters, "--json");
	static const struct {
		const char *sum, *node;
		double unit; /* the last printed decimal */
	} f[] = {{"redis_cmds_per_grant", "cmds_per_grant", 0.001},
	         {"redis_scripts_per_grant", "scripts_per_grant", 0.001},
	         {"masters_cpu_us_per_cycle", "cpu_us_per_cycle", 0.01}};
	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
		double sum = 0, total = json_num(json, f[k].sum);
		for (int i = 0; i < 3; i++) {
			char name[64];
			snprintf(name, sizeof(name), "node%d_%s", i, f[k].node);
			double v = json_num(json, name);
			ck_assert_msg(v >= 0, "%s = %g", name, v);
			sum += v;
		}
		/* each figure is within half a unit of its exact value */
		ck_assert_msg(fabs(sum - total) <= 4 * f[k].unit / 2 + 1e-9,
		              "the nodes' %s add up to %g, %s is %g", f[k].node, sum, f[k].sum,
		              total);
	}
	for (int i = 0; i < 3; i++) {
		char want[80], name[64];
		snprintf(want, sizeof(want), "\"node%d_addr\":\"%s\"", i, addr[i]);
		ck_assert_msg(strstr(json, want) != NULL, "no %s in %s", want, json);
		/* every master took part in every grant */
		snprintf(name, sizeof(name), "node%d_cmds_per_grant", i);
		ck_assert_msg(json_num(json, name) >= 1, "%s < 1 in %s", name, json);
	}
	ck_assert_msg(strstr(json, "\"node3_") == NULL, "a fourth node in %s", json);
	free(json);

	/* CSV: the same columns at the end of the header, a row as wide */
	char *csv = bench(masters, "--csv");
	char *nl = strchr(csv, '\n');
	ck_assert_ptr_nonnull(nl);
	*nl = '\0';
	char *row = nl + 1, *end = strchr(row, '\n');
	ck_assert_ptr_nonnull(end);
	*end = '\0';
	ck_assert_msg(ends_with(csv, ",client_cpu_us_per_cycle,"
	                             "node0_addr,node0_cmds_per_grant,node0_scripts_per_grant,"
	                             "node0_cpu_us_per_cycle,"
	                             "node1_addr,node1_cmds_per_grant,node1_scripts_per_grant,"
	                             "node1_cpu_us_per_cycle,"
	                             "node2_addr,node2_cmds_per_grant,node2_scripts_per_grant,"
	                             "node2_cpu_us_per_cycle"),
	              "CSV header: %s", csv);
	int hcols = 0, rcols = 0;
	for (const char *p = csv; *p; p++)
		hcols += *p == ',';
	for (const char *p = row; *p; p++)
		rcols += *p == ',';
	ck_assert_int_eq(hcols, rcols);
	ck_assert_msg(strstr(row, addr[2]) != NULL, "no %s in the CSV row %s", addr[2], row);
	free(csv);
}
END_TEST

/* Adds these tests to tc_service()'s group (its fixture and timeout). */
void tc_service_add_bench(TCase *tc)
{
	H_ADD(tc, benchmark_per_node);
}
