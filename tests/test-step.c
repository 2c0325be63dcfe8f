/* Tests of the step model (step.h): hand-computed terms (KV bytes read per
 * step, touched-expert bytes at small batch, exchange bytes per kernel
 * model), DeepEP's published H800 kernel measurements, the seed article's
 * EP64/EP8 figures, overlap and calibration. Published figures are quoted
 * with their source; hand calculations are written out here, never read
 * back from the code. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli-run.h"

#include "moeplan/diag.h"
#include "moeplan/loader.h"
#include "moeplan/model.h"
#include "moeplan/step.h"

#define assert_near(a, b, tol) assert_near_at((a), (b), (tol), __FILE__, __LINE__)

static void assert_near_at(double a, double b, double tol, const char *file, int line)
{
	if (!(fabs(a - b) <= tol)) {
		print_error("%.17g != %.17g (tolerance %g)\n", a, b, tol);
		_fail(file, line);
	}
}

/* |a / b - 1| <= rel */
#define assert_rel(a, b, rel) assert_near_at((a) / (b), 1.0, (rel), __FILE__, __LINE__)

/* DeepSeek-V3's shapes (HF config.json of deepseek-ai/DeepSeek-V3, as in
 * plans/models/deepseek-v3.yaml): hidden 7168, 58 MoE + 3 dense layers,
 * 256 routed experts top-8 of 2048, one shared expert, FP8 (128x128
 * blocks), FP8 dispatch, BF16 combine; MLA with 128 heads, kv_lora 512,
 * rope 64, nope 128, v 128, BF16 cache over 61 layers. No drafter unless
 * asked. */
static void v3(struct mp_model *m)
{
	mp_model_init(m);
	m->hidden_size = 7168;
	m->moe_layers = 58;
	m->dense_layers = 3;
	m->routed_experts = 256;
	m->shared_experts = 1;
	m->top_k = 8;
	m->expert_intermediate_size = 2048;
	m->shared_expert_intermediate_size = 2048;
	m->matrices_per_expert = 3;
	m->routed_format = MP_FORMAT_FP8_BLOCK;
	m->shared_format = MP_FORMAT_FP8_BLOCK;
	m->expert_compute = MP_COMPUTE_FP8;
	m->dispatch_format = MP_FORMAT_FP8;
	m->combine_format = MP_FORMAT_BF16;
	m->dense_weight_bytes = 16525161136ull;
	m->vocab_size = 129280;
	m->attention.kind = MP_ATTENTION_MLA;
	m->attention.kv_layers = 61;
	m->attention.kv_lora_rank = 512;
	m->attention.rope_dim = 64;
	m->attention.heads = 128;
	m->attention.qk_nope_dim = 128;
	m->attention.v_head_dim = 128;
	m->attention.kv_bytes_per_element = 2.0;
	m->kv_bytes_per_token = mp_model_kv_bytes_per_token(m);
	m->n_groups = 8;
	m->topk_groups = 4;
}

/* H800 (hardware/hgx-h800.yaml): H100 peaks and memory, 200 GB/s NVLink
 * per direction, 50 GB/s NIC, 8 GPUs per NVLink domain. */
static void h800(struct mp_hardware *hw)
{
	mp_hardware_init(hw);
	hw->peak_flops[MP_COMPUTE_FP8] = 1978.9e12;
	hw->peak_flops[MP_COMPUTE_BF16] = 989.4e12;
	hw->hbm_bytes = 81559ull * 1048576ull;
	hw->hbm_bw_bytes_per_s = 3.35e12;
	hw->scale_up_domain_gpus = 8;
	hw->gpus_per_node = 8;
	hw->scale_up_bw_bytes_per_s = 200e9;
	hw->scale_out_bw_bytes_per_s = 50e9;
}

static struct mp_step_input decode_input(uint32_t ep, uint32_t slots, double requests,
					 double context)
{
	struct mp_step_input in;
	mp_step_input_init(&in);
	in.width = (struct mp_ep_width){.ep = ep, .slots = slots};
	in.requests = requests;
	in.context_tokens = context;
	return in;
}

/* KV bytes read per decode step: every request's whole cache once. MLA
 * per token per layer (512 + 64) x 2 B = 1,152 B; x 61 layers = 70,272 B
 * (reference README section 3.1). 88 requests (DeepSeek's 1,850 tokens/s
 * per GPU / 21 per user) at the published mean KV length 4,989:
 * 88 x 4,989 = 439,032 token-requests x 70,272 = 30,851,656,704 B, with 1 or 2 tokens per request
 * (the cache is read once per request, not per token). */
static void step__kv_bytes_per_decode_step(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	v3(&m);
	h800(&hw);
	struct mp_step s;
	for (double tpr = 1.0; tpr <= 2.0; tpr += 1.0) {
		struct mp_step_input in = decode_input(144, 288, 88, 4989);
		in.tokens_per_request = tpr;
		assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), 0);
		assert_near(s.terms[MP_TERM_ATTENTION].bytes, 30851656704.0, 1.0);
		/* Absorbed MLA FLOP per (token, context token, layer):
		 * 2 x 128 x 576 + 2 x 128 x 512 = 278,528. */
		assert_near(s.terms[MP_TERM_ATTENTION].flops, 88.0 * tpr * 4989.0 * 61.0 * 278528.0, 1e3);
	}
	/* tp:8 attention: MLA's latent is read by every rank of the group,
	 * which serves 8 x 88 requests: 8 x the DP figure. */
	struct mp_step_input in = decode_input(144, 288, 88, 4989);
	in.tp = 8;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), 0);
	assert_near(s.terms[MP_TERM_ATTENTION].bytes, 8.0 * 30851656704.0, 8.0);

	/* GQA (Qwen3-235B-A22B: 4 KV heads of 128, BF16, 94 layers:
	 * 2 x 4 x 128 x 2 x 94 = 192,512 B per token). Under tp:8 the KV heads
	 * split 4 ways (min(8, 4)); the group holds 8 x 10 requests: per GPU
	 * 80 / 4 x 1,000 x 192,512 = 3,850,240,000 B. */
	struct mp_model q;
	mp_model_init(&q);
	q.hidden_size = 4096;
	q.moe_layers = 94;
	q.routed_experts = 128;
	q.top_k = 8;
	q.expert_intermediate_size = 1536;
	q.matrices_per_expert = 3;
	q.dense_weight_bytes = 10000000000ull;
	q.attention.kind = MP_ATTENTION_GQA;
	q.attention.kv_layers = 94;
	q.attention.kv_heads = 4;
	q.attention.head_dim = 128;
	q.attention.heads = 64;
	q.attention.kv_bytes_per_element = 2.0;
	q.kv_bytes_per_token = mp_model_kv_bytes_per_token(&q);
	hw.peak_flops[MP_COMPUTE_BF16] = 989.4e12;
	struct mp_step_input g = decode_input(8, 128, 10, 1000);
	g.tp = 8;
	assert_int_equal(mp_step_evaluate(&q, &hw, &g, &s), 0);
	assert_near(s.terms[MP_TERM_ATTENTION].bytes, 3850240000.0, 1.0);
	/* GQA FLOP per pair 4 x 64 x 128 = 32,768; heads split 8 ways over
	 * 8 x 10 tokens: per GPU 10 x 1,000 x 94 x 32,768. */
	assert_near(s.terms[MP_TERM_ATTENTION].flops, 10.0 * 1000.0 * 94.0 * 32768.0, 1.0);
	mp_model_finish(&q);
	mp_model_finish(&m);
}

