/* moeplan fit: does a batch fit in one GPU's HBM? The per-GPU breakdown,
 * the verdict, the headroom and the largest batch that fits. */
#include "cli.h"
#include "moeplan/traffic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/capacity.h"
#include "moeplan/roofline.h"
#include "moeplan/scenario.h"

enum {
	OPT_DRAFTER_SLOTS = CLI_OPT_LONG,
	OPT_CHUNK,
	OPT_RESERVE,
	OPT_BUFFERS,
	OPT_BUFFER_TOKENS,
	OPT_NO_WORKSPACE,
	OPT_MIN_REDUNDANT,
};

static const struct cli_opt fit_options[] = {
	CLI_OPT_MODEL,
	CLI_OPT_HARDWARE,
	{"ep", 'e', "N", "EP width (required)", NULL},
	{"requests", 'r', "R", "concurrent requests per GPU, > 0 (required)", NULL},
	{"context", 'c', "C", "context tokens each request's KV cache holds (required)", NULL},
	{"tokens-per-request", 'T', "T", "tokens per request per step, sizes the buffers (default 1 + drafter stages)", NULL},
	CLI_OPT_SLOTS,
	CLI_OPT_DRAFTER_SLOTS(OPT_DRAFTER_SLOTS),
	CLI_OPT_MIN_REDUNDANT(OPT_MIN_REDUNDANT),
	{"chunk-tokens", OPT_CHUNK, "T", "prefill: tokens per GPU per step, normal-mode buffers (default: none, decode)", NULL},
	{"reserve", OPT_RESERVE, "BYTES", "runtime reserve, e.g. '3.9 GB' (default 3.9 GB: CUDA context, NCCL, slack)", NULL},
	{"buffers", OPT_BUFFERS, "MODE", "auto (default), low-latency, normal or none: the DeepEP buffer layout", "auto low-latency normal none"},
	{"buffer-tokens", OPT_BUFFER_TOKENS, "T", "tokens per rank the buffers are sized for (default: the step's tokens per GPU)", NULL},
	{"no-workspace", OPT_NO_WORKSPACE, NULL, "leave out the MoE activation workspace", NULL},
	{"output", 'o', "FILE", "write the breakdown to FILE, atomically (default '-', stdout)", CLI_COMPLETE_FILE},
	CLI_OPT_FORMAT_TEXT,
	CLI_OPT_HELP,
	{0},
};

const struct cli_command_help cmd_fit_help = {
	.name = "fit",
	.synopsis = "moeplan fit --model M --hardware H --ep N --requests R --context C\n"
		    "                   [-o FILE] [--format json] [options]",
	.description =
		"Audits one GPU's HBM at an EP width and a batch: the routed-expert slots it holds\n"
		"(replicas included), the shared experts, the dense and attention weights, the\n"
		"drafter, the KV cache of R requests at C tokens, DeepEP's dispatch/combine buffers,\n"
		"the MoE activation workspace and a runtime reserve; then the free bytes, the\n"
		"verdict and the largest number of requests per GPU that fits at C tokens.\n"
		"Exit status 0 when the batch fits, 1 when it does not (or on bad input).",
	.options = fit_options,
	.examples =
		"  moeplan fit -m plans/models/deepseek-v4.1-flash.yaml -H hardware/gb200-nvl72.yaml --ep 64 -r 256 -c 131072\n"
		"  moeplan fit -m plans/models/deepseek-v4.1-flash.yaml -H hardware/hgx-b200.yaml --ep 2 -r 1 -c 16384 \\\n"
		"      --slots 392 --chunk-tokens 16384 --format json\n",
};

static bool parse_buffers(const char *text, enum mp_buffer_mode *out)
{
	static const struct {
		const char *name;
		enum mp_buffer_mode mode;
	} names[] = {
		{"auto", MP_BUFFERS_AUTO},
		{"low-latency", MP_BUFFERS_LOW_LATENCY},
		{"normal", MP_BUFFERS_NORMAL},
		{"none", MP_BUFFERS_NONE},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(text, names[i].name) == 0) {
			*out = names[i].mode;
			return true;
		}
	}
	cli_usage("fit", "--buffers '%s': expected auto, low-latency, normal or none", text);
	return false;
}

