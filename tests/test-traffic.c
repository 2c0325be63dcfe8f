/* Tests of the traffic module: loads storage, the synthetic generators and
 * the random number generators under them (src/base/rng.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "moeplan/diag.h"
#include "moeplan/traffic.h"
#include "base/rng-internal.h"

/* cmocka 1.1's assert_float_equal works in float; compare doubles. */
#define assert_near(a, b, tol) assert_near_at((a), (b), (tol), __FILE__, __LINE__)

static void assert_near_at(double a, double b, double tol, const char *file, int line)
{
	if (!(fabs(a - b) <= tol)) {
		print_error("%.17g != %.17g (tolerance %g)\n", a, b, tol);
		_fail(file, line);
	}
}

static void traffic__splitmix64_matches_reference(void **state)
{
	(void)state;
	/* Rosetta Code, "Pseudo-random numbers/Splitmix64": the first five
	 * outputs for seed 1234567 (also the outputs of Vigna's splitmix64.c). */
	static const uint64_t want[] = {
		UINT64_C(6457827717110365317), UINT64_C(3203168211198807973),
		UINT64_C(9817491932198370423), UINT64_C(4593380528125082431),
		UINT64_C(16408922859458223821),
	};
	struct mp_splitmix rng = { .state = 1234567 };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(mp_splitmix_next(&rng), want[i]);
	}
}

static void traffic__xoshiro256ss_matches_reference(void **state)
{
	(void)state;
	/* xoshiro256** (Blackman and Vigna, reference xoshiro256starstar.c)
	 * from the state {1, 2, 3, 4}: the first ten outputs, as published in
	 * the test suites of Rust's rand_xoshiro and of the C++ port
	 * morinim/xoshiro256ss (both derived from the reference code). */
	static const uint64_t want[] = {
		UINT64_C(11520), UINT64_C(0), UINT64_C(1509978240),
		UINT64_C(1215971899390074240), UINT64_C(1216172134540287360),
		UINT64_C(607988272756665600), UINT64_C(16172922978634559625),
		UINT64_C(8476171486693032832), UINT64_C(10595114339597558777),
		UINT64_C(2904607092377533576),
	};
	struct mp_xoshiro rng = { .s = { 1, 2, 3, 4 } };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(mp_xoshiro_next(&rng), want[i]);
	}
}

static void traffic__xoshiro_seeded_by_splitmix(void **state)
{
	(void)state;
	/* Seeding takes four consecutive SplitMix64 outputs (reference values
	 * above for seed 1234567). */
	struct mp_xoshiro rng;
	mp_xoshiro_seed(&rng, 1234567);
	assert_int_equal(rng.s[0], UINT64_C(6457827717110365317));
	assert_int_equal(rng.s[1], UINT64_C(3203168211198807973));
	assert_int_equal(rng.s[2], UINT64_C(9817491932198370423));
	assert_int_equal(rng.s[3], UINT64_C(4593380528125082431));
}

static void traffic__bounded_draws_are_uniform(void **state)
{
	(void)state;
	/* 600,000 draws in [0, 6): each count is Binomial(600000, 1/6), mean
	 * 100000, sd sqrt(600000 * 1/6 * 5/6) = 288.7; allow 5 sd. n = 1
	 * always gives 0 and every draw stays below n. */
	struct mp_rng32 rng;
	mp_rng32_seed(&rng, 42);
	uint32_t counts[6] = { 0 };
	for (int i = 0; i < 600000; i++) {
		const uint32_t v = mp_rng32_below(&rng, 6);
		assert_true(v < 6);
		counts[v]++;
	}
	for (int i = 0; i < 6; i++) {
		assert_in_range(counts[i], 100000 - 1444, 100000 + 1444);
	}
	for (int i = 0; i < 100; i++) {
		assert_int_equal(mp_rng32_below(&rng, 1), 0);
	}
	/* n = 2^32 - 1 rejects only the single low value below 1. */
	for (int i = 0; i < 1000; i++) {
		assert_true(mp_rng32_below(&rng, UINT32_MAX) < UINT32_MAX);
	}
}

