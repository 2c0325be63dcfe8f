/* Where a step's kernel efficiencies came from (issue 23), as the text
 * outputs and reports write it. */
#ifndef MOEPLAN_CLI_KERNEL_NOTE_H
#define MOEPLAN_CLI_KERNEL_NOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "moeplan/model.h"
#include "moeplan/scenario.h"
#include "moeplan/step.h"

/* One line: "<indent>kernel efficiency: table FILE (...)", or the scalar
 * factors and why (--kernels none when forced_scalar, else the hardware
 * names no table). hw may be NULL. */
void cli_kernel_note(FILE *f, const char *indent, const struct mp_step *s,
		     const struct mp_hardware *hw, bool forced_scalar);

/* The same in a few words, for a table cell or a report line, into buf;
 * returns buf. hw may be NULL. */
const char *cli_kernel_source(const struct mp_step *s, const struct mp_hardware *hw, char *buf,
			      size_t size);

/* A phase's hardware table as named when it priced some term (priced),
 * else the scalar factors and why, where no single step is at hand (the
 * search); may write buf, returns the text. */
const char *cli_kernel_source_hw(const struct mp_hardware *hw, bool priced, char *buf, size_t size);

/* --kernels '' is a usage error (exit 2, said); true when arg is usable. */
bool cli_kernels_arg_ok(const char *cmd, const char *arg);

/* `--kernels FILE|none` of plan and search: replace both phases' tables
 * (none = the scalar factors). arg NULL = keep the hardware files'.
 * Returns EXIT_OK or EXIT_INPUT (the table's errors printed). */
int cli_scenario_kernels(const char *cmd, struct mp_scenario *sc, const char *arg);

#endif
