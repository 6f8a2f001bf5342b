"""Mentions, links, images and invisible characters from untrusted text are inert wherever they are shown."""

from __future__ import annotations

import json
import re

from nightwatch.render.blocks import report_blocks
from nightwatch.render.issue import issue_body
from nightwatch.render.markdown import report_markdown
from nightwatch.render.neutral import JOINER
from nightwatch.render.summary import text_summary
from tests.publishers.test_render import make_report, make_result

HOSTILE = ("@here @channel @everyone @team deploy now! [click](https://evil.example/x) ![px](http://evil.example/p.png) "
           "www.evil.example \u202egnp.exe\u202c zero\u200bwidth \u2066isolate\u2069 c1\u0085control")


def _hostile_report():
    result = make_result(1, root_cause=HOSTILE)
    return make_report(results=[result]), result


def _assert_inert(text: str) -> None:
    for mention in ("@here", "@channel", "@everyone", "@team"):
        assert mention not in text, mention
    assert "https://evil" not in text and "http://evil" not in text and "www.evil" not in text
    assert not re.search(r"(?<!\\)\[(click|px)\]\(", text), "the message's link or image would render"
    for char in ("\u202e", "\u202c", "\u200b", "\u2066", "\u2069", "\u0085"):
        assert char not in text, hex(ord(char))


def test_slack_blocks_are_inert():
    report, _ = _hostile_report()
    text = json.dumps(report_blocks(report), ensure_ascii=False)
    _assert_inert(text)
    assert f"@{JOINER}here" in text


def test_issue_body_is_inert_and_code_stays_copy_pasteable():
    _, result = _hostile_report()
    body = issue_body(result, "night-1", demo=False)
    _assert_inert(body)
    spans = [part for i, part in enumerate(body.split("`")) if i % 2]
    assert all(JOINER not in span and "\u200b" not in span for span in spans)  # code spans copy as written


def test_markdown_and_terminal_are_inert():
    report, _ = _hostile_report()
    _assert_inert(report_markdown(report))
    terminal = text_summary(report)
    for char in ("\u202e", "\u200b", "\u2066", "\u0085"):
        assert char not in terminal


def test_python_reprs_and_html_in_an_error_stay_visible_text_in_the_issue_never_markup():
    message = "expected <class 'str'>, got <User: alice> <img src=//evil.example/p.png> <details open>x"
    _, result = _hostile_report()
    result = result.model_copy(update={"error": result.error.model_copy(update={"message": message}),
                                       "analysis": result.analysis.model_copy(update={"root_cause": message})})
    body = issue_body(result, "night-1", demo=False)
    prose_lines = [line for line in body.split("```")[::2]]  # outside fenced blocks
    outside = "\n".join(prose_lines)
    assert "<img" not in outside and "<details" not in outside and "<User" not in outside
    assert "&lt;class 'str'&gt;" in outside and "&lt;User: alice&gt;" in outside  # shown, not swallowed as a tag


def test_issue_prose_after_a_code_span_by_entity_or_by_reference_mentions_and_links_nothing():
    from nightwatch.render.issue import prose

    out = prose("`x`@octocat &#64;hubot see acme/secret-repo#1 and #7, `@decorator & <T>` stays as written")
    assert f"`x`@{JOINER}octocat" in out  # a mention right after a code span
    assert "&amp;#" in out and "&#64;" not in out  # shown as the characters it is, not decoded to an @mention
    assert f"acme/secret-repo#{JOINER}1" in out and f"#{JOINER}7" in out  # no cross-reference on another issue
    assert "`@decorator & <T>`" in out  # inside a code span nothing fires: copied as written


def test_an_escaped_backtick_opens_no_code_span_so_the_html_after_it_stays_text():
    from nightwatch.render.issue import prose

    out = prose("\\`<img src=x onerror=alert(1)>\\` and ``<b>`` and `<i>`")
    assert "<img" not in out and "&lt;img src=x onerror=alert(1)&gt;" in out  # GitHub renders \` as a backtick
    assert "`<i>`" in out  # a real span is kept as written
