/* Placement: public API, the per-layer driver and the worker threads.
 *
 * Per layer: bound -> heuristic incumbent (never worse than EPLB) ->
 * if the gap is open, enumerate the replica-count vectors whose bound is
 * below the incumbent; when there are few and the layer is small, solve a
 * GLPK packing MIP for each (with the incumbent as cutoff), which proves
 * the optimum or spends its work budget; on a large layer pack each
 * vector instead; if the gap is still above 0.5%, the configuration LP
 * (config-lp.c) raises the bound and dives for a plan; otherwise
 * report the heuristic honestly as feasible with its gap. With nodes,
 * place_layer applies the node policy (topology.c).
 *
 * Determinism: every stage is bounded by counted work sized from the
 * layer's shape (local-search moves, iterated-local-search operations,
 * enumerated vectors, GLPK simplex iterations and nodes), and the random
 * stream of the iterated local search is seeded from the shape, so a
 * layer's plan depends only on its loads, shape and options, not on the
 * machine, its load or the number of threads. The wall-clock limit is a
 * safety net; when it fires the layer says so (status time_limit).
 */
#include "placement/internal.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Largest layer (slots) handed to the packing MIP: its model has N^2/2
 * binaries, and with GLPK 5.0 it proves 16-slot layers in well under a
 * second but 24-slot ones only sometimes within its work budget and
 * 40-slot ones never (measured on Zipf loads); larger layers are left to
 * the heuristic and reported with their gap. */
#define PL_MIP_MAX_ITEMS 24u
/* Most replica-count vectors enumerated for the bound / the MIPs. */
#define PL_ENUM_MAX_LEAVES 20000u

static const char M_ZERO[] = "all loads are zero";
static const char M_BOUND[] = "heuristic, bound met";
static const char M_ENUM[] = "heuristic, optimality proven by replica-count enumeration";
static const char M_TARGET[] = "heuristic; glpk skipped: target gap met";
static const char M_BIG[] = "heuristic; glpk skipped: layer too large for the mip";
static const char M_ENUM_BIG[] =
	"heuristic, bound by replica-count enumeration; glpk skipped: layer too large for the mip";
static const char M_MIP_OPT[] = "glpk mip per replica-count vector, optimal";
static const char M_MIP_BUDGET[] =
	"glpk mip per replica-count vector; its work budget ran out before the proof";
static const char M_MIP_TL[] = "glpk mip per replica-count vector, time limit";
static const char M_MIP_ERR[] = "glpk mip per replica-count vector; glpk failed on some";
static const char M_FIXED[] =
	"glpk packing mip for the heuristic's replica counts; too many replica-count vectors to prove";
static const char M_FIXED_BUDGET[] =
	"glpk packing mip for the heuristic's replica counts; its work budget ran out";
static const char M_FIXED_TL[] =
	"glpk packing mip for the heuristic's replica counts, time limit";
static const char M_HEUR_TL[] = "heuristic, time limit";
static const char M_ENUM_TL[] = "heuristic; time limit in replica-count enumeration";
static const char M_WEIGHTED[] = "weighted split: glpk lp over the even-split plan";
static const char M_WEIGHTED_EVEN[] = "weighted split: even shares (glpk lp failed)";

const char *mp_place_status_name(enum mp_place_status status)
{
	switch (status) {
	case MP_PLACE_OPTIMAL: return "optimal";
	case MP_PLACE_FEASIBLE: return "feasible";
	case MP_PLACE_TIME_LIMIT: return "time_limit";
	}
	return "unknown";
}

void mp_place_options_init(struct mp_place_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->time_limit_s = 60.0;
	opts->effort = 1.0;
	opts->threads = 0;
	opts->split = MP_SPLIT_EVEN;
	opts->gpus_per_node = 0;
	opts->node_policy = MP_NODES_REPORT;
	opts->n_groups = 0;
	opts->verbose = false;
	opts->target_gap = 0.0;
	opts->progress = NULL;
	opts->progress_user = NULL;
}

void mp_placement_init(struct mp_placement *placement)
{
	memset(placement, 0, sizeof(*placement));
}

static void layer_free(struct mp_layer_placement *lp)
{
	free(lp->slot_expert);
	free(lp->replicas);
	free(lp->slot_load);
	free(lp->gpu_load);
	free(lp->node_load);
	memset(lp, 0, sizeof(*lp));
}

