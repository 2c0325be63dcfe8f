/* Tests of the SVG writer (svg.h) and the plots drawn with it (plots.h).
 *
 * Every SVG produced here is checked to be well-formed XML by a small
 * independent checker (svg-check.h: balanced tags, one root, quoted
 * attributes without '<', valid entity references, no duplicate
 * attributes, valid UTF-8).
 * Pixel positions are hand-computed from the panel geometry written in each
 * test; roofline figures come from the seed article (quoted).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "moeplan/diag.h"
#include "moeplan/plots.h"
#include "moeplan/svg.h"

#include "svg-check.h"

/* --- helpers ----------------------------------------------------------- */

/* cmocka 1.1.5 (Debian 12) compares only floats; doubles need this. */
static void near(double a, double b, double eps, const char *file, int line)
{
	if (!(fabs(a - b) <= eps)) {
		fail_msg("%s:%d: %.17g is not %.17g (within %g)", file, line, a, b, eps);
	}
}
#define assert_near(a, b, eps) near((a), (b), (eps), __FILE__, __LINE__)

/* Everything written to f, NUL-terminated (caller frees); closes f. */
static char *slurp(FILE *f)
{
	long size = ftell(f);
	assert_true(size >= 0);
	char *text = malloc((size_t)size + 1);
	assert_non_null(text);
	rewind(f);
	assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
	text[size] = '\0';
	assert_int_equal(fclose(f), 0);
	return text;
}

/* The document's text (caller frees). */
static char *render(const struct mp_svg *svg)
{
	FILE *f = tmpfile();
	assert_non_null(f);
	assert_int_equal(mp_svg_write(svg, f), 0);
	return slurp(f);
}

static char *render_with(int (*fn)(FILE *out, const void *plot), const void *plot, int *rc)
{
	FILE *f = tmpfile();
	assert_non_null(f);
	*rc = fn(f, plot);
	return slurp(f);
}

static int write_roofline(FILE *out, const void *plot)
{
	return mp_plot_roofline_write(plot, out);
}

static int write_heatmap(FILE *out, const void *plot)
{
	return mp_plot_heatmap_write(plot, out);
}

static int write_pareto(FILE *out, const void *plot)
{
	return mp_plot_pareto_write(plot, out);
}

/* The start of the element whose id is `id`. */
static const char *element(const char *doc, const char *id)
{
	char key[128];
	snprintf(key, sizeof(key), " id=\"%s\"", id);
	const char *at = strstr(doc, key);
	if (!at) {
		return NULL;
	}
	while (at > doc && *at != '<') {
		at--;
	}
	return at;
}

/* The value of attribute `name` of the element starting at el. */
static bool attr(const char *el, const char *name, char *buf, size_t size)
{
	char key[64];
	snprintf(key, sizeof(key), " %s=\"", name);
	const char *end = strchr(el, '>');
	const char *at = strstr(el, key);
	if (!at || !end || at > end) {
		return false;
	}
	at += strlen(key);
	const char *q = strchr(at, '"');
	size_t n = (size_t)(q - at);
	if (n >= size) {
		return false;
	}
	memcpy(buf, at, n);
	buf[n] = '\0';
	return true;
}

/* The text content of the element starting at el. */
static bool content(const char *el, char *buf, size_t size)
{
	const char *start = strchr(el, '>');
	const char *end = start ? strchr(start, '<') : NULL;
	if (!end || (size_t)(end - start - 1) >= size) {
		return false;
	}
	memcpy(buf, start + 1, (size_t)(end - start - 1));
	buf[end - start - 1] = '\0';
	return true;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *at = strstr(hay, needle); at; at = strstr(at + 1, needle)) {
		n++;
	}
	return n;
}

/* A 400 x 300 panel whose plot area is x 50..390, y 20..270 (margins
 * left 50, right 10, top 20, bottom 30): 340 px wide, 250 px high. */
static struct mp_svg_panel_spec simple_spec(enum mp_svg_scale xs, double x0, double x1,
					    enum mp_svg_scale ys, double y0, double y1)
{
	return (struct mp_svg_panel_spec){
		.id = "p",
		.x = 0, .y = 0, .width = 400, .height = 300,
		.margin_left = 50, .margin_right = 10, .margin_top = 20, .margin_bottom = 30,
		.x_axis = {.scale = xs, .min = x0, .max = x1, .label = "x"},
		.y_axis = {.scale = ys, .min = y0, .max = y1, .label = "y"},
	};
}

/* --- low level ----------------------------------------------------------- */

/* The checker itself must be able to fail, or the checks below prove
 * nothing. */
static void svg__checker_rejects_malformed_xml(void **state)
{
	(void)state;
	assert_true(svg_well_formed("<?xml version=\"1.0\"?>\n<svg a=\"1\"><g/><text>a &amp; b</text></svg>\n"));
	const char *bad[] = {
		"<svg><g></svg>",                   /* unclosed */
		"<svg></g></svg>",                  /* stray close */
		"<svg a=\"1\" a=\"2\"/>",          /* duplicate attribute */
		"<svg a=\"x<y\"/>",                /* '<' in a value */
		"<svg>a & b</svg>",                 /* bare '&' */
		"<svg>a &bogus; b</svg>",           /* unknown entity */
		"<svg a=1/>",                       /* unquoted */
		"<svg/><svg/>",                     /* two roots */
		"<svg>\xff</svg>",                  /* not UTF-8 */
		"<svg>\x01</svg>",                  /* control character */
		"text<svg/>",                       /* text outside the root */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_false(svg_well_formed(bad[i]));
	}
}

