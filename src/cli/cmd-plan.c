/* moeplan plan: scenario in, deployment plan out. */
#include "cli.h"
#include "kernel-note.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "moeplan/loader.h"
#include "moeplan/plan.h"

#ifndef MOEPLAN_DATADIR
#define MOEPLAN_DATADIR "/usr/local/share/moeplan"
#endif

enum {
	OPT_SVG = CLI_OPT_LONG,
	OPT_REPORT,
	OPT_EXPORT,
	OPT_EXPORT_OUTPUT,
	OPT_ENGINE,
	OPT_EP_DISPATCH_ALGORITHM,
	OPT_KERNELS,
};

static const struct cli_opt plan_options[] = {
	{"output", 'o', "FILE", "write the plan to FILE atomically ('-' = stdout, the default)", CLI_COMPLETE_FILE},
	{"format", 'f', "FMT", "yaml, json or text, the summary (default: text on a terminal with no -o,\n"
		"                                 json for -o NAME.json, else yaml)", "text yaml json"},
	{"time-limit", 't', "SECONDS", "wall-clock safety limit for each phase's placement run; solver budgets are counted work, so plans do not depend on it unless it fires (status time_limit) (default: the scenario's, else 10)", NULL},
	{"threads", 'j', "N", "solver threads over layers (default: number of CPUs; results do not depend on it)", NULL},
	CLI_OPT_VERBOSE,
	{"svg", OPT_SVG, "FILE", "also draw the decode load heatmap (layers x GPUs, round-robin before,\n"
		"                                 planned after) to FILE as SVG (default: none)", CLI_COMPLETE_FILE},
	{"report", OPT_REPORT, "FILE.md", "also write a one-page Markdown report with its pictures next to it,\n"
		"                                 FILE-{decode,prefill}-{roofline,heatmap,step}.svg (default: none)", CLI_COMPLETE_FILE},
	{"export", OPT_EXPORT, "ENGINE", "write the decode map as sglang (--init-expert-location JSON, one row per\n"
		"                                 hidden layer) to -o instead of the plan, or to --export-output;\n"
		"                                 the name must end in .json (default: none)", "sglang"},
	{"export-output", OPT_EXPORT_OUTPUT, "FILE.json", "with --export: the engine map goes to FILE.json and the plan to -o (default: none)", CLI_COMPLETE_FILE},
	{"engine", OPT_ENGINE, "NAME|FILE", "plan for this engine: even (an ideal engine: each replica 1/r,\n"
		"                                 DeepSeek's EPLB, every overlap, moeplan's 3.9 GB reserve), sglang or\n"
		"                                 vllm (their profiles, plans/engines/NAME.yaml: dispatch rule,\n"
		"                                 overlap modes, DeepEP kernels, memory fraction), or a profile\n"
		"                                 file (default: the scenario's engine:, else even)", "even sglang vllm"},
	{"ep-dispatch-algorithm", OPT_EP_DISPATCH_ALGORITHM, "ALG", "with --engine sglang: the SGLang "
		"--ep-dispatch-algorithm the plan assumes,\n"
		"                                 static, dynamic or fake (default static)", "static dynamic fake"},
	{"kernels", OPT_KERNELS, "FILE|none", "price every step from this kernel table (hardware/kernels/GPU.csv) in both\n"
		"                                 phases; none = the scalar factors (default: the table each phase's\n"
		"                                 hardware file names in `kernels:`, else the scalar factors)", CLI_COMPLETE_FILE},
	CLI_OPT_HELP,
	{0},
};

const struct cli_command_help cmd_plan_help = {
	.name = "plan",
	.synopsis = "moeplan plan [SCENARIO] [-o FILE] [--format yaml|json|text] [options]",
	.description =
		"Reads a scenario (model, prefill and decode hardware, traffic, serving targets),\n"
		"chooses each phase's EP width by the whole serving step (decode: most output\n"
		"tokens/s per GPU at the largest batch that fits in HBM and meets slo.tpot, the\n"
		"busiest GPU counted; prefill: most input tokens/s per GPU among widths that fit,\n"
		"within slo.ttft; a group may span scale-up domains; within 5% decode prefers more\n"
		"tokens per expert, prefill the narrower width), sizes the slots, audits HBM, places\n"
		"every expert and redundant replica of every MoE layer (every layer states its\n"
		"proven lower bound and gap), and writes the plan. SCENARIO defaults to\n"
		"plans/default.yaml (then " MOEPLAN_DATADIR "/plans/default.yaml).",
	.options = plan_options,
	.examples =
		"  moeplan plan plans/default.yaml -o plan.yaml\n"
		"  moeplan plan plans/olmoe-github.yaml --format json -o - | jq '.decode.placement.layers[0]'\n"
		"  moeplan plan plans/default.yaml -o plan.yaml --svg load.svg --report plan.md\n",
};

