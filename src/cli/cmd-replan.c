/* moeplan replan: re-plan a running placement from observed loads with a
 * move budget or a move cost; the Pareto front of moves against balance;
 * engine exports. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/export.h"
#include "moeplan/loader.h"
#include "moeplan/plan.h"
#include "moeplan/plots.h"
#include "moeplan/replan.h"
#include "moeplan/roofline.h"
#include "moeplan/simulate.h"

/* Short letters only where they mean the same in every command (-p plan,
 * -l loads, -g gpus, -P phase, -m model, -H hardware, -t time-limit,
 * -j threads, -o output, -f format, -v verbose, -h help); the options
 * only replan has are long-only. */
enum {
	OPT_MAX_MOVES = CLI_OPT_LONG,
	OPT_MOVE_COST,
	OPT_HORIZON,
	OPT_LAYER_TIME,
	OPT_MIN_GAIN,
	OPT_EXPERT_BYTES,
	OPT_LINK_BW,
	OPT_SLOT_COUNTS,
	OPT_PARETO,
	OPT_SVG,
	OPT_EXPORT,
	OPT_EXPORT_OUTPUT,
	OPT_NO_MIP,
	OPT_OBJECTIVE,
	OPT_HALF_LIFE,
	OPT_SPREAD_K,
	OPT_WINDOWS,
	OPT_ENGINE,
	OPT_EP_DISPATCH_ALGORITHM,
	OPT_GPUS_PER_NODE,
};

static const struct cli_opt replan_options[] = {
	{"plan", 'p', "CURRENT", "the running placement: a moeplan plan or placement, SGLang's or\n"
		"                                 vLLM's physical_to_logical_map JSON, or a [layers][slots] list\n"
		"                                 (required)", CLI_COMPLETE_FILE},
	{"loads", 'l', "OBSERVED...", "observed loads: [layers][experts] (CSV, YAML, SGLang\n"
		"                                 logical_count), or [layers][slots] per physical slot (required);\n"
		"                                 a series CSV, or --loads given again (oldest first), is a history\n"
		"                                 (--objective)", CLI_COMPLETE_FILE},
	{"gpus", 'g', "N", "GPUs of a map that does not say (SGLang map, bare list); checked\n"
		"                                 against the file's gpus or vLLM ep_size (default: the file's)", NULL},
	{"phase", 'P', "PHASE", "phase of a full plan to re-plan: decode (default) or prefill", "decode prefill"},
	{"max-moves", OPT_MAX_MOVES, "M", "at most M moves over all layers, or a percentage of all slots\n"
		"                                 (layers x slots), e.g. 25% (default: no limit)", NULL},
	{"move-cost", OPT_MOVE_COST, "COST", "instead of a budget, price each move: seconds ('2 ms'; a plain\n"
		"                                 number is seconds) or bytes ('44 MB', sent at the link bandwidth;\n"
		"                                 default: none, a budget)", NULL},
	{"horizon", OPT_HORIZON, "STEPS", "with --move-cost: steps the new plan runs before the next re-plan\n"
		"                                 (default 1000)", NULL},
	{"layer-time", OPT_LAYER_TIME, "SECONDS", "with --move-cost: routed-expert time of one MoE layer per step at\n"
		"                                 perfect balance (default: the plan's expert_time_s)", NULL},
	{"min-gain", OPT_MIN_GAIN, "FRACTION", "keep the current plan when the predicted gain in the sum of\n"
		"                                 busiest-GPU loads is below FRACTION, 0 to <1 (default 0)", NULL},
	{"model", 'm', "MODEL", "model file: bytes per expert copy (default: none)", CLI_COMPLETE_INPUT},
	{"hardware", 'H', "HARDWARE", "hardware file: scale-up bandwidth per GPU (default: none)", CLI_COMPLETE_INPUT},
	{"expert-bytes", OPT_EXPERT_BYTES, "BYTES", "bytes per expert copy (default: the model's, the plan's HBM audit,\n"
		"                                 else 44050944 B, one DeepSeek-V3 FP8 expert)", NULL},
	{"link-bandwidth", OPT_LINK_BW, "BW", "scale-up bandwidth per GPU and direction (default: the hardware's,\n"
		"                                 else 450 GB/s, NVLink 4 on H100)", NULL},
	{"slot-counts", OPT_SLOT_COUNTS, NULL, "OBSERVED counts physical slots: fold them to experts through\n"
		"                                 CURRENT (automatic when its width is the slot count and not the\n"
		"                                 expert count)", NULL},
	{"pareto", OPT_PARETO, NULL, "print the best busiest-GPU load for 0, 1, 2, ... moves per layer\n"
		"                                 and in total instead of a plan", NULL},
	{"svg", OPT_SVG, "FILE", "with --pareto: draw the total front as SVG (default: none)", CLI_COMPLETE_FILE},
	{"export", OPT_EXPORT, "ENGINE", "write the new map as sglang (--init-expert-location JSON, one row per\n"
		"                                 hidden layer: an SGLang map's rows as they are, a moeplan plan's\n"
		"                                 MoE rows placed by --model) to -o, or to --export-output; the name\n"
		"                                 must end in .json (default: none, the input's format)", "sglang"},
	{"export-output", OPT_EXPORT_OUTPUT, "FILE.json", "with --export: the engine map goes here and the plan to -o\n"
		"                                 (default: none)", CLI_COMPLETE_FILE},
	{"time-limit", 't', "SECONDS", "safety net per layer for the from-scratch solver and GLPK: counted\n"
		"                                 work budgets end the searches first, so the output depends on\n"
		"                                 machine speed only when this fires (status time_limit; default 10)", NULL},
	{"threads", 'j', "N", "threads of the from-scratch solver; the output does not depend on\n"
		"                                 it (default: number of CPUs)", NULL},
	{"no-mip", OPT_NO_MIP, NULL, "skip GLPK (local search and the from-scratch plan only)", NULL},
	{"objective", OPT_OBJECTIVE, "NAME", "with a history of loads: re-plan for the next window from last, mean,\n"
		"                                 recency or spread, as place does (default " MP_OBJECTIVE_DEFAULT_NAME ")", "last mean recency spread"},
	{"half-life", OPT_HALF_LIFE, "W", "with --objective recency: windows over which a window's weight halves (default 2)", NULL},
	{"spread-k", OPT_SPREAD_K, "K", "with --objective spread: standard deviations added to each expert's mean, 0 to 100 (default 1)", NULL},
	{"windows", OPT_WINDOWS, "FIRST:LAST", "with a history: use windows FIRST to LAST only, numbered from 1 (default: all)", NULL},
	{"engine", OPT_ENGINE, "NAME", "choose each layer under this engine's dispatch: even (every replica 1/r,\n"
		"                                 the default: the re-plan as without it), sglang (own GPU's replica,\n"
		"                                 else the node's first, else SGLang's fair choice) or vllm; per layer\n"
		"                                 the lowest of the current row, the even-split re-plan and place\n"
		"                                 --engine's plan within the moves", "even sglang vllm"},
	{"ep-dispatch-algorithm", OPT_EP_DISPATCH_ALGORITHM, "ALG", "with --engine sglang: static (SGLang's seeded "
		"choice per rank,\n                                 default) or dynamic", "static dynamic"},
	{"gpus-per-node", OPT_GPUS_PER_NODE, "N", "with --engine sglang: GPUs per node, dividing the GPUs (default: "
		"all on\n                                 one node)", NULL},
	{"output", 'o', "FILE", "write the output to FILE atomically ('-' = stdout, the default)", CLI_COMPLETE_FILE},
	CLI_OPT_FORMAT_YAML,
	CLI_OPT_VERBOSE,
	CLI_OPT_HELP,
	{0},
};

