#!/usr/bin/env bash
# A local Prefect server (UI on 127.0.0.1:PORT) and a process serving the NightWatch deployments.
# Ctrl-C stops both within 5 s.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${1:-4200}"
export NIGHTWATCH_HOME="${NIGHTWATCH_HOME:-$PWD/.nightwatch}"
export PREFECT_HOME="${PREFECT_HOME:-$NIGHTWATCH_HOME/prefect-server}"
export PREFECT_RESULTS_LOCAL_STORAGE_PATH="${PREFECT_RESULTS_LOCAL_STORAGE_PATH:-$NIGHTWATCH_HOME/results}"
export PREFECT_API_URL="http://127.0.0.1:${PORT}/api"
export PREFECT_SERVER_ANALYTICS_ENABLED=false DO_NOT_TRACK=1
mkdir -p "$NIGHTWATCH_HOME"
.venv/bin/prefect server start --host 127.0.0.1 --port "$PORT" > "$NIGHTWATCH_HOME/prefect-server.log" 2>&1 &
server=$!
serve=""
stop() {  # every process of `make ui` ends within 5 s: INT to the serving process, TERM to the server, then KILL
  # The serving process gets INT, never TERM: Prefect's runner replaces its TERM handler with one that exits from
  # inside the event loop (a traceback when it lands during shutdown); INT stays deployments/serve.py's own.
  # After Ctrl-C ("$1" = group) the whole process group already has its INT: a second one would land while the
  # serving process shuts down and print a KeyboardInterrupt traceback.
  [ "${1:-}" != group ] && [ -n "$serve" ] && kill -INT $serve 2>/dev/null || true
  kill -TERM $server 2>/dev/null || true
  for _ in $(seq 1 20); do
    { [ -n "$serve" ] && kill -0 "$serve" 2>/dev/null; } || kill -0 "$server" 2>/dev/null || break
    sleep 0.25
  done
  kill -KILL $serve $server 2>/dev/null || true
}
trap 'stop group; exit 0' INT
trap 'stop; exit 0' TERM
trap stop EXIT
for _ in $(seq 1 90); do
  if .venv/bin/python -c "import urllib.request,sys; urllib.request.urlopen('$PREFECT_API_URL/health', timeout=1)" 2>/dev/null; then break; fi
  kill -0 $server 2>/dev/null || { echo "prefect server exited; see $NIGHTWATCH_HOME/prefect-server.log" >&2; exit 1; }
  sleep 1
done
echo "Prefect UI: http://127.0.0.1:${PORT}  (deployments: nightwatch/nightly, nightwatch/manual)"
.venv/bin/python -m nightwatch.deployments.serve &
serve=$!
wait "$serve"