void mp_placement_finish(struct mp_placement *placement)
{
	if (!placement) {
		return;
	}
	if (placement->layers) {
		for (uint32_t l = 0; l < placement->n_layers; l++) {
			layer_free(&placement->layers[l]);
		}
		free(placement->layers);
	}
	mp_placement_init(placement);
}

static bool shape_ok(uint32_t n_experts, uint32_t gpus, uint32_t slots_per_gpu)
{
	uint64_t n = (uint64_t)gpus * slots_per_gpu;
	return n_experts > 0 && n_experts <= MP_MAX_EXPERTS && gpus > 0 && gpus <= MP_MAX_GPUS
	       && slots_per_gpu > 0 && slots_per_gpu <= MP_MAX_SLOTS_PER_GPU && n >= n_experts
	       && n <= UINT32_MAX / 2;
}

int mp_placement_alloc(struct mp_placement *placement, uint32_t n_layers, uint32_t n_experts,
		       uint32_t gpus, uint32_t slots_per_gpu)
{
	if (n_layers == 0 || n_layers > MP_MAX_LAYERS || !shape_ok(n_experts, gpus, slots_per_gpu)) {
		return MP_EINVAL;
	}
	struct mp_placement p;
	mp_placement_init(&p);
	uint32_t n = gpus * slots_per_gpu;
	p.layers = calloc(n_layers, sizeof(*p.layers));
	if (!p.layers) {
		return MP_ENOMEM;
	}
	p.n_layers = n_layers;
	p.n_experts = n_experts;
	p.gpus = gpus;
	p.slots_per_gpu = slots_per_gpu;
	for (uint32_t l = 0; l < n_layers; l++) {
		struct mp_layer_placement *lp = &p.layers[l];
		lp->slot_expert = calloc(n, sizeof(*lp->slot_expert));
		lp->replicas = calloc(n_experts, sizeof(*lp->replicas));
		lp->slot_load = calloc(n, sizeof(*lp->slot_load));
		lp->gpu_load = calloc(gpus, sizeof(*lp->gpu_load));
		lp->method = "";
		if (!lp->slot_expert || !lp->replicas || !lp->slot_load || !lp->gpu_load) {
			mp_placement_finish(&p);
			return MP_ENOMEM;
		}
	}
	mp_placement_finish(placement);
	*placement = p;
	return 0;
}

/* Write a finished even-split solution into the public layer. */
static void fill_layer(const struct pl_prob *prob, const struct pl_sol *sol, double lb,
		       struct mp_layer_placement *out)
{
	memcpy(out->slot_expert, sol->slot, sizeof(*sol->slot) * prob->N);
	memcpy(out->replicas, sol->r, sizeof(*sol->r) * prob->E);
	double mx = 0;
	for (uint32_t g = 0; g < prob->G; g++) {
		double l = 0;
		for (uint32_t s = 0; s < prob->S; s++) {
			uint32_t p = g * prob->S + s;
			uint32_t e = sol->slot[p];
			out->slot_load[p] = prob->w[e] / sol->r[e];
			l += out->slot_load[p];
		}
		out->gpu_load[g] = l;
		if (l > mx) {
			mx = l;
		}
	}
	out->max_load = mx;
	out->mean_load = prob->mean;
	out->lower_bound = lb < mx ? lb : mx;
	out->gap = mx > 0 ? (mx - out->lower_bound) / mx : 0;
}

/* The packing MIP for every enumerated replica-count vector, cheapest
 * bound first; updates best. Returns the bound proven over the set and
 * sets *limit / *error. */
/* Slots packed (summed over tries) when packing the enumerated
 * replica-count vectors of a large layer, times effort. */
#define PL_PACK_SET_SLOTS 200000.0

/* A large layer whose replica-count vectors that could beat the incumbent
 * were all enumerated: pack each (lowest bound first, as many as the
 * counted budget allows) by LPT and by balanced differencing, improve,
 * and keep the best. The incumbent's counts come from a greedy rule; on
 * layers with one expert far above the rest another vector often packs
 * much better (a dominant expert with one replica fewer). */
