#!/usr/bin/env bash
# Runs the conformance runner on ALL of ONNX's node tests at the commit
# testdata/ takes its node suite from (1,802 tests, about 54 MB, kept out
# of the repository), and prints the counts and why tests do not pass:
# FAIL reasons, and UNSUPPORTED by operator and by element type.
#
# Usage, from the repository root:
#
#	testing/conformance/fullsuite.sh ONNX_GIT [OUT]
#
# ONNX_GIT is a clone of https://github.com/onnx/onnx (a checkout or a bare
# git folder) that has commit $commit below; OUT (default
# /tmp/onnx-node-full) receives node/<test>/, the runner's binary and its
# output, results.txt. The runner's --run, --device and --optimize flags can be
# passed through CONFORMANCE_FLAGS.
set -euo pipefail

commit=6be0677fc22e74563e6eb472f931513aefe5648d
onnx=${1:?usage: fullsuite.sh ONNX_GIT [OUT]}
out=${2:-/tmp/onnx-node-full}

rm -rf "$out/node"
mkdir -p "$out"
git -C "$onnx" archive "$commit" onnx/backend/test/data/node | tar -x -C "$out" --strip-components=4
echo "$(find "$out/node" -mindepth 1 -maxdepth 1 -type d | wc -l) node tests at onnx/onnx@$commit in $out/node"

# The runner exits 1 when a test fails; the counts are what this is for.
go build -o "$out/conformance" ./testing/conformance
# shellcheck disable=SC2086 # CONFORMANCE_FLAGS holds several flags
"$out/conformance" --dir "$out" ${CONFORMANCE_FLAGS:-} >"$out/results.txt" || [ $? -eq 1 ]
tail -n 1 "$out/results.txt"

# Lines are "NAME: PASS", "NAME: FAIL: why", "NAME: UNSUPPORTED: op X (detail)".
awk '
	function top(title, counts,    k, n, i, j, keys, t) {
		n = 0
		for (k in counts) keys[++n] = k
		for (i = 2; i <= n; i++) # insertion sort, most first, then by name
			for (j = i; j > 1 && (counts[keys[j]] > counts[keys[j-1]] || (counts[keys[j]] == counts[keys[j-1]] && keys[j] < keys[j-1])); j--) {
				t = keys[j]; keys[j] = keys[j-1]; keys[j-1] = t
			}
		print "\n" title
		for (i = 1; i <= n; i++) printf "%6d  %s\n", counts[keys[i]], keys[i]
	}
	/: FAIL: / {
		why = substr($0, index($0, ": FAIL: ") + 8)
		gsub(/"[^"]*"/, "\"…\"", why) # graph, node and value names
		fail[why]++
	}
	/: UNSUPPORTED: op / {
		rest = substr($0, index($0, ": UNSUPPORTED: op ") + 18)
		op = rest; sub(/ .*/, "", op)
		byop[op]++
		if (match(rest, /element type [A-Z0-9]+ \([0-9]+\)/)) {
			type = substr(rest, RSTART + 13, RLENGTH - 13)
			bytype[type]++
		} else {
			bytype["(none: the operator itself)"]++
		}
	}
	END {
		top("FAIL, by reason:", fail)
		top("UNSUPPORTED, by operator:", byop)
		top("UNSUPPORTED, by missing element type:", bytype)
	}
' "$out/results.txt"
