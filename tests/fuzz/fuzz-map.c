/* Fuzz target: mp_load_map (plans, bare placements, SGLang and vLLM maps). */
#include "fuzz.h"

#include <string.h>

#include "moeplan/loader.h"

int fuzz_map(const uint8_t *data, size_t size)
{
	static const char *const phases[] = {NULL, "decode", "prefill", NULL};
	static const uint32_t gpus_choice[] = {0, 1, 2, 8};
	if (size == 0) {
		return 0;
	}
	const char *phase = phases[data[0] & 3];
	uint32_t gpus = gpus_choice[(data[0] >> 2) & 3];
	const char *path = fuzz_write_input(data + 1, size - 1, (data[0] & 16) ? ".json" : ".yaml");
	struct mp_placement map, before;
	struct mp_diags diags;
	mp_placement_init(&map);
	memcpy(&before, &map, sizeof(map));
	mp_diags_init(&diags);
	int rc = mp_load_map(path, phase, gpus, &map, &diags);
	if (rc != 0) {
		fuzz_check_failure(rc, &diags, size);
		FUZZ_CHECK(memcmp(&before, &map, sizeof(map)) == 0);
	} else {
		FUZZ_CHECK(map.n_layers >= 1 && map.n_layers <= MP_MAX_LAYERS);
		FUZZ_CHECK(map.gpus >= 1 && map.gpus <= MP_MAX_GPUS);
		FUZZ_CHECK(gpus == 0 || map.gpus == gpus);
		FUZZ_CHECK(map.slots_per_gpu >= 1 && map.slots_per_gpu <= MP_MAX_SLOTS_PER_GPU);
		FUZZ_CHECK(map.n_experts >= 1 && map.n_experts <= MP_MAX_EXPERTS);
		size_t slots = (size_t)map.gpus * map.slots_per_gpu;
		for (uint32_t l = 0; l < map.n_layers; l++) {
			for (size_t s = 0; s < slots; s++) {
				FUZZ_CHECK(map.layers[l].slot_expert[s] < map.n_experts);
			}
		}
	}
	mp_placement_finish(&map);
	mp_diags_finish(&diags);
	return 0;
}

#ifdef MOEPLAN_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_map(data, size);
}
#endif
