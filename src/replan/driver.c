/* Re-planning (moeplan/replan.h): the public driver. mp_replan_run checks
 * its input, plans every layer from scratch (mp_place), builds each
 * layer's curve and splits the move budget over the layers (budget.c),
 * then plans each layer within its share (local search, the relabelled
 * from-scratch plan and the GLPK MIP: search.c, relabel.c, mip.c) and
 * collects the moves. */
#include "replan/internal.h"
#include "placement/exact.h"
#include "placement/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char M_NONE[] = "no moves: the current plan";
static const char M_NONE_ZERO[] = "no moves allotted: the current plan";
static const char M_NONE_BOUND[] = "no moves: the current plan, from-scratch bound met";
static const char M_ZERO[] = "all loads are zero";
static const char M_LS[] = "local search from the current plan";
static const char M_LS_BOUND[] = "local search from the current plan, from-scratch bound met";
static const char M_SCRATCH[] = "from-scratch plan, relabelled to keep experts in place";
static const char M_SCRATCH_BOUND[] =
	"from-scratch plan, relabelled to keep experts in place, bound met";
static const char M_MIP_OPT[] = "glpk mip with the move budget, optimal";
/* The claims above that rest on floating-point tolerances (a plan within
 * 1e-6 of the bound, GLPK's optimality) when exact arithmetic does not
 * confirm them (issue 17): the layer is then feasible. */
static const char M_MIP_TOL[] =
	"glpk mip with the move budget, optimal within its tolerance; not proven exactly";
static const char *const M_TOL[3] = {
	"local search from the current plan; optimal within floating-point and glpk tolerances, "
	"not proven exactly",
	"from-scratch plan, relabelled; optimal within floating-point and glpk tolerances, "
	"not proven exactly",
	"no moves: the current plan; optimal within floating-point and glpk tolerances, "
	"not proven exactly",
};
static const char M_MIP_IMPROVED_WORK[] =
	"glpk mip with the move budget, improved; its node budget ran out before a proof";
static const char M_MIP_IMPROVED_TL[] = "glpk mip with the move budget, improved, time limit";
/* What GLPK did when it did not change the plan, after the plan's origin
 * (local search or the relabelled from-scratch plan). */
enum mip_note {
	NOTE_WORK = 0,
	NOTE_TL,
	NOTE_PROVED,
	NOTE_LP_PROVED,
	NOTE_BIG,
	NOTE_WEAK,
	NOTE_LP_ITS,
	NOTE_DUP,
};
#define NOTE3(text)                                                                          \
	{"local search; " text, "from-scratch plan, relabelled; " text,                      \
	 "no moves: the current plan; " text}
static const char *const M_NOTES[][3] = {
	[NOTE_WORK] = NOTE3("glpk mip with the move budget: node budget spent, no better plan found"),
	[NOTE_TL] = NOTE3("glpk mip with the move budget, time limit"),
	[NOTE_PROVED] = NOTE3("glpk mip proved it optimal for the budget"),
	[NOTE_LP_PROVED] = NOTE3("glpk's LP bound proves it optimal for the budget"),
	[NOTE_BIG] = NOTE3("glpk skipped: layer too large for the mip"),
	[NOTE_WEAK] = NOTE3("glpk skipped: its LP bound is no better than the from-scratch bound"),
	[NOTE_LP_ITS] = NOTE3("glpk skipped: the LP hit its iteration budget"),
	[NOTE_DUP] = NOTE3("glpk skipped: the plan keeps two replicas of an expert on one GPU"),
};
#undef NOTE3
static const char M_KEPT[] = "kept: the gain was below --min-gain";

/* ------------------------------------------------------------------ */
/* The driver.                                                         */

void mp_replan_options_init(struct mp_replan_options *opts)
{
	*opts = (struct mp_replan_options){
		.max_moves = MP_REPLAN_UNLIMITED,
		.cost_mode = false,
		.move_cost_s = 0,
		.horizon_steps = 1000,
		.layer_time_s = 0,
		.min_gain = 0,
		.time_limit_s = 10,
		.expert_bytes = MP_REPLAN_DEFAULT_EXPERT_BYTES,
		.link_bw_bytes_per_s = MP_REPLAN_DEFAULT_LINK_BW,
		.mip = true,
		.threads = 0,
		.verbose = false,
	};
}

void mp_replan_init(struct mp_replan *replan)
{
	memset(replan, 0, sizeof(*replan));
	mp_placement_init(&replan->before);
	mp_placement_init(&replan->after);
	mp_placement_init(&replan->scratch);
}

void mp_replan_finish(struct mp_replan *replan)
{
	if (!replan) {
		return;
	}
	if (replan->layers) {
		for (uint32_t l = 0; l < replan->before.n_layers; l++) {
			free(replan->layers[l].curve);
		}
	}
	mp_placement_finish(&replan->before);
	mp_placement_finish(&replan->after);
	mp_placement_finish(&replan->scratch);
	free(replan->layers);
	free(replan->moves);
	free(replan->total_curve);
	mp_replan_init(replan);
}


