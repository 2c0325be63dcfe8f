/* Where the engines send a logical expert's tokens (moeplan/dispatch.h):
 * the even split, vLLM's position modulo (1/r in expectation) and SGLang's
 * nearest-replica rule with its fair random choices, re-implemented from
 * sgl-project/sglang 60d36e7 python/sglang/srt/eplb/expert_location.py
 * (`_compute_logical_to_all_physical_map`, `_find_nearest_expert`,
 * `compute_logical_to_rank_dispatch_physical_map`, `_fair_choices`).
 *
 * It sits in base/ beside map.c, not in model/: the solver (placement/)
 * optimises under it and may use base/ only (src/README.md's arrows). */
#include "moeplan/dispatch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/diag.h"

const char *mp_dispatch_rule_name(enum mp_dispatch_rule rule)
{
	switch (rule) {
	case MP_DISPATCH_EVEN: return "even";
	case MP_DISPATCH_SGLANG: return "sglang";
	case MP_DISPATCH_VLLM: return "vllm";
	}
	return "unknown";
}

const char *mp_dispatch_algorithm_name(enum mp_dispatch_algorithm algorithm)
{
	switch (algorithm) {
	case MP_DISPATCH_STATIC: return "static";
	case MP_DISPATCH_DYNAMIC: return "dynamic";
	case MP_DISPATCH_FAKE: return "fake";
	}
	return "unknown";
}

int mp_dispatch_parse_rule(const char *name, enum mp_dispatch_rule *out)
{
	static const enum mp_dispatch_rule all[] = {MP_DISPATCH_EVEN, MP_DISPATCH_SGLANG, MP_DISPATCH_VLLM};
	for (size_t i = 0; name && i < sizeof(all) / sizeof(all[0]); i++) {
		if (strcmp(name, mp_dispatch_rule_name(all[i])) == 0) {
			*out = all[i];
			return 0;
		}
	}
	return MP_EINVAL;
}

int mp_dispatch_parse_algorithm(const char *name, enum mp_dispatch_algorithm *out)
{
	static const enum mp_dispatch_algorithm all[] = {MP_DISPATCH_STATIC, MP_DISPATCH_DYNAMIC,
							 MP_DISPATCH_FAKE};
	for (size_t i = 0; name && i < sizeof(all) / sizeof(all[0]); i++) {
		if (strcmp(name, mp_dispatch_algorithm_name(all[i])) == 0) {
			*out = all[i];
			return 0;
		}
	}
	return MP_EINVAL;
}

/* ---- CPython's random.Random (Modules/_randommodule.c, Lib/random.py) ---- */

#define MT_N 624
#define MT_M 397

struct pyrandom {
	uint32_t mt[MT_N];
	uint32_t index;
};

struct mp_dispatch_streams {
	uint32_t nodes;
	struct pyrandom *node; /* [nodes] */
};

static void mt_init_genrand(struct pyrandom *r, uint32_t s)
{
	r->mt[0] = s;
	for (uint32_t i = 1; i < MT_N; i++) {
		r->mt[i] = 1812433253u * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + i;
	}
	r->index = MT_N;
}

/* init_by_array(key = {seed}): what random.seed(int) does for a seed
 * below 2^32 (random_seed: the key is abs(seed) in 32-bit words). */
static void mt_seed(struct pyrandom *r, uint32_t seed)
{
	mt_init_genrand(r, 19650218u);
	uint32_t i = 1;
	for (uint32_t k = MT_N; k; k--) {
		r->mt[i] = (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1664525u)) + seed;
		i++;
		if (i >= MT_N) {
			r->mt[0] = r->mt[MT_N - 1];
			i = 1;
		}
	}
	for (uint32_t k = MT_N - 1; k; k--) {
		r->mt[i] = (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1566083941u)) - i;
		i++;
		if (i >= MT_N) {
			r->mt[0] = r->mt[MT_N - 1];
			i = 1;
		}
	}
	r->mt[0] = 0x80000000u;
	r->index = MT_N;
}

