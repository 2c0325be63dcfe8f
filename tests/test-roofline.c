/* Tests of the roofline module against every roofline figure of the
 * reference article (../shared/seeds/000_23a7dce1aa3fa16e.txt, "Why Decode
 * Wants 64 GPUs"), each at the precision the article prints, plus hand
 * calculations for the cases the article does not cover. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli-run.h"
#include "svg-check.h"

#include "moeplan/diag.h"
#include "moeplan/model.h"
#include "moeplan/roofline.h"

/* cmocka 1.1's assert_float_equal works in float; compare doubles. */
#define assert_near(a, b, tol) assert_near_at((a), (b), (tol), __FILE__, __LINE__)

static void assert_near_at(double a, double b, double tol, const char *file, int line)
{
	if (!(fabs(a - b) <= tol)) {
		print_error("%.17g != %.17g (tolerance %g)\n", a, b, tol);
		_fail(file, line);
	}
}

/* `value` (in the printed unit) rounds to `printed` at the printed
 * precision: |value - printed| <= half a unit of the last digit. */
#define assert_printed(value, printed, unit) \
	assert_near_at((value), (printed), (unit) / 2.0 + 1e-12, __FILE__, __LINE__)

/* DeepSeek-V4.1-Flash as the article describes it: "384 routed experts and
 * one shared expert in each of its 40 layers, and routes every token to 6
 * of the 384. Each routed expert is a SwiGLU feed-forward block with three
 * matrices of shape 5120 x 2304", routed experts in MXFP4, the shared
 * expert "the same shape but stored in FP8", FP8 dispatch and BF16
 * combine, 890 bytes of KV cache per token, and a drafter with "three
 * small MoE stages of its own, 128 experts each with top-3 routing". The
 * drafter experts take the main model's shape: with that shape the
 * article's 34.8 GB EP8-EP64 gap is reproduced (checked below). */
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
	m->matrices_per_expert = 3;
	m->routed_format = MP_FORMAT_MXFP4;
	m->shared_format = MP_FORMAT_FP8;
	m->expert_compute = MP_COMPUTE_FP8;
	m->dispatch_format = MP_FORMAT_FP8;
	m->combine_format = MP_FORMAT_BF16;
	m->kv_bytes_per_token = 890.0;
	m->drafter = (struct mp_drafter){
		.moe_stages = 3,
		.routed_experts = 128,
		.top_k = 3,
		.hidden_size = 5120,
		.expert_intermediate_size = 2304,
		.matrices_per_expert = 3,
		.routed_format = MP_FORMAT_MXFP4,
	};
}

/* "A GB200 GPU delivers 5 PFLOP/s of FP8 tensor-core arithmetic without
 * structured sparsity against 8 TB/s of HBM bandwidth" (186 GB usable). */
static void gb200(struct mp_hardware *hw)
{
	mp_hardware_init(hw);
	hw->peak_flops[MP_COMPUTE_FP8] = 5e15;
	hw->peak_flops[MP_COMPUTE_BF16] = 2.5e15;
	hw->peak_flops[MP_COMPUTE_FP4] = 1e16;
	hw->hbm_bytes = UINT64_C(186000000000);
	hw->hbm_bw_bytes_per_s = 8e12;
	hw->scale_up_domain_gpus = 72;
}

/* The B200 of the prefill section: "(4.5 PFLOP/s, 8 TB/s)". */
static void b200(struct mp_hardware *hw)
{
	mp_hardware_init(hw);
	hw->peak_flops[MP_COMPUTE_FP8] = 4.5e15;
	hw->peak_flops[MP_COMPUTE_BF16] = 2.25e15;
	hw->hbm_bytes = UINT64_C(180000000000);
	hw->hbm_bw_bytes_per_s = 8e12;
	hw->scale_up_domain_gpus = 8;
}

/* The article's slot counts: 416 at EP8 and 448 at EP64 for the main
 * model, 160 and 192 for the drafter ("at least 32 redundant slots and
 * rounds the total up to a multiple of the group width"). */
static const struct mp_ep_width ep8 = {.ep = 8, .slots = 416, .drafter_slots = 160};
static const struct mp_ep_width ep64 = {.ep = 64, .slots = 448, .drafter_slots = 192};

static void roofline__expert_constants(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_expert_cost e;
	v41_flash(&m);
	mp_roofline_expert(&m, &e);
	/* "P = 3 * 5120 * 2304" */
	assert_near(e.params, 3.0 * 5120.0 * 2304.0, 0.0);
	/* "so one expert occupies W = 18.8 MB" (W = P * 4.25 / 8) */
	assert_printed(e.weight_bytes / 1e6, 18.8, 0.1);
	assert_near(e.weight_bytes, 3.0 * 5120.0 * 2304.0 * 4.25 / 8.0, 0.0);
	/* "performs F = 2P ~ 70.8 MFLOP per token" */
	assert_printed(e.flops_per_token / 1e6, 70.8, 0.1);
	/* "each visit moves a = d(1 + 2) = 15,360 bytes with d = 5120" */
	assert_near(e.act_bytes_per_visit, 15360.0, 0.0);
	mp_model_finish(&m);
}

