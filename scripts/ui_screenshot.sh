#!/usr/bin/env bash
# The documentation's pictures (docs/images), taken as a person would see them: a local Prefect server serving the deployments
# (what `make ui` runs), one offline night of `manual` run through the API, then headless Chromium on the
# night's run page, its Logs tab and its report artifact.
#
#   scripts/ui_screenshot.sh [OUT_DIR]      (default docs/images; needs Chromium: apt-get install chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-docs/images}"
PY=.venv/bin/python
BROWSER="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$BROWSER" ]; then
  echo "ui_screenshot: needs a headless Chromium on PATH (Debian/Ubuntu: apt-get install chromium)" >&2
  exit 2
fi
mkdir -p "$OUT"
WORK="$(mktemp -d)"
PORT="$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export NIGHTWATCH_HOME="$WORK/home" PREFECT_API_URL="http://127.0.0.1:$PORT/api"
unset ANTHROPIC_API_KEY NEW_RELIC_API_KEY GITHUB_TOKEN SLACK_BOT_TOKEN  # the pictures show the offline demo night
bash scripts/serve-ui.sh "$PORT" > "$WORK/ui.log" 2>&1 &
UI=$!
cleanup() { kill -TERM "$UI" 2>/dev/null || true; wait "$UI" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
for _ in $(seq 1 180); do
  grep -q "being served" "$WORK/ui.log" && break
  kill -0 "$UI" 2>/dev/null || { cat "$WORK/ui.log" >&2; echo "ui_screenshot: make ui's server did not start" >&2; exit 1; }
  sleep 1
done
grep -q "being served" "$WORK/ui.log" || { tail -20 "$WORK/ui.log" >&2; echo "ui_screenshot: deployments not served" >&2; exit 1; }

RUN="$(.venv/bin/prefect deployment run nightwatch/manual --param until=2026-11-21T06:00:00+00:00 \
       | sed -n 's/.*UUID: *\([0-9a-f-]\{36\}\).*/\1/p' | head -1)"
[ -n "$RUN" ] || { echo "ui_screenshot: could not start a run of nightwatch/manual" >&2; exit 1; }
ARTIFACT="$($PY - "$PREFECT_API_URL" "$RUN" <<'EOF'
import json, sys, time, urllib.request

api, run = sys.argv[1], sys.argv[2]


def call(path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(api + path, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


deadline = time.monotonic() + 600
while call(f"/flow_runs/{run}")["state"]["type"] not in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
    if time.monotonic() > deadline:
        sys.exit("the night did not finish in 10 minutes")
    time.sleep(2)
found = call("/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [run]}, "type": {"any_": ["markdown"]}},
                                    "sort": "CREATED_DESC", "limit": 1})
print(found[0]["id"] if found else "")
EOF
)"
shoot() {  # url, file: the page after its scripts have run
  "$BROWSER" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1500,1000 \
    --virtual-time-budget=15000 --screenshot="$2" "$1" >/dev/null 2>&1
  echo "  $2"
}
UI_URL="http://127.0.0.1:$PORT"
echo "screenshots of night $RUN:"
shoot "$UI_URL/runs/flow-run/$RUN" "$OUT/run-page.png"
shoot "$UI_URL/runs/flow-run/$RUN?tab=Logs" "$OUT/run-logs.png"
if [ -n "$ARTIFACT" ]; then
  shoot "$UI_URL/artifacts/artifact/$ARTIFACT" "$OUT/report-artifact.png"
else
  echo "ui_screenshot: the night wrote no report artifact" >&2
  exit 1
fi
