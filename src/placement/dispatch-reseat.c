/* SGLang's static dispatch over several nodes (issue 24): a layer re-seated
 * so that SGLang's random choices fall evenly, and then packed.
 *
 * Why this works (sgl-project/sglang 60d36e7, expert_location.py; the rule
 * as moeplan/dispatch.h states it): with at most one replica of an expert
 * per node, every rank of a node that holds the expert sends to that
 * replica, whichever of the node's GPUs it is on; the ranks of the nodes
 * that hold none draw among the candidates, which are ordered by slot and
 * so by node. A node's random stream advances only at experts it draws
 * for, by an amount that depends on the candidate count and the number of
 * drawing ranks, never on which GPU within a node holds a replica, and an
 * expert with one replica draws nothing. Hence, taking a layer's experts
 * in id order (the order SGLang walks them):
 *  - the node set of each multi-replica expert fixes how many ranks send
 *    to each of its replicas, given the node sets of the experts before
 *    it; trying several node sets for it and keeping the most even (the
 *    fewest ranks on its fullest replica) is exact, because no later
 *    choice changes it;
 *  - once every node set is fixed, every replica's load is fixed: the
 *    replicas stay on their node (any GPU of it) and the single-replica
 *    experts may go anywhere, without changing any draw. What is left is
 *    packing fixed loads into G GPUs of S slots, some of them tied to a
 *    node: heaviest first onto the lightest GPU allowed (a node keeps room
 *    for the replicas still to come), then swaps at the busiest GPU.
 * The caller evaluates the result with mp_dispatch_layer and keeps it
 * only if it is better; the rows before the layer must not depend on it
 * (no copies of it earlier in the map). Work is bounded by the shape (node
 * sets tried per expert, RS_STEPS swaps per GPU), so plans do not depend
 * on the machine. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "moeplan/dispatch.h"

#define ANY UINT32_MAX
#define RS_STEPS 64u

struct item {
	double load;
	uint32_t e;
	uint32_t node; /* ANY: a single-replica expert, free to go anywhere */
};

struct rs {
	uint32_t E, G, S, N, P, nodes;
	const double *w;
	uint32_t *cnt;      /* [E] replicas */
	unsigned char *in;  /* [E * nodes]: the node set of e */
	uint32_t *pinned;   /* [nodes]: replicas tied to each node */
	double *mass;       /* [nodes]: load of the replicas tied to each node so far */
	unsigned char *was;    /* [nodes]: the node set an expert came with */
	unsigned char *bestin; /* [nodes]: the best node set tried */
	struct item *items; /* [N] */
	uint32_t n_items;
	uint32_t *cands;    /* [nodes] */
	uint32_t *ranks;    /* [nodes] */
};

static void rs_free(struct rs *r)
{
	free(r->cnt);
	free(r->in);
	free(r->pinned);
	free(r->mass);
	free(r->was);
	free(r->bestin);
	free(r->items);
	free(r->cands);
	free(r->ranks);
}

/* Counts and node sets from slot; false when an expert has more replicas
 * than there are nodes (then two share a node: not handled here). */
static bool rs_sets(struct rs *r, const uint32_t *slot)
{
	for (uint32_t p = 0; p < r->N; p++) {
		uint32_t e = slot[p];
		r->cnt[e]++;
		r->in[(size_t)e * r->nodes + p / (r->S * r->P)] = 1;
	}
	for (uint32_t e = 0; e < r->E; e++) {
		if (r->cnt[e] > r->nodes) {
			return false;
		}
		uint32_t have = 0;
		for (uint32_t n = 0; n < r->nodes; n++) {
			have += r->in[(size_t)e * r->nodes + n];
		}
		while (have < r->cnt[e]) { /* two on one node: the emptiest other node */
			uint32_t pick = ANY;
			for (uint32_t n = 0; n < r->nodes; n++) {
				if (!r->in[(size_t)e * r->nodes + n] && (pick == ANY || r->pinned[n] < r->pinned[pick])) {
					pick = n;
				}
			}
			r->in[(size_t)e * r->nodes + pick] = 1;
			have++;
		}
		for (uint32_t n = 0; r->cnt[e] > 1 && n < r->nodes; n++) {
			r->pinned[n] += r->in[(size_t)e * r->nodes + n];
		}
	}
	return true;
}

