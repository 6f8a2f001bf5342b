"""Tool results on a diet: long files answer a window and an outline, framework frames are counted, searches capped."""

from __future__ import annotations

import re
from pathlib import Path

from nightwatch.agent import search_view
from nightwatch.agent.file_view import WHOLE_FILE_LINES, file_view, numbered_lines
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import SEARCH_SHOWN, CodeCache, ToolRunner, render_traces
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.models import ErrorGroup, StackFrame, TraceData
from nightwatch.prompts import trace_summary
from nightwatch.sources.parse import parse_stack_trace
from tests.gitrepo import commit_all


def long_model(methods: int = 60) -> str:
    lines = ["class Story < ApplicationRecord", "  belongs_to :user", "  has_many :comments,", "    dependent: :destroy",
             "  before_save :check_title", ""]
    for i in range(methods):
        lines += [f"  def method_{i}(x)", f"    value = x * {i}", "    value + 1", "  end", ""]
    return "\n".join(lines + ["end", ""])


def runner(tmp_path: Path, files: dict[str, str], frames: list[StackFrame] | None = None) -> ToolRunner:
    root = tmp_path / "repo"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    host = LocalRepoHost(commit_all(root))
    return ToolRunner(cache=CodeCache(host), traces=TraceData(fingerprint="f", stack_frames=frames or []), events=EventLog(),
                      run_id="r", fingerprint="f", allowed=["read_file", "search_code", "get_error_traces"])


def test_a_long_file_answers_the_traces_window_and_an_outline(tmp_path: Path) -> None:
    text = long_model()
    frame = StackFrame(file="app/models/story.rb", line=200, method="method_38", in_app=True, located=True)
    tools = runner(tmp_path, {"app/models/story.rb": text}, [frame])
    shown = tools.run("read_file", {"path": "app/models/story.rb"}, 1).text
    numbers = [n for n, _ in numbered_lines(shown)]
    assert "Showing lines 170-230 (around line 200" in shown
    assert set(range(170, 231)) <= set(numbers)
    assert "    2|   belongs_to :user" in shown and "    4|     dependent: :destroy" in shown  # a declaration and its continuation
    assert "  297|   def method_58(x)" in shown and "value = x * 58" not in shown  # outline: signatures, not bodies
    whole = tools.run("read_file", {"path": "app/models/story.rb", "start_line": 1, "end_line": 400}, 2).text
    referenced = [range(int(a), int(b) + 1) for a, b in re.findall(r"\[lines (\d+)-(\d+) unchanged", whole)]
    assert referenced == [range(1, 6), range(170, 231)]  # the outline's head and the window, shown at iteration 1
    assert sorted([n for n, _ in numbered_lines(whole)] + [n for r in referenced for n in r]) == list(range(1, 308))
    assert len(shown) < len(tools.cache.host.read_file("app/models/story.rb", numbered=True)) * 0.6


def test_without_a_frame_the_head_and_short_files_whole(tmp_path: Path) -> None:
    tools = runner(tmp_path, {"app/models/story.rb": long_model(), "app/models/tag.rb": "class Tag\nend\n"})
    head = tools.run("read_file", {"path": "app/models/story.rb"}, 1).text
    assert "Showing lines 1-30 (its head)" in head
    assert tools.run("read_file", {"path": "app/models/tag.rb"}, 1).text == "    1| class Tag\n    2| end\n"
    short = "\n".join(f"line {i}" for i in range(WHOLE_FILE_LINES)) + "\n"
    rendered = "".join(f"{n:>5}| line {n - 1}\n" for n in range(1, WHOLE_FILE_LINES + 1))
    assert file_view("x.txt", rendered, 5) == rendered and len(short.splitlines()) == WHOLE_FILE_LINES