static struct mp_doc *fit_doc(const struct mp_model *m, const struct mp_hardware *hw,
			      const struct mp_capacity_input *in, const struct mp_capacity *c,
			      bool have_max, uint64_t max_requests)
{
	struct mp_doc *d = mp_doc_map();
	mp_doc_put_string(d, "model", m->name ? m->name : "");
	mp_doc_put_string(d, "hardware", hw->name ? hw->name : "");
	mp_doc_put_string(d, "phase", in->prefill ? "prefill" : "decode");
	mp_doc_put_int(d, "ep", in->width.ep);
	mp_doc_put_int(d, "slots", in->width.slots);
	mp_doc_put_int(d, "slots_per_gpu", in->width.slots / in->width.ep);
	if (m->drafter.moe_stages > 0) {
		mp_doc_put_int(d, "drafter_slots", in->width.drafter_slots);
	}
	mp_doc_put_real(d, "requests_per_gpu", in->requests);
	mp_doc_put_real(d, "context_tokens", in->context_tokens);
	mp_doc_put_real(d, "tokens_per_gpu", c->tokens_per_gpu);
	mp_doc_put_real(d, "kv_bytes_per_token", c->kv_bytes_per_token);
	mp_doc_put_real(d, "kv_bytes_per_request", c->kv_bytes_per_request);
	mp_doc_put(d, "hbm", mp_capacity_to_doc(c));
	mp_doc_put_bool(d, "fits", c->fits);
	mp_doc_put_real(d, "headroom", (double)c->free_bytes / (double)c->capacity_bytes);
	if (have_max) {
		mp_doc_put_int(d, "max_requests_per_gpu", (int64_t)max_requests);
	} else {
		mp_doc_put(d, "max_requests_per_gpu", mp_doc_null());
	}
	return d;
}

static void line(FILE *f, const char *label, uint64_t bytes, const char *note)
{
	char b[32];
	cli_si((double)bytes, "B", b, sizeof(b));
	fprintf(f, "  %-18s %12s%s%s\n", label, b, note[0] ? "  " : "", note);
}

/* What print_fit prints. */
struct fit_run {
	const struct mp_model *m;
	const struct mp_hardware *hw;
	const struct mp_capacity_input *in;
	const struct mp_capacity *c;
	bool have_max;
	uint64_t max_requests;
};

static int print_fit(void *user, FILE *f)
{
	const struct fit_run *r = user;
	const struct mp_model *m = r->m;
	const struct mp_hardware *hw = r->hw;
	const struct mp_capacity_input *in = r->in;
	const struct mp_capacity *c = r->c;
	char note[160], w[32], cap[32], fr[32];
	struct mp_expert_cost e;
	mp_roofline_expert(m, &e);
	char nreq[32];
	fprintf(f, "%s on %s, %s at EP%u: %u slots (%u per GPU), %s request%s x %.0f tokens of context\n",
		m->name ? m->name : "(unnamed model)", hw->name ? hw->name : "(unnamed hardware)",
		in->prefill ? "prefill" : "decode", in->width.ep, in->width.slots,
		in->width.slots / in->width.ep, cli_num(in->requests, nreq, sizeof(nreq)),
		cli_s(in->requests), in->context_tokens);
	cli_si(e.weight_bytes, "B", w, sizeof(w));
	snprintf(note, sizeof(note), "%u slot%s x %u layer%s x %s", in->width.slots / in->width.ep,
		 cli_s(in->width.slots / in->width.ep), m->moe_layers, cli_s(m->moe_layers), w);
	line(f, "routed experts", c->routed_bytes, note);
	line(f, "shared experts", c->shared_bytes, "");
	line(f, "dense/attention", c->dense_bytes, "");
	line(f, "drafter", c->drafter_bytes, "");
	snprintf(note, sizeof(note), "%.6g B/token x %.0f token%s x %s request%s", c->kv_bytes_per_token,
		 in->context_tokens, cli_s(in->context_tokens), cli_num(in->requests, nreq, sizeof(nreq)),
		 cli_s(in->requests));
	line(f, "KV cache", c->kv_bytes, note);
	snprintf(note, sizeof(note), "DeepEP %s, %.0f tokens per rank", mp_buffer_mode_name(c->buffers),
		 c->tokens_per_gpu);
	line(f, "dispatch/combine", c->buffer_bytes, note);
	line(f, "MoE workspace", c->workspace_bytes, "");
	line(f, "reserve", c->reserve_bytes, "");
	cli_si((double)c->capacity_bytes, "B", cap, sizeof(cap));
	snprintf(note, sizeof(note), "of %s", cap);
	line(f, "total", c->used_bytes, note);
	cli_si(fabs((double)c->free_bytes), "B", fr, sizeof(fr));
	if (c->fits) {
		fprintf(f, "fits: %s free (%.1f%% headroom)\n", fr,
			100.0 * (double)c->free_bytes / (double)c->capacity_bytes);
	} else {
		fprintf(f, "does not fit: %s short\n", fr);
	}
	if (r->have_max) {
		fprintf(f, "largest batch at %.0f tokens of context: %llu requests per GPU\n", in->context_tokens,
			(unsigned long long)r->max_requests);
	} else {
		fprintf(f, "largest batch at %.0f tokens of context: none (the rest does not fit without requests)\n",
			in->context_tokens);
	}
	return 0;
}

