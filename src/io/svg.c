/* moeplan: a small SVG writer for plots (see include/moeplan/svg.h).
 *
 * The document is built as text in memory and written at the end, so a
 * failure half-way never leaves a partial file. Layout helpers (legend and
 * label placement) keep, per panel, a sample of the pixels the data covers
 * (points every 3 px along each line) and the boxes of labels already
 * placed, and put each new label or the legend where it covers the least.
 */
#include "moeplan/svg.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/diag.h"

#define MAX_SIZE_PX 100000.0
#define MAX_ID_LEN 200
#define MAX_SAMPLES 200000
#define TICK_FONT 11.0
#define AXIS_FONT 12.0
#define TITLE_FONT 14.0
#define LABEL_FONT 11.0
#define LEGEND_FONT 11.0
#define LEGEND_ROW 17.0
#define MARKER_R 4.0

struct buf {
	char *data;
	size_t len;
	size_t cap;
};

struct box {
	double x0, y0, x1, y1;
};

struct legend_entry {
	char *label;
	size_t color;
	unsigned style;
	enum mp_svg_marker marker;
};

#define MAX_CANDIDATES 32

struct candidate {
	double x, y; /* text anchor point (baseline) */
	enum mp_svg_anchor anchor;
	int ring;    /* 0 next to the anchor; further rings get a leader line */
};

/* A label placed when the panel ends, once every marker and line is known. */
struct pending {
	char *text;
	char *owner;  /* id of the point or line it names */
	double ax, ay; /* what it names, px (for the leader line) */
	struct candidate c[MAX_CANDIDATES];
	size_t n;
};

struct mp_svg_panel {
	struct mp_svg *svg;
	char *id;
	struct mp_svg_axis xa;
	struct mp_svg_axis ya;
	double x, y, w, h; /* plot area, px */
	double pad;
	struct legend_entry *legend;
	size_t n_legend, cap_legend;
	double *samples; /* x, y pairs, px */
	size_t n_samples, cap_samples;
	struct box *boxes;
	size_t n_boxes, cap_boxes;
	struct pending *labels;
	size_t n_labels, cap_labels;
};

struct mp_svg {
	struct buf out;
	double width, height;
	int status;
	char **ids;
	size_t n_ids, cap_ids;
	struct mp_svg_panel *open;
};

/* --- memory and output ------------------------------------------------ */

static bool grow(void **items, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap) {
		return true;
	}
	size_t next = *cap ? *cap : 16;
	while (next < need) {
		if (next > SIZE_MAX / 2) {
			return false;
		}
		next *= 2;
	}
	if (next > SIZE_MAX / elem) {
		return false;
	}
	void *p = realloc(*items, next * elem);
	if (!p) {
		return false;
	}
	*items = p;
	*cap = next;
	return true;
}

static void fail(struct mp_svg *svg, int code)
{
	if (svg->status == 0) {
		svg->status = code;
	}
}

static bool reserve(struct mp_svg *svg, size_t extra)
{
	if (extra > SIZE_MAX - svg->out.len - 1) {
		fail(svg, MP_ENOMEM);
		return false;
	}
	void *data = svg->out.data;
	if (!grow(&data, &svg->out.cap, svg->out.len + extra + 1, 1)) {
		fail(svg, MP_ENOMEM);
		return false;
	}
	svg->out.data = data;
	return true;
}

static void put(struct mp_svg *svg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct mp_svg *svg, const char *fmt, ...)
{
	if (svg->status != 0) {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		fail(svg, MP_ENOMEM);
		return;
	}
	if (!reserve(svg, (size_t)n)) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(svg->out.data + svg->out.len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	svg->out.len += (size_t)n;
}

/* Length of a valid UTF-8 sequence of an XML character at s (1-4), or 0. */
static size_t utf8_char(const unsigned char *s)
{
	unsigned c = s[0];
	if (c < 0x80) {
		return 1;
	}
	size_t len;
	uint32_t cp;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		cp = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80) {
			return 0;
		}
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF) {
		return 0;
	}
	return len;
}

/* Append text escaped for XML content and attribute values. */
static void put_text(struct mp_svg *svg, const char *text)
{
	if (!text || svg->status != 0) {
		return;
	}
	const unsigned char *s = (const unsigned char *)text;
	while (*s) {
		size_t len = utf8_char(s);
		if (len == 0) {
			put(svg, "?");
			s++;
			continue;
		}
		if (len > 1) {
			put(svg, "%.*s", (int)len, (const char *)s);
			s += len;
			continue;
		}
		switch (*s) {
		case '&':
			put(svg, "&amp;");
			break;
		case '<':
			put(svg, "&lt;");
			break;
		case '>':
			put(svg, "&gt;");
			break;
		case '"':
			put(svg, "&quot;");
			break;
		case '\'':
			put(svg, "&apos;");
			break;
		case '\t':
		case '\n':
		case '\r':
			put(svg, " ");
			break;
		default:
			if (*s < 0x20) {
				put(svg, "?");
			} else {
				put(svg, "%c", *s);
			}
			break;
		}
		s++;
	}
}

/* A coordinate as written: two decimals, never "-0.00". */
static double c2(double v)
{
	return fabs(v) < 0.005 ? 0.0 : v;
}

static char *dup_string(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d) {
		memcpy(d, s, n);
	}
	return d;
}

