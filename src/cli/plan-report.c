/* moeplan plan --svg / --report: the pictures of a plan and a one-page
 * Markdown summary of its decisions (cli.h). Everything shown is read from
 * the plan and the scenario, the width table from the plan's own ranking. */
#include "cli.h"
#include "kernel-note.h"
#include "trust-note.h"

#include <errno.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/plan.h"
#include "moeplan/plots.h"
#include "moeplan/widths.h"

/* The phase's spec and plan. */
static const struct mp_phase_spec *phase_spec(const struct mp_scenario *sc, bool decode)
{
	return decode ? &sc->decode : &sc->prefill;
}

static const struct mp_phase_plan *phase_plan(const struct mp_plan *plan, bool decode)
{
	return decode ? &plan->decode : &plan->prefill;
}

int cli_plan_heatmap(const char *path, const struct mp_plan *plan, const struct mp_scenario *sc,
		     bool decode, struct cli_heatmap_stats *stats)
{
	const struct mp_phase_plan *ph = phase_plan(plan, decode);
	char title[256], after[160], value[96];
	snprintf(title, sizeof(title), "%s %s: load per GPU per MoE layer, EP%u on %s",
		 sc->model.name ? sc->model.name : "model", ph->phase, ph->ep,
		 phase_spec(sc, decode)->hardware.name ? phase_spec(sc, decode)->hardware.name : "GPUs");
	snprintf(after, sizeof(after), "after: planned, %u slots per GPU (%u redundant)",
		 ph->slots_per_gpu, ph->redundant);
	double visits = ph->tokens_per_gpu * sc->model.top_k;
	snprintf(value, sizeof(value), "token visits per GPU per step (mean %.0f)", visits);
	struct cli_heatmap_spec spec = {
		.path = path,
		.title = title,
		.after = &ph->placement,
		.after_label = after,
		.loads = &plan->loads,
		.visits_per_gpu = visits,
		.value_label = value,
	};
	return cli_plot_heatmap(&spec, stats);
}

/* The widths the second roofline panel shows: the feasible candidates of
 * decode (chosen, outranked or below the ridge), the widest six. */
static size_t curve_widths(const struct mp_widths *w, struct mp_ep_width *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = w->count; i-- > 0 && n < cap;) {
		enum mp_width_verdict v = w->items[i].verdict;
		if (w->items[i].evaluated &&
		    (v == MP_WIDTH_CHOSEN || v == MP_WIDTH_OUTRANKED || v == MP_WIDTH_BELOW_RIDGE)) {
			out[n++] = w->items[i].width;
		}
	}
	/* Ascending, like the candidates. */
	for (size_t i = 0; i < n / 2; i++) {
		struct mp_ep_width t = out[i];
		out[i] = out[n - 1 - i];
		out[n - 1 - i] = t;
	}
	return n;
}

static int phase_roofline(const char *path, const struct mp_plan *plan,
			  const struct mp_scenario *sc, bool decode, const struct mp_widths *widths)
{
	const struct mp_phase_plan *ph = phase_plan(plan, decode);
	const struct mp_phase_spec *spec = phase_spec(sc, decode);
	char label[128];
	if (decode) {
		snprintf(label, sizeof(label), "decode EP%u, %.4g req/GPU", ph->ep,
			 spec->tokens_per_request > 0 ? ph->tokens_per_gpu / spec->tokens_per_request
						      : ph->tokens_per_gpu);
	} else {
		snprintf(label, sizeof(label), "prefill EP%u, %.0f tokens/GPU", ph->ep, ph->tokens_per_gpu);
	}
	struct cli_roofline_op op = {.label = label, .width = ph->roofline.width,
				     .tokens_per_gpu = ph->tokens_per_gpu};
	struct mp_ep_width curves[6];
	size_t n_curves = decode ? curve_widths(widths, curves, 6) : 0;
	char title[256];
	snprintf(title, sizeof(title), "%s %s on %s", sc->model.name ? sc->model.name : "model",
		 ph->phase, spec->hardware.name ? spec->hardware.name : "GPU");
	struct cli_roofline_spec rs = {
		.path = path,
		.title = title,
		.model = &sc->model,
		.hw = &spec->hardware,
		.ops = &op,
		.n_ops = 1,
		.widths = curves,
		.n_widths = n_curves,
		.tokens_per_request = decode ? spec->tokens_per_request : 1.0,
	};
	return cli_plot_roofline(&rs);
}

