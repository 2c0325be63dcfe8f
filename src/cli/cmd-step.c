/* moeplan step: the whole serving step of one GPU at one configuration
 * (step.h): every term with its bytes, FLOP, time and bound, the totals,
 * TPOT or TTFT, tokens/s per GPU and per user, the HBM left and the
 * largest batch; optionally one factor calibrated from a measured step and
 * predictions at other widths with it. */
#include "cli.h"
#include "kernel-note.h"
#include "trust-note.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/capacity.h"
#include "moeplan/loader.h"
#include "moeplan/step.h"
#include "moeplan/scenario.h"
#include "moeplan/traffic.h"

enum {
	OPT_PHASE = CLI_OPT_LONG,
	OPT_NODES_OF,
	OPT_ACCEPTANCE,
	OPT_CHUNK,
	OPT_OVERLAP,
	OPT_ATTENTION,
	OPT_KERNEL,
	OPT_PREFIX,
	OPT_DRAFTER_SLOTS,
	OPT_BUSIEST,
	OPT_MEASURED,
	OPT_MEASURED_TPS,
	OPT_CALIBRATE,
	OPT_PREDICT_EP,
	OPT_MIN_REDUNDANT,
	OPT_KERNELS,
	OPT_ENGINE,
};

static const struct cli_opt step_options[] = {
	CLI_OPT_MODEL,
	CLI_OPT_HARDWARE,
	{"phase", OPT_PHASE, "PHASE", "decode (default) or prefill", "decode prefill"},
	{"ep", 'e', "N", "EP width (required); may span several scale-up domains", NULL},
	{"nodes-of", OPT_NODES_OF, "G", "GPUs per scale-up domain (default: the hardware's scale_up_domain_gpus)", NULL},
	{"requests", 'r', "R", "decode: concurrent requests per GPU, > 0 (required); prefill: prompts per chunk, > 0 "
		"(default ceil(chunk / context))", NULL},
	{"context", 'c', "C", "decode: mean KV length per request, >= 0; prefill: the prompt length, > 0 (required)", NULL},
	{"tokens-per-request", 'T', "T", "decode: tokens per request per step, 1 + drafted (default 1 + drafter stages)", NULL},
	{"acceptance", OPT_ACCEPTANCE, "A", "fraction of drafted tokens accepted, 0..1 (default 0.75 with a drafter, DeepSeek's "
		"convention in the seed article; 0 without)", NULL},
	{"chunk-tokens", OPT_CHUNK, "T", "prefill: tokens per GPU per step (default 16384, DeepSeek's profile)", NULL},
	{"prefix", OPT_PREFIX, "P", "prefill: cached prefix tokens each prompt starts from (default 0)", NULL},
	{"overlap", OPT_OVERLAP, "MODE", "none (default), two_batch or full: how dispatch/combine overlap compute", "none two_batch full"},
	{"attention", OPT_ATTENTION, "dp|tp:N", "attention data-parallel (default) or tensor-parallel over N GPUs", "dp tp:2 tp:4 tp:8"},
	{"kernel", OPT_KERNEL, "K", "auto (default: low_latency decode, normal prefill), low_latency or normal", "auto low_latency normal"},
	{"engine", OPT_ENGINE, "NAME|FILE", "the serving engine: even (an ideal engine, the default), sglang, vllm\n"
		"                                 (plans/engines/NAME.yaml) or a profile file: its overlap modes,\n"
		"                                 DeepEP kernels (with --kernel auto) and memory fraction", "even sglang vllm"},
	CLI_OPT_SLOTS,
	CLI_OPT_DRAFTER_SLOTS(OPT_DRAFTER_SLOTS),
	CLI_OPT_MIN_REDUNDANT(OPT_MIN_REDUNDANT),
	{"kernels", OPT_KERNELS, "FILE|none", "a kernel table (hardware/kernels/GPU.csv): price the routed, dense and shared terms\n"
		"                                 from its measured efficiencies (default: the table the hardware file names in\n"
		"                                 `kernels:`, else the scalar factors); none = the scalar factors", CLI_COMPLETE_FILE},
	{"busiest", OPT_BUSIEST, "F", "busiest GPU's routed load over the mean, >= 1 (default 1: balanced)", NULL},
	{"measured-step", OPT_MEASURED, "TIME", "a measured step time at this configuration, e.g. '10 ms': calibrate one factor (default: none)", NULL},
	{"measured-tokens-per-s", OPT_MEASURED_TPS, "X", "a measured output (decode) or input (prefill) tokens/s per GPU, instead (default: none)", NULL},
	{"calibrate", OPT_CALIBRATE, "FACTOR", "step_overhead (default), hbm, gemm or exchange_latency: what to calibrate", "step_overhead hbm gemm exchange_latency"},
	{"predict-ep", OPT_PREDICT_EP, "N,...", "with a measurement: predict these EP widths with the calibrated factor (default: none)", NULL},
	{"output", 'o', "FILE", "write the result to FILE, atomically (default '-', stdout)", CLI_COMPLETE_FILE},
	CLI_OPT_FORMAT_TEXT,
	CLI_OPT_HELP,
	{0},
};

