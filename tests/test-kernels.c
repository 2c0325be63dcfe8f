/* Tests of the kernel tables (kernels.h, mp_load_kernel_table): the lookup
 * worked by hand on tests/data/kernels/mini.csv, and one row of each
 * shipped table recomputed by hand from its published measurement. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli-run.h"

#include "moeplan/diag.h"
#include "moeplan/kernels.h"
#include "moeplan/loader.h"
#include "moeplan/step.h"

#define assert_near(a, b, tol) assert_near_at((a), (b), (tol), __FILE__, __LINE__)

static void assert_near_at(double a, double b, double tol, const char *file, int line)
{
	if (!(fabs(a - b) <= tol)) {
		print_error("%.17g != %.17g (tolerance %g)\n", a, b, tol);
		_fail(file, line);
	}
}

static void load(const char *rel, struct mp_kernel_table *t)
{
	struct mp_diags d;
	mp_diags_init(&d);
	int rc = mp_load_kernel_table(src_path(rel), t, &d);
	for (size_t i = 0; i < d.count; i++)
		mp_diag_print(&d.items[i], stderr);
	mp_diags_finish(&d);
	assert_int_equal(rc, 0);
}

/* mini.csv: (M, K) -> efficiency: (64, 1024) 0.4 and 0.2 (mean 0.3),
 * (64, 4096) 0.6, (256, 1024) 0.5, (256, 4096) 0.8. */
static void kernels__lookup_by_hand(void **state)
{
	(void)state;
	struct mp_kernel_table t = {0};
	load("tests/data/kernels/mini.csv", &t);
	assert_int_equal(t.n_rows, 5);
	double e;
	bool cl = true;
	/* A measured point: the mean of its two rows, (0.4 + 0.2) / 2. */
	assert_int_equal(mp_kernel_lookup(&t, MP_KERNEL_GEMM_DENSE, 64, 1024, &e, &cl), 0);
	assert_near(e, 0.3, 1e-12);
	assert_false(cl);
	/* M = 128, K = 2048: halfway in log M (log 2 / log 4) and in log K.
	 * At M = 64: 0.3 + 0.5 (0.6 - 0.3) = 0.45; at M = 256: 0.5 + 0.5 (0.8 -
	 * 0.5) = 0.65; between: 0.45 + 0.5 (0.65 - 0.45) = 0.55. */
	assert_int_equal(mp_kernel_lookup(&t, MP_KERNEL_GEMM_DENSE, 128, 2048, &e, &cl), 0);
	assert_near(e, 0.55, 1e-12);
	assert_false(cl);
	/* M = 64 x 2^(1/2) (a quarter of the way in log M), K = 4096:
	 * 0.6 + 0.25 (0.8 - 0.6) = 0.65. */
	assert_int_equal(mp_kernel_lookup(&t, MP_KERNEL_GEMM_DENSE, 64 * sqrt(2.0), 4096, &e, &cl), 0);
	assert_near(e, 0.65, 1e-12);
	/* Outside the measured range: clamped to the nearest corner and said. */
	assert_int_equal(mp_kernel_lookup(&t, MP_KERNEL_GEMM_DENSE, 8, 2048, &e, &cl), 0);
	assert_near(e, 0.45, 1e-12);
	assert_true(cl);
	assert_int_equal(mp_kernel_lookup(&t, MP_KERNEL_GEMM_DENSE, 4096, 65536, &e, &cl), 0);
	assert_near(e, 0.8, 1e-12);
	assert_true(cl);
	/* No row of that kind: the caller falls back to the scalar factors. */
	assert_int_equal(mp_kernel_lookup(&t, MP_KERNEL_MOE_BLOCK, 4, 16, &e, &cl), MP_ENOFIT);
	assert_int_equal(mp_kernel_lookup(&t, MP_KERNEL_GEMM_DENSE, 0, 16, &e, &cl), MP_EINVAL);
	mp_kernel_table_finish(&t);
}

static const struct mp_kernel_row *find(const struct mp_kernel_table *t, enum mp_kernel_kind kind,
					double m, double k, double experts, double context)
{
	for (size_t i = 0; i < t->n_rows; i++) {
		const struct mp_kernel_row *r = &t->rows[i];
		if (r->kind == kind && r->m == m && r->k == k && r->experts == experts &&
		    r->context == context)
			return r;
	}
	fail_msg("no row");
	return NULL;
}

