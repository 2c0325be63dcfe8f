/* The whole serving step of one GPU (step.h). */
#include "moeplan/step.h"
#include "moeplan/comm.h"
#include "moeplan/diag.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static const char *const term_names[MP_TERM_COUNT] = {
	[MP_TERM_ATTENTION] = "attention",
	[MP_TERM_DENSE] = "dense",
	[MP_TERM_SHARED] = "shared",
	[MP_TERM_LM_HEAD] = "lm_head",
	[MP_TERM_ROUTED] = "routed",
	[MP_TERM_DRAFTER] = "drafter",
	[MP_TERM_DISPATCH] = "dispatch",
	[MP_TERM_COMBINE] = "combine",
	[MP_TERM_TP_ALLREDUCE] = "tp_allreduce",
	[MP_TERM_OVERHEAD] = "overhead",
};

static const char *const bound_names[] = {
	"none", "memory", "compute", "scale_up", "scale_out", "latency", "fixed",
};

static const char *const overlap_names[] = {"none", "two_batch", "full"};
static const char *const kernel_names[] = {"auto", "low_latency", "normal"};
static const char *const factor_names[] = {"step_overhead", "hbm", "gemm", "exchange_latency"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *mp_step_term_name(enum mp_step_term_id id)
{
	return (unsigned)id < MP_TERM_COUNT ? term_names[id] : "unknown";
}

const char *mp_step_bound_name(enum mp_step_bound bound)
{
	return (unsigned)bound < COUNT(bound_names) ? bound_names[bound] : "unknown";
}

const char *mp_step_overlap_name(enum mp_step_overlap overlap)
{
	return (unsigned)overlap < COUNT(overlap_names) ? overlap_names[overlap] : "unknown";
}

const char *mp_step_kernel_name(enum mp_step_kernel kernel)
{
	return (unsigned)kernel < COUNT(kernel_names) ? kernel_names[kernel] : "unknown";
}

const char *mp_step_factor_name(enum mp_step_factor factor)
{
	return (unsigned)factor < COUNT(factor_names) ? factor_names[factor] : "unknown";
}

static int parse_name(const char *name, const char *const *names, size_t n, int *out)
{
	for (size_t i = 0; name && i < n; i++) {
		if (strcasecmp(name, names[i]) == 0) {
			*out = (int)i;
			return 0;
		}
	}
	return MP_EINVAL;
}

int mp_step_overlap_parse(const char *name, enum mp_step_overlap *out)
{
	int v;
	int rc = parse_name(name, overlap_names, COUNT(overlap_names), &v);
	if (rc == 0) {
		*out = (enum mp_step_overlap)v;
	}
	return rc;
}

int mp_step_kernel_parse(const char *name, enum mp_step_kernel *out)
{
	int v;
	int rc = parse_name(name, kernel_names, COUNT(kernel_names), &v);
	if (rc == 0) {
		*out = (enum mp_step_kernel)v;
	}
	return rc;
}

int mp_step_factor_parse(const char *name, enum mp_step_factor *out)
{
	int v;
	int rc = parse_name(name, factor_names, COUNT(factor_names), &v);
	if (rc == 0) {
		*out = (enum mp_step_factor)v;
	}
	return rc;
}

static double or_default(double v, double def)
{
	return v > 0.0 ? v : def;
}

void mp_step_efficiency(const struct mp_hardware *hw, struct mp_efficiency *out)
{
	const struct mp_efficiency *e = &hw->efficiency;
	*out = (struct mp_efficiency){
		.hbm = or_default(e->hbm, MP_STEP_DEFAULT_HBM_EFFICIENCY),
		.gemm = or_default(e->gemm, MP_STEP_DEFAULT_GEMM_EFFICIENCY),
		.attention = or_default(e->attention, MP_STEP_DEFAULT_ATTENTION_EFFICIENCY),
		.scale_up = or_default(e->scale_up, MP_STEP_DEFAULT_SCALE_UP_EFFICIENCY),
		.scale_out = or_default(e->scale_out, MP_STEP_DEFAULT_SCALE_OUT_EFFICIENCY),
		/* Times may be set to 0 on purpose only through a filled
		 * mp_step_input.efficiency; the hardware's 0 means default. */
		.exchange_latency_s = or_default(e->exchange_latency_s,
						 MP_STEP_DEFAULT_EXCHANGE_LATENCY_S),
		.step_overhead_s = or_default(e->step_overhead_s, MP_STEP_DEFAULT_STEP_OVERHEAD_S),
		.kernel_fixed_s = or_default(e->kernel_fixed_s, MP_STEP_DEFAULT_KERNEL_FIXED_S),
		.moe_fixed_s = or_default(e->moe_fixed_s, MP_STEP_DEFAULT_MOE_FIXED_S),
		.moe_fixed_per_expert_s = or_default(e->moe_fixed_per_expert_s,
						     MP_STEP_DEFAULT_MOE_FIXED_PER_EXPERT_S),
	};
}

void mp_step_input_init(struct mp_step_input *in)
{
	*in = (struct mp_step_input){
		.phase = MP_STEP_DECODE,
		.tokens_per_request = 1.0,
		.overlap = MP_OVERLAP_NONE,
		.kernel = MP_KERNEL_AUTO,
		.tp = 1,
		.busiest_factor = 1.0,
	};
}

/* --------------------------------------------------------------- context */

/* Everything one evaluation needs, resolved once. */
struct ctx {
	const struct mp_model *m;
	const struct mp_hardware *hw;
	const struct mp_step_input *in;
	const struct mp_kernel_table *kt; /* the table priced from, or NULL */
	struct mp_efficiency eff;
	enum mp_step_kernel kernel;
	double bw;          /* achieved HBM bytes/s */
	double gemm_peak;   /* achieved FLOP/s of the expert/dense GEMMs */
	double bf16_peak;   /* achieved FLOP/s of BF16 GEMMs (LM head) */
	double attn_peak;   /* achieved FLOP/s of attention */
	double tp;
	double ep;
	double g;           /* GPUs of the group in one scale-up domain */
	uint32_t nodes;
	double prompts;     /* prefill prompts per GPU */
	double isl;
	struct mp_step *use; /* from_table / table_clamped are recorded here */
};

/* The kernel table's efficiency for one term's kernel, or 0 when there is
 * no table or it has no row of that kind (the scalar factors then price
 * the term). Records the use in c->use. */
static double table_eff(const struct ctx *c, enum mp_kernel_kind kind, double primary,
			double secondary, enum mp_step_term_id term)
{
	double e = 0.0;
	bool cl = false;
	if (!c->kt || !(primary > 0.0) || !(secondary > 0.0) ||
	    mp_kernel_lookup(c->kt, kind, primary, secondary, &e, &cl) != 0 || !(e > 0.0)) {
		return 0.0;
	}
	c->use->from_table[term] = true;
	c->use->table_clamped[term] = c->use->table_clamped[term] || cl;
	return e;
}

static bool finite_nonneg(double v)
{
	return isfinite(v) && v >= 0.0;
}

static bool width_ok(uint32_t ep, uint32_t slots, uint32_t experts)
{
	return slots >= experts && slots % ep == 0;
}

static int check_input(const struct mp_model *m, const struct mp_hardware *hw,
		       const struct mp_step_input *in)
{
	const struct mp_ep_width *w = &in->width;
	if (m->hidden_size == 0 || m->top_k == 0 || m->routed_experts == 0 ||
	    m->top_k > m->routed_experts || w->ep == 0 ||
	    !width_ok(w->ep, w->slots, m->routed_experts)) {
		return MP_EINVAL;
	}
	const struct mp_drafter *d = &m->drafter;
	if (d->moe_stages > 0 && d->routed_experts > 0 &&
	    (!width_ok(w->ep, w->drafter_slots, d->routed_experts) || d->top_k == 0 ||
	     d->top_k > d->routed_experts)) {
		return MP_EINVAL;
	}
	if (!finite_nonneg(in->requests) || !finite_nonneg(in->context_tokens) ||
	    !finite_nonneg(in->chunk_tokens) || !finite_nonneg(in->isl) ||
	    !isfinite(in->tokens_per_request) || !isfinite(in->acceptance) ||
	    in->acceptance < 0.0 || in->acceptance > 1.0 || !isfinite(in->busiest_factor) ||
	    (in->busiest_factor != 0.0 && in->busiest_factor < 1.0)) {
		return MP_EINVAL;
	}
	if (in->phase == MP_STEP_DECODE) {
		if (!(in->requests > 0.0) || in->tokens_per_request < 1.0) {
			return MP_EINVAL;
		}
	} else if (in->phase == MP_STEP_PREFILL) {
		if (!(in->chunk_tokens > 0.0)) {
			return MP_EINVAL;
		}
	} else {
		return MP_EINVAL;
	}
	uint32_t tp = in->tp ? in->tp : 1;
	if (w->ep % tp != 0) {
		return MP_EINVAL;
	}
	if (!(hw->hbm_bw_bytes_per_s > 0.0) || !(hw->peak_flops[m->expert_compute] > 0.0)) {
		return MP_EINVAL;
	}
	if ((unsigned)in->overlap > MP_OVERLAP_FULL || (unsigned)in->kernel > MP_KERNEL_NORMAL) {
		return MP_EINVAL;
	}
	return 0;
}

static double peak_or(const struct mp_hardware *hw, enum mp_compute c, enum mp_compute fallback)
{
	double p = hw->peak_flops[c];
	return p > 0.0 ? p : hw->peak_flops[fallback];
}

static void ctx_init(struct ctx *c, const struct mp_model *m, const struct mp_hardware *hw,
		     const struct mp_step_input *in)
{
	*c = (struct ctx){.m = m, .hw = hw, .in = in};
	if (in->kernels) {
		c->kt = in->kernels;
	} else if (!in->scalar_factors && hw->kernels.n_rows > 0) {
		c->kt = &hw->kernels;
	}
	if (in->efficiency) {
		c->eff = *in->efficiency;
	} else {
		mp_step_efficiency(hw, &c->eff);
	}
	c->kernel = in->kernel;
	if (c->kernel == MP_KERNEL_AUTO) {
		c->kernel = in->phase == MP_STEP_DECODE ? MP_KERNEL_LOW_LATENCY : MP_KERNEL_NORMAL;
	}
	c->bw = c->eff.hbm * hw->hbm_bw_bytes_per_s;
	c->gemm_peak = c->eff.gemm * hw->peak_flops[m->expert_compute];
	c->bf16_peak = c->eff.gemm * peak_or(hw, MP_COMPUTE_BF16, m->expert_compute);
	c->attn_peak = c->eff.attention * peak_or(hw, MP_COMPUTE_BF16, m->expert_compute);
	c->tp = in->tp > 1 ? (double)in->tp : 1.0;
	c->ep = (double)in->width.ep;
	uint32_t dom = hw->scale_up_domain_gpus ? hw->scale_up_domain_gpus : in->width.ep;
	uint32_t g = dom < in->width.ep ? dom : in->width.ep;
	c->g = (double)g;
	c->nodes = (in->width.ep + g - 1) / g;
	c->isl = in->isl > 0.0 ? in->isl : in->chunk_tokens;
	c->prompts = in->requests > 0.0 ? in->requests : ceil(in->chunk_tokens / c->isl);
}

/* A compute term under the roofline: max(bytes / bw, flops / peak). */
static struct mp_step_term roof(double bytes, double flops, double bw, double peak)
{
	double tm = bytes > 0.0 ? bytes / bw : 0.0;
	double tc = flops > 0.0 && peak > 0.0 ? flops / peak : 0.0;
	struct mp_step_term t = {.bytes = bytes, .flops = flops};
	if (tm <= 0.0 && tc <= 0.0) {
		return t;
	}
	t.time_s = fmax(tm, tc);
	t.bound = tc > tm ? MP_BOUND_COMPUTE : MP_BOUND_MEMORY;
	return t;
}

/* Add a fixed part (step.h, "Fixed parts") to a priced term; the term is
 * bound "fixed" when its fixed part exceeds its priced part. */
static struct mp_step_term add_fixed(struct mp_step_term t, double fixed)
{
	if (!(fixed > 0.0)) {
		return t;
	}
	t.fixed_s += fixed;
	t.time_s += fixed;
	if (t.fixed_s > t.time_s - t.fixed_s) {
		t.bound = MP_BOUND_FIXED;
	}
	return t;
}

/* `kernels` kernels' fixed time. */
static double kernels_s(const struct ctx *c, double kernels)
{
	return kernels * c->eff.kernel_fixed_s;
}

static double hidden_layers(const struct mp_model *m)
{
	return (double)m->moe_layers + (double)m->dense_layers;
}

/* The attention module's kernels (step.h, MP_KERNELS_*): core or
 * projections. */
static double attention_kernels(const struct mp_model *m, bool core)
{
	bool mla = m->attention.kind == MP_ATTENTION_MLA;
	if (core) {
		return mla ? MP_KERNELS_ATTENTION_CORE : MP_KERNELS_GQA_CORE;
	}
	return mla ? MP_KERNELS_ATTENTION_PROJ : MP_KERNELS_GQA_PROJ;
}

/* One MoE block's fixed time at `slots_per_gpu` local experts. */
static double moe_fixed(const struct ctx *c, double slots_per_gpu)
{
	return c->eff.moe_fixed_s + c->eff.moe_fixed_per_expert_s * slots_per_gpu;
}

/* A term priced from the table: the roofline at the datasheet peaks
 * divided by the measured efficiency e. */
static struct mp_step_term roof_table(const struct ctx *c, double bytes, double flops, double e)
{
	struct mp_step_term t = roof(bytes, flops, c->hw->hbm_bw_bytes_per_s,
				     c->hw->peak_flops[c->m->expert_compute]);
	t.time_s /= e;
	return t;
}

/* ------------------------------------------------------------- attention */

/* FLOP per (query token, context token) pair in one layer. */
static double attention_pair_flops(const struct mp_attention *a, bool prefill)
{
	double h = (double)a->heads;
	if (a->kind == MP_ATTENTION_MLA) {
		if (prefill && a->qk_nope_dim && a->v_head_dim) {
			return 2.0 * h * (a->qk_nope_dim + a->rope_dim) + 2.0 * h * a->v_head_dim;
		}
		return 2.0 * h * (a->kv_lora_rank + a->rope_dim) + 2.0 * h * a->kv_lora_rank;
	}
	if (a->kind == MP_ATTENTION_GQA) {
		return 4.0 * h * (double)a->head_dim;
	}
	return 0.0;
}

/* Sum over KV layers of the context each query token attends to. */
static double layer_context(const struct mp_attention *a, double context)
{
	uint32_t sliding = a->sliding_layers <= a->kv_layers ? a->sliding_layers : a->kv_layers;
	double full = (double)(a->kv_layers - sliding);
	double win = a->sliding_window ? fmin(context, (double)a->sliding_window) : context;
	return full * context + (double)sliding * win;
}

/* GPUs a request's KV cache is split over under tp attention. */
static double kv_split(const struct ctx *c)
{
	const struct mp_attention *a = &c->m->attention;
	if (a->kind == MP_ATTENTION_GQA && a->kv_heads) {
		return fmin(c->tp, (double)a->kv_heads);
	}
	return 1.0;
}

/* Tokens per GPU scaled by `share` (1, or 1/2 for one micro-batch). */
static struct mp_step_term attention_term(const struct ctx *c, double share)
{
	const struct mp_model *m = c->m;
	const struct mp_step_input *in = c->in;
	double split = kv_split(c);
	double fpp = attention_pair_flops(&m->attention, in->phase == MP_STEP_PREFILL);
	double kv_tok = mp_model_kv_bytes_per_token(m);
	double bytes, flops;
	if (in->phase == MP_STEP_DECODE) {
		double req = in->requests * share;
		/* A TP group of tp GPUs holds tp x requests; each GPU reads
		 * their whole cache / split. */
		bytes = req * c->tp / split * mp_model_kv_bytes_per_request(m, in->context_tokens);
		double tokens = req * in->tokens_per_request;
		flops = tokens * fpp * layer_context(&m->attention, in->context_tokens);
	} else {
		double tokens = in->chunk_tokens * share;
		double prompts = c->prompts * share;
		/* Write the chunk's KV, read it back and read the cached
		 * prefix once per prompt. */
		bytes = c->tp / split *
			(2.0 * tokens * kv_tok +
			 prompts * mp_model_kv_bytes_per_request(m, in->context_tokens));
		double mean_ctx = in->context_tokens + (fmin(c->isl, in->chunk_tokens) + 1.0) / 2.0;
		if (c->isl > in->chunk_tokens) {
			mean_ctx = in->context_tokens + (c->isl + 1.0) / 2.0;
		}
		flops = tokens * fpp * layer_context(&m->attention, mean_ctx);
	}
	return add_fixed(roof(bytes, flops, c->bw, c->attn_peak),
			 kernels_s(c, hidden_layers(m) * attention_kernels(m, true)));
}

/* ------------------------------------------------------ replicated weights */

static double lm_head_bytes(const struct mp_model *m)
{
	return (double)m->vocab_size * (double)m->hidden_size * 2.0;
}

/* Replicated bytes read per step, without the embedding and the head. */
static double dense_bytes(const struct mp_model *m)
{
	double copies = m->tied_embeddings ? 1.0 : 2.0;
	double b = (double)m->dense_weight_bytes - copies * lm_head_bytes(m);
	return b > 0.0 ? b : 0.0;
}

static double tokens_per_gpu(const struct ctx *c, double share)
{
	if (c->in->phase == MP_STEP_DECODE) {
		return c->in->requests * c->in->tokens_per_request * share;
	}
	return c->in->chunk_tokens * share;
}

static struct mp_step_term dense_term(const struct ctx *c, double share)
{
	const struct mp_model *m = c->m;
	double bytes = dense_bytes(m);
	double params = bytes / (mp_format_bits(m->shared_format, m->int4_group_size) / 8.0);
	double t = tokens_per_gpu(c, share);
	/* attention projections and norms per layer, router per MoE layer,
	 * an MLP per dense layer */
	double kernels = hidden_layers(m) * (attention_kernels(m, false) + MP_KERNELS_NORMS_PER_LAYER) +
			 (double)m->moe_layers * MP_KERNELS_ROUTER +
			 (double)m->dense_layers * MP_KERNELS_MLP;
	double e = table_eff(c, MP_KERNEL_GEMM_DENSE, t, (double)m->hidden_size, MP_TERM_DENSE);
	struct mp_step_term r = e > 0.0 ? roof_table(c, bytes / c->tp, 2.0 * params * t, e)
					: roof(bytes / c->tp, 2.0 * params * t, c->bw, c->gemm_peak);
	return add_fixed(r, kernels_s(c, kernels));
}

static struct mp_step_term shared_term(const struct ctx *c, double share)
{
	const struct mp_model *m = c->m;
	struct mp_expert_cost e;
	mp_roofline_shared_expert(m, &e);
	double n = (double)m->moe_layers * (double)m->shared_experts;
	double t = tokens_per_gpu(c, share);
	double te = table_eff(c, MP_KERNEL_GEMM_DENSE, t, (double)m->hidden_size, MP_TERM_SHARED);
	struct mp_step_term r =
		te > 0.0 ? roof_table(c, n * e.weight_bytes / c->tp, n * t * e.flops_per_token, te)
			 : roof(n * e.weight_bytes / c->tp, n * t * e.flops_per_token, c->bw, c->gemm_peak);
	/* one MLP per MoE layer (several shared experts run as one wider MLP) */
	double layers = m->shared_experts ? (double)m->moe_layers : 0.0;
	return add_fixed(r, kernels_s(c, layers * MP_KERNELS_MLP));
}

static double logit_tokens(const struct ctx *c, double share)
{
	return c->in->phase == MP_STEP_DECODE ? tokens_per_gpu(c, share) : c->prompts * share;
}

static struct mp_step_term lm_head_term(const struct ctx *c, double share)
{
	const struct mp_model *m = c->m;
	double bytes = lm_head_bytes(m);
	double flops = 2.0 * (double)m->vocab_size * (double)m->hidden_size * logit_tokens(c, share);
	return roof(bytes / c->tp, flops, c->bw, c->bf16_peak);
}

/* ------------------------------------------------------------ experts */

/* One MoE part (main model or drafter): `layers` layers of E experts,
 * top-k, `slots` physical slots over ep GPUs, T tokens per GPU. */
static struct mp_step_term routed_part(const struct ctx *c, const struct mp_expert_cost *e,
				       uint32_t layers, uint32_t top_k, uint32_t slots, double t,
				       double *touched_out, enum mp_step_term_id term, double *fixed_out)
{
	double sg = (double)slots / c->ep;
	double k = (double)top_k;
	double group_tokens = t * c->ep;
	double miss = 1.0 - fmin(1.0, k / (double)slots);
	double touched = sg * (1.0 - pow(miss, group_tokens));
	if (touched_out) {
		*touched_out = touched;
	}
	double wbytes = touched * e->weight_bytes;
	double abytes = t * k * e->act_bytes_per_visit;
	double flops = t * k * e->flops_per_token;
	/* the moe_block rows only for the expert shape they were measured on */
	double te = c->kt && mp_kernel_shape_matches(c->kt, MP_KERNEL_MOE_BLOCK, (double)c->m->hidden_size,
						     (double)c->m->expert_intermediate_size)
			    ? table_eff(c, MP_KERNEL_MOE_BLOCK, sg, t, term)
			    : 0.0;
	/* the moe_block rows are measured end to end: they hold the fixed part */
	*fixed_out = te > 0.0 ? 0.0 : (double)layers * moe_fixed(c, sg);
	if (!(te > 0.0)) {
		te = table_eff(c, MP_KERNEL_GEMM_MASKED, t * k / sg, (double)c->m->hidden_size, term);
	}
	struct mp_step_term one = te > 0.0 ? roof_table(c, wbytes + abytes, flops, te)
					   : roof(wbytes + abytes, flops, c->bw, c->gemm_peak);
	one.time_s *= (double)layers;
	one.bytes *= (double)layers;
	one.flops *= (double)layers;
	return one;
}

static struct mp_step_term routed_term(const struct ctx *c, double share, double *touched)
{
	const struct mp_model *m = c->m;
	struct mp_expert_cost e;
	mp_roofline_expert(m, &e);
	double fixed = 0.0;
	struct mp_step_term r = routed_part(c, &e, m->moe_layers, m->top_k, c->in->width.slots,
					    tokens_per_gpu(c, share), touched, MP_TERM_ROUTED, &fixed);
	double f = c->in->busiest_factor > 1.0 ? c->in->busiest_factor : 1.0;
	r.time_s *= f;
	return add_fixed(r, fixed);
}

static bool has_drafter_experts(const struct mp_model *m)
{
	return m->drafter.moe_stages > 0 && m->drafter.routed_experts > 0;
}

static struct mp_step_term drafter_term(const struct ctx *c, double share)
{
	const struct mp_model *m = c->m;
	const struct mp_drafter *d = &m->drafter;
	struct mp_step_term sum = {0};
	if (d->moe_stages == 0) {
		return sum;
	}
	double t = tokens_per_gpu(c, share);
	double fixed = kernels_s(c, (double)d->moe_stages * MP_KERNELS_DRAFTER_STAGE);
	if (has_drafter_experts(m)) {
		struct mp_expert_cost e;
		mp_roofline_drafter_expert(m, &e);
		double moe = 0.0;
		sum = routed_part(c, &e, d->moe_stages, d->top_k, c->in->width.drafter_slots, t, NULL,
				  MP_TERM_DRAFTER, &moe);
		fixed += moe;
		double f = c->in->busiest_factor > 1.0 ? c->in->busiest_factor : 1.0;
		sum.time_s *= f;
	}
	/* Other weights (attention, projections, shared expert) once, the
	 * LM head once per stage, one KV layer per stage. */
	double stages = (double)d->moe_stages;
	double other = (double)d->other_weight_bytes / c->tp;
	double params = (double)d->other_weight_bytes /
			(mp_format_bits(m->shared_format, m->int4_group_size) / 8.0);
	struct mp_step_term o = roof(other, 2.0 * params * t, c->bw, c->gemm_peak);
	struct mp_step_term h = lm_head_term(c, share);
	double kv_layer = m->attention.kv_layers
				  ? mp_model_kv_bytes_per_token(m) / (double)m->attention.kv_layers
				  : 0.0;
	double kv = c->in->phase == MP_STEP_DECODE
			    ? c->in->requests * share * c->tp / kv_split(c) * c->in->context_tokens * kv_layer
			    : 0.0;
	struct mp_step_term a = roof(stages * kv, 0.0, c->bw, c->attn_peak);
	double time = sum.time_s + o.time_s + stages * h.time_s + a.time_s;
	sum.bytes += o.bytes + stages * h.bytes + a.bytes;
	sum.flops += o.flops + stages * h.flops;
	sum.time_s = time;
	sum.bound = sum.bytes / c->bw >= sum.flops / c->gemm_peak ? MP_BOUND_MEMORY : MP_BOUND_COMPUTE;
	return add_fixed(sum, fixed);
}

/* ------------------------------------------------------------ exchange */

/* Bytes of one dispatched token: FP8 carries one FP32 scale per 128
 * values (DeepEP tests/legacy/test_low_latency.py num_fp8_bytes). */
static double dispatch_msg(const struct mp_model *m, uint32_t hidden)
{
	double d = (double)hidden;
	double bd = mp_format_bytes(m->dispatch_format);
	return d * bd + (bd < 2.0 ? 4.0 * ceil(d / 128.0) : 0.0);
}

static double combine_msg(const struct mp_model *m, uint32_t hidden)
{
	return (double)hidden * mp_format_bytes(m->combine_format);
}

/* Messages per GPU per exchange on each link, for T tokens with k visits. */
static void exchange_msgs(const struct ctx *c, uint32_t top_k, double t, double *out_msgs,
			  double *up_msgs)
{
	double ep = c->ep;
	double g = c->g;
	double k = (double)top_k;
	if (c->in->width.ep <= 1) {
		*out_msgs = 0.0;
		*up_msgs = 0.0;
		return;
	}
	if (c->kernel == MP_KERNEL_LOW_LATENCY) {
		*out_msgs = t * k * (ep - g) / ep;
		*up_msgs = t * k * (g - 1.0) / ep;
		return;
	}
	uint32_t max_nodes = c->m->n_groups > 0 ? c->m->topk_groups : 0;
	double remote = 0.0;
	if (c->nodes > 1) {
		double dnodes = mp_comm_expected_nodes(c->nodes, top_k, max_nodes);
		remote = dnodes * (double)(c->nodes - 1) / (double)c->nodes;
	}
	double ranks = ep * (1.0 - pow(1.0 - 1.0 / ep, k));
	*out_msgs = t * remote;
	*up_msgs = t * ranks * (g - 1.0) / g;
}

/* One exchange kind (dispatch or combine) over the MoE layers and the
 * drafter's stages. */
static struct mp_step_term exchange_term(const struct ctx *c, double share, bool dispatch)
{
	const struct mp_model *m = c->m;
	struct mp_step_term r = {0};
	if (c->in->width.ep <= 1) {
		return r;
	}
	double t = tokens_per_gpu(c, share);
	const double f = c->in->busiest_factor > 1.0 ? c->in->busiest_factor : 1.0;
	double out_bw = c->eff.scale_out * c->hw->scale_out_bw_bytes_per_s;
	double up_bw = c->eff.scale_up * c->hw->scale_up_bw_bytes_per_s;
	struct {
		uint32_t layers, top_k, hidden;
	} parts[2] = {
		{m->moe_layers, m->top_k, m->hidden_size},
		{has_drafter_experts(m) ? m->drafter.moe_stages : 0, m->drafter.top_k,
		 m->drafter.hidden_size ? m->drafter.hidden_size : m->hidden_size},
	};
	double t_out = 0.0, t_up = 0.0, t_lat = 0.0;
	for (int i = 0; i < 2; i++) {
		if (parts[i].layers == 0) {
			continue;
		}
		double om, um;
		exchange_msgs(c, parts[i].top_k, t, &om, &um);
		/* The busiest GPU receives f times the mean visits in dispatch
		 * and sends them back in combine; a low-latency exchange ends
		 * when it is done (every visit crosses to its expert's GPU). A
		 * normal exchange crosses the network once per node (node
		 * imbalance is the placement's node balance, not f): only its
		 * NVLink fan-out to the busiest GPU scales. */
		om *= c->kernel == MP_KERNEL_LOW_LATENCY ? f : 1.0;
		um *= f;
		double msg = dispatch ? dispatch_msg(m, parts[i].hidden) : combine_msg(m, parts[i].hidden);
		double n = (double)parts[i].layers;
		double ob = om * msg, ub = um * msg;
		double to = ob > 0.0 ? ob / out_bw : 0.0;
		double tu = ub > 0.0 ? ub / up_bw : 0.0;
		r.bytes += n * (ob + ub);
		r.time_s += n * (c->eff.exchange_latency_s + fmax(to, tu));
		t_out += n * to;
		t_up += n * tu;
		t_lat += n * c->eff.exchange_latency_s;
	}
	r.fixed_s = t_lat;
	if (r.time_s > 0.0) {
		r.bound = t_lat >= fmax(t_out, t_up) ? MP_BOUND_LATENCY
			  : t_out >= t_up             ? MP_BOUND_SCALE_OUT
						      : MP_BOUND_SCALE_UP;
	}
	return r;
}

static struct mp_step_term allreduce_term(const struct ctx *c, double share)
{
	struct mp_step_term r = {0};
	if (c->tp <= 1.0) {
		return r;
	}
	const struct mp_model *m = c->m;
	double layers = (double)m->moe_layers + (double)m->dense_layers;
	double size = tokens_per_gpu(c, share) * c->tp * (double)m->hidden_size * 2.0;
	double bytes = 2.0 * (c->tp - 1.0) / c->tp * size;
	double up_bw = c->eff.scale_up * c->hw->scale_up_bw_bytes_per_s;
	r.bytes = 2.0 * layers * bytes;
	double lat = 2.0 * layers * c->eff.exchange_latency_s;
	double tx = r.bytes / up_bw;
	r.time_s = lat + tx;
	r.fixed_s = lat;
	r.bound = lat >= tx ? MP_BOUND_LATENCY : MP_BOUND_SCALE_UP;
	return r;
}

/* All terms at one share of the batch. */
static void all_terms(const struct ctx *c, double share, struct mp_step_term *terms,
		      double *touched)
{
	terms[MP_TERM_ATTENTION] = attention_term(c, share);
	terms[MP_TERM_DENSE] = dense_term(c, share);
	terms[MP_TERM_SHARED] = shared_term(c, share);
	terms[MP_TERM_LM_HEAD] =
		add_fixed(c->m->vocab_size ? lm_head_term(c, share) : (struct mp_step_term){0},
			  kernels_s(c, MP_KERNELS_LM_HEAD + MP_KERNELS_SAMPLER));
	terms[MP_TERM_ROUTED] = routed_term(c, share, touched);
	terms[MP_TERM_DRAFTER] = drafter_term(c, share);
	terms[MP_TERM_DISPATCH] = exchange_term(c, share, true);
	terms[MP_TERM_COMBINE] = exchange_term(c, share, false);
	terms[MP_TERM_TP_ALLREDUCE] = allreduce_term(c, share);
	terms[MP_TERM_OVERHEAD] = (struct mp_step_term){
		.time_s = c->eff.step_overhead_s,
		.fixed_s = c->eff.step_overhead_s,
		.bound = c->eff.step_overhead_s > 0.0 ? MP_BOUND_FIXED : MP_BOUND_NONE,
	};
}

static bool is_exchange(int id)
{
	return id == MP_TERM_DISPATCH || id == MP_TERM_COMBINE || id == MP_TERM_TP_ALLREDUCE;
}

/* two_batch as SGLang schedules it (sgl-project/sglang 60d36e7be,
 * python/sglang/srt/batch_overlap/operations_strategy.py): in decode,
 * _compute_moe_deepseek_blog_decode (tbo_delta_stages = 2) runs one
 * micro-batch's attention and router under the other's combine, and its
 * shared and routed experts under the other's dispatch (DeepSeek's
 * published decode schedule, deepseek-ai/profile-data README); in
 * prefill, _compute_moe_deepseek_blog_prefill (tbo_delta_stages = 0)
 * yields after dispatch_a and combine_a: attention under dispatch,
 * experts under combine. Per MoE layer and micro-batch the stage takes
 * the longer of the pair; every MoE layer has the same shape, so the sum
 * over layers of per-layer maxima is the maximum of the totals. The
 * attention stage holds the attention core and the `dense` term (the
 * attention projections of every layer and the dense layers' FFN, which
 * the model does not split: both are spread over the layers evenly, the
 * MoE layers' share, moe / (moe + dense), in the stage; op_prepare of
 * self_attn runs the projections there). The dense layers' share, the LM
 * head, the drafter and the TP all-reduce run beside no exchange and add. The drafter's own exchange
 * is counted in dispatch and combine (one MTP layer against 58: it is
 * paired as if it were a main layer's). terms[] hold both micro-batches. */
static double two_batch_body(const struct mp_model *m, enum mp_step_phase phase,
			     const struct mp_step_term *t, bool *hidden)
{
	double layers = (double)m->moe_layers + (double)m->dense_layers;
	double moe_share = layers > 0.0 ? (double)m->moe_layers / layers : 0.0;
	double layer_terms = t[MP_TERM_ATTENTION].time_s + t[MP_TERM_DENSE].time_s;
	double attn = layer_terms * moe_share;
	double experts = t[MP_TERM_SHARED].time_s + t[MP_TERM_ROUTED].time_s;
	double dispatch = t[MP_TERM_DISPATCH].time_s, combine = t[MP_TERM_COMBINE].time_s;
	double rest = layer_terms - attn + t[MP_TERM_LM_HEAD].time_s + t[MP_TERM_DRAFTER].time_s +
		      t[MP_TERM_TP_ALLREDUCE].time_s;
	bool prefill = phase == MP_STEP_PREFILL;
	double under_attn = prefill ? dispatch : combine;
	double under_experts = prefill ? combine : dispatch;
	/* the shorter side of each stage is off the critical path */
	hidden[MP_TERM_ATTENTION] = hidden[MP_TERM_DENSE] = attn <= under_attn;
	hidden[MP_TERM_SHARED] = hidden[MP_TERM_ROUTED] = experts <= under_experts;
	hidden[prefill ? MP_TERM_DISPATCH : MP_TERM_COMBINE] = under_attn < attn;
	hidden[prefill ? MP_TERM_COMBINE : MP_TERM_DISPATCH] = under_experts < experts;
	return fmax(attn, under_attn) + fmax(experts, under_experts) + rest;
}

int mp_step_evaluate(const struct mp_model *model, const struct mp_hardware *hw,
		     const struct mp_step_input *in, struct mp_step *out)
{
	int rc = check_input(model, hw, in);
	if (rc != 0) {
		return rc;
	}
	struct ctx c;
	ctx_init(&c, model, hw, in);
	if (c.nodes > 1 && !(hw->scale_out_bw_bytes_per_s > 0.0)) {
		return MP_EINVAL;
	}
	if (in->width.ep > 1 && c.g > 1.0 && !(hw->scale_up_bw_bytes_per_s > 0.0)) {
		return MP_EINVAL;
	}
	if (c.tp > 1.0 && !(hw->scale_up_bw_bytes_per_s > 0.0)) {
		return MP_EINVAL;
	}
	struct mp_step s = {
		.overlap = in->overlap,
		.kernel = c.kernel,
		.efficiency = c.eff,
		.nodes = c.nodes,
		.kernel_table = c.kt != NULL,
		.kernel_table_name = !c.kt ? NULL : in->kernels ? in->kernels_name : hw->kernels_path,
		.scalar_forced = !c.kt && (in->scalar_factors || hw->kernels_none),
	};
	c.use = &s;
	bool two = in->overlap == MP_OVERLAP_TWO_BATCH;
	double share = two ? 0.5 : 1.0;
	double touched = 0.0;
	all_terms(&c, share, s.terms, &touched);
	double compute = 0.0, exchange = 0.0;
	for (int i = 0; i < MP_TERM_COUNT; i++) {
		if (i == MP_TERM_OVERHEAD) {
			continue;
		}
		if (two) {
			/* Report what the step executes: both micro-batches. */
			s.terms[i].time_s *= 2.0;
			s.terms[i].fixed_s *= 2.0;
			s.terms[i].bytes *= 2.0;
			s.terms[i].flops *= 2.0;
		}
		if (is_exchange(i)) {
			exchange += s.terms[i].time_s;
		} else {
			compute += s.terms[i].time_s;
		}
	}
	double body;
	switch (in->overlap) {
	case MP_OVERLAP_TWO_BATCH:
		body = two_batch_body(model, in->phase, s.terms, s.hidden);
		break;
	case MP_OVERLAP_FULL:
		body = fmax(compute, exchange);
		for (int i = 0; i < MP_TERM_COUNT; i++) {
			s.hidden[i] = i != MP_TERM_OVERHEAD &&
				      (is_exchange(i) ? exchange <= compute : compute < exchange);
		}
		break;
	default:
		body = compute + exchange;
		break;
	}
	s.compute_s = compute;
	s.exchange_s = exchange;
	s.exposed_exchange_s = body - compute > 0.0 ? body - compute : 0.0;
	s.step_time_s = body + s.terms[MP_TERM_OVERHEAD].time_s;
	s.routed_touched_slots = touched;
	s.routed_slots_per_gpu = (double)in->width.slots / c.ep;
	s.tokens_per_expert = mp_roofline_tokens_per_expert(tokens_per_gpu(&c, 1.0), model->top_k,
							    in->width.ep, in->width.slots);
	s.tokens_per_step = tokens_per_gpu(&c, 1.0);
	if (in->phase == MP_STEP_DECODE) {
		double tau = 1.0 + (in->tokens_per_request - 1.0) * in->acceptance;
		s.requests = in->requests;
		s.accepted_tokens_per_step = in->requests * tau;
		s.tokens_per_s_per_user = s.step_time_s > 0.0 ? tau / s.step_time_s : 0.0;
		s.tpot_s = s.step_time_s / tau;
	} else {
		s.requests = c.prompts;
		s.accepted_tokens_per_step = s.tokens_per_step;
		s.ttft_s = ceil(c.isl / in->chunk_tokens) * s.step_time_s;
	}
	s.tokens_per_s_per_gpu = s.step_time_s > 0.0 ? s.accepted_tokens_per_step / s.step_time_s : 0.0;
	*out = s;
	return 0;
}

/* ------------------------------------------------------------ capacity */

void mp_step_capacity_input(const struct mp_step_input *in, struct mp_capacity_input *out)
{
	struct mp_capacity_input c = {
		.prefill = in->phase == MP_STEP_PREFILL,
		.width = in->width,
		.requests = in->requests,
		.context_tokens = in->context_tokens,
		.tokens_per_request = in->tokens_per_request,
	};
	if (c.prefill) {
		double isl = in->isl > 0.0 ? in->isl : in->chunk_tokens;
		c.chunk_tokens = in->chunk_tokens;
		c.context_tokens = in->context_tokens + isl;
		if (!(c.requests > 0.0)) {
			c.requests = ceil(in->chunk_tokens / isl);
		}
	}
	*out = c;
}

int mp_step_max_requests(const struct mp_model *model, const struct mp_hardware *hw,
			 const struct mp_capacity_options *cap_opts, const struct mp_step_input *in,
			 uint64_t *out)
{
	struct mp_capacity_input c;
	mp_step_capacity_input(in, &c);
	return mp_capacity_max_requests(model, hw, cap_opts, &c, out);
}

/* ------------------------------------------------------------ calibration */

static double *factor_field(struct mp_efficiency *e, enum mp_step_factor f)
{
	switch (f) {
	case MP_FACTOR_STEP_OVERHEAD:
		return &e->step_overhead_s;
	case MP_FACTOR_HBM:
		return &e->hbm;
	case MP_FACTOR_GEMM:
		return &e->gemm;
	case MP_FACTOR_EXCHANGE_LATENCY:
		return &e->exchange_latency_s;
	}
	return NULL;
}

int mp_step_calibrate(const struct mp_model *model, const struct mp_hardware *hw,
		      const struct mp_step_input *in, enum mp_step_factor factor,
		      double measured_s, struct mp_efficiency *out)
{
	if (!(measured_s > 0.0) || !isfinite(measured_s)) {
		return MP_EINVAL;
	}
	struct mp_efficiency e;
	if (in->efficiency) {
		e = *in->efficiency;
	} else {
		mp_step_efficiency(hw, &e);
	}
	double *field = factor_field(&e, factor);
	if (!field) {
		return MP_EINVAL;
	}
	bool is_time = factor == MP_FACTOR_STEP_OVERHEAD || factor == MP_FACTOR_EXCHANGE_LATENCY;
	double lo = is_time ? 0.0 : 0.01;
	double hi = is_time ? 10.0 : 1.0;
	struct mp_step_input probe = *in;
	probe.efficiency = &e;
	struct mp_step s;
	/* step(lo) and step(hi) bracket the measurement or nothing does:
	 * the step grows with a time and shrinks with an efficiency. */
	*field = lo;
	int rc = mp_step_evaluate(model, hw, &probe, &s);
	if (rc != 0) {
		return rc;
	}
	double at_lo = s.step_time_s;
	*field = hi;
	mp_step_evaluate(model, hw, &probe, &s);
	double at_hi = s.step_time_s;
	if (measured_s < fmin(at_lo, at_hi) || measured_s > fmax(at_lo, at_hi)) {
		return MP_ENOFIT;
	}
	for (int i = 0; i < 200 && hi - lo > 1e-12 * fmax(1.0, hi); i++) {
		double mid = 0.5 * (lo + hi);
		*field = mid;
		mp_step_evaluate(model, hw, &probe, &s);
		bool too_slow = s.step_time_s > measured_s;
		/* Time factors: too slow means the value is too high;
		 * efficiencies: too slow means it is too low. */
		if (too_slow == is_time) {
			hi = mid;
		} else {
			lo = mid;
		}
	}
	*field = 0.5 * (lo + hi);
	*out = e;
	return 0;
}
