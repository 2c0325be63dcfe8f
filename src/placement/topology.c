/* Placement on nodes: node balancing as a second objective, group-limited
 * placement (every replica of a group's experts on one node), and DeepSeek
 * EPLB's hierarchical policy for comparison.
 *
 * Nodes are consecutive GPUs (node n holds GPUs n*P .. n*P+P-1). Groups
 * are blocks of E / Q consecutive experts, as DeepSeek-V3 numbers them
 * (n_group 8 over 256 routed experts: experts 0-31 form group 0).
 */
#include "placement/internal.h"
#include "placement/exact.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The method of a group-limited layer: how groups were assigned, then,
 * when the layer is not proven, which side its gap is on as far as the
 * nodes tell (issue 17): the node holding the busiest GPU either has a
 * plan that is not proven for its own groups (the gap may be in that
 * node's packing or in its bound), or a proven one (then the plan of every
 * node is as good as it gets for its groups and the gap is in the
 * assignment of groups to nodes or in the bound over assignments). */
#define GL_ALL "group-limited: every assignment of groups to nodes solved; each node by the solver"
#define GL_DP "group-limited: groups assigned to nodes by the partition bound; each node by the solver"
#define GL_FIXED "group-limited: one group per node; each node by the solver"
#define GL_LPT "group-limited: groups assigned to nodes largest first with swaps; each node by the solver"
#define GL_OPEN "; gap: the busiest node's own plan is not proven optimal (its packing or its bound)"
#define GL_NODE "; gap: the busiest node's plan is proven optimal for its groups (the gap is in the assignment of groups to nodes or the bound over assignments)"
enum { GL_M_ALL, GL_M_DP, GL_M_FIXED, GL_M_LPT };
static const char *const M_GROUPS[4][3] = {
	{ GL_ALL, GL_ALL GL_OPEN, GL_ALL GL_NODE },
	{ GL_DP, GL_DP GL_OPEN, GL_DP GL_NODE },
	{ GL_FIXED, GL_FIXED GL_OPEN, GL_FIXED GL_NODE },
	{ GL_LPT, GL_LPT GL_OPEN, GL_LPT GL_NODE },
};
static const char M_EPLB_HIER[] = "eplb greedy (deepseek eplb hierarchical policy)";

/* Most k-subsets of groups whose node sub-layers are all solved (then the
 * best assignment of groups to nodes is exact over the solver's plans),
 * and most slots over all of them: GLPK proves small nodes in
 * milliseconds, but a 24-slot node can take its whole work budget. */
#define TOPO_SOLVE_ALL_SETS 32u
#define TOPO_SOLVE_ALL_SLOTS 256u
/* Node sub-layers per layer that each get the full effort. */
#define TOPO_FULL_EFFORT_SOLVES 8u
/* Most groups for the subset dynamic programme (2^Q entries). */
#define TOPO_DP_MAX_GROUPS 16u
/* Most k-subsets for the dynamic programme over quick bounds. */
#define TOPO_DP_MAX_SETS 4096u

void pl_fill_nodes(struct mp_layer_placement *lp, const double *w, uint32_t E, uint32_t G,
		   uint32_t P)
{
	uint32_t nodes = G / P;
	double mx = 0;
	for (uint32_t n = 0; n < nodes; n++) {
		double s = 0;
		for (uint32_t g = n * P; g < (n + 1) * P; g++) {
			s += lp->gpu_load[g];
		}
		lp->node_load[n] = s;
		if (s > mx) {
			mx = s;
		}
	}
	double sum = 0;
	for (uint32_t e = 0; e < E; e++) {
		sum += w[e];
	}
	lp->node_max_load = mx;
	lp->node_mean_load = sum / nodes;
}

/* --- node balancing --- */

struct balance {
	uint32_t G, S, P, M; /* GPUs, slots per GPU, GPUs per node, nodes */
	double *node;        /* [M] node loads */
	uint32_t *node_of;   /* [G] node of each GPU */
	double eps;
	uint64_t ops;        /* counted work left */
};

static uint32_t heaviest_node(const struct balance *b)
{
	uint32_t a = 0;
	for (uint32_t n = 1; n < b->M; n++) {
		if (b->node[n] > b->node[a]) {
			a = n;
		}
	}
	return a;
}

/* n items of size[n] into bins of per_bin items each (n = bins * per_bin):
 * heaviest first onto the lightest bin with room (lowest index on ties:
 * EPLB's balanced_packing), then up to max_exchanges exchanges of two
 * items between the heaviest bin and another, each the one that lowers
 * the pair's larger load most. bin_of[n] gets each item's bin, order[n]
 * the items heaviest first (ties by index). Returns 0 or MP_ENOMEM. */
