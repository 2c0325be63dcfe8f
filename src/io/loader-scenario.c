/* Scenarios (model + prefill and decode phases + traffic) and traffic
 * specs (uniform, Zipf, hot set, observed loads). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "loader-internal.h"
#include "moeplan/history.h"

#define MAX_TOKENS 1e12
#define MAX_REQUESTS_PER_GPU 1e7
#define MAX_TOKENS_PER_REQUEST 1024.0
#define MAX_TIME_LIMIT_S 604800.0 /* a week */
#define MAX_ZIPF_S 100.0

#define FIELD(key) ld_field(field, sizeof(field), what, (key))

/* ---------------------------------------------------------------- traffic */

static const char *const traffic_kinds[] = {"uniform", "zipf", "hot", "observed", NULL};
static const char *const zipf_keys[] = {"s", "seed", "permute", NULL};
static const char *const hot_keys[] = {"experts", "load", "seed", "permute", NULL};
static const char *const observed_keys[] = {"csv", "loads", "objective", "half_life", "spread_k", NULL};
static const char *const objective_keys[] = {"last", "mean", "recency", "spread", NULL};

/* A series CSV (moeplan-formats(5) "Series"): the history reduced by o to
 * the loads plan uses, their source naming the objective. */
static int load_series_observed(const char *path, const struct mp_objective_options *o,
				struct mp_loads *out, struct mp_diags *diags)
{
	struct mp_history h;
	mp_history_init(&h);
	int rc = mp_load_history(&path, 1, &h, diags);
	if (rc == 0) {
		rc = mp_history_loads(&h, o, out);
	}
	if (rc == 0) {
		char note[160];
		snprintf(note, sizeof(note), "; for the next window: objective %s over %u windows",
			 mp_objective_name(o->kind), h.n_windows);
		const char *base = out->source ? out->source : path;
		const size_t n = strlen(base) + strlen(note) + 1;
		char *src = malloc(n);
		if (!src) {
			rc = MP_ENOMEM;
		} else {
			snprintf(src, n, "%s%s", base, note);
			free(out->source);
			out->source = src;
		}
	}
	mp_history_finish(&h);
	return rc;
}

/* Observed loads from a file named in ld's file (relative to its folder). */
static void load_observed_file(struct ld *ld, const yaml_node_t *node, const char *field,
			       const struct mp_objective_options *o, struct mp_loads *out)
{
	const char *rel = ld_scalar(node);
	if (!rel) {
		ld_error(ld, node, "%s: expected a file name, got %s", field, ld_kind_name(node));
		return;
	}
	bool found = false;
	char *path = ld_resolve_path(ld->path, rel, &found);
	if (!path) {
		ld_fail(ld, MP_ENOMEM);
		return;
	}
	if (!found) {
		char where[512];
		ld_error(ld, node, "%s: cannot find '%s' (%s)", field, rel,
			 ld_looked_in(ld->path, rel, where, sizeof(where)));
		free(path);
		return;
	}
	struct mp_objective_options def;
	mp_objective_options_init(&def);
	int rc = mp_loads_is_series(path) ? load_series_observed(path, o ? o : &def, out, ld->diags)
					  : mp_load_loads(path, out, ld->diags);
	if (rc != 0) {
		ld_fail(ld, rc);
	}
	free(path);
}

/* observed: {objective, half_life, spread_k}: how a series is reduced. */
static void parse_objective(struct ld *ld, const yaml_node_t *value, const char *sub,
			    struct mp_objective_options *o)
{
	char field[256];
	int kind = (int)o->kind;
	if (ld_get_enum(ld, ld_get(ld, value, "objective"), ld_field(field, sizeof(field), sub, "objective"),
			objective_keys, &kind)) {
		o->kind = (enum mp_objective)kind;
	}
	ld_get_real(ld, ld_get(ld, value, "half_life"), ld_field(field, sizeof(field), sub, "half_life"),
		    NULL, 0.0, true, MP_MAX_WINDOWS, &o->half_life); /* windows: a plain number */
	ld_get_real(ld, ld_get(ld, value, "spread_k"), ld_field(field, sizeof(field), sub, "spread_k"),
		    NULL, 0.0, false, 100.0, &o->k);
}