static double layer_cost(const struct mp_replan_options *o, double mean, double max, uint32_t moves)
{
	double a = mean > 0 ? o->horizon_steps * o->layer_time_s / mean : 0;
	return a * max + o->move_cost_s * moves;
}

static int check_input(const struct mp_placement *cur, const struct mp_loads *loads,
		       const struct mp_replan_options *o, struct mp_diags *diags)
{
	if (cur->n_layers == 0 || cur->gpus == 0 || cur->slots_per_gpu == 0 || cur->n_experts == 0) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL, "the current plan is empty");
	}
	if (cur->gpus_per_node != 0 && cur->node_policy == MP_NODES_GROUP_LIMITED) {
		/* The re-planner moves replicas between any GPUs: it would break
		 * the plan's promise that a token reaches at most top-k nodes. */
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "the current plan keeps its %u expert groups within nodes of %u GPUs "
				    "(node_policy group_limited), which re-planning does not preserve; "
				    "place it again with moeplan place --gpus-per-node %u --group-limited %u",
				    cur->n_groups, cur->gpus_per_node, cur->gpus_per_node, cur->n_groups);
	}
	if (loads->n_layers != cur->n_layers || loads->n_experts != cur->n_experts) {
		return mp_diags_add(diags, loads->source, 0, 0, MP_EINVAL,
				    "the loads are %u layers x %u experts but the current plan has %u layers x %u experts",
				    loads->n_layers, loads->n_experts, cur->n_layers, cur->n_experts);
	}
	if (cur->slots_per_gpu > UINT16_MAX) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL, "%u slots per GPU: at most %u supported",
				    cur->slots_per_gpu, UINT16_MAX);
	}
	uint64_t cells = (uint64_t)cur->gpus * cur->n_experts;
	if (cells > (1u << 28)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "%u GPUs x %u experts is too large to re-plan", cur->gpus, cur->n_experts);
	}
	if (!(o->min_gain >= 0 && o->min_gain < 1) || !(o->time_limit_s > 0) ||
	    !(o->link_bw_bytes_per_s > 0) || !isfinite(o->link_bw_bytes_per_s)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL, "invalid re-plan options");
	}
	if (o->cost_mode && (!(o->move_cost_s >= 0) || !isfinite(o->move_cost_s) ||
			     !(o->horizon_steps > 0) || !isfinite(o->horizon_steps) ||
			     !(o->layer_time_s > 0) || !isfinite(o->layer_time_s))) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "the move-cost objective needs a move cost >= 0, a horizon > 0 and a layer time > 0");
	}
	uint32_t N = cur->gpus * cur->slots_per_gpu;
	for (uint32_t l = 0; l < cur->n_layers; l++) {
		const double *w = mp_loads_row(loads, l);
		for (uint32_t e = 0; e < cur->n_experts; e++) {
			if (!isfinite(w[e]) || w[e] < 0) {
				return mp_diags_add(diags, loads->source, 0, 0, MP_EINVAL,
						    "layer %u, expert %u: load %g is not a finite number >= 0", l, e, w[e]);
			}
		}
		const uint32_t *map = cur->layers[l].slot_expert;
		for (uint32_t p = 0; p < N; p++) {
			if (map[p] >= cur->n_experts) {
				return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
						    "layer %u, slot %u: expert %u is out of range (%u experts)", l, p,
						    map[p], cur->n_experts);
			}
		}
	}
	return 0;
}


/* The state of the trajectory after `steps` steps (or the scratch plan). */
static void replay(struct rp_state *st, const struct rp_layer_work *lw, size_t steps)
{
	const struct rp_instance *inst = &lw->inst;
	if (steps == SIZE_MAX) {
		rp_state_load(st, inst, lw->scratch);
		return;
	}
	rp_state_load(st, inst, inst->orig);
	for (size_t i = 0; i < steps; i++) {
		const struct rp_step *s = &lw->trajectory.steps[i];
		if (s->q != UINT32_MAX) {
			rp_state_set(st, inst, s->p, s->f);
			rp_state_set(st, inst, s->q, s->e);
		} else {
			rp_state_set(st, inst, s->p, s->f);
		}
	}
	rp_state_eval(st, inst);
}

struct layer_choice {
	uint32_t *map; /* [N] */
	unsigned char *used; /* [2 S] scratch */
	double max;
	uint32_t moves;
	const char *method;
};

