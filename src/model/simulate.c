/* moeplan: Monte Carlo routing of finite batches (see simulate.h). */
#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "moeplan/simulate.h"
#include "base/rng-internal.h"

/* Consecutive repeats of already chosen experts after which one position
 * of a token is drawn by an exact scan of the remaining mass instead (the
 * same conditional law, so the result stays exact). */
#define MAX_REJECTS 64

/* The SplitMix64 increment (golden ratio), see rng-internal.h. */
#define GAMMA UINT64_C(0x9e3779b97f4a7c15)

/* Where each expert's replicas live: for one map layer. */
struct sim_map {
	uint32_t *rep_start; /* [E + 1]: replicas of e are rep_gpu[rep_start[e] .. rep_start[e+1]) */
	uint32_t *rep_gpu;   /* [G * S]: GPU of each replica, grouped by expert */
	uint32_t *single_gpu;/* [E]: the GPU of each expert when every expert has exactly
				one replica, else NULL */
	const uint32_t *route; /* [G * E] (the caller's): the GPU rank g's visits of e go to,
				  MP_SIMULATE_ANY = uniform among the replicas; or NULL */
};

/* Popularity of one loads row. */
struct sim_pop {
	bool uniform;
	double *p;       /* [E] probabilities (sum 1), NULL when uniform */
	uint64_t *thr;   /* [E] alias acceptance thresholds in [0, 2^32] */
	uint32_t *alias; /* [E] */
};

struct sim_ctx {
	uint32_t n_experts;
	uint32_t gpus;
	uint32_t tokens_per_gpu;
	uint32_t top_k;
	uint32_t n_layers;
	uint32_t n_maps;
	uint32_t n_pops;
	bool prefer_local;
	uint64_t seed;
	double mean_visits;
	struct sim_map *maps;
	struct sim_pop *pops;
	double *factors; /* [steps], written by the workers at disjoint indices */
};

struct sim_worker {
	const struct sim_ctx *ctx;
	uint32_t first;
	uint32_t last;     /* one past */
	uint32_t *counts;  /* [G] */
	uint64_t *gpu_sum; /* [G] */
	uint8_t *mark;     /* [E]: experts the current token has chosen */
};

void mp_simulate_options_init(struct mp_simulate_options *opts)
{
	assert(opts);
	*opts = (struct mp_simulate_options){
		.tokens_per_gpu = 0,
		.top_k = 0,
		.steps = MP_SIMULATE_DEFAULT_STEPS,
		.seed = MP_SIMULATE_DEFAULT_SEED,
		.prefer_local = false,
		.route = NULL,
		.threads = 0,
		.gpus = 0,
		.slots_per_gpu = 0,
		.n_experts = 0,
	};
}

void mp_simulate_result_init(struct mp_simulate_result *result)
{
	assert(result);
	*result = (struct mp_simulate_result){ 0 };
}

void mp_simulate_result_finish(struct mp_simulate_result *result)
{
	if (!result) {
		return;
	}
	free(result->factors);
	free(result->gpu_mean_visits);
	free(result->layer_factor_mean);
	*result = (struct mp_simulate_result){ 0 };
}

int mp_simulate_default_layout(uint32_t n_experts, uint32_t gpus, uint32_t slots_per_gpu,
			       uint32_t *slot_expert)
{
	assert(slot_expert);
	const uint64_t slots = (uint64_t)gpus * slots_per_gpu;
	if (n_experts == 0 || gpus == 0 || slots_per_gpu == 0 || slots < n_experts ||
	    slots_per_gpu > n_experts) {
		return MP_EINVAL;
	}
	for (uint64_t p = 0; p < slots; p++) {
		slot_expert[p] = (uint32_t)(p % n_experts);
	}
	return 0;
}

/* ---- preparation ---- */

static void free_ctx(struct sim_ctx *ctx)
{
	if (ctx->maps) {
		for (uint32_t i = 0; i < ctx->n_maps; i++) {
			free(ctx->maps[i].rep_start);
			free(ctx->maps[i].rep_gpu);
			free(ctx->maps[i].single_gpu);
		}
	}
	if (ctx->pops) {
		for (uint32_t i = 0; i < ctx->n_pops; i++) {
			free(ctx->pops[i].p);
			free(ctx->pops[i].thr);
			free(ctx->pops[i].alias);
		}
	}
	free(ctx->maps);
	free(ctx->pops);
	free(ctx->factors);
}

