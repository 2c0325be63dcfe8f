/* Deployment search over one phase's configurations: enumeration, Pareto
 * fronts, placement in the loop, the choice and its runner-up (search.h). */
#include "moeplan/search.h"
#include "moeplan/diag.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ Pareto front */

struct pf_key {
	double x, y;
	size_t i;
};

static int cmp_key(const void *a, const void *b)
{
	const struct pf_key *p = a, *q = b;
	/* x descending, then y descending, then index ascending */
	if (p->x != q->x) {
		return p->x > q->x ? -1 : 1;
	}
	if (p->y != q->y) {
		return p->y > q->y ? -1 : 1;
	}
	return p->i < q->i ? -1 : p->i > q->i;
}

int mp_pareto_front(const double *x, const double *y, size_t n, size_t *idx_out, size_t *n_out)
{
	for (size_t i = 0; i < n; i++) {
		if (isnan(x[i]) || isnan(y[i])) {
			return MP_EINVAL;
		}
	}
	struct pf_key *keys = malloc((n ? n : 1) * sizeof(*keys));
	if (!keys) {
		return MP_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		keys[i] = (struct pf_key){.x = x[i], .y = y[i], .i = i};
	}
	qsort(keys, n, sizeof(*keys), cmp_key);
	/* From the largest x down, a point survives when its y beats every y
	 * seen at a larger or equal x; equal x come in y-descending order, so
	 * a later one is dominated or identical. */
	size_t m = 0;
	for (size_t k = 0; k < n; k++) {
		if (m == 0 || keys[k].y > keys[m - 1].y) {
			keys[m++] = keys[k];
		}
	}
	for (size_t k = 0; k < m; k++) {
		idx_out[k] = keys[m - 1 - k].i;
	}
	*n_out = m;
	free(keys);
	return 0;
}

/* ---------------------------------------------------------------- batches */

size_t mp_search_batches(double unit, double ratio, double max_batch, double *out, size_t cap)
{
	if (!(unit > 0) || !(max_batch >= unit)) {
		return 0;
	}
	double top = floor(max_batch / unit + 1e-9);
	size_t n = 0;
	if (ratio <= 1.0) {
		for (double m = 1; m <= top; m++) {
			if (n < cap) {
				out[n] = m * unit;
			}
			n++;
		}
		return n;
	}
	double last = 0;
	for (double g = 1; g < top; g *= ratio) {
		double m = floor(g + 0.5);
		if (m > last && m < top) {
			if (n < cap) {
				out[n] = m * unit;
			}
			n++;
			last = m;
		}
	}
	if (n < cap) {
		out[n] = top * unit;
	}
	return n + 1;
}

/* ------------------------------------------------------------ one phase */

void mp_search_phase_init(struct mp_search_phase *phase)
{
	*phase = (struct mp_search_phase){0};
}

void mp_search_phase_finish(struct mp_search_phase *phase)
{
	if (!phase) {
		return;
	}
	free(phase->points);
	free(phase->front);
	free(phase->widths);
	*phase = (struct mp_search_phase){0};
}

bool mp_search_meets(const struct mp_search_point *p, const struct mp_search_targets *t)
{
	if (!t) {
		return true;
	}
	if (p->cfg.phase == MP_PHASE_DECODE) {
		return !(t->tpot_s > 0) || p->eval.tokens_per_s_per_user * t->tpot_s >= 1.0;
	}
	return !(t->ttft_s > 0) || p->eval.ttft_s <= t->ttft_s;
}

/* The front's x: larger is better (TTFT negated). */
static double point_x(const struct mp_search_point *p)
{
	return p->cfg.phase == MP_PHASE_DECODE ? p->eval.tokens_per_s_per_user : -p->eval.ttft_s;
}

/* Is a better than b for the choice: more tokens/s per GPU, then the
 * better x; exact ties keep the earlier (enumeration order). */
static bool better(const struct mp_search_point *a, const struct mp_search_point *b)
{
	if (a->eval.tokens_per_s_per_gpu != b->eval.tokens_per_s_per_gpu) {
		return a->eval.tokens_per_s_per_gpu > b->eval.tokens_per_s_per_gpu;
	}
	return point_x(a) > point_x(b);
}

/* A growable array of points. */
struct pts {
	struct mp_search_point *p;
	size_t n, cap;
};

static int pts_push(struct pts *a, const struct mp_search_point *p)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 64;
		struct mp_search_point *q = realloc(a->p, cap * sizeof(*q));
		if (!q) {
			return MP_ENOMEM;
		}
		a->p = q;
		a->cap = cap;
	}
	a->p[a->n++] = *p;
	return 0;
}

