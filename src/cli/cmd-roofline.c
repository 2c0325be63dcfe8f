/* moeplan roofline: the routed experts' roofline for a model on a GPU, as a
 * table over batch sizes or one operating point with every figure; also
 * the helpers the fit and comm commands share (declared in cli.h). */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/loader.h"
#include "moeplan/roofline.h"
#include "moeplan/scenario.h"
#include "moeplan/widths.h"

enum {
	OPT_DRAFTER_SLOTS = 256,
	OPT_BANDWIDTH,
	OPT_ADDITIVE,
	OPT_COMPARE_EP,
	OPT_MEASURED,
	OPT_MEASURED_COMPARE,
};

static const struct option roofline_options[] = {
	{"model", required_argument, NULL, 'm'},
	{"hardware", required_argument, NULL, 'H'},
	{"ep", required_argument, NULL, 'e'},
	{"requests", required_argument, NULL, 'r'},
	{"tokens-per-request", required_argument, NULL, 'T'},
	{"slots", required_argument, NULL, 's'},
	{"drafter-slots", required_argument, NULL, OPT_DRAFTER_SLOTS},
	{"bandwidth", required_argument, NULL, OPT_BANDWIDTH},
	{"additive", no_argument, NULL, OPT_ADDITIVE},
	{"compare-ep", required_argument, NULL, OPT_COMPARE_EP},
	{"measured-step", required_argument, NULL, OPT_MEASURED},
	{"measured-compare-step", required_argument, NULL, OPT_MEASURED_COMPARE},
	{"format", required_argument, NULL, 'f'},
	{"help", no_argument, NULL, 'h'},
	{0},
};

static const struct cli_option_help roofline_help[] = {
	{"M", "model file (plans/models/*.yaml) or a Hugging Face config.json (required)"},
	{"H", "hardware file (hardware/*.yaml) (required)"},
	{"N", "EP width (default: the widest useful width in the scale-up domain)"},
	{"R", "requests per GPU: one operating point (default: a table over 1 to 1024)"},
	{"T", "tokens per request per step (default 1 + the drafter's stages)"},
	{"S", "routed slots per layer (default: E + 32 rounded up to a multiple of N)"},
	{"S", "the drafter's slots (default: its experts + 32, rounded up likewise)"},
	{"BW", "HBM bandwidth, e.g. '7.7 TB/s' (default: the hardware's)"},
	{NULL, "time = compute + memory per layer instead of max(compute, memory)"},
	{"N", "predict the expert term at EP N too (the article's EP64 -> EP8; default: none)"},
	{"MS", "measured step time at --ep in ms: predict the step at --compare-ep (default: none)"},
	{"MS", "measured step time at --compare-ep in ms: the prediction's error (default: none)"},
	{"FMT", "text (default), yaml or json"},
	{NULL, "show this help"},
};

const struct cli_command_help cmd_roofline_help = {
	.name = "roofline",
	.synopsis = "moeplan roofline --model M --hardware H [--ep N] [--requests R]\n"
		    "                        [--tokens-per-request T] [--slots S] [--format json] [options]",
	.description =
		"The roofline of one routed expert and of one GPU's routed experts per decode\n"
		"step (the model of 'Why Decode Wants 64 GPUs'): parameters P, weight bytes W,\n"
		"FLOP per token F = 2P, activation bytes per visit a (dispatch format in, combine\n"
		"format out), the ridge R = peak / HBM bandwidth for the format the expert GEMM\n"
		"runs in, the crossing t* = R W / (F - R a), tokens per expert t = b k N / slots,\n"
		"intensity F t / (W + a t), and the expert time per step over the MoE layers and\n"
		"the drafter's stages (overlap: max of compute and memory; or --additive).\n"
		"Without --requests, a table over 1 to 1024 requests per GPU; with it, every\n"
		"intermediate figure of that operating point. With --compare-ep, the predicted\n"
		"change of the step time when the EP width changes (routed-expert term swapped).",
	.options = roofline_options,
	.help = roofline_help,
	.examples =
		"  moeplan roofline --model plans/models/deepseek-v4.1-flash.yaml --hardware hardware/gb200-nvl72.yaml --ep 64\n"
		"  moeplan roofline -m plans/models/deepseek-v4.1-flash.yaml -H hardware/gb200-nvl72.yaml --ep 64 \\\n"
		"      --requests 8 --tokens-per-request 4 --compare-ep 8 --measured-step 10.0 --format json\n",
};

