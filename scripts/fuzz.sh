#!/usr/bin/env bash
# Runs every Go native fuzz target in the module for FUZZTIME each (default
# 10s). Targets are discovered with `go test -list '^Fuzz'`, so a new
# FuzzXxx function is picked up without touching this script.
#
# For a long campaign (`make fuzz`), these make it recordable and resumable
# across sessions:
#   FUZZ_RESULTS=FILE  appends one tab-separated line per target run: date,
#                      commit, package, target, fuzztime, execs, new corpus
#                      entries, entries committed, outcome (ok | crash | error).
#   FUZZ_RESUME=1      skips targets FILE already records as ok for at least
#                      FUZZTIME (at any commit: the list of targets is this
#                      commit's, so new targets always run).
#   FUZZ_COMMIT_CORPUS=N  after each target, copies up to N entries of the
#                      corpus the fuzzer grew (in $(go env GOCACHE)/fuzz) into
#                      the package's testdata/fuzz/<Target>/, smallest first and
#                      none over FUZZ_MAX_ENTRY bytes (default 16384), so they
#                      are committed and run as unit tests; entries that fail
#                      as seeds are taken back out. The target's testdata stays
#                      under FUZZ_CORPUS_BYTES (default 512 KiB) too.
#   FUZZ_UNTIL=DATE    starts no target that could not end by DATE (any date(1)
#                      form), so a session can stop cleanly.
#   FUZZ_ONLY=REGEXP   runs only targets whose "package target" matches.
#   FUZZ_PARALLEL=N    fuzzing workers per target (go test -parallel).
#   FUZZ_STATUS=1      prints, instead of fuzzing, a Markdown table of every
#                      target and its last ok run of at least FUZZTIME in FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-10s}"
GO="${GO:-go}"
RESULTS="${FUZZ_RESULTS:-}"
MAX_ENTRY="${FUZZ_MAX_ENTRY:-16384}"
MAX_BYTES="${FUZZ_CORPUS_BYTES:-524288}"
parallel=()
[ -n "${FUZZ_PARALLEL:-}" ] && parallel=(-parallel="$FUZZ_PARALLEL")

# seconds converts a Go duration of whole h/m/s units to seconds.
seconds() {
	local d=$1 total=0 n unit
	while [[ $d =~ ^([0-9]+)([hms])(.*)$ ]]; do
		n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]} d=${BASH_REMATCH[3]}
		case $unit in h) total=$((total + n * 3600)) ;; m) total=$((total + n * 60)) ;; s) total=$((total + n)) ;; esac
	done
	if [ -n "$d" ]; then
		echo "fuzz: FUZZTIME=$FUZZTIME: want whole h, m and s units (e.g. 10m)" >&2
		exit 2
	fi
	echo "$total"
}
want_secs=$(seconds "$FUZZTIME")

# done_before says whether RESULTS records pkg/name as ok for >= FUZZTIME.
done_before() {
	local pkg=$1 name=$2
	[ -n "$RESULTS" ] && [ -f "$RESULTS" ] || return 1
	while IFS=$'\t' read -r _ _ rpkg rname rtime _ _ _ routcome; do
		[ "$rpkg" = "$pkg" ] && [ "$rname" = "$name" ] && [ "$routcome" = ok ] || continue
		[ "$(seconds "$rtime")" -ge "$want_secs" ] && return 0
	done < <(grep -v '^#' "$RESULTS")
	return 1
}

# last_ok prints "commit date" of pkg/name's last ok run of >= FUZZTIME.
last_ok() {
	local pkg=$1 name=$2 found=""
	while IFS=$'\t' read -r rdate rcommit rpkg rname rtime _ _ _ routcome; do
		[ "$rpkg" = "$pkg" ] && [ "$rname" = "$name" ] && [ "$routcome" = ok ] || continue
		[ "$(seconds "$rtime")" -ge "$want_secs" ] && found="$rcommit $rdate"
	done < <(grep -v '^#' "$RESULTS" 2>/dev/null || true)
	echo "$found"
}