static void pack_set(const struct pl_prob *prob, const struct pl_rset *set, double effort,
		     double deadline, struct pl_sol *best, struct pl_sol *cand, struct pl_work *work)
{
	uint32_t *order = malloc(sizeof(*order) * (set->count ? set->count : 1));
	if (!order) {
		return;
	}
	for (uint32_t i = 0; i < set->count; i++) {
		order[i] = i;
	}
	pl_sort_idx(order, set->count, set->bound, true);
	double budget = PL_PACK_SET_SLOTS * effort;
	for (uint32_t i = 0; i < set->count && budget > 0; i++) {
		const uint32_t *r = set->r + (size_t)order[i] * prob->E;
		if (set->bound[order[i]] >= best->max - prob->tol || pl_timed_out(work, deadline)) {
			break;
		}
		budget -= 2.0 * prob->N;
		if (pl_pack_lpt(prob, r, cand, work)) {
			pl_improve(prob, cand, work, deadline);
			if (pl_sol_better(cand, best, prob, NULL)) {
				pl_sol_copy(best, cand, prob);
			}
		}
		if (pl_pack_bldm(prob, r, cand, work)) {
			pl_improve(prob, cand, work, deadline);
			if (pl_sol_better(cand, best, prob, NULL)) {
				pl_sol_copy(best, cand, prob);
			}
		}
	}
	free(order);
}

static double solve_set(const struct pl_prob *prob, const struct pl_rset *set,
			const struct mp_place_options *opts, double deadline, struct pl_sol *best,
			struct pl_sol *cand, struct pl_work *work, bool *limit, bool *error)
{
	double minb = (double)INFINITY;
	uint32_t *idx = malloc(sizeof(*idx) * set->count);
	if (!idx) {
		*error = true;
		for (uint32_t k = 0; k < set->count; k++) {
			if (set->bound[k] < minb) {
				minb = set->bound[k];
			}
		}
		return minb;
	}
	for (uint32_t k = 0; k < set->count; k++) {
		idx[k] = k;
	}
	pl_sort_idx(idx, set->count, set->bound, true);
	for (uint32_t q = 0; q < set->count; q++) {
		uint32_t k = idx[q];
		double br = set->bound[k];
		const uint32_t *r = set->r + (size_t)k * prob->E;
		if (br >= best->max - prob->tol) {
			continue; /* cannot beat the incumbent */
		}
		if (*limit || pl_timed_out(work, deadline) || work->mip_work == 0) {
			*limit = true;
			if (br < minb) {
				minb = br;
			}
			continue;
		}
		double bout = br;
		enum pl_mip_result res = pl_mip_pack(prob, r, best->max - prob->tol, br, deadline,
						     opts->verbose, cand, &bout, work);
		switch (res) {
		case PL_MIP_IMPROVED:
			pl_sol_copy(best, cand, prob);
			break;
		case PL_MIP_IMPROVED_LIMIT:
			pl_sol_copy(best, cand, prob);
			*limit = true;
			if (bout < minb) {
				minb = bout;
			}
			break;
		case PL_MIP_NONE:
			break;
		case PL_MIP_LIMIT:
			*limit = true;
			if (bout < minb) {
				minb = bout;
			}
			break;
		case PL_MIP_ERROR:
			*error = true;
			if (br < minb) {
				minb = br;
			}
			break;
		}
	}
	free(idx);
	return minb;
}

/* Iterated local search effort per layer, in work->ops units (a few
 * nanoseconds each): a short run always, a longer one while the gap is
 * above PL_ILS_GAP; both at most PL_ILS_OPS_PER_SLOT2 per squared slot
 * count, so that small layers (which the MIP proves) do not spend it. */
#define PL_ILS_OPS 1000000u
#define PL_ILS_MORE_OPS 30000000u
#define PL_ILS_OPS_PER_SLOT2 5000u
#define PL_ILS_GAP 1e-3

/* GLPK work per layer (units of pl_mip_pack): PL_MIP_WORK_BASE plus
 * PL_MIP_WORK_PER_SLOT2 per squared slot count (the packing MIP has N^2 / 2
 * binaries). At about 0.1 ms a unit (internal.h) that is 3 to
 * 5 s for a 24-slot layer whose MIP does not close; the mixtral traces
 * and DeepSeek's EPLB example are proven with a fifth of it. */
#define PL_MIP_WORK_BASE 20000u
#define PL_MIP_WORK_PER_SLOT2 40u

