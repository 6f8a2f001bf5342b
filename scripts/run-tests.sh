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
# Temporary files on a tmpfs where the machine has one with room: the tests write thousands of small files and SQLite
# databases (Prefect's, the knowledge store's, the demo application's) and NightWatch syncs what it writes atomically;
# on a loaded disk a sync waits seconds. Measured on 2 cores, same state: 523 s with /tmp on disk, 456 s on /dev/shm
# (the demo application's own suite, 1 s alone, waited 58 s in the first). The suite peaks near 1.1 GB there.
# NIGHTWATCH_TEST_TMPDIR=DIR chooses the folder (kept afterwards); an empty value keeps the system's temporary folder.
tmp_root="${NIGHTWATCH_TEST_TMPDIR-auto}"
made_tmp=""
if [ "$tmp_root" = "auto" ]; then
  tmp_root=""
  shm_free_kb="$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }' || true)"
  if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "${shm_free_kb:-0}" -ge 4194304 ]; then
    made_tmp="$(mktemp -d /dev/shm/nightwatch-tests.XXXXXX)"
    tmp_root="$made_tmp"
    trap 'rm -rf "$made_tmp"' EXIT
  fi
fi
basetemp=()
if [ -n "$tmp_root" ]; then
  mkdir -p "$tmp_root"
  export TMPDIR="$tmp_root"
  basetemp=(--basetemp "$tmp_root/pytest")
fi
set +e
workers="${NIGHTWATCH_TEST_WORKERS:-5}"
if [ "$workers" = "0" ]; then
  .venv/bin/python -m pytest "${basetemp[@]}" --durations=15 "$@"
else
  .venv/bin/python -m pytest -n "$workers" --dist loadfile "${basetemp[@]}" --durations=15 "$@"
fi
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "run-tests: pytest collected no tests; failing" >&2
  exit 1
fi
exit "$status"
