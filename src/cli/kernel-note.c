/* Where a step's kernel efficiencies came from (issue 23 item 1), as the
 * text outputs write it: a kernel table, or the scalar factors and why. */
#include "kernel-note.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "moeplan/diag.h"
#include "moeplan/loader.h"

/* Terms the table priced. */
static int table_terms(const struct mp_step *s)
{
	int n = 0;
	for (int i = 0; i < MP_TERM_COUNT; i++) {
		n += s->from_table[i];
	}
	return n;
}

void cli_kernel_note(FILE *f, const char *indent, const struct mp_step *s,
		     const struct mp_hardware *hw, bool forced_scalar)
{
	const char *name = s->kernel_table_name ? s->kernel_table_name : "(given)";
	if (s->kernel_table && table_terms(s) > 0) {
		fprintf(f, "%skernel efficiency: table %s (terms it has no row for keep the scalar factors)\n",
			indent, name);
	} else if (s->kernel_table) {
		fprintf(f, "%skernel efficiency: scalar factors: the table %s has no row for this model's "
			   "kernels\n", indent, name);
	} else if (forced_scalar || s->scalar_forced) {
		fprintf(f, "%skernel efficiency: scalar factors (--kernels none)\n", indent);
	} else {
		fprintf(f, "%skernel efficiency: scalar factors: no kernel table for %s (its hardware file "
			   "names none: `kernels:`, moeplan-formats(5))\n",
			indent, hw && hw->name ? hw->name : "this GPU");
	}
}

const char *cli_kernel_source(const struct mp_step *s, const struct mp_hardware *hw, char *buf,
			      size_t size)
{
	const char *name = s->kernel_table_name ? s->kernel_table_name : "(given)";
	if (s->kernel_table && table_terms(s) > 0) {
		snprintf(buf, size, "%s", name);
	} else if (s->kernel_table) {
		snprintf(buf, size, "scalar factors (%s: no row for this model)", name);
	} else if (s->scalar_forced || (hw && hw->kernels_none)) {
		snprintf(buf, size, "scalar factors (--kernels none)");
	} else {
		snprintf(buf, size, "scalar factors (no kernel table for this GPU)");
	}
	return buf;
}

const char *cli_kernel_source_hw(const struct mp_hardware *hw, bool priced, char *buf, size_t size)
{
	const char *name = hw->kernels_path ? hw->kernels_path : "(given)";
	if (hw->kernels.n_rows > 0 && priced) {
		return name;
	}
	if (hw->kernels.n_rows > 0) {
		snprintf(buf, size, "scalar factors (%s: no row for this model)", name);
		return buf;
	}
	return hw->kernels_none ? "scalar factors (--kernels none)" : "scalar factors (no kernel table for this GPU)";
}

static void drop_table(struct mp_hardware *hw)
{
	free(hw->kernels_path);
	hw->kernels_path = NULL;
	mp_kernel_table_finish(&hw->kernels);
	hw->kernels = (struct mp_kernel_table){0};
}

/* A copy of table's rows into *out (ENOMEM: false). */
static bool copy_table(const struct mp_kernel_table *table, struct mp_kernel_table *out)
{
	*out = (struct mp_kernel_table){0};
	out->rows = malloc(table->n_rows * sizeof(*out->rows));
	if (!out->rows) {
		return false;
	}
	memcpy(out->rows, table->rows, table->n_rows * sizeof(*out->rows));
	out->n_rows = table->n_rows;
	return true;
}

int cli_scenario_kernels(const char *cmd, struct mp_scenario *sc, const char *arg)
{
	if (!arg) {
		return EXIT_OK;
	}
	struct mp_hardware *hw[2] = {&sc->prefill.hardware, &sc->decode.hardware};
	if (strcmp(arg, "none") == 0) {
		for (int i = 0; i < 2; i++) {
			drop_table(hw[i]);
			hw[i]->kernels_none = true;
		}
		return EXIT_OK;
	}
	/* read once (the file may be a pipe), then copied to the other phase */
	struct mp_kernel_table t = {0};
	struct mp_diags d;
	mp_diags_init(&d);
	int rc = mp_load_kernel_table(arg, &t, &d);
	for (size_t k = 0; k < d.count; k++) {
		mp_diag_print(&d.items[k], stderr);
	}
	bool reported = d.count > 0;
	mp_diags_finish(&d);
	if (rc != 0) {
		if (!reported) {
			cli_error("%s: %s: %s", cmd, arg, mp_strerror(rc));
		}
		return EXIT_INPUT;
	}
	for (int i = 0; i < 2; i++) {
		drop_table(hw[i]);
		hw[i]->kernels_none = false;
		hw[i]->kernels_path = strdup(arg);
	}
	/* prefill gets a copy, decode the table itself */
	bool ok = hw[0]->kernels_path && hw[1]->kernels_path && copy_table(&t, &hw[0]->kernels);
	if (!ok) {
		mp_kernel_table_finish(&t);
		cli_error("%s: %s", cmd, mp_strerror(MP_ENOMEM));
		return EXIT_INPUT;
	}
	hw[1]->kernels = t;
	return EXIT_OK;
}

bool cli_kernels_arg_ok(const char *cmd, const char *arg)
{
	if (arg && arg[0] == '\0') {
		cli_usage(cmd, "--kernels: expected a kernel table file or none, got ''");
		return false;
	}
	return true;
}
