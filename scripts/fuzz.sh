#!/usr/bin/env bash
# fuzz.sh: bounded fuzzing of each target, every target run even when an
# earlier one fails (make fuzz).
#
#   scripts/fuzz.sh FUZZTIME TARGET:PACKAGE...
#
# Each target runs alone (go test -run '^$' -fuzz '^TARGET$' -fuzztime
# FUZZTIME PACKAGE). A run that fails with Go's fuzz coordinator timing out
# ("context deadline exceeded") and no failing input written is run once
# more, and the summary says so; a target the package does not have is a
# failure (go test would pass it). At the end one line per target, then
# "fuzz: N targets, all passed" or "fuzz: FAILED: TARGET (PACKAGE) …".
# Exit status: 0 all passed; 1 a target failed; 2 a usage error. GO names
# the go command (default go).
set -u
go=${GO:-go}
if [ $# -lt 2 ]; then
	echo "usage: $0 FUZZTIME TARGET:PACKAGE..." >&2
	exit 2
fi
fuzztime=$1
shift

log=$(mktemp)
trap 'rm -f "$log"' EXIT
results=() failed=()
for spec; do
	target=${spec%%:*} pkg=${spec#*:}
	if [ -z "$target" ] || [ -z "$pkg" ] || [ "$target" = "$spec" ]; then
		echo "$0: $spec: want TARGET:PACKAGE" >&2
		exit 2
	fi
	note=""
	for attempt in 1 2; do
		echo "== $target ($pkg), -fuzztime $fuzztime${note:+, again: $note}"
		"$go" test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"
		rc=${PIPESTATUS[0]}
		if grep -q 'no fuzz tests to fuzz' "$log"; then # go test passes a pattern that matches nothing
			rc=1 note="no fuzz test $target in $pkg"
			break
		fi
		[ "$rc" = 0 ] && break
		if [ "$attempt" = 1 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
			note="the fuzz coordinator timed out (context deadline exceeded)"
			continue
		fi
		break
	done
	if [ "$rc" = 0 ]; then
		results+=("PASS  $target ($pkg)${note:+, after a retry: $note}")
	else
		results+=("FAIL  $target ($pkg)${note:+: $note}")
		failed+=("$target ($pkg)")
	fi
done

echo
printf '%s\n' "${results[@]}"
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz: FAILED: ${failed[*]}"
	exit 1
fi
echo "fuzz: $# targets, all passed"
