/* moeplan (private, not installed): a small SVG writer for plots: a document, panels with linear
 * or logarithmic axes and "nice" ticks, polyline series with a legend,
 * labelled markers, reference lines, heatmaps with a colour bar.
 *
 * Plain SVG 1.1 text (no library): presentation attributes only, so any
 * renderer (rsvg-convert, browsers, Inkscape) draws the same picture.
 * Every series, marker and heatmap is a <g> with the caller's id, a
 * class ("series", "marker", "hline", "vline", "heatmap", "colorbar")
 * and the caller's label in data-label, so tests and scripts can find it.
 * Coordinates are written with two decimals; output is byte-identical
 * across runs for the same calls.
 *
 * Errors are sticky: the first failure (bad id, non-finite axis range,
 * allocation) is recorded in the document and every later call is a
 * no-op; mp_svg_status() and mp_svg_write() return it. Text (titles,
 * labels) is escaped (& < > " ') and invalid UTF-8 or control bytes are
 * replaced by '?', so the output is always well-formed XML.
 *
 * Pixels: the origin is the top-left corner of the document, y grows
 * downwards, 1 unit = 1 CSS px.
 */
#ifndef MOEPLAN_SVG_H
#define MOEPLAN_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mp_svg;
struct mp_svg_panel;

/** Start a document of width x height px (each in (0, 100000]) with a
 * <title> (may be NULL). Returns 0, MP_EINVAL (a size out of range) or
 * MP_ENOMEM; *out is set on success only. Free with mp_svg_destroy. */
int mp_svg_create(double width, double height, const char *title, struct mp_svg **out);

/** Free a document; accepts NULL. Panels still open are freed too. */
void mp_svg_destroy(struct mp_svg *svg);

/** 0, or the first error any call on this document met. */
int mp_svg_status(const struct mp_svg *svg);

/** Write the whole document (closing tags added) to out. Returns 0, the
 * document's sticky error, MP_EUSAGE when a panel is still open, or
 * MP_EIO when writing failed. The document stays usable. */
int mp_svg_write(const struct mp_svg *svg, FILE *out);

/** The colour of series number i (i >= 0, wraps around after 11): 0..6
 * the Okabe-Ito colour-blind-safe palette (Okabe and Ito 2008, "Color
 * Universal Design"), yellow left out because it does not show on white,
 * 6 being black; 7..10 Paul Tol's "muted" wine (#882255) and olive
 * (#999933), brown (#8C564B) and grey (#888888) for plots with more
 * series. Static string "#rrggbb". */
const char *mp_svg_color(size_t i);

/** The viridis colour map (van der Walt and Smith, matplotlib 2015) at
 * t in [0, 1] (clamped; NaN gives grey "#bdbdbd"), written as "#rrggbb"
 * into buf (at least 8 bytes). Linear interpolation between the map's
 * values at t = 0, 1/8, ..., 1 (matplotlib's _viridis_data, entries
 * 0, 32, ..., 255). */
void mp_svg_colormap(double t, char *buf, size_t size);

/** Format value with 3 significant digits and an SI prefix (k M G T P E
 * for >= 1e3; none below) followed by unit: "5 PFLOP/s", "625 FLOP/B",
 * "0.5 s". unit NULL or "" gives the compact tick form "5P", "625".
 * Non-finite values give "nan"/"inf". Writes at most size bytes. */
void mp_svg_format_si(double value, const char *unit, char *buf, size_t size);

enum mp_svg_scale {
	MP_SVG_LINEAR = 0,
	MP_SVG_LOG,         /**< base 10; min > 0 */
};

/** One axis of a panel, in data units. */
struct mp_svg_axis {
	enum mp_svg_scale scale;
	double min;          /**< data value at the low end; finite, > 0 on a log axis */
	double max;          /**< data value at the high end; finite, > min */
	const char *label;   /**< axis title, may be NULL */
	bool integer;        /**< linear only: ticks at integers only (counts) */
};

/** Widen [lo, hi] (data, lo <= hi, finite) to a range that starts and
 * ends on nice ticks, into axis->min/max (scale and integer are read
 * from axis). Linear: multiples of a 1-2-5 step chosen so that at most
 * max_ticks + 1 ticks fit; lo == hi becomes [lo - 1, lo + 1] (or +-10%
 * of |lo|). Log: whole decades, [10^floor(log10 lo), 10^ceil(log10 hi)],
 * one decade wide at least. Returns 0, or MP_EINVAL (non-finite, lo > hi,
 * lo <= 0 on a log axis, max_ticks < 1). axis is untouched on failure. */