static void roofline__ridge_per_gpu_and_format(void **state)
{
	(void)state;
	struct mp_hardware g, b;
	gb200(&g);
	b200(&b);
	/* "so its ridge sits at R = 625 FLOPs per byte" */
	assert_near(mp_roofline_ridge(&g, MP_COMPUTE_FP8), 625.0, 1e-9);
	/* B200: 4.5e15 / 8e12 = 562.5 (hand calculation). */
	assert_near(mp_roofline_ridge(&b, MP_COMPUTE_FP8), 562.5, 1e-9);
	/* The BF16 roof is half the FP8 one on both: 2.5e15 / 8e12. */
	assert_near(mp_roofline_ridge(&g, MP_COMPUTE_BF16), 312.5, 1e-9);
	/* No INT8 peak given: no ridge. */
	assert_near(mp_roofline_ridge(&g, MP_COMPUTE_INT8), 0.0, 0.0);
}

static void roofline__intensity_at_one_token(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_expert_cost e;
	v41_flash(&m);
	gb200(&hw);
	mp_roofline_expert(&m, &e);
	/* "At t = 1 that is 3.76 FLOPs per byte, 166 times below the ridge." */
	double i1 = mp_roofline_intensity(&e, 1.0, false);
	assert_printed(i1, 3.76, 0.01);
	assert_printed(mp_roofline_ridge(&hw, MP_COMPUTE_FP8) / i1, 166.0, 1.0);
	/* With the activation bytes the intensity at t = 1 is still 3.76:
	 * 70,778,880 / (18,800,640 + 15,360) = 3.7617. */
	assert_printed(mp_roofline_intensity(&e, 1.0, true), 3.76, 0.01);
	mp_model_finish(&m);
}

static void roofline__ridge_crossing(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_expert_cost e;
	v41_flash(&m);
	gb200(&hw);
	mp_roofline_expert(&m, &e);
	double r = mp_roofline_ridge(&hw, MP_COMPUTE_FP8);
	/* "the numerator is 1.18 x 10^10 and the denominator 6.12 x 10^7, so
	 * t* ~ 192" */
	assert_printed(r * e.weight_bytes / 1e10, 1.18, 0.01);
	assert_printed((e.flops_per_token - r * e.act_bytes_per_visit) / 1e7, 6.12, 0.01);
	double t_star = mp_roofline_ridge_tokens(&e, r, true);
	assert_printed(t_star, 192.0, 1.0);
	/* "Counting weight bytes alone, the ridge needs t ~ 166; counting
	 * activation bytes as well ... about 192." */
	assert_printed(mp_roofline_ridge_tokens(&e, r, false), 166.0, 1.0);
	/* At t* the intensity equals the ridge (definition). */
	assert_near(mp_roofline_intensity(&e, t_star, true), r, 1e-9);
	/* "At a sparsity of 64 that means roughly 12,300 tokens, about 3,000
	 * requests": 192 * 64 = 12,288 tokens, / 4 = 3,072 requests. */
	double tokens = mp_roofline_tokens_per_gpu(t_star, 6, 1, 384);
	assert_printed(tokens / 100.0, 123.0, 1.0);
	assert_printed(tokens / 4.0 / 1000.0, 3.0, 1.0);
	mp_model_finish(&m);
}

static void roofline__ceiling(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_expert_cost e;
	v41_flash(&m);
	mp_roofline_expert(&m, &e);
	/* "flattens toward a ceiling of F/a = 4,608 FLOPs per byte" */
	assert_near(mp_roofline_ceiling(&e), 4608.0, 1e-9);
	mp_model_finish(&m);
}

static void roofline__ridge_unreachable_when_ceiling_below(void **state)
{
	(void)state;
	/* Hand case: F = 2 * 1 * 8 * 8 = 128 FLOP per token, a = 8 * (2 + 2)
	 * = 32 bytes, so F / a = 4 < R = 10: the expert never crosses. */
	struct mp_expert_cost e;
	mp_roofline_expert_cost(8, 8, 1, MP_FORMAT_BF16, 0, MP_FORMAT_BF16, MP_FORMAT_BF16, &e);
	assert_near(mp_roofline_ceiling(&e), 4.0, 0.0);
	assert_true(isinf(mp_roofline_ridge_tokens(&e, 10.0, true)));
	/* Weights only, it crosses at R W / F = 10 * 128 / 128 = 10. */
	assert_near(mp_roofline_ridge_tokens(&e, 10.0, false), 10.0, 1e-12);
}

static void roofline__intensity_701_at_64_requests(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_expert_cost e;
	v41_flash(&m);
	mp_roofline_expert(&m, &e);
	/* print(round(intensity(tokens_per_expert(64 * 4, 64)))) "# 701 at 64
	 * requests per GPU" with slots=448, top_k=6. */
	double t = mp_roofline_tokens_per_expert(64.0 * 4.0, 6, 64, 448);
	assert_near(t, 64.0 * 4.0 * 64.0 * 6.0 / 448.0, 1e-12);
	assert_printed(mp_roofline_intensity(&e, t, true), 701.0, 1.0);
	mp_model_finish(&m);
}

static void roofline__requests_to_reach_the_ridge(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_expert_cost e;
	v41_flash(&m);
	gb200(&hw);
	mp_roofline_expert(&m, &e);
	double t_star = mp_roofline_ridge_tokens(&e, mp_roofline_ridge(&hw, MP_COMPUTE_FP8), true);
	/* "In an EP64 group with 448 slots, top-6 routing and four tokens per
	 * request, t = 192 is reached at about 56 requests per GPU." */
	assert_printed(mp_roofline_tokens_per_gpu(t_star, 6, 64, 448) / 4.0, 56.0, 1.0);
	/* "In an EP8 group the same crossing would need 416 requests per GPU" */
	assert_printed(mp_roofline_tokens_per_gpu(t_star, 6, 8, 416) / 4.0, 416.0, 1.0);
	mp_model_finish(&m);
}

