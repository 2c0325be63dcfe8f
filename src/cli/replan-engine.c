/* replan --engine (issue 24): the re-plan chosen under the engine's own
 * dispatch (moeplan/dispatch.h), not the even split.
 *
 * Per re-planned row four candidates: the current row (no moves), the
 * even-split re-plan mp_replan_run made (its moves), and the plan `place
 * --engine` makes for the loads (mp_place with the dispatch: moves counted
 * against the current row, its GPU numbering kept, since SGLang's rule
 * reads it), and the same plan with its GPUs relabelled to keep experts
 * in place (fewer moves; its loads under the rule are walked again, since
 * the numbering is what the rule reads). Each candidate map is walked as the engine walks it
 * (engine-walk.c: SGLang's static random streams run over every row in
 * order), giving every row's busiest GPU under the rule. Then:
 *  - with --max-moves, the rows' choices minimise the sum of those
 *    busiest-GPU loads within the budget (a knapsack by dynamic
 *    programming over rows; with no budget each row takes its lowest);
 *  - with --move-cost, each row minimises horizon x layer time x busiest /
 *    mean + move cost x moves.
 * The chosen map is walked again: where SGLang's static dispatch draws
 * (several nodes) a row's score depends on the rows before it, so the
 * choice is kept only if it beats every single candidate map that fits
 * the budget, else the best of those is taken. The current map is always
 * a candidate, so the sum of the busiest-GPU loads under the rule never
 * rises (one row can, where static draws run across rows, and a larger
 * budget can end higher than a smaller one: the choice is per row, the
 * draws are not). --min-gain applies
 * to the gain under the engine.
 *
 * Bound: under SGLang's rule a replica takes the tokens of the ranks that
 * choose it, not 1/r, so the even split's bound does not hold; every
 * token lands on some GPU, so the mean load is the bound (as place
 * --engine claims). */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/dispatch.h"
#include "moeplan/loader.h"
#include "moeplan/model.h"

enum { C_CURRENT, C_EVEN, C_ENGINE, C_RELABELLED, N_CAND };

static const char *const choice_names[N_CAND] = {"current", "even", "engine", "engine-relabelled"};
static const char M_CURRENT[] = "engine dispatch: the current row (lowest under the engine's rule for its moves)";
static const char M_ENGINE[] = "engine dispatch: place --engine's plan for the loads, its GPU numbering kept";
static const char M_RELABELLED[] = "engine dispatch: place --engine's plan for the loads, GPUs relabelled to keep "
				   "experts in place";

/* What is walked: the candidate rows, placed in the whole engine map
 * where there is one. */
struct walker {
	const struct cli_replan_engine_in *in;
	struct mp_placement work; /* a copy of in->full, or empty */
	uint32_t *row_loads;      /* [walked rows]: the loads row of each, UINT32_MAX none */
	uint32_t *moe;            /* [n_moe]: with in->own */
	uint32_t n_moe;
};

static int walker_init(struct walker *w, const struct cli_replan_engine_in *in)
{
	const struct mp_placement *cur = in->cur;
	const uint32_t rows = in->full ? in->full->n_layers : cur->n_layers;
	w->in = in;
	mp_placement_init(&w->work);
	w->row_loads = malloc((size_t)(rows ? rows : 1) * sizeof(*w->row_loads));
	if (!w->row_loads) {
		return MP_ENOMEM;
	}
	for (uint32_t h = 0; h < rows; h++) {
		w->row_loads[h] = in->full ? UINT32_MAX : h;
	}
	for (uint32_t r = 0; in->full && r < cur->n_layers; r++) {
		w->row_loads[in->ids[r]] = r;
	}
	if (in->full) {
		uint32_t *all = malloc((size_t)(rows ? rows : 1) * sizeof(*all));
		for (uint32_t h = 0; all && h < rows; h++) {
			all[h] = h;
		}
		int rc = all ? cli_map_select_rows(in->full, all, rows, &w->work) : MP_ENOMEM;
		free(all);
		return rc;
	}
	if (!in->own) {
		return 0;
	}
	/* the MoE layers: --model's, else the rows the plan places (the
	 * hidden layers between them are then taken as dense) */
	struct mp_model model;
	mp_model_init(&model);
	struct mp_diags diags;
	mp_diags_init(&diags);
	bool known = in->model && mp_load_model(in->model, &model, &diags) == 0 && model.moe_layers;
	w->n_moe = known ? model.moe_layers : cur->n_layers;
	w->moe = malloc((size_t)(w->n_moe ? w->n_moe : 1) * sizeof(*w->moe));
	for (uint32_t k = 0; w->moe && k < w->n_moe; k++) {
		w->moe[k] = known ? mp_model_moe_layer_id(&model, k) : in->own[k];
	}
	mp_model_finish(&model);
	mp_diags_finish(&diags);
	return w->moe ? 0 : MP_ENOMEM;
}

