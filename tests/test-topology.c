/* Placement on nodes (issue 4 item 4): DeepSeek EPLB's hierarchical policy
 * against its published example, group-limited placement against brute
 * force over every assignment of groups to nodes and every placement, and
 * node balancing as a second objective. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli-run.h"
#include "moeplan/placement.h"

#define assert_near(a, b, tol) assert_near_at((a), (b), (tol), __FILE__, __LINE__)

static void assert_near_at(double a, double b, double tol, const char *file, int line)
{
	if (!(fabs(a - b) <= tol)) {
		fail_msg("%s:%d: %.17g differs from %.17g by more than %g", file, line, a, b, tol);
	}
}

/* DeepSeek EPLB README (github.com/deepseek-ai/EPLB, "Example"): 2 layers
 * x 12 experts, 16 replicas, 4 groups, 2 nodes, 8 GPUs; the README prints
 * phy2log = [[ 5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1],
 *            [ 7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1]]. */
static const double eplb_example[2][12] = {
	{ 90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86 },
	{ 20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27 },
};
static const uint32_t eplb_phy2log[2][16] = {
	{ 5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1 },
	{ 7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1 },
};

static void topology__eplb_hierarchical_matches_readme_example(void **state)
{
	(void)state;
	struct mp_placement p;
	mp_placement_init(&p);
	assert_int_equal(mp_placement_alloc(&p, 1, 12, 8, 2), 0);
	for (int l = 0; l < 2; l++) {
		assert_int_equal(mp_place_eplb_hierarchical(eplb_example[l], 12, 8, 2, 4, 4,
							    &p.layers[0]), 0);
		for (int i = 0; i < 16; i++) {
			assert_int_equal(p.layers[0].slot_expert[i], eplb_phy2log[l][i]);
		}
	}
	/* Layer 0 by hand from the map above: GPU 6 holds experts 0 (90, one
	 * replica) and 1 (132 over two replicas = 66): 156, the busiest, as
	 * issue 4 quotes for EPLB's hierarchical policy. */
	assert_int_equal(mp_place_eplb_hierarchical(eplb_example[0], 12, 8, 2, 4, 4, &p.layers[0]), 0);
	assert_near(p.layers[0].max_load, 156.0, 1e-9);
	mp_placement_finish(&p);
}

/* --- brute force for group-limited placement --- */

/* Best busiest GPU for one node: every GPU holds S distinct experts of the
 * node (combinations), every expert at least once, even split. */
struct node_bf {
	const double *w; /* [n] */
	uint32_t n, P, S;
	uint32_t combos[64][4];
	uint32_t n_combos;
	uint32_t pick[8];
	double best;
};

static void bf_combos(struct node_bf *b, uint32_t start, uint32_t depth, uint32_t *cur)
{
	if (depth == b->S || depth >= 4) {
		memcpy(b->combos[b->n_combos++], cur, sizeof(uint32_t) * depth);
		return;
	}
	for (uint32_t e = start; e < b->n; e++) {
		cur[depth] = e;
		bf_combos(b, e + 1, depth + 1, cur);
	}
}

static void bf_gpus(struct node_bf *b, uint32_t g, uint32_t from)
{
	if (g == b->P) {
		uint32_t r[16] = { 0 };
		for (uint32_t i = 0; i < b->P; i++) {
			for (uint32_t s = 0; s < b->S; s++) {
				r[b->combos[b->pick[i]][s]]++;
			}
		}
		for (uint32_t e = 0; e < b->n; e++) {
			if (r[e] == 0) {
				return;
			}
		}
		double mx = 0;
		for (uint32_t i = 0; i < b->P; i++) {
			double l = 0;
			for (uint32_t s = 0; s < b->S; s++) {
				uint32_t e = b->combos[b->pick[i]][s];
				l += b->w[e] / r[e];
			}
			mx = l > mx ? l : mx;
		}
		b->best = mx < b->best ? mx : b->best;
		return;
	}
	/* GPUs are identical: non-decreasing combination index. */
	for (uint32_t c = from; c < b->n_combos; c++) {
		b->pick[g] = c;
		bf_gpus(b, g + 1, c);
	}
}

static double node_optimum(const double *w, uint32_t n, uint32_t P, uint32_t S)
{
	struct node_bf b = { .w = w, .n = n, .P = P, .S = S, .best = (double)INFINITY };
	uint32_t cur[4];
	bf_combos(&b, 0, 0, cur);
	bf_gpus(&b, 0, 0);
	return b.best;
}

