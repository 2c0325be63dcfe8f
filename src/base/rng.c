/* moeplan: SplitMix64 and xoshiro256** (see rng-internal.h for sources). */
#include "rng-internal.h"

void mp_xoshiro_seed(struct mp_xoshiro *rng, uint64_t seed)
{
	struct mp_splitmix sm = { .state = seed };
	for (int i = 0; i < 4; i++) {
		rng->s[i] = mp_splitmix_next(&sm);
	}
}

void mp_rng32_seed(struct mp_rng32 *rng, uint64_t seed)
{
	mp_xoshiro_seed(&rng->x, seed);
	rng->buffer = 0;
	rng->have = 0;
}

uint32_t mp_splitmix_below(struct mp_splitmix *rng, uint32_t n)
{
	uint64_t m = (mp_splitmix_next(rng) >> 32) * n;
	uint32_t low = (uint32_t)m;
	if (low < n) {
		const uint32_t threshold = (uint32_t)(-n) % n;
		while (low < threshold) {
			m = (mp_splitmix_next(rng) >> 32) * n;
			low = (uint32_t)m;
		}
	}
	return (uint32_t)(m >> 32);
}