static void walker_finish(struct walker *w)
{
	mp_placement_finish(&w->work);
	free(w->row_loads);
	free(w->moe);
}

/* mx[r]: the busiest GPU of re-planned row r of cand under the rule. */
static int walk_max(struct walker *w, const struct mp_placement *cand, double *mx)
{
	const struct cli_replan_engine_in *in = w->in;
	const uint32_t G = cand->gpus;
	double *gpu = NULL;
	int rc;
	if (in->full) {
		rc = cli_map_put_rows(&w->work, in->ids, cand);
		rc = rc ? rc : cli_engine_loads(in->d, &w->work, w->row_loads, in->loads, &gpu);
	} else if (in->own && in->d->rule == MP_DISPATCH_SGLANG) {
		rc = cli_engine_loads_exported(in->d, cand, in->own, w->moe, w->n_moe, w->row_loads, in->loads,
					       &gpu);
	} else {
		rc = cli_engine_loads(in->d, cand, w->row_loads, in->loads, &gpu);
	}
	for (uint32_t r = 0; rc == 0 && r < cand->n_layers; r++) {
		const double *g = gpu + (size_t)(in->full ? in->ids[r] : r) * G;
		mx[r] = 0;
		for (uint32_t i = 0; i < G; i++) {
			mx[r] = g[i] > mx[r] ? g[i] : mx[r];
		}
	}
	free(gpu);
	return rc;
}

/* Slots of b's row that a move fills, against a (per GPU, multisets). */
static uint32_t row_moves(const uint32_t *a, const uint32_t *b, uint32_t G, uint32_t S)
{
	uint32_t moves = 0;
	for (uint32_t g = 0; g < G; g++) {
		const uint32_t *x = a + (size_t)g * S, *y = b + (size_t)g * S;
		uint64_t taken = 0; /* S <= 64 (MP_MAX_SLOTS_PER_GPU) */
		for (uint32_t j = 0; j < S; j++) {
			uint32_t i = 0;
			while (i < S && ((taken >> i & 1u) || x[i] != y[j])) {
				i++;
			}
			if (i < S) {
				taken |= (uint64_t)1 << i;
			} else {
				moves++;
			}
		}
	}
	return moves;
}

/* The search's state: candidate rows, their moves and scores. */
struct choose {
	uint32_t L;
	const struct mp_placement *cand[N_CAND];
	uint32_t *moves[N_CAND]; /* [L] */
	double *mx[N_CAND];      /* [L] */
	unsigned char *pick;     /* [L] */
};

static double row_cost(const struct mp_replan_options *o, double mean, double mx, uint32_t moves)
{
	double t = mean > 0 ? o->horizon_steps * o->layer_time_s * mx / mean : 0;
	return t + o->move_cost_s * moves;
}

/* Each row on its own: the move cost, or (no budget) the lowest load,
 * ties to fewer moves. */
