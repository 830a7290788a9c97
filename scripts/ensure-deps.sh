#!/usr/bin/env bash
# Installs the system packages the test suite needs when they are missing:
# redis-server (the Redis metadata store is tested against a real server).
# Idempotent and quiet when everything is present; needs root (or sudo) only
# when something must be installed.
set -euo pipefail

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-deps: missing ${missing[*]} and no apt-get to install them; install them by hand" >&2
	exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		sudo=(sudo)
	else
		echo "ensure-deps: missing ${missing[*]}; run this script as root to install them" >&2
		exit 1
	fi
fi

echo "ensure-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian's package starts a system redis-server on 6379; the tests start
# their own on random ports and do not need it.
for dep in "${missing[@]}"; do
	command -v "$dep" >/dev/null 2>&1 || { echo "ensure-deps: $dep still missing after install" >&2; exit 1; }
done
