/* The deployment search of a scenario (deploy.h): the step model behind
 * the search's callbacks, placement in the loop, pools and the co-located
 * alternative. */
#include "moeplan/deploy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "moeplan/capacity.h"
#include "moeplan/simulate.h"
#include "moeplan/step.h"
#include "moeplan/widths.h"

/* ------------------------------------------------------------- options */

void mp_deploy_options_init(struct mp_deploy_options *opts, const struct mp_scenario *sc)
{
	*opts = (struct mp_deploy_options){
		.isl = 4096,
		.osl = 1024,
		.grid_ratio = 1.0905077326652577, /* 2^(1/8) */
		.chunk_unit_tokens = 1024,
		.max_chunk_tokens = 65536,
		.placement = true,
		.factor_steps = 128,
	};
	mp_place_options_init(&opts->place);
	if (!sc) {
		return;
	}
	if (sc->time_limit_s > 0) {
		opts->place.time_limit_s = sc->time_limit_s;
	}
	if (sc->prefill.context_tokens > 0) {
		opts->isl = sc->prefill.context_tokens;
	}
	/* Each phase's own settings are the defaults (as `plan` reads them);
	 * the search: block overrides them, the command line overrides both. */
	const struct mp_phase_spec *pre = &sc->prefill, *dec = &sc->decode;
	opts->isl = pre->isl > 0 ? pre->isl : dec->isl > 0 ? dec->isl : opts->isl;
	opts->osl = dec->osl > 0 ? dec->osl : opts->osl;
	opts->tpot_s = dec->slo_tpot_s;
	opts->ttft_s = pre->slo_ttft_s;
	bool drafter = dec->tokens_per_request > 1;
	opts->acceptance = dec->acceptance >= 0 ? dec->acceptance : (drafter ? 0.75 : 0.0);
	const struct mp_search_spec *s = &sc->search;
	opts->gpus = s->gpus;
	opts->request_rate = s->request_rate;
	opts->isl = s->isl > 0 ? s->isl : opts->isl;
	opts->osl = s->osl > 0 ? s->osl : opts->osl;
	opts->cached_fraction = s->cached_fraction;
	opts->tpot_s = s->tpot_s > 0 ? s->tpot_s : opts->tpot_s;
	opts->ttft_s = s->ttft_s > 0 ? s->ttft_s : opts->ttft_s;
	opts->acceptance = s->acceptance >= 0 ? s->acceptance : opts->acceptance;
	opts->all_batches = s->all_batches;
	opts->grid_ratio = s->grid_ratio > 1 ? s->grid_ratio : opts->grid_ratio;
	opts->chunk_unit_tokens = s->chunk_unit_tokens > 0 ? s->chunk_unit_tokens
							   : opts->chunk_unit_tokens;
}

const char *mp_deploy_overlap_name(int overlap)
{
	return mp_step_overlap_name((enum mp_step_overlap)overlap);
}

/* ------------------------------------------------- the step model behind */

#define MAX_FACTOR_TOKENS 2048.0

/* What the callbacks need: one phase's model, hardware and slot rule. */
struct ctx {
	const struct mp_model *model;
	const struct mp_hardware *hw;
	const struct mp_phase_spec *spec;  /* slot rule and decode context */
	const struct mp_deploy_options *opts;
	const struct mp_loads *loads;
	uint32_t factor_steps;
	const struct mp_place_options *place;
	size_t *time_limits;   /* in-loop placements stopped by the wall-clock limit */
	bool *table_priced;    /* set when a kernel table priced a term (may be NULL) */
	struct mp_capacity_options cap; /* the engine's memory rule (engine.h) */
};

/* The capacity options under the scenario's engine profile. */
static struct mp_capacity_options engine_cap(const struct mp_scenario *sc)
{
	struct mp_capacity_options o;
	mp_capacity_options_init(&o);
	mp_engine_capacity_options(&sc->engine, sc->model.drafter.moe_stages > 0, &o);
	return o;
}

