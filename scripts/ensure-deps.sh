#!/usr/bin/env bash
# Installs the system packages the test suite needs when they are missing:
# redis-server (the Redis metadata store is tested against a real server) and
# promtool, from Debian's prometheus package (the /metrics exposition is
# checked with `promtool check metrics`; no smaller package provides it; the
# Prometheus server it also installs is not started by the tests).
# The block-storage tests drive NBD with real clients: qemu-img and qemu-io
# (qemu-utils), nbdcopy and nbdinfo (libnbd-bin), fio, and nbdkit as the
# reference server of the benchmark. The dashboard test drives Debian's
# chromium headless. The TLS tests drive rclone over HTTPS.
# Idempotent and quiet when everything is present; needs root (or sudo) only
# when something must be installed.
set -euo pipefail

# "command:package" pairs.
needs=(redis-server:redis-server qemu-img:qemu-utils qemu-io:qemu-utils nbdcopy:libnbd-bin nbdinfo:libnbd-bin fio:fio nbdkit:nbdkit chromium:chromium rclone:rclone)
# FACET_SKIP_PROMTOOL=1 also makes the Go test skip the promtool check.
[ "${FACET_SKIP_PROMTOOL:-}" = 1 ] || needs+=(promtool:prometheus)
missing=() commands=()
for need in "${needs[@]}"; do
	cmd=${need%%:*}
	if ! command -v "$cmd" >/dev/null 2>&1; then
		commands+=("$cmd")
		missing+=("${need#*:}")
	fi
done

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
# Debian's packages start a system redis-server on 6379 and a Prometheus on
# 9090; the tests start their own redis on random ports and need neither.
for dep in "${commands[@]}"; do
	command -v "$dep" >/dev/null 2>&1 || { echo "ensure-deps: $dep still missing after install" >&2; exit 1; }
done
