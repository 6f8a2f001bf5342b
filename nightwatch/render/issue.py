"""Markdown for GitHub: the issue for one error, the "new occurrence" comment, the draft PR body.

Everything that came from production or from the model is redacted and defused before it is shown:
secrets become [REDACTED], `<!--` cannot forge NightWatch's hidden markers (they drive dedup), and
@mentions outside code blocks cannot ping people.
"""

from __future__ import annotations

import posixpath
import re

from nightwatch.fix import FixRejected, ValidatedFix, checked_path
from nightwatch.models import SETUP_LABEL, ErrorAnalysisResult, FileChange, FixGate, SuspectCommit
from nightwatch.redact import clean, redact_diff
from nightwatch.render.neutral import no_links, no_mentions, no_references, outside_code, visible
from nightwatch.verify.reproduce import without_library_frames

TITLE_LIMIT = 120
BODY_LIMIT = 60_000  # GitHub refuses bodies over 65,536 characters
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_LANGUAGES = {"rb": "ruby", "py": "python", "js": "javascript", "ts": "typescript", "yml": "yaml", "erb": "erb"}


def fingerprint_marker(fingerprint: str) -> str:
    return f"nightwatch:fingerprint={fingerprint}"


def run_marker(run_id: str) -> str:
    return f"nightwatch:run={run_id}"


def hidden(marker: str) -> str:
    """A marker as an HTML comment: invisible on GitHub, searchable in the body."""
    return f"<!-- {marker} -->"


_RUN_IN_MARKER = re.compile(re.escape(hidden(run_marker("@"))).replace("@", r"(\S+)"))


def marked_run(text: str | None) -> str | None:
    """The night a hidden run marker in `text` names (the first one), or None."""
    match = _RUN_IN_MARKER.search(text or "")
    return match.group(1) if match else None


# safety ---------------------------------------------------------------------------------------------
def safe(text: str | None, limit: int = 4_000) -> str:
    """Redacted, printable, capped, and unable to forge a hidden marker."""
    cleaned, _ = clean(text or "", limit)
    return visible(cleaned).replace("<!--", "<!\u2060--")


def prose(text: str | None, limit: int = 4_000) -> str:
    """Safe text for outside code blocks: @mentions, links and images neutralised too, and angle brackets shown as
    text: GitHub would take `<img src=…>` for an image and hide a Python repr such as `<User: alice>` as a tag."""
    return outside_code(safe(text, limit), _inert)


def _inert(text: str) -> str:
    """Prose outside code spans: shown as written (`&#64;` stays those five characters, `<b>` is no tag), and nothing
    in it mentions, links or references."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return no_links(no_references(no_mentions(escaped)))


def code(text: str) -> str:
    """Inline code that cannot be broken out of."""
    return f"`{safe(text, 300).replace('`', chr(39))}`"


def fenced(text: str, language: str = "") -> str:
    """A fenced block whose fence is longer than any backtick run inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def language_of(path: str) -> str:
    ext = posixpath.splitext(path)[1].lstrip(".").lower()
    return _LANGUAGES.get(ext, ext)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _capped(body: str) -> str:
    if len(body) <= BODY_LIMIT:
        return body
    return body[:BODY_LIMIT] + "\n\n… [cut to fit GitHub's size limit]\n"


# issue --------------------------------------------------------------------------------------------
def issue_title(result: ErrorAnalysisResult) -> str:
    """`[NightWatch] <defect>`, one line, at most 120 characters."""
    named = result.analysis.title if result.analysis and result.analysis.title.strip() else result.error.label
    title = f"[NightWatch] {_one_line(safe(named, 1_000))}"
    return title if len(title) <= TITLE_LIMIT else title[: TITLE_LIMIT - 1].rstrip() + "…"


def issue_body(result: ErrorAnalysisResult, run_id: str, demo: bool) -> str:
    sections = [
        _demo_banner() if demo else "",
        _error_section(result),
        _cause_section(result),
        _changes_section(result.analysis.file_changes if result.analysis else []),
        _checks_section(result.fix_gate, heading="## Fix checks"),
        _verification_section(result),
        _next_steps_section(result),
        _release_section(result),
        _suspects_section(result),
        _prs_section(result),
        _confidence_section(result),
        _footnote(result, run_id),
    ]
    markers = "\n".join([hidden(fingerprint_marker(result.fingerprint)), hidden(run_marker(run_id))])
    return _capped("\n\n".join(s for s in sections if s)) + "\n\n" + markers + "\n"


