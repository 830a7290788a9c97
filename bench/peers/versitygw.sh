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

cmd="${1:-}"
case "$cmd" in
install)
	peer_install versitygw "$VGW_PKG" >/dev/null
	;;
start)
	dir="${2:?usage: versitygw.sh start DIR}"
	bin="$(peer_install versitygw "$VGW_PKG")"
	mkdir -p "$dir/data"
	port="$(peer_free_port)"
	access="benchvgw"
	secret="$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24)"
	# Credentials go through the environment, not argv, so `ps` does not show them.
	ROOT_ACCESS_KEY_ID="$access" ROOT_SECRET_ACCESS_KEY="$secret" \
		nohup "$bin" --port "127.0.0.1:$port" --health /health posix "$dir/data" \
		>"$dir/versitygw.log" 2>&1 &
	echo $! >"$dir/versitygw.pid"
	if ! peer_wait_http "http://127.0.0.1:$port/health" 60; then
		echo "versitygw did not come up; log: $dir/versitygw.log" >&2
		exit 1
	fi
	echo "PEER_NAME=versitygw"
	echo "PEER_ENDPOINT=http://127.0.0.1:$port"
	echo "PEER_ACCESS_KEY=$access"
	echo "PEER_SECRET_KEY=$secret"
	echo "PEER_PID=$(cat "$dir/versitygw.pid")"
	;;
stop)
	dir="${2:?usage: versitygw.sh stop DIR}"
	if [[ -f "$dir/versitygw.pid" ]]; then
		kill "$(cat "$dir/versitygw.pid")" 2>/dev/null || true
		rm -f "$dir/versitygw.pid"
	fi
	;;
*)
	echo "usage: $0 install | start DIR | stop DIR" >&2
	exit 2
	;;
esac
