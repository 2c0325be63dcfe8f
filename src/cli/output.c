/* Outputs: a document or a text written atomically, the checks that no
 * output overwrites an input or another output and that each can be
 * written, and why a write failed (cli.h). */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* The folder of a path: everything up to the last '/', "/" for a file at
 * the root, "." without a '/'. False when it does not fit in size. */
static bool folder_of(const char *path, char *dir, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;
	if (len >= size || size < 2) {
		return false;
	}
	if (!slash) {
		memcpy(dir, ".", 2);
	} else if (len == 0) {
		memcpy(dir, "/", 2);
	} else {
		memcpy(dir, path, len);
		dir[len] = '\0';
	}
	return true;
}

/* The folder's real path and the last name: "./x.json", "x.json" and
 * "d/../x.json" are one file even when it does not exist yet. False when
 * the folder cannot be resolved. */
static bool canonical_name(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	if (!folder_of(path, dir, sizeof(dir))) {
		return false;
	}
	char real[PATH_MAX];
	if (!realpath(dir, real)) {
		return false;
	}
	int n = snprintf(buf, size, "%s/%s", real, slash ? slash + 1 : path);
	return n > 0 && (size_t)n < size;
}

bool cli_same_file(const char *out_path, const char *in_path)
{
	if (!out_path || !in_path || strcmp(out_path, "-") == 0) {
		return false;
	}
	if (strcmp(out_path, in_path) == 0) {
		return true;
	}
	struct stat a, b;
	if (stat(out_path, &a) == 0 && stat(in_path, &b) == 0) {
		return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	}
	char ca[PATH_MAX + 256], cb[PATH_MAX + 256];
	return canonical_name(out_path, ca, sizeof(ca)) && canonical_name(in_path, cb, sizeof(cb)) &&
	       strcmp(ca, cb) == 0;
}

bool cli_report_files(const char *report, const char *const *suffixes, size_t n,
		      struct cli_report_files *out)
{
	out->count = 0;
	size_t len = strlen(report);
	if (len > 3 && strcmp(report + len - 3, ".md") == 0) {
		len -= 3;
	}
	const char *slash = strrchr(report, '/');
	out->base = slash ? (size_t)(slash - report) + 1 : 0;
	for (size_t i = 0; i < n && i < CLI_REPORT_MAX_FILES; i++) {
		if (len + strlen(suffixes[i]) >= sizeof(out->path[i])) {
			return false;
		}
		size_t sl = strlen(suffixes[i]);
		memcpy(out->path[i], report, len);
		memcpy(out->path[i] + len, suffixes[i], sl + 1);
		out->count = i + 1;
	}
	return true;
}

const char *cli_write_error(int rc, int err)
{
	return rc == MP_EIO && err != 0 ? strerror(err) : mp_strerror(rc);
}

int cli_emit(const struct mp_doc *doc, const char *path, bool json)
{
	int rc = mp_doc_save(doc, path, json);
	if (rc) {
		int err = errno;
		cli_error("%s: cannot write: %s", path && strcmp(path, "-") ? path : "stdout",
			  cli_write_error(rc, err));
		return EXIT_INPUT;
	}
	return EXIT_OK;
}

int cli_check_outputs(const char *const *outputs, size_t n_outputs)
{
	for (size_t o = 0; o < n_outputs; o++) {
		const char *out = outputs[o];
		if (!out || strcmp(out, "-") == 0) {
			continue;
		}
		if (out[0] == '\0') {
			cli_error("an output file name is empty");
			return EXIT_USAGE;
		}
		struct stat st;
		if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) {
			cli_error("%s: cannot write: %s", out, strerror(EISDIR));
			return EXIT_INPUT;
		}
		char dir[4096];
		if (!folder_of(out, dir, sizeof(dir))) {
			continue;
		}
		if (access(dir, W_OK | X_OK) != 0) {
			int err = errno;
			cli_error("%s: cannot write: %s", out, strerror(err));
			return EXIT_INPUT;
		}
	}
	return EXIT_OK;
}

int cli_emit_doc(struct mp_doc *doc, const char *path, enum cli_output format)
{
	int status = EXIT_INPUT;
	if (!doc || mp_doc_failed(doc)) {
		cli_error("out of memory");
	} else {
		status = cli_emit(doc, path, format == CLI_OUTPUT_JSON);
	}
	mp_doc_destroy(doc);
	return status;
}

struct text_writer {
	int (*print)(void *user, FILE *out);
	void *user;
};

static int write_text(void *user, FILE *file)
{
	const struct text_writer *w = user;
	int rc = w->print(w->user, file);
	if (rc == 0 && ferror(file)) {
		rc = MP_EIO;
	}
	return rc;
}

int cli_write_text(const char *path, int (*print)(void *user, FILE *out), void *user)
{
	struct text_writer w = {.print = print, .user = user};
	int rc = mp_write_atomic(path, write_text, &w);
	if (rc) {
		int err = errno;
		cli_error("%s: cannot write: %s", path && strcmp(path, "-") ? path : "stdout",
			  cli_write_error(rc, err));
		return EXIT_INPUT;
	}
	return EXIT_OK;
}

bool cli_outputs_spare_inputs(const char *cmd, const char *const *outputs, size_t n_outputs,
			      const char *const *inputs, size_t n_inputs)
{
	for (size_t o = 0; o < n_outputs; o++) {
		const char *out = outputs[o];
		if (!out || strcmp(out, "-") == 0) {
			continue;
		}
		if (out[0] == '\0') {
			cli_usage(cmd, "an output file name is empty");
			return false;
		}
		for (size_t i = 0; i < n_inputs; i++) {
			if (cli_same_file(out, inputs[i])) {
				cli_usage(cmd, "output '%s' is an input ('%s'); refusing to overwrite it",
					  out, inputs[i]);
				return false;
			}
		}
		for (size_t p = 0; p < o; p++) {
			if (outputs[p] && cli_same_file(out, outputs[p])) {
				cli_usage(cmd, "two outputs name the same file '%s'", out);
				return false;
			}
		}
	}
	return true;
}

bool cli_output_wants_json(const char *path)
{
	size_t n = path ? strlen(path) : 0;
	return n > 5 && strcasecmp(path + n - 5, ".json") == 0;
}
