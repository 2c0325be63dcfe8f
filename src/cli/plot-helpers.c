/* Pictures several commands draw: the load heatmap of a placement against
 * a baseline, and the roofline of a model on one GPU (cli.h). The numbers
 * come from the library (mp_place_evaluate, mp_roofline_point); the
 * drawing from plots.h. */
#include "cli.h"

#include <errno.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/capacity.h"
#include "moeplan/placement.h"
#include "moeplan/plots.h"
#include "moeplan/simulate.h"
#include "moeplan/traffic.h"

static int save_error(const char *path, int rc)
{
	int err = errno;
	cli_error("%s: cannot %s: %s", strcmp(path, "-") ? path : "stdout",
		  rc == MP_EIO ? "write" : "draw the picture", cli_write_error(rc, err));
	return EXIT_INPUT;
}

/* ---- heatmap ---- */

/* GPU loads of one layer's map under w, scaled to a mean of visits per GPU
 * (when > 0), into row[gpus]. */
static int evaluate_row(const uint32_t *slot_expert, const double *w, uint32_t n_experts,
			uint32_t gpus, uint32_t slots_per_gpu, double visits, double *row)
{
	struct mp_placement one;
	mp_placement_init(&one);
	int rc = mp_placement_alloc(&one, 1, n_experts, gpus, slots_per_gpu);
	if (rc == 0) {
		rc = mp_place_evaluate(slot_expert, w, n_experts, gpus, slots_per_gpu, &one.layers[0]);
	}
	if (rc == 0) {
		double sum = 0;
		for (uint32_t g = 0; g < gpus; g++) {
			sum += one.layers[0].gpu_load[g];
		}
		double scale = visits > 0 && sum > 0 ? visits * gpus / sum : 1.0;
		for (uint32_t g = 0; g < gpus; g++) {
			row[g] = one.layers[0].gpu_load[g] * scale;
		}
	}
	mp_placement_finish(&one);
	return rc;
}

/* max/mean of each row: worst and mean over rows with load. */
static void row_factors(const double *v, uint32_t rows, uint32_t cols, double *worst,
			uint32_t *worst_row, double *mean)
{
	double sum_f = 0;
	uint32_t counted = 0;
	*worst = 0;
	*worst_row = 0;
	for (uint32_t r = 0; r < rows; r++) {
		double sum = 0, mx = 0;
		for (uint32_t c = 0; c < cols; c++) {
			sum += v[(size_t)r * cols + c];
			mx = fmax(mx, v[(size_t)r * cols + c]);
		}
		if (sum > 0) {
			double f = mx / (sum / cols);
			sum_f += f;
			counted++;
			if (f > *worst) {
				*worst = f;
				*worst_row = r;
			}
		}
	}
	*mean = counted ? sum_f / counted : 0;
}

