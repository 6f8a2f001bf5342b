#!/usr/bin/env bash
# Runs the suite; a run that collects no tests is a failure, not a pass.
set -euo pipefail
cd "$(dirname "$0")/.."
export PREFECT_SERVER_ANALYTICS_ENABLED=false DO_NOT_TRACK=1
set +e
.venv/bin/python -m pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "run-tests: pytest collected no tests; failing" >&2
  exit 1
fi
exit "$status"
