/* Placement: the public driver. mp_place checks the shape and the options,
 * then worker threads take layers one at a time; place_layer applies the
 * node policy (topology.c) around the per-layer pipeline (layer.c). Layers
 * are independent and each one's plan depends only on its loads, shape
 * and options, so the result does not depend on the number of threads.
 */
#include "placement/internal.h"

#include "placement/glpk-internal.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The wall-clock deadline of a run that starts now (INFINITY: none). */
static double run_deadline(const struct mp_place_options *opts)
{
	return opts->time_limit_s > 0 ? pl_now() + opts->time_limit_s : (double)INFINITY;
}

/* One layer under the node policy. */
static int place_layer(const double *w, uint32_t E, uint32_t G, uint32_t S,
		       const struct mp_place_options *opts, double deadline,
		       struct mp_layer_placement *out)
{
	uint32_t P = opts->gpus_per_node;
	int rc;
	if (P != 0 && opts->node_policy == MP_NODES_GROUP_LIMITED) {
		rc = pl_solve_groups(w, E, G, S, opts, deadline, out);
	} else {
		rc = pl_solve_layer(w, E, G, S, opts, deadline, out);
		if (rc == 0 && P != 0 && opts->node_policy == MP_NODES_BALANCE
		    && out->max_load > 0) {
			struct pl_prob prob;
			pl_prob_init(&prob, w, E, G, S);
			rc = pl_balance_nodes(G, S, P, opts->effort, prob.eps, out);
			/* The exchanges never raise a GPU above the busiest, but can
			 * lower the busiest itself (a search the time limit cut
			 * short): keep max_load, gap and status true. */
			double mx = 0;
			for (uint32_t g = 0; g < G; g++) {
				mx = out->gpu_load[g] > mx ? out->gpu_load[g] : mx;
			}
			if (rc == 0 && mx < out->max_load) {
				out->max_load = mx;
				/* the status stays: a proven layer cannot get lighter,
				 * and a lighter plan is not a proof */
				mp_layer_placement_set_bound(out, out->lower_bound, out->status);
			}
		}
	}
	if (rc == 0 && out->node_load && P != 0) {
		pl_fill_nodes(out, w, E, G, P);
	}
	return rc;
}

/* --- worker threads --- */

struct job {
	const struct mp_loads *loads;
	uint32_t gpus;
	uint32_t slots_per_gpu;
	const struct mp_place_options *opts;
	double deadline; /* of the whole run (run_deadline) */
	struct mp_placement *out;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t next;
	uint32_t done;
	uint32_t exited;
	int err;
	double worst_gap;
};

static void run_layers(struct job *job)
{
	for (;;) {
		pthread_mutex_lock(&job->mu);
		if (job->next >= job->loads->n_layers || job->err != 0) {
			pthread_mutex_unlock(&job->mu);
			return;
		}
		uint32_t l = job->next++;
		pthread_mutex_unlock(&job->mu);
		struct mp_layer_placement *lp = &job->out->layers[l];
		int rc = place_layer(mp_loads_row(job->loads, l), job->loads->n_experts, job->gpus,
				     job->slots_per_gpu, job->opts, job->deadline, lp);
		pthread_mutex_lock(&job->mu);
		job->done++;
		if (rc != 0 && job->err == 0) {
			job->err = rc;
		}
		if (rc == 0 && lp->gap > job->worst_gap) {
			job->worst_gap = lp->gap;
		}
		pthread_cond_broadcast(&job->cv);
		pthread_mutex_unlock(&job->mu);
	}
}

static void *worker(void *arg)
{
	struct job *job = arg;
	run_layers(job);
	pl_glpk_thread_done();
	pthread_mutex_lock(&job->mu);
	job->exited++;
	pthread_cond_broadcast(&job->cv);
	pthread_mutex_unlock(&job->mu);
	return NULL;
}

static bool loads_ok(const struct mp_loads *loads, struct mp_diags *diags)
{
	size_t n = (size_t)loads->n_layers * loads->n_experts;
	for (size_t i = 0; i < n; i++) {
		double v = loads->w[i];
		if (!isfinite(v) || v < 0) {
			mp_diags_add(diags, loads->source, 0, 0, MP_EINVAL,
				     "load of expert %zu in layer %zu is %g; expected a finite number >= 0",
				     i % loads->n_experts, i / loads->n_experts, v);
			return false;
		}
	}
	return true;
}