int mp_svg_axis_fit(struct mp_svg_axis *axis, double lo, double hi, size_t max_ticks);

/** The major ticks of an axis (data values, ascending) into
 * ticks[0..cap), returning how many there are (which may exceed cap;
 * only cap are stored). max_ticks above 1000 counts as 1000. Linear: multiples of the smallest 1-2-5 x 10^k
 * step giving at most max_ticks + 1 ticks in [min, max] (step >= 1 on an
 * integer axis). Log: the decades 10^k in [min, max], every n-th decade
 * when more than max_ticks + 1 would show; when fewer than two decades
 * show, also 2 and 5 times each decade; when still fewer than two, the
 * linear ticks. Returns 0 for an invalid axis. */
size_t mp_svg_axis_ticks(const struct mp_svg_axis *axis, size_t max_ticks,
			 double *ticks, size_t cap);

/** Where a panel goes and what its axes show. Margins (px around the
 * plot area, inside the box) of 0 are chosen automatically from the tick
 * labels, the axis titles and the panel title. */
struct mp_svg_panel_spec {
	const char *id;          /**< required, unique in the document (XML NCName) */
	const char *title;       /**< above the plot area, may be NULL */
	double x, y;             /**< top-left corner of the panel box, px */
	double width, height;    /**< panel box, px */
	double margin_left, margin_right, margin_top, margin_bottom;
	double pad;              /**< px between the frame and the data range (0 = none) */
	struct mp_svg_axis x_axis;
	struct mp_svg_axis y_axis;
};

/** Open a panel: draws the frame, grid, ticks, tick labels, axis titles
 * and panel title, and returns the panel for series and markers. One
 * panel may be open at a time; close it with mp_svg_panel_end. Returns 0,
 * MP_EINVAL (bad axis or id, a box smaller than its margins), MP_EUSAGE
 * (another panel is open) or MP_ENOMEM; on failure the error is also
 * recorded in svg and *out is not set. */
int mp_svg_panel_begin(struct mp_svg *svg, const struct mp_svg_panel_spec *spec,
		       struct mp_svg_panel **out);

/** The pixel x (or y) of data value v on the panel's axis; NaN when v
 * is not finite or, on a log axis, <= 0. Values outside [min, max] map
 * outside the plot area. Linear: x0 + pad + (v - min) / (max - min) *
 * (w - 2 pad); log: the same in log10 v; y counts up from the bottom. */
double mp_svg_panel_x(const struct mp_svg_panel *panel, double v);
double mp_svg_panel_y(const struct mp_svg_panel *panel, double v);

/** Series drawing styles (bit flags). */
enum mp_svg_style {
	MP_SVG_LINE = 1,     /**< straight segments between points */
	MP_SVG_MARKERS = 2,  /**< a marker at each point */
	MP_SVG_STEP = 4,     /**< with LINE: horizontal then vertical (post step) */
	MP_SVG_DASHED = 8,   /**< dashed line */
	MP_SVG_THICK = 16,   /**< 2.5 px line instead of 1.75 */
};

enum mp_svg_marker {
	MP_SVG_CIRCLE = 0,
	MP_SVG_SQUARE,
	MP_SVG_DIAMOND,
	MP_SVG_TRIANGLE,
	MP_SVG_RING,         /**< open circle */
};

struct mp_svg_series {
	const char *id;          /**< required, unique (XML NCName) */
	const char *label;       /**< legend text; NULL = no legend entry */
	size_t color;            /**< index into mp_svg_color */
	unsigned style;          /**< mp_svg_style flags; 0 means LINE */
	enum mp_svg_marker marker;
	const double *x;         /**< [n] data units */
	const double *y;         /**< [n] */
	size_t n;
};

/** Draw a series clipped to the plot area. Points that cannot be mapped
 * (NaN, infinite, <= 0 on a log axis) are skipped and break the line in
 * two, so a NaN never reaches the output. Markers outside the plot area
 * are not drawn. Returns 0 or the document's error (MP_EINVAL for a bad
 * or repeated id). */
int mp_svg_panel_series(struct mp_svg_panel *panel, const struct mp_svg_series *series);

