/* Engine exports (moeplan/export.h): the exact SGLang and vLLM documents,
 * the round trip through mp_load_map, the engine flags, and the CLI's
 * --export on `moeplan replan`. */
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

/* vLLM's own example (vllm/distributed/eplb/eplb_state.py, EplbState
 * docstrings): "a 2-layer MoE model with 6 physical experts and 4 logical
 * experts on 3 EP ranks":
 *   physical_to_logical_map [[0, 1, 2, 3, 0, 1], [0, 2, 0, 1, 0, 3]]
 *   logical_to_physical_map [[[0, 4, -1], [1, 5, -1], [2, -1, -1], [3, -1, -1]],
 *                            [[0, 2, 4], [3, -1, -1], [1, -1, -1], [5, -1, -1]]]
 *   logical_replica_count   [[2, 2, 1, 1], [3, 1, 1, 1]]  */
static const uint32_t vllm_map[] = {0, 1, 2, 3, 0, 1, 0, 2, 0, 1, 0, 3};

static void make(struct mp_placement *p)
{
	mp_placement_init(p);
	assert_int_equal(mp_placement_alloc(p, 2, 4, 3, 2), 0);
	memcpy(p->layers[0].slot_expert, vllm_map, 6 * sizeof(uint32_t));
	memcpy(p->layers[1].slot_expert, vllm_map + 6, 6 * sizeof(uint32_t));
}

static char *json_text(const struct mp_doc *doc)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	assert_non_null(f);
	assert_int_equal(mp_doc_write_json(doc, f), 0);
	fclose(f);
	return text;
}

static void export__vllm_matches_vllm_example(void **state)
{
	(void)state;
	struct mp_placement p;
	make(&p);
	struct mp_doc *doc = mp_export_doc(&p, MP_EXPORT_VLLM);
	assert_non_null(doc);
	char *text = json_text(doc);
	const char *want =
		"{\n"
		"  \"physical_to_logical_map\": [\n"
		"    [0, 1, 2, 3, 0, 1],\n"
		"    [0, 2, 0, 1, 0, 3]\n"
		"  ],\n"
		"  \"logical_to_physical_map\": [\n"
		"    [\n"
		"      [0, 4, -1],\n"
		"      [1, 5, -1],\n"
		"      [2, -1, -1],\n"
		"      [3, -1, -1]\n"
		"    ],\n"
		"    [\n"
		"      [0, 2, 4],\n"
		"      [3, -1, -1],\n"
		"      [1, -1, -1],\n"
		"      [5, -1, -1]\n"
		"    ]\n"
		"  ],\n"
		"  \"logical_replica_count\": [\n"
		"    [2, 2, 1, 1],\n"
		"    [3, 1, 1, 1]\n"
		"  ],\n"
		"  \"ep_size\": 3,\n"
		"  \"num_redundant_experts\": 2\n"
		"}\n";
	assert_string_equal(text, want);
	free(text);
	mp_doc_destroy(doc);
	mp_placement_finish(&p);
}

/* SGLang passes the JSON object's keys to init_by_mapping as keyword
 * arguments (sglang/srt/eplb/expert_location.py): only
 * physical_to_logical_map may be there. */
static void export__sglang_has_only_the_map(void **state)
{
	(void)state;
	struct mp_placement p;
	make(&p);
	struct mp_doc *doc = mp_export_doc(&p, MP_EXPORT_SGLANG);
	char *text = json_text(doc);
	assert_string_equal(text, "{\n"
				  "  \"physical_to_logical_map\": [\n"
				  "    [0, 1, 2, 3, 0, 1],\n"
				  "    [0, 2, 0, 1, 0, 3]\n"
				  "  ]\n"
				  "}\n");
	free(text);
	mp_doc_destroy(doc);
	mp_placement_finish(&p);
}

static void roundtrip(enum mp_export_format format)
{
	struct mp_placement p;
	make(&p);
	char path[] = "/tmp/test-export-XXXXXX.json";
	int fd = mkstemps(path, 5);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mp_export_save(&p, format, path), 0);
	struct mp_placement back;
	mp_placement_init(&back);
	struct mp_diags d;
	mp_diags_init(&d);
	/* SGLang's file does not say how many GPUs: give the EP size; the
	 * vLLM export carries it as ep_size */
	int rc = mp_load_map(path, NULL, format == MP_EXPORT_SGLANG ? 3 : 0, &back, &d);
	for (size_t i = 0; i < d.count; i++) {
		mp_diag_print(&d.items[i], stderr);
	}
	assert_int_equal(rc, 0);
	assert_int_equal(back.n_layers, 2);
	assert_int_equal(back.gpus, 3);
	assert_int_equal(back.slots_per_gpu, 2);
	assert_int_equal(back.n_experts, 4);
	for (uint32_t l = 0; l < 2; l++) {
		assert_memory_equal(back.layers[l].slot_expert, p.layers[l].slot_expert, 6 * sizeof(uint32_t));
	}
	mp_placement_finish(&back);
	mp_diags_finish(&d);
	mp_placement_finish(&p);
	unlink(path);
}

/* The vLLM export's ep_size gives the GPU count; a different --gpus is an
 * error at the ep_size value. In the file (export__vllm_matches_vllm_example
 * above) `  "ep_size": 3,` is line 24 and the 3 is in column 14. Without
 * ep_size and without a GPU count the map cannot be read. */
