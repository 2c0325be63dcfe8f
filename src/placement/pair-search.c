/* Placement: the threshold test for two slots per GPU (S = 2; issue 25) as
 * an exact combinatorial search, without GLPK.
 *
 * The question and the condition are pair-exact.c's (its top comment):
 * is there a count vector r (lo_e <= r_e <= lo_e + spare, sum r = N) with
 *     F(t) = sum_e f_e(r_e, t) <= 0   at every point t,
 * f_e(r, t) = +r [t <= a - T/2] for a big item a = w_e / r > T/2, and
 * -r [a <= T/2 - t] for a small one. Every column f_e(r, .) is one integer
 * c = +-r on a prefix of the sorted points (big: t <= a - T/2; small:
 * t <= T/2 - a), so F is an integer vector and the search is exact.
 *
 * Depth-first over the experts, heaviest first, choosing each expert's
 * extra replicas d = r - lo (0, 1, ...). Three prunings, each exact:
 *  - bound: best[i][k][t] = the least sum over experts i.. at point t
 *    with exactly k extra replicas among them (a knapsack per point,
 *    computed backwards). A choice is tried only when
 *    F(t) + f(t) + best[i + 1][k - d][t] <= 0 at every point: otherwise no
 *    completion satisfies that point, since the completion's sum there is
 *    at least best. With k != 0 left after the last expert best is
 *    infinite: sum r = N exactly.
 *  - symmetry: experts whose columns are identical for every d are
 *    interchangeable; within a run of such experts (consecutive in the
 *    order) d is non-increasing, which keeps one permutation of each
 *    solution.
 *  - memo: the rest of the search depends only on (i, k, F) when expert i
 *    starts a run, so a state that failed there fails again; failed states
 *    are kept with their full key (no hash-only comparison) up to a memory
 *    cap.
 * A complete search that finds nothing proves that no count vector
 * satisfies the condition: T is a lower bound, as in pair-exact.c. A leaf
 * gives counts whose sorted pairing has max <= T. Work is counted in point
 * evaluations (P per tried choice, plus the table), never in time; over
 * the budget the answer is unknown and pair-exact.c falls back to its MIP.
 * tests/test-fewslot.c pins both against an enumeration of every count
 * vector and pairing.
 */
#include "placement/internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Relative slack of the classification threshold (pair-exact.c says why). */
#define P2S_SLACK 1e-9
/* "No completion": larger than any F, small enough that sums never overflow. */
#define P2S_INF (INT32_MAX / 4)
/* Largest table best[][][] built (entries; 4 bytes each). */
#define P2S_MAX_TABLE 4000000u
/* Memo of failed states: slots of the hash table, and the largest arena. */
#define P2S_MEMO_SLOTS (1u << 16)
#define P2S_MEMO_BYTES (32u << 20)

struct p2s_memo {
	uint32_t *slot;   /* [P2S_MEMO_SLOTS] entry + 1, 0 = empty */
	int32_t *arena;   /* entries of (2 + P) ints: i, k, F */
	uint32_t n, cap;  /* entries stored, entries that fit */
};

struct p2s {
	uint32_t E, K, P;   /* experts, spare, points */
	uint32_t *order;    /* [E] experts, heaviest first */
	int32_t *c;         /* [E][K + 1] coefficient of (order[i], d) */
	uint32_t *end;      /* [E][K + 1] its prefix of points */
	bool *same;         /* [E] columns identical to order[i - 1]'s */
	int32_t *best;      /* [E + 1][K + 1][P] */
	int32_t *F;         /* [P] */
	uint32_t *d;        /* [E] the choices on the current path */
	struct p2s_memo memo;
	uint64_t work, limit;
	bool stopped;
};

uint32_t pl_p2_least_count(double w, double Tc, uint32_t N)
{
	if (!(w > Tc)) {
		return 1;
	}
	double q = ceil(w / Tc);
	uint32_t lo = q > (double)N ? N + 1 : (uint32_t)q;
	while (lo > 1 && w / (lo - 1) <= Tc) {
		lo--;
	}
	while (lo <= N && w / lo > Tc) {
		lo++;
	}
	return lo;
}

