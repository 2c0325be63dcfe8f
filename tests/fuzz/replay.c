/* Replays every fuzz corpus and regression input through the fuzz targets'
 * entry points, so the normal test suite (any compiler, with or without
 * sanitizers, under valgrind) covers every input the fuzzers kept.
 *
 *   replay FUZZ_DIR            every file under FUZZ_DIR/{corpus,regressions}/TARGET/
 *   replay TARGET FILE...      the given files through one target
 *
 * A broken contract or a crash aborts; exit 1 when a target has no inputs
 * at all (a corpus that went missing must not pass silently).
 *
 * Bounded memory (issue 26 items 7 and 8): outside the sanitizers and
 * valgrind (whose shadow memory and tools are the address space), each
 * input runs in a child process whose address space may grow by at most
 * fuzz_memory_budget(size) (fuzz.h) over what it held before the loader
 * ran (RLIMIT_AS, which counts what malloc reserves, touched or not). A
 * loader that needs more fails an allocation and returns MP_ENOMEM, which
 * the child then reports as a broken bound, naming the input and its size.
 * The child also has REPLAY_CPU_S seconds of CPU time.
 */
#include "fuzz.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define REPLAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLAY_ASAN 1
#endif
#endif
#ifndef REPLAY_ASAN
#define REPLAY_ASAN 0
#endif

#define REPLAY_CPU_S 10

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

/* Whether the address space may be limited here: not under ASan (its
 * shadow memory is terabytes of address space) nor valgrind (which
 * preloads its vgpreload libraries). MOEPLAN_FUZZ_UNBOUNDED=1 turns the
 * bound off by hand. */
static bool bound_memory(void)
{
	const char *pre = getenv("LD_PRELOAD");
	const char *off = getenv("MOEPLAN_FUZZ_UNBOUNDED");
	return !REPLAY_ASAN && !(pre && strstr(pre, "vgpreload")) && !(off && strcmp(off, "1") == 0);
}

/* The child's address space now, in bytes (/proc/self/statm, pages). */
static unsigned long long vm_bytes(void)
{
	unsigned long long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%llu", &pages) != 1) {
			pages = 0;
		}
		fclose(f);
	}
	return pages * (unsigned long long)sysconf(_SC_PAGESIZE);
}

/* The child's peak address space, in bytes (/proc/self/status VmPeak). */
static unsigned long long vm_peak_bytes(void)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmPeak: %llu kB", &kb) == 1) {
			break;
		}
	}
	if (f) {
		fclose(f);
	}
	return kb * 1024ull;
}

/* Run one input, in a child under the memory bound where bound_memory(). */
static int run_bounded(const struct target *t, const char *path, const uint8_t *data, size_t size)
{
	if (!bound_memory()) {
		t->run(data, size);
		return 0;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "replay: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		unsigned long long base = vm_bytes();
		unsigned long long budget = fuzz_memory_budget(size);
		struct rlimit rl = {.rlim_cur = base + budget, .rlim_max = base + budget};
		/* and 10 s of CPU time (SIGXCPU): no input of a few KB
		 * should take more (a bzip2 member of 4.4 GB took 103 s) */
		struct rlimit cpu = {.rlim_cur = REPLAY_CPU_S, .rlim_max = REPLAY_CPU_S + 5};
		if (base == 0 || setrlimit(RLIMIT_AS, &rl) != 0 || setrlimit(RLIMIT_CPU, &cpu) != 0) {
			fprintf(stderr, "replay: cannot limit the address space: %s\n", strerror(errno));
			_exit(2);
		}
		fuzz_bounded = true;
		t->run(data, size);
		if (getenv("MOEPLAN_FUZZ_MEASURE")) {
			/* tests/fuzz/README.md: how the budget was measured */
			printf("measure %s %zu %llu\n", t->name, size, vm_peak_bytes() - base);
		}
		fflush(NULL);
		_exit(0);
	}
	int w = 0;
	if (waitpid(pid, &w, 0) != pid) {
		return -1;
	}
	if (!WIFEXITED(w) || WEXITSTATUS(w) != 0) {
		fprintf(stderr, "replay: %s (%zu bytes, target %s): %s %d\n", path, size, t->name,
			WIFEXITED(w) ? "exit" : "signal", WIFEXITED(w) ? WEXITSTATUS(w) : WTERMSIG(w));
		abort();
	}
	return 0;
}

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
	rc = run_bounded(t, path, data, (size_t)len);
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
	/* The children write their inputs into the parent's folder (made
	 * here, removed at the parent's exit; children leave by _exit). */
	fuzz_write_input(NULL, 0, "");
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
