/* Tests of the dispatch/combine communication model: the expected nodes
 * per token against enumeration, and the per-link bytes and times against
 * hand calculations on the article's model (../shared/seeds/
 * 000_23a7dce1aa3fa16e.txt) and on DeepSeek-V3's node-limited routing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli-run.h"

#include "moeplan/comm.h"
#include "moeplan/diag.h"
#include "moeplan/model.h"

#define assert_near(a, b, tol) assert_near_at((a), (b), (tol), __FILE__, __LINE__)

static void assert_near_at(double a, double b, double tol, const char *file, int line)
{
	if (!(fabs(a - b) <= tol)) {
		print_error("%.17g != %.17g (tolerance %g)\n", a, b, tol);
		_fail(file, line);
	}
}

static void v41_flash(struct mp_model *m)
{
	mp_model_init(m);
	m->hidden_size = 5120;
	m->moe_layers = 40;
	m->routed_experts = 384;
	m->shared_experts = 1;
	m->top_k = 6;
	m->expert_intermediate_size = 2304;
	m->shared_expert_intermediate_size = 2304;
	m->routed_format = MP_FORMAT_MXFP4;
	m->shared_format = MP_FORMAT_FP8;
	m->expert_compute = MP_COMPUTE_FP8;
}

static void gb200(struct mp_hardware *hw)
{
	mp_hardware_init(hw);
	hw->peak_flops[MP_COMPUTE_FP8] = 5e15;
	hw->hbm_bytes = UINT64_C(186000000000);
	hw->hbm_bw_bytes_per_s = 8e12;
	hw->scale_up_domain_gpus = 72;
	hw->gpus_per_node = 4;
	hw->scale_up_bw_bytes_per_s = 900e9;
	hw->scale_out_bw_bytes_per_s = 50e9;
}

/* E[min(distinct, cap)] over all nodes^k equally likely visit sequences. */
static double enumerate_nodes(uint32_t nodes, uint32_t k, uint32_t cap)
{
	uint32_t seq[16] = {0};
	double total = 0.0;
	double count = 0.0;
	for (;;) {
		uint32_t seen = 0;
		uint64_t mask = 0;
		for (uint32_t i = 0; i < k; i++) {
			if (!(mask & (UINT64_C(1) << seq[i]))) {
				mask |= UINT64_C(1) << seq[i];
				seen++;
			}
		}
		total += (double)(cap && seen > cap ? cap : seen);
		count += 1.0;
		uint32_t i = 0;
		while (i < k && ++seq[i] == nodes) {
			seq[i++] = 0;
		}
		if (i == k) {
			break;
		}
	}
	return total / count;
}

