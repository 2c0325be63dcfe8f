/* The busiest GPU under an engine's own dispatch (issue 24): a local
 * search from the even-split plan over which GPUs hold each expert's
 * replicas (their order follows: SGLang sends a node's ranks without a copy
 * to the lowest-numbered replica on the node), evaluated by the rule of
 * moeplan/dispatch.h.
 *
 * Moves: swap the experts of two slots on different GPUs, or turn a
 * redundant replica (its expert keeps at least one) into a replica of
 * another expert; both keep at most one replica of an expert per GPU (a
 * second copy on a GPU takes no tokens under SGLang's rule). Each step
 * scans every move that touches the busiest GPU (swaps of its slots with
 * every other slot; reassignments of any redundant replica to an expert on
 * the busiest GPU, and of the busiest GPU's redundant replicas to any
 * expert), scored by the expectation (a rank that draws splits its tokens
 * 1/c over the candidates), and makes the best that lowers (busiest GPU,
 * sum of squared GPU loads) lexicographically. Where SGLang's static
 * dispatch draws (nodes without a replica of an expert that has several),
 * the scored candidates are checked in order by the exact rule with the
 * layer's random streams, and the first that improves the exact value is
 * made. Work is counted in steps (budget 400 x effort per layer), so
 * plans do not depend on the machine. Where it draws (and no earlier row
 * copies the layer), the layer is then re-seated (dispatch-reseat.c) from
 * the search's plan and from the even plan, and the best by the exact
 * rule is kept.
 *
 * Bound: every token lands on some GPU, so the mean load bounds the
 * busiest GPU under any rule; it is the only bound claimed here. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/dispatch.h"

struct ds {
	struct mp_dispatch d;
	uint32_t E, G, S, N, P, nodes;
	const double *w;
	uint32_t *slot;  /* [N] */
	uint32_t *cnt;   /* [E] replicas */
	double *gpu;     /* [G] current (exact where it draws) */
	double *est;     /* [G] scratch */
	double *sl;      /* [N]: each slot's load at the current map, exact */
	double *sl_try;  /* [N]: the same for the map being tried */
	uint32_t *held;  /* [G * E]: replicas of e on GPU g (0 or 1) */
	uint32_t *rep;   /* [E * G]: the GPUs holding e, cnt[e] of them, any order */
	struct mp_dispatch_streams *start; /* the layer's streams, or NULL */
	const unsigned char *pre; /* [n_pre]: the map's rows between start and this layer:
				     1 a copy of this layer's row, 0 the trivial row */
	uint32_t n_pre;
	uint32_t *trivial; /* [N] p % E, with pre */
	bool draws;      /* exact evaluation needed (SGLang static over several nodes) */
	double deadline; /* the run's wall-clock safety net (INFINITY: none) */
	bool late;       /* it fired: the layer keeps the best map so far */
};

/* True once the run's deadline has passed (then for the rest of the layer). */
static bool ds_late(struct ds *s)
{
	if (!s->late && s->deadline < (double)INFINITY && pl_now() > s->deadline) {
		s->late = true;
	}
	return s->late;
}

static bool held_on(const struct ds *s, uint32_t g, uint32_t e)
{
	return s->held[(size_t)g * s->E + e] != 0;
}

/* Expert e's expected GPU loads (sign +1 or -1) into v. */
static void expert_add(const struct ds *s, uint32_t e, double sign, double *v)
{
	const double w = s->w[e] * sign;
	const uint32_t c = s->cnt[e];
	const uint32_t *r = s->rep + (size_t)e * s->G;
	if (s->d.rule != MP_DISPATCH_SGLANG || c == 1) {
		for (uint32_t i = 0; i < c; i++) {
			v[r[i]] += w / c;
		}
		return;
	}
	const double t = w / s->G;
	uint32_t first[64], holders[64]; /* per node, when nodes <= 64 */
	uint32_t nodes = s->nodes <= 64 ? s->nodes : 0;
	for (uint32_t n = 0; n < nodes; n++) {
		first[n] = UINT32_MAX;
		holders[n] = 0;
	}
	for (uint32_t i = 0; i < c; i++) {
		uint32_t n = r[i] / s->P;
		v[r[i]] += t;
		if (n < nodes) {
			first[n] = r[i] < first[n] ? r[i] : first[n];
			holders[n]++;
		}
	}
	uint32_t lacking = 0;
	for (uint32_t n = 0; n < s->nodes; n++) {
		uint32_t f = UINT32_MAX, h = 0;
		if (n < nodes) {
			f = first[n];
			h = holders[n];
		} else {
			for (uint32_t g = n * s->P; g < (n + 1) * s->P; g++) {
				f = held_on(s, g, e) && f == UINT32_MAX ? g : f;
				h += held_on(s, g, e);
			}
		}
		if (f == UINT32_MAX) {
			lacking++;
		} else {
			v[f] += t * (s->P - h);
		}
	}
	for (uint32_t i = 0; lacking > 0 && i < c; i++) {
		v[r[i]] += t * s->P * lacking / c;
	}
}

