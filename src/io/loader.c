/* Reading inputs: files, the libyaml document, typed getters with
 * `file:line:col` diagnostics, quantities with units, "did you mean". */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader-internal.h"

/* MP_MAX_INPUT_BYTES as a 64-bit count. */
static const uint64_t max_input = (uint64_t)MP_MAX_INPUT_BYTES;

/* ---------------------------------------------------------------- files */

char *ld_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *copy = malloc(n);
	if (copy) {
		memcpy(copy, s, n);
	}
	return copy;
}

void ld_text_finish(struct ld_text *text)
{
	if (!text) {
		return;
	}
	free(text->data);
	text->data = NULL;
	text->size = 0;
}

/* 1-based line and column of byte offset `at` in data. */
static void position_of(const char *data, size_t at, int *line, int *column)
{
	int l = 1;
	int c = 1;
	for (size_t i = 0; i < at; i++) {
		if (data[i] == '\n') {
			l++;
			c = 1;
		} else {
			c++;
		}
	}
	*line = l;
	*column = c;
}

int ld_read_text(const char *path, struct ld_text *out, struct mp_diags *diags)
{
	int rc = 0;
	int fd = -1;
	char *data = NULL;
	size_t size = 0;
	size_t capacity = 0;
	const bool is_stdin = strcmp(path, "-") == 0;

	if (is_stdin) {
		fd = STDIN_FILENO;
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rc = mp_diags_add(diags, path, 0, 0, MP_EIO, "cannot open: %s", strerror(errno));
			rc = rc == MP_ENOMEM ? rc : MP_EIO;
			goto out;
		}
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		rc = mp_diags_add(diags, path, 0, 0, MP_EIO, "cannot read: %s", strerror(errno));
		rc = rc == MP_ENOMEM ? rc : MP_EIO;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = mp_diags_add(diags, path, 0, 0, MP_EINVAL, "is a directory, expected a file");
		goto out;
	}
	if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max_input) {
		rc = mp_diags_add(diags, path, 0, 0, MP_EINVAL,
				  "file is too large: %jd bytes (inputs are limited to %u bytes)",
				  (intmax_t)st.st_size, MP_MAX_INPUT_BYTES);
		goto out;
	}
	for (;;) {
		if (size == capacity) {
			if (capacity > max_input) {
				rc = mp_diags_add(diags, path, 0, 0, MP_EINVAL,
						  "input is too large: more than %u bytes",
						  MP_MAX_INPUT_BYTES);
				goto out;
			}
			size_t grow = capacity ? capacity * 2 : 65536;
			if (S_ISREG(st.st_mode) && capacity == 0 && st.st_size > 0) {
				grow = (size_t)st.st_size + 1;
			}
			if (grow > max_input + 1) {
				grow = (size_t)max_input + 1;
			}
			if (grow <= capacity) {
				grow = capacity + 1;
			}
			char *bigger = realloc(data, grow + 1);
			if (!bigger) {
				rc = MP_ENOMEM;
				goto out;
			}
			data = bigger;
			capacity = grow;
		}
		ssize_t n = read(fd, data + size, capacity - size);
		if (n < 0) {
			if (errno == EINTR) {
				continue;
			}
			if (errno == EISDIR) {
				rc = mp_diags_add(diags, path, 0, 0, MP_EINVAL,
						  "is a directory, expected a file");
				goto out;
			}
			rc = mp_diags_add(diags, path, 0, 0, MP_EIO, "cannot read: %s", strerror(errno));
			rc = rc == MP_ENOMEM ? rc : MP_EIO;
			goto out;
		}
		if (n == 0) {
			break;
		}
		size += (size_t)n;
		if (size > max_input) {
			rc = mp_diags_add(diags, path, 0, 0, MP_EINVAL,
					  "input is too large: more than %u bytes", MP_MAX_INPUT_BYTES);
			goto out;
		}
	}
	if (size == 0) {
		rc = mp_diags_add(diags, path, 0, 0, MP_EINVAL, "file is empty");
		goto out;
	}
	data[size] = '\0';
	const char *nul = memchr(data, '\0', size);
	if (nul) {
		int line = 0;
		int column = 0;
		position_of(data, (size_t)(nul - data), &line, &column);
		rc = mp_diags_add(diags, path, line, column, MP_EINVAL,
				  "NUL byte in the input (expected a text file)");
		goto out;
	}
	ld_text_finish(out);
	out->data = data;
	out->size = size;
	data = NULL;
out:
	if (fd >= 0 && !is_stdin) {
		close(fd);
	}
	free(data);
	return rc;
}

/* ----------------------------------------------------------- diagnostics */

void ld_fail(struct ld *ld, int code)
{
	if (code == MP_ENOMEM || ld->status == MP_ENOMEM) {
		ld->status = MP_ENOMEM;
	} else if (code < 0 && ld->status == 0) {
		ld->status = code;
	}
}

__attribute__((format(printf, 4, 0)))
static void verror_at(struct ld *ld, int line, int column, const char *fmt, va_list ap)
{
	ld_fail(ld, MP_EINVAL);
	ld->errors++;
	if (ld->errors > LD_MAX_ERRORS + 1) {
		return;
	}
	if (ld->errors == LD_MAX_ERRORS + 1) {
		int rc = mp_diags_add(ld->diags, ld->path, line, column, MP_EINVAL,
				      "too many errors; stopping after %u", LD_MAX_ERRORS);
		if (rc == MP_ENOMEM) {
			ld_fail(ld, rc);
		}
		return;
	}
	char buf[1024];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	/* A diagnostic is one line, whatever the user's value or path it
	 * quotes holds (a YAML scalar may keep line breaks). */
	for (char *p = buf; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			*p = '?';
		}
	}
	int rc = mp_diags_add(ld->diags, ld->path, line, column, MP_EINVAL, "%s", buf);
	if (rc == MP_ENOMEM) {
		ld_fail(ld, rc);
	}
}

void ld_error_at(struct ld *ld, int line, int column, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verror_at(ld, line, column, fmt, ap);
	va_end(ap);
}

void ld_warn(struct ld *ld, const yaml_node_t *node, const char *fmt, ...)
{
	int line = node ? (int)node->start_mark.line + 1 : 0;
	int column = node ? (int)node->start_mark.column + 1 : 0;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (char *p = buf; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			*p = '?';
		}
	}
	if (mp_diags_add(ld->diags, ld->path, line, column, MP_OK, "%s", buf) == MP_ENOMEM) {
		ld_fail(ld, MP_ENOMEM);
	}
}

