/* No data lost (issue 8): outputs go to a temporary file next to the
 * target and are renamed into place; SIGTERM or SIGINT at any moment
 * leaves either no output or the complete one, and never a temporary file;
 * an input is never overwritten by -o; outputs do not depend on the run or
 * on the thread count.
 *
 * The runs use the built CLI ($MOEPLAN): `place` on loads written by the
 * test, `plan` on a copy of a shipped preset, `check` and `replan`. Catching a
 * run in the middle of writing is not left to timing: the test watches the
 * output folder with inotify, stops the process (SIGSTOP) the moment its
 * temporary file appears, checks that the file is there, and only then
 * sends the signal and lets the process continue.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli-run.h"

/* ------------------------------------------------------------ helpers */

static char dir[256];

static int dir_setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/moeplan-signals-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

/* Remove every file in dir (one level of subfolders too), then dir. */
static void remove_tree(const char *path)
{
	DIR *d = opendir(path);
	if (!d) {
		return;
	}
	for (struct dirent *e = readdir(d); e; e = readdir(d)) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
			continue;
		}
		char p[1024];
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		struct stat st;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
			remove_tree(p);
		} else {
			unlink(p);
		}
	}
	closedir(d);
	rmdir(path);
}

static int dir_teardown(void **state)
{
	(void)state;
	remove_tree(dir);
	return 0;
}

/* Path of name in the test's folder (8 rotating buffers: keep at most 8
 * alive). */
static const char *in_dir(const char *name)
{
	static char bufs[8][512];
	static int next;
	char *b = bufs[next++ % 8];
	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, name);
	return b;
}

static bool file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* Names in dir that contain ".tmp" (a temporary output left behind). */
static int count_tmp_files(void)
{
	int n = 0;
	DIR *d = opendir(dir);
	assert_non_null(d);
	for (struct dirent *e = readdir(d); e; e = readdir(d)) {
		if (strstr(e->d_name, ".tmp")) {
			fprintf(stderr, "left behind: %s/%s\n", dir, e->d_name);
			n++;
		}
	}
	closedir(d);
	return n;
}

static void copy_file(const char *from, const char *to)
{
	char *text = cli_slurp(from);
	assert_non_null(text);
	FILE *f = fopen(to, "wb");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	free(text);
}

/* Start `moeplan ARGS...` (NULL-terminated) in the background, its
 * output and errors to /dev/null; returns the pid. */
static pid_t spawn(const char *arg0, ...)
{
	const char *exe = getenv("MOEPLAN");
	const char *argv[32];
	int argc = 0;
	argv[argc++] = exe ? exe : "moeplan";
	va_list ap;
	va_start(ap, arg0);
	for (const char *a = arg0; a && argc < 31; a = va_arg(ap, const char *)) {
		argv[argc++] = a;
	}
	va_end(ap);
	argv[argc] = NULL;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execv(argv[0], (char *const *)(void *)argv);
		_exit(127);
	}
	return pid;
}

/* Loads of `layers` rows of `experts` columns. skew 0: all 1 (every layer
 * is solved at once, so a run's time goes to its output); skew > 0: the
 * issue 4 benchmark's w[l][e] = floor(1e6 / (((97 e + 31 l) mod E) + 1)^s)
 * with s = skew / 10 (integers, written exactly). */
static void write_loads(const char *path, unsigned layers, unsigned experts, unsigned skew)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	for (unsigned l = 0; l < layers; l++) {
		for (unsigned e = 0; e < experts; e++) {
			unsigned long w = 1;
			if (skew) {
				double r = (double)((97u * e + 31u * l) % experts) + 1.0;
				w = (unsigned long)(1e6 / pow(r, skew / 10.0));
			}
			fprintf(f, "%lu%c", w, e + 1 < experts ? ',' : '\n');
		}
	}
	assert_int_equal(fclose(f), 0);
}

