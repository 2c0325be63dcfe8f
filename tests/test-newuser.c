/* Issue 16: the first hour of a new user. One test (or more) per item,
 * mostly through the CLI, on the cases the user tried: Mixtral 8x7B on
 * 8xH100, gpt-oss-120b on one H100, Qwen3-235B-A22B on 8xH200. Expected
 * values are hand calculations written here, published deployments
 * (DeepSeek's 32 redundant experts for 256), or another command of the
 * program computing the same thing another way (fit against plan). */
#define _XOPEN_SOURCE 700 /* posix_openpt, grantpt, unlockpt, ptsname */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli-run.h"
#include "moeplan/scenario.h"

/* The n-th (0-based) value of "KEY": in a JSON document, or NAN. */
static double json_real(const char *doc, const char *key, int nth)
{
	char pat[128];
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	const char *p = doc;
	for (int i = 0; p && i <= nth; i++) {
		p = strstr(p, pat);
		if (p && i < nth) {
			p += strlen(pat);
		}
	}
	return p ? strtod(p + strlen(pat), NULL) : (double)NAN;
}

/* The first value of "KEY": in the "PHASE": { ... } object of a plan. */
static double phase_real(const char *doc, const char *phase, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\": {", phase);
	const char *p = strstr(doc, pat);
	return p ? json_real(p, key, 0) : (double)NAN;
}

/* A scratch file name (removed by the caller). */
static void scratch(char *buf, size_t size, const char *tag)
{
	snprintf(buf, size, "/tmp/moeplan-newuser-%s-XXXXXX", tag);
	int fd = mkstemp(buf);
	assert_true(fd >= 0);
	close(fd);
}

/* Item 2: the default redundancy is 12.5% of the experts, none when every
 * expert has a GPU to itself. DeepSeek-V3's published deployment (DeepSeek
 * open-infra-index, inference system overview): 256 experts + 32 redundant
 * = 288 slots at EP32 (prefill, 9 per GPU) and at EP144 (decode, 2 per GPU). */
static void newuser__default_redundancy_scales_with_experts(void **state)
{
	(void)state;
	struct mp_scenario sc;
	mp_scenario_init(&sc);
	assert_int_equal(mp_phase_slots(&sc.decode, 256, 32), 288);
	assert_int_equal(mp_phase_slots(&sc.decode, 256, 144), 288);
	/* Mixtral: 8 experts at EP8, one per GPU, no replica */
	assert_int_equal(mp_phase_slots(&sc.decode, 8, 8), 8);
	assert_int_equal(mp_default_redundant(8, 8), 0);
	/* E = 128 at EP8: 128 + 16 = 144, 12.5% more, not 160 (25%) */
	assert_int_equal(mp_phase_slots(&sc.decode, 128, 8), 144);
	/* Mixtral at EP2: 8 + 1 = 9, rounded up to a multiple of 2 */
	assert_int_equal(mp_phase_slots(&sc.prefill, 8, 2), 10);
	/* an explicit min_redundant keeps the article's rule: 416 at EP8 */
	sc.decode.min_redundant = 32;
	assert_int_equal(mp_phase_slots(&sc.decode, 384, 8), 416);
	mp_scenario_finish(&sc);
}

/* Item 2: Mixtral 8x7B on 8xH100 plans decode at EP8 with 8 slots (no
 * redundant copy) and holds one expert's weights per GPU: 3 matrices of
 * 4096 x 14336 in BF16 over 32 layers = 3 * 4096 * 14336 * 2 * 32 B =
 * 11,274,289,152 B. */
