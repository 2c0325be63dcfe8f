/* The option tables: getopt_long's arrays, the help text, the bash
 * completion and the listing the man page is checked against (opt.h). */
#include "opt.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"

static bool has_letter(const struct cli_opt *o)
{
	return o->id > 0 && o->id < 128;
}

void cli_print_help(const struct cli_command_help *help, FILE *out)
{
	fprintf(out, "Usage: %s\n\n%s\n", help->synopsis, help->description);
	if (help->options && help->options[0].name) {
		fprintf(out, "\nOptions:\n");
		for (const struct cli_opt *o = help->options; o->name; o++) {
			char left[64];
			const char *arg = o->value;
			if (has_letter(o)) {
				snprintf(left, sizeof(left), "-%c, --%s%s%s", o->id, o->name,
					 arg ? " " : "", arg ? arg : "");
			} else {
				snprintf(left, sizeof(left), "    --%s%s%s", o->name,
					 arg ? " " : "", arg ? arg : "");
			}
			fprintf(out, "  %-30s %s\n", left, o->help);
		}
		/* Handled by main for every command. */
		fprintf(out, "  %-30s %s\n  %-30s %s\n", "-q, --quiet",
			"no progress line on stderr (default: one when stderr is a terminal)",
			"    --version", "print the version and exit");
	}
	if (help->examples) {
		fprintf(out, "\nExamples:\n%s", help->examples);
	}
	fprintf(out, "\nExit status: 0 success, 1 bad input or does not fit, 2 usage error,\n"
		     "3 solver limit reached with no feasible plan.\n");
}

void cli_parser_init(struct cli_parser *p, const struct cli_command_help *cmd)
{
	memset(p, 0, sizeof(*p));
	p->cmd = cmd;
	size_t n = 0, s = 0;
	/* A leading ':' makes getopt return ':' for a missing value; with
	 * opterr 0 it prints nothing, and report_getopt_error says it in
	 * our words ("moeplan CMD: error: ..."). */
	p->shorts[s++] = ':';
	for (const struct cli_opt *o = cmd->options; o->name; o++) {
		if (n == CLI_MAX_OPTIONS || o->id <= 0 || o->id >= CLI_SEEN_SIZE) {
			/* a table past the limits is a programming error */
			abort();
		}
		p->longs[n++] = (struct option){o->name, o->value ? required_argument : no_argument,
						NULL, o->id};
		if (has_letter(o)) {
			p->shorts[s++] = (char)o->id;
			if (o->value) {
				p->shorts[s++] = ':';
			}
		}
	}
	opterr = 0;
	optind = 1;
}

/* The table entry of id, or NULL. */
static const struct cli_opt *find(const struct cli_command_help *cmd, int id)
{
	for (const struct cli_opt *o = cmd->options; o->name; o++) {
		if (o->id == id) {
			return o;
		}
	}
	return NULL;
}

/* The long names of p's table that start with the n bytes of word, as
 * "--a, --b" in buf; returns how many. */
static size_t prefix_matches(const struct cli_parser *p, const char *word, size_t n, char *buf,
			     size_t size)
{
	size_t count = 0, used = 0;
	buf[0] = '\0';
	for (const struct option *l = p->longs; l->name; l++) {
		if (strncmp(l->name, word, n) == 0) {
			int w = snprintf(buf + used, size - used, "%s--%s", count ? ", " : "", l->name);
			used = w < 0 || (size_t)w >= size - used ? size - 1 : used + (size_t)w;
			count++;
		}
	}
	return count;
}

/* The usage error for what getopt_long refused (c is '?' or ':'; optopt
 * and argv[optind - 1] say what; glibc's getopt, posix/getopt.c
 * process_long_option and _getopt_internal_r). */
