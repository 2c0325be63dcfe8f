/* Tests of the input layer: presets against the article and the
 * reference facts, Hugging Face configs against the presets, every broken
 * fixture in tests/data/bad/ against its expected one-line message, CSV
 * and JSON loads, placement maps, units. Runs in MOEPLAN_SOURCE_ROOT so
 * that paths (and messages) are relative to the repository. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "moeplan/loader.h"

#include "cli-run.h"

/* |a - b| <= tol * |b| */
static void assert_close(double a, double b, double tol)
{
	if (!(fabs(a - b) <= tol * fabs(b))) {
		fail_msg("%.17g is not within %g of %.17g", a, tol, b);
	}
}

/* The first diagnostic as the CLI prints it. */
static char *first_diag(const struct mp_diags *diags)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	assert_non_null(f);
	if (diags->count > 0) {
		mp_diag_print(&diags->items[0], f);
	}
	fclose(f);
	size_t n = strlen(buf);
	if (n > 0 && buf[n - 1] == '\n') {
		buf[n - 1] = '\0';
	}
	return buf;
}

static void print_diags(const struct mp_diags *diags)
{
	for (size_t i = 0; i < diags->count; i++) {
		mp_diag_print(&diags->items[i], stderr);
	}
}

static int to_source_root(void **state)
{
	(void)state;
	const char *root = getenv("MOEPLAN_SOURCE_ROOT");
	if (root && chdir(root) != 0) {
		return -1;
	}
	return 0;
}

static void load_model_ok(const char *path, struct mp_model *m)
{
	struct mp_diags d;
	mp_diags_init(&d);
	mp_model_init(m);
	int rc = mp_load_model(path, m, &d);
	print_diags(&d);
	assert_int_equal(rc, 0);
	assert_int_equal(d.count, 0);
	mp_diags_finish(&d);
}

static void load_hardware_ok(const char *path, struct mp_hardware *hw)
{
	struct mp_diags d;
	mp_diags_init(&d);
	mp_hardware_init(hw);
	int rc = mp_load_hardware(path, hw, &d);
	print_diags(&d);
	assert_int_equal(rc, 0);
	mp_diags_finish(&d);
}

/* ----------------------------------------------------- article presets */

static void loader__article_model(void **state)
{
	(void)state;
	struct mp_model m;
	load_model_ok("plans/models/deepseek-v4.1-flash.yaml", &m);
	/* "V4.1-Flash has 384 routed experts and one shared expert in each of
	 * its 40 layers, and routes every token to 6 of the 384. Each routed
	 * expert is a SwiGLU feed-forward block with three matrices of shape
	 * 5120 x 2304" */
	assert_int_equal(m.moe_layers, 40);
	assert_int_equal(m.dense_layers, 0);
	assert_int_equal(m.routed_experts, 384);
	assert_int_equal(m.shared_experts, 1);
	assert_int_equal(m.top_k, 6);
	assert_int_equal(m.hidden_size, 5120);
	assert_int_equal(m.expert_intermediate_size, 2304);
	assert_int_equal(m.shared_expert_intermediate_size, 2304);
	assert_int_equal(m.matrices_per_expert, 3);
	/* "Routed experts are stored in MXFP4", the shared expert "in FP8";
	 * "tokens arrive in FP8 ... results leave in BF16"; FP8 peak. */
	assert_int_equal(m.routed_format, MP_FORMAT_MXFP4);
	assert_int_equal(m.shared_format, MP_FORMAT_FP8);
	assert_int_equal(m.expert_compute, MP_COMPUTE_FP8);
	assert_int_equal(m.dispatch_format, MP_FORMAT_FP8);
	assert_int_equal(m.combine_format, MP_FORMAT_BF16);
	/* "890 bytes of KV cache per token across the whole model" */
	assert_int_equal(m.attention.kind, MP_ATTENTION_DIRECT);
	assert_close(mp_model_kv_bytes_per_token(&m), 890.0, 0.0);
	/* "three small MoE stages of its own, 128 experts each with top-3" */
	assert_int_equal(m.drafter.moe_stages, 3);
	assert_int_equal(m.drafter.routed_experts, 128);
	assert_int_equal(m.drafter.top_k, 3);
	assert_int_equal(m.drafter.routed_format, MP_FORMAT_MXFP4);

	/* W = 3 x 5120 x 2304 x 4.25 / 8 = 18,800,640 B: "one expert
	 * occupies W = 18.8 MB". */
	const double params = (double)m.matrices_per_expert * m.hidden_size * m.expert_intermediate_size;
	const double w = params * mp_format_bits(m.routed_format, 0) / 8.0;
	assert_close(w, 18800640.0, 1e-12);
	/* "its routed experts total 289 GB in MXFP4" */
	assert_close(w * m.routed_experts * m.moe_layers / 1e9, 289.0, 0.002);
	/* "at EP2 each GPU holds 196 expert slots, about 147 GB" */
	assert_close(196.0 * w * m.moe_layers / 1e9, 147.0, 0.003);
	/* "52 experts per GPU against 7 in the main model and 20 against 3 in
	 * the drafter, 34.8 GB per step": the drafter experts weigh W too. */
	const double wd = (double)m.drafter.matrices_per_expert * m.drafter.hidden_size *
			  m.drafter.expert_intermediate_size * mp_format_bits(m.drafter.routed_format, 0) / 8.0;
	assert_close(((52.0 - 7.0) * w * m.moe_layers + (20.0 - 3.0) * wd * m.drafter.moe_stages) / 1e9,
		     34.8, 0.001);
	/* The estimate written in the preset: prefill EP2 fits a B200's
	 * 180 GB (hand sum: 147.4 + 1.42 shared + 8.77 dense + 3.61 drafter
	 * slots + 0.61 drafter other = 161.8 GB). */
	const double shared = params * mp_format_bits(m.shared_format, 0) / 8.0 * m.moe_layers;
	const double ep2 = 196.0 * w * m.moe_layers + shared + (double)m.dense_weight_bytes +
			   64.0 * wd * m.drafter.moe_stages + (double)m.drafter.other_weight_bytes;
	assert_close(ep2 / 1e9, 161.8, 0.001);
	mp_model_finish(&m);
}

static void loader__article_hardware(void **state)
{
	(void)state;
	struct mp_hardware hw;
	load_hardware_ok("hardware/gb200-nvl72.yaml", &hw);
	/* "5 PFLOP/s dense FP8, 8 TB/s" (article ref. 12); memory as the driver
	 * reports it (reference deployments.md section 4: GB200 189,471 MiB),
	 * not the article's marketing "186 GB usable" (issue 12). */
	assert_close(hw.peak_flops[MP_COMPUTE_FP8], 5e15, 0.0);
	assert_close(hw.hbm_bw_bytes_per_s, 8e12, 0.0);
	assert_true(hw.hbm_bytes == 189471ull * 1048576ull);
	/* "its ridge sits at R = 625 FLOPs per byte" */
	assert_close(hw.peak_flops[MP_COMPUTE_FP8] / hw.hbm_bw_bytes_per_s, 625.0, 0.0);
	assert_close(hw.peak_flops[MP_COMPUTE_FP4], 1e16, 0.0);
	assert_close(hw.peak_flops[MP_COMPUTE_BF16], 2.5e15, 0.0);
	assert_int_equal(hw.scale_up_domain_gpus, 72);
	assert_int_equal(hw.gpus_per_node, 4);
	assert_close(hw.scale_up_bw_bytes_per_s, 900e9, 0.0);
	assert_close(hw.scale_out_bw_bytes_per_s, 50e9, 0.0);
	mp_hardware_finish(&hw);

	load_hardware_ok("hardware/hgx-b200.yaml", &hw);
	assert_close(hw.peak_flops[MP_COMPUTE_FP8], 4.5e15, 0.0);
	assert_close(hw.hbm_bw_bytes_per_s, 8e12, 0.0);
	assert_true(hw.hbm_bytes == 183359ull * 1048576ull); /* ~183,359 MiB reported */
	assert_int_equal(hw.scale_up_domain_gpus, 8);
	assert_int_equal(hw.gpus_per_node, 8);
	/* "three times the 170 that marks the ridge on the 8-GPU B200
	 * machines": t* = R W / (F - R a) with W = 18,800,640 B,
	 * F = 2 x 3 x 5120 x 2304 FLOP, a = 15,360 B. */
	const double r = hw.peak_flops[MP_COMPUTE_FP8] / hw.hbm_bw_bytes_per_s;
	const double t = r * 18800640.0 / (2.0 * 3 * 5120 * 2304 - r * 15360.0);
	assert_int_equal((int)lround(t), 170);
	mp_hardware_finish(&hw);
}

