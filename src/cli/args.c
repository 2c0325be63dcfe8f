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
	cli_usage(cmd, "--format '%s': expected 'text', 'yaml' or 'json'", text);
	return false;
}

bool cli_parse_quantity(const char *cmd, const char *opt, const char *text, const char *kind,
			double min, double max, double *out)
{
	double v = 0.0;
	if (mp_parse_quantity(text, kind, &v) != 0 || !isfinite(v) || v < min || v > max) {
		cli_usage(cmd, "--%s '%s': expected a quantity in %s from %g to %g", opt, text,
			  kind ? kind : "plain numbers", min, max);
		return false;
	}
	*out = v;
	return true;
}