/* Every assignment of Q groups (of `size` experts) to M nodes with Q / M
 * groups each: the best over assignments of the busiest node optimum. */
static double groups_optimum(const double *w, uint32_t Q, uint32_t size, uint32_t M, uint32_t P,
			     uint32_t S)
{
	uint32_t k = Q / M;
	double best = (double)INFINITY;
	/* node_of[q] in 0..M-1, each node k groups; nodes labelled by their
	 * lowest group (canonical) is not needed for a minimum. */
	uint32_t node_of[8];
	uint64_t total = 1;
	for (uint32_t q = 0; q < Q; q++) {
		total *= M;
	}
	for (uint64_t code = 0; code < total; code++) {
		uint64_t c = code;
		uint32_t cnt[8] = { 0 };
		bool ok = true;
		for (uint32_t q = 0; q < Q; q++) {
			node_of[q] = (uint32_t)(c % M);
			c /= M;
			if (++cnt[node_of[q]] > k) {
				ok = false;
			}
		}
		if (!ok) {
			continue;
		}
		double worst = 0;
		for (uint32_t m = 0; m < M; m++) {
			double sub[16];
			uint32_t n = 0;
			for (uint32_t q = 0; q < Q; q++) {
				if (node_of[q] == m) {
					for (uint32_t x = 0; x < size; x++) {
						sub[n++] = w[q * size + x];
					}
				}
			}
			double v = node_optimum(sub, n, P, S);
			worst = v > worst ? v : worst;
		}
		best = worst < best ? worst : best;
	}
	return best;
}

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static void check_group_limited(const struct mp_layer_placement *lp, uint32_t E, uint32_t G,
				uint32_t S, uint32_t P, uint32_t Q)
{
	uint32_t size = E / Q;
	uint32_t *node_of_group = malloc(sizeof(uint32_t) * Q);
	uint32_t *seen = calloc(E, sizeof(uint32_t));
	assert_non_null(node_of_group);
	assert_non_null(seen);
	for (uint32_t q = 0; q < Q; q++) {
		node_of_group[q] = UINT32_MAX;
	}
	for (uint32_t g = 0; g < G; g++) {
		for (uint32_t s = 0; s < S; s++) {
			uint32_t e = lp->slot_expert[g * S + s];
			assert_true(e < E);
			seen[e]++;
			for (uint32_t t = s + 1; t < S; t++) {
				assert_int_not_equal(e, lp->slot_expert[g * S + t]);
			}
			uint32_t q = e / size;
			if (node_of_group[q] == UINT32_MAX) {
				node_of_group[q] = g / P;
			}
			/* every replica of the group on the same node */
			assert_int_equal(node_of_group[q], g / P);
		}
	}
	for (uint32_t e = 0; e < E; e++) {
		assert_true(seen[e] >= 1);
		assert_int_equal(seen[e], lp->replicas[e]);
	}
	free(node_of_group);
	free(seen);
}

static void topology__group_limited_matches_brute_force(void **state)
{
	(void)state;
	/* Shapes: (E, Q groups, G GPUs, S, P per node). */
	static const uint32_t shapes[][5] = {
		{ 8, 4, 4, 3, 2 },  /* 2 nodes, 2 groups of 2 experts each per node */
		{ 6, 3, 6, 2, 2 },  /* 3 nodes, one group each */
		{ 8, 4, 4, 2, 2 },  /* no redundant slots */
		{ 12, 4, 8, 2, 4 }, /* the EPLB README shape */
	};
	uint64_t seed = 42;
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		uint32_t E = shapes[i][0], Q = shapes[i][1], G = shapes[i][2], S = shapes[i][3],
			 P = shapes[i][4];
		for (int trial = 0; trial < 6; trial++) {
			double w[16];
			for (uint32_t e = 0; e < E; e++) {
				w[e] = (double)(1 + lcg(&seed) % 200);
			}
			double opt = groups_optimum(w, Q, E / Q, G / P, P, S);
			struct mp_place_options o;
			mp_place_options_init(&o);
			o.gpus_per_node = P;
			o.node_policy = MP_NODES_GROUP_LIMITED;
			o.n_groups = Q;
			o.threads = 1;
			struct mp_placement p;
			mp_placement_init(&p);
			assert_int_equal(mp_placement_alloc(&p, 1, E, G, S), 0);
			assert_int_equal(mp_place_layer(w, E, G, S, &o, &p.layers[0]), 0);
			const struct mp_layer_placement *lp = &p.layers[0];
			check_group_limited(lp, E, G, S, P, Q);
			assert_near(lp->max_load, opt, 1e-9 * opt);
			assert_true(lp->lower_bound <= opt * (1 + 1e-9));
			assert_int_equal(lp->status, MP_PLACE_OPTIMAL);
			mp_placement_finish(&p);
		}
	}
}