static void newuser__mixtral_on_8xh100_fits(void **state)
{
	(void)state;
	struct cli_result r = cli_run("plan", src_path("tests/data/newuser/mixtral-8xh100.yaml"),
				      "-q", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal((int)phase_real(r.out, "decode", "ep"), 8);
	assert_int_equal((int)phase_real(r.out, "decode", "slots"), 8);
	assert_int_equal((int)phase_real(r.out, "decode", "redundant"), 0);
	assert_true(phase_real(r.out, "decode", "routed_bytes") == 11274289152.0);
	cli_result_free(&r);
}

/* Item 2: a width that does not fit names its largest term and what would
 * fit; the suggestion is checked with `moeplan fit`, which computes the
 * HBM of a batch on its own: 62 requests fit at EP8, 63 do not, and a
 * context of 7999 tokens fits for 64 requests, 8000 does not (H100 with the
 * 81,559 MiB the driver reports, issue 12). */
static void newuser__no_fit_says_what_would_fit(void **state)
{
	(void)state;
	struct cli_result r = cli_run("plan", src_path("tests/data/newuser/mixtral-8xh100-64.yaml"),
				      "-q", "--format", "json", NULL);
	assert_int_equal(r.status, 1);
	const char *ep8 = strstr(r.err, "decode: EP8: does not fit");
	assert_non_null(ep8);
	assert_non_null(strstr(ep8, "largest term KV cache"));
	assert_non_null(strstr(ep8, "fits with 62 requests per GPU"));
	assert_non_null(strstr(ep8, "fits at a context of 7999 tokens"));
	cli_result_free(&r);
	const char *m = src_path("plans/models/mixtral-8x7b.yaml");
	const char *h = src_path("hardware/hgx-h100.yaml");
	static const struct {
		const char *requests, *context;
		int status;
	} cases[] = {{"62", "8192", 0}, {"63", "8192", 1}, {"64", "7999", 0}, {"64", "8000", 1}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = cli_run("fit", "-m", m, "-H", h, "--ep", "8", "--slots", "8", "-r", cases[i].requests,
			    "-c", cases[i].context, "-q", NULL);
		assert_int_equal(r.status, cases[i].status);
		cli_result_free(&r);
	}
	/* EP1 cannot fit whatever the batch: the weights alone exceed HBM */
	r = cli_run("plan", src_path("tests/data/newuser/mixtral-8xh100-64.yaml"), "-q", NULL);
	assert_non_null(strstr(r.err, "EP1: does not fit"));
	assert_non_null(strstr(r.err, "largest term routed slots"));
	assert_non_null(strstr(r.err, "use a wider EP"));
	cli_result_free(&r);
}

/* Item 3: one GPU is a deployment: gpt-oss-120b on one H100 plans EP1 for
 * both phases with one slot per expert (128). */
static void newuser__one_gpu_works(void **state)
{
	(void)state;
	struct cli_result r = cli_run("plan", src_path("tests/data/newuser/gpt-oss-1xh100.yaml"),
				      "-q", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal((int)phase_real(r.out, "prefill", "ep"), 1);
	assert_int_equal((int)phase_real(r.out, "decode", "ep"), 1);
	assert_int_equal((int)phase_real(r.out, "prefill", "slots"), 128);
	cli_result_free(&r);
}

/* Item 3: an empty range names the field to change. */
static void newuser__empty_range_names_the_field(void **state)
{
	(void)state;
	struct cli_result r = cli_run("plan", src_path("tests/data/newuser/ep-min-above-domain.yaml"),
				      "-q", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "the allowed range EP16..EP8 is empty: lower decode.ep_min (16)"));
	assert_non_null(strstr(r.err, "scale_up_domain_gpus"));
	assert_null(strstr(r.err, "1 GPUs"));
	cli_result_free(&r);
}

/* Item 5: the busiest-GPU factor is computed once: the chosen decode
 * width's reason quotes the same factor the phase reports. */
static void newuser__busiest_factor_said_once(void **state)
{
	(void)state;
	struct cli_result r = cli_run("plan", src_path("tests/data/newuser/mixtral-8xh100.yaml"),
				      "-q", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	double factor = phase_real(r.out, "decode", "busiest_gpu_factor");
	assert_true(factor > 1.0);
	char quoted[64];
	snprintf(quoted, sizeof(quoted), "busiest GPU x%.3f)", factor);
	const char *decode = strstr(r.out, "\"decode\": {");
	assert_non_null(decode);
	const char *chosen = strstr(decode, "\"verdict\": \"chosen\"");
	assert_non_null(chosen);
	const char *end = strchr(strstr(chosen, "\"reason\""), '\n');
	assert_non_null(end);
	const char *at = strstr(chosen, quoted);
	assert_true(at && at < end);
	cli_result_free(&r);
}

/* Item 5: one tokens_per_request default: DeepSeek-V3 has one MTP stage,
 * so 1 + 1 = 2 tokens per request everywhere: plan's decode steps 32 x 2 =
 * 64 tokens per GPU, and `fit` on the same case (no -T) gives the same
 * free bytes as the plan's HBM breakdown; simulate says 2 as well. */
static void newuser__one_tokens_per_request_default(void **state)
{
	(void)state;
	struct cli_result r = cli_run("plan", src_path("tests/data/newuser/deepseek-v3-mtp.yaml"),
				      "-q", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal((int)phase_real(r.out, "decode", "ep"), 8);
	assert_true(phase_real(r.out, "decode", "tokens_per_gpu") == 64.0);
	double plan_free = phase_real(r.out, "decode", "free_bytes");
	cli_result_free(&r);
	const char *m = src_path("plans/models/deepseek-v3.yaml");
	r = cli_run("fit", "-m", m, "-H", src_path("hardware/hgx-h200.yaml"), "--ep", "8", "-r", "32",
		    "-c", "8192", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	assert_true(json_real(r.out, "tokens_per_gpu", 0) == 64.0);
	assert_true(json_real(r.out, "free_bytes", 0) == plan_free);
	cli_result_free(&r);
	r = cli_run("simulate", "-m", m, "--ep", "8", "-r", "32", "--steps", "10", "--format", "json",
		    NULL);
	assert_int_equal(r.status, 0);
	assert_true(json_real(r.out, "tokens_per_request", 0) == 2.0);
	cli_result_free(&r);
}

/* Item 5: the same validity rules everywhere: `plan` refuses EP16 for
 * Mixtral's 8 experts, and so does `roofline --ep 16`, with the same words. */
static void newuser__roofline_refuses_what_plan_refuses(void **state)
{
	(void)state;
	const char *why = "16 GPUs but only 8 experts per layer";
	struct cli_result r = cli_run("plan", src_path("tests/data/newuser/mixtral-8xh100-64.yaml"),
				      "-q", NULL);
	assert_non_null(strstr(r.err, why));
	cli_result_free(&r);
	r = cli_run("roofline", "-m", src_path("plans/models/mixtral-8x7b.yaml"), "-H",
		    src_path("hardware/hgx-h100.yaml"), "--ep", "16", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, why));
	cli_result_free(&r);
	r = cli_run("fit", "-m", src_path("plans/models/mixtral-8x7b.yaml"), "-H",
		    src_path("hardware/hgx-h100.yaml"), "--ep", "16", "-r", "1", "-c", "1024", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, why));
	cli_result_free(&r);
}

/* Lines in a text. */
static int count_lines(const char *text)
{
	int n = 0;
	for (const char *p = text; *p; p++) {
		n += *p == '\n';
	}
	return n;
}

/* Item 7: an SGLang map for a 384-expert model with one id of 999 (layer
 * 3, slot 5; the slot held expert 5): the first error names the bad id,
 * with --experts / --model as out of range, without them as the largest id
 * after 383; "expert 5 has no slot" follows, not 600 more experts. */
static void newuser__check_names_the_bad_id_first(void **state)
{
	(void)state;
	char path[64];
	scratch(path, sizeof(path), "map");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"physical_to_logical_map\": [", f);
	for (int l = 0; l < 4; l++) {
		fputs(l ? ", [" : "[", f);
		for (int p = 0; p < 448; p++) {
			fprintf(f, "%s%d", p ? ", " : "", l == 3 && p == 5 ? 999 : p % 384);
		}
		fputs("]", f);
	}
	fputs("]}\n", f);
	fclose(f);
	struct cli_result r = cli_run("check", path, "--gpus", "64", "--experts", "384", NULL);
	assert_int_equal(r.status, 1);
	const char *first = strstr(r.err, "error: ");
	assert_non_null(first);
	assert_int_equal(strncmp(first, "error: physical_to_logical_map[3][5] (layer 3, GPU 0, slot 5): "
				 "expert 999 is out of range (the model has 384 experts", 95), 0);
	/* expert 5 keeps its other slot (448 = 384 + 64 slots): one problem */
	assert_int_equal(count_lines(r.err), 1);
	cli_result_free(&r);
	r = cli_run("check", path, "--gpus", "64", "--model",
		    src_path("plans/models/deepseek-v4.1-flash.yaml"), NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "expert 999 is out of range (the model has 384 experts"));
	cli_result_free(&r);
	r = cli_run("check", path, "--gpus", "64", NULL);
	assert_int_equal(r.status, 1);
	first = strstr(r.err, "error: ");
	assert_non_null(first);
	assert_non_null(strstr(first, "expert 999 is the largest id, the next is 383: if the model has "
				      "384 experts, this id is out of range"));
	assert_true(strstr(first, "expert 999") < strchr(first, '\n'));
	cli_result_free(&r);
	unlink(path);
}

