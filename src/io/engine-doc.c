/* An engine profile as a document (moeplan/engine.h): what `plan`, `step`
 * and `search` print of the engine they planned for. */
#include "moeplan/doc.h"
#include "moeplan/engine.h"

struct mp_doc *mp_engine_profile_to_doc(const struct mp_engine_profile *e)
{
	static const char *const dispatch[] = {"even", "sglang", "vllm"};
	static const char *const algorithm[] = {"static", "dynamic", "fake"};
	static const char *const kernel[] = {"auto", "low_latency", "normal"};
	static const char *const memory[] = {"reserve", "mem_fraction_static", "mem_fraction_static auto",
					     "gpu_memory_utilization"};
	char overlaps[64];
	mp_engine_overlaps_text(e, overlaps, sizeof(overlaps));
	struct mp_doc *d = mp_doc_map();
	mp_doc_put_string(d, "name", e->name ? e->name : "even");
	if (e->path) {
		mp_doc_put_string(d, "path", e->path);
	}
	if (e->source) {
		mp_doc_put_string(d, "source", e->source);
	}
	mp_doc_put_string(d, "dispatch", dispatch[e->dispatch]);
	if (e->dispatch == MP_DISPATCH_SGLANG) {
		mp_doc_put_string(d, "ep_dispatch_algorithm", algorithm[e->ep_dispatch_algorithm]);
	}
	mp_doc_put_string(d, "overlaps", overlaps);
	struct mp_doc *k = mp_doc_map();
	mp_doc_put_string(k, "prefill", kernel[e->kernel[0]]);
	mp_doc_put_string(k, "decode", kernel[e->kernel[1]]);
	mp_doc_put(d, "kernels", k);
	mp_doc_put_string(d, "memory", memory[e->memory]);
	if (e->memory == MP_MEMORY_STATIC_FRACTION || e->memory == MP_MEMORY_UTILIZATION) {
		mp_doc_put_real(d, "memory_fraction", e->memory_fraction);
	}
	mp_doc_put_bool(d, "drafter", e->drafter);
	return d;
}