static int pack_even(const double *size, uint32_t n, uint32_t bins, uint32_t per_bin,
		     uint64_t max_exchanges, uint32_t *bin_of, uint32_t *order)
{
	uint32_t *fill = calloc(bins, sizeof(*fill));
	double *bin = calloc(bins, sizeof(*bin));
	if (!fill || !bin) {
		free(fill);
		free(bin);
		return MP_ENOMEM;
	}
	pl_sort_desc(order, size, n);
	double total = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t best = UINT32_MAX;
		for (uint32_t b = 0; b < bins; b++) {
			if (fill[b] < per_bin && (best == UINT32_MAX || bin[b] < bin[best])) {
				best = b;
			}
		}
		bin_of[order[i]] = best;
		bin[best] += size[order[i]];
		fill[best]++;
		total += size[order[i]];
	}
	double eps = 1e-12 * total;
	for (uint64_t it = 0; it < max_exchanges; it++) {
		uint32_t a = 0;
		for (uint32_t b = 1; b < bins; b++) {
			if (bin[b] > bin[a]) {
				a = b;
			}
		}
		double best_max = bin[a] - eps;
		uint32_t xa = UINT32_MAX;
		uint32_t xb = UINT32_MAX;
		for (uint32_t x = 0; x < n; x++) {
			if (bin_of[x] != a) {
				continue;
			}
			for (uint32_t y = 0; y < n; y++) {
				uint32_t b = bin_of[y];
				double d = size[x] - size[y];
				if (b == a || !(d > 0)) {
					continue;
				}
				double na = bin[a] - d;
				double nb = bin[b] + d;
				double m = na > nb ? na : nb;
				if (m < best_max) {
					best_max = m;
					xa = x;
					xb = y;
				}
			}
		}
		if (xa == UINT32_MAX) {
			break;
		}
		double d = size[xa] - size[xb];
		uint32_t b = bin_of[xb];
		bin[a] -= d;
		bin[b] += d;
		bin_of[xa] = b;
		bin_of[xb] = a;
	}
	free(fill);
	free(bin);
	return 0;
}

static bool gpu_has(const uint32_t *slot_expert, uint32_t S, uint32_t g, uint32_t e)
{
	for (uint32_t s = 0; s < S; s++) {
		if (slot_expert[g * S + s] == e) {
			return true;
		}
	}
	return false;
}

/* Exchange two replicas between a GPU of the busiest node and a GPU of
 * another node while no GPU goes above the busiest GPU's load and the
 * larger of the two node loads falls. */
static void swap_replicas(struct balance *b, struct mp_layer_placement *lp)
{
	uint32_t S = b->S;
	uint32_t P = b->P;
	while (b->ops > 0) {
		uint32_t a = heaviest_node(b);
		double best_max = b->node[a] - b->eps;
		uint32_t pi = UINT32_MAX;
		uint32_t pj = UINT32_MAX;
		uint64_t looked = 0;
		for (uint32_t ga = a * P; ga < (a + 1) * P; ga++) {
			for (uint32_t i = ga * S; i < (ga + 1) * S; i++) {
				double x = lp->slot_load[i];
				uint32_t ex = lp->slot_expert[i];
				for (uint32_t gb = 0; gb < b->G; gb++) {
					uint32_t nb = gb / P;
					if (nb == a) {
						continue;
					}
					for (uint32_t j = gb * S; j < (gb + 1) * S; j++) {
						double d = x - lp->slot_load[j];
						looked++;
						if (!(d > 0) || lp->gpu_load[gb] + d > lp->max_load) {
							continue;
						}
						double na = b->node[a] - d;
						double nn = b->node[nb] + d;
						double m = na > nn ? na : nn;
						if (!(m < best_max)) {
							continue;
						}
						uint32_t ey = lp->slot_expert[j];
						if (ex == ey || gpu_has(lp->slot_expert, S, ga, ey)
						    || gpu_has(lp->slot_expert, S, gb, ex)) {
							continue;
						}
						best_max = m;
						pi = i;
						pj = j;
					}
				}
			}
		}
		b->ops = b->ops > looked ? b->ops - looked : 0;
		if (pi == UINT32_MAX) {
			break;
		}
		uint32_t ga = pi / S;
		uint32_t gb = pj / S;
		double d = lp->slot_load[pi] - lp->slot_load[pj];
		uint32_t te = lp->slot_expert[pi];
		lp->slot_expert[pi] = lp->slot_expert[pj];
		lp->slot_expert[pj] = te;
		double tl = lp->slot_load[pi];
		lp->slot_load[pi] = lp->slot_load[pj];
		lp->slot_load[pj] = tl;
		lp->gpu_load[ga] -= d;
		lp->gpu_load[gb] += d;
		b->node[a] -= d;
		b->node[gb / P] += d;
	}
}