/* Record a new id; MP_EINVAL when it is not an XML NCName or is taken. */
static bool use_id(struct mp_svg *svg, const char *id)
{
	if (svg->status != 0) {
		return false;
	}
	size_t len = id ? strlen(id) : 0;
	bool ok = len > 0 && len <= MAX_ID_LEN &&
		  (id[0] == '_' || (id[0] >= 'A' && id[0] <= 'Z') || (id[0] >= 'a' && id[0] <= 'z'));
	for (size_t i = 1; ok && i < len; i++) {
		char c = id[i];
		ok = c == '_' || c == '-' || c == '.' || (c >= '0' && c <= '9') ||
		     (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
	}
	for (size_t i = 0; ok && i < svg->n_ids; i++) {
		ok = strcmp(svg->ids[i], id) != 0;
	}
	if (!ok) {
		fail(svg, MP_EINVAL);
		return false;
	}
	void *ids = svg->ids;
	char *copy = dup_string(id);
	if (!copy || !grow(&ids, &svg->cap_ids, svg->n_ids + 1, sizeof(char *))) {
		free(copy);
		fail(svg, MP_ENOMEM);
		return false;
	}
	svg->ids = ids;
	svg->ids[svg->n_ids++] = copy;
	return true;
}

/* --- document ------------------------------------------------------- */

int mp_svg_create(double width, double height, const char *title, struct mp_svg **out)
{
	assert(out);
	if (!(width > 0 && width <= MAX_SIZE_PX && height > 0 && height <= MAX_SIZE_PX)) {
		return MP_EINVAL;
	}
	struct mp_svg *svg = calloc(1, sizeof(*svg));
	if (!svg) {
		return MP_ENOMEM;
	}
	svg->width = width;
	svg->height = height;
	put(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		 "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
		 "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		 "font-family=\"DejaVu Sans, Verdana, Arial, sans-serif\">\n",
	    width, height, width, height);
	if (title) {
		put(svg, "<title>");
		put_text(svg, title);
		put(svg, "</title>\n");
	}
	put(svg, "<rect class=\"background\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n",
	    width, height);
	if (svg->status != 0) {
		int rc = svg->status;
		mp_svg_destroy(svg);
		return rc;
	}
	*out = svg;
	return 0;
}

static void panel_free(struct mp_svg_panel *p)
{
	if (!p) {
		return;
	}
	for (size_t i = 0; i < p->n_legend; i++) {
		free(p->legend[i].label);
	}
	free(p->legend);
	free(p->samples);
	free(p->boxes);
	for (size_t i = 0; i < p->n_labels; i++) {
		free(p->labels[i].text);
		free(p->labels[i].owner);
	}
	free(p->labels);
	free(p->id);
	free(p);
}

void mp_svg_destroy(struct mp_svg *svg)
{
	if (!svg) {
		return;
	}
	panel_free(svg->open);
	for (size_t i = 0; i < svg->n_ids; i++) {
		free(svg->ids[i]);
	}
	free(svg->ids);
	free(svg->out.data);
	free(svg);
}

int mp_svg_status(const struct mp_svg *svg)
{
	assert(svg);
	return svg->status;
}

int mp_svg_write(const struct mp_svg *svg, FILE *out)
{
	assert(svg && out);
	if (svg->status != 0) {
		return svg->status;
	}
	if (svg->open) {
		return MP_EUSAGE;
	}
	if (svg->out.len > 0 && fwrite(svg->out.data, 1, svg->out.len, out) != svg->out.len) {
		return MP_EIO;
	}
	if (fputs("</svg>\n", out) == EOF || ferror(out)) {
		return MP_EIO;
	}
	return 0;
}

/* --- colours and numbers -------------------------------------------- */

const char *mp_svg_color(size_t i)
{
	/* Okabe-Ito without yellow (#F0E442), which does not show on white;
	 * then, for plots with more series (the step's ten terms), Paul Tol's
	 * "muted" wine and olive, a brown and a grey. */
	static const char *const palette[] = {
		"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
		"#000000", "#882255", "#999933", "#8C564B", "#888888",
	};
	return palette[i % (sizeof(palette) / sizeof(palette[0]))];
}

void mp_svg_colormap(double t, char *buf, size_t size)
{
	/* matplotlib _viridis_data entries 0, 32, 64, ..., 224, 255 as 8-bit. */
	static const unsigned char stops[9][3] = {
		{68, 1, 84},    {71, 45, 123},  {59, 82, 139},
		{44, 114, 142}, {33, 145, 140}, {40, 174, 128},
		{94, 201, 98},  {173, 220, 48}, {253, 231, 37},
	};
	if (isnan(t)) {
		snprintf(buf, size, "#bdbdbd");
		return;
	}
	if (t < 0) {
		t = 0;
	}
	if (t > 1) {
		t = 1;
	}
	double pos = t * 8.0;
	int i = (int)floor(pos);
	if (i >= 8) {
		i = 7;
	}
	double f = pos - i;
	int rgb[3];
	for (int c = 0; c < 3; c++) {
		double v = stops[i][c] + f * (stops[i + 1][c] - stops[i][c]);
		rgb[c] = (int)lround(v);
	}
	snprintf(buf, size, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* SI form with sig significant digits (compact when unit is NULL/""). */
static void format_si(double value, int sig, const char *unit, char *buf, size_t size)
{
	static const char prefixes[] = "kMGTPE";
	bool compact = !unit || !*unit;
	if (!isfinite(value)) {
		snprintf(buf, size, "%s", isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf"));
		return;
	}
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%.*g", sig, value);
	double r = strtod(tmp, NULL);
	int e3 = 0;
	if (fabs(r) >= 1e3) {
		e3 = (int)floor(log10(fabs(r)) / 3.0 + 1e-9);
		if (e3 > 6) {
			e3 = 6;
		}
		/* Never fewer digits than the integer part (90000 at one
		 * significant digit is "90k", not "9e+01k"). */
		double scaled = value / pow(10.0, 3.0 * e3);
		int whole = fabs(scaled) >= 1.0 ? (int)floor(log10(fabs(scaled)) + 1e-9) + 1 : 1;
		snprintf(tmp, sizeof(tmp), "%.*g", sig > whole ? sig : whole, scaled);
	} else if (fabs(r) < 1e-12) {
		snprintf(tmp, sizeof(tmp), "0");
	}
	/* The number, a space, the prefix and the unit, cut at the caller's
	 * buffer (sized for the plot) by hand: snprintf's truncation
	 * warning cannot see the label's real length. */
	char suffix[8] = {0};
	size_t ns = 0;
	if (!compact) {
		suffix[ns++] = ' ';
	}
	if (e3 > 0) {
		suffix[ns++] = prefixes[e3 - 1];
	}
	const char *parts[3] = {tmp, suffix, compact ? "" : unit};
	size_t at = 0;
	for (size_t k = 0; k < 3 && size > 0; k++) {
		size_t len = strlen(parts[k]);
		if (len > size - 1 - at) {
			len = size - 1 - at;
		}
		memcpy(buf + at, parts[k], len);
		at += len;
	}
	if (size > 0) {
		buf[at] = '\0';
	}
}

void mp_svg_format_si(double value, const char *unit, char *buf, size_t size)
{
	format_si(value, 3, unit, buf, size);
}

double mp_svg_text_width(const char *text, double size)
{
	size_t chars = 0;
	for (const unsigned char *s = (const unsigned char *)text; s && *s; s++) {
		if ((*s & 0xC0) != 0x80) {
			chars++;
		}
	}
	return 0.6 * size * (double)chars;
}

/* --- axes and ticks ------------------------------------------------- */

static bool axis_valid(const struct mp_svg_axis *a)
{
	if (!isfinite(a->min) || !isfinite(a->max) || !(a->min < a->max)) {
		return false;
	}
	if (a->scale == MP_SVG_LOG) {
		return a->min > 0;
	}
	return a->scale == MP_SVG_LINEAR;
}

/* The smallest 1, 2 or 5 x 10^k >= raw. */
static double nice_step(double raw, bool integer)
{
	if (!(raw > 0) || !isfinite(raw)) {
		return 1.0;
	}
	double base = pow(10.0, floor(log10(raw)));
	double f = raw / base;
	double m = f <= 1.0 + 1e-9 ? 1.0 : f <= 2.0 + 1e-9 ? 2.0 : f <= 5.0 + 1e-9 ? 5.0 : 10.0;
	double step = m * base;
	if (integer && step < 1.0) {
		step = 1.0;
	}
	return step;
}

/* The 1-2-5 step after step. */
static double next_step(double step)
{
	double base = pow(10.0, floor(log10(step) + 1e-9));
	double f = step / base;
	if (f < 1.5) {
		return 2.0 * base;
	}
	if (f < 3.5) {
		return 5.0 * base;
	}
	return 10.0 * base;
}

int mp_svg_axis_fit(struct mp_svg_axis *axis, double lo, double hi, size_t max_ticks)
{
	assert(axis);
	if (!isfinite(lo) || !isfinite(hi) || lo > hi || max_ticks < 1) {
		return MP_EINVAL;
	}
	if (axis->scale == MP_SVG_LOG) {
		if (!(lo > 0)) {
			return MP_EINVAL;
		}
		double a = floor(log10(lo) + 1e-9);
		double b = ceil(log10(hi) - 1e-9);
		if (b <= a) {
			b = a + 1.0;
		}
		axis->min = pow(10.0, a);
		axis->max = pow(10.0, b);
		return 0;
	}
	if (axis->scale != MP_SVG_LINEAR) {
		return MP_EINVAL;
	}
	if (hi - lo <= 1e-12 * fmax(fabs(lo), fabs(hi))) {
		double d = fabs(lo) > 0 ? fabs(lo) * 0.1 : 1.0;
		if (axis->integer && d < 1.0) {
			d = 1.0;
		}
		lo -= d;
		hi += d;
	}
	double step = nice_step((hi - lo) / (double)max_ticks, axis->integer);
	double a, b;
	for (;;) {
		a = floor(lo / step + 1e-9) * step;
		b = ceil(hi / step - 1e-9) * step;
		if ((b - a) / step <= (double)max_ticks + 1e-9) {
			break;
		}
		step = next_step(step);
	}
	axis->min = fabs(a) < step * 1e-9 ? 0.0 : a;
	axis->max = fabs(b) < step * 1e-9 ? 0.0 : b;
	return 0;
}

static size_t linear_ticks(double min, double max, bool integer, size_t max_ticks,
			   double *ticks, size_t cap, double *step_out)
{
	double step = nice_step((max - min) / (double)max_ticks, integer);
	double k0 = ceil(min / step - 1e-9);
	double k1 = floor(max / step + 1e-9);
	size_t n = 0;
	for (double k = k0; k <= k1 + 0.5; k += 1.0) {
		double v = k * step;
		if (fabs(v) < step * 1e-9) {
			v = 0.0;
		}
		if (n < cap) {
			ticks[n] = v;
		}
		n++;
	}
	if (step_out) {
		*step_out = step;
	}
	return n;
}

size_t mp_svg_axis_ticks(const struct mp_svg_axis *axis, size_t max_ticks, double *ticks, size_t cap)
{
	assert(axis);
	if (!axis_valid(axis) || max_ticks < 1) {
		return 0;
	}
	if (max_ticks > 1000) {
		max_ticks = 1000;
	}
	if (axis->scale == MP_SVG_LINEAR) {
		return linear_ticks(axis->min, axis->max, axis->integer, max_ticks, ticks, cap, NULL);
	}
	double lo = ceil(log10(axis->min) - 1e-9);
	double hi = floor(log10(axis->max) + 1e-9);
	size_t n = 0;
	if (hi - lo >= 1.0) {
		double stride = ceil((hi - lo) / (double)max_ticks - 1e-9);
		if (stride < 1.0) {
			stride = 1.0;
		}
		double start = ceil(lo / stride - 1e-9) * stride;
		if (start > hi) {
			start = lo;
		}
		for (double k = start; k <= hi + 0.5; k += stride) {
			if (n < cap) {
				ticks[n] = pow(10.0, k);
			}
			n++;
		}
		if (n >= 2) {
			return n;
		}
		n = 0;
	}
	static const double mult[] = {1.0, 2.0, 5.0};
	double d0 = floor(log10(axis->min)) - 1.0;
	double d1 = ceil(log10(axis->max)) + 1.0;
	for (double d = d0; d <= d1 + 0.5; d += 1.0) {
		for (size_t m = 0; m < 3; m++) {
			double v = mult[m] * pow(10.0, d);
			if (v >= axis->min * (1 - 1e-9) && v <= axis->max * (1 + 1e-9)) {
				if (n < cap) {
					ticks[n] = v;
				}
				n++;
			}
		}
	}
	if (n >= 2) {
		return n;
	}
	return linear_ticks(axis->min, axis->max, false, max_ticks, ticks, cap, NULL);
}

/* The label of tick v; step is the linear tick step (0 on a log axis). */
static void tick_label(double v, double step, char *buf, size_t size)
{
	if (fabs(v) < 1e-300) {
		snprintf(buf, size, "0");
		return;
	}
	if (fabs(v) >= 1e3) {
		int sig = 3;
		if (step > 0) {
			sig = (int)floor(log10(fabs(v)) + 1e-9) - (int)floor(log10(step) + 1e-9) + 1;
			sig = sig < 1 ? 1 : sig > 8 ? 8 : sig;
		}
		format_si(v, sig, NULL, buf, size);
		return;
	}
	if (step > 0) {
		int dec = -(int)floor(log10(step) + 1e-9);
		if (dec < 0) {
			dec = 0;
		}
		snprintf(buf, size, "%.*f", dec, v);
		return;
	}
	snprintf(buf, size, "%.3g", v);
}

/* Ticks of an axis with their labels (at most 64). Returns the count. */
#define MAX_TICKS 64
struct ticks {
	size_t n;
	double v[MAX_TICKS];
	char label[MAX_TICKS][32];
	double max_width; /* widest label, px at TICK_FONT */
	double first_width, last_width;
};

static void make_ticks(const struct mp_svg_axis *a, size_t max_ticks, struct ticks *t)
{
	if (max_ticks < 1) {
		max_ticks = 1;
	}
	if (max_ticks > MAX_TICKS - 1) {
		max_ticks = MAX_TICKS - 1;
	}
	size_t n = mp_svg_axis_ticks(a, max_ticks, t->v, MAX_TICKS);
	t->n = n < MAX_TICKS ? n : MAX_TICKS;
	/* Linear ticks are labelled to the precision of their step; log
	 * ticks (decades, or 1-2-5 multiples) with 3 significant digits. */
	double step = 0;
	if (a->scale == MP_SVG_LINEAR) {
		step = t->n >= 2 ? t->v[1] - t->v[0] : nice_step(a->max - a->min, a->integer);
	}
	t->max_width = 0;
	for (size_t i = 0; i < t->n; i++) {
		tick_label(t->v[i], step, t->label[i], sizeof(t->label[i]));
		double w = mp_svg_text_width(t->label[i], TICK_FONT);
		t->max_width = fmax(t->max_width, w);
	}
	t->first_width = t->n ? mp_svg_text_width(t->label[0], TICK_FONT) : 0;
	t->last_width = t->n ? mp_svg_text_width(t->label[t->n - 1], TICK_FONT) : 0;
}

/* --- panels --------------------------------------------------------- */

static double map_axis(const struct mp_svg_axis *a, double v, bool *ok)
{
	*ok = false;
	if (!isfinite(v)) {
		return (double)NAN;
	}
	if (a->scale == MP_SVG_LOG) {
		if (!(v > 0)) {
			return (double)NAN;
		}
		*ok = true;
		return (log10(v) - log10(a->min)) / (log10(a->max) - log10(a->min));
	}
	*ok = true;
	return (v - a->min) / (a->max - a->min);
}

double mp_svg_panel_x(const struct mp_svg_panel *p, double v)
{
	assert(p);
	bool ok;
	double f = map_axis(&p->xa, v, &ok);
	return ok ? p->x + p->pad + f * (p->w - 2 * p->pad) : (double)NAN;
}

double mp_svg_panel_y(const struct mp_svg_panel *p, double v)
{
	assert(p);
	bool ok;
	double f = map_axis(&p->ya, v, &ok);
	return ok ? p->y + p->h - p->pad - f * (p->h - 2 * p->pad) : (double)NAN;
}

static bool inside(const struct mp_svg_panel *p, double x, double y, double tol)
{
	return x >= p->x - tol && x <= p->x + p->w + tol && y >= p->y - tol && y <= p->y + p->h + tol;
}

static void add_sample(struct mp_svg_panel *p, double x, double y)
{
	if (!inside(p, x, y, 0) || p->n_samples >= MAX_SAMPLES) {
		return;
	}
	void *s = p->samples;
	if (!grow(&s, &p->cap_samples, 2 * (p->n_samples + 1), sizeof(double))) {
		fail(p->svg, MP_ENOMEM);
		return;
	}
	p->samples = s;
	p->samples[2 * p->n_samples] = x;
	p->samples[2 * p->n_samples + 1] = y;
	p->n_samples++;
}

static void add_segment(struct mp_svg_panel *p, double x0, double y0, double x1, double y1)
{
	/* Clip roughly: skip segments far outside; sample every 3 px. */
	double len = hypot(x1 - x0, y1 - y0);
	double n = ceil(len / 3.0);
	if (n > 4000) {
		n = 4000;
	}
	for (double i = 0; i <= n; i += 1.0) {
		double f = n > 0 ? i / n : 0;
		add_sample(p, x0 + f * (x1 - x0), y0 + f * (y1 - y0));
	}
}

static void add_box(struct mp_svg_panel *p, struct box b)
{
	void *boxes = p->boxes;
	if (!grow(&boxes, &p->cap_boxes, p->n_boxes + 1, sizeof(struct box))) {
		fail(p->svg, MP_ENOMEM);
		return;
	}
	p->boxes = boxes;
	p->boxes[p->n_boxes++] = b;
}

/* How much box b would hide: data samples inside, overlapped labels
 * (100 each), leaving the plot area (1000). */
static double box_cost(const struct mp_svg_panel *p, struct box b)
{
	double cost = 0;
	for (size_t i = 0; i < p->n_samples; i++) {
		double x = p->samples[2 * i], y = p->samples[2 * i + 1];
		if (x >= b.x0 - 2 && x <= b.x1 + 2 && y >= b.y0 - 2 && y <= b.y1 + 2) {
			cost += 1;
		}
	}
	for (size_t i = 0; i < p->n_boxes; i++) {
		const struct box *o = &p->boxes[i];
		if (b.x0 < o->x1 && o->x0 < b.x1 && b.y0 < o->y1 && o->y0 < b.y1) {
			cost += 100;
		}
	}
	if (b.x0 < p->x || b.x1 > p->x + p->w || b.y0 < p->y || b.y1 > p->y + p->h) {
		cost += 1000;
	}
	return cost;
}

static void put_line_style(struct mp_svg *svg, const char *color, unsigned style)
{
	put(svg, " fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" stroke-linejoin=\"round\"", color,
	    (style & MP_SVG_THICK) ? "2.5" : "1.75");
	if (style & MP_SVG_DASHED) {
		put(svg, " stroke-dasharray=\"6 4\"");
	}
}

static void put_marker(struct mp_svg *svg, double x, double y, double r, const char *color,
		       enum mp_svg_marker marker)
{
	x = c2(x);
	y = c2(y);
	switch (marker) {
	case MP_SVG_SQUARE:
		put(svg, "<rect class=\"marker\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
			 "stroke=\"#ffffff\" stroke-width=\"0.75\"/>\n",
		    c2(x - r * 0.9), c2(y - r * 0.9), 1.8 * r, 1.8 * r, color);
		break;
	case MP_SVG_DIAMOND:
		put(svg, "<polygon class=\"marker\" points=\"%.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f\" "
			 "fill=\"%s\" stroke=\"#ffffff\" stroke-width=\"0.75\"/>\n",
		    x, c2(y - 1.3 * r), c2(x + 1.3 * r), y, x, c2(y + 1.3 * r), c2(x - 1.3 * r), y, color);
		break;
	case MP_SVG_TRIANGLE:
		put(svg, "<polygon class=\"marker\" points=\"%.2f,%.2f %.2f,%.2f %.2f,%.2f\" fill=\"%s\" "
			 "stroke=\"#ffffff\" stroke-width=\"0.75\"/>\n",
		    x, c2(y - 1.2 * r), c2(x + 1.1 * r), c2(y + 0.8 * r), c2(x - 1.1 * r), c2(y + 0.8 * r),
		    color);
		break;
	case MP_SVG_RING:
		put(svg, "<circle class=\"marker\" cx=\"%.2f\" cy=\"%.2f\" r=\"%.2f\" fill=\"#ffffff\" "
			 "stroke=\"%s\" stroke-width=\"1.75\"/>\n",
		    x, y, r, color);
		break;
	case MP_SVG_CIRCLE:
	default:
		put(svg, "<circle class=\"marker\" cx=\"%.2f\" cy=\"%.2f\" r=\"%.2f\" fill=\"%s\" "
			 "stroke=\"#ffffff\" stroke-width=\"0.75\"/>\n",
		    x, y, r, color);
		break;
	}
}

/* Text with a white halo so it stays readable over grid and lines. */
static void put_label(struct mp_svg *svg, double x, double y, enum mp_svg_anchor anchor,
		      double size, const char *cls, const char *text)
{
	static const char *const anchors[] = {"start", "middle", "end"};
	put(svg, "<text class=\"%s\" x=\"%.2f\" y=\"%.2f\" text-anchor=\"%s\" font-size=\"%.0f\" "
		 "fill=\"#222222\" stroke=\"#ffffff\" stroke-width=\"3\" stroke-linejoin=\"round\" "
		 "paint-order=\"stroke\">",
	    cls, c2(x), c2(y), anchors[anchor], size);
	put_text(svg, text);
	put(svg, "</text>\n");
}

int mp_svg_text(struct mp_svg *svg, double x, double y, enum mp_svg_anchor anchor, double size,
		bool bold, const char *cls, const char *id, const char *text)
{
	static const char *const anchors[] = {"start", "middle", "end"};
	assert(svg);
	if (!isfinite(x) || !isfinite(y) || !(size > 0) || anchor > MP_SVG_END) {
		fail(svg, MP_EINVAL);
		return svg->status;
	}
	if (id && !use_id(svg, id)) {
		return svg->status;
	}
	put(svg, "<text");
	if (id) {
		put(svg, " id=\"%s\"", id);
	}
	if (cls) {
		put(svg, " class=\"");
		put_text(svg, cls);
		put(svg, "\"");
	}
	put(svg, " x=\"%.2f\" y=\"%.2f\" text-anchor=\"%s\" font-size=\"%.1f\" fill=\"#222222\"%s>",
	    c2(x), c2(y), anchors[anchor], size, bold ? " font-weight=\"bold\"" : "");
	put_text(svg, text);
	put(svg, "</text>\n");
	return svg->status;
}

int mp_svg_vtext(struct mp_svg *svg, double x, double y, double size, const char *cls,
		 const char *text)
{
	assert(svg);
	if (!isfinite(x) || !isfinite(y) || !(size > 0)) {
		fail(svg, MP_EINVAL);
		return svg->status;
	}
	put(svg, "<text");
	if (cls) {
		put(svg, " class=\"");
		put_text(svg, cls);
		put(svg, "\"");
	}
	put(svg, " x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"%.1f\" fill=\"#222222\" "
		 "transform=\"rotate(-90 %.2f %.2f)\">",
	    c2(x), c2(y), size, c2(x), c2(y));
	put_text(svg, text);
	put(svg, "</text>\n");
	return svg->status;
}

static int panel_error(struct mp_svg *svg, int code)
{
	fail(svg, code);
	return code;
}

/* A new panel for spec (checked; its axes, padding and id copied, the id
 * claimed), or NULL with svg's status set. svg's status is 0 on entry. */
static struct mp_svg_panel *panel_new(struct mp_svg *svg, const struct mp_svg_panel_spec *spec)
{
	if (!axis_valid(&spec->x_axis) || !axis_valid(&spec->y_axis) || !isfinite(spec->x) ||
	    !isfinite(spec->y) || !(spec->width > 0) || !(spec->height > 0) ||
	    !(spec->pad >= 0) || !isfinite(spec->margin_left + spec->margin_right +
					   spec->margin_top + spec->margin_bottom + spec->pad)) {
		panel_error(svg, MP_EINVAL);
		return NULL;
	}
	struct mp_svg_panel *p = calloc(1, sizeof(*p));
	if (!p) {
		panel_error(svg, MP_ENOMEM);
		return NULL;
	}
	p->svg = svg;
	p->xa = spec->x_axis;
	p->ya = spec->y_axis;
	p->xa.label = NULL;
	p->ya.label = NULL;
	p->pad = spec->pad;
	p->id = spec->id ? dup_string(spec->id) : NULL;
	if (spec->id && !p->id) {
		panel_free(p);
		panel_error(svg, MP_ENOMEM);
		return NULL;
	}
	if (!use_id(svg, spec->id)) {
		panel_free(p);
		return NULL;
	}
	return p;
}

/* The plot area (p->x, y, w, h in px) and both axes' ticks: y tick labels
 * decide the left margin, so the y ticks come first for a first guess of
 * the height, then the x ticks for the width. False when the area left is
 * too small for the padding. */
static bool panel_layout(struct mp_svg_panel *p, const struct mp_svg_panel_spec *spec,
			 struct ticks *xt, struct ticks *yt)
{
	double top = spec->margin_top > 0 ? spec->margin_top : (spec->title ? 30.0 : 12.0);
	double bottom = spec->margin_bottom > 0 ? spec->margin_bottom
						 : 24.0 + (spec->x_axis.label ? 20.0 : 0.0);
	double ph = spec->height - top - bottom;
	make_ticks(&p->ya, ph > 0 ? (size_t)(ph / 42.0) : 1, yt);
	double left = spec->margin_left > 0
			      ? spec->margin_left
			      : yt->max_width + 12.0 + (spec->y_axis.label ? 22.0 : 0.0);
	double right = spec->margin_right > 0 ? spec->margin_right : 14.0;
	double pw = spec->width - left - right;
	size_t want = pw > 0 ? (size_t)(pw / 70.0) : 1;
	for (;;) {
		make_ticks(&p->xa, want, xt);
		/* Labels need their width plus 12 px between neighbours. */
		double room = xt->n >= 2 ? pw / (double)(xt->n - 1) : pw;
		if (want <= 1 || xt->max_width + 12.0 <= room) {
			break;
		}
		want--;
	}
	if (spec->margin_right <= 0 && xt->n > 0) {
		bool ok;
		double f = map_axis(&p->xa, xt->v[xt->n - 1], &ok);
		if (ok && f > 0.98) {
			right = fmax(right, xt->last_width / 2.0 + 4.0);
			pw = spec->width - left - right;
		}
	}
	if (!(pw > 2 * p->pad + 10) || !(ph > 2 * p->pad + 10)) {
		return false;
	}
	p->x = spec->x + left;
	p->y = spec->y + top;
	p->w = pw;
	p->h = ph;
	return true;
}

/* Minor log gridlines (2..9 x 10^k) when decades are wide enough. */
static void put_minor_grid(struct mp_svg_panel *p)
{
	struct mp_svg *svg = p->svg;
	for (int axis = 0; axis < 2; axis++) {
		const struct mp_svg_axis *a = axis == 0 ? &p->xa : &p->ya;
		double len = axis == 0 ? p->w : p->h;
		if (a->scale != MP_SVG_LOG) {
			continue;
		}
		double decades = log10(a->max) - log10(a->min);
		if (len / decades < 60.0 || decades > 12) {
			continue;
		}
		put(svg, "<path class=\"grid minor\" stroke=\"#f0f0f0\" stroke-width=\"1\" fill=\"none\" d=\"");
		for (double d = floor(log10(a->min)); d <= ceil(log10(a->max)); d += 1.0) {
			for (int m = 2; m <= 9; m++) {
				double v = m * pow(10.0, d);
				if (v <= a->min || v >= a->max) {
					continue;
				}
				if (axis == 0) {
					put(svg, "M%.2f %.2fV%.2f", c2(mp_svg_panel_x(p, v)), c2(p->y),
					    c2(p->y + p->h));
				} else {
					put(svg, "M%.2f %.2fH%.2f", c2(p->x), c2(mp_svg_panel_y(p, v)),
					    c2(p->x + p->w));
				}
			}
		}
		put(svg, "\"/>\n");
	}
}

/* Major gridlines, the frame, the tick marks and the tick labels. */
static void put_major_ticks(struct mp_svg_panel *p, const struct ticks *xt, const struct ticks *yt)
{
	struct mp_svg *svg = p->svg;
	put(svg, "<path class=\"grid\" stroke=\"#dddddd\" stroke-width=\"1\" fill=\"none\" d=\"");
	for (size_t i = 0; i < xt->n; i++) {
		put(svg, "M%.2f %.2fV%.2f", c2(mp_svg_panel_x(p, xt->v[i])), c2(p->y), c2(p->y + p->h));
	}
	for (size_t i = 0; i < yt->n; i++) {
		put(svg, "M%.2f %.2fH%.2f", c2(p->x), c2(mp_svg_panel_y(p, yt->v[i])), c2(p->x + p->w));
	}
	put(svg, "\"/>\n");
	put(svg, "<rect class=\"frame\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
		 "fill=\"none\" stroke=\"#444444\" stroke-width=\"1\"/>\n",
	    c2(p->x), c2(p->y), c2(p->w), c2(p->h));
	put(svg, "<path class=\"ticks\" stroke=\"#444444\" stroke-width=\"1\" fill=\"none\" d=\"");
	for (size_t i = 0; i < xt->n; i++) {
		put(svg, "M%.2f %.2fv5", c2(mp_svg_panel_x(p, xt->v[i])), c2(p->y + p->h));
	}
	for (size_t i = 0; i < yt->n; i++) {
		put(svg, "M%.2f %.2fh-5", c2(p->x), c2(mp_svg_panel_y(p, yt->v[i])));
	}
	put(svg, "\"/>\n");
	for (size_t i = 0; i < xt->n; i++) {
		put(svg, "<text class=\"tick-label x\" x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" "
			 "font-size=\"%.0f\" fill=\"#333333\">%s</text>\n",
		    c2(mp_svg_panel_x(p, xt->v[i])), c2(p->y + p->h + 8 + TICK_FONT), TICK_FONT,
		    xt->label[i]);
	}
	for (size_t i = 0; i < yt->n; i++) {
		put(svg, "<text class=\"tick-label y\" x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\" "
			 "font-size=\"%.0f\" fill=\"#333333\">%s</text>\n",
		    c2(p->x - 8), c2(mp_svg_panel_y(p, yt->v[i]) + TICK_FONT * 0.35), TICK_FONT,
		    yt->label[i]);
	}
}

/* The axis labels (the y one rotated, clear of the widest y tick label) and the title. */
static void put_axis_labels(struct mp_svg_panel *p, const struct mp_svg_panel_spec *spec,
			    const struct ticks *yt)
{
	struct mp_svg *svg = p->svg;
	if (spec->x_axis.label) {
		put(svg, "<text class=\"axis-label x\" x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" "
			 "font-size=\"%.0f\" fill=\"#222222\">",
		    c2(p->x + p->w / 2), c2(p->y + p->h + 8 + TICK_FONT + 8 + AXIS_FONT), AXIS_FONT);
		put_text(svg, spec->x_axis.label);
		put(svg, "</text>\n");
	}
	if (spec->y_axis.label) {
		double lx = p->x - 8 - yt->max_width - 8 - 3;
		double ly = p->y + p->h / 2;
		put(svg, "<text class=\"axis-label y\" x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" "
			 "font-size=\"%.0f\" fill=\"#222222\" transform=\"rotate(-90 %.2f %.2f)\">",
		    c2(lx), c2(ly), AXIS_FONT, c2(lx), c2(ly));
		put_text(svg, spec->y_axis.label);
		put(svg, "</text>\n");
	}
	if (spec->title) {
		put(svg, "<text class=\"panel-title\" x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" "
			 "font-size=\"%.0f\" font-weight=\"bold\" fill=\"#222222\">",
		    c2(p->x + p->w / 2), c2(p->y - 10), TITLE_FONT);
		put_text(svg, spec->title);
		put(svg, "</text>\n");
	}
}

int mp_svg_panel_begin(struct mp_svg *svg, const struct mp_svg_panel_spec *spec,
		       struct mp_svg_panel **out)
{
	assert(svg && spec && out);
	if (svg->status != 0) {
		return svg->status;
	}
	if (svg->open) {
		return panel_error(svg, MP_EUSAGE);
	}
	struct mp_svg_panel *p = panel_new(svg, spec);
	if (!p) {
		return svg->status;
	}
	struct ticks *yt = calloc(1, sizeof(*yt));
	struct ticks *xt = calloc(1, sizeof(*xt));
	if (!yt || !xt || !panel_layout(p, spec, xt, yt)) {
		int rc = !yt || !xt ? MP_ENOMEM : MP_EINVAL;
		free(yt);
		free(xt);
		panel_free(p);
		return panel_error(svg, rc);
	}
	put(svg, "<g id=\"%s\" class=\"panel\">\n", spec->id);
	put(svg, "<defs><clipPath id=\"%s-clip\"><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
		 "height=\"%.2f\"/></clipPath></defs>\n",
	    spec->id, c2(p->x), c2(p->y), c2(p->w), c2(p->h));
	put_minor_grid(p);
	put_major_ticks(p, xt, yt);
	put_axis_labels(p, spec, yt);
	free(yt);
	free(xt);
	if (svg->status != 0) {
		panel_free(p);
		return svg->status;
	}
	svg->open = p;
	*out = p;
	return 0;
}

static int add_legend(struct mp_svg_panel *p, const char *label, size_t color, unsigned style,
		      enum mp_svg_marker marker)
{
	void *items = p->legend;
	char *copy = dup_string(label);
	if (!copy || !grow(&items, &p->cap_legend, p->n_legend + 1, sizeof(struct legend_entry))) {
		free(copy);
		fail(p->svg, MP_ENOMEM);
		return p->svg->status;
	}
	p->legend = items;
	p->legend[p->n_legend++] = (struct legend_entry){
		.label = copy, .color = color, .style = style, .marker = marker,
	};
	return 0;
}

int mp_svg_panel_legend(struct mp_svg_panel *p, const char *label, size_t color, unsigned style,
			enum mp_svg_marker marker)
{
	assert(p && label);
	if (p->svg->status != 0) {
		return p->svg->status;
	}
	return add_legend(p, label, color, style, marker);
}

int mp_svg_panel_series(struct mp_svg_panel *p, const struct mp_svg_series *s)
{
	assert(p && s);
	assert(s->n == 0 || (s->x && s->y));
	struct mp_svg *svg = p->svg;
	if (svg->status != 0 || !use_id(svg, s->id)) {
		return svg->status;
	}
	unsigned style = s->style ? s->style : MP_SVG_LINE;
	const char *color = mp_svg_color(s->color);
	put(svg, "<g id=\"%s\" class=\"series\"", s->id);
	if (s->label) {
		put(svg, " data-label=\"");
		put_text(svg, s->label);
		put(svg, "\"");
	}
	put(svg, ">\n");
	if (style & MP_SVG_LINE) {
		put(svg, "<g clip-path=\"url(#%s-clip)\">\n", p->id);
		bool open = false;
		double lx = 0, ly = 0;
		for (size_t i = 0; i < s->n; i++) {
			double x = mp_svg_panel_x(p, s->x[i]);
			double y = mp_svg_panel_y(p, s->y[i]);
			if (isnan(x) || isnan(y)) {
				if (open) {
					put(svg, "\"/>\n");
					open = false;
				}
				continue;
			}
			if (!open) {
				put(svg, "<polyline class=\"line\"");
				put_line_style(svg, color, style);
				put(svg, " points=\"%.2f,%.2f", c2(x), c2(y));
				add_sample(p, x, y);
				open = true;
			} else {
				if (style & MP_SVG_STEP) {
					put(svg, " %.2f,%.2f", c2(x), c2(ly));
					add_segment(p, lx, ly, x, ly);
					add_segment(p, x, ly, x, y);
				} else {
					add_segment(p, lx, ly, x, y);
				}
				put(svg, " %.2f,%.2f", c2(x), c2(y));
			}
			lx = x;
			ly = y;
		}
		if (open) {
			put(svg, "\"/>\n");
		}
		put(svg, "</g>\n");
	}
	if (style & MP_SVG_MARKERS) {
		for (size_t i = 0; i < s->n; i++) {
			double x = mp_svg_panel_x(p, s->x[i]);
			double y = mp_svg_panel_y(p, s->y[i]);
			if (isnan(x) || isnan(y) || !inside(p, x, y, 0.5)) {
				continue;
			}
			put_marker(svg, x, y, MARKER_R - 0.5, color, s->marker);
			add_sample(p, x, y);
		}
	}
	put(svg, "</g>\n");
	if (s->label) {
		add_legend(p, s->label, s->color, style, s->marker);
	}
	return svg->status;
}

/* Queue a label with its candidate positions. */
static void add_pending(struct mp_svg_panel *p, const char *text, const char *owner, double ax,
			double ay, const struct candidate *c, size_t n)
{
	void *items = p->labels;
	char *t = dup_string(text);
	char *o = dup_string(owner);
	if (!t || !o || !grow(&items, &p->cap_labels, p->n_labels + 1, sizeof(struct pending))) {
		free(t);
		free(o);
		fail(p->svg, MP_ENOMEM);
		return;
	}
	p->labels = items;
	struct pending *l = &p->labels[p->n_labels++];
	*l = (struct pending){.text = t, .owner = o, .ax = ax, .ay = ay, .n = n};
	memcpy(l->c, c, n * sizeof(*c));
}

static struct box text_box(const struct candidate *c, double w, double size)
{
	double x0 = c->anchor == MP_SVG_START ? c->x : c->anchor == MP_SVG_MIDDLE ? c->x - w / 2 : c->x - w;
	return (struct box){x0 - 1, c->y - size * 0.8 - 1, x0 + w + 1, c->y + size * 0.25 + 1};
}

/* The point of box b nearest to (x, y). */
static void nearest(struct box b, double x, double y, double *nx, double *ny)
{
	*nx = fmin(fmax(x, b.x0), b.x1);
	*ny = fmin(fmax(y, b.y0), b.y1);
}

/* How many placed labels or markers a leader line from (x, y) to box b
 * would cross (sampled every 2 px, ends excluded). */
static size_t leader_crossings(const struct mp_svg_panel *p, double x, double y, struct box b)
{
	double tx, ty;
	nearest(b, x, y, &tx, &ty);
	double len = hypot(tx - x, ty - y);
	size_t hits = 0;
	for (size_t i = 0; i < p->n_boxes; i++) {
		const struct box *o = &p->boxes[i];
		for (double d = 8; d < len - 2; d += 2) {
			double px = x + (tx - x) * d / len, py = y + (ty - y) * d / len;
			if (px >= o->x0 && px <= o->x1 && py >= o->y0 && py <= o->y1) {
				hits++;
				break;
			}
		}
	}
	return hits;
}

/* Place and draw a queued label where it hides the least (ties: first
 * candidate; each ring further out costs 3), with a leader line when it
 * had to move away from what it names. */
static void draw_pending(struct mp_svg_panel *p, const struct pending *l)
{
	double w = mp_svg_text_width(l->text, LABEL_FONT);
	size_t best = 0;
	double best_cost = HUGE_VAL;
	for (size_t i = 0; i < l->n; i++) {
		struct box b = text_box(&l->c[i], w, LABEL_FONT);
		double cost = box_cost(p, b) + 3.0 * l->c[i].ring;
		if (l->c[i].ring > 0) {
			cost += 100.0 * leader_crossings(p, l->ax, l->ay, b);
		}
		if (cost < best_cost) {
			best = i;
			best_cost = cost;
		}
	}
	const struct candidate *c = &l->c[best];
	struct box b = text_box(c, w, LABEL_FONT);
	add_box(p, b);
	struct mp_svg *svg = p->svg;
	put(svg, "<g class=\"label\" data-for=\"%s\">\n", l->owner);
	if (c->ring > 0) {
		/* From the point to the nearest point of the label's box. */
		double tx, ty;
		nearest(b, l->ax, l->ay, &tx, &ty);
		add_segment(p, l->ax, l->ay, tx, ty);
		put(svg, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#777777\" "
			 "stroke-width=\"0.75\"/>\n",
		    c2(l->ax), c2(l->ay), c2(tx), c2(ty));
	}
	put_label(svg, c->x, c->y, c->anchor, LABEL_FONT, "label-text", l->text);
	put(svg, "</g>\n");
}

static int ref_line(struct mp_svg_panel *p, bool horizontal, double v, const char *id,
		    const char *label, size_t color, unsigned style)
{
	struct mp_svg *svg = p->svg;
	if (svg->status != 0 || !use_id(svg, id)) {
		return svg->status;
	}
	double pos = horizontal ? mp_svg_panel_y(p, v) : mp_svg_panel_x(p, v);
	bool shown = !isnan(pos) && (horizontal ? pos >= p->y - 0.01 && pos <= p->y + p->h + 0.01
						: pos >= p->x - 0.01 && pos <= p->x + p->w + 0.01);
	put(svg, "<g id=\"%s\" class=\"%s\"", id, horizontal ? "hline" : "vline");
	if (label) {
		put(svg, " data-label=\"");
		put_text(svg, label);
		put(svg, "\"");
	}
	if (isfinite(v)) {
		put(svg, " data-value=\"%.6g\"", v);
	}
	put(svg, ">\n");
	if (shown) {
		double x0 = horizontal ? p->x : pos, x1 = horizontal ? p->x + p->w : pos;
		double y0 = horizontal ? pos : p->y, y1 = horizontal ? pos : p->y + p->h;
		put(svg, "<line class=\"line\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"", c2(x0),
		    c2(y0), c2(x1), c2(y1));
		put_line_style(svg, mp_svg_color(color), style & (MP_SVG_DASHED | MP_SVG_THICK));
		put(svg, "/>\n");
		add_segment(p, x0, y0, x1, y1);
		if (label) {
			struct candidate c[4];
			if (horizontal) {
				c[0] = (struct candidate){p->x + p->w - 6, pos - 5, MP_SVG_END, 0};
				c[1] = (struct candidate){p->x + 6, pos - 5, MP_SVG_START, 0};
				c[2] = (struct candidate){p->x + p->w - 6, pos + 5 + LABEL_FONT, MP_SVG_END, 0};
				c[3] = (struct candidate){p->x + 6, pos + 5 + LABEL_FONT, MP_SVG_START, 0};
			} else {
				c[0] = (struct candidate){pos + 5, p->y + 6 + LABEL_FONT, MP_SVG_START, 0};
				c[1] = (struct candidate){pos - 5, p->y + 6 + LABEL_FONT, MP_SVG_END, 0};
				c[2] = (struct candidate){pos + 5, p->y + p->h - 6, MP_SVG_START, 0};
				c[3] = (struct candidate){pos - 5, p->y + p->h - 6, MP_SVG_END, 0};
			}
			add_pending(p, label, id, horizontal ? p->x : pos, horizontal ? pos : p->y, c, 4);
		}
	}
	put(svg, "</g>\n");
	return svg->status;
}

int mp_svg_panel_hline(struct mp_svg_panel *p, double v, const char *id, const char *label,
		       size_t color, unsigned style)
{
	assert(p);
	return ref_line(p, true, v, id, label, color, style);
}

int mp_svg_panel_vline(struct mp_svg_panel *p, double v, const char *id, const char *label,
		       size_t color, unsigned style)
{
	assert(p);
	return ref_line(p, false, v, id, label, color, style);
}

int mp_svg_panel_point(struct mp_svg_panel *p, double x, double y, const char *id,
		       const char *label, size_t color, enum mp_svg_marker marker)
{
	assert(p);
	struct mp_svg *svg = p->svg;
	if (svg->status != 0 || !use_id(svg, id)) {
		return svg->status;
	}
	double px = mp_svg_panel_x(p, x);
	double py = mp_svg_panel_y(p, y);
	put(svg, "<g id=\"%s\" class=\"marker\"", id);
	if (label) {
		put(svg, " data-label=\"");
		put_text(svg, label);
		put(svg, "\"");
	}
	if (isfinite(x) && isfinite(y)) {
		put(svg, " data-x=\"%.6g\" data-y=\"%.6g\"", x, y);
	}
	put(svg, ">\n");
	if (!isnan(px) && !isnan(py) && inside(p, px, py, 0.5)) {
		double r = MARKER_R + 0.5;
		put_marker(svg, px, py, r, mp_svg_color(color), marker);
		if (label) {
			/* Right, left, above, below; then the same 1-3 rows further
			 * up or down (with a leader line). */
			struct candidate c[MAX_CANDIDATES];
			size_t n = 0;
			double g = r + 4;
			double mid = py + LABEL_FONT * 0.35;
			double below = py + g + LABEL_FONT * 0.8;
			for (int ring = 0; ring < 4; ring++) {
				double dy = ring * (LABEL_FONT + 4);
				c[n++] = (struct candidate){px + g, mid - dy, MP_SVG_START, ring};
				c[n++] = (struct candidate){px - g, mid - dy, MP_SVG_END, ring};
				c[n++] = (struct candidate){px, py - g - dy, MP_SVG_MIDDLE, ring};
				c[n++] = (struct candidate){px, below + dy, MP_SVG_MIDDLE, ring};
				if (ring > 0) {
					c[n++] = (struct candidate){px + g, mid + dy, MP_SVG_START, ring};
					c[n++] = (struct candidate){px - g, mid + dy, MP_SVG_END, ring};
				}
			}
			add_pending(p, label, id, px, py, c, n);
		}
		add_box(p, (struct box){px - r, py - r, px + r, py + r});
	}
	put(svg, "</g>\n");
	return svg->status;
}

static void legend_draw(struct mp_svg_panel *p)
{
	struct mp_svg *svg = p->svg;
	double tw = 0;
	for (size_t i = 0; i < p->n_legend; i++) {
		tw = fmax(tw, mp_svg_text_width(p->legend[i].label, LEGEND_FONT));
	}
	double w = 8 + 26 + 6 + tw + 8;
	double h = 6 + LEGEND_ROW * (double)p->n_legend + 2;
	double in = 8;
	struct box c[4] = {
		{p->x + p->w - in - w, p->y + in, p->x + p->w - in, p->y + in + h},
		{p->x + in, p->y + in, p->x + in + w, p->y + in + h},
		{p->x + p->w - in - w, p->y + p->h - in - h, p->x + p->w - in, p->y + p->h - in},
		{p->x + in, p->y + p->h - in - h, p->x + in + w, p->y + p->h - in},
	};
	size_t best = 0;
	double best_cost = HUGE_VAL;
	for (size_t i = 0; i < 4; i++) {
		/* Prefer a corner with room around it too: data within 24 px of
		 * the box costs a little. */
		struct box near_box = {c[i].x0 - 24, c[i].y0 - 24, c[i].x1 + 24, c[i].y1 + 24};
		double cost = box_cost(p, c[i]) + 0.05 * box_cost(p, near_box);
		if (cost < best_cost) {
			best_cost = cost;
			best = i;
		}
	}
	struct box b = c[best];
	add_box(p, b);
	put(svg, "<g id=\"%s-legend\" class=\"legend\">\n", p->id);
	put(svg, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" rx=\"3\" fill=\"#ffffff\" "
		 "fill-opacity=\"0.9\" stroke=\"#bbbbbb\" stroke-width=\"1\"/>\n",
	    c2(b.x0), c2(b.y0), c2(w), c2(h));
	for (size_t i = 0; i < p->n_legend; i++) {
		const struct legend_entry *e = &p->legend[i];
		double cy = b.y0 + 6 + LEGEND_ROW * ((double)i + 0.5);
		double lx0 = b.x0 + 8, lx1 = lx0 + 26;
		if (e->style & MP_SVG_LINE) {
			put(svg, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"", c2(lx0), c2(cy), c2(lx1),
			    c2(cy));
			put_line_style(svg, mp_svg_color(e->color), e->style);
			put(svg, "/>\n");
		}
		if (e->style & MP_SVG_MARKERS) {
			put_marker(svg, (lx0 + lx1) / 2, cy, MARKER_R - 0.5, mp_svg_color(e->color), e->marker);
		}
		put(svg, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.0f\" fill=\"#222222\">", c2(lx1 + 6),
		    c2(cy + LEGEND_FONT * 0.35), LEGEND_FONT);
		put_text(svg, e->label);
		put(svg, "</text>\n");
	}
	put(svg, "</g>\n");
}

int mp_svg_panel_end(struct mp_svg_panel *p)
{
	if (!p) {
		return 0;
	}
	struct mp_svg *svg = p->svg;
	if (p->n_legend > 0) {
		legend_draw(p);
	}
	for (size_t i = 0; i < p->n_labels && svg->status == 0; i++) {
		draw_pending(p, &p->labels[i]);
	}
	put(svg, "</g>\n");
	if (svg->open == p) {
		svg->open = NULL;
	}
	panel_free(p);
	return svg->status;
}

/* --- heatmap and colour bar ----------------------------------------- */

int mp_svg_heatmap(struct mp_svg *svg, const struct mp_svg_heatmap *hm)
{
	assert(svg && hm);
	if (svg->status != 0) {
		return svg->status;
	}
	if (hm->rows < 1 || hm->cols < 1 || hm->rows > SIZE_MAX / hm->cols || !hm->values ||
	    !(hm->cell_width > 0) || !(hm->cell_height > 0) || !isfinite(hm->x) ||
	    !isfinite(hm->y) || !isfinite(hm->vmin) || !isfinite(hm->vmax) ||
	    !(hm->vmin < hm->vmax) || !isfinite(hm->cell_width * (double)hm->cols) ||
	    !isfinite(hm->cell_height * (double)hm->rows)) {
		fail(svg, MP_EINVAL);
		return svg->status;
	}
	if (!use_id(svg, hm->id)) {
		return svg->status;
	}
	put(svg, "<g id=\"%s\" class=\"heatmap\"", hm->id);
	if (hm->label) {
		put(svg, " data-label=\"");
		put_text(svg, hm->label);
		put(svg, "\"");
	}
	put(svg, " data-rows=\"%zu\" data-cols=\"%zu\" shape-rendering=\"crispEdges\">\n", hm->rows,
	    hm->cols);
	for (size_t r = 0; r < hm->rows; r++) {
		for (size_t c = 0; c < hm->cols; c++) {
			double v = hm->values[r * hm->cols + c];
			char color[16];
			mp_svg_colormap(isfinite(v) ? (v - hm->vmin) / (hm->vmax - hm->vmin) : (double)NAN, color,
					sizeof(color));
			put(svg, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n",
			    c2(hm->x + (double)c * hm->cell_width), c2(hm->y + (double)r * hm->cell_height),
			    hm->cell_width, hm->cell_height, color);
		}
	}
	put(svg, "</g>\n");
	return svg->status;
}

int mp_svg_rect(struct mp_svg *svg, double x, double y, double width, double height,
		size_t color, const char *id, const char *label)
{
	assert(svg);
	if (svg->status != 0) {
		return svg->status;
	}
	if (!isfinite(x) || !isfinite(y) || !isfinite(width) || !isfinite(height) || width < 0 ||
	    height < 0 || !id) {
		fail(svg, MP_EINVAL);
		return svg->status;
	}
	if (!use_id(svg, id)) {
		return svg->status;
	}
	put(svg, "<rect id=\"%s\" class=\"bar\"", id);
	if (label) {
		put(svg, " data-label=\"");
		put_text(svg, label);
		put(svg, "\"");
	}
	put(svg, " x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n", c2(x),
	    c2(y), c2(width), c2(height), mp_svg_color(color));
	return svg->status;
}

int mp_svg_colorbar(struct mp_svg *svg, double x, double y, double width, double height,
		    double vmin, double vmax, const char *id, const char *label)
{
	assert(svg);
	if (svg->status != 0) {
		return svg->status;
	}
	if (!isfinite(x) || !isfinite(y) || !(width > 0) || !(height > 0) || !isfinite(width) ||
	    !isfinite(height) || !isfinite(vmin) || !isfinite(vmax) || !(vmin < vmax)) {
		fail(svg, MP_EINVAL);
		return svg->status;
	}
	if (!use_id(svg, id)) {
		return svg->status;
	}
	put(svg, "<g id=\"%s\" class=\"colorbar\" data-min=\"%.6g\" data-max=\"%.6g\">\n", id, vmin, vmax);
	put(svg, "<defs><linearGradient id=\"%s-gradient\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">", id);
	for (int i = 0; i <= 8; i++) {
		char color[16];
		mp_svg_colormap(i / 8.0, color, sizeof(color));
		put(svg, "<stop offset=\"%.3f\" stop-color=\"%s\"/>", i / 8.0, color);
	}
	put(svg, "</linearGradient></defs>\n");
	put(svg, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"url(#%s-gradient)\" "
		 "stroke=\"#444444\" stroke-width=\"1\"/>\n",
	    c2(x), c2(y), c2(width), c2(height), id);
	struct mp_svg_axis a = {.scale = MP_SVG_LINEAR, .min = vmin, .max = vmax};
	struct ticks *t = calloc(1, sizeof(*t));
	if (!t) {
		fail(svg, MP_ENOMEM);
		return svg->status;
	}
	make_ticks(&a, (size_t)fmax(1.0, height / 40.0), t);
	put(svg, "<path stroke=\"#444444\" stroke-width=\"1\" fill=\"none\" d=\"");
	for (size_t i = 0; i < t->n; i++) {
		double ty = y + height - (t->v[i] - vmin) / (vmax - vmin) * height;
		put(svg, "M%.2f %.2fh5", c2(x + width), c2(ty));
	}
	put(svg, "\"/>\n");
	for (size_t i = 0; i < t->n; i++) {
		double ty = y + height - (t->v[i] - vmin) / (vmax - vmin) * height;
		put(svg, "<text class=\"tick-label\" x=\"%.2f\" y=\"%.2f\" font-size=\"%.0f\" "
			 "fill=\"#333333\">%s</text>\n",
		    c2(x + width + 8), c2(ty + TICK_FONT * 0.35), TICK_FONT, t->label[i]);
	}
	if (label) {
		double lx = x + width + 8 + t->max_width + 8 + AXIS_FONT * 0.8;
		double ly = y + height / 2;
		put(svg, "<text class=\"axis-label\" x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" "
			 "font-size=\"%.0f\" fill=\"#222222\" transform=\"rotate(90 %.2f %.2f)\">",
		    c2(lx), c2(ly), AXIS_FONT, c2(lx), c2(ly));
		put_text(svg, label);
		put(svg, "</text>\n");
	}
	put(svg, "</g>\n");
	free(t);
	return svg->status;
}
