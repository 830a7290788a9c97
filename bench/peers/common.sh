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
