/* moeplan search: the deployment search of a scenario (deploy.h): Pareto
 * fronts of both phases, the chosen configurations, the pools, the
 * co-located alternative and the chosen widths' placements. */
#include "cli.h"
#include "kernel-note.h"
#include "trust-note.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/deploy.h"
#include "moeplan/loader.h"
#include "moeplan/plots.h"

enum {
	OPT_GPUS = CLI_OPT_LONG,
	OPT_RATE,
	OPT_ISL,
	OPT_OSL,
	OPT_CACHED,
	OPT_TPOT,
	OPT_TTFT,
	OPT_BATCHES,
	OPT_SVG,
	OPT_REPORT,
	OPT_NO_PLACEMENT,
	OPT_TIME_LIMIT,
	OPT_THREADS,
	OPT_EXPORT,
	OPT_EXPORT_OUTPUT,
	OPT_ACCEPTANCE,
	OPT_OVERLAPS,
	OPT_ENGINE,
	OPT_KERNELS,
};

static const struct cli_opt search_options[] = {
	{"gpus", OPT_GPUS, "N", "GPU budget of both pools together (default: the scenario's search.gpus)", NULL},
	{"request-rate", OPT_RATE, "R", "size the pools for R requests/s instead of a budget (default: search.request_rate)", NULL},
	{"isl", OPT_ISL, "L", "mean prompt tokens per request (default: search.isl, else the prefill phase's isl, else 4096)", NULL},
	{"osl", OPT_OSL, "L", "mean output tokens per request (default: search.osl, else the decode phase's osl, else 1024)", NULL},
	{"cached", OPT_CACHED, "F", "fraction of prompt tokens served from a prefix cache, [0, 1) (default 0)", NULL},
	{"tpot", OPT_TPOT, "T", "decode target: time per output token, e.g. '50 ms' (default: search.tpot, else decode slo.tpot)", NULL},
	{"ttft", OPT_TTFT, "T", "prefill target: time to first token, e.g. '2 s' (default: search.ttft, else prefill slo.ttft)", NULL},
	{"acceptance", OPT_ACCEPTANCE, "A", "decode: fraction of drafted tokens accepted, [0, 1] (default: search.acceptance,\n"
		"                                 else the decode phase's acceptance, else 0.75 with a drafter)", NULL},
	{"overlaps", OPT_OVERLAPS, "LIST", "overlap modes to search, comma-separated from none, two_batch, full (default: all\n"
		"                                 three; an engine without fused dispatch-GEMM-combine kernels, such as SGLang or\n"
		"                                 vLLM with DeepEP, runs none,two_batch)", NULL},
	{"engine", OPT_ENGINE, "NAME|FILE", "search for this engine: even (an ideal engine), sglang, vllm\n"
		"                                 (plans/engines/NAME.yaml) or a profile file: only the overlap modes\n"
		"                                 it runs, its kernels, memory rule and dispatch (default: the\n"
		"                                 scenario's engine:, else even)", "even sglang vllm"},
	{"batches", OPT_BATCHES, "GRID", "batches: geometric (default, ratio 2^(1/8)) or all (decode 1 .. HBM limit,\n"
		"                                 prefill every 1,024-token chunk)", "geometric all"},
	CLI_OPT_FORMAT_TEXT,
	{"output", 'o', "FILE", "write the result to FILE atomically ('-' = stdout, the default)", CLI_COMPLETE_FILE},
	{"svg", OPT_SVG, "FILE", "draw the decode Pareto front (SVG) to FILE (default: none)", CLI_COMPLETE_FILE},
	{"report", OPT_REPORT, "FILE.md", "a Markdown report with both fronts and the pools bar next to it (default: none)", CLI_COMPLETE_FILE},
	{"no-placement", OPT_NO_PLACEMENT, NULL, "skip placement in the loop and the chosen widths' placements (factor 1)", NULL},
	{"time-limit", OPT_TIME_LIMIT, "SECONDS", "wall-clock safety limit of each placement run (default: the scenario's)", NULL},
	{"threads", OPT_THREADS, "N", "solver threads (default: number of CPUs; results do not depend on it)", NULL},
	{"export", OPT_EXPORT, "ENGINE", "write the chosen decode placement as an sglang map (--init-expert-location JSON)\n"
		"                                 to -o instead of the result, or to --export-output (default: none)", "sglang"},
	{"export-output", OPT_EXPORT_OUTPUT, "FILE.json", "with --export: the engine map goes to FILE.json and the result to -o (default: none)", CLI_COMPLETE_FILE},
	{"kernels", OPT_KERNELS, "FILE|none", "price every step from this kernel table (hardware/kernels/GPU.csv) in both\n"
		"                                 pools; none = the scalar factors (default: the table each phase's\n"
		"                                 hardware file names in `kernels:`, else the scalar factors)", CLI_COMPLETE_FILE},
	CLI_OPT_HELP,
	{0},
};

