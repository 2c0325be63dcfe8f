/* moeplan simulate: Monte Carlo routing of finite batches over a plan or an
 * EP width, and the busiest GPU's share of expert visits. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/loader.h"
#include "moeplan/placement.h"
#include "moeplan/simulate.h"

/* No short options for these: -n is --gpus-per-node and -S --split in
 * the other commands. */
enum { OPT_STEPS = CLI_OPT_LONG, OPT_SEED, OPT_ENGINE, OPT_EP_DISPATCH_ALGORITHM, OPT_GPUS_PER_NODE, OPT_GPUS };

static const struct cli_opt simulate_options[] = {
	{"plan", 'p', "PLAN", "slot->expert map: plan, placement, SGLang, vLLM (default: made from --ep and --slots)", CLI_COMPLETE_FILE},
	{"phase", 'P', "PHASE", "phase of a full plan: decode (default), prefill", "decode prefill"},
	{"model", 'm', "MODEL", "model file: experts and top-k (default: none)", CLI_COMPLETE_INPUT},
	{"ep", 'e', "N", "EP width; with --plan, GPUs of a bare map (required without --plan)", NULL},
	{"gpus", OPT_GPUS, "N", "the same as --ep (the name check and replan use); give one of them (default: --ep)", NULL},
	{"slots", 's', "S", "physical slots per layer in all, a multiple of N, as in place/fit/roofline (default: E rounded up to a multiple of N)", NULL},
	{"loads", 'l', "LOADS", "popularity per layer (default uniform)", CLI_COMPLETE_FILE},
	{"top-k", 'k', "K", "experts per token (default: the model's)", NULL},
	{"requests", 'r', "R", "requests per GPU per step (required)", NULL},
	{"tokens-per-request", 'T', "T", "tokens per request per step (default 1 + the model's drafter stages, else 1)", NULL},
	{"steps", OPT_STEPS, "N", "routing samples (default 10000)", NULL},
	{"seed", OPT_SEED, "SEED", "random seed, 0 to 2^63-1 (default 1)", NULL},
	{"prefer-local", 'L', NULL, "use a replica on the sending GPU if it has one", NULL},
	{"engine", OPT_ENGINE, "NAME", "dispatch: even (uniform among replicas, default), sglang (own GPU's replica, else the node's first, else SGLang's fair choice), vllm (uniform)", "even sglang vllm"},
	{"ep-dispatch-algorithm", OPT_EP_DISPATCH_ALGORITHM, "ALG", "with --engine sglang: static (SGLang's seeded choice per rank, default) or dynamic", "static dynamic"},
	{"gpus-per-node", OPT_GPUS_PER_NODE, "N", "with --engine sglang: GPUs per node, dividing the GPUs (default: all on one node)", NULL},
	{"threads", 'j', "N", "worker threads (default: CPUs; same results)", NULL},
	{"output", 'o', "FILE", "write the report to FILE, atomically (default '-', stdout)", CLI_COMPLETE_FILE},
	CLI_OPT_FORMAT_YAML,
	CLI_OPT_HELP,
	{0},
};

