#!/bin/bash
# Issue 27: `moeplan help NAME` opens a manual page as `git help` does: the
# build tree's page when run from the build tree, through `man -l` (here with
# MANPAGER=cat); without man, the page's markdown source on stdout and one
# line on stderr; an unknown name is a usage error listing the names.
# Usage: help.sh MOEPLAN
set -u
moeplan=$1
fails=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() {
	echo "help: $*"
	fails=$((fails + 1))
}

# expect_page NAME LINE: `moeplan help NAME` exits 0 and its NAME section
# reads LINE (the man-formatted page, or the markdown where man is missing).
expect_page() {
	local out rc
	out=$(MANPAGER=cat MANWIDTH=200 "$moeplan" help $1 2>"$scratch/err")
	rc=$?
	[ "$rc" = 0 ] || fail "'moeplan help $1' exited $rc: $(cat "$scratch/err")"
	grep -Eq "^ *$2\$" <<<"$out" || fail "'moeplan help $1': no NAME line '$2' in: $(head -5 <<<"$out")"
}

expect_page plan "moeplan-plan - plan EP widths, slots and placement for a scenario"
expect_page check "moeplan-check - validate a plan or engine map; its balance under given loads"
expect_page "" "moeplan - plan expert parallelism, HBM and expert placement for serving mixture-of-experts models"
expect_page formats "moeplan-formats - .*"
expect_page models "moeplan-models - .*"
expect_page placement "moeplan-placement - .*"
expect_page library "libmoeplan - .*"
# Every command of `moeplan --help` has its page.
for cmd in $("$moeplan" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z]*\) .*/\1/p'); do
	expect_page "$cmd" "moeplan-$cmd - .*"
done

# Without man: the markdown source, and one line on stderr saying so.
if out=$(PATH=/nonexistent "$moeplan" help plan 2>"$scratch/err"); then
	grep -qx '# NAME' <<<"$out" || fail "without man: no '# NAME' in the printed source"
	grep -qx 'moeplan-plan - plan EP widths, slots and placement for a scenario' <<<"$out" ||
		fail "without man: no NAME line"
	[ "$(wc -l <"$scratch/err")" = 1 ] && grep -q "cannot run man" "$scratch/err" ||
		fail "without man: stderr is not one line saying so: $(cat "$scratch/err")"
else
	fail "without man: exit $?"
fi

# An unknown name: exit 2, the names listed on stderr, nothing on stdout.
out=$("$moeplan" help nosuch 2>"$scratch/err")
rc=$?
[ "$rc" = 2 ] || fail "'moeplan help nosuch' exited $rc, expected 2"
[ -z "$out" ] || fail "'moeplan help nosuch' printed on stdout: $out"
grep -q "^Commands: plan place check" "$scratch/err" && grep -q "^Topics: formats models placement" "$scratch/err" ||
	fail "'moeplan help nosuch' does not list the names: $(cat "$scratch/err")"
"$moeplan" help plan extra >/dev/null 2>&1
rc=$?
[ "$rc" = 2 ] || fail "'moeplan help plan extra' exited $rc, expected 2"

if ((fails)); then
	exit 1
fi
echo "help: all cases pass"
