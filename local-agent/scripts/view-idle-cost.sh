#!/usr/bin/env bash
# Measures the agent's CPU time with the live view closed, open (a watching page's event stream,
# or a real headless Chromium with --chromium), and closed again. Prints seconds of CPU
# (utime + stime from /proc/<pid>/stat) per measuring window.
#
#   scripts/view-idle-cost.sh [path/to/local-agent] [seconds per window] [--chromium]
set -euo pipefail
BIN=${1:-target/release/local-agent}
WINDOW=${2:-60}
MODE=${3:-}
DIR=$(mktemp -d)
trap 'kill -TERM -- -$PGID 2>/dev/null || true; [ -n "${WATCH:-}" ] && kill $WATCH 2>/dev/null; rm -rf "$DIR"' EXIT
touch "$DIR/config.toml"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
VIEW=$(port)
( SERVICE_DATA_DIR="$DIR/data" SERVICE_CONFIG="$DIR/config.toml" SERVICE_ENGINE_PORT=$(port) \
  SERVICE_SENTINEL_PORT=$(port) SERVICE_CSI_PORT=$(port) SERVICE_VIEW_PORT=$VIEW RUST_LOG=error \
  exec setsid "$BIN" >"$DIR/out" 2>&1 ) &
PGID=$!
for _ in $(seq 100); do grep -q 'live view on' "$DIR/out" 2>/dev/null && break; sleep 0.1; done
PID=$(pgrep -g "$PGID" -x local-agent | head -n 1)
URL=$(grep -o 'http://127.0.0.1:[0-9]*/?token=[A-Za-z0-9_-]*' "$DIR/out")
TOKEN=${URL##*token=}
TICK=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
measure() {
  local a b
  a=$(cpu); sleep "$WINDOW"; b=$(cpu)
  awk -v d=$((b - a)) -v t="$TICK" -v w="$WINDOW" -v l="$1" \
    'BEGIN { printf "%-22s %.2f s CPU in %d s (%.2f%% of one core)\n", l, d / t, w, 100 * d / t / w }'
}
sleep 5
measure "view closed"
if [ "$MODE" = "--chromium" ]; then
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$DIR/profile" --remote-debugging-port=0 "$URL" >/dev/null 2>&1 &
  WATCH=$!
else
  curl -sN -H "Cookie: presence_view_$VIEW=$TOKEN" "http://127.0.0.1:$VIEW/api/events" >/dev/null &
  WATCH=$!
fi
sleep 3
measure "view open"
kill "$WATCH" 2>/dev/null || true; wait "$WATCH" 2>/dev/null || true; WATCH=
sleep 2
measure "view closed again"
