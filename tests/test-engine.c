/* Engine profiles (issue 23 item 4): the shipped files equal the built-in
 * profiles, SGLang's default memory fraction worked by hand from
 * server_args.py, the memory rules in the HBM audit, bad profiles, and
 * what --engine restricts in step, plan and search. */
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
#include "moeplan/capacity.h"
#include "moeplan/engine.h"
#include "moeplan/loader.h"
#include "moeplan/model.h"

static const char *write_tmp(const char *name, const char *text)
{
	static char bufs[4][128];
	static int next;
	char *b = bufs[next++ % 4];
	snprintf(b, 128, "/tmp/test-engine-%d-%s", (int)getpid(), name);
	FILE *f = fopen(b, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return b;
}

static void same_profile(const struct mp_engine_profile *a, const struct mp_engine_profile *b)
{
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->dispatch, b->dispatch);
	assert_int_equal(a->ep_dispatch_algorithm, b->ep_dispatch_algorithm);
	assert_int_equal(a->overlaps, b->overlaps);
	assert_int_equal(a->kernel[0], b->kernel[0]);
	assert_int_equal(a->kernel[1], b->kernel[1]);
	assert_int_equal(a->memory, b->memory);
	assert_true(a->memory_fraction == b->memory_fraction);
	assert_true(a->reserve_bytes == b->reserve_bytes);
	assert_int_equal(a->sglang.dp_attention, b->sglang.dp_attention);
	assert_int_equal(a->sglang.cuda_graph_max_bs, b->sglang.cuda_graph_max_bs);
	assert_true(a->sglang.chunked_prefill_size == b->sglang.chunked_prefill_size);
	assert_int_equal(a->drafter, b->drafter);
}

/* plans/engines/NAME.yaml and the built-in NAME agree field by field. */
static void engine__shipped_files_are_the_builtins(void **state)
{
	(void)state;
	const char *names[] = {"sglang", "vllm"};
	for (int i = 0; i < 2; i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "plans/engines/%s.yaml", names[i]);
		struct mp_engine_profile file, built;
		mp_engine_profile_init(&file);
		mp_engine_profile_init(&built);
		struct mp_diags d;
		mp_diags_init(&d);
		int rc = mp_load_engine_profile(src_path(rel), &file, &d);
		for (size_t k = 0; k < d.count; k++) {
			mp_diag_print(&d.items[k], stderr);
		}
		assert_int_equal(rc, 0);
		assert_int_equal(mp_engine_builtin(names[i], &built), 0);
		same_profile(&file, &built);
		mp_engine_profile_finish(&file);
		mp_engine_profile_finish(&built);
		mp_diags_finish(&d);
	}
	/* what the sources say (engine.h): SGLang runs two-batch overlap, not full */
	struct mp_engine_profile s;
	mp_engine_profile_init(&s);
	assert_int_equal(mp_engine_builtin("sglang", &s), 0);
	assert_true(mp_engine_allows_overlap(&s, MP_OVERLAP_TWO_BATCH));
	assert_false(mp_engine_allows_overlap(&s, MP_OVERLAP_FULL));
	assert_int_equal(s.dispatch, MP_DISPATCH_SGLANG);
	mp_engine_profile_finish(&s);
	assert_int_equal(mp_engine_builtin("tensorrt", &s), MP_EINVAL);
}

/* SGLang's default --mem-fraction-static (server_args.py
 * _handle_gpu_memory_settings, 60d36e7be), by hand for an 80 GiB GPU
 * (81920 MiB: the table's < 90 GiB row, chunk 8192, graph batch 512 at
 * tp >= 4):
 *   tp 8:            512 + 1.5 x 8192 + 2 x 512 + 8/8 x 1024 = 14848 MiB
 *                    (81920 - 14848) / 81920 = 0.81875 -> 0.819
 *   + DP attention:  + 3 x 512 x 8 + 1.5 x 512 x 8 = 33280 -> 0.59375 -> 0.594
 *   + EAGLE drafter: 14848 + 2048 = 16896 -> 0.79375 -> 0.794
 *   tp 2:            graph batch 256: 512 + 12288 + 512 + 256 = 13568
 *                    -> 0.834375 -> 0.834
 * and a 24 GiB GPU (24576 MiB: chunk 2048, graph batch 24 at tp 1, no
 * 10 GiB floor): 512 + 3072 + 48 + 128 = 3760 -> 0.84700 -> 0.847. */
