/* Re-planning: one layer's search state (struct rp_state) over its instance
 * (struct rp_instance): slots, replica counts, per-GPU copies and loads, and the
 * moves counted from the current map. */
#include "replan/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void rp_state_free(struct rp_state *st)
{
	free(st->slot);
	free(st->replicas);
	free(st->count);
	free(st->load);
	free(st->order);
	free(st->next);
	free(st->head);
	memset(st, 0, sizeof(*st));
}

int rp_state_alloc(struct rp_state *st, const struct rp_instance *inst)
{
	memset(st, 0, sizeof(*st));
	st->slot = calloc(inst->N, sizeof(*st->slot));
	st->replicas = calloc(inst->E, sizeof(*st->replicas));
	st->count = calloc((size_t)inst->G * inst->E, sizeof(*st->count));
	st->load = calloc(inst->G, sizeof(*st->load));
	st->order = calloc(inst->G, sizeof(*st->order));
	st->next = calloc(inst->N, sizeof(*st->next));
	st->head = calloc(inst->E, sizeof(*st->head));
	if (!st->slot || !st->replicas || !st->count || !st->load || !st->order || !st->next ||
	    !st->head) {
		rp_state_free(st);
		return MP_ENOMEM;
	}
	return 0;
}

static void state_sort(struct rp_state *st, const struct rp_instance *inst)
{
	/* insertion sort: G is small and the order changes little per step */
	uint32_t G = inst->G;
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
void rp_state_eval(struct rp_state *st, const struct rp_instance *inst)
{
	for (uint32_t g = 0; g < inst->G; g++) {
		st->load[g] = 0;
	}
	for (uint32_t p = 0; p < inst->N; p++) {
		uint32_t e = st->slot[p];
		st->load[p / inst->S] += share(inst, e, st->replicas[e]);
	}
	state_sort(st, inst);
}

static void state_link(struct rp_state *st, uint32_t p, uint32_t e)
{
	st->next[p] = st->head[e];
	st->head[e] = p;
}

static void state_unlink(struct rp_state *st, uint32_t p, uint32_t e)
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
int rp_move_delta(const struct rp_state *st, const struct rp_instance *inst, uint32_t g, uint32_t e,
		  uint32_t f)
{
	int d = 0;
	if (count_get(st->count, inst, g, e) <= count_get(inst->orig_count, inst, g, e)) {
		d++;
	}
	if (count_get(st->count, inst, g, f) < count_get(inst->orig_count, inst, g, f)) {
		d--;
	}
	return d;
}

/* Set slot p to expert f (structure only; call rp_state_eval after). */
void rp_state_set(struct rp_state *st, const struct rp_instance *inst, uint32_t p, uint32_t f)
{
	uint32_t e = st->slot[p];
	uint32_t g = p / inst->S;
	if (e == f) {
		return;
	}
	int d = rp_move_delta(st, inst, g, e, f);
	st->moves = (uint32_t)((int64_t)st->moves + d);
	state_unlink(st, p, e);
	state_link(st, p, f);
	st->replicas[e]--;
	st->replicas[f]++;
	(*count_at(st->count, inst, g, e))--;
	(*count_at(st->count, inst, g, f))++;
	st->slot[p] = f;
}

void rp_state_load(struct rp_state *st, const struct rp_instance *inst, const uint32_t *map)
{
	memset(st->replicas, 0, sizeof(*st->replicas) * inst->E);
	memset(st->count, 0, sizeof(*st->count) * (size_t)inst->G * inst->E);
	for (uint32_t e = 0; e < inst->E; e++) {
		st->head[e] = UINT32_MAX;
	}
	for (uint32_t g = 0; g < inst->G; g++) {
		st->order[g] = g;
	}
	for (uint32_t p = inst->N; p-- > 0;) {
		uint32_t e = map[p];
		st->slot[p] = e;
		st->replicas[e]++;
		(*count_at(st->count, inst, p / inst->S, e))++;
		state_link(st, p, e);
	}
	/* moves = N - sum over GPUs of the multiset overlap with orig */
	uint64_t keep = 0;
	for (uint32_t g = 0; g < inst->G; g++) {
		for (uint32_t q = g * inst->S; q < (g + 1) * inst->S; q++) {
			uint32_t e = inst->orig[q];
			/* count each (g, e) once */
			bool first = true;
			for (uint32_t t = g * inst->S; t < q; t++) {
				if (inst->orig[t] == e) {
					first = false;
					break;
				}
			}
			if (first) {
				uint16_t a = count_get(st->count, inst, g, e);
				uint16_t b = count_get(inst->orig_count, inst, g, e);
				keep += a < b ? a : b;
			}
		}
	}
	st->moves = (uint32_t)(inst->N - keep);
	rp_state_eval(st, inst);
}

/* The busiest-GPU load of a map (evaluated as it stands). */
double rp_map_max(const struct rp_instance *inst, const uint32_t *map, struct rp_state *tmp)
{
	rp_state_load(tmp, inst, map);
	return tmp->max;
}

bool rp_state_has_dup(const struct rp_state *st, const struct rp_instance *inst)
{
	for (size_t i = 0; i < (size_t)inst->G * inst->E; i++) {
		if (st->count[i] > 1) {
			return true;
		}
	}
	return false;
}
