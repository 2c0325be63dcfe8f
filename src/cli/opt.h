/* One declarative option table per command (libgit2's src/cli/opt.h is the
 * model; the parsing stays getopt_long's). From the table come:
 *   - getopt_long's long-option array and short-option string, built at
 *     run time (cli_parser_init);
 *   - the help text, `moeplan CMD --help` (cli_print_help);
 *   - the bash completion, generated at build time by the hidden
 *     `moeplan --dump-completion` (cli_write_completion);
 *   - the option headers of the man page's OPTIONS section:
 *     `moeplan --dump-options` lists the tables and tests/cli-docs.py
 *     fails when src/cli/moeplan.1 drifts from them (--update rewrites them).
 */
#ifndef MOEPLAN_CLI_OPT_H
#define MOEPLAN_CLI_OPT_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/** Ids of options that have no short letter start here (a short letter is
 * its own id, below 128). */
#define CLI_OPT_LONG 256

/** What the bash completion offers for an option's value (cli_opt.complete):
 * NULL nothing (a number or a quantity), one of these two, or the words
 * themselves ("yaml json"). */
#define CLI_COMPLETE_FILE "@file"     /**< any file */
#define CLI_COMPLETE_INPUT "@input"   /**< *.yaml and *.json files and folders */

/** One option of one command. */
struct cli_opt {
	const char *name;      /**< long name, without "--"; NULL ends the table */
	int id;                /**< what the parser returns: the short letter (-x) when
				    below 128, else CLI_OPT_LONG + n (long name only) */
	const char *value;     /**< the value's name in help ("FILE"); NULL: a flag. An option
				    is given once, unless its value name ends in "..." ("FILE...") */
	const char *help;      /**< the help line, including its default */
	const char *complete;  /**< bash completion of the value, see CLI_COMPLETE_FILE */
};

/** One subcommand: its table and the help around it. */
struct cli_command_help {
	const char *name;
	const char *synopsis;     /**< e.g. "moeplan place LOADS --gpus G --slots N [options]" */
	const char *description;  /**< a paragraph */
	const struct cli_opt *options;  /**< terminated by an entry whose name is NULL */
	const char *examples;     /**< two real examples, one per line */
};

/** Print the full help of a command to out. */
void cli_print_help(const struct cli_command_help *help, FILE *out);

/** The most options a table may hold. */
#define CLI_MAX_OPTIONS 48
/** Bytes of the "given already" record, indexed by option id. */
#define CLI_SEEN_SIZE 512

/** getopt_long over one command's table. */
struct cli_parser {
	const struct cli_command_help *cmd;
	struct option longs[CLI_MAX_OPTIONS + 1];
	char shorts[2 * CLI_MAX_OPTIONS + 2];  /* ':' first, then "g:s:..." */
	unsigned char seen[CLI_SEEN_SIZE];
};

/** What cli_parser_next returns besides an option's id. */
enum {
	CLI_PARSE_END = -1,    /**< no more options; optind is the first operand */
	CLI_PARSE_HELP = -2,   /**< -h/--help: the help was printed; exit 0 */
	CLI_PARSE_ERROR = -3,  /**< a usage error was printed; exit 2 */
};

/** Build getopt_long's arrays from cmd's table and reset getopt (optind 1). */
void cli_parser_init(struct cli_parser *p, const struct cli_command_help *cmd);

/** The next option's id (its value in optarg), or a CLI_PARSE_* code.
 * Handles what every command does alike: --help (printed to stdout),
 * getopt's errors (an unrecognized or ambiguous option, a missing value,
 * a value given to a flag: getopt prints nothing, this prints "moeplan
 * CMD: error: ..." and "Try 'moeplan CMD --help'."), and an option with a
 * value given twice (a usage error naming it, never a silent override). */
int cli_parser_next(struct cli_parser *p, int argc, char **argv);

/** The exit status for a CLI_PARSE_* code other than CLI_PARSE_END. */
int cli_parser_status(int code);

/** After the option loop of a command that takes no operands: the exit
 * status for a CLI_PARSE_* code other than CLI_PARSE_END, a usage error
 * ("unexpected argument 'X'") for an operand, else -1 (go on). */
int cli_parser_end(const struct cli_parser *p, int code, int argc, char **argv);

/** Write the bash completion script for the n commands to out. */
void cli_write_completion(const struct cli_command_help *const *cmds, size_t n, FILE *out);

/** List every option of the n commands, one line each, tab-separated:
 * command, short letter or "-", long name, value name or "-", completion
 * or "-", help (newlines as "\n"). For tests/cli-docs.py. */
void cli_write_options(const struct cli_command_help *const *cmds, size_t n, FILE *out);

#endif