static void choose_rows(struct choose *c, const struct mp_replan_options *o, const double *mean)
{
	for (uint32_t l = 0; l < c->L; l++) {
		unsigned char best = C_CURRENT;
		for (int k = 1; k < N_CAND; k++) {
			double vk = o->cost_mode ? row_cost(o, mean[l], c->mx[k][l], c->moves[k][l]) : c->mx[k][l];
			double vb = o->cost_mode ? row_cost(o, mean[l], c->mx[best][l], c->moves[best][l])
						 : c->mx[best][l];
			bool tie = fabs(vk - vb) <= 1e-12 * fmax(fabs(vb), 1e-300);
			if ((!tie && vk < vb) || (tie && c->moves[k][l] < c->moves[best][l])) {
				best = (unsigned char)k;
			}
		}
		c->pick[l] = best;
	}
}

/* Within `budget` moves in all: the least sum of the rows' loads, by
 * dynamic programming over rows and moves spent (moves counted in units
 * of q, rounded up, so that the table stays small; q = 1 up to 2^22
 * cells). 0 or MP_ENOMEM. */
static int choose_budget(struct choose *c, uint64_t budget)
{
	uint64_t most = 0;
	for (uint32_t l = 0; l < c->L; l++) {
		uint32_t m = 0;
		for (int k = 0; k < N_CAND; k++) {
			m = c->moves[k][l] > m ? c->moves[k][l] : m;
		}
		most += m;
	}
	uint64_t cap = budget < most ? budget : most;
	uint64_t q = 1;
	while ((cap / q + 1) * (c->L + 1) > ((uint64_t)1 << 22)) {
		q++;
	}
	const size_t B = (size_t)(cap / q) + 1;
	double *dp = malloc((size_t)(c->L + 1) * B * sizeof(*dp));
	unsigned char *how = malloc((size_t)(c->L ? c->L : 1) * B);
	if (!dp || !how) {
		free(dp);
		free(how);
		return MP_ENOMEM;
	}
	for (size_t b = 0; b < B; b++) {
		dp[b] = 0; /* no row yet: nothing spent is needed */
	}
	for (uint32_t l = 0; l < c->L; l++) {
		double *prev = dp + (size_t)l * B, *next = prev + B;
		for (size_t b = 0; b < B; b++) {
			next[b] = HUGE_VAL;
			for (int k = 0; k < N_CAND; k++) {
				uint64_t u = (c->moves[k][l] + q - 1) / q;
				if (u > b) {
					continue; /* this candidate does not fit in b */
				}
				bool better = k == 0 || prev[b - u] + c->mx[k][l] < next[b] - 1e-12 * fabs(next[b]);
				if (better) {
					next[b] = prev[b - u] + c->mx[k][l];
					how[(size_t)l * B + b] = (unsigned char)k;
				}
			}
		}
	}
	size_t b = B - 1;
	for (uint32_t l = c->L; l-- > 0;) {
		unsigned char k = how[(size_t)l * B + b];
		c->pick[l] = k;
		b -= (c->moves[k][l] + q - 1) / q;
	}
	free(dp);
	free(how);
	return 0;
}

static int fill_mix(const struct choose *c, const unsigned char *pick, struct mp_placement *mix)
{
	const size_t N = (size_t)mix->gpus * mix->slots_per_gpu;
	for (uint32_t l = 0; l < c->L; l++) {
		const struct mp_layer_placement *s = &c->cand[pick[l]]->layers[l];
		memcpy(mix->layers[l].slot_expert, s->slot_expert, N * sizeof(*s->slot_expert));
		memcpy(mix->layers[l].replicas, s->replicas, mix->n_experts * sizeof(*s->replicas));
	}
	return 0;
}

static double sum_of(const double *v, uint32_t n)
{
	double s = 0;
	for (uint32_t i = 0; i < n; i++) {
		s += v[i];
	}
	return s;
}

/* The chosen mix walked again against every single candidate that fits
 * (exact where SGLang's streams make rows depend on each other): x->after
 * and c->pick end as the best. 0 or an MP_ code. */