static void traffic__loads_alloc_gives_zeros(void **state)
{
	(void)state;
	struct mp_loads loads;
	mp_loads_init(&loads);
	assert_int_equal(mp_loads_alloc(&loads, 3, 5), 0);
	assert_int_equal(loads.n_layers, 3);
	assert_int_equal(loads.n_experts, 5);
	for (uint32_t l = 0; l < 3; l++) {
		for (uint32_t e = 0; e < 5; e++) {
			assert_near(mp_loads_row(&loads, l)[e], 0.0, 0.0);
		}
	}
	mp_loads_row(&loads, 2)[4] = 7.0;
	assert_near(loads.w[14], 7.0, 0.0);
	/* Bad sizes are refused and leave the loads as they were. */
	assert_int_equal(mp_loads_alloc(&loads, 0, 5), MP_EINVAL);
	assert_int_equal(mp_loads_alloc(&loads, 1, 0), MP_EINVAL);
	assert_int_equal(mp_loads_alloc(&loads, MP_MAX_LAYERS + 1, 5), MP_EINVAL);
	assert_int_equal(mp_loads_alloc(&loads, 1, MP_MAX_EXPERTS + 1), MP_EINVAL);
	assert_int_equal(loads.n_layers, 3);
	assert_near(loads.w[14], 7.0, 0.0);
	/* Reallocating replaces the old contents. */
	assert_int_equal(mp_loads_alloc(&loads, 1, 2), 0);
	assert_int_equal(loads.n_layers, 1);
	assert_near(loads.w[0], 0.0, 0.0);
	assert_near(loads.w[1], 0.0, 0.0);
	mp_loads_finish(&loads);
	assert_null(loads.w);
	mp_loads_finish(NULL);
}

static void traffic__uniform_is_all_ones(void **state)
{
	(void)state;
	struct mp_traffic t;
	struct mp_loads out;
	mp_traffic_init(&t);
	mp_loads_init(&out);
	assert_int_equal(t.kind, MP_TRAFFIC_UNIFORM);
	assert_int_equal(mp_traffic_generate(&t, 2, 384, &out), 0);
	for (size_t i = 0; i < 2 * 384; i++) {
		assert_near(out.w[i], 1.0, 0.0);
	}
	mp_loads_finish(&out);
	mp_traffic_finish(&t);
	mp_traffic_finish(NULL);
}

static void traffic__zipf_matches_hand_calculation(void **state)
{
	(void)state;
	/* s = 1, 4 experts: 1, 1/2, 1/3, 1/4 sum to 25/12; scaled to sum 4:
	 * 48/25 = 1.92, 0.96, 0.64, 0.48. Identity order without permute. */
	struct mp_traffic t;
	struct mp_loads out;
	mp_traffic_init(&t);
	mp_loads_init(&out);
	t.kind = MP_TRAFFIC_ZIPF;
	t.zipf_s = 1.0;
	assert_int_equal(mp_traffic_generate(&t, 2, 4, &out), 0);
	static const double want[] = { 1.92, 0.96, 0.64, 0.48 };
	for (uint32_t l = 0; l < 2; l++) {
		for (uint32_t e = 0; e < 4; e++) {
			assert_near(mp_loads_row(&out, l)[e], want[e], 1e-12);
		}
	}
	/* s = 0 is uniform. */
	t.zipf_s = 0.0;
	assert_int_equal(mp_traffic_generate(&t, 1, 4, &out), 0);
	for (uint32_t e = 0; e < 4; e++) {
		assert_near(out.w[e], 1.0, 1e-15);
	}
	mp_loads_finish(&out);
	mp_traffic_finish(&t);
}

static void traffic__zipf_permutation_is_the_reference_shuffle(void **state)
{
	(void)state;
	/* Fisher-Yates over SplitMix64 seed 1234567 with Lemire's bound taken
	 * from the high 32 bits, computed by hand from the reference outputs:
	 *   i=3: (6457827717110365317 >> 32) * 4 >> 32 = 1 -> swap 3,1: 0 3 2 1
	 *   i=2: (3203168211198807973 >> 32) * 3 >> 32 = 0 -> swap 2,0: 2 3 0 1
	 *   i=1: (9817491932198370423 >> 32) * 2 >> 32 = 1 -> no change
	 * so rank r goes to expert perm[r] = {2, 3, 0, 1}. */
	struct mp_traffic t;
	struct mp_loads out;
	mp_traffic_init(&t);
	mp_loads_init(&out);
	t.kind = MP_TRAFFIC_ZIPF;
	t.zipf_s = 1.0;
	t.permute = true;
	t.seed = 1234567;
	assert_int_equal(mp_traffic_generate(&t, 1, 4, &out), 0);
	assert_near(out.w[2], 1.92, 1e-12);
	assert_near(out.w[3], 0.96, 1e-12);
	assert_near(out.w[0], 0.64, 1e-12);
	assert_near(out.w[1], 0.48, 1e-12);
	mp_loads_finish(&out);
	mp_traffic_finish(&t);
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a;
	const double y = *(const double *)b;
	return (x > y) - (x < y);
}