static void engine__sglang_default_fraction_by_hand(void **state)
{
	(void)state;
	const uint64_t gib80 = UINT64_C(80) << 30;
	struct mp_sglang_memory s = {0};
	assert_true(fabs(mp_sglang_mem_fraction_static(gib80, 8, &s) - 0.819) < 1e-12);
	s.dp_attention = true;
	assert_true(fabs(mp_sglang_mem_fraction_static(gib80, 8, &s) - 0.594) < 1e-12);
	s.dp_attention = false;
	s.speculative = true;
	assert_true(fabs(mp_sglang_mem_fraction_static(gib80, 8, &s) - 0.794) < 1e-12);
	s.speculative = false;
	assert_true(fabs(mp_sglang_mem_fraction_static(gib80, 2, &s) - 0.834) < 1e-12);
	assert_true(fabs(mp_sglang_mem_fraction_static(UINT64_C(24) << 30, 1, &s) - 0.847) < 1e-12);
	/* wide DP attention leaves no room: 3 x 512 x 144 alone is 216 GiB */
	s.dp_attention = true;
	assert_true(mp_sglang_mem_fraction_static(gib80, 144, &s) < 0.0);
}

/* The memory rules in the audit (capacity.h), against the same input under
 * moeplan's reserve: the weights, KV, buffers and workspace do not change;
 * the reserve is worked here from them. */
static void engine__memory_rules_in_the_audit(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	mp_model_init(&m);
	mp_hardware_init(&hw);
	struct mp_diags d;
	mp_diags_init(&d);
	assert_int_equal(mp_load_model(src_path("plans/models/deepseek-v3.yaml"), &m, &d), 0);
	assert_int_equal(mp_load_hardware(src_path("hardware/hgx-h800.yaml"), &hw, &d), 0);
	struct mp_capacity_input in = {
		.width = {.ep = 32, .slots = 288, .drafter_slots = 288},
		.requests = 64, .context_tokens = 4096, .tokens_per_request = 1,
	};
	struct mp_capacity_options o;
	mp_capacity_options_init(&o);
	struct mp_capacity base, frac, util;
	assert_int_equal(mp_capacity_compute(&m, &hw, &o, &in, &base), 0);
	assert_true(base.reserve_bytes == MP_CAPACITY_DEFAULT_RESERVE_BYTES);
	assert_true(base.workspace_bytes > 0 && base.buffer_bytes > 0);
	const double H = (double)hw.hbm_bytes;
	/* SGLang's fraction 0.7: the rest (0.3 H) holds buffers, workspace and the reserve */
	o.memory = MP_MEMORY_STATIC_FRACTION;
	o.memory_fraction = 0.7;
	assert_int_equal(mp_capacity_compute(&m, &hw, &o, &in, &frac), 0);
	double rest = 0.3 * H - (double)(base.buffer_bytes + base.workspace_bytes);
	double want = fmax(rest, (double)MP_CAPACITY_DEFAULT_RESERVE_BYTES);
	assert_true(fabs((double)frac.reserve_bytes - want) <= 2.0);
	assert_true(frac.weights_bytes == base.weights_bytes && frac.kv_bytes == base.kv_bytes);
	assert_true(fabs((double)(frac.used_bytes - frac.weights_bytes - frac.kv_bytes) -
			 fmax(0.3 * H, (double)(base.buffer_bytes + base.workspace_bytes) +
					       (double)MP_CAPACITY_DEFAULT_RESERVE_BYTES)) <= 2.0);
	assert_true(frac.memory_fraction == 0.7);
	/* vLLM's utilization 0.92: (1 - 0.92) H on top of moeplan's reserve */
	o.memory = MP_MEMORY_UTILIZATION;
	o.memory_fraction = 0.92;
	assert_int_equal(mp_capacity_compute(&m, &hw, &o, &in, &util), 0);
	want = 0.08 * H + (double)MP_CAPACITY_DEFAULT_RESERVE_BYTES;
	assert_true(fabs((double)util.reserve_bytes - want) <= 2.0);
	assert_true(util.workspace_bytes == base.workspace_bytes);
	/* a fraction out of (0, 1] */
	o.memory_fraction = 1.5;
	assert_int_equal(mp_capacity_compute(&m, &hw, &o, &in, &util), MP_EINVAL);
	mp_model_finish(&m);
	mp_hardware_finish(&hw);
	mp_diags_finish(&d);
}

