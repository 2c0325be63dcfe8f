/* moeplan comm: dispatch and combine bytes of one MoE layer on each link,
 * against the expert arithmetic they should hide under. */
#include "cli.h"
#include "moeplan/traffic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeplan/comm.h"
#include "moeplan/model.h"

static const struct cli_opt comm_options[] = {
	CLI_OPT_MODEL,
	CLI_OPT_HARDWARE,
	{"ep", 'e', "N", "EP width (required)", NULL},
	{"gpus-per-node", 'n', "G", "GPUs joined by scale-up links, e.g. 8 for HGX, 72 for NVL72 (required)", NULL},
	{"tokens-per-gpu", 'b', "B", "tokens per GPU per step, b (required)", NULL},
	{"max-nodes-per-token", 'M', "M", "node-limited routing: at most M destination nodes per token (default: no limit)", NULL},
	{"output", 'o', "FILE", "write the result to FILE, atomically (default '-', stdout)", CLI_COMPLETE_FILE},
	CLI_OPT_FORMAT_TEXT,
	CLI_OPT_HELP,
	{0},
};

const struct cli_command_help cmd_comm_help = {
	.name = "comm",
	.synopsis = "moeplan comm --model M --hardware H --ep N --gpus-per-node G --tokens-per-gpu B\n"
		    "                    [--max-nodes-per-token M] [-o FILE] [--format json]",
	.description =
		"The communication of one MoE layer per GPU: a token's hidden state goes out in the\n"
		"dispatch format and each expert's result comes back in the combine format. Over\n"
		"the network (scale-out) a token crosses once per destination node other than its\n"
		"own, each way (results are summed inside the node before travelling back); over\n"
		"NVLink (scale-up) it moves once per expert, except visits to the GPU it is on.\n"
		"Prints the bytes and time on each link, the routed and shared expert arithmetic\n"
		"and its time at the GPU's peak, their ratio, and the bandwidth each link would\n"
		"need for the exchange to hide fully under the arithmetic.",
	.options = comm_options,
	.examples =
		"  moeplan comm -m plans/models/deepseek-v4.1-flash.yaml -H hardware/gb200-nvl72.yaml --ep 64 -n 72 -b 256\n"
		"  moeplan comm -m plans/models/deepseek-v3.yaml -H hardware/hgx-h100.yaml --ep 64 -n 8 -b 4096 -M 4 -f json\n",
};

static struct mp_doc *comm_doc(const struct mp_model *m, const struct mp_hardware *hw,
			       const struct mp_comm *c, uint32_t max_nodes)
{
	struct mp_doc *d = mp_doc_map();
	mp_doc_put_string(d, "model", m->name ? m->name : "");
	mp_doc_put_string(d, "hardware", hw->name ? hw->name : "");
	mp_doc_put_int(d, "ep", c->ep);
	mp_doc_put_int(d, "gpus_per_node", c->gpus_per_node);
	mp_doc_put_int(d, "nodes", c->nodes);
	mp_doc_put_int(d, "max_nodes_per_token", max_nodes);
	mp_doc_put_real(d, "tokens_per_gpu", c->tokens_per_gpu);
	mp_doc_put_string(d, "dispatch_format", mp_format_name(m->dispatch_format));
	mp_doc_put_string(d, "combine_format", mp_format_name(m->combine_format));
	struct mp_doc *t = mp_doc_map();
	mp_doc_put_real(t, "bytes", c->bytes_per_token);
	mp_doc_put_real(t, "dest_nodes", c->dest_nodes_per_token);
	mp_doc_put_real(t, "remote_nodes", c->remote_nodes_per_token);
	mp_doc_put_real(t, "scale_up_visits", c->scale_up_visits_per_token);
	mp_doc_put_real(t, "dispatch_scale_up_bytes", c->dispatch_up_bytes_per_token);
	mp_doc_put_real(t, "combine_scale_up_bytes", c->combine_up_bytes_per_token);
	mp_doc_put_real(t, "dispatch_scale_out_bytes", c->dispatch_out_bytes_per_token);
	mp_doc_put_real(t, "combine_scale_out_bytes", c->combine_out_bytes_per_token);
	mp_doc_put(d, "per_token", t);
	struct mp_doc *up = mp_doc_map();
	mp_doc_put_real(up, "bytes", c->scale_up_bytes);
	mp_doc_put_real(up, "bw_bytes_per_s", c->scale_up_bw_bytes_per_s);
	mp_doc_put_real(up, "time_s", c->scale_up_s);
	mp_doc_put_real(up, "bw_to_hide_bytes_per_s", c->scale_up_bw_to_hide);
	mp_doc_put(d, "scale_up", up);
	struct mp_doc *out = mp_doc_map();
	mp_doc_put_real(out, "bytes", c->scale_out_bytes);
	mp_doc_put_real(out, "bw_bytes_per_s", c->scale_out_bw_bytes_per_s);
	mp_doc_put_real(out, "time_s", c->scale_out_s);
	mp_doc_put_real(out, "bw_to_hide_bytes_per_s", c->scale_out_bw_to_hide);
	mp_doc_put(d, "scale_out", out);
	mp_doc_put_real(d, "comm_s", c->comm_s);
	mp_doc_put_real(d, "routed_flops", c->routed_flops);
	mp_doc_put_real(d, "shared_flops", c->shared_flops);
	mp_doc_put_real(d, "flops", c->flops);
	mp_doc_put_real(d, "peak_flops", c->peak_flops);
	mp_doc_put_real(d, "compute_s", c->compute_s);
	mp_doc_put_real(d, "ratio", c->ratio);
	mp_doc_put_bool(d, "hides", c->comm_s <= c->compute_s);
	mp_doc_put_int(d, "moe_layers", c->moe_layers);
	mp_doc_put_real(d, "step_comm_s", c->step_comm_s);
	mp_doc_put_real(d, "step_compute_s", c->step_compute_s);
	return d;
}