/* Group the slots of one layer by expert (counting sort, slot order kept). */
static int build_map(const uint32_t *slot_expert, uint32_t n_experts, uint32_t gpus,
		     uint32_t slots_per_gpu, uint32_t layer, struct sim_map *out,
		     struct mp_diags *diags)
{
	const uint32_t slots = gpus * slots_per_gpu;
	out->rep_start = calloc((size_t)n_experts + 1, sizeof(*out->rep_start));
	/* calloc, not malloc: every entry is written below, but the static
	 * analyser cannot follow the counting sort. */
	out->rep_gpu = calloc(slots ? slots : 1, sizeof(*out->rep_gpu));
	if (!out->rep_start || !out->rep_gpu) {
		return MP_ENOMEM;
	}
	for (uint32_t p = 0; p < slots; p++) {
		if (slot_expert[p] >= n_experts) {
			return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
					    "layer %u, slot %u: expert %u out of range (%u experts)",
					    layer, p, slot_expert[p], n_experts);
		}
		out->rep_start[slot_expert[p] + 1]++;
	}
	for (uint32_t e = 0; e < n_experts; e++) {
		out->rep_start[e + 1] += out->rep_start[e];
	}
	for (uint32_t p = 0; p < slots; p++) {
		/* rep_start[e] is used as the fill cursor, then shifted back. */
		out->rep_gpu[out->rep_start[slot_expert[p]]++] = p / slots_per_gpu;
	}
	for (uint32_t e = n_experts; e > 0; e--) {
		out->rep_start[e] = out->rep_start[e - 1];
	}
	out->rep_start[0] = 0;
	for (uint32_t e = 0; e < n_experts; e++) {
		if (out->rep_start[e + 1] - out->rep_start[e] != 1) {
			return 0;
		}
	}
	out->single_gpu = malloc((size_t)n_experts * sizeof(*out->single_gpu));
	if (!out->single_gpu) {
		return MP_ENOMEM;
	}
	for (uint32_t e = 0; e < n_experts; e++) {
		out->single_gpu[e] = out->rep_gpu[out->rep_start[e]];
	}
	return 0;
}

/* Popularity of one row: uniform fast path, or an alias table (Vose 1991). */
static int build_pop(const double *w, uint32_t n, uint32_t top_k, uint32_t row,
		     struct sim_pop *out, struct mp_diags *diags)
{
	int rc = 0;
	uint32_t *small = NULL;
	uint32_t *large = NULL;
	double *q = NULL;
	double sum = 0.0;
	double lo = (double)INFINITY;
	double hi = 0.0;
	uint32_t active = 0;
	for (uint32_t e = 0; e < n; e++) {
		if (!isfinite(w[e]) || w[e] < 0.0) {
			return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
					    "loads row %u, expert %u: popularity %g is not a finite "
					    "value >= 0", row, e, w[e]);
		}
		sum += w[e];
		lo = fmin(lo, w[e]);
		hi = fmax(hi, w[e]);
		active += w[e] > 0.0;
	}
	if (!(hi > 0.0) || hi - lo <= 1e-12 * hi) {
		out->uniform = true;
		return 0;
	}
	if (active < top_k) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "loads row %u: only %u experts have popularity, fewer than "
				    "top_k %u", row, active, top_k);
	}
	out->uniform = false;
	out->p = malloc((size_t)n * sizeof(*out->p));
	out->thr = malloc((size_t)n * sizeof(*out->thr));
	out->alias = malloc((size_t)n * sizeof(*out->alias));
	small = malloc((size_t)n * sizeof(*small));
	large = malloc((size_t)n * sizeof(*large));
	q = malloc((size_t)n * sizeof(*q));
	if (!out->p || !out->thr || !out->alias || !small || !large || !q) {
		rc = MP_ENOMEM;
		goto cleanup;
	}
	uint32_t n_small = 0;
	uint32_t n_large = 0;
	uint32_t first_active = 0;
	for (uint32_t e = n; e > 0; e--) {
		if (w[e - 1] > 0.0) {
			first_active = e - 1;
		}
	}
	for (uint32_t e = 0; e < n; e++) {
		out->p[e] = w[e] / sum;
		q[e] = out->p[e] * (double)n;
		out->alias[e] = e;
		if (q[e] < 1.0) {
			small[n_small++] = e;
		} else {
			large[n_large++] = e;
		}
	}
	while (n_small > 0 && n_large > 0) {
		const uint32_t s = small[--n_small];
		const uint32_t l = large[--n_large];
		out->thr[s] = (uint64_t)(q[s] * 4294967296.0);
		out->alias[s] = l;
		q[l] = (q[l] + q[s]) - 1.0;
		if (q[l] < 1.0) {
			small[n_small++] = l;
		} else {
			large[n_large++] = l;
		}
	}
	/* Leftovers have q = 1 up to rounding. */
	while (n_large > 0) {
		out->thr[large[--n_large]] = UINT64_C(1) << 32;
	}
	while (n_small > 0) {
		const uint32_t s = small[--n_small];
		if (w[s] > 0.0) {
			out->thr[s] = UINT64_C(1) << 32;
		} else {
			out->thr[s] = 0;
			out->alias[s] = first_active;
		}
	}