static int step_input(const struct ctx *c, const struct mp_search_config *cfg,
		      struct mp_step_input *in)
{
	mp_step_input_init(in);
	if (mp_widths_width(c->model, c->spec, cfg->ep, &in->width) != 0) {
		return MP_EINVAL;
	}
	in->overlap = (enum mp_step_overlap)cfg->overlap;
	in->kernel = c->spec->kernel;
	in->tp = cfg->attention_tp;
	in->busiest_factor = cfg->busiest_factor;
	if (cfg->phase == MP_PHASE_DECODE) {
		in->phase = MP_STEP_DECODE;
		in->requests = cfg->batch;
		in->context_tokens = c->spec->context_tokens > 0
					     ? c->spec->context_tokens
					     : c->opts->isl + c->opts->osl / 2;
		in->tokens_per_request = c->spec->tokens_per_request >= 1 ? c->spec->tokens_per_request : 1;
		in->acceptance = c->opts->acceptance;
	} else {
		in->phase = MP_STEP_PREFILL;
		in->chunk_tokens = cfg->batch;
		in->isl = c->opts->isl * (1 - c->opts->cached_fraction);
		in->context_tokens = c->opts->isl * c->opts->cached_fraction;
	}
	return 0;
}

/* Does a prefill chunk fit in HBM? */
static bool chunk_fits(const struct ctx *c, const struct mp_search_config *cfg, double chunk)
{
	struct mp_search_config k = *cfg;
	k.batch = chunk;
	struct mp_step_input in;
	struct mp_capacity_input cap_in;
	struct mp_capacity cap;
	if (step_input(c, &k, &in) != 0) {
		return false;
	}
	mp_step_capacity_input(&in, &cap_in);
	return mp_capacity_compute(c->model, c->hw, &c->cap, &cap_in, &cap) == 0 && cap.fits;
}

static int cb_max_batch(void *user, const struct mp_search_config *cfg, double *out)
{
	const struct ctx *c = user;
	*out = 0;
	if (cfg->attention_tp > 1 && (cfg->ep % cfg->attention_tp != 0)) {
		return 0;
	}
	if (cfg->phase == MP_PHASE_DECODE) {
		struct mp_step_input in;
		struct mp_search_config k = *cfg;
		k.batch = 1;
		if (step_input(c, &k, &in) != 0) {
			return 0;
		}
		uint64_t n = 0;
		if (mp_step_max_requests(c->model, c->hw, &c->cap, &in, &n) == 0) {
			*out = (double)n;
		}
		return 0;
	}
	/* Prefill: bisection over whole units of chunk (used bytes grow with
	 * the chunk). */
	double unit = c->opts->chunk_unit_tokens;
	double lo = 0, hi = floor(c->opts->max_chunk_tokens / unit);
	if (hi < 1 || !chunk_fits(c, cfg, unit)) {
		return 0;
	}
	lo = 1;
	if (chunk_fits(c, cfg, hi * unit)) {
		*out = hi * unit;
		return 0;
	}
	while (hi - lo > 1) {
		double mid = floor((lo + hi) / 2);
		if (chunk_fits(c, cfg, mid * unit)) {
			lo = mid;
		} else {
			hi = mid;
		}
	}
	*out = lo * unit;
	return 0;
}

static int cb_evaluate(void *user, const struct mp_search_config *cfg, struct mp_search_eval *out)
{
	const struct ctx *c = user;
	struct mp_step_input in;
	struct mp_step s;
	int rc = step_input(c, cfg, &in);
	if (rc == 0) {
		rc = mp_step_evaluate(c->model, c->hw, &in, &s);
	}
	if (rc) {
		return rc;
	}
	for (int i = 0; c->table_priced && i < MP_TERM_COUNT; i++) {
		*c->table_priced = *c->table_priced || s.from_table[i];
	}
	*out = (struct mp_search_eval){
		.step_s = s.step_time_s,
		.tokens_per_s_per_gpu = s.tokens_per_s_per_gpu,
		.tokens_per_s_per_user = cfg->phase == MP_PHASE_DECODE ? s.tokens_per_s_per_user : 0,
		.ttft_s = cfg->phase == MP_PHASE_PREFILL ? s.ttft_s : 0,
	};
	return 0;
}

