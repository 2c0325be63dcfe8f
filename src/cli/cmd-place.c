/* moeplace place: placeholder until the place pipeline lands (lead). */
#include "cli.h"
const struct cli_command_help cmd_place_help = {.name = "place", .synopsis = "moeplace place [LOADS]", .description = "", .options = (const struct option[]){{0}}, .help = NULL, .examples = NULL};
int cmd_place(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return EXIT_USAGE;
}