/* Touched experts at small batch (issue 12: "gpt-oss-120b on one H100 at 8
 * requests: 28.7 of 128 experts touched, all 60.9 GB charged"). One GPU
 * (EP1, 128 slots), top-4 of 128: 128 (1 - (1 - 4/128)^8) = 28.71 touched
 * per layer. An expert is 3 x 2880 x 2880 MXFP4 values = 24,883,200 x
 * 4.25 / 8 = 13,219,200 B; a visit moves 2880 x (1 + 2) = 8,640 B (FP8 in,
 * BF16 out). Routed bytes over 36 layers: 36 (28.71 x 13,219,200 + 8 x 4 x
 * 8,640). */
static void step__touched_expert_bytes_at_small_batch(void **state)
{
	(void)state;
	struct mp_model m;
	mp_model_init(&m);
	m.hidden_size = 2880;
	m.moe_layers = 36;
	m.routed_experts = 128;
	m.top_k = 4;
	m.expert_intermediate_size = 2880;
	m.matrices_per_expert = 3;
	m.routed_format = MP_FORMAT_MXFP4;
	m.expert_compute = MP_COMPUTE_FP8;
	m.dense_weight_bytes = 2000000000ull;
	m.attention.kind = MP_ATTENTION_DIRECT;
	m.kv_bytes_per_token = 73728;
	struct mp_hardware hw;
	h800(&hw);
	hw.scale_up_bw_bytes_per_s = 450e9;
	struct mp_step_input in = decode_input(1, 128, 8, 1000);
	struct mp_step s;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), 0);
	double touched = 128.0 * (1.0 - pow(1.0 - 4.0 / 128.0, 8.0));
	assert_near(touched, 28.71, 0.005);
	assert_near(s.routed_touched_slots, touched, 1e-9);
	assert_near(s.terms[MP_TERM_ROUTED].bytes, 36.0 * (touched * 13219200.0 + 8.0 * 4.0 * 8640.0),
		    1e-3);
	/* All 128 held: 36 x 128 x 13,219,200 = 60.9 GB, the old charge. */
	assert_near(36.0 * 128.0 * 13219200.0 / 1e9, 60.9, 0.05);
	/* EP1 moves nothing over links. */
	assert_near(s.terms[MP_TERM_DISPATCH].time_s, 0.0, 0.0);
	assert_near(s.terms[MP_TERM_COMBINE].bytes, 0.0, 0.0);
	mp_model_finish(&m);
}

/* Exchange bytes per GPU per MoE layer, by hand, DeepSeek-V3 shapes: a
 * dispatched token is 7,168 FP8 values + 56 FP32 scales = 7,392 B, a
 * combined one 7,168 BF16 = 14,336 B.
 *  low_latency, EP144 over 18 nodes of 8, 128 tokens per GPU: every visit
 *   to its expert's GPU; remote 136/144 of 8 visits by RDMA, 7/144 by
 *   NVLink (1/144 stay on the GPU).
 *  normal, EP32 over 4 nodes: one crossing per destination node other than
 *   the token's own: D = 4 (1 - (3/4)^8) nodes, R = D x 3/4; NVLink fan-out
 *   once per distinct GPU, 32 (1 - (31/32)^8) GPUs, 7/8 of them not the
 *   forwarding GPU. */
static void step__exchange_bytes_per_kernel_model(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	v3(&m);
	h800(&hw);
	struct mp_step s;
	struct mp_step_input in = decode_input(144, 288, 128, 1000);
	in.kernel = MP_KERNEL_LOW_LATENCY;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), 0);
	assert_int_equal(s.nodes, 18);
	double ll_d = 128.0 * 8.0 * (136.0 + 7.0) / 144.0 * 7392.0;
	double ll_c = 128.0 * 8.0 * (136.0 + 7.0) / 144.0 * 14336.0;
	assert_near(s.terms[MP_TERM_DISPATCH].bytes, 58.0 * ll_d, 1e-3);
	assert_near(s.terms[MP_TERM_COMBINE].bytes, 58.0 * ll_c, 1e-3);

	struct mp_step_input p;
	mp_step_input_init(&p);
	p.phase = MP_STEP_PREFILL;
	p.width = (struct mp_ep_width){.ep = 32, .slots = 288};
	p.chunk_tokens = 4096;
	p.isl = 4096;
	assert_int_equal(mp_step_evaluate(&m, &hw, &p, &s), 0);
	assert_int_equal(s.kernel, MP_KERNEL_NORMAL);
	assert_int_equal(s.nodes, 4);
	double dn = 4.0 * (1.0 - pow(0.75, 8.0));
	double r = dn * 3.0 / 4.0;
	double ranks = 32.0 * (1.0 - pow(31.0 / 32.0, 8.0));
	double up = ranks * 7.0 / 8.0;
	assert_near(s.terms[MP_TERM_DISPATCH].bytes, 58.0 * 4096.0 * (r + up) * 7392.0, 1.0);
	assert_near(s.terms[MP_TERM_COMBINE].bytes, 58.0 * 4096.0 * (r + up) * 14336.0, 1.0);
	mp_model_finish(&m);
}

/* The busiest GPU (busiest_factor f) receives f times the mean visits in
 * dispatch and returns them in combine. Low-latency kernels send every
 * visit to its expert's GPU: both links carry f x the bytes above.
 * Normal kernels cross the network once per destination node (node
 * balance is not f): only the NVLink fan-out scales. Hand values: the
 * same shapes as step__exchange_bytes_per_kernel_model, f = 1.25. */
static void step__busiest_gpu_scales_what_it_receives(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	v3(&m);
	h800(&hw);
	struct mp_step s;
	struct mp_step_input in = decode_input(144, 288, 128, 1000);
	in.kernel = MP_KERNEL_LOW_LATENCY;
	in.busiest_factor = 1.25;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), 0);
	double ll_d = 1.25 * 128.0 * 8.0 * (136.0 + 7.0) / 144.0 * 7392.0;
	assert_near(s.terms[MP_TERM_DISPATCH].bytes, 58.0 * ll_d, 1e-3);
	/* Time: 28 us + the network part, 1.25 x 128 x 8 x 136 / 144 msgs of
	 * 7,392 B at 0.88 x 50 GB/s (it exceeds the NVLink part). */
	double net = 1.25 * 128.0 * 8.0 * 136.0 / 144.0 * 7392.0 / (0.88 * 50e9);
	assert_near(s.terms[MP_TERM_DISPATCH].time_s, 58.0 * (28e-6 + net), 1e-9);

	struct mp_step_input p;
	mp_step_input_init(&p);
	p.phase = MP_STEP_PREFILL;
	p.width = (struct mp_ep_width){.ep = 32, .slots = 288};
	p.chunk_tokens = 4096;
	p.isl = 4096;
	p.busiest_factor = 1.25;
	assert_int_equal(mp_step_evaluate(&m, &hw, &p, &s), 0);
	double r = 4.0 * (1.0 - pow(0.75, 8.0)) * 3.0 / 4.0;
	double up = 32.0 * (1.0 - pow(31.0 / 32.0, 8.0)) * 7.0 / 8.0;
	assert_near(s.terms[MP_TERM_DISPATCH].bytes, 58.0 * 4096.0 * (r + 1.25 * up) * 7392.0, 1.0);
	mp_model_finish(&m);
}

/* One MoE layer of DeepSeek-V3's shape and nothing else, to time a
 * single dispatch or combine kernel as DeepEP's tests do. */
static void one_layer(struct mp_model *m)
{
	v3(m);
	m->moe_layers = 1;
	m->dense_layers = 0;
	m->shared_experts = 0;
	m->dense_weight_bytes = 0;
	m->vocab_size = 0;
}

