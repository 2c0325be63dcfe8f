#!/usr/bin/env python3
"""Measure a kernel table on the GPU at hand (issue 23). Never run by CI.

Usage: python3 tests/bench/gpu/kernel-tables.py --gpu NAME --fp8 FLOP/s --bf16 FLOP/s
           --hbm B/s [--quick] > hardware/kernels/NAME.csv

The peaks are the datasheet figures of hardware/*.yaml (the roofline every
row is divided into); the output is in the shipped format
(hardware/kernels/h800.csv; loader: mp_load_kernel_table), with the same
shapes and roofline formulas as tests/bench/kernel-tables-build.py, so the
rows can be compared with the published ones. What it runs (PyTorch only,
no DeepGEMM/FlashMLA/DeepEP; so these are *PyTorch's* kernels, usually
slower than the engines', and the source column says so):

  gemm_dense       torch._scaled_mm FP8 e4m3 (per-tensor scales) when the
                   GPU has it (sm_89+), else BF16 torch.mm (source 'torch_bf16',
                   and the roofline then uses the BF16 peak); DeepSeek-V3's
                   (N, K) pairs at M = 1..4096.
  gemm_masked      the same per group in a loop over groups (not a fused
                   grouped kernel), groups x M rows.
  moe_block        DeepSeek-V3's MoE core on one GPU: E local experts (256/EP)
                   as BF16 torch.bmm gate_up [E, t, 7168] x [E, 7168, 4096],
                   SiLU-and-mul, down [E, t, 2048] x [E, 2048, 7168], with
                   t = 8 T / E tokens per expert (balanced), T tokens per GPU.
  mla_decode       the absorbed MLA decode module of one layer (BF16): the
                   projections as torch.mm over B tokens, scores q [B, 128,
                   576] x KV [B, C, 576]^T, softmax, x V [B, C, 512].

Timing: CUDA events around each call, median of --reps runs after warm-up,
the L2 flushed (a 256 MB write) before each run, as DeepGEMM's bench_kineto
flushes it. Each row's efficiency = roofline_us / measured_us.
"""
import argparse, importlib.util, os, statistics, sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location('build', os.path.join(HERE, '..', 'kernel-tables-build.py'))
build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build)

GEMM_NK = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]


def timed(fn, reps, flush):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)  # ms -> us
    return statistics.median(ts)


def fp8_ok():
    if not hasattr(torch, 'float8_e4m3fn') or not hasattr(torch, '_scaled_mm'):
        return False
    major, minor = torch.cuda.get_device_capability()
    return (major, minor) >= (8, 9)


