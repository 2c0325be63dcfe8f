/* Choosing the EP width of each phase (widths.h). */
#include "moeplan/widths.h"
#include "moeplan/diag.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Widest candidate list: powers of two up to 2^31, six extras and the
 * widths that tile the phase's GPUs (at most 24 divisors). */
#define MAX_CANDIDATES 64
#define MAX_DIVISORS 24

static const char *const verdict_names[] = {
	[MP_WIDTH_CHOSEN] = "chosen",
	[MP_WIDTH_OUTRANKED] = "outranked",
	[MP_WIDTH_BELOW_RIDGE] = "below-ridge",
	[MP_WIDTH_WIDER_THAN_NEEDED] = "wider-than-needed",
	[MP_WIDTH_NO_FIT] = "no-fit",
	[MP_WIDTH_EXCEEDS_DOMAIN] = "exceeds-domain",
	[MP_WIDTH_EXCEEDS_GPUS] = "exceeds-gpus",
	[MP_WIDTH_OUT_OF_RANGE] = "out-of-range",
	[MP_WIDTH_TOO_FEW_EXPERTS] = "too-few-experts",
	[MP_WIDTH_NO_SLOTS] = "no-slots",
	[MP_WIDTH_NOT_FIXED] = "not-fixed",
	[MP_WIDTH_MISSES_SLO] = "misses-slo",
	[MP_WIDTH_ATTENTION_TP] = "attention-tp",
};

const char *mp_width_verdict_name(enum mp_width_verdict verdict)
{
	if ((unsigned)verdict >= sizeof(verdict_names) / sizeof(verdict_names[0])) {
		return "unknown";
	}
	return verdict_names[verdict];
}

void mp_widths_init(struct mp_widths *widths)
{
	*widths = (struct mp_widths){0};
}

void mp_widths_finish(struct mp_widths *widths)
{
	if (!widths) {
		return;
	}
	free(widths->items);
	*widths = (struct mp_widths){0};
}

/* round_up(x, m) in 64 bits; 0 when it does not fit 32. */
static uint32_t round_up(uint64_t x, uint32_t m)
{
	uint64_t r = (x + m - 1) / m * m;
	return r > UINT32_MAX ? 0 : (uint32_t)r;
}

uint32_t mp_widths_drafter_slots(const struct mp_phase_spec *phase, const struct mp_model *model,
				 uint32_t ep)
{
	const struct mp_drafter *d = &model->drafter;
	if (d->moe_stages == 0 || d->routed_experts == 0 || ep == 0) {
		return 0;
	}
	if (phase->slot_rule == MP_SLOTS_FIXED_PER_GPU) {
		return round_up(d->routed_experts, ep);
	}
	return mp_phase_slots(phase, d->routed_experts, ep);
}

static int reject(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int reject(char *why, size_t size, const char *fmt, ...)
{
	if (why && size) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, size, fmt, ap);
		va_end(ap);
	}
	return MP_EINVAL;
}

int mp_widths_check(const struct mp_model *model, const struct mp_ep_width *w, char *why,
		    size_t size)
{
	uint32_t e = model->routed_experts;
	if (w->ep == 0) {
		return reject(why, size, "EP0: the width must be at least 1 GPU");
	}
	if (w->ep > e) {
		return reject(why, size, "%u GPUs but only %u experts per layer", w->ep, e);
	}
	if (w->slots < e || w->slots % w->ep != 0 || w->slots / w->ep > e) {
		return reject(why, size,
			      "%u slots: expected at least %u (the experts), a multiple of EP%u and at most %u per GPU",
			      w->slots, e, w->ep, e);
	}
	uint32_t d = model->drafter.routed_experts;
	if (model->drafter.moe_stages > 0 && d > 0 &&
	    (w->drafter_slots < d || w->drafter_slots % w->ep != 0 || w->drafter_slots / w->ep > d)) {
		return reject(why, size,
			      "%u drafter slots: expected at least %u (the drafter's experts), a multiple of EP%u and at most %u per GPU",
			      w->drafter_slots, d, w->ep, d);
	}
	return 0;
}

int mp_widths_width(const struct mp_model *model, const struct mp_phase_spec *phase, uint32_t ep,
		    struct mp_ep_width *out)
{
	struct mp_ep_width w = {
		.ep = ep,
		.slots = mp_phase_slots(phase, model->routed_experts, ep),
		.drafter_slots = mp_widths_drafter_slots(phase, model, ep),
	};
	bool has_drafter = model->drafter.moe_stages > 0 && model->drafter.routed_experts > 0;
	if (w.slots == 0 || (has_drafter && w.drafter_slots == 0)) {
		return MP_EINVAL;
	}
	*out = w;
	return 0;
}

