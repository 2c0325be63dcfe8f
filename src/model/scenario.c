/* Deployment scenarios: defaults, cleanup and the slot-count rules. */
#include <stdio.h>
#include <stdlib.h>

#include "moeplan/scenario.h"

static void phase_init(struct mp_phase_spec *phase)
{
	*phase = (struct mp_phase_spec){
		.slot_rule = MP_SLOTS_MIN_REDUNDANT,
		.min_redundant = MP_MIN_REDUNDANT_AUTO,
		.redundant_per_gpu = 1,
		.tokens_per_request = 1.0,
		.acceptance = -1.0,
		.node_policy = MP_NODES_BALANCE,
	};
	mp_hardware_init(&phase->hardware);
}

static void phase_finish(struct mp_phase_spec *phase)
{
	mp_hardware_finish(&phase->hardware);
	free(phase->hardware_path);
	phase->hardware_path = NULL;
}

void mp_scenario_init(struct mp_scenario *scenario)
{
	*scenario = (struct mp_scenario){.time_limit_s = 10.0};
	mp_model_init(&scenario->model);
	mp_traffic_init(&scenario->traffic);
	phase_init(&scenario->prefill);
	phase_init(&scenario->decode);
	mp_engine_profile_init(&scenario->engine);
	/* The article: prefill uses "the smallest EP that HBM allows,
	 * between 2 and 8". Decode is left open (the widest the GPUs allow). */
	scenario->search.acceptance = -1;
	scenario->prefill.ep_min = 2;
	scenario->prefill.ep_max = 8;
	scenario->prefill.ep_max_default = true;
}

void mp_scenario_finish(struct mp_scenario *scenario)
{
	if (!scenario) {
		return;
	}
	free(scenario->name);
	free(scenario->path);
	free(scenario->model_path);
	mp_model_finish(&scenario->model);
	mp_traffic_finish(&scenario->traffic);
	phase_finish(&scenario->prefill);
	phase_finish(&scenario->decode);
	mp_engine_profile_finish(&scenario->engine);
	mp_scenario_init(scenario);
}

int mp_scenario_set_engine(struct mp_scenario *sc, struct mp_engine_profile *e, char *why,
			   size_t why_size, struct mp_field_pos *where)
{
	const char *names[] = {"prefill", "decode"};
	struct mp_phase_spec *specs[] = {&sc->prefill, &sc->decode};
	for (int i = 0; i < 2; i++) {
		if (!mp_engine_allows_overlap(e, specs[i]->overlap)) {
			char allowed[64];
			mp_engine_overlaps_text(e, allowed, sizeof(allowed));
			snprintf(why, why_size, "%s.overlap: %s is not a mode engine %s runs (%s)", names[i],
				 mp_step_overlap_name(specs[i]->overlap), e->name ? e->name : "?", allowed);
			if (where) {
				*where = specs[i]->pos_overlap;
			}
			return MP_EINVAL;
		}
	}
	for (int i = 0; i < 2; i++) {
		specs[i]->kernel = mp_engine_kernel(e, i == 0);
	}
	mp_engine_profile_finish(&sc->engine);
	sc->engine = *e;
	mp_engine_profile_init(e);
	return 0;
}

static uint64_t round_up(uint64_t x, uint64_t multiple)
{
	return (x + multiple - 1) / multiple * multiple;
}

uint32_t mp_default_redundant(uint32_t n_experts, uint32_t ep)
{
	if (ep == 0 || ep >= n_experts) {
		return 0;
	}
	return (uint32_t)(((uint64_t)n_experts + 7) / 8);
}

uint32_t mp_phase_slots(const struct mp_phase_spec *phase, uint32_t n_experts, uint32_t ep)
{
	uint64_t slots = 0;
	if (ep == 0) {
		return 0;
	}
	switch (phase->slot_rule) {
	case MP_SLOTS_MIN_REDUNDANT:
		/* The article: 384 + 32 rounded up to a multiple of 8 is 416,
		 * to a multiple of 64 is 448. */
		slots = round_up((uint64_t)n_experts +
					 (phase->min_redundant == MP_MIN_REDUNDANT_AUTO
						  ? mp_default_redundant(n_experts, ep)
						  : phase->min_redundant),
				 ep);
		break;
	case MP_SLOTS_PER_GPU:
		/* DeepSeek production decode: one redundant slot per GPU. */
		slots = round_up(n_experts, ep) + (uint64_t)phase->redundant_per_gpu * ep;
		break;
	case MP_SLOTS_FIXED_PER_GPU:
		slots = (uint64_t)phase->slots_per_gpu * ep;
		if (slots < n_experts) {
			return 0;
		}
		break;
	}
	/* A GPU never holds two replicas of one expert, so no GPU can use
	 * more than E slots: at narrow widths the redundancy rule is capped
	 * (EP1 holds each expert exactly once). */
	if (slots > (uint64_t)n_experts * ep) {
		slots = (uint64_t)n_experts * ep;
	}
	return slots > UINT32_MAX ? 0 : (uint32_t)slots;
}
