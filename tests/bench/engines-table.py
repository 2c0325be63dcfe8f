#!/usr/bin/env python3
"""README "Engines" (issue 24): the busiest GPU over the mean of moeplan's
placements scored under each engine's dispatch rule, from one run of moeplan.

Usage: tests/bench/engines-table.py [--moeplan BIN] [--bench] [--write | --check]
  (no flag)  print the README block (a markdown table)
  --bench    the scenario rows instead: every shipped plans/*.yaml that
             `plan` places (tens of seconds of CPU each with --engine sglang,
             too slow for the test suite); block `engines-bench`
  --write    rewrite the README block (`engines`, or with --bench
             `engines-bench`) between its markers
  --check    exit 1 (with a diff) when the README block differs from this run
BIN defaults to build/src/cli/moeplan. Run from the source root (or any
folder holding plans/; tests/readme-blocks.py runs it from a scratch folder
that links plans/).

Each row places one shipped case twice, with `--engine even` (each replica
takes 1/r of its expert's tokens: DeepSeek's EPLB) and with `--engine sglang`
(SGLang's nearest-replica rule), and scores each placement with
`moeplan check PLACEMENT --loads LOADS --engine RULE` for RULE = even, sglang
and vllm (sglang with the placement's gpus_per_node as --gpus-per-node: the
row's --gpus-per-node, a plan's hardware node; one node when it has none).
A cell is the worst layer's busiest GPU over the mean GPU load: for even
1 / worst_balancedness, for sglang and vllm worst_engine_busiest_over_mean
(check's JSON). The loads a placement is scored on are the loads it was
placed from (the trace; for a scenario, the plan's own expert_loads written
out as CSV, which are the scenario's popularity rows). The rules and their
sources: moeplan-models(7), "Dispatch under each engine".
"""
import argparse
import difflib
import json
import os
import shlex
import subprocess
import sys
import tempfile

# (what, command after `moeplan`, loads to score on, GPUs per node or None).
# The traces and shapes are the ones the README and the manual already place.
ROWS = [
    ("OLMoE, C4 trace", ["place", "plans/traces/olmoe_c4.csv", "--gpus", "8", "--slots", "72"],
     "plans/traces/olmoe_c4.csv", None),
    ("Qwen1.5-MoE, bookcorpus window A",
     ["place", "plans/traces/qwen15moe_bookcorpus.winA.csv", "--gpus", "8", "--slots", "72"],
     "plans/traces/qwen15moe_bookcorpus.winA.csv", None),
    ("Switch-128, bookcorpus, 2 nodes of 8",
     ["place", "plans/traces/switch128_bookcorpus.csv", "--gpus", "16", "--slots", "144",
      "--gpus-per-node", "8"], "plans/traces/switch128_bookcorpus.csv", 8),
    ("Mixtral-8x7B, GitHub trace",
     ["place", "plans/traces/mixtral8x7b_github.csv", "--gpus", "4", "--slots", "12"],
     "plans/traces/mixtral8x7b_github.csv", None),
    ("scenario plans/olmoe-github.yaml", ["plan", "plans/olmoe-github.yaml"],
     "plans/traces/olmoe_github.csv", None),
    ("scenario plans/qwen15moe-bookcorpus.yaml", ["plan", "plans/qwen15moe-bookcorpus.yaml"],
     "plans/traces/qwen15moe_bookcorpus.csv", None),
]
# Scenarios whose plan runs tens of seconds with --engine sglang (measured on
# two shared cores: 20-25 s each); plans/deepseek-v3-day.yaml is a search
# scenario (two pools), which `plan` does not place.
BENCH_ROWS = [
    ("scenario plans/default.yaml", ["plan", "plans/default.yaml"], "PLAN", None),
    ("scenario plans/deepseek-v3-h800.yaml", ["plan", "plans/deepseek-v3-h800.yaml"], "PLAN", None),
    ("scenario plans/deepseek-v3-group-limited.yaml",
     ["plan", "plans/deepseek-v3-group-limited.yaml"], "PLAN", None),
    ("scenario plans/deepseek-v4.1-flash-pools.yaml",
     ["plan", "plans/deepseek-v4.1-flash-pools.yaml"], "PLAN", None),
]
RULES = ["even", "sglang", "vllm"]