bool pl_p2_least_counts(const struct pl_prob *prob, double Tc, uint32_t *lo, uint32_t *spare)
{
	uint64_t sum = 0;
	for (uint32_t e = 0; e < prob->E; e++) {
		lo[e] = pl_p2_least_count(prob->w[e], Tc, prob->N);
		sum += lo[e];
	}
	if (sum > prob->N) {
		return false;
	}
	*spare = prob->N - (uint32_t)sum;
	return true;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;
	return (x > y) - (x < y);
}

int pl_p2_points(const struct pl_prob *prob, double Tc, const uint32_t *lo, uint32_t spare,
		 double **pts, size_t *npts)
{
	double h = Tc / 2;
	size_t cap = 1;
	for (uint32_t e = 0; e < prob->E; e++) {
		for (uint32_t r = lo[e]; r <= lo[e] + spare && prob->w[e] / r > h; r++) {
			cap++;
		}
	}
	double *p = malloc(sizeof(*p) * cap);
	if (!p) {
		return MP_ENOMEM;
	}
	size_t n = 0;
	for (uint32_t e = 0; e < prob->E; e++) {
		for (uint32_t r = lo[e]; r <= lo[e] + spare && prob->w[e] / r > h; r++) {
			p[n++] = prob->w[e] / r - h;
		}
	}
	p[n++] = h;
	qsort(p, n, sizeof(*p), cmp_double);
	size_t u = 0;
	for (size_t i = 0; i < n; i++) {
		if (u == 0 || p[i] != p[u - 1]) {
			p[u++] = p[i];
		}
	}
	*pts = p;
	*npts = u;
	return 0;
}

/* Points t (sorted ascending) with pred(t): a prefix; pred as in
 * pair-exact.c's coef(), in the same floating-point expressions. */
static uint32_t prefix_end(const double *pts, uint32_t P, double a, double h)
{
	uint32_t lo = 0, hi = P;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		bool in = a > h ? pts[mid] <= a - h : a <= h - pts[mid];
		if (in) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo;
}

/* Columns of (order[i], d): coefficient and prefix end; runs of identical
 * experts. */
static void build_columns(struct p2s *s, const struct pl_prob *prob, double Tc,
			  const uint32_t *lo, const double *pts)
{
	double h = Tc / 2;
	uint32_t K1 = s->K + 1;
	for (uint32_t i = 0; i < s->E; i++) {
		uint32_t e = s->order[i];
		for (uint32_t d = 0; d < K1; d++) {
			uint32_t r = lo[e] + d;
			double a = prob->w[e] / r;
			s->c[i * K1 + d] = a > h ? (int32_t)r : -(int32_t)r;
			s->end[i * K1 + d] = prefix_end(pts, s->P, a, h);
		}
		s->same[i] = i > 0
			     && memcmp(&s->c[i * K1], &s->c[(i - 1) * K1], sizeof(*s->c) * K1) == 0
			     && memcmp(&s->end[i * K1], &s->end[(i - 1) * K1], sizeof(*s->end) * K1)
					== 0;
	}
}

static int32_t *best_at(const struct p2s *s, uint32_t i, uint32_t k)
{
	return &s->best[((size_t)i * (s->K + 1) + k) * s->P];
}

/* best[i][k][t] = min over d <= k of f_(i,d)(t) + best[i + 1][k - d][t];
 * best[E][k] = 0 for k = 0, infinite otherwise. */
