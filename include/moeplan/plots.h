/* moeplan (private, not installed): the pictures the commands draw, data in, SVG out (svg.h):
 * the roofline with the tokens-per-expert panel (`moeplan roofline
 * --svg`), the load heatmap before and after placement (`moeplan plan`
 * and `moeplan check --svg`) and the re-plan Pareto front (`moeplan
 * replan --pareto --svg`).
 *
 * Inputs are plain arrays owned by the caller; nothing is computed here
 * beyond what the picture shows directly (roof, ridge, busiest-GPU factor,
 * where a curve crosses t*). Every number must be finite: a NaN or an
 * infinity in the input is refused with MP_EINVAL before anything is
 * written, so a broken upstream figure never becomes a silent gap.
 *
 * Each picture has a *_write (to a FILE) and a *_save (to a path, written
 * atomically through mp_write_atomic: on failure the path is untouched;
 * "-" is stdout). Ids in the SVG, for scripts and tests:
 *   roofline: panels "roofline", "ep"; roofs "roof-<i>", ridges
 *     "ridge-<i>", operating points "point-<i>"; curves "ep-<i>", their
 *     t* crossings "ep-<i>-cross", the t* line "t-star", panel-2 points
 *     "ep-point-<i>" (i = index in the input arrays; data-label = label);
 *   heatmap: "heatmap-before", "heatmap-after" (one <rect> per cell,
 *     row-major), "colorbar", per-row factor texts "factor-before-<row>",
 *     "factor-after-<row>" (class "factor", "factor worst" on the worst
 *     row), summaries "summary-before", "summary-after";
 *   pareto: panel "pareto", series "pareto-<i>", "lower-bound".
 */
#ifndef MOEPLAN_PLOTS_H
#define MOEPLAN_PLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "moeplan/step.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One roof: a compute class's dense peak (e.g. label "fp8",
 * peak_flops 5e15 for a GB200: the article's "5 PFLOP/s of FP8"). */
struct mp_plot_roof {
	const char *label;
	double peak_flops;       /**< FLOP/s, > 0 */
};

/** A named operating point on the roofline, e.g. "decode EP64, 60 req/GPU".
 * It is drawn on its roof, at attainable = min(peak, intensity * bandwidth)
 * (Williams, Waterman and Patterson 2009). */
struct mp_plot_op_point {
	const char *label;
	double intensity;        /**< FLOP per HBM byte, > 0 */
	size_t roof;             /**< index into roofs: the peak it runs at */
};

/** One candidate EP width's tokens per expert t against requests per GPU:
 * samples of the caller's curve (e.g. t = N_EP * b * k / E_phys, article
 * "Tokens per expert"), drawn as straight segments between samples. */
struct mp_plot_ep_curve {
	const char *label;                /**< e.g. "EP64" */
	const double *requests_per_gpu;   /**< [n], > 0 on log axes, >= 0 on linear */
	const double *tokens_per_expert;  /**< [n], same */
	size_t n;                         /**< >= 1 */
	bool does_not_fit;                /**< the width cannot hold the model in
					       HBM: drawn dashed grey, "(does not
					       fit)" appended to the label */
};

/** A named point on the second panel (requests per GPU, tokens per expert). */
struct mp_plot_xy {
	const char *label;
	double x;
	double y;
};

struct mp_plot_roofline {
	const char *title;                  /**< e.g. "GB200, V4.1-Flash"; may be NULL */
	double hbm_bw_bytes_per_s;          /**< HBM bandwidth, B/s, > 0 (GB200: 8e12) */
	const struct mp_plot_roof *roofs;   /**< [n_roofs], n_roofs >= 1 */
	size_t n_roofs;
	const struct mp_plot_op_point *points; /**< [n_points] */
	size_t n_points;
	/* Second panel; drawn when n_curves > 0. */
	const struct mp_plot_ep_curve *curves; /**< [n_curves] */
	size_t n_curves;
	const struct mp_plot_xy *ep_points; /**< [n_ep_points] named points on it */
	size_t n_ep_points;
	double t_star;                      /**< tokens per expert at the ridge
						 (article: t* ~ 192); 0 = none */
	bool linear_ep_axes;                /**< second panel linear instead of log-log */
};