/* The draws of e with its current node set, from st (left as it was)
 * into trial; *mx, *sq its fullest replica's ranks and the sum of squares,
 * *mass the load already tied to the set's nodes. */
static int rs_try(struct rs *r, uint32_t e, const struct mp_dispatch_streams *st, struct mp_dispatch_streams *trial,
		  uint32_t *mx, uint64_t *sq, double *mass)
{
	uint32_t c = 0;
	*mass = 0;
	for (uint32_t n = 0; n < r->nodes; n++) {
		if (r->in[(size_t)e * r->nodes + n]) {
			r->cands[c++] = n * r->P * r->S;
			*mass += r->mass[n];
		}
	}
	mp_dispatch_streams_assign(trial, st);
	int rc = mp_dispatch_sglang_expert(trial, r->cands, c, r->G, r->S, r->P, r->ranks);
	*mx = 0;
	*sq = 0;
	for (uint32_t i = 0; rc == 0 && i < c; i++) {
		*mx = r->ranks[i] > *mx ? r->ranks[i] : *mx;
		*sq += (uint64_t)r->ranks[i] * r->ranks[i];
	}
	return rc;
}

/* The best node set of an expert so far. */
struct rs_best {
	uint32_t mx;
	uint64_t sq;
	double mass;
	bool any;
};

/* Score the node set in r->in for e; kept (set and streams) when better:
 * the fewest ranks on the fullest replica, then the smallest sum of
 * squares, then the least load already tied to its nodes; the first set
 * tried wins ties. A set that adds a node without room is skipped. */
static int rs_consider(struct rs *r, uint32_t e, const struct mp_dispatch_streams *st,
		       struct mp_dispatch_streams *trial, struct mp_dispatch_streams *keep, struct rs_best *b)
{
	const unsigned char *in = r->in + (size_t)e * r->nodes;
	for (uint32_t n = 0; n < r->nodes; n++) {
		if (in[n] && !r->was[n] && r->pinned[n] >= r->P * r->S) {
			return 0;
		}
	}
	uint32_t mx;
	uint64_t sq;
	double mass;
	int rc = rs_try(r, e, st, trial, &mx, &sq, &mass);
	if (rc == 0 && (!b->any || mx < b->mx || (mx == b->mx && (sq < b->sq || (sq == b->sq && mass < b->mass))))) {
		*b = (struct rs_best){mx, sq, mass, true};
		memcpy(r->bestin, in, r->nodes);
		mp_dispatch_streams_assign(keep, trial);
	}
	return rc;
}

/* Expert e (several replicas): its own node set, then every set of its
 * size (up to RS_ENUM_NODES nodes; beyond, those one node away from its
 * own), the best kept (rs_consider); st then advances past e and its
 * replicas become items. */
