"""Suspect commits: real git (blame --porcelain, merges, squashes, renames, a shallow clone), scored and rendered."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from nightwatch.knowledge_store.documents import _introduced_by

from nightwatch.codehosts.blame import parse_porcelain
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.fix import changed_lines, lines_it_changes
from nightwatch.models import Analysis, Deploy, ErrorAnalysisResult, ErrorGroup, FileChange, RunReport, SuspectCommit, Window
from nightwatch.render.blocks import _suspect, report_blocks
from nightwatch.render.issue import issue_body, suspect_line
from nightwatch.suspects import blamable_frames, can_blame, suspect_commits

FIRST_SEEN = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)


def git(repo: Path, *args: str, when: datetime | None = None, author: str = "Dev") -> str:
    moment = (when or FIRST_SEEN - timedelta(days=400)).isoformat()
    env = {**os.environ, "GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": f"{author.lower()}@example.com",
           "GIT_COMMITTER_NAME": author, "GIT_COMMITTER_EMAIL": f"{author.lower()}@example.com",
           "GIT_AUTHOR_DATE": moment, "GIT_COMMITTER_DATE": moment}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def write(repo: Path, path: str, lines: list[str]) -> None:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")


def commit(repo: Path, message: str, when: datetime, author: str = "Dev") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, when=when, author=author)
    return git(repo, "rev-parse", "HEAD").strip()


VIEW = ["def show(request, pk):", "    order = load(pk)", "    return render(order.total)", ""]
MODEL = ["def load(pk):", "    row = find(pk)", "    return row", ""]


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """An import, an old change, a merged PR two days before the error, a squash one hour after it."""
    root = tmp_path / "shop"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(root, "app/views.py", VIEW)
    write(root, "app/models.py", MODEL)
    commit(root, "Import the shop", FIRST_SEEN - timedelta(days=900))
    write(root, "app/models.py", ["def load(pk):", "    row = find(pk) or None", "    return row", ""])
    commit(root, "Let load return None for a missing order", FIRST_SEEN - timedelta(days=300), author="Old")
    git(root, "checkout", "-q", "-b", "feature/totals")
    write(root, "app/views.py", ["def show(request, pk):", "    order = load(pk)", "    return render(order.total_cents)", ""])
    commit(root, "Show totals in cents", FIRST_SEEN - timedelta(days=3), author="Priya")
    git(root, "checkout", "-q", "main")
    git(root, "merge", "-q", "--no-ff", "feature/totals", "-m", "Merge pull request #477 from acme/feature/totals",
        when=FIRST_SEEN - timedelta(hours=50), author="Priya")
    return root


FRAMES = [("app/views.py", 3), ("app/models.py", 2)]


def test_the_merged_change_to_the_crash_line_is_the_likely_suspect_and_the_import_is_none(repo: Path) -> None:
    host = LocalRepoHost(repo)
    assert can_blame(host)
    suspects, notes = suspect_commits(host, FRAMES, FIRST_SEEN)
    assert [s.subject for s in suspects] == ["Show totals in cents", "Let load return None for a missing order"]
    best = suspects[0]
    assert best.pr_number == 477 and best.author == "Priya" and best.confidence == "likely"
    assert best.hours_before_first_seen == 50.0 and best.landed_at == FIRST_SEEN - timedelta(hours=50)
    assert best.lines == ["app/views.py:3"] and "order.total_cents" in best.hunk
    assert suspects[1].confidence == "possible" and suspects[1].lines == ["app/models.py:2"]
    assert suspects[0].score > suspects[1].score


def test_the_diff_shown_is_the_hunk_that_wrote_the_blamed_line_not_the_first_hunk_of_the_commit(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    body = [f"x{n} = {n}" for n in range(1, 81)]
    write(root, "app/report.py", body)
    commit(root, "Import", FIRST_SEEN - timedelta(days=900))
    changed = [*body]
    changed[4] = "x5 = compute_header()"  # a first hunk, far above
    changed[59] = "x60 = totals['net'] / totals['count']"  # the line the error is raised on
    write(root, "app/report.py", changed)
    sha = commit(root, "Report totals per line", FIRST_SEEN - timedelta(days=2))
    changed[59] = "    x60 = totals['net']/totals['count']"  # whitespace only since: blame looks through it
    write(root, "app/report.py", changed)
    commit(root, "Reformat", FIRST_SEEN - timedelta(days=1))
    host = LocalRepoHost(root)
    suspects, _ = suspect_commits(host, [("app/report.py", 60)], FIRST_SEEN)
    assert [s.sha for s in suspects] == [sha]
    assert "+x60 = totals['net'] / totals['count']" in suspects[0].hunk and "compute_header" not in suspects[0].hunk
    everything = host.hunk(sha, "app/report.py")  # with no line to look for, the whole diff of the file, as before
    assert "compute_header" in everything and "totals['count']" in everything


def test_a_patch_is_narrowed_to_the_hunks_that_add_a_blamed_text_and_is_whole_when_none_does() -> None:
    from types import SimpleNamespace

    from nightwatch.codehosts.github_blame import hunk_of_patch

    patch = "@@ -1,3 +1,3 @@\n a\n-b\n+b = 1\n c\n@@ -40,3 +40,3 @@ def f():\n d\n-e\n+e = load(pk)\n f"
    files = [SimpleNamespace(filename="app/x.py", previous_filename=None, patch=patch)]
    assert hunk_of_patch(files, "app/x.py", texts=["    e  =  load(pk)"]) == "@@ -40,3 +40,3 @@ def f():\n d\n-e\n+e = load(pk)\n f"
    assert hunk_of_patch(files, "app/x.py", texts=["not in the diff"]) == patch
    assert hunk_of_patch(files, "app/x.py", texts=["end", "}"]) == patch  # too short to name a line


def test_a_commit_that_landed_after_the_error_was_first_seen_is_not_its_cause(repo: Path) -> None:
    write(repo, "app/views.py", ["def show(request, pk):", "    order = load(pk)", "    return render(order.total_cents or 0)", ""])
    commit(repo, "Guard the total (#480)", FIRST_SEEN + timedelta(hours=1))
    suspects, notes = suspect_commits(LocalRepoHost(repo), FRAMES, FIRST_SEEN)
    assert [s.subject for s in suspects] == ["Let load return None for a missing order"]
    assert any("after the error was first seen" in n for n in notes)
    # Without a first-seen time the squash is a suspect, its number read from the subject
    latest, _ = suspect_commits(LocalRepoHost(repo), FRAMES, None)
    assert latest[0].pr_number == 480 and latest[0].hours_before_first_seen is None


def test_renames_whitespace_and_missing_files_give_fewer_suspects_never_a_failure(repo: Path) -> None:
    git(repo, "mv", "app/views.py", "app/order_views.py")
    write(repo, "app/order_views.py", ["def show(request, pk):", "    order = load(pk)", "    return render( order.total_cents )", ""])
    commit(repo, "Move the views", FIRST_SEEN - timedelta(hours=30))
    suspects, notes = suspect_commits(LocalRepoHost(repo), [("app/order_views.py", 3), ("app/gone.py", 9)], FIRST_SEEN)
    assert suspects[0].subject == "Show totals in cents"  # through the rename and a whitespace-only edit
    assert any("app/gone.py" in n for n in notes)


def test_a_commit_that_only_reformatted_the_lines_is_looked_through_and_said(repo: Path) -> None:
    write(repo, "app/views.py", ["def show(request, pk):", "    order = load(pk)  # the order, or None",
                                 '    return render(', '        order.total_cents,', '    )', ""])
    write(repo, "app/models.py", ["def load(pk):", "    row = find(pk) or None", "    return row", "", ""])
    commit(repo, "Format with black", FIRST_SEEN - timedelta(hours=20), author="Bot")
    suspects, notes = suspect_commits(LocalRepoHost(repo), FRAMES, FIRST_SEEN)
    assert [s.subject for s in suspects] == ["Show totals in cents", "Let load return None for a missing order"]
    assert suspects[0].author == "Priya" and any("only reformatted" in n for n in notes)
    write(repo, "app/views.py", ["def show(request, pk):", "    order = load(pk)", "    return render(order.total)", ""])
    commit(repo, "Back to totals", FIRST_SEEN - timedelta(hours=10), author="Sam")  # a change: blamed as one
    suspects, _ = suspect_commits(LocalRepoHost(repo), FRAMES, FIRST_SEEN)
    assert suspects[0].subject == "Back to totals"


def test_a_shallow_clone_says_its_history_stops(repo: Path, tmp_path: Path) -> None:
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)], check=True, capture_output=True)
    suspects, notes = suspect_commits(LocalRepoHost(shallow), FRAMES, FIRST_SEEN)
    assert suspects == [] and any("shallow" in n for n in notes)


def test_porcelain_repeats_a_commits_details_once() -> None:
    sha = "a" * 40
    text = (f"{sha} 3 3 2\nauthor Priya\nauthor-time 1700000000\ncommitter-time 1700000100\nsummary Fix it\n"
            f"filename app/x.py\n\tline three\n{sha} 4 4\nfilename app/x.py\n\tline four\n")
    lines = parse_porcelain(text)
    assert [(b.line, b.author, b.summary) for b in lines] == [(3, "Priya", "Fix it"), (4, "Priya", "Fix it")]
    assert lines[0].committed_at == datetime.fromtimestamp(1700000100, tz=timezone.utc)


def test_commit_text_is_inert_in_the_issue_and_in_slack() -> None:
    hostile = SuspectCommit(sha="b" * 40, subject="@acme/oncall see https://evil.example/x \u202e", author="<!channel> Eve",
                            pr_number=12, lines=["app/x.py:3"], why="last changed the top frame's line",
                            hours_before_first_seen=5, confidence="likely")
    result = ErrorAnalysisResult(run_id="r", error=ErrorGroup(error_class="KeyError", transaction="t", message="m"),
                                 suspect_commits=[hostile])
    body = issue_body(result, "r", demo=False)
    assert "## Why now: suspect commits" in body and "introduced by `bbbbbbbbbbbb`" in body
    assert "@acme/oncall" not in body and "https://evil.example" not in body and "\u202e" not in body
    report = RunReport(run_id="r", started_at=FIRST_SEEN, window=Window(start=FIRST_SEEN - timedelta(days=1), end=FIRST_SEEN),
                       results=[result])
    text = str(report_blocks(report))
    assert "introduced by" in text and "<!channel>" not in text


def test_a_commit_subject_cannot_forge_porcelain_lines_or_crash_the_blame(repo: Path) -> None:
    """A subject holding U+2028 (which str.splitlines takes for a line end, git does not) cannot start a header of its
    own: not a date no datetime can hold, not an entry blaming the line on someone else's commit."""
    victim = git(repo, "rev-parse", "HEAD~1").strip()
    forged = (f"Tidy\u2028committer-time 253402300800\u2028\tx\u2028{victim} 3 3 1\u2028author Victor Victim"
              "\u2028summary Refactor payments")
    write(repo, "app/views.py", ["def show(request, pk):", "    order = load(pk)", "    return render(order.total_cents + 0)", ""])
    attacker = commit(repo, forged, FIRST_SEEN - timedelta(hours=20), author="Mallory")
    suspects, _ = suspect_commits(LocalRepoHost(repo), [("app/views.py", 3)], FIRST_SEEN)
    assert [(s.sha, s.author) for s in suspects] == [(attacker, "Mallory")]
    assert suspects[0].subject.startswith("Tidy") and "\u2028" not in suspects[0].subject  # stored on one line


