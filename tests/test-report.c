/* moeplan plan --svg / --report (src/cli/plan-report.c, plot-helpers.c):
 * the files written, that each picture is well-formed XML with the series
 * it should have, and its numbers against hand calculations from the
 * scenario's files (plans/olmoe-github.yaml: OLMoE-1B-7B on HGX H100 with
 * the GitHub routing trace; three MoE layers, decode EP8 with 72 slots). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli-run.h"

static char dir[] = "/tmp/moeplan-test-reportXXXXXX";
static char path_buf[8][4200];

static const char *out_path(int slot, const char *name)
{
	snprintf(path_buf[slot], sizeof(path_buf[slot]), "%s/%s", dir, name);
	return path_buf[slot];
}

static char *read_out(const char *name)
{
	char *text = cli_slurp(out_path(7, name));
	if (!text) {
		fail_msg("%s was not written", name);
	}
	return text;
}

/* Well-formed XML, enough for what the SVG writer emits: one root, tags
 * nested and closed in order, attribute values quoted, no raw '<' or
 * stray '&' in text. Returns false on the first violation. */
static bool well_formed(const char *doc)
{
	const char *stack[256];
	size_t lens[256], depth = 0, roots = 0;
	const char *p = doc;
	while (*p) {
		if (*p == '&') {
			const char *semi = strchr(p, ';');
			if (!semi || semi - p > 6) {
				return false;
			}
			p = semi + 1;
			continue;
		}
		if (*p != '<') {
			p++;
			continue;
		}
		if (strncmp(p, "<?", 2) == 0 || strncmp(p, "<!--", 4) == 0) {
			const char *end = strstr(p, p[1] == '?' ? "?>" : "-->");
			if (!end) {
				return false;
			}
			p = end + 2;
			continue;
		}
		bool closing = p[1] == '/';
		const char *name = p + (closing ? 2 : 1);
		size_t len = strcspn(name, " \t\n/>");
		if (len == 0) {
			return false;
		}
		/* Find the end of the tag, skipping quoted values. */
		const char *q = name + len;
		while (*q && *q != '>') {
			if (*q == '"') {
				q = strchr(q + 1, '"');
				if (!q) {
					return false;
				}
			} else if (*q == '<') {
				return false;
			}
			q++;
		}
		if (*q != '>') {
			return false;
		}
		bool self = q[-1] == '/';
		if (closing) {
			if (depth == 0 || lens[depth - 1] != len || strncmp(stack[depth - 1], name, len) != 0) {
				return false;
			}
			depth--;
		} else if (!self) {
			if (depth == 0 && roots++ > 0) {
				return false;
			}
			if (depth == 256) {
				return false;
			}
			stack[depth] = name;
			lens[depth++] = len;
		}
		p = q + 1;
	}
	return depth == 0 && roots == 1;
}

/* The value of attribute `name` of the element with id `id`. */
static bool attr_of(const char *doc, const char *id, const char *name, char *buf, size_t size)
{
	char key[128];
	snprintf(key, sizeof(key), " id=\"%s\"", id);
	const char *el = strstr(doc, key);
	if (!el) {
		return false;
	}
	const char *end = strchr(el, '>');
	snprintf(key, sizeof(key), " %s=\"", name);
	const char *a = strstr(el, key);
	if (!a || a > end) {
		return false;
	}
	a += strlen(key);
	size_t len = strcspn(a, "\"");
	snprintf(buf, size, "%.*s", (int)len, a);
	return true;
}

/* The text content of the element with id `id`. */
static bool text_of(const char *doc, const char *id, char *buf, size_t size)
{
	char key[128];
	snprintf(key, sizeof(key), " id=\"%s\"", id);
	const char *el = strstr(doc, key);
	const char *start = el ? strchr(el, '>') : NULL;
	if (!start) {
		return false;
	}
	start++;
	snprintf(buf, size, "%.*s", (int)strcspn(start, "<"), start);
	return true;
}

static int plan_status;

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir)) {
		return -1;
	}
	struct cli_result r = cli_run("plan", src_path("plans/olmoe-github.yaml"), "-o",
				      out_path(0, "plan.yaml"), "--svg", out_path(1, "load.svg"),
				      "--report", out_path(2, "r.md"), NULL);
	plan_status = r.status;
	if (r.status != 0) {
		fprintf(stderr, "moeplan plan failed (%d):\n%s", r.status, r.err);
	}
	cli_result_free(&r);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	static const char *const names[] = {
		"plan.yaml", "load.svg", "r.md", "r-decode-roofline.svg", "r-decode-heatmap.svg",
		"r-prefill-roofline.svg", "r-prefill-heatmap.svg", "r-decode-step.svg",
		"r-prefill-step.svg",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		unlink(out_path(0, names[i]));
	}
	rmdir(dir);
	return 0;
}

