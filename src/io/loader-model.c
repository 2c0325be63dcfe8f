/* Model and hardware files: the moeplan schema, and Hugging Face
 * config.json read directly (see /work/notes/schema.md, README "Model"). */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "loader-internal.h"

/* Ranges (documented in the README). */
#define MAX_HIDDEN 1048576u             /* 2^20 elements */
#define MAX_INTERMEDIATE 16777216u      /* 2^24 elements */
#define MAX_SHARED_EXPERTS 1024u
#define MAX_DRAFTER_STAGES 64u
#define MAX_WEIGHT_BYTES 1000000000000000ull  /* 1 PB */
#define MAX_KV_BYTES_PER_TOKEN 1e9
#define MAX_FLOPS 1e18                  /* 1 EFLOP/s per GPU */
#define MAX_BANDWIDTH 1e15              /* 1 PB/s per GPU */
/* Smallest non-zero rates: times are bytes / bandwidth and FLOP / peak,
 * and a rate like 1e-300 makes them overflow to inf (written as null).
 * 1 MB/s and 1 MFLOP/s are below any memory bus, link or accelerator of
 * the last four decades, and keep every time finite (the largest byte
 * or FLOP count, ~1e30, over 1e6 is ~1e24 s). */
#define MIN_BANDWIDTH 1e6               /* 1 MB/s */
#define MIN_FLOPS 1e6                   /* 1 MFLOP/s */
#define MAX_HBM_BYTES 1000000000000000ull

static const char *const model_keys[] = {
	"name", "hidden_size", "moe_layers", "dense_layers", "routed_experts",
	"shared_experts", "top_k", "expert_intermediate_size",
	"shared_expert_intermediate_size", "matrices_per_expert", "int4_group_size",
	"routed_format", "shared_format", "expert_compute", "dispatch_format",
	"combine_format", "dense_weight_bytes", "kv_bytes_per_token", "attention",
	"groups", "drafter", "moe_layer_ids", "vocab_size", "tie_word_embeddings", NULL,
};

static const char *const attention_types[] = {"mla", "gqa", NULL};
static const char *const attention_keys_all[] = {
	"type", "kv_layers", "kv_bytes_per_element", "kv_lora_rank", "rope_dim",
	"kv_heads", "head_dim", "sliding_window", "sliding_layers", "heads", "qk_nope_dim",
	"v_head_dim", NULL,
};
static const char *const attention_keys_mla[] = {
	"type", "kv_layers", "kv_bytes_per_element", "kv_lora_rank", "rope_dim", "heads",
	"qk_nope_dim", "v_head_dim", NULL,
};
static const char *const attention_keys_gqa[] = {
	"type", "kv_layers", "kv_bytes_per_element", "kv_heads", "head_dim",
	"sliding_window", "sliding_layers", "heads", NULL,
};
static const char *const group_keys[] = {"n_groups", "topk_groups", NULL};
static const char *const drafter_keys[] = {
	"moe_stages", "routed_experts", "top_k", "hidden_size", "expert_intermediate_size",
	"matrices_per_expert", "routed_format", "other_weight_bytes", NULL,
};

#define FIELD(key) ld_field(field, sizeof(field), what, (key))

static void parse_attention(struct ld *ld, const yaml_node_t *node, const char *what,
			    uint32_t total_layers, struct mp_attention *out)
{
	char field[256];
	if (node->type != YAML_MAPPING_NODE) {
		ld_check_map(ld, node, what, attention_keys_all);
		return;
	}
	int type = -1;
	const yaml_node_t *type_node = ld_require(ld, node, what, "type");
	bool type_ok = type_node && ld_get_enum(ld, type_node, FIELD("type"), attention_types, &type);
	const char *const *keys = attention_keys_all;
	if (type_ok && type == 0) {
		keys = attention_keys_mla;
	} else if (type_ok && type == 1) {
		keys = attention_keys_gqa;
	}
	ld_check_map(ld, node, what, keys);
	struct mp_attention a = *out;
	a.kv_layers = total_layers;
	ld_get_u32(ld, ld_get(ld, node, "kv_layers"), FIELD("kv_layers"), 1, 2 * MP_MAX_LAYERS,
		   &a.kv_layers);
	ld_get_real(ld, ld_get(ld, node, "kv_bytes_per_element"), FIELD("kv_bytes_per_element"),
		    NULL, 0.0, true, 8.0, &a.kv_bytes_per_element);
	ld_get_u32(ld, ld_get(ld, node, "heads"), FIELD("heads"), 1, MP_MAX_EXPERTS, &a.heads);
	if (type == 0) {
		a.kind = MP_ATTENTION_MLA;
		ld_get_u32(ld, ld_require(ld, node, what, "kv_lora_rank"), FIELD("kv_lora_rank"), 1,
			   MAX_HIDDEN, &a.kv_lora_rank);
		ld_get_u32(ld, ld_require(ld, node, what, "rope_dim"), FIELD("rope_dim"), 0,
			   MAX_HIDDEN, &a.rope_dim);
		ld_get_u32(ld, ld_get(ld, node, "qk_nope_dim"), FIELD("qk_nope_dim"), 1,
			   MAX_HIDDEN, &a.qk_nope_dim);
		ld_get_u32(ld, ld_get(ld, node, "v_head_dim"), FIELD("v_head_dim"), 1,
			   MAX_HIDDEN, &a.v_head_dim);
	} else if (type == 1) {
		a.kind = MP_ATTENTION_GQA;
		ld_get_u32(ld, ld_require(ld, node, what, "kv_heads"), FIELD("kv_heads"), 1,
			   MP_MAX_EXPERTS, &a.kv_heads);
		ld_get_u32(ld, ld_require(ld, node, what, "head_dim"), FIELD("head_dim"), 1,
			   MAX_HIDDEN, &a.head_dim);
		ld_get_u32(ld, ld_get(ld, node, "sliding_window"), FIELD("sliding_window"), 0,
			   UINT32_MAX, &a.sliding_window);
		const yaml_node_t *sl = ld_get(ld, node, "sliding_layers");
		if (ld_get_u32(ld, sl, FIELD("sliding_layers"), 0, 2 * MP_MAX_LAYERS,
			       &a.sliding_layers) && sl) {
			if (a.sliding_layers > a.kv_layers) {
				ld_error(ld, sl, "%s: %u is more than kv_layers (%u)",
					 FIELD("sliding_layers"), a.sliding_layers, a.kv_layers);
			} else if (a.sliding_layers > 0 && a.sliding_window == 0) {
				ld_error(ld, sl, "%s: %u sliding layers need a sliding_window > 0",
					 FIELD("sliding_layers"), a.sliding_layers);
			}
		}
	}
	*out = a;
}

