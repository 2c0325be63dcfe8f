/* moeplan check: validate a plan or an engine's physical_to_logical map and,
 * given loads, report how balanced it is. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "moeplan/loader.h"
#include "moeplan/placement.h"
#include "moeplan/replan.h"

#include <unistd.h>

enum {
	OPT_ENGINE = CLI_OPT_LONG,
	OPT_EP_DISPATCH_ALGORITHM,
	OPT_GPUS_PER_NODE,
	OPT_EP_SIZE,
};

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
	{"engine", OPT_ENGINE, "NAME", "with --loads: also score the map under this engine's dispatch: even (each "
		"replica 1/r), sglang (own GPU's replica, else the node's first, else a fair choice) or "
		"vllm (token position modulo the replicas) (default: the map's own engine: sglang for "
		"SGLang's maps and dumps, vllm for vLLM's, even for moeplan plans and bare lists)",
		"even sglang vllm"},
	{"ep-dispatch-algorithm", OPT_EP_DISPATCH_ALGORITHM, "ALG", "with --engine sglang: SGLang's "
		"--ep-dispatch-algorithm, static (exact, with SGLang's seeded random choices), dynamic or "
		"fake (expectations) (default static, SGLang's choice with --init-expert-location)",
		"static dynamic fake"},
	{"gpus-per-node", OPT_GPUS_PER_NODE, "N", "GPUs per node for --engine sglang (SGLang's --ep-size / "
		"--nnodes); must divide the GPUs (default: all on one node, SGLang's --nnodes 1)", NULL},
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
	struct cli_engine engine;
};

/* --engine, --ep-dispatch-algorithm, --gpus-per-node (issue 24). */
static bool parse_engine_arg(int c, const char *arg, struct cli_engine *e)
{
	enum cli_engine_opt which = CLI_ENGINE_OPT_GPUS_PER_NODE;
	if (c == OPT_ENGINE) {
		which = CLI_ENGINE_OPT_RULE;
	} else if (c == OPT_EP_DISPATCH_ALGORITHM) {
		which = CLI_ENGINE_OPT_ALGORITHM;
	}
	return cli_engine_option("check", which, arg, e);
}

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
		case OPT_ENGINE:
		case OPT_EP_DISPATCH_ALGORITHM:
		case OPT_GPUS_PER_NODE:
			if (!parse_engine_arg(c, optarg, &a->engine)) {
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

/* The map's GPU loads under an engine's dispatch (issue 24, moeplan/
 * dispatch.h), per row of the loads: `gpu` under the engine the user
 * names (NULL for the even split, whose loads are gpu_load), `sglang`
 * under SGLang's static dispatch for gpu_load_sglang_static (layers with
 * duplicate replicas). */
struct check_engine {
	struct mp_dispatch d;
	double *gpu;    /* [rows * G] or NULL */
	double *sglang; /* [rows * G] */
	uint32_t *own;  /* [map rows]: a plan's rows' hidden layers, with --engine sglang; or NULL */
	uint32_t *moe;  /* [n_moe]: the MoE layers (--model's, else the plan's and the loads') */
	uint32_t n_moe;
	bool moe_known; /* ce->moe from --model */
	uint32_t *named; /* [n_named]: every layer the loads name (all-zero rows too), without --model */
	uint32_t n_named;
	uint32_t *dense; /* [n_dense]: layers up to the plan's last that the walk took as dense, unsure */
	uint32_t n_dense;
};

/* Row r of loads is row rows[r] of the whole map (NULL: row r). The
 * whole map is walked in its order: SGLang's static dispatch draws its
 * fair choices from one random stream per node across all rows,
 * dense rows included (expert_location.py,
 * compute_logical_to_rank_dispatch_physical_map at 60d36e7). */
static int check_engine_loads(const struct mp_placement *full, const struct mp_loads *loads,
			      const uint32_t *rows, struct check_engine *ce)
{
	const uint32_t G = full->gpus;
	uint32_t *row_loads = malloc((size_t)(full->n_layers ? full->n_layers : 1) * sizeof(*row_loads));
	double *all = NULL;
	if (!row_loads) {
		return MP_ENOMEM;
	}
	for (uint32_t h = 0; h < full->n_layers; h++) {
		row_loads[h] = UINT32_MAX;
	}
	for (uint32_t r = 0; r < loads->n_layers; r++) {
		uint32_t h = rows ? rows[r] : r;
		if (h < full->n_layers) {
			row_loads[h] = r;
		}
	}
	struct mp_dispatch sg = {MP_DISPATCH_SGLANG, MP_DISPATCH_STATIC, ce->d.gpus_per_node};
	for (int pass = 0; pass < 2; pass++) {
		double **dst = pass == 0 ? &ce->sglang : &ce->gpu;
		if (pass == 1 && ce->d.rule == MP_DISPATCH_EVEN) {
			break;
		}
		int rc = pass == 1 && ce->own
			? cli_engine_loads_exported(&ce->d, full, ce->own, ce->moe, ce->n_moe, row_loads, loads, &all)
			: cli_engine_loads(pass == 0 ? &sg : &ce->d, full, row_loads, loads, &all);
		double *sel = rc == 0 ? malloc((size_t)loads->n_layers * G * sizeof(*sel)) : NULL;
		for (uint32_t r = 0; sel && r < loads->n_layers; r++) {
			memcpy(sel + (size_t)r * G, all + (size_t)(rows ? rows[r] : r) * G, G * sizeof(*sel));
		}
		free(all);
		if (!sel) {
			free(row_loads);
			return rc ? rc : MP_ENOMEM;
		}
		*dst = sel;
	}
	free(row_loads);
	return 0;
}

/* Without --model: the layers with loads (a recorder dump's nonzero rows
 * are its MoE layers) into ce->moe, before the rows a plan does not place
 * are dropped. Returns 0 or MP_ENOMEM. */
static int check_loads_moe(const struct mp_loads *loads, struct check_engine *ce)
{
	if (!loads->layer_ids || ce->d.rule != MP_DISPATCH_SGLANG) {
		return 0;
	}
	ce->moe = malloc(((size_t)loads->n_layers + 1) * sizeof(*ce->moe));
	ce->named = malloc(((size_t)loads->n_layers + 1) * sizeof(*ce->named));
	if (!ce->moe || !ce->named) {
		return MP_ENOMEM;
	}
	ce->n_moe = 0;
	ce->n_named = loads->n_layers;
	memcpy(ce->named, loads->layer_ids, loads->n_layers * sizeof(*ce->named));
	for (uint32_t r = 0; r < loads->n_layers; r++) {
		const double *w = mp_loads_row(loads, r);
		bool zero = true;
		for (uint32_t e = 0; e < loads->n_experts; e++) {
			zero &= w[e] == 0.0;
		}
		if (!zero) {
			ce->moe[ce->n_moe++] = loads->layer_ids[r];
		}
	}
	return 0;
}

static bool in_list(const uint32_t *ids, uint32_t n, uint32_t id)
{
	for (uint32_t i = 0; ids && i < n; i++) {
		if (ids[i] == id) {
			return true;
		}
	}
	return false;
}

/* "0, 1-6, 8" of ids[n] (increasing) into buf. */
static void name_ranges(const uint32_t *ids, uint32_t n, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (uint32_t i = 0; i < n && len + 32 < size;) {
		uint32_t j = i;
		while (j + 1 < n && ids[j + 1] == ids[j] + 1) {
			j++;
		}
		int k = j > i ? snprintf(buf + len, size - len, "%s%u-%u", len ? ", " : "", ids[i], ids[j])
			      : snprintf(buf + len, size - len, "%s%u", len ? ", " : "", ids[i]);
		len += k > 0 ? (size_t)k : 0;
		i = j + 1;
	}
}

/* Without --model, which hidden layers up to the plan's last placed one
 * are MoE decides the rows --export writes for the ones it does not place
 * (the nearest placed row for a MoE layer, the identity row for a dense
 * one: mp_map_row_source), and so SGLang's static streams. A full plan
 * says it when its model has no dense layer (every layer is MoE) or when
 * it places all model.moe_layers (the placed layers are the MoE ones);
 * else the layers neither the plan nor the loads name are taken as dense,
 * listed in ce->dense for a note. Returns 0 or MP_ENOMEM. */
static int check_plan_moe(const struct check_args *a, const uint32_t *own, uint32_t n_own,
			  struct check_engine *ce)
{
	struct mp_replan_plan_info info = {0};
	struct mp_diags diags;
	mp_diags_init(&diags);
	int rc = mp_replan_read_plan_info(a->plan, a->phase, &info, &diags);
	mp_diags_finish(&diags);
	const uint32_t last = own[n_own - 1];
	bool all_moe = rc == 0 && info.kind == MP_REPLAN_SOURCE_PLAN && info.moe_layers > last &&
		       info.hidden_layers == info.moe_layers;
	bool all_placed = rc == 0 && info.kind == MP_REPLAN_SOURCE_PLAN && info.moe_layers == n_own;
	if (all_moe || all_placed) {
		uint32_t n = all_moe ? info.moe_layers : n_own;
		uint32_t *m = malloc((size_t)n * sizeof(*m));
		if (!m) {
			return MP_ENOMEM;
		}
		for (uint32_t k = 0; k < n; k++) {
			m[k] = all_moe ? k : own[k];
		}
		free(ce->moe);
		ce->moe = m;
		ce->n_moe = n;
		return 0;
	}
	ce->dense = malloc(((size_t)last + 1) * sizeof(*ce->dense));
	if (!ce->dense) {
		return MP_ENOMEM;
	}
	for (uint32_t h = 0; h <= last; h++) {
		if (!in_list(ce->moe, ce->n_moe, h) && !in_list(ce->named, ce->n_named, h)) {
			ce->dense[ce->n_dense++] = h;
		}
	}
	if (ce->n_dense > 0 && !cli_quiet) {
		char names[512];
		name_ranges(ce->dense, ce->n_dense, names, sizeof(names));
		fprintf(stderr, "moeplan check: %s: scored under SGLang's static dispatch with layer%s %s "
			"taken as dense (neither %s nor %s names %s): --export writes a dense layer's "
			"identity row but a MoE layer's nearest placed row, and SGLang's random choices "
			"run over every row, so with several nodes the score depends on which they are; "
			"give --model to decide\n", a->plan, cli_s(ce->n_dense), names, a->plan, a->loads,
			ce->n_dense == 1 ? "it" : "them");
	}
	return 0;
}

/* A moeplan plan's or placement's rows' layers into ce->own, and the MoE
 * layers (--model's, else those the plan places and the loads name) into
 * ce->moe, so that SGLang's static streams walk the map --export writes
 * from it (engine-walk.c). Engine maps (rows = hidden layers) keep
 * ce->own NULL. Returns 0 or MP_ENOMEM. */
static int check_plan_layers(const struct check_args *a, const struct mp_placement *map,
			     const struct mp_loads *loads, struct check_engine *ce)
{
	uint32_t *own = NULL, n_own = 0;
	struct mp_diags diags;
	mp_diags_init(&diags);
	int rc = mp_map_row_layers(a->plan, a->phase, &own, &n_own, &diags);
	mp_diags_finish(&diags);
	if (rc != 0 || !own || n_own != map->n_layers || n_own == 0) {
		free(own);
		return 0;
	}
	if (!ce->moe_known) { /* the union of two increasing lists */
		uint32_t *u = malloc(((size_t)n_own + ce->n_moe) * sizeof(*u));
		if (!u) {
			free(own);
			return MP_ENOMEM;
		}
		uint32_t i = 0, j = 0, n = 0;
		while (i < n_own || j < ce->n_moe) {
			uint32_t x = i < n_own ? own[i] : UINT32_MAX;
			uint32_t y = j < ce->n_moe ? ce->moe[j] : UINT32_MAX;
			uint32_t v = x < y ? x : y;
			i += x == v;
			j += y == v;
			u[n++] = v;
		}
		free(ce->moe);
		ce->moe = u;
		ce->n_moe = n;
	}
	ce->own = own;
	return ce->moe_known ? 0 : check_plan_moe(a, own, n_own, ce);
}

/* With --model, an SGLang map (rows that do not name their layers) must
 * have one row per hidden layer: SGLang sizes the map by
 * num_hidden_layers and looks rows up by the absolute layer id
 * (expert_location.py, expert_location_dispatch.py
 * ExpertLocationDispatchInfo.init_new at 60d36e7). Nonzero after an error. */
static int check_sglang_rows(const struct check_args *a, const struct mp_placement *map, uint32_t hidden)
{
	if (!a->model || hidden == 0 || map->n_layers == hidden ||
	    cli_engine_of_file(a->plan) != MP_DISPATCH_SGLANG) {
		return 0;
	}
	cli_error("%s: %u rows, but %s has %u hidden layers: SGLang's map has one row per hidden layer, "
		  "dense layers included, and rows are looked up by layer id, so SGLang does not start "
		  "with this map (issue 24 saw an IndexError at start-up with 58 and 60 rows for "
		  "DeepSeek-V3's 61); export one with moeplan place --model M --export sglang",
		  a->plan, map->n_layers, a->model, hidden);
	return MP_EINVAL;
}

/* The engine: --engine, else the map file's own (cli_engine_of_file);
 * SGLang's options only under SGLang's rule (EXIT_USAGE); the node size
 * must divide the map's GPUs (MP_EINVAL). 0 or either after a message. */
static int check_engine_resolve(const struct check_args *a, const struct mp_placement *map,
				struct check_engine *ce)
{
	ce->d = a->engine.d;
	if (!a->engine.given) {
		ce->d.rule = cli_engine_of_file(a->plan);
	}
	if ((a->engine.have_algorithm || a->engine.d.gpus_per_node) && ce->d.rule != MP_DISPATCH_SGLANG) {
		/* as place, replan and simulate: SGLang's options change nothing here */
		cli_usage("check", "--ep-dispatch-algorithm and --gpus-per-node are SGLang's, and %s is "
			  "scored under %s: give --engine sglang", a->plan, mp_dispatch_rule_name(ce->d.rule));
		return EXIT_USAGE;
	}
	if (ce->d.gpus_per_node && map->gpus % ce->d.gpus_per_node != 0) {
		cli_error("--gpus-per-node %u does not divide the map's %u GPUs", ce->d.gpus_per_node,
			  map->gpus);
		return MP_EINVAL;
	}
	return 0;
}

static double max_of(const double *v, uint32_t n)
{
	double m = 0;
	for (uint32_t i = 0; i < n; i++) {
		m = v[i] > m ? v[i] : m;
	}
	return m;
}

/* The engine's fields of one layer (only when the engine is not even, so
 * that --engine even leaves the report as it was). */
static void put_engine_layer(struct mp_doc *ld, const struct mp_layer_placement *lp, const double *g,
			     uint32_t G, double *worst_even, double *worst_engine)
{
	double mx = max_of(g, G);
	double even = lp->mean_load > 0 ? lp->max_load / lp->mean_load : 1.0;
	double eng = lp->mean_load > 0 ? mx / lp->mean_load : 1.0;
	mp_doc_put_real(ld, "busiest_over_mean", even);
	mp_doc_put(ld, "engine_gpu_load", mp_doc_reals(g, G));
	mp_doc_put_real(ld, "engine_max_load", mx);
	mp_doc_put_real(ld, "engine_busiest_over_mean", eng);
	/* Every token lands on some GPU, so the mean bounds every rule. */
	mp_doc_put_real(ld, "engine_lower_bound", lp->mean_load);
	mp_doc_put_real(ld, "engine_gap", mx > 0 ? (mx - lp->mean_load) / mx : 0);
	*worst_even = even > *worst_even ? even : *worst_even;
	*worst_engine = eng > *worst_engine ? eng : *worst_engine;
}

static void put_engine_summary(struct mp_doc *chk, const struct check_engine *ce, double worst_even,
			       double worst_engine)
{
	const struct mp_dispatch *d = &ce->d;
	struct mp_doc *e = mp_doc_map();
	mp_doc_put_string(e, "rule", mp_dispatch_rule_name(d->rule));
	if (d->rule == MP_DISPATCH_SGLANG) {
		mp_doc_put_string(e, "ep_dispatch_algorithm", mp_dispatch_algorithm_name(d->algorithm));
		mp_doc_put_bool(e, "exact", d->algorithm == MP_DISPATCH_STATIC);
	} else {
		mp_doc_put_bool(e, "exact", false);
	}
	if (d->gpus_per_node) {
		mp_doc_put_int(e, "gpus_per_node", d->gpus_per_node);
	}
	mp_doc_put_string(e, "source", d->rule == MP_DISPATCH_SGLANG
			  ? "sgl-project/sglang 60d36e7 python/sglang/srt/eplb/expert_location.py "
			    "(_find_nearest_expert, compute_logical_to_rank_dispatch_physical_map, "
			    "_fair_choices); static: exact with SGLang's random.Random(42) per node; "
			    "dynamic and fake: expectations"
			  : "vllm-project/vllm b9f290ed vllm/model_executor/layers/fused_moe/router/"
			    "base_router.py eplb_map_to_physical_and_record: token position modulo "
			    "the replica count, 1/r in expectation");
	if (ce->n_dense > 0) {
		mp_doc_put(e, "assumed_dense_layers", mp_doc_uints(ce->dense, ce->n_dense));
		mp_doc_put_string(e, "assumed_dense_note", "layers up to the last placed one that neither "
				  "the map nor the loads name, scored as dense (the identity row --export "
				  "writes for them); a MoE layer gets the nearest placed row instead: "
				  "--model decides");
	}
	mp_doc_put(chk, "engine", e);
	mp_doc_put_real(chk, "worst_busiest_over_mean", worst_even);
	mp_doc_put_real(chk, "worst_engine_busiest_over_mean", worst_engine);
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
			     const struct mp_placement *eval, const struct mp_placement *best,
			     const struct check_engine *ce)
{
	double worst_even = 1, worst_engine = 1;
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
				const double *g = ce->sglang + (size_t)l * map->gpus;
				mp_doc_put_int(ld, "duplicates", dups);
				mp_doc_put_string(ld, "lower_bound_note", "the mean load: the solver's bounds "
						  "assume at most one replica of an expert per GPU");
				mp_doc_put(ld, "gpu_load_sglang_static", mp_doc_reals(g, map->gpus));
				mp_doc_put_real(ld, "max_load_sglang_static", max_of(g, map->gpus));
			}
			if (ce->gpu) {
				put_engine_layer(ld, lp, ce->gpu + (size_t)l * map->gpus, map->gpus,
						 &worst_even, &worst_engine);
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
		if (ce->gpu) {
			put_engine_summary(chk, ce, worst_even, worst_engine);
		}
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
	struct check_engine ce = {0};
	uint32_t hidden = 0; /* the model's hidden layers, with --model */
	/* Every problem in the map at once: ids out of range, experts with no
	 * slot (capped, "... and N more"); an expert twice on a GPU is a
	 * warning below. */
	if (a.model) {
		struct mp_model model;
		mp_model_init(&model);
		rc = mp_load_model(a.model, &model, &diags);
		a.experts = model.routed_experts;
		hidden = rc == 0 ? mp_model_hidden_layers(&model) : 0;
		ce.moe = rc == 0 && model.moe_layers ? malloc(model.moe_layers * sizeof(*ce.moe)) : NULL;
		for (uint32_t k = 0; ce.moe && k < model.moe_layers; k++) {
			ce.moe[k] = mp_model_moe_layer_id(&model, k);
		}
		ce.n_moe = ce.moe ? model.moe_layers : 0;
		ce.moe_known = ce.moe != NULL;
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
	if (check_sglang_rows(&a, &map, hidden) != 0) {
		goto out;
	}
	rc = check_engine_resolve(&a, &map, &ce);
	if (rc != 0) {
		exit_code = rc == EXIT_USAGE ? EXIT_USAGE : EXIT_INPUT;
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
		/* Loads whose rows name their layers (a '# layers:' line, a layer
		 * column) check those rows: an engine map's row r is hidden layer
		 * r, a plan's rows say their layer. */
		rc = ce.moe_known ? 0 : check_loads_moe(&loads, &ce);
		rc = rc ? rc : cli_rows_dense_zero(a.model, a.loads, &loads, &diags);
		if (rc == 0) {
			rc = cli_loads_fit_plan("check", a.plan, a.phase, a.model, a.loads, &loads);
		}
		if (rc != 0) {
			cli_print_diags(&diags);
			goto out;
		}
		if (cli_map_rows_named(&map, &loads) && loads.n_experts == map.n_experts) {
			uint32_t *rows = NULL;
			rc = cli_map_rows_for(a.plan, a.phase, &map, a.loads, &loads, &rows);
			if (rc == 0 && ce.d.rule == MP_DISPATCH_SGLANG) {
				rc = check_plan_layers(&a, &map, &loads, &ce);
			}
			if (rc == 0) {
				rc = check_engine_loads(&map, &loads, rows, &ce);
			}
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
		/* loads matched to a plan's rows by position (rows that do not
		 * name their layers): SGLang's streams still walk the map --export
		 * writes, dense rows included */
		rc = !ce.sglang && !ce.own && ce.d.rule == MP_DISPATCH_SGLANG
			? check_plan_layers(&a, &map, &loads, &ce) : 0;
		rc = rc || ce.sglang ? rc : check_engine_loads(&map, &loads, NULL, &ce);
		if (rc != 0) {
			cli_error("%s: %s", a.plan, mp_strerror(rc));
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
	doc = report(&map, a.loads ? &loads : NULL, &eval, &best, &ce);
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
	free(ce.gpu);
	free(ce.sglang);
	free(ce.own);
	free(ce.moe);
	free(ce.named);
	free(ce.dense);
	return exit_code;
}
