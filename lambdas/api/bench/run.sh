#!/usr/bin/env bash
# Load test of `api --local` against DynamoDB Local. Default: authenticated GET /api/v1/runs
# (key lookup + rate-limit counter + runs query, i.e. three DynamoDB calls per request).
# MCP=1: MCP tools/call find_tools on POST /mcp (key lookup, counter, connections query).
# FIND=1: authenticated GET /api/v1/health, then POST /api/v1/tools/find with the evaluation's
# 303 task queries, against the same server (one run each); set CATALOG_PATH to the built catalog
# (lambdas/catalog/dist/catalog.bin.zst) to search the whole catalog rather than the fixture.
# Needs DDB_ENDPOINT (and the dummy AWS_* variables) like the tests, and wrk.
# Usage: lambdas/api/bench/run.sh [DURATION] [CONNECTIONS]; builds with the current profile.
set -euo pipefail
: "${DDB_ENDPOINT:?point DDB_ENDPOINT at DynamoDB Local}"
DURATION=${1:-10s}
CONNS=${2:-4}
ACCOUNTS=${ACCOUNTS:-80}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
cd "$ROOT"
cargo build -q -p platform-api ${PROFILE:+--profile "$PROFILE"}
API="${CARGO_TARGET_DIR:-target}/${PROFILE_DIR:-debug}/api"
export TABLE_NAME="bench-$$-$(date +%s)"
"$API" admin create-table >/dev/null
KEYS=""
for i in $(seq "$ACCOUNTS"); do
  KEYS="$KEYS $("$API" admin create-account --email "bench$i@example.com" 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')"
done
export KEYS
LOG=$(mktemp)
OUT=$(mktemp)
CATALOG_PATH="${CATALOG_PATH:-$ROOT/lambdas/platform/tests/fixtures/catalog.json}" \
  setsid "$API" --local 127.0.0.1:0 >"$OUT" 2>"$LOG" &
PGID=$!
trap 'kill -- -$PGID 2>/dev/null || true; rm -f "$LOG" "$OUT"' EXIT
for _ in $(seq 100); do grep -q listening "$OUT" && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on //p' "$OUT")
if [ -n "${FIND:-}" ]; then
  BODIES=$(mktemp)
  trap 'kill -- -$PGID 2>/dev/null || true; rm -f "$LOG" "$OUT" "$BODIES"' EXIT
  python3 -c 'import json,sys
for t in json.load(open(sys.argv[1])): print(json.dumps({"query": t["query"]}))' \
    "$ROOT/lambdas/catalog/eval/tool_tasks.json" >"$BODIES"
  export BODIES
  echo "== authenticated GET /api/v1/health"
  wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s "$HERE/keys.lua" "$BASE/api/v1/health"
  echo "== POST /api/v1/tools/find (evaluation queries, round-robin)"
  wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s "$HERE/find.lua" "$BASE/api/v1/tools/find"
elif [ -n "${MCP:-}" ]; then
  wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s "$HERE/mcp.lua" "$BASE/mcp"
else
  wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s "$HERE/keys.lua" "$BASE/api/v1/runs"
fi