static uint32_t mt_next(struct pyrandom *r)
{
	static const uint32_t mag01[2] = {0u, 0x9908b0dfu};
	if (r->index >= MT_N) {
		uint32_t y;
		uint32_t kk = 0;
		for (; kk < MT_N - MT_M; kk++) {
			y = (r->mt[kk] & 0x80000000u) | (r->mt[kk + 1] & 0x7fffffffu);
			r->mt[kk] = r->mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 1u];
		}
		for (; kk < MT_N - 1; kk++) {
			y = (r->mt[kk] & 0x80000000u) | (r->mt[kk + 1] & 0x7fffffffu);
			r->mt[kk] = r->mt[kk + MT_M - MT_N] ^ (y >> 1) ^ mag01[y & 1u];
		}
		y = (r->mt[MT_N - 1] & 0x80000000u) | (r->mt[0] & 0x7fffffffu);
		r->mt[MT_N - 1] = r->mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1u];
		r->index = 0;
	}
	uint32_t y = r->mt[r->index++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	y ^= y >> 18;
	return y;
}

/* Random._randbelow_with_getrandbits(n), n >= 1 (n < 2^32 here):
 * k = n.bit_length(); r = getrandbits(k) until r < n; getrandbits(k) for
 * k <= 32 is genrand_uint32() >> (32 - k). */
static uint32_t py_randbelow(struct pyrandom *r, uint32_t n)
{
	uint32_t k = 0;
	while (k < 32 && (n >> k) != 0) {
		k++;
	}
	uint32_t v = mt_next(r) >> (32 - k);
	while (v >= n) {
		v = mt_next(r) >> (32 - k);
	}
	return v;
}

/* Random.shuffle(x): for i in reversed(range(1, len(x))): j =
 * _randbelow(i + 1); swap. */
static void py_shuffle(struct pyrandom *r, uint32_t *x, uint32_t n)
{
	for (uint32_t i = n; i-- > 1;) {
		uint32_t j = py_randbelow(r, i + 1);
		uint32_t t = x[i];
		x[i] = x[j];
		x[j] = t;
	}
}

/* Random.sample(pop[n], k) into out[k], k < n: the pool method when n <=
 * setsize (21, plus 4 ** ceil(log(3k, 4)) for k > 5), else rejection of
 * repeated indices. pool[n] and seen[n] are scratch. */
static void py_sample(struct pyrandom *r, const uint32_t *pop, uint32_t n, uint32_t k, uint32_t *out,
		      uint32_t *pool, unsigned char *seen)
{
	double setsize = 21;
	if (k > 5) {
		setsize += pow(4.0, ceil(log((double)k * 3) / log(4.0)));
	}
	if ((double)n <= setsize) {
		memcpy(pool, pop, n * sizeof(*pool));
		for (uint32_t i = 0; i < k; i++) {
			uint32_t j = py_randbelow(r, n - i);
			out[i] = pool[j];
			pool[j] = pool[n - i - 1];
		}
		return;
	}
	memset(seen, 0, n);
	for (uint32_t i = 0; i < k; i++) {
		uint32_t j = py_randbelow(r, n);
		while (seen[j]) {
			j = py_randbelow(r, n);
		}
		seen[j] = 1;
		out[i] = pop[j];
	}
}

struct mp_dispatch_streams *mp_dispatch_streams_new(uint32_t nodes)
{
	if (nodes == 0) {
		return NULL;
	}
	struct mp_dispatch_streams *s = calloc(1, sizeof(*s));
	if (!s) {
		return NULL;
	}
	s->node = calloc(nodes, sizeof(*s->node));
	if (!s->node) {
		free(s);
		return NULL;
	}
	s->nodes = nodes;
	for (uint32_t n = 0; n < nodes; n++) {
		mt_seed(&s->node[n], 42u); /* random.Random(seed=42) */
	}
	return s;
}

struct mp_dispatch_streams *mp_dispatch_streams_copy(const struct mp_dispatch_streams *from)
{
	struct mp_dispatch_streams *s = from ? mp_dispatch_streams_new(from->nodes) : NULL;
	if (s) {
		memcpy(s->node, from->node, from->nodes * sizeof(*s->node));
	}
	return s;
}

void mp_dispatch_streams_assign(struct mp_dispatch_streams *to, const struct mp_dispatch_streams *from)
{
	if (to && from && to->nodes == from->nodes) {
		memcpy(to->node, from->node, from->nodes * sizeof(*to->node));
	}
}