def test_a_subject_and_author_are_stored_printable(repo: Path) -> None:
    write(repo, "app/views.py", ["def show(request, pk):", "    order = load(pk)", "    return render(order.total_cents * 1)", ""])
    commit(repo, "Fix \x1b[2J\x1b[31mtotals\x1b[0m\x07 token=ghp_abcdefghijklmnopqrstuvwxyz0123", FIRST_SEEN - timedelta(hours=3),
           author="Eve \x1b]8;;https://evil.example\x07link")
    suspect = suspect_commits(LocalRepoHost(repo), [("app/views.py", 3)], FIRST_SEEN)[0][0]
    assert "\x1b" not in suspect.subject + suspect.author and "\x07" not in suspect.subject + suspect.author
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123" not in suspect.subject and suspect.subject.startswith("Fix")


@pytest.mark.parametrize("subject, date", [
    ("Fix the total (#" + "9" * 5000 + ")", None),  # a squash number past int()'s digit limit
    ("Fix the total", "@253402300800 +0000"),  # dated after the year 9999
    ("Fix the total", "@1763000000 +9959"),  # a zone git accepts and Python's ISO parser does not
], ids=["squash-number", "year-10000", "zone-9959"])
def test_a_commit_no_date_or_number_can_hold_gives_a_suspect_never_a_failed_step(repo: Path, subject: str,
                                                                                  date: str | None) -> None:
    write(repo, "app/views.py", ["def show(request, pk):", "    order = load(pk)", "    return render(order.total_cents + 1)", ""])
    git(repo, "add", "-A")
    env = {**os.environ, "GIT_AUTHOR_NAME": "Eve", "GIT_AUTHOR_EMAIL": "e@example.com", "GIT_COMMITTER_NAME": "Eve",
           "GIT_COMMITTER_EMAIL": "e@example.com",
           "GIT_AUTHOR_DATE": date or (FIRST_SEEN - timedelta(hours=5)).isoformat(),
           "GIT_COMMITTER_DATE": date or (FIRST_SEEN - timedelta(hours=5)).isoformat()}
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", subject], check=True, capture_output=True, env=env)
    suspects, _ = suspect_commits(LocalRepoHost(repo), [("app/views.py", 3)], FIRST_SEEN)
    assert suspects and suspects[0].author == "Eve" and suspects[0].pr_number is None


