/* The moeplan program: shared helpers for subcommands.
 *
 * Each subcommand lives in cmd-<name>.c and exports
 *     int cmd_<name>(int argc, char **argv);
 * where argv[0] is the subcommand name. It returns an exit code:
 *     0 success, 1 bad input or "does not fit", 2 usage error,
 *     3 solver limit reached with no feasible plan.
 * and is registered in the table in main.c with its one-line summary and
 * its help (struct cli_command_help: the option table, opt.h).
 */
#ifndef MOEPLAN_CLI_H
#define MOEPLAN_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "moeplan/export.h"
#include "moeplan/diag.h"
#include "moeplan/dispatch.h"
#include "moeplan/doc.h"
#include "moeplan/engine.h"
#include "moeplan/history.h"
#include "moeplan/replan.h"
#include "moeplan/roofline.h"
#include "opt.h"

#define EXIT_OK 0
#define EXIT_INPUT 1
#define EXIT_USAGE 2
#define EXIT_SOLVER 3

struct mp_placement;
struct mp_model;
struct mp_hardware;
struct mp_ep_width;

/* ---- messages and numbers as text (cli.c) ---- */

/** Global flags set by main before dispatch. */
extern bool cli_quiet;
/** The subcommand being run ("place"), set by main before dispatch; NULL
 * before one is known. cli_error names it. */
extern const char *cli_cmd;

/** Usage error: prints "moeplan CMD: error: message\nTry 'moeplan CMD
 * --help'." to stderr and returns EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Print every diagnostic to stderr as path:line:col: error: message. */
void cli_print_diags(const struct mp_diags *diags);

/** Print an error the run finds (a file without position, an export):
 * "moeplan CMD: error: message" (CMD is cli_cmd; "moeplan: error: message"
 * when none). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Issue 16 item 4: searches are bounded by counted work, so outputs are
 * byte-identical on any machine, except when the wall-clock safety limit
 * fires. Count the layers of the n maps whose status is time_limit (a
 * layer counts once); when any, print a warning on stderr (even with -q)
 * and, when doc is a map, add `wall_clock_limit: {layers, limit_s, note}`
 * to it. Returns the count. */
uint32_t cli_report_time_limit(const char *cmd, const struct mp_placement *const *maps, size_t n,
			       double limit_s, struct mp_doc *doc);

/* Plural suffix for a count: "" when n is 1, else "s" ("1 layer", "2 layers"). */
const char *cli_s(double n);

/* A count as text: an integer value as an integer (100000, never 1e+05),
 * else %.4g. Returns buf. */
const char *cli_num(double v, char *buf, size_t size);

/** "18.8 MB": value with an SI prefix and unit, 4 significant digits. */
void cli_si(double value, const char *unit, char *buf, size_t size);

/* ---- option values (args.c) ---- */

/** Parse option values; on failure print a usage error naming the option,
 * the allowed range and the text given ("moeplan CMD: error: --OPT:
 * expected a number >= 0 and <= 1, got 'nan'"), return false. Ranges are
 * closed: [min, max]; nan, inf and hexadecimal are refused everywhere. */
bool cli_parse_u32(const char *cmd, const char *opt, const char *text,
		   uint32_t min, uint32_t max, uint32_t *out);
bool cli_parse_double(const char *cmd, const char *opt, const char *text,
		      double min, double max, double *out);
/** A number in (0, max]: for options where 0 means nothing (requests). */
bool cli_parse_positive(const char *cmd, const char *opt, const char *text, double max, double *out);
/** Parse a quantity with its unit (mp_parse_quantity kind) in [min, max]: a
 * bare number other than 0 is refused, naming the unit to add (issue 26:
 * --tpot 50 would be 50 s), and so is a prefix without a unit ('80G'). */
bool cli_parse_quantity(const char *cmd, const char *opt, const char *text, const char *kind,
			double min, double max, double *out);

/** Seconds for an option whose value name says so (SECONDS): a plain
 * number is seconds, a unit ('2 ms') is allowed. */
bool cli_parse_seconds(const char *cmd, const char *opt, const char *text, double min, double max,
		       double *out);
/** A token or request count in [min, max] ((min, max] when min_open): a
 * plain number or with the SI suffix k, K (1e3) or M (1e6), issue 26. */