static void roofline__production_operating_point(void **state)
{
	(void)state;
	/* "production runs at about 60 concurrent sequences per GPU, at EP64
	 * to EP128, verifying about 3.6 drafted tokens per request on average,
	 * which puts each expert at roughly 236 tokens per step at EP64":
	 * 60 * (1 + 3.6) * 6 * 64 / 448 = 236.6, "roughly 236" (the article
	 * truncates), just past the ridge of 192. */
	double t = mp_roofline_tokens_per_expert(60.0 * 4.6, 6, 64, 448);
	assert_true(t >= 236.0 && t < 237.0);
	assert_true(t > 192.0);
}

static void roofline__ep64_at_256_requests(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_expert_cost e;
	v41_flash(&m);
	mp_roofline_expert(&m, &e);
	/* "at 256 requests per GPU in an EP64 group each expert receives 878
	 * tokens, where the naive formula gives 3,304 FLOPs per byte and the
	 * full one gives 1,924." */
	double t = mp_roofline_tokens_per_expert(256.0 * 4.0, 6, 64, 448);
	assert_printed(t, 878.0, 1.0);
	assert_printed(mp_roofline_intensity(&e, t, false), 3304.0, 1.0);
	assert_printed(mp_roofline_intensity(&e, t, true), 1924.0, 1.0);
	mp_model_finish(&m);
}

static void roofline__experts_touched_and_bytes_per_token(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_expert_cost e;
	v41_flash(&m);
	mp_roofline_expert(&m, &e);
	/* "A single token touches 6 experts, and the layer reads 6 x 18.8 =
	 * 113 MB of expert weights to produce it." */
	assert_near(mp_roofline_experts_touched(384, 6, 1.0), 6.0, 1e-9);
	assert_printed(mp_roofline_weight_bytes_per_token(&e, 384, 6, 1.0) / 1e6, 113.0, 1.0);
	/* "far less than the 7.2 GB of routed experts the layer holds" */
	assert_printed(384.0 * e.weight_bytes / 1e9, 7.2, 0.1);
	/* "At B = 256 the batch touches 377 of the 384 experts on average ...
	 * the average expert serves only 4 tokens. Weight traffic per token
	 * has fallen from 113 MB to 27.7 MB" */
	assert_printed(mp_roofline_experts_touched(384, 6, 256.0), 377.0, 1.0);
	assert_near(mp_roofline_tokens_per_expert(256.0, 6, 1, 384), 4.0, 1e-12);
	assert_printed(mp_roofline_weight_bytes_per_token(&e, 384, 6, 256.0) / 1e6, 27.7, 0.1);
	/* Independent check of the formula at B = 2 by enumeration: an expert
	 * is missed by both tokens with probability (1 - 6/384)^2. */
	double miss = (1.0 - 6.0 / 384.0) * (1.0 - 6.0 / 384.0);
	assert_near(mp_roofline_experts_touched(384, 6, 2.0), 384.0 * (1.0 - miss), 1e-9);
	mp_model_finish(&m);
}

static void roofline__routed_experts_total(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_expert_cost e;
	v41_flash(&m);
	mp_roofline_expert(&m, &e);
	/* "its routed experts total 289 GB in MXFP4" */
	assert_printed(384.0 * 40.0 * e.weight_bytes / 1e9, 289.0, 1.0);
	mp_model_finish(&m);
}

static void roofline__weight_reads_per_gpu_at_64_requests(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_roofline_point p8, p64;
	v41_flash(&m);
	gb200(&hw);
	assert_int_equal(mp_roofline_point(&m, &hw, NULL, &ep8, 64.0 * 4.0, &p8), 0);
	assert_int_equal(mp_roofline_point(&m, &hw, NULL, &ep64, 64.0 * 4.0, &p64), 0);
	/* "At 64 requests per GPU, a GPU in an EP8 group reads 39.1 GB of
	 * expert weights per step across the 40 layers, which takes 4.9 ms at
	 * 8 TB/s; in an EP64 group it reads 5.3 GB, which takes 0.66 ms." */
	assert_int_equal(p8.main.slots_per_gpu, 52);
	assert_int_equal(p64.main.slots_per_gpu, 7);
	assert_printed(p8.main.weight_bytes / 1e9, 39.1, 0.1);
	assert_printed(p8.main.weight_bytes / 8e12 * 1e3, 4.9, 0.1);
	assert_printed(p64.main.weight_bytes / 1e9, 5.3, 0.1);
	assert_printed(p64.main.weight_bytes / 8e12 * 1e3, 0.66, 0.01);
	mp_model_finish(&m);
}

static void roofline__ep_gap_at_small_batches(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_roofline_compare c;
	v41_flash(&m);
	gb200(&hw);
	/* "Per-user speed is therefore tau divided by the step time ... 325.3
	 * tokens per second per user at EP64 with 8 requests means 3.25 /
	 * 325.3 = 10.0 ms per step." */
	double measured64 = 3.25 / 325.3;
	assert_printed(measured64 * 1e3, 10.0, 0.1);
	/* "DeepSeek measured 3.6 to 3.8 ms" for the gap; 3.64 ms is the
	 * value the article divides by. */
	double measured8 = measured64 + 3.64e-3;
	assert_int_equal(mp_roofline_compare(&m, &hw, NULL, &ep64, &ep8, 8.0 * 4.0, measured64,
					     measured8, &c),
			 0);
	/* "52 experts per GPU against 7 in the main model and 20 against 3 in
	 * the drafter, 34.8 GB per step. The model puts that gap at 4.35 ms" */
	assert_int_equal(c.to.drafter.slots_per_gpu, 20);
	assert_int_equal(c.from.drafter.slots_per_gpu, 3);
	assert_printed(c.weight_bytes_delta / 1e9, 34.8, 0.1);
	assert_printed(c.delta_s * 1e3, 4.35, 0.01);
	/* The prediction is the measurement plus the gap. */
	assert_near(c.predicted_to_s, measured64 + c.delta_s, 1e-15);
	/* "reading 34.8 GB in 3.64 ms would require 9.6 TB/s" */
	assert_printed(c.implied_bw_bytes_per_s / 1e12, 9.6, 0.1);
	/* Hand: (45 * 40 + 17 * 3) * 18,800,640 B / 8e12 B/s. */
	assert_near(c.delta_s, (45.0 * 40.0 + 17.0 * 3.0) * 18800640.0 / 8e12, 1e-12);
	mp_model_finish(&m);
}

