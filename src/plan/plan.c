/* The planning pipeline: scenario -> widths, slots, HBM, roofline and
 * placement of each phase. */
#include "moeplan/plan.h"
#include "moeplan/simulate.h"
#include "moeplan/trust.h"
#include "moeplan/widths.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void mp_plan_options_init(struct mp_plan_options *opts)
{
	*opts = (struct mp_plan_options){.simulate_steps = 200, .width_steps = 128};
	mp_place_options_init(&opts->place);
}

static void phase_init(struct mp_phase_plan *phase, const char *name)
{
	*phase = (struct mp_phase_plan){.phase = name};
	mp_widths_init(&phase->widths);
	mp_placement_init(&phase->placement);
}

void mp_plan_init(struct mp_plan *plan)
{
	mp_loads_init(&plan->loads);
	phase_init(&plan->prefill, "prefill");
	phase_init(&plan->decode, "decode");
}

static void phase_finish(struct mp_phase_plan *phase)
{
	mp_placement_finish(&phase->placement);
	mp_widths_finish(&phase->widths);
}

void mp_plan_finish(struct mp_plan *plan)
{
	if (!plan) {
		return;
	}
	mp_loads_finish(&plan->loads);
	phase_finish(&plan->prefill);
	phase_finish(&plan->decode);
}

static struct mp_doc *widths_doc(const struct mp_widths *widths, bool decode)
{
	struct mp_doc *list = mp_doc_list();
	for (size_t i = 0; i < widths->count; i++) {
		const struct mp_width_candidate *c = &widths->items[i];
		struct mp_doc *d = mp_doc_map();
		mp_doc_put_int(d, "ep", c->width.ep);
		mp_doc_put_int(d, "slots", c->width.slots);
		mp_doc_put_string(d, "verdict", mp_width_verdict_name(c->verdict));
		mp_doc_put_string(d, "reason", c->reason);
		if (c->evaluated) {
			mp_doc_put_real(d, "tokens_per_expert", c->tokens_per_expert);
			mp_doc_put_real(d, "expert_time_s", c->expert_time_s);
			mp_doc_put_real(d, "tokens_per_s_per_gpu", c->tokens_per_s_per_gpu);
			if (c->has_step) {
				mp_doc_put_real(d, "requests_per_gpu", c->requests);
				mp_doc_put_real(d, "step_time_s", c->step.step_time_s);
				mp_doc_put_real(d, "tokens_per_s_per_user", c->step.tokens_per_s_per_user);
				mp_doc_put_real(d, "ttft_s", c->step.ttft_s);
				mp_trust_put_phase(d, decode);
			}
			mp_doc_put_bool(d, "fits", c->hbm.fits);
			mp_doc_put_int(d, "free_bytes", c->hbm.free_bytes);
		}
		mp_doc_put(list, NULL, d);
	}
	return list;
}

/* The node size the engine's dispatch sees at width ep (issue 24): the
 * one given in the options, else the hardware's scale-up domain where it
 * divides ep (SGLang's --nnodes = ep / gpus_per_node), else 0 (one node). */
static uint32_t dispatch_nodes(const struct mp_place_options *place, const struct mp_phase_spec *spec,
			       uint32_t ep)
{
	if (place->dispatch.gpus_per_node != 0) {
		return place->dispatch.gpus_per_node;
	}
	uint32_t p = spec->hardware.gpus_per_node;
	return p > 0 && p < ep && ep % p == 0 ? p : 0;
}

/* The expected busiest-GPU factor of one decode width: place a sample of
 * layers (at most 4, evenly spaced) at that width and route finite
 * batches through them (Monte Carlo, fixed seed). */
static int width_factor(const struct mp_model *model, const struct mp_phase_spec *spec,
			const struct mp_loads *loads, const struct mp_width_candidate *c,
			const struct mp_place_options *place, uint32_t steps, double *factor_out)
{
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
	struct mp_place_options opts = *place;
	opts.progress = NULL;
	opts.dispatch.gpus_per_node = dispatch_nodes(place, spec, c->width.ep);
	if (rc == 0) {
		rc = mp_place(&sample, c->width.ep, c->width.slots / c->width.ep, &opts, &placement, NULL);
	}
	uint32_t tokens = c->tokens_per_gpu > 1 ? (uint32_t)lround(c->tokens_per_gpu) : 1;
	if (rc == 0) {
		rc = mp_simulate_factor(&placement, &sample, tokens, model->top_k, steps, 1, factor_out);
	}
	mp_placement_finish(&placement);
	mp_loads_finish(&sample);
	return rc;
}

