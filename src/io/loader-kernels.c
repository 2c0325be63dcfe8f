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

struct kt {
	const char *path;
	struct mp_diags *diags;
	int status;
};

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
		}
		if (c < KT_COLUMNS - 1 && e >= stop) {
			kt_error(kt, line, (int)(e - s) + 1, "expected 11 columns", s, (size_t)(stop - s));
			return false;
		}
		cell = e + 1;
	}
	if (r->efficiency > 1.5 || fabs(r->efficiency * r->measured_s / r->roofline_s - 1) > 0.01) {
		mp_diags_add(kt->diags, kt->path, line, 0, MP_EINVAL,
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
	struct kt kt = {path, diags, 0};
	struct mp_kernel_table t = {NULL, 0};
	rc = kt_parse(&kt, text.data, text.data + text.size, &t);
	ld_text_finish(&text);
	if (rc) {
		mp_kernel_table_finish(&t);
		return rc;
	}
	*out = t;
	return 0;
}