/* A budget scaled by the effort option (rounded down; at least 1). */
static uint64_t scaled(double units, double effort)
{
	double v = floor(units * effort);
	return v < 1 ? 1 : v > 1e18 ? (uint64_t)1e18 : (uint64_t)v;
}

static uint64_t mip_budget(const struct pl_prob *prob, double effort)
{
	double n = prob->N;
	return scaled(PL_MIP_WORK_BASE + PL_MIP_WORK_PER_SLOT2 * n * n, effort);
}

static uint64_t ils_budget(const struct pl_prob *prob, double cap, double effort)
{
	double n = (double)PL_ILS_OPS_PER_SLOT2 * prob->N * prob->N;
	return scaled(n < cap ? n : cap, effort);
}

/* The wall-clock deadline of a run that starts now (INFINITY: none). */
static double run_deadline(const struct mp_place_options *opts)
{
	return opts->time_limit_s > 0 ? pl_now() + opts->time_limit_s : (double)INFINITY;
}

static int solve_layer(const double *w, uint32_t E, uint32_t G, uint32_t S,
		       const struct mp_place_options *opts, double deadline,
		       struct mp_layer_placement *out)
{
	double t0 = pl_now();
	struct pl_prob prob;
	struct pl_work work = { 0 };
	struct pl_sol best = { 0 };
	struct pl_sol cand = { 0 };
	struct pl_rset set = { 0 };
	int rc = 0;
	pl_prob_init(&prob, w, E, G, S);
	if (pl_work_alloc(&work, &prob) != 0 || pl_sol_alloc(&best, &prob) != 0
	    || pl_sol_alloc(&cand, &prob) != 0) {
		rc = MP_ENOMEM;
		goto out;
	}
	work.mip_work = mip_budget(&prob, opts->effort);
	enum mp_place_status status = MP_PLACE_FEASIBLE;
	const char *method = M_BIG;
	double lb = 0;
	if (!(prob.sum > 0)) {
		pl_replicas_greedy(&prob, best.r);
		if (!pl_pack_lpt(&prob, best.r, &best, &work)) {
			rc = MP_ELIMIT;
			goto out;
		}
		status = MP_PLACE_OPTIMAL;
		method = M_ZERO;
		goto done;
	}
	lb = pl_bound_global(&prob, best.r, work.key);
	rc = pl_heuristic(&prob, &best, &work, deadline);
	if (rc != 0) {
		goto out;
	}
	if (work.timed_out) {
		goto done;
	}
	if (best.max <= lb + prob.tol) {
		status = MP_PLACE_OPTIMAL;
		method = M_BOUND;
		goto done;
	}
	if (best.max > lb + prob.tol) {
		rc = pl_ils(&prob, &best, &work, lb, ils_budget(&prob, PL_ILS_OPS, opts->effort),
			    deadline);
		if (rc == 0 && (best.max - lb) / best.max > PL_ILS_GAP) {
			rc = pl_ils(&prob, &best, &work, lb,
				    ils_budget(&prob, PL_ILS_MORE_OPS, opts->effort), deadline);
		}
		if (rc != 0) {
			goto out;
		}
		if (best.max <= lb + prob.tol) {
			status = MP_PLACE_OPTIMAL;
			method = M_BOUND;
			goto done;
		}
	}
	if ((best.max - lb) / best.max > PL_ILS_GAP
	    && (double)prob.N * prob.E * prob.S < 5e7) {
		double tb = pl_bound_threshold(&prob, lb, best.max);
		if (tb > lb) {
			lb = tb;
		}
		if (best.max <= lb + prob.tol) {
			status = MP_PLACE_OPTIMAL;
			method = M_BOUND;
			goto done;
		}
	}
	if ((best.max - lb) / best.max <= opts->target_gap) {
		method = M_TARGET;
		goto done;
	}
	enum pl_enum_result er = pl_enumerate(&prob, best.max - prob.tol, PL_ENUM_MAX_LEAVES, deadline,
					      &work, &set);
	if (er == PL_ENUM_NOMEM) {
		rc = MP_ENOMEM;
		goto out;
	}
	if (er == PL_ENUM_TIMEOUT) {
		method = M_ENUM_TL;
		goto done;
	}
	if (er == PL_ENUM_DONE) {
		if (set.count == 0) {
			lb = best.max;
			status = MP_PLACE_OPTIMAL;
			method = M_ENUM;
			goto done;
		}
		if (prob.N > PL_MIP_MAX_ITEMS) {
			pack_set(&prob, &set, opts->effort, deadline, &best, &cand, &work);
			double minb = (double)INFINITY;
			for (uint32_t k = 0; k < set.count; k++) {
				if (set.bound[k] < minb) {
					minb = set.bound[k];
				}
			}
			if (minb > lb) {
				lb = minb;
			}
			method = M_ENUM_BIG;
			goto done;
		}
		bool limit = false;
		bool error = false;
		double minb = solve_set(&prob, &set, opts, deadline, &best, &cand, &work, &limit, &error);
		double proven = minb < best.max ? minb : best.max;
		if (proven > lb) {
			lb = proven;
		}
		if (best.max <= lb + prob.tol) {
			lb = best.max;
			status = MP_PLACE_OPTIMAL;
			method = M_MIP_OPT;
		} else if (error) {
			method = M_MIP_ERR;
		} else {
			method = work.timed_out ? M_MIP_TL : M_MIP_BUDGET;
		}
		goto done;
	}
	/* Too many replica-count vectors to prove anything: let GLPK improve
	 * the packing of the incumbent's counts when the layer is small. */
	if (prob.N > PL_MIP_MAX_ITEMS) {
		method = M_BIG;
		goto done;
	}
	{
		double bout = 0;
		double br = pl_bound_for_r(&prob, best.r, &work);
		memcpy(cand.r, best.r, sizeof(*best.r) * E);
		uint32_t *r = malloc(sizeof(*r) * E);
		if (!r) {
			rc = MP_ENOMEM;
			goto out;
		}
		memcpy(r, best.r, sizeof(*r) * E);
		enum pl_mip_result res = pl_mip_pack(&prob, r, best.max - prob.tol, br, deadline,
						     opts->verbose, &cand, &bout, &work);
		free(r);
		if (res == PL_MIP_IMPROVED || res == PL_MIP_IMPROVED_LIMIT) {
			pl_sol_copy(&best, &cand, &prob);
		}
		if (res == PL_MIP_LIMIT || res == PL_MIP_IMPROVED_LIMIT) {
			method = work.timed_out ? M_FIXED_TL : M_FIXED_BUDGET;
		} else {
			method = M_FIXED;
		}
	}
done:
	if (status != MP_PLACE_OPTIMAL && prob.N > PL_MIP_MAX_ITEMS && !work.timed_out
	    && best.max > lb * (1 + PL_GAP_GOAL) && (best.max - lb) / best.max > opts->target_gap) {
		/* A layer too large for the packing MIP whose gap is still above
		 * 0.5%: the configuration LP (bound and plan). */
		const char *m = NULL;
		rc = pl_close_gap(&prob, &best, &lb, opts->effort, opts->verbose, deadline, &work, &m);
		if (rc != 0) {
			goto out;
		}
		if (m) {
			method = m;
		}
	}
	if (status != MP_PLACE_OPTIMAL || method == M_MIP_OPT) {
		/* Lower the second busiest GPU without touching the max. */
		pl_improve(&prob, &best, &work, deadline);
	}
	fill_layer(&prob, &best, lb, out);
	status = out->max_load <= out->lower_bound + prob.tol ? MP_PLACE_OPTIMAL : MP_PLACE_FEASIBLE;
	if (opts->split == MP_SPLIT_WEIGHTED && prob.sum > 0) {
		/* Any split of w_e among its replicas: no replica can carry less
		 * than w_e / min(G, N - E + 1) of its expert in the worst case,
		 * and the mean still holds; with N = E nothing can be split. */
		double lbw = prob.mean;
		if (prob.N > prob.E) {
			uint32_t rmax = prob.N - prob.E + 1;
			if (rmax > G) {
				rmax = G;
			}
			for (uint32_t e = 0; e < E; e++) {
				if (w[e] / rmax > lbw) {
					lbw = w[e] / rmax;
				}
			}
		} else {
			lbw = out->lower_bound;
		}
		double mx = pl_lp_weighted(&prob, best.slot, opts->verbose, out->slot_load, out->gpu_load);
		if (mx >= 0) {
			method = M_WEIGHTED;
			out->max_load = mx;
		} else {
			method = M_WEIGHTED_EVEN;
		}
		out->lower_bound = lbw < out->max_load ? lbw : out->max_load;
		out->gap = out->max_load > 0 ? (out->max_load - out->lower_bound) / out->max_load : 0;
		status = out->max_load <= out->lower_bound + prob.tol ? MP_PLACE_OPTIMAL
			 : MP_PLACE_FEASIBLE;
	}
	if (work.timed_out) {
		/* The safety net fired: the plan is valid and its bound holds,
		 * but where the search stopped depended on the machine. */
		status = MP_PLACE_TIME_LIMIT;
		if (method != M_ENUM_TL && method != M_MIP_TL && method != M_FIXED_TL
		    && method != M_WEIGHTED && method != M_WEIGHTED_EVEN) {
			method = M_HEUR_TL;
		}
	}
	out->status = status;
	out->method = method;
	out->seconds = pl_now() - t0;
out:
	pl_rset_free(&set);
	pl_sol_free(&best);
	pl_sol_free(&cand);
	pl_work_free(&work);
	return rc;
}

