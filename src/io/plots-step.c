/* moeplan: the serving step of each candidate width as stacked bars
 * (plots.h, mp_plot_step_bars_save): one horizontal bar per width, each
 * term of the step (step.h) a segment in time order of the list, and a
 * black tick at the step time (shorter than the bar when the overlap hides
 * part of the exchange). */
#include "moeplan/plots.h"

#include <math.h>
#include <stdio.h>

#include "moeplan/diag.h"
#include "moeplan/doc.h"
#include "moeplan/svg.h"

#define BLACK 6 /* mp_svg_color index of black */

/* Each term its own colour (mp_svg_color 0..10), black left to the step
 * tick: a term past black takes the next index. */
static size_t term_color(int t)
{
	return t < BLACK ? (size_t)t : (size_t)t + 1;
}

static int write_svg(void *user, FILE *file)
{
	return mp_svg_write(user, file);
}

/* The longest of the bars (sum of terms) and step times, ms. */
static double widest_ms(const struct mp_plot_step_bars *plot)
{
	double hi = 0.0;
	for (size_t i = 0; i < plot->n_bars; i++) {
		const struct mp_step *s = plot->bars[i].step;
		double sum = 0.0;
		for (int t = 0; t < MP_TERM_COUNT; t++) {
			sum += s->terms[t].time_s;
		}
		hi = fmax(hi, fmax(sum, s->step_time_s) * 1e3);
	}
	return hi;
}

static int draw_bar(struct mp_svg *svg, const struct mp_plot_step_bar *bar, size_t index, double x0,
		    double y, double h, double px_per_ms)
{
	char id[64], label[160];
	double x = x0;
	int rc = 0;
	for (int t = 0; t < MP_TERM_COUNT && rc == 0; t++) {
		double w = bar->step->terms[t].time_s * 1e3 * px_per_ms;
		if (!(w > 0.0)) {
			continue;
		}
		snprintf(id, sizeof(id), "bar-%zu-%s", index, mp_step_term_name((enum mp_step_term_id)t));
		snprintf(label, sizeof(label), "%s %s: %.4g ms", bar->label,
			 mp_step_term_name((enum mp_step_term_id)t), bar->step->terms[t].time_s * 1e3);
		rc = mp_svg_rect(svg, x, y, w, h, term_color(t), id, label);
		x += w;
	}
	snprintf(id, sizeof(id), "step-%zu", index);
	snprintf(label, sizeof(label), "%s step %.4g ms", bar->label, bar->step->step_time_s * 1e3);
	double xs = x0 + bar->step->step_time_s * 1e3 * px_per_ms;
	if (rc == 0) {
		rc = mp_svg_rect(svg, xs - 1.0, y - 3.0, 2.0, h + 6.0, BLACK, id, label);
	}
	if (rc == 0) {
		rc = mp_svg_text(svg, x0 - 8.0, y + h * 0.7, MP_SVG_END, 12, bar->chosen, NULL, NULL,
				 bar->label);
	}
	if (rc == 0 && bar->note) {
		rc = mp_svg_text(svg, fmax(x, xs) + 6.0, y + h * 0.7, MP_SVG_START, 11, false, NULL, NULL,
				 bar->note);
	}
	return rc;
}

int mp_plot_step_bars_save(const struct mp_plot_step_bars *plot, const char *path)
{
	if (!plot || !path || plot->n_bars == 0 || !plot->bars) {
		return MP_EINVAL;
	}
	const double W = 980, x0 = 170, plot_w = 520, bar_h = 18, gap = 10, top = 52;
	const double legend_h = 60;
	double H = top + (double)plot->n_bars * (bar_h + gap) + 40 + legend_h;
	double hi = widest_ms(plot);
	struct mp_svg_axis axis = {.scale = MP_SVG_LINEAR, .label = "ms per step"};
	if (!(hi > 0.0) || mp_svg_axis_fit(&axis, 0.0, hi, 6) != 0) {
		return MP_EINVAL;
	}
	struct mp_svg *svg = NULL;
	int rc = mp_svg_create(W, H, plot->title ? plot->title : "Serving step per width", &svg);
	if (rc) {
		return rc;
	}
	if (plot->title) {
		mp_svg_text(svg, 16, 24, MP_SVG_START, 16, true, "title", NULL, plot->title);
	}
	double px_per_ms = plot_w / axis.max;
	for (size_t i = 0; i < plot->n_bars && rc == 0; i++) {
		rc = draw_bar(svg, &plot->bars[i], i, x0, top + (double)i * (bar_h + gap), bar_h,
			      px_per_ms);
	}
	/* Ticks under the bars. */
	double ticks[16];
	size_t n = mp_svg_axis_ticks(&axis, 6, ticks, 16);
	double ya = top + (double)plot->n_bars * (bar_h + gap) + 14;
	for (size_t i = 0; i < n && i < 16 && rc == 0; i++) {
		char t[32];
		snprintf(t, sizeof(t), "%g", ticks[i]);
		rc = mp_svg_text(svg, x0 + ticks[i] * px_per_ms, ya, MP_SVG_MIDDLE, 11, false, NULL, NULL, t);
	}
	if (rc == 0) {
		rc = mp_svg_text(svg, x0 + plot_w / 2, ya + 16, MP_SVG_MIDDLE, 12, false, NULL, NULL,
				 "ms per step (segments: terms; black tick: the step with its overlap)");
	}
	/* Legend: one swatch per term. */
	double lx = x0, ly = ya + 34;
	for (int t = 0; t < MP_TERM_COUNT && rc == 0; t++) {
		char id[48];
		const char *name = mp_step_term_name((enum mp_step_term_id)t);
		snprintf(id, sizeof(id), "legend-%s", name);
		rc = mp_svg_rect(svg, lx, ly, 12, 12, term_color(t), id, name);
		if (rc == 0) {
			rc = mp_svg_text(svg, lx + 16, ly + 10, MP_SVG_START, 11, false, NULL, NULL, name);
		}
		lx += 24 + mp_svg_text_width(name, 11);
		if (lx > W - 100) {
			lx = x0;
			ly += 18;
		}
	}
	if (rc == 0) {
		rc = mp_svg_status(svg);
	}
	if (rc == 0) {
		rc = mp_write_atomic(path, write_svg, svg);
	}
	mp_svg_destroy(svg);
	return rc;
}