bool cli_parse_count(const char *cmd, const char *opt, const char *text, double min,
		     bool min_open, double max, double *out);

/** Parse "yaml" or "json" into *json. */
bool cli_parse_format(const char *cmd, const char *text, bool *json);

enum cli_output { CLI_OUTPUT_TEXT = 0, CLI_OUTPUT_YAML, CLI_OUTPUT_JSON };
/** Parse --format text|yaml|json. */
bool cli_parse_output(const char *cmd, const char *text, enum cli_output *out);

/* ---- outputs (output.c) ---- */

/** True when out_path names the same file as in_path (refuse to
 * overwrite an input). Both may be NULL. */
bool cli_same_file(const char *out_path, const char *in_path);

/** False, after a usage error, when one of outputs[n_outputs] (NULL and "-"
 * skipped) names one of inputs[n_inputs] or an earlier output. */
bool cli_outputs_spare_inputs(const char *cmd, const char *const *outputs, size_t n_outputs,
			      const char *const *inputs, size_t n_inputs);

/** Before a long run: can each output (NULL and "-" skipped) be written?
 * Not when it is a folder, or when its folder is missing or not writable
 * (the atomic writer makes its temporary file there). Prints
 * "moeplan: PATH: cannot write: REASON" and returns EXIT_INPUT (EXIT_USAGE
 * for an empty name), else EXIT_OK. The write itself can still fail later
 * (a full disk). */
int cli_check_outputs(const char *const *outputs, size_t n_outputs);

/** The pictures a report writes next to it: STEM.md -> STEM<suffix>. */
#define CLI_REPORT_MAX_FILES 8
struct cli_report_files {
	size_t count;
	size_t base;                     /**< offset of the file name in each path */
	char path[CLI_REPORT_MAX_FILES][1024];
};

/** Fill out with STEM<suffixes[i]> for a report path (".md" stripped).
 * False when a name would be too long. */
bool cli_report_files(const char *report, const char *const *suffixes, size_t n,
		      struct cli_report_files *out);

/** The pictures `plan --report` and `search --report` write (plan-report.c,
 * search-report.c); false when a name would be too long. */
bool cli_plan_report_files(const char *report, struct cli_report_files *out);
bool cli_search_report_files(const char *report, struct cli_report_files *out);

/** Write a document to path (NULL or "-" = stdout) as YAML or JSON,
 * atomically; prints an error and returns EXIT_INPUT on failure. */
/** True when path names a JSON file (ends in ".json"): a command's -o
 * without --format then writes JSON (issue 24; for plan to call). */
bool cli_output_wants_json(const char *path);
int cli_emit(const struct mp_doc *doc, const char *path, bool json);

/** Emit doc (YAML or JSON) to path (NULL or "-" = stdout) atomically and
 * destroy it; an exit status. */
int cli_emit_doc(struct mp_doc *doc, const char *path, enum cli_output format);

/** Write the text print(user, out) prints to path (NULL or "-" = stdout)
 * atomically (mp_write_atomic: on failure path is untouched); print returns
 * 0 or an MP_E* code. Prints "moeplan: PATH: cannot write: ..." on failure;
 * an exit status. */
int cli_write_text(const char *path, int (*print)(void *user, FILE *out), void *user);

/** Why a write failed, for "cannot write: ..." messages: strerror(err)
 * when rc is MP_EIO from mp_write_atomic/mp_doc_save (which leave the
 * failing call's errno; pass errno read right after the call), else
 * mp_strerror(rc). */
const char *cli_write_error(int rc, int err);

/* ---- the per-model commands' inputs: roofline, fit, step, comm (model-input.c) ---- */

/** Load a model and a hardware file, printing diagnostics; an exit status. */
int cli_load_model_hardware(const char *model_path, const char *hw_path, struct mp_model *model,
			    struct mp_hardware *hw);
/** 1 + the drafter's stages (the article: 3 drafted tokens, 4 per request). */
double cli_default_tokens_per_request(const struct mp_model *model);

/** Warn on stderr when the model lacks what the step model needs for a
 * term (attention.heads: attention FLOP; vocab_size: the LM head). */
