/* Tests of the EP width choice: the article's slot counts and its two
 * deployment rules (../shared/seeds/000_23a7dce1aa3fa16e.txt: "prefill uses
 * the smallest EP that HBM allows, between 2 and 8, and decode uses the
 * largest EP that the available GPUs allow"), with the reason given for
 * each rejected width. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "moeplan/diag.h"
#include "moeplan/model.h"
#include "moeplan/scenario.h"
#include "moeplan/widths.h"

/* DeepSeek-V4.1-Flash per the article (quotes in test-roofline.c). The
 * article gives no dense-weight size; 10 GB is this test's assumption. */
static void v41_flash(struct mp_model *m)
{
	mp_model_init(m);
	m->hidden_size = 5120;
	m->moe_layers = 40;
	m->routed_experts = 384;
	m->shared_experts = 1;
	m->top_k = 6;
	m->expert_intermediate_size = 2304;
	m->shared_expert_intermediate_size = 2304;
	m->routed_format = MP_FORMAT_MXFP4;
	m->shared_format = MP_FORMAT_FP8;
	m->expert_compute = MP_COMPUTE_FP8;
	m->kv_bytes_per_token = 890.0;
	m->dense_weight_bytes = UINT64_C(10000000000);
	m->drafter = (struct mp_drafter){
		.moe_stages = 3, .routed_experts = 128, .top_k = 3, .hidden_size = 5120,
		.expert_intermediate_size = 2304, .matrices_per_expert = 3,
		.routed_format = MP_FORMAT_MXFP4,
	};
}

/* Decode on a GB200 NVL72: 72 GPUs in one NVLink domain, the benchmark's
 * 4 tokens per request and 131,072-token context, 64 requests per GPU. */
static void decode_gb200(struct mp_phase_spec *p)
{
	*p = (struct mp_phase_spec){
		.gpus = 72,
		.slot_rule = MP_SLOTS_MIN_REDUNDANT,
		.min_redundant = 32,
		.requests_per_gpu = 64,
		.tokens_per_request = 4,
		.context_tokens = 131072,
	};
	mp_hardware_init(&p->hardware);
	p->hardware.peak_flops[MP_COMPUTE_FP8] = 5e15;
	p->hardware.hbm_bytes = UINT64_C(186000000000);
	p->hardware.hbm_bw_bytes_per_s = 8e12;
	p->hardware.scale_up_domain_gpus = 72;
}

/* Prefill on HGX B200 (180 GB, 8 GPUs per node): 196 slots per GPU,
 * 16,384 tokens per GPU per step, EP between 2 and 8. */
static void prefill_b200(struct mp_phase_spec *p)
{
	*p = (struct mp_phase_spec){
		.ep_min = 2,
		.ep_max = 8,
		.slot_rule = MP_SLOTS_FIXED_PER_GPU,
		.slots_per_gpu = 196,
		.tokens_per_request = 1,
		.context_tokens = 16384,
		.chunk_tokens = 16384,
	};
	mp_hardware_init(&p->hardware);
	p->hardware.peak_flops[MP_COMPUTE_FP8] = 4.5e15;
	p->hardware.hbm_bytes = UINT64_C(180000000000);
	p->hardware.hbm_bw_bytes_per_s = 8e12;
	p->hardware.scale_up_domain_gpus = 8;
}

static const struct mp_width_candidate *find(const struct mp_widths *w, uint32_t ep)
{
	for (size_t i = 0; i < w->count; i++) {
		if (w->items[i].width.ep == ep) {
			return &w->items[i];
		}
	}
	fail_msg("EP%u is not a candidate", ep);
	/* Not reached (fail_msg jumps out); keeps the result non-NULL. */
	static const struct mp_width_candidate none = {.verdict = MP_WIDTH_NOT_FIXED};
	return &none;
}