static bool better_choice(const struct mp_replan_options *o, const struct rp_instance *inst,
			  double mean, double max, uint32_t moves, const struct layer_choice *c)
{
	if (o->cost_mode) {
		double a = layer_cost(o, mean, max, moves);
		double b = layer_cost(o, mean, c->max, c->moves);
		return a < b - 1e-12 * (fabs(b) + 1e-300) || (a <= b && moves < c->moves);
	}
	return max < c->max - inst->tol || (max <= c->max + inst->tol && moves < c->moves);
}

/* Record st as the layer's choice, its slots canonical: an expert that
 * stays on a GPU keeps its old slot, so moves = slots changed. */
static void take(struct layer_choice *c, const struct rp_state *st, const struct rp_instance *inst,
		 const char *method)
{
	rp_canonical_slots(inst, st->slot, c->map, c->used);
	c->max = st->max;
	c->moves = st->moves;
	c->method = method;
}

/* Say what GLPK did to a plan it did not change, after where the plan
 * came from. */
static void note(struct layer_choice *c, enum mip_note n)
{
	if (c->method == M_LS) {
		c->method = M_NOTES[n][0];
	} else if (c->method == M_SCRATCH) {
		c->method = M_NOTES[n][1];
	} else if (c->method == M_NONE) {
		c->method = M_NOTES[n][2];
	}
}

/* The origin (0 local search, 1 from-scratch, 2 no moves) a method names. */
static int method_origin(const char *m)
{
	if (m == M_SCRATCH || m == M_SCRATCH_BOUND) {
		return 1;
	}
	if (m == M_NONE || m == M_NONE_BOUND || m == M_NONE_ZERO) {
		return 2;
	}
	for (size_t n = 0; n < sizeof(M_NOTES) / sizeof(M_NOTES[0]); n++) {
		if (m == M_NOTES[n][1] || m == M_NOTES[n][2]) {
			return m == M_NOTES[n][1] ? 1 : 2;
		}
	}
	return 0;
}

/* Keep an `optimal` claim only on an exact proof (issue 17): no moves
 * allowed (the current plan is the only one), every GPU exactly at the
 * same load (the mean, which bounds every plan), or the from-scratch plan
 * proven optimal and the chosen plan's busiest GPU exactly equal to it.
 * Otherwise (tolerance-based claims, and every cost-mode claim, which
 * rests on GLPK) the layer is feasible with the from-scratch bound, kept
 * below the plan. */
static int exact_claim(const struct rp_layer_work *lw, const struct mp_replan_options *o,
		       enum mp_place_status scratch_status, struct layer_choice *c, double *bound,
		       enum mp_place_status *status)
{
	if (*status != MP_PLACE_OPTIMAL || (lw->budget == 0 && !o->cost_mode)) {
		return 0;
	}
	const struct rp_instance *inst = &lw->inst;
	struct pl_prob prob;
	pl_prob_init(&prob, inst->w, inst->E, inst->G, inst->S);
	struct pl_sol a;
	struct pl_sol b;
	memset(&b, 0, sizeof(b));
	if (pl_sol_alloc(&a, &prob) != 0) {
		return MP_ENOMEM;
	}
	int rc = 0;
	memcpy(a.slot, c->map, sizeof(*a.slot) * inst->N);
	pl_sol_eval(&a, &prob);
	bool exact = !o->cost_mode && pl_x_balanced(&prob, &a);
	if (!exact && !o->cost_mode && scratch_status == MP_PLACE_OPTIMAL) {
		rc = pl_sol_alloc(&b, &prob);
		if (rc == 0) {
			memcpy(b.slot, lw->scratch, sizeof(*b.slot) * inst->N);
			pl_sol_eval(&b, &prob);
			exact = pl_x_cmp_max(&prob, &a, &b) <= 0;
		}
	}
	pl_sol_free(&a);
	pl_sol_free(&b);
	if (rc != 0 || exact) {
		return rc;
	}
	*status = MP_PLACE_FEASIBLE;
	double lb = inst->lb < c->max ? inst->lb : c->max;
	*bound = lb < c->max ? lb : nextafter(c->max, 0);
	c->method = c->method == M_MIP_OPT ? M_MIP_TOL : M_TOL[method_origin(c->method)];
	return 0;
}

/* The searches of a layer with k > 0 moves: the curve's point for k (its
 * trajectory replayed), a fresh descent with exactly k moves, and the
 * relabelled from-scratch plan when it fits in k; c keeps the best. */
