#!/usr/bin/env bash
# Issue 26 item 8: time and memory of reading a JSON dump of SGLang's
# default size (expert_distribution_recorder_buffer_size 1000 passes x 61
# layers x 256 experts, DeepSeek-V3: {"logical_count": [[[...]]]}) through
# mp_load_loads, via the fuzz replay's loads target (first byte 0x01: .json)
# with the memory bound off. The file (~60 MB) is generated, never committed.
#   tests/bench/sglang-json-dump.sh BUILD_DIR [PASSES]
set -euo pipefail
build=${1:?usage: sglang-json-dump.sh BUILD_DIR [PASSES]}
passes=${2:-1000}
f=$(mktemp /tmp/sglang-dump-XXXXXX)
trap 'rm -f "$f"' EXIT
python3 - "$f" "$passes" <<'PY'
import sys, random
path, B = sys.argv[1], int(sys.argv[2])
rng = random.Random(26)
with open(path, "w") as out:
    out.write("\x01")  # fuzz-loads.c: .json
    out.write('{"logical_count": [')
    for b in range(B):
        out.write("," if b else "")
        out.write("[" + ",".join("[" + ",".join(str(rng.randrange(64)) for _ in range(256)) + "]"
                                 for _ in range(61)) + "]")
    out.write("]}\n")
PY
ls -l "$f" | awk '{print "file bytes:", $5}'
MOEPLAN_FUZZ_UNBOUNDED=1 /usr/bin/time -v "$build/tests/fuzz/fuzz-replay" loads "$f" 2>&1 \
  | grep -E "Elapsed|Maximum resident|User time"