const struct cli_command_help cmd_step_help = {
	.name = "step",
	.synopsis = "moeplan step --model M --hardware H --phase decode|prefill --ep N [--nodes-of G]\n"
		    "                    --requests R --context C [--tokens-per-request T] [--acceptance A]\n"
		    "                    [--chunk-tokens T] [--overlap none|two_batch|full]\n"
		    "                    [--attention dp|tp:N] [--format text|yaml|json] [options]",
	.description =
		"Predicts one GPU's serving step: attention over the KV cache, the replicated weights,\n"
		"shared experts, LM head, the routed experts (touched slots, busiest GPU), the drafter,\n"
		"dispatch and combine (DeepEP low_latency or normal kernel model, across nodes), TP\n"
		"all-reduces and a fixed overhead; each term with bytes, FLOP, time and bound. Then the\n"
		"step time under the overlap, TPOT and tokens/s per GPU and per user (decode) or TTFT\n"
		"and input tokens/s per GPU (prefill), the HBM left and the largest batch that fits.\n"
		"Efficiency factors come from the hardware file's `efficiency:` or their defaults\n"
		"(moeplan-models(7), 'Serving step'). With --measured-step, one factor is solved from the\n"
		"measurement and --predict-ep widths are predicted with it.",
	.options = step_options,
	.examples =
		"  moeplan step -m plans/models/deepseek-v3.yaml -H hardware/hgx-h800.yaml --phase decode \\\n"
		"      --ep 144 -r 64 -c 4989 --tokens-per-request 2 --acceptance 0.8\n"
		"  moeplan step -m plans/models/deepseek-v4.1-flash.yaml -H hardware/gb200-nvl72.yaml --ep 64 \\\n"
		"      -r 8 -c 131072 --measured-step '10 ms' --predict-ep 8 --format json\n",
};

struct step_args {
	const char *model, *hardware, *output;
	const char *kernels;      /* --kernels FILE, or NULL (the hardware's); "none" = scalar */
	const char *context_text; /* as given: prefill refuses 0 once the phase is known */
	enum mp_step_phase phase;
	uint32_t ep, nodes_of, slots, drafter_slots, tp, min_redundant;
	double requests, context, tpr, acceptance, chunk, prefix, busiest;
	double measured_s, measured_tps;
	enum mp_step_overlap overlap;
	enum mp_step_kernel kernel;
	bool calibrate;
	enum mp_step_factor factor;
	uint32_t predict[16];
	size_t n_predict;
	enum cli_output format;
	const char *engine_arg;           /* --engine */
	struct mp_engine_profile engine;  /* its profile (name NULL: an ideal engine) */
	struct mp_capacity_options cap;   /* under the engine's memory rule */
};