static int layer_searches(const struct rp_layer_work *lw, const struct mp_replan_options *o,
			  double mean, struct rp_state *st, struct rp_work *work, struct layer_choice *c)
{
	const struct rp_instance *inst = &lw->inst;
	uint32_t k = lw->budget;
	uint32_t kc = lw->pick < lw->K ? lw->pick : lw->K;
	/* the trajectory's point for k */
	replay(st, lw, lw->curve_step[kc]);
	if (st->moves <= k && better_choice(o, inst, mean, st->max, st->moves, c)) {
		take(c, st, inst, lw->curve_step[kc] == SIZE_MAX ? M_SCRATCH : M_LS);
	}
	/* a fresh descent with exactly k moves */
	rp_state_load(st, inst, inst->orig);
	int rc = rp_local_search(st, inst, work, k, NULL);
	if (rc) {
		return rc;
	}
	if (better_choice(o, inst, mean, st->max, st->moves, c)) {
		take(c, st, inst, M_LS);
	}
	if (lw->scratch_moves <= k) {
		rp_state_load(st, inst, lw->scratch);
		if (better_choice(o, inst, mean, st->max, st->moves, c)) {
			take(c, st, inst, M_SCRATCH);
		}
	}
	return 0;
}

/* What the MIP's answer res makes of the layer's choice c (st: scratch):
 * its plan (out) when better within the k moves, else a note of what
 * GLPK found; the layer's status. */
static void take_mip_result(struct layer_choice *c, struct rp_state *st,
			    const struct rp_instance *inst, const struct mp_replan_options *o,
			    double mean, uint32_t k, enum rp_mip_result res, const uint32_t *out,
			    enum mp_place_status *status)
{
	switch (res) {
	case MIP_IMPROVED:
	case MIP_IMPROVED_WORK:
	case MIP_IMPROVED_TL:
		rp_state_load(st, inst, out);
		if ((o->cost_mode || st->moves <= k) && better_choice(o, inst, mean, st->max, st->moves, c)) {
			take(c, st, inst, res == MIP_IMPROVED ? M_MIP_OPT
					: res == MIP_IMPROVED_WORK ? M_MIP_IMPROVED_WORK : M_MIP_IMPROVED_TL);
			*status = res == MIP_IMPROVED ? MP_PLACE_OPTIMAL
				  : res == MIP_IMPROVED_WORK ? MP_PLACE_FEASIBLE : MP_PLACE_TIME_LIMIT;
		} else if (res == MIP_IMPROVED) {
			/* GLPK's optimum equals the incumbent (within tolerance) */
			note(c, NOTE_PROVED);
			*status = MP_PLACE_OPTIMAL;
		} else if (res == MIP_IMPROVED_WORK) {
			note(c, NOTE_WORK);
		} else {
			note(c, NOTE_TL);
			*status = MP_PLACE_TIME_LIMIT;
		}
		break;
	case MIP_NO_GAIN:
		note(c, NOTE_PROVED);
		*status = MP_PLACE_OPTIMAL;
		break;
	case MIP_LP_PROVED:
		note(c, NOTE_LP_PROVED);
		*status = MP_PLACE_OPTIMAL;
		break;
	case MIP_NO_GAIN_WORK:
		note(c, NOTE_WORK);
		break;
	case MIP_NO_GAIN_TL:
		note(c, NOTE_TL);
		*status = MP_PLACE_TIME_LIMIT;
		break;
	case MIP_WEAK:
		note(c, NOTE_WEAK);
		break;
	case MIP_LP_ITS:
		note(c, NOTE_LP_ITS);
		break;
	case MIP_SKIPPED:
	case MIP_ERROR:
		break;
	}
}

/* The GLPK MIP of a layer, seeded with its choice c, within k moves (or
 * the move cost): c, bound and status as it leaves them. */
static int layer_mip(const struct rp_layer_work *lw, const struct mp_replan_options *o, double mean,
		     double deadline, struct rp_state *st, struct layer_choice *c, double *bound,
		     enum mp_place_status *status)
{
	const struct rp_instance *inst = &lw->inst;
	uint32_t k = lw->budget;
	rp_state_load(st, inst, c->map);
	if (rp_state_has_dup(st, inst)) {
		note(c, NOTE_DUP);
		return 0;
	}
	if (rp_mip_columns(inst) > RP_MIP_MAX_COLS) {
		note(c, NOTE_BIG);
		return 0;
	}
	uint32_t *out = malloc(sizeof(*out) * inst->N);
	if (!out) {
		return MP_ENOMEM;
	}
	struct rp_mip_job job = {
		.inst = inst,
		.seed = c->map,
		.seed_max = c->max,
		.cost_mode = o->cost_mode,
		.budget = k,
		.a = mean > 0 ? o->horizon_steps * o->layer_time_s / mean : 0,
		.b = o->move_cost_s,
		.seed_cost = layer_cost(o, mean, c->max, c->moves),
		.search_if_weak = inst->N <= RP_MIP_SMALL_SLOTS,
		.deadline = deadline,
		.verbose = o->verbose,
		.out = out,
	};
	enum rp_mip_result res = rp_mip_solve(&job);
	if (!o->cost_mode && job.bound > *bound) {
		*bound = job.bound;
	}
	take_mip_result(c, st, inst, o, mean, k, res, out, status);
	if (*status == MP_PLACE_OPTIMAL && !o->cost_mode) {
		*bound = c->max;
	}
	if (*bound > c->max) {
		*bound = c->max;
	}
	free(out);
	return 0;
}

