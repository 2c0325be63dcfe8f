/* Shared by every fuzz target: the temporary folder the inputs are written
 * to, and the checks of the loader's failure contract. */
#include "fuzz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FUZZ_SOURCE_ROOT
#define FUZZ_SOURCE_ROOT "."
#endif

static char dir[4096];
static char input_path[4200];
static const char *const links[][2] = {
	{"plans/models", "plans/models"},
	{"plans/traces", "plans/traces"},
	{"hardware", "hardware"},
};
static const char *const exts[] = {".yaml", ".json", ".csv", ""};

void fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: contract broken: %s\n", file, line, what);
	abort();
}

static void cleanup(void)
{
	char path[4400];
	if (!dir[0]) {
		return;
	}
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		snprintf(path, sizeof(path), "%s/plans/in%s", dir, exts[i]);
		unlink(path);
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, links[i][0]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/plans", dir);
	rmdir(path);
	rmdir(dir);
	dir[0] = '\0';
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");
	const char *root = getenv("MOEPLAN_SOURCE_ROOT");
	char path[4400];
	char target[4400];
	if (!tmp || !tmp[0]) {
		tmp = "/tmp";
	}
	if (!root || !root[0]) {
		root = FUZZ_SOURCE_ROOT;
	}
	snprintf(dir, sizeof(dir), "%s/moeplan-fuzz-XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "fuzz: cannot make a folder in %s: %s\n", tmp, strerror(errno));
		abort();
	}
	atexit(cleanup);
	/* A scenario may name "-" (standard input) as a file: read nothing,
	 * the same everywhere, rather than wait on a terminal. */
	if (!freopen("/dev/null", "r", stdin)) {
		fprintf(stderr, "fuzz: cannot reopen standard input: %s\n", strerror(errno));
		abort();
	}
	snprintf(path, sizeof(path), "%s/plans", dir);
	if (mkdir(path, 0700) != 0) {
		fprintf(stderr, "fuzz: %s: %s\n", path, strerror(errno));
		abort();
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(target, sizeof(target), "%s/%s", root, links[i][1]);
		snprintf(path, sizeof(path), "%s/%s", dir, links[i][0]);
		if (symlink(target, path) != 0) {
			fprintf(stderr, "fuzz: %s: %s\n", path, strerror(errno));
			abort();
		}
	}
}

const char *fuzz_write_input(const uint8_t *data, size_t size, const char *ext)
{
	if (!dir[0]) {
		setup();
	}
	snprintf(input_path, sizeof(input_path), "%s/plans/in%s", dir, ext);
	FILE *f = fopen(input_path, "wb");
	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
		fprintf(stderr, "fuzz: cannot write %s: %s\n", input_path, strerror(errno));
		abort();
	}
	return input_path;
}

bool fuzz_bounded = false;

unsigned long long fuzz_memory_budget(size_t size)
{
	return (16ull << 20) + 64ull * (unsigned long long)size;
}

void fuzz_check_failure(int rc, const struct mp_diags *diags, size_t size)
{
	FUZZ_CHECK(rc == MP_EINVAL || rc == MP_EIO || rc == MP_ENOMEM);
	if (rc == MP_ENOMEM) {
		if (fuzz_bounded) {
			fprintf(stderr, "fuzz: out of memory under the bound of %llu bytes for a %zu-byte input\n",
				fuzz_memory_budget(size), size);
			fuzz_fail(__FILE__, __LINE__, "memory stays within fuzz_memory_budget(size)");
		}
		return;
	}
	/* Every refusal says what is wrong. */
	FUZZ_CHECK(diags->count > 0);
	for (size_t i = 0; i < diags->count; i++) {
		const struct mp_diag *d = &diags->items[i];
		const char *broken = NULL;
		if (!d->file) {
			broken = "a diagnostic names its file";
		} else if (!d->message || !d->message[0]) {
			broken = "a diagnostic has a message";
		} else if (strchr(d->message, '\n') || strchr(d->message, '\r')) {
			broken = "a diagnostic is one line";
		} else if (d->line < 0 || d->column < 0) {
			broken = "positions are 1-based, 0 = unknown";
		} else if ((size_t)d->line > size + 1000 || (size_t)d->column > size + 1000) {
			/* A scenario's messages may point into a referenced
			 * preset, never longer than a few hundred lines. */
			broken = "a position lies inside the input";
		}
		if (broken) {
			fprintf(stderr, "diagnostic %zu: ", i);
			mp_diag_print(d, stderr);
			fuzz_fail(__FILE__, __LINE__, broken);
		}
	}
}