static bool parse_attention(const char *text, uint32_t *tp)
{
	if (strcmp(text, "dp") == 0) {
		*tp = 1;
		return true;
	}
	if (strncmp(text, "tp:", 3) == 0) {
		return cli_parse_u32("step", "attention", text + 3, 1, MP_MAX_GPUS, tp);
	}
	cli_usage("step", "--attention '%s': expected dp or tp:N", text);
	return false;
}

static bool parse_predict(const char *text, struct step_args *a)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", text);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (a->n_predict >= sizeof(a->predict) / sizeof(a->predict[0])) {
			cli_usage("step", "--predict-ep: at most 16 widths");
			return false;
		}
		if (!cli_parse_u32("step", "predict-ep", tok, 1, MP_MAX_GPUS, &a->predict[a->n_predict])) {
			return false;
		}
		a->n_predict++;
	}
	return true;
}

static bool parse_one(int c, struct step_args *a)
{
	switch (c) {
	case 'm': a->model = optarg; return true;
	case 'H': a->hardware = optarg; return true;
	case OPT_KERNELS: a->kernels = optarg; return cli_kernels_arg_ok("step", optarg);
	case OPT_ENGINE: a->engine_arg = optarg; return true;
	case 'o': a->output = optarg; return true;
	case OPT_PHASE:
		if (strcmp(optarg, "decode") == 0 || strcmp(optarg, "prefill") == 0) {
			a->phase = optarg[0] == 'd' ? MP_STEP_DECODE : MP_STEP_PREFILL;
			return true;
		}
		cli_usage("step", "--phase '%s': expected decode or prefill", optarg);
		return false;
	case 'e': return cli_parse_u32("step", "ep", optarg, 1, MP_MAX_GPUS, &a->ep);
	case OPT_NODES_OF: return cli_parse_u32("step", "nodes-of", optarg, 1, MP_MAX_GPUS, &a->nodes_of);
	case 'r': return cli_parse_count("step", "requests", optarg, 0, true, 1e9, &a->requests);
	case 'c':
		a->context_text = optarg;
		return cli_parse_count("step", "context", optarg, 0, false, 1e12, &a->context);
	case 'T': return cli_parse_double("step", "tokens-per-request", optarg, 1, 1024, &a->tpr);
	case OPT_ACCEPTANCE: return cli_parse_double("step", "acceptance", optarg, 0, 1, &a->acceptance);
	case OPT_CHUNK: return cli_parse_count("step", "chunk-tokens", optarg, 1, false, 1e9, &a->chunk);
	case OPT_PREFIX: return cli_parse_count("step", "prefix", optarg, 0, false, 1e12, &a->prefix);
	case OPT_BUSIEST: return cli_parse_double("step", "busiest", optarg, 1, 1e6, &a->busiest);
	case 's': return cli_parse_u32("step", "slots", optarg, 1, 1u << 24, &a->slots);
	case OPT_DRAFTER_SLOTS:
		return cli_parse_u32("step", "drafter-slots", optarg, 1, 1u << 24, &a->drafter_slots);
	case OPT_MIN_REDUNDANT:
		return cli_parse_u32("step", "min-redundant", optarg, 0, MP_MAX_EXPERTS, &a->min_redundant);
	case OPT_OVERLAP:
		if (mp_step_overlap_parse(optarg, &a->overlap) == 0) {
			return true;
		}
		cli_usage("step", "--overlap '%s': expected none, two_batch or full", optarg);
		return false;
	case OPT_KERNEL:
		if (mp_step_kernel_parse(optarg, &a->kernel) == 0) {
			return true;
		}
		cli_usage("step", "--kernel '%s': expected auto, low_latency or normal", optarg);
		return false;
	case OPT_ATTENTION: return parse_attention(optarg, &a->tp);
	case OPT_MEASURED:
		a->calibrate = true;
		return cli_parse_quantity("step", "measured-step", optarg, "seconds", 1e-9, 1e6,
					  &a->measured_s);
	case OPT_MEASURED_TPS:
		a->calibrate = true;
		return cli_parse_double("step", "measured-tokens-per-s", optarg, 1e-9, 1e12,
					&a->measured_tps);
	case OPT_CALIBRATE:
		if (mp_step_factor_parse(optarg, &a->factor) == 0) {
			return true;
		}
		cli_usage("step", "--calibrate '%s': expected step_overhead, hbm, gemm or exchange_latency",
			  optarg);
		return false;
	case OPT_PREDICT_EP: return parse_predict(optarg, a);
	case 'f': return cli_parse_output("step", optarg, &a->format);
	default: return false;
	}
}