static int cmp_time(const void *a, const void *b)
{
	const struct mp_width_candidate *x = *(const struct mp_width_candidate *const *)a;
	const struct mp_width_candidate *y = *(const struct mp_width_candidate *const *)b;
	double tx = mp_widths_rank_time(x, 1.0);
	double ty = mp_widths_rank_time(y, 1.0);
	if (tx < ty) {
		return -1;
	}
	if (tx > ty) {
		return 1;
	}
	return x->width.ep < y->width.ep ? -1 : x->width.ep > y->width.ep;
}

/* Issue 6: a decode step runs at its busiest GPU, so decode widths are
 * ranked with the busiest-GPU factor on their routed experts (widths.h,
 * mp_widths_rank_time). Factors are estimated in order of time per token
 * at factor 1 and stop once a width's time alone (factor >= 1) exceeds
 * the best predicted time: those cannot win. */
static int rank_with_factors(const struct mp_model *model, const struct mp_phase_spec *spec,
			     const struct mp_capacity_options *cap, const struct mp_loads *loads,
			     const struct mp_place_options *place, uint32_t steps,
			     struct mp_widths *widths)
{
	size_t n = 0;
	struct mp_width_candidate **order = calloc(widths->count ? widths->count : 1, sizeof(*order));
	if (!order) {
		return MP_ENOMEM;
	}
	for (size_t i = 0; i < widths->count; i++) {
		if (widths->items[i].passes) {
			order[n++] = &widths->items[i];
		}
	}
	qsort(order, n, sizeof(*order), cmp_time);
	double best = (double)INFINITY;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		/* A width within the tie band of the best may still be picked. */
		if (mp_widths_rank_time(order[i], 1.0) > best * (1.0 + MP_WIDTHS_TIE)) {
			break;
		}
		double factor = 1.0;
		rc = width_factor(model, spec, loads, order[i], place, steps, &factor);
		if (rc == 0) {
			rc = mp_widths_apply_factor(model, spec, MP_PHASE_DECODE, cap, NULL, factor,
						    order[i]);
		}
		if (rc == 0 && order[i]->passes) {
			best = fmin(best, order[i]->rank_time_s);
		}
	}
	free(order);
	return rc ? rc : mp_widths_rerank(widths);
}

/* Place the phase at its chosen width and estimate the busiest-GPU factor
 * of the whole plan (Monte Carlo, opts->simulate_steps). */
static int place_pick(const struct mp_scenario *sc, const struct mp_plan_options *opts,
		      const struct mp_loads *loads, bool prefill,
		      const struct mp_place_options *place_in, struct mp_phase_plan *out,
		      struct mp_diags *diags)
{
	const struct mp_phase_spec *spec = prefill ? &sc->prefill : &sc->decode;
	const struct mp_model *model = &sc->model;
	const struct mp_widths *widths = &out->widths;
	const struct mp_width_candidate *pick = &widths->items[widths->chosen];
	struct mp_place_options place = *place_in;
	out->ep = pick->width.ep;
	out->slots = pick->width.slots;
	out->slots_per_gpu = pick->width.slots / pick->width.ep;
	out->redundant = pick->width.slots - model->routed_experts;
	out->tokens_per_gpu = pick->tokens_per_gpu;
	out->hbm = pick->hbm;
	int rc;
	if (place.gpus_per_node == 0 && spec->hardware.gpus_per_node > 0 &&
	    out->ep % spec->hardware.gpus_per_node == 0) {
		place.gpus_per_node = spec->hardware.gpus_per_node;
		/* Several nodes: by default balance them after the busiest GPU
		 * (it never changes the busiest GPU, and scale-out links are
		 * the slow ones); or keep the model's groups within nodes. */
		if (out->ep / place.gpus_per_node > 1 && place.node_policy == MP_NODES_REPORT) {
			place.node_policy = spec->node_policy;
			if (place.node_policy == MP_NODES_GROUP_LIMITED) {
				place.n_groups = model->n_groups;
			}
		}
	}
	place.dispatch.gpus_per_node = dispatch_nodes(place_in, spec, out->ep);
	out->dispatch = place.dispatch;
	/* SGLang's static streams run over every row of the exported map */
	uint32_t *moe_ids = place.dispatch.rule == MP_DISPATCH_SGLANG && model->moe_layers > 0
		? malloc((size_t)model->moe_layers * sizeof(*moe_ids)) : NULL;
	for (uint32_t k = 0; moe_ids && k < model->moe_layers; k++) {
		moe_ids[k] = mp_model_moe_layer_id(model, k);
	}
	place.map_moe_ids = moe_ids;
	place.map_n_moe = moe_ids ? model->moe_layers : 0;
	rc = mp_place(loads, out->ep, out->slots_per_gpu, &place, &out->placement, diags);
	free(moe_ids);
	if (rc) {
		return rc;
	}

