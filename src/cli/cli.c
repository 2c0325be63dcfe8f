/* Helpers shared by the subcommands: help, usage errors, option values,
 * diagnostics and output. */
#include "cli.h"
#include "moeplan/placement.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool cli_quiet;

int cli_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "moeplan %s: ", cmd);
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
	fprintf(stderr, "moeplan: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

bool cli_parse_u32(const char *cmd, const char *opt, const char *text,
		   uint32_t min, uint32_t max, uint32_t *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	/* strtoull skips leading blanks; an option value should not have any */
	if (errno || end == text || *end != '\0' || strchr(text, '-') || isspace((unsigned char)text[0])
	    || v < min || v > max) {
		cli_usage(cmd, "--%s '%s': expected a whole number from %u to %u", opt, text, min, max);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

bool cli_parse_double(const char *cmd, const char *opt, const char *text,
		      double min, double max, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(text, &end);
	if (errno || end == text || *end != '\0' || !isfinite(v) || isspace((unsigned char)text[0])
	    || v < min || v > max) {
		cli_usage(cmd, "--%s '%s': expected a number from %g to %g", opt, text, min, max);
		return false;
	}
	*out = v;
	return true;
}

bool cli_parse_format(const char *cmd, const char *text, bool *json)
{
	if (strcmp(text, "yaml") == 0) {
		*json = false;
		return true;
	}
	if (strcmp(text, "json") == 0) {
		*json = true;
		return true;
	}
	cli_usage(cmd, "--format '%s': expected 'yaml' or 'json'", text);
	return false;
}

bool cli_same_file(const char *out_path, const char *in_path)
{
	if (!out_path || !in_path || strcmp(out_path, "-") == 0) {
		return false;
	}
	if (strcmp(out_path, in_path) == 0) {
		return true;
	}
	struct stat a, b;
	if (stat(out_path, &a) != 0 || stat(in_path, &b) != 0) {
		return false;
	}
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

const char *cli_write_error(int rc, int err)
{
	return rc == MP_EIO && err != 0 ? strerror(err) : mp_strerror(rc);
}

int cli_emit(const struct mp_doc *doc, const char *path, bool json)
{
	int rc = mp_doc_save(doc, path, json);
	if (rc) {
		int err = errno;
		cli_error("%s: cannot write: %s", path && strcmp(path, "-") ? path : "stdout",
			  cli_write_error(rc, err));
		return EXIT_INPUT;
	}
	return EXIT_OK;
}

int cli_check_outputs(const char *const *outputs, size_t n_outputs)
{
	for (size_t o = 0; o < n_outputs; o++) {
		const char *out = outputs[o];
		if (!out || strcmp(out, "-") == 0) {
			continue;
		}
		if (out[0] == '\0') {
			cli_error("an output file name is empty");
			return EXIT_USAGE;
		}
		struct stat st;
		if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) {
			cli_error("%s: cannot write: %s", out, strerror(EISDIR));
			return EXIT_INPUT;
		}
		/* the folder: everything up to the last '/', or "." */
		char dir[4096];
		const char *slash = strrchr(out, '/');
		size_t len = slash ? (size_t)(slash - out) : 0;
		if (len >= sizeof(dir)) {
			continue;
		}
		if (slash) {
			memcpy(dir, out, len);
			dir[len] = '\0';
			if (len == 0) {
				strcpy(dir, "/");
			}
		} else {
			strcpy(dir, ".");
		}
		if (access(dir, W_OK | X_OK) != 0) {
			int err = errno;
			cli_error("%s: cannot write: %s", out, strerror(err));
			return EXIT_INPUT;
		}
	}
	return EXIT_OK;
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
