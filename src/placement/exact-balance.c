/* Placement: exact balancing by subset swaps (issue 17).
 *
 * A plan whose every GPU carries exactly the mean load sum(w) / G is
 * optimal (the mean bounds every plan). On real traces the mean is often
 * reachable: loads are token counts, and with many slots per GPU the sums
 * of S replica loads are dense. The heuristics stop a few tokens above the
 * mean; this search closes the rest in exact integers.
 *
 * Units: the replica counts r stay those of the plan; with D the lcm of
 * the counts used and w_e = M_e 2^K (K the smallest binary exponent), a
 * replica's load is the integer M_e D / r_e in units of 2^K / D, and the
 * mean T = sum_e M_e D / G must be an integer in those units (otherwise no
 * plan with these counts has every GPU at the mean and the search skips).
 *
 * Search: GPUs are fixed one at a time. The GPU with the largest deviation
 * |load - T| is made exact by swapping k of its replicas with k of another
 * unfixed GPU's (k = 1 .. K, every k-subset pair whose load difference is
 * exactly the deviation, found through a hash of the partner's subset
 * sums; no GPU may end with one expert twice), which passes the deviation
 * on to the partner; then the next GPU. Once all but one GPU are exact,
 * the last one is too (the total is fixed). A depth-first search over the
 * swaps found (a few per partner) backtracks when a GPU cannot be fixed.
 * Work (subsets looked at) is counted: the result depends only on the
 * input.
 */
#include "placement/exact.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;
__extension__ typedef __int128 i128;

/* Most k-subsets of one GPU enumerated for one swap size. */
#define BAL_MAX_SUBSETS 4096u
/* Most slots per GPU: the subsets looked at are counted as work, but
 * comparing two GPUs' experts costs S^2, so wider GPUs would take far
 * longer per unit (E = 384 on 8 GPUs x 52 slots: 0.4 s a layer); the
 * shipped traces it proves have at most 17. */
#define BAL_MAX_S 20u
/* Moves tried per partner (or pair of partners) at each step. */
#define BAL_HITS 64u
/* Most (subset, subset) pairs of two GPUs in the table of a two-partner
 * move. */
#define BAL_PAIR_CAP 16384u
/* Partners combined in pairs for two-partner moves at each step. */
#define BAL_PAIR_PARTNERS 6u

/* A move that makes GPU a exact: the replicas ma of a swap with mp of GPU
 * p, then (q != UINT32_MAX) the replicas ma2 of a with mq of GPU q. */
struct bal_move {
	uint64_t ma, mp, ma2, mq;
	uint32_t p, q;
};

struct bal_pair {
	i128 diff;
	uint64_t ma, mq;
	bool used;
};

struct bal_entry {
	u128 sum;
	uint64_t mask;
};

struct bal {
	const struct pl_prob *prob;
	uint32_t G, S, K;
	uint32_t *slot;  /* [N] the plan being balanced */
	const uint32_t *r;
	u128 *item;      /* [E] one replica's load in units */
	i128 *dev;       /* [G] load - T */
	u128 t;          /* the mean T */
	uint32_t *pos;   /* [G] GPUs; [0, level) fixed */
	struct bal_entry *tab; /* hash of a partner's subset sums */
	uint32_t tbits;  /* the table's size for the largest swap size */
	struct bal_move *hits; /* [G][BAL_HITS] moves found per level */
	struct bal_pair *ptab; /* [2 BAL_PAIR_CAP] hash of (a, q) swaps by load difference */
	uint64_t work;
	uint64_t max_work;
};

static uint64_t binom_capped(uint32_t n, uint32_t k)
{
	uint64_t c = 1;
	for (uint32_t i = 1; i <= k; i++) {
		c = c * (n - k + i) / i;
		if (c > BAL_MAX_SUBSETS) {
			return BAL_MAX_SUBSETS + 1;
		}
	}
	return c;
}

