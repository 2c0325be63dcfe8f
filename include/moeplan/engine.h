/* moeplan: an engine profile, what the serving engine does (issue 23 item 4).
 *
 * The step, capacity and placement models describe an ideal engine unless
 * told otherwise: every overlap mode, DeepEP's low-latency kernels for
 * decode and normal ones for prefill, a fixed 3.9 GB runtime reserve, each
 * replica taking 1/r of its expert's tokens. A profile says what a real
 * engine runs instead:
 *
 *   dispatch            how a rank picks a replica (dispatch.h): even, sglang, vllm
 *   overlaps            the overlap modes it can run (none, two_batch, full)
 *   kernels             DeepEP kernels per phase (low_latency, normal)
 *   memory              how it holds HBM (capacity.h, mp_memory_rule)
 *   drafter             whether it runs an MTP drafter
 *
 * The shipped profiles are plans/engines/NAME.yaml (moeplan-formats(5),
 * "Engine profile"); `sglang` and `vllm` are also built in
 * (mp_engine_builtin), equal to those files (tests/test-engine.c loads both
 * and compares). Their sources:
 *  - sglang: sgl-project/sglang 60d36e7be python/sglang/srt/server_args.py:
 *    --enable-two-batch-overlap (two_batch; no fused dispatch-GEMM-combine,
 *    so no `full`), --deepep-mode auto (low_latency for decode, normal for
 *    prefill), --mem-fraction-static set by the plan's launch line to
 *    (weights + KV) / HBM (so moeplan's reserve, MP_MEMORY_RESERVE; a
 *    profile may model SGLang's own default, MP_MEMORY_SGLANG_AUTO),
 *    the nearest-replica dispatch of expert_location.py (dispatch.h),
 *    --ep-dispatch-algorithm static.
 *  - vllm: vllm-project/vllm docs/design/dbo.md (--enable-dbo: two
 *    micro-batches, DeepEP only, DP + EP), one VLLM_ALL2ALL_BACKEND for
 *    both phases (deepep_low_latency for decode-heavy work), and
 *    vllm/config/cache.py@002f10e0 gpu_memory_utilization default 0.92. */
#ifndef MOEPLAN_ENGINE_H
#define MOEPLAN_ENGINE_H

#include <stdbool.h>

#include "moeplan/capacity.h"
#include "moeplan/dispatch.h"
#include "moeplan/step.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mp_engine_profile {
	char *name;                        /**< owned */
	char *source;                      /**< owned; where the facts come from; may be NULL */
	char *path;                        /**< owned; the file, NULL when built in */
	enum mp_dispatch_rule dispatch;    /**< replica choice (default even) */
	enum mp_dispatch_algorithm ep_dispatch_algorithm; /**< SGLang's (default static) */
	unsigned overlaps;                 /**< bit (1 << mp_step_overlap) per mode it runs; 0 = all */
	enum mp_step_kernel kernel[2];     /**< [0] prefill, [1] decode; AUTO = the step's default */
	enum mp_memory_rule memory;        /**< default MP_MEMORY_RESERVE */
	double memory_fraction;            /**< STATIC_FRACTION, UTILIZATION: in (0, 1] */
	uint64_t reserve_bytes;            /**< RESERVE and UTILIZATION; 0 = moeplan's default */
	struct mp_sglang_memory sglang;    /**< SGLANG_AUTO's inputs besides HBM and width */
	bool drafter;                      /**< runs an MTP drafter (default true) */
};

/** An ideal engine: everything allowed, moeplan's defaults. */
MP_EXPORT void mp_engine_profile_init(struct mp_engine_profile *e);
/** Free; accepts NULL. */
MP_EXPORT void mp_engine_profile_finish(struct mp_engine_profile *e);

/** The built-in profile `name` ("sglang" or "vllm"; the same as
 * plans/engines/NAME.yaml) into *out (initialised, replaced). Returns 0,
 * MP_EINVAL (another name) or MP_ENOMEM. */
MP_EXPORT int mp_engine_builtin(const char *name, struct mp_engine_profile *out);

/** Whether the engine runs overlap mode o. */
MP_EXPORT bool mp_engine_allows_overlap(const struct mp_engine_profile *e, enum mp_step_overlap o);

/** "none, two_batch" etc.: the modes it runs, comma-separated, into buf. */
MP_EXPORT void mp_engine_overlaps_text(const struct mp_engine_profile *e, char *buf, size_t size);

/** The DeepEP kernel the engine runs in a phase (AUTO: the step's
 * default, low_latency for decode, normal for prefill). */
MP_EXPORT enum mp_step_kernel mp_engine_kernel(const struct mp_engine_profile *e, bool prefill);

/** The capacity options under the engine's memory rule: memory,
 * memory_fraction, sglang and (when set) reserve_bytes of *opts are
 * replaced; the rest kept. drafter: the model runs its MTP drafter (SGLang
 * reserves 2 GiB more for it). */
MP_EXPORT void mp_engine_capacity_options(const struct mp_engine_profile *e, bool drafter,
					  struct mp_capacity_options *opts);

struct mp_doc;
/** The profile as a map: name ("even" for an ideal engine), path, source,
 * dispatch, ep_dispatch_algorithm (sglang only), overlaps ("none,
 * two_batch"), kernels {prefill, decode}, memory (reserve,
 * mem_fraction_static, mem_fraction_static auto, gpu_memory_utilization),
 * memory_fraction (when fixed), drafter. NULL on allocation failure. */
MP_EXPORT struct mp_doc *mp_engine_profile_to_doc(const struct mp_engine_profile *e);

#ifdef __cplusplus
}
#endif

#endif