/* DeepEP docs/legacy.md, "Low-latency kernels with pure RDMA" (H800, CX7
 * 400 Gbit/s, 128 tokens per batch, 7,168 hidden, top-8, FP8 dispatch,
 * BF16 combine): latency per kernel. The defaults (28 us per exchange,
 * 0.88 of the NIC, 0.77 of NVLink) reproduce each row within 10%; the
 * worst are dispatch at EP8 (77 us) 7.8% under and combine at EP128
 * (369 us) 7.6% under. */
static void step__deepep_low_latency_table(void **state)
{
	(void)state;
	static const struct {
		uint32_t ep;
		double dispatch_us, combine_us;
	} rows[] = {
		{8, 77, 114}, {16, 118, 195}, {32, 155, 273},
		{64, 173, 314}, {128, 192, 369}, {256, 194, 360},
	};
	struct mp_model m;
	struct mp_hardware hw;
	one_layer(&m);
	h800(&hw);
	double worst = 0.0;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint32_t ep = rows[i].ep;
		struct mp_step_input in = decode_input(ep, 256, 128, 0);
		in.kernel = MP_KERNEL_LOW_LATENCY;
		struct mp_step s;
		assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), 0);
		double d = s.terms[MP_TERM_DISPATCH].time_s * 1e6;
		double c = s.terms[MP_TERM_COMBINE].time_s * 1e6;
		print_message("low_latency EP%-3u dispatch %6.1f us (published %3.0f, %+5.1f%%)  "
			      "combine %6.1f us (published %3.0f, %+5.1f%%)\n", ep, d, rows[i].dispatch_us,
			      100.0 * (d / rows[i].dispatch_us - 1.0), c, rows[i].combine_us,
			      100.0 * (c / rows[i].combine_us - 1.0));
		worst = fmax(worst, fabs(d / rows[i].dispatch_us - 1.0));
		worst = fmax(worst, fabs(c / rows[i].combine_us - 1.0));
	}
	assert_true(worst <= 0.10);
	mp_model_finish(&m);
}

/* DeepEP docs/legacy.md, "Normal kernels with NVLink and RDMA forwarding"
 * (H800, 4,096 tokens, 7,168 hidden, top-4 groups, top-8, FP8 dispatch,
 * BF16 combine): logical bottleneck bandwidth. DeepEP's tests count
 * (tests/legacy/test_internode.py, test_intranode.py):
 *  intranode, NVLink: received tokens x 7,392 B (dispatch) or x 14,336 B
 *   (combine); a rank receives 4,096 x 8 (1 - (7/8)^8) = 4,096 x 5.25;
 *  internode, RDMA: (token, destination node) pairs x 7,392 B, own node
 *   included; with min(nodes, 4) groups of one node each and top-8 inside
 *   them, D = g (1 - (1 - 1/g)^8) nodes per token, g = min(nodes, 4).
 * So the published time is bytes / bandwidth; the model's time comes
 * within 25%: EP8 -10% / -9%, EP16 -19% / -20% (there the measured kernel
 * is slower than either link predicts), EP32 +0.4% / -2%, EP64 +13% /
 * +11% (the model caps node-limited routing as E[min(nodes, 4)] over 8
 * nodes, 3.95, where DeepEP's test spreads over 4 chosen nodes, 3.60). */
static void step__deepep_normal_table(void **state)
{
	(void)state;
	static const struct {
		uint32_t ep;
		double dispatch_gbs, combine_gbs;
	} rows[] = {
		{8, 153, 158}, {16, 43, 43}, {32, 58, 57}, {64, 51, 50},
	};
	struct mp_model m;
	struct mp_hardware hw;
	one_layer(&m);
	h800(&hw);
	double worst = 0.0;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint32_t ep = rows[i].ep;
		struct mp_step_input in;
		mp_step_input_init(&in);
		in.phase = MP_STEP_PREFILL;
		in.width = (struct mp_ep_width){.ep = ep, .slots = 256};
		in.chunk_tokens = 4096;
		in.kernel = MP_KERNEL_NORMAL;
		struct mp_step s;
		assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), 0);
		double pairs;
		if (ep == 8) {
			pairs = 4096.0 * 8.0 * (1.0 - pow(7.0 / 8.0, 8.0));
		} else {
			double g = fmin(ep / 8.0, 4.0);
			pairs = 4096.0 * g * (1.0 - pow(1.0 - 1.0 / g, 8.0));
		}
		double pub_d = pairs * 7392.0 / (rows[i].dispatch_gbs * 1e9);
		double pub_c = pairs * (ep == 8 ? 14336.0 : 7392.0) / (rows[i].combine_gbs * 1e9);
		/* Internode combine: DeepEP counts the same pairs in BF16
		 * (combine_bf16_rdma_recv_bytes = dispatch_bf16_rdma_send_bytes). */
		if (ep > 8) {
			pub_c = pairs * 14336.0 / (rows[i].combine_gbs * 1e9);
		}
		double d = s.terms[MP_TERM_DISPATCH].time_s;
		double c = s.terms[MP_TERM_COMBINE].time_s;
		print_message("normal EP%-3u dispatch %7.1f us (published %7.1f, %+5.1f%%)  "
			      "combine %7.1f us (published %7.1f, %+5.1f%%)\n", ep, d * 1e6, pub_d * 1e6,
			      100.0 * (d / pub_d - 1.0), c * 1e6, pub_c * 1e6, 100.0 * (c / pub_c - 1.0));
		worst = fmax(worst, fabs(d / pub_d - 1.0));
		worst = fmax(worst, fabs(c / pub_c - 1.0));
	}
	assert_true(worst <= 0.25);
	mp_model_finish(&m);
}

static void load(const char *model, const char *hardware, struct mp_model *m,
		 struct mp_hardware *hw)
{
	struct mp_diags d;
	mp_diags_init(&d);
	mp_model_init(m);
	mp_hardware_init(hw);
	assert_int_equal(mp_load_model(src_path(model), m, &d), 0);
	assert_int_equal(mp_load_hardware(src_path(hardware), hw, &d), 0);
	mp_diags_finish(&d);
}

/* Seed 000: DeepSeek-V4.1-Flash decode on GB200, 4 tokens per request,
 * tau = 3.25 (acceptance 0.75), context 131,072, slots 416 / 448 (drafter
 * 160 / 192): "EP64 delivers 36% more tokens per second per GPU than EP8"
 * at 8 requests and "6% more at 256"; "the EP64 step takes 10.0 ms" at 8.
 * With the default factors and fixed kernel latencies (issue 23 item 2)
 * the EP64 step at 8 requests is within 15% of 10.0 ms (the issue's
 * acceptance); the gain at 8 requests is over-predicted, and calibrating
 * the per-step overhead from the one EP64 measurement does not bring it
 * within 10% (the MoE block's fixed part grows with local experts, 52 at
 * EP8 against 7 at EP64: the README table prints every figure and the
 * miss); at 256 requests the calibrated ratio is within 10%. */