/* item[e] = M_e D / r_e and the mean T (exact.h). */
bool pl_x_scale_counts(const struct pl_prob *prob, const uint32_t *r, pl_u128 *item, pl_u128 *t_out)
{
	u128 d = 1;
	for (uint32_t e = 0; e < prob->E; e++) {
		uint64_t a = (uint64_t)(d % r[e]);
		uint64_t b = r[e];
		while (b) {
			uint64_t t = a % b;
			a = b;
			b = t;
		}
		d *= r[e] / a;
		if (d > ((u128)1 << 40)) {
			return false;
		}
	}
	int k = 0;
	if (!pl_x_mantissas(prob, 24, item, &k)) {
		return false;
	}
	u128 total = 0;
	for (uint32_t e = 0; e < prob->E; e++) {
		item[e] = item[e] * d / r[e];
		total += item[e] * r[e];
		if (total > ((u128)1 << 120)) {
			return false;
		}
	}
	if (total % prob->G != 0) {
		return false;
	}
	*t_out = total / prob->G;
	return true;
}

static uint64_t hash_u128(u128 v)
{
	uint64_t h = (uint64_t)v ^ ((uint64_t)(v >> 64) * 0x9e3779b97f4a7c15ull);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

static u128 subset_sum(const struct bal *b, uint32_t g, uint64_t mask)
{
	u128 s = 0;
	const uint32_t *sl = b->slot + (size_t)g * b->S;
	for (uint32_t i = 0; i < b->S; i++) {
		if (mask >> i & 1) {
			s += b->item[sl[i]];
		}
	}
	return s;
}

/* Next k-subset mask after m (Gosper's hack); 0 after the last of S bits. */
static uint64_t next_subset(uint64_t m, uint32_t S)
{
	uint64_t c = m & -m;
	uint64_t rr = m + c;
	uint64_t n = (((rr ^ m) >> 2) / c) | rr;
	return (S < 64 && n >> S) ? 0 : n;
}

/* True when moving the replicas ma of GPU a to GPU p, and mp of p to a,
 * leaves no expert twice on either GPU. */
static bool swap_ok(const struct bal *b, uint32_t a, uint64_t ma, uint32_t p, uint64_t mp)
{
	const uint32_t *sa = b->slot + (size_t)a * b->S;
	const uint32_t *sp = b->slot + (size_t)p * b->S;
	for (uint32_t i = 0; i < b->S; i++) {
		for (uint32_t j = 0; j < b->S; j++) {
			bool ia = ma >> i & 1;
			bool jp = mp >> j & 1;
			if (ia != jp && sa[i] == sp[j]) {
				return false; /* one moves onto a GPU where the other stays */
			}
		}
	}
	return true;
}

/* Swaps of k replicas between GPUs a and p that make a exact: up to
 * BAL_HITS into out; returns how many. */
static uint32_t find_swaps(struct bal *b, uint32_t a, uint32_t p, uint32_t k, struct bal_move *out,
			   uint32_t have)
{
	uint32_t tsize = 2;
	while (tsize < 2 * binom_capped(b->S, k)) {
		tsize <<= 1;
	}
	memset(b->tab, 0, sizeof(*b->tab) * tsize);
	b->work += tsize / 8;
	uint64_t first = ((uint64_t)1 << k) - 1;
	for (uint64_t m = first; m; m = next_subset(m, b->S)) {
		u128 s = subset_sum(b, p, m);
		uint32_t i = (uint32_t)hash_u128(s) & (tsize - 1);
		while (b->tab[i].mask) {
			i = (i + 1) & (tsize - 1);
		}
		b->tab[i].sum = s;
		b->tab[i].mask = m;
		b->work++;
	}
	i128 da = b->dev[a];
	for (uint64_t m = first; m && have < BAL_HITS; m = next_subset(m, b->S)) {
		b->work++;
		i128 want = (i128)subset_sum(b, a, m) - da;
		if (want < 0) {
			continue;
		}
		for (uint32_t i = (uint32_t)hash_u128((u128)want) & (tsize - 1); b->tab[i].mask;
		     i = (i + 1) & (tsize - 1)) {
			if (b->tab[i].sum == (u128)want && swap_ok(b, a, m, p, b->tab[i].mask)) {
				out[have] = (struct bal_move){ m, b->tab[i].mask, 0, 0, p, UINT32_MAX };
				if (++have == BAL_HITS) {
					break;
				}
			}
		}
	}
	return have;
}

static void apply_swap(struct bal *b, uint32_t a, uint64_t ma, uint32_t p, uint64_t mp)
{
	uint32_t *sa = b->slot + (size_t)a * b->S;
	uint32_t *sp = b->slot + (size_t)p * b->S;
	u128 outa = subset_sum(b, a, ma);
	u128 outp = subset_sum(b, p, mp);
	uint32_t j = 0;
	for (uint32_t i = 0; i < b->S; i++) {
		if (!(ma >> i & 1)) {
			continue;
		}
		while (!(mp >> j & 1)) {
			j++;
		}
		uint32_t t = sa[i];
		sa[i] = sp[j];
		sp[j] = t;
		j++;
	}
	b->dev[a] += (i128)outp - (i128)outa;
	b->dev[p] += (i128)outa - (i128)outp;
}

static bool bal_level(struct bal *b, uint32_t level);

/* Largest k with sum_{j <= k} C(S, j)^2 <= cap (at least 1). */
static uint32_t pair_k(uint32_t S)
{
	uint64_t n = 0;
	uint32_t k = 0;
	while (k + 1 < S) {
		uint64_t c = binom_capped(S, k + 1);
		if (n + c * c > BAL_PAIR_CAP) {
			break;
		}
		n += c * c;
		k++;
	}
	return k ? k : 1;
}

/* The table of swaps between GPUs a and q by load difference. */
static uint32_t pair_table(struct bal *b, uint32_t a, uint32_t q, uint32_t kmax)
{
	uint64_t count = 0;
	for (uint32_t k = 1; k <= kmax; k++) {
		uint64_t c = binom_capped(b->S, k);
		count += c * c;
	}
	uint32_t tsize = 2;
	while (tsize < 2 * count) {
		tsize <<= 1;
	}
	memset(b->ptab, 0, sizeof(*b->ptab) * tsize);
	b->work += tsize / 8;
	for (uint32_t k = 1; k <= kmax; k++) {
		uint64_t first = ((uint64_t)1 << k) - 1;
		for (uint64_t ma = first; ma; ma = next_subset(ma, b->S)) {
			i128 sa = (i128)subset_sum(b, a, ma);
			for (uint64_t mq = first; mq; mq = next_subset(mq, b->S)) {
				i128 d = sa - (i128)subset_sum(b, q, mq);
				uint32_t i = (uint32_t)hash_u128((u128)d) & (tsize - 1);
				while (b->ptab[i].used) {
					i = (i + 1) & (tsize - 1);
				}
				b->ptab[i] = (struct bal_pair){ d, ma, mq, true };
				b->work++;
			}
		}
	}
	return tsize;
}

/* A swap of a with p (masks ma, mp, valid) followed by one of a with q
 * from the table whose differences add up to a's deviation: up to
 * BAL_HITS - have into out. */
static uint32_t match_pairs(struct bal *b, uint32_t a, uint32_t p, uint64_t ma, uint64_t mp,
			    uint32_t q, uint32_t tsize, struct bal_move *out, uint32_t have)
{
	i128 want = b->dev[a] - ((i128)subset_sum(b, a, ma) - (i128)subset_sum(b, p, mp));
	for (uint32_t i = (uint32_t)hash_u128((u128)want) & (tsize - 1);
	     b->ptab[i].used && have < BAL_HITS; i = (i + 1) & (tsize - 1)) {
		const struct bal_pair *e = &b->ptab[i];
		if (e->diff != want || (e->ma & ma)) {
			continue;
		}
		apply_swap(b, a, ma, p, mp);
		bool ok = swap_ok(b, a, e->ma, q, e->mq);
		apply_swap(b, a, ma, p, mp);
		if (ok) {
			out[have++] = (struct bal_move){ ma, mp, e->ma, e->mq, p, q };
		}
	}
	return have;
}

/* Two-partner moves making a exact, swapping with p then with q. */
static uint32_t find_double(struct bal *b, uint32_t a, uint32_t p, uint32_t q,
			    struct bal_move *out)
{
	uint32_t kmax = pair_k(b->S);
	uint32_t tsize = pair_table(b, a, q, kmax);
	uint32_t have = 0;
	for (uint32_t k = 1; k <= kmax && have < BAL_HITS; k++) {
		uint64_t first = ((uint64_t)1 << k) - 1;
		for (uint64_t ma = first; ma && have < BAL_HITS; ma = next_subset(ma, b->S)) {
			for (uint64_t mp = first; mp && have < BAL_HITS; mp = next_subset(mp, b->S)) {
				b->work++;
				if (swap_ok(b, a, ma, p, mp)) {
					have = match_pairs(b, a, p, ma, mp, q, tsize, out, have);
				}
			}
		}
	}
	return have;
}

static void apply_move(struct bal *b, uint32_t a, const struct bal_move *m, bool undo)
{
	if (!undo) {
		apply_swap(b, a, m->ma, m->p, m->mp);
	}
	if (m->q != UINT32_MAX) {
		apply_swap(b, a, m->ma2, m->q, m->mq);
	}
	if (undo) {
		apply_swap(b, a, m->ma, m->p, m->mp);
	}
}

/* A hash of the experts on GPU g, independent of their order. */
static uint64_t content_hash(const struct bal *b, uint32_t g)
{
	uint64_t h = 0;
	for (uint32_t i = 0; i < b->S; i++) {
		h += hash_u128((u128)b->slot[(size_t)g * b->S + i] + 1);
	}
	return h;
}

/* Try the moves found for GPU pos[level]: apply, go deeper, undo. Moves
 * that leave a with the same experts as an earlier one leave the other
 * GPUs with the same replicas too: only the first is tried. */
static bool try_moves(struct bal *b, uint32_t level, const struct bal_move *hits, uint32_t n)
{
	uint32_t a = b->pos[level];
	uint64_t seen[BAL_HITS];
	uint32_t nseen = 0;
	for (uint32_t h = 0; h < n; h++) {
		apply_move(b, a, &hits[h], false);
		uint64_t c = content_hash(b, a);
		bool dup = false;
		for (uint32_t i = 0; i < nseen && !dup; i++) {
			dup = seen[i] == c;
		}
		if (!dup) {
			seen[nseen++] = c;
			if (bal_level(b, level + 1)) {
				return true;
			}
		}
		apply_move(b, a, &hits[h], true);
		if (b->work > b->max_work) {
			return false;
		}
	}
	return false;
}

/* Try every swap of GPU pos[level] with partner pos[q] that makes it exact. */
static bool try_partner(struct bal *b, uint32_t level, uint32_t q)
{
	uint32_t a = b->pos[level];
	uint32_t p = b->pos[q];
	struct bal_move *hits = b->hits + (size_t)level * BAL_HITS;
	uint32_t n = 0;
	for (uint32_t k = 1; k <= b->K && n < BAL_HITS; k++) {
		n = find_swaps(b, a, p, k, hits, n);
	}
	return try_moves(b, level, hits, n);
}

/* Two-partner moves of GPU pos[level] with the first unfixed partners. */
static bool try_pairs(struct bal *b, uint32_t level)
{
	uint32_t a = b->pos[level];
	struct bal_move *hits = b->hits + (size_t)level * BAL_HITS;
	uint32_t last = b->G < level + 1 + BAL_PAIR_PARTNERS ? b->G : level + 1 + BAL_PAIR_PARTNERS;
	for (uint32_t i = level + 1; i < last; i++) {
		for (uint32_t j = level + 1; j < last; j++) {
			if (i == j || b->work > b->max_work) {
				continue;
			}
			uint32_t n = find_double(b, a, b->pos[i], b->pos[j], hits);
			if (try_moves(b, level, hits, n)) {
				return true;
			}
		}
	}
	return false;
}

/* The last three GPUs, solved completely: every way to give the first
 * GPU S of their 3 S replicas with load exactly T (meet in the middle over
 * the two halves of the replicas), each followed by every split of the
 * other 2 S into two GPUs of load T. Only for 3 S <= BAL_TRIPLE_MAX. */
#define BAL_TRIPLE_MAX 30u

struct triple {
	uint32_t n;
	uint32_t e[BAL_TRIPLE_MAX]; /* expert of each replica */
	u128 v[BAL_TRIPLE_MAX];     /* its load */
};

static bool distinct(const struct triple *t, uint32_t mask)
{
	for (uint32_t i = 0; i < t->n; i++) {
		for (uint32_t j = i + 1; j < t->n; j++) {
			if ((mask >> i & 1) && (mask >> j & 1) && t->e[i] == t->e[j]) {
				return false;
			}
		}
	}
	return true;
}

static u128 mask_sum(const struct triple *t, uint32_t mask)
{
	u128 s = 0;
	for (uint32_t i = 0; i < t->n; i++) {
		if (mask >> i & 1) {
			s += t->v[i];
		}
	}
	return s;
}

/* A split of the replicas rest (2 S of them) into two GPUs of load T:
 * the mask of the first, or 0. */
static uint32_t split_two(struct bal *b, const struct triple *t, uint32_t rest)
{
	uint32_t idx[BAL_TRIPLE_MAX] = { 0 };
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->n; i++) {
		if (rest >> i & 1) {
			idx[n++] = i;
		}
	}
	if (n < 2 || b->S < 2) {
		return 0; /* two GPUs of S >= 2 replicas each, always, here */
	}
	/* the first replica goes to the first GPU; S - 1 of the other n - 1 */
	uint64_t first = ((uint64_t)1 << (b->S - 1)) - 1;
	for (uint64_t m = first; m; m = next_subset(m, n - 1)) {
		b->work++;
		uint32_t x = 1u << idx[0];
		for (uint32_t i = 0; i + 1 < n; i++) {
			if (m >> i & 1) {
				x |= 1u << idx[i + 1];
			}
		}
		if (mask_sum(t, x) == b->t && distinct(t, x) && distinct(t, rest & ~x)) {
			return x;
		}
	}
	return 0;
}

