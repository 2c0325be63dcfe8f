/* moeplan: roofline, load heatmap and Pareto pictures (plots.h), drawn
 * with the SVG writer (svg.h). Each picture is built completely in memory
 * after its input is checked, then written in one go. */
#include "moeplan/plots.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/diag.h"
#include "moeplan/doc.h"
#include "moeplan/svg.h"

#define TITLE_H 34.0
#define BLACK 6 /* mp_svg_color index of black */
#define GREY 10 /* mp_svg_color index of grey (#888888) */

static int write_svg(void *user, FILE *file)
{
	return mp_svg_write(user, file);
}

/* Write a built document to out or atomically to path, then free it. */
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

static void doc_title(struct mp_svg *svg, const char *title)
{
	if (title) {
		mp_svg_text(svg, 16, 24, MP_SVG_START, 16, true, "title", NULL, title);
	}
}

/* --- roofline ------------------------------------------------------- */

void mp_plot_roofline_init(struct mp_plot_roofline *plot)
{
	assert(plot);
	*plot = (struct mp_plot_roofline){.t_star = 0};
}

static bool positive(double v)
{
	return isfinite(v) && v > 0;
}

static int roofline_check(const struct mp_plot_roofline *plot)
{
	if (plot->n_roofs < 1 || !positive(plot->hbm_bw_bytes_per_s) ||
	    !(isfinite(plot->t_star) && plot->t_star >= 0)) {
		return MP_EINVAL;
	}
	assert(plot->roofs);
	assert(plot->n_points == 0 || plot->points);
	assert(plot->n_curves == 0 || plot->curves);
	assert(plot->n_ep_points == 0 || plot->ep_points);
	for (size_t i = 0; i < plot->n_roofs; i++) {
		if (!positive(plot->roofs[i].peak_flops)) {
			return MP_EINVAL;
		}
	}
	for (size_t i = 0; i < plot->n_points; i++) {
		if (!positive(plot->points[i].intensity) || plot->points[i].roof >= plot->n_roofs) {
			return MP_EINVAL;
		}
	}
	bool lin = plot->linear_ep_axes;
	for (size_t i = 0; i < plot->n_curves; i++) {
		const struct mp_plot_ep_curve *c = &plot->curves[i];
		if (c->n < 1) {
			return MP_EINVAL;
		}
		assert(c->requests_per_gpu && c->tokens_per_expert);
		for (size_t j = 0; j < c->n; j++) {
			double x = c->requests_per_gpu[j], y = c->tokens_per_expert[j];
			if (!isfinite(x) || !isfinite(y) || (lin ? x < 0 || y < 0 : x <= 0 || y <= 0)) {
				return MP_EINVAL;
			}
		}
	}
	for (size_t i = 0; i < plot->n_ep_points; i++) {
		double x = plot->ep_points[i].x, y = plot->ep_points[i].y;
		if (!isfinite(x) || !isfinite(y) || (lin ? x < 0 || y < 0 : x <= 0 || y <= 0)) {
			return MP_EINVAL;
		}
	}
	return 0;
}

static double attainable(const struct mp_plot_roofline *plot, double intensity, double peak)
{
	return fmin(peak, intensity * plot->hbm_bw_bytes_per_s);
}