/* Item 7: a model, hardware or Hugging Face file given to plan gets one
 * error saying what it is and that plan takes a scenario. */
static void newuser__plan_says_what_the_file_is(void **state)
{
	(void)state;
	static const struct {
		const char *file, *kind;
	} cases[] = {
		{"plans/models/mixtral-8x7b.yaml", "this is a model file"},
		{"hardware/hgx-h100.yaml", "this is a hardware file"},
		{"tests/data/hf/mixtral-8x7b.config.json", "this is a Hugging Face config.json"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cli_result r = cli_run("plan", src_path(cases[i].file), NULL);
		assert_int_equal(r.status, 1);
		assert_non_null(strstr(r.err, cases[i].kind));
		assert_non_null(strstr(r.err, "plan takes a scenario"));
		assert_int_equal(count_lines(r.err), 1);
		cli_result_free(&r);
	}
}

/* Item 7: a CSV with a header row gets one error saying to comment it out. */
static void newuser__csv_header_is_one_error(void **state)
{
	(void)state;
	char path[64];
	scratch(path, sizeof(path), "csv");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("expert_0,expert_1,expert_2,expert_3\n1,2,3,4\n5,6,7,8\n", f);
	fclose(f);
	struct cli_result r = cli_run("place", path, "--gpus", "2", "--slots", "4", NULL);
	assert_int_equal(r.status, 1);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, ":1:1: error: this looks like a header row"));
	assert_non_null(strstr(r.err, "put '#' before this one"));
	cli_result_free(&r);
	unlink(path);
}

/* Item 7: `fit -r 0` and a repeated option are usage errors. */
static void newuser__zero_requests_and_repeats_refused(void **state)
{
	(void)state;
	const char *m = src_path("plans/models/mixtral-8x7b.yaml");
	const char *h = src_path("hardware/hgx-h100.yaml");
	struct cli_result r = cli_run("fit", "-m", m, "-H", h, "--ep", "8", "-r", "0", "-c", "1024", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "error: --requests: expected a number > 0 and <= 1e+09, got '0'"));
	cli_result_free(&r);
	r = cli_run("fit", "-m", m, "-H", h, "--ep", "8", "--ep", "4", "-r", "1", "-c", "1024", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--ep given twice"));
	cli_result_free(&r);
	r = cli_run("place", src_path("plans/traces/olmoe_github.csv"), "-g", "8", "--gpus", "4",
		    "--slots", "64", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--gpus given twice"));
	cli_result_free(&r);
}

/* Run `moeplan ARGS` with stdout on a pseudo-terminal (a person's
 * terminal); returns what it printed there (owned) and its exit status. */
static char *run_on_terminal(const char *const *args, int *status)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY);
	assert_true(master >= 0);
	assert_int_equal(grantpt(master), 0);
	assert_int_equal(unlockpt(master), 0);
	const char *slave_name = ptsname(master);
	assert_non_null(slave_name);
	const char *exe = getenv("MOEPLAN");
	const char *argv[16] = {exe ? exe : "moeplan"};
	int argc = 1;
	for (; args[argc - 1] && argc < 15; argc++) {
		argv[argc] = args[argc - 1];
	}
	argv[argc] = NULL;
	pid_t pid = fork();
	if (pid == 0) {
		int slave = open(slave_name, O_RDWR);
		int devnull = open("/dev/null", O_RDWR);
		if (slave < 0 || devnull < 0) {
			_exit(127);
		}
		dup2(slave, 1);
		dup2(devnull, 0);
		dup2(devnull, 2);
		close(master);
		execv(argv[0], (char *const *)(void *)argv);
		_exit(127);
	}
	size_t cap = 1 << 16, n = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	for (;;) {
		if (n + 1 == cap) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		ssize_t got = read(master, out + n, cap - n - 1);
		if (got <= 0) {
			break; /* EIO once the child has exited and closed the slave */
		}
		n += (size_t)got;
	}
	out[n] = '\0';
	int w = 0;
	assert_int_equal(waitpid(pid, &w, 0), pid);
	*status = WIFEXITED(w) ? WEXITSTATUS(w) : 128;
	close(master);
	return out;
}

/* A time cell "8.06 ms" or "1.29 s" in seconds; *rest after it. */
static double time_cell(const char *text, const char **rest)
{
	char *end = NULL;
	double v = strtod(text, &end);
	/* an offset, not a pointer into end (GCC 12 -O3 misreads the latter
	 * as a dangling pointer to the local) */
	size_t at = (size_t)(end - text);
	at += strspn(text + at, " ");
	double scale = strncmp(text + at, "ms", 2) == 0 ? 1e-3 : 1.0;
	*rest = text + at + (scale < 1.0 ? 2 : 1);
	return v * scale;
}

/* The prefill and decode times of a summary row. */
static void summary_times(const char *text, const char *label, double out[2])
{
	const char *at = strstr(text, label);
	assert_non_null(at);
	const char *p = at + strlen(label);
	out[0] = time_cell(p, &p);
	p = strstr(p, "  ");
	assert_non_null(p);
	p += strspn(p, " ");
	/* skip "(TTFT ...)" or "(step, touched)" before the decode column */
	while (*p == '(') {
		p = strchr(p, ')') + 1;
		p += strspn(p, " ");
	}
	out[1] = time_cell(p, &p);
}

/* New-user report: gpt-oss-120b on one H100 at 16 requests printed
 * "routed-expert time/step 18.2 ms" beside "step time 11.6 ms": the
 * roofline charges all 128 resident experts, the step only the touched
 * ones. The routed-expert row is the step's routed term now, a part of
 * the step (step >= compute >= routed under every overlap), and the
 * roofline figure is labelled "all resident". */
