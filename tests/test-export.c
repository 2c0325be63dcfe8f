/* Engine exports (moeplan/export.h): one row per hidden layer in the
 * engine's numbering, identity on dense layers, nearest planned layer for
 * MoE layers without loads; the .json rule; the launch flags; and the CLI
 * (plan, place, replan --export sglang) checked against SGLang's own rules
 * (sglang-check.h) for DeepSeek-V3, Kimi-K2, Llama 4 Maverick and the
 * shipped OLMoE trace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-run.h"
#include "moeplan/export.h"
#include "moeplan/loader.h"
#include "sglang-check.h"

/* 4 logical experts, 3 GPUs x 2 slots: 2 redundant. */
static const uint32_t row_a[] = {0, 2, 0, 1, 0, 3};
static const uint32_t row_b[] = {3, 1, 2, 0, 1, 3};
static const uint32_t identity[] = {0, 1, 2, 3, 0, 1}; /* p % 4, SGLang's init_trivial */

static void make(struct mp_placement *p)
{
	mp_placement_init(p);
	assert_int_equal(mp_placement_alloc(p, 2, 4, 3, 2), 0);
	memcpy(p->layers[0].slot_expert, row_a, sizeof(row_a));
	memcpy(p->layers[1].slot_expert, row_b, sizeof(row_b));
}

/* 5 hidden layers, MoE layers 1, 3, 4, rows planned for 1 and 4. By hand:
 * layer 0 dense -> identity; 1 -> row A; 2 dense -> identity; 3 has no row:
 * |3-1| = 2, |3-4| = 1 -> row B; 4 -> row B. One layer filled. */
static void export__rows_are_hidden_layers(void **state)
{
	(void)state;
	struct mp_placement p;
	make(&p);
	const uint32_t moe[] = {1, 3, 4};
	const uint32_t rows[] = {1, 4};
	struct mp_export_layers l = {.hidden_layers = 5, .moe_ids = moe, .n_moe = 3, .row_layer = rows};
	uint32_t *map = NULL;
	uint32_t filled = 99;
	assert_int_equal(mp_export_map(&p, &l, &map, &filled), 0);
	assert_int_equal(filled, 1);
	assert_memory_equal(map + 0, identity, sizeof(identity));
	assert_memory_equal(map + 6, row_a, sizeof(row_a));
	assert_memory_equal(map + 12, identity, sizeof(identity));
	assert_memory_equal(map + 18, row_b, sizeof(row_b));
	assert_memory_equal(map + 24, row_b, sizeof(row_b));
	free(map);
	/* a tie (layer 2 between planned 0 and 4) takes the lower layer */
	const uint32_t moe2[] = {0, 2, 4};
	const uint32_t rows2[] = {0, 4};
	l = (struct mp_export_layers){.hidden_layers = 5, .moe_ids = moe2, .n_moe = 3, .row_layer = rows2};
	assert_int_equal(mp_export_map(&p, &l, &map, &filled), 0);
	assert_memory_equal(map + 12, row_a, sizeof(row_a));
	assert_memory_equal(map + 6, identity, sizeof(identity));
	free(map);
	mp_placement_finish(&p);
}

static void export__refuses(void **state)
{
	(void)state;
	struct mp_placement p;
	make(&p);
	uint32_t *map = NULL;
	const uint32_t moe[] = {1, 3, 4};
	const uint32_t rows[] = {1, 2}; /* layer 2 is dense */
	struct mp_export_layers l = {.hidden_layers = 5, .moe_ids = moe, .n_moe = 3, .row_layer = rows};
	assert_int_equal(mp_export_map(&p, NULL, &map, NULL), MP_EINVAL);
	assert_int_equal(mp_export_map(&p, &l, &map, NULL), MP_EINVAL);
	const uint32_t rows_ok[] = {3, 4};
	l.row_layer = rows_ok;
	assert_int_equal(mp_export_map(&p, &l, &map, NULL), 0);
	free(map);
	/* the name must end in .json (SGLang reads others as torch or inline JSON) */
	assert_false(mp_export_name_ok("map"));
	assert_false(mp_export_name_ok("map.yaml"));
	assert_false(mp_export_name_ok("map.JSON"));
	assert_true(mp_export_name_ok("map.json"));
	assert_int_equal(mp_export_save(&p, &l, MP_EXPORT_SGLANG, "/tmp/test-export-never.yaml"), MP_EINVAL);
	assert_int_equal(access("/tmp/test-export-never.yaml", F_OK), -1);
	/* an id out of range: nothing written */
	p.layers[1].slot_expert[5] = 4;
	assert_null(mp_export_doc(&p, &l, MP_EXPORT_SGLANG));
	assert_int_equal(mp_export_save(&p, &l, MP_EXPORT_SGLANG, "/tmp/test-export-never.json"), MP_EINVAL);
	assert_int_equal(access("/tmp/test-export-never.json", F_OK), -1);
	mp_placement_finish(&p);
}

