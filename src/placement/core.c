/* Placement: the solver's core, used by every stage: the clock and its
 * deadline test, the layer instance (struct pl_prob), solutions (struct
 * pl_sol) and their comparison, the per-thread scratch (struct pl_work),
 * the deterministic sorts, and the status a plan earns from its bound. */
#include "placement/internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double pl_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool pl_timed_out(struct pl_work *work, double deadline)
{
	if (work->timed_out) {
		return true;
	}
	if (deadline < (double)INFINITY && pl_now() > deadline) {
		work->timed_out = true;
	}
	return work->timed_out;
}

void pl_prob_init(struct pl_prob *prob, const double *w, uint32_t E, uint32_t G, uint32_t S)
{
	prob->w = w;
	prob->E = E;
	prob->G = G;
	prob->S = S;
	prob->N = G * S;
	double sum = 0;
	double top = 0;
	for (uint32_t e = 0; e < E; e++) {
		sum += w[e];
		if (w[e] > top) {
			top = w[e];
		}
	}
	prob->sum = sum;
	prob->mean = sum / G;
	double scale = prob->mean > top / G ? prob->mean : top / G;
	prob->tol = PL_REL_TOL * (scale > DBL_MIN ? scale : DBL_MIN);
	prob->eps = 1e-12 * (scale > DBL_MIN ? scale : DBL_MIN);
}

int pl_sol_alloc(struct pl_sol *sol, const struct pl_prob *prob)
{
	sol->slot = calloc(prob->N, sizeof(*sol->slot));
	sol->r = calloc(prob->E, sizeof(*sol->r));
	sol->load = calloc(prob->G, sizeof(*sol->load));
	sol->max = 0;
	if (!sol->slot || !sol->r || !sol->load) {
		pl_sol_free(sol);
		return MP_ENOMEM;
	}
	return 0;
}

void pl_sol_free(struct pl_sol *sol)
{
	if (!sol) {
		return;
	}
	free(sol->slot);
	free(sol->r);
	free(sol->load);
	sol->slot = NULL;
	sol->r = NULL;
	sol->load = NULL;
}

void pl_sol_copy(struct pl_sol *dst, const struct pl_sol *src, const struct pl_prob *prob)
{
	memcpy(dst->slot, src->slot, sizeof(*dst->slot) * prob->N);
	memcpy(dst->r, src->r, sizeof(*dst->r) * prob->E);
	memcpy(dst->load, src->load, sizeof(*dst->load) * prob->G);
	dst->max = src->max;
}

void pl_sol_eval(struct pl_sol *sol, const struct pl_prob *prob)
{
	memset(sol->r, 0, sizeof(*sol->r) * prob->E);
	for (uint32_t p = 0; p < prob->N; p++) {
		sol->r[sol->slot[p]]++;
	}
	sol->max = 0;
	for (uint32_t g = 0; g < prob->G; g++) {
		double l = 0;
		for (uint32_t s = 0; s < prob->S; s++) {
			uint32_t e = sol->slot[g * prob->S + s];
			l += prob->w[e] / sol->r[e];
		}
		sol->load[g] = l;
		if (l > sol->max) {
			sol->max = l;
		}
	}
}

static double second_max(const double *load, uint32_t G)
{
	double m1 = -1;
	double m2 = -1;
	for (uint32_t g = 0; g < G; g++) {
		if (load[g] > m1) {
			m2 = m1;
			m1 = load[g];
		} else if (load[g] > m2) {
			m2 = load[g];
		}
	}
	return m2;
}

bool pl_sol_better(const struct pl_sol *a, const struct pl_sol *b, const struct pl_prob *prob,
		   double *scratch)
{
	(void)scratch;
	if (a->max < b->max - prob->eps) {
		return true;
	}
	if (a->max > b->max + prob->eps) {
		return false;
	}
	return second_max(a->load, prob->G) < second_max(b->load, prob->G) - prob->eps;
}

bool pl_sol_no_dup(const struct pl_sol *sol, const struct pl_prob *prob)
{
	for (uint32_t g = 0; g < prob->G; g++) {
		const uint32_t *s = sol->slot + (size_t)g * prob->S;
		for (uint32_t i = 0; i < prob->S; i++) {
			for (uint32_t j = i + 1; j < prob->S; j++) {
				if (s[i] == s[j]) {
					return false;
				}
			}
		}
	}
	return true;
}

int pl_work_alloc(struct pl_work *work, const struct pl_prob *prob)
{
	memset(work, 0, sizeof(*work));
	work->order = malloc(sizeof(*work->order) * prob->E);
	work->stamp = malloc(sizeof(*work->stamp) * prob->G);
	work->cnt = malloc(sizeof(*work->cnt) * prob->G);
	work->head = malloc(sizeof(*work->head) * ((size_t)prob->E + 1));
	work->list = malloc(sizeof(*work->list) * prob->N);
	work->size = malloc(sizeof(*work->size) * prob->N);
	work->key = malloc(sizeof(*work->key) * prob->E);
	work->items = malloc(sizeof(*work->items) * prob->N);
	work->gorder = malloc(sizeof(*work->gorder) * prob->G);
	if (!work->gorder || !work->order || !work->stamp || !work->cnt || !work->head || !work->list || !work->size
	    || !work->key || !work->items) {
		pl_work_free(work);
		return MP_ENOMEM;
	}
	return 0;
}

void pl_work_free(struct pl_work *work)


{
	if (!work) {
		return;
	}
	free(work->order);
	free(work->stamp);
	free(work->cnt);
	free(work->head);
	free(work->list);
	free(work->size);
	free(work->key);
	free(work->items);
	free(work->gorder);
	memset(work, 0, sizeof(*work));
}

/* a before b in the order: key descending (ascending when asc), then
 * index ascending: a total order, so the result is deterministic. */
static bool before(const double *key, bool asc, uint32_t a, uint32_t b)
{
	if (key[a] > key[b]) {
		return !asc;
	}
	if (key[a] < key[b]) {
		return asc;
	}
	return a < b;
}

static void sift(uint32_t *idx, const double *key, bool asc, uint32_t i, uint32_t n)
{
	for (;;) {
		uint32_t l = 2 * i + 1;
		uint32_t m = i;
		/* max-heap on "comes later" so that the heap sort ends in order */
		if (l < n && before(key, asc, idx[m], idx[l])) {
			m = l;
		}
		if (l + 1 < n && before(key, asc, idx[m], idx[l + 1])) {
			m = l + 1;
		}
		if (m == i) {
			return;
		}
		uint32_t t = idx[i];
		idx[i] = idx[m];
		idx[m] = t;
		i = m;
	}
}

void pl_sort_idx(uint32_t *idx, uint32_t n, const double *key, bool asc)
{
	for (uint32_t i = n / 2; i-- > 0;) {
		sift(idx, key, asc, i, n);
	}
	for (uint32_t end = n; end-- > 1;) {
		uint32_t t = idx[0];
		idx[0] = idx[end];
		idx[end] = t;
		sift(idx, key, asc, 0, end);
	}
}

void pl_sort_desc(uint32_t *idx, const double *key, uint32_t n)

{
	for (uint32_t i = 0; i < n; i++) {
		idx[i] = i;
	}
	pl_sort_idx(idx, n, key, false);
}

enum mp_place_status pl_status(double max_load, double bound, double tol, bool timed_out)
{
	if (timed_out) {
		return MP_PLACE_TIME_LIMIT;
	}
	return max_load <= bound + tol ? MP_PLACE_OPTIMAL : MP_PLACE_FEASIBLE;
}
