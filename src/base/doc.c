/* Output documents: an ordered tree written as YAML (libyaml's emitter) or
 * JSON, and atomic file output. */
#include "moeplan/doc.h"
#include "moeplan/diag.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

struct mp_doc {
	enum mp_doc_kind kind;
	bool failed;          /* an allocation failed somewhere below */
	char *key;            /* key in the parent map, or NULL */
	union {
		char *string;
		int64_t integer;
		double real;
		bool boolean;
	} value;
	struct mp_doc **children;
	size_t n_children;
	size_t cap_children;
};

static struct mp_doc *node_new(enum mp_doc_kind kind)
{
	struct mp_doc *doc = calloc(1, sizeof(*doc));
	if (doc) {
		doc->kind = kind;
	}
	return doc;
}

struct mp_doc *mp_doc_map(void)
{
	return node_new(MP_DOC_MAP);
}

struct mp_doc *mp_doc_list(void)
{
	return node_new(MP_DOC_LIST);
}

struct mp_doc *mp_doc_string(const char *value)
{
	struct mp_doc *doc = node_new(MP_DOC_STRING);
	if (!doc) {
		return NULL;
	}
	doc->value.string = strdup(value ? value : "");
	if (!doc->value.string) {
		free(doc);
		return NULL;
	}
	return doc;
}

struct mp_doc *mp_doc_int(int64_t value)
{
	struct mp_doc *doc = node_new(MP_DOC_INT);
	if (doc) {
		doc->value.integer = value;
	}
	return doc;
}

struct mp_doc *mp_doc_real(double value)
{
	if (!isfinite(value)) {
		return node_new(MP_DOC_NULL);
	}
	struct mp_doc *doc = node_new(MP_DOC_REAL);
	if (doc) {
		/* -0.0 prints as "-0": normalise so output does not depend on
		 * the sign of a zero. */
		doc->value.real = value == 0.0 ? 0.0 : value;
	}
	return doc;
}

struct mp_doc *mp_doc_bool(bool value)
{
	struct mp_doc *doc = node_new(MP_DOC_BOOL);
	if (doc) {
		doc->value.boolean = value;
	}
	return doc;
}

struct mp_doc *mp_doc_null(void)
{
	return node_new(MP_DOC_NULL);
}

struct mp_doc *mp_doc_clone(const struct mp_doc *doc)
{
	if (!doc) {
		return NULL;
	}
	struct mp_doc *copy;
	switch (doc->kind) {
	case MP_DOC_STRING: copy = mp_doc_string(doc->value.string); break;
	case MP_DOC_INT: copy = mp_doc_int(doc->value.integer); break;
	case MP_DOC_REAL: copy = mp_doc_real(doc->value.real); break;
	case MP_DOC_BOOL: copy = mp_doc_bool(doc->value.boolean); break;
	case MP_DOC_NULL: copy = mp_doc_null(); break;
	default: copy = node_new(doc->kind); break;
	}
	for (size_t i = 0; copy && i < doc->n_children; i++) {
		mp_doc_put(copy, doc->children[i]->key, mp_doc_clone(doc->children[i]));
	}
	if (copy && copy->failed) {
		mp_doc_destroy(copy);
		return NULL;
	}
	return copy;
}

void mp_doc_destroy(struct mp_doc *doc)
{
	if (!doc) {
		return;
	}
	for (size_t i = 0; i < doc->n_children; i++) {
		mp_doc_destroy(doc->children[i]);
	}
	free(doc->children);
	if (doc->kind == MP_DOC_STRING) {
		free(doc->value.string);
	}
	free(doc->key);
	free(doc);
}

void mp_doc_put(struct mp_doc *parent, const char *key, struct mp_doc *child)
{
	if (!parent) {
		mp_doc_destroy(child);
		return;
	}
	if (!child) {
		parent->failed = true;
		return;
	}
	if (child->failed) {
		parent->failed = true;
	}
	if (parent->kind == MP_DOC_MAP) {
		child->key = strdup(key ? key : "");
		if (!child->key) {
			parent->failed = true;
			mp_doc_destroy(child);
			return;
		}
	}
	if (parent->n_children == parent->cap_children) {
		size_t cap = parent->cap_children ? parent->cap_children * 2 : 8;
		struct mp_doc **children = realloc(parent->children, cap * sizeof(*children));
		if (!children) {
			parent->failed = true;
			mp_doc_destroy(child);
			return;
		}
		parent->children = children;
		parent->cap_children = cap;
	}
	parent->children[parent->n_children++] = child;
}