static void write_triple(struct bal *b, const uint32_t *g, const struct triple *t,
			 const uint32_t *masks)
{
	for (uint32_t k = 0; k < 3; k++) {
		uint32_t j = 0;
		for (uint32_t i = 0; i < t->n; i++) {
			if (masks[k] >> i & 1) {
				b->slot[(size_t)g[k] * b->S + j++] = t->e[i];
			}
		}
		b->dev[g[k]] = 0;
	}
}

/* The subsets of replicas [h, n) of the triple into b->ptab by load. */
static uint32_t triple_table(struct bal *b, const struct triple *t, uint32_t h)
{
	uint32_t tsize = 2u << (t->n - h);
	memset(b->ptab, 0, sizeof(*b->ptab) * tsize);
	b->work += tsize / 8;
	for (uint32_t m = 0; m < 1u << (t->n - h); m++) {
		u128 sm = mask_sum(t, m << h);
		uint32_t i = (uint32_t)hash_u128(sm) & (tsize - 1);
		while (b->ptab[i].used) {
			i = (i + 1) & (tsize - 1);
		}
		b->ptab[i] = (struct bal_pair){ (i128)sm, (uint64_t)m << h,
						(uint64_t)__builtin_popcount(m), true };
		b->work++;
	}
	return tsize;
}

