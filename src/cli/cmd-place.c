/* moeplan place: expert and replica placement for given loads. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "moeplan/loader.h"
#include "moeplan/placement.h"
#include "moeplan/plan.h"

enum {
	OPT_EXPORT = CLI_OPT_LONG,
	OPT_EXPORT_OUTPUT,
	OPT_ENGINE,
	OPT_EP_DISPATCH_ALGORITHM,
	OPT_OBJECTIVE,
	OPT_HALF_LIFE,
	OPT_SPREAD_K,
	OPT_WINDOWS,
};

static const struct cli_opt place_options[] = {
	{"gpus", 'g', "G", "number of GPUs in the expert-parallel group (required)", NULL},
	{"slots", 's', "N", "physical expert slots in all, a multiple of G, at least the number of "
		"experts and at most 4096 per GPU (required)", NULL},
	{"time-limit", 't', "SECONDS", "wall-clock safety net for the whole run (default 60; 0 = none): the search "
		"is bounded by counted work, so plans are identical on any machine; layers the "
		"limit stops say status time_limit", NULL},
	{"threads", 'j', "N", "worker threads over layers (default: number of CPUs)", NULL},
	{"split", 'S', "SPLIT", "even (default: each replica takes an equal share, as vLLM and SGLang "
		"route) or weighted (any split, for engines that route by weight)", "even weighted"},
	{"gpus-per-node", 'n', "N", "GPUs per node: must divide G; node loads are summed per layer (default: no nodes)", NULL},
	{"balance-nodes", 'B', NULL, "with --gpus-per-node: after the busiest GPU, make the busiest node as light as "
		"possible (replicas of one expert may sit on several nodes; default: off)", NULL},
	{"group-limited", 'L', "GROUPS", "with --gpus-per-node: split the experts into GROUPS groups of consecutive ids "
		"and keep every replica of a group on one node, so a token that uses k groups "
		"reaches at most k nodes (DeepSeek-V3: 8); default: off", NULL},
	{"target-gap", 'G', "FRACTION", "stop a layer's search once (max - bound) / max <= FRACTION (default 0)", NULL},
	{"effort", 'e', "X", "multiply the search's work budgets by X, 0.001 to 1000 (default 1; more is slower "
		"and may find better plans; plans stay deterministic)", NULL},
	{"output", 'o', "FILE", "write the placement to FILE atomically ('-' = stdout, the default)", CLI_COMPLETE_FILE},
	CLI_OPT_FORMAT_YAML,
	CLI_OPT_VERBOSE,
	{"export", OPT_EXPORT, "ENGINE", "write the map as sglang (--init-expert-location JSON, one row per hidden\n"
		"                                 layer) to -o instead of the placement, or to --export-output;\n"
		"                                 the name must end in .json (default: none)", "sglang"},
	{"export-output", OPT_EXPORT_OUTPUT, "FILE.json", "with --export: the engine map goes to FILE.json and the placement to -o\n"
		"                                 (default: none)", CLI_COMPLETE_FILE},
	{"model", 'm', "FILE", "the model (preset or config.json): its layer numbering places the rows\n"
		"                                 for --export, and its dense layers' rows are dropped (they must\n"
		"                                 be zero); not needed for SGLang's own dumps (default: none)", CLI_COMPLETE_INPUT},
	{"engine", OPT_ENGINE, "NAME", "minimise the busiest GPU under this engine's dispatch: even (each replica\n"
		"                                 1/r, DeepSeek's EPLB), sglang (SGLang's nearest-replica rule: own GPU,\n"
		"                                 then the node's first replica, then a fair choice; nodes\n"
		"                                 from --gpus-per-node) or vllm (1/r in expectation) (default: even)",
		"even sglang vllm"},
	{"ep-dispatch-algorithm", OPT_EP_DISPATCH_ALGORITHM, "ALG", "with --engine sglang: the SGLang "
		"--ep-dispatch-algorithm the plan assumes,\n"
		"                                 static, dynamic or fake (default static, SGLang's choice\n"
		"                                 with --init-expert-location)", "static dynamic fake"},
	{"objective", OPT_OBJECTIVE, "NAME", "with a history of loads (several LOADS, oldest first, or a series CSV):\n"
		"                                 what to plan the next window on: last (the last window, as the\n"
		"                                 engines do), mean, recency (weights halving every --half-life\n"
		"                                 windows), spread (mean + --spread-k standard deviations) or\n"
		"                                 worst (the largest busiest/mean over the windows, by slot swaps\n"
		"                                 from the mean's plan) (default " MP_OBJECTIVE_DEFAULT_NAME ", the best held out on\n"
		"                                 the shipped series: README \"Plans for the next window\")", "last mean recency spread worst"},
	{"half-life", OPT_HALF_LIFE, "W", "with --objective recency: windows over which a window's weight halves (default 2)", NULL},
	{"spread-k", OPT_SPREAD_K, "K", "with --objective spread: standard deviations added to each expert's mean, 0 to 100 (default 1)", NULL},
	{"windows", OPT_WINDOWS, "FIRST:LAST", "with a history: plan on windows FIRST to LAST only, numbered from 1 (default: all)", NULL},
	CLI_OPT_HELP,
	{0},
};

const struct cli_command_help cmd_place_help = {
	.name = "place",
	.synopsis = "moeplan place LOADS... --gpus G --slots N [--time-limit SECONDS] [-o FILE]\n"
		    "                     [--format yaml|json] [options]",
	.description =
		"Places logical experts and their redundant replicas into G x (N / G) slots for\n"
		"every MoE layer of LOADS, minimising the busiest GPU's load (then the second\n"
		"busiest): every expert gets at least one replica, no GPU holds one expert twice,\n"
		"and each replica carries an equal share of its expert's load. LOADS is a CSV\n"
		"(one row per layer, one column per expert, '#' comments), a YAML or JSON list of\n"
		"lists, or SGLang's logical_count dump (JSON, or its torch.save .pt as written).\n"
		"Several LOADS (oldest first), or a series CSV of time windows, are a history: the\n"
		"plan is made for the next window from it (--objective).\n"
		"Prints the `placement` object: per layer\n"
		"gpu_experts, replicas, gpu_load, max_load, mean_load, balancedness, the proven\n"
		"lower_bound, gap, status (optimal, feasible or time_limit) and method; then\n"
		"physical_to_logical, the map vLLM and SGLang load. Method: bounds, a heuristic\n"
		"that is never worse than DeepSeek's EPLB, and GLPK's MIP on small layers.",
	.options = place_options,
	.examples =
		"  moeplan place plans/traces/olmoe_c4.csv --gpus 8 --slots 72\n"
		"  moeplan place plans/traces/switch128_bookcorpus.csv --gpus 16 --slots 144 --time-limit 2 \\\n"
		"      --format json -o placement.json\n"
		"  moeplan place plans/traces/qwen15moe_bookcorpus.series.csv --gpus 8 --slots 72 --objective mean\n",
};

struct place_args {
	const char *loads;
	char *const *paths; /* every LOADS operand */
	uint32_t n_paths;
	const char *output;
	const char *export_format;
	const char *export_output;
	const char *model;
	uint32_t gpus;
	uint32_t slots;
	bool have_gpus;
	bool have_slots;
	bool json;
	bool have_balance;
	bool have_groups;
	struct mp_place_options opts;
	struct cli_engine engine;
	struct cli_history history;
};