/** A horizontal (hline) or vertical (vline) reference line across the
 * plot area at data value v, with its label (NULL = none) at one of its
 * ends, above or below it, where it hides the least. A non-mappable or
 * out-of-range v draws nothing (returns 0). style: MP_SVG_DASHED or 0.
 * The <g> carries data-value (v, "%.6g") when v is finite. */
int mp_svg_panel_hline(struct mp_svg_panel *panel, double v, const char *id,
		       const char *label, size_t color, unsigned style);
int mp_svg_panel_vline(struct mp_svg_panel *panel, double v, const char *id,
		       const char *label, size_t color, unsigned style);

/** One named point: a marker at (x, y) with its label (NULL = none)
 * beside it: right, left, above or below, or up to three rows further
 * away with a leader line, wherever it hides the fewest data, markers,
 * labels and legend. The <g> carries data-x and data-y (the data values,
 * "%.6g", when finite). Nothing is drawn for a point outside the plot area
 * or not mappable (returns 0).
 *
 * Labels of points and lines are laid out when the panel ends, after the
 * legend, once every marker and line is known; each is a <g
 * class="label" data-for="ID">. */
int mp_svg_panel_point(struct mp_svg_panel *panel, double x, double y, const char *id,
		       const char *label, size_t color, enum mp_svg_marker marker);

/** Add a legend entry that belongs to no series (e.g. for markers). */
int mp_svg_panel_legend(struct mp_svg_panel *panel, const char *label, size_t color,
			unsigned style, enum mp_svg_marker marker);

/** Close a panel: draws the legend (<g id="ID-legend">) in the corner of
 * the plot area that hides the fewest data and markers, then the labels
 * of points and lines, then frees the panel.
 * Accepts NULL. Returns the document's status. */
int mp_svg_panel_end(struct mp_svg_panel *panel);

enum mp_svg_anchor {
	MP_SVG_START = 0,
	MP_SVG_MIDDLE,
	MP_SVG_END,
};

/** Text at (x, y) (baseline), size in px, optional class (an XML name
 * token list, NULL = none) and id (NULL = none); bold when bold. */
int mp_svg_text(struct mp_svg *svg, double x, double y, enum mp_svg_anchor anchor,
		double size, bool bold, const char *cls, const char *id, const char *text);

/** Text centred on (x, y) and rotated to read upwards (a vertical axis
 * title), size in px, optional class. */
int mp_svg_vtext(struct mp_svg *svg, double x, double y, double size, const char *cls,
		 const char *text);

/** A grid of coloured cells: values [rows][cols] row-major, row 0 at the
 * top, cell (r, c) at (x + c * cell_width, y + r * cell_height), coloured
 * by mp_svg_colormap((v - vmin) / (vmax - vmin)). Non-finite values are
 * grey. */
struct mp_svg_heatmap {
	const char *id;          /**< required, unique */
	const char *label;       /**< data-label, may be NULL */
	double x, y;             /**< top-left corner, px */
	double cell_width, cell_height; /**< px, > 0 */
	size_t rows, cols;       /**< >= 1 each */
	const double *values;    /**< [rows][cols] */
	double vmin, vmax;       /**< colour scale, finite, vmin < vmax */
};

/** Draw a heatmap. Returns 0 or MP_EINVAL (bad id, shape or scale). */
int mp_svg_heatmap(struct mp_svg *svg, const struct mp_svg_heatmap *heatmap);

/** A vertical colour bar for [vmin, vmax] (linear) in the box (x, y, w,
 * h), vmax at the top, nice ticks and labels on its right and label
 * rotated beside them. Returns 0 or MP_EINVAL. */
int mp_svg_colorbar(struct mp_svg *svg, double x, double y, double width, double height,
		    double vmin, double vmax, const char *id, const char *label);

/** A filled rectangle (x, y, width, height px, width and height >= 0) in
 * the colour of series number color (mp_svg_color), with an id (required,
 * unique) and a data-label (may be NULL): bars. Returns 0 or MP_EINVAL. */
int mp_svg_rect(struct mp_svg *svg, double x, double y, double width, double height,
		size_t color, const char *id, const char *label);

/** Estimated width in px of text at size px in a sans-serif font
 * (0.6 em per character: DejaVu Sans' mean advance), used for layout. */
double mp_svg_text_width(const char *text, double size);

#ifdef __cplusplus
}
#endif

#endif
