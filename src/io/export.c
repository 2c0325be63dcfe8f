/* A placement in the serving engines' own formats (moeplan/export.h). */
#include "moeplan/export.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int mp_export_parse(const char *name, enum mp_export_format *out)
{
	if (strcasecmp(name, "sglang") == 0) {
		*out = MP_EXPORT_SGLANG;
		return 0;
	}
	return MP_EINVAL;
}

const char *mp_export_name(enum mp_export_format format)
{
	(void)format;
	return "sglang";
}

bool mp_export_name_ok(const char *path)
{
	size_t len = strlen(path);
	/* SGLang: data.endswith(".json") (expert_location.py
	 * compute_initial_expert_location_metadata): case-sensitive */
	return len > 5 && strcmp(path + len - 5, ".json") == 0;
}

static bool ascending(const uint32_t *v, uint32_t n, uint32_t below)
{
	for (uint32_t i = 0; i < n; i++) {
		if (v[i] >= below || (i > 0 && v[i] <= v[i - 1])) {
			return false;
		}
	}
	return true;
}

/* Layers consistent with the placement: rows ascending, each a MoE layer. */
static bool layers_ok(const struct mp_placement *p, const struct mp_export_layers *l)
{
	if (!l || l->hidden_layers == 0 || !l->row_layer || !l->moe_ids || l->n_moe == 0 ||
	    l->n_moe > l->hidden_layers || p->n_layers > l->n_moe ||
	    !ascending(l->moe_ids, l->n_moe, l->hidden_layers) ||
	    !ascending(l->row_layer, p->n_layers, l->hidden_layers)) {
		return false;
	}
	uint32_t k = 0;
	for (uint32_t r = 0; r < p->n_layers; r++) {
		while (k < l->n_moe && l->moe_ids[k] < l->row_layer[r]) {
			k++;
		}
		if (k == l->n_moe || l->moe_ids[k] != l->row_layer[r]) {
			return false;
		}
	}
	return true;
}

static bool ids_in_range(const struct mp_placement *p)
{
	uint32_t N = p->gpus * p->slots_per_gpu;
	for (uint32_t l = 0; l < p->n_layers; l++) {
		for (uint32_t s = 0; s < N; s++) {
			if (p->layers[l].slot_expert[s] >= p->n_experts) {
				return false;
			}
		}
	}
	return true;
}

int mp_export_map(const struct mp_placement *p, const struct mp_export_layers *l,
		  uint32_t **map_out, uint32_t *filled)
{
	*map_out = NULL;
	if (p->n_layers == 0 || p->n_experts == 0 || !layers_ok(p, l) || !ids_in_range(p)) {
		return MP_EINVAL;
	}
	const size_t N = (size_t)p->gpus * p->slots_per_gpu;
	uint32_t *map = malloc((size_t)l->hidden_layers * N * sizeof(*map));
	if (!map) {
		return MP_ENOMEM;
	}
	uint32_t n_filled = 0;
	for (uint32_t h = 0; h < l->hidden_layers; h++) {
		uint32_t *row = map + (size_t)h * N;
		uint32_t r = mp_map_row_source(h, l->moe_ids, l->n_moe, l->row_layer, p->n_layers);
		const uint32_t *src = r != UINT32_MAX ? p->layers[r].slot_expert : NULL;
		n_filled += r != UINT32_MAX && l->row_layer[r] != h;
		if (src) {
			memcpy(row, src, N * sizeof(*row));
		} else {
			for (size_t s = 0; s < N; s++) {
				row[s] = (uint32_t)(s % p->n_experts);
			}
		}
	}
	if (filled) {
		*filled = n_filled;
	}
	*map_out = map;
	return 0;
}

struct mp_doc *mp_export_doc(const struct mp_placement *p, const struct mp_export_layers *l,
			     enum mp_export_format format)
{
	(void)format;
	uint32_t *map = NULL;
	if (mp_export_map(p, l, &map, NULL) != 0) {
		return NULL;
	}
	const size_t N = (size_t)p->gpus * p->slots_per_gpu;
	struct mp_doc *list = mp_doc_list();
	for (uint32_t h = 0; h < l->hidden_layers; h++) {
		mp_doc_put(list, NULL, mp_doc_uints(map + (size_t)h * N, (uint32_t)N));
	}
	free(map);
	struct mp_doc *doc = mp_doc_map();
	mp_doc_put(doc, "physical_to_logical_map", list);
	if (mp_doc_failed(doc)) {
		mp_doc_destroy(doc);
		return NULL;
	}
	return doc;
}

