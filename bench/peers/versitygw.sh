#!/usr/bin/env bash
# versitygw (Versity S3 Gateway, posix backend) as a peer S3 server for
# side-by-side runs of `facet bench`: like Facet, a gateway in front of a
# filesystem.
#
#   bench/peers/versitygw.sh install        build the pinned versitygw into the cache
#   bench/peers/versitygw.sh start DIR      start it on 127.0.0.1 with data in DIR;
#                                           prints PEER_* shell assignments
#   bench/peers/versitygw.sh stop DIR       stop the server started on DIR
#
# The binary lives in $FACET_PEERS_CACHE (default ~/.cache/facet-bench-peers),
# outside the repository.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
source "$here/common.sh"

VGW_PKG="github.com/versity/versitygw/cmd/versitygw@v1.8.0"

peer_launch() {
	local bin="$1" dir="$2" port="$3" access="$4" secret="$5"
	ROOT_ACCESS_KEY_ID="$access" ROOT_SECRET_ACCESS_KEY="$secret" \
		nohup "$bin" --port "127.0.0.1:$port" --health /health posix "$dir/data" &
}

peer_cli versitygw "$VGW_PKG" /health "$@"