static bool eval_ok(const struct mp_search_eval *e)
{
	return isfinite(e->step_s) && e->step_s >= 0 && isfinite(e->tokens_per_s_per_gpu) &&
	       e->tokens_per_s_per_gpu >= 0 && !isnan(e->tokens_per_s_per_user) &&
	       e->tokens_per_s_per_user >= 0 && !isnan(e->ttft_s) && e->ttft_s >= 0;
}

/* Keep only the Pareto front of a[from..n) (in place, x ascending). */
static int keep_front(struct pts *a, size_t from)
{
	size_t n = a->n - from;
	if (n == 0) {
		return 0;
	}
	double *x = malloc(2 * n * sizeof(*x));
	size_t *idx = malloc(n * sizeof(*idx));
	struct mp_search_point *copy = malloc(n * sizeof(*copy));
	int rc = x && idx && copy ? 0 : MP_ENOMEM;
	size_t m = 0;
	if (rc == 0) {
		for (size_t i = 0; i < n; i++) {
			x[i] = point_x(&a->p[from + i]);
			x[n + i] = a->p[from + i].eval.tokens_per_s_per_gpu;
		}
		rc = mp_pareto_front(x, x + n, n, idx, &m);
	}
	if (rc == 0) {
		memcpy(copy, a->p + from, n * sizeof(*copy));
		for (size_t k = 0; k < m; k++) {
			a->p[from + k] = copy[idx[k]];
		}
		a->n = from + m;
	}
	free(copy);
	free(idx);
	free(x);
	return rc;
}

/* Predict every configuration of one width at one factor; append the
 * width's front to a and fill w's counts and best (meeting the targets). */
static int run_width(const struct mp_search_model *model, const struct mp_search_space *space,
		     const struct mp_search_targets *targets, const struct mp_search_config *tmpl,
		     uint32_t ep, double factor, struct pts *a, struct mp_search_width *w,
		     size_t *evaluated)
{
	size_t from = a->n;
	double *grid = NULL;
	int rc = 0;
	w->fits = false;
	w->meets = false;
	w->evaluated = 0;
	double best = 0;
	for (size_t ai = 0; ai < space->n_attention && rc == 0; ai++) {
		for (size_t oi = 0; oi < space->n_overlaps && rc == 0; oi++) {
			struct mp_search_config cfg = *tmpl;
			cfg.ep = ep;
			cfg.attention_tp = space->attention_tp[ai];
			cfg.overlap = space->overlaps[oi];
			cfg.batch = 0;
			cfg.busiest_factor = factor;
			double max = 0;
			rc = model->max_batch(model->user, &cfg, &max);
			if (rc || !(max >= space->batch_unit)) {
				continue;
			}
			if (space->batch_cap > 0 && max > space->batch_cap) {
				max = space->batch_cap;
			}
			size_t n = mp_search_batches(space->batch_unit, space->geometric_ratio, max, NULL, 0);
			free(grid);
			grid = calloc(n ? n : 1, sizeof(*grid));
			if (!grid) {
				rc = MP_ENOMEM;
				break;
			}
			n = mp_search_batches(space->batch_unit, space->geometric_ratio, max, grid, n);
			for (size_t b = 0; b < n && rc == 0; b++) {
				struct mp_search_point p = {.cfg = cfg};
				p.cfg.batch = grid[b];
				rc = model->evaluate(model->user, &p.cfg, &p.eval);
				if (rc == 0 && !eval_ok(&p.eval)) {
					rc = MP_EINVAL;
				}
				if (rc) {
					break;
				}
				(*evaluated)++;
				w->evaluated++;
				w->fits = true;
				if (mp_search_meets(&p, targets)) {
					w->meets = true;
					best = fmax(best, p.eval.tokens_per_s_per_gpu);
				}
				rc = pts_push(a, &p);
			}
			/* Keep memory to the fronts as we go. */
			if (rc == 0 && a->n - from > 4096) {
				rc = keep_front(a, from);
			}
		}
	}
	free(grid);
	if (rc == 0) {
		rc = keep_front(a, from);
	}
	w->best = best;
	return rc;
}

/* Placement in the loop (file comment of search.h): visit the widths that
 * meet the targets in order of their bound; stop once a bound cannot beat
 * the best realised value. Returns 0 or a callback's code. */
