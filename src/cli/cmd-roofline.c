/* moeplan roofline: the routed experts' roofline for a model on a GPU, as a
 * table over batch sizes or one operating point with every figure. */
#include "cli.h"
#include "moeplan/traffic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/roofline.h"
#include "moeplan/scenario.h"
#include "moeplan/widths.h"

enum {
	OPT_DRAFTER_SLOTS = CLI_OPT_LONG,
	OPT_BANDWIDTH,
	OPT_ADDITIVE,
	OPT_COMPARE_EP,
	OPT_MEASURED,
	OPT_MEASURED_COMPARE,
	OPT_SVG,
	OPT_MIN_REDUNDANT,
};

static const struct cli_opt roofline_options[] = {
	CLI_OPT_MODEL,
	CLI_OPT_HARDWARE,
	{"ep", 'e', "N", "EP width (default: the fastest decode width in one scale-up domain at 64 req/GPU)", NULL},
	{"requests", 'r', "R", "requests per GPU, > 0: one operating point (default: a table over 1 to 1024)", NULL},
	{"tokens-per-request", 'T', "T", "tokens per request per step (default 1 + the drafter's stages)", NULL},
	CLI_OPT_SLOTS,
	CLI_OPT_DRAFTER_SLOTS(OPT_DRAFTER_SLOTS),
	CLI_OPT_MIN_REDUNDANT(OPT_MIN_REDUNDANT),
	{"bandwidth", OPT_BANDWIDTH, "BW", "HBM bandwidth, e.g. '7.7 TB/s' (default: the hardware's)", NULL},
	{"additive", OPT_ADDITIVE, NULL, "time = compute + memory per layer instead of max(compute, memory)", NULL},
	{"compare-ep", OPT_COMPARE_EP, "N", "predict the expert term at EP N too (the article's EP64 -> EP8; default: none)", NULL},
	{"measured-step", OPT_MEASURED, "MS", "measured step time at --ep in ms: predict the step at --compare-ep (default: none)", NULL},
	{"measured-compare-step", OPT_MEASURED_COMPARE, "MS", "measured step time at --compare-ep in ms: the prediction's error (default: none)", NULL},
	{"svg", OPT_SVG, "FILE", "also draw the roofline and tokens per expert per EP width as SVG (default: none)", CLI_COMPLETE_FILE},
	{"output", 'o', "FILE", "write the table or the point to FILE, atomically (default '-', stdout)", CLI_COMPLETE_FILE},
	CLI_OPT_FORMAT_TEXT,
	CLI_OPT_HELP,
	{0},
};

const struct cli_command_help cmd_roofline_help = {
	.name = "roofline",
	.synopsis = "moeplan roofline --model M --hardware H [--ep N] [--requests R]\n"
		    "                        [--tokens-per-request T] [--slots S] [--svg FILE]\n"
		    "                        [-o FILE] [--format json] [options]",
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
		"change of the step time when the EP width changes (routed-expert term swapped).\n"
		"With --svg, also the picture: the roofline (log-log, one roof per number format\n"
		"the GPU has, ridges marked) with the operating point (--requests, and the same\n"
		"batch at --compare-ep; without --requests, 1, 8, 64 and 512 requests per GPU),\n"
		"and tokens per expert against requests per GPU for --ep and the widest decode\n"
		"candidates in the scale-up domain (six curves at most), t* drawn across.",
	.options = roofline_options,
	.examples =
		"  moeplan roofline --model plans/models/deepseek-v4.1-flash.yaml --hardware hardware/gb200-nvl72.yaml --ep 64\n"
		"  moeplan roofline -m plans/models/deepseek-v4.1-flash.yaml -H hardware/gb200-nvl72.yaml --ep 64 \\\n"
		"      --requests 8 --tokens-per-request 4 --compare-ep 8 --measured-step 10.0 --format json\n"
		"  moeplan roofline -m plans/models/deepseek-v3.yaml -H hardware/hgx-h200.yaml -r 64 \\\n"
		"      --svg roofline.svg -o roofline.txt\n",
};