static void build_best(struct p2s *s)
{
	uint32_t K1 = s->K + 1;
	for (uint32_t k = 0; k < K1; k++) {
		int32_t *b = best_at(s, s->E, k);
		for (uint32_t t = 0; t < s->P; t++) {
			b[t] = k == 0 ? 0 : P2S_INF;
		}
	}
	for (uint32_t i = s->E; i-- > 0;) {
		for (uint32_t k = 0; k < K1; k++) {
			int32_t *b = best_at(s, i, k);
			for (uint32_t t = 0; t < s->P; t++) {
				b[t] = P2S_INF;
			}
			for (uint32_t d = 0; d <= k; d++) {
				const int32_t *nx = best_at(s, i + 1, k - d);
				int32_t c = s->c[i * K1 + d];
				uint32_t end = s->end[i * K1 + d];
				for (uint32_t t = 0; t < s->P; t++) {
					int32_t v = nx[t] >= P2S_INF ? P2S_INF : nx[t] + (t < end ? c : 0);
					b[t] = v < b[t] ? v : b[t];
				}
			}
		}
	}
	s->work += (uint64_t)s->E * K1 * K1 / 2 * s->P;
}

static uint32_t memo_hash(uint32_t i, uint32_t k, const int32_t *F, uint32_t P)
{
	uint32_t h = 2166136261u ^ i;
	h = (h ^ k) * 16777619u;
	for (uint32_t t = 0; t < P; t++) {
		h = (h ^ (uint32_t)F[t]) * 16777619u;
	}
	return h;
}

/* The failed state (i, k, F): true when stored (find) or found (!add). */
static bool memo_probe(struct p2s *s, uint32_t i, uint32_t k, bool add)
{
	struct p2s_memo *m = &s->memo;
	if (!m->slot) {
		return false;
	}
	size_t w = 2 + (size_t)s->P;
	uint32_t mask = P2S_MEMO_SLOTS - 1;
	for (uint32_t h = memo_hash(i, k, s->F, s->P) & mask;; h = (h + 1) & mask) {
		if (m->slot[h] == 0) {
			if (!add || m->n >= m->cap) {
				return false;
			}
			int32_t *ent = &m->arena[m->n * w];
			ent[0] = (int32_t)i;
			ent[1] = (int32_t)k;
			memcpy(&ent[2], s->F, sizeof(*s->F) * s->P);
			m->slot[h] = ++m->n;
			return true;
		}
		const int32_t *ent = &m->arena[(m->slot[h] - 1) * w];
		if (ent[0] == (int32_t)i && ent[1] == (int32_t)k
		    && memcmp(&ent[2], s->F, sizeof(*s->F) * s->P) == 0) {
			return true;
		}
	}
}

/* Choice d for position i fits: F + f + best[i + 1][k - d] <= 0 everywhere. */
static bool fits(struct p2s *s, uint32_t i, uint32_t k, uint32_t d)
{
	uint32_t K1 = s->K + 1;
	const int32_t *nx = best_at(s, i + 1, k - d);
	int32_t c = s->c[i * K1 + d];
	uint32_t end = s->end[i * K1 + d];
	s->work += s->P;
	for (uint32_t t = 0; t < s->P; t++) {
		if (nx[t] >= P2S_INF || s->F[t] + (t < end ? c : 0) + nx[t] > 0) {
			return false;
		}
	}
	return true;
}

static void apply(struct p2s *s, uint32_t i, uint32_t d, int sign)
{
	uint32_t K1 = s->K + 1;
	int32_t c = s->c[i * K1 + d] * sign;
	uint32_t end = s->end[i * K1 + d];
	for (uint32_t t = 0; t < end; t++) {
		s->F[t] += c;
	}
}

/* Depth first from position i with k extra replicas left; dmax bounds d
 * within a run of identical experts. True when a leaf was reached (the
 * path is in s->d). */
