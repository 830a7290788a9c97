#!/usr/bin/env bash
# Runs every Go native fuzz target in the module for FUZZTIME each (default
# 10s). Targets are discovered with `go test -list '^Fuzz'`, so a new
# FuzzXxx function is picked up without touching this script.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-10s}"
GO="${GO:-go}"

# Only packages whose tests mention a fuzz function need compiling for -list.
mapfile -t dirs < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Z0-9_]' cmd internal 2>/dev/null | xargs -r -n1 dirname | sort -u)
# fuzz_one runs one target. Go's fuzz coordinator sometimes gives up with
# "context deadline exceeded" when a worker is slow to answer at the end of
# -fuzztime on a loaded machine; that is not a finding (no failing input is
# written), so it is retried once. Any real failure fails the run.
fuzz_one() {
	local pkg=$1 name=$2 out
	for attempt in 1 2; do
		if out=$("$GO" test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" "$pkg" 2>&1); then
			echo "$out"
			return 0
		fi
		echo "$out"
		if [ "$attempt" -eq 1 ] && grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
			echo "fuzz: ${name}: the fuzz coordinator timed out without a finding; retrying once"
			continue
		fi
		return 1
	done
}

count=0
for dir in "${dirs[@]}"; do
	pkg="./${dir}"
	mapfile -t names < <("$GO" test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)
	for name in "${names[@]}"; do
		echo "--- fuzz ${pkg} ${name} (${FUZZTIME})"
		fuzz_one "$pkg" "$name"
		count=$((count + 1))
	done
done
if [ "$count" -eq 0 ]; then
	echo "fuzz: no fuzz targets found under cmd/ or internal/" >&2
	exit 1
fi
echo "fuzz: ${count} targets ran for ${FUZZTIME} each"