static void svg__linear_values_map_to_hand_computed_pixels(void **state)
{
	(void)state;
	struct mp_svg *svg = NULL;
	assert_int_equal(mp_svg_create(400, 300, "t", &svg), 0);
	struct mp_svg_panel *p = NULL;
	struct mp_svg_panel_spec spec = simple_spec(MP_SVG_LINEAR, 0, 10, MP_SVG_LINEAR, 0, 100);
	assert_int_equal(mp_svg_panel_begin(svg, &spec, &p), 0);
	/* x = 50 + v / 10 * 340; y = 270 - v / 100 * 250:
	 * (0, 0) -> (50, 270); (2.5, 40) -> (135, 170); (10, 100) -> (390, 20). */
	assert_near(mp_svg_panel_x(p, 2.5), 135.0, 1e-9);
	assert_near(mp_svg_panel_y(p, 40), 170.0, 1e-9);
	double xs[] = {0, 2.5, 10}, ys[] = {0, 40, 100};
	assert_int_equal(mp_svg_panel_series(p, &(struct mp_svg_series){
		.id = "s1", .label = "one", .style = MP_SVG_LINE | MP_SVG_MARKERS,
		.x = xs, .y = ys, .n = 3}), 0);
	assert_int_equal(mp_svg_panel_end(p), 0);
	char *doc = render(svg);
	assert_true(svg_well_formed(doc));
	const char *g = element(doc, "s1");
	assert_non_null(g);
	char cls[32], label[32], pts[128];
	assert_true(attr(g, "class", cls, sizeof(cls)));
	assert_string_equal(cls, "series");
	assert_true(attr(g, "data-label", label, sizeof(label)));
	assert_string_equal(label, "one");
	const char *line = strstr(g, "<polyline");
	assert_non_null(line);
	assert_true(attr(line, "points", pts, sizeof(pts)));
	assert_string_equal(pts, "50.00,270.00 135.00,170.00 390.00,20.00");
	/* The middle marker sits at (135, 170). */
	assert_non_null(strstr(g, "cx=\"135.00\" cy=\"170.00\""));
	/* A legend entry for the series. */
	const char *legend = element(doc, "p-legend");
	assert_non_null(legend);
	assert_non_null(strstr(legend, ">one</text>"));
	free(doc);
	mp_svg_destroy(svg);
}

static void svg__log_axis_ticks_at_decades_and_pixels(void **state)
{
	(void)state;
	double t[16];
	struct mp_svg_axis a = {.scale = MP_SVG_LOG, .min = 1, .max = 1e4};
	assert_int_equal(mp_svg_axis_ticks(&a, 8, t, 16), 5);
	double want[] = {1, 10, 100, 1000, 10000};
	for (size_t i = 0; i < 5; i++) {
		assert_near(t[i], want[i], want[i] * 1e-12);
	}
	/* At most max_ticks + 1 = 3 ticks: every second decade. */
	assert_int_equal(mp_svg_axis_ticks(&a, 2, t, 16), 3);
	assert_near(t[0], 1, 1e-12);
	assert_near(t[1], 100, 1e-10);
	assert_near(t[2], 1e4, 1e-8);
	/* Less than a decade shown: 1-2-5 multiples. */
	a = (struct mp_svg_axis){.scale = MP_SVG_LOG, .min = 1.5, .max = 8};
	assert_int_equal(mp_svg_axis_ticks(&a, 8, t, 16), 2);
	assert_near(t[0], 2, 1e-12);
	assert_near(t[1], 5, 1e-12);
	/* Fitting widens to whole decades. */
	a = (struct mp_svg_axis){.scale = MP_SVG_LOG};
	assert_int_equal(mp_svg_axis_fit(&a, 0.5, 2e3, 8), 0);
	assert_near(a.min, 0.1, 1e-15);
	assert_near(a.max, 1e4, 1e-8);
	assert_int_equal(mp_svg_axis_fit(&a, 0, 10, 8), MP_EINVAL);
	assert_int_equal(mp_svg_axis_fit(&a, 1, (double)NAN, 8), MP_EINVAL);

	struct mp_svg *svg = NULL;
	assert_int_equal(mp_svg_create(400, 300, NULL, &svg), 0);
	struct mp_svg_panel *p = NULL;
	struct mp_svg_panel_spec spec = simple_spec(MP_SVG_LOG, 1, 1e4, MP_SVG_LOG, 1e12, 1e16);
	assert_int_equal(mp_svg_panel_begin(svg, &spec, &p), 0);
	/* x = 50 + log10(v) / 4 * 340: 100 -> 220, 10 -> 135.
	 * y = 270 - (log10(v) - 12) / 4 * 250: 1e15 -> 82.5. */
	assert_near(mp_svg_panel_x(p, 100), 220.0, 1e-9);
	assert_near(mp_svg_panel_x(p, 10), 135.0, 1e-9);
	assert_near(mp_svg_panel_y(p, 1e15), 82.5, 1e-9);
	assert_true(isnan(mp_svg_panel_x(p, 0)));
	assert_true(isnan(mp_svg_panel_x(p, -3)));
	assert_int_equal(mp_svg_panel_end(p), 0);
	char *doc = render(svg);
	assert_true(svg_well_formed(doc));
	/* Decade labels with SI prefixes: 1e15 is "1P", 1e13 "10T". */
	assert_non_null(strstr(doc, ">1P</text>"));
	assert_non_null(strstr(doc, ">10T</text>"));
	assert_non_null(strstr(doc, ">1k</text>"));
	free(doc);
	mp_svg_destroy(svg);
}

static void svg__linear_ticks_are_nice(void **state)
{
	(void)state;
	double t[32];
	/* [0, 10] with at most 5 intervals: step 10/5 = 2. */
	struct mp_svg_axis a = {.scale = MP_SVG_LINEAR, .min = 0, .max = 10};
	assert_int_equal(mp_svg_axis_ticks(&a, 5, t, 32), 6);
	for (size_t i = 0; i < 6; i++) {
		assert_near(t[i], 2.0 * (double)i, 1e-12);
	}
	/* Counts: never a 0.5 step. */
	a = (struct mp_svg_axis){.scale = MP_SVG_LINEAR, .min = 0, .max = 3, .integer = true};
	assert_int_equal(mp_svg_axis_ticks(&a, 10, t, 32), 4);
	assert_near(t[3], 3, 1e-12);
	/* [0, 0.93] -> step 0.186 rounds up to 0.2 -> [0, 1]. */
	a = (struct mp_svg_axis){.scale = MP_SVG_LINEAR};
	assert_int_equal(mp_svg_axis_fit(&a, 0, 0.93, 5), 0);
	assert_near(a.min, 0, 1e-12);
	assert_near(a.max, 1.0, 1e-12);
	/* [1.1, 10.9]: step 2 gives [0, 12], 6 intervals > 5, so step 5: [0, 15]. */
	assert_int_equal(mp_svg_axis_fit(&a, 1.1, 10.9, 5), 0);
	assert_near(a.min, 0, 1e-12);
	assert_near(a.max, 15, 1e-12);
	/* A single value gets a range around it. */
	assert_int_equal(mp_svg_axis_fit(&a, 5, 5, 5), 0);
	assert_true(a.min < 5 && a.max > 5);
}