void mp_doc_put_string(struct mp_doc *map, const char *key, const char *value)
{
	mp_doc_put(map, key, mp_doc_string(value));
}

void mp_doc_put_int(struct mp_doc *map, const char *key, int64_t value)
{
	mp_doc_put(map, key, mp_doc_int(value));
}

void mp_doc_put_real(struct mp_doc *map, const char *key, double value)
{
	mp_doc_put(map, key, mp_doc_real(value));
}

void mp_doc_put_bool(struct mp_doc *map, const char *key, bool value)
{
	mp_doc_put(map, key, mp_doc_bool(value));
}

struct mp_doc *mp_doc_reals(const double *values, size_t n)
{
	struct mp_doc *list = mp_doc_list();
	for (size_t i = 0; list && i < n; i++) {
		mp_doc_put(list, NULL, mp_doc_real(values[i]));
	}
	return list;
}

struct mp_doc *mp_doc_uints(const uint32_t *values, size_t n)
{
	struct mp_doc *list = mp_doc_list();
	for (size_t i = 0; list && i < n; i++) {
		mp_doc_put(list, NULL, mp_doc_int(values[i]));
	}
	return list;
}

bool mp_doc_failed(const struct mp_doc *doc)
{
	return !doc || doc->failed;
}

void mp_doc_format_real(double value, char *buf, size_t size)
{
	if (!isfinite(value)) {
		snprintf(buf, size, "null");
		return;
	}
	snprintf(buf, size, "%.15g", value);
	if (strtod(buf, NULL) != value) {
		snprintf(buf, size, "%.17g", value);
	}
	/* Keep reals recognisable as reals to YAML and JSON readers alike:
	 * "1e+20" and "3" are fine for both, no change needed. */
}

static void format_scalar(const struct mp_doc *doc, char *buf, size_t size)
{
	switch (doc->kind) {
	case MP_DOC_INT:
		snprintf(buf, size, "%" PRId64, doc->value.integer);
		break;
	case MP_DOC_REAL:
		mp_doc_format_real(doc->value.real, buf, size);
		break;
	case MP_DOC_BOOL:
		snprintf(buf, size, "%s", doc->value.boolean ? "true" : "false");
		break;
	default:
		snprintf(buf, size, "null");
		break;
	}
}

/* ---- YAML through libyaml's emitter ---- */

static bool all_scalars(const struct mp_doc *doc)
{
	for (size_t i = 0; i < doc->n_children; i++) {
		enum mp_doc_kind k = doc->children[i]->kind;
		if (k == MP_DOC_MAP || k == MP_DOC_LIST) {
			return false;
		}
	}
	return true;
}

/* A string may be written plain when a YAML 1.1 or 1.2 reader cannot take
 * it for anything but a string; otherwise it is double-quoted. */
static bool safe_plain(const char *s)
{
	static const char *const reserved[] = {
		"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~",
	};
	if (!*s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) {
		return false;
	}
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		if (strcasecmp(s, reserved[i]) == 0) {
			return false;
		}
	}
	for (const char *p = s; *p; p++) {
		bool ok = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
			  (*p >= '0' && *p <= '9') || strchr("_-./()+=,;%<> ", *p);
		if (!ok) {
			return false;
		}
	}
	return s[strlen(s) - 1] != ' ';
}

static int emit_scalar_text(yaml_emitter_t *em, const char *text, bool plain)
{
	if (!plain && safe_plain(text)) {
		plain = true;
	}
	yaml_event_t ev;
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)(uintptr_t)text,
					  (int)strlen(text), plain, !plain,
					  plain ? YAML_PLAIN_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE)) {
		return MP_ENOMEM;
	}
	return yaml_emitter_emit(em, &ev) ? 0 : MP_EIO;
}