/* One evaluated configuration with its HBM figures. */
struct step_point {
	struct mp_step_input in;
	struct mp_step s;
	struct mp_capacity hbm;
	bool has_hbm, has_max;
	uint64_t max_requests;
};

static int evaluate(const struct mp_model *m, const struct mp_hardware *hw,
		    const struct mp_capacity_options *cap, struct step_point *p)
{
	int rc = mp_step_evaluate(m, hw, &p->in, &p->s);
	if (rc) {
		return rc;
	}
	struct mp_capacity_input ci;
	mp_step_capacity_input(&p->in, &ci);
	p->has_hbm = mp_capacity_compute(m, hw, cap, &ci, &p->hbm) == 0;
	p->has_max = p->in.phase == MP_STEP_DECODE &&
		     mp_step_max_requests(m, hw, cap, &p->in, &p->max_requests) == 0;
	return 0;
}

/* Off the critical path under the overlap (mp_step.hidden, step.h). */
static bool term_hidden(const struct mp_step *s, int id)
{
	return s->hidden[id];
}

/* "dp x144" (data-parallel attention, one replica per GPU) or
 * "tp:8 x18" (tensor-parallel groups of 8, 18 of them). */
static void attention_layout(const struct step_point *p, char *buf, size_t size)
{
	uint32_t tp = p->in.tp > 1 ? p->in.tp : 1;
	if (tp > 1) {
		snprintf(buf, size, "tp:%u x%u", tp, p->in.width.ep / tp);
	} else {
		snprintf(buf, size, "dp x%u", p->in.width.ep);
	}
}

static void print_terms(FILE *f, const struct mp_step *s)
{
	double sum = 0.0;
	for (int i = 0; i < MP_TERM_COUNT; i++) {
		sum += s->terms[i].time_s;
	}
	bool overlapped = s->overlap != MP_OVERLAP_NONE;
	if (overlapped) {
		fprintf(f, "  (share: of the sum of terms, %.3f ms; overlap %s runs the shorter side "
			   "under the longer%s, so the step is %.3f ms; '*' marks hidden terms)\n",
			sum * 1e3, mp_step_overlap_name(s->overlap),
			s->overlap == MP_OVERLAP_TWO_BATCH ? " in each stage (attention with one exchange, "
							     "experts with the other)"
							   : "",
			s->step_time_s * 1e3);
	} else {
		fprintf(f, "  (share: of the step, the sum of terms)\n");
	}
	fprintf(f, "  %-13s %10s %7s %10s %12s %12s  %s\n", "term", "time", "share", "fixed", "bytes",
		"FLOP", "bound");
	for (int i = 0; i < MP_TERM_COUNT; i++) {
		const struct mp_step_term *t = &s->terms[i];
		char b[32], fl[32];
		cli_si(t->bytes, "B", b, sizeof(b));
		cli_si(t->flops, "FLOP", fl, sizeof(fl));
		const char *pricing = !s->kernel_table	  ? ""
				      : !s->from_table[i]	  ? " [factors]"
				      : s->table_clamped[i] ? " [table, clamped]"
							    : " [table]";
		fprintf(f, "  %-13s %8.3f ms %6.1f%% %7.3f ms %12s %12s  %s%s%s\n",
			mp_step_term_name((enum mp_step_term_id)i), t->time_s * 1e3,
			sum > 0.0 ? 100.0 * t->time_s / sum : 0.0, t->fixed_s * 1e3, b, fl,
			mp_step_bound_name(t->bound),
			term_hidden(s, i) ? " *" : "", pricing);
	}
}