/* The shipped rows, recomputed from the sources by hand. */
static void kernels__shipped_rows(void **state)
{
	(void)state;
	struct mp_kernel_table t = {0};
	load("hardware/kernels/h800.csv", &t);
	assert_int_equal(t.n_rows, 28); /* DeepGEMM@327ec92f README: 18 dense + 4 contiguous + 6 masked */
	/* DeepGEMM README: dense M 64, N 2112, K 7168, 206 TFLOPS, 1687 GB/s.
	 * Time = 2 x 64 x 2112 x 7168 / 206e12 = 9.41 us. Bytes (DeepGEMM's
	 * count) 64 x 7168 + 7168 x 2112 + 2 x 64 x 2112 = 15,867,904, at
	 * 3.35e12 B/s 4.737 us; FLOP 1.9378e9 at 1978.9e12 0.979 us; the
	 * memory roof binds: efficiency 4.737 / 9.41 = 0.503 (the README's
	 * 1687 GB/s / 3350 GB/s = 0.504). */
	const struct mp_kernel_row *r = find(&t, MP_KERNEL_GEMM_DENSE, 64, 7168, 0, 0);
	assert_near(r->measured_s, 9.41e-6, 0.01e-6);
	assert_near(r->efficiency, 15867904.0 / 3.35e12 / 9.41e-6, 0.002);
	/* Masked, 4 groups of M 256, N 7168, K 2048: 815 TFLOPS:
	 * 2 x 4 x 256 x 7168 x 2048 / 815e12 = 36.89 us. */
	r = find(&t, MP_KERNEL_GEMM_MASKED, 256, 2048, 0, 0);
	assert_near(r->measured_s, 36.89e-6, 0.01e-6);
	mp_kernel_table_finish(&t);

	/* aiconfigurator@095f58a5 h100_sxm MoE, EP 4 (64 local experts), 1
	 * token per GPU: 180.57 us. Touched: 64 (1 - (31/32)^4) = 64 x 0.119263 = 7.6328
	 * experts x 3 x 7168 x 2048 B = 336.15e6 B, at 3.35e12 B/s 100.34 us
	 * (the FLOP, 8 x 2 x 44.04e6, take 0.36 us): 100.34 / 180.57 = 0.556. */
	load("hardware/kernels/h100.csv", &t);
	r = find(&t, MP_KERNEL_MOE_BLOCK, 1, 7168, 64, 0); /* k, n: the expert shape measured */
	assert_near(r->n, 2048, 0);
	assert_near(r->measured_s, 180.57e-6, 0.01e-6);
	assert_near(r->efficiency, 7.6328 * 3 * 7168 * 2048 / 3.35e12 / 180.57e-6, 0.003);
	/* The shape rule: DeepSeek-V3's experts match, Mixtral's (4096 x
	 * 14336) do not, and a table without moe_block rows matches nothing. */
	assert_true(mp_kernel_shape_matches(&t, MP_KERNEL_MOE_BLOCK, 7168, 2048));
	assert_false(mp_kernel_shape_matches(&t, MP_KERNEL_MOE_BLOCK, 4096, 14336));
	assert_false(mp_kernel_shape_matches(&t, MP_KERNEL_GEMM_DENSE, 7168, 2048));
	mp_kernel_table_finish(&t);
}

static void bad(const char *rel, const char *want)
{
	struct mp_kernel_table t = {0};
	struct mp_diags d;
	mp_diags_init(&d);
	assert_int_equal(mp_load_kernel_table(src_path(rel), &t, &d), MP_EINVAL);
	assert_true(d.count >= 1);
	if (!strstr(d.items[0].message, want))
		fail_msg("message '%s' lacks '%s'", d.items[0].message, want);
	assert_int_equal(d.items[0].line, 3); /* the row after the source and header lines */
	assert_null(t.rows);
	mp_diags_finish(&d);
}