const struct cli_command_help cmd_replan_help = {
	.name = "replan",
	.synopsis = "moeplan replan --plan CURRENT --loads OBSERVED [--max-moves M | --move-cost COST]\n"
		    "                      [--min-gain FRACTION] [-o NEW] [--format yaml|json] [options]",
	.description =
		"Re-plans a running expert placement for observed loads, moving as few experts as\n"
		"the balance gained is worth. A move is a slot whose expert changes (its weights\n"
		"are copied over the scale-up link); experts that stay on a GPU keep their slots.\n"
		"With --max-moves, minimises the sum over MoE layers of the busiest GPU's load with\n"
		"at most M moves in all; with --move-cost, minimises the predicted routed-expert\n"
		"time over --horizon steps plus the time spent moving. Method: a move-limited local\n"
		"search from the current map (slot re-assignments and swaps), the from-scratch\n"
		"plan relabelled to keep experts in place (and its lower bound, valid for any\n"
		"budget), the budget split over layers by dynamic programming, and a GLPK MIP with\n"
		"the move budget (its LP bound; branch and bound on small layers or where that\n"
		"bound helps). Every search runs on counted work budgets, so the same inputs and\n"
		"options give byte-identical output. Writes the new plan in the input's own format\n"
		"(a full plan keeps everything and gets the phase's placement replaced and a\n"
		"`replan` record), and prints per layer the moves (GPU, slot, old -> new expert,\n"
		"bytes), the busiest-GPU load before and after, the bound, the total bytes and the\n"
		"estimated transfer time (stderr when the output is stdout).",
	.options = replan_options,
	.examples =
		"  moeplan place plans/traces/qwen15moe_bookcorpus.winA.csv --gpus 8 --slots 72 -o old.yaml\n"
		"  moeplan replan --plan old.yaml --loads plans/traces/qwen15moe_bookcorpus.winB.csv \\\n"
		"      --max-moves 25% -o new.yaml\n"
		"  moeplan replan --plan old.yaml --loads plans/traces/qwen15moe_bookcorpus.winB.csv \\\n"
		"      --pareto --svg front.svg\n",
};

struct replan_args {
	const char *plan;
	const char *loads;     /* the last --loads: the newest window */
	char *loads_paths[16]; /* every --loads, oldest first */
	uint32_t n_loads;
	const char *phase;
	const char *max_moves;
	const char *move_cost;
	const char *model;
	const char *hardware;
	const char *svg;
	const char *export_output;
	const char *output;
	uint32_t gpus;
	bool slot_counts;
	bool pareto;
	bool have_export;
	enum mp_export_format export_format;
	bool json;
	bool have_expert_bytes;
	double expert_bytes;
	bool have_link_bw;
	double link_bw;
	bool have_layer_time;
	struct mp_replan_options opts;
	struct cli_history history;
	struct cli_engine engine;
};

/* The engine option an id of this command's table names. */
static enum cli_engine_opt engine_opt_of(int c)
{
	if (c == OPT_ENGINE) {
		return CLI_ENGINE_OPT_RULE;
	}
	return c == OPT_GPUS_PER_NODE ? CLI_ENGINE_OPT_GPUS_PER_NODE : CLI_ENGINE_OPT_ALGORITHM;
}

