/* An operating point of the roofline as a document (roofline.h): the one
 * serialiser of struct mp_roofline_part and mp_roofline_point, for
 * `roofline` and `plan`. */
#include "moeplan/roofline.h"

#include <math.h>

struct mp_doc *mp_roofline_part_to_doc(const struct mp_roofline_part *p)
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

void mp_roofline_point_put(struct mp_doc *doc, const struct mp_roofline_point *p)
{
	mp_doc_put(doc, "main", mp_roofline_part_to_doc(&p->main));
	if (p->drafter.layers > 0) {
		mp_doc_put(doc, "drafter", mp_roofline_part_to_doc(&p->drafter));
	}
	struct mp_doc *t = mp_doc_map();
	mp_doc_put_real(t, "flops", p->flops);
	mp_doc_put_real(t, "bytes", p->bytes);
	mp_doc_put_real(t, "compute_s", p->compute_s);
	mp_doc_put_real(t, "memory_s", p->memory_s);
	mp_doc_put_real(t, "overlap_s", p->overlap_s);
	mp_doc_put_real(t, "additive_s", p->additive_s);
	mp_doc_put_real(t, "expert_time_s", p->time_s);
	mp_doc_put_real(t, "tokens_per_s_per_gpu",
			p->time_s > 0 ? p->tokens_per_gpu / p->time_s : (double)NAN);
	mp_doc_put(doc, "step", t);
}