static void widths__slot_rules(void **state)
{
	(void)state;
	struct mp_phase_spec p = {.slot_rule = MP_SLOTS_MIN_REDUNDANT, .min_redundant = 32};
	/* "DeepSeek's benchmark adds at least 32 redundant slots and rounds
	 * the total up to a multiple of the group width, which gives 416 slots
	 * at EP8, 52 per GPU, and 448 at EP64, seven per GPU" */
	assert_int_equal(mp_phase_slots(&p, 384, 8), 416);
	assert_int_equal(mp_phase_slots(&p, 384, 64), 448);
	/* The drafter's 128 experts under the same rule: "20 against 3 in the
	 * drafter" per GPU, 160 at EP8 and 192 at EP64. */
	assert_int_equal(mp_phase_slots(&p, 128, 8), 160);
	assert_int_equal(mp_phase_slots(&p, 128, 64), 192);
	/* "its production decode rule of one redundant slot per GPU also gives
	 * 448 at EP64" */
	p = (struct mp_phase_spec){.slot_rule = MP_SLOTS_PER_GPU, .redundant_per_gpu = 1};
	assert_int_equal(mp_phase_slots(&p, 384, 64), 448);
	/* "at EP2 each GPU holds 196 expert slots": 392; at EP1, 196 slots
	 * cannot hold 384 experts. */
	p = (struct mp_phase_spec){.slot_rule = MP_SLOTS_FIXED_PER_GPU, .slots_per_gpu = 196};
	assert_int_equal(mp_phase_slots(&p, 384, 2), 392);
	assert_int_equal(mp_phase_slots(&p, 384, 1), 0);
	assert_int_equal(mp_phase_slots(&p, 384, 0), 0);

	struct mp_model m;
	struct mp_ep_width w;
	v41_flash(&m);
	p = (struct mp_phase_spec){.slot_rule = MP_SLOTS_MIN_REDUNDANT, .min_redundant = 32};
	assert_int_equal(mp_widths_width(&m, &p, 8, &w), 0);
	assert_int_equal(w.slots, 416);
	assert_int_equal(w.drafter_slots, 160);
	/* Under the fixed prefill rule the drafter gets round_up(128, 2). */
	p = (struct mp_phase_spec){.slot_rule = MP_SLOTS_FIXED_PER_GPU, .slots_per_gpu = 196};
	assert_int_equal(mp_widths_width(&m, &p, 2, &w), 0);
	assert_int_equal(w.slots, 392);
	assert_int_equal(w.drafter_slots, 128);
	assert_int_equal(mp_widths_width(&m, &p, 1, &w), MP_EINVAL);
	mp_model_finish(&m);
}

static void widths__decode_on_gb200_nvl72(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_phase_spec p;
	struct mp_widths w;
	v41_flash(&m);
	decode_gb200(&p);
	mp_widths_init(&w);
	assert_int_equal(mp_widths_rank(&m, &p, MP_PHASE_DECODE, NULL, NULL, &w), 0);
	assert_true(w.has_choice);
	uint32_t ep = w.items[w.chosen].width.ep;
	/* "decode uses the largest EP that the available GPUs allow": within
	 * the 72-GPU domain, 64 or 72. */
	assert_true(ep >= 64 && ep <= 72);
	assert_int_equal(w.items[w.chosen].verdict, MP_WIDTH_CHOSEN);
	assert_int_equal(w.limit, 72);
	/* EP128 needs more than the phase's 72 GPUs. */
	assert_int_equal(find(&w, 128)->verdict, MP_WIDTH_EXCEEDS_GPUS);
	assert_non_null(strstr(find(&w, 128)->reason, "72"));
	/* EP8 at 64 requests: t = 256 x 8 x 6 / 416 = 29.5 tokens per expert,
	 * far below the ridge of 192 ("in that configuration the experts
	 * stay memory-bound at every operating point"). */
	const struct mp_width_candidate *c8 = find(&w, 8);
	assert_int_equal(c8->verdict, MP_WIDTH_BELOW_RIDGE);
	assert_true(fabs(c8->tokens_per_expert - 256.0 * 8.0 * 6.0 / 416.0) < 1e-9);
	/* No candidate that passes the rules is faster per GPU than the pick,
	 * and none as fast has more tokens per expert. */
	const struct mp_width_candidate *pick = &w.items[w.chosen];
	for (size_t i = 0; i < w.count; i++) {
		const struct mp_width_candidate *c = &w.items[i];
		if (c->verdict == MP_WIDTH_OUTRANKED || c->verdict == MP_WIDTH_BELOW_RIDGE) {
			assert_true(c->expert_time_s >= pick->expert_time_s * (1.0 - 1e-9));
			assert_true(c->expert_time_s > pick->expert_time_s * (1.0 + 1e-9) ||
				    c->tokens_per_expert <= pick->tokens_per_expert);
		}
	}
	/* At 64 requests both EP64 (7 slots per GPU) and EP72 (432 slots, 6
	 * per GPU) are compute-bound (t = 219 and 256 > 192): equal expert
	 * time, and EP72 pools more tokens per expert. */
	assert_int_equal(find(&w, 64)->verdict, MP_WIDTH_OUTRANKED);
	assert_int_equal(ep, 72);
	/* At 8 requests the experts are memory-bound and EP72's 6 slots per
	 * GPU read fewer weight bytes than EP64's 7: 72 again. */
	p.requests_per_gpu = 8;
	assert_int_equal(mp_widths_rank(&m, &p, MP_PHASE_DECODE, NULL, NULL, &w), 0);
	assert_int_equal(w.items[w.chosen].width.ep, 72);
	assert_true(find(&w, 64)->expert_time_s > w.items[w.chosen].expert_time_s);
	mp_widths_finish(&w);
	mp_widths_finish(&w); /* idempotent */
	mp_model_finish(&m);
}

