/* Re-planning: slot canonicalisation and the relabelled from-scratch
 * plan (the Hungarian method up to RP_HUNGARIAN_MAX_GPUS GPUs, a greedy
 * matching beyond). */
#include "replan/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Hungarian method up to this many GPUs; a greedy matching beyond. */
#define RP_HUNGARIAN_MAX_GPUS 512u

/* ------------------------------------------------------------------ */
/* Slot canonicalisation and the relabelled from-scratch plan.         */

/* Given the experts each GPU should hold (set[g*S .. g*S+S-1], any order),
 * write the map that keeps every staying expert in its old slot and puts
 * the arrivals into the freed slots (ascending expert id into ascending
 * slot). */
void rp_canonical_slots(const struct rp_instance *inst, const uint32_t *set, uint32_t *out,
			unsigned char *used)
{
	uint32_t S = inst->S;
	for (uint32_t g = 0; g < inst->G; g++) {
		const uint32_t *want = set + (size_t)g * S;
		uint32_t *dst = out + (size_t)g * S;
		const uint32_t *old = inst->orig + (size_t)g * S;
		memset(used, 0, S);
		unsigned char *filled = used + S;
		memset(filled, 0, S);
		for (uint32_t i = 0; i < S; i++) {
			for (uint32_t j = 0; j < S; j++) {
				if (!used[j] && want[j] == old[i]) {
					used[j] = 1;
					filled[i] = 1;
					dst[i] = old[i];
					break;
				}
			}
		}
		/* arrivals, ascending expert id */
		for (uint32_t i = 0; i < S; i++) {
			if (filled[i]) {
				continue;
			}
			uint32_t pick = UINT32_MAX;
			for (uint32_t j = 0; j < S; j++) {
				if (!used[j] && (pick == UINT32_MAX || want[j] < want[pick])) {
					pick = j;
				}
			}
			used[pick] = 1;
			dst[i] = want[pick];
		}
	}
}

/* Hungarian method (Kuhn-Munkres, shortest augmenting paths with
 * potentials; O(n^3)) minimising cost[n][n]; assign[i] = column of row i. */
static int hungarian(const double *cost, uint32_t n, uint32_t *assign)
{
	double *u = calloc(n + 1, sizeof(*u));
	double *v = calloc(n + 1, sizeof(*v));
	double *minv = calloc(n + 1, sizeof(*minv));
	uint32_t *p = calloc(n + 1, sizeof(*p));
	uint32_t *way = calloc(n + 1, sizeof(*way));
	unsigned char *usedc = calloc(n + 1, 1);
	int rc = MP_ENOMEM;
	if (!u || !v || !minv || !p || !way || !usedc) {
		goto out;
	}
	for (uint32_t i = 1; i <= n; i++) {
		p[0] = i;
		uint32_t j0 = 0;
		for (uint32_t j = 0; j <= n; j++) {
			minv[j] = HUGE_VAL;
			usedc[j] = 0;
		}
		do {
			usedc[j0] = 1;
			uint32_t i0 = p[j0];
			double delta = HUGE_VAL;
			uint32_t j1 = 0;
			for (uint32_t j = 1; j <= n; j++) {
				if (usedc[j]) {
					continue;
				}
				double cur = cost[(size_t)(i0 - 1) * n + (j - 1)] - u[i0] - v[j];
				if (cur < minv[j]) {
					minv[j] = cur;
					way[j] = j0;
				}
				if (minv[j] < delta) {
					delta = minv[j];
					j1 = j;
				}
			}
			for (uint32_t j = 0; j <= n; j++) {
				if (usedc[j]) {
					u[p[j]] += delta;
					v[j] -= delta;
				} else {
					minv[j] -= delta;
				}
			}
			j0 = j1;
		} while (p[j0] != 0);
		do {
			uint32_t j1 = way[j0];
			p[j0] = p[j1];
			j0 = j1;
		} while (j0);
	}
	for (uint32_t j = 1; j <= n; j++) {
		assign[p[j] - 1] = j - 1;
	}
	rc = 0;
out:
	free(u);
	free(v);
	free(minv);
	free(p);
	free(way);
	free(usedc);
	return rc;
}

/* overlap[h][g]: slots of new GPU h whose expert old GPU g held (as
 * multisets: a second copy on h counts only if g held two). */