int mp_export_save(const struct mp_placement *p, const struct mp_export_layers *l,
		   enum mp_export_format format, const char *path)
{
	if (strcmp(path, "-") != 0 && !mp_export_name_ok(path)) {
		return MP_EINVAL;
	}
	uint32_t *map = NULL;
	int rc = mp_export_map(p, l, &map, NULL);
	free(map);
	if (rc != 0) {
		return rc;
	}
	struct mp_doc *doc = mp_export_doc(p, l, format);
	if (!doc) {
		return MP_ENOMEM;
	}
	rc = mp_doc_save(doc, path, true);
	mp_doc_destroy(doc);
	return rc;
}

void mp_export_flags(const struct mp_placement *p, enum mp_export_format format, const char *file,
		     char *buf, size_t size)
{
	(void)format;
	uint32_t N = p->gpus * p->slots_per_gpu;
	uint32_t R = N >= p->n_experts ? N - p->n_experts : 0;
	snprintf(buf, size,
		 "--tp-size %u --ep-size %u --ep-num-redundant-experts %u --init-expert-location %s "
		 "--ep-dispatch-algorithm static",
		 p->gpus, p->gpus, R, file ? file : "FILE.json");
}

void mp_export_launch_init(struct mp_export_launch *l, const struct mp_placement *p)
{
	memset(l, 0, sizeof(*l));
	uint32_t N = p->gpus * p->slots_per_gpu;
	l->gpus = p->gpus;
	l->redundant = N >= p->n_experts ? N - p->n_experts : 0;
	l->dp_attention = true;
	l->deepep_mode = "auto";
}

/* Append to buf at *len (snprintf semantics, never past size). */
static void put(char *buf, size_t size, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	if (*len >= size) {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + *len, size - *len, fmt, ap);
	va_end(ap);
	*len = n < 0 ? size : *len + (size_t)n;
}

/* server_args.py at 60d36e7: --model-path, --tp-size, --dp-size,
 * --enable-dp-attention, --ep-size (alias of --expert-parallel-size),
 * --moe-a2a-backend, --deepep-mode, --ep-num-redundant-experts,
 * --init-expert-location, --ep-dispatch-algorithm, --nnodes, --node-rank,
 * --dist-init-addr, --speculative-algorithm, --speculative-num-steps,
 * --speculative-eagle-topk, --speculative-num-draft-tokens,
 * --mem-fraction-static. */
void mp_export_launch_line(const struct mp_export_launch *l, char *buf, size_t size)
{
	size_t len = 0;
	if (size == 0) {
		return;
	}
	buf[0] = '\0';
	put(buf, size, &len, "python3 -m sglang.launch_server --model-path %s --tp-size %u",
	    l->model_path ? l->model_path : "MODEL", l->gpus);
	if (l->dp_attention) {
		put(buf, size, &len, " --dp-size %u --enable-dp-attention", l->gpus);
	}
	put(buf, size, &len, " --ep-size %u", l->gpus);
	if (l->deepep_mode) {
		put(buf, size, &len, " --moe-a2a-backend deepep --deepep-mode %s", l->deepep_mode);
	}
	put(buf, size, &len, " --ep-num-redundant-experts %u --init-expert-location %s --ep-dispatch-algorithm %s",
	    l->redundant, l->file ? l->file : "FILE.json",
	    l->ep_dispatch_algorithm ? l->ep_dispatch_algorithm : "static");
	if (l->gpus_per_node && l->gpus / l->gpus_per_node > 1) {
		put(buf, size, &len, " --nnodes %u --node-rank RANK --dist-init-addr HOST:PORT",
		    l->gpus / l->gpus_per_node);
	}
	if (l->mtp_steps) {
		put(buf, size, &len, " --speculative-algorithm EAGLE --speculative-num-steps %u "
		    "--speculative-eagle-topk 1 --speculative-num-draft-tokens %u", l->mtp_steps,
		    l->mtp_steps + 1);
	}
	if (l->mem_fraction_static > 0) {
		put(buf, size, &len, " --mem-fraction-static %.3g", l->mem_fraction_static);
	}
}
