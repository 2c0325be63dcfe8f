/* Option values: whole numbers, numbers, quantities with units and output
 * formats, each checked against its range; a usage error naming the option
 * otherwise (cli.h). */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/loader.h"

/* The allowed range as the file loaders write it: "> 0 and <= 1e+09". */
static const char *range_text(double min, bool min_open, double max, char *buf, size_t size)
{
	snprintf(buf, size, "%s %g and <= %g", min_open ? ">" : ">=", min, max);
	return buf;
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
		cli_usage(cmd, "--%s: expected a whole number from %u to %u, got '%s'", opt, min,
			  max, text);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

/* A plain decimal number (mp_parse_quantity: no nan, inf or hexadecimal),
 * in the range; false for anything else. */
static bool parse_real(const char *text, double min, bool min_open, double max, double *out)
{
	double v = 0.0;
	if (isspace((unsigned char)text[0]) || mp_parse_quantity(text, NULL, &v) != 0 || !isfinite(v)
	    || v < min || (min_open && v == min) || v > max) {
		return false;
	}
	*out = v;
	return true;
}

bool cli_parse_double(const char *cmd, const char *opt, const char *text,
		      double min, double max, double *out)
{
	char range[96];
	if (!parse_real(text, min, false, max, out)) {
		cli_usage(cmd, "--%s: expected a number %s, got '%s'", opt,
			  range_text(min, false, max, range, sizeof(range)), text);
		return false;
	}
	return true;
}

bool cli_parse_positive(const char *cmd, const char *opt, const char *text, double max, double *out)
{
	char range[96];
	if (!parse_real(text, 0.0, true, max, out)) {
		cli_usage(cmd, "--%s: expected a number %s, got '%s'", opt,
			  range_text(0.0, true, max, range, sizeof(range)), text);
		return false;
	}
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
	cli_usage(cmd, "--format: expected 'yaml' or 'json', got '%s'", text);
	return false;
}

bool cli_parse_output(const char *cmd, const char *text, enum cli_output *out)
{
	if (strcmp(text, "text") == 0) {
		*out = CLI_OUTPUT_TEXT;
		return true;
	}
	if (strcmp(text, "yaml") == 0) {
		*out = CLI_OUTPUT_YAML;
		return true;
	}
	if (strcmp(text, "json") == 0) {
		*out = CLI_OUTPUT_JSON;
		return true;
	}
	cli_usage(cmd, "--format: expected 'text', 'yaml' or 'json', got '%s'", text);
	return false;
}

/* The unit an example uses: "50" -> '50 ms'; a number already in base
 * units ("3.35e12") -> '3.35e12 B/s'. */
static const char *example_unit(const char *kind, double v)
{
	bool base = fabs(v) >= 1e6;
	if (strcmp(kind, "bytes") == 0) {
		return base ? "B" : "GB";
	}
	if (strcmp(kind, "bytes/s") == 0) {
		return base ? "B/s" : "GB/s";
	}
	if (strcmp(kind, "flop/s") == 0) {
		return base ? "FLOP/s" : "TFLOP/s";
	}
	return "s";
}

/* Where an SI prefix with no unit starts ("80G", "400 Gi"), or NULL. */
static const char *bare_prefix(const char *text)
{
	size_t n = strspn(text, "0123456789.+-eE ");
	const char *u = text + n;
	if (n == 0 || !*u || !strchr("kKMGTP", *u)) {
		return NULL;
	}
	return u[1] == '\0' || (u[1] == 'i' && u[2] == '\0') ? u : NULL;
}

/* Issue 26: a bare number where a unit belongs (--tpot 50 would be 50 s)
 * or a prefix without its unit ("80G": bytes or bits?); 0 is 0 in every
 * unit. Reports and returns true for either. */
static bool unit_missing(const char *cmd, const char *opt, const char *text, const char *kind)
{
	double plain = 0.0;
	if (mp_parse_quantity(text, NULL, &plain) == 0 && plain != 0.0) {
		if (strcmp(kind, "seconds") == 0) {
			cli_usage(cmd, "--%s: a bare number %s has no unit; write it with one, e.g. "
				  "'%s ms' or '%s s'", opt, text, text, text);
		} else {
			cli_usage(cmd, "--%s: a bare number %s has no unit; write it with one, e.g. '%s %s'",
				  opt, text, text, example_unit(kind, plain));
		}
		return true;
	}
	const char *u = strcmp(kind, "seconds") == 0 ? NULL : bare_prefix(text);
	if (!u) {
		return false;
	}
	int n = (int)(u - text);
	while (n > 0 && text[n - 1] == ' ') {
		n--;
	}
	char dec = u[0] == 'K' ? 'k' : u[0];
	char bin = u[0] == 'k' ? 'K' : u[0];
	if (strcmp(kind, "bytes") == 0) {
		cli_usage(cmd, "--%s: '%s' has a prefix but no unit; write '%.*s %cB' (powers of 1000) "
			  "or '%.*s %ciB' (powers of 1024)", opt, text, n, text, dec, n, text, bin);
	} else if (strcmp(kind, "bytes/s") == 0) {
		cli_usage(cmd, "--%s: '%s' has a prefix but no unit (bytes or bits?); write '%.*s %cB/s' "
			  "(bytes per second) or '%.*s %cbit/s' (bits: an eighth of it)", opt, text, n,
			  text, dec, n, text, dec);
	} else {
		cli_usage(cmd, "--%s: '%s' has a prefix but no unit; write '%.*s %cFLOP/s'", opt, text,
			  n, text, dec);
	}
	return true;
}

/* A plain number is seconds, as the option's value name says (SECONDS). */
bool cli_parse_seconds(const char *cmd, const char *opt, const char *text, double min, double max,
		       double *out)
{
	double v = 0.0;
	char range[96];
	if (mp_parse_quantity(text, "seconds", &v) != 0 || !isfinite(v) || v < min || v > max) {
		cli_usage(cmd, "--%s: expected seconds (a plain number, or with a unit: %s) %s, got '%s'",
			  opt, "s, ms, us, ns, min, h", range_text(min, false, max, range, sizeof(range)),
			  text);
		return false;
	}
	*out = v;
	return true;
}

/* Token and request counts: a plain number or k/K = 1e3, M = 1e6 (SI). */
bool cli_parse_count(const char *cmd, const char *opt, const char *text, double min,
		     bool min_open, double max, double *out)
{
	double v = 0.0;
	char range[96];
	if (isspace((unsigned char)text[0]) || mp_parse_quantity(text, "count", &v) != 0 ||
	    !isfinite(v) || v < min || (min_open && v == min) || v > max) {
		bool suffix = strpbrk(text, "kKMGTPgmt") != NULL;
		cli_usage(cmd, "--%s: expected a number %s, got '%s'%s", opt,
			  range_text(min, min_open, max, range, sizeof(range)), text,
			  suffix ? " (a count takes k = 1,000 or M = 1,000,000: SI, so 4K is 4,000; "
				   "write 4096 for a power of two)" : "");
		return false;
	}
	*out = v;
	return true;
}

bool cli_parse_quantity(const char *cmd, const char *opt, const char *text, const char *kind,
			double min, double max, double *out)
{
	double v = 0.0;
	char range[96];
	if (unit_missing(cmd, opt, text, kind)) {
		return false;
	}
	if (mp_parse_quantity(text, kind, &v) != 0 || !isfinite(v) || v < min || v > max) {
		cli_usage(cmd, "--%s: expected a quantity in %s %s, got '%s'", opt,
			  kind ? kind : "plain numbers", range_text(min, false, max, range, sizeof(range)),
			  text);
		return false;
	}
	*out = v;
	return true;
}