static void topology__group_limited_readme_example_by_hand(void **state)
{
	(void)state;
	/* Layer 0 of the EPLB example with groups kept on nodes. Group loads:
	 * g0 = 90+132+40 = 262, g1 = 61+104+165 = 330, g2 = 39+4+73 = 116,
	 * g3 = 56+183+86 = 325. EPLB pairs {g1, g2} and {g3, g0} (587: four
	 * GPUs at >= 146.75; the best split of the items 91.5, 91.5, 90, 86,
	 * 66, 66, 56, 40 into pairs is 156). Pairing {g1, g0} (592) and
	 * {g3, g2} (441) does better: items 104, 90, 82.5, 82.5, 66, 66, 61,
	 * 40 pair as 104+40, 90+61, 82.5+66, 82.5+66 = 151 at most. */
	struct mp_place_options o;
	mp_place_options_init(&o);
	o.gpus_per_node = 4;
	o.node_policy = MP_NODES_GROUP_LIMITED;
	o.n_groups = 4;
	struct mp_placement p;
	mp_placement_init(&p);
	assert_int_equal(mp_placement_alloc(&p, 1, 12, 8, 2), 0);
	assert_int_equal(mp_place_layer(eplb_example[0], 12, 8, 2, &o, &p.layers[0]), 0);
	assert_near(p.layers[0].max_load, 151.0, 1e-9);
	mp_placement_finish(&p);
}

/* DeepSeek-V3's shape: 256 experts in 8 groups on 8 nodes of 8 GPUs x 5
 * slots, layer l of issue 4's Zipf loads (s = 1) into w[256], placed
 * group-limited into p (one layer, checked to keep its groups). */
enum { V3_E = 256, V3_G = 64, V3_S = 5, V3_P = 8, V3_Q = 8 };

static void place_v3_group_limited(uint32_t l, double *w, struct mp_placement *p)
{
	for (uint32_t e = 0; e < V3_E; e++) {
		w[e] = floor(1e6 / (double)(((97u * e + 31u * l) % V3_E) + 1));
	}
	struct mp_place_options o;
	mp_place_options_init(&o);
	o.gpus_per_node = V3_P;
	o.node_policy = MP_NODES_GROUP_LIMITED;
	o.n_groups = V3_Q;
	mp_placement_init(p);
	assert_int_equal(mp_placement_alloc(p, 1, V3_E, V3_G, V3_S), 0);
	assert_int_equal(mp_place_layer(w, V3_E, V3_G, V3_S, &o, &p->layers[0]), 0);
	check_group_limited(&p->layers[0], V3_E, V3_G, V3_S, V3_P, V3_Q);
}

static void topology__group_limited_keeps_groups_at_scale(void **state)
{
	(void)state;
	enum { E = V3_E, G = V3_G, S = V3_S, P = V3_P, Q = V3_Q };
	double w[E];
	struct mp_placement p;
	place_v3_group_limited(3, w, &p);
	/* One group per node: node n carries exactly group n's load, so its
	 * busiest GPU carries at least a P-th of it. */
	double heaviest = 0;
	for (uint32_t q = 0; q < Q; q++) {
		double s = 0;
		for (uint32_t x = 0; x < E / Q; x++) {
			s += w[q * (E / Q) + x];
		}
		heaviest = s > heaviest ? s : heaviest;
	}
	assert_true(p.layers[0].lower_bound >= heaviest / P * (1 - 1e-12));
	assert_true(p.layers[0].max_load >= p.layers[0].lower_bound);
	/* and never worse than EPLB's hierarchical plan on the same shape */
	struct mp_placement h;
	mp_placement_init(&h);
	assert_int_equal(mp_placement_alloc(&h, 1, E, G, S), 0);
	assert_int_equal(mp_place_eplb_hierarchical(w, E, G, S, Q, P, &h.layers[0]), 0);
	assert_true(p.layers[0].max_load <= h.layers[0].max_load * (1 + 1e-12));
	mp_placement_finish(&h);
	mp_placement_finish(&p);
}