static int roofline_panel(struct mp_svg *svg, const struct mp_plot_roofline *plot, double x,
			  double y, double w, double h)
{
	double bw = plot->hbm_bw_bytes_per_s;
	double ilo = HUGE_VAL, ihi = 0, peak_max = 0;
	for (size_t i = 0; i < plot->n_roofs; i++) {
		double r = plot->roofs[i].peak_flops / bw;
		ilo = fmin(ilo, r);
		ihi = fmax(ihi, r);
		peak_max = fmax(peak_max, plot->roofs[i].peak_flops);
	}
	for (size_t i = 0; i < plot->n_points; i++) {
		ilo = fmin(ilo, plot->points[i].intensity);
		ihi = fmax(ihi, plot->points[i].intensity);
	}
	struct mp_svg_panel_spec spec = {
		.id = "roofline",
		.title = "Roofline",
		.x = x, .y = y, .width = w, .height = h,
		.x_axis = {.scale = MP_SVG_LOG, .label = "arithmetic intensity (FLOP per HBM byte)"},
		.y_axis = {.scale = MP_SVG_LOG, .label = "attainable FLOP/s"},
	};
	int rc = mp_svg_axis_fit(&spec.x_axis, ilo / 3.0, ihi * 3.0, 8);
	if (rc == 0) {
		double ylo = bw * spec.x_axis.min;
		for (size_t i = 0; i < plot->n_points; i++) {
			const struct mp_plot_op_point *pt = &plot->points[i];
			ylo = fmin(ylo, attainable(plot, pt->intensity, plot->roofs[pt->roof].peak_flops));
		}
		/* Whole decades below; 3x the highest roof above, so that the
		 * roofs are not drawn on the frame nor squeezed under a decade. */
		rc = mp_svg_axis_fit(&spec.y_axis, ylo, peak_max, 8);
		spec.y_axis.max = peak_max * 3.0;
	}
	struct mp_svg_panel *p = NULL;
	if (rc == 0) {
		rc = mp_svg_panel_begin(svg, &spec, &p);
	}
	if (rc != 0) {
		return rc;
	}
	char id[64], label[256], a[32], b[32];
	for (size_t i = 0; i < plot->n_roofs; i++) {
		double peak = plot->roofs[i].peak_flops;
		double ridge = peak / bw;
		double xs[3], ys[3];
		size_t n = 0;
		xs[n] = spec.x_axis.min;
		ys[n++] = attainable(plot, spec.x_axis.min, peak);
		if (ridge > spec.x_axis.min && ridge < spec.x_axis.max) {
			xs[n] = ridge;
			ys[n++] = peak;
		}
		xs[n] = spec.x_axis.max;
		ys[n++] = attainable(plot, spec.x_axis.max, peak);
		mp_svg_format_si(peak, "FLOP/s", a, sizeof(a));
		mp_svg_format_si(ridge, "FLOP/B", b, sizeof(b));
		snprintf(label, sizeof(label), "%s: %s, ridge %s", plot->roofs[i].label, a, b);
		snprintf(id, sizeof(id), "roof-%zu", i);
		mp_svg_panel_series(p, &(struct mp_svg_series){
			.id = id, .label = label, .color = i, .style = MP_SVG_LINE | MP_SVG_THICK,
			.x = xs, .y = ys, .n = n,
		});
	}
	/* Operating points first: their labels get the best places. */
	for (size_t i = 0; i < plot->n_points; i++) {
		const struct mp_plot_op_point *pt = &plot->points[i];
		snprintf(id, sizeof(id), "point-%zu", i);
		mp_svg_panel_point(p, pt->intensity,
				   attainable(plot, pt->intensity, plot->roofs[pt->roof].peak_flops), id,
				   pt->label, pt->roof, MP_SVG_DIAMOND);
	}
	for (size_t i = 0; i < plot->n_roofs; i++) {
		double peak = plot->roofs[i].peak_flops;
		mp_svg_format_si(peak / bw, NULL, a, sizeof(a));
		snprintf(label, sizeof(label), "ridge %s", a);
		snprintf(id, sizeof(id), "ridge-%zu", i);
		mp_svg_panel_point(p, peak / bw, peak, id, label, i, MP_SVG_RING);
	}
	return mp_svg_panel_end(p);
}

/* Axis value as the panel draws it (log10 on a log axis). */
static double fwd(bool lin, double v)
{
	return lin ? v : log10(v);
}

static double inv(bool lin, double v)
{
	return lin ? v : pow(10.0, v);
}

