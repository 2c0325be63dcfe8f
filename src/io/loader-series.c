/* moeplan: loads as a history of windows (moeplan/history.h): a series CSV
 * (moeplan-formats(5) "Series": '#' comments, the first kept as the source,
 * then rows `iteration,layer,load_0,...,load_{E-1}`, one block of rows per
 * iteration, the format of plans/traces/NAME.series.csv), or several load
 * files given in time order (each one window, anything mp_load_loads reads,
 * such as SGLang's recorder dumps). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loader-internal.h"
#include "moeplan/history.h"

/* The parse state of one series CSV. */
struct series {
	struct ld ld;
	struct mp_history *out;
	char *source;
	double *row;      /* the current block: [n_layers][cols] */
	uint32_t *layers; /* the current block's layer ids */
	uint32_t *first;  /* the first block's layer ids */
	uint32_t n_layers, n_first, cols, cap;
	uint64_t iteration;
	bool in_block;
	int block_line;   /* the line the current block starts on */
	uint32_t blocks;  /* blocks of this file appended so far */
};

/* "# columns: iteration,layer,...": true when a comment line says the file is a series. */
static bool series_comment(const char *s, const char *stop)
{
	static const char key[] = "columns:";
	s++;
	while (s < stop && (*s == ' ' || *s == '\t')) {
		s++;
	}
	if ((size_t)(stop - s) < sizeof(key) - 1 || strncasecmp(s, key, sizeof(key) - 1) != 0) {
		return false;
	}
	s += sizeof(key) - 1;
	while (s < stop && (*s == ' ' || *s == '\t')) {
		s++;
	}
	return (size_t)(stop - s) >= 15 && strncasecmp(s, "iteration,layer", 15) == 0;
}

bool mp_loads_is_series(const char *path)
{
	/* regular files only: a pipe's bytes are read once, by the loader
	 * (which refuses a series it is given that way) */
	struct stat st;
	if (strcmp(path, "-") == 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		return false;
	}
	FILE *f = fopen(path, "r");
	if (!f) {
		return false;
	}
	char line[512];
	bool yes = false;
	/* the comment lines at the top */
	while (fgets(line, sizeof(line), f) && line[0] == '#') {
		if (series_comment(line, line + strcspn(line, "\r\n"))) {
			yes = true;
			break;
		}
	}
	fclose(f);
	return yes;
}

/* One integer cell (iteration or layer id) at [a, b). */
static bool series_int(struct series *sr, const char *a, const char *b, int line, int column,
		       const char *what, uint64_t max, uint64_t *out)
{
	char buf[32];
	size_t len = (size_t)(b - a);
	if (len == 0 || len >= sizeof(buf)) {
		ld_error_at(&sr->ld, line, column, "%s must be an integer from 0 to %llu", what,
			    (unsigned long long)max);
		return false;
	}
	memcpy(buf, a, len);
	buf[len] = '\0';
	if (ld_parse_u64(buf, out) != LDQ_OK || *out > max) {
		ld_error_at(&sr->ld, line, column, "%s '%s' must be an integer from 0 to %llu", what, buf,
			    (unsigned long long)max);
		return false;
	}
	return true;
}

/* One load cell at [a, b). */
static bool series_load(struct series *sr, const char *a, const char *b, int line, int column,
			double *out)
{
	char buf[72];
	size_t len = (size_t)(b - a);
	if (len == 0 || len >= sizeof(buf)) {
		ld_error_at(&sr->ld, line, column, len ? "a load cell longer than %zu characters"
			    : "empty cell (two commas in a row or a comma at the end)", sizeof(buf) - 1);
		return false;
	}
	memcpy(buf, a, len);
	buf[len] = '\0';
	double v = 0.0;
	if (ld_parse_load(buf, &v) != LDQ_OK || !(v >= 0.0) || v > LD_MAX_LOAD) {
		ld_error_at(&sr->ld, line, column, "'%s': field load allowed range 0 to "
			    LD_MAX_LOAD_TEXT " (a count of token->expert assignments)", buf);
		return false;
	}
	*out = v;
	return true;
}

