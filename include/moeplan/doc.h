/* moeplan: a small ordered document tree (maps, lists, scalars) that every
 * command builds its output in, written as YAML (through libyaml's
 * emitter) or JSON, and atomic file output (temp file + rename).
 *
 * Numbers are written in the shortest form that reads back to the same
 * double ("%.15g", else "%.17g"), so output is byte-identical across runs.
 */
#ifndef MOEPLAN_DOC_H
#define MOEPLAN_DOC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mp_doc_kind {
	MP_DOC_MAP = 0,
	MP_DOC_LIST,
	MP_DOC_STRING,
	MP_DOC_INT,
	MP_DOC_REAL,
	MP_DOC_BOOL,
	MP_DOC_NULL,
};

struct mp_doc;

/** Constructors. Each returns a new node or NULL on allocation failure.
 * Strings are copied. mp_doc_real of a non-finite value gives a null. */
MP_EXPORT struct mp_doc *mp_doc_map(void);
MP_EXPORT struct mp_doc *mp_doc_list(void);
MP_EXPORT struct mp_doc *mp_doc_string(const char *value);
MP_EXPORT struct mp_doc *mp_doc_int(int64_t value);
MP_EXPORT struct mp_doc *mp_doc_real(double value);
MP_EXPORT struct mp_doc *mp_doc_bool(bool value);
MP_EXPORT struct mp_doc *mp_doc_null(void);

/** A deep copy of a tree (NULL on allocation failure or NULL input). */
MP_EXPORT struct mp_doc *mp_doc_clone(const struct mp_doc *doc);

/** Free a node and its children; accepts NULL. */
MP_EXPORT void mp_doc_destroy(struct mp_doc *doc);

/** Append child to a map under key (kept in insertion order) or to a list
 * (key ignored). Takes ownership of child even on failure. A NULL child
 * marks the whole tree as failed (allocation) so that one check at the end
 * suffices: see mp_doc_failed. */
MP_EXPORT void mp_doc_put(struct mp_doc *parent, const char *key, struct mp_doc *child);

/** Shorthands for mp_doc_put(parent, key, mp_doc_xxx(value)). */
MP_EXPORT void mp_doc_put_string(struct mp_doc *map, const char *key, const char *value);
MP_EXPORT void mp_doc_put_int(struct mp_doc *map, const char *key, int64_t value);
MP_EXPORT void mp_doc_put_real(struct mp_doc *map, const char *key, double value);
MP_EXPORT void mp_doc_put_bool(struct mp_doc *map, const char *key, bool value);

/** A list of n numbers. Returns NULL on allocation failure. */
MP_EXPORT struct mp_doc *mp_doc_reals(const double *values, size_t n);
MP_EXPORT struct mp_doc *mp_doc_uints(const uint32_t *values, size_t n);

/** True when an allocation failed anywhere under doc (or doc is NULL). */
MP_EXPORT bool mp_doc_failed(const struct mp_doc *doc);

/** Write as YAML (block style; lists of scalars in flow style on one line)
 * or as indented JSON. Returns 0 or MP_EIO/MP_ENOMEM. */
MP_EXPORT int mp_doc_write_yaml(const struct mp_doc *doc, FILE *out);
MP_EXPORT int mp_doc_write_json(const struct mp_doc *doc, FILE *out);

/** Format a double as written in documents into buf (at least 32 bytes). */
MP_EXPORT void mp_doc_format_real(double value, char *buf, size_t size);

/** Write a file atomically: create a temporary file next to path, call
 * write(user, file), flush, fsync, rename over path. On any failure the
 * temporary file is removed and path is untouched. path "-" writes to
 * stdout; an existing path that is not a regular file (a device such as
 * /dev/null, a FIFO) is written in place, never replaced; a directory is
 * MP_EIO. A temporary file in progress is registered so that
 * mp_output_abort_all() (safe to call from a signal handler) can unlink it.
 * Returns 0, the callback's error, or MP_EIO; on MP_EIO errno holds the
 * failing system call's reason (EISDIR, ENOENT, EACCES, ...). */
MP_EXPORT int mp_write_atomic(const char *path, int (*write)(void *user, FILE *file), void *user);

/** Unlink any temporary output file in progress (async-signal-safe). */
MP_EXPORT void mp_output_abort_all(void);

/** Write doc to path atomically, as JSON when json is true else YAML.
 * Returns as mp_write_atomic (errno set on MP_EIO). */
MP_EXPORT int mp_doc_save(const struct mp_doc *doc, const char *path, bool json);

#ifdef __cplusplus
}
#endif

#endif