/* ---- the Markdown ---- */

struct report {
	const struct mp_plan *plan;
	const struct mp_scenario *sc;
	const char *scenario_path;
	const struct mp_widths *widths[2];     /* prefill, decode: the plan's own ranking */
	struct cli_heatmap_stats heat[2];
	char pictures[6][1024];                /* file names relative to the report */
};

/* A table cell: '|' would end the cell. */
static void cell(FILE *f, const char *text)
{
	for (const char *p = text; *p; p++) {
		if (*p == '|') {
			fputc('\\', f);
		}
		fputc(*p, f);
	}
}

static const char *si(double value, const char *unit, char *buf, size_t size)
{
	cli_si(value, unit, buf, size);
	return buf;
}

/* Seconds as "0.902 ms" or "64.2 ms" or "1.5 s". */
static const char *seconds(double s, char *buf, size_t size)
{
	if (s < 1.0) {
		snprintf(buf, size, "%.3g ms", s * 1e3);
	} else {
		snprintf(buf, size, "%.3g s", s);
	}
	return buf;
}

static void write_traffic(FILE *f, const struct mp_scenario *sc, const struct mp_plan *plan)
{
	const struct mp_traffic *t = &sc->traffic;
	switch (t->kind) {
	case MP_TRAFFIC_UNIFORM:
		fprintf(f, "uniform popularity");
		break;
	case MP_TRAFFIC_ZIPF:
		fprintf(f, "Zipf popularity, exponent s = %g%s", t->zipf_s,
			t->permute ? ", hottest expert permuted per layer" : "");
		break;
	case MP_TRAFFIC_HOT:
		fprintf(f, "%g%% of the experts carry %g%% of the load", 100.0 * t->hot_experts,
			100.0 * t->hot_load);
		break;
	case MP_TRAFFIC_OBSERVED:
		fprintf(f, "observed counts");
		break;
	}
	if (plan->loads.source && plan->loads.source[0]) {
		fprintf(f, " (");
		cell(f, plan->loads.source);
		fprintf(f, ")");
	}
}

static void write_overview(FILE *f, const struct report *r)
{
	const struct mp_plan *plan = r->plan;
	const struct mp_scenario *sc = r->sc;
	const struct mp_phase_plan *ph[2] = {&plan->prefill, &plan->decode};
	const struct mp_phase_spec *sp[2] = {&sc->prefill, &sc->decode};
	char a[32], b[32];
	fprintf(f, "| | prefill | decode |\n|---|---|---|\n");
	fprintf(f, "| hardware | %s | %s |\n", sp[0]->hardware.name ? sp[0]->hardware.name : "",
		sp[1]->hardware.name ? sp[1]->hardware.name : "");
	fprintf(f, "| EP width | **%u** | **%u** |\n", ph[0]->ep, ph[1]->ep);
	fprintf(f, "| routed slots per layer (per GPU) | %u (%u) | %u (%u) |\n", ph[0]->slots,
		ph[0]->slots_per_gpu, ph[1]->slots, ph[1]->slots_per_gpu);
	fprintf(f, "| redundant slots | %u | %u |\n", ph[0]->redundant, ph[1]->redundant);
	fprintf(f, "| tokens per GPU per step, b | %.6g | %.6g |\n", ph[0]->tokens_per_gpu,
		ph[1]->tokens_per_gpu);
	fprintf(f, "| tokens per expert t (ridge t\\*) | %.1f (%.1f) | %.1f (%.1f) |\n",
		ph[0]->roofline.main.tokens_per_expert, ph[0]->roofline.main.ridge_tokens,
		ph[1]->roofline.main.tokens_per_expert, ph[1]->roofline.main.ridge_tokens);
	fprintf(f, "| intensity (ridge), FLOP/B | %.0f (%.0f) | %.0f (%.0f) |\n",
		ph[0]->roofline.main.intensity, ph[0]->roofline.ridge, ph[1]->roofline.main.intensity,
		ph[1]->roofline.ridge);
	fprintf(f, "| routed experts are | %s-bound | %s-bound |\n",
		ph[0]->roofline.main.compute_bound ? "compute" : "memory",
		ph[1]->roofline.main.compute_bound ? "compute" : "memory");
	fprintf(f, "| routed-expert time per step, balanced | %s | %s |\n",
		seconds(ph[0]->roofline.time_s, a, sizeof(a)), seconds(ph[1]->roofline.time_s, b, sizeof(b)));
	fprintf(f, "| busiest-GPU factor (Monte Carlo, finite batch) | %.3f | %.3f |\n",
		ph[0]->busiest_factor, ph[1]->busiest_factor);
	fprintf(f, "| predicted routed-expert time per step | %s | %s |\n\n",
		seconds(ph[0]->step_expert_s, a, sizeof(a)), seconds(ph[1]->step_expert_s, b, sizeof(b)));
}

