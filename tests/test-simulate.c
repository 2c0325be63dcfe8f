/* Tests of the Monte Carlo routing simulation (src/model/simulate.c).
 *
 * Every sample count below is small enough for the whole program to run in
 * about a second; each statistical tolerance is stated next to its check. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "moeplan/diag.h"
#include "moeplan/loader.h"
#include "moeplan/map.h"
#include "moeplan/simulate.h"

#include "cli-run.h"

#define assert_near(a, b, tol) assert_near_at((a), (b), (tol), __FILE__, __LINE__)

static void assert_near_at(double a, double b, double tol, const char *file, int line)
{
	if (!(fabs(a - b) <= tol)) {
		print_error("%.17g != %.17g (tolerance %g)\n", a, b, tol);
		_fail(file, line);
	}
}

/* A one-layer map over caller storage (only the fields mp_simulate reads). */
struct test_map {
	struct mp_placement map;
	struct mp_layer_placement layer;
};

static void make_map(struct test_map *tm, uint32_t n_experts, uint32_t gpus, uint32_t slots,
		     uint32_t *slot_expert)
{
	tm->layer = (struct mp_layer_placement){ .slot_expert = slot_expert };
	tm->map = (struct mp_placement){
		.n_layers = 1,
		.n_experts = n_experts,
		.gpus = gpus,
		.slots_per_gpu = slots,
		.layers = &tm->layer,
	};
}

/* Uniform top-6 routing of 384 experts over G GPUs in the default layout:
 * 384 / G experts per GPU, no redundant replicas (for uniform popularity
 * only the experts per GPU matter). */
static double article_factor(uint32_t gpus, uint32_t requests, uint32_t steps)
{
	struct mp_simulate_options opts;
	struct mp_simulate_result res;
	mp_simulate_options_init(&opts);
	mp_simulate_result_init(&res);
	opts.gpus = gpus;
	opts.n_experts = 384;
	opts.top_k = 6;
	opts.tokens_per_gpu = requests * 4; /* 4 tokens per request */
	opts.steps = steps;
	opts.seed = 2024;
	assert_int_equal(mp_simulate(NULL, NULL, &opts, &res, NULL), 0);
	assert_int_equal(res.slots_per_gpu, 384 / gpus);
	assert_true(res.default_layout);
	const double f = res.factor_mean;
	mp_simulate_result_finish(&res);
	return f;
}

/* The article, section "What the formula assumes": "Simulating top-6
 * routing with every expert equally likely, the busiest GPU in an EP64
 * group carries 17% more expert visits than the average at 8 requests per
 * GPU, 6% more at 60, and 3% more at 256, while at 8 requests per GPU the
 * busiest GPU of an EP8 group is 10% above the mean." Issue 6: within 1.5
 * percentage points, 4 tokens per request. The standard error of each mean
 * is below 0.1 point with these sample counts (spread of one sample's
 * factor: about 3 points at 8 requests, 1 point at 256). */
static void simulate__article_ep64_8_requests(void **state)
{
	(void)state;
	assert_near(article_factor(64, 8, 2000), 1.17, 0.015);
}

static void simulate__article_ep64_60_requests(void **state)
{
	(void)state;
	assert_near(article_factor(64, 60, 400), 1.06, 0.015);
}

static void simulate__article_ep64_256_requests(void **state)
{
	(void)state;
	assert_near(article_factor(64, 256, 100), 1.03, 0.015);
}

static void simulate__article_ep8_8_requests(void **state)
{
	(void)state;
	assert_near(article_factor(8, 8, 4000), 1.10, 0.015);
}

static void simulate__factor_estimate_matches_article(void **state)
{
	(void)state;
	/* The cheap estimate for the plan (default step budget) on an explicit
	 * EP64 map of 6 experts per GPU, 8 requests of 4 tokens: 17%. */
	uint32_t slot_expert[384];
	for (uint32_t p = 0; p < 384; p++) {
		slot_expert[p] = p;
	}
	struct test_map tm;
	make_map(&tm, 384, 64, 6, slot_expert);
	double factor = 0.0;
	assert_int_equal(mp_simulate_factor(&tm.map, NULL, 32, 6, 0, 1, &factor), 0);
	assert_near(factor, 1.17, 0.015);
}