/* ---- helpers shared with cmd-fit.c and cmd-comm.c (cli.h) ---- */

bool cli_parse_output(const char *cmd, const char *text, enum cli_output *out)
{
	if (strcmp(text, "text") == 0) {
		*out = CLI_OUTPUT_TEXT;
		return true;
	}
	if (strcmp(text, "yaml") == 0) {
		*out = CLI_OUTPUT_YAML;
		return true;
	}
	if (strcmp(text, "json") == 0) {
		*out = CLI_OUTPUT_JSON;
		return true;
	}
	cli_usage(cmd, "--format '%s': expected 'text', 'yaml' or 'json'", text);
	return false;
}

bool cli_parse_quantity(const char *cmd, const char *opt, const char *text, const char *kind,
			double min, double max, double *out)
{
	double v = 0.0;
	if (mp_parse_quantity(text, kind, &v) != 0 || !isfinite(v) || v < min || v > max) {
		cli_usage(cmd, "--%s '%s': expected a quantity in %s from %g to %g", opt, text,
			  kind ? kind : "plain numbers", min, max);
		return false;
	}
	*out = v;
	return true;
}

int cli_load_model_hardware(const char *model_path, const char *hw_path, struct mp_model *model,
			    struct mp_hardware *hw)
{
	struct mp_diags diags;
	mp_diags_init(&diags);
	int rc = mp_load_model(model_path, model, &diags);
	if (rc == 0) {
		rc = mp_load_hardware(hw_path, hw, &diags);
	}
	cli_print_diags(&diags);
	if (rc && diags.count == 0) {
		cli_error("%s: %s", model_path, mp_strerror(rc));
	}
	mp_diags_finish(&diags);
	return rc ? EXIT_INPUT : EXIT_OK;
}

double cli_default_tokens_per_request(const struct mp_model *model)
{
	/* One verified token plus one drafted per drafter stage (the
	 * article: three drafted tokens, four tokens per request). */
	return 1.0 + (double)model->drafter.moe_stages;
}

int cli_width(const char *cmd, const struct mp_model *model, uint32_t ep, uint32_t slots,
	      uint32_t drafter_slots, struct mp_ep_width *out)
{
	/* The article's decode rule: at least 32 redundant slots, the total
	 * rounded up to a multiple of EP, for the model and the drafter. */
	struct mp_phase_spec rule = {.slot_rule = MP_SLOTS_MIN_REDUNDANT, .min_redundant = 32};
	struct mp_ep_width w = {
		.ep = ep,
		.slots = slots ? slots : mp_phase_slots(&rule, model->routed_experts, ep),
		.drafter_slots = drafter_slots ? drafter_slots : mp_widths_drafter_slots(&rule, model, ep),
	};
	if (w.slots < model->routed_experts || w.slots % ep != 0) {
		cli_usage(cmd, "--slots %u: expected at least %u (the experts) and a multiple of --ep %u",
			  w.slots, model->routed_experts, ep);
		return EXIT_USAGE;
	}
	if (model->drafter.moe_stages > 0 &&
	    (w.drafter_slots < model->drafter.routed_experts || w.drafter_slots % ep != 0)) {
		cli_usage(cmd,
			  "--drafter-slots %u: expected at least %u (the drafter's experts) and a multiple of --ep %u",
			  w.drafter_slots, model->drafter.routed_experts, ep);
		return EXIT_USAGE;
	}
	*out = w;
	return EXIT_OK;
}

void cli_si(double value, const char *unit, char *buf, size_t size)
{
	static const struct {
		double scale;
		const char *prefix;
	} prefixes[] = {
		{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"},
	};
	if (!isfinite(value)) {
		snprintf(buf, size, "%s", isnan(value) ? "n/a" : "unbounded");
		return;
	}
	double a = fabs(value);
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (a >= prefixes[i].scale) {
			snprintf(buf, size, "%.4g %s%s", value / prefixes[i].scale, prefixes[i].prefix, unit);
			return;
		}
	}
	snprintf(buf, size, "%.4g %s", value, unit);
}