static void topology__group_limited_meets_the_gap_target(void **state)
{
	(void)state;
	/* Layer 29 of the benchmark's Zipf loads (s = 1) with DeepSeek-V3's 8
	 * groups on 8 nodes of 8 GPUs x 5 slots: node 4 holds the hottest
	 * expert (1e6) and the fourth hottest (250,000), so its 40 slots must
	 * give the first 6 or 7 replicas; the solver's first replica counts
	 * left it 15% above the bound. Issue 4's target: within 0.5%. */
	enum { E = V3_E, P = V3_P, Q = V3_Q };
	double w[E];
	struct mp_placement p;
	place_v3_group_limited(29, w, &p);
	/* node 4 alone: (1e6 + 250,000 + the rest of group 4) / 8 GPUs */
	double node4 = 0;
	for (uint32_t x = 0; x < E / Q; x++) {
		node4 += w[4 * (E / Q) + x];
	}
	assert_true(p.layers[0].lower_bound >= node4 / P * (1 - 1e-12));
	assert_true(p.layers[0].max_load <= p.layers[0].lower_bound * 1.005);
	mp_placement_finish(&p);
}

static void topology__balance_nodes_by_hand(void **state)
{
	(void)state;
	/* Four experts on four GPUs of one slot, two nodes of two GPUs: the
	 * GPU loads are the expert loads 10, 9, 1, 2 whatever the map; the
	 * best pairing into nodes is {10, 1} and {9, 2}: 11 each. */
	const double w[4] = { 10, 9, 1, 2 };
	struct mp_place_options o;
	mp_place_options_init(&o);
	o.gpus_per_node = 2;
	o.node_policy = MP_NODES_BALANCE;
	struct mp_placement p;
	mp_placement_init(&p);
	assert_int_equal(mp_placement_alloc(&p, 1, 4, 4, 1), 0);
	p.layers[0].node_load = calloc(2, sizeof(double));
	assert_non_null(p.layers[0].node_load);
	assert_int_equal(mp_place_layer(w, 4, 4, 1, &o, &p.layers[0]), 0);
	assert_near(p.layers[0].max_load, 10.0, 1e-12);
	assert_near(p.layers[0].node_max_load, 11.0, 1e-12);
	assert_near(p.layers[0].node_mean_load, 11.0, 1e-12);
	mp_placement_finish(&p);
}

static void topology__balance_keeps_busiest_gpu(void **state)
{
	(void)state;
	/* The same layers placed with nodes reported and with nodes balanced:
	 * the busiest GPU must not change, the busiest node must not get
	 * heavier, and each node load is the sum of its GPUs. */
	enum { E = 256, G = 64, S = 5, P = 8, L = 4 };
	struct mp_loads loads = { .n_layers = L, .n_experts = E };
	loads.w = malloc(sizeof(double) * L * E);
	assert_non_null(loads.w);
	for (uint32_t l = 0; l < L; l++) {
		for (uint32_t e = 0; e < E; e++) {
			loads.w[l * E + e] = floor(1e6 / pow((double)(((97u * e + 31u * l) % E) + 1), 1.0));
		}
	}
	struct mp_place_options o;
	mp_place_options_init(&o);
	o.gpus_per_node = P;
	struct mp_placement rep, bal;
	mp_placement_init(&rep);
	mp_placement_init(&bal);
	assert_int_equal(mp_place(&loads, G, S, &o, &rep, NULL), 0);
	o.node_policy = MP_NODES_BALANCE;
	assert_int_equal(mp_place(&loads, G, S, &o, &bal, NULL), 0);
	assert_int_equal(bal.node_policy, MP_NODES_BALANCE);
	for (uint32_t l = 0; l < L; l++) {
		const struct mp_layer_placement *a = &rep.layers[l];
		const struct mp_layer_placement *b = &bal.layers[l];
		assert_near(b->max_load, a->max_load, 0);
		assert_true(b->node_max_load <= a->node_max_load);
		assert_true(b->node_max_load >= b->node_mean_load * (1 - 1e-12));
		for (uint32_t n = 0; n < G / P; n++) {
			double s = 0;
			for (uint32_t g = n * P; g < (n + 1) * P; g++) {
				double gl = 0;
				for (uint32_t i = 0; i < S; i++) {
					uint32_t e = b->slot_expert[g * S + i];
					gl += loads.w[l * E + e] / b->replicas[e];
				}
				s += gl;
			}
			assert_near(b->node_load[n], s, 1e-9 * s);
		}
	}
	mp_placement_finish(&rep);
	mp_placement_finish(&bal);
	free(loads.w);
}