static void write_widths(FILE *f, const struct report *r, bool decode)
{
	const struct mp_widths *w = r->widths[decode];
	const struct mp_phase_plan *ph = phase_plan(r->plan, decode);
	char a[32], b[32];
	fprintf(f, "**%s** (chose EP%u):\n\n", decode ? "Decode" : "Prefill", ph->ep);
	fprintf(f, "| EP | slots | t | expert time | HBM free | verdict | why |\n"
		   "|---:|---:|---:|---:|---:|---|---|\n");
	for (size_t i = 0; i < w->count; i++) {
		const struct mp_width_candidate *c = &w->items[i];
		bool chosen = w->has_choice && i == w->chosen;
		fprintf(f, "| %s%u%s | %u | ", chosen ? "**" : "", c->width.ep, chosen ? "**" : "",
			c->width.slots);
		if (c->evaluated) {
			fprintf(f, "%.1f | %s | %s | ", c->tokens_per_expert,
				seconds(c->expert_time_s, a, sizeof(a)),
				si((double)c->hbm.free_bytes, "B", b, sizeof(b)));
		} else {
			fprintf(f, "- | - | - | ");
		}
		fprintf(f, "%s | ", mp_width_verdict_name(c->verdict));
		cell(f, c->reason);
		fprintf(f, " |\n");
	}
	fprintf(f, "\n");
	const struct mp_hardware *hw = decode ? &r->sc->decode.hardware : &r->sc->prefill.hardware;
	char ks[256];
	fprintf(f, "Kernel efficiency of the chosen step: %s.\n\n",
		cli_kernel_source(&ph->step, hw, ks, sizeof(ks)));
	cli_trust_markdown(f, decode);
}

static void write_hbm(FILE *f, const struct report *r)
{
	const struct mp_capacity *c[2] = {&r->plan->prefill.hbm, &r->plan->decode.hbm};
	static const char *const names[] = {
		"routed experts (replicas included)", "shared experts", "dense weights (attention, embeddings)",
		"drafter", "KV cache", "dispatch/combine buffers", "MoE workspace", "runtime reserve",
		"**used**", "capacity", "**free**",
	};
	char a[32], b[32];
	fprintf(f, "| per GPU | prefill | decode |\n|---|---:|---:|\n");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		double v[2];
		for (int p = 0; p < 2; p++) {
			const uint64_t fields[] = {
				c[p]->routed_bytes, c[p]->shared_bytes, c[p]->dense_bytes, c[p]->drafter_bytes,
				c[p]->kv_bytes, c[p]->buffer_bytes, c[p]->workspace_bytes, c[p]->reserve_bytes,
				c[p]->used_bytes, c[p]->capacity_bytes, 0,
			};
			v[p] = i == 10 ? (double)c[p]->free_bytes : (double)fields[i];
		}
		fprintf(f, "| %s | %s | %s |\n", names[i], si(v[0], "B", a, sizeof(a)),
			si(v[1], "B", b, sizeof(b)));
	}
	fprintf(f, "\n");
}

