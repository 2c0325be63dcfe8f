/* moeplan: the WORST objective over a history of load windows
 * (moeplan/history.h; issue 25 item 3). The other objectives reduce the
 * history to one load vector (src/base/history.c) that mp_place plans on.
 *
 * WORST minimises max_t busiest_t / mean_t over the windows t. That is a
 * min-max over T load vectors, which mp_place does not solve; here it is a
 * heuristic: start from the plan on the mean (mp_history_loads) and swap
 * two slots on different GPUs (replica counts fixed) while a swap moves a
 * slot off the GPU that is busiest in the worst window and leaves both
 * changed GPUs below the current worst ratio in every window. Each accepted
 * swap removes one (window, GPU) pair at the worst ratio and adds none, so
 * the worst ratio never rises and falls once no pair sits at it. The bound
 * max_t LB_t / mean_t is valid for every plan: in window t any plan's busiest
 * GPU is at least that window's lower bound (mp_place_lower_bound, README
 * "Bounds"), so the max over windows is at least the max of the bounds. It
 * is not claimed tight.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/diag.h"
#include "moeplan/history.h"
#include "moeplan/placement.h"

static double row_sum(const double *w, uint32_t n)
{
	double s = 0.0;
	for (uint32_t e = 0; e < n; e++) {
		s += w[e];
	}
	return s;
}

/* ------------------------------------------------------------- WORST */

struct worst {
	const double *const *w;
	uint32_t T, E, G, S;
	uint32_t *slot;   /* [G*S] expert of each slot */
	uint32_t *repl;   /* [E] replicas */
	double *inv_mean; /* [T] 1 / mean GPU load, 0 for an empty window */
	double *load;     /* [T*G] GPU loads */
};

static double slot_load(const struct worst *s, uint32_t t, uint32_t p)
{
	return s->w[t][s->slot[p]] / (double)s->repl[s->slot[p]];
}

/* The worst ratio and the (window, GPU) that attains it (first in order). */
static double worst_ratio(const struct worst *s, uint32_t *wt, uint32_t *wg)
{
	double best = 0.0;
	*wt = 0;
	*wg = 0;
	for (uint32_t t = 0; t < s->T; t++) {
		for (uint32_t g = 0; g < s->G; g++) {
			const double r = s->load[(size_t)t * s->G + g] * s->inv_mean[t];
			if (r > best) {
				best = r;
				*wt = t;
				*wg = g;
			}
		}
	}
	return best;
}

static bool gpu_has(const struct worst *s, uint32_t g, uint32_t e)
{
	for (uint32_t i = 0; i < s->S; i++) {
		if (s->slot[(size_t)g * s->S + i] == e) {
			return true;
		}
	}
	return false;
}

/* Would swapping slots p (on GPU a) and q (on GPU b) leave both GPUs below
 * the worst ratio in every window? */
static bool swap_helps(const struct worst *s, uint32_t p, uint32_t q, double worst)
{
	const uint32_t a = p / s->S;
	const uint32_t b = q / s->S;
	for (uint32_t t = 0; t < s->T; t++) {
		const double d = slot_load(s, t, q) - slot_load(s, t, p);
		const double la = (s->load[(size_t)t * s->G + a] + d) * s->inv_mean[t];
		const double lb = (s->load[(size_t)t * s->G + b] - d) * s->inv_mean[t];
		if (la >= worst || lb >= worst) {
			return false;
		}
	}
	return true;
}

static void do_swap(struct worst *s, uint32_t p, uint32_t q)
{
	const uint32_t a = p / s->S;
	const uint32_t b = q / s->S;
	for (uint32_t t = 0; t < s->T; t++) {
		const double d = slot_load(s, t, q) - slot_load(s, t, p);
		s->load[(size_t)t * s->G + a] += d;
		s->load[(size_t)t * s->G + b] -= d;
	}
	const uint32_t e = s->slot[p];
	s->slot[p] = s->slot[q];
	s->slot[q] = e;
}

/* One improving swap off GPU g (first found in slot order), or false. */
static bool improve_once(struct worst *s, uint32_t g, double worst)
{
	for (uint32_t i = 0; i < s->S; i++) {
		const uint32_t p = g * s->S + i;
		for (uint32_t q = 0; q < s->G * s->S; q++) {
			const uint32_t b = q / s->S;
			if (b == g || s->slot[q] == s->slot[p] || gpu_has(s, g, s->slot[q]) ||
			    gpu_has(s, b, s->slot[p]) || !swap_helps(s, p, q, worst)) {
				continue;
			}
			do_swap(s, p, q);
			return true;
		}
	}
	return false;
}

static int worst_setup(struct worst *s)
{
	const size_t n = (size_t)s->G * s->S;
	s->repl = calloc(s->E, sizeof(*s->repl));
	s->inv_mean = calloc(s->T, sizeof(*s->inv_mean));
	s->load = calloc((size_t)s->T * s->G, sizeof(*s->load));
	if (!s->repl || !s->inv_mean || !s->load) {
		return MP_ENOMEM;
	}
	for (size_t p = 0; p < n; p++) {
		if (s->slot[p] >= s->E) {
			return MP_EINVAL;
		}
		s->repl[s->slot[p]]++;
	}
	for (uint32_t t = 0; t < s->T; t++) {
		const double total = row_sum(s->w[t], s->E);
		s->inv_mean[t] = total > 0.0 ? (double)s->G / total : 0.0;
		for (size_t p = 0; p < n; p++) {
			s->load[(size_t)t * s->G + p / s->S] += slot_load(s, t, (uint32_t)p);
		}
	}
	return 0;
}

int mp_place_worst_layer(const double *const *w, uint32_t n_windows, uint32_t n_experts,
			 uint32_t gpus, uint32_t slots_per_gpu, uint64_t max_swaps,
			 uint32_t *slot_expert, double *worst, double *bound)
{
	assert(w && slot_expert && worst && bound);
	if (n_windows == 0 || n_experts == 0 || gpus == 0 || slots_per_gpu == 0) {
		return MP_EINVAL;
	}
	struct worst s = {.w = w, .T = n_windows, .E = n_experts, .G = gpus, .S = slots_per_gpu,
			  .slot = slot_expert};
	int rc = worst_setup(&s);
	if (rc == 0) {
		uint32_t wt = 0;
		uint32_t wg = 0;
		double cur = worst_ratio(&s, &wt, &wg);
		for (uint64_t k = 0; k < max_swaps && improve_once(&s, wg, cur); k++) {
			cur = worst_ratio(&s, &wt, &wg);
		}
		*worst = cur;
		double b = 0.0;
		bool busy = false;
		for (uint32_t t = 0; t < s.T; t++) {
			const double lb = mp_place_lower_bound(w[t], n_experts, gpus, slots_per_gpu);
			b = fmax(b, lb * s.inv_mean[t]);
			busy = busy || s.inv_mean[t] > 0.0;
		}
		/* no window's busiest GPU is below its mean: 1 bounds the ratio too
		 * (and removes the rounding of lb / mean just below it) */
		*bound = busy ? fmax(b, 1.0) : 0.0;
	}
	free(s.repl);
	free(s.inv_mean);
	free(s.load);
	return rc;
}