const struct cli_command_help cmd_simulate_help = {
	.name = "simulate",
	.synopsis = "moeplan simulate (--plan PLAN | --model M --ep N [--slots S]) [--top-k K]\n"
		    "                        [--loads L] --requests R [--tokens-per-request T]\n"
		    "                        [--steps N] [--seed S] [-o FILE] [--format yaml|json] [options]",
	.description =
		"Draws the routing of finite batches: every GPU sends R x T tokens, each token\n"
		"picks top-k distinct experts with probability proportional to their popularity\n"
		"(uniform unless --loads is given), each visit goes to one replica of its expert\n"
		"(uniformly among its replicas, --prefer-local, or as --engine dispatches), and\n"
		"each sample records the busiest GPU's visits over the mean (R x T x k).\n"
		"Sample s routes MoE layer s mod layers. Reports the mean, p50, p99 and max of\n"
		"that factor, with the seed and the number of samples.\n"
		"With --plan, a moeplan plan's top-k and the\n"
		"popularity it was planned for are used unless --top-k or --loads is given.\n"
		"Without a plan, S slots on N GPUs: with no more slots than experts, slot p\n"
		"holds expert p mod E; with more, the redundant replicas are placed by the\n"
		"solver for the popularity, as plan does. Without --model or --plan, give\n"
		"--top-k (and --loads for the expert count). Random numbers: xoshiro256** seeded by SplitMix64; results do\n"
		"not depend on --threads.",
	.options = simulate_options,
	.examples =
		"  moeplan simulate --model plans/models/deepseek-v4.1-flash.yaml --ep 64 --requests 8 \\\n"
		"      --tokens-per-request 4\n"
		"  moeplan simulate -m plans/models/olmoe-1b-7b.yaml -e 8 -l plans/traces/olmoe_github.csv \\\n"
		"      -r 60 -f json -o simulate.json\n",
};

struct simulate_args {
	const char *plan;
	const char *phase;
	const char *model;
	const char *loads;
	const char *output;
	uint32_t ep;
	uint32_t slots;
	uint32_t top_k;
	uint32_t requests;
	uint32_t tokens_per_request;
	uint32_t steps;
	uint64_t seed;
	unsigned threads;
	bool prefer_local;
	bool json;
	struct cli_engine engine;
};

static bool parse_seed(const char *text, uint64_t *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	/* Seeds are written back as JSON/YAML integers: keep them in int64. */
	if (errno || end == text || *end != '\0' || strchr(text, '-') || v > INT64_MAX) {
		cli_usage("simulate", "--seed: expected a whole number from 0 to %lld, got '%s'",
			  (long long)INT64_MAX, text);
		return false;
	}
	*out = (uint64_t)v;
	return true;
}