static bool dfs(struct p2s *s, uint32_t i, uint32_t k, uint32_t dmax)
{
	if (i == s->E) {
		return k == 0;
	}
	if (s->work >= s->limit) {
		s->stopped = true;
		return false;
	}
	bool run_start = !s->same[i];
	if (run_start && memo_probe(s, i, k, false)) {
		return false;
	}
	uint32_t top = run_start ? k : (dmax < k ? dmax : k);
	for (uint32_t d = 0; d <= top && !s->stopped; d++) {
		if (!fits(s, i, k, d)) {
			continue;
		}
		apply(s, i, d, 1);
		s->d[i] = d;
		bool found = dfs(s, i + 1, k - d, d);
		apply(s, i, d, -1);
		if (found) {
			return true;
		}
	}
	if (run_start && !s->stopped) {
		(void)memo_probe(s, i, k, true);
	}
	return false;
}

static void p2s_free(struct p2s *s)
{
	free(s->order);
	free(s->c);
	free(s->end);
	free(s->same);
	free(s->best);
	free(s->F);
	free(s->d);
	free(s->memo.slot);
	free(s->memo.arena);
}

static bool p2s_alloc(struct p2s *s)
{
	size_t cols = (size_t)s->E * (s->K + 1);
	size_t w = 2 + (size_t)s->P;
	s->order = malloc(sizeof(*s->order) * s->E);
	s->c = malloc(sizeof(*s->c) * cols);
	s->end = malloc(sizeof(*s->end) * cols);
	s->same = malloc(sizeof(*s->same) * s->E);
	s->best = malloc(sizeof(*s->best) * (cols + s->K + 1) * s->P);
	s->F = calloc(s->P, sizeof(*s->F));
	s->d = calloc(s->E, sizeof(*s->d));
	s->memo.cap = (uint32_t)(P2S_MEMO_BYTES / (sizeof(int32_t) * w));
	if (s->memo.cap > P2S_MEMO_SLOTS / 2) {
		s->memo.cap = P2S_MEMO_SLOTS / 2;
	}
	s->memo.slot = calloc(P2S_MEMO_SLOTS, sizeof(*s->memo.slot));
	s->memo.arena = malloc(sizeof(*s->memo.arena) * w * s->memo.cap);
	return s->order && s->c && s->end && s->same && s->best && s->F && s->d && s->memo.slot
	       && s->memo.arena;
}

/* The search at classification threshold Tc (pl_p2_search and
 * pl_p2_search_exact). */
static int p2s_run(const struct pl_prob *prob, double Tc, uint64_t *budget, uint32_t *r)
{
	const uint32_t E = prob->E;
	if (E == 0) {
		return PL_P2_UNKNOWN; /* no experts: nothing to search */
	}
	struct p2s s = { .E = E, .limit = *budget };
	uint32_t *lo = malloc(sizeof(*lo) * E);
	double *pts = NULL;
	size_t npts = 0;
	int rc = PL_P2_UNKNOWN;
	if (!lo) {
		return MP_ENOMEM;
	}
	if (!pl_p2_least_counts(prob, Tc, lo, &s.K)) {
		free(lo);
		return PL_P2_INFEASIBLE;
	}
	if (pl_p2_points(prob, Tc, lo, s.K, &pts, &npts) != 0) {
		free(lo);
		return MP_ENOMEM;
	}
	s.P = (uint32_t)npts;
	double entries = ((double)prob->E + 1) * (s.K + 1) * (double)s.P;
	double table_work = (double)prob->E * (s.K + 1) * (s.K + 1) / 2 * s.P;
	if (npts > UINT32_MAX / 4 || entries > P2S_MAX_TABLE || table_work >= (double)s.limit) {
		goto out;
	}
	if (!p2s_alloc(&s)) {
		rc = MP_ENOMEM;
		goto out;
	}
	pl_sort_desc(s.order, prob->w, prob->E);
	build_columns(&s, prob, Tc, lo, pts);
	build_best(&s);
	if (dfs(&s, 0, s.K, s.K)) {
		for (uint32_t i = 0; i < E; i++) {
			r[s.order[i]] = lo[s.order[i]] + s.d[i];
		}
		rc = PL_P2_FEASIBLE;
	} else if (!s.stopped) {
		rc = PL_P2_INFEASIBLE;
	}
out:
	*budget -= s.work < *budget ? s.work : *budget;
	p2s_free(&s);
	free(pts);
	free(lo);
	return rc;
}