static void simulate__mean_visits_match_analytic_uniform(void **state)
{
	(void)state;
	/* Default layout, 8 experts on 4 GPUs x 3 slots: slot p holds p mod 8,
	 *   GPU0 {0,1,2}  GPU1 {3,4,5}  GPU2 {6,7,0}  GPU3 {1,2,3},
	 * so experts 0-3 have 2 replicas and 4-7 one. Uniform top-2: each
	 * expert is in a token's set with probability 2/8, so with 4 x 50
	 * tokens an expert gets 50 visits per step, split evenly over its
	 * replicas: GPU0 25+25+25 = 75, GPU1 25+50+50 = 125, GPU2 125, GPU3 75
	 * (sum 400 = G B k; mean B k = 100). A GPU's count has sd <= sqrt(125)
	 * per step, so over 4000 steps the average is within 1 of its
	 * expectation with > 5 standard errors to spare. */
	struct mp_simulate_options opts;
	struct mp_simulate_result res;
	mp_simulate_options_init(&opts);
	mp_simulate_result_init(&res);
	opts.gpus = 4;
	opts.slots_per_gpu = 3;
	opts.n_experts = 8;
	opts.top_k = 2;
	opts.tokens_per_gpu = 50;
	opts.steps = 4000;
	assert_int_equal(mp_simulate(NULL, NULL, &opts, &res, NULL), 0);
	assert_near(res.mean_visits, 100.0, 0.0);
	static const double want[] = { 75.0, 125.0, 125.0, 75.0 };
	for (int g = 0; g < 4; g++) {
		assert_near(res.gpu_mean_visits[g], want[g], 1.0);
	}
	/* E[max] >= max E: the busiest GPU averages at least 125 / 100. */
	assert_true(res.factor_mean >= 1.25);
	mp_simulate_result_finish(&res);
}