static double overlap(const struct rp_instance *inst, const uint32_t *map, uint32_t h, uint32_t g)
{
	uint32_t S = inst->S;
	double keep = 0;
	for (uint32_t i = h * S; i < (h + 1) * S; i++) {
		uint32_t e = map[i];
		uint32_t seen = 0;
		for (uint32_t j = h * S; j < i; j++) {
			seen += map[j] == e;
		}
		if (seen < count_get(inst->orig_count, inst, g, e)) {
			keep += 1;
		}
	}
	return keep;
}

/* Many GPUs: each new GPU in turn takes the free old GPU it overlaps most
 * (lowest index on ties, the lowest free GPU when it overlaps none). Only
 * old GPUs that hold one of its experts are looked at (an index from
 * expert to old GPUs), so time and memory grow with N, not G^2. */
static int relabel_greedy(const struct rp_instance *inst, const uint32_t *map, uint32_t *assign)
{
	uint32_t G = inst->G;
	uint32_t S = inst->S;
	uint32_t E = inst->E;
	uint32_t N = inst->N;
	uint32_t *head = calloc((size_t)E + 1, sizeof(*head));
	uint32_t *list = malloc(sizeof(*list) * N);
	uint32_t *stamp = calloc(G, sizeof(*stamp));
	unsigned char *taken = calloc(G, 1);
	int rc = MP_ENOMEM;
	if (!head || !list || !stamp || !taken) {
		goto out;
	}
	for (uint32_t p = 0; p < N; p++) {
		head[inst->orig[p] + 1]++;
	}
	for (uint32_t e = 0; e < E; e++) {
		head[e + 1] += head[e];
	}
	for (uint32_t p = 0; p < N; p++) {
		/* slots in ascending order: each expert's GPUs come out sorted */
		uint32_t e = inst->orig[p];
		list[head[e]++] = p / S;
	}
	for (uint32_t e = E; e > 0; e--) {
		head[e] = head[e - 1];
	}
	head[0] = 0;
	uint32_t lowest_free = 0;
	for (uint32_t h = 0; h < G; h++) {
		uint32_t pick = UINT32_MAX;
		double best = 0;
		for (uint32_t i = h * S; i < (h + 1) * S; i++) {
			uint32_t e = map[i];
			for (uint32_t k = head[e]; k < head[e + 1]; k++) {
				uint32_t g = list[k];
				if (taken[g] || stamp[g] == h + 1) {
					continue;
				}
				stamp[g] = h + 1;
				double keep = overlap(inst, map, h, g);
				if (keep > best || (keep == best && keep > 0 && g < pick)) {
					best = keep;
					pick = g;
				}
			}
		}
		if (pick == UINT32_MAX) {
			while (taken[lowest_free]) {
				lowest_free++;
			}
			pick = lowest_free;
		}
		taken[pick] = 1;
		assign[h] = pick;
	}
	rc = 0;
out:
	free(head);
	free(list);
	free(stamp);
	free(taken);
	return rc;
}

/* Relabel the GPUs of a plan (map[N]) to keep as many experts in place as
 * possible, then canonicalise its slots: out[N]. Up to
 * RP_HUNGARIAN_MAX_GPUS GPUs the assignment is optimal (Hungarian method
 * on a G x G matrix); beyond, greedy over an expert index. */
int rp_relabel(const struct rp_instance *inst, const uint32_t *map, uint32_t *out,
	       unsigned char *used)
{
	uint32_t G = inst->G;
	uint32_t S = inst->S;
	double *cost = NULL;
	uint32_t *assign = malloc(sizeof(*assign) * G);
	uint32_t *set = malloc(sizeof(*set) * inst->N);
	int rc = MP_ENOMEM;
	if (!assign || !set) {
		goto out;
	}
	if (G <= RP_HUNGARIAN_MAX_GPUS) {
		cost = malloc(sizeof(*cost) * (size_t)G * G);
		if (!cost) {
			goto out;
		}
		for (uint32_t h = 0; h < G; h++) {
			for (uint32_t g = 0; g < G; g++) {
				cost[(size_t)h * G + g] = -overlap(inst, map, h, g);
			}
		}
		rc = hungarian(cost, G, assign);
	} else {
		rc = relabel_greedy(inst, map, assign);
	}
	if (rc) {
		goto out;
	}
	for (uint32_t h = 0; h < G; h++) {
		memcpy(set + (size_t)assign[h] * S, map + (size_t)h * S, sizeof(*set) * S);
	}
	rp_canonical_slots(inst, set, out, used);
	rc = 0;
out:
	free(cost);
	free(assign);
	free(set);
	return rc;
}