static void roofline__ep64_expert_time_at_8_requests(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_roofline_point p;
	v41_flash(&m);
	gb200(&hw);
	assert_int_equal(mp_roofline_point(&m, &hw, NULL, &ep64, 8.0 * 4.0, &p), 0);
	/* "At 8 requests per GPU, the EP64 step takes 10.0 ms, of which the
	 * routed experts account for 0.69 ms. The remaining 9.3 ms ..." */
	assert_printed(p.overlap_s * 1e3, 0.69, 0.01);
	assert_printed((3.25 / 325.3 - p.overlap_s) * 1e3, 9.3, 0.1);
	/* Memory-bound in both parts: X is the bytes over the bandwidth. */
	assert_false(p.main.compute_bound);
	assert_near(p.overlap_s, p.memory_s, 1e-15);
	mp_model_finish(&m);
}

static void roofline__large_batch_arithmetic(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_roofline_point p8, p64;
	v41_flash(&m);
	gb200(&hw);
	assert_int_equal(mp_roofline_point(&m, &hw, NULL, &ep8, 256.0 * 4.0, &p8), 0);
	assert_int_equal(mp_roofline_point(&m, &hw, NULL, &ep64, 256.0 * 4.0, &p64), 0);
	/* "both configurations perform the same arithmetic per GPU, about 17
	 * TFLOP of expert work per step at 256 requests, which takes 3.5 ms at
	 * peak" (the 40 layers of the main model: 1024 * 6 * 70.8 MFLOP * 40
	 * = 17.4 TFLOP, 3.48 ms) */
	assert_near(p8.main.flops, p64.main.flops, 0.0);
	assert_printed(p64.main.flops / 1e12, 17.0, 1.0);
	assert_printed(p64.main.compute_s * 1e3, 3.5, 0.1);
	/* "and at EP8 the memory traffic takes only 1.9 ms longer than that" */
	assert_printed((p8.memory_s - p8.compute_s) * 1e3, 1.9, 0.1);
	assert_printed((p8.main.memory_s - p8.main.compute_s) * 1e3, 1.9, 0.1);
	/* EP64 is compute-bound there, EP8 memory-bound. */
	assert_true(p64.main.compute_bound);
	assert_false(p8.main.compute_bound);
	mp_model_finish(&m);
}

static void roofline__overlap_and_additive(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_roofline_point p;
	struct mp_roofline_options o;
	v41_flash(&m);
	gb200(&hw);
	mp_roofline_options_init(&o);
	o.additive = true;
	assert_int_equal(mp_roofline_point(&m, &hw, &o, &ep64, 256.0 * 4.0, &p), 0);
	/* Hand calculation, EP64 at 1024 tokens per GPU, per main layer:
	 * compute 1024 * 6 * 70,778,880 / 5e15; memory (7 * 18,800,640 +
	 * 1024 * 6 * 15,360) / 8e12; drafter stage: 1024 * 3 * F / 5e15 and
	 * (3 * W + 1024 * 3 * 15,360) / 8e12. */
	double f = 70778880.0;
	double w = 18800640.0;
	double cm = 1024.0 * 6.0 * f / 5e15;
	double mm = (7.0 * w + 1024.0 * 6.0 * 15360.0) / 8e12;
	double cd = 1024.0 * 3.0 * f / 5e15;
	double md = (3.0 * w + 1024.0 * 3.0 * 15360.0) / 8e12;
	assert_near(p.overlap_s, 40.0 * fmax(cm, mm) + 3.0 * fmax(cd, md), 1e-12);
	assert_near(p.additive_s, 40.0 * (cm + mm) + 3.0 * (cd + md), 1e-12);
	assert_near(p.time_s, p.additive_s, 0.0);
	mp_model_finish(&m);
}

static void roofline__bandwidth_choice(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_roofline_options o;
	struct mp_roofline_compare c;
	v41_flash(&m);
	gb200(&hw);
	mp_roofline_options_init(&o);
	/* "between the 8 TB/s headline bandwidth and the 7.7 TB/s some vendors
	 * list": the small-batch gap becomes 34.8 GB / 7.7 TB/s = 4.52 ms. */
	o.hbm_bw_bytes_per_s = 7.7e12;
	assert_int_equal(mp_roofline_compare(&m, &hw, &o, &ep64, &ep8, 32.0, 0.010, 0.0, &c), 0);
	assert_near(c.delta_s, (45.0 * 40.0 + 17.0 * 3.0) * 18800640.0 / 7.7e12, 1e-12);
	assert_near(c.from.ridge, 5e15 / 7.7e12, 1e-9);
	assert_true(isnan(c.error));
	mp_model_finish(&m);
}