static int parse_args(int argc, char **argv, struct replan_args *a)
{
	struct cli_parser parser;
	cli_parser_init(&parser, &cmd_replan_help);
	int c;
	while ((c = cli_parser_next(&parser, argc, argv)) >= 0) {
		switch (c) {
		case 'p':
			a->plan = optarg;
			break;
		case 'l':
			if (a->n_loads == sizeof(a->loads_paths) / sizeof(a->loads_paths[0])) {
				return cli_usage("replan", "--loads: at most %zu files",
						 sizeof(a->loads_paths) / sizeof(a->loads_paths[0]));
			}
			a->loads_paths[a->n_loads++] = optarg;
			a->loads = optarg;
			break;
		case OPT_OBJECTIVE:
		case OPT_HALF_LIFE:
		case OPT_SPREAD_K:
		case OPT_WINDOWS:
			if (!cli_history_option("replan", cli_history_option_name(c - OPT_OBJECTIVE), optarg,
						&a->history)) {
				return EXIT_USAGE;
			}
			if (a->history.obj.kind == MP_OBJECTIVE_WORST) {
				return cli_usage("replan", "--objective worst is place's: replan minimises the "
						 "moves' cost on one load vector (last, mean, recency or spread)");
			}
			break;
		case 'g':
			if (!cli_parse_u32("replan", "gpus", optarg, 1, MP_MAX_GPUS, &a->gpus)) {
				return EXIT_USAGE;
			}
			break;
		case 'P':
			if (strcmp(optarg, "decode") != 0 && strcmp(optarg, "prefill") != 0) {
				return cli_usage("replan", "--phase '%s': expected 'decode' or 'prefill'", optarg);
			}
			a->phase = optarg;
			break;
		case OPT_MAX_MOVES:
			a->max_moves = optarg;
			break;
		case OPT_MOVE_COST:
			a->move_cost = optarg;
			break;
		case OPT_HORIZON:
			if (!cli_parse_double("replan", "horizon", optarg, 1e-9, 1e15, &a->opts.horizon_steps)) {
				return EXIT_USAGE;
			}
			break;
		case OPT_LAYER_TIME:
			if (!cli_parse_seconds("replan", "layer-time", optarg, 1e-15, 1e6,
						&a->opts.layer_time_s)) {
				return EXIT_USAGE;
			}
			a->have_layer_time = true;
			break;
		case OPT_MIN_GAIN:
			if (!cli_parse_double("replan", "min-gain", optarg, 0, 0.999999, &a->opts.min_gain)) {
				return EXIT_USAGE;
			}
			break;
		case 'm':
			a->model = optarg;
			break;
		case 'H':
			a->hardware = optarg;
			break;
		case OPT_EXPERT_BYTES:
			if (!cli_parse_quantity("replan", "expert-bytes", optarg, "bytes", 1, 1e15, &a->expert_bytes)) {
				return EXIT_USAGE;
			}
			a->have_expert_bytes = true;
			break;
		case OPT_LINK_BW:
			if (!cli_parse_quantity("replan", "link-bandwidth", optarg, "bytes/s", 1, 1e18, &a->link_bw)) {
				return EXIT_USAGE;
			}
			a->have_link_bw = true;
			break;
		case OPT_SLOT_COUNTS:
			a->slot_counts = true;
			break;
		case OPT_PARETO:
			a->pareto = true;
			break;
		case OPT_SVG:
			a->svg = optarg;
			break;
		case OPT_EXPORT:
			if (!cli_parse_export("replan", optarg)) {
				return EXIT_USAGE;
			}
			mp_export_parse(optarg, &a->export_format);
			a->have_export = true;
			break;
		case OPT_EXPORT_OUTPUT:
			a->export_output = optarg;
			break;
		case 't':
			if (!cli_parse_double("replan", "time-limit", optarg, 0.001, 1e6, &a->opts.time_limit_s)) {
				return EXIT_USAGE;
			}
			break;
		case 'j':
			if (!cli_parse_u32("replan", "threads", optarg, 1, 1024, &a->opts.threads)) {
				return EXIT_USAGE;
			}
			break;
		case OPT_NO_MIP:
			a->opts.mip = false;
			break;
		case OPT_ENGINE:
		case OPT_EP_DISPATCH_ALGORITHM:
		case OPT_GPUS_PER_NODE:
			if (!cli_engine_option("replan", engine_opt_of(c), optarg, &a->engine)) {
				return EXIT_USAGE;
			}
			break;
		case 'o':
			a->output = optarg;
			break;
		case 'f':
			if (!cli_parse_format("replan", optarg, &a->json)) {
				return EXIT_USAGE;
			}
			break;
		case 'v':
			a->opts.verbose = true;
			break;
		default: /* every id of the table has its case above */
			break;
		}
	}
	if (c != CLI_PARSE_END) {
		return c == CLI_PARSE_HELP ? -1 : EXIT_USAGE;
	}
	if (optind < argc) {
		return cli_usage("replan", "unexpected argument '%s' (CURRENT and OBSERVED go with "
				 "--plan and --loads)", argv[optind]);
	}
	if (!a->plan || !a->loads) {
		return cli_usage("replan", "--plan CURRENT and --loads OBSERVED are required");
	}
	if (a->max_moves && a->move_cost) {
		return cli_usage("replan", "--max-moves and --move-cost are two objectives: give one");
	}
	if (a->pareto && (a->max_moves || a->move_cost || a->have_export)) {
		return cli_usage("replan", "--pareto prints the whole front: it takes no --max-moves, "
				 "--move-cost or --export");
	}
	if ((a->engine.have_algorithm || a->engine.d.gpus_per_node) && a->engine.d.rule != MP_DISPATCH_SGLANG) {
		return cli_usage("replan", "--ep-dispatch-algorithm and --gpus-per-node are SGLang's: "
				 "they need --engine sglang");
	}
	if (a->engine.d.algorithm == MP_DISPATCH_FAKE) {
		return cli_usage("replan", "--ep-dispatch-algorithm fake replaces the router's choices by "
				 "uniform ones, so no placement changes its balance: static or dynamic here");
	}
	if (a->pareto && a->engine.d.rule != MP_DISPATCH_EVEN) {
		return cli_usage("replan", "--pareto prints the even split's front: it takes no --engine %s",
				 mp_dispatch_rule_name(a->engine.d.rule));
	}
	if (a->svg && !a->pareto) {
		return cli_usage("replan", "--svg draws the Pareto front: give --pareto too");
	}
	if (a->export_output && !a->have_export) {
		return cli_usage("replan", "--export-output needs --export sglang");
	}
	if (a->have_export && !cli_export_name_ok("replan", a->export_output ? a->export_output : a->output)) {
		return EXIT_USAGE;
	}
	const char *outs[] = {a->output, a->export_output, a->svg};
	for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
		bool input = cli_same_file(outs[i], a->plan);
		for (uint32_t p = 0; p < a->n_loads; p++) {
			input = input || cli_same_file(outs[i], a->loads_paths[p]);
		}
		if (input) {
			return cli_usage("replan", "'%s' is an input; refusing to overwrite it", outs[i]);
		}
	}
	if (!cli_outputs_spare_inputs("replan", outs, sizeof(outs) / sizeof(outs[0]), NULL, 0)) {
		return EXIT_USAGE; /* two of -o, --export-output and --svg name one file */
	}
	return cli_check_outputs(outs, sizeof(outs) / sizeof(outs[0]));
}