static void widths__decode_within_fewer_gpus(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_phase_spec p;
	struct mp_widths w;
	v41_flash(&m);
	decode_gb200(&p);
	p.gpus = 32;
	mp_widths_init(&w);
	assert_int_equal(mp_widths_rank(&m, &p, MP_PHASE_DECODE, NULL, NULL, &w), 0);
	assert_true(w.has_choice);
	assert_int_equal(w.items[w.chosen].width.ep, 32);
	assert_int_equal(find(&w, 64)->verdict, MP_WIDTH_EXCEEDS_GPUS);
	mp_widths_finish(&w);
	mp_model_finish(&m);
}

static void widths__prefill_on_hgx_b200(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_phase_spec p;
	struct mp_widths w;
	v41_flash(&m);
	prefill_b200(&p);
	mp_widths_init(&w);
	assert_int_equal(mp_widths_rank(&m, &p, MP_PHASE_PREFILL, NULL, NULL, &w), 0);
	assert_true(w.has_choice);
	/* "prefill uses the smallest EP that HBM allows, between 2 and 8" and
	 * "EP1 cannot hold the 289 GB of routed experts, while at EP2 each
	 * GPU holds 196 expert slots" */
	const struct mp_width_candidate *c = &w.items[w.chosen];
	assert_int_equal(c->width.ep, 2);
	assert_int_equal(c->width.slots, 392);
	/* "an EP2 group puts 502 tokens on each expert" */
	assert_true(fabs(c->tokens_per_expert - 501.55) < 0.01);
	assert_true(c->compute_bound);
	const struct mp_width_candidate *c1 = find(&w, 1);
	assert_int_equal(c1->verdict, MP_WIDTH_NO_FIT);
	assert_true(c1->rule_short);
	assert_true(c1->hbm.routed_bytes > p.hardware.hbm_bytes);
	assert_int_equal(find(&w, 4)->verdict, MP_WIDTH_WIDER_THAN_NEEDED);
	assert_int_equal(find(&w, 8)->verdict, MP_WIDTH_WIDER_THAN_NEEDED);
	assert_int_equal(find(&w, 16)->verdict, MP_WIDTH_OUT_OF_RANGE);
	mp_widths_finish(&w);
	mp_model_finish(&m);
}