static void svg__escapes_labels(void **state)
{
	(void)state;
	struct mp_svg *svg = NULL;
	assert_int_equal(mp_svg_create(400, 300, "a <b> & \"c\"", &svg), 0);
	struct mp_svg_panel *p = NULL;
	struct mp_svg_panel_spec spec = simple_spec(MP_SVG_LINEAR, 0, 1, MP_SVG_LINEAR, 0, 1);
	spec.title = "x<y & y>z";
	assert_int_equal(mp_svg_panel_begin(svg, &spec, &p), 0);
	double xs[] = {0.2, 0.8}, ys[] = {0.2, 0.8};
	/* "<script>&'\xff\x01": markup, an apostrophe, a byte that is not
	 * UTF-8 and a control character. */
	assert_int_equal(mp_svg_panel_series(p, &(struct mp_svg_series){
		.id = "s", .label = "<script>&'\xff\x01", .x = xs, .y = ys, .n = 2}), 0);
	assert_int_equal(mp_svg_panel_point(p, 0.5, 0.5, "pt", "p&q <r>", 1, MP_SVG_CIRCLE), 0);
	assert_int_equal(mp_svg_panel_end(p), 0);
	assert_int_equal(mp_svg_text(svg, 10, 10, MP_SVG_START, 10, false, "note", "n", "1 < 2 > 0 & ok"), 0);
	char *doc = render(svg);
	assert_true(svg_well_formed(doc));
	assert_null(strstr(doc, "<script>"));
	assert_null(strstr(doc, "<b>"));
	assert_non_null(strstr(doc, "<title>a &lt;b&gt; &amp; &quot;c&quot;</title>"));
	assert_non_null(strstr(doc, "x&lt;y &amp; y&gt;z"));
	assert_non_null(strstr(doc, "data-label=\"&lt;script&gt;&amp;&apos;??\""));
	assert_non_null(strstr(doc, ">p&amp;q &lt;r&gt;</text>"));
	assert_non_null(strstr(doc, ">1 &lt; 2 &gt; 0 &amp; ok</text>"));
	free(doc);
	mp_svg_destroy(svg);
}

static void svg__nonfinite_points_are_skipped(void **state)
{
	(void)state;
	struct mp_svg *svg = NULL;
	assert_int_equal(mp_svg_create(400, 300, NULL, &svg), 0);
	struct mp_svg_panel *p = NULL;
	struct mp_svg_panel_spec spec = simple_spec(MP_SVG_LINEAR, 0, 10, MP_SVG_LOG, 1, 100);
	assert_int_equal(mp_svg_panel_begin(svg, &spec, &p), 0);
	/* NaN, +inf and a value <= 0 on the log axis each break the line:
	 * (1,1) | (3,3) (4,4) | (6,6) | (8,8). */
	double xs[] = {1, 2, 3, 4, 5, 6, 7, 8};
	double ys[] = {1, (double)NAN, 3, 4, HUGE_VAL, 6, -1, 8};
	assert_int_equal(mp_svg_panel_series(p, &(struct mp_svg_series){
		.id = "s", .style = MP_SVG_LINE | MP_SVG_MARKERS, .x = xs, .y = ys, .n = 8}), 0);
	/* A point or a line at NaN draws nothing and fails nothing. */
	assert_int_equal(mp_svg_panel_point(p, (double)NAN, 3, "pt", "bad point", 0, MP_SVG_CIRCLE), 0);
	assert_int_equal(mp_svg_panel_hline(p, HUGE_VAL, "h", "bad line", 0, 0), 0);
	assert_int_equal(mp_svg_panel_end(p), 0);
	char *doc = render(svg);
	assert_true(svg_well_formed(doc));
	const char *g = element(doc, "s");
	assert_non_null(g);
	const char *end = element(doc, "pt");
	assert_non_null(end);
	size_t lines = 0, markers = 0;
	for (const char *at = strstr(g, "<polyline"); at && at < end; at = strstr(at + 1, "<polyline")) {
		lines++;
	}
	for (const char *at = strstr(g, "class=\"marker\""); at && at < end;
	     at = strstr(at + 1, "class=\"marker\"")) {
		markers++;
	}
	assert_int_equal(lines, 4);
	assert_int_equal(markers, 5);
	assert_null(strstr(doc, "nan"));
	assert_null(strstr(doc, "inf\""));
	assert_null(strstr(element(doc, "pt"), "<circle"));
	free(doc);
	mp_svg_destroy(svg);
}

static void svg__bad_or_repeated_ids_fail(void **state)
{
	(void)state;
	struct mp_svg *svg = NULL;
	assert_int_equal(mp_svg_create(400, 300, NULL, &svg), 0);
	struct mp_svg_panel *p = NULL;
	struct mp_svg_panel_spec spec = simple_spec(MP_SVG_LINEAR, 0, 1, MP_SVG_LINEAR, 0, 1);
	assert_int_equal(mp_svg_panel_begin(svg, &spec, &p), 0);
	double v[] = {0.5};
	assert_int_equal(mp_svg_panel_series(p, &(struct mp_svg_series){
		.id = "a", .x = v, .y = v, .n = 1}), 0);
	assert_int_equal(mp_svg_panel_series(p, &(struct mp_svg_series){
		.id = "a", .x = v, .y = v, .n = 1}), MP_EINVAL);
	/* Sticky: the document stays failed. */
	assert_int_equal(mp_svg_status(svg), MP_EINVAL);
	assert_int_equal(mp_svg_panel_end(p), MP_EINVAL);
	assert_int_equal(mp_svg_write(svg, stdout), MP_EINVAL);
	mp_svg_destroy(svg);

	assert_int_equal(mp_svg_create(400, 300, NULL, &svg), 0);
	spec.id = "1starts-with-digit";
	assert_int_equal(mp_svg_panel_begin(svg, &spec, &p), MP_EINVAL);
	mp_svg_destroy(svg);

	assert_int_equal(mp_svg_create(400, 300, NULL, &svg), 0);
	spec = simple_spec(MP_SVG_LOG, 0, 10, MP_SVG_LINEAR, 0, 1);
	assert_int_equal(mp_svg_panel_begin(svg, &spec, &p), MP_EINVAL);
	mp_svg_destroy(svg);

	assert_int_equal(mp_svg_create(0, 300, NULL, &svg), MP_EINVAL);
	assert_int_equal(mp_svg_create((double)NAN, 300, NULL, &svg), MP_EINVAL);
}

