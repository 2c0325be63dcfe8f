/* Expert loads (CSV, YAML/JSON lists, SGLang's logical_count) and
 * physical-to-logical maps (moeplan plans, SGLang, vLLM, bare arrays). */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "loader-internal.h"

/* ------------------------------------------------------------ growable */

struct dvec {
	double *v;
	size_t n;
	size_t cap;
};

static bool dvec_push(struct dvec *d, double x)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 1024;
		if (cap > SIZE_MAX / sizeof(double)) {
			return false;
		}
		double *v = realloc(d->v, cap * sizeof(double));
		if (!v) {
			return false;
		}
		d->v = v;
		d->cap = cap;
	}
	d->v[d->n++] = x;
	return true;
}

/* Move a finished [rows][cols] table into out (replacing what it held). */
static int loads_from(struct mp_loads *out, const double *v, uint32_t rows, uint32_t cols,
		      char *source)
{
	struct mp_loads tmp;
	mp_loads_init(&tmp);
	int rc = mp_loads_alloc(&tmp, rows, cols);
	if (rc != 0) {
		free(source);
		return rc;
	}
	if (v) {
		memcpy(tmp.w, v, (size_t)rows * cols * sizeof(double));
	}
	tmp.source = source;
	mp_loads_finish(out);
	*out = tmp;
	return 0;
}

/* ------------------------------------------------------------------- CSV */

static char *csv_source(const char *comment, size_t len)
{
	while (len > 0 && (*comment == '#' || *comment == ' ' || *comment == '\t')) {
		comment++;
		len--;
	}
	if (len >= 7 && strncasecmp(comment, "source:", 7) == 0) {
		comment += 7;
		len -= 7;
		while (len > 0 && (*comment == ' ' || *comment == '\t')) {
			comment++;
			len--;
		}
	}
	while (len > 0 && isspace((unsigned char)comment[len - 1])) {
		len--;
	}
	char *s = malloc(len + 1);
	if (s) {
		memcpy(s, comment, len);
		s[len] = '\0';
	}
	return s;
}

static void csv_cell(struct ld *ld, const char *cell, size_t len, int line, int column,
		     uint32_t row, uint32_t col, double *out, bool *ok)
{
	char buf[72];
	*ok = false;
	if (len == 0) {
		ld_error_at(ld, line, column, "empty cell (two commas in a row or a comma at the end)");
		return;
	}
	size_t n = len < sizeof(buf) - 4 ? len : sizeof(buf) - 4;
	memcpy(buf, cell, n);
	buf[n] = '\0';
	if (n < len) {
		memcpy(buf + n, "...", 4);
	}
	double v = 0.0;
	enum ld_qerr e = n < len ? LDQ_NOT_NUMBER : ld_parse_load(buf, &v);
	switch (e) {
	case LDQ_OK:
		if (v < 0.0) {
			ld_error_at(ld, line, column, "'%s': loads must be >= 0", buf);
			return;
		}
		if (v > LD_MAX_LOAD) {
			ld_error_at(ld, line, column, "'%s': the load of layer %u, expert %u must be from 0 "
				    "to " LD_MAX_LOAD_TEXT " (larger loads overflow the per-layer sums)",
				    buf, row, col);
			return;
		}
		*out = v;
		*ok = true;
		return;
	case LDQ_NONFINITE:
		ld_error_at(ld, line, column, "'%s' is not a finite number (loads are counts from 0 to "
			    LD_MAX_LOAD_TEXT ")", buf);
		return;
	case LDQ_RANGE:
		ld_error_at(ld, line, column, "'%s' is out of range (loads are counts from 0 to "
			    LD_MAX_LOAD_TEXT ")", buf);
		return;
	case LDQ_EMPTY:
	case LDQ_NOT_NUMBER:
	case LDQ_UNIT:
	case LDQ_UNIT_KIND:
	case LDQ_NO_UNIT:
		break;
	}
	ld_error_at(ld, line, column, "'%s' is not a number (loads are counts from 0 to "
		    LD_MAX_LOAD_TEXT ")", buf);
}

/* ------------------------------------------------------ CSV layer identity */

struct uvec {
	uint32_t *v;
	size_t n;
	size_t cap;
};

static bool uvec_push(struct uvec *u, uint32_t x)
{
	if (u->n == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 64;
		uint32_t *v = realloc(u->v, cap * sizeof(*v));
		if (!v) {
			return false;
		}
		u->v = v;
		u->cap = cap;
	}
	u->v[u->n++] = x;
	return true;
}

/* One layer id cell: a decimal integer from 0 to MP_MAX_LAYERS - 1. */
static bool csv_layer_id(struct ld *ld, const char *a, const char *b, int line, int column,
			 uint32_t *out)
{
	char buf[32];
	size_t len = (size_t)(b - a);
	uint64_t v = 0;
	if (len == 0 || len >= sizeof(buf)) {
		ld_error_at(ld, line, column, "a layer id must be an integer from 0 to %u", MP_MAX_LAYERS - 1);
		return false;
	}
	memcpy(buf, a, len);
	buf[len] = '\0';
	if (ld_parse_u64(buf, &v) != LDQ_OK || v >= MP_MAX_LAYERS) {
		ld_error_at(ld, line, column, "layer '%s': a layer id must be an integer from 0 to %u "
			    "(0-based, counting dense layers, as the engines number them)", buf,
			    MP_MAX_LAYERS - 1);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

/* "# layers: 0, 7, 15" (commas or blanks): the rows' model layers.
 * Returns false when the comment is not a layers line. */
static bool csv_layers_comment(struct ld *ld, const char *s, const char *stop, int line,
			       const char *line_start, struct uvec *ids, bool *seen)
{
	const char *c = s + 1;
	while (c < stop && (*c == ' ' || *c == '\t')) {
		c++;
	}
	if (stop - c < 7 || strncasecmp(c, "layers:", 7) != 0) {
		return false;
	}
	if (*seen) {
		ld_error_at(ld, line, (int)(s - line_start) + 1, "a second '# layers:' line");
		return true;
	}
	*seen = true;
	c += 7;
	for (;;) {
		while (c < stop && (*c == ' ' || *c == '\t' || *c == ',')) {
			c++;
		}
		if (c == stop) {
			break;
		}
		const char *e = c;
		while (e < stop && *e != ' ' && *e != '\t' && *e != ',') {
			e++;
		}
		uint32_t id = 0;
		if (!csv_layer_id(ld, c, e, line, (int)(c - line_start) + 1, &id)) {
			return true;
		}
		if (!uvec_push(ids, id)) {
			ld_fail(ld, MP_ENOMEM);
			return true;
		}
		c = e;
	}
	return true;
}

/* True when the first cell of a CSV line is a word ("expert_0", "layer",
 * a quoted name), not a number or a non-finite spelling that gets its
 * own error ("nan", "inf"). */
static bool csv_header_row(const char *s, const char *stop)
{
	if (s == stop || !(isalpha((unsigned char)*s) || *s == '"' || *s == '\'')) {
		return false;
	}
	size_t len = strcspn(s, ",");
	if (len > (size_t)(stop - s)) {
		len = (size_t)(stop - s);
	}
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t')) {
		len--;
	}
	static const char *const numbers[] = {"nan", "inf", "infinity"};
	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
		if (len == strlen(numbers[i]) && strncasecmp(s, numbers[i], len) == 0) {
			return false;
		}
	}
	return true;
}

/* Attach the rows' layer ids (from a '# layers:' line or a layer column),
 * which must be one per row and strictly increasing. */
static int csv_attach_ids(struct ld *ld, struct mp_loads *out, const struct uvec *ids, int line)
{
	if (ids->n != out->n_layers) {
		ld_error_at(ld, line, 1, "%zu layer ids for %u rows: give one per row", ids->n, out->n_layers);
		return ld->status;
	}
	for (size_t i = 1; i < ids->n; i++) {
		if (ids->v[i] <= ids->v[i - 1]) {
			ld_error_at(ld, line, 1, "layer %u after layer %u: rows must be in increasing layer "
				    "order, each layer once", ids->v[i], ids->v[i - 1]);
			return ld->status;
		}
	}
	int rc = mp_loads_set_layer_ids(out, ids->v);
	if (rc != 0) {
		ld_fail(ld, rc);
	}
	return rc;
}