static void report__writes_the_report_and_its_pictures(void **state)
{
	(void)state;
	assert_int_equal(plan_status, 0);
	static const char *const svgs[] = {
		"load.svg", "r-decode-roofline.svg", "r-decode-heatmap.svg", "r-prefill-roofline.svg",
		"r-prefill-heatmap.svg", "r-decode-step.svg", "r-prefill-step.svg",
	};
	for (size_t i = 0; i < sizeof(svgs) / sizeof(svgs[0]); i++) {
		char *doc = read_out(svgs[i]);
		if (!well_formed(doc)) {
			fail_msg("%s is not well-formed XML", svgs[i]);
		}
		free(doc);
	}
	/* The step bars: one bar per evaluated decode width (EP1, 2, 4, 8 and
	 * the rejected EP16), each with its attention segment and a step
	 * tick, and the report links them. */
	char *bars = read_out("r-decode-step.svg");
	for (int i = 0; i < 5; i++) {
		char id[32];
		snprintf(id, sizeof(id), "id=\"bar-%d-attention\"", i);
		assert_non_null(strstr(bars, id));
		snprintf(id, sizeof(id), "id=\"step-%d\"", i);
		assert_non_null(strstr(bars, id));
	}
	assert_null(strstr(bars, "id=\"step-5\""));
	/* New-user report: the legend reused colours (attention and combine
	 * both #0072B2, dense and tp_allreduce, shared and overhead). Every
	 * term has its own fill, none the black of the step tick. */
	static const char *const terms[] = {
		"attention", "dense", "shared", "lm_head", "routed",
		"drafter", "dispatch", "combine", "tp_allreduce", "overhead",
	};
	char fills[10][8];
	for (size_t i = 0; i < 10; i++) {
		char id[48];
		snprintf(id, sizeof(id), "id=\"legend-%s\"", terms[i]);
		const char *rect = strstr(bars, id);
		assert_non_null(rect);
		const char *fill = strstr(rect, "fill=\"");
		assert_non_null(fill);
		assert_true(fill < strchr(rect, '>'));
		snprintf(fills[i], sizeof(fills[i]), "%.7s", fill + 6);
		assert_string_not_equal(fills[i], "#000000");
		for (size_t j = 0; j < i; j++) {
			if (strcmp(fills[i], fills[j]) == 0) {
				fail_msg("%s and %s share the colour %s", terms[j], terms[i], fills[i]);
			}
		}
	}
	free(bars);
	/* --svg draws the same decode heatmap the report embeds. */
	char *a = read_out("load.svg");
	char *b = read_out("r-decode-heatmap.svg");
	assert_string_equal(a, b);
	free(a);
	free(b);

	char *md = read_out("r.md");
	static const char *const want[] = {
		"# Plan: olmoe-github\n",
		"## EP widths: chosen and rejected",
		"**Decode** (chose EP8)",
		"## HBM per GPU",
		"## Placement: bounds, gaps and imbalance",
		"| MoE layers placed | 3 | 3 |",
		/* Linked by name, next to the report. */
		"](r-decode-roofline.svg)", "](r-decode-heatmap.svg)", "](r-prefill-roofline.svg)",
		"](r-prefill-heatmap.svg)", "](r-decode-step.svg)", "](r-prefill-step.svg)",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (!strstr(md, want[i])) {
			fail_msg("the report lacks '%s'", want[i]);
		}
	}
	/* Decode candidates of an 8-GPU server: EP1, 2, 4, 8 evaluated and
	 * EP16 beyond the phase's 8 GPUs (decode.gpus). */
	assert_non_null(strstr(md, "| **8** | 72 |"));
	assert_non_null(strstr(md, "| 16 | 80 |"));
	assert_non_null(strstr(md, "exceeds-gpus"));
	free(md);
}

