/* An engine profile (moeplan/engine.h): the built-in ones and what they
 * change in the models. */
#include "moeplan/engine.h"
#include "moeplan/diag.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const overlap_names[] = {"none", "two_batch", "full"};

void mp_engine_profile_init(struct mp_engine_profile *e)
{
	assert(e);
	*e = (struct mp_engine_profile){
		.dispatch = MP_DISPATCH_EVEN,
		.ep_dispatch_algorithm = MP_DISPATCH_STATIC,
		.memory = MP_MEMORY_RESERVE,
		.drafter = true,
	};
}

void mp_engine_profile_finish(struct mp_engine_profile *e)
{
	if (!e) {
		return;
	}
	free(e->name);
	free(e->source);
	free(e->path);
	mp_engine_profile_init(e);
}

/* The built-in profiles: plans/engines/NAME.yaml, field by field (engine.h
 * names the sources). */
static void sglang_profile(struct mp_engine_profile *e)
{
	e->dispatch = MP_DISPATCH_SGLANG;
	e->ep_dispatch_algorithm = MP_DISPATCH_STATIC;
	e->overlaps = 1u << MP_OVERLAP_NONE | 1u << MP_OVERLAP_TWO_BATCH;
	e->kernel[0] = MP_KERNEL_NORMAL;
	e->kernel[1] = MP_KERNEL_LOW_LATENCY;
	e->memory = MP_MEMORY_RESERVE; /* the launch line sets --mem-fraction-static */
	e->reserve_bytes = MP_CAPACITY_DEFAULT_RESERVE_BYTES;
	e->sglang = (struct mp_sglang_memory){.dp_attention = true};
	e->drafter = true;
}

static void vllm_profile(struct mp_engine_profile *e)
{
	e->dispatch = MP_DISPATCH_VLLM;
	e->overlaps = 1u << MP_OVERLAP_NONE | 1u << MP_OVERLAP_TWO_BATCH;
	e->kernel[0] = MP_KERNEL_NORMAL;
	e->kernel[1] = MP_KERNEL_LOW_LATENCY;
	e->memory = MP_MEMORY_UTILIZATION;
	e->memory_fraction = 0.92;
	e->drafter = true;
}

int mp_engine_builtin(const char *name, struct mp_engine_profile *out)
{
	const bool sglang = name && strcmp(name, "sglang") == 0;
	const bool vllm = name && strcmp(name, "vllm") == 0;
	if (!sglang && !vllm) {
		return MP_EINVAL;
	}
	struct mp_engine_profile e;
	mp_engine_profile_init(&e);
	if (sglang) {
		sglang_profile(&e);
	} else {
		vllm_profile(&e);
	}
	e.source = strdup(sglang ? "built in; the same as plans/engines/sglang.yaml (sgl-project/sglang "
				   "60d36e7be python/sglang/srt/server_args.py)"
				 : "built in; the same as plans/engines/vllm.yaml (vllm-project/vllm "
				   "docs/design/dbo.md, vllm/config/cache.py@002f10e0)");
	e.name = strdup(name);
	if (!e.name || !e.source) {
		mp_engine_profile_finish(&e);
		return MP_ENOMEM;
	}
	mp_engine_profile_finish(out);
	*out = e;
	return 0;
}

bool mp_engine_allows_overlap(const struct mp_engine_profile *e, enum mp_step_overlap o)
{
	return e->overlaps == 0 || (e->overlaps & (1u << o)) != 0;
}

void mp_engine_overlaps_text(const struct mp_engine_profile *e, char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int o = MP_OVERLAP_NONE; o <= MP_OVERLAP_FULL; o++) {
		if (mp_engine_allows_overlap(e, (enum mp_step_overlap)o) && n < size) {
			int k = snprintf(buf + n, size - n, "%s%s", n ? ", " : "", overlap_names[o]);
			n += k > 0 ? (size_t)k : 0;
		}
	}
}

enum mp_step_kernel mp_engine_kernel(const struct mp_engine_profile *e, bool prefill)
{
	return e->kernel[prefill ? 0 : 1];
}

void mp_engine_capacity_options(const struct mp_engine_profile *e, bool drafter,
				struct mp_capacity_options *opts)
{
	opts->memory = e->memory;
	opts->memory_fraction = e->memory_fraction;
	opts->sglang = e->sglang;
	opts->sglang.speculative = e->sglang.speculative || (drafter && e->drafter);
	if (e->reserve_bytes > 0) {
		opts->reserve_bytes = e->reserve_bytes;
	}
}
