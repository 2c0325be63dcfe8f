/* Replays every fuzz corpus and regression input through the fuzz targets'
 * entry points, so the normal test suite (any compiler, with or without
 * sanitizers, under valgrind) covers every input the fuzzers kept.
 *
 *   replay FUZZ_DIR            every file under FUZZ_DIR/{corpus,regressions}/TARGET/
 *   replay TARGET FILE...      the given files through one target
 *
 * A broken contract or a crash aborts; exit 1 when a target has no inputs
 * at all (a corpus that went missing must not pass silently).
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct target {
	const char *name;
	int (*run)(const uint8_t *data, size_t size);
};

static const struct target targets[] = {
	{"model", fuzz_model},
	{"hardware", fuzz_hardware},
	{"scenario", fuzz_scenario},
	{"traffic", fuzz_traffic},
	{"loads", fuzz_loads},
	{"map", fuzz_map},
	{"quantity", fuzz_quantity},
	{"torch", fuzz_torch},
};

static const size_t n_targets = sizeof(targets) / sizeof(targets[0]);

static int run_file(const struct target *t, const char *path)
{
	int rc = -1;
	uint8_t *data = NULL;
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		goto out;
	}
	if (fseek(f, 0, SEEK_END) != 0) {
		goto out;
	}
	long len = ftell(f);
	if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
		goto out;
	}
	/* One spare byte so that an empty input is still a valid pointer. */
	data = malloc((size_t)len + 1);
	if (!data || fread(data, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "replay: %s: cannot read\n", path);
		goto out;
	}
	t->run(data, (size_t)len);
	rc = 0;
out:
	if (f) {
		fclose(f);
	}
	free(data);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file in dir (sorted, dot files skipped); a missing folder
 * counts 0 files. Returns the number of files run, or -1 on an error. */
static long run_dir(const struct target *t, const char *dir)
{
	DIR *d = opendir(dir);
	char **names = NULL;
	size_t n = 0, cap = 0;
	long done = 0;
	if (!d) {
		return errno == ENOENT ? 0 : -1;
	}
	for (struct dirent *e = readdir(d); e; e = readdir(d)) {
		if (e->d_name[0] == '.') {
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **grown = realloc(names, cap * sizeof(*names));
			if (!grown) {
				done = -1;
				goto out;
			}
			names = grown;
		}
		names[n] = strdup(e->d_name);
		if (!names[n]) {
			done = -1;
			goto out;
		}
		n++;
	}
	qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (run_file(t, path) != 0) {
			done = -1;
			goto out;
		}
		done++;
	}
out:
	for (size_t i = 0; i < n; i++) {
		free(names[i]);
	}
	free(names);
	closedir(d);
	return done;
}

static const struct target *find_target(const char *name)
{
	for (size_t i = 0; i < n_targets; i++) {
		if (strcmp(targets[i].name, name) == 0) {
			return &targets[i];
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: replay FUZZ_DIR | replay TARGET FILE...\n");
		return 2;
	}
	if (argc > 2) {
		const struct target *t = find_target(argv[1]);
		if (!t) {
			fprintf(stderr, "replay: unknown target '%s'\n", argv[1]);
			return 2;
		}
		for (int i = 2; i < argc; i++) {
			if (run_file(t, argv[i]) != 0) {
				return 1;
			}
		}
		return 0;
	}
	int status = 0;
	for (size_t i = 0; i < n_targets; i++) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s/corpus/%s", argv[1], targets[i].name);
		long corpus = run_dir(&targets[i], dir);
		snprintf(dir, sizeof(dir), "%s/regressions/%s", argv[1], targets[i].name);
		long regressions = run_dir(&targets[i], dir);
		if (corpus < 0 || regressions < 0) {
			fprintf(stderr, "replay: %s: cannot read its inputs\n", targets[i].name);
			status = 1;
			continue;
		}
		printf("%-9s %5ld corpus inputs, %3ld regressions\n", targets[i].name, corpus, regressions);
		if (corpus + regressions == 0) {
			fprintf(stderr, "replay: %s: no inputs in %s/{corpus,regressions}/%s\n",
				targets[i].name, argv[1], targets[i].name);
			status = 1;
		}
	}
	return status;
}