void mp_dispatch_streams_free(struct mp_dispatch_streams *s)
{
	if (s) {
		free(s->node);
		free(s);
	}
}

/* ---- the rules ---- */

struct work {
	uint32_t E, G, S, P, nodes;
	uint32_t *off;      /* [E + 1]: expert e's slots are cand[off[e] .. off[e+1]) ascending */
	uint32_t *cand;     /* [G*S] */
	uint32_t *gpu_own;  /* [G]: the first slot of the current expert on each GPU, or NONE */
	uint32_t *node_own; /* [nodes]: the first slot on each node, or NONE */
	uint32_t *ans;      /* [G]: _fair_choices' answer */
	uint32_t *pool;     /* [G*S] */
	unsigned char *seen; /* [G*S] */
	uint32_t *route;    /* [G*E] out, or NULL: rank g's slot for expert e (MP_DISPATCH_SPLIT) */
};

#define NONE UINT32_MAX

static void work_free(struct work *w)
{
	free(w->off);
	free(w->cand);
	free(w->gpu_own);
	free(w->node_own);
	free(w->ans);
	free(w->pool);
	free(w->seen);
}

static int work_init(struct work *w, const uint32_t *slot_expert, uint32_t E, uint32_t G, uint32_t S,
		     uint32_t P)
{
	const uint32_t N = G * S;
	memset(w, 0, sizeof(*w));
	w->E = E;
	w->G = G;
	w->S = S;
	w->P = P;
	w->nodes = G / P;
	w->off = calloc((size_t)E + 1, sizeof(*w->off));
	w->cand = malloc((size_t)N * sizeof(*w->cand));
	w->gpu_own = malloc((size_t)G * sizeof(*w->gpu_own));
	w->node_own = malloc((size_t)w->nodes * sizeof(*w->node_own));
	w->ans = calloc(G, sizeof(*w->ans)); /* zeroed: every entry is written before use */
	w->pool = malloc((size_t)N * sizeof(*w->pool));
	w->seen = malloc(N);
	if (!w->off || !w->cand || !w->gpu_own || !w->node_own || !w->ans || !w->pool || !w->seen) {
		work_free(w);
		return MP_ENOMEM;
	}
	for (uint32_t p = 0; p < N; p++) {
		if (slot_expert[p] >= E) {
			work_free(w);
			return MP_EINVAL;
		}
		w->off[slot_expert[p] + 1]++;
	}
	for (uint32_t e = 0; e < E; e++) {
		if (w->off[e + 1] == 0) {
			work_free(w);
			return MP_EINVAL;
		}
		w->off[e + 1] += w->off[e];
	}
	/* counting sort, slots in ascending order per expert */
	uint32_t *fill = w->pool;
	memcpy(fill, w->off, (size_t)E * sizeof(*fill));
	for (uint32_t p = 0; p < N; p++) {
		w->cand[fill[slot_expert[p]]++] = p;
	}
	for (uint32_t g = 0; g < G; g++) {
		w->gpu_own[g] = NONE;
	}
	return 0;
}

/* Tokens rank g originates for expert e. */
static double tokens(const double *w, const double *origin, uint32_t E, uint32_t G, uint32_t g,
		     uint32_t e)
{
	return origin ? origin[(size_t)g * E + e] : w[e] / G;
}

/* _fair_choices(cands[c], k, r): each candidate k // c times, then
 * r.sample(cands, k % c), then r.shuffle. */
static void fair_choices(struct work *wk, struct pyrandom *r, const uint32_t *cands, uint32_t c,
			 uint32_t k)
{
	uint32_t q = k / c;
	uint32_t n = 0;
	for (uint32_t i = 0; i < q; i++) {
		for (uint32_t j = 0; j < c; j++) {
			wk->ans[n++] = cands[j];
		}
	}
	py_sample(r, cands, c, k % c, wk->ans + n, wk->pool, wk->seen);
	py_shuffle(r, wk->ans, k);
}