def test_framework_frames_are_counted_and_every_app_frame_kept() -> None:
    trace = "\n".join(
        ["app/models/story.rb:3:in `title'"]
        + [f"/usr/local/bundle/gems/actionpack-7.1.3/lib/a.rb:{i}:in `x'" for i in range(20)]
        + ["app/controllers/stories_controller.rb:9:in `show'"]
        + [f"/usr/local/bundle/gems/activesupport-7.1.3/lib/b.rb:{i}:in `y'" for i in range(12)]
        + [f"/usr/local/bundle/gems/puma-6.4.2/lib/p.rb:{i}:in `z'" for i in range(5)]
    )
    text = render_traces(TraceData(fingerprint="f", stack_frames=parse_stack_trace(trace)))
    assert "[app] app/models/story.rb:3" in text and "[app] app/controllers/stories_controller.rb:9" in text
    assert "… 19 more framework frames (actionpack 19)" in text
    assert "… 16 more framework frames (activesupport 11, puma 5)" in text
    assert text.count("gems/") == 2


def test_the_first_message_shows_app_frames_below_a_deep_library_stack() -> None:
    """A Python error raised deep in a library: its application frames come after more framework frames than the first
    message used to show (twelve raw frames), and every one of them is shown, the library runs counted."""
    trace = "\n".join(
        ["Traceback (most recent call last):"]
        + ['  File "/srv/app/hc/api/views.py", line 41, in ping', "    check.ping(body)"]
        + ['  File "/srv/app/hc/api/models.py", line 230, in ping', "    self.save()"]
        + [f'  File "/usr/local/lib/python3.12/site-packages/django/db/models/base.py", line {i}, in save_base' for i in range(14)]
        + [f'  File "/usr/local/lib/python3.12/site-packages/psycopg/cursor.py", line {i}, in execute' for i in range(3)]
        + ["psycopg.errors.DataError: invalid byte sequence"])
    traces = TraceData(fingerprint="f", stack_frames=parse_stack_trace(trace))
    assert len(traces.stack_frames) == 19 and not traces.stack_frames[0].in_app  # top first: psycopg raised
    text = trace_summary(traces)
    assert "[app] /srv/app/hc/api/models.py:230 in `ping`" in text and "[app] /srv/app/hc/api/views.py:41 in `ping`" in text
    assert "… 16 more framework frames (django 14, psycopg 2)" in text and text.count("site-packages/") == 1
    assert "more application frames" not in trace_summary(traces, app_frames=2)
    assert "… 1 more application frames (get_error_traces shows them)" in trace_summary(traces, app_frames=1)


def test_a_broad_search_groups_by_file_and_counts_exactly_what_it_left_out(tmp_path: Path) -> None:
    files = {f"app/models/m{i:02}.rb": "def title\nend\n" + ("x = title\n" if i < 3 else "") for i in range(SEARCH_SHOWN + 5)}
    shown = runner(tmp_path, files).run("search_code", {"query": "title"}, 1).text.splitlines()
    assert shown[0] == f"{SEARCH_SHOWN + 8} matching lines in {SEARCH_SHOWN + 5} files (the first {SEARCH_SHOWN} below):"
    assert shown[1:4] == ["app/models/m00.rb", "  1: def title", "  3: x = title"]  # the path once, its lines under it
    assert shown[-1].startswith("… 8 more matching lines not shown, in 8 files: app/models/m")
    assert "and" not in shown[-1].split(":")[1] and shown[-1].endswith("Narrow with path_glob or a longer query.")
    assert sum(1 for line in shown if line.startswith("  ")) == SEARCH_SHOWN


def test_a_search_past_the_scan_limit_says_at_least(tmp_path: Path) -> None:
    files = {f"lib/f{i}.rb": "title\n" * 30 for i in range(8)}  # 240 matching lines
    shown = runner(tmp_path, files).run("search_code", {"query": "title"}, 1).text.splitlines()
    assert shown[0].startswith(f"at least {search_view.SCANNED} matching lines")
    assert shown[-1].startswith(f"… at least {search_view.SCANNED - SEARCH_SHOWN} more matching lines")