static void simulate__mean_visits_match_analytic_skewed(void **state)
{
	(void)state;
	/* Popularity 4:2:1:1 (p = .5, .25, .125, .125) on 2 GPUs x 3 slots,
	 * map [0,1,2 | 0,3,2]: experts 0 and 2 have two replicas.
	 * Top-2 without replacement: P(e in the set) = p_e + sum_{f != e}
	 * p_f p_e / (1 - p_f), computed below by hand from that formula:
	 *   e0: .5 + .25*.5/.75 + 2 * .125*.5/.875          = .80952381
	 *   e1: .25 + .5*.25/.5 + 2 * .125*.25/.875         = .57142857
	 *   e2: .125 + .5*.125/.5 + .25*.125/.75 + .125*.125/.875 = .30952381
	 *   e3: same as e2                                   = .30952381
	 * (sum 2 = k). With 2 x 100 tokens and each replica taking half of its
	 * expert's visits: GPU0 = 200 (.40476190 + .57142857 + .15476190) =
	 * 226.19, GPU1 = 200 (.40476190 + .30952381 + .15476190) = 173.81. */
	const double p[4] = { 0.5, 0.25, 0.125, 0.125 };
	double incl[4];
	for (int e = 0; e < 4; e++) {
		incl[e] = p[e];
		for (int f = 0; f < 4; f++) {
			if (f != e) {
				incl[e] += p[f] * p[e] / (1.0 - p[f]);
			}
		}
	}
	assert_near(incl[0] + incl[1] + incl[2] + incl[3], 2.0, 1e-12);
	const double gpu0 = 200.0 * (incl[0] / 2 + incl[1] + incl[2] / 2);
	const double gpu1 = 200.0 * (incl[0] / 2 + incl[3] + incl[2] / 2);
	assert_near(gpu0 + gpu1, 400.0, 1e-9);

	uint32_t slot_expert[6] = { 0, 1, 2, 0, 3, 2 };
	struct test_map tm;
	make_map(&tm, 4, 2, 3, slot_expert);
	struct mp_loads loads;
	mp_loads_init(&loads);
	assert_int_equal(mp_loads_alloc(&loads, 1, 4), 0);
	loads.w[0] = 4.0;
	loads.w[1] = 2.0;
	loads.w[2] = 1.0;
	loads.w[3] = 1.0;
	struct mp_simulate_options opts;
	struct mp_simulate_result res;
	mp_simulate_options_init(&opts);
	mp_simulate_result_init(&res);
	opts.top_k = 2;
	opts.tokens_per_gpu = 100;
	opts.steps = 4000;
	assert_int_equal(mp_simulate(&tm.map, &loads, &opts, &res, NULL), 0);
	/* sd of a GPU's count per step < sqrt(400) = 20; SE over 4000 < 0.32. */
	assert_near(res.gpu_mean_visits[0], gpu0, 1.5);
	assert_near(res.gpu_mean_visits[1], gpu1, 1.5);
	/* Each sample's busiest GPU carries at least GPU0's count. */
	assert_true(res.factor_mean * 200.0 >= res.gpu_mean_visits[0] - 1e-9);

	/* k = 1: visits follow popularity directly, GPU0 = 200 (.25 + .25 +
	 * .0625) = 112.5 and GPU1 = 200 (.25 + .125 + .0625) = 87.5. */
	opts.top_k = 1;
	assert_int_equal(mp_simulate(&tm.map, &loads, &opts, &res, NULL), 0);
	assert_near(res.gpu_mean_visits[0], 112.5, 1.0);
	assert_near(res.gpu_mean_visits[1], 87.5, 1.0);
	mp_simulate_result_finish(&res);
	mp_loads_finish(&loads);
}

static void simulate__hot_expert_replicas_lower_the_factor(void **state)
{
	(void)state;
	/* 16 experts, expert 0 has weight 13 and the others 1 (total 28), on 4
	 * GPUs x 5 slots, top-1, 64 tokens per GPU (mean 64 visits per GPU).
	 * Without replicas of the hot expert, GPU0 {0,1,2,3,4} (1-4 have a
	 * second replica on GPU3) expects 13 + 4 * 0.5 = 15 of 28 units, a
	 * factor of at least 15 / 7 = 2.14. With a replica of expert 0 on every
	 * GPU the busiest expects 13/4 + 4 = 7.25 of 28, factor >= 1.036. */
	uint32_t cold[20] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 1, 2, 3, 4 };
	uint32_t hot[20] = { 0, 1, 2, 3, 4, 0, 5, 6, 7, 8, 0, 9, 10, 11, 12, 0, 13, 14, 15, 1 };
	struct test_map tm_cold;
	struct test_map tm_hot;
	make_map(&tm_cold, 16, 4, 5, cold);
	make_map(&tm_hot, 16, 4, 5, hot);
	struct mp_loads loads;
	mp_loads_init(&loads);
	assert_int_equal(mp_loads_alloc(&loads, 1, 16), 0);
	for (int e = 0; e < 16; e++) {
		loads.w[e] = e == 0 ? 13.0 : 1.0;
	}
	double f_cold = 0.0;
	double f_hot = 0.0;
	assert_int_equal(mp_simulate_factor(&tm_cold.map, &loads, 64, 1, 2000, 5, &f_cold), 0);
	assert_int_equal(mp_simulate_factor(&tm_hot.map, &loads, 64, 1, 2000, 5, &f_hot), 0);
	assert_true(f_cold >= 15.0 / 7.0);
	assert_true(f_hot >= 7.25 / 7.0);
	assert_true(f_hot < f_cold);
	/* Not a marginal win: the replicas remove most of the skew. */
	assert_true(f_hot < 1.5);
	mp_loads_finish(&loads);
}

