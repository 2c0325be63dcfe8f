#!/bin/bash
# Every numeric option of every command refuses nan, inf and -inf as a
# usage error (exit 2) that names the option, the allowed range and the
# value: "moeplan CMD: error: --OPT: expected ... got 'nan'". The options
# are read from the option tables (moeplan --dump-options: a value with
# nothing to complete is a number or a quantity), so a new option is
# covered without editing this file. Also the ranges that exclude 0: a
# range written "from 0" or ">= 0" must accept 0.
# Usage: options.sh MOEPLAN SOURCE-ROOT
set -u
moeplan=$1
root=$2
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# expect_usage "WHAT" PATTERN ARGS...: exit 2, stderr holds PATTERN (fixed)
# and, when PATTERN2 is set, that too.
expect_usage() {
	local what=$1 pattern=$2
	shift 2
	local err rc
	err=$("$moeplan" "$@" -q 2>&1 >/dev/null)
	rc=$?
	[[ $rc == 2 ]] || fail "$what: exit $rc, expected 2 ($err)"
	[[ $err == *"$pattern"* ]] || fail "$what: stderr lacks '$pattern': $err"
	[[ -z ${PATTERN2:-} || $err == *"$PATTERN2"* ]] || fail "$what: stderr lacks '$PATTERN2': $err"
}

# replan resolves --max-moves and --move-cost once it has read the plan.
"$moeplan" place "$root/plans/traces/olmoe_github.csv" --gpus 8 --slots 72 -q -o "$tmp/old.yaml" ||
	fail "place for the replan cases"
replan_inputs=(--plan "$tmp/old.yaml" --loads "$root/plans/traces/olmoe_github.csv" -o "$tmp/new.yaml")

n=0
while IFS=$'\t' read -r cmd _letter name value complete _help; do
	[[ $value != - && $complete == - ]] || continue
	for v in nan inf -inf; do
		extra=()
		[[ $cmd == replan ]] && extra=("${replan_inputs[@]}")
		PATTERN2="got '$v'" expect_usage "$cmd --$name $v" "moeplan $cmd: error: --$name: expected" \
			"$cmd" "${extra[@]}" "--$name" "$v"
	done
	n=$((n + 1))
done < <("$moeplan" --dump-options)
((n >= 70)) || fail "only $n numeric options found in the tables"

# 0 requests is no batch: the range says so (it said 'from 0' and refused 0).
m=(--model "$root/plans/models/mixtral-8x7b.yaml" --hardware "$root/hardware/hgx-h100.yaml")
for cmd in step fit roofline; do
	expect_usage "$cmd --requests 0" "error: --requests: expected a number > 0 and <= 1e+09, got '0'" \
		"$cmd" "${m[@]}" --ep 8 --requests 0 --context 1024
done
# A prompt of 0 tokens has no prefill step (was computed as ceil(chunk / 0) prompts).
expect_usage "step prefill --context 0" "error: --context: expected a number > 0" \
	step "${m[@]}" --phase prefill --ep 8 --context 0
# Decode at 0 tokens of context is a batch with an empty KV cache: allowed.
"$moeplan" step "${m[@]}" --ep 8 --requests 1 --context 0 >/dev/null ||
	fail "step decode --context 0 refused; its range says >= 0"
# Hexadecimal is refused as in files.
expect_usage "place --gpus 0x8" "got '0x8'" place "$root/plans/traces/olmoe_github.csv" --gpus 0x8 --slots 72
expect_usage "step --context 0x10" "got '0x10'" step "${m[@]}" --ep 8 --requests 1 --context 0x10


# Error wording: a bad command line says "moeplan CMD: error: ..." on its
# first line and exits 2; getopt's own messages ("replan: unrecognized
# option") are replaced by ours; an error the run finds later (a file, an
# export) names the command too, and exits 1.
# expect_first "WHAT" RC PREFIX ARGS...: exit RC, stderr's first line starts
# with PREFIX.
expect_first() {
	local what=$1 want_rc=$2 prefix=$3
	shift 3
	local err rc
	err=$("$moeplan" "$@" -q 2>&1 >/dev/null)
	rc=$?
	[[ $rc == "$want_rc" ]] || fail "$what: exit $rc, expected $want_rc ($err)"
	[[ ${err%%$'\n'*} == "$prefix"* ]] || fail "$what: stderr does not start with '$prefix': $err"
}
t=$root/plans/traces/olmoe_github.csv
expect_first "an option given twice" 2 "moeplan step: error: --ep given twice" step --ep 8 --ep 8
expect_first "--slots not a multiple" 2 "moeplan place: error: --slots 3 is not a multiple of --gpus 16" \
	place "$t" --gpus 16 --slots 3
# --slots' documented range (README Limits: at most 4,096 slots per GPU) is
# the option's own: outside it, a usage error before any file is read; at
# the limit, the loads decide (olmoe has 64 experts: exit 1, not 2).
PATTERN2="got '4097'" expect_usage "--slots beyond 4096 per GPU" \
	"moeplan place: error: --slots: expected a multiple of --gpus 1 from 1 to 4096" \
	place "$t" --gpus 1 --slots 4097
PATTERN2="got '8194'" expect_usage "--slots beyond 4096 per GPU, 2 GPUs" \
	"moeplan place: error: --slots: expected a multiple of --gpus 2 from 2 to 8192" \
	place "$t" --gpus 2 --slots 8194
