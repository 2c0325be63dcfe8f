/* What a user outside the tree gets: `meson install` into a scratch
 * directory gives a library that an outside program links with
 * `pkg-config --cflags --libs moeplan` (shared, and static through
 * Libs.private), the headers compile alone, the man page, completion and
 * presets are installed, the README's example places its layer optimally,
 * and every command's help has a synopsis, its options with their defaults
 * and two examples, each option also documented in the man page.
 *
 * The environment (tests/meson.build) names the compiler (MOEPLAN_CC), the
 * build and source trees, meson, the install layout and the sanitizers of
 * this build (an instrumented library needs an instrumented program). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli-run.h"

static const char *env(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v) {
		fail_msg("environment variable %s is not set (run through meson test)", name);
	}
	return v;
}

/* Run a shell script with sh -c; its stdout and stderr into *out (caller
 * frees). Variables the script uses come from the environment. Returns
 * the exit status (128 + signal when killed). */
static int sh(const char *script, char **out)
{
	char path[] = "/tmp/moeplan-test-installXXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		FILE *in = freopen("/dev/null", "r", stdin);
		(void)in;
		dup2(fd, 1);
		dup2(fd, 2);
		execl("/bin/sh", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	int ws = 0;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	close(fd);
	char *text = cli_slurp(path);
	unlink(path);
	assert_non_null(text);
	if (out) {
		*out = text;
	} else {
		free(text);
	}
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* Like sh(), failing the test with the script's output unless it exits 0. */
static char *sh_ok(const char *script)
{
	char *out = NULL;
	int status = sh(script, &out);
	if (status != 0) {
		print_error("$ %s\n%s\n(exit %d)\n", script, out, status);
		free(out);
		fail();
	}
	return out;
}

/* ---- the README's example, checked against brute force ---- */

/* DeepSeek EPLB README, layer 0: 12 experts on 8 GPUs x 2 slots. */
static const double eplb_w[12] = {90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86};
#define EPLB_E 12
#define EPLB_G 8
#define EPLB_S 2

struct brute {
	double best;
	uint32_t r[EPLB_E];
	double v[EPLB_G * EPLB_S];
	uint32_t e[EPLB_G * EPLB_S];
	bool used[EPLB_G * EPLB_S];
};

/* Pair the unused items two per GPU, never one expert twice on a GPU,
 * keeping the smallest largest pair sum. */
static void pair_up(struct brute *b, double cur)
{
	size_t n = EPLB_G * EPLB_S, i = 0;
	while (i < n && b->used[i]) {
		i++;
	}
	if (i == n) {
		b->best = fmin(b->best, cur);
		return;
	}
	b->used[i] = true;
	for (size_t j = i + 1; j < n; j++) {
		double s = b->v[i] + b->v[j];
		if (!b->used[j] && b->e[j] != b->e[i] && fmax(cur, s) < b->best) {
			b->used[j] = true;
			pair_up(b, fmax(cur, s));
			b->used[j] = false;
		}
	}
	b->used[i] = false;
}

/* Every replica count vector r (r_e >= 1, at most one replica per GPU,
 * sum = 16 slots), each replica carrying w_e / r_e (the even split). */
static void replicas(struct brute *b, uint32_t expert, uint32_t left)
{
	if (expert == EPLB_E) {
		if (left != 0) {
			return;
		}
		size_t n = 0;
		double top = 0;
		for (uint32_t x = 0; x < EPLB_E; x++) {
			for (uint32_t k = 0; k < b->r[x]; k++) {
				b->v[n] = eplb_w[x] / b->r[x];
				b->e[n++] = x;
				top = fmax(top, eplb_w[x] / b->r[x]);
			}
		}
		if (top < b->best) {
			pair_up(b, 0);
		}
		return;
	}
	uint32_t rest = EPLB_E - expert - 1; /* experts after this one need >= 1 each */
	for (uint32_t r = 1; r <= EPLB_G && r + rest <= left; r++) {
		b->r[expert] = r;
		replicas(b, expert + 1, left - r);
	}
}

static void install__example_places_its_layer_optimally(void **state)
{
	(void)state;
	struct brute b = {.best = HUGE_VAL};
	replicas(&b, 0, EPLB_G * EPLB_S);
	/* By hand: no placement beats the mean, 1033 / 8 = 129.125 per GPU;
	 * the exhaustive search finds 136 (e.g. experts 1 and 7 on one GPU:
	 * 132 + 4, with 183 and 165 split in two). */
	assert_true(b.best >= 1033.0 / 8.0);
	assert_true(fabs(b.best - 136.0) < 1e-9);

	char *out = sh_ok("\"$MOEPLAN_EXAMPLE\"");
	/* Recompute each GPU's load from the experts the example printed. */
	uint32_t count[EPLB_E] = {0};
	uint32_t slot[EPLB_G][EPLB_S];
	double printed[EPLB_G];
	const char *p = out;
	for (uint32_t g = 0; g < EPLB_G; g++) {
		unsigned gg, a, c;
		const char *line = strstr(p, "GPU ");
		assert_non_null(line);
		/* "GPU g: experts a c, load x" */
		char *end = NULL;
		gg = (unsigned)strtoul(line + 4, &end, 10);
		assert_int_equal(gg, g);
		const char *ex = strstr(end, "experts ");
		assert_non_null(ex);
		a = (unsigned)strtoul(ex + 8, &end, 10);
		c = (unsigned)strtoul(end, &end, 10);
		const char *ld = strstr(end, "load ");
		assert_non_null(ld);
		printed[g] = strtod(ld + 5, &end);
		assert_true(a < EPLB_E && c < EPLB_E && a != c);
		slot[g][0] = a;
		slot[g][1] = c;
		count[a]++;
		count[c]++;
		p = end;
	}
	double busiest = 0;
	for (uint32_t g = 0; g < EPLB_G; g++) {
		double load = 0;
		for (uint32_t s = 0; s < EPLB_S; s++) {
			assert_true(count[slot[g][s]] >= 1);
			load += eplb_w[slot[g][s]] / count[slot[g][s]];
		}
		assert_true(fabs(load - printed[g]) < 1e-9);
		busiest = fmax(busiest, load);
	}
	for (uint32_t x = 0; x < EPLB_E; x++) {
		assert_true(count[x] >= 1);
	}
	const char *last = strstr(p, "busiest GPU ");
	assert_non_null(last);
	double claimed = strtod(last + 12, NULL);
	assert_true(fabs(claimed - busiest) < 1e-9);
	assert_true(fabs(busiest - b.best) < 1e-9);
	assert_non_null(strstr(last, "(optimal)"));
	free(out);
}

/* ---- headers ---- */

static void install__each_header_compiles_alone(void **state)
{
	(void)state;
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/include/moeplan", env("MOEPLAN_SOURCE_ROOT"));
	DIR *d = opendir(dir);
	assert_non_null(d);
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (len < 3 || strcmp(de->d_name + len - 2, ".h") != 0) {
			continue;
		}
		/* Twice: the include guard must hold. Pedantic C17, warnings as
		 * errors, nothing but the header itself. */
		char script[8192];
		snprintf(script, sizeof(script),
			 "printf '#include <moeplan/%s>\\n#include <moeplan/%s>\\n"
			 "typedef int header_check;\\n' | "
			 "$MOEPLAN_CC -std=c17 -pedantic -Werror -Wall -Wextra -fsyntax-only "
			 "-I \"$MOEPLAN_SOURCE_ROOT/include\" -x c -",
			 de->d_name, de->d_name);
		free(sh_ok(script));
		n++;
	}
	closedir(d);
	/* The fourteen modules of the design plus any added since. */
	assert_true(n >= 14);
}

/* ---- meson install ---- */

static char destdir[] = "/tmp/moeplan-destdirXXXXXX";
static bool installed;

/* meson install into a fresh scratch directory (once per run). */
static void install_once(void)
{
	if (installed) {
		return;
	}
	assert_non_null(mkdtemp(destdir));
	setenv("DESTDIR_ROOT", destdir, 1);
	free(sh_ok("\"$MESON\" install -C \"$MOEPLAN_BUILD_ROOT\" --no-rebuild --quiet "
		   "--destdir \"$DESTDIR_ROOT\""));
	/* Where the prefix landed inside it. */
	char root[4096];
	snprintf(root, sizeof(root), "%s%s", destdir, env("MOEPLAN_PREFIX"));
	setenv("ROOT", root, 1);
	installed = true;
}

static bool exists(const char *rel)
{
	char path[8192];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", getenv("ROOT"), rel);
	return stat(path, &st) == 0;
}

static size_t list_commands(char names[][32], size_t cap);

static void install__installs_library_headers_docs_and_presets(void **state)
{
	(void)state;
	install_once();
	char rel[4096];
	const char *lib = env("MOEPLAN_LIBDIR");
	static const char *const libs[] = {"libmoeplan.a", "libmoeplan.so", "pkgconfig/moeplan.pc"};
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		snprintf(rel, sizeof(rel), "%s/%s", lib, libs[i]);
		if (!exists(rel)) {
			fail_msg("%s was not installed", rel);
		}
	}
	static const char *const files[] = {
		"include/moeplan/placement.h", "include/moeplan/plan.h",
		"share/man/man1/moeplan.1", "share/man/man1/moeplan-plan.1",
		"share/man/man5/moeplan-formats.5", "share/man/man7/moeplan-models.7",
		"share/man/man7/moeplan-placement.7", "share/man/man3/libmoeplan.3",
		"share/doc/moeplan/moeplan-plan.1.md", "share/bash-completion/completions/moeplan",
		"share/moeplan/plans/default.yaml", "share/moeplan/plans/models/deepseek-v4.1-flash.yaml",
		"share/moeplan/hardware/gb200-nvl72.yaml", "bin/moeplan",
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (!exists(files[i])) {
			fail_msg("%s was not installed", files[i]);
		}
	}
	/* The man page names the real data directory, not the template's. */
	char *man = sh_ok("cat \"$ROOT/share/man/man1/moeplan.1\"");
	assert_null(strstr(man, "@DATADIR@"));
	char want[4096];
	snprintf(want, sizeof(want), "%s/share/moeplan/plans/", env("MOEPLAN_PREFIX"));
	assert_non_null(strstr(man, want));
	free(man);
	/* Every command has its page, built from its markdown (issue 27), and
	 * the installed program opens the installed page: `moeplan help plan`
	 * from the DESTDIR copy finds $ROOT/share/man/man1/moeplan-plan.1. */
	char names[32][32];
	size_t n = list_commands(names, 32);
	for (size_t i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "share/man/man1/moeplan-%s.1", names[i]);
		if (!exists(rel)) {
			fail_msg("%s was not installed", rel);
		}
	}
	char *page = sh_ok("MANPAGER=cat MANWIDTH=200 \"$ROOT/bin/moeplan\" help plan; "
			   "test -f \"$ROOT/share/man/man1/moeplan-plan.1\"");
	if (!strstr(page, "moeplan-plan - plan EP widths, slots and placement for a scenario")) {
		fail_msg("the installed 'moeplan help plan' does not show moeplan-plan(1): %.300s", page);
	}
	free(page);
	char *roff = sh_ok("cat \"$ROOT/share/man/man1/moeplan-plan.1\"");
	assert_non_null(strstr(roff, ".TH MOEPLAN-PLAN 1"));
	assert_null(strstr(roff, "<!--"));
	free(roff);
	/* The installed program reads the installed presets: a model and a
	 * GPU whose relative paths survived the copy. */
	free(sh_ok("\"$ROOT/bin/moeplan\" fit -m \"$ROOT/share/moeplan/plans/models/deepseek-v4.1-flash.yaml\" "
		   "-H \"$ROOT/share/moeplan/hardware/gb200-nvl72.yaml\" --ep 64 -r 64 -c 131072 -f json"));
}