cleanup:
	free(small);
	free(large);
	free(q);
	return rc;
}

/* ---- sampling ---- */

static inline bool is_chosen(const uint32_t *chosen, uint32_t n, uint32_t e)
{
	for (uint32_t i = 0; i < n; i++) {
		if (chosen[i] == e) {
			return true;
		}
	}
	return false;
}

/* Exact draw among the experts not yet chosen (the same law the rejection
 * loop samples from). */
static uint32_t draw_remaining(const struct sim_pop *pop, uint32_t n_experts,
			       const uint32_t *chosen, uint32_t n_chosen, struct mp_rng32 *rng)
{
	if (pop->uniform) {
		uint32_t skip = mp_rng32_below(rng, n_experts - n_chosen);
		for (uint32_t e = 0; e < n_experts; e++) {
			if (is_chosen(chosen, n_chosen, e)) {
				continue;
			}
			if (skip == 0) {
				return e;
			}
			skip--;
		}
		return 0; /* unreachable: n_experts - n_chosen candidates exist */
	}
	double rest = 0.0;
	uint32_t last = 0;
	for (uint32_t e = 0; e < n_experts; e++) {
		if (pop->p[e] > 0.0 && !is_chosen(chosen, n_chosen, e)) {
			rest += pop->p[e];
			last = e;
		}
	}
	const uint64_t hi = mp_rng32_next(rng);
	const uint64_t bits = (hi << 32) | mp_rng32_next(rng);
	double u = mp_u64_to_unit(bits) * rest;
	for (uint32_t e = 0; e < n_experts; e++) {
		if (pop->p[e] > 0.0 && !is_chosen(chosen, n_chosen, e)) {
			u -= pop->p[e];
			if (u < 0.0) {
				return e;
			}
		}
	}
	return last;
}

static inline uint32_t draw_one(const struct sim_pop *pop, uint32_t n_experts,
				struct mp_rng32 *rng)
{
	const uint32_t i = mp_rng32_below(rng, n_experts);
	if (pop->uniform) {
		return i;
	}
	const uint32_t u = mp_rng32_next(rng);
	return (uint64_t)u < pop->thr[i] ? i : pop->alias[i];
}

static inline uint32_t pick_replica(const struct sim_map *map, uint32_t n_experts, uint32_t e,
				    uint32_t sender, bool prefer_local, struct mp_rng32 *rng)
{
	const uint32_t base = map->rep_start[e];
	const uint32_t r = map->rep_start[e + 1] - base;
	if (r == 1) {
		return map->rep_gpu[base];
	}
	if (map->route && map->route[(size_t)sender * n_experts + e] != MP_SIMULATE_ANY) {
		return map->route[(size_t)sender * n_experts + e];
	}
	if (prefer_local) {
		for (uint32_t i = 0; i < r; i++) {
			if (map->rep_gpu[base + i] == sender) {
				return sender;
			}
		}
	}
	return map->rep_gpu[base + mp_rng32_below(rng, r)];
}