static void step__seed_article_ep64_vs_ep8(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	load("plans/models/deepseek-v4.1-flash.yaml", "hardware/gb200-nvl72.yaml", &m, &hw);
	struct mp_step_input w64 = decode_input(64, 448, 8, 131072);
	w64.width.drafter_slots = 192;
	w64.tokens_per_request = 4;
	w64.acceptance = 0.75;
	struct mp_step_input w8 = w64;
	w8.width = (struct mp_ep_width){.ep = 8, .slots = 416, .drafter_slots = 160};
	struct mp_step a, b;
	double ratio[2][2]; /* [default, calibrated][8, 256 requests] */
	struct mp_efficiency cal;
	assert_int_equal(mp_step_calibrate(&m, &hw, &w64, MP_FACTOR_STEP_OVERHEAD, 10.0e-3, &cal), 0);
	for (int c = 0; c < 2; c++) {
		for (int r = 0; r < 2; r++) {
			w64.requests = w8.requests = r ? 256 : 8;
			w64.efficiency = w8.efficiency = c ? &cal : NULL;
			assert_int_equal(mp_step_evaluate(&m, &hw, &w64, &a), 0);
			assert_int_equal(mp_step_evaluate(&m, &hw, &w8, &b), 0);
			if (c && r == 0) {
				/* The calibrated EP64 step is the measurement. */
				assert_near(a.step_time_s, 10.0e-3, 1e-9);
			}
			ratio[c][r] = a.tokens_per_s_per_gpu / b.tokens_per_s_per_gpu;
			/* Tokens/s per user = tau / step. */
			assert_near(a.tokens_per_s_per_user, 3.25 / a.step_time_s, 1e-6);
			print_message("%s, %3.0f requests: EP64 %.2f ms, EP8 %.2f ms, ratio %.3f (published %.2f)\n",
				      c ? "calibrated" : "defaults  ", w64.requests, a.step_time_s * 1e3,
				      b.step_time_s * 1e3, ratio[c][r], r ? 1.06 : 1.36);
		}
	}
	/* EP64 wins at both batches, and by less at 256 (the collapse). */
	assert_true(ratio[0][0] > ratio[0][1] && ratio[0][1] > 1.0);
	/* Not reached: the 8-request gain stays over-predicted, calibrated. */
	assert_true(ratio[1][0] > 1.36 * 1.10);
	assert_rel(ratio[1][1], 1.06, 0.10);
	/* Defaults: the EP64 step at 8 requests within 15% of the article's
	 * 10.0 ms, and the MoE fixed part by hand (no two_batch): the main
	 * model's 40 layers at 448 / 64 = 7 and 416 / 8 = 52 local slots,
	 * 40 x (22 + 1.5 x 7) = 1,300 us and 40 x (22 + 1.5 x 52) = 4,000 us. */
	w64.requests = w8.requests = 8;
	w64.efficiency = w8.efficiency = NULL;
	assert_int_equal(mp_step_evaluate(&m, &hw, &w64, &a), 0);
	assert_int_equal(mp_step_evaluate(&m, &hw, &w8, &b), 0);
	assert_rel(a.step_time_s, 10.0e-3, 0.15);
	assert_near(a.terms[MP_TERM_ROUTED].fixed_s, 1300e-6, 1e-12);
	assert_near(b.terms[MP_TERM_ROUTED].fixed_s, 4000e-6, 1e-12);
	mp_model_finish(&m);
	mp_hardware_finish(&hw);
}

/* two_batch by hand for V3 (58 MoE + 3 dense layers) from a step's terms
 * (both micro-batches): the MoE layers' attention and projections under one exchange,
 * shared + routed experts under the other, the rest beside none. */
static double hand_paired(const struct mp_step_term *t, int under_attention, int under_experts)
{
	/* attention core + projections (the dense term), 58 of 61 layers */
	double layer = t[MP_TERM_ATTENTION].time_s + t[MP_TERM_DENSE].time_s;
	return fmax(layer * 58.0 / 61.0, t[under_attention].time_s) +
	       fmax(t[MP_TERM_SHARED].time_s + t[MP_TERM_ROUTED].time_s, t[under_experts].time_s) +
	       layer * 3.0 / 61.0 + t[MP_TERM_LM_HEAD].time_s + t[MP_TERM_DRAFTER].time_s +
	       t[MP_TERM_TP_ALLREDUCE].time_s;
}

/* two_batch reads every weight once per micro-batch: it loses at small
 * batches (nothing to hide, weights read twice) and wins where the
 * exchange is as long as the compute (V3 decode over 18 nodes). */
static void step__two_batch_loses_small_wins_large(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	v3(&m);
	h800(&hw);
	struct mp_step none, two, full;
	struct mp_step_input in = decode_input(144, 288, 1, 1000);
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &none), 0);
	in.overlap = MP_OVERLAP_TWO_BATCH;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &two), 0);
	assert_true(two.step_time_s > none.step_time_s);
	in = decode_input(144, 288, 128, 4989);
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &none), 0);
	in.overlap = MP_OVERLAP_TWO_BATCH;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &two), 0);
	in.overlap = MP_OVERLAP_FULL;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &full), 0);
	assert_true(two.step_time_s < none.step_time_s);
	assert_true(full.step_time_s <= two.step_time_s);
	/* full = max(compute, exchange) + overhead; none = the sum. */
	assert_near(full.step_time_s, fmax(none.compute_s, none.exchange_s) + 0.5e-3, 1e-12);
	assert_near(none.step_time_s, none.compute_s + none.exchange_s + 0.5e-3, 1e-12);
	/* two_batch paired stage by stage as SGLang's
	 * _compute_moe_deepseek_blog_decode schedules it: per MoE layer one
	 * micro-batch's attention under the other's combine, its shared and
	 * routed experts under the other's dispatch; the 3 dense layers'
	 * attention and projections (3 of 61), LM head and drafter beside no
	 * exchange (hand_paired, from the step's own terms). */
	assert_near(two.step_time_s,
		    hand_paired(two.terms, MP_TERM_COMBINE, MP_TERM_DISPATCH) + 0.5e-3, 1e-12);
	/* a paired schedule never hides more than one max(compute, exchange) */
	assert_true(two.step_time_s >= fmax(two.compute_s, two.exchange_s) + 0.5e-3 - 1e-12);
	/* prefill (_compute_moe_deepseek_blog_prefill): attention under
	 * dispatch, experts under combine */
	in = decode_input(32, 288, 1, 4096);
	in.phase = MP_STEP_PREFILL;
	in.chunk_tokens = 16384;
	in.overlap = MP_OVERLAP_TWO_BATCH;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &two), 0);
	assert_near(two.step_time_s,
		    hand_paired(two.terms, MP_TERM_DISPATCH, MP_TERM_COMBINE) + 0.5e-3, 1e-12);
	mp_model_finish(&m);
}

/* Prefill TTFT is whole chunks of the prompt: a 40,000-token prompt in
 * 16,384-token chunks takes 3 steps. */
static void step__prefill_ttft_is_whole_chunks(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	v3(&m);
	h800(&hw);
	struct mp_step_input in;
	mp_step_input_init(&in);
	in.phase = MP_STEP_PREFILL;
	in.width = (struct mp_ep_width){.ep = 32, .slots = 288};
	in.chunk_tokens = 16384;
	in.isl = 40000;
	struct mp_step s;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), 0);
	assert_near(s.ttft_s, 3.0 * s.step_time_s, 1e-12);
	assert_near(s.tokens_per_s_per_gpu, 16384.0 / s.step_time_s, 1e-6);
	/* LM head: only the prompt's last token needs logits: 1 prompt x
	 * 2 x 129,280 x 7,168 FLOP. */
	assert_near(s.terms[MP_TERM_LM_HEAD].flops, 2.0 * 129280.0 * 7168.0, 1.0);
	mp_model_finish(&m);
}

static void step__rejects_bad_input(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	v3(&m);
	h800(&hw);
	struct mp_step s;
	struct mp_step_input in = decode_input(144, 288, 8, 1000);
	in.requests = 0;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), MP_EINVAL);
	in = decode_input(144, 280, 8, 1000); /* not a multiple of 144 */
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), MP_EINVAL);
	in = decode_input(144, 288, 8, 1000);
	in.acceptance = 1.5;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), MP_EINVAL);
	in.acceptance = 0.5;
	in.tp = 5; /* does not divide 144 */
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), MP_EINVAL);
	in.tp = 1;
	in.context_tokens = (double)NAN;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), MP_EINVAL);
	in.context_tokens = 1000;
	hw.scale_out_bw_bytes_per_s = 0; /* 18 nodes and no network */
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), MP_EINVAL);
	h800(&hw);
	struct mp_efficiency e;
	assert_int_equal(mp_step_calibrate(&m, &hw, &in, MP_FACTOR_STEP_OVERHEAD, 1e-6, &e),
			 MP_ENOFIT);
	mp_model_finish(&m);
}

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

