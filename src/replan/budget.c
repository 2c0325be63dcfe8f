/* Re-planning: each layer's curve (its best busiest-GPU load for 0, 1,
 * 2, ... moves) and the split of the move budget over layers. */
#include "replan/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Largest DP table (layers x total budget) for the budget split. */
#define RP_DP_MAX_CELLS (1u << 26)

/* Pass 1 of a layer: the curve (local search trajectory capped by the
 * relabelled from-scratch plan). */
int rp_layer_curve(struct rp_layer_work *lw, const struct mp_layer_placement *scr,
		   struct rp_state *st, struct rp_work *work, unsigned char *used)
{
	struct rp_instance *inst = &lw->inst;
	int rc = rp_relabel(inst, scr->slot_expert, lw->scratch, used);
	if (rc) {
		return rc;
	}
	lw->scratch_max = rp_map_max(inst, lw->scratch, st);
	lw->scratch_moves = st->moves;
	/* the curve reaches at least the from-scratch plan's moves */
	lw->K = lw->scratch_moves;
	rp_state_load(st, inst, inst->orig);
	double max0 = st->max;
	rc = rp_local_search(st, inst, work, lw->K, &lw->trajectory);
	if (rc) {
		return rc;
	}
	lw->curve = malloc(sizeof(*lw->curve) * (lw->K + 1));
	lw->curve_step = malloc(sizeof(*lw->curve_step) * (lw->K + 1));
	if (!lw->curve || !lw->curve_step) {
		return MP_ENOMEM;
	}
	for (uint32_t k = 0; k <= lw->K; k++) {
		lw->curve[k] = HUGE_VAL;
		lw->curve_step[k] = 0;
	}
	lw->curve[0] = max0;
	for (size_t i = 0; i < lw->trajectory.n; i++) {
		const struct rp_step *s = &lw->trajectory.steps[i];
		if (s->moves <= lw->K && s->max < lw->curve[s->moves] - inst->tol) {
			lw->curve[s->moves] = s->max;
			lw->curve_step[s->moves] = i + 1;
		}
	}
	if (lw->scratch_max < lw->curve[lw->K] - inst->tol) {
		lw->curve[lw->K] = lw->scratch_max;
		lw->curve_step[lw->K] = SIZE_MAX;
	}
	for (uint32_t k = 1; k <= lw->K; k++) {
		if (!(lw->curve[k] < lw->curve[k - 1] - inst->tol)) {
			lw->curve[k] = lw->curve[k - 1];
			lw->curve_step[k] = lw->curve_step[k - 1];
		}
	}
	return 0;
}

/* The exact split (dynamic programming over layers and totals, ties to
 * fewer moves): lws[l].pick within `budget`, total[b] for every b < T. */
static int split_budget_dp(struct rp_layer_work *lws, uint32_t L, uint64_t budget, double *total,
			   size_t T)
{
	uint64_t cells = (uint64_t)L * T;
	double *dp = malloc(sizeof(*dp) * T);
	double *nd = malloc(sizeof(*nd) * T);
	uint32_t *choice = malloc(sizeof(*choice) * cells);
	if (!dp || !nd || !choice) {
		free(dp);
		free(nd);
		free(choice);
		return MP_ENOMEM;
	}
	dp[0] = 0;
	for (size_t b = 1; b < T; b++) {
		dp[b] = 0; /* with no layers, any budget gives 0 */
	}
	for (uint32_t l = 0; l < L; l++) {
		const struct rp_layer_work *lw = &lws[l];
		for (size_t b = 0; b < T; b++) {
			double best = HUGE_VAL;
			uint32_t arg = 0;
			uint32_t kmax = lw->K < b ? lw->K : (uint32_t)b;
			for (uint32_t k = 0; k <= kmax; k++) {
				double v = dp[b - k] + lw->curve[k];
				if (v < best) {
					best = v;
					arg = k;
				}
			}
			nd[b] = best;
			choice[(size_t)l * T + b] = arg;
		}
		double *tmp = dp;
		dp = nd;
		nd = tmp;
	}
	for (size_t b = 0; b < T; b++) {
		total[b] = dp[b];
	}
	size_t b = budget < T - 1 ? (size_t)budget : T - 1;
	for (uint32_t l = L; l-- > 0;) {
		uint32_t k = choice[(size_t)l * T + b];
		lws[l].pick = k;
		b -= k;
	}
	free(dp);
	free(nd);
	free(choice);
	return 0;
}

/* Too large for the table: hand out moves one at a time to the layer
 * whose curve drops most per move over its next improving point. */
static int split_budget_greedy(struct rp_layer_work *lws, uint32_t L, uint64_t budget,
			       double *total, size_t T)
{
	uint32_t *at = calloc(L, sizeof(*at));
	if (!at) {
		return MP_ENOMEM;
	}
	double sum = 0;
	for (uint32_t l = 0; l < L; l++) {
		sum += lws[l].curve[0];
	}
	size_t used_moves = 0;
	total[0] = sum;
	size_t filled = 0;
	for (;;) {
		double best = 0;
		uint32_t bl = UINT32_MAX;
		uint32_t bk = 0;
		for (uint32_t l = 0; l < L; l++) {
			const struct rp_layer_work *lw = &lws[l];
			for (uint32_t k = at[l] + 1; k <= lw->K; k++) {
				double gain = (lw->curve[at[l]] - lw->curve[k]) / (k - at[l]);
				if (gain > best) {
					best = gain;
					bl = l;
					bk = k;
				}
			}
		}
		if (bl == UINT32_MAX) {
			break;
		}
		sum -= lws[bl].curve[at[bl]] - lws[bl].curve[bk];
		size_t nu = used_moves + (bk - at[bl]);
		for (size_t b = filled + 1; b < nu && b < T; b++) {
			total[b] = total[filled];
		}
		if (nu < T) {
			total[nu] = sum;
			filled = nu;
		}
		if (nu <= budget) {
			for (uint32_t l = 0; l < L; l++) {
				lws[l].pick = l == bl ? bk : at[l];
			}
		}
		used_moves = nu;
		at[bl] = bk;
	}
	for (size_t b = filled + 1; b < T; b++) {
		total[b] = total[filled];
	}
	free(at);
	return 0;
}

/* Split the budget over layers: choice[l] moves for layer l minimising the
 * sum of curve values with sum <= budget (DP, ties to fewer moves); total[]
 * gets the best sum for every total 0 .. sumK. */
int rp_split_budget(struct rp_layer_work *lws, uint32_t L, uint64_t budget, double *total,
		    size_t total_len)
{
	size_t T = total_len; /* sumK + 1 */
	uint64_t cells = (uint64_t)L * T;
	if (cells <= RP_DP_MAX_CELLS) {
		return split_budget_dp(lws, L, budget, total, T);
	}
	return split_budget_greedy(lws, L, budget, total, T);
}
