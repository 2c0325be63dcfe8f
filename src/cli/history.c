/* Loads as a history of windows on the command line (issue 25 item 3):
 * --objective, --half-life, --spread-k and --windows, shared by place and
 * replan. The objectives themselves are src/placement/history.c. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "moeplan/loader.h"
#include "moeplan/placement.h"

const char *cli_history_option_name(int i)
{
	static const char *const names[] = {"objective", "half-life", "spread-k", "windows"};
	return i >= 0 && i < 4 ? names[i] : NULL;
}

bool cli_history_option(const char *cmd, const char *opt, const char *arg, struct cli_history *h)
{
	if (strcmp(opt, "windows") != 0) {
		h->have_objective = true;
	}
	if (strcmp(opt, "objective") == 0) {
		if (mp_objective_parse(arg, &h->obj.kind) != 0) {
			cli_usage(cmd, "--objective '%s': expected last, mean, recency, spread or worst", arg);
			return false;
		}
		return true;
	}
	h->have_half_life = h->have_half_life || strcmp(opt, "half-life") == 0;
	h->have_spread_k = h->have_spread_k || strcmp(opt, "spread-k") == 0;
	if (strcmp(opt, "half-life") == 0) {
		if (!cli_parse_positive(cmd, "half-life", arg, MP_MAX_WINDOWS, &h->obj.half_life)) {
			return false;
		}
		return true;
	}
	if (strcmp(opt, "spread-k") == 0) {
		return cli_parse_double(cmd, "spread-k", arg, 0, 100, &h->obj.k);
	}
	/* --windows FIRST:LAST */
	const char *colon = strchr(arg, ':');
	char first[16] = "";
	if (!colon || (size_t)(colon - arg) >= sizeof(first)) {
		cli_usage(cmd, "--windows: expected FIRST:LAST, window numbers from 1, got '%s'", arg);
		return false;
	}
	memcpy(first, arg, (size_t)(colon - arg));
	if (!cli_parse_u32(cmd, "windows", first, 1, MP_MAX_WINDOWS, &h->first) ||
	    !cli_parse_u32(cmd, "windows", colon + 1, 1, MP_MAX_WINDOWS, &h->last)) {
		return false;
	}
	if (h->last < h->first) {
		cli_usage(cmd, "--windows: expected FIRST:LAST with LAST >= FIRST, got '%s'", arg);
		return false;
	}
	return true;
}

bool cli_history_wanted(char *const *paths, uint32_t n_paths)
{
	return n_paths > 1 || (n_paths == 1 && mp_loads_is_series(paths[0]));
}

int cli_history_load(struct cli_history *h, char *const *paths, uint32_t n_paths,
		     struct mp_loads *out, struct mp_diags *diags)
{
	int rc = mp_load_history((const char *const *)paths, n_paths, &h->all, diags);
	if (rc != 0) {
		return rc;
	}
	uint32_t first = h->first ? h->first : 1u;
	uint32_t last = h->last ? h->last : h->all.n_windows;
	if (last > h->all.n_windows) {
		return mp_diags_add(diags, paths[n_paths - 1u], 0, 0, MP_EINVAL, "--windows %u:%u: the "
				    "history has %u window%s (1 to %u)", first, last, h->all.n_windows,
				    cli_s(h->all.n_windows), h->all.n_windows) == MP_ENOMEM ? MP_ENOMEM
											     : MP_EINVAL;
	}
	h->first = first;
	h->last = last;
	h->view = (struct mp_history){.n_windows = last - first + 1u, .windows = h->all.windows + first - 1u};
	return mp_history_loads(&h->view, &h->obj, out);
}