void cli_warn_step_gaps(const char *model_path, const struct mp_model *model);
/** An EP width with the given slots, 0 = the scenario's slot rule with
 * min_redundant (MP_MIN_REDUNDANT_AUTO: E + ceil(E / 8), none when ep >= E,
 * rounded up to a multiple of ep; the drafter likewise), then the rules of
 * mp_widths_check; an exit status. */
int cli_width(const char *cmd, const struct mp_model *model, uint32_t ep, uint32_t slots,
	      uint32_t drafter_slots, uint32_t min_redundant, struct mp_ep_width *out);

/* Rows of the option tables that several commands share, word for word. */
#define CLI_OPT_HELP {"help", 'h', NULL, "show this help", NULL}
#define CLI_OPT_FORMAT_TEXT {"format", 'f', "FMT", "text (default), yaml or json", "text yaml json"}
#define CLI_OPT_FORMAT_YAML {"format", 'f', "FMT", "yaml (default) or json", "yaml json"}
#define CLI_OPT_VERBOSE {"verbose", 'v', NULL, "show GLPK's own log on stderr", NULL}
/* ... and the per-model commands' (roofline, fit, step, comm) */
#define CLI_OPT_MODEL                                                                        \
	{"model", 'm', "M", "model file (plans/models/*.yaml) or a Hugging Face config.json "  \
	 "(required)", CLI_COMPLETE_INPUT}
#define CLI_OPT_HARDWARE                                                                     \
	{"hardware", 'H', "H", "hardware file (hardware/*.yaml) (required)", CLI_COMPLETE_INPUT}
#define CLI_OPT_SLOTS                                                                        \
	{"slots", 's', "S", "routed slots per layer (default: E + ceil(E/8), none when N >= E, " \
	 "rounded up to a multiple of N)", NULL}
#define CLI_OPT_DRAFTER_SLOTS(id)                                                            \
	{"drafter-slots", (id), "S", "the drafter's slots (default: the same rule on its experts)", NULL}
#define CLI_OPT_MIN_REDUNDANT(id)                                                            \
	{"min-redundant", (id), "N", "default slots = E + N rounded up to a multiple of EP (the " \
	 "article's benchmark: 32)", NULL}

