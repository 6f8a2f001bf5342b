#!/usr/bin/env bash
# `make deploy`: the work pool, every deployment of prefect.yaml, and how to start a worker, on the Prefect
# server PREFECT_API_URL names (never the ephemeral one).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PREFECT_API_URL:-}" ]; then
  echo "deploy: set PREFECT_API_URL to your Prefect server (e.g. http://127.0.0.1:4200/api after 'prefect server start')" >&2
  exit 2
fi
PREFECT="${PREFECT:-.venv/bin/prefect}"
POOL="${NIGHTWATCH_WORK_POOL:-nightwatch}"
export NIGHTWATCH_CHECKOUT="${NIGHTWATCH_CHECKOUT:-$PWD}"
if ! "$PREFECT" work-pool inspect "$POOL" >/dev/null 2>&1; then
  "$PREFECT" work-pool create "$POOL" --type process
fi
"$PREFECT" --no-prompt deploy --all
echo
echo "Deployments registered on work pool '$POOL'. Start a worker on each machine that runs nights:"
echo "  NIGHTWATCH_CHECKOUT=$NIGHTWATCH_CHECKOUT NIGHTWATCH_HOME=/shared/nightwatch PREFECT_API_URL=$PREFECT_API_URL \\"
echo "    $NIGHTWATCH_CHECKOUT/.venv/bin/prefect worker start --pool $POOL"
