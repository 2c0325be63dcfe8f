/* Reliability at the limits (issue 8): hostile files that every loader
 * must refuse with a diagnostic (a directory, an empty file, a gigabyte of
 * zeros, an endless device), shapes at and just beyond the documented
 * maximums (include/moeplan/traffic.h: MP_MAX_EXPERTS 65536, MP_MAX_LAYERS
 * 4096, MP_MAX_GPUS 65536, MP_MAX_SLOTS_PER_GPU 4096; loader.h:
 * MP_MAX_INPUT_BYTES 256 MiB), and absurd sizes on the command line.
 *
 * The CLI ($MOEPLAN) refuses the same files with one diagnostic line.
 *
 * Big inputs are made at run time in a private folder under /tmp (the
 * gigabyte file is sparse: it takes no disk) and removed afterwards.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli-run.h"
#include "moeplan/loader.h"
#include "moeplan/placement.h"

/* ------------------------------------------------------------ helpers */

/* A fresh folder under /tmp for one test; removed (with the files the test
 * names through tmp_file) by tmp_cleanup. */
static char tmp_dir[256];
static char tmp_files[8][512];
static int n_tmp_files;

static int tmp_setup(void **state)
{
	(void)state;
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/moeplan-limits-XXXXXX");
	n_tmp_files = 0;
	return mkdtemp(tmp_dir) ? 0 : -1;
}

static int tmp_cleanup(void **state)
{
	(void)state;
	for (int i = 0; i < n_tmp_files; i++) {
		struct stat st;
		if (lstat(tmp_files[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			rmdir(tmp_files[i]);
		} else {
			unlink(tmp_files[i]);
		}
	}
	n_tmp_files = 0;
	return rmdir(tmp_dir);
}

/* Path of name inside the test's folder (remembered for cleanup). */
static const char *tmp_file(const char *name)
{
	assert_true(n_tmp_files < 8);
	char *p = tmp_files[n_tmp_files++];
	snprintf(p, sizeof(tmp_files[0]), "%s/%s", tmp_dir, name);
	return p;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* Every loader behind one signature, each with its own output struct
 * (initialised before and finished after, as the loaders ask). */
static int load_model(const char *path, struct mp_diags *d)
{
	struct mp_model m;
	mp_model_init(&m);
	int rc = mp_load_model(path, &m, d);
	mp_model_finish(&m);
	return rc;
}

static int load_hardware(const char *path, struct mp_diags *d)
{
	struct mp_hardware h;
	mp_hardware_init(&h);
	int rc = mp_load_hardware(path, &h, d);
	mp_hardware_finish(&h);
	return rc;
}

static int load_scenario(const char *path, struct mp_diags *d)
{
	struct mp_scenario s;
	mp_scenario_init(&s);
	int rc = mp_load_scenario(path, &s, d);
	mp_scenario_finish(&s);
	return rc;
}

static int load_traffic(const char *path, struct mp_diags *d)
{
	struct mp_traffic t;
	mp_traffic_init(&t);
	int rc = mp_load_traffic(path, &t, d);
	mp_traffic_finish(&t);
	return rc;
}

static int load_loads(const char *path, struct mp_diags *d)
{
	struct mp_loads l;
	mp_loads_init(&l);
	int rc = mp_load_loads(path, &l, d);
	mp_loads_finish(&l);
	return rc;
}

static int load_map(const char *path, struct mp_diags *d)
{
	struct mp_placement p;
	mp_placement_init(&p);
	int rc = mp_load_map(path, NULL, 8, &p, d);
	mp_placement_finish(&p);
	return rc;
}

static const struct {
	const char *name;
	int (*load)(const char *path, struct mp_diags *d);
} loaders[] = {
	{"model", load_model},     {"hardware", load_hardware}, {"scenario", load_scenario},
	{"traffic", load_traffic}, {"loads", load_loads},       {"map", load_map},
};

/* Every loader refuses path with MP_EINVAL and at least one diagnostic on
 * that file whose message contains each of the given words. */
static void all_refuse(const char *path, const char *word1, const char *word2)
{
	for (size_t i = 0; i < sizeof(loaders) / sizeof(loaders[0]); i++) {
		struct mp_diags d;
		mp_diags_init(&d);
		int rc = loaders[i].load(path, &d);
		if (rc != MP_EINVAL || d.count == 0) {
			fail_msg("%s loader on %s: rc %d, %zu diagnostics", loaders[i].name, path, rc,
				 d.count);
		}
		assert_non_null(d.items[0].file);
		assert_string_equal(d.items[0].file, path);
		if (!strstr(d.items[0].message, word1) || (word2 && !strstr(d.items[0].message, word2))) {
			fail_msg("%s loader on %s: message '%s' lacks '%s'%s%s", loaders[i].name, path,
				 d.items[0].message, word1, word2 ? " or " : "", word2 ? word2 : "");
		}
		mp_diags_finish(&d);
	}
}

/* ------------------------------------------------------ hostile files */

static void limits__loaders_refuse_a_directory(void **state)
{
	(void)state;
	const char *dir = tmp_file("input.yaml");
	assert_int_equal(mkdir(dir, 0700), 0);
	all_refuse(dir, "directory", NULL);
}

static void limits__loaders_refuse_an_empty_file(void **state)
{
	(void)state;
	const char *path = tmp_file("empty.yaml");
	write_text(path, "");
	all_refuse(path, "empty", NULL);
}

/* 1 GB = 1e9 bytes of zeros, sparse: refused from its size before any
 * read (1e9 > 256 MiB = 268435456), so every loader answers at once. */
static void limits__loaders_refuse_a_gigabyte_of_zeros(void **state)
{
	(void)state;
	const char *path = tmp_file("zeros.yaml");
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1000000000), 0);
	assert_int_equal(close(fd), 0);
	all_refuse(path, "1000000000", "268435456");
}

/* A device that never ends: reading stops past the 256 MiB limit. */
static void limits__endless_input_stops_at_the_limit(void **state)
{
	(void)state;
	struct mp_diags d;
	mp_diags_init(&d);
	struct mp_loads l;
	mp_loads_init(&l);
	assert_int_equal(mp_load_loads("/dev/zero", &l, &d), MP_EINVAL);
	assert_true(d.count >= 1);
	assert_non_null(strstr(d.items[0].message, "268435456"));
	assert_int_equal(l.n_layers, 0);
	mp_loads_finish(&l);
	mp_diags_finish(&d);
}

/* ------------------------------------------------------------- shapes */

/* A CSV row of n cells "1,1,...,1" repeated rows times. */
static void write_csv(const char *path, size_t rows, size_t cols)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	for (size_t r = 0; r < rows; r++) {
		for (size_t c = 0; c < cols; c++) {
			fputs(c + 1 < cols ? "1," : "1\n", f);
		}
	}
	assert_int_equal(fclose(f), 0);
}

