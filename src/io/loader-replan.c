/* Re-planning (moeplan/replan.h): what a re-plan reads from a full
 * moeplan plan besides its map, and the plan rewritten with one phase's
 * placement replaced. Part of the loader: the only files that parse YAML. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loader-internal.h"
#include "moeplan/replan.h"
#include "moeplan/traffic.h"

static bool is_plan(struct ld *ld, const yaml_node_t *root)
{
	return root->type == YAML_MAPPING_NODE && !ld_has(ld, root, "physical_to_logical_map") &&
	       !ld_has(ld, root, "physical_to_logical") && !ld_has(ld, root, "placement") &&
	       (ld_has(ld, root, "decode") || ld_has(ld, root, "prefill"));
}

/* A plain number (no unit) or 0 when absent or not a number. */
static double number_at(struct ld *ld, const yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE) {
		return 0;
	}
	const char *s = ld_scalar(ld_get(ld, map, key));
	if (!s) {
		return 0;
	}
	char *end = NULL;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v) || v < 0) {
		return 0;
	}
	return v;
}

int mp_replan_read_plan_info(const char *path, const char *phase,
			     struct mp_replan_plan_info *out, struct mp_diags *diags)
{
	if (ld_is_zip(path)) {
		/* SGLang's torch.save map (.pt): the engine's rows, nothing else */
		*out = (struct mp_replan_plan_info){.kind = MP_REPLAN_SOURCE_SGLANG};
		return 0;
	}
	struct ld ld;
	int rc = ld_open(&ld, path, diags);
	if (rc) {
		ld_close(&ld);
		return rc;
	}
	struct mp_replan_plan_info info = {.kind = MP_REPLAN_SOURCE_LIST};
	const yaml_node_t *root = ld_root(&ld);
	if (root->type != YAML_MAPPING_NODE) {
		info.kind = MP_REPLAN_SOURCE_LIST;
	} else if (ld_has(&ld, root, "physical_to_logical_map")) {
		info.kind = ld_has(&ld, root, "logical_replica_count") ? MP_REPLAN_SOURCE_VLLM
								       : MP_REPLAN_SOURCE_SGLANG;
	} else if (is_plan(&ld, root)) {
		info.kind = MP_REPLAN_SOURCE_PLAN;
		const yaml_node_t *ph = ld_get(&ld, root, phase ? phase : "decode");
		const yaml_node_t *model = ld_get(&ld, root, "model");
		info.tokens_per_gpu = number_at(&ld, ph, "tokens_per_gpu");
		info.expert_time_s = number_at(&ld, ph, "expert_time_s");
		double k = number_at(&ld, model, "top_k");
		info.top_k = k >= 1 && k <= 65536 ? (uint32_t)k : 0;
		double layers = number_at(&ld, model, "moe_layers");
		double hidden = number_at(&ld, model, "hidden_layers");
		bool whole = layers == floor(layers) && hidden == floor(hidden);
		info.moe_layers = whole && layers >= 1 && layers <= MP_MAX_LAYERS ? (uint32_t)layers : 0;
		info.hidden_layers = info.moe_layers && hidden >= layers && hidden <= MP_MAX_LAYERS
					     ? (uint32_t)hidden : 0;
		double per_gpu = number_at(&ld, ph, "slots_per_gpu");
		const yaml_node_t *hbm = ph && ph->type == YAML_MAPPING_NODE ? ld_get(&ld, ph, "hbm") : NULL;
		double routed = number_at(&ld, hbm, "routed_bytes");
		if (layers >= 1 && per_gpu >= 1 && routed > 0) {
			double w = routed / (layers * per_gpu);
			info.expert_bytes = w < 1.8e19 ? (uint64_t)llround(w) : 0;
		}
	} else if (ld_has(&ld, root, "placement")) {
		info.kind = MP_REPLAN_SOURCE_WRAPPED;
	} else {
		info.kind = MP_REPLAN_SOURCE_PLACEMENT;
	}
	*out = info;
	ld_close(&ld);
	return 0;
}

/* The placement mapping of a plan's phase, of {placement: ...} or the
 * file itself; NULL for engine maps and lists. */