/* parse_csv's state from line to line. */
struct csv {
	struct ld ld;
	struct dvec values;  /* the accepted rows' loads, row-major, cols per row */
	char *source;        /* the first comment line (owned), NULL before one */
	bool have_source;    /* a comment line was taken as the source */
	uint32_t cols;       /* the first row's width */
	uint32_t rows;       /* rows accepted */
	int first_line;      /* the first row's line number, 0 before it */
	struct uvec ids;     /* the rows' layer ids, from a comment or a layer column */
	bool ids_comment;    /* a '# layers:' line was read */
	int ids_line;        /* the line the ids are reported at */
	bool layer_column;   /* a 'layer,...' header: every row starts with its layer id */
	bool header_done;    /* the first non-comment line was looked at */
	bool header;         /* a header-like row was reported (once) */
};

/* One line of the file: its number, its first byte, and the text [s, stop) still to read. */
struct csv_line {
	int no;
	const char *start;
	const char *s;
	const char *stop;
};

/* What the line loop does next. */
enum csv_step { CSV_ROW, CSV_SKIP, CSV_STOP };

/* A '#' line: the rows' layer ids ("# layers: ...") or, the first time, the source. */
static void csv_comment(struct csv *cs, const struct csv_line *ln)
{
	/* a series (moeplan-formats(5) "Series") that reached the CSV loader
	 * came through a pipe, where it cannot be sniffed: refuse it, rather
	 * than read its iteration and layer columns as experts */
	const char *c = ln->s + 1;
	while (c < ln->stop && (*c == ' ' || *c == '\t')) {
		c++;
	}
	if (ln->stop - c >= 24 && strncasecmp(c, "columns:", 8) == 0 &&
	    strstr(c, "iteration,layer") && strstr(c, "iteration,layer") < ln->stop) {
		ld_error_at(&cs->ld, ln->no, (int)(c - ln->start) + 1, "this is a series CSV (one block "
			    "of rows per time window): give it as a regular file, which moeplan reads as a "
			    "history, not through a pipe");
		return;
	}
	if (csv_layers_comment(&cs->ld, ln->s, ln->stop, ln->no, ln->start, &cs->ids, &cs->ids_comment)) {
		cs->ids_line = cs->ids_line ? cs->ids_line : ln->no;
		return;
	}
	if (!cs->have_source) {
		cs->have_source = true;
		cs->source = csv_source(ln->s, (size_t)(ln->stop - ln->s));
		if (!cs->source) {
			ld_fail(&cs->ld, MP_ENOMEM);
		}
	}
}

/* The first data line: true when it is the 'layer,...' header (then each row starts with its layer id). */
static bool csv_layer_header(struct csv *cs, const struct csv_line *ln)
{
	if (cs->header_done) {
		return false;
	}
	cs->header_done = true;
	const char *s = ln->s;
	const char *stop = ln->stop;
	if (!(stop - s >= 5 && strncasecmp(s, "layer", 5) == 0 &&
	      (stop - s == 5 || s[5] == ',' || s[5] == ' ' || s[5] == '\t'))) {
		return false;
	}
	cs->layer_column = true;
	cs->ids_line = ln->no;
	if (cs->ids_comment) {
		ld_error_at(&cs->ld, ln->no, 1, "a layer column and a '# layers:' line: give one");
	}
	return true;
}

/* A row's leading layer id (after a 'layer,...' header): checked, kept, and ln->s moved past it. */
static enum csv_step csv_row_layer(struct csv *cs, struct csv_line *ln)
{
	const char *s = ln->s;
	const char *comma = memchr(s, ',', (size_t)(ln->stop - s));
	const char *b = comma ? comma : ln->stop;
	while (b > s && (b[-1] == ' ' || b[-1] == '\t')) {
		b--;
	}
	uint32_t id = 0;
	if (!csv_layer_id(&cs->ld, s, b, ln->no, (int)(s - ln->start) + 1, &id)) {
		return CSV_SKIP;
	}
	if (!comma) {
		ld_error_at(&cs->ld, ln->no, (int)(ln->stop - ln->start) + 1, "layer %u has no loads", id);
		return CSV_SKIP;
	}
	const struct uvec *ids = &cs->ids;
	if (ids->n > 0 && id <= ids->v[ids->n - 1]) {
		ld_error_at(&cs->ld, ln->no, (int)(s - ln->start) + 1, "layer %u after layer %u: rows "
			    "must be in increasing layer order, each layer once", id, ids->v[ids->n - 1]);
	}
	if (!uvec_push(&cs->ids, id)) {
		ld_fail(&cs->ld, MP_ENOMEM);
		return CSV_STOP;
	}
	ln->s = comma + 1;
	return CSV_ROW;
}

/* The row's cells, appended to cs->values; *n_out: the cells read. False when
 * the row is refused (reported; the caller drops what was appended). */
static bool csv_cells(struct csv *cs, const struct csv_line *ln, uint32_t *n_out)
{
	struct ld *ld = &cs->ld;
	const int line = ln->no;
	const uint32_t cols = cs->cols;
	const int first_line = cs->first_line;
	uint32_t n = 0;
	bool row_ok = true;
	const char *c = ln->s;
	for (;;) {
		const char *comma = memchr(c, ',', (size_t)(ln->stop - c));
		const char *cend = comma ? comma : ln->stop;
		const char *a = c;
		const char *b = cend;
		while (a < b && (*a == ' ' || *a == '\t')) {
			a++;
		}
		while (b > a && (b[-1] == ' ' || b[-1] == '\t')) {
			b--;
		}
		const int cell_column = (int)(a - ln->start) + 1;
		if (n == MP_MAX_EXPERTS) {
			ld_error_at(ld, line, cell_column, "more than %u values in a row (one column per expert)",
				    MP_MAX_EXPERTS);
			row_ok = false;
			break;
		}
		if (first_line && n == cols) {
			ld_error_at(ld, line, cell_column, "row has more than %u values, "
				    "expected %u like the first row (line %d)", cols, cols, first_line);
			row_ok = false;
			break;
		}
		double v = 0.0;
		bool ok = false;
		csv_cell(ld, a, (size_t)(b - a), line, cell_column, cs->rows, n, &v, &ok);
		row_ok &= ok;
		if (!dvec_push(&cs->values, v)) {
			ld_fail(ld, MP_ENOMEM);
			row_ok = false;
			break;
		}
		n++;
		if (!comma) {
			if (first_line && n < cols && row_ok) {
				ld_error_at(ld, line, (int)(ln->stop - ln->start) + 1,
					    "row has %u values, expected %u like the first row (line %d)",
					    n, cols, first_line);
				row_ok = false;
			}
			break;
		}
		c = comma + 1;
	}
	*n_out = n;
	return row_ok;
}

/* A line that is not a comment: the layer header, or a row (its layer id, then its cells). */
static enum csv_step csv_data_line(struct csv *cs, struct csv_line *ln)
{
	const char *hash = memchr(ln->s, '#', (size_t)(ln->stop - ln->s));
	if (hash) {
		ln->stop = hash;
	}
	if (csv_layer_header(cs, ln)) {
		return CSV_SKIP;
	}
	if (cs->layer_column) {
		enum csv_step step = csv_row_layer(cs, ln);
		if (step != CSV_ROW) {
			return step;
		}
	}
	if (cs->rows == MP_MAX_LAYERS) {
		ld_error_at(&cs->ld, ln->no, 1, "more than %u rows (one row per MoE layer)", MP_MAX_LAYERS);
		return CSV_STOP;
	}
	const char *s = ln->s;
	const char *stop = ln->stop;
	if (!cs->first_line && !cs->header && csv_header_row(s, stop)) {
		/* One error for the whole row, not one per cell. */
		ld_error_at(&cs->ld, ln->no, (int)(s - ln->start) + 1,
			    "this looks like a header row ('%.*s...'); the only header allowed "
			    "is 'layer,...' (then each row starts with its layer id); put '#' before "
			    "this one to keep it as a comment", (int)(stop - s < 24 ? stop - s : 24), s);
		cs->header = true;
		return CSV_SKIP;
	}
	uint32_t n = 0;
	const size_t row_start = cs->values.n;
	const bool row_ok = csv_cells(cs, ln, &n);
	if (!row_ok) {
		cs->values.n = row_start;
	}
	if (!cs->first_line) {
		/* A refused first row still sets the width later rows must have. */
		cs->cols = n;
		cs->first_line = ln->no;
	}
	if (row_ok) {
		cs->rows++;
	}
	return CSV_ROW;
}

/* One row per layer, one column per expert; '#' starts a comment (the
 * first comment line is kept as the source); blank lines are skipped. The
 * rows' model layers come from a "# layers: 0, 7, 15" line, or from a
 * header row whose first cell is "layer", after which every row starts
 * with its layer id (README "Layer identity"). */