/* Pass 2 of a layer: the plan for its allotted moves (lw->budget): the
 * current plan, the searches, then the MIP. */
static int layer_plan(struct rp_layer_work *lw, const struct mp_replan_options *o, double mean,
		      double deadline, struct rp_state *st, struct rp_work *work,
		      struct layer_choice *c, double *bound, enum mp_place_status *status)
{
	struct rp_instance *inst = &lw->inst;
	uint32_t k = lw->budget;
	*bound = inst->lb;
	*status = MP_PLACE_FEASIBLE;
	/* the current plan */
	rp_state_load(st, inst, inst->orig);
	take(c, st, inst, M_NONE);
	if (st->max <= 0) {
		c->method = M_ZERO;
		*status = MP_PLACE_OPTIMAL;
		*bound = 0;
		return 0;
	}
	if (k == 0 && !o->cost_mode) {
		/* the only plan with no moves: optimal for the budget */
		c->method = c->max <= inst->lb + inst->tol ? M_NONE_BOUND : M_NONE_ZERO;
		*status = MP_PLACE_OPTIMAL;
		*bound = c->max;
		return 0;
	}
	if (k > 0) {
		int rc = layer_searches(lw, o, mean, st, work, c);
		if (rc) {
			return rc;
		}
	}
	if (c->max <= inst->lb + inst->tol) {
		*status = MP_PLACE_OPTIMAL;
		c->method = c->method == M_SCRATCH ? M_SCRATCH_BOUND
			    : c->method == M_NONE ? M_NONE_BOUND : M_LS_BOUND;
		*bound = c->max;
		return 0;
	}
	if (!o->mip || k == 0) {
		return 0;
	}
	return layer_mip(lw, o, mean, deadline, st, c, bound, status);
}

static int eval_into(const uint32_t *map, const double *w, const struct mp_placement *shape,
		     struct mp_layer_placement *out)
{
	return mp_place_evaluate(map, w, shape->n_experts, shape->gpus, shape->slots_per_gpu, out);
}

/* Moves, bytes and the transfer time estimate (replan/internal.h). */
int rp_collect_moves(struct mp_replan *out, const struct mp_placement *cur)
{
	uint32_t L = cur->n_layers;
	uint32_t G = cur->gpus;
	uint32_t S = cur->slots_per_gpu;
	uint32_t N = G * S;
	size_t n = 0;
	for (uint32_t l = 0; l < L; l++) {
		for (uint32_t p = 0; p < N; p++) {
			n += out->after.layers[l].slot_expert[p] != cur->layers[l].slot_expert[p];
		}
	}
	out->n_moves = n;
	out->moves = n ? calloc(n, sizeof(*out->moves)) : NULL;
	uint64_t *in = calloc(G, sizeof(*in));
	uint64_t *outb = calloc(G, sizeof(*outb));
	if ((n && !out->moves) || !in || !outb) {
		free(in);
		free(outb);
		return MP_ENOMEM;
	}
	size_t i = 0;
	out->total_bytes = 0;
	for (uint32_t l = 0; l < L; l++) {
		const uint32_t *old = cur->layers[l].slot_expert;
		const uint32_t *nw = out->after.layers[l].slot_expert;
		uint32_t count = 0;
		for (uint32_t p = 0; p < N; p++) {
			if (nw[p] == old[p]) {
				continue;
			}
			/* the sender: an old holder of the expert with the fewest bytes out */
			uint32_t src = UINT32_MAX;
			for (uint32_t q = 0; q < N; q++) {
				if (old[q] == nw[p] && (src == UINT32_MAX || outb[q / S] < outb[src])) {
					src = q / S;
				}
			}
			out->moves[i++] = (struct mp_replan_move){
				.layer = l, .gpu = p / S, .slot = p, .old_expert = old[p],
				.new_expert = nw[p], .source_gpu = src,
			};
			in[p / S] += out->expert_bytes;
			if (src != UINT32_MAX) {
				outb[src] += out->expert_bytes;
			}
			count++;
		}
		out->layers[l].moves = count;
		out->layers[l].bytes = (uint64_t)count * out->expert_bytes;
		out->total_bytes += out->layers[l].bytes;
	}
	uint64_t worst = 0;
	for (uint32_t g = 0; g < G; g++) {
		if (in[g] > worst) {
			worst = in[g];
		}
		if (outb[g] > worst) {
			worst = outb[g];
		}
	}
	out->transfer_s = (double)worst / out->link_bw_bytes_per_s;
	free(in);
	free(outb);
	return 0;
}

/* One re-planning run: its inputs, the result being built, and the
 * search state its stages share (run_* below, in order). */