/* ---- subcommands (cmd-*.c), each with its option table and help (opt.h) ---- */
int cmd_plan(int argc, char **argv);
int cmd_place(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
/* `moeplan help [NAME]` (help.c): NAME NULL is moeplan(1), a command's
 * name its page moeplan-NAME(1), a topic (formats, models, placement,
 * library) its page. Runs `man -l` on the page of the build tree (when run
 * from it) or of the install; without man, prints the page's markdown
 * source and says so on stderr. Returns EXIT_USAGE for an unknown NAME
 * (listing the names on stderr), EXIT_INPUT when no page is installed;
 * does not return when man runs. */
int cli_help(const char *name, const char *const *commands, size_t n_commands);

extern const struct cli_command_help cmd_plan_help;
extern const struct cli_command_help cmd_place_help;
extern const struct cli_command_help cmd_check_help;
extern const struct cli_command_help cmd_simulate_help;

/* Pictures shared by plan, check, replan and roofline (plot-helpers.c).
 * Each writes its SVG to path atomically ("-" = stdout), prints
 * "moeplan: PATH: message" on failure and returns an exit status. */
struct mp_placement;
struct mp_loads;
struct mp_roofline_options;
struct mp_plan;
struct mp_scenario;

/** The load heatmap (layers x GPUs) before and after a placement. */
struct cli_heatmap_spec {
	const char *path;
	const char *title;                   /**< NULL = "Load per GPU per MoE layer" */
	const struct mp_placement *after;    /**< required; only slot_expert and the shape are read */
	const struct mp_placement *before;   /**< same gpus and layers, or NULL for the default
						  layout (mp_simulate_default_layout with
						  ceil(E / G) slots per GPU: slot p holds expert
						  p mod E, one replica per expert when G divides E) */
	const char *before_label;            /**< NULL = says which layout */
	const char *after_label;             /**< NULL = "after placement" */
	const struct mp_loads *loads;        /**< [after->n_layers or 1][E]: both maps are
						  evaluated under these (mp_place_evaluate, even split) */
	double visits_per_gpu;               /**< > 0: scale each row to this mean per GPU (e.g.
						  b * k token visits per step); 0 = the loads' units */
	const char *value_label;             /**< colour bar title; NULL = "load" */
};

/** What the heatmap shows: per-layer max/mean, worst and mean over layers. */
struct cli_heatmap_stats {
	double worst_before, mean_before;
	double worst_after, mean_after;
	uint32_t worst_before_layer, worst_after_layer;
};

/** Draw the heatmap; stats (may be NULL) gets its busiest-GPU factors. */
int cli_plot_heatmap(const struct cli_heatmap_spec *spec, struct cli_heatmap_stats *stats);

/** A named operating point: b tokens per GPU per step at a width. */
struct cli_roofline_op {
	const char *label;              /**< e.g. "decode EP72, 64 req/GPU" */
	struct mp_ep_width width;
	double tokens_per_gpu;          /**< b, > 0 */
};

/** The roofline of a model's routed experts on one GPU. */
struct cli_roofline_spec {
	const char *path;
	const char *title;                         /**< NULL = "<model> on <hardware>" */
	const struct mp_model *model;
	const struct mp_hardware *hw;
	const struct mp_roofline_options *opts;    /**< NULL = defaults (peak, bandwidth) */
	const struct cli_roofline_op *ops;         /**< [n_ops] drawn on both panels */
	size_t n_ops;
	const struct mp_ep_width *widths;          /**< [n_widths] curves of the second
						        panel; 0 = roofline only */
	size_t n_widths;
	double tokens_per_request;                 /**< requests per GPU = b / this; 0 = 1 */
	double max_requests;                       /**< right end of the curves; 0 = 1024 */
};

/** Draw the roofline: one roof per compute class the hardware has a peak
 * for (opts->peak_flops replaces the model's class), the ops at the
 * intensity I(t) of the main model's expert on the model's roof and, with
 * widths, tokens per expert t = b k N / slots against requests per GPU for
 * each width with the ridge crossing t* marked. */
int cli_plot_roofline(const struct cli_roofline_spec *spec);

/* plan --svg / --report (plan-report.c). */
/** The decode heatmap of a plan: default layout against the plan's
 * placement, in token visits per GPU per step (b * k on average). */
int cli_plan_heatmap(const char *path, const struct mp_plan *plan, const struct mp_scenario *sc,
		     bool decode, struct cli_heatmap_stats *stats);
/** The one-page Markdown report of a plan, with its pictures written next
 * to it (STEM-decode-roofline.svg, STEM-prefill-roofline.svg,
 * STEM-decode-heatmap.svg, STEM-prefill-heatmap.svg for STEM.md). */
/** What the plan summary prints (plan-summary.c). */
struct cli_plan_summary_input {
	const struct mp_plan *plan;
	const struct mp_scenario *scenario;
	const char *path;   /**< the scenario as given on the command line */
};
/** Print the summary a person reads on a terminal: per phase the width,
 * slots, HBM, step figures and placement quality, and why each width was
 * chosen (user: struct cli_plan_summary_input). For cli_write_text. */
int cli_plan_summary(void *user, FILE *out);
int cli_plan_report(const char *path, const struct mp_plan *plan, const struct mp_scenario *sc,
		    const char *scenario_path);

int cmd_roofline(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_step(int argc, char **argv);
int cmd_comm(int argc, char **argv);
extern const struct cli_command_help cmd_roofline_help;
extern const struct cli_command_help cmd_fit_help;
extern const struct cli_command_help cmd_step_help;
extern const struct cli_command_help cmd_comm_help;
int cmd_replan(int argc, char **argv);
int cmd_search(int argc, char **argv);
extern const struct cli_command_help cmd_search_help;
/* search --svg / --report (search-report.c). */
struct mp_deploy;
struct mp_deploy_options;
/** The Pareto front of one phase (decode, or prefill) as SVG; an exit status. */
int cli_search_front(const char *path, const struct mp_deploy *d, const struct mp_scenario *sc,
		     const struct mp_deploy_options *opts, bool decode);
/** The Markdown report of a search with its pictures next to it
 * (STEM-decode-front.svg, STEM-prefill-front.svg, STEM-pools.svg). */
int cli_search_report(const char *path, const struct mp_deploy *d, const struct mp_scenario *sc,
		      const struct mp_deploy_options *opts, const char *scenario_path);
extern const struct cli_command_help cmd_replan_help;
struct mp_placement;
struct mp_model;
/** Check an --export value ("sglang"); a usage error otherwise ("vllm"
 * says why it was removed). In export-map.c. */
bool cli_parse_export(const char *cmd, const char *text);
/** An engine map's name must end in .json (or be "-"); a usage error
 * naming SGLang's rule otherwise. */
bool cli_export_name_ok(const char *cmd, const char *path);
/** The layers of an export (moeplan/export.h), owning its arrays. */
struct cli_layers {
	bool known;                   /**< false: the rows' layers are not known */
	struct mp_export_layers layers;
	uint32_t *moe;
	uint32_t *rows;
};
void cli_layers_finish(struct cli_layers *cl);
/** From a model's numbering; row_layer[n_rows] the rows' layers, or NULL
 * when the rows are the model's MoE layers in order (then n_rows must be
 * moe_layers, else MP_EINVAL). Returns 0, MP_EINVAL or MP_ENOMEM. */
int cli_layers_from_model(struct cli_layers *cl, const struct mp_model *model,
			  const uint32_t *row_layer, uint32_t n_rows);
/** Rows that are already the engine's rows (an SGLang map or dump): row r
 * is hidden layer r. */
int cli_layers_every_row(struct cli_layers *cl, uint32_t n_rows);
/* ---- an engine map's rows named by the loads (map-rows.c) ---- */

/** True when loads name their rows' layers (layer_ids) and have no more
 * rows than map: the loads' rows are some (or all) of map's, matched by
 * layer (cli_map_rows_for), never by position. */
bool cli_map_rows_named(const struct mp_placement *map, const struct mp_loads *loads);

/** With a model file (model_path non-NULL) and loads that name their rows'
 * layers: every row naming a dense layer of the model must be all zero
 * (README "Layer identity"). Returns 0, MP_EINVAL (added to diags:
 * "LOADS: error: layer N is a dense layer ...", or the model's own
 * errors) or MP_ENOMEM. */
int cli_rows_dense_zero(const char *model_path, const char *loads_path, const struct mp_loads *loads,
			struct mp_diags *diags);
/** The rows ids[0..n) of map (hidden-layer ids = row indices), in that
 * order, into out (replaced; slot_expert and replicas only). Returns 0,
 * MP_EINVAL (an id beyond the map) or MP_ENOMEM; out unchanged on error. */
int cli_map_select_rows(const struct mp_placement *map, const uint32_t *ids, uint32_t n,
			struct mp_placement *out);
/** The rows of map (read from path, phase as mp_load_map) that the loads'
 * named layers are: by the file's own row layers when it records them (a
 * moeplan plan or placement: mp_map_row_layers), else row r = hidden layer
 * r (an engine map). *rows: heap [loads->n_layers] (caller frees). Returns
 * 0, MP_EINVAL (a layer the map does not hold: said on stderr, naming
 * loads_path), MP_EIO or MP_ENOMEM. */
int cli_map_rows_for(const char *path, const char *phase, const struct mp_placement *map,
		     const char *loads_path, const struct mp_loads *loads, uint32_t **rows);
/** Write rows (row r to map's row ids[r]; slot_expert and replicas) back
 * into map. Returns 0 or MP_EINVAL (another shape, an id beyond the map). */
int cli_map_put_rows(struct mp_placement *map, const uint32_t *ids, const struct mp_placement *rows);

/** Write a placement's map in an engine's format (cli_parse_export'ed name)
 * to path (NULL or "-" = stdout), one row per hidden layer as cl says, and
 * print the matching engine flags on stderr unless --quiet; an exit
 * status. cl NULL or not known: refused with the reason. */
int cli_export_map(const struct mp_placement *placement, const struct cli_layers *cl,
		   const char *format, const char *path);
/** What the running command knows of SGLang's launch (nodes, dispatch
 * algorithm, MTP, memory fraction): cli_export_map then prints the whole
 * launch line ("sglang launch: ...") with it; without a call, the defaults
 * of mp_export_launch_init. l's strings must outlive the export. */
void cli_export_set_launch(const struct mp_export_launch *l);

/** SGLang's recorder dump as written against a moeplan plan or placement
 * at plan_path (dense-rows.c, issue 24): the all-zero rows of layers the
 * plan does not place are dropped from loads with a note on stderr naming
 * them (with model_path, only rows of the model's dense layers). Engine
 * maps and loads without layer ids are left alone. Returns 0, MP_EINVAL
 * (the model) or MP_ENOMEM. */
int cli_loads_fit_plan(const char *cmd, const char *plan_path, const char *phase, const char *model_path,
		       const char *loads_path, struct mp_loads *loads);
/** place of a dump (a row per hidden layer) without --model: its all-zero
 * rows are dropped with a note naming them, and cl numbers the others for
 * --export (hidden layers: the dump's rows). Returns 0 or MP_ENOMEM. */
int cli_place_skip_dense(const char *loads_path, struct mp_loads *loads, struct cli_layers *cl);
/** Loads with layer ids (a recorder dump) against an engine map whose
 * rows they match one to one (dense-rows.c): the all-zero rows of dense
 * layers (model's; model NULL: every all-zero row) are dropped from loads
 * with a note on stderr; *kept [*n_kept] (heap) the rows kept, for the
 * caller to keep the same rows of the map, or NULL when nothing was
 * dropped (nor when every row is zero). Returns 0 or MP_ENOMEM. */
int cli_engine_map_skip_dense(const char *cmd, const char *loads_path, const struct mp_model *model,
			      struct mp_loads *loads, uint32_t **kept, uint32_t *n_kept);

/* Loads as a history of windows (history.c, issue 25 item 3): several LOADS
 * operands (oldest first) or a series CSV, reduced by an objective
 * (moeplan/history.h) to the load vector the solver plans on. */
struct cli_history {
	struct mp_objective_options obj;
	bool have_objective;     /**< --objective, --half-life or --spread-k given */
	bool have_half_life, have_spread_k;
	uint32_t first, last;    /**< --windows FIRST:LAST, 1-based, inclusive; 0 = all */
	struct mp_history all;   /**< every window read (owned) */
	struct mp_history view;  /**< windows first..last of all (not owned) */
};
/** --objective NAME (last, mean, recency, spread, worst), --half-life W
 * (windows, > 0) or --spread-k K (>= 0): opt is the option's long name.
 * False after a usage message naming cmd. */
bool cli_history_option(const char *cmd, const char *opt, const char *arg, struct cli_history *h);
/** "objective", "half-life", "spread-k", "windows" for i = 0..3 (the order
 * commands declare these options in), else NULL. */
const char *cli_history_option_name(int i);
/** True when the operands make a history: more than one, or a series CSV. */
bool cli_history_wanted(char *const *paths, uint32_t n_paths);
/** Read paths[n_paths] as a history (mp_load_history), keep windows
 * first..last (--windows; a range past the last window is a usage-style
 * error in diags naming the file and the window count) and reduce them with
 * h->obj into out (mp_history_loads). Returns 0, MP_EINVAL (with diags),
 * MP_EIO or MP_ENOMEM. */
int cli_history_load(struct cli_history *h, char *const *paths, uint32_t n_paths,
		     struct mp_loads *out, struct mp_diags *diags);
/** --objective worst: every layer of pl (planned on the mean) improved by
 * mp_place_worst_layer over h->view, then re-evaluated on plan (the mean
 * vector); *worst and *bound the largest over layers. Returns 0, MP_EINVAL
 * or MP_ENOMEM. */
int cli_history_worst(const struct cli_history *h, const struct mp_loads *plan,
		      struct mp_placement *pl, double *worst, double *bound);
/** `history: {objective, windows, first_window, last_window, half_life |
 * spread_k, worst_ratio, worst_bound}` into doc (a map); worst < 0 leaves
 * the last two out. */
void cli_history_doc(const struct cli_history *h, double worst, double bound, struct mp_doc *doc);
void cli_history_finish(struct cli_history *h);
/** Warnings (stderr, not with -q) for options that change nothing:
 * --half-life without --objective recency, --spread-k without spread, an
 * objective for loads that are one window (history false). */
void cli_history_warn(const char *cmd, const struct cli_history *h, bool history);

/* --engine and its companions on place, check, replan and simulate
 * (engine-opt.c, issue 24): the dispatch rule a map is scored or placed
 * under (moeplan/dispatch.h). */
struct cli_engine {
	bool given;              /**< --engine was on the command line */
	bool have_algorithm;     /**< --ep-dispatch-algorithm was */
	struct mp_dispatch d;    /**< rule, algorithm, gpus_per_node */
};
/** Parse --engine NAME (even, sglang, vllm) into e; false after a usage
 * message naming cmd. */
bool cli_engine_parse(const char *cmd, const char *name, struct cli_engine *e);
/** Parse --ep-dispatch-algorithm NAME (static, dynamic, fake). */
bool cli_engine_parse_algorithm(const char *cmd, const char *name, struct cli_engine *e);
/** Which of the three engine options cli_engine_option parses. */
enum cli_engine_opt {
	CLI_ENGINE_OPT_RULE,          /**< --engine NAME */
	CLI_ENGINE_OPT_ALGORITHM,     /**< --ep-dispatch-algorithm ALG */
	CLI_ENGINE_OPT_GPUS_PER_NODE, /**< --gpus-per-node N, 1 .. MP_MAX_GPUS */
};
/** --engine, --ep-dispatch-algorithm or --gpus-per-node (which) on check,
 * replan and simulate into e; false after a usage message naming cmd. */
bool cli_engine_option(const char *cmd, enum cli_engine_opt which, const char *arg, struct cli_engine *e);
/** --engine NAME|FILE on plan, step and search (engine-profile.c): even (an
 * ideal engine: *out initialised), sglang or vllm (built in) or a profile
 * file into *out. Returns EXIT_OK, EXIT_USAGE (a name that is neither, not
 * a file name) or EXIT_INPUT (the file, its errors printed). */
int cli_engine_profile(const char *cmd, const char *arg, struct mp_engine_profile *out);
/** After the scenario is read: the --engine profile (given, when
 * have_given) replaces the scenario's `engine:` (mp_scenario_set_engine;
 * an overlap it does not run is an error), and place->dispatch takes the
 * engine's rule and algorithm (--ep-dispatch-algorithm in alg wins).
 * Returns EXIT_OK, EXIT_INPUT (printed) or EXIT_USAGE. */
struct mp_scenario;
struct mp_place_options;
int cli_scenario_engine(const char *cmd, struct mp_scenario *sc, struct mp_engine_profile *given,
			bool have_given, const struct cli_engine *alg, struct mp_place_options *place);

/** The engine a map file belongs to when --engine is not given: SGLang's
 * `physical_to_logical_map` JSON and torch.save dumps -> sglang, moeplan's
 * vLLM export -> vllm, anything else (a moeplan plan or placement, a bare
 * list) -> even, the split moeplan plans for. */
enum mp_dispatch_rule cli_engine_of_file(const char *path);
/** Each row's GPU loads under d: map rows in order (so SGLang's static
 * streams walk them as SGLang does), row h carrying loads row
 * row_loads[h] (UINT32_MAX = no loads, e.g. a dense layer). gpu[n_layers *
 * G] out (heap, caller frees). Returns 0, MP_EINVAL or MP_ENOMEM. */
int cli_engine_loads(const struct mp_dispatch *d, const struct mp_placement *map,
		     const uint32_t *row_loads, const struct mp_loads *loads, double **gpu);
/** The same for a moeplan plan or placement (engine-walk.c): row r is
 * hidden layer own[r] (strictly increasing), moe[n_moe] the model's MoE
 * layers; the streams walk the map --export writes from it (every hidden
 * layer up to the last placed one, mp_map_row_source). gpu[n_layers * G]
 * out per placement row (heap). Returns 0, MP_EINVAL or MP_ENOMEM. */
int cli_engine_loads_exported(const struct mp_dispatch *d, const struct mp_placement *map,
			      const uint32_t *own, const uint32_t *moe, uint32_t n_moe,
			      const uint32_t *row_loads, const struct mp_loads *loads, double **gpu);
/** Where each rank sends each expert's tokens, per row of map, under d
 * (engine-walk.c; mp_dispatch_layer_route): own NULL = row r is the
 * engine's row r (an SGLang map), else a moeplan plan's rows walked as
 * cli_engine_loads_exported walks them. *route [n_layers * G * E] (heap,
 * caller frees): a slot, or MP_DISPATCH_SPLIT. Returns 0, MP_EINVAL or
 * MP_ENOMEM. */
int cli_engine_route(const struct mp_dispatch *d, const struct mp_placement *map, const uint32_t *own,
		     const uint32_t *moe, uint32_t n_moe, uint32_t **route);
/** simulate --engine (simulate-engine.c): *route [map rows][G][E] (heap) of
 * GPU ids or MP_SIMULATE_ANY for mp_simulate_options.route, map read from
 * plan (phase): a moeplan plan's rows are walked as --export writes them
 * (the MoE layers model's, or with model NULL the rows it places, and
 * then *dense_assumed says whether layers it skips were taken as dense),
 * an engine map's rows as the hidden layers. Returns 0, MP_EINVAL (an
 * expert without a slot, P not dividing G) or MP_ENOMEM. */
int cli_simulate_route(const char *plan, const char *phase, const struct mp_model *model,
		       const struct mp_dispatch *d, const struct mp_placement *map, uint32_t **route,
		       bool *dense_assumed);
/** Keep rows[n_rows] of *route (as cli_map_select_rows keeps a map's
 * rows); 0 or MP_ENOMEM (then *route is unchanged). */
int cli_simulate_route_rows(uint32_t **route, const uint32_t *rows, uint32_t n_rows, uint32_t gpus,
			    uint32_t n_experts);


/* ---- replan --engine (replan-engine.c, issue 24) ---- */

/** What replan --engine chooses from: the rows re-planned (cur, with the
 * loads of the same rows), and how the engine walks the map. */
struct cli_replan_engine_in {
	const struct mp_dispatch *d;            /**< the rule (not even) */
	const struct mp_placement *cur;         /**< the current rows re-planned */
	const struct mp_loads *loads;           /**< [cur rows][experts] */
	const struct mp_placement *full;        /**< the whole engine map (rows = hidden layers) or NULL */
	const uint32_t *ids;                    /**< with full: row of full of each re-planned row */
	const uint32_t *own;                    /**< a moeplan plan's rows' hidden layers, or NULL */
	const char *model;                      /**< --model (its MoE layers), or NULL */
	const struct mp_replan_options *opts;   /**< budget, move cost, min gain, limits */
};

/** Its outcome, per re-planned row: the busiest GPU under the rule before
 * and after, the mean load (the bound), the moves and which candidate the
 * row took (0 current, 1 the even-split re-plan, 2 place --engine's plan). */
struct cli_replan_engine {
	struct mp_dispatch d;
	uint32_t n_layers;
	double *before, *after, *mean; /**< [n_layers], in the unit of the loads */
	uint32_t *moves;               /**< [n_layers] */
	unsigned char *choice;         /**< [n_layers] */
	double sum_before, sum_after, sum_bound, gain;
	bool kept;                     /**< the gain under the rule was below --min-gain */
	double kept_gain;
};

/** Choose each row of r->after under in->d (the file's top comment): r
 * is mp_replan_run's result on in->cur and in->loads and gets the chosen
 * rows (mp_replan_replace_layer, mp_replan_recount); x is filled. Returns
 * 0 or an MP_ code (reported in diags where it is the input's). */
int cli_replan_engine_run(const struct cli_replan_engine_in *in, struct mp_replan *r,
			  struct cli_replan_engine *x, struct mp_diags *diags);
void cli_replan_engine_finish(struct cli_replan_engine *x);
/** The per-row table and totals; names: the rows' layer ids, or NULL. */
void cli_replan_engine_print(FILE *f, const struct cli_replan_engine *x, const uint32_t *names);
/** The `engine` record into the re-plan record. 0 or MP_ENOMEM. */
int cli_replan_engine_doc(const struct cli_replan_engine *x, const uint32_t *names, struct mp_doc *record);

#endif