void mp_widths_capacity_input(const struct mp_phase_spec *phase, enum mp_phase_kind kind,
			      const struct mp_ep_width *width, struct mp_capacity_input *out)
{
	struct mp_capacity_input in = {
		.prefill = kind == MP_PHASE_PREFILL,
		.width = *width,
		.requests = phase->requests_per_gpu,
		.context_tokens = phase->context_tokens,
		.tokens_per_request = phase->tokens_per_request,
	};
	if (kind == MP_PHASE_PREFILL) {
		/* The prompts being prefilled hold their KV cache: isl tokens
		 * each (else context_tokens, else one chunk), as the step's
		 * capacity (mp_step_capacity_input) counts them. */
		double prompt = phase->isl > 0.0 ? phase->isl
			       : (phase->context_tokens > 0.0 ? phase->context_tokens
							      : phase->chunk_tokens);
		in.chunk_tokens = phase->chunk_tokens;
		in.context_tokens = prompt;
		if (!(in.requests > 0.0) && prompt > 0.0) {
			in.requests = ceil(phase->chunk_tokens / prompt);
		}
	}
	*out = in;
}

static size_t add_candidate(uint32_t *list, size_t n, uint32_t ep)
{
	if (ep == 0 || n >= MAX_CANDIDATES) {
		return n;
	}
	for (size_t i = 0; i < n; i++) {
		if (list[i] == ep) {
			return n;
		}
	}
	list[n] = ep;
	return n + 1;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a;
	uint32_t y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static uint32_t phase_limit(const struct mp_phase_spec *phase, enum mp_phase_kind kind)
{
	uint32_t domain = phase->hardware.scale_up_domain_gpus;
	uint32_t gpus = phase->gpus;
	uint32_t limit;
	if (kind == MP_PHASE_DECODE) {
		/* A decode group may span scale-up domains (issue 12): the
		 * step model prices its exchange on the network. */
		limit = gpus ? gpus : domain;
		if (phase->ep_max && (limit == 0 || phase->ep_max < limit)) {
			limit = phase->ep_max;
		}
	} else {
		limit = phase->ep_max ? phase->ep_max : (gpus ? gpus : 8);
		if (gpus && gpus < limit) {
			limit = gpus;
		}
	}
	return limit ? limit : 1;
}

static void say(struct mp_width_candidate *c, enum mp_width_verdict v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(struct mp_width_candidate *c, enum mp_width_verdict v, const char *fmt, ...)
{
	va_list ap;
	c->verdict = v;
	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
	va_end(ap);
}

void mp_widths_step_input(const struct mp_model *model, const struct mp_phase_spec *phase,
			  enum mp_phase_kind kind, const struct mp_ep_width *width, double requests,
			  struct mp_step_input *out)
{
	struct mp_step_input in;
	mp_step_input_init(&in);
	bool drafter = model->drafter.moe_stages > 0;
	in.width = *width;
	in.requests = requests;
	in.tokens_per_request = phase->tokens_per_request >= 1.0 ? phase->tokens_per_request : 1.0;
	in.acceptance = phase->acceptance >= 0.0 ? phase->acceptance : (drafter ? 0.75 : 0.0);
	in.overlap = phase->overlap;
	in.kernel = phase->kernel;
	in.tp = phase->attention_tp > 1 ? phase->attention_tp : 1;
	if (kind == MP_PHASE_PREFILL) {
		in.phase = MP_STEP_PREFILL;
		in.chunk_tokens = phase->chunk_tokens;
		in.isl = phase->isl > 0.0 ? phase->isl
					  : (phase->context_tokens > 0.0 ? phase->context_tokens
									 : phase->chunk_tokens);
		in.context_tokens = 0.0;
	} else {
		in.context_tokens = phase->context_tokens;
	}
	*out = in;
}

double mp_widths_rank_time(const struct mp_width_candidate *c, double factor)
{
	double f = factor > 1.0 ? factor : 1.0;
	/* GPUs of the phase that no group of this width can use stay idle. */
	double pool = c->pool_fraction > 0.0 ? c->pool_fraction : 1.0;
	if (c->has_step) {
		const struct mp_step *s = &c->step;
		/* Exact at the factor the step was evaluated at; otherwise
		 * the routed term is rescaled and taken as exposed. */
		double at = c->step_factor > 1.0 ? c->step_factor : 1.0;
		double t = s->step_time_s + (f / at - 1.0) * s->terms[MP_TERM_ROUTED].time_s;
		return s->accepted_tokens_per_step > 0.0 ? t / s->accepted_tokens_per_step / pool
							  : HUGE_VAL;
	}
	double t = c->expert_time_s * f;
	return (c->tokens_per_gpu > 0.0 ? t / c->tokens_per_gpu : t) / pool;
}

/* The step at `requests`; false when the step model cannot run. */
static bool step_at(const struct mp_model *model, const struct mp_phase_spec *phase,
		    enum mp_phase_kind kind, const struct mp_ep_width *w, double factor,
		    double requests, struct mp_step *out)
{
	struct mp_step_input in;
	mp_widths_step_input(model, phase, kind, w, requests, &in);
	in.busiest_factor = factor;
	return mp_step_evaluate(model, &phase->hardware, &in, out) == 0;
}

/* Decode without a fixed batch, or any phase with a target: the batch the
 * width is judged at and its step. */
static void choose_batch(const struct mp_model *model, const struct mp_phase_spec *phase,
			 enum mp_phase_kind kind, const struct mp_capacity_options *cap_opts,
			 struct mp_width_candidate *c)
{
	const struct mp_ep_width *w = &c->width;
	const double f = c->busiest_factor;
	bool decode = kind == MP_PHASE_DECODE;
	c->step_factor = f;
	if (decode) {
		struct mp_step_input si;
		mp_widths_step_input(model, phase, kind, w, 1.0, &si);
		c->has_max_requests =
			mp_step_max_requests(model, &phase->hardware, cap_opts, &si, &c->max_requests) == 0;
		if (!(phase->requests_per_gpu > 0.0)) {
			c->requests = c->has_max_requests ? (double)c->max_requests : 0.0;
		}
		if (!(c->requests >= 1.0)) {
			return; /* not even one request fits: the HBM verdict says so */
		}
	}
	c->has_step = step_at(model, phase, kind, w, f, c->requests, &c->step);
	if (!c->has_step) {
		return;
	}
	if (decode && phase->slo_tpot_s > 0.0 && c->step.tpot_s > phase->slo_tpot_s) {
		if (phase->requests_per_gpu > 0.0) {
			c->misses_slo = true;
			return;
		}
		/* The largest batch in [1, requests] whose TPOT meets the target:
		 * the step grows with the batch. */
		struct mp_step s;
		if (!step_at(model, phase, kind, w, f, 1.0, &s) || s.tpot_s > phase->slo_tpot_s) {
			c->misses_slo = true;
			c->requests = 1.0;
			c->step = s;
			return;
		}
		double lo = 1.0, hi = c->requests;
		while (hi - lo > 1.0) {
			double mid = floor((lo + hi) / 2.0);
			bool ok = step_at(model, phase, kind, w, f, mid, &s) && s.tpot_s <= phase->slo_tpot_s;
			*(ok ? &lo : &hi) = mid;
		}
		c->requests = lo;
		step_at(model, phase, kind, w, f, lo, &c->step);
	}
	if (!decode && phase->slo_ttft_s > 0.0 && c->step.ttft_s > phase->slo_ttft_s) {
		c->misses_slo = true;
	}
}

/* Evaluate the figures of one candidate; false when no slot count. */
static bool evaluate(const struct mp_model *model, const struct mp_phase_spec *phase,
		     enum mp_phase_kind kind, const struct mp_capacity_options *cap_opts,
		     const struct mp_roofline_options *roof_opts, struct mp_width_candidate *c)
{
	struct mp_ep_width w;
	if (mp_widths_width(model, phase, c->width.ep, &w) != 0) {
		/* A fixed per-GPU count too small for E at this width: judge
		 * the width with one slot per expert, to say whether it could
		 * fit at all. */
		if (phase->slot_rule != MP_SLOTS_FIXED_PER_GPU) {
			return false;
		}
		w = (struct mp_ep_width){
			.ep = c->width.ep,
			.slots = round_up(model->routed_experts, c->width.ep),
			.drafter_slots = mp_widths_drafter_slots(phase, model, c->width.ep),
		};
		if (w.slots == 0) {
			return false;
		}
		c->rule_short = true;
	}
	c->width = w;
	if (!(phase->hardware.peak_flops[model->expert_compute] > 0.0) &&
	    !(roof_opts && roof_opts->peak_flops > 0.0)) {
		snprintf(c->not_evaluated, sizeof(c->not_evaluated),
			 "the hardware gives no %s peak, which the model's expert_compute needs",
			 mp_compute_name(model->expert_compute));
		return false;
	}
	struct mp_capacity_input in;
	mp_widths_capacity_input(phase, kind, &w, &in);
	c->requests = in.requests;
	choose_batch(model, phase, kind, cap_opts, c);
	/* HBM at the batch judged (at least one request, to say what does
	 * not fit). */
	if (kind == MP_PHASE_DECODE) {
		in.requests = c->requests >= 1.0 ? c->requests : fmax(in.requests, 1.0);
	}
	if (mp_capacity_compute(model, &phase->hardware, cap_opts, &in, &c->hbm) != 0) {
		snprintf(c->not_evaluated, sizeof(c->not_evaluated),
			 "the HBM capacity cannot be computed at EP%u", w.ep);
		return false;
	}
	struct mp_roofline_point p;
	double b = c->has_step ? c->step.tokens_per_step
			       : (kind == MP_PHASE_PREFILL ? phase->chunk_tokens
							   : in.requests * phase->tokens_per_request);
	if (mp_roofline_point(model, &phase->hardware, roof_opts, &w, b, &p) != 0) {
		snprintf(c->not_evaluated, sizeof(c->not_evaluated),
			 "the roofline cannot be evaluated at EP%u with %g tokens per GPU", w.ep, b);
		return false;
	}
	c->evaluated = true;
	c->tokens_per_gpu = b;
	c->tokens_per_expert = p.main.tokens_per_expert;
	c->ridge_tokens = p.main.ridge_tokens;
	c->intensity = p.main.intensity;
	c->compute_bound = p.main.tokens_per_expert >= p.main.ridge_tokens;
	c->expert_time_s = p.time_s;
	c->tokens_per_s_per_gpu = c->has_step ? c->step.tokens_per_s_per_gpu
					      : (p.time_s > 0.0 ? b / p.time_s : 0.0);
	c->predicted_time_s = p.time_s * c->busiest_factor;
	c->pool_fraction = 1.0;
	if (phase->gpus && w.ep <= phase->gpus) {
		c->pool_fraction = (double)(phase->gpus / w.ep * w.ep) / (double)phase->gpus;
	}
	c->rank_time_s = mp_widths_rank_time(c, c->busiest_factor);
	return true;
}

/* Predicted tokens/s per GPU closer than this are a tie: the step model
 * behind them is good to several percent, no better (it reproduces
 * DeepEP's published H800 kernel times within 8% for the low-latency
 * kernels and 20% for the normal ones, the seed article's EP64/EP8 gain
 * within 8% once calibrated, and the article's own expert-only model is
 * within 6%: tests/test-step.c, README "Predicted vs published"), so a
 * smaller difference must not decide the width. Decode ties go to more
 * tokens per expert (the wider pool), prefill ties to the narrower width. */
#define TIME_TIE MP_WIDTHS_TIE

/* True when a ranks above b among decode candidates that are tied on
 * time: more tokens per expert, then wider. */
static bool decode_tie_better(const struct mp_width_candidate *a, const struct mp_width_candidate *b)
{
	double ea = a->tokens_per_expert;
	double eb = b->tokens_per_expert;
	double tol = 1e-9 * fmax(fabs(ea), fabs(eb));
	if (fabs(ea - eb) > tol) {
		return ea > eb;
	}
	return a->width.ep > b->width.ep;
}

/* The field or fact that sets a phase's widest width (phase_limit). */
static const char *limit_source(const struct mp_phase_spec *phase, enum mp_phase_kind kind,
				uint32_t limit)
{
	if (kind == MP_PHASE_PREFILL && phase->ep_max_default && limit > phase->ep_max) {
		return "the smallest width that fits in HBM (prefill.ep_max not given: the search "
		       "goes past the default EP8 only as far as it must)";
	}
	if (phase->ep_max == limit) {
		return kind == MP_PHASE_PREFILL ? "prefill.ep_max" : "decode.ep_max";
	}
	if (phase->gpus == limit) {
		return kind == MP_PHASE_PREFILL ? "prefill.gpus" : "decode.gpus";
	}
	if (kind == MP_PHASE_DECODE) {
		return "decode.gpus (unset: one domain, the hardware's scale_up_domain_gpus)";
	}
	return "the hardware's scale_up_domain_gpus";
}

/* The name and size of the largest term of an HBM breakdown. */
static void largest_term(const struct mp_capacity *h, double gb, char *buf, size_t size)
{
	const struct {
		const char *name;
		uint64_t bytes;
	} terms[] = {
		{"routed slots", h->routed_bytes},     {"shared experts", h->shared_bytes},
		{"dense weights", h->dense_bytes},     {"drafter", h->drafter_bytes},
		{"KV cache", h->kv_bytes},             {"dispatch/combine buffers", h->buffer_bytes},
		{"MoE workspace", h->workspace_bytes}, {"runtime reserve", h->reserve_bytes},
	};
	size_t best = 0;
	for (size_t i = 1; i < sizeof(terms) / sizeof(terms[0]); i++) {
		if (terms[i].bytes > terms[best].bytes) {
			best = i;
		}
	}
	snprintf(buf, size, "%s %.1f GB", terms[best].name, (double)terms[best].bytes * gb);
}

/* Used bytes of the phase at this width with other requests or context
 * (negative values keep the phase's own); false when it cannot be computed. */
static bool used_with(const struct mp_model *model, const struct mp_phase_spec *phase,
		      enum mp_phase_kind kind, const struct mp_capacity_options *cap_opts,
		      const struct mp_ep_width *w, double requests, double context,
		      struct mp_capacity *out)
{
	struct mp_phase_spec p = *phase;
	if (requests >= 0.0) {
		p.requests_per_gpu = requests;
	}
	if (context >= 0.0) {
		p.context_tokens = context;
	}
	struct mp_capacity_input in;
	mp_widths_capacity_input(&p, kind, w, &in);
	return mp_capacity_compute(model, &p.hardware, cap_opts, &in, out) == 0;
}

/* What would make a width that does not fit fit, one clause: no redundant
 * slots, fewer requests per GPU (decode), a shorter context (bisection on
 * the monotone KV bytes), or "nothing the scenario sets: the weights alone
 * exceed HBM". */
static void no_fit_remedy(const struct mp_model *model, const struct mp_phase_spec *phase,
			  enum mp_phase_kind kind, const struct mp_capacity_options *cap_opts,
			  const struct mp_width_candidate *c, char *buf, size_t size)
{
	const struct mp_ep_width *w = &c->width;
	struct mp_capacity h;
	int n = 0;
	buf[0] = '\0';
	struct mp_ep_width lean = *w;
	lean.slots = round_up(model->routed_experts, w->ep);
	if (model->drafter.moe_stages > 0 && model->drafter.routed_experts > 0) {
		lean.drafter_slots = round_up(model->drafter.routed_experts, w->ep);
	}
	if (lean.slots && (lean.slots < w->slots || lean.drafter_slots < w->drafter_slots) &&
	    used_with(model, phase, kind, cap_opts, &lean, -1, -1, &h) && h.fits) {
		n += snprintf(buf + n, size - (size_t)n, "fits with %u slots (no redundant slots, %.1f GB)",
			      lean.slots, (double)h.used_bytes * 1e-9);
	}
	bool decode = kind == MP_PHASE_DECODE;
	double requests = phase->requests_per_gpu;
	if (decode && requests >= 2.0 && (size_t)n < size) {
		/* The most whole requests that fit: bisection on [0, requests). */
		double lo = 0.0, hi = requests;
		while (hi - lo > 1.0) {
			double mid = floor((lo + hi) / 2.0);
			bool ok = used_with(model, phase, kind, cap_opts, w, mid, -1, &h) && h.fits;
			*(ok ? &lo : &hi) = mid;
		}
		if (lo >= 1.0) {
			n += snprintf(buf + n, size - (size_t)n, "%sfits with %.0f requests per GPU",
				      n ? ", or " : "", lo);
		}
	}
	double ctx = phase->context_tokens;
	if ((decode || phase->requests_per_gpu > 0.0) && ctx >= 2.0 && (size_t)n < size) {
		double lo = 0.0, hi = ctx;
		while (hi - lo > 1.0) {
			double mid = floor((lo + hi) / 2.0);
			bool ok = used_with(model, phase, kind, cap_opts, w, -1, mid, &h) && h.fits;
			*(ok ? &lo : &hi) = mid;
		}
		if (lo >= 1.0) {
			n += snprintf(buf + n, size - (size_t)n, "%sfits at a context of %.0f tokens",
				      n ? ", or " : "", lo);
		}
	}
	if (n == 0) {
		snprintf(buf, size, "fewer slots, requests or context do not make it fit: use a wider EP");
	}
}

static void judge_rules(const struct mp_model *model, const struct mp_phase_spec *phase,
			enum mp_phase_kind kind, const struct mp_capacity_options *cap_opts,
			uint32_t limit, struct mp_width_candidate *c)
{
	uint32_t ep = c->width.ep;
	uint32_t domain = phase->hardware.scale_up_domain_gpus;
	double gb = 1e-9;
	/* An empty reason marks a candidate that passes every rule. */
	c->verdict = MP_WIDTH_CHOSEN;
	c->reason[0] = '\0';
	/* Physical limits first, then the phase's policy. */
	if (phase->ep && ep != phase->ep) {
		say(c, MP_WIDTH_NOT_FIXED, "the scenario fixes EP%u", phase->ep);
	} else if (ep > model->routed_experts) {
		say(c, MP_WIDTH_TOO_FEW_EXPERTS, "%u GPUs but only %u experts per layer", ep,
		    model->routed_experts);
	} else if (phase->gpus && ep > phase->gpus) {
		say(c, MP_WIDTH_EXCEEDS_GPUS, "exceeds the %u GPU%s available", phase->gpus,
		    phase->gpus == 1 ? "" : "s");
	} else if (phase->attention_tp > 1 && ep % phase->attention_tp != 0) {
		say(c, MP_WIDTH_ATTENTION_TP, "attention tp:%u splits each group of %u GPUs, so EP must "
		    "be a multiple of %u", phase->attention_tp, phase->attention_tp, phase->attention_tp);
	} else if (!c->evaluated && c->not_evaluated[0]) {
		say(c, MP_WIDTH_NO_SLOTS, "%s", c->not_evaluated);
	} else if (!c->evaluated) {
		say(c, MP_WIDTH_NO_SLOTS, "the slot rule gives no valid slot count at EP%u", ep);
	} else if (!c->hbm.fits && c->hbm.memory == MP_MEMORY_SGLANG_AUTO && c->hbm.memory_fraction < 0.5) {
		/* the engine's own default leaves the rest, not the plan, too big */
		say(c, MP_WIDTH_NO_FIT, "does not fit: SGLang's default --mem-fraction-static at EP%u "
		    "is %.3f%s (_handle_gpu_memory_settings), a %.1f GB rest; give the engine profile's "
		    "memory.mem_fraction_static a number (wider EP does not help: the default's DP "
		    "attention term grows with it)", ep, c->hbm.memory_fraction,
		    c->hbm.memory_fraction <= 0.0 ? ", no room at all" : "",
		    (double)c->hbm.reserve_bytes * gb);
	} else if (!c->hbm.fits) {
		char what_fits[192], largest[64];
		no_fit_remedy(model, phase, kind, cap_opts, c, what_fits, sizeof(what_fits));
		largest_term(&c->hbm, gb, largest, sizeof(largest));
		say(c, MP_WIDTH_NO_FIT, "does not fit: needs %.1f GB of %.1f GB HBM, largest term %s; %s",
		    (double)c->hbm.used_bytes * gb, (double)c->hbm.capacity_bytes * gb,
		    largest, what_fits);
	} else if (c->misses_slo && kind == MP_PHASE_DECODE) {
		say(c, MP_WIDTH_MISSES_SLO, "misses decode.slo.tpot %.4g ms: TPOT %.4g ms at %.0f request%s per GPU",
		    phase->slo_tpot_s * 1e3, c->step.tpot_s * 1e3, c->requests, c->requests == 1.0 ? "" : "s");
	} else if (c->misses_slo) {
		say(c, MP_WIDTH_MISSES_SLO, "misses prefill.slo.ttft %.4g ms: TTFT %.4g ms for a %.0f-token prompt",
		    phase->slo_ttft_s * 1e3, c->step.ttft_s * 1e3,
		    phase->isl > 0.0 ? phase->isl : (phase->context_tokens > 0.0 ? phase->context_tokens : phase->chunk_tokens));
	} else if (c->rule_short) {
		say(c, MP_WIDTH_NO_SLOTS, "%u slots per GPU cannot hold %u experts at EP%u",
		    phase->slots_per_gpu, model->routed_experts, ep);
	} else if ((phase->ep_min && ep < phase->ep_min) || ep > limit) {
		uint32_t lo = phase->ep_min ? phase->ep_min : 1;
		const char *name = kind == MP_PHASE_PREFILL ? "prefill" : "decode";
		if (lo > limit) {
			say(c, MP_WIDTH_OUT_OF_RANGE,
			    "the allowed range EP%u..EP%u is empty: lower %s.ep_min (%u) or raise %s",
			    lo, limit, name, lo, limit_source(phase, kind, limit));
		} else if (ep < lo) {
			say(c, MP_WIDTH_OUT_OF_RANGE, "below %s.ep_min (%u)", name, lo);
		} else {
			say(c, MP_WIDTH_OUT_OF_RANGE, "above EP%u, the limit set by %s", limit,
			    limit_source(phase, kind, limit));
		}
	} else if (domain && ep > domain && !(phase->hardware.scale_out_bw_bytes_per_s > 0.0)) {
		say(c, MP_WIDTH_EXCEEDS_DOMAIN,
		    "spans %u scale-up domains of %u GPUs, but the hardware gives no scale_out_bandwidth",
		    (ep + domain - 1) / domain, domain);
	}
}

/* A time for reasons, as the plan summary writes it: "45.9 ms" below
 * 1 s, "1.29 s" above. */
static const char *time_text(double s, char *buf, size_t size)
{
	if (s < 1.0) {
		snprintf(buf, size, "%.3g ms", s * 1e3);
	} else {
		snprintf(buf, size, "%.3g s", s);
	}
	return buf;
}

/* What a candidate's step delivers, for reasons: "2,130 output tokens/s
 * per GPU at 88 requests (step 45.9 ms)". */
static void throughput_text(const struct mp_width_candidate *c, enum mp_phase_kind kind, char *buf,
			    size_t size)
{
	double tps = c->rank_time_s > 0.0 ? 1.0 / c->rank_time_s : 0.0;
	if (!c->has_step) {
		snprintf(buf, size, "expert time %.3g ms per step (%.4g tokens/s per GPU, routed experts only)",
			 c->expert_time_s * c->busiest_factor * 1e3, tps);
	} else {
		double pool = c->pool_fraction > 0.0 ? c->pool_fraction : 1.0;
		double step = c->rank_time_s * pool * c->step.accepted_tokens_per_step;
		char idle[64] = "";
		if (pool < 1.0) {
			snprintf(idle, sizeof(idle), ", %.0f%% of the GPUs idle", 100.0 * (1.0 - pool));
		}
		char st[32], t2[32];
		time_text(step, st, sizeof(st));
		if (kind == MP_PHASE_DECODE) {
			time_text(step / c->step.accepted_tokens_per_step * c->requests, t2, sizeof(t2));
			snprintf(buf, size, "%.4g output tokens/s per GPU at %.0f request%s (step %s, TPOT %s%s)",
				 tps, c->requests, c->requests == 1.0 ? "" : "s", st, t2, idle);
		} else {
			time_text(c->step.ttft_s, t2, sizeof(t2));
			snprintf(buf, size, "%.4g input tokens/s per GPU (step %s, TTFT %s%s)", tps, st, t2,
				 idle);
		}
	}
}

/* Pick among the candidates that pass every rule: the best predicted
 * tokens/s per GPU (lowest rank_time_s) within TIME_TIE; decode ties to
 * more tokens per expert (then wider), prefill ties to the narrower. Say
 * why each of them was chosen or not. Returns the pick's index, or n when
 * none passes. */
static size_t pick_and_explain(struct mp_width_candidate *items, size_t n, enum mp_phase_kind kind)
{
	double fastest = HUGE_VAL;
	for (size_t i = 0; i < n; i++) {
		if (items[i].passes) {
			fastest = fmin(fastest, items[i].rank_time_s);
		}
	}
	double tied = fastest * (1.0 + TIME_TIE);
	size_t best = n;
	for (size_t i = 0; i < n; i++) {
		if (!items[i].passes || items[i].rank_time_s > tied) {
			continue;
		}
		if (kind == MP_PHASE_PREFILL) {
			best = best == n ? i : best;
		} else if (best == n || decode_tie_better(&items[i], &items[best])) {
			best = i;
		}
	}
	if (best == n) {
		return n;
	}
	const struct mp_width_candidate *b = &items[best];
	char bt[192];
	throughput_text(b, kind, bt, sizeof(bt));
	for (size_t i = 0; i < n; i++) {
		struct mp_width_candidate *c = &items[i];
		if (!c->passes) {
			continue;
		}
		char ct[192];
		throughput_text(c, kind, ct, sizeof(ct));
		char busiest[64] = "";
		if (c->busiest_factor > 1.0) {
			snprintf(busiest, sizeof(busiest), " (busiest GPU x%.3f)", c->busiest_factor);
		}
		bool exact = c->rank_time_s <= fastest * (1.0 + 1e-9);
		if (i == best) {
			say(c, MP_WIDTH_CHOSEN, "%s: %s%s; t = %.1f tokens per expert (ridge %.0f), %.1f GB HBM free",
			    exact ? "most tokens/s per GPU"
				  : (kind == MP_PHASE_PREFILL ? "within 5% of the best (a tie), narrowest"
							      : "within 5% of the best (a tie), most tokens per expert"),
			    ct, busiest, c->tokens_per_expert, c->ridge_tokens,
			    (double)c->hbm.free_bytes * 1e-9);
		} else if (c->rank_time_s <= tied) {
			say(c, kind == MP_PHASE_PREFILL ? MP_WIDTH_WIDER_THAN_NEEDED : MP_WIDTH_OUTRANKED,
			    "as fast within 5%% (%s%s) but %s EP%u", ct, busiest,
			    kind == MP_PHASE_PREFILL ? "wider than" : "fewer tokens per expert than",
			    b->width.ep);
		} else if (kind == MP_PHASE_DECODE && !c->compute_bound) {
			say(c, MP_WIDTH_BELOW_RIDGE, "slower, experts memory-bound (t = %.1f below t* = %.0f): %s%s; EP%u: %s",
			    c->tokens_per_expert, c->ridge_tokens, ct, busiest, b->width.ep, bt);
		} else {
			say(c, MP_WIDTH_OUTRANKED, "slower: %s%s; EP%u: %s", ct, busiest, b->width.ep, bt);
		}
	}
	return best;
}

/* The smallest width above `above` on the candidate grid (powers of two,
 * and gpus when given) that fits in HBM, up to MP_MAX_GPUS; 0 when none. */
static uint32_t grid_fit_above(const struct mp_model *model, const struct mp_phase_spec *phase,
			       enum mp_phase_kind kind, const struct mp_capacity_options *cap_opts,
			       uint32_t above)
{
	uint32_t found = 0;
	for (uint64_t p = 1; p <= MP_MAX_GPUS; p *= 2) {
		uint32_t g = phase->gpus;
		if (g > above && g < p && p / 2 < g &&
		    mp_widths_min_fit_ep(model, phase, kind, cap_opts, g, g, &found) == 0) {
			return g;
		}
		if (p > above &&
		    mp_widths_min_fit_ep(model, phase, kind, cap_opts, (uint32_t)p, (uint32_t)p, &found) == 0) {
			return (uint32_t)p;
		}
	}
	return 0;
}

/* Issue 26: where no width up to the phase's limit fits in HBM, the
 * smallest grid width beyond it that does (*beyond, 0 when none); a
 * prefill whose ep_max is the built-in default goes on to it when the
 * phase's GPUs allow. Returns the limit to search. */
static uint32_t extend_limit(const struct mp_model *model, const struct mp_phase_spec *phase,
			     enum mp_phase_kind kind, const struct mp_capacity_options *cap_opts,
			     uint32_t limit, uint32_t *beyond)
{
	*beyond = 0;
	uint32_t lo = phase->ep ? phase->ep : (phase->ep_min ? phase->ep_min : 1);
	uint32_t found = 0;
	if (lo > limit || mp_widths_min_fit_ep(model, phase, kind, cap_opts, lo, limit, &found) == 0) {
		return limit;
	}
	*beyond = grid_fit_above(model, phase, kind, cap_opts, limit);
	uint32_t cap = phase->gpus ? phase->gpus : MP_MAX_GPUS;
	if (kind == MP_PHASE_PREFILL && phase->ep_max_default && !phase->ep && *beyond &&
	    *beyond <= cap) {
		// cppcheck-suppress identicalInnerCondition ; the width found is returned, not a truth value
		return *beyond;
	}
	return limit;
}

int mp_widths_apply_factor(const struct mp_model *model, const struct mp_phase_spec *phase,
			   enum mp_phase_kind kind, const struct mp_capacity_options *cap_opts,
			   const struct mp_roofline_options *roof_opts, double factor,
			   struct mp_width_candidate *c)
{
	if (!(factor >= 1.0) || !isfinite(factor)) {
		return MP_EINVAL;
	}
	/* Judge the width afresh with the factor: its batch (slo.tpot may
	 * now bind), HBM at that batch, the whole step, the rules. */
	*c = (struct mp_width_candidate){.width.ep = c->width.ep, .busiest_factor = factor};
	evaluate(model, phase, kind, cap_opts, roof_opts, c);
	uint32_t beyond = 0;
	judge_rules(model, phase, kind, cap_opts,
		    extend_limit(model, phase, kind, cap_opts, phase_limit(phase, kind), &beyond), c);
	c->passes = c->reason[0] == '\0';
	return 0;
}

int mp_widths_rerank(struct mp_widths *widths)
{
	for (size_t i = 0; i < widths->count; i++) {
		struct mp_width_candidate *c = &widths->items[i];
		if (!(c->busiest_factor >= 1.0) || !isfinite(c->busiest_factor)) {
			return MP_EINVAL;
		}
		c->predicted_time_s = c->expert_time_s * c->busiest_factor;
		if (c->evaluated) {
			c->rank_time_s = mp_widths_rank_time(c, c->busiest_factor);
		}
	}
	size_t best = pick_and_explain(widths->items, widths->count, widths->phase);
	widths->has_choice = best < widths->count;
	widths->chosen = widths->has_choice ? best : 0;
	return 0;
}

int mp_widths_rank(const struct mp_model *model, const struct mp_phase_spec *phase,
		   enum mp_phase_kind kind, const struct mp_capacity_options *cap_opts,
		   const struct mp_roofline_options *roof_opts, struct mp_widths *out)
{
	if (model->routed_experts == 0 || model->top_k == 0) {
		return MP_EINVAL;
	}
	uint32_t beyond = 0;
	uint32_t limit = extend_limit(model, phase, kind, cap_opts, phase_limit(phase, kind), &beyond);
	uint32_t list[MAX_CANDIDATES];
	size_t n = 0;
	for (uint64_t p = 1; p <= UINT32_MAX; p *= 2) {
		n = add_candidate(list, n, (uint32_t)p);
		if (p > limit) {
			break;
		}
	}
	n = add_candidate(list, n, limit);
	n = add_candidate(list, n, phase->hardware.scale_up_domain_gpus);
	n = add_candidate(list, n, phase->gpus);
	n = add_candidate(list, n, phase->ep_min);
	n = add_candidate(list, n, phase->ep_max);
	n = add_candidate(list, n, phase->ep);
	/* Widths that use every GPU of the phase: divisors of gpus within one
	 * scale-up domain or whole domains (EP72 and EP48 of 144 H800). */
	uint32_t dom = phase->hardware.scale_up_domain_gpus;
	for (uint32_t d = 1, added = 0; phase->gpus && d <= limit && added < MAX_DIVISORS; d++) {
		if (phase->gpus % d == 0 && (!dom || d <= dom || d % dom == 0)) {
			size_t before = n;
			n = add_candidate(list, n, d);
			added += n > before;
		}
	}
	qsort(list, n, sizeof(list[0]), cmp_u32);

	struct mp_width_candidate *items = calloc(n, sizeof(*items));
	if (!items) {
		return MP_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct mp_width_candidate *c = &items[i];
		c->width.ep = list[i];
		c->busiest_factor = 1.0;
		evaluate(model, phase, kind, cap_opts, roof_opts, c);
		judge_rules(model, phase, kind, cap_opts, limit, c);
		c->passes = c->reason[0] == '\0';
	}
	size_t best = pick_and_explain(items, n, kind);

	free(out->items);
	*out = (struct mp_widths){
		.phase = kind,
		.count = n,
		.items = items,
		.has_choice = best < n,
		.chosen = best < n ? best : 0,
		.limit = limit,
		.fit_beyond = beyond > limit ? beyond : 0,
	};
	return 0;
}

int mp_widths_min_fit_ep(const struct mp_model *model, const struct mp_phase_spec *phase,
			 enum mp_phase_kind kind, const struct mp_capacity_options *cap_opts,
			 uint32_t lo, uint32_t hi, uint32_t *out)
{
	if (lo == 0 || lo > hi) {
		return MP_EINVAL;
	}
	for (uint64_t ep = lo; ep <= hi; ep++) {
		struct mp_ep_width w;
		if (mp_widths_width(model, phase, (uint32_t)ep, &w) != 0) {
			continue;
		}
		struct mp_capacity_input in;
		struct mp_capacity c;
		mp_widths_capacity_input(phase, kind, &w, &in);
		if (mp_capacity_compute(model, &phase->hardware, cap_opts, &in, &c) == 0 && c.fits) {
			*out = (uint32_t)ep;
			return 0;
		}
	}
	return MP_ENOFIT;
}