static void parse_drafter(struct ld *ld, const yaml_node_t *node, const char *what,
			  const struct mp_model *model, struct mp_drafter *out)
{
	char field[256];
	if (!ld_check_map(ld, node, what, drafter_keys)) {
		return;
	}
	struct mp_drafter d = {
		.hidden_size = model->hidden_size,
		.expert_intermediate_size = model->expert_intermediate_size,
		.matrices_per_expert = model->matrices_per_expert,
		.routed_format = model->routed_format,
	};
	ld_get_u32(ld, ld_require(ld, node, what, "moe_stages"), FIELD("moe_stages"), 0,
		   MAX_DRAFTER_STAGES, &d.moe_stages);
	const yaml_node_t *e = d.moe_stages ? ld_require(ld, node, what, "routed_experts")
					    : ld_get(ld, node, "routed_experts");
	bool e_ok = ld_get_u32(ld, e, FIELD("routed_experts"), 1, MP_MAX_EXPERTS, &d.routed_experts);
	const yaml_node_t *k = d.moe_stages ? ld_require(ld, node, what, "top_k")
					    : ld_get(ld, node, "top_k");
	if (ld_get_u32(ld, k, FIELD("top_k"), 1, MP_MAX_EXPERTS, &d.top_k) && k && e_ok && e &&
	    d.top_k > d.routed_experts) {
		ld_error(ld, k, "%s: %u is more than routed_experts (%u)", FIELD("top_k"), d.top_k,
			 d.routed_experts);
	}
	ld_get_u32(ld, ld_get(ld, node, "hidden_size"), FIELD("hidden_size"), 1, MAX_HIDDEN,
		   &d.hidden_size);
	ld_get_u32(ld, ld_get(ld, node, "expert_intermediate_size"),
		   FIELD("expert_intermediate_size"), 1, MAX_INTERMEDIATE,
		   &d.expert_intermediate_size);
	ld_get_u32(ld, ld_get(ld, node, "matrices_per_expert"), FIELD("matrices_per_expert"), 2, 3,
		   &d.matrices_per_expert);
	ld_get_format(ld, ld_get(ld, node, "routed_format"), FIELD("routed_format"),
		      &d.routed_format);
	ld_get_bytes(ld, ld_get(ld, node, "other_weight_bytes"), FIELD("other_weight_bytes"), 0,
		     MAX_WEIGHT_BYTES, &d.other_weight_bytes);
	*out = d;
}

static void parse_groups(struct ld *ld, const yaml_node_t *node, const char *what,
			 struct mp_model *m, bool experts_ok, bool top_k_ok)
{
	char field[256];
	if (!ld_check_map(ld, node, what, group_keys)) {
		return;
	}
	const yaml_node_t *ng = ld_require(ld, node, what, "n_groups");
	const yaml_node_t *tg = ld_require(ld, node, what, "topk_groups");
	uint32_t n = 0;
	uint32_t t = 0;
	bool n_ok = ld_get_u32(ld, ng, FIELD("n_groups"), 1, MP_MAX_EXPERTS, &n) && ng;
	bool t_ok = ld_get_u32(ld, tg, FIELD("topk_groups"), 1, MP_MAX_EXPERTS, &t) && tg;
	if (n_ok && experts_ok && m->routed_experts % n != 0) {
		ld_error(ld, ng, "%s: %u groups do not divide routed_experts (%u) evenly",
			 FIELD("n_groups"), n, m->routed_experts);
		n_ok = false;
	}
	if (n_ok && t_ok && t > n) {
		ld_error(ld, tg, "%s: %u is more than n_groups (%u)", FIELD("topk_groups"), t, n);
		t_ok = false;
	}
	if (n_ok && t_ok && experts_ok && top_k_ok &&
	    (uint64_t)t * (m->routed_experts / n) < m->top_k) {
		ld_error(ld, tg, "%s: %u groups of %u experts cannot hold top_k (%u) experts",
			 FIELD("topk_groups"), t, m->routed_experts / n, m->top_k);
		t_ok = false;
	}
	if (n_ok && t_ok) {
		m->n_groups = n;
		m->topk_groups = t;
	}
}

static void parse_hf(struct ld *ld, const yaml_node_t *node, const char *what, struct mp_model *out);

/* moe_layer_ids: [ids], the MoE layers' 0-based ids among the hidden
 * layers (README "Layer identity"), strictly increasing, one per MoE layer. */
static void parse_moe_layer_ids(struct ld *ld, const yaml_node_t *node, const char *field,
				struct mp_model *m)
{
	const uint32_t hidden = m->moe_layers + m->dense_layers;
	if (node->type != YAML_SEQUENCE_NODE) {
		ld_error(ld, node, "%s: expected a list of layer ids, got %s", field, ld_kind_name(node));
		return;
	}
	size_t n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
	if (n != m->moe_layers) {
		ld_error(ld, node, "%s: %zu ids, expected one per MoE layer (moe_layers %u)", field, n,
			 m->moe_layers);
		return;
	}
	uint32_t *ids = calloc(n ? n : 1, sizeof(*ids));
	if (!ids) {
		ld_fail(ld, MP_ENOMEM);
		return;
	}
	bool ok = true;
	for (size_t i = 0; i < n && ok; i++) {
		const yaml_node_t *item = ld_node(ld, node->data.sequence.items.start[i]);
		char sub[300];
		snprintf(sub, sizeof(sub), "%s[%zu]", field, i);
		ok = ld_get_u32(ld, item, sub, 0, hidden ? hidden - 1 : 0, &ids[i]);
		if (ok && i > 0 && ids[i] <= ids[i - 1]) {
			ld_error(ld, item, "%s: %u after %u; ids must increase (each layer once)", sub,
				 ids[i], ids[i - 1]);
			ok = false;
		}
	}
	if (ok && mp_model_set_moe_layer_ids(m, ids) != 0) {
		ld_fail(ld, MP_ENOMEM);
	}
	free(ids);
}