#define RS_ENUM_NODES 12u
static int rs_expert(struct rs *r, uint32_t e, struct mp_dispatch_streams *st, struct mp_dispatch_streams *trial,
		     struct mp_dispatch_streams *keep)
{
	unsigned char *in = r->in + (size_t)e * r->nodes;
	const uint32_t V = r->nodes;
	memcpy(r->was, in, V);
	struct rs_best b = {0, 0, 0, false};
	int rc = rs_consider(r, e, st, trial, keep, &b);
	for (uint32_t mask = 0; rc == 0 && r->w[e] > 0 && V <= RS_ENUM_NODES && mask < (1u << V); mask++) {
		uint32_t c = 0;
		for (uint32_t n = 0; n < V; n++) {
			in[n] = (mask >> n) & 1u;
			c += in[n];
		}
		rc = c == r->cnt[e] && memcmp(in, r->was, V) != 0 ? rs_consider(r, e, st, trial, keep, &b) : 0;
	}
	for (uint32_t i = 0; rc == 0 && r->w[e] > 0 && V > RS_ENUM_NODES && i < V; i++) {
		for (uint32_t j = 0; rc == 0 && r->was[i] && j < V; j++) {
			if (!r->was[j]) {
				memcpy(in, r->was, V);
				in[i] = 0;
				in[j] = 1;
				rc = rs_consider(r, e, st, trial, keep, &b);
			}
		}
	}
	memcpy(in, r->bestin, V);
	for (uint32_t n = 0; n < V; n++) {
		r->pinned[n] = r->pinned[n] + in[n] - r->was[n];
	}
	uint32_t mx;
	uint64_t sq;
	double mass;
	if (rc == 0) {
		rc = rs_try(r, e, st, trial, &mx, &sq, &mass); /* the kept set's ranks into r->ranks */
	}
	mp_dispatch_streams_assign(st, keep);
	for (uint32_t n = 0, k = 0; rc == 0 && n < V; n++) {
		if (in[n]) {
			r->items[r->n_items++] = (struct item){r->ranks[k++] * r->w[e] / r->G, e, n};
			r->mass[n] += r->items[r->n_items - 1].load;
		}
	}
	return rc;
}

static int item_cmp(const void *pa, const void *pb)
{
	const struct item *a = pa, *b = pb;
	if (a->load != b->load) {
		return a->load > b->load ? -1 : 1;
	}
	if (a->e != b->e) {
		return a->e < b->e ? -1 : 1;
	}
	return a->node < b->node ? -1 : a->node > b->node;
}

struct pack {
	double *load;  /* [G] */
	uint32_t *n;   /* [G] items on each GPU */
	uint32_t *at;  /* [G * S] item indices */
};

/* The items tied to a node (pinned true) or the free ones, heaviest first,
 * each onto the lightest GPU it may go to with a free slot; false if stuck. */
static bool rs_greedy_pass(const struct rs *r, struct pack *k, bool pinned)
{
	for (uint32_t i = 0; i < r->n_items; i++) {
		const struct item *it = &r->items[i];
		if ((it->node != ANY) != pinned) {
			continue;
		}
		uint32_t pick = ANY;
		for (uint32_t g = 0; g < r->G; g++) {
			bool ok = k->n[g] < r->S && (it->node == ANY || it->node == g / r->P);
			if (ok && (pick == ANY || k->load[g] < k->load[pick])) {
				pick = g;
			}
		}
		if (pick == ANY) {
			return false;
		}
		k->at[(size_t)pick * r->S + k->n[pick]++] = i;
		k->load[pick] += it->load;
	}
	return true;
}

static bool rs_greedy(const struct rs *r, struct pack *k)
{
	return rs_greedy_pass(r, k, true) && rs_greedy_pass(r, k, false);
}

/* The best swap of an item on the busiest GPU top with one elsewhere; false
 * when none lowers top below its load. */
static bool rs_swap(const struct rs *r, struct pack *k, uint32_t top)
{
	const double tol = 1e-12 * (k->load[top] > 1 ? k->load[top] : 1);
	double best = k->load[top] - tol;
	uint32_t ba = ANY, bb = ANY, bh = 0;
	for (uint32_t a = 0; a < r->S; a++) {
		const struct item *x = &r->items[k->at[(size_t)top * r->S + a]];
		for (uint32_t h = 0; h < r->G; h++) {
			if (h == top || (x->node != ANY && x->node != h / r->P)) {
				continue;
			}
			for (uint32_t b = 0; b < r->S; b++) {
				const struct item *y = &r->items[k->at[(size_t)h * r->S + b]];
				double d = x->load - y->load;
				if (d <= tol || (y->node != ANY && y->node != top / r->P)) {
					continue;
				}
				double m = k->load[top] - d > k->load[h] + d ? k->load[top] - d : k->load[h] + d;
				if (m < best) {
					best = m;
					ba = a;
					bb = b;
					bh = h;
				}
			}
		}
	}
	if (ba == ANY) {
		return false;
	}
	uint32_t *pa = &k->at[(size_t)top * r->S + ba], *pb = &k->at[(size_t)bh * r->S + bb];
	double d = r->items[*pa].load - r->items[*pb].load;
	uint32_t t = *pa;
	*pa = *pb;
	*pb = t;
	k->load[top] -= d;
	k->load[bh] += d;
	return true;
}