int cli_emit_doc(struct mp_doc *doc, enum cli_output format)
{
	int status = EXIT_INPUT;
	if (!doc || mp_doc_failed(doc)) {
		cli_error("out of memory");
	} else {
		status = cli_emit(doc, NULL, format == CLI_OUTPUT_JSON);
	}
	mp_doc_destroy(doc);
	return status;
}

/* ---- moeplan roofline ---- */

struct roofline_args {
	const char *model;
	const char *hardware;
	uint32_t ep;
	double requests;          /* < 0: table */
	double tokens_per_request; /* < 0: default */
	uint32_t slots;
	uint32_t drafter_slots;
	uint32_t compare_ep;
	double measured_s;
	double measured_compare_s;
	struct mp_roofline_options opts;
	enum cli_output format;
};

static struct mp_doc *cost_doc(const struct mp_expert_cost *e, enum mp_format weights,
			       uint32_t group_size)
{
	struct mp_doc *d = mp_doc_map();
	mp_doc_put_real(d, "params", e->params);
	mp_doc_put_string(d, "weight_format", mp_format_name(weights));
	mp_doc_put_real(d, "weight_bits", mp_format_bits(weights, group_size));
	mp_doc_put_real(d, "weight_bytes", e->weight_bytes);
	mp_doc_put_real(d, "flops_per_token", e->flops_per_token);
	mp_doc_put_real(d, "act_bytes_per_visit", e->act_bytes_per_visit);
	mp_doc_put_real(d, "ceiling_flop_per_byte", mp_roofline_ceiling(e));
	return d;
}

static struct mp_doc *part_doc(const struct mp_roofline_part *p)
{
	struct mp_doc *d = mp_doc_map();
	mp_doc_put_int(d, "layers", p->layers);
	mp_doc_put_int(d, "experts", p->experts);
	mp_doc_put_int(d, "top_k", p->top_k);
	mp_doc_put_int(d, "slots", p->slots);
	mp_doc_put_int(d, "slots_per_gpu", p->slots_per_gpu);
	mp_doc_put_real(d, "tokens_per_expert", p->tokens_per_expert);
	mp_doc_put_real(d, "intensity_flop_per_byte", p->intensity);
	mp_doc_put_real(d, "intensity_weights_only", p->intensity_weights);
	mp_doc_put_real(d, "ridge_tokens_per_expert", p->ridge_tokens);
	mp_doc_put_real(d, "ridge_tokens_per_expert_weights_only", p->ridge_tokens_weights);
	mp_doc_put_string(d, "bound", p->compute_bound ? "compute" : "memory");
	mp_doc_put_real(d, "flops", p->flops);
	mp_doc_put_real(d, "act_bytes", p->act_bytes);
	mp_doc_put_real(d, "weight_bytes", p->weight_bytes);
	mp_doc_put_real(d, "compute_s", p->compute_s);
	mp_doc_put_real(d, "memory_s", p->memory_s);
	mp_doc_put_real(d, "overlap_s", p->overlap_s);
	mp_doc_put_real(d, "additive_s", p->additive_s);
	return d;
}