static int check_shape(uint32_t n_experts, uint32_t gpus, uint32_t slots_per_gpu,
		       const struct mp_place_options *opts, struct mp_diags *diags)
{
	uint64_t n = (uint64_t)gpus * slots_per_gpu;
	if (gpus == 0 || slots_per_gpu == 0) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "gpus (%u) and slots per GPU (%u) must be at least 1", gpus,
				    slots_per_gpu);
	}
	if (n < n_experts) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "%llu slots (%u GPUs x %u) are fewer than the %u logical experts",
				    (unsigned long long)n, gpus, slots_per_gpu, n_experts);
	}
	if (slots_per_gpu > n_experts) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "%u slots per GPU exceed the %u logical experts: a GPU would hold one expert twice",
				    slots_per_gpu, n_experts);
	}
	if (!mp_placement_shape_ok(n_experts, gpus, slots_per_gpu)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "placement of %u experts on %u GPUs x %u slots is beyond the supported sizes",
				    n_experts, gpus, slots_per_gpu);
	}
	if (opts && opts->gpus_per_node != 0 && gpus % opts->gpus_per_node != 0) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "%u GPUs do not divide into nodes of %u GPUs", gpus,
				    opts->gpus_per_node);
	}
	if (opts && opts->node_policy != MP_NODES_REPORT && opts->gpus_per_node == 0) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "node policy %s needs GPUs per node",
				    mp_node_policy_name(opts->node_policy));
	}
	if (opts && opts->node_policy == MP_NODES_GROUP_LIMITED) {
		char why[200];
		if (pl_check_groups(n_experts, gpus, slots_per_gpu, opts->gpus_per_node,
				    opts->n_groups, why, sizeof(why)) != 0) {
			return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL, "group-limited placement: %s",
					    why);
		}
	}
	if (opts && !(opts->time_limit_s >= 0)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "time limit %g s must be >= 0", opts->time_limit_s);
	}
	if (opts && !(opts->effort > 0 && opts->effort <= 1e6)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "effort %g must be > 0 and at most 1e6", opts->effort);
	}
	return 0;
}