def test_a_secret_a_commit_removed_or_added_is_redacted_in_its_hunk(repo: Path) -> None:
    write(repo, "config/settings.py", ["import os", "DB_PASSWORD = 'hunter2-prod'", "STRIPE_SECRET=whsec_live_4c9f2a7e", ""])
    write(repo, "config/database.yml", ["production:", "  host: db", "  user: app", ""])
    commit(repo, "Settings", FIRST_SEEN - timedelta(days=30))
    write(repo, "config/settings.py", ["import os", "DB_PASSWORD = os.environ['DB_PASSWORD']", "DB = connect(DB_PASSWORD)", ""])
    write(repo, "config/database.yml", ["production:", "  host: db", "  password: hunter2-prod", "  user: app", ""])
    commit(repo, "Move the secrets to the environment", FIRST_SEEN - timedelta(hours=6))
    host = LocalRepoHost(repo)
    for frame in (("config/settings.py", 3), ("config/database.yml", 3)):
        suspects, _ = suspect_commits(host, [frame], FIRST_SEEN)
        assert suspects[0].subject == "Move the secrets to the environment", frame
        assert "hunter2-prod" not in suspects[0].hunk and "whsec_live_4c9f2a7e" not in suspects[0].hunk, suspects[0].hunk
        assert "[REDACTED]" in suspects[0].hunk