int pl_solve_layer(const double *w, uint32_t E, uint32_t G, uint32_t S,
		   const struct mp_place_options *opts, double deadline,
		   struct mp_layer_placement *out)
{
	return solve_layer(w, E, G, S, opts, deadline, out);
}

/* One layer under the node policy. */
static int place_layer(const double *w, uint32_t E, uint32_t G, uint32_t S,
		       const struct mp_place_options *opts, double deadline,
		       struct mp_layer_placement *out)
{
	uint32_t P = opts->gpus_per_node;
	int rc;
	if (P != 0 && opts->node_policy == MP_NODES_GROUP_LIMITED) {
		rc = pl_solve_groups(w, E, G, S, opts, deadline, out);
	} else {
		rc = solve_layer(w, E, G, S, opts, deadline, out);
		if (rc == 0 && P != 0 && opts->node_policy == MP_NODES_BALANCE
		    && out->max_load > 0) {
			struct pl_prob prob;
			pl_prob_init(&prob, w, E, G, S);
			rc = pl_balance_nodes(G, S, P, opts->effort, prob.eps, out);
			/* The exchanges never raise a GPU above the busiest, but can
			 * lower the busiest itself (a search the time limit cut
			 * short): keep max_load, gap and status true. */
			double mx = 0;
			for (uint32_t g = 0; g < G; g++) {
				mx = out->gpu_load[g] > mx ? out->gpu_load[g] : mx;
			}
			if (rc == 0 && mx < out->max_load) {
				out->max_load = mx;
				if (out->lower_bound > mx) {
					out->lower_bound = mx;
				}
				out->gap = mx > 0 ? (mx - out->lower_bound) / mx : 0;
				if (out->status == MP_PLACE_FEASIBLE && mx <= out->lower_bound + prob.tol) {
					out->status = MP_PLACE_OPTIMAL;
				}
			}
		}
	}
	if (rc == 0 && out->node_load && P != 0) {
		pl_fill_nodes(out, w, E, G, P);
	}
	return rc;
}

