/* Loads as a history of windows and the objectives that plan the next
 * window (issue 25 item 3): the series CSV loader, mp_history_loads,
 * mp_place_worst_layer, and place on a history. Every expected value is
 * worked by hand in the comment above it, or comes from an exhaustive
 * enumeration written here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-run.h"
#include "moeplan/history.h"
#include "moeplan/loader.h"
#include "moeplan/placement.h"
#include "moeplan/plan.h"

/* |got - want| <= tol, printing both when not */
#define assert_near(got, want, tol) near_((got), (want), (tol), __FILE__, __LINE__)
static void near_(double got, double want, double tol, const char *file, int line)
{
	if (!(fabs(got - want) <= tol)) {
		fprintf(stderr, "%s:%d: got %.17g, want %.17g\n", file, line, got, want);
		fail();
	}
}

static const char *write_tmp(const char *name, const char *text)
{
	static char bufs[16][128];
	static int next;
	char *b = bufs[next++ % 16];
	snprintf(b, 128, "/tmp/test-history-%d-%s", (int)getpid(), name);
	FILE *f = fopen(b, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return b;
}

/* One layer, three experts, three windows with different totals:
 *   w1 = [2, 4, 6] (12), w2 = [3, 3, 3] (9), w3 = [1, 2, 0] (3).
 * Scaled to the last window's total 3: [0.5, 1, 1.5], [1, 1, 1], [1, 2, 0]. */
static const char *const THREE =
	"# columns: iteration,layer,expert_0..expert_2\n"
	"0,4,2,4,6\n"
	"1,4,3,3,3\n"
	"2,4,1,2,0\n";

static void load_three(struct mp_history *h)
{
	const char *path = write_tmp("three.series.csv", THREE);
	assert_true(mp_loads_is_series(path));
	struct mp_diags d;
	mp_diags_init(&d);
	mp_history_init(h);
	int rc = mp_load_history(&path, 1, h, &d);
	for (size_t i = 0; i < d.count; i++) {
		mp_diag_print(&d.items[i], stderr);
	}
	assert_int_equal(rc, 0);
	mp_diags_finish(&d);
	unlink(path);
	assert_int_equal(h->n_windows, 3);
	assert_int_equal(h->windows[0].n_layers, 1);
	assert_int_equal(h->windows[0].n_experts, 3);
	assert_non_null(h->windows[2].layer_ids);
	assert_int_equal(h->windows[2].layer_ids[0], 4);
	assert_true(mp_loads_row(&h->windows[1], 0)[2] == 3.0);
}

static void reduce(const struct mp_history *h, enum mp_objective kind, double half_life, double k,
		   double out[3])
{
	struct mp_objective_options o;
	mp_objective_options_init(&o);
	o.kind = kind;
	o.half_life = half_life;
	o.k = k;
	struct mp_loads l;
	mp_loads_init(&l);
	assert_int_equal(mp_history_loads(h, &o, &l), 0);
	assert_int_equal(l.n_layers, 1);
	assert_non_null(l.layer_ids);
	assert_int_equal(l.layer_ids[0], 4);
	memcpy(out, mp_loads_row(&l, 0), 3 * sizeof(double));
	mp_loads_finish(&l);
}

static void history__objectives_by_hand(void **state)
{
	(void)state;
	struct mp_history h;
	load_three(&h);
	double v[3];
	/* last: w3 itself */
	reduce(&h, MP_OBJECTIVE_LAST, 2, 1, v);
	assert_true(v[0] == 1.0 && v[1] == 2.0 && v[2] == 0.0);
	/* mean of the scaled rows: (0.5+1+1)/3, (1+1+2)/3, (1.5+1+0)/3 */
	reduce(&h, MP_OBJECTIVE_MEAN, 2, 1, v);
	assert_near(v[0], 2.5 / 3, 1e-12);
	assert_near(v[1], 4.0 / 3, 1e-12);
	assert_near(v[2], 2.5 / 3, 1e-12);
	/* recency, half-life 1: weights 1/4, 1/2, 1 (sum 1.75):
	 * e0 (0.125 + 0.5 + 1) / 1.75, e1 (0.25 + 0.5 + 2) / 1.75, e2 (0.375 + 0.5) / 1.75 */
	reduce(&h, MP_OBJECTIVE_RECENCY, 1, 1, v);
	assert_near(v[0], 1.625 / 1.75, 1e-12);
	assert_near(v[1], 2.75 / 1.75, 1e-12);
	assert_near(v[2], 0.875 / 1.75, 1e-12);
	/* spread, k = 1: mean + population sd. e0: (0.5, 1, 1): var = (1/9 + 1/36 + 1/36) / 3
	 * = 1/18; e1: (1, 1, 2): var = (1/9 + 1/9 + 4/9) / 3 = 2/9; e2: (1.5, 1, 0): var =
	 * (4/9 + 1/36 + 25/36) / 3 = 7/18 */
	reduce(&h, MP_OBJECTIVE_SPREAD, 2, 1, v);
	assert_near(v[0], 2.5 / 3 + sqrt(1.0 / 18), 1e-12);
	assert_near(v[1], 4.0 / 3 + sqrt(2.0 / 9), 1e-12);
	assert_near(v[2], 2.5 / 3 + sqrt(7.0 / 18), 1e-12);
	/* spread with k = 0 is the mean */
	reduce(&h, MP_OBJECTIVE_SPREAD, 2, 0, v);
	assert_near(v[1], 4.0 / 3, 1e-12);
	mp_history_finish(&h);
}

/* A window whose layer is idle (all 0) is left out of the mean: windows
 * [3, 1], [0, 0], [1, 3] -> scaled to 4: [3, 1], -, [1, 3] -> mean [2, 2]. */
static void history__idle_window_left_out(void **state)
{
	(void)state;
	const char *path = write_tmp("idle.series.csv", "# columns: iteration,layer,a,b\n"
					 "7,0,3,1\n8,0,0,0\n9,0,1,3\n");
	struct mp_history h;
	mp_history_init(&h);
	assert_int_equal(mp_load_history(&path, 1, &h, NULL), 0);
	unlink(path);
	double v[3] = {0};
	struct mp_objective_options o;
	mp_objective_options_init(&o);
	o.kind = MP_OBJECTIVE_MEAN;
	struct mp_loads l;
	mp_loads_init(&l);
	assert_int_equal(mp_history_loads(&h, &o, &l), 0);
	memcpy(v, mp_loads_row(&l, 0), 2 * sizeof(double));
	assert_near(v[0], 2.0, 1e-12);
	assert_near(v[1], 2.0, 1e-12);
	mp_loads_finish(&l);
	/* bad options */
	o.half_life = 0;
	assert_int_equal(mp_history_loads(&h, &o, &l), MP_EINVAL);
	mp_history_finish(&h);
}

/* Errors name file, line and column. */
static void history__series_errors(void **state)
{
	(void)state;
	struct {
		const char *text;
		const char *where;
	} cases[] = {
		/* iterations must increase */
		{"# columns: iteration,layer,a,b\n2,0,1,1\n1,0,1,1\n", ":3:"},
		/* a block without the first block's layers */
		{"# columns: iteration,layer,a,b\n0,0,1,1\n0,1,1,1\n1,0,1,1\n2,0,1,1\n2,1,1,1\n", ":"},
		/* a load that is not a number */
		{"# columns: iteration,layer,a,b\n0,0,1,x\n", ":2:"},
		/* a negative load */
		{"# columns: iteration,layer,a,b\n0,0,1,-1\n", ":2:"},
		/* a row with the wrong number of experts */
		{"# columns: iteration,layer,a,b\n0,0,1,1\n1,0,1\n", ":3:"},
		/* a bad load in a block's first row (read past the block's layers once) */
		{"# columns: iteration,layer,a,b\n0,0,1,-2\n0,1,1,2\n", ":2:"},
		{"# columns: iteration,layer,a,b\n0,0,1,1\n1,0,nan,1\n1,1,1,1\n", ":3:"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path = write_tmp("bad.series.csv", cases[i].text);
		struct mp_history h;
		mp_history_init(&h);
		struct mp_diags d;
		mp_diags_init(&d);
		int rc = mp_load_history(&path, 1, &h, &d);
		assert_int_equal(rc, MP_EINVAL);
		assert_true(d.count > 0);
		char buf[512];
		snprintf(buf, sizeof(buf), "%s:%d:%d", d.items[0].file ? d.items[0].file : "",
			 d.items[0].line, d.items[0].column);
		if (strstr(buf, path) == NULL || strstr(buf, cases[i].where) == NULL) {
			fprintf(stderr, "case %zu: got %s: %s\n", i, buf, d.items[0].message);
			fail();
		}
		assert_int_equal(h.n_windows, 0);
		mp_diags_finish(&d);
		mp_history_finish(&h);
		unlink(path);
	}
}

/* worst: 4 experts on 2 GPUs x 2 slots, windows w1 = [4, 3, 2, 1] and
 * w2 = [1, 2, 3, 4] (mean GPU load 5 in both). The three partitions:
 *   {0,1}{2,3}: w1 7/5, w2 7/5 -> 1.4
 *   {0,2}{1,3}: w1 6/5, w2 6/5 -> 1.2
 *   {0,3}{1,2}: 5/5 in both    -> 1.0 (the optimum)
 * From the worst one the swap search reaches 1.0, and the bound (each
 * window's own bound over its mean: 5 / 5) proves it. */
static void history__worst_by_hand(void **state)
{
	(void)state;
	const double w1[] = {4, 3, 2, 1};
	const double w2[] = {1, 2, 3, 4};
	const double *rows[] = {w1, w2};
	uint32_t slot[] = {0, 1, 2, 3};
	double worst = 0, bound = 0;
	assert_int_equal(mp_place_worst_layer(rows, 2, 4, 2, 2, 100, slot, &worst, &bound), 0);
	assert_near(worst, 1.0, 1e-12);
	assert_near(bound, 1.0, 1e-12);
	/* GPU 0 holds 0 and 3, or 1 and 2 */
	const uint32_t a = slot[0] < slot[1] ? slot[0] : slot[1];
	const uint32_t b = slot[0] < slot[1] ? slot[1] : slot[0];
	assert_true((a == 0 && b == 3) || (a == 1 && b == 2));
	/* no swaps allowed: the map stays, at 1.4 */
	uint32_t fixed[] = {0, 1, 2, 3};
	assert_int_equal(mp_place_worst_layer(rows, 2, 4, 2, 2, 0, fixed, &worst, &bound), 0);
	assert_near(worst, 1.4, 1e-12);
	/* an id out of range */
	uint32_t bad[] = {0, 1, 2, 9};
	assert_int_equal(mp_place_worst_layer(rows, 2, 4, 2, 2, 10, bad, &worst, &bound), MP_EINVAL);
}

/* The worst ratio of slot over the windows, computed here: every replica
 * 1/r of its expert. */
static double ratio_of(const double *const *w, uint32_t T, uint32_t E, uint32_t G, uint32_t S,
		       const uint32_t *slot)
{
	uint32_t r[8] = {0};
	for (uint32_t p = 0; p < G * S; p++) {
		r[slot[p]]++;
	}
	double worst = 0;
	for (uint32_t t = 0; t < T; t++) {
		double total = 0, mx = 0;
		for (uint32_t g = 0; g < G; g++) {
			double l = 0;
			for (uint32_t i = 0; i < S; i++) {
				l += w[t][slot[g * S + i]] / r[slot[g * S + i]];
			}
			total += l;
			mx = fmax(mx, l);
		}
		worst = fmax(worst, mx * G / total);
	}
	return worst;
}

/* Exhaustive: 5 experts on 3 GPUs x 2 slots (one redundant slot), three
 * windows. Every map (6 slots, ids 0..4, each expert at least once, no
 * expert twice on a GPU) is enumerated; the swap search, started from each
 * map, never ends above its start, ends at the ratio this file computes for
 * the map it returns, and the bound is at most the enumerated optimum. */
static void history__worst_against_enumeration(void **state)
{
	(void)state;
	const double w1[] = {9, 1, 4, 0, 2};
	const double w2[] = {2, 6, 1, 3, 3};
	const double w3[] = {5, 5, 0, 1, 7};
	const double *rows[] = {w1, w2, w3};
	double best = (double)INFINITY;
	uint32_t n_maps = 0;
	uint32_t s[6];
	double bound = 0;
	for (uint32_t code = 0; code < 15625; code++) { /* 5^6 */
		uint32_t c = code, seen = 0;
		for (int p = 0; p < 6; p++) {
			s[p] = c % 5;
			c /= 5;
			seen |= 1u << s[p];
		}
		if (seen != 31 || s[0] == s[1] || s[2] == s[3] || s[4] == s[5]) {
			continue;
		}
		n_maps++;
		const double start = ratio_of(rows, 3, 5, 3, 2, s);
		best = fmin(best, start);
		double worst = 0;
		uint32_t m[6];
		memcpy(m, s, sizeof(m));
		assert_int_equal(mp_place_worst_layer(rows, 3, 5, 3, 2, 1000, m, &worst, &bound), 0);
		assert_true(worst <= start + 1e-12);
		assert_near(worst, ratio_of(rows, 3, 5, 3, 2, m), 1e-12);
		assert_true(m[0] != m[1] && m[2] != m[3] && m[4] != m[5]);
	}
	assert_true(n_maps > 100);
	assert_true(bound <= best + 1e-12);
}

/* place on several LOADS files with --objective mean plans on the mean
 * worked here: windows [6, 2, 2, 2] and [2, 2, 2, 6] (both total 12) have
 * mean [4, 2, 2, 4]; placed on 2 GPUs x 3 slots that equals placing the
 * mean file itself. */
static void history__place_mean_of_files(void **state)
{
	(void)state;
	const char *a = write_tmp("a.csv", "6,2,2,2\n");
	const char *b = write_tmp("b.csv", "2,2,2,6\n");
	const char *m = write_tmp("m.csv", "4,2,2,4\n");
	struct cli_result r1 = cli_run("place", a, b, "--gpus", "2", "--slots", "6", "--objective",
				       "mean", "-f", "json", NULL);
	struct cli_result r2 = cli_run("place", m, "--gpus", "2", "--slots", "6", "-f", "json", NULL);
	assert_int_equal(r1.status, 0);
	assert_int_equal(r2.status, 0);
	const char *g1 = strstr(r1.out, "\"gpu_experts\"");
	const char *g2 = strstr(r2.out, "\"gpu_experts\"");
	assert_non_null(g1);
	assert_non_null(g2);
	const char *e1 = strstr(g1, "]\n      ],");
	assert_non_null(e1);
	assert_memory_equal(g1, g2, (size_t)(e1 - g1));
	assert_non_null(strstr(r1.out, "\"objective\": \"mean\""));
	assert_non_null(strstr(r1.out, "\"windows\": 2"));
	free(r1.out), free(r1.err), free(r2.out), free(r2.err);
	/* --windows 2:2 plans on window b alone: the plan of placing b itself */
	struct cli_result r3 = cli_run("place", a, b, "--gpus", "2", "--slots", "6", "--windows", "2:2",
				       "-f", "json", NULL);
	struct cli_result r4 = cli_run("place", b, "--gpus", "2", "--slots", "6", "-f", "json", NULL);
	assert_int_equal(r3.status, 0);
	/* the default for a history: spread, the best held out (README "Plans for the next window") */
	assert_non_null(strstr(r3.out, "\"objective\": \"spread\""));
	g1 = strstr(r3.out, "\"gpu_experts\"");
	g2 = strstr(r4.out, "\"gpu_experts\"");
	e1 = strstr(g1, "]\n      ],");
	assert_memory_equal(g1, g2, (size_t)(e1 - g1));
	free(r3.out), free(r3.err), free(r4.out), free(r4.err);
	/* errors: a window past the end (1), an unknown objective (2), worst with nodes (2) */
	struct cli_result e = cli_run("place", a, b, "--gpus", "2", "--slots", "6", "--windows", "1:3", NULL);
	assert_int_equal(e.status, 1);
	assert_non_null(strstr(e.err, "2 windows"));
	free(e.out), free(e.err);
	e = cli_run("place", a, b, "--gpus", "2", "--slots", "6", "--objective", "median", NULL);
	assert_int_equal(e.status, 2);
	assert_non_null(strstr(e.err, "last, mean, recency, spread or worst"));
	free(e.out), free(e.err);
	e = cli_run("place", a, b, "--gpus", "2", "--slots", "6", "--objective", "worst",
		    "--gpus-per-node", "1", NULL);
	assert_int_equal(e.status, 2);
	free(e.out), free(e.err);
	e = cli_run("place", a, b, "--gpus", "2", "--slots", "6", "--windows", "2:1", NULL);
	assert_int_equal(e.status, 2);
	free(e.out), free(e.err);
	/* windows naming other layers (the same shape) */
	const char *la = write_tmp("la.csv", "# layers: 0, 1\n1,2,3,4\n1,2,3,4\n");
	const char *lb = write_tmp("lb.csv", "# layers: 5, 9\n1,2,3,4\n1,2,3,4\n");
	e = cli_run("place", la, lb, "--gpus", "2", "--slots", "4", NULL);
	assert_int_equal(e.status, 1);
	assert_non_null(strstr(e.err, "same layers"));
	free(e.out), free(e.err);
	unlink(la), unlink(lb);
	/* a window of another shape */
	const char *c = write_tmp("c.csv", "1,2,3\n");
	e = cli_run("place", a, c, "--gpus", "2", "--slots", "6", NULL);
	assert_int_equal(e.status, 1);
	assert_non_null(strstr(e.err, "same layers"));
	free(e.out), free(e.err);
	unlink(a), unlink(b), unlink(m), unlink(c);
}

/* replan of two --loads with --objective mean re-plans on the mean worked
 * by hand, as if that mean were the one file: [6,2,2,2] and [2,2,2,6] ->
 * [4,2,2,4]. The two runs print the same moves. */
static void history__replan_mean_of_files(void **state)
{
	(void)state;
	const char *a = write_tmp("ra.csv", "6,2,2,2\n");
	const char *b = write_tmp("rb.csv", "2,2,2,6\n");
	const char *m = write_tmp("rm.csv", "4,2,2,4\n");
	const char *old = write_tmp("rold.json", "");
	struct cli_result p = cli_run("place", write_tmp("rz.csv", "1,1,1,9\n"), "--gpus", "2", "--slots",
				      "6", "-f", "json", "-q", "-o", old, NULL);
	assert_int_equal(p.status, 0);
	free(p.out), free(p.err);
	struct cli_result r1 = cli_run("replan", "--plan", old, "--loads", a, "--loads", b, "--objective",
				       "mean", "-f", "json", NULL);
	struct cli_result r2 = cli_run("replan", "--plan", old, "--loads", m, "-f", "json", NULL);
	assert_int_equal(r1.status, 0);
	assert_int_equal(r2.status, 0);
	const char *g1 = strstr(r1.out, "\"gpu_experts\"");
	const char *g2 = strstr(r2.out, "\"gpu_experts\"");
	assert_non_null(g1);
	assert_non_null(g2);
	const char *e1 = strstr(g1, "]\n      ],");
	assert_non_null(e1);
	assert_memory_equal(g1, g2, (size_t)(e1 - g1));
	assert_non_null(strstr(r1.out, "\"objective\": \"mean\""));
	free(r1.out), free(r1.err), free(r2.out), free(r2.err);
	struct cli_result e = cli_run("replan", "--plan", old, "--loads", a, "--loads", b, "--objective",
				      "worst", NULL);
	assert_int_equal(e.status, 2);
	free(e.out), free(e.err);
	unlink(a), unlink(b), unlink(m), unlink(old);
}

/* A scenario's observed traffic may be a series: reduced by its objective.
 * Two windows of 4 layers x 16 experts with equal totals (16 and 16 per
 * layer): window 1 has load 2 on expert l (layer l) and 14/15 on the others...
 * kept simple: w1[e] = 1 + (e == l) * 15, w2[e] = 1 + (e == l + 4) * 15 (both
 * total 30), so the mean is 1 everywhere plus 7.5 on experts l and l + 4. */
static void history__scenario_series(void **state)
{
	(void)state;
	char series[4096] = "# columns: iteration,layer,e0..e15\n";
	for (int t = 0; t < 2; t++) {
		for (int l = 0; l < 4; l++) {
			char row[256];
			int n = snprintf(row, sizeof(row), "%d,%d", t, l + 1);
			for (int e = 0; e < 16; e++) {
				n += snprintf(row + n, sizeof(row) - (size_t)n, ",%d", e == l + 4 * t ? 16 : 1);
			}
			snprintf(row + n, sizeof(row) - (size_t)n, "\n");
			strcat(series, row);
		}
	}
	const char *sp = write_tmp("sc.series.csv", series);
	char *inline_yaml = cli_slurp(src_path("tests/data/scenario-inline.yaml"));
	assert_non_null(inline_yaml);
	const char *hot = "  hot: {experts: 0.25, load: 0.75, seed: 42, permute: yes}\n";
	char *at = strstr(inline_yaml, hot);
	assert_non_null(at);
	char yaml[8192];
	snprintf(yaml, sizeof(yaml), "%.*s  observed: {csv: %s, objective: mean}\n%s", (int)(at - inline_yaml),
		 inline_yaml, sp, at + strlen(hot));
	free(inline_yaml);
	/* its hardware path is relative to tests/data/ */
	char *rel = strstr(yaml, "../../hardware/");
	assert_non_null(rel);
	char fixed[8192];
	snprintf(fixed, sizeof(fixed), "%.*s%s%s", (int)(rel - yaml), yaml, src_path("hardware/"),
		 rel + strlen("../../hardware/"));
	assert_null(strstr(fixed, "../"));
	const char *yp = write_tmp("sc.yaml", fixed);
	struct mp_scenario sc;
	mp_scenario_init(&sc);
	struct mp_diags d;
	mp_diags_init(&d);
	int rc = mp_load_scenario(yp, &sc, &d);
	for (size_t i = 0; i < d.count; i++) {
		mp_diag_print(&d.items[i], stderr);
	}
	assert_int_equal(rc, 0);
	const struct mp_loads *o = &sc.traffic.observed;
	assert_int_equal(o->n_layers, 4);
	assert_int_equal(o->n_experts, 16);
	for (uint32_t l = 0; l < 4; l++) {
		for (uint32_t e = 0; e < 16; e++) {
			assert_near(mp_loads_row(o, l)[e], e == l || e == l + 4 ? 8.5 : 1.0, 1e-12);
		}
	}
	assert_non_null(strstr(o->source, "objective mean over 2 windows"));
	mp_scenario_finish(&sc);
	mp_diags_finish(&d);
	/* recency with half_life 3 (a plain number of windows): weights 2^(-1/3) and 1, so
	 * expert l of layer l gets (2^(-1/3) x 16 + 1) / (2^(-1/3) + 1) */
	char *rec = strstr(fixed, "objective: mean}");
	assert_non_null(rec);
	char yaml2[8192];
	snprintf(yaml2, sizeof(yaml2), "%.*sobjective: recency, half_life: 3}%s", (int)(rec - fixed), fixed,
		 rec + strlen("objective: mean}"));
	const char *yp2 = write_tmp("sc2.yaml", yaml2);
	mp_scenario_init(&sc);
	mp_diags_init(&d);
	rc = mp_load_scenario(yp2, &sc, &d);
	for (size_t i = 0; i < d.count; i++) {
		mp_diag_print(&d.items[i], stderr);
	}
	assert_int_equal(rc, 0);
	const double a3 = exp2(-1.0 / 3.0);
	assert_near(mp_loads_row(&sc.traffic.observed, 2)[2], (a3 * 16 + 1) / (a3 + 1), 1e-12);
	assert_near(mp_loads_row(&sc.traffic.observed, 2)[6], (a3 * 1 + 16) / (a3 + 1), 1e-12);
	mp_scenario_finish(&sc);
	mp_diags_finish(&d);
	unlink(yp2);
	unlink(sp), unlink(yp);
}

/* Two series in a row are one history (windows of both, in order); a
 * series' source loses its "source:" label as a CSV's does. */
static void history__two_series(void **state)
{
	(void)state;
	const char *path = src_path("plans/traces/qwen15moe_bookcorpus.series.csv");
	const char *paths[] = {path, path};
	struct mp_history h;
	mp_history_init(&h);
	struct mp_diags d;
	mp_diags_init(&d);
	assert_int_equal(mp_load_history(paths, 2, &h, &d), 0);
	assert_int_equal(h.n_windows, 40);
	assert_true(mp_loads_row(&h.windows[20], 0)[0] == 555.0);
	assert_non_null(h.windows[0].source);
	assert_true(strncmp(h.windows[0].source, "sacs-epfl/HarMoEny", 18) == 0);
	mp_history_finish(&h);
	mp_diags_finish(&d);
}

/* The shipped series reads as 20 windows of 12 layers x 60 experts, and
 * its first block's first row is the file's first data line. */
static void history__shipped_series(void **state)
{
	(void)state;
	const char *path = src_path("plans/traces/qwen15moe_bookcorpus.series.csv");
	struct mp_history h;
	mp_history_init(&h);
	assert_int_equal(mp_load_history(&path, 1, &h, NULL), 0);
	assert_int_equal(h.n_windows, 20);
	assert_int_equal(h.windows[0].n_layers, 12);
	assert_int_equal(h.windows[0].n_experts, 60);
	/* "0,0,555,2248,1219,..." */
	assert_true(mp_loads_row(&h.windows[0], 0)[0] == 555.0);
	assert_true(mp_loads_row(&h.windows[0], 0)[2] == 1219.0);
	mp_history_finish(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(history__objectives_by_hand),
		cmocka_unit_test(history__idle_window_left_out),
		cmocka_unit_test(history__series_errors),
		cmocka_unit_test(history__worst_by_hand),
		cmocka_unit_test(history__worst_against_enumeration),
		cmocka_unit_test(history__place_mean_of_files),
		cmocka_unit_test(history__replan_mean_of_files),
		cmocka_unit_test(history__scenario_series),
		cmocka_unit_test(history__two_series),
		cmocka_unit_test(history__shipped_series),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