static bool solve_triple(struct bal *b, uint32_t level)
{
	uint32_t g[3] = { b->pos[level], b->pos[level + 1], b->pos[level + 2] };
	struct triple t = { .n = 3 * b->S };
	for (uint32_t k = 0; k < 3; k++) {
		for (uint32_t i = 0; i < b->S; i++) {
			t.e[k * b->S + i] = b->slot[(size_t)g[k] * b->S + i];
			t.v[k * b->S + i] = b->item[t.e[k * b->S + i]];
		}
	}
	if (t.n < 6 || t.n > BAL_TRIPLE_MAX) {
		return false; /* 3 S with 2 <= S <= 10, always, here */
	}
	uint32_t all = (1u << t.n) - 1;
	/* the first GPU takes replica 0 (the three GPUs are interchangeable
	 * here) and S - 1 of the others: those below h, then a subset of
	 * [h, n) from the table (meet in the middle) */
	uint32_t h = 1 + (t.n - 1) / 2;
	uint32_t tsize = triple_table(b, &t, h);
	for (uint32_t m1 = 0; m1 < 1u << (h - 1); m1++) {
		uint32_t lo = (m1 << 1) | 1u;
		uint32_t c1 = (uint32_t)__builtin_popcount(lo);
		u128 s1 = mask_sum(&t, lo);
		if (++b->work > b->max_work) {
			return false;
		}
		if (c1 > b->S || s1 > b->t) {
			continue;
		}
		i128 want = (i128)(b->t - s1);
		for (uint32_t i = (uint32_t)hash_u128((u128)want) & (tsize - 1); b->ptab[i].used;
		     i = (i + 1) & (tsize - 1)) {
			const struct bal_pair *e = &b->ptab[i];
			uint32_t x = lo | (uint32_t)e->ma;
			if (e->diff != want || e->mq + c1 != b->S || !distinct(&t, x)) {
				continue;
			}
			uint32_t y = split_two(b, &t, all & ~x);
			if (y) {
				uint32_t masks[3] = { x, y, all & ~x & ~y };
				write_triple(b, g, &t, masks);
				return true;
			}
		}
	}
	return false;
}

