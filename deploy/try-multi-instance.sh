#!/usr/bin/env bash
# Tries the "several instances" recipe on one machine: s3rver (a devDependency) as the S3-compatible bucket, a
# fresh database on your PostgreSQL, two servers on it, an s3 strategy made with the CLI, an upload through one
# instance, list and delete through the other. Stops what it started and drops its database, even on failure.
#
#   bash deploy/try-multi-instance.sh          # from the checkout, after `bun install`
#   PG=postgres://postgres@127.0.0.1:5432 PORT_A=38301 PORT_B=38302 S3_PORT=38500 bash deploy/try-multi-instance.sh
#
# Needs bun, curl, jq and PostgreSQL's createdb/dropdb; PG must be allowed to create databases.
set -euo pipefail
cd "$(dirname "$0")/.."

PG=${PG:-postgres://postgres@127.0.0.1:5432}
PORT_A=${PORT_A:-38301}
PORT_B=${PORT_B:-38302}
S3_PORT=${S3_PORT:-38500}
DB=imagehost_try_$$
WORK=$(mktemp -d)
A=http://127.0.0.1:$PORT_A
B=http://127.0.0.1:$PORT_B
S3=http://127.0.0.1:$S3_PORT
pids=()

cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  dropdb --if-exists --maintenance-db="$PG/postgres" "$DB" || true
  rm -rf "$WORK"
  [ "$status" -eq 0 ] && echo "OK: stopped everything, dropped $DB" || echo "FAILED (exit $status): stopped everything, dropped $DB"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
# waits until $1 answers, served by the process $2 (not something else already on that port)
wait_for() {
  for _ in $(seq 1 100); do
    kill -0 "$2" 2>/dev/null || { echo "process $2 for $1 exited (port taken?)" >&2; return 1; }
    curl -fs -o /dev/null "$1" && sleep 0.3 && kill -0 "$2" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "no answer from $1" >&2
  return 1
}
expect() { [ "$1" = "$2" ] || { echo "expected $2, got $1" >&2; exit 1; }; }

step "bucket: s3rver on $S3, bucket 'images'"
mkdir -p "$WORK/s3"
bun node_modules/s3rver/bin/s3rver.js -d "$WORK/s3" -a 127.0.0.1 -p "$S3_PORT" --configure-bucket images --silent &
pids+=($!)
wait_for "$S3/images" $!

step "database: $PG/$DB"
createdb --maintenance-db="$PG/postgres" "$DB"

export DATABASE_URL=$PG/$DB
export ADMIN_TOKEN=$(head -c 32 /dev/urandom | base64)
export BASE_URL=$A # one public address for all instances; here instance A stands in for the proxy
export HOST=127.0.0.1 TRUST_PROXY=0 LOG_LEVEL=warn
step "two instances: $A and $B"
PORT=$PORT_A DATA_DIR=$WORK/a bun run src/server.ts &
pids+=($!)
pid_a=$!
PORT=$PORT_B DATA_DIR=$WORK/b bun run src/server.ts &
pids+=($!)
wait_for "$A/health" "$pid_a"
wait_for "$B/health" $!

step "s3 strategy (CLI), made the only strategy of both groups; the per-instance Local strategy disabled"
cli() { BASE_URL=$A bun run --silent cli "$@"; }
sid=$(cli strategy create S3 --driver s3 --json --config \
  "{\"bucket\":\"images\",\"endpoint\":\"$S3\",\"region\":\"us-east-1\",\"access_key_id\":\"S3RVER\",\"secret_access_key\":\"S3RVER\",\"url\":\"$S3/images\"}" | jq -r .id)
cli group set 1 --strategy-ids "$sid" >/dev/null
cli group set 2 --strategy-ids "$sid" >/dev/null
cli strategy set 1 --enabled false >/dev/null
cli user create alice --email alice@example.com >/dev/null
token=$(cli token create alice | tail -1)
curl -fs "$B/health/ready" | jq -c .data

step "upload through A"
bun -e 'await (await import("sharp")).default({ create: { width: 640, height: 480, channels: 3, background: "#3a7" } }).png().toFile(process.argv[1])' "$WORK/a.png"
curl -fs "$A/api/v1/upload" -H "Authorization: Bearer $token" -F "file=@$WORK/a.png" > "$WORK/up.json"
key=$(jq -r .data.key "$WORK/up.json")
url=$(jq -r .data.url "$WORK/up.json")
echo "key $key, url $url"

step "in the bucket"
curl -fs "$S3/images?list-type=2" | grep -o '<Key>[^<]*' | sed 's/<Key>/  /'
expect "$(curl -s -o /dev/null -w '%{http_code}' "$url")" 200

step "list and delete through B"
expect "$(curl -fs "$B/api/v1/images" -H "Authorization: Bearer $token" | jq -r '.data.data[0].key')" "$key"
curl -fs -X DELETE "$B/api/v1/images/$key" -H "Authorization: Bearer $token" | jq -c .
expect "$(curl -s -o /dev/null -w '%{http_code}' "$url")" 404
expect "$(curl -fs "$A/api/v1/images" -H "Authorization: Bearer $token" | jq -r '.data.total')" 0
echo "object gone from the bucket; A lists no image"