static void progress(void *user, uint32_t done, uint32_t total, double worst_gap)
{
	const struct timespec *start = user;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double t = (double)(now.tv_sec - start->tv_sec) + 1e-9 * (double)(now.tv_nsec - start->tv_nsec);
	fprintf(stderr, "\rplacing: %u/%u layers, %.1f s, worst gap %.2f%%   ", done, total, t,
		100.0 * worst_gap);
	if (done == total) {
		fputc('\n', stderr);
	}
}

static const char *default_scenario(void)
{
	static const char *const candidates[] = {
		"plans/default.yaml",
		MOEPLAN_DATADIR "/plans/default.yaml",
	};
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		if (access(candidates[i], R_OK) == 0) {
			return candidates[i];
		}
	}
	return NULL;
}

struct plan_args {
	const char *path, *output, *svg, *report, *export_format, *export_output;
	bool json;
	bool text;         /* the summary instead of the document */
	bool format_given;
	struct mp_plan_options opts;
	struct cli_engine engine;           /* --ep-dispatch-algorithm */
	struct mp_engine_profile profile;   /* --engine */
	bool have_profile;
	const char *kernels;                /* --kernels FILE|none, or NULL */
};

/* The command line into a; returns -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, struct plan_args *a)
{
	const char *output = NULL;
	const char *svg = NULL;
	const char *report = NULL;
	const char *export_format = NULL;
	const char *export_output = NULL;
	const char *kernels = NULL;
	bool json = false;
	bool text = false;
	bool format_given = false;
	struct cli_engine engine = {0};
	mp_engine_profile_init(&a->profile);
	bool have_profile = false;
	struct mp_plan_options opts;
	mp_plan_options_init(&opts);
	opts.place.time_limit_s = 0; /* 0 = take the scenario's */
	struct cli_parser parser;
	cli_parser_init(&parser, &cmd_plan_help);
	int c;
	while ((c = cli_parser_next(&parser, argc, argv)) >= 0) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'f':
			format_given = true;
			if (strcmp(optarg, "text") == 0) {
				text = true;
			} else if (!cli_parse_format("plan", optarg, &json)) {
				return EXIT_USAGE;
			}
			break;
		case 't':
			if (!cli_parse_double("plan", "time-limit", optarg, 0.001, 1e6, &opts.place.time_limit_s)) {
				return EXIT_USAGE;
			}
			break;
		case 'j':
			if (!cli_parse_u32("plan", "threads", optarg, 1, 1024, &opts.place.threads)) {
				return EXIT_USAGE;
			}
			break;
		case 'v':
			opts.place.verbose = true;
			break;
		case OPT_SVG:
			svg = optarg;
			break;
		case OPT_REPORT:
			report = optarg;
			break;
		case OPT_EXPORT:
			if (!cli_parse_export("plan", optarg)) {
				return EXIT_USAGE;
			}
			export_format = optarg;
			break;
		case OPT_EXPORT_OUTPUT:
			export_output = optarg;
			break;
		case OPT_ENGINE: {
			int st = cli_engine_profile("plan", optarg, &a->profile);
			if (st != EXIT_OK) {
				return st;
			}
			have_profile = true;
			break;
		}
		case OPT_EP_DISPATCH_ALGORITHM:
			if (!cli_engine_parse_algorithm("plan", optarg, &engine)) {
				return EXIT_USAGE;
			}
			break;
		case OPT_KERNELS:
			if (!cli_kernels_arg_ok("plan", optarg)) {
				return EXIT_USAGE;
			}
			kernels = optarg;
			break;
		default: /* every id of the table has its case above */
			break;
		}
	}
	if (c != CLI_PARSE_END) {
		return cli_parser_status(c);
	}
	if (engine.have_algorithm && have_profile && a->profile.dispatch != MP_DISPATCH_SGLANG) {
		return cli_usage("plan", "--ep-dispatch-algorithm is SGLang's: it needs --engine sglang");
	}
	/* the dispatch rule comes with the engine, once the scenario is read
	 * (cli_scenario_engine); its gpus_per_node: the hardware's, per phase */
	opts.place.dispatch = engine.d;
	if (argc - optind > 1) {
		return cli_usage("plan", "expected one SCENARIO, got %d arguments", argc - optind);
	}
	const char *path = optind < argc ? argv[optind] : default_scenario();
	if (!path) {
		cli_error("no SCENARIO given and no default scenario found (looked for "
			  "plans/default.yaml in the current folder and " MOEPLAN_DATADIR
			  "/plans/default.yaml)");
		return EXIT_INPUT;
	}
	if (export_output && !export_format) {
		return cli_usage("plan", "--export-output needs --export sglang");
	}
	if (export_format && !cli_export_name_ok("plan", export_output ? export_output : output)) {
		return EXIT_USAGE;
	}
	/* -o NAME.json without --format writes JSON (issue 24 item 5) */
	if (!format_given && cli_output_wants_json(output)) {
		json = true;
	}
	struct mp_engine_profile profile = a->profile;
	*a = (struct plan_args){
		.path = path, .output = output, .svg = svg, .report = report,
		.export_format = export_format, .export_output = export_output,
		.json = json, .text = text, .format_given = format_given, .opts = opts,
		.engine = engine, .profile = profile, .have_profile = have_profile,
		.kernels = kernels,
	};
	return -1;
}

