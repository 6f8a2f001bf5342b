#!/usr/bin/env bash
# Runs the suite; a run that collects no tests is a failure, not a pass.
# Two workers by default (most of a night test's wall time is waiting on retries and timeouts, not CPU);
# NIGHTWATCH_TEST_WORKERS=0 runs in one process. Each worker has its own Prefect test API.
set -euo pipefail
cd "$(dirname "$0")/.."
export PREFECT_SERVER_ANALYTICS_ENABLED=false DO_NOT_TRACK=1
set +e
workers="${NIGHTWATCH_TEST_WORKERS:-2}"
if [ "$workers" = "0" ]; then
  .venv/bin/python -m pytest "$@"
else
  .venv/bin/python -m pytest -n "$workers" --dist loadfile "$@"
fi
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "run-tests: pytest collected no tests; failing" >&2
  exit 1
fi
exit "$status"