static int settle(struct choose *c, struct walker *w, const struct mp_replan_options *o,
		  struct mp_placement *mix, struct cli_replan_engine *x)
{
	int rc = fill_mix(c, c->pick, mix);
	rc = rc ? rc : walk_max(w, mix, x->after);
	double best = sum_of(x->after, c->L);
	for (unsigned char k = 0; rc == 0 && k < N_CAND; k++) {
		uint64_t m = 0;
		for (uint32_t l = 0; l < c->L; l++) {
			m += c->moves[k][l];
		}
		double s = sum_of(c->mx[k], c->L);
		bool fits = o->cost_mode || o->max_moves == MP_REPLAN_UNLIMITED || m <= o->max_moves;
		if (fits && !o->cost_mode && s < best - 1e-12 * fabs(best)) {
			best = s;
			memset(c->pick, k, c->L);
			memcpy(x->after, c->mx[k], c->L * sizeof(*x->after));
		}
	}
	return rc;
}

static void choose_free(struct choose *c)
{
	for (int k = 0; k < N_CAND; k++) {
		free(c->moves[k]);
		free(c->mx[k]);
	}
	free(c->pick);
}

/* The engine's plan for the loads (mp_place under the dispatch). */
static int engine_plan(const struct cli_replan_engine_in *in, struct mp_placement *eng, struct mp_diags *diags)
{
	struct mp_place_options po;
	mp_place_options_init(&po);
	po.time_limit_s = in->opts->time_limit_s * (double)in->cur->n_layers;
	po.threads = in->opts->threads;
	po.dispatch = *in->d;
	return mp_place(in->loads, in->cur->gpus, in->cur->slots_per_gpu, &po, eng, diags);
}

/* The engine's plan with every row's GPUs relabelled against the current
 * map (mp_replan_relabel_row). */
static int relabelled(const struct mp_placement *cur, const struct mp_placement *eng, struct mp_placement *out)
{
	int rc = mp_placement_alloc(out, cur->n_layers, cur->n_experts, cur->gpus, cur->slots_per_gpu);
	const size_t N = (size_t)cur->gpus * cur->slots_per_gpu;
	for (uint32_t l = 0; rc == 0 && l < cur->n_layers; l++) {
		rc = mp_replan_relabel_row(cur, l, eng->layers[l].slot_expert, out->layers[l].slot_expert);
		memset(out->layers[l].replicas, 0, cur->n_experts * sizeof(*out->layers[l].replicas));
		for (size_t p = 0; rc == 0 && p < N; p++) {
			out->layers[l].replicas[out->layers[l].slot_expert[p]]++;
		}
	}
	return rc;
}

/* The rows replaced in the re-plan by the choice. */
static int apply(const struct choose *c, const struct cli_replan_engine_in *in, struct mp_replan *r)
{
	int rc = 0;
	for (uint32_t l = 0; rc == 0 && l < c->L; l++) {
		if (c->pick[l] != C_EVEN) {
			const char *m = c->pick[l] == C_CURRENT ? M_CURRENT
					: c->pick[l] == C_ENGINE ? M_ENGINE : M_RELABELLED;
			rc = mp_replan_replace_layer(r, in->cur, in->loads, l, c->cand[c->pick[l]]->layers[l].slot_expert,
						     m);
		}
	}
	return rc ? rc : mp_replan_recount(r, in->cur);
}