void ld_parse_traffic(struct ld *ld, const yaml_node_t *node, const char *what,
		      struct mp_traffic *out)
{
	char field[256];
	char sub[256];
	const char *label = what && what[0] ? what : "traffic";
	struct mp_traffic t;
	mp_traffic_init(&t);
	if (node && node->type == YAML_SCALAR_NODE) {
		const char *text = ld_scalar(node);
		if (strcmp(text, "uniform") == 0) {
			t.kind = MP_TRAFFIC_UNIFORM;
		} else {
			/* A file of observed loads (CSV, YAML or JSON). */
			t.kind = MP_TRAFFIC_OBSERVED;
			load_observed_file(ld, node, label, NULL, &t.observed);
		}
		goto done;
	}
	if (!ld_check_map(ld, node, what, traffic_kinds)) {
		goto done;
	}
	size_t n = (size_t)(node->data.mapping.pairs.top - node->data.mapping.pairs.start);
	if (n != 1) {
		ld_error(ld, node, "%s: give exactly one of uniform, zipf, hot, observed (got %zu fields)",
			 label, n);
		goto done;
	}
	const yaml_node_pair_t *pair = node->data.mapping.pairs.start;
	const char *kind = ld_scalar(ld_node(ld, pair->key));
	const yaml_node_t *value = ld_node(ld, pair->value);
	if (!kind) {
		goto done;
	}
	snprintf(sub, sizeof(sub), "%s", ld_field(field, sizeof(field), what, kind));
	if (strcmp(kind, "uniform") == 0) {
		t.kind = MP_TRAFFIC_UNIFORM;
		if (!ld_is_null(value) &&
		    !(value->type == YAML_MAPPING_NODE &&
		      value->data.mapping.pairs.top == value->data.mapping.pairs.start)) {
			ld_error(ld, value, "%s: takes no parameters, got %s", sub, ld_kind_name(value));
		}
	} else if (strcmp(kind, "zipf") == 0) {
		t.kind = MP_TRAFFIC_ZIPF;
		if (ld_check_map(ld, value, sub, zipf_keys)) {
			ld_get_real(ld, ld_require(ld, value, sub, "s"), ld_field(field, sizeof(field), sub, "s"),
				    NULL, 0.0, false, MAX_ZIPF_S, &t.zipf_s);
			ld_get_u64(ld, ld_get(ld, value, "seed"), ld_field(field, sizeof(field), sub, "seed"),
				   0, UINT64_MAX, &t.seed);
			ld_get_bool(ld, ld_get(ld, value, "permute"),
				    ld_field(field, sizeof(field), sub, "permute"), &t.permute);
		}
	} else if (strcmp(kind, "hot") == 0) {
		t.kind = MP_TRAFFIC_HOT;
		if (ld_check_map(ld, value, sub, hot_keys)) {
			ld_get_fraction(ld, ld_require(ld, value, sub, "experts"),
				       ld_field(field, sizeof(field), sub, "experts"), &t.hot_experts);
			ld_get_fraction(ld, ld_require(ld, value, sub, "load"),
				       ld_field(field, sizeof(field), sub, "load"), &t.hot_load);
			ld_get_u64(ld, ld_get(ld, value, "seed"), ld_field(field, sizeof(field), sub, "seed"),
				   0, UINT64_MAX, &t.seed);
			ld_get_bool(ld, ld_get(ld, value, "permute"),
				    ld_field(field, sizeof(field), sub, "permute"), &t.permute);
		}
	} else if (strcmp(kind, "observed") == 0) {
		t.kind = MP_TRAFFIC_OBSERVED;
		if (value && value->type == YAML_SCALAR_NODE && !ld_is_null(value)) {
			load_observed_file(ld, value, sub, NULL, &t.observed);
		} else if (ld_check_map(ld, value, sub, observed_keys)) {
			const yaml_node_t *csv = ld_get(ld, value, "csv");
			const yaml_node_t *loads = ld_get(ld, value, "loads");
			if (csv && loads) {
				ld_error(ld, loads, "%s: give either csv or loads, not both", sub);
			} else if (csv) {
				struct mp_objective_options o;
				mp_objective_options_init(&o);
				parse_objective(ld, value, sub, &o);
				load_observed_file(ld, csv, ld_field(field, sizeof(field), sub, "csv"), &o,
						   &t.observed);
			} else if (loads) {
				ld_parse_loads_array(ld, loads, ld_field(field, sizeof(field), sub, "loads"),
						     &t.observed);
			} else {
				ld_error(ld, value, "%s: missing required field 'csv' (or 'loads')", sub);
			}
		}
	}
done:
	mp_traffic_finish(out);
	*out = t;
}

