#!/usr/bin/env bash
# Latency of the agent API under `wrangler dev` with wrk. Usage: BASE_URL=http://127.0.0.1:8787
# edge/benches/load.sh [seconds]. Start wrangler dev first (see edge/README.md); loopback
# clients skip the rate limiter there, the last run goes through it with a new client per request.
# COMMERCE=1 adds the commerce rows (wrangler dev must talk to the Stripe fake).
set -euo pipefail
: "${BASE_URL:?set BASE_URL to the wrangler dev address}"
DUR=${1:-10}
HERE=$(cd "$(dirname "$0")" && pwd)
run() {
  local name=$1
  shift
  printf '\n== %s\n' "$name"
  # Warm the isolate (wasm instantiation, caches) so the first run is not penalised.
  wrk -t1 -c2 -d2s "$@" >/dev/null
  wrk -t2 -c8 -d"${DUR}s" --latency "$@" | sed -n '/Latency Distribution/,/Requests\/sec/p'
}
run "GET /agent/search?q=away+alerts" "$BASE_URL/agent/search?q=away+alerts"
run "GET /agent/read?path=/pricing" "$BASE_URL/agent/read?path=/pricing"
run "POST /mcp tools/call search_pages" -s "$HERE/mcp_call.lua" "$BASE_URL/mcp"
if [ "${COMMERCE:-0}" = 1 ]; then
  # Needs STRIPE_API_BASE pointing at the Stripe fake (edge/e2e/stripe-fake/server.mjs): each
  # creation is a real round trip to it.
  run "GET /agent/commerce/products (catalogue cache on)" "$BASE_URL/agent/commerce/products"
  run "POST /agent/commerce/ucp/checkout-sessions (Stripe fake)" -s "$HERE/ucp_create.lua" \
    "$BASE_URL/agent/commerce/ucp/checkout-sessions"
fi
run "GET /agent/search through the rate limiter (new client each request)" \
  -s "$HERE/unique_client.lua" "$BASE_URL/agent/search?q=away+alerts"