/* The CLI's public contract: option names and JSON keys of issue 12. */
static void step__cli_keys_and_exit_codes(void **state)
{
	(void)state;
	const char *model = src_path("plans/models/deepseek-v3.yaml");
	const char *h800y = src_path("hardware/hgx-h800.yaml");
	struct cli_result r = cli_run("step", "--model", model, "--hardware", h800y, "--phase", "decode",
				      "--ep", "144", "--nodes-of", "8", "--requests", "88", "--context",
				      "4989", "--tokens-per-request", "2", "--acceptance", "0.85",
				      "--overlap", "two_batch", "--attention", "dp", "--slots", "288",
				      "--drafter-slots", "288", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	static const char *const keys[] = {
		"step_time_s", "tokens_per_step", "tokens_per_s_per_gpu", "tokens_per_s_per_user",
		"hbm_free_bytes", "max_requests", "time_s", "bytes", "flops",
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		(void)json_number(r.out, keys[i]);
	}
	assert_non_null(strstr(r.out, "\"terms\": ["));
	assert_non_null(strstr(r.out, "\"overlap\": \"two_batch\""));
	assert_non_null(strstr(r.out, "\"bound\": \"memory\""));
	assert_non_null(strstr(r.out, "\"name\": \"dispatch\""));
	/* 88 requests x 2 tokens per step. */
	assert_near(json_number(r.out, "tokens_per_step"), 176.0, 0.0);
	cli_result_free(&r);

	r = cli_run("step", "-m", model, "-H", h800y, "--phase", "prefill", "--ep", "32",
		    "--context", "4096", "--chunk-tokens", "16384", "--overlap", "two_batch",
		    "--slots", "288", "--drafter-slots", "288", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	(void)json_number(r.out, "ttft_s");
	cli_result_free(&r);

	/* Usage errors: a missing --requests in decode, tp not dividing ep,
	 * an unknown overlap. */
	r = cli_run("step", "-m", model, "-H", h800y, "--ep", "8", "--context", "100", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	r = cli_run("step", "-m", model, "-H", h800y, "--ep", "8", "-r", "1", "-c", "100",
		    "--attention", "tp:3", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	r = cli_run("step", "-m", model, "-H", h800y, "--ep", "8", "-r", "1", "-c", "100",
		    "--overlap", "sometimes", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);

	/* Calibration from one measurement, predictions at another width. */
	r = cli_run("step", "-m", src_path("plans/models/deepseek-v4.1-flash.yaml"), "-H",
		    src_path("hardware/gb200-nvl72.yaml"), "--ep", "64", "-r", "8", "-c", "131072",
		    "--tokens-per-request", "4", "--acceptance", "0.75", "--measured-step", "10 ms",
		    "--predict-ep", "8", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\"factor\": \"step_overhead\""));
	assert_near(json_number(r.out, "measured_step_s"), 0.010, 1e-12);
	cli_result_free(&r);
}

/* A --predict-ep width where the batch does not fit in HBM is flagged as
 * the measured width is: `fits: false` in its JSON and a note in text.
 * By hand: Mixtral-8x7B holds 46.7e9 parameters, 93 GB in bf16, more
 * than an H100's 80 GB on one GPU (EP1), whatever the batch; at EP4 the
 * routed experts are a quarter (~22.5 GB) plus ~3 GB of attention and
 * embeddings, and 64 requests x 4096 tokens x 131,072 B of KV (32 layers
 * x 8 KV heads x 128 x 2 x 2 B) = 34.4 GB: ~60 GB, fits. */
static void step__predicted_width_that_does_not_fit(void **state)
{
	(void)state;
	const char *model = src_path("plans/models/mixtral-8x7b.yaml");
	const char *h100 = src_path("hardware/hgx-h100.yaml");
	struct cli_result r = cli_run("step", "-m", model, "-H", h100, "--ep", "8", "-r", "64", "-c",
				      "4096", "--measured-step", "30 ms", "--predict-ep", "1,4",
				      "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	const char *ep1 = strstr(r.out, "\"ep\": 1,");
	const char *ep4 = strstr(r.out, "\"ep\": 4,");
	assert_non_null(ep1);
	assert_non_null(ep4);
	const char *fits1 = strstr(ep1, "\"fits\": ");
	const char *fits4 = strstr(ep4, "\"fits\": ");
	assert_true(fits1 && fits1 < ep4);
	assert_true(strncmp(fits1, "\"fits\": false", 13) == 0);
	assert_non_null(fits4);
	assert_true(strncmp(fits4, "\"fits\": true", 12) == 0);
	cli_result_free(&r);

	r = cli_run("step", "-m", model, "-H", h100, "--ep", "8", "-r", "64", "-c", "4096",
		    "--measured-step", "30 ms", "--predict-ep", "1,4", NULL);
	assert_int_equal(r.status, 0);
	const char *p1 = strstr(r.out, "predicted with it (the batch does not fit in HBM at this width):\n"
				       "decode EP1 ");
	assert_non_null(p1);
	assert_non_null(strstr(p1, "short (does not fit)"));
	const char *ratio = strstr(p1, "tokens/s per GPU here / at the measured width: ");
	assert_non_null(ratio);
	assert_true(strstr(ratio, " (not reachable: the batch does not fit)\n") == strchr(ratio, '\n') - 40);
	/* EP4 fits: no note */
	assert_non_null(strstr(r.out, "\npredicted with it:\ndecode EP4 "));
	cli_result_free(&r);
}

/* Sum of the text table's share column (the rows after the "term" header). */
static double share_sum(const char *out, int *rows)
{
	const char *at = strstr(out, "  term ");
	double sum = 0.0;
	*rows = 0;
	for (const char *line = at ? strchr(at, '\n') : NULL; line && line[1] == ' ' && line[2] == ' ';
	     line = strchr(line + 1, '\n')) {
		const char *ms = strstr(line, " ms ");
		if (!ms || ms > strchr(line + 1, '\n')) {
			break;
		}
		char *end = NULL;
		double share = strtod(ms + 4, &end);
		if (*end != '%') {
			break;
		}
		sum += share;
		(*rows)++;
	}
	return sum;
}

/* New-user report: with an overlap the shares added up to ~180% (each term
 * over the overlapped step), and the header said "attention dp0". Shares
 * are now of the sum of terms (they add to 100% within rounding of ten
 * 0.1% figures), hidden terms carry '*', and the header names the layout:
 * 144 GPUs of DP attention are "dp x144", tp:8 over 144 is "tp:8 x18". */
/* A term's row of `step`'s text: its time in ms, and whether it carries '*'. */
static const char *text_term_row(const char *out, const char *name)
{
	char key[40];
	snprintf(key, sizeof(key), "\n  %s ", name);
	const char *row = strstr(out, key);
	assert_non_null(row);
	return row + 1;
}

static double text_term_ms(const char *out, const char *name)
{
	return strtod(text_term_row(out, name) + 2 + strlen(name), NULL);
}

static bool text_term_hidden(const char *out, const char *name)
{
	const char *row = text_term_row(out, name);
	const char *end = strchr(row, '\n');
	/* a kernel table's tag (" [table]", " [factors]") follows the mark */
	const char *tag = strstr(row, " [");
	if (end && tag && tag < end) {
		end = tag;
	}
	return end && end - row >= 2 && end[-1] == '*' && end[-2] == ' ';
}

static void step__text_shares_and_attention_layout(void **state)
{
	(void)state;
	const char *model = src_path("plans/models/deepseek-v3.yaml");
	const char *h800y = src_path("hardware/hgx-h800.yaml");
	struct cli_result r = cli_run("step", "-m", model, "-H", h800y, "--phase", "prefill", "--ep", "32",
				      "-c", "4096", "--overlap", "two_batch", NULL);
	assert_int_equal(r.status, 0);
	int rows = 0;
	assert_near(share_sum(r.out, &rows), 100.0, 0.6);
	assert_int_equal(rows, 10);
	assert_non_null(strstr(r.out, "attention dp x32\n"));
	assert_non_null(strstr(r.out, "'*' marks hidden terms"));
	/* Prefill two_batch pairs attention + projections (dense) of the 58
	 * MoE layers of 61 with dispatch, shared + routed with combine
	 * (SGLang's _compute_moe_deepseek_blog_prefill): the shorter of each
	 * pair carries '*', from the printed times. */
	double attention = text_term_ms(r.out, "attention"), dense_ms = text_term_ms(r.out, "dense");
	double experts = text_term_ms(r.out, "shared") + text_term_ms(r.out, "routed");
	double dispatch = text_term_ms(r.out, "dispatch"), combine_ms = text_term_ms(r.out, "combine");
	double stage = (attention + dense_ms) * 58.0 / 61.0;
	assert_true(text_term_hidden(r.out, "dense") == (stage <= dispatch));
	assert_true(text_term_hidden(r.out, "dispatch") == (dispatch < stage));
	assert_true(text_term_hidden(r.out, "routed") == (experts <= combine_ms));
	assert_true(text_term_hidden(r.out, "combine") == (combine_ms < experts));
	assert_false(text_term_hidden(r.out, "lm_head"));
	cli_result_free(&r);

	r = cli_run("step", "-m", model, "-H", h800y, "--ep", "144", "-r", "64", "-c", "4989", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "attention dp x144\n"));
	assert_null(strstr(r.out, "dp0"));
	assert_near(share_sum(r.out, &rows), 100.0, 0.6);
	assert_null(strstr(r.out, " *\n"));
	cli_result_free(&r);
	r = cli_run("step", "-m", model, "-H", h800y, "--ep", "144", "-r", "64", "-c", "4989",
		    "--attention", "tp:8", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "attention tp:8 x18\n"));
	cli_result_free(&r);
}

/* Issue 23 item 1: a hardware file that names a kernel table prices the
 * step from it by default, and says so; `--kernels none` gives the scalar
 * factors and says so; a GPU without a table falls back and says why.
 * The default must equal naming the same table explicitly (the dense term
 * is then DeepGEMM's gemm_dense rows), and differ from the factors. A
 * missing table is a path:line:col error naming the field. */
static void step__hardware_names_its_kernel_table(void **state)
{
	(void)state;
	/* copies: src_path's buffers are reused by the later calls */
	char model[4200], h800y[4200];
	snprintf(model, sizeof(model), "%s", src_path("plans/models/deepseek-v3.yaml"));
	snprintf(h800y, sizeof(h800y), "%s", src_path("hardware/hgx-h800.yaml"));
	char table[4200];
	snprintf(table, sizeof(table), "%s", src_path("hardware/kernels/h800.csv"));
	struct cli_result def = cli_run("step", "-m", model, "-H", h800y, "--ep", "128", "-r", "128", "-c",
					"4096", "--format", "json", NULL);
	struct cli_result given = cli_run("step", "-m", model, "-H", h800y, "--ep", "128", "-r", "128", "-c",
					  "4096", "--format", "json", "--kernels", table, NULL);
	struct cli_result none = cli_run("step", "-m", model, "-H", h800y, "--ep", "128", "-r", "128", "-c",
					 "4096", "--format", "json", "--kernels", "none", NULL);
	assert_int_equal(def.status, 0);
	assert_int_equal(given.status, 0);
	assert_int_equal(none.status, 0);
	/* named as the hardware file writes it, from any folder */
	assert_non_null(strstr(def.out, "\"kernel_table\": \"kernels/h800.csv\""));
	assert_non_null(strstr(none.out, "\"kernel_table\": \"none: scalar factors (--kernels none)\""));
	assert_near(json_number(def.out, "step_time_s"), json_number(given.out, "step_time_s"), 0.0);
	assert_true(fabs(json_number(def.out, "step_time_s") / json_number(none.out, "step_time_s") - 1.0) > 0.01);
	cli_result_free(&def);
	cli_result_free(&given);
	cli_result_free(&none);
	struct cli_result t = cli_run("step", "-m", model, "-H", h800y, "--ep", "128", "-r", "128", "-c",
				      "4096", "--kernels", "none", NULL);
	assert_non_null(strstr(t.out, "\n  kernel efficiency: scalar factors (--kernels none)\n"));
	cli_result_free(&t);
	t = cli_run("step", "-m", src_path("plans/models/deepseek-v4.1-flash.yaml"), "-H",
		    src_path("hardware/gb200-nvl72.yaml"), "--ep", "64", "-r", "8", "-c", "4096", NULL);
	assert_int_equal(t.status, 0);
	assert_non_null(strstr(t.out, "\n  kernel efficiency: scalar factors: no kernel table for NVIDIA GB200"));
	cli_result_free(&t);
	t = cli_run("step", "-m", src_path("plans/models/deepseek-v4.1-flash.yaml"), "-H",
		    src_path("hardware/gb200-nvl72.yaml"), "--ep", "64", "-r", "8", "-c", "4096", "--format",
		    "json", NULL);
	assert_non_null(strstr(t.out, "\"kernel_table\": \"none: scalar factors (no kernel table for this GPU)\""));
	cli_result_free(&t);
	/* a table with no row for the model's kernels prices nothing, and
	 * says so: V4.1-Flash's experts are not DeepSeek-V3's shape, and the
	 * B200 table has only moe_block and mla_decode rows */
	t = cli_run("step", "-m", src_path("plans/models/deepseek-v4.1-flash.yaml"), "-H",
		    src_path("hardware/hgx-b200.yaml"), "--ep", "64", "-r", "8", "-c", "4096", NULL);
	assert_non_null(strstr(t.out, "\n  kernel efficiency: scalar factors: the table kernels/b200.csv has no "
				      "row for this model's kernels\n"));
	cli_result_free(&t);
	/* the same in the documents: no per-term pricing, and the search says
	 * it of its pools (a second tester's findings) */
	t = cli_run("step", "-m", src_path("plans/models/olmoe-1b-7b.yaml"), "-H", src_path("hardware/hgx-h100.yaml"),
		    "--ep", "8", "-r", "32", "-c", "4096", "--format", "json", NULL);
	assert_int_equal(t.status, 0);
	assert_null(strstr(t.out, "\"pricing\""));
	assert_non_null(strstr(t.out, "\"kernel_table\": \"none: scalar factors (kernels/h100.csv has no row for this model)\""));
	cli_result_free(&t);
	t = cli_run("search", src_path("plans/olmoe-github.yaml"), "--gpus", "16", "--no-placement", "--format", "json",
		    NULL);
	assert_int_equal(t.status, 0);
	assert_non_null(strstr(t.out, "\"kernel_table\": \"none: scalar factors (kernels/h100.csv has no row for this model)\""));
	assert_null(strstr(t.out, "\"kernel_table\": \"kernels/h100.csv\""));
	cli_result_free(&t);
	t = cli_run("step", "-m", model, "-H", h800y, "--ep", "8", "-r", "8", "-c", "100", "--kernels", "", NULL);
	assert_int_equal(t.status, 2);
	cli_result_free(&t);
	char dir[] = "/tmp/moeplan-kt-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char hw[4300];
	snprintf(hw, sizeof(hw), "%s/hw.yaml", dir);
	FILE *f = fopen(hw, "w");
	assert_non_null(f);
	fputs("name: X\npeak_flops: {bf16: 1 PFLOP/s}\nhbm_bytes: 80 GB\nhbm_bandwidth: 3 TB/s\n"
	      "scale_up_domain_gpus: 8\nscale_up_bandwidth: 200 GB/s\nkernels: nope.csv\n", f);
	fclose(f);
	t = cli_run("step", "-m", model, "-H", hw, "--ep", "8", "-r", "8", "-c", "100", NULL);
	assert_int_equal(t.status, 1);
	char want[4600];
	snprintf(want, sizeof(want), "%s:7:10: error: kernels: cannot find the kernel table 'nope.csv'", hw);
	assert_non_null(strstr(t.err, want));
	cli_result_free(&t);
	/* a table that exists but is refused: its own error, and one at the
	 * line that named it */
	char bad[64];
	snprintf(bad, sizeof(bad), "%s/nope.csv", dir);
	f = fopen(bad, "w");
	assert_non_null(f);
	fputs("kernel,m\n", f);
	fclose(f);
	t = cli_run("step", "-m", model, "-H", hw, "--ep", "8", "-r", "8", "-c", "100", NULL);
	assert_int_equal(t.status, 1);
	snprintf(want, sizeof(want), "%s:7:10: error: kernels: the kernel table 'nope.csv' cannot be used", hw);
	assert_non_null(strstr(t.err, want));
	snprintf(want, sizeof(want), "%s:1:1: error: expected the header line", bad);
	assert_non_null(strstr(t.err, want));
	cli_result_free(&t);
	unlink(bad);
	unlink(hw);
	rmdir(dir);
}

/* Seed 004 / DeepSeek's overview: V3 on 32 prefill + 144 decode H800.
 * The plan must accept DeepSeek's deployment: prefill EP32 (fixed by the
 * scenario) fits, and decode EP144 across 18 nodes is evaluated with its
 * step and passes every rule (chosen or outranked, never rejected). Which
 * width the model ranks first is printed, not asserted: README
 * "Predicted vs published" reports it (EP144 with the H800 kernel table
 * hgx-h800.yaml names; EP72 with the scalar factors). */
static void step__plan_accepts_deepseek_h800(void **state)
{
	(void)state;
	struct cli_result r = cli_run("plan", src_path("plans/deepseek-v3-h800.yaml"), "-q", "-t",
				      "60", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	const char *prefill = strstr(r.out, "\"prefill\": {");
	const char *decode = strstr(r.out, "\"decode\": {");
	assert_non_null(prefill);
	assert_non_null(decode);
	assert_int_equal((int)json_number(prefill, "ep"), 32);
	const char *widths = strstr(decode, "\"widths\": [");
	assert_non_null(widths);
	const char *ep144 = strstr(widths, "\"ep\": 144,");
	assert_non_null(ep144);
	const char *verdict = strstr(ep144, "\"verdict\": \"");
	assert_non_null(verdict);
	verdict += strlen("\"verdict\": \"");
	assert_true(strncmp(verdict, "chosen", 6) == 0 || strncmp(verdict, "outranked", 9) == 0);
	/* New-user report: a 1.29 s step read "step 1.29e+03 ms" in the
	 * reasons; times are "ms" below 1 s and "s" above. */
	assert_null(strstr(r.out, "e+03 ms"));
	print_message("decode chose EP%d (published EP144); EP144's verdict: %.9s\n",
		      (int)json_number(decode, "ep"), verdict);
	/* One evaluation behind the pick: the chosen width's reason quotes
	 * the phase's own step (it once quoted 3,883 tokens/s per GPU from a
	 * linear correction while the phase's step said 3,958). */
	const char *chosen = strstr(decode, "\"verdict\": \"chosen\"");
	assert_non_null(chosen);
	const char *reason = strstr(chosen, "\"reason\": \"");
	assert_non_null(reason);
	reason = strchr(reason + strlen("\"reason\": \""), ':');
	assert_non_null(reason);
	double quoted = strtod(reason + 1, NULL);
	const char *step = strstr(decode, "\"step\": {");
	assert_non_null(step);
	double tps = json_number(step, "tokens_per_s_per_gpu");
	print_message("chosen width's reason: %.4g output tokens/s per GPU; phase step: %.6g\n", quoted,
		      tps);
	assert_true(fabs(quoted - tps) <= 0.5e-3 * tps + 0.5);
	cli_result_free(&r);
}

/* A small model on a GPU so fast that every priced part is below 1e-20 s:
 * the step is its fixed parts (step.h, "Fixed parts"), by hand, with
 * kernel_fixed 3 us, moe_fixed 20 us + 1 us per local expert, overhead
 * 0.5 ms, EP1 (no exchange). Model: 2 MoE + 1 dense layers, one shared
 * expert, 8 routed experts (8 slots, all local), one drafter stage of 4
 * experts (4 slots). Kernel counts (step.h MP_KERNELS_*, from SGLang's
 * deepseek_v2.py): MLA core 3, projections 13; GQA core 2, projections 5;
 * norms 2 per layer, router 2, MLP 5, LM head 3, sampler 3, drafter
 * stage 34.
 *   MLA attention: 3 layers x 3 = 9 kernels x 3 us = 27 us
 *   MLA dense: 3 x (13 + 2) + 2 x 2 + 1 x 5 = 54 kernels = 162 us
 *   GQA attention: 3 x 2 = 6 kernels = 18 us
 *   GQA dense: 3 x (5 + 2) + 4 + 5 = 30 kernels = 90 us
 *   shared: 2 MoE layers x 5 = 10 kernels = 30 us
 *   lm_head: 3 + 3 = 6 kernels = 18 us (no vocabulary: the kernels run)
 *   routed: 2 x (20 + 1 x 8) = 56 us
 *   drafter: 34 x 3 + (20 + 1 x 4) = 126 us
 *   overhead 500 us
 * MLA step (overlap none): 27 + 162 + 30 + 18 + 56 + 126 + 500 = 919 us;
 * GQA: 18 + 90 + 30 + 18 + 56 + 126 + 500 = 838 us. two_batch runs every
 * kernel once per micro-batch: each term's fixed part doubles (overhead
 * once). A busiest factor of 2 does not scale the routed fixed part. */
static void tiny(struct mp_model *m, enum mp_attention_kind kind)
{
	mp_model_init(m);
	m->hidden_size = 64;
	m->moe_layers = 2;
	m->dense_layers = 1;
	m->routed_experts = 8;
	m->shared_experts = 1;
	m->top_k = 2;
	m->expert_intermediate_size = 32;
	m->shared_expert_intermediate_size = 32;
	m->matrices_per_expert = 3;
	m->dense_weight_bytes = 1000;
	m->attention.kind = kind;
	m->attention.kv_layers = 3;
	m->attention.heads = 2;
	m->attention.kv_heads = 1;
	m->attention.head_dim = 16;
	m->attention.kv_lora_rank = 16;
	m->attention.rope_dim = 8;
	m->attention.kv_bytes_per_element = 2.0;
	m->drafter.moe_stages = 1;
	m->drafter.routed_experts = 4;
	m->drafter.top_k = 1;
	m->drafter.hidden_size = 64;
	m->drafter.expert_intermediate_size = 32;
	m->drafter.matrices_per_expert = 3;
	m->drafter.routed_format = MP_FORMAT_BF16;
}

static void step__fixed_latencies_by_hand(void **state)
{
	(void)state;
	struct mp_hardware hw;
	mp_hardware_init(&hw);
	hw.peak_flops[MP_COMPUTE_BF16] = 1e40;
	hw.hbm_bw_bytes_per_s = 1e40;
	hw.hbm_bytes = 1ull << 40;
	struct mp_efficiency e = {
		.hbm = 1.0,
		.gemm = 1.0,
		.attention = 1.0,
		.scale_up = 1.0,
		.scale_out = 1.0,
		.exchange_latency_s = 28e-6,
		.step_overhead_s = 500e-6,
		.kernel_fixed_s = 3e-6,
		.moe_fixed_s = 20e-6,
		.moe_fixed_per_expert_s = 1e-6,
	};
	struct {
		enum mp_attention_kind kind;
		double attention, dense, step;
	} cases[] = {
		{MP_ATTENTION_MLA, 27e-6, 162e-6, 919e-6},
		{MP_ATTENTION_GQA, 18e-6, 90e-6, 838e-6},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mp_model m;
		tiny(&m, cases[i].kind);
		struct mp_step_input in = decode_input(1, 8, 1, 16);
		in.width.drafter_slots = 4;
		in.efficiency = &e;
		struct mp_step s;
		assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), 0);
		const double want[MP_TERM_COUNT] = {
			[MP_TERM_ATTENTION] = cases[i].attention,
			[MP_TERM_DENSE] = cases[i].dense,
			[MP_TERM_SHARED] = 30e-6,
			[MP_TERM_LM_HEAD] = 18e-6,
			[MP_TERM_ROUTED] = 56e-6,
			[MP_TERM_DRAFTER] = 126e-6,
			[MP_TERM_OVERHEAD] = 500e-6,
		};
		for (int t = 0; t < MP_TERM_COUNT; t++) {
			assert_near(s.terms[t].time_s, want[t], 1e-12);
			assert_near(s.terms[t].fixed_s, want[t], 1e-12);
			if (want[t] > 0.0) {
				assert_int_equal(s.terms[t].bound, MP_BOUND_FIXED);
			}
		}
		assert_near(s.step_time_s, cases[i].step, 1e-12);
		/* two_batch: every term's kernels twice, the overhead once. */
		in.overlap = MP_OVERLAP_TWO_BATCH;
		assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), 0);
		assert_near(s.terms[MP_TERM_ROUTED].fixed_s, 112e-6, 1e-12);
		assert_near(s.terms[MP_TERM_ATTENTION].fixed_s, 2.0 * cases[i].attention, 1e-12);
		assert_near(s.terms[MP_TERM_OVERHEAD].fixed_s, 500e-6, 1e-12);
		/* The busiest GPU's load scales its priced work, not its kernels. */
		in.overlap = MP_OVERLAP_NONE;
		in.busiest_factor = 2.0;
		assert_int_equal(mp_step_evaluate(&m, &hw, &in, &s), 0);
		assert_near(s.terms[MP_TERM_ROUTED].time_s, 56e-6, 1e-12);
		mp_model_finish(&m);
	}
	/* The defaults (model.h): 41.22 us / 16 kernels = 2.57625 us per
	 * kernel; 22 us and 1.5 us per local expert per MoE block. */
	struct mp_efficiency d;
	mp_step_efficiency(&hw, &d);
	assert_near(d.kernel_fixed_s, 2.57625e-6, 1e-18);
	assert_near(d.moe_fixed_s, 22e-6, 1e-18);
	assert_near(d.moe_fixed_per_expert_s, 1.5e-6, 1e-18);
}

