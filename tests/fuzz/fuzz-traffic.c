/* Fuzz target: mp_load_traffic (a spec, or a file of observed loads). */
#include "fuzz.h"

#include <math.h>
#include <string.h>

#include "moeplan/loader.h"

int fuzz_traffic(const uint8_t *data, size_t size)
{
	const char *path = fuzz_write_input(data, size, ".yaml");
	struct mp_traffic tr, before;
	struct mp_diags diags;
	mp_traffic_init(&tr);
	memcpy(&before, &tr, sizeof(tr));
	mp_diags_init(&diags);
	int rc = mp_load_traffic(path, &tr, &diags);
	if (rc != 0) {
		fuzz_check_failure(rc, &diags, size);
		FUZZ_CHECK(memcmp(&before, &tr, sizeof(tr)) == 0);
	} else if (tr.kind == MP_TRAFFIC_OBSERVED) {
		const struct mp_loads *l = &tr.observed;
		FUZZ_CHECK(l->n_layers >= 1 && l->n_layers <= MP_MAX_LAYERS);
		FUZZ_CHECK(l->n_experts >= 1 && l->n_experts <= MP_MAX_EXPERTS);
		for (size_t i = 0; i < (size_t)l->n_layers * l->n_experts; i++) {
			FUZZ_CHECK(isfinite(l->w[i]) && l->w[i] >= 0.0);
		}
	} else {
		FUZZ_CHECK(isfinite(tr.zipf_s) && tr.zipf_s >= 0.0);
	}
	mp_traffic_finish(&tr);
	mp_diags_finish(&diags);
	return 0;
}

#ifdef MOEPLAN_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_traffic(data, size);
}
#endif
