/* Test helper: run the built moeplan binary and capture what it prints.
 * Header-only so each test program can include it. */
#ifndef MOEPLAN_TESTS_CLI_RUN_H
#define MOEPLAN_TESTS_CLI_RUN_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct cli_result {
	int status;   /* exit code, or 128 + signal */
	char *out;    /* stdout, NUL-terminated, owned */
	char *err;    /* stderr, NUL-terminated, owned */
};

static inline char *cli_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		return NULL;
	}
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (cap - n - 1 == 0) {
			char *bigger = realloc(buf, cap * 2);
			if (!bigger) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = bigger;
			cap *= 2;
		}
	}
	fclose(f);
	if (buf) {
		buf[n] = '\0';
	}
	return buf;
}

/* Path of a file in the source tree (MOEPLAN_SOURCE_ROOT), static buffer
 * per call slot (4 slots rotate). */
static inline const char *src_path(const char *rel)
{
	static char bufs[4][4096];
	static int next;
	char *buf = bufs[next++ % 4];
	const char *root = getenv("MOEPLAN_SOURCE_ROOT");
	snprintf(buf, 4096, "%s/%s", root ? root : ".", rel);
	return buf;
}

/* Run `moeplan ARGS...` (NULL-terminated) with the working directory
 * unchanged; stdin is /dev/null. */
static inline struct cli_result cli_run(const char *arg0, ...)
{
	const char *exe = getenv("MOEPLAN");
	const char *argv[64];
	int argc = 0;
	argv[argc++] = exe ? exe : "moeplan";
	va_list ap;
	va_start(ap, arg0);
	for (const char *a = arg0; a && argc < 63; a = va_arg(ap, const char *)) {
		argv[argc++] = a;
	}
	va_end(ap);
	argv[argc] = NULL;

	char out_path[] = "/tmp/moeplan-test-outXXXXXX";
	char err_path[] = "/tmp/moeplan-test-errXXXXXX";
	int out_fd = mkstemp(out_path);
	int err_fd = mkstemp(err_path);
	struct cli_result r = {.status = -1};
	pid_t pid = fork();
	if (pid == 0) {
		FILE *devnull = freopen("/dev/null", "r", stdin);
		(void)devnull;
		dup2(out_fd, 1);
		dup2(err_fd, 2);
		execv(argv[0], (char *const *)(void *)argv);
		_exit(127);
	}
	int wstatus = 0;
	if (pid > 0 && waitpid(pid, &wstatus, 0) == pid) {
		r.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
	}
	close(out_fd);
	close(err_fd);
	r.out = cli_slurp(out_path);
	r.err = cli_slurp(err_path);
	unlink(out_path);
	unlink(err_path);
	if (!r.out) {
		r.out = strdup("");
	}
	if (!r.err) {
		r.err = strdup("");
	}
	return r;
}

static inline void cli_result_free(struct cli_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

#endif