static void newuser__summary_routed_time_within_step(void **state)
{
	(void)state;
	struct cli_result r = cli_run("plan", src_path("tests/data/newuser/gpt-oss-1xh100.yaml"), "-q",
				      "--format", "text", NULL);
	assert_int_equal(r.status, 0);
	double step[2], routed[2];
	summary_times(r.out, "step time", step);
	summary_times(r.out, "routed-expert time/step", routed);
	for (int i = 0; i < 2; i++) {
		assert_true(step[i] > 0.0 && routed[i] > 0.0);
		if (!(routed[i] <= step[i])) {
			fail_msg("phase %d: routed %g s > step %g s", i, routed[i], step[i]);
		}
	}
	assert_non_null(strstr(r.out, "roofline, all resident"));
	cli_result_free(&r);
}

/* A heading that starts "# NAME" (any level) in the text, or NULL. */
static const char *find_heading(const char *text, const char *name, size_t len)
{
	char heading[200];
	snprintf(heading, sizeof(heading), "# %.*s", (int)len, name);
	for (const char *at = strstr(text, heading); at; at = strstr(at + 1, heading)) {
		const char *line = at;
		while (line > text && line[-1] == '#') {
			line--;
		}
		if (line == text || line[-1] == '\n') {
			return at;
		}
	}
	return NULL;
}

/* New-user report: `moeplan help step` pointed to "README, 'Step model'"
 * but the section is "Serving step". Every section that a help text names
 * must be a heading of the README ("README, 'X'") or of the manual's page
 * ("moeplan-models(7), 'X'": a heading of doc/moeplan-models.7.md). */
static void newuser__help_names_readme_sections(void **state)
{
	(void)state;
	char *readme = cli_slurp(src_path("README.md"));
	assert_non_null(readme);
	static const char *const cmds[] = {"check", "comm",  "fit",   "place", "plan",   "replan",
					   "roofline", "search", "simulate", "step"};
	int refs = 0;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct cli_result r = cli_run(cmds[i], "--help", NULL);
		assert_int_equal(r.status, 0);
		for (const char *at = strstr(r.out, "README, '"); at; at = strstr(at + 1, "README, '")) {
			const char *name = at + strlen("README, '");
			size_t len = strcspn(name, "'");
			if (!find_heading(readme, name, len)) {
				fail_msg("moeplan %s --help names README '%.*s', not a heading", cmds[i],
					 (int)len, name);
			}
			refs++;
		}
		for (const char *at = strstr(r.out, "moeplan-"); at; at = strstr(at + 1, "moeplan-")) {
			char page[64], section;
			int used = 0;
			if (sscanf(at, "moeplan-%40[a-z](%c), '%n", page, &section, &used) != 2 || !used) {
				continue;
			}
			const char *name = at + used;
			size_t len = strcspn(name, "'");
			char rel[128];
			snprintf(rel, sizeof(rel), "doc/moeplan-%s.%c.md", page, section);
			char *text = cli_slurp(src_path(rel));
			if (!text || !find_heading(text, name, len)) {
				fail_msg("moeplan %s --help names %s '%.*s', not a heading there", cmds[i], rel,
					 (int)len, name);
			}
			free(text);
			refs++;
		}
		cli_result_free(&r);
	}
	assert_true(refs >= 1); /* step's reference at least */
	free(readme);
}

/* Item 8: on a terminal, `moeplan plan` prints a summary of a few dozen
 * lines with the widths, slots, HBM, step figures and placement quality
 * per phase; with --format yaml, or into a pipe, it prints the document as
 * before. Mixtral on 8xH100: decode EP8 with 8 slots (no redundant copy). */
static void newuser__terminal_gets_a_summary(void **state)
{
	(void)state;
	const char *scenario = src_path("tests/data/newuser/mixtral-8xh100.yaml");
	int status = -1;
	char *text = run_on_terminal((const char *const[]){"plan", scenario, NULL}, &status);
	assert_int_equal(status, 0);
	assert_true(count_lines(text) < 40);
	assert_non_null(strstr(text, "EP8 (of 8 GPUs)"));
	assert_non_null(strstr(text, "8 (1 per GPU, 0 redundant)"));
	assert_non_null(strstr(text, "HBM per GPU"));
	assert_non_null(strstr(text, "routed-expert time/step"));
	assert_non_null(strstr(text, "32 of 32 layers optimal"));
	assert_non_null(strstr(text, "-o plan.yaml"));
	assert_null(strstr(text, "placement:"));
	free(text);
	text = run_on_terminal((const char *const[]){"plan", scenario, "--format", "yaml", NULL}, &status);
	assert_int_equal(status, 0);
	assert_non_null(strstr(text, "moeplan: plan/v1"));
	free(text);
	/* a pipe (cli_run captures stdout in a file) keeps the document */
	struct cli_result r = cli_run("plan", scenario, "-q", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(strncmp(r.out, "moeplan: plan/v1", 16), 0);
	cli_result_free(&r);
	/* --format text gives the summary anywhere */
	r = cli_run("plan", scenario, "-q", "--format", "text", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "EP8 (of 8 GPUs)"));
	cli_result_free(&r);
}

/* Item 6: `simulate --plan` takes the plan's top-k (no --top-k) and routes
 * the plan's own traffic: on Mixtral with Zipf (s = 1) loads at EP8, one
 * expert per GPU, the busiest/mean factor is that of the plan (the plan
 * estimates it by its own Monte Carlo run: within 3%), far from uniform
 * routing's ~1.2. */