/* A whole file as a traffic spec: a spec mapping, "uniform", a file name,
 * or observed loads themselves (a list of lists, {loads: ...},
 * {logical_count: ...}). A CSV file is observed loads. */
int mp_load_traffic(const char *path, struct mp_traffic *out, struct mp_diags *diags)
{
	size_t len = strlen(path);
	if (len >= 4 && strcasecmp(path + len - 4, ".csv") == 0) {
		struct mp_traffic t;
		mp_traffic_init(&t);
		t.kind = MP_TRAFFIC_OBSERVED;
		int rc = mp_load_loads(path, &t.observed, diags);
		if (rc != 0) {
			mp_traffic_finish(&t);
			return rc;
		}
		mp_traffic_finish(out);
		*out = t;
		return 0;
	}
	struct ld ld;
	int rc = ld_open(&ld, path, diags);
	if (rc != 0) {
		goto out;
	}
	const yaml_node_t *root = ld_root(&ld);
	bool spec = root->type == YAML_SCALAR_NODE ||
		    (root->type == YAML_MAPPING_NODE && !ld_has(&ld, root, "loads") &&
		     !ld_has(&ld, root, "logical_count"));
	struct mp_traffic t;
	mp_traffic_init(&t);
	if (spec) {
		ld_parse_traffic(&ld, root, "", &t);
	} else {
		t.kind = MP_TRAFFIC_OBSERVED;
		ld_parse_loads_array(&ld, root, "", &t.observed);
	}
	rc = ld.status;
	if (rc == 0) {
		mp_traffic_finish(out);
		*out = t;
	} else {
		mp_traffic_finish(&t);
	}
out:
	ld_close(&ld);
	return rc;
}

/* --------------------------------------------------------------- scenario */

static const char *const scenario_keys[] = {
	"name", "model", "traffic", "time_limit", "prefill", "decode", "search", "engine", NULL,
};
static const char *const search_keys[] = {
	"gpus", "request_rate", "isl", "osl", "cached_fraction", "tpot", "ttft", "batches",
	"grid_ratio", "chunk_unit", "acceptance", NULL,
};
static const char *const phase_keys[] = {
	"hardware", "gpus", "ep", "ep_min", "ep_max", "slots", "chunk_tokens",
	"context_tokens", "requests_per_gpu", "tokens_per_request", "node_policy", "slo",
	"acceptance", "overlap", "attention", "isl", "osl", NULL,
};
static const char *const slo_keys[] = {"tpot", "ttft", NULL};
static const char *const slot_rules[] = {"min_redundant", "per_gpu", "fixed_per_gpu", NULL};
static const char *const slot_keys_all[] = {"rule", "min_redundant", "per_gpu", "slots_per_gpu", NULL};
static const char *const slot_keys_rule[][3] = {
	[MP_SLOTS_MIN_REDUNDANT] = {"rule", "min_redundant", NULL},
	[MP_SLOTS_PER_GPU] = {"rule", "per_gpu", NULL},
	[MP_SLOTS_FIXED_PER_GPU] = {"rule", "slots_per_gpu", NULL},
};

static void parse_slots(struct ld *ld, const yaml_node_t *node, const char *what,
			struct mp_phase_spec *p, const yaml_node_t **fixed_node)
{
	char field[256];
	if (node->type != YAML_MAPPING_NODE) {
		ld_check_map(ld, node, what, slot_keys_all);
		return;
	}
	int rule = -1;
	const yaml_node_t *rule_node = ld_require(ld, node, what, "rule");
	bool rule_ok = rule_node && ld_get_enum(ld, rule_node, FIELD("rule"), slot_rules, &rule);
	ld_check_map(ld, node, what, rule_ok ? slot_keys_rule[rule] : slot_keys_all);
	if (!rule_ok) {
		return;
	}
	p->slot_rule = (enum mp_slot_rule)rule;
	switch (p->slot_rule) {
	case MP_SLOTS_MIN_REDUNDANT:
		ld_get_u32(ld, ld_get(ld, node, "min_redundant"), FIELD("min_redundant"), 0,
			   MP_MAX_EXPERTS, &p->min_redundant);
		break;
	case MP_SLOTS_PER_GPU:
		ld_get_u32(ld, ld_get(ld, node, "per_gpu"), FIELD("per_gpu"), 0,
			   MP_MAX_SLOTS_PER_GPU, &p->redundant_per_gpu);
		break;
	case MP_SLOTS_FIXED_PER_GPU:
		*fixed_node = ld_require(ld, node, what, "slots_per_gpu");
		if (!ld_get_u32(ld, *fixed_node, FIELD("slots_per_gpu"), 1, MP_MAX_SLOTS_PER_GPU,
				&p->slots_per_gpu)) {
			*fixed_node = NULL;
		}
		break;
	}
}

