/* Kernel tables (kernels.h), CSV: see mp_load_kernel_table in loader.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loader-internal.h"
#include "moeplan/kernels.h"
#include "moeplan/loader.h"

#define KT_HEADER "kernel,m,k,n,groups,experts,context,measured_us,roofline_us,efficiency,source"
#define KT_COLUMNS 11

static const char *const kt_column[KT_COLUMNS] = {
	"kernel", "m", "k", "n", "groups", "experts", "context",
	"measured_us", "roofline_us", "efficiency", "source",
};

#define KT_MAX_SOURCES 16

struct kt {
	const char *path;
	struct mp_diags *diags;
	int status;
	char sources[KT_MAX_SOURCES][32]; /* keys of the "# source KEY: ..." lines */
	int n_sources;
};

/* Collect the keys of "# source KEY: ..." lines (any place in the file). */
static void kt_sources(struct kt *kt, const char *s, const char *end)
{
	static const char tag[] = "# source ";
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *stop = nl ? nl : end;
		size_t n = strlen(tag);
		if ((size_t)(stop - s) > n && memcmp(s, tag, n) == 0 && kt->n_sources < KT_MAX_SOURCES) {
			const char *k = s + n, *colon = memchr(k, ':', (size_t)(stop - k));
			if (colon && colon > k && (size_t)(colon - k) < sizeof kt->sources[0]) {
				memcpy(kt->sources[kt->n_sources], k, (size_t)(colon - k));
				kt->sources[kt->n_sources++][colon - k] = 0;
			}
		}
		s = nl ? nl + 1 : end;
	}
}

static bool kt_source_known(const struct kt *kt, const char *cell, size_t len)
{
	for (int i = 0; i < kt->n_sources; i++) {
		if (strlen(kt->sources[i]) == len && memcmp(kt->sources[i], cell, len) == 0)
			return true;
	}
	return false;
}

static void kt_error(struct kt *kt, int line, int col, const char *msg, const char *cell, size_t len)
{
	mp_diags_add(kt->diags, kt->path, line, col, MP_EINVAL, "%s, got '%.*s'", msg, (int)len, cell);
	kt->status = MP_EINVAL;
}

/* A number cell: empty gives 0 when empty_ok; else finite and > 0. */
static bool kt_number(struct kt *kt, const char *cell, size_t len, int line, int col, int c,
		      bool empty_ok, double *out)
{
	char buf[64], msg[128];
	*out = 0;
	if (len == 0 && empty_ok)
		return true;
	snprintf(msg, sizeof msg, "column %s: expected a number > 0%s", kt_column[c],
		 empty_ok ? " or nothing" : "");
	if (len == 0 || len >= sizeof buf) {
		kt_error(kt, line, col, msg, cell, len);
		return false;
	}
	memcpy(buf, cell, len);
	buf[len] = 0;
	/* plain decimal only (strtod would take " 8", "0x8", "inf") */
	if (strspn(buf, "0123456789.eE+-") != len) {
		kt_error(kt, line, col, msg, cell, len);
		return false;
	}
	char *end;
	errno = 0;
	double v = strtod(buf, &end);
	if (*end || errno || !isfinite(v) || !(v > 0)) {
		kt_error(kt, line, col, msg, cell, len);
		return false;
	}
	*out = v;
	return true;
}

static void kt_store(struct mp_kernel_row *r, int c, double v)
{
	double *slot[] = {NULL, &r->m, &r->k, &r->n, &r->groups, &r->experts, &r->context,
			  &r->measured_s, &r->roofline_s, &r->efficiency};
	*slot[c] = c == 7 || c == 8 ? v * 1e-6 : v;
}

/* The 1-based column (in characters) where cell c of [s, stop) starts. */
static int kt_col_of(const char *s, const char *stop, int c)
{
	const char *q = s;
	for (int i = 0; i < c && q < stop; q++)
		i += *q == ',';
	return (int)(q - s) + 1;
}

/* The lookup axes of the row's kind are given (kernels.h): GEMMs m and k,
 * moe_block experts and m, mla_decode m and context. */
static bool kt_axes_ok(struct kt *kt, const struct mp_kernel_row *r, int line)
{
	const char *need = NULL;
	switch (r->kind) {
	case MP_KERNEL_GEMM_DENSE:
	case MP_KERNEL_GEMM_MASKED:
	case MP_KERNEL_GEMM_CONTIGUOUS:
		need = r->m > 0 && r->k > 0 ? NULL : "m and k (a GEMM's lookup axes)";
		break;
	case MP_KERNEL_MOE_BLOCK:
		need = r->experts > 0 && r->m > 0 ? NULL : "experts and m (moe_block's lookup axes)";
		break;
	case MP_KERNEL_MLA_DECODE:
		need = r->m > 0 && r->context > 0 ? NULL : "m and context (mla_decode's lookup axes)";
		break;
	case MP_KERNEL_KIND_COUNT:
		break;
	}
	if (need) {
		mp_diags_add(kt->diags, kt->path, line, 1, MP_EINVAL, "%s: give %s", mp_kernel_kind_name(r->kind),
			     need);
		kt->status = MP_EINVAL;
		return false;
	}
	/* sizes that do not apply are left empty (moeplan-formats(5)), and
	 * every size is a whole number */
	bool gemm = r->kind != MP_KERNEL_MOE_BLOCK && r->kind != MP_KERNEL_MLA_DECODE;
	const char *extra = gemm && (r->experts > 0 || r->context > 0)		? "experts and context"
			    : r->kind == MP_KERNEL_MOE_BLOCK && (r->groups > 0 || r->context > 0) ? "groups and context"
			    : r->kind == MP_KERNEL_MLA_DECODE && (r->k > 0 || r->n > 0 || r->groups > 0 || r->experts > 0)
				    ? "k, n, groups and experts"
				    : NULL;
	if (extra) {
		mp_diags_add(kt->diags, kt->path, line, 1, MP_EINVAL, "%s: leave %s empty (they do not apply)",
			     mp_kernel_kind_name(r->kind), extra);
		kt->status = MP_EINVAL;
		return false;
	}
	const double sizes[] = {r->m, r->k, r->n, r->groups, r->experts, r->context};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (sizes[i] != floor(sizes[i]) || sizes[i] > 1e9) {
			mp_diags_add(kt->diags, kt->path, line, 1, MP_EINVAL,
				     "column %s: expected a whole number of at most 1e9, got %g", kt_column[i + 1],
				     sizes[i]);
			kt->status = MP_EINVAL;
			return false;
		}
	}
	return true;
}

