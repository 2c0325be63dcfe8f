/* moeplan: expert popularity per layer, and the synthetic traffic specs
 * (uniform, Zipf, hot set) and observed counts that produce it. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/diag.h"
#include "moeplan/traffic.h"
#include "rng-internal.h"

void mp_loads_init(struct mp_loads *loads)
{
	assert(loads);
	*loads = (struct mp_loads){ 0 };
}

int mp_loads_alloc(struct mp_loads *loads, uint32_t n_layers, uint32_t n_experts)
{
	assert(loads);
	if (n_layers == 0 || n_experts == 0 || n_layers > MP_MAX_LAYERS ||
	    n_experts > MP_MAX_EXPERTS) {
		return MP_EINVAL;
	}
	double *w = calloc((size_t)n_layers * n_experts, sizeof(*w));
	if (!w) {
		return MP_ENOMEM;
	}
	mp_loads_finish(loads);
	loads->n_layers = n_layers;
	loads->n_experts = n_experts;
	loads->w = w;
	return 0;
}

void mp_loads_finish(struct mp_loads *loads)
{
	if (!loads) {
		return;
	}
	free(loads->w);
	free(loads->source);
	free(loads->path);
	free(loads->layer_ids);
	*loads = (struct mp_loads){ 0 };
}

int mp_loads_set_layer_ids(struct mp_loads *loads, const uint32_t *ids)
{
	assert(loads);
	free(loads->layer_ids);
	loads->layer_ids = NULL;
	if (!ids || loads->n_layers == 0) {
		return 0;
	}
	for (uint32_t r = 0; r < loads->n_layers; r++) {
		if (ids[r] >= MP_MAX_LAYERS || (r > 0 && ids[r] <= ids[r - 1])) {
			return MP_EINVAL;
		}
	}
	loads->layer_ids = malloc((size_t)loads->n_layers * sizeof(*ids));
	if (!loads->layer_ids) {
		return MP_ENOMEM;
	}
	memcpy(loads->layer_ids, ids, (size_t)loads->n_layers * sizeof(*ids));
	return 0;
}

void mp_traffic_init(struct mp_traffic *traffic)
{
	assert(traffic);
	*traffic = (struct mp_traffic){
		.kind = MP_TRAFFIC_UNIFORM,
		.zipf_s = 1.0,
		.hot_experts = 0.1,
		.hot_load = 0.5,
		.seed = 0,
		.permute = false,
	};
	mp_loads_init(&traffic->observed);
}

void mp_traffic_finish(struct mp_traffic *traffic)
{
	if (!traffic) {
		return;
	}
	mp_loads_finish(&traffic->observed);
	mp_traffic_init(traffic);
}

/* Weight of each popularity rank (0-based), summing to n_experts. */
static int rank_weights(const struct mp_traffic *traffic, uint32_t n, double *rank_w)
{
	switch (traffic->kind) {
	case MP_TRAFFIC_UNIFORM:
		for (uint32_t i = 0; i < n; i++) {
			rank_w[i] = 1.0;
		}
		return 0;
	case MP_TRAFFIC_ZIPF: {
		const double s = traffic->zipf_s;
		if (!isfinite(s) || s < 0.0) {
			return MP_EINVAL;
		}
		double sum = 0.0;
		for (uint32_t i = 0; i < n; i++) {
			rank_w[i] = pow((double)i + 1.0, -s);
			sum += rank_w[i];
		}
		/* sum >= 1 (rank 1 has weight 1), so the scale is finite. */
		const double scale = (double)n / sum;
		for (uint32_t i = 0; i < n; i++) {
			rank_w[i] *= scale;
		}
		return 0;
	}
	case MP_TRAFFIC_HOT: {
		const double hf = traffic->hot_experts;
		const double hl = traffic->hot_load;
		if (!(hf > 0.0 && hf < 1.0) || !(hl > 0.0 && hl < 1.0) || n < 2) {
			return MP_EINVAL;
		}
		double hot = floor(hf * (double)n + 0.5);
		if (hot < 1.0) {
			hot = 1.0;
		}
		if (hot > (double)(n - 1)) {
			hot = (double)(n - 1);
		}
		const uint32_t h = (uint32_t)hot;
		const double w_hot = hl * (double)n / (double)h;
		const double w_cold = (1.0 - hl) * (double)n / (double)(n - h);
		for (uint32_t i = 0; i < n; i++) {
			rank_w[i] = i < h ? w_hot : w_cold;
		}
		return 0;
	}
	case MP_TRAFFIC_OBSERVED:
		break;
	}
	return MP_EINVAL;
}

