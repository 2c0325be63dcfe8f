/* --export sglang for plan, place and replan: the engine map, one row per
 * hidden layer, and the launch flags that keep it (moeplan/export.h). */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/export.h"

bool cli_parse_export(const char *cmd, const char *text)
{
	enum mp_export_format f;
	if (mp_export_parse(text, &f) == 0) {
		return true;
	}
	if (strcasecmp(text, "vllm") == 0) {
		cli_usage(cmd, "--export vllm was removed: vLLM loads no expert placement from a file "
			  "(vllm/distributed/eplb/ starts from the identity layout and rebalances by "
			  "itself; moeplan-formats(5), \"Engines\"); expected 'sglang'");
	} else {
		cli_usage(cmd, "--export '%s': expected 'sglang'", text);
	}
	return false;
}

bool cli_export_name_ok(const char *cmd, const char *path)
{
	if (!path || strcmp(path, "-") == 0 || mp_export_name_ok(path)) {
		return true;
	}
	cli_usage(cmd, "'%s': the SGLang map's name must end in .json: SGLang's "
		  "--init-expert-location reads a name ending in .json as a JSON file, one ending "
		  "in .pt with torch.load, and any other text as inline JSON "
		  "(python/sglang/srt/eplb/expert_location.py, compute_initial_expert_location_metadata)",
		  path);
	return false;
}

void cli_layers_finish(struct cli_layers *cl)
{
	free(cl->moe);
	free(cl->rows);
	*cl = (struct cli_layers){0};
}

int cli_layers_from_model(struct cli_layers *cl, const struct mp_model *model,
			  const uint32_t *row_layer, uint32_t n_rows)
{
	cli_layers_finish(cl);
	const uint32_t n = model->moe_layers;
	if (!row_layer && n_rows != n) {
		return MP_EINVAL;
	}
	cl->moe = malloc((size_t)(n ? n : 1) * sizeof(*cl->moe));
	cl->rows = malloc((size_t)(n_rows ? n_rows : 1) * sizeof(*cl->rows));
	if (!cl->moe || !cl->rows) {
		cli_layers_finish(cl);
		return MP_ENOMEM;
	}
	for (uint32_t k = 0; k < n; k++) {
		cl->moe[k] = mp_model_moe_layer_id(model, k);
	}
	for (uint32_t r = 0; r < n_rows; r++) {
		cl->rows[r] = row_layer ? row_layer[r] : cl->moe[r];
	}
	cl->layers = (struct mp_export_layers){
		.hidden_layers = mp_model_hidden_layers(model),
		.moe_ids = cl->moe,
		.n_moe = n,
		.row_layer = cl->rows,
	};
	cl->known = true;
	return 0;
}

int cli_layers_every_row(struct cli_layers *cl, uint32_t n_rows)
{
	cli_layers_finish(cl);
	cl->moe = malloc((size_t)(n_rows ? n_rows : 1) * sizeof(*cl->moe));
	cl->rows = malloc((size_t)(n_rows ? n_rows : 1) * sizeof(*cl->rows));
	if (!cl->moe || !cl->rows) {
		cli_layers_finish(cl);
		return MP_ENOMEM;
	}
	for (uint32_t r = 0; r < n_rows; r++) {
		cl->moe[r] = cl->rows[r] = r;
	}
	cl->layers = (struct mp_export_layers){
		.hidden_layers = n_rows, .moe_ids = cl->moe, .n_moe = n_rows, .row_layer = cl->rows,
	};
	cl->known = true;
	return 0;
}

/* What the command knows of the launch (cli_export_set_launch). */
static struct mp_export_launch launch_opts;
static bool launch_set;

void cli_export_set_launch(const struct mp_export_launch *l)
{
	launch_opts = *l;
	launch_set = true;
}

/* The --ep-dispatch-algorithm the command placed for (static unless set). */
static const char *launch_algorithm(void)
{
	return launch_set && launch_opts.ep_dispatch_algorithm ? launch_opts.ep_dispatch_algorithm : "static";
}

