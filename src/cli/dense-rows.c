/* SGLang's recorder dumps as written (issue 24): one row per hidden layer,
 * the dense layers' rows all zero (expert_distribution.py
 * _StatAccumulator.dump: logical_count [buffer][num_hidden_layers][experts]).
 * Against a moeplan plan or placement, whose rows name only the MoE layers
 * it places, the all-zero rows of layers it does not place are the dense
 * layers: skipped with a note (checked against the model's dense layers
 * when a model is given). `place` of a dump without --model skips them the
 * same way and names them. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "moeplan/loader.h"
#include "moeplan/model.h"
#include "moeplan/replan.h"
#include "moeplan/traffic.h"

static bool row_zero(const struct mp_loads *loads, uint32_t r)
{
	const double *w = mp_loads_row(loads, r);
	for (uint32_t e = 0; e < loads->n_experts; e++) {
		if (w[e] != 0.0) {
			return false;
		}
	}
	return true;
}

static bool has_id(const uint32_t *ids, uint32_t n, uint32_t id)
{
	for (uint32_t i = 0; i < n; i++) {
		if (ids[i] == id) {
			return true;
		}
	}
	return false;
}

/* Keep the rows keep[r] says; layer_ids follow. Returns 0 or MP_ENOMEM. */
static int keep_rows(struct mp_loads *loads, const bool *keep)
{
	uint32_t n = 0;
	for (uint32_t r = 0; r < loads->n_layers; r++) {
		n += keep[r];
	}
	double *w = malloc((size_t)(n ? n : 1) * loads->n_experts * sizeof(*w));
	uint32_t *ids = malloc((size_t)(n ? n : 1) * sizeof(*ids));
	if (!w || !ids) {
		free(w);
		free(ids);
		return MP_ENOMEM;
	}
	uint32_t k = 0;
	for (uint32_t r = 0; r < loads->n_layers; r++) {
		if (keep[r]) {
			memcpy(w + (size_t)k * loads->n_experts, mp_loads_row(loads, r),
			       loads->n_experts * sizeof(*w));
			ids[k++] = loads->layer_ids[r];
		}
	}
	free(loads->w);
	free(loads->layer_ids);
	loads->w = w;
	loads->layer_ids = ids;
	loads->n_layers = n;
	loads->hidden_layers = 0; /* no longer every hidden layer */
	return 0;
}

/* "0, 1, 2" of the dropped rows' layers into buf. */
static void name_rows(const struct mp_loads *loads, const bool *keep, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (uint32_t r = 0; r < loads->n_layers && len + 16 < size; r++) {
		if (!keep[r]) {
			int n = snprintf(buf + len, size - len, "%s%u", len ? ", " : "", loads->layer_ids[r]);
			len += n > 0 ? (size_t)n : 0;
		}
	}
}

/* Drop the all-zero rows that are not in place_ids (NULL: every all-zero
 * row) and, with a model, are its dense layers; say which on stderr. */
static int drop_zero_rows(const char *cmd, const char *loads_path, const char *why,
			  const struct mp_model *model, const uint32_t *place_ids, uint32_t n_place,
			  struct mp_loads *loads)
{
	bool *keep = malloc((size_t)loads->n_layers * sizeof(*keep));
	if (!keep) {
		return MP_ENOMEM;
	}
	uint32_t dropped = 0;
	for (uint32_t r = 0; r < loads->n_layers; r++) {
		uint32_t id = loads->layer_ids[r];
		bool dense = true;
		for (uint32_t k = 0; model && k < model->moe_layers; k++) {
			dense &= mp_model_moe_layer_id(model, k) != id;
		}
		keep[r] = !row_zero(loads, r) || (place_ids && has_id(place_ids, n_place, id)) || !dense;
		dropped += !keep[r];
	}
	int rc = 0;
	if (dropped > 0) {
		char names[512];
		name_rows(loads, keep, names, sizeof(names));
		if (!cli_quiet) {
			fprintf(stderr, "moeplan %s: %s: skipped %u all-zero row%s, layer%s %s: %s\n", cmd,
				loads_path, dropped, cli_s(dropped), cli_s(dropped), names, why);
		}
		rc = keep_rows(loads, keep);
	}
	free(keep);
	return rc;
}

/* Drop the rows (all-zero or not) of layers the plan does not place
 * (place_ids[n_place]) from loads that hold every placed layer, as an SGLang recorder dump of the exported map has
 * them: --export filled those layers with the nearest placed layer's row
 * (mp_map_row_source), and the plan has no row of its own to score them
 * by. Say which on stderr. */
static int drop_unplaced_rows(const char *cmd, const char *loads_path, const char *plan_path,
			      const uint32_t *place_ids, uint32_t n_place, struct mp_loads *loads)
{
	/* only a dump that covers every placed layer (as a recorder dump of
	 * the exported map does): loads that miss a placed layer are refused
	 * later, naming the layer, never matched by position */
	for (uint32_t i = 0; i < n_place; i++) {
		if (!has_id(loads->layer_ids, loads->n_layers, place_ids[i])) {
			return 0;
		}
	}
	bool *keep = malloc((size_t)(loads->n_layers ? loads->n_layers : 1) * sizeof(*keep));
	if (!keep) {
		return MP_ENOMEM;
	}
	uint32_t dropped = 0;
	for (uint32_t r = 0; r < loads->n_layers; r++) {
		keep[r] = has_id(place_ids, n_place, loads->layer_ids[r]);
		dropped += !keep[r];
	}
	int rc = 0;
	if (dropped > 0 && dropped < loads->n_layers) {
		char names[512];
		name_rows(loads, keep, names, sizeof(names));
		if (!cli_quiet) {
			fprintf(stderr, "moeplan %s: %s: skipped %u row%s of MoE layer%s %s: %s does not place "
				"%s (its --export map gives each the row of the nearest placed layer; check "
				"that map to score them)\n", cmd, loads_path, dropped, cli_s(dropped),
				cli_s(dropped), names, plan_path, dropped == 1 ? "it" : "them");
		}
		rc = keep_rows(loads, keep);
	}
	free(keep);
	return rc;
}

