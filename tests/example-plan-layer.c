/* The README's example: place one MoE layer with libmoeplan.
 * Build: cc example-plan-layer.c $(pkg-config --cflags --libs moeplan) */
#include <stdio.h>

#include <moeplan/placement.h>

int main(void)
{
	/* Tokens routed to each of 12 experts (DeepSeek EPLB's README, layer 0),
	 * placed on 8 GPUs with 2 slots each: 4 redundant replicas. */
	const double load[12] = {90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86};
	const uint32_t experts = 12, gpus = 8, slots_per_gpu = 2;

	struct mp_place_options opts;
	mp_place_options_init(&opts);
	struct mp_placement plan;
	mp_placement_init(&plan);
	int rc = mp_placement_alloc(&plan, 1, experts, gpus, slots_per_gpu);
	if (rc == 0) {
		rc = mp_place_layer(load, experts, gpus, slots_per_gpu, &opts, &plan.layers[0]);
	}
	if (rc != 0) {
		fprintf(stderr, "placement failed: %s\n", mp_strerror(rc));
		mp_placement_finish(&plan);
		return 1;
	}
	const struct mp_layer_placement *layer = &plan.layers[0];
	for (uint32_t g = 0; g < gpus; g++) {
		const uint32_t *e = layer->slot_expert + g * slots_per_gpu;
		printf("GPU %u: experts %2u %2u, load %g\n", g, e[0], e[1], layer->gpu_load[g]);
	}
	printf("busiest GPU %g, mean %g, lower bound %g (%s)\n", layer->max_load, layer->mean_load,
	       layer->lower_bound, mp_place_status_name(layer->status));
	mp_placement_finish(&plan);
	return 0;
}