/* The whole SGLang launch line of --export (issue 24 item 4), from what
 * the plan knows of its decode phase: the nodes (the placement's
 * gpus_per_node), the dispatch algorithm it placed for, MTP (the model's
 * drafter with tokens_per_request - 1 drafted tokens per step: SGLang's
 * EAGLE speculative flags) and the memory fraction. SGLang sizes its KV
 * pool as the memory free after loading the weights minus total x (1 -
 * mem_fraction_static) (python/sglang/srt/model_executor/
 * model_runner_kv_cache_mixin.py `profile_max_num_token`; model_runner.py
 * in older versions), so the fraction that holds the plan's weights and KV
 * cache is (weights + KV) / HBM; the dispatch buffers, workspace and
 * reserve of the plan's HBM audit are left to the rest. Only a plan that
 * fits gives one. */
static void plan_set_launch(const struct mp_plan *plan, const struct mp_scenario *sc)
{
	const struct mp_phase_plan *d = &plan->decode;
	struct mp_export_launch l;
	mp_export_launch_init(&l, &d->placement);
	l.gpus_per_node = d->placement.gpus_per_node;
	if (d->dispatch.rule == MP_DISPATCH_SGLANG) {
		l.ep_dispatch_algorithm = mp_dispatch_algorithm_name(d->dispatch.algorithm);
		if (d->dispatch.gpus_per_node) {
			l.gpus_per_node = d->dispatch.gpus_per_node;
		}
	}
	double drafted = sc->decode.tokens_per_request - 1.0;
	if (sc->model.drafter.moe_stages > 0 && drafted >= 0.5) {
		l.mtp_steps = (uint32_t)lround(drafted);
	}
	if (d->hbm.fits && d->hbm.capacity_bytes > 0) {
		l.mem_fraction_static = (double)(d->hbm.weights_bytes + d->hbm.kv_bytes) /
					(double)d->hbm.capacity_bytes;
	}
	if (d->hbm.fits && (d->hbm.memory == MP_MEMORY_STATIC_FRACTION ||
			    d->hbm.memory == MP_MEMORY_SGLANG_AUTO)) {
		/* the engine profile fixes it (engine.h) */
		l.mem_fraction_static = d->hbm.memory_fraction;
	}
	cli_export_set_launch(&l);
}

