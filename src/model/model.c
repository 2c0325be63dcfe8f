/* Number formats and model/hardware bookkeeping. */
#include "moeplan/model.h"
#include "moeplan/diag.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void mp_model_init(struct mp_model *model)
{
	*model = (struct mp_model){
		.matrices_per_expert = 3,
		.int4_group_size = 128,
		.routed_format = MP_FORMAT_BF16,
		.shared_format = MP_FORMAT_BF16,
		.expert_compute = MP_COMPUTE_BF16,
		.dispatch_format = MP_FORMAT_FP8,
		.combine_format = MP_FORMAT_BF16,
		.attention = {.kind = MP_ATTENTION_DIRECT, .kv_bytes_per_element = 2.0},
		.drafter = {.matrices_per_expert = 3, .routed_format = MP_FORMAT_BF16},
	};
}

void mp_model_finish(struct mp_model *model)
{
	if (!model) {
		return;
	}
	free(model->name);
	model->name = NULL;
	free(model->moe_layer_ids);
	model->moe_layer_ids = NULL;
}

uint32_t mp_model_hidden_layers(const struct mp_model *model)
{
	return model->moe_layers + model->dense_layers;
}

uint32_t mp_model_moe_layer_id(const struct mp_model *model, uint32_t k)
{
	return model->moe_layer_ids ? model->moe_layer_ids[k] : model->dense_layers + k;
}

uint32_t mp_model_moe_index(const struct mp_model *model, uint32_t layer)
{
	if (!model->moe_layer_ids) {
		return layer >= model->dense_layers && layer < mp_model_hidden_layers(model)
			? layer - model->dense_layers : UINT32_MAX;
	}
	uint32_t lo = 0;
	uint32_t hi = model->moe_layers;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (model->moe_layer_ids[mid] < layer) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo < model->moe_layers && model->moe_layer_ids[lo] == layer ? lo : UINT32_MAX;
}

int mp_model_set_moe_layer_ids(struct mp_model *model, const uint32_t *ids)
{
	free(model->moe_layer_ids);
	model->moe_layer_ids = NULL;
	if (!ids) {
		return 0;
	}
	const uint32_t hidden = mp_model_hidden_layers(model);
	for (uint32_t k = 0; k < model->moe_layers; k++) {
		if (ids[k] >= hidden || (k > 0 && ids[k] <= ids[k - 1])) {
			return MP_EINVAL;
		}
	}
	if (model->moe_layers == 0) {
		return 0;
	}
	model->moe_layer_ids = malloc((size_t)model->moe_layers * sizeof(*ids));
	if (!model->moe_layer_ids) {
		return MP_ENOMEM;
	}
	memcpy(model->moe_layer_ids, ids, (size_t)model->moe_layers * sizeof(*ids));
	return 0;
}

void mp_hardware_init(struct mp_hardware *hw)
{
	*hw = (struct mp_hardware){0};
}

void mp_hardware_finish(struct mp_hardware *hw)
{
	if (!hw) {
		return;
	}
	free(hw->name);
	hw->name = NULL;
	free(hw->kernels_path);
	hw->kernels_path = NULL;
	mp_kernel_table_finish(&hw->kernels);
	hw->kernels = (struct mp_kernel_table){0};
}

static const struct {
	const char *name;
	double bits; /* per stored value, scales included */
} formats[MP_FORMAT_COUNT] = {
	/* OCP Microscaling Formats (MX) v1.0: E2M1 + E8M0 scale per 32. */
	[MP_FORMAT_MXFP4] = {"mxfp4", 4.0 + 8.0 / 32.0},
	/* NVIDIA NVFP4: E2M1 + E4M3 scale per 16 (the per-tensor FP32 scale
	 * is negligible). */
	[MP_FORMAT_NVFP4] = {"nvfp4", 4.0 + 8.0 / 16.0},
	[MP_FORMAT_FP8] = {"fp8", 8.0},
	/* DeepSeek-V3 report section 3.3: 128x128 blocks, FP32 scale each. */
	[MP_FORMAT_FP8_BLOCK] = {"fp8_block", 8.0 + 32.0 / (128.0 * 128.0)},
	[MP_FORMAT_BF16] = {"bf16", 16.0},
	[MP_FORMAT_FP16] = {"fp16", 16.0},
	[MP_FORMAT_FP32] = {"fp32", 32.0},
	[MP_FORMAT_INT8] = {"int8", 8.0},
	/* AWQ/GPTQ style: 4-bit values, one 16-bit scale per group. */
	[MP_FORMAT_INT4] = {"int4", 4.0},
};