/** Fill with zeros: no roofs, no points, no second panel, log-log axes. */
void mp_plot_roofline_init(struct mp_plot_roofline *plot);

/** Draw the roofline (log-log, intensity in FLOP/B against attainable
 * FLOP/s; one roof per entry of roofs with its ridge R = peak / bandwidth
 * marked, the operating points labelled) and, when curves are given, a
 * second panel of tokens per expert against requests per GPU, one line per
 * EP width, t* as a horizontal line and where each line crosses it marked
 * (the legend gives the crossing's requests per GPU).
 * Returns 0, MP_EINVAL (no roofs, a roof index out of range, a value
 * non-finite or out of range), MP_ENOMEM or MP_EIO. */
int mp_plot_roofline_write(const struct mp_plot_roofline *plot, FILE *out);
int mp_plot_roofline_save(const struct mp_plot_roofline *plot, const char *path);

/** Load per GPU per MoE layer before and after placement. */
struct mp_plot_heatmap {
	const char *title;          /**< may be NULL */
	const char *value_label;    /**< colour bar title, e.g. "tokens per step"; NULL = "load" */
	uint32_t n_layers;          /**< rows, >= 1 */
	uint32_t n_gpus;            /**< columns, >= 1 */
	const double *before;       /**< [n_layers][n_gpus] row-major, finite, >= 0 */
	const double *after;        /**< [n_layers][n_gpus], or NULL for one map */
	const char *before_label;   /**< NULL = "before: round-robin, one replica per expert" */
	const char *after_label;    /**< NULL = "after placement" */
	const uint32_t *layer_ids;  /**< [n_layers] row names, or NULL for 0..n_layers-1 */
};

/** Fill with zeros and NULLs. */
void mp_plot_heatmap_init(struct mp_plot_heatmap *plot);

/** Draw the maps side by side on one colour scale, from the smallest load
 * of either map to the largest (spanning at least 5% of the largest; a
 * colour bar beside each map, both the same), so that a colour means one
 * load in both (issue 26 item 6), and print each row's busiest-GPU factor max/mean (mean
 * over the row's GPUs; "-" for an all-zero row) beside each map, with the
 * worst and the mean factor below it. Returns 0, MP_EINVAL (a shape of 0,
 * a negative or non-finite load, more than 4096 rows or columns), MP_ENOMEM
 * or MP_EIO. */
int mp_plot_heatmap_write(const struct mp_plot_heatmap *plot, FILE *out);
int mp_plot_heatmap_save(const struct mp_plot_heatmap *plot, const char *path);

/** One trade-off curve: busiest-GPU load (y) after a number of moves (x). */
struct mp_plot_series {
	const char *label;       /**< legend text, e.g. "re-plan from observed loads" */
	const double *x;         /**< [n] moves, finite, >= 0 */
	const double *y;         /**< [n] busiest-GPU load, finite, >= 0 */
	size_t n;                /**< >= 1 */
};

struct mp_plot_pareto {
	const char *title;              /**< may be NULL */
	const char *x_label;            /**< NULL = "moves (expert copies moved)" */
	const char *y_label;            /**< NULL = "busiest-GPU load" */
	const struct mp_plot_series *series; /**< [n_series], n_series >= 1 */
	size_t n_series;
	double lower_bound;             /**< a proven bound on y, drawn dashed; 0 = none */
	const char *lower_bound_label;  /**< NULL = "lower bound" */
};

/** Fill with zeros and NULLs. */
void mp_plot_pareto_init(struct mp_plot_pareto *plot);

/** Draw each series as a step line (the load reached with x moves holds
 * until the next point) with a marker per point; points are drawn in the
 * order given (sort by x first). Returns 0, MP_EINVAL, MP_ENOMEM or MP_EIO. */