/* "--max-moves 37" or "25%" (of all slots of all layers). */
static bool resolve_budget(const char *text, uint64_t all_slots, uint64_t *out)
{
	size_t n = strlen(text);
	char *end = NULL;
	errno = 0;
	if (n > 1 && text[n - 1] == '%') {
		double pct = strtod(text, &end);
		if (errno || end != text + n - 1 || !isfinite(pct) || pct < 0 || pct > 100) {
			return false;
		}
		*out = (uint64_t)llround(pct / 100.0 * (double)all_slots);
		return true;
	}
	if (strchr(text, '-')) {
		return false;
	}
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || end == text || *end) {
		return false;
	}
	*out = v;
	return true;
}

/* An engine map (a row per hidden layer) re-planned on the rows the loads
 * name (README "Layer identity"), as check does: full is the whole map
 * and ids[r] (owned) the map's row (hidden layer) of re-planned row r; ids
 * NULL when every row is re-planned. */
struct rows {
	struct mp_placement full;
	uint32_t *ids;
	/* a moeplan plan's own layer of each row (layers[].layer), owned;
	 * NULL for engine maps or when the plan does not say */
	uint32_t *plan_ids;
};

static uint32_t row_layer(const struct rows *rows, uint32_t r)
{
	return rows->ids ? rows->ids[r] : rows->plan_ids ? rows->plan_ids[r] : r;
}

/* The layer ids that name the output's rows (record, placement). */
static const uint32_t *named_rows(const struct rows *rows)
{
	return rows->ids ? rows->ids : rows->plan_ids;
}

/* A moeplan plan (or placement) re-planned against loads: its rows keep
 * their layers (layers[].layer, README "Layer identity"), and loads that
 * name their layers must name exactly the plan's, in its order (else a
 * row would be re-planned for another layer's loads). Returns 0,
 * MP_EINVAL (reported) or MP_ENOMEM. */
static int plan_rows(const struct replan_args *a, const struct mp_replan_plan_info *info,
		     const struct mp_placement *cur, const struct mp_loads *raw,
		     struct rows *rows, struct mp_diags *diags)
{
	if (info->kind == MP_REPLAN_SOURCE_SGLANG || info->kind == MP_REPLAN_SOURCE_LIST ||
	    info->kind == MP_REPLAN_SOURCE_VLLM) {
		return 0;
	}
	uint32_t n_own = 0;
	int rc = mp_map_row_layers(a->plan, a->phase, &rows->plan_ids, &n_own, diags);
	if (rc == 0 && rows->plan_ids && n_own != cur->n_layers) {
		free(rows->plan_ids);
		rows->plan_ids = NULL;
	}
	if (rc || !raw->layer_ids) {
		return rc;
	}
	bool same = raw->n_layers == cur->n_layers;
	for (uint32_t r = 0; same && r < raw->n_layers; r++) {
		same = raw->layer_ids[r] == row_layer(rows, r);
	}
	if (!same) {
		return mp_diags_add(diags, a->loads, 0, 0, MP_EINVAL,
				    "the loads name %u layer%s (%u first), but %s places %u (%u first): "
				    "re-planning a moeplan plan takes loads of exactly its layers, in "
				    "its order (see its layers[].layer; check can score a subset)",
				    raw->n_layers, raw->n_layers == 1 ? "" : "s", raw->layer_ids[0],
				    a->plan, cur->n_layers, row_layer(rows, 0));
	}
	return 0;
}

/* Select the rows when the map's rows are hidden layers (an SGLang map, a
 * bare list) and the loads name fewer: cur becomes those rows, rows->full
 * keeps the whole map. Returns 0, MP_EINVAL (an id beyond the map,
 * reported) or MP_ENOMEM. */
static int select_rows(const struct replan_args *a, const struct mp_replan_plan_info *info,
		       struct mp_placement *cur, const struct mp_loads *raw, struct rows *rows,
		       struct mp_diags *diags)
{
	bool engine_rows = info->kind == MP_REPLAN_SOURCE_SGLANG || info->kind == MP_REPLAN_SOURCE_LIST;
	if (!engine_rows || !cli_map_rows_named(cur, raw)) {
		return 0;
	}
	struct mp_placement sub;
	mp_placement_init(&sub);
	int rc = cli_map_select_rows(cur, raw->layer_ids, raw->n_layers, &sub);
	if (rc == MP_EINVAL) {
		return mp_diags_add(diags, a->loads, 0, 0, MP_EINVAL,
				    "the loads name layer %u, but %s has %u rows (one per hidden layer)",
				    raw->layer_ids[raw->n_layers - 1], a->plan, cur->n_layers);
	}
	uint32_t *ids = rc == 0 ? malloc((size_t)raw->n_layers * sizeof(*ids)) : NULL;
	if (rc == 0 && !ids) {
		mp_placement_finish(&sub);
		return MP_ENOMEM;
	}
	if (rc == 0) {
		memcpy(ids, raw->layer_ids, (size_t)raw->n_layers * sizeof(*ids));
		rows->full = *cur;
		*cur = sub;
		rows->ids = ids;
	}
	return rc;
}

/* The inputs: the current map (cur, only the rows the loads name when it
 * is an engine map: rows), what the file says besides (info), and the
 * loads per logical expert (per-slot counts folded through cur). Returns
 * 0 or an MP_ code (reported in diags). */
