/* moeplan plan: the summary a person reads on a terminal (issue 16 item 8):
 * per phase the width, slots, HBM, the routed-expert step figures and the
 * placement's quality. The full plan is the YAML/JSON document (-o,
 * --format yaml|json), which pipes and files keep getting. */
#include "cli.h"
#include "kernel-note.h"

#include <math.h>
#include <string.h>

#include "moeplan/placement.h"
#include "moeplan/plan.h"
#include "moeplan/scenario.h"
#include "moeplan/step.h"
#include "moeplan/trust.h"

/* The placement's quality over its MoE layers. */
struct quality {
	uint32_t optimal, feasible, stopped;
	double worst_gap;
	uint32_t worst_gap_layer;
	double worst_ratio; /* busiest / mean, worst layer */
	uint32_t worst_ratio_layer;
};

static void placement_quality(const struct mp_placement *p, struct quality *q)
{
	*q = (struct quality){0};
	for (uint32_t l = 0; l < p->n_layers; l++) {
		const struct mp_layer_placement *lp = &p->layers[l];
		q->optimal += lp->status == MP_PLACE_OPTIMAL;
		q->feasible += lp->status == MP_PLACE_FEASIBLE;
		q->stopped += lp->status == MP_PLACE_TIME_LIMIT;
		if (lp->gap > q->worst_gap) {
			q->worst_gap = lp->gap;
			q->worst_gap_layer = l;
		}
		double ratio = lp->mean_load > 0 ? lp->max_load / lp->mean_load : 1.0;
		if (ratio > q->worst_ratio) {
			q->worst_ratio = ratio;
			q->worst_ratio_layer = l;
		}
	}
}

/* "0.902 ms", "64.3 ms", "1.52 s". */
static void seconds(double s, char *buf, size_t size)
{
	if (s < 1.0) {
		snprintf(buf, size, "%.3g ms", s * 1e3);
	} else {
		snprintf(buf, size, "%.3g s", s);
	}
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* One row: a label and the two phases' cells. */
static void row(FILE *f, const char *label, const char *prefill, const char *decode)
{
	fprintf(f, "  %-26s %-34s %s\n", label, prefill, decode);
}

struct cells {
	char v[2][96];
};

/* The measured error on published cases of the step rows above
 * (trust.h): step time, TTFT / TPOT, tokens/s per GPU. */
static void trust_rows(FILE *f, const struct mp_phase_plan *ph[2])
{
	static const enum mp_trust_kind kinds[3][2] = {
		{MP_TRUST_STEP_TIME, MP_TRUST_STEP_TIME},
		{MP_TRUST_TTFT, MP_TRUST_TPOT},
		{MP_TRUST_PREFILL_TPS_GPU, MP_TRUST_DECODE_TPS_GPU},
	};
	static const char *const labels[3] = {"  error vs published: step", "  error: TTFT / TPOT",
					      "  error: tokens/s per GPU"};
	struct cells c;
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < 2; i++) {
			if (ph[i]->has_step) {
				mp_trust_short(kinds[k][i], c.v[i], sizeof(c.v[i]));
			} else {
				snprintf(c.v[i], sizeof(c.v[i]), "-");
			}
		}
		row(f, labels[k], c.v[0], c.v[1]);
	}
}

