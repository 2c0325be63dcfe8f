/* An engine profile file (moeplan/engine.h; moeplan-formats(5) "Engine
 * profile"): plans/engines/NAME.yaml. */
#include "loader-internal.h"
#include "moeplan/engine.h"

#include <stdlib.h>
#include <string.h>

static const char *const engine_keys[] = {"name", "source", "dispatch", "ep_dispatch_algorithm",
					  "overlaps", "kernels", "memory", "drafter", NULL};
static const char *const dispatch_names[] = {"even", "sglang", "vllm", NULL};
static const char *const algorithm_names[] = {"static", "dynamic", "fake", NULL};
static const char *const overlap_names[] = {"none", "two_batch", "full", NULL};
static const char *const kernel_names[] = {"auto", "low_latency", "normal", NULL};
static const char *const kernel_keys[] = {"prefill", "decode", NULL};
static const char *const memory_keys[] = {"mem_fraction_static", "gpu_memory_utilization", "reserve",
					  "dp_attention", "cuda_graph_max_bs", "chunked_prefill_size",
					  NULL};

/* overlaps: a list of mode names, at least one. */
static void parse_overlaps(struct ld *ld, const yaml_node_t *node, struct mp_engine_profile *e)
{
	if (!node) {
		return;
	}
	if (node->type != YAML_SEQUENCE_NODE || node->data.sequence.items.start == node->data.sequence.items.top) {
		ld_error(ld, node, "overlaps: expected a list of none, two_batch, full (at least one), got %s",
			 ld_kind_name(node));
		return;
	}
	e->overlaps = 0;
	for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
		int o = 0;
		if (ld_get_enum(ld, ld_node(ld, *it), "overlaps[]", overlap_names, &o)) {
			e->overlaps |= 1u << o;
		}
	}
}

static void parse_kernels(struct ld *ld, const yaml_node_t *node, struct mp_engine_profile *e)
{
	if (!node || !ld_check_map(ld, node, "kernels", kernel_keys)) {
		return;
	}
	int k = 0;
	if (ld_get_enum(ld, ld_get(ld, node, "prefill"), "kernels.prefill", kernel_names, &k)) {
		e->kernel[0] = (enum mp_step_kernel)k;
	}
	if (ld_get_enum(ld, ld_get(ld, node, "decode"), "kernels.decode", kernel_names, &k)) {
		e->kernel[1] = (enum mp_step_kernel)k;
	}
}

/* memory: exactly one of mem_fraction_static (a number or auto),
 * gpu_memory_utilization, reserve; SGLang's inputs besides. */
static void parse_memory(struct ld *ld, const yaml_node_t *node, struct mp_engine_profile *e)
{
	if (!node || !ld_check_map(ld, node, "memory", memory_keys)) {
		return;
	}
	const yaml_node_t *msf = ld_get(ld, node, "mem_fraction_static");
	const yaml_node_t *gmu = ld_get(ld, node, "gpu_memory_utilization");
	const yaml_node_t *res = ld_get(ld, node, "reserve");
	if ((msf != NULL) + (gmu != NULL) + (res != NULL) != 1) {
		ld_error(ld, node, "memory: give exactly one of mem_fraction_static (SGLang), "
			 "gpu_memory_utilization (vLLM) or reserve (bytes)");
		return;
	}
	const char *text = msf ? ld_scalar(msf) : NULL;
	if (msf && text && !ld_is_quoted(msf) && strcmp(text, "auto") == 0) {
		e->memory = MP_MEMORY_SGLANG_AUTO;
	} else if (msf) {
		e->memory = MP_MEMORY_STATIC_FRACTION;
		ld_get_real(ld, msf, "memory.mem_fraction_static", NULL, 0.0, true, 1.0, &e->memory_fraction);
	} else if (gmu) {
		e->memory = MP_MEMORY_UTILIZATION;
		ld_get_real(ld, gmu, "memory.gpu_memory_utilization", NULL, 0.0, true, 1.0,
			    &e->memory_fraction);
	} else {
		e->memory = MP_MEMORY_RESERVE;
		ld_get_bytes(ld, res, "memory.reserve", 0, UINT64_C(1) << 50, &e->reserve_bytes);
	}
	ld_get_bool(ld, ld_get(ld, node, "dp_attention"), "memory.dp_attention", &e->sglang.dp_attention);
	ld_get_u32(ld, ld_get(ld, node, "cuda_graph_max_bs"), "memory.cuda_graph_max_bs", 0, 1u << 20,
		   &e->sglang.cuda_graph_max_bs);
	ld_get_count(ld, ld_get(ld, node, "chunked_prefill_size"), "memory.chunked_prefill_size", 0.0,
		     false, 1e9, &e->sglang.chunked_prefill_size);
}

static void parse_engine(struct ld *ld, const yaml_node_t *root, struct mp_engine_profile *e)
{
	if (!ld_check_map(ld, root, "", engine_keys)) {
		return;
	}
	ld_get_string(ld, ld_require(ld, root, "", "name"), "name", &e->name);
	ld_get_string(ld, ld_get(ld, root, "source"), "source", &e->source);
	int v = 0;
	if (ld_get_enum(ld, ld_get(ld, root, "dispatch"), "dispatch", dispatch_names, &v)) {
		e->dispatch = (enum mp_dispatch_rule)v;
	}
	v = (int)e->ep_dispatch_algorithm;
	if (ld_get_enum(ld, ld_get(ld, root, "ep_dispatch_algorithm"), "ep_dispatch_algorithm",
			algorithm_names, &v)) {
		e->ep_dispatch_algorithm = (enum mp_dispatch_algorithm)v;
	}
	parse_overlaps(ld, ld_get(ld, root, "overlaps"), e);
	parse_kernels(ld, ld_get(ld, root, "kernels"), e);
	parse_memory(ld, ld_get(ld, root, "memory"), e);
	ld_get_bool(ld, ld_get(ld, root, "drafter"), "drafter", &e->drafter);
}

int mp_load_engine_profile(const char *path, struct mp_engine_profile *out, struct mp_diags *diags)
{
	struct ld ld;
	int rc = ld_open(&ld, path, diags);
	if (rc == 0) {
		struct mp_engine_profile e;
		mp_engine_profile_init(&e);
		parse_engine(&ld, ld_root(&ld), &e);
		e.path = ld.status == 0 ? strdup(path) : NULL;
		if (ld.status == 0 && !e.path) {
			ld_fail(&ld, MP_ENOMEM);
		}
		if (ld.status == 0) {
			mp_engine_profile_finish(out);
			*out = e;
		} else {
			mp_engine_profile_finish(&e);
		}
		rc = ld.status;
	}
	ld_close(&ld);
	return rc;
}