/* The runs the signal tests interrupt: layers x 512 experts placed on
 * 512 GPUs x 4 slots, about 25 kB of YAML per layer. 24 layers on one
 * thread take seconds (killed mid-run); 8 layers give 0.2 MB to write. */
#define BIG_GPUS "512"
#define BIG_SLOTS "2048"

static const char *big_loads(unsigned layers)
{
	const char *path = in_dir("big.csv");
	write_loads(path, layers, 512, 0);
	return path;
}

/* ------------------------------------------------------------- tests */

/* SIGTERM 0.5 s into a run (while the solver works, before any output):
 * the process dies of the signal and leaves nothing in the folder. */
static void signals__sigterm_mid_run_leaves_nothing(void **state)
{
	(void)state;
	const char *out = in_dir("placement.yaml");
	pid_t pid = spawn("place", big_loads(24), "--gpus", BIG_GPUS, "--slots", BIG_SLOTS, "--threads",
			  "1", "-o", out, NULL);
	struct timespec half = {.tv_sec = 0, .tv_nsec = 500000000};
	nanosleep(&half, NULL);
	int status = 0;
	if (waitpid(pid, &status, WNOHANG) == pid) {
		fail_msg("the run ended within 0.5 s (status %d): no longer a test of a kill mid-run",
			 status);
	}
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGTERM);
	assert_false(file_exists(out));
	assert_int_equal(count_tmp_files(), 0);
}

/* Run the placement to out, stop it the moment its temporary file appears,
 * send sig, let it go on. Returns true when the process was caught with
 * its temporary file present (else it had already renamed it). */
static bool kill_while_writing(const char *loads, const char *out, int sig, int *status)
{
	int fd = inotify_init1(IN_CLOEXEC);
	assert_true(fd >= 0);
	assert_true(inotify_add_watch(fd, dir, IN_CREATE) >= 0);
	pid_t pid = spawn("place", loads, "--gpus", BIG_GPUS, "--slots", BIG_SLOTS, "-o", out, NULL);
	const char *base = strrchr(out, '/') + 1;
	char tmp_name[512] = "";
	bool exited = false;
	/* Wait (up to 10 minutes, for slow sanitizer builds) for the file. */
	for (int tries = 0; tries < 12000 && !tmp_name[0] && !exited; tries++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 50) > 0) {
			char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
			ssize_t n = read(fd, buf, sizeof(buf));
			for (ssize_t i = 0; i < n;) {
				const struct inotify_event *ev = (const void *)(buf + i);
				if (ev->len && strncmp(ev->name, base, strlen(base)) == 0 &&
				    strstr(ev->name + strlen(base), ".tmp")) {
					kill(pid, SIGSTOP);
					snprintf(tmp_name, sizeof(tmp_name), "%s/%s", dir, ev->name);
					break;
				}
				i += (ssize_t)sizeof(*ev) + ev->len;
			}
		}
		if (!tmp_name[0] && waitpid(pid, status, WNOHANG) == pid) {
			exited = true;
		}
	}
	close(fd);
	if (exited) {
		return false;
	}
	assert_true(tmp_name[0] != '\0');
	int st = 0;
	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	assert_true(WIFSTOPPED(st));
	bool caught = file_exists(tmp_name);
	kill(pid, sig);
	kill(pid, SIGCONT);
	assert_int_equal(waitpid(pid, status, 0), pid);
	return caught;
}

/* SIGTERM or SIGINT while the output is being written: the temporary file
 * is removed and the output is either absent or complete (the signal can
 * land in the blocked window around the rename); never a partial file. */