int mp_plot_pareto_write(const struct mp_plot_pareto *plot, FILE *out);
int mp_plot_pareto_save(const struct mp_plot_pareto *plot, const char *path);

/* --- deployment search (`moeplan search --svg`, plots-search.c) ----
 * Ids: panel "front", series "width-<i>" (one per EP width), "front-all"
 * (the overall front, dashed), the chosen point "chosen", the target line
 * "target"; pools: panel-less bars "pool-prefill", "pool-decode",
 * "pool-spare" with texts "pool-prefill-label", ... */

/** One EP width's own Pareto front. */
struct mp_plot_front_series {
	const char *label;     /**< e.g. "EP72" */
	const double *x;       /**< [n] tokens/s per user (decode) or TTFT s (prefill), > 0 */
	const double *y;       /**< [n] tokens/s per GPU, > 0 */
	size_t n;              /**< >= 1 */
};

struct mp_plot_front {
	const char *title;                        /**< may be NULL */
	const char *x_label;                      /**< with its unit, e.g. "tokens/s per user" */
	const char *y_label;                      /**< e.g. "output tokens/s per GPU" */
	const struct mp_plot_front_series *series;/**< [n_series], >= 1 */
	size_t n_series;
	const double *front_x, *front_y;          /**< [n_front] the overall front; n_front 0 = none */
	size_t n_front;
	bool has_chosen;
	double chosen_x, chosen_y;                /**< the chosen configuration */
	const char *chosen_label;                 /**< NULL = "chosen" */
	double target_x;                          /**< a vertical line at the target (0 = none) */
	const char *target_label;                 /**< NULL = "target" */
	bool log_x;                               /**< x on a log axis */
};

/** Fill with zeros and NULLs. */
void mp_plot_front_init(struct mp_plot_front *plot);

/** Draw each width's front as a line with markers (one colour per width),
 * the overall front dashed over them, the target as a vertical line and
 * the chosen point marked and labelled. Returns 0, MP_EINVAL (no series,
 * an empty series, a value not finite or not > 0), MP_ENOMEM or MP_EIO. */
int mp_plot_front_write(const struct mp_plot_front *plot, FILE *out);
int mp_plot_front_save(const struct mp_plot_front *plot, const char *path);

/** The pools as one horizontal bar of GPUs: prefill, decode and spare. */
struct mp_plot_pools {
	const char *title;         /**< may be NULL */
	uint32_t prefill_gpus;
	uint32_t decode_gpus;
	uint32_t spare_gpus;       /**< of the budget, unused */
	uint32_t prefill_unit;     /**< GPUs per prefill EP group (for the label) */
	uint32_t decode_unit;
};

/** Draw the bar, each part labelled with its GPUs, groups and share, and
 * an axis of GPUs under it. Returns 0, MP_EINVAL (no GPUs at all),
 * MP_ENOMEM or MP_EIO. */
int mp_plot_pools_write(const struct mp_plot_pools *plot, FILE *out);
int mp_plot_pools_save(const struct mp_plot_pools *plot, const char *path);

/** One bar of mp_plot_step_bars: a candidate width's step. */
struct mp_plot_step_bar {
	const char *label;            /**< e.g. "EP144, 148 req" (required) */
	const char *note;             /**< right of the bar, e.g. "3789 tok/s/GPU"; may be NULL */
	const struct mp_step *step;   /**< required */
	bool chosen;                  /**< label in bold */
};

struct mp_plot_step_bars {
	const char *title;            /**< may be NULL */
	const struct mp_plot_step_bar *bars;
	size_t n_bars;                /**< >= 1 */
};

/** Each width's serving step as a horizontal stacked bar of its terms
 * (step.h; ms, in the terms' order, one colour per term, a legend) with a
 * black tick at the step time, written to path atomically. Every segment
 * is a rect with id "bar-I-TERM" and a data-label with its time. Returns
 * 0, MP_EINVAL (no bars, or every time 0) or the writer's error. */
int mp_plot_step_bars_save(const struct mp_plot_step_bars *plot, const char *path);

#ifdef __cplusplus
}
#endif

#endif