static void simulate__prefer_local_keeps_visits_home(void **state)
{
	(void)state;
	/* Every expert on every GPU (4 experts, 4 GPUs x 4 slots): with
	 * prefer_local every visit stays on its sender, so each GPU gets
	 * exactly B k and every sample's factor is 1. Uniformly among replicas
	 * the counts spread and some sample is above 1. */
	uint32_t slot_expert[16];
	for (uint32_t p = 0; p < 16; p++) {
		slot_expert[p] = p % 4;
	}
	struct test_map tm;
	make_map(&tm, 4, 4, 4, slot_expert);
	struct mp_simulate_options opts;
	struct mp_simulate_result res;
	mp_simulate_options_init(&opts);
	mp_simulate_result_init(&res);
	opts.top_k = 2;
	opts.tokens_per_gpu = 10;
	opts.steps = 100;
	opts.prefer_local = true;
	assert_int_equal(mp_simulate(&tm.map, NULL, &opts, &res, NULL), 0);
	assert_near(res.factor_max, 1.0, 0.0);
	assert_near(res.factor_mean, 1.0, 0.0);
	opts.prefer_local = false;
	assert_int_equal(mp_simulate(&tm.map, NULL, &opts, &res, NULL), 0);
	assert_true(res.factor_max > 1.0);
	mp_simulate_result_finish(&res);
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a;
	const double y = *(const double *)b;
	return (x > y) - (x < y);
}

static void simulate__reproducible_and_thread_independent(void **state)
{
	(void)state;
	struct mp_simulate_options opts;
	struct mp_simulate_result a, b, c;
	mp_simulate_options_init(&opts);
	mp_simulate_result_init(&a);
	mp_simulate_result_init(&b);
	mp_simulate_result_init(&c);
	opts.gpus = 16;
	opts.slots_per_gpu = 5; /* 80 slots for 64 experts: some replicas */
	opts.n_experts = 64;
	opts.top_k = 4;
	opts.tokens_per_gpu = 16;
	opts.steps = 301;
	opts.seed = 77;
	opts.threads = 1;
	assert_int_equal(mp_simulate(NULL, NULL, &opts, &a, NULL), 0);
	opts.threads = 2;
	assert_int_equal(mp_simulate(NULL, NULL, &opts, &b, NULL), 0);
	assert_memory_equal(a.factors, b.factors, 301 * sizeof(double));
	assert_memory_equal(a.gpu_mean_visits, b.gpu_mean_visits, 16 * sizeof(double));
	assert_int_equal(b.seed, 77);
	assert_int_equal(b.steps, 301);
	opts.seed = 78;
	assert_int_equal(mp_simulate(NULL, NULL, &opts, &c, NULL), 0);
	assert_memory_not_equal(a.factors, c.factors, 301 * sizeof(double));

	/* Summary statistics, recomputed here: nearest-rank percentiles. */
	double sorted[301];
	memcpy(sorted, a.factors, sizeof(sorted));
	qsort(sorted, 301, sizeof(double), cmp_double);
	double sum = 0.0;
	for (int i = 0; i < 301; i++) {
		sum += a.factors[i];
	}
	assert_near(a.factor_mean, sum / 301, 1e-12);
	assert_near(a.factor_p50, sorted[150], 0.0); /* ceil(0.5 * 301) = 151st */
	assert_near(a.factor_p99, sorted[297], 0.0); /* ceil(0.99 * 301) = 298th */
	assert_near(a.factor_max, sorted[300], 0.0);
	mp_simulate_result_finish(&a);
	mp_simulate_result_finish(&b);
	mp_simulate_result_finish(&c);
}