static int parse_csv(const char *path, const struct ld_text *text, struct mp_loads *out,
		     struct mp_diags *diags)
{
	struct csv cs = {.ld = {.path = path, .diags = diags}};
	const char *p = text->data;
	const char *end = text->data + text->size;
	int line = 0;
	while (p < end && cs.ld.errors <= LD_MAX_ERRORS && cs.ld.status != MP_ENOMEM) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol) {
			eol = end;
		}
		line++;
		struct csv_line ln = {.no = line, .start = p, .s = p, .stop = eol};
		if (ln.stop > ln.s && ln.stop[-1] == '\r') {
			ln.stop--;
		}
		p = eol < end ? eol + 1 : end;
		while (ln.s < ln.stop && (*ln.s == ' ' || *ln.s == '\t')) {
			ln.s++;
		}
		if (ln.s == ln.stop) {
			continue;
		}
		if (*ln.s == '#') {
			csv_comment(&cs, &ln);
		} else if (csv_data_line(&cs, &ln) == CSV_STOP) {
			break;
		}
	}
	int rc = cs.ld.status;
	if (rc == 0 && cs.rows == 0) {
		ld_error_at(&cs.ld, 0, 0, "no data rows: expected one row per MoE layer and one column per expert");
		rc = cs.ld.status;
	}
	if (rc == 0) {
		rc = loads_from(out, cs.values.v, cs.rows, cs.cols, cs.source);
		cs.source = NULL;
	}
	if (rc == 0 && (cs.layer_column || cs.ids_comment)) {
		rc = csv_attach_ids(&cs.ld, out, &cs.ids, cs.ids_line);
	}
	free(cs.ids.v);
	free(cs.values.v);
	free(cs.source);
	return rc;
}

/* ------------------------------------------------------ YAML / JSON lists */

/* Read a [rows][cols] list of non-negative numbers at node into a new
 * array. seen[] marks node ids already used as a row (a YAML alias
 * repeating a row is refused: it could multiply a small file into
 * gigabytes). Returns false after reporting. */
static bool read_matrix(struct ld *ld, const yaml_node_t *node, const char *what,
			unsigned char *seen, double **values, uint32_t *rows_out, uint32_t *cols_out)
{
	*values = NULL;
	if (node->type != YAML_SEQUENCE_NODE) {
		ld_error(ld, node, "%s: expected a list of rows (one per layer), got %s", what,
			 ld_kind_name(node));
		return false;
	}
	size_t rows = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
	if (rows == 0) {
		ld_error(ld, node, "%s: no rows (expected one row per MoE layer)", what);
		return false;
	}
	if (rows > MP_MAX_LAYERS) {
		ld_error(ld, node, "%s: %zu rows, more than the limit of %u layers", what, rows,
			 MP_MAX_LAYERS);
		return false;
	}
	size_t cols = 0;
	double *v = NULL;
	bool ok = true;
	for (size_t r = 0; r < rows; r++) {
		int id = node->data.sequence.items.start[r];
		const yaml_node_t *row = ld_node(ld, id);
		if (seen[id]) {
			ld_error(ld, row, "%s[%zu]: a repeated YAML alias; write each row out", what, r);
			ok = false;
			continue;
		}
		seen[id] = 1;
		if (row->type != YAML_SEQUENCE_NODE) {
			ld_error(ld, row, "%s[%zu]: expected a list of numbers (one per expert), got %s", what,
				 r, ld_kind_name(row));
			ok = false;
			continue;
		}
		size_t n = (size_t)(row->data.sequence.items.top - row->data.sequence.items.start);
		if (!v) {
			if (n == 0 || n > MP_MAX_EXPERTS) {
				ld_error(ld, row, "%s[%zu]: %zu values, expected 1 to %u (one per expert)", what, r,
					 n, MP_MAX_EXPERTS);
				return false;
			}
			cols = n;
			v = calloc(rows * cols, sizeof(*v));
			if (!v) {
				ld_fail(ld, MP_ENOMEM);
				return false;
			}
		} else if (n != cols) {
			ld_error(ld, row, "%s[%zu]: %zu values, expected %zu like row 0", what, r, n, cols);
			ok = false;
			continue;
		}
		for (size_t c = 0; c < n; c++) {
			const yaml_node_t *cell = ld_node(ld, row->data.sequence.items.start[c]);
			const char *text = ld_scalar(cell);
			double x = 0.0;
			enum ld_qerr e = text ? ld_parse_load(text, &x) : LDQ_NOT_NUMBER;
			if (text && ld_is_quoted(cell)) {
				char vbuf[48], got[160];
				snprintf(vbuf, sizeof(vbuf), "%.40s", text);
				ld_error(ld, cell, "%s[%zu][%zu]: expected a load from 0 to " LD_MAX_LOAD_TEXT
					 ", got %s", what, r, c,
					 ld_text_not_number(ld, cell, vbuf, got, sizeof(got)));
				ok = false;
				continue;
			}
			if (e != LDQ_OK || x < 0.0 || x > LD_MAX_LOAD) {
				if (text) {
					char vbuf[48];
					snprintf(vbuf, sizeof(vbuf), "%.40s", text);
					const char *why = "";
					if (e == LDQ_NONFINITE) {
						why = " (not a finite number)";
					} else if (e == LDQ_RANGE || (e == LDQ_OK && x > LD_MAX_LOAD)) {
						why = " (larger loads overflow the per-layer sums)";
					}
					ld_error(ld, cell, "%s[%zu][%zu]: expected a load from 0 to "
						 LD_MAX_LOAD_TEXT ", got '%s'%s", what, r, c, vbuf, why);
				} else {
					ld_error(ld, cell, "%s[%zu][%zu]: expected a load from 0 to "
						 LD_MAX_LOAD_TEXT ", got %s", what, r, c,
						 ld_kind_name(cell));
				}
				ok = false;
				continue;
			}
			v[r * cols + c] = x;
		}
		if (ld->errors > LD_MAX_ERRORS) {
			break;
		}
	}
	if (!ok) {
		free(v);
		return false;
	}
	*values = v;
	*rows_out = (uint32_t)rows;
	*cols_out = (uint32_t)cols;
	return true;
}

static unsigned char *seen_table(struct ld *ld)
{
	size_t nodes = (size_t)(ld->doc.nodes.top - ld->doc.nodes.start);
	unsigned char *seen = calloc(nodes + 2, 1);
	if (!seen) {
		ld_fail(ld, MP_ENOMEM);
	}
	return seen;
}

/* True when a list's first item is itself a list of lists. */
static bool is_3d(struct ld *ld, const yaml_node_t *node)
{
	if (node->type != YAML_SEQUENCE_NODE ||
	    node->data.sequence.items.top == node->data.sequence.items.start) {
		return false;
	}
	const yaml_node_t *first = ld_node(ld, node->data.sequence.items.start[0]);
	if (first->type != YAML_SEQUENCE_NODE ||
	    first->data.sequence.items.top == first->data.sequence.items.start) {
		return false;
	}
	const yaml_node_t *inner = ld_node(ld, first->data.sequence.items.start[0]);
	return inner->type == YAML_SEQUENCE_NODE;
}

void ld_parse_loads_array(struct ld *ld, const yaml_node_t *node, const char *what,
			  struct mp_loads *out)
{
	const char *label = what && what[0] ? what : "loads";
	unsigned char *seen = seen_table(ld);
	double *sum = NULL;
	double *v = NULL;
	uint32_t rows = 0;
	uint32_t cols = 0;
	if (!seen) {
		return;
	}
	if (!is_3d(ld, node)) {
		if (read_matrix(ld, node, label, seen, &sum, &rows, &cols)) {
			int rc = loads_from(out, sum, rows, cols, NULL);
			if (rc != 0) {
				ld_error(ld, node, "%s: cannot hold %u x %u loads", label, rows, cols);
			}
		}
		goto out;
	}
	/* [windows][layers][experts]: SGLang's dump over several windows. */
	size_t windows = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
	bool ok = true;
	for (size_t w = 0; w < windows && ok; w++) {
		char sub[256];
		snprintf(sub, sizeof(sub), "%s[%zu]", label, w);
		const yaml_node_t *win = ld_node(ld, node->data.sequence.items.start[w]);
		if (seen[node->data.sequence.items.start[w]]) {
			ld_error(ld, win, "%s: a repeated YAML alias; write each window out", sub);
			ok = false;
			break;
		}
		seen[node->data.sequence.items.start[w]] = 1;
		uint32_t r = 0;
		uint32_t c = 0;
		if (!read_matrix(ld, win, sub, seen, &v, &r, &c)) {
			ok = false;
			break;
		}
		if (!sum) {
			sum = v;
			v = NULL;
			rows = r;
			cols = c;
			continue;
		}
		if (r != rows || c != cols) {
			ld_error(ld, win, "%s: %u x %u values, expected %u x %u like window 0", sub, r, c,
				 rows, cols);
			ok = false;
			break;
		}
		for (size_t i = 0; i < (size_t)rows * cols; i++) {
			sum[i] += v[i];
		}
		free(v);
		v = NULL;
	}
	if (ok && sum) {
		int rc = loads_from(out, sum, rows, cols, NULL);
		if (rc != 0) {
			ld_error(ld, node, "%s: cannot hold %u x %u loads", label, rows, cols);
		}
	}
out:
	free(v);
	free(sum);
	free(seen);
}

