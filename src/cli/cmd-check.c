/* moeplan check: validate a plan or an engine's physical_to_logical map and,
 * given loads, report how balanced it is. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "moeplan/loader.h"
#include "moeplan/placement.h"

#include <unistd.h>

enum { OPT_EP_SIZE = CLI_OPT_LONG };

static const struct cli_opt check_options[] = {
	{"loads", 'l', "LOADS", "loads [layers][experts] (CSV, YAML, SGLang logical_count): report each GPU's "
		"load, balancedness and the distance from the lower bound (default: check the "
		"map's structure only)", CLI_COMPLETE_FILE},
	{"gpus", 'g', "N", "GPUs of a map that does not say (SGLang, vLLM, bare [layers][slots] list); "
		"a file that says its GPUs must agree (default: the file's gpus)", NULL},
	{"ep-size", OPT_EP_SIZE, "N", "the same as --gpus, spelled as SGLang's --ep-size that plan --export prints (default: the file's gpus)", NULL},
	{"experts", 'E', "E", "the model's routed experts: ids from E up are out of range and named first "
		"(default: the file's n_experts, or its largest id + 1)", NULL},
	{"model", 'm', "M", "model file: its routed experts, as --experts (default: none)", CLI_COMPLETE_INPUT},
	{"phase", 'P', "PHASE", "phase of a full plan: decode (default) or prefill", "decode prefill"},
	{"time-limit", 't', "SECONDS", "with --loads: wall-clock safety net for the solver that proves the lower "
		"bound and finds the best known plan, for the whole run (default 10; 0 = none)", NULL},
	{"output", 'o', "FILE", "write the report to FILE atomically ('-' = stdout, the default)", CLI_COMPLETE_FILE},
	CLI_OPT_FORMAT_YAML,
	{"svg", 'S', "FILE", "with --loads: draw the load per GPU per layer, round-robin (one replica per expert) beside this map, as an SVG heatmap (default: none)", CLI_COMPLETE_FILE},
	CLI_OPT_HELP,
	{0},
};

const struct cli_command_help cmd_check_help = {
	.name = "check",
	.synopsis = "moeplan check PLAN [--loads LOADS] [--gpus N | --ep-size N] [--experts E | --model M]\n"
		    "                     [--phase decode|prefill]\n"
		    "                     [-o FILE] [--format yaml|json]",
	.description =
		"Verifies a placement: a moeplan plan or placement, SGLang's or vLLM's\n"
		"physical_to_logical_map, or a bare [layers][slots] list. Every logical expert must\n"
		"have a slot, ids must be in range and every GPU holds the same number of slots;\n"
		"each problem is reported with its layer, GPU and slot, and the exit status is 1.\n"
		"Two replicas of one expert on one GPU (as the engines' balancers may place them)\n"
		"are a warning naming layer, GPU and slot, and the map is scored as it stands.\n"
		"With --loads, prints per layer the load of every GPU\n"
		"(each replica taking an equal share, as vLLM dispatches; for layers with duplicate\n"
		"replicas also SGLang's static dispatch), max and mean load, balancedness (mean/max),\n"
		"the lower bound on the busiest GPU for any placement (proven by a short run of\n"
		"the placement solver, which also gives best_max_load, the best plan it found)\n"
		"and the gap to it.",
	.options = check_options,
	.examples =
		"  moeplan place plans/traces/olmoe_c4.csv --gpus 8 --slots 72 -o placement.yaml\n"
		"  moeplan check placement.yaml --loads plans/traces/olmoe_github.csv\n"
		"  moeplan check tests/data/maps/eplb-sglang.json --gpus 8 --experts 12\n",
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
	bool format_given;
	double time_limit_s;
};

/* --gpus N or its synonym --ep-size N (issue 26 item 5: plan --export
 * prints SGLang's flags, --ep-size among them); giving both is a usage
 * error, as a repeated option is. */
static bool parse_gpus(int c, const char *value, struct check_args *a)
{
	const char *name = c == 'g' ? "gpus" : "ep-size";
	if (a->gpus) {
		cli_usage("check", "--gpus and --ep-size name one count: give it once");
		return false;
	}
	return cli_parse_u32("check", name, value, 1, MP_MAX_GPUS, &a->gpus);
}

