/* Fuzz target: mp_load_scenario (with its model, hardware and traffic,
 * which may be inline or files under the shipped presets). */
#include "fuzz.h"

#include <string.h>

#include "moeplan/loader.h"

int fuzz_scenario(const uint8_t *data, size_t size)
{
	const char *path = fuzz_write_input(data, size, ".yaml");
	struct mp_scenario sc, before;
	struct mp_diags diags;
	mp_scenario_init(&sc);
	memcpy(&before, &sc, sizeof(sc));
	mp_diags_init(&diags);
	int rc = mp_load_scenario(path, &sc, &diags);
	if (rc != 0) {
		fuzz_check_failure(rc, &diags, size);
		FUZZ_CHECK(memcmp(&before, &sc, sizeof(sc)) == 0);
	} else {
		FUZZ_CHECK(sc.model.routed_experts >= 1 && sc.model.routed_experts <= MP_MAX_EXPERTS);
		FUZZ_CHECK(sc.model.moe_layers >= 1 && sc.model.moe_layers <= MP_MAX_LAYERS);
		FUZZ_CHECK(sc.time_limit_s > 0.0);
		FUZZ_CHECK(sc.decode.gpus <= MP_MAX_GPUS && sc.prefill.gpus <= MP_MAX_GPUS);
		if (sc.traffic.kind == MP_TRAFFIC_OBSERVED) {
			FUZZ_CHECK(sc.traffic.observed.n_layers >= 1 && sc.traffic.observed.n_experts >= 1);
		}
	}
	mp_scenario_finish(&sc);
	mp_diags_finish(&diags);
	return 0;
}

#ifdef MOEPLAN_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_scenario(data, size);
}
#endif
