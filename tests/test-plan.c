/* The planning pipeline end to end, through the library and the CLI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli-run.h"
#include "moeplan/loader.h"
#include "moeplan/plan.h"

/* Every layer of a placement is a valid map: exactly slots_per_gpu slots
 * per GPU (by construction of the array), every logical expert present,
 * no GPU holding one expert twice, ids in range, replica counts that match
 * the map, and a busiest GPU no lower than the proven bound. */
static void assert_valid_placement(const struct mp_placement *p)
{
	for (uint32_t l = 0; l < p->n_layers; l++) {
		const struct mp_layer_placement *lp = &p->layers[l];
		uint32_t *seen = calloc(p->n_experts, sizeof(*seen));
		assert_non_null(seen);
		for (uint32_t g = 0; g < p->gpus; g++) {
			for (uint32_t s = 0; s < p->slots_per_gpu; s++) {
				uint32_t e = lp->slot_expert[g * p->slots_per_gpu + s];
				assert_true(e < p->n_experts);
				for (uint32_t s2 = 0; s2 < s; s2++) {
					assert_int_not_equal(e, lp->slot_expert[g * p->slots_per_gpu + s2]);
				}
				seen[e]++;
			}
		}
		for (uint32_t e = 0; e < p->n_experts; e++) {
			assert_true(seen[e] >= 1);
			assert_int_equal(seen[e], lp->replicas[e]);
		}
		free(seen);
		assert_true(lp->max_load >= lp->lower_bound * (1 - 1e-9));
		double busiest = 0;
		for (uint32_t g = 0; g < p->gpus; g++) {
			busiest = lp->gpu_load[g] > busiest ? lp->gpu_load[g] : busiest;
		}
		assert_true(fabs(busiest - lp->max_load) <= 1e-9 * busiest);
	}
}

/* Issue 2, "Done when": the default plan for DeepSeek-V4.1-Flash has decode
 * EP between 64 and 72 and prefill EP 2; the article: "prefill uses the
 * smallest EP that HBM allows ... EP1 cannot hold the 289 GB of routed
 * experts, while at EP2 each GPU holds 196 expert slots". */
static void plan__default_scenario_widths(void **state)
{
	(void)state;
	struct mp_diags diags;
	mp_diags_init(&diags);
	struct mp_scenario sc;
	mp_scenario_init(&sc);
	int rc = mp_load_scenario(src_path("plans/default.yaml"), &sc, &diags);
	for (size_t i = 0; i < diags.count; i++) {
		mp_diag_print(&diags.items[i], stderr);
	}
	assert_int_equal(rc, 0);
	struct mp_plan_options opts;
	mp_plan_options_init(&opts);
	opts.place.time_limit_s = 2;
	struct mp_plan plan;
	mp_plan_init(&plan);
	rc = mp_plan_build(&sc, &opts, &plan, &diags);
	for (size_t i = 0; i < diags.count; i++) {
		mp_diag_print(&diags.items[i], stderr);
	}
	assert_int_equal(rc, 0);
	assert_int_equal(plan.prefill.ep, 2);
	assert_int_equal(plan.prefill.slots_per_gpu, 196);
	assert_true(plan.decode.ep >= 64 && plan.decode.ep <= 72);
	/* at least 32 redundant slots, total a multiple of EP */
	assert_true(plan.decode.slots >= 384 + 32);
	assert_int_equal(plan.decode.slots % plan.decode.ep, 0);
	assert_true(plan.decode.slots < 384 + 32 + plan.decode.ep);
	assert_int_equal(plan.decode.placement.n_layers, 40);
	assert_int_equal(plan.decode.placement.n_experts, 384);
	assert_valid_placement(&plan.prefill.placement);
	assert_valid_placement(&plan.decode.placement);
	assert_true(plan.decode.hbm.fits);
	assert_true(plan.prefill.hbm.fits);
	/* The busiest GPU of a step is never below the mean. */
	assert_true(plan.decode.busiest_factor >= 1.0);
	mp_plan_finish(&plan);
	mp_scenario_finish(&sc);
	mp_diags_finish(&diags);
}

static bool file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* The CLI writes the plan atomically and the same input gives the same
 * bytes (determinism), in YAML and JSON. */