int pl_balance_nodes(uint32_t G, uint32_t S, uint32_t P, double effort, double eps,
		     struct mp_layer_placement *lp)
{
	struct balance b = { .G = G, .S = S, .P = P, .M = G / P, .eps = eps };
	if (b.M < 2) {
		return 0;
	}
	size_t n = (size_t)G * S;
	b.node = calloc(b.M, sizeof(*b.node));
	b.node_of = calloc(G, sizeof(*b.node_of));
	uint32_t *order = calloc(G, sizeof(*order));
	uint32_t *new_slot = malloc(sizeof(*new_slot) * n);
	double *new_load = malloc(sizeof(*new_load) * n);
	double *new_gpu = malloc(sizeof(*new_gpu) * G);
	uint32_t *fill = calloc(b.M, sizeof(*fill));
	int rc = MP_ENOMEM;
	if (!b.node || !b.node_of || !order || !new_slot || !new_load || !new_gpu || !fill) {
		goto out;
	}
	/* Whole GPUs into nodes first: GPUs are identical, so any assignment
	 * keeps every GPU's load. Work budgets: exchanges a few times the GPU
	 * count, and replica exchanges over all pairs of a node's slots with
	 * every slot, scaled by effort. */
	double exchanges = effort * (4.0 * G + 16);
	rc = pack_even(lp->gpu_load, G, b.M, P, exchanges < 1e9 ? (uint64_t)exchanges : (uint64_t)1e9,
		       b.node_of, order);
	if (rc != 0) {
		goto out;
	}
	/* Renumber: node n's GPUs, in their old order, become n*P .. n*P+P-1. */
	for (uint32_t g = 0; g < G; g++) {
		uint32_t nn = b.node_of[g];
		uint32_t to = nn * P + fill[nn]++;
		memcpy(new_slot + (size_t)to * S, lp->slot_expert + (size_t)g * S, sizeof(*new_slot) * S);
		memcpy(new_load + (size_t)to * S, lp->slot_load + (size_t)g * S, sizeof(*new_load) * S);
		new_gpu[to] = lp->gpu_load[g];
	}
	memcpy(lp->slot_expert, new_slot, sizeof(*new_slot) * n);
	memcpy(lp->slot_load, new_load, sizeof(*new_load) * n);
	memcpy(lp->gpu_load, new_gpu, sizeof(*new_gpu) * G);
	for (uint32_t m = 0; m < b.M; m++) {
		b.node[m] = 0;
		for (uint32_t g = m * P; g < (m + 1) * P; g++) {
			b.node[m] += lp->gpu_load[g];
		}
	}
	double swaps = effort * (8.0 * (double)n * P * S + 1e5);
	b.ops = swaps < 1e12 ? (uint64_t)swaps : (uint64_t)1e12;
	swap_replicas(&b, lp);
	rc = 0;
out:
	free(b.node);
	free(b.node_of);
	free(order);
	free(new_slot);
	free(new_load);
	free(new_gpu);
	free(fill);
	return rc;
}

/* --- group-limited placement --- */

struct groups {
	const double *w;
	uint32_t E, G, S, P, M; /* experts, GPUs, slots per GPU, GPUs per node, nodes */
	uint32_t Q, k, size;   /* groups, groups per node, experts per group */
	const struct mp_place_options *opts;
	struct mp_place_options sub_opts;
	double deadline;
	double *sub_w;         /* [k * size] */
};

/* The experts of the groups in `set` (ascending group order) as a node's
 * sub-layer; ids[k * size] gets their global ids. */
static void node_experts(const struct groups *gs, const uint32_t *set, double *sub_w, uint32_t *ids)
{
	uint32_t i = 0;
	for (uint32_t j = 0; j < gs->k; j++) {
		for (uint32_t x = 0; x < gs->size; x++) {
			uint32_t e = set[j] * gs->size + x;
			sub_w[i] = gs->w[e];
			if (ids) {
				ids[i] = e;
			}
			i++;
		}
	}
}

static double quick_bound(const struct groups *gs, const uint32_t *set, uint32_t *r_scratch,
			  double *size_scratch)
{
	node_experts(gs, set, gs->sub_w, NULL);
	struct pl_prob prob;
	pl_prob_init(&prob, gs->sub_w, gs->k * gs->size, gs->P, gs->S);
	return pl_bound_global(&prob, r_scratch, size_scratch);
}

/* Place one node's groups on its P GPUs. */
static int solve_node(const struct groups *gs, const uint32_t *set, struct mp_placement *sub)
{
	uint32_t Ek = gs->k * gs->size;
	int rc = mp_placement_alloc(sub, 1, Ek, gs->P, gs->S);
	if (rc != 0) {
		return rc;
	}
	node_experts(gs, set, gs->sub_w, NULL);
	return pl_solve_layer(gs->sub_w, Ek, gs->P, gs->S, &gs->sub_opts, gs->deadline,
			      &sub->layers[0]);
}

static uint32_t popcount(uint32_t m)
{
	uint32_t c = 0;
	for (; m; m &= m - 1) {
		c++;
	}
	return c;
}

static void set_of_mask(uint32_t mask, uint32_t *set)
{
	uint32_t j = 0;
	for (uint32_t q = 0; mask; q++, mask >>= 1) {
		if (mask & 1u) {
			set[j++] = q;
		}
	}
}

/* Subset dynamic programme: f[mask] = min over k-subsets s of mask that
 * hold mask's lowest group of max(val[s], f[mask \ s]); choice[mask] = s.
 * val is indexed by subset mask (only k-subsets are read). */