static int parse_args(int argc, char **argv, struct check_args *a)
{
	struct cli_parser parser;
	cli_parser_init(&parser, &cmd_check_help);
	int c;
	while ((c = cli_parser_next(&parser, argc, argv)) >= 0) {
		switch (c) {
		case 'l':
			a->loads = optarg;
			break;
		case 'g':
		case OPT_EP_SIZE:
			if (!parse_gpus(c, optarg, a)) {
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
			a->format_given = true;
			break;
		default: /* every id of the table has its case above */
			break;
		}
	}
	if (c != CLI_PARSE_END) {
		return c == CLI_PARSE_HELP ? -1 : EXIT_USAGE;
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

#define CHECK_MAX_WARNINGS 20

static void warn_duplicates(const char *path, const struct mp_placement *map)
{
	const uint32_t S = map->slots_per_gpu;
	uint64_t n = 0;
	for (uint32_t l = 0; l < map->n_layers; l++) {
		const uint32_t *m = map->layers[l].slot_expert;
		for (uint32_t p = 0; p < map->gpus * S; p++) {
			for (uint32_t q = p - p % S; q < p; q++) {
				if (m[q] != m[p]) {
					continue;
				}
				if (n++ < CHECK_MAX_WARNINGS && !cli_quiet) {
					fprintf(stderr, "%s: warning: layer %u, GPU %u, slot %u (physical %u): expert "
						"%u again (also in slot %u): two replicas on one GPU, as the engines' "
						"balancers may place them; scored as it stands\n", path, l, p / S,
						p % S, p, m[p], q % S);
				}
				break;
			}
		}
	}
	if (n > CHECK_MAX_WARNINGS && !cli_quiet) {
		fprintf(stderr, "%s: warning: ... and %llu more duplicate replicas\n", path,
			(unsigned long long)(n - CHECK_MAX_WARNINGS));
	}
}

/* Each GPU's expected load under SGLang's static dispatch with equal
 * traffic from every rank (sgl-project/sglang
 * python/sglang/srt/eplb/expert_location.py,
 * compute_logical_to_rank_dispatch_physical_map): a rank with a replica of
 * expert e on its own GPU sends its tokens for e there; every other rank
 * sends all of its tokens for e to one replica drawn evenly
 * (_fair_choices). So GPU g, holding k_g of e's r replicas, gets
 * w_e / G (if k_g > 0) + (G - n_e) w_e / G * k_g / r_e, n_e the GPUs
 * holding e. Without duplicates this is w_e / r_e per replica, the even
 * split; with them the GPU holding two replicas gets less than 2 w_e / r_e.
 * gpu[G] is filled; returns the busiest. */
static double sglang_static_loads(const struct mp_placement *map, uint32_t l, const double *w,
				  double *gpu)
{
	const uint32_t G = map->gpus;
	const uint32_t S = map->slots_per_gpu;
	const uint32_t *m = map->layers[l].slot_expert;
	uint32_t *r = calloc(map->n_experts, sizeof(*r));
	uint32_t *n = calloc(map->n_experts, sizeof(*n));
	double max = 0;
	for (uint32_t g = 0; g < G; g++) {
		gpu[g] = 0;
	}
	if (!r || !n) {
		free(r);
		free(n);
		return 0;
	}
	for (uint32_t p = 0; p < G * S; p++) {
		r[m[p]]++;
		bool first_on_gpu = true;
		for (uint32_t q = p - p % S; q < p; q++) {
			first_on_gpu &= m[q] != m[p];
		}
		n[m[p]] += first_on_gpu;
	}
	for (uint32_t p = 0; p < G * S; p++) {
		const uint32_t e = m[p];
		bool first_on_gpu = true;
		for (uint32_t q = p - p % S; q < p; q++) {
			first_on_gpu &= m[q] != e;
		}
		gpu[p / S] += (first_on_gpu ? w[e] / G : 0) + (double)(G - n[e]) * w[e] / G / r[e];
	}
	for (uint32_t g = 0; g < G; g++) {
		max = gpu[g] > max ? gpu[g] : max;
	}
	free(r);
	free(n);
	return max;
}

/* "a/b/c.yaml" -> "c.yaml" */
static const char *cli_base(const char *path)
{
	if (!path) {
		return "";
	}
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
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
		mp_doc_put_int(ld, "layer", loads && loads->layer_ids ? loads->layer_ids[l] : l);
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
			uint32_t dups = mp_place_duplicates(map->layers[l].slot_expert, map->gpus,
							    map->slots_per_gpu);
			if (dups > 0) {
				double *g = calloc(map->gpus, sizeof(*g));
				mp_doc_put_int(ld, "duplicates", dups);
				mp_doc_put_string(ld, "lower_bound_note", "the mean load: the solver's bounds "
						  "assume at most one replica of an expert per GPU");
				if (g) {
					double mx = sglang_static_loads(map, l, mp_loads_row(loads, l), g);
					mp_doc_put(ld, "gpu_load_sglang_static", mp_doc_reals(g, map->gpus));
					mp_doc_put_real(ld, "max_load_sglang_static", mx);
				}
				free(g);
			}
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
			uint32_t dups = mp_place_duplicates(map->layers[l].slot_expert, map->gpus,
							    map->slots_per_gpu);
			if (dups > 0) {
				mp_doc_put_int(ld, "duplicates", dups);
			}
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

/* The one-line verdict of a check without --loads (issue 26 item 5):
 * what was checked and that it holds, where the document is a list of
 * replica counts per layer. */
static void print_verdict(FILE *to, const char *path, const struct mp_placement *map, bool gpus_given)
{
	uint64_t dups = 0;
	for (uint32_t l = 0; l < map->n_layers; l++) {
		dups += mp_place_duplicates(map->layers[l].slot_expert, map->gpus, map->slots_per_gpu);
	}
	uint32_t slots = map->gpus * map->slots_per_gpu;
	fprintf(to, "%s: valid: %u layer%s, %u experts on %u GPUs%s x %u slots (%u redundant), "
		"%llu duplicate replica%s; give --loads LOADS to score its balance\n", path,
		map->n_layers, cli_s(map->n_layers), map->n_experts, map->gpus,
		gpus_given ? " (as given)" : "", map->slots_per_gpu,
		slots > map->n_experts ? slots - map->n_experts : 0, (unsigned long long)dups,
		cli_s((double)dups));
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
	 * slot (capped, "... and N more"); an expert twice on a GPU is a
	 * warning below. */
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
	rc = mp_load_map_experts(a.plan, a.phase, a.gpus, a.experts, false, &map, &diags);
	if (rc != 0) {
		cli_print_diags(&diags);
		if (diags.count == 0) {
			cli_error("%s: %s", a.plan, mp_strerror(rc));
		}
		goto out;
	}
	/* Engines' balancers may put two replicas of an expert on one GPU
	 * (both engines accept it): scored as it stands, with a warning. */
	warn_duplicates(a.plan, &map);
	if (a.loads) {
		rc = mp_load_loads(a.loads, &loads, &diags);
		if (rc != 0) {
			cli_print_diags(&diags);
			if (diags.count == 0) {
				cli_error("%s: %s", a.loads, mp_strerror(rc));
			}
			goto out;
		}
		/* Loads whose rows name their layers (a '# layers:' line, a layer
		 * column) check those rows: an engine map's row r is hidden layer
		 * r, a plan's rows say their layer. */
		rc = cli_rows_dense_zero(a.model, a.loads, &loads, &diags);
		if (rc != 0) {
			cli_print_diags(&diags);
			goto out;
		}
		if (cli_map_rows_named(&map, &loads) && loads.n_experts == map.n_experts) {
			uint32_t *rows = NULL;
			rc = cli_map_rows_for(a.plan, a.phase, &map, a.loads, &loads, &rows);
			if (rc == 0) {
				rc = cli_map_select_rows(&map, rows, loads.n_layers, &map);
			}
			free(rows);
			if (rc != 0) {
				if (rc != MP_EINVAL) {
					cli_error("%s: %s", a.plan, mp_strerror(rc));
				}
				goto out;
			}
		}
		if (loads.n_layers != map.n_layers || loads.n_experts != map.n_experts) {
			cli_error("%s: %u layers x %u experts, but %s places %u layers x %u experts",
				  a.loads, loads.n_layers, loads.n_experts, a.plan, map.n_layers,
				  map.n_experts);
			goto out;
		}
		/* The map as it stands, bounded by the solver's proof. */
		struct mp_place_options opts;
		mp_place_options_init(&opts);
		opts.time_limit_s = a.time_limit_s;
		rc = mp_place_check(&map, &loads, &opts, &eval, &best, &diags);
		if (rc != 0) {
			cli_print_diags(&diags);
			if (diags.count == 0) {
				cli_error("%s: %s", a.plan, mp_strerror(rc));
			}
			goto out;
		}
	}
	if (a.svg) {
		/* Say which map, which loads and in what unit (issue 16 item 10). */
		char title[512], after_label[160], unit[160];
		snprintf(title, sizeof(title), "check: %s under %s, load per GPU per MoE layer",
			 cli_base(a.plan), cli_base(a.loads));
		uint32_t slots = map.gpus * map.slots_per_gpu;
		snprintf(after_label, sizeof(after_label), "this map: %u slot%s per GPU (%u redundant)",
			 map.slots_per_gpu, cli_s(map.slots_per_gpu),
			 slots > map.n_experts ? slots - map.n_experts : 0);
		snprintf(unit, sizeof(unit), "load per GPU, in the unit of %s", cli_base(a.loads));
		struct cli_heatmap_spec spec = {
			.path = a.svg,
			.title = title,
			.after = &map,
			.after_label = after_label,
			.loads = &loads,
			.value_label = unit,
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
	if (!a.loads && !cli_quiet) {
		/* a person on a terminal reads the verdict, not the raw lists */
		bool terminal = !a.format_given && !a.output && isatty(1);
		print_verdict(terminal ? stdout : stderr, a.plan, &map, a.gpus > 0);
		if (terminal) {
			exit_code = EXIT_OK;
			goto out;
		}
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