static void svg__colormap_is_viridis(void **state)
{
	(void)state;
	char c[16];
	/* matplotlib _viridis_data[0] = (0.267004, 0.004874, 0.329415) ->
	 * (68, 1, 84); [128] = (0.127568, 0.566949, 0.550556) -> (33, 145, 140);
	 * [255] = (0.993248, 0.906157, 0.143936) -> (253, 231, 37). */
	mp_svg_colormap(0, c, sizeof(c));
	assert_string_equal(c, "#440154");
	mp_svg_colormap(0.5, c, sizeof(c));
	assert_string_equal(c, "#21918c");
	mp_svg_colormap(1, c, sizeof(c));
	assert_string_equal(c, "#fde725");
	mp_svg_colormap(7, c, sizeof(c));
	assert_string_equal(c, "#fde725");
	/* Half way between [0] (68, 1, 84) and [32] (71, 45, 123):
	 * (69.5, 23, 103.5) rounds to (70, 23, 104). */
	mp_svg_colormap(1.0 / 16.0, c, sizeof(c));
	assert_string_equal(c, "#461768");
	mp_svg_colormap((double)NAN, c, sizeof(c));
	assert_string_equal(c, "#bdbdbd");
}

static void svg__si_format(void **state)
{
	(void)state;
	char b[32];
	mp_svg_format_si(5e15, "FLOP/s", b, sizeof(b));
	assert_string_equal(b, "5 PFLOP/s");
	mp_svg_format_si(625, "FLOP/B", b, sizeof(b));
	assert_string_equal(b, "625 FLOP/B");
	mp_svg_format_si(8e12, NULL, b, sizeof(b));
	assert_string_equal(b, "8T");
	/* 999.96 rounds to 1000 at 3 digits: the prefix follows the rounding. */
	mp_svg_format_si(999.96, NULL, b, sizeof(b));
	assert_string_equal(b, "1k");
	mp_svg_format_si(0.5, "s", b, sizeof(b));
	assert_string_equal(b, "0.5 s");
}

/* Colour-bar ticks of [0, 100000] over 300 px: step 20000, so by hand
 * 0, 20k, 40k, 60k, 80k, 100k; at one significant digit 80000 used to be
 * printed as "8e+01k". */
static void svg__tick_labels_have_no_exponent(void **state)
{
	(void)state;
	struct mp_svg *svg = NULL;
	assert_int_equal(mp_svg_create(200, 400, NULL, &svg), 0);
	assert_int_equal(mp_svg_colorbar(svg, 10, 10, 16, 300, 0, 100000, "cb", "load"), 0);
	char *doc = render(svg);
	assert_non_null(strstr(doc, ">80k<"));
	assert_non_null(strstr(doc, ">100k<"));
	assert_null(strstr(doc, "e+"));
	free(doc);
	mp_svg_destroy(svg);
}

/* --- roofline ------------------------------------------------------------ */

/* Issue 16 item 10: a width that cannot hold the model is drawn dashed in
 * grey (#888888, mp_svg_color 10) with "(does not fit)" after its label;
 * the width that fits keeps its solid palette colour (#0072B2, colour 0). */
static void svg__roofline_marks_widths_that_do_not_fit(void **state)
{
	(void)state;
	struct mp_plot_roof roofs[] = {{"fp8", 5e15}};
	double r[] = {1, 512};
	double t64[] = {1536.0 / 448.0, 512 * 1536.0 / 448.0};
	double t2[] = {48.0 / 392.0, 512 * 48.0 / 392.0};
	struct mp_plot_ep_curve curves[] = {
		{.label = "EP64", .requests_per_gpu = r, .tokens_per_expert = t64, .n = 2},
		{.label = "EP2", .requests_per_gpu = r, .tokens_per_expert = t2, .n = 2,
		 .does_not_fit = true},
	};
	struct mp_plot_roofline plot;
	mp_plot_roofline_init(&plot);
	plot.hbm_bw_bytes_per_s = 8e12;
	plot.roofs = roofs;
	plot.n_roofs = 1;
	plot.curves = curves;
	plot.n_curves = 2;
	int rc;
	char *doc = render_with(write_roofline, &plot, &rc);
	assert_int_equal(rc, 0);
	assert_true(svg_well_formed(doc));
	char buf[128];
	assert_true(attr(element(doc, "ep-1"), "data-label", buf, sizeof(buf)));
	assert_string_equal(buf, "EP2 (does not fit)");
	assert_true(attr(element(doc, "ep-0"), "data-label", buf, sizeof(buf)));
	assert_string_equal(buf, "EP64");
	/* The series groups: ep-1 is grey and dashed, ep-0 is neither. */
	const char *g1 = element(doc, "ep-1");
	const char *e1 = strstr(g1, "</g>");
	const char *g0 = element(doc, "ep-0");
	const char *e0 = strstr(g0, "</g>");
	assert_non_null(e1);
	assert_non_null(e0);
	const char *dash = strstr(g1, "stroke-dasharray=");
	const char *grey = strstr(g1, "stroke=\"#888888\"");
	assert_true(dash && dash < e1);
	assert_true(grey && grey < e1);
	dash = strstr(g0, "stroke-dasharray=");
	const char *blue = strstr(g0, "stroke=\"#0072B2\"");
	assert_true(!dash || dash > e0);
	assert_true(blue && blue < e0);
	/* The legend says so, with a dashed grey sample line. */
	const char *legend = element(doc, "ep-legend");
	assert_non_null(legend);
	const char *text = strstr(legend, ">EP2 (does not fit)</text>");
	assert_non_null(text);
	assert_non_null(strstr(legend, ">EP64</text>"));
	free(doc);
}