struct step_run;
static void kernel_note(FILE *f, const struct step_point *p, const struct step_run *r);

static void print_point(FILE *f, const struct step_point *p, const struct step_run *r)
{
	const struct mp_step *s = &p->s;
	bool decode = p->in.phase == MP_STEP_DECODE;
	char att[48];
	attention_layout(p, att, sizeof(att));
	fprintf(f, "%s EP%u over %u scale-up domain%s, %s kernels, overlap %s, attention %s\n",
		decode ? "decode" : "prefill", p->in.width.ep, s->nodes, cli_s(s->nodes), mp_step_kernel_name(s->kernel),
		mp_step_overlap_name(s->overlap), att);
	kernel_note(f, p, r);
	print_terms(f, s);
	fprintf(f, "  compute %.3f ms, exchange %.3f ms (%.3f ms exposed)\n", s->compute_s * 1e3,
		s->exchange_s * 1e3, s->exposed_exchange_s * 1e3);
	fprintf(f, "step time: %.3f ms for %.4g tokens per GPU (%.4g accepted)\n", s->step_time_s * 1e3,
		s->tokens_per_step, s->accepted_tokens_per_step);
	if (decode) {
		fprintf(f, "TPOT %.3f ms; %.1f output tokens/s per GPU, %.1f per user\n", s->tpot_s * 1e3,
			s->tokens_per_s_per_gpu, s->tokens_per_s_per_user);
	} else {
		fprintf(f, "TTFT %.3f ms for a %.0f-token prompt; %.1f input tokens/s per GPU\n",
			s->ttft_s * 1e3, p->in.isl, s->tokens_per_s_per_gpu);
	}
	cli_trust_phase(f, "  ", decode);
	if (p->has_hbm) {
		char fr[32];
		cli_si(fabs((double)p->hbm.free_bytes), "B", fr, sizeof(fr));
		fprintf(f, "HBM: %s %s\n", fr, p->hbm.fits ? "free" : "short (does not fit)");
	}
	if (p->has_max) {
		fprintf(f, "largest batch that fits: %llu requests per GPU\n",
			(unsigned long long)p->max_requests);
	}
}

struct step_run {
	struct step_point main;
	bool calibrated;
	enum mp_step_factor factor;
	double before, after;         /* the factor's value */
	double measured_s;
	struct mp_efficiency eff;     /* the calibrated factors */
	struct step_point pred[16];
	size_t n_pred;
	struct mp_engine_profile engine; /* a shallow copy of step_args' (it owns the strings) */
	bool has_engine;                 /* false: an ideal engine */
	const struct mp_hardware *hw;    /* for the kernel-table note */
	bool scalar_forced;              /* --kernels none */
};

static void kernel_note(FILE *f, const struct step_point *p, const struct step_run *r)
{
	cli_kernel_note(f, "  ", &p->s, r->hw, r->scalar_forced);
}

static double factor_value(const struct mp_efficiency *e, enum mp_step_factor f)
{
	switch (f) {
	case MP_FACTOR_HBM: return e->hbm;
	case MP_FACTOR_GEMM: return e->gemm;
	case MP_FACTOR_EXCHANGE_LATENCY: return e->exchange_latency_s;
	case MP_FACTOR_STEP_OVERHEAD: break;
	}
	return e->step_overhead_s;
}