/* The trace's three rows, parsed here independently of the loader. */
static void read_trace(double w[3][64])
{
	char *csv = cli_slurp(src_path("plans/traces/olmoe_github.csv"));
	assert_non_null(csv);
	const char *p = csv;
	int row = 0;
	while (*p && row < 3) {
		if (*p == '#') {
			p = strchr(p, '\n');
			assert_non_null(p);
			p++;
			continue;
		}
		char *end = NULL;
		for (int e = 0; e < 64; e++) {
			w[row][e] = strtod(p, &end);
			assert_true(end != p);
			p = *end == ',' ? end + 1 : end;
		}
		p = strchr(p, '\n');
		p = p ? p + 1 : "";
		row++;
	}
	assert_int_equal(row, 3);
	free(csv);
}

static void report__heatmap_before_is_one_replica_per_expert_round_robin(void **state)
{
	(void)state;
	assert_int_equal(plan_status, 0);
	double w[3][64];
	read_trace(w);
	char *doc = read_out("load.svg");
	char buf[256], id[64];
	assert_true(attr_of(doc, "heatmap-before", "data-rows", buf, sizeof(buf)));
	assert_string_equal(buf, "3");
	assert_true(attr_of(doc, "heatmap-before", "data-cols", buf, sizeof(buf)));
	assert_string_equal(buf, "8");
	/* By hand: 64 experts on 8 GPUs, slot p holds expert p, so GPU g
	 * holds experts 8g .. 8g + 7; busiest over mean per layer. */
	for (int l = 0; l < 3; l++) {
		double gpu[8] = {0}, sum = 0, mx = 0;
		for (int e = 0; e < 64; e++) {
			gpu[e / 8] += w[l][e];
			sum += w[l][e];
		}
		for (int g = 0; g < 8; g++) {
			mx = fmax(mx, gpu[g]);
		}
		char want[32];
		snprintf(want, sizeof(want), "%.2f", mx / (sum / 8));
		snprintf(id, sizeof(id), "factor-before-%d", l);
		assert_true(text_of(doc, id, buf, sizeof(buf)));
		assert_string_equal(buf, want);
		/* The plan can only do better (it may also keep the layout). */
		snprintf(id, sizeof(id), "factor-after-%d", l);
		assert_true(text_of(doc, id, buf, sizeof(buf)));
		assert_true(strtod(buf, NULL) <= mx / (sum / 8) + 0.005);
	}
	/* Scaled to token visits: 64 requests x 1 token x top-8 = 512 per
	 * GPU per step on average (the scenario and the model file). */
	assert_non_null(strstr(doc, "token visits per GPU per step (mean 512)"));
	free(doc);
}

static void report__roofline_marks_ridge_point_and_t_star(void **state)
{
	(void)state;
	assert_int_equal(plan_status, 0);
	char *doc = read_out("r-decode-roofline.svg");
	char buf[256];
	/* hgx-h100.yaml: bf16 989.4 TFLOP/s, 3.35 TB/s: R = 295.34 FLOP/B; the
	 * roofs are fp8 then bf16, the experts run in bf16 (olmoe-1b-7b.yaml). */
	double R = 989.4e12 / 3.35e12;
	assert_true(attr_of(doc, "ridge-1", "data-x", buf, sizeof(buf)));
	assert_true(fabs(strtod(buf, NULL) / R - 1) < 1e-4);
	/* One expert: P = 3 x 2048 x 1024 = 6291456, BF16 weights W = 2P
	 * bytes, F = 2P FLOP, a = 2048 x (2 + 2) = 8192 bytes per visit;
	 * t* = R W / (F - R a) = 365.65. */
	double P = 3.0 * 2048 * 1024, W = 2 * P, F = 2 * P, a = 8192;
	double t_star = R * W / (F - R * a);
	assert_true(attr_of(doc, "t-star", "data-value", buf, sizeof(buf)));
	assert_true(fabs(strtod(buf, NULL) / t_star - 1) < 1e-4);
	/* Decode EP8 with 72 slots at 64 requests x 1 token x top-8:
	 * t = 64 x 8 x 8 / 72 = 56.89, I = F t / (W + a t) = 54.86 FLOP/B. */
	double t = 64.0 * 8 * 8 / 72;
	assert_true(attr_of(doc, "point-0", "data-x", buf, sizeof(buf)));
	assert_true(fabs(strtod(buf, NULL) / (F * t / (W + a * t)) - 1) < 1e-4);
	assert_true(attr_of(doc, "ep-point-0", "data-y", buf, sizeof(buf)));
	assert_true(fabs(strtod(buf, NULL) / t - 1) < 1e-4);
	/* One curve per feasible decode width: EP1, 2, 4, 8. */
	assert_true(attr_of(doc, "ep-3", "data-label", buf, sizeof(buf)));
	assert_non_null(strstr(buf, "EP8, 72 slots"));
	assert_false(attr_of(doc, "ep-4", "data-label", buf, sizeof(buf)));
	free(doc);

	/* Prefill: the roofline alone, its point compute-bound at EP1:
	 * t = 8192 x 8 / 64 = 1024 > t*. */
	doc = read_out("r-prefill-roofline.svg");
	assert_true(well_formed(doc));
	assert_true(attr_of(doc, "point-0", "data-label", buf, sizeof(buf)));
	assert_string_equal(buf, "prefill EP1, 8192 tokens/GPU");
	assert_null(strstr(doc, "id=\"ep\""));
	free(doc);
}

