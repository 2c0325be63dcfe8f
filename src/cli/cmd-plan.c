/* moeplan plan: placeholder until the plan pipeline lands (lead). */
#include "cli.h"
const struct cli_command_help cmd_plan_help = {.name = "plan", .synopsis = "moeplan plan [SCENARIO]", .description = "", .options = (const struct option[]){{0}}, .help = NULL, .examples = NULL};
int cmd_plan(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return EXIT_USAGE;
}