/* The first x where the curve's straight segments (as drawn) reach t. */
static bool crossing(const struct mp_plot_ep_curve *c, double t, bool lin, double *x_out)
{
	for (size_t j = 0; j + 1 < c->n; j++) {
		double y0 = c->tokens_per_expert[j], y1 = c->tokens_per_expert[j + 1];
		if ((y0 - t) * (y1 - t) > 0 || !(fabs(y1 - y0) > 0)) {
			continue;
		}
		double f = (fwd(lin, t) - fwd(lin, y0)) / (fwd(lin, y1) - fwd(lin, y0));
		double x0 = fwd(lin, c->requests_per_gpu[j]);
		double x1 = fwd(lin, c->requests_per_gpu[j + 1]);
		*x_out = inv(lin, x0 + f * (x1 - x0));
		return true;
	}
	return false;
}

static int ep_panel(struct mp_svg *svg, const struct mp_plot_roofline *plot, double x, double y,
		    double w, double h)
{
	bool lin = plot->linear_ep_axes;
	double xlo = HUGE_VAL, xhi = 0, ylo = HUGE_VAL, yhi = 0;
	for (size_t i = 0; i < plot->n_curves; i++) {
		const struct mp_plot_ep_curve *c = &plot->curves[i];
		for (size_t j = 0; j < c->n; j++) {
			xlo = fmin(xlo, c->requests_per_gpu[j]);
			xhi = fmax(xhi, c->requests_per_gpu[j]);
			ylo = fmin(ylo, c->tokens_per_expert[j]);
			yhi = fmax(yhi, c->tokens_per_expert[j]);
		}
	}
	for (size_t i = 0; i < plot->n_ep_points; i++) {
		xlo = fmin(xlo, plot->ep_points[i].x);
		xhi = fmax(xhi, plot->ep_points[i].x);
		ylo = fmin(ylo, plot->ep_points[i].y);
		yhi = fmax(yhi, plot->ep_points[i].y);
	}
	if (plot->t_star > 0) {
		ylo = fmin(ylo, plot->t_star);
		yhi = fmax(yhi, plot->t_star);
	}
	struct mp_svg_panel_spec spec = {
		.id = "ep",
		.title = "Tokens per expert per step",
		.x = x, .y = y, .width = w, .height = h,
		.x_axis = {.scale = lin ? MP_SVG_LINEAR : MP_SVG_LOG, .label = "requests per GPU"},
		.y_axis = {.scale = lin ? MP_SVG_LINEAR : MP_SVG_LOG, .label = "tokens per expert"},
	};
	int rc = mp_svg_axis_fit(&spec.x_axis, lin ? 0 : xlo, xhi, 8);
	if (rc == 0) {
		rc = mp_svg_axis_fit(&spec.y_axis, lin ? 0 : ylo, lin ? yhi * 1.05 : yhi * 1.5, 8);
	}
	struct mp_svg_panel *p = NULL;
	if (rc == 0) {
		rc = mp_svg_panel_begin(svg, &spec, &p);
	}
	if (rc != 0) {
		return rc;
	}
	char id[64], label[256], a[32];
	if (plot->t_star > 0) {
		mp_svg_format_si(plot->t_star, NULL, a, sizeof(a));
		snprintf(label, sizeof(label), "t* = %s (ridge)", a);
		mp_svg_panel_hline(p, plot->t_star, "t-star", label, BLACK, MP_SVG_DASHED);
	}
	for (size_t i = 0; i < plot->n_curves; i++) {
		const struct mp_plot_ep_curve *c = &plot->curves[i];
		double xc = 0;
		bool crosses = plot->t_star > 0 && crossing(c, plot->t_star, lin, &xc);
		const char *tail = c->does_not_fit ? " (does not fit)" : "";
		if (crosses) {
			mp_svg_format_si(xc, NULL, a, sizeof(a));
			snprintf(label, sizeof(label), "%s: t* at %s req/GPU%s", c->label, a, tail);
		} else {
			snprintf(label, sizeof(label), "%s%s", c->label, tail);
		}
		snprintf(id, sizeof(id), "ep-%zu", i);
		mp_svg_panel_series(p, &(struct mp_svg_series){
			.id = id, .label = label, .color = c->does_not_fit ? GREY : i,
			.style = c->does_not_fit ? MP_SVG_LINE | MP_SVG_DASHED : MP_SVG_LINE,
			.x = c->requests_per_gpu, .y = c->tokens_per_expert, .n = c->n,
		});
	}
	for (size_t i = 0; i < plot->n_curves; i++) {
		double xc = 0;
		if (plot->t_star > 0 && crossing(&plot->curves[i], plot->t_star, lin, &xc)) {
			snprintf(id, sizeof(id), "ep-%zu-cross", i);
			mp_svg_panel_point(p, xc, plot->t_star, id, NULL,
					   plot->curves[i].does_not_fit ? GREY : i, MP_SVG_RING);
		}
	}
	for (size_t i = 0; i < plot->n_ep_points; i++) {
		snprintf(id, sizeof(id), "ep-point-%zu", i);
		mp_svg_panel_point(p, plot->ep_points[i].x, plot->ep_points[i].y, id,
				   plot->ep_points[i].label, BLACK, MP_SVG_DIAMOND);
	}
	return mp_svg_panel_end(p);
}