void ld_parse_model(struct ld *ld, const yaml_node_t *node, const char *what, struct mp_model *out)
{
	char field[256];
	if (node && node->type == YAML_MAPPING_NODE &&
	    (ld_has(ld, node, "model_type") || ld_has(ld, node, "architectures"))) {
		parse_hf(ld, node, what, out);
		return;
	}
	if (!ld_check_map(ld, node, what, model_keys)) {
		return;
	}
	struct mp_model m;
	mp_model_init(&m);
	ld_get_string(ld, ld_get(ld, node, "name"), FIELD("name"), &m.name);
	ld_get_u32(ld, ld_require(ld, node, what, "hidden_size"), FIELD("hidden_size"), 1,
		   MAX_HIDDEN, &m.hidden_size);
	ld_get_u32(ld, ld_require(ld, node, what, "moe_layers"), FIELD("moe_layers"), 1,
		   MP_MAX_LAYERS, &m.moe_layers);
	ld_get_u32(ld, ld_get(ld, node, "dense_layers"), FIELD("dense_layers"), 0, MP_MAX_LAYERS,
		   &m.dense_layers);
	const yaml_node_t *e = ld_require(ld, node, what, "routed_experts");
	bool experts_ok = ld_get_u32(ld, e, FIELD("routed_experts"), 1, MP_MAX_EXPERTS,
				     &m.routed_experts) && e;
	ld_get_u32(ld, ld_get(ld, node, "shared_experts"), FIELD("shared_experts"), 0,
		   MAX_SHARED_EXPERTS, &m.shared_experts);
	const yaml_node_t *k = ld_require(ld, node, what, "top_k");
	bool top_k_ok = ld_get_u32(ld, k, FIELD("top_k"), 1, MP_MAX_EXPERTS, &m.top_k) && k;
	if (top_k_ok && experts_ok && m.top_k > m.routed_experts) {
		ld_error(ld, k, "%s: %u is more than routed_experts (%u)", FIELD("top_k"), m.top_k,
			 m.routed_experts);
		top_k_ok = false;
	}
	ld_get_u32(ld, ld_require(ld, node, what, "expert_intermediate_size"),
		   FIELD("expert_intermediate_size"), 1, MAX_INTERMEDIATE,
		   &m.expert_intermediate_size);
	const yaml_node_t *si = ld_get(ld, node, "shared_expert_intermediate_size");
	m.shared_expert_intermediate_size = m.shared_experts ? m.expert_intermediate_size : 0;
	if (ld_get_u32(ld, si, FIELD("shared_expert_intermediate_size"), 0, MAX_INTERMEDIATE,
		       &m.shared_expert_intermediate_size) && si &&
	    m.shared_experts > 0 && m.shared_expert_intermediate_size == 0) {
		ld_error(ld, si, "%s: must be > 0 when shared_experts is %u",
			 FIELD("shared_expert_intermediate_size"), m.shared_experts);
	}
	ld_get_u32(ld, ld_get(ld, node, "matrices_per_expert"), FIELD("matrices_per_expert"), 2, 3,
		   &m.matrices_per_expert);
	m.drafter.matrices_per_expert = m.matrices_per_expert;
	ld_get_u32(ld, ld_get(ld, node, "int4_group_size"), FIELD("int4_group_size"), 1, 1048576,
		   &m.int4_group_size);
	ld_get_format(ld, ld_get(ld, node, "routed_format"), FIELD("routed_format"),
		      &m.routed_format);
	ld_get_format(ld, ld_get(ld, node, "shared_format"), FIELD("shared_format"),
		      &m.shared_format);
	ld_get_compute(ld, ld_get(ld, node, "expert_compute"), FIELD("expert_compute"),
		       &m.expert_compute);
	ld_get_format(ld, ld_get(ld, node, "dispatch_format"), FIELD("dispatch_format"),
		      &m.dispatch_format);
	ld_get_format(ld, ld_get(ld, node, "combine_format"), FIELD("combine_format"),
		      &m.combine_format);
	ld_get_bytes(ld, ld_require(ld, node, what, "dense_weight_bytes"),
		     FIELD("dense_weight_bytes"), 0, MAX_WEIGHT_BYTES, &m.dense_weight_bytes);
	const yaml_node_t *vocab = ld_get(ld, node, "vocab_size");
	ld_get_u32(ld, vocab, FIELD("vocab_size"), 1, UINT32_MAX, &m.vocab_size);
	ld_get_bool(ld, ld_get(ld, node, "tie_word_embeddings"), FIELD("tie_word_embeddings"),
		    &m.tied_embeddings);
	if (vocab && m.vocab_size && (double)m.vocab_size * m.hidden_size * 2.0 *
					     (m.tied_embeddings ? 1.0 : 2.0) >
				     (double)m.dense_weight_bytes) {
		ld_error(ld, vocab, "%s: a BF16 embedding and LM head of %u x %u exceed "
			 "dense_weight_bytes (%llu)", FIELD("vocab_size"), m.vocab_size,
			 m.hidden_size, (unsigned long long)m.dense_weight_bytes);
	}

	const yaml_node_t *kv = ld_get(ld, node, "kv_bytes_per_token");
	const yaml_node_t *att = ld_get(ld, node, "attention");
	if (!kv && !att) {
		if (what && what[0]) {
			ld_error(ld, node, "%s: missing required field 'kv_bytes_per_token' (or 'attention')",
				 what);
		} else {
			ld_error(ld, node, "missing required field 'kv_bytes_per_token' (or 'attention')");
		}
	} else if (kv && att) {
		ld_error(ld, att, "%s: give either kv_bytes_per_token or attention, not both",
			 FIELD("attention"));
	} else if (kv) {
		m.attention.kind = MP_ATTENTION_DIRECT;
		ld_get_real(ld, kv, FIELD("kv_bytes_per_token"), "bytes", 0.0, false,
			    MAX_KV_BYTES_PER_TOKEN, &m.kv_bytes_per_token);
	} else {
		char sub[256];
		snprintf(sub, sizeof(sub), "%s", FIELD("attention"));
		parse_attention(ld, att, sub, m.moe_layers + m.dense_layers, &m.attention);
		m.kv_bytes_per_token = mp_model_kv_bytes_per_token(&m);
	}
	const yaml_node_t *groups = ld_get(ld, node, "groups");
	if (groups) {
		char sub[256];
		snprintf(sub, sizeof(sub), "%s", FIELD("groups"));
		parse_groups(ld, groups, sub, &m, experts_ok, top_k_ok);
	}
	const yaml_node_t *drafter = ld_get(ld, node, "drafter");
	if (drafter) {
		char sub[256];
		snprintf(sub, sizeof(sub), "%s", FIELD("drafter"));
		parse_drafter(ld, drafter, sub, &m, &m.drafter);
	}
	const yaml_node_t *ids = ld_get(ld, node, "moe_layer_ids");
	if (ids) {
		parse_moe_layer_ids(ld, ids, FIELD("moe_layer_ids"), &m);
	}
	mp_model_finish(out);
	*out = m;
}

/* --------------------------------------------------- Hugging Face config */

enum hf_family {
	HF_DEEPSEEK = 0, /* deepseek_v2, deepseek_v3, kimi_k2 */
	HF_QWEN_MOE,     /* qwen2_moe, qwen3_moe */
	HF_MIXTRAL,
	HF_OLMOE,
	HF_GPT_OSS,
	HF_LLAMA4,
	HF_GENERIC,
};

static const struct {
	const char *model_type;
	const char *architecture;
	enum hf_family family;
} hf_types[] = {
	{"deepseek_v3", "DeepseekV3ForCausalLM", HF_DEEPSEEK},
	{"deepseek_v2", "DeepseekV2ForCausalLM", HF_DEEPSEEK},
	/* GLM-4.5 / 4.6 (issue 26): DeepSeek's layout with GQA attention.
	 * SGLang python/sglang/srt/models/glm4_moe.py (commit 005ffc65):
	 * Glm4MoeDecoderLayer._is_layer_sparse, layer_id >=
	 * first_k_dense_replace and layer_id % moe_layer_freq == 0;
	 * Glm4MoeSparseMoeBlock.shared_experts, one MLP of
	 * moe_intermediate_size * n_shared_experts; MTP layers in
	 * glm4_moe_nextn.py as DeepSeek's. */
	{"glm4_moe", "Glm4MoeForCausalLM", HF_DEEPSEEK},
	{"kimi_k2", NULL, HF_DEEPSEEK},
	{"qwen3_moe", "Qwen3MoeForCausalLM", HF_QWEN_MOE},
	{"qwen2_moe", "Qwen2MoeForCausalLM", HF_QWEN_MOE},
	{"mixtral", "MixtralForCausalLM", HF_MIXTRAL},
	{"olmoe", "OlmoeForCausalLM", HF_OLMOE},
	{"gpt_oss", "GptOssForCausalLM", HF_GPT_OSS},
	{"llama4", "Llama4ForConditionalGeneration", HF_LLAMA4},
	{"llama4_text", "Llama4ForCausalLM", HF_LLAMA4},
};

/* Config keys that change the model (issue 26): each one present is read
 * or named in a warning, with what the model then lacks. A key counts as
 * read once the family's reading has looked at it (hf_value). */