static int emit_node(yaml_emitter_t *em, const struct mp_doc *doc)
{
	yaml_event_t ev;
	char buf[64];
	switch (doc->kind) {
	case MP_DOC_MAP:
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE)) {
			return MP_ENOMEM;
		}
		if (!yaml_emitter_emit(em, &ev)) {
			return MP_EIO;
		}
		for (size_t i = 0; i < doc->n_children; i++) {
			int rc = emit_scalar_text(em, doc->children[i]->key, false);
			if (rc == 0) {
				rc = emit_node(em, doc->children[i]);
			}
			if (rc) {
				return rc;
			}
		}
		if (!yaml_mapping_end_event_initialize(&ev)) {
			return MP_ENOMEM;
		}
		return yaml_emitter_emit(em, &ev) ? 0 : MP_EIO;
	case MP_DOC_LIST: {
		/* Rows of numbers stay on one line: a 384-wide load vector is
		 * unreadable one number per line. */
		yaml_sequence_style_t style = all_scalars(doc) && doc->n_children > 0
			? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE;
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, style)) {
			return MP_ENOMEM;
		}
		if (!yaml_emitter_emit(em, &ev)) {
			return MP_EIO;
		}
		for (size_t i = 0; i < doc->n_children; i++) {
			int rc = emit_node(em, doc->children[i]);
			if (rc) {
				return rc;
			}
		}
		if (!yaml_sequence_end_event_initialize(&ev)) {
			return MP_ENOMEM;
		}
		return yaml_emitter_emit(em, &ev) ? 0 : MP_EIO;
	}
	case MP_DOC_STRING:
		return emit_scalar_text(em, doc->value.string, false);
	default:
		format_scalar(doc, buf, sizeof(buf));
		return emit_scalar_text(em, buf, true);
	}
}

static int yaml_write_handler(void *data, unsigned char *buffer, size_t size)
{
	FILE *out = data;
	return fwrite(buffer, 1, size, out) == size;
}

int mp_doc_write_yaml(const struct mp_doc *doc, FILE *out)
{
	if (mp_doc_failed(doc)) {
		return MP_ENOMEM;
	}
	yaml_emitter_t em;
	yaml_event_t ev;
	int rc = MP_EIO;
	if (!yaml_emitter_initialize(&em)) {
		return MP_ENOMEM;
	}
	yaml_emitter_set_output(&em, yaml_write_handler, out);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_width(&em, -1);
	yaml_emitter_set_indent(&em, 2);
	if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) || !yaml_emitter_emit(&em, &ev)) {
		goto out;
	}
	if (!yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) || !yaml_emitter_emit(&em, &ev)) {
		goto out;
	}
	rc = emit_node(&em, doc);
	if (rc) {
		goto out;
	}
	rc = MP_EIO;
	if (!yaml_document_end_event_initialize(&ev, 1) || !yaml_emitter_emit(&em, &ev)) {
		goto out;
	}
	if (!yaml_stream_end_event_initialize(&ev) || !yaml_emitter_emit(&em, &ev)) {
		goto out;
	}
	if (!yaml_emitter_flush(&em)) {
		goto out;
	}
	rc = ferror(out) ? MP_EIO : 0;
out:
	yaml_emitter_delete(&em);
	return rc;
}

/* ---- JSON ---- */

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\t': fputs("\\t", out); break;
		default:
			if (*p < 0x20) {
				fprintf(out, "\\u%04x", *p);
			} else {
				fputc(*p, out);
			}
		}
	}
	fputc('"', out);
}

static void indent(FILE *out, int depth)
{
	for (int i = 0; i < depth; i++) {
		fputs("  ", out);
	}
}

static void json_node(FILE *out, const struct mp_doc *doc, int depth)
{
	char buf[64];
	switch (doc->kind) {
	case MP_DOC_MAP:
		if (doc->n_children == 0) {
			fputs("{}", out);
			return;
		}
		fputs("{\n", out);
		for (size_t i = 0; i < doc->n_children; i++) {
			indent(out, depth + 1);
			json_string(out, doc->children[i]->key);
			fputs(": ", out);
			json_node(out, doc->children[i], depth + 1);
			fputs(i + 1 < doc->n_children ? ",\n" : "\n", out);
		}
		indent(out, depth);
		fputc('}', out);
		return;
	case MP_DOC_LIST:
		if (doc->n_children == 0) {
			fputs("[]", out);
			return;
		}
		if (all_scalars(doc)) {
			fputc('[', out);
			for (size_t i = 0; i < doc->n_children; i++) {
				json_node(out, doc->children[i], depth + 1);
				if (i + 1 < doc->n_children) {
					fputs(", ", out);
				}
			}
			fputc(']', out);
			return;
		}
		fputs("[\n", out);
		for (size_t i = 0; i < doc->n_children; i++) {
			indent(out, depth + 1);
			json_node(out, doc->children[i], depth + 1);
			fputs(i + 1 < doc->n_children ? ",\n" : "\n", out);
		}
		indent(out, depth);
		fputc(']', out);
		return;
	case MP_DOC_STRING:
		json_string(out, doc->value.string);
		return;
	default:
		format_scalar(doc, buf, sizeof(buf));
		fputs(buf, out);
		return;
	}
}

