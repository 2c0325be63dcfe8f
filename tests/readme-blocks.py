#!/usr/bin/env python3
"""The README's and the manual's program outputs come from the program
(issue 16 item 9, issue 27).

Each block between `<!-- BEGIN generated: NAME -->` and
`<!-- END generated: NAME -->` in README.md and in the manual's pages
(doc/*.md) is the output of the commands
listed for NAME below, run from a scratch folder that links the source
tree's plans/ and hardware/ (so commands read exactly as in the README).
Only these blocks are compared; the prose around them is not.

  tests/readme-blocks.py --check   exit 1 and show a diff when a block drifted
  tests/readme-blocks.py --update  rewrite the blocks in README.md and doc/*.md

Options: --moeplan BIN (default build/src/cli/moeplan), --example BIN (the
library example, default build/tests/example-plan-layer), --root DIR (the
source tree, default .). Also checks that the example lines of every
command's help name input files that exist (or that an earlier example
writes).
"""
import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile

# NAME -> list of steps; a step is (shell command shown in the README,
# argv run, what to show: "stdout", "stderr", "grep:WORD" (stdout lines
# holding WORD), or "file:PATH:START:STOP" (lines of PATH from the line
# starting with START up to, not including, the second line starting with
# STOP after it), fence language).
FIT = ["fit", "--model", "plans/models/deepseek-v4.1-flash.yaml", "--hardware",
       "hardware/gb200-nvl72.yaml", "--ep", "64", "--requests", "256", "--context", "131072",
       "--tokens-per-request", "4"]
WIN_A = "plans/traces/qwen15moe_bookcorpus.winA.csv"
WIN_B = "plans/traces/qwen15moe_bookcorpus.winB.csv"
BLOCKS = {
    "fit": [(FIT, "stdout", "text")],
    "summary": [(["plan", "plans/default.yaml", "--format", "text"], "stdout", "text")],
    "report": [(["plan", "plans/default.yaml", "-o", "plan.yaml", "--report", "report.md"],
                "file:report.md:# Plan:## ", "markdown")],
    "replan": [
        (["place", WIN_A, "--gpus", "8", "--slots", "72", "-o", "old.yaml"], "stderr", "text"),
        (["check", "old.yaml", "--loads", WIN_B], "grep:worst_balancedness", "text"),
        (["replan", "--plan", "old.yaml", "--loads", WIN_B, "--max-moves", "25%", "--model",
          "plans/models/qwen1.5-moe-a2.7b.yaml", "--hardware", "hardware/hgx-h100.yaml", "-o",
          "new.yaml"], "stderr", "text"),
    ],
    "search-day": [(["search", "plans/deepseek-v3-day.yaml", "-o", "day.txt"],
                    "file:day.txt:chosen decode:placement prefill", "text")],
    "search-v41": [(["search", "plans/deepseek-v4.1-flash-pools.yaml", "-o", "v41.txt"],
                    "file:v41.txt:chosen decode:placement prefill", "text"),
                   (["search", "plans/deepseek-v4.1-flash-pools.yaml", "--tpot", "3.07 ms", "-o",
                     "v41-tpot.txt"], "file:v41-tpot.txt:chosen decode:placement prefill", "text")],
    "library-source": [("source", "tests/example-plan-layer.c", "c")],
    "library-output": [(None, "stdout", "text")],
    # README "Predicted vs published": the rows and src/model/published-error.c come from
    # one run of this script (--write rewrites both; tests/published-error.py checks the
    # errors compiled in against the README rows)
    "predicted-vs-published": [("script", "tests/bench/predicted-vs-published.py", None)],
}

BEGIN = re.compile(r"^<!-- BEGIN generated: ([a-z0-9-]+) -->$")


def run(argv, cwd):
    r = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, LC_ALL="C"), timeout=600)
    return r


def shown(cmd):
    words = ["moeplan"] + [shlex.quote(w) for w in cmd]
    return " ".join(words)


def render(name, args, work):
    out = []
    for cmd, what, lang in BLOCKS[name]:
        if cmd == "source":  # a source file shown whole
            with open(os.path.join(args.root, what)) as f:
                out.append(f"```{lang}\n{f.read()}```\n")
            continue
        if cmd == "script":  # a generator script's own output, not fenced
            r = run([sys.executable, os.path.join(os.path.abspath(args.root), what), "--moeplan",
                     os.path.abspath(args.moeplan)], work)
            if r.returncode != 0:
                sys.exit(f"{name}: {what} failed: {r.stderr}")
            out.append(r.stdout)
            continue
        if cmd is None:  # the library example
            r = run([os.path.abspath(args.example)], work)
            if r.returncode != 0:
                sys.exit(f"{name}: the library example failed: {r.stderr}")
            out.append(f"```{lang}\n{r.stdout}```\n")
            continue
        r = run([os.path.abspath(args.moeplan)] + cmd, work)
        if r.returncode not in (0,):
            sys.exit(f"{name}: `{shown(cmd)}` exited {r.returncode}:\n{r.stderr}")
        if what == "stdout":
            text = r.stdout
        elif what == "stderr":
            text = r.stderr
        elif what.startswith("grep:"):
            word = what[5:]
            text = "".join(l + "\n" for l in r.stdout.splitlines() if word in l)
            cmd_text = shown(cmd) + f" | grep {word}"
        elif what.startswith("file:"):
            _, path, start, stop = what.split(":", 3)
            lines = open(os.path.join(work, path)).read().splitlines()
            i = next(k for k, l in enumerate(lines) if l.startswith(start))
            # up to the second STOP line after START: the summary table and
            # the first section (the EP widths)
            heads = [k for k in range(i + 1, len(lines)) if lines[k].startswith(stop)]
            j = heads[1] if len(heads) > 1 else len(lines)
            text = "\n".join(lines[i:j]).rstrip("\n") + "\n"
        if not what.startswith("grep:"):
            cmd_text = shown(cmd)
        out.append(f"```sh\n{cmd_text}\n```\n")
        if text:
            out.append(f"```{lang}\n{text}```\n")
    return "".join(out)