static void traffic__permuted_layers_are_reproducible(void **state)
{
	(void)state;
	struct mp_traffic t;
	struct mp_loads a, b, c, plain;
	mp_traffic_init(&t);
	mp_loads_init(&a);
	mp_loads_init(&b);
	mp_loads_init(&c);
	mp_loads_init(&plain);
	t.kind = MP_TRAFFIC_ZIPF;
	t.zipf_s = 1.2;
	assert_int_equal(mp_traffic_generate(&t, 1, 384, &plain), 0);
	t.permute = true;
	t.seed = 7;
	assert_int_equal(mp_traffic_generate(&t, 4, 384, &a), 0);
	assert_int_equal(mp_traffic_generate(&t, 4, 384, &b), 0);
	t.seed = 8;
	assert_int_equal(mp_traffic_generate(&t, 4, 384, &c), 0);
	/* Same spec and seed: identical bits. */
	assert_memory_equal(a.w, b.w, 4 * 384 * sizeof(double));
	/* Another seed moves the experts. */
	assert_memory_not_equal(a.w, c.w, 4 * 384 * sizeof(double));
	/* Layers get different permutations. */
	assert_memory_not_equal(mp_loads_row(&a, 0), mp_loads_row(&a, 1), 384 * sizeof(double));
	/* Each layer is a permutation of the unpermuted ranks, which are
	 * descending, and sums to 384 (mean 1 per expert). */
	double sorted[384];
	for (uint32_t l = 0; l < 4; l++) {
		memcpy(sorted, mp_loads_row(&a, l), sizeof(sorted));
		qsort(sorted, 384, sizeof(double), cmp_double);
		double sum = 0.0;
		for (uint32_t e = 0; e < 384; e++) {
			assert_near(sorted[e], plain.w[383 - e], 0.0);
			sum += sorted[e];
		}
		assert_near(sum, 384.0, 1e-9);
	}
	mp_loads_finish(&a);
	mp_loads_finish(&b);
	mp_loads_finish(&c);
	mp_loads_finish(&plain);
	mp_traffic_finish(&t);
}

static void traffic__hot_set_matches_hand_calculation(void **state)
{
	(void)state;
	/* 10 experts, 20% hot carrying 60%: 2 hot experts of 0.6*10/2 = 3.0
	 * each, 8 cold of 0.4*10/8 = 0.5 each (sum 10). */
	struct mp_traffic t;
	struct mp_loads out;
	mp_traffic_init(&t);
	mp_loads_init(&out);
	t.kind = MP_TRAFFIC_HOT;
	t.hot_experts = 0.2;
	t.hot_load = 0.6;
	assert_int_equal(mp_traffic_generate(&t, 1, 10, &out), 0);
	for (uint32_t e = 0; e < 10; e++) {
		assert_near(out.w[e], e < 2 ? 3.0 : 0.5, 1e-12);
	}
	t.permute = true;
	t.seed = 99;
	assert_int_equal(mp_traffic_generate(&t, 3, 10, &out), 0);
	for (uint32_t l = 0; l < 3; l++) {
		int hot = 0;
		for (uint32_t e = 0; e < 10; e++) {
			const double w = mp_loads_row(&out, l)[e];
			assert_true(fabs(w - 3.0) < 1e-12 || fabs(w - 0.5) < 1e-12);
			hot += fabs(w - 3.0) < 1e-12;
		}
		assert_int_equal(hot, 2);
	}
	/* A tiny fraction still makes one expert hot: 1 of 10 carries 50%. */
	t.permute = false;
	t.hot_experts = 0.01;
	t.hot_load = 0.5;
	assert_int_equal(mp_traffic_generate(&t, 1, 10, &out), 0);
	assert_near(out.w[0], 5.0, 1e-12);
	assert_near(out.w[1], 5.0 / 9.0, 1e-12);
	mp_loads_finish(&out);
	mp_traffic_finish(&t);
}