static double dp_partition(uint32_t mask, uint32_t k, const double *val, double *f, uint32_t *choice)
{
	if (mask == 0) {
		return 0;
	}
	if (!isnan(f[mask])) {
		return f[mask];
	}
	uint32_t low = mask & (~mask + 1u);
	uint32_t rest = mask ^ low;
	uint32_t bits[32] = { 0 };
	uint32_t nb = 0;
	for (uint32_t m = rest; m; m &= m - 1) {
		bits[nb++] = m & (~m + 1u);
	}
	/* Combinations of k-1 of the remaining groups, lexicographic. */
	uint32_t idx[32] = { 0 };
	double best = (double)INFINITY;
	uint32_t best_s = 0;
	uint32_t need = k - 1;
	for (uint32_t i = 0; i < need; i++) {
		idx[i] = i;
	}
	for (;;) {
		uint32_t s = low;
		for (uint32_t i = 0; i < need; i++) {
			s |= bits[idx[i]];
		}
		double v = val[s];
		if (v < best) {
			double rv = dp_partition(mask ^ s, k, val, f, choice);
			if (rv > v) {
				v = rv;
			}
			if (v < best) {
				best = v;
				best_s = s;
			}
		}
		uint32_t i = need;
		while (i > 0 && idx[i - 1] == nb - need + i - 1) {
			i--;
		}
		if (i == 0) {
			break;
		}
		idx[i - 1]++;
		for (uint32_t j = i; j < need; j++) {
			idx[j] = idx[j - 1] + 1;
		}
	}
	f[mask] = best;
	choice[mask] = best_s;
	return best;
}

/* Slots of one node. */
#define P_S(gs) ((uint64_t)(gs).P * (gs).S)

static uint64_t binomial(uint32_t n, uint32_t k)
{
	uint64_t c = 1;
	for (uint32_t i = 1; i <= k; i++) {
		c = c * (n - k + i) / i;
		if (c > (1u << 30)) {
			return 1u << 30;
		}
	}
	return c;
}

/* Groups onto nodes largest first (k per node) with exchanges (pack_even);
 * node_groups[M * k], each node's groups in ascending order. */
static int groups_lpt(const struct groups *gs, const double *gload, uint32_t *node_groups)
{
	uint32_t Q = gs->Q;
	uint32_t *order = calloc(Q, sizeof(*order));
	uint32_t *node_of = calloc(Q, sizeof(*node_of));
	uint32_t *fill = calloc(gs->M, sizeof(*fill));
	int rc = MP_ENOMEM;
	if (order && node_of && fill
	    && pack_even(gload, Q, gs->M, gs->k, 4ull * Q * Q, node_of, order) == 0) {
		for (uint32_t q = 0; q < Q; q++) {
			uint32_t n = node_of[q];
			node_groups[n * gs->k + fill[n]++] = q;
		}
		rc = 0;
	}
	free(order);
	free(node_of);
	free(fill);
	return rc;
}

/* Copy node n's sub-plan (its groups in set[k]) into GPUs n*P.. of out. */
static void put_node(const struct groups *gs, uint32_t n, const uint32_t *set,
		     const struct mp_layer_placement *sub, uint32_t *ids, struct mp_layer_placement *out)
{
	node_experts(gs, set, gs->sub_w, ids);
	uint32_t PS = gs->P * gs->S;
	for (uint32_t p = 0; p < PS; p++) {
		out->slot_expert[(size_t)n * PS + p] = ids[sub->slot_expert[p]];
		out->slot_load[(size_t)n * PS + p] = sub->slot_load[p];
	}
	for (uint32_t g = 0; g < gs->P; g++) {
		out->gpu_load[n * gs->P + g] = sub->gpu_load[g];
	}
	for (uint32_t i = 0; i < gs->k * gs->size; i++) {
		out->replicas[ids[i]] = sub->replicas[i];
	}
}

/* With k > 1 groups per node and every k-set of groups solved: true when
 * every assignment of groups to nodes has a node whose proven optimum is
 * at least the plan's busiest GPU (GPU gmax of out), i.e. the plan is
 * optimal. Exact: a set counts as "below" when every GPU of its proven
 * plan is exactly lighter than gmax (pl_x_cmp_slots; sets whose double
 * value is clearly apart skip the exact test), then the partition DP over
 * 0 (below) / 1 asks whether some assignment uses only sets below. val, f
 * and choice are the DP's scratch. */
static bool every_assignment_reaches(const struct groups *gs, const struct mp_placement *subs,
				     const uint32_t *sub_of_mask, const struct mp_layer_placement *out,
				     uint32_t gmax, double *val, double *f, uint32_t *choice)
{
	uint32_t full = (1u << gs->Q) - 1u;
	uint32_t set[32];
	const uint32_t *top = out->slot_expert + (size_t)gmax * gs->S;
	double mx = out->gpu_load[gmax];
	for (uint32_t m = 0; m <= full; m++) {
		val[m] = (double)NAN;
		f[m] = (double)NAN;
		if (popcount(m) != gs->k) {
			continue;
		}
		const struct mp_layer_placement *sub = &subs[sub_of_mask[m]].layers[0];
		if (sub->status != MP_PLACE_OPTIMAL) {
			return false;
		}
		bool below = sub->max_load < mx * (1 - 1e-12);
		if (!below && sub->max_load <= mx * (1 + 1e-12)) {
			set_of_mask(m, set);
			node_experts(gs, set, gs->sub_w, NULL);
			below = true;
			for (uint32_t g = 0; g < gs->P && below; g++) {
				below = pl_x_cmp_slots(gs->sub_w, sub->slot_expert + (size_t)g * gs->S,
						       sub->replicas, gs->w, top, out->replicas,
						       gs->S) < 0;
			}
		}
		val[m] = below ? 0.0 : 1.0;
	}
	return dp_partition(full, gs->k, val, f, choice) >= 1.0;
}