static void newuser__simulate_takes_what_the_plan_knows(void **state)
{
	(void)state;
	char plan[64];
	scratch(plan, sizeof(plan), "plan");
	struct cli_result r = cli_run("plan", src_path("tests/data/newuser/mixtral-zipf.yaml"), "-q",
				      "--format", "json", "-o", plan, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	char *doc = cli_slurp(plan);
	assert_non_null(doc);
	double factor = phase_real(doc, "decode", "busiest_gpu_factor");
	free(doc);
	assert_true(factor > 2.0);
	r = cli_run("simulate", "--plan", plan, "-r", "32", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal((int)json_real(r.out, "top_k", 0), 2);
	assert_non_null(strstr(r.out, "\"popularity\": \"the plan's expert_loads\""));
	double mean = json_real(r.out, "mean", 0);
	assert_true(fabs(mean - factor) < 0.03 * factor);
	cli_result_free(&r);
	unlink(plan);
}

/* Item 6: without a plan, slots above the expert count are placed by the
 * solver for the given popularity (uniform here): DeepSeek-V4.1-Flash at
 * EP64 with 448 slots, 8 requests x 4 tokens: every GPU expects
 * 8 x 4 x 6 = 192 visits (hand calculation); round-robin would give the
 * GPUs holding the 64 doubled experts fewer. */
static void newuser__simulate_places_redundant_slots(void **state)
{
	(void)state;
	struct cli_result r = cli_run("simulate", "-m", src_path("plans/models/deepseek-v4.1-flash.yaml"),
				      "--ep", "64", "--slots", "448", "-r", "8", "-T", "4", "--format",
				      "json", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\"layout\": \"placed\""));
	const char *v = strstr(r.out, "\"gpu_mean_visits\": [");
	assert_non_null(v);
	v = strchr(v, '[') + 1;
	for (int g = 0; g < 64; g++) {
		char *end = NULL;
		double x = strtod(v, &end);
		assert_true(end != v);
		assert_true(fabs(x - 192.0) < 0.01 * 192.0);
		v = end + 1;
	}
	cli_result_free(&r);
}

/* Item 4: outputs are byte-identical under the default limits (counted
 * work budgets); when the wall-clock safety limit fires (forced here with
 * 1 ms per layer on Switch's 128 experts at EP16), stderr says so and the
 * output carries wall_clock_limit with the layers it stopped. */
static void newuser__wall_clock_limit_is_reported(void **state)
{
	(void)state;
	char plan[64];
	scratch(plan, sizeof(plan), "sw");
	const char *trace = src_path("plans/traces/switch128_bookcorpus.csv");
	struct cli_result r = cli_run("place", trace, "--gpus", "16", "--slots", "144", "-q", "-o", plan,
				      NULL);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.err, "wall-clock safety limit"));
	cli_result_free(&r);
	const char *later = src_path("plans/traces/switch128_bookcorpus.winB.csv");
	struct cli_result a = cli_run("replan", "--plan", plan, "--loads", later, "--pareto", "-q", NULL);
	struct cli_result b = cli_run("replan", "--plan", plan, "--loads", later, "--pareto", "-q", NULL);
	assert_int_equal(a.status, 0);
	assert_string_equal(a.out, b.out);
	assert_null(strstr(a.out, "wall_clock_limit"));
	assert_null(strstr(a.err, "wall-clock safety limit"));
	cli_result_free(&a);
	cli_result_free(&b);
	r = cli_run("replan", "--plan", plan, "--loads", later, "--pareto", "-q", "--time-limit", "0.001",
		    NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "moeplan replan: warning: the wall-clock safety limit (0.001 s per layer, times the layers for the whole run) stopped the search on"));
	assert_non_null(strstr(r.out, "wall_clock_limit:"));
	assert_non_null(strstr(r.out, "depends on the machine's speed and load"));
	cli_result_free(&r);
	r = cli_run("place", trace, "--gpus", "16", "--slots", "144", "-q", "--time-limit", "0.001", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "status: time_limit"));
	assert_non_null(strstr(r.err, "moeplan place: warning: the wall-clock safety limit"));
	cli_result_free(&r);
	unlink(plan);
}

/* Item 10: `check --svg` names the map and the loads in its title, gives
 * the load a unit, counts this map's slots in its caption (OLMoE, 64
 * experts, 72 slots on 8 GPUs: 9 per GPU, 8 redundant) and draws each map
 * on its own colour scale (a colour bar per map). */