/* --- worker threads --- */

struct job {
	const struct mp_loads *loads;
	uint32_t gpus;
	uint32_t slots_per_gpu;
	const struct mp_place_options *opts;
	double deadline; /* of the whole run (run_deadline) */
	struct mp_placement *out;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t next;
	uint32_t done;
	uint32_t exited;
	int err;
	double worst_gap;
};

static void run_layers(struct job *job)
{
	for (;;) {
		pthread_mutex_lock(&job->mu);
		if (job->next >= job->loads->n_layers || job->err != 0) {
			pthread_mutex_unlock(&job->mu);
			return;
		}
		uint32_t l = job->next++;
		pthread_mutex_unlock(&job->mu);
		struct mp_layer_placement *lp = &job->out->layers[l];
		int rc = place_layer(mp_loads_row(job->loads, l), job->loads->n_experts, job->gpus,
				     job->slots_per_gpu, job->opts, job->deadline, lp);
		pthread_mutex_lock(&job->mu);
		job->done++;
		if (rc != 0 && job->err == 0) {
			job->err = rc;
		}
		if (rc == 0 && lp->gap > job->worst_gap) {
			job->worst_gap = lp->gap;
		}
		pthread_cond_broadcast(&job->cv);
		pthread_mutex_unlock(&job->mu);
	}
}