/* Parse the command line; returns -1 to go on, else an exit code. */
static int parse_args(int argc, char **argv, struct simulate_args *a)
{
	struct cli_parser parser;
	cli_parser_init(&parser, &cmd_simulate_help);
	int c;
	uint32_t threads = 0;
	while ((c = cli_parser_next(&parser, argc, argv)) >= 0) {
		bool ok = true;
		switch (c) {
		case 'p':
			a->plan = optarg;
			break;
		case 'P':
			if (strcmp(optarg, "decode") != 0 && strcmp(optarg, "prefill") != 0) {
				return cli_usage("simulate", "--phase '%s': expected 'decode' or 'prefill'",
						 optarg);
			}
			a->phase = optarg;
			break;
		case 'm':
			a->model = optarg;
			break;
		case 'e':
		case OPT_GPUS:
			if (a->ep) {
				return cli_usage("simulate", "give the EP width once (--ep and --gpus are one option)");
			}
			ok = cli_parse_u32("simulate", c == 'e' ? "ep" : "gpus", optarg, 1, MP_MAX_GPUS, &a->ep);
			break;
		case 's':
			ok = cli_parse_u32("simulate", "slots", optarg, 1, UINT32_MAX, &a->slots);
			break;
		case 'l':
			a->loads = optarg;
			break;
		case 'k':
			ok = cli_parse_u32("simulate", "top-k", optarg, 1, MP_SIMULATE_MAX_TOP_K, &a->top_k);
			break;
		case 'r':
			ok = cli_parse_u32("simulate", "requests", optarg, 1, UINT32_MAX, &a->requests);
			break;
		case 'T':
			ok = cli_parse_u32("simulate", "tokens-per-request", optarg, 1, UINT32_MAX,
					   &a->tokens_per_request);
			break;
		case OPT_STEPS:
			ok = cli_parse_u32("simulate", "steps", optarg, 1, MP_SIMULATE_MAX_STEPS, &a->steps);
			break;
		case OPT_SEED:
			ok = parse_seed(optarg, &a->seed);
			break;
		case 'L':
			a->prefer_local = true;
			break;
		case OPT_ENGINE:
			ok = cli_engine_option("simulate", CLI_ENGINE_OPT_RULE, optarg, &a->engine);
			break;
		case OPT_EP_DISPATCH_ALGORITHM:
			ok = cli_engine_option("simulate", CLI_ENGINE_OPT_ALGORITHM, optarg, &a->engine);
			break;
		case OPT_GPUS_PER_NODE:
			ok = cli_engine_option("simulate", CLI_ENGINE_OPT_GPUS_PER_NODE, optarg, &a->engine);
			break;
		case 'j':
			ok = cli_parse_u32("simulate", "threads", optarg, 1, 1024, &threads);
			a->threads = threads;
			break;
		case 'o':
			a->output = optarg;
			break;
		case 'f':
			ok = cli_parse_format("simulate", optarg, &a->json);
			break;
		default: /* every id of the table has its case above */
			break;
		}
		if (!ok) {
			return EXIT_USAGE;
		}
	}
	int end = cli_parser_end(&parser, c, argc, argv);
	if (end >= 0) {
		return end;
	}
	if (!a->plan && !((a->model || a->loads) && a->ep)) {
		return cli_usage("simulate", "give --plan PLAN, or --model M (or --loads L) with --ep N");
	}
	if (a->plan && a->slots) {
		return cli_usage("simulate", "--slots goes with --model and --ep, not with --plan");
	}
	if (a->slots && a->ep && (a->slots % a->ep != 0 || a->slots / a->ep > MP_MAX_SLOTS_PER_GPU)) {
		return cli_usage("simulate", "--slots %u: expected a multiple of --ep %u with at most %u per GPU",
				 a->slots, a->ep, MP_MAX_SLOTS_PER_GPU);
	}
	if (a->phase && !a->plan) {
		return cli_usage("simulate", "--phase goes with --plan");
	}
	if (!a->model && !a->top_k && !a->plan) {
		return cli_usage("simulate", "without --model or --plan, give --top-k K");
	}
	if (a->requests == 0) {
		return cli_usage("simulate", "--requests R is required");
	}
	const bool sglang = a->engine.d.rule == MP_DISPATCH_SGLANG;
	if (a->prefer_local && a->engine.d.rule != MP_DISPATCH_EVEN) {
		return cli_usage("simulate", "--prefer-local is a dispatch rule of its own: it takes no "
				 "--engine %s", mp_dispatch_rule_name(a->engine.d.rule));
	}
	if ((a->engine.have_algorithm || a->engine.d.gpus_per_node) && !sglang) {
		return cli_usage("simulate", "--ep-dispatch-algorithm and --gpus-per-node are SGLang's: "
				 "they need --engine sglang");
	}
	if (a->engine.d.algorithm == MP_DISPATCH_FAKE) {
		return cli_usage("simulate", "--ep-dispatch-algorithm fake replaces the router's choices by "
				 "uniform ones: simulate that without --loads (static or dynamic here)");
	}
	if ((uint64_t)a->requests * (a->tokens_per_request ? a->tokens_per_request : 1u) > UINT32_MAX) {
		return cli_usage("simulate", "--requests %u x --tokens-per-request %u is too large",
				 a->requests, a->tokens_per_request);
	}
	const char *inputs[] = { a->plan, a->model, a->loads };
	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		if (inputs[i] && cli_same_file(a->output, inputs[i])) {
			return cli_usage("simulate", "-o '%s' is an input; refusing to overwrite it",
					 a->output);
		}
	}
	return -1;
}

