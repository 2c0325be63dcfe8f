/* SGLang's expert-distribution dump ({"logical_count": [[[...]]]}, issue
 * 26 item 8) read from libyaml's events (yaml_parser_parse), summing the
 * windows as the numbers arrive: memory is the [layers][experts] sum and
 * the first window, never the document tree (yaml_parser_load built ~2.6
 * GB of nodes for SGLang's default 1,000 passes x 61 layers x 256 experts).
 *
 * Only a plain dump is read here: one document, a mapping with the single
 * key logical_count, a [windows][layers][experts] list of plain numbers
 * from 0 to LD_MAX_LOAD, every window and row the same size, no tags,
 * anchors or aliases, no directives. Anything else (a bad value, a ragged
 * row, a parse error, a second document, other keys) returns
 * LD_STREAM_OTHER and the tree reader (loader-loads.c, parse_loads_doc)
 * reads the file again and reports it, so the messages are the tree
 * reader's, word for word. The sum is taken in the tree reader's order
 * (window 0, then += each later window), so the result is bit-identical. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader-internal.h"

struct lc_stream {
	yaml_parser_t parser;
	int fd;              /* the file read in pieces, or -1 for a text */
	uint64_t read;       /* bytes of it read so far */
	struct ld_depth depth;
	bool refused;        /* a NUL byte, too large or too deep: not read here */
	double *sum;      /* [rows][cols]; window 0 grows it */
	size_t cap;       /* doubles allocated in sum */
	size_t rows;      /* rows of window 0 (known once it ends) */
	size_t cols;      /* values per row (known once row 0 of window 0 ends) */
	size_t window;    /* index of the window being read */
};

/* Next event into e; false on a parse error (the tree reader reports it). */
static bool next_event(struct lc_stream *s, yaml_event_t *e)
{
	return yaml_parser_parse(&s->parser, e) != 0;
}

/* True for an event of type t with no anchor and no tag. */
static bool plain_event(const yaml_event_t *e, yaml_event_type_t t)
{
	if (e->type != t) {
		return false;
	}
	switch (t) {
	case YAML_SCALAR_EVENT:
		return !e->data.scalar.anchor && !e->data.scalar.tag;
	case YAML_SEQUENCE_START_EVENT:
		return !e->data.sequence_start.anchor && !e->data.sequence_start.tag;
	case YAML_MAPPING_START_EVENT:
		return !e->data.mapping_start.anchor && !e->data.mapping_start.tag;
	default:
		return true;
	}
}

/* Expect one event of type t (no anchor, no tag); false otherwise. */
static bool expect(struct lc_stream *s, yaml_event_type_t t)
{
	yaml_event_t e;
	if (!next_event(s, &e)) {
		return false;
	}
	bool ok = plain_event(&e, t);
	if (ok && t == YAML_DOCUMENT_START_EVENT) {
		ok = !e.data.document_start.version_directive &&
		     e.data.document_start.tag_directives.start == e.data.document_start.tag_directives.end;
	}
	yaml_event_delete(&e);
	return ok;
}

/* Store value x at [r][c] of window s->window; false when it does not fit
 * the shape of window 0 (or memory runs out). */
static bool put_value(struct lc_stream *s, size_t r, size_t c, double x)
{
	if (s->window > 0) {
		if (r >= s->rows || c >= s->cols) {
			return false;
		}
		s->sum[r * s->cols + c] += x;
		return true;
	}
	if (r > 0 && c >= s->cols) {
		return false;
	}
	if (r == 0 && c >= MP_MAX_EXPERTS) {
		return false;
	}
	size_t at = r == 0 ? c : r * s->cols + c;
	if (at >= s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		double *v = realloc(s->sum, cap * sizeof(*v));
		if (!v) {
			return false;
		}
		s->sum = v;
		s->cap = cap;
	}
	s->sum[at] = x;
	return true;
}

/* One row of window s->window, its '[' already read: plain numbers up to
 * ']'. False for anything else. */
static bool read_row(struct lc_stream *s, size_t r)
{
	for (size_t c = 0;; c++) {
		yaml_event_t e;
		if (!next_event(s, &e)) {
			return false;
		}
		if (e.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&e);
			if (s->window == 0 && r == 0) {
				s->cols = c;
				return c >= 1;
			}
			return c == s->cols;
		}
		double x = 0.0;
		bool ok = plain_event(&e, YAML_SCALAR_EVENT) &&
			  e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
			  ld_parse_load((const char *)e.data.scalar.value, &x) == LDQ_OK &&
			  x >= 0.0 && x <= LD_MAX_LOAD && put_value(s, r, c, x);
		yaml_event_delete(&e);
		if (!ok) {
			return false;
		}
	}
}

/* One window, its '[' already read: rows up to ']'. False for anything
 * else (window 0's first item not a list is the tree reader's 2-D case). */
