/* moeplan: a placement in the serving engines' own formats.
 *
 * SGLang: the JSON that `--init-expert-location FILE.json` reads,
 *   {"physical_to_logical_map": [[...], ...]}   [layers][physical experts]
 * with nothing else in it: SGLang passes the keys of that object as keyword
 * arguments to ExpertLocationMetadata.init_by_mapping (sgl-project/sglang,
 * python/sglang/srt/eplb/expert_location.py,
 * compute_initial_expert_location_metadata), so any other key is an error
 * there. Physical expert p lives on EP rank p / (physical experts / ep_size)
 * (same file, _compute_gpu_id_of_physical_expert): slots on GPU g are
 * g*S .. g*S+S-1, as in moeplan. Launch with --ep-size G and
 * --ep-num-redundant-experts N - E (num_physical_experts = num_logical +
 * ep_num_redundant_experts, same file, _init_common).
 *
 * vLLM: the three tensors of its EPLB state (vllm-project/vllm,
 * vllm/distributed/eplb/eplb_state.py, class EplbState):
 *   physical_to_logical_map  [layers][physical experts]
 *   logical_to_physical_map  [layers][logical experts][num_redundant_experts + 1],
 *                            each expert's physical ids ascending, padded with -1
 *   logical_replica_count    [layers][logical experts]
 * plus "ep_size" and "num_redundant_experts" (N - E) for reference; vLLM
 * places physical expert p on EP rank p / (N / ep_size) likewise.
 */
#ifndef MOEPLAN_EXPORT_H
#define MOEPLAN_EXPORT_H

#include <stdbool.h>

#include "moeplan/doc.h"
#include "moeplan/placement.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mp_export_format {
	MP_EXPORT_SGLANG = 0,
	MP_EXPORT_VLLM,
};

/** Parse "sglang" or "vllm" (case-insensitive). Returns 0 or MP_EINVAL. */
int mp_export_parse(const char *name, enum mp_export_format *out);

/** Lower-case name of a format. */
const char *mp_export_name(enum mp_export_format format);

/** The engine document of a placement's maps (the layers' slot_expert;
 * loads are not used). Returns a new tree, or NULL on allocation failure or
 * when an expert id is out of range (>= n_experts). */
struct mp_doc *mp_export_doc(const struct mp_placement *placement, enum mp_export_format format);

/** Write mp_export_doc as JSON to path atomically ("-" = stdout).
 * Returns 0, MP_EINVAL (an id out of range), MP_ENOMEM or MP_EIO. */
int mp_export_save(const struct mp_placement *placement, enum mp_export_format format,
		   const char *path);

/** The engine flags that match a placement, one line:
 * SGLang "--ep-size G --ep-num-redundant-experts R --init-expert-location FILE";
 * vLLM "--enable-expert-parallel --enable-eplb --eplb-config
 * '{"num_redundant_experts": R}'" with the data-parallel size G. file may be
 * NULL (then "FILE"). Writes at most size bytes into buf (NUL-terminated). */
void mp_export_flags(const struct mp_placement *placement, enum mp_export_format format,
		     const char *file, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