static void load_hardware(struct ld *ld, const yaml_node_t *node, const char *what,
			  struct mp_phase_spec *p)
{
	char field[256];
	if (node->type == YAML_MAPPING_NODE) {
		ld_parse_hardware(ld, node, FIELD("hardware"), &p->hardware);
		return;
	}
	const char *rel = ld_scalar(node);
	if (!rel) {
		ld_error(ld, node, "%s: expected a file name or a mapping, got %s", FIELD("hardware"),
			 ld_kind_name(node));
		return;
	}
	bool found = false;
	char *path = ld_resolve_path(ld->path, rel, &found);
	if (!path) {
		ld_fail(ld, MP_ENOMEM);
		return;
	}
	if (!found) {
		char where[512];
		ld_error(ld, node, "%s: cannot find '%s' (%s)", FIELD("hardware"), rel,
			 ld_looked_in(ld->path, rel, where, sizeof(where)));
		free(path);
		return;
	}
	int rc = mp_load_hardware(path, &p->hardware, ld->diags);
	if (rc != 0) {
		ld_fail(ld, rc);
	}
	free(p->hardware_path);
	p->hardware_path = path;
}

static struct mp_field_pos node_pos(const yaml_node_t *node)
{
	if (!node) {
		return (struct mp_field_pos){0};
	}
	return (struct mp_field_pos){.line = (int)node->start_mark.line + 1,
				     .column = (int)node->start_mark.column + 1};
}

/* The serving-step fields of a phase (issue 12): slo {tpot, ttft},
 * acceptance, overlap, attention. */
static void parse_step_fields(struct ld *ld, const yaml_node_t *node, const char *what, bool decode,
			      struct mp_phase_spec *p)
{
	char field[256];
	const yaml_node_t *slo = ld_get(ld, node, "slo");
	if (slo) {
		char sub[256];
		snprintf(sub, sizeof(sub), "%s", FIELD("slo"));
		if (ld_check_map(ld, slo, sub, slo_keys)) {
			char f2[256];
			ld_get_real(ld, ld_get(ld, slo, "tpot"), ld_field(f2, sizeof(f2), sub, "tpot"),
				    "seconds", 0.0, true, MAX_TIME_LIMIT_S, &p->slo_tpot_s);
			ld_get_real(ld, ld_get(ld, slo, "ttft"), ld_field(f2, sizeof(f2), sub, "ttft"),
				    "seconds", 0.0, true, MAX_TIME_LIMIT_S, &p->slo_ttft_s);
		}
	}
	ld_get_real(ld, ld_get(ld, node, "acceptance"), FIELD("acceptance"), NULL, 0.0, false, 1.0,
		    &p->acceptance);
	static const char *const overlaps[] = {"none", "two_batch", "full", NULL};
	int o = 0;
	if (ld_get_enum(ld, ld_get(ld, node, "overlap"), FIELD("overlap"), overlaps, &o)) {
		p->overlap = (enum mp_step_overlap)o;
	}
	p->pos_overlap = node_pos(ld_get(ld, node, "overlap"));
	const yaml_node_t *att = ld_get(ld, node, "attention");
	const char *a = att ? ld_scalar(att) : NULL;
	if (att && a && strcmp(a, "dp") == 0) {
		p->attention_tp = 1;
	} else if (att && a && strncmp(a, "tp:", 3) == 0) {
		char *end = NULL;
		unsigned long tp = strtoul(a + 3, &end, 10);
		if (!end || *end || end == a + 3 || tp < 1 || tp > MP_MAX_GPUS ||
		    (p->ep && p->ep % tp != 0)) {
			ld_error(ld, att, "%s: expected dp or tp:N with N from 1 to %u dividing ep, got '%s'",
				 FIELD("attention"), MP_MAX_GPUS, a);
		} else {
			p->attention_tp = (uint32_t)tp;
		}
	} else if (att) {
		ld_error(ld, att, "%s: expected dp or tp:N, got '%s'", FIELD("attention"), a ? a : "a collection");
	}
	(void)decode;
}


