"""What the Python eval-case builders share: the expected.yml they write (evals/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

KEPT = ("introduced_by", "blamed_by", "deciding_value")  # written by hand or by history_slices.py: kept when a case is captured again


def yaml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def expected_yml(case_id: str, source: tuple[str, str], case: dict, error: tuple[str, str], crash: tuple[str, int],
                 existing: Path | None = None) -> str:
    """The answer key of one case; `source` is (repository URL, license)."""
    lines = [f"id: {case_id}", f"title: {yaml_str(case['title'])}", "source:",
             f"  repository: {source[0]}", f"  commit: {case['parent']}", f"  fix_commit: {case['fix']}",
             f"  license: {source[1]}", "error:", f"  error_class: {yaml_str(error[0])}",
             f"  transaction: {yaml_str(error[1])}", "route: deep", "crash:", f"  file: {crash[0]}",
             f"  line: {crash[1]}", "origin:", f"  file: {case['origin'][0]}",
             f"  lines: [{case['origin'][1][0]}, {case['origin'][1][1]}]"]
    lines.append("alternatives:" if case["alternatives"] else "alternatives: []")
    for file, (start, end) in case["alternatives"]:
        lines += [f"  - file: {file}", f"    lines: [{start}, {end}]"]
    lines.append(f"root_cause_keywords: [{', '.join(yaml_str(k) for k in case['keywords'])}]")
    if case.get("noise"):
        lines.append("noise:")
        for error_class, transaction in case["noise"]:
            lines += [f"  - error_class: {yaml_str(error_class)}", f"    transaction: {yaml_str(transaction)}"]
    if case.get("test"):
        lines.append(f"regression_test: {case['test']}")
    old = yaml.safe_load(existing.read_text(encoding="utf-8")) if existing and existing.is_file() else {}
    lines += [f"{key}: {old[key] if isinstance(old[key], str) else json.dumps(old[key], ensure_ascii=False)}"
              for key in KEPT if old.get(key)]
    lines.append(f"notes: {yaml_str(case['notes'])}")
    return "\n".join(lines) + "\n"