static const struct {
	const char *key;
	const char *lacks;
} hf_watched[] = {
	{"n_shared_experts", "the shared experts' weights and FLOP are not counted"},
	{"num_shared_experts", "the shared experts' weights and FLOP are not counted"},
	{"shared_expert_intermediate_size", "the shared expert's weights and FLOP are not counted"},
	{"first_k_dense_replace", "every layer is taken as an MoE layer"},
	{"moe_layer_freq", "every layer is taken as an MoE layer"},
	{"decoder_sparse_step", "every layer is taken as an MoE layer"},
	{"mlp_only_layers", "every layer is taken as an MoE layer"},
	{"interleave_moe_layer_step", "every layer is taken as an MoE layer"},
	{"num_nextn_predict_layers", "the MTP layers' weights are not counted"},
	{"sliding_window", "every layer's KV cache holds the whole context"},
	{"layer_types", "every layer's KV cache holds the whole context"},
	{"attention_chunk_size", "every layer's KV cache holds the whole context"},
	{"quantization_config", "the weights are taken in torch_dtype"},
	{"n_group", "routing is not group-limited"},
	{"kv_lora_rank", "attention is taken as GQA"},
};
#define HF_WATCHED (sizeof(hf_watched) / sizeof(hf_watched[0]))

struct hf {
	struct ld *ld;
	const yaml_node_t *root;
	const yaml_node_t *cfg; /* text_config for Llama 4, else root */
	const char *what;
	const char *type;       /* for messages */
	bool read[HF_WATCHED];  /* hf_watched[i] looked at */
};

static void hf_mark_read(struct hf *hf, const char *key)
{
	for (size_t i = 0; i < HF_WATCHED; i++) {
		if (strcmp(hf_watched[i].key, key) == 0) {
			hf->read[i] = true;
		}
	}
}

static const yaml_node_t *hf_value(struct hf *hf, const char *key)
{
	hf_mark_read(hf, key);
	const yaml_node_t *v = ld_get(hf->ld, hf->cfg, key);
	if (!v && hf->cfg != hf->root) {
		v = ld_get(hf->ld, hf->root, key);
	}
	return v;
}

/* Each watched key that is present (not null, not 0, not an empty list)
 * and was not read: one warning naming it and what the model lacks. */
static void hf_warn_unread(struct hf *hf)
{
	for (size_t i = 0; i < HF_WATCHED; i++) {
		if (hf->read[i]) {
			continue;
		}
		const yaml_node_t *v = hf_value(hf, hf_watched[i].key);
		const char *text = v ? ld_scalar(v) : NULL;
		bool empty = !v || (text && strcmp(text, "0") == 0) ||
			     (v->type == YAML_SEQUENCE_NODE &&
			      v->data.sequence.items.top == v->data.sequence.items.start) ||
			     (text && strcmp(text, "false") == 0);
		if (empty) {
			continue;
		}
		ld_warn(hf->ld, v, "%s: not read for model_type '%s': %s (write a moeplan model "
			"file to state it)", hf_watched[i].key, hf->type, hf_watched[i].lacks);
	}
}

static bool hf_u32(struct hf *hf, const char *key, bool required, uint32_t min, uint32_t max,
		   uint32_t *out)
{
	char field[256];
	const yaml_node_t *v = hf_value(hf, key);
	if (!v) {
		if (required) {
			ld_error(hf->ld, hf->cfg, "missing required field '%s' (for a Hugging Face '%s' config)",
				 key, hf->type);
		}
		return false;
	}
	return ld_get_u32(hf->ld, v, ld_field(field, sizeof(field), hf->what, key), min, max, out);
}

/* The first of several synonyms that is present. */
static const char *hf_first(struct hf *hf, const char *const *keys)
{
	for (size_t i = 0; keys[i]; i++) {
		if (hf_value(hf, keys[i])) {
			return keys[i];
		}
	}
	return NULL;
}

static bool hf_bool(struct hf *hf, const char *key, bool fallback)
{
	char field[256];
	bool v = fallback;
	ld_get_bool(hf->ld, hf_value(hf, key), ld_field(field, sizeof(field), hf->what, key), &v);
	return v;
}

/* Count entries of a list equal to text (strings) or to an integer. */
static uint32_t hf_count(struct hf *hf, const yaml_node_t *list, const char *text)
{
	uint32_t n = 0;
	if (!list || list->type != YAML_SEQUENCE_NODE) {
		return 0;
	}
	for (yaml_node_item_t *it = list->data.sequence.items.start;
	     it < list->data.sequence.items.top; it++) {
		const char *s = ld_scalar(ld_node(hf->ld, *it));
		if (s && strcmp(s, text) == 0) {
			n++;
		}
	}
	return n;
}

static bool hf_list_has(struct hf *hf, const yaml_node_t *list, uint64_t value)
{
	if (!list || list->type != YAML_SEQUENCE_NODE) {
		return false;
	}
	for (yaml_node_item_t *it = list->data.sequence.items.start;
	     it < list->data.sequence.items.top; it++) {
		const char *s = ld_scalar(ld_node(hf->ld, *it));
		uint64_t v = 0;
		if (s && ld_parse_u64(s, &v) == LDQ_OK && v == value) {
			return true;
		}
	}
	return false;
}

/* Formats from quantization_config and torch_dtype. Returns the bits of
 * the non-expert linear layers (attention, dense FFN). */
static double hf_formats(struct hf *hf, struct mp_model *m)
{
	struct ld *ld = hf->ld;
	char field[256];
	const yaml_node_t *q = ld_get(ld, hf->root, "quantization_config");
	hf_mark_read(hf, "quantization_config");
	const char *dtype = ld_scalar(hf_value(hf, "torch_dtype"));
	if (!dtype) {
		dtype = ld_scalar(hf_value(hf, "dtype"));
	}
	enum mp_format base = MP_FORMAT_BF16;
	if (dtype && strcmp(dtype, "float16") == 0) {
		base = MP_FORMAT_FP16;
	}
	/* float32 checkpoints (OLMoE) are served in 16 bits: vLLM's
	 * dtype "auto" runs FP32 checkpoints in FP16. */
	m->routed_format = base;
	m->shared_format = base;
	m->expert_compute = MP_COMPUTE_BF16;
	m->dispatch_format = MP_FORMAT_BF16;
	m->combine_format = MP_FORMAT_BF16;
	m->drafter.routed_format = base;
	if (!q) {
		return 16.0;
	}
	if (!ld_check_map_lenient(ld, q, "quantization_config")) {
		return 16.0;
	}
	const yaml_node_t *method_node = ld_get(ld, q, "quant_method");
	const char *method = ld_scalar(method_node);
	if (!method) {
		ld_error(ld, q, "quantization_config: missing 'quant_method'");
		return 16.0;
	}
	if (strcasecmp(method, "fp8") == 0) {
		enum mp_format f = ld_get(ld, q, "weight_block_size") ? MP_FORMAT_FP8_BLOCK : MP_FORMAT_FP8;
		m->routed_format = f;
		m->shared_format = f;
		m->drafter.routed_format = f;
		m->expert_compute = MP_COMPUTE_FP8;
		/* DeepSeek-V3 report section 3.3: FP8 dispatch, BF16 combine. */
		m->dispatch_format = MP_FORMAT_FP8;
		return mp_format_bits(f, 0);
	}
	if (strcasecmp(method, "mxfp4") == 0) {
		/* gpt-oss: only the MoE experts are MXFP4; attention, router
		 * and embeddings stay BF16 (its modules_to_not_convert). */
		m->routed_format = MP_FORMAT_MXFP4;
		m->drafter.routed_format = MP_FORMAT_MXFP4;
		return 16.0;
	}
	if (strcasecmp(method, "gptq") == 0 || strcasecmp(method, "awq") == 0) {
		uint32_t bits = 4;
		uint32_t group = 128;
		ld_get_u32(ld, ld_get(ld, q, "bits"), ld_field(field, sizeof(field), "quantization_config", "bits"),
			   4, 8, &bits);
		ld_get_u32(ld, ld_get(ld, q, "group_size"),
			   ld_field(field, sizeof(field), "quantization_config", "group_size"), 1,
			   1048576, &group);
		if (bits != 4 && bits != 8) {
			ld_error(ld, ld_get(ld, q, "bits"), "quantization_config.bits: expected 4 or 8, got %u", bits);
			return 16.0;
		}
		enum mp_format f = bits == 4 ? MP_FORMAT_INT4 : MP_FORMAT_INT8;
		m->routed_format = f;
		m->shared_format = f;
		m->drafter.routed_format = f;
		m->int4_group_size = group;
		return mp_format_bits(f, group);
	}
	char vbuf[64];
	snprintf(vbuf, sizeof(vbuf), "%.40s", method);
	ld_error(ld, method_node,
		 "quantization_config.quant_method: '%s' is not supported (fp8, mxfp4, gptq and awq are); "
		 "write a moeplan model file to state the formats", vbuf);
	return 16.0;
}