/* A bound for every assignment of groups to nodes (used when they are too
 * many to search): a node holds some group and k-1 others, so its busiest
 * GPU carries at least (that group + the k-1 lightest other groups) / P;
 * an expert has at most P replicas (one per GPU of its node). */
static double simple_bound(const struct groups *gs, const double *gload, double mean)
{
	double lb = mean;
	uint32_t *order = calloc(gs->Q, sizeof(*order));
	if (order) {
		pl_sort_desc(order, gload, gs->Q);
		for (uint32_t q = 0; q < gs->Q; q++) {
			double s = gload[q];
			uint32_t need = gs->k - 1;
			for (uint32_t i = gs->Q; i-- > 0 && need > 0;) {
				if (order[i] != q) {
					s += gload[order[i]];
					need--;
				}
			}
			if (s / gs->P > lb) {
				lb = s / gs->P;
			}
		}
		free(order);
	}
	for (uint32_t e = 0; e < gs->E; e++) {
		if (gs->w[e] / gs->P > lb) {
			lb = gs->w[e] / gs->P;
		}
	}
	return lb;
}

/* One group-limited layer: the choices its shape allows, the scratch,
 * and what the stages of pl_solve_groups found. */
struct glayer {
	bool use_dp;            /* assign groups by the subset DP (2^Q masks) */
	bool solve_all;         /* and solve every k-subset's node first */
	size_t n_masks;         /* 2^Q with the DP, else 1 */
	uint32_t n_sub;         /* node sub-layers: one per k-subset (solve_all) or per node */
	double *gload;          /* [Q] each group's load */
	uint32_t *node_groups;  /* [M][k] each node's groups */
	uint32_t *ids;          /* [k * size] global ids of a node's experts */
	uint32_t *r_scratch;    /* [k * size] */
	double *size_scratch;   /* [k * size] */
	double *val;            /* [n_masks] the DP's value of each k-subset */
	double *f;              /* [n_masks] its memo */
	uint32_t *choice;       /* [n_masks] its choices */
	struct mp_placement *subs; /* [n_sub] solved node sub-layers */
	uint32_t *sub_of_mask;  /* [n_masks] solve_all: each k-subset's sub-layer */
	bool *node_proven;      /* [M] the node's plan is proven for its groups */
	double mean;            /* mean GPU load */
	double bound;           /* valid for every assignment of groups to nodes */
	int method;             /* GL_M_*: how groups were assigned */
	bool timed_out;         /* some node's search hit the wall clock */
};

/* The shape of the layer (gs) and the searches it allows (gl). */
static void groups_setup(struct groups *gs, struct glayer *gl, const double *w, uint32_t E,
			 uint32_t G, uint32_t S, const struct mp_place_options *opts,
			 double deadline)
{
	*gs = (struct groups){
		.w = w, .E = E, .G = G, .S = S, .P = opts->gpus_per_node,
		.M = G / opts->gpus_per_node, .Q = opts->n_groups, .opts = opts,
		.deadline = deadline,
	};
	gs->k = gs->Q / gs->M;
	gs->size = E / gs->Q;
	gs->sub_opts = *opts;
	gs->sub_opts.gpus_per_node = 0;
	gs->sub_opts.node_policy = MP_NODES_REPORT;
	gs->sub_opts.n_groups = 0;
	gs->sub_opts.progress = NULL;
	uint64_t n_sets = binomial(gs->Q, gs->k);
	*gl = (struct glayer){ 0 };
	gl->use_dp = gs->Q <= TOPO_DP_MAX_GROUPS && n_sets <= TOPO_DP_MAX_SETS;
	gl->solve_all = gl->use_dp && gs->k > 1 && n_sets <= TOPO_SOLVE_ALL_SETS
			&& n_sets * P_S(*gs) <= TOPO_SOLVE_ALL_SLOTS;
	/* The node sub-layers share the layer's work: small nodes go to
	 * GLPK's MIP, whose budget (seconds when it cannot prove) the whole
	 * layer would not have spent; beyond 8 sub-layers each gets a share. */
	uint64_t n_solves = gl->solve_all ? n_sets : gs->M;
	if (n_solves > TOPO_FULL_EFFORT_SOLVES) {
		gs->sub_opts.effort = opts->effort * TOPO_FULL_EFFORT_SOLVES / (double)n_solves;
	}
	gl->n_masks = gl->use_dp ? (size_t)1 << gs->Q : 1;
	gl->n_sub = gl->solve_all ? (uint32_t)n_sets : gs->M;
}