	/* The step runs at its busiest GPU: systematic skew the placement
	 * leaves plus finite-batch noise, estimated by Monte Carlo. */
	double factor = 1.0;
	uint32_t tokens = out->tokens_per_gpu > 1 ? (uint32_t)lround(out->tokens_per_gpu) : 1;
	rc = mp_simulate_factor(&out->placement, loads, tokens, model->top_k,
				opts->simulate_steps, 1, &factor);
	if (rc) {
		return rc;
	}
	out->busiest_factor = factor;
	return 0;
}

/* The phase's figures at its final pick, from the pick's own evaluation
 * at the plan's busiest-GPU factor (mp_widths_apply_factor): one
 * evaluation behind the widths' reasons, the phase's step and the report. */
static int fill_pick(const struct mp_scenario *sc, bool prefill, struct mp_phase_plan *out)
{
	const struct mp_phase_spec *spec = prefill ? &sc->prefill : &sc->decode;
	const struct mp_width_candidate *pick = &out->widths.items[out->widths.chosen];
	struct mp_ep_width width = pick->width;
	out->tokens_per_gpu = pick->tokens_per_gpu;
	out->hbm = pick->hbm;
	out->requests = pick->requests;
	int rc = mp_roofline_point(&sc->model, &spec->hardware, NULL, &width, out->tokens_per_gpu,
				   &out->roofline);
	if (rc) {
		return rc;
	}
	out->step_expert_s = out->roofline.time_s * out->busiest_factor;
	out->has_step = pick->has_step;
	if (pick->has_step) {
		out->step = pick->step;
	}
	return 0;
}

/* Issue 26: no width fits in HBM: one line at the field to change, in the
 * scenario file (the GPUs, the ep range, the fixed ep or the hardware),
 * with the smallest width that fits. Returns false (nothing said) when
 * some width fits in HBM and another rule refused it. */
static bool say_no_fit(const struct mp_scenario *sc, const struct mp_phase_spec *spec,
		       const struct mp_widths *w, const char *phase, struct mp_diags *diags)
{
	const struct mp_width_candidate *widest = NULL;
	for (size_t i = 0; i < w->count; i++) {
		const struct mp_width_candidate *c = &w->items[i];
		if (c->width.ep > w->limit || !c->evaluated) {
			continue;
		}
		if (c->hbm.fits && (!spec->ep || c->width.ep == spec->ep)) {
			return false;
		}
		if (!spec->ep || c->width.ep == spec->ep) {
			widest = c;
		}
	}
	/* No wider width fits either (or none is valid): each width's own
	 * reason says more (fewer requests, a shorter context). */
	const uint32_t fit = w->fit_beyond;
	if (!widest || !fit) {
		return false;
	}
	char needs[sizeof(widest->reason) + 16];
	snprintf(needs, sizeof(needs), "EP%u %s", widest->width.ep, widest->reason);
	const struct mp_field_pos *pos = &spec->pos_phase;
	char fix[256];
	if (spec->ep) {
		pos = &spec->pos_ep;
		snprintf(fix, sizeof(fix), "set %s.ep to %u (the smallest width that fits) or "
			 "leave it out", phase, fit);
	} else if (!spec->ep_max_default && spec->ep_max == w->limit) {
		pos = &spec->pos_ep_max;
		snprintf(fix, sizeof(fix), "raise %s.ep_max to %u, the smallest width that fits%s",
			 phase, fit, spec->gpus && spec->gpus < fit ? ", and gpus with it" : "");
	} else if (spec->gpus) {
		pos = &spec->pos_gpus;
		snprintf(fix, sizeof(fix), "give %s.gpus %u or more: EP%u is the smallest width that "
			 "fits", phase, fit, fit);
	} else {
		snprintf(fix, sizeof(fix), "give %s.gpus %u or more: EP%u is the smallest width that "
			 "fits", phase, fit, fit);
	}
	char what[96];
	if (spec->ep) {
		snprintf(what, sizeof(what), "EP%u, the width %s.ep fixes, does not fit", spec->ep, phase);
	} else {
		snprintf(what, sizeof(what), "no EP width up to EP%u fits", w->limit);
	}
	mp_diags_add(diags, sc->path, pos->line, pos->column, MP_ENOFIT, "%s: %s in HBM (%s); %s",
		     phase, what, needs, fix);
	return true;
}