void ld_error(struct ld *ld, const yaml_node_t *node, const char *fmt, ...)
{
	int line = 0;
	int column = 0;
	if (node) {
		line = (int)node->start_mark.line + 1;
		column = (int)node->start_mark.column + 1;
	}
	va_list ap;
	va_start(ap, fmt);
	verror_at(ld, line, column, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ YAML */

static void report_parser_error(struct ld *ld, const yaml_parser_t *parser,
				const struct ld_text *text)
{
	if (parser->error == YAML_MEMORY_ERROR) {
		ld_fail(ld, MP_ENOMEM);
		return;
	}
	const char *problem = parser->problem ? parser->problem : "malformed input";
	if (parser->error == YAML_READER_ERROR) {
		/* Encoding problems: the mark is a byte offset. */
		int line = 0;
		int column = 0;
		if (parser->problem_offset <= text->size) {
			position_of(text->data, parser->problem_offset, &line, &column);
		}
		ld_error_at(ld, line, column, "invalid text (not UTF-8?): %s", problem);
		return;
	}
	int line = (int)parser->problem_mark.line + 1;
	int column = (int)parser->problem_mark.column + 1;
	if (parser->context) {
		ld_error_at(ld, line, column, "invalid YAML: %s (%s at line %d)", problem,
			    parser->context, (int)parser->context_mark.line + 1);
	} else {
		ld_error_at(ld, line, column, "invalid YAML: %s", problem);
	}
}

/* Deep flow nesting is refused before parsing (LD_MAX_FLOW_DEPTH). */
bool ld_depth_scan(struct ld_depth *st, const char *data, size_t n, size_t *at)
{
	for (size_t i = 0; i < n; i++) {
		char c = data[i];
		char prev = st->prev;
		st->prev = c;
		if (c == '\n') {
			st->comment = false;
		} else if (st->comment) {
			continue;
		} else if (c == '#' && (prev == ' ' || prev == '\t' || prev == '\n')) {
			st->comment = true;
		} else if (c == '[' || c == '{') {
			st->depth++;
			if (st->depth > LD_MAX_FLOW_DEPTH) {
				*at = st->seen + i;
				return true;
			}
		} else if ((c == ']' || c == '}') && st->depth > 0) {
			st->depth--;
		}
	}
	st->seen += n;
	return false;
}

bool ld_text_too_deep(const struct ld_text *text, size_t *at)
{
	struct ld_depth st = LD_DEPTH_INIT;
	return ld_depth_scan(&st, text->data, text->size, at);
}

static bool flow_too_deep(struct ld *ld, const struct ld_text *text)
{
	size_t i = 0;
	if (!ld_text_too_deep(text, &i)) {
		return false;
	}
	int line = 0;
	int column = 0;
	position_of(text->data, i, &line, &column);
	ld_error_at(ld, line, column, "lists or mappings nested more than %d levels deep", LD_MAX_FLOW_DEPTH);
	return true;
}

/* True for a tag that makes a scalar a string: !!str (resolved by the
 * parser to tag:yaml.org,2002:str) or the non-specific '!' (YAML 1.2,
 * 6.9.1: "! 4" is not resolved as a number). */
static bool is_str_tag(const yaml_char_t *tag)
{
	return tag && (strcmp((const char *)tag, YAML_STR_TAG) == 0 ||
		       strcmp((const char *)tag, "!") == 0);
}

/* The start marks (index) of the first document's plain scalars tagged as
 * strings, ascending, from the parser's events: the document the loader
 * builds gives every untagged scalar the tag !!str too (libyaml
 * src/io/loader.c, yaml_parser_load_scalar), so only the event
 * (yaml_event_t.data.scalar.tag) tells them apart. 0 and *out NULL when
 * none; MP_ENOMEM. */
static int str_tag_marks(const struct ld_text *text, size_t **out, size_t *n_out)
{
	*out = NULL;
	*n_out = 0;
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser)) {
		return MP_ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text->data, text->size);
	size_t *marks = NULL, n = 0, cap = 0;
	int rc = 0;
	for (bool done = false; !done;) {
		yaml_event_t e;
		if (!yaml_parser_parse(&parser, &e)) {
			rc = MP_ENOMEM;  /* the same text loaded: only memory can fail */
			break;
		}
		done = e.type == YAML_DOCUMENT_END_EVENT || e.type == YAML_STREAM_END_EVENT;
		if (e.type == YAML_SCALAR_EVENT && e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    is_str_tag(e.data.scalar.tag)) {
			if (n == cap) {
				size_t *bigger = realloc(marks, (cap ? 2 * cap : 16) * sizeof(*marks));
				if (!bigger) {
					rc = MP_ENOMEM;
					done = true;
				} else {
					marks = bigger;
					cap = cap ? 2 * cap : 16;
				}
			}
			if (n < cap) {
				marks[n++] = e.start_mark.index;
			}
		}
		yaml_event_delete(&e);
	}
	yaml_parser_delete(&parser);
	if (rc) {
		free(marks);
		return rc;
	}
	*out = marks;
	*n_out = n;
	return 0;
}

/* A plain scalar tagged !!str is text, as a quoted one: give it the
 * single-quoted style (ld_is_quoted, ld_is_null and every reader of the
 * style then see text) and list its node in ld->str_tagged for messages.
 * Only a file with a '!' in it is parsed a second time for the tags. */
static void mark_str_tagged(struct ld *ld, const struct ld_text *text)
{
	if (!text->data || !memchr(text->data, '!', text->size)) {
		return;
	}
	size_t *marks = NULL, n_marks = 0;
	if (str_tag_marks(text, &marks, &n_marks)) {
		ld_fail(ld, MP_ENOMEM);
		return;
	}
	size_t next = 0;
	yaml_node_t *start = ld->doc.nodes.start;
	for (yaml_node_t *node = start; node < ld->doc.nodes.top && next < n_marks; node++) {
		if (node->type != YAML_SCALAR_NODE ||
		    node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
			continue;
		}
		while (next < n_marks && marks[next] < node->start_mark.index) {
			next++;
		}
		if (next < n_marks && marks[next] == node->start_mark.index) {
			node->data.scalar.style = YAML_SINGLE_QUOTED_SCALAR_STYLE;
			/* reuse marks as the node list: at most one node per mark */
			marks[ld->n_str_tagged++] = (size_t)(node - start);
			next++;
		}
	}
	ld->str_tagged = marks;
}

bool ld_is_str_tagged(const struct ld *ld, const yaml_node_t *node)
{
	if (!ld->have_doc || !node || node < ld->doc.nodes.start || node >= ld->doc.nodes.top) {
		return false;
	}
	size_t id = (size_t)(node - ld->doc.nodes.start), lo = 0, hi = ld->n_str_tagged;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ld->str_tagged[mid] < id) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo < ld->n_str_tagged && ld->str_tagged[lo] == id;
}

const char *ld_text_not_number(const struct ld *ld, const yaml_node_t *node, const char *value,
			       char *buf, size_t size)
{
	if (ld_is_str_tagged(ld, node)) {
		snprintf(buf, size, "the text '%s' tagged !!str (a number is written plain: no tag, "
			 "no quotes)", value);
	} else {
		snprintf(buf, size, "the quoted text '%s' (a number is written without quotes)", value);
	}
	return buf;
}

