/* The published errors (generated into published-error.c by
 * tests/bench/predicted-vs-published.py --write; trust.h). Internal. */
#ifndef MOEPLAN_PUBLISHED_ERROR_H
#define MOEPLAN_PUBLISHED_ERROR_H

#include "moeplan/trust.h"

/* At most this many cases per class (the generator refuses more). */
#define MP_PUBLISHED_MAX 32

/* One class: n signed errors (predicted / published - 1, fractions). */
struct mp_published_set {
	int n;
	const double *err;
};

/* Indexed by enum mp_trust_kind. */
extern const struct mp_published_set mp_published_error[MP_TRUST_KIND_COUNT];

#endif