static int plan_phase(const struct mp_scenario *sc, const struct mp_plan_options *opts,
		      const struct mp_loads *loads, bool prefill, struct mp_phase_plan *out,
		      struct mp_diags *diags)
{
	const struct mp_phase_spec *spec = prefill ? &sc->prefill : &sc->decode;
	const struct mp_model *model = &sc->model;
	struct mp_widths *widths = &out->widths;
	/* the engine's memory rule (engine.h; moeplan's reserve without one) */
	struct mp_capacity_options cap;
	mp_capacity_options_init(&cap);
	mp_engine_capacity_options(&sc->engine, model->drafter.moe_stages > 0, &cap);
	int rc = mp_widths_rank(model, spec, prefill ? MP_PHASE_PREFILL : MP_PHASE_DECODE, &cap,
				NULL, widths);
	if (rc == 0 && !widths->has_choice && say_no_fit(sc, spec, widths, out->phase, diags)) {
		rc = MP_ENOFIT;
	} else if (rc == 0 && !widths->has_choice) {
		rc = MP_ENOFIT;
		size_t said = 0;
		for (int pass = 0; pass < 2 && said == 0; pass++) {
			/* the widths that were evaluated; if none was, why not */
			for (size_t i = 0; i < widths->count; i++) {
				if ((pass == 0) == widths->items[i].evaluated && widths->items[i].reason[0]) {
					mp_diags_add(diags, NULL, 0, 0, rc, "%s: EP%u: %s", out->phase,
						     widths->items[i].width.ep, widths->items[i].reason);
					said++;
				}
			}
		}
		mp_diags_add(diags, sc->path, spec->pos_phase.line, spec->pos_phase.column, rc,
			     "%s: no EP width fits%s", out->phase, said ? " (see above)" : "");
	}
	struct mp_place_options place = opts->place;
	if (sc->time_limit_s > 0 && place.time_limit_s <= 0) {
		place.time_limit_s = sc->time_limit_s;
	}
	if (rc == 0 && !prefill) {
		rc = rank_with_factors(model, spec, &cap, loads, &place, opts->width_steps, widths);
	}
	if (rc) {
		return rc;
	}
	/* Place at the pick; a decode pick's busiest-GPU factor then comes
	 * from the whole plan (one number, reused by the widths' reasons and
	 * the report). If that factor makes another width faster, that width
	 * is placed in turn: each round fixes one more width's factor (a
	 * width placed twice gets the same factor), so this ends within
	 * widths->count + 1 rounds; the last allowed round keeps its pick. */
	for (size_t round = 0;; round++) {
		size_t chosen = widths->chosen;
		rc = place_pick(sc, opts, loads, prefill, &place, out, diags);
		if (rc) {
			return rc;
		}
		struct mp_width_candidate *pick = &widths->items[chosen];
		rc = mp_widths_apply_factor(model, spec, prefill ? MP_PHASE_PREFILL : MP_PHASE_DECODE,
					    &cap, NULL, out->busiest_factor, pick);
		if (rc == 0) {
			rc = mp_widths_rerank(widths);
		}
		if (rc) {
			return rc;
		}
		if (round >= widths->count || widths->chosen == chosen) {
			widths->chosen = chosen;
			return fill_pick(sc, prefill, out);
		}
		mp_placement_finish(&out->placement);
		mp_placement_init(&out->placement);
	}
}

