#!/bin/sh
# Held-out evaluation of re-planning (issue 5, item 4 and "Done when").
#
# For each shipped window pair plans/traces/*.winA.csv / *.winB.csv (first
# and second half of one routing trace), and for a domain shift (OLMoE,
# C4 -> GitHub):
#   1. the old plan: `moeplan place WINDOW_A` (from scratch on window A);
#   2. `moeplan check OLD --loads WINDOW_B`: what the running plan costs
#      after the drift, on loads it was not made from;
#   3. `moeplan place WINDOW_B` (from scratch on B) and
#      `moeplan replan --plan OLD --loads WINDOW_B --max-moves M` for M = 0,
#      1/8, 1/4 and 1/2 of all slots (layers x slots), each scored on B by
#      `moeplan check` too (the scores do not come from the re-planner).
# Prints a Markdown table per trace: moves, the sum over MoE layers of the
# busiest GPU's load on B, that sum over the sum of mean loads (the
# busiest-GPU factor; 1 = perfect balance), and the share of the
# from-scratch improvement each re-plan recovers; then the done-when figure
# (at a quarter of the slots the re-plan recovers >= 90%) and whether two
# runs of the quarter-budget re-plan gave byte-identical output. Exits 1
# if a figure is below 90% or a rerun differs.
#
# Usage: tests/bench/replan-eval.sh [MOEPLAN]
#   MOEPLAN defaults to build/src/cli/moeplan; run from the source root.
set -eu

MOEPLAN=${1:-build/src/cli/moeplan}
TRACES=plans/traces
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM

# Sum of a per-layer field of a JSON report (lines '        "KEY": V,').
sum_layers() {
	sed -n "s/^        \"$2\": \\([^,]*\\),\$/\\1/p" "$1" | awk '{ s += $1 } END { printf "%.17g", s }'
}

# A total of the re-plan record (lines '    "KEY": V,' after "replan").
field() {
	sed -n '/^  "replan": {/,$p' "$1" | sed -n "s/^    \"$2\": \\([^,]*\\),\$/\\1/p" | head -n 1
}

# score PLAN WINDOW_B: the sum of busiest-GPU loads of PLAN on B, by check.
score() {
	"$MOEPLAN" check "$1" --loads "$2" -q -f json -o "$WORK/check.json"
	sum_layers "$WORK/check.json" max_load
}

# evaluate NAME WINDOW_A WINDOW_B GPUS SLOTS_PER_GPU
evaluate() {
	name=$1
	a=$2
	b=$3
	gpus=$4
	per_gpu=$5
	layers=$(grep -vc '^#' "$a")
	experts=$(grep -v '^#' "$a" | head -n 1 | awk -F, '{ print NF }')
	slots=$((layers * gpus * per_gpu))
	"$MOEPLAN" place "$a" --gpus "$gpus" --slots $((gpus * per_gpu)) -q -f json -o "$WORK/old.json"
	"$MOEPLAN" place "$b" --gpus "$gpus" --slots $((gpus * per_gpu)) -q -f json -o "$WORK/scratch.json"
	old=$(score "$WORK/old.json" "$b")
	mean=$(sum_layers "$WORK/check.json" mean_load)
	scratch=$(score "$WORK/scratch.json" "$b")
	echo
	echo "### $name: $layers MoE layers x $experts experts on $gpus GPUs x $per_gpu slots ($slots slots in all)"
	echo
	echo "Old plan: \`moeplan place $a --gpus $gpus --slots $((gpus * per_gpu))\`;"
	echo "every row scored with \`moeplan check PLAN --loads $b\`."
	echo
	echo "| plan | moves | sum of busiest-GPU loads on B | busiest / mean | recovered |"
	echo "|---|---:|---:|---:|---:|"
	awk -v s="$old" -v m="$mean" 'BEGIN { printf "| old plan (from scratch on A) | 0 | %.1f | %.4f | 0.0%% |\n", s, s / m }'
	first=1
	for budget in 0% 12.5% 25% 50%; do
		out=$WORK/re-$budget.json
		"$MOEPLAN" replan --plan "$WORK/old.json" --loads "$b" --max-moves "$budget" -q -f json -o "$out"
		if [ "$first" = 1 ]; then
			aligned=$(field "$out" from_scratch_moves)
			unaligned=$(field "$out" from_scratch_moves_unaligned)
			bound=$(field "$out" sum_lower_bound)
			awk -v s="$scratch" -v m="$mean" -v a="$aligned" -v u="$unaligned" \
				'BEGIN { printf "| from scratch on B | %d (%d unaligned) | %.1f | %.4f | 100.0%% |\n", a, u, s, s / m }'
			first=0
		fi
		moves=$(field "$out" moves)
		after=$(score "$out" "$b")
		recovered=$(awk -v o="$old" -v a="$after" -v s="$scratch" \
			'BEGIN { printf "%.6f", (o - s > 0) ? (o - a) / (o - s) : 1 }')
		awk -v bu="$budget" -v mv="$moves" -v s="$after" -v m="$mean" -v r="$recovered" \
			'BEGIN { printf "| re-plan, budget %s of the slots | %d | %.1f | %.4f | %.1f%% |\n", bu, mv, s, s / m, 100 * r }'
		if [ "$budget" = 25% ]; then
			quarter=$recovered
			"$MOEPLAN" replan --plan "$WORK/old.json" --loads "$b" --max-moves 25% -q -f json \
				-o "$WORK/rerun.json"
			if cmp -s "$out" "$WORK/rerun.json"; then
				same="identical"
			else
				same="DIFFERENT"
			fi
		fi
	done
	awk -v m="$mean" -v b="$bound" 'BEGIN { printf "\nLower bound on the sum: %.1f (busiest / mean %.4f).\n", b, b / m }'
	awk -v r="$quarter" -v n="$name" -v same="$same" 'BEGIN {
		printf "Done-when figure, %s: a quarter of the slots recovers %.1f%% of the from-scratch improvement (%s); a second run: %s output.\n",
			n, 100 * r, (r >= 0.9 ? "meets >= 90%" : "BELOW 90%"), same
		if (r < 0.9 || same != "identical") {
			exit 1
		}
	}'
}

status=0
# Qwen1.5-MoE-A2.7B (60 experts) on 8 GPUs x 9 slots: the decode layout of
# plans/qwen15moe-bookcorpus.yaml (72 slots). Switch-base-128 on 8 GPUs x 18
# slots (144 slots, 16 redundant).
for pair in qwen15moe_bookcorpus:8:9 switch128_bookcorpus:8:18; do
	name=${pair%%:*}
	rest=${pair#*:}
	evaluate "$name" "$TRACES/$name.winA.csv" "$TRACES/$name.winB.csv" "${rest%%:*}" "${rest#*:}" || status=1
done
# A harder drift than a window pair: OLMoE planned on C4 and served GitHub
# code (the hot experts change with the domain), 8 GPUs x 9 slots.
evaluate "olmoe c4 -> github" "$TRACES/olmoe_c4.csv" "$TRACES/olmoe_github.csv" 8 9 || status=1
exit $status