const struct cli_command_help cmd_search_help = {
	.name = "search",
	.synopsis = "moeplan search SCENARIO [--gpus N | --request-rate R] [--isl L] [--osl L]\n"
		    "                      [--tpot T] [--ttft T] [--format text|yaml|json] [-o FILE] [--svg FILE]",
	.description =
		"Searches the deployments of a scenario: per phase every EP width, attention\n"
		"(data-parallel or tensor-parallel groups of 2..8 within the scale-up domain),\n"
		"overlap mode (none, two_batch, full) and batch per GPU, each predicted with the\n"
		"serving-step model. Keeps the Pareto front of output tokens/s per GPU against\n"
		"tokens/s per user (decode) and of input tokens/s per GPU against TTFT (prefill),\n"
		"picks the most throughput that meets the targets and says why the runner-up lost.\n"
		"Then sizes the prefill and decode pools (xPyD) for the workload in whole EP\n"
		"groups, with the KV-cache transfer between them, compares the co-located\n"
		"alternative on the same GPUs, and places the chosen widths' experts. Placements\n"
		"are solved only for widths that can win (a width's throughput with a perfectly\n"
		"balanced placement bounds it). Settings come from the scenario's `search:` block;\n"
		"options override them.",
	.options = search_options,
	.examples =
		"  moeplan search plans/deepseek-v3-day.yaml\n"
		"  moeplan search plans/default.yaml --gpus 144 --isl 8192 --osl 1024 --tpot '50 ms' --svg front.svg\n",
};

/* ---------------------------------------------------------------- text */

struct run {
	const struct mp_scenario *sc;
	const struct mp_deploy_options *opts;
	const struct mp_deploy *d;
	bool acceptance_cli;  /* --acceptance given */
};

static const char *att_text(uint32_t tp, char *buf, size_t size)
{
	if (tp > 1) {
		snprintf(buf, size, "tp:%u", tp);
	} else {
		snprintf(buf, size, "dp");
	}
	return buf;
}

static void print_point(FILE *out, const struct mp_search_point *p, const char *mark)
{
	char att[16];
	bool decode = p->cfg.phase == MP_PHASE_DECODE;
	fprintf(out, "  %1s EP%-4u %-5s %-9s %9.6g %6.3f %9.3f %10.4g %10.0f\n", mark, p->cfg.ep,
		att_text(p->cfg.attention_tp, att, sizeof(att)), mp_deploy_overlap_name(p->cfg.overlap),
		p->cfg.batch, p->cfg.busiest_factor, 1e3 * p->eval.step_s,
		decode ? p->eval.tokens_per_s_per_user : p->eval.ttft_s, p->eval.tokens_per_s_per_gpu);
}