/* Issue 24: the engine dispatch the placement was made for, when not the
 * even split, and the busiest/mean under that rule (the placement's own
 * max_load / mean_load; the rows above split every replica 1/r). */
static void write_engine(FILE *f, const struct report *r)
{
	const struct mp_phase_plan *ph[2] = {&r->plan->prefill, &r->plan->decode};
	if (ph[0]->dispatch.rule == MP_DISPATCH_EVEN && ph[1]->dispatch.rule == MP_DISPATCH_EVEN) {
		return;
	}
	fprintf(f, "Placed for the engine's own dispatch (`--engine`), not the even split:\n\n"
		   "| | prefill | decode |\n|---|---|---|\n| engine dispatch (GPUs per node) |");
	for (int i = 0; i < 2; i++) {
		const struct mp_dispatch *d = &ph[i]->dispatch;
		fprintf(f, " %s%s%s (%u) |", mp_dispatch_rule_name(d->rule),
			d->rule == MP_DISPATCH_SGLANG ? ", --ep-dispatch-algorithm " : "",
			d->rule == MP_DISPATCH_SGLANG ? mp_dispatch_algorithm_name(d->algorithm) : "",
			d->gpus_per_node ? d->gpus_per_node : ph[i]->ep);
	}
	fprintf(f, "\n| busiest/mean under it: worst (mean over layers) |");
	for (int i = 0; i < 2; i++) {
		double worst, mean;
		mp_phase_plan_engine_balance(ph[i], &worst, &mean);
		fprintf(f, " %.3f (%.3f) |", worst, mean);
	}
	fprintf(f, "\n\n");
}

/* Per phase: how the layers' placements ended and how far from the bound. */
static void write_bounds(FILE *f, const struct report *r)
{
	fprintf(f, "| | prefill | decode |\n|---|---|---|\n");
	const struct mp_placement *pl[2] = {&r->plan->prefill.placement, &r->plan->decode.placement};
	uint32_t n_status[2][3] = {{0}};
	double worst_gap[2] = {0}, worst_ratio[2] = {0};
	uint32_t gap_layer[2] = {0};
	/* Layers by the model's numbering, as the plan's placement.layers[]. */
	const uint32_t *ids = r->plan->loads.layer_ids;
	for (int p = 0; p < 2; p++) {
		for (uint32_t l = 0; l < pl[p]->n_layers; l++) {
			const struct mp_layer_placement *lp = &pl[p]->layers[l];
			if ((unsigned)lp->status < 3) {
				n_status[p][lp->status]++;
			}
			if (lp->gap > worst_gap[p]) {
				worst_gap[p] = lp->gap;
				gap_layer[p] = l;
			}
			if (lp->lower_bound > 0) {
				worst_ratio[p] = fmax(worst_ratio[p], lp->max_load / lp->lower_bound);
			}
		}
	}
	fprintf(f, "| MoE layers placed | %u | %u |\n", pl[0]->n_layers, pl[1]->n_layers);
	fprintf(f, "| optimal / feasible / time limit | %u / %u / %u | %u / %u / %u |\n",
		n_status[0][MP_PLACE_OPTIMAL], n_status[0][MP_PLACE_FEASIBLE],
		n_status[0][MP_PLACE_TIME_LIMIT], n_status[1][MP_PLACE_OPTIMAL],
		n_status[1][MP_PLACE_FEASIBLE], n_status[1][MP_PLACE_TIME_LIMIT]);
	fprintf(f, "| worst gap (busiest - bound) / busiest | %.3g%% (layer %u) | %.3g%% (layer %u) |\n",
		100.0 * worst_gap[0], ids ? ids[gap_layer[0]] : gap_layer[0], 100.0 * worst_gap[1],
		ids ? ids[gap_layer[1]] : gap_layer[1]);
	fprintf(f, "| worst busiest / lower bound | %.4f | %.4f |\n", worst_ratio[0], worst_ratio[1]);
	fprintf(f, "| method (first MoE layer) | ");
	cell(f, pl[0]->n_layers && pl[0]->layers[0].method ? pl[0]->layers[0].method : "-");
	fprintf(f, " | ");
	cell(f, pl[1]->n_layers && pl[1]->layers[0].method ? pl[1]->layers[0].method : "-");
	fprintf(f, " |\n");
	fprintf(f, "| busiest/mean, round-robin before: worst (mean over layers) | %.3f (%.3f) | "
		   "%.3f (%.3f) |\n",
		r->heat[0].worst_before, r->heat[0].mean_before, r->heat[1].worst_before,
		r->heat[1].mean_before);
	fprintf(f, "| busiest/mean, planned: worst (mean over layers) | %.3f (%.3f) | %.3f (%.3f) |\n\n",
		r->heat[0].worst_after, r->heat[0].mean_after, r->heat[1].worst_after,
		r->heat[1].mean_after);
	write_engine(f, r);
}

