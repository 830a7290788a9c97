#!/usr/bin/env bash
# Side-by-side run: the same `facet bench` workloads against facet serve,
# MinIO and versitygw on this machine, then the comparison.
#
#   bench/run-peers.sh [OUTDIR]
#
# Workloads: 4 KiB and 64 MiB objects, PUT then GET, at concurrency 1, 16
# and 64 (closed loop, random contents so that no server gains from
# compression). Each server runs alone, on its own fresh data directory
# under OUTDIR, on 127.0.0.1.
#
# Environment:
#   FACET_BIN           facet binary (default: built into OUTDIR)
#   FACET_SERVE_FLAGS   extra flags for facet serve (e.g. --unsafe-no-fsync)
#   PEERS               servers to run (default "facet minio versitygw")
#   SIZES, CONCURRENCY  override the matrix (default "4KiB 64MiB", "1 16 64")
#   SMALL_SECS          seconds per 4 KiB run (default 8)
#   LARGE_OPS_MIN       large-object runs do max(LARGE_OPS_MIN, 2 x concurrency)
#                       ops (default 16): a timed run would cut off every
#                       64 MiB request in flight at c=64
#
# Peers are built by bench/peers/*.sh into a cache outside the repository.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
out="${1:-$(mktemp -d /tmp/facet-peers-XXXXXX)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
peers="${PEERS:-facet minio versitygw}"
sizes="${SIZES:-4KiB 64MiB}"
concs="${CONCURRENCY:-1 16 64}"
small_secs="${SMALL_SECS:-8}"
large_ops_min="${LARGE_OPS_MIN:-16}"

facet="${FACET_BIN:-}"
if [[ -z "$facet" ]]; then
	facet="$out/facet"
	(cd "$repo" && go build -o "$facet" ./cmd/facet)
fi

pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# start_facet DIR: facet serve with a fresh tenant; sets PEER_* like the
# peer scripts do.
start_facet() {
	local dir="$1" s3 admin token creds
	mkdir -p "$dir"
	s3="$(free_port)"
	admin="$(free_port)"
	token="$(head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
	# shellcheck disable=SC2086
	"$facet" serve --data "$dir/data" --s3-addr "127.0.0.1:$s3" --admin-addr "127.0.0.1:$admin" \
		--admin-token "$token" --log-level warn ${FACET_SERVE_FLAGS:-} >"$dir/facet.log" 2>&1 &
	pids+=($!)
	PEER_PID=$!
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$admin/healthz" && break
		sleep 0.1
	done
	creds="$("$facet" ctl --admin "http://127.0.0.1:$admin" --token "$token" tenant create bench -o json)"
	PEER_ENDPOINT="http://127.0.0.1:$s3"
	PEER_ACCESS_KEY="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["access_key"])' <<<"$creds")"
	PEER_SECRET_KEY="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["secret_key"])' <<<"$creds")"
}

stop_server() {
	kill "$PEER_PID" 2>/dev/null || true
	wait "$PEER_PID" 2>/dev/null || true
}

# bench_one SERVER SIZE CONC OP: one closed-loop run, report in
# $out/results/SERVER/SIZE-cCONC-OP/.
bench_one() {
	local server="$1" size="$2" conc="$3" op="$4" length keys prepop
	if [[ "$size" == "4KiB" ]]; then
		length=(--duration "${small_secs}s")
		keys=10000
		prepop=0
		[[ "$op" == "get" ]] && prepop=1000
	else
		# Large objects: a fixed op count, every request measured whole.
		length=(--ops $((2 * conc > large_ops_min ? 2 * conc : large_ops_min)) --duration 600s)
		keys=$((2 * conc))
		prepop=0
		[[ "$op" == "get" ]] && keys=$conc && prepop=$conc
	fi
	local dir="$out/results/$server/$size-c$conc-$op"
	AWS_ACCESS_KEY_ID="$PEER_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$PEER_SECRET_KEY" \
		"$facet" bench run --name "$size $op c=$conc" --endpoint "$PEER_ENDPOINT" \
		--bucket "bench-${size,,}-c$conc-$op" --size "$size" --mix "$op" --concurrency "$conc" \
		--keys "$keys" --prepopulate "$prepop" --data random "${length[@]}" \
		--out "$dir" >"$dir.log" 2>&1 || {
		echo "run failed: $server $size c=$conc $op; see $dir.log" >&2
		return 1
	}
	grep -E "^ +t1 " "$dir/summary.txt" | sed "s/^/  $server $size c=$conc: /" || true
}

for server in $peers; do
	sdir="$out/servers/$server"
	rm -rf "$sdir"
	mkdir -p "$sdir" "$out/results/$server"
	echo "== $server"
	case "$server" in
	facet) start_facet "$sdir" ;;
	minio | versitygw)
		eval "$("$here/peers/$server.sh" start "$sdir")"
		pids+=("$PEER_PID")
		;;
	*)
		echo "unknown server $server" >&2
		exit 2
		;;
	esac
	echo "   $PEER_ENDPOINT"
	for size in $sizes; do
		for conc in $concs; do
			bench_one "$server" "$size" "$conc" put
			bench_one "$server" "$size" "$conc" get
		done
	done
	stop_server
	# Free the disk before the next server.
	rm -rf "$sdir/data"
done

# The comparison: Facet's figures over each peer's, per workload.
if (($(wc -w <<<"$peers") < 2)); then
	echo "reports: $out/results/<server>/<size>-c<conc>-<op>/"
	exit 0
fi
echo
echo "## facet bench: facet vs peers ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores)"
echo
# Facet last: the ratios are facet/peer.
order=()
for p in $peers; do [[ "$p" != facet ]] && order+=("$p"); done
[[ " $peers " == *" facet "* ]] && order+=(facet)
labels="$(IFS=,; echo "${order[*]}")"
first=1
for size in $sizes; do
	for conc in $concs; do
		for op in put get; do
			files=()
			for p in "${order[@]}"; do files+=("$out/results/$p/$size-c$conc-$op/result.json"); done
			flags=(--markdown --labels "$labels")
			((first)) || flags+=(--no-header)
			first=0
			"$facet" bench compare "${flags[@]}" "${files[@]}" | sed -e "s/| t1 |/| $size c=$conc |/" -e "s/^| tenant |/| workload |/"
		done
	done
done
echo
echo "reports: $out/results/<server>/<size>-c<conc>-<op>/ (result.json, throughput.png, summary.txt)"
