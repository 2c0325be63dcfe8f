/* `moeplan help [NAME]`: open a manual page, as `git help` does.
 *
 * The pages are written in markdown (doc/, one .md per page) and built into roff by
 * go-md2man (doc/meson.build). A page is looked for, in order:
 *   1. the build tree's doc/ folder, when this program runs from the build
 *      tree (its /proc/self/exe is in MOEPLAN_BUILD_EXEDIR);
 *   2. the install it runs from: the program's folder with MOEPLAN_BINDIR
 *      taken off is the prefix (also a DESTDIR copy), pages in
 *      PREFIX/MOEPLAN_MANDIR/manN/, markdown in PREFIX/MOEPLAN_DOCDIR/;
 *   3. the configured install paths (MOEPLAN_PREFIX).
 * The roff page is shown with `man -l PAGE` (man's pager, MANPAGER). When
 * man cannot be run, the page's markdown source is printed to standard
 * output, with one line on standard error saying so. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MOEPLAN_BUILD_EXEDIR
#define MOEPLAN_BUILD_EXEDIR ""
#endif
#ifndef MOEPLAN_BUILD_DOCDIR
#define MOEPLAN_BUILD_DOCDIR ""
#endif
#ifndef MOEPLAN_PREFIX
#define MOEPLAN_PREFIX "/usr/local"
#endif
#ifndef MOEPLAN_BINDIR
#define MOEPLAN_BINDIR "bin"
#endif
#ifndef MOEPLAN_MANDIR
#define MOEPLAN_MANDIR "share/man"
#endif
#ifndef MOEPLAN_DOCDIR
#define MOEPLAN_DOCDIR "share/doc/moeplan"
#endif

/* The topics beside the commands: name, page, section. */
static const struct {
	const char *name, *page;
	char section;
} topics[] = {
	{"formats", "moeplan-formats", '5'},
	{"models", "moeplan-models", '7'},
	{"placement", "moeplan-placement", '7'},
	{"library", "libmoeplan", '3'},
};

#define N_TOPICS (sizeof(topics) / sizeof(topics[0]))

static bool is_file(const char *path)
{
	return access(path, R_OK) == 0;
}

/* The folder of the running program (realpath of /proc/self/exe), or false. */
static bool exe_dir(char *dir, size_t size)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		return false;
	}
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash || (size_t)(slash - exe) >= size) {
		return false;
	}
	*slash = '\0';
	snprintf(dir, size, "%s", exe);
	return true;
}

/* Fill man_path and md_path with the page "PAGE.S" (roff) and "PAGE.S.md"
 * (its markdown source) of the first place that has the roff page. */
static bool find_page(const char *page, char section, char *man_path, char *md_path, size_t size)
{
	char dir[PATH_MAX] = "", real_build[PATH_MAX];
	bool have_dir = exe_dir(dir, sizeof(dir));
	/* 1. The build tree. */
	if (have_dir && MOEPLAN_BUILD_EXEDIR[0] && realpath(MOEPLAN_BUILD_EXEDIR, real_build) &&
	    strcmp(dir, real_build) == 0) {
		snprintf(man_path, size, "%s/%s.%c", MOEPLAN_BUILD_DOCDIR, page, section);
		snprintf(md_path, size, "%s/%s.%c.md", MOEPLAN_BUILD_DOCDIR, page, section);
		if (is_file(man_path)) {
			return true;
		}
	}
	/* 2. The install this program runs from: DIR ends in /BINDIR. */
	size_t len = strlen(dir), bin = strlen(MOEPLAN_BINDIR);
	if (have_dir && len > bin && dir[len - bin - 1] == '/' &&
	    strcmp(dir + len - bin, MOEPLAN_BINDIR) == 0) {
		int root = (int)(len - bin - 1);
		snprintf(man_path, size, "%.*s/%s/man%c/%s.%c", root, dir, MOEPLAN_MANDIR, section, page,
			 section);
		snprintf(md_path, size, "%.*s/%s/%s.%c.md", root, dir, MOEPLAN_DOCDIR, page, section);
		if (is_file(man_path)) {
			return true;
		}
	}
	/* 3. The configured install. */
	snprintf(man_path, size, "%s/%s/man%c/%s.%c", MOEPLAN_PREFIX, MOEPLAN_MANDIR, section, page, section);
	snprintf(md_path, size, "%s/%s/%s.%c.md", MOEPLAN_PREFIX, MOEPLAN_DOCDIR, page, section);
	return is_file(man_path);
}

/* Copy the file at path to standard output; false when it cannot be read. */
static bool print_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		return false;
	}
	char buf[8192];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		fwrite(buf, 1, n, stdout);
	}
	fclose(f);
	return fflush(stdout) == 0;
}

static void list_names(const char *const *commands, size_t n, FILE *out)
{
	fprintf(out, "Commands:");
	for (size_t i = 0; i < n; i++) {
		fprintf(out, " %s", commands[i]);
	}
	fprintf(out, "\nTopics:");
	for (size_t i = 0; i < N_TOPICS; i++) {
		fprintf(out, " %s", topics[i].name);
	}
	fprintf(out, "\n");
}

int cli_help(const char *name, const char *const *commands, size_t n_commands)
{
	char page[64];
	char section = '1';
	if (!name) {
		snprintf(page, sizeof(page), "moeplan");
	} else {
		bool known = false;
		for (size_t i = 0; i < n_commands && !known; i++) {
			if (strcmp(commands[i], name) == 0) {
				snprintf(page, sizeof(page), "moeplan-%s", commands[i]);
				known = true;
			}
		}
		for (size_t i = 0; i < N_TOPICS && !known; i++) {
			if (strcmp(topics[i].name, name) == 0) {
				snprintf(page, sizeof(page), "%s", topics[i].page);
				section = topics[i].section;
				known = true;
			}
		}
		if (!known) {
			fprintf(stderr, "moeplan: error: unknown command '%s': no manual page of that name\n",
				name);
			list_names(commands, n_commands, stderr);
			return EXIT_USAGE;
		}
	}
	char man_path[PATH_MAX + 64], md_path[PATH_MAX + 64];
	if (!find_page(page, section, man_path, md_path, sizeof(man_path))) {
		fprintf(stderr,
			"moeplan help: error: the manual page %s(%c) is not installed (looked for %s); "
			"'moeplan COMMAND --help' prints a command's options\n",
			page, section, man_path);
		return EXIT_INPUT;
	}
	fflush(stdout);
	execlp("man", "man", "-l", man_path, (char *)NULL);
	/* man could not be run: the page's source instead. */
	int err = errno;
	if (print_file(md_path)) {
		fprintf(stderr, "moeplan help: cannot run man (%s); printed the page's markdown source %s\n",
			strerror(err), md_path);
		return EXIT_OK;
	}
	if (print_file(man_path)) {
		fprintf(stderr, "moeplan help: cannot run man (%s); printed the page's roff source %s\n",
			strerror(err), man_path);
		return EXIT_OK;
	}
	fprintf(stderr, "moeplan help: error: cannot run man (%s) nor read %s\n", strerror(err), md_path);
	return EXIT_INPUT;
}