# commit_corpus copies the cached corpus of pkg/name into testdata, bounded.
# It prints how many entries it added.
commit_corpus() {
	local pkg=$1 name=$2 cap=$3 cache dest have added=0 f size bytes
	cache="$("$GO" env GOCACHE)/fuzz/$("$GO" list "$pkg")/${name}"
	dest="${pkg#./}/testdata/fuzz/${name}"
	if [ ! -d "$cache" ]; then
		echo 0
		return
	fi
	mkdir -p "$dest"
	have=$(find "$dest" -type f | wc -l)
	bytes=$(find "$dest" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
	local new=()
	while read -r size f; do
		[ $((have + ${#new[@]})) -lt "$cap" ] && [ $((bytes + size)) -le "$MAX_BYTES" ] || break
		[ -e "$dest/$(basename "$f")" ] && continue
		cp "$f" "$dest/"
		new+=("$dest/$(basename "$f")")
		bytes=$((bytes + size))
	done < <(find "$cache" -type f -size -"$((MAX_ENTRY + 1))"c -printf '%s %p\n' | sort -n)
	added=${#new[@]}
	# The seeds run as unit tests: an entry the target rejects (a cache left
	# by an older signature) must not go in.
	if [ "$added" -gt 0 ] && ! "$GO" test -count=1 -run="^${name}\$" "$pkg" >/dev/null 2>&1; then
		echo "fuzz: ${name}: the grown corpus fails as seeds; not committing it" >&2
		rm -f "${new[@]}"
		added=0
	fi
	rmdir "$dest" 2>/dev/null || true
	echo "$added"
}

# fuzz_one runs one target. Go's fuzz coordinator sometimes gives up with
# "context deadline exceeded" when a worker is slow to answer at the end of
# -fuzztime on a loaded machine; that is not a finding (no failing input is
# written), so it is retried once. Any real failure fails the run.
# It leaves the output of the last attempt in $out.
fuzz_one() {
	local pkg=$1 name=$2
	for attempt in 1 2; do
		if out=$("$GO" test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" "${parallel[@]}" "$pkg" 2>&1); then
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

record() {
	[ -n "$RESULTS" ] || return 0
	if [ ! -f "$RESULTS" ]; then
		printf '# date\tcommit\tpackage\ttarget\tfuzztime\texecs\tnew_interesting\tcommitted\toutcome\n' >"$RESULTS"
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(git rev-parse --short HEAD)" "$@" >>"$RESULTS"
}

# Only packages whose tests mention a fuzz function need compiling for -list.
mapfile -t dirs < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Z0-9_]' cmd internal 2>/dev/null | xargs -r -n1 dirname | sort -u)

if [ "${FUZZ_STATUS:-}" = 1 ]; then
	echo "| package | target | last ok run of ${FUZZTIME} (commit, date) |"
	echo "|---|---|---|"
	for dir in "${dirs[@]}"; do
		pkg="./${dir}"
		while read -r name; do
			s=$(last_ok "$pkg" "$name")
			echo "| \`${dir}\` | \`${name}\` | ${s:-not yet} |"
		done < <(grep -hoE '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort)
	done
	exit 0
fi

until_epoch=""
[ -n "${FUZZ_UNTIL:-}" ] && until_epoch=$(date -d "$FUZZ_UNTIL" +%s)

count=0 failed=0 skipped=0
for dir in "${dirs[@]}"; do
	pkg="./${dir}"
	mapfile -t names < <("$GO" test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)
	for name in "${names[@]}"; do
		if [ -n "${FUZZ_ONLY:-}" ] && ! [[ "$pkg $name" =~ $FUZZ_ONLY ]]; then
			continue
		fi
		if [ "${FUZZ_RESUME:-}" = 1 ] && done_before "$pkg" "$name"; then
			skipped=$((skipped + 1))
			continue
		fi
		if [ -n "$until_epoch" ] && [ $(($(date +%s) + want_secs + 60)) -gt "$until_epoch" ]; then
			echo "fuzz: stopping before ${name}: it could not end by ${FUZZ_UNTIL}"
			break 2
		fi
		echo "--- fuzz ${pkg} ${name} (${FUZZTIME})"
		outcome=ok
		if ! fuzz_one "$pkg" "$name"; then
			if grep -q 'Failing input written' <<<"$out"; then outcome=crash; else outcome=error; fi
			failed=$((failed + 1))
		fi
		execs=$(grep -oE 'execs: [0-9]+' <<<"$out" | tail -1 | grep -oE '[0-9]+' || echo 0)
		newi=$(grep -oE 'new interesting: [0-9]+' <<<"$out" | tail -1 | grep -oE '[0-9]+' || echo 0)
		committed=0
		if [ -n "${FUZZ_COMMIT_CORPUS:-}" ] && [ "$outcome" = ok ]; then
			committed=$(commit_corpus "$pkg" "$name" "$FUZZ_COMMIT_CORPUS")
		fi
		record "$pkg" "$name" "$FUZZTIME" "${execs:-0}" "${newi:-0}" "$committed" "$outcome"
		count=$((count + 1))
	done
done
if [ "$count" -eq 0 ] && [ "$skipped" -eq 0 ] && [ -z "$until_epoch" ]; then
	echo "fuzz: no fuzz targets found under cmd/ or internal/" >&2
	exit 1
fi
echo "fuzz: ${count} targets ran for ${FUZZTIME} each (${skipped} skipped as already done, ${failed} failed)"
[ "$failed" -eq 0 ]
