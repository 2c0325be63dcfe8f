/* moeplan: a history of load windows (moeplan/history.h) as data, and the
 * objectives that reduce it to one load vector. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/diag.h"
#include "moeplan/history.h"

void mp_history_init(struct mp_history *h)
{
	assert(h);
	*h = (struct mp_history){ 0 };
}

void mp_history_finish(struct mp_history *h)
{
	if (!h) {
		return;
	}
	for (uint32_t t = 0; t < h->n_windows; t++) {
		mp_loads_finish(&h->windows[t]);
	}
	free(h->windows);
	*h = (struct mp_history){ 0 };
}

/* Both without layer ids, or both naming the same layers. */
static bool same_ids(const uint32_t *a, const uint32_t *b, uint32_t n)
{
	if (!a || !b) {
		return a == b;
	}
	return memcmp(a, b, n * sizeof(*a)) == 0;
}

int mp_history_push(struct mp_history *h, struct mp_loads *w)
{
	assert(h && w);
	if (h->n_windows >= MP_MAX_WINDOWS || w->n_layers == 0 || w->n_experts == 0 ||
	    (h->n_windows > 0 && (w->n_layers != h->windows[0].n_layers ||
				  w->n_experts != h->windows[0].n_experts ||
				  !same_ids(w->layer_ids, h->windows[0].layer_ids, w->n_layers)))) {
		return MP_EINVAL;
	}
	struct mp_loads *v = realloc(h->windows, (h->n_windows + 1u) * sizeof(*v));
	if (!v) {
		return MP_ENOMEM;
	}
	h->windows = v;
	v[h->n_windows++] = *w;
	mp_loads_init(w);
	return 0;
}

/* LAST, MEAN, RECENCY and SPREAD reduce the history to one load vector per
 * layer that the ordinary solver (mp_place) plans on. Each window's row is
 * first scaled to the last window's total for that layer, so a window with
 * more tokens does not outweigh the others: the vectors are shares of the
 * layer's load, in the last window's unit. */
static const char *const objective_names[] = {"last", "mean", "recency", "spread", "worst"};

void mp_objective_options_init(struct mp_objective_options *o)
{
	assert(o);
	*o = (struct mp_objective_options){.kind = MP_OBJECTIVE_DEFAULT, .half_life = 2.0, .k = 1.0};
}

int mp_objective_parse(const char *name, enum mp_objective *out)
{
	for (size_t i = 0; name && i < sizeof(objective_names) / sizeof(objective_names[0]); i++) {
		if (strcmp(name, objective_names[i]) == 0) {
			*out = (enum mp_objective)i;
			return 0;
		}
	}
	return MP_EINVAL;
}

const char *mp_objective_name(enum mp_objective kind)
{
	size_t i = (size_t)kind;
	return i < sizeof(objective_names) / sizeof(objective_names[0]) ? objective_names[i] : "?";
}

static double row_sum(const double *w, uint32_t n)
{
	double s = 0.0;
	for (uint32_t e = 0; e < n; e++) {
		s += w[e];
	}
	return s;
}

/* Weight of window t (0-based) of n under objective o. */
static double window_weight(const struct mp_objective_options *o, uint32_t t, uint32_t n)
{
	if (o->kind == MP_OBJECTIVE_RECENCY) {
		return exp2(-(double)(n - 1u - t) / o->half_life);
	}
	return 1.0;
}

/* One layer: out[e] = the weighted mean over windows of w_t[e] * total_T /
 * total_t (plus k * stddev for SPREAD). */
static void reduce_layer(const struct mp_history *h, const struct mp_objective_options *o,
			 uint32_t l, double *out)
{
	const uint32_t n = h->windows[0].n_experts;
	const double *last = mp_loads_row(&h->windows[h->n_windows - 1u], l);
	const double last_total = row_sum(last, n);
	const double total = last_total > 0.0 ? last_total : 1.0; /* an idle last window: shares */
	double wsum = 0.0;
	memset(out, 0, n * sizeof(*out));
	for (uint32_t t = 0; t < h->n_windows; t++) {
		const double *w = mp_loads_row(&h->windows[t], l);
		const double s = row_sum(w, n);
		if (s > 0.0) {
			const double a = window_weight(o, t, h->n_windows);
			wsum += a;
			for (uint32_t e = 0; e < n; e++) {
				out[e] += a * w[e] * (total / s);
			}
		}
	}
	if (wsum == 0.0) {
		return; /* every window's row is 0: so is the mean */
	}
	for (uint32_t e = 0; e < n; e++) {
		out[e] /= wsum;
	}
	if (o->kind != MP_OBJECTIVE_SPREAD || o->k == 0.0) {
		return;
	}
	for (uint32_t e = 0; e < n; e++) {
		double var = 0.0;
		for (uint32_t t = 0; t < h->n_windows; t++) {
			const double *w = mp_loads_row(&h->windows[t], l);
			const double s = row_sum(w, n);
			if (s > 0.0) {
				const double d = w[e] * (total / s) - out[e];
				var += d * d;
			}
		}
		out[e] += o->k * sqrt(var / wsum);
	}
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int mp_history_loads(const struct mp_history *h, const struct mp_objective_options *o,
		     struct mp_loads *out)
{
	assert(h && o && out);
	if (h->n_windows == 0 || !(o->half_life > 0.0) || !(o->k >= 0.0) || !isfinite(o->k)) {
		return MP_EINVAL;
	}
	const struct mp_loads *last = &h->windows[h->n_windows - 1u];
	int rc = mp_loads_alloc(out, last->n_layers, last->n_experts);
	if (rc != 0) {
		return rc;
	}
	if (last->layer_ids) {
		rc = mp_loads_set_layer_ids(out, last->layer_ids);
	}
	out->hidden_layers = last->hidden_layers;
	out->source = dup_or_null(last->source);
	out->path = dup_or_null(last->path);
	if (rc != 0 || (last->source && !out->source) || (last->path && !out->path)) {
		mp_loads_finish(out);
		return rc != 0 ? rc : MP_ENOMEM;
	}
	for (uint32_t l = 0; l < last->n_layers; l++) {
		if (o->kind == MP_OBJECTIVE_LAST) {
			memcpy(mp_loads_row(out, l), mp_loads_row(last, l), last->n_experts * sizeof(double));
		} else {
			reduce_layer(h, o, l, mp_loads_row(out, l));
		}
	}
	return 0;
}

