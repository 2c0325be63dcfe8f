/* SGLang's own rules for an --init-expert-location map, re-implemented
 * from its source (sgl-project/sglang at 01fec5c2e61f,
 * python/sglang/srt/eplb/expert_location.py) so that tests can say "SGLang
 * accepts this file" without SGLang:
 *  - compute_initial_expert_location_metadata: the file is read as JSON
 *    only when its name ends in ".json" (else torch.load for ".pt", else
 *    the text itself is parsed as JSON), and its keys are passed to
 *    init_by_mapping, whose only parameter is physical_to_logical_map;
 *  - ModelConfigForExpertLocation (models/deepseek_v2.py
 *    get_model_config_for_expert_location): num_layers =
 *    config.num_hidden_layers; rows are looked up by absolute layer id
 *    (expert_location_dispatch.py ExpertLocationDispatchInfo.init_new), so
 *    the map must have exactly that many rows for every row to land on its
 *    own layer;
 *  - _init_common: num_physical_experts = num_logical +
 *    ep_num_redundant_experts, a multiple of ep_size; __post_init__ asserts
 *    the width;
 *  - _compute_logical_to_all_physical_map indexes a list per logical
 *    expert by the id (ids in 0..num_logical-1; a negative id would index
 *    from the end in Python);
 *  - compute_logical_to_rank_dispatch_physical_map (static dispatch):
 *    _fair_choices(candidates, ...) divides by len(candidates), so every
 *    logical expert needs a physical one in every row.
 * The JSON is parsed here by hand (a tiny reader of the one key), not by
 * moeplan's loader. */
#ifndef MOEPLAN_TESTS_SGLANG_CHECK_H
#define MOEPLAN_TESTS_SGLANG_CHECK_H

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sglang_map {
	uint32_t rows;
	uint32_t width;
	long *v; /* [rows][width] */
};

static inline void sglang_map_free(struct sglang_map *m)
{
	free(m->v);
	m->v = NULL;
}

static inline const char *sg_ws(const char *p)
{
	while (*p && isspace((unsigned char)*p)) {
		p++;
	}
	return p;
}

/* {"physical_to_logical_map": [[ints], ...]} and no other key. Returns
 * NULL when well formed, else why not. */
static inline const char *sglang_parse(const char *text, struct sglang_map *m)
{
	static const char key[] = "\"physical_to_logical_map\"";
	*m = (struct sglang_map){0};
	const char *p = sg_ws(text);
	if (*p++ != '{') {
		return "not a JSON object";
	}
	p = sg_ws(p);
	if (strncmp(p, key, sizeof(key) - 1) != 0) {
		return "the first key is not physical_to_logical_map";
	}
	p = sg_ws(p + sizeof(key) - 1);
	if (*p++ != ':') {
		return "no ':'";
	}
	p = sg_ws(p);
	if (*p++ != '[') {
		return "the map is not a list";
	}
	size_t cap = 0;
	size_t n = 0;
	for (;;) {
		p = sg_ws(p);
		if (*p == ']') {
			p++;
			break;
		}
		if (*p++ != '[') {
			return "a row is not a list";
		}
		uint32_t w = 0;
		for (;;) {
			p = sg_ws(p);
			char *end = NULL;
			long v = strtol(p, &end, 10);
			if (end == p) {
				return "a cell is not an integer";
			}
			p = end;
			if (n == cap) {
				cap = cap ? 2 * cap : 1024;
				m->v = realloc(m->v, cap * sizeof(long));
			}
			m->v[n++] = v;
			w++;
			p = sg_ws(p);
			if (*p == ',') {
				p++;
				continue;
			}
			if (*p++ != ']') {
				return "a row does not end with ']'";
			}
			break;
		}
		if (m->rows == 0) {
			m->width = w;
		} else if (w != m->width) {
			return "rows of different widths (torch.tensor would refuse the ragged list)";
		}
		m->rows++;
		p = sg_ws(p);
		if (*p == ',') {
			p++;
		}
	}
	p = sg_ws(p);
	if (*p++ != '}') {
		return "another key after physical_to_logical_map (init_by_mapping takes no other)";
	}
	p = sg_ws(p);
	return *p ? "text after the object" : NULL;
}

/* NULL when SGLang takes `path` for a model of `hidden` layers and
 * `experts` logical experts with `redundant` redundant ones on `ep` GPUs;
 * else the rule it breaks. The parsed map is left in *m (caller frees). */
static inline const char *sglang_accepts(const char *path, const char *text, uint32_t hidden,
					 uint32_t experts, uint32_t redundant, uint32_t ep,
					 struct sglang_map *m)
{
	size_t len = strlen(path);
	*m = (struct sglang_map){0};
	if (len < 5 || strcmp(path + len - 5, ".json") != 0) {
		return "the name does not end in .json";
	}
	const char *why = sglang_parse(text, m);
	if (why) {
		return why;
	}
	if (m->rows != hidden) {
		return "rows != num_hidden_layers";
	}
	if (m->width != experts + redundant) {
		return "width != num_logical + ep_num_redundant_experts";
	}
	if (m->width % ep != 0) {
		return "num_physical_experts % ep_size != 0";
	}
	bool *seen = calloc(experts, sizeof(bool));
	for (uint32_t r = 0; r < m->rows; r++) {
		memset(seen, 0, experts * sizeof(bool));
		for (uint32_t s = 0; s < m->width; s++) {
			long v = m->v[(size_t)r * m->width + s];
			if (v < 0 || v >= (long)experts) {
				free(seen);
				return "an id out of range";
			}
			seen[v] = true;
		}
		for (uint32_t e = 0; e < experts; e++) {
			if (!seen[e]) {
				free(seen);
				return "a logical expert with no physical expert";
			}
		}
	}
	free(seen);
	return NULL;
}

#endif