static int print_run(void *user, FILE *f)
{
	const struct step_run *r = user;
	if (r->has_engine) {
		char modes[64];
		mp_engine_overlaps_text(&r->engine, modes, sizeof(modes));
		fprintf(f, "engine %s: overlap %s; DeepEP %s prefill / %s decode; memory %s\n",
			r->engine.name, modes, mp_step_kernel_name(mp_engine_kernel(&r->engine, true)),
			mp_step_kernel_name(mp_engine_kernel(&r->engine, false)),
			(const char *const[]){"reserve", "mem_fraction_static", "mem_fraction_static auto",
					      "gpu_memory_utilization"}[r->engine.memory]);
	}
	print_point(f, &r->main, r);
	if (r->calibrated) {
		fprintf(f, "\ncalibrated %s from a measured step of %.4g ms: %.6g -> %.6g (the step above "
			   "uses it)\n",
			mp_step_factor_name(r->factor), r->measured_s * 1e3, r->before, r->after);
		int priced = 0;
		for (int i = 0; i < MP_TERM_COUNT; i++) {
			priced += r->main.s.from_table[i];
		}
		if (priced > 0) {
			fprintf(f, "note: the kernel table prices %d term%s, which the factor does not move: the "
				   "others absorb the whole difference (--kernels none calibrates the scalar "
				   "model)\n", priced, cli_s(priced));
		}
		for (size_t i = 0; i < r->n_pred; i++) {
			const struct step_point *q = &r->pred[i];
			bool short_hbm = q->has_hbm && !q->hbm.fits;
			fprintf(f, "\npredicted with it%s:\n",
				short_hbm ? " (the batch does not fit in HBM at this width)" : "");
			print_point(f, q, r);
			fprintf(f, "tokens/s per GPU here / at the measured width: %.4f%s\n",
				r->main.s.tokens_per_s_per_gpu > 0.0
					? q->s.tokens_per_s_per_gpu / r->main.s.tokens_per_s_per_gpu
					: 0.0,
				short_hbm ? " (not reachable: the batch does not fit)" : "");
		}
	}
	return 0;
}

static struct mp_doc *run_doc(const struct step_run *r, const struct mp_model *m,
			      const struct mp_hardware *hw)
{
	const struct step_point *p = &r->main;
	struct mp_doc *d = mp_step_doc(&p->s, p->in.phase, p->in.width.ep,
				       p->has_hbm ? &p->hbm : NULL, p->has_max, p->max_requests);
	mp_doc_put_string(d, "model", m->name ? m->name : "");
	mp_doc_put_string(d, "hardware", hw->name ? hw->name : "");
	if (r->has_engine) {
		mp_doc_put(d, "engine", mp_engine_profile_to_doc(&r->engine));
	}
	if (r->calibrated) {
		struct mp_doc *c = mp_doc_map();
		mp_doc_put_string(c, "factor", mp_step_factor_name(r->factor));
		mp_doc_put_real(c, "measured_step_s", r->measured_s);
		mp_doc_put_real(c, "default", r->before);
		mp_doc_put_real(c, "calibrated", r->after);
		struct mp_doc *list = mp_doc_list();
		for (size_t i = 0; i < r->n_pred; i++) {
			const struct step_point *q = &r->pred[i];
			mp_doc_put(list, NULL, mp_step_doc(&q->s, q->in.phase, q->in.width.ep,
							   q->has_hbm ? &q->hbm : NULL, q->has_max,
							   q->max_requests));
		}
		mp_doc_put(c, "predictions", list);
		mp_doc_put(d, "calibration", c);
	}
	return d;
}

/* --engine: the profile; the overlap must be one it runs; --kernel auto
 * takes its kernels; its memory rule sizes HBM. */
static int step_engine(struct step_args *a, const struct mp_model *m)
{
	int status = cli_engine_profile("step", a->engine_arg, &a->engine);
	if (status != EXIT_OK || !a->engine.name) {
		return status;
	}
	if (!mp_engine_allows_overlap(&a->engine, a->overlap)) {
		char modes[64];
		mp_engine_overlaps_text(&a->engine, modes, sizeof(modes));
		return cli_usage("step", "--overlap %s: engine %s runs %s", mp_step_overlap_name(a->overlap),
				 a->engine.name, modes);
	}
	if (a->kernel == MP_KERNEL_AUTO) {
		a->kernel = mp_engine_kernel(&a->engine, a->phase == MP_STEP_PREFILL);
	}
	mp_engine_capacity_options(&a->engine, m->drafter.moe_stages > 0, &a->cap);
	return EXIT_OK;
}

