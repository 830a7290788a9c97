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
count=0
for dir in "${dirs[@]}"; do
	pkg="./${dir}"
	mapfile -t names < <("$GO" test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)
	for name in "${names[@]}"; do
		echo "--- fuzz ${pkg} ${name} (${FUZZTIME})"
		"$GO" test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" "$pkg"
		count=$((count + 1))
	done
done
if [ "$count" -eq 0 ]; then
	echo "fuzz: no fuzz targets found under cmd/ or internal/" >&2
	exit 1
fi
echo "fuzz: ${count} targets ran for ${FUZZTIME} each"