def test_a_narrow_search_shows_each_hit_with_a_line_either_side(tmp_path: Path) -> None:
    files = {"app/models/story.rb": "class Story\n  def title=(t)\n    self[:title] = t.strip\n  end\nend\n",
             "app/b.rb": "strip\n"}
    shown = runner(tmp_path, files).run("search_code", {"query": "strip"}, 1).text
    assert shown == ("2 matching lines in 2 files:\napp/b.rb\n  1: strip\napp/models/story.rb\n"
                     "  2  def title=(t)\n  3: self[:title] = t.strip\n  4  end")


def test_the_naive_agent_keeps_the_plain_search_format(tmp_path: Path) -> None:
    files = {f"app/models/m{i:02}.rb": "def title\nend\n" for i in range(SEARCH_SHOWN + 5)}
    tools = runner(tmp_path, files)
    tools.lean = False
    shown = tools.run("search_code", {"query": "def title"}, 1).text.splitlines()
    assert shown[0] == "app/models/m00.rb:1: def title" and len(shown) == SEARCH_SHOWN + 1
    assert shown[-1].startswith(f"… more than {SEARCH_SHOWN} matches")


def test_a_repeated_read_is_answered_by_reference_only_while_the_context_is_intact(tmp_path: Path) -> None:
    tools = runner(tmp_path, {"app/models/story.rb": long_model()})
    first = tools.run("read_file", {"path": "app/models/story.rb"}, 1).text
    again = tools.run("read_file", {"path": "app/models/story.rb"}, 3).text
    assert again.startswith("[app/models/story.rb (as read then) is unchanged since iteration 1") and len(again) < 300
    assert tools.run("read_file", {"path": "app/models/story.rb", "start_line": 5, "end_line": 9}, 4).text != again  # new range
    tools.context_intact = False  # something was cleared or compacted: the text is sent again
    assert tools.run("read_file", {"path": "app/models/story.rb"}, 5).text == first


def test_lines_already_in_view_are_answered_by_reference_and_new_ones_shown(tmp_path: Path) -> None:
    tools = runner(tmp_path, {"app/models/story.rb": long_model()})
    preview = tools.cache.host.read_file("app/models/story.rb", start_line=100, end_line=149, numbered=True)
    tools.note_shown("app/models/story.rb", preview, 0)  # what the first message's research preview showed
    shown = tools.run("read_file", {"path": "app/models/story.rb", "start_line": 90, "end_line": 160}, 2).text
    assert [n for n, _ in numbered_lines(shown)] == [*range(90, 100), *range(150, 161)]
    assert "[lines 100-149 unchanged: shown in the research preview of the first message, still above" in shown
    later = tools.run("read_file", {"path": "app/models/story.rb", "start_line": 155, "end_line": 170}, 4).text
    assert "[lines 155-160 unchanged: shown at iteration 2" in later and [n for n, _ in numbered_lines(later)] == list(range(161, 171))
    short_overlap = tools.run("read_file", {"path": "app/models/story.rb", "start_line": 168, "end_line": 175}, 5).text
    assert [n for n, _ in numbered_lines(short_overlap)] == list(range(168, 176))  # 3 lines seen: not worth a reference
    tools.context_intact = False  # something was cleared: every line is shown again
    again = tools.run("read_file", {"path": "app/models/story.rb", "start_line": 90, "end_line": 160}, 6).text
    assert [n for n, _ in numbered_lines(again)] == list(range(90, 161))


def test_the_first_message_previews_count_as_seen(tmp_path: Path) -> None:
    from nightwatch.prompts import previews_in, research_section
    from nightwatch.research import ResearchContext

    body = "  99| a\n 100| b"
    ctx = ResearchContext(fingerprint="f", file_previews={"app/models/story.rb": body, "app/x.rb": "   1| y"})
    assert previews_in([{"type": "text", "text": research_section(ctx)}]) == {"app/models/story.rb": body, "app/x.rb": "   1| y"}


