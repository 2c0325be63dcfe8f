/* How far to trust a figure (trust.h): summaries of the published errors
 * in published-error.c (generated). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "published-error.h"

static const char *const kind_names[MP_TRUST_KIND_COUNT] = {
	"step time", "decode tokens/s per GPU", "tokens/s per user", "TPOT", "prefill tokens/s per GPU", "TTFT",
};

const char *mp_trust_kind_name(enum mp_trust_kind kind)
{
	return (unsigned)kind < MP_TRUST_KIND_COUNT ? kind_names[kind] : "?";
}

/* The median of the n (1..MP_PUBLISHED_MAX) absolute errors, the mean of
 * the two middle ones when n is even (an insertion sort into a). */
static double median_abs(const double *e, int n)
{
	double a[MP_PUBLISHED_MAX] = {0};
	if (n <= 0 || n > MP_PUBLISHED_MAX) {
		return 0.0;
	}
	for (int i = 0; i < n; i++) {
		double v = fabs(e[i]);
		int j = i;
		for (; j > 0 && a[j - 1] > v; j--) {
			a[j] = a[j - 1];
		}
		a[j] = v;
	}
	return n % 2 ? a[n / 2] : 0.5 * (a[n / 2 - 1] + a[n / 2]);
}

int mp_trust_summarise(const double *err, int n, struct mp_trust *out)
{
	memset(out, 0, sizeof(*out));
	if (!err || n <= 0 || n > MP_PUBLISHED_MAX) {
		return 0;
	}
	out->n = n;
	out->min = out->max = err[0];
	for (int i = 1; i < n; i++) {
		out->min = fmin(out->min, err[i]);
		out->max = fmax(out->max, err[i]);
	}
	out->median_abs = median_abs(err, n);
	return n;
}

int mp_trust_of(enum mp_trust_kind kind, struct mp_trust *out)
{
	if ((unsigned)kind >= MP_TRUST_KIND_COUNT) {
		memset(out, 0, sizeof(*out));
		return 0;
	}
	return mp_trust_summarise(mp_published_error[kind].err, mp_published_error[kind].n, out);
}

const char *mp_trust_short(enum mp_trust_kind kind, char *buf, size_t size)
{
	struct mp_trust t;
	if (size == 0) {
		return buf;
	}
	if (mp_trust_of(kind, &t) == 0) {
		snprintf(buf, size, "no published case");
	} else if (t.n == 1) {
		snprintf(buf, size, "%+.0f%%, n=1", 100 * t.min);
	} else {
		snprintf(buf, size, "%+.0f%%..%+.0f%%, median |err| %.0f%%, n=%d", 100 * t.min, 100 * t.max,
			 100 * t.median_abs, t.n);
	}
	return buf;
}

const char *mp_trust_text(enum mp_trust_kind kind, char *buf, size_t size)
{
	char s[96];
	struct mp_trust t;
	int n = mp_trust_of(kind, &t);
	mp_trust_short(kind, s, sizeof(s));
	if (size > 0) {
		snprintf(buf, size, "%s%s; see README \"Predicted vs published\"",
			 n == 0 ? "" : n == 1 ? "published case: " : "published cases: ", s);
	}
	return buf;
}

void mp_trust_put(struct mp_doc *map, const char *key, enum mp_trust_kind kind)
{
	struct mp_trust t;
	bool any = mp_trust_of(kind, &t) > 0;
	struct mp_doc *e = mp_doc_map();
	mp_doc_put_int(e, "n", t.n);
	mp_doc_put_real(e, "min", any ? t.min : (double)NAN); /* null without a case */
	mp_doc_put_real(e, "max", any ? t.max : (double)NAN);
	mp_doc_put_real(e, "median_abs", any ? t.median_abs : (double)NAN);
	mp_doc_put(map, key, e);
}

void mp_trust_put_phase(struct mp_doc *map, bool decode)
{
	struct mp_doc *e = mp_doc_map();
	mp_trust_put(e, "step_time_s", MP_TRUST_STEP_TIME);
	mp_trust_put(e, "tokens_per_s_per_gpu", decode ? MP_TRUST_DECODE_TPS_GPU : MP_TRUST_PREFILL_TPS_GPU);
	if (decode) {
		mp_trust_put(e, "tokens_per_s_per_user", MP_TRUST_TPS_USER);
		mp_trust_put(e, "tpot_s", MP_TRUST_TPOT);
	} else {
		mp_trust_put(e, "ttft_s", MP_TRUST_TTFT);
	}
	mp_doc_put(map, "error_vs_published", e);
}

void mp_trust_put_rates(struct mp_doc *map, bool per_user)
{
	struct mp_doc *e = mp_doc_map();
	mp_trust_put(e, "input_tokens_per_s_per_gpu", MP_TRUST_PREFILL_TPS_GPU);
	mp_trust_put(e, "output_tokens_per_s_per_gpu", MP_TRUST_DECODE_TPS_GPU);
	if (per_user) {
		mp_trust_put(e, "tokens_per_s_per_user", MP_TRUST_TPS_USER);
	}
	mp_doc_put(map, "error_vs_published", e);
}
