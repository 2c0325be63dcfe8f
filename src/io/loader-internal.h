/* moeplan loader internals: reading a file, the libyaml document, typed
 * getters that report `file:line:col` diagnostics, and the quantity parser.
 * Only src/io/loader*.c include this header (and <yaml.h>). */
#ifndef MOEPLAN_LOADER_INTERNAL_H
#define MOEPLAN_LOADER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "moeplan/diag.h"
#include "moeplan/loader.h"

/* After this many errors in one file the rest are dropped (a final record
 * says so): a 200 MB file of junk must not produce millions of records. */
#define LD_MAX_ERRORS 100u

/* The largest expert load accepted (in the loads' own unit: tokens routed
 * to an expert in a window). Loads are summed per GPU and per layer (at
 * most MP_MAX_EXPERTS = 65,536 experts, MP_MAX_LAYERS = 4,096 layers, and
 * windows of an SGLang dump summed first), scaled by per-token bytes and
 * FLOP (about 1e8 per token) and squared in spreads; from values up to
 * 1e18 the largest such figure is about 1e18 * 65,536 * 4,096 * 1e8 ~ 3e43,
 * and its square ~1e87, far below DBL_MAX (1.8e308), so no sum or product
 * of loads can overflow to inf (which would be written as null). A finite
 * value like 1.7e308 is refused here instead. No real counter reaches the
 * cap: a year at 1e8 tokens/s is about 3e15 tokens. */
#define LD_MAX_LOAD 1e18
#define LD_MAX_LOAD_TEXT "1e18"

/** A whole input file in memory, NUL-terminated (data[size] == 0). */
struct ld_text {
	char *data;
	size_t size;
};

/** Read path ("-" = standard input) into out. Refuses directories, empty
 * files, files larger than MP_MAX_INPUT_BYTES and NUL bytes, each with a
 * diagnostic. Returns 0, MP_EIO or MP_EINVAL (or MP_ENOMEM). */
int ld_read_text(const char *path, struct ld_text *out, struct mp_diags *diags);
void ld_text_finish(struct ld_text *text);

/** One YAML (or JSON) file being read. */
struct ld {
	const char *path;        /* as given: used in every diagnostic */
	struct mp_diags *diags;
	yaml_document_t doc;
	bool have_doc;
	int status;              /* 0, MP_EINVAL after any error, MP_ENOMEM wins */
	size_t errors;
	size_t *str_tagged;      /* ascending node indexes of plain scalars tagged !!str */
	size_t n_str_tagged;
};

/** Read and parse path. On failure (unreadable, YAML syntax error, empty
 * document, several documents) the problem is reported and a negative code
 * returned; ld_close is still safe to call. */
int ld_open(struct ld *ld, const char *path, struct mp_diags *diags);

/** Parse an in-memory text that was already read (size checks done). */
int ld_open_text(struct ld *ld, const char *path, const struct ld_text *text,
		 struct mp_diags *diags);

void ld_close(struct ld *ld);

/** The root node of the document (never NULL after a successful open). */
yaml_node_t *ld_root(struct ld *ld);

/** Child node by id (NULL when out of range). */
yaml_node_t *ld_node(struct ld *ld, int id);

/** Report an error at a node's start mark (1-based), or at the file level
 * when node is NULL. printf-style. */
