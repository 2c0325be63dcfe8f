/* The measured error on published cases beside printed figures (trust.h),
 * as the text outputs write it. */
#ifndef MOEPLAN_CLI_TRUST_NOTE_H
#define MOEPLAN_CLI_TRUST_NOTE_H

#include <stdio.h>

#include "moeplan/trust.h"

/* One line per kind: "<indent>measured error, <kind>: <mp_trust_text>". */
void cli_trust_lines(FILE *f, const char *indent, const enum mp_trust_kind *kinds, int n);

/* The lines for a phase's headline figures: step time, then TPOT, output
 * tokens/s per GPU and per user (decode) or TTFT and input tokens/s per
 * GPU (prefill). */
void cli_trust_phase(FILE *f, const char *indent, int decode);

/* The same as one Markdown paragraph (the reports): "Measured error of
 * these figures on published cases (...): step time -42%..-34%, ...". */
void cli_trust_markdown(FILE *f, int decode);

#endif