static void parse_phase(struct ld *ld, const yaml_node_t *node, const char *what, bool decode,
			const struct mp_model *model, bool model_ok, struct mp_phase_spec *p)
{
	char field[256];
	if (!ld_check_map(ld, node, what, phase_keys)) {
		return;
	}
	const yaml_node_t *hw = ld_require(ld, node, what, "hardware");
	if (hw) {
		load_hardware(ld, hw, what, p);
	}
	const yaml_node_t *gpus = ld_get(ld, node, "gpus");
	const yaml_node_t *ep = ld_get(ld, node, "ep");
	const yaml_node_t *ep_min = ld_get(ld, node, "ep_min");
	const yaml_node_t *ep_max = ld_get(ld, node, "ep_max");
	bool gpus_ok = ld_get_u32(ld, gpus, FIELD("gpus"), 1, MP_MAX_GPUS, &p->gpus) && gpus;
	bool ep_ok = ld_get_u32(ld, ep, FIELD("ep"), 1, MP_MAX_GPUS, &p->ep) && ep;
	bool min_ok = ld_get_u32(ld, ep_min, FIELD("ep_min"), 1, MP_MAX_GPUS, &p->ep_min) && ep_min;
	bool max_ok = ld_get_u32(ld, ep_max, FIELD("ep_max"), 1, MP_MAX_GPUS, &p->ep_max) && ep_max;
	if (ep && (ep_min || ep_max)) {
		ld_error(ld, ep, "%s: give either ep or ep_min/ep_max, not both", FIELD("ep"));
	}
	if (ep || ep_max) {
		p->ep_max_default = false;
	}
	p->pos_phase = node_pos(node);
	p->pos_gpus = node_pos(gpus);
	p->pos_ep = node_pos(ep);
	p->pos_ep_max = node_pos(ep_max);
	p->pos_hardware = node_pos(hw);
	if (ep_ok) {
		p->ep_min = p->ep;
		p->ep_max = p->ep;
	}
	/* The default ep_min (prefill's 2) never exceeds the GPUs or the
	 * ep_max the file gives: one GPU is a valid deployment. */
	if (!ep_min && !ep) {
		if (gpus_ok && p->ep_min > p->gpus) {
			p->ep_min = p->gpus;
		}
		if (max_ok && p->ep_min > p->ep_max) {
			p->ep_min = p->ep_max;
		}
	}
	if (p->ep_min && p->ep_max && p->ep_min > p->ep_max && (min_ok || max_ok)) {
		ld_error(ld, min_ok ? ep_min : ep_max, "%s: ep_min (%u) is more than ep_max (%u)",
			 FIELD(min_ok ? "ep_min" : "ep_max"), p->ep_min, p->ep_max);
	}
	if (gpus_ok && ep_ok && p->ep > p->gpus) {
		ld_error(ld, ep, "%s: %u is more than gpus (%u)", FIELD("ep"), p->ep, p->gpus);
	} else if (gpus_ok && min_ok && p->ep_min > p->gpus) {
		ld_error(ld, ep_min, "%s: %u is more than gpus (%u)", FIELD("ep_min"), p->ep_min, p->gpus);
	}
	const yaml_node_t *slots = ld_get(ld, node, "slots");
	const yaml_node_t *fixed = NULL;
	if (slots) {
		char sub[256];
		snprintf(sub, sizeof(sub), "%s", FIELD("slots"));
		parse_slots(ld, slots, sub, p, &fixed);
	}
	if (fixed && model_ok) {
		char sub[256];
		snprintf(sub, sizeof(sub), "%s", FIELD("slots"));
		const uint32_t e = model->routed_experts;
		uint32_t widest = p->ep_max ? p->ep_max : (p->gpus ? p->gpus : 0);
		if (p->slots_per_gpu > e) {
			ld_error(ld, fixed, "%s.slots_per_gpu: %u is more than the model's %u routed experts "
				 "(a GPU holds at most one replica of an expert)", sub, p->slots_per_gpu, e);
		} else if (widest && (uint64_t)p->slots_per_gpu * widest < e) {
			ld_error(ld, fixed, "%s.slots_per_gpu: %u slots on at most %u GPUs hold fewer than the "
				 "model's %u routed experts", sub, p->slots_per_gpu, widest, e);
		}
	}
	const yaml_node_t *chunk = decode ? ld_get(ld, node, "chunk_tokens")
					  : ld_require(ld, node, what, "chunk_tokens");
	ld_get_count(ld, chunk, FIELD("chunk_tokens"), 0.0, true, MAX_TOKENS, &p->chunk_tokens);
	const yaml_node_t *isl = ld_get(ld, node, "isl");
	const yaml_node_t *osl = ld_get(ld, node, "osl");
	ld_get_count(ld, isl, FIELD("isl"), 0.0, true, MAX_TOKENS, &p->isl);
	ld_get_count(ld, osl, FIELD("osl"), 0.0, true, MAX_TOKENS, &p->osl);
	/* Decode holds each request's context: given, or from the prompt
	 * and output lengths (the mean over a request's decode: isl + osl / 2). */
	const yaml_node_t *ctx = decode && !isl ? ld_require(ld, node, what, "context_tokens")
						: ld_get(ld, node, "context_tokens");
	ld_get_count(ld, ctx, FIELD("context_tokens"), 0.0, false, MAX_TOKENS, &p->context_tokens);
	if (decode && !ctx && isl) {
		p->context_tokens = p->isl + p->osl / 2.0;
	}
	/* Decode's batch: given, or (absent) the largest that fits in HBM and
	 * meets slo.tpot, chosen per width (widths.h). */
	const yaml_node_t *req = ld_get(ld, node, "requests_per_gpu");
	ld_get_count(ld, req, FIELD("requests_per_gpu"), 0.0, true, MAX_REQUESTS_PER_GPU,
		    &p->requests_per_gpu);
	parse_step_fields(ld, node, what, decode, p);
	/* Default: one verified token plus one drafted per drafter stage,
	 * the same default as fit, roofline and simulate (the model's
	 * drafter weights are counted in HBM, so it is assumed in use). */
	const yaml_node_t *tpr = ld_get(ld, node, "tokens_per_request");
	if (!tpr && model_ok) {
		p->tokens_per_request = 1.0 + (double)model->drafter.moe_stages;
	}
	ld_get_real(ld, tpr, FIELD("tokens_per_request"), NULL, 1.0, false, MAX_TOKENS_PER_REQUEST,
		    &p->tokens_per_request);
	static const char *const node_policies[] = {"report", "balance", "group_limited", NULL};
	const yaml_node_t *np = ld_get(ld, node, "node_policy");
	int policy = MP_NODES_BALANCE;
	if (np && ld_get_enum(ld, np, FIELD("node_policy"), node_policies, &policy)) {
		p->node_policy = (enum mp_node_policy)policy;
		if (policy == MP_NODES_GROUP_LIMITED && model_ok && model->n_groups == 0) {
			ld_error(ld, np, "%s: group_limited keeps the model's expert groups within nodes, "
				 "but the model has no groups (n_groups)", FIELD("node_policy"));
		}
	}
}