/* After the options: the one LOADS operand, then the options checked
 * together (slots per GPU, nodes, groups, exports, outputs that are
 * inputs, outputs that cannot be written). Returns 0 to go on, else the
 * exit status. */
static int check_args(int argc, char **argv, struct place_args *a)
{
	if (optind >= argc) {
		return cli_usage("place", "LOADS is required");
	}
	a->loads = argv[optind];
	a->paths = argv + optind;
	a->n_paths = (uint32_t)(argc - optind);
	if (a->history.obj.kind == MP_OBJECTIVE_WORST &&
	    (a->opts.gpus_per_node != 0 || a->engine.d.rule != MP_DISPATCH_EVEN)) {
		return cli_usage("place", "--objective worst plans the even split without nodes: %s",
				 a->opts.gpus_per_node != 0 ? "it excludes --gpus-per-node"
							    : "it needs --engine even");
	}
	if (!a->have_gpus || !a->have_slots) {
		return cli_usage("place", "--gpus G and --slots N are required");
	}
	if (a->slots % a->gpus != 0) {
		return cli_usage("place", "--slots %u is not a multiple of --gpus %u: every GPU holds "
				 "the same number of slots", a->slots, a->gpus);
	}
	if (a->slots / a->gpus > MP_MAX_SLOTS_PER_GPU) {
		/* the documented range (README Limits), before any file is read */
		return cli_usage("place", "--slots: expected a multiple of --gpus %u from %u to %llu "
				 "(at most %u slots per GPU), got '%u'", a->gpus, a->gpus,
				 (unsigned long long)a->gpus * MP_MAX_SLOTS_PER_GPU,
				 MP_MAX_SLOTS_PER_GPU, a->slots);
	}
	if (a->opts.gpus_per_node != 0 && a->gpus % a->opts.gpus_per_node != 0) {
		return cli_usage("place", "--gpus %u is not a multiple of --gpus-per-node %u", a->gpus,
				 a->opts.gpus_per_node);
	}
	if (a->have_balance && a->have_groups) {
		return cli_usage("place", "--balance-nodes and --group-limited exclude each other: "
				 "group-limited placement fixes which node carries each group's load");
	}
	if ((a->have_balance || a->have_groups) && a->opts.gpus_per_node == 0) {
		return cli_usage("place", "--%s needs --gpus-per-node N",
				 a->have_balance ? "balance-nodes" : "group-limited");
	}
	if (a->have_groups && a->opts.n_groups % (a->gpus / a->opts.gpus_per_node) != 0) {
		return cli_usage("place", "--group-limited %u: every node holds the same number of "
				 "groups, so GROUPS must be a multiple of the %u nodes (--gpus %u / "
				 "--gpus-per-node %u)", a->opts.n_groups, a->gpus / a->opts.gpus_per_node,
				 a->gpus, a->opts.gpus_per_node);
	}
	if (a->export_output && !a->export_format) {
		return cli_usage("place", "--export-output needs --export sglang");
	}
	if (a->export_format && !cli_export_name_ok("place", a->export_output ? a->export_output : a->output)) {
		return EXIT_USAGE;
	}
	const char *outs[] = {a->output, a->export_output};
	for (size_t i = 0; i < 2; i++) {
		bool input = outs[i] && a->model && cli_same_file(outs[i], a->model);
		for (uint32_t p = 0; outs[i] && p < a->n_paths; p++) {
			input = input || cli_same_file(outs[i], a->paths[p]);
		}
		if (input) {
			return cli_usage("place", "'%s' is an input; refusing to overwrite it", outs[i]);
		}
	}
	if (!cli_outputs_spare_inputs("place", outs, 2, NULL, 0)) {
		return EXIT_USAGE; /* -o and --export-output name one file */
	}
	return cli_check_outputs(outs, 2);
}

