#!/usr/bin/env bash
# Build the libFuzzer programs (clang, -fsanitize=fuzzer + ASan + UBSan) in
# BUILD_DIR (default build-fuzz), next to the replay test that every build has.
#
#   tests/fuzz/build.sh [BUILD_DIR]
#   BUILD_DIR/tests/fuzz/fuzz-model -dict=tests/fuzz/moeplan.dict \
#       -max_total_time=600 NEW_CORPUS_DIR tests/fuzz/corpus/model
#
# Warnings are not errors here: clang warns where gcc (the CI compiler) does
# not, and a fuzz build must not wait for that.
# See tests/fuzz/README.md for running, minimising and keeping findings.
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-build-fuzz}"
case "$build" in /*) ;; *) build="$src/$build" ;; esac
if [ ! -f "$build/build.ninja" ]; then
  CC=clang meson setup "$build" "$src" \
    -Dbuildtype=debugoptimized -Dwerror=false -Db_sanitize=address,undefined -Db_lundef=false \
    -Dc_args="-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined"
fi
targets=""
for t in model hardware scenario traffic loads map quantity torch; do
  targets="$targets tests/fuzz/fuzz-$t"
done
# shellcheck disable=SC2086
ninja -C "$build" $targets tests/fuzz/fuzz-replay
