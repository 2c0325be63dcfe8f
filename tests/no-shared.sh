#!/bin/sh
# Issue 16 item 1: tests, benchmarks and the README work in a clone with no
# ../shared beside it. Fails if a test, benchmark, build or CI file reads
# ../shared (an environment variable naming it, a string literal or a shell
# path outside a comment), or if the README, the manual (doc/) or
# CONTRIBUTING.md sends users there.
# Citations in test comments ("source: ../shared/reference/...") stay
# allowed: they name where a copied figure came from. Shipped files
# (hardware/, plans/, include/, src/, tests/fuzz/corpus/) cite the public
# upstream source instead.
# Usage: tests/no-shared.sh [SOURCE_ROOT]
set -eu
cd "${1:-.}"
bad=0
files=$(find tests .ci meson.build -type f \( -name '*.c' -o -name '*.h' -o -name '*.sh' \
	-o -name 'meson.build' -o -name 'run' \) -not -path 'tests/fuzz/corpus/*' \
	-not -name 'no-shared.sh' | sort)
for f in $files; do
	# C: a string literal; shell and meson: any use outside a '#' comment.
	if grep -n 'MOEPLAN_SHARED\|"\.\./shared\|'"'"'\.\./shared\|/ '"'"'shared'"'" "$f" >/dev/null 2>&1; then
		grep -n 'MOEPLAN_SHARED\|"\.\./shared\|'"'"'\.\./shared\|/ '"'"'shared'"'" "$f" | sed "s|^|$f:|" >&2
		bad=1
	fi
	case "$f" in
	*.sh|*meson.build|*/run)
		if sed 's/#.*//' "$f" | grep -n '\.\./shared' >/dev/null; then
			echo "$f: uses ../shared outside a comment" >&2
			bad=1
		fi ;;
	esac
done
if grep -n '\.\./shared' README.md doc/*.md CONTRIBUTING.md >&2; then
	echo "README.md, the manual (doc/) or CONTRIBUTING.md sends users to ../shared (see the lines above)" >&2
	bad=1
fi
# What users get (presets, scenarios, public headers, sources, the fuzz
# corpus) cites the public upstream source, never the project's reference
# notes, which a clone does not have: not even in a comment.
if grep -rnaE '(\.\./)+shared/|shared/reference' hardware plans include src tests/fuzz/corpus >&2; then
	echo "the files above cite ../shared: name the public source it was taken from" >&2
	bad=1
fi
[ "$bad" = 0 ] && echo "no test, benchmark, shipped file, README or manual line reaches ../shared"
exit "$bad"