/* mp_capacity_compute counts bytes in uint64_t and answers MP_ENOMEM when
 * a term passes 2^64 B (1.8e19 B). Say which term, the options behind it
 * and how far they may go. The terms are recomputed in double as
 * capacity.c does (routed = slots/ep x layers x W; kv = requests x
 * kv_per_request(context); buffers and workspace grow with the step's
 * tokens). */
static void explain_overflow(const struct mp_model *model, const struct mp_capacity_options *opts,
			     const struct mp_capacity_input *in)
{
	const double limit = 18446744073709551616.0; /* 2^64 B */
	struct mp_expert_cost e;
	mp_roofline_expert(model, &e);
	double per_gpu = (double)(in->width.slots / in->width.ep);
	double routed = per_gpu * (double)model->moe_layers * e.weight_bytes;
	if (!(routed < limit)) {
		cli_error("fit: %g routed slots per GPU (--slots %u / --ep %u) x %u MoE layers x %.4g B "
			  "per expert is %.3g B, past the 1.8e19 B a byte count holds; --slots / --ep "
			  "must be at most %.0f for this model", per_gpu, in->width.slots, in->width.ep,
			  model->moe_layers, e.weight_bytes, routed,
			  floor(limit / ((double)model->moe_layers * e.weight_bytes)));
		return;
	}
	double kv_request = mp_model_kv_bytes_per_request(model, in->context_tokens);
	double kv = in->requests * kv_request;
	if (!(kv < limit)) {
		cli_error("fit: --requests %g at --context %g tokens needs %.3g B of KV cache per GPU "
			  "(%.4g B per request), past the 1.8e19 B a byte count holds; at this context "
			  "--requests must be at most %.0f", in->requests, in->context_tokens, kv,
			  kv_request, floor(limit / kv_request));
		return;
	}
	double tokens = in->chunk_tokens > 0.0 ? in->chunk_tokens
					       : in->requests * in->tokens_per_request;
	cli_error("fit: the step's buffers and activation workspace for %g tokens per GPU (%s) pass "
		  "the 1.8e19 B a byte count holds; lower %s (buffer tokens %g)", tokens,
		  in->chunk_tokens > 0.0 ? "--chunk-tokens" : "--requests x --tokens-per-request",
		  in->chunk_tokens > 0.0 ? "--chunk-tokens" : "--requests or --tokens-per-request",
		  opts->buffer_tokens_per_rank);
}

