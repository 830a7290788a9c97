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

peer_launch() {
	local bin="$1" dir="$2" port="$3" access="$4" secret="$5" console
	console="$(peer_free_port)"
	MINIO_ROOT_USER="$access" MINIO_ROOT_PASSWORD="$secret" MINIO_BROWSER=off \
		MINIO_UPDATE=off MINIO_CI_CD=1 \
		nohup "$bin" server --quiet --address "127.0.0.1:$port" \
		--console-address "127.0.0.1:$console" "$dir/data" &
}

peer_cli minio "$MINIO_PKG" /minio/health/live "$@"