int ld_open_text(struct ld *ld, const char *path, const struct ld_text *text,
		 struct mp_diags *diags)
{
	*ld = (struct ld){.path = path, .diags = diags};
	if (flow_too_deep(ld, text)) {
		return ld->status;
	}
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser)) {
		ld_fail(ld, MP_ENOMEM);
		return ld->status;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text->data, text->size);
	if (!yaml_parser_load(&parser, &ld->doc)) {
		report_parser_error(ld, &parser, text);
		goto out;
	}
	ld->have_doc = true;
	mark_str_tagged(ld, text);
	yaml_node_t *root = yaml_document_get_root_node(&ld->doc);
	if (!root) {
		ld_error_at(ld, 0, 0, "no content: the file holds only comments or blank lines");
		goto out;
	}
	yaml_document_t next;
	if (!yaml_parser_load(&parser, &next)) {
		report_parser_error(ld, &parser, text);
		goto out;
	}
	yaml_node_t *extra = yaml_document_get_root_node(&next);
	if (extra) {
		ld_error(ld, extra, "a second YAML document ('---'): one document per file is expected");
	}
	yaml_document_delete(&next);
out:
	yaml_parser_delete(&parser);
	return ld->status;
}

int ld_open(struct ld *ld, const char *path, struct mp_diags *diags)
{
	struct ld_text text = {0};
	*ld = (struct ld){.path = path, .diags = diags};
	int rc = ld_read_text(path, &text, diags);
	if (rc != 0) {
		ld_fail(ld, rc);
		return rc;
	}
	rc = ld_open_text(ld, path, &text, diags);
	ld_text_finish(&text);
	return rc;
}

void ld_close(struct ld *ld)
{
	if (ld && ld->have_doc) {
		yaml_document_delete(&ld->doc);
		ld->have_doc = false;
	}
	if (ld) {
		free(ld->str_tagged);
		ld->str_tagged = NULL;
		ld->n_str_tagged = 0;
	}
}

yaml_node_t *ld_root(struct ld *ld)
{
	return ld->have_doc ? yaml_document_get_root_node(&ld->doc) : NULL;
}

yaml_node_t *ld_node(struct ld *ld, int id)
{
	return yaml_document_get_node(&ld->doc, id);
}

const char *ld_kind_name(const yaml_node_t *node)
{
	if (!node) {
		return "nothing";
	}
	switch (node->type) {
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_SCALAR_NODE:
		return ld_is_null(node) ? "null" : "text";
	case YAML_NO_NODE:
		break;
	}
	return "nothing";
}

bool ld_is_null(const yaml_node_t *node)
{
	if (!node || node->type != YAML_SCALAR_NODE) {
		return false;
	}
	if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
		return false;
	}
	const char *v = (const char *)node->data.scalar.value;
	return !v || v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
	       strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

bool ld_is_quoted(const yaml_node_t *node)
{
	return node && node->type == YAML_SCALAR_NODE &&
	       node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE &&
	       node->data.scalar.style != YAML_ANY_SCALAR_STYLE;
}

const char *ld_scalar(const yaml_node_t *node)
{
	if (!node || node->type != YAML_SCALAR_NODE) {
		return NULL;
	}
	return (const char *)node->data.scalar.value;
}

/* A short, printable rendering of a user's value for messages: control
 * characters become '?', long values are cut with "...". */
