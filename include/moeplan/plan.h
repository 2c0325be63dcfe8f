/* moeplan: the planning pipeline (scenario -> EP widths, slots, HBM,
 * roofline, placement per phase) and the plan document it writes. */
#ifndef MOEPLAN_PLAN_H
#define MOEPLAN_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "moeplan/diag.h"
#include "moeplan/doc.h"
#include "moeplan/placement.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The `placement` object of a plan (README "Plan schema"): gpus, slots,
 * slots_per_gpu, n_experts, layers[] (layer, gpu_experts [gpus][slots_per_gpu],
 * replicas [n_experts], gpu_load [gpus], max_load, mean_load, balancedness =
 * mean/max, lower_bound, gap, status, method) and physical_to_logical
 * [layers][slots] (slot p on GPU p / slots_per_gpu). layer_ids may map
 * row i to a model layer number (NULL = 0..n_layers-1). Wall times are left
 * out so that plans are byte-identical across runs.
 * Returns a new tree (caller destroys) or NULL on allocation failure. */
struct mp_doc *mp_placement_to_doc(const struct mp_placement *placement,
				   const uint32_t *layer_ids);

#ifdef __cplusplus
}
#endif

#endif