static int run(const struct step_args *a, const struct mp_model *m, struct mp_hardware *hw,
	       const struct mp_kernel_table *kernels)
{
	if (a->nodes_of) {
		hw->scale_up_domain_gpus = a->nodes_of;
		hw->gpus_per_node = a->nodes_of;
	}
	static struct step_run r;
	memset(&r, 0, sizeof(r));
	struct mp_step_input *in = &r.main.in;
	mp_step_input_init(in);
	in->phase = a->phase;
	bool drafter = m->drafter.moe_stages > 0;
	in->tokens_per_request = a->tpr > 0 ? a->tpr : cli_default_tokens_per_request(m);
	in->acceptance = a->acceptance >= 0 ? a->acceptance : (drafter ? 0.75 : 0.0);
	in->overlap = a->overlap;
	in->kernel = a->kernel;
	in->tp = a->tp;
	in->busiest_factor = a->busiest;
	in->kernels = kernels;
	in->kernels_name = kernels ? a->kernels : NULL;
	in->scalar_factors = a->kernels && strcmp(a->kernels, "none") == 0;
	r.hw = hw;
	r.scalar_forced = in->scalar_factors;
	if (a->phase == MP_STEP_DECODE) {
		in->requests = a->requests;
		in->context_tokens = a->context;
	} else {
		in->requests = a->requests > 0 ? a->requests : 0.0;
		in->chunk_tokens = a->chunk > 0 ? a->chunk : 16384.0;
		in->isl = a->context;
		in->context_tokens = a->prefix;
	}
	int status = cli_width("step", m, a->ep, a->slots, a->drafter_slots, a->min_redundant,
			       &in->width);
	if (status) {
		return status;
	}
	/* Name the missing input when it is one we can see. */
	if (!(hw->peak_flops[m->expert_compute] > 0.0)) {
		fprintf(stderr, "%s: error: peak_flops.%s is not given, and %s's expert_compute needs it\n",
			a->hardware, mp_compute_name(m->expert_compute), a->model);
		return EXIT_INPUT;
	}
	if (!(hw->hbm_bw_bytes_per_s > 0.0)) {
		fprintf(stderr, "%s: error: hbm_bandwidth is not given; the step model needs it\n",
			a->hardware);
		return EXIT_INPUT;
	}
	r.engine = a->engine;
	r.has_engine = a->engine.name != NULL;
	int rc = evaluate(m, hw, &a->cap, &r.main);
	if (rc) {
		cli_error("step: %s on %s at EP%u: %s (is tp a divisor of ep? does the hardware give "
			  "its peak, HBM bandwidth and the links an EP group across domains needs?)",
			  a->model, a->hardware, a->ep, mp_strerror(rc));
		return EXIT_INPUT;
	}
	if (a->calibrate) {
		double measured = a->measured_s;
		if (measured <= 0.0) {
			measured = r.main.s.accepted_tokens_per_step / a->measured_tps;
		}
		struct mp_efficiency e;
		rc = mp_step_calibrate(m, hw, in, a->factor, measured, &e);
		if (rc) {
			cli_error("step: no value of %s reproduces a %.4g ms step%s",
				  mp_step_factor_name(a->factor), measured * 1e3,
				  rc == MP_ENOFIT ? " (the other terms alone are longer, or the factor's whole "
						    "range cannot make the step that long)"
						  : "");
			return EXIT_INPUT;
		}
		r.calibrated = true;
		r.factor = a->factor;
		r.measured_s = measured;
		r.before = factor_value(&r.main.s.efficiency, a->factor);
		r.after = factor_value(&e, a->factor);
		r.eff = e;
		in->efficiency = &r.eff;
		if (evaluate(m, hw, &a->cap, &r.main) != 0) {
			cli_error("step: cannot evaluate EP%u with the calibrated %s", a->ep,
				  mp_step_factor_name(a->factor));
			return EXIT_INPUT;
		}
		for (size_t i = 0; i < a->n_predict; i++) {
			struct step_point *q = &r.pred[r.n_pred];
			q->in = *in;
			status = cli_width("step", m, a->predict[i], 0, 0, a->min_redundant, &q->in.width);
			if (status) {
				return status;
			}
			if (evaluate(m, hw, &a->cap, q) != 0) {
				cli_error("step: cannot evaluate EP%u", a->predict[i]);
				return EXIT_INPUT;
			}
			r.n_pred++;
		}
	}
	if (a->format == CLI_OUTPUT_TEXT) {
		return cli_write_text(a->output, print_run, &r);
	}
	return cli_emit_doc(run_doc(&r, m, hw), a->output, a->format);
}

