#!/usr/bin/env bash
# MinIO as a peer S3 server for side-by-side runs of `facet bench`.
#
#   bench/peers/minio.sh install        build the pinned MinIO into the cache
#   bench/peers/minio.sh start DIR      start it on 127.0.0.1 with data in DIR;
#                                       prints PEER_* shell assignments
#   bench/peers/minio.sh stop DIR       stop the server started on DIR
#
# The binary lives in $FACET_PEERS_CACHE (default ~/.cache/facet-bench-peers),
# outside the repository.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
source "$here/common.sh"

# MinIO publishes no semver tags; this pseudo-version is the pinned commit.
MINIO_PKG="github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"

cmd="${1:-}"
case "$cmd" in
install)
	peer_install minio "$MINIO_PKG" >/dev/null
	;;
start)
	dir="${2:?usage: minio.sh start DIR}"
	bin="$(peer_install minio "$MINIO_PKG")"
	mkdir -p "$dir/data"
	port="$(peer_free_port)"
	console="$(peer_free_port)"
	access="benchminio"
	secret="$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24)"
	MINIO_ROOT_USER="$access" MINIO_ROOT_PASSWORD="$secret" MINIO_BROWSER=off \
		MINIO_UPDATE=off MINIO_CI_CD=1 \
		nohup "$bin" server --quiet --address "127.0.0.1:$port" \
		--console-address "127.0.0.1:$console" "$dir/data" >"$dir/minio.log" 2>&1 &
	echo $! >"$dir/minio.pid"
	if ! peer_wait_http "http://127.0.0.1:$port/minio/health/live" 60; then
		echo "minio did not come up; log: $dir/minio.log" >&2
		exit 1
	fi
	echo "PEER_NAME=minio"
	echo "PEER_ENDPOINT=http://127.0.0.1:$port"
	echo "PEER_ACCESS_KEY=$access"
	echo "PEER_SECRET_KEY=$secret"
	echo "PEER_PID=$(cat "$dir/minio.pid")"
	;;
stop)
	dir="${2:?usage: minio.sh stop DIR}"
	if [[ -f "$dir/minio.pid" ]]; then
		kill "$(cat "$dir/minio.pid")" 2>/dev/null || true
		rm -f "$dir/minio.pid"
	fi
	;;
*)
	echo "usage: $0 install | start DIR | stop DIR" >&2
	exit 2
	;;
esac