static struct mp_doc *header_doc(const struct mp_model *m, const struct mp_hardware *hw,
				 const struct mp_roofline_point *p, double tokens_per_request,
				 bool additive)
{
	struct mp_doc *d = mp_doc_map();
	struct mp_expert_cost e;
	mp_roofline_expert(m, &e);
	mp_doc_put_string(d, "model", m->name ? m->name : "");
	mp_doc_put_string(d, "hardware", hw->name ? hw->name : "");
	mp_doc_put_int(d, "ep", p->width.ep);
	mp_doc_put_int(d, "slots", p->width.slots);
	mp_doc_put_int(d, "slots_per_gpu", p->width.slots / p->width.ep);
	mp_doc_put_int(d, "redundant", (int64_t)p->width.slots - m->routed_experts);
	if (m->drafter.moe_stages > 0) {
		mp_doc_put_int(d, "drafter_slots", p->width.drafter_slots);
	}
	mp_doc_put_real(d, "tokens_per_request", tokens_per_request);
	mp_doc_put(d, "expert", cost_doc(&e, m->routed_format, m->int4_group_size));
	mp_doc_put_string(d, "compute_format", mp_compute_name(m->expert_compute));
	mp_doc_put_real(d, "peak_flops", p->peak_flops);
	mp_doc_put_real(d, "hbm_bw_bytes_per_s", p->hbm_bw_bytes_per_s);
	mp_doc_put_real(d, "ridge_flop_per_byte", p->ridge);
	struct mp_doc *ridges = mp_doc_map();
	for (int k = 0; k < MP_COMPUTE_COUNT; k++) {
		double r = mp_roofline_ridge(hw, (enum mp_compute)k);
		if (r > 0) {
			/* At the bandwidth used, which may override the hardware's. */
			mp_doc_put_real(ridges, mp_compute_name((enum mp_compute)k),
					hw->peak_flops[k] / p->hbm_bw_bytes_per_s);
		}
	}
	mp_doc_put(d, "ridge_by_format", ridges);
	mp_doc_put_real(d, "ridge_tokens_per_expert", p->main.ridge_tokens);
	mp_doc_put_real(d, "ridge_tokens_per_expert_weights_only", p->main.ridge_tokens_weights);
	double b = mp_roofline_tokens_per_gpu(p->main.ridge_tokens, m->top_k, p->width.ep, p->width.slots);
	mp_doc_put_real(d, "ridge_tokens_per_gpu", b);
	mp_doc_put_real(d, "ridge_requests_per_gpu",
			tokens_per_request > 0 ? b / tokens_per_request : (double)NAN);
	mp_doc_put_string(d, "time_assumption", additive ? "additive" : "overlap");
	return d;
}