/* The placement's busiest-GPU factor at a width, as `plan` estimates it
 * for candidate widths: place a sample of at most 4 evenly spaced layers,
 * route the configuration's tokens per GPU through them (Monte Carlo,
 * fixed seed). */
static int cb_factor(void *user, const struct mp_search_config *cfg, double *out)
{
	const struct ctx *c = user;
	struct mp_ep_width width;
	if (mp_widths_width(c->model, c->spec, cfg->ep, &width) != 0) {
		return MP_EINVAL;
	}
	const struct mp_loads *loads = c->loads;
	uint32_t n = loads->n_layers < 4 ? loads->n_layers : 4;
	struct mp_loads sample;
	mp_loads_init(&sample);
	struct mp_placement placement;
	mp_placement_init(&placement);
	int rc = mp_loads_alloc(&sample, n, loads->n_experts);
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		uint32_t layer = (uint32_t)(((uint64_t)i * loads->n_layers) / n);
		memcpy(mp_loads_row(&sample, i), mp_loads_row(loads, layer),
		       loads->n_experts * sizeof(double));
	}
	struct mp_place_options place = *c->place;
	place.progress = NULL;
	if (rc == 0) {
		rc = mp_place(&sample, width.ep, width.slots / width.ep, &place, &placement, NULL);
	}
	double tokens = cfg->phase == MP_PHASE_DECODE
				? cfg->batch * (c->spec->tokens_per_request >= 1 ? c->spec->tokens_per_request : 1)
				: cfg->batch;
	/* Monte Carlo cost grows with the tokens; above MAX_FACTOR_TOKENS per
	 * GPU (prefill chunks) the finite-batch spread is small and only
	 * shrinks further, so routing that many overestimates the factor by at
	 * most the spread left at MAX_FACTOR_TOKENS. */
	tokens = fmin(tokens, MAX_FACTOR_TOKENS);
	uint32_t t = tokens > 1 ? (uint32_t)lround(tokens) : 1;
	for (uint32_t l = 0; rc == 0 && l < placement.n_layers; l++) {
		if (placement.layers[l].status == MP_PLACE_TIME_LIMIT) {
			(*c->time_limits)++;
			break;
		}
	}
	if (rc == 0) {
		rc = mp_simulate_factor(&placement, &sample, t, c->model->top_k, c->factor_steps, 1, out);
	}
	mp_placement_finish(&placement);
	mp_loads_finish(&sample);
	return rc;
}

/* ---------------------------------------------------------------- grid */

static const char *const overlap_names[] = {"none", "two_batch", "full"};

struct grid {
	uint32_t widths[512];
	size_t n_widths;
	uint32_t tp[8];
	size_t n_tp;
	int overlaps[3];
	const char *overlap_names[3]; /* parallel to overlaps[] */
	size_t n_overlaps;
};