/* The file passes SGLang's rules and reads back through mp_load_map. */
static void export__roundtrip(void **state)
{
	(void)state;
	struct mp_placement p;
	make(&p);
	const uint32_t moe[] = {1, 3, 4};
	const uint32_t rows[] = {1, 4};
	struct mp_export_layers l = {.hidden_layers = 5, .moe_ids = moe, .n_moe = 3, .row_layer = rows};
	char path[] = "/tmp/test-export-XXXXXX.json";
	int fd = mkstemps(path, 5);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mp_export_save(&p, &l, MP_EXPORT_SGLANG, path), 0);
	char *text = cli_slurp(path);
	struct sglang_map m = {0};
	const char *why = sglang_accepts(path, text, 5, 4, 2, 3, &m);
	assert_null(why);
	sglang_map_free(&m);
	free(text);
	struct mp_placement back;
	mp_placement_init(&back);
	struct mp_diags d;
	mp_diags_init(&d);
	assert_int_equal(mp_load_map(path, NULL, 3, &back, &d), 0);
	assert_int_equal(back.n_layers, 5);
	assert_memory_equal(back.layers[1].slot_expert, row_a, sizeof(row_a));
	assert_memory_equal(back.layers[4].slot_expert, row_b, sizeof(row_b));
	mp_placement_finish(&back);
	mp_diags_finish(&d);
	mp_placement_finish(&p);
	unlink(path);
}

static void export__flags(void **state)
{
	(void)state;
	struct mp_placement p;
	make(&p);
	char buf[320];
	mp_export_flags(&p, MP_EXPORT_SGLANG, "map.json", buf, sizeof(buf));
	assert_string_equal(buf, "--tp-size 3 --ep-size 3 --ep-num-redundant-experts 2 "
				 "--init-expert-location map.json --ep-dispatch-algorithm static");
	enum mp_export_format f;
	assert_int_equal(mp_export_parse("SGLang", &f), 0);
	assert_int_equal(f, MP_EXPORT_SGLANG);
	assert_int_equal(mp_export_parse("vllm", &f), MP_EINVAL);
	assert_int_equal(mp_export_parse("trtllm", &f), MP_EINVAL);
	mp_placement_finish(&p);
}

static char *tmp_name(const char *stem, const char *ext)
{
	static char bufs[8][128];
	static int next;
	char *b = bufs[next++ % 8];
	snprintf(b, 128, "/tmp/test-export-%s-%d%s", stem, (int)getpid(), ext);
	return b;
}

/* The shipped OLMoE trace names its rows (# layers: 0, 7, 15) of a
 * 16-layer all-MoE model: 16 rows, rows 0, 7 and 15 are the plan's decode
 * rows, and the other 13 take the nearest planned layer (by hand: 3 -> 0
 * (3 < 4), 4 -> 7 (4 > 3), 11 -> 7 (a tie, 4 = 4, the lower), 12 -> 15). */