static int write_report(void *user, FILE *f)
{
	const struct report *r = user;
	const struct mp_scenario *sc = r->sc;
	const struct mp_model *m = &sc->model;
	fprintf(f, "# Plan: %s\n\n", sc->name ? sc->name : "scenario");
	fprintf(f, "%s: %u MoE layers of %u routed experts, top-%u; scenario `%s`; loads: ",
		m->name ? m->name : "model", m->moe_layers, m->routed_experts, m->top_k,
		r->scenario_path);
	write_traffic(f, sc, r->plan);
	fprintf(f, ".\n\n");
	write_overview(f, r);

	fprintf(f, "## EP widths: chosen and rejected\n\n"
		   "Each width is judged by the whole serving step (`moeplan step`): decode by output "
		   "tokens/s per GPU at the largest batch that fits and meets slo.tpot (or the "
		   "scenario's batch), prefill by input tokens/s per GPU under slo.ttft; GPUs a width "
		   "leaves idle count against it; within 5%% is a tie, decode ties to more tokens per "
		   "expert, prefill ties to the narrower (t = b k N / slots; the experts are "
		   "compute-bound once t reaches t\\*).\n\n");
	write_widths(f, r, false);
	write_widths(f, r, true);

	fprintf(f, "## HBM per GPU\n\n");
	write_hbm(f, r);

	fprintf(f, "## Placement: bounds, gaps and imbalance\n\n"
		   "The gap is how far the busiest GPU may still be above the best possible "
		   "placement (its proven lower bound). busiest/mean compares the expected load "
		   "of the busiest GPU with the mean, per layer, for the loads above; the Monte "
		   "Carlo factor in the first table adds the spread of a finite batch.\n\n");
	write_bounds(f, r);

	fprintf(f, "## Pictures\n\n");
	static const char *const captions[] = {
		"decode roofline", "decode load per GPU, before and after", "prefill roofline",
		"prefill load per GPU, before and after", "decode step of each width",
		"prefill step of each width",
	};
	for (int i = 0; i < 6; i++) {
		fprintf(f, "![%s](%s)\n\n", captions[i], r->pictures[i]);
	}
	return ferror(f) ? MP_EIO : 0;
}