static i128 iabs128(i128 v)
{
	return v < 0 ? -v : v;
}

static bool bal_level(struct bal *b, uint32_t level)
{
	if (b->work > b->max_work) {
		return false;
	}
	/* the unfixed GPU farthest from the mean goes to position level */
	uint32_t far = level;
	for (uint32_t i = level + 1; i < b->G; i++) {
		if (iabs128(b->dev[b->pos[i]]) > iabs128(b->dev[b->pos[far]])) {
			far = i;
		}
	}
	if (b->dev[b->pos[far]] == 0) {
		return true; /* every GPU is exact */
	}
	if (level + 3 == b->G && 3 * b->S <= BAL_TRIPLE_MAX) {
		return solve_triple(b, level);
	}
	uint32_t t = b->pos[level];
	b->pos[level] = b->pos[far];
	b->pos[far] = t;
	bool neg = b->dev[b->pos[level]] < 0;
	bool ok = false;
	/* partners on the other side of the mean first, then the others */
	for (int pass = 0; pass < 2 && !ok && b->work <= b->max_work; pass++) {
		for (uint32_t q = level + 1; q < b->G && !ok && b->work <= b->max_work; q++) {
			bool pneg = b->dev[b->pos[q]] < 0;
			if ((pass == 0) == (pneg != neg)) {
				ok = try_partner(b, level, q);
			}
		}
	}
	if (!ok && level + 2 < b->G) {
		ok = try_pairs(b, level);
	}
	if (!ok) {
		b->pos[far] = b->pos[level];
		b->pos[level] = t;
	}
	return ok;
}