static void *worker(void *arg)
{
	struct job *job = arg;
	run_layers(job);
	pl_glpk_thread_done();
	pthread_mutex_lock(&job->mu);
	job->exited++;
	pthread_cond_broadcast(&job->cv);
	pthread_mutex_unlock(&job->mu);
	return NULL;
}

static bool loads_ok(const struct mp_loads *loads, struct mp_diags *diags)
{
	size_t n = (size_t)loads->n_layers * loads->n_experts;
	for (size_t i = 0; i < n; i++) {
		double v = loads->w[i];
		if (!isfinite(v) || v < 0) {
			mp_diags_add(diags, loads->source, 0, 0, MP_EINVAL,
				     "load of expert %zu in layer %zu is %g; expected a finite number >= 0",
				     i % loads->n_experts, i / loads->n_experts, v);
			return false;
		}
	}
	return true;
}

static int check_shape(uint32_t n_experts, uint32_t gpus, uint32_t slots_per_gpu,
		       const struct mp_place_options *opts, struct mp_diags *diags)
{
	uint64_t n = (uint64_t)gpus * slots_per_gpu;
	if (gpus == 0 || slots_per_gpu == 0) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "gpus (%u) and slots per GPU (%u) must be at least 1", gpus,
				    slots_per_gpu);
	}
	if (n < n_experts) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "%llu slots (%u GPUs x %u) are fewer than the %u logical experts",
				    (unsigned long long)n, gpus, slots_per_gpu, n_experts);
	}
	if (slots_per_gpu > n_experts) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "%u slots per GPU exceed the %u logical experts: a GPU would hold one expert twice",
				    slots_per_gpu, n_experts);
	}
	if (!shape_ok(n_experts, gpus, slots_per_gpu)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "placement of %u experts on %u GPUs x %u slots is beyond the supported sizes",
				    n_experts, gpus, slots_per_gpu);
	}
	if (opts && opts->gpus_per_node != 0 && gpus % opts->gpus_per_node != 0) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "%u GPUs do not divide into nodes of %u GPUs", gpus,
				    opts->gpus_per_node);
	}
	if (opts && opts->node_policy != MP_NODES_REPORT && opts->gpus_per_node == 0) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "node policy %s needs GPUs per node",
				    mp_node_policy_name(opts->node_policy));
	}
	if (opts && opts->node_policy == MP_NODES_GROUP_LIMITED) {
		char why[200];
		if (pl_check_groups(n_experts, gpus, slots_per_gpu, opts->gpus_per_node,
				    opts->n_groups, why, sizeof(why)) != 0) {
			return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL, "group-limited placement: %s",
					    why);
		}
	}
	if (opts && !(opts->time_limit_s >= 0)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "time limit %g s must be >= 0", opts->time_limit_s);
	}
	if (opts && !(opts->effort > 0 && opts->effort <= 1e6)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "effort %g must be > 0 and at most 1e6", opts->effort);
	}
	return 0;
}