static const yaml_node_t *placement_node(struct ld *ld, const yaml_node_t *root, const char *phase)
{
	if (root->type != YAML_MAPPING_NODE || ld_has(ld, root, "physical_to_logical_map")) {
		return NULL;
	}
	if (is_plan(ld, root)) {
		const yaml_node_t *ph = ld_get(ld, root, phase ? phase : "decode");
		return ph && ph->type == YAML_MAPPING_NODE ? ld_get(ld, ph, "placement") : NULL;
	}
	const yaml_node_t *p = ld_get(ld, root, "placement");
	if (p && p->type == YAML_MAPPING_NODE && !ld_has(ld, p, "physical_to_logical") &&
	    (ld_has(ld, p, "decode") || ld_has(ld, p, "prefill"))) {
		/* a search result: placement.{prefill,decode} (loader-loads.c reads it so) */
		const yaml_node_t *ph = ld_get(ld, p, phase ? phase : "decode");
		return ph && ph->type == YAML_MAPPING_NODE ? ph : NULL;
	}
	return p ? p : root;
}

int mp_map_row_layers(const char *path, const char *phase, uint32_t **ids, uint32_t *n,
		      struct mp_diags *diags)
{
	*ids = NULL;
	*n = 0;
	if (ld_is_zip(path)) {
		return 0; /* SGLang's torch.save map: the engine's rows */
	}
	struct ld ld;
	int rc = ld_open(&ld, path, diags);
	if (rc) {
		ld_close(&ld);
		return rc;
	}
	const yaml_node_t *pl = placement_node(&ld, ld_root(&ld), phase);
	const yaml_node_t *layers = pl && pl->type == YAML_MAPPING_NODE ? ld_get(&ld, pl, "layers") : NULL;
	size_t rows = layers && layers->type == YAML_SEQUENCE_NODE
			      ? (size_t)(layers->data.sequence.items.top - layers->data.sequence.items.start)
			      : 0;
	uint32_t *v = rows ? malloc(rows * sizeof(*v)) : NULL;
	if (rows && !v) {
		ld_close(&ld);
		return MP_ENOMEM;
	}
	for (size_t r = 0; r < rows && v; r++) {
		const yaml_node_t *item = ld_node(&ld, layers->data.sequence.items.start[r]);
		const char *s = item->type == YAML_MAPPING_NODE ? ld_scalar(ld_get(&ld, item, "layer")) : NULL;
		uint64_t id = 0;
		if (!s || ld_parse_u64(s, &id) != LDQ_OK || id >= MP_MAX_LAYERS) {
			free(v); /* a row that does not say: none is known */
			v = NULL;
		} else {
			v[r] = (uint32_t)id;
		}
	}
	ld_close(&ld);
	if (v) {
		*ids = v;
		*n = (uint32_t)rows;
	}
	return 0;
}

/* ------------------------------------------------------------ YAML -> doc */

static bool whole_int(const char *s, int64_t *out)
{
	const char *p = s;
	if (*p == '+' || *p == '-') {
		p++;
	}
	if (!*p) {
		return false;
	}
	for (const char *q = p; *q; q++) {
		if (*q < '0' || *q > '9') {
			return false;
		}
	}
	char *end = NULL;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end) {
		return false;
	}
	*out = v;
	return true;
}

static bool whole_real(const char *s, double *out)
{
	/* decimal forms only: digits, one dot, an exponent */
	const char *p = s;
	bool digits = false;
	if (*p == '+' || *p == '-') {
		p++;
	}
	for (; *p; p++) {
		if ((*p >= '0' && *p <= '9')) {
			digits = true;
		} else if (!strchr(".eE+-", *p)) {
			return false;
		}
	}
	if (!digits) {
		return false;
	}
	char *end = NULL;
	errno = 0;
	double v = strtod(s, &end);
	if (*end || !isfinite(v)) {
		return false;
	}
	*out = v;
	return true;
}

static struct mp_doc *scalar_doc(const yaml_node_t *node)
{
	const char *s = (const char *)node->data.scalar.value;
	if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
		return mp_doc_string(s);
	}
	if (!*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
	    strcmp(s, "NULL") == 0) {
		return mp_doc_null();
	}
	if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0) {
		return mp_doc_bool(true);
	}
	if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0) {
		return mp_doc_bool(false);
	}
	int64_t i;
	if (whole_int(s, &i)) {
		return mp_doc_int(i);
	}
	double d;
	if (whole_real(s, &d)) {
		return mp_doc_real(d);
	}
	return mp_doc_string(s);
}