static const char *quote_value(const char *value, char *buf, size_t size)
{
	size_t n = 0;
	size_t i = 0;
	assert(size > 8);
	for (; value[i] && n + 4 < size && i < 60; i++) {
		unsigned char c = (unsigned char)value[i];
		buf[n] = value[i];
		if (c < 0x20 || c == 0x7f) {
			buf[n] = '?';
		}
		n++;
	}
	if (value[i]) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

/* ------------------------------------------------------------- mappings */

const char *ld_field(char *buf, size_t size, const char *prefix, const char *key)
{
	if (!prefix || !prefix[0]) {
		snprintf(buf, size, "%s", key);
	} else {
		snprintf(buf, size, "%s.%s", prefix, key);
	}
	return buf;
}

static bool in_list(const char *key, const char *const *keys)
{
	for (size_t i = 0; keys[i]; i++) {
		if (strcmp(key, keys[i]) == 0) {
			return true;
		}
	}
	return false;
}

struct key_ref {
	const char *name;
	size_t index;
};

static int compare_key_ref(const void *a, const void *b)
{
	const struct key_ref *x = a;
	const struct key_ref *y = b;
	int c = strcmp(x->name, y->name);
	if (c != 0) {
		return c;
	}
	return x->index < y->index ? -1 : x->index > y->index;
}

static bool check_map(struct ld *ld, const yaml_node_t *node, const char *what,
		      const char *const *keys)
{
	char vbuf[80];
	if (!node || node->type != YAML_MAPPING_NODE) {
		if (what && what[0]) {
			ld_error(ld, node, "%s: expected a mapping (key: value lines), got %s%s%s%s",
				 what, ld_kind_name(node), ld_scalar(node) ? " '" : "",
				 ld_scalar(node) ? quote_value(ld_scalar(node), vbuf, sizeof(vbuf)) : "",
				 ld_scalar(node) ? "'" : "");
		} else {
			ld_error(ld, node, "expected a mapping (key: value lines) at the top level, got %s%s%s%s",
				 ld_kind_name(node), ld_scalar(node) ? " '" : "",
				 ld_scalar(node) ? quote_value(ld_scalar(node), vbuf, sizeof(vbuf)) : "",
				 ld_scalar(node) ? "'" : "");
		}
		return false;
	}
	const yaml_node_pair_t *pairs = node->data.mapping.pairs.start;
	size_t n = (size_t)(node->data.mapping.pairs.top - pairs);
	const char *prefix = what && what[0] ? what : NULL;
	struct key_ref *refs = NULL;
	size_t *first_of = NULL; /* for each pair: index of the first pair with its key, or itself */
	if (n > 1) {
		refs = calloc(n, sizeof(*refs));
		first_of = calloc(n, sizeof(*first_of));
		if (!refs || !first_of) {
			ld_fail(ld, MP_ENOMEM);
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *key = yaml_document_get_node(&ld->doc, pairs[i].key);
		const char *name = ld_scalar(key);
		if (refs) {
			refs[i] = (struct key_ref){.name = name ? name : "", .index = i};
			first_of[i] = i;
		}
	}
	if (refs) {
		qsort(refs, n, sizeof(*refs), compare_key_ref);
		for (size_t i = 1; i < n; i++) {
			if (strcmp(refs[i].name, refs[i - 1].name) == 0) {
				first_of[refs[i].index] = first_of[refs[i - 1].index];
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *key = yaml_document_get_node(&ld->doc, pairs[i].key);
		const char *name = ld_scalar(key);
		if (!name) {
			ld_error(ld, key, "%s%skeys must be plain text, got %s", prefix ? prefix : "",
				 prefix ? ": " : "", ld_kind_name(key));
			continue;
		}
		char kbuf[80];
		if (first_of && first_of[i] != i) {
			yaml_node_t *first = yaml_document_get_node(&ld->doc, pairs[first_of[i]].key);
			ld_error(ld, key, "%s%sduplicate field '%s' (first given at line %d)",
				 prefix ? prefix : "", prefix ? ": " : "",
				 quote_value(name, kbuf, sizeof(kbuf)),
				 first ? (int)first->start_mark.line + 1 : 0);
			continue;
		}
		if (keys && !in_list(name, keys)) {
			const char *hint = ld_suggest(name, keys);
			if (hint) {
				ld_error(ld, key, "%s%sunknown field '%s' (did you mean '%s'?)",
					 prefix ? prefix : "", prefix ? ": " : "",
					 quote_value(name, kbuf, sizeof(kbuf)), hint);
			} else {
				char list[512];
				size_t used = 0;
				list[0] = '\0';
				for (size_t k = 0; keys[k] && used + 4 < sizeof(list); k++) {
					int w = snprintf(list + used, sizeof(list) - used, "%s%s",
							 k ? ", " : "", keys[k]);
					if (w < 0) {
						break;
					}
					used += (size_t)w;
				}
				ld_error(ld, key, "%s%sunknown field '%s' (expected one of: %s)",
					 prefix ? prefix : "", prefix ? ": " : "",
					 quote_value(name, kbuf, sizeof(kbuf)), list);
			}
		}
	}
out:
	free(refs);
	free(first_of);
	return true;
}

bool ld_check_map(struct ld *ld, const yaml_node_t *node, const char *what,
		  const char *const *keys)
{
	return check_map(ld, node, what, keys);
}

bool ld_check_map_lenient(struct ld *ld, const yaml_node_t *node, const char *what)
{
	return check_map(ld, node, what, NULL);
}

static const yaml_node_pair_t *find_pair(struct ld *ld, const yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE) {
		return NULL;
	}
	for (const yaml_node_pair_t *p = map->data.mapping.pairs.start;
	     p < map->data.mapping.pairs.top; p++) {
		const char *name = ld_scalar(yaml_document_get_node(&ld->doc, p->key));
		if (name && strcmp(name, key) == 0) {
			return p;
		}
	}
	return NULL;
}

yaml_node_t *ld_get(struct ld *ld, const yaml_node_t *map, const char *key)
{
	const yaml_node_pair_t *p = find_pair(ld, map, key);
	if (!p) {
		return NULL;
	}
	yaml_node_t *value = yaml_document_get_node(&ld->doc, p->value);
	return ld_is_null(value) ? NULL : value;
}

bool ld_has(struct ld *ld, const yaml_node_t *map, const char *key)
{
	return find_pair(ld, map, key) != NULL;
}

yaml_node_t *ld_require(struct ld *ld, const yaml_node_t *map, const char *what,
			const char *key)
{
	const yaml_node_pair_t *p = find_pair(ld, map, key);
	if (!p) {
		if (what && what[0]) {
			ld_error(ld, map, "%s: missing required field '%s'", what, key);
		} else {
			ld_error(ld, map, "missing required field '%s'", key);
		}
		return NULL;
	}
	yaml_node_t *value = yaml_document_get_node(&ld->doc, p->value);
	if (ld_is_null(value)) {
		char field[256];
		ld_error(ld, value, "%s: a value is required, got null",
			 ld_field(field, sizeof(field), what, key));
		return NULL;
	}
	return value;
}

/* ------------------------------------------------------------ numbers */

/* One load: a plain number from 0 to LD_MAX_LOAD. ld_parse_quantity
 * refuses a value that underflows (strtod's ERANGE for 1e-320); a load so
 * small rounds to a subnormal or to 0, both valid loads, so it is taken
 * here. An overflow (1e999) stays LDQ_RANGE. */
enum ld_qerr ld_parse_load(const char *text, double *out)
{
	enum ld_qerr e = ld_parse_quantity(text, NULL, out);
	if (e != LDQ_RANGE) {
		return e;
	}
	char *end = NULL;
	errno = 0;
	double v = strtod(text, &end);
	bool underflow = errno == ERANGE && fabs(v) <= DBL_MIN;
	while (*end == ' ' || *end == '\t') {
		end++;
	}
	if (!underflow || *end != '\0') {
		return LDQ_RANGE;
	}
	*out = v;
	return LDQ_OK;
}


/* Length of a decimal number at s: [+-]? (digits [. digits?] | . digits)
 * ([eE] [+-]? digits)?; 0 when there is none. */
static size_t scan_number(const char *s)
{
	size_t i = 0;
	size_t digits = 0;
	if (s[i] == '+' || s[i] == '-') {
		i++;
	}
	while (isdigit((unsigned char)s[i])) {
		i++;
		digits++;
	}
	if (s[i] == '.') {
		i++;
		while (isdigit((unsigned char)s[i])) {
			i++;
			digits++;
		}
	}
	if (digits == 0) {
		return 0;
	}
	if (s[i] == 'e' || s[i] == 'E') {
		size_t j = i + 1;
		if (s[j] == '+' || s[j] == '-') {
			j++;
		}
		if (isdigit((unsigned char)s[j])) {
			while (isdigit((unsigned char)s[j])) {
				j++;
			}
			i = j;
		}
	}
	return i;
}

struct unit {
	const char *name;
	double factor;
};

static const struct unit byte_units[] = {
	{"B", 1.0}, {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"PB", 1e15},
	{"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
	{"TiB", 1099511627776.0}, {"PiB", 1125899906842624.0}, {NULL, 0.0},
};

static const struct unit rate_units[] = {
	{"B/s", 1.0}, {"kB/s", 1e3}, {"KB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12},
	{"PB/s", 1e15}, {"KiB/s", 1024.0}, {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0},
	{"TiB/s", 1099511627776.0},
	/* Network links are quoted in bits: 400 Gbit/s = 50 GB/s. */
	{"bit/s", 0.125}, {"kbit/s", 125.0}, {"Mbit/s", 1.25e5}, {"Gbit/s", 1.25e8},
	{"Tbit/s", 1.25e11},
	/* The same in the spellings of NIC datasheets (issue 26): a lower-case
	 * b is a bit, "400 Gbps" = "400 Gb/s" = "400 Gbit/s" = 50 GB/s. */
	{"b/s", 0.125}, {"kb/s", 125.0}, {"Mb/s", 1.25e5}, {"Gb/s", 1.25e8}, {"Tb/s", 1.25e11},
	{"bps", 0.125}, {"kbps", 125.0}, {"Mbps", 1.25e5}, {"Gbps", 1.25e8}, {"Tbps", 1.25e11},
	{NULL, 0.0},
};

static const struct unit time_units[] = {
	{"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"min", 60.0}, {"h", 3600.0},
	{NULL, 0.0},
};

/* Token and request counts (kind "count", issue 26): a bare number, or an
 * SI suffix: 8k = 8K = 8,000, 1M = 1,000,000 (never 1,024: write 4096
 * where a power of two is meant). */
static const struct unit count_units[] = {
	{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {NULL, 0.0},
};

/* An SI prefix written without its unit ("80G", "400 T"): ambiguous
 * between bytes and bits (GB or Gbit/s), refused with a hint. */
static bool is_bare_prefix(const char *unit)
{
	static const char *const prefixes[] = {"k", "K", "M", "G", "T", "P", "Ki", "Mi", "Gi",
					       "Ti", "Pi", NULL};
	for (size_t i = 0; prefixes[i]; i++) {
		if (strcmp(unit, prefixes[i]) == 0) {
			return true;
		}
	}
	return false;
}

static bool find_unit(const struct unit *table, const char *name, double *factor)
{
	for (size_t i = 0; table[i].name; i++) {
		if (strcmp(table[i].name, name) == 0) {
			*factor = table[i].factor;
			return true;
		}
	}
	return false;
}

/* FLOP/s: an optional SI prefix, then "FLOP/s", "FLOPS", "OP/s" or "OPS"
 * in any case, or the short "TF"/"PF" forms (prefix required). */
static bool find_rate_unit(const char *name, double *factor)
{
	static const struct unit prefixes[] = {
		{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
		{NULL, 0.0},
	};
	double scale = 1.0;
	const char *rest = name;
	bool prefixed = false;
	for (size_t i = 0; prefixes[i].name; i++) {
		if (name[0] == prefixes[i].name[0]) {
			scale = prefixes[i].factor;
			rest = name + 1;
			prefixed = true;
			break;
		}
	}
	static const char *const bodies[] = {"flop/s", "flops", "op/s", "ops", NULL};
	for (size_t i = 0; bodies[i]; i++) {
		if (strcasecmp(rest, bodies[i]) == 0) {
			*factor = scale;
			return true;
		}
	}
	if (prefixed && strcmp(rest, "F") == 0) {
		*factor = scale;
		return true;
	}
	return false;
}

static bool unit_of_kind(const char *kind, const char *unit, double *factor)
{
	if (!kind) {
		return false;
	}
	if (strcmp(kind, "bytes") == 0) {
		return find_unit(byte_units, unit, factor);
	}
	if (strcmp(kind, "bytes/s") == 0) {
		return find_unit(rate_units, unit, factor);
	}
	if (strcmp(kind, "flop/s") == 0) {
		return find_rate_unit(unit, factor);
	}
	if (strcmp(kind, "count") == 0) {
		return find_unit(count_units, unit, factor);
	}
	/* Any other kind is a programming error. */
	assert(strcmp(kind, "seconds") == 0);
	return find_unit(time_units, unit, factor);
}

static const char *const quantity_kinds[] = {"bytes", "bytes/s", "flop/s", "seconds", NULL};

/* The kind a unit belongs to, or NULL. */
static const char *kind_of_unit(const char *unit)
{
	double factor = 0.0;
	for (size_t i = 0; quantity_kinds[i]; i++) {
		if (unit_of_kind(quantity_kinds[i], unit, &factor)) {
			return quantity_kinds[i];
		}
	}
	return NULL;
}

/* Where the unit starts in a quantity text ("" when none). */
static const char *unit_part(const char *text)
{
	const char *s = text;
	while (*s == ' ' || *s == '\t') {
		s++;
	}
	s += scan_number(s);
	while (*s == ' ' || *s == '\t') {
		s++;
	}
	return s;
}

/* True for a kind whose quantities need a unit: every kind but plain
 * numbers (NULL) and counts. */
static bool needs_unit(const char *kind)
{
	return kind && strcmp(kind, "count") != 0;
}

enum ld_qerr ld_parse_quantity(const char *text, const char *kind, double *out)
{
	const char *s = text;
	while (*s == ' ' || *s == '\t') {
		s++;
	}
	if (*s == '\0') {
		return LDQ_EMPTY;
	}
	size_t len = scan_number(s);
	if (len > 0 && s[len - 1] == '0' && (s[len] == 'x' || s[len] == 'X')) {
		return LDQ_NOT_NUMBER; /* hexadecimal: "0x10" */
	}
	if (len == 0) {
		const char *t = s;
		if (*t == '+' || *t == '-') {
			t++;
		}
		if (*t == '.') {
			t++;
		}
		if (strncasecmp(t, "inf", 3) == 0 || strncasecmp(t, "nan", 3) == 0) {
			return LDQ_NONFINITE;
		}
		return LDQ_NOT_NUMBER;
	}
	char small[64];
	char *copy = small;
	if (len >= sizeof(small)) {
		copy = malloc(len + 1);
		if (!copy) {
			return LDQ_RANGE;
		}
	}
	memcpy(copy, s, len);
	copy[len] = '\0';
	errno = 0;
	char *end = NULL;
	double value = strtod(copy, &end);
	bool whole = end == copy + len;
	bool range = errno == ERANGE;
	if (copy != small) {
		free(copy);
	}
	if (!whole) {
		return LDQ_NOT_NUMBER;
	}
	if (range || !isfinite(value)) {
		return LDQ_RANGE;
	}
	const char *u = s + len;
	while (*u == ' ' || *u == '\t') {
		u++;
	}
	size_t ulen = strlen(u);
	while (ulen > 0 && (u[ulen - 1] == ' ' || u[ulen - 1] == '\t')) {
		ulen--;
	}
	if (ulen == 0) {
		*out = value;
		return LDQ_OK;
	}
	char ubuf[32];
	if (ulen >= sizeof(ubuf)) {
		return kind ? LDQ_UNIT : LDQ_NO_UNIT;
	}
	memcpy(ubuf, u, ulen);
	ubuf[ulen] = '\0';
	if (!kind) {
		return LDQ_NO_UNIT;
	}
	double factor = 0.0;
	if (!unit_of_kind(kind, ubuf, &factor)) {
		return kind_of_unit(ubuf) ? LDQ_UNIT_KIND : LDQ_UNIT;
	}
	double result = value * factor;
	if (!isfinite(result)) {
		return LDQ_RANGE;
	}
	*out = result;
	return LDQ_OK;
}

int mp_parse_quantity(const char *text, const char *kind, double *out)
{
	double value = 0.0;
	if (!text || ld_parse_quantity(text, kind, &value) != LDQ_OK) {
		return MP_EINVAL;
	}
	*out = value;
	return 0;
}

const char *ld_units_help(const char *kind)
{
	if (!kind) {
		return "a plain number";
	}
	if (strcmp(kind, "bytes") == 0) {
		return "B, kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB";
	}
	if (strcmp(kind, "bytes/s") == 0) {
		return "B/s, kB/s, MB/s, GB/s, TB/s, PB/s, KiB/s, MiB/s, GiB/s, TiB/s, "
		       "or bits: Gbit/s, Gb/s, Gbps";
	}
	if (strcmp(kind, "count") == 0) {
		return "k = 1,000 or M = 1,000,000 (SI: 4K is 4,000; write 4096 where a power "
		       "of two is meant), or no unit";
	}
	if (strcmp(kind, "flop/s") == 0) {
		return "FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s (or TFLOPS, PF)";
	}
	if (strcmp(kind, "seconds") == 0) {
		return "s, ms, us, ns, min, h";
	}
	return "";
}

static const char *kind_noun(const char *kind)
{
	if (!kind) {
		return "a number";
	}
	if (strcmp(kind, "bytes") == 0) {
		return "a size";
	}
	if (strcmp(kind, "bytes/s") == 0) {
		return "a bandwidth";
	}
	if (strcmp(kind, "flop/s") == 0) {
		return "an arithmetic rate";
	}
	if (strcmp(kind, "count") == 0) {
		return "a count";
	}
	return "a duration";
}

static const char *base_unit(const char *kind)
{
	if (!kind) {
		return "";
	}
	if (strcmp(kind, "bytes") == 0) {
		return "B";
	}
	if (strcmp(kind, "bytes/s") == 0) {
		return "B/s";
	}
	if (strcmp(kind, "flop/s") == 0) {
		return "FLOP/s";
	}
	if (strcmp(kind, "count") == 0) {
		return "";
	}
	return "s";
}

/* "8 TB/s"-style rendering of a bound (SI prefixes, 3 significant digits). */
static void format_bound(double value, const char *kind, char *buf, size_t size)
{
	const char *unit = base_unit(kind);
	if (!kind || !(fabs(value) > 0.0) || strcmp(kind, "seconds") == 0 ||
	    strcmp(kind, "count") == 0) {
		snprintf(buf, size, "%g%s%s", value, unit[0] ? " " : "", unit);
		return;
	}
	static const char prefixes[] = " kMGTPE";
	double v = value;
	size_t p = 0;
	while (fabs(v) >= 1000.0 && p + 1 < sizeof(prefixes) - 1) {
		v /= 1000.0;
		p++;
	}
	if (p == 0) {
		snprintf(buf, size, "%g %s", v, unit);
	} else {
		snprintf(buf, size, "%g %c%s", v, prefixes[p], unit);
	}
}

enum ld_qerr ld_parse_u64(const char *text, uint64_t *out)
{
	if (!isdigit((unsigned char)text[0])) {
		return LDQ_NOT_NUMBER;
	}
	for (const char *p = text; *p; p++) {
		if (!isdigit((unsigned char)*p)) {
			return LDQ_NOT_NUMBER;
		}
	}
	errno = 0;
	char *end = NULL;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno == ERANGE || *end != '\0') {
		return LDQ_RANGE;
	}
	*out = (uint64_t)v;
	return LDQ_OK;
}

/* A scalar whose text is safe to use (not a mapping/list, no NUL; for a
 * plain number, not quoted: ld_is_quoted). Reports and returns NULL
 * otherwise. */
static const char *scalar_for(struct ld *ld, const yaml_node_t *node, const char *field,
			      const char *expected, bool plain_number)
{
	if (node->type != YAML_SCALAR_NODE) {
		ld_error(ld, node, "%s: expected %s, got %s", field, expected, ld_kind_name(node));
		return NULL;
	}
	const char *text = (const char *)node->data.scalar.value;
	if (strlen(text) != node->data.scalar.length) {
		ld_error(ld, node, "%s: expected %s, got text with a NUL character", field, expected);
		return NULL;
	}
	if (plain_number && ld_is_quoted(node)) {
		char vbuf[80], got[200];
		ld_error(ld, node, "%s: expected %s, got %s", field, expected,
			 ld_text_not_number(ld, node, quote_value(text, vbuf, sizeof(vbuf)), got,
					    sizeof(got)));
		return NULL;
	}
	return text;
}

bool ld_get_u64(struct ld *ld, const yaml_node_t *node, const char *field,
		uint64_t min, uint64_t max, uint64_t *out)
{
	if (!node) {
		return true;
	}
	char expected[96];
	snprintf(expected, sizeof(expected), "an integer from %ju to %ju", (uintmax_t)min,
		 (uintmax_t)max);
	const char *text = scalar_for(ld, node, field, expected, true);
	if (!text) {
		return false;
	}
	uint64_t v = 0;
	enum ld_qerr e = ld_parse_u64(text, &v);
	char vbuf[80];
	if (e != LDQ_OK || v < min || v > max) {
		ld_error(ld, node, "%s: expected %s, got '%s'%s", field, expected,
			 quote_value(text, vbuf, sizeof(vbuf)),
			 e == LDQ_RANGE ? " (too large)" : "");
		return false;
	}
	*out = v;
	return true;
}

bool ld_get_u32(struct ld *ld, const yaml_node_t *node, const char *field,
		uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;
	if (!node) {
		return true;
	}
	if (!ld_get_u64(ld, node, field, min, max, &v)) {
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

/* The unit an example in a message uses for kind. */
static const char *example_unit(const char *kind)
{
	if (strcmp(kind, "bytes") == 0) {
		return "GB";
	}
	if (strcmp(kind, "bytes/s") == 0) {
		return "GB/s";
	}
	if (strcmp(kind, "flop/s") == 0) {
		return "TFLOP/s";
	}
	return "ms";
}

/* Issue 26: a quantity of a kind with units (bytes, bytes/s, flop/s,
 * seconds) written without one ("hbm_bytes: 80" would be 80 B, "tpot:
 * 50" 50 s), or with an SI prefix and no unit ("80G": bytes or bits?).
 * Reports and returns true for either; 0 needs no unit. */
static bool unit_missing(struct ld *ld, const yaml_node_t *node, const char *field,
			 const char *kind, const char *text, enum ld_qerr e, double v)
{
	if (!needs_unit(kind)) {
		return false;
	}
	const char *unit = unit_part(text);
	char num[48];
	size_t n = (size_t)(unit - text);
	while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t')) {
		n--;
	}
	const char *start = text;
	while (n > 0 && (*start == ' ' || *start == '\t')) {
		start++;
		n--;
	}
	snprintf(num, sizeof(num), "%.*s", (int)(n < 40 ? n : 40), start);
	if (e == LDQ_OK && unit[0] == '\0' && v != 0.0) {
		/* The example: "80" -> '80 GB'; a number that looks like base
		 * units already ("989.5e12") -> '989.5e12 FLOP/s'. */
		const char *eg = fabs(v) >= 1e6 ? base_unit(kind) : example_unit(kind);
		if (strcmp(kind, "seconds") == 0) {
			ld_error(ld, node, "%s: a bare number %s has no unit; write it with one, e.g. "
				 "'%s ms' or '%s s' (units: %s)", field, num, num, num, ld_units_help(kind));
		} else {
			ld_error(ld, node, "%s: a bare number %s has no unit; write it with one, e.g. "
				 "'%s %s' (units: %s)", field, num, num, eg, ld_units_help(kind));
		}
		return true;
	}
	if (e != LDQ_UNIT || !is_bare_prefix(unit) || strcmp(kind, "seconds") == 0) {
		return false;
	}
	/* "80G" -> "80 GB" or "80 GiB"; "8k" -> "8 kB" or "8 KiB". */
	char letter = unit[0] == 'K' ? 'k' : unit[0];
	char dec[4] = {letter, '\0', '\0', '\0'};
	char bin[4] = {letter == 'k' ? 'K' : letter, 'i', '\0', '\0'};
	if (strcmp(kind, "bytes") == 0) {
		ld_error(ld, node, "%s: '%s%s' has a prefix but no unit; write '%s %sB' (powers of "
			 "1000) or '%s %sB' (powers of 1024)", field, num, unit, num, dec, num, bin);
	} else if (strcmp(kind, "bytes/s") == 0) {
		ld_error(ld, node, "%s: '%s%s' has a prefix but no unit (bytes or bits?); write "
			 "'%s %sB/s' (bytes per second) or '%s %sbit/s' (bits: an eighth of it)",
			 field, num, unit, num, dec, num, dec);
	} else {
		ld_error(ld, node, "%s: '%s%s' has a prefix but no unit; write '%s %sFLOP/s'", field,
			 num, unit, num, dec);
	}
	return true;
}

static bool get_real(struct ld *ld, const yaml_node_t *node, const char *field,
		     const char *kind, double min, bool min_open, double max, bool max_open,
		     double *out)
{
	if (!node) {
		return true;
	}
	char lo[48];
	char hi[48];
	char expected[160];
	format_bound(min, kind, lo, sizeof(lo));
	format_bound(max, kind, hi, sizeof(hi));
	snprintf(expected, sizeof(expected), "%s %s %s and %s %s", kind_noun(kind),
		 min_open ? ">" : ">=", lo, max_open ? "<" : "<=", hi);
	/* a quantity ("3.35 TB/s") is text in YAML anyway: quoted or not */
	const char *text = scalar_for(ld, node, field, expected, !needs_unit(kind));
	if (!text) {
		return false;
	}
	double v = 0.0;
	enum ld_qerr e = ld_parse_quantity(text, kind, &v);
	char vbuf[80];
	quote_value(text, vbuf, sizeof(vbuf));
	if (unit_missing(ld, node, field, kind, text, e, v)) {
		return false;
	}
	if (e == LDQ_OK && (v < min || (min_open && !(v > min)) || v > max || (max_open && !(v < max)))) {
		ld_error(ld, node, "%s: expected %s, got '%s'", field, expected, vbuf);
		return false;
	}
	char ubuf[80];
	switch (e) {
	case LDQ_OK:
		*out = v;
		return true;
	case LDQ_EMPTY:
	case LDQ_NOT_NUMBER:
		ld_error(ld, node, "%s: expected %s, got '%s'", field, expected, vbuf);
		break;
	case LDQ_NONFINITE:
		ld_error(ld, node, "%s: expected %s, got '%s' (not a finite number)", field,
			 expected, vbuf);
		break;
	case LDQ_RANGE:
		ld_error(ld, node, "%s: expected %s, got '%s' (out of range)", field, expected, vbuf);
		break;
	case LDQ_UNIT:
		ld_error(ld, node, "%s: unknown unit '%s' in '%s' (expected %s in %s)", field,
			 quote_value(unit_part(text), ubuf, sizeof(ubuf)), vbuf, kind_noun(kind),
			 ld_units_help(kind));
		break;
	case LDQ_UNIT_KIND: {
		const char *other = kind_of_unit(unit_part(text));
		ld_error(ld, node, "%s: '%s' measures %s, expected %s in %s", field,
			 quote_value(unit_part(text), ubuf, sizeof(ubuf)),
			 other ? kind_noun(other) : "something else", kind_noun(kind),
			 ld_units_help(kind));
		break;
	}
	case LDQ_NO_UNIT:
		ld_error(ld, node, "%s: expected %s without a unit, got '%s'", field, expected, vbuf);
		break;
	}
	return false;
}

bool ld_get_real(struct ld *ld, const yaml_node_t *node, const char *field,
		 const char *kind, double min, bool min_open, double max, double *out)
{
	return get_real(ld, node, field, kind, min, min_open, max, false, out);
}

bool ld_get_count(struct ld *ld, const yaml_node_t *node, const char *field, double min,
		  bool min_open, double max, double *out)
{
	return get_real(ld, node, field, "count", min, min_open, max, false, out);
}

bool ld_get_fraction(struct ld *ld, const yaml_node_t *node, const char *field, double *out)
{
	return get_real(ld, node, field, NULL, 0.0, true, 1.0, true, out);
}

bool ld_get_bytes(struct ld *ld, const yaml_node_t *node, const char *field,
		  uint64_t min, uint64_t max, uint64_t *out)
{
	double v = 0.0;
	if (!node) {
		return true;
	}
	/* Bounds are far below 2^53, where doubles hold every integer. */
	if (!ld_get_real(ld, node, field, "bytes", (double)min, false, (double)max, &v)) {
		return false;
	}
	*out = (uint64_t)llround(v);
	return true;
}

bool ld_get_bool(struct ld *ld, const yaml_node_t *node, const char *field, bool *out)
{
	if (!node) {
		return true;
	}
	const char *text = scalar_for(ld, node, field, "true or false", false);
	if (!text) {
		return false;
	}
	static const char *const yes[] = {"true", "yes", "on", NULL};
	static const char *const no[] = {"false", "no", "off", NULL};
	for (size_t i = 0; yes[i]; i++) {
		if (strcasecmp(text, yes[i]) == 0) {
			*out = true;
			return true;
		}
		if (strcasecmp(text, no[i]) == 0) {
			*out = false;
			return true;
		}
	}
	char vbuf[80];
	ld_error(ld, node, "%s: expected true or false, got '%s'", field,
		 quote_value(text, vbuf, sizeof(vbuf)));
	return false;
}

bool ld_get_string(struct ld *ld, const yaml_node_t *node, const char *field, char **out)
{
	if (!node) {
		return true;
	}
	const char *text = scalar_for(ld, node, field, "text", false);
	if (!text) {
		return false;
	}
	char *copy = ld_strdup(text);
	if (!copy) {
		ld_fail(ld, MP_ENOMEM);
		return false;
	}
	free(*out);
	*out = copy;
	return true;
}

static void join_names(const char *const *names, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; names[i] && used + 4 < size; i++) {
		int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", names[i]);
		if (w < 0) {
			break;
		}
		used += (size_t)w;
	}
}

bool ld_get_enum(struct ld *ld, const yaml_node_t *node, const char *field,
		 const char *const *names, int *out)
{
	if (!node) {
		return true;
	}
	char list[256];
	join_names(names, list, sizeof(list));
	char expected[300];
	snprintf(expected, sizeof(expected), "one of %s", list);
	const char *text = scalar_for(ld, node, field, expected, false);
	if (!text) {
		return false;
	}
	for (int i = 0; names[i]; i++) {
		if (strcasecmp(text, names[i]) == 0) {
			*out = i;
			return true;
		}
	}
	char vbuf[80];
	const char *hint = ld_suggest(text, names);
	if (hint) {
		ld_error(ld, node, "%s: expected %s, got '%s' (did you mean '%s'?)", field, expected,
			 quote_value(text, vbuf, sizeof(vbuf)), hint);
	} else {
		ld_error(ld, node, "%s: expected %s, got '%s'", field, expected,
			 quote_value(text, vbuf, sizeof(vbuf)));
	}
	return false;
}

bool ld_get_format(struct ld *ld, const yaml_node_t *node, const char *field,
		   enum mp_format *out)
{
	if (!node) {
		return true;
	}
	const char *names[MP_FORMAT_COUNT + 1];
	for (int i = 0; i < MP_FORMAT_COUNT; i++) {
		names[i] = mp_format_name((enum mp_format)i);
	}
	names[MP_FORMAT_COUNT] = NULL;
	const char *text = ld_scalar(node);
	enum mp_format f = MP_FORMAT_BF16;
	if (text && strlen(text) == node->data.scalar.length && mp_format_parse(text, &f) == 0) {
		*out = f;
		return true;
	}
	int index = 0;
	if (!ld_get_enum(ld, node, field, names, &index)) {
		return false;
	}
	*out = (enum mp_format)index;
	return true;
}

bool ld_get_compute(struct ld *ld, const yaml_node_t *node, const char *field,
		    enum mp_compute *out)
{
	if (!node) {
		return true;
	}
	const char *names[MP_COMPUTE_COUNT + 1];
	for (int i = 0; i < MP_COMPUTE_COUNT; i++) {
		names[i] = mp_compute_name((enum mp_compute)i);
	}
	names[MP_COMPUTE_COUNT] = NULL;
	const char *text = ld_scalar(node);
	enum mp_compute c = MP_COMPUTE_BF16;
	if (text && strlen(text) == node->data.scalar.length && mp_compute_parse(text, &c) == 0) {
		*out = c;
		return true;
	}
	int index = 0;
	if (!ld_get_enum(ld, node, field, names, &index)) {
		return false;
	}
	*out = (enum mp_compute)index;
	return true;
}

/* ------------------------------------------------------- did you mean */

unsigned ld_edit_distance(const char *a, const char *b)
{
	enum { MAX = 64 };
	size_t la = strlen(a);
	size_t lb = strlen(b);
	if (la > MAX || lb > MAX) {
		return 99;
	}
	unsigned d[MAX + 1][MAX + 1];
	for (size_t i = 0; i <= la; i++) {
		d[i][0] = (unsigned)i;
	}
	for (size_t j = 0; j <= lb; j++) {
		d[0][j] = (unsigned)j;
	}
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			int ca = tolower((unsigned char)a[i - 1]);
			int cb = tolower((unsigned char)b[j - 1]);
			unsigned cost = ca == cb ? 0u : 1u;
			unsigned best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best) {
				best = d[i][j - 1] + 1;
			}
			if (d[i - 1][j - 1] + cost < best) {
				best = d[i - 1][j - 1] + cost;
			}
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best) {
				best = d[i - 2][j - 2] + 1;
			}
			d[i][j] = best;
		}
	}
	return d[la][lb] > 99 ? 99 : d[la][lb];
}

const char *ld_suggest(const char *word, const char *const *candidates)
{
	const char *best = NULL;
	unsigned best_d = 100;
	size_t lw = strlen(word);
	for (size_t i = 0; candidates[i]; i++) {
		unsigned d = ld_edit_distance(word, candidates[i]);
		if (d < best_d) {
			best_d = d;
			best = candidates[i];
		}
	}
	if (best) {
		size_t longest = lw > strlen(best) ? lw : strlen(best);
		/* One edit always; two from 5 characters; a third from 10. */
		if (best_d <= 1 || (best_d <= 2 && longest >= 5) || (best_d <= 3 && longest >= 10)) {
			return best;
		}
	}
	/* A word that is part of a longer name: "experts" -> "routed_experts". */
	if (lw >= 4) {
		for (size_t i = 0; candidates[i]; i++) {
			if (strstr(candidates[i], word) || strstr(word, candidates[i])) {
				return candidates[i];
			}
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------- paths */

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

char *ld_resolve_path(const char *base, const char *path, bool *found)
{
	*found = false;
	if (path[0] == '/' || !base || strcmp(base, "-") == 0) {
		*found = exists(path);
		return ld_strdup(path);
	}
	const char *slash = strrchr(base, '/');
	if (!slash) {
		*found = exists(path);
		return ld_strdup(path);
	}
	size_t dir_len = (size_t)(slash - base) + 1;
	size_t len = dir_len + strlen(path) + 1;
	char *joined = malloc(len);
	if (!joined) {
		return NULL;
	}
	memcpy(joined, base, dir_len);
	memcpy(joined + dir_len, path, strlen(path) + 1);
	if (exists(joined)) {
		*found = true;
		return joined;
	}
	if (exists(path)) {
		free(joined);
		*found = true;
		return ld_strdup(path);
	}
	return joined;
}

const char *ld_looked_in(const char *base, const char *path, char *buf, size_t size)
{
	if (path[0] == '/') {
		snprintf(buf, size, "no such file");
		return buf;
	}
	const char *slash = base && strcmp(base, "-") != 0 ? strrchr(base, '/') : NULL;
	if (!slash) {
		snprintf(buf, size, "looked in the current folder");
		return buf;
	}
	/* ld_resolve_path's order: the file's folder, then the current one. */
	snprintf(buf, size, "looked in '%.*s', the folder of '%s', and in the current folder",
		 (int)(slash - base + 1), base, slash + 1);
	return buf;
}

/* ----------------------------------------------- what kind of file */

static const struct {
	const char *key, *kind, *instead;
} other_kinds[] = {
	{"moeplan", "a moeplan output (plan, placement or report)", "the scenario it was made from"},
	{"routed_experts", "a model file", "a scenario that names it as 'model:'"},
	{"architectures", "a Hugging Face config.json", "a scenario that names it as 'model:'"},
	{"peak_flops", "a hardware file", "a scenario that names it as 'prefill.hardware' and 'decode.hardware'"},
	{"hbm_bytes", "a hardware file", "a scenario that names it as 'prefill.hardware' and 'decode.hardware'"},
};

static size_t other_kind(struct ld *ld, const yaml_node_t *root)
{
	size_t n = sizeof(other_kinds) / sizeof(other_kinds[0]);
	if (!root || root->type != YAML_MAPPING_NODE) {
		return n;
	}
	/* a scenario has prefill and decode; of the others only a plan does */
	bool phases = ld_has(ld, root, "prefill") || ld_has(ld, root, "decode");
	for (size_t i = 0; i < n; i++) {
		if ((i == 0 || !phases) && ld_has(ld, root, other_kinds[i].key)) {
			return i;
		}
	}
	return n;
}

const char *ld_file_kind(struct ld *ld, const yaml_node_t *root, const char **key,
			 const char **instead)
{
	size_t i = other_kind(ld, root);
	if (i == sizeof(other_kinds) / sizeof(other_kinds[0])) {
		return NULL;
	}
	*key = other_kinds[i].key;
	*instead = other_kinds[i].instead;
	return other_kinds[i].kind;
}