/* Reference figures (../shared/reference/presets/hardware/, one YAML per GPU). */
static void loader__hardware_presets(void **state)
{
	(void)state;
	static const struct {
		const char *path;
		double fp4, fp8, bf16, int8, hbm, bw, up;
		unsigned domain;
	} want[] = {
		/* H100 and H200: nvidia-smi totals 81,559 and 143,771 MiB. */
		{"hardware/hgx-h100.yaml", 0, 1978.9e12, 989.4e12, 0, 81559.0 * 1048576, 3.35e12, 450e9, 8},
		{"hardware/hgx-h200.yaml", 0, 1978.9e12, 989.4e12, 0, 143771.0 * 1048576, 4.8e12, 450e9, 8},
		/* H800: H100 compute and memory, NVLink 400 GB/s bidirectional
		 * (DeepSeek's overview, deployments.md section 1). */
		{"hardware/hgx-h800.yaml", 0, 1978.9e12, 989.4e12, 0, 81559.0 * 1048576, 3.35e12, 200e9, 8},
		{"hardware/h20.yaml", 0, 296e12, 148e12, 296e12, 96e9, 4e12, 450e9, 8},
		{"hardware/mi300x.yaml", 0, 2614.9e12, 1307.4e12, 0, 192e9, 5.3e12, 448e9, 8},
		{"hardware/mi355x.yaml", 10.0663e15, 5.0332e15, 2.5166e15, 0, 288e9, 8e12, 537.6e9, 8},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct mp_hardware hw;
		load_hardware_ok(want[i].path, &hw);
		assert_close(hw.peak_flops[MP_COMPUTE_FP4], want[i].fp4, 1e-12);
		assert_close(hw.peak_flops[MP_COMPUTE_FP8], want[i].fp8, 1e-12);
		assert_close(hw.peak_flops[MP_COMPUTE_BF16], want[i].bf16, 1e-12);
		assert_close(hw.peak_flops[MP_COMPUTE_INT8], want[i].int8, 1e-12);
		assert_close((double)hw.hbm_bytes, want[i].hbm, 0.0);
		assert_close(hw.hbm_bw_bytes_per_s, want[i].bw, 1e-12);
		assert_close(hw.scale_up_bw_bytes_per_s, want[i].up, 1e-12);
		assert_int_equal(hw.scale_up_domain_gpus, want[i].domain);
		assert_close(hw.scale_out_bw_bytes_per_s, 50e9, 0.0);
		assert_non_null(hw.name);
		mp_hardware_finish(&hw);
	}
}

/* Shapes and KV bytes per token from the reference table
 * (../shared/reference/README.md section 3, column "KV B/token all
 * layers (BF16)") or by hand for the two models it lacks. */
static void loader__model_presets(void **state)
{
	(void)state;
	static const struct {
		const char *path;
		unsigned h, moe, dense, experts, shared, k, inter;
		double kv;
	} want[] = {
		{"plans/models/deepseek-v3.yaml", 7168, 58, 3, 256, 1, 8, 2048, 70272},
		{"plans/models/kimi-k2.yaml", 7168, 60, 1, 384, 1, 8, 2048, 70272},
		{"plans/models/qwen3-235b-a22b.yaml", 4096, 94, 0, 128, 0, 8, 1536, 192512},
		{"plans/models/qwen3-30b-a3b.yaml", 2048, 48, 0, 128, 0, 8, 768, 98304},
		{"plans/models/mixtral-8x7b.yaml", 4096, 32, 0, 8, 0, 2, 14336, 131072},
		{"plans/models/gpt-oss-120b.yaml", 2880, 36, 0, 128, 0, 4, 2880, 73728},
		{"plans/models/llama4-maverick.yaml", 5120, 24, 24, 128, 1, 1, 8192, 196608},
		/* 2 x 16 KV heads x 128 x 2 B x 16 layers */
		{"plans/models/olmoe-1b-7b.yaml", 2048, 16, 0, 64, 0, 8, 1024, 131072},
		/* 2 x 16 KV heads x 128 x 2 B x 24 layers */
		{"plans/models/qwen1.5-moe-a2.7b.yaml", 2048, 24, 0, 60, 1, 4, 1408, 196608},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct mp_model m;
		load_model_ok(want[i].path, &m);
		assert_int_equal(m.hidden_size, want[i].h);
		assert_int_equal(m.moe_layers, want[i].moe);
		assert_int_equal(m.dense_layers, want[i].dense);
		assert_int_equal(m.routed_experts, want[i].experts);
		assert_int_equal(m.shared_experts, want[i].shared);
		assert_int_equal(m.top_k, want[i].k);
		assert_int_equal(m.expert_intermediate_size, want[i].inter);
		assert_close(mp_model_kv_bytes_per_token(&m), want[i].kv, 0.0);
		assert_true(m.dense_weight_bytes > 0);
		mp_model_finish(&m);
	}
	/* Qwen1.5-MoE: "4 shared experts merged into one" of 4 x 1408. */
	struct mp_model m;
	load_model_ok("plans/models/qwen1.5-moe-a2.7b.yaml", &m);
	assert_int_equal(m.shared_expert_intermediate_size, 4 * 1408);
	mp_model_finish(&m);
	/* gpt-oss: 18 of 36 layers slide over 128 tokens. At a context of
	 * 1000 tokens a request holds 2 x 8 x 64 x 2 B x (18 x 1000 + 18 x 128). */
	load_model_ok("plans/models/gpt-oss-120b.yaml", &m);
	assert_close(mp_model_kv_bytes_per_request(&m, 1000.0), 2048.0 * (18 * 1000 + 18 * 128), 1e-12);
	assert_int_equal(m.routed_format, MP_FORMAT_MXFP4);
	mp_model_finish(&m);
	/* DeepSeek-V3: group-limited routing, 8 groups, top 4 (config.json). */
	load_model_ok("plans/models/deepseek-v3.yaml", &m);
	assert_int_equal(m.n_groups, 8);
	assert_int_equal(m.topk_groups, 4);
	assert_int_equal(m.routed_format, MP_FORMAT_FP8_BLOCK);
	mp_model_finish(&m);
}

/* ---------------------------------------------------- Hugging Face */

static void assert_same_model(const struct mp_model *a, const struct mp_model *b)
{
	assert_int_equal(a->hidden_size, b->hidden_size);
	assert_int_equal(a->moe_layers, b->moe_layers);
	assert_int_equal(a->dense_layers, b->dense_layers);
	assert_int_equal(a->routed_experts, b->routed_experts);
	assert_int_equal(a->shared_experts, b->shared_experts);
	assert_int_equal(a->top_k, b->top_k);
	assert_int_equal(a->expert_intermediate_size, b->expert_intermediate_size);
	assert_int_equal(a->shared_expert_intermediate_size, b->shared_expert_intermediate_size);
	assert_int_equal(a->matrices_per_expert, b->matrices_per_expert);
	assert_int_equal(a->n_groups, b->n_groups);
	assert_int_equal(a->topk_groups, b->topk_groups);
	assert_int_equal(a->routed_format, b->routed_format);
	assert_int_equal(a->shared_format, b->shared_format);
	assert_int_equal(a->expert_compute, b->expert_compute);
	assert_int_equal(a->dispatch_format, b->dispatch_format);
	assert_int_equal(a->combine_format, b->combine_format);
	assert_true(a->dense_weight_bytes == b->dense_weight_bytes);
	assert_int_equal(a->attention.kind, b->attention.kind);
	assert_int_equal(a->attention.kv_layers, b->attention.kv_layers);
	assert_int_equal(a->attention.kv_lora_rank, b->attention.kv_lora_rank);
	assert_int_equal(a->attention.rope_dim, b->attention.rope_dim);
	assert_int_equal(a->attention.kv_heads, b->attention.kv_heads);
	assert_int_equal(a->attention.head_dim, b->attention.head_dim);
	assert_int_equal(a->attention.sliding_window, b->attention.sliding_window);
	assert_int_equal(a->attention.sliding_layers, b->attention.sliding_layers);
	assert_close(a->attention.kv_bytes_per_element, b->attention.kv_bytes_per_element, 0.0);
	assert_close(mp_model_kv_bytes_per_token(a), mp_model_kv_bytes_per_token(b), 0.0);
	assert_int_equal(a->drafter.moe_stages, b->drafter.moe_stages);
	if (a->drafter.moe_stages) {
		assert_int_equal(a->drafter.routed_experts, b->drafter.routed_experts);
		assert_int_equal(a->drafter.top_k, b->drafter.top_k);
		assert_int_equal(a->drafter.routed_format, b->drafter.routed_format);
		assert_true(a->drafter.other_weight_bytes == b->drafter.other_weight_bytes);
	}
}

/* The presets were written from the reference facts, with the replicated
 * bytes computed by a separate script; each Hugging Face config must read
 * back to the same model. */
static void loader__hf_config_matches_preset(void **state)
{
	(void)state;
	static const char *const pairs[][2] = {
		{"tests/data/hf/deepseek-v3.config.json", "plans/models/deepseek-v3.yaml"},
		{"tests/data/hf/qwen3-30b-a3b.config.json", "plans/models/qwen3-30b-a3b.yaml"},
		{"tests/data/hf/qwen1.5-moe-a2.7b.config.json", "plans/models/qwen1.5-moe-a2.7b.yaml"},
		{"tests/data/hf/mixtral-8x7b.config.json", "plans/models/mixtral-8x7b.yaml"},
		{"tests/data/hf/olmoe-1b-7b.config.json", "plans/models/olmoe-1b-7b.yaml"},
		{"tests/data/hf/gpt-oss-120b.config.json", "plans/models/gpt-oss-120b.yaml"},
		{"tests/data/hf/llama4-maverick.config.json", "plans/models/llama4-maverick.yaml"},
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct mp_model hf;
		struct mp_model preset;
		load_model_ok(pairs[i][0], &hf);
		load_model_ok(pairs[i][1], &preset);
		assert_same_model(&hf, &preset);
		mp_model_finish(&hf);
		mp_model_finish(&preset);
	}
}

/* The replicated-weight estimate for Qwen3-30B-A3B by hand:
 * attention per layer q 2048 x 32 x 128 + k, v 2 x 2048 x 4 x 128 +
 * o 32 x 128 x 2048 = 18,874,368, x 48 layers = 905,969,664; router
 * 48 x 128 x 2048 = 12,582,912; embedding + head 2 x 151,936 x 2048 =
 * 622,329,856; 1,540,882,432 BF16 parameters = 3,081,764,864 bytes. */