int cmd_step(int argc, char **argv)
{
	struct step_args a = {
		.phase = MP_STEP_DECODE,
		.requests = -1.0,
		.context = -1.0,
		.acceptance = -1.0,
		.tp = 1,
		.busiest = 1.0,
		.min_redundant = MP_MIN_REDUNDANT_AUTO,
	};
	struct cli_parser parser;
	cli_parser_init(&parser, &cmd_step_help);
	int c;
	while ((c = cli_parser_next(&parser, argc, argv)) >= 0) {
		if (!parse_one(c, &a)) {
			return EXIT_USAGE;
		}
	}
	int end = cli_parser_end(&parser, c, argc, argv);
	if (end >= 0) {
		return end;
	}
	if (!a.model || !a.hardware || a.ep == 0 || a.context < 0 ||
	    (a.phase == MP_STEP_DECODE && !(a.requests > 0))) {
		return cli_usage("step", "--model, --hardware, --ep, --context and (decode) --requests "
				 "> 0 are required");
	}
	if (a.phase == MP_STEP_PREFILL && a.context == 0.0) {
		/* a prompt of no tokens: no step to model (ceil(chunk / 0) prompts) */
		return cli_usage("step", "--context: expected a number > 0 and <= 1e+12 (prefill: "
				 "the prompt length), got '%s'", a.context_text);
	}
	if (a.n_predict && !a.calibrate) {
		return cli_usage("step", "--predict-ep needs --measured-step or --measured-tokens-per-s");
	}
	if (a.ep % a.tp != 0) {
		return cli_usage("step", "--attention tp:%u must divide --ep %u", a.tp, a.ep);
	}
	bool table_file = a.kernels && strcmp(a.kernels, "none") != 0;
	const char *inputs[] = {a.model, a.hardware, a.kernels};
	if (!cli_outputs_spare_inputs("step", &a.output, 1, inputs, table_file ? 3 : 2)) {
		return EXIT_USAGE;
	}
	struct mp_model model;
	struct mp_hardware hw;
	mp_model_init(&model);
	mp_hardware_init(&hw);
	int status = cli_load_model_hardware(a.model, a.hardware, &model, &hw);
	static struct mp_kernel_table kt;
	kt = (struct mp_kernel_table){NULL, 0};
	if (status == 0 && table_file) {
		struct mp_diags d;
		mp_diags_init(&d);
		if (mp_load_kernel_table(a.kernels, &kt, &d) != 0) {
			for (size_t i = 0; i < d.count; i++) {
				mp_diag_print(&d.items[i], stderr);
			}
			status = EXIT_INPUT;
		}
		mp_diags_finish(&d);
	}
	mp_capacity_options_init(&a.cap);
	if (status == 0 && a.engine_arg) {
		status = step_engine(&a, &model);
	}
	if (status == 0) {
		cli_warn_step_gaps(a.model, &model);
		status = run(&a, &model, &hw, table_file ? &kt : NULL);
	}
	mp_engine_profile_finish(&a.engine);
	mp_kernel_table_finish(&kt);
	mp_model_finish(&model);
	mp_hardware_finish(&hw);
	return status;
}