static enum hf_family hf_family_of(struct hf *hf, const char **type_out)
{
	struct ld *ld = hf->ld;
	const char *type = ld_scalar(ld_get(ld, hf->root, "model_type"));
	const yaml_node_t *archs = ld_get(ld, hf->root, "architectures");
	const char *arch = NULL;
	if (archs && archs->type == YAML_SEQUENCE_NODE &&
	    archs->data.sequence.items.top > archs->data.sequence.items.start) {
		arch = ld_scalar(ld_node(ld, *archs->data.sequence.items.start));
	}
	for (size_t i = 0; i < sizeof(hf_types) / sizeof(hf_types[0]); i++) {
		if (type && strcmp(type, hf_types[i].model_type) == 0) {
			*type_out = hf_types[i].model_type;
			return hf_types[i].family;
		}
	}
	for (size_t i = 0; i < sizeof(hf_types) / sizeof(hf_types[0]); i++) {
		if (!type && arch && hf_types[i].architecture &&
		    strcmp(arch, hf_types[i].architecture) == 0) {
			*type_out = hf_types[i].model_type;
			return hf_types[i].family;
		}
	}
	*type_out = type ? type : (arch ? arch : "unknown");
	return HF_GENERIC;
}

/* Which layers carry experts (hidden-layer ids into m's moe_layer_ids,
 * moe_layers, dense_layers): the same tests as the engines' model code
 * (SGLang python/sglang/srt/models/deepseek_v2.py: layer_id >=
 * first_k_dense_replace and layer_id % moe_layer_freq == 0; qwen2_moe.py:
 * not in mlp_only_layers and (layer_id + 1) % decoder_sparse_step == 0;
 * llama4.py Llama4DecoderLayer._is_moe_layer: (layer_id + 1) %
 * interleave_moe_layer_step == 0). False when out of memory (reported). */
static bool hf_moe_layers(struct hf *hf, enum hf_family family, uint32_t layers, struct mp_model *m)
{
	struct ld *ld = hf->ld;
	uint32_t first_dense = 0;
	uint32_t freq = 1;
	uint32_t step = 1;
	const yaml_node_t *mlp_only = NULL;
	/* An unknown model_type (HF_GENERIC) takes both rules, DeepSeek's
	 * and Qwen's, from the keys it has (issue 26; warned in parse_hf). */
	if (family == HF_DEEPSEEK || family == HF_GENERIC) {
		hf_u32(hf, "first_k_dense_replace", false, 0, MP_MAX_LAYERS, &first_dense);
		hf_u32(hf, "moe_layer_freq", false, 1, MP_MAX_LAYERS, &freq);
	}
	if (family == HF_QWEN_MOE || family == HF_GENERIC) {
		hf_u32(hf, "decoder_sparse_step", false, 1, MP_MAX_LAYERS, &step);
		mlp_only = hf_value(hf, "mlp_only_layers");
	} else if (family == HF_LLAMA4) {
		hf_u32(hf, "interleave_moe_layer_step", false, 1, MP_MAX_LAYERS, &step);
	}
	uint32_t *moe_ids = calloc(layers ? layers : 1, sizeof(*moe_ids));
	if (!moe_ids) {
		ld_fail(ld, MP_ENOMEM);
		return false;
	}
	uint32_t moe_layers = 0;
	for (uint32_t i = 0; i < layers; i++) {
		bool moe = i >= first_dense && i % freq == 0 && (i + 1) % step == 0 &&
			   !hf_list_has(hf, mlp_only, i);
		if (moe) {
			moe_ids[moe_layers++] = i;
		}
	}
	if (layers && moe_layers == 0) {
		ld_error(ld, hf->root, "the config has no MoE layer (%u layers, all dense)", layers);
	}
	m->moe_layers = moe_layers;
	m->dense_layers = layers - moe_layers;
	if (moe_layers > 0 && mp_model_set_moe_layer_ids(m, moe_ids) != 0) {
		ld_fail(ld, MP_ENOMEM);
	}
	free(moe_ids);
	return true;
}

/* Shared experts: DeepSeek's n_shared_experts of the routed shape,
 * Qwen's one shared MLP of shared_expert_intermediate_size, Llama 4's one
 * of the routed shape (Llama4TextMoe.shared_expert). */
static void hf_shared_experts(struct hf *hf, enum hf_family family, struct mp_model *m)
{
	static const char *const count_keys[] = {"n_shared_experts", "num_shared_experts", NULL};
	const char *ck = family == HF_GENERIC ? hf_first(hf, count_keys) : NULL;
	if (ck) {
		/* An unknown model_type: n shared experts, each of
		 * shared_expert_intermediate_size when given, else of the
		 * routed experts' shape (DeepSeek's and GLM's reading). */
		uint32_t si = m->expert_intermediate_size;
		hf_u32(hf, ck, false, 0, MAX_SHARED_EXPERTS, &m->shared_experts);
		hf_u32(hf, "shared_expert_intermediate_size", false, 0, MAX_INTERMEDIATE, &si);
		m->shared_expert_intermediate_size = m->shared_experts ? si : 0;
	} else if (family == HF_DEEPSEEK) {
		hf_u32(hf, "n_shared_experts", false, 0, MAX_SHARED_EXPERTS, &m->shared_experts);
		m->shared_expert_intermediate_size = m->shared_experts ? m->expert_intermediate_size : 0;
	} else if (family == HF_QWEN_MOE || hf_value(hf, "shared_expert_intermediate_size")) {
		uint32_t si = 0;
		hf_u32(hf, "shared_expert_intermediate_size", false, 0, MAX_INTERMEDIATE, &si);
		m->shared_experts = si ? 1 : 0;
		m->shared_expert_intermediate_size = si;
	} else if (family == HF_LLAMA4) {
		/* Llama 4: every MoE layer has one shared expert of the
		 * routed experts' shape (Llama4TextMoe.shared_expert). */
		m->shared_experts = 1;
		m->shared_expert_intermediate_size = m->expert_intermediate_size;
	}
}

/* Attention and KV cache into m->attention (MLA with kv_lora_rank, else
 * GQA with its sliding windows); returns the attention parameters of one
 * layer. */