static void loader__hf_dense_estimate(void **state)
{
	(void)state;
	struct mp_model m;
	load_model_ok("tests/data/hf/qwen3-30b-a3b.config.json", &m);
	assert_true(m.dense_weight_bytes == 3081764864ull);
	assert_int_equal(m.attention.kind, MP_ATTENTION_GQA);
	/* 2 x 4 x 128 x 2 B x 48 = 98,304 (reference table) */
	assert_close(m.kv_bytes_per_token, 98304.0, 0.0);
	mp_model_finish(&m);
	/* DeepSeek-V3 MLA: (512 + 64) x 2 B x 61 = 70,272; FP8 block weights. */
	load_model_ok("tests/data/hf/deepseek-v3.config.json", &m);
	assert_close(m.kv_bytes_per_token, 70272.0, 0.0);
	assert_int_equal(m.routed_format, MP_FORMAT_FP8_BLOCK);
	assert_int_equal(m.expert_compute, MP_COMPUTE_FP8);
	assert_int_equal(m.moe_layers, 58);
	assert_int_equal(m.dense_layers, 3);
	assert_int_equal(m.drafter.moe_stages, 1);
	mp_model_finish(&m);
}

static char *write_text_file(const char *text, const char *suffix);

/* Issue 26: GLM-4.5-Air (tests/data/hf/glm-4.5-air.config.json) read by
 * hand. Layers: first_k_dense_replace 1 of 46 -> 1 dense (layer 0), 45
 * MoE (1..45). One shared expert of moe_intermediate_size 1408. GQA: 96
 * heads, 8 KV heads of 128: KV 2 x 8 x 128 x 2 B x 46 = 188,416 B/token.
 * Replicated weights, BF16: attention per layer 4096 x 96 x 128 + 2 x
 * 4096 x 8 x 128 + 96 x 128 x 4096 = 109,051,904, x 46 = 5,016,387,584;
 * dense FFN 3 x 4096 x 10944 = 134,479,872; router 4096 x 128 x 45 =
 * 23,592,960; embedding + untied head 2 x 151,552 x 4096 =
 * 1,241,513,984; 6,415,974,400 parameters = 12,831,948,800 B (biases
 * and norms left out). MTP: 1 stage of (109,051,904 + 2 x 4096^2) x 2 B +
 * shared 3 x 4096 x 1408 x 2 B + router 4096 x 128 x 2 B = 320,864,256 B.
 * Before: glm4_moe was read as 46 MoE layers without a shared expert. */
static void loader__hf_glm45_air(void **state)
{
	(void)state;
	struct mp_model m;
	load_model_ok("tests/data/hf/glm-4.5-air.config.json", &m);
	assert_int_equal(m.moe_layers, 45);
	assert_int_equal(m.dense_layers, 1);
	assert_int_equal(mp_model_moe_layer_id(&m, 0), 1);
	assert_int_equal(mp_model_moe_layer_id(&m, 44), 45);
	assert_int_equal(m.routed_experts, 128);
	assert_int_equal(m.top_k, 8);
	assert_int_equal(m.shared_experts, 1);
	assert_int_equal(m.shared_expert_intermediate_size, 1408);
	assert_int_equal(m.expert_intermediate_size, 1408);
	assert_int_equal(m.attention.kind, MP_ATTENTION_GQA);
	assert_close(m.kv_bytes_per_token, 188416.0, 0.0);
	assert_true(m.dense_weight_bytes == 12831948800ull);
	assert_int_equal(m.drafter.moe_stages, 1);
	assert_true(m.drafter.other_weight_bytes == 320864256ull);
	mp_model_finish(&m);
}

/* Count the warnings (code 0) whose message contains text. */
static size_t warnings_with(const struct mp_diags *d, const char *text)
{
	size_t n = 0;
	for (size_t i = 0; i < d->count; i++) {
		if (d->items[i].code == 0 && strstr(d->items[i].message, text)) {
			n++;
		}
	}
	return n;
}