/* One layer of --objective worst: swaps, then the plan re-evaluated on w. */
static int worst_layer(const struct cli_history *h, const double *w, uint32_t l,
		       struct mp_layer_placement *lp, const struct mp_placement *pl,
		       double *worst, double *bound)
{
	const uint32_t T = h->view.n_windows;
	const size_t n = (size_t)pl->gpus * pl->slots_per_gpu;
	const double **rows = malloc(T * sizeof(*rows));
	uint32_t *slot = malloc(n * sizeof(*slot));
	int rc = rows && slot ? 0 : MP_ENOMEM;
	for (uint32_t t = 0; rc == 0 && t < T; t++) {
		rows[t] = mp_loads_row(&h->view.windows[t], l);
	}
	if (rc == 0) {
		memcpy(slot, lp->slot_expert, n * sizeof(*slot));
		/* counted work: every swap lowers a (window, GPU) pair, at most T x G x slots */
		const uint64_t max_swaps = (uint64_t)T * n;
		rc = mp_place_worst_layer(rows, T, pl->n_experts, pl->gpus, pl->slots_per_gpu, max_swaps,
					  slot, worst, bound);
	}
	const double proven = lp->lower_bound; /* the solver's bound holds for every plan of w */
	if (rc == 0) {
		rc = mp_place_evaluate(slot, w, pl->n_experts, pl->gpus, pl->slots_per_gpu, lp);
	}
	if (rc == 0) {
		if (proven > lp->lower_bound) {
			mp_layer_placement_set_bound(lp, proven, proven >= lp->max_load ? MP_PLACE_OPTIMAL
										 : MP_PLACE_FEASIBLE);
		}
		lp->method = "plan on the mean, then slot swaps for the worst window (--objective worst)";
	}
	free(rows);
	free(slot);
	return rc;
}

int cli_history_worst(const struct cli_history *h, const struct mp_loads *plan,
		      struct mp_placement *pl, double *worst, double *bound)
{
	*worst = 0.0;
	*bound = 0.0;
	for (uint32_t l = 0; l < pl->n_layers; l++) {
		double wl = 0.0;
		double bl = 0.0;
		int rc = worst_layer(h, mp_loads_row(plan, l), l, &pl->layers[l], pl, &wl, &bl);
		if (rc != 0) {
			return rc;
		}
		*worst = wl > *worst ? wl : *worst;
		*bound = bl > *bound ? bl : *bound;
	}
	return 0;
}

void cli_history_doc(const struct cli_history *h, double worst, double bound, struct mp_doc *doc)
{
	struct mp_doc *m = mp_doc_map();
	mp_doc_put_string(m, "objective", mp_objective_name(h->obj.kind));
	mp_doc_put_int(m, "windows", h->view.n_windows);
	mp_doc_put_int(m, "first_window", h->first);
	mp_doc_put_int(m, "last_window", h->last);
	if (h->obj.kind == MP_OBJECTIVE_RECENCY) {
		mp_doc_put_real(m, "half_life", h->obj.half_life);
	} else if (h->obj.kind == MP_OBJECTIVE_SPREAD) {
		mp_doc_put_real(m, "spread_k", h->obj.k);
	}
	if (worst >= 0.0) {
		mp_doc_put_real(m, "worst_ratio", worst);
		mp_doc_put_real(m, "worst_bound", bound);
	}
	mp_doc_put(doc, "history", m);
}

void cli_history_warn(const char *cmd, const struct cli_history *h, bool history)
{
	if (cli_quiet) {
		return;
	}
	if (!history && h->have_objective) {
		fprintf(stderr, "moeplan %s: warning: the loads are one window: every objective plans on "
			"it (a history is several LOADS or a series CSV)\n", cmd);
	} else if (h->have_half_life && h->obj.kind != MP_OBJECTIVE_RECENCY) {
		fprintf(stderr, "moeplan %s: warning: --half-life changes only --objective recency\n", cmd);
	} else if (h->have_spread_k && h->obj.kind != MP_OBJECTIVE_SPREAD) {
		fprintf(stderr, "moeplan %s: warning: --spread-k changes only --objective spread\n", cmd);
	}
}

void cli_history_finish(struct cli_history *h)
{
	mp_history_finish(&h->all);
	h->view = (struct mp_history){0};
}