static void kernels__bad_rows(void **state)
{
	(void)state;
	bad("tests/data/kernels/bad-negative.csv", "column k: expected a number > 0 or nothing, got '-3'");
	bad("tests/data/kernels/bad-efficiency.csv", "column efficiency: expected roofline_us / measured_us");
	/* a new user's findings: a twelfth cell, a source no '# source' line
	 * declares, a hexadecimal size and a moe_block row without its
	 * experts axis were all taken */
	bad("tests/data/kernels/bad-cells.csv", "expected 11 columns");
	bad("tests/data/kernels/bad-source.csv", "column source: expected the key of a '# source KEY: ...' line, got 'nobody'");
	bad("tests/data/kernels/bad-hex.csv", "column m: expected a number > 0 or nothing, got '0x40'");
	bad("tests/data/kernels/bad-axes.csv", "moe_block: give experts and m");
	bad("tests/data/kernels/bad-whole.csv", "column experts: expected a whole number of at most 1e9, got 6.5");
	bad("tests/data/kernels/bad-extra.csv", "moe_block: leave groups and context empty");
}

/* A step priced with a table (step.h, in->kernels): the routed term is its
 * roofline at the datasheet peaks (the no-table step with every factor 1)
 * divided by the table's efficiency; with one moe_block row of efficiency
 * 0.5 at (32 local experts, 64 tokens per GPU), at exactly that point (EP
 * 8 of 256 experts, 64 requests x 1 token) it is twice the peak roofline
 * and not clamped; the dense term, which the table lacks, keeps the
 * factors, and says so. */
static void kernels__step_routed_from_table(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_diags d;
	mp_model_init(&m);
	mp_hardware_init(&hw);
	mp_diags_init(&d);
	assert_int_equal(mp_load_model(src_path("plans/models/deepseek-v3.yaml"), &m, &d), 0);
	assert_int_equal(mp_load_hardware(src_path("hardware/hgx-h800.yaml"), &hw, &d), 0);
	mp_diags_finish(&d);
	struct mp_kernel_table t = {0};
	load("tests/data/kernels/moe-one.csv", &t);
	struct mp_step_input in;
	mp_step_input_init(&in);
	in.width = (struct mp_ep_width){.ep = 8, .slots = 256, .drafter_slots = 256};
	in.requests = 64;
	in.context_tokens = 1024;
	/* hgx-h800.yaml names its own table: the scalar factors are asked for */
	in.scalar_factors = true;
	struct mp_step plain, peak, tab;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &plain), 0);
	/* The peak roofline: every factor 1 and no fixed part. */
	struct mp_efficiency one = plain.efficiency;
	one.hbm = 1.0;
	one.gemm = 1.0;
	one.kernel_fixed_s = one.moe_fixed_s = one.moe_fixed_per_expert_s = 0.0;
	in.efficiency = &one;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &peak), 0);
	in.efficiency = NULL;
	in.kernels = &t;
	assert_int_equal(mp_step_evaluate(&m, &hw, &in, &tab), 0);
	assert_true(tab.kernel_table);
	assert_true(tab.from_table[MP_TERM_ROUTED]);
	assert_false(tab.table_clamped[MP_TERM_ROUTED]);
	/* The table's moe_block rows hold the fixed part as measured: with the
	 * default moe_fixed (22 us + 1.5 us per local expert) in force, none
	 * is added to the table's time. */
	assert_near(tab.terms[MP_TERM_ROUTED].time_s / peak.terms[MP_TERM_ROUTED].time_s, 2.0, 1e-12);
	assert_near(tab.terms[MP_TERM_ROUTED].fixed_s, 0.0, 0.0);
	/* Without the table it is added: 58 MoE layers x (22 + 1.5 x 32
	 * local experts) us = 58 x 70 us = 4.06 ms. */
	assert_near(plain.terms[MP_TERM_ROUTED].fixed_s, 4.06e-3, 1e-12);
	assert_false(tab.from_table[MP_TERM_DENSE]);
	assert_near(tab.terms[MP_TERM_DENSE].time_s, plain.terms[MP_TERM_DENSE].time_s, 0.0);
	assert_false(plain.kernel_table);
	mp_kernel_table_finish(&t);
	mp_model_finish(&m);
	mp_hardware_finish(&hw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(kernels__lookup_by_hand),
		cmocka_unit_test(kernels__shipped_rows),
		cmocka_unit_test(kernels__bad_rows),
		cmocka_unit_test(kernels__step_routed_from_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
