#!/bin/sh
# place --engine sglang against --engine even (issue 24): DeepSeek-V3's
# shape from an SGLang recorder dump as written (JSON logical_count, 61
# rows, dense rows 0-2 zero; MoE loads issue 4's Zipf rows
# floor(1e6 / (((97e + 31l) mod 256) + 1)^0.6), l the hidden layer), 288
# slots, at EP8 (one node), EP16 (two nodes of 8) and EP72 (nine nodes of
# 8). For each: the CPU time of place (user + system over all its threads,
# single run, /usr/bin/time; not wall time, which other work on the machine
# stretches), the
# worst busiest/mean over the MoE layers of the exported map under SGLang's
# static dispatch as tests/sglang-dispatch.py computes it (SGLang's code
# re-implemented, not moeplan's), and moeplan's own reported figure
# (worst max_load / mean_load of the placement). Prints a markdown table;
# with --write, also rewrites README.md's block
# `<!-- BEGIN generated: dispatch-sglang -->` with it (a benchmark block:
# tests/readme-blocks.py checks its form only, it is not re-run by the suite).
#
# Usage: tests/bench/dispatch-sglang.sh [--write] [MOEPLAN]   (from the source root)
set -eu
WRITE=0
if [ "${1:-}" = --write ]; then
	WRITE=1
	shift
fi
MOEPLAN=${1:-build/src/cli/moeplan}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
awk 'BEGIN {
	printf "{\"logical_count\": [["
	for (l = 0; l < 61; l++) {
		printf "%s[", l ? "," : ""
		for (e = 0; e < 256; e++) {
			v = l < 3 ? 0 : int(1e6 / ((((97 * e + 31 * l) % 256) + 1) ^ 0.6))
			printf "%s%d", e ? "," : "", v
		}
		printf "]"
	}
	print "]]}"
}' >"$T/dump.json"
python3 -c "
import json, sys
rows = json.load(open(sys.argv[1]))['logical_count'][0]
open(sys.argv[2], 'w').write(''.join(','.join(map(str, r)) + '\n' for r in rows))" "$T/dump.json" "$T/loads.csv"
{
echo "| GPUs | nodes | engine | place CPU time (s) | busiest/mean under SGLang's rule (worst MoE layer) | moeplan's figure |"
echo "|---|---|---|---|---|---|"
for G in 8 16 72; do
	for E in even sglang; do
		/usr/bin/time -o "$T/time" -f '%U %S' "$MOEPLAN" place "$T/dump.json" --model plans/models/deepseek-v3.yaml \
			--gpus $G --slots 288 --gpus-per-node 8 -t 0 --engine $E -q -o "$T/p.yaml" \
			--export sglang --export-output "$T/m.json" >/dev/null
		s=$(awk '{ printf "%.2f", $1 + $2 }' "$T/time")
		rule=$(EP_SIZE=$G python3 tests/sglang-dispatch.py score "$T/m.json" "$T/loads.csv" 8 | tail -1 | cut -d' ' -f2)
		own=$(python3 -c "
import re, sys
t = open(sys.argv[1]).read()
mx = [float(x) for x in re.findall(r'\n +max_load: ([0-9.e+-]+)', t)]
mn = [float(x) for x in re.findall(r'\n +mean_load: ([0-9.e+-]+)', t)]
print('%.4f' % max(a / b for a, b in zip(mx, mn)))" "$T/p.yaml")
		echo "| $G | $((G / 8)) | $E | $s | $rule | $own |"
	done
done
} >"$T/table.md"
cat "$T/table.md"
if [ $WRITE = 1 ]; then
	python3 - "$T/table.md" README.md <<'EOF'
import os, sys
table = open(sys.argv[1]).read()
readme = open(sys.argv[2]).read()
begin, end = "<!-- BEGIN generated: dispatch-sglang -->\n", "<!-- END generated: dispatch-sglang -->"
i = readme.index(begin) + len(begin)
j = readme.index(end, i)
open(sys.argv[2] + ".tmp", "w").write(readme[:i] + table + readme[j:])
os.replace(sys.argv[2] + ".tmp", sys.argv[2])
EOF
fi