static void roofline__prefill_tokens_per_expert(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_expert_cost e;
	v41_flash(&m);
	b200(&hw);
	mp_roofline_expert(&m, &e);
	/* "At 16,384 tokens per GPU per step, an EP2 group puts 502 tokens on
	 * each expert, three times the 170 that marks the ridge on the 8-GPU
	 * B200 machines ... at the 32,768-token cap ... about 1,000"; EP2
	 * holds "196 expert slots" per GPU, 392 in all. */
	double t = mp_roofline_tokens_per_expert(16384.0, 6, 2, 392);
	assert_printed(t, 502.0, 1.0);
	double ridge = mp_roofline_ridge_tokens(&e, mp_roofline_ridge(&hw, MP_COMPUTE_FP8), true);
	assert_printed(ridge, 170.0, 1.0);
	assert_printed(t / ridge, 3.0, 1.0);
	assert_printed(mp_roofline_tokens_per_expert(32768.0, 6, 2, 392) / 100.0, 10.0, 1.0);
	mp_model_finish(&m);
}

static void roofline__other_models(void **state)
{
	(void)state;
	struct mp_hardware hw;
	gb200(&hw);
	double r = mp_roofline_ridge(&hw, MP_COMPUTE_FP8);
	/* "DeepSeek-V3 stores its experts in FP8 and needs about twice as
	 * many tokens per expert to reach the ridge": 7168 x 2048 experts,
	 * FP8 with 128x128 block scales, FP8 in / BF16 out. */
	struct mp_expert_cost v3, v41;
	mp_roofline_expert_cost(7168, 2048, 3, MP_FORMAT_FP8_BLOCK, 0, MP_FORMAT_FP8,
				MP_FORMAT_BF16, &v3);
	mp_roofline_expert_cost(5120, 2304, 3, MP_FORMAT_MXFP4, 0, MP_FORMAT_FP8, MP_FORMAT_BF16,
				&v41);
	double ratio = mp_roofline_ridge_tokens(&v3, r, true) / mp_roofline_ridge_tokens(&v41, r, true);
	assert_printed(ratio, 2.0, 1.0);
	/* "Mixtral 8x7B divides its batch by only 4": E/k = 8/2, so t = B/4
	 * on one GPU. */
	assert_near(mp_roofline_tokens_per_expert(100.0, 2, 1, 8), 25.0, 1e-12);
}

static void roofline__point_rejects_bad_widths(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_roofline_point p = {.tokens_per_gpu = -1.0};
	v41_flash(&m);
	gb200(&hw);
	struct mp_ep_width w = {.ep = 8, .slots = 420, .drafter_slots = 160};  /* 420 % 8 != 0 */
	assert_int_equal(mp_roofline_point(&m, &hw, NULL, &w, 32.0, &p), MP_EINVAL);
	w = (struct mp_ep_width){.ep = 8, .slots = 376, .drafter_slots = 160}; /* below E */
	assert_int_equal(mp_roofline_point(&m, &hw, NULL, &w, 32.0, &p), MP_EINVAL);
	w = (struct mp_ep_width){.ep = 8, .slots = 416, .drafter_slots = 0};   /* no drafter slots */
	assert_int_equal(mp_roofline_point(&m, &hw, NULL, &w, 32.0, &p), MP_EINVAL);
	w = (struct mp_ep_width){.ep = 0, .slots = 416, .drafter_slots = 160};
	assert_int_equal(mp_roofline_point(&m, &hw, NULL, &w, 32.0, &p), MP_EINVAL);
	assert_int_equal(mp_roofline_point(&m, &hw, NULL, &ep8, -1.0, &p), MP_EINVAL);
	/* Without a peak for the compute class: no roofline. */
	m.expert_compute = MP_COMPUTE_INT8;
	assert_int_equal(mp_roofline_point(&m, &hw, NULL, &ep8, 32.0, &p), MP_EINVAL);
	/* out untouched on failure */
	assert_near(p.tokens_per_gpu, -1.0, 0.0);
	mp_model_finish(&m);
}

/* The number after the first `"key": ` in JSON text; fails the test when
 * the key is missing. */
static double json_number(const char *text, const char *key)
{
	char pattern[128];
	snprintf(pattern, sizeof(pattern), "\"%s\": ", key);
	const char *at = strstr(text, pattern);
	if (!at) {
		fail_msg("no \"%s\" in output", key);
		return 0.0;
	}
	return strtod(at + strlen(pattern), NULL);
}