/* gl's arrays (and gs->sub_w). 0 or MP_ENOMEM. */
static int groups_alloc(struct groups *gs, struct glayer *gl)
{
	/* (sizes of at least 1: pl_check_groups makes Q and Ek positive, but
	 * the static analyser cannot see it) */
	uint32_t Ek = gs->k * gs->size;
	size_t q_alloc = gs->Q ? gs->Q : 1;
	size_t ek_alloc = Ek ? Ek : 1;
	size_t n_masks = gl->n_masks;
	gl->gload = calloc(q_alloc, sizeof(*gl->gload));
	gl->node_groups = calloc(q_alloc, sizeof(*gl->node_groups));
	gl->ids = calloc(ek_alloc, sizeof(*gl->ids));
	gl->r_scratch = calloc(ek_alloc, sizeof(*gl->r_scratch));
	gl->size_scratch = calloc(ek_alloc, sizeof(*gl->size_scratch));
	gl->val = gl->use_dp ? malloc(sizeof(*gl->val) * n_masks) : NULL;
	gl->f = gl->use_dp ? malloc(sizeof(*gl->f) * n_masks) : NULL;
	gl->choice = gl->use_dp ? calloc(n_masks, sizeof(*gl->choice)) : NULL;
	gl->subs = calloc(gl->n_sub ? gl->n_sub : 1, sizeof(*gl->subs));
	gl->sub_of_mask = gl->solve_all ? calloc(n_masks, sizeof(*gl->sub_of_mask)) : NULL;
	gl->node_proven = calloc(gs->M ? gs->M : 1, sizeof(*gl->node_proven));
	gs->sub_w = calloc(ek_alloc, sizeof(*gs->sub_w));
	if (!gl->gload || !gl->node_groups || !gl->ids || !gl->r_scratch || !gl->size_scratch
	    || !gl->subs || !gl->node_proven || !gs->sub_w
	    || (gl->use_dp && (!gl->val || !gl->f || !gl->choice))
	    || (gl->solve_all && !gl->sub_of_mask)) {
		return MP_ENOMEM;
	}
	return 0;
}

static void groups_free(struct groups *gs, struct glayer *gl)
{
	if (gl->subs) {
		for (uint32_t i = 0; i < gl->n_sub; i++) {
			mp_placement_finish(&gl->subs[i]);
		}
	}
	free(gl->subs);
	free(gl->sub_of_mask);
	free(gl->gload);
	free(gl->node_groups);
	free(gl->ids);
	free(gl->r_scratch);
	free(gl->size_scratch);
	free(gl->val);
	free(gl->f);
	free(gl->choice);
	free(gl->node_proven);
	free(gs->sub_w);
}

/* Each group's load, the mean GPU load, and the mean as the first bound. */
static void group_loads(const struct groups *gs, struct glayer *gl)
{
	double sum = 0;
	for (uint32_t q = 0; q < gs->Q; q++) {
		for (uint32_t x = 0; x < gs->size; x++) {
			gl->gload[q] += gs->w[q * gs->size + x];
		}
		sum += gl->gload[q];
	}
	gl->mean = sum / gs->G;
	gl->bound = gl->mean;
}

/* Groups to nodes by the subset DP: every k-subset's quick bound (and,
 * with solve_all, its node solved) gives a bound over assignments; with
 * solve_all, the nodes' proven bounds give another, and the assignment
 * is the best over the solver's node plans, else the best by quick
 * bounds. 0 or an error of the node solves. */
static int assign_by_dp(const struct groups *gs, struct glayer *gl)
{
	uint32_t k = gs->k;
	uint32_t full = (uint32_t)(gl->n_masks - 1);
	uint32_t set[32];
	for (size_t m = 0; m < gl->n_masks; m++) {
		gl->val[m] = (double)NAN;
		gl->f[m] = (double)NAN;
	}
	uint32_t si = 0;
	for (uint32_t m = 0; m <= full; m++) {
		if (popcount(m) != k) {
			continue;
		}
		set_of_mask(m, set);
		gl->val[m] = quick_bound(gs, set, gl->r_scratch, gl->size_scratch);
		if (gl->solve_all) {
			int rc = solve_node(gs, set, &gl->subs[si]);
			if (rc != 0) {
				return rc;
			}
			gl->sub_of_mask[m] = si++;
		}
	}
	double b0 = dp_partition(full, k, gl->val, gl->f, gl->choice);
	if (b0 > gl->bound) {
		gl->bound = b0;
	}
	if (gl->solve_all && gl->sub_of_mask) {
		/* The bound over assignments from each node's proven bound. */
		for (uint32_t m = 0; m <= full; m++) {
			const struct mp_placement *sp = &gl->subs[gl->sub_of_mask[m]];
			if (!isnan(gl->val[m]) && sp->layers) {
				gl->val[m] = sp->layers[0].lower_bound;
			}
			gl->f[m] = (double)NAN;
		}
		double b1 = dp_partition(full, k, gl->val, gl->f, gl->choice);
		if (b1 > gl->bound) {
			gl->bound = b1;
		}
		/* The best assignment over the solver's node plans. */
		for (uint32_t m = 0; m <= full; m++) {
			const struct mp_placement *sp = &gl->subs[gl->sub_of_mask[m]];
			if (!isnan(gl->val[m]) && sp->layers) {
				gl->val[m] = sp->layers[0].max_load;
			}
			gl->f[m] = (double)NAN;
		}
		dp_partition(full, k, gl->val, gl->f, gl->choice);
	}
	uint32_t mask = full;
	for (uint32_t n = 0; n < gs->M; n++) {
		set_of_mask(gl->choice[mask], gl->node_groups + n * k);
		mask ^= gl->choice[mask];
	}
	return 0;
}