static void export__cli_plan_trace(void **state)
{
	(void)state;
	const char *plan = tmp_name("plan", ".json");
	const char *map = tmp_name("olmoe", ".json");
	struct cli_result r = cli_run("plan", src_path("plans/olmoe-github.yaml"), "--format", "json",
				      "-o", plan, "--export", "sglang", "--export-output", map, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "13 of 16 MoE layers had no loads of their own"));
	assert_non_null(strstr(r.err, "--tp-size 8 --ep-size 8 --ep-num-redundant-experts 8 "
				      "--init-expert-location"));
	assert_non_null(strstr(r.err, "--ep-dispatch-algorithm static"));
	cli_result_free(&r);
	/* issue 26 item 9: the plan's notes name the map's file, not MAP.json */
	char *doc = cli_slurp(plan);
	char want[512];
	snprintf(want, sizeof(want), "--init-expert-location %s --ep-dispatch-algorithm static", map);
	assert_non_null(strstr(doc, want));
	assert_null(strstr(doc, "MAP.json"));
	free(doc);
	char *text = cli_slurp(map);
	struct sglang_map m = {0};
	const char *why = sglang_accepts(map, text, 16, 64, 8, 8, &m);
	if (why) {
		fail_msg("SGLang would refuse %s: %s", map, why);
	}
	struct mp_placement pl;
	mp_placement_init(&pl);
	struct mp_diags d;
	mp_diags_init(&d);
	assert_int_equal(mp_load_map(plan, "decode", 0, &pl, &d), 0);
	assert_int_equal(pl.n_layers, 3);
	const uint32_t at[] = {0, 7, 15};
	const uint32_t from[16] = {0, 0, 0, 0, 7, 7, 7, 7, 7, 7, 7, 7, 15, 15, 15, 15};
	for (uint32_t h = 0; h < 16; h++) {
		uint32_t row = 0;
		while (at[row] != from[h]) {
			row++;
		}
		for (uint32_t s = 0; s < 72; s++) {
			assert_int_equal(m.v[h * 72 + s], pl.layers[row].slot_expert[s]);
		}
	}
	mp_placement_finish(&pl);
	mp_diags_finish(&d);
	sglang_map_free(&m);
	free(text);
	/* the same trace without its '# layers:' line: refused, nothing written */
	char *csv = cli_slurp(src_path("plans/traces/olmoe_github.csv"));
	char *line = strstr(csv, "# layers:");
	assert_non_null(line);
	memset(line, ' ', (size_t)(strchr(line, '\n') - line));
	const char *bare = tmp_name("bare", ".csv");
	FILE *f = fopen(bare, "w");
	fputs(csv, f);
	fclose(f);
	free(csv);
	const char *sc = tmp_name("scenario", ".yaml");
	f = fopen(sc, "w");
	fprintf(f, "model: %s\ntraffic:\n  observed: {csv: %s}\n"
		   "prefill: {hardware: %s, gpus: 8, ep_min: 1, ep_max: 8, slots: {rule: min_redundant, "
		   "min_redundant: 0}, chunk_tokens: 8192}\n"
		   "decode: {hardware: %s, gpus: 8, slots: {rule: per_gpu, per_gpu: 1}, "
		   "requests_per_gpu: 64, tokens_per_request: 1, context_tokens: 4096}\n",
		src_path("plans/models/olmoe-1b-7b.yaml"), bare, src_path("hardware/hgx-h100.yaml"),
		src_path("hardware/hgx-h100.yaml"));
	fclose(f);
	unlink(map);
	r = cli_run("plan", sc, "--export", "sglang", "-o", map, NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "do not say which model layers they are"));
	assert_int_equal(access(map, F_OK), -1);
	cli_result_free(&r);
	/* a name SGLang would not read as JSON, and the removed vLLM export */
	r = cli_run("plan", src_path("plans/olmoe-github.yaml"), "--export", "sglang", "-o", "map.yaml", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "must end in .json"));
	cli_result_free(&r);
	r = cli_run("plan", src_path("plans/olmoe-github.yaml"), "--export", "vllm", "-o", map, NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "vLLM loads no expert placement from a file"));
	cli_result_free(&r);
	unlink(plan);
	unlink(bare);
	unlink(sc);
}

/* place --model: rows of loads for every MoE layer, exported one row per
 * hidden layer. Layer numbering from the models' configs (written here by
 * hand): DeepSeek-V3 61 layers, first_k_dense_replace 3; Kimi-K2 61, 1;
 * Llama 4 Maverick 48, interleave_moe_layer_step 2 (odd layers MoE). */