static void print_link(FILE *f, const char *name, double per_token_d, double per_token_c,
		       double bytes, double bw, double seconds, double bw_to_hide)
{
	char b[32], r[32], h[32];
	cli_si(bytes, "B", b, sizeof(b));
	cli_si(bw, "B/s", r, sizeof(r));
	cli_si(bw_to_hide, "B/s", h, sizeof(h));
	fprintf(f, "  %-9s %.6g B dispatch + %.6g B combine per token; %s each way per GPU\n", name,
		per_token_d, per_token_c, b);
	fprintf(f, "            %.4g us at %s; hides under the arithmetic at %s\n", seconds * 1e6, r, h);
}

/* What print_comm prints. */
struct comm_run {
	const struct mp_model *m;
	const struct mp_hardware *hw;
	const struct mp_comm *c;
	uint32_t max_nodes;
};

static int print_comm(void *user, FILE *f)
{
	const struct comm_run *r = user;
	const struct mp_model *m = r->m;
	const struct mp_hardware *hw = r->hw;
	const struct mp_comm *c = r->c;
	uint32_t max_nodes = r->max_nodes;
	char fl[32], rf[32], sf[32], pk[32];
	fprintf(f, "%s on %s: EP%u = %u node%s of %u GPU%s, %.6g tokens per GPU, one MoE layer\n",
		m->name ? m->name : "(unnamed model)", hw->name ? hw->name : "(unnamed hardware)", c->ep,
		c->nodes, cli_s(c->nodes), c->gpus_per_node, cli_s(c->gpus_per_node),
		c->tokens_per_gpu);
	fprintf(f, "per token  %u visits x %.6g B = %.6g B (%s in, %s out); %.3f destination nodes",
		m->top_k, c->bytes_per_token / (double)m->top_k, c->bytes_per_token,
		mp_format_name(m->dispatch_format), mp_format_name(m->combine_format),
		c->dest_nodes_per_token);
	if (max_nodes) {
		fprintf(f, " (at most %u)", max_nodes);
	}
	fprintf(f, ", %.3f remote; %.3f visits cross NVLink\n", c->remote_nodes_per_token,
		c->scale_up_visits_per_token);
	print_link(f, "scale-up", c->dispatch_up_bytes_per_token, c->combine_up_bytes_per_token,
		   c->scale_up_bytes, c->scale_up_bw_bytes_per_s, c->scale_up_s, c->scale_up_bw_to_hide);
	print_link(f, "scale-out", c->dispatch_out_bytes_per_token, c->combine_out_bytes_per_token,
		   c->scale_out_bytes, c->scale_out_bw_bytes_per_s, c->scale_out_s, c->scale_out_bw_to_hide);
	cli_si(c->routed_flops, "FLOP", rf, sizeof(rf));
	cli_si(c->shared_flops, "FLOP", sf, sizeof(sf));
	cli_si(c->flops, "FLOP", fl, sizeof(fl));
	cli_si(c->peak_flops, "FLOP/s", pk, sizeof(pk));
	fprintf(f, "arithmetic routed %s + shared %s = %s per GPU: %.4g us at %s (%s)\n", rf, sf, fl,
		c->compute_s * 1e6, pk, mp_compute_name(m->expert_compute));
	fprintf(f, "ratio      communication / arithmetic = %.3g: %s\n", c->ratio,
		c->comm_s <= c->compute_s ? "the exchange can hide under the experts"
					  : "the exchange cannot hide under the experts");
	fprintf(f, "per step   %u MoE layers: communication %.4g ms, arithmetic %.4g ms\n", c->moe_layers,
		c->step_comm_s * 1e3, c->step_compute_s * 1e3);
	return 0;
}