/* The `search:` block (issue 13; scenario.h, struct mp_search_spec). */
static void parse_search(struct ld *ld, const yaml_node_t *node, struct mp_search_spec *out)
{
	char field[256];
	const char *what = "search";
	out->given = true;
	if (!ld_check_map(ld, node, what, search_keys)) {
		return;
	}
	const yaml_node_t *gpus = ld_get(ld, node, "gpus");
	const yaml_node_t *rate = ld_get(ld, node, "request_rate");
	ld_get_u32(ld, gpus, FIELD("gpus"), 1, MP_MAX_GPUS, &out->gpus);
	ld_get_real(ld, rate, FIELD("request_rate"), NULL, 0.0, true, 1e12, &out->request_rate);
	if (gpus && rate) {
		ld_error(ld, rate, "%s: give either gpus (a budget) or request_rate, not both",
			 FIELD("request_rate"));
	}
	ld_get_count(ld, ld_get(ld, node, "isl"), FIELD("isl"), 0.0, true, MAX_TOKENS, &out->isl);
	ld_get_count(ld, ld_get(ld, node, "osl"), FIELD("osl"), 0.0, true, MAX_TOKENS, &out->osl);
	const yaml_node_t *cached = ld_get(ld, node, "cached_fraction");
	if (cached && !ld_is_null(cached)) {
		double c = -1;
		if (ld_get_real(ld, cached, FIELD("cached_fraction"), NULL, 0.0, false, 1.0, &c)) {
			if (c >= 1.0) {
				ld_error(ld, cached, "%s: expected a number in [0, 1), got '%s'",
					 FIELD("cached_fraction"), ld_scalar(cached));
			} else {
				out->cached_fraction = c;
			}
		}
	}
	ld_get_real(ld, ld_get(ld, node, "tpot"), FIELD("tpot"), "seconds", 0.0, true,
		    MAX_TIME_LIMIT_S, &out->tpot_s);
	ld_get_real(ld, ld_get(ld, node, "ttft"), FIELD("ttft"), "seconds", 0.0, true,
		    MAX_TIME_LIMIT_S, &out->ttft_s);
	ld_get_real(ld, ld_get(ld, node, "acceptance"), FIELD("acceptance"), NULL, 0.0, false, 1.0,
		    &out->acceptance);
	static const char *const batches[] = {"geometric", "all", NULL};
	int b = 0;
	if (ld_get_enum(ld, ld_get(ld, node, "batches"), FIELD("batches"), batches, &b)) {
		out->all_batches = b == 1;
	}
	ld_get_real(ld, ld_get(ld, node, "grid_ratio"), FIELD("grid_ratio"), NULL, 1.0, true, 16.0,
		    &out->grid_ratio);
	ld_get_count(ld, ld_get(ld, node, "chunk_unit"), FIELD("chunk_unit"), 1.0, false,
		    MAX_TOKENS, &out->chunk_unit_tokens);
}