static void make_grid(const struct mp_model *model, const struct mp_phase_spec *spec,
		      const struct mp_hardware *hw, uint32_t limit, unsigned overlap_mask,
		      struct grid *g)
{
	uint32_t e = model->routed_experts;
	uint32_t top = limit < e ? limit : e;
	uint32_t domain = hw->scale_up_domain_gpus ? hw->scale_up_domain_gpus : 8;
	g->n_widths = 0;
	for (uint32_t w = 1; w <= top && g->n_widths < 512; w++) {
		bool candidate = w == 1 || w == 2 || w == 4 || w % 8 == 0 || w == domain;
		struct mp_ep_width width;
		if (candidate && mp_widths_width(model, spec, w, &width) == 0) {
			g->widths[g->n_widths++] = w;
		}
	}
	/* Tensor-parallel attention groups of 2..8 GPUs within the scale-up
	 * domain that split the query heads evenly (when the model gives
	 * them); each width takes those that divide it (cb_max_batch). */
	uint32_t heads = model->attention.heads;
	g->n_tp = 0;
	g->tp[g->n_tp++] = 1;
	for (uint32_t tp = 2; tp <= 8; tp++) {
		if (tp <= domain && (heads == 0 || heads % tp == 0)) {
			g->tp[g->n_tp++] = tp;
		}
	}
	static const int modes[3] = {MP_OVERLAP_NONE, MP_OVERLAP_TWO_BATCH, MP_OVERLAP_FULL};
	g->n_overlaps = 0;
	for (size_t i = 0; i < 3; i++) {
		if (overlap_mask == 0 || (overlap_mask & (1u << modes[i]))) {
			g->overlap_names[g->n_overlaps] = overlap_names[modes[i]];
			g->overlaps[g->n_overlaps++] = modes[i];
		}
	}
}

static struct mp_search_space space_of(const struct grid *g, bool decode,
				       const struct mp_deploy_options *opts)
{
	return (struct mp_search_space){
		.widths = g->widths, .n_widths = g->n_widths,
		.attention_tp = g->tp, .n_attention = g->n_tp,
		.overlaps = g->overlaps, .n_overlaps = g->n_overlaps, .overlap_names = g->overlap_names,
		.batch_unit = decode ? 1 : opts->chunk_unit_tokens,
		.geometric_ratio = opts->all_batches ? 0 : opts->grid_ratio,
		.batch_cap = decode ? 0 : opts->max_chunk_tokens,
	};
}

/* ---------------------------------------------------------------- run */

void mp_deploy_init(struct mp_deploy *d)
{
	*d = (struct mp_deploy){0};
	mp_search_phase_init(&d->prefill);
	mp_search_phase_init(&d->decode);
	mp_search_phase_init(&d->colocated);
	mp_loads_init(&d->loads);
	mp_placement_init(&d->prefill_placement);
	mp_placement_init(&d->decode_placement);
}

void mp_deploy_finish(struct mp_deploy *d)
{
	if (!d) {
		return;
	}
	mp_search_phase_finish(&d->prefill);
	mp_search_phase_finish(&d->decode);
	mp_search_phase_finish(&d->colocated);
	mp_loads_finish(&d->loads);
	mp_placement_finish(&d->prefill_placement);
	mp_placement_finish(&d->decode_placement);
	*d = (struct mp_deploy){0};
}

static bool options_ok(const struct mp_deploy_options *o)
{
	return (o->gpus > 0) != (o->request_rate > 0) && isfinite(o->request_rate) &&
	       o->isl > 0 && isfinite(o->isl) && o->osl > 0 && isfinite(o->osl) &&
	       o->cached_fraction >= 0 && o->cached_fraction < 1 && o->tpot_s >= 0 &&
	       o->ttft_s >= 0 && o->acceptance >= 0 && o->acceptance <= 1 && o->grid_ratio > 1 && o->chunk_unit_tokens >= 1 &&
	       o->max_chunk_tokens >= o->chunk_unit_tokens;
}