static void bal_free(struct bal *b)
{
	free(b->slot);
	free(b->item);
	free(b->dev);
	free(b->pos);
	free(b->tab);
	free(b->hits);
	free(b->ptab);
}

/* Largest swap size: k-subsets of a GPU at most BAL_MAX_SUBSETS, k < S. */
static uint32_t bal_max_k(uint32_t S)
{
	uint32_t k = 0;
	while (k + 1 < S && binom_capped(S, k + 1) <= BAL_MAX_SUBSETS) {
		k++;
	}
	return k;
}

static int bal_init(struct bal *b, const struct pl_prob *prob, const struct pl_sol *sol,
		    u128 *t_out)
{
	memset(b, 0, sizeof(*b));
	b->prob = prob;
	b->G = prob->G;
	b->S = prob->S;
	b->r = sol->r;
	b->K = bal_max_k(prob->S);
	b->tbits = 1;
	while ((1u << b->tbits) < 2 * BAL_MAX_SUBSETS) {
		b->tbits++;
	}
	b->slot = malloc(sizeof(*b->slot) * prob->N);
	b->item = calloc(prob->E, sizeof(*b->item));
	b->dev = calloc(prob->G, sizeof(*b->dev));
	b->pos = calloc(prob->G, sizeof(*b->pos));
	b->tab = calloc((size_t)1 << b->tbits, sizeof(*b->tab));
	b->hits = calloc((size_t)prob->G * BAL_HITS, sizeof(*b->hits));
	b->ptab = calloc(4 * BAL_PAIR_CAP, sizeof(*b->ptab));
	if (!b->slot || !b->item || !b->dev || !b->pos || !b->tab || !b->hits || !b->ptab) {
		return MP_ENOMEM;
	}
	memcpy(b->slot, sol->slot, sizeof(*b->slot) * prob->N);
	return pl_x_scale_counts(prob, sol->r, b->item, t_out) ? 0 : 1;
}

/* One search on the replica counts and packing of sol (slots only are
 * used); on success sol holds the balanced plan. */
static int balance_run(const struct pl_prob *prob, struct pl_sol *sol, uint64_t max_work,
		       uint64_t *used, bool *found)
{
	*found = false;
	struct bal b;
	u128 t = 0;
	int rc = bal_init(&b, prob, sol, &t);
	if (rc != 0) {
		bal_free(&b);
		return rc < 0 ? rc : 0;
	}
	b.max_work = max_work;
	b.t = t;
	for (uint32_t g = 0; g < b.G; g++) {
		b.pos[g] = g;
		b.dev[g] = (i128)subset_sum(&b, g, ((uint64_t)1 << b.S) - 1) - (i128)t;
	}
	*found = bal_level(&b, 0);
	*used = b.work;
	if (*found) {
		memcpy(sol->slot, b.slot, sizeof(*sol->slot) * prob->N);
		pl_sol_eval(sol, prob);
	}
	bal_free(&b);
	return 0;
}