def _demo_banner() -> str:
    return (
        "> [!WARNING]\n> **Demo data.** This issue was filed from NightWatch's bundled demo errors and demo "
        "application, not from production."
    )


def _error_section(result: ErrorAnalysisResult) -> str:
    error = result.error
    blocks = ["## Error", f"**{code(error.error_class)}** in {code(error.transaction)}"]
    if error.message:
        blocks.append(fenced(safe(error.message, 2_000)))
    seen = lambda when: f"{when:%Y-%m-%d %H:%M} UTC" if when else "—"  # noqa: E731
    app = _one_line(prose(error.app_name, 100)).replace("|", "/") or "—"
    blocks.append(
        "| Occurrences | First seen | Last seen | App | HTTP status |\n|---|---|---|---|---|\n"
        f"| {error.occurrences:,} | {seen(error.first_seen)} | {seen(error.last_seen)} | {app} | {error.http_status or '—'} |"
    )
    return "\n\n".join(blocks)


def _cause_section(result: ErrorAnalysisResult) -> str:
    analysis, verdict = result.analysis, result.verdict
    root = analysis.root_cause if analysis else (verdict.likely_root_cause if verdict else "")
    lines = ["## Root cause", prose(root) or "_Not determined._"]
    if result.failure:
        lines.append(f"> Analysis incomplete: {_one_line(prose(result.failure, 500))}")
    if analysis and analysis.reasoning.strip():
        lines += ["## Reasoning", prose(analysis.reasoning, 8_000)]
    return "\n\n".join(lines)


def _changes_section(changes: list[FileChange]) -> str:
    if not changes:
        return ""
    blocks = ["## Proposed changes"]
    for change in changes:
        refused = _refusal(change.path)
        head = f"### {code(change.path)} ({change.action})" + (" — **refused, not part of any PR**" if refused else "")
        blocks.append(head + (f"\n> {prose(refused, 300)}" if refused else "")
                      + (f"\n{prose(change.description, 1_000)}" if change.description else ""))
        excerpt = _change_excerpt(change)
        if excerpt:
            blocks.append(fenced(excerpt, "diff"))
    return "\n\n".join(blocks)


_CHECK_MARK = {"passed": "passed", "failed": "**failed**", "not_checked": "not checked"}


def _checks_section(gate: FixGate | None, heading: str) -> str:
    """Each check of the fix gate; for an issue, whether the change can become a draft PR and why not."""
    if gate is None or not gate.checks:
        return ""
    lines = [heading]
    if heading.startswith("## Fix") and not gate.passed:
        lines.append("> This change is **not opened as a draft PR**: " + _one_line(prose(gate.refusal, 1_500)))
    lines += [f"- {_CHECK_MARK[c.status]}: {code(c.name)}: {_one_line(prose(c.detail, 400))}" for c in gate.checks]
    return "\n".join(lines)


def _verification_section(result: ErrorAnalysisResult, reproduction: bool = True) -> str:
    """The regression test, each command it ran with its outcome and time, and (for an issue) the failing run's output
    as the reproduction. Output was capped and redacted in the sandbox; it is cleaned again here like any text."""
    v = result.verification
    if v is None:
        return ""
    lines = ["## Verification", f"**{v.status}**" + (f": {prose(v.reason, 1_000)}" if v.reason else "")]
    test = result.analysis.regression_test if result.analysis else None
    if test is not None:
        lines.append(f"Regression test {code(test.test or test.path)}:\n\n" + fenced(safe(test.content, 6_000), language_of(test.path)))
    if v.runs:
        lines.append("\n".join(f"- {prose(r.label, 200)}: {code(r.command)}: **{prose(r.outcome, 200)}** ({r.seconds:g} s)"
                               for r in v.runs))
    setup = next((r for r in v.runs if r.label == SETUP_LABEL and r.output), None)
    if setup is not None:
        lines.append("Why the test environment could not be made (the set-up's last lines):\n\n" + fenced(safe(setup.output, 6_000)))
    failing = next((r for r in v.runs if r.outcome.startswith("failed")), None)
    if reproduction and failing is not None and failing.output:
        tail = without_library_frames(failing.output)[-3_000:]
        lines.append(f"Reproduction ({prose(failing.label, 200)}):\n\n" + fenced(safe(tail, 3_500)))
    return "\n\n".join(lines)