/* 10^6 columns: refused at the 65,537th cell, which starts at column
 * 2 * 65536 + 1 = 131073 of line 1 (each earlier cell is "1,"). */
static void limits__csv_with_a_million_columns(void **state)
{
	(void)state;
	const char *path = tmp_file("wide.csv");
	write_csv(path, 1, 1000000);
	struct mp_diags d;
	mp_diags_init(&d);
	struct mp_loads l;
	mp_loads_init(&l);
	assert_int_equal(mp_load_loads(path, &l, &d), MP_EINVAL);
	assert_true(d.count >= 1);
	assert_int_equal(d.items[0].line, 1);
	assert_int_equal(d.items[0].column, 131073);
	assert_non_null(strstr(d.items[0].message, "65536"));
	assert_int_equal(l.n_experts, 0);
	assert_null(l.w);
	mp_loads_finish(&l);
	mp_diags_finish(&d);
}

/* The documented maximums are accepted exactly: 65536 experts in one row,
 * 4096 rows; one more row is refused on line 4097. */
static void limits__csv_at_the_maximum_shape(void **state)
{
	(void)state;
	const char *wide = tmp_file("max-experts.csv");
	const char *tall = tmp_file("max-layers.csv");
	const char *taller = tmp_file("too-many-layers.csv");
	write_csv(wide, 1, 65536);
	write_csv(tall, 4096, 1);
	write_csv(taller, 4097, 1);
	struct mp_diags d;
	mp_diags_init(&d);
	struct mp_loads l;
	mp_loads_init(&l);
	assert_int_equal(mp_load_loads(wide, &l, &d), 0);
	assert_int_equal(l.n_layers, 1);
	assert_int_equal(l.n_experts, 65536);
	assert_true(l.w[65535] == 1.0);
	assert_int_equal(mp_load_loads(tall, &l, &d), 0);
	assert_int_equal(l.n_layers, 4096);
	assert_int_equal(l.n_experts, 1);
	assert_int_equal(d.count, 0);
	assert_int_equal(mp_load_loads(taller, &l, &d), MP_EINVAL);
	assert_true(d.count >= 1);
	assert_int_equal(d.items[0].line, 4097);
	assert_non_null(strstr(d.items[0].message, "4096"));
	/* Untouched on failure: still the 4096 x 1 loads. */
	assert_int_equal(l.n_layers, 4096);
	mp_loads_finish(&l);
	mp_diags_finish(&d);
}

/* The same width limit in JSON: one row of 65,537 zeros. */
static void limits__json_loads_beyond_the_maximum_width(void **state)
{
	(void)state;
	const char *path = tmp_file("wide.json");
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fputs("[[0", f);
	for (int i = 1; i < 65537; i++) {
		fputs(",0", f);
	}
	fputs("]]\n", f);
	assert_int_equal(fclose(f), 0);
	struct mp_diags d;
	mp_diags_init(&d);
	struct mp_loads l;
	mp_loads_init(&l);
	assert_int_equal(mp_load_loads(path, &l, &d), MP_EINVAL);
	assert_true(d.count >= 1);
	assert_non_null(strstr(d.items[0].message, "65536"));
	mp_loads_finish(&l);
	mp_diags_finish(&d);
}