static const char *const loads_keys[] = {"loads", "source", NULL};

/* A placement given where loads are expected (`replan --loads plan.yaml`)
 * would otherwise get one "unknown field" per key: say what it is, once.
 * Returns true after reporting. */
static bool refuse_placement(struct ld *ld, const yaml_node_t *root)
{
	const char *kind = NULL;
	const char *key = NULL;
	if (ld_has(ld, root, "physical_to_logical_map")) {
		kind = "an engine's expert map (SGLang's or vLLM's)";
		key = "physical_to_logical_map";
	} else if (ld_has(ld, root, "decode") || ld_has(ld, root, "prefill")) {
		kind = "a moeplan plan";
		key = ld_has(ld, root, "decode") ? "decode" : "prefill";
	} else if (ld_has(ld, root, "placement")) {
		kind = "a moeplan placement";
		key = "placement";
	} else if (ld_has(ld, root, "physical_to_logical")) {
		kind = "a moeplan placement";
		key = "physical_to_logical";
	} else if (ld_has(ld, root, "check")) {
		kind = "a moeplan check report";
		key = "check";
	}
	if (!kind) {
		return false;
	}
	const char *instead = strcmp(key, "check") == 0
		? "it holds no expert loads; give"
		: "pass it as the running placement (replan --plan, check PLAN, simulate --plan) and give";
	ld_error(ld, root, "this is %s (it has '%s'), not expert loads: %s observed loads here (a CSV "
		 "or YAML of [layers][experts] counts, or SGLang's logical_count)", kind, key, instead);
	return true;
}

/* SGLang's dumps have one row per hidden layer (num_hidden_layers, dense
 * layers all zero: expert_distribution.py _StatAccumulator.dump), so row i
 * is layer i. Returns 0 or MP_ENOMEM. */
static int loads_every_layer(struct mp_loads *out)
{
	uint32_t *ids = malloc((size_t)out->n_layers * sizeof(*ids));
	if (!ids) {
		return MP_ENOMEM;
	}
	for (uint32_t i = 0; i < out->n_layers; i++) {
		ids[i] = i;
	}
	int rc = mp_loads_set_layer_ids(out, ids);
	free(ids);
	out->hidden_layers = rc == 0 ? out->n_layers : 0;
	return rc;
}

static void ld_status_merge(struct ld *ld, int rc)
{
	if (rc != 0) {
		ld_fail(ld, rc);
	}
}

static void parse_loads_doc(struct ld *ld, struct mp_loads *out)
{
	const yaml_node_t *root = ld_root(ld);
	if (root->type == YAML_SEQUENCE_NODE) {
		ld_parse_loads_array(ld, root, "loads", out);
		return;
	}
	if (root->type == YAML_MAPPING_NODE && ld_has(ld, root, "logical_count")) {
		/* SGLang's expert-distribution dump: other keys ignored. */
		ld_check_map_lenient(ld, root, "");
		const yaml_node_t *lc = ld_require(ld, root, "", "logical_count");
		if (lc) {
			ld_parse_loads_array(ld, lc, "logical_count", out);
		}
		if (ld->status == 0) {
			ld_status_merge(ld, loads_every_layer(out));
		}
		return;
	}
	if (root->type != YAML_MAPPING_NODE) {
		ld_error(ld, root, "expected loads: a list of rows (one per layer), a mapping with "
			 "'loads', or SGLang's 'logical_count'; got %s", ld_kind_name(root));
		return;
	}
	if (!ld_has(ld, root, "loads") && refuse_placement(ld, root)) {
		return;
	}
	if (!ld_check_map(ld, root, "", loads_keys)) {
		return;
	}
	char *source = NULL;
	ld_get_string(ld, ld_get(ld, root, "source"), "source", &source);
	const yaml_node_t *loads = ld_require(ld, root, "", "loads");
	if (loads) {
		ld_parse_loads_array(ld, loads, "loads", out);
	}
	if (ld->status == 0 && source) {
		free(out->source);
		out->source = source;
		source = NULL;
	}
	free(source);
}

/* SGLang's dump read from events (loader-loads-stream.c), from text or,
 * when text is NULL, from the file at path in pieces; as parse_loads_doc
 * would read it. LD_STREAM_OTHER (out untouched) for anything the tree
 * reader must read and report. */
static int stream_dump(const char *path, const struct ld_text *text, struct mp_loads *out)
{
	double *sum = NULL;
	uint32_t rows = 0;
	uint32_t cols = 0;
	size_t deep = 0;
	if (text ? ld_text_too_deep(text, &deep) || ld_stream_logical_count(text, &sum, &rows, &cols)
		 : ld_stream_logical_count_file(path, &sum, &rows, &cols)) {
		return LD_STREAM_OTHER;
	}
	struct mp_loads tmp;
	mp_loads_init(&tmp);
	int rc = loads_from(&tmp, sum, rows, cols, NULL);
	free(sum);
	if (rc == 0) {
		rc = loads_every_layer(&tmp);
	}
	if (rc == 0 && !(tmp.path = strdup(path))) {
		rc = MP_ENOMEM;
	}
	if (rc != 0) {
		mp_loads_finish(&tmp);
		return LD_STREAM_OTHER;
	}
	mp_loads_finish(out);
	*out = tmp;
	return 0;
}

/* True when the name alone says YAML/JSON (looks_like_csv). */
static bool named_yaml(const char *path)
{
	size_t len = strlen(path);
	return (len >= 5 && strcasecmp(path + len - 5, ".json") == 0) ||
	       (len >= 5 && strcasecmp(path + len - 5, ".yaml") == 0) ||
	       (len >= 4 && strcasecmp(path + len - 4, ".yml") == 0);
}

/* CSV unless the name or the first significant character says YAML/JSON. */
static bool looks_like_csv(const char *path, const struct ld_text *text)
{
	size_t len = strlen(path);
	if (len >= 4 && strcasecmp(path + len - 4, ".csv") == 0) {
		return true;
	}
	if ((len >= 5 && strcasecmp(path + len - 5, ".json") == 0) ||
	    (len >= 5 && strcasecmp(path + len - 5, ".yaml") == 0) ||
	    (len >= 4 && strcasecmp(path + len - 4, ".yml") == 0)) {
		return false;
	}
	const char *s = text->data;
	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') {
			s++;
		}
		if (*s != '#') {
			break;
		}
		while (*s && *s != '\n') {
			s++;
		}
	}
	if (*s == '-') {
		return isdigit((unsigned char)s[1]) || s[1] == '.';
	}
	if (strncasecmp(s, "layer", 5) == 0 && (s[5] == ',' || s[5] == '\r' || s[5] == '\n' || s[5] == '\0')) {
		return true;
	}
	if (isdigit((unsigned char)*s) || *s == '.' || *s == '+') {
		return true;
	}
	/* A header row of names ("expert_0,expert_1"): commas, and none of
	 * YAML's ':' '[' '{' on the line; read as CSV to say what it is. */
	size_t line = strcspn(s, "\n");
	return memchr(s, ',', line) && !memchr(s, ':', line) && !memchr(s, '[', line) &&
	       !memchr(s, '{', line);
}

int mp_load_loads(const char *path, struct mp_loads *out, struct mp_diags *diags)
{
	if (ld_is_zip(path)) {
		/* torch.save: SGLang's recorder dump, streamed (loader-torch.c) */
		struct mp_loads tmp;
		mp_loads_init(&tmp);
		int rc = ld_torch_loads(path, &tmp, diags);
		if (rc == 0 && !(tmp.path = strdup(path))) {
			rc = MP_ENOMEM;
		}
		if (rc == 0) {
			mp_loads_finish(out);
			*out = tmp;
		} else {
			mp_loads_finish(&tmp);
		}
		return rc;
	}
	/* SGLang's JSON dump in pieces: the text is never held whole */
	if (strcmp(path, "-") != 0 && named_yaml(path) && stream_dump(path, NULL, out) == 0) {
		return 0;
	}
	struct ld_text text = {0};
	int rc = ld_read_text(path, &text, diags);
	if (rc != 0) {
		return rc;
	}
	struct mp_loads tmp;
	mp_loads_init(&tmp);
	if (looks_like_csv(path, &text)) {
		rc = parse_csv(path, &text, &tmp, diags);
	} else if (stream_dump(path, &text, &tmp) == 0) {
		ld_text_finish(&text);
		mp_loads_finish(out);
		*out = tmp;
		return 0;
	} else {
		struct ld ld;
		rc = ld_open_text(&ld, path, &text, diags);
		if (rc == 0) {
			parse_loads_doc(&ld, &tmp);
			rc = ld.status;
		}
		ld_close(&ld);
	}
	ld_text_finish(&text);
	if (rc == 0) {
		tmp.path = strdup(path);
		if (!tmp.path) {
			rc = MP_ENOMEM;
		}
	}
	if (rc == 0) {
		mp_loads_finish(out);
		*out = tmp;
	} else {
		mp_loads_finish(&tmp);
	}
	return rc;
}