static void objective(const double *v, uint32_t G, double *mx, double *sq)
{
	*mx = 0;
	*sq = 0;
	for (uint32_t g = 0; g < G; g++) {
		*mx = v[g] > *mx ? v[g] : *mx;
		*sq += v[g] * v[g];
	}
}

static bool better(double mx, double sq, double old_mx, double old_sq)
{
	double tol = 1e-12 * (old_mx > 1 ? old_mx : 1);
	return mx < old_mx - tol || (mx <= old_mx + tol && sq < old_sq - tol * old_mx);
}

/* Advance st over the map's rows before this layer (pre), with slot as
 * this layer's row. */
static int run_pre(const struct ds *s, struct mp_dispatch_streams *st, const uint32_t *slot)
{
	int rc = 0;
	for (uint32_t i = 0; st && rc == 0 && i < s->n_pre; i++) {
		rc = mp_dispatch_layer(&s->d, st, s->pre[i] ? slot : s->trivial, s->E, s->G, s->S, NULL, NULL,
				       NULL, NULL);
	}
	return rc;
}

/* The exact loads of the current map into v and s->sl_try (the layer's
 * streams copied, run over the rows before it). */
static int exact(struct ds *s, double *v)
{
	struct mp_dispatch_streams *st = s->start ? mp_dispatch_streams_copy(s->start) : NULL;
	if (s->start && !st) {
		return MP_ENOMEM;
	}
	int rc = run_pre(s, st, s->slot);
	rc = rc ? rc : mp_dispatch_layer(&s->d, st, s->slot, s->E, s->G, s->S, s->w, NULL, s->sl_try, v);
	mp_dispatch_streams_free(st);
	return rc;
}

static void set_slot(struct ds *s, uint32_t p, uint32_t e)
{
	uint32_t g = p / s->S;
	uint32_t old = s->slot[p];
	uint32_t *r = s->rep + (size_t)old * s->G;
	for (uint32_t i = 0; i < s->cnt[old]; i++) {
		if (r[i] == g) {
			r[i] = r[s->cnt[old] - 1];
			break;
		}
	}
	s->held[(size_t)g * s->E + old]--;
	s->cnt[old]--;
	s->slot[p] = e;
	s->held[(size_t)g * s->E + e]++;
	s->rep[(size_t)e * s->G + s->cnt[e]++] = g;
}

/* A move: slot a gets expert ea_new, slot b (UINT32_MAX: none) eb_new. */
struct move {
	uint32_t a, ea, b, eb;
	double mx, sq;
};

static void apply(struct ds *s, const struct move *m)
{
	set_slot(s, m->a, m->ea);
	if (m->b != UINT32_MAX) {
		set_slot(s, m->b, m->eb);
	}
}

/* Expert e's loads at the current map as they fall (exact) out of v. */
static void realized_remove(const struct ds *s, uint32_t e, double *v)
{
	const uint32_t *r = s->rep + (size_t)e * s->G;
	for (uint32_t i = 0; i < s->cnt[e]; i++) {
		for (uint32_t p = r[i] * s->S; p < (r[i] + 1) * s->S; p++) {
			if (s->slot[p] == e) {
				v[r[i]] -= s->sl[p];
			}
		}
	}
}

