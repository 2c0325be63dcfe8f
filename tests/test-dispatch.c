/* The dispatch models (moeplan/dispatch.h, issue 24) on maps worked by
 * hand. SGLang's rule (sgl-project/sglang 60d36e7, python/sglang/srt/eplb/
 * expert_location.py, _find_nearest_expert): a rank's tokens go to its own
 * GPU's replica, else the first (lowest physical id) replica on its node,
 * else a fair choice among all replicas. Random maps against a
 * re-implementation of SGLang's code are in tests/sglang-dispatch.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "moeplan/diag.h"
#include "moeplan/dispatch.h"

/* 4 GPUs x 2 slots, 6 experts; slot p on GPU p / 2.
 * map 1: GPU0 {0,1} GPU1 {0,2} GPU2 {3,4} GPU3 {5,0}: expert 0 on GPUs 0, 1, 3.
 * loads w = {400, 100, 200, 100, 80, 40}, total 920, mean 230; every rank
 * originates w / 4 (expert 0: 100 per rank). */
static const uint32_t map1[8] = {0, 1, 0, 2, 3, 4, 5, 0};
static const double w[6] = {400, 100, 200, 100, 80, 40};

static void check_gpus(const struct mp_dispatch *d, struct mp_dispatch_streams *st, const uint32_t *map,
		       const double *want)
{
	double gpu[4];
	assert_int_equal(mp_dispatch_layer(d, st, map, 6, 4, 2, w, NULL, NULL, gpu), 0);
	for (int g = 0; g < 4; g++) {
		assert_float_equal(gpu[g], want[g], 1e-9);
	}
}

/* One node. Expert 0: ranks 0, 1, 3 keep their 100 on their own GPU;
 * rank 2 has no copy and sends its 100 to the node's first replica, slot 0
 * (GPU 0). So GPU0 = 200 + 100 (expert 1) = 300; GPU1 = 100 + 200 = 300;
 * GPU2 = 100 + 80 = 180; GPU3 = 100 + 40 = 140. Busiest 300 = 1.304 x
 * the mean. The even split gives expert 0 400/3 per replica: GPU0 =
 * 233.33, GPU1 = 333.33, GPU2 = 180, GPU3 = 173.33. */
static void dispatch__one_node_by_hand(void **state)
{
	(void)state;
	struct mp_dispatch sg = {MP_DISPATCH_SGLANG, MP_DISPATCH_STATIC, 0};
	struct mp_dispatch even = {MP_DISPATCH_EVEN, MP_DISPATCH_STATIC, 0};
	struct mp_dispatch vllm = {MP_DISPATCH_VLLM, MP_DISPATCH_STATIC, 0};
	struct mp_dispatch dyn = {MP_DISPATCH_SGLANG, MP_DISPATCH_DYNAMIC, 0};
	struct mp_dispatch_streams *st = mp_dispatch_streams_new(1);
	assert_non_null(st);
	check_gpus(&sg, st, map1, (const double[]){300, 300, 180, 140});
	check_gpus(&sg, NULL, map1, (const double[]){300, 300, 180, 140});
	check_gpus(&dyn, NULL, map1, (const double[]){300, 300, 180, 140});
	const double ev[4] = {400.0 / 3 + 100, 400.0 / 3 + 200, 180, 400.0 / 3 + 40};
	check_gpus(&even, NULL, map1, ev);
	check_gpus(&vllm, NULL, map1, ev); /* position modulo r: 1/r in expectation */
	mp_dispatch_streams_free(st);
}

/* Two nodes of 2 GPUs (node 0: GPUs 0, 1; node 1: GPUs 2, 3).
 * map 2: GPU0 {0,1} GPU1 {0,2} GPU2 {3,4} GPU3 {5,3}: expert 0 only on
 * node 0, expert 3 only on node 1.
 * Expert 0 (100 per rank): ranks 0, 1 keep theirs; ranks 2, 3 (node 1, no
 * copy) draw: k = 2 ranks over c = 2 replicas, quotient 1, remainder 0,
 * so one rank to each, whatever the shuffle: GPU0 = GPU1 = 200.
 * Expert 3 (25 per rank): ranks 2, 3 keep theirs, ranks 0, 1 one to each:
 * GPU2 = GPU3 = 50. Then GPU0 = 200 + 100 = 300, GPU1 = 200 + 200 = 400,
 * GPU2 = 50 + 80 = 130, GPU3 = 50 + 40 = 90 (sum 920). */