/* -------------------------------------------------------------------- maps */

/* A [layers][slots] list of expert ids into a new uint32 array. With the
 * GPU count known (gpus > 0, dividing the slots), a bad cell's message
 * also names its GPU and its slot on that GPU. */
/* An id that did not parse (already reported at its line:col). */
#define MAP_BAD_ID UINT32_MAX

static bool read_id_matrix(struct ld *ld, const yaml_node_t *node, const char *what, uint32_t gpus,
			   uint32_t **ids_out, uint32_t *rows_out, uint32_t *cols_out, uint32_t *max_id)
{
	unsigned char *seen = seen_table(ld);
	uint32_t *ids = NULL;
	bool ok = true;
	*max_id = 0;
	if (!seen) {
		return false;
	}
	if (node->type != YAML_SEQUENCE_NODE) {
		ld_error(ld, node, "%s: expected a list of layers (each a list of expert ids), got %s",
			 what, ld_kind_name(node));
		ok = false;
		goto out;
	}
	size_t rows = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
	if (rows == 0 || rows > MP_MAX_LAYERS) {
		ld_error(ld, node, "%s: %zu layers, expected 1 to %u", what, rows, MP_MAX_LAYERS);
		ok = false;
		goto out;
	}
	size_t cols = 0;
	for (size_t r = 0; r < rows; r++) {
		int id = node->data.sequence.items.start[r];
		const yaml_node_t *row = ld_node(ld, id);
		if (seen[id]) {
			ld_error(ld, row, "%s[%zu]: a repeated YAML alias; write each layer out", what, r);
			ok = false;
			continue;
		}
		seen[id] = 1;
		if (row->type != YAML_SEQUENCE_NODE) {
			ld_error(ld, row, "%s[%zu]: expected a list of expert ids (one per slot), got %s",
				 what, r, ld_kind_name(row));
			ok = false;
			continue;
		}
		size_t n = (size_t)(row->data.sequence.items.top - row->data.sequence.items.start);
		if (!ids) {
			if (n == 0 || n > (size_t)MP_MAX_GPUS * MP_MAX_SLOTS_PER_GPU) {
				ld_error(ld, row, "%s[%zu]: %zu slots, expected at least one", what, r, n);
				ok = false;
				goto out;
			}
			cols = n;
			ids = calloc(rows * cols, sizeof(*ids));
			if (!ids) {
				ld_fail(ld, MP_ENOMEM);
				ok = false;
				goto out;
			}
		} else if (n != cols) {
			ld_error(ld, row, "%s[%zu]: %zu slots, expected %zu like layer 0", what, r, n, cols);
			ok = false;
			continue;
		}
		size_t per_gpu = gpus > 0 && cols % gpus == 0 ? cols / gpus : 0;
		for (size_t c = 0; c < n; c++) {
			const yaml_node_t *cell = ld_node(ld, row->data.sequence.items.start[c]);
			char field[256];
			if (per_gpu > 0) {
				snprintf(field, sizeof(field), "%s[%zu][%zu] (layer %zu, GPU %zu, slot %zu)",
					 what, r, c, r, c / per_gpu, c % per_gpu);
			} else {
				snprintf(field, sizeof(field), "%s[%zu][%zu]", what, r, c);
			}
			uint64_t v = 0;
			if (!ld_get_u64(ld, cell, field, 0, MP_MAX_EXPERTS - 1, &v)) {
				/* reported; the rest of the map is still checked
				 * (check_ids skips this slot) */
				ids[r * cols + c] = MAP_BAD_ID;
				continue;
			}
			ids[r * cols + c] = (uint32_t)v;
			if (v > *max_id) {
				*max_id = (uint32_t)v;
			}
		}
		if (ld->errors > LD_MAX_ERRORS) {
			ok = false;
			break;
		}
	}
	if (ok) {
		*ids_out = ids;
		ids = NULL;
		*rows_out = (uint32_t)rows;
		*cols_out = (uint32_t)cols;
	}
out:
	free(ids);
	free(seen);
	return ok;
}

/* Number of entries in a list node (0 when not a list). */
static uint32_t list_length(const yaml_node_t *node)
{
	if (!node || node->type != YAML_SEQUENCE_NODE) {
		return 0;
	}
	return (uint32_t)(node->data.sequence.items.top - node->data.sequence.items.start);
}

struct map_source {
	const yaml_node_t *ids;       /* [layers][slots] */
	const yaml_node_t *at;        /* where to report shape problems */
	const char *what;
	const yaml_node_t *gpus;      /* from the file, or NULL */
	const char *gpus_key;         /* its key: "gpus" or vLLM export's "ep_size" */
	const yaml_node_t *slots_per_gpu;
	const yaml_node_t *n_experts;
	uint32_t experts_hint;        /* from replicas/logical_replica_count lengths */
	const yaml_node_t *layers;    /* a moeplan placement's layers[] (gpu_experts), or NULL */
	const yaml_node_t *gpus_per_node; /* a moeplan placement's node fields, or NULL */
	const yaml_node_t *node_policy;
	const yaml_node_t *n_groups;
};

static void find_map(struct ld *ld, const yaml_node_t *root, const char *phase, struct map_source *m)
{
	if (root->type == YAML_SEQUENCE_NODE) {
		m->ids = root;
		m->at = root;
		m->what = "physical_to_logical";
		return;
	}
	if (root->type != YAML_MAPPING_NODE) {
		ld_error(ld, root, "expected a placement map: a moeplan plan or placement, SGLang's or "
			 "vLLM's physical_to_logical_map, or a [layers][slots] list; got %s",
			 ld_kind_name(root));
		return;
	}
	ld_check_map_lenient(ld, root, "");
	const yaml_node_t *placement = root;
	if (!ld_has(ld, root, "physical_to_logical_map") &&
	    ld_has(ld, root, "last_physical_to_logical_map")) {
		/* SGLang's per-token recorder dump (expert_distribution.py
		 * _DetailAccumulator.dump): the map in use when it was written */
		m->ids = ld_require(ld, root, "", "last_physical_to_logical_map");
		m->at = m->ids;
		m->what = "last_physical_to_logical_map";
		return;
	}
	if (ld_has(ld, root, "physical_to_logical_map")) {
		m->ids = ld_require(ld, root, "", "physical_to_logical_map");
		m->at = m->ids;
		m->what = "physical_to_logical_map";
		m->gpus = ld_get(ld, root, "ep_size");
		m->gpus_key = "ep_size";
		const yaml_node_t *counts = ld_get(ld, root, "logical_replica_count");
		if (counts && counts->type == YAML_SEQUENCE_NODE && list_length(counts) > 0) {
			m->experts_hint = list_length(ld_node(ld, counts->data.sequence.items.start[0]));
		}
		return;
	}
	if (!ld_has(ld, root, "physical_to_logical") && !ld_has(ld, root, "placement") &&
	    (ld_has(ld, root, "decode") || ld_has(ld, root, "prefill"))) {
		const char *name = phase ? phase : "decode";
		const yaml_node_t *ph = ld_get(ld, root, name);
		if (!ph) {
			ld_error(ld, root, "the plan has no '%s' phase", name);
			return;
		}
		if (!ld_check_map_lenient(ld, ph, name)) {
			return;
		}
		placement = ld_require(ld, ph, name, "placement");
		if (!placement) {
			return;
		}
	} else if (ld_has(ld, root, "placement")) {
		placement = ld_require(ld, root, "", "placement");
		if (!placement) {
			return;
		}
		if (!ld_has(ld, placement, "physical_to_logical") &&
		    (ld_has(ld, placement, "decode") || ld_has(ld, placement, "prefill"))) {
			/* a search result: placement.{prefill,decode} */
			const char *name = phase ? phase : "decode";
			placement = ld_require(ld, placement, "placement", name);
			if (!placement || !ld_check_map_lenient(ld, placement, name)) {
				return;
			}
		}
	}
	if (!ld_has(ld, placement, "physical_to_logical")) {
		ld_error(ld, placement, "expected a placement map: a moeplan plan or placement "
			 "(physical_to_logical), SGLang's or vLLM's physical_to_logical_map, or a "
			 "[layers][slots] list");
		return;
	}
	if (!ld_check_map_lenient(ld, placement, "placement")) {
		return;
	}
	m->ids = ld_require(ld, placement, "placement", "physical_to_logical");
	m->at = m->ids;
	m->what = "physical_to_logical";
	m->gpus = ld_get(ld, placement, "gpus");
	m->gpus_key = "gpus";
	m->slots_per_gpu = ld_get(ld, placement, "slots_per_gpu");
	m->n_experts = ld_get(ld, placement, "n_experts");
	m->gpus_per_node = ld_get(ld, placement, "gpus_per_node");
	m->node_policy = ld_get(ld, placement, "node_policy");
	m->n_groups = ld_get(ld, placement, "n_groups");
	const yaml_node_t *layers = ld_get(ld, placement, "layers");
	m->layers = layers && layers->type == YAML_SEQUENCE_NODE ? layers : NULL;
	if (layers && list_length(layers) > 0) {
		const yaml_node_t *l0 = ld_node(ld, layers->data.sequence.items.start[0]);
		m->experts_hint = list_length(ld_get(ld, l0, "replicas"));
	}
}