static void plan__cli_writes_identical_plans(void **state)
{
	(void)state;
	char dir[] = "/tmp/moeplan-plan-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char a[4200], b[4200], j[4200];
	snprintf(a, sizeof(a), "%s/a.yaml", dir);
	snprintf(b, sizeof(b), "%s/b.yaml", dir);
	snprintf(j, sizeof(j), "%s/p.json", dir);
	const char *scenario = src_path("plans/olmoe-github.yaml");
	struct cli_result r = cli_run("plan", scenario, "-o", a, "--threads", "1", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	r = cli_run("plan", scenario, "-o", b, "--threads", "2", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	char *ta = cli_slurp(a), *tb = cli_slurp(b);
	assert_non_null(ta);
	assert_non_null(tb);
	assert_string_equal(ta, tb);
	assert_non_null(strstr(ta, "physical_to_logical:"));
	assert_non_null(strstr(ta, "balancedness:"));
	r = cli_run("plan", scenario, "--format", "json", "-o", j, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	char *tj = cli_slurp(j);
	assert_non_null(tj);
	assert_true(tj && tj[0] == '{');
	assert_non_null(strstr(tj, "\"physical_to_logical\": ["));
	/* -o NAME.json with no --format: the same JSON (issue 24 item 5; it
	 * was YAML in a .json file) */
	char q[4200];
	snprintf(q, sizeof(q), "%s/q.json", dir);
	r = cli_run("plan", scenario, "-o", q, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	char *tq = cli_slurp(q);
	assert_non_null(tq);
	assert_string_equal(tq, tj);
	free(tq);
	unlink(q);
	free(ta);
	free(tb);
	free(tj);
	unlink(a);
	unlink(b);
	unlink(j);
	rmdir(dir);
}

/* A scenario that does not parse: file:line:col on stderr, exit 1, and no
 * output file created. */
static void plan__bad_scenario_leaves_no_output(void **state)
{
	(void)state;
	char dir[] = "/tmp/moeplan-bad-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char bad[4200], out[4200];
	snprintf(bad, sizeof(bad), "%s/bad.yaml", dir);
	snprintf(out, sizeof(out), "%s/plan.yaml", dir);
	FILE *f = fopen(bad, "w");
	assert_non_null(f);
	fputs("name: broken\nmodel: [unclosed\n", f);
	fclose(f);
	struct cli_result r = cli_run("plan", bad, "-o", out, NULL);
	assert_int_equal(r.status, 1);
	char prefix[4300];
	snprintf(prefix, sizeof(prefix), "%s:", bad);
	assert_non_null(strstr(r.err, prefix));
	assert_non_null(strstr(r.err, ": error: "));
	assert_false(file_exists(out));
	cli_result_free(&r);
	/* refusing to overwrite the input */
	r = cli_run("plan", bad, "-o", bad, NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	unlink(bad);
	rmdir(dir);
}

static void plan__usage_errors(void **state)
{
	(void)state;
	struct cli_result r = cli_run("plan", "--format", "xml", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--help"));
	cli_result_free(&r);
	r = cli_run("plan", "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "Usage: moeplan plan"));
	cli_result_free(&r);
	r = cli_run("no-such-command", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
}

/* A decode phase whose hardware lacks the peak the model computes in:
 * tests/data/scenario-inline.yaml's model has expert_compute int8 and its
 * decode runs on hardware/hgx-h100.yaml, whose peak_flops list fp8 and
 * bf16 only. Every width says so (not "no valid slot count"), exit 1. */
static void plan__missing_peak_is_named(void **state)
{
	(void)state;
	struct cli_result r = cli_run("plan", src_path("tests/data/scenario-inline.yaml"), NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "decode: EP8: the hardware gives no int8 peak"));
	assert_null(strstr(r.err, "no valid slot count"));
	assert_non_null(strstr(r.err, "decode: no EP width fits (see above)"));
	cli_result_free(&r);
}

/* An empty output name is a usage error (exit 2), before any work. */
static void plan__empty_output_name(void **state)
{
	(void)state;
	struct cli_result r = cli_run("place", src_path("plans/traces/olmoe_github.csv"), "--gpus", "8",
				      "--slots", "72", "-o", "", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "an output file name is empty"));
	cli_result_free(&r);
	r = cli_run("fit", "--model", src_path("plans/models/olmoe-1b-7b.yaml"), "--hardware",
		    src_path("hardware/hgx-h100.yaml"), "--ep", "8", "--requests", "8", "--context",
		    "4096", "-o", "", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plan__default_scenario_widths),
		cmocka_unit_test(plan__cli_writes_identical_plans),
		cmocka_unit_test(plan__bad_scenario_leaves_no_output),
		cmocka_unit_test(plan__usage_errors),
		cmocka_unit_test(plan__missing_peak_is_named),
		cmocka_unit_test(plan__empty_output_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