/* Groups to nodes (gl->node_groups), the bound over assignments so far
 * and the method. 0 or an error. */
static int assign_groups(const struct groups *gs, struct glayer *gl)
{
	int rc = 0;
	if (gs->k == 1) {
		gl->method = GL_M_FIXED;
		for (uint32_t q = 0; q < gs->Q; q++) {
			gl->node_groups[q] = q;
		}
	} else if (gl->use_dp) {
		rc = assign_by_dp(gs, gl);
		gl->method = gl->solve_all ? GL_M_ALL : GL_M_DP;
	} else {
		rc = groups_lpt(gs, gl->gload, gl->node_groups);
		if (rc == 0) {
			gl->bound = simple_bound(gs, gl->gload, gl->mean);
		}
		gl->method = GL_M_LPT;
	}
	return rc;
}

/* Each node's plan (solved now, or the k-subset's solved before) copied
 * into out; with one group per node, each node's bound holds for every
 * plan. 0 or an error of the node solves. */
static int place_nodes(const struct groups *gs, struct glayer *gl, struct mp_layer_placement *out)
{
	uint32_t k = gs->k;
	for (uint32_t n = 0; n < gs->M; n++) {
		const uint32_t *ng = gl->node_groups + n * k;
		const struct mp_layer_placement *sub;
		if (gl->solve_all && gl->sub_of_mask) {
			uint32_t m = 0;
			for (uint32_t j = 0; j < k; j++) {
				m |= 1u << ng[j];
			}
			sub = &gl->subs[gl->sub_of_mask[m]].layers[0];
		} else {
			int rc = solve_node(gs, ng, &gl->subs[n]);
			if (rc != 0) {
				return rc;
			}
			sub = &gl->subs[n].layers[0];
			if (k == 1 && sub->lower_bound > gl->bound) {
				/* One group per node: every assignment puts this group
				 * alone on some node, so its bound holds. */
				gl->bound = sub->lower_bound;
			}
		}
		if (sub->status == MP_PLACE_TIME_LIMIT) {
			gl->timed_out = true;
		}
		gl->node_proven[n] = sub->status == MP_PLACE_OPTIMAL;
		put_node(gs, n, ng, sub, gl->ids, out);
	}
	return 0;
}

/* out's busiest and mean load, bound, status and method. Optimal only on
 * an exact proof (issue 17): the node holding the plan's exactly busiest
 * GPU is proven, and with one group per node (every plan puts each group
 * alone on a node) its optimum bounds every plan; with several, every
 * assignment must meet it (every_assignment_reaches). */
static void groups_verdict(const struct groups *gs, struct glayer *gl,
			   struct mp_layer_placement *out)
{
	double mx = 0;
	for (uint32_t g = 0; g < gs->G; g++) {
		if (out->gpu_load[g] > mx) {
			mx = out->gpu_load[g];
		}
	}
	struct pl_prob prob;
	pl_prob_init(&prob, gs->w, gs->E, gs->G, gs->S);
	out->max_load = mx;
	out->mean_load = gl->mean;
	uint32_t gmax = pl_x_argmax(&prob, out->slot_expert, out->replicas);
	bool node_ok = gl->node_proven[gmax / gs->P];
	bool proven = !gl->timed_out && node_ok;
	if (proven && gs->k > 1) {
		proven = gl->solve_all && gl->sub_of_mask
			 && every_assignment_reaches(gs, gl->subs, gl->sub_of_mask, out, gmax,
						     gl->val, gl->f, gl->choice);
	}
	double b = gl->bound < mx ? gl->bound : mx;
	mp_layer_placement_set_bound(out, proven ? mx : pl_x_round_down(&prob, b),
				     gl->timed_out ? MP_PLACE_TIME_LIMIT
				     : proven ? MP_PLACE_OPTIMAL : MP_PLACE_FEASIBLE);
	out->method = M_GROUPS[gl->method][proven || gl->timed_out ? 0 : node_ok ? 2 : 1];
}

int pl_solve_groups(const double *w, uint32_t E, uint32_t G, uint32_t S,
		    const struct mp_place_options *opts, double deadline,
		    struct mp_layer_placement *out)
{
	double t0 = pl_now();
	struct groups gs;
	struct glayer gl;
	groups_setup(&gs, &gl, w, E, G, S, opts, deadline);
	int rc = groups_alloc(&gs, &gl);
	if (rc == 0) {
		group_loads(&gs, &gl);
		rc = assign_groups(&gs, &gl);
	}
	if (rc == 0) {
		rc = place_nodes(&gs, &gl, out);
	}
	if (rc == 0) {
		groups_verdict(&gs, &gl, out);
		out->seconds = pl_now() - t0;
	}
	groups_free(&gs, &gl);
	return rc;
}

