/* A placement in the serving engines' own formats (moeplan/export.h). */
#include "moeplan/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

int mp_export_parse(const char *name, enum mp_export_format *out)
{
	if (strcasecmp(name, "sglang") == 0) {
		*out = MP_EXPORT_SGLANG;
		return 0;
	}
	if (strcasecmp(name, "vllm") == 0) {
		*out = MP_EXPORT_VLLM;
		return 0;
	}
	return MP_EINVAL;
}

const char *mp_export_name(enum mp_export_format format)
{
	return format == MP_EXPORT_VLLM ? "vllm" : "sglang";
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

static struct mp_doc *p2l_doc(const struct mp_placement *p)
{
	uint32_t N = p->gpus * p->slots_per_gpu;
	struct mp_doc *list = mp_doc_list();
	for (uint32_t l = 0; l < p->n_layers; l++) {
		mp_doc_put(list, NULL, mp_doc_uints(p->layers[l].slot_expert, N));
	}
	return list;
}

struct mp_doc *mp_export_doc(const struct mp_placement *p, enum mp_export_format format)
{
	if (!ids_in_range(p)) {
		return NULL;
	}
	struct mp_doc *doc = mp_doc_map();
	mp_doc_put(doc, "physical_to_logical_map", p2l_doc(p));
	if (format == MP_EXPORT_SGLANG) {
		return doc;
	}
	uint32_t N = p->gpus * p->slots_per_gpu;
	uint32_t E = p->n_experts;
	uint32_t width = N - E + 1; /* num_redundant_experts + 1 */
	uint32_t *count = calloc(E, sizeof(*count));
	if (!count) {
		mp_doc_destroy(doc);
		return NULL;
	}
	struct mp_doc *l2p = mp_doc_list();
	struct mp_doc *rc = mp_doc_list();
	for (uint32_t l = 0; l < p->n_layers; l++) {
		const uint32_t *m = p->layers[l].slot_expert;
		for (uint32_t e = 0; e < E; e++) {
			count[e] = 0;
		}
		for (uint32_t s = 0; s < N; s++) {
			count[m[s]]++;
		}
		struct mp_doc *layer = mp_doc_list();
		for (uint32_t e = 0; e < E; e++) {
			struct mp_doc *row = mp_doc_list();
			uint32_t n = 0;
			for (uint32_t s = 0; s < N && n < width; s++) {
				if (m[s] == e) {
					mp_doc_put(row, NULL, mp_doc_int(s));
					n++;
				}
			}
			for (; n < width; n++) {
				mp_doc_put(row, NULL, mp_doc_int(-1));
			}
			mp_doc_put(layer, NULL, row);
		}
		mp_doc_put(l2p, NULL, layer);
		mp_doc_put(rc, NULL, mp_doc_uints(count, E));
	}
	free(count);
	mp_doc_put(doc, "logical_to_physical_map", l2p);
	mp_doc_put(doc, "logical_replica_count", rc);
	mp_doc_put_int(doc, "ep_size", p->gpus);
	mp_doc_put_int(doc, "num_redundant_experts", N - E);
	return doc;
}

int mp_export_save(const struct mp_placement *p, enum mp_export_format format, const char *path)
{
	if (!ids_in_range(p)) {
		return MP_EINVAL;
	}
	struct mp_doc *doc = mp_export_doc(p, format);
	if (!doc || mp_doc_failed(doc)) {
		mp_doc_destroy(doc);
		return MP_ENOMEM;
	}
	int rc = mp_doc_save(doc, path, true);
	mp_doc_destroy(doc);
	return rc;
}

void mp_export_flags(const struct mp_placement *p, enum mp_export_format format, const char *file,
		     char *buf, size_t size)
{
	uint32_t N = p->gpus * p->slots_per_gpu;
	uint32_t R = N >= p->n_experts ? N - p->n_experts : 0;
	if (format == MP_EXPORT_SGLANG) {
		snprintf(buf, size, "--ep-size %u --ep-num-redundant-experts %u --init-expert-location %s",
			 p->gpus, R, file ? file : "FILE");
	} else {
		snprintf(buf, size,
			 "--data-parallel-size %u --enable-expert-parallel --enable-eplb "
			 "--eplb-config '{\"num_redundant_experts\": %u}'",
			 p->gpus, R);
	}
}