static bool divides(double w, uint32_t r)
{
	return r == 1 || fmod(w, (double)r) == 0;
}

/* One step of integral_counts: the change of one count by dir (+1 or -1)
 * that keeps every count a divisor of its load and gives the smallest
 * largest replica load; false when none. */
static bool integral_step(const struct pl_prob *prob, uint32_t *r, int dir)
{
	uint32_t pick = UINT32_MAX;
	double pick_v = 0;
	for (uint32_t e = 0; e < prob->E; e++) {
		uint32_t nr = dir > 0 ? r[e] + 1 : r[e] - 1;
		if (nr < 1 || nr > prob->G || !divides(prob->w[e], nr)) {
			continue;
		}
		/* up: the heaviest replica gains most; down: the lightest loses least */
		double v = dir > 0 ? prob->w[e] / r[e] : -prob->w[e] / nr;
		if (pick == UINT32_MAX || v > pick_v) {
			pick = e;
			pick_v = v;
		}
	}
	if (pick == UINT32_MAX) {
		return false;
	}
	r[pick] = dir > 0 ? r[pick] + 1 : r[pick] - 1;
	return true;
}

/* Replica counts near r whose every count divides its expert's load (so
 * every replica load is a whole multiple of the loads' unit and fractional
 * parts cannot keep a GPU off the mean); false when none was found or they
 * equal r. */
static bool integral_counts(const struct pl_prob *prob, const uint32_t *r, uint32_t *out)
{
	bool changed = false;
	uint64_t sum = 0;
	for (uint32_t e = 0; e < prob->E; e++) {
		out[e] = r[e];
		for (uint32_t d = 0; !divides(prob->w[e], out[e]); d++) {
			changed = true;
			/* the nearest divisor, lower first */
			uint32_t lo = r[e] > d + 1 ? r[e] - d - 1 : 1;
			uint32_t hi = r[e] + d + 1;
			out[e] = divides(prob->w[e], lo) ? lo : hi <= prob->G ? hi : out[e];
		}
		sum += out[e];
	}
	for (uint32_t it = 0; it < prob->N && sum != prob->N; it++) {
		int dir = sum < prob->N ? 1 : -1;
		if (!integral_step(prob, out, dir)) {
			return false;
		}
		sum = dir > 0 ? sum + 1 : sum - 1;
	}
	return changed && sum == prob->N;
}

/* True when the mean is a whole number of units for counts r. */
static bool viable(const struct pl_prob *prob, const uint32_t *r, struct pl_work *work)
{
	u128 *item = calloc(prob->E, sizeof(*item));
	u128 t = 0;
	bool ok = item && pl_x_scale_counts(prob, r, item, &t);
	(void)work;
	free(item);
	return ok;
}

int pl_balance_exact(const struct pl_prob *prob, struct pl_sol *best, uint64_t max_work,
		     bool *found)
{
	*found = false;
	if (prob->S < 2 || prob->S > BAL_MAX_S || prob->G < 2 || !(prob->sum > 0)) {
		return 0;
	}
	struct pl_sol cand;
	struct pl_work work;
	memset(&work, 0, sizeof(work));
	uint32_t *r2 = malloc(sizeof(*r2) * prob->E);
	int rc = MP_ENOMEM;
	if (!r2 || pl_sol_alloc(&cand, prob) != 0) {
		free(r2);
		return MP_ENOMEM;
	}
	if (pl_work_alloc(&work, prob) != 0) {
		goto out;
	}
	/* first the plan's own counts, then counts that divide the loads;
	 * only those whose mean is a whole number of units */
	bool other = integral_counts(prob, best->r, r2) && viable(prob, r2, &work);
	pl_sol_copy(&cand, best, prob);
	uint64_t used = 0;
	rc = 0;
	if (viable(prob, best->r, &work)) {
		rc = balance_run(prob, &cand, other ? max_work / 3 : max_work, &used, found);
	}
	if (rc == 0 && !*found && other && pl_pack_bldm(prob, r2, &cand, &work)) {
		pl_improve(prob, &cand, &work, (double)INFINITY);
		rc = balance_run(prob, &cand, max_work - used, &used, found);
	}
	if (rc == 0 && *found) {
		*found = pl_x_accept(prob, best, &cand) && pl_x_balanced(prob, best);
	}
out:
	free(r2);
	pl_sol_free(&cand);
	pl_work_free(&work);
	return rc;
}