static void simulate__layers_use_their_own_popularity(void **state)
{
	(void)state;
	/* One map for two layers: layer 0 uniform, layer 1 all load on expert
	 * 0 and 1 (top-2 must pick both) which share GPU0 of 2 GPUs x 2 slots:
	 * GPU0 gets every visit, factor 2 exactly. Layer 2 is all zero (no
	 * observations) and is routed as uniform. Samples alternate layers. */
	uint32_t slot_expert[4] = { 0, 1, 2, 3 };
	struct test_map tm;
	make_map(&tm, 4, 2, 2, slot_expert);
	struct mp_loads loads;
	mp_loads_init(&loads);
	assert_int_equal(mp_loads_alloc(&loads, 3, 4), 0);
	for (int e = 0; e < 4; e++) {
		mp_loads_row(&loads, 0)[e] = 1.0;
	}
	mp_loads_row(&loads, 1)[0] = 3.0;
	mp_loads_row(&loads, 1)[1] = 1.0;
	struct mp_simulate_options opts;
	struct mp_simulate_result res;
	mp_simulate_options_init(&opts);
	mp_simulate_result_init(&res);
	opts.top_k = 2;
	opts.tokens_per_gpu = 8;
	opts.steps = 300;
	assert_int_equal(mp_simulate(&tm.map, &loads, &opts, &res, NULL), 0);
	assert_int_equal(res.n_layers, 3);
	assert_near(res.layer_factor_mean[1], 2.0, 0.0);
	for (int s = 1; s < 300; s += 3) {
		assert_near(res.factors[s], 2.0, 0.0);
	}
	assert_true(res.layer_factor_mean[0] < 2.0);
	assert_true(res.layer_factor_mean[2] < 2.0);
	mp_simulate_result_finish(&res);
	mp_loads_finish(&loads);
}

static void simulate__default_layout_is_round_robin(void **state)
{
	(void)state;
	uint32_t out[6];
	assert_int_equal(mp_simulate_default_layout(5, 2, 3, out), 0);
	static const uint32_t want[6] = { 0, 1, 2, 3, 4, 0 };
	assert_memory_equal(out, want, sizeof(want));
	assert_int_equal(mp_simulate_default_layout(7, 2, 3, out), MP_EINVAL); /* 6 < 7 slots */
	assert_int_equal(mp_simulate_default_layout(2, 1, 3, out), MP_EINVAL); /* 3 > 2 experts */
}