def gemm_fn(m, n, k, fp8):
    if fp8:
        a = torch.randn(m, k, device='cuda').to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device='cuda').to(torch.float8_e4m3fn).t()  # column-major B
        one = torch.tensor(1.0, device='cuda')
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    a = torch.randn(m, k, device='cuda', dtype=torch.bfloat16)
    b = torch.randn(k, n, device='cuda', dtype=torch.bfloat16)
    return lambda: torch.mm(a, b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--gpu', required=True)
    ap.add_argument('--fp8', type=float, required=True)
    ap.add_argument('--bf16', type=float, required=True)
    ap.add_argument('--hbm', type=float, required=True)
    ap.add_argument('--reps', type=int, default=20)
    ap.add_argument('--quick', action='store_true', help='fewer sizes (a few minutes)')
    args = ap.parse_args()
    fp8 = fp8_ok()
    pk_fp8 = (args.fp8, args.bf16, args.hbm)
    pk_bf16 = (args.bf16, args.bf16, args.hbm)  # a BF16 GEMM's roof is the BF16 peak
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device='cuda')
    name = torch.cuda.get_device_name()
    rows = []
    ms = [64, 128, 4096] if args.quick else [1, 8, 32, 64, 128, 256, 512, 1024, 4096]
    src = 'torch_fp8' if fp8 else 'torch_bf16'
    pk = pk_fp8 if fp8 else pk_bf16
    for m in ms:
        for n, k in GEMM_NK:
            us = timed(gemm_fn(m, n, k, fp8), args.reps, flush)
            rows.append(('gemm_dense', m, k, n, 1, '', '', us, build.gemm_roofline(1, m, n, k, pk), src))
    for g, m in ([(4, 256), (2, 512), (1, 1024)] if args.quick else [(8, 64), (4, 256), (2, 512), (1, 1024)]):
        for n, k in [(4096, 7168), (7168, 2048)]:
            fns = [gemm_fn(m, n, k, fp8) for _ in range(g)]
            us = timed(lambda: [f() for f in fns], args.reps, flush)
            rows.append(('gemm_masked', m, k, n, g, '', '', us, build.gemm_roofline(g, m, n, k, pk), src + '_loop'))
    for ep in ([8, 32, 128] if args.quick else [4, 8, 16, 32, 64, 128, 256]):
        e = 256 // ep
        for t in ([1, 16, 128] if args.quick else [1, 4, 16, 64, 128, 256, 512]):
            te = max(1, round(8 * t / e))
            x = torch.randn(e, te, 7168, device='cuda', dtype=torch.bfloat16)
            w1 = torch.randn(e, 7168, 4096, device='cuda', dtype=torch.bfloat16)
            w2 = torch.randn(e, 2048, 7168, device='cuda', dtype=torch.bfloat16)

            def moe():
                h = torch.bmm(x, w1)
                a = torch.nn.functional.silu(h[..., :2048]) * h[..., 2048:]
                return torch.bmm(a, w2)
            us = timed(moe, args.reps, flush)
            # BF16 weights: twice the FP8 bytes the shipped roofline counts.
            roof = 2 * build.moe_roofline(t, ep, e, pk_bf16)
            rows.append(('moe_block', t, '', '', '', e, '', us, roof, 'torch_bf16_bmm'))
            del x, w1, w2
    proj = [(7168, 1536), (1536, 128 * 192), (7168, 576), (512, 128 * 256), (128 * 128, 7168)]
    for b in ([1, 64, 512] if args.quick else [1, 8, 32, 128, 512, 1024]):
        for c in ([16, 1024, 8192] if args.quick else [1, 64, 512, 2048, 8192, 16384]):
            if b * c * 576 * 2 > 40e9:
                continue
            ws = [torch.randn(k, n, device='cuda', dtype=torch.bfloat16) for k, n in proj]
            xs = [torch.randn(b, k, device='cuda', dtype=torch.bfloat16) for k, _ in proj]
            q = torch.randn(b, 128, 576, device='cuda', dtype=torch.bfloat16)
            kv = torch.randn(b, c, 576, device='cuda', dtype=torch.bfloat16)

            def mla():
                for xx, w in zip(xs, ws):
                    torch.mm(xx, w)
                s = torch.bmm(q, kv.transpose(1, 2)).softmax(-1)
                return torch.bmm(s, kv[..., :512])
            us = timed(mla, args.reps, flush)
            # BF16 weights and KV: the module's bytes at 2 B per value.
            by = 2 * build.W_ATTN + b * c * 576 * 2
            fl = b * 2.0 * build.W_ATTN / args.bf16 + b * c * build.PAIR_FLOP / args.bf16
            roof = max(by / args.hbm, fl) * 1e6
            rows.append(('mla_decode', b, '', '', '', '', c, us, roof, 'torch_bf16_mla'))
            del ws, xs, q, kv
    out = sys.stdout
    out.write('# moeplan kernel table (format: moeplan-formats(5), Kernel tables): %s, measured with PyTorch %s\n' % (name, torch.__version__))
    out.write('# gpu: %s\n' % args.gpu)
    out.write('# peaks the roofline uses: fp8 %.4g FLOP/s, bf16 %.4g FLOP/s, hbm %.4g B/s\n' % pk_fp8)
    out.write('# efficiency = roofline_us / measured_us; built by tests/bench/gpu/kernel-tables.py\n')
    out.write('# source torch_*: this script on this GPU (CUDA events, median of %d, L2 flushed)\n' % args.reps)
    out.write('kernel,m,k,n,groups,experts,context,measured_us,roofline_us,efficiency,source\n')
    for r in rows:
        eff = r[8] / r[7]
        line = '%s,%s,%s,%s,%s,%s,%s,%.2f,%.3f,%.4f,%s\n' % (r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], eff, r[9])
        # Above 1.5 of the roof is a timing artefact (the loader refuses it): kept as a comment.
        out.write(('# above the roof, not used: ' if eff > 1.5 else '') + line)


if __name__ == '__main__':
    main()