/* "plans/default.yaml" -> "default". */
static char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *start = slash ? slash + 1 : path;
	const char *dot = strrchr(start, '.');
	size_t len = dot && dot != start ? (size_t)(dot - start) : strlen(start);
	char *name = malloc(len + 1);
	if (name) {
		memcpy(name, start, len);
		name[len] = '\0';
	}
	return name;
}

/* engine: even (an ideal engine), sglang or vllm (built in), or a profile
 * file relative to the scenario; its kernels become the phases'. Whether
 * each phase's overlap is one it runs is checked when the engine is final
 * (mp_scenario_set_engine: `--engine` on the command line wins). */
static void parse_engine(struct ld *ld, const yaml_node_t *root, struct mp_scenario *s)
{
	const yaml_node_t *node = ld_get(ld, root, "engine");
	const char *name = node ? ld_scalar(node) : NULL;
	if (!node) {
		return;
	}
	if (!name || ld_is_null(node)) {
		ld_error(ld, node, "engine: expected even, sglang, vllm or a profile file, got %s",
			 ld_kind_name(node));
		return;
	}
	if (strcmp(name, "even") == 0) {
		return;
	}
	int rc = mp_engine_builtin(name, &s->engine);
	if (rc == MP_EINVAL) {
		bool found = false;
		char *path = ld_resolve_path(ld->path, name, &found);
		if (!path) {
			ld_fail(ld, MP_ENOMEM);
			return;
		}
		if (!found) {
			char where[512];
			ld_error(ld, node, "engine: '%s' is not even, sglang or vllm, and no such file (%s)",
				 name, ld_looked_in(ld->path, name, where, sizeof(where)));
			free(path);
			return;
		}
		rc = mp_load_engine_profile(path, &s->engine, ld->diags);
		free(path);
	}
	if (rc != 0) {
		ld_fail(ld, rc);
		return;
	}
	struct mp_phase_spec *specs[] = {&s->prefill, &s->decode};
	for (int i = 0; i < 2; i++) {
		specs[i]->kernel = mp_engine_kernel(&s->engine, i == 0);
	}
}

/* A model, hardware, Hugging Face config or plan given where a scenario is
 * expected would otherwise get one "unknown field" per key: say what it
 * is, once (as loads files do). Returns true after reporting. */