/* Which model layer each row of the loads is (README "Layer identity").
 * Rows that name their layers (a '# layers:' line, a layer column,
 * SGLang's dump with every hidden layer) keep the MoE ones, in order; a
 * dense layer's row must be all zero (SGLang's recorder writes zeros for
 * them) and is dropped. Unnamed rows are the model's MoE layers in order
 * when there is one per MoE layer; fewer unnamed rows keep no ids (they
 * are planned, but cannot be exported). */
int mp_plan_layers(const struct mp_model *model, struct mp_loads *loads, struct mp_diags *diags)
{
	const uint32_t hidden = mp_model_hidden_layers(model);
	const uint32_t E = loads->n_experts;
	const char *where = loads->path ? loads->path : "traffic";
	if (loads->hidden_layers && loads->hidden_layers != hidden) {
		return mp_diags_add(diags, where, 0, 0, MP_EINVAL,
				    "the loads have a row for each of %u hidden layers, but the model has %u "
				    "(%u MoE + %u dense)", loads->hidden_layers, hidden, model->moe_layers,
				    model->dense_layers);
	}
	uint32_t *ids = malloc((size_t)loads->n_layers * sizeof(*ids));
	if (!ids) {
		return MP_ENOMEM;
	}
	uint32_t kept = 0;
	int rc = 0;
	for (uint32_t r = 0; r < loads->n_layers && rc == 0; r++) {
		if (!loads->layer_ids) {
			ids[kept++] = loads->n_layers == model->moe_layers ? mp_model_moe_layer_id(model, r) : r;
			continue;
		}
		const uint32_t id = loads->layer_ids[r];
		const double *row = mp_loads_row(loads, r);
		if (id >= hidden) {
			rc = mp_diags_add(diags, where, 0, 0, MP_EINVAL,
					  "loads row %u is layer %u, but the model has %u hidden layers (0 to %u)",
					  r, id, hidden, hidden - 1);
		} else if (mp_model_moe_index(model, id) != UINT32_MAX) {
			memmove(mp_loads_row(loads, kept), row, (size_t)E * sizeof(*row));
			ids[kept++] = id;
		} else {
			for (uint32_t e = 0; e < E && rc == 0; e++) {
				if (row[e] != 0.0) {
					rc = mp_diags_add(diags, where, 0, 0, MP_EINVAL,
							  "loads row %u is layer %u, a dense layer of the model "
							  "(no experts), but expert %u has load %g there",
							  r, id, e, row[e]);
				}
			}
		}
	}
	if (rc == 0 && kept == 0) {
		rc = mp_diags_add(diags, where, 0, 0, MP_EINVAL,
				  "the loads have no row for a MoE layer of the model");
	}
	if (rc == 0) {
		bool named = loads->layer_ids || loads->n_layers == model->moe_layers;
		loads->n_layers = kept;
		loads->hidden_layers = 0;
		free(loads->layer_ids);
		loads->layer_ids = NULL;
		rc = named ? mp_loads_set_layer_ids(loads, ids) : 0;
	}
	free(ids);
	return rc;
}

int mp_plan_build(const struct mp_scenario *sc, const struct mp_plan_options *opts,
		  struct mp_plan *out, struct mp_diags *diags)
{
	struct mp_plan_options defaults;
	if (!opts) {
		mp_plan_options_init(&defaults);
		opts = &defaults;
	}
	const struct mp_model *model = &sc->model;
	/* Observed counts often cover only some MoE layers (a trace dumps a
	 * few); those layers are planned, each row as given. */
	uint32_t n_layers = model->moe_layers;
	if (sc->traffic.kind == MP_TRAFFIC_OBSERVED && sc->traffic.observed.n_layers > 0) {
		n_layers = sc->traffic.observed.n_layers;
	}
	int rc = mp_traffic_generate(&sc->traffic, n_layers, model->routed_experts, &out->loads);
	if (rc) {
		return mp_diags_add(diags, NULL, 0, 0, rc,
				    "traffic: loads must have %u layers x %u experts to match the model",
				    n_layers, model->routed_experts);
	}
	rc = mp_plan_layers(model, &out->loads, diags);
	if (rc) {
		return rc;
	}
	rc = plan_phase(sc, opts, &out->loads, true, &out->prefill, diags);
	if (rc == 0) {
		rc = plan_phase(sc, opts, &out->loads, false, &out->decode, diags);
	}
	return rc;
}