/* The expected objective after move m (the map is left as it was). */
static void score(struct ds *s, struct move *m)
{
	uint32_t touched[4] = {s->slot[m->a], m->ea, m->b != UINT32_MAX ? s->slot[m->b] : m->ea, m->eb};
	uint32_t n = m->b != UINT32_MAX ? 4 : 2;
	memcpy(s->est, s->gpu, s->G * sizeof(*s->est));
	for (uint32_t i = 0; i < n; i++) {
		bool dup = false;
		for (uint32_t j = 0; j < i; j++) {
			dup |= touched[j] == touched[i];
		}
		if (!dup) {
			realized_remove(s, touched[i], s->est);
		}
	}
	struct move undo = {m->a, s->slot[m->a], m->b, m->b != UINT32_MAX ? s->slot[m->b] : 0, 0, 0};
	apply(s, m);
	for (uint32_t i = 0; i < n; i++) {
		bool dup = false;
		for (uint32_t j = 0; j < i; j++) {
			dup |= touched[j] == touched[i];
		}
		if (!dup) {
			expert_add(s, touched[i], 1, s->est);
		}
	}
	apply(s, &undo);
	objective(s->est, s->G, &m->mx, &m->sq);
}

#define DS_KEEP 64

/* Keep the DS_KEEP best-scored moves, best first. */
static void keep(struct move *best, uint32_t *n, const struct move *m)
{
	uint32_t i = *n;
	if (i == DS_KEEP) {
		i = DS_KEEP - 1;
		if (!better(m->mx, m->sq, best[i].mx, best[i].sq)) {
			return;
		}
	} else {
		(*n)++;
	}
	best[i] = *m;
	while (i > 0 && better(best[i].mx, best[i].sq, best[i - 1].mx, best[i - 1].sq)) {
		struct move t = best[i];
		best[i] = best[i - 1];
		best[i - 1] = t;
		i--;
	}
}

/* Every move touching GPU top, scored, the best kept. */
static uint32_t candidates(struct ds *s, uint32_t top, struct move *best)
{
	uint32_t n = 0;
	for (uint32_t a = top * s->S; a < (top + 1) * s->S; a++) {
		uint32_t ea = s->slot[a];
		for (uint32_t b = 0; b < s->N; b++) {
			uint32_t eb = s->slot[b];
			if (b / s->S == top || ea == eb || held_on(s, top, eb) || held_on(s, b / s->S, ea)) {
				continue;
			}
			struct move m = {a, eb, b, ea, 0, 0};
			score(s, &m);
			keep(best, &n, &m);
		}
	}
	for (uint32_t a = 0; a < s->N; a++) {
		if (s->cnt[s->slot[a]] < 2) {
			continue;
		}
		uint32_t g = a / s->S; /* NOLINT(clang-analyzer-core.DivideZero): S >= 1 slot per GPU (ds_init) */
		uint32_t lo = g == top ? 0 : top * s->S, hi = g == top ? s->E : (top + 1) * s->S;
		for (uint32_t i = lo; i < hi; i++) {
			uint32_t x = g == top ? i : s->slot[i];
			if (held_on(s, g, x)) {
				continue;
			}
			struct move m = {a, x, UINT32_MAX, 0, 0, 0};
			score(s, &m);
			keep(best, &n, &m);
		}
	}
	return n;
}

/* One step; *moved false at a local optimum. */
static int step(struct ds *s, bool *moved)
{
	struct move best[DS_KEEP];
	double mx, sq;
	objective(s->gpu, s->G, &mx, &sq);
	uint32_t top = 0;
	for (uint32_t g = 1; g < s->G; g++) {
		top = s->gpu[g] > s->gpu[top] ? g : top;
	}
	uint32_t n = candidates(s, top, best);
	*moved = false;
	for (uint32_t i = 0; i < n && !*moved && !ds_late(s); i++) {
		/* where it draws, the exact value may improve when the
		 * expectation does not: the DS_KEEP best are all tried */
		if (!s->draws && !better(best[i].mx, best[i].sq, mx, sq)) {
			break;
		}
		struct move undo = {best[i].a, s->slot[best[i].a], best[i].b,
				    best[i].b != UINT32_MAX ? s->slot[best[i].b] : 0, 0, 0};
		apply(s, &best[i]);
		if (!s->draws) {
			int rc = exact(s, s->gpu);
			if (rc != 0) {
				return rc;
			}
			memcpy(s->sl, s->sl_try, s->N * sizeof(*s->sl));
			*moved = true;
			break;
		}
		int rc = exact(s, s->est);
		if (rc != 0) {
			return rc;
		}
		double emx, esq;
		objective(s->est, s->G, &emx, &esq);
		if (better(emx, esq, mx, sq)) {
			memcpy(s->gpu, s->est, s->G * sizeof(*s->gpu));
			memcpy(s->sl, s->sl_try, s->N * sizeof(*s->sl));
			*moved = true;
		} else {
			apply(s, &undo);
		}
	}
	return 0;
}