static void report_getopt_error(const struct cli_parser *p, int c, int argc, char **argv)
{
	const char *cmd = p->cmd->name;
	const char *word = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	bool is_long = strncmp(word, "--", 2) == 0;
	const struct cli_opt *o = optopt ? find(p->cmd, optopt) : NULL;
	if (c == ':' && o) {
		if (is_long || !has_letter(o)) {
			cli_usage(cmd, "option '--%s' needs a value (%s)", o->name, o->value);
		} else {
			cli_usage(cmd, "option '-%c' needs a value (%s)", o->id, o->value);
		}
	} else if (o && is_long) {
		/* a flag given a value: --flag=X */
		cli_usage(cmd, "option '--%s' takes no value", o->name);
	} else if (optopt) {
		cli_usage(cmd, "unrecognized option '-%c'", optopt);
	} else {
		size_t n = is_long ? strcspn(word + 2, "=") : strlen(word);
		char names[512];
		if (is_long && prefix_matches(p, word + 2, n, names, sizeof(names)) > 1) {
			cli_usage(cmd, "option '%.*s' is ambiguous: %s", (int)(n + 2), word, names);
		} else {
			cli_usage(cmd, "unrecognized option '%.*s'", (int)(is_long ? n + 2 : n), word);
		}
	}
}

int cli_parser_next(struct cli_parser *p, int argc, char **argv)
{
	int c = getopt_long(argc, argv, p->shorts, p->longs, NULL);
	if (c == -1) {
		return CLI_PARSE_END;
	}
	const struct cli_opt *o = c == '?' || c == ':' ? NULL : find(p->cmd, c);
	if (!o) {
		report_getopt_error(p, c, argc, argv);
		return CLI_PARSE_ERROR;
	}
	if (c == 'h' && !o->value) {
		cli_print_help(p->cmd, stdout);
		return CLI_PARSE_HELP;
	}
	if (o->value) {
		const size_t n = strlen(o->value);
		if (p->seen[c] && !(n > 3 && strcmp(o->value + n - 3, "...") == 0)) {
			cli_usage(p->cmd->name, "--%s given twice: give it once", o->name);
			return CLI_PARSE_ERROR;
		}
		p->seen[c] = 1;
	}
	return c;
}

int cli_parser_status(int code)
{
	return code == CLI_PARSE_HELP ? EXIT_OK : EXIT_USAGE;
}

int cli_parser_end(const struct cli_parser *p, int code, int argc, char **argv)
{
	if (code != CLI_PARSE_END) {
		return cli_parser_status(code);
	}
	if (optind < argc) {
		return cli_usage(p->cmd->name, "unexpected argument '%s'", argv[optind]);
	}
	return -1;
}

void cli_write_options(const struct cli_command_help *const *cmds, size_t n, FILE *out)
{
	for (size_t i = 0; i < n; i++) {
		for (const struct cli_opt *o = cmds[i]->options; o->name; o++) {
			fprintf(out, "%s\t", cmds[i]->name);
			if (has_letter(o)) {
				fprintf(out, "%c", o->id);
			} else {
				fputc('-', out);
			}
			fprintf(out, "\t%s\t%s\t%s\t", o->name, o->value ? o->value : "-",
				o->complete ? o->complete : "-");
			for (const char *t = o->help; *t; t++) {
				if (*t == '\n') {
					fputs("\\n", out);
				} else {
					fputc(*t, out);
				}
			}
			fputc('\n', out);
		}
	}
}

/* The bash function body: how a word is completed from the tables above
 * it (_moeplan_options CMD, _moeplan_value CMD OPTION). */