/* Close the current block: check its layers against the first block's and append it as a window. */
static void series_flush(struct series *sr)
{
	if (!sr->in_block || sr->ld.status != 0) {
		sr->in_block = false;
		sr->n_layers = 0;
		return;
	}
	sr->in_block = false;
	if (sr->blocks == 0) {
		sr->first = malloc(sr->n_layers * sizeof(*sr->first));
		if (!sr->first) {
			ld_fail(&sr->ld, MP_ENOMEM);
			return;
		}
		memcpy(sr->first, sr->layers, sr->n_layers * sizeof(*sr->first));
		sr->n_first = sr->n_layers;
	} else if (sr->n_layers != sr->n_first ||
		   memcmp(sr->layers, sr->first, sr->n_layers * sizeof(*sr->first)) != 0) {
		ld_error_at(&sr->ld, sr->block_line, 1, "iteration %llu has %u layers, not the %u layers "
			    "of the first iteration: every iteration lists the same layers",
			    (unsigned long long)sr->iteration, sr->n_layers, sr->n_first);
		sr->n_layers = 0;
		return;
	}
	struct mp_loads w;
	mp_loads_init(&w);
	int rc = mp_loads_alloc(&w, sr->n_layers, sr->cols);
	if (rc == 0) {
		memcpy(w.w, sr->row, (size_t)sr->n_layers * sr->cols * sizeof(double));
		rc = mp_loads_set_layer_ids(&w, sr->layers);
	}
	if (rc == 0 && sr->source && !(w.source = strdup(sr->source))) {
		rc = MP_ENOMEM;
	}
	if (rc == 0 && !(w.path = strdup(sr->ld.path))) {
		rc = MP_ENOMEM;
	}
	if (rc == 0) {
		rc = sr->out->n_windows >= MP_MAX_WINDOWS ? MP_ELIMIT : mp_history_push(sr->out, &w);
		if (rc == MP_ELIMIT) {
			ld_error_at(&sr->ld, sr->block_line, 1, "more than %u windows", MP_MAX_WINDOWS);
			rc = 0;
		} else if (rc == MP_EINVAL) {
			ld_error_at(&sr->ld, sr->block_line, 1, "iteration %llu has other layers or experts "
				    "than the history's first window (%u layers x %u experts): every window "
				    "of a history has the same layers", (unsigned long long)sr->iteration,
				    sr->out->windows[0].n_layers, sr->out->windows[0].n_experts);
			rc = 0;
		}
	}
	sr->blocks++;
	mp_loads_finish(&w);
	ld_fail(&sr->ld, rc);
	sr->n_layers = 0;
}

/* Room for one more row in the current block. */
static bool series_grow(struct series *sr)
{
	if (sr->n_layers < sr->cap) {
		return true;
	}
	uint32_t cap = sr->cap ? 2u * sr->cap : 16u;
	double *row = realloc(sr->row, (size_t)cap * sr->cols * sizeof(*row));
	if (row) {
		sr->row = row;
	}
	uint32_t *layers = realloc(sr->layers, cap * sizeof(*layers));
	if (layers) {
		sr->layers = layers;
	}
	if (!row || !layers) {
		ld_fail(&sr->ld, MP_ENOMEM);
		return false;
	}
	sr->cap = cap;
	return true;
}

/* Split [s, stop) at commas into cells[] (begin, end pairs, blanks trimmed); returns the count. */
static uint32_t series_split(const char *s, const char *stop, const char **cells, uint32_t max)
{
	uint32_t n = 0;
	for (;;) {
		const char *comma = memchr(s, ',', (size_t)(stop - s));
		const char *a = s;
		const char *b = comma ? comma : stop;
		while (a < b && (*a == ' ' || *a == '\t')) {
			a++;
		}
		while (b > a && (b[-1] == ' ' || b[-1] == '\t')) {
			b--;
		}
		if (n < max) {
			cells[2 * n] = a;
			cells[2 * n + 1] = b;
		}
		n++;
		if (!comma) {
			return n;
		}
		s = comma + 1;
	}
}

/* The iteration and layer of a row: a new block when the iteration changes. */
static bool series_keys(struct series *sr, const char **c, int line, const char *start)
{
	uint64_t it = 0;
	uint64_t layer = 0;
	if (!series_int(sr, c[0], c[1], line, (int)(c[0] - start) + 1, "iteration", UINT32_MAX, &it) ||
	    !series_int(sr, c[2], c[3], line, (int)(c[2] - start) + 1, "layer", MP_MAX_LAYERS - 1u, &layer)) {
		return false;
	}
	if (sr->in_block && it != sr->iteration) {
		if (it < sr->iteration) {
			ld_error_at(&sr->ld, line, (int)(c[0] - start) + 1, "iteration %llu after iteration "
				    "%llu: blocks must come in increasing iteration order, each once",
				    (unsigned long long)it, (unsigned long long)sr->iteration);
			return false;
		}
		series_flush(sr);
	}
	if (!sr->in_block) {
		sr->in_block = true;
		sr->iteration = it;
		sr->block_line = line;
	} else if (sr->n_layers > 0 && layer <= sr->layers[sr->n_layers - 1u]) {
		ld_error_at(&sr->ld, line, (int)(c[2] - start) + 1, "layer %llu after layer %u in "
			    "iteration %llu: rows in increasing layer order, each layer once",
			    (unsigned long long)layer, sr->layers[sr->n_layers - 1u],
			    (unsigned long long)it);
		return false;
	}
	if (!series_grow(sr)) {
		return false;
	}
	sr->layers[sr->n_layers] = (uint32_t)layer;
	return true;
}

