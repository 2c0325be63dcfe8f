/* A moeplan plan's or placement's loads under SGLang's static dispatch as
 * the map --export writes from it runs (issue 24): SGLang walks every row
 * of that map, one per hidden layer, with one random stream per node, so
 * the rows the plan does not place (dense layers: the trivial row; MoE
 * layers without loads: the nearest placed row, mp_map_row_source) move
 * the streams as well (expert_location.py,
 * compute_logical_to_rank_dispatch_physical_map at sgl-project/sglang
 * 60d36e7). */
#include "cli.h"

#include <stdlib.h>

#include "moeplan/dispatch.h"
#include "moeplan/traffic.h"

int cli_engine_loads_exported(const struct mp_dispatch *d, const struct mp_placement *map,
			      const uint32_t *own, const uint32_t *moe, uint32_t n_moe,
			      const uint32_t *row_loads, const struct mp_loads *loads, double **gpu)
{
	const uint32_t G = map->gpus, E = map->n_experts, N = map->gpus * map->slots_per_gpu;
	const uint32_t P = d->gpus_per_node ? d->gpus_per_node : G;
	*gpu = NULL;
	if (G % P != 0 || map->n_layers == 0) {
		return MP_EINVAL;
	}
	double *out = calloc((size_t)map->n_layers * G, sizeof(*out));
	uint32_t *trivial = malloc((size_t)N * sizeof(*trivial));
	struct mp_dispatch_streams *st = mp_dispatch_streams_new(G / P);
	int rc = out && trivial && st ? 0 : MP_ENOMEM;
	for (uint32_t p = 0; trivial && p < N; p++) {
		trivial[p] = p % E;
	}
	const uint32_t last = own[map->n_layers - 1];
	for (uint32_t h = 0; h <= last && rc == 0; h++) {
		uint32_t r = mp_map_row_source(h, moe, n_moe, own, map->n_layers);
		bool placed = r != UINT32_MAX && own[r] == h;
		const double *w = placed && row_loads[r] != UINT32_MAX ? mp_loads_row(loads, row_loads[r]) : NULL;
		rc = mp_dispatch_layer(d, st, r != UINT32_MAX ? map->layers[r].slot_expert : trivial, E, G,
				       map->slots_per_gpu, w, NULL, NULL, placed ? out + (size_t)r * G : NULL);
	}
	mp_dispatch_streams_free(st);
	free(trivial);
	if (rc != 0) {
		free(out);
		return rc;
	}
	*gpu = out;
	return 0;
}