int cmd_plan(int argc, char **argv)
{
	struct plan_args a = {0};
	int parsed = parse_args(argc, argv, &a);
	if (parsed >= 0) {
		mp_engine_profile_finish(&a.profile);
		return parsed;
	}
	const char *path = a.path, *output = a.output, *svg = a.svg, *report = a.report;
	const char *export_format = a.export_format, *export_output = a.export_output;
	bool json = a.json, text = a.text;
	struct mp_plan_options opts = a.opts;
	/* Every file the run writes, the report's pictures included. */
	const char *outputs[4 + CLI_REPORT_MAX_FILES] = {output, svg, report, export_output};
	size_t n_outputs = 4;
	struct cli_report_files pictures = {0};
	if (report && strcmp(report, "-") != 0 && cli_plan_report_files(report, &pictures)) {
		for (size_t i = 0; i < pictures.count; i++) {
			outputs[n_outputs++] = pictures.path[i];
		}
	}
	int usage = EXIT_OK;
	if (!cli_outputs_spare_inputs("plan", outputs, n_outputs, (const char *[]){path}, 1)) {
		usage = EXIT_USAGE;
	} else if (report && strcmp(report, "-") == 0) {
		usage = cli_usage("plan", "--report needs a file name: its pictures are written next to it");
	} else if (svg && strcmp(svg, "-") == 0 && (!output || strcmp(output, "-") == 0)) {
		usage = cli_usage("plan", "--svg - and the plan would both go to stdout; give -o FILE");
	}
	if (usage != EXIT_OK) {
		mp_engine_profile_finish(&a.profile);
		return usage;
	}

	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	if (!cli_quiet && isatty(2)) {
		opts.place.progress = progress;
		opts.place.progress_user = &start;
	}

	int status = EXIT_INPUT;
	struct mp_diags diags;
	mp_diags_init(&diags);
	struct mp_scenario scenario;
	mp_scenario_init(&scenario);
	struct mp_plan plan;
	mp_plan_init(&plan);
	struct mp_doc *doc = NULL;
	struct cli_layers layers = {0};

	int rc = mp_load_scenario(path, &scenario, &diags);
	if (rc) {
		goto out;
	}
	status = cli_scenario_kernels("plan", &scenario, a.kernels);
	if (status != EXIT_OK) {
		goto out;
	}
	status = cli_scenario_engine("plan", &scenario, &a.profile, a.have_profile, &a.engine, &opts.place);
	if (status != EXIT_OK) {
		goto out;
	}
	cli_warn_step_gaps(scenario.model_path, &scenario.model);
	const char *inputs[] = {
		scenario.model_path,
		scenario.prefill.hardware_path,
		scenario.decode.hardware_path,
		scenario.traffic.observed.path,
	};
	if (!cli_outputs_spare_inputs("plan", outputs, n_outputs, inputs, 4)) {
		status = EXIT_USAGE;
		goto out;
	}
	status = cli_check_outputs(outputs, n_outputs);
	if (status != EXIT_OK) {
		goto out;
	}
	rc = mp_plan_build(&scenario, &opts, &plan, &diags);
	if (rc) {
		status = rc == MP_ELIMIT ? EXIT_SOLVER : EXIT_INPUT;
		goto out;
	}
	if (svg) {
		status = cli_plan_heatmap(svg, &plan, &scenario, true, NULL);
		if (status) {
			goto out;
		}
	}
	if (report) {
		status = cli_plan_report(report, &plan, &scenario, path);
		if (status) {
			goto out;
		}
	}
	doc = mp_plan_to_doc_map(&plan, &scenario, export_output);
	cli_report_time_limit("plan", (const struct mp_placement *const[]){&plan.prefill.placement,
									 &plan.decode.placement},
			      2, opts.place.time_limit_s > 0 ? opts.place.time_limit_s : scenario.time_limit_s,
			      doc);
	if (export_format) {
		plan_set_launch(&plan, &scenario);
		/* rows named by the loads (or the model's MoE layers in order) */
		int lr = plan.loads.layer_ids
			? cli_layers_from_model(&layers, &scenario.model, plan.loads.layer_ids,
						plan.loads.n_layers)
			: 0;
		if (lr == MP_ENOMEM) {
			status = EXIT_INPUT;
			cli_error("%s", mp_strerror(lr));
			goto out;
		}
	}
	/* On a terminal, with no -o, --format or --export, a person reads
	 * the summary; pipes and files get the document (issue 16 item 8). */
	struct cli_plan_summary_input summary = {.plan = &plan, .scenario = &scenario, .path = path};
	if (!a.format_given && !output && !export_format && isatty(1)) {
		text = true;
	}
	if (export_format && !export_output) {
		status = cli_export_map(&plan.decode.placement, &layers, export_format, output);
	} else if (text) {
		status = cli_write_text(output, cli_plan_summary, &summary);
		if (status == EXIT_OK && export_format) {
			status = cli_export_map(&plan.decode.placement, &layers, export_format, export_output);
		}
	} else {
		status = cli_emit(doc, output, json);
		if (status == EXIT_OK && export_format) {
			status = cli_export_map(&plan.decode.placement, &layers, export_format, export_output);
		}
	}
out:
	cli_layers_finish(&layers);
	cli_print_diags(&diags);
	if (rc && diags.count == 0) {
		cli_error("%s: %s", path, mp_strerror(rc));
	}
	mp_doc_destroy(doc);
	mp_plan_finish(&plan);
	mp_scenario_finish(&scenario);
	mp_diags_finish(&diags);
	mp_engine_profile_finish(&a.profile);
	return status;
}
