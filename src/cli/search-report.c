/* moeplan search --svg / --report: the Pareto fronts (one series per EP
 * width, the chosen point marked), the pools as a bar, and a one-page
 * Markdown summary (cli.h). Everything shown is read from the result. */
#include "cli.h"
#include "kernel-note.h"
#include "trust-note.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/deploy.h"
#include "moeplan/plots.h"

/* The widths a picture shows: those on the overall front, the chosen and
 * the runner-up's, at most 10 (the legend stays legible). */
static size_t shown_widths(const struct mp_search_phase *ph, uint32_t *out, size_t cap)
{
	size_t n = 0;
	for (size_t wi = 0; wi < ph->n_widths && n < cap; wi++) {
		uint32_t ep = ph->widths[wi].ep;
		bool show = (ph->has_choice && ph->points[ph->chosen].cfg.ep == ep) ||
			    (ph->has_runner_up && ph->points[ph->runner_up].cfg.ep == ep);
		for (size_t k = 0; k < ph->n_front && !show; k++) {
			show = ph->points[ph->front[k]].cfg.ep == ep;
		}
		if (show) {
			out[n++] = ep;
		}
	}
	return n;
}

static double xval(const struct mp_search_point *p)
{
	return p->cfg.phase == MP_PHASE_DECODE ? p->eval.tokens_per_s_per_user : p->eval.ttft_s;
}

int cli_search_front(const char *path, const struct mp_deploy *d, const struct mp_scenario *sc,
		     const struct mp_deploy_options *opts, bool decode)
{
	const struct mp_search_phase *ph = decode ? &d->decode : &d->prefill;
	const struct mp_phase_spec *spec = decode ? &sc->decode : &sc->prefill;
	size_t n = ph->n_points ? ph->n_points : 1;
	double *x = calloc(2 * n + 2 * (ph->n_front + 1), sizeof(*x));
	uint32_t eps[10];
	size_t n_eps = shown_widths(ph, eps, 10);
	struct mp_plot_front_series series[10];
	char labels[10][32];
	if (!x) {
		cli_error("%s: %s", path, mp_strerror(MP_ENOMEM));
		return EXIT_INPUT;
	}
	double *y = x + n, *fx = y + n, *fy = fx + ph->n_front + 1;
	size_t m = 0, ns = 0;
	for (size_t s = 0; s < n_eps; s++) {
		size_t from = m;
		for (size_t i = 0; i < ph->n_points; i++) {
			const struct mp_search_point *p = &ph->points[i];
			if (p->cfg.ep == eps[s] && xval(p) > 0 && p->eval.tokens_per_s_per_gpu > 0) {
				x[m] = xval(p);
				y[m] = p->eval.tokens_per_s_per_gpu;
				m++;
			}
		}
		if (m > from) {
			snprintf(labels[ns], sizeof(labels[ns]), "EP%u", eps[s]);
			series[ns] = (struct mp_plot_front_series){
				.label = labels[ns], .x = x + from, .y = y + from, .n = m - from};
			ns++;
		}
	}
	size_t nf = 0;
	for (size_t k = 0; k < ph->n_front; k++) {
		const struct mp_search_point *p = &ph->points[ph->front[k]];
		if (xval(p) > 0 && p->eval.tokens_per_s_per_gpu > 0) {
			fx[nf] = xval(p);
			fy[nf] = p->eval.tokens_per_s_per_gpu;
			nf++;
		}
	}
	char title[256], chosen[160], target[96];
	snprintf(title, sizeof(title), "%s %s on %s: Pareto front",
		 sc->model.name ? sc->model.name : "model", decode ? "decode" : "prefill",
		 spec->hardware.name ? spec->hardware.name : "GPUs");
	struct mp_plot_front plot;
	mp_plot_front_init(&plot);
	plot.title = title;
	plot.x_label = decode ? "tokens/s per user (1 / TPOT)" : "TTFT (s)";
	plot.y_label = decode ? "output tokens/s per GPU" : "input tokens/s per GPU";
	plot.series = series;
	plot.n_series = ns;
	plot.front_x = fx;
	plot.front_y = fy;
	plot.n_front = nf;
	plot.log_x = !decode;
	if (ph->has_choice) {
		const struct mp_search_point *c = &ph->points[ph->chosen];
		char att[16];
		if (c->cfg.attention_tp > 1) {
			snprintf(att, sizeof(att), "tp:%u", c->cfg.attention_tp);
		} else {
			snprintf(att, sizeof(att), "dp");
		}
		snprintf(chosen, sizeof(chosen), "chosen: EP%u %s %s, %.6g %s", c->cfg.ep, att,
			 mp_deploy_overlap_name(c->cfg.overlap), c->cfg.batch,
			 decode ? "req/GPU" : "tokens/step");
		plot.has_chosen = xval(c) > 0 && c->eval.tokens_per_s_per_gpu > 0;
		plot.chosen_x = xval(c);
		plot.chosen_y = c->eval.tokens_per_s_per_gpu;
		plot.chosen_label = chosen;
	}
	if (decode && opts->tpot_s > 0) {
		plot.target_x = 1.0 / opts->tpot_s;
		snprintf(target, sizeof(target), "target: TPOT %.4g ms", 1e3 * opts->tpot_s);
		plot.target_label = target;
	} else if (!decode && opts->ttft_s > 0) {
		plot.target_x = opts->ttft_s;
		snprintf(target, sizeof(target), "target: TTFT %.4g s", opts->ttft_s);
		plot.target_label = target;
	}
	int status = EXIT_OK;
	if (ns == 0) {
		cli_error("%s: no configuration fits: nothing to draw", path);
		status = EXIT_INPUT;
	} else {
		int rc = mp_plot_front_save(&plot, path);
		if (rc) {
			int err = errno;
			cli_error("%s: cannot write: %s", path, cli_write_error(rc, err));
			status = EXIT_INPUT;
		}
	}
	free(x);
	return status;
}