double mp_format_bits(enum mp_format format, uint32_t group_size)
{
	if ((unsigned)format >= MP_FORMAT_COUNT) {
		return 0.0;
	}
	if (format == MP_FORMAT_INT4) {
		double g = group_size ? (double)group_size : 128.0;
		return 4.0 + 16.0 / g;
	}
	return formats[format].bits;
}

double mp_format_bytes(enum mp_format format)
{
	if ((unsigned)format >= MP_FORMAT_COUNT) {
		return 0.0;
	}
	/* Activations travel as plain elements: the element width only. */
	switch (format) {
	case MP_FORMAT_MXFP4:
	case MP_FORMAT_NVFP4:
	case MP_FORMAT_INT4:
		return 0.5;
	case MP_FORMAT_FP8:
	case MP_FORMAT_FP8_BLOCK:
	case MP_FORMAT_INT8:
		return 1.0;
	case MP_FORMAT_BF16:
	case MP_FORMAT_FP16:
		return 2.0;
	case MP_FORMAT_FP32:
		return 4.0;
	case MP_FORMAT_COUNT:
		break;
	}
	return 0.0;
}

const char *mp_format_name(enum mp_format format)
{
	if ((unsigned)format >= MP_FORMAT_COUNT) {
		return "unknown";
	}
	return formats[format].name;
}

int mp_format_parse(const char *name, enum mp_format *out)
{
	for (int i = 0; i < MP_FORMAT_COUNT; i++) {
		if (strcasecmp(name, formats[i].name) == 0) {
			*out = (enum mp_format)i;
			return 0;
		}
	}
	if (strcasecmp(name, "fp8_e4m3") == 0 || strcasecmp(name, "e4m3") == 0) {
		*out = MP_FORMAT_FP8;
		return 0;
	}
	return MP_EINVAL;
}

static const char *const compute_names[MP_COMPUTE_COUNT] = {
	[MP_COMPUTE_FP4] = "fp4",
	[MP_COMPUTE_FP8] = "fp8",
	[MP_COMPUTE_BF16] = "bf16",
	[MP_COMPUTE_INT8] = "int8",
};

const char *mp_compute_name(enum mp_compute compute)
{
	if ((unsigned)compute >= MP_COMPUTE_COUNT) {
		return "unknown";
	}
	return compute_names[compute];
}

int mp_compute_parse(const char *name, enum mp_compute *out)
{
	for (int i = 0; i < MP_COMPUTE_COUNT; i++) {
		if (strcasecmp(name, compute_names[i]) == 0) {
			*out = (enum mp_compute)i;
			return 0;
		}
	}
	if (strcasecmp(name, "fp16") == 0) {
		*out = MP_COMPUTE_BF16;
		return 0;
	}
	return MP_EINVAL;
}

static double kv_bytes_per_token_per_layer(const struct mp_attention *a)
{
	switch (a->kind) {
	case MP_ATTENTION_MLA:
		/* DeepSeek-V2 paper, section 2.1.2: one latent of kv_lora_rank
		 * plus the decoupled RoPE key, shared by all heads. */
		return ((double)a->kv_lora_rank + (double)a->rope_dim) * a->kv_bytes_per_element;
	case MP_ATTENTION_GQA:
		/* K and V, one per key/value head (Ainslie et al. 2023). */
		return 2.0 * (double)a->kv_heads * (double)a->head_dim * a->kv_bytes_per_element;
	case MP_ATTENTION_DIRECT:
		break;
	}
	return 0.0;
}

double mp_model_kv_bytes_per_token(const struct mp_model *model)
{
	if (model->attention.kind == MP_ATTENTION_DIRECT) {
		return model->kv_bytes_per_token;
	}
	return kv_bytes_per_token_per_layer(&model->attention) * (double)model->attention.kv_layers;
}

double mp_model_kv_bytes_per_request(const struct mp_model *model, double context)
{
	const struct mp_attention *a = &model->attention;
	if (a->kind == MP_ATTENTION_DIRECT || a->sliding_window == 0 || a->sliding_layers == 0) {
		return mp_model_kv_bytes_per_token(model) * context;
	}
	double per_layer = kv_bytes_per_token_per_layer(a);
	double sliding = a->sliding_layers <= a->kv_layers ? (double)a->sliding_layers : (double)a->kv_layers;
	double full = (double)a->kv_layers - sliding;
	double window = context < (double)a->sliding_window ? context : (double)a->sliding_window;
	return per_layer * (full * context + sliding * window);
}
