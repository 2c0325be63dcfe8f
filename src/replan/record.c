/* Re-planning (moeplan/replan.h): folding slot counts, the re-plan record
 * and the Pareto document. The search itself is in the other files of
 * src/replan/ (replan/internal.h lists them). */
#include "moeplan/replan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int mp_replan_fold_slot_counts(const struct mp_placement *map, const struct mp_loads *slot_counts,
			       struct mp_loads *out, struct mp_diags *diags)
{
	uint32_t N = map->gpus * map->slots_per_gpu;
	if (slot_counts->n_layers != map->n_layers || slot_counts->n_experts != N) {
		return mp_diags_add(diags, slot_counts->source, 0, 0, MP_EINVAL,
				    "per-slot counts are %u layers x %u columns but the current plan has %u layers x %u slots",
				    slot_counts->n_layers, slot_counts->n_experts, map->n_layers, N);
	}
	struct mp_loads tmp;
	mp_loads_init(&tmp);
	int rc = mp_loads_alloc(&tmp, map->n_layers, map->n_experts);
	if (rc) {
		return rc;
	}
	for (uint32_t l = 0; l < map->n_layers; l++) {
		const double *c = mp_loads_row(slot_counts, l);
		double *w = mp_loads_row(&tmp, l);
		const uint32_t *m = map->layers[l].slot_expert;
		for (uint32_t p = 0; p < N; p++) {
			if (m[p] >= map->n_experts) {
				mp_loads_finish(&tmp);
				return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
						    "layer %u, slot %u: expert %u is out of range", l, p, m[p]);
			}
			w[m[p]] += c[p];
		}
	}
	if (slot_counts->source) {
		size_t n = strlen(slot_counts->source) + 1;
		tmp.source = malloc(n);
		if (!tmp.source) {
			mp_loads_finish(&tmp);
			return MP_ENOMEM;
		}
		memcpy(tmp.source, slot_counts->source, n);
	}
	mp_loads_finish(out);
	*out = tmp;
	return 0;
}

static uint32_t layer_id(const uint32_t *ids, uint32_t l)
{
	return ids ? ids[l] : l;
}

