"""Cross-error and cross-run patterns, and ignore-rule suggestions (step 13).

Pure functions over data: the night's results and the history of earlier analyses (index entries
or `analyses` rows, each a dict with error_class, transaction, fingerprint, has_fix, fix_confidence,
occurrences and run_count). Nothing here reads files, so the knowledge store and the tests feed it
the same way. Strategies:

1. the same root cause behind several different errors of this night  -> systemic_issue
2. an error class seen 3+ times across runs                            -> recurring_error
3. several error classes clustering in one module (shared tags)        -> systemic_issue
4. errors that are transient (network, timeouts, external services)    -> transient_noise

Suggestions never modify ignore rules: they are proposals for a human, and never repeat a rule
that already covers the errors.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

import regex
import yaml

from nightwatch.ignore import MATCH_CHARS, MATCH_TIMEOUT_S
from nightwatch.models import DetectedPattern, ErrorAnalysisResult, IgnoreSuggestion
from nightwatch.redact import redact

RECURRING_THRESHOLD = 3
CLUSTER_MIN_ERRORS = 3
ROOT_CAUSE_SIMILARITY = 0.6
NOISE_WORDS = frozenset(
    {"controller", "controllers", "action", "perform", "othertransaction", "webtransaction", "sidekiqjob"}
    | {"activejob", "job", "uri", "rack", "nested", "web", "api", "function", "call"}
)
TRANSIENT_MARKERS = ("timeout", "connection", "ssl", "econn", "epipe", "network", "unavailable", "socket")
_STOPWORDS = frozenset("the a an of in to and or is are was be when with for on by at it its this that not no".split())
_TAG_SPLIT = re.compile(r"::|[/#_\s.]+")
_WORD = re.compile(r"[a-z0-9]+")


def transaction_words(transaction: str) -> list[str]:
    """Meaningful words of a transaction in order (`Controller/orders/update` -> orders, update)."""
    return [w for w in _TAG_SPLIT.split(transaction.lower()) if _is_tag(w)]


def extract_tags(error_class: str, transaction: str) -> set[str]:
    """Search tags: split class and transaction on ::, /, #, _; lowercase; drop noise and numbers."""
    return {w for w in _TAG_SPLIT.split(error_class.lower()) if _is_tag(w)} | set(transaction_words(transaction))


def _is_tag(word: str) -> bool:
    return len(word) >= 2 and not word.isdigit() and "<" not in word and word not in NOISE_WORDS


def module_of(transaction: str) -> str:
    """The module a transaction belongs to: its first meaningful word (`orders`, `ordersyncjob`)."""
    words = transaction_words(transaction)
    return words[0] if words else transaction


def slugify(text: str, limit: int = 60) -> str:
    """Lowercase, non-alphanumerics to hyphens, at most `limit` characters."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].rstrip("-") or "untitled"


def is_transient(result: ErrorAnalysisResult) -> bool:
    """Triage called it transient, or nothing is fixable and the class names a network failure."""
    verdict = result.verdict
    if verdict and (verdict.route == "transient" or verdict.category == "transient"):
        return True
    fixable = result.analysis is not None and result.analysis.has_fix
    return not fixable and has_transient_marker(result.error.error_class)


def has_transient_marker(error_class: str) -> bool:
    lowered = error_class.lower()
    return any(marker in lowered for marker in TRANSIENT_MARKERS)


def appearances(entry: dict) -> int:
    """How many runs a history entry stands for (index entries carry run_count, rows count once)."""
    runs = entry.get("runs")
    return int(entry.get("run_count") or (len(runs) if isinstance(runs, list) else 0) or 1)


# ---------------------------------------------------------------- detection


def detect_patterns(results: list[ErrorAnalysisResult], history: list[dict]) -> list[DetectedPattern]:
    """All four strategies; a pattern is reported only when this night's errors take part in it."""
    found = shared_root_causes(results) + recurring_classes(results, history)
    found += module_clusters(results, history) + transient_noise(results)
    unique: dict[str, DetectedPattern] = {}
    for pattern in found:
        unique.setdefault(pattern.title, pattern)
    return list(unique.values())


def shared_root_causes(results: list[ErrorAnalysisResult]) -> list[DetectedPattern]:
    """Different errors whose analyses name (nearly) the same root cause point at one defect."""
    patterns = []
    for cluster in _cluster_by_root_cause([r for r in results if r.analysis and r.analysis.root_cause]):
        if len({r.fingerprint for r in cluster}) < 2:
            continue
        classes = sorted({r.error.error_class for r in cluster})
        first = cluster[0].analysis
        assert first is not None  # only results with an analysis were clustered
        patterns.append(
            DetectedPattern(
                title=f"Shared root cause: {', '.join(classes)}"[:120],
                description=f"{len(cluster)} errors share one root cause: {redact(first.root_cause)}",
                error_classes=classes,
                modules=sorted({module_of(r.error.transaction) for r in cluster}),
                occurrences=sum(r.error.occurrences for r in cluster),
                suggestion="Fix the shared cause once; the individual issues should then close together.",
                pattern_type="systemic_issue",
            )
        )
    return patterns


