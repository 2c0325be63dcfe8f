/* moeplan: the pictures of `moeplan search` (plots.h): the Pareto front
 * of throughput per GPU against speed per user (or TTFT), one series per
 * EP width, and the pools as a bar. */
#include "moeplan/plots.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>

#include "moeplan/diag.h"
#include "moeplan/doc.h"
#include "moeplan/svg.h"

#define TITLE_H 34.0
#define BLACK 6 /* mp_svg_color index of black */

static int write_svg(void *user, FILE *file)
{
	return mp_svg_write(user, file);
}

static int finish(struct mp_svg *svg, int rc, FILE *out, const char *path)
{
	if (rc == 0) {
		rc = mp_svg_status(svg);
	}
	if (rc == 0) {
		rc = out ? mp_svg_write(svg, out) : mp_write_atomic(path, write_svg, svg);
	}
	mp_svg_destroy(svg);
	return rc;
}

static void title(struct mp_svg *svg, const char *text)
{
	if (text) {
		mp_svg_text(svg, 16, 24, MP_SVG_START, 16, true, "title", NULL, text);
	}
}

static bool pos(double v)
{
	return isfinite(v) && v > 0;
}

/* --- front ----------------------------------------------------------- */

void mp_plot_front_init(struct mp_plot_front *plot)
{
	*plot = (struct mp_plot_front){0};
}

/* The data range of every point drawn; MP_EINVAL on a bad value. */
static int front_range(const struct mp_plot_front *plot, double *xlo, double *xhi, double *yhi)
{
	*xlo = HUGE_VAL;
	*xhi = 0;
	*yhi = 0;
	for (size_t i = 0; i < plot->n_series; i++) {
		const struct mp_plot_front_series *s = &plot->series[i];
		if (s->n < 1 || !s->x || !s->y) {
			return MP_EINVAL;
		}
		for (size_t j = 0; j < s->n; j++) {
			if (!pos(s->x[j]) || !pos(s->y[j])) {
				return MP_EINVAL;
			}
			*xlo = fmin(*xlo, s->x[j]);
			*xhi = fmax(*xhi, s->x[j]);
			*yhi = fmax(*yhi, s->y[j]);
		}
	}
	for (size_t j = 0; j < plot->n_front; j++) {
		if (!pos(plot->front_x[j]) || !pos(plot->front_y[j])) {
			return MP_EINVAL;
		}
	}
	if (plot->has_chosen && (!pos(plot->chosen_x) || !pos(plot->chosen_y))) {
		return MP_EINVAL;
	}
	if (plot->target_x != 0) {
		if (!pos(plot->target_x)) {
			return MP_EINVAL;
		}
		*xlo = fmin(*xlo, plot->target_x);
		*xhi = fmax(*xhi, plot->target_x);
	}
	return 0;
}

static int front(const struct mp_plot_front *plot, FILE *out, const char *path)
{
	assert(plot);
	if (plot->n_series < 1 || !plot->series) {
		return MP_EINVAL;
	}
	double xlo, xhi, yhi;
	int rc = front_range(plot, &xlo, &xhi, &yhi);
	if (rc) {
		return rc;
	}
	double top = plot->title ? TITLE_H : 6.0;
	struct mp_svg *svg = NULL;
	rc = mp_svg_create(820, top + 520, plot->title ? plot->title : "Deployment front", &svg);
	if (rc) {
		return rc;
	}
	title(svg, plot->title);
	struct mp_svg_panel_spec spec = {
		.id = "front",
		.x = 0, .y = top, .width = 820, .height = 520,
		.pad = 12,
		.x_axis = {.scale = plot->log_x ? MP_SVG_LOG : MP_SVG_LINEAR,
			   .label = plot->x_label ? plot->x_label : "x"},
		.y_axis = {.scale = MP_SVG_LINEAR, .label = plot->y_label ? plot->y_label : "tokens/s per GPU"},
	};
	rc = mp_svg_axis_fit(&spec.x_axis, plot->log_x ? xlo : 0, xhi, 10);
	if (rc == 0) {
		rc = mp_svg_axis_fit(&spec.y_axis, 0, yhi, 8);
	}
	struct mp_svg_panel *p = NULL;
	if (rc == 0) {
		rc = mp_svg_panel_begin(svg, &spec, &p);
	}
	for (size_t i = 0; rc == 0 && i < plot->n_series; i++) {
		char id[32];
		snprintf(id, sizeof(id), "width-%zu", i);
		const struct mp_plot_front_series *s = &plot->series[i];
		size_t color = i >= BLACK ? i + 1 : i; /* black is the overall front's */
		rc = mp_svg_panel_series(p, &(struct mp_svg_series){
			.id = id, .label = s->label, .color = color,
			.style = MP_SVG_LINE | MP_SVG_MARKERS, .marker = (enum mp_svg_marker)(i % 4),
			.x = s->x, .y = s->y, .n = s->n,
		});
	}
	if (rc == 0 && plot->n_front > 0) {
		rc = mp_svg_panel_series(p, &(struct mp_svg_series){
			.id = "front-all", .label = "front over all widths", .color = BLACK,
			.style = MP_SVG_LINE | MP_SVG_DASHED,
			.x = plot->front_x, .y = plot->front_y, .n = plot->n_front,
		});
	}
	if (rc == 0 && plot->target_x > 0) {
		rc = mp_svg_panel_vline(p, plot->target_x, "target",
					plot->target_label ? plot->target_label : "target", BLACK,
					MP_SVG_DASHED);
	}
	if (rc == 0 && plot->has_chosen) {
		rc = mp_svg_panel_point(p, plot->chosen_x, plot->chosen_y, "chosen",
					plot->chosen_label ? plot->chosen_label : "chosen", BLACK,
					MP_SVG_RING);
	}
	if (p) {
		int end = mp_svg_panel_end(p);
		rc = rc ? rc : end;
	}
	return finish(svg, rc, out, path);
}