static struct mp_doc *report(const struct simulate_args *a, const struct mp_model *model,
			     const char *layout, const char *popularity,
			     const struct mp_simulate_result *res)
{
	struct mp_doc *root = mp_doc_map();
	struct mp_doc *sim = mp_doc_map();
	mp_doc_put(root, "simulate", sim);
	if (!sim) {
		return root;
	}
	if (a->plan) {
		mp_doc_put_string(sim, "plan", a->plan);
		if (a->phase) {
			mp_doc_put_string(sim, "phase", a->phase);
		}
	} else {
		mp_doc_put_string(sim, "layout", layout);
	}
	if (model && model->name) {
		mp_doc_put_string(sim, "model", model->name);
	}
	mp_doc_put_string(sim, "popularity", popularity);
	mp_doc_put_int(sim, "gpus", res->gpus);
	mp_doc_put_int(sim, "slots_per_gpu", res->slots_per_gpu);
	mp_doc_put_int(sim, "experts", res->n_experts);
	mp_doc_put_int(sim, "layers", res->n_layers);
	mp_doc_put_int(sim, "top_k", res->top_k);
	mp_doc_put_int(sim, "requests_per_gpu", a->requests);
	mp_doc_put_int(sim, "tokens_per_request", a->tokens_per_request);
	mp_doc_put_int(sim, "tokens_per_gpu", res->tokens_per_gpu);
	mp_doc_put_string(sim, "dispatch", res->prefer_local ? "prefer_local"
					   : mp_dispatch_rule_name(a->engine.d.rule));
	if (a->engine.d.rule == MP_DISPATCH_SGLANG) {
		mp_doc_put_string(sim, "ep_dispatch_algorithm", mp_dispatch_algorithm_name(a->engine.d.algorithm));
		mp_doc_put_int(sim, "gpus_per_node", a->engine.d.gpus_per_node ? a->engine.d.gpus_per_node
									: res->gpus);
		mp_doc_put_string(sim, "dispatch_source", "sgl-project/sglang 60d36e7 python/sglang/srt/eplb/"
				  "expert_location.py (_find_nearest_expert, compute_logical_to_rank_dispatch_"
				  "physical_map, _fair_choices); static: each rank's seeded choice, exactly");
	}
	mp_doc_put_int(sim, "steps", res->steps);
	mp_doc_put(sim, "seed", mp_doc_int((int64_t)res->seed));
	mp_doc_put_string(sim, "rng", "xoshiro256** seeded by SplitMix64");
	mp_doc_put_real(sim, "mean_visits_per_gpu", res->mean_visits);
	struct mp_doc *f = mp_doc_map();
	mp_doc_put(sim, "busiest_over_mean", f);
	if (f) {
		mp_doc_put_real(f, "mean", res->factor_mean);
		mp_doc_put_real(f, "p50", res->factor_p50);
		mp_doc_put_real(f, "p99", res->factor_p99);
		mp_doc_put_real(f, "max", res->factor_max);
	}
	if (res->n_layers > 1) {
		mp_doc_put(sim, "layer_mean", mp_doc_reals(res->layer_factor_mean, res->n_layers));
	}
	mp_doc_put(sim, "gpu_mean_visits", mp_doc_reals(res->gpu_mean_visits, res->gpus));
	return root;
}

/* The placement `plan` would make at this width: mp_place on the given
 * loads, or on uniform popularity (one layer; every layer is the same). */
static int place_layout(const struct simulate_args *a, const struct mp_loads *loads,
			uint32_t n_experts, uint32_t per_gpu, struct mp_placement *out,
			struct mp_diags *diags)
{
	struct mp_loads uniform;
	mp_loads_init(&uniform);
	if (!loads) {
		int rc = mp_loads_alloc(&uniform, 1, n_experts);
		if (rc) {
			return rc;
		}
		for (uint32_t e = 0; e < n_experts; e++) {
			uniform.w[e] = 1.0;
		}
		loads = &uniform;
	}
	struct mp_place_options opts;
	mp_place_options_init(&opts);
	opts.threads = a->threads;
	int rc = mp_place(loads, a->ep, per_gpu, &opts, out, diags);
	mp_loads_finish(&uniform);
	return rc;
}

/* The inputs named on the command line (model, plan, loads), read in that
 * order. Returns 0 or the first error's code, *failed then the file it
 * names (NULL on success). */