static void newuser__check_svg_says_what_it_shows(void **state)
{
	(void)state;
	char plan[64], svg[64];
	scratch(plan, sizeof(plan), "p");
	scratch(svg, sizeof(svg), "svg");
	struct cli_result r = cli_run("place", src_path("plans/traces/olmoe_c4.csv"), "--gpus", "8",
				      "--slots", "72", "-q", "-o", plan, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	r = cli_run("check", plan, "--loads", src_path("plans/traces/olmoe_github.csv"), "--svg", svg,
		    "-q", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	char *doc = cli_slurp(svg);
	assert_non_null(doc);
	const char *base = strrchr(plan, '/') + 1;
	char want[128];
	snprintf(want, sizeof(want), "check: %s under olmoe_github.csv", base);
	assert_non_null(strstr(doc, want));
	assert_non_null(strstr(doc, "this map: 9 slots per GPU (8 redundant)"));
	assert_non_null(strstr(doc, "load per GPU, in the unit of olmoe_github.csv"));
	assert_non_null(strstr(doc, "id=\"colorbar\""));
	assert_non_null(strstr(doc, "id=\"colorbar-after\""));
	free(doc);
	unlink(plan);
	unlink(svg);
}

/* Fresh-user trial: the SGLang map `place --export` writes has a row per
 * hidden layer (16 for OLMoE); `check` of it against the trace it was
 * planned from (rows named '# layers: 0, 7, 15') checks those three rows
 * and names them by the model's layers. The exported rows are the plan's
 * own, so each layer's busiest GPU equals the plan's (same loads). */
static void newuser__check_engine_map_against_named_rows(void **state)
{
	(void)state;
	char map[80], plan[64];
	scratch(plan, sizeof(plan), "plan");
	snprintf(map, sizeof(map), "%s.json", plan); /* the export's name must end in .json */
	struct cli_result r = cli_run("place", src_path("plans/traces/olmoe_github.csv"), "--gpus", "8",
				      "--slots", "72", "-m", src_path("plans/models/olmoe-1b-7b.yaml"),
				      "--export", "sglang", "--export-output", map, "-o", plan,
				      "-f", "json", "-q", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	r = cli_run("check", map, "--gpus", "8", "--loads", src_path("plans/traces/olmoe_github.csv"),
		    "-f", "json", "-q", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\"n_layers\": 3"));
	const char *l15 = strstr(r.out, "\"layer\": 15");
	assert_non_null(l15);
	assert_non_null(strstr(r.out, "\"layer\": 7"));
	char *placed = cli_slurp(plan);
	assert_non_null(placed);
	const char *p15 = strstr(placed, "\"layer\": 15");
	assert_non_null(p15);
	double want = strtod(strstr(p15, "\"max_load\": ") + strlen("\"max_load\": "), NULL);
	double got = strtod(strstr(l15, "\"max_load\": ") + strlen("\"max_load\": "), NULL);
	assert_true(fabs(want - got) <= 1e-9 * want);
	free(placed);
	cli_result_free(&r);
	unlink(map);
	unlink(plan);
}

/* check of a moeplan plan against loads naming some of its layers picks
 * the plan's rows by their `layer`, not by position: the OLMoE plan of
 * the trace's rows (layers 0, 7, 15: rows 0, 1, 2) against the trace's
 * last row alone ('# layers: 15') checks row 2 (it said 'invalid input':
 * row 15 of 3), with the plan's own busiest GPU for that layer. */
static void newuser__check_plan_rows_by_layer(void **state)
{
	(void)state;
	char plan[64], sub[64];
	scratch(plan, sizeof(plan), "plan");
	scratch(sub, sizeof(sub), "loads");
	const char *trace = src_path("plans/traces/olmoe_github.csv");
	struct cli_result r = cli_run("place", trace, "--gpus", "8", "--slots", "72", "-o", plan,
				      "-f", "json", "-q", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	char *t = cli_slurp(trace);
	assert_non_null(t);
	char *last = strrchr(t, '\n');
	while (last && last > t && last[1] == '\0') { /* the final newline */
		*last = '\0';
		last = strrchr(t, '\n');
	}
	assert_non_null(last);
	FILE *f = fopen(sub, "w");
	assert_non_null(f);
	fprintf(f, "# layers: 15\n%s\n", last + 1);
	fclose(f);
	free(t);
	r = cli_run("check", plan, "--loads", sub, "-f", "json", "-q", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\"n_layers\": 1"));
	const char *l15 = strstr(r.out, "\"layer\": 15");
	assert_non_null(l15);
	char *placed = cli_slurp(plan);
	assert_non_null(placed);
	const char *p15 = strstr(placed, "\"layer\": 15");
	assert_non_null(p15);
	double want = strtod(strstr(p15, "\"max_load\": ") + strlen("\"max_load\": "), NULL);
	double got = strtod(strstr(l15, "\"max_load\": ") + strlen("\"max_load\": "), NULL);
	assert_true(want > 0 && fabs(want - got) <= 1e-9 * want);
	free(placed);
	cli_result_free(&r);
	unlink(plan);
	unlink(sub);
}

/* Loads that name their layers are matched to a plan's rows by layer, never
 * by position, even when they have as many rows as the plan (a new user's
 * trial: layers 1, 2, 3 were scored and re-planned as the plan's 0, 7, 15),
 * and a re-planned moeplan plan keeps its rows' layers (it wrote 0, 1, 2). */
static void newuser__plan_rows_never_by_position(void **state)
{
	(void)state;
	char plan[64], named[64], out[64];
	scratch(plan, sizeof(plan), "plan");
	scratch(named, sizeof(named), "loads");
	scratch(out, sizeof(out), "replan");
	const char *trace = src_path("plans/traces/olmoe_github.csv");
	struct cli_result r = cli_run("place", trace, "--gpus", "8", "--slots", "72", "-o", plan,
				      "-f", "json", "-q", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	char *t = cli_slurp(trace);
	assert_non_null(t);
	FILE *f = fopen(named, "w");
	assert_non_null(f);
	fprintf(f, "# layers: 1, 2, 3\n");
	for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] != '#') {
			fprintf(f, "%s\n", line);
		}
	}
	fclose(f);
	free(t);
	r = cli_run("check", plan, "--loads", named, "-q", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "places no such layer"));
	cli_result_free(&r);
	unlink(out);
	r = cli_run("replan", "--plan", plan, "--loads", named, "-o", out, "-q", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "exactly its layers"));
	cli_result_free(&r);
	assert_int_equal(access(out, F_OK), -1);
	r = cli_run("replan", "--plan", plan, "--loads", trace, "-o", out, "-q", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	char *re = cli_slurp(out);
	assert_non_null(re);
	/* the placement's rows (YAML, as its input's format) */
	assert_non_null(strstr(re, "\n- layer: 7\n"));
	assert_non_null(strstr(re, "\n- layer: 15\n"));
	free(re);
	unlink(plan);
	unlink(named);
	unlink(out);
}

/* Loads naming a dense layer of --model (DeepSeek-V3: layers 0-2 are dense)
 * with nonzero counts are refused by check and replan (README "Layer
 * identity": a dense layer's row must be all zero); a zero row is
 * accepted. A new user's trial: replan re-planned SGLang's row 1. */
static void newuser__dense_layer_loads_refused(void **state)
{
	(void)state;
	char base[64], moe[80], dense[80], zero[80], map[80], out[80];
	scratch(base, sizeof(base), "dense");
	snprintf(moe, sizeof(moe), "%s-moe.csv", base);
	snprintf(dense, sizeof(dense), "%s-dense.csv", base);
	snprintf(zero, sizeof(zero), "%s-zero.csv", base);
	snprintf(map, sizeof(map), "%s-map.json", base);
	snprintf(out, sizeof(out), "%s-out.json", base);
	const char *files[] = {moe, dense, zero};
	const char *heads[] = {"# layers: 3", "# layers: 1", "# layers: 1"};
	for (int k = 0; k < 3; k++) {
		FILE *f = fopen(files[k], "w");
		assert_non_null(f);
		fprintf(f, "%s\n", heads[k]);
		for (int e = 0; e < 256; e++) {
			fprintf(f, "%s%d", e ? "," : "", k == 2 ? 0 : 1 + e % 7);
		}
		fprintf(f, "\n");
		fclose(f);
	}
	const char *model = src_path("plans/models/deepseek-v3.yaml");
	unlink(map);
	struct cli_result r = cli_run("place", moe, "--model", model, "--gpus", "8", "--slots", "256",
				      "--export", "sglang", "-o", map, "-q", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	r = cli_run("check", map, "--gpus", "8", "--loads", dense, "--model", model, "-q", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "layer 1 is a dense layer"));
	cli_result_free(&r);
	unlink(out);
	r = cli_run("replan", "--plan", map, "--gpus", "8", "--loads", dense, "--model", model, "-o", out,
		    "-q", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "layer 1 is a dense layer"));
	cli_result_free(&r);
	assert_int_equal(access(out, F_OK), -1);
	r = cli_run("check", map, "--gpus", "8", "--loads", zero, "--model", model, "-q", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	for (int k = 0; k < 3; k++) {
		unlink(files[k]);
	}
	unlink(map);
	unlink(base);
}