/* The launch line of --export (issue 24): nodes and the dispatch
 * algorithm the plan assumes. */
static void place_set_launch(const struct place_args *a)
{
	struct mp_export_launch l;
	struct mp_placement none = {0};
	mp_export_launch_init(&l, &none);
	l.gpus_per_node = a->opts.gpus_per_node;
	l.ep_dispatch_algorithm = mp_dispatch_algorithm_name(a->engine.d.algorithm);
	cli_export_set_launch(&l);
}

/* The options into *a, then check_args. Returns 0 to go on, -1 after
 * --help, else the exit status. */
static int parse_args(int argc, char **argv, struct place_args *a)
{
	struct cli_parser parser;
	cli_parser_init(&parser, &cmd_place_help);
	int c;
	while ((c = cli_parser_next(&parser, argc, argv)) >= 0) {
		switch (c) {
		case 'g':
			if (!cli_parse_u32("place", "gpus", optarg, 1, MP_MAX_GPUS, &a->gpus)) {
				return EXIT_USAGE;
			}
			a->have_gpus = true;
			break;
		case 's':
			if (!cli_parse_u32("place", "slots", optarg, 1, UINT32_MAX / 2, &a->slots)) {
				return EXIT_USAGE;
			}
			a->have_slots = true;
			break;
		case 't':
			if (!cli_parse_double("place", "time-limit", optarg, 0, 1e6,
					      &a->opts.time_limit_s)) {
				return EXIT_USAGE;
			}
			break;
		case 'j': {
			uint32_t n = 0;
			if (!cli_parse_u32("place", "threads", optarg, 0, 1024, &n)) {
				return EXIT_USAGE;
			}
			a->opts.threads = n;
			break;
		}
		case 'S':
			if (strcmp(optarg, "even") == 0) {
				a->opts.split = MP_SPLIT_EVEN;
			} else if (strcmp(optarg, "weighted") == 0) {
				a->opts.split = MP_SPLIT_WEIGHTED;
			} else {
				return cli_usage("place", "--split '%s': expected 'even' or 'weighted'", optarg);
			}
			break;
		case 'n':
			if (!cli_parse_u32("place", "gpus-per-node", optarg, 1, MP_MAX_GPUS,
					   &a->opts.gpus_per_node)) {
				return EXIT_USAGE;
			}
			break;
		case 'G':
			if (!cli_parse_double("place", "target-gap", optarg, 0, 1, &a->opts.target_gap)) {
				return EXIT_USAGE;
			}
			break;
		case 'B':
			a->opts.node_policy = MP_NODES_BALANCE;
			a->have_balance = true;
			break;
		case 'L':
			if (!cli_parse_u32("place", "group-limited", optarg, 1, MP_MAX_EXPERTS,
					   &a->opts.n_groups)) {
				return EXIT_USAGE;
			}
			a->opts.node_policy = MP_NODES_GROUP_LIMITED;
			a->have_groups = true;
			break;
		case 'e':
			if (!cli_parse_double("place", "effort", optarg, 1e-3, 1e3, &a->opts.effort)) {
				return EXIT_USAGE;
			}
			break;
		case 'o':
			a->output = optarg;
			break;
		case 'f':
			if (!cli_parse_format("place", optarg, &a->json)) {
				return EXIT_USAGE;
			}
			break;
		case 'v':
			a->opts.verbose = true;
			break;
		case OPT_EXPORT:
			if (!cli_parse_export("place", optarg)) {
				return EXIT_USAGE;
			}
			a->export_format = optarg;
			break;
		case OPT_EXPORT_OUTPUT:
			a->export_output = optarg;
			break;
		case 'm':
			a->model = optarg;
			break;
		case OPT_ENGINE:
			if (!cli_engine_parse("place", optarg, &a->engine)) {
				return EXIT_USAGE;
			}
			break;
		case OPT_EP_DISPATCH_ALGORITHM:
			if (!cli_engine_parse_algorithm("place", optarg, &a->engine)) {
				return EXIT_USAGE;
			}
			break;
		case OPT_OBJECTIVE:
		case OPT_HALF_LIFE:
		case OPT_SPREAD_K:
		case OPT_WINDOWS:
			if (!cli_history_option("place", cli_history_option_name(c - OPT_OBJECTIVE), optarg,
						&a->history)) {
				return EXIT_USAGE;
			}
			break;
		default: /* every id of the table has its case above */
			break;
		}
	}
	if (c != CLI_PARSE_END) {
		return c == CLI_PARSE_HELP ? -1 : EXIT_USAGE;
	}
	a->opts.dispatch = a->engine.d;
	a->opts.dispatch.gpus_per_node = a->opts.gpus_per_node;
	place_set_launch(a);
	if (a->engine.have_algorithm && a->engine.d.rule != MP_DISPATCH_SGLANG) {
		return cli_usage("place", "--ep-dispatch-algorithm is SGLang's: it needs --engine sglang");
	}
	return check_args(argc, argv, a);
}

