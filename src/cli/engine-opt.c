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

bool cli_engine_option(const char *cmd, enum cli_engine_opt which, const char *arg, struct cli_engine *e)
{
	switch (which) {
	case CLI_ENGINE_OPT_RULE:
		return cli_engine_parse(cmd, arg, e);
	case CLI_ENGINE_OPT_ALGORITHM:
		return cli_engine_parse_algorithm(cmd, arg, e);
	case CLI_ENGINE_OPT_GPUS_PER_NODE:
		return cli_parse_u32(cmd, "gpus-per-node", arg, 1, MP_MAX_GPUS, &e->d.gpus_per_node);
	}
	return false;
}

/* A vLLM-shaped state dump's own keys (loader-loads.c, loader-replan.c). */
static bool vllm_keys(const char *text)
{
	return strstr(text, "\"ep_size\"") || strstr(text, "\"logical_replica_count\"");
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
	buf[n] = '\0';
	enum mp_dispatch_rule rule = MP_DISPATCH_EVEN;
	if (n >= 2 && buf[0] == 'P' && buf[1] == 'K') {
		rule = MP_DISPATCH_SGLANG; /* torch.save: SGLang's dumps and maps */
	} else if (strstr(buf, "\"physical_to_logical_map\"") && !strstr(buf, "placement:") &&
		   !strstr(buf, "\"placement\"")) {
		/* vLLM's keys follow its large map in a dump: the head, then the tail */
		rule = vllm_keys(buf) ? MP_DISPATCH_VLLM : MP_DISPATCH_SGLANG;
		if (rule == MP_DISPATCH_SGLANG && n == sizeof(buf) - 1 && st.st_size > (off_t)n &&
		    fseeko(f, st.st_size - (off_t)n, SEEK_SET) == 0) {
			buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
			rule = vllm_keys(buf) ? MP_DISPATCH_VLLM : MP_DISPATCH_SGLANG;
		}
	}
	fclose(f);
	return rule;
}
