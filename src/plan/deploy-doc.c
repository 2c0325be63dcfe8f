/* The search result as a document (deploy.h, README "Search schema").
 * Wall times are left out so that the same inputs give byte-identical
 * output. */
#include "moeplan/deploy.h"

#include <stdio.h>
#include <stdlib.h>

#include "moeplan/plan.h"
#include "moeplan/trust.h"

static struct mp_doc *point_doc(const struct mp_search_point *p)
{
	struct mp_doc *d = mp_doc_map();
	bool decode = p->cfg.phase == MP_PHASE_DECODE;
	mp_doc_put_int(d, "ep", p->cfg.ep);
	char att[16];
	if (p->cfg.attention_tp > 1) {
		snprintf(att, sizeof(att), "tp:%u", p->cfg.attention_tp);
	} else {
		snprintf(att, sizeof(att), "dp");
	}
	mp_doc_put_string(d, "attention", att);
	mp_doc_put_string(d, "overlap", mp_deploy_overlap_name(p->cfg.overlap));
	if (decode) {
		mp_doc_put_real(d, "requests_per_gpu", p->cfg.batch);
	} else {
		mp_doc_put_real(d, "chunk_tokens", p->cfg.batch);
	}
	mp_doc_put_real(d, "busiest_gpu_factor", p->cfg.busiest_factor);
	mp_doc_put_real(d, "step_time_s", p->eval.step_s);
	mp_doc_put_real(d, "tokens_per_s_per_gpu", p->eval.tokens_per_s_per_gpu);
	if (decode) {
		mp_doc_put_real(d, "tokens_per_s_per_user", p->eval.tokens_per_s_per_user);
		mp_doc_put_real(d, "tpot_s", p->eval.tokens_per_s_per_user > 0
						     ? 1.0 / p->eval.tokens_per_s_per_user
						     : 0.0);
	} else {
		mp_doc_put_real(d, "ttft_s", p->eval.ttft_s);
	}
	mp_trust_put_phase(d, decode);
	return d;
}

static struct mp_doc *phase_doc(const struct mp_search_phase *ph)
{
	struct mp_doc *d = mp_doc_map();
	mp_doc_put_int(d, "configurations", (int64_t)ph->evaluated);
	mp_doc_put_int(d, "placements_solved", (int64_t)ph->placements);
	if (ph->has_choice) {
		mp_doc_put(d, "chosen", point_doc(&ph->points[ph->chosen]));
	}
	if (ph->has_runner_up) {
		mp_doc_put(d, "runner_up", point_doc(&ph->points[ph->runner_up]));
	}
	mp_doc_put_string(d, "why", ph->why);
	struct mp_doc *front = mp_doc_list();
	for (size_t k = 0; k < ph->n_front; k++) {
		mp_doc_put(front, NULL, point_doc(&ph->points[ph->front[k]]));
	}
	mp_doc_put(d, "front", front);
	struct mp_doc *widths = mp_doc_list();
	for (size_t i = 0; i < ph->n_widths; i++) {
		const struct mp_search_width *w = &ph->widths[i];
		struct mp_doc *x = mp_doc_map();
		mp_doc_put_int(x, "ep", w->ep);
		mp_doc_put_int(x, "configurations", (int64_t)w->evaluated);
		mp_doc_put_bool(x, "fits", w->fits);
		mp_doc_put_bool(x, "meets_targets", w->meets);
		mp_doc_put_bool(x, "placement_solved", w->factor_solved);
		mp_doc_put_real(x, "busiest_gpu_factor", w->busiest_factor);
		mp_doc_put_real(x, "best_tokens_per_s_per_gpu", w->best);
		mp_doc_put_real(x, "bound_tokens_per_s_per_gpu", w->bound);
		mp_doc_put(widths, NULL, x);
	}
	mp_doc_put(d, "widths", widths);
	return d;
}

static struct mp_doc *pools_doc(const struct mp_pools *p)
{
	struct mp_doc *d = mp_doc_map();
	mp_doc_put_int(d, "prefill_gpus", p->prefill_gpus);
	mp_doc_put_int(d, "prefill_groups", p->prefill_units);
	mp_doc_put_int(d, "decode_gpus", p->decode_gpus);
	mp_doc_put_int(d, "decode_groups", p->decode_units);
	mp_doc_put_int(d, "gpus", p->gpus);
	mp_doc_put_int(d, "spare_gpus", p->spare_gpus);
	mp_doc_put_real(d, "prefill_share", p->prefill_share);
	mp_doc_put_real(d, "prefill_to_decode", p->ratio);
	mp_doc_put_real(d, "requests_per_s", p->request_rate);
	mp_doc_put_real(d, "requests_per_s_per_gpu", p->requests_per_s_per_gpu);
	mp_doc_put_real(d, "input_tokens_per_s_per_gpu", p->input_tokens_per_s_per_gpu);
	mp_doc_put_real(d, "output_tokens_per_s_per_gpu", p->output_tokens_per_s_per_gpu);
	mp_trust_put_rates(d, false);
	mp_doc_put_real(d, "prefill_utilisation", p->prefill_utilisation);
	mp_doc_put_real(d, "decode_utilisation", p->decode_utilisation);
	mp_doc_put_real(d, "kv_bytes_per_request", p->kv_bytes_per_request);
	mp_doc_put_real(d, "kv_transfer_s", p->kv_transfer_s);
	mp_doc_put_real(d, "kv_link_utilisation", p->kv_link_utilisation);
	mp_doc_put_bool(d, "kv_link_bound", p->kv_link_bound);
	return d;
}