static void roofline__cli_reproduces_the_article(void **state)
{
	(void)state;
	const char *model = src_path("plans/models/deepseek-v4.1-flash.yaml");
	const char *gb200 = src_path("hardware/gb200-nvl72.yaml");
	/* print(round(intensity(tokens_per_expert(64 * 4, 64)))) "# 701", and
	 * "t = 192 is reached at about 56 requests per GPU". */
	struct cli_result r = cli_run("roofline", "--model", model, "--hardware", gb200, "--ep", "64",
				      "--requests", "64", "--tokens-per-request", "4", "--format", "json",
				      NULL);
	assert_int_equal(r.status, 0);
	assert_printed(json_number(r.out, "intensity_flop_per_byte"), 701.0, 1.0);
	assert_printed(json_number(r.out, "ridge_tokens_per_expert"), 192.0, 1.0);
	assert_printed(json_number(r.out, "ridge_tokens_per_expert_weights_only"), 166.0, 1.0);
	assert_printed(json_number(r.out, "ridge_requests_per_gpu"), 56.0, 1.0);
	assert_printed(json_number(r.out, "weight_bytes") / 1e6, 18.8, 0.1);
	assert_printed(json_number(r.out, "flops_per_token") / 1e6, 70.8, 0.1);
	assert_near(json_number(r.out, "act_bytes_per_visit"), 15360.0, 0.0);
	assert_near(json_number(r.out, "ceiling_flop_per_byte"), 4608.0, 1e-9);
	assert_near(json_number(r.out, "ridge_flop_per_byte"), 625.0, 1e-9);
	cli_result_free(&r);

	/* "at 256 requests per GPU in an EP64 group each expert receives 878
	 * tokens, where the naive formula gives 3,304 FLOPs per byte and the
	 * full one gives 1,924" */
	r = cli_run("roofline", "-m", model, "-H", gb200, "--ep", "64", "-r", "256", "-T", "4",
		    "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	const char *main_part = strstr(r.out, "\"main\"");
	assert_non_null(main_part);
	assert_printed(json_number(main_part, "tokens_per_expert"), 878.0, 1.0);
	assert_printed(json_number(main_part, "intensity_weights_only"), 3304.0, 1.0);
	assert_printed(json_number(main_part, "intensity_flop_per_byte"), 1924.0, 1.0);
	cli_result_free(&r);

	/* "the EP64 step takes 10.0 ms, of which the routed experts account
	 * for 0.69 ms"; EP8: "34.8 GB per step. The model puts that gap at
	 * 4.35 ms ... reading 34.8 GB in 3.64 ms would require 9.6 TB/s" */
	r = cli_run("roofline", "-m", model, "-H", gb200, "--ep", "64", "-r", "8", "-T", "4",
		    "--min-redundant", "32", "--compare-ep", "8", "--measured-step", "10.0", "--measured-compare-step", "13.64",
		    "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	const char *step = strstr(r.out, "\"step\"");
	const char *cmp = strstr(r.out, "\"compare\"");
	assert_non_null(step);
	assert_non_null(cmp);
	assert_printed(json_number(step, "expert_time_s") * 1e3, 0.69, 0.01);
	assert_int_equal((int)json_number(cmp, "slots"), 416);
	assert_int_equal((int)json_number(cmp, "drafter_slots"), 160);
	assert_printed(json_number(cmp, "weight_bytes_delta") / 1e9, 34.8, 0.1);
	assert_printed(json_number(cmp, "delta_s") * 1e3, 4.35, 0.01);
	assert_printed(json_number(cmp, "floor_s") * 1e3, 9.3, 0.1);
	assert_printed(json_number(cmp, "implied_bw_bytes_per_s") / 1e12, 9.6, 0.1);
	cli_result_free(&r);

	/* "an EP2 group puts 502 tokens on each expert, three times the 170
	 * that marks the ridge on the 8-GPU B200 machines" (196 slots per GPU) */
	r = cli_run("roofline", "-m", model, "-H", src_path("hardware/hgx-b200.yaml"), "--ep", "2",
		    "--slots", "392", "-r", "16384", "-T", "1", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	assert_near(json_number(r.out, "ridge_flop_per_byte"), 562.5, 1e-9);
	assert_printed(json_number(r.out, "ridge_tokens_per_expert"), 170.0, 1.0);
	main_part = strstr(r.out, "\"main\"");
	assert_non_null(main_part);
	assert_printed(json_number(main_part, "tokens_per_expert"), 502.0, 1.0);
	cli_result_free(&r);

	/* The text table prints the same figures. */
	r = cli_run("roofline", "-m", model, "-H", gb200, "--ep", "64", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "t* = 192.1 tokens per expert (166.0 counting weights only)"));
	assert_non_null(strstr(r.out, "ceiling F/a = 4608"));
	assert_non_null(strstr(r.out, "W = 18.8 MB"));
	assert_non_null(strstr(r.out, "56.0 requests per GPU"));
	cli_result_free(&r);
}

static void roofline__cli_usage_errors(void **state)
{
	(void)state;
	const char *model = src_path("plans/models/deepseek-v4.1-flash.yaml");
	const char *gb200 = src_path("hardware/gb200-nvl72.yaml");
	struct cli_result r = cli_run("roofline", "--hardware", gb200, NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--model and --hardware are required"));
	cli_result_free(&r);
	r = cli_run("roofline", "-m", model, "-H", gb200, "--ep", "64", "--slots", "450", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "450 slots: expected at least 384 (the experts), a multiple of EP64"));
	cli_result_free(&r);
	r = cli_run("roofline", "-m", model, "-H", gb200, "--format", "xml", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	r = cli_run("roofline", "-m", src_path("no-such-model.yaml"), "-H", gb200, NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "");
	cli_result_free(&r);
}

/* ---- roofline --svg and -o ---- */

static char tmp_dir[] = "/tmp/moeplan-test-rooflineXXXXXX";

static const char *tmp_path(int slot, const char *name)
{
	static char bufs[4][4200];
	snprintf(bufs[slot], sizeof(bufs[slot]), "%s/%s", tmp_dir, name);
	return bufs[slot];
}

/* data-* attribute of the element with that id, as a number; fails the
 * test when it is missing. */
static double svg_number(const char *doc, const char *id, const char *attr)
{
	char buf[64];
	if (!svg_attr(doc, id, attr, buf, sizeof(buf))) {
		fail_msg("no %s on #%s", attr, id);
		return 0.0;
	}
	return strtod(buf, NULL);
}

static bool svg_label_is(const char *doc, const char *id, const char *want)
{
	char buf[256];
	return svg_attr(doc, id, "data-label", buf, sizeof(buf)) && strcmp(buf, want) == 0;
}

/* Entries of tmp_dir other than . and .. */
static int dir_entries(void)
{
	DIR *d = opendir(tmp_dir);
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e = readdir(d); e; e = readdir(d)) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			n++;
		}
	}
	closedir(d);
	return n;
}