def blocks_of(readme, rel):
    """[(name, start line index, end line index)] of the marked blocks."""
    lines = readme.splitlines(keepends=True)
    found = []
    for i, l in enumerate(lines):
        m = BEGIN.match(l.rstrip("\n"))
        if m:
            end = f"<!-- END generated: {m.group(1)} -->"
            j = next((k for k in range(i + 1, len(lines)) if lines[k].rstrip("\n") == end), None)
            if j is None:
                sys.exit(f"{rel}:{i + 1}: {m.group(1)} has no '{end}'")
            found.append((m.group(1), i, j))
    return lines, found


def help_examples(args):
    """Input files named in every command's help examples exist (or an
    earlier example line writes them)."""
    moeplan = os.path.abspath(args.moeplan)
    top = run([moeplan, "--help"], args.root).stdout
    commands = re.findall(r"^  ([a-z]+)  ", top, re.M)
    problems = []
    for c in commands:
        text = run([moeplan, c, "--help"], args.root).stdout
        ex = text.split("Examples:", 1)[1].split("\n\n", 1)[0] if "Examples:" in text else ""
        ex = ex.replace("\\\n", " ")
        written = set()
        for line in ex.splitlines():
            words = shlex.split(line.split("|")[0])
            for k, w in enumerate(words):
                prev = words[k - 1] if k else ""
                if prev in ("-o", "--output", "--svg", "--report", "--export-output"):
                    written.add(w)
                    continue
                if re.search(r"\.(yaml|yml|csv|json|pt)$", w):
                    if w not in written and not os.path.exists(os.path.join(args.root, w)):
                        problems.append(f"moeplan {c} --help: '{w}' does not exist: {line.strip()}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--check", action="store_true")
    g.add_argument("--update", action="store_true")
    ap.add_argument("--moeplan", default="build/src/cli/moeplan")
    ap.add_argument("--example", default="build/tests/example-plan-layer")
    ap.add_argument("--root", default=".")
    args = ap.parse_args()
    paths = ["README.md"] + sorted(os.path.join("doc", f) for f in os.listdir(
        os.path.join(args.root, "doc")) if f.endswith(".md"))
    docs = {}  # relative path -> (lines, [(name, start, end)])
    names = []
    for rel in paths:
        with open(os.path.join(args.root, rel)) as f:
            docs[rel] = blocks_of(f.read(), rel)
        names += [n for n, _, _ in docs[rel][1]]
    missing = [n for n in BLOCKS if n not in names]
    unknown = [n for n in names if n not in BLOCKS]
    twice = sorted({n for n in names if names.count(n) > 1})
    if missing or unknown or twice:
        sys.exit(f"README.md, doc/*.md: blocks missing {missing}, unknown {unknown}, "
                 f"given twice {twice}")
    drift = []
    with tempfile.TemporaryDirectory() as work:
        for d in ("plans", "hardware", "tests"):
            os.symlink(os.path.abspath(os.path.join(args.root, d)), os.path.join(work, d))
        new = {n: render(n, args, work) for n in names}
    rewritten = {}
    for rel, (lines, found) in docs.items():
        out = []
        pos = 0
        for name, i, j in found:
            out.extend(lines[pos:i + 1])
            old = "".join(lines[i + 1:j])
            if old != new[name]:
                drift.append(name)
                rewritten[rel] = True
                if args.check:
                    sys.stdout.writelines(difflib.unified_diff(
                        old.splitlines(keepends=True), new[name].splitlines(keepends=True),
                        f"{rel} ({name})", f"program ({name})"))
            out.append(new[name])
            pos = j
        out.extend(lines[pos:])
        if args.update and rel in rewritten:
            path = os.path.join(args.root, rel)
            with open(path + ".tmp", "w") as f:
                f.write("".join(out))
            os.replace(path + ".tmp", path)
            print(f"{rel}: regenerated the blocks that drifted")
    problems = help_examples(args)
    for p in problems:
        print(p)
    if args.update:
        return 1 if problems else 0
    if drift:
        print(f"README.md, doc/*.md: blocks that differ from the program: {', '.join(drift)}; "
              "run tests/readme-blocks.py --update")
    return 1 if drift or problems else 0


if __name__ == "__main__":
    sys.exit(main())