static const double table_requests[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
#define N_TABLE (sizeof(table_requests) / sizeof(table_requests[0]))

static int print_text_header(const struct mp_model *m, const struct mp_hardware *hw,
			     const struct mp_roofline_point *p, double tpr)
{
	struct mp_expert_cost e;
	char w[32], f[32], peak[32], bw[32];
	mp_roofline_expert(m, &e);
	cli_si(e.weight_bytes, "B", w, sizeof(w));
	cli_si(e.flops_per_token, "FLOP", f, sizeof(f));
	cli_si(p->peak_flops, "FLOP/s", peak, sizeof(peak));
	cli_si(p->hbm_bw_bytes_per_s, "B/s", bw, sizeof(bw));
	printf("model     %s: %u routed experts, top-%u, %u MoE layers\n", m->name ? m->name : "(unnamed)",
	       m->routed_experts, m->top_k, m->moe_layers);
	printf("hardware  %s: %s %s peak, HBM %s\n", hw->name ? hw->name : "(unnamed)",
	       mp_compute_name(m->expert_compute), peak, bw);
	printf("expert    P = %.0f parameters (%u x %u x %u), W = %s (%s, %.4g bit/weight)\n", e.params,
	       m->matrices_per_expert, m->hidden_size, m->expert_intermediate_size, w,
	       mp_format_name(m->routed_format), mp_format_bits(m->routed_format, m->int4_group_size));
	printf("          F = 2P = %s per token, a = %.0f B per visit (%s in, %s out), ceiling F/a = %.5g FLOP/B\n",
	       f, e.act_bytes_per_visit, mp_format_name(m->dispatch_format),
	       mp_format_name(m->combine_format), mp_roofline_ceiling(&e));
	printf("ridge     R = %.5g FLOP/B; t* = %.1f tokens per expert (%.1f counting weights only)\n",
	       p->ridge, p->main.ridge_tokens, p->main.ridge_tokens_weights);
	printf("          ridge by format:");
	for (int k = 0; k < MP_COMPUTE_COUNT; k++) {
		if (mp_roofline_ridge(hw, (enum mp_compute)k) > 0) {
			printf(" %s %.5g", mp_compute_name((enum mp_compute)k),
			       hw->peak_flops[k] / p->hbm_bw_bytes_per_s);
		}
	}
	printf(" FLOP/B\n");
	double b = mp_roofline_tokens_per_gpu(p->main.ridge_tokens, m->top_k, p->width.ep, p->width.slots);
	printf("width     EP%u, %u slots (%u per GPU, %d redundant)", p->width.ep, p->width.slots,
	       p->width.slots / p->width.ep, (int)(p->width.slots - m->routed_experts));
	if (m->drafter.moe_stages > 0) {
		printf("; drafter %u stages x %u experts top-%u, %u slots (%u per GPU)", m->drafter.moe_stages,
		       m->drafter.routed_experts, m->drafter.top_k, p->width.drafter_slots,
		       p->width.drafter_slots / p->width.ep);
	}
	printf("\n          t* is reached at %.1f tokens = %.1f requests per GPU (%.4g tokens per request)\n",
	       b, tpr > 0 ? b / tpr : (double)NAN, tpr);
	return 0;
}

static void print_part(const char *title, const struct mp_roofline_part *p)
{
	char fl[32], wb[32], ab[32];
	cli_si(p->flops, "FLOP", fl, sizeof(fl));
	cli_si(p->weight_bytes, "B", wb, sizeof(wb));
	cli_si(p->act_bytes, "B", ab, sizeof(ab));
	printf("%s (%u x %u experts top-%u, %u slots, %u per GPU)\n", title, p->layers, p->experts,
	       p->top_k, p->slots, p->slots_per_gpu);
	printf("  t = %.2f tokens per expert; I = %.1f FLOP/B (%.1f weights only), %s-bound (t* = %.1f)\n",
	       p->tokens_per_expert, p->intensity, p->intensity_weights,
	       p->compute_bound ? "compute" : "memory", p->ridge_tokens);
	printf("  per GPU per step: %s, weights %s, activations %s\n", fl, wb, ab);
	printf("  compute %.4g ms, memory %.4g ms; overlap %.4g ms, additive %.4g ms\n",
	       p->compute_s * 1e3, p->memory_s * 1e3, p->overlap_s * 1e3, p->additive_s * 1e3);
}

static int run_table(const struct mp_model *m, const struct mp_hardware *hw,
		     const struct roofline_args *a, const struct mp_ep_width *w, double tpr)
{
	struct mp_roofline_point pts[N_TABLE];
	for (size_t i = 0; i < N_TABLE; i++) {
		int rc = mp_roofline_point(m, hw, &a->opts, w, table_requests[i] * tpr, &pts[i]);
		if (rc) {
			cli_error("%s on %s: %s (does the hardware have a %s peak and an HBM bandwidth?)",
				  a->model, a->hardware, mp_strerror(rc), mp_compute_name(m->expert_compute));
			return EXIT_INPUT;
		}
	}
	if (a->format != CLI_OUTPUT_TEXT) {
		struct mp_doc *d = header_doc(m, hw, &pts[0], tpr, a->opts.additive);
		struct mp_doc *rows = mp_doc_list();
		for (size_t i = 0; i < N_TABLE; i++) {
			const struct mp_roofline_point *p = &pts[i];
			struct mp_doc *r = mp_doc_map();
			mp_doc_put_real(r, "requests_per_gpu", table_requests[i]);
			mp_doc_put_real(r, "tokens_per_gpu", p->tokens_per_gpu);
			mp_doc_put_real(r, "tokens_per_expert", p->main.tokens_per_expert);
			mp_doc_put_real(r, "intensity_flop_per_byte", p->main.intensity);
			mp_doc_put_real(r, "intensity_weights_only", p->main.intensity_weights);
			mp_doc_put_string(r, "bound", p->main.compute_bound ? "compute" : "memory");
			mp_doc_put_real(r, "flops", p->flops);
			mp_doc_put_real(r, "bytes", p->bytes);
			mp_doc_put_real(r, "weight_bytes", p->main.weight_bytes + p->drafter.weight_bytes);
			mp_doc_put_real(r, "overlap_s", p->overlap_s);
			mp_doc_put_real(r, "additive_s", p->additive_s);
			mp_doc_put_real(r, "expert_time_s", p->time_s);
			mp_doc_put_real(r, "tokens_per_s_per_gpu",
					p->time_s > 0 ? p->tokens_per_gpu / p->time_s : (double)NAN);
			mp_doc_put(rows, NULL, r);
		}
		mp_doc_put(d, "rows", rows);
		return cli_emit_doc(d, a->format);
	}
	print_text_header(m, hw, &pts[0], tpr);
	printf("\nPer GPU per step, routed experts of %u MoE layers%s:\n", m->moe_layers,
	       m->drafter.moe_stages ? " and the drafter's stages" : "");
	printf("%8s %10s %10s %10s %10s %7s %10s %10s %10s\n", "requests", "tokens", "t/expert",
	       "I FLOP/B", "I weights", "bound", "bytes GB", "max ms", "sum ms");
	for (size_t i = 0; i < N_TABLE; i++) {
		const struct mp_roofline_point *p = &pts[i];
		printf("%8.0f %10.0f %10.2f %10.1f %10.1f %7s %10.2f %10.4f %10.4f\n", table_requests[i],
		       p->tokens_per_gpu, p->main.tokens_per_expert, p->main.intensity,
		       p->main.intensity_weights, p->main.compute_bound ? "compute" : "memory",
		       p->bytes * 1e-9, p->overlap_s * 1e3, p->additive_s * 1e3);
	}
	return EXIT_OK;
}

static int run_point(const struct mp_model *m, const struct mp_hardware *hw,
		     const struct roofline_args *a, const struct mp_ep_width *w, double tpr)
{
	struct mp_roofline_point p;
	struct mp_roofline_compare cmp;
	bool compare = a->compare_ep > 0;
	double b = a->requests * tpr;
	int rc = mp_roofline_point(m, hw, &a->opts, w, b, &p);
	if (rc) {
		cli_error("%s on %s: %s (does the hardware have a %s peak and an HBM bandwidth?)", a->model,
			  a->hardware, mp_strerror(rc), mp_compute_name(m->expert_compute));
		return EXIT_INPUT;
	}
	if (compare) {
		struct mp_ep_width to;
		int status = cli_width("roofline", m, a->compare_ep, 0, 0, &to);
		if (status) {
			return status;
		}
		rc = mp_roofline_compare(m, hw, &a->opts, w, &to, b, a->measured_s, a->measured_compare_s, &cmp);
		if (rc) {
			cli_error("%s: %s", a->model, mp_strerror(rc));
			return EXIT_INPUT;
		}
	}
	/* Expected distinct experts the group's tokens touch per layer. */
	double group_tokens = b * (double)w->ep;
	struct mp_expert_cost e;
	mp_roofline_expert(m, &e);
	double touched = mp_roofline_experts_touched(m->routed_experts, m->top_k, group_tokens);
	double per_token = mp_roofline_weight_bytes_per_token(&e, m->routed_experts, m->top_k, group_tokens);

	if (a->format != CLI_OUTPUT_TEXT) {
		struct mp_doc *d = header_doc(m, hw, &p, tpr, a->opts.additive);
		mp_doc_put_real(d, "requests_per_gpu", a->requests);
		mp_doc_put_real(d, "tokens_per_gpu", b);
		mp_doc_put_real(d, "experts_touched_per_layer", touched);
		mp_doc_put_real(d, "weight_bytes_per_token_per_layer", per_token);
		mp_doc_put(d, "main", part_doc(&p.main));
		if (p.drafter.layers > 0) {
			mp_doc_put(d, "drafter", part_doc(&p.drafter));
		}
		struct mp_doc *t = mp_doc_map();
		mp_doc_put_real(t, "flops", p.flops);
		mp_doc_put_real(t, "bytes", p.bytes);
		mp_doc_put_real(t, "compute_s", p.compute_s);
		mp_doc_put_real(t, "memory_s", p.memory_s);
		mp_doc_put_real(t, "overlap_s", p.overlap_s);
		mp_doc_put_real(t, "additive_s", p.additive_s);
		mp_doc_put_real(t, "expert_time_s", p.time_s);
		mp_doc_put_real(t, "tokens_per_s_per_gpu", p.time_s > 0 ? b / p.time_s : (double)NAN);
		mp_doc_put(d, "step", t);
		if (compare) {
			struct mp_doc *c = mp_doc_map();
			mp_doc_put_int(c, "ep", cmp.to.width.ep);
			mp_doc_put_int(c, "slots", cmp.to.width.slots);
			if (m->drafter.moe_stages > 0) {
				mp_doc_put_int(c, "drafter_slots", cmp.to.width.drafter_slots);
			}
			mp_doc_put_real(c, "expert_time_s", cmp.to.time_s);
			mp_doc_put_real(c, "delta_s", cmp.delta_s);
			mp_doc_put_real(c, "weight_bytes_delta", cmp.weight_bytes_delta);
			if (a->measured_s > 0) {
				mp_doc_put_real(c, "measured_step_s", cmp.measured_from_s);
				mp_doc_put_real(c, "floor_s", cmp.floor_s);
				mp_doc_put_real(c, "predicted_step_s", cmp.predicted_to_s);
			}
			if (a->measured_compare_s > 0) {
				mp_doc_put_real(c, "measured_compare_step_s", cmp.measured_to_s);
				mp_doc_put_real(c, "error", cmp.error);
				mp_doc_put_real(c, "implied_bw_bytes_per_s", cmp.implied_bw_bytes_per_s);
			}
			mp_doc_put(d, "compare", c);
		}
		return cli_emit_doc(d, a->format);
	}

	print_text_header(m, hw, &p, tpr);
	printf("batch     %.4g requests x %.4g tokens = %.4g tokens per GPU per step\n", a->requests, tpr, b);
	char pt[32];
	cli_si(per_token, "B", pt, sizeof(pt));
	printf("touched   %.1f of %u experts per layer by the group's %.0f tokens; %s of expert weights per token\n\n",
	       touched, m->routed_experts, group_tokens, pt);
	print_part("main model", &p.main);
	if (p.drafter.layers > 0) {
		print_part("drafter", &p.drafter);
	}
	char fl[32], by[32];
	cli_si(p.flops, "FLOP", fl, sizeof(fl));
	cli_si(p.bytes, "B", by, sizeof(by));
	printf("step      %s and %s per GPU: compute %.4g ms, memory %.4g ms\n", fl, by, p.compute_s * 1e3,
	       p.memory_s * 1e3);
	printf("          expert time %.4g ms (overlap, max per layer), %.4g ms (additive); %s used\n",
	       p.overlap_s * 1e3, p.additive_s * 1e3, a->opts.additive ? "additive" : "overlap");
	if (compare) {
		char dw[32];
		cli_si(cmp.weight_bytes_delta, "B", dw, sizeof(dw));
		printf("compare   EP%u (%u slots): expert time %.4g ms, %+.4g ms vs EP%u; weight bytes %s per step\n",
		       cmp.to.width.ep, cmp.to.width.slots, cmp.to.time_s * 1e3, cmp.delta_s * 1e3, w->ep, dw);
		if (a->measured_s > 0) {
			printf("          measured %.4g ms at EP%u: floor %.4g ms, predicted %.4g ms at EP%u\n",
			       cmp.measured_from_s * 1e3, w->ep, cmp.floor_s * 1e3, cmp.predicted_to_s * 1e3,
			       cmp.to.width.ep);
		}
		if (a->measured_compare_s > 0) {
			char ib[32];
			cli_si(cmp.implied_bw_bytes_per_s, "B/s", ib, sizeof(ib));
			printf("          measured %.4g ms at EP%u: error %+.2f%%; the gap implies %s\n",
			       cmp.measured_to_s * 1e3, cmp.to.width.ep, cmp.error * 100.0, ib);
		}
	}
	return EXIT_OK;
}

/* The default EP: the decode pick of the widths module over one scale-up
 * domain at 64 requests per GPU. */
static uint32_t default_ep(const struct mp_model *m, const struct mp_hardware *hw, double tpr,
			   const struct mp_roofline_options *opts)
{
	struct mp_phase_spec phase = {
		.hardware = *hw,
		.slot_rule = MP_SLOTS_MIN_REDUNDANT,
		.min_redundant = 32,
		.requests_per_gpu = 64,
		.tokens_per_request = tpr,
	};
	struct mp_widths w;
	mp_widths_init(&w);
	uint32_t ep = 1;
	if (mp_widths_rank(m, &phase, MP_PHASE_DECODE, NULL, opts, &w) == 0 && w.has_choice) {
		ep = w.items[w.chosen].width.ep;
	}
	mp_widths_finish(&w);
	return ep;
}

int cmd_roofline(int argc, char **argv)
{
	struct roofline_args a = {.requests = -1.0, .tokens_per_request = -1.0};
	mp_roofline_options_init(&a.opts);
	char shorts[64];
	cli_short_options(roofline_options, shorts, sizeof(shorts));
	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, shorts, roofline_options, NULL)) != -1) {
		bool ok = true;
		switch (c) {
		case 'm':
			a.model = optarg;
			break;
		case 'H':
			a.hardware = optarg;
			break;
		case 'e':
			ok = cli_parse_u32("roofline", "ep", optarg, 1, 1u << 20, &a.ep);
			break;
		case 'r':
			ok = cli_parse_double("roofline", "requests", optarg, 0, 1e9, &a.requests);
			break;
		case 'T':
			ok = cli_parse_double("roofline", "tokens-per-request", optarg, 0, 1e6, &a.tokens_per_request);
			break;
		case 's':
			ok = cli_parse_u32("roofline", "slots", optarg, 1, 1u << 24, &a.slots);
			break;
		case OPT_DRAFTER_SLOTS:
			ok = cli_parse_u32("roofline", "drafter-slots", optarg, 1, 1u << 24, &a.drafter_slots);
			break;
		case OPT_BANDWIDTH:
			ok = cli_parse_quantity("roofline", "bandwidth", optarg, "bytes/s", 1.0, 1e18,
						&a.opts.hbm_bw_bytes_per_s);
			break;
		case OPT_ADDITIVE:
			a.opts.additive = true;
			break;
		case OPT_COMPARE_EP:
			ok = cli_parse_u32("roofline", "compare-ep", optarg, 1, 1u << 20, &a.compare_ep);
			break;
		case OPT_MEASURED:
			ok = cli_parse_double("roofline", "measured-step", optarg, 1e-6, 1e9, &a.measured_s);
			a.measured_s *= 1e-3;
			break;
		case OPT_MEASURED_COMPARE:
			ok = cli_parse_double("roofline", "measured-compare-step", optarg, 1e-6, 1e9,
					      &a.measured_compare_s);
			a.measured_compare_s *= 1e-3;
			break;
		case 'f':
			ok = cli_parse_output("roofline", optarg, &a.format);
			break;
		case 'h':
			cli_print_help(&cmd_roofline_help, stdout);
			return EXIT_OK;
		default:
			fprintf(stderr, "Try 'moeplan roofline --help'.\n");
			return EXIT_USAGE;
		}
		if (!ok) {
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		return cli_usage("roofline", "unexpected argument '%s'", argv[optind]);
	}
	if (!a.model || !a.hardware) {
		return cli_usage("roofline", "--model and --hardware are required");
	}
	if ((a.compare_ep || a.measured_s > 0 || a.measured_compare_s > 0) && a.requests < 0) {
		return cli_usage("roofline", "--compare-ep and --measured-step need --requests");
	}
	if ((a.measured_s > 0 || a.measured_compare_s > 0) && !a.compare_ep) {
		return cli_usage("roofline", "--measured-step and --measured-compare-step need --compare-ep");
	}
	if (a.measured_compare_s > 0 && !(a.measured_s > 0)) {
		return cli_usage("roofline", "--measured-compare-step needs --measured-step");
	}

	struct mp_model model;
	struct mp_hardware hw;
	mp_model_init(&model);
	mp_hardware_init(&hw);
	int status = cli_load_model_hardware(a.model, a.hardware, &model, &hw);
	if (status) {
		goto out;
	}
	if (model.routed_experts == 0 || model.top_k == 0) {
		cli_error("%s: the model has no routed experts", a.model);
		status = EXIT_INPUT;
		goto out;
	}
	double tpr = a.tokens_per_request >= 0 ? a.tokens_per_request : cli_default_tokens_per_request(&model);
	uint32_t ep = a.ep ? a.ep : default_ep(&model, &hw, tpr, &a.opts);
	struct mp_ep_width w;
	status = cli_width("roofline", &model, ep, a.slots, a.drafter_slots, &w);
	if (status) {
		goto out;
	}
	status = a.requests < 0 ? run_table(&model, &hw, &a, &w, tpr) : run_point(&model, &hw, &a, &w, tpr);
out:
	mp_model_finish(&model);
	mp_hardware_finish(&hw);
	return status;
}