static struct mp_doc *colocated_doc(const struct mp_deploy *dep)
{
	struct mp_doc *d = mp_doc_map();
	const struct mp_colocated *c = &dep->colo;
	mp_doc_put(d, "decode", point_doc(&dep->decode.points[dep->colo_decode]));
	mp_doc_put(d, "prefill", point_doc(&dep->colocated.points[dep->colo_prefill]));
	mp_doc_put_int(d, "gpus", c->gpus);
	mp_doc_put_int(d, "groups", c->units);
	mp_doc_put_real(d, "requests_per_s", c->request_rate);
	mp_doc_put_real(d, "requests_per_s_per_gpu", c->requests_per_s_per_gpu);
	mp_doc_put_real(d, "input_tokens_per_s_per_gpu", c->input_tokens_per_s_per_gpu);
	mp_doc_put_real(d, "output_tokens_per_s_per_gpu", c->output_tokens_per_s_per_gpu);
	mp_doc_put_real(d, "prefill_time_share", c->prefill_time_share);
	mp_doc_put_real(d, "tokens_per_s_per_user", c->tokens_per_s_per_user);
	mp_trust_put_rates(d, true);
	return d;
}

/* A pool's kernel table as the documents name it (step-doc.c's words):
 * priced says whether it priced any term of the steps searched. */
static const char *kernel_source(const struct mp_hardware *hw, bool priced, char *buf, size_t size)
{
	const char *name = hw->kernels_path ? hw->kernels_path : "given";
	if (hw->kernels.n_rows > 0 && priced) {
		return name;
	}
	if (hw->kernels.n_rows > 0) {
		snprintf(buf, size, "none: scalar factors (%s has no row for this model)", name);
		return buf;
	}
	return hw->kernels_none ? "none: scalar factors (--kernels none)"
				: "none: scalar factors (no kernel table for this GPU)";
}

struct mp_doc *mp_deploy_to_doc(const struct mp_deploy *dep, const struct mp_scenario *sc,
				const struct mp_deploy_options *opts)
{
	struct mp_doc *doc = mp_doc_map();
	mp_doc_put_string(doc, "moeplan", "search/v1");
	mp_doc_put_string(doc, "scenario", sc->name ? sc->name : "");
	mp_doc_put_string(doc, "model", sc->model.name ? sc->model.name : "");
	struct mp_doc *w = mp_doc_map();
	if (opts->gpus) {
		mp_doc_put_int(w, "gpus", opts->gpus);
	} else {
		mp_doc_put_real(w, "request_rate", opts->request_rate);
	}
	mp_doc_put_real(w, "isl", opts->isl);
	mp_doc_put_real(w, "osl", opts->osl);
	mp_doc_put_real(w, "cached_fraction", opts->cached_fraction);
	mp_doc_put_real(w, "tpot_s", opts->tpot_s);
	mp_doc_put_real(w, "ttft_s", opts->ttft_s);
	mp_doc_put_real(w, "acceptance", opts->acceptance);
	mp_doc_put(doc, "workload", w);
	struct mp_doc *pre = phase_doc(&dep->prefill), *dec = phase_doc(&dep->decode);
	if (dep->has_final && dep->placed) {
		mp_doc_put(pre, "chosen_full_placement", point_doc(&dep->prefill_final));
		mp_doc_put(dec, "chosen_full_placement", point_doc(&dep->decode_final));
	}
	/* issue 23: where each pool's kernel efficiencies came from */
	char kb[300];
	mp_doc_put_string(pre, "kernel_table",
			  kernel_source(&sc->prefill.hardware, dep->prefill_table_priced, kb, sizeof(kb)));
	mp_doc_put_string(dec, "kernel_table",
			  kernel_source(&sc->decode.hardware, dep->decode_table_priced, kb, sizeof(kb)));
	mp_doc_put(doc, "prefill", pre);
	mp_doc_put(doc, "decode", dec);
	if (dep->has_pools) {
		mp_doc_put(doc, "pools", pools_doc(&dep->pools));
	} else {
		mp_doc_put_string(doc, "pools_why", dep->pools_why);
	}
	if (dep->has_colocated) {
		mp_doc_put(doc, "colocated", colocated_doc(dep));
	}
	mp_doc_put_int(doc, "loop_placements_time_limited", (int64_t)dep->loop_time_limits);
	mp_doc_put_string(doc, "winner", dep->colocated_wins ? "colocated"
					 : dep->has_pools    ? "disaggregated"
							     : "none");
	if (dep->placed) {
		/* each row's hidden layer, as plan writes them (mp_plan_layers:
		 * the loads' own ids, else the model's MoE layers in order when
		 * there is a row for each) */
		const struct mp_loads *ld = &dep->loads;
		uint32_t *ids = ld->layer_ids || ld->n_layers != sc->model.moe_layers
					? NULL
					: malloc((size_t)(ld->n_layers ? ld->n_layers : 1) * sizeof(*ids));
		for (uint32_t r = 0; ids && r < ld->n_layers; r++) {
			ids[r] = mp_model_moe_layer_id(&sc->model, r);
		}
		const uint32_t *named = ld->layer_ids ? ld->layer_ids : ids;
		struct mp_doc *p = mp_doc_map();
		mp_doc_put(p, "prefill", mp_placement_to_doc(&dep->prefill_placement, named));
		mp_doc_put(p, "decode", mp_placement_to_doc(&dep->decode_placement, named));
		mp_doc_put(doc, "placement", p);
		free(ids);
	}
	return doc;
}