int mp_place(const struct mp_loads *loads, uint32_t gpus, uint32_t slots_per_gpu,
	     const struct mp_place_options *opts, struct mp_placement *out,
	     struct mp_diags *diags)
{
	struct mp_place_options defaults;
	if (!opts) {
		mp_place_options_init(&defaults);
		opts = &defaults;
	}
	double deadline = run_deadline(opts);
	int rc = check_shape(loads->n_experts, gpus, slots_per_gpu, opts, diags);
	if (rc != 0) {
		return rc;
	}
	if (loads->n_layers == 0 || !loads_ok(loads, diags)) {
		if (loads->n_layers == 0) {
			mp_diags_add(diags, loads->source, 0, 0, MP_EINVAL, "no layers of loads");
		}
		return MP_EINVAL;
	}
	struct mp_placement p;
	mp_placement_init(&p);
	rc = mp_placement_alloc(&p, loads->n_layers, loads->n_experts, gpus, slots_per_gpu);
	if (rc != 0) {
		return rc;
	}
	if (opts->gpus_per_node != 0) {
		p.gpus_per_node = opts->gpus_per_node;
		p.node_policy = opts->node_policy;
		p.n_groups = opts->node_policy == MP_NODES_GROUP_LIMITED ? opts->n_groups : 0;
		for (uint32_t l = 0; l < p.n_layers; l++) {
			p.layers[l].node_load = calloc(gpus / opts->gpus_per_node, sizeof(double));
			if (!p.layers[l].node_load) {
				mp_placement_finish(&p);
				return MP_ENOMEM;
			}
		}
	}
	struct job job = {
		.loads = loads,
		.gpus = gpus,
		.slots_per_gpu = slots_per_gpu,
		.opts = opts,
		.deadline = deadline,
		.out = &p,
	};
	pthread_mutex_init(&job.mu, NULL);
	pthread_cond_init(&job.cv, NULL);
	unsigned n_threads = opts->threads;
	if (n_threads == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n_threads = c > 0 ? (unsigned)c : 1;
	}
	if (n_threads > loads->n_layers) {
		n_threads = loads->n_layers;
	}
	pthread_t *tids = calloc(n_threads, sizeof(*tids));
	unsigned started = 0;
	if (tids) {
		for (unsigned i = 0; i < n_threads; i++) {
			if (pthread_create(&tids[i], NULL, worker, &job) != 0) {
				break;
			}
			started++;
		}
	}
	if (started == 0) {
		/* No thread could start: solve here (GLPK's environment then
		 * stays with the caller's thread). */
		run_layers(&job);
	} else {
		uint32_t reported = 0;
		pthread_mutex_lock(&job.mu);
		while (job.exited < started) {
			while (reported < job.done) {
				reported++;
				uint32_t done_now = reported;
				double gap = job.worst_gap;
				if (opts->progress) {
					pthread_mutex_unlock(&job.mu);
					opts->progress(opts->progress_user, done_now, loads->n_layers, gap);
					pthread_mutex_lock(&job.mu);
				}
			}
			if (job.exited < started) {
				pthread_cond_wait(&job.cv, &job.mu);
			}
		}
		while (reported < job.done && opts->progress) {
			reported++;
			opts->progress(opts->progress_user, reported, loads->n_layers, job.worst_gap);
		}
		pthread_mutex_unlock(&job.mu);
		for (unsigned i = 0; i < started; i++) {
			pthread_join(tids[i], NULL);
		}
	}
	free(tids);
	pthread_mutex_destroy(&job.mu);
	pthread_cond_destroy(&job.cv);
	if (job.err != 0) {
		mp_placement_finish(&p);
		if (job.err == MP_ELIMIT) {
			mp_diags_add(diags, loads->source, 0, 0, MP_ELIMIT,
				     "no placement without duplicate replicas was found");
		}
		return job.err;
	}
	if (started == 0 && opts->progress) {
		opts->progress(opts->progress_user, loads->n_layers, loads->n_layers, job.worst_gap);
	}
	/* Issue 24: the busiest GPU under the engine's own dispatch. */
	rc = opts->dispatch.rule == MP_DISPATCH_EVEN ? 0 : pl_dispatch_place(loads, opts, deadline, &p);
	if (rc != 0) {
		mp_placement_finish(&p);
		return rc;
	}
	mp_placement_finish(out);
	*out = p;
	return 0;
}

struct one_job {
	const double *w;
	uint32_t E, G, S;
	const struct mp_place_options *opts;
	double deadline;
	struct mp_layer_placement *out;
	int rc;
};

static void *one_worker(void *arg)
{
	struct one_job *j = arg;
	j->rc = place_layer(j->w, j->E, j->G, j->S, j->opts, j->deadline, j->out);
	pl_glpk_thread_done();
	return NULL;
}

int mp_place_layer(const double *w, uint32_t n_experts, uint32_t gpus, uint32_t slots_per_gpu,
		   const struct mp_place_options *opts, struct mp_layer_placement *out)
{
	struct mp_place_options defaults;
	if (!opts) {
		mp_place_options_init(&defaults);
		opts = &defaults;
	}
	if (check_shape(n_experts, gpus, slots_per_gpu, opts, NULL) != 0) {
		return MP_EINVAL;
	}
	for (uint32_t e = 0; e < n_experts; e++) {
		if (!isfinite(w[e]) || w[e] < 0) {
			return MP_EINVAL;
		}
	}
	struct one_job j = {
		.w = w, .E = n_experts, .G = gpus, .S = slots_per_gpu, .opts = opts,
		.deadline = run_deadline(opts), .out = out,
	};
	/* A thread of its own, so that GLPK's thread-local environment is
	 * freed when it ends. */
	pthread_t tid;
	if (pthread_create(&tid, NULL, one_worker, &j) == 0) {
		pthread_join(tid, NULL);
	} else {
		j.rc = place_layer(w, n_experts, gpus, slots_per_gpu, opts, j.deadline, out);
	}
	return j.rc;
}