int pl_check_groups(uint32_t E, uint32_t G, uint32_t S, uint32_t P, uint32_t Q, char *why,
		    size_t why_size)
{
	uint32_t M = G / P;
	if (Q == 0 || E % Q != 0) {
		snprintf(why, why_size, "%u expert groups do not divide the %u experts", Q, E);
		return MP_EINVAL;
	}
	if (Q % M != 0) {
		snprintf(why, why_size,
			 "%u expert groups do not divide among %u nodes (group-limited placement puts the "
			 "same number of groups on every node)", Q, M);
		return MP_EINVAL;
	}
	uint32_t per_node = E / M;
	if ((uint64_t)P * S < per_node) {
		snprintf(why, why_size,
			 "a node's %u slots (%u GPUs x %u) are fewer than its %u experts (%u groups of %u)",
			 P * S, P, S, per_node, Q / M, E / Q);
		return MP_EINVAL;
	}
	if (S > per_node) {
		snprintf(why, why_size,
			 "%u slots per GPU exceed a node's %u experts: a GPU would hold one expert twice",
			 S, per_node);
		return MP_EINVAL;
	}
	return 0;
}

/* --- EPLB hierarchical --- */

int mp_place_eplb_hierarchical(const double *w, uint32_t n_experts, uint32_t gpus,
			       uint32_t slots_per_gpu, uint32_t n_groups, uint32_t gpus_per_node,
			       struct mp_layer_placement *out)
{
	uint32_t E = n_experts;
	uint32_t G = gpus;
	uint32_t S = slots_per_gpu;
	uint32_t P = gpus_per_node;
	uint64_t n64 = (uint64_t)G * S;
	char why[160];
	if (E == 0 || G == 0 || S == 0 || P == 0 || G % P != 0 || n64 > UINT32_MAX / 2
	    || n64 < E || pl_check_groups(E, G, S, P, n_groups, why, sizeof(why)) != 0) {
		return MP_EINVAL;
	}
	for (uint32_t e = 0; e < E; e++) {
		if (!isfinite(w[e]) || w[e] < 0) {
			return MP_EINVAL;
		}
	}
	double t0 = pl_now();
	uint32_t M = G / P;
	uint32_t Q = n_groups;
	uint32_t k = Q / M;
	uint32_t size = E / Q;
	uint32_t Ek = k * size;
	double *gload = calloc(Q, sizeof(*gload));
	uint32_t *order = calloc(Q, sizeof(*order));
	uint32_t *node_groups = calloc(Q, sizeof(*node_groups));
	uint32_t *fill = calloc(M, sizeof(*fill));
	uint32_t *group_node = calloc(Q, sizeof(*group_node));
	double *sub_w = calloc(Ek, sizeof(*sub_w));
	uint32_t *ids = calloc(Ek, sizeof(*ids));
	uint32_t *map = calloc(n64, sizeof(*map));
	uint32_t *sub_slot = calloc((size_t)P * S, sizeof(*sub_slot));
	int rc = MP_ENOMEM;
	if (!gload || !order || !node_groups || !fill || !group_node || !sub_w || !ids || !map
	    || !sub_slot) {
		goto out;
	}
	for (uint32_t q = 0; q < Q; q++) {
		for (uint32_t x = 0; x < size; x++) {
			gload[q] += w[q * size + x];
		}
	}
	/* balanced_packing of groups onto nodes; k == 1 keeps group q on node q. */
	if (k == 1) {
		for (uint32_t q = 0; q < Q; q++) {
			node_groups[q] = q;
		}
	} else {
		/* (no exchanges: EPLB's own packing); a node's groups in the
		 * order they arrived, heaviest first, as EPLB ranks them */
		if (pack_even(gload, Q, M, k, 0, group_node, order) != 0) {
			goto out;
		}
		for (uint32_t i = 0; i < Q; i++) {
			uint32_t n = group_node[order[i]];
			node_groups[n * k + fill[n]++] = order[i];
		}
	}
	for (uint32_t n = 0; n < M; n++) {
		uint32_t i = 0;
		for (uint32_t j = 0; j < k; j++) {
			for (uint32_t x = 0; x < size; x++) {
				ids[i] = node_groups[n * k + j] * size + x;
				sub_w[i] = w[ids[i]];
				i++;
			}
		}
		struct pl_prob prob;
		struct pl_work work;
		pl_prob_init(&prob, sub_w, Ek, P, S);
		if (pl_work_alloc(&work, &prob) != 0) {
			goto out;
		}
		pl_eplb(&prob, sub_slot, &work);
		pl_work_free(&work);
		for (uint32_t p = 0; p < P * S; p++) {
			map[(size_t)n * P * S + p] = ids[sub_slot[p]];
		}
	}
	rc = mp_place_evaluate(map, w, E, G, S, out);
	if (rc == 0) {
		out->method = M_EPLB_HIER;
		out->seconds = pl_now() - t0;
	}
out:
	free(gload);
	free(order);
	free(node_groups);
	free(fill);
	free(group_node);
	free(sub_w);
	free(ids);
	free(map);
	free(sub_slot);
	return rc;
}
