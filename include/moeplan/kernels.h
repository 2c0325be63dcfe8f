/* moeplan: kernel efficiency as data (issue 23).
 *
 * A kernel table holds, for one GPU, published measurements of the kernels a
 * serving step runs, each row with its shape, its measured time and the
 * roofline time at the datasheet peaks (max(bytes / B_hbm, FLOP / P)); its
 * efficiency is roofline / measured, the achieved fraction of the binding
 * roof. The shipped tables are hardware/kernels/GPU.csv (built by
 * tests/bench/kernel-tables-build.py from DeepGEMM@327ec92f's README tables
 * and aiconfigurator@095f58a5's SGLang 0.5.10 collections; every table names
 * its sources in its header lines).
 *
 * Lookup axes per kind (primary, secondary):
 *   gemm_dense, gemm_masked, gemm_contiguous   (M rows per group, K)
 *   moe_block                                  (local experts, tokens per GPU)
 *   mla_decode                                 (batch, context tokens)
 * N is kept in the rows but not an axis.
 *
 * Units: times in seconds, sizes as counts. */
#ifndef MOEPLAN_KERNELS_H
#define MOEPLAN_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mp_kernel_kind {
	MP_KERNEL_GEMM_DENSE = 0,
	MP_KERNEL_GEMM_MASKED,
	MP_KERNEL_GEMM_CONTIGUOUS,
	MP_KERNEL_MOE_BLOCK,
	MP_KERNEL_MLA_DECODE,
	MP_KERNEL_KIND_COUNT
};

/** One measurement. Absent sizes are 0. */
struct mp_kernel_row {
	enum mp_kernel_kind kind;
	double m, k, n, groups, experts, context;
	double measured_s;  /**< published time */
	double roofline_s;  /**< max(bytes / B, FLOP / P) at the table's peaks */
	double efficiency;  /**< roofline_s / measured_s, in (0, 1.5] */
};

struct mp_kernel_table {
	struct mp_kernel_row *rows; /**< owned */
	size_t n_rows;
};

/** "gemm_dense", "gemm_masked", "gemm_contiguous", "moe_block", "mla_decode". */
MP_EXPORT const char *mp_kernel_kind_name(enum mp_kernel_kind kind);
/** Parse those names. Returns 0 or MP_EINVAL. */
MP_EXPORT int mp_kernel_kind_parse(const char *name, enum mp_kernel_kind *out);

/** A row's lookup axes (see above): *primary and *secondary. */
MP_EXPORT void mp_kernel_row_axes(const struct mp_kernel_row *row, double *primary,
				  double *secondary);

/** Efficiency of kind at (primary, secondary), both > 0: among the rows of
 * that kind, the two measured primary values that bracket the query; at
 * each, the two measured secondary values (of rows with that primary) that
 * bracket it; linear in log(primary) and log(secondary); rows with equal
 * axes are averaged. Outside the measured range the nearest measured value
 * is used (clamped) and *clamped (may be NULL) is set true.
 * Returns 0, MP_ENOFIT when the table has no row of that kind (the caller
 * falls back to the scalar factors), MP_EINVAL for a non-positive or
 * non-finite axis. */
MP_EXPORT int mp_kernel_lookup(const struct mp_kernel_table *table, enum mp_kernel_kind kind,
			       double primary, double secondary, double *efficiency, bool *clamped);

/** Whether the rows of kind fit an expert (or GEMM) shape: every such row
 * has k 0 (not recorded: any shape) or k == hidden, and n 0 or n ==
 * intermediate. The moe_block rows are measured end to end on one expert
 * shape (the shipped ones: DeepSeek-V3, hidden 7168 x intermediate 2048),
 * and their efficiency holds a fixed part that does not scale with the
 * shape, so the step uses them only for that shape (step.h). False when
 * the table has no row of kind. */
MP_EXPORT bool mp_kernel_shape_matches(const struct mp_kernel_table *table, enum mp_kernel_kind kind,
				       double hidden, double intermediate);

/** Free the rows; accepts NULL. */
MP_EXPORT void mp_kernel_table_finish(struct mp_kernel_table *table);

#ifdef __cplusplus
}
#endif

#endif