static int solve_placements(const struct mp_search_model *model, const struct mp_search_space *space,
			    const struct mp_search_targets *targets, const struct mp_search_config *tmpl,
			    struct pts *a, struct mp_search_phase *out)
{
	if (!model->busiest_factor) {
		return 0;
	}
	size_t n = out->n_widths;
	size_t *order = malloc((n ? n : 1) * sizeof(*order));
	if (!order) {
		return MP_ENOMEM;
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (out->widths[i].meets) {
			order[m++] = i;
		}
	}
	/* Insertion sort by bound descending, index ascending (stable). */
	for (size_t i = 1; i < m; i++) {
		size_t v = order[i], j = i;
		while (j > 0 && out->widths[order[j - 1]].bound < out->widths[v].bound) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = v;
	}
	double realised = 0;
	int rc = 0;
	for (size_t k = 0; k < m && rc == 0; k++) {
		struct mp_search_width *w = &out->widths[order[k]];
		/* Within MP_SEARCH_TIE of the best realised value a width can
		 * still win on speed per user (or TTFT): solve it too. */
		if (!(w->bound > (1 - MP_SEARCH_TIE) * realised)) {
			break;
		}
		/* The width's best point with f = 1 sets the batch the factor is
		 * estimated at. */
		const struct mp_search_point *best = NULL;
		for (size_t i = 0; i < a->n; i++) {
			const struct mp_search_point *p = &a->p[i];
			if (p->cfg.ep == w->ep && mp_search_meets(p, targets) &&
			    (!best || better(p, best))) {
				best = p;
			}
		}
		if (!best) {
			continue;
		}
		double f = 1.0;
		rc = model->busiest_factor(model->user, &best->cfg, &f);
		out->placements++;
		if (rc == 0 && !(f >= 1.0 && isfinite(f))) {
			rc = MP_EINVAL;
		}
		if (rc) {
			break;
		}
		w->factor_solved = true;
		w->busiest_factor = f;
		/* Re-predict the width with its factor: drop its f = 1 points. */
		size_t keep = 0;
		for (size_t i = 0; i < a->n; i++) {
			if (a->p[i].cfg.ep != w->ep) {
				a->p[keep++] = a->p[i];
			}
		}
		a->n = keep;
		rc = run_width(model, space, targets, tmpl, w->ep, f, a, w, &out->evaluated);
		if (rc == 0 && w->meets) {
			realised = fmax(realised, w->best);
		}
	}
	free(order);
	return rc;
}

/* Group points by width in the space's order (run_width appends a
 * re-predicted width at the end). */
static int regroup(const struct mp_search_space *space, struct pts *a)
{
	struct mp_search_point *q = malloc((a->n ? a->n : 1) * sizeof(*q));
	if (!q) {
		return MP_ENOMEM;
	}
	size_t n = 0;
	for (size_t wi = 0; wi < space->n_widths; wi++) {
		for (size_t i = 0; i < a->n; i++) {
			if (a->p[i].cfg.ep == space->widths[wi]) {
				q[n++] = a->p[i];
			}
		}
	}
	free(a->p);
	a->p = q;
	a->n = n;
	a->cap = n ? n : 1;
	return 0;
}

static const char *attention_text(uint32_t tp, char *buf, size_t size)
{
	if (tp <= 1) {
		snprintf(buf, size, "dp attention");
	} else {
		snprintf(buf, size, "tp:%u attention", tp);
	}
	return buf;
}

static const char *overlap_text(const struct mp_search_space *space, int overlap, char *buf,
				size_t size)
{
	for (size_t i = 0; space->overlap_names && i < space->n_overlaps; i++) {
		if (space->overlaps[i] == overlap && space->overlap_names[i]) {
			snprintf(buf, size, "overlap %s", space->overlap_names[i]);
			return buf;
		}
	}
	snprintf(buf, size, "overlap %d", overlap);
	return buf;
}

/* One point for a sentence: "EP32, dp attention, overlap full, 64 requests/GPU". */
static void point_text(const struct mp_search_space *space, const struct mp_search_point *p,
		       char *buf, size_t size)
{
	char att[32], ov[48];
	snprintf(buf, size, "EP%u, %s, %s, %.6g %s", p->cfg.ep,
		 attention_text(p->cfg.attention_tp, att, sizeof(att)),
		 overlap_text(space, p->cfg.overlap, ov, sizeof(ov)), p->cfg.batch,
		 p->cfg.phase == MP_PHASE_DECODE ? "requests/GPU" : "tokens/GPU per step");
}

