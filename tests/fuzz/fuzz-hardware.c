/* Fuzz target: mp_load_hardware. */
#include "fuzz.h"

#include <math.h>
#include <string.h>

#include "moeplan/loader.h"

int fuzz_hardware(const uint8_t *data, size_t size)
{
	const char *path = fuzz_write_input(data, size, ".yaml");
	struct mp_hardware hw, before;
	struct mp_diags diags;
	mp_hardware_init(&hw);
	memcpy(&before, &hw, sizeof(hw));
	mp_diags_init(&diags);
	int rc = mp_load_hardware(path, &hw, &diags);
	if (rc != 0) {
		fuzz_check_failure(rc, &diags, size);
		FUZZ_CHECK(memcmp(&before, &hw, sizeof(hw)) == 0);
	} else {
		for (int c = 0; c < MP_COMPUTE_COUNT; c++) {
			FUZZ_CHECK(isfinite(hw.peak_flops[c]) && hw.peak_flops[c] >= 0.0);
		}
		FUZZ_CHECK(isfinite(hw.hbm_bw_bytes_per_s) && hw.hbm_bw_bytes_per_s > 0.0);
		FUZZ_CHECK(hw.hbm_bytes > 0);
	}
	mp_hardware_finish(&hw);
	mp_diags_finish(&diags);
	return 0;
}

#ifdef MOEPLAN_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_hardware(data, size);
}
#endif