static int copy_observed(const struct mp_loads *observed, uint32_t n_layers,
			 uint32_t n_experts, struct mp_loads *tmp)
{
	if (!observed->w || observed->n_layers != n_layers ||
	    observed->n_experts != n_experts) {
		return MP_EINVAL;
	}
	const size_t count = (size_t)n_layers * n_experts;
	for (size_t i = 0; i < count; i++) {
		if (!isfinite(observed->w[i]) || observed->w[i] < 0.0) {
			return MP_EINVAL;
		}
	}
	memcpy(tmp->w, observed->w, count * sizeof(*tmp->w));
	tmp->hidden_layers = observed->hidden_layers;
	int rc = mp_loads_set_layer_ids(tmp, observed->layer_ids);
	if (rc != 0) {
		return rc;
	}
	if (observed->source) {
		tmp->source = strdup(observed->source);
		if (!tmp->source) {
			return MP_ENOMEM;
		}
	}
	return 0;
}

/* Fill tmp's rows from a generated spec (rank weights, permuted per layer). */
static int generate_rows(const struct mp_traffic *traffic, struct mp_loads *tmp)
{
	const uint32_t n_experts = tmp->n_experts;
	int rc = 0;
	double *rank_w = malloc((size_t)n_experts * sizeof(*rank_w));
	uint32_t *perm = malloc((size_t)n_experts * sizeof(*perm));
	if (!rank_w || !perm) {
		rc = MP_ENOMEM;
		goto cleanup;
	}
	rc = rank_weights(traffic, n_experts, rank_w);
	if (rc < 0) {
		goto cleanup;
	}
	/* One SplitMix64 stream for the whole spec: layer l's permutation is
	 * the (l+1)-th Fisher-Yates shuffle of the identity drawn from it. */
	struct mp_splitmix sm = { .state = traffic->seed };
	for (uint32_t layer = 0; layer < tmp->n_layers; layer++) {
		for (uint32_t i = 0; i < n_experts; i++) {
			perm[i] = i;
		}
		if (traffic->permute) {
			for (uint32_t i = n_experts - 1; i > 0; i--) {
				const uint32_t j = mp_splitmix_below(&sm, i + 1);
				const uint32_t t = perm[i];
				perm[i] = perm[j];
				perm[j] = t;
			}
		}
		double *row = mp_loads_row(tmp, layer);
		for (uint32_t r = 0; r < n_experts; r++) {
			row[perm[r]] = rank_w[r];
		}
	}
cleanup:
	free(rank_w);
	free(perm);
	return rc;
}

int mp_traffic_generate(const struct mp_traffic *traffic, uint32_t n_layers,
			uint32_t n_experts, struct mp_loads *out)
{
	assert(traffic && out);
	struct mp_loads tmp;
	mp_loads_init(&tmp);
	int rc = mp_loads_alloc(&tmp, n_layers, n_experts);
	if (rc < 0) {
		goto cleanup;
	}
	if (traffic->kind == MP_TRAFFIC_OBSERVED) {
		rc = copy_observed(&traffic->observed, n_layers, n_experts, &tmp);
	} else {
		rc = generate_rows(traffic, &tmp);
	}
	if (rc < 0) {
		goto cleanup;
	}
	mp_loads_finish(out);
	*out = tmp;
	mp_loads_init(&tmp);
cleanup:
	mp_loads_finish(&tmp);
	return rc;
}