int cli_plot_heatmap(const struct cli_heatmap_spec *spec, struct cli_heatmap_stats *stats)
{
	const struct mp_placement *after = spec->after;
	const struct mp_placement *before = spec->before;
	const struct mp_loads *loads = spec->loads;
	uint32_t L = after->n_layers, G = after->gpus, E = after->n_experts;
	int status = EXIT_INPUT;
	int rc = 0;
	double *vb = NULL, *va = NULL;
	uint32_t *def = NULL;
	uint32_t def_spg = G ? (E + G - 1) / G : 0;
	char before_label[160];

	if (L == 0 || G == 0 || E == 0 || loads->n_experts != E ||
	    (loads->n_layers != L && loads->n_layers != 1) ||
	    (before && (before->gpus != G || before->n_experts != E ||
			(before->n_layers != L && before->n_layers != 1)))) {
		cli_error("%s: the loads or the maps to compare do not have the placement's shape "
			  "(%u layers x %u experts on %u GPUs)", spec->path, L, E, G);
		return EXIT_INPUT;
	}
	vb = calloc((size_t)L * G, sizeof(*vb));
	va = calloc((size_t)L * G, sizeof(*va));
	if (!before) {
		def = calloc((size_t)G * def_spg, sizeof(*def));
	}
	if (!vb || !va || (!before && !def)) {
		rc = MP_ENOMEM;
		goto out;
	}
	if (!before) {
		rc = mp_simulate_default_layout(E, G, def_spg, def);
		if (rc) {
			goto out;
		}
	}
	for (uint32_t l = 0; l < L && rc == 0; l++) {
		const double *w = mp_loads_row(loads, loads->n_layers == 1 ? 0 : l);
		rc = evaluate_row(after->layers[l].slot_expert, w, E, G, after->slots_per_gpu,
				  spec->visits_per_gpu, va + (size_t)l * G);
		if (rc == 0 && before) {
			const struct mp_layer_placement *b = &before->layers[before->n_layers == 1 ? 0 : l];
			rc = evaluate_row(b->slot_expert, w, E, G, before->slots_per_gpu,
					  spec->visits_per_gpu, vb + (size_t)l * G);
		} else if (rc == 0) {
			rc = evaluate_row(def, w, E, G, def_spg, spec->visits_per_gpu, vb + (size_t)l * G);
		}
	}
	if (rc) {
		goto out;
	}
	if (spec->before_label) {
		snprintf(before_label, sizeof(before_label), "%s", spec->before_label);
	} else if (before) {
		snprintf(before_label, sizeof(before_label), "before");
	} else if (E % G == 0) {
		snprintf(before_label, sizeof(before_label),
			 "before: round-robin, one replica per expert (%u per GPU)", def_spg);
	} else {
		snprintf(before_label, sizeof(before_label),
			 "before: round-robin, %u slots per GPU (experts 0-%u twice)", def_spg,
			 G * def_spg - E - 1);
	}
	struct mp_plot_heatmap plot;
	mp_plot_heatmap_init(&plot);
	plot.title = spec->title ? spec->title : "Load per GPU per MoE layer";
	plot.value_label = spec->value_label;
	plot.n_layers = L;
	plot.n_gpus = G;
	plot.before = vb;
	plot.after = va;
	plot.before_label = before_label;
	plot.after_label = spec->after_label;
	/* rows named by the model's layer ids where the loads name them
	 * (a trace's layers 0, 7, 15, not 0, 1, 2: issue 26 item 6) */
	plot.layer_ids = loads->layer_ids && loads->n_layers == L ? loads->layer_ids : NULL;
	rc = mp_plot_heatmap_save(&plot, spec->path);
	if (rc) {
		goto out;
	}
	if (stats) {
		row_factors(vb, L, G, &stats->worst_before, &stats->worst_before_layer, &stats->mean_before);
		row_factors(va, L, G, &stats->worst_after, &stats->worst_after_layer, &stats->mean_after);
	}
	status = EXIT_OK;
out:
	if (rc) {
		status = save_error(spec->path, rc);
	}
	free(vb);
	free(va);
	free(def);
	return status;
}

/* ---- roofline ---- */

#define MAX_CURVE_POINTS 32

/* Whether one GPU of the width holds the model: weights, default buffers,
 * workspace and reserve with no request (mp_capacity_compute at requests =
 * 0). A width the check rejects as invalid is not marked (fits unknown). */
static bool holds_model(const struct mp_model *model, const struct mp_hardware *hw,
			const struct mp_ep_width *width)
{
	struct mp_capacity_input in = {.width = *width};
	struct mp_capacity cap;
	if (mp_capacity_compute(model, hw, NULL, &in, &cap) != 0) {
		return true;
	}
	return cap.fits;
}

