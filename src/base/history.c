/* moeplan: a history of load windows (moeplan/history.h) as data. */
#include <assert.h>
#include <stdlib.h>

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

int mp_history_push(struct mp_history *h, struct mp_loads *w)
{
	assert(h && w);
	if (h->n_windows >= MP_MAX_WINDOWS || w->n_layers == 0 || w->n_experts == 0 ||
	    (h->n_windows > 0 && (w->n_layers != h->windows[0].n_layers ||
				  w->n_experts != h->windows[0].n_experts))) {
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
