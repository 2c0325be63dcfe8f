/* Fuzz target: torch.save archives (src/io/loader-torch.c) through
 * mp_load_loads (SGLang's recorder dump) and mp_load_map (SGLang's .pt
 * maps). The first byte picks the loader (bit 0) and the GPU count for a
 * map (bits 1-2); the rest is the .pt file. */
#include "fuzz.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "moeplan/loader.h"

int fuzz_torch(const uint8_t *data, size_t size)
{
	static const uint32_t gpus_choice[] = {0, 1, 2, 4};
	if (size == 0) {
		return 0;
	}
	const char *path = fuzz_write_input(data + 1, size - 1, ".pt");
	struct mp_diags diags;
	mp_diags_init(&diags);
	if (data[0] & 1) {
		uint32_t gpus = gpus_choice[(data[0] >> 1) & 3];
		struct mp_placement map, before;
		mp_placement_init(&map);
		memcpy(&before, &map, sizeof(map));
		int rc = mp_load_map(path, NULL, gpus, &map, &diags);
		if (rc != 0) {
			fuzz_check_failure(rc, &diags, size);
			FUZZ_CHECK(memcmp(&before, &map, sizeof(map)) == 0);
		} else {
			FUZZ_CHECK(map.n_layers >= 1 && map.n_layers <= MP_MAX_LAYERS);
			FUZZ_CHECK(gpus == 0 || map.gpus == gpus);
			FUZZ_CHECK(map.n_experts >= 1 && map.n_experts <= MP_MAX_EXPERTS);
			size_t slots = (size_t)map.gpus * map.slots_per_gpu;
			for (uint32_t l = 0; l < map.n_layers; l++) {
				for (size_t s = 0; s < slots; s++) {
					FUZZ_CHECK(map.layers[l].slot_expert[s] < map.n_experts);
				}
			}
		}
		mp_placement_finish(&map);
	} else {
		struct mp_loads loads, before;
		mp_loads_init(&loads);
		memcpy(&before, &loads, sizeof(loads));
		int rc = mp_load_loads(path, &loads, &diags);
		if (rc != 0) {
			fuzz_check_failure(rc, &diags, size);
			FUZZ_CHECK(memcmp(&before, &loads, sizeof(loads)) == 0);
		} else {
			FUZZ_CHECK(loads.n_layers >= 1 && loads.n_layers <= MP_MAX_LAYERS);
			/* a torch dump names every hidden layer (other text goes to
			 * the CSV/YAML readers) */
			bool zip = size >= 5 && memcmp(data + 1, "PK\x03\x04", 4) == 0;
			FUZZ_CHECK(!zip || (loads.hidden_layers == loads.n_layers && loads.layer_ids));
			for (size_t i = 0; i < (size_t)loads.n_layers * loads.n_experts; i++) {
				FUZZ_CHECK(isfinite(loads.w[i]) && loads.w[i] >= 0.0);
			}
		}
		mp_loads_finish(&loads);
	}
	mp_diags_finish(&diags);
	return 0;
}

#ifdef MOEPLAN_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_torch(data, size);
}
#endif