struct mp_doc *mp_replan_to_doc(const struct mp_replan *r, const struct mp_replan_options *o,
				const uint32_t *layer_ids)
{
	struct mp_doc *d = mp_doc_map();
	if (o->cost_mode) {
		mp_doc_put_string(d, "objective", "predicted expert time over the horizon plus move time");
		mp_doc_put_real(d, "move_cost_s", o->move_cost_s);
		mp_doc_put_real(d, "horizon_steps", o->horizon_steps);
		mp_doc_put_real(d, "layer_time_s", o->layer_time_s);
	} else {
		mp_doc_put_string(d, "objective", "sum of busiest-GPU loads with a move budget");
		if (o->max_moves == MP_REPLAN_UNLIMITED) {
			mp_doc_put(d, "max_moves", mp_doc_null());
		} else {
			mp_doc_put_int(d, "max_moves", (int64_t)o->max_moves);
		}
	}
	mp_doc_put_real(d, "min_gain", o->min_gain);
	mp_doc_put_int(d, "expert_bytes", (int64_t)r->expert_bytes);
	mp_doc_put_real(d, "link_bandwidth_bytes_per_s", r->link_bw_bytes_per_s);
	mp_doc_put_int(d, "moves", (int64_t)r->n_moves);
	mp_doc_put_int(d, "bytes", (int64_t)r->total_bytes);
	mp_doc_put_real(d, "transfer_s", r->transfer_s);
	mp_doc_put_real(d, "sum_max_load_before", r->sum_before);
	mp_doc_put_real(d, "sum_max_load_after", r->sum_after);
	mp_doc_put_real(d, "sum_max_load_from_scratch", r->sum_scratch);
	uint64_t aligned = 0;
	uint64_t unaligned = 0;
	for (uint32_t l = 0; l < r->before.n_layers; l++) {
		aligned += r->layers[l].scratch_moves;
		unaligned += r->layers[l].scratch_moves_raw;
	}
	mp_doc_put_int(d, "from_scratch_moves", (int64_t)aligned);
	mp_doc_put_int(d, "from_scratch_moves_unaligned", (int64_t)unaligned);
	mp_doc_put_real(d, "sum_lower_bound", r->sum_bound);
	mp_doc_put_real(d, "gain", r->gain);
	mp_doc_put_real(d, "recovered", r->recovered);
	mp_doc_put_bool(d, "kept_current", r->kept);
	if (r->kept) {
		mp_doc_put_real(d, "refused_gain", r->kept_gain);
	}
	struct mp_doc *layers = mp_doc_list();
	size_t i = 0;
	for (uint32_t l = 0; l < r->before.n_layers; l++) {
		const struct mp_replan_layer *rl = &r->layers[l];
		struct mp_doc *ld = mp_doc_map();
		mp_doc_put_int(ld, "layer", layer_id(layer_ids, l));
		mp_doc_put_int(ld, "moves", rl->moves);
		mp_doc_put_int(ld, "bytes", (int64_t)rl->bytes);
		mp_doc_put_real(ld, "max_load_before", rl->max_before);
		mp_doc_put_real(ld, "max_load_after", rl->max_after);
		mp_doc_put_real(ld, "mean_load", rl->mean_load);
		mp_doc_put_real(ld, "from_scratch_max_load", rl->scratch_max);
		mp_doc_put_int(ld, "from_scratch_moves", rl->scratch_moves);
		mp_doc_put_int(ld, "from_scratch_moves_unaligned", rl->scratch_moves_raw);
		mp_doc_put_real(ld, "lower_bound", rl->lower_bound);
		mp_doc_put_real(ld, "gap", rl->gap);
		mp_doc_put_string(ld, "status", mp_place_status_name(rl->status));
		mp_doc_put_string(ld, "method", rl->method ? rl->method : "");
		struct mp_doc *mv = mp_doc_list();
		for (; i < r->n_moves && r->moves[i].layer == l; i++) {
			const struct mp_replan_move *m = &r->moves[i];
			struct mp_doc *md = mp_doc_map();
			mp_doc_put_int(md, "gpu", m->gpu);
			mp_doc_put_int(md, "slot", m->slot);
			/* `slot` is the physical index (0 .. N-1); the slot on its
			 * GPU, as check numbers slots (issue 26 item 9) */
			if (r->before.slots_per_gpu) {
				mp_doc_put_int(md, "slot_on_gpu", m->slot % r->before.slots_per_gpu);
			}
			mp_doc_put_int(md, "old_expert", m->old_expert);
			mp_doc_put_int(md, "new_expert", m->new_expert);
			mp_doc_put_int(md, "bytes", (int64_t)r->expert_bytes);
			mp_doc_put_int(md, "from_gpu", m->source_gpu);
			mp_doc_put(mv, NULL, md);
		}
		mp_doc_put(ld, "moved", mv);
		mp_doc_put(layers, NULL, ld);
	}
	mp_doc_put(d, "layers", layers);
	return d;
}

struct mp_doc *mp_replan_pareto_doc(const struct mp_replan *r, const uint32_t *layer_ids)
{
	struct mp_doc *d = mp_doc_map();
	struct mp_doc *total = mp_doc_map();
	mp_doc_put_real(total, "sum_max_load_before", r->sum_before);
	mp_doc_put_real(total, "sum_max_load_from_scratch", r->sum_scratch);
	mp_doc_put_real(total, "sum_lower_bound", r->sum_bound);
	mp_doc_put_int(total, "from_scratch_moves", r->total_curve_len ? (int64_t)r->total_curve_len - 1 : 0);
	mp_doc_put(total, "sum_max_load", mp_doc_reals(r->total_curve, r->total_curve_len));
	mp_doc_put(d, "total", total);
	struct mp_doc *layers = mp_doc_list();
	for (uint32_t l = 0; l < r->before.n_layers; l++) {
		const struct mp_replan_layer *rl = &r->layers[l];
		struct mp_doc *ld = mp_doc_map();
		mp_doc_put_int(ld, "layer", layer_id(layer_ids, l));
		mp_doc_put_real(ld, "max_load_before", rl->max_before);
		mp_doc_put_real(ld, "from_scratch_max_load", rl->scratch_max);
		mp_doc_put_int(ld, "from_scratch_moves", rl->scratch_moves);
		mp_doc_put_real(ld, "lower_bound", r->scratch.layers[l].lower_bound);
		mp_doc_put(ld, "max_load", mp_doc_reals(rl->curve, rl->curve_len));
		mp_doc_put(layers, NULL, ld);
	}
	mp_doc_put(d, "layers", layers);
	return d;
}
