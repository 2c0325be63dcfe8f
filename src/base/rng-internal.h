/* moeplan (private): pseudo-random numbers.
 *
 * Two published generators, kept bit-exact with their reference code so that
 * every seeded output of moeplan is reproducible on every platform:
 *
 * - SplitMix64: G. L. Steele, D. Lea and C. H. Flood, "Fast splittable
 *   pseudorandom number generators", OOPSLA 2014; the 64-bit finaliser as in
 *   S. Vigna's splitmix64.c (https://prng.di.unimi.it/splitmix64.c).
 *   Used for short streams (permutations) and to seed xoshiro256**.
 * - xoshiro256**: D. Blackman and S. Vigna, "Scrambled linear pseudorandom
 *   number generators", ACM TOMS 47(4), 2021 (preprint 2018); reference
 *   code https://prng.di.unimi.it/xoshiro256starstar.c. Seeded, as its
 *   authors recommend, with four consecutive SplitMix64 outputs.
 *
 * Bounded integers use D. Lemire's multiply-and-reject method ("Fast random
 * integer generation in an interval", ACM TOMACS 29(1), 2019), exact
 * (unbiased) over 32-bit draws.
 */
#ifndef MOEPLAN_RNG_INTERNAL_H
#define MOEPLAN_RNG_INTERNAL_H

#include <stdint.h>

/** SplitMix64 state: one 64-bit word. */
struct mp_splitmix {
	uint64_t state;
};

/** xoshiro256** state: four 64-bit words, not all zero. */
struct mp_xoshiro {
	uint64_t s[4];
};

static inline uint64_t mp_rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/** Next SplitMix64 output (advances the state by the golden-ratio gamma). */
static inline uint64_t mp_splitmix_next(struct mp_splitmix *rng)
{
	uint64_t z = (rng->state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/** Next xoshiro256** output. */
static inline uint64_t mp_xoshiro_next(struct mp_xoshiro *rng)
{
	uint64_t *s = rng->s;
	const uint64_t result = mp_rotl64(s[1] * 5, 7) * 9;
	const uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = mp_rotl64(s[3], 45);
	return result;
}

/** Seed xoshiro256** with four consecutive SplitMix64 outputs started at
 * seed (never all zero: SplitMix64 is a bijection of distinct inputs). */
void mp_xoshiro_seed(struct mp_xoshiro *rng, uint64_t seed);

/** A uniform integer in [0, n) from 32-bit draws of next(), unbiased
 * (Lemire 2019). n >= 1. */
uint32_t mp_splitmix_below(struct mp_splitmix *rng, uint32_t n);

/** A double uniform in [0, 1) with 53 random bits (Vigna's recipe:
 * (x >> 11) * 2^-53). */
static inline double mp_u64_to_unit(uint64_t x)
{
	return (double)(x >> 11) * 0x1.0p-53;
}

/** A 32-bit source that hands out both halves of each xoshiro256** output
 * (high half first), for the Monte Carlo hot loops. */
struct mp_rng32 {
	struct mp_xoshiro x;
	uint64_t buffer;
	int have; /**< 1 when the low half of buffer is still unused */
};

void mp_rng32_seed(struct mp_rng32 *rng, uint64_t seed);

static inline uint32_t mp_rng32_next(struct mp_rng32 *rng)
{
	if (rng->have) {
		rng->have = 0;
		return (uint32_t)rng->buffer;
	}
	rng->buffer = mp_xoshiro_next(&rng->x);
	rng->have = 1;
	return (uint32_t)(rng->buffer >> 32);
}

/** A uniform integer in [0, n), unbiased (Lemire 2019). n >= 1. */
static inline uint32_t mp_rng32_below(struct mp_rng32 *rng, uint32_t n)
{
	uint64_t m = (uint64_t)mp_rng32_next(rng) * n;
	uint32_t low = (uint32_t)m;
	if (low < n) {
		const uint32_t threshold = (uint32_t)(-n) % n;
		while (low < threshold) {
			m = (uint64_t)mp_rng32_next(rng) * n;
			low = (uint32_t)m;
		}
	}
	return (uint32_t)(m >> 32);
}

#endif
