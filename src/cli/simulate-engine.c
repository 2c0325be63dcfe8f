/* simulate --engine (issue 24): where each GPU's visits of each expert go
 * under an engine's dispatch, as mp_simulate_options.route takes it
 * (GPU ids, MP_SIMULATE_ANY for uniform among the replicas), from
 * mp_dispatch_layer_route walked over the map as SGLang walks it
 * (engine-walk.c). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "moeplan/dispatch.h"
#include "moeplan/replan.h"
#include "moeplan/simulate.h"

/* The MoE layers: the model's, else the rows the plan places. */
static uint32_t *moe_layers(const struct mp_model *model, const uint32_t *own, uint32_t n_own, uint32_t *n)
{
	*n = model && model->moe_layers ? model->moe_layers : n_own;
	uint32_t *m = malloc((size_t)(*n ? *n : 1) * sizeof(*m));
	for (uint32_t k = 0; m && k < *n; k++) {
		m[k] = model && model->moe_layers ? mp_model_moe_layer_id(model, k) : own[k];
	}
	return m;
}

int cli_simulate_route(const char *plan, const char *phase, const struct mp_model *model,
		       const struct mp_dispatch *d, const struct mp_placement *map, uint32_t **route,
		       bool *dense_assumed)
{
	uint32_t *own = NULL, n_own = 0, *moe = NULL, n_moe = 0, *slots = NULL;
	*route = NULL;
	*dense_assumed = false;
	struct mp_diags quiet;
	mp_diags_init(&quiet);
	int rc = plan ? mp_map_row_layers(plan, phase, &own, &n_own, &quiet) : MP_EINVAL;
	mp_diags_finish(&quiet);
	if (rc != 0 || n_own != map->n_layers || n_own == 0) {
		free(own); /* an engine map: row r is hidden layer r */
		own = NULL;
		n_own = 0;
	}
	rc = 0;
	if (own) {
		moe = moe_layers(model, own, n_own, &n_moe);
		rc = moe ? 0 : MP_ENOMEM;
		*dense_assumed = !(model && model->moe_layers) && own[n_own - 1] + 1 != n_own;
	}
	if (rc == 0) {
		rc = cli_engine_route(d, map, own, moe, n_moe, &slots);
	}
	const size_t n = (size_t)map->n_layers * map->gpus * map->n_experts;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		slots[i] = slots[i] == MP_DISPATCH_SPLIT ? MP_SIMULATE_ANY : slots[i] / map->slots_per_gpu;
	}
	free(own);
	free(moe);
	if (rc != 0) {
		free(slots);
		return rc;
	}
	*route = slots;
	return 0;
}

int cli_simulate_route_rows(uint32_t **route, const uint32_t *rows, uint32_t n_rows, uint32_t gpus,
			    uint32_t n_experts)
{
	const size_t per = (size_t)gpus * n_experts;
	uint32_t *out = malloc((n_rows ? n_rows : 1) * per * sizeof(*out));
	if (!out) {
		return MP_ENOMEM;
	}
	for (uint32_t r = 0; r < n_rows; r++) {
		memcpy(out + r * per, *route + (size_t)rows[r] * per, per * sizeof(*out));
	}
	free(*route);
	*route = out;
	return 0;
}
