/* Fuzz target: mp_load_model (moeplan model YAML and Hugging Face config.json). */
#include "fuzz.h"

#include <string.h>

#include "moeplan/loader.h"

int fuzz_model(const uint8_t *data, size_t size)
{
	const char *path = fuzz_write_input(data, size, size && data[0] == '{' ? ".json" : ".yaml");
	struct mp_model model, before;
	struct mp_diags diags;
	mp_model_init(&model);
	memcpy(&before, &model, sizeof(model));
	mp_diags_init(&diags);
	int rc = mp_load_model(path, &model, &diags);
	if (rc != 0) {
		fuzz_check_failure(rc, &diags, size);
		FUZZ_CHECK(memcmp(&before, &model, sizeof(model)) == 0);
	} else {
		FUZZ_CHECK(model.routed_experts >= 1 && model.routed_experts <= MP_MAX_EXPERTS);
		FUZZ_CHECK(model.top_k >= 1 && model.top_k <= model.routed_experts);
		FUZZ_CHECK(model.moe_layers >= 1 && model.moe_layers <= MP_MAX_LAYERS);
		FUZZ_CHECK(model.kv_bytes_per_token >= 0.0);
	}
	mp_model_finish(&model);
	mp_diags_finish(&diags);
	return 0;
}

#ifdef MOEPLAN_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_model(data, size);
}
#endif