static void phase_cells(const struct mp_phase_plan *ph[2], const struct mp_phase_spec *spec[2],
			uint32_t experts, FILE *f)
{
	struct cells c;
	for (int i = 0; i < 2; i++) {
		uint32_t gpus = spec[i]->gpus ? spec[i]->gpus : spec[i]->hardware.scale_up_domain_gpus;
		snprintf(c.v[i], sizeof(c.v[i]), "EP%u (of %u %s)", ph[i]->ep, gpus,
			 plural(gpus, "GPU", "GPUs"));
	}
	row(f, "width", c.v[0], c.v[1]);
	for (int i = 0; i < 2; i++) {
		uint32_t r = ph[i]->slots - experts;
		snprintf(c.v[i], sizeof(c.v[i]), "%u (%u per GPU, %u redundant)", ph[i]->slots,
			 ph[i]->slots_per_gpu, r);
	}
	row(f, "slots per MoE layer", c.v[0], c.v[1]);
	for (int i = 0; i < 2; i++) {
		const struct mp_capacity *h = &ph[i]->hbm;
		snprintf(c.v[i], sizeof(c.v[i]), "%.1f of %.1f GB (%.1f GB free)",
			 (double)h->used_bytes * 1e-9, (double)h->capacity_bytes * 1e-9,
			 (double)h->free_bytes * 1e-9);
	}
	row(f, "HBM per GPU", c.v[0], c.v[1]);
	for (int i = 0; i < 2; i++) {
		const struct mp_capacity *h = &ph[i]->hbm;
		snprintf(c.v[i], sizeof(c.v[i]), "%.1f / %.1f / %.1f GB", (double)h->weights_bytes * 1e-9,
			 (double)h->kv_bytes * 1e-9,
			 (double)(h->buffer_bytes + h->workspace_bytes + h->reserve_bytes) * 1e-9);
	}
	row(f, "  weights / KV / other", c.v[0], c.v[1]);
	for (int i = 0; i < 2; i++) {
		snprintf(c.v[i], sizeof(c.v[i]), "%.0f", ph[i]->tokens_per_gpu);
	}
	row(f, "tokens per GPU per step", c.v[0], c.v[1]);
	for (int i = 0; i < 2; i++) {
		const struct mp_roofline_part *m = &ph[i]->roofline.main;
		snprintf(c.v[i], sizeof(c.v[i]), "%.1f (ridge %.0f: %s-bound)", m->tokens_per_expert,
			 m->ridge_tokens, m->compute_bound ? "compute" : "memory");
	}
	row(f, "tokens per expert", c.v[0], c.v[1]);
	/* The whole step (step.h: attention, experts, dispatch/combine and
	 * what overlap hides), when the plan carries it. */
	if (ph[0]->has_step || ph[1]->has_step) {
		for (int i = 0; i < 2; i++) {
			const struct mp_step *st = &ph[i]->step;
			char t[32];
			seconds(st->step_time_s, t, sizeof(t));
			if (!ph[i]->has_step) {
				snprintf(c.v[i], sizeof(c.v[i]), "-");
			} else if (st->tpot_s > 0) {
				char tp[32];
				seconds(st->tpot_s, tp, sizeof(tp));
				snprintf(c.v[i], sizeof(c.v[i]), "%s (TPOT %s)", t, tp);
			} else if (st->ttft_s > 0) {
				char tf[32];
				seconds(st->ttft_s, tf, sizeof(tf));
				snprintf(c.v[i], sizeof(c.v[i]), "%s (TTFT %s)", t, tf);
			} else {
				snprintf(c.v[i], sizeof(c.v[i]), "%s", t);
			}
		}
		row(f, "step time", c.v[0], c.v[1]);
		for (int i = 0; i < 2; i++) {
			const struct mp_step *st = &ph[i]->step;
			snprintf(c.v[i], sizeof(c.v[i]), ph[i]->has_step ? "%.4g %s tokens/s" : "-",
				 st->tokens_per_s_per_gpu, i == 0 ? "input" : "output");
		}
		row(f, "  per GPU", c.v[0], c.v[1]);
		trust_rows(f, ph);
	}
	/* The routed experts alone. With the step: its routed term (the
	 * touched slots, at the busiest GPU), so it is part of the step time
	 * above; the roofline figure charges every resident expert and is
	 * labelled so. */
	bool any_step = ph[0]->has_step || ph[1]->has_step;
	if (any_step) {
		for (int i = 0; i < 2; i++) {
			char t[32];
			seconds(ph[i]->step.terms[MP_TERM_ROUTED].time_s, t, sizeof(t));
			snprintf(c.v[i], sizeof(c.v[i]), ph[i]->has_step ? "%s (step, touched)" : "-", t);
		}
		row(f, "routed-expert time/step", c.v[0], c.v[1]);
	}
	for (int i = 0; i < 2; i++) {
		char t[32];
		seconds(ph[i]->roofline.time_s, t, sizeof(t));
		snprintf(c.v[i], sizeof(c.v[i]), "%s", t);
	}
	row(f, any_step ? "  roofline, all resident" : "routed-expert time/step", c.v[0], c.v[1]);
	for (int i = 0; i < 2; i++) {
		char t[32];
		seconds(ph[i]->step_expert_s, t, sizeof(t));
		snprintf(c.v[i], sizeof(c.v[i]), "%s (busiest GPU x%.3f)", t, ph[i]->busiest_factor);
	}
	row(f, any_step ? "    at the busiest GPU" : "  at the busiest GPU", c.v[0], c.v[1]);
}

