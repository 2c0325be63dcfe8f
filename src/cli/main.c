/* moeplan: the command-line front end. Dispatches to one subcommand. */
#include "cli.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MOEPLAN_VERSION
#define MOEPLAN_VERSION "unknown"
#endif

struct command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
	const struct cli_command_help *help;
};

static const struct command commands[] = {
	{"plan", "plan EP widths, slots and placement for a scenario", cmd_plan, &cmd_plan_help},
	{"place", "place experts and replicas for given loads", cmd_place, &cmd_place_help},
	{"check", "validate a plan or engine map; its balance under given loads", cmd_check, &cmd_check_help},
	{"simulate", "Monte Carlo routing: busiest GPU over mean for a plan or EP width", cmd_simulate, &cmd_simulate_help},
	{"roofline", "the routed experts' roofline: tokens per expert, intensity, ridge, time", cmd_roofline, &cmd_roofline_help},
	{"fit", "HBM per GPU: weights, KV cache, buffers; does a batch fit", cmd_fit, &cmd_fit_help},
	{"step", "the whole serving step: every term, TPOT, TTFT, tokens/s per GPU and per user", cmd_step, &cmd_step_help},
	{"comm", "dispatch/combine bytes per MoE layer on NVLink and network", cmd_comm, &cmd_comm_help},
	{"search", "deployment search: Pareto front, prefill/decode pools, placement", cmd_search, &cmd_search_help},
	{"replan", "re-plan a running placement for observed loads with few expert moves", cmd_replan, &cmd_replan_help},
};

static const size_t n_commands = sizeof(commands) / sizeof(commands[0]);

static void print_main_help(FILE *out)
{
	fprintf(out,
		"Usage: moeplan COMMAND [options]\n"
		"       moeplan help [COMMAND | TOPIC]\n"
		"       moeplan --version\n\n"
		"Plans expert parallelism (EP) for serving mixture-of-experts models: how wide\n"
		"EP should be for prefill and decode, whether a batch fits in HBM, and where\n"
		"every expert and redundant replica goes so the busiest GPU carries as little\n"
		"as possible (GLPK integer program, with its lower bound and gap).\n\n"
		"Commands:\n");
	for (size_t i = 0; i < n_commands; i++) {
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	}
	fprintf(out, "\nRun 'moeplan COMMAND --help' for its options, 'moeplan help COMMAND' for its\n"
		     "manual page; 'moeplan help' for moeplan(1), 'moeplan help TOPIC' for formats,\n"
		     "models, placement or library.\n"
		     "Exit status: 0 success, 1 bad input or does not fit, 2 usage error,\n"
		     "3 solver limit reached with no feasible plan.\n");
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < n_commands; i++) {
		if (strcmp(commands[i].name, name) == 0) {
			return &commands[i];
		}
	}
	return NULL;
}

static void on_signal(int sig)
{
	/* Never leave a partial output file behind. */
	mp_output_abort_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);

	if (argc < 2) {
		print_main_help(stderr);
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
		print_main_help(stdout);
		return EXIT_OK;
	}
	if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
		printf("moeplan %s\n", MOEPLAN_VERSION);
		return EXIT_OK;
	}
	/* Hidden: what the build and tests/cli-docs.py read from the tables. */
	if (strcmp(name, "--dump-completion") == 0 || strcmp(name, "--dump-options") == 0) {
		const struct cli_command_help *helps[sizeof(commands) / sizeof(commands[0])];
		for (size_t i = 0; i < n_commands; i++) {
			helps[i] = commands[i].help;
		}
		if (strcmp(name, "--dump-completion") == 0) {
			cli_write_completion(helps, n_commands, stdout);
		} else {
			cli_write_options(helps, n_commands, stdout);
		}
		return fflush(stdout) == 0 ? EXIT_OK : EXIT_INPUT;
	}
	if (strcmp(name, "help") == 0) {
		/* One name at most; --quiet and -q, which every command takes,
		 * change nothing here. */
		const char *page = NULL;
		for (int i = 2; i < argc; i++) {
			if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
				continue;
			}
			if (page) {
				fprintf(stderr, "moeplan help: error: one name at most, got '%s' after '%s'\n"
					"Try 'moeplan --help'.\n", argv[i], page);
				return EXIT_USAGE;
			}
			page = argv[i];
		}
		const char *names[sizeof(commands) / sizeof(commands[0])];
		for (size_t i = 0; i < n_commands; i++) {
			names[i] = commands[i].name;
		}
		return cli_help(page, names, n_commands);
	}
	const struct command *cmd = find_command(name);
	if (!cmd) {
		fprintf(stderr, "moeplan: error: unknown command '%s'\nTry 'moeplan --help'.\n", name);
		return EXIT_USAGE;
	}
	/* Shared flags every command accepts, handled before getopt sees
	 * them so each command's table stays small. */
	int out_argc = 1;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
			cli_quiet = true;
			continue;
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("moeplan %s\n", MOEPLAN_VERSION);
			return EXIT_OK;
		}
		if (strcmp(argv[i], "--") == 0) {
			for (; i < argc; i++) {
				argv[out_argc++] = argv[i];
			}
			break;
		}
		argv[out_argc++] = argv[i];
	}
	argv[out_argc] = NULL;
	/* argv[0] is now the command name; messages name it (cli_cmd). */
	argv[0] = (char *)(uintptr_t)cmd->name;
	cli_cmd = cmd->name;
	return cmd->run(out_argc, argv);
}