static void widths__min_fit_ep(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_phase_spec p;
	uint32_t ep = 0;
	v41_flash(&m);
	prefill_b200(&p);
	/* EP1: 384 experts x 40 layers x 18.8 MB = 289 GB > 180 GB, and the
	 * fixed rule has no count there; EP2 holds 147 GB of slots. */
	assert_int_equal(mp_widths_min_fit_ep(&m, &p, MP_PHASE_PREFILL, NULL, 1, 8, &ep), 0);
	assert_int_equal(ep, 2);
	/* A 100 GB GPU: 196 slots per GPU never fit (147 GB). */
	p.hardware.hbm_bytes = UINT64_C(100000000000);
	ep = 0;
	assert_int_equal(mp_widths_min_fit_ep(&m, &p, MP_PHASE_PREFILL, NULL, 1, 8, &ep), MP_ENOFIT);
	assert_int_equal(ep, 0);
	assert_int_equal(mp_widths_min_fit_ep(&m, &p, MP_PHASE_PREFILL, NULL, 0, 8, &ep), MP_EINVAL);
	/* With the minimum-redundancy rule on the same GPU: per GPU slots
	 * round_up(416, ep) / ep x 40 x 18.8 MB must leave room for the rest;
	 * EP4 holds 104 slots (78.2 GB) and fits, EP2 (208 slots, 156 GB)
	 * does not. */
	p.slot_rule = MP_SLOTS_MIN_REDUNDANT;
	p.min_redundant = 32;
	assert_int_equal(mp_widths_min_fit_ep(&m, &p, MP_PHASE_PREFILL, NULL, 1, 8, &ep), 0);
	assert_int_equal(ep, 4);
	mp_model_finish(&m);
}

static void widths__too_few_experts(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_phase_spec p;
	struct mp_widths w;
	/* Mixtral 8x7B: "with eight experts cannot be spread across more
	 * than eight GPUs". */
	mp_model_init(&m);
	m.hidden_size = 4096;
	m.moe_layers = 32;
	m.routed_experts = 8;
	m.top_k = 2;
	m.expert_intermediate_size = 14336;
	m.routed_format = MP_FORMAT_BF16;
	m.expert_compute = MP_COMPUTE_BF16;
	m.kv_bytes_per_token = 131072.0;
	decode_gb200(&p);
	p.hardware.peak_flops[MP_COMPUTE_BF16] = 2.5e15;
	p.min_redundant = 0;
	p.context_tokens = 4096;
	mp_widths_init(&w);
	assert_int_equal(mp_widths_rank(&m, &p, MP_PHASE_DECODE, NULL, NULL, &w), 0);
	assert_true(w.has_choice);
	assert_true(w.items[w.chosen].width.ep <= 8);
	assert_int_equal(find(&w, 16)->verdict, MP_WIDTH_TOO_FEW_EXPERTS);
	assert_int_equal(find(&w, 72)->verdict, MP_WIDTH_TOO_FEW_EXPERTS);
	mp_widths_finish(&w);
	mp_model_finish(&m);
}

static void widths__fixed_width_and_nothing_fits(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_phase_spec p;
	struct mp_widths w;
	v41_flash(&m);
	decode_gb200(&p);
	p.ep = 32;
	mp_widths_init(&w);
	assert_int_equal(mp_widths_rank(&m, &p, MP_PHASE_DECODE, NULL, NULL, &w), 0);
	assert_true(w.has_choice);
	assert_int_equal(w.items[w.chosen].width.ep, 32);
	assert_int_equal(find(&w, 64)->verdict, MP_WIDTH_NOT_FIXED);
	/* 20,000 requests of 131,072 tokens need 2.3 TB of KV cache per GPU:
	 * no width fits, and each candidate says so. */
	p.ep = 0;
	p.requests_per_gpu = 20000;
	assert_int_equal(mp_widths_rank(&m, &p, MP_PHASE_DECODE, NULL, NULL, &w), 0);
	assert_false(w.has_choice);
	assert_int_equal(find(&w, 64)->verdict, MP_WIDTH_NO_FIT);
	assert_non_null(strstr(find(&w, 64)->reason, "does not fit"));
	mp_widths_finish(&w);
	mp_model_finish(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(widths__slot_rules),
		cmocka_unit_test(widths__decode_on_gb200_nvl72),
		cmocka_unit_test(widths__decode_within_fewer_gpus),
		cmocka_unit_test(widths__prefill_on_hgx_b200),
		cmocka_unit_test(widths__min_fit_ep),
		cmocka_unit_test(widths__too_few_experts),
		cmocka_unit_test(widths__fixed_width_and_nothing_fits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