/* Expert e under SGLang's rule: each rank's tokens onto slot_load. */
static void sglang_expert(struct work *wk, struct mp_dispatch_streams *st, uint32_t e, const double *w,
			  const double *origin, double *slot_load)
{
	const uint32_t *cands = wk->cand + wk->off[e];
	const uint32_t c = wk->off[e + 1] - wk->off[e];
	const uint32_t S = wk->S, P = wk->P;
	for (uint32_t n = 0; n < wk->nodes; n++) {
		wk->node_own[n] = NONE;
	}
	for (uint32_t i = c; i-- > 0;) { /* descending, so the lowest id stays */
		wk->gpu_own[cands[i] / S] = cands[i];
		wk->node_own[cands[i] / (S * P)] = cands[i];
	}
	uint32_t lacking = 0; /* nodes without a replica */
	for (uint32_t n = 0; n < wk->nodes; n++) {
		lacking += wk->node_own[n] == NONE;
	}
	uint32_t before = 0; /* lacking nodes below n */
	for (uint32_t n = 0; n < wk->nodes; n++) {
		bool draws = c > 1 && wk->node_own[n] == NONE;
		if (draws && st) {
			fair_choices(wk, &st->node[n], cands, c, lacking * P);
		}
		for (uint32_t g = n * P; g < n * P + P; g++) {
			double t = w || origin ? tokens(w, origin, wk->E, wk->G, g, e) : 0;
			uint32_t p = MP_DISPATCH_SPLIT;
			if (!draws) {
				p = c == 1 ? cands[0] : wk->gpu_own[g] != NONE ? wk->gpu_own[g] : wk->node_own[n];
				slot_load[p] += t;
			} else if (st) {
				p = wk->ans[before * P + (g - n * P)];
				slot_load[p] += t;
			} else {
				for (uint32_t i = 0; i < c; i++) {
					slot_load[cands[i]] += t / c;
				}
			}
			if (wk->route) {
				wk->route[(size_t)g * wk->E + e] = p;
			}
		}
		before += wk->node_own[n] == NONE;
	}
	for (uint32_t i = 0; i < c; i++) {
		wk->gpu_own[cands[i] / S] = NONE;
	}
}

/* Even split: every replica w_e / r_e of all ranks' tokens. */
static void even_expert(const struct work *wk, uint32_t e, const double *w, const double *origin,
			double *slot_load)
{
	const uint32_t c = wk->off[e + 1] - wk->off[e];
	double total = 0;
	for (uint32_t g = 0; (w || origin) && g < wk->G; g++) {
		total += tokens(w, origin, wk->E, wk->G, g, e);
	}
	for (uint32_t i = wk->off[e]; i < wk->off[e + 1]; i++) {
		slot_load[wk->cand[i]] += total / c;
	}
	for (uint32_t g = 0; wk->route && g < wk->G; g++) {
		wk->route[(size_t)g * wk->E + e] = c == 1 ? wk->cand[wk->off[e]] : MP_DISPATCH_SPLIT;
	}
}

/* mp_dispatch_layer, and with route non-NULL mp_dispatch_layer_route. */
static int dispatch_run(const struct mp_dispatch *d, struct mp_dispatch_streams *streams,
			const uint32_t *slot_expert, uint32_t n_experts, uint32_t gpus,
			uint32_t slots_per_gpu, const double *w, const double *origin, double *slot_load,
			double *gpu_load, uint32_t *route)
{
	const uint32_t P = d->gpus_per_node ? d->gpus_per_node : gpus;
	if (!slot_expert || n_experts == 0 || gpus == 0 || slots_per_gpu == 0 || gpus % P != 0 ||
	    (streams && streams->nodes != gpus / P)) {
		return MP_EINVAL;
	}
	const uint32_t N = gpus * slots_per_gpu;
	double *sl = calloc(N, sizeof(*sl));
	double *fake = NULL;
	struct work wk;
	int rc = sl ? work_init(&wk, slot_expert, n_experts, gpus, slots_per_gpu, P) : MP_ENOMEM;
	if (rc != 0) {
		free(sl);
		return rc;
	}
	wk.route = route;
	bool sglang = d->rule == MP_DISPATCH_SGLANG;
	if (sglang && d->algorithm == MP_DISPATCH_FAKE && (w || origin)) {
		/* uniform routing: every expert the layer's mean */
		double total = 0;
		for (uint32_t e = 0; e < n_experts; e++) {
			for (uint32_t g = 0; g < gpus; g++) {
				total += tokens(w, origin, n_experts, gpus, g, e);
			}
		}
		fake = malloc((size_t)n_experts * sizeof(*fake));
		for (uint32_t e = 0; fake && e < n_experts; e++) {
			fake[e] = total / n_experts;
		}
		if (!fake) {
			work_free(&wk);
			free(sl);
			return MP_ENOMEM;
		}
		w = fake;
		origin = NULL;
	}
	struct mp_dispatch_streams *st = sglang && d->algorithm == MP_DISPATCH_STATIC ? streams : NULL;
	for (uint32_t e = 0; e < n_experts; e++) {
		if (sglang) {
			sglang_expert(&wk, st, e, w, origin, sl);
		} else {
			even_expert(&wk, e, w, origin, sl);
		}
	}
	if (slot_load) {
		memcpy(slot_load, sl, N * sizeof(*sl));
	}
	for (uint32_t g = 0; gpu_load && g < gpus; g++) {
		double s = 0;
		for (uint32_t k = 0; k < slots_per_gpu; k++) {
			s += sl[g * slots_per_gpu + k];
		}
		gpu_load[g] = s;
	}
	free(fake);
	work_free(&wk);
	free(sl);
	return 0;
}