/* The link recipe of the notes, with the prefix moved into the scratch
 * directory (--define-variable=prefix) as a packager's DESTDIR does. */
#define PKG "PKG_CONFIG_PATH=\"$ROOT/$MOEPLAN_LIBDIR/pkgconfig\" pkg-config " \
	    "--define-variable=prefix=\"$ROOT\" "
#define SAN "$(test \"$MOEPLAN_SANITIZE\" = none || echo -fsanitize=$MOEPLAN_SANITIZE) "

static void install__outside_program_links_with_pkg_config(void **state)
{
	(void)state;
	install_once();
	char *expected = sh_ok("\"$MOEPLAN_EXAMPLE\"");
	/* meson test points LD_LIBRARY_PATH at the build tree: an outside
	 * program must find the installed library by itself. */
	unsetenv("LD_LIBRARY_PATH");

	/* Shared. */
	free(sh_ok("cd \"$DESTDIR_ROOT\" && $MOEPLAN_CC -std=c17 -pedantic -Wall -Wextra -Werror " SAN
		   "\"$MOEPLAN_SOURCE_ROOT/tests/example-plan-layer.c\" $(" PKG "--cflags --libs moeplan) "
		   "-Wl,-rpath,\"$ROOT/$MOEPLAN_LIBDIR\" -o example-shared"));
	char *got = sh_ok("\"$DESTDIR_ROOT/example-shared\"");
	assert_string_equal(got, expected);
	free(got);
	/* It really uses the installed shared library. */
	got = sh_ok("ldd \"$DESTDIR_ROOT/example-shared\" | grep libmoeplan");
	if (!strstr(got, destdir)) {
		fail_msg("example-shared does not load the installed library: %s", got);
	}
	free(got);

	/* Static: the archive plus Libs.private (GLPK has no .pc on Debian).
	 * --as-needed drops the -lmoeplan that --libs also names (Debian's
	 * default, but -fsanitize turns it off). */
	free(sh_ok("cd \"$DESTDIR_ROOT\" && $MOEPLAN_CC -std=c17 " SAN
		   "\"$MOEPLAN_SOURCE_ROOT/tests/example-plan-layer.c\" $(" PKG "--cflags moeplan) "
		   "-Wl,--as-needed \"$ROOT/$MOEPLAN_LIBDIR/libmoeplan.a\" $(" PKG "--static --libs moeplan) "
		   "-o example-static"));
	got = sh_ok("\"$DESTDIR_ROOT/example-static\"");
	assert_string_equal(got, expected);
	free(got);
	got = sh_ok("ldd \"$DESTDIR_ROOT/example-static\"");
	assert_null(strstr(got, "libmoeplan"));
	free(got);
	free(expected);
}