/* Pack the items into slot; false if the greedy got stuck. */
static int rs_pack(const struct rs *r, uint32_t *slot, bool *ok)
{
	struct pack k = {
		.load = calloc(r->G, sizeof(double)),
		.n = calloc(r->G, sizeof(uint32_t)),
		.at = calloc(r->N, sizeof(uint32_t)),
	};
	int rc = k.load && k.n && k.at ? 0 : MP_ENOMEM;
	*ok = rc == 0 && rs_greedy(r, &k);
	for (uint32_t s = 0; *ok && s < RS_STEPS * r->G; s++) {
		uint32_t top = 0;
		for (uint32_t g = 1; g < r->G; g++) {
			top = k.load[g] > k.load[top] ? g : top;
		}
		if (!rs_swap(r, &k, top)) {
			break;
		}
	}
	for (uint32_t p = 0; *ok && p < r->N; p++) {
		slot[p] = r->items[k.at[p]].e;
	}
	free(k.load);
	free(k.n);
	free(k.at);
	return rc;
}

int pl_dispatch_reseat(const struct mp_dispatch *d, const double *w, uint32_t E, uint32_t G, uint32_t S,
		       const struct mp_dispatch_streams *start, uint32_t *slot, bool *changed)
{
	struct rs r = {.E = E, .G = G, .S = S, .N = G * S, .w = w};
	r.P = d->gpus_per_node ? d->gpus_per_node : G;
	r.nodes = G / r.P;
	*changed = false;
	r.cnt = calloc(E, sizeof(*r.cnt));
	r.in = calloc((size_t)E * r.nodes, 1);
	r.pinned = calloc(r.nodes, sizeof(*r.pinned));
	r.mass = calloc(r.nodes, sizeof(*r.mass));
	r.was = malloc(r.nodes);
	r.bestin = malloc(r.nodes);
	r.items = malloc((size_t)r.N * sizeof(*r.items));
	r.cands = malloc((size_t)r.nodes * sizeof(*r.cands));
	r.ranks = malloc((size_t)r.nodes * sizeof(*r.ranks));
	struct mp_dispatch_streams *st = mp_dispatch_streams_copy(start);
	struct mp_dispatch_streams *trial = mp_dispatch_streams_copy(start);
	struct mp_dispatch_streams *keep = mp_dispatch_streams_copy(start);
	int rc = r.cnt && r.in && r.pinned && r.mass && r.was && r.bestin && r.items && r.cands && r.ranks && st && trial && keep
		? 0 : MP_ENOMEM;
	if (rc == 0 && rs_sets(&r, slot)) {
		for (uint32_t e = 0; rc == 0 && e < E; e++) {
			if (r.cnt[e] == 1) {
				r.items[r.n_items++] = (struct item){w[e], e, ANY};
			} else {
				rc = rs_expert(&r, e, st, trial, keep);
			}
		}
		if (rc == 0) {
			qsort(r.items, r.n_items, sizeof(*r.items), item_cmp);
			rc = rs_pack(&r, slot, changed);
		}
	}
	mp_dispatch_streams_free(st);
	mp_dispatch_streams_free(trial);
	mp_dispatch_streams_free(keep);
	rs_free(&r);
	return rc;
}