int cmd_comm(int argc, char **argv)
{
	const char *model_path = NULL;
	const char *hw_path = NULL;
	const char *output = NULL;
	enum cli_output format = CLI_OUTPUT_TEXT;
	struct mp_comm_input in;
	mp_comm_input_init(&in);
	in.ep = 0;
	in.tokens_per_gpu = -1.0;
	struct cli_parser parser;
	cli_parser_init(&parser, &cmd_comm_help);
	int c;
	while ((c = cli_parser_next(&parser, argc, argv)) >= 0) {
		bool ok = true;
		switch (c) {
		case 'm':
			model_path = optarg;
			break;
		case 'H':
			hw_path = optarg;
			break;
		case 'e':
			ok = cli_parse_u32("comm", "ep", optarg, 1, MP_MAX_GPUS, &in.ep);
			break;
		case 'n':
			ok = cli_parse_u32("comm", "gpus-per-node", optarg, 1, 1u << 20, &in.gpus_per_node);
			break;
		case 'b':
			ok = cli_parse_count("comm", "tokens-per-gpu", optarg, 0, false, 1e9, &in.tokens_per_gpu);
			break;
		case 'M':
			ok = cli_parse_u32("comm", "max-nodes-per-token", optarg, 1, 1u << 20,
					   &in.max_nodes_per_token);
			break;
		case 'o':
			output = optarg;
			break;
		case 'f':
			ok = cli_parse_output("comm", optarg, &format);
			break;
		default: /* every id of the table has its case above */
			break;
		}
		if (!ok) {
			return EXIT_USAGE;
		}
	}
	int end = cli_parser_end(&parser, c, argc, argv);
	if (end >= 0) {
		return end;
	}
	if (!model_path || !hw_path || in.ep == 0 || in.gpus_per_node == 0 || in.tokens_per_gpu < 0) {
		return cli_usage("comm",
				 "--model, --hardware, --ep, --gpus-per-node and --tokens-per-gpu are required");
	}
	if (in.ep > in.gpus_per_node && in.ep % in.gpus_per_node != 0) {
		return cli_usage("comm", "--ep %u: expected at most --gpus-per-node %u or a multiple of it",
				 in.ep, in.gpus_per_node);
	}
	const char *inputs[] = {model_path, hw_path};
	if (!cli_outputs_spare_inputs("comm", &output, 1, inputs, 2)) {
		return EXIT_USAGE;
	}

	struct mp_model model;
	struct mp_hardware hw;
	mp_model_init(&model);
	mp_hardware_init(&hw);
	int status = cli_load_model_hardware(model_path, hw_path, &model, &hw);
	if (status) {
		goto out;
	}
	struct mp_comm result;
	int rc = mp_comm_layer(&model, &hw, &in, &result);
	if (rc) {
		cli_error("%s on %s: %s (the hardware needs a %s peak and the bandwidth of every link used)",
			  model_path, hw_path, mp_strerror(rc), mp_compute_name(model.expert_compute));
		status = EXIT_INPUT;
		goto out;
	}
	if (format == CLI_OUTPUT_TEXT) {
		struct comm_run run = {.m = &model, .hw = &hw, .c = &result,
				       .max_nodes = in.max_nodes_per_token};
		status = cli_write_text(output, print_comm, &run);
	} else {
		status = cli_emit_doc(comm_doc(&model, &hw, &result, in.max_nodes_per_token), output,
				      format);
	}
out:
	mp_model_finish(&model);
	mp_hardware_finish(&hw);
	return status;
}