/* The seed article: "A GB200 GPU delivers 5 PFLOP/s of FP8 tensor-core
 * arithmetic ... against 8 TB/s of HBM bandwidth, so its ridge sits at
 * R = 625 FLOPs per byte". "In an EP64 group with 448 slots, top-6 routing
 * and four tokens per request, t = 192 is reached at about 56 requests per
 * GPU ... In an EP8 group the same crossing would need 416 requests per
 * GPU" (EP8: 52 experts per GPU, 416 slots).
 * By hand: t = N_EP * 4 r * 6 / E_phys; EP64: t = 1536 r / 448, t = 192 at
 * r = 192 * 448 / 1536 = 56; EP8: t = 192 r / 416, t = 192 at r = 416. */
static void svg__roofline_has_roofs_ridges_points_and_crossings(void **state)
{
	(void)state;
	struct mp_plot_roof roofs[] = {{"fp8", 5e15}, {"bf16", 2.5e15}};
	struct mp_plot_op_point points[] = {
		{"decode EP64 <60 req>", 3.76 * 236, 0},
		{"prefill EP2", 2000, 0},
	};
	double r[] = {1, 512};
	double t64[] = {1536.0 / 448.0, 512 * 1536.0 / 448.0};
	double t8[] = {192.0 / 416.0, 512 * 192.0 / 416.0};
	struct mp_plot_ep_curve curves[] = {
		{"EP8", r, t8, 2, false},
		{"EP64", r, t64, 2, false},
	};
	struct mp_plot_xy ep_points[] = {{"decode EP64", 60, 236}};
	struct mp_plot_roofline plot;
	mp_plot_roofline_init(&plot);
	plot.title = "GB200 & V4.1-Flash";
	plot.hbm_bw_bytes_per_s = 8e12;
	plot.roofs = roofs;
	plot.n_roofs = 2;
	plot.points = points;
	plot.n_points = 2;
	plot.curves = curves;
	plot.n_curves = 2;
	plot.ep_points = ep_points;
	plot.n_ep_points = 1;
	plot.t_star = 192;
	int rc;
	char *doc = render_with(write_roofline, &plot, &rc);
	assert_int_equal(rc, 0);
	assert_true(svg_well_formed(doc));
	char buf[128];
	const char *ids[] = {"roofline", "ep", "roof-0", "roof-1", "ridge-0", "ridge-1", "point-0",
			     "point-1", "ep-0", "ep-1", "t-star", "ep-0-cross", "ep-1-cross",
			     "ep-point-0"};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		assert_non_null(element(doc, ids[i]));
	}
	assert_true(attr(element(doc, "roof-0"), "data-label", buf, sizeof(buf)));
	assert_string_equal(buf, "fp8: 5 PFLOP/s, ridge 625 FLOP/B");
	assert_true(attr(element(doc, "ridge-0"), "data-x", buf, sizeof(buf)));
	assert_string_equal(buf, "625");
	assert_true(attr(element(doc, "ridge-0"), "data-y", buf, sizeof(buf)));
	assert_string_equal(buf, "5e+15");
	/* bf16: 2.5e15 / 8e12 = 312.5. */
	assert_true(attr(element(doc, "ridge-1"), "data-x", buf, sizeof(buf)));
	assert_string_equal(buf, "312.5");
	/* The prefill point is past the ridge: on the flat roof, 5e15. */
	assert_true(attr(element(doc, "point-1"), "data-y", buf, sizeof(buf)));
	assert_string_equal(buf, "5e+15");
	/* Decode at I = 887.36 is past 625 too; at I = 3.76 x 236 / 2 it
	 * would be on the slope. Its label is escaped. */
	assert_true(attr(element(doc, "point-0"), "data-label", buf, sizeof(buf)));
	assert_string_equal(buf, "decode EP64 &lt;60 req&gt;");
	assert_true(attr(element(doc, "ep-1-cross"), "data-x", buf, sizeof(buf)));
	assert_string_equal(buf, "56");
	assert_true(attr(element(doc, "ep-0-cross"), "data-x", buf, sizeof(buf)));
	assert_string_equal(buf, "416");
	assert_true(attr(element(doc, "ep-1"), "data-label", buf, sizeof(buf)));
	assert_string_equal(buf, "EP64: t* at 56 req/GPU");
	assert_true(attr(element(doc, "t-star"), "data-value", buf, sizeof(buf)));
	assert_string_equal(buf, "192");
	free(doc);

	/* A point on the slope: I = 100 -> 100 x 8e12 = 8e14 FLOP/s. */
	points[0].intensity = 100;
	doc = render_with(write_roofline, &plot, &rc);
	assert_int_equal(rc, 0);
	assert_true(attr(element(doc, "point-0"), "data-y", buf, sizeof(buf)));
	assert_string_equal(buf, "8e+14");
	free(doc);
}

struct box {
	double x0, y0, x1, y1;
};