static int run_choice(struct choose *c, const struct cli_replan_engine_in *in, struct mp_replan *r,
		      struct cli_replan_engine *x, struct walker *w)
{
	const struct mp_placement *cur = in->cur;
	const uint32_t L = cur->n_layers, G = cur->gpus, S = cur->slots_per_gpu;
	int rc = 0;
	for (int k = 0; rc == 0 && k < N_CAND; k++) {
		c->moves[k] = calloc(L ? L : 1, sizeof(*c->moves[k]));
		c->mx[k] = calloc(L ? L : 1, sizeof(*c->mx[k]));
		rc = c->moves[k] && c->mx[k] ? walk_max(w, c->cand[k], c->mx[k]) : MP_ENOMEM;
		for (uint32_t l = 0; rc == 0 && l < L; l++) {
			c->moves[k][l] = row_moves(cur->layers[l].slot_expert, c->cand[k]->layers[l].slot_expert, G, S);
		}
	}
	if (rc) {
		return rc;
	}
	memcpy(x->before, c->mx[C_CURRENT], L * sizeof(*x->before));
	if (in->opts->cost_mode || in->opts->max_moves == MP_REPLAN_UNLIMITED) {
		choose_rows(c, in->opts, x->mean);
	} else {
		rc = choose_budget(c, in->opts->max_moves);
	}
	struct mp_placement mix;
	mp_placement_init(&mix);
	rc = rc ? rc : mp_placement_alloc(&mix, L, cur->n_experts, G, S);
	rc = rc ? rc : settle(c, w, in->opts, &mix, x);
	mp_placement_finish(&mix);
	x->sum_before = sum_of(x->before, L);
	x->sum_after = sum_of(x->after, L);
	x->gain = x->sum_before > 0 ? (x->sum_before - x->sum_after) / x->sum_before : 0;
	if (rc == 0 && in->opts->min_gain > 0 && x->gain < in->opts->min_gain) {
		x->kept = true;
		x->kept_gain = x->gain;
		memset(c->pick, C_CURRENT, L);
		memcpy(x->after, x->before, L * sizeof(*x->after));
		x->sum_after = x->sum_before;
		x->gain = 0;
	}
	memcpy(x->choice, c->pick, L);
	rc = rc ? rc : apply(c, in, r);
	if (rc == 0 && x->kept) {
		r->kept = true;
		r->kept_gain = x->kept_gain;
	}
	return rc;
}

int cli_replan_engine_run(const struct cli_replan_engine_in *in, struct mp_replan *r,
			  struct cli_replan_engine *x, struct mp_diags *diags)
{
	const uint32_t L = in->cur->n_layers;
	memset(x, 0, sizeof(*x));
	x->d = *in->d;
	x->n_layers = L;
	x->before = calloc(L ? L : 1, sizeof(*x->before));
	x->after = calloc(L ? L : 1, sizeof(*x->after));
	x->mean = calloc(L ? L : 1, sizeof(*x->mean));
	x->choice = calloc(L ? L : 1, 1);
	x->moves = calloc(L ? L : 1, sizeof(*x->moves));
	if (!x->before || !x->after || !x->mean || !x->choice || !x->moves) {
		return MP_ENOMEM;
	}
	for (uint32_t l = 0; l < L; l++) {
		x->mean[l] = r->layers[l].mean_load;
		x->sum_bound += x->mean[l];
	}
	struct mp_placement eng, rel;
	mp_placement_init(&eng);
	mp_placement_init(&rel);
	struct walker w = {0};
	struct choose c = {.L = L, .cand = {in->cur, &r->after, &eng, &rel}};
	c.pick = calloc(L ? L : 1, 1);
	int rc = c.pick ? engine_plan(in, &eng, diags) : MP_ENOMEM;
	rc = rc ? rc : relabelled(in->cur, &eng, &rel);
	rc = rc ? rc : walker_init(&w, in);
	rc = rc ? rc : run_choice(&c, in, r, x, &w);
	for (uint32_t l = 0; rc == 0 && l < L; l++) {
		x->moves[l] = r->layers[l].moves;
	}
	choose_free(&c);
	walker_finish(&w);
	mp_placement_finish(&eng);
	mp_placement_finish(&rel);
	return rc;
}

void cli_replan_engine_finish(struct cli_replan_engine *x)
{
	free(x->before);
	free(x->after);
	free(x->mean);
	free(x->choice);
	free(x->moves);
	memset(x, 0, sizeof(*x));
}

static const char *rule_words(const struct mp_dispatch *d, char *buf, size_t n)
{
	if (d->rule != MP_DISPATCH_SGLANG) {
		snprintf(buf, n, "%s", mp_dispatch_rule_name(d->rule));
	} else if (d->gpus_per_node) {
		snprintf(buf, n, "sglang, --ep-dispatch-algorithm %s, %u GPUs per node",
			 mp_dispatch_algorithm_name(d->algorithm), d->gpus_per_node);
	} else {
		snprintf(buf, n, "sglang, --ep-dispatch-algorithm %s, one node",
			 mp_dispatch_algorithm_name(d->algorithm));
	}
	return buf;
}

