"""Extract what the fake Sentry API is checked against from Sentry's published OpenAPI document.

    python scripts/sentry_api_schema.py /path/to/getsentry/sentry-api-schema   # a clone, bare or not

Reads `openapi-derefed.json` at the clone's HEAD and writes `tests/contracts/sentry_api.json`: for each endpoint
NightWatch reads, the 200 response's schema (OpenAPI's `nullable` turned into JSON Schema's `null` type, so
jsonschema validates it as Sentry's serializers mean it) and the examples Sentry publishes with it, plus where they
came from (the repository's commit). The fake (`tests/fakes/sentry.py`) validates every answer it gives against them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests" / "contracts" / "sentry_api.json"
ORG = "/api/0/organizations/{organization_id_or_slug}/"
ENDPOINTS = {
    "issues": ORG + "issues/",
    "issue_events": ORG + "issues/{issue_id}/events/",
    "issue_event": ORG + "issues/{issue_id}/events/{event_id}/",
    "issue": ORG + "issues/{issue_id}/",
    "project": "/api/0/projects/{organization_id_or_slug}/{project_id_or_slug}/",
    "release_commits": ORG + "releases/{version}/commits/",
    "project_releases": "/api/0/projects/{organization_id_or_slug}/{project_id_or_slug}/releases/",
}


def json_schema(node: Any) -> Any:
    """OpenAPI 3.0's `nullable: true` as JSON Schema's `null` type; everything else as it is."""
    if isinstance(node, list):
        return [json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: json_schema(v) for k, v in node.items() if k not in ("nullable", "example", "examples")}
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"] if isinstance(out["type"], str) else [*out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        if "anyOf" in out or "oneOf" in out or "allOf" in out:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def main(clone: str) -> int:
    git = ["git", f"--git-dir={clone}/.git"] if (Path(clone) / ".git").exists() else ["git", f"--git-dir={clone}"]
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    document = json.loads(subprocess.run([*git, "show", "HEAD:openapi-derefed.json"], capture_output=True, check=True).stdout)
    out: dict[str, Any] = {"source": {"repository": "https://github.com/getsentry/sentry-api-schema", "commit": commit,
                                      "file": "openapi-derefed.json", "version": document["info"]["version"]},
                           "endpoints": {}}
    for name, path in ENDPOINTS.items():
        content = document["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
        out["endpoints"][name] = {"path": path, "schema": json_schema(content["schema"]),
                                  "examples": {k: v["value"] for k, v in (content.get("examples") or {}).items()}}
    OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(out['endpoints'])} endpoints from sentry-api-schema {commit[:12]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
