/* Where a step's kernel efficiencies came from (issue 23 item 1), as the
 * text outputs write it: a kernel table, or the scalar factors and why. */
#include "kernel-note.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "moeplan/diag.h"
#include "moeplan/loader.h"

void cli_kernel_note(FILE *f, const char *indent, const struct mp_step *s,
		     const struct mp_hardware *hw, bool forced_scalar)
{
	if (s->kernel_table) {
		fprintf(f, "%skernel efficiency: table %s (terms it has no row for keep the scalar factors)\n",
			indent, s->kernel_table_name ? s->kernel_table_name : "(given)");
	} else if (forced_scalar) {
		fprintf(f, "%skernel efficiency: scalar factors (--kernels none)\n", indent);
	} else {
		fprintf(f, "%skernel efficiency: scalar factors: no kernel table for %s (its hardware file "
			   "names none: `kernels:`, moeplan-formats(5))\n",
			indent, hw && hw->name ? hw->name : "this GPU");
	}
}

const char *cli_kernel_source(const struct mp_step *s, bool forced_scalar)
{
	if (s->kernel_table) {
		return s->kernel_table_name ? s->kernel_table_name : "(given)";
	}
	return forced_scalar ? "scalar factors (--kernels none)" : "scalar factors (no kernel table for this GPU)";
}

const char *cli_kernel_source_hw(const struct mp_hardware *hw, bool forced_scalar)
{
	if (hw->kernels.n_rows > 0) {
		return hw->kernels_path ? hw->kernels_path : "(given)";
	}
	return forced_scalar ? "scalar factors (--kernels none)" : "scalar factors (no kernel table for this GPU)";
}

int cli_scenario_kernels(const char *cmd, struct mp_scenario *sc, const char *arg)
{
	if (!arg) {
		return EXIT_OK;
	}
	struct mp_phase_spec *ph[2] = {&sc->prefill, &sc->decode};
	for (int i = 0; i < 2; i++) {
		struct mp_hardware *hw = &ph[i]->hardware;
		free(hw->kernels_path);
		hw->kernels_path = NULL;
		mp_kernel_table_finish(&hw->kernels);
		hw->kernels = (struct mp_kernel_table){0};
		if (strcmp(arg, "none") == 0) {
			continue;
		}
		struct mp_diags d;
		mp_diags_init(&d);
		int rc = mp_load_kernel_table(arg, &hw->kernels, &d);
		for (size_t k = 0; k < d.count; k++) {
			mp_diag_print(&d.items[k], stderr);
		}
		mp_diags_finish(&d);
		if (rc != 0) {
			if (d.count == 0) {
				cli_error("%s: %s: %s", cmd, arg, mp_strerror(rc));
			}
			return EXIT_INPUT;
		}
		hw->kernels_path = strdup(arg);
		if (!hw->kernels_path) {
			cli_error("%s: %s", cmd, mp_strerror(MP_ENOMEM));
			return EXIT_INPUT;
		}
	}
	return EXIT_OK;
}