static void topology__rejects_shapes_groups_cannot_take(void **state)
{
	(void)state;
	double w[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	struct mp_loads loads = { .n_layers = 1, .n_experts = 12, .w = w };
	struct mp_place_options o;
	mp_place_options_init(&o);
	o.node_policy = MP_NODES_GROUP_LIMITED;
	struct mp_placement p;
	mp_placement_init(&p);
	struct mp_diags d;
	mp_diags_init(&d);
	/* no nodes */
	o.n_groups = 4;
	assert_int_equal(mp_place(&loads, 8, 2, &o, &p, &d), MP_EINVAL);
	/* 5 groups do not divide 12 experts */
	o.gpus_per_node = 4;
	o.n_groups = 5;
	assert_int_equal(mp_place(&loads, 8, 2, &o, &p, &d), MP_EINVAL);
	/* 3 groups do not split over 2 nodes */
	o.n_groups = 3;
	assert_int_equal(mp_place(&loads, 8, 2, &o, &p, &d), MP_EINVAL);
	/* 6 nodes of one GPU, 6 groups: 2 experts a node but 3 slots per GPU,
	 * so a GPU would hold one expert twice */
	o.gpus_per_node = 1;
	o.n_groups = 6;
	assert_int_equal(mp_place(&loads, 6, 3, &o, &p, &d), MP_EINVAL);
	assert_true(d.count >= 4);
	mp_diags_finish(&d);
	mp_placement_finish(&p);
}

static void topology__cli_options(void **state)
{
	(void)state;
	const char *csv = src_path("tests/data/placement/eplb-example.csv");
	struct cli_result r = cli_run("place", csv, "--gpus", "8", "--slots", "16", "--group-limited",
				      "4", NULL);
	assert_int_equal(r.status, 2); /* needs --gpus-per-node */
	cli_result_free(&r);
	r = cli_run("place", csv, "--gpus", "8", "--slots", "16", "--gpus-per-node", "4",
		    "--group-limited", "4", "--balance-nodes", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	/* 8 groups split over 2 nodes, but not over the file's 12 experts:
	 * bad input (the loads decide), not a usage error */
	r = cli_run("place", csv, "--gpus", "8", "--slots", "16", "--gpus-per-node", "4",
		    "--group-limited", "8", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "8 expert groups do not divide the 12 experts"));
	cli_result_free(&r);
	r = cli_run("place", csv, "--gpus", "8", "--slots", "16", "--gpus-per-node", "4",
		    "--group-limited", "4", "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\"node_policy\": \"group_limited\""));
	assert_non_null(strstr(r.out, "\"n_groups\": 4"));
	/* layer 0's busiest GPU, 151 by hand (see above) */
	assert_non_null(strstr(r.out, "\"max_load\": 151"));
	cli_result_free(&r);
}

/* A group-limited plan keeps its promise through the tools that read it:
 * `check` refuses a copy with one replica moved to another node (naming
 * layer, GPU and slot), and `replan`, which moves replicas between any
 * GPUs, refuses the plan instead of silently breaking the groups. */