int mp_place(const struct mp_loads *loads, uint32_t gpus, uint32_t slots_per_gpu,
	     const struct mp_place_options *opts, struct mp_placement *out,
	     struct mp_diags *diags)
{
	struct mp_place_options defaults;
	if (!opts) {
		mp_place_options_init(&defaults);
		opts = &defaults;
	}
	double deadline = run_deadline(opts);
	int rc = check_shape(loads->n_experts, gpus, slots_per_gpu, opts, diags);
	if (rc != 0) {
		return rc;
	}
	if (loads->n_layers == 0 || !loads_ok(loads, diags)) {
		if (loads->n_layers == 0) {
			mp_diags_add(diags, loads->source, 0, 0, MP_EINVAL, "no layers of loads");
		}
		return MP_EINVAL;
	}
	struct mp_placement p;
	mp_placement_init(&p);
	rc = mp_placement_alloc(&p, loads->n_layers, loads->n_experts, gpus, slots_per_gpu);
	if (rc != 0) {
		return rc;
	}
	if (opts->gpus_per_node != 0) {
		p.gpus_per_node = opts->gpus_per_node;
		p.node_policy = opts->node_policy;
		p.n_groups = opts->node_policy == MP_NODES_GROUP_LIMITED ? opts->n_groups : 0;
		for (uint32_t l = 0; l < p.n_layers; l++) {
			p.layers[l].node_load = calloc(gpus / opts->gpus_per_node, sizeof(double));
			if (!p.layers[l].node_load) {
				mp_placement_finish(&p);
				return MP_ENOMEM;
			}
		}
	}
	struct job job = {
		.loads = loads,
		.gpus = gpus,
		.slots_per_gpu = slots_per_gpu,
		.opts = opts,
		.deadline = deadline,
		.out = &p,
	};
	pthread_mutex_init(&job.mu, NULL);
	pthread_cond_init(&job.cv, NULL);
	unsigned n_threads = opts->threads;
	if (n_threads == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n_threads = c > 0 ? (unsigned)c : 1;
	}
	if (n_threads > loads->n_layers) {
		n_threads = loads->n_layers;
	}
	pthread_t *tids = calloc(n_threads, sizeof(*tids));
	unsigned started = 0;
	if (tids) {
		for (unsigned i = 0; i < n_threads; i++) {
			if (pthread_create(&tids[i], NULL, worker, &job) != 0) {
				break;
			}
			started++;
		}
	}
	if (started == 0) {
		/* No thread could start: solve here (GLPK's environment then
		 * stays with the caller's thread). */
		run_layers(&job);
	} else {
		uint32_t reported = 0;
		pthread_mutex_lock(&job.mu);
		while (job.exited < started) {
			while (reported < job.done) {
				reported++;
				uint32_t done_now = reported;
				double gap = job.worst_gap;
				if (opts->progress) {
					pthread_mutex_unlock(&job.mu);
					opts->progress(opts->progress_user, done_now, loads->n_layers, gap);
					pthread_mutex_lock(&job.mu);
				}
			}
			if (job.exited < started) {
				pthread_cond_wait(&job.cv, &job.mu);
			}
		}
		while (reported < job.done && opts->progress) {
			reported++;
			opts->progress(opts->progress_user, reported, loads->n_layers, job.worst_gap);
		}
		pthread_mutex_unlock(&job.mu);
		for (unsigned i = 0; i < started; i++) {
			pthread_join(tids[i], NULL);
		}
	}
	free(tids);
	pthread_mutex_destroy(&job.mu);
	pthread_cond_destroy(&job.cv);
	if (job.err != 0) {
		mp_placement_finish(&p);
		if (job.err == MP_ELIMIT) {
			mp_diags_add(diags, loads->source, 0, 0, MP_ELIMIT,
				     "no placement without duplicate replicas was found");
		}
		return job.err;
	}
	if (started == 0 && opts->progress) {
		opts->progress(opts->progress_user, loads->n_layers, loads->n_layers, job.worst_gap);
	}
	mp_placement_finish(out);
	*out = p;
	return 0;
}

struct one_job {
	const double *w;
	uint32_t E, G, S;
	const struct mp_place_options *opts;
	double deadline;
	struct mp_layer_placement *out;
	int rc;
};

static void *one_worker(void *arg)
{
	struct one_job *j = arg;
	j->rc = place_layer(j->w, j->E, j->G, j->S, j->opts, j->deadline, j->out);
	pl_glpk_thread_done();
	return NULL;
}

int mp_place_layer(const double *w, uint32_t n_experts, uint32_t gpus, uint32_t slots_per_gpu,
		   const struct mp_place_options *opts, struct mp_layer_placement *out)
{
	struct mp_place_options defaults;
	if (!opts) {
		mp_place_options_init(&defaults);
		opts = &defaults;
	}
	if (check_shape(n_experts, gpus, slots_per_gpu, opts, NULL) != 0) {
		return MP_EINVAL;
	}
	for (uint32_t e = 0; e < n_experts; e++) {
		if (!isfinite(w[e]) || w[e] < 0) {
			return MP_EINVAL;
		}
	}
	struct one_job j = {
		.w = w, .E = n_experts, .G = gpus, .S = slots_per_gpu, .opts = opts,
		.deadline = run_deadline(opts), .out = out,
	};
	/* A thread of its own, so that GLPK's thread-local environment is
	 * freed when it ends. */
	pthread_t tid;
	if (pthread_create(&tid, NULL, one_worker, &j) == 0) {
		pthread_join(tid, NULL);
	} else {
		j.rc = place_layer(w, n_experts, gpus, slots_per_gpu, opts, j.deadline, out);
	}
	return j.rc;
}
