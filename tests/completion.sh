#!/bin/bash
# The bash completion the program writes from its option tables
# (moeplan --dump-completion, installed as completions/moeplan) completes
# what `moeplan CMD --help` documents. Usage: completion.sh COMPLETION-FILE
set -u
# shellcheck source=/dev/null
source "$1" || exit 1
fails=0

# expect "WORDS" "EXPECTED": complete the last word of WORDS (empty when
# WORDS ends in a space) and compare the sorted candidates.
expect() {
	read -r -a COMP_WORDS <<<"$1"
	[[ $1 == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_moeplan 2>/dev/null
	local got
	got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ')
	got=${got% }
	if [[ $got != "$2" ]]; then
		echo "moeplan completion of '$1': got '$got', expected '$2'"
		fails=$((fails + 1))
	fi
}

expect "moeplan s" "search simulate step"
expect "moeplan help re" "replan"
expect "moeplan help p" "place placement plan"
expect "moeplan help fo" "formats"
expect "moeplan fit --bu" "--buffer-tokens --buffers"
expect "moeplan fit --buffers " "auto low-latency none normal"
expect "moeplan place --format " "json yaml"
expect "moeplan plan -f " "json text yaml"
expect "moeplan roofline -f " "json text yaml"
expect "moeplan step --phase " "decode prefill"
expect "moeplan simulate -P p" "prefill"
expect "moeplan replan --export " "sglang"
expect "moeplan place --gpus " ""
expect "moeplan comm --max-nodes" "--max-nodes-per-token"
expect "moeplan replan --no" "--no-mip"
expect "moeplan check --q" "--quiet"
expect "moeplan search --exp" "--export --export-output"
expect "moeplan step --overlap " "full none two_batch"
expect "moeplan step --kernel " "auto low_latency normal"
expect "moeplan place --split " "even weighted"
expect "moeplan search --batches " "all geometric"

if ((fails)); then
	exit 1
fi
echo "completion: all cases pass"