static void topology__check_and_replan_respect_group_limits(void **state)
{
	(void)state;
	char dir[] = "/tmp/moeplan-topo-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char plan[512];
	char bad[512];
	snprintf(plan, sizeof(plan), "%s/gl.json", dir);
	snprintf(bad, sizeof(bad), "%s/bad.json", dir);
	const char *csv = src_path("tests/data/placement/eplb-example.csv");
	struct cli_result r = cli_run("place", csv, "--gpus", "8", "--slots", "16", "--gpus-per-node",
				      "4", "--group-limited", "4", "--format", "json", "-o", plan, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	r = cli_run("check", plan, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	/* Swap the experts of slot 0 (node 0) and slot 15 (node 1) of layer 0
	 * in both places the plan names them. */
	char *text = cli_slurp(plan);
	assert_non_null(text);
	char *p2l = strstr(text, "\"physical_to_logical\"");
	assert_non_null(p2l);
	char *row = strchr(strchr(p2l, '[') + 1, '[');
	assert_non_null(row);
	unsigned v[16];
	int used = 0;
	assert_int_equal(sscanf(row, "[%u, %u, %u, %u, %u, %u, %u, %u, %u, %u, %u, %u, %u, %u, %u, %u]%n",
				&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
				&v[10], &v[11], &v[12], &v[13], &v[14], &v[15], &used), 16);
	assert_true(v[0] / 3 != v[15] / 3); /* groups of 3 experts on different nodes */
	unsigned t = v[0];
	v[0] = v[15];
	v[15] = t;
	FILE *f = fopen(bad, "wb");
	assert_non_null(f);
	/* the placement object alone: physical_to_logical and node fields */
	fprintf(f, "{\"gpus\": 8, \"slots_per_gpu\": 2, \"n_experts\": 12, \"gpus_per_node\": 4, "
		   "\"node_policy\": \"group_limited\", \"n_groups\": 4, \"physical_to_logical\": [[");
	for (int i = 0; i < 16; i++) {
		fprintf(f, "%u%s", v[i], i < 15 ? ", " : "]]}\n");
	}
	assert_int_equal(fclose(f), 0);
	free(text);
	r = cli_run("check", bad, NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "physical_to_logical[0][0] (layer 0, GPU 0, slot 0)"));
	assert_non_null(strstr(r.err, "physical_to_logical[0][15] (layer 0, GPU 7, slot 1)"));
	cli_result_free(&r);
	r = cli_run("replan", "--plan", plan, "--loads", csv, NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "group_limited"));
	cli_result_free(&r);
	/* groups that cannot split evenly over the nodes: a usage error */
	r = cli_run("place", csv, "--gpus", "8", "--slots", "16", "--gpus-per-node", "2",
		    "--group-limited", "2", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--group-limited"));
	cli_result_free(&r);
	unlink(plan);
	unlink(bad);
	rmdir(dir);
}

/* A scenario can ask for group-limited placement: DeepSeek-V3 (8 groups,
 * plans/models/deepseek-v3.yaml) prefilling at EP32 on 4 H200 servers of
 * 8 GPUs (hardware gpus_per_node 8), two layers of issue 4's Zipf loads.
 * The prefill placement says so and keeps every group of 32 experts on one
 * server; decode (EP8, one server) has a single node. */
static void topology__scenario_node_policy_group_limited(void **state)
{
	(void)state;
	struct cli_result r = cli_run("plan", src_path("tests/data/scenario-group-limited.yaml"),
				      "--format", "json", NULL);
	assert_int_equal(r.status, 0);
	const char *prefill = strstr(r.out, "\"prefill\"");
	assert_non_null(prefill);
	const char *pl = strstr(prefill, "\"placement\"");
	assert_non_null(pl);
	assert_non_null(strstr(pl, "\"node_policy\": \"group_limited\""));
	assert_non_null(strstr(pl, "\"n_groups\": 8"));
	/* physical_to_logical of the prefill placement: 2 layers x 288 slots,
	 * 9 per GPU, so 72 per server; group = expert / 32 */
	const char *map = strstr(pl, "\"physical_to_logical\"");
	assert_non_null(map);
	map = strchr(map, '[');
	assert_non_null(map);
	map++;
	for (int l = 0; l < 2; l++) {
		map = strchr(map, '[');
		assert_non_null(map);
		map++;
		int home[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
		for (int p = 0; p < 288; p++) {
			char *end = NULL;
			long e = strtol(map, &end, 10);
			assert_true(end != map && e >= 0 && e < 256);
			int q = (int)(e / 32);
			int node = p / 72;
			if (home[q] < 0) {
				home[q] = node;
			}
			assert_int_equal(home[q], node);
			map = end + (*end == ',' ? 1 : 0);
		}
	}
	cli_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(topology__eplb_hierarchical_matches_readme_example),
		cmocka_unit_test(topology__group_limited_matches_brute_force),
		cmocka_unit_test(topology__group_limited_readme_example_by_hand),
		cmocka_unit_test(topology__group_limited_keeps_groups_at_scale),
		cmocka_unit_test(topology__group_limited_meets_the_gap_target),
		cmocka_unit_test(topology__balance_nodes_by_hand),
		cmocka_unit_test(topology__balance_keeps_busiest_gpu),
		cmocka_unit_test(topology__rejects_shapes_groups_cannot_take),
		cmocka_unit_test(topology__cli_options),
		cmocka_unit_test(topology__check_and_replan_respect_group_limits),
		cmocka_unit_test(topology__scenario_node_policy_group_limited),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