def _refusal(path: str) -> str | None:
    """Why NightWatch will never make this change itself (CI, secrets, migrations…), if it will not."""
    try:
        checked_path(path)
    except FixRejected as exc:
        return str(exc)
    return None


def _change_excerpt(change: FileChange) -> str:
    removed = [f"-{line}" for line in safe(change.before, 3_000).splitlines()] if change.before else []
    added = [f"+{line}" for line in safe(change.after, 3_000).splitlines()] if change.after else []
    return "\n".join(removed + added)


def _next_steps_section(result: ErrorAnalysisResult) -> str:
    steps = result.analysis.suggested_next_steps if result.analysis else []
    return "## Next steps\n" + "\n".join(f"- {_one_line(prose(s, 500))}" for s in steps) if steps else ""


def suspect_line(s: SuspectCommit) -> str:
    """"introduced by <sha> (PR #n, author, merged at), first seen 40 h (300 days, 3.5 years) after deploy X" (or after
    it landed, where no deploy marker shipped it): commit and deploy text is untrusted and inert."""
    pr = f"PR #{s.pr_number}, " if s.pr_number else ""
    when = f", landed {s.landed_at:%Y-%m-%d %H:%M} UTC" if s.landed_at else ""
    since = f"deploy {code(s.deploy[:80])}" if s.deploy else "it landed"
    after = f"; first seen {s.first_seen_after} after {since}" if s.first_seen_after else ""
    return (f"{s.confidence}: introduced by {code(s.sha[:12])} ({pr}by {prose(s.author, 80) or 'unknown'}{when}){after}; "
            f"{prose(s.why, 200)}")


def _suspects_section(result: ErrorAnalysisResult) -> str:
    if not result.suspect_commits:
        return ""
    lines = ["## Why now: suspect commits"]
    for s in result.suspect_commits:
        lines.append(f"- {suspect_line(s)}: {_one_line(prose(s.subject, 200))} ({', '.join(code(x) for x in s.lines[:4])})")
    return "\n".join(lines)


def _release_section(result: ErrorAnalysisResult) -> str:
    """"First seen in release X, deployed with N commits since W", and those commits (their text untrusted, inert)."""
    window = result.release_window
    if window is None:
        return ""
    lines = [f"## Release\n{_one_line(prose(window.line, 300))}"]
    commits, more = window.shown()
    if commits:
        lines.append("\n".join(f"- {code(c.split(' ', 1)[0][:12])} {_one_line(prose(c.partition(' ')[2], 120))}"
                               for c in commits))
        if more > 0:
            lines.append(f"- and {more} more")
    return "\n".join(lines)


def _prs_section(result: ErrorAnalysisResult) -> str:
    if not result.correlated_prs:
        return ""
    lines = ["## Recently merged pull requests touching these files"]
    for pr in result.correlated_prs:
        when = f", merged {pr.merged_at:%Y-%m-%d %H:%M} UTC" if pr.merged_at else ""
        files = ", ".join(code(f) for f in (pr.overlap or pr.files)[:5])
        lines.append(f"- #{pr.number} {_one_line(prose(pr.title, 200))} (by {prose(pr.author, 60) or 'unknown'}{when}): {files}")
    return "\n".join(lines)


def _confidence_section(result: ErrorAnalysisResult) -> str:
    confidence = result.analysis.confidence if result.analysis else (result.verdict.confidence if result.verdict else "low")
    line = f"## Confidence\n**{confidence}**"
    if result.verdict:
        v = result.verdict
        line += f" · severity {v.severity} · {v.category.replace('_', ' ')} · {v.complexity}"
    return line


def _footnote(result: ErrorAnalysisResult, run_id: str) -> str:
    parts = [f"NightWatch run {code(run_id)}", f"source: {result.source}"]
    if result.agent:
        parts.append(f"agent {code(result.agent)}")
    if result.model:
        parts.append(f"model {code(result.model)}")
    if result.iterations:
        parts.append(f"{result.iterations} iterations")
    if result.tokens.total:
        parts.append(f"{result.tokens.total:,} tokens")
    if result.cost_usd:
        parts.append(f"${result.cost_usd:.4f}")
    return "---\n<sub>" + " · ".join(parts) + "</sub>"