static int roofline(const struct mp_plot_roofline *plot, FILE *out, const char *path)
{
	assert(plot);
	int rc = roofline_check(plot);
	if (rc != 0) {
		return rc;
	}
	bool two = plot->n_curves > 0;
	double top = plot->title ? TITLE_H : 6.0;
	double pw = 600, ph = 500;
	struct mp_svg *svg = NULL;
	rc = mp_svg_create(two ? 2 * pw : pw, top + ph, plot->title ? plot->title : "Roofline", &svg);
	if (rc != 0) {
		return rc;
	}
	doc_title(svg, plot->title);
	rc = roofline_panel(svg, plot, 0, top, pw, ph);
	if (rc == 0 && two) {
		rc = ep_panel(svg, plot, pw, top, pw, ph);
	}
	return finish(svg, rc, out, path);
}

int mp_plot_roofline_write(const struct mp_plot_roofline *plot, FILE *out)
{
	assert(out);
	return roofline(plot, out, NULL);
}

int mp_plot_roofline_save(const struct mp_plot_roofline *plot, const char *path)
{
	assert(path);
	return roofline(plot, NULL, path);
}

/* --- heatmap -------------------------------------------------------- */

#define MAX_HEATMAP_SIDE 4096u
#define FACTOR_W 62.0

void mp_plot_heatmap_init(struct mp_plot_heatmap *plot)
{
	assert(plot);
	*plot = (struct mp_plot_heatmap){.n_layers = 0};
}

