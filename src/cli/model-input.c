/* The per-model commands' inputs (roofline, fit, step, comm): a model and
 * a hardware file, the tokens per request and an EP width with its slots
 * (cli.h). */
#include "cli.h"

#include "moeplan/loader.h"
#include "moeplan/scenario.h"
#include "moeplan/widths.h"

int cli_load_model_hardware(const char *model_path, const char *hw_path, struct mp_model *model,
			    struct mp_hardware *hw)
{
	struct mp_diags diags;
	mp_diags_init(&diags);
	int rc = mp_load_model(model_path, model, &diags);
	if (rc == 0) {
		rc = mp_load_hardware(hw_path, hw, &diags);
	}
	cli_print_diags(&diags);
	if (rc && diags.count == 0) {
		cli_error("%s: %s", model_path, mp_strerror(rc));
	}
	mp_diags_finish(&diags);
	return rc ? EXIT_INPUT : EXIT_OK;
}

void cli_warn_step_gaps(const char *model_path, const struct mp_model *model)
{
	model_path = model_path ? model_path : "model"; /* an inline model has no file */
	/* The step model counts attention FLOP from the head count and the
	 * LM head from the vocabulary; without them those terms are KV reads
	 * only, and the user should know (a Hugging Face config.json gives
	 * both). */
	if (model->attention.heads == 0) {
		fprintf(stderr, "%s: warning: attention.heads is not given: the step counts no "
				"attention FLOP, only its KV-cache reads\n",
			model_path);
	}
	if (model->vocab_size == 0) {
		fprintf(stderr, "%s: warning: vocab_size is not given: the step has no LM-head term "
				"(its weights stay in dense_weight_bytes)\n",
			model_path);
	}
}

double cli_default_tokens_per_request(const struct mp_model *model)
{
	/* One verified token plus one drafted per drafter stage (the
	 * article: three drafted tokens, four tokens per request). */
	return 1.0 + (double)model->drafter.moe_stages;
}

int cli_width(const char *cmd, const struct mp_model *model, uint32_t ep, uint32_t slots,
	      uint32_t drafter_slots, uint32_t min_redundant, struct mp_ep_width *out)
{
	/* The scenario's default slot rule (scenario.h): E + ceil(E / 8)
	 * redundant slots (none when EP >= E), rounded up to a multiple of
	 * EP, for the model and the drafter; then the validity rules `plan`
	 * applies (mp_widths_check). */
	struct mp_phase_spec rule = {.slot_rule = MP_SLOTS_MIN_REDUNDANT, .min_redundant = min_redundant};
	struct mp_ep_width w = {
		.ep = ep,
		.slots = slots ? slots : mp_phase_slots(&rule, model->routed_experts, ep),
		.drafter_slots = drafter_slots ? drafter_slots : mp_widths_drafter_slots(&rule, model, ep),
	};
	char why[256];
	if (mp_widths_check(model, &w, why, sizeof(why)) != 0) {
		cli_usage(cmd, "--ep %u: %s", ep, why);
		return EXIT_USAGE;
	}
	*out = w;
	return EXIT_OK;
}