static void export__vllm_ep_size_gives_gpus(void **state)
{
	(void)state;
	struct mp_placement p;
	make(&p);
	char path[] = "/tmp/test-export-XXXXXX.json";
	int fd = mkstemps(path, 5);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mp_export_save(&p, MP_EXPORT_VLLM, path), 0);
	struct mp_placement back;
	mp_placement_init(&back);
	struct mp_diags d;
	mp_diags_init(&d);
	assert_int_equal(mp_load_map(path, NULL, 3, &back, &d), 0);
	assert_int_equal(back.gpus, 3);
	mp_placement_finish(&back);
	mp_placement_init(&back);
	assert_int_equal(mp_load_map(path, NULL, 2, &back, &d), MP_EINVAL);
	assert_int_equal(d.count, 1);
	assert_int_equal(d.items[0].line, 24);
	assert_int_equal(d.items[0].column, 14);
	assert_non_null(strstr(d.items[0].message, "ep_size: the file says 3 GPUs, but 2 were asked for"));
	mp_diags_finish(&d);
	mp_placement_finish(&back);
	/* SGLang's map alone: no GPU count anywhere */
	assert_int_equal(mp_export_save(&p, MP_EXPORT_SGLANG, path), 0);
	mp_diags_init(&d);
	mp_placement_init(&back);
	assert_int_equal(mp_load_map(path, NULL, 0, &back, &d), MP_EINVAL);
	assert_int_equal(d.count, 1);
	mp_diags_finish(&d);
	mp_placement_finish(&back);
	mp_placement_finish(&p);
	unlink(path);
}

static void export__sglang_roundtrip(void **state)
{
	(void)state;
	roundtrip(MP_EXPORT_SGLANG);
}

static void export__vllm_roundtrip(void **state)
{
	(void)state;
	roundtrip(MP_EXPORT_VLLM);
}

/* 6 physical experts for 4 logical on 3 GPUs: 2 redundant. */
static void export__flags(void **state)
{
	(void)state;
	struct mp_placement p;
	make(&p);
	char buf[256];
	mp_export_flags(&p, MP_EXPORT_SGLANG, "map.json", buf, sizeof(buf));
	assert_string_equal(buf, "--ep-size 3 --ep-num-redundant-experts 2 --init-expert-location map.json");
	mp_export_flags(&p, MP_EXPORT_VLLM, NULL, buf, sizeof(buf));
	assert_string_equal(buf, "--data-parallel-size 3 --enable-expert-parallel --enable-eplb "
				 "--eplb-config '{\"num_redundant_experts\": 2}'");
	enum mp_export_format f;
	assert_int_equal(mp_export_parse("SGLang", &f), 0);
	assert_int_equal(f, MP_EXPORT_SGLANG);
	assert_int_equal(mp_export_parse("vllm", &f), 0);
	assert_int_equal(f, MP_EXPORT_VLLM);
	assert_int_equal(mp_export_parse("trtllm", &f), MP_EINVAL);
	/* an id out of range is refused, nothing written */
	p.layers[1].slot_expert[5] = 4;
	assert_null(mp_export_doc(&p, MP_EXPORT_SGLANG));
	assert_int_equal(mp_export_save(&p, MP_EXPORT_SGLANG, "/tmp/test-export-never.json"), MP_EINVAL);
	assert_int_equal(access("/tmp/test-export-never.json", F_OK), -1);
	mp_placement_finish(&p);
}

/* `moeplan replan --export sglang` writes the engine JSON as the output
 * and prints the SGLang flags; a vLLM export read back as the current plan
 * gives a vLLM document again. */
static void export__cli_replan(void **state)
{
	(void)state;
	char map[] = "/tmp/test-export-map-XXXXXX.json";
	int fd = mkstemps(map, 5);
	assert_true(fd >= 0);
	const char *text = "[[0, 1, 2, 0, 1, 3]]\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	char loads[] = "/tmp/test-export-loads-XXXXXX.csv";
	fd = mkstemps(loads, 4);
	assert_true(fd >= 0);
	text = "6,2,2,2\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	char out[] = "/tmp/test-export-out-XXXXXX.json";
	fd = mkstemps(out, 5);
	assert_true(fd >= 0);
	close(fd);
	struct cli_result r = cli_run("replan", "--plan", map, "--gpus", "2", "--loads", loads,
				      "--export", "sglang", "-o", out, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "--ep-size 2 --ep-num-redundant-experts 2 --init-expert-location"));
	char *got = cli_slurp(out);
	assert_string_equal(got, "{\n  \"physical_to_logical_map\": [\n    [0, 1, 2, 0, 1, 3]\n  ]\n}\n");
	free(got);
	cli_result_free(&r);
	r = cli_run("replan", "--plan", map, "--gpus", "2", "--loads", loads, "--export", "vllm",
		    "-o", out, "-q", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	char out2[] = "/tmp/test-export-out2-XXXXXX.json";
	fd = mkstemps(out2, 5);
	assert_true(fd >= 0);
	close(fd);
	/* no --gpus: the export's ep_size says 2 */
	r = cli_run("replan", "--plan", out, "--loads", loads, "-o", out2, "-q", NULL);
	assert_int_equal(r.status, 0);
	got = cli_slurp(out2);
	assert_non_null(strstr(got, "\"logical_replica_count\": [\n    [2, 2, 1, 1]\n  ]"));
	free(got);
	cli_result_free(&r);
	r = cli_run("replan", "--plan", map, "--gpus", "2", "--loads", loads, "--export", "trt", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	unlink(map);
	unlink(loads);
	unlink(out);
	unlink(out2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(export__vllm_matches_vllm_example),
		cmocka_unit_test(export__sglang_has_only_the_map),
		cmocka_unit_test(export__sglang_roundtrip),
		cmocka_unit_test(export__vllm_roundtrip),
		cmocka_unit_test(export__vllm_ep_size_gives_gpus),
		cmocka_unit_test(export__flags),
		cmocka_unit_test(export__cli_replan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