/* The fast path of route_sample for uniform popularity when every expert
 * has exactly one replica (the usual EP layout without redundancy): the
 * same draws in the same order, with the generator state kept local. */
static void route_uniform_single(const struct sim_ctx *ctx, const struct sim_map *map,
				 struct mp_rng32 *rng_io, uint32_t *counts, uint8_t *mark)
{
	const uint32_t n_experts = ctx->n_experts;
	const uint32_t k = ctx->top_k;
	const uint32_t *gpu_of = map->single_gpu;
	const uint64_t tokens = (uint64_t)ctx->gpus * ctx->tokens_per_gpu;
	const struct sim_pop uniform = { .uniform = true };
	struct mp_rng32 rng = *rng_io;
	uint32_t chosen[MP_SIMULATE_MAX_TOP_K];
	for (uint64_t t = 0; t < tokens; t++) {
		for (uint32_t j = 0; j < k; j++) {
			uint32_t e = mp_rng32_below(&rng, n_experts);
			int rejects = 0;
			while (mark[e]) {
				if (++rejects == MAX_REJECTS) {
					e = draw_remaining(&uniform, n_experts, chosen, j, &rng);
					break;
				}
				e = mp_rng32_below(&rng, n_experts);
			}
			chosen[j] = e;
			mark[e] = 1;
			counts[gpu_of[e]]++;
		}
		for (uint32_t j = 0; j < k; j++) {
			mark[chosen[j]] = 0;
		}
	}
	*rng_io = rng;
}

/* One sample: route G * B tokens of one layer, return the busiest count. */
/* Any popularity and any replica layout; the generator state is kept local
 * so that it stays in registers. */
static void route_general(const struct sim_ctx *ctx, const struct sim_map *map,
			  const struct sim_pop *pop, struct mp_rng32 *rng_io, uint32_t *counts,
			  uint8_t *mark)
{
	const uint32_t n_experts = ctx->n_experts;
	const uint32_t k = ctx->top_k;
	const bool prefer_local = ctx->prefer_local;
	struct mp_rng32 rng = *rng_io;
	uint32_t chosen[MP_SIMULATE_MAX_TOP_K];
	for (uint32_t sender = 0; sender < ctx->gpus; sender++) {
		for (uint32_t t = 0; t < ctx->tokens_per_gpu; t++) {
			for (uint32_t j = 0; j < k; j++) {
				uint32_t e = draw_one(pop, n_experts, &rng);
				int rejects = 0;
				while (mark[e]) {
					if (++rejects == MAX_REJECTS) {
						e = draw_remaining(pop, n_experts, chosen, j, &rng);
						break;
					}
					e = draw_one(pop, n_experts, &rng);
				}
				chosen[j] = e;
				mark[e] = 1;
				counts[pick_replica(map, n_experts, e, sender, prefer_local, &rng)]++;
			}
			for (uint32_t j = 0; j < k; j++) {
				mark[chosen[j]] = 0;
			}
		}
	}
	*rng_io = rng;
}

/* One sample: route G * B tokens of one layer, return the busiest count. */
static uint32_t route_sample(const struct sim_ctx *ctx, const struct sim_map *map,
			     const struct sim_pop *pop, struct mp_rng32 *rng, uint32_t *counts,
			     uint8_t *mark)
{
	memset(counts, 0, (size_t)ctx->gpus * sizeof(*counts));
	if (pop->uniform && map->single_gpu) {
		route_uniform_single(ctx, map, rng, counts, mark);
	} else {
		route_general(ctx, map, pop, rng, counts, mark);
	}
	uint32_t busiest = 0;
	for (uint32_t g = 0; g < ctx->gpus; g++) {
		if (counts[g] > busiest) {
			busiest = counts[g];
		}
	}
	return busiest;
}