static void explain(struct mp_search_phase *ph, const struct mp_search_space *space,
		    const struct mp_search_targets *t)
{
	char *s = ph->why;
	size_t size = sizeof(ph->why);
	size_t len = 0;
	s[0] = '\0';
	if (!ph->has_choice) {
		if (ph->phase == MP_PHASE_DECODE && t && t->tpot_s > 0) {
			snprintf(s, size, "no configuration reaches %.4g tokens/s per user (TPOT %.4g ms)",
				 1.0 / t->tpot_s, 1e3 * t->tpot_s);
		} else if (ph->phase == MP_PHASE_PREFILL && t && t->ttft_s > 0) {
			snprintf(s, size, "no configuration reaches TTFT %.4g s", t->ttft_s);
		} else {
			snprintf(s, size, "no configuration fits in HBM");
		}
		return;
	}
	const struct mp_search_point *c = &ph->points[ph->chosen];
	bool decode = ph->phase == MP_PHASE_DECODE;
	const char *unit = decode ? "output" : "input";
	int k = 0;
	if (ph->has_runner_up) {
		const struct mp_search_point *r = &ph->points[ph->runner_up];
		char rt[160];
		point_text(space, r, rt, sizeof(rt));
		double gap = c->eval.tokens_per_s_per_gpu > 0
				     ? 1.0 - r->eval.tokens_per_s_per_gpu / c->eval.tokens_per_s_per_gpu
				     : 0.0;
		if (gap >= MP_SEARCH_TIE) {
			k = snprintf(s + len, size - len,
				     "runner-up %s: %.1f%% fewer %s tokens/s per GPU (%.0f against %.0f)",
				     rt, 100.0 * gap, unit, r->eval.tokens_per_s_per_gpu,
				     c->eval.tokens_per_s_per_gpu);
		} else if (decode) {
			k = snprintf(s + len, size - len,
				     "runner-up %s: within %.0f%% of the %s tokens/s per GPU (%.0f against "
				     "%.0f) but slower per user (%.4g against %.4g tokens/s)", rt,
				     100.0 * MP_SEARCH_TIE, unit, r->eval.tokens_per_s_per_gpu,
				     c->eval.tokens_per_s_per_gpu, r->eval.tokens_per_s_per_user,
				     c->eval.tokens_per_s_per_user);
		} else {
			k = snprintf(s + len, size - len,
				     "runner-up %s: within %.0f%% of the %s tokens/s per GPU (%.0f against "
				     "%.0f) but a longer TTFT (%.4g s against %.4g s)", rt,
				     100.0 * MP_SEARCH_TIE, unit, r->eval.tokens_per_s_per_gpu,
				     c->eval.tokens_per_s_per_gpu, r->eval.ttft_s, c->eval.ttft_s);
		}
		len += k > 0 ? (size_t)k : 0;
		if (len < size && r->cfg.busiest_factor != c->cfg.busiest_factor) {
			k = snprintf(s + len, size - len, ", busiest-GPU factor %.3f against %.3f",
				     r->cfg.busiest_factor, c->cfg.busiest_factor);
			len += k > 0 ? (size_t)k : 0;
		}
		if (len < size) {
			k = snprintf(s + len, size - len, ".");
			len += k > 0 ? (size_t)k : 0;
		}
	}
	if (!ph->has_fastest || ph->fastest == ph->chosen || len >= size ||
	    !(ph->points[ph->fastest].eval.tokens_per_s_per_gpu > c->eval.tokens_per_s_per_gpu)) {
		return;
	}
	const struct mp_search_point *f = &ph->points[ph->fastest];
	char ft[160];
	point_text(space, f, ft, sizeof(ft));
	const char *sep = len ? " " : "";
	if (mp_search_meets(f, t)) {
		snprintf(s + len, size - len,
			 "%sThe most throughput, %s (%.0f tokens/s per GPU), is within %.0f%% and %s.", sep,
			 ft, f->eval.tokens_per_s_per_gpu, 100.0 * MP_SEARCH_TIE,
			 decode ? "slower per user" : "has a longer TTFT");
	} else if (decode) {
		snprintf(s + len, size - len,
			 "%sThe most throughput, %s (%.0f tokens/s per GPU), gives %.4g tokens/s per "
			 "user, below the target %.4g.", sep, ft, f->eval.tokens_per_s_per_gpu,
			 f->eval.tokens_per_s_per_user, t && t->tpot_s > 0 ? 1.0 / t->tpot_s : 0.0);
	} else {
		snprintf(s + len, size - len,
			 "%sThe most throughput, %s (%.0f tokens/s per GPU), has TTFT %.4g s, above "
			 "the target %.4g s.", sep, ft, f->eval.tokens_per_s_per_gpu, f->eval.ttft_s,
			 t ? t->ttft_s : 0.0);
	}
}

/* The best point meeting the targets among those `keep` accepts: the
 * most tokens/s per GPU, then among those within MP_SEARCH_TIE of it the
 * better x (then the more tokens/s, then the earlier). */