int mp_doc_write_json(const struct mp_doc *doc, FILE *out)
{
	if (mp_doc_failed(doc)) {
		return MP_ENOMEM;
	}
	json_node(out, doc, 0);
	fputc('\n', out);
	return ferror(out) ? MP_EIO : 0;
}

/* ---- Atomic output ---- */

/* The temporary file in progress, for mp_output_abort_all from a signal
 * handler: a fixed buffer and a sig_atomic_t flag, no allocation. */
static char pending_tmp[4096];
static volatile sig_atomic_t pending_active;

void mp_output_abort_all(void)
{
	if (pending_active) {
		unlink(pending_tmp);
		pending_active = 0;
	}
}

/* mp_write_atomic's failures leave the reason in errno (the value the
 * failing open, mkstemp, write, fsync or rename set), so that a caller can
 * say "Is a directory" or "Permission denied" rather than "input/output
 * error". The cleanup after a failure (unlink, sigprocmask) may change
 * errno, so the first reason is kept and restored on return. */
static int fail_errno(int err)
{
	errno = err ? err : EIO;
	return MP_EIO;
}

int mp_write_atomic(const char *path, int (*write)(void *user, FILE *file), void *user)
{
	int err = 0;
	if (!path || strcmp(path, "-") == 0) {
		errno = 0;
		int rc = write(user, stdout);
		err = errno;
		if (fflush(stdout) != 0 && rc == 0) {
			rc = MP_EIO;
			err = errno;
		}
		return rc == MP_EIO ? fail_errno(err) : rc;
	}
	/* A device or a FIFO (/dev/null, /dev/stdout, a pipe) is written in
	 * place: renaming a file over it would replace the device itself. */
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode)) {
			return fail_errno(EISDIR);
		}
		FILE *direct = fopen(path, "w");
		if (!direct) {
			return fail_errno(errno);
		}
		errno = 0;
		int rc = write(user, direct);
		err = errno;
		if (fclose(direct) != 0 && rc == 0) {
			rc = MP_EIO;
			err = errno;
		}
		return rc == MP_EIO ? fail_errno(err) : rc;
	}
	size_t len = strlen(path);
	if (len + 16 > sizeof(pending_tmp)) {
		return fail_errno(ENAMETOOLONG);
	}
	if (pending_active) {
		return fail_errno(EBUSY);
	}
	char tmp[sizeof(pending_tmp)];
	/* mkstemp's template: ".tmp" and six 'X's it replaces with a unique
	 * suffix. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	memset(tmp + len + 4, 'X', 6);
	tmp[len + 10] = '\0';
	/* Block signals while the name is registered so a handler never sees
	 * a half-copied path. */
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	int fd = mkstemp(tmp);
	err = errno;
	if (fd >= 0) {
		memcpy(pending_tmp, tmp, len + 11);
		pending_active = 1;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (fd < 0) {
		return fail_errno(err);
	}
	/* mkstemp creates 0600; plans are ordinary files, so honour umask. */
	mode_t mask = umask(0);
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	int rc = 0;
	FILE *file = fdopen(fd, "w");
	if (!file) {
		err = errno;
		close(fd);
		rc = MP_EIO;
		goto fail;
	}
	errno = 0;
	rc = write(user, file);
	err = errno;
	if (fflush(file) != 0 && rc == 0) {
		rc = MP_EIO;
		err = errno;
	}
	if (rc == 0 && fsync(fileno(file)) != 0) {
		rc = MP_EIO;
		err = errno;
	}
	if (fclose(file) != 0 && rc == 0) {
		rc = MP_EIO;
		err = errno;
	}
	if (rc) {
		goto fail;
	}
	sigprocmask(SIG_BLOCK, &all, &old);
	if (rename(tmp, path) != 0) {
		err = errno;
		rc = MP_EIO;
		unlink(tmp);
	}
	pending_active = 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc == MP_EIO ? fail_errno(err) : rc;
fail:
	sigprocmask(SIG_BLOCK, &all, &old);
	unlink(tmp);
	pending_active = 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc == MP_EIO ? fail_errno(err) : rc;
}

struct save_ctx {
	const struct mp_doc *doc;
	bool json;
};

static int save_write(void *user, FILE *file)
{
	const struct save_ctx *ctx = user;
	return ctx->json ? mp_doc_write_json(ctx->doc, file) : mp_doc_write_yaml(ctx->doc, file);
}

int mp_doc_save(const struct mp_doc *doc, const char *path, bool json)
{
	if (mp_doc_failed(doc)) {
		return MP_ENOMEM;
	}
	struct save_ctx ctx = {.doc = doc, .json = json};
	return mp_write_atomic(path, save_write, &ctx);
}
