/* Tests of the measured-error summaries (trust.h): fixture tables worked
 * by hand, and the compiled-in classes' shape. The compiled-in values
 * against README's rows: tests/published-error.py. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "moeplan/trust.h"

#define assert_near(a, b) assert_true(fabs((a) - (b)) < 1e-12)

/* Five cases: -34%, +92%, +10%, -5%, +35%. |err| sorted: 0.05, 0.10,
 * 0.34, 0.35, 0.92; the middle (third) one is 0.34. */
static void trust__odd_fixture(void **state)
{
	(void)state;
	const double e[] = {-0.34, 0.92, 0.10, -0.05, 0.35};
	struct mp_trust t;
	assert_int_equal(mp_trust_summarise(e, 5, &t), 5);
	assert_int_equal(t.n, 5);
	assert_near(t.min, -0.34);
	assert_near(t.max, 0.92);
	assert_near(t.median_abs, 0.34);
}

/* Four cases: +10%, -30%, +20%, -50%. |err| sorted: 0.1, 0.2, 0.3, 0.5;
 * the median is (0.2 + 0.3) / 2 = 0.25. */
static void trust__even_fixture(void **state)
{
	(void)state;
	const double e[] = {0.10, -0.30, 0.20, -0.50};
	struct mp_trust t;
	assert_int_equal(mp_trust_summarise(e, 4, &t), 4);
	assert_near(t.min, -0.50);
	assert_near(t.max, 0.20);
	assert_near(t.median_abs, 0.25);
}

/* One case: its error is min, max and median. No case, or too many: 0. */
static void trust__edges(void **state)
{
	(void)state;
	const double one[] = {-0.415};
	struct mp_trust t;
	assert_int_equal(mp_trust_summarise(one, 1, &t), 1);
	assert_near(t.min, -0.415);
	assert_near(t.max, -0.415);
	assert_near(t.median_abs, 0.415);
	assert_int_equal(mp_trust_summarise(one, 0, &t), 0);
	assert_int_equal(t.n, 0);
	assert_int_equal(mp_trust_summarise(NULL, 3, &t), 0);
	double many[33] = {0};
	assert_int_equal(mp_trust_summarise(many, 33, &t), 0);
	assert_int_equal(mp_trust_of(MP_TRUST_KIND_COUNT, &t), 0);
	assert_string_equal(mp_trust_kind_name(MP_TRUST_KIND_COUNT), "?");
}

/* Every class's text names the README table; a class without a case
 * says so rather than printing an interval. */
static void trust__text(void **state)
{
	(void)state;
	for (int k = 0; k < MP_TRUST_KIND_COUNT; k++) {
		char buf[160];
		struct mp_trust t;
		int n = mp_trust_of((enum mp_trust_kind)k, &t);
		mp_trust_text((enum mp_trust_kind)k, buf, sizeof(buf));
		assert_non_null(strstr(buf, "see README \"Predicted vs published\""));
		if (n == 0) {
			assert_non_null(strstr(buf, "no published case"));
		} else {
			assert_null(strstr(buf, "no published case"));
			assert_true(t.min <= t.max);
			assert_true(t.median_abs <= fmax(fabs(t.min), fabs(t.max)) + 1e-12);
		}
	}
	char tiny[8];
	mp_trust_text(MP_TRUST_STEP_TIME, tiny, sizeof(tiny));
	assert_int_equal(strlen(tiny), 7); /* truncated, terminated */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(trust__odd_fixture),
		cmocka_unit_test(trust__even_fixture),
		cmocka_unit_test(trust__edges),
		cmocka_unit_test(trust__text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