/* One phase's search. */
static int run_phase(const struct mp_scenario *sc, const struct mp_deploy_options *opts,
		     const struct mp_loads *loads, const struct mp_place_options *place,
		     enum mp_phase_kind kind, bool colocated, struct mp_search_phase *out,
		     size_t *time_limits, bool *table_priced)
{
	const struct mp_phase_spec *spec = kind == MP_PHASE_DECODE || colocated ? &sc->decode
									       : &sc->prefill;
	struct ctx c = {
		.model = &sc->model, .hw = &spec->hardware, .spec = spec, .opts = opts,
		.loads = loads, .factor_steps = opts->factor_steps, .place = place,
		.time_limits = time_limits, .table_priced = table_priced, .cap = engine_cap(sc),
	};
	struct mp_search_model model = {
		.user = &c, .max_batch = cb_max_batch, .evaluate = cb_evaluate,
		.busiest_factor = opts->placement ? cb_factor : NULL,
	};
	uint32_t limit = opts->gpus ? opts->gpus : MP_MAX_GPUS;
	struct grid g;
	/* only the overlap modes the engine runs (engine.h) */
	unsigned mask = opts->overlap_mask ? opts->overlap_mask : 7u;
	mask &= sc->engine.overlaps ? sc->engine.overlaps : 7u;
	if (mask == 0) {
		return MP_ENOFIT;
	}
	make_grid(&sc->model, spec, &spec->hardware, limit, mask, &g);
	if (g.n_widths == 0) {
		return MP_ENOFIT;
	}
	struct mp_search_space space = space_of(&g, kind == MP_PHASE_DECODE, opts);
	struct mp_search_targets targets = {.tpot_s = opts->tpot_s, .ttft_s = opts->ttft_s};
	struct mp_search_config tmpl = {.phase = kind, .colocated = colocated};
	return mp_search_phase_run(&model, &space, &targets, &tmpl, out);
}

/* The best prefill point meeting the TTFT target at one width. */
static bool best_at(const struct mp_search_phase *ph, uint32_t ep, size_t *out)
{
	bool found = false;
	for (size_t i = 0; i < ph->n_points; i++) {
		const struct mp_search_point *p = &ph->points[i];
		if (p->cfg.ep != ep) {
			continue;
		}
		if (!found || p->eval.tokens_per_s_per_gpu > ph->points[*out].eval.tokens_per_s_per_gpu) {
			*out = i;
			found = true;
		}
	}
	return found;
}

static struct mp_pool_workload workload(const struct mp_deploy_options *o)
{
	return (struct mp_pool_workload){
		.isl = o->isl, .osl = o->osl, .cached_fraction = o->cached_fraction,
		.request_rate = o->request_rate, .gpu_budget = o->gpus,
	};
}

/* The co-located alternative: every decode front point with the best
 * co-located prefill at its width; the most requests/s per GPU whose
 * per-user speed, diluted by prefill, still meets the TPOT target. */
static void pick_colocated(const struct mp_deploy_options *opts, struct mp_deploy *d)
{
	struct mp_pool_workload w = workload(opts);
	struct mp_search_targets t = {.ttft_s = opts->ttft_s};
	for (size_t k = 0; k < d->decode.n_points; k++) {
		const struct mp_search_point *dp = &d->decode.points[k];
		size_t pi = 0;
		if (!best_at(&d->colocated, dp->cfg.ep, &pi) ||
		    !mp_search_meets(&d->colocated.points[pi], &t)) {
			continue;
		}
		const struct mp_search_point *pp = &d->colocated.points[pi];
		struct mp_colocated_rates r = {
			.prefill_tokens_per_s_per_gpu = pp->eval.tokens_per_s_per_gpu,
			.decode_tokens_per_s_per_gpu = dp->eval.tokens_per_s_per_gpu,
			.decode_tokens_per_s_per_user = dp->eval.tokens_per_s_per_user,
			.unit_gpus = dp->cfg.ep,
		};
		struct mp_colocated c;
		if (mp_pools_colocated(&w, &r, &c) != 0) {
			continue;
		}
		if (opts->tpot_s > 0 && c.tokens_per_s_per_user * opts->tpot_s < 1.0) {
			continue;
		}
		if (!d->has_colocated || c.requests_per_s_per_gpu > d->colo.requests_per_s_per_gpu) {
			d->has_colocated = true;
			d->colo = c;
			d->colo_decode = k;
			d->colo_prefill = pi;
		}
	}
}