struct replan_run {
	const struct mp_placement *current;
	const struct mp_loads *loads;
	const struct mp_replan_options *opts;
	struct mp_diags *diags;
	uint32_t L, E, G, S, N;
	struct mp_replan res;     /* the result, handed to the caller at the end */
	struct mp_placement raw;  /* the from-scratch plan */
	struct rp_layer_work *lws;   /* [L] */
	struct rp_state st;
	struct rp_work work;
	unsigned char *used;
	struct layer_choice c;
};

/* The result's placements and the current plan evaluated on the loads
 * (every expert needs a slot in it). */
static int run_start(struct replan_run *r)
{
	uint32_t L = r->L, E = r->E, G = r->G, S = r->S, N = r->N;
	r->res.expert_bytes = r->opts->expert_bytes;
	r->res.link_bw_bytes_per_s = r->opts->link_bw_bytes_per_s;
	if (!r->lws || !r->used) {
		return MP_ENOMEM;
	}
	int rc = mp_placement_alloc(&r->res.before, L, E, G, S);
	if (rc == 0) {
		rc = mp_placement_alloc(&r->res.after, L, E, G, S);
	}
	if (rc == 0) {
		rc = mp_placement_alloc(&r->res.scratch, L, E, G, S);
	}
	if (rc) {
		if (rc == MP_EINVAL) {
			mp_diags_add(r->diags, NULL, 0, 0, rc, "cannot hold %u layers of %u slots for %u experts",
				     L, N, E);
		}
		return rc;
	}
	for (uint32_t l = 0; l < L; l++) {
		rc = eval_into(r->current->layers[l].slot_expert, mp_loads_row(r->loads, l), r->current,
			       &r->res.before.layers[l]);
		if (rc) {
			if (rc == MP_EINVAL) {
				mp_diags_add(r->diags, NULL, 0, 0, rc,
					     "layer %u of the current plan: an expert has no slot", l);
			}
			return rc;
		}
	}
	return 0;
}

/* Stage 1: the from-scratch plan, and the search's scratch buffers. */
static int run_scratch(struct replan_run *r)
{
	uint32_t L = r->L;
	uint32_t E = r->E;
	uint32_t G = r->G;
	uint32_t S = r->S;
	uint32_t N = r->N;
	int rc = 0;
	/* 1. from scratch */
	struct mp_place_options po;
	mp_place_options_init(&po);
	/* mp_place's limit is for the whole call and ours is per layer: L
	 * times it, so a safety net and not the end of a counted-work run
	 * (58 layers of 256 experts on 288 slots take ~17 s of CPU in all,
	 * ~0.3 s a layer; a 10 s limit for the whole call cut every such
	 * run short at a point set by the machine's load) */
	po.time_limit_s = r->opts->time_limit_s * (double)L;
	po.threads = r->opts->threads;
	po.verbose = r->opts->verbose;
	rc = mp_place(r->loads, G, S, &po, &r->raw, r->diags);
	if (rc) {
		return rc;
	}
	r->res.layers = calloc(L, sizeof(*r->res.layers));
	r->c.map = malloc(sizeof(*r->c.map) * N);
	r->work.stamp = calloc(G, sizeof(*r->work.stamp));
	r->work.delta = calloc(G, sizeof(*r->work.delta));
	r->work.changed = calloc(G, sizeof(*r->work.changed));
	r->work.expert_stamp = calloc(E, sizeof(*r->work.expert_stamp));
	rc = MP_ENOMEM;
	if (!r->res.layers || !r->c.map || !r->work.stamp || !r->work.delta || !r->work.changed ||
	    !r->work.expert_stamp) {
		return rc;
	}
	r->work.mark = 0;
	r->work.expert_mark = 0;
	return 0;
}

/* Stage 2: each layer's curve, its best load for 0, 1, 2, ... moves. */
static int run_curves(struct replan_run *r)
{
	uint32_t L = r->L;
	uint32_t E = r->E;
	uint32_t G = r->G;
	uint32_t S = r->S;
	uint32_t N = r->N;
	int rc = 0;
	/* 2. the curves */
	for (uint32_t l = 0; l < L; l++) {
		struct rp_layer_work *lw = &r->lws[l];
		const double *wl = mp_loads_row(r->loads, l);
		double mean = r->res.before.layers[l].mean_load;
		double wmax = 0;
		for (uint32_t e = 0; e < E; e++) {
			wmax = wl[e] > wmax ? wl[e] : wmax;
		}
		lw->inst = (struct rp_instance){
			.E = E, .G = G, .S = S, .N = N, .w = wl,
			.orig = r->current->layers[l].slot_expert,
			.tol = RP_REL_TOL * fmax(fmax(mean, wmax / G), 1e-300),
			.lb = r->raw.layers[l].lower_bound,
		};
		lw->inst.orig_count = calloc((size_t)G * E, sizeof(*lw->inst.orig_count));
		lw->scratch = malloc(sizeof(*lw->scratch) * N);
		if (!lw->inst.orig_count || !lw->scratch) {
			rc = MP_ENOMEM;
			return rc;
		}
		for (uint32_t p = 0; p < N; p++) {
			lw->inst.orig_count[(size_t)(p / S) * E + lw->inst.orig[p]]++;
		}
		if (!r->st.slot) {
			rc = rp_state_alloc(&r->st, &lw->inst);
			if (rc) {
				return rc;
			}
		}
		r->work.deadline = pl_now() + r->opts->time_limit_s;
		r->work.timed_out = false;
		rc = rp_layer_curve(lw, &r->raw.layers[l], &r->st, &r->work, r->used);
		lw->timed_out = r->work.timed_out;
		if (rc) {
			return rc;
		}
	}
	return 0;
}