static bool boxes_meet(struct box a, struct box b)
{
	return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

/* The box of the label drawn for marker `owner`, estimated here from the
 * text element alone: 0.6 em a character (DejaVu Sans averages 0.55 em;
 * 0.6 errs wide), from 0.8 em above the baseline to 0.25 em below. */
static bool label_box(const char *doc, const char *owner, struct box *b)
{
	char key[96], buf[256];
	snprintf(key, sizeof(key), "<g class=\"label\" data-for=\"%s\">", owner);
	const char *g = strstr(doc, key);
	const char *t = g ? strstr(g, "<text") : NULL;
	if (!t || !attr(t, "x", buf, sizeof(buf))) {
		return false;
	}
	double x = strtod(buf, NULL);
	if (!attr(t, "y", buf, sizeof(buf))) {
		return false;
	}
	double y = strtod(buf, NULL);
	if (!attr(t, "font-size", buf, sizeof(buf))) {
		return false;
	}
	double size = strtod(buf, NULL);
	if (!attr(t, "text-anchor", buf, sizeof(buf)) || !content(t, key, sizeof(key))) {
		return false;
	}
	double w = 0.6 * size * (double)strlen(key);
	double x0 = strcmp(buf, "middle") == 0 ? x - w / 2 : strcmp(buf, "end") == 0 ? x - w : x;
	*b = (struct box){x0, y - 0.8 * size, x0 + w, y + 0.25 * size};
	return true;
}

/* The box of a ring marker (its circle, stroke included). */
static bool ring_box(const char *doc, const char *id, struct box *b)
{
	const char *el = element(doc, id);
	const char *c = el ? strstr(el, "<circle") : NULL;
	char buf[64];
	if (!c || !attr(c, "cx", buf, sizeof(buf))) {
		return false;
	}
	double cx = strtod(buf, NULL);
	if (!attr(c, "cy", buf, sizeof(buf))) {
		return false;
	}
	double cy = strtod(buf, NULL);
	if (!attr(c, "r", buf, sizeof(buf))) {
		return false;
	}
	double r = strtod(buf, NULL) + 1;
	*b = (struct box){cx - r, cy - r, cx + r, cy + r};
	return true;
}

/* Issue 16 item 10: the prefill roofline put the operating point's label
 * on the fp4 ridge marker. B200 (report of plans/default.yaml): HBM 8 TB/s,
 * fp4 9, fp8 4.5, bf16 2.25 PFLOP/s, so ridges at 1125, 562.5 and 281.25
 * FLOP/B; the prefill point (EP2, 16384 tokens/GPU) at 1339.37 FLOP/B on
 * the fp8 roof. Points near the fp4 ridge on either roof are tried too:
 * the label's box must meet no ridge marker's box. */
static void svg__roofline_point_label_clears_the_ridge_markers(void **state)
{
	(void)state;
	struct mp_plot_roof roofs[] = {{"fp4", 9e15}, {"fp8", 4.5e15}, {"bf16", 2.25e15}};
	/* A decode point far down the slope squeezes the decades, so that the
	 * fp8 roof runs close under the fp4 ridge. */
	struct mp_plot_op_point points[] = {{"prefill EP2, 16384 tokens/GPU", 1339.37, 1},
					    {"decode", 0.5, 2}};
	struct mp_plot_op_point *point = &points[0];
	struct mp_plot_roofline plot;
	mp_plot_roofline_init(&plot);
	plot.title = "DeepSeek-V4.1-Flash prefill on NVIDIA HGX B200";
	plot.hbm_bw_bytes_per_s = 8e12;
	plot.roofs = roofs;
	plot.n_roofs = 3;
	const double intensity[] = {1339.37, 1125, 1200, 1000, 900, 1500, 600};
	for (size_t roof = 0; roof < 2; roof++) {
		for (size_t i = 0; i < sizeof(intensity) / sizeof(intensity[0]); i++) {
			point->intensity = intensity[i];
			point->roof = roof;
			plot.points = points;
			plot.n_points = 1 + (i % 2);
			int rc;
			char *doc = render_with(write_roofline, &plot, &rc);
			assert_int_equal(rc, 0);
			assert_true(svg_well_formed(doc));
			struct box label = {0}, ring = {0};
			assert_true(label_box(doc, "point-0", &label));
			for (size_t r = 0; r < 3; r++) {
				char id[32];
				snprintf(id, sizeof(id), "ridge-%zu", r);
				assert_true(ring_box(doc, id, &ring));
				if (boxes_meet(label, ring)) {
					fail_msg("intensity %g on roof %zu: label over %s", intensity[i],
						 roof, id);
				}
			}
			free(doc);
		}
	}
}

static void svg__roofline_refuses_bad_numbers_without_output(void **state)
{
	(void)state;
	struct mp_plot_roof roofs[] = {{"fp8", 5e15}};
	struct mp_plot_op_point points[] = {{"p", (double)NAN, 0}};
	struct mp_plot_roofline plot;
	mp_plot_roofline_init(&plot);
	plot.hbm_bw_bytes_per_s = 8e12;
	plot.roofs = roofs;
	plot.n_roofs = 1;
	plot.points = points;
	plot.n_points = 1;

	char dir[] = "/tmp/test-svg-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof(path), "%s/roofline.svg", dir);
	assert_int_equal(mp_plot_roofline_save(&plot, path), MP_EINVAL);
	assert_int_equal(access(path, F_OK), -1);

	points[0].intensity = HUGE_VAL;
	assert_int_equal(mp_plot_roofline_save(&plot, path), MP_EINVAL);
	points[0].intensity = 10;
	points[0].roof = 1; /* no such roof */
	assert_int_equal(mp_plot_roofline_save(&plot, path), MP_EINVAL);
	points[0].roof = 0;
	roofs[0].peak_flops = (double)NAN;
	assert_int_equal(mp_plot_roofline_save(&plot, path), MP_EINVAL);
	roofs[0].peak_flops = 5e15;
	plot.t_star = (double)NAN;
	assert_int_equal(mp_plot_roofline_save(&plot, path), MP_EINVAL);
	plot.t_star = 0;
	plot.n_roofs = 0;
	assert_int_equal(mp_plot_roofline_save(&plot, path), MP_EINVAL);
	assert_int_equal(access(path, F_OK), -1);

	/* Valid now: written atomically, well-formed, nothing else left in dir. */
	plot.n_roofs = 1;
	assert_int_equal(mp_plot_roofline_save(&plot, path), 0);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char text[1 << 20];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	assert_true(svg_well_formed(text));
	assert_non_null(element(text, "roof-0"));
	assert_null(element(text, "ep"));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* --- heatmap ------------------------------------------------------------- */

/* The fill of the k-th cell (row-major) of heatmap `id`. */
static bool cell_fill(const char *doc, const char *id, size_t k, char *buf, size_t size)
{
	const char *g = element(doc, id);
	if (!g) {
		return false;
	}
	const char *at = strstr(g, "<rect");
	for (size_t i = 0; at && i < k; i++) {
		at = strstr(at + 1, "<rect");
	}
	return at && attr(at, "fill", buf, size);
}

static void svg__heatmap_factors_and_common_scale(void **state)
{
	(void)state;
	/* 3 layers x 4 GPUs. By hand, max / mean per row:
	 * before: {4,0,0,0} 4 / 1 = 4.00; {1,1,1,1} 1.00; {0,0,0,0} "-";
	 * after:  {1,1,1,1} 1.00; {2,1,1,0} 2 / 1 = 2.00; {0,0,0,0} "-". */
	double before[] = {4, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0};
	double after[] = {1, 1, 1, 1, 2, 1, 1, 0, 0, 0, 0, 0};
	uint32_t layer_ids[] = {3, 4, 5};
	struct mp_plot_heatmap plot;
	mp_plot_heatmap_init(&plot);
	plot.title = "loads";
	plot.n_layers = 3;
	plot.n_gpus = 4;
	plot.before = before;
	plot.after = after;
	plot.layer_ids = layer_ids;
	int rc;
	char *doc = render_with(write_heatmap, &plot, &rc);
	assert_int_equal(rc, 0);
	assert_true(svg_well_formed(doc));
	char buf[128];
	const char *want[][2] = {
		{"factor-before-0", "4.00"}, {"factor-before-1", "1.00"}, {"factor-before-2", "-"},
		{"factor-after-0", "1.00"},  {"factor-after-1", "2.00"},  {"factor-after-2", "-"},
	};
	for (size_t i = 0; i < 6; i++) {
		const char *el = element(doc, want[i][0]);
		assert_non_null(el);
		assert_true(content(el, buf, sizeof(buf)));
		assert_string_equal(buf, want[i][1]);
	}
	assert_true(attr(element(doc, "factor-before-0"), "class", buf, sizeof(buf)));
	assert_string_equal(buf, "factor worst");
	/* Worst and mean of the rows that carry load: before 4.00 at layer 3
	 * (row 0), mean (4 + 1) / 2 = 2.50. */
	assert_true(content(element(doc, "summary-before"), buf, sizeof(buf)));
	assert_string_equal(buf, "max/mean: worst 4.00 (layer 3), mean 2.50");
	/* One scale across the maps (issue 26 item 6: on a scale of its own
	 * a balanced "after" was painted in the hottest colours): 0..4 for
	 * both, so 4 is the top of viridis (#fde725), 0 its bottom (#440154)
	 * and the "after" map's 2 the middle, viridis(0.5) = #21918c
	 * (matplotlib's _viridis_data); both colour bars run to 4. Before the
	 * fix the "after" 2 was its own top, #fde725, its bar to 2. */
	assert_true(cell_fill(doc, "heatmap-before", 0, buf, sizeof(buf)));
	assert_string_equal(buf, "#fde725");
	assert_true(cell_fill(doc, "heatmap-before", 1, buf, sizeof(buf)));
	assert_string_equal(buf, "#440154");
	assert_true(cell_fill(doc, "heatmap-after", 4, buf, sizeof(buf)));
	assert_string_equal(buf, "#21918c");
	assert_true(attr(element(doc, "colorbar"), "data-max", buf, sizeof(buf)));
	assert_string_equal(buf, "4");
	assert_true(attr(element(doc, "colorbar-after"), "data-max", buf, sizeof(buf)));
	assert_string_equal(buf, "4");
	assert_true(attr(element(doc, "heatmap-after"), "data-rows", buf, sizeof(buf)));
	assert_string_equal(buf, "3");
	assert_int_equal(count(doc, " id=\"factor-"), 6);
	free(doc);

	/* One map only. */
	plot.after = NULL;
	doc = render_with(write_heatmap, &plot, &rc);
	assert_int_equal(rc, 0);
	assert_true(svg_well_formed(doc));
	assert_null(element(doc, "heatmap-after"));
	free(doc);

	/* NaN, infinite or negative loads are refused. */
	before[5] = (double)NAN;
	assert_int_equal(mp_plot_heatmap_write(&plot, stdout), MP_EINVAL);
	before[5] = -1;
	assert_int_equal(mp_plot_heatmap_write(&plot, stdout), MP_EINVAL);
	before[5] = 1;
	plot.after = after;
	after[0] = HUGE_VAL;
	assert_int_equal(mp_plot_heatmap_write(&plot, stdout), MP_EINVAL);
	plot.n_gpus = 0;
	assert_int_equal(mp_plot_heatmap_write(&plot, stdout), MP_EINVAL);
}

/* Three layers under a long colour-bar title: the title runs along the
 * bar, so the bar (as tall as the maps) must be at least as long as the
 * title, 41 characters at 0.6 x 12 px = 295.2 px (svg.h's estimate); at
 * the default 28 px per row it was 84 px and the title left the picture. */
static void svg__heatmap_rows_grow_to_fit_the_colorbar_title(void **state)
{
	(void)state;
	double before[] = {4, 0, 0, 0, 1, 1, 1, 1, 0, 1, 0, 0};
	struct mp_plot_heatmap plot;
	mp_plot_heatmap_init(&plot);
	plot.n_layers = 3;
	plot.n_gpus = 4;
	plot.before = before;
	plot.value_label = "token visits per GPU per step (mean 512)";
	int rc;
	char *doc = render_with(write_heatmap, &plot, &rc);
	assert_int_equal(rc, 0);
	assert_true(svg_well_formed(doc));
	const char *bar = element(doc, "colorbar");
	assert_non_null(bar);
	const char *rect = strstr(bar, "<rect");
	assert_non_null(rect);
	char buf[64];
	assert_true(attr(rect, "height", buf, sizeof(buf)));
	assert_true(strtod(buf, NULL) >= 0.6 * 12 * 41);
	free(doc);
}

/* Issue 16 item 10: a narrow phase (EP2 prefill of plans/default.yaml,
 * 40 layers) left a page of white beside its maps because the maps'
 * long titles set the width (1024 px). Content alone: the layer labels
 * (< 60 px), then per map 2 GPUs at 60 px at most, the max/mean column and
 * the colour bar with its ticks and title (< 200 px), or the summary line
 * (43 characters at 0.6 x 12 px = 310 px), with a gap of at most 40 px:
 * 60 + 2 x (310 + 40) = 760 px at most. The titles wrap: every line fits
 * its map's block and the lines, joined, give the whole title. */
static void svg__heatmap_narrow_phase_is_as_wide_as_its_content(void **state)
{
	(void)state;
	double before[40 * 2], after[40 * 2];
	for (size_t i = 0; i < 80; i++) {
		before[i] = 90000 + (double)(i * 7919 % 17) * 1000;
		after[i] = 98304;
	}
	const char *titles[] = {"before: round-robin, one replica per expert (192 per GPU)",
				"after: planned, 196 slots per GPU (8 redundant)"};
	struct mp_plot_heatmap plot;
	mp_plot_heatmap_init(&plot);
	plot.n_layers = 40;
	plot.n_gpus = 2;
	plot.before = before;
	plot.after = after;
	plot.before_label = titles[0];
	plot.after_label = titles[1];
	plot.value_label = "token visits per GPU per step (mean 98304)";
	int rc;
	char *doc = render_with(write_heatmap, &plot, &rc);
	assert_int_equal(rc, 0);
	assert_true(svg_well_formed(doc));
	char buf[256];
	const char *root = strstr(doc, "<svg");
	assert_true(attr(root, "width", buf, sizeof(buf)));
	double width = strtod(buf, NULL);
	assert_true(width <= 760);
	/* the second map starts where the first block ends */
	assert_true(attr(element(doc, "heatmap-before"), "x", buf, sizeof(buf)) ||
		    attr(strstr(element(doc, "heatmap-before"), "<rect"), "x", buf, sizeof(buf)));
	double x_before = strtod(buf, NULL);
	assert_true(attr(element(doc, "heatmap-after"), "x", buf, sizeof(buf)) ||
		    attr(strstr(element(doc, "heatmap-after"), "<rect"), "x", buf, sizeof(buf)));
	double block = strtod(buf, NULL) - x_before;
	assert_true(block > 0);
	char joined[2][256] = {"", ""};
	size_t lines = 0;
	for (const char *t = strstr(doc, "class=\"map-title\""); t;
	     t = strstr(t + 1, "class=\"map-title\"")) {
		const char *el = t;
		while (el > doc && *el != '<') {
			el--;
		}
		assert_true(attr(el, "x", buf, sizeof(buf)));
		int which = fabs(strtod(buf, NULL) - x_before) < 1 ? 0 : 1;
		assert_true(content(el, buf, sizeof(buf)));
		assert_true(0.6 * 13 * (double)strlen(buf) <= block);
		if (joined[which][0]) {
			strcat(joined[which], " ");
		}
		strcat(joined[which], buf);
		lines++;
	}
	assert_true(lines > 2); /* the before title did not fit on one line */
	assert_string_equal(joined[0], titles[0]);
	assert_string_equal(joined[1], titles[1]);
	free(doc);
}

/* --- pareto -------------------------------------------------------------- */

static void svg__pareto_is_a_step_line_with_markers(void **state)
{
	(void)state;
	double x[] = {0, 2, 5}, y[] = {10, 6, 5};
	double x2[] = {0, 4}, y2[] = {10, 7};
	struct mp_plot_series series[] = {{"exact", x, y, 3}, {"greedy", x2, y2, 2}};
	struct mp_plot_pareto plot;
	mp_plot_pareto_init(&plot);
	plot.series = series;
	plot.n_series = 2;
	plot.lower_bound = 4;
	int rc;
	char *doc = render_with(write_pareto, &plot, &rc);
	assert_int_equal(rc, 0);
	assert_true(svg_well_formed(doc));
	assert_non_null(element(doc, "pareto"));
	assert_non_null(element(doc, "pareto-1"));
	char buf[256];
	assert_true(attr(element(doc, "lower-bound"), "data-value", buf, sizeof(buf)));
	assert_string_equal(buf, "4");
	const char *g = element(doc, "pareto-0");
	assert_true(attr(g, "data-label", buf, sizeof(buf)));
	assert_string_equal(buf, "exact");
	assert_true(attr(strstr(g, "<polyline"), "points", buf, sizeof(buf)));
	/* 3 points + 2 corners: (x0,y0) (x1,y0) (x1,y1) (x2,y1) (x2,y2). */
	double px[5], py[5];
	int used = 0;
	const char *s = buf;
	for (int i = 0; i < 5; i++) {
		assert_int_equal(sscanf(s, "%lf,%lf%n", &px[i], &py[i], &used), 2);
		s += used;
	}
	assert_true(*s == '\0');
	assert_near(py[1], py[0], 1e-9);
	assert_near(px[1], px[2], 1e-9);
	assert_near(py[3], py[2], 1e-9);
	assert_near(px[3], px[4], 1e-9);
	/* Loads fall with moves: y grows downwards on screen. */
	assert_true(py[2] > py[0] && py[4] > py[2]);
	/* x = 0, 2, 5 are evenly scaled: (x1 - x0) / (x2 - x0) = 2 / 5. */
	assert_near((px[2] - px[0]) / (px[4] - px[0]), 0.4, 1e-3);
	free(doc);

	y[1] = (double)NAN;
	assert_int_equal(mp_plot_pareto_write(&plot, stdout), MP_EINVAL);
	y[1] = 6;
	plot.lower_bound = -1;
	assert_int_equal(mp_plot_pareto_write(&plot, stdout), MP_EINVAL);
	plot.lower_bound = 0;
	series[1].n = 0;
	assert_int_equal(mp_plot_pareto_write(&plot, stdout), MP_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(svg__checker_rejects_malformed_xml),
		cmocka_unit_test(svg__linear_values_map_to_hand_computed_pixels),
		cmocka_unit_test(svg__log_axis_ticks_at_decades_and_pixels),
		cmocka_unit_test(svg__linear_ticks_are_nice),
		cmocka_unit_test(svg__escapes_labels),
		cmocka_unit_test(svg__nonfinite_points_are_skipped),
		cmocka_unit_test(svg__bad_or_repeated_ids_fail),
		cmocka_unit_test(svg__colormap_is_viridis),
		cmocka_unit_test(svg__si_format),
		cmocka_unit_test(svg__tick_labels_have_no_exponent),
		cmocka_unit_test(svg__roofline_has_roofs_ridges_points_and_crossings),
		cmocka_unit_test(svg__roofline_point_label_clears_the_ridge_markers),
		cmocka_unit_test(svg__roofline_refuses_bad_numbers_without_output),
		cmocka_unit_test(svg__roofline_marks_widths_that_do_not_fit),
		cmocka_unit_test(svg__heatmap_factors_and_common_scale),
		cmocka_unit_test(svg__heatmap_rows_grow_to_fit_the_colorbar_title),
		cmocka_unit_test(svg__heatmap_narrow_phase_is_as_wide_as_its_content),
		cmocka_unit_test(svg__pareto_is_a_step_line_with_markers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