/* A moeplan placement's node fields (gpus_per_node, node_policy, n_groups)
 * into out. A placement that says it keeps expert groups within nodes
 * (group_limited) must: every replica of a group on one node, else one
 * error per replica that is not, at its line:col. */
static bool read_nodes(struct ld *ld, const struct map_source *m, const uint32_t *ids,
		       uint32_t rows, uint32_t slots, struct mp_placement *out)
{
	static const char *const policies[] = {"report", "balance", "group_limited", NULL};
	if (!m->gpus_per_node) {
		return true;
	}
	uint32_t per_node = 0;
	if (!ld_get_u32(ld, m->gpus_per_node, "gpus_per_node", 1, MP_MAX_GPUS, &per_node)) {
		return false;
	}
	if (out->gpus % per_node != 0) {
		ld_error(ld, m->gpus_per_node, "gpus_per_node: %u does not divide the %u GPUs", per_node,
			 out->gpus);
		return false;
	}
	int policy = MP_NODES_REPORT;
	if (m->node_policy && !ld_get_enum(ld, m->node_policy, "node_policy", policies, &policy)) {
		return false;
	}
	out->gpus_per_node = per_node;
	out->node_policy = (enum mp_node_policy)policy;
	if (policy != MP_NODES_GROUP_LIMITED) {
		return true;
	}
	uint32_t groups = 0;
	if (!m->n_groups) {
		ld_error(ld, m->node_policy, "node_policy group_limited needs n_groups");
		return false;
	}
	if (!ld_get_u32(ld, m->n_groups, "n_groups", 1, out->n_experts, &groups)) {
		return false;
	}
	if (out->n_experts % groups != 0) {
		ld_error(ld, m->n_groups, "n_groups: %u groups do not divide the %u experts", groups,
			 out->n_experts);
		return false;
	}
	out->n_groups = groups;
	uint32_t size = out->n_experts / groups;
	uint32_t node_slots = per_node * out->slots_per_gpu;
	/* A group's node is where most of its replicas are (the lowest on
	 * ties); the replicas elsewhere are the errors. */
	uint32_t nodes = out->gpus / per_node;
	uint32_t *home = malloc(sizeof(*home) * groups);
	uint32_t *count = malloc(sizeof(*count) * (size_t)groups * nodes);
	if (!home || !count) {
		free(home);
		free(count);
		ld_fail(ld, MP_ENOMEM);
		return false;
	}
	uint32_t problems = 0;
	for (uint32_t l = 0; l < rows; l++) {
		memset(count, 0, sizeof(*count) * (size_t)groups * nodes);
		for (uint32_t p = 0; p < slots; p++) {
			uint32_t e = ids[(size_t)l * slots + p];
			count[(size_t)(e / size) * nodes + p / node_slots]++;
		}
		for (uint32_t q = 0; q < groups; q++) {
			home[q] = 0;
			for (uint32_t n = 1; n < nodes; n++) {
				if (count[(size_t)q * nodes + n] > count[(size_t)q * nodes + home[q]]) {
					home[q] = n;
				}
			}
		}
		for (uint32_t p = 0; p < slots; p++) {
			uint32_t e = ids[(size_t)l * slots + p];
			uint32_t q = e / size;
			uint32_t node = p / node_slots;
			if (home[q] != node && problems++ < 20) {
				const yaml_node_t *row = ld_node(ld, m->ids->data.sequence.items.start[l]);
				const yaml_node_t *cell = row && row->type == YAML_SEQUENCE_NODE
					? ld_node(ld, row->data.sequence.items.start[p]) : m->ids;
				ld_error(ld, cell, "%s[%u][%u] (layer %u, GPU %u, slot %u): expert %u of group "
					 "%u is on node %u, but its group is on node %u; node_policy "
					 "group_limited keeps every group within one node",
					 m->what, l, p, l, p / out->slots_per_gpu, p % out->slots_per_gpu, e, q,
					 node, home[q]);
			}
		}
	}
	free(count);
	free(home);
	if (problems > 20) {
		ld_error(ld, m->ids, "... and %u more replicas outside their group's node", problems - 20);
	}
	return problems == 0;
}

/* A moeplan placement says where each expert is twice: per GPU in
 * layers[].gpu_experts and per slot in physical_to_logical. A hand edit of
 * one without the other would make `check` judge a map the engine never
 * sees, so both must agree. */
static void check_gpu_experts(struct ld *ld, const struct map_source *m, const uint32_t *ids,
			      uint32_t rows, uint32_t slots, uint32_t per_gpu)
{
	if (!m->layers) {
		return;
	}
	uint32_t n = list_length(m->layers);
	for (uint32_t l = 0; l < n && l < rows; l++) {
		const yaml_node_t *layer = ld_node(ld, m->layers->data.sequence.items.start[l]);
		const yaml_node_t *gpus = layer ? ld_get(ld, layer, "gpu_experts") : NULL;
		if (!gpus || gpus->type != YAML_SEQUENCE_NODE) {
			continue;
		}
		uint32_t n_gpus = list_length(gpus);
		if ((uint64_t)n_gpus * per_gpu != slots) {
			ld_error(ld, gpus, "layers[%u].gpu_experts: %u GPUs, but physical_to_logical has "
				 "%u slots of %u per GPU", l, n_gpus, slots, per_gpu);
			return;
		}
		for (uint32_t g = 0; g < n_gpus; g++) {
			const yaml_node_t *row = ld_node(ld, gpus->data.sequence.items.start[g]);
			if (!row || row->type != YAML_SEQUENCE_NODE || list_length(row) != per_gpu) {
				ld_error(ld, row ? row : gpus, "layers[%u].gpu_experts[%u]: expected %u "
					 "expert ids, one per slot of the GPU", l, g, per_gpu);
				return;
			}
			for (uint32_t k = 0; k < per_gpu; k++) {
				const yaml_node_t *cell = ld_node(ld, row->data.sequence.items.start[k]);
				uint32_t e = 0;
				if (!ld_get_u32(ld, cell, "gpu_experts", 0, MP_MAX_EXPERTS - 1, &e)) {
					return;
				}
				uint32_t want = ids[(size_t)l * slots + (size_t)g * per_gpu + k];
				if (e != want) {
					ld_error(ld, cell, "layers[%u].gpu_experts[%u][%u] is expert %u but "
						 "physical_to_logical[%u][%u] says %u: the two disagree (edited by hand?)",
						 l, g, k, e, l, g * per_gpu + k, want);
					return;
				}
			}
		}
	}
}

/* Records about a map's ids before the rest are only counted. */
#define MAP_MAX_PROBLEMS 20u

struct map_problems {
	struct ld *ld;
	size_t count;
};