static void report__bad_destinations_leave_no_output(void **state)
{
	(void)state;
	const char *plan = out_path(3, "never.yaml");
	struct cli_result r = cli_run("plan", src_path("plans/olmoe-github.yaml"), "-o", plan,
				      "--report", "-", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--report needs a file name"));
	cli_result_free(&r);
	r = cli_run("plan", src_path("plans/olmoe-github.yaml"), "--svg", "-", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	/* A directory that does not exist: exit 1 before any planning, and
	 * the plan itself is not written either. */
	r = cli_run("plan", src_path("plans/olmoe-github.yaml"), "-o", plan, "--report",
		    "/nonexistent-moeplan-dir/r.md", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "/nonexistent-moeplan-dir/r.md: cannot write: No such file or directory"));
	cli_result_free(&r);
	struct stat st;
	assert_int_not_equal(stat(plan, &st), 0);
}

/* Entries of a folder other than . and .. */
static int count_entries(const char *path)
{
	DIR *d = opendir(path);
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e = readdir(d); e; e = readdir(d)) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			n++;
		}
	}
	closedir(d);
	return n;
}

/* -o that cannot be written says why (strerror of the failing call, not
 * "input/output error"), exits 1 and leaves nothing behind. */
static void report__write_errors_say_why(void **state)
{
	(void)state;
	char where[] = "/tmp/moeplan-test-writeXXXXXX";
	assert_non_null(mkdtemp(where));
	char missing[256];
	snprintf(missing, sizeof(missing), "%s/no-such-folder/plan.yaml", where);
	const char *loads = src_path("tests/data/placement/eplb-example.csv");
	static const char *const formats[] = {"yaml", "json"};
	for (size_t i = 0; i < 2; i++) {
		struct cli_result r = cli_run("place", loads, "--gpus", "4", "--slots", "16", "-q",
					      "--format", formats[i], "-o", where, NULL);
		assert_int_equal(r.status, 1);
		assert_string_equal(r.out, "");
		char want[400];
		snprintf(want, sizeof(want), "moeplan place: error: %s: cannot write: Is a directory\n", where);
		assert_string_equal(r.err, want);
		cli_result_free(&r);
		r = cli_run("place", loads, "--gpus", "4", "--slots", "16", "-q", "--format", formats[i],
			    "-o", missing, NULL);
		assert_int_equal(r.status, 1);
		snprintf(want, sizeof(want),
			 "moeplan place: error: %s: cannot write: No such file or directory\n", missing);
		assert_string_equal(r.err, want);
		cli_result_free(&r);
	}
	if (geteuid() != 0) {
		/* root may write anywhere: only checked for other users */
		assert_int_equal(chmod(where, 0500), 0);
		char inside[256];
		snprintf(inside, sizeof(inside), "%s/plan.yaml", where);
		struct cli_result r = cli_run("place", loads, "--gpus", "4", "--slots", "16", "-q",
					      "-o", inside, NULL);
		assert_int_equal(r.status, 1);
		assert_non_null(strstr(r.err, "cannot write: Permission denied"));
		cli_result_free(&r);
		assert_int_equal(chmod(where, 0700), 0);
	}
	/* no temporary or partial file left in the folder */
	assert_int_equal(count_entries(where), 0);
	assert_int_equal(rmdir(where), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(report__writes_the_report_and_its_pictures),
		cmocka_unit_test(report__heatmap_before_is_one_replica_per_expert_round_robin),
		cmocka_unit_test(report__roofline_marks_ridge_point_and_t_star),
		cmocka_unit_test(report__bad_destinations_leave_no_output),
		cmocka_unit_test(report__write_errors_say_why),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