void ld_error(struct ld *ld, const yaml_node_t *node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** A warning at a node (a record with code 0, diag.h): the file still
 * loads; not counted as an error. printf-style. */
void ld_warn(struct ld *ld, const yaml_node_t *node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** Report at an explicit 1-based position (0 = unknown). */
void ld_error_at(struct ld *ld, int line, int column, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/** Merge a sub-status (from a nested loader) into ld->status. */
void ld_fail(struct ld *ld, int code);

/** Short English name of a node's kind: "a mapping", "a list", "text". */
const char *ld_kind_name(const yaml_node_t *node);

/** True for a scalar that is YAML null: empty plain, "~", "null". */
bool ld_is_null(const yaml_node_t *node);

/** True when node is a scalar written quoted or as a block ('4', "4",
 * |, >), or tagged as a string (!!str 4, ! 4): text, never a number, even
 * when its text is digits (YAML and JSON: "4" is a string). Plain-number
 * fields (counts, integers, fractions, loads) refuse it; quantity fields
 * (a unit allowed) take it. (ld_open gives a plain scalar tagged !!str the
 * single-quoted style, so this and ld_is_null see it as text.) */
bool ld_is_quoted(const yaml_node_t *node);

/** True when node is a plain scalar the file tagged !!str (ld_is_quoted
 * too): for the message, which should not say "quoted". */
bool ld_is_str_tagged(const struct ld *ld, const yaml_node_t *node);

/** What follows "got " when a scalar is refused as text where a number
 * goes: "the quoted text '4' (a number is written without quotes)", or
 * "the text '4' tagged !!str (...)" when ld_is_str_tagged; value is the
 * text as the message shows it. Written to buf, returned. */
const char *ld_text_not_number(const struct ld *ld, const yaml_node_t *node, const char *value,
			       char *buf, size_t size);

/** A scalar's text (NUL-terminated), or NULL when node is not a scalar. */
const char *ld_scalar(const yaml_node_t *node);

/** Check that node is a mapping whose keys are all in `keys`
 * (NULL-terminated), reporting unknown keys with a "did you mean"
 * suggestion and duplicate keys. `what` names the mapping in messages
 * ("" for the top level, else e.g. "drafter"). Returns false (after
 * reporting) when node is not a mapping. */
bool ld_check_map(struct ld *ld, const yaml_node_t *node, const char *what,
		  const char *const *keys);

/** Like ld_check_map without the unknown-key check (Hugging Face configs,
 * SGLang dumps): only the type and duplicates. */
bool ld_check_map_lenient(struct ld *ld, const yaml_node_t *node, const char *what);

/** The value of key in a mapping, or NULL when absent or null. The key
 * node is returned through key_out when not NULL. */
yaml_node_t *ld_get(struct ld *ld, const yaml_node_t *map, const char *key);

/** True when key is present in the mapping (even with a null value). */
bool ld_has(struct ld *ld, const yaml_node_t *map, const char *key);

/* What kind of moeplan input a mapping is, from a key only that kind has:
 * "a moeplan output (plan, placement or report)", "a model file",
 * "a Hugging Face config.json", "a hardware file", or NULL (none of them;
 * a mapping with prefill or decode is taken as a scenario or a plan).
 * *key gets the key that decided, *instead what to give where a scenario
 * is expected. */
const char *ld_file_kind(struct ld *ld, const yaml_node_t *root, const char **key,
			 const char **instead);

/** The value of a required key; reports "missing required field" at the
 * mapping (or "needs a value" at a null value) and returns NULL. */
yaml_node_t *ld_require(struct ld *ld, const yaml_node_t *map, const char *what,
			const char *key);

/** Join a field path: "drafter" + "top_k" -> "drafter.top_k" into buf. */
const char *ld_field(char *buf, size_t size, const char *prefix, const char *key);

/* Typed getters: each checks the node (a scalar of the right form, within
 * [min, max]), reports `field: expected ..., got '...'` otherwise and
 * returns false leaving *out untouched. A NULL node returns true without
 * touching *out (the field was not given: the default stays). */
bool ld_get_u32(struct ld *ld, const yaml_node_t *node, const char *field,
		uint32_t min, uint32_t max, uint32_t *out);
bool ld_get_u64(struct ld *ld, const yaml_node_t *node, const char *field,
		uint64_t min, uint64_t max, uint64_t *out);

/** A real quantity of the given kind (see mp_parse_quantity; NULL = plain
 * number). min_open makes the lower bound exclusive. */
bool ld_get_real(struct ld *ld, const yaml_node_t *node, const char *field,
		 const char *kind, double min, bool min_open, double max, double *out);

/** A token or request count (kind "count"): a plain number or one with an
 * SI suffix, 8k = 8K = 8,000, 1M = 1,000,000 (issue 26); quoted text is
 * refused as for plain numbers. */
bool ld_get_count(struct ld *ld, const yaml_node_t *node, const char *field, double min,
		  bool min_open, double max, double *out);

/** A number strictly between 0 and 1. */
bool ld_get_fraction(struct ld *ld, const yaml_node_t *node, const char *field, double *out);

/** A byte count (kind "bytes"), rounded to the nearest byte. */
bool ld_get_bytes(struct ld *ld, const yaml_node_t *node, const char *field,
		  uint64_t min, uint64_t max, uint64_t *out);

bool ld_get_bool(struct ld *ld, const yaml_node_t *node, const char *field, bool *out);

/** A string; *out is replaced by a heap copy (the old value freed). */
bool ld_get_string(struct ld *ld, const yaml_node_t *node, const char *field, char **out);

/** One of names (NULL-terminated), case-insensitive; index into *out. */
bool ld_get_enum(struct ld *ld, const yaml_node_t *node, const char *field,
		 const char *const *names, int *out);

bool ld_get_format(struct ld *ld, const yaml_node_t *node, const char *field,
		   enum mp_format *out);
bool ld_get_compute(struct ld *ld, const yaml_node_t *node, const char *field,
		    enum mp_compute *out);

/** Why a quantity did not parse (for messages). */
enum ld_qerr {
	LDQ_OK = 0,
	LDQ_EMPTY,       /* nothing there */
	LDQ_NOT_NUMBER,  /* no number at the start */
	LDQ_NONFINITE,   /* nan, inf */
	LDQ_RANGE,       /* overflows a double, or underflows to a denormal */
	LDQ_UNIT,        /* unknown unit */
	LDQ_UNIT_KIND,   /* a unit of another kind ("TB/s" where bytes are expected) */
	LDQ_NO_UNIT,     /* a unit where none is allowed */
};

/** Parse "<number> [unit]" for kind ("bytes", "bytes/s", "flop/s",
 * "seconds", "count" or NULL). Returns LDQ_OK and the value in SI base
 * units; a number without a unit is LDQ_OK in base units here (the typed
 * getters refuse it for every kind but NULL and "count", issue 26). */
enum ld_qerr ld_parse_quantity(const char *text, const char *kind, double *out);

/** A load: a plain number (no unit) from ld_parse_quantity, with an
 * underflow to a subnormal or 0 taken as that value (loader.c).
 * The caller checks the range 0 to LD_MAX_LOAD. */
enum ld_qerr ld_parse_load(const char *text, double *out);

/* libyaml's time grows faster than linearly with the nesting of flow
 * collections ("[[[[..."; 40,000 levels take seconds), so deep nesting is
 * refused before parsing. Brackets are counted outside comments; a quoted
 * string full of brackets can only make the count larger, never hide a
 * level. No input of ours nests deeper than 4. */
#define LD_MAX_FLOW_DEPTH 1000

/** The bracket count of a text read in pieces (ld_depth_scan). */
struct ld_depth {
	size_t depth;  /* open '[' and '{' */
	bool comment;  /* inside a '#' comment */
	char prev;     /* the byte before the next piece ('\n' at the start) */
	size_t seen;   /* bytes scanned before the next piece */
};
#define LD_DEPTH_INIT {0, false, '\n', 0}

/** Scan the next n bytes of a text: true when its flow lists or mappings
 * nest deeper than LD_MAX_FLOW_DEPTH, *at the offending byte's index in
 * the whole text (loader.c). */
bool ld_depth_scan(struct ld_depth *st, const char *data, size_t n, size_t *at);

/** ld_depth_scan over a whole text. */
bool ld_text_too_deep(const struct ld_text *text, size_t *at);

/** ld_stream_logical_count: the text is not a plain SGLang dump. */
#define LD_STREAM_OTHER 1

/** Sum a plain SGLang expert-distribution dump ({"logical_count":
 * [windows][layers][experts] of plain numbers 0 to LD_MAX_LOAD, nothing
 * else}) over its windows from libyaml's events, in memory of one
 * [layers][experts] table (issue 26 item 8; loader-loads-stream.c).
 * Returns 0 with *sum a new [*rows][*cols] array (free it), or
 * LD_STREAM_OTHER (nothing allocated) for any other text, bad ones
 * included: read those with ld_open_text, which reports them. */
int ld_stream_logical_count(const struct ld_text *text, double **sum, uint32_t *rows,
			    uint32_t *cols);

/** ld_stream_logical_count on a regular file at path, read in pieces
 * (memory: the result, not the file), with ld_read_text's checks (size,
 * NUL bytes) and the flow-depth limit made on each piece. LD_STREAM_OTHER
 * for anything else (not a regular file, a check failing, another text):
 * read it with ld_read_text and ld_open_text, which report it. */
int ld_stream_logical_count_file(const char *path, double **sum, uint32_t *rows,
				 uint32_t *cols);

/** The units accepted for kind, for messages ("B, kB, MB, ..."). */
const char *ld_units_help(const char *kind);

/** Parse a whole non-negative decimal integer (digits only). Returns
 * LDQ_OK, LDQ_NOT_NUMBER (anything but digits) or LDQ_RANGE. */
enum ld_qerr ld_parse_u64(const char *text, uint64_t *out);

/** Optimal string alignment distance (Levenshtein plus transpositions),
 * case-insensitive; capped at 99. */
unsigned ld_edit_distance(const char *a, const char *b);

/** The closest candidate within a typo's distance, or NULL. */
const char *ld_suggest(const char *word, const char *const *candidates);

/** Resolve a path written in file `base`: relative to base's folder when
 * that file exists, else as given (relative to the current folder).
 * Returns a heap string or NULL (ENOMEM). *found tells whether the
 * returned path exists. */
char *ld_resolve_path(const char *base, const char *path, bool *found);

/** Where ld_resolve_path(base, path) looked, for "cannot find" messages:
 * "looked in 'DIR/', the folder of 'FILE', and in the current folder",
 * "looked in the current folder", or "no such file" for an absolute path.
 * Written into buf; returns buf. */
const char *ld_looked_in(const char *base, const char *path, char *buf, size_t size);

/** A heap copy of s (NULL on allocation failure). */
char *ld_strdup(const char *s);

/* Section parsers shared between files. `what` is the field path prefix
 * ("" at the top level). */

/** A model mapping (moeplan schema, or a Hugging Face config when the
 * mapping has `model_type` or `architectures`). */
void ld_parse_model(struct ld *ld, const yaml_node_t *node, const char *what,
		    struct mp_model *out);

/** A hardware mapping. */
void ld_parse_hardware(struct ld *ld, const yaml_node_t *node, const char *what,
		       struct mp_hardware *out);

/** A traffic spec; observed file paths resolve against ld->path. */
void ld_parse_traffic(struct ld *ld, const yaml_node_t *node, const char *what,
		      struct mp_traffic *out);

/** A list of lists of loads (or [windows][layers][experts], summed) into
 * out (allocated here). */
/* torch.save archives (loader-torch.c): the first four bytes are a zip
 * header. */
bool ld_is_zip(const char *path);
/* SGLang's expert-distribution dump (.pt): logical_count summed over its
 * buffer, rows = hidden layers. Errors name the file. */
int ld_torch_loads(const char *path, struct mp_loads *out, struct mp_diags *diags);
/* A .pt map: physical_to_logical_map (or last_physical_to_logical_map),
 * [rows][cols] ids 0..MP_MAX_EXPERTS-1 into a new array; *what = the key. */
int ld_torch_map(const char *path, uint32_t **ids, uint32_t *rows, uint32_t *cols,
		 const char **what, struct mp_diags *diags);

void ld_parse_loads_array(struct ld *ld, const yaml_node_t *node, const char *what,
			  struct mp_loads *out);

#endif