static char *hf_variant(const char *from, const char *to)
{
	FILE *f = fopen("tests/data/hf/glm-4.5-air.config.json", "r");
	assert_non_null(f);
	char text[4096];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	char out[4200];
	char *at = strstr(text, from);
	assert_non_null(at);
	snprintf(out, sizeof(out), "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	return write_text_file(out, ".json");
}

/* Issue 26: an unknown model_type is named in a warning and read with the
 * generic rules, which still find GLM's shared expert and dense layer;
 * a key that changes the model but is not read (MTP layers outside the
 * DeepSeek family) is named with what the model lacks. The load succeeds
 * (rc 0) and every record is a warning. */
static void loader__hf_unknown_type_warns(void **state)
{
	(void)state;
	char *path = hf_variant("\"model_type\": \"glm4_moe\"", "\"model_type\": \"my_moe\"");
	char *path2 = NULL;
	struct mp_model m;
	struct mp_diags d;
	mp_model_init(&m);
	mp_diags_init(&d);
	/* the architecture would name the family: drop it too */
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char text[4096];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	char *arch = strstr(text, "Glm4MoeForCausalLM");
	assert_non_null(arch);
	memcpy(arch, "MyMoe", 5);
	path2 = write_text_file(text, ".json");
	int rc = mp_load_model(path2, &m, &d);
	assert_int_equal(rc, 0);
	assert_int_equal(warnings_with(&d, "model_type 'my_moe' is not one moeplan knows"), 1);
	assert_int_equal(warnings_with(&d, "num_nextn_predict_layers: not read for model_type "
					   "'my_moe': the MTP layers' weights are not counted"), 1);
	assert_int_equal(d.count, 2);
	assert_int_equal(m.moe_layers, 45);
	assert_int_equal(m.dense_layers, 1);
	assert_int_equal(m.shared_experts, 1);
	assert_int_equal(m.shared_expert_intermediate_size, 1408);
	assert_int_equal(m.drafter.moe_stages, 0);
	/* printed as warnings */
	char *line = first_diag(&d);
	assert_non_null(strstr(line, ": warning: model_type 'my_moe'"));
	free(line);
	mp_model_finish(&m);
	mp_diags_finish(&d);
	unlink(path);
	unlink(path2);
	free(path);
	free(path2);
}

/* Issue 26: a known family with a key its reading does not take: Mixtral
 * with MTP layers and a Qwen config with use_sliding_window: each is
 * named; the files still load. */
static void loader__hf_unread_key_warns(void **state)
{
	(void)state;
	static const struct {
		const char *path;
		const char *after;  /* inserted after the opening brace */
		const char *warning;
	} cases[] = {
		{"tests/data/hf/mixtral-8x7b.config.json", "\"num_nextn_predict_layers\": 2,",
		 "num_nextn_predict_layers: not read for model_type 'mixtral'"},
		{"tests/data/hf/mixtral-8x7b.config.json", "\"n_shared_experts\": 1,",
		 "n_shared_experts: not read for model_type 'mixtral': the shared experts' weights"},
		{"tests/data/hf/qwen3-30b-a3b.config.json", "\"first_k_dense_replace\": 2,",
		 "first_k_dense_replace: not read for model_type 'qwen3_moe'"},
		{"tests/data/hf/qwen1.5-moe-a2.7b.config.json", "\"use_sliding_window\": true,",
		 "use_sliding_window: the sliding window of a 'qwen2_moe' config is not read"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f = fopen(cases[i].path, "r");
		assert_non_null(f);
		static char text[65536];
		size_t n = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
		text[n] = '\0';
		/* a later "use_sliding_window": false would be a duplicate key */
		char *dup = strstr(text, "\"use_sliding_window\"");
		if (dup && strstr(cases[i].after, "use_sliding_window")) {
			memcpy(dup, "\"use_sliding_windoX\"", 20);
		}
		char *brace = strchr(text, '{');
		assert_non_null(brace);
		static char out[70000];
		snprintf(out, sizeof(out), "{%s%s", cases[i].after, brace + 1);
		char *path = write_text_file(out, ".json");
		struct mp_model m;
		struct mp_diags d;
		mp_model_init(&m);
		mp_diags_init(&d);
		int rc = mp_load_model(path, &m, &d);
		print_diags(&d);
		assert_int_equal(rc, 0);
		if (warnings_with(&d, cases[i].warning) != 1 || d.count != 1) {
			fail_msg("%s + %s: expected one warning '%s'", cases[i].path, cases[i].after,
				 cases[i].warning);
		}
		mp_model_finish(&m);
		mp_diags_finish(&d);
		unlink(path);
		free(path);
	}
}

/* ------------------------------------------------------ bad inputs */

static char *read_first_line(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	fclose(f);
	assert_true(n > 0);
	if (line[n - 1] == '\n') {
		line[n - 1] = '\0';
	}
	return line;
}

static int load_by_prefix(const char *name, const char *path, struct mp_diags *d)
{
	int rc = 0;
	if (strncmp(name, "model-", 6) == 0) {
		struct mp_model m;
		mp_model_init(&m);
		rc = mp_load_model(path, &m, d);
		mp_model_finish(&m);
	} else if (strncmp(name, "hw-", 3) == 0) {
		struct mp_hardware hw;
		mp_hardware_init(&hw);
		rc = mp_load_hardware(path, &hw, d);
		mp_hardware_finish(&hw);
	} else if (strncmp(name, "scenario-", 9) == 0) {
		struct mp_scenario s;
		mp_scenario_init(&s);
		rc = mp_load_scenario(path, &s, d);
		mp_scenario_finish(&s);
	} else if (strncmp(name, "traffic-", 8) == 0) {
		struct mp_traffic t;
		mp_traffic_init(&t);
		rc = mp_load_traffic(path, &t, d);
		mp_traffic_finish(&t);
	} else if (strncmp(name, "loads-", 6) == 0) {
		struct mp_loads l;
		mp_loads_init(&l);
		rc = mp_load_loads(path, &l, d);
		mp_loads_finish(&l);
	} else if (strncmp(name, "map-", 4) == 0) {
		/* Maps that do not name their GPU count are read as 2 GPUs. */
		struct mp_placement p;
		mp_placement_init(&p);
		rc = mp_load_map(path, NULL, 2, &p, d);
		mp_placement_finish(&p);
	} else {
		fail_msg("%s: no loader for this prefix", name);
	}
	return rc;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Each tests/data/bad/NAME has NAME.expected holding the exact first
 * diagnostic, `path:line:col: error: message`. */
static void loader__bad_inputs(void **state)
{
	(void)state;
	DIR *dir = opendir("tests/data/bad");
	assert_non_null(dir);
	char *names[512];
	size_t n = 0;
	for (struct dirent *e = readdir(dir); e; e = readdir(dir)) {
		size_t len = strlen(e->d_name);
		if (len > 9 && strcmp(e->d_name + len - 9, ".expected") == 0) {
			assert_true(n < 512);
			names[n] = strndup(e->d_name, len - 9);
			assert_non_null(names[n]);
			n++;
		}
	}
	closedir(dir);
	qsort(names, n, sizeof(names[0]), compare_names);
	assert_true(n >= 60);
	int failures = 0;
	for (size_t i = 0; i < n; i++) {
		char path[512];
		char expected_path[600];
		snprintf(path, sizeof(path), "tests/data/bad/%s", names[i]);
		snprintf(expected_path, sizeof(expected_path), "%s.expected", path);
		char *expected = read_first_line(expected_path);
		struct mp_diags d;
		mp_diags_init(&d);
		int rc = load_by_prefix(names[i], path, &d);
		char *got = first_diag(&d);
		if (rc >= 0 || d.count == 0 || strcmp(got, expected) != 0) {
			fprintf(stderr, "%s (rc %d)\n  expected: %s\n  got:      %s\n", path, rc, expected, got);
			failures++;
		}
		free(got);
		free(expected);
		mp_diags_finish(&d);
		free(names[i]);
	}
	assert_int_equal(failures, 0);
}

/* Every problem in a file is reported, not only the first. */
static void loader__all_problems_reported(void **state)
{
	(void)state;
	struct mp_diags d;
	mp_diags_init(&d);
	struct mp_model m;
	mp_model_init(&m);
	m.name = strdup("kept");
	assert_int_equal(mp_load_model("tests/data/bad/model-many-errors.yaml", &m, &d), MP_EINVAL);
	/* out is untouched on failure */
	assert_string_equal(m.name, "kept");
	mp_model_finish(&m);
	static const int where[][2] = {{2, 14}, {3, 13}, {6, 27}, {7, 16}, {8, 21}, {1, 1}};
	assert_int_equal(d.count, 6);
	for (size_t i = 0; i < 6; i++) {
		assert_int_equal(d.items[i].line, where[i][0]);
		assert_int_equal(d.items[i].column, where[i][1]);
		assert_int_equal(d.items[i].code, MP_EINVAL);
		assert_string_equal(d.items[i].file, "tests/data/bad/model-many-errors.yaml");
	}
	mp_diags_finish(&d);

	mp_diags_init(&d);
	struct mp_loads l;
	mp_loads_init(&l);
	assert_int_equal(mp_load_loads("tests/data/bad/loads-ragged.csv", &l, &d), MP_EINVAL);
	assert_int_equal(d.count, 2);
	assert_int_equal(d.items[1].line, 4);
	assert_int_equal(d.items[1].column, 11); /* the fifth value, "12" */
	assert_null(l.w);
	mp_diags_finish(&d);
}

static char *temp_file(size_t size)
{
	char *path = strdup("/tmp/moeplan-test-loader-XXXXXX");
	assert_non_null(path);
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	/* Sparse: no disk space, reads back zeros. */
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	close(fd);
	return path;
}

static void loader__file_limits(void **state)
{
	(void)state;
	struct mp_diags d;
	struct mp_model m;
	char expected[256];
	const size_t sizes[] = {(size_t)MP_MAX_INPUT_BYTES + 1, (size_t)1 << 30};
	for (size_t i = 0; i < 2; i++) {
		char *path = temp_file(sizes[i]);
		mp_diags_init(&d);
		mp_model_init(&m);
		assert_int_equal(mp_load_model(path, &m, &d), MP_EINVAL);
		char *got = first_diag(&d);
		snprintf(expected, sizeof(expected),
			 "%s: error: file is too large: %zu bytes (inputs are limited to 268435456 bytes)",
			 path, sizes[i]);
		assert_string_equal(got, expected);
		free(got);
		mp_diags_finish(&d);
		mp_model_finish(&m);
		unlink(path);
		free(path);
	}
	/* A small file of zeros: NUL bytes, reported where the first is. */
	char *path = temp_file(64);
	mp_diags_init(&d);
	struct mp_loads l;
	mp_loads_init(&l);
	assert_int_equal(mp_load_loads(path, &l, &d), MP_EINVAL);
	char *got = first_diag(&d);
	snprintf(expected, sizeof(expected), "%s:1:1: error: NUL byte in the input (expected a text file)", path);
	assert_string_equal(got, expected);
	free(got);
	mp_diags_finish(&d);
	unlink(path);
	free(path);

	mp_diags_init(&d);
	mp_model_init(&m);
	assert_int_equal(mp_load_model("tests/data/no-such-file.yaml", &m, &d), MP_EIO);
	got = first_diag(&d);
	assert_string_equal(got, "tests/data/no-such-file.yaml: error: cannot open: No such file or directory");
	free(got);
	mp_diags_finish(&d);

	mp_diags_init(&d);
	struct mp_placement p;
	mp_placement_init(&p);
	assert_int_equal(mp_load_map("tests/data/maps/eplb-plan.yaml", "middle", 0, &p, &d), MP_EINVAL);
	got = first_diag(&d);
	assert_string_equal(got, "tests/data/maps/eplb-plan.yaml: error: unknown phase 'middle' "
			    "(expected decode or prefill)");
	free(got);
	mp_diags_finish(&d);
}

/* ----------------------------------------------------------- units */

static void loader__units(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		const char *kind;
		bool ok;      /* false: refused */
		double value;
	} table[] = {
		{"186 GB", "bytes", true, 186e9},
		{"186GB", "bytes", true, 186e9},
		{"1.5 TiB", "bytes", true, 1.5 * 1099511627776.0},
		{"64 KiB", "bytes", true, 65536},
		{"2 kB", "bytes", true, 2000},
		{"2 KB", "bytes", true, 2000},
		{"890", "bytes", true, 890},
		{"  7 MB  ", "bytes", true, 7e6},
		{"1.86e11", "bytes", true, 1.86e11},
		{"8 TB/s", "bytes/s", true, 8e12},
		{"900 GB/s", "bytes/s", true, 900e9},
		{"400 Gbit/s", "bytes/s", true, 50e9},
		/* issue 26: the NIC spellings, bits, 400e9 / 8 = 50e9 B/s */
		{"400 Gbps", "bytes/s", true, 50e9},
		{"400Gb/s", "bytes/s", true, 50e9},
		{"800 Gb/s", "bytes/s", true, 100e9},
		{"80G", "bytes", false, 0},        /* bytes or bits? */
		{"400G", "bytes/s", false, 0},
		/* token and request counts: SI, 8k = 8,000 (not 8,192) */
		{"8k", "count", true, 8000},
		{"4K", "count", true, 4000},
		{"1.5M", "count", true, 1.5e6},
		{"131072", "count", true, 131072},
		{"8 G", "count", false, 0},
		{"8 kB", "count", false, 0},
		{"3.35e12", "bytes/s", true, 3.35e12},
		{"5 PFLOP/s", "flop/s", true, 5e15},
		{"989.4 TFLOP/s", "flop/s", true, 989.4e12},
		{"2.5 PF", "flop/s", true, 2.5e15},
		{"400 TFLOPS", "flop/s", true, 400e12},
		{"296 TOPS", "flop/s", true, 296e12},
		{"10 s", "seconds", true, 10},
		{"500 ms", "seconds", true, 0.5},
		{"2 min", "seconds", true, 120},
		{"-3", NULL, true, -3},
		{"+0.25", NULL, true, 0.25},
		{".5", NULL, true, 0.5},
		{"1e3", NULL, true, 1000},
		{"8 Gb", "bytes", false, 0},       /* bits are not bytes */
		{"8 TB/s", "bytes", false, 0},     /* a bandwidth where a size goes */
		{"5 PFLOP/s", "bytes/s", false, 0},
		{"186 GB", NULL, false, 0},        /* no unit allowed */
		{"F", "flop/s", false, 0},
		{"5 F", "flop/s", false, 0},       /* "F" needs a prefix */
		{"nan", NULL, false, 0},
		{".inf", "bytes", false, 0},
		{"-inf", NULL, false, 0},
		{"1e999", NULL, false, 0},
		{"1e-400", NULL, false, 0},        /* underflows */
		{"0x10", NULL, false, 0},
		{"", "bytes", false, 0},
		{"GB", "bytes", false, 0},
		{"1..2", NULL, false, 0},
		{"1 2", NULL, false, 0},
		{"5 parsecs", "seconds", false, 0},
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		double v = 12345.0;
		int rc = mp_parse_quantity(table[i].text, table[i].kind, &v);
		if (!table[i].ok) {
			if (rc != MP_EINVAL || !(fabs(v - 12345.0) <= 0.0)) {
				fail_msg("'%s' (%s) was accepted as %g", table[i].text,
					 table[i].kind ? table[i].kind : "plain", v);
			}
		} else {
			if (rc != 0) {
				fail_msg("'%s' (%s) was refused", table[i].text,
					 table[i].kind ? table[i].kind : "plain");
			}
			assert_close(v, table[i].value, 1e-15);
		}
	}
}

/* ------------------------------------------------------------ loads */

static const double eplb_loads[2][12] = {
	{90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86},
	{20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27},
};

static void assert_eplb_loads(const struct mp_loads *l)
{
	assert_int_equal(l->n_layers, 2);
	assert_int_equal(l->n_experts, 12);
	for (uint32_t r = 0; r < 2; r++) {
		for (uint32_t c = 0; c < 12; c++) {
			assert_close(mp_loads_row(l, r)[c], eplb_loads[r][c], 0.0);
		}
	}
}

static void loader__loads_formats(void **state)
{
	(void)state;
	static const char *const paths[] = {
		"tests/data/loads/eplb-crlf.csv",
		"tests/data/loads/eplb.yaml",
		"tests/data/loads/eplb.json",
		"tests/data/loads/eplb-sglang-2d.json",
		"tests/data/loads/eplb-sglang-3d.json", /* two windows, summed */
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct mp_diags d;
		mp_diags_init(&d);
		struct mp_loads l;
		mp_loads_init(&l);
		int rc = mp_load_loads(paths[i], &l, &d);
		print_diags(&d);
		assert_int_equal(rc, 0);
		assert_eplb_loads(&l);
		if (i == 0) {
			assert_string_equal(l.source, "hand-written, CRLF line ends");
		} else if (i == 1) {
			assert_string_equal(l.source, "deepseek-ai/EPLB README example");
		}
		mp_loads_finish(&l);
		mp_diags_finish(&d);
	}
}

/* The shipped traces keep their source line. */
static void loader__traces(void **state)
{
	(void)state;
	struct mp_diags d;
	mp_diags_init(&d);
	struct mp_loads l;
	mp_loads_init(&l);
	assert_int_equal(mp_load_loads("plans/traces/olmoe_github.csv", &l, &d), 0);
	/* traces/README.md: "OLMoE-1B-7B (64 experts, top-8) | 3 x 64" */
	assert_int_equal(l.n_layers, 3);
	assert_int_equal(l.n_experts, 64);
	assert_close(l.w[0], 32373, 0.0);  /* first cell of the file */
	assert_close(l.w[21], 130724, 0.0);
	assert_non_null(strstr(l.source, "allenai/OLMoE scripts/routing_output/olmoe/expert_counts/github.pkl"));
	mp_loads_finish(&l);
	assert_int_equal(mp_load_loads("plans/traces/qwen15moe_bookcorpus.csv", &l, &d), 0);
	assert_int_equal(l.n_layers, 12);
	assert_int_equal(l.n_experts, 60);
	assert_close(l.w[3], 106141, 0.0);
	mp_loads_finish(&l);
	assert_int_equal(d.count, 0);
	mp_diags_finish(&d);
}

/* ------------------------------------------------------------- maps */

/* DeepSeek EPLB README example output (phy2log). */
static const uint32_t eplb_map[2][16] = {
	{5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1},
	{7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1},
};

static void loader__maps(void **state)
{
	(void)state;
	static const struct {
		const char *path;
		uint32_t gpus;
	} files[] = {
		{"tests/data/maps/eplb-sglang.json", 8},
		{"tests/data/maps/eplb-vllm.json", 8},
		{"tests/data/maps/eplb-bare.yaml", 8},
		{"tests/data/maps/eplb-placement.yaml", 0},
		{"tests/data/maps/eplb-placement.yaml", 8},
		{"tests/data/maps/eplb-plan.yaml", 0},
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct mp_diags d;
		mp_diags_init(&d);
		struct mp_placement p;
		mp_placement_init(&p);
		int rc = mp_load_map(files[i].path, NULL, files[i].gpus, &p, &d);
		print_diags(&d);
		assert_int_equal(rc, 0);
		assert_int_equal(p.n_layers, 2);
		assert_int_equal(p.n_experts, 12);
		assert_int_equal(p.gpus, 8);
		assert_int_equal(p.slots_per_gpu, 2);
		for (uint32_t l = 0; l < 2; l++) {
			assert_memory_equal(p.layers[l].slot_expert, eplb_map[l], sizeof(eplb_map[l]));
		}
		mp_placement_finish(&p);
		mp_diags_finish(&d);
	}
	/* The prefill phase of the plan: 12 slots on 4 GPUs. */
	struct mp_diags d;
	mp_diags_init(&d);
	struct mp_placement p;
	mp_placement_init(&p);
	assert_int_equal(mp_load_map("tests/data/maps/eplb-plan.yaml", "prefill", 0, &p, &d), 0);
	assert_int_equal(p.gpus, 4);
	assert_int_equal(p.slots_per_gpu, 3);
	assert_int_equal(p.n_experts, 12);
	assert_int_equal(p.layers[1].slot_expert[0], 11);
	mp_placement_finish(&p);
	/* A bare list does not say its GPU count. */
	assert_int_equal(mp_load_map("tests/data/maps/eplb-bare.yaml", NULL, 0, &p, &d), MP_EINVAL);
	char *got = first_diag(&d);
	assert_string_equal(got, "tests/data/maps/eplb-bare.yaml:2:1: error: physical_to_logical: "
			    "the file does not say how many GPUs the 16 slots are on; give the GPU count (--gpus N)");
	free(got);
	mp_diags_finish(&d);
}

/* -------------------------------------------------------- scenarios */

static void loader__default_scenario(void **state)
{
	(void)state;
	struct mp_diags d;
	mp_diags_init(&d);
	struct mp_scenario s;
	mp_scenario_init(&s);
	int rc = mp_load_scenario("plans/default.yaml", &s, &d);
	print_diags(&d);
	assert_int_equal(rc, 0);
	assert_string_equal(s.name, "deepseek-v4.1-flash");
	assert_string_equal(s.model_path, "plans/models/deepseek-v4.1-flash.yaml");
	assert_int_equal(s.model.routed_experts, 384);
	assert_int_equal(s.traffic.kind, MP_TRAFFIC_ZIPF);
	assert_close(s.traffic.zipf_s, 0.6, 0.0);
	assert_true(s.traffic.seed == 1);
	assert_true(s.traffic.permute);
	assert_close(s.time_limit_s, 3600.0, 0.0); /* plans/default.yaml: time_limit: 3600 s */
	/* prefill: 8-GPU B200, EP 2..8, 196 slots per GPU, 16,384 tokens */
	assert_string_equal(s.prefill.hardware_path, "plans/../hardware/hgx-b200.yaml");
	assert_close(s.prefill.hardware.peak_flops[MP_COMPUTE_FP8], 4.5e15, 0.0);
	assert_int_equal(s.prefill.gpus, 8);
	assert_int_equal(s.prefill.ep, 0);
	assert_int_equal(s.prefill.ep_min, 2);
	assert_int_equal(s.prefill.ep_max, 8);
	assert_int_equal(s.prefill.slot_rule, MP_SLOTS_FIXED_PER_GPU);
	assert_int_equal(s.prefill.slots_per_gpu, 196);
	assert_close(s.prefill.chunk_tokens, 16384, 0.0);
	/* "at EP2 each GPU holds 196 expert slots" */
	assert_int_equal(mp_phase_slots(&s.prefill, 384, 2), 392);
	assert_int_equal(mp_phase_slots(&s.prefill, 384, 1), 0); /* 196 < 384 */
	/* decode: GB200 NVL72, 72 GPUs, at least 32 redundant */
	assert_int_equal(s.decode.hardware.scale_up_domain_gpus, 72);
	assert_int_equal(s.decode.gpus, 72);
	assert_int_equal(s.decode.slot_rule, MP_SLOTS_MIN_REDUNDANT);
	assert_int_equal(s.decode.min_redundant, 32);
	assert_close(s.decode.requests_per_gpu, 64, 0.0);
	assert_close(s.decode.tokens_per_request, 4, 0.0);
	assert_close(s.decode.context_tokens, 131072, 0.0);
	/* "which gives 416 slots at EP8, 52 per GPU, and 448 at EP64" */
	assert_int_equal(mp_phase_slots(&s.decode, 384, 8), 416);
	assert_int_equal(mp_phase_slots(&s.decode, 384, 64), 448);
	/* "its production decode rule of one redundant slot per GPU also
	 * gives 448 at EP64" */
	struct mp_phase_spec per_gpu = s.decode;
	per_gpu.slot_rule = MP_SLOTS_PER_GPU;
	per_gpu.redundant_per_gpu = 1;
	assert_int_equal(mp_phase_slots(&per_gpu, 384, 64), 448);
	assert_int_equal(mp_phase_slots(&per_gpu, 384, 0), 0);
	/* 256 requests x 131,072 tokens x 890 B = 29.9 GB: "about 30 GB per
	 * GPU, a sixth of a GB200's memory" */
	assert_close(256.0 * s.decode.context_tokens * mp_model_kv_bytes_per_token(&s.model) / 1e9,
		     29.86, 0.001);
	mp_scenario_finish(&s);
	mp_diags_finish(&d);
}

static void loader__trace_scenarios(void **state)
{
	(void)state;
	struct mp_diags d;
	mp_diags_init(&d);
	struct mp_scenario s;
	mp_scenario_init(&s);
	assert_int_equal(mp_load_scenario("plans/olmoe-github.yaml", &s, &d), 0);
	assert_int_equal(s.traffic.kind, MP_TRAFFIC_OBSERVED);
	assert_int_equal(s.traffic.observed.n_layers, 3);
	assert_int_equal(s.traffic.observed.n_experts, s.model.routed_experts);
	/* 64 + one per GPU: 72 slots at EP8 */
	assert_int_equal(mp_phase_slots(&s.decode, s.model.routed_experts, 8), 72);
	assert_int_equal(mp_phase_slots(&s.prefill, s.model.routed_experts, 1), 64);
	mp_scenario_finish(&s);
	assert_int_equal(mp_load_scenario("plans/qwen15moe-bookcorpus.yaml", &s, &d), 0);
	assert_int_equal(s.traffic.observed.n_layers, 12);
	assert_int_equal(s.traffic.observed.n_experts, 60);
	/* round_up(60, 8) + 8 = 72 */
	assert_int_equal(mp_phase_slots(&s.decode, 60, 8), 72);
	/* min_redundant 0: 60 on one GPU, round_up(60, 8) = 64 at EP8 */
	assert_int_equal(mp_phase_slots(&s.prefill, 60, 1), 60);
	assert_int_equal(mp_phase_slots(&s.prefill, 60, 8), 64);
	mp_scenario_finish(&s);
	/* DeepSeek-V3 prefill at EP32 with its 8 groups kept within servers;
	 * decode takes the default policy; 32 x 9 = 288 slots */
	assert_int_equal(mp_load_scenario("plans/deepseek-v3-group-limited.yaml", &s, &d), 0);
	assert_int_equal(s.prefill.node_policy, MP_NODES_GROUP_LIMITED);
	assert_int_equal(s.decode.node_policy, MP_NODES_BALANCE);
	assert_int_equal(s.model.n_groups, 8);
	assert_int_equal(mp_phase_slots(&s.prefill, s.model.routed_experts, 32), 288);
	mp_scenario_finish(&s);
	print_diags(&d);
	assert_int_equal(d.count, 0);
	mp_diags_finish(&d);
}

static void loader__inline_scenario(void **state)
{
	(void)state;
	struct mp_diags d;
	mp_diags_init(&d);
	struct mp_scenario s;
	mp_scenario_init(&s);
	int rc = mp_load_scenario("tests/data/scenario-inline.yaml", &s, &d);
	print_diags(&d);
	assert_int_equal(rc, 0);
	assert_string_equal(s.model.name, "tiny");
	assert_null(s.model_path);
	assert_int_equal(s.model.routed_format, MP_FORMAT_INT4);
	assert_int_equal(s.model.int4_group_size, 64);
	assert_int_equal(s.model.expert_compute, MP_COMPUTE_INT8);
	assert_true(s.model.dense_weight_bytes == 1610612736ull); /* 1.5 x 2^30 */
	assert_int_equal(s.model.n_groups, 4);
	assert_int_equal(s.model.topk_groups, 2);
	/* 2 x 2 heads x 64 x 1 B x 5 layers = 1280 B per token; at 4096 tokens
	 * 4 sliding layers keep 1024: 256 x (1 x 4096 + 4 x 1024) */
	assert_close(mp_model_kv_bytes_per_token(&s.model), 1280.0, 0.0);
	assert_close(mp_model_kv_bytes_per_request(&s.model, 4096.0), 256.0 * (4096 + 4 * 1024), 0.0);
	assert_int_equal(s.traffic.kind, MP_TRAFFIC_HOT);
	assert_close(s.traffic.hot_experts, 0.25, 0.0);
	assert_close(s.traffic.hot_load, 0.75, 0.0);
	assert_true(s.traffic.seed == 42);
	assert_true(s.traffic.permute);
	assert_close(s.time_limit_s, 0.5, 0.0);
	assert_null(s.prefill.hardware_path);
	assert_close(s.prefill.hardware.peak_flops[MP_COMPUTE_BF16], 400e12, 0.0);
	assert_close(s.prefill.hardware.peak_flops[MP_COMPUTE_INT8], 0.8e15, 0.0);
	assert_true(s.prefill.hardware.hbm_bytes == 48ull << 30);
	assert_close(s.prefill.hardware.scale_out_bw_bytes_per_s, 50e9, 0.0); /* 400 Gbit/s */
	assert_int_equal(s.prefill.ep, 2);
	assert_int_equal(mp_phase_slots(&s.prefill, 16, 2), 20);
	assert_int_equal(s.decode.ep_min, 4);
	assert_int_equal(s.decode.ep_max, 8);
	assert_int_equal(s.decode.redundant_per_gpu, 2);
	assert_int_equal(mp_phase_slots(&s.decode, 16, 8), 32);
	assert_close(s.decode.requests_per_gpu, 12.5, 0.0);
	assert_close(s.decode.tokens_per_request, 2.6, 0.0);
	mp_scenario_finish(&s);
	mp_diags_finish(&d);
}

static void loader__traffic_files(void **state)
{
	(void)state;
	struct mp_diags d;
	mp_diags_init(&d);
	struct mp_traffic t;
	mp_traffic_init(&t);
	assert_int_equal(mp_load_traffic("tests/data/traffic-zipf.yaml", &t, &d), 0);
	assert_int_equal(t.kind, MP_TRAFFIC_ZIPF);
	assert_close(t.zipf_s, 1.2, 0.0);
	assert_true(t.seed == UINT64_MAX);
	assert_true(t.permute);
	assert_int_equal(mp_load_traffic("tests/data/traffic-uniform.yaml", &t, &d), 0);
	assert_int_equal(t.kind, MP_TRAFFIC_UNIFORM);
	assert_int_equal(mp_load_traffic("tests/data/traffic-observed.yaml", &t, &d), 0);
	assert_int_equal(t.kind, MP_TRAFFIC_OBSERVED);
	assert_eplb_loads(&t.observed);
	assert_int_equal(mp_load_traffic("tests/data/traffic-observed-csv.yaml", &t, &d), 0);
	assert_eplb_loads(&t.observed);
	assert_int_equal(mp_load_traffic("tests/data/loads/eplb.json", &t, &d), 0);
	assert_int_equal(t.kind, MP_TRAFFIC_OBSERVED);
	assert_eplb_loads(&t.observed);
	assert_int_equal(mp_load_traffic("plans/traces/olmoe_c4.csv", &t, &d), 0);
	assert_int_equal(t.observed.n_experts, 64);
	mp_traffic_finish(&t);
	print_diags(&d);
	assert_int_equal(d.count, 0);
	mp_diags_finish(&d);
}

/* A text into a new temporary file with the given suffix (heap path). */
static char *write_text_file(const char *text, const char *suffix)
{
	char tmpl[] = "/tmp/moeplan-test-loaderXXXXXX";
	int fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	size_t n = strlen(text);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	close(fd);
	size_t size = strlen(tmpl) + strlen(suffix) + 1;
	char *path = malloc(size);
	assert_non_null(path);
	snprintf(path, size, "%s%s", tmpl, suffix);
	assert_int_equal(rename(tmpl, path), 0);
	return path;
}

/* Issue 26 item 8: SGLang's JSON dump ({"logical_count": [windows][layers]
 * [experts]}) is read from parser events, its windows summed as they
 * arrive. The sum here is by hand: 3 windows x 2 layers x 3 experts.
 * The same dump with one more key ("rank", ignored like every other key
 * of a dump) is not the plain shape the event reader takes, so the tree
 * reader reads it: both must give the hand sum. A .json is read from the
 * file in pieces; a name without a suffix is read whole first (the text
 * decides CSV or not), then from the events of the text. */
static void loader__sglang_json_dump_streamed(void **state)
{
	(void)state;
	static const char *const texts[] = {
		"{\"logical_count\": [\n"
		" [[1, 2, 3], [0, 4, 5]],\n"
		" [[10, 20, 30], [1, 1, 1]],\n"
		" [[0.5, 0, 2e3], [7, 0, 1]]\n"
		"]}\n",
		"{\"logical_count\": [\n"
		" [[1, 2, 3], [0, 4, 5]],\n"
		" [[10, 20, 30], [1, 1, 1]],\n"
		" [[0.5, 0, 2e3], [7, 0, 1]]\n"
		"]}\n",
		"{\"rank\": 0, \"logical_count\": [\n"
		" [[1, 2, 3], [0, 4, 5]],\n"
		" [[10, 20, 30], [1, 1, 1]],\n"
		" [[0.5, 0, 2e3], [7, 0, 1]]\n"
		"]}\n",
	};
	/* layer 0: 1+10+0.5, 2+20+0, 3+30+2000; layer 1: 0+1+7, 4+1+0, 5+1+1 */
	static const double want[6] = {11.5, 22.0, 2033.0, 8.0, 5.0, 7.0};
	for (size_t i = 0; i < 3; i++) {
		char *path = write_text_file(texts[i], i == 1 ? "" : ".json");
		struct mp_diags d;
		mp_diags_init(&d);
		struct mp_loads l;
		mp_loads_init(&l);
		assert_int_equal(mp_load_loads(path, &l, &d), 0);
		assert_int_equal(d.count, 0);
		assert_int_equal(l.n_layers, 2);
		assert_int_equal(l.n_experts, 3);
		for (size_t k = 0; k < 6; k++) {
			assert_true(l.w[k] == want[k]);
		}
		/* SGLang's rows are the hidden layers 0..n-1 */
		assert_int_equal(l.hidden_layers, 2);
		assert_non_null(l.layer_ids);
		assert_int_equal(l.layer_ids[0], 0);
		assert_int_equal(l.layer_ids[1], 1);
		assert_string_equal(l.path, path);
		mp_loads_finish(&l);
		mp_diags_finish(&d);
		unlink(path);
		free(path);
	}
}

/* A bad value or a ragged row in a later window of a dump: refused at
 * its line:col with the field's path (the event reader gives such a file
 * to the tree reader, which reports it). Columns counted by hand. */
static void loader__sglang_json_dump_bad(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
		{"{\"logical_count\": [\n"
		 " [[1, 2], [3, 4]],\n"
		 " [[1, 2], [3, -1]]\n"
		 "]}\n",
		 "3:15: error: logical_count[1][1][1]: expected a load from 0 to 1e18, got '-1'"},
		{"{\"logical_count\": [\n"
		 " [[1, 2], [3, 4]],\n"
		 " [[1, 2], [3, 4, 5]]\n"
		 "]}\n",
		 "3:11: error: logical_count[1][1]: 3 values, expected 2 like row 0"},
		{"{\"logical_count\": [\n"
		 " [[1, 2], [3, 4]],\n"
		 " [[1, 2], [3, \"4\"]]\n"
		 "]}\n",
		 "3:15: error: logical_count[1][1][1]: expected a load from 0 to 1e18, got the quoted "
		 "text '4' (a number is written without quotes)"},
		{"{\"logical_count\": [\n"
		 " [[1, 2], [3, 4]],\n"
		 " [[1, 2]]\n"
		 "]}\n",
		 "3:2: error: logical_count[1]: 1 x 2 values, expected 2 x 2 like window 0"},
	};
	for (size_t i = 0; i < 2 * sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = write_text_file(cases[i / 2][0], i % 2 ? "" : ".json");
		struct mp_diags d;
		mp_diags_init(&d);
		struct mp_loads l;
		mp_loads_init(&l);
		assert_int_equal(mp_load_loads(path, &l, &d), MP_EINVAL);
		char *got = first_diag(&d);
		char expected[512];
		snprintf(expected, sizeof(expected), "%s:%s", path, cases[i / 2][1]);
		assert_string_equal(got, expected);
		free(got);
		mp_loads_finish(&l);
		mp_diags_finish(&d);
		unlink(path);
		free(path);
	}
}

/* A load that underflows (1e-320 is below DBL_MIN ~2.2e-308, so strtod
 * says ERANGE) is a valid tiny load: kept as the subnormal double, or 0
 * below the smallest subnormal (~4.9e-324). Overflow stays refused. */
static void loader__tiny_loads_are_accepted(void **state)
{
	(void)state;
	static const char *const texts[][2] = {
		{"1e-320,1\n1e-400,2\n", ".csv"},
		{"loads:\n- [1e-320, 1]\n- [1e-400, 2]\n", ".yaml"},
	};
	for (size_t i = 0; i < 2; i++) {
		char *path = write_text_file(texts[i][0], texts[i][1]);
		struct mp_loads l;
		struct mp_diags d;
		mp_loads_init(&l);
		mp_diags_init(&d);
		int rc = mp_load_loads(path, &l, &d);
		print_diags(&d);
		assert_int_equal(rc, 0);
		assert_int_equal(l.n_layers, 2);
		assert_int_equal(l.n_experts, 2);
		/* 1e-320 is subnormal: above 0, below the smallest normal. */
		assert_true(l.w[0] > 0.0 && l.w[0] < 2.2250738585072014e-308);
		assert_true(l.w[0] > 9.9e-321 && l.w[0] < 1.01e-320);
		assert_true(l.w[2] == 0.0);
		assert_true(l.w[3] == 2.0);
		mp_loads_finish(&l);
		mp_diags_finish(&d);
		unlink(path);
		free(path);
	}
}

/* A plan, placement or engine map given where loads are expected gets one
 * error saying what it is, not one "unknown field" per key. */
static void loader__plan_as_loads_is_one_error(void **state)
{
	(void)state;
	static const struct {
		const char *path;
		const char *says;
	} cases[] = {
		{"tests/data/maps/eplb-plan.yaml", "this is a moeplan plan (it has 'decode')"},
		{"tests/data/maps/eplb-placement.yaml", "this is a moeplan placement"},
		{"tests/data/maps/eplb-sglang.json", "this is an engine's expert map"},
		{"tests/data/maps/eplb-vllm.json", "this is an engine's expert map"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mp_loads l;
		struct mp_diags d;
		mp_loads_init(&l);
		mp_diags_init(&d);
		assert_int_equal(mp_load_loads(cases[i].path, &l, &d), MP_EINVAL);
		if (d.count != 1 || !strstr(d.items[0].message, cases[i].says) ||
		    !strstr(d.items[0].message, "not expert loads")) {
			print_diags(&d);
			fail_msg("%s: expected one error saying '%s'", cases[i].path, cases[i].says);
		}
		mp_loads_finish(&l);
		mp_diags_finish(&d);
	}
}

/* mp_load_map_strict reports every problem of every kind; mp_load_map
 * (engines' maps may keep an expert twice on a GPU) only the missing
 * experts. tests/data/bad/map-dup-and-missing.yaml by hand: 2 GPUs x 2
 * slots, 4 experts; layer 0 [0, 0 | 2, 3]: expert 0 twice on GPU 0,
 * expert 1 nowhere; layer 1 [0, 1 | 3, 3]: expert 3 twice on GPU 1,
 * expert 2 nowhere; layer 2 is fine. */
/* Ids that do not parse do not hide the rest: tests/data/placement/
 * map-range-and-dup.json, 2 GPUs x 2 slots, [0, 0 | 1, 2] (expert 0 twice
 * on GPU 0, expert 3 nowhere), [0, 1 | 2, 70000] (70000 above the id
 * limit, so expert 3 nowhere), [0, 1 | 3, -1]. */
static void loader__map_bad_ids_do_not_hide_other_problems(void **state)
{
	(void)state;
	struct mp_placement p;
	struct mp_diags d;
	mp_placement_init(&p);
	mp_diags_init(&d);
	assert_int_equal(mp_load_map_strict("tests/data/placement/map-range-and-dup.json", NULL, 2, &p,
					    &d), MP_EINVAL);
	bool range = false;
	bool negative = false;
	bool dup = false;
	bool missing = false;
	for (size_t i = 0; i < d.count; i++) {
		const char *m = d.items[i].message;
		range = range || (strstr(m, "physical_to_logical[1][3]") && strstr(m, "70000"));
		negative = negative || (strstr(m, "physical_to_logical[2][3]") && strstr(m, "-1"));
		dup = dup || strstr(m, "layer 0, GPU 0: slot 1 (physical 1) holds expert 0");
		missing = missing || strstr(m, "physical_to_logical[1]: expert 3 has no slot");
	}
	assert_true(range);
	assert_true(negative);
	assert_true(dup);
	assert_true(missing);
	mp_diags_finish(&d);
	mp_placement_finish(&p);
}

static void loader__map_reports_every_problem(void **state)
{
	(void)state;
	const char *path = "tests/data/bad/map-dup-and-missing.yaml";
	static const char *const expected[] = {
		/* line 7 "- [0, 0, 2, 3]": the second 0 is column 7 */
		"tests/data/bad/map-dup-and-missing.yaml:7:7: error: layer 0, GPU 0: slot 1 (physical 1) "
		"holds expert 0, already in slot 0 (physical 0) of the same GPU",
		"tests/data/bad/map-dup-and-missing.yaml:7:3: error: physical_to_logical[0]: expert 1 "
		"has no slot (every expert needs at least one)",
		/* line 8 "- [0, 1, 3, 3]": the second 3 is column 13 */
		"tests/data/bad/map-dup-and-missing.yaml:8:13: error: layer 1, GPU 1: slot 1 (physical 3) "
		"holds expert 3, already in slot 0 (physical 2) of the same GPU",
		"tests/data/bad/map-dup-and-missing.yaml:8:3: error: physical_to_logical[1]: expert 2 "
		"has no slot (every expert needs at least one)",
	};
	struct mp_placement p;
	struct mp_diags d;
	mp_placement_init(&p);
	mp_diags_init(&d);
	assert_int_equal(mp_load_map_strict(path, NULL, 0, &p, &d), MP_EINVAL);
	assert_int_equal(d.count, 4);
	for (size_t i = 0; i < 4; i++) {
		struct mp_diags one = {.items = &d.items[i], .count = 1};
		char *got = first_diag(&one);
		assert_string_equal(got, expected[i]);
		free(got);
	}
	mp_diags_finish(&d);
	mp_diags_init(&d);
	assert_int_equal(mp_load_map(path, NULL, 0, &p, &d), MP_EINVAL);
	assert_int_equal(d.count, 2);
	assert_non_null(strstr(d.items[1].message, "expert 2 has no slot"));
	mp_diags_finish(&d);

	/* Capped: one layer of 64 slots on 2 GPUs, all expert 0, is 31
	 * repeats on each GPU = 62 problems: 20 records, then "... and 42
	 * more". The lenient loader takes it (one expert, placed). */
	char text[512];
	size_t len = (size_t)snprintf(text, sizeof(text), "[[0");
	for (int i = 1; i < 64; i++) {
		len += (size_t)snprintf(text + len, sizeof(text) - len, ", 0");
	}
	snprintf(text + len, sizeof(text) - len, "]]\n");
	char *bare = write_text_file(text, ".json");
	mp_diags_init(&d);
	assert_int_equal(mp_load_map_strict(bare, NULL, 2, &p, &d), MP_EINVAL);
	assert_int_equal(d.count, 21);
	assert_non_null(strstr(d.items[19].message, "layer 0, GPU 0: slot 20 (physical 20) holds "
						    "expert 0, already in slot 0"));
	assert_string_equal(d.items[20].message, "... and 42 more problems in physical_to_logical");
	mp_diags_finish(&d);
	mp_diags_init(&d);
	assert_int_equal(mp_load_map(bare, NULL, 2, &p, &d), 0);
	assert_int_equal(p.gpus, 2);
	assert_int_equal(p.slots_per_gpu, 32);
	mp_diags_finish(&d);
	mp_placement_finish(&p);
	unlink(bare);
	free(bare);
}

/* Overflow must not reach an output as null: loads too large to sum are
 * refused at line:col (tests/data/bad/loads-huge.*), and `fit` names the
 * options and their range. By hand: DeepSeek-V4.1-Flash keeps 890 B of KV
 * per token (the article), so a request at 1e12 tokens holds 8.9e14 B;
 * 2^64 B / 8.9e14 B = 20,726.7, so --requests may be at most 20726. */
/* Issue 26: units and counts in files, by hand: 400 Gb/s = 400e9 bits/s
 * / 8 = 50e9 B/s; 8k tokens = 8,000 and 128K = 128,000 (SI); slo.tpot
 * '50 ms' = 0.05 s; a bare 0 needs no unit. */
static void loader__units_and_counts(void **state)
{
	(void)state;
	char *hw_path = write_text_file("peak_flops: {fp8: 1979 TFLOP/s, bf16: 0}\n"
					"hbm_bytes: 80 GB\nhbm_bandwidth: 3.35 TB/s\n"
					"scale_up_domain_gpus: 8\nscale_up_bandwidth: 3600Gb/s\n"
					"scale_out_bandwidth: 400 Gbps\n", ".yaml");
	struct mp_hardware hw;
	struct mp_diags d;
	mp_hardware_init(&hw);
	mp_diags_init(&d);
	int rc = mp_load_hardware(hw_path, &hw, &d);
	print_diags(&d);
	assert_int_equal(rc, 0);
	assert_close(hw.scale_up_bw_bytes_per_s, 450e9, 0.0);
	assert_close(hw.scale_out_bw_bytes_per_s, 50e9, 0.0);
	assert_close(hw.peak_flops[MP_COMPUTE_BF16], 0.0, 0.0);
	mp_hardware_finish(&hw);
	mp_diags_finish(&d);

	char text[1024];
	snprintf(text, sizeof(text),
		 "model: plans/models/deepseek-v3.yaml\n"
		 "prefill: {hardware: %s, chunk_tokens: 8k, isl: 4K}\n"
		 "decode: {hardware: %s, context_tokens: 128K, requests_per_gpu: 1k,\n"
		 "         slo: {tpot: 50 ms}}\n", hw_path, hw_path);
	char *sc_path = write_text_file(text, ".yaml");
	struct mp_scenario sc;
	mp_scenario_init(&sc);
	mp_diags_init(&d);
	rc = mp_load_scenario(sc_path, &sc, &d);
	print_diags(&d);
	assert_int_equal(rc, 0);
	assert_close(sc.prefill.chunk_tokens, 8000.0, 0.0);
	assert_close(sc.prefill.isl, 4000.0, 0.0);
	assert_close(sc.decode.context_tokens, 128000.0, 0.0);
	assert_close(sc.decode.requests_per_gpu, 1000.0, 0.0);
	assert_close(sc.decode.slo_tpot_s, 0.05, 1e-15);
	mp_scenario_finish(&sc);
	mp_diags_finish(&d);
	unlink(sc_path);
	unlink(hw_path);
	free(sc_path);
	free(hw_path);
}

/* A quoted scalar is text in YAML and JSON ("4" is a string): a plain
 * number (count, integer, fraction, load) refuses it at its line:col,
 * exit 1 (tests/data/bad/ files named *-quoted.*); a quantity takes a unit, so it is
 * text anyway and reads the same quoted or not. */
static void loader__quoted_numbers(void **state)
{
	(void)state;
	struct cli_result r = cli_run("place", "tests/data/bad/loads-quoted.json", "--gpus", "2",
				      "--slots", "4", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "tests/data/bad/loads-quoted.json:1:6: error: loads[0][1]: "
				      "expected a load from 0 to 1e18, got the quoted text '4'"));
	cli_result_free(&r);

	char *path = write_text_file("peak_flops: {fp8: \"1979 TFLOP/s\", bf16: '989.5e12 FLOP/s'}\n"
				     "hbm_bytes: \"80 GB\"\nhbm_bandwidth: '3.35 TB/s'\n"
				     "scale_up_domain_gpus: 8\n", ".yaml");
	struct mp_hardware hw;
	struct mp_diags d;
	mp_hardware_init(&hw);
	mp_diags_init(&d);
	int rc = mp_load_hardware(path, &hw, &d);
	print_diags(&d);
	assert_int_equal(rc, 0);
	assert_close(hw.peak_flops[MP_COMPUTE_FP8], 1979e12, 0.0);
	assert_close(hw.peak_flops[MP_COMPUTE_BF16], 989.5e12, 0.0);
	assert_true(hw.hbm_bytes == 80000000000ull);
	assert_close(hw.hbm_bw_bytes_per_s, 3.35e12, 0.0);
	mp_hardware_finish(&hw);
	mp_diags_finish(&d);
	unlink(path);
	free(path);

	/* the same file with the domain's GPU count quoted: a count, refused */
	path = write_text_file("peak_flops: {fp8: 1979 TFLOP/s}\nhbm_bytes: 80 GB\n"
			       "hbm_bandwidth: 3.35 TB/s\nscale_up_domain_gpus: \"8\"\n", ".yaml");
	mp_hardware_init(&hw);
	mp_diags_init(&d);
	assert_int_equal(mp_load_hardware(path, &hw, &d), MP_EINVAL);
	char *got = first_diag(&d);
	assert_non_null(strstr(got, ":4:23: error: scale_up_domain_gpus: expected an integer from 1 to"));
	assert_non_null(strstr(got, "got the quoted text '8' (a number is written without quotes)"));
	free(got);
	mp_hardware_finish(&hw);
	mp_diags_finish(&d);
	unlink(path);
	free(path);

	/* A scalar tagged !!str (or its long form, or the non-specific '!')
	 * is text like a quoted one (YAML 1.2, 10.1.1.1): refused where a
	 * number goes, at the tag's line:col; a number tagged !!int or
	 * anchored stays a number. */
	r = cli_run("place", "tests/data/bad/loads-str-tag.yaml", "--gpus", "2", "--slots", "4", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "tests/data/bad/loads-str-tag.yaml:3:10: error: loads[1][2]: "
				      "expected a load from 0 to 1e18, got the text '4' tagged !!str"));
	cli_result_free(&r);
	static const struct {
		const char *value;
		int col;
	} texts[] = {{"!<tag:yaml.org,2002:str> 8", 23}, {"! 8", 23}, {"&n !!str 8", 23}};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		char yaml[256], want[64];
		snprintf(yaml, sizeof(yaml), "peak_flops: {fp8: 1979 TFLOP/s}  # not a tag: !!str\n"
			 "hbm_bytes: 80 GB\nhbm_bandwidth: 3.35 TB/s\nscale_up_domain_gpus: %s\n",
			 texts[i].value);
		path = write_text_file(yaml, ".yaml");
		mp_hardware_init(&hw);
		mp_diags_init(&d);
		assert_int_equal(mp_load_hardware(path, &hw, &d), MP_EINVAL);
		got = first_diag(&d);
		snprintf(want, sizeof(want), ":4:%d: error: scale_up_domain_gpus: expected", texts[i].col);
		assert_non_null(strstr(got, want));
		assert_non_null(strstr(got, "got the text '8' tagged !!str"));
		free(got);
		mp_hardware_finish(&hw);
		mp_diags_finish(&d);
		unlink(path);
		free(path);
	}
	static const char *const numbers[] = {"!!int 8", "&n 8", "!!float 8"};
	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
		char yaml[256];
		snprintf(yaml, sizeof(yaml), "peak_flops: {fp8: 1979 TFLOP/s}  # not a tag: !!str\n"
			 "hbm_bytes: !!str 80 GB\nhbm_bandwidth: 3.35 TB/s\nscale_up_domain_gpus: %s\n",
			 numbers[i]);
		path = write_text_file(yaml, ".yaml");
		mp_hardware_init(&hw);
		mp_diags_init(&d);
		rc = mp_load_hardware(path, &hw, &d);
		print_diags(&d);
		assert_int_equal(rc, 0);
		assert_int_equal(hw.scale_up_domain_gpus, 8);
		assert_true(hw.hbm_bytes == 80000000000ull);
		mp_hardware_finish(&hw);
		mp_diags_finish(&d);
		unlink(path);
		free(path);
	}
}