int mp_plot_front_write(const struct mp_plot_front *plot, FILE *out)
{
	assert(out);
	return front(plot, out, NULL);
}

int mp_plot_front_save(const struct mp_plot_front *plot, const char *path)
{
	assert(path);
	return front(plot, NULL, path);
}

/* --- pools ----------------------------------------------------------- */

static int pools(const struct mp_plot_pools *plot, FILE *out, const char *path)
{
	assert(plot);
	double total = (double)plot->prefill_gpus + plot->decode_gpus + plot->spare_gpus;
	if (!(total > 0)) {
		return MP_EINVAL;
	}
	const double W = 820, x0 = 24, bar_w = W - 48;
	double top = plot->title ? TITLE_H : 6.0;
	struct mp_svg *svg = NULL;
	int rc = mp_svg_create(W, top + 160, plot->title ? plot->title : "Pools", &svg);
	if (rc) {
		return rc;
	}
	title(svg, plot->title);
	const struct {
		const char *id, *name;
		uint32_t gpus, unit;
		size_t color;
	} parts[] = {
		{"pool-prefill", "prefill", plot->prefill_gpus, plot->prefill_unit, 0},
		{"pool-decode", "decode", plot->decode_gpus, plot->decode_unit, 1},
		{"pool-spare", "spare", plot->spare_gpus, 0, 2},
	};
	double x = x0, y = top + 20, h = 48;
	for (size_t i = 0; i < 3 && rc == 0; i++) {
		double w = bar_w * parts[i].gpus / total;
		char label[160], id[48];
		if (parts[i].unit > 0) {
			snprintf(label, sizeof(label), "%s: %u GPUs = %u x EP%u (%.1f%%)", parts[i].name,
				 parts[i].gpus, parts[i].gpus / parts[i].unit, parts[i].unit,
				 100.0 * parts[i].gpus / total);
		} else {
			snprintf(label, sizeof(label), "%s: %u GPUs (%.1f%%)", parts[i].name, parts[i].gpus,
				 100.0 * parts[i].gpus / total);
		}
		if (parts[i].gpus == 0) {
			continue;
		}
		rc = mp_svg_rect(svg, x, y, w, h, parts[i].color, parts[i].id, label);
		/* A legend under the bar: a swatch and the part's figures, one
		 * line each, so that narrow parts stay legible. */
		double ly = y + h + 22 + 20 * (double)i;
		snprintf(id, sizeof(id), "%s-swatch", parts[i].id);
		if (rc == 0) {
			rc = mp_svg_rect(svg, x0, ly - 11, 12, 12, parts[i].color, id, NULL);
		}
		snprintf(id, sizeof(id), "%s-label", parts[i].id);
		if (rc == 0) {
			rc = mp_svg_text(svg, x0 + 18, ly, MP_SVG_START, 13, false, "label", id, label);
		}
		x += w;
	}
	char axis[96];
	snprintf(axis, sizeof(axis), "GPUs: %.0f in all", total);
	if (rc == 0) {
		rc = mp_svg_text(svg, x0 + bar_w, y - 6, MP_SVG_END, 12, false, "axis", "pool-total", axis);
	}
	return finish(svg, rc, out, path);
}

int mp_plot_pools_write(const struct mp_plot_pools *plot, FILE *out)
{
	assert(out);
	return pools(plot, out, NULL);
}

int mp_plot_pools_save(const struct mp_plot_pools *plot, const char *path)
{
	assert(path);
	return pools(plot, NULL, path);
}