/* The first n whole numbers after key in text (a JSON list of lists of
 * integers: brackets, commas and blanks skipped); 0 on success. */
static int ints_after(const char *text, const char *key, uint32_t *out, size_t n)
{
	const char *p = text ? strstr(text, key) : NULL;
	if (!p) {
		return -1;
	}
	p += strlen(key);
	for (size_t i = 0; i < n; i++) {
		while (*p && !isdigit((unsigned char)*p)) {
			p++;
		}
		if (!*p) {
			return -1;
		}
		char *end = NULL;
		out[i] = (uint32_t)strtoul(p, &end, 10);
		p = end;
	}
	return 0;
}

/* Fresh-user trial, replan as check: an SGLang map `place --export` wrote
 * (24 rows, one per hidden layer of Qwen1.5-MoE) re-planned for loads that
 * name their rows (winB, '# layers: 0, ..., 11') re-plans those rows (it
 * refused: '12 layers x 60 columns, but ... has 24 layers') and writes the
 * whole map back: rows 12-23 untouched, rows 0-11 exactly those that
 * re-planning the moeplan plan of the same rows gives (an independent
 * route: the plan's rows are the trace's own). */
static void newuser__replan_engine_map_against_named_rows(void **state)
{
	(void)state;
	enum { ROWS = 24, NAMED = 12, SLOTS = 72 };
	char map[80], plan[64], out[64], out_plan[64];
	scratch(plan, sizeof(plan), "plan");
	scratch(out, sizeof(out), "new");
	scratch(out_plan, sizeof(out_plan), "newplan");
	snprintf(map, sizeof(map), "%s.json", plan); /* the export's name must end in .json */
	const char *win_a = src_path("plans/traces/qwen15moe_bookcorpus.winA.csv");
	struct cli_result r = cli_run("place", win_a, "--gpus", "8", "--slots", "72", "-m",
				      src_path("plans/models/qwen1.5-moe-a2.7b.yaml"), "--export", "sglang",
				      "--export-output", map, "-o", plan, "-f", "json", "-q", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	const char *win_b = src_path("plans/traces/qwen15moe_bookcorpus.winB.csv");
	r = cli_run("replan", "--plan", map, "--gpus", "8", "--loads", win_b, "--max-moves", "25%",
		    "-o", out, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "rows: the 12 layers the loads name (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, "
				      "10, 11) of the map's 24"));
	cli_result_free(&r);
	r = cli_run("replan", "--plan", plan, "--loads", win_b, "--max-moves", "25%", "-f", "json",
		    "-o", out_plan, "-q", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);

	static uint32_t before[ROWS * SLOTS], after[ROWS * SLOTS], by_plan[NAMED * SLOTS];
	char *t = cli_slurp(map);
	assert_int_equal(ints_after(t, "\"physical_to_logical_map\":", before, ROWS * SLOTS), 0);
	free(t);
	t = cli_slurp(out);
	assert_int_equal(ints_after(t, "\"physical_to_logical_map\":", after, ROWS * SLOTS), 0);
	size_t brackets = 0; /* the list and one per row: exactly 24 rows */
	for (const char *c = t; *c; c++) {
		brackets += *c == '[';
	}
	assert_int_equal(brackets, 1 + ROWS);
	free(t);
	t = cli_slurp(out_plan);
	assert_int_equal(ints_after(t, "\"physical_to_logical\":", by_plan, NAMED * SLOTS), 0);
	free(t);
	assert_memory_equal(after + NAMED * SLOTS, before + NAMED * SLOTS,
			    (ROWS - NAMED) * SLOTS * sizeof(uint32_t));
	assert_memory_equal(after, by_plan, NAMED * SLOTS * sizeof(uint32_t));
	assert_memory_not_equal(after, before, NAMED * SLOTS * sizeof(uint32_t)); /* it moved some */
	unlink(map);
	unlink(plan);
	unlink(out);
	unlink(out_plan);
}

/* Issue 26, item 4: DeepSeek-V3 prefill on 80 GB H100. By hand: at EP8 a
 * GPU holds 288 / 8 = 36 routed slots x 58 MoE layers x 44,050,944 B
 * (one FP8 expert: 3 x 7168 x 2048 FP8 weights = 44,040,192 B and 3 x 56
 * x 16 FP32 scales of its 128 x 128 blocks = 10,752 B) = 91,978,371,072 B, more than the 81,559 MiB = 85,520,809,984 B
 * of HBM, so no width of the default range EP2..EP8 fits; at EP16 the
 * slots take half, 45.99 GB. Before: exit 1 and six lines ending
 * "moeplan: error: prefill: no EP width fits". */