/* Stage 3: the move budget split over the layers (with a move cost,
 * each layer's best point on its own). */
static int run_budget(struct replan_run *r)
{
	uint32_t L = r->L;
	int rc = 0;
	/* 3. the budget split (or, with a move cost, each layer on its own) */
	size_t sumK = 0;
	for (uint32_t l = 0; l < L; l++) {
		sumK += r->lws[l].K;
	}
	r->res.total_curve_len = sumK + 1;
	r->res.total_curve = malloc(sizeof(*r->res.total_curve) * r->res.total_curve_len);
	if (!r->res.total_curve) {
		rc = MP_ENOMEM;
		return rc;
	}
	rc = rp_split_budget(r->lws, L, r->opts->max_moves, r->res.total_curve, r->res.total_curve_len);
	if (rc) {
		return rc;
	}
	if (r->opts->cost_mode) {
		for (uint32_t l = 0; l < L; l++) {
			struct rp_layer_work *lw = &r->lws[l];
			double mean = r->res.before.layers[l].mean_load;
			uint32_t best = 0;
			for (uint32_t k = 1; k <= lw->K; k++) {
				if (layer_cost(r->opts, mean, lw->curve[k], k) <
				    layer_cost(r->opts, mean, lw->curve[best], best) - 1e-15) {
					best = k;
				}
			}
			lw->pick = best;
		}
	}
	return 0;
}

/* Stage 4: each layer's plan within its share of the budget. */
static int run_layer_plans(struct replan_run *r)
{
	uint32_t L = r->L;
	uint32_t N = r->N;
	int rc = 0;
	/* 4. each layer's plan; a layer may also use the moves that the
	 * layers before it left unused (the MIP can do better than the curve) */
	uint64_t reserved = 0;
	for (uint32_t l = 0; l < L; l++) {
		reserved += r->lws[l].pick;
	}
	uint64_t spent = 0;
	for (uint32_t l = 0; l < L; l++) {
		struct rp_layer_work *lw = &r->lws[l];
		struct mp_replan_layer *rl = &r->res.layers[l];
		double mean = r->res.before.layers[l].mean_load;
		double bound = 0;
		enum mp_place_status status = MP_PLACE_FEASIBLE;
		reserved -= lw->pick;
		uint64_t avail = N;
		if (!r->opts->cost_mode && r->opts->max_moves != MP_REPLAN_UNLIMITED) {
			avail = r->opts->max_moves - spent - reserved;
		} else if (r->opts->cost_mode) {
			avail = lw->pick;
		}
		lw->budget = (uint32_t)(avail < N ? avail : N);
		r->work.deadline = pl_now() + r->opts->time_limit_s;
		r->work.timed_out = false;
		rc = layer_plan(lw, r->opts, mean, r->work.deadline, &r->st, &r->work, &r->c, &bound, &status);
		if (rc == 0) {
			rc = exact_claim(lw, r->opts, r->raw.layers[l].status, &r->c, &bound, &status);
		}
		if (rc) {
			return rc;
		}
		if (r->work.timed_out || lw->timed_out) {
			/* a local search stopped on the clock: the plan is valid but
			 * may depend on machine speed */
			status = MP_PLACE_TIME_LIMIT;
		}
		spent += r->c.moves;
		rc = eval_into(r->c.map, lw->inst.w, r->current, &r->res.after.layers[l]);
		if (rc == 0) {
			rc = eval_into(lw->scratch, lw->inst.w, r->current, &r->res.scratch.layers[l]);
		}
		if (rc) {
			return rc;
		}
		if (r->raw.layers[l].status == MP_PLACE_TIME_LIMIT) {
			/* the from-scratch plan and its bound came from a search the
			 * time limit stopped: the result may depend on machine speed */
			status = MP_PLACE_TIME_LIMIT;
		}
		struct mp_layer_placement *a = &r->res.after.layers[l];
		mp_layer_placement_set_bound(a, bound, status);
		a->method = r->c.method;
		struct mp_layer_placement *s = &r->res.scratch.layers[l];
		mp_layer_placement_set_bound(s, r->raw.layers[l].lower_bound, r->raw.layers[l].status);
		s->method = r->raw.layers[l].method;
		*rl = (struct mp_replan_layer){
			.max_before = r->res.before.layers[l].max_load,
			.max_after = a->max_load,
			.mean_load = mean,
			.scratch_max = s->max_load,
			.scratch_moves = lw->scratch_moves,
			.lower_bound = bound,
			.gap = a->gap,
			.status = status,
			.method = r->c.method,
			.curve = lw->curve,
			.curve_len = lw->K + 1,
		};
		for (uint32_t p = 0; p < N; p++) {
			rl->scratch_moves_raw += r->raw.layers[l].slot_expert[p] != lw->inst.orig[p];
		}
		lw->curve = NULL;
		r->res.sum_before += rl->max_before;
		r->res.sum_after += rl->max_after;
		r->res.sum_scratch += rl->scratch_max;
		r->res.sum_bound += r->raw.layers[l].lower_bound;
	}
	return 0;
}