static double hf_attention(struct hf *hf, enum hf_family family, uint32_t layers, struct mp_model *m)
{
	const uint32_t h = m->hidden_size;
	uint32_t heads = 0;
	hf_u32(hf, "num_attention_heads", true, 1, MP_MAX_EXPERTS, &heads);
	m->attention.heads = heads;
	double attn_params = 0.0;
	m->attention.kv_layers = layers;
	if (hf_value(hf, "kv_lora_rank")) {
		uint32_t q_lora = 0;
		uint32_t nope = 0;
		uint32_t v_dim = 0;
		m->attention.kind = MP_ATTENTION_MLA;
		hf_u32(hf, "kv_lora_rank", true, 1, MAX_HIDDEN, &m->attention.kv_lora_rank);
		hf_u32(hf, "qk_rope_head_dim", true, 0, MAX_HIDDEN, &m->attention.rope_dim);
		hf_u32(hf, "qk_nope_head_dim", true, 0, MAX_HIDDEN, &nope);
		hf_u32(hf, "v_head_dim", true, 1, MAX_HIDDEN, &v_dim);
		hf_u32(hf, "q_lora_rank", false, 1, MAX_HIDDEN, &q_lora);
		m->attention.qk_nope_dim = nope;
		m->attention.v_head_dim = v_dim;
		const double qk = (double)nope + m->attention.rope_dim;
		const double dh = h;
		const double q = q_lora ? dh * q_lora + (double)q_lora * heads * qk : dh * heads * qk;
		const double kv = dh * ((double)m->attention.kv_lora_rank + m->attention.rope_dim) +
				  (double)m->attention.kv_lora_rank * heads * (nope + (double)v_dim);
		attn_params = q + kv + (double)heads * v_dim * dh;
	} else {
		uint32_t kv_heads = heads;
		uint32_t head_dim = heads ? h / heads : 0;
		m->attention.kind = MP_ATTENTION_GQA;
		hf_u32(hf, "num_key_value_heads", false, 1, MP_MAX_EXPERTS, &kv_heads);
		hf_u32(hf, "head_dim", false, 1, MAX_HIDDEN, &head_dim);
		m->attention.kv_heads = kv_heads;
		m->attention.head_dim = head_dim;
		const double dh = h;
		attn_params = dh * heads * head_dim + 2.0 * dh * kv_heads * head_dim +
			      (double)heads * head_dim * dh;
		const yaml_node_t *layer_types = hf_value(hf, "layer_types");
		uint32_t window = 0;
		if (family == HF_LLAMA4 && hf_value(hf, "attention_chunk_size")) {
			/* iRoPE: chunked local attention except every
			 * no_rope_layer_interval-th (default 4) global layer;
			 * a chunked layer keeps at most one chunk. */
			uint32_t interval = 4;
			hf_u32(hf, "attention_chunk_size", false, 1, UINT32_MAX, &window);
			hf_u32(hf, "no_rope_layer_interval", false, 1, MP_MAX_LAYERS, &interval);
			m->attention.sliding_window = window;
			m->attention.sliding_layers = layers - layers / interval;
		} else if (hf_value(hf, "sliding_window") && layer_types) {
			hf_u32(hf, "sliding_window", false, 1, UINT32_MAX, &window);
			m->attention.sliding_window = window;
			m->attention.sliding_layers = hf_count(hf, layer_types, "sliding_attention");
		} else if (family == HF_QWEN_MOE && hf_value(hf, "sliding_window") &&
			   hf_bool(hf, "use_sliding_window", false)) {
			/* Qwen2's rule (layers from max_window_layers on slide)
			 * is not modelled: said, not dropped (issue 26). */
			ld_warn(hf->ld, hf_value(hf, "use_sliding_window"),
				"use_sliding_window: the sliding window of a '%s' config is not read: "
				"every layer's KV cache holds the whole context", hf->type);
		} else if (hf_value(hf, "sliding_window") && family != HF_QWEN_MOE &&
			   hf_bool(hf, "use_sliding_window", true)) {
			/* Mistral-style: every layer slides when a window is set. */
			hf_u32(hf, "sliding_window", false, 1, UINT32_MAX, &window);
			m->attention.sliding_window = window;
			m->attention.sliding_layers = layers;
		}
		if (m->attention.sliding_layers > layers) {
			m->attention.sliding_layers = layers;
		}
	}
	return attn_params;
}

/* Replicated weights (dense_weight_bytes; vocab_size, tied_embeddings):
 * attention of every layer and the dense FFN of dense layers in the
 * linear format (linear_bits per weight), the router, input embedding and
 * (untied) LM head in BF16. */
static void hf_replicated_weights(struct hf *hf, struct mp_model *m, double attn_params,
				  uint32_t dense_i, uint32_t layers, double linear_bits)
{
	uint32_t vocab = 0;
	hf_u32(hf, "vocab_size", true, 1, UINT32_MAX, &vocab);
	const bool tied = hf_bool(hf, "tie_word_embeddings", false);
	m->vocab_size = vocab;
	m->tied_embeddings = tied;
	const double dh = m->hidden_size;
	const double linear = attn_params * layers +
			      (double)m->matrices_per_expert * dh * dense_i * m->dense_layers;
	const double bf16 = dh * m->routed_experts * m->moe_layers + (tied ? 1.0 : 2.0) * vocab * dh;
	m->dense_weight_bytes = (uint64_t)llround(linear * linear_bits / 8.0 + bf16 * 2.0);
}

/* DeepSeek multi-token prediction layers, used as the speculative
 * drafter: one MoE layer each, with its own attention, an eh_proj of
 * 2h x h, a shared expert and a router (V3 report section 2.2). */
static void hf_mtp_drafter(struct hf *hf, struct mp_model *m, double attn_params, double linear_bits)
{
	uint32_t mtp = 0;
	if (hf_u32(hf, "num_nextn_predict_layers", false, 0, MAX_DRAFTER_STAGES, &mtp) && mtp > 0) {
		m->drafter.moe_stages = mtp;
		m->drafter.routed_experts = m->routed_experts;
		m->drafter.top_k = m->top_k;
		m->drafter.hidden_size = m->hidden_size;
		m->drafter.expert_intermediate_size = m->expert_intermediate_size;
		m->drafter.matrices_per_expert = m->matrices_per_expert;
		const double dh = m->hidden_size;
		const double shared = (double)m->matrices_per_expert * dh *
				      m->shared_expert_intermediate_size * m->shared_experts;
		const double per_stage = (attn_params + 2.0 * dh * dh) * linear_bits / 8.0 +
					 shared * mp_format_bits(m->shared_format, m->int4_group_size) / 8.0 +
					 dh * m->routed_experts * 2.0;
		m->drafter.other_weight_bytes = (uint64_t)llround(per_stage * mtp);
	}
}

/* Read a Hugging Face config.json. Unknown keys are ignored. The weights
 * that are replicated on every GPU (dense_weight_bytes) are estimated from
 * the shapes: attention projections of every layer and the dense FFN of
 * dense layers in the checkpoint's linear format, plus the router, input
 * embedding and (untied) LM head in BF16; norms and biases are ignored
 * (under 0.1%). See README "Hugging Face config.json". */