static int read_inputs(const struct simulate_args *a, struct mp_model *model,
		       struct mp_placement *map, struct mp_loads *loads, struct mp_diags *diags,
		       const char **failed)
{
	int rc = 0;
	if (a->model) {
		*failed = a->model;
		rc = mp_load_model(a->model, model, diags);
		if (rc) {
			return rc;
		}
	}
	if (a->plan) {
		*failed = a->plan;
		rc = mp_load_map(a->plan, a->phase, a->ep, map, diags);
		if (rc) {
			return rc;
		}
	}
	if (a->loads) {
		*failed = a->loads;
		rc = mp_load_loads(a->loads, loads, diags);
		if (rc == 0) {
			rc = cli_loads_fit_plan("simulate", a->plan, a->phase, a->model, a->loads, loads);
		}
		if (rc) {
			return rc;
		}
	}
	*failed = NULL;
	return 0;
}

/* engine_route's return after it said what is wrong on stderr. */
#define ROUTE_SAID 1

/* --engine sglang: the route of every visit (simulate-engine.c) into
 * *route for map (read from --plan, or placed when plan is NULL); NULL
 * for the other rules (uniform among the replicas). Returns 0,
 * ROUTE_SAID (the input's fault, said on stderr) or an MP_ code. */
static int engine_route(const struct simulate_args *a, const struct mp_model *model,
			const struct mp_placement *map, uint32_t **route)
{
	if (a->engine.d.rule != MP_DISPATCH_SGLANG) {
		return 0;
	}
	if (a->engine.d.gpus_per_node && map->gpus % a->engine.d.gpus_per_node != 0) {
		cli_error("--gpus-per-node %u does not divide the map's %u GPUs", a->engine.d.gpus_per_node,
			  map->gpus);
		return ROUTE_SAID;
	}
	bool dense = false;
	int rc = cli_simulate_route(a->plan, a->phase, model, &a->engine.d, map, route, &dense);
	if (rc == MP_EINVAL) {
		cli_error("%s: SGLang's dispatch needs every expert in a slot of every row",
			  a->plan ? a->plan : "the placed layout");
		return ROUTE_SAID;
	}
	bool draws = a->engine.d.algorithm == MP_DISPATCH_STATIC && a->engine.d.gpus_per_node &&
		     a->engine.d.gpus_per_node < map->gpus;
	if (rc == 0 && dense && draws && !cli_quiet) {
		fprintf(stderr, "moeplan simulate: %s: SGLang's static choices walk every row of the map "
			"--export writes; the layers the plan does not place are taken as dense (give --model "
			"to decide)\n", a->plan);
	}
	return rc;
}

/* An engine map (a row per hidden layer) against a recorder dump: the
 * dense layers' all-zero rows are skipped in map, loads and route alike
 * (no token reaches them), not simulated as uniform popularity. */
static int engine_map_dense(const struct simulate_args *a, const struct mp_model *model,
			    struct mp_placement *map, struct mp_loads *loads, uint32_t **route)
{
	if (cli_engine_of_file(a->plan) == MP_DISPATCH_EVEN || map->n_layers != loads->n_layers) {
		return 0; /* a moeplan plan's rows are its MoE layers already */
	}
	uint32_t *kept = NULL, n = 0;
	int rc = cli_engine_map_skip_dense("simulate", a->loads, a->model ? model : NULL, loads, &kept, &n);
	if (rc == 0 && kept) {
		rc = cli_map_select_rows(map, kept, n, map);
	}
	if (rc == 0 && kept && *route) {
		rc = cli_simulate_route_rows(route, kept, n, map->gpus, map->n_experts);
	}
	free(kept);
	return rc;
}

/* The plan and the loads agree with n_experts (the model's, else the
 * map's, else the loads'), and loads whose rows name their layers keep
 * the plan's rows for those layers. False when they do not (said in
 * diags; *rc 0) or on an error (*rc, *failed the file it names). */
