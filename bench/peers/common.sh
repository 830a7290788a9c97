# Shared by the peer scripts: where peer binaries are cached and how they
# are installed. Sourced, not run.
#
# Peers are built from source with `go install MODULE@PINNED` into a cache
# directory outside the repository: they are never committed, never linked
# into Facet, and never vendored.

PEERS_CACHE="${FACET_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/facet-bench-peers}"
PEERS_BIN="$PEERS_CACHE/bin"

# peer_install NAME PACKAGE@VERSION: builds PACKAGE into $PEERS_BIN unless
# the pinned version is already there, and prints the binary's path.
peer_install() {
	local name="$1" pkg="$2" stamp
	stamp="$PEERS_BIN/.$name.version"
	if [[ -x "$PEERS_BIN/$name" && "$(cat "$stamp" 2>/dev/null)" == "$pkg" ]]; then
		echo "$PEERS_BIN/$name"
		return 0
	fi
	mkdir -p "$PEERS_BIN"
	echo "installing $pkg into $PEERS_BIN (first time only; this takes a few minutes)" >&2
	# CGO off: static binaries, no C toolchain needed.
	GOBIN="$PEERS_BIN" CGO_ENABLED=0 GOFLAGS=-mod=mod go install "$pkg" >&2 || return 1
	echo "$pkg" >"$stamp"
	echo "$PEERS_BIN/$name"
}

# peer_wait_http URL SECONDS: waits until URL answers at all (any status).
peer_wait_http() {
	local url="$1" deadline=$((SECONDS + $2))
	while ((SECONDS < deadline)); do
		if curl -s -o /dev/null --max-time 1 "$url"; then
			return 0
		fi
		sleep 0.2
	done
	return 1
}

# peer_free_port: an unused loopback TCP port.
peer_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# peer_cli NAME PACKAGE@VERSION HEALTH_PATH ACTION [DIR]: the install /
# start / stop interface shared by the peer scripts. The calling script
# defines peer_launch BIN DIR PORT ACCESS SECRET, which starts the server
# in the background (credentials through the environment, never argv) and
# leaves its pid in $!.
peer_cli() {
	local name="$1" pkg="$2" health="$3" action="${4:-}" dir="${5:-}"
	case "$action" in
	install)
		peer_install "$name" "$pkg" >/dev/null
		;;
	start)
		[[ -n "$dir" ]] || { echo "usage: $name.sh start DIR" >&2; return 2; }
		local bin port access secret
		bin="$(peer_install "$name" "$pkg")"
		mkdir -p "$dir/data"
		port="$(peer_free_port)"
		access="bench$name"
		secret="$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24)"
		peer_launch "$bin" "$dir" "$port" "$access" "$secret" >"$dir/$name.log" 2>&1
		echo $! >"$dir/$name.pid"
		if ! peer_wait_http "http://127.0.0.1:$port$health" 60; then
			echo "$name did not come up; log: $dir/$name.log" >&2
			return 1
		fi
		echo "PEER_NAME=$name"
		echo "PEER_ENDPOINT=http://127.0.0.1:$port"
		echo "PEER_ACCESS_KEY=$access"
		echo "PEER_SECRET_KEY=$secret"
		echo "PEER_PID=$(cat "$dir/$name.pid")"
		;;
	stop)
		[[ -n "$dir" ]] || { echo "usage: $name.sh stop DIR" >&2; return 2; }
		if [[ -f "$dir/$name.pid" ]]; then
			kill "$(cat "$dir/$name.pid")" 2>/dev/null || true
			rm -f "$dir/$name.pid"
		fi
		;;
	*)
		echo "usage: $name.sh install | start DIR | stop DIR" >&2
		return 2
		;;
	esac
}
