/* Placement: the last stage of a layer (issue 17): the exact branch and
 * bound where it fits, then what may be claimed.
 *
 * A layer is "optimal" only on an exact proof: its busiest GPU equals the
 * mean exactly (every GPU carries the same load: the mean bounds every
 * plan), or the exact branch and bound searched every plan. Every other
 * bound the pipeline computed (in floating point, or by GLPK with its
 * tolerances, which the callers subtracted) is lowered by its rounding
 * error (pl_x_round_down) and kept strictly below the plan, so that it
 * never exceeds the optimum; the layer is then "feasible" with that gap.
 */
#include "placement/exact.h"

#include <math.h>

/* Work of the exact branch and bound per layer, times effort, in units of
 * one GPU looked at in a search node (a node costs about G units: sorting,
 * the feasibility tests and the memo key): about 0.1 to 0.3 s on the 2-core
 * development machine for a layer it cannot prove. Layers above
 * PL_BB_MAX_SLOTS only get the root node (the exact mean bound in
 * integers): there the search cannot close the last 1e-5 between the plan
 * and the mean, and the time goes to the large-layer stages. */
#define PL_BB_WORK 2e6
#define PL_BB_MAX_SLOTS 160u

static const char M_BB[] = "exact branch and bound over replica counts and packings, optimal";
static const char M_BB_IMPROVED[] =
	"exact branch and bound improved the plan; its work budget ran out before the proof";
static const char M_MEAN[] = "every GPU carries exactly the mean load, optimal";
static const char M_FILL[] =
	"exact fill: every GPU carries exactly the mean load, optimal";
static const char M_BALANCE[] =
	"exact balancing swaps: every GPU carries exactly the mean load, optimal";

/* Subsets the exact balancing search looks at per layer on 8 GPUs or
 * fewer, times effort; PL_BAL_WORK * (8 / G)^2 on up to PL_BAL_MAX_G
 * GPUs (about 0.15 s on the 2-core development machine when nothing is
 * found at 8 GPUs). It succeeds with many slots per GPU shared by few
 * GPUs (measured: none of the shipped traces' layers at 16 GPUs even at 8
 * times this budget, none at 32 GPUs, none of the Zipf benchmark layers
 * at 32 and 64); layers on more than PL_BAL_MAX_G GPUs skip it. */
#define PL_BAL_WORK 2e6
#define PL_BAL_MAX_G 16u

/* Counted steps of the exact fill per layer, times effort, on up to
 * PL_FILL_MAX_G GPUs: about 0.1 s on the 2-core development machine where
 * nothing is found. Measured on the shipped traces (README, Targets of
 * issue 17): 1e7 proves 10 of qwen1.5 64/EP8's 12 layers (4e6: 9, 4e7:
 * 11); on 32 GPUs it proved no layer (Zipf E256 288/EP32: 58 layers, 5 s
 * more CPU), so wider layers skip it. */
#define PL_FILL_WORK 1e7
#define PL_FILL_MAX_G 16u

/* A search's budget: work times effort, at least 1 and at most 1e15. */
static uint64_t budget(double work, double effort)
{
	double v = floor(work * effort);
	return v < 1 ? 1 : v > 1e15 ? (uint64_t)1e15 : (uint64_t)v;
}

uint64_t pl_bb_budget(const struct pl_prob *prob, double effort)
{
	return prob->N > PL_BB_MAX_SLOTS ? 1 : budget(PL_BB_WORK / prob->G, effort);
}

/* A search for an exactly balanced plan (pl_balance_exact, pl_fill_exact). */
typedef int (*balance_fn)(const struct pl_prob *prob, struct pl_sol *best, uint64_t max_work,
			  bool *found);

/* Run one: 1 when it found an exactly balanced plan (best replaced, out
 * proven with method), 0 when not, or MP_ENOMEM. */
static int try_balanced(const struct pl_prob *prob, struct pl_sol *best, balance_fn fn,
			uint64_t work, const char *method, struct pl_settle *out)
{
	bool found = false;
	int rc = fn(prob, best, work, &found);
	if (rc != 0 || !found) {
		return rc;
	}
	out->proven = true;
	out->method = method;
	out->lb = best->max;
	return 1;
}

int pl_exact_settle(const struct pl_prob *prob, struct pl_sol *best, double lb, double effort,
		    bool search, struct pl_settle *out)
{
	out->proven = false;
	out->method = NULL;
	pl_sol_eval(best, prob);
	if (!(prob->sum > 0) || pl_x_balanced(prob, best)) {
		out->proven = true;
		out->method = prob->sum > 0 ? M_MEAN : NULL;
		out->lb = best->max;
		return 0;
	}
	double bal = PL_BAL_WORK * (prob->G > 8 ? 64.0 / ((double)prob->G * prob->G) : 1.0);
	int rc = prob->G <= PL_BAL_MAX_G ?
		 try_balanced(prob, best, pl_balance_exact, budget(bal, effort), M_BALANCE, out) : 0;
	if (rc == 0 && prob->G <= PL_FILL_MAX_G) {
		rc = try_balanced(prob, best, pl_fill_exact, budget(PL_FILL_WORK, effort), M_FILL, out);
	}
	if (rc != 0) {
		return rc < 0 ? rc : 0;
	}
	{
		/* without search, the root only: the mean bound in exact integers
		 * (a plan whose busiest GPU is the mean rounded up to the unit of
		 * the scaled loads is optimal) */
		uint64_t nodes = 0;
		double before = best->max;
		enum pl_bb_result r = pl_bb_solve(prob, best, search ? pl_bb_budget(prob, effort) : 1,
						  &nodes);
		if (r == PL_BB_NOMEM) {
			return MP_ENOMEM;
		}
		if (r == PL_BB_PROVEN) {
			out->proven = true;
			out->method = M_BB;
			out->lb = best->max;
			return 0;
		}
		if (best->max < before) {
			out->method = M_BB_IMPROVED;
		}
	}
	double b = lb < best->max ? lb : best->max;
	out->lb = pl_x_round_down(prob, b);
	return 0;
}