static void *run_worker(void *arg)
{
	struct sim_worker *w = arg;
	const struct sim_ctx *ctx = w->ctx;
	assert(ctx->n_layers > 0);
	for (uint32_t s = w->first; s < w->last; s++) {
		const uint32_t layer = s % ctx->n_layers;
		const struct sim_map *map = &ctx->maps[ctx->n_maps == 1 ? 0 : layer];
		const struct sim_pop *pop = &ctx->pops[ctx->n_pops == 1 ? 0 : layer];
		/* Sample s takes SplitMix64 outputs 4s+1 .. 4s+4 of the stream
		 * started at seed: disjoint states for every sample. */
		struct mp_rng32 rng;
		mp_rng32_seed(&rng, ctx->seed + (uint64_t)s * 4u * GAMMA);
		const uint32_t busiest = route_sample(ctx, map, pop, &rng, w->counts, w->mark);
		ctx->factors[s] = (double)busiest / ctx->mean_visits;
		for (uint32_t g = 0; g < ctx->gpus; g++) {
			w->gpu_sum[g] += w->counts[g];
		}
	}
	return NULL;
}

static unsigned pick_threads(unsigned wanted, uint32_t steps)
{
	unsigned n = wanted;
	if (n == 0) {
		const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		n = cpus > 0 ? (unsigned)cpus : 1u;
	}
	if (n > 256) {
		n = 256;
	}
	if (n > steps) {
		n = steps;
	}
	return n;
}