/* One data row. */
static void series_row(struct series *sr, const char *s, const char *stop, int line,
		       const char *start, const char **cells)
{
	uint32_t n = series_split(s, stop, cells, MP_MAX_EXPERTS + 2u);
	if (n < 3 || n > MP_MAX_EXPERTS + 2u) {
		ld_error_at(&sr->ld, line, 1, "a row is iteration,layer and 1 to %u loads; got %u cells",
			    MP_MAX_EXPERTS, n);
		return;
	}
	if (sr->cols == 0) {
		sr->cols = n - 2u;
	} else if (n - 2u != sr->cols) {
		ld_error_at(&sr->ld, line, (int)(stop - start) + 1, "row has %u loads, expected %u like "
			    "the first row", n - 2u, sr->cols);
		return;
	}
	if (!series_keys(sr, cells, line, start)) {
		return;
	}
	double *r = sr->row + (size_t)sr->n_layers * sr->cols;
	bool ok = true;
	for (uint32_t e = 0; e < sr->cols; e++) {
		const char *a = cells[2 * (e + 2u)];
		ok &= series_load(sr, a, cells[2 * (e + 2u) + 1], line, (int)(a - start) + 1, &r[e]);
	}
	if (ok) {
		sr->n_layers++;
	}
}

/* Walk the lines of text. */
static void series_lines(struct series *sr, const struct ld_text *text, const char **cells)
{
	const char *p = text->data;
	const char *end = text->data + text->size;
	for (int line = 1; p < end && sr->ld.errors <= LD_MAX_ERRORS && sr->ld.status != MP_ENOMEM; line++) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *stop = eol ? eol : end;
		const char *start = p;
		const char *s = p;
		p = eol ? eol + 1 : end;
		if (stop > s && stop[-1] == '\r') {
			stop--;
		}
		while (s < stop && (*s == ' ' || *s == '\t')) {
			s++;
		}
		if (s == stop) {
			continue;
		}
		if (*s == '#') {
			if (!sr->source && !series_comment(s, stop)) {
				const char *t = s + 1;
				while (t < stop && *t == ' ') {
					t++;
				}
				if (stop - t >= 7 && strncasecmp(t, "source:", 7) == 0) {
					t += 7; /* as for CSV loads: the source without its label */
					while (t < stop && *t == ' ') {
						t++;
					}
				}
				sr->source = strndup(t, (size_t)(stop - t));
				ld_fail(&sr->ld, sr->source ? 0 : MP_ENOMEM);
			}
			continue;
		}
		series_row(sr, s, stop, line, start, cells);
	}
}

static int load_series(const char *path, struct mp_history *out, struct mp_diags *diags)
{
	struct ld_text text = {0};
	int rc = ld_read_text(path, &text, diags);
	if (rc != 0) {
		return rc;
	}
	const char **cells = malloc(2u * (MP_MAX_EXPERTS + 2u) * sizeof(*cells));
	struct series sr = {.ld = {.path = path, .diags = diags}, .out = out};
	if (!cells) {
		ld_fail(&sr.ld, MP_ENOMEM);
	} else {
		series_lines(&sr, &text, cells);
		series_flush(&sr);
	}
	if (sr.ld.status == 0 && out->n_windows == 0) {
		ld_error_at(&sr.ld, 0, 0, "no data rows: expected rows iteration,layer,load_0,...");
	}
	rc = sr.ld.status;
	free(cells);
	free(sr.source);
	free(sr.row);
	free(sr.layers);
	free(sr.first);
	ld_text_finish(&text);
	return rc;
}

int mp_load_history(const char *const *paths, uint32_t n_paths, struct mp_history *out,
		    struct mp_diags *diags)
{
	struct mp_history h;
	mp_history_init(&h);
	int rc = n_paths ? 0 : MP_EINVAL;
	for (uint32_t i = 0; rc == 0 && i < n_paths; i++) {
		const uint32_t before = h.n_windows;
		if (mp_loads_is_series(paths[i])) {
			rc = load_series(paths[i], &h, diags);
		} else {
			struct mp_loads w;
			mp_loads_init(&w);
			rc = mp_load_loads(paths[i], &w, diags);
			if (rc == 0) {
				rc = mp_history_push(&h, &w);
			}
			mp_loads_finish(&w);
		}
		if (rc == MP_EINVAL && h.n_windows == before && before > 0 && diags) {
			/* loaded, but the shape differs from the windows before it */
			rc = mp_diags_add(diags, paths[i], 0, 0, MP_EINVAL, "a window with other layers or "
					  "experts than %s (%u layers x %u experts%s): every window of a "
					  "history has the same layers (the same layer ids) and experts",
					  paths[0], h.windows[0].n_layers, h.windows[0].n_experts,
					  h.windows[0].layer_ids ? ", layers named" : "");
			rc = rc == MP_ENOMEM ? rc : MP_EINVAL;
		}
	}
	if (rc == 0) {
		mp_history_finish(out);
		*out = h;
	} else {
		mp_history_finish(&h);
	}
	return rc;
}