static void map_problem(struct map_problems *mp, const yaml_node_t *node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void map_problem(struct map_problems *mp, const yaml_node_t *node, const char *fmt, ...)
{
	mp->count++;
	if (mp->count > MAP_MAX_PROBLEMS) {
		ld_fail(mp->ld, MP_EINVAL);
		return;
	}
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ld_error(mp->ld, node, "%s", buf);
}

/* The ids of a [rows][slots] map against n_experts: ids in range, every
 * expert with a slot, and (distinct) no expert in two slots of one GPU.
 * Returns false after reporting every problem. */
static bool check_ids(struct ld *ld, const struct map_source *m, const uint32_t *ids,
		      uint32_t rows, uint32_t slots, uint32_t per_gpu, uint32_t n_experts,
		      bool distinct)
{
	/* first[e]: 1 + the first slot holding e on the latest GPU that
	 * has it, 0 = none in this layer */
	uint32_t *first = calloc(n_experts, sizeof(*first));
	if (!first) {
		ld_fail(ld, MP_ENOMEM);
		return false;
	}
	struct map_problems mp = {.ld = ld};
	const yaml_node_t *list = m->ids;
	/* Ids out of range first: one bad id explains the rest (an expert
	 * that lost its slot to it). */
	for (uint32_t l = 0; l < rows; l++) {
		const yaml_node_t *row = ld_node(ld, list->data.sequence.items.start[l]);
		for (uint32_t s = 0; s < slots; s++) {
			uint32_t e = ids[(size_t)l * slots + s];
			if (e != MAP_BAD_ID && e >= n_experts) {
				const yaml_node_t *cell = ld_node(ld, row->data.sequence.items.start[s]);
				map_problem(&mp, cell, "%s[%u][%u] (layer %u, GPU %u, slot %u): expert %u is out "
					    "of range (the model has %u experts, ids 0 to %u)", m->what, l, s, l,
					    s / per_gpu, s % per_gpu, e, n_experts, n_experts - 1);
			}
		}
	}
	for (uint32_t l = 0; l < rows; l++) {
		const yaml_node_t *row = ld_node(ld, list->data.sequence.items.start[l]);
		memset(first, 0, (size_t)n_experts * sizeof(*first));
		for (uint32_t s = 0; s < slots; s++) {
			uint32_t e = ids[(size_t)l * slots + s];
			const yaml_node_t *cell = ld_node(ld, row->data.sequence.items.start[s]);
			uint32_t g = s / per_gpu;
			if (e == MAP_BAD_ID || e >= n_experts) {
				continue;
			}
			if (first[e] == 0 || (first[e] - 1) / per_gpu != g) {
				/* GPUs come in order: keep e's first slot on this GPU */
				first[e] = s + 1;
			} else if (distinct) {
				/* Worded, at the file level, as `moeplan check` has
				 * always printed it: scripts and tests match it. */
				map_problem(&mp, cell, "layer %u, GPU %u: slot %u (physical %u) holds expert %u, "
					    "already in slot %u (physical %u) of the same GPU", l, g, s % per_gpu,
					    s, e, (first[e] - 1) % per_gpu, first[e] - 1);
			}
		}
		for (uint32_t e = 0; e < n_experts; e++) {
			if (first[e] == 0) {
				map_problem(&mp, row, "%s[%u]: expert %u has no slot (every expert needs at "
					    "least one)", m->what, l, e);
			}
		}
	}
	free(first);
	if (mp.count > MAP_MAX_PROBLEMS) {
		ld_error_at(ld, 0, 0, "... and %zu more problems in %s", mp.count - MAP_MAX_PROBLEMS,
			    m->what);
	}
	return mp.count == 0 && ld->status == 0;
}

/* Without a known expert count, a map's count is its largest id + 1: one
 * stray id (999 in a 384-expert map) would turn into hundreds of experts
 * with no slot. When fewer distinct ids appear than that count, name the
 * largest id first. */
static void note_sparse_ids(struct ld *ld, const struct map_source *m, const uint32_t *ids,
			    uint32_t rows, uint32_t slots, uint32_t per_gpu, uint32_t n_experts)
{
	unsigned char *seen = calloc(n_experts, 1);
	if (!seen) {
		ld_fail(ld, MP_ENOMEM);
		return;
	}
	uint32_t distinct = 0;
	size_t at = 0;
	for (size_t i = 0; i < (size_t)rows * slots; i++) {
		uint32_t e = ids[i];
		if (e == MAP_BAD_ID || e >= n_experts) {
			continue;
		}
		distinct += !seen[e];
		seen[e] = 1;
		if (e == n_experts - 1 && at == 0) {
			at = i + 1;
		}
	}
	uint32_t next = n_experts - 1; /* the largest id below the largest */
	while (next > 0 && !seen[next - 1]) {
		next--;
	}
	free(seen);
	if (distinct >= n_experts || at == 0 || next == 0) {
		return;
	}
	uint32_t l = (uint32_t)((at - 1) / slots), s = (uint32_t)((at - 1) % slots);
	const yaml_node_t *row = ld_node(ld, m->ids->data.sequence.items.start[l]);
	const yaml_node_t *cell = ld_node(ld, row->data.sequence.items.start[s]);
	ld_error(ld, cell, "%s[%u][%u] (layer %u, GPU %u, slot %u): expert %u is the largest id, the "
		 "next is %u: if the model has %u experts, this id is out of range (give --experts or "
		 "--model to check against the model)", m->what, l, s, l, s / per_gpu, s % per_gpu,
		 n_experts - 1, next - 1, next);
}

/* A torch.save map (SGLang's --init-expert-location .pt, or the
 * last_physical_to_logical_map of its per-token dump): the same rules as
 * the JSON maps, reported without line:col (the file is binary), naming
 * layer, GPU and slot; up to MAP_TORCH_PROBLEMS records. */
#define MAP_TORCH_PROBLEMS 20

static int torch_problem(const char *path, struct mp_diags *diags, unsigned *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int torch_problem(const char *path, struct mp_diags *diags, unsigned *n, const char *fmt, ...)
{
	if ((*n)++ < MAP_TORCH_PROBLEMS) {
		char msg[400];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		mp_diags_add(diags, path, 0, 0, MP_EINVAL, "%s", msg);
	}
	return MP_EINVAL;
}

static int load_map_torch(const char *path, uint32_t gpus, uint32_t want_experts, bool distinct,
			  struct mp_placement *out, struct mp_diags *diags)
{
	uint32_t *ids = NULL;
	uint32_t rows = 0;
	uint32_t slots = 0;
	const char *what = NULL;
	int rc = ld_torch_map(path, &ids, &rows, &slots, &what, diags);
	if (rc != 0) {
		return rc;
	}
	unsigned problems = 0;
	if (gpus == 0) {
		rc = torch_problem(path, diags, &problems, "%s: the file does not say how many GPUs the %u "
				   "slots are on; give the GPU count (--gpus N)", what, slots);
	} else if (slots % gpus != 0 || slots / gpus > MP_MAX_SLOTS_PER_GPU) {
		rc = torch_problem(path, diags, &problems, "%s: %u slots do not divide evenly over %u GPUs "
				   "(at most %u per GPU)", what, slots, gpus, MP_MAX_SLOTS_PER_GPU);
	}
	uint32_t max_id = 0;
	for (size_t i = 0; rc == 0 && i < (size_t)rows * slots; i++) {
		max_id = ids[i] > max_id ? ids[i] : max_id;
	}
	/* At least 1: with no GPUs or too few slots rc is already set above. */
	const uint32_t per_gpu = gpus && slots >= gpus ? slots / gpus : 1;
	if (rc == 0 && want_experts && max_id >= want_experts) {
		for (size_t i = 0; i < (size_t)rows * slots; i++) {
			if (ids[i] >= want_experts) {
				rc = torch_problem(path, diags, &problems, "%s[%zu][%zu] (layer %zu, GPU %zu, slot "
						   "%zu): expert %u is out of range (the model has %u experts, ids 0 "
						   "to %u)", what, i / slots, i % slots, i / slots, (i % slots) / per_gpu,
						   (i % slots) % per_gpu, ids[i], want_experts, want_experts - 1);
			}
		}
	}
	const uint32_t E = want_experts ? want_experts : max_id + 1;
	uint32_t *where = rc == 0 ? malloc((size_t)E * sizeof(*where)) : NULL;
	if (rc == 0 && !where) {
		rc = MP_ENOMEM;
	}
	for (uint32_t l = 0; rc != MP_ENOMEM && where && l < rows; l++) {
		const uint32_t *row = ids + (size_t)l * slots;
		for (uint32_t e = 0; e < E; e++) {
			where[e] = UINT32_MAX;
		}
		for (uint32_t p = 0; p < slots; p++) {
			uint32_t e = row[p];
			if (distinct && where[e] != UINT32_MAX && where[e] / per_gpu == p / per_gpu) {
				rc = torch_problem(path, diags, &problems, "%s: layer %u, GPU %u: expert %u is in "
						   "slots %u and %u (one GPU holds at most one replica)", what, l,
						   p / per_gpu, e, where[e] % per_gpu, p % per_gpu);
			}
			where[e] = p;
		}
		for (uint32_t e = 0; e < E; e++) {
			if (where[e] == UINT32_MAX) {
				rc = torch_problem(path, diags, &problems, "%s: layer %u: expert %u has no slot "
						   "(every expert needs one)", what, l, e);
			}
		}
	}
	free(where);
	if (problems > MAP_TORCH_PROBLEMS) {
		mp_diags_add(diags, path, 0, 0, MP_EINVAL, "... and %u more problems",
			     problems - MAP_TORCH_PROBLEMS);
	}
	struct mp_placement tmp;
	mp_placement_init(&tmp);
	if (rc == 0) {
		rc = mp_placement_alloc(&tmp, rows, E, gpus, per_gpu);
	}
	for (uint32_t l = 0; rc == 0 && l < rows; l++) {
		memcpy(tmp.layers[l].slot_expert, ids + (size_t)l * slots, (size_t)slots * sizeof(uint32_t));
	}
	if (rc == 0) {
		mp_placement_finish(out);
		*out = tmp;
		mp_placement_init(&tmp);
	}
	mp_placement_finish(&tmp);
	free(ids);
	return rc;
}

static int load_map(const char *path, const char *phase, uint32_t gpus, uint32_t want_experts,
		    bool distinct, struct mp_placement *out, struct mp_diags *diags)
{
	struct ld ld;
	uint32_t *ids = NULL;
	struct mp_placement tmp;
	mp_placement_init(&tmp);
	if (phase && strcmp(phase, "decode") != 0 && strcmp(phase, "prefill") != 0) {
		return mp_diags_add(diags, path, 0, 0, MP_EINVAL,
				    "unknown phase '%s' (expected decode or prefill)", phase);
	}
	if (ld_is_zip(path)) {
		return load_map_torch(path, gpus, want_experts, distinct, out, diags);
	}
	int rc = ld_open(&ld, path, diags);
	struct map_source m = {0};
	if (rc != 0) {
		goto done;
	}
	find_map(&ld, ld_root(&ld), phase, &m);
	uint32_t rows = 0;
	uint32_t slots = 0;
	uint32_t max_id = 0;
	uint32_t file_gpus = 0;
	if (m.gpus && ld_get_u32(&ld, m.gpus, m.gpus_key, 1, MP_MAX_GPUS, &file_gpus)) {
		if (gpus && file_gpus != gpus) {
			ld_error(&ld, m.gpus, "%s: the file says %u GPUs, but %u were asked for", m.gpus_key,
				 file_gpus, gpus);
			goto done;
		}
		gpus = file_gpus;
	}
	if (!m.ids || !read_id_matrix(&ld, m.ids, m.what, gpus, &ids, &rows, &slots, &max_id)) {
		goto done;
	}
	if (gpus == 0) {
		ld_error(&ld, m.at, "%s: the file does not say how many GPUs the %u slots are on; "
			 "give the GPU count (--gpus N)", m.what, slots);
		goto done;
	}
	if (gpus > MP_MAX_GPUS) {
		ld_error(&ld, m.at, "%s: %u GPUs, more than the limit of %u", m.what, gpus, MP_MAX_GPUS);
		goto done;
	}
	if (slots % gpus != 0) {
		ld_error(&ld, m.at, "%s: %u slots do not divide evenly over %u GPUs", m.what, slots, gpus);
		goto done;
	}
	uint32_t per_gpu = slots / gpus;
	if (per_gpu > MP_MAX_SLOTS_PER_GPU) {
		ld_error(&ld, m.at, "%s: %u slots per GPU, more than the limit of %u", m.what, per_gpu,
			 MP_MAX_SLOTS_PER_GPU);
		goto done;
	}
	uint32_t file_per_gpu = 0;
	if (m.slots_per_gpu &&
	    ld_get_u32(&ld, m.slots_per_gpu, "slots_per_gpu", 1, MP_MAX_SLOTS_PER_GPU, &file_per_gpu) &&
	    file_per_gpu != per_gpu) {
		ld_error(&ld, m.slots_per_gpu, "slots_per_gpu: the file says %u, but its rows hold %u "
			 "slots on %u GPUs (%u per GPU)", file_per_gpu, slots, gpus, per_gpu);
		goto done;
	}
	/* Ids that did not parse were reported by read_id_matrix; the checks
	 * below still run, so that one pass shows every problem. */
	bool bad_ids = ld.status != 0;
	size_t errors_before = ld.errors;
	if (!bad_ids) {
		check_gpu_experts(&ld, &m, ids, rows, slots, per_gpu);
	}
	if (ld.errors != errors_before) {
		goto done;
	}
	uint32_t n_experts = max_id + 1;
	if (m.experts_hint) {
		n_experts = m.experts_hint;
	}
	if (m.n_experts && !ld_get_u32(&ld, m.n_experts, "n_experts", 1, MP_MAX_EXPERTS, &n_experts)) {
		goto done;
	}
	if (ld.errors != errors_before) {
		goto done;
	}
	if (want_experts) {
		if (m.n_experts && n_experts != want_experts) {
			ld_error(&ld, m.n_experts, "n_experts: the file says %u, but the model has %u",
				 n_experts, want_experts);
			goto done;
		}
		n_experts = want_experts;
	} else if (!m.experts_hint && !m.n_experts) {
		note_sparse_ids(&ld, &m, ids, rows, slots, per_gpu, n_experts);
	}
	/* Every id in range, every expert placed at least once and, when
	 * distinct, no expert twice on one GPU. Every problem is reported (up
	 * to MAP_MAX_PROBLEMS records, then one "... and N more"). */
	if (!check_ids(&ld, &m, ids, rows, slots, per_gpu, n_experts, distinct)) {
		goto done;
	}
	if (ld.status != 0) {
		goto done;
	}
	rc = mp_placement_alloc(&tmp, rows, n_experts, gpus, per_gpu);
	if (rc != 0) {
		ld_error(&ld, m.at, "%s: cannot hold %u layers of %u slots for %u experts", m.what, rows,
			 slots, n_experts);
		ld_fail(&ld, rc);
		goto done;
	}
	for (uint32_t l = 0; l < rows; l++) {
		memcpy(tmp.layers[l].slot_expert, ids + (size_t)l * slots, (size_t)slots * sizeof(uint32_t));
	}
	if (!read_nodes(&ld, &m, ids, rows, slots, &tmp)) {
		goto done;
	}
done:
	rc = ld.status;
	if (rc == 0) {
		mp_placement_finish(out);
		*out = tmp;
		mp_placement_init(&tmp);
	}
	ld_close(&ld);
	free(ids);
	mp_placement_finish(&tmp);
	return rc;
}

int mp_load_map(const char *path, const char *phase, uint32_t gpus,
		struct mp_placement *out, struct mp_diags *diags)
{
	return load_map(path, phase, gpus, 0, false, out, diags);
}

int mp_load_map_strict(const char *path, const char *phase, uint32_t gpus,
		       struct mp_placement *out, struct mp_diags *diags)
{
	return load_map(path, phase, gpus, 0, true, out, diags);
}

int mp_load_map_experts(const char *path, const char *phase, uint32_t gpus, uint32_t n_experts,
			bool distinct, struct mp_placement *out, struct mp_diags *diags)
{
	return load_map(path, phase, gpus, n_experts, distinct, out, diags);
}

int mp_load_plan_traffic(const char *path, uint32_t *top_k, struct mp_loads *out,
			 struct mp_diags *diags)
{
	struct ld ld;
	*top_k = 0;
	if (ld_is_zip(path)) {
		return 0; /* an engine's torch.save map records no traffic */
	}
	int rc = ld_open(&ld, path, diags);
	if (rc != 0) {
		return rc;
	}
	const yaml_node_t *root = ld_root(&ld);
	struct mp_loads tmp;
	mp_loads_init(&tmp);
	if (root->type == YAML_MAPPING_NODE && ld_has(&ld, root, "moeplan")) {
		const yaml_node_t *model = ld_get(&ld, root, "model");
		if (model && model->type == YAML_MAPPING_NODE) {
			ld_get_u32(&ld, ld_get(&ld, model, "top_k"), "model.top_k", 1, MP_MAX_EXPERTS, top_k);
		}
		const yaml_node_t *loads = ld_get(&ld, root, "expert_loads");
		if (loads && loads->type == YAML_SEQUENCE_NODE && loads->data.sequence.items.top !=
								 loads->data.sequence.items.start) {
			ld_parse_loads_array(&ld, loads, "expert_loads", &tmp);
		}
	}
	rc = ld.status;
	if (rc == 0) {
		mp_loads_finish(out);
		*out = tmp;
	} else {
		mp_loads_finish(&tmp);
	}
	ld_close(&ld);
	return rc;
}
