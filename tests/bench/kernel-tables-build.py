#!/usr/bin/env python3
"""Build hardware/kernels/*.csv from published kernel measurements (issue 23).

Usage: tests/bench/kernel-tables-build.py REFERENCE_DIR OUT_DIR

REFERENCE_DIR holds the extracts (one row per published measurement, with the
shape): deepgemm_h800_vs_moeplan.csv, aic_wideep_moe_vs_moeplan.csv and
aic_wideep_mla_generation_vs_moeplan.csv. Only their *measured* columns and
shapes are read (the "moeplan"/"predicted" columns are ignored). Every row of
the output keeps its measured time and the roofline it is divided into, so
the efficiency can be recomputed by hand:

  efficiency = roofline_us / measured_us,
  roofline_us = max(bytes / B_hbm, flop / P) at the datasheet peaks in the
  table's header (the hardware/*.yaml figures), i.e. the achieved fraction of
  the binding roof.

Shapes (DeepSeek-V3, FP8 weights; config.json of deepseek-ai/DeepSeek-V3):
  gemm_*     flop = 2 g M N K, bytes = g (M K + K N + 2 M N) (DeepGEMM's own
             count, tests/test_core.py of DeepGEMM@327ec92f), P = FP8 peak.
  moe_block  SGLang DeepEPMoE.run_moe_core (two masked grouped GEMMs +
             activation): per GPU T tokens, E local experts of 256, top-8;
             expert weights 3 x 7168 x 2048 FP8 bytes; touched experts
             E (1 - (1 - 8/256)^(T EP)); flop = 8 T 2 (3 x 7168 x 2048).
  mla_decode the attention module per layer: projections 187.11e6 FP8 bytes
             (q_a 7168x1536, q_b 1536x128x192, kv_a 7168x576,
             kv_b 512x128x256, o 128x128x7168), 2 x 187.11e6 FLOP per token
             at the FP8 peak; KV cache 656 B per token (FlashMLA FP8 layout:
             512 FP8 + 4 x 4 B scales + 64 x 2 B rope) read once; core
             2 h (r + p) + 2 h r FLOP per (token, context) pair, h = 128,
             r = 512, p = 64, at the BF16 peak.
"""
import csv, math, os, sys

PEAKS = {  # fp8, bf16 FLOP/s, HBM B/s: hardware/hgx-*.yaml (datasheet peaks)
    'h800': (1978.9e12, 989.4e12, 3.35e12, 'NVIDIA H800 SXM5', 'hardware/hgx-h800.yaml'),
    'h100': (1978.9e12, 989.4e12, 3.35e12, 'NVIDIA H100 SXM5', 'hardware/hgx-h100.yaml'),
    'h200': (1978.9e12, 989.4e12, 4.8e12, 'NVIDIA H200 SXM', 'hardware/hgx-h200.yaml'),
    'b200': (4.5e15, 2.25e15, 8e12, 'NVIDIA B200', 'hardware/hgx-b200.yaml'),
}
SRC_DG = ('dg', 'deepseek-ai/DeepGEMM@327ec92f6977e7fee022cb76a8f273b75483c3d8:README.md '
          '("Performance" tables, H800 SXM5, NVCC 12.8; bench_kineto in tests/test_core.py, L2 flushed)')
AIC = 'ai-dynamo/aiconfigurator@095f58a51c4ca8e61b66ec108d86f223f8d559ce:aic-core/src/aiconfigurator_core/systems/data/'
SYS = {'h100_sxm': 'h100', 'h200_sxm': 'h200', 'b200_sxm': 'b200'}
W_EXPERT = 3 * 7168 * 2048
W_ATTN = 187.11e6
KV_TOKEN = 656.0
PAIR_FLOP = 2 * 128 * (512 + 64) + 2 * 128 * 512


def gemm_roofline(g, m, n, k, pk):
    return max(2.0 * g * m * n * k / pk[0], g * (m * k + k * n + 2.0 * m * n) / pk[2]) * 1e6