static void ds_free(struct ds *s)
{
	free(s->slot);
	free(s->cnt);
	free(s->gpu);
	free(s->est);
	free(s->held);
	free(s->rep);
	free(s->sl);
	free(s->sl_try);
	free(s->trivial);
	/* ds_init frees on failure and its caller frees again: make that a no-op */
	memset(s, 0, sizeof(*s));
}

static int ds_init(struct ds *s, const struct mp_dispatch *d, const double *w, uint32_t E, uint32_t G,
		   uint32_t S, const uint32_t *slot, struct mp_dispatch_streams *start,
		   const unsigned char *pre, uint32_t n_pre)
{
	memset(s, 0, sizeof(*s));
	s->d = *d;
	s->E = E;
	s->G = G;
	s->S = S;
	s->N = G * S;
	s->P = d->gpus_per_node ? d->gpus_per_node : G;
	s->nodes = G / s->P;
	s->w = w;
	s->start = start;
	s->pre = pre;
	s->n_pre = start ? n_pre : 0;
	s->draws = start && s->nodes > 1 && d->rule == MP_DISPATCH_SGLANG && d->algorithm == MP_DISPATCH_STATIC;
	s->slot = malloc((size_t)s->N * sizeof(*s->slot));
	s->cnt = calloc(E, sizeof(*s->cnt));
	s->gpu = calloc(G, sizeof(*s->gpu));
	s->est = calloc(G, sizeof(*s->est));
	s->held = calloc((size_t)G * E, sizeof(*s->held));
	s->rep = calloc((size_t)G * E, sizeof(*s->rep));
	s->sl = calloc((size_t)s->N, sizeof(*s->sl));
	s->sl_try = calloc((size_t)s->N, sizeof(*s->sl_try));
	s->trivial = s->n_pre ? malloc((size_t)s->N * sizeof(*s->trivial)) : NULL;
	if (!s->slot || !s->cnt || !s->gpu || !s->est || !s->held || !s->rep || !s->sl || !s->sl_try ||
	    (s->n_pre && !s->trivial)) {
		ds_free(s);
		return MP_ENOMEM;
	}
	for (uint32_t p = 0; s->trivial && p < s->N; p++) {
		s->trivial[p] = p % E;
	}
	memcpy(s->slot, slot, (size_t)s->N * sizeof(*slot));
	for (uint32_t p = 0; p < s->N; p++) {
		uint32_t e = slot[p];
		if (s->held[(size_t)(p / S) * E + e]++ == 0) {
			s->rep[(size_t)e * G + s->cnt[e]] = p / S;
		}
		s->cnt[e]++; /* the solver's plans hold no expert twice on a GPU */
	}
	int rc = exact(s, s->gpu);
	memcpy(s->sl, s->sl_try, (size_t)s->N * sizeof(*s->sl));
	return rc;
}

/* Where SGLang's static dispatch draws, a local optimum of the exact
 * value is often one of the realisation only: the k-th best-scored move
 * at the busiest GPU (k mod their number) is made anyway, and the search
 * goes on from there (the best map seen is kept). */
static int kick(struct ds *s, uint32_t k)
{
	struct move best[DS_KEEP];
	uint32_t top = 0;
	for (uint32_t g = 1; g < s->G; g++) {
		top = s->gpu[g] > s->gpu[top] ? g : top;
	}
	uint32_t n = candidates(s, top, best);
	if (n == 0) {
		return 0;
	}
	apply(s, &best[k % n]);
	int rc = exact(s, s->gpu);
	memcpy(s->sl, s->sl_try, s->N * sizeof(*s->sl));
	return rc;
}