/* Each evaluated width's serving step as stacked bars (plots.h). */
static int phase_step_bars(const char *path, const struct mp_plan *plan,
			   const struct mp_scenario *sc, bool decode)
{
	const struct mp_phase_plan *ph = phase_plan(plan, decode);
	const struct mp_widths *w = &ph->widths;
	struct mp_plot_step_bar bars[24];
	char labels[24][48], notes[24][160];
	size_t n = 0;
	for (size_t i = 0; i < w->count && n < 24; i++) {
		const struct mp_width_candidate *c = &w->items[i];
		if (!c->evaluated || !c->has_step) {
			continue;
		}
		bool chosen = w->has_choice && i == w->chosen;
		/* The chosen width is drawn with the plan's busiest GPU. */
		const struct mp_step *step = chosen && ph->has_step ? &ph->step : &c->step;
		if (decode) {
			snprintf(labels[n], sizeof(labels[n]), "EP%u, %.0f req/GPU", c->width.ep, c->requests);
		} else {
			snprintf(labels[n], sizeof(labels[n]), "EP%u", c->width.ep);
		}
		/* Per GPU of the phase, as the widths are ranked: GPUs that no
		 * whole group of this width uses count as idle. */
		double pool = c->pool_fraction > 0.0 ? c->pool_fraction : 1.0;
		char idle[48] = "";
		if (pool < 1.0) {
			snprintf(idle, sizeof(idle), " (%.0f%% of the GPUs idle)", 100.0 * (1.0 - pool));
		}
		snprintf(notes[n], sizeof(notes[n]), "%.4g %s tok/s/GPU%s, %s",
			 step->tokens_per_s_per_gpu * pool, decode ? "output" : "input", idle,
			 mp_width_verdict_name(c->verdict));
		bars[n] = (struct mp_plot_step_bar){
			.label = labels[n], .note = notes[n], .step = step, .chosen = chosen,
		};
		n++;
	}
	if (n == 0) {
		return EXIT_OK; /* no width ran the step model: nothing to draw */
	}
	char title[256];
	snprintf(title, sizeof(title), "%s %s: the serving step of each width (%s)",
		 sc->model.name ? sc->model.name : "model", ph->phase,
		 phase_spec(sc, decode)->hardware.name ? phase_spec(sc, decode)->hardware.name : "GPUs");
	struct mp_plot_step_bars plot = {.title = title, .bars = bars, .n_bars = n};
	int rc = mp_plot_step_bars_save(&plot, path);
	if (rc) {
		int err = errno;
		cli_error("%s: cannot %s: %s", path, rc == MP_EIO ? "write" : "draw the picture",
			  cli_write_error(rc, err));
		return EXIT_INPUT;
	}
	return EXIT_OK;
}

bool cli_plan_report_files(const char *report, struct cli_report_files *out)
{
	static const char *const suffix[] = {
		"-decode-roofline.svg", "-decode-heatmap.svg", "-prefill-roofline.svg",
		"-prefill-heatmap.svg", "-decode-step.svg", "-prefill-step.svg",
	};
	return cli_report_files(report, suffix, sizeof(suffix) / sizeof(suffix[0]), out);
}

int cli_plan_report(const char *path, const struct mp_plan *plan, const struct mp_scenario *sc,
		    const char *scenario_path)
{
	struct report r = {.plan = plan, .sc = sc, .scenario_path = scenario_path};
	struct cli_report_files rf;
	int status = EXIT_OK;

	/* STEM.md -> STEM-*.svg next to it; the report links them by name. */
	if (!cli_plan_report_files(path, &rf)) {
		cli_error("%s: path too long", path);
		return EXIT_INPUT;
	}
	char (*files)[1024] = rf.path;
	for (size_t i = 0; i < rf.count; i++) {
		snprintf(r.pictures[i], sizeof(r.pictures[i]), "%s", files[i] + rf.base);
	}

	r.widths[0] = &plan->prefill.widths;
	r.widths[1] = &plan->decode.widths;
	if (status == EXIT_OK) {
		status = phase_roofline(files[0], plan, sc, true, r.widths[1]);
	}
	if (status == EXIT_OK) {
		status = cli_plan_heatmap(files[1], plan, sc, true, &r.heat[1]);
	}
	if (status == EXIT_OK) {
		status = phase_roofline(files[2], plan, sc, false, r.widths[0]);
	}
	if (status == EXIT_OK) {
		status = cli_plan_heatmap(files[3], plan, sc, false, &r.heat[0]);
	}
	if (status == EXIT_OK) {
		status = phase_step_bars(files[4], plan, sc, true);
	}
	if (status == EXIT_OK) {
		status = phase_step_bars(files[5], plan, sc, false);
	}
	if (status == EXIT_OK) {
		int rc = mp_write_atomic(path, write_report, &r);
		if (rc) {
			int err = errno;
			cli_error("%s: cannot write: %s", path, cli_write_error(rc, err));
			status = EXIT_INPUT;
		}
	}
	return status;
}