expect_first "--slots at 4096 per GPU: the loads decide" 1 "$t:" place "$t" --gpus 2 --slots 8192
expect_first "unknown long option" 2 "moeplan replan: error: unrecognized option '--x'" replan --x
expect_first "missing value, long" 2 "moeplan replan: error: option '--plan' needs a value" replan --plan
expect_first "missing value, short" 2 "moeplan place: error: option '-g' needs a value" place "$t" -g
expect_first "unknown short option" 2 "moeplan place: error: unrecognized option '-Z'" place "$t" -Z
expect_first "ambiguous prefix" 2 "moeplan place: error: option '--gpu' is ambiguous" place "$t" --gpu 8
expect_first "a flag given a value" 2 "moeplan place: error: option '--balance-nodes' takes no value" \
	place "$t" --gpus 8 --slots 72 --balance-nodes=1
expect_first "unknown command" 2 "moeplan: error: unknown command 'nosuch'" nosuch
expect_first "help of an unknown command" 2 "moeplan: error: unknown command 'nosuch'" help nosuch
expect_first "an export the loads cannot name" 1 "moeplan place: error: cannot export the SGLang map" \
	place "$t" --gpus 8 --slots 72 --export sglang -o "$tmp/map.json"
# Two outputs of one run naming one file (README: refused, exit 2); place and
# replan wrote both and kept the last.
c4=$root/plans/traces/mixtral8x7b_c4.csv
expect_first "place: -o and --export-output one file" 2 \
	"moeplan place: error: two outputs name the same file '$tmp/same.json'" \
	place "$c4" --gpus 4 --slots 12 --model "$root/plans/models/mixtral-8x7b.yaml" --export sglang \
	-o "$tmp/same.json" --export-output "$tmp/same.json"
[[ ! -e $tmp/same.json ]] || fail "place: refused, but wrote $tmp/same.json"
expect_first "replan: --svg and -o one file" 2 "moeplan replan: error: two outputs name the same file" \
	replan --plan "$tmp/same-plan.yaml" --loads "$c4" --pareto --svg "$tmp/z.yaml" -o "$tmp/./z.yaml"
expect_first "a missing input" 1 "$tmp/none.yaml: error: cannot open" plan "$tmp/none.yaml"
# "Does not fit" is a verdict, exit 1, worded as fit's.
err=$("$moeplan" search "$root/tests/data/search/scenario.yaml" --no-placement --tpot "0.1 ms" 2>&1 >/dev/null)
rc=$?
[[ $rc == 1 && $err == "moeplan search: does not fit: no configuration reaches"* ]] ||
	fail "search with a TPOT nobody reaches: exit $rc: $err"
# Unchanged: the help still follows a usage error.
err=$("$moeplan" replan --x 2>&1)
[[ $err == *"Try 'moeplan replan --help'."* ]] || fail "replan --x: no help hint: $err"
[[ $err != *"replan: unrecognized"* ]] || fail "replan --x: getopt's own message too: $err"

# Issue 26: a bare number where a unit belongs is refused, naming the unit
# (--tpot 50 was 50 s); a prefix alone ('80G') too; 0 needs no unit.
expect_usage "search --tpot 50" "error: --tpot: a bare number 50 has no unit; write it with one, e.g. '50 ms' or '50 s'" \
	search "$root/tests/data/search/scenario.yaml" --no-placement --tpot 50
expect_usage "fit --reserve 4" "error: --reserve: a bare number 4 has no unit; write it with one, e.g. '4 GB'" \
	fit "${m[@]}" --ep 8 --requests 1 --context 1024 --reserve 4
expect_usage "fit --reserve 4G" "error: --reserve: '4G' has a prefix but no unit; write '4 GB' (powers of 1000) or '4 GiB'" \
	fit "${m[@]}" --ep 8 --requests 1 --context 1024 --reserve 4G
expect_usage "roofline --bandwidth 400G" "'400 GB/s' (bytes per second) or '400 Gbit/s'" \
	roofline "${m[@]}" --ep 8 --requests 1 --bandwidth 400G
"$moeplan" fit "${m[@]}" --ep 8 --requests 1 --context 1024 --reserve 0 >/dev/null ||
	fail "fit --reserve 0 refused: 0 needs no unit"
# Counts take k, K, M (SI: 4K = 4,000, not 4,096): the same output as the digits.
a=$("$moeplan" fit "${m[@]}" --ep 8 --requests 8 --context 4000 2>&1)
b=$("$moeplan" fit "${m[@]}" --ep 8 --requests 8 --context 4K 2>&1)
[[ -n $a && $a == "$b" ]] || fail "fit --context 4K differs from --context 4000: $b"
b=$("$moeplan" fit "${m[@]}" --ep 8 --requests 8 --context 4k 2>&1)
[[ $a == "$b" ]] || fail "fit --context 4k differs from --context 4000: $b"
expect_usage "step --context 4G" "error: --context: expected a number >= 0 and <= 1e+12, got '4G' (a count takes k = 1,000 or M = 1,000,000: SI, so 4K is 4,000" \
	step "${m[@]}" --ep 8 --requests 1 --context 4G

if ((fails)); then
	echo "$fails failure(s)"
	exit 1
fi
echo "ok: $n numeric options refuse nan, inf and -inf"