static void print_phase(FILE *out, const struct mp_search_phase *ph, const char *hw)
{
	bool decode = ph->phase == MP_PHASE_DECODE;
	fprintf(out, "\n%s front on %s (%zu points of %zu configurations; placements solved: %zu)\n",
		decode ? "decode" : "prefill", hw, ph->n_front, ph->evaluated, ph->placements);
	fprintf(out, "    %-5s %-5s %-9s %9s %6s %9s %10s %10s\n", "width", "attn", "overlap",
		decode ? "req/GPU" : "chunk", "factor", "step ms", decode ? "tok/s/user" : "TTFT s",
		decode ? "out tok/s" : "in tok/s");
	/* At most 24 rows, evenly spread, and the chosen one. */
	size_t n = ph->n_front, stride = n > 24 ? (n + 23) / 24 : 1;
	for (size_t k = 0; k < n; k++) {
		size_t i = ph->front[k];
		bool chosen = ph->has_choice && i == ph->chosen;
		if (chosen || k % stride == 0 || k == n - 1) {
			print_point(out, &ph->points[i], chosen ? "*" : "");
		}
	}
	if (ph->has_choice) {
		const struct mp_search_point *c = &ph->points[ph->chosen];
		bool on_front = false;
		for (size_t k = 0; k < n; k++) {
			on_front = on_front || ph->front[k] == ph->chosen;
		}
		if (!on_front) {
			print_point(out, c, "*");
		}
		char att[16];
		if (decode) {
			fprintf(out, "chosen decode: EP%u, %s attention, overlap %s, %.6g requests/GPU: %.0f "
				"output tokens/s per GPU at %.4g tokens/s per user (TPOT %.4g ms)\n",
				c->cfg.ep, att_text(c->cfg.attention_tp, att, sizeof(att)),
				mp_deploy_overlap_name(c->cfg.overlap), c->cfg.batch,
				c->eval.tokens_per_s_per_gpu, c->eval.tokens_per_s_per_user,
				1e3 / c->eval.tokens_per_s_per_user);
		} else {
			fprintf(out, "chosen prefill: EP%u, %s attention, overlap %s, %.6g tokens/GPU per step: "
				"%.0f input tokens/s per GPU, TTFT %.4g s\n", c->cfg.ep,
				att_text(c->cfg.attention_tp, att, sizeof(att)),
				mp_deploy_overlap_name(c->cfg.overlap), c->cfg.batch,
				c->eval.tokens_per_s_per_gpu, c->eval.ttft_s);
		}
	}
	fprintf(out, "  %s\n", ph->why);
	cli_trust_phase(out, "  ", decode);
}

/* The chosen point again with its full placement's busiest-GPU factor. */
static void print_final(FILE *out, const struct mp_deploy *d, const struct mp_search_point *p)
{
	if (!d->has_final || !d->placed) {
		return;
	}
	if (p->cfg.phase == MP_PHASE_DECODE) {
		fprintf(out, "  with the full placement (%u layers): busiest-GPU factor %.3f, %.0f output "
			"tokens/s per GPU at %.4g tokens/s per user\n", d->decode_placement.n_layers,
			p->cfg.busiest_factor, p->eval.tokens_per_s_per_gpu, p->eval.tokens_per_s_per_user);
	} else {
		fprintf(out, "  with the full placement (%u layers): busiest-GPU factor %.3f, %.0f input "
			"tokens/s per GPU, TTFT %.4g s\n", d->prefill_placement.n_layers,
			p->cfg.busiest_factor, p->eval.tokens_per_s_per_gpu, p->eval.ttft_s);
	}
}