static void dispatch__two_nodes_by_hand(void **state)
{
	(void)state;
	static const uint32_t map2[8] = {0, 1, 0, 2, 3, 4, 5, 3};
	struct mp_dispatch sg = {MP_DISPATCH_SGLANG, MP_DISPATCH_STATIC, 2};
	struct mp_dispatch_streams *st = mp_dispatch_streams_new(2);
	assert_non_null(st);
	check_gpus(&sg, st, map2, (const double[]){300, 400, 130, 90});
	check_gpus(&sg, NULL, map2, (const double[]){300, 400, 130, 90});
	/* map 1 on two nodes: expert 0 has a copy on every node; rank 2 goes
	 * to node 1's first, slot 7 (GPU 3): GPU0 200, GPU1 300, GPU2 180,
	 * GPU3 100 + 100 + 40 = 240 */
	check_gpus(&sg, st, map1, (const double[]){200, 300, 180, 240});
	/* fake: uniform routing, every expert u = 920 / 6, u / 4 per rank;
	 * expert 0 as above: GPU0 u/4, GPU1 u/4, GPU3 u/2; then experts 1 (GPU0),
	 * 2 (GPU1), 3 and 4 (GPU2), 5 (GPU3) u each */
	struct mp_dispatch fake = {MP_DISPATCH_SGLANG, MP_DISPATCH_FAKE, 2};
	const double u = 920.0 / 6;
	check_gpus(&fake, NULL, map1, (const double[]){u / 4 + u, u / 4 + u, 2 * u, u / 2 + u});
	mp_dispatch_streams_free(st);
}

/* Where each rank sends (mp_dispatch_layer_route), map 1 on one node,
 * worked as above: expert 0 (slots 0, 2, 7): rank 0 -> slot 0, rank 1 ->
 * slot 2, rank 2 (no copy) -> the node's first, slot 0, rank 3 -> slot 7;
 * expert 1 (slot 1) -> slot 1 from every rank. The even rule splits expert
 * 0 (MP_DISPATCH_SPLIT) and sends expert 1 to its only slot. On map 2 over
 * two nodes, SGLang's dynamic algorithm leaves ranks 2 and 3 (node 1, no
 * copy of expert 0) splitting; ranks 0 and 1 keep their own. */
static void dispatch__route_by_hand(void **state)
{
	(void)state;
	struct mp_dispatch sg = {MP_DISPATCH_SGLANG, MP_DISPATCH_STATIC, 0};
	struct mp_dispatch even = {MP_DISPATCH_EVEN, MP_DISPATCH_STATIC, 0};
	struct mp_dispatch dyn = {MP_DISPATCH_SGLANG, MP_DISPATCH_DYNAMIC, 2};
	uint32_t route[4 * 6];
	assert_int_equal(mp_dispatch_layer_route(&sg, NULL, map1, 6, 4, 2, route), 0);
	const uint32_t want0[4] = {0, 2, 0, 7};
	for (int g = 0; g < 4; g++) {
		assert_int_equal(route[g * 6 + 0], want0[g]);
		assert_int_equal(route[g * 6 + 1], 1);
	}
	assert_int_equal(mp_dispatch_layer_route(&even, NULL, map1, 6, 4, 2, route), 0);
	for (int g = 0; g < 4; g++) {
		assert_int_equal(route[g * 6 + 0], MP_DISPATCH_SPLIT);
		assert_int_equal(route[g * 6 + 1], 1);
	}
	static const uint32_t map2[8] = {0, 1, 0, 2, 3, 4, 5, 3};
	assert_int_equal(mp_dispatch_layer_route(&dyn, NULL, map2, 6, 4, 2, route), 0);
	const uint32_t want_dyn[4] = {0, 2, MP_DISPATCH_SPLIT, MP_DISPATCH_SPLIT};
	for (int g = 0; g < 4; g++) {
		assert_int_equal(route[g * 6 + 0], want_dyn[g]);
	}
	assert_int_equal(mp_dispatch_layer_route(&sg, NULL, map1, 6, 4, 2, NULL), MP_EINVAL);
}

/* One expert at a time (mp_dispatch_sglang_expert). Map 2 on two nodes,
 * by hand (see above): expert 0 (slots 0, 2) gets 2 ranks on each slot,
 * expert 3 (slots 4, 7) too. Then four nodes of one GPU, map 3 = GPU0
 * {0,1} GPU1 {0,2} GPU2 {0,3} GPU3 {4,5}: rank 3 draws one of expert 0's
 * three slots (a random sample of the remainder), so the streams move;
 * visiting the experts in id order reproduces mp_dispatch_layer's loads
 * layer after layer (w / 4 per rank), the contract the placement's
 * re-seating rests on. */
