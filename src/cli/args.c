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

bool cli_parse_quantity(const char *cmd, const char *opt, const char *text, const char *kind,
			double min, double max, double *out)
{
	double v = 0.0;
	char range[96];
	if (mp_parse_quantity(text, kind, &v) != 0 || !isfinite(v) || v < min || v > max) {
		cli_usage(cmd, "--%s: expected a quantity in %s %s, got '%s'", opt,
			  kind ? kind : "plain numbers", range_text(min, false, max, range, sizeof(range)),
			  text);
		return false;
	}
	*out = v;
	return true;
}