/* Run the samples over worker threads; gpu_sum[G] receives the totals. */
static int run_samples(const struct sim_ctx *ctx, uint32_t steps, unsigned threads,
		       uint64_t *gpu_sum)
{
	int rc = 0;
	const unsigned n = pick_threads(threads, steps);
	struct sim_worker *workers = calloc(n, sizeof(*workers));
	pthread_t *ids = calloc(n, sizeof(*ids));
	bool *started = calloc(n, sizeof(*started));
	if (!workers || !ids || !started) {
		rc = MP_ENOMEM;
		goto cleanup;
	}
	for (unsigned i = 0; i < n; i++) {
		workers[i] = (struct sim_worker){
			.ctx = ctx,
			.first = (uint32_t)((uint64_t)steps * i / n),
			.last = (uint32_t)((uint64_t)steps * (i + 1) / n),
			.counts = calloc(ctx->gpus, sizeof(uint32_t)),
			.gpu_sum = calloc(ctx->gpus, sizeof(uint64_t)),
			.mark = calloc(ctx->n_experts, 1),
		};
		if (!workers[i].counts || !workers[i].gpu_sum || !workers[i].mark) {
			rc = MP_ENOMEM;
			goto cleanup;
		}
	}
	for (unsigned i = 1; i < n; i++) {
		started[i] = pthread_create(&ids[i], NULL, run_worker, &workers[i]) == 0;
	}
	run_worker(&workers[0]);
	for (unsigned i = 1; i < n; i++) {
		if (started[i]) {
			pthread_join(ids[i], NULL);
		} else {
			/* No thread: do its share here (same results). */
			run_worker(&workers[i]);
		}
	}
	for (unsigned i = 0; i < n; i++) {
		for (uint32_t g = 0; g < ctx->gpus; g++) {
			gpu_sum[g] += workers[i].gpu_sum[g];
		}
	}
cleanup:
	if (workers) {
		for (unsigned i = 0; i < n; i++) {
			free(workers[i].counts);
			free(workers[i].gpu_sum);
			free(workers[i].mark);
		}
	}
	free(workers);
	free(ids);
	free(started);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a;
	const double y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Nearest rank: the ceil(q * n)-th smallest of sorted[n] (1-based). */
static double nearest_rank(const double *sorted, uint32_t n, double q)
{
	double rank = ceil(q * (double)n);
	if (rank < 1.0) {
		rank = 1.0;
	}
	return sorted[(uint32_t)rank - 1];
}

/* Check options and shapes; fills the sizes of ctx. */
static int check_inputs(const struct mp_placement *map, const struct mp_loads *loads,
			const struct mp_simulate_options *opts, struct sim_ctx *ctx,
			uint32_t *slots_per_gpu, struct mp_diags *diags)
{
	if (opts->top_k < 1 || opts->top_k > MP_SIMULATE_MAX_TOP_K) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "top_k %u is out of range (1 to %u)", opts->top_k,
				    MP_SIMULATE_MAX_TOP_K);
	}
	if (opts->tokens_per_gpu < 1) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "tokens per GPU must be at least 1");
	}
	if (opts->steps < 1 || opts->steps > MP_SIMULATE_MAX_STEPS) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "steps %u is out of range (1 to %u)", opts->steps,
				    MP_SIMULATE_MAX_STEPS);
	}
	if (opts->route && (!map || opts->prefer_local)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "an engine's routes need a map and exclude prefer_local");
	}
	uint32_t n_experts = opts->n_experts;
	if (loads) {
		n_experts = loads->n_experts;
	}
	if (map) {
		if (loads && map->n_experts != loads->n_experts) {
			return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
					    "the map has %u experts but the loads have %u",
					    map->n_experts, loads->n_experts);
		}
		n_experts = map->n_experts;
		ctx->gpus = map->gpus;
		*slots_per_gpu = map->slots_per_gpu;
		ctx->n_maps = map->n_layers;
	} else {
		ctx->gpus = opts->gpus;
		*slots_per_gpu = opts->slots_per_gpu;
		if (ctx->gpus > 0 && *slots_per_gpu == 0) {
			*slots_per_gpu = (uint32_t)(((uint64_t)n_experts + ctx->gpus - 1) / ctx->gpus);
		}
		ctx->n_maps = 1;
	}
	if (n_experts < 1 || n_experts > MP_MAX_EXPERTS) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "%u experts is out of range (1 to %u)", n_experts,
				    MP_MAX_EXPERTS);
	}
	if (ctx->gpus < 1 || ctx->gpus > MP_MAX_GPUS || *slots_per_gpu < 1 ||
	    *slots_per_gpu > MP_MAX_SLOTS_PER_GPU) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "%u GPUs x %u slots is out of range (1 to %u GPUs, 1 to %u "
				    "slots per GPU)", ctx->gpus, *slots_per_gpu, MP_MAX_GPUS,
				    MP_MAX_SLOTS_PER_GPU);
	}
	if (!map && ((uint64_t)ctx->gpus * *slots_per_gpu < n_experts ||
		     *slots_per_gpu > n_experts)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "%u GPUs x %u slots cannot hold %u experts once each with at "
				    "most one copy per GPU", ctx->gpus, *slots_per_gpu, n_experts);
	}
	if (opts->top_k > n_experts) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "top_k %u exceeds the %u experts", opts->top_k, n_experts);
	}
	const uint64_t visits = (uint64_t)ctx->gpus * opts->tokens_per_gpu * opts->top_k;
	if (visits > UINT32_MAX) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "%u GPUs x %u tokens x top_k %u = %llu visits per step is "
				    "above the limit of %u", ctx->gpus, opts->tokens_per_gpu,
				    opts->top_k, (unsigned long long)visits, UINT32_MAX);
	}
	ctx->n_pops = loads ? loads->n_layers : 1;
	if (ctx->n_maps < 1 || ctx->n_pops < 1 ||
	    (ctx->n_maps > 1 && ctx->n_pops > 1 && ctx->n_maps != ctx->n_pops)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "the map has %u layers but the loads have %u", ctx->n_maps,
				    ctx->n_pops);
	}
	ctx->n_layers = ctx->n_maps > ctx->n_pops ? ctx->n_maps : ctx->n_pops;
	ctx->n_experts = n_experts;
	ctx->top_k = opts->top_k;
	ctx->tokens_per_gpu = opts->tokens_per_gpu;
	ctx->prefer_local = opts->prefer_local;
	ctx->seed = opts->seed;
	ctx->mean_visits = (double)opts->tokens_per_gpu * opts->top_k;
	return 0;
}

/* Build the replica tables and popularity tables, and check that every
 * expert with popularity has a slot. */
