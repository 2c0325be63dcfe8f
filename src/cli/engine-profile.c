/* --engine NAME|FILE on plan, step and search (issue 23 item 4): an engine
 * profile (moeplan/engine.h) by name or from a file. */
#include "cli.h"

#include <string.h>

#include "moeplan/loader.h"
#include "moeplan/placement.h"
#include "moeplan/scenario.h"

int cli_engine_profile(const char *cmd, const char *arg, struct mp_engine_profile *out)
{
	mp_engine_profile_finish(out);
	if (strcmp(arg, "even") == 0) {
		return EXIT_OK; /* an ideal engine: nothing restricted */
	}
	int rc = mp_engine_builtin(arg, out);
	if (rc == 0) {
		return EXIT_OK;
	}
	if (rc == MP_ENOMEM) {
		cli_error("%s", mp_strerror(rc));
		return EXIT_INPUT;
	}
	if (!strchr(arg, '/') && !strstr(arg, ".yaml") && !strstr(arg, ".yml")) {
		return cli_usage(cmd, "--engine '%s': expected even, sglang, vllm or an engine profile "
				 "file (plans/engines/*.yaml)", arg);
	}
	struct mp_diags diags;
	mp_diags_init(&diags);
	rc = mp_load_engine_profile(arg, out, &diags);
	cli_print_diags(&diags);
	if (rc != 0 && diags.count == 0) {
		cli_error("%s: %s", arg, mp_strerror(rc));
	}
	mp_diags_finish(&diags);
	return rc == 0 ? EXIT_OK : EXIT_INPUT;
}

int cli_scenario_engine(const char *cmd, struct mp_scenario *sc, struct mp_engine_profile *given,
			bool have_given, const struct cli_engine *alg, struct mp_place_options *place)
{
	char why[256];
	struct mp_field_pos at = {0};
	if (have_given && mp_scenario_set_engine(sc, given, why, sizeof(why), &at) != 0) {
		cli_error("--engine %s: %s", given->name ? given->name : "?", why);
		return EXIT_INPUT;
	}
	if (!have_given && sc->engine.name) {
		/* the scenario's own engine: its phases' overlaps are checked here */
		struct mp_engine_profile own = sc->engine;
		mp_engine_profile_init(&sc->engine);
		if (mp_scenario_set_engine(sc, &own, why, sizeof(why), &at) != 0) {
			fprintf(stderr, "%s:%d:%d: error: %s\n", sc->path ? sc->path : "scenario", at.line,
				at.column, why);
			mp_engine_profile_finish(&own);
			return EXIT_INPUT;
		}
	}
	struct mp_engine_profile *e = &sc->engine;
	place->dispatch.rule = e->name ? e->dispatch : MP_DISPATCH_EVEN;
	place->dispatch.algorithm = alg->have_algorithm ? alg->d.algorithm : e->ep_dispatch_algorithm;
	if (alg->have_algorithm && place->dispatch.rule != MP_DISPATCH_SGLANG) {
		return cli_usage(cmd, "--ep-dispatch-algorithm is SGLang's: it needs --engine sglang "
				 "(or a profile with dispatch: sglang)");
	}
	if (alg->have_algorithm) {
		e->ep_dispatch_algorithm = alg->d.algorithm; /* the engine record says what was planned */
	}
	return EXIT_OK;
}