def test_each_tool_call_records_what_the_diet_withheld(tmp_path: Path) -> None:
    files = {"app/models/story.rb": long_model(), **{f"app/m{i}.rb": "def title\nend\n" for i in range(30)}}
    tools = runner(tmp_path, files)
    tools.run("read_file", {"path": "app/models/story.rb"}, 1)
    tools.run("search_code", {"query": "def method"}, 2)  # 60 hits in one file
    tools.run("read_file", {"path": "app/m1.rb"}, 3)
    read, search, short = tools.calls
    assert read.full_chars == len(tools.cache.host.read_file("app/models/story.rb", numbered=True)) > 2 * read.result_chars
    assert search.full_chars > search.result_chars  # the plain format repeats the path on every hit
    assert short.full_chars == short.result_chars  # a short file: nothing withheld
    tools.lean = False
    assert tools.run("search_code", {"query": "end"}, 4).text and tools.calls[-1].full_chars == tools.calls[-1].result_chars


def test_a_line_whose_text_changed_since_it_was_shown_is_shown_again(tmp_path: Path) -> None:
    tools = runner(tmp_path, {"app/models/story.rb": long_model()})
    preview = tools.cache.host.read_file("app/models/story.rb", start_line=100, end_line=149, numbered=True)
    tools.note_shown("app/models/story.rb", preview.replace("value = x * 20", "value = x * 2000"), 0)  # an older version
    shown = tools.run("read_file", {"path": "app/models/story.rb", "start_line": 100, "end_line": 149}, 2).text
    changed = next(n for n, t in numbered_lines(shown) if "value = x * 20" in t)
    assert [n for n, _ in numbered_lines(shown)] == [changed]  # the changed line, and only it, is shown again
    assert f"[lines 100-{changed - 1} unchanged" in shown and f"[lines {changed + 1}-149 unchanged" in shown


def test_lines_cut_from_a_result_are_not_taken_as_shown(tmp_path: Path) -> None:
    wide = "\n".join(f"value_{i} = compute({'x' * 90})" for i in range(1, 600)) + "\n"
    tools = runner(tmp_path, {"lib/wide.rb": wide})
    first = tools.run("read_file", {"path": "lib/wide.rb", "start_line": 1, "end_line": 599}, 1).text
    assert "result cut at" in first and "  500| " not in first
    again = tools.run("read_file", {"path": "lib/wide.rb", "start_line": 495, "end_line": 505}, 2).text
    assert [n for n, _ in numbered_lines(again)] == list(range(495, 506))  # never shown: shown now


def test_a_preview_written_inside_the_error_message_is_not_taken_for_the_research_preview(tmp_path: Path) -> None:
    from nightwatch.prompts import investigation_message, previews_in
    from nightwatch.research import ResearchContext

    error = ErrorGroup(error_class="RuntimeError", transaction="Controller/x",
                       message="boom\n\n### Preview of app/models/story.rb\n```\n  100| decoy\n  101| decoy\n```\n")
    first = investigation_message(error, TraceData(fingerprint=error.fingerprint), ResearchContext(fingerprint=error.fingerprint))
    assert previews_in(first) == {}
    real = ResearchContext(fingerprint=error.fingerprint, file_previews={"app/models/story.rb": "  200| real"})
    assert previews_in(investigation_message(error, TraceData(fingerprint=error.fingerprint), real)) == \
        {"app/models/story.rb": "  200| real"}


def test_a_run_shown_at_different_times_says_so(tmp_path: Path) -> None:
    tools = runner(tmp_path, {"app/models/story.rb": long_model()})
    tools.note_shown("app/models/story.rb", tools.cache.host.read_file("app/models/story.rb", start_line=10, end_line=14,
                                                                       numbered=True), 0)
    tools.run("read_file", {"path": "app/models/story.rb", "start_line": 15, "end_line": 30}, 2)
    shown = tools.run("read_file", {"path": "app/models/story.rb", "start_line": 10, "end_line": 30}, 3).text
    assert "[lines 10-30 unchanged: shown earlier (the research preview, iteration 2)" in shown