void mp_phase_plan_engine_balance(const struct mp_phase_plan *ph, double *worst, double *mean)
{
	double w = 1.0, sum = 0.0;
	uint32_t n = 0;
	for (uint32_t l = 0; l < ph->placement.n_layers; l++) {
		const struct mp_layer_placement *lp = &ph->placement.layers[l];
		if (lp->mean_load > 0) {
			double r = lp->max_load / lp->mean_load;
			w = r > w ? r : w;
			sum += r;
			n++;
		}
	}
	*worst = w;
	*mean = n ? sum / n : 1.0;
}

/* The engine the placement assumes (issue 24; only under a rule other
 * than even, so that plans under even stay as they were): its dispatch
 * rule, SGLang's --ep-dispatch-algorithm, the node size the rule saw, and
 * the busiest GPU over the mean under that rule (the placement's
 * max_load / mean_load, worst and mean over layers). */
static struct mp_doc *engine_doc(const struct mp_phase_plan *ph)
{
	struct mp_doc *e = mp_doc_map();
	mp_doc_put_string(e, "dispatch", mp_dispatch_rule_name(ph->dispatch.rule));
	if (ph->dispatch.rule == MP_DISPATCH_SGLANG) {
		mp_doc_put_string(e, "ep_dispatch_algorithm", mp_dispatch_algorithm_name(ph->dispatch.algorithm));
	}
	mp_doc_put_int(e, "gpus_per_node", ph->dispatch.gpus_per_node ? ph->dispatch.gpus_per_node : ph->ep);
	double worst, mean;
	mp_phase_plan_engine_balance(ph, &worst, &mean);
	mp_doc_put_real(e, "worst_busiest_over_mean", worst);
	mp_doc_put_real(e, "mean_busiest_over_mean", mean);
	return e;
}

static struct mp_doc *phase_doc(const struct mp_phase_plan *ph, const struct mp_phase_spec *spec,
				 const uint32_t *layer_ids)
{
	struct mp_doc *d = mp_doc_map();
	const struct mp_roofline_part *m = &ph->roofline.main;
	mp_doc_put_string(d, "hardware", spec->hardware.name ? spec->hardware.name : "");
	mp_doc_put_int(d, "ep", ph->ep);
	mp_doc_put_int(d, "slots", ph->slots);
	mp_doc_put_int(d, "slots_per_gpu", ph->slots_per_gpu);
	mp_doc_put_int(d, "redundant", ph->redundant);
	mp_doc_put_real(d, "tokens_per_gpu", ph->tokens_per_gpu);
	mp_doc_put_real(d, "tokens_per_expert", m->tokens_per_expert);
	mp_doc_put_real(d, "intensity_flop_per_byte", m->intensity);
	mp_doc_put_real(d, "ridge_flop_per_byte", ph->roofline.ridge);
	mp_doc_put_real(d, "ridge_tokens_per_expert", m->ridge_tokens);
	mp_doc_put_string(d, "bound", m->compute_bound ? "compute" : "memory");
	mp_doc_put_real(d, "expert_time_s", ph->roofline.time_s);
	mp_doc_put_real(d, "busiest_gpu_factor", ph->busiest_factor);
	mp_doc_put_real(d, "predicted_expert_time_s", ph->step_expert_s);
	mp_doc_put(d, "hbm", mp_capacity_to_doc(&ph->hbm));
	if (ph->has_step) {
		const struct mp_width_candidate *pick = &ph->widths.items[ph->widths.chosen];
		mp_doc_put_real(d, "requests_per_gpu", ph->requests);
		mp_doc_put(d, "step", mp_step_doc(&ph->step,
						  strcmp(ph->phase, "prefill") == 0 ? MP_STEP_PREFILL
										     : MP_STEP_DECODE,
						  ph->ep, &ph->hbm, pick->has_max_requests,
						  pick->max_requests));
	}
	/* The roofline keys above are the phase's summary (plan/v1); the
	 * whole operating point, as `moeplan roofline` writes it, is under
	 * roofline (after step: readers that look for the phase's step first
	 * find it). */
	struct mp_doc *roofline = mp_doc_map();
	mp_roofline_point_put(roofline, &ph->roofline);
	mp_doc_put(d, "roofline", roofline);
	mp_doc_put(d, "widths", widths_doc(&ph->widths, strcmp(ph->phase, "decode") == 0));
	if (ph->dispatch.rule != MP_DISPATCH_EVEN) {
		mp_doc_put(d, "engine", engine_doc(ph));
	}
	mp_doc_put(d, "placement", mp_placement_to_doc(&ph->placement, layer_ids));
	return d;
}