/* The fixed times as a hardware file's `efficiency:` fields
 * (tests/data/step/hw-fixed.yaml: 3 us, 20 us, 1 us), in the step's JSON
 * efficiency block and each term's fixed_s; V3 decode at EP8 of 256
 * slots (32 local), overlap none: routed fixed 58 x (20 + 1 x 32) us =
 * 3.016 ms; attention 61 layers x 3 kernels x 3 us = 0.549 ms. The text
 * output shows the fixed part of each term. (Range errors:
 * tests/data/bad/hw-*-fixed-*.yaml, test-loader.) */
static void step__fixed_fields_parse_and_print(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	load("plans/models/deepseek-v3.yaml", "tests/data/step/hw-fixed.yaml", &m, &hw);
	assert_near(hw.efficiency.kernel_fixed_s, 3e-6, 1e-18);
	assert_near(hw.efficiency.moe_fixed_s, 20e-6, 1e-18);
	assert_near(hw.efficiency.moe_fixed_per_expert_s, 1e-6, 1e-18);
	mp_model_finish(&m);
	mp_hardware_finish(&hw);
	const char *model = src_path("plans/models/deepseek-v3.yaml");
	const char *hwy = src_path("tests/data/step/hw-fixed.yaml");
	struct cli_result r = cli_run("step", "-m", model, "-H", hwy, "--ep", "8", "--slots", "256",
				      "--drafter-slots", "256", "-r", "4", "-c", "1024", "--format",
				      "json", NULL);
	assert_int_equal(r.status, 0);
	assert_near(json_number(r.out, "kernel_fixed_s"), 3e-6, 1e-15);
	assert_near(json_number(r.out, "moe_fixed_s"), 20e-6, 1e-15);
	assert_near(json_number(r.out, "moe_fixed_per_expert_s"), 1e-6, 1e-15);
	const char *routed = strstr(r.out, "\"name\": \"routed\"");
	const char *attention = strstr(r.out, "\"name\": \"attention\"");
	assert_non_null(routed);
	assert_non_null(attention);
	assert_near(json_number(routed, "fixed_s"), 3.016e-3, 1e-12);
	assert_near(json_number(attention, "fixed_s"), 0.549e-3, 1e-12);
	cli_result_free(&r);
	r = cli_run("step", "-m", model, "-H", hwy, "--ep", "8", "--slots", "256", "--drafter-slots",
		    "256", "-r", "4", "-c", "1024", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "fixed"));
	const char *row = strstr(r.out, "\n  routed ");
	assert_non_null(row);
	const char *eol = strchr(row + 1, '\n');
	assert_non_null(eol);
	char line[256];
	snprintf(line, sizeof(line), "%.*s", (int)(eol - row - 1), row + 1);
	if (!strstr(line, " 3.016 ms ")) {
		fail_msg("routed row lacks its fixed part 3.016 ms: '%s'", line);
	}
	cli_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(step__kv_bytes_per_decode_step),
		cmocka_unit_test(step__touched_expert_bytes_at_small_batch),
		cmocka_unit_test(step__exchange_bytes_per_kernel_model),
		cmocka_unit_test(step__busiest_gpu_scales_what_it_receives),
		cmocka_unit_test(step__deepep_low_latency_table),
		cmocka_unit_test(step__deepep_normal_table),
		cmocka_unit_test(step__seed_article_ep64_vs_ep8),
		cmocka_unit_test(step__two_batch_loses_small_wins_large),
		cmocka_unit_test(step__prefill_ttft_is_whole_chunks),
		cmocka_unit_test(step__rejects_bad_input),
		cmocka_unit_test(step__cli_keys_and_exit_codes),
		cmocka_unit_test(step__predicted_width_that_does_not_fit),
		cmocka_unit_test(step__plan_accepts_deepseek_h800),
		cmocka_unit_test(step__hardware_names_its_kernel_table),
		cmocka_unit_test(step__text_shares_and_attention_layout),
		cmocka_unit_test(step__fixed_latencies_by_hand),
		cmocka_unit_test(step__fixed_fields_parse_and_print),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
