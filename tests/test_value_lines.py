"""The statements that built the values a line uses: the backward slice within its function, Python and Ruby."""

from __future__ import annotations

import pytest

from nightwatch.value_lines import MAX_STATEMENTS, deciding_lines, value_lines

PREVIEW = '''\
def pages_preview():
    # We only care about content.
    data = {
        "content": request.form.get("content"),
        "format": request.form.get("format"),
    }
    unrelated = compute()
    schema = PageSchema()
    page = schema.load(data)
    return render_template("page.html", content=page.data.html)
'''


def test_a_python_crash_line_leads_back_through_the_statements_that_built_its_value():
    # line 10 reads `page` (line 9), which reads `schema` (8) and `data` (3-6); `unrelated` (7) is not read
    assert value_lines("views.py", PREVIEW, 10) == [(9, 9), (8, 8), (3, 6)]


def test_only_the_nearest_assignment_of_a_name_counts_and_an_update_reads_the_name_too():
    text = "def f(xs):\n    total = 0\n    total = 1\n    for x in xs:\n        total += x\n    return 10 / total\n"
    # `total += x` (5) reads total and x: the loop (4) assigns x from xs (a parameter); total = 1 (3) is the nearest
    assert value_lines("m.py", text, 6) == [(5, 5), (4, 4), (3, 3)]


def test_a_line_outside_a_function_or_a_file_that_does_not_parse_gives_nothing():
    assert value_lines("m.py", "x = 1\ny = x.foo\n", 2) == []
    assert value_lines("m.py", "def f(:\n    pass\n", 2) == []
    assert value_lines("m.js", "const a = b;\na.c();\n", 2) == []
    assert value_lines("m.rb", "", 3) == []
    for deep in ("-" * 100_000 + "1", "1+" * 100_000 + "1", "a." * 100_000 + "b"):  # MemoryError, RecursionError
        assert value_lines("m.py", f"def f():\n    x = {deep}\n    return x.y\n", 3) == []  # nothing, never a failure
    assert value_lines("m.py", "def f():\n    x = b'\\x00\\xff'\n    return x.y\n", 3) == [(2, 2)]


def test_a_nested_function_is_its_own_scope():
    text = "def outer():\n    item = make()\n    def inner(item):\n        return item.name\n    return inner\n"
    assert value_lines("m.py", text, 4) == []  # `item` of inner is its parameter, not outer's assignment


def test_a_compound_statement_contributes_its_header_not_its_body():
    text = ("def f(request):\n    with open_session() as session:\n        noise = 1\n"
            "        user = session.get(request.user_id)\n        return user.email\n")
    assert value_lines("m.py", text, 5) == [(4, 4), (2, 2)]


def test_the_slice_is_bounded():
    body = "".join(f"    v{i} = v{i - 1} + 1\n" for i in range(1, 30))
    text = "def f(v0):\n" + body + "    return v29.x\n"
    assert len(value_lines("m.py", text, 31)) == MAX_STATEMENTS


RUBY = '''\
class StoriesController < ApplicationController
  def show
    other = 1
  end

  def update
    story = find_story
    title = params[:title] || story.title # a comment naming other
    story.title = title
    if title == "x"
      return
    end
    story.save!.merged_into.id
  end
end
'''


def test_a_ruby_method_is_read_by_its_def_and_its_local_assignments():
    assert value_lines("app/controllers/stories_controller.rb", RUBY, 13) == [(7, 7)]  # story; `story.title =` is not a local
    assert value_lines("app/controllers/stories_controller.rb", RUBY, 9) == [(8, 8), (7, 7)]


@pytest.mark.parametrize("line", [0, 1, 99])
def test_a_ruby_line_outside_a_method_gives_nothing(line):
    assert value_lines("x.rb", RUBY, line) == []


def test_a_one_line_if_follows_its_body_and_a_nested_helper_is_not_this_scope():
    one_line = "def f(req):\n    ok = req.ok\n    data = build(req)\n    if ok: return data.html\n"
    assert value_lines("m.py", one_line, 4) == [(3, 3)]  # what `return data.html` reads, not what `if ok` reads
    helper = "def view(user):\n    def fmt(u):\n        user = u.strip()\n        return user\n    return user.name\n"
    assert value_lines("m.py", helper, 5) == []  # `user` is view's parameter: fmt's assignment is fmt's own


def test_ruby_one_line_and_private_methods_and_git_line_numbers():
    text = ("class A\n  def a = 1\n  private def b(x)\n    y = x.to_s\n    y.upcase\n  end\nend\n")
    assert value_lines("a.rb", text, 5) == [(4, 4)]
    assert value_lines("a.rb", "class A\n  def b\n    s = \"a\fb\"\n    s.size\n  end\nend\n", 4) == [(3, 3)]


CHECK = """\
def validate_email(self, data):
    email = data.get("email")
    existing = Users.query.filter_by(email=email).first()
    current = get_current_user()
    if is_admin():
        if existing and existing.id != data.get("id"):
            raise ValidationError("taken")
    else:
        if existing:
            if current.id != existing.id:
                raise ValidationError("taken")
    while existing is None:
        existing = fallback()
    assert existing, "no user"
    return data
"""


def test_the_conditions_that_decide_on_a_checked_value_are_the_ones_that_read_it():
    # `existing` is checked by the ifs that read it; `is_admin()` and `current` alone decide nothing about it
    assert deciding_lines("app/schemas.py", CHECK, 3) == [(6, 6), (9, 9), (10, 10), (12, 12), (14, 14)]
    assert deciding_lines("app/schemas.py", CHECK, 4) == [(10, 10)]
    assert deciding_lines("app/schemas.py", CHECK, 15) == [] and deciding_lines("app/schemas.py", "def f(:\n", 1) == []
    assert deciding_lines("app/models/user.rb", CHECK, 3) == []  # Python only