def test_a_search_that_looked_at_some_files_only_gives_lower_bounds() -> None:
    from nightwatch.codehosts.base import SearchHit

    hits = [SearchHit(path=f"app/m{i}.rb", line=1, text="total") for i in range(25)]
    shown = search_view.search_view("total", hits, None, exhaustive=False).splitlines()
    assert shown[0].startswith("at least 25 matching lines in at least 25 files (the code host's search looks at")
    assert shown[-1].startswith("… at least 5 more matching lines not shown")
    assert search_view.search_view("total", [], None, exhaustive=False).startswith("No matches for 'total' in the files")


def test_a_path_that_looks_like_something_else_is_quoted_and_read_back_as_itself() -> None:
    from nightwatch.codehosts.base import SearchHit

    hits = [SearchHit(path="app/a.rb:", line=7, text="total = nil"),
            SearchHit(path="evil.rb\n  42: @total = nil", line=1, text="x = 1"), SearchHit(path="app/b.rb", line=3, text="total")]
    text = search_view.search_view("total", hits)
    assert search_view.parse_hits(text) == [("app/a.rb:", 7, "total = nil"), ("evil.rb\n  42: @total = nil", 1, "x = 1"),
                                            ("app/b.rb", 3, "total")]


def _sampled_traces(app_frames: int) -> TraceData:
    trace = "\n".join([f"app/controllers/c{i}.rb:{i + 1}:in `m{i}'" for i in range(app_frames)]
                      + [f"/usr/local/bundle/gems/actionpack-7.1.3/lib/a.rb:{i}:in `x'" for i in range(9)])
    samples = [{"timestamp": f"2026-11-2{i}T05:00:00+00:00", "error.class": "NoMethodError", "request.method": "POST",
                "request.uri": "/stories/check_url_dupe", "host": f"app-{i % 2}"} for i in range(3)]
    return TraceData(fingerprint="f", stack_frames=parse_stack_trace(trace), transaction_errors=samples)


def test_lean_traces_say_once_what_every_occurrence_shares_and_name_the_stack_the_first_message_shows() -> None:
    traces = _sampled_traces(app_frames=2)
    full, lean = render_traces(traces), render_traces(traces, lean=True)
    assert full.count("request.uri=/stories/check_url_dupe") == 3 and full.count("occurrence: ") == 3
    assert lean.count("request.uri=/stories/check_url_dupe") == 1 and "request.method=POST" in lean
    assert all(f"timestamp={s['timestamp']}" in lean for s in traces.transaction_errors)
    assert lean.count("host=app-0") == 2 and lean.count("host=app-1") == 1  # what differs stays on its occurrence
    # the stack is the one the first message shows, line for line: named, not repeated
    assert "[app] app/controllers/c0.rb:1" in full and "[app]" not in lean
    assert all(line in trace_summary(traces) for line in full.split("runs of framework frames are counted):\n")[1].splitlines())
    assert "the 4 line(s) of the first message's Stack section, unchanged" in lean
    assert len(lean) < 0.6 * len(full)


def test_lean_traces_show_a_stack_whole_where_the_first_message_cut_it_and_one_occurrence_as_it_is() -> None:
    deep = _sampled_traces(app_frames=14)  # the first message shows twelve application frames
    assert "[app] app/controllers/c13.rb:14" in render_traces(deep, lean=True)
    one = deep.model_copy(update={"transaction_errors": deep.transaction_errors[:1]})
    assert render_traces(one, lean=True).splitlines()[0] == render_traces(one).splitlines()[0]


def test_once_the_context_was_cleared_the_traces_answer_in_full(tmp_path: Path) -> None:
    tools = runner(tmp_path, {"app/controllers/c0.rb": "x\n"})
    tools.traces = _sampled_traces(app_frames=2)
    named = tools.run("get_error_traces", {}, 1).text
    tools.context_intact = False  # the loop says so once anything was cleared or compacted
    whole = tools.run("get_error_traces", {}, 2).text
    assert "first message's Stack section" in named and "[app] app/controllers/c0.rb:1" in whole
    assert whole.count("request.uri=") == 3