static void simulate__bad_inputs_are_refused(void **state)
{
	(void)state;
	struct mp_simulate_options opts;
	struct mp_simulate_result res;
	struct mp_diags diags;
	mp_simulate_options_init(&opts);
	mp_simulate_result_init(&res);
	mp_diags_init(&diags);
	opts.gpus = 2;
	opts.n_experts = 4;
	opts.top_k = 2;
	opts.tokens_per_gpu = 4;
	opts.steps = 10;
	assert_int_equal(mp_simulate(NULL, NULL, &opts, &res, &diags), 0);
	const uint32_t kept_steps = res.steps;

	opts.top_k = 0;
	assert_int_equal(mp_simulate(NULL, NULL, &opts, &res, &diags), MP_EINVAL);
	opts.top_k = 5; /* more than the 4 experts */
	assert_int_equal(mp_simulate(NULL, NULL, &opts, &res, &diags), MP_EINVAL);
	opts.top_k = 2;
	opts.tokens_per_gpu = 0;
	assert_int_equal(mp_simulate(NULL, NULL, &opts, &res, &diags), MP_EINVAL);
	opts.tokens_per_gpu = 4;
	opts.slots_per_gpu = 1; /* 2 slots for 4 experts */
	assert_int_equal(mp_simulate(NULL, NULL, &opts, &res, &diags), MP_EINVAL);
	opts.slots_per_gpu = 0;
	opts.steps = 0;
	assert_int_equal(mp_simulate(NULL, NULL, &opts, &res, &diags), MP_EINVAL);
	opts.steps = 10;

	/* An expert id out of range; an expert with popularity but no slot. */
	uint32_t bad_id[4] = { 0, 1, 2, 9 };
	uint32_t missing[4] = { 0, 1, 2, 2 };
	struct test_map tm;
	make_map(&tm, 4, 2, 2, bad_id);
	assert_int_equal(mp_simulate(&tm.map, NULL, &opts, &res, &diags), MP_EINVAL);
	make_map(&tm, 4, 2, 2, missing);
	assert_int_equal(mp_simulate(&tm.map, NULL, &opts, &res, &diags), MP_EINVAL);

	/* ... which is fine when that expert has no popularity, unless fewer
	 * than top_k experts are left. */
	struct mp_loads loads;
	mp_loads_init(&loads);
	assert_int_equal(mp_loads_alloc(&loads, 1, 4), 0);
	loads.w[0] = 1.0;
	loads.w[1] = 2.0;
	loads.w[2] = 3.0;
	assert_int_equal(mp_simulate(&tm.map, &loads, &opts, &res, &diags), 0);
	opts.top_k = 4;
	assert_int_equal(mp_simulate(&tm.map, &loads, &opts, &res, &diags), MP_EINVAL);
	opts.top_k = 2;
	loads.w[1] = -1.0;
	assert_int_equal(mp_simulate(&tm.map, &loads, &opts, &res, &diags), MP_EINVAL);
	/* Expert counts that disagree. */
	assert_int_equal(mp_loads_alloc(&loads, 1, 5), 0);
	assert_int_equal(mp_simulate(&tm.map, &loads, &opts, &res, &diags), MP_EINVAL);
	/* Layer counts that disagree (2 map layers, 3 loads rows). */
	struct mp_layer_placement two[2] = { { .slot_expert = bad_id }, { .slot_expert = bad_id } };
	struct mp_placement map2 = { .n_layers = 2, .n_experts = 5, .gpus = 2,
				     .slots_per_gpu = 2, .layers = two };
	assert_int_equal(mp_loads_alloc(&loads, 3, 5), 0);
	assert_int_equal(mp_simulate(&map2, &loads, &opts, &res, &diags), MP_EINVAL);

	/* Every refusal left a diagnostic, and the result is untouched. */
	assert_int_equal(diags.count, 11);
	for (size_t i = 0; i < diags.count; i++) {
		assert_int_equal(diags.items[i].code, MP_EINVAL);
		assert_non_null(diags.items[i].message);
	}
	assert_int_equal(res.steps, kept_steps);
	mp_loads_finish(&loads);
	mp_diags_finish(&diags);
	mp_simulate_result_finish(&res);
	mp_simulate_result_finish(NULL);
}

/* ---- the command line ---- */

/* The number after `"key": ` in JSON text (first occurrence), or NAN. */
static double json_number(const char *text, const char *key)
{
	char pattern[64];
	snprintf(pattern, sizeof(pattern), "\"%s\": ", key);
	const char *at = strstr(text, pattern);
	if (!at) {
		return (double)NAN;
	}
	return strtod(at + strlen(pattern), NULL);
}