int pl_p2_search(const struct pl_prob *prob, double T, uint64_t *budget, uint32_t *r)
{
	if (prob->S != 2 || !(T > 0) || *budget == 0) {
		return PL_P2_UNKNOWN;
	}
	return p2s_run(prob, T * (1 + P2S_SLACK), budget, r);
}

/* Largest scaled load kept exact (integers below 2^52 in a double). */
#define P2S_EXACT_MAX 4503599627370496.0

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* lcm(1..K), or 0 once it exceeds limit. */
static double lcm_upto(uint32_t K, double limit)
{
	uint64_t L = 1;
	for (uint64_t k = 2; k <= K; k++) {
		uint64_t g = gcd_u64(L, k);
		if ((double)(L / g) * (double)k > limit) {
			return 0;
		}
		L = L / g * k;
	}
	return (double)L;
}

/* The largest count any plan with busiest GPU <= T can give an expert:
 * max_e (N - sum_{e' != e} lo_e'(T)), computed at T (1 + 1e-9) so that
 * rounding can only raise it. 0 when no counts reach T. */
static uint32_t max_count(const struct pl_prob *prob, double T, uint32_t *lo)
{
	uint32_t spare = 0, top = 0;
	if (!pl_p2_least_counts(prob, T * (1 + P2S_SLACK), lo, &spare)) {
		return 0;
	}
	for (uint32_t e = 0; e < prob->E; e++) {
		top = lo[e] > top ? lo[e] : top;
	}
	return top + spare;
}

int pl_p2_search_exact(const struct pl_prob *prob, const struct pl_sol *plan, uint64_t *budget)
{
	if (prob->S != 2 || prob->E == 0 || *budget == 0 || !(plan->max > 0)) {
		return PL_P2_UNKNOWN;
	}
	double wmax = 0;
	for (uint32_t e = 0; e < prob->E; e++) {
		if (!(prob->w[e] >= 0) || prob->w[e] != floor(prob->w[e])) {
			return PL_P2_UNKNOWN; /* integer loads only */
		}
		wmax = prob->w[e] > wmax ? prob->w[e] : wmax;
	}
	uint32_t *lo = malloc(sizeof(*lo) * prob->E);
	double *ws = malloc(sizeof(*ws) * prob->E);
	int rc = PL_P2_UNKNOWN;
	if (!lo || !ws) {
		rc = MP_ENOMEM;
		goto out;
	}
	uint32_t K = max_count(prob, plan->max, lo) + 1;
	double L = K > 1 ? lcm_upto(K, P2S_EXACT_MAX / (wmax > 1 ? wmax : 1)) : 0;
	if (!(L > 0)) {
		goto out;
	}
	/* the plan's busiest GPU in units of 1 / L: every count of a plan
	 * <= plan->max is at most K - 1 and divides L, so every such plan's
	 * GPU loads are whole units */
	double P = 0;
	for (uint32_t g = 0; g < prob->G; g++) {
		double load = 0;
		for (uint32_t k = 0; k < 2; k++) {
			uint32_t e = plan->slot[g * 2 + k];
			if (plan->r[e] >= K) {
				goto out;
			}
			load += prob->w[e] * (L / plan->r[e]);
		}
		P = load > P ? load : P;
	}
	for (uint32_t e = 0; e < prob->E; e++) {
		ws[e] = prob->w[e] * L;
	}
	struct pl_prob scaled;
	pl_prob_init(&scaled, ws, prob->E, prob->G, 2);
	uint32_t *r = lo; /* scratch: the answer is not used */
	rc = p2s_run(&scaled, P - 1, budget, r);
	rc = rc == PL_P2_FEASIBLE ? PL_P2_UNKNOWN : rc;
out:
	free(ws);
	free(lo);
	return rc;
}