/* Bad profiles: each error names its line and the field. */
static void engine__bad_profiles(void **state)
{
	(void)state;
	struct {
		const char *text;
		const char *want;
	} cases[] = {
		{"dispatch: even\n", "name"},
		{"name: x\nmemory: {mem_fraction_static: 0.8, reserve: 1 GB}\n", "exactly one"},
		{"name: x\nmemory: {mem_fraction_static: 1.5}\n", "mem_fraction_static"},
		{"name: x\noverlaps: []\n", "overlaps"},
		{"name: x\noverlaps: [fused]\n", "overlaps"},
		{"name: x\ndispatch: round_robin\n", "dispatch"},
		{"name: x\nkernels: {decode: fast}\n", "kernels.decode"},
		{"name: x\nspeed: 3\n", "speed"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *p = write_tmp("bad.yaml", cases[i].text);
		struct mp_engine_profile e;
		mp_engine_profile_init(&e);
		struct mp_diags d;
		mp_diags_init(&d);
		assert_int_equal(mp_load_engine_profile(p, &e, &d), MP_EINVAL);
		assert_true(d.count > 0);
		if (!strstr(d.items[0].message, cases[i].want) || d.items[0].line < 1) {
			fprintf(stderr, "case %zu: %d: %s\n", i, d.items[0].line, d.items[0].message);
			fail();
		}
		assert_null(e.name);
		mp_diags_finish(&d);
		unlink(p);
	}
}

/* --engine on step: overlap modes the engine does not run are refused;
 * the output names the engine and its memory rule. */
static void engine__step(void **state)
{
	(void)state;
	const char *m = src_path("plans/models/deepseek-v3.yaml");
	const char *h = src_path("hardware/hgx-h800.yaml");
	struct cli_result r = cli_run("step", "-m", m, "-H", h, "--phase", "decode", "--ep", "128", "-r",
				      "128", "-c", "4096", "--overlap", "full", "--engine", "sglang", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "engine sglang runs none, two_batch"));
	cli_result_free(&r);
	r = cli_run("step", "-m", m, "-H", h, "--phase", "decode", "--ep", "128", "-r", "128", "-c",
		    "4096", "--engine", "vllm", "-f", "json", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\"memory\": \"gpu_memory_utilization\""));
	assert_non_null(strstr(r.out, "\"hbm_reserve_bytes\""));
	cli_result_free(&r);
	r = cli_run("step", "-m", m, "-H", h, "--phase", "decode", "--ep", "128", "-r", "128", "-c",
		    "4096", "--engine", "trt", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
}

/* A scenario's engine: an overlap it does not run is an error at the
 * overlap's line; search with the engine never picks `full`, which the
 * ideal engine does pick (search__overlaps_restrict_the_grid). */
static void engine__scenario_and_search(void **state)
{
	(void)state;
	char *day = cli_slurp(src_path("plans/deepseek-v3-day.yaml"));
	assert_non_null(day);
	free(day);
	struct cli_result r = cli_run("search", src_path("plans/deepseek-v3-day.yaml"), "--gpus", "32",
				      "--no-placement", "--format", "json", "--engine", "sglang", NULL);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.out, "\"overlap\": \"full\""));
	assert_non_null(strstr(r.out, "\"name\": \"sglang\""));
	cli_result_free(&r);
	r = cli_run("search", src_path("plans/deepseek-v3-day.yaml"), "--gpus", "32", "--no-placement",
		    "--overlaps", "full", "--engine", "vllm", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "engine vllm runs none of them"));
	cli_result_free(&r);
	/* the scenario's own engine: the error is at decode.overlap's line */
	struct cli_result e = cli_run("plan", src_path("tests/data/scenario-engine-full.yaml"), NULL);
	assert_int_equal(e.status, 1);
	assert_non_null(strstr(e.err, "scenario-engine-full.yaml:49:12: error: decode.overlap: full is "
				      "not a mode engine sglang runs (none, two_batch)"));
	cli_result_free(&e);
	/* --engine on the command line wins over the scenario's (the ideal engine runs full) */
	e = cli_run("plan", src_path("tests/data/scenario-engine-full.yaml"), "--engine", "even", NULL);
	assert_non_null(strstr(e.err, "decode: no EP width fits")); /* it fails later, for its int8 peak */
	assert_null(strstr(e.err, "not a mode engine"));
	cli_result_free(&e);
	/* SGLang's own default with DP attention at EP32 leaves no room: said as such */
	const char *aut = write_tmp("auto.yaml", "name: sg-auto\nmemory: {mem_fraction_static: auto, "
				    "dp_attention: true}\n");
	e = cli_run("plan", src_path("plans/deepseek-v3-h800.yaml"), "--engine", aut, NULL);
	assert_int_equal(e.status, 1);
	assert_non_null(strstr(e.err, "EP32: does not fit: SGLang's default --mem-fraction-static at EP32 is -"));
	cli_result_free(&e);
	unlink(aut);
	/* plan: a profile that runs no two_batch, on a scenario whose phases use it */
	const char *prof = write_tmp("nobatch.yaml", "name: plain\noverlaps: [none]\n");
	r = cli_run("plan", src_path("plans/deepseek-v3-h800.yaml"), "--engine", prof, NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "two_batch is not a mode engine plain runs (none)"));
	cli_result_free(&r);
	unlink(prof);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(engine__shipped_files_are_the_builtins),
		cmocka_unit_test(engine__sglang_default_fraction_by_hand),
		cmocka_unit_test(engine__memory_rules_in_the_audit),
		cmocka_unit_test(engine__bad_profiles),
		cmocka_unit_test(engine__step),
		cmocka_unit_test(engine__scenario_and_search),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