static int size_pools(const struct mp_scenario *sc, const struct mp_deploy_options *opts,
		      struct mp_deploy *d)
{
	const struct mp_search_point *pp = &d->prefill_final;
	const struct mp_search_point *dp = &d->decode_final;
	double bw = fmin(sc->prefill.hardware.scale_out_bw_bytes_per_s,
			 sc->decode.hardware.scale_out_bw_bytes_per_s);
	d->kv_bytes_per_request = mp_model_kv_bytes_per_request(&sc->model, opts->isl);
	struct mp_pool_workload w = workload(opts);
	struct mp_pool_rates r = {
		.prefill_tokens_per_s_per_gpu = pp->eval.tokens_per_s_per_gpu,
		.prefill_unit_gpus = pp->cfg.ep,
		.decode_tokens_per_s_per_gpu = dp->eval.tokens_per_s_per_gpu,
		.decode_unit_gpus = dp->cfg.ep,
		.kv_bytes_per_request = d->kv_bytes_per_request,
		.link_bw_bytes_per_s = bw > 0 ? bw : 1,
	};
	int rc = mp_pools_size(&w, &r, &d->pools);
	if (rc == 0) {
		d->has_pools = true;
	} else if (rc == MP_ENOFIT) {
		/* mp_pools_size: the budget is below one group of each */
		snprintf(d->pools_why, sizeof(d->pools_why),
			 "the budget of %u GPUs holds no prefill group beside a decode group: one of each "
			 "at the chosen widths, prefill EP%u and decode EP%u, needs %llu GPUs",
			 w.gpu_budget, pp->cfg.ep, dp->cfg.ep,
			 (unsigned long long)pp->cfg.ep + dp->cfg.ep);
	}
	return rc == MP_ENOFIT ? 0 : rc;
}

/* Every MoE layer placed at the chosen width of a phase, as `plan` does. */
static int place_phase(const struct mp_scenario *sc, const struct mp_place_options *place,
		       const struct mp_loads *loads, const struct mp_phase_spec *spec, uint32_t ep,
		       struct mp_placement *out, struct mp_diags *diags)
{
	struct mp_ep_width width;
	if (mp_widths_width(&sc->model, spec, ep, &width) != 0) {
		return MP_EINVAL;
	}
	struct mp_place_options p = *place;
	uint32_t g = spec->hardware.gpus_per_node;
	if (p.gpus_per_node == 0 && g > 0 && ep % g == 0 && ep / g > 1) {
		p.gpus_per_node = g;
		p.node_policy = spec->node_policy;
		if (p.node_policy == MP_NODES_GROUP_LIMITED) {
			p.n_groups = sc->model.n_groups;
		}
	}
	return mp_place(loads, ep, width.slots / ep, &p, out, diags);
}

/* The chosen point of a phase predicted again with the busiest-GPU factor
 * of its full placement (every MoE layer), as `plan` computes it. */
static int final_point(const struct mp_scenario *sc, const struct mp_deploy_options *opts,
		       const struct mp_loads *loads, const struct mp_placement *placement,
		       const struct mp_search_point *chosen, struct mp_search_point *out)
{
	const struct mp_phase_spec *spec = chosen->cfg.phase == MP_PHASE_DECODE ? &sc->decode
										: &sc->prefill;
	struct ctx c = {.model = &sc->model, .hw = &spec->hardware, .spec = spec, .opts = opts,
			.cap = engine_cap(sc)};
	double tpr = spec->tokens_per_request >= 1 ? spec->tokens_per_request : 1;
	double tokens = chosen->cfg.phase == MP_PHASE_DECODE ? chosen->cfg.batch * tpr
							     : chosen->cfg.batch;
	tokens = fmin(tokens, MAX_FACTOR_TOKENS);
	uint32_t t = tokens > 1 ? (uint32_t)lround(tokens) : 1;
	double f = 1.0;
	int rc = mp_simulate_factor(placement, loads, t, sc->model.top_k, opts->factor_steps, 1, &f);
	*out = *chosen;
	out->cfg.busiest_factor = f;
	return rc ? rc : cb_evaluate(&c, &out->cfg, &out->eval);
}

