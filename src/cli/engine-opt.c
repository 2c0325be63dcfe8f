/* --engine on place, check, replan and simulate (issue 24): the dispatch
 * rule by name, the engine a map file belongs to, and a whole map's GPU
 * loads under a rule (moeplan/dispatch.h). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "moeplan/map.h"
#include "moeplan/traffic.h"

bool cli_engine_parse(const char *cmd, const char *name, struct cli_engine *e)
{
	if (mp_dispatch_parse_rule(name, &e->d.rule) != 0) {
		cli_usage(cmd, "--engine '%s': expected 'even', 'sglang' or 'vllm'", name);
		return false;
	}
	e->given = true;
	return true;
}

bool cli_engine_parse_algorithm(const char *cmd, const char *name, struct cli_engine *e)
{
	if (mp_dispatch_parse_algorithm(name, &e->d.algorithm) != 0) {
		cli_usage(cmd, "--ep-dispatch-algorithm '%s': expected 'static', 'dynamic' or 'fake' "
			  "(SGLang's values, server_args.py)", name);
		return false;
	}
	e->have_algorithm = true;
	return true;
}

enum mp_dispatch_rule cli_engine_of_file(const char *path)
{
	/* only a regular file is sniffed: a FIFO's bytes are read once, by
	 * the loader, and a second open of it would wait for a writer */
	struct stat st;
	if (!path || strcmp(path, "-") == 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		return MP_DISPATCH_EVEN;
	}
	FILE *f = fopen(path, "rb");
	if (!f) {
		return MP_DISPATCH_EVEN;
	}
	static char buf[65537];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (n >= 2 && buf[0] == 'P' && buf[1] == 'K') {
		return MP_DISPATCH_SGLANG; /* torch.save: SGLang's dumps and maps */
	}
	if (strstr(buf, "\"physical_to_logical_map\"") && !strstr(buf, "placement:") &&
	    !strstr(buf, "\"placement\"")) {
		return strstr(buf, "\"ep_size\"") ? MP_DISPATCH_VLLM : MP_DISPATCH_SGLANG;
	}
	return MP_DISPATCH_EVEN;
}