void cli_replan_engine_print(FILE *f, const struct cli_replan_engine *x, const uint32_t *names)
{
	char rule[96];
	fprintf(f, "under the engine's dispatch (%s): each row the lowest of the current row, the "
		"even-split re-plan and place --engine's plan (as numbered or relabelled) within the moves; "
		"bound: the mean load "
		"(the only bound under this rule)\n", rule_words(&x->d, rule, sizeof(rule)));
	fprintf(f, "%6s %8s %6s %12s %12s %12s %10s\n", "layer", "choice", "moves", "max before", "max after",
		"bound", "max/mean");
	for (uint32_t l = 0; l < x->n_layers; l++) {
		fprintf(f, "%6u %8s %6u %12.6g %12.6g %12.6g %10.4f\n", names ? names[l] : l,
			choice_names[x->choice[l]], x->moves[l], x->before[l], x->after[l], x->mean[l],
			x->mean[l] > 0 ? x->after[l] / x->mean[l] : 1.0);
	}
	fprintf(f, "sum of busiest-GPU loads under %s: %.6g -> %.6g (bound %.6g): gain %.2f%%\n",
		mp_dispatch_rule_name(x->d.rule), x->sum_before, x->sum_after, x->sum_bound, 100.0 * x->gain);
	if (x->kept) {
		fprintf(f, "gain under the engine %.2f%% is below --min-gain: keeping the current plan\n",
			100.0 * x->kept_gain);
	}
}

int cli_replan_engine_doc(const struct cli_replan_engine *x, const uint32_t *names, struct mp_doc *record)
{
	struct mp_doc *e = mp_doc_map();
	mp_doc_put_string(e, "dispatch", mp_dispatch_rule_name(x->d.rule));
	if (x->d.rule == MP_DISPATCH_SGLANG) {
		mp_doc_put_string(e, "ep_dispatch_algorithm", mp_dispatch_algorithm_name(x->d.algorithm));
		mp_doc_put_int(e, "gpus_per_node", x->d.gpus_per_node);
	}
	mp_doc_put_string(e, "method", "per row the lowest under the rule of: the current row, the even-split "
			  "re-plan, place --engine's plan (its GPU numbering kept) and that plan relabelled "
			  "to keep experts in place, within the moves; the chosen map walked again as the "
			  "engine walks it");
	mp_doc_put_string(e, "bound", "mean load: the only bound claimed under this rule");
	mp_doc_put_real(e, "sum_max_before", x->sum_before);
	mp_doc_put_real(e, "sum_max_after", x->sum_after);
	mp_doc_put_real(e, "sum_bound", x->sum_bound);
	mp_doc_put_real(e, "gain", x->gain);
	mp_doc_put_bool(e, "kept_current", x->kept);
	struct mp_doc *layers = mp_doc_list();
	for (uint32_t l = 0; l < x->n_layers; l++) {
		struct mp_doc *ld = mp_doc_map();
		mp_doc_put_int(ld, "layer", names ? names[l] : l);
		mp_doc_put_string(ld, "choice", choice_names[x->choice[l]]);
		mp_doc_put_int(ld, "moves", x->moves[l]);
		mp_doc_put_real(ld, "max_before", x->before[l]);
		mp_doc_put_real(ld, "max_after", x->after[l]);
		mp_doc_put_real(ld, "lower_bound", x->mean[l]);
		mp_doc_put_real(ld, "busiest_over_mean", x->mean[l] > 0 ? x->after[l] / x->mean[l] : 1.0);
		mp_doc_put(layers, NULL, ld);
	}
	mp_doc_put(e, "layers", layers);
	mp_doc_put(record, "engine", e);
	return mp_doc_failed(record) ? MP_ENOMEM : 0;
}