static int load_inputs(struct replan_args *a, struct mp_placement *cur,
		       struct mp_replan_plan_info *info, struct rows *rows, struct mp_loads *loads,
		       struct mp_diags *diags)
{
	struct mp_loads raw;
	mp_loads_init(&raw);
	int rc = mp_load_map(a->plan, a->phase, a->gpus, cur, diags);
	if (rc == 0) {
		rc = mp_replan_read_plan_info(a->plan, a->phase, info, diags);
	}
	cli_history_warn("replan", &a->history, cli_history_wanted(a->loads_paths, a->n_loads));
	if (rc == 0 && cli_history_wanted(a->loads_paths, a->n_loads)) {
		rc = cli_history_load(&a->history, a->loads_paths, a->n_loads, &raw, diags);
	} else if (rc == 0) {
		rc = a->history.first > 1 || a->history.last > 1
			     ? mp_diags_add(diags, a->loads, 0, 0, MP_EINVAL, "--windows %u:%u: one window",
					    a->history.first, a->history.last)
			     : mp_load_loads(a->loads, &raw, diags);
		rc = rc == MP_ENOMEM || rc == 0 ? rc : MP_EINVAL;
	}
	if (rc == 0) {
		rc = cli_rows_dense_zero(a->model, a->loads, &raw, diags);
	}
	if (rc == 0) {
		rc = cli_loads_fit_plan("replan", a->plan, a->phase, a->model, a->loads, &raw);
	}
	if (rc == 0) {
		rc = select_rows(a, info, cur, &raw, rows, diags);
	}
	if (rc == 0) {
		rc = plan_rows(a, info, cur, &raw, rows, diags);
	}
	uint32_t N = cur->gpus * cur->slots_per_gpu;
	if (rc) {
		/* reported */
	} else if (a->slot_counts || (raw.n_experts == N && N != cur->n_experts)) {
		rc = mp_replan_fold_slot_counts(cur, &raw, loads, diags);
	} else if (raw.n_experts != cur->n_experts || raw.n_layers != cur->n_layers) {
		rc = mp_diags_add(diags, a->loads, 0, 0, MP_EINVAL,
				  "%u layers x %u columns, but %s has %u layers x %u experts (%u slots)",
				  raw.n_layers, raw.n_experts, a->plan, cur->n_layers, cur->n_experts, N);
	} else {
		*loads = raw;
		mp_loads_init(&raw);
	}
	mp_loads_finish(&raw);
	return rc;
}

/* The report stream: stderr when the output document goes to stdout. */
static FILE *report_stream(const struct replan_args *a)
{
	bool to_stdout = !a->output || strcmp(a->output, "-") == 0;
	return to_stdout ? stderr : stdout;
}

/* moves_in_output: the output document records replan.layers[].moved;
 * when it is only a map (an engine's, or --export to -o) every move is
 * listed here, as nothing else keeps them. */
static void print_report(FILE *f, const struct replan_args *a, const struct mp_replan *r,
			 const struct mp_placement *cur, const struct rows *rows, bool moves_in_output)
{
	char b1[32];
	char b2[32];
	uint32_t N = cur->gpus * cur->slots_per_gpu;
	fprintf(f, "re-plan of %s (%u layer%s, %u GPU%s x %u slot%s, %u experts) for %s\n", a->plan,
		cur->n_layers, cli_s(cur->n_layers), cur->gpus, cli_s(cur->gpus),
		cur->slots_per_gpu, cli_s(cur->slots_per_gpu), cur->n_experts, a->loads);
	if (rows->ids) {
		fprintf(f, "rows: the %u layer%s the loads name (", cur->n_layers, cli_s(cur->n_layers));
		for (uint32_t l = 0; l < cur->n_layers; l++) {
			fprintf(f, "%s%u", l ? ", " : "", rows->ids[l]);
		}
		fprintf(f, ") of the map's %u; the other rows are kept as they are\n", rows->full.n_layers);
	}
	if (a->opts.cost_mode) {
		fprintf(f, "objective: expert time over %g steps at %g s per layer, plus %g s per move\n",
			a->opts.horizon_steps, a->opts.layer_time_s, a->opts.move_cost_s);
	} else if (a->opts.max_moves == MP_REPLAN_UNLIMITED) {
		fprintf(f, "objective: sum of busiest-GPU loads, no move limit\n");
	} else {
		fprintf(f, "objective: sum of busiest-GPU loads, at most %llu moves (%.1f%% of %llu slots)\n",
			(unsigned long long)a->opts.max_moves,
			100.0 * (double)a->opts.max_moves / ((double)N * cur->n_layers),
			(unsigned long long)N * cur->n_layers);
	}
	fprintf(f, "%6s %6s %10s %12s %12s %12s %7s %12s  %s\n", "layer", "moves", "bytes",
		"max before", "max after", "from scratch", "(moves)", "bound", "status");
	for (uint32_t l = 0; l < cur->n_layers; l++) {
		const struct mp_replan_layer *rl = &r->layers[l];
		cli_si((double)rl->bytes, "B", b1, sizeof(b1));
		fprintf(f, "%6u %6u %10s %12.6g %12.6g %12.6g %7u %12.6g  %s\n", row_layer(rows, l),
			rl->moves, b1,
			rl->max_before, rl->max_after, rl->scratch_max, rl->scratch_moves, rl->lower_bound,
			mp_place_status_name(rl->status));
	}
	cli_si((double)r->total_bytes, "B", b1, sizeof(b1));
	cli_si(r->link_bw_bytes_per_s, "B/s", b2, sizeof(b2));
	fprintf(f, "total: %zu moves, %s (%llu B per expert), estimated transfer %.3g s at %s per GPU\n",
		r->n_moves, b1, (unsigned long long)r->expert_bytes, r->transfer_s, b2);
	fprintf(f, "sum of busiest-GPU loads: %.6g -> %.6g (from scratch %.6g, bound %.6g): gain %.2f%%",
		r->sum_before, r->sum_after, r->sum_scratch, r->sum_bound, 100.0 * r->gain);
	if (r->sum_before > r->sum_scratch) {
		fprintf(f, ", %.1f%% of the from-scratch improvement\n", 100.0 * r->recovered);
	} else {
		/* nothing to recover: a share of nothing would read as 100% */
		fprintf(f, "; from scratch gains nothing either\n");
	}
	if (r->kept) {
		fprintf(f, "predicted gain %.2f%% is below --min-gain %.2f%%: keeping the current plan\n",
			100.0 * r->kept_gain, 100.0 * a->opts.min_gain);
	}
	if (r->n_moves == 0) {
		return;
	}
	if (r->n_moves > 64 && moves_in_output) {
		fprintf(f, "moves: see replan.layers[].moved in the output\n");
		return;
	}
	if (!moves_in_output) {
		fprintf(f, "moves (the output is only the map, so they are listed here):\n");
	}
	cli_si((double)r->expert_bytes, "B", b1, sizeof(b1));
	for (size_t i = 0; i < r->n_moves; i++) {
		const struct mp_replan_move *m = &r->moves[i];
		/* slots numbered on their GPU, as check and the map loader say
		 * them, with the physical index (the output's `slot`) beside */
		const uint32_t S = r->before.slots_per_gpu;
		fprintf(f, "  layer %u: GPU %u slot %u (physical %u): expert %u -> %u (%s from GPU %u)\n",
			row_layer(rows, m->layer), m->gpu, S ? m->slot % S : m->slot, m->slot, m->old_expert,
			m->new_expert, b1, m->source_gpu);
	}
}