/* The GPU of expert e's last-numbered replica on a node holding two or
 * more while some node holds none, or UINT32_MAX. */
static uint32_t crowded(const struct ds *s, uint32_t e)
{
	uint32_t lacking = 0, found = UINT32_MAX;
	for (uint32_t n = 0; n < s->nodes; n++) {
		uint32_t h = 0, last = 0;
		for (uint32_t g = n * s->P; g < (n + 1) * s->P; g++) {
			if (held_on(s, g, e)) {
				h++;
				last = g;
			}
		}
		lacking += h == 0;
		found = h >= 2 && found == UINT32_MAX ? last : found;
	}
	return lacking ? found : UINT32_MAX;
}

/* Before the search, over several nodes: replicas of one expert that
 * share a node while another node has none are moved there, each by the
 * best-scored swap with a single-replica expert of a node without one (on
 * distinct nodes r replicas take w/r each in expectation under SGLang's
 * rule; two on one node leave the node's first replica more). */
static int spread(struct ds *s)
{
	for (uint32_t e = 0; e < s->E && s->nodes > 1 && !ds_late(s); e++) {
		for (uint32_t g2 = crowded(s, e); g2 != UINT32_MAX && !ds_late(s); g2 = crowded(s, e)) {
			uint32_t a = g2 * s->S;
			while (s->slot[a] != e) {
				a++;
			}
			struct move best = {UINT32_MAX, 0, 0, 0, 0, 0};
			for (uint32_t b = 0; b < s->N; b++) {
				uint32_t n = b / s->S / s->P, x = s->slot[b];
				bool lacks = true;
				for (uint32_t g = n * s->P; g < (n + 1) * s->P; g++) {
					lacks &= !held_on(s, g, e);
				}
				if (!lacks || s->cnt[x] != 1 || held_on(s, g2, x)) {
					continue;
				}
				struct move m = {a, x, b, e, 0, 0};
				score(s, &m);
				if (best.a == UINT32_MAX || better(m.mx, m.sq, best.mx, best.sq)) {
					best = m;
				}
			}
			if (best.a == UINT32_MAX) {
				break;
			}
			apply(s, &best);
			int rc = exact(s, s->gpu);
			if (rc != 0) {
				return rc;
			}
			memcpy(s->sl, s->sl_try, s->N * sizeof(*s->sl));
		}
	}
	return 0;
}

/* pl_dispatch_reseat of from (dispatch-reseat.c), its exact value from
 * the layer's streams; into keep (and *mx, *sq) when better. */
static int try_reseat(struct ds *s, const uint32_t *from, uint32_t *keep, double *mx, double *sq)
{
	uint32_t *cand = malloc((size_t)s->N * sizeof(*cand));
	struct mp_dispatch_streams *st = mp_dispatch_streams_copy(s->start);
	int rc = cand && st ? 0 : MP_ENOMEM;
	bool changed = false;
	if (rc == 0) {
		memcpy(cand, from, (size_t)s->N * sizeof(*cand));
		rc = pl_dispatch_reseat(&s->d, s->w, s->E, s->G, s->S, s->start, cand, &changed);
	}
	if (rc == 0 && changed) {
		rc = mp_dispatch_layer(&s->d, st, cand, s->E, s->G, s->S, s->w, NULL, NULL, s->est);
		double cmx, csq;
		objective(s->est, s->G, &cmx, &csq);
		if (rc == 0 && better(cmx, csq, *mx, *sq)) {
			memcpy(keep, cand, (size_t)s->N * sizeof(*cand));
			*mx = cmx;
			*sq = csq;
		}
	}
	mp_dispatch_streams_free(st);
	free(cand);
	return rc;
}