int cli_loads_fit_plan(const char *cmd, const char *plan_path, const char *phase, const char *model_path,
		       const char *loads_path, struct mp_loads *loads)
{
	if (!loads->layer_ids || !plan_path) {
		return 0;
	}
	uint32_t *own = NULL;
	uint32_t n_own = 0;
	struct mp_diags diags;
	mp_diags_init(&diags);
	int rc = mp_map_row_layers(plan_path, phase, &own, &n_own, &diags);
	mp_diags_finish(&diags);
	if (rc != 0 || !own) {
		free(own);
		return 0; /* an engine map: row r is hidden layer r, every row there */
	}
	struct mp_model model;
	mp_model_init(&model);
	mp_diags_init(&diags);
	rc = model_path ? mp_load_model(model_path, &model, &diags) : 0;
	if (rc == 0) {
		char why[512];
		snprintf(why, sizeof(why), "%s does not place %s (they are %s, as SGLang's recorder writes "
			 "them)", plan_path, n_own == 1 ? "it" : "them",
			 model_path ? "dense layers of the model" : "taken as dense layers");
		rc = drop_zero_rows(cmd, loads_path, why, model_path ? &model : NULL, own, n_own, loads);
		if (rc == 0 && loads->layer_ids) {
			rc = drop_unplaced_rows(cmd, loads_path, plan_path, own, n_own, loads);
		}
	} else {
		cli_print_diags(&diags);
	}
	mp_diags_finish(&diags);
	mp_model_finish(&model);
	free(own);
	return rc;
}

int cli_place_skip_dense(const char *loads_path, struct mp_loads *loads, struct cli_layers *cl)
{
	if (loads->hidden_layers == 0 || loads->hidden_layers != loads->n_layers || !loads->layer_ids) {
		return 0;
	}
	const uint32_t hidden = loads->hidden_layers;
	int rc = drop_zero_rows("place", loads_path, "SGLang's dump has a row for every hidden layer and "
				"a dense layer's is zero; they are left out of the placement, and --export "
				"gives them SGLang's trivial rows (give --model to check them against the "
				"model's dense layers)", NULL, NULL, 0, loads);
	if (rc != 0 || loads->hidden_layers != 0) {
		return rc; /* nothing dropped: every row is placed */
	}
	cli_layers_finish(cl);
	cl->moe = malloc((size_t)(loads->n_layers ? loads->n_layers : 1) * sizeof(*cl->moe));
	cl->rows = malloc((size_t)(loads->n_layers ? loads->n_layers : 1) * sizeof(*cl->rows));
	if (!cl->moe || !cl->rows) {
		cli_layers_finish(cl);
		return MP_ENOMEM;
	}
	memcpy(cl->moe, loads->layer_ids, loads->n_layers * sizeof(*cl->moe));
	memcpy(cl->rows, loads->layer_ids, loads->n_layers * sizeof(*cl->rows));
	cl->layers = (struct mp_export_layers){
		.hidden_layers = hidden, .moe_ids = cl->moe, .n_moe = loads->n_layers, .row_layer = cl->rows,
	};
	cl->known = true;
	return 0;
}

int cli_engine_map_skip_dense(const char *cmd, const char *loads_path, const struct mp_model *model,
			      struct mp_loads *loads, uint32_t **kept, uint32_t *n_kept)
{
	*kept = NULL;
	*n_kept = 0;
	if (!loads->layer_ids || loads->n_layers == 0) {
		return 0;
	}
	bool *keep = malloc((size_t)loads->n_layers * sizeof(*keep));
	uint32_t *rows = malloc((size_t)loads->n_layers * sizeof(*rows));
	if (!keep || !rows) {
		free(keep);
		free(rows);
		return MP_ENOMEM;
	}
	uint32_t n = 0;
	for (uint32_t r = 0; r < loads->n_layers; r++) {
		bool moe = false;
		for (uint32_t k = 0; model && k < model->moe_layers; k++) {
			moe |= mp_model_moe_layer_id(model, k) == loads->layer_ids[r];
		}
		keep[r] = !row_zero(loads, r) || moe;
		if (keep[r]) {
			rows[n++] = r;
		}
	}
	int rc = 0;
	if (n > 0 && n < loads->n_layers) {
		char names[512];
		name_rows(loads, keep, names, sizeof(names));
		if (!cli_quiet) {
			fprintf(stderr, "moeplan %s: %s: skipped %u all-zero row%s, layer%s %s: %s, as SGLang's "
				"recorder writes them; no tokens reach their experts\n", cmd, loads_path,
				loads->n_layers - n, cli_s(loads->n_layers - n), cli_s(loads->n_layers - n), names,
				model ? "dense layers of the model" : "taken as dense layers (give --model to decide)");
		}
		rc = keep_rows(loads, keep);
		if (rc == 0) {
			*kept = rows;
			*n_kept = n;
			rows = NULL;
		}
	}
	free(rows);
	free(keep);
	return rc;
}