static bool refuse_other_file(struct ld *ld, const yaml_node_t *root)
{
	const char *key = NULL, *instead = NULL;
	const char *kind = ld_file_kind(ld, root, &key, &instead);
	if (!kind) {
		return false;
	}
	ld_error(ld, root, "this is %s (it has '%s'), not a scenario: plan takes a scenario "
		 "(model, traffic, prefill and decode; see plans/default.yaml); give %s",
		 kind, key, instead);
	return true;
}


static void parse_scenario(struct ld *ld, const yaml_node_t *root, struct mp_scenario *s)
{
	char field[256];
	const char *what = "";
	if (refuse_other_file(ld, root) || !ld_check_map(ld, root, "", scenario_keys)) {
		return;
	}
	ld_get_string(ld, ld_get(ld, root, "name"), "name", &s->name);
	if (!s->name) {
		s->name = base_name(ld->path);
		if (!s->name) {
			ld_fail(ld, MP_ENOMEM);
			return;
		}
	}
	s->path = ld_strdup(ld->path);
	if (!s->path) {
		ld_fail(ld, MP_ENOMEM);
		return;
	}
	bool model_ok = false;
	const yaml_node_t *model = ld_require(ld, root, "", "model");
	if (model && model->type == YAML_MAPPING_NODE) {
		size_t before = ld->errors;
		ld_parse_model(ld, model, "model", &s->model);
		model_ok = ld->errors == before && ld->status == 0;
	} else if (model && !ld_scalar(model)) {
		ld_error(ld, model, "model: expected a file name or a mapping, got %s", ld_kind_name(model));
	} else if (model) {
		const char *rel = ld_scalar(model);
		bool found = false;
		char *path = ld_resolve_path(ld->path, rel, &found);
		if (!path) {
			ld_fail(ld, MP_ENOMEM);
			return;
		}
		if (!found) {
			char where[512];
			ld_error(ld, model, "model: cannot find '%s' (%s)", rel,
				 ld_looked_in(ld->path, rel, where, sizeof(where)));
			free(path);
		} else {
			int rc = mp_load_model(path, &s->model, ld->diags);
			if (rc != 0) {
				ld_fail(ld, rc);
			}
			model_ok = rc == 0;
			s->model_path = path;
		}
	}
	const yaml_node_t *traffic = ld_get(ld, root, "traffic");
	if (traffic) {
		ld_parse_traffic(ld, traffic, "traffic", &s->traffic);
		if (model_ok && s->traffic.kind == MP_TRAFFIC_OBSERVED && s->traffic.observed.w &&
		    s->traffic.observed.n_experts != s->model.routed_experts) {
			ld_error(ld, traffic, "traffic: the observed loads have %u experts per layer, "
				 "the model has %u routed experts", s->traffic.observed.n_experts,
				 s->model.routed_experts);
		}
	}
	ld_get_real(ld, ld_get(ld, root, "time_limit"), FIELD("time_limit"), "seconds", 0.0, true,
		    MAX_TIME_LIMIT_S, &s->time_limit_s);
	const yaml_node_t *prefill = ld_require(ld, root, "", "prefill");
	if (prefill) {
		parse_phase(ld, prefill, "prefill", false, &s->model, model_ok, &s->prefill);
	}
	const yaml_node_t *decode = ld_require(ld, root, "", "decode");
	if (decode) {
		parse_phase(ld, decode, "decode", true, &s->model, model_ok, &s->decode);
	}
	if (ld_has(ld, root, "search")) {
		const yaml_node_t *search = ld_get(ld, root, "search");
		if (search) {
			parse_search(ld, search, &s->search);
		} else {
			s->search.given = true;
		}
	}
	parse_engine(ld, root, s);
}

int mp_load_scenario(const char *path, struct mp_scenario *out, struct mp_diags *diags)
{
	struct ld ld;
	int rc = ld_open(&ld, path, diags);
	if (rc == 0) {
		struct mp_scenario s;
		mp_scenario_init(&s);
		parse_scenario(&ld, ld_root(&ld), &s);
		rc = ld.status;
		if (rc == 0) {
			mp_scenario_finish(out);
			*out = s;
		} else {
			mp_scenario_finish(&s);
		}
	}
	ld_close(&ld);
	return rc;
}