# comments and pull requests ----------------------------------------------------------------------
def occurrence_comment(result: ErrorAnalysisResult, run_id: str, issue_state: str = "open") -> str:
    """The comment left on an existing issue when the error shows up again; carries the run marker."""
    error = result.error
    lines = [f"**New occurrence** seen by NightWatch run {code(run_id)}: {error.occurrences:,} occurrences"
             + (f", last at {error.last_seen:%Y-%m-%d %H:%M} UTC." if error.last_seen else ".")]
    if result.regression:
        lines.insert(0, f"**Regression:** {_one_line(prose(result.regression, 500))}. NightWatch reopened this issue"
                        " and investigated the error again." if issue_state == "closed" else
                     f"**Regression:** {_one_line(prose(result.regression, 500))}.")
    elif result.still_regressing:
        lines.append(f"{_one_line(prose(result.still_regressing, 200)).capitalize()}: the fix that merged has not held.")
    elif issue_state == "closed":
        lines.append(_closed_issue_line(result))
    analysis = result.analysis
    if result.failed:
        lines.append(f"**Tonight's analysis failed:** {_one_line(prose(result.failure or '', 500))}. "
                     "The next run of this window tries again.")
    elif analysis and analysis.root_cause:
        lines.append(f"Latest analysis ({analysis.confidence} confidence): {_one_line(prose(analysis.root_cause, 1_000))}")
    return "\n\n".join(lines) + "\n\n" + hidden(run_marker(run_id)) + "\n"


def _closed_issue_line(result: ErrorAnalysisResult) -> str:
    """What a recurrence means for a closed issue, by how it was closed: a rejected one (won't fix, not planned) is not
    a regression and stays closed; one closed as fixed may not have held."""
    states = {p.fix_state for p in result.prior_analyses if p.fingerprint == result.fingerprint}
    if "rejected" in states:
        return ("This issue was closed as won't fix, and the error happened again; NightWatch leaves it closed. "
                "Reopen it if the error should be fixed after all.")
    return "This issue is closed, but the error happened again. Reopen it if the fix did not hold."


def pr_title(result: ErrorAnalysisResult) -> str:
    named = result.analysis.title if result.analysis and result.analysis.title.strip() else result.error.label
    title = f"[NightWatch] Fix: {_one_line(safe(named, 1_000))}"
    return title if len(title) <= TITLE_LIMIT else title[: TITLE_LIMIT - 1].rstrip() + "…"


def pr_body(result: ErrorAnalysisResult, fix: ValidatedFix, issue_number: int | None) -> str:
    """The draft PR's description: why, what changes, the diff, and a clear review warning."""
    analysis = result.analysis
    intro = f"Draft fix for {code(result.error.error_class)} in {code(result.error.transaction)}"
    intro += f" ({result.error.occurrences:,} occurrences)." + (f"\n\nRefs #{issue_number}" if issue_number else "")
    verified = result.verification is not None and result.verification.status == "verified"
    sections = [
        ("> [!IMPORTANT]\n> Proposed automatically by NightWatch. Its regression test failed as production did without "
         "the fix and passed with it, in a sandbox (below). Review it, and mark it ready only if it is right." if verified else
         "> [!IMPORTANT]\n> Proposed automatically by NightWatch and not verified by a test. "
         "Review it, run the tests, and mark it ready only if it is right."),
        intro,
        "## Root cause\n" + (prose(analysis.root_cause) if analysis else "_Not determined._"),
        "## Changes\n" + "\n".join(_change_line(c) for c in (analysis.file_changes if analysis else [])),
        "## Diff\n" + fenced(safe(redact_diff(fix.diff), 20_000), "diff"),
        f"## Confidence\n**{analysis.confidence if analysis else 'low'}**",
        _checks_section(result.fix_gate, heading="## Checks") or "## Checks\n_No checks were recorded._",
        _verification_section(result, reproduction=False),
    ]
    return _capped("\n\n".join(sections)) + "\n\n" + hidden(fingerprint_marker(result.fingerprint)) + "\n"


def _change_line(change: FileChange) -> str:
    described = f": {_one_line(prose(change.description, 300))}" if change.description else ""
    return f"- {code(change.path)} ({change.action}){described}"
