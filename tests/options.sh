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

if ((fails)); then
	echo "$fails failure(s)"
	exit 1
fi
echo "ok: $n numeric options refuse nan, inf and -inf"