static void signal_while_writing(int sig)
{
	/* The complete output, computed once for both signals. */
	static char *want;
	const char *loads = big_loads(8);
	const char *out = in_dir("placement.yaml");
	if (!want) {
		struct cli_result r = cli_run("place", loads, "--gpus", BIG_GPUS, "--slots", BIG_SLOTS,
					      "-o", out, NULL);
		assert_int_equal(r.status, 0);
		cli_result_free(&r);
		want = cli_slurp(out);
		assert_non_null(want);
		assert_true(strlen(want) > 100000);
		unlink(out);
	}
	int caught = 0;
	for (int attempt = 0; attempt < 5 && caught == 0; attempt++) {
		int status = 0;
		if (kill_while_writing(loads, out, sig, &status)) {
			caught++;
			assert_true(WIFSIGNALED(status));
			assert_int_equal(WTERMSIG(status), sig);
		}
		assert_int_equal(count_tmp_files(), 0);
		if (file_exists(out)) {
			char *got = cli_slurp(out);
			assert_non_null(got);
			assert_string_equal(got, want);
			free(got);
			unlink(out);
		}
	}
	if (caught == 0) {
		fail_msg("never caught a run in the middle of writing its output in 5 attempts");
	}
}

static void signals__sigterm_mid_write_leaves_no_partial_file(void **state)
{
	(void)state;
	signal_while_writing(SIGTERM);
}

static void signals__sigint_mid_write_leaves_no_partial_file(void **state)
{
	(void)state;
	signal_while_writing(SIGINT);
}

/* A copy of the Qwen1.5-MoE scenario with every input in the test folder:
 * scenario, model, hardware and the observed trace. */
static void copy_qwen_scenario(void)
{
	assert_int_equal(mkdir(in_dir("plans"), 0700), 0);
	assert_int_equal(mkdir(in_dir("plans/models"), 0700), 0);
	assert_int_equal(mkdir(in_dir("plans/traces"), 0700), 0);
	assert_int_equal(mkdir(in_dir("hardware"), 0700), 0);
	copy_file(src_path("plans/qwen15moe-bookcorpus.yaml"), in_dir("plans/qwen.yaml"));
	copy_file(src_path("plans/models/qwen1.5-moe-a2.7b.yaml"),
		  in_dir("plans/models/qwen1.5-moe-a2.7b.yaml"));
	copy_file(src_path("plans/traces/qwen15moe_bookcorpus.csv"),
		  in_dir("plans/traces/qwen15moe_bookcorpus.csv"));
	copy_file(src_path("hardware/hgx-h100.yaml"), in_dir("hardware/hgx-h100.yaml"));
}

/* -o naming any input of the plan (the scenario, its model, its hardware,
 * its observed trace) is refused and the input stays as it was; also when
 * the path is spelled differently (through ".."). */
static void signals__plan_never_overwrites_an_input(void **state)
{
	(void)state;
	copy_qwen_scenario();
	const char *inputs[] = {
		"plans/qwen.yaml",
		"plans/models/qwen1.5-moe-a2.7b.yaml",
		"hardware/hgx-h100.yaml",
		"plans/traces/qwen15moe_bookcorpus.csv",
		"plans/models/../qwen.yaml",
	};
	const char *scen = in_dir("plans/qwen.yaml");
	char overwritten[1024] = "";
	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		const char *path = in_dir(inputs[i]);
		char *before = cli_slurp(path);
		assert_non_null(before);
		struct cli_result r = cli_run("plan", scen, "-o", path, NULL);
		char *after = cli_slurp(path);
		assert_non_null(after);
		if (r.status == 0 || strcmp(after, before) != 0) {
			/* Put the input back for the next case, remember the failure. */
			FILE *f = fopen(path, "wb");
			assert_non_null(f);
			fputs(before, f);
			assert_int_equal(fclose(f), 0);
			strncat(overwritten, " ", sizeof(overwritten) - strlen(overwritten) - 1);
			strncat(overwritten, inputs[i], sizeof(overwritten) - strlen(overwritten) - 1);
		}
		free(before);
		free(after);
		cli_result_free(&r);
	}
	if (overwritten[0]) {
		fail_msg("plan -o INPUT was not refused for:%s", overwritten);
	}
}

/* place, check and replan refuse -o naming one of their inputs, also when
 * spelled differently, and leave it as it was. */