static bool read_window(struct lc_stream *s)
{
	for (size_t r = 0;; r++) {
		yaml_event_t e;
		if (!next_event(s, &e)) {
			return false;
		}
		bool end = e.type == YAML_SEQUENCE_END_EVENT;
		bool row = plain_event(&e, YAML_SEQUENCE_START_EVENT);
		yaml_event_delete(&e);
		if (end) {
			if (s->window == 0) {
				s->rows = r;
				return r >= 1;
			}
			return r == s->rows;
		}
		if (!row || r >= MP_MAX_LAYERS || !read_row(s, r)) {
			return false;
		}
	}
}

/* The key logical_count, then the windows up to the end of the list. */
static bool read_dump(struct lc_stream *s)
{
	if (!expect(s, YAML_STREAM_START_EVENT) || !expect(s, YAML_DOCUMENT_START_EVENT) ||
	    !expect(s, YAML_MAPPING_START_EVENT)) {
		return false;
	}
	yaml_event_t e;
	if (!next_event(s, &e)) {
		return false;
	}
	bool key = plain_event(&e, YAML_SCALAR_EVENT) &&
		   strcmp((const char *)e.data.scalar.value, "logical_count") == 0;
	yaml_event_delete(&e);
	if (!key || !expect(s, YAML_SEQUENCE_START_EVENT)) {
		return false;
	}
	for (s->window = 0;; s->window++) {
		if (!next_event(s, &e)) {
			return false;
		}
		bool end = e.type == YAML_SEQUENCE_END_EVENT;
		bool win = plain_event(&e, YAML_SEQUENCE_START_EVENT);
		yaml_event_delete(&e);
		if (end) {
			break;
		}
		if (!win || !read_window(s)) {
			return false;
		}
	}
	return s->window >= 1 && expect(s, YAML_MAPPING_END_EVENT) &&
	       expect(s, YAML_DOCUMENT_END_EVENT) && expect(s, YAML_STREAM_END_EVENT);
}

int ld_stream_logical_count(const struct ld_text *text, double **sum, uint32_t *rows,
			    uint32_t *cols)
{
	*sum = NULL;
	*rows = 0;
	*cols = 0;
	struct lc_stream s = {.fd = -1, .depth = LD_DEPTH_INIT};
	if (!yaml_parser_initialize(&s.parser)) {
		return LD_STREAM_OTHER;
	}
	yaml_parser_set_input_string(&s.parser, (const unsigned char *)text->data, text->size);
	bool ok = read_dump(&s);
	yaml_parser_delete(&s.parser);
	if (!ok) {
		free(s.sum);
		return LD_STREAM_OTHER;
	}
	*sum = s.sum;
	*rows = (uint32_t)s.rows;
	*cols = (uint32_t)s.cols;
	return 0;
}

/* libyaml's read handler on s->fd: the checks ld_read_text and
 * ld_open_text make on the whole text (no NUL byte, at most
 * MP_MAX_INPUT_BYTES, flow nesting), made on each piece; a piece that
 * fails them ends the parse (s->refused), and the caller then reads the
 * file whole and reports it. */
static int read_piece(void *data, unsigned char *buffer, size_t size, size_t *size_read)
{
	struct lc_stream *s = data;
	*size_read = 0;
	for (;;) {
		ssize_t n = read(s->fd, buffer, size);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			s->refused = true;
			return 0;
		}
		size_t at = 0;
		s->read += (uint64_t)n;
		if (s->read > (uint64_t)MP_MAX_INPUT_BYTES || memchr(buffer, '\0', (size_t)n) ||
		    ld_depth_scan(&s->depth, (const char *)buffer, (size_t)n, &at)) {
			s->refused = true;
			return 0;
		}
		*size_read = (size_t)n;
		return 1;
	}
}

int ld_stream_logical_count_file(const char *path, double **sum, uint32_t *rows,
				 uint32_t *cols)
{
	*sum = NULL;
	*rows = 0;
	*cols = 0;
	/* a FIFO is opened once, by ld_read_text: opening it here would take
	 * its writer's data away */
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		return LD_STREAM_OTHER;
	}
	struct lc_stream s = {.depth = LD_DEPTH_INIT};
	s.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (s.fd < 0) {
		return LD_STREAM_OTHER;
	}
	if (fstat(s.fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > (uint64_t)MP_MAX_INPUT_BYTES ||
	    !yaml_parser_initialize(&s.parser)) {
		close(s.fd);
		return LD_STREAM_OTHER;
	}
	yaml_parser_set_input(&s.parser, read_piece, &s);
	bool ok = read_dump(&s) && !s.refused && s.read > 0;
	yaml_parser_delete(&s.parser);
	close(s.fd);
	if (!ok) {
		free(s.sum);
		return LD_STREAM_OTHER;
	}
	*sum = s.sum;
	*rows = (uint32_t)s.rows;
	*cols = (uint32_t)s.cols;
	return 0;
}