static const char completion_body[] =
	"_moeplan()\n"
	"{\n"
	"    local cur prev words cword\n"
	"    if declare -F _init_completion >/dev/null; then\n"
	"        _init_completion || return\n"
	"    else\n"
	"        cur=${COMP_WORDS[COMP_CWORD]}\n"
	"        prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
	"        words=(\"${COMP_WORDS[@]}\")\n"
	"        cword=$COMP_CWORD\n"
	"    fi\n"
	"\n"
	"    if ((cword == 1)); then\n"
	"        COMPREPLY=($(compgen -W \"$_moeplan_commands help --help --version\" -- \"$cur\"))\n"
	"        return\n"
	"    fi\n"
	"    local cmd=${words[1]}\n"
	"    if [[ $cmd == help ]]; then\n"
	"        ((cword == 2)) && COMPREPLY=($(compgen -W \"$_moeplan_commands $_moeplan_topics\" -- \"$cur\"))\n"
	"        return\n"
	"    fi\n"
	"\n"
	"    if [[ $prev == -* ]]; then\n"
	"        local value\n"
	"        value=$(_moeplan_value \"$cmd\" \"$prev\")\n"
	"        case $value in\n"
	"            '') ;;  # a flag, or not an option of this command\n"
	"            -) return ;;  # a number or a quantity: nothing to offer\n"
	"            @input)\n"
	"                compopt -o filenames 2>/dev/null\n"
	"                COMPREPLY=($(compgen -f -X '!*.yaml' -- \"$cur\") $(compgen -f -X '!*.json' -- \"$cur\")\n"
	"                    $(compgen -d -- \"$cur\"))\n"
	"                return\n"
	"                ;;\n"
	"            @file)\n"
	"                compopt -o filenames 2>/dev/null\n"
	"                COMPREPLY=($(compgen -f -- \"$cur\"))\n"
	"                return\n"
	"                ;;\n"
	"            *)\n"
	"                COMPREPLY=($(compgen -W \"$value\" -- \"$cur\"))\n"
	"                return\n"
	"                ;;\n"
	"        esac\n"
	"    fi\n"
	"\n"
	"    if [[ $cur == -* ]]; then\n"
	"        COMPREPLY=($(compgen -W \"$(_moeplan_options \"$cmd\")\" -- \"$cur\"))\n"
	"        return\n"
	"    fi\n"
	"    # Positional arguments are files (a scenario, loads, a plan).\n"
	"    compopt -o filenames 2>/dev/null\n"
	"    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
	"}\n"
	"complete -F _moeplan moeplan\n";

/* What _moeplan_value prints for o: "" for a flag, "-" for a value with
 * nothing to offer, else the completion. */
static const char *value_kind(const struct cli_opt *o)
{
	return !o->value ? "" : o->complete ? o->complete : "-";
}

void cli_write_completion(const struct cli_command_help *const *cmds, size_t n, FILE *out)
{
	fprintf(out, "# bash completion for moeplan                              -*- shell-script -*-\n"
		     "#\n"
		     "# Generated by 'moeplan --dump-completion' from the option tables in\n"
		     "# src/cli/cmd-*.c (src/cli/opt.h); do not edit.\n\n"
		     "_moeplan_commands=\"");
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s%s", i ? " " : "", cmds[i]->name);
	}
	/* The topics of `moeplan help` beside the commands (help.c). */
	fprintf(out, "\"\n_moeplan_topics=\"formats models placement library\"\n\n"
		     "# _moeplan_options CMD: the long options of CMD.\n"
		     "_moeplan_options()\n{\n    case $1 in\n");
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "        %s) echo \"", cmds[i]->name);
		for (const struct cli_opt *o = cmds[i]->options; o->name; o++) {
			fprintf(out, "--%s ", o->name);
		}
		fprintf(out, "--quiet --version\" ;;\n");
	}
	fprintf(out, "    esac\n}\n\n"
		     "# _moeplan_value CMD OPTION: empty for a flag, '-' for a value with nothing\n"
		     "# to offer, @file, @input (*.yaml, *.json and folders) or the words.\n"
		     "_moeplan_value()\n{\n    case \"$1 $2\" in\n");
	for (size_t i = 0; i < n; i++) {
		for (const struct cli_opt *o = cmds[i]->options; o->name; o++) {
			if (!o->value) {
				continue;
			}
			fprintf(out, "        \"%s --%s\"", cmds[i]->name, o->name);
			if (has_letter(o)) {
				fprintf(out, " | \"%s -%c\"", cmds[i]->name, o->id);
			}
			fprintf(out, ") echo \"%s\" ;;\n", value_kind(o));
		}
	}
	fprintf(out, "    esac\n}\n\n%s", completion_body);
}
