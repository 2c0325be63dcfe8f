/* moeplan: error codes and diagnostics (file, line, column, message).
 *
 * The library never prints. Every fallible call returns 0 or a negative
 * MP_E* code and, where the caller passes a struct mp_diags, appends one
 * record per problem found so that a front end can report every problem in
 * a file at once as `path:line:col: error: message`.
 */
#ifndef MOEPLAN_DIAG_H
#define MOEPLAN_DIAG_H

#include <stddef.h>
#include <stdio.h>

#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Return codes. 0 is success; every failure is negative. */
enum mp_error {
	MP_OK = 0,
	MP_EINVAL = -1,   /**< bad input data (a value out of range, a malformed file) */
	MP_ENOMEM = -2,   /**< allocation failed or a size overflowed */
	MP_EIO = -3,      /**< a file could not be read or written */
	MP_ENOFIT = -4,   /**< the batch or the weights do not fit in HBM */
	MP_ELIMIT = -5,   /**< solver limit reached with no feasible plan */
	MP_EUSAGE = -6,   /**< the caller combined options that cannot go together */
	MP_EINTR = -7,    /**< interrupted by a signal */
};

/** A static English description of an MP_E* code (never NULL). */
MP_EXPORT const char *mp_strerror(int code);

/** One problem. line and column are 1-based; 0 means "unknown" (e.g. a
 * problem with the whole file). file and message are owned by the record.
 * A record with code 0 (MP_OK) is a warning: the call that added it still
 * succeeds (e.g. a Hugging Face config key that is not read, issue 26);
 * every other code is an error. */
struct mp_diag {
	char *file;
	int line;
	int column;
	int code;
	char *message;
};

/** A growable list of diagnostics; caller-owned (init/finish). */
struct mp_diags {
	struct mp_diag *items;
	size_t count;
	size_t capacity;
};

/** Initialise an empty list. */
MP_EXPORT void mp_diags_init(struct mp_diags *diags);

/** Free every record; accepts NULL; leaves an empty list. */
MP_EXPORT void mp_diags_finish(struct mp_diags *diags);

/** Append a record with a printf-style message. diags may be NULL (the
 * record is dropped). line/column are 1-based, 0 when unknown.
 * Returns code itself so that callers can `return mp_diags_add(...)`, or
 * MP_ENOMEM when the record could not be stored. */
MP_EXPORT int mp_diags_add(struct mp_diags *diags, const char *file, int line,
		 int column, int code, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/** Write one record as `file:line:col: error: message\n` (`warning:` for
 * code 0; omitting the parts that are unknown) to out. */
MP_EXPORT void mp_diag_print(const struct mp_diag *diag, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
