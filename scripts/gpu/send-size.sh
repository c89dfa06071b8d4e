#!/usr/bin/env bash
# send-size.sh: the bytes a call of the device machine sends from this
# checkout: the files git tracks, the untracked files it does not ignore,
# and the ignored files under each CARRY path (what the call's carry names,
# out/gpu for the bring-up) and under a shared/ folder in the checkout,
# which travels too. A device call refuses more than 64 MiB.
#
#   bash scripts/gpu/send-size.sh [--limit BYTES] [CARRY ...]
#
# Prints one line per part and the total; exits 1 when the total is over
# BYTES (default: none), 2 on a usage error or outside a git checkout.
set -uo pipefail

limit=
if [ "${1:-}" = --limit ]; then
	[[ ${2:-} =~ ^[0-9]+$ ]] || { echo "send-size.sh: --limit wants a number of bytes" >&2; exit 2; }
	limit=$2
	shift 2
fi
repo=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel 2>/dev/null) ||
	{ echo "send-size.sh: not inside a git checkout" >&2; exit 2; }
cd "$repo" || exit 2

# bytes: the sum of the sizes of the NUL-separated paths on stdin that
# exist (a tracked file deleted from the work tree is not sent; a link is
# sent as a link).
bytes() { xargs -0 -r stat -c %s -- 2>/dev/null | awk '{ s += $1 } END { printf "%d\n", s }'; }

tracked=$(git ls-files -z --cached | bytes)
untracked=$(git ls-files -z --others --exclude-standard | bytes)
carried=0
for c in "$@" shared; do
	[ -e "$c" ] || { [ "$c" = shared ] && continue; echo "send-size.sh: no $c to carry" >&2; exit 2; }
	n=$(git ls-files -z --others --ignored --exclude-standard -- "$c" | bytes)
	[ "$c" = shared ] && [ "$n" = 0 ] && continue
	printf '%12d  carried: %s\n' "$n" "$c"
	carried=$((carried + n))
done
total=$((tracked + untracked + carried))
printf '%12d  tracked\n%12d  untracked, not ignored\n%12d  in all (%d.%d MiB)\n' \
	"$tracked" "$untracked" "$total" $((total >> 20)) $(((total & 0xfffff) * 10 >> 20))
if [ -n "$limit" ] && [ "$total" -gt "$limit" ]; then
	echo "send-size.sh: a device call would send $total bytes, over the limit of $limit" >&2
	exit 1
fi
