/* Diagnostics: a list of file:line:col records. */
#include "moeplan/diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *mp_strerror(int code)
{
	switch (code) {
	case MP_OK: return "success";
	case MP_EINVAL: return "invalid input";
	case MP_ENOMEM: return "out of memory or size overflow";
	case MP_EIO: return "input/output error";
	case MP_ENOFIT: return "does not fit in HBM";
	case MP_ELIMIT: return "solver limit reached with no feasible plan";
	case MP_EUSAGE: return "options cannot be combined";
	case MP_EINTR: return "interrupted";
	default: return "unknown error";
	}
}

void mp_diags_init(struct mp_diags *diags)
{
	diags->items = NULL;
	diags->count = 0;
	diags->capacity = 0;
}

void mp_diags_finish(struct mp_diags *diags)
{
	if (!diags) {
		return;
	}
	for (size_t i = 0; i < diags->count; i++) {
		free(diags->items[i].file);
		free(diags->items[i].message);
	}
	free(diags->items);
	mp_diags_init(diags);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int mp_diags_add(struct mp_diags *diags, const char *file, int line,
		 int column, int code, const char *fmt, ...)
{
	if (!diags) {
		return code;
	}
	if (diags->count == diags->capacity) {
		size_t cap = diags->capacity ? diags->capacity * 2 : 8;
		struct mp_diag *items = realloc(diags->items, cap * sizeof(*items));
		if (!items) {
			return MP_ENOMEM;
		}
		diags->items = items;
		diags->capacity = cap;
	}
	va_list ap;
	va_start(ap, fmt);
	va_list ap2;
	va_copy(ap2, ap);
	int len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *message = NULL;
	if (len >= 0) {
		message = malloc((size_t)len + 1);
		if (message) {
			vsnprintf(message, (size_t)len + 1, fmt, ap2);
		}
	}
	va_end(ap2);
	char *file_copy = dup_or_null(file);
	if (!message || (file && !file_copy)) {
		free(message);
		free(file_copy);
		return MP_ENOMEM;
	}
	diags->items[diags->count++] = (struct mp_diag){
		.file = file_copy,
		.line = line,
		.column = column,
		.code = code,
		.message = message,
	};
	return code;
}

void mp_diag_print(const struct mp_diag *diag, FILE *out)
{
	/* code 0: a warning (the call succeeded; diag.h) */
	const char *kind = diag->code == MP_OK ? "warning" : "error";
	if (diag->file && diag->line > 0 && diag->column > 0) {
		fprintf(out, "%s:%d:%d: %s: %s\n", diag->file, diag->line, diag->column, kind,
			diag->message);
	} else if (diag->file && diag->line > 0) {
		fprintf(out, "%s:%d: %s: %s\n", diag->file, diag->line, kind, diag->message);
	} else if (diag->file) {
		fprintf(out, "%s: %s: %s\n", diag->file, kind, diag->message);
	} else {
		fprintf(out, "moeplan: %s: %s\n", kind, diag->message);
	}
}
