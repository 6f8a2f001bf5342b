"""validate_fix: exact-once edits, refused paths, and the choice of the one fix worth a draft PR."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.fix import FixRejected, choose_best_fix, confidence_gate, refused_reason, validate_fix
from nightwatch.models import Analysis, ErrorAnalysisResult, ErrorGroup, FileChange

ORDER = "class Order\n  def total\n    items.sum(&:price)\n  end\n\n  def total_cents\n    total * 100\n  end\nend\n"


@pytest.fixture
def host(tmp_path: Path) -> LocalRepoHost:
    root = tmp_path / "repo"
    (root / "app/models").mkdir(parents=True)
    (root / "app/models/order.rb").write_text(ORDER)
    (root / ".github/workflows").mkdir(parents=True)
    (root / ".github/workflows/ci.yml").write_text("on: push\n")
    return LocalRepoHost(root)


def analysis(*changes: FileChange, has_fix: bool = True, confidence: str = "high") -> Analysis:
    return Analysis(title="t", reasoning="r", root_cause="c", has_fix=has_fix, confidence=confidence, file_changes=list(changes))


def test_a_modify_replaces_the_unique_excerpt_and_yields_a_git_style_diff(host: LocalRepoHost) -> None:
    fix = validate_fix(analysis(FileChange(path="app/models/order.rb", before="items.sum(&:price)", after="items.sum(&:price).to_d")), host)
    assert fix.changes == {"app/models/order.rb": ORDER.replace("items.sum(&:price)", "items.sum(&:price).to_d")}
    assert fix.diff.startswith("--- a/app/models/order.rb\n+++ b/app/models/order.rb\n@@")
    assert "-    items.sum(&:price)\n+    items.sum(&:price).to_d\n" in fix.diff
    assert set(fix.base_digests) == {"app/models/order.rb"}


def test_edits_to_one_file_apply_in_order(host: LocalRepoHost) -> None:
    fix = validate_fix(analysis(
        FileChange(path="app/models/order.rb", before="items.sum(&:price)", after="items.sum(&:amount)"),
        FileChange(path="app/models/order.rb", before="total * 100", after="(total * 100).round"),
    ), host)
    assert "items.sum(&:amount)" in fix.changes["app/models/order.rb"] and "(total * 100).round" in fix.changes["app/models/order.rb"]


def test_a_create_writes_a_new_file_only(host: LocalRepoHost) -> None:
    fix = validate_fix(analysis(FileChange(path="app/models/refund.rb", action="create", after="class Refund\nend")), host)
    assert fix.changes == {"app/models/refund.rb": "class Refund\nend"}
    assert fix.diff.startswith("--- /dev/null\n+++ b/app/models/refund.rb\n")
    assert fix.diff.endswith("+end\n\\ No newline at end of file\n")
    assert fix.base_digests == {"app/models/refund.rb": None}
    with pytest.raises(FixRejected, match="cannot create app/models/order.rb: it already exists"):
        validate_fix(analysis(FileChange(path="app/models/order.rb", action="create", after="x")), host)


@pytest.mark.parametrize(
    ("before", "why"),
    [("items.sum(&:cost)", "does not occur in the current file"), ("total", r"occurs 3 times \(it must be unique\)")],
)
def test_the_before_excerpt_must_occur_exactly_once(host: LocalRepoHost, before: str, why: str) -> None:
    with pytest.raises(FixRejected, match=f"cannot modify app/models/order.rb: the `before` excerpt {why}"):
        validate_fix(analysis(FileChange(path="app/models/order.rb", before=before, after="x")), host)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (FileChange(path="app/models/order.rb", action="delete"), "a fix never deletes files"),
        (FileChange(path="app/models/gone.rb", before="a", after="b"), "no such file"),
        (FileChange(path="app/models/order.rb", before=None, after="b"), "both `before`"),
        (FileChange(path="app/models/order.rb", before="total * 100", after="total * 100"), "the fix changes nothing"),
    ],
)
def test_deletes_missing_files_incomplete_and_empty_edits_are_refused(host: LocalRepoHost, change: FileChange, message: str) -> None:
    with pytest.raises(FixRejected, match=message):
        validate_fix(analysis(change), host)


@pytest.mark.parametrize(
    "path",
    [
        ".github/workflows/ci.yml", ".github/CODEOWNERS", ".gitlab-ci.yml", ".circleci/config.yml", "Jenkinsfile",
        ".travis.yml", "azure-pipelines.yml", ".buildkite/pipeline.yml", ".env", ".env.production", "config/master.key",
        "config/credentials.yml.enc", "config/credentials/production.key", "certs/server.pem", "deploy/secrets.yml",
        "credentials.json",
    ],
)
def test_ci_configuration_workflows_and_secrets_are_never_touched(host: LocalRepoHost, path: str) -> None:
    with pytest.raises(FixRejected, match=f"refused {path}: .*never changed by a fix"):
        validate_fix(analysis(FileChange(path=path, action="create", after="x")), host)


@pytest.mark.parametrize("path", ["../outside.rb", "/etc/passwd", "app/../../x.rb", ".git/hooks/pre-commit"])
def test_paths_escaping_the_repository_are_refused(host: LocalRepoHost, path: str) -> None:
    with pytest.raises(FixRejected, match="refused"):
        validate_fix(analysis(FileChange(path=path, action="create", after="x")), host)


def test_no_fix_is_refused(host: LocalRepoHost) -> None:
    with pytest.raises(FixRejected, match="proposes no fix"):
        validate_fix(analysis(FileChange(path="app/models/order.rb", before="total", after="x"), has_fix=False), host)
    with pytest.raises(FixRejected, match="proposes no fix"):
        validate_fix(analysis(), host)


def result(name: str, confidence: str, occurrences: int, has_fix: bool = True) -> ErrorAnalysisResult:
    changes = [FileChange(path="a.rb", before="x", after="y")] if has_fix else []
    return ErrorAnalysisResult(
        run_id="r1",
        error=ErrorGroup(error_class=name, transaction="Controller/x", occurrences=occurrences),
        analysis=analysis(*changes, has_fix=has_fix, confidence=confidence),
    )


def test_choose_best_fix_prefers_confidence_then_occurrences() -> None:
    low_many, high_few, high_more = result("A", "low", 900), result("B", "high", 3), result("C", "high", 40)
    no_fix = result("D", "high", 5000, has_fix=False)
    assert choose_best_fix([low_many, high_few, no_fix, high_more]) is high_more
    assert choose_best_fix([low_many, result("E", "medium", 1)]).error.error_class == "E"
    assert choose_best_fix([no_fix, ErrorAnalysisResult(run_id="r1", error=no_fix.error)]) is None
    assert choose_best_fix([]) is None


def test_a_symlinked_folder_is_judged_by_where_it_leads(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs: {}\n")
    (repo / "ci").symlink_to(".github/workflows")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=t", "commit", "-qm", "x"], check=True)
    analysis = Analysis(title="t", reasoning="r", root_cause="c", has_fix=True, confidence="high",
                        file_changes=[FileChange(path="ci/ci.yml", before="jobs: {}", after="jobs: {evil: 1}")])
    with pytest.raises(FixRejected, match=r"resolves to \.github/workflows/ci\.yml"):
        validate_fix(analysis, LocalRepoHost(repo))


@pytest.mark.parametrize("path", [
    ".gitea/workflows/x.yml", ".forgejo/workflows/x.yml", ".woodpecker/ci.yml", ".woodpecker.yml", "cloudbuild.yaml",
    ".tekton/pipeline.yaml", ".buildkite/pipeline.yml", ".circleci/config.yml", "Jenkinsfile", "Dockerfile",
    "docker/app.Dockerfile", ".envrc", ".gitmodules", "config/database.yml", "db/migrate/20260101_add.rb",
    "app/migrations/0001_initial.py", "config/credentials/production.key", ".env.production", "deploy/id_ed25519",
])
def test_every_ci_system_container_secret_and_migration_is_protected(path):
    assert refused_reason(path), path


def test_the_confidence_gate():
    analysis = Analysis(title="t", reasoning="r", root_cause="c", has_fix=True, confidence="medium")
    assert "NIGHTWATCH_PR_MIN_CONFIDENCE" in confidence_gate(analysis, "high")
    assert confidence_gate(analysis, "medium") is None and confidence_gate(analysis.model_copy(update={"confidence": "high"}), "high") is None
