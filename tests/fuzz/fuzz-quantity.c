/* Fuzz target: mp_parse_quantity, in memory. */
#include "fuzz.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/loader.h"

int fuzz_quantity(const uint8_t *data, size_t size)
{
	static const char *const kinds[] = {NULL, "bytes", "bytes/s", "flop/s", "seconds", "count"};
	if (size == 0) {
		return 0;
	}
	const char *kind = kinds[data[0] % 6];
	char *text = malloc(size);
	FUZZ_CHECK(text != NULL);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	const double sentinel = -1234.5;
	double v = sentinel;
	int rc = mp_parse_quantity(text, kind, &v);
	if (rc == 0) {
		FUZZ_CHECK(isfinite(v));
	} else {
		FUZZ_CHECK(rc == MP_EINVAL);
		FUZZ_CHECK(memcmp(&v, &sentinel, sizeof(v)) == 0);
	}
	free(text);
	return 0;
}

#ifdef MOEPLAN_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_quantity(data, size);
}
#endif