/* Allocation entry points refuse shapes beyond the maximums before they
 * allocate (no overflow, no attempt at terabytes). */
static void limits__allocations_beyond_the_maximums(void **state)
{
	(void)state;
	struct mp_loads l;
	mp_loads_init(&l);
	assert_int_equal(mp_loads_alloc(&l, MP_MAX_LAYERS + 1, 8), MP_EINVAL);
	assert_int_equal(mp_loads_alloc(&l, 1, MP_MAX_EXPERTS + 1), MP_EINVAL);
	assert_int_equal(mp_loads_alloc(&l, 0, 8), MP_EINVAL);
	assert_int_equal(mp_loads_alloc(&l, UINT32_MAX, UINT32_MAX), MP_EINVAL);
	assert_null(l.w);
	mp_loads_finish(&l);

	struct mp_placement p;
	mp_placement_init(&p);
	/* UINT32_MAX GPUs x UINT32_MAX slots would wrap a 32-bit product to 1. */
	assert_int_equal(mp_placement_alloc(&p, 1, 1, UINT32_MAX, UINT32_MAX), MP_EINVAL);
	assert_int_equal(mp_placement_alloc(&p, 1, 8, MP_MAX_GPUS + 1, 1), MP_EINVAL);
	assert_int_equal(mp_placement_alloc(&p, 1, 8, 8, MP_MAX_SLOTS_PER_GPU + 1), MP_EINVAL);
	assert_int_equal(mp_placement_alloc(&p, MP_MAX_LAYERS + 1, 8, 8, 1), MP_EINVAL);
	assert_int_equal(mp_placement_alloc(&p, 1, 9, 8, 1), MP_EINVAL); /* 9 experts, 8 slots */
	assert_null(p.layers);
	mp_placement_finish(&p);
}

/* ---------------------------------------------------------- the CLI */

/* Every command that reads a file refuses the same hostile files with exit
 * 1, one "PATH: error: ..." line naming the problem, and no output. */
static void limits__commands_refuse_hostile_files(void **state)
{
	(void)state;
	const char *dir = tmp_file("a-folder");
	const char *empty = tmp_file("empty.csv");
	const char *zeros = tmp_file("zeros.csv");
	const char *out = tmp_file("out.yaml");
	assert_int_equal(mkdir(dir, 0700), 0);
	write_text(empty, "");
	int fd = open(zeros, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1000000000), 0);
	assert_int_equal(close(fd), 0);
	const struct {
		const char *path;
		const char *word;
	} files[] = {{dir, "directory"}, {empty, "empty"}, {zeros, "1000000000"}};
	for (size_t i = 0; i < 3; i++) {
		const char *f = files[i].path;
		struct cli_result runs[] = {
			cli_run("plan", f, "-o", out, NULL),
			cli_run("place", f, "--gpus", "8", "--slots", "72", "-o", out, NULL),
			cli_run("check", f, "-o", out, NULL),
			cli_run("replan", "--plan", f, "--loads", f, "-o", out, NULL),
		};
		for (size_t j = 0; j < sizeof(runs) / sizeof(runs[0]); j++) {
			char prefix[600];
			snprintf(prefix, sizeof(prefix), "%s: error: ", f);
			const char *nl = strchr(runs[j].err, '\n');
			if (runs[j].status != 1 || strncmp(runs[j].err, prefix, strlen(prefix)) != 0 ||
			    !strstr(runs[j].err, files[i].word) || !nl ||
			    (size_t)(strstr(runs[j].err, files[i].word) - runs[j].err) >
				    (size_t)(nl - runs[j].err)) {
				fail_msg("command %zu on %s: exit %d, stderr '%s'", j, f, runs[j].status,
					 runs[j].err);
			}
			assert_int_equal(access(out, F_OK), -1);
			cli_result_free(&runs[j]);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(limits__loaders_refuse_a_directory, tmp_setup, tmp_cleanup),
		cmocka_unit_test_setup_teardown(limits__loaders_refuse_an_empty_file, tmp_setup, tmp_cleanup),
		cmocka_unit_test_setup_teardown(limits__loaders_refuse_a_gigabyte_of_zeros, tmp_setup,
						tmp_cleanup),
		cmocka_unit_test(limits__endless_input_stops_at_the_limit),
		cmocka_unit_test_setup_teardown(limits__csv_with_a_million_columns, tmp_setup, tmp_cleanup),
		cmocka_unit_test_setup_teardown(limits__csv_at_the_maximum_shape, tmp_setup, tmp_cleanup),
		cmocka_unit_test_setup_teardown(limits__json_loads_beyond_the_maximum_width, tmp_setup,
						tmp_cleanup),
		cmocka_unit_test(limits__allocations_beyond_the_maximums),
		cmocka_unit_test_setup_teardown(limits__commands_refuse_hostile_files, tmp_setup,
						tmp_cleanup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
