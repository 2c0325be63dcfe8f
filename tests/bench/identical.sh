#!/bin/sh
# Byte-identical check for refactors (issue 15): writes the plans of every
# shipped scenario, placements of several loads files and option sets, and
# re-plans into OUTDIR, one file per run plus its exit status. Run it on
# the tree before a change and after it, then `diff -r BEFORE AFTER`: a
# refactor that does not change behaviour leaves no difference.
#
# Usage: tests/bench/identical.sh OUTDIR [MOEPLAN]   (from the source root)
#   MOEPLAN defaults to build/src/cli/moeplan.
# Placements use --time-limit 0 and plans and re-plans a limit of 1000 s
# (their smallest allowed is 0.001 s), so the counted work budgets end
# every search and the outputs depend on the code alone, never on the load
# of the machine. Takes about a minute on two cores.
set -u

OUT=${1:?usage: identical.sh OUTDIR [MOEPLAN]}
MOEPLAN=${2:-build/src/cli/moeplan}
mkdir -p "$OUT"

# run NAME ARGS...: the output file NAME.out (from -o) and NAME.rc.
run() {
	name=$1
	shift
	rm -f "$OUT/$name.out"
	"$MOEPLAN" "$@" -q -o "$OUT/$name.out" 2>"$OUT/$name.err"
	echo $? >"$OUT/$name.rc"
}

# zipf FILE L E S: issue 4's Zipf loads, floor(1e6 / (((97e + 31l) mod E) + 1)^s).
zipf() {
	awk -v L="$2" -v E="$3" -v S="$4" 'BEGIN {
		for (l = 0; l < L; l++) {
			line = ""
			for (e = 0; e < E; e++) {
				v = int(1e6 / ((((97 * e + 31 * l) % E) + 1) ^ S))
				line = line (e ? "," : "") v
			}
			print line
		}
	}' >"$1"
}