int mp_dispatch_layer(const struct mp_dispatch *d, struct mp_dispatch_streams *streams,
		      const uint32_t *slot_expert, uint32_t n_experts, uint32_t gpus,
		      uint32_t slots_per_gpu, const double *w, const double *origin, double *slot_load,
		      double *gpu_load)
{
	return dispatch_run(d, streams, slot_expert, n_experts, gpus, slots_per_gpu, w, origin, slot_load,
			    gpu_load, NULL);
}

int mp_dispatch_layer_route(const struct mp_dispatch *d, struct mp_dispatch_streams *streams,
			    const uint32_t *slot_expert, uint32_t n_experts, uint32_t gpus,
			    uint32_t slots_per_gpu, uint32_t *route)
{
	if (!route) {
		return MP_EINVAL;
	}
	return dispatch_run(d, streams, slot_expert, n_experts, gpus, slots_per_gpu, NULL, NULL, NULL, NULL,
			    route);
}

int mp_dispatch_sglang_expert(struct mp_dispatch_streams *streams, const uint32_t *cands, uint32_t c,
			      uint32_t gpus, uint32_t slots_per_gpu, uint32_t gpus_per_node, uint32_t *ranks)
{
	const uint32_t P = gpus_per_node ? gpus_per_node : gpus;
	const uint32_t N = gpus * slots_per_gpu;
	if (!streams || !cands || !ranks || c == 0 || gpus == 0 || slots_per_gpu == 0 || gpus % P != 0 ||
	    streams->nodes != gpus / P) {
		return MP_EINVAL;
	}
	for (uint32_t i = 0; i < c; i++) {
		if (cands[i] >= N || (i > 0 && cands[i] <= cands[i - 1])) {
			return MP_EINVAL;
		}
	}
	struct work wk = {.E = 1, .G = gpus, .S = slots_per_gpu, .P = P, .nodes = gpus / P};
	uint32_t off[2] = {0, c};
	wk.off = off;
	wk.cand = (uint32_t *)(uintptr_t)cands; /* read only by sglang_expert */
	wk.gpu_own = malloc((size_t)gpus * sizeof(*wk.gpu_own));
	wk.node_own = malloc((size_t)wk.nodes * sizeof(*wk.node_own));
	wk.ans = calloc(gpus, sizeof(*wk.ans));
	wk.pool = malloc((size_t)N * sizeof(*wk.pool));
	wk.seen = malloc(N);
	double *sl = calloc(N, sizeof(*sl));
	int rc = wk.gpu_own && wk.node_own && wk.ans && wk.pool && wk.seen && sl ? 0 : MP_ENOMEM;
	if (rc == 0) {
		for (uint32_t g = 0; g < gpus; g++) {
			wk.gpu_own[g] = NONE;
		}
		const double one = gpus; /* w / G = 1 token per rank */
		sglang_expert(&wk, streams, 0, &one, NULL, sl);
		for (uint32_t i = 0; i < c; i++) {
			ranks[i] = (uint32_t)llround(sl[cands[i]]);
		}
	}
	free(wk.gpu_own);
	free(wk.node_own);
	free(wk.ans);
	free(wk.pool);
	free(wk.seen);
	free(sl);
	return rc;
}