static void comm__expected_nodes_match_enumeration(void **state)
{
	(void)state;
	/* Two visits over two nodes: one node with probability 1/2, two
	 * with 1/2, so 1.5; capped at one node, 1. */
	assert_near(mp_comm_expected_nodes(2, 2, 0), 1.5, 1e-15);
	assert_near(mp_comm_expected_nodes(2, 2, 1), 1.0, 1e-15);
	const uint32_t cases[][3] = {
		{4, 3, 0}, {4, 3, 2}, {3, 5, 0}, {5, 4, 3}, {8, 8, 4}, {1, 6, 0}, {6, 2, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_near(mp_comm_expected_nodes(cases[i][0], cases[i][1], cases[i][2]),
			    enumerate_nodes(cases[i][0], cases[i][1], cases[i][2]), 1e-12);
	}
	assert_near(mp_comm_expected_nodes(0, 6, 0), 0.0, 0.0);
}

static void comm__one_scale_up_domain(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_comm c;
	struct mp_comm_input in;
	v41_flash(&m);
	gb200(&hw);
	mp_comm_input_init(&in);
	in.ep = 64;
	in.gpus_per_node = 72;
	in.tokens_per_gpu = 256;
	assert_int_equal(mp_comm_layer(&m, &hw, &in, &c), 0);
	/* "Every token that pooling brings to an expert also has to cross the
	 * network twice per layer, 15 KB per visit, six visits per token":
	 * 6 x 15,360 B before the split by link. */
	assert_near(c.bytes_per_token, 6.0 * 15360.0, 0.0);
	/* EP64 inside one NVL72 domain: no scale-out; every visit but the
	 * 1/64 that land on the token's own GPU crosses NVLink once:
	 * 6 x 63/64 x 5,120 x (1 + 2) = 90,720 B per token. */
	assert_int_equal(c.nodes, 1);
	assert_int_equal(c.gpus_per_node, 64);
	assert_near(c.scale_out_bytes, 0.0, 0.0);
	assert_near(c.dispatch_up_bytes_per_token + c.combine_up_bytes_per_token, 90720.0, 1e-9);
	assert_near(c.scale_up_bytes, 256.0 * 90720.0, 1e-6);
	assert_near(c.scale_up_s, 256.0 * 90720.0 / 900e9, 1e-18);
	/* Arithmetic: 256 tokens x (6 routed + 1 shared) x 70,778,880 FLOP,
	 * at 5 PFLOP/s. */
	double flops = 256.0 * 7.0 * 70778880.0;
	assert_near(c.flops, flops, 1.0);
	assert_near(c.compute_s, flops / 5e15, 1e-18);
	assert_near(c.ratio, (256.0 * 90720.0 / 900e9) / (flops / 5e15), 1e-12);
	assert_near(c.scale_up_bw_to_hide, 256.0 * 90720.0 / (flops / 5e15), 1e-3);
	assert_near(c.step_comm_s, 40.0 * c.comm_s, 1e-18);
	mp_model_finish(&m);
}

static void comm__node_limited_routing(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_comm c;
	struct mp_comm_input in;
	/* DeepSeek-V3 (hidden 7168, 256 experts, top-8, FP8 dispatch, BF16
	 * combine) on 8 nodes of 8 GPUs, "each token will be sent to at most
	 * 4 nodes" (DeepSeek-V3 report, section 3.2). */
	mp_model_init(&m);
	m.hidden_size = 7168;
	m.moe_layers = 58;
	m.routed_experts = 256;
	m.shared_experts = 1;
	m.top_k = 8;
	m.expert_intermediate_size = 2048;
	m.shared_expert_intermediate_size = 2048;
	m.expert_compute = MP_COMPUTE_FP8;
	mp_hardware_init(&hw);
	hw.peak_flops[MP_COMPUTE_FP8] = 1.979e15;
	hw.scale_up_domain_gpus = 8;
	hw.scale_up_bw_bytes_per_s = 450e9;
	hw.scale_out_bw_bytes_per_s = 50e9;
	mp_comm_input_init(&in);
	in.ep = 64;
	in.max_nodes_per_token = 4;
	in.tokens_per_gpu = 4096;
	assert_int_equal(mp_comm_layer(&m, &hw, &in, &c), 0);
	assert_int_equal(c.nodes, 8);
	assert_int_equal(c.gpus_per_node, 8);
	/* By enumeration of the 8^8 node sequences, capped at 4; 7 of 8
	 * destinations are remote on average. */
	double d = enumerate_nodes(8, 8, 4);
	assert_near(c.dest_nodes_per_token, d, 1e-12);
	assert_near(c.remote_nodes_per_token, d * 7.0 / 8.0, 1e-12);
	assert_near(c.dispatch_out_bytes_per_token, d * 7.0 / 8.0 * 7168.0, 1e-9);
	assert_near(c.combine_out_bytes_per_token, d * 7.0 / 8.0 * 7168.0 * 2.0, 1e-9);
	assert_near(c.scale_out_bytes, 4096.0 * d * 7.0 / 8.0 * 7168.0 * 3.0, 1e-3);
	/* NVLink: 8 x 7/8 visits x 7,168 x 3 B per token. */
	assert_near(c.scale_up_bytes, 4096.0 * 7.0 * 7168.0 * 3.0, 1e-3);
	assert_near(c.comm_s, fmax(c.scale_up_bytes / 450e9, c.scale_out_bytes / 50e9), 1e-15);
	/* Without the node limit the token reaches more nodes. */
	in.max_nodes_per_token = 0;
	struct mp_comm free_routing;
	assert_int_equal(mp_comm_layer(&m, &hw, &in, &free_routing), 0);
	assert_near(free_routing.dest_nodes_per_token, 8.0 * (1.0 - pow(7.0 / 8.0, 8.0)), 1e-12);
	assert_true(free_routing.scale_out_bytes > c.scale_out_bytes);
	mp_model_finish(&m);
}

static void comm__ep_below_node_size(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_comm c;
	struct mp_comm_input in;
	v41_flash(&m);
	gb200(&hw);
	mp_comm_input_init(&in);
	in.ep = 4;
	in.gpus_per_node = 8;
	in.tokens_per_gpu = 10;
	assert_int_equal(mp_comm_layer(&m, &hw, &in, &c), 0);
	/* Four GPUs: 6 x 3/4 visits leave the GPU. */
	assert_int_equal(c.gpus_per_node, 4);
	assert_near(c.scale_up_visits_per_token, 4.5, 1e-15);
	/* EP1: nothing moves. */
	in.ep = 1;
	assert_int_equal(mp_comm_layer(&m, &hw, &in, &c), 0);
	assert_near(c.scale_up_bytes + c.scale_out_bytes, 0.0, 0.0);
	assert_near(c.ratio, 0.0, 0.0);
	mp_model_finish(&m);
}

static void comm__rejects_bad_input(void **state)
{
	(void)state;
	struct mp_model m;
	struct mp_hardware hw;
	struct mp_comm c = {.ep = 99};
	struct mp_comm_input in;
	v41_flash(&m);
	gb200(&hw);
	mp_comm_input_init(&in);
	in.ep = 12;
	in.gpus_per_node = 8;  /* 12 GPUs are not whole nodes of 8 */
	in.tokens_per_gpu = 10;
	assert_int_equal(mp_comm_layer(&m, &hw, &in, &c), MP_EINVAL);
	in.ep = 16;
	hw.scale_out_bw_bytes_per_s = 0;  /* two nodes and no network */
	assert_int_equal(mp_comm_layer(&m, &hw, &in, &c), MP_EINVAL);
	hw.scale_out_bw_bytes_per_s = 50e9;
	in.tokens_per_gpu = -1;
	assert_int_equal(mp_comm_layer(&m, &hw, &in, &c), MP_EINVAL);
	in.tokens_per_gpu = 10;
	in.ep = 0;
	assert_int_equal(mp_comm_layer(&m, &hw, &in, &c), MP_EINVAL);
	assert_int_equal(c.ep, 99);
	mp_model_finish(&m);
}

static double json_number(const char *text, const char *key)
{
	char pattern[128];
	snprintf(pattern, sizeof(pattern), "\"%s\": ", key);
	const char *at = strstr(text, pattern);
	if (!at) {
		fail_msg("no \"%s\" in output", key);
		return 0.0;
	}
	return strtod(at + strlen(pattern), NULL);
}

static void comm__cli(void **state)
{
	(void)state;
	const char *model = src_path("plans/models/deepseek-v4.1-flash.yaml");
	const char *gb200 = src_path("hardware/gb200-nvl72.yaml");
	struct cli_result r = cli_run("comm", "--model", model, "--hardware", gb200, "--ep", "64",
				      "--gpus-per-node", "72", "--tokens-per-gpu", "256", "--format",
				      "json", NULL);
	assert_int_equal(r.status, 0);
	/* "15 KB per visit, six visits per token" */
	assert_near(json_number(r.out, "bytes"), 6.0 * 15360.0, 0.0);
	const char *up = strstr(r.out, "\"scale_up\"");
	const char *out = strstr(r.out, "\"scale_out\"");
	assert_non_null(up);
	assert_non_null(out);
	/* Hand: 256 tokens x 6 x 63/64 x 15,360 B over NVLink, none outside. */
	assert_near(json_number(up, "bytes"), 256.0 * 90720.0, 1e-6);
	assert_near(json_number(out, "bytes"), 0.0, 0.0);
	cli_result_free(&r);

	/* EP16 over two 8-GPU HGX nodes uses the network. */
	r = cli_run("comm", "-m", model, "-H", src_path("hardware/hgx-b200.yaml"), "--ep", "16", "-n", "8",
		    "-b", "1024", "--max-nodes-per-token", "1", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "scale-out"));
	assert_non_null(strstr(r.out, "(at most 1)"));

	/* -o writes what stdout shows; naming an input is refused. */
	char dir[] = "/tmp/moeplan-test-commXXXXXX";
	assert_non_null(mkdtemp(dir));
	char out_path[64], script[96];
	snprintf(out_path, sizeof(out_path), "%s/comm.txt", dir);
	struct cli_result o = cli_run("comm", "-m", model, "-H", src_path("hardware/hgx-b200.yaml"),
				      "--ep", "16", "-n", "8", "-b", "1024", "--max-nodes-per-token",
				      "1", "-o", out_path, NULL);
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out, "");
	char *text = cli_slurp(out_path);
	assert_non_null(text);
	assert_string_equal(text, r.out);
	free(text);
	cli_result_free(&o);
	cli_result_free(&r);
	snprintf(script, sizeof(script), "rm -rf '%s'", dir);
	assert_int_equal(system(script), 0);
	r = cli_run("comm", "-m", model, "-H", gb200, "--ep", "64", "-n", "72", "-b", "256", "-o", gb200,
		    NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "refusing to overwrite"));
	cli_result_free(&r);

	r = cli_run("comm", "-m", model, "-H", gb200, "--ep", "12", "-n", "8", "-b", "1", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	r = cli_run("comm", "-m", model, "-H", gb200, "--ep", "64", NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(comm__expected_nodes_match_enumeration),
		cmocka_unit_test(comm__one_scale_up_domain),
		cmocka_unit_test(comm__node_limited_routing),
		cmocka_unit_test(comm__ep_below_node_size),
		cmocka_unit_test(comm__rejects_bad_input),
		cmocka_unit_test(comm__cli),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