def moe_roofline(t, ep, e, pk):
    touched = e * (1.0 - (1.0 - 8.0 / 256.0) ** (t * ep))
    return max(touched * W_EXPERT / pk[2], 8.0 * t * 2.0 * W_EXPERT / pk[0]) * 1e6


def mla_roofline(b, c, pk):
    by = W_ATTN + b * c * KV_TOKEN
    t = b * 2.0 * W_ATTN / pk[0] + b * c * PAIR_FLOP / pk[1]
    return max(by / pk[2], t) * 1e6


def main():
    ref, out = sys.argv[1], sys.argv[2]
    rows = {g: [] for g in PEAKS}
    srcs = {g: {} for g in PEAKS}
    with open(os.path.join(ref, 'deepgemm_h800_vs_moeplan.csv')) as f:
        for r in csv.DictReader(f):
            g, m, n, k = int(r['groups']), int(r['m']), int(r['n']), int(r['k'])
            meas = 2.0 * g * m * n * k / (float(r['measured_tflops']) * 1e12) * 1e6
            roof = gemm_roofline(g, m, n, k, PEAKS['h800'])
            rows['h800'].append(('gemm_' + r['layout'], m, k, n, g, '', '', meas, roof, 'dg'))
            srcs['h800']['dg'] = SRC_DG[1]
    with open(os.path.join(ref, 'aic_wideep_moe_vs_moeplan.csv')) as f:
        for r in csv.DictReader(f):
            if r['phase'] != 'generation':
                continue
            gpu = SYS[r['system']]
            t, ep, e = float(r['tokens_per_gpu']), int(r['ep']), int(r['experts_per_gpu'])
            roof = moe_roofline(t, ep, e, PEAKS[gpu])
            rows[gpu].append(('moe_block', r['tokens_per_gpu'], 7168, 2048, '', e, '', float(r['measured_us']), roof, 'aic_moe'))
            srcs[gpu]['aic_moe'] = AIC + r['system'] + '/moe/sglang/0.5.10/wideep_generation_moe_perf.parquet (SGLang 0.5.10 DeepEPMoE.run_moe_core, DeepSeek-V3, CUDA graph; ep column gives experts 256/EP)'
    with open(os.path.join(ref, 'aic_wideep_mla_generation_vs_moeplan.csv')) as f:
        for r in csv.DictReader(f):
            gpu = SYS[r['system']]
            b, c = int(r['batch']), int(r['context'])
            roof = mla_roofline(b, c, PEAKS[gpu])
            rows[gpu].append(('mla_decode', b, '', '', '', '', c, float(r['measured_us']), roof, 'aic_mla'))
            srcs[gpu]['aic_mla'] = AIC + r['system'] + '/mla/sglang/0.5.10/wideep_generation_mla_perf.parquet (MLA decode attention module, DeepSeek-V3, FP8 KV, 128 heads)'
    for gpu, rs in rows.items():
        if not rs:
            continue
        pk = PEAKS[gpu]
        path = os.path.join(out, gpu + '.csv')
        with open(path, 'w') as f:
            f.write('# moeplan kernel table (format: moeplan-formats(5), Kernel tables): %s\n' % pk[3])
            f.write('# gpu: %s\n' % gpu)
            f.write('# peaks the roofline uses (%s): fp8 %.4g FLOP/s, bf16 %.4g FLOP/s, hbm %.4g B/s\n' % (pk[4], pk[0], pk[1], pk[2]))
            f.write('# efficiency = roofline_us / measured_us; built by tests/bench/kernel-tables-build.py\n')
            for key, s in sorted(srcs[gpu].items()):
                f.write('# source %s: %s\n' % (key, s))
            f.write('kernel,m,k,n,groups,experts,context,measured_us,roofline_us,efficiency,source\n')
            for r in rs:
                f.write('%s,%s,%s,%s,%s,%s,%s,%.2f,%.3f,%.4f,%s\n' % (r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[8] / r[7], r[9]))
        print(path, len(rs), 'rows')


if __name__ == '__main__':
    main()