/* Every route of map layer m names a GPU holding the expert (or ANY). */
static int check_route(const struct sim_ctx *ctx, const struct sim_map *sm, uint32_t m,
		       struct mp_diags *diags)
{
	for (uint32_t g = 0; g < ctx->gpus; g++) {
		for (uint32_t e = 0; e < ctx->n_experts; e++) {
			const uint32_t to = sm->route[(size_t)g * ctx->n_experts + e];
			bool held = to == MP_SIMULATE_ANY;
			for (uint32_t i = sm->rep_start[e]; !held && i < sm->rep_start[e + 1]; i++) {
				held = sm->rep_gpu[i] == to;
			}
			if (!held) {
				return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
						    "layer %u: the route of GPU %u's expert %u names GPU %u, "
						    "which holds no replica of it", m, g, e, to);
			}
		}
	}
	return 0;
}

static int prepare(const struct mp_placement *map, const struct mp_loads *loads,
		   const uint32_t *route, uint32_t slots_per_gpu, struct sim_ctx *ctx,
		   struct mp_diags *diags)
{
	int rc = 0;
	uint32_t *layout = NULL;
	ctx->maps = calloc(ctx->n_maps, sizeof(*ctx->maps));
	ctx->pops = calloc(ctx->n_pops, sizeof(*ctx->pops));
	if (!ctx->maps || !ctx->pops) {
		return MP_ENOMEM;
	}
	if (!map) {
		layout = malloc((size_t)ctx->gpus * slots_per_gpu * sizeof(*layout));
		if (!layout) {
			return MP_ENOMEM;
		}
		rc = mp_simulate_default_layout(ctx->n_experts, ctx->gpus, slots_per_gpu, layout);
		assert(rc == 0); /* shapes checked in check_inputs */
	}
	for (uint32_t m = 0; m < ctx->n_maps && rc == 0; m++) {
		const uint32_t *slot_expert = map ? map->layers[m].slot_expert : layout;
		assert(slot_expert);
		rc = build_map(slot_expert, ctx->n_experts, ctx->gpus, slots_per_gpu, m,
			       &ctx->maps[m], diags);
		if (rc == 0 && route) {
			ctx->maps[m].route = route + (size_t)m * ctx->gpus * ctx->n_experts;
			rc = check_route(ctx, &ctx->maps[m], m, diags);
		}
	}
	for (uint32_t q = 0; q < ctx->n_pops && rc == 0; q++) {
		if (!loads) {
			ctx->pops[q].uniform = true;
			continue;
		}
		rc = build_pop(mp_loads_row(loads, q), ctx->n_experts, ctx->top_k, q,
			       &ctx->pops[q], diags);
	}
	for (uint32_t l = 0; l < ctx->n_layers && rc == 0; l++) {
		const struct sim_map *sm = &ctx->maps[ctx->n_maps == 1 ? 0 : l];
		const struct sim_pop *sp = &ctx->pops[ctx->n_pops == 1 ? 0 : l];
		for (uint32_t e = 0; e < ctx->n_experts; e++) {
			const bool popular = sp->uniform || sp->p[e] > 0.0;
			if (popular && sm->rep_start[e + 1] == sm->rep_start[e]) {
				rc = mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
						  "layer %u: expert %u has popularity but no slot", l,
						  e);
				break;
			}
		}
	}
	free(layout);
	return rc;
}

