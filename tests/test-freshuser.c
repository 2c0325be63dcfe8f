/* A fresh user's second pass (after issue 16): search takes the phases'
 * settings, shipped presets do not depend on the clock, plurals, messages
 * that name the fix, replan's move summary. Expected values are hand
 * calculations written here or facts of the input files (the preset's
 * decode phase says tokens_per_request 2, acceptance 0.85). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-run.h"

/* The first value of "KEY": after the first occurrence of AFTER in DOC. */
static double json_after(const char *doc, const char *after, const char *key)
{
	const char *p = after ? strstr(doc, after) : doc;
	char pat[128];
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = p ? strstr(p, pat) : NULL;
	return p ? strtod(p + strlen(pat), NULL) : (double)NAN;
}

/* Item 1: search reads the decode phase's acceptance (plans/deepseek-v3-h800.yaml:
 * tokens_per_request 2, acceptance 0.85), so a step yields tau = 1 + (2 - 1) x 0.85
 * = 1.85 tokens per user: tokens/s per user x step time = 1.85. --acceptance 0.5
 * overrides it (tau 1.5), and the text says which was used. */
static void fresh__search_takes_the_decode_acceptance(void **state)
{
	(void)state;
	const char *sc = src_path("plans/deepseek-v3-h800.yaml");
	struct cli_result r = cli_run("search", sc, "--gpus", "176", "--isl", "4383", "--osl", "1211",
				      "--cached", "0.563", "--tpot", "50 ms", "--no-placement", "-f", "json",
				      NULL);
	assert_int_equal(r.status, 0);
	assert_float_equal(json_after(r.out, "\"workload\"", "acceptance"), 0.85, 1e-12);
	const char *dec = strstr(r.out, "\"decode\": {");
	assert_non_null(dec);
	double tau = json_after(dec, "\"chosen\"", "tokens_per_s_per_user") *
		     json_after(dec, "\"chosen\"", "step_time_s");
	assert_float_equal(tau, 1.85, 1e-9);
	cli_result_free(&r);

	r = cli_run("search", sc, "--gpus", "176", "--tpot", "50 ms", "--no-placement", "--acceptance",
		    "0.5", "-f", "json", NULL);
	assert_int_equal(r.status, 0);
	dec = strstr(r.out, "\"decode\": {");
	assert_non_null(dec);
	tau = json_after(dec, "\"chosen\"", "tokens_per_s_per_user") * json_after(dec, "\"chosen\"", "step_time_s");
	assert_float_equal(tau, 1.5, 1e-9);
	cli_result_free(&r);

	r = cli_run("search", sc, "--gpus", "176", "--no-placement", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "decode 2 tokens per request per step, acceptance 0.85 (decode phase)"));
	cli_result_free(&r);
}

/* Item 3: one of a thing is singular; integers print as integers. Mixtral
 * 8x7B at EP8 holds 8 experts on 8 GPUs: 1 slot per GPU on each of its 32
 * layers; --requests 100000 is printed as 100000, not 1e+05. */
static void fresh__plurals(void **state)
{
	(void)state;
	const char *model = src_path("plans/models/mixtral-8x7b.yaml");
	const char *hw = src_path("hardware/hgx-h100.yaml");
	struct cli_result r = cli_run("fit", "--model", model, "--hardware", hw, "--ep", "8", "--requests",
				      "100000", "--context", "10", NULL);
	assert_non_null(strstr(r.out, "1 slot x 32 layers"));
	assert_non_null(strstr(r.out, "x 100000 requests"));
	assert_null(strstr(r.out, "e+05"));
	cli_result_free(&r);
	r = cli_run("roofline", "--model", model, "--hardware", hw, "--ep", "8", "--requests", "1",
		    "--tokens-per-request", "1", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "(1 token per request)"));
	assert_non_null(strstr(r.out, "1 request x 1 token = 1 token per GPU"));
	assert_null(strstr(r.out, " 1 tokens"));
	assert_null(strstr(r.out, " 1 requests"));
	cli_result_free(&r);
}

