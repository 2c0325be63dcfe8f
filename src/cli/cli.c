/* Messages the subcommands share: usage errors, errors, diagnostics, the
 * wall-clock warning, and numbers as text (counts, SI prefixes). Option
 * values are in args.c, outputs in output.c, the option tables in opt.c. */
#include "cli.h"
#include "moeplan/placement.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

bool cli_quiet;
const char *cli_cmd;

int cli_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "moeplan %s: error: ", cmd);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'moeplan %s --help'.\n", cmd);
	return EXIT_USAGE;
}

void cli_print_diags(const struct mp_diags *diags)
{
	for (size_t i = 0; i < diags->count; i++) {
		mp_diag_print(&diags->items[i], stderr);
	}
}

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (cli_cmd) {
		fprintf(stderr, "moeplan %s: error: ", cli_cmd);
	} else {
		fprintf(stderr, "moeplan: error: ");
	}
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

const char *cli_s(double n)
{
	return n == 1.0 ? "" : "s";
}

const char *cli_num(double v, char *buf, size_t size)
{
	if (isfinite(v) && v == floor(v) && fabs(v) < 1e15) {
		snprintf(buf, size, "%.0f", v);
	} else {
		snprintf(buf, size, "%.4g", v);
	}
	return buf;
}

uint32_t cli_report_time_limit(const char *cmd, const struct mp_placement *const *maps, size_t n,
			       double limit_s, struct mp_doc *doc)
{
	uint32_t layers = 0, total = 0;
	for (size_t i = 0; i < n; i++) {
		total = maps[i] && maps[i]->n_layers > total ? maps[i]->n_layers : total;
	}
	for (uint32_t l = 0; l < total; l++) {
		bool fired = false;
		for (size_t i = 0; i < n; i++) {
			fired |= maps[i] && l < maps[i]->n_layers &&
				 maps[i]->layers[l].status == MP_PLACE_TIME_LIMIT;
		}
		layers += fired;
	}
	if (layers == 0) {
		return 0;
	}
	static const char note[] = "the wall-clock safety limit stopped the search: this output depends "
				   "on the machine's speed and load; a larger --time-limit gives "
				   "byte-identical output";
	/* replan's limit is per layer (its run gets it times the layers); the
	 * others' bounds each phase's whole placement run */
	bool per_layer = strcmp(cmd, "replan") == 0;
	fprintf(stderr, "moeplan %s: warning: the wall-clock safety limit (%g s %s) stopped the search "
		"on %u of %u layer%s: this output depends on the machine's speed and load; a larger "
		"--time-limit gives byte-identical output\n", cmd, limit_s,
		per_layer ? "per layer, times the layers for the whole run"
			  : "for each placement run: all layers of one phase together",
		layers, total, cli_s(total));
	if (doc) {
		struct mp_doc *w = mp_doc_map();
		mp_doc_put_int(w, "layers", layers);
		mp_doc_put_real(w, "limit_s", limit_s);
		mp_doc_put_string(w, "note", note);
		mp_doc_put(doc, "wall_clock_limit", w);
	}
	return layers;
}

void cli_si(double value, const char *unit, char *buf, size_t size)
{
	static const struct {
		double scale;
		const char *prefix;
	} prefixes[] = {
		{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"},
	};
	if (!isfinite(value)) {
		snprintf(buf, size, "%s", isnan(value) ? "n/a" : "unbounded");
		return;
	}
	double a = fabs(value);
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (a >= prefixes[i].scale) {
			snprintf(buf, size, "%.4g %s%s", value / prefixes[i].scale, prefixes[i].prefix, unit);
			return;
		}
	}
	snprintf(buf, size, "%.4g %s", value, unit);
}