int cli_plot_roofline(const struct cli_roofline_spec *spec)
{
	const struct mp_model *model = spec->model;
	const struct mp_hardware *hw = spec->hw;
	struct mp_roofline_options opts;
	mp_roofline_options_init(&opts);
	if (spec->opts) {
		opts = *spec->opts;
	}
	double bw = opts.hbm_bw_bytes_per_s > 0 ? opts.hbm_bw_bytes_per_s : hw->hbm_bw_bytes_per_s;
	double tpr = spec->tokens_per_request > 0 ? spec->tokens_per_request : 1.0;
	double rmax = spec->max_requests > 0 ? spec->max_requests : 1024.0;
	int status = EXIT_INPUT;
	int rc = 0;

	struct mp_plot_roof roofs[MP_COMPUTE_COUNT];
	size_t n_roofs = 0, model_roof = 0;
	bool has_model_roof = false;
	for (int c = 0; c < MP_COMPUTE_COUNT; c++) {
		double peak = hw->peak_flops[c];
		if ((enum mp_compute)c == model->expert_compute) {
			if (opts.peak_flops > 0) {
				peak = opts.peak_flops;
			}
			if (peak > 0) {
				model_roof = n_roofs;
				has_model_roof = true;
			}
		}
		if (peak > 0) {
			roofs[n_roofs++] = (struct mp_plot_roof){
				.label = mp_compute_name((enum mp_compute)c), .peak_flops = peak};
		}
	}
	if (!has_model_roof || !(bw > 0)) {
		cli_error("%s: the hardware has no %s peak or no HBM bandwidth to draw a roofline",
			  spec->path, mp_compute_name(model->expert_compute));
		return EXIT_INPUT;
	}

	struct mp_plot_op_point *points = calloc(spec->n_ops + 1, sizeof(*points));
	struct mp_plot_xy *xy = calloc(spec->n_ops + 1, sizeof(*xy));
	struct mp_plot_ep_curve *curves = calloc(spec->n_widths + 1, sizeof(*curves));
	double *cx = calloc((spec->n_widths + 1) * MAX_CURVE_POINTS, sizeof(*cx));
	double *cy = calloc((spec->n_widths + 1) * MAX_CURVE_POINTS, sizeof(*cy));
	char(*labels)[48] = calloc(spec->n_widths + 1, sizeof(*labels));
	if (!points || !xy || !curves || !cx || !cy || !labels) {
		rc = MP_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < spec->n_ops; i++) {
		const struct cli_roofline_op *op = &spec->ops[i];
		struct mp_roofline_point pt;
		rc = mp_roofline_point(model, hw, &opts, &op->width, op->tokens_per_gpu, &pt);
		if (rc) {
			goto out;
		}
		points[i] = (struct mp_plot_op_point){
			.label = op->label, .intensity = pt.main.intensity, .roof = model_roof};
		xy[i] = (struct mp_plot_xy){
			.label = op->label, .x = op->tokens_per_gpu / tpr, .y = pt.main.tokens_per_expert};
		rmax = fmax(rmax, xy[i].x);
	}
	/* Requests per GPU 1, 2, 4, ... up to the first power of two at or
	 * above rmax: t is linear in them, a straight line on log-log axes. */
	size_t n_samples = 0;
	double r = 1.0;
	while (n_samples < MAX_CURVE_POINTS) {
		for (size_t i = 0; i < spec->n_widths; i++) {
			const struct mp_ep_width *w = &spec->widths[i];
			cx[i * MAX_CURVE_POINTS + n_samples] = r;
			cy[i * MAX_CURVE_POINTS + n_samples] =
				mp_roofline_tokens_per_expert(r * tpr, model->top_k, w->ep, w->slots);
		}
		n_samples++;
		if (r >= rmax) {
			break;
		}
		r *= 2.0;
	}
	for (size_t i = 0; i < spec->n_widths; i++) {
		snprintf(labels[i], sizeof(labels[i]), "EP%u, %u slots", spec->widths[i].ep,
			 spec->widths[i].slots);
		curves[i] = (struct mp_plot_ep_curve){
			.label = labels[i],
			.requests_per_gpu = cx + i * MAX_CURVE_POINTS,
			.tokens_per_expert = cy + i * MAX_CURVE_POINTS,
			.n = n_samples,
			.does_not_fit = !holds_model(model, hw, &spec->widths[i]),
		};
	}

	struct mp_expert_cost e;
	mp_roofline_expert(model, &e);
	double t_star = mp_roofline_ridge_tokens(&e, roofs[model_roof].peak_flops / bw, opts.activations);

	char title[256];
	if (spec->title) {
		snprintf(title, sizeof(title), "%s", spec->title);
	} else {
		snprintf(title, sizeof(title), "%s on %s: routed experts (%s weights, %s GEMM)",
			 model->name ? model->name : "model", hw->name ? hw->name : "GPU",
			 mp_format_name(model->routed_format), mp_compute_name(model->expert_compute));
	}
	struct mp_plot_roofline plot;
	mp_plot_roofline_init(&plot);
	plot.title = title;
	plot.hbm_bw_bytes_per_s = bw;
	plot.roofs = roofs;
	plot.n_roofs = n_roofs;
	plot.points = points;
	plot.n_points = spec->n_ops;
	if (spec->n_widths > 0) {
		plot.curves = curves;
		plot.n_curves = spec->n_widths;
		plot.ep_points = xy;
		plot.n_ep_points = spec->n_ops;
		plot.t_star = isfinite(t_star) && t_star > 0 ? t_star : 0;
	}
	rc = mp_plot_roofline_save(&plot, spec->path);
	if (rc == 0) {
		status = EXIT_OK;
	}
out:
	if (rc) {
		status = save_error(spec->path, rc);
	}
	free(points);
	free(xy);
	free(curves);
	free(cx);
	free(cy);
	free(labels);
	return status;
}