static struct mp_doc *to_doc(struct ld *ld, const yaml_node_t *node, int depth)
{
	if (!node || depth > 64) {
		return mp_doc_null();
	}
	switch (node->type) {
	case YAML_SCALAR_NODE:
		return scalar_doc(node);
	case YAML_SEQUENCE_NODE: {
		struct mp_doc *list = mp_doc_list();
		for (yaml_node_item_t *it = node->data.sequence.items.start;
		     it < node->data.sequence.items.top; it++) {
			mp_doc_put(list, NULL, to_doc(ld, ld_node(ld, *it), depth + 1));
		}
		return list;
	}
	case YAML_MAPPING_NODE: {
		struct mp_doc *map = mp_doc_map();
		for (yaml_node_pair_t *pr = node->data.mapping.pairs.start;
		     pr < node->data.mapping.pairs.top; pr++) {
			const char *key = ld_scalar(ld_node(ld, pr->key));
			mp_doc_put(map, key ? key : "", to_doc(ld, ld_node(ld, pr->value), depth + 1));
		}
		return map;
	}
	case YAML_NO_NODE:
		break;
	}
	return mp_doc_null();
}

static const struct mp_replan_edit *find_edit(const struct mp_replan_edit *edits, size_t n,
					      const char *key)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(edits[i].key, key) == 0) {
			return &edits[i];
		}
	}
	return NULL;
}

static struct mp_doc *phase_doc(struct ld *ld, const yaml_node_t *ph,
				const struct mp_replan_edit *edits, size_t n)
{
	struct mp_doc *map = mp_doc_map();
	unsigned char *done = calloc(n ? n : 1, 1);
	if (!done) {
		mp_doc_destroy(map);
		return NULL;
	}
	for (yaml_node_pair_t *pr = ph->data.mapping.pairs.start; pr < ph->data.mapping.pairs.top; pr++) {
		const char *key = ld_scalar(ld_node(ld, pr->key));
		key = key ? key : "";
		const struct mp_replan_edit *e = find_edit(edits, n, key);
		if (e) {
			done[e - edits] = 1;
			if (e->value) {
				mp_doc_put(map, key, mp_doc_clone(e->value));
			}
			continue;
		}
		mp_doc_put(map, key, to_doc(ld, ld_node(ld, pr->value), 1));
	}
	for (size_t i = 0; i < n; i++) {
		if (!done[i] && edits[i].value) {
			mp_doc_put(map, edits[i].key, mp_doc_clone(edits[i].value));
		}
	}
	free(done);
	return map;
}

int mp_replan_splice_plan(const char *path, const char *phase, const struct mp_replan_edit *edits,
			  size_t n_edits, struct mp_doc **out, struct mp_diags *diags)
{
	struct ld ld;
	struct mp_doc *doc = NULL;
	const char *name = phase ? phase : "decode";
	int rc = ld_open(&ld, path, diags);
	if (rc) {
		goto out;
	}
	const yaml_node_t *root = ld_root(&ld);
	if (!is_plan(&ld, root)) {
		ld_error(&ld, root, "expected a moeplan plan with a '%s' phase", name);
		rc = ld.status ? ld.status : MP_EINVAL;
		goto out;
	}
	const yaml_node_t *ph = ld_get(&ld, root, name);
	if (!ph || ph->type != YAML_MAPPING_NODE) {
		ld_error(&ld, root, "the plan has no '%s' phase", name);
		rc = ld.status ? ld.status : MP_EINVAL;
		goto out;
	}
	doc = mp_doc_map();
	for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top;
	     pr++) {
		const char *key = ld_scalar(ld_node(&ld, pr->key));
		key = key ? key : "";
		const yaml_node_t *value = ld_node(&ld, pr->value);
		if (value == ph) {
			mp_doc_put(doc, key, phase_doc(&ld, ph, edits, n_edits));
		} else {
			mp_doc_put(doc, key, to_doc(&ld, value, 1));
		}
	}
	if (mp_doc_failed(doc)) {
		rc = MP_ENOMEM;
		goto out;
	}
	*out = doc;
	doc = NULL;
	rc = 0;
out:
	mp_doc_destroy(doc);
	ld_close(&ld);
	return rc;
}