/* Write TEXT to a scratch file; the caller removes it. */
static void scratch_file(char *path, size_t size, const char *text)
{
	snprintf(path, size, "/tmp/moeplan-fresh-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

/* Item 4: a CSV whose layer column goes backwards is reported at the row at
 * fault (line 3, where layer 1 follows layer 5), not at 1:1; a header other
 * than layer,... says which header is allowed. */
static void fresh__csv_messages_point_at_the_fault(void **state)
{
	(void)state;
	char path[64];
	scratch_file(path, sizeof(path), "layer,e0,e1\n5,1,2\n1,3,4\n");
	struct cli_result r = cli_run("place", path, "--gpus", "2", "--slots", "2", "-o", "/dev/null", NULL);
	assert_int_equal(r.status, 1);
	char want[128];
	snprintf(want, sizeof(want), "%s:3:1: error: layer 1 after layer 5", path);
	assert_non_null(strstr(r.err, want));
	cli_result_free(&r);
	unlink(path);
	scratch_file(path, sizeof(path), "a,b,c\n1,2,3\n");
	r = cli_run("place", path, "--gpus", "3", "--slots", "3", "-o", "/dev/null", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "the only header allowed is 'layer,...'"));
	cli_result_free(&r);
	unlink(path);
}

/* Item 4: a hardware file (or a scenario) given as --model is one error
 * that says what the file is, not one line per unknown or missing field. */
static void fresh__model_option_says_what_the_file_is(void **state)
{
	(void)state;
	static const struct {
		const char *file, *kind;
	} cases[] = {
		{"hardware/hgx-h100.yaml", "this is a hardware file"},
		{"plans/default.yaml", "this is a scenario"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cli_result r = cli_run("fit", "--model", src_path(cases[i].file), "--hardware",
					      src_path("hardware/hgx-h100.yaml"), "--ep", "8", "--requests", "1",
					      "--context", "10", NULL);
		assert_int_equal(r.status, 1);
		assert_non_null(strstr(r.err, cases[i].kind));
		assert_non_null(strstr(r.err, "--model takes a model file"));
		size_t lines = 0;
		for (const char *c = r.err; *c; c++) {
			lines += *c == '\n';
		}
		assert_int_equal(lines, 1);
		cli_result_free(&r);
	}
}

/* Item 5: when the output is only the engine map, the moves are nowhere
 * else, so each is listed even past 64. 70 layers of [1, 2, 3 | 0, 1, 2]
 * with loads 6, 2, 2, 2: expert 0 (load 6) lives only on GPU 1, which
 * carries 6 + 2/2 + 2/2 = 8 at best; one move (a copy of expert 0 onto GPU
 * 0) per layer gives 70 moves. */
static void fresh__replan_lists_moves_when_the_output_is_the_map(void **state)
{
	(void)state;
	char map[64], loads[64], out[64];
	char *text = malloc(70 * 24 + 8);
	assert_non_null(text);
	strcpy(text, "[");
	for (int l = 0; l < 70; l++) {
		strcat(text, l ? ", [1, 2, 3, 0, 1, 2]" : "[1, 2, 3, 0, 1, 2]");
	}
	strcat(text, "]\n");
	scratch_file(map, sizeof(map), text);
	text[0] = '\0';
	for (int l = 0; l < 70; l++) {
		strcat(text, "6,2,2,2\n");
	}
	scratch_file(loads, sizeof(loads), text);
	free(text);
	snprintf(out, sizeof(out), "/tmp/moeplan-fresh-%ld.json", (long)getpid());
	struct cli_result r = cli_run("replan", "--plan", map, "--gpus", "2", "--loads", loads, "--export",
				      "sglang", "-o", out, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "moves (the output is only the map, so they are listed here)"));
	assert_null(strstr(r.out, "see replan.layers[].moved"));
	size_t moves = 0;
	for (const char *p = r.out; (p = strstr(p, "\n  layer ")) != NULL; p++) {
		moves++;
	}
	assert_int_equal(moves, 70);
	/* issue 26 item 9: a slot is numbered on its GPU, as check does, with
	 * the physical index beside: physical = GPU x 3 + slot (3 per GPU) */
	for (const char *p = r.out; (p = strstr(p, "\n  layer ")) != NULL; p++) {
		unsigned layer, gpu, slot, phys;
		assert_int_equal(sscanf(p, "\n  layer %u: GPU %u slot %u (physical %u)", &layer, &gpu, &slot,
					&phys), 4);
		assert_true(slot < 3);
		assert_int_equal(phys, gpu * 3 + slot);
	}
	cli_result_free(&r);
	unlink(map);
	unlink(loads);
	unlink(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fresh__search_takes_the_decode_acceptance),
		cmocka_unit_test(fresh__plurals),
		cmocka_unit_test(fresh__replan_lists_moves_when_the_output_is_the_map),
		cmocka_unit_test(fresh__model_option_says_what_the_file_is),
		cmocka_unit_test(fresh__csv_messages_point_at_the_fault),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