static void place_model(const char *model, uint32_t moe, uint32_t hidden, uint32_t experts,
			const uint32_t *moe_ids)
{
	const char *loads = tmp_name("loads", ".csv");
	FILE *f = fopen(loads, "w");
	for (uint32_t r = 0; r < moe; r++) {
		for (uint32_t e = 0; e < experts; e++) {
			fprintf(f, "%s%u", e ? "," : "", 1 + (e * 7 + r * 3) % 23);
		}
		fputc('\n', f);
	}
	fclose(f);
	const char *out = tmp_name("placement", ".json");
	const char *map = tmp_name("map", ".json");
	char slots[16];
	snprintf(slots, sizeof(slots), "%u", experts + 8);
	struct cli_result r = cli_run("place", loads, "--gpus", "8", "--slots", slots, "--effort", "0.01",
				      "--model", src_path(model), "--format", "json", "-o", out,
				      "--export", "sglang", "--export-output", map, NULL);
	if (r.status != 0) {
		fail_msg("%s: %s", model, r.err);
	}
	cli_result_free(&r);
	char *text = cli_slurp(map);
	struct sglang_map m = {0};
	const char *why = sglang_accepts(map, text, hidden, experts, 8, 8, &m);
	if (why) {
		fail_msg("SGLang would refuse the %s map: %s", model, why);
	}
	struct mp_placement pl;
	mp_placement_init(&pl);
	struct mp_diags d;
	mp_diags_init(&d);
	assert_int_equal(mp_load_map(out, NULL, 0, &pl, &d), 0);
	assert_int_equal(pl.n_layers, moe);
	const uint32_t N = experts + 8;
	uint32_t k = 0;
	for (uint32_t h = 0; h < hidden; h++) {
		bool is_moe = k < moe && moe_ids[k] == h;
		for (uint32_t s = 0; s < N; s++) {
			long want = is_moe ? (long)pl.layers[k].slot_expert[s] : (long)(s % experts);
			if (m.v[(size_t)h * N + s] != want) {
				fail_msg("%s: layer %u slot %u: %ld, expected %ld", model, h, s,
					 m.v[(size_t)h * N + s], want);
			}
		}
		k += is_moe;
	}
	mp_placement_finish(&pl);
	mp_diags_finish(&d);
	sglang_map_free(&m);
	free(text);
	unlink(loads);
	unlink(out);
	unlink(map);
}

static void export__cli_place_models(void **state)
{
	(void)state;
	uint32_t ids[64];
	for (uint32_t k = 0; k < 58; k++) {
		ids[k] = 3 + k;
	}
	place_model("plans/models/deepseek-v3.yaml", 58, 61, 256, ids);
	for (uint32_t k = 0; k < 60; k++) {
		ids[k] = 1 + k;
	}
	place_model("plans/models/kimi-k2.yaml", 60, 61, 384, ids);
	for (uint32_t k = 0; k < 24; k++) {
		ids[k] = 2 * k + 1;
	}
	place_model("plans/models/llama4-maverick.yaml", 24, 48, 128, ids);
}

/* An SGLang dump names every hidden layer (its rows are num_hidden_layers):
 * place exports its rows as they are, no model needed. */