static void expect_refused(const char *what, struct cli_result r, const char *path,
			   const char *before)
{
	char *after = cli_slurp(path);
	assert_non_null(after);
	if (r.status == 0 || strcmp(after, before) != 0) {
		fail_msg("%s: -o %s (an input) was not refused (exit %d)", what, path, r.status);
	}
	assert_int_equal(count_tmp_files(), 0);
	free(after);
	cli_result_free(&r);
}

static void signals__place_check_replan_never_overwrite_an_input(void **state)
{
	(void)state;
	const char *loads = in_dir("loads.csv");
	const char *plan = in_dir("placement.yaml");
	write_loads(loads, 4, 64, 10);
	struct cli_result r = cli_run("place", loads, "--gpus", "8", "--slots", "72", "-o", plan, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	char *loads_text = cli_slurp(loads);
	char *plan_text = cli_slurp(plan);
	assert_non_null(loads_text);
	assert_non_null(plan_text);
	char loads_alias[600];
	snprintf(loads_alias, sizeof(loads_alias), "%s/../%s/loads.csv", dir, strrchr(dir, '/') + 1);

	expect_refused("place", cli_run("place", loads, "--gpus", "8", "--slots", "72", "-o", loads, NULL),
		       loads, loads_text);
	expect_refused("place", cli_run("place", loads, "--gpus", "8", "--slots", "72", "-o",
					loads_alias, NULL), loads, loads_text);
	expect_refused("check", cli_run("check", plan, "-o", plan, NULL), plan, plan_text);
	expect_refused("check", cli_run("check", plan, "--loads", loads, "-o", loads, NULL), loads,
		       loads_text);
	expect_refused("replan", cli_run("replan", "--plan", plan, "--loads", loads, "-o", plan, NULL),
		       plan, plan_text);
	expect_refused("replan", cli_run("replan", "--plan", plan, "--loads", loads, "-o", loads_alias,
					 NULL), loads, loads_text);
	free(loads_text);
	free(plan_text);
}

/* The same placement, byte for byte, from run to run and with 1 or 2
 * threads, in YAML and in JSON (skewed loads, so that the solver works). */
static void signals__place_same_bytes_across_runs_and_threads(void **state)
{
	(void)state;
	const char *loads = in_dir("loads.csv");
	const char *out = in_dir("placement.out");
	write_loads(loads, 16, 256, 10);
	const char *fmt[] = {"yaml", "json"};
	for (int f = 0; f < 2; f++) {
		char *first = NULL;
		const char *threads[] = {"1", "2", "2", "1"};
		for (int i = 0; i < 4; i++) {
			struct cli_result r = cli_run("place", loads, "--gpus", "64", "--slots", "320",
						      "--threads", threads[i], "--format", fmt[f], "-o",
						      out, NULL);
			if (r.status != 0) {
				fail_msg("place --threads %s --format %s: exit %d: %s", threads[i], fmt[f],
					 r.status, r.err);
			}
			cli_result_free(&r);
			char *text = cli_slurp(out);
			assert_non_null(text);
			unlink(out);
			if (!first) {
				first = text;
				assert_true(strlen(first) > 10000);
				continue;
			}
			if (strcmp(text, first) != 0) {
				fail_msg("%s output with --threads %s differs from the first run", fmt[f],
					 threads[i]);
			}
			free(text);
		}
		free(first);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(signals__sigterm_mid_run_leaves_nothing, dir_setup,
						dir_teardown),
		cmocka_unit_test_setup_teardown(signals__sigterm_mid_write_leaves_no_partial_file,
						dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(signals__sigint_mid_write_leaves_no_partial_file,
						dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(signals__plan_never_overwrites_an_input, dir_setup,
						dir_teardown),
		cmocka_unit_test_setup_teardown(signals__place_check_replan_never_overwrite_an_input,
						dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(signals__place_same_bytes_across_runs_and_threads,
						dir_setup, dir_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