static int pools_svg(const char *path, const struct mp_deploy *d, const struct mp_scenario *sc)
{
	char title[256];
	snprintf(title, sizeof(title), "%s: prefill and decode pools", sc->model.name ? sc->model.name : "model");
	struct mp_plot_pools plot = {
		.title = title,
		.prefill_gpus = d->pools.prefill_gpus,
		.decode_gpus = d->pools.decode_gpus,
		.spare_gpus = d->pools.spare_gpus,
		.prefill_unit = d->prefill.points[d->prefill.chosen].cfg.ep,
		.decode_unit = d->decode.points[d->decode.chosen].cfg.ep,
	};
	int rc = mp_plot_pools_save(&plot, path);
	if (rc) {
		int err = errno;
		cli_error("%s: cannot write: %s", path, cli_write_error(rc, err));
		return EXIT_INPUT;
	}
	return EXIT_OK;
}

struct report {
	const struct mp_deploy *d;
	const struct mp_scenario *sc;
	const struct mp_deploy_options *opts;
	const char *scenario_path;
	char pictures[3][1024];
	bool has_pools_picture;
};

static void chosen_row(FILE *f, const char *name, const struct mp_search_phase *ph)
{
	if (!ph->has_choice) {
		fprintf(f, "| %s | - | - | - | - | - | %s |\n", name, ph->why);
		return;
	}
	const struct mp_search_point *c = &ph->points[ph->chosen];
	bool decode = ph->phase == MP_PHASE_DECODE;
	char att[16];
	if (c->cfg.attention_tp > 1) {
		snprintf(att, sizeof(att), "tp:%u", c->cfg.attention_tp);
	} else {
		snprintf(att, sizeof(att), "dp");
	}
	fprintf(f, "| %s | EP%u, %s, %s | %.6g %s | %.3f | %.4g ms | %.0f %s tok/s per GPU at %s%.4g%s | %s |\n",
		name, c->cfg.ep, att, mp_deploy_overlap_name(c->cfg.overlap), c->cfg.batch,
		decode ? "req/GPU" : "tokens/step", c->cfg.busiest_factor, 1e3 * c->eval.step_s,
		c->eval.tokens_per_s_per_gpu, decode ? "output" : "input", decode ? "" : "TTFT ",
		decode ? c->eval.tokens_per_s_per_user : c->eval.ttft_s, decode ? " tok/s per user" : " s",
		ph->why);
}