def run(argv):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, LC_ALL="C"), timeout=600)
    if r.returncode != 0:
        sys.exit(f"engines-table: `{' '.join(argv)}` exited {r.returncode}:\n{r.stderr}")
    return r.stdout


def plan_loads_csv(plan_path, csv_path):
    """The plan's own expert_loads ([layers][experts]) as a CSV."""
    text = run([sys.executable, "-c", "import json, sys; d = json.load(open(sys.argv[1])); "
                "print(''.join(','.join(repr(float(v)) for v in r) + '\\n' "
                "for r in d['expert_loads']), end='')", plan_path])
    with open(csv_path, "w") as f:
        f.write(text)


def shape_of(placement_json, is_plan):
    """(GPUs, GPUs per node or None) of the placement (a plan's decode phase)."""
    d = json.load(open(placement_json))
    p = d["decode"]["placement"] if is_plan else d
    return p["gpus"], p.get("gpus_per_node")


def score(moeplan, path, loads, rule, per_node):
    argv = [moeplan, "check", path, "--loads", loads, "--engine", rule, "-q", "--format", "json"]
    if rule == "sglang" and per_node:
        argv += ["--gpus-per-node", str(per_node)]
    c = json.loads(run(argv))["check"]
    if rule == "even":
        return 1.0 / c["worst_balancedness"]
    return c["worst_engine_busiest_over_mean"]


def table(moeplan, rows):
    out = ["| case | GPUs (per node) | placed with | busiest/mean: even | sglang | vllm |",
           "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as t:
        for what, cmd, loads, per_node in rows:
            for engine in ("even", "sglang"):
                path = os.path.join(t, "p.json")
                argv = cmd + ["--engine", engine]
                run([moeplan] + argv + ["-q", "--format", "json", "-o", path])
                is_plan = cmd[0] == "plan"
                src = loads
                if loads == "PLAN":
                    src = os.path.join(t, "loads.csv")
                    plan_loads_csv(path, src)
                gpus, node = shape_of(path, is_plan)
                node = per_node or node
                cells = ["%.4f" % score(moeplan, path, src, r, node) for r in RULES]
                shown = "moeplan " + " ".join(shlex.quote(w) for w in argv) + " -o p.yaml"
                size = f"{gpus} ({node})" if node else f"{gpus}"
                out.append(f"| {what} | {size} | `{shown}` | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def block_of(readme, name):
    begin, end = f"<!-- BEGIN generated: {name} -->\n", f"<!-- END generated: {name} -->"
    i = readme.index(begin) + len(begin)
    return i, readme.index(end, i)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moeplan", default="build/src/cli/moeplan")
    ap.add_argument("--bench", action="store_true")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    ap.add_argument("--readme", default="README.md")
    args = ap.parse_args()
    moeplan = os.path.abspath(args.moeplan)
    text = table(moeplan, BENCH_ROWS if args.bench else ROWS)
    if not (args.write or args.check):
        sys.stdout.write(text)
        return 0
    name = "engines-bench" if args.bench else "engines"
    readme = open(args.readme).read()
    i, j = block_of(readme, name)
    if args.check:
        if readme[i:j] != text:
            sys.stdout.writelines(difflib.unified_diff(
                readme[i:j].splitlines(keepends=True), text.splitlines(keepends=True),
                f"README.md ({name})", "program"))
            return 1
        return 0
    with open(args.readme + ".tmp", "w") as f:
        f.write(readme[:i] + text + readme[j:])
    os.replace(args.readme + ".tmp", args.readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