static bool match_inputs(const struct simulate_args *a, const struct mp_model *model,
			 struct mp_placement *map, struct mp_loads *loads, uint32_t n_experts,
			 uint32_t **route, struct mp_diags *diags, int *rc, const char **failed)
{
	if (a->plan && a->model && map->n_experts > model->routed_experts) {
		mp_diags_add(diags, a->plan, 0, 0, MP_EINVAL,
			     "expert ids go up to %u but the model '%s' has %u routed experts",
			     map->n_experts - 1, a->model, model->routed_experts);
		return false;
	}
	if (a->plan) {
		/* A map's expert count is its largest id + 1; the model's
		 * count is authoritative when both are known. */
		map->n_experts = n_experts;
		*failed = a->plan;
		*rc = engine_route(a, a->model ? model : NULL, map, route);
		if (*rc) {
			return false;
		}
		*failed = NULL;
	}
	if (a->loads && loads->n_experts != n_experts) {
		mp_diags_add(diags, a->loads, 0, 0, MP_EINVAL,
			     "%u experts per layer, expected %u (the %s)", loads->n_experts,
			     n_experts, a->model ? "model's" : "map's");
		return false;
	}
	if (a->plan && a->loads && cli_map_rows_named(map, loads)) {
		/* Loads whose rows name their layers (README "Layer identity")
		 * simulate those rows of the plan, matched by layer as check
		 * does (map-rows.c), never by position or one row for all. */
		uint32_t *rows = NULL;
		*failed = a->plan;
		*rc = cli_map_rows_for(a->plan, a->phase, map, a->loads, loads, &rows);
		if (*rc == 0) {
			*rc = cli_map_select_rows(map, rows, loads->n_layers, map);
		}
		if (*rc == 0 && *route) {
			*rc = cli_simulate_route_rows(route, rows, loads->n_layers, map->gpus, map->n_experts);
		}
		free(rows);
		if (*rc) {
			*rc = *rc == MP_EINVAL ? 0 : *rc; /* MP_EINVAL: said on stderr */
			return false;
		}
		*failed = NULL;
		*rc = engine_map_dense(a, model, map, loads, route);
		return *rc == 0;
	}
	return true;
}

/* The popularity to report (the loads file, "uniform", or the plan's
 * own); with a plan, *plan_top_k gets the top-k it records (0 if none),
 * and without --loads its expert_loads become the loads (a->loads then
 * names the plan). */
static const char *plan_traffic(struct simulate_args *a, struct mp_loads *loads,
				uint32_t *plan_top_k)
{
	const char *popularity = a->loads ? a->loads : "uniform";
	*plan_top_k = 0;
	if (!a->plan) {
		return popularity;
	}
	/* What the plan records: its top-k and the popularity it was
	 * planned for (routed unless --loads says otherwise). */
	struct mp_loads planned;
	mp_loads_init(&planned);
	/* A map that is not a moeplan plan (a torch .pt, an engine's
	 * JSON) records neither: its diagnostics are not the user's. */
	struct mp_diags quiet;
	mp_diags_init(&quiet);
	if (mp_load_plan_traffic(a->plan, plan_top_k, &planned, &quiet) != 0) {
		*plan_top_k = 0;
		mp_loads_finish(&planned);
		mp_loads_init(&planned);
	}
	mp_diags_finish(&quiet);
	if (!a->loads && planned.n_layers > 0) {
		mp_loads_finish(loads);
		*loads = planned;
		a->loads = a->plan;
		popularity = "the plan's expert_loads";
	} else {
		mp_loads_finish(&planned);
	}
	return popularity;
}

/* The simulator's messages about the loads (rows of popularity, their
 * count against the map's) name no file: they get the loads file's name. */
static void name_loads_diags(struct mp_diags *diags, const char *loads)
{
	for (size_t i = 0; loads && i < diags->count; i++) {
		struct mp_diag *d = &diags->items[i];
		if (!d->file && (strncmp(d->message, "loads row", 9) == 0 ||
				 strstr(d->message, "but the loads have") != NULL)) {
			d->file = strdup(loads);
		}
	}
}

