/* moeplan: reading inputs. YAML (and JSON, which libyaml parses as YAML
 * flow style) for models, hardware, traffic, scenarios and plans; CSV for
 * loads. Only this module includes <yaml.h>.
 *
 * Every loader reports every problem it finds into diags as
 * `file:line:col` records (1-based; libyaml marks are 0-based), quoting the
 * user's value, naming the field and the allowed range. Unknown keys are
 * errors with a "did you mean" suggestion; duplicate keys are errors.
 * Quantities accept plain numbers in SI base units or a unit suffix:
 * bytes "186 GB", "1.5 TiB"; bandwidth "8 TB/s"; rate "5 PFLOP/s".
 * Inputs larger than MP_MAX_INPUT_BYTES are refused.
 *
 * All loaders return 0, MP_EINVAL (bad content), MP_EIO (cannot read) or
 * MP_ENOMEM; out is untouched on failure (callers init it first and
 * finish it after either way).
 */
#ifndef MOEPLAN_LOADER_H
#define MOEPLAN_LOADER_H

#include <stdint.h>
#include <stdbool.h>

#include "moeplan/diag.h"
#include "moeplan/kernels.h"
#include "moeplan/model.h"
#include "moeplan/map.h"
#include "moeplan/scenario.h"
#include "moeplan/traffic.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MP_MAX_INPUT_BYTES (256u * 1024u * 1024u)

/** A model file (moeplan preset schema, see README "Model"), or a Hugging
 * Face config.json (recognised by `architectures`/`model_type`). */
MP_EXPORT int mp_load_model(const char *path, struct mp_model *out, struct mp_diags *diags);

/** A kernel table (kernels.h; format as hardware/kernels/h800.csv): lines
 * starting with '#' are comments; the header line must be exactly
 * kernel,m,k,n,groups,experts,context,measured_us,roofline_us,efficiency,source
 * and each row a kernel name, six sizes (empty = 0, else > 0), measured and
 * roofline times in microseconds (> 0), the efficiency (> 0, at most 1.5,
 * and within 1% of roofline / measured) and a source key. Errors are
 * path:line:col records naming the column and the allowed range. */
MP_EXPORT int mp_load_kernel_table(const char *path, struct mp_kernel_table *out,
				   struct mp_diags *diags);

/** A hardware file (README "Hardware"). */
MP_EXPORT int mp_load_hardware(const char *path, struct mp_hardware *out, struct mp_diags *diags);

/** A scenario (README "Scenario"); model and hardware paths in it are
 * resolved relative to the scenario file's folder, then to the current
 * folder. Loads the model, both phases' hardware and the traffic. */
MP_EXPORT int mp_load_scenario(const char *path, struct mp_scenario *out, struct mp_diags *diags);

/** A traffic spec in its own file: `uniform`, `{zipf: {s, seed,
 * permute}}`, `{hot: {experts, load, seed, permute}}`, `{observed: {csv:
 * PATH}}` or `{observed: {loads: [[...]]}}` (README "Traffic"); or a file
 * of observed loads itself (a CSV, or anything mp_load_loads reads), which
 * gives MP_TRAFFIC_OBSERVED. Paths resolve against the file's folder. */
MP_EXPORT int mp_load_traffic(const char *path, struct mp_traffic *out, struct mp_diags *diags);

/** Logical-expert loads, [layers][experts]: a CSV (one row per layer, one
 * column per expert, '#' comments, first comment kept as source), a YAML
 * or JSON list of lists, a mapping with `loads:`, or SGLang's
 * `{"logical_count": ...}` with shape [layers][experts] or
 * [windows][layers][experts] (windows summed). Values must be from 0 to
 * 1e18 (larger ones would overflow per-layer sums; a value that underflows,
 * like 1e-320, is taken as the subnormal or 0 it rounds to); rows must have
 * equal length. A moeplan plan or placement, or an engine's map, is
 * refused with one error saying what the file is. */
MP_EXPORT int mp_load_loads(const char *path, struct mp_loads *out, struct mp_diags *diags);

/** A physical-to-logical map: a moeplan plan (its decode phase, or the
 * bare `placement` written by `moeplan place`; `phase` picks "decode" or
 * "prefill" when the file is a full plan, NULL = decode), SGLang's
 * `{"physical_to_logical_map": [[...]]}`, vLLM's export, or a bare
 * [layers][slots] array. gpus: the GPU count when the file does not say it
 * (0 = unknown: then MP_EINVAL if the file does not give it). A moeplan
 * placement gives it as `gpus`, moeplan's vLLM export as `ep_size`; when
 * both the file and gpus give it, they must agree (else MP_EINVAL).
 * Fills out->n_layers, gpus, slots_per_gpu, n_experts (max id + 1, or the
 * plan's count) and each layer's slot_expert; loads/bounds left zero. */
MP_EXPORT int mp_load_map(const char *path, const char *phase, uint32_t gpus,
		struct mp_placement *out, struct mp_diags *diags);