/* ---- help and man page ---- */

/* The commands `moeplan --help` lists (two-space indent under Commands:). */
static size_t list_commands(char names[][32], size_t cap)
{
	struct cli_result r = cli_run("--help", NULL);
	assert_int_equal(r.status, 0);
	const char *p = strstr(r.out, "Commands:\n");
	assert_non_null(p);
	p += strlen("Commands:\n");
	size_t n = 0;
	while (n < cap && strncmp(p, "  ", 2) == 0 && p[2] != ' ') {
		size_t len = strcspn(p + 2, " \n");
		assert_true(len < 32);
		memcpy(names[n], p + 2, len);
		names[n][len] = '\0';
		n++;
		p = strchr(p, '\n');
		assert_non_null(p);
		p++;
	}
	cli_result_free(&r);
	return n;
}

/* Each command's help (issue 16) and page (issue 27): `CMD --help` starts
 * with its usage, gives two examples and, for an option that takes a value,
 * its default or that it is required; each option it prints is in the
 * command's page doc/moeplan-CMD.1.md (tests/cli-docs.py checks the headers
 * and the reverse). */
static void install__help_and_man_page_cover_every_option(void **state)
{
	(void)state;
	char names[32][32];
	size_t n = list_commands(names, 32);
	assert_true(n >= 6);
	int problems = 0;
	for (size_t i = 0; i < n; i++) {
		char page_path[4096];
		snprintf(page_path, sizeof(page_path), "%s/doc/moeplan-%.31s.1.md",
			 env("MOEPLAN_SOURCE_ROOT"), names[i]);
		char *page = cli_slurp(page_path);
		if (!page) {
			print_error("%s: no page %s\n", names[i], page_path);
			problems++;
			continue;
		}
		struct cli_result a = cli_run(names[i], "--help", NULL);
		if (a.status != 0) {
			print_error("%s --help: exit %d\n", names[i], a.status);
			problems++;
		}
		char usage[64];
		snprintf(usage, sizeof(usage), "Usage: moeplan %.31s", names[i]);
		if (strncmp(a.out, usage, strlen(usage)) != 0) {
			print_error("%s: help does not start with '%s'\n", names[i], usage);
			problems++;
		}
		/* Two real examples: lines "  moeplan NAME ..." under Examples:. */
		const char *ex = strstr(a.out, "\nExamples:\n");
		size_t examples = 0;
		char prefix[64];
		snprintf(prefix, sizeof(prefix), "\n  moeplan %.31s ", names[i]);
		for (const char *q = ex; q && (q = strstr(q, prefix)) != NULL; q++) {
			examples++;
		}
		if (examples < 2) {
			print_error("%s: %zu examples, expected two\n", names[i], examples);
			problems++;
		}
		/* Each option line ("  -x, --name ARG  text" or "      --name ..."):
		 * in the page ("**--name**"), and when it takes a value, its
		 * default or that it is required. */
		const char *opts = strstr(a.out, "\nOptions:\n");
		const char *end = ex ? ex : a.out + strlen(a.out);
		for (const char *q = opts; q && q < end; q = strchr(q + 1, '\n')) {
			const char *line = q + 1;
			const char *dash = strstr(line, "--");
			const char *eol = strchr(line, '\n');
			if (!dash || !eol || dash > eol || strncmp(line, "  ", 2) != 0 ||
			    (line[2] != '-' && strncmp(line, "      --", 8) != 0)) {
				continue;
			}
			char opt[64], want[160];
			size_t len = strcspn(dash, " \n");
			snprintf(opt, sizeof(opt), "%.*s", (int)len, dash);
			snprintf(want, sizeof(want), "**%s**", opt);
			if (strcmp(opt, "--help") != 0 && strcmp(opt, "--quiet") != 0 &&
			    strcmp(opt, "--version") != 0 && !strstr(page, want)) {
				print_error("%s %s: not in doc/moeplan-%s.1.md\n", names[i], opt, names[i]);
				problems++;
			}
			/* The text of this option runs to the next option line. */
			const char *next = eol;
			while (next && next < end && strncmp(next + 1, "        ", 8) == 0) {
				next = strchr(next + 1, '\n');
			}
			bool takes_value = dash[len] == ' ' && dash[len + 1] != ' ';
			char text[1024];
			snprintf(text, sizeof(text), "%.*s", (int)((next ? next : end) - line), line);
			if (takes_value && !strstr(text, "default") && !strstr(text, "required")) {
				print_error("%s %s: help gives no default\n", names[i], opt);
				problems++;
			}
		}
		cli_result_free(&a);
		free(page);
	}
	assert_int_equal(problems, 0);
}

static int teardown(void **state)
{
	(void)state;
	if (installed) {
		char script[4200];
		snprintf(script, sizeof(script), "rm -rf '%s'", destdir);
		free(sh_ok(script));
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(install__example_places_its_layer_optimally),
		cmocka_unit_test(install__each_header_compiles_alone),
		cmocka_unit_test(install__installs_library_headers_docs_and_presets),
		cmocka_unit_test(install__outside_program_links_with_pkg_config),
		cmocka_unit_test(install__help_and_man_page_cover_every_option),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
