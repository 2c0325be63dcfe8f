/* Measured-error lines beside printed figures (trust-note.h). */
#include "trust-note.h"

void cli_trust_lines(FILE *f, const char *indent, const enum mp_trust_kind *kinds, int n)
{
	char t[160];
	for (int i = 0; i < n; i++) {
		fprintf(f, "%smeasured error, %s: %s\n", indent, mp_trust_kind_name(kinds[i]),
			mp_trust_text(kinds[i], t, sizeof(t)));
	}
}

static const enum mp_trust_kind dec[] = {MP_TRUST_STEP_TIME, MP_TRUST_TPOT, MP_TRUST_DECODE_TPS_GPU,
					 MP_TRUST_TPS_USER};
static const enum mp_trust_kind pre[] = {MP_TRUST_STEP_TIME, MP_TRUST_TTFT, MP_TRUST_PREFILL_TPS_GPU};

void cli_trust_phase(FILE *f, const char *indent, int decode)
{
	if (decode) {
		cli_trust_lines(f, indent, dec, 4);
	} else {
		cli_trust_lines(f, indent, pre, 3);
	}
}

void cli_trust_markdown(FILE *f, int decode)
{
	const enum mp_trust_kind *k = decode ? dec : pre;
	int n = decode ? 4 : 3;
	char t[96];
	fprintf(f, "Measured error of these figures on published cases (predicted / published - 1; "
		   "README \"Predicted vs published\"): ");
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s%s %s", i ? "; " : "", mp_trust_kind_name(k[i]), mp_trust_short(k[i], t, sizeof(t)));
	}
	fprintf(f, ".\n\n");
}