for s in plans/*.yaml; do
	b=$(basename "$s" .yaml)
	run "plan-$b-yaml" plan "$s" -f yaml -t 1000
	run "plan-$b-json" plan "$s" -f json -t 1000
done

T=plans/traces
D=tests/data/loads
run place-olmoe-c4-8x72 place $T/olmoe_c4.csv --gpus 8 --slots 72 -t 0 -f json
run place-olmoe-book-16x80 place $T/olmoe_book.csv --gpus 16 --slots 80 -t 0
run place-olmoe-github-32x96 place $T/olmoe_github.csv --gpus 32 --slots 96 -t 0 -f json
run place-mixtral-c4-8x16 place $T/mixtral8x7b_c4.csv --gpus 8 --slots 16 -t 0
run place-mixtral-github-4x12 place $T/mixtral8x7b_github.csv --gpus 4 --slots 12 -t 0 -f json
run place-qwen-8x64 place $T/qwen15moe_bookcorpus.csv --gpus 8 --slots 64 -t 0
run place-qwen-16x96-weighted place $T/qwen15moe_bookcorpus.csv --gpus 16 --slots 96 -t 0 --split weighted
run place-switch-8x136 place $T/switch128_bookcorpus.csv --gpus 8 --slots 136 -t 0
run place-switch-64x192 place $T/switch128_bookcorpus.csv --gpus 64 --slots 192 -t 0 -f json
run place-olmoe-nodes place $T/olmoe_c4.csv --gpus 16 --slots 80 --gpus-per-node 4 -t 0
run place-olmoe-balance place $T/olmoe_c4.csv --gpus 16 --slots 80 --gpus-per-node 4 --balance-nodes -t 0
run place-olmoe-groups place $T/olmoe_c4.csv --gpus 16 --slots 80 --gpus-per-node 4 --group-limited 4 -t 0
run place-switch-groups place $T/switch128_bookcorpus.csv --gpus 16 --slots 144 --gpus-per-node 8 --group-limited 8 -t 0
run place-olmoe-gap place $T/olmoe_c4.csv --gpus 8 --slots 72 --target-gap 0.01 -t 0
run place-olmoe-effort place $T/olmoe_c4.csv --gpus 8 --slots 72 --effort 0.1 -t 0
run place-zipf-csv place $D/zipf-256x2.csv --gpus 64 --slots 320 -t 0
run place-zipf-csv-groups place $D/zipf-256x2.csv --gpus 64 --slots 320 --gpus-per-node 8 --group-limited 8 -t 0
run place-zipf-csv-balance place $D/zipf-256x2.csv --gpus 64 --slots 320 --gpus-per-node 8 --balance-nodes -t 0
run place-eplb-json place $D/eplb.json --gpus 4 --slots 16 -t 0
run place-eplb-sglang place $D/eplb-sglang-3d.json --gpus 4 --slots 16 -t 0 -f json

zipf "$OUT/zipf-s1-e256-l8.csv" 8 256 1.0
zipf "$OUT/zipf-s06-e384-l6.csv" 6 384 0.6
run place-zipf-s1-64x320 place "$OUT/zipf-s1-e256-l8.csv" --gpus 64 --slots 320 -t 0
run place-zipf-s1-32x288 place "$OUT/zipf-s1-e256-l8.csv" --gpus 32 --slots 288 -t 0
run place-zipf-s06-8x416 place "$OUT/zipf-s06-e384-l6.csv" --gpus 8 --slots 416 -t 0
run place-zipf-s06-64x448 place "$OUT/zipf-s06-e384-l6.csv" --gpus 64 --slots 448 -t 0 -f json
run place-zipf-s1-groups place "$OUT/zipf-s1-e256-l8.csv" --gpus 64 --slots 320 --gpus-per-node 8 --group-limited 8 -t 0
run place-zipf-s1-balance place "$OUT/zipf-s1-e256-l8.csv" --gpus 64 --slots 320 --gpus-per-node 8 --balance-nodes -t 0

# Re-plans: the old plan from window A, re-planned on window B.
for tr in qwen15moe_bookcorpus:8:8 switch128_bookcorpus:8:17; do
	n=${tr%%:*}
	rest=${tr#*:}
	g=${rest%%:*}
	per=${rest#*:}
	run "old-$n" place $T/$n.winA.csv --gpus "$g" --slots $((g * per)) -t 0 -f json
	run "replan-$n-25" replan --plan "$OUT/old-$n.out" --loads $T/$n.winB.csv --max-moves 25% -t 1000 -f json
	run "replan-$n-0" replan --plan "$OUT/old-$n.out" --loads $T/$n.winB.csv --max-moves 0 -t 1000
	run "replan-$n-cost" replan --plan "$OUT/old-$n.out" --loads $T/$n.winB.csv --move-cost "2 ms" --layer-time 0.0002 -t 1000
	run "replan-$n-nomip" replan --plan "$OUT/old-$n.out" --loads $T/$n.winB.csv --max-moves 10% --no-mip -t 1000
	run "replan-$n-pareto" replan --plan "$OUT/old-$n.out" --loads $T/$n.winB.csv --pareto -t 1000
done
run replan-maps replan --plan tests/data/maps/eplb-sglang.json --gpus 4 --loads $D/eplb.json --max-moves 4 -t 1000
run check-old-qwen check "$OUT/old-qwen15moe_bookcorpus.out" --loads $T/qwen15moe_bookcorpus.winB.csv -t 0 -f json
run simulate-old simulate --plan "$OUT/old-qwen15moe_bookcorpus.out" --loads $T/qwen15moe_bookcorpus.winB.csv --top-k 4 --requests 4 --steps 50
# Outputs that name an input under OUTDIR name it OUTDIR, so that two
# output folders compare.
for f in "$OUT"/*.out "$OUT"/*.err; do
	sed "s|$OUT|OUTDIR|g" "$f" >"$f.tmp" && mv "$f.tmp" "$f"
done
exit 0