static void simulate__cli_reproduces_article_figure(void **state)
{
	(void)state;
	/* EP64, 8 requests of 4 tokens, top-6 of 384 uniform: the article's
	 * 17% (see simulate__article_ep64_8_requests). */
	struct cli_result r = cli_run("simulate", "--loads",
				      src_path("tests/data/simulate/uniform-384.csv"), "--ep", "64",
				      "--top-k", "6", "--requests", "8", "--tokens-per-request", "4",
				      "--steps", "2000", "--seed", "2024", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	assert_near(json_number(r.out, "mean"), 1.17, 0.015);
	assert_near(json_number(r.out, "mean_visits_per_gpu"), 32.0 * 6.0, 0.0);
	assert_near(json_number(r.out, "steps"), 2000.0, 0.0);
	assert_near(json_number(r.out, "seed"), 2024.0, 0.0);
	assert_near(json_number(r.out, "slots_per_gpu"), 6.0, 0.0);
	assert_non_null(strstr(r.out, "\"p50\": "));
	assert_non_null(strstr(r.out, "\"p99\": "));
	assert_non_null(strstr(r.out, "\"max\": "));
	cli_result_free(&r);
}

static void simulate__cli_output_is_deterministic(void **state)
{
	(void)state;
	/* A plan with a replicated hot expert; YAML output; 1 and 2 threads. */
	const char *map = src_path("tests/data/simulate/map-2x4.json");
	const char *loads = src_path("tests/data/simulate/loads-7.csv");
	struct cli_result a = cli_run("simulate", "--plan", map, "--ep", "2", "--top-k", "2",
				      "--loads", loads, "-r", "16", "--steps", "500", "-j", "1", NULL);
	struct cli_result b = cli_run("simulate", "--plan", map, "--ep", "2", "--top-k", "2",
				      "--loads", loads, "-r", "16", "--steps", "500", "-j", "2", NULL);
	assert_int_equal(a.status, 0);
	assert_int_equal(b.status, 0);
	assert_string_equal(a.out, b.out);
	assert_non_null(strstr(a.out, "layers: 2\n"));
	assert_non_null(strstr(a.out, "dispatch: even\n"));
	assert_non_null(strstr(a.out, "layer_mean: ["));
	cli_result_free(&a);
	cli_result_free(&b);
}

static void simulate__cli_refuses_bad_input(void **state)
{
	(void)state;
	const char *map = src_path("tests/data/simulate/map-2x4.json");
	const char *loads = src_path("tests/data/simulate/loads-2.csv");
	/* Loads of 2 experts for a map of 7: bad input, exit 1, no output. */
	struct cli_result r = cli_run("simulate", "--plan", map, "--ep", "2", "--top-k", "2",
				      "--loads", loads, "-r", "4", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "");
	char want[4200];
	snprintf(want, sizeof(want), "%s: error: 2 experts per layer, expected 7 (the map's)\n",
		 loads);
	assert_string_equal(r.err, want);
	cli_result_free(&r);
	/* Usage errors: exit 2. */
	r = cli_run("simulate", "--plan", map, "--ep", "2", "--top-k", "2", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--requests R is required"));
	cli_result_free(&r);
	r = cli_run("simulate", "--plan", map, "--ep", "2", "-r", "4", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "give --top-k K"));
	cli_result_free(&r);
	r = cli_run("simulate", "--ep", "2", "--top-k", "2", "-r", "4", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	/* Top-8 of 7 experts cannot be drawn: exit 1. */
	r = cli_run("simulate", "--plan", map, "--ep", "2", "--top-k", "8", "-r", "4", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "top_k 8 exceeds the 7 experts"));
	cli_result_free(&r);
}

/* Write text to path. */
static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* The output from "gpus:" on (what follows names no input file). */
static const char *from_gpus(const char *out)
{
	const char *p = strstr(out, "gpus:");
	assert_non_null(p);
	return p;
}

/* --plan with loads that name their rows' layers (README "Layer identity")
 * simulates the plan's rows for those layers, matched by layer as check
 * does, never by position, and refuses a layer the plan does not place. A
 * new user's trial: loads naming layer 5 of a plan of layers 3 and 5 were
 * applied to both rows (layers: 2). The reference is built by hand: the
 * plan's layer-5 row written as a one-row engine map, the same loads
 * without names. */
static void simulate__loads_name_plan_layers(void **state)
{
	(void)state;
	char base[64], trace[80], plan[80], row[80], named[80], plain[80];
	snprintf(base, sizeof(base), "/tmp/moeplan-simulate-XXXXXX");
	int fd = mkstemp(base);
	assert_true(fd >= 0);
	close(fd);
	snprintf(trace, sizeof(trace), "%s-trace.csv", base);
	snprintf(plan, sizeof(plan), "%s-plan.json", base);
	snprintf(row, sizeof(row), "%s-row5.json", base);
	snprintf(named, sizeof(named), "%s-named.csv", base);
	snprintf(plain, sizeof(plain), "%s-plain.csv", base);
	/* 7 experts: layer 3 has a hot expert 0, layer 5 a hot expert 6 */
	write_file(trace, "# layers: 3, 5\n8,1,1,1,1,1,1\n1,1,1,1,1,1,8\n");
	struct cli_result r = cli_run("place", trace, "--gpus", "2", "--slots", "8", "-f", "json",
				      "-o", plan, "-q", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	struct mp_placement map;
	struct mp_diags d;
	mp_placement_init(&map);
	mp_diags_init(&d);
	assert_int_equal(mp_load_map(plan, NULL, 0, &map, &d), 0);
	assert_int_equal(map.n_layers, 2);
	assert_int_equal(map.gpus * map.slots_per_gpu, 8);
	/* the two rows differ, so a wrong row cannot give the same result */
	assert_memory_not_equal(map.layers[0].slot_expert, map.layers[1].slot_expert,
				8 * sizeof(uint32_t));
	char text[256];
	size_t n = (size_t)snprintf(text, sizeof(text), "[[");
	for (uint32_t p = 0; p < 8; p++) {
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%u", p ? ", " : "",
				      map.layers[1].slot_expert[p]);
	}
	snprintf(text + n, sizeof(text) - n, "]]\n");
	write_file(row, text);
	mp_placement_finish(&map);
	mp_diags_finish(&d);
	write_file(named, "# layers: 5\n1,1,2,1,1,1,6\n");
	write_file(plain, "1,1,2,1,1,1,6\n");

	r = cli_run("simulate", "--plan", plan, "--loads", named, "--top-k", "2", "-r", "16",
		    "--steps", "300", NULL);
	struct cli_result ref = cli_run("simulate", "--plan", row, "--ep", "2", "--loads", plain,
					"--top-k", "2", "-r", "16", "--steps", "300", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(ref.status, 0);
	assert_non_null(strstr(r.out, "layers: 1\n"));
	assert_string_equal(from_gpus(r.out), from_gpus(ref.out));
	cli_result_free(&r);
	cli_result_free(&ref);

	/* a layer the plan does not place: refused, exit 1, nothing out */
	write_file(named, "# layers: 4\n1,1,2,1,1,1,6\n");
	r = cli_run("simulate", "--plan", plan, "--loads", named, "--top-k", "2", "-r", "16",
		    "--steps", "30", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "names layer 4, but"));
	assert_non_null(strstr(r.err, "places no such layer"));
	cli_result_free(&r);
	/* as many rows as the plan, other layers: never matched by position */
	write_file(named, "# layers: 3, 4\n8,1,1,1,1,1,1\n1,1,1,1,1,1,8\n");
	r = cli_run("simulate", "--plan", plan, "--loads", named, "--top-k", "2", "-r", "16",
		    "--steps", "30", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "names layer 4, but"));
	cli_result_free(&r);
	const char *files[] = {base, trace, plan, row, named, plain};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		unlink(files[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(simulate__article_ep64_8_requests),
		cmocka_unit_test(simulate__article_ep64_60_requests),
		cmocka_unit_test(simulate__article_ep64_256_requests),
		cmocka_unit_test(simulate__article_ep8_8_requests),
		cmocka_unit_test(simulate__factor_estimate_matches_article),
		cmocka_unit_test(simulate__mean_visits_match_analytic_uniform),
		cmocka_unit_test(simulate__mean_visits_match_analytic_skewed),
		cmocka_unit_test(simulate__hot_expert_replicas_lower_the_factor),
		cmocka_unit_test(simulate__prefer_local_keeps_visits_home),
		cmocka_unit_test(simulate__reproducible_and_thread_independent),
		cmocka_unit_test(simulate__layers_use_their_own_popularity),
		cmocka_unit_test(simulate__loads_name_plan_layers),
		cmocka_unit_test(simulate__default_layout_is_round_robin),
		cmocka_unit_test(simulate__bad_inputs_are_refused),
		cmocka_unit_test(simulate__cli_reproduces_article_figure),
		cmocka_unit_test(simulate__cli_output_is_deterministic),
		cmocka_unit_test(simulate__cli_refuses_bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
