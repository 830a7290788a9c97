#!/usr/bin/env bash
# A local redis-server for running `facet serve --meta redis://...` by hand.
#
#   scripts/redis.sh start   start it (idempotent) and print its URL
#   scripts/redis.sh stop    stop it
#   scripts/redis.sh url     print the URL for --meta
#   scripts/redis.sh status  exit 0 when it answers
#
# It listens on 127.0.0.1:$FACET_REDIS_PORT (default 6390, away from a system
# Redis on 6379) and keeps its files in $FACET_REDIS_DIR (default
# ./data/redis), with appendonly on and fsync every write, as the metadata
# store needs. The tests do not use it: they start their own servers.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT="${FACET_REDIS_PORT:-6390}"
DIR="${FACET_REDIS_DIR:-./data/redis}"
URL="redis://127.0.0.1:${PORT}/0"

ping() {
	# redis-cli ships with redis-server; fall back to bash's /dev/tcp.
	if command -v redis-cli >/dev/null 2>&1; then
		[ "$(redis-cli -p "$PORT" ping 2>/dev/null)" = "PONG" ]
	else
		exec 3<>"/dev/tcp/127.0.0.1/$PORT" 2>/dev/null || return 1
		printf 'PING\r\n' >&3
		local line
		read -r -t 2 line <&3 || true
		exec 3>&-
		[ "${line%$'\r'}" = "+PONG" ]
	fi
}

case "${1:-}" in
start)
	./scripts/ensure-deps.sh
	if ping; then
		echo "$URL"
		exit 0
	fi
	mkdir -p "$DIR"
	DIR="$(cd "$DIR" && pwd)"
	redis-server --port "$PORT" --bind 127.0.0.1 --dir "$DIR" \
		--appendonly yes --appendfsync always \
		--daemonize yes --pidfile "$DIR/redis.pid" --logfile "$DIR/redis.log"
	for _ in $(seq 1 100); do
		if ping; then
			echo "$URL"
			exit 0
		fi
		sleep 0.1
	done
	echo "redis.sh: redis-server did not answer on port $PORT; see $DIR/redis.log" >&2
	exit 1
	;;
stop)
	pidfile="$DIR/redis.pid"
	if [ -f "$pidfile" ]; then
		pid="$(cat "$pidfile")"
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		rm -f "$pidfile"
	fi
	;;
url)
	echo "$URL"
	;;
status)
	ping
	;;
*)
	echo "usage: $0 start|stop|url|status" >&2
	exit 2
	;;
esac
