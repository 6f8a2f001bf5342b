#!/usr/bin/env bash
# Runs the suite; a run that collects no tests is a failure, not a pass.
# Five workers on two cores by default: a flow test spends much of its wall time waiting (on a Prefect server
# starting in a subprocess, a worker polling, a fault the fake holds), which another worker's CPU work fills.
# Measured on 2 cores before bytecode was compiled at install: 2 workers 6 m 10 s, 3 workers 4 m 43 s, 4 workers
# 4 m 35 s; after: 4 workers 3 m 45 s, 5 workers 3 m 37 s. NIGHTWATCH_TEST_WORKERS=0 runs in one process.
# Each worker has its own Prefect test API. Starting the slowest tests first (one test at a time, longest first) was
# measured against this side by side, two rounds each: 604 and 644 s against 609 and 663 s, within the machine's noise.
set -euo pipefail
cd "$(dirname "$0")/.."
export PREFECT_SERVER_ANALYTICS_ENABLED=false DO_NOT_TRACK=1
# The project's own modules as bytecode too (the environment's are compiled at install): each test worker and
# every process a test starts then reads them instead of compiling them, even under PYTHONDONTWRITEBYTECODE.
.venv/bin/python -m compileall -q -j 0 nightwatch flows tasks knowledge_store blocks deployments tests >/dev/null
set +e
workers="${NIGHTWATCH_TEST_WORKERS:-5}"
if [ "$workers" = "0" ]; then
  .venv/bin/python -m pytest --durations=15 "$@"
else
  .venv/bin/python -m pytest -n "$workers" --dist loadfile --durations=15 "$@"
fi
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "run-tests: pytest collected no tests; failing" >&2
  exit 1
fi
exit "$status"
