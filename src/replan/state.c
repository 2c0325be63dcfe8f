/* Re-planning: one layer's search state (struct rs) over its instance
 * (struct rp): slots, replica counts, per-GPU copies and loads, and the
 * moves counted from the current map. */
#include "replan/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void rs_free(struct rs *st)
{
	free(st->slot);
	free(st->r);
	free(st->cnt);
	free(st->load);
	free(st->order);
	free(st->next);
	free(st->head);
	memset(st, 0, sizeof(*st));
}

int rs_alloc(struct rs *st, const struct rp *pr)
{
	memset(st, 0, sizeof(*st));
	st->slot = calloc(pr->N, sizeof(*st->slot));
	st->r = calloc(pr->E, sizeof(*st->r));
	st->cnt = calloc((size_t)pr->G * pr->E, sizeof(*st->cnt));
	st->load = calloc(pr->G, sizeof(*st->load));
	st->order = calloc(pr->G, sizeof(*st->order));
	st->next = calloc(pr->N, sizeof(*st->next));
	st->head = calloc(pr->E, sizeof(*st->head));
	if (!st->slot || !st->r || !st->cnt || !st->load || !st->order || !st->next || !st->head) {
		rs_free(st);
		return MP_ENOMEM;
	}
	return 0;
}

static void rs_sort(struct rs *st, const struct rp *pr)
{
	/* insertion sort: G is small and the order changes little per step */
	uint32_t G = pr->G;
	for (uint32_t i = 1; i < G; i++) {
		uint32_t g = st->order[i];
		uint32_t j = i;
		while (j > 0) {
			uint32_t h = st->order[j - 1];
			if (st->load[h] > st->load[g] || (st->load[h] == st->load[g] && h < g)) {
				break;
			}
			st->order[j] = h;
			j--;
		}
		st->order[j] = g;
	}
	st->max = G ? st->load[st->order[0]] : 0.0;
}

/* Loads from scratch (exact, no drift). */
void rs_eval(struct rs *st, const struct rp *pr)
{
	for (uint32_t g = 0; g < pr->G; g++) {
		st->load[g] = 0;
	}
	for (uint32_t p = 0; p < pr->N; p++) {
		uint32_t e = st->slot[p];
		st->load[p / pr->S] += share(pr, e, st->r[e]);
	}
	rs_sort(st, pr);
}

static void rs_link(struct rs *st, uint32_t p, uint32_t e)
{
	st->next[p] = st->head[e];
	st->head[e] = p;
}

static void rs_unlink(struct rs *st, uint32_t p, uint32_t e)
{
	uint32_t *at = &st->head[e];
	while (*at != UINT32_MAX && *at != p) {
		at = &st->next[*at];
	}
	if (*at == p) {
		*at = st->next[p];
	}
	st->next[p] = UINT32_MAX;
}

/* Moves added when GPU g loses one copy of e and gains one of f (counts
 * before the change): a kept copy lost costs one, a lost copy regained
 * saves one. */
int move_delta(const struct rs *st, const struct rp *pr, uint32_t g, uint32_t e, uint32_t f)
{
	int d = 0;
	if (cnt_get(st->cnt, pr, g, e) <= cnt_get(pr->ocnt, pr, g, e)) {
		d++;
	}
	if (cnt_get(st->cnt, pr, g, f) < cnt_get(pr->ocnt, pr, g, f)) {
		d--;
	}
	return d;
}

/* Set slot p to expert f (structure only; call rs_eval after). */
void rs_set(struct rs *st, const struct rp *pr, uint32_t p, uint32_t f)
{
	uint32_t e = st->slot[p];
	uint32_t g = p / pr->S;
	if (e == f) {
		return;
	}
	int d = move_delta(st, pr, g, e, f);
	st->moves = (uint32_t)((int64_t)st->moves + d);
	rs_unlink(st, p, e);
	rs_link(st, p, f);
	st->r[e]--;
	st->r[f]++;
	(*cnt_at(st->cnt, pr, g, e))--;
	(*cnt_at(st->cnt, pr, g, f))++;
	st->slot[p] = f;
}

void rs_load_map(struct rs *st, const struct rp *pr, const uint32_t *map)
{
	memset(st->r, 0, sizeof(*st->r) * pr->E);
	memset(st->cnt, 0, sizeof(*st->cnt) * (size_t)pr->G * pr->E);
	for (uint32_t e = 0; e < pr->E; e++) {
		st->head[e] = UINT32_MAX;
	}
	for (uint32_t g = 0; g < pr->G; g++) {
		st->order[g] = g;
	}
	for (uint32_t p = pr->N; p-- > 0;) {
		uint32_t e = map[p];
		st->slot[p] = e;
		st->r[e]++;
		(*cnt_at(st->cnt, pr, p / pr->S, e))++;
		rs_link(st, p, e);
	}
	/* moves = N - sum over GPUs of the multiset overlap with orig */
	uint64_t keep = 0;
	for (uint32_t g = 0; g < pr->G; g++) {
		for (uint32_t q = g * pr->S; q < (g + 1) * pr->S; q++) {
			uint32_t e = pr->orig[q];
			/* count each (g, e) once */
			bool first = true;
			for (uint32_t t = g * pr->S; t < q; t++) {
				if (pr->orig[t] == e) {
					first = false;
					break;
				}
			}
			if (first) {
				uint16_t a = cnt_get(st->cnt, pr, g, e);
				uint16_t b = cnt_get(pr->ocnt, pr, g, e);
				keep += a < b ? a : b;
			}
		}
	}
	st->moves = (uint32_t)(pr->N - keep);
	rs_eval(st, pr);
}

/* The busiest-GPU load of a map (evaluated as it stands). */
double map_max(const struct rp *pr, const uint32_t *map, struct rs *tmp)
{
	rs_load_map(tmp, pr, map);
	return tmp->max;
}

bool has_dup(const struct rs *st, const struct rp *pr)
{
	for (size_t i = 0; i < (size_t)pr->G * pr->E; i++) {
		if (st->cnt[i] > 1) {
			return true;
		}
	}
	return false;
}