/* ---- moeplan roofline ---- */

struct roofline_args {
	const char *model;
	const char *hardware;
	const char *output;
	const char *svg;
	uint32_t ep;
	double requests;          /* < 0: table */
	double tokens_per_request; /* < 0: default */
	uint32_t slots;
	uint32_t drafter_slots;
	uint32_t min_redundant;   /* MP_MIN_REDUNDANT_AUTO: the default rule */
	uint32_t compare_ep;
	double measured_s;
	double measured_compare_s;
	struct mp_roofline_options opts;
	enum cli_output format;
};

static const double table_requests[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
#define N_TABLE (sizeof(table_requests) / sizeof(table_requests[0]))

/* Everything one run computes, before any of it is written. */
struct roofline_run {
	const struct mp_model *m;
	const struct mp_hardware *hw;
	const struct roofline_args *a;
	struct mp_ep_width w;
	double tpr;
	bool table;
	struct mp_roofline_point pts[N_TABLE];   /* table */
	struct mp_roofline_point p;              /* point */
	bool compare;
	struct mp_roofline_compare cmp;
	double group_tokens;
	double touched;
	double per_token;
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
	mp_doc_put_int(d, "slots_per_gpu", p->width.ep ? p->width.slots / p->width.ep : 0);
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

static void print_text_header(FILE *f, const struct mp_model *m, const struct mp_hardware *hw,
			      const struct mp_roofline_point *p, double tpr)
{
	struct mp_expert_cost e;
	char w[32], fl[32], peak[32], bw[32];
	mp_roofline_expert(m, &e);
	cli_si(e.weight_bytes, "B", w, sizeof(w));
	cli_si(e.flops_per_token, "FLOP", fl, sizeof(fl));
	cli_si(p->peak_flops, "FLOP/s", peak, sizeof(peak));
	cli_si(p->hbm_bw_bytes_per_s, "B/s", bw, sizeof(bw));
	fprintf(f, "model     %s: %u routed experts, top-%u, %u MoE layers\n",
		m->name ? m->name : "(unnamed)", m->routed_experts, m->top_k, m->moe_layers);
	fprintf(f, "hardware  %s: %s %s peak, HBM %s\n", hw->name ? hw->name : "(unnamed)",
		mp_compute_name(m->expert_compute), peak, bw);
	fprintf(f, "expert    P = %.0f parameters (%u x %u x %u), W = %s (%s, %.4g bit/weight)\n",
		e.params, m->matrices_per_expert, m->hidden_size, m->expert_intermediate_size, w,
		mp_format_name(m->routed_format), mp_format_bits(m->routed_format, m->int4_group_size));
	fprintf(f, "          F = 2P = %s per token, a = %.0f B per visit (%s in, %s out), ceiling F/a = %.5g FLOP/B\n",
		fl, e.act_bytes_per_visit, mp_format_name(m->dispatch_format),
		mp_format_name(m->combine_format), mp_roofline_ceiling(&e));
	fprintf(f, "ridge     R = %.5g FLOP/B; t* = %.1f tokens per expert (%.1f counting weights only)\n",
		p->ridge, p->main.ridge_tokens, p->main.ridge_tokens_weights);
	fprintf(f, "          ridge by format:");
	for (int k = 0; k < MP_COMPUTE_COUNT; k++) {
		if (mp_roofline_ridge(hw, (enum mp_compute)k) > 0) {
			fprintf(f, " %s %.5g", mp_compute_name((enum mp_compute)k),
				hw->peak_flops[k] / p->hbm_bw_bytes_per_s);
		}
	}
	fprintf(f, " FLOP/B\n");
	double b = mp_roofline_tokens_per_gpu(p->main.ridge_tokens, m->top_k, p->width.ep, p->width.slots);
	fprintf(f, "width     EP%u, %u slots (%u per GPU, %d redundant)", p->width.ep, p->width.slots,
		p->width.slots / p->width.ep, (int)(p->width.slots - m->routed_experts));
	if (m->drafter.moe_stages > 0) {
		fprintf(f, "; drafter %u stages x %u experts top-%u, %u slots (%u per GPU)",
			m->drafter.moe_stages, m->drafter.routed_experts, m->drafter.top_k,
			p->width.drafter_slots, p->width.drafter_slots / p->width.ep);
	}
	fprintf(f, "\n          t* is reached at %.1f tokens = %.1f requests per GPU (%.4g token%s per request)\n",
		b, tpr > 0 ? b / tpr : (double)NAN, tpr, cli_s(tpr));
}

static void print_part(FILE *f, const char *title, const struct mp_roofline_part *p)
{
	char fl[32], wb[32], ab[32];
	cli_si(p->flops, "FLOP", fl, sizeof(fl));
	cli_si(p->weight_bytes, "B", wb, sizeof(wb));
	cli_si(p->act_bytes, "B", ab, sizeof(ab));
	fprintf(f, "%s (%u x %u experts top-%u, %u slots, %u per GPU)\n", title, p->layers, p->experts,
		p->top_k, p->slots, p->slots_per_gpu);
	fprintf(f, "  t = %.2f tokens per expert; I = %.1f FLOP/B (%.1f weights only), %s-bound (t* = %.1f)\n",
		p->tokens_per_expert, p->intensity, p->intensity_weights,
		p->compute_bound ? "compute" : "memory", p->ridge_tokens);
	fprintf(f, "  per GPU per step: %s, weights %s, activations %s\n", fl, wb, ab);
	fprintf(f, "  compute %.4g ms, memory %.4g ms; overlap %.4g ms, additive %.4g ms\n",
		p->compute_s * 1e3, p->memory_s * 1e3, p->overlap_s * 1e3, p->additive_s * 1e3);
}

static int print_table(void *user, FILE *f)
{
	const struct roofline_run *r = user;
	print_text_header(f, r->m, r->hw, &r->pts[0], r->tpr);
	fprintf(f, "\nPer GPU per step, routed experts of %u MoE layers%s:\n", r->m->moe_layers,
		r->m->drafter.moe_stages ? " and the drafter's stages" : "");
	fprintf(f, "%8s %10s %10s %10s %10s %7s %10s %10s %10s\n", "requests", "tokens", "t/expert",
		"I FLOP/B", "I weights", "bound", "bytes GB", "max ms", "sum ms");
	for (size_t i = 0; i < N_TABLE; i++) {
		const struct mp_roofline_point *p = &r->pts[i];
		fprintf(f, "%8.0f %10.0f %10.2f %10.1f %10.1f %7s %10.2f %10.4f %10.4f\n",
			table_requests[i], p->tokens_per_gpu, p->main.tokens_per_expert, p->main.intensity,
			p->main.intensity_weights, p->main.compute_bound ? "compute" : "memory",
			p->bytes * 1e-9, p->overlap_s * 1e3, p->additive_s * 1e3);
	}
	return 0;
}

static struct mp_doc *table_doc(const struct roofline_run *r)
{
	struct mp_doc *d = header_doc(r->m, r->hw, &r->pts[0], r->tpr, r->a->opts.additive);
	struct mp_doc *rows = mp_doc_list();
	for (size_t i = 0; i < N_TABLE; i++) {
		const struct mp_roofline_point *p = &r->pts[i];
		struct mp_doc *row = mp_doc_map();
		mp_doc_put_real(row, "requests_per_gpu", table_requests[i]);
		mp_doc_put_real(row, "tokens_per_gpu", p->tokens_per_gpu);
		mp_doc_put_real(row, "tokens_per_expert", p->main.tokens_per_expert);
		mp_doc_put_real(row, "intensity_flop_per_byte", p->main.intensity);
		mp_doc_put_real(row, "intensity_weights_only", p->main.intensity_weights);
		mp_doc_put_string(row, "bound", p->main.compute_bound ? "compute" : "memory");
		mp_doc_put_real(row, "flops", p->flops);
		mp_doc_put_real(row, "bytes", p->bytes);
		mp_doc_put_real(row, "weight_bytes", p->main.weight_bytes + p->drafter.weight_bytes);
		mp_doc_put_real(row, "overlap_s", p->overlap_s);
		mp_doc_put_real(row, "additive_s", p->additive_s);
		mp_doc_put_real(row, "expert_time_s", p->time_s);
		mp_doc_put_real(row, "tokens_per_s_per_gpu",
				p->time_s > 0 ? p->tokens_per_gpu / p->time_s : (double)NAN);
		mp_doc_put(rows, NULL, row);
	}
	mp_doc_put(d, "rows", rows);
	return d;
}

static struct mp_doc *point_doc(const struct roofline_run *r)
{
	const struct mp_roofline_point *p = &r->p;
	const struct mp_roofline_compare *cmp = &r->cmp;
	const struct roofline_args *a = r->a;
	struct mp_doc *d = header_doc(r->m, r->hw, p, r->tpr, a->opts.additive);
	mp_doc_put_real(d, "requests_per_gpu", a->requests);
	mp_doc_put_real(d, "tokens_per_gpu", p->tokens_per_gpu);
	mp_doc_put_real(d, "experts_touched_per_layer", r->touched);
	mp_doc_put_real(d, "weight_bytes_per_token_per_layer", r->per_token);
	mp_roofline_point_put(d, p);
	if (r->compare) {
		struct mp_doc *c = mp_doc_map();
		mp_doc_put_int(c, "ep", cmp->to.width.ep);
		mp_doc_put_int(c, "slots", cmp->to.width.slots);
		if (r->m->drafter.moe_stages > 0) {
			mp_doc_put_int(c, "drafter_slots", cmp->to.width.drafter_slots);
		}
		mp_doc_put_real(c, "expert_time_s", cmp->to.time_s);
		mp_doc_put_real(c, "delta_s", cmp->delta_s);
		mp_doc_put_real(c, "weight_bytes_delta", cmp->weight_bytes_delta);
		if (a->measured_s > 0) {
			mp_doc_put_real(c, "measured_step_s", cmp->measured_from_s);
			mp_doc_put_real(c, "floor_s", cmp->floor_s);
			mp_doc_put_real(c, "predicted_step_s", cmp->predicted_to_s);
		}
		if (a->measured_compare_s > 0) {
			mp_doc_put_real(c, "measured_compare_step_s", cmp->measured_to_s);
			mp_doc_put_real(c, "error", cmp->error);
			mp_doc_put_real(c, "implied_bw_bytes_per_s", cmp->implied_bw_bytes_per_s);
		}
		mp_doc_put(d, "compare", c);
	}
	return d;
}

static int print_point(void *user, FILE *f)
{
	const struct roofline_run *r = user;
	const struct mp_roofline_point *p = &r->p;
	const struct mp_roofline_compare *cmp = &r->cmp;
	const struct roofline_args *a = r->a;
	print_text_header(f, r->m, r->hw, p, r->tpr);
	char nreq[32];
	fprintf(f, "batch     %s request%s x %.4g token%s = %.4g token%s per GPU per step\n",
		cli_num(a->requests, nreq, sizeof(nreq)), cli_s(a->requests), r->tpr, cli_s(r->tpr),
		p->tokens_per_gpu, cli_s(p->tokens_per_gpu));
	char pt[32];
	cli_si(r->per_token, "B", pt, sizeof(pt));
	fprintf(f, "touched   %.1f of %u experts per layer by the group's %.0f token%s; %s of expert weights per token\n\n",
		r->touched, r->m->routed_experts, r->group_tokens, cli_s(round(r->group_tokens)), pt);
	print_part(f, "main model", &p->main);
	if (p->drafter.layers > 0) {
		print_part(f, "drafter", &p->drafter);
	}
	char fl[32], by[32];
	cli_si(p->flops, "FLOP", fl, sizeof(fl));
	cli_si(p->bytes, "B", by, sizeof(by));
	fprintf(f, "step      %s and %s per GPU: compute %.4g ms, memory %.4g ms\n", fl, by,
		p->compute_s * 1e3, p->memory_s * 1e3);
	fprintf(f, "          expert time %.4g ms (overlap, max per layer), %.4g ms (additive); %s used\n",
		p->overlap_s * 1e3, p->additive_s * 1e3, a->opts.additive ? "additive" : "overlap");
	if (r->compare) {
		char dw[32];
		cli_si(cmp->weight_bytes_delta, "B", dw, sizeof(dw));
		fprintf(f, "compare   EP%u (%u slots): expert time %.4g ms, %+.4g ms vs EP%u; weight bytes %s per step\n",
			cmp->to.width.ep, cmp->to.width.slots, cmp->to.time_s * 1e3, cmp->delta_s * 1e3,
			r->w.ep, dw);
		if (a->measured_s > 0) {
			fprintf(f, "          measured %.4g ms at EP%u: floor %.4g ms, predicted %.4g ms at EP%u\n",
				cmp->measured_from_s * 1e3, r->w.ep, cmp->floor_s * 1e3,
				cmp->predicted_to_s * 1e3, cmp->to.width.ep);
		}
		if (a->measured_compare_s > 0) {
			char ib[32];
			cli_si(cmp->implied_bw_bytes_per_s, "B/s", ib, sizeof(ib));
			fprintf(f, "          measured %.4g ms at EP%u: error %+.2f%%; the gap implies %s\n",
				cmp->measured_to_s * 1e3, cmp->to.width.ep, cmp->error * 100.0, ib);
		}
	}
	return 0;
}

static int point_error(const struct roofline_run *r, int rc)
{
	cli_error("%s on %s: %s (does the hardware have a %s peak and an HBM bandwidth?)", r->a->model,
		  r->a->hardware, mp_strerror(rc), mp_compute_name(r->m->expert_compute));
	return EXIT_INPUT;
}

/* Evaluate the table or the point; an exit status. */
static int compute(struct roofline_run *r)
{
	const struct roofline_args *a = r->a;
	if (r->table) {
		for (size_t i = 0; i < N_TABLE; i++) {
			int rc = mp_roofline_point(r->m, r->hw, &a->opts, &r->w, table_requests[i] * r->tpr,
						   &r->pts[i]);
			if (rc) {
				return point_error(r, rc);
			}
		}
		return EXIT_OK;
	}
	double b = a->requests * r->tpr;
	int rc = mp_roofline_point(r->m, r->hw, &a->opts, &r->w, b, &r->p);
	if (rc) {
		return point_error(r, rc);
	}
	r->compare = a->compare_ep > 0;
	if (r->compare) {
		struct mp_ep_width to;
		int status = cli_width("roofline", r->m, a->compare_ep, 0, 0, a->min_redundant, &to);
		if (status) {
			return status;
		}
		rc = mp_roofline_compare(r->m, r->hw, &a->opts, &r->w, &to, b, a->measured_s,
					 a->measured_compare_s, &r->cmp);
		if (rc) {
			cli_error("%s: %s", a->model, mp_strerror(rc));
			return EXIT_INPUT;
		}
	}
	/* Expected distinct experts the group's tokens touch per layer. */
	struct mp_expert_cost e;
	mp_roofline_expert(r->m, &e);
	r->group_tokens = b * (double)r->w.ep;
	r->touched = mp_roofline_experts_touched(r->m->routed_experts, r->m->top_k, r->group_tokens);
	r->per_token = mp_roofline_weight_bytes_per_token(&e, r->m->routed_experts, r->m->top_k,
							  r->group_tokens);
	return EXIT_OK;
}

/* The decode candidates of the widths module over one scale-up domain at
 * 64 requests per GPU, ascending, into out (at most cap): the widths the
 * domain and the expert count allow, whether or not they fit in HBM (the
 * roofline does not depend on it); returns their number. chosen_ep gets
 * the widths module's pick or, when no width passes every rule (say the
 * weights do not fit), the widest of them: the article's decode rule. */
#define MAX_CANDIDATES 32
/* Curves on the second panel: the palette's six colours other than the
 * black of t* and of the operating points. */
#define MAX_SVG_WIDTHS 6

static size_t decode_widths(const struct mp_model *m, const struct mp_hardware *hw, double tpr,
			    uint32_t min_redundant, const struct mp_roofline_options *opts,
			    uint32_t *chosen_ep,
			    struct mp_ep_width *out, size_t cap)
{
	struct mp_phase_spec phase = {
		.hardware = *hw,
		.slot_rule = MP_SLOTS_MIN_REDUNDANT,
		.min_redundant = min_redundant,
		.requests_per_gpu = 64,
		.tokens_per_request = tpr,
	};
	struct mp_widths w;
	mp_widths_init(&w);
	size_t n = 0;
	*chosen_ep = 1;
	if (mp_widths_rank(m, &phase, MP_PHASE_DECODE, NULL, opts, &w) == 0) {
		for (size_t i = 0; i < w.count && n < cap; i++) {
			enum mp_width_verdict v = w.items[i].verdict;
			if (w.items[i].evaluated &&
			    (v == MP_WIDTH_CHOSEN || v == MP_WIDTH_OUTRANKED || v == MP_WIDTH_BELOW_RIDGE ||
			     v == MP_WIDTH_NO_FIT)) {
				out[n++] = w.items[i].width;
			}
		}
		if (w.has_choice) {
			*chosen_ep = w.items[w.chosen].width.ep;
		} else if (n > 0) {
			*chosen_ep = out[n - 1].ep;
		}
	}
	mp_widths_finish(&w);
	return n;
}

static bool has_ep(const struct mp_ep_width *list, size_t n, uint32_t ep)
{
	for (size_t i = 0; i < n; i++) {
		if (list[i].ep == ep) {
			return true;
		}
	}
	return false;
}

/* The curves: the command's own widths, then the widest candidates, at
 * most MAX_SVG_WIDTHS, ascending. */
static size_t pick_widths(const struct mp_ep_width *own, size_t n_own,
			  const struct mp_ep_width *candidates, size_t n_candidates,
			  struct mp_ep_width *out)
{
	size_t n = 0;
	for (size_t i = 0; i < n_own && n < MAX_SVG_WIDTHS; i++) {
		if (!has_ep(out, n, own[i].ep)) {
			out[n++] = own[i];
		}
	}
	for (size_t i = n_candidates; i-- > 0 && n < MAX_SVG_WIDTHS;) {
		if (!has_ep(out, n, candidates[i].ep)) {
			out[n++] = candidates[i];
		}
	}
	for (size_t i = 1; i < n; i++) {
		struct mp_ep_width x = out[i];
		size_t j = i;
		for (; j > 0 && out[j - 1].ep > x.ep; j--) {
			out[j] = out[j - 1];
		}
		out[j] = x;
	}
	return n;
}

static int draw_svg(const struct roofline_run *r, const struct mp_ep_width *candidates,
		    size_t n_candidates)
{
	const struct roofline_args *a = r->a;
	struct mp_ep_width own[2] = {r->w};
	size_t n_own = 1;
	struct cli_roofline_op ops[N_TABLE];
	char labels[N_TABLE][96];
	size_t n_ops = 0;
	if (r->table) {
		/* The table's rows where the picture has room for them: 1, 8, 64
		 * and 512 requests per GPU. */
		for (size_t i = 0; i < N_TABLE; i += 3) {
			snprintf(labels[n_ops], sizeof(labels[n_ops]), "EP%u, %.4g req/GPU", r->w.ep,
				 table_requests[i]);
			ops[n_ops] = (struct cli_roofline_op){
				.label = labels[n_ops], .width = r->w,
				.tokens_per_gpu = table_requests[i] * r->tpr};
			n_ops++;
		}
	} else {
		snprintf(labels[0], sizeof(labels[0]), "EP%u, %.4g req/GPU", r->w.ep, a->requests);
		ops[n_ops++] = (struct cli_roofline_op){
			.label = labels[0], .width = r->w, .tokens_per_gpu = r->p.tokens_per_gpu};
		if (r->compare) {
			snprintf(labels[1], sizeof(labels[1]), "EP%u, %.4g req/GPU", r->cmp.to.width.ep,
				 a->requests);
			ops[n_ops++] = (struct cli_roofline_op){
				.label = labels[1], .width = r->cmp.to.width,
				.tokens_per_gpu = r->p.tokens_per_gpu};
			own[n_own++] = r->cmp.to.width;
		}
	}
	struct mp_ep_width widths[MAX_SVG_WIDTHS];
	size_t n = pick_widths(own, n_own, candidates, n_candidates, widths);
	struct cli_roofline_spec spec = {
		.path = a->svg,
		.model = r->m,
		.hw = r->hw,
		.opts = &a->opts,
		.ops = ops,
		.n_ops = n_ops,
		.widths = widths,
		.n_widths = n,
		.tokens_per_request = r->tpr,
		.max_requests = table_requests[N_TABLE - 1],
	};
	return cli_plot_roofline(&spec);
}

/* Parse the command line; -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, struct roofline_args *a)
{
	struct cli_parser parser;
	cli_parser_init(&parser, &cmd_roofline_help);
	int c;
	while ((c = cli_parser_next(&parser, argc, argv)) >= 0) {
		bool ok = true;
		switch (c) {
		case 'm':
			a->model = optarg;
			break;
		case 'H':
			a->hardware = optarg;
			break;
		case 'e':
			ok = cli_parse_u32("roofline", "ep", optarg, 1, MP_MAX_GPUS, &a->ep);
			break;
		case 'r':
			ok = cli_parse_count("roofline", "requests", optarg, 0, true, 1e9, &a->requests);
			break;
		case 'T':
			ok = cli_parse_double("roofline", "tokens-per-request", optarg, 1, 1024,
					      &a->tokens_per_request);
			break;
		case 's':
			ok = cli_parse_u32("roofline", "slots", optarg, 1, 1u << 24, &a->slots);
			break;
		case OPT_DRAFTER_SLOTS:
			ok = cli_parse_u32("roofline", "drafter-slots", optarg, 1, 1u << 24, &a->drafter_slots);
			break;
		case OPT_MIN_REDUNDANT:
			ok = cli_parse_u32("roofline", "min-redundant", optarg, 0, MP_MAX_EXPERTS,
					   &a->min_redundant);
			break;
		case OPT_BANDWIDTH:
			ok = cli_parse_quantity("roofline", "bandwidth", optarg, "bytes/s", 1.0, 1e18,
						&a->opts.hbm_bw_bytes_per_s);
			break;
		case OPT_ADDITIVE:
			a->opts.additive = true;
			break;
		case OPT_COMPARE_EP:
			ok = cli_parse_u32("roofline", "compare-ep", optarg, 1, 1u << 20, &a->compare_ep);
			break;
		case OPT_MEASURED:
			ok = cli_parse_double("roofline", "measured-step", optarg, 1e-6, 1e9, &a->measured_s);
			a->measured_s *= 1e-3;
			break;
		case OPT_MEASURED_COMPARE:
			ok = cli_parse_double("roofline", "measured-compare-step", optarg, 1e-6, 1e9,
					      &a->measured_compare_s);
			a->measured_compare_s *= 1e-3;
			break;
		case OPT_SVG:
			a->svg = optarg;
			break;
		case 'o':
			a->output = optarg;
			break;
		case 'f':
			ok = cli_parse_output("roofline", optarg, &a->format);
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
	if (!a->model || !a->hardware) {
		return cli_usage("roofline", "--model and --hardware are required");
	}
	if ((a->compare_ep || a->measured_s > 0 || a->measured_compare_s > 0) && a->requests < 0) {
		return cli_usage("roofline", "--compare-ep and --measured-step need --requests");
	}
	if ((a->measured_s > 0 || a->measured_compare_s > 0) && !a->compare_ep) {
		return cli_usage("roofline", "--measured-step and --measured-compare-step need --compare-ep");
	}
	if (a->measured_compare_s > 0 && !(a->measured_s > 0)) {
		return cli_usage("roofline", "--measured-compare-step needs --measured-step");
	}
	if (a->svg && (a->requests == 0 || a->tokens_per_request == 0)) {
		return cli_usage("roofline", "--svg needs --requests and --tokens-per-request above 0");
	}
	bool out_stdout = !a->output || strcmp(a->output, "-") == 0;
	if (a->svg && strcmp(a->svg, "-") == 0 && out_stdout) {
		return cli_usage("roofline", "--svg - and the output would both go to stdout; give -o FILE");
	}
	const char *outputs[] = {a->output, a->svg};
	const char *inputs[] = {a->model, a->hardware};
	if (!cli_outputs_spare_inputs("roofline", outputs, 2, inputs, 2)) {
		return EXIT_USAGE;
	}
	return -1;
}

int cmd_roofline(int argc, char **argv)
{
	struct roofline_args a = {.requests = -1.0, .tokens_per_request = -1.0,
				  .min_redundant = MP_MIN_REDUNDANT_AUTO};
	mp_roofline_options_init(&a.opts);
	int status = parse_args(argc, argv, &a);
	if (status >= 0) {
		return status;
	}

	struct mp_model model;
	struct mp_hardware hw;
	mp_model_init(&model);
	mp_hardware_init(&hw);
	status = cli_load_model_hardware(a.model, a.hardware, &model, &hw);
	if (status) {
		goto out;
	}
	if (model.routed_experts == 0 || model.top_k == 0) {
		cli_error("%s: the model has no routed experts", a.model);
		status = EXIT_INPUT;
		goto out;
	}
	struct roofline_run *r = calloc(1, sizeof(*r));
	if (!r) {
		cli_error("out of memory");
		status = EXIT_INPUT;
		goto out;
	}
	r->m = &model;
	r->hw = &hw;
	r->a = &a;
	r->table = a.requests < 0;
	r->tpr = a.tokens_per_request >= 0 ? a.tokens_per_request : cli_default_tokens_per_request(&model);
	struct mp_ep_width candidates[MAX_CANDIDATES];
	uint32_t chosen_ep = 1;
	size_t n_candidates = 0;
	if (!a.ep || a.svg) {
		n_candidates = decode_widths(&model, &hw, r->tpr, a.min_redundant, &a.opts, &chosen_ep,
					     candidates,
					     MAX_CANDIDATES);
	}
	status = cli_width("roofline", &model, a.ep ? a.ep : chosen_ep, a.slots, a.drafter_slots,
			   a.min_redundant, &r->w);
	if (status == EXIT_OK) {
		status = compute(r);
	}
	/* The picture first: when it cannot be drawn, nothing is written. */
	if (status == EXIT_OK && a.svg) {
		status = draw_svg(r, candidates, n_candidates);
	}
	if (status == EXIT_OK) {
		if (a.format != CLI_OUTPUT_TEXT) {
			status = cli_emit_doc(r->table ? table_doc(r) : point_doc(r), a.output, a.format);
		} else {
			status = cli_write_text(a.output, r->table ? print_table : print_point, r);
		}
	}
	free(r);
out:
	mp_model_finish(&model);
	mp_hardware_finish(&hw);
	return status;
}
