/* The step as a document (step.h, mp_step_doc). */
#include <stdio.h>

#include "moeplan/step.h"
#include "moeplan/trust.h"

/* A kernel table priced some term. */
static bool step_priced(const struct mp_step *s)
{
	for (int i = 0; i < MP_TERM_COUNT; i++) {
		if (s->from_table[i]) {
			return true;
		}
	}
	return false;
}

struct mp_doc *mp_step_doc(const struct mp_step *s, enum mp_step_phase phase, uint32_t ep,
			   const struct mp_capacity *hbm, bool has_max, uint64_t max_requests)
{
	struct mp_doc *d = mp_doc_map();
	bool decode = phase == MP_STEP_DECODE;
	mp_doc_put_string(d, "phase", decode ? "decode" : "prefill");
	mp_doc_put_int(d, "ep", ep);
	mp_doc_put_int(d, "nodes", s->nodes);
	mp_doc_put_string(d, "kernel", mp_step_kernel_name(s->kernel));
	mp_doc_put_string(d, "overlap", mp_step_overlap_name(s->overlap));
	mp_doc_put_real(d, "step_time_s", s->step_time_s);
	mp_doc_put_real(d, "tokens_per_step", s->tokens_per_step);
	mp_doc_put_real(d, "accepted_tokens_per_step", s->accepted_tokens_per_step);
	mp_doc_put_real(d, "requests", s->requests);
	mp_doc_put_real(d, "tokens_per_s_per_gpu", s->tokens_per_s_per_gpu);
	mp_doc_put_real(d, "tokens_per_s_per_user", s->tokens_per_s_per_user);
	if (decode) {
		mp_doc_put_real(d, "tpot_s", s->tpot_s);
	} else {
		mp_doc_put_real(d, "ttft_s", s->ttft_s);
	}
	mp_trust_put_phase(d, decode);
	mp_doc_put_real(d, "compute_s", s->compute_s);
	mp_doc_put_real(d, "exchange_s", s->exchange_s);
	mp_doc_put_real(d, "exposed_exchange_s", s->exposed_exchange_s);
	mp_doc_put_real(d, "tokens_per_expert", s->tokens_per_expert);
	mp_doc_put_real(d, "routed_touched_slots", s->routed_touched_slots);
	mp_doc_put_real(d, "routed_slots_per_gpu", s->routed_slots_per_gpu);
	struct mp_doc *terms = mp_doc_list();
	for (int i = 0; i < MP_TERM_COUNT; i++) {
		const struct mp_step_term *t = &s->terms[i];
		struct mp_doc *e = mp_doc_map();
		mp_doc_put_string(e, "name", mp_step_term_name((enum mp_step_term_id)i));
		mp_doc_put_real(e, "time_s", t->time_s);
		mp_doc_put_real(e, "fixed_s", t->fixed_s);
		mp_doc_put_real(e, "bytes", t->bytes);
		mp_doc_put_real(e, "flops", t->flops);
		mp_doc_put_string(e, "bound", mp_step_bound_name(t->bound));
		if (s->kernel_table && step_priced(s)) {
			mp_doc_put_string(e, "pricing", !s->from_table[i]      ? "factors"
							: s->table_clamped[i] ? "table_clamped"
									      : "table");
		}
		mp_doc_put(terms, NULL, e);
	}
	mp_doc_put(d, "terms", terms);
	/* issue 23: where the kernel efficiencies came from */
	bool priced = step_priced(s);
	const char *name = s->kernel_table_name ? s->kernel_table_name : "given";
	char nb[300];
	snprintf(nb, sizeof(nb), "none: scalar factors (%s has no row for this model)", name);
	mp_doc_put_string(d, "kernel_table", s->kernel_table && priced ? name
					     : s->kernel_table	    ? nb
					     : s->scalar_forced	    ? "none: scalar factors (--kernels none)"
								    : "none: scalar factors (no kernel table for this GPU)");
	struct mp_doc *eff = mp_doc_map();
	mp_doc_put_real(eff, "hbm", s->efficiency.hbm);
	mp_doc_put_real(eff, "gemm", s->efficiency.gemm);
	mp_doc_put_real(eff, "attention", s->efficiency.attention);
	mp_doc_put_real(eff, "scale_up", s->efficiency.scale_up);
	mp_doc_put_real(eff, "scale_out", s->efficiency.scale_out);
	mp_doc_put_real(eff, "exchange_latency_s", s->efficiency.exchange_latency_s);
	mp_doc_put_real(eff, "step_overhead_s", s->efficiency.step_overhead_s);
	mp_doc_put_real(eff, "kernel_fixed_s", s->efficiency.kernel_fixed_s);
	mp_doc_put_real(eff, "moe_fixed_s", s->efficiency.moe_fixed_s);
	mp_doc_put_real(eff, "moe_fixed_per_expert_s", s->efficiency.moe_fixed_per_expert_s);
	mp_doc_put(d, "efficiency", eff);
	if (hbm) {
		mp_doc_put_int(d, "hbm_free_bytes", hbm->free_bytes);
		mp_doc_put_bool(d, "fits", hbm->fits);
		if (hbm->memory != MP_MEMORY_RESERVE) {
			/* an engine profile's memory rule (engine.h, capacity.h) */
			mp_doc_put_int(d, "hbm_reserve_bytes", (int64_t)hbm->reserve_bytes);
			mp_doc_put_real(d, "memory_fraction", hbm->memory_fraction);
		}
	} else {
		mp_doc_put(d, "hbm_free_bytes", mp_doc_null());
	}
	if (has_max) {
		mp_doc_put_int(d, "max_requests", (int64_t)max_requests);
	} else {
		mp_doc_put(d, "max_requests", mp_doc_null());
	}
	return d;
}
