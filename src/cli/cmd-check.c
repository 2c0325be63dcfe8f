/* moeplan check: validate a plan or an engine's physical_to_logical map and,
 * given loads, report how balanced it is. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "moeplan/loader.h"
#include "moeplan/placement.h"

static const struct option check_options[] = {
	{"loads", required_argument, NULL, 'l'},
	{"gpus", required_argument, NULL, 'g'},
	{"experts", required_argument, NULL, 'E'},
	{"model", required_argument, NULL, 'm'},
	{"phase", required_argument, NULL, 'P'},
	{"time-limit", required_argument, NULL, 't'},
	{"output", required_argument, NULL, 'o'},
	{"format", required_argument, NULL, 'f'},
	{"svg", required_argument, NULL, 'S'},
	{"help", no_argument, NULL, 'h'},
	{0},
};

static const struct cli_option_help check_help[] = {
	{"LOADS", "loads [layers][experts] (CSV, YAML, SGLang logical_count): report each GPU's "
		  "load, balancedness and the distance from the lower bound (default: check the "
		  "map's structure only)"},
	{"N", "GPUs of a map that does not say (SGLang, vLLM, bare [layers][slots] list) "
	      "(default: the file's gpus)"},
	{"E", "the model's routed experts: ids from E up are out of range and named first "
	      "(default: the file's n_experts, or its largest id + 1)"},
	{"M", "model file: its routed experts, as --experts (default: none)"},
	{"PHASE", "phase of a full plan: decode (default) or prefill"},
	{"SECONDS", "with --loads: wall-clock safety net for the solver that proves the lower "
		    "bound and finds the best known plan, for the whole run (default 10; 0 = none)"},
	{"FILE", "write the report to FILE atomically ('-' = stdout, the default)"},
	{"FMT", "yaml (default) or json"},
	{"FILE", "with --loads: draw the load per GPU per layer, round-robin (one replica per expert) beside this map, as an SVG heatmap (default: none)"},
	{NULL, "show this help"},
};

const struct cli_command_help cmd_check_help = {
	.name = "check",
	.synopsis = "moeplan check PLAN [--loads LOADS] [--gpus N] [--experts E | --model M]\n"
		    "                     [--phase decode|prefill]\n"
		    "                     [-o FILE] [--format yaml|json]",
	.description =
		"Verifies a placement: a moeplan plan or placement, SGLang's or vLLM's\n"
		"physical_to_logical_map, or a bare [layers][slots] list. Every logical expert must\n"
		"have a slot, ids must be in range, every GPU holds the same number of slots and no\n"
		"GPU holds one expert twice; each problem is reported with its layer, GPU and slot,\n"
		"and the exit status is 1. With --loads, prints per layer the load of every GPU\n"
		"(each replica taking an equal share), max and mean load, balancedness (mean/max),\n"
		"the lower bound on the busiest GPU for any placement (proven by a short run of\n"
		"the placement solver, which also gives best_max_load, the best plan it found)\n"
		"and the gap to it.",
	.options = check_options,
	.help = check_help,
	.examples =
		"  moeplan check plan.yaml --loads plans/traces/olmoe_c4.csv\n"
		"  moeplan check sglang_map.json --gpus 64\n",
};

struct check_args {
	const char *plan;
	const char *loads;
	const char *phase;
	const char *output;
	const char *svg;
	const char *model;
	uint32_t gpus;
	uint32_t experts;
	bool json;
	double time_limit_s;
};

static int parse_args(int argc, char **argv, struct check_args *a)
{
	char shorts[32];
	cli_short_options(check_options, shorts, sizeof(shorts));
	optind = 1;
	int c;
	unsigned char seen[CLI_SEEN_SIZE] = {0};
	while ((c = getopt_long(argc, argv, shorts, check_options, NULL)) != -1) {
		if (cli_repeated("check", c, check_options, seen)) {
			return EXIT_USAGE;
		}
		switch (c) {
		case 'l':
			a->loads = optarg;
			break;
		case 'g':
			if (!cli_parse_u32("check", "gpus", optarg, 1, MP_MAX_GPUS, &a->gpus)) {
				return EXIT_USAGE;
			}
			break;
		case 'E':
			if (!cli_parse_u32("check", "experts", optarg, 1, MP_MAX_EXPERTS, &a->experts)) {
				return EXIT_USAGE;
			}
			break;
		case 'm':
			a->model = optarg;
			break;
		case 'P':
			if (strcmp(optarg, "decode") != 0 && strcmp(optarg, "prefill") != 0) {
				return cli_usage("check", "--phase '%s': expected 'decode' or 'prefill'", optarg);
			}
			a->phase = optarg;
			break;
		case 't':
			if (!cli_parse_double("check", "time-limit", optarg, 0, 1e6, &a->time_limit_s)) {
				return EXIT_USAGE;
			}
			break;
		case 'o':
			a->output = optarg;
			break;
		case 'S':
			a->svg = optarg;
			break;
		case 'f':
			if (!cli_parse_format("check", optarg, &a->json)) {
				return EXIT_USAGE;
			}
			break;
		case 'h':
			cli_print_help(&cmd_check_help, stdout);
			return -1;
		default:
			fprintf(stderr, "Try 'moeplan check --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		return cli_usage("check", "PLAN is required");
	}
	if (optind + 1 < argc) {
		return cli_usage("check", "unexpected argument '%s'", argv[optind + 1]);
	}
	a->plan = argv[optind];
	if (a->svg && !a->loads) {
		return cli_usage("check", "--svg needs --loads: the heatmap shows loads");
	}
	if (a->experts && a->model) {
		return cli_usage("check", "give --experts or --model, not both");
	}
	const char *outputs[] = {a->output, a->svg};
	const char *inputs[] = {a->plan, a->loads, a->model};
	if (!cli_outputs_spare_inputs("check", outputs, 2, inputs, 3)) {
		return EXIT_USAGE;
	}
	return 0;
}

static struct mp_doc *report(const struct mp_placement *map, const struct mp_loads *loads,
			     const struct mp_placement *eval, const struct mp_placement *best)
{
	struct mp_doc *doc = mp_doc_map();
	struct mp_doc *chk = mp_doc_map();
	mp_doc_put_bool(chk, "valid", true);
	mp_doc_put_int(chk, "gpus", map->gpus);
	mp_doc_put_int(chk, "slots", (int64_t)map->gpus * map->slots_per_gpu);
	mp_doc_put_int(chk, "slots_per_gpu", map->slots_per_gpu);
	mp_doc_put_int(chk, "n_experts", map->n_experts);
	mp_doc_put_int(chk, "n_layers", map->n_layers);
	struct mp_doc *layers = mp_doc_list();
	double worst_gap = 0;
	double worst_bal = 1;
	for (uint32_t l = 0; l < map->n_layers; l++) {
		struct mp_doc *ld = mp_doc_map();
		mp_doc_put_int(ld, "layer", l);
		if (loads) {
			const struct mp_layer_placement *lp = &eval->layers[l];
			double bal = lp->max_load > 0 ? lp->mean_load / lp->max_load : 1.0;
			mp_doc_put(ld, "replicas", mp_doc_uints(lp->replicas, map->n_experts));
			mp_doc_put(ld, "gpu_load", mp_doc_reals(lp->gpu_load, map->gpus));
			mp_doc_put_real(ld, "max_load", lp->max_load);
			mp_doc_put_real(ld, "mean_load", lp->mean_load);
			mp_doc_put_real(ld, "balancedness", bal);
			mp_doc_put_real(ld, "lower_bound", lp->lower_bound);
			mp_doc_put_real(ld, "gap", lp->gap);
			mp_doc_put_real(ld, "best_max_load", best->layers[l].max_load);
			mp_doc_put_string(ld, "best_status", mp_place_status_name(best->layers[l].status));
			worst_gap = lp->gap > worst_gap ? lp->gap : worst_gap;
			worst_bal = bal < worst_bal ? bal : worst_bal;
		} else {
			uint32_t *r = calloc(map->n_experts, sizeof(*r));
			if (r) {
				for (uint32_t p = 0; p < map->gpus * map->slots_per_gpu; p++) {
					r[map->layers[l].slot_expert[p]]++;
				}
			}
			mp_doc_put(ld, "replicas", r ? mp_doc_uints(r, map->n_experts) : NULL);
			free(r);
		}
		mp_doc_put(layers, NULL, ld);
	}
	if (loads) {
		mp_doc_put_real(chk, "worst_balancedness", worst_bal);
		mp_doc_put_real(chk, "worst_gap", worst_gap);
	}
	mp_doc_put(chk, "layers", layers);
	mp_doc_put(doc, "check", chk);
	return doc;
}

int cmd_check(int argc, char **argv)
{
	struct check_args a = { .time_limit_s = 10.0 };
	int rc = parse_args(argc, argv, &a);
	if (rc != 0) {
		return rc < 0 ? EXIT_OK : rc;
	}
	struct mp_placement map;
	struct mp_placement eval;
	struct mp_placement best;
	struct mp_loads loads;
	struct mp_diags diags;
	struct mp_doc *doc = NULL;
	mp_placement_init(&map);
	mp_placement_init(&eval);
	mp_placement_init(&best);
	mp_loads_init(&loads);
	mp_diags_init(&diags);
	int exit_code = EXIT_INPUT;
	/* Every problem in the map at once: ids out of range, experts with no
	 * slot, an expert twice on a GPU (capped, "... and N more"). */
	if (a.model) {
		struct mp_model model;
		mp_model_init(&model);
		rc = mp_load_model(a.model, &model, &diags);
		a.experts = model.routed_experts;
		mp_model_finish(&model);
		if (rc != 0) {
			cli_print_diags(&diags);
			if (diags.count == 0) {
				cli_error("%s: %s", a.model, mp_strerror(rc));
			}
			goto out;
		}
	}
	rc = mp_load_map_experts(a.plan, a.phase, a.gpus, a.experts, true, &map, &diags);
	if (rc != 0) {
		cli_print_diags(&diags);
		if (diags.count == 0) {
			cli_error("%s: %s", a.plan, mp_strerror(rc));
		}
		goto out;
	}
	if (a.loads) {
		rc = mp_load_loads(a.loads, &loads, &diags);
		if (rc != 0) {
			cli_print_diags(&diags);
			if (diags.count == 0) {
				cli_error("%s: %s", a.loads, mp_strerror(rc));
			}
			goto out;
		}
		if (loads.n_layers != map.n_layers || loads.n_experts != map.n_experts) {
			cli_error("%s: %u layers x %u experts, but %s places %u layers x %u experts",
				  a.loads, loads.n_layers, loads.n_experts, a.plan, map.n_layers,
				  map.n_experts);
			goto out;
		}
		rc = mp_placement_alloc(&eval, map.n_layers, map.n_experts, map.gpus, map.slots_per_gpu);
		for (uint32_t l = 0; l < map.n_layers && rc == 0; l++) {
			rc = mp_place_evaluate(map.layers[l].slot_expert, mp_loads_row(&loads, l),
					       map.n_experts, map.gpus, map.slots_per_gpu, &eval.layers[l]);
		}
		if (rc != 0) {
			cli_error("%s: %s", a.plan, mp_strerror(rc));
			goto out;
		}
		/* The solver's proven bound is stronger than the quick one. */
		struct mp_place_options opts;
		mp_place_options_init(&opts);
		opts.time_limit_s = a.time_limit_s;
		rc = mp_place(&loads, map.gpus, map.slots_per_gpu, &opts, &best, &diags);
		if (rc != 0) {
			cli_print_diags(&diags);
			if (diags.count == 0) {
				cli_error("%s: %s", a.loads, mp_strerror(rc));
			}
			goto out;
		}
		for (uint32_t l = 0; l < map.n_layers; l++) {
			struct mp_layer_placement *lp = &eval.layers[l];
			double lb = best.layers[l].lower_bound;
			if (lb > lp->lower_bound && lb <= lp->max_load) {
				mp_layer_placement_set_bound(lp, lb, lp->status);
			}
		}
	}
	if (a.svg) {
		struct cli_heatmap_spec spec = {
			.path = a.svg,
			.after = &map,
			.after_label = "this map",
			.loads = &loads,
		};
		exit_code = cli_plot_heatmap(&spec, NULL);
		if (exit_code != EXIT_OK) {
			goto out;
		}
		exit_code = EXIT_INPUT;
	}
	doc = report(&map, a.loads ? &loads : NULL, &eval, &best);
	if (!doc || mp_doc_failed(doc)) {
		cli_error("%s", mp_strerror(MP_ENOMEM));
		goto out;
	}
	exit_code = cli_emit(doc, a.output, a.json);
out:
	mp_doc_destroy(doc);
	mp_placement_finish(&map);
	mp_placement_finish(&eval);
	mp_placement_finish(&best);
	mp_loads_finish(&loads);
	mp_diags_finish(&diags);
	return exit_code;
}