def test_an_origin_the_host_refuses_is_a_note_not_a_failure(repo: Path) -> None:
    suspects, notes = suspect_commits(LocalRepoHost(repo), [("app/views.py", 3), ("../etc/passwd", 1), (".git/config", 2)],
                                      FIRST_SEEN)
    assert suspects and suspects[0].subject == "Show totals in cents"
    assert any("../etc/passwd" in n for n in notes) and any(".git/config" in n for n in notes)


# The demo night, with no model: each planted bug's top suspect is the pull request its answer key says introduced it
@pytest.mark.slow  # the demo's whole history, blamed by git for every planted bug
def test_every_demo_bug_whose_lines_history_changed_names_the_pull_request_that_introduced_it(tmp_path: Path) -> None:
    import yaml

    from nightwatch.evaluation import _is, exported_at, load_cases, prepare_repository
    from nightwatch.runtime import DEMO_DIR
    from nightwatch.sources.export_file import ExportFileSource
    from nightwatch.trace_paths import PathMap, locate_frames

    bugs = {b["id"]: b for b in yaml.safe_load((DEMO_DIR / "expected.yml").read_text(encoding="utf-8"))["bugs"]}
    cases = [c for c in load_cases(Path(__file__).resolve().parents[2] / "evals") if c.source.demo]
    named, checked = 0, 0
    for case in cases:
        repo = prepare_repository(case, tmp_path / case.id / "repo")
        host = LocalRepoHost(repo)
        moment = exported_at(case)
        source = ExportFileSource(case.export)
        window = Window(start=moment - timedelta(days=30), end=moment)
        error = next(e for e in source.fetch_errors(window).errors if _is(e.error_class, e.transaction, case.error))
        traces = locate_frames(source.fetch_traces(error, window), PathMap.of_host(host))
        suspects, notes = suspect_commits(host, blamable_frames(traces), error.first_seen)
        bug = bugs[case.id.removeprefix("demo-")]
        checked += 1
        if bug["introduced_by"] is None:
            assert all(s.confidence == "possible" for s in suspects), case.id  # never "likely" where no PR introduced it
        elif bug["line_added_by_pr"]:  # the pull request wrote a line of the stack: it is named first
            assert suspects and suspects[0].pr_number == bug["introduced_by"], (case.id, [(s.pr_number, s.lines) for s in suspects], notes)
            named += 1
    assert checked == len(cases) >= 9 and named >= 5


