#!/bin/sh
# The README benchmark rows of issue 25: DeepSeek-V3's shape (Zipf s = 0.6
# and 1.0, 256 experts, 58 layers, 288 slots) at EP144 x 2, EP72 x 4 and
# EP32 x 9, with mp_place's CPU time next to the bundled EPLB's
# (mp_place_eplb) in the same process, and the many-slot rows
# (64 x 5, 64 x 7, 1,024 x 4) to check they did not move.
# Usage: tests/bench/fewslot-table.sh [BENCH] > TABLE.md (from the source root;
# BENCH defaults to build/tests/bench/bench-placement). Takes 10-20 minutes
# of CPU on two cores.
set -u
B=${1:-build/tests/bench/bench-placement}
first=1
for c in "L58 288/EP144" "L58 288/EP72" "L58 288/EP32" "L58 320/EP64" "L60 448/EP64" "4096/EP1024"; do
	if [ $first = 1 ]; then
		"$B" --case "$c" | grep '^|'
		first=0
	else
		"$B" --case "$c" | grep '^|' | tail -n +3
	fi
done