/* The whole launch line (issue 24): every flag the plan assumes. */
static void print_launch(const struct mp_placement *placement, const char *file)
{
	struct mp_export_launch l;
	mp_export_launch_init(&l, placement);
	if (launch_set) {
		l.model_path = launch_opts.model_path;
		l.gpus_per_node = launch_opts.gpus_per_node;
		l.ep_dispatch_algorithm = launch_opts.ep_dispatch_algorithm;
		l.dp_attention = launch_opts.dp_attention;
		l.deepep_mode = launch_opts.deepep_mode;
		l.mtp_steps = launch_opts.mtp_steps;
		l.mem_fraction_static = launch_opts.mem_fraction_static;
	}
	l.file = file;
	char line[1024];
	mp_export_launch_line(&l, line, sizeof(line));
	fprintf(stderr, "sglang launch: %s\n", line);
	const char *alg = launch_algorithm();
	fprintf(stderr, "sglang launch: the plan assumes %s, %s, --ep-dispatch-algorithm %s (%s)%s\n",
		l.dp_attention ? "DP attention (every rank originates its own tokens)" : "no DP attention",
		l.deepep_mode ? "DeepEP all-to-all" : "no DeepEP", alg,
		strcmp(alg, "static") == 0 ? "SGLang's default with --init-expert-location"
					   : "set by the plan; SGLang's default with --init-expert-location "
					     "is static",
		l.gpus_per_node && l.gpus / l.gpus_per_node > 1 ? "; run it on every node with its --node-rank" : "");
}

/* mp_export_flags' line with the dispatch algorithm the plan assumes
 * (mp_export_flags writes SGLang's default, static, last). */
static void flags_line(const struct mp_placement *placement, enum mp_export_format f, const char *where,
		       char *flags, size_t size)
{
	mp_export_flags(placement, f, where, flags, size);
	static const char tail[] = "static";
	size_t n = strlen(flags);
	if (n >= sizeof(tail) - 1 && strcmp(flags + n - (sizeof(tail) - 1), tail) == 0) {
		flags[n - (sizeof(tail) - 1)] = '\0';
		snprintf(flags + strlen(flags), size - strlen(flags), "%s", launch_algorithm());
	}
}

int cli_export_map(const struct mp_placement *placement, const struct cli_layers *cl,
		   const char *format, const char *path)
{
	enum mp_export_format f = MP_EXPORT_SGLANG;
	if (mp_export_parse(format, &f) != 0) {
		return EXIT_USAGE;
	}
	const char *where = path && strcmp(path, "-") != 0 ? path : NULL;
	if (!cl || !cl->known) {
		cli_error("cannot export the SGLang map: it needs one row per hidden layer, and the %u "
			  "placed rows do not say which model layers they are: give --model M (its hidden "
			  "and MoE layers) with loads whose rows name their layers (a '# layers:' line or a "
			  "layer column in the CSV, or SGLang's own dump; moeplan-formats(5), \"Layer "
			  "identity\")", placement->n_layers);
		return EXIT_INPUT;
	}
	uint32_t *map = NULL;
	uint32_t filled = 0;
	int rc = mp_export_map(placement, &cl->layers, &map, &filled);
	free(map);
	if (rc == MP_EINVAL) {
		cli_error("cannot export the SGLang map: the placement's %u rows do not fit the model's "
			  "layers (%u hidden, %u MoE), or an expert id is out of range", placement->n_layers,
			  cl->layers.hidden_layers, cl->layers.n_moe);
		return EXIT_INPUT;
	}
	rc = rc ? rc : mp_export_save(placement, &cl->layers, f, where ? where : "-");
	if (rc) {
		int err = errno;
		cli_error("%s: cannot write the %s map: %s", where ? where : "stdout", mp_export_name(f),
			  cli_write_error(rc, err));
		return EXIT_INPUT;
	}
	if (filled && !cli_quiet) {
		fprintf(stderr, "sglang map: %u of %u MoE layers had no loads of their own; each took "
			"the map planned for the nearest observed layer\n", filled, cl->layers.n_moe);
	}
	if (!cli_quiet) {
		char flags[320];
		flags_line(placement, f, where, flags, sizeof(flags));
		fprintf(stderr, "sglang map: %u rows, one per hidden layer (%u MoE, dense layers get the "
			"identity)\nsglang flags: %s\n", cl->layers.hidden_layers, cl->layers.n_moe, flags);
		print_launch(placement, where);
	}
	return EXIT_OK;
}