int pl_dispatch_search(const struct mp_dispatch *d, const double *w, uint32_t E, uint32_t G, uint32_t S,
		       double effort, double deadline, struct mp_dispatch_streams *streams,
		       const unsigned char *pre, uint32_t n_pre, struct mp_layer_placement *lp)
{
	struct ds s;
	int rc = ds_init(&s, d, w, E, G, S, lp->slot_expert, streams, pre, n_pre);
	s.deadline = deadline;
	s.late = false;
	if (rc == 0 && d->rule == MP_DISPATCH_SGLANG) {
		rc = spread(&s);
	}
	uint64_t budget = (uint64_t)fmax(1.0, 400.0 * effort);
	uint64_t kicks = s.draws ? (uint64_t)fmax(1.0, 10.0 * effort) : 0;
	uint32_t *keep_slot = rc == 0 ? malloc((size_t)s.N * sizeof(*keep_slot)) : NULL;
	rc = rc == 0 && !keep_slot ? MP_ENOMEM : rc;
	double keep_mx = 0, keep_sq = 0;
	bool moved = true;
	uint64_t i = 0;
	for (uint64_t k = 0; rc == 0; k++) {
		for (; rc == 0 && moved && i < budget && !ds_late(&s); i++) {
			rc = step(&s, &moved);
		}
		double mx, sq;
		objective(s.gpu, G, &mx, &sq);
		if (rc == 0 && (k == 0 || better(mx, sq, keep_mx, keep_sq))) {
			memcpy(keep_slot, s.slot, (size_t)s.N * sizeof(*s.slot));
			keep_mx = mx;
			keep_sq = sq;
		}
		if (rc != 0 || k >= kicks || i >= budget || ds_late(&s)) {
			break;
		}
		rc = kick(&s, (uint32_t)k);
		moved = true;
	}
	for (int base = 0; rc == 0 && s.draws && s.n_pre == 0 && base < 2 && !ds_late(&s); base++) {
		/* re-seated from the search's plan and from the even split's */
		rc = try_reseat(&s, base ? lp->slot_expert : keep_slot, keep_slot, &keep_mx, &keep_sq);
	}
	if (rc == 0) {
		memcpy(lp->slot_expert, keep_slot, (size_t)s.N * sizeof(*s.slot));
		memcpy(s.slot, keep_slot, (size_t)s.N * sizeof(*s.slot));
		rc = run_pre(&s, streams, s.slot);
	}
	if (rc == 0) {
		rc = mp_dispatch_layer(d, streams, s.slot, E, G, S, w, NULL, lp->slot_load, lp->gpu_load);
	}
	if (rc == 0) {
		double total = 0;
		memset(lp->replicas, 0, E * sizeof(*lp->replicas));
		for (uint32_t p = 0; p < s.N; p++) {
			lp->replicas[s.slot[p]]++;
		}
		for (uint32_t e = 0; e < E; e++) {
			total += w[e];
		}
		objective(lp->gpu_load, G, &lp->max_load, &total);
		total = 0;
		for (uint32_t e = 0; e < E; e++) {
			total += w[e];
		}
		lp->mean_load = total / G;
		bool proven = lp->max_load <= lp->mean_load;
		mp_layer_placement_set_bound(lp, lp->mean_load,
					     proven ? MP_PLACE_OPTIMAL : s.late ? MP_PLACE_TIME_LIMIT : MP_PLACE_FEASIBLE);
		lp->method = d->rule == MP_DISPATCH_SGLANG ? "sglang-dispatch local search (bound: the mean)"
							   : "even split";
	}
	free(keep_slot);
	ds_free(&s);
	return rc;
}

/* SGLang's trivial row (init_trivial: physical p holds p % E) for a hidden
 * layer the loads skip, or the row of an earlier placed layer (row, when
 * not NULL), dispatched without tokens so the streams advance as SGLang's
 * walk over every row does. */
static int skip_row(const struct mp_dispatch *d, struct mp_dispatch_streams *st, uint32_t E, uint32_t G,
		    uint32_t S, const uint32_t *placed)
{
	if (placed) {
		return mp_dispatch_layer(d, st, placed, E, G, S, NULL, NULL, NULL, NULL);
	}
	uint32_t *row = malloc((size_t)G * S * sizeof(*row));
	if (!row) {
		return MP_ENOMEM;
	}
	for (uint32_t p = 0; p < G * S; p++) {
		row[p] = p % E;
	}
	int rc = mp_dispatch_layer(d, st, row, E, G, S, NULL, NULL, NULL, NULL);
	free(row);
	return rc;
}