static void parse_hf(struct ld *ld, const yaml_node_t *node, const char *what, struct mp_model *out)
{
	char field[256];
	struct hf hf = {.ld = ld, .root = node, .cfg = node, .what = what};
	if (!ld_check_map_lenient(ld, node, what)) {
		return;
	}
	const char *type = NULL;
	enum hf_family family = hf_family_of(&hf, &type);
	hf.type = type;
	const yaml_node_t *text_config = ld_get(ld, node, "text_config");
	if (family == HF_LLAMA4 && text_config) {
		if (!ld_check_map_lenient(ld, text_config, "text_config")) {
			return;
		}
		hf.cfg = text_config;
	}
	struct mp_model m;
	mp_model_init(&m);
	const size_t errors_before = ld->errors;

	const char *name = ld_scalar(ld_get(ld, node, "_name_or_path"));
	if (!name || !name[0]) {
		name = type;
	}
	m.name = ld_strdup(name);
	if (!m.name) {
		ld_fail(ld, MP_ENOMEM);
		return;
	}

	static const char *const expert_keys[] = {"n_routed_experts", "num_experts", "num_local_experts", NULL};
	static const char *const topk_keys[] = {"num_experts_per_tok", "experts_per_token", "moe_topk", NULL};
	const char *ek = hf_first(&hf, expert_keys);
	if (!ek) {
		/* Not a mixture of experts (or a layout we do not know): one
		 * message says so; the missing MoE fields would only repeat it. */
		ld_error(ld, node, "unsupported model_type '%s': no routed expert count "
			 "(looked for n_routed_experts, num_experts, num_local_experts)", type);
		mp_model_finish(&m);
		return;
	}
	if (family == HF_GENERIC) {
		const yaml_node_t *tn = ld_get(ld, node, "model_type");
		ld_warn(ld, tn ? tn : node, "model_type '%s' is not one moeplan knows (deepseek_v2, "
			"deepseek_v3, kimi_k2, glm4_moe, qwen2_moe, qwen3_moe, mixtral, olmoe, gpt_oss, "
			"llama4): read with the generic rules (shared experts from n_shared_experts or "
			"shared_expert_intermediate_size, dense layers from first_k_dense_replace, "
			"moe_layer_freq, decoder_sparse_step, mlp_only_layers); check the layers and "
			"weights it reports", type);
	}
	hf_u32(&hf, ek, true, 1, MP_MAX_EXPERTS, &m.routed_experts);
	uint32_t h = 0;
	uint32_t layers = 0;
	hf_u32(&hf, "hidden_size", true, 1, MAX_HIDDEN, &h);
	hf_u32(&hf, "num_hidden_layers", true, 1, MP_MAX_LAYERS, &layers);
	const char *kk = hf_first(&hf, topk_keys);
	if (!kk) {
		ld_error(ld, node, "missing required field 'num_experts_per_tok' (for a Hugging Face '%s' config)",
			 type);
	} else if (hf_u32(&hf, kk, true, 1, MP_MAX_EXPERTS, &m.top_k) && m.routed_experts &&
		   m.top_k > m.routed_experts) {
		ld_error(ld, hf_value(&hf, kk), "%s: %u is more than the %u routed experts",
			 ld_field(field, sizeof(field), what, kk), m.top_k, m.routed_experts);
	}
	uint32_t dense_i = 0;
	if (hf_value(&hf, "moe_intermediate_size")) {
		hf_u32(&hf, "moe_intermediate_size", true, 1, MAX_INTERMEDIATE,
		       &m.expert_intermediate_size);
		hf_u32(&hf, "intermediate_size", false, 1, MAX_INTERMEDIATE, &dense_i);
	} else {
		hf_u32(&hf, "intermediate_size", true, 1, MAX_INTERMEDIATE,
		       &m.expert_intermediate_size);
		dense_i = m.expert_intermediate_size;
		hf_u32(&hf, "intermediate_size_mlp", false, 1, MAX_INTERMEDIATE, &dense_i);
	}
	m.hidden_size = h;

	if (!hf_moe_layers(&hf, family, layers, &m)) {
		mp_model_finish(&m);
		return;
	}

	hf_shared_experts(&hf, family, &m);

	const double attn_params = hf_attention(&hf, family, layers, &m);

	/* Group-limited routing (DeepSeek-V3: 8 groups, top 4). */
	uint32_t n_group = 0;
	uint32_t topk_group = 0;
	if (hf_u32(&hf, "n_group", false, 1, MP_MAX_EXPERTS, &n_group) && n_group > 1 &&
	    hf_u32(&hf, "topk_group", false, 1, MP_MAX_EXPERTS, &topk_group) &&
	    m.routed_experts % n_group == 0 && topk_group <= n_group) {
		m.n_groups = n_group;
		m.topk_groups = topk_group;
	}

	const double linear_bits = hf_formats(&hf, &m);
	m.kv_bytes_per_token = mp_model_kv_bytes_per_token(&m);

	hf_replicated_weights(&hf, &m, attn_params, dense_i, layers, linear_bits);
	if (family == HF_DEEPSEEK) {
		hf_mtp_drafter(&hf, &m, attn_params, linear_bits);
	}

	if (ld->errors == errors_before) {
		hf_warn_unread(&hf);
	}
	if (ld->errors != errors_before) {
		mp_model_finish(&m);
		return;
	}
	mp_model_finish(out);
	*out = m;
}

int mp_load_model(const char *path, struct mp_model *out, struct mp_diags *diags)
{
	struct ld ld;
	int rc = ld_open(&ld, path, diags);
	if (rc == 0) {
		struct mp_model m;
		mp_model_init(&m);
		/* A hardware file (or a scenario, a plan) here would get one
		 * "unknown field" per key: say what it is, once. */
		const char *key = NULL, *instead = NULL;
		const char *kind = ld_file_kind(&ld, ld_root(&ld), &key, &instead);
		if (!kind && ld_root(&ld) && ld_root(&ld)->type == YAML_MAPPING_NODE &&
		    ld_has(&ld, ld_root(&ld), "prefill") && !ld_has(&ld, ld_root(&ld), "routed_experts")) {
			kind = "a scenario";
			key = "prefill";
		}
		if (kind && strcmp(kind, "a model file") != 0 && strcmp(kind, "a Hugging Face config.json") != 0) {
			ld_error(&ld, ld_root(&ld), "this is %s (it has '%s'), not a model file: --model takes "
				 "a model file (see plans/models/)%s", kind, key,
				 strcmp(kind, "a hardware file") == 0 ? "; give this one to --hardware" : "");
		} else {
			ld_parse_model(&ld, ld_root(&ld), "", &m);
		}
		if (ld.status == 0) {
			mp_model_finish(out);
			*out = m;
		} else {
			mp_model_finish(&m);
		}
		rc = ld.status;
	}
	ld_close(&ld);
	return rc;
}

/* --------------------------------------------------------------- hardware */

static const char *const hardware_keys[] = {
	"name", "peak_flops", "hbm_bytes", "hbm_bandwidth", "scale_up_domain_gpus",
	"gpus_per_node", "scale_up_bandwidth", "scale_out_bandwidth", "efficiency", "kernels", NULL,
};

static const char *const efficiency_keys[] = {
	"hbm", "gemm", "attention", "scale_up", "scale_out", "exchange_latency", "step_overhead",
	"kernel_fixed", "moe_fixed", "moe_fixed_per_expert", NULL,
};

/* The achieved fractions and fixed times of step.h (model.h documents
 * each default and its source); absent = 0 = the default. */