/** mp_load_map, also refusing a map that puts one logical expert in two
 * slots of one GPU (moeplan's own rule; engines' maps may break it, so
 * mp_load_map takes them). Every problem with the ids is reported, each
 * at its line:col naming layer, GPU and slot (ids out of range, experts
 * twice on a GPU, experts with no slot): up to 20 records, then one
 * "... and N more problems". Returns 0 or MP_EINVAL (or MP_ENOMEM). */
MP_EXPORT int mp_load_map_strict(const char *path, const char *phase, uint32_t gpus,
		       struct mp_placement *out, struct mp_diags *diags);

/** mp_load_map (distinct false) or mp_load_map_strict (true) against a
 * known expert count n_experts (the model's routed_experts; 0 = the
 * file's count, or its largest id + 1). Ids out of range are reported
 * first, each at its line:col; a plan whose n_experts differs is refused.
 * Without a count, a map whose ids skip numbers gets its largest id named
 * first (a stray id otherwise shows as many experts with no slot).
 * Returns 0 or MP_EINVAL (or MP_ENOMEM). */
MP_EXPORT int mp_load_map_experts(const char *path, const char *phase, uint32_t gpus, uint32_t n_experts,
			bool distinct, struct mp_placement *out, struct mp_diags *diags);

/** What a moeplan plan records about its traffic: the model's top_k
 * (`model.top_k`) and the popularity it was planned for (`expert_loads`,
 * [layers][experts]). Either may be absent (*top_k 0, out left empty),
 * as in engine maps and bare placements. Returns 0, or MP_EINVAL when the
 * file does not parse or a recorded value is invalid (reported). */
MP_EXPORT int mp_load_plan_traffic(const char *path, uint32_t *top_k, struct mp_loads *out,
			 struct mp_diags *diags);

/** Parse a quantity with an optional unit into SI base units. kind is
 * "bytes" (B, kB, MB, GB, TB, PB = 1e3^n; KiB, MiB, GiB, TiB, PiB =
 * 1024^n), "bytes/s" (the same with "/s", and kbit/s .. Tbit/s = 1/8 of
 * the byte rate), "flop/s" (FLOP/s, FLOPS, OP/s or OPS with an optional
 * k, M, G, T, P, E prefix; also "TF", "PF"), "seconds" (s, ms, us, ns,
 * min, h), "count" (a token or request count: a plain number, or with the
 * SI suffix k or K = 1e3, M = 1e6: "8k" = 8,000, never 8,192) or NULL (a
 * plain number, no unit). A number without a unit is taken in the base
 * unit here; moeplan's file loaders and options refuse it for the kinds
 * with units (issue 26), as a bare "80" in hbm_bytes is rarely 80 B. Decimal numbers only ([+-]digits[.digits][e..]);
 * nan, inf, hex and values beyond a double's range are refused. Returns 0
 * or MP_EINVAL (*out untouched). */
MP_EXPORT int mp_parse_quantity(const char *text, const char *kind, double *out);

struct mp_history;
struct mp_engine_profile;

/** An engine profile (moeplan/engine.h) from YAML: name (required),
 * source, dispatch (even, sglang, vllm), ep_dispatch_algorithm (static,
 * dynamic, fake), overlaps (a list of none, two_batch, full), kernels
 * {prefill, decode} (auto, low_latency, normal), memory {exactly one of
 * mem_fraction_static (0 < f <= 1, or auto: SGLang's default),
 * gpu_memory_utilization (0 < u <= 1), reserve (bytes); dp_attention,
 * cuda_graph_max_bs, chunked_prefill_size}, drafter (bool)
 * (moeplan-formats(5) "Engine profile"). Errors `path:line:col: error: ...`
 * in diags. Returns 0, MP_EINVAL, MP_EIO or MP_ENOMEM; out replaced only on
 * success. */
MP_EXPORT int mp_load_engine_profile(const char *path, struct mp_engine_profile *out,
				     struct mp_diags *diags);

/** True when path is a series CSV: one of its leading '#' lines is
 * `# columns: iteration,layer,...` (moeplan-formats(5) "Series"). False
 * for "-", unreadable files and everything else. */
MP_EXPORT bool mp_loads_is_series(const char *path);

/** Loads as a history (moeplan/history.h), windows oldest first: each of
 * paths[n_paths] in order is a series CSV (every iteration block one
 * window, rows `iteration,layer,load_0,...`, iterations increasing, every
 * block the same layers in increasing order; layer ids kept) or any file
 * mp_load_loads reads (one window, e.g. an SGLang recorder dump). All
 * windows must have one shape. Errors `path:line:col: error: ...` in
 * diags. Returns 0, MP_EINVAL (bad input, no paths), MP_EIO or MP_ENOMEM;
 * out is replaced only on success. */
MP_EXPORT int mp_load_history(const char *const *paths, uint32_t n_paths, struct mp_history *out,
			      struct mp_diags *diags);

#ifdef __cplusplus
}
#endif

#endif
