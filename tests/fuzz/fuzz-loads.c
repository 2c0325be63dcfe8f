/* Fuzz target: mp_load_loads (CSV, YAML/JSON lists, SGLang dumps). */
#include "fuzz.h"

#include <math.h>
#include <string.h>

#include "moeplan/loader.h"

int fuzz_loads(const uint8_t *data, size_t size)
{
	static const char *const exts[] = {".csv", ".json", ".yaml", ""};
	if (size == 0) {
		return 0;
	}
	const char *path = fuzz_write_input(data + 1, size - 1, exts[data[0] & 3]);
	struct mp_loads loads, before;
	struct mp_diags diags;
	mp_loads_init(&loads);
	memcpy(&before, &loads, sizeof(loads));
	mp_diags_init(&diags);
	int rc = mp_load_loads(path, &loads, &diags);
	if (rc != 0) {
		fuzz_check_failure(rc, &diags, size);
		FUZZ_CHECK(memcmp(&before, &loads, sizeof(loads)) == 0);
	} else {
		FUZZ_CHECK(loads.n_layers >= 1 && loads.n_layers <= MP_MAX_LAYERS);
		FUZZ_CHECK(loads.n_experts >= 1 && loads.n_experts <= MP_MAX_EXPERTS);
		for (size_t i = 0; i < (size_t)loads.n_layers * loads.n_experts; i++) {
			FUZZ_CHECK(isfinite(loads.w[i]) && loads.w[i] >= 0.0);
		}
	}
	mp_loads_finish(&loads);
	mp_diags_finish(&diags);
	return 0;
}

#ifdef MOEPLAN_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_loads(data, size);
}
#endif