static void print_pareto(FILE *f, const struct mp_replan *r)
{
	size_t K = r->total_curve_len ? r->total_curve_len - 1 : 0;
	fprintf(f, "best sum of busiest-GPU loads by moves (from scratch: %zu moves, %.6g; bound %.6g)\n",
		K, r->sum_scratch, r->sum_bound);
	size_t marks[] = {0, K / 16, K / 8, K / 4, K / 2, (3 * K) / 4, K};
	size_t last = SIZE_MAX;
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		size_t k = marks[i];
		if (k == last || k >= r->total_curve_len) {
			continue;
		}
		last = k;
		fprintf(f, "  %6zu moves: %.6g\n", k, r->total_curve[k]);
	}
}

static int write_pareto_svg(const char *path, const struct mp_replan *r)
{
	size_t cap = r->total_curve_len ? r->total_curve_len : 1;
	double *x = malloc(sizeof(*x) * cap);
	double *y = malloc(sizeof(*y) * cap);
	if (!x || !y) {
		free(x);
		free(y);
		return MP_ENOMEM;
	}
	/* the points where the best load changes (a step line holds between) */
	size_t n = 0;
	for (size_t k = 0; k < r->total_curve_len; k++) {
		if (k == 0 || k + 1 == r->total_curve_len || r->total_curve[k] < r->total_curve[k - 1]) {
			x[n] = (double)k;
			y[n] = r->total_curve[k];
			n++;
		}
	}
	struct mp_plot_series s = {
		.label = "re-plan: best found (local search; from-scratch plan at the end)",
		.x = x,
		.y = y,
		.n = n,
	};
	struct mp_plot_pareto plot;
	mp_plot_pareto_init(&plot);
	plot.title = "Busiest-GPU load (sum over MoE layers) against expert moves";
	plot.y_label = "sum over layers of the busiest GPU's load";
	plot.series = &s;
	plot.n_series = 1;
	plot.lower_bound = r->sum_bound;
	plot.lower_bound_label = "lower bound (any plan)";
	int rc = mp_plot_pareto_save(&plot, path);
	free(x);
	free(y);
	return rc;
}

/* The new map in the input's own format (or the engine's with --export). */
static int build_output(const struct replan_args *a, const struct mp_replan_plan_info *info,
			const struct mp_placement *p, const uint32_t *ids, const struct mp_loads *loads,
			struct mp_doc *record, struct mp_doc **out, struct mp_diags *diags)
{
	switch (info->kind) {
	case MP_REPLAN_SOURCE_PLAN: {
		struct mp_doc *placement = mp_placement_to_doc(p, ids);
		struct mp_doc *factor = NULL;
		struct mp_doc *time = NULL;
		if (info->tokens_per_gpu > 0 && info->top_k > 0) {
			double f = 1.0;
			uint32_t tokens = info->tokens_per_gpu > 1 ? (uint32_t)lround(info->tokens_per_gpu) : 1;
			/* as `moeplan plan` does: 200 samples, seed 1 */
			int rc = mp_simulate_factor(p, loads, tokens, info->top_k, 200, 1, &f);
			if (rc == 0) {
				factor = mp_doc_real(f);
				if (info->expert_time_s > 0) {
					time = mp_doc_real(info->expert_time_s * f);
				}
			}
		}
		struct mp_replan_edit edits[] = {
			{"busiest_gpu_factor", factor},
			{"predicted_expert_time_s", time},
			{"placement", placement},
			{"replan", record},
		};
		int rc = mp_replan_splice_plan(a->plan, a->phase, edits, sizeof(edits) / sizeof(edits[0]),
					       out, diags);
		mp_doc_destroy(placement);
		mp_doc_destroy(factor);
		mp_doc_destroy(time);
		return rc;
	}
	case MP_REPLAN_SOURCE_WRAPPED: {
		struct mp_doc *d = mp_doc_map();
		mp_doc_put(d, "placement", mp_placement_to_doc(p, ids));
		mp_doc_put(d, "replan", mp_doc_clone(record));
		*out = d;
		return mp_doc_failed(d) ? MP_ENOMEM : 0;
	}
	case MP_REPLAN_SOURCE_PLACEMENT: {
		struct mp_doc *d = mp_placement_to_doc(p, ids);
		mp_doc_put(d, "replan", mp_doc_clone(record));
		*out = d;
		return mp_doc_failed(d) ? MP_ENOMEM : 0;
	}
	case MP_REPLAN_SOURCE_SGLANG:
	case MP_REPLAN_SOURCE_VLLM: {
		/* the same rows as the input: {"physical_to_logical_map": ...} */
		struct mp_doc *d = mp_doc_list();
		uint32_t N = p->gpus * p->slots_per_gpu;
		for (uint32_t l = 0; l < p->n_layers; l++) {
			mp_doc_put(d, NULL, mp_doc_uints(p->layers[l].slot_expert, N));
		}
		*out = mp_doc_map();
		mp_doc_put(*out, "physical_to_logical_map", d);
		return mp_doc_failed(*out) ? MP_ENOMEM : 0;
	}
	case MP_REPLAN_SOURCE_LIST: {
		struct mp_doc *d = mp_doc_list();
		uint32_t N = p->gpus * p->slots_per_gpu;
		for (uint32_t l = 0; l < p->n_layers; l++) {
			mp_doc_put(d, NULL, mp_doc_uints(p->layers[l].slot_expert, N));
		}
		*out = d;
		return mp_doc_failed(d) ? MP_ENOMEM : 0;
	}
	}
	return MP_EINVAL;
}