static void newuser__dsv3_h100_prefill_reaches_ep16(void **state)
{
	(void)state;
	assert_true(36.0 * 58.0 * 44050944.0 > 81559.0 * 1048576.0);
	struct cli_result r = cli_run("plan", src_path("tests/data/newuser/deepseek-v3-h100.yaml"),
				      "-q", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal((int)phase_real(r.out, "prefill", "ep"), 16);
	assert_string_equal(r.err, "");
	cli_result_free(&r);
}

/* Where the phase's GPUs (or a given ep_max) stop below the smallest width
 * that fits: one line, at the field to change in the scenario file. */
static void newuser__dsv3_h100_no_fit_names_the_field(void **state)
{
	(void)state;
	static const struct {
		const char *file;
		const char *start;
		const char *fix;
	} cases[] = {
		{"tests/data/newuser/deepseek-v3-h100-8.yaml",
		 "deepseek-v3-h100-8.yaml:7:9: error: prefill: no EP width up to EP8 fits in HBM (EP8 "
		 "does not fit: needs ", "; give prefill.gpus 16 or more: EP16 is the smallest width that "
		 "fits\n"},
		{"tests/data/newuser/deepseek-v3-h100-ep-max.yaml",
		 "deepseek-v3-h100-ep-max.yaml:7:11: error: prefill: no EP width up to EP8 fits in HBM "
		 "(EP8 does not fit: needs ", "; raise prefill.ep_max to 16, the smallest width that fits\n"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path = src_path(cases[i].file);
		struct cli_result r = cli_run("plan", path, "-q", NULL);
		assert_int_equal(r.status, 1);
		assert_string_equal(r.out, "");
		/* one line: the path, the field's line:col, the fix */
		assert_non_null(strstr(r.err, cases[i].start));
		assert_true(strncmp(r.err, path, strlen(path)) == 0);
		const char *nl = strchr(r.err, '\n');
		assert_non_null(nl);
		assert_int_equal(nl[1], '\0');
		size_t n = strlen(r.err), f = strlen(cases[i].fix);
		assert_true(n > f && strcmp(r.err + n - f, cases[i].fix) == 0);
		cli_result_free(&r);
	}
}

/* Issue 26 item 5: the map plan --export writes is checked with the flag
 * plan printed (--ep-size), a file that says its GPUs refuses another
 * count naming both (exit 1), and without --loads a verdict line says what
 * was checked. tests/data/maps/eplb-sglang.json: 2 rows of 16 slots, ids
 * 0..11; on 8 GPUs 2 slots each, 16 - 12 = 4 redundant, and no GPU's pair
 * repeats an expert (read off the file). Before: --ep-size was an unknown
 * option (exit 2) and no verdict was printed. */
static void newuser__check_ep_size_and_verdict(void **state)
{
	(void)state;
	const char *map = src_path("tests/data/maps/eplb-sglang.json");
	struct cli_result r = cli_run("check", map, "--ep-size", "8", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "eplb-sglang.json: valid: 2 layers, 12 experts on 8 GPUs (as given) x 2 "
				      "slots (4 redundant), 0 duplicate replicas; give --loads LOADS"));
	assert_non_null(strstr(r.out, "slots_per_gpu: 2"));
	cli_result_free(&r);
	r = cli_run("check", map, "--ep-size", "8", "--gpus", "8", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	r = cli_run("check", src_path("tests/data/maps/eplb-plan.yaml"), "--ep-size", "4", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "the file says 8 GPUs, but 4 were asked for"));
	cli_result_free(&r);
}

/* Issue 26 item 6: the heatmap's rows are the model's layers as the loads
 * name them (olmoe_github.csv: "# layers: 0, 7, 15"), not 0, 1, 2; both
 * maps on one colour scale (the bars' data-max equal). */
static void newuser__heatmap_layer_ids_one_scale(void **state)
{
	(void)state;
	char p[64], svg[64];
	snprintf(p, sizeof(p), "/tmp/moeplan-hm-%ld.yaml", (long)getpid());
	snprintf(svg, sizeof(svg), "/tmp/moeplan-hm-%ld.svg", (long)getpid());
	struct cli_result r = cli_run("place", src_path("plans/traces/olmoe_c4.csv"), "--gpus", "8", "--slots",
				      "72", "-o", p, "-q", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	r = cli_run("check", p, "--loads", src_path("plans/traces/olmoe_github.csv"), "--svg", svg, "-q", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	char *doc = cli_slurp(svg);
	assert_non_null(doc);
	const char *want[] = {">0</text>", ">7</text>", ">15</text>"};
	const char *at = doc;
	for (size_t i = 0; i < 3; i++) {
		at = strstr(at, "class=\"row-label\"");
		assert_non_null(at);
		const char *end = strstr(at, "</text>");
		assert_non_null(end);
		assert_true(strncmp(end - strlen(want[i]) + strlen("</text>"), want[i], strlen(want[i])) == 0);
		at = end;
	}
	assert_null(strstr(at, "class=\"row-label\""));
	const char *b1 = strstr(doc, "id=\"colorbar\"");
	const char *b2 = strstr(doc, "id=\"colorbar-after\"");
	assert_non_null(b1);
	assert_non_null(b2);
	const char *m1 = strstr(b1, "data-max=\"");
	const char *m2 = strstr(b2, "data-max=\"");
	assert_non_null(m1);
	assert_non_null(m2);
	size_t n1 = strcspn(m1 + 10, "\""), n2 = strcspn(m2 + 10, "\"");
	assert_int_equal(n1, n2);
	assert_int_equal(strncmp(m1 + 10, m2 + 10, n1), 0);
	free(doc);
	unlink(p);
	unlink(svg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(newuser__heatmap_layer_ids_one_scale),
		cmocka_unit_test(newuser__check_ep_size_and_verdict),
		cmocka_unit_test(newuser__default_redundancy_scales_with_experts),
		cmocka_unit_test(newuser__mixtral_on_8xh100_fits),
		cmocka_unit_test(newuser__no_fit_says_what_would_fit),
		cmocka_unit_test(newuser__one_gpu_works),
		cmocka_unit_test(newuser__empty_range_names_the_field),
		cmocka_unit_test(newuser__busiest_factor_said_once),
		cmocka_unit_test(newuser__one_tokens_per_request_default),
		cmocka_unit_test(newuser__roofline_refuses_what_plan_refuses),
		cmocka_unit_test(newuser__check_names_the_bad_id_first),
		cmocka_unit_test(newuser__plan_says_what_the_file_is),
		cmocka_unit_test(newuser__csv_header_is_one_error),
		cmocka_unit_test(newuser__zero_requests_and_repeats_refused),
		cmocka_unit_test(newuser__terminal_gets_a_summary),
		cmocka_unit_test(newuser__help_names_readme_sections),
		cmocka_unit_test(newuser__summary_routed_time_within_step),
		cmocka_unit_test(newuser__simulate_takes_what_the_plan_knows),
		cmocka_unit_test(newuser__simulate_places_redundant_slots),
		cmocka_unit_test(newuser__wall_clock_limit_is_reported),
		cmocka_unit_test(newuser__check_svg_says_what_it_shows),
		cmocka_unit_test(newuser__check_engine_map_against_named_rows),
		cmocka_unit_test(newuser__replan_engine_map_against_named_rows),
		cmocka_unit_test(newuser__check_plan_rows_by_layer),
		cmocka_unit_test(newuser__plan_rows_never_by_position),
		cmocka_unit_test(newuser__dense_layer_loads_refused),
		cmocka_unit_test(newuser__dsv3_h100_prefill_reaches_ep16),
		cmocka_unit_test(newuser__dsv3_h100_no_fit_names_the_field),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