def test_the_knowledge_document_keeps_who_introduced_it(tmp_path: Path) -> None:
    from nightwatch.knowledge_store.documents import read_doc, write_error_doc

    from nightwatch.models import Analysis

    suspect = SuspectCommit(sha="c" * 40, author="Priya", pr_number=477, landed_at=FIRST_SEEN - timedelta(hours=50),
                            hours_before_first_seen=50, confidence="likely")
    result = ErrorAnalysisResult(run_id="r", error=ErrorGroup(error_class="KeyError", transaction="t", message="m"),
                                 analysis=Analysis(title="t", reasoning="r", root_cause="c", has_fix=False, confidence="medium"),
                                 suspect_commits=[suspect])
    meta, _ = read_doc(write_error_doc(result, tmp_path, detected_at=FIRST_SEEN))
    assert meta["introduced_by"] == "cccccccccccc (PR #477, by Priya, landed 2026-11-18 10:00 UTC; likely, first seen 50 h after)"


def test_the_lines_a_fix_changes_are_blamed_as_the_lines_the_analysis_would_change(repo: Path) -> None:
    """Not the crash line: the lines the fix removes or replaces (for an insertion, the line before it), at HEAD."""
    host = LocalRepoHost(repo)
    fix = Analysis(title="t", reasoning="r", root_cause="c", has_fix=True, confidence="medium", file_changes=[
        FileChange(path="app/models.py", before="    row = find(pk) or None\n", after="    row = find(pk)\n    if row is None:\n        raise NotFound(pk)\n")])
    assert lines_it_changes(fix, host) == [("app/models.py", 2)]
    suspects, _ = suspect_commits(host, [("app/views.py", 3)], FIRST_SEEN, fix_lines=lines_it_changes(fix, host))
    assert "Let load return None for a missing order" in [s.subject for s in suspects]
    by_fix = next(s for s in suspects if s.subject.startswith("Let load"))
    assert by_fix.why == "last changed a line the analysis says the error starts at or its fix changes"
    broken = fix.model_copy(update={"file_changes": [FileChange(path="app/models.py", before="not in the file", after="x")]})
    assert lines_it_changes(broken, host) == []  # an invalid fix names no line


def test_changed_lines_are_the_old_lines_replaced_or_removed_and_the_line_before_an_insertion() -> None:
    old = "a\nb\nc\nd\n"
    assert changed_lines(old, "a\nB\nc\nd\n") == [2]
    assert changed_lines(old, "a\nc\nd\n") == [2]
    assert changed_lines(old, "a\nb\nnew\nc\nd\n") == [2]
    assert changed_lines(old, "new\na\nb\nc\nd\n") == [1]
    assert changed_lines(old, old) == []


def test_a_line_in_the_stack_that_the_analysis_also_names_counts_once(repo: Path) -> None:
    host = LocalRepoHost(repo)
    named, _ = suspect_commits(host, FRAMES, FIRST_SEEN, fix_lines=[("app/models.py", 2)])
    alone, _ = suspect_commits(host, [FRAMES[1]], FIRST_SEEN)
    old = next(s for s in named if s.subject.startswith("Let load"))
    assert old.lines == ["app/models.py:2"] and old.score == alone[0].score  # the top frame's weight, not 1 + 1/2