/* The hidden layers of --export's rows: an SGLang map's (or a bare
 * list's) rows are the engine's rows already; a moeplan plan's or a vLLM
 * state's rows are MoE layers, placed by --model's numbering (in order, or
 * as the loads name them). Unknown otherwise (the export says why). */
static int replan_layers(const struct replan_args *a, const struct mp_replan_plan_info *info,
			 const struct mp_loads *loads, uint32_t rows, struct cli_layers *cl)
{
	if (info->kind == MP_REPLAN_SOURCE_SGLANG || info->kind == MP_REPLAN_SOURCE_LIST) {
		return cli_layers_every_row(cl, rows) == 0 ? EXIT_OK : EXIT_INPUT;
	}
	if (!a->model) {
		return EXIT_OK;
	}
	struct mp_diags diags;
	mp_diags_init(&diags);
	struct mp_model model;
	mp_model_init(&model);
	int status = EXIT_INPUT;
	if (mp_load_model(a->model, &model, &diags) == 0) {
		const uint32_t *ids = loads->layer_ids && loads->n_layers == rows ? loads->layer_ids : NULL;
		int rc = cli_layers_from_model(cl, &model, ids, rows);
		status = rc == MP_ENOMEM ? EXIT_INPUT : EXIT_OK;
	}
	cli_print_diags(&diags);
	mp_diags_finish(&diags);
	mp_model_finish(&model);
	return status;
}

/* Bytes per expert copy and link bandwidth: options, then model/hardware,
 * then the plan, then the defaults. */
static int resolve_transfer(struct replan_args *a, const struct mp_replan_plan_info *info)
{
	int status = EXIT_OK;
	struct mp_diags diags;
	mp_diags_init(&diags);
	struct mp_model model;
	mp_model_init(&model);
	struct mp_hardware hw;
	mp_hardware_init(&hw);
	if (a->have_expert_bytes) {
		a->opts.expert_bytes = (uint64_t)llround(a->expert_bytes);
	} else if (a->model) {
		if (mp_load_model(a->model, &model, &diags) != 0) {
			status = EXIT_INPUT;
			goto out;
		}
		struct mp_expert_cost cost;
		mp_roofline_expert(&model, &cost);
		if (cost.weight_bytes >= 1) {
			a->opts.expert_bytes = (uint64_t)llround(cost.weight_bytes);
		}
	} else if (info->expert_bytes > 0) {
		a->opts.expert_bytes = info->expert_bytes;
	}
	if (a->have_link_bw) {
		a->opts.link_bw_bytes_per_s = a->link_bw;
	} else if (a->hardware) {
		if (mp_load_hardware(a->hardware, &hw, &diags) != 0) {
			status = EXIT_INPUT;
			goto out;
		}
		if (hw.scale_up_bw_bytes_per_s > 0) {
			a->opts.link_bw_bytes_per_s = hw.scale_up_bw_bytes_per_s;
		}
	}
out:
	cli_print_diags(&diags);
	mp_diags_finish(&diags);
	mp_model_finish(&model);
	mp_hardware_finish(&hw);
	return status;
}

static int resolve_cost(struct replan_args *a, const struct mp_replan_plan_info *info)
{
	if (!a->move_cost) {
		return EXIT_OK;
	}
	double v = 0;
	if (mp_parse_quantity(a->move_cost, "seconds", &v) == 0) {
		a->opts.move_cost_s = v;
	} else if (mp_parse_quantity(a->move_cost, "bytes", &v) == 0) {
		a->opts.move_cost_s = v / a->opts.link_bw_bytes_per_s;
	} else {
		return cli_usage("replan", "--move-cost: expected seconds >= 0 ('2 ms', a plain "
				 "number is seconds) or bytes >= 0 ('44 MB'), got '%s'", a->move_cost);
	}
	if (!(a->opts.move_cost_s >= 0) || !isfinite(a->opts.move_cost_s)) {
		return cli_usage("replan", "--move-cost: expected seconds >= 0 ('2 ms', a plain "
				 "number is seconds) or bytes >= 0 ('44 MB'), got '%s'", a->move_cost);
	}
	if (!a->have_layer_time) {
		if (info->expert_time_s <= 0) {
			return cli_usage("replan", "--move-cost needs --layer-time SECONDS (the plan does not "
					 "give the phase's expert_time_s)");
		}
		a->opts.layer_time_s = info->expert_time_s;
	}
	a->opts.cost_mode = true;
	return EXIT_OK;
}

/* The launch line of --export (issue 24): the nodes (--gpus-per-node, else
 * the current plan's) and, under --engine sglang, the dispatch algorithm
 * the re-plan was chosen for. */
static void replan_set_launch(const struct replan_args *a, const struct mp_placement *cur)
{
	struct mp_export_launch l;
	struct mp_placement none = {0};
	mp_export_launch_init(&l, &none);
	l.gpus_per_node = a->engine.d.gpus_per_node ? a->engine.d.gpus_per_node : cur->gpus_per_node;
	if (a->engine.d.rule == MP_DISPATCH_SGLANG) {
		l.ep_dispatch_algorithm = mp_dispatch_algorithm_name(a->engine.d.algorithm);
	}
	cli_export_set_launch(&l);
}