static void traffic__observed_is_copied(void **state)
{
	(void)state;
	struct mp_traffic t;
	struct mp_loads out;
	mp_traffic_init(&t);
	mp_loads_init(&out);
	t.kind = MP_TRAFFIC_OBSERVED;
	assert_int_equal(mp_loads_alloc(&t.observed, 2, 3), 0);
	for (int i = 0; i < 6; i++) {
		t.observed.w[i] = (double)(i * 10);
	}
	t.observed.source = strdup("sglang dump");
	assert_int_equal(mp_traffic_generate(&t, 2, 3, &out), 0);
	assert_memory_equal(out.w, t.observed.w, 6 * sizeof(double));
	assert_string_equal(out.source, "sglang dump");
	/* Wrong shape: refused, out untouched. */
	assert_int_equal(mp_traffic_generate(&t, 3, 3, &out), MP_EINVAL);
	assert_int_equal(mp_traffic_generate(&t, 2, 4, &out), MP_EINVAL);
	assert_int_equal(out.n_layers, 2);
	assert_near(out.w[5], 50.0, 0.0);
	/* Negative or non-finite counts are refused. */
	t.observed.w[1] = -1.0;
	assert_int_equal(mp_traffic_generate(&t, 2, 3, &out), MP_EINVAL);
	t.observed.w[1] = (double)NAN;
	assert_int_equal(mp_traffic_generate(&t, 2, 3, &out), MP_EINVAL);
	assert_near(out.w[1], 10.0, 0.0);
	mp_loads_finish(&out);
	mp_traffic_finish(&t);
}

static void traffic__bad_specs_are_refused(void **state)
{
	(void)state;
	struct mp_traffic t;
	struct mp_loads out;
	mp_traffic_init(&t);
	mp_loads_init(&out);
	assert_int_equal(mp_traffic_generate(&t, 1, 4, &out), 0);
	t.kind = MP_TRAFFIC_ZIPF;
	t.zipf_s = -0.5;
	assert_int_equal(mp_traffic_generate(&t, 1, 4, &out), MP_EINVAL);
	t.zipf_s = (double)NAN;
	assert_int_equal(mp_traffic_generate(&t, 1, 4, &out), MP_EINVAL);
	t.kind = MP_TRAFFIC_HOT;
	t.hot_experts = 0.0;
	assert_int_equal(mp_traffic_generate(&t, 1, 4, &out), MP_EINVAL);
	t.hot_experts = 0.5;
	t.hot_load = 1.0;
	assert_int_equal(mp_traffic_generate(&t, 1, 4, &out), MP_EINVAL);
	t.hot_load = 0.5;
	assert_int_equal(mp_traffic_generate(&t, 1, 1, &out), MP_EINVAL);
	assert_int_equal(mp_traffic_generate(&t, 0, 4, &out), MP_EINVAL);
	/* out still holds the uniform loads of the first call. */
	assert_int_equal(out.n_experts, 4);
	assert_near(out.w[3], 1.0, 0.0);
	mp_loads_finish(&out);
	mp_traffic_finish(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(traffic__splitmix64_matches_reference),
		cmocka_unit_test(traffic__xoshiro256ss_matches_reference),
		cmocka_unit_test(traffic__xoshiro_seeded_by_splitmix),
		cmocka_unit_test(traffic__bounded_draws_are_uniform),
		cmocka_unit_test(traffic__loads_alloc_gives_zeros),
		cmocka_unit_test(traffic__uniform_is_all_ones),
		cmocka_unit_test(traffic__zipf_matches_hand_calculation),
		cmocka_unit_test(traffic__zipf_permutation_is_the_reference_shuffle),
		cmocka_unit_test(traffic__permuted_layers_are_reproducible),
		cmocka_unit_test(traffic__hot_set_matches_hand_calculation),
		cmocka_unit_test(traffic__observed_is_copied),
		cmocka_unit_test(traffic__bad_specs_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
