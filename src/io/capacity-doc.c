/* The HBM breakdown as a document (capacity.h, mp_capacity_to_doc): the
 * one serialiser of struct mp_capacity, for `plan` and `fit`. */
#include "moeplan/capacity.h"

const char *mp_buffer_mode_name(enum mp_buffer_mode mode)
{
	switch (mode) {
	case MP_BUFFERS_LOW_LATENCY:
		return "low-latency";
	case MP_BUFFERS_NORMAL:
		return "normal";
	case MP_BUFFERS_NONE:
		return "none";
	case MP_BUFFERS_AUTO:
		break;
	}
	return "auto";
}

struct mp_doc *mp_capacity_to_doc(const struct mp_capacity *c)
{
	struct mp_doc *d = mp_doc_map();
	mp_doc_put_int(d, "capacity_bytes", (int64_t)c->capacity_bytes);
	mp_doc_put_int(d, "weights_bytes", (int64_t)c->weights_bytes);
	mp_doc_put_int(d, "routed_bytes", (int64_t)c->routed_bytes);
	mp_doc_put_int(d, "shared_bytes", (int64_t)c->shared_bytes);
	mp_doc_put_int(d, "dense_bytes", (int64_t)c->dense_bytes);
	mp_doc_put_int(d, "drafter_bytes", (int64_t)c->drafter_bytes);
	mp_doc_put_int(d, "kv_cache_bytes", (int64_t)c->kv_bytes);
	mp_doc_put_int(d, "buffer_bytes", (int64_t)c->buffer_bytes);
	mp_doc_put_string(d, "buffer_layout", mp_buffer_mode_name(c->buffers));
	mp_doc_put_int(d, "workspace_bytes", (int64_t)c->workspace_bytes);
	mp_doc_put_int(d, "reserve_bytes", (int64_t)c->reserve_bytes);
	mp_doc_put_int(d, "used_bytes", (int64_t)c->used_bytes);
	mp_doc_put_int(d, "free_bytes", c->free_bytes);
	mp_doc_put_bool(d, "fits", c->fits);
	if (c->memory != MP_MEMORY_RESERVE) {
		/* the engine's rule (engine profile): which, and its fraction */
		static const char *const rules[] = {"reserve", "mem_fraction_static",
						    "mem_fraction_static (SGLang's default)",
						    "gpu_memory_utilization"};
		mp_doc_put_string(d, "memory_rule", rules[c->memory]);
		mp_doc_put_real(d, "memory_fraction", c->memory_fraction);
	}
	return d;
}