def _cluster_by_root_cause(results: list[ErrorAnalysisResult]) -> list[list[ErrorAnalysisResult]]:
    clusters: list[tuple[set[str], list[ErrorAnalysisResult]]] = []
    for result in results:
        words = _words(result.analysis.root_cause)  # type: ignore[union-attr]
        home = next((members for seed, members in clusters if _jaccard(seed, words) >= ROOT_CAUSE_SIMILARITY), None)
        if home is None:
            clusters.append((words, [result]))
        else:
            home.append(result)
    return [members for _, members in clusters]


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOPWORDS}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def recurring_classes(results: list[ErrorAnalysisResult], history: list[dict]) -> list[DetectedPattern]:
    """An error class of this night that NightWatch has met RECURRING_THRESHOLD+ times over the runs."""
    patterns = []
    for error_class, entries in _entries_by_class(results, history).items():
        count = sum(appearances(e) for e in entries)
        if count < RECURRING_THRESHOLD:
            continue
        fixed = any(e.get("has_fix") for e in entries)
        patterns.append(
            DetectedPattern(
                title=f"Recurring {error_class}",
                description=f"{error_class} appeared {count} times over the runs, in {len(entries)} distinct errors.",
                error_classes=[error_class],
                modules=sorted({module_of(str(e.get("transaction", ""))) for e in entries}),
                occurrences=sum(int(e.get("occurrences") or 0) for e in entries),
                suggestion=(
                    "A fix was proposed before: check that it was merged and deployed before investigating again."
                    if fixed
                    else "No analysis found a fix: handle this failure explicitly or consider an ignore rule."
                ),
                pattern_type="recurring_error",
            )
        )
    return patterns


def module_clusters(results: list[ErrorAnalysisResult], history: list[dict]) -> list[DetectedPattern]:
    """Several distinct error classes concentrated in one module suggest a systemic weakness there."""
    by_module: dict[str, list[dict]] = defaultdict(list)
    for entries in _entries_by_class(results, history, all_history=True).values():
        for entry in entries:
            by_module[module_of(str(entry.get("transaction", "")))].append(entry)
    current = {module_of(r.error.transaction) for r in results}
    patterns = []
    for module, entries in sorted(by_module.items()):
        classes = sorted({str(e["error_class"]) for e in entries})
        if module not in current or len(entries) < CLUSTER_MIN_ERRORS or len(classes) < 2:
            continue
        patterns.append(
            DetectedPattern(
                title=f"Errors cluster in {module}",
                description=f"{len(entries)} distinct errors of {len(classes)} classes come from `{module}`.",
                error_classes=classes,
                modules=[module],
                occurrences=sum(int(e.get("occurrences") or 0) for e in entries),
                suggestion=f"Review `{module}` as a whole (input validation, error handling, tests).",
                pattern_type="systemic_issue",
            )
        )
    return patterns


def transient_noise(results: list[ErrorAnalysisResult]) -> list[DetectedPattern]:
    """Errors no code change can fix (network, timeouts, upstream outages) grouped as noise."""
    transient = [r for r in results if is_transient(r)]
    if len(transient) < 2:
        return []
    classes = sorted({r.error.error_class for r in transient})
    return [
        DetectedPattern(
            title="Transient errors from external services",
            description=f"{len(transient)} errors look transient (network, timeouts, upstream): {', '.join(classes)}.",
            error_classes=classes,
            modules=sorted({module_of(r.error.transaction) for r in transient}),
            occurrences=sum(r.error.occurrences for r in transient),
            suggestion="Add retries with backoff around the external calls, or ignore rules for accepted noise.",
            pattern_type="transient_noise",
        )
    ]


def _entries_by_class(
    results: list[ErrorAnalysisResult], history: list[dict], all_history: bool = False
) -> dict[str, list[dict]]:
    """History entries plus this night's errors not in history yet, one entry per fingerprint, by class.

    Only classes present tonight are returned unless `all_history` is set.
    """
    entries = {str(e.get("fingerprint") or id(e)): e for e in history if e.get("error_class")}
    for result in results:
        entries.setdefault(result.fingerprint, _entry_of(result))
    tonight = {r.error.error_class for r in results}
    grouped: dict[str, list[dict]] = defaultdict(list)
    for entry in entries.values():
        if all_history or entry["error_class"] in tonight:
            grouped[str(entry["error_class"])].append(entry)
    return grouped


