/* A map's loads and per-rank routes under an engine's dispatch (issue 24),
 * walking the rows as SGLang walks them. SGLang's static dispatch draws
 * from one random stream per node across every row of its map, one per
 * hidden layer (expert_location.py,
 * compute_logical_to_rank_dispatch_physical_map at sgl-project/sglang
 * 60d36e7), so the rows a moeplan plan does not place (dense layers: the
 * trivial row; MoE layers without loads: the nearest placed row,
 * mp_map_row_source) move the streams as well. An engine map's rows are
 * the hidden layers already. */
#include "cli.h"

#include <stdlib.h>

#include "moeplan/dispatch.h"
#include "moeplan/traffic.h"

/* One row: its GPU loads into gpu (NULL: none) or its routes into route. */
static int row(const struct mp_dispatch *d, struct mp_dispatch_streams *st, const struct mp_placement *map,
	       const uint32_t *slot_expert, const double *w, double *gpu, uint32_t *route)
{
	if (route) {
		return mp_dispatch_layer_route(d, st, slot_expert, map->n_experts, map->gpus, map->slots_per_gpu,
					       route);
	}
	return mp_dispatch_layer(d, st, slot_expert, map->n_experts, map->gpus, map->slots_per_gpu, w, NULL,
				 NULL, gpu);
}

/* The walk: own NULL = row h of map is the engine's row h; else as
 * cli_engine_loads_exported. Per placed row r, gpu + r * G or route +
 * r * G * E (exactly one of them non-NULL). */
static int walk(const struct mp_dispatch *d, const struct mp_placement *map, const uint32_t *own,
		const uint32_t *moe, uint32_t n_moe, const uint32_t *row_loads, const struct mp_loads *loads,
		double *gpu, uint32_t *route)
{
	const uint32_t G = map->gpus, E = map->n_experts, N = map->gpus * map->slots_per_gpu;
	const uint32_t P = d->gpus_per_node ? d->gpus_per_node : G;
	if (G % P != 0 || (own && map->n_layers == 0)) {
		return MP_EINVAL;
	}
	uint32_t *trivial = malloc((size_t)N * sizeof(*trivial));
	struct mp_dispatch_streams *st = mp_dispatch_streams_new(G / P);
	int rc = trivial && st ? 0 : MP_ENOMEM;
	for (uint32_t p = 0; trivial && p < N; p++) {
		trivial[p] = p % E;
	}
	const uint32_t end = own ? own[map->n_layers - 1] + 1 : map->n_layers;
	for (uint32_t h = 0; h < end && rc == 0; h++) {
		uint32_t r = own ? mp_map_row_source(h, moe, n_moe, own, map->n_layers) : h;
		bool placed = r != UINT32_MAX && (!own || own[r] == h);
		const double *w = placed && row_loads && row_loads[r] != UINT32_MAX
			? mp_loads_row(loads, row_loads[r]) : NULL;
		const uint32_t *se = r != UINT32_MAX ? map->layers[r].slot_expert : trivial;
		if (placed) {
			rc = row(d, st, map, se, w, gpu ? gpu + (size_t)r * G : NULL,
				 route ? route + (size_t)r * G * E : NULL);
		} else {
			rc = mp_dispatch_layer(d, st, se, E, G, map->slots_per_gpu, NULL, NULL, NULL, NULL);
		}
	}
	mp_dispatch_streams_free(st);
	free(trivial);
	return rc;
}

int cli_engine_loads(const struct mp_dispatch *d, const struct mp_placement *map,
		     const uint32_t *row_loads, const struct mp_loads *loads, double **gpu)
{
	return cli_engine_loads_exported(d, map, NULL, NULL, 0, row_loads, loads, gpu);
}

int cli_engine_loads_exported(const struct mp_dispatch *d, const struct mp_placement *map,
			      const uint32_t *own, const uint32_t *moe, uint32_t n_moe,
			      const uint32_t *row_loads, const struct mp_loads *loads, double **gpu)
{
	*gpu = NULL;
	double *out = calloc((size_t)(map->n_layers ? map->n_layers : 1) * map->gpus, sizeof(*out));
	int rc = out ? walk(d, map, own, moe, n_moe, row_loads, loads, out, NULL) : MP_ENOMEM;
	if (rc != 0) {
		free(out);
		return rc;
	}
	*gpu = out;
	return 0;
}

int cli_engine_route(const struct mp_dispatch *d, const struct mp_placement *map, const uint32_t *own,
		     const uint32_t *moe, uint32_t n_moe, uint32_t **route)
{
	*route = NULL;
	size_t n = (size_t)(map->n_layers ? map->n_layers : 1) * map->gpus * map->n_experts;
	uint32_t *out = malloc(n * sizeof(*out));
	int rc = out ? walk(d, map, own, moe, n_moe, NULL, NULL, NULL, out) : MP_ENOMEM;
	if (rc != 0) {
		free(out);
		return rc;
	}
	*route = out;
	return 0;
}