int cmd_fit(int argc, char **argv)
{
	const char *model_path = NULL;
	const char *hw_path = NULL;
	const char *output = NULL;
	uint32_t ep = 0, slots = 0, drafter_slots = 0, min_redundant = MP_MIN_REDUNDANT_AUTO;
	double requests = -1.0, context = -1.0, tpr = -1.0, chunk = 0.0;
	enum cli_output format = CLI_OUTPUT_TEXT;
	struct mp_capacity_options opts;
	mp_capacity_options_init(&opts);
	struct cli_parser parser;
	cli_parser_init(&parser, &cmd_fit_help);
	int c;
	while ((c = cli_parser_next(&parser, argc, argv)) >= 0) {
		bool ok = true;
		double v = 0.0;
		switch (c) {
		case 'm':
			model_path = optarg;
			break;
		case 'H':
			hw_path = optarg;
			break;
		case 'e':
			ok = cli_parse_u32("fit", "ep", optarg, 1, MP_MAX_GPUS, &ep);
			break;
		case 'r':
			ok = cli_parse_count("fit", "requests", optarg, 0, true, 1e9, &requests);
			break;
		case 'c':
			ok = cli_parse_count("fit", "context", optarg, 0, false, 1e12, &context);
			break;
		case 'T':
			ok = cli_parse_double("fit", "tokens-per-request", optarg, 1, 1024, &tpr);
			break;
		case 's':
			ok = cli_parse_u32("fit", "slots", optarg, 1, 1u << 24, &slots);
			break;
		case OPT_DRAFTER_SLOTS:
			ok = cli_parse_u32("fit", "drafter-slots", optarg, 1, 1u << 24, &drafter_slots);
			break;
		case OPT_MIN_REDUNDANT:
			ok = cli_parse_u32("fit", "min-redundant", optarg, 0, MP_MAX_EXPERTS, &min_redundant);
			break;
		case OPT_CHUNK:
			ok = cli_parse_count("fit", "chunk-tokens", optarg, 1, false, 1e9, &chunk);
			break;
		case OPT_RESERVE:
			ok = cli_parse_quantity("fit", "reserve", optarg, "bytes", 0, 1e15, &v);
			opts.reserve_bytes = (uint64_t)v;
			break;
		case OPT_BUFFERS:
			ok = parse_buffers(optarg, &opts.buffers);
			break;
		case OPT_BUFFER_TOKENS:
			ok = cli_parse_count("fit", "buffer-tokens", optarg, 1, false, 1e9, &opts.buffer_tokens_per_rank);
			break;
		case OPT_NO_WORKSPACE:
			opts.workspace = false;
			break;
		case 'o':
			output = optarg;
			break;
		case 'f':
			ok = cli_parse_output("fit", optarg, &format);
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
	if (!model_path || !hw_path || ep == 0 || requests < 0 || context < 0) {
		return cli_usage("fit", "--model, --hardware, --ep, --requests and --context are required");
	}
	const char *inputs[] = {model_path, hw_path};
	if (!cli_outputs_spare_inputs("fit", &output, 1, inputs, 2)) {
		return EXIT_USAGE;
	}

	struct mp_model model;
	struct mp_hardware hw;
	mp_model_init(&model);
	mp_hardware_init(&hw);
	int status = cli_load_model_hardware(model_path, hw_path, &model, &hw);
	if (status) {
		goto out;
	}
	struct mp_capacity_input in = {
		.prefill = chunk > 0.0,
		.requests = requests,
		.context_tokens = context,
		.tokens_per_request = tpr >= 0 ? tpr : cli_default_tokens_per_request(&model),
		.chunk_tokens = chunk,
	};
	status = cli_width("fit", &model, ep, slots, drafter_slots, min_redundant, &in.width);
	if (status) {
		goto out;
	}
	struct mp_capacity cap;
	int rc = mp_capacity_compute(&model, &hw, &opts, &in, &cap);
	if (rc == MP_ENOMEM) {
		explain_overflow(&model, &opts, &in);
		status = EXIT_INPUT;
		goto out;
	}
	if (rc) {
		cli_error("%s on %s: %s (does the hardware give its HBM capacity?)", model_path, hw_path,
			  mp_strerror(rc));
		status = EXIT_INPUT;
		goto out;
	}
	uint64_t max_requests = 0;
	rc = mp_capacity_max_requests(&model, &hw, &opts, &in, &max_requests);
	if (rc && rc != MP_ENOFIT && rc != MP_EINVAL) {
		cli_error("%s: %s", model_path, mp_strerror(rc));
		status = EXIT_INPUT;
		goto out;
	}
	bool have_max = rc == 0;
	if (format == CLI_OUTPUT_TEXT) {
		struct fit_run run = {.m = &model, .hw = &hw, .in = &in, .c = &cap,
				      .have_max = have_max, .max_requests = max_requests};
		status = cli_write_text(output, print_fit, &run);
	} else {
		status = cli_emit_doc(fit_doc(&model, &hw, &in, &cap, have_max, max_requests), output,
				      format);
	}
	if (status == EXIT_OK && !cap.fits) {
		status = EXIT_INPUT;
	}
out:
	mp_model_finish(&model);
	mp_hardware_finish(&hw);
	return status;
}