int cmd_replan(int argc, char **argv)
{
	struct replan_args a = {0};
	mp_replan_options_init(&a.opts);
	mp_objective_options_init(&a.history.obj);
	int status = parse_args(argc, argv, &a);
	if (status != 0) {
		return status < 0 ? EXIT_OK : status;
	}
	struct mp_diags diags;
	mp_diags_init(&diags);
	struct mp_placement cur;
	mp_placement_init(&cur);
	struct mp_loads loads;
	mp_loads_init(&loads);
	struct mp_replan r;
	mp_replan_init(&r);
	struct mp_replan_plan_info info = {0};
	struct rows rows = {.ids = NULL, .plan_ids = NULL};
	mp_placement_init(&rows.full);
	struct mp_doc *record = NULL;
	struct mp_doc *doc = NULL;
	struct cli_layers layers = {0};
	struct cli_replan_engine eng = {0};
	const bool by_engine = a.engine.d.rule != MP_DISPATCH_EVEN;
	status = EXIT_INPUT;

	int rc = load_inputs(&a, &cur, &info, &rows, &loads, &diags);
	if (rc) {
		goto out;
	}
	uint32_t N = cur.gpus * cur.slots_per_gpu;
	status = resolve_transfer(&a, &info);
	if (status != EXIT_OK) {
		goto out;
	}
	status = resolve_cost(&a, &info);
	if (status != EXIT_OK) {
		goto out;
	}
	status = EXIT_INPUT;
	if (a.max_moves) {
		uint64_t all = (uint64_t)N * cur.n_layers;
		if (!resolve_budget(a.max_moves, all, &a.opts.max_moves)) {
			status = cli_usage("replan", "--max-moves: expected a whole number >= 0 "
					   "or a percentage from 0%% to 100%% of the %llu slots (e.g. 25%%), "
					   "got '%s'", (unsigned long long)all, a.max_moves);
			goto out;
		}
	}
	if (by_engine && a.engine.d.gpus_per_node && cur.gpus % a.engine.d.gpus_per_node != 0) {
		cli_error("--gpus-per-node %u does not divide the map's %u GPUs", a.engine.d.gpus_per_node,
			  cur.gpus);
		goto out;
	}
	rc = mp_replan_run(&cur, &loads, &a.opts, &r, &diags);
	if (rc == 0 && by_engine) {
		struct cli_replan_engine_in in = {
			.d = &a.engine.d, .cur = &cur, .loads = &loads,
			.full = rows.ids ? &rows.full : NULL, .ids = rows.ids, .own = rows.plan_ids,
			.model = a.model, .opts = &a.opts,
		};
		rc = cli_replan_engine_run(&in, &r, &eng, &diags);
	}
	if (rc) {
		goto out;
	}
	FILE *rep = report_stream(&a);
	if (a.pareto) {
		doc = mp_doc_map();
		mp_doc_put(doc, "pareto", mp_replan_pareto_doc(&r, named_rows(&rows)));
		cli_report_time_limit("replan", (const struct mp_placement *const[]){&r.after, &r.scratch},
				      2, a.opts.time_limit_s, doc);
		if (!cli_quiet) {
			print_pareto(rep, &r);
		}
		if (a.svg) {
			rc = write_pareto_svg(a.svg, &r);
			if (rc) {
				int err = errno;
				cli_error("%s: cannot write: %s", a.svg, cli_write_error(rc, err));
				goto out;
			}
		}
		status = cli_emit(doc, a.output, a.json);
		goto out;
	}
	record = mp_replan_to_doc(&r, &a.opts, named_rows(&rows));
	if (record && a.history.view.n_windows > 0) {
		cli_history_doc(&a.history, -1.0, 0.0, record);
	}
	if (record && by_engine && cli_replan_engine_doc(&eng, named_rows(&rows), record) != 0) {
		rc = MP_ENOMEM;
		goto out;
	}
	/* the new map: the whole engine map with the re-planned rows in it */
	const struct mp_placement *new_map = &r.after;
	if (rows.ids) {
		rc = cli_map_put_rows(&rows.full, rows.ids, &r.after);
		if (rc) {
			goto out;
		}
		new_map = &rows.full;
	}
	if (a.have_export) {
		replan_set_launch(&a, &cur);
		status = replan_layers(&a, &info, &loads, new_map->n_layers, &layers);
		if (status != EXIT_OK) {
			goto out;
		}
		status = EXIT_INPUT;
	}
	if (a.have_export && (!a.export_output || !layers.known)) {
		/* the engine map is the output; or an export that cannot be made
		 * fails here, before the plan is written (as place) */
		status = cli_export_map(new_map, &layers, mp_export_name(a.export_format),
					a.export_output ? a.export_output : a.output);
		if (status != EXIT_OK) {
			goto out;
		}
	} else {
		rc = build_output(&a, &info, new_map, rows.ids ? NULL : rows.plan_ids, &loads, record,
				  &doc, &diags);
		if (rc) {
			goto out;
		}
		cli_report_time_limit("replan", (const struct mp_placement *const[]){&r.after, &r.scratch},
				      2, a.opts.time_limit_s, info.kind == MP_REPLAN_SOURCE_SGLANG ||
				      info.kind == MP_REPLAN_SOURCE_VLLM ? NULL : doc);
		/* engine maps stay JSON: SGLang reads .json */
		bool engine = info.kind == MP_REPLAN_SOURCE_SGLANG || info.kind == MP_REPLAN_SOURCE_VLLM;
		status = cli_emit(doc, a.output, a.json || engine);
		if (status != EXIT_OK) {
			goto out;
		}
		if (a.have_export) {
			status = cli_export_map(new_map, &layers, mp_export_name(a.export_format),
						a.export_output);
			if (status != EXIT_OK) {
				goto out;
			}
		}
	}
	if (!cli_quiet) {
		bool map_only = (a.have_export && !a.export_output) || info.kind == MP_REPLAN_SOURCE_SGLANG ||
				info.kind == MP_REPLAN_SOURCE_LIST ||
				info.kind == MP_REPLAN_SOURCE_VLLM;
		print_report(rep, &a, &r, &cur, &rows, !map_only);
		if (by_engine) {
			cli_replan_engine_print(rep, &eng, named_rows(&rows));
		}
	}
	status = EXIT_OK;
out:
	cli_print_diags(&diags);
	if (rc && diags.count == 0 && status == EXIT_INPUT) {
		cli_error("%s: %s", a.plan, mp_strerror(rc));
	}
	mp_doc_destroy(record);
	mp_doc_destroy(doc);
	cli_replan_engine_finish(&eng);
	cli_history_finish(&a.history);
	cli_layers_finish(&layers);
	mp_replan_finish(&r);
	mp_loads_finish(&loads);
	mp_placement_finish(&cur);
	mp_placement_finish(&rows.full);
	free(rows.ids);
	free(rows.plan_ids);
	mp_diags_finish(&diags);
	return status;
}