struct mp_doc *mp_plan_to_doc(const struct mp_plan *plan, const struct mp_scenario *sc)
{
	return mp_plan_to_doc_map(plan, sc, NULL);
}

struct mp_doc *mp_plan_to_doc_map(const struct mp_plan *plan, const struct mp_scenario *sc,
				  const char *map_path)
{
	struct mp_doc *doc = mp_doc_map();
	mp_doc_put_string(doc, "moeplan", "plan/v1");
	mp_doc_put_string(doc, "scenario", sc->name ? sc->name : "");
	struct mp_doc *model = mp_doc_map();
	mp_doc_put_string(model, "name", sc->model.name ? sc->model.name : "");
	mp_doc_put_int(model, "moe_layers", sc->model.moe_layers);
	mp_doc_put_int(model, "hidden_layers", mp_model_hidden_layers(&sc->model));
	mp_doc_put_int(model, "routed_experts", sc->model.routed_experts);
	mp_doc_put_int(model, "top_k", sc->model.top_k);
	mp_doc_put(doc, "model", model);
	mp_doc_put_string(doc, "loads_source", plan->loads.source ? plan->loads.source : "");
	if (sc->engine.name) {
		mp_doc_put(doc, "engine", mp_engine_profile_to_doc(&sc->engine));
	}
	/* The popularity the plan was made for, [layers][experts]: `simulate
	 * --plan` routes it (issue 16 item 6). */
	struct mp_doc *loads = mp_doc_list();
	for (uint32_t l = 0; l < plan->loads.n_layers; l++) {
		mp_doc_put(loads, NULL, mp_doc_reals(mp_loads_row(&plan->loads, l), plan->loads.n_experts));
	}
	mp_doc_put(doc, "expert_loads", loads);
	mp_doc_put(doc, "prefill", phase_doc(&plan->prefill, &sc->prefill, plan->loads.layer_ids));
	mp_doc_put(doc, "decode", phase_doc(&plan->decode, &sc->decode, plan->loads.layer_ids));
	struct mp_doc *notes = mp_doc_list();
	char buf[384];
	const char *algorithm = plan->decode.dispatch.rule == MP_DISPATCH_SGLANG
		? mp_dispatch_algorithm_name(plan->decode.dispatch.algorithm) : "static";
	if (map_path) {
		size_t size = 2 * strlen(map_path) + 256;
		char *text = malloc(size);
		if (text) {
			snprintf(text, size, "SGLang decode: --tp-size %u --ep-size %u "
				 "--ep-num-redundant-experts %u --init-expert-location %s "
				 "--ep-dispatch-algorithm %s (%s from --export sglang)", plan->decode.ep,
				 plan->decode.ep, plan->decode.redundant, map_path, algorithm, map_path);
		}
		mp_doc_put(notes, NULL, text ? mp_doc_string(text) : NULL);
		free(text);
	} else {
		snprintf(buf, sizeof(buf), "SGLang decode: --tp-size %u --ep-size %u --ep-num-redundant-experts %u "
			 "--init-expert-location MAP.json --ep-dispatch-algorithm %s (MAP.json from "
			 "--export sglang)", plan->decode.ep, plan->decode.ep, plan->decode.redundant,
			 algorithm);
		mp_doc_put(notes, NULL, mp_doc_string(buf));
	}
	snprintf(buf, sizeof(buf), "vLLM decode: reads no placement from a file; "
		 "--enable-expert-parallel --enable-eplb --eplb-config '{\"num_redundant_experts\": %u}' "
		 "on %u GPUs lets it balance the same slots by itself",
		 plan->decode.redundant, plan->decode.ep);
	mp_doc_put(notes, NULL, mp_doc_string(buf));
	mp_doc_put(doc, "notes", notes);
	return doc;
}