/* One data row [s, stop). Returns false after reporting. */
static bool kt_row(struct kt *kt, const char *s, const char *stop, int line, struct mp_kernel_row *r)
{
	const char *cell = s;
	memset(r, 0, sizeof *r);
	for (int c = 0; c < KT_COLUMNS; c++) {
		const char *e = cell;
		while (e < stop && *e != ',')
			e++;
		int col = (int)(cell - s) + 1;
		size_t len = (size_t)(e - cell);
		if (c == 0) {
			char name[32];
			if (len >= sizeof name || (memcpy(name, cell, len), name[len] = 0,
						   mp_kernel_kind_parse(name, &r->kind) != 0)) {
				kt_error(kt, line, col, "column kernel: expected gemm_dense, gemm_masked, "
					 "gemm_contiguous, moe_block or mla_decode", cell, len);
				return false;
			}
		} else if (c < KT_COLUMNS - 1) {
			double v;
			if (!kt_number(kt, cell, len, line, col, c, c <= 6, &v))
				return false;
			kt_store(r, c, v);
		} else if (!kt_source_known(kt, cell, len)) {
			kt_error(kt, line, col, "column source: expected the key of a '# source KEY: ...' line",
				 cell, len);
			return false;
		}
		if (c < KT_COLUMNS - 1 && e >= stop) {
			kt_error(kt, line, (int)(e - s) + 1, "expected 11 columns", s, (size_t)(stop - s));
			return false;
		}
		cell = e + 1;
	}
	if (cell <= stop) {
		kt_error(kt, line, (int)(cell - s), "expected 11 columns", s, (size_t)(stop - s));
		return false;
	}
	if (!kt_axes_ok(kt, r, line))
		return false;
	if (r->efficiency > 1.5 || fabs(r->efficiency * r->measured_s / r->roofline_s - 1) > 0.01) {
		mp_diags_add(kt->diags, kt->path, line, kt_col_of(s, stop, 9), MP_EINVAL,
			     "column efficiency: expected roofline_us / measured_us (within 1%%, at most 1.5), "
			     "got %g for %g / %g", r->efficiency, r->roofline_s * 1e6, r->measured_s * 1e6);
		kt->status = MP_EINVAL;
		return false;
	}
	return true;
}

static int kt_parse(struct kt *kt, const char *s, const char *end, struct mp_kernel_table *out)
{
	size_t cap = 0;
	bool header = false;
	for (int line = 1; s < end; line++) {
		const char *stop = memchr(s, '\n', (size_t)(end - s));
		const char *next = stop ? stop + 1 : end;
		if (!stop)
			stop = end;
		if (stop > s && stop[-1] == '\r')
			stop--;
		if (stop == s || *s == '#') {
			s = next;
			continue;
		}
		if (!header) {
			if ((size_t)(stop - s) != strlen(KT_HEADER) || memcmp(s, KT_HEADER, strlen(KT_HEADER)))
				kt_error(kt, line, 1, "expected the header line " KT_HEADER, s, (size_t)(stop - s));
			header = true;
		} else if (kt->status == 0 || kt->diags->count < LD_MAX_ERRORS) {
			struct mp_kernel_row r;
			if (kt_row(kt, s, stop, line, &r)) {
				if (out->n_rows == cap) {
					cap = cap ? 2 * cap : 64;
					struct mp_kernel_row *nr = realloc(out->rows, cap * sizeof *nr);
					if (!nr)
						return MP_ENOMEM;
					out->rows = nr;
				}
				out->rows[out->n_rows++] = r;
			}
		}
		s = next;
	}
	if (kt->status == 0 && out->n_rows == 0)
		kt->status = mp_diags_add(kt->diags, kt->path, 0, 0, MP_EINVAL,
					  "a kernel table needs the header line and at least one row");
	return kt->status;
}

int mp_load_kernel_table(const char *path, struct mp_kernel_table *out, struct mp_diags *diags)
{
	struct ld_text text = {NULL, 0};
	int rc = ld_read_text(path, &text, diags);
	if (rc)
		return rc;
	struct kt kt = {.path = path, .diags = diags};
	const char *data = text.data;
	if (text.size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
		data += 3; /* a UTF-8 byte-order mark */
	kt_sources(&kt, data, text.data + text.size);
	struct mp_kernel_table t = {NULL, 0};
	rc = kt_parse(&kt, data, text.data + text.size, &t);
	ld_text_finish(&text);
	if (rc) {
		mp_kernel_table_finish(&t);
		return rc;
	}
	*out = t;
	return 0;
}
