/* Deployment search benchmark (issue 13 item 5): the whole search for
 * DeepSeek-V3 on 1,024 H800 GPUs (plans/deepseek-v3-day.yaml with its budget
 * set to 1,024): every width, attention option, overlap mode and batch of
 * both phases and the co-located alternative, placement in the loop, on
 * two solver threads. Run with
 *     meson test -C build --benchmark --verbose search
 * or build/tests/bench/bench-search [SCENARIO]. Prints the wall time of
 * each part, the configurations predicted and the placements solved.
 * Timings are printed, never asserted (BRIEF: speed is measured in
 * benchmarks). The final placement of the chosen widths (every MoE layer)
 * is timed separately: it is the same solver run `moeplan plan` makes. */
#include "moeplan/deploy.h"
#include "moeplan/loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int run(const struct mp_scenario *sc, const char *label, bool all, bool placement)
{
	struct mp_deploy_options opts;
	mp_deploy_options_init(&opts, sc);
	opts.gpus = 1024;
	opts.request_rate = 0;
	opts.all_batches = all;
	opts.placement = placement;
	opts.place.threads = 2;
	struct mp_deploy d;
	mp_deploy_init(&d);
	struct mp_diags diags;
	mp_diags_init(&diags);
	double t0 = now_s(), c0 = cpu_s();
	int rc = mp_deploy_search(sc, &opts, &d, &diags);
	double t = now_s() - t0, c = cpu_s() - c0;
	if (rc) {
		fprintf(stderr, "%s: search failed: %s\n", label, mp_strerror(rc));
	} else {
		printf("%-42s wall %6.2f s, CPU %6.2f s (search %.2f s, chosen placements %.2f s)  configurations %7zu + %7zu + %7zu  placements in the loop %zu + %zu  "
		       "decode EP%u prefill EP%u\n",
		       label, t, c, d.search_seconds, d.placement_seconds, d.prefill.evaluated, d.decode.evaluated, d.colocated.evaluated,
		       d.prefill.placements, d.decode.placements,
		       d.decode.has_choice ? d.decode.points[d.decode.chosen].cfg.ep : 0,
		       d.prefill.has_choice ? d.prefill.points[d.prefill.chosen].cfg.ep : 0);
	}
	mp_diags_finish(&diags);
	mp_deploy_finish(&d);
	return rc;
}

int main(int argc, char **argv)
{
	const char *root = getenv("MOEPLAN_SOURCE_ROOT");
	char path[4096];
	if (argc > 1) {
		snprintf(path, sizeof(path), "%s", argv[1]);
	} else {
		snprintf(path, sizeof(path), "%s/plans/deepseek-v3-day.yaml", root ? root : ".");
	}
	struct mp_scenario sc;
	mp_scenario_init(&sc);
	struct mp_diags diags;
	mp_diags_init(&diags);
	int rc = mp_load_scenario(path, &sc, &diags);
	for (size_t i = 0; i < diags.count; i++) {
		fprintf(stderr, "%s:%d:%d: %s\n", diags.items[i].file ? diags.items[i].file : path,
			diags.items[i].line, diags.items[i].column, diags.items[i].message);
	}
	if (rc == 0) {
		printf("DeepSeek-V3 deployment search on 1,024 GPUs (%s), 2 solver threads\n", path);
		rc = run(&sc, "geometric batches, no placement", false, false);
		rc = rc ? rc : run(&sc, "all batches, no placement", true, false);
		rc = rc ? rc : run(&sc, "geometric batches, placement in the loop", false, true);
		rc = rc ? rc : run(&sc, "all batches, placement in the loop", true, true);
	}
	mp_diags_finish(&diags);
	mp_scenario_finish(&sc);
	return rc ? 1 : 0;
}