/* The hidden-layer id of placement row l. */
static uint32_t row_id(const struct mp_loads *loads, const struct mp_place_options *opts, uint32_t l)
{
	if (loads->layer_ids) {
		return loads->layer_ids[l];
	}
	return opts->map_moe_ids && loads->n_layers == opts->map_n_moe ? opts->map_moe_ids[l] : l;
}

/* Walk the map's rows from *next up to row l's layer: rows that do not
 * depend on row l (trivial rows, copies of earlier rows) advance st now;
 * from the first copy of row l on (mp_map_row_source), they go into
 * pre[*n_pre] (1 a copy of row l, 0 trivial) for the search to run with
 * each map it tries. ids[n_layers] the rows' layers. */
static int walk_gap(const struct mp_dispatch *d, struct mp_dispatch_streams *st,
		    const struct mp_place_options *opts, const struct mp_placement *p, const uint32_t *ids,
		    uint32_t l, uint32_t next, unsigned char *pre, uint32_t *n_pre)
{
	const uint32_t E = p->n_experts, G = p->gpus, S = p->slots_per_gpu;
	int rc = 0;
	*n_pre = 0;
	for (uint32_t h = next; st && h < ids[l] && rc == 0; h++) {
		uint32_t src = opts->map_moe_ids
			? mp_map_row_source(h, opts->map_moe_ids, opts->map_n_moe, ids, p->n_layers)
			: UINT32_MAX;
		if (src == l || (*n_pre > 0 && src == UINT32_MAX)) {
			pre[(*n_pre)++] = src == l;
		} else {
			rc = skip_row(d, st, E, G, S, src == UINT32_MAX ? NULL : p->layers[src].slot_expert);
		}
	}
	return rc;
}

int pl_dispatch_place(const struct mp_loads *loads, const struct mp_place_options *opts, double deadline,
		      struct mp_placement *p)
{
	const struct mp_dispatch *d = &opts->dispatch;
	if (d->rule != MP_DISPATCH_SGLANG) {
		return 0; /* even and vLLM: 1/r, the even-split plan */
	}
	const uint32_t G = p->gpus, S = p->slots_per_gpu, E = p->n_experts;
	const uint32_t P = d->gpus_per_node ? d->gpus_per_node : G;
	if (G % P != 0) {
		return MP_EINVAL;
	}
	struct mp_dispatch_streams *st = NULL;
	uint32_t *ids = malloc((size_t)(p->n_layers ? p->n_layers : 1) * sizeof(*ids));
	int rc = ids ? 0 : MP_ENOMEM;
	for (uint32_t l = 0; ids && l < p->n_layers; l++) {
		ids[l] = row_id(loads, opts, l);
	}
	uint32_t span = ids && p->n_layers ? ids[p->n_layers - 1] + 1 : 1;
	unsigned char *pre = rc == 0 ? malloc(span) : NULL;
	rc = rc == 0 && !pre ? MP_ENOMEM : rc;
	if (rc == 0 && d->algorithm == MP_DISPATCH_STATIC && G / P > 1) {
		st = mp_dispatch_streams_new(G / P);
		rc = st ? 0 : MP_ENOMEM;
	}
	uint32_t next = 0; /* the next hidden layer SGLang walks */
	for (uint32_t l = 0; l < p->n_layers && rc == 0; l++) {
		uint32_t n_pre = 0;
		rc = walk_gap(d, st, opts, p, ids, l, next, pre, &n_pre);
		next = ids[l] + 1;
		struct mp_layer_placement *lp = &p->layers[l];
		if (rc == 0) {
			rc = pl_dispatch_search(d, mp_loads_row(loads, l), E, G, S, opts->effort, deadline, st, pre,
						n_pre, lp);
		}
		for (uint32_t n = 0; rc == 0 && lp->node_load && n < G / p->gpus_per_node; n++) {
			double sum = 0;
			for (uint32_t g = n * p->gpus_per_node; g < (n + 1) * p->gpus_per_node; g++) {
				sum += lp->gpu_load[g];
			}
			lp->node_load[n] = sum;
			lp->node_max_load = n == 0 || sum > lp->node_max_load ? sum : lp->node_max_load;
		}
	}
	mp_dispatch_streams_free(st);
	free(pre);
	free(ids);
	return rc;
}