int mp_simulate(const struct mp_placement *map, const struct mp_loads *loads,
		const struct mp_simulate_options *opts, struct mp_simulate_result *out,
		struct mp_diags *diags)
{
	assert(opts && out);
	struct sim_ctx ctx = { 0 };
	struct mp_simulate_result res;
	uint64_t *gpu_sum = NULL;
	double *sorted = NULL;
	uint32_t *layer_n = NULL;
	uint32_t slots_per_gpu = 0;
	mp_simulate_result_init(&res);
	int rc = check_inputs(map, loads, opts, &ctx, &slots_per_gpu, diags);
	if (rc < 0) {
		goto cleanup;
	}
	rc = prepare(map, loads, opts->route, slots_per_gpu, &ctx, diags);
	if (rc < 0) {
		goto cleanup;
	}
	const uint32_t steps = opts->steps;
	ctx.factors = malloc((size_t)steps * sizeof(*ctx.factors));
	if (ctx.n_layers == 0 || ctx.gpus == 0) {
		rc = MP_EINVAL;
		goto cleanup;
	}
	gpu_sum = calloc(ctx.gpus, sizeof(*gpu_sum));
	sorted = malloc((size_t)steps * sizeof(*sorted));
	layer_n = calloc(ctx.n_layers, sizeof(*layer_n));
	res.gpu_mean_visits = malloc((size_t)ctx.gpus * sizeof(*res.gpu_mean_visits));
	res.layer_factor_mean = calloc(ctx.n_layers, sizeof(*res.layer_factor_mean));
	if (!ctx.factors || !gpu_sum || !sorted || !layer_n || !res.gpu_mean_visits ||
	    !res.layer_factor_mean) {
		rc = MP_ENOMEM;
		goto cleanup;
	}
	rc = run_samples(&ctx, steps, opts->threads, gpu_sum);
	if (rc < 0) {
		goto cleanup;
	}
	double sum = 0.0;
	for (uint32_t s = 0; s < steps; s++) {
		sum += ctx.factors[s];
		res.layer_factor_mean[s % ctx.n_layers] += ctx.factors[s];
		layer_n[s % ctx.n_layers]++;
	}
	for (uint32_t l = 0; l < ctx.n_layers; l++) {
		res.layer_factor_mean[l] = layer_n[l] ? res.layer_factor_mean[l] / layer_n[l] : (double)NAN;
	}
	for (uint32_t g = 0; g < ctx.gpus; g++) {
		res.gpu_mean_visits[g] = (double)gpu_sum[g] / steps;
	}
	memcpy(sorted, ctx.factors, (size_t)steps * sizeof(*sorted));
	qsort(sorted, steps, sizeof(*sorted), cmp_double);
	res.steps = steps;
	res.seed = opts->seed;
	res.n_layers = ctx.n_layers;
	res.n_experts = ctx.n_experts;
	res.gpus = ctx.gpus;
	res.slots_per_gpu = slots_per_gpu;
	res.tokens_per_gpu = ctx.tokens_per_gpu;
	res.top_k = ctx.top_k;
	res.prefer_local = ctx.prefer_local;
	res.default_layout = map == NULL;
	res.mean_visits = ctx.mean_visits;
	res.factor_mean = sum / steps;
	res.factor_p50 = nearest_rank(sorted, steps, 0.50);
	res.factor_p99 = nearest_rank(sorted, steps, 0.99);
	res.factor_max = sorted[steps - 1];
	res.factors = ctx.factors;
	ctx.factors = NULL;
	mp_simulate_result_finish(out);
	*out = res;
	mp_simulate_result_init(&res);
cleanup:
	free_ctx(&ctx);
	free(gpu_sum);
	free(sorted);
	free(layer_n);
	mp_simulate_result_finish(&res);
	return rc;
}

int mp_simulate_factor(const struct mp_placement *map, const struct mp_loads *loads,
		       uint32_t tokens_per_gpu, uint32_t top_k, uint32_t steps, uint64_t seed,
		       double *factor_out)
{
	assert(map && factor_out);
	struct mp_simulate_options opts;
	struct mp_simulate_result res;
	mp_simulate_options_init(&opts);
	mp_simulate_result_init(&res);
	opts.tokens_per_gpu = tokens_per_gpu;
	opts.top_k = top_k;
	opts.seed = seed;
	if (steps == 0) {
		const double visits = (double)map->gpus * tokens_per_gpu * top_k;
		double n = visits > 0.0 ? floor(MP_SIMULATE_FACTOR_VISITS / visits) : 256.0;
		n = fmin(n, 256.0);
		const uint32_t layers = loads && loads->n_layers > map->n_layers ? loads->n_layers
										   : map->n_layers;
		n = fmax(n, fmax((double)layers, 16.0));
		steps = (uint32_t)fmin(n, (double)MP_SIMULATE_MAX_STEPS);
	}
	opts.steps = steps;
	int rc = mp_simulate(map, loads, &opts, &res, NULL);
	if (rc == 0) {
		*factor_out = res.factor_mean;
	}
	mp_simulate_result_finish(&res);
	return rc;
}