static int write_report(void *user, FILE *f)
{
	const struct report *r = user;
	const struct mp_deploy *d = r->d;
	const struct mp_deploy_options *o = r->opts;
	fprintf(f, "# Deployment search: %s\n\n", r->sc->name ? r->sc->name : "scenario");
	fprintf(f, "Scenario `%s`; ", r->scenario_path);
	if (o->gpus) {
		fprintf(f, "%u GPUs; ", o->gpus);
	} else {
		fprintf(f, "%.6g requests/s; ", o->request_rate);
	}
	fprintf(f, "prompts %.6g tokens (%.1f%% cached), outputs %.6g tokens", o->isl,
		100 * o->cached_fraction, o->osl);
	if (o->tpot_s > 0) {
		fprintf(f, "; TPOT <= %.4g ms", 1e3 * o->tpot_s);
	}
	if (o->ttft_s > 0) {
		fprintf(f, "; TTFT <= %.4g s", o->ttft_s);
	}
	fprintf(f, ". Configurations predicted: prefill %zu, decode %zu, co-located prefill %zu; "
		   "placements solved in the loop: prefill %zu, decode %zu.\n\n",
		d->prefill.evaluated, d->decode.evaluated, d->colocated.evaluated, d->prefill.placements,
		d->decode.placements);
	fprintf(f, "| phase | configuration | batch | busiest-GPU factor | step | throughput | why |\n"
		   "|---|---|---|---:|---:|---|---|\n");
	chosen_row(f, "prefill", &d->prefill);
	chosen_row(f, "decode", &d->decode);
	fprintf(f, "\n");
	const struct mp_hardware *hw[2] = {&r->sc->prefill.hardware, &r->sc->decode.hardware};
	for (int i = 0; i < 2; i++) {
		char kb[300];
		bool priced = i ? r->d->decode_table_priced : r->d->prefill_table_priced;
		fprintf(f, "Kernel efficiency, %s: %s.\n", i ? "decode" : "prefill",
			cli_kernel_source_hw(hw[i], priced, kb, sizeof(kb)));
	}
	fprintf(f, "\n");
	cli_trust_markdown(f, 0);
	cli_trust_markdown(f, 1);
	if (d->has_pools) {
		const struct mp_pools *p = &d->pools;
		fprintf(f, "## Pools\n\n| | value |\n|---|---:|\n");
		fprintf(f, "| prefill GPUs (groups) | %u (%u) |\n| decode GPUs (groups) | %u (%u) |\n",
			p->prefill_gpus, p->prefill_units, p->decode_gpus, p->decode_units);
		fprintf(f, "| spare GPUs | %u |\n| prefill : decode | %.3g |\n| prefill share | %.1f%% |\n",
			p->spare_gpus, p->ratio, 100 * p->prefill_share);
		fprintf(f, "| requests/s (per GPU) | %.4g (%.4g) |\n", p->request_rate,
			p->requests_per_s_per_gpu);
		fprintf(f, "| input / output tokens/s per GPU, end to end | %.0f / %.0f |\n",
			p->input_tokens_per_s_per_gpu, p->output_tokens_per_s_per_gpu);
		fprintf(f, "| KV cache per request, transfer time | %.4g MB, %.3g ms |\n",
			p->kv_bytes_per_request / 1e6, 1e3 * p->kv_transfer_s);
		fprintf(f, "| share of prefill NIC bandwidth for KV | %.2g%% |\n\n",
			100 * p->kv_link_utilisation);
	} else {
		fprintf(f, "## Pools\n\nNone: %s.\n\n", d->pools_why);
	}
	if (d->has_colocated) {
		fprintf(f, "Co-located on the decode GPUs: %u GPUs, %.4g requests/s per GPU, prefill takes "
			   "%.1f%% of GPU time, %.4g tokens/s per user. Winner: **%s**.\n\n",
			d->colo.gpus, d->colo.requests_per_s_per_gpu, 100 * d->colo.prefill_time_share,
			d->colo.tokens_per_s_per_user, d->colocated_wins ? "co-located" : "disaggregated pools");
	}
	fprintf(f, "## Pictures\n\n![decode front](%s)\n\n![prefill front](%s)\n\n", r->pictures[0],
		r->pictures[1]);
	if (r->has_pools_picture) {
		fprintf(f, "![pools](%s)\n\n", r->pictures[2]);
	}
	return ferror(f) ? MP_EIO : 0;
}

bool cli_search_report_files(const char *report, struct cli_report_files *out)
{
	static const char *const suffix[] = {"-decode-front.svg", "-prefill-front.svg", "-pools.svg"};
	return cli_report_files(report, suffix, sizeof(suffix) / sizeof(suffix[0]), out);
}

int cli_search_report(const char *path, const struct mp_deploy *d, const struct mp_scenario *sc,
		      const struct mp_deploy_options *opts, const char *scenario_path)
{
	struct report r = {.d = d, .sc = sc, .opts = opts, .scenario_path = scenario_path};
	struct cli_report_files rf;
	if (!cli_search_report_files(path, &rf)) {
		cli_error("%s: path too long", path);
		return EXIT_INPUT;
	}
	char (*files)[1024] = rf.path;
	for (size_t i = 0; i < rf.count; i++) {
		snprintf(r.pictures[i], sizeof(r.pictures[i]), "%s", files[i] + rf.base);
	}
	int status = cli_search_front(files[0], d, sc, opts, true);
	if (status == EXIT_OK) {
		status = cli_search_front(files[1], d, sc, opts, false);
	}
	if (status == EXIT_OK && d->has_pools) {
		status = pools_svg(files[2], d, sc);
		r.has_pools_picture = true;
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
