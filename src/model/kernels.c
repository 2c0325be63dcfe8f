/* Kernel tables: the lookup (kernels.h). Interpolation linear in the
 * logarithms of both axes, clamped at the measured ends; the same
 * algorithm as tests/bench/kernel-holdout.py, which reports its held-out
 * error on the shipped tables. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/diag.h"
#include "moeplan/kernels.h"

static const char *const kind_names[MP_KERNEL_KIND_COUNT] = {
	"gemm_dense", "gemm_masked", "gemm_contiguous", "moe_block", "mla_decode",
};

const char *mp_kernel_kind_name(enum mp_kernel_kind kind)
{
	return (unsigned)kind < MP_KERNEL_KIND_COUNT ? kind_names[kind] : "?";
}

int mp_kernel_kind_parse(const char *name, enum mp_kernel_kind *out)
{
	for (int i = 0; i < MP_KERNEL_KIND_COUNT; i++) {
		if (strcmp(name, kind_names[i]) == 0) {
			*out = (enum mp_kernel_kind)i;
			return 0;
		}
	}
	return MP_EINVAL;
}

void mp_kernel_row_axes(const struct mp_kernel_row *row, double *primary, double *secondary)
{
	switch (row->kind) {
	case MP_KERNEL_MOE_BLOCK:
		*primary = row->experts;
		*secondary = row->m;
		break;
	case MP_KERNEL_MLA_DECODE:
		*primary = row->m;
		*secondary = row->context;
		break;
	default:
		*primary = row->m;
		*secondary = row->k;
		break;
	}
}

/* The measured values of one axis that bracket x: *lo <= x <= *hi, or both
 * the nearest end (clamped). sel_primary < 0: the primary axis of every row
 * of kind; else the secondary axis of rows whose primary equals it. */
struct bracket {
	double lo, hi;
	bool clamped;
	bool any;
};

static void bracket_axis(const struct mp_kernel_table *t, enum mp_kernel_kind kind,
			 double sel_primary, double x, struct bracket *b)
{
	double below = -(double)INFINITY, above = (double)INFINITY;
	double mn = (double)INFINITY, mx = -(double)INFINITY;
	b->any = false;
	for (size_t i = 0; i < t->n_rows; i++) {
		const struct mp_kernel_row *r = &t->rows[i];
		double p, s;
		if (r->kind != kind)
			continue;
		mp_kernel_row_axes(r, &p, &s);
		if (sel_primary >= 0 && p != sel_primary)
			continue;
		double v = sel_primary >= 0 ? s : p;
		b->any = true;
		mn = fmin(mn, v);
		mx = fmax(mx, v);
		if (v <= x && v > below)
			below = v;
		if (v >= x && v < above)
			above = v;
	}
	b->clamped = b->any && (x < mn || x > mx);
	b->lo = x < mn ? mn : (x > mx ? mx : below);
	b->hi = x < mn ? mn : (x > mx ? mx : above);
}

/* Mean efficiency of the rows of kind at (p, s). */
static double mean_at(const struct mp_kernel_table *t, enum mp_kernel_kind kind, double p, double s)
{
	double sum = 0;
	size_t n = 0;
	for (size_t i = 0; i < t->n_rows; i++) {
		double rp, rs;
		if (t->rows[i].kind != kind)
			continue;
		mp_kernel_row_axes(&t->rows[i], &rp, &rs);
		if (rp == p && rs == s) {
			sum += t->rows[i].efficiency;
			n++;
		}
	}
	return n ? sum / (double)n : 0;
}

static double log_weight(double lo, double hi, double x)
{
	return hi > lo ? (log(x) - log(lo)) / (log(hi) - log(lo)) : 0;
}

/* Interpolated along the secondary axis at one measured primary value. */
static double at_primary(const struct mp_kernel_table *t, enum mp_kernel_kind kind, double p,
			 double s, bool *clamped)
{
	struct bracket b;
	bracket_axis(t, kind, p, s, &b);
	*clamped = *clamped || b.clamped;
	double a = mean_at(t, kind, p, b.lo), c = mean_at(t, kind, p, b.hi);
	return a + log_weight(b.lo, b.hi, s) * (c - a);
}

int mp_kernel_lookup(const struct mp_kernel_table *table, enum mp_kernel_kind kind, double primary,
		     double secondary, double *efficiency, bool *clamped)
{
	if (!(primary > 0) || !(secondary > 0) || !isfinite(primary) || !isfinite(secondary))
		return MP_EINVAL;
	if (!table)
		return MP_ENOFIT;
	struct bracket b;
	bracket_axis(table, kind, -1, primary, &b);
	if (!b.any)
		return MP_ENOFIT;
	bool cl = b.clamped;
	double lo = at_primary(table, kind, b.lo, secondary, &cl);
	double hi = at_primary(table, kind, b.hi, secondary, &cl);
	*efficiency = lo + log_weight(b.lo, b.hi, primary) * (hi - lo);
	if (clamped)
		*clamped = cl;
	return 0;
}

bool mp_kernel_shape_matches(const struct mp_kernel_table *table, enum mp_kernel_kind kind,
			     double hidden, double intermediate)
{
	bool any = false;
	for (size_t i = 0; table && i < table->n_rows; i++) {
		const struct mp_kernel_row *r = &table->rows[i];
		if (r->kind != kind) {
			continue;
		}
		if ((r->k > 0.0 && r->k != hidden) || (r->n > 0.0 && r->n != intermediate)) {
			return false;
		}
		any = true;
	}
	return any;
}

void mp_kernel_table_finish(struct mp_kernel_table *table)
{
	if (!table)
		return;
	free(table->rows);
	table->rows = NULL;
	table->n_rows = 0;
}