int cmd_simulate(int argc, char **argv)
{
	struct simulate_args a = {
		.tokens_per_request = 0, /* 0: 1 + the model's drafter stages */
		.steps = MP_SIMULATE_DEFAULT_STEPS,
		.seed = MP_SIMULATE_DEFAULT_SEED,
	};
	int status = parse_args(argc, argv, &a);
	if (status >= 0) {
		return status;
	}
	status = EXIT_INPUT;
	int rc = 0;
	const char *failed = NULL;
	struct mp_diags diags;
	struct mp_model model;
	struct mp_placement map;
	struct mp_loads loads;
	struct mp_simulate_result res;
	struct mp_doc *doc = NULL;
	uint32_t *route = NULL;
	mp_diags_init(&diags);
	mp_model_init(&model);
	mp_placement_init(&map);
	mp_loads_init(&loads);
	mp_simulate_result_init(&res);

	rc = read_inputs(&a, &model, &map, &loads, &diags, &failed);
	if (rc) {
		goto out;
	}
	if (a.tokens_per_request == 0) {
		/* the default of plan, fit and roofline */
		a.tokens_per_request = 1 + (a.model ? model.drafter.moe_stages : 0);
		if ((uint64_t)a.requests * a.tokens_per_request > UINT32_MAX) {
			status = cli_usage("simulate", "--requests %u x %u tokens per request is too large",
					   a.requests, a.tokens_per_request);
			goto out;
		}
	}
	uint32_t n_experts = a.model ? model.routed_experts
				     : a.plan  ? map.n_experts
						: loads.n_experts;
	if (!match_inputs(&a, &model, &map, &loads, n_experts, &route, &diags, &rc, &failed)) {
		goto out;
	}
	uint32_t plan_top_k = 0;
	const char *popularity = plan_traffic(&a, &loads, &plan_top_k);
	struct mp_simulate_options opts;
	mp_simulate_options_init(&opts);
	opts.tokens_per_gpu = a.requests * a.tokens_per_request;
	opts.top_k = a.top_k ? a.top_k : a.model ? model.top_k : plan_top_k;
	if (opts.top_k == 0) {
		status = cli_usage("simulate", "%s does not record top-k: give --top-k K or --model M",
				   a.plan);
		goto out;
	}
	/* No plan and more slots than experts: place the redundant replicas
	 * with the solver for the given popularity (uniform without --loads),
	 * as plan does; a round-robin layout would skew the loads by itself. */
	const char *layout = "round_robin";
	uint32_t per_gpu = a.plan || !a.ep ? 0 : a.slots ? a.slots / a.ep : (n_experts + a.ep - 1) / a.ep;
	if (!a.plan && (uint64_t)per_gpu * a.ep > n_experts) {
		rc = place_layout(&a, a.loads ? &loads : NULL, n_experts, per_gpu, &map, &diags);
		if (rc) {
			goto out;
		}
		layout = "placed";
		rc = engine_route(&a, NULL, &map, &route);
		if (rc) {
			goto out;
		}
	}
	opts.route = route;
	opts.steps = a.steps;
	opts.seed = a.seed;
	opts.prefer_local = a.prefer_local;
	opts.threads = a.threads;
	opts.gpus = a.ep;
	opts.slots_per_gpu = a.slots && a.ep ? a.slots / a.ep : 0;
	opts.n_experts = n_experts;
	bool placed = strcmp(layout, "placed") == 0;
	rc = mp_simulate(a.plan || placed ? &map : NULL, a.loads ? &loads : NULL, &opts, &res, &diags);
	if (rc) {
		name_loads_diags(&diags, a.loads);
		goto out;
	}
	doc = report(&a, a.model ? &model : NULL, layout, popularity, &res);
	status = cli_emit(doc, a.output, a.json);
out:
	cli_print_diags(&diags);
	if (rc && rc != ROUTE_SAID && diags.count == 0) {
		cli_error("%s: %s", failed ? failed : "simulate", mp_strerror(rc));
	}
	mp_doc_destroy(doc);
	free(route);
	mp_simulate_result_finish(&res);
	mp_loads_finish(&loads);
	mp_placement_finish(&map);
	mp_model_finish(&model);
	mp_diags_finish(&diags);
	return status;
}