def _entry_of(result: ErrorAnalysisResult) -> dict:
    analysis = result.analysis
    return {
        "fingerprint": result.fingerprint,
        "error_class": result.error.error_class,
        "transaction": result.error.transaction,
        "occurrences": result.error.occurrences,
        "has_fix": bool(analysis and analysis.has_fix),
        "fix_confidence": analysis.confidence if analysis else None,
        "run_count": 1,
    }


# ---------------------------------------------------------------- ignore suggestions


def suggest_ignore_updates(
    results: list[ErrorAnalysisResult], history: list[dict], current_rules: list[dict]
) -> list[IgnoreSuggestion]:
    """Suggest ignoring an error class of tonight that is recurring-unfixable, transient or never understood."""
    suggestions = []
    for error_class, entries in _entries_by_class(results, history).items():
        if any(e.get("has_fix") for e in entries):
            continue
        tonight = [r for r in results if r.error.error_class == error_class]
        if any(r.analysis and r.analysis.has_fix for r in tonight):
            continue
        reason = _ignore_reason(error_class, entries)
        if reason is None or _already_covered(error_class, tonight, current_rules):
            continue
        evidence = _evidence(entries)
        suggestions.append(IgnoreSuggestion(pattern=error_class, match="exact", reason=reason, evidence=evidence))
    return suggestions


def _ignore_reason(error_class: str, entries: list[dict]) -> str | None:
    runs = sum(appearances(e) for e in entries)
    confidences = [e.get("fix_confidence") for e in entries]
    if runs >= RECURRING_THRESHOLD:
        return f"seen in {runs} runs and no analysis found a fix"
    if has_transient_marker(error_class):
        return "transient failure (network, timeout or TLS) with no code fix"
    if runs >= 2 and all(c == "low" for c in confidences):
        return "analysed repeatedly, confidence always low"
    return None


def _evidence(entries: list[dict]) -> str:
    runs = sum(appearances(e) for e in entries)
    occurrences = sum(int(e.get("occurrences") or 0) for e in entries)
    transactions = sorted({str(e.get("transaction", "")) for e in entries})
    shown = ", ".join(transactions[:3]) + (f" and {len(transactions) - 3} more" if len(transactions) > 3 else "")
    return f"{len(entries)} error(s) in {runs} run(s), {occurrences} occurrences, no fix proposed; in {shown}"


def _already_covered(error_class: str, tonight: list[ErrorAnalysisResult], rules: Iterable[dict]) -> bool:
    """True when a rule names this class already, or every error of the class tonight matches a rule."""
    rules = list(rules)
    if any(str(rule.get("pattern", "")) == error_class for rule in rules):
        return True
    return bool(tonight) and all(any(rule_matches(rule, r) for rule in rules) for r in tonight)


def rule_matches(rule: dict, result: ErrorAnalysisResult) -> bool:
    """Does an ignore rule ({pattern, match, field}) match the error? Field `any` (or none) tries all three."""
    field = rule.get("field") or "any"
    fields = ["error_class", "message", "transaction"] if field == "any" else [field]
    texts = [str(getattr(result.error, f, "") or "") for f in fields]
    return any(_text_matches(str(rule.get("pattern", "")), str(rule.get("match", "contains")), t) for t in texts)


def _text_matches(pattern: str, match: str, text: str) -> bool:
    if not pattern:
        return False
    if match == "exact":
        return text == pattern
    if match == "prefix":
        return text.startswith(pattern)
    if match == "regex":  # the same bounded engine and cap as the ignore rules themselves
        try:
            return regex.search(pattern, text[:MATCH_CHARS], timeout=MATCH_TIMEOUT_S) is not None
        except (regex.error, re.error, TimeoutError):
            return False
    return pattern in text


# ---------------------------------------------------------------- documents


def pattern_doc(pattern: DetectedPattern) -> tuple[str, str]:
    """(file name, Markdown with YAML frontmatter). The name comes from the title, so it is stable."""
    meta = {"kind": "pattern", **pattern.model_dump()}
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, default_flow_style=False)
    body = [f"# {pattern.title}", "", pattern.description, "", "## Suggestion", "", pattern.suggestion]
    body += ["", "## Error classes", "", *[f"- `{c}`" for c in pattern.error_classes]]
    body += ["", "## Modules", "", *[f"- `{m}`" for m in pattern.modules]]
    return f"{slugify(pattern.title)}.md", f"---\n{front}---\n\n" + "\n".join(body) + "\n"