static double clamp(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* max/mean of a row; NAN when the row's mean is 0. */
static double busiest_factor(const double *row, uint32_t n)
{
	double sum = 0, max = 0;
	for (uint32_t i = 0; i < n; i++) {
		sum += row[i];
		max = fmax(max, row[i]);
	}
	return sum > 0 ? max / (sum / n) : (double)NAN;
}

/* Width of a map's colour bar with its ticks and title. */
#define CBAR_W 96.0

struct heatmap_layout {
	double cell_w, cell_h, map_w, map_h, block_w, left, top, font;
	uint32_t label_every;
	int title_lines; /* lines of the longer map title, wrapped */
};

/* Space between two map blocks, px. */
#define BLOCK_GAP 30.0
#define MAP_TITLE_FONT 13.0
#define MAP_TITLE_LINE 16.0
#define MAX_TITLE_LINES 4

/* Greedy word wrap of text into lines at most width px wide at the map
 * title's size (a word longer than width gets a line of its own). Writes
 * the byte offset where each line starts and its length; returns the
 * number of lines (at most MAX_TITLE_LINES, the last one takes the rest). */
static int wrap_title(const char *text, double width, size_t start[], size_t len[])
{
	size_t n = strlen(text), at = 0;
	int lines = 0;
	while (at < n && lines < MAX_TITLE_LINES) {
		size_t end = n;
		if (lines < MAX_TITLE_LINES - 1) {
			/* the longest run of whole words from at that fits */
			char buf[512];
			size_t best = 0;
			for (size_t i = at; i <= n && i - at < sizeof(buf); i++) {
				if (i == n || text[i] == ' ') {
					memcpy(buf, text + at, i - at);
					buf[i - at] = '\0';
					if (best != 0 && mp_svg_text_width(buf, MAP_TITLE_FONT) > width) {
						break;
					}
					best = i;
				}
			}
			end = best ? best : n;
		}
		start[lines] = at;
		len[lines] = end - at;
		lines++;
		at = end;
		while (at < n && text[at] == ' ') {
			at++;
		}
	}
	return lines ? lines : 1;
}

/* A map's title wrapped to width, its last line's baseline at y: the
 * lines stack upwards from there over the room of `room` lines. */
static int map_title(struct mp_svg *svg, const char *title, double x, double y, double width,
		     int room)
{
	size_t start[MAX_TITLE_LINES] = {0}, len[MAX_TITLE_LINES] = {0};
	int lines = wrap_title(title, width, start, len);
	int rc = 0;
	for (int i = 0; i < lines && rc == 0; i++) {
		char buf[512];
		snprintf(buf, sizeof(buf), "%.*s", (int)len[i], title + start[i]);
		double ly = y - (room - 1 - i) * MAP_TITLE_LINE;
		rc = mp_svg_text(svg, x, ly, MP_SVG_START, MAP_TITLE_FONT, true, "map-title", NULL, buf);
	}
	return rc;
}

static int heatmap_block(struct mp_svg *svg, const struct mp_plot_heatmap *plot,
			 const struct heatmap_layout *lay, const double *values, const char *which,
			 const char *title, double x0, double vmin, double vmax, bool first)
{
	char id[64], text[128];
	double y0 = lay->top;
	snprintf(id, sizeof(id), "heatmap-%s", which);
	int rc = map_title(svg, title, x0, y0 - 22, lay->block_w - BLOCK_GAP, lay->title_lines);
	mp_svg_text(svg, x0 + lay->map_w + FACTOR_W - 4, y0 - 3, MP_SVG_END, 10, false,
		    "factor-header", NULL, "max/mean");
	rc = rc != 0 ? rc : mp_svg_heatmap(svg, &(struct mp_svg_heatmap){
		.id = id, .label = title, .x = x0, .y = y0,
		.cell_width = lay->cell_w, .cell_height = lay->cell_h,
		.rows = plot->n_layers, .cols = plot->n_gpus, .values = values,
		.vmin = vmin, .vmax = vmax,
	});
	if (rc != 0) {
		return rc;
	}
	double worst = -1, sum = 0;
	uint32_t worst_row = 0, counted = 0;
	double *factors = calloc(plot->n_layers, sizeof(double));
	if (!factors) {
		return MP_ENOMEM;
	}
	for (uint32_t r = 0; r < plot->n_layers; r++) {
		factors[r] = busiest_factor(values + (size_t)r * plot->n_gpus, plot->n_gpus);
		if (!isnan(factors[r])) {
			sum += factors[r];
			counted++;
			if (factors[r] > worst) {
				worst = factors[r];
				worst_row = r;
			}
		}
	}
	for (uint32_t r = 0; r < plot->n_layers; r++) {
		double ty = y0 + (r + 0.5) * lay->cell_h + lay->font * 0.35;
		uint32_t layer = plot->layer_ids ? plot->layer_ids[r] : r;
		if (first && r % lay->label_every == 0) {
			snprintf(text, sizeof(text), "%u", layer);
			mp_svg_text(svg, x0 - 6, ty, MP_SVG_END, lay->font, false, "row-label", NULL, text);
		}
		if (isnan(factors[r])) {
			snprintf(text, sizeof(text), "-");
		} else {
			snprintf(text, sizeof(text), "%.2f", factors[r]);
		}
		snprintf(id, sizeof(id), "factor-%s-%u", which, r);
		bool is_worst = counted > 0 && r == worst_row;
		mp_svg_text(svg, x0 + lay->map_w + FACTOR_W - 4, ty, MP_SVG_END, lay->font, is_worst,
			    is_worst ? "factor worst" : "factor", id, text);
	}
	/* GPU ticks at cell centres, at most one per 36 px. */
	size_t max_ticks = (size_t)fmax(1.0, lay->map_w / 36.0);
	struct mp_svg_axis gx = {.scale = MP_SVG_LINEAR, .min = 0,
				 .max = plot->n_gpus > 1 ? plot->n_gpus - 1 : 1, .integer = true};
	double ticks[64];
	size_t nt = mp_svg_axis_ticks(&gx, max_ticks, ticks, 64);
	for (size_t i = 0; i < nt && i < 64; i++) {
		if (ticks[i] > plot->n_gpus - 1 + 1e-9) {
			continue;
		}
		snprintf(text, sizeof(text), "%.0f", ticks[i]);
		mp_svg_text(svg, x0 + (ticks[i] + 0.5) * lay->cell_w, y0 + lay->map_h + 14, MP_SVG_MIDDLE,
			    10, false, "tick-label", NULL, text);
	}
	mp_svg_text(svg, x0 + lay->map_w / 2, y0 + lay->map_h + 30, MP_SVG_MIDDLE, 12, false,
		    "axis-label", NULL, "GPU");
	if (counted > 0) {
		uint32_t layer = plot->layer_ids ? plot->layer_ids[worst_row] : worst_row;
		snprintf(text, sizeof(text), "max/mean: worst %.2f (layer %u), mean %.2f", worst, layer,
			 sum / counted);
	} else {
		snprintf(text, sizeof(text), "max/mean: no load");
	}
	snprintf(id, sizeof(id), "summary-%s", which);
	mp_svg_text(svg, x0, y0 + lay->map_h + 50, MP_SVG_START, 12, false, "summary", id, text);
	free(factors);
	return mp_svg_status(svg);
}

static int heatmap(const struct mp_plot_heatmap *plot, FILE *out, const char *path)
{
	assert(plot);
	if (plot->n_layers < 1 || plot->n_gpus < 1 || plot->n_layers > MAX_HEATMAP_SIDE ||
	    plot->n_gpus > MAX_HEATMAP_SIDE) {
		return MP_EINVAL;
	}
	assert(plot->before);
	size_t cells = (size_t)plot->n_layers * plot->n_gpus;
	/* One colour scale across the maps (issue 26 item 6): on a scale of
	 * its own, a balanced "after" (570-600 for a balanced Qwen3 plan) was
	 * painted across the whole bar, in the "before" map's hottest
	 * colours. The scale runs from the smallest load of either map to the
	 * largest, spanning at least 5% of the largest, so that rounding
	 * noise (98303.999 against 98304.001) is not painted as imbalance;
	 * the max/mean column says each row's imbalance in numbers. */
	double hi = 0, lo = HUGE_VAL;
	for (int m = 0; m < 2; m++) {
		const double *v = m == 0 ? plot->before : plot->after;
		for (size_t i = 0; v && i < cells; i++) {
			if (!isfinite(v[i]) || v[i] < 0) {
				return MP_EINVAL;
			}
			hi = fmax(hi, v[i]);
			lo = fmin(lo, v[i]);
		}
	}
	lo = fmax(0.0, fmin(lo, hi * 0.95));
	if (!(hi > 0)) {
		hi = 1;
	}
	const double vmax[2] = {hi, hi}, vmin[2] = {lo, lo};
	const char *before_label = plot->before_label ? plot->before_label
						      : "before: round-robin, one replica per expert";
	const char *after_label = plot->after_label ? plot->after_label : "after placement";
	/* Narrow maps (EP1, EP2) get wider cells: at least 120 px of map,
	 * at most 60 px a cell. */
	struct heatmap_layout lay = {
		.cell_w = fmax(clamp(360.0 / plot->n_gpus, 1.5, 28.0), fmin(120.0 / plot->n_gpus, 60.0)),
		.cell_h = clamp(600.0 / plot->n_layers, 12.0, 28.0),
	};
	/* The colour bar's title runs along the bar, as tall as the maps:
	 * with few layers the rows grow so that it fits. */
	double title_h = mp_svg_text_width(plot->value_label ? plot->value_label : "load", 12) + 16;
	if (lay.cell_h * plot->n_layers < title_h) {
		lay.cell_h = title_h / plot->n_layers;
	}
	lay.map_w = lay.cell_w * plot->n_gpus;
	lay.map_h = lay.cell_h * plot->n_layers;
	lay.font = fmin(11.0, lay.cell_h - 2.0);
	lay.label_every = (uint32_t)ceil(13.0 / lay.cell_h);
	char digits[16], widest[96];
	uint32_t max_id = plot->n_layers - 1;
	for (uint32_t r = 0; plot->layer_ids && r < plot->n_layers; r++) {
		max_id = plot->layer_ids[r] > max_id ? plot->layer_ids[r] : max_id;
	}
	snprintf(digits, sizeof(digits), "%u", max_id);
	/* Each block is as wide as its content: the map, its max/mean column
	 * and its colour bar (16 px, ticks and the bar's title: about 90 px),
	 * or the summary line under it; the titles wrap to that width, so a
	 * narrow phase (EP1, EP2) leaves no page of white (issue 16 item 10). */
	snprintf(widest, sizeof(widest), "max/mean: worst 00.00 (layer %s), mean 00.00", digits);
	lay.block_w = fmax(lay.map_w + FACTOR_W + CBAR_W, mp_svg_text_width(widest, 12)) + BLOCK_GAP;
	size_t start[MAX_TITLE_LINES], len[MAX_TITLE_LINES];
	lay.title_lines = wrap_title(before_label, lay.block_w - BLOCK_GAP, start, len);
	if (plot->after) {
		int n = wrap_title(after_label, lay.block_w - BLOCK_GAP, start, len);
		lay.title_lines = n > lay.title_lines ? n : lay.title_lines;
	}
	lay.left = 16 + 18 + mp_svg_text_width(digits, lay.font) + 8;
	lay.top = (plot->title ? TITLE_H : 8.0) + 38 + (lay.title_lines - 1) * MAP_TITLE_LINE;
	int n_maps = plot->after ? 2 : 1;
	/* as wide as the blocks, or the picture's title (16 px bold, from x 16) */
	double width = fmax(lay.left + n_maps * lay.block_w,
			    plot->title ? 32 + mp_svg_text_width(plot->title, 16) : 0);
	double height = lay.top + lay.map_h + 64;
	struct mp_svg *svg = NULL;
	int rc = mp_svg_create(width, height, plot->title ? plot->title : "Load per GPU per layer", &svg);
	if (rc != 0) {
		return rc;
	}
	doc_title(svg, plot->title);
	mp_svg_vtext(svg, 16 + 12, lay.top + lay.map_h / 2, 12, "axis-label", "MoE layer");
	const char *unit = plot->value_label ? plot->value_label : "load";
	for (int m = 0; m < n_maps && rc == 0; m++) {
		double x0 = lay.left + m * lay.block_w;
		rc = heatmap_block(svg, plot, &lay, m ? plot->after : plot->before, m ? "after" : "before",
				   m ? after_label : before_label, x0, vmin[m], vmax[m], m == 0);
		if (rc == 0) {
			rc = mp_svg_colorbar(svg, x0 + lay.map_w + FACTOR_W + 10, lay.top, 16, lay.map_h,
					     vmin[m], vmax[m], m ? "colorbar-after" : "colorbar", unit);
		}
	}
	return finish(svg, rc, out, path);
}

int mp_plot_heatmap_write(const struct mp_plot_heatmap *plot, FILE *out)
{
	assert(out);
	return heatmap(plot, out, NULL);
}

int mp_plot_heatmap_save(const struct mp_plot_heatmap *plot, const char *path)
{
	assert(path);
	return heatmap(plot, NULL, path);
}

/* --- pareto --------------------------------------------------------- */

void mp_plot_pareto_init(struct mp_plot_pareto *plot)
{
	assert(plot);
	*plot = (struct mp_plot_pareto){.lower_bound = 0};
}

static int pareto(const struct mp_plot_pareto *plot, FILE *out, const char *path)
{
	assert(plot);
	if (plot->n_series < 1 || !isfinite(plot->lower_bound) || plot->lower_bound < 0) {
		return MP_EINVAL;
	}
	assert(plot->series);
	double xhi = 0, ylo = HUGE_VAL, yhi = 0;
	for (size_t i = 0; i < plot->n_series; i++) {
		const struct mp_plot_series *s = &plot->series[i];
		if (s->n < 1) {
			return MP_EINVAL;
		}
		assert(s->x && s->y);
		for (size_t j = 0; j < s->n; j++) {
			if (!isfinite(s->x[j]) || !isfinite(s->y[j]) || s->x[j] < 0 || s->y[j] < 0) {
				return MP_EINVAL;
			}
			xhi = fmax(xhi, s->x[j]);
			ylo = fmin(ylo, s->y[j]);
			yhi = fmax(yhi, s->y[j]);
		}
	}
	if (plot->lower_bound > 0) {
		ylo = fmin(ylo, plot->lower_bound);
		yhi = fmax(yhi, plot->lower_bound);
	}
	double top = plot->title ? TITLE_H : 6.0;
	struct mp_svg *svg = NULL;
	int rc = mp_svg_create(760, top + 480, plot->title ? plot->title : "Busiest GPU against moves",
			       &svg);
	if (rc != 0) {
		return rc;
	}
	doc_title(svg, plot->title);
	struct mp_svg_panel_spec spec = {
		.id = "pareto",
		.x = 0, .y = top, .width = 760, .height = 480,
		.pad = 12,
		.x_axis = {.scale = MP_SVG_LINEAR, .integer = true,
			   .label = plot->x_label ? plot->x_label : "moves (expert copies moved)"},
		.y_axis = {.scale = MP_SVG_LINEAR,
			   .label = plot->y_label ? plot->y_label : "busiest-GPU load"},
	};
	rc = mp_svg_axis_fit(&spec.x_axis, 0, xhi, 10);
	if (rc == 0) {
		rc = mp_svg_axis_fit(&spec.y_axis, ylo, yhi, 8);
	}
	struct mp_svg_panel *p = NULL;
	if (rc == 0) {
		rc = mp_svg_panel_begin(svg, &spec, &p);
	}
	if (rc == 0 && plot->lower_bound > 0) {
		mp_svg_panel_hline(p, plot->lower_bound, "lower-bound",
				   plot->lower_bound_label ? plot->lower_bound_label : "lower bound",
				   BLACK, MP_SVG_DASHED);
	}
	for (size_t i = 0; rc == 0 && i < plot->n_series; i++) {
		char id[64];
		snprintf(id, sizeof(id), "pareto-%zu", i);
		const struct mp_plot_series *s = &plot->series[i];
		mp_svg_panel_series(p, &(struct mp_svg_series){
			.id = id, .label = s->label, .color = i,
			.style = MP_SVG_LINE | MP_SVG_STEP | MP_SVG_MARKERS,
			.marker = (enum mp_svg_marker)(i % 4),
			.x = s->x, .y = s->y, .n = s->n,
		});
	}
	if (p) {
		int end = mp_svg_panel_end(p);
		rc = rc ? rc : end;
	}
	return finish(svg, rc, out, path);
}

int mp_plot_pareto_write(const struct mp_plot_pareto *plot, FILE *out)
{
	assert(out);
	return pareto(plot, out, NULL);
}

int mp_plot_pareto_save(const struct mp_plot_pareto *plot, const char *path)
{
	assert(path);
	return pareto(plot, NULL, path);
}