static int print_search(void *user, FILE *out)
{
	const struct run *r = user;
	const struct mp_deploy *d = r->d;
	const struct mp_deploy_options *o = r->opts;
	const struct mp_scenario *sc = r->sc;
	fprintf(out, "search: %s (%s); ", sc->name ? sc->name : "", sc->model.name ? sc->model.name : "model");
	if (o->gpus) {
		fprintf(out, "%u GPUs", o->gpus);
	} else {
		fprintf(out, "%.6g requests/s", o->request_rate);
	}
	fprintf(out, ", prompts %.6g tokens (%.1f%% cached), outputs %.6g tokens", o->isl,
		100 * o->cached_fraction, o->osl);
	if (o->tpot_s > 0) {
		fprintf(out, ", TPOT <= %.4g ms", 1e3 * o->tpot_s);
	}
	if (o->ttft_s > 0) {
		fprintf(out, ", TTFT <= %.4g s", o->ttft_s);
	}
	if (sc->engine.name) {
		char modes[64];
		mp_engine_overlaps_text(&sc->engine, modes, sizeof(modes));
		fprintf(out, "; engine %s (overlap %s)", sc->engine.name, modes);
	}
	double tpr = sc->decode.tokens_per_request >= 1 ? sc->decode.tokens_per_request : 1;
	fprintf(out, "; decode %.6g tokens per request per step, acceptance %.4g (%s)", tpr,
		o->acceptance, r->acceptance_cli ? "--acceptance"
				: sc->search.acceptance >= 0 ? "search: block"
				: sc->decode.acceptance >= 0 ? "decode phase"
				: "default");
	fputc('\n', out);
	char ka[300], kb[300];
	fprintf(out, "kernel efficiency (a table prices the kernels it has rows for; `moeplan step` marks "
		     "each term): prefill %s; decode %s\n",
		cli_kernel_source_hw(&sc->prefill.hardware, d->prefill_table_priced, ka, sizeof(ka)),
		cli_kernel_source_hw(&sc->decode.hardware, d->decode_table_priced, kb, sizeof(kb)));
	print_phase(out, &d->prefill, sc->prefill.hardware.name ? sc->prefill.hardware.name : "prefill GPUs");
	print_final(out, d, &d->prefill_final);
	print_phase(out, &d->decode, sc->decode.hardware.name ? sc->decode.hardware.name : "decode GPUs");
	print_final(out, d, &d->decode_final);
	if (d->has_pools) {
		const struct mp_pools *p = &d->pools;
		char kv[32];
		cli_si(p->kv_bytes_per_request, "B", kv, sizeof(kv));
		fprintf(out, "\npools (xPyD): prefill %u GPUs (%u x EP%u), decode %u GPUs (%u x EP%u); "
			"prefill:decode %.3g, prefill share %.1f%%", p->prefill_gpus, p->prefill_units,
			d->prefill_final.cfg.ep, p->decode_gpus, p->decode_units, d->decode_final.cfg.ep,
			p->ratio, 100 * p->prefill_share);
		if (p->spare_gpus) {
			fprintf(out, ", %u GPUs spare", p->spare_gpus);
		}
		fprintf(out, "\n  %.4g requests/s (prefill %.0f%% busy, decode %.0f%%), %.4g requests/s per GPU, "
			"%.0f input + %.0f output tokens/s per GPU end to end\n", p->request_rate,
			100 * p->prefill_utilisation, 100 * p->decode_utilisation,
			p->requests_per_s_per_gpu, p->input_tokens_per_s_per_gpu,
			p->output_tokens_per_s_per_gpu);
		fprintf(out, "  KV cache per request %s, %.3g ms over one scale-out NIC; all transfers use "
			"%.1f%% of the prefill pool's NIC bandwidth%s\n", kv, 1e3 * p->kv_transfer_s,
			100 * p->kv_link_utilisation,
			p->kv_link_bound ? " (the NICs, not the arithmetic, size the prefill pool)" : "");
	} else {
		fprintf(out, "\npools: none: %s\n", d->pools_why);
	}
	if (d->has_colocated) {
		const struct mp_colocated *c = &d->colo;
		const struct mp_search_point *dp = &d->decode.points[d->colo_decode];
		const struct mp_search_point *pp = &d->colocated.points[d->colo_prefill];
		fprintf(out, "co-located on the decode GPUs: EP%u, %u GPUs (%u group%s), decode %.6g req/GPU, "
			"prefill chunk %.6g: %.4g requests/s, %.4g per GPU; prefill takes %.1f%% of GPU time, "
			"%.4g tokens/s per user\n", dp->cfg.ep, c->gpus, c->units, c->units == 1 ? "" : "s",
			dp->cfg.batch,
			pp->cfg.batch, c->request_rate, c->requests_per_s_per_gpu,
			100 * c->prefill_time_share, c->tokens_per_s_per_user);
	} else {
		fprintf(out, "co-located: no configuration meets the targets\n");
	}
	if (d->has_pools || d->has_colocated) {
		fprintf(out, "winner: %s", d->colocated_wins ? "co-located" : "disaggregated pools");
		if (d->has_pools && d->has_colocated) {
			double a = d->pools.requests_per_s_per_gpu, b = d->colo.requests_per_s_per_gpu;
			fprintf(out, " (%.4g against %.4g requests/s per GPU, %+.1f%%)",
				d->colocated_wins ? b : a, d->colocated_wins ? a : b,
				100 * (d->colocated_wins ? b / a - 1 : a / b - 1));
		}
		fputc('\n', out);
	}
	if (d->loop_time_limits) {
		fprintf(out, "warning: %zu placement(s) in the loop stopped at the wall-clock limit: their "
			"busiest-GPU factors, so the choice, may depend on the machine's speed (raise "
			"--time-limit)\n", d->loop_time_limits);
	}
	if (d->placed) {
		const struct mp_placement *pl[2] = {&d->prefill_placement, &d->decode_placement};
		const char *names[2] = {"prefill", "decode"};
		for (int i = 0; i < 2; i++) {
			double worst = 1;
			for (uint32_t l = 0; l < pl[i]->n_layers; l++) {
				const struct mp_layer_placement *lp = &pl[i]->layers[l];
				if (lp->mean_load > 0) {
					worst = fmax(worst, lp->max_load / lp->mean_load);
				}
			}
			fprintf(out, "placement %s: EP%u, %u slots per GPU, %u layers, worst busiest/mean %.4f\n",
				names[i], pl[i]->gpus, pl[i]->slots_per_gpu, pl[i]->n_layers, worst);
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- main */

struct args {
	const char *path, *output, *svg, *report, *export_format, *export_output;
	enum cli_output format;
	bool gpus_given, rate_given;
	struct mp_deploy_options cli;  /* values given on the command line */
	bool isl, osl, cached, tpot, ttft, acceptance, batches, no_placement, time_limit, threads;
	struct mp_engine_profile engine; /* --engine */
	bool have_engine;
	const char *kernels;             /* --kernels FILE|none, or NULL */
};

/* --overlaps none,two_batch,full -> bits (1 << mp_step_overlap). */
static bool parse_overlaps(const char *arg, unsigned *mask)
{
	char buf[128];
	if (snprintf(buf, sizeof(buf), "%s", arg) >= (int)sizeof(buf)) {
		cli_usage("search", "--overlaps: expected a comma-separated list of none, two_batch, "
			  "full, got '%s' (too long)", arg);
		return false;
	}
	*mask = 0;
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		enum mp_step_overlap o;
		if (mp_step_overlap_parse(tok, &o) != 0) {
			cli_usage("search", "--overlaps: expected a comma-separated list of none, "
				  "two_batch, full, got '%s' ('%s' is none of them)", arg, tok);
			return false;
		}
		*mask |= 1u << o;
	}
	if (*mask == 0) {
		cli_usage("search", "--overlaps: expected a comma-separated list of none, two_batch, "
			  "full, got '%s' (no mode)", arg);
		return false;
	}
	return true;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	struct cli_parser parser;
	cli_parser_init(&parser, &cmd_search_help);
	int c;
	bool ok = true;
	while (ok && (c = cli_parser_next(&parser, argc, argv)) >= 0) {
		switch (c) {
		case OPT_GPUS:
			ok = cli_parse_u32("search", "gpus", optarg, 1, 65536, &a->cli.gpus);
			a->gpus_given = true;
			break;
		case OPT_RATE:
			ok = cli_parse_double("search", "request-rate", optarg, 1e-9, 1e12, &a->cli.request_rate);
			a->rate_given = true;
			break;
		case OPT_ISL:
			ok = cli_parse_count("search", "isl", optarg, 1, false, 1e9, &a->cli.isl);
			a->isl = true;
			break;
		case OPT_OSL:
			ok = cli_parse_count("search", "osl", optarg, 1, false, 1e9, &a->cli.osl);
			a->osl = true;
			break;
		case OPT_CACHED:
			ok = cli_parse_double("search", "cached", optarg, 0, 0.999999, &a->cli.cached_fraction);
			a->cached = true;
			break;
		case OPT_TPOT:
			ok = cli_parse_quantity("search", "tpot", optarg, "seconds", 1e-9, 1e6, &a->cli.tpot_s);
			a->tpot = true;
			break;
		case OPT_TTFT:
			ok = cli_parse_quantity("search", "ttft", optarg, "seconds", 1e-9, 1e6, &a->cli.ttft_s);
			a->ttft = true;
			break;
		case OPT_ACCEPTANCE:
			ok = cli_parse_double("search", "acceptance", optarg, 0, 1, &a->cli.acceptance);
			a->acceptance = true;
			break;
		case OPT_OVERLAPS:
			ok = parse_overlaps(optarg, &a->cli.overlap_mask);
			break;
		case OPT_KERNELS:
			if (!cli_kernels_arg_ok("search", optarg)) {
				return EXIT_USAGE;
			}
			a->kernels = optarg;
			break;
		case OPT_ENGINE: {
			int st = cli_engine_profile("search", optarg, &a->engine);
			if (st != EXIT_OK) {
				return st;
			}
			a->have_engine = true;
			break;
		}
		case OPT_BATCHES:
			if (strcmp(optarg, "all") == 0 || strcmp(optarg, "geometric") == 0) {
				a->cli.all_batches = strcmp(optarg, "all") == 0;
				a->batches = true;
			} else {
				ok = false;
				cli_usage("search", "--batches '%s': expected all or geometric", optarg);
			}
			break;
		case 'f':
			ok = cli_parse_output("search", optarg, &a->format);
			break;
		case 'o':
			a->output = optarg;
			break;
		case OPT_SVG:
			a->svg = optarg;
			break;
		case OPT_REPORT:
			a->report = optarg;
			break;
		case OPT_NO_PLACEMENT:
			a->no_placement = true;
			break;
		case OPT_TIME_LIMIT:
			ok = cli_parse_double("search", "time-limit", optarg, 0.001, 1e6,
					      &a->cli.place.time_limit_s);
			a->time_limit = true;
			break;
		case OPT_THREADS:
			ok = cli_parse_u32("search", "threads", optarg, 1, 1024, &a->cli.place.threads);
			a->threads = true;
			break;
		case OPT_EXPORT:
			ok = cli_parse_export("search", optarg);
			a->export_format = optarg;
			break;
		case OPT_EXPORT_OUTPUT:
			a->export_output = optarg;
			break;
		default: /* every id of the table has its case above */
			break;
		}
	}
	if (c == CLI_PARSE_HELP || c == CLI_PARSE_ERROR) {
		return c == CLI_PARSE_HELP ? -1 : EXIT_USAGE;
	}
	if (!ok) {
		return EXIT_USAGE;
	}
	if (argc - optind != 1) {
		return cli_usage("search", "expected one SCENARIO, got %d arguments", argc - optind);
	}
	a->path = argv[optind];
	if (a->export_output && !a->export_format) {
		return cli_usage("search", "--export-output needs --export sglang");
	}
	if (a->export_format && a->no_placement) {
		return cli_usage("search", "--export needs the placement: drop --no-placement");
	}
	if (a->export_format &&
	    !cli_export_name_ok("search", a->export_output ? a->export_output : a->output)) {
		return EXIT_USAGE;
	}
	if (a->gpus_given && a->rate_given) {
		return cli_usage("search", "give either --gpus or --request-rate, not both");
	}
	if (a->report && strcmp(a->report, "-") == 0) {
		return cli_usage("search", "--report needs a file name: its pictures are written next to it");
	}
	if (a->svg && strcmp(a->svg, "-") == 0 && (!a->output || strcmp(a->output, "-") == 0)) {
		return cli_usage("search", "--svg - and the result would both go to stdout; give -o FILE");
	}
	return EXIT_OK;
}

/* The scenario's options, then the command line's over them. */
static void merge(const struct args *a, struct mp_deploy_options *o)
{
	if (a->gpus_given) {
		o->gpus = a->cli.gpus;
		o->request_rate = 0;
	}
	if (a->rate_given) {
		o->request_rate = a->cli.request_rate;
		o->gpus = 0;
	}
	o->isl = a->isl ? a->cli.isl : o->isl;
	o->osl = a->osl ? a->cli.osl : o->osl;
	o->cached_fraction = a->cached ? a->cli.cached_fraction : o->cached_fraction;
	o->tpot_s = a->tpot ? a->cli.tpot_s : o->tpot_s;
	o->ttft_s = a->ttft ? a->cli.ttft_s : o->ttft_s;
	o->acceptance = a->acceptance ? a->cli.acceptance : o->acceptance;
	o->all_batches = a->batches ? a->cli.all_batches : o->all_batches;
	o->overlap_mask = a->cli.overlap_mask ? a->cli.overlap_mask : o->overlap_mask;
	o->placement = !a->no_placement;
	if (a->time_limit) {
		o->place.time_limit_s = a->cli.place.time_limit_s;
	}
	if (a->threads) {
		o->place.threads = a->cli.place.threads;
	}
}

/* The launch line of --export (issue 24) for the chosen decode placement:
 * its nodes, the dispatch algorithm it was placed for and MTP (as plan's;
 * the search audits no memory fraction per point: plan gives that). */
static void search_set_launch(const struct mp_deploy *d, const struct mp_scenario *sc,
			      const struct mp_deploy_options *opts)
{
	struct mp_export_launch l;
	mp_export_launch_init(&l, &d->decode_placement);
	l.gpus_per_node = d->decode_placement.gpus_per_node;
	if (opts->place.dispatch.rule == MP_DISPATCH_SGLANG) {
		l.ep_dispatch_algorithm = mp_dispatch_algorithm_name(opts->place.dispatch.algorithm);
		if (opts->place.dispatch.gpus_per_node) {
			l.gpus_per_node = opts->place.dispatch.gpus_per_node;
		}
	}
	double drafted = sc->decode.tokens_per_request - 1.0;
	if (sc->model.drafter.moe_stages > 0 && drafted >= 0.5) {
		l.mtp_steps = (uint32_t)lround(drafted);
	}
	cli_export_set_launch(&l);
}

int cmd_search(int argc, char **argv)
{
	struct args a = {0};
	int status = parse_args(argc, argv, &a);
	if (status != EXIT_OK) {
		mp_engine_profile_finish(&a.engine);
		return status < 0 ? EXIT_OK : status;
	}
	/* Every file the run writes, the report's pictures included. */
	const char *outputs[4 + CLI_REPORT_MAX_FILES] = {a.output, a.svg, a.report, a.export_output};
	size_t n_outputs = 4;
	struct cli_report_files pictures = {0};
	if (a.report && strcmp(a.report, "-") != 0 && cli_search_report_files(a.report, &pictures)) {
		for (size_t i = 0; i < pictures.count; i++) {
			outputs[n_outputs++] = pictures.path[i];
		}
	}
	if (!cli_outputs_spare_inputs("search", outputs, n_outputs, (const char *[]){a.path}, 1)) {
		mp_engine_profile_finish(&a.engine);
		return EXIT_USAGE;
	}
	struct mp_diags diags;
	mp_diags_init(&diags);
	struct mp_scenario sc;
	mp_scenario_init(&sc);
	struct mp_deploy d;
	mp_deploy_init(&d);
	struct mp_deploy_options opts;
	struct cli_layers layers = {0};
	status = EXIT_INPUT;
	int rc = mp_load_scenario(a.path, &sc, &diags);
	if (rc) {
		goto out;
	}
	status = cli_scenario_kernels("search", &sc, a.kernels);
	if (status != EXIT_OK) {
		goto out;
	}
	cli_warn_step_gaps(sc.model_path, &sc.model);
	const char *inputs[] = {sc.model_path, sc.prefill.hardware_path, sc.decode.hardware_path,
				sc.traffic.observed.path};
	if (!cli_outputs_spare_inputs("search", outputs, n_outputs, inputs, 4)) {
		status = EXIT_USAGE;
		goto out;
	}
	status = cli_check_outputs(outputs, n_outputs);
	if (status != EXIT_OK) {
		goto out;
	}
	mp_deploy_options_init(&opts, &sc);
	merge(&a, &opts);
	status = cli_scenario_engine("search", &sc, &a.engine, a.have_engine, &(struct cli_engine){0},
				     &opts.place);
	if (status != EXIT_OK) {
		goto out;
	}
	if (sc.engine.overlaps && opts.overlap_mask && !(sc.engine.overlaps & opts.overlap_mask)) {
		char modes[64];
		mp_engine_overlaps_text(&sc.engine, modes, sizeof(modes));
		status = cli_usage("search", "--overlaps: engine %s runs none of them (it runs %s)",
				   sc.engine.name, modes);
		goto out;
	}
	if (!opts.gpus && !(opts.request_rate > 0)) {
		status = cli_usage("search", "no GPU budget or request rate: give --gpus N or --request-rate R "
					     "(or search.gpus / search.request_rate in the scenario)");
		goto out;
	}
	rc = mp_deploy_search(&sc, &opts, &d, &diags);
	if (rc) {
		status = rc == MP_ELIMIT ? EXIT_SOLVER : EXIT_INPUT;
		goto out;
	}
	status = EXIT_OK;
	if (a.svg) {
		status = cli_search_front(a.svg, &d, &sc, &opts, true);
	}
	if (status == EXIT_OK && a.report) {
		status = cli_search_report(a.report, &d, &sc, &opts, a.path);
	}
	if (status == EXIT_OK) {
		struct run r = {.sc = &sc, .opts = &opts, .d = &d, .acceptance_cli = a.acceptance};
		struct mp_doc *doc = a.format == CLI_OUTPUT_TEXT ? NULL : mp_deploy_to_doc(&d, &sc, &opts);
		if (doc && sc.engine.name) {
			mp_doc_put(doc, "engine", mp_engine_profile_to_doc(&sc.engine));
		}
		if (d.placed) {
			cli_report_time_limit("search",
					      (const struct mp_placement *const[]){&d.prefill_placement,
										&d.decode_placement},
					      2, opts.place.time_limit_s, doc);
		}
		if (a.export_format && d.placed) {
			search_set_launch(&d, &sc, &opts);
			rc = cli_layers_from_model(&layers, &sc.model, d.loads.layer_ids, d.loads.n_layers);
			if (rc) {
				cli_error("%s: %s", a.path, mp_strerror(rc));
				rc = 0;
				status = EXIT_INPUT;
			}
		}
		const char *main_out = a.export_format && !a.export_output ? NULL : a.output;
		if (status == EXIT_OK && a.export_format && !a.export_output) {
			status = cli_export_map(&d.decode_placement, &layers, a.export_format, a.output);
		}
		if (status == EXIT_OK && (!a.export_format || a.export_output)) {
			if (a.format == CLI_OUTPUT_TEXT) {
				status = cli_write_text(main_out, print_search, &r);
			} else {
				status = cli_emit_doc(doc, main_out, a.format);
				doc = NULL;
			}
		}
		mp_doc_destroy(doc);
		if (status == EXIT_OK && a.export_format && a.export_output) {
			status = cli_export_map(&d.decode_placement, &layers, a.export_format,
						a.export_output);
		}
	}
	if (status == EXIT_OK && !(d.prefill.has_choice && d.decode.has_choice)) {
		/* "does not fit": a verdict, not an error (as fit's "does not
		 * fit: ..."); the result says why; exit 1. */
		if (!cli_quiet) {
			fprintf(stderr, "moeplan search: does not fit: %s\n",
				!d.decode.has_choice ? d.decode.why : d.prefill.why);
		}
		status = EXIT_INPUT;
	} else if (status == EXIT_OK && !d.has_pools && !d.has_colocated) {
		/* no deployment in the budget, pooled or co-located: "does not fit" */
		if (!cli_quiet) {
			fprintf(stderr, "moeplan search: does not fit: no pools (%s) and no "
				"co-located configuration meets the targets\n", d.pools_why);
		}
		status = EXIT_INPUT;
	}
out:
	cli_print_diags(&diags);
	if (rc && diags.count == 0) {
		cli_error("%s: %s", a.path, mp_strerror(rc));
	}
	cli_layers_finish(&layers);
	mp_deploy_finish(&d);
	mp_scenario_finish(&sc);
	mp_diags_finish(&diags);
	mp_engine_profile_finish(&a.engine);
	return status;
}