static void write_file(const char *path, const char *text, size_t repeat)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (size_t i = 0; i < repeat; i++) {
		fputs(text, f);
	}
	assert_int_equal(fclose(f), 0);
}

static void roofline__cli_svg_draws_the_article_roofline(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(tmp_dir));
	const char *model = src_path("plans/models/deepseek-v4.1-flash.yaml");
	const char *gb200 = src_path("hardware/gb200-nvl72.yaml");
	const char *svg = tmp_path(0, "roofline.svg");
	const char *txt = tmp_path(1, "roofline.txt");
	/* A file already there, with a second name: written in place, the
	 * old name would show the new text; replaced atomically (a new file
	 * renamed over it), the old inode keeps its text. */
	const char *old_name = tmp_path(2, "old.svg");
	write_file(svg, "not an svg\n", 1000);
	assert_int_equal(link(svg, old_name), 0);

	/* --min-redundant 32: the article's benchmark rule (416 slots at EP8) */
	struct cli_result plain = cli_run("roofline", "-m", model, "-H", gb200, "--ep", "64", "-r", "8",
					  "-T", "4", "--min-redundant", "32", "--compare-ep", "8", NULL);
	assert_int_equal(plain.status, 0);
	struct cli_result r = cli_run("roofline", "-m", model, "-H", gb200, "--ep", "64", "-r", "8",
				      "-T", "4", "--min-redundant", "32", "--compare-ep", "8", "--svg", svg,
				      "-o", txt, NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "");
	/* -o holds exactly what stdout gets without it. */
	char *text = cli_slurp(txt);
	assert_non_null(text);
	assert_string_equal(text, plain.out);
	free(text);
	cli_result_free(&plain);
	cli_result_free(&r);
	/* The two outputs, the old file, and no temporary file beside them. */
	assert_int_equal(dir_entries(), 3);
	char *old_text = cli_slurp(old_name);
	assert_non_null(old_text);
	assert_int_equal(strncmp(old_text, "not an svg\n", 11), 0);
	free(old_text);

	char *doc = cli_slurp(svg);
	assert_non_null(doc);
	assert_true(svg_well_formed(doc));
	assert_null(strstr(doc, "not an svg"));
	/* One roof per format the preset gives a peak for (fp4 10, fp8 5 and
	 * bf16 2.5 PFLOP/s); the article's "5 PFLOP/s of FP8" and "8 TB/s"
	 * put the fp8 ridge at 625 FLOP/B. */
	assert_non_null(svg_element(doc, "roof-2"));
	assert_null(svg_element(doc, "roof-3"));
	assert_true(svg_label_is(doc, "roof-1", "fp8: 5 PFLOP/s, ridge 625 FLOP/B"));
	assert_near(svg_number(doc, "ridge-1", "data-x"), 625.0, 1e-9);
	assert_near(svg_number(doc, "ridge-1", "data-y"), 5e15, 1.0);
	/* The operating point, by hand: b = 8 x 4 = 32 tokens per GPU,
	 * t = b k N / slots = 32 x 6 x 64 / 448 = 27.43 tokens per expert;
	 * F = 2 x 3 x 5120 x 2304 = 70,778,880 FLOP, W = 35,389,440 x 4.25 / 8
	 * = 18,800,640 B, a = 5120 x 3 = 15,360 B: I = F t / (W + a t) = 101.0
	 * FLOP/B, memory-bound, attainable I x 8 TB/s. */
	double t64 = 32.0 * 6 * 64 / 448;
	double i64 = 70778880.0 * t64 / (18800640.0 + 15360.0 * t64);
	assert_true(svg_label_is(doc, "point-0", "EP64, 8 req/GPU"));
	assert_near(svg_number(doc, "point-0", "data-x"), i64, 1e-3 * i64);
	assert_near(svg_number(doc, "point-0", "data-y"), i64 * 8e12, 1e-3 * i64 * 8e12);
	/* The same batch at EP8 with the article's 416 slots: t = 3.69. */
	double t8 = 32.0 * 6 * 8 / 416;
	double i8 = 70778880.0 * t8 / (18800640.0 + 15360.0 * t8);
	assert_true(svg_label_is(doc, "point-1", "EP8, 8 req/GPU"));
	assert_near(svg_number(doc, "point-1", "data-x"), i8, 1e-3 * i8);
	assert_null(svg_element(doc, "point-2"));
	/* Second panel: "t* ~ 192"; "In an EP64 group with 448 slots ... t =
	 * 192 is reached at about 56 requests per GPU"; "In an EP8 group the
	 * same crossing would need 416 requests per GPU". */
	assert_printed(svg_number(doc, "t-star", "data-value"), 192.0, 1.0);
	bool seen64 = false, seen8 = false;
	size_t curves = 0;
	char id[32];
	for (size_t i = 0; i < 16; i++) {
		snprintf(id, sizeof(id), "ep-%zu", i);
		if (!svg_element(doc, id)) {
			break;
		}
		curves++;
		seen64 = seen64 || svg_label_is(doc, id, "EP64, 448 slots: t* at 56 req/GPU");
		seen8 = seen8 || svg_label_is(doc, id, "EP8, 416 slots: t* at 416 req/GPU");
	}
	assert_true(seen64);
	assert_true(seen8);
	assert_in_range(curves, 2, 6);
	assert_true(svg_label_is(doc, "ep-point-0", "EP64, 8 req/GPU"));
	assert_near(svg_number(doc, "ep-point-0", "data-x"), 8.0, 1e-9);
	assert_near(svg_number(doc, "ep-point-0", "data-y"), t64, 1e-3);
	free(doc);

	/* Without --requests: the table's 1, 8, 64 and 512 requests per GPU. */
	r = cli_run("roofline", "-m", model, "-H", gb200, "--ep", "64", "--svg", svg, "-o", txt,
		    "-f", "json", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	doc = cli_slurp(svg);
	assert_non_null(doc);
	assert_true(svg_well_formed(doc));
	assert_true(svg_label_is(doc, "point-0", "EP64, 1 req/GPU"));
	assert_true(svg_label_is(doc, "point-3", "EP64, 512 req/GPU"));
	assert_null(svg_element(doc, "point-4"));
	free(doc);
	text = cli_slurp(txt);
	assert_non_null(text);
	assert_int_equal(text[0], '{');
	free(text);

	/* Issue 16 item 10: on HGX B200 (180 GB) EP1 cannot hold V4.1-Flash
	 * ('moeplan fit --ep 1 -r 1 --context 1': "does not fit: 118.4 GB
	 * short"; --ep 2: "fits: 11 GB free"), so its curve is dashed grey
	 * and says so; EP2's is not. */
	r = cli_run("roofline", "-m", model, "-H", src_path("hardware/hgx-b200.yaml"), "--ep", "2",
		    "--svg", svg, "-o", txt, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	doc = cli_slurp(svg);
	assert_non_null(doc);
	assert_true(svg_well_formed(doc));
	assert_true(svg_label_is(doc, "ep-0", "EP1, 384 slots (does not fit)"));
	assert_true(svg_label_is(doc, "ep-1", "EP2, 432 slots"));
	const char *g0 = svg_element(doc, "ep-0");
	const char *e0 = strstr(g0, "</g>");
	assert_non_null(e0);
	const char *dash = strstr(g0, "stroke-dasharray=");
	const char *grey = strstr(g0, "stroke=\"#888888\"");
	assert_true(dash && dash < e0);
	assert_true(grey && grey < e0);
	const char *g1 = svg_element(doc, "ep-1");
	const char *e1 = strstr(g1, "</g>");
	assert_non_null(e1);
	dash = strstr(g1, "stroke-dasharray=");
	assert_true(!dash || dash > e1);
	free(doc);

	/* A picture that cannot be written: exit 1 and no output at all. */
	const char *fresh = tmp_path(2, "fresh.txt");
	r = cli_run("roofline", "-m", model, "-H", gb200, "--ep", "64", "--svg",
		    tmp_path(3, "no-such-dir/roofline.svg"), "-o", fresh, NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "no-such-dir/roofline.svg"));
	cli_result_free(&r);
	struct stat st;
	assert_int_not_equal(stat(fresh, &st), 0);

	/* -o or --svg naming an input is refused before anything is read. */
	const char *copy = tmp_path(2, "model.yaml");
	char *model_text = cli_slurp(model);
	assert_non_null(model_text);
	write_file(copy, model_text, 1);
	const char *outs[][2] = {{"-o", copy}, {"--svg", copy}};
	for (size_t i = 0; i < 2; i++) {
		r = cli_run("roofline", "-m", copy, "-H", gb200, outs[i][0], outs[i][1], NULL);
		assert_int_equal(r.status, 2);
		assert_non_null(strstr(r.err, "refusing to overwrite"));
		cli_result_free(&r);
		char *after = cli_slurp(copy);
		assert_non_null(after);
		assert_string_equal(after, model_text);
		free(after);
	}
	r = cli_run("roofline", "-m", model, "-H", gb200, "--svg", svg, "-o", svg, NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	free(model_text);

	char script[4300];
	snprintf(script, sizeof(script), "rm -rf '%s'", tmp_dir);
	assert_int_equal(system(script), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(roofline__expert_constants),
		cmocka_unit_test(roofline__ridge_per_gpu_and_format),
		cmocka_unit_test(roofline__intensity_at_one_token),
		cmocka_unit_test(roofline__ridge_crossing),
		cmocka_unit_test(roofline__ceiling),
		cmocka_unit_test(roofline__ridge_unreachable_when_ceiling_below),
		cmocka_unit_test(roofline__intensity_701_at_64_requests),
		cmocka_unit_test(roofline__requests_to_reach_the_ridge),
		cmocka_unit_test(roofline__production_operating_point),
		cmocka_unit_test(roofline__ep64_at_256_requests),
		cmocka_unit_test(roofline__experts_touched_and_bytes_per_token),
		cmocka_unit_test(roofline__routed_experts_total),
		cmocka_unit_test(roofline__weight_reads_per_gpu_at_64_requests),
		cmocka_unit_test(roofline__ep_gap_at_small_batches),
		cmocka_unit_test(roofline__ep64_expert_time_at_8_requests),
		cmocka_unit_test(roofline__large_batch_arithmetic),
		cmocka_unit_test(roofline__overlap_and_additive),
		cmocka_unit_test(roofline__bandwidth_choice),
		cmocka_unit_test(roofline__prefill_tokens_per_expert),
		cmocka_unit_test(roofline__other_models),
		cmocka_unit_test(roofline__point_rejects_bad_widths),
		cmocka_unit_test(roofline__cli_reproduces_the_article),
		cmocka_unit_test(roofline__cli_usage_errors),
		cmocka_unit_test(roofline__cli_svg_draws_the_article_roofline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