static void parse_efficiency(struct ld *ld, const yaml_node_t *node, const char *what,
			     struct mp_efficiency *out)
{
	char field[256];
	if (!ld_check_map(ld, node, what, efficiency_keys)) {
		return;
	}
	struct mp_efficiency e = *out;
	double *fractions[] = {&e.hbm, &e.gemm, &e.attention, &e.scale_up, &e.scale_out};
	for (size_t i = 0; i < sizeof(fractions) / sizeof(fractions[0]); i++) {
		ld_get_real(ld, ld_get(ld, node, efficiency_keys[i]), FIELD(efficiency_keys[i]), NULL,
			    0.0, true, 1.0, fractions[i]);
	}
	ld_get_real(ld, ld_get(ld, node, "exchange_latency"), FIELD("exchange_latency"), "seconds",
		    0.0, true, 1.0, &e.exchange_latency_s);
	ld_get_real(ld, ld_get(ld, node, "step_overhead"), FIELD("step_overhead"), "seconds", 0.0,
		    true, 10.0, &e.step_overhead_s);
	/* fixed kernel times (issue 23 item 2): (0, 1 s] */
	ld_get_real(ld, ld_get(ld, node, "kernel_fixed"), FIELD("kernel_fixed"), "seconds", 0.0,
		    true, 1.0, &e.kernel_fixed_s);
	ld_get_real(ld, ld_get(ld, node, "moe_fixed"), FIELD("moe_fixed"), "seconds", 0.0, true, 1.0,
		    &e.moe_fixed_s);
	ld_get_real(ld, ld_get(ld, node, "moe_fixed_per_expert"), FIELD("moe_fixed_per_expert"),
		    "seconds", 0.0, true, 1.0, &e.moe_fixed_per_expert_s);
	*out = e;
}

/* A rate that may be 0 ("none": a compute class the GPU lacks, a link
 * not given) but otherwise at least min (see MIN_BANDWIDTH). */
static bool get_rate_or_zero(struct ld *ld, const yaml_node_t *node, const char *field,
			     const char *kind, double min, const char *min_text, double max,
			     double *out)
{
	double v = *out;
	if (!ld_get_real(ld, node, field, kind, 0.0, false, max, &v)) {
		return false;
	}
	if (node && v > 0.0 && v < min) {
		char vbuf[48];
		snprintf(vbuf, sizeof(vbuf), "%.40s", ld_scalar(node));
		ld_error(ld, node, "%s: expected 0 (none) or at least %s, got '%s' (smaller rates "
			 "make step times overflow)", field, min_text, vbuf);
		return false;
	}
	*out = v;
	return true;
}

/* `kernels: FILE`: the GPU's kernel table (issue 23), resolved against the
 * file it is written in, loaded now so that its errors name their rows. */
static void parse_kernels(struct ld *ld, const yaml_node_t *node, const char *field,
			  struct mp_hardware *hw)
{
	char *rel = NULL;
	if (!node || !ld_get_string(ld, node, field, &rel) || !rel) {
		free(rel);
		return;
	}
	bool found = false;
	char *path = ld_resolve_path(ld->path, rel, &found);
	if (!path) {
		free(rel);
		ld_fail(ld, MP_ENOMEM);
		return;
	}
	if (!found) {
		char where[512];
		ld_error(ld, node, "%s: cannot find the kernel table '%s' (%s)", field, rel,
			 ld_looked_in(ld->path, rel, where, sizeof(where)));
		free(rel);
		free(path);
		return;
	}
	int rc = mp_load_kernel_table(path, &hw->kernels, ld->diags);
	free(path);
	if (rc != 0) {
		/* its own errors name the table's rows; this one names the line
		 * that chose it */
		if (rc == MP_ENOMEM) {
			ld_fail(ld, rc);
		} else {
			ld_error(ld, node, "%s: the kernel table '%s' cannot be used (its errors above)", field, rel);
		}
		free(rel);
		return;
	}
	/* as written: the output names it the same from any folder */
	hw->kernels_path = rel;
}

void ld_parse_hardware(struct ld *ld, const yaml_node_t *node, const char *what,
		       struct mp_hardware *out)
{
	char field[256];
	if (!ld_check_map(ld, node, what, hardware_keys)) {
		return;
	}
	struct mp_hardware hw;
	mp_hardware_init(&hw);
	ld_get_string(ld, ld_get(ld, node, "name"), FIELD("name"), &hw.name);
	const yaml_node_t *peaks = ld_require(ld, node, what, "peak_flops");
	if (peaks) {
		const char *peak_keys[MP_COMPUTE_COUNT + 1];
		for (int i = 0; i < MP_COMPUTE_COUNT; i++) {
			peak_keys[i] = mp_compute_name((enum mp_compute)i);
		}
		peak_keys[MP_COMPUTE_COUNT] = NULL;
		char sub[256];
		snprintf(sub, sizeof(sub), "%s", FIELD("peak_flops"));
		if (ld_check_map(ld, peaks, sub, peak_keys)) {
			bool any = false;
			bool all_ok = true;
			for (int i = 0; i < MP_COMPUTE_COUNT; i++) {
				all_ok &= get_rate_or_zero(ld, ld_get(ld, peaks, peak_keys[i]),
							   ld_field(field, sizeof(field), sub, peak_keys[i]),
							   "flop/s", MIN_FLOPS, "1 MFLOP/s", MAX_FLOPS,
							   &hw.peak_flops[i]);
				any |= hw.peak_flops[i] > 0.0;
			}
			if (all_ok && !any) {
				ld_error(ld, peaks, "%s: give a dense peak > 0 for at least one of fp4, fp8, bf16, int8",
					 sub);
			}
		}
	}
	ld_get_bytes(ld, ld_require(ld, node, what, "hbm_bytes"), FIELD("hbm_bytes"), 1,
		     MAX_HBM_BYTES, &hw.hbm_bytes);
	ld_get_real(ld, ld_require(ld, node, what, "hbm_bandwidth"), FIELD("hbm_bandwidth"),
		    "bytes/s", MIN_BANDWIDTH, false, MAX_BANDWIDTH, &hw.hbm_bw_bytes_per_s);
	ld_get_u32(ld, ld_require(ld, node, what, "scale_up_domain_gpus"),
		   FIELD("scale_up_domain_gpus"), 1, MP_MAX_GPUS, &hw.scale_up_domain_gpus);
	hw.gpus_per_node = hw.scale_up_domain_gpus;
	ld_get_u32(ld, ld_get(ld, node, "gpus_per_node"), FIELD("gpus_per_node"), 1, MP_MAX_GPUS,
		   &hw.gpus_per_node);
	get_rate_or_zero(ld, ld_get(ld, node, "scale_up_bandwidth"), FIELD("scale_up_bandwidth"),
			 "bytes/s", MIN_BANDWIDTH, "1 MB/s", MAX_BANDWIDTH, &hw.scale_up_bw_bytes_per_s);
	get_rate_or_zero(ld, ld_get(ld, node, "scale_out_bandwidth"), FIELD("scale_out_bandwidth"),
			 "bytes/s", MIN_BANDWIDTH, "1 MB/s", MAX_BANDWIDTH,
			 &hw.scale_out_bw_bytes_per_s);
	const yaml_node_t *eff = ld_get(ld, node, "efficiency");
	if (eff) {
		char sub[256];
		snprintf(sub, sizeof(sub), "%s", FIELD("efficiency"));
		parse_efficiency(ld, eff, sub, &hw.efficiency);
	}
	parse_kernels(ld, ld_get(ld, node, "kernels"), FIELD("kernels"), &hw);
	mp_hardware_finish(out);
	*out = hw;
}

int mp_load_hardware(const char *path, struct mp_hardware *out, struct mp_diags *diags)
{
	struct ld ld;
	int rc = ld_open(&ld, path, diags);
	if (rc == 0) {
		struct mp_hardware hw;
		mp_hardware_init(&hw);
		ld_parse_hardware(&ld, ld_root(&ld), "", &hw);
		if (ld.status == 0) {
			mp_hardware_finish(out);
			*out = hw;
		} else {
			mp_hardware_finish(&hw);
		}
		rc = ld.status;
	}
	ld_close(&ld);
	return rc;
}