/* --model: keep the loads' MoE rows (mp_plan_layers) and number them for
 * --export by the model's layers. */
static int place_model_layers(const struct place_args *a, struct mp_loads *loads,
			      struct cli_layers *layers, struct mp_diags *diags)
{
	struct mp_model model;
	mp_model_init(&model);
	int rc = mp_load_model(a->model, &model, diags);
	if (rc == 0 && loads->n_experts != model.routed_experts) {
		rc = mp_diags_add(diags, a->loads, 0, 0, MP_EINVAL, "%u experts per row, but %s has %u "
				  "routed experts", loads->n_experts, a->model, model.routed_experts);
	}
	if (rc == 0) {
		rc = mp_plan_layers(&model, loads, diags);
	}
	if (rc == 0 && (loads->layer_ids || loads->n_layers == model.moe_layers)) {
		rc = cli_layers_from_model(layers, &model, loads->layer_ids, loads->n_layers);
	}
	mp_model_finish(&model);
	return rc;
}

int cmd_place(int argc, char **argv)
{
	struct place_args a = { 0 };
	mp_place_options_init(&a.opts);
	mp_objective_options_init(&a.history.obj);
	int rc = parse_args(argc, argv, &a);
	if (rc != 0) {
		return rc < 0 ? EXIT_OK : rc;
	}
	struct mp_loads loads;
	struct mp_placement pl;
	struct mp_diags diags;
	struct mp_doc *doc = NULL;
	struct cli_layers layers = {0};
	mp_loads_init(&loads);
	mp_placement_init(&pl);
	mp_diags_init(&diags);
	int exit_code = EXIT_OK;
	const bool history = cli_history_wanted(a.paths, a.n_paths);
	if (!history && (a.history.have_objective || a.history.first != 0)) {
		/* one window: every objective plans on it; --windows needs a history */
		if (a.history.first > 1 || a.history.last > 1) {
			cli_error("--windows %u:%u: %s is one window", a.history.first, a.history.last, a.loads);
			exit_code = EXIT_INPUT;
			goto out;
		}
	}
	cli_history_warn("place", &a.history, history);
	rc = history ? cli_history_load(&a.history, a.paths, a.n_paths, &loads, &diags)
		     : mp_load_loads(a.loads, &loads, &diags);
	if (rc != 0) {
		cli_print_diags(&diags);
		if (diags.count == 0) {
			cli_error("%s: %s", a.loads, mp_strerror(rc));
		}
		exit_code = EXIT_INPUT;
		goto out;
	}
	rc = a.model ? place_model_layers(&a, &loads, &layers, &diags)
		     : cli_place_skip_dense(a.loads, &loads, &layers);
	if (rc != 0) {
		cli_print_diags(&diags);
		exit_code = EXIT_INPUT;
		goto out;
	}
	/* the model's warnings (a config key not read, issue 26) */
	cli_print_diags(&diags);
	mp_diags_finish(&diags);
	mp_diags_init(&diags);
	if (layers.known) { /* SGLang's static streams run over the rows --export writes */
		a.opts.map_moe_ids = layers.layers.moe_ids;
		a.opts.map_n_moe = layers.layers.n_moe;
	}
	rc = mp_place(&loads, a.gpus, a.slots / a.gpus, &a.opts, &pl, &diags);
	if (rc != 0) {
		/* shape problems concern the loads file as a whole: name it */
		for (size_t i = 0; i < diags.count; i++) {
			if (!diags.items[i].file) {
				diags.items[i].file = strdup(a.loads);
			}
		}
		cli_print_diags(&diags);
		if (diags.count == 0) {
			cli_error("%s: %s", a.loads, mp_strerror(rc));
		}
		exit_code = rc == MP_ELIMIT ? EXIT_SOLVER : EXIT_INPUT;
		goto out;
	}
	double worst = -1.0;
	double worst_bound = 0.0;
	if (history && a.history.obj.kind == MP_OBJECTIVE_WORST) {
		rc = cli_history_worst(&a.history, &loads, &pl, &worst, &worst_bound);
		if (rc != 0) {
			cli_error("%s: %s", a.loads, mp_strerror(rc));
			exit_code = EXIT_INPUT;
			goto out;
		}
	}
	cli_report_time_limit("place", (const struct mp_placement *const[]){&pl}, 1,
			      a.opts.time_limit_s, NULL);
	doc = mp_placement_to_doc(&pl, loads.layer_ids);
	if (doc && history) {
		cli_history_doc(&a.history, worst, worst_bound, doc);
	}
	if (!doc || mp_doc_failed(doc)) {
		cli_error("%s", mp_strerror(MP_ENOMEM));
		exit_code = EXIT_INPUT;
		goto out;
	}
	if (a.export_format && !a.model && loads.hidden_layers == loads.n_layers &&
	    cli_layers_every_row(&layers, loads.n_layers) != 0) {
		cli_error("%s", mp_strerror(MP_ENOMEM));
		exit_code = EXIT_INPUT;
		goto out;
	}
	/* An export that cannot be made fails before anything is written. */
	if (a.export_format && !layers.known && loads.layer_ids && !a.model) {
		cli_error("cannot export the SGLang map: %s names its rows' layers, but SGLang wants one "
			  "row per hidden layer and how many the model has is unknown: give --model M",
			  a.loads);
		exit_code = EXIT_INPUT;
		goto out;
	}
	if (a.export_format && (!a.export_output || !layers.known)) {
		exit_code = cli_export_map(&pl, &layers, a.export_format,
					   a.export_output ? a.export_output : a.output);
		goto out;
	}
	exit_code = cli_emit(doc, a.output, a.json);
	if (exit_code == EXIT_OK && a.export_format) {
		exit_code = cli_export_map(&pl, &layers, a.export_format, a.export_output);
	}
	if (exit_code == EXIT_OK && !cli_quiet && a.output && strcmp(a.output, "-") != 0) {
		uint32_t optimal = 0;
		uint32_t stopped = 0;
		double worst_gap = 0;
		for (uint32_t l = 0; l < pl.n_layers; l++) {
			optimal += pl.layers[l].status == MP_PLACE_OPTIMAL;
			stopped += pl.layers[l].status == MP_PLACE_TIME_LIMIT;
			worst_gap = pl.layers[l].gap > worst_gap ? pl.layers[l].gap : worst_gap;
		}
		char limit_note[96] = "";
		if (stopped > 0) {
			snprintf(limit_note, sizeof(limit_note),
				 ", %u stopped by --time-limit (status time_limit)", stopped);
		}
		fprintf(stderr, "moeplan place: %u layer%s, %u proven optimal%s, worst gap %.3g%%; wrote %s\n",
			pl.n_layers, cli_s(pl.n_layers), optimal, limit_note, worst_gap * 100, a.output);
		if (pl.gpus_per_node != 0 && pl.gpus / pl.gpus_per_node > 1) {
			double node_worst = 1;
			double price = 1;
			for (uint32_t l = 0; l < pl.n_layers; l++) {
				const struct mp_layer_placement *lp = &pl.layers[l];
				if (lp->node_mean_load > 0 && lp->node_max_load / lp->node_mean_load > node_worst) {
					node_worst = lp->node_max_load / lp->node_mean_load;
				}
				double free_lb = mp_place_lower_bound(mp_loads_row(&loads, l), loads.n_experts,
								      pl.gpus, pl.slots_per_gpu);
				if (free_lb > 0 && lp->max_load / free_lb > price) {
					price = lp->max_load / free_lb;
				}
			}
			fprintf(stderr, "moeplan place: nodes (%s): busiest node at most %.4f x the mean node",
				mp_node_policy_name(pl.node_policy), node_worst);
			if (pl.node_policy == MP_NODES_GROUP_LIMITED) {
				fprintf(stderr, "; busiest GPU up to %.4f x the bound without groups", price);
			}
			fputc('\n', stderr);
		}
	}
out:
	cli_history_finish(&a.history);
	cli_layers_finish(&layers);
	mp_doc_destroy(doc);
	mp_placement_finish(&pl);
	mp_loads_finish(&loads);
	mp_diags_finish(&diags);
	return exit_code;
}
