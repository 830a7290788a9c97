#!/usr/bin/env bash
# `make run`: starts `facet serve` on ./data (or $FACET_DATA), waits until it
# is healthy, makes a first tenant "demo" when there is none, prints its keys
# and an example aws cli command, then stays in the foreground until the
# server exits. Ctrl-C (SIGINT) or SIGTERM is passed on as a graceful stop.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN="${FACET_BIN:-bin/facet}"
DATA="${FACET_DATA:-./data}"
S3_ADDR="${FACET_S3_ADDR:-127.0.0.1:9000}"
ADMIN_ADDR="${FACET_ADMIN_ADDR:-127.0.0.1:9001}"
TENANT="${FACET_DEMO_TENANT:-demo}"

[ -x "$BIN" ] || { echo "run: $BIN not built (make build)" >&2; exit 1; }
mkdir -p "$DATA"

# serve prints a generated admin token once on stdout and keeps it in
# $DATA/admin.token; an explicit FACET_ADMIN_TOKEN wins.
"$BIN" serve --data "$DATA" --s3-addr "$S3_ADDR" --admin-addr "$ADMIN_ADDR" &
pid=$!
stop() { kill -TERM "$pid" 2>/dev/null || true; }
trap stop INT TERM

healthy=""
for _ in $(seq 1 300); do
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid" || exit $?
		exit 1
	fi
	if curl -fsS "http://${ADMIN_ADDR}/healthz" >/dev/null 2>&1; then
		healthy=1
		break
	fi
	sleep 0.1
done
if [ -z "$healthy" ]; then
	echo "run: facet serve not healthy after 30s" >&2
	stop
	wait "$pid" || true
	exit 1
fi

TOKEN="${FACET_ADMIN_TOKEN:-}"
if [ -z "$TOKEN" ] && [ -f "$DATA/admin.token" ]; then
	TOKEN="$(tr -d '[:space:]' <"$DATA/admin.token")"
fi
ctl() { "$BIN" ctl --admin "http://${ADMIN_ADDR}" --token "$TOKEN" "$@"; }

echo
echo "admin API:  http://${ADMIN_ADDR}   (token in ${DATA}/admin.token unless FACET_ADMIN_TOKEN is set)"
echo "S3 API:     http://${S3_ADDR}"
echo "dashboard:  http://${ADMIN_ADDR}/ui/   (sign in with the admin token, or a tenant's access key and secret key)"
echo "volumes:    $BIN ctl --admin http://${ADMIN_ADDR} --token \$(cat ${DATA}/admin.token) volume create vm1 --tenant ${TENANT} --size 1GiB"
echo "            (NBD at 127.0.0.1:10809 when the port was free; volumes go on the default pool in ${DATA}/pool until you create pools)"
echo "            NBD clients authenticate with the tenant's pre-shared key (plain NBD is refused):"
echo "            $BIN ctl --admin http://${ADMIN_ADDR} --token \$(cat ${DATA}/admin.token) volume client-psk ${TENANT} --file ${TENANT}.psk"
echo "            nbdinfo 'nbds://${TENANT}@127.0.0.1:10809/vm1?tls-psk-file=${TENANT}.psk'"
if ctl tenant list -o json | grep -q '"name"'; then
	echo "tenants exist already; their secrets were shown when they were made. New keys:"
	echo "  $BIN ctl --admin http://${ADMIN_ADDR} --token \$(cat ${DATA}/admin.token) key create ${TENANT} -o json"
else
	out="$(ctl tenant create "$TENANT" -o json)"
	ak="$(printf '%s' "$out" | sed -n 's/.*"access_key": *"\([^"]*\)".*/\1/p')"
	sk="$(printf '%s' "$out" | sed -n 's/.*"secret_key": *"\([^"]*\)".*/\1/p')"
	echo "tenant \"${TENANT}\" created (the secret is shown only now):"
	echo "  AWS_ACCESS_KEY_ID=${ak}"
	echo "  AWS_SECRET_ACCESS_KEY=${sk}"
	echo
	echo "try:"
	echo "  AWS_ACCESS_KEY_ID=${ak} AWS_SECRET_ACCESS_KEY=${sk} aws --endpoint-url http://${S3_ADDR} --region us-east-1 s3 mb s3://first-bucket"
fi
echo
echo "facet serve running (pid ${pid}); Ctrl-C stops it."

# `wait` returns early when a trapped signal arrives; wait until the server
# is gone, then collect its own exit status (bash keeps it for this pid).
while kill -0 "$pid" 2>/dev/null; do
	wait "$pid" || true
done
status=0
wait "$pid" || status=$?
exit "$status"
