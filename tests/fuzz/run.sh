#!/usr/bin/env bash
# Run the libFuzzer programs one after another (the build machine has 2
# cores shared with others: one fuzzer at a time, at low priority), keeping
# going after crashes, then merge each target's new inputs with the
# committed corpus into a minimal set.
#
#   tests/fuzz/run.sh BUILD_DIR SECONDS_PER_TARGET WORK_DIR [TARGET...]
#
# Per target, WORK_DIR/TARGET/ gets: log (libFuzzer's output), new/ (inputs
# that found new coverage), artifacts/ (crash-*, leak-*, timeout-*, oom-*),
# merged/ (the minimal corpus: copy it over tests/fuzz/corpus/TARGET/).
set -uo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="$1"; secs="$2"; work="$3"; shift 3
targets="${*:-model hardware scenario traffic loads map quantity torch}"
for t in $targets; do
  d="$work/$t"
  mkdir -p "$d/new" "$d/artifacts" "$d/merged" "$d/tmp"
  # libFuzzer's jobs can end without atexit handlers: keep their folders here.
  export TMPDIR="$d/tmp"
  echo "== $t: $secs s ($(date -u +%H:%M:%S))"
  nice -n 10 "$build/tests/fuzz/fuzz-$t" -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
    -dict="$src/tests/fuzz/moeplan.dict" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$d/artifacts/" "$d/new" "$src/tests/fuzz/corpus/$t" >"$d/log" 2>&1 </dev/null
  nice -n 10 "$build/tests/fuzz/fuzz-$t" -merge=1 -timeout=10 -rss_limit_mb=2048 \
    "$d/merged" "$src/tests/fuzz/corpus/$t" "$d/new" >"$d/merge.log" 2>&1 </dev/null
  rm -rf "$d/tmp"
  echo "   $(grep -c . <(ls "$d/artifacts")) artifacts, $(ls "$d/merged" | wc -l) merged inputs"
done