int mp_deploy_search(const struct mp_scenario *sc, const struct mp_deploy_options *opts,
		     struct mp_deploy *out, struct mp_diags *diags)
{
	if (!options_ok(opts)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "search: give exactly one of a GPU budget and a request rate, and "
				    "positive isl and osl (cached fraction in [0, 1))");
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct mp_deploy d;
	mp_deploy_init(&d);
	const struct mp_model *model = &sc->model;
	uint32_t n_layers = model->moe_layers;
	if (sc->traffic.kind == MP_TRAFFIC_OBSERVED && sc->traffic.observed.n_layers > 0) {
		n_layers = sc->traffic.observed.n_layers;
	}
	int rc = mp_traffic_generate(&sc->traffic, n_layers, model->routed_experts, &d.loads);
	struct mp_place_options place = opts->place;
	place.progress = NULL;
	if (rc == 0) {
		rc = run_phase(sc, opts, &d.loads, &place, MP_PHASE_PREFILL, false, &d.prefill,
			       &d.loop_time_limits, &d.prefill_table_priced);
	}
	if (rc == 0) {
		rc = run_phase(sc, opts, &d.loads, &place, MP_PHASE_DECODE, false, &d.decode,
			       &d.loop_time_limits, &d.decode_table_priced);
	}
	if (rc == 0) {
		/* The co-located prefill needs no placement of its own: it
		 * shares the decode deployment's. */
		struct mp_deploy_options o = *opts;
		o.placement = false;
		rc = run_phase(sc, &o, &d.loads, &place, MP_PHASE_PREFILL, true, &d.colocated,
			       &d.loop_time_limits, NULL);
	}
	if (rc == MP_ENOFIT) {
		rc = mp_diags_add(diags, NULL, 0, 0, rc, "search: no EP width has a valid slot count");
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	d.search_seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
	t0 = t1;
	if (rc == 0 && opts->placement && d.prefill.has_choice && d.decode.has_choice) {
		rc = place_phase(sc, &place, &d.loads, &sc->prefill,
				 d.prefill.points[d.prefill.chosen].cfg.ep, &d.prefill_placement, diags);
		if (rc == 0) {
			rc = place_phase(sc, &place, &d.loads, &sc->decode,
					 d.decode.points[d.decode.chosen].cfg.ep, &d.decode_placement,
					 diags);
		}
		d.placed = rc == 0;
	}
	if (rc == 0 && d.prefill.has_choice && d.decode.has_choice) {
		d.prefill_final = d.prefill.points[d.prefill.chosen];
		d.decode_final = d.decode.points[d.decode.chosen];
		if (d.placed) {
			rc = final_point(sc, opts, &d.loads, &d.prefill_placement,
					 &d.prefill.points[d.prefill.chosen], &d.prefill_final);
		}
		if (rc == 0 && d.placed) {
			rc = final_point(sc, opts, &d.loads, &d.decode_placement,
					 &d.decode.points[d.decode.chosen], &d.decode_final);
		}
		if (rc == 0) {
			d.has_final = true;
			rc = size_pools(sc, opts, &d);
		}
	} else if (rc == 0) {
		snprintf(d.pools_why, sizeof(d.pools_why), "the %s phase has no configuration that meets "
			 "its target (its 'why' says which)", !d.decode.has_choice ? "decode" : "prefill");
	}
	if (rc == 0) {
		pick_colocated(opts, &d);
		d.colocated_wins = d.has_colocated &&
				   (!d.has_pools ||
				    d.colo.requests_per_s_per_gpu > d.pools.requests_per_s_per_gpu);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	d.placement_seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
	if (rc) {
		mp_deploy_finish(&d);
		return rc;
	}
	mp_deploy_finish(out);
	*out = d;
	return 0;
}
