/* Placement: the weighted split at the mean, decided exactly (issue 17).
 *
 * Under --split weighted an expert's load may be shared unevenly among
 * its replicas. For a given plan (which GPUs hold which experts) every
 * GPU can carry exactly the mean W / G if and only if the flow network
 *   source -> expert e (capacity G M_e) -> GPU g holding e (unbounded)
 *   -> sink (capacity sum_e M_e = W in units)
 * carries G W, where w_e = M_e 2^K exactly (M_e integers, K the smallest
 * binary exponent) and every quantity is multiplied by G so that the
 * mean is an integer. Integer capacities give an integer maximum flow
 * (Dinic's algorithm in 128-bit integers), so the answer is exact, and
 * the flow is the split: expert e sends flow(e, g) / G 2^K to GPU g.
 * The mean bounds every plan and every split, so a yes proves the plan
 * optimal for the weighted split.
 */
#include "placement/exact.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

struct flow {
	uint32_t V, nedge;
	uint32_t *head, *next, *to; /* adjacency lists; edge i ^ 1 is i's reverse */
	u128 *cap;                  /* residual capacities */
	uint32_t *level, *iter, *queue;
};

static void add_edge(struct flow *f, uint32_t a, uint32_t b, u128 c)
{
	uint32_t i = f->nedge;
	f->to[i] = b;
	f->cap[i] = c;
	f->next[i] = f->head[a];
	f->head[a] = i;
	f->to[i + 1] = a;
	f->cap[i + 1] = 0;
	f->next[i + 1] = f->head[b];
	f->head[b] = i + 1;
	f->nedge += 2;
}

static bool bfs(struct flow *f, uint32_t s, uint32_t t)
{
	for (uint32_t v = 0; v < f->V; v++) {
		f->level[v] = UINT32_MAX;
	}
	uint32_t qh = 0;
	uint32_t qt = 0;
	f->level[s] = 0;
	f->queue[qt++] = s;
	while (qh < qt) {
		uint32_t v = f->queue[qh++];
		for (uint32_t i = f->head[v]; i != UINT32_MAX; i = f->next[i]) {
			if (f->cap[i] > 0 && f->level[f->to[i]] == UINT32_MAX) {
				f->level[f->to[i]] = f->level[v] + 1;
				f->queue[qt++] = f->to[i];
			}
		}
	}
	return f->level[t] != UINT32_MAX;
}

static u128 dfs(struct flow *f, uint32_t v, uint32_t t, u128 up)
{
	if (v == t) {
		return up;
	}
	for (; f->iter[v] != UINT32_MAX; f->iter[v] = f->next[f->iter[v]]) {
		uint32_t i = f->iter[v];
		uint32_t u = f->to[i];
		if (f->cap[i] == 0 || f->level[u] != f->level[v] + 1) {
			continue;
		}
		u128 d = dfs(f, u, t, up < f->cap[i] ? up : f->cap[i]);
		if (d > 0) {
			f->cap[i] -= d;
			f->cap[i ^ 1] += d;
			return d;
		}
	}
	return 0;
}

static u128 max_flow(struct flow *f, uint32_t s, uint32_t t)
{
	u128 total = 0;
	while (bfs(f, s, t)) {
		memcpy(f->iter, f->head, sizeof(*f->iter) * f->V);
		for (u128 d; (d = dfs(f, s, t, ~(u128)0)) > 0;) {
			total += d;
		}
	}
	return total;
}

static void flow_free(struct flow *f)
{
	free(f->head);
	free(f->next);
	free(f->to);
	free(f->cap);
	free(f->level);
	free(f->iter);
	free(f->queue);
}

static int flow_alloc(struct flow *f, uint32_t V, uint32_t E)
{
	memset(f, 0, sizeof(*f));
	f->V = V;
	f->head = malloc(sizeof(*f->head) * V);
	f->next = malloc(sizeof(*f->next) * 2 * E);
	f->to = malloc(sizeof(*f->to) * 2 * E);
	f->cap = malloc(sizeof(*f->cap) * 2 * E);
	f->level = malloc(sizeof(*f->level) * V);
	f->iter = malloc(sizeof(*f->iter) * V);
	f->queue = malloc(sizeof(*f->queue) * V);
	if (!f->head || !f->next || !f->to || !f->cap || !f->level || !f->iter || !f->queue) {
		return MP_ENOMEM;
	}
	memset(f->head, 0xff, sizeof(*f->head) * V); /* UINT32_MAX: no edge */
	return 0;
}

/* m[e] = M_e and *k = K (see the file comment); false when the loads span
 * more than 60 binary orders or their sum times G does not fit. */
static bool scale_units(const struct pl_prob *prob, u128 *m, int *k)
{
	if (!pl_x_mantissas(prob, 60, m, k)) {
		return false;
	}
	u128 total = 0;
	for (uint32_t e = 0; e < prob->E; e++) {
		total += m[e];
	}
	return prob->G > 0 && total < ((u128)1 << 100) / prob->G;
}

int pl_x_weighted_mean(const struct pl_prob *prob, const uint32_t *slot, double *slot_load,
		       bool *found)
{
	*found = false;
	if (!(prob->sum > 0) || prob->G == 0 || prob->S == 0) {
		return 0;
	}
	uint32_t E = prob->E;
	uint32_t G = prob->G;
	u128 *m = calloc(E, sizeof(*m));
	struct flow f;
	int rc = flow_alloc(&f, E + G + 2, E + prob->N + G);
	int k = 0;
	if (!m || rc != 0) {
		rc = MP_ENOMEM;
		goto out;
	}
	if (!scale_units(prob, m, &k)) {
		goto out;
	}
	uint32_t s = E + G;
	uint32_t t = E + G + 1;
	u128 total = 0;
	for (uint32_t e = 0; e < E; e++) {
		add_edge(&f, s, e, m[e] * G);
		total += m[e];
	}
	uint32_t first_slot_edge = f.nedge;
	for (uint32_t p = 0; p < prob->N; p++) {
		add_edge(&f, slot[p], E + p / prob->S, m[slot[p]] * G);
	}
	for (uint32_t g = 0; g < G; g++) {
		add_edge(&f, E + g, t, total);
	}
	if (max_flow(&f, s, t) != total * G) {
		goto out;
	}
	*found = true;
	for (uint32_t p = 0; p < prob->N; p++) {
		/* the reverse edge holds the flow sent over slot p's edge */
		u128 fl = f.cap[first_slot_edge + 2 * p + 1];
		slot_load[p] = ldexp((double)fl / G, k);
	}
out:
	free(m);
	flow_free(&f);
	return rc;
}