static void export__cli_place_dump(void **state)
{
	(void)state;
	const char *map = tmp_name("dump-map", ".json");
	struct cli_result r = cli_run("place", src_path("tests/data/loads/eplb-sglang-3d.json"), "--gpus",
				      "4", "--slots", "16", "--export", "sglang", "-o", map, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	char *text = cli_slurp(map);
	struct sglang_map m = {0};
	assert_null(sglang_accepts(map, text, 2, 12, 4, 4, &m));
	sglang_map_free(&m);
	free(text);
	unlink(map);
}

/* `moeplan replan --export sglang` on a bare map (the engine's rows): the
 * engine JSON and the flags; vLLM's export is gone; a plan's MoE rows need
 * --model. */
static void export__cli_replan(void **state)
{
	(void)state;
	const char *map = tmp_name("replan-map", ".json");
	FILE *f = fopen(map, "w");
	fputs("[[0, 1, 2, 0, 1, 3]]\n", f);
	fclose(f);
	const char *loads = tmp_name("replan-loads", ".csv");
	f = fopen(loads, "w");
	fputs("6,2,2,2\n", f);
	fclose(f);
	const char *out = tmp_name("replan-out", ".json");
	struct cli_result r = cli_run("replan", "--plan", map, "--gpus", "2", "--loads", loads,
				      "--export", "sglang", "-o", out, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "--tp-size 2 --ep-size 2 --ep-num-redundant-experts 2 --init-expert-location"));
	char *got = cli_slurp(out);
	assert_string_equal(got, "{\n  \"physical_to_logical_map\": [\n    [0, 1, 2, 0, 1, 3]\n  ]\n}\n");
	free(got);
	cli_result_free(&r);
	r = cli_run("replan", "--plan", map, "--gpus", "2", "--loads", loads, "--export", "vllm", "-o", out,
		    NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	r = cli_run("replan", "--plan", map, "--gpus", "2", "--loads", loads, "--export", "sglang", "-o",
		    "new-map", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	unlink(map);
	unlink(loads);
	unlink(out);
}

/* Every "--flag" of text is one SGLang defines: the list from
 * server_args.py at 60d36e7 (tests/data/engines/sglang-server-args-60d36e7.txt,
 * its source line in the file). Returns the number of flags checked. */
static int flags_known(const char *text)
{
	char *list = cli_slurp(src_path("tests/data/engines/sglang-server-args-60d36e7.txt"));
	assert_non_null(list);
	int n = 0;
	for (const char *p = strstr(text, " --"); p; p = strstr(p + 1, " --")) {
		char flag[96];
		size_t k = 0;
		for (p++; k + 1 < sizeof(flag) && (p[k] == '-' || (p[k] >= 'a' && p[k] <= 'z') ||
						   (p[k] >= '0' && p[k] <= '9')); k++) {
			flag[k] = p[k];
		}
		flag[k] = '\0';
		char needle[100];
		snprintf(needle, sizeof(needle), "\n%s\n", flag);
		if (!strstr(list, needle)) {
			fail_msg("%s is not a flag of SGLang's server_args.py at 60d36e7", flag);
		}
		n++;
	}
	free(list);
	return n;
}

/* Issue 24: the whole launch line, every flag named as server_args.py
 * names it, and the values the plan assumes. */
static void export__launch_line(void **state)
{
	(void)state;
	struct mp_placement p;
	mp_placement_init(&p);
	assert_int_equal(mp_placement_alloc(&p, 1, 256, 72, 4), 0);
	struct mp_export_launch l;
	mp_export_launch_init(&l, &p);
	assert_int_equal(l.redundant, 32);
	l.gpus_per_node = 8;
	l.mtp_steps = 2;
	l.mem_fraction_static = 0.8;
	l.deepep_mode = "low_latency";
	l.file = "map.json";
	char line[1024];
	mp_export_launch_line(&l, line, sizeof(line));
	assert_int_equal(flags_known(line), 18);
	assert_non_null(strstr(line, " --tp-size 72 --dp-size 72 --enable-dp-attention --ep-size 72 "
				     "--moe-a2a-backend deepep --deepep-mode low_latency "
				     "--ep-num-redundant-experts 32 --init-expert-location map.json "
				     "--ep-dispatch-algorithm static --nnodes 9 "));
	assert_non_null(strstr(line, " --speculative-algorithm EAGLE --speculative-num-steps 2 "
				     "--speculative-eagle-topk 1 --speculative-num-draft-tokens 3 "
				     "--mem-fraction-static 0.8"));
	mp_placement_finish(&p);
	/* place prints it, with the nodes and the algorithm it planned for */
	struct cli_result r = cli_run("place", src_path("tests/data/loads/eplb-sglang-3d.json"), "--gpus", "4",
				      "--slots", "20", "--gpus-per-node", "2", "--engine", "sglang",
				      "--ep-dispatch-algorithm", "dynamic", "--export", "sglang", "-o",
				      "/tmp/test-export-launch.json", NULL);
	assert_int_equal(r.status, 0);
	const char *launch = strstr(r.err, "sglang launch: python3");
	assert_non_null(launch);
	assert_true(flags_known(strstr(r.err, "sglang flags:")) >= 13);
	assert_non_null(strstr(launch, "--ep-dispatch-algorithm dynamic --nnodes 2 "));
	/* the short flags line and the explanation say the same (a tester saw
	 * 'static' there and 'dynamic' called SGLang's default) */
	const char *flags = strstr(r.err, "sglang flags:");
	assert_true(flags && strcspn(flags, "\n") > strlen("--ep-dispatch-algorithm dynamic"));
	assert_int_equal(strncmp(flags + strcspn(flags, "\n") - strlen("--ep-dispatch-algorithm dynamic"),
				 "--ep-dispatch-algorithm dynamic", strlen("--ep-dispatch-algorithm dynamic")),
			 0);
	assert_non_null(strstr(r.err, "--ep-dispatch-algorithm dynamic (set by the plan; SGLang's default "
				      "with --init-expert-location is static)"));
	cli_result_free(&r);
	/* replan --export keeps the nodes and the algorithm it re-planned for */
	r = cli_run("replan", "--plan", "/tmp/test-export-launch.json", "--gpus", "4", "--loads",
		    src_path("tests/data/loads/eplb-sglang-3d.json"), "--engine", "sglang",
		    "--ep-dispatch-algorithm", "dynamic", "--gpus-per-node", "2", "--export", "sglang", "-o",
		    "/tmp/test-export-launch-2.json", NULL);
	assert_int_equal(r.status, 0);
	launch = strstr(r.err, "sglang launch: python3");
	assert_non_null(launch);
	assert_non_null(strstr(launch, "--ep-dispatch-algorithm dynamic --nnodes 2 "));
	cli_result_free(&r);
	unlink("/tmp/test-export-launch.json");
	unlink("/tmp/test-export-launch-2.json");
}

/* plan --export sglang (issue 24 item 4): the launch line carries the
 * plan's MTP and memory fraction, every flag as server_args.py names it.
 * tests/data/scenario-mtp.yaml: DeepSeek-V3 (a drafter) with
 * tokens_per_request 2, so one drafted token: --speculative-num-steps 1,
 * --speculative-num-draft-tokens 2; the fraction SGLang's KV pool needs
 * for the plan's weights and KV cache, (weights + KV) / HBM of the
 * decode audit (model_runner_kv_cache_mixin.py profile_max_num_token). */
static double json_number(const char *text, const char *key)
{
	char needle[96];
	snprintf(needle, sizeof(needle), "\"%s\": ", key);
	const char *p = text ? strstr(text, needle) : NULL;
	return p ? strtod(p + strlen(needle), NULL) : -1;
}

static void export__plan_launch_line(void **state)
{
	(void)state;
	char map[64], pl[64];
	snprintf(map, sizeof(map), "/tmp/test-export-plan-%d.json", (int)getpid());
	snprintf(pl, sizeof(pl), "/tmp/test-export-plan-%d-plan.json", (int)getpid());
	struct cli_result r = cli_run("plan", src_path("tests/data/scenario-mtp.yaml"), "-o", pl, "--export",
				      "sglang", "--export-output", map, NULL);
	assert_int_equal(r.status, 0);
	const char *line = strstr(r.err, "sglang launch: python3");
	assert_non_null(line);
	char launch[1024];
	size_t n = strcspn(line, "\n");
	assert_true(n < sizeof(launch));
	memcpy(launch, line, n);
	launch[n] = '\0';
	assert_int_equal(flags_known(launch), 15);
	assert_non_null(strstr(launch, " --speculative-algorithm EAGLE --speculative-num-steps 1 "
				       "--speculative-eagle-topk 1 --speculative-num-draft-tokens 2 "));
	char *planned = cli_slurp(pl);
	assert_non_null(planned);
	const char *hbm = strstr(strstr(planned, "\"decode\": {"), "\"hbm\": {");
	assert_non_null(hbm);
	double fraction = (json_number(hbm, "weights_bytes") + json_number(hbm, "kv_cache_bytes")) /
			  json_number(hbm, "capacity_bytes");
	assert_true(fraction > 0 && fraction < 1);
	char want[64];
	snprintf(want, sizeof(want), " --mem-fraction-static %.3g", fraction);
	assert_non_null(strstr(launch, want));
	free(planned);
	cli_result_free(&r);
	unlink(map);
	unlink(pl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(export__rows_are_hidden_layers),
		cmocka_unit_test(export__refuses),
		cmocka_unit_test(export__roundtrip),
		cmocka_unit_test(export__flags),
		cmocka_unit_test(export__cli_plan_trace),
		cmocka_unit_test(export__cli_place_models),
		cmocka_unit_test(export__cli_place_dump),
		cmocka_unit_test(export__cli_replan),
		cmocka_unit_test(export__launch_line),
		cmocka_unit_test(export__plan_launch_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