/* The gain, keeping the current plan when it is below min_gain, and the
 * moves. */
static int run_finish(struct replan_run *r)
{
	uint32_t L = r->L;
	int rc = 0;
	r->res.gain = r->res.sum_before > 0 ? (r->res.sum_before - r->res.sum_after) / r->res.sum_before : 0;
	if (r->opts->min_gain > 0 && r->res.gain < r->opts->min_gain) {
		r->res.kept = true;
		r->res.kept_gain = r->res.gain;
		for (uint32_t l = 0; l < L; l++) {
			rc = eval_into(r->current->layers[l].slot_expert, mp_loads_row(r->loads, l), r->current,
				       &r->res.after.layers[l]);
			if (rc) {
				return rc;
			}
			r->res.after.layers[l].method = M_KEPT;
			r->res.layers[l].max_after = r->res.layers[l].max_before;
			r->res.layers[l].method = M_KEPT;
			r->res.layers[l].status = r->res.after.layers[l].status;
			r->res.layers[l].lower_bound = r->res.after.layers[l].lower_bound;
			r->res.layers[l].gap = r->res.after.layers[l].gap;
		}
		r->res.sum_after = r->res.sum_before;
		r->res.gain = 0;
	}
	double denom = r->res.sum_before - r->res.sum_scratch;
	r->res.recovered = denom > 0 ? (r->res.sum_before - r->res.sum_after) / denom : 1.0;
	rc = rp_collect_moves(&r->res, r->current);
	if (rc) {
		return rc;
	}
	return 0;
}

static void run_free(struct replan_run *r)
{
	if (r->lws) {
		for (uint32_t l = 0; l < r->L; l++) {
			free(r->lws[l].inst.orig_count);
			free(r->lws[l].scratch);
			free(r->lws[l].curve);
			free(r->lws[l].curve_step);
			rp_trajectory_free(&r->lws[l].trajectory);
		}
	}
	free(r->lws);
	rp_state_free(&r->st);
	free(r->work.stamp);
	free(r->work.delta);
	free(r->work.changed);
	free(r->work.expert_stamp);
	free(r->used);
	free(r->c.map);
	mp_placement_finish(&r->raw);
	mp_replan_finish(&r->res);
}

int mp_replan_run(const struct mp_placement *current, const struct mp_loads *loads,
		  const struct mp_replan_options *opts, struct mp_replan *out,
		  struct mp_diags *diags)
{
	struct mp_replan_options defaults;
	if (!opts) {
		mp_replan_options_init(&defaults);
		opts = &defaults;
	}
	int rc = check_input(current, loads, opts, diags);
	if (rc) {
		return rc;
	}
	struct replan_run r = {
		.current = current,
		.loads = loads,
		.opts = opts,
		.diags = diags,
		.L = current->n_layers,
		.E = current->n_experts,
		.G = current->gpus,
		.S = current->slots_per_gpu,
		.N = current->gpus * current->slots_per_gpu,
	};
	mp_replan_init(&r.res);
	mp_placement_init(&r.raw);
	r.lws = calloc(r.L, sizeof(*r.lws));
	r.used = malloc(2 * (size_t)r.S + 2);
	r.c.used = r.used;
	rc = run_start(&r);
	if (rc == 0) {
		rc = run_scratch(&r);
	}
	if (rc == 0) {
		rc = run_curves(&r);
	}
	if (rc == 0) {
		rc = run_budget(&r);
	}
	if (rc == 0) {
		rc = run_layer_plans(&r);
	}
	if (rc == 0) {
		rc = run_finish(&r);
	}
	if (rc == 0) {
		mp_replan_finish(out);
		*out = r.res;
		mp_replan_init(&r.res);
	}
	run_free(&r);
	return rc;
}