static bool pick(const struct mp_search_phase *ph, const struct mp_search_targets *targets,
		 const struct mp_search_point *other, size_t *out)
{
	double top = -1;
	for (size_t i = 0; i < ph->n_points; i++) {
		const struct mp_search_point *p = &ph->points[i];
		if (mp_search_meets(p, targets) && (!other || p->cfg.ep != other->cfg.ep ||
						    (ph->n_widths <= 1 &&
						     (p->cfg.attention_tp != other->cfg.attention_tp ||
						      p->cfg.overlap != other->cfg.overlap)))) {
			top = fmax(top, p->eval.tokens_per_s_per_gpu);
		}
	}
	if (top < 0) {
		return false;
	}
	bool found = false;
	for (size_t i = 0; i < ph->n_points; i++) {
		const struct mp_search_point *p = &ph->points[i];
		bool allowed = !other || p->cfg.ep != other->cfg.ep ||
			       (ph->n_widths <= 1 && (p->cfg.attention_tp != other->cfg.attention_tp ||
						      p->cfg.overlap != other->cfg.overlap));
		if (!allowed || !mp_search_meets(p, targets) ||
		    p->eval.tokens_per_s_per_gpu < (1 - MP_SEARCH_TIE) * top) {
			continue;
		}
		const struct mp_search_point *b = found ? &ph->points[*out] : NULL;
		if (!b || point_x(p) > point_x(b) || (point_x(p) == point_x(b) && better(p, b))) {
			*out = i;
			found = true;
		}
	}
	return found;
}

/* The overall front, the choice, the runner-up and the fastest. */
static int conclude(struct mp_search_phase *out, const struct mp_search_space *space,
		    const struct mp_search_targets *targets)
{
	size_t n = out->n_points;
	double *xy = malloc((2 * n + 1) * sizeof(*xy));
	out->front = malloc((n ? n : 1) * sizeof(*out->front));
	if (!xy || !out->front) {
		free(xy);
		return MP_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		xy[i] = point_x(&out->points[i]);
		xy[n + i] = out->points[i].eval.tokens_per_s_per_gpu;
	}
	int rc = mp_pareto_front(xy, xy + n, n, out->front, &out->n_front);
	free(xy);
	if (rc) {
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		const struct mp_search_point *p = &out->points[i];
		if (!out->has_fastest || better(p, &out->points[out->fastest])) {
			out->has_fastest = true;
			out->fastest = i;
		}
	}
	out->has_choice = pick(out, targets, NULL, &out->chosen);
	if (out->has_choice) {
		out->has_runner_up = pick(out, targets, &out->points[out->chosen], &out->runner_up);
	}
	explain(out, space, targets);
	return 0;
}

int mp_search_phase_run(const struct mp_search_model *model, const struct mp_search_space *space,
			const struct mp_search_targets *targets,
			const struct mp_search_config *cfg_template, struct mp_search_phase *out)
{
	if (!space->n_widths || !space->n_attention || !space->n_overlaps ||
	    !(space->batch_unit > 0) || (space->geometric_ratio > 0 && space->geometric_ratio <= 1) ||
	    isnan(space->geometric_ratio) || !(space->batch_cap >= 0)) {
		return MP_EINVAL;
	}
	for (size_t i = 0; i < space->n_widths; i++) {
		for (size_t j = 0; j <= i; j++) {
			if (space->widths[i] == 0 || (j < i && space->widths[i] == space->widths[j])) {
				return MP_EINVAL;
			}
		}
	}
	struct mp_search_phase ph = {.phase = cfg_template->phase, .colocated = cfg_template->colocated};
	struct pts a = {0};
	ph.widths = calloc(space->n_widths, sizeof(*ph.widths));
	ph.n_widths = space->n_widths;
	int rc = ph.widths ? 0 : MP_ENOMEM;
	for (size_t wi = 0; wi < space->n_widths && rc == 0; wi++) {
		struct mp_search_width *w = &ph.widths[wi];
		w->ep = space->widths[wi];
		w->busiest_factor = 1.0;
		rc = run_width(model, space, targets, cfg_template, w->ep, 1.0, &a, w, &ph.evaluated);
		w->bound = w->best;
	}
	if (rc == 0) {
		rc = solve_placements(model, space, targets, cfg_template, &a, &ph);
	}
	if (rc == 0) {
		rc = regroup(space, &a);
	}
	if (rc == 0) {
		ph.points = a.p;
		ph.n_points = a.n;
		a.p = NULL;
		rc = conclude(&ph, space, targets);
	}
	free(a.p);
	if (rc) {
		mp_search_phase_finish(&ph);
		return rc;
	}
	mp_search_phase_finish(out);
	*out = ph;
	return 0;
}