static void loader__overflow_names_field_and_range(void **state)
{
	(void)state;
	struct cli_result r = cli_run("place", "tests/data/bad/loads-huge.csv", "--gpus", "1",
				      "--slots", "3", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "tests/data/bad/loads-huge.csv:3:3: error: '1.7e308': the load "
				      "of layer 1, expert 1 must be from 0 to 1e18"));
	cli_result_free(&r);
	r = cli_run("fit", "--model", "plans/models/deepseek-v4.1-flash.yaml", "--hardware",
		    "hardware/gb200-nvl72.yaml", "--ep", "72", "--requests", "1e9", "--context", "1e12",
		    NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "--requests 1e+09 at --context 1e+12 tokens needs 8.9e+23 B of "
				      "KV cache per GPU (8.9e+14 B per request)"));
	assert_non_null(strstr(r.err, "--requests must be at most 20726\n"));
	assert_null(strstr(r.err, "out of memory"));
	cli_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loader__article_model),
		cmocka_unit_test(loader__article_hardware),
		cmocka_unit_test(loader__hardware_presets),
		cmocka_unit_test(loader__model_presets),
		cmocka_unit_test(loader__hf_config_matches_preset),
		cmocka_unit_test(loader__hf_dense_estimate),
		cmocka_unit_test(loader__bad_inputs),
		cmocka_unit_test(loader__all_problems_reported),
		cmocka_unit_test(loader__file_limits),
		cmocka_unit_test(loader__units),
		cmocka_unit_test(loader__loads_formats),
		cmocka_unit_test(loader__traces),
		cmocka_unit_test(loader__maps),
		cmocka_unit_test(loader__default_scenario),
		cmocka_unit_test(loader__trace_scenarios),
		cmocka_unit_test(loader__inline_scenario),
		cmocka_unit_test(loader__traffic_files),
		cmocka_unit_test(loader__tiny_loads_are_accepted),
		cmocka_unit_test(loader__sglang_json_dump_streamed),
		cmocka_unit_test(loader__sglang_json_dump_bad),
		cmocka_unit_test(loader__plan_as_loads_is_one_error),
		cmocka_unit_test(loader__map_reports_every_problem),
		cmocka_unit_test(loader__map_bad_ids_do_not_hide_other_problems),
		cmocka_unit_test(loader__overflow_names_field_and_range),
		cmocka_unit_test(loader__quoted_numbers),
		cmocka_unit_test(loader__units_and_counts),
		cmocka_unit_test(loader__hf_glm45_air),
		cmocka_unit_test(loader__hf_unknown_type_warns),
		cmocka_unit_test(loader__hf_unread_key_warns),
	};
	return cmocka_run_group_tests(tests, to_source_root, NULL);
}