def test_the_deploy_that_shipped_the_suspect_times_it_and_is_named(repo: Path) -> None:
    """Change tracking's markers: the first one after the merge whose commit contains the change shipped it; one whose
    commit does not is passed over; a change older than every marker read is timed by its landing."""
    host = LocalRepoHost(repo)
    merge, before = git(repo, "rev-parse", "HEAD").strip(), git(repo, "rev-parse", "HEAD^1").strip()
    deploys = [Deploy(at=FIRST_SEEN - timedelta(hours=70), commit=before, version="v1.7.0"),
               Deploy(at=FIRST_SEEN - timedelta(hours=30), commit=before, version="v1.8.0"),  # rebuilt without the change
               Deploy(at=FIRST_SEEN - timedelta(hours=6), commit=merge, version="v1.9.0")]
    suspects, _ = suspect_commits(host, FRAMES, FIRST_SEEN, deploys=deploys)
    best, old = suspects
    assert best.subject == "Show totals in cents" and best.deploy == "v1.9.0" and best.deployed_at == FIRST_SEEN - timedelta(hours=6)
    assert best.hours_before_first_seen == 6.0 and best.confidence == "likely"
    assert old.deploy == "" and old.deployed_at is None and old.hours_before_first_seen == 300 * 24
    assert old.pr_number is None  # pushed to main before PR #477 merged: that merge did not bring it
    assert host.contains(merge, best.sha) is True and host.contains(before, best.sha) is False
    assert host.contains("0" * 40, best.sha) is None  # a marker's commit this history does not have
    unknown = [Deploy(at=FIRST_SEEN - timedelta(hours=70)), Deploy(at=FIRST_SEEN - timedelta(hours=20), commit="0" * 40)]
    by_time, _ = suspect_commits(host, FRAMES, FIRST_SEEN, deploys=unknown)
    assert by_time[0].deploy == "0" * 12 and by_time[0].hours_before_first_seen == 20.0


def test_the_issue_slack_and_knowledge_say_after_which_deploy_it_was_first_seen() -> None:
    s = SuspectCommit(sha="a" * 40, author="Priya", pr_number=477, hours_before_first_seen=6.0, confidence="likely",
                      deploy="v1.9.0 `<!channel>`", deployed_at=FIRST_SEEN)
    line = suspect_line(s)
    assert "first seen 6 h after deploy `v1.9.0 '<!channel>'`" in line
    landed = suspect_line(s.model_copy(update={"deploy": "", "deployed_at": None}))
    assert "first seen 6 h after it landed" in landed


@pytest.mark.parametrize(("hours", "said"), [(6.0, "6 h"), (71.4, "71 h"), (72.0, "3 days"), (300 * 24, "300 days"),
                                             (729 * 24, "729 days"), (30294.0, "3.5 years")])
def test_how_long_before_it_was_first_seen_reads_in_hours_days_or_years(hours: float, said: str) -> None:
    s = SuspectCommit(sha="b" * 40, author="Kevin", hours_before_first_seen=hours, landed_at=FIRST_SEEN)
    result = ErrorAnalysisResult(run_id="r", error=ErrorGroup(error_class="KeyError", transaction="t", message="m"),
                                 suspect_commits=[s])
    assert s.first_seen_after == said
    assert f"first seen {said} after it landed" in suspect_line(s)
    assert f"first seen {said} after" in _introduced_by(result) and f"first seen {said} after" in _suspect(result)
    assert SuspectCommit(sha="c" * 40).first_seen_after == "" and "first seen" not in suspect_line(SuspectCommit(sha="c" * 40))


def test_a_check_that_let_a_duplicate_through_names_who_wrote_its_conditions(tmp_path: Path) -> None:
    """CTFd's real history: the admin's own email got past `validate_email`, whose lookup line came from 2.0.0; the
    conditions that read the lookup's result are where the current-user exemption was written (#959) and the create
    path split off (#862). With the analysis' origin at the lookup, both are named after the lookup's own commit."""
    from nightwatch.evaluation import _original_commit, load_case, prepare_repository

    case = load_case(Path(__file__).resolve().parents[2] / "evals" / "ctfd-users-create-admin-email")
    repo = prepare_repository(case, tmp_path / "repo")
    origin = ("CTFd/schemas/users.py", 109)  # existing_user = Users.query.filter_by(email=email).first()
    frames = [(case.crash.file, case.crash.line)]
    alone, _ = suspect_commits(LocalRepoHost(repo), frames, None, fix_lines=[origin])
    with_conditions, _ = suspect_commits(LocalRepoHost(repo), frames, None, fix_lines=[origin], origin=origin)
    assert [s.subject for s in alone] == ["2.0.0 (#741)"]
    assert [s.subject for s in with_conditions] == ["2.0.0 (#741)", "Some 2.1.0a1 bugfixes (#959)",
                                                   "Fix creating users from the admin panel while name changes disabled (#862)"]
    assert {_original_commit(repo, s.sha) for s in with_conditions[1:]} <= set(case.blamed_by)  # the fix's own lines' commits
    assert "a condition that decides on one" in with_conditions[1].why