static void quality_cells(const struct mp_phase_plan *ph[2], const uint32_t *layer_ids, FILE *f)
{
	struct cells c;
	struct quality q[2];
	for (int i = 0; i < 2; i++) {
		placement_quality(&ph[i]->placement, &q[i]);
		uint32_t n = ph[i]->placement.n_layers;
		snprintf(c.v[i], sizeof(c.v[i]), "%u of %u %s optimal%s", q[i].optimal, n,
			 plural(n, "layer", "layers"), q[i].stopped ? "," : "");
		if (q[i].stopped) {
			size_t len = strlen(c.v[i]);
			snprintf(c.v[i] + len, sizeof(c.v[i]) - len, " %u at the time limit", q[i].stopped);
		}
	}
	row(f, "placement", c.v[0], c.v[1]);
	for (int i = 0; i < 2; i++) {
		if (q[i].worst_gap > 0.0) {
			snprintf(c.v[i], sizeof(c.v[i]), "%.3g%% (layer %u)", q[i].worst_gap * 100.0,
				 layer_ids ? layer_ids[q[i].worst_gap_layer] : q[i].worst_gap_layer);
		} else {
			snprintf(c.v[i], sizeof(c.v[i]), "0 (every layer at its bound)");
		}
	}
	row(f, "  worst gap to the bound", c.v[0], c.v[1]);
	for (int i = 0; i < 2; i++) {
		snprintf(c.v[i], sizeof(c.v[i]), "%.3f (layer %u)", q[i].worst_ratio,
			 layer_ids ? layer_ids[q[i].worst_ratio_layer] : q[i].worst_ratio_layer);
	}
	row(f, "  busiest / mean load", c.v[0], c.v[1]);
	/* Issue 24: under another engine's rule the loads above are that
	 * rule's; say which, and the mean over layers. */
	if (ph[0]->dispatch.rule != MP_DISPATCH_EVEN || ph[1]->dispatch.rule != MP_DISPATCH_EVEN) {
		for (int i = 0; i < 2; i++) {
			const struct mp_dispatch *d = &ph[i]->dispatch;
			double worst, mean;
			mp_phase_plan_engine_balance(ph[i], &worst, &mean);
			snprintf(c.v[i], sizeof(c.v[i]), "%s%s%s: %.3f (mean %.3f)",
				 mp_dispatch_rule_name(d->rule), d->rule == MP_DISPATCH_SGLANG ? " " : "",
				 d->rule == MP_DISPATCH_SGLANG ? mp_dispatch_algorithm_name(d->algorithm) : "",
				 worst, mean);
		}
		row(f, "    under the dispatch of", c.v[0], c.v[1]);
	}
}

int cli_plan_summary(void *user, FILE *f)
{
	const struct cli_plan_summary_input *in = user;
	const struct mp_plan *plan = in->plan;
	const struct mp_scenario *sc = in->scenario;
	const struct mp_model *m = &sc->model;
	fprintf(f, "%s: %s, %u routed %s (top-%u), %u MoE %s\n", sc->name ? sc->name : "plan",
		m->name ? m->name : "model", m->routed_experts, plural(m->routed_experts, "expert", "experts"),
		m->top_k, m->moe_layers, plural(m->moe_layers, "layer", "layers"));
	if (sc->engine.name) {
		char modes[64];
		mp_engine_overlaps_text(&sc->engine, modes, sizeof(modes));
		fprintf(f, "engine %s: dispatch %s, overlap %s, DeepEP %s prefill / %s decode\n",
			sc->engine.name, (const char *const[]){"even", "sglang", "vllm"}[sc->engine.dispatch],
			modes, mp_step_kernel_name(mp_engine_kernel(&sc->engine, true)),
			mp_step_kernel_name(mp_engine_kernel(&sc->engine, false)));
	}
	const struct mp_phase_plan *ph[2] = {&plan->prefill, &plan->decode};
	const struct mp_phase_spec *spec[2] = {&sc->prefill, &sc->decode};
	fprintf(f, "\n");
	row(f, "", "prefill", "decode");
	row(f, "hardware", sc->prefill.hardware.name ? sc->prefill.hardware.name : "",
	    sc->decode.hardware.name ? sc->decode.hardware.name : "");
	char ka[256], kb[256];
	row(f, "kernel efficiency", cli_kernel_source(&plan->prefill.step, &sc->prefill.hardware, ka, sizeof(ka)),
	    cli_kernel_source(&plan->decode.step, &sc->decode.hardware, kb, sizeof(kb)));
	phase_cells(ph, spec, m->routed_experts, f);
	/* Layers by the model's numbering, as the plan's placement.layers[]. */
	quality_cells(ph, plan->loads.layer_ids, f);
	fprintf(f, "\nWhy these widths:\n");
	for (int i = 0; i < 2; i++) {
		const struct mp_widths *w = &ph[i]->widths;
		if (w->has_choice) {
			fprintf(f, "  %s EP%u: %s\n", ph[i]->phase, ph[i]->ep, w->items[w->chosen].reason);
		}
	}
	fprintf(f, "\nThis is a summary. The full plan (every width considered, every slot of every layer):\n"
		   "  moeplan plan %s -o plan.yaml    (or --format yaml|json to print it)\n",
		in->path);
	return ferror(f) ? EXIT_INPUT : EXIT_OK;
}