static void dispatch__expert_by_expert(void **state)
{
	(void)state;
	uint32_t ranks[3];
	struct mp_dispatch_streams *st = mp_dispatch_streams_new(2);
	assert_non_null(st);
	assert_int_equal(mp_dispatch_sglang_expert(st, (const uint32_t[]){0, 2}, 2, 4, 2, 2, ranks), 0);
	assert_int_equal(ranks[0], 2);
	assert_int_equal(ranks[1], 2);
	assert_int_equal(mp_dispatch_sglang_expert(st, (const uint32_t[]){4, 7}, 2, 4, 2, 2, ranks), 0);
	assert_int_equal(ranks[0], 2);
	assert_int_equal(ranks[1], 2);
	assert_int_equal(mp_dispatch_sglang_expert(st, (const uint32_t[]){2, 0}, 2, 4, 2, 2, ranks), MP_EINVAL);
	assert_int_equal(mp_dispatch_sglang_expert(NULL, (const uint32_t[]){0, 2}, 2, 4, 2, 2, ranks), MP_EINVAL);
	mp_dispatch_streams_free(st);
	static const uint32_t map3[8] = {0, 1, 0, 2, 0, 3, 4, 5};
	struct mp_dispatch sg = {MP_DISPATCH_SGLANG, MP_DISPATCH_STATIC, 1};
	struct mp_dispatch_streams *a = mp_dispatch_streams_new(4), *b = mp_dispatch_streams_new(4);
	assert_non_null(a);
	assert_non_null(b);
	uint32_t seen[3] = {0, 0, 0};
	for (int layer = 0; layer < 8; layer++) {
		double slot[8];
		assert_int_equal(mp_dispatch_layer(&sg, a, map3, 6, 4, 2, w, NULL, slot, NULL), 0);
		assert_int_equal(mp_dispatch_sglang_expert(b, (const uint32_t[]){0, 2, 4}, 3, 4, 2, 1, ranks), 0);
		assert_int_equal(ranks[0] + ranks[1] + ranks[2], 4);
		for (int i = 0; i < 3; i++) {
			double want = ranks[i] * w[0] / 4;
			assert_true(slot[2 * i] > want - 1e-9 && slot[2 * i] < want + 1e-9);
			seen[i] += ranks[i] == 2;
		}
		for (uint32_t e = 1; e < 6; e++) { /* single replicas: 4 ranks, no draw */
			uint32_t p = e < 4 ? 2 * e - 1 : e + 2;
			assert_int_equal(mp_dispatch_sglang_expert(b, &p, 1, 4, 2, 1, ranks), 0);
			assert_int_equal(ranks[0], 4);
		}
	}
	/* the draws do move: over 8 layers rank 3 chose more than one slot */
	assert_true((seen[0] > 0) + (seen[1] > 0) + (seen[2] > 0) >= 2);
	mp_dispatch_streams_free(a);
	mp_dispatch_streams_free(b);
}

static void dispatch__refuses_bad_input(void **state)
{
	(void)state;
	struct mp_dispatch sg = {MP_DISPATCH_SGLANG, MP_DISPATCH_STATIC, 3}; /* 3 does not divide 4 */
	double gpu[4];
	assert_int_equal(mp_dispatch_layer(&sg, NULL, map1, 6, 4, 2, w, NULL, NULL, gpu), MP_EINVAL);
	sg.gpus_per_node = 2;
	static const uint32_t missing[8] = {0, 1, 0, 2, 3, 4, 0, 1}; /* no expert 5 */
	assert_int_equal(mp_dispatch_layer(&sg, NULL, missing, 6, 4, 2, w, NULL, NULL, gpu), MP_EINVAL);
	enum mp_dispatch_rule r;
	assert_int_equal(mp_dispatch_parse_rule("sglang", &r), 0);
	assert_int_equal(r, MP_DISPATCH_SGLANG);
	assert_int_equal(mp_dispatch_parse_rule("SGLang", &r), MP_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dispatch__one_node_by_hand),
		cmocka_unit_test(dispatch__two_nodes_by_hand),
		cmocka_unit_test(dispatch__route_by_hand),
		cmocka_unit_test(dispatch__expert_by_expert),
		cmocka_unit_test(dispatch__refuses_bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
